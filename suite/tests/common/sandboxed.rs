//! What the bubblewrap end-to-end tests share: the binaries under test built once, the gits
#![allow(dead_code)]
//! every security test runs on, whether a prerequisite is here (SKIPPED locally, a failure
//! under `CI=true`), and whether bubblewrap can build a sandbox on this machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Every git a security test runs on; each must fire its positive control.
pub const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];
pub const BWRAP: &str = "/usr/bin/bwrap";

/// git-shim and agent-shell (and wt-check, which agent-shell's plan needs), built once per
/// test binary: they belong to other packages of the workspace, which `cargo test -p
/// gitward-suite` alone does not build. Returns (git-shim, agent-shell).
pub fn bins() -> &'static (PathBuf, PathBuf) {
    static BINS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BINS.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/<profile>/deps/<test> → target/<profile>/
        let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let mut build = Command::new(env!("CARGO"));
        build.args([
            "build",
            "-q",
            "-p",
            "git-shim",
            "-p",
            "agent-shell",
            "-p",
            "wt-check",
        ]);
        if dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build");
        assert!(
            status.success(),
            "building git-shim, agent-shell and wt-check failed"
        );
        (dir.join("git-shim"), dir.join("agent-shell"))
    })
}

/// `true` when `path` exists; else SKIPPED with the reason (a failure under `CI=true`).
pub fn present(path: &str, why: &str) -> bool {
    if Path::new(path).exists() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{path} is missing (CI=true: {why} must be tested)"
    );
    eprintln!("SKIPPED: {path} is not installed on this machine ({why})");
    false
}

/// [`GITS`] that are installed (each missing one SKIPPED, a failure under `CI=true`).
pub fn gits() -> Vec<PathBuf> {
    GITS.iter()
        .filter(|g| present(g, "every git"))
        .map(PathBuf::from)
        .collect()
}

/// Can bwrap build a sandbox here? `Err` carries the reason.
pub fn bwrap_works() -> Result<(), String> {
    if !Path::new(BWRAP).exists() {
        return Err(format!(
            "{BWRAP} is not installed (apt-get install -y bubblewrap)"
        ));
    }
    let o = Command::new(BWRAP)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-all",
            "--die-with-parent",
            "/bin/true",
        ])
        .output()
        .map_err(|e| format!("cannot run {BWRAP}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "bwrap cannot create namespaces on this machine: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}
