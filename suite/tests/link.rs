//! How the build links the binaries whose start is a large part of their cost
//! (`build/static_pie.rs`): git-shim as a static executable at a fixed address (no dynamic
//! loader, nothing to relocate at start: it crosses no privilege boundary), safe-git and
//! wt-check, which run on the owner's side over folders the agent wrote, as static PIEs (a
//! randomised image, no dynamic loader). Read from the ELF header and program headers of the
//! binaries cargo built for these tests.

mod common;

use std::path::Path;

/// `(e_type, has PT_INTERP, has PT_DYNAMIC)` of a 64-bit little-endian ELF file.
fn elf_kind(path: &Path) -> (u16, bool, bool) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..4], b"\x7fELF", "{} is not ELF", path.display());
    assert_eq!(b[4], 2, "64-bit");
    assert_eq!(b[5], 1, "little-endian");
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let e_type = u16_at(16);
    let phoff = u64_at(32) as usize;
    let phentsize = usize::from(u16_at(54));
    let phnum = usize::from(u16_at(56));
    let (mut interp, mut dynamic) = (false, false);
    for i in 0..phnum {
        match u32_at(phoff + i * phentsize) {
            3 => interp = true,  // PT_INTERP
            2 => dynamic = true, // PT_DYNAMIC
            _ => {}
        }
    }
    (e_type, interp, dynamic)
}

/// glibc's static C library, which the build script needs for a static link (it links
/// dynamically, with a warning, where it is missing).
fn static_libc() -> bool {
    std::process::Command::new("cc")
        .arg("-print-file-name=libc.a")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .is_some_and(|p| Path::new(&p).is_absolute())
}

/// The static link needs glibc's `libc.a`: where it is missing these tests are compiled as
/// ignored, with the reason (build.rs, `gitward_no_static_libc`); under `CI=true` they run and
/// fail on it.
fn static_link_expected() {
    assert!(
        static_libc(),
        "glibc's static libc.a is missing: the binaries link dynamically (CI=true: the static link must be tested)"
    );
}

#[test]
#[cfg_attr(
    gitward_no_static_libc,
    ignore = "glibc's libc.a is missing: the binaries link dynamically; CI=true fails instead"
)]
fn git_shim_is_a_static_executable_at_a_fixed_address() {
    static_link_expected();
    let (e_type, interp, dynamic) = elf_kind(&common::bin("git-shim"));
    assert_eq!(e_type, 2, "ET_EXEC (a fixed address), not ET_DYN (a PIE)");
    assert!(!interp, "no dynamic loader (PT_INTERP)");
    assert!(!dynamic, "no dynamic section: nothing to relocate at start");
}

#[test]
#[cfg_attr(
    gitward_no_static_libc,
    ignore = "glibc's libc.a is missing: the binaries link dynamically; CI=true fails instead"
)]
fn safe_git_and_wt_check_are_static_pies() {
    static_link_expected();
    for name in ["safe-git", "wt-check"] {
        let (e_type, interp, dynamic) = elf_kind(&common::bin(name));
        assert_eq!(e_type, 3, "{name}: ET_DYN (a PIE: its image is randomised)");
        assert!(
            !interp,
            "{name}: no dynamic loader (PT_INTERP): it relocates itself"
        );
        assert!(
            dynamic,
            "{name}: a static PIE keeps its dynamic section (its relocations)"
        );
    }
}
