//! A submodule's own linked worktrees (`git -C sub worktree add …`: the entry
//! `<common dir>/modules/sub/worktrees/<id>/`) and the submodules of those worktrees
//! (`…/worktrees/<id>/modules/<name>/`), end to end on every git of the machine. git enters
//! such an entry from its worktree's `.git` file, reads `commondir` there and then the config
//! and hooks of the git dir it names; in the submodule of that worktree it reads that git
//! dir's `config` and `hooks/`. Twenty-third red-team pass: R23-5 (`core.fsmonitor` and a hook
//! planted in `modules/sub/worktrees/<id>/modules/inner/`) and R23-8
//! (`modules/sub/worktrees/<id>/commondir` pointed at a git dir the agent built). Each test
//! has its positive control: plain git runs the planted program (a marker file).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(g);
    w.env(&mut c);
    c.arg("-C")
        .arg(dir)
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .unwrap()
}

fn git(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> String {
    let out = run(w, g, dir, args);
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        g.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The owner's world: `proj` with the submodule `sub`, which has the submodule `inner`; the
/// owner's linked worktree of `sub` at `<root>/subwt` (entry `modules/sub/worktrees/subwt`),
/// with `inner` initialised there (git dir `modules/sub/worktrees/subwt/modules/inner`).
fn world(g: &Path) -> common::World {
    let w = common::World {
        tmp: tempfile::tempdir().unwrap(),
    };
    let root = w.root();
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join(".gitconfig"), "").unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    git(&w, g, &root, &["init", "-q", "innersrc"]);
    std::fs::write(root.join("innersrc/i"), "inner\n").unwrap();
    git(&w, g, &root.join("innersrc"), &["add", "i"]);
    git(&w, g, &root.join("innersrc"), &["commit", "-qm", "inner"]);
    git(&w, g, &root, &["init", "-q", "subsrc"]);
    let src = root.join("subsrc");
    std::fs::write(src.join("f"), "sub\n").unwrap();
    git(&w, g, &src, &["add", "f"]);
    let inner_src = root.join("innersrc");
    git(
        &w,
        g,
        &src,
        &[
            "submodule",
            "add",
            "-q",
            inner_src.to_str().unwrap(),
            "inner",
        ],
    );
    git(&w, g, &src, &["commit", "-qm", "sub"]);
    git(&w, g, &root, &["init", "-q", "proj"]);
    let m = w.main();
    std::fs::write(m.join("README"), "hello\n").unwrap();
    git(&w, g, &m, &["add", "README"]);
    git(&w, g, &m, &["commit", "-qm", "init"]);
    git(
        &w,
        g,
        &m,
        &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
    );
    git(&w, g, &m, &["commit", "-qm", "sub"]);
    let subwt = root.join("subwt");
    git(
        &w,
        g,
        &m.join("sub"),
        &["worktree", "add", "-q", "-b", "o", subwt.to_str().unwrap()],
    );
    git(&w, g, &subwt, &["submodule", "update", "-q", "--init"]);
    assert!(
        w.git_dir()
            .join("modules/sub/worktrees/subwt/modules/inner/config")
            .is_file(),
        "{}: the worktree's submodule git dir is inside the entry",
        g.display()
    );
    w
}

fn entry(w: &common::World) -> PathBuf {
    w.git_dir().join("modules/sub/worktrees/subwt")
}

/// An executable script that writes `marker`.
fn program(path: &Path, marker: &Path) {
    std::fs::write(
        path,
        format!("#!/bin/sh\necho ran >> '{}'\nexit 0\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every regular file below `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.extend(files_holding(&p, needle));
        } else if ft.is_file()
            && std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        {
            out.push(p);
        }
    }
    out
}

fn quarantine(w: &common::World) -> PathBuf {
    w.root().join("state/st.json.quarantine")
}

/// Events at `path` (exactly).
fn at<'a>(ev: &'a [serde_json::Value], path: &Path) -> Vec<&'a serde_json::Value> {
    ev.iter()
        .filter(|e| e["path"].as_str() == Some(path.to_str().unwrap()))
        .collect()
}

/// R23-5: `core.fsmonitor` in the config of the git dir of `inner` in the submodule's linked
/// worktree, and a `pre-commit` hook there. The owner's `git status` in that worktree's
/// `inner` runs the fsmonitor, a commit runs the hook.
#[test]
fn config_and_hooks_of_a_submodule_in_a_submodules_linked_worktree_are_compared_and_restored() {
    for g in common::gits() {
        let w = world(&g);
        let root = w.root();
        let inner_dir = entry(&w).join("modules/inner");
        let inner_wt = root.join("subwt/inner");
        let cfg = inner_dir.join("config");
        let owners_cfg = std::fs::read(&cfg).unwrap();
        w.pin();
        let (code, ev) = w.check(false);
        assert_eq!(
            code,
            0,
            "{}: the owner's layout is clean: {ev:#?}",
            g.display()
        );
        // The agent's turn.
        let fsm = root.join("fsm.sh");
        let marker = root.join("fsm-ran");
        program(&fsm, &marker);
        let hook = inner_dir.join("hooks/pre-commit");
        let hook_marker = root.join("hook-ran");
        std::fs::create_dir_all(inner_dir.join("hooks")).unwrap();
        program(&hook, &hook_marker);
        git(
            &w,
            &g,
            &inner_wt,
            &["config", "core.fsmonitor", fsm.to_str().unwrap()],
        );
        // Positive control: plain git runs both.
        run(&w, &g, &inner_wt, &["status", "--short"]);
        assert!(marker.exists(), "{}: the fsmonitor ran", g.display());
        run(
            &w,
            &g,
            &inner_wt,
            &["commit", "-q", "--allow-empty", "-m", "x"],
        );
        assert!(hook_marker.exists(), "{}: the hook ran", g.display());
        std::fs::remove_file(&marker).unwrap();
        std::fs::remove_file(&hook_marker).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        let c = at(&ev, &cfg);
        assert_eq!(c.len(), 1, "{ev:#?}");
        assert_eq!(c[0]["event"], "config_changed", "{ev:#?}");
        let h = at(&ev, &hook);
        assert_eq!(h.len(), 1, "{ev:#?}");
        assert_eq!(h[0]["event"], "hook_planted", "{ev:#?}");
        // Restore: the owner's config back, the hook and the agent's config moved aside.
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert_eq!(std::fs::read(&cfg).unwrap(), owners_cfg, "{ev:#?}");
        assert!(!hook.exists(), "{ev:#?}");
        assert!(
            !files_holding(&quarantine(&w), fsm.to_str().unwrap()).is_empty(),
            "the agent's config kept in the quarantine: {ev:#?}"
        );
        assert!(
            !files_holding(&quarantine(&w), hook_marker.to_str().unwrap()).is_empty(),
            "the agent's hook kept in the quarantine: {ev:#?}"
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
        run(&w, &g, &inner_wt, &["status", "--short"]);
        run(
            &w,
            &g,
            &inner_wt,
            &["commit", "-q", "--allow-empty", "-m", "y"],
        );
        assert!(!marker.exists() && !hook_marker.exists(), "{}", g.display());
    }
}

/// An agent-built git dir: a copy of the submodule git dir whose config runs `marker`'s
/// program as the fsmonitor and whose hooks folder is its own.
fn agent_git_dir(w: &common::World, g: &Path, marker: &Path) -> PathBuf {
    let root = w.root();
    let evil = root.join("agent.git");
    let out = Command::new("cp")
        .arg("-a")
        .arg(w.git_dir().join("modules/sub"))
        .arg(&evil)
        .output()
        .unwrap();
    assert!(out.status.success());
    let fsm = root.join("fsm.sh");
    program(&fsm, marker);
    let mut c = Command::new(g);
    w.env(&mut c);
    let out = c
        .arg("config")
        .arg("--file")
        .arg(evil.join("config"))
        .args(["core.fsmonitor", fsm.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    evil
}

/// R23-8: the owner's entry's `commondir` pointed at a git dir the agent built. The owner's
/// git in the submodule's linked worktree reads that git dir's config.
#[test]
fn commondir_of_a_submodules_linked_worktree_entry_is_compared_and_restored() {
    for g in common::gits() {
        let w = world(&g);
        let root = w.root();
        let subwt = root.join("subwt");
        let commondir = entry(&w).join("commondir");
        let owners = std::fs::read(&commondir).unwrap();
        w.pin();
        let marker = root.join("fsm-ran");
        let evil = agent_git_dir(&w, &g, &marker);
        std::fs::write(&commondir, format!("{}\n", evil.display())).unwrap();
        // Positive control.
        run(&w, &g, &subwt, &["status", "--short"]);
        assert!(
            marker.exists(),
            "{}: the agent's config was read",
            g.display()
        );
        std::fs::remove_file(&marker).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        let c = at(&ev, &commondir);
        assert_eq!(c.len(), 1, "{ev:#?}");
        assert_eq!(c[0]["event"], "worktree_entry_changed", "{ev:#?}");
        assert_eq!(c[0]["change"], "content_changed", "{ev:#?}");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert_eq!(std::fs::read(&commondir).unwrap(), owners, "{ev:#?}");
        assert!(
            !files_holding(&quarantine(&w), evil.to_str().unwrap()).is_empty(),
            "the agent's commondir kept in the quarantine: {ev:#?}"
        );
        assert!(
            evil.join("config").exists(),
            "nothing of the agent's deleted"
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
        run(&w, &g, &subwt, &["status", "--short"]);
        assert!(!marker.exists(), "{}", g.display());
    }
}

/// New entries made during the turn. The session's own (`git -C sub worktree add` of a
/// worktree in the session folder) is clean; a `git submodule update --init` in it makes the
/// entry's `modules/` and is reported once, as the session's own `worktrees/<id>/modules`
/// is. An entry whose worktree is outside the session folder, or whose `commondir` is not
/// git's `../..` (R23-8 on a new entry), is planted: one event, moved aside whole.
#[test]
fn new_entries_of_a_submodules_linked_worktrees_are_judged_like_the_common_dirs() {
    for g in common::gits() {
        let w = world(&g);
        let root = w.root();
        let sub = w.main().join("sub");
        let subs = w.git_dir().join("modules/sub/worktrees");
        w.pin();
        // The session's own, honest: clean.
        let own = root.join("proj-worktrees/s1/subown");
        git(
            &w,
            &g,
            &sub,
            &["worktree", "add", "-q", "-b", "s", own.to_str().unwrap()],
        );
        git(&w, &g, &own, &["status", "--short"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:#?}", g.display());
        // A submodule initialised in it: the entry's `modules/` reported, once.
        git(&w, &g, &own, &["submodule", "update", "-q", "--init"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        let wt_events: Vec<_> = ev
            .iter()
            .filter(|e| {
                e["path"]
                    .as_str()
                    .is_some_and(|p| p.starts_with(subs.to_str().unwrap()))
            })
            .collect();
        assert_eq!(wt_events.len(), 1, "{ev:#?}");
        assert_eq!(
            wt_events[0]["path"].as_str(),
            Some(subs.join("subown/modules").to_str().unwrap())
        );
        assert_eq!(wt_events[0]["event"], "worktree_entry_changed");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert!(!subs.join("subown/modules").exists(), "{ev:#?}");
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
        // The session's own entry, its commondir then pointed at the agent's git dir.
        let marker = root.join("fsm-ran");
        let evil = agent_git_dir(&w, &g, &marker);
        std::fs::write(
            subs.join("subown/commondir"),
            format!("{}\n", evil.display()),
        )
        .unwrap();
        run(&w, &g, &own, &["status", "--short"]);
        assert!(marker.exists(), "{}: positive control", g.display());
        std::fs::remove_file(&marker).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:#?}");
        let c = at(&ev, &subs.join("subown"));
        assert_eq!(c.len(), 1, "{ev:#?}");
        assert_eq!(c[0]["event"], "worktree_entry_planted", "{ev:#?}");
        assert_eq!(
            ev.iter()
                .filter(|e| e["event"] != "check_completed")
                .count(),
            1,
            "one event: {ev:#?}"
        );
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert!(!subs.join("subown").exists(), "moved aside: {ev:#?}");
        assert!(
            !files_holding(&quarantine(&w), evil.to_str().unwrap()).is_empty(),
            "{ev:#?}"
        );
        run(&w, &g, &own, &["status", "--short"]);
        assert!(!marker.exists(), "{}", g.display());
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
        // An entry whose worktree is outside the session folder: planted.
        let elsewhere = root.join("elsewhere");
        git(
            &w,
            &g,
            &sub,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "e",
                elsewhere.to_str().unwrap(),
            ],
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:#?}");
        let c = at(&ev, &subs.join("elsewhere"));
        assert_eq!(c.len(), 1, "{ev:#?}");
        assert_eq!(c[0]["event"], "worktree_entry_planted", "{ev:#?}");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert!(!subs.join("elsewhere").exists(), "{ev:#?}");
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
        // The session's own entry, pinned: its commondir pointed at the agent's git dir is
        // reported and restored; removed by `git worktree remove`, clean. The owner's entry
        // removed: reported and restored.
        let own2 = root.join("proj-worktrees/s1/own2");
        git(
            &w,
            &g,
            &sub,
            &["worktree", "add", "-q", "-b", "s2", own2.to_str().unwrap()],
        );
        w.pin();
        // Its commondir pointed at the agent's git dir: compared like the owner's.
        let c2 = subs.join("own2/commondir");
        std::fs::write(&c2, format!("{}\n", evil.display())).unwrap();
        run(&w, &g, &own2, &["status", "--short"]);
        assert!(marker.exists(), "{}: positive control", g.display());
        std::fs::remove_file(&marker).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:#?}");
        let c = at(&ev, &c2);
        assert_eq!(c.len(), 1, "{ev:#?}");
        assert_eq!(c[0]["event"], "worktree_entry_changed", "{ev:#?}");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert_eq!(std::fs::read(&c2).unwrap(), b"../..\n", "{ev:#?}");
        git(
            &w,
            &g,
            &sub,
            &["worktree", "remove", own2.to_str().unwrap()],
        );
        assert!(!subs.join("own2").exists());
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:#?}", g.display());
        let owners = entry(&w);
        let commondir = std::fs::read(owners.join("commondir")).unwrap();
        std::fs::remove_dir_all(&owners).unwrap();
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert!(!at(&ev, &owners).is_empty(), "{ev:#?}");
        assert_eq!(std::fs::read(owners.join("commondir")).unwrap(), commondir);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
    }
}

/// A state file pinned by a build that did not record the submodules' linked worktree
/// entries: each entry found is reported once (`change: unrecorded`, exit 1), never moved
/// (it may be the owner's); a new pin records it and the check is clean.
#[test]
fn entries_a_state_file_did_not_record_are_reported_not_moved() {
    for g in common::gits() {
        let w = world(&g);
        w.pin();
        let (mut state, refs) = common::read_state_json(&w.state());
        let entries = state["entries"].as_object_mut().unwrap();
        let before = entries.len();
        entries.retain(|k, _| !k.starts_with("modules/sub/worktrees"));
        assert!(entries.len() < before, "the pin recorded the entry");
        common::write_state_json(&w.state(), &state, &refs);
        for restore in [false, true] {
            let (code, ev) = w.check(restore);
            assert_eq!(code, 1, "{}: {ev:#?}", g.display());
            assert_eq!(ev.len(), 1, "{ev:#?}");
            assert_eq!(ev[0]["path"].as_str(), Some(entry(&w).to_str().unwrap()));
            assert_eq!(ev[0]["change"], "unrecorded", "{ev:#?}");
            assert_eq!(ev[0]["action"], "reported", "{ev:#?}");
            assert!(entry(&w).join("commondir").is_file(), "not moved");
        }
        w.pin();
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
    }
}
