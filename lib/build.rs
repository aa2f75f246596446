//! Test prerequisites that live outside this repository.
//!
//! `shared/realrepos/` (bundles of real public repositories) is laid beside the project's
//! checkout (`../../shared/realrepos` from `lib/`) on the developers' machines and in CI.
//! Where it is missing, the tests that need it are compiled with `#[ignore]` and a reason
//! (`cargo test` lists them as ignored, with the reason) — except under `CI=true`, where they
//! run and fail on the missing folder: a test that cannot run its subject must not pass.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(gitward_no_realrepos)");
    println!("cargo:rerun-if-env-changed=CI");
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&root).join("../../shared/realrepos");
    println!("cargo:rerun-if-changed={}", dir.display());
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !dir.is_dir() && !ci {
        println!("cargo:rustc-cfg=gitward_no_realrepos");
    }
}
