//! Test prerequisites that live outside this repository.
//!
//! `../shared/realrepos/` (bundles of real public repositories) is laid beside the project's
//! checkout on the developers' machines and in CI; bubblewrap (`/usr/bin/bwrap`) runs the
//! sandbox tests. Where one is missing, the tests that need it are compiled with `#[ignore]`
//! and a reason (`cargo test` lists them as ignored, with the reason); so are the differential
//! tests where neither `/usr/bin/git` nor `/usr/local/bin/git` is installed — except under
//! `CI=true`, where they run and fail on the missing prerequisite: a test that cannot run its
//! subject must not pass.
//!
//! One script, at the workspace root, for every package whose tests need them (`suite`, `lib`:
//! `build = "../build.rs"`; `bins/wt-check`: `build = "../../build.rs"`): the folder is
//! found beside the workspace root, the nearest folder up from the package that holds
//! `Cargo.lock`.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build/static_pie.rs"]
mod static_pie;

fn main() {
    // wt-check's binary links as a static PIE (its start is ~6 % of a `check` on a
    // one-worktree session: docs/perf-wt-check.md); the other packages' do not.
    println!("cargo:rerun-if-changed=build/static_pie.rs");
    if std::env::var("CARGO_PKG_NAME").is_ok_and(|n| n == "wt-check") {
        static_pie::link(static_pie::Image::StaticPie);
    }
    println!("cargo::rustc-check-cfg=cfg(gitward_no_realrepos)");
    println!("cargo::rustc-check-cfg=cfg(gitward_no_bwrap)");
    println!("cargo::rustc-check-cfg=cfg(gitward_no_git)");
    println!("cargo:rerun-if-env-changed=CI");
    let mut root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    while !root.join("Cargo.lock").is_file() && root.pop() {}
    let dir = root.join("../shared/realrepos");
    println!("cargo:rerun-if-changed={}", dir.display());
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !dir.is_dir() && !ci {
        println!("cargo:rustc-cfg=gitward_no_realrepos");
    }
    // The differential tests compare with git itself (docs/fuzzing.md).
    let gits = ["/usr/bin/git", "/usr/local/bin/git"];
    for g in gits {
        println!("cargo:rerun-if-changed={g}");
    }
    if !gits.iter().any(|g| Path::new(g).exists()) && !ci {
        println!("cargo:rustc-cfg=gitward_no_git");
    }
    // bubblewrap must be installed and able to make namespaces here.
    let bwrap = "/usr/bin/bwrap";
    println!("cargo:rerun-if-changed={bwrap}");
    let works = Path::new(bwrap).exists()
        && Command::new(bwrap)
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--unshare-all", "--die-with-parent", "/bin/true"])
            .status()
            .is_ok_and(|s| s.success());
    if !works && !ci {
        println!("cargo:rustc-cfg=gitward_no_bwrap");
    }
    // glibc's static C library: without it the binaries link dynamically (build/static_pie.rs)
    // and suite/tests/link.rs has nothing to check.
    println!("cargo::rustc-check-cfg=cfg(gitward_no_static_libc)");
    let libc_a = Command::new(std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned()))
        .arg("-print-file-name=libc.a")
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|p| p.is_absolute() && p.is_file());
    if !libc_a && !ci {
        println!("cargo:rustc-cfg=gitward_no_static_libc");
    }
    // The oracles of the settings differential tests (lib/tests/differential_settings.rs):
    // node with VS Code's `jsonc-parser` and npm `dotenv` (installed by .ci/run under
    // target/oracles), python3 with `tomllib` and `python-dotenv`.
    println!("cargo::rustc-check-cfg=cfg(gitward_no_node_oracles)");
    println!("cargo::rustc-check-cfg=cfg(gitward_no_python_oracles)");
    println!("cargo:rerun-if-env-changed=GITWARD_NODE_MODULES");
    let modules = std::env::var_os("GITWARD_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/oracles/node_modules"));
    println!("cargo:rerun-if-changed={}", modules.display());
    let node = ["jsonc-parser", "dotenv"]
        .iter()
        .all(|m| modules.join(m).join("package.json").is_file())
        && Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !node && !ci {
        println!("cargo:rustc-cfg=gitward_no_node_oracles");
    }
    let python = Command::new("python3")
        .args(["-c", "import tomllib, dotenv"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !python && !ci {
        println!("cargo:rustc-cfg=gitward_no_python_oracles");
    }
}
