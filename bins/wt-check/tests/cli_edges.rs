//! CLI edges, tested on the binary: errors on stderr, a full disk is one error line and a
//! documented code (never a panic, never silence), a path that is not the pinned repository,
//! audit's walk choices (dependency folders, `--exclude`) and an audit that finds nothing.

mod common;

use assert_cmd::prelude::*;
use predicates::prelude::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn wt(w: &common::World) -> Command {
    let mut c = Command::cargo_bin("wt-check").unwrap();
    w.env(&mut c);
    c
}

fn full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
}

/// One line on stderr naming standard output, no panic, no backtrace.
fn one_error_line() -> impl Predicate<str> {
    predicate::str::contains("cannot write to standard output")
        .and(predicate::str::contains("panicked").not())
        .and(predicate::function(|s: &str| s.lines().count() == 1))
}

#[test]
fn an_unreadable_state_file_is_said_on_stderr_too() {
    let w = common::world();
    std::fs::create_dir_all(w.state().parent().unwrap()).unwrap();
    std::fs::write(w.state(), "not json").unwrap();
    let st = w.state();
    for sub in ["check", "scan"] {
        wt(&w)
            .args([
                sub,
                "--state",
                st.to_str().unwrap(),
                w.main().to_str().unwrap(),
            ])
            .assert()
            .code(2)
            .stdout(predicate::str::contains("check_incomplete"))
            .stderr(
                predicate::str::starts_with("wt-check: ")
                    .and(predicate::str::contains("not a wt-check state file")),
            );
    }
}

#[test]
fn a_path_that_is_not_the_pinned_repository_is_an_error() {
    let w = common::world();
    w.pin();
    let st = w.state();
    let st = st.to_str().unwrap();
    // Does not exist: not "check the pinned repository instead".
    wt(&w)
        .args(["check", "--state", st, "/nonexistent/repo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/repo"));
    // Exists, is not a repository, is not the pinned one.
    let other = w.root().join("plain");
    std::fs::create_dir_all(&other).unwrap();
    wt(&w)
        .args(["check", "--state", st, other.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not the repository pinned"));
    // The pinned repository with a damaged layout (HEAD removed) is still checked.
    std::fs::rename(w.git_dir().join("HEAD"), w.root().join("HEAD.aside")).unwrap();
    wt(&w)
        .args([
            "check",
            "--no-scan",
            "--state",
            st,
            w.main().to_str().unwrap(),
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("git_dir_entry_changed"));
}

#[test]
fn a_full_disk_is_one_error_line_and_a_documented_code() {
    let w = common::world();
    w.pin();
    let st = w.state();
    let (st, m) = (st.to_str().unwrap(), w.main());
    let m = m.to_str().unwrap();
    // Plant a finding so check and scan have something to print.
    let h = w.git_dir().join("hooks/pre-commit");
    std::fs::write(&h, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["--generate", "man"],
        vec!["audit", m],
        vec!["audit", "--format", "sarif", m],
        vec!["check", "--state", st, m],
        vec!["plan", m],
    ];
    for args in cases {
        wt(&w)
            .args(&args)
            .stdout(full())
            .assert()
            .code(2)
            .stderr(one_error_line());
    }
    // pin: the state file is written, but the summary that cannot be shown is an error.
    let st2 = w.root().join("state/st2.json");
    wt(&w)
        .args(["pin", "--accept-armed", "--state", st2.to_str().unwrap(), m])
        .stdout(full())
        .assert()
        .code(2)
        .stderr(one_error_line());
}

#[test]
fn no_subcommand_prints_the_help_on_stderr() {
    let w = common::world();
    wt(&w)
        .assert()
        .code(120)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("Usage: wt-check"));
}

#[test]
fn audit_help_shows_audit_examples_only() {
    let w = common::world();
    wt(&w).args(["audit", "--help"]).assert().success().stdout(
        predicate::str::contains("wt-check audit")
            .and(predicate::str::contains("wt-check pin").not())
            .and(predicate::str::contains("wt-check check").not())
            .and(predicate::str::contains("--exclude")),
    );
}

#[test]
fn an_audit_that_finds_no_repository_says_so() {
    let w = common::world();
    let empty = w.root().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = empty.to_str().unwrap();
    wt(&w)
        .args(["audit", e])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("no git repository found"));
    for f in ["json", "sarif"] {
        wt(&w)
            .args(["audit", "--format", f, e])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("no git repository found"));
    }
}

/// A workspace with an armed repository hidden in each kind of folder.
fn workspace(w: &common::World) -> std::path::PathBuf {
    let ws = w.root().join("ws");
    let armed = |dir: &std::path::Path| {
        std::fs::create_dir_all(dir).unwrap();
        w.git(dir, &["init", "-q"]);
        w.git(dir, &["config", "core.fsmonitor", "./x.sh"]);
    };
    // Deep in node_modules: skipped by default.
    armed(&ws.join("node_modules/a/node_modules/b"));
    // At node_modules' top level of another project: node_modules is walked.
    armed(&ws.join("p2/node_modules/gitdep"));
    // Inside a folder tagged as a cache (Cargo's target/).
    let target = ws.join("target");
    std::fs::create_dir_all(target.join("debug/x")).unwrap();
    std::fs::write(
        target.join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n# cargo\n",
    )
    .unwrap();
    armed(&target.join("debug/x/y"));
    // In a folder the owner excludes.
    armed(&ws.join("build/out/z"));
    ws
}

fn audit_json(w: &common::World, args: &[&str]) -> serde_json::Value {
    let out = wt(w).arg("audit").args(args).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn fsmonitor_paths(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["message"].as_str().unwrap_or("").contains("fsmonitor"))
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn audit_skips_dependency_folders_but_not_their_top_level_and_says_so() {
    let w = common::world();
    let ws = workspace(&w);
    let ws_s = ws.to_str().unwrap();

    // Everything, with --walk-all.
    let all = audit_json(&w, &["--format", "json", "--walk-all", ws_s]);
    let found = fsmonitor_paths(&all);
    for part in [
        "node_modules/a/node_modules/b",
        "gitdep",
        "debug/x/y",
        "build/out/z",
    ] {
        assert!(
            found.iter().any(|p| p.contains(part)),
            "{part} not found: {found:?}"
        );
    }
    assert_eq!(all["skipped_folders"].as_array().unwrap().len(), 0);

    // Default: the deep node_modules and the cache are not walked, and listed as such; the
    // repository at node_modules' top level is still found.
    let def = audit_json(&w, &["--format", "json", ws_s]);
    let found = fsmonitor_paths(&def);
    assert!(found.iter().any(|p| p.contains("gitdep")), "{found:?}");
    assert!(found.iter().any(|p| p.contains("build/out/z")));
    assert!(
        !found.iter().any(|p| p.contains("a/node_modules/b")),
        "{found:?}"
    );
    assert!(!found.iter().any(|p| p.contains("debug/x/y")), "{found:?}");
    let skipped: Vec<String> = def["skipped_folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        skipped.contains(&ws.join("node_modules").to_string_lossy().into_owned()),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&ws.join("target").to_string_lossy().into_owned()),
        "{skipped:?}"
    );

    // --exclude: by name at any depth, or by relative path.
    for glob in ["build", "build/out"] {
        let v = audit_json(&w, &["--format", "json", "--exclude", glob, ws_s]);
        let found = fsmonitor_paths(&v);
        assert!(
            !found.iter().any(|p| p.contains("build/out/z")),
            "{glob}: {found:?}"
        );
        assert!(v["skipped_folders"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["why"] == format!("--exclude {glob}")));
    }
    // The human report names what it did not walk; SARIF carries it as a notification.
    wt(&w)
        .args(["audit", ws_s])
        .assert()
        .stdout(predicate::str::contains("not walked: 2 folder(s)"));
    let out = wt(&w)
        .args(["audit", "--format", "sarif", ws_s])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    assert!(notes.iter().any(|n| n["message"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Not walked:")));
    // A bad pattern is a usage error naming it.
    wt(&w)
        .args(["audit", "--exclude", "/abs", ws_s])
        .assert()
        .code(120)
        .stderr(predicate::str::contains("/abs"));
}
