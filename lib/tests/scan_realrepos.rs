//! The commit scan on honest, merge-heavy real history: pre-commit (1,075 merges in 2,857
//! commits) and ripgrep, from the bundles in `shared/realrepos` (`../shared/realrepos` beside
//! the repository root). Pinned 2,000 commits back, then fast-forwarded to the tip: no
//! error-level finding, at most a few dozen warnings, complete, exit 0 or 1.
//!
//! Without `../shared/realrepos/` beside the repository root these tests are ignored with the
//! reason (see `lib/build.rs`); under `CI=true` they run and fail on the missing folder.

use gitward::catalogue::Severity;
use gitward::scan::{self, Limits, RefSnapshot};
use std::path::{Path, PathBuf};
use std::process::Command;

const GIT: &str = "/usr/local/bin/git";
/// Commits in the scanned range (fewer if the history is shorter).
const RANGE: usize = 2000;
/// "A few dozen warnings at most".
const MAX_WARNINGS: usize = 36;

/// The bundles beside the repository root (`lib/../../shared/realrepos`, as `lib/build.rs`
/// looks for them).
fn realrepos() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/realrepos");
    assert!(
        dir.is_dir(),
        "{}: missing; the real-history scan test needs the shared bundles (CI=true makes this a failure, not a skip)",
        dir.display()
    );
    dir
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(GIT)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn check(bundle_name: &str) {
    let bundle = realrepos().join(bundle_name);
    assert!(
        bundle.is_file(),
        "{}: missing from the shared bundles",
        bundle.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("r.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            "--single-branch",
            "--no-tags",
            bundle.to_str().unwrap(),
            "r.git",
        ],
    );
    let branch = git(&repo, &["symbolic-ref", "HEAD"]);
    let tip = git(&repo, &["rev-parse", "HEAD"]);
    let pin = git(
        &repo,
        &[
            "rev-list",
            "--max-count=1",
            &format!("--skip={RANGE}"),
            "HEAD",
        ],
    );
    // Pin: the branch at the old commit; then fast-forward it to the tip.
    git(&repo, &["update-ref", &branch, &pin]);
    let snap = RefSnapshot::take(&repo).unwrap();
    git(&repo, &["update-ref", &branch, &tip]);
    let rep = scan::scan(&repo, &snap, &Limits::default()).unwrap();
    let count = |s: Severity| rep.findings.iter().filter(|f| f.severity == s).count();
    eprintln!(
        "{bundle_name}: {} commits, {} findings ({} error, {} warning, {} note), exit {}",
        rep.stats.commits,
        rep.findings.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Note),
        rep.exit_code().code
    );
    assert!(rep.stats.commits >= RANGE as u64, "{:?}", rep.stats);
    assert!(rep.incomplete.is_none(), "{bundle_name}: {rep:#?}");
    assert!(rep.rewritten.is_empty(), "{bundle_name}: {rep:#?}");
    assert_eq!(count(Severity::Error), 0, "{bundle_name}: {rep:#?}");
    assert!(
        count(Severity::Warning) <= MAX_WARNINGS,
        "{bundle_name}: {rep:#?}"
    );
    assert!(rep.exit_code().code <= 1);
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "needs ../shared/realrepos beside the repository root (the real-repository bundles); CI=true fails instead"
)]
fn pre_commit_history_is_precise() {
    check("pre-commit.bundle");
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "needs ../shared/realrepos beside the repository root (the real-repository bundles); CI=true fails instead"
)]
fn ripgrep_history_is_precise() {
    check("ripgrep.bundle");
}
