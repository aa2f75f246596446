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

/// Skips (reported) where glibc's `libc.a` is missing and the binaries link dynamically;
/// under `CI=true` that fails instead.
fn static_link_expected() -> bool {
    if static_libc() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "glibc's static libc.a is missing (CI=true: the static link must be tested)"
    );
    eprintln!("SKIPPED: no libc.a here; the binaries link dynamically (build scripts warn)");
    false
}

#[test]
fn git_shim_is_a_static_executable_at_a_fixed_address() {
    if !static_link_expected() {
        return;
    }
    let (e_type, interp, dynamic) = elf_kind(&common::bin("git-shim"));
    assert_eq!(e_type, 2, "ET_EXEC (a fixed address), not ET_DYN (a PIE)");
    assert!(!interp, "no dynamic loader (PT_INTERP)");
    assert!(!dynamic, "no dynamic section: nothing to relocate at start");
}

#[test]
fn safe_git_and_wt_check_are_static_pies() {
    if !static_link_expected() {
        return;
    }
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
