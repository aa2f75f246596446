//! CLI conventions: --help with examples, --version, --generate, usage errors (exit 120).

use std::process::Command;

fn wt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wt-check"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_version_generate_and_usage_errors() {
    let out = wt(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for s in [
        "EXAMPLES:",
        "EXIT STATUS:",
        "pin",
        "check",
        "scan",
        "audit",
        "hook",
    ] {
        assert!(help.contains(s), "--help lacks {s}");
    }
    for sub in ["pin", "check", "scan", "audit"] {
        let out = wt(&[sub, "--help"]);
        assert!(out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("EXAMPLES:"),
            "{sub} --help"
        );
    }
    let out = wt(&["--version"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("wt-check "));
    let out = wt(&["--generate", "man"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH wt-check"));
    let out = wt(&["--generate", "bash"]);
    assert!(out.status.success() && !out.stdout.is_empty());
    assert_eq!(
        wt(&["check"]).status.code(),
        Some(120),
        "missing --state and REPO"
    );
    assert_eq!(
        wt(&["audit", "--format", "xml", "."]).status.code(),
        Some(120)
    );
    assert_eq!(wt(&[]).status.code(), Some(120));
    // A state file that does not exist: cannot check (2), never clean.
    let t = tempfile::tempdir().unwrap();
    let out = wt(&[
        "check",
        "--state",
        t.path().join("none.json").to_str().unwrap(),
        t.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}
