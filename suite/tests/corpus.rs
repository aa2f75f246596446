//! The attack corpus against every git on this machine.
//!
//! One run of the whole corpus (shared by the tests below) with the `safe-git` and `wt-check`
//! of this build (`target/<profile>/`; `cargo test --workspace` builds them first):
//!
//! * (a) every case that is not skipped fires under plain git — a case that does not is
//!   BROKEN (the attack is not shown to be real on that git) and fails;
//! * (b) no case fires under safe-git — and safe-git not built is a failure, never a skip;
//! * (c) wt-check audit flags every auditable case — wt-check not built is a failure too.
//!
//! The runner's own checks use test doubles for safe-git, so that (b) is shown to be able to
//! fail: a double that lets git run the planted program must be reported FIRED.

use gitward_suite as corpus;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// target/<profile>/ of this test binary (target/<profile>/deps/corpus-<hash>).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

fn cases() -> Vec<corpus::Case> {
    corpus::load_cases(&corpus::default_cases_dir()).expect("fixtures/attacks loads")
}

fn report() -> &'static corpus::Report {
    static REPORT: OnceLock<corpus::Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let gits = corpus::find_gits(&[]).expect("at least one git on this machine");
        let dir = profile_dir();
        let tools = corpus::ToolPaths {
            safe_git: Some(dir.join("safe-git")),
            wt_check: Some(dir.join("wt-check")),
        };
        let r = corpus::run(&cases(), &gits, &tools, &corpus::Options::default());
        eprintln!("{}", corpus::render_human(&r));
        r
    })
}

#[test]
fn corpus_has_at_least_60_cases_covering_research_sections_1_to_3() {
    let cases = cases();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    for row in [
        "1a", "1b", "1c", "1d", "1e", "2a", "2b", "3.1", "3.2", "3.3",
    ] {
        assert!(
            cases.iter().any(|c| c.row() == row),
            "no case for research row {row}"
        );
    }
}

#[test]
fn a_positive_controls_fire_under_plain_git() {
    let r = report();
    let mut broken = Vec::new();
    for g in &r.gits {
        let fired = g
            .results
            .iter()
            .filter(|c| matches!(c.control, corpus::Control::Fired { .. }))
            .count();
        assert!(
            fired >= 50,
            "git {}: only {fired} cases fired",
            g.git.version
        );
        for c in &g.results {
            if let corpus::Control::Broken { why } = &c.control {
                broken.push(format!("git {}: {}: {why}", g.git.version, c.id));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "BROKEN cases (the attack did not fire under plain git):\n{}",
        broken.join("\n")
    );
}

#[test]
fn b_quiet_under_safe_git() {
    let r = report();
    let mut bad = Vec::new();
    for g in &r.gits {
        if !g.safe_git.is_ready() {
            bad.push(format!(
                "git {}: safe-git not built: {} (run `cargo build --workspace`)",
                g.git.version, g.safe_git
            ));
            continue;
        }
        for c in &g.results {
            if !matches!(c.control, corpus::Control::Fired { .. }) {
                continue;
            }
            match &c.safe_git {
                corpus::SafeOutcome::Quiet { .. } | corpus::SafeOutcome::Refused { .. } => {}
                other => bad.push(format!(
                    "git {}: {}: {other} {}",
                    g.git.version,
                    c.id,
                    serde_json::to_string(other).unwrap_or_default()
                )),
            }
        }
    }
    assert!(
        bad.is_empty(),
        "not quiet under safe-git:\n{}",
        bad.join("\n")
    );
}

#[test]
fn c_flagged_by_wt_check_audit() {
    let r = report();
    let mut bad = Vec::new();
    for g in &r.gits {
        if !g.wt_check.is_ready() {
            bad.push(format!(
                "git {}: wt-check audit not ready: {}",
                g.git.version, g.wt_check
            ));
            continue;
        }
        for c in &g.results {
            match &c.audit {
                // Incomplete (exit 2, rule GW016) is the audit refusing to call the planted
                // state clean: "unknown is not clean" is a finding of its own.
                corpus::AuditOutcome::Flagged
                | corpus::AuditOutcome::Incomplete { .. }
                | corpus::AuditOutcome::NotApplicable { .. }
                | corpus::AuditOutcome::NotRun => {}
                other => bad.push(format!("git {}: {}: audit {other}", g.git.version, c.id)),
            }
        }
    }
    assert!(
        bad.is_empty(),
        "not flagged by the audit:\n{}",
        bad.join("\n")
    );
}

/// A safe-git double: `--git G ARGS…` → `G PRE… ARGS…`, printing nothing of its own.
fn double(dir: &Path, pre: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("safe-git");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\n[ \"$1\" = --git ] || exit 120\ng=$2; shift 2\nexec \"$g\" {pre} \"$@\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn one_case(id: &str, safe_git: PathBuf) -> Vec<corpus::CaseResult> {
    let cases: Vec<_> = cases().into_iter().filter(|c| c.id == id).collect();
    assert_eq!(cases.len(), 1, "{id}");
    let gits = corpus::find_gits(&[]).unwrap();
    let tools = corpus::ToolPaths {
        safe_git: Some(safe_git),
        wt_check: None,
    };
    let r = corpus::run(&cases, &gits, &tools, &corpus::Options::default());
    r.gits.into_iter().flat_map(|g| g.results).collect()
}

#[test]
fn runner_reports_fired_when_safe_git_lets_the_program_run() {
    let t = tempfile::tempdir().unwrap();
    let passthrough = double(t.path(), "");
    for r in one_case("1a-core-fsmonitor-status", passthrough) {
        assert!(
            matches!(r.safe_git, corpus::SafeOutcome::Fired { .. }),
            "{r:?}"
        );
        assert_eq!(r.verdict(), corpus::Verdict::Failed);
    }
}

#[test]
fn runner_reports_quiet_when_the_vector_is_neutralised() {
    let t = tempfile::tempdir().unwrap();
    let defused = double(t.path(), "-c core.fsmonitor=false");
    for r in one_case("1a-core-fsmonitor-status", defused) {
        assert!(
            matches!(r.safe_git, corpus::SafeOutcome::Quiet { exit: 0, .. }),
            "{r:?}"
        );
    }
}

#[test]
fn runner_reports_a_stub_safe_git_as_not_built() {
    let t = tempfile::tempdir().unwrap();
    let stub = t.path().join("safe-git");
    std::fs::write(&stub, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    for r in one_case("1a-core-fsmonitor-status", stub) {
        assert!(matches!(r.safe_git, corpus::SafeOutcome::NotBuilt), "{r:?}");
        assert_eq!(r.verdict(), corpus::Verdict::Failed);
    }
}

/// A git whose system config defines `filter.lfs.process` (a system-wide git-lfs install):
/// git prefers it to the case's `filter.lfs.clean`, so the planted program cannot run there.
/// The case is skipped with that reason — neither BROKEN (the attack is real on this git
/// binary, shown without the system config) nor passed. With an empty system config the same
/// git fires it.
#[test]
fn a_case_the_machines_system_config_shadows_is_skipped_with_the_reason() {
    use std::os::unix::fs::PermissionsExt;
    let cases: Vec<_> = cases()
        .into_iter()
        .filter(|c| c.id == "1d-filter-clean-over-trusted-driver")
        .collect();
    assert_eq!(cases.len(), 1);
    for real in corpus::find_gits(&[]).unwrap() {
        let t = tempfile::tempdir().unwrap();
        let run = |system: &str| {
            let cfg = t.path().join(format!("system-{}.cfg", system.len()));
            std::fs::write(&cfg, system).unwrap();
            let bin = t.path().join(format!("bin-{}", system.len()));
            std::fs::create_dir_all(&bin).unwrap();
            let wrapper = bin.join("git");
            std::fs::write(
                &wrapper,
                format!(
                    "#!/bin/sh\nGIT_CONFIG_SYSTEM='{}'; export GIT_CONFIG_SYSTEM\nexec '{}' \"$@\"\n",
                    cfg.display(),
                    real.path.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
            let git = corpus::probe_git(&wrapper).unwrap();
            let tools = corpus::ToolPaths {
                safe_git: None,
                wt_check: None,
            };
            let r = corpus::run(&cases, &[git], &tools, &corpus::Options::default());
            r.gits.into_iter().flat_map(|g| g.results).next().unwrap()
        };
        let lfs = "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n";
        let shadowed = run(lfs);
        match &shadowed.control {
            corpus::Control::Skipped { reason } => {
                assert!(reason.contains("system config"), "{reason}")
            }
            other => panic!("{}: {other:?}", real.path.display()),
        }
        assert_eq!(shadowed.verdict(), corpus::Verdict::Skipped);
        let plain = run("");
        assert!(
            matches!(plain.control, corpus::Control::Fired { .. }),
            "{}: {:?}",
            real.path.display(),
            plain.control
        );
    }
}
