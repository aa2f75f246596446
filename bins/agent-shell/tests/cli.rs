//! agent-shell's own command line: an unknown option is reported as such (not as a missing
//! `-c`), and a help that cannot be written is one error line and 124.

use assert_cmd::prelude::*;
use predicates::prelude::*;
use std::process::Command;

fn shell() -> Command {
    let mut c = Command::cargo_bin("agent-shell").unwrap();
    c.env_clear().env("PATH", "/usr/bin:/bin");
    c
}

#[test]
fn a_mistyped_option_is_named_not_a_missing_c() {
    shell()
        .args(["--polcy", "x", "-c", "true"])
        .assert()
        .code(120)
        .stderr(
            predicate::str::contains("unexpected argument '--polcy'")
                .and(predicate::str::contains("-c <CMD>").not()),
        );
    // Positional parameters without -c: said as that.
    shell()
        .args(["foo"])
        .assert()
        .code(120)
        .stderr(predicate::str::contains("-c is not given"));
}

#[test]
fn parameters_after_c_may_look_like_options() {
    // bash's own rule: after `-c CMD`, `-x` is $0. No policy: agent-shell stops at setup
    // (124), past argument parsing — not a usage error.
    shell()
        .args(["-c", "echo $0", "-x"])
        .assert()
        .code(124)
        .stderr(predicate::str::contains("unexpected argument").not());
}

#[test]
fn a_full_disk_is_one_error_line() {
    for args in [&["--help"][..], &["--generate", "man"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        shell().args(args).stdout(full).assert().code(124).stderr(
            predicate::str::starts_with("agent-shell: cannot write to standard output")
                .and(predicate::function(|s: &str| s.lines().count() == 1)),
        );
    }
}
