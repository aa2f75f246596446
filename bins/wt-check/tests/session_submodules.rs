//! `git submodule update --init` (and `submodule absorbgitdirs`) in the session's own linked
//! worktree, end to end on every git of the machine. git keeps the submodule's git dir under
//! the linked worktree's admin dir (`<common dir>/worktrees/<id>/modules/<name>/`); the
//! session's entry is the agent's, so that git dir is the agent's own repository: reported
//! as info (`session_submodule_git_dir`) when its audit is clean, an error
//! (`embedded_repository_armed`) when armed — moved aside whole with `--restore` — and a
//! submodule git dir made under another entry or the common dir's `modules/` stays an error.
//! Each armed variant has its positive control: plain git, run by the owner in the session
//! worktree's submodule, runs (or is redirected by) what was planted.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> Output {
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

/// The standard world (`sub` registered in the owner's config; the other session's
/// worktree `other`, the session's own `proj-worktrees/s1/wt1`, entry `wt1`), pinned; then
/// the agent's honest `git submodule update --init` in its worktree with `g`.
fn world_with_update(g: &Path) -> common::World {
    let w = common::world();
    w.pin();
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "clean before the turn: {ev:#?}");
    git(&w, g, &w.own(), &["submodule", "update", "-q", "--init"]);
    assert!(
        sub_git_dir(&w).join("config").is_file(),
        "{}: the submodule's git dir is under the session's worktree entry",
        g.display()
    );
    w
}

fn sub_git_dir(w: &common::World) -> PathBuf {
    w.git_dir().join("worktrees/wt1/modules/sub")
}

fn quarantine(w: &common::World) -> PathBuf {
    w.root().join("state/st.json.quarantine")
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

fn kinds(ev: &[serde_json::Value]) -> Vec<&str> {
    ev.iter().filter_map(|e| e["event"].as_str()).collect()
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

/// The honest flow: exit 0, one info line naming the git dir, nothing else; `--restore`
/// leaves the folder where it is.
#[test]
fn an_honest_submodule_update_in_the_session_worktree_is_info_not_an_error() {
    for g in common::gits() {
        let w = world_with_update(&g);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:#?}", g.display());
        assert_eq!(kinds(&ev), ["session_submodule_git_dir"], "{}", g.display());
        assert_eq!(ev[0]["path"], sub_git_dir(&w).to_str().unwrap());
        assert_eq!(ev[0]["level"], "info");
        let (code, ev) = w.check(true);
        assert_eq!(code, 0, "{}: {ev:#?}", g.display());
        assert!(sub_git_dir(&w).join("HEAD").is_file(), "left in place");
        // The owner's git works in it.
        git(&w, &g, &w.own().join("sub"), &["status", "--short"]);
    }
}

/// `submodule absorbgitdirs` of a repository cloned into the submodule's path: the same.
#[test]
fn absorbing_a_submodules_git_dir_in_the_session_worktree_is_info_not_an_error() {
    for g in common::gits() {
        let w = common::world();
        w.pin();
        let sub = w.own().join("sub");
        let _ = std::fs::remove_dir(&sub);
        let src = w.root().join("subsrc");
        git(
            &w,
            &g,
            &w.root(),
            &["clone", "-q", src.to_str().unwrap(), sub.to_str().unwrap()],
        );
        git(&w, &g, &w.own(), &["submodule", "absorbgitdirs"]);
        assert!(sub_git_dir(&w).join("HEAD").is_file(), "{}", g.display());
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:#?}", g.display());
        assert_eq!(kinds(&ev), ["session_submodule_git_dir"], "{}", g.display());
    }
}

/// The same git dir armed, each way, with its positive control; exit 1 with the event, and
/// `--restore` moves the git dir aside whole (the agent's bytes kept in the quarantine).
#[test]
fn an_armed_submodule_git_dir_in_the_session_entry_is_reported_and_moved_aside() {
    for variant in ["fsmonitor", "hook", "core-worktree", "commondir"] {
        for g in common::gits() {
            let w = world_with_update(&g);
            let root = w.root();
            let gd = sub_git_dir(&w);
            let sub_wt = w.own().join("sub");
            let marker = root.join("ran");
            let prog = root.join("prog.sh");
            program(&prog, &marker);
            let needle: String;
            match variant {
                "fsmonitor" => {
                    git(
                        &w,
                        &g,
                        &sub_wt,
                        &["config", "core.fsmonitor", prog.to_str().unwrap()],
                    );
                    needle = prog.display().to_string();
                    run(&w, &g, &sub_wt, &["status", "--short"]);
                    assert!(marker.exists(), "{}: the fsmonitor ran", g.display());
                }
                "hook" => {
                    std::fs::create_dir_all(gd.join("hooks")).unwrap();
                    program(&gd.join("hooks/pre-commit"), &marker);
                    needle = marker.display().to_string();
                    run(
                        &w,
                        &g,
                        &sub_wt,
                        &["commit", "-q", "--allow-empty", "-m", "x"],
                    );
                    assert!(marker.exists(), "{}: the hook ran", g.display());
                }
                "core-worktree" => {
                    // A work tree outside the session folder: the owner's git in the
                    // submodule works there (here: the other session's worktree).
                    let other = w.other();
                    git(
                        &w,
                        &g,
                        &sub_wt,
                        &["config", "core.worktree", other.to_str().unwrap()],
                    );
                    needle = other.display().to_string();
                    let top = git(&w, &g, &sub_wt, &["rev-parse", "--show-toplevel"]);
                    assert_eq!(top.trim(), other.to_str().unwrap(), "{}", g.display());
                    std::fs::write(&marker, "").unwrap(); // the control held
                }
                "commondir" => {
                    // A git dir the agent built, armed; `commondir` in the submodule's git
                    // dir names it.
                    let evil = root.join("evil.git");
                    git(
                        &w,
                        &g,
                        &root,
                        &["init", "-q", "--bare", evil.to_str().unwrap()],
                    );
                    let evil_cfg = evil.join("config");
                    let mut cfg = std::fs::read_to_string(&evil_cfg).unwrap();
                    cfg.push_str(&format!(
                        "\tbare = false\n\tfsmonitor = {}\n\tworktree = {}\n",
                        prog.display(),
                        sub_wt.display()
                    ));
                    std::fs::write(&evil_cfg, cfg).unwrap();
                    std::fs::write(gd.join("commondir"), format!("{}\n", evil.display())).unwrap();
                    needle = evil.display().to_string();
                    run(&w, &g, &sub_wt, &["status", "--short"]);
                    assert!(
                        marker.exists(),
                        "{}: the fsmonitor of the git dir commondir names ran",
                        g.display()
                    );
                }
                _ => unreachable!(),
            }
            std::fs::remove_file(&marker).unwrap();
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{variant} {}: {ev:#?}", g.display());
            let armed: Vec<_> = ev
                .iter()
                .filter(|e| {
                    e["event"] == "embedded_repository_armed"
                        && e["path"]
                            .as_str()
                            .is_some_and(|p| p.starts_with(gd.to_str().unwrap()))
                })
                .collect();
            assert!(!armed.is_empty(), "{variant} {}: {ev:#?}", g.display());
            assert!(
                !kinds(&ev).contains(&"session_submodule_git_dir"),
                "{variant}: an armed one is not reported clean: {ev:#?}"
            );
            // `--restore`: moved aside whole, nothing lost.
            let (code, ev) = w.check(true);
            assert_eq!(code, 1, "{variant} {}: {ev:#?}", g.display());
            assert!(
                ev.iter()
                    .any(|e| e["event"] == "quarantined" && e["path"] == gd.to_str().unwrap()),
                "{variant}: {ev:#?}"
            );
            assert!(!gd.exists(), "{variant}: moved out of the entry");
            assert!(
                !files_holding(&quarantine(&w), &needle).is_empty(),
                "{variant}: the agent's bytes kept in the quarantine"
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "{variant} {}: clean after: {ev:#?}", g.display());
        }
    }
}

/// A resolution recorded in the agent's submodule git dir is judged as every store's
/// rerere state is (`resolution_recorded`).
#[test]
fn a_resolution_planted_in_the_agents_submodule_git_dir_is_reported() {
    for g in common::gits() {
        let w = world_with_update(&g);
        let rr = sub_git_dir(&w).join("rr-cache/0123456789abcdef0123456789abcdef01234567");
        std::fs::create_dir_all(&rr).unwrap();
        std::fs::write(rr.join("preimage"), "<<<<<<<\na\n=======\nb\n>>>>>>>\n").unwrap();
        std::fs::write(rr.join("postimage"), "evil\n").unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(
            kinds(&ev).contains(&"resolution_recorded"),
            "{}: {ev:#?}",
            g.display()
        );
    }
}

/// The same honest git dir copied under *another* entry (the other session's worktree) or
/// under the common dir's `modules/`: an error, as before.
#[test]
fn a_submodule_git_dir_made_under_another_entry_or_the_common_modules_is_an_error() {
    for place in ["other-entry", "common-modules"] {
        for g in common::gits() {
            let w = world_with_update(&g);
            let dest = match place {
                "other-entry" => w.git_dir().join("worktrees/other/modules/sub"),
                _ => w.git_dir().join("modules/sub2"),
            };
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            let out = Command::new("cp")
                .arg("-a")
                .arg(sub_git_dir(&w))
                .arg(&dest)
                .output()
                .unwrap();
            assert!(out.status.success());
            // Only the copy is left (the session's own git dir and checkout removed).
            std::fs::remove_dir_all(sub_git_dir(&w)).unwrap();
            std::fs::remove_dir_all(w.own().join("sub")).unwrap();
            std::fs::create_dir(w.own().join("sub")).unwrap();
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{place} {}: {ev:#?}", g.display());
            assert!(
                ev.iter().any(|e| {
                    let p = e["path"].as_str().unwrap_or("");
                    e["event"] != "session_submodule_git_dir"
                        && (dest.starts_with(p) || p.starts_with(dest.to_str().unwrap()))
                }),
                "{place} {}: {ev:#?}",
                g.display()
            );
            assert!(
                !kinds(&ev).contains(&"session_submodule_git_dir"),
                "{ev:#?}"
            );
        }
    }
}

/// A submodule git dir under the session's own entry that the baseline holds (initialised
/// before the pin) is compared with the pin as before: a program-running key planted in it
/// is an error (`worktree_entry_changed`, as before), put back with `--restore`, and never the info line. Positive control: plain
/// git in the submodule runs it.
#[test]
fn a_pinned_submodule_git_dir_under_the_session_entry_is_still_compared() {
    for g in common::gits() {
        let w = common::world();
        git(&w, &g, &w.own(), &["submodule", "update", "-q", "--init"]);
        w.pin();
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:#?}", g.display());
        assert!(ev.is_empty(), "pinned: no info line: {ev:#?}");
        let sub_wt = w.own().join("sub");
        let marker = w.root().join("ran");
        let prog = w.root().join("prog.sh");
        program(&prog, &marker);
        git(
            &w,
            &g,
            &sub_wt,
            &["config", "core.fsmonitor", prog.to_str().unwrap()],
        );
        run(&w, &g, &sub_wt, &["status", "--short"]);
        assert!(marker.exists(), "{}: the fsmonitor ran", g.display());
        let cfg = sub_git_dir(&w).join("config");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(
            ev.iter()
                .any(|e| e["event"] == "worktree_entry_changed"
                    && e["path"] == cfg.to_str().unwrap()),
            "{}: {ev:#?}",
            g.display()
        );
        assert!(
            !kinds(&ev).contains(&"session_submodule_git_dir"),
            "{ev:#?}"
        );
        assert!(
            !std::fs::read_to_string(&cfg)
                .unwrap()
                .contains(prog.to_str().unwrap()),
            "restored from the pin"
        );
    }
}
