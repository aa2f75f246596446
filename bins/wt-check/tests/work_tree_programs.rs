//! Work-tree files the owner's git runs, changed during the turn (fifth red-team pass):
//! R5-3, a relative `core.fsmonitor` / `core.hooksPath` rewritten in a worktree the session
//! adds in the same command; R5-7, what an installed hook runs from the work tree (the
//! pre-commit framework's `.pre-commit-config.yaml`, a hand-written hook's
//! `exec ./scripts/lint.sh`). Positive control on every git: the owner's plain git there runs
//! the agent's payload. `wt-check check` reports each (`work_tree_program_changed`, naming
//! what runs it) and stays clean when nothing changed.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn write_exec(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn pin_accepting(w: &common::World) {
    let st = w.state();
    let out = w.wt_check(&[
        "pin",
        "--accept-armed",
        "--state",
        st.to_str().unwrap(),
        "--session",
        "s1",
        w.main().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "pin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The standard world with the owner's relative `core.fsmonitor = tools/fsmon.sh` committed
/// and pinned (with `extra` files committed too); `check` is clean.
fn fsmonitor_world(extra: &[(&str, &str)]) -> common::World {
    let w = common::world();
    let m = w.main();
    write_exec(&m.join("tools/fsmon.sh"), "#!/bin/sh\nexit 1\n");
    for (name, text) in extra {
        std::fs::write(m.join(name), text).unwrap();
    }
    w.git(&m, &["add", "-A"]);
    w.git(&m, &["commit", "-q", "-m", "tools"]);
    w.git(&m, &["config", "core.fsmonitor", "tools/fsmon.sh"]);
    pin_accepting(&w);
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "clean before: {ev:#?}");
    w
}

fn changed(ev: &[serde_json::Value]) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = ev
        .iter()
        .filter(|e| e["event"] == "work_tree_program_changed")
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["where"].as_str().unwrap().to_owned(),
                e["via"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Run `args` with the owner's plain `git` in `dir`; which of `markers` appeared.
fn owner_runs(
    w: &common::World,
    git: &Path,
    dir: &Path,
    args: &[&str],
    markers: &[PathBuf],
) -> Vec<bool> {
    for m in markers {
        let _ = std::fs::remove_file(m);
    }
    let mut c = Command::new(git);
    w.env(&mut c);
    if let Some(home_bin) = pre_commit_dir() {
        // The pre-commit framework's hook finds its Python through PATH.
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", home_bin.display());
        c.env("PATH", path);
    }
    let _ = c.arg("-C").arg(dir).args(args).output().unwrap();
    markers.iter().map(|m| m.exists()).collect()
}

#[test]
fn relative_programs_changed_in_a_worktree_added_during_the_turn_are_reported() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        write_exec(&m.join("tools/fsmon.sh"), "#!/bin/sh\nexit 1\n");
        write_exec(&m.join(".husky/pre-commit"), "#!/bin/sh\nexit 0\n");
        w.git(&m, &["add", "-A"]);
        w.git(&m, &["commit", "-q", "-m", "tools"]);
        w.git(&m, &["config", "core.fsmonitor", "tools/fsmon.sh"]);
        w.git(&m, &["config", "core.hooksPath", ".husky"]);
        pin_accepting(&w);
        // The turn: a worktree added in the session's folder (the same command that writes
        // in it, so no plan protected it).
        let feat = w.root().join("proj-worktrees/s1/feat");
        w.git(
            &m,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feat",
                feat.to_str().unwrap(),
            ],
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "an untouched new worktree is clean: {ev:#?}");
        let fsmon = w.root().join("pwned-fsmon");
        let hook = w.root().join("pwned-hook");
        write_exec(
            &feat.join("tools/fsmon.sh"),
            &format!("#!/bin/sh\ntouch {}; exit 1\n", fsmon.display()),
        );
        write_exec(
            &feat.join(".husky/pre-commit"),
            &format!("#!/bin/sh\ntouch {}\n", hook.display()),
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        let got = changed(&ev);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, feat.join(".husky").display().to_string());
        assert!(got[0].2.contains("core.hooksPath"), "{got:?}");
        // The program's folder (what it sources or imports beside it, R7-1).
        assert_eq!(got[1].0, feat.join("tools").display().to_string());
        assert!(got[1].2.contains("core.fsmonitor"), "{got:?}");
        assert!(got.iter().all(|g| g.1 == "work tree"), "{got:?}");
        // Positive control: the owner's git in that worktree runs both.
        std::fs::write(feat.join("README"), "review\n").unwrap();
        let fired = owner_runs(
            &w,
            &git,
            &feat,
            &["commit", "-q", "-am", "review"],
            &[fsmon.clone(), hook.clone()],
        );
        assert_eq!(fired, [true, true], "{}: control", git.display());
    }
}

/// A `.git` file planted in a folder of the work tree (`sub/.git`: `gitdir: ../.git`) makes
/// that folder a second work tree of the same repository: the owner's git run there resolves
/// the relative `core.fsmonitor` from `sub/` and runs the agent's `sub/tools/fsmon.sh` (sixth
/// red-team pass, R6-3). `check` reports the `.git` file at error level. Positive control: the
/// owner's plain `git status` in `sub/` runs the payload. A submodule checkout's `.git` file
/// (into `modules/`) and the session's linked worktrees stay clean (the other tests).
#[test]
fn a_gitfile_that_makes_a_second_work_tree_of_the_repository_is_reported() {
    for git in common::gits() {
        let w = fsmonitor_world(&[]);
        let m = w.main();
        let fired = w.root().join("pwned-second");
        std::fs::create_dir_all(m.join("sub")).unwrap();
        std::fs::write(m.join("sub/.git"), "gitdir: ../.git\n").unwrap();
        write_exec(
            &m.join("sub/tools/fsmon.sh"),
            &format!("#!/bin/sh\ntouch {}; exit 1\n", fired.display()),
        );
        // In a folder that sorts before the top's `.git` (the walk reaches it first: R7-2).
        std::fs::create_dir_all(m.join(".c")).unwrap();
        std::fs::write(m.join(".c/.git"), "gitdir: ../.git\n").unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        let early = m.join(".c/.git");
        assert!(
            ev.iter()
                .any(|e| e["path"].as_str() == Some(early.to_str().unwrap())
                    && e["level"] == "error"),
            "{}: .c/.git not reported: {ev:#?}",
            git.display()
        );
        let dot_git = m.join("sub/.git");
        let e = ev
            .iter()
            .find(|e| {
                e["path"].as_str() == Some(dot_git.to_str().unwrap()) && e["level"] == "error"
            })
            .unwrap_or_else(|| panic!("{}: sub/.git not reported: {ev:#?}", git.display()));
        assert_eq!(e["level"], "error", "{ev:#?}");
        // One finding for one file: not the error again as an "outside the workspace"
        // warning or a nested repository.
        for planted in [&dot_git, &early] {
            let named = ev
                .iter()
                .filter(|e| {
                    e["path"].as_str() == Some(planted.to_str().unwrap())
                        || e["path"].as_str() == planted.parent().and_then(|p| p.to_str())
                })
                .count();
            assert_eq!(named, 1, "{}: {ev:#?}", git.display());
        }
        let got = owner_runs(
            &w,
            &git,
            &m.join("sub"),
            &["status"],
            std::slice::from_ref(&fired),
        );
        assert_eq!(got, [true], "{}: control", git.display());
    }
}

/// The same `.git` file planted outside the main work tree: in the session's folder (`s1/x`,
/// `s1/.x`) or in the session's linked worktree (`wt1/sub`, `wt1/.a`, the ignored
/// `wt1/target/y`), naming the main git dir or the session's worktree entry (eighth red-team
/// pass, R8-5: `check` dropped it as a `.git` file "leading into the common dir"). Each is
/// an error; positive control: the owner's plain `git status` there runs the agent's script.
#[test]
fn a_second_work_tree_planted_in_the_session_folder_is_reported() {
    for git in common::gits() {
        let w = fsmonitor_world(&[(".gitignore", "target/\n")]);
        let session = w.own().parent().unwrap().to_path_buf();
        let places = [
            session.join("x"),
            session.join(".x"),
            w.own().join("sub"),
            w.own().join(".a"),
            w.own().join("target/y"),
        ];
        let entry = w.git_dir().join("worktrees/wt1");
        let fired = w.root().join("pwned-session");
        for (i, place) in places.iter().enumerate() {
            let target = if i % 2 == 0 {
                w.git_dir()
            } else {
                entry.clone()
            };
            std::fs::create_dir_all(place).unwrap();
            std::fs::write(
                place.join(".git"),
                format!("gitdir: {}\n", target.display()),
            )
            .unwrap();
            write_exec(
                &place.join("tools/fsmon.sh"),
                &format!("#!/bin/sh\ntouch {}; exit 1\n", fired.display()),
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {}: {ev:#?}", git.display(), place.display());
            let dot_git = place.join(".git");
            let named: Vec<_> = ev
                .iter()
                .filter(|e| e["path"].as_str() == Some(dot_git.to_str().unwrap()))
                .collect();
            assert!(
                named.len() == 1 && named[0]["level"] == "error",
                "{} {}: {ev:#?}",
                git.display(),
                place.display()
            );
            let got = owner_runs(&w, &git, place, &["status"], std::slice::from_ref(&fired));
            assert_eq!(
                got,
                [true],
                "{} {}: control",
                git.display(),
                place.display()
            );
            std::fs::remove_file(&dot_git).unwrap();
        }
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "clean after: {ev:#?}");
        // The same through a link (ninth pass, R9-4): `gitdir:` naming a link to the git dir,
        // and `.git` itself a link to it, in the session's folder and in the main work tree.
        let link = session.join("l");
        std::os::unix::fs::symlink(w.git_dir(), &link).unwrap();
        // `l2/..` is the git dir to the kernel, `<s1>` as text (tenth pass, R10-1).
        let refs_link = session.join("l2");
        std::os::unix::fs::symlink(w.git_dir().join("refs"), &refs_link).unwrap();
        let place = session.join("v");
        std::fs::create_dir_all(&place).unwrap();
        let dot_git = place.join(".git");
        std::fs::write(&dot_git, format!("gitdir: {}/..\n", refs_link.display())).unwrap();
        write_exec(
            &place.join("tools/fsmon.sh"),
            &format!("#!/bin/sh\ntouch {}; exit 1\n", fired.display()),
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{} l2/..: {ev:#?}", git.display());
        assert!(
            ev.iter()
                .any(|e| e["path"].as_str() == Some(dot_git.to_str().unwrap())
                    && e["level"] == "error"),
            "{} l2/..: {ev:#?}",
            git.display()
        );
        let got = owner_runs(&w, &git, &place, &["status"], std::slice::from_ref(&fired));
        assert_eq!(got, [true], "{} l2/..: control", git.display());
        std::fs::remove_file(&dot_git).unwrap();
        for (place, as_link) in [
            (session.join("y"), false),
            (session.join("z"), true),
            (w.main().join("sub2"), true),
        ] {
            std::fs::create_dir_all(&place).unwrap();
            let dot_git = place.join(".git");
            if as_link {
                std::os::unix::fs::symlink(w.git_dir(), &dot_git).unwrap();
            } else {
                std::fs::write(&dot_git, format!("gitdir: {}\n", link.display())).unwrap();
            }
            write_exec(
                &place.join("tools/fsmon.sh"),
                &format!("#!/bin/sh\ntouch {}; exit 1\n", fired.display()),
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {}: {ev:#?}", git.display(), place.display());
            assert!(
                ev.iter()
                    .any(|e| e["path"].as_str() == Some(dot_git.to_str().unwrap())
                        && e["level"] == "error"),
                "{} {}: {ev:#?}",
                git.display(),
                place.display()
            );
            let got = owner_runs(&w, &git, &place, &["status"], std::slice::from_ref(&fired));
            assert_eq!(
                got,
                [true],
                "{} {}: control",
                git.display(),
                place.display()
            );
            std::fs::remove_file(&dot_git).unwrap();
        }
    }
}

/// Where `pre-commit` is (its folder), if installed.
fn pre_commit_dir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/root/.pyenv/shims", "/usr/local/bin", "/usr/bin"].map(PathBuf::from))
        .find(|d| d.is_absolute() && d.join("pre-commit").is_file())
}

#[test]
fn what_the_installed_hooks_run_is_reported_when_changed() {
    let Some(pc) = pre_commit_dir() else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("pre-commit is not installed (CI=true: this test must run)");
        }
        eprintln!("skipped: pre-commit is not installed");
        return;
    };
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        write_exec(&m.join("scripts/lint.sh"), "#!/bin/sh\nexit 0\n");
        std::fs::write(
            m.join(".pre-commit-config.yaml"),
            "repos:\n- repo: local\n  hooks:\n  - id: ok\n    name: ok\n    entry: \"true\"\n    language: system\n    pass_filenames: false\n",
        )
        .unwrap();
        w.git(&m, &["add", "-A"]);
        w.git(&m, &["commit", "-q", "-m", "setup"]);
        let mut c = Command::new(pc.join("pre-commit"));
        w.env(&mut c);
        c.env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", pc.display()),
        );
        let o = c.current_dir(&m).arg("install").output().unwrap();
        assert!(
            o.status.success(),
            "pre-commit install: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        write_exec(
            &w.git_dir().join("hooks/post-commit"),
            "#!/bin/sh\nexec ./scripts/lint.sh\n",
        );
        pin_accepting(&w);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "nothing changed yet: {ev:#?}");
        // The turn: the config's entry and the script the hook names, edited and staged.
        let a = w.root().join("pwned-precommit");
        let b = w.root().join("pwned-lint");
        let cfg = std::fs::read_to_string(m.join(".pre-commit-config.yaml")).unwrap();
        std::fs::write(
            m.join(".pre-commit-config.yaml"),
            cfg.replace(
                "entry: \"true\"",
                &format!("entry: sh -c \"touch {}\"", a.display()),
            ),
        )
        .unwrap();
        write_exec(
            &m.join("scripts/lint.sh"),
            &format!("#!/bin/sh\ntouch {}\n", b.display()),
        );
        w.git(&m, &["add", ".pre-commit-config.yaml", "scripts/lint.sh"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        let got = changed(&ev);
        let cfg_path = m.join(".pre-commit-config.yaml").display().to_string();
        // The folder of the script the hook names (R7-1).
        let lint_path = m.join("scripts").display().to_string();
        let wheres = |p: &str| -> Vec<&str> {
            got.iter()
                .filter(|g| g.0 == p)
                .map(|g| g.1.as_str())
                .collect()
        };
        assert_eq!(wheres(&cfg_path), ["index", "work tree"], "{got:?}");
        assert_eq!(wheres(&lint_path), ["index", "work tree"], "{got:?}");
        assert!(
            got.iter()
                .any(|g| g.0 == cfg_path && g.2 == "hook pre-commit (pre-commit)"),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|g| g.0 == lint_path && g.2 == "hook post-commit"),
            "{got:?}"
        );
        // Positive control: the owner's next commit runs both.
        std::fs::write(m.join("README"), "owner\n").unwrap();
        let fired = owner_runs(
            &w,
            &git,
            &m,
            &["commit", "-q", "-am", "owner"],
            &[a.clone(), b.clone()],
        );
        assert_eq!(fired, [true, true], "{}: control", git.display());
    }
}

/// Seventh red-team pass (R7-1): the owner's `core.fsmonitor` runs a Python script whose
/// folder comes first on `sys.path`; the agent adds `tools/json.py` beside it, leaving the
/// script itself as it was. `check` reports the script's folder. Positive control on every
/// git: the owner's plain `git status` runs the agent's module.
#[test]
fn a_module_added_beside_a_program_values_script_is_reported() {
    if !Path::new("/usr/bin/python3").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "/usr/bin/python3 is missing (CI=true: this test must run)"
        );
        eprintln!("skipped: /usr/bin/python3 is missing");
        return;
    }
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        write_exec(&m.join("tools/fsm.py"), "import sys, json\nsys.exit(1)\n");
        w.git(&m, &["add", "-A"]);
        w.git(&m, &["commit", "-q", "-m", "tools"]);
        w.git(&m, &["config", "core.fsmonitor", "python3 tools/fsm.py"]);
        pin_accepting(&w);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "nothing changed yet: {ev:#?}");
        let mark = w.root().join("pwned-json");
        std::fs::write(
            m.join("tools/json.py"),
            format!("open({:?}, 'w')\n", mark.display().to_string()),
        )
        .unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        let got = changed(&ev);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, m.join("tools").display().to_string());
        assert!(got[0].2.contains("core.fsmonitor"), "{got:?}");
        let fired = owner_runs(
            &w,
            &git,
            &m,
            &["status", "--short"],
            std::slice::from_ref(&mark),
        );
        assert_eq!(fired, [true], "{}: control", git.display());
    }
}

/// Eleventh red-team pass, R11-6/R11-8: what an interpreter a program value starts reads at
/// the top but is missing there — `.npmrc` for `npx`, `rust-toolchain.toml` for `cargo` —
/// cannot be a placeholder (an empty file at the top would be staged); created during the
/// turn, it is a finding of `check`. Positive control: plain npx runs the agent's
/// `node-options` require (when node and npx are installed).
#[test]
fn a_missing_file_an_interpreter_reads_at_the_top_is_reported_when_created() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        w.git(&m, &["config", "alias.lint", "!npx --no-install tool"]);
        w.git(&m, &["config", "alias.fmt", "!cargo fmt --check"]);
        pin_accepting(&w);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "clean before: {ev:#?}");
        let mark = w.root().join("npmrc-ran");
        std::fs::write(
            m.join("e.js"),
            format!(
                "require('fs').writeFileSync({:?}, '')\n",
                mark.display().to_string()
            ),
        )
        .unwrap();
        std::fs::write(
            m.join(".npmrc"),
            format!("node-options=--require={}\n", m.join("e.js").display()),
        )
        .unwrap();
        std::fs::write(
            m.join("rust-toolchain.toml"),
            "[toolchain]\npath = \"tc\"\n",
        )
        .unwrap();
        if Path::new("/usr/bin/npx").exists() {
            write_exec(
                &m.join("node_modules/tool/bin/cli.js"),
                "#!/usr/bin/env node\nprocess.exit(0)\n",
            );
            std::fs::create_dir_all(m.join("node_modules/.bin")).unwrap();
            std::os::unix::fs::symlink("../tool/bin/cli.js", m.join("node_modules/.bin/tool"))
                .unwrap();
            let ran = owner_runs(&w, &git, &m, &["lint"], std::slice::from_ref(&mark));
            assert_eq!(
                ran,
                [true],
                "{}: control: npx did not run it",
                git.display()
            );
            std::fs::remove_dir_all(m.join("node_modules")).unwrap();
        } else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "npx is not installed (CI=true: the control must run)"
            );
            eprintln!("SKIPPED (control only): npx is not installed");
        }
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        let paths: Vec<String> = changed(&ev).into_iter().map(|c| c.0).collect();
        for f in [".npmrc", "rust-toolchain.toml"] {
            let p = m.join(f).display().to_string();
            assert!(
                paths.contains(&p),
                "{}: {f} not reported: {ev:#?}",
                git.display()
            );
        }
    }
}
