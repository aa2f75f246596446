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

/// An executable `#!/bin/sh` file at `p`.
fn exec(p: &std::path::Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn findings(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["findings"].as_array().unwrap().iter().collect()
}

/// The findings above note level.
fn counted(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    findings(v)
        .into_iter()
        .filter(|f| f["level"] != "note")
        .collect()
}

fn audit_path(w: &common::World, p: &std::path::Path, format: &str) -> (i32, String) {
    let out = w.wt_check(&["audit", "--format", format, p.to_str().unwrap()]);
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

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
        ("nested-repository-with-a-hook", "GW010", 1, |w| {
            w.git(&w.main(), &["init", "-q", "inner"]);
            exec(&w.main().join("inner/.git/hooks/post-checkout"));
        }),
        (
            "nested-repository-running-nothing-is-a-note",
            "GW010",
            0,
            |w| {
                w.git(&w.main(), &["init", "-q", "inner"]);
            },
        ),
        ("bare-in-work-tree-with-a-hook", "GW011", 1, |w| {
            w.git(&w.main(), &["init", "-q", "--bare", "docs/bare"]);
            exec(&w.main().join("docs/bare/hooks/pre-receive"));
        }),
        ("bare-fixture-running-nothing-is-a-note", "GW011", 0, |w| {
            w.git(
                &w.main(),
                &["init", "-q", "--bare", "tests/fixtures/repo.git"],
            );
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
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("0 finding(s) (0 error(s), 0 warning(s), 0 note(s)) in 1 repository"));
    let out = w.wt_check(&["audit", "/nonexistent/path"]);
    assert_eq!(out.status.code(), Some(2));
}

/// What honest repositories do is not a finding above note: https, ssh and scp remotes, a
/// clone from a local path, an include of the owner's own file, git's own layout (a linked
/// worktree, a submodule checkout) audited directly.
#[test]
fn honest_layouts_raise_nothing_above_note() {
    let w = fresh();
    let m = w.main();
    w.git(
        &m,
        &["remote", "add", "origin", "https://github.com/git/git"],
    );
    w.git(&m, &["remote", "add", "ssh", "ssh://git@example.com/r.git"]);
    w.git(&m, &["remote", "add", "scp", "git@github.com:git/git.git"]);
    w.git(&m, &["remote", "add", "local", "/srv/mirrors/r.git"]);
    // The owner's file, in the owner's home (outside every path audited below).
    let inc = w.home().join("work.gitconfig");
    std::fs::write(&inc, "[core]\n\tpager = less -R\n").unwrap();
    w.git(&m, &["config", "include.path", inc.to_str().unwrap()]);
    // A submodule checkout and a linked worktree.
    w.git(&w.root(), &["init", "-q", "src"]);
    w.git(
        &w.root().join("src"),
        &["commit", "-q", "--allow-empty", "-m", "s"],
    );
    let src = w.root().join("src");
    w.git(
        &m,
        &["submodule", "add", "-q", src.to_str().unwrap(), "vendor/x"],
    );
    w.git(&m, &["commit", "-q", "-m", "sub"]);
    let lw = w.root().join("lw");
    w.git(&m, &["worktree", "add", "-q", lw.to_str().unwrap()]);
    for p in [m.clone(), m.join("vendor/x"), lw.clone()] {
        let (c, v) = audit_path(&w, &p, "json");
        let v: serde_json::Value = serde_json::from_str(&v).unwrap();
        assert_eq!(c, 0, "{}: {v:#}", p.display());
        assert!(counted(&v).is_empty(), "{}: {v:#}", p.display());
        // The owner's pager is never a finding; the include of the owner's file is one note.
        assert!(
            !findings(&v)
                .iter()
                .any(|f| f["details"]["key"] == "core.pager"),
            "{v:#}"
        );
        let incs = findings(&v)
            .into_iter()
            .filter(|f| f["rule"] == "GW006" || f["details"]["key"] == "include.path")
            .count();
        assert!(
            incs <= 1,
            "{}: one root cause, one finding: {v:#}",
            p.display()
        );
        assert!(
            !findings(&v)
                .iter()
                .any(|f| f["details"]["key"] == "core.worktree"),
            "{v:#}"
        );
    }
    // The same file where the audit cannot tell who writes it (outside the owner's home,
    // here inside the audited path) is the agent's: its pager is an error.
    let (c, v) = audit_path(&w, &w.root(), "json");
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    assert_eq!(c, 1, "{v:#}");
    assert!(
        findings(&v)
            .iter()
            .any(|f| f["details"]["key"] == "core.pager" && f["level"] == "error"),
        "{v:#}"
    );
    // Audited directly, a linked worktree is audited as the repository behind it.
    exec(&w.git_dir().join("hooks/post-checkout"));
    let (c, v) = audit_path(&w, &lw, "json");
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    assert_eq!(c, 1, "{v:#}");
    assert!(has(&v, "GW001") && !has(&v, "GW008"), "{v:#}");
    // And a submodule checkout as its git dir under modules/, hooks and all.
    exec(&w.git_dir().join("modules/vendor/x/hooks/post-checkout"));
    let (c, v) = audit_path(&w, &m.join("vendor/x"), "json");
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    assert_eq!(c, 1, "{v:#}");
    assert!(has(&v, "GW001") && !has(&v, "GW008"), "{v:#}");
}

/// One husky install (`core.hooksPath=.husky/_`, a dozen hook files) is one finding, with
/// the hook names in its details.
#[test]
fn hooks_path_is_one_finding_with_its_hooks() {
    let w = fresh();
    let d = w.main().join(".husky/_");
    for n in ["pre-commit", "commit-msg", "pre-push", "post-checkout", "h"] {
        exec(&d.join(n));
    }
    w.git(&w.main(), &["config", "core.hooksPath", ".husky/_"]);
    let (c, v) = audit(&w);
    assert_eq!(c, 1);
    let f = findings(&v);
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["rule"], "GW003");
    assert_eq!(f[0]["level"], "error");
    assert_eq!(
        f[0]["details"]["hooks"],
        serde_json::json!(["commit-msg", "post-checkout", "pre-commit", "pre-push"])
    );
    // An empty hooks folder in the work tree: the agent could fill it (a warning).
    for n in ["pre-commit", "commit-msg", "pre-push", "post-checkout", "h"] {
        std::fs::remove_file(d.join(n)).unwrap();
    }
    let (c, v) = audit(&w);
    assert_eq!((c, findings(&v).len()), (1, 1), "{v:#}");
    assert_eq!(findings(&v)[0]["level"], "warning");
}

/// A folder whose `.git` git skips (not a git dir, a link to nothing) is audited as what
/// git uses there: the repository above. Positive control: plain git run in that folder
/// runs the parent's fsmonitor and hook, on every git of the machine.
#[test]
fn a_skipped_dot_git_is_audited_as_the_repository_above() {
    let gits: Vec<&str> = ["/usr/bin/git", "/usr/local/bin/git"]
        .into_iter()
        .filter(|g| std::path::Path::new(g).exists())
        .collect();
    assert!(!gits.is_empty(), "no git to run the positive control with");
    for (kind, make) in [
        (
            "empty .git folder",
            (|p: &std::path::Path| std::fs::create_dir(p).unwrap()) as fn(&std::path::Path),
        ),
        ("link to nothing", |p: &std::path::Path| {
            std::os::unix::fs::symlink("/nonexistent/x", p).unwrap()
        }),
        ("git dir with a bad HEAD", |p: &std::path::Path| {
            for d in ["objects", "refs"] {
                std::fs::create_dir_all(p.join(d)).unwrap();
            }
            std::fs::write(p.join("HEAD"), "garbage\n").unwrap();
        }),
    ] {
        let w = fresh();
        let sub = w.main().join("sub");
        std::fs::create_dir(&sub).unwrap();
        make(&sub.join(".git"));
        let canary = w.root().join("fired");
        let mon = w.root().join("mon.sh");
        std::fs::write(
            &mon,
            format!("#!/bin/sh\necho x >> {}\nexit 1\n", canary.display()),
        )
        .unwrap();
        std::fs::set_permissions(&mon, std::fs::Permissions::from_mode(0o755)).unwrap();
        w.git(
            &w.main(),
            &["config", "core.fsmonitor", mon.to_str().unwrap()],
        );
        for g in &gits {
            let _ = std::fs::remove_file(&canary);
            let mut c = std::process::Command::new(g);
            w.env(&mut c);
            let out = c
                .current_dir(&sub)
                .args(["status", "--porcelain"])
                .output()
                .unwrap();
            assert!(
                canary.exists(),
                "{kind}: positive control: {g} status in {} did not run the parent's fsmonitor: {}",
                sub.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let (c, v) = audit_path(&w, &sub, "json");
        let v: serde_json::Value = serde_json::from_str(&v).unwrap();
        assert_eq!(c, 1, "{kind}: {v:#}");
        assert!(
            findings(&v)
                .iter()
                .any(|f| f["details"]["key"] == "core.fsmonitor" && f["level"] == "error"),
            "{kind}: the parent's fsmonitor is not reported: {v:#}"
        );
        assert!(has(&v, "GW018") && has(&v, "GW019"), "{kind}: {v:#}");
        // Without the armed parent: notes only, exit 0.
        w.git(&w.main(), &["config", "--unset", "core.fsmonitor"]);
        let (c, v) = audit_path(&w, &sub, "json");
        assert_eq!(c, 0, "{kind}: {v}");
    }
}

/// A URL's userinfo (`https://user:token@…`, `https://token@…`) is printed by no format;
/// the scp form's user stays.
#[test]
fn credentials_in_urls_are_redacted_in_every_format() {
    let w = fresh();
    let m = w.main();
    w.git(
        &m,
        &[
            "config",
            "remote.a.url",
            "evil::https://alice:s3cr3t-pass@host/r",
        ],
    );
    w.git(
        &m,
        &[
            "config",
            "remote.b.url",
            "ext::sh -c x https://ghp_s3cr3ttoken@host/r",
        ],
    );
    w.git(
        &m,
        &[
            "config",
            "url.https://bob:s3cr3t-too@mirror/.insteadOf",
            "https://github.com/",
        ],
    );
    w.git(&m, &["config", "remote.c.url", "git@github.com:o/r.git"]);
    w.git(&m, &["config", "remote.c.promisor", "true"]);
    w.git(
        &m,
        &["config", "remote.d.url", "https://carol:s3cr3t-d@host/r"],
    );
    w.git(&m, &["config", "remote.d.promisor", "true"]);
    w.git(
        &m,
        &[
            "config",
            "remote.d.pushurl",
            "-oProxyCommand=x https://dave:s3cr3t-e@host/r",
        ],
    );
    for format in ["human", "json", "sarif"] {
        let (c, out) = audit_path(&w, &w.root(), format);
        assert_eq!(c, 1, "{format}: {out}");
        assert!(
            !out.contains("s3cr3t"),
            "{format} prints a credential: {out}"
        );
        assert!(out.contains("https://***@host/r"), "{format}: {out}");
    }
}

/// One root cause, one finding: a promisor's `ext::` URL is the promisor's transport
/// (GW012), not also an armed `remote.<name>.url`; a local-path remote that no lazy fetch
/// uses is a note.
#[test]
fn a_promisor_url_is_one_finding_and_a_local_remote_a_note() {
    let w = fresh();
    w.git(
        &w.main(),
        &["config", "remote.origin.url", "ext::sh -c evil"],
    );
    w.git(&w.main(), &["config", "remote.origin.promisor", "true"]);
    let (c, v) = audit(&w);
    assert_eq!(c, 1);
    let f = findings(&v);
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(
        (f[0]["rule"].as_str(), f[0]["level"].as_str()),
        (Some("GW012"), Some("error"))
    );
    w.git(&w.main(), &["config", "--unset", "remote.origin.promisor"]);
    w.git(
        &w.main(),
        &["config", "remote.origin.url", "/srv/mirror/r.git"],
    );
    let (c, v) = audit(&w);
    assert_eq!(c, 0, "{v:#}");
    let f = findings(&v);
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(
        (f[0]["rule"].as_str(), f[0]["level"].as_str()),
        (Some("GW004"), Some("note"))
    );
    assert_eq!(f[0]["details"]["url"], "local");
    // An honest partial clone (https promisor): nothing.
    w.git(
        &w.main(),
        &["config", "remote.origin.url", "https://github.com/git/git"],
    );
    w.git(&w.main(), &["config", "remote.origin.promisor", "true"]);
    w.git(
        &w.main(),
        &["config", "remote.origin.partialclonefilter", "blob:none"],
    );
    let (c, v) = audit(&w);
    assert_eq!((c, findings(&v).len()), (0, 0), "{v:#}");
}

/// An audit that finds no repository says so (it is clean, but maybe the wrong folder).
#[test]
fn zero_repositories_is_said() {
    let w = common::world();
    let empty = w.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = w.wt_check(&["audit", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no git repository found"), "{text}");
}

/// A `.git` file that makes a folder a second work tree of the repository above it is one
/// error, whether the audit starts at the top or at the folder itself (then the enclosing
/// work tree lies above the audited path): not an "outside the workspace" warning, and the
/// repository behind it is audited either way.
#[test]
fn a_second_work_tree_is_one_error_from_the_top_or_from_the_folder() {
    let w = fresh();
    let sub = w.main().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join(".git"), "gitdir: ../.git\n").unwrap();
    for start in [w.main(), sub.clone()] {
        let (code, text) = audit_path(&w, &start, "json");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let f = counted(&v);
        assert_eq!(f.len(), 1, "{}: {v:#}", start.display());
        assert_eq!(f[0]["level"], "error", "{v:#}");
        assert_eq!(f[0]["details"]["same_repository"], true, "{v:#}");
        assert_eq!(code, 1, "{v:#}");
        assert_eq!(
            v["repositories"].as_array().map(Vec::len),
            Some(1),
            "{}: {v:#}",
            start.display()
        );
    }
}
