//! Static linking of a package's binaries on `*-linux-gnu`, for the build scripts of the
//! binaries whose process start is a large part of their cost: `git-shim` and `safe-git`
//! (`bins/git-shim/build.rs`), `wt-check` (the workspace's `build.rs`). Included by each with
//! `#[path] mod static_pie;` and called as `static_pie::link(Image::…)`: a static PIE for
//! `safe-git` and `wt-check`, a static executable at a fixed address for `git-shim`.
//!
//! Why git-shim gives up the randomised image base (the stack, heap, `mmap` and vDSO stay
//! randomised): a PIE relocates itself at every start — for git-shim ≈ 3,500 pointers,
//! 37 k instructions and the copy-on-write faults of the pages holding them, a tenth of what
//! the shim adds to each `git` call (docs/perf-shim.md). Randomisation makes a memory-safety
//! bug harder to exploit *across a privilege boundary*, and git-shim crosses none: it runs
//! inside the agent's sandbox, as the agent, started by the agent with the agent's
//! arguments and environment, and the agent may run any program there, the real git
//! included (docs/design.md: the shim is the policy, the OS sandbox the boundary). Whoever
//! could turn a bug in it into code execution gains the rights they already had. `safe-git`
//! and `wt-check` run on the owner's side, over folders the agent wrote, with the owner's
//! rights: they keep the randomised image.
//!
//! Why: git-shim and safe-git start once per `git` call and then `exec` git, and `wt-check
//! check` runs at every turn's end against a budget of 3× `git worktree list` (a few
//! milliseconds), so each one's process start is a large part of its cost. The dynamic loader alone (mapping `libc.so.6` and `libgcc_s.so.1`,
//! relocating and binding ~200 symbols) is ~170–260 k instructions and ~27 system calls of a
//! call (docs/perf-shim.md); a static PIE has no loader (it relocates itself, ~58 k
//! instructions for the shim, and keeps its address-space randomisation), from a RELR table
//! where the glibc linked applies one (2.36 and later).
//!
//! How: `-C target-feature=+crt-static` would do it, but cargo applies rustflags to every
//! crate, proc-macros included (which cannot be static: rust-lang/rust#78210), and
//! per-package rustflags are unstable. This script makes the same link from the binary's
//! side: it emits `-static-pie` for the binary, and a link-search folder (in `OUT_DIR`) in
//! which each library std asks for by name resolves to the static archive `+crt-static`
//! would use — `libgcc_s` → `libgcc_eh.a` (the unwinder), `libc`, `libm`, `libpthread`,
//! `libdl`, `librt`, `libutil` → glibc's own `.a`. A folder named with `-L` is searched
//! before the toolchain's own, and it holds no `.so`, so the linker picks these archives even
//! where std's link line says `-Bdynamic`.
//!
//! Where an archive is missing (glibc's static libraries are a separate package on some
//! distributions), or the target is not `linux-gnu`, or `crt-static` is already on, nothing
//! changes and the binary links as before (with a cargo warning in the first case): it is the
//! same program either way, only its start is slower. `GITWARD_DYNAMIC=1` asks for the
//! dynamic link explicitly.
//!
//! A static glibc still looks up users (`~user/` in a config path: `getpwnam`) through NSS
//! modules it loads at run time, which must be of the glibc it was built with: built where it
//! runs (as the README's build is), that holds; a binary copied to another system may not
//! resolve `~user` ("no such user", an error naming the config file, as for a user that
//! does not exist).

use std::path::PathBuf;
use std::process::Command;

/// Each library std's link line names, and the archive that `+crt-static` links instead.
const ARCHIVES: &[(&str, &str)] = &[
    ("libgcc_s.a", "libgcc_eh.a"),
    ("libc.a", "libc.a"),
    ("libm.a", "libm.a"),
    ("libpthread.a", "libpthread.a"),
    ("libdl.a", "libdl.a"),
    ("librt.a", "librt.a"),
    ("libutil.a", "libutil.a"),
];

/// How a binary is linked when glibc's static libraries are there.
#[allow(dead_code)] // each build script uses one
pub enum Image {
    /// `-static-pie`: a randomised base, relocated by glibc at every start.
    StaticPie,
    /// `-static -no-pie`: a fixed base, nothing to relocate (git-shim; see the module comment).
    StaticFixed,
}

pub fn link(image: Image) {
    println!("cargo:rerun-if-env-changed=GITWARD_DYNAMIC");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("GITWARD_DYNAMIC") == "1"
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("CARGO_CFG_TARGET_FEATURE")
            .split(',')
            .any(|f| f == "crt-static")
    {
        return;
    }
    // The C compiler driver rustc links with (`cc` unless a linker is configured) knows
    // where its libraries are.
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned());
    let find = |name: &str| -> Option<PathBuf> {
        let out = Command::new(&linker)
            .arg(format!("-print-file-name={name}"))
            .output()
            .ok()?;
        let p = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        // An unknown file is printed back as the bare name.
        (p.is_absolute() && p.is_file()).then_some(p)
    };
    let mut found = Vec::new();
    for (link, archive) in ARCHIVES {
        match find(archive) {
            Some(p) => found.push((link, p)),
            None => {
                println!(
                    "cargo:warning={} links dynamically: {linker} finds no {archive} \
                     (glibc's static libraries); it works the same, its start is slower",
                    var("CARGO_PKG_NAME")
                );
                return;
            }
        }
    }
    let dir =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("static-libs");
    std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    for (link, src) in found {
        let dst = dir.join(link);
        let _ = std::fs::remove_file(&dst);
        std::os::unix::fs::symlink(&src, &dst).expect("OUT_DIR is writable");
        println!("cargo:rerun-if-changed={}", src.display());
    }
    // For the binary only (a `rustc-link-search` would reach the test executables too, which
    // link dynamically): `-L` applies to every `-l` of the link, wherever it stands.
    println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
    if let Image::StaticFixed = image {
        // rustc asks the driver for a PIE (`-pie`); the later `-no-pie` wins, and `-static`
        // makes the driver take `crt1.o` and no dynamic loader. Nothing is left to relocate
        // but glibc's few `IRELATIVE` (ifunc) slots, so RELR has nothing to pack.
        println!("cargo:rustc-link-arg-bins=-static");
        println!("cargo:rustc-link-arg-bins=-no-pie");
        return;
    }
    println!("cargo:rustc-link-arg-bins=-static-pie");
    // RELR (`DT_RELR`): the image's ~4,300 relative relocations as a 1.2 KB bitmap instead of
    // a 105 KB table that is read at every start. A static PIE applies it itself, in glibc's
    // `_dl_relocate_static_pie`, from glibc 2.36; an older glibc would leave every pointer
    // unrelocated, so the flag is given only when the glibc linked is known to be 2.36 or
    // later (the build machine's, when it builds for itself).
    if var("TARGET") == var("HOST") && host_glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Place the functions listed in `list` (one symbol a line) at the start of the binary's text,
/// where the linker can (lld's `--symbol-ordering-file`; rustc links with lld by default on
/// x86_64 Linux from 1.90). git-shim lists the ~300 functions one call runs
/// (`bins/git-shim/hot-symbols.sh` writes the list): they then lie in a few 64 KB windows of
/// the kernel's fault-around instead of across the whole text, and a call takes ~10 fewer page
/// faults (docs/perf-shim.md). Only the layout changes, never the code; a name the binary does
/// not define (a list made with another toolchain: Rust's symbol hashes change) is skipped
/// without a warning, so a stale list only loses the gain.
///
/// Whether the linker takes the option is found by linking a trivial program with the same
/// rustc, target, flags and linker (once per build-script run): a linker without it (GNU ld
/// before 2.43, or lld switched off) gets nothing, and the build is as before.
#[allow(dead_code)] // git-shim's build script calls it, the workspace's (wt-check) does not
pub fn order_symbols(list: &std::path::Path) {
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=GITWARD_NO_SYMBOL_ORDER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("GITWARD_NO_SYMBOL_ORDER") == "1" || !list.is_file() {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ];
    if !linker_accepts(&args) {
        println!(
            "cargo:warning={}: the linker does not take --symbol-ordering-file; the hot \
             functions are not grouped (the binary works the same, a call takes a few more \
             page faults)",
            var("CARGO_PKG_NAME")
        );
        return;
    }
    for a in args {
        println!("cargo:rustc-link-arg-bins={a}");
    }
}

/// Does rustc, as cargo runs it for this package (target, `CARGO_ENCODED_RUSTFLAGS`,
/// configured linker), link a trivial program with `link_args`?
#[allow(dead_code)]
fn linker_accepts(link_args: &[String]) -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let src = out.join("probe-link.rs");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return false;
    }
    let mut cmd = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    cmd.arg("--crate-name=probe_link")
        .arg("--edition=2021")
        .arg("--target")
        .arg(var("TARGET"))
        .arg("-o")
        .arg(out.join("probe-link"))
        .arg(&src);
    for f in var("CARGO_ENCODED_RUSTFLAGS")
        .split('\x1f')
        .filter(|f| !f.is_empty())
    {
        cmd.arg(f);
    }
    if let Ok(l) = std::env::var("RUSTC_LINKER") {
        cmd.arg(format!("-Clinker={l}"));
    }
    for a in link_args {
        cmd.arg(format!("-Clink-arg={a}"));
    }
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Is the build machine's glibc (`getconf GNU_LIBC_VERSION`: `glibc 2.36`) at least
/// `major.minor`? `false` when it cannot tell.
fn host_glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(v) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}
