//! `wt-check audit` with no baseline: each vector planted in a fresh workspace is reported
//! under its rule id, with the right exit code; JSON is the documented shape.

mod common;

use std::os::unix::fs::PermissionsExt;

fn fresh() -> common::World {
    let w = common::World {
        tmp: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join(".gitconfig"), "").unwrap();
    w.git(&w.root(), &["init", "-q", "proj"]);
    std::fs::write(w.main().join("f"), "x\n").unwrap();
    w.git(&w.main(), &["add", "f"]);
    w.git(&w.main(), &["commit", "-q", "-m", "i"]);
    w
}

fn audit(w: &common::World) -> (i32, serde_json::Value) {
    let out = w.wt_check(&["audit", "--format", "json", w.root().to_str().unwrap()]);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), v)
}

fn has(v: &serde_json::Value, rule: &str) -> bool {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == rule)
}

type Setup = fn(&common::World);

#[test]
fn each_vector_is_reported_under_its_rule() {
    let cases: &[(&str, &str, i32, Setup)] = &[
        ("hooks-path-in-work-tree", "GW003", 1, |w| {
            std::fs::create_dir(w.main().join(".githooks")).unwrap();
            let h = w.main().join(".githooks/pre-commit");
            std::fs::write(&h, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
            w.git(&w.main(), &["config", "core.hooksPath", ".githooks"]);
        }),
        ("commondir-in-main", "GW007", 1, |w| {
            w.git(&w.root(), &["init", "-q", "--bare", "foreign.git"]);
            std::fs::write(
                w.git_dir().join("commondir"),
                format!("{}\n", w.root().join("foreign.git").display()),
            )
            .unwrap();
        }),
        ("commondir-fifo-does-not-block", "GW007", 1, |w| {
            nix::unistd::mkfifo(
                &w.git_dir().join("commondir"),
                nix::sys::stat::Mode::from_bits_truncate(0o644),
            )
            .unwrap();
        }),
        ("gitfile-leaves-workspace", "GW008", 1, |w| {
            std::fs::create_dir(w.main().join("vendored")).unwrap();
            std::fs::write(
                w.main().join("vendored/.git"),
                "gitdir: /var/tmp/elsewhere/.git\n",
            )
            .unwrap();
        }),
        ("git-link", "GW008", 1, |w| {
            std::fs::create_dir(w.main().join("lnk")).unwrap();
            std::os::unix::fs::symlink("/var/tmp", w.main().join("lnk/.git")).unwrap();
        }),
        ("nested-repository", "GW010", 1, |w| {
            w.git(&w.main(), &["init", "-q", "inner"]);
        }),
        ("bare-in-work-tree", "GW011", 1, |w| {
            w.git(&w.main(), &["init", "-q", "--bare", "docs/bare"]);
        }),
        ("promisor-local", "GW012", 1, |w| {
            w.git(
                &w.main(),
                &["config", "remote.origin.url", "ext::sh -c evil"],
            );
            w.git(&w.main(), &["config", "remote.origin.promisor", "true"]);
        }),
        ("rebase-exec", "GW013", 1, |w| {
            std::fs::create_dir(w.git_dir().join("rebase-merge")).unwrap();
            std::fs::write(
                w.git_dir().join("rebase-merge/git-rebase-todo"),
                "pick 1234 x\nexec touch /tmp/pwned\n",
            )
            .unwrap();
        }),
        ("worktree-entry", "GW009", 1, |w| {
            w.git(
                &w.main(),
                &["worktree", "add", "-q", w.other().to_str().unwrap()],
            );
            std::fs::write(
                w.git_dir().join("worktrees/other/commondir"),
                "/elsewhere\n",
            )
            .unwrap();
        }),
        ("include-in-work-tree", "GW005", 1, |w| {
            std::fs::write(w.main().join("inc.cfg"), "[user]\n\tname = x\n").unwrap();
            w.git(&w.main(), &["config", "include.path", "../inc.cfg"]);
        }),
        ("unparseable-config-is-incomplete", "GW016", 2, |w| {
            let c = w.git_dir().join("config");
            let mut s = std::fs::read_to_string(&c).unwrap();
            s.push_str("[core\n");
            std::fs::write(c, s).unwrap();
        }),
    ];
    let mut failed = Vec::new();
    for (name, rule, code, setup) in cases {
        let w = fresh();
        let (c0, v0) = audit(&w);
        if c0 != 0 {
            failed.push(format!("{name}: honest twin not clean: {v0:#}"));
            continue;
        }
        setup(&w);
        let (c, v) = audit(&w);
        if !has(&v, rule) || c != *code {
            failed.push(format!(
                "{name}: expected {rule} and exit {code}, got exit {c}: {v:#}"
            ));
        }
        if *code == 2 && v["complete"] != false {
            failed.push(format!("{name}: incomplete audit must say complete=false"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn human_format_and_missing_path() {
    let w = fresh();
    let out = w.wt_check(&["audit", w.main().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 finding(s) in 1 repository"));
    let out = w.wt_check(&["audit", "/nonexistent/path"]);
    assert_eq!(out.status.code(), Some(2));
}
