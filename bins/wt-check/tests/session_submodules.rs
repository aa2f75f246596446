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

// ---------------------------------------------------------------------------------------
// Thirtieth red-team pass: `core.worktree` resolved as git does (relative to the git dir,
// every link followed), at every check, for every submodule git dir (`integrity::subwt`).
// ---------------------------------------------------------------------------------------

/// The agent's commit in the submodule git dir `gd` (via `--git-dir`): a tree holding an
/// executable `pre-commit` that writes `marker`; HEAD set to it (the index too).
fn agents_commit(w: &common::World, g: &Path, gd: &Path, marker: &Path) {
    let gdir = format!("--git-dir={}", gd.display());
    let mut c = Command::new(g);
    w.env(&mut c);
    c.args([gdir.as_str(), "hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("#!/bin/sh\necho ran >> '{}'\n", marker.display()).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let blob = String::from_utf8(out.stdout).unwrap();
    let mut c = Command::new(g);
    w.env(&mut c);
    c.args([gdir.as_str(), "mktree"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("100755 blob {}\tpre-commit\n", blob.trim()).as_bytes())
        .unwrap();
    let tree = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    let commit = git(
        w,
        g,
        &w.root(),
        &[&gdir, "commit-tree", "-m", "x", tree.trim()],
    );
    git(
        w,
        g,
        &w.root(),
        &[&gdir, "update-ref", "HEAD", commit.trim()],
    );
}

fn set_core_worktree(w: &common::World, g: &Path, gd: &Path, value: &str) {
    let cfg = gd.join("config");
    git(
        w,
        g,
        &w.root(),
        &[
            "config",
            "-f",
            cfg.to_str().unwrap(),
            "core.worktree",
            value,
        ],
    );
}

/// The owner's `reset --hard` in the session worktree's submodule (and, for the `tracked`
/// variant, in the session worktree first), then a commit in the main work tree.
fn owner_resets_and_commits(w: &common::World, g: &Path, tracked: bool) {
    if tracked {
        run(w, g, &w.own(), &["reset", "-q", "--hard"]);
    }
    run(w, g, &w.own().join("sub"), &["reset", "-q", "--hard"]);
    run(
        w,
        g,
        &w.main(),
        &["commit", "-q", "--allow-empty", "-m", "owner"],
    );
}

/// Arm the session's new submodule git dir (W1, W2 `present`, W2 `tracked`).
fn arm_session_sub(w: &common::World, g: &Path, variant: &str, marker: &Path) {
    let gd = sub_git_dir(w);
    agents_commit(w, g, &gd, marker);
    let own = w.own();
    let value = match variant {
        // W1: a link in the session work tree to the owner's hooks folder.
        "link" => {
            std::os::unix::fs::symlink(w.git_dir().join("hooks"), own.join(".wt")).unwrap();
            own.join(".wt").display().to_string()
        }
        // W2: `..` after an in-tree link `d/x -> ..`; `tracked`: the link committed and
        // deleted before the check (nothing at the path then).
        "dotdot" | "dotdot-tracked" => {
            std::fs::create_dir_all(own.join("d")).unwrap();
            std::os::unix::fs::symlink("..", own.join("d/x")).unwrap();
            if variant == "dotdot-tracked" {
                git(w, g, &own, &["add", "d/x"]);
                git(w, g, &own, &["commit", "-qm", "link"]);
                std::fs::remove_dir_all(own.join("d")).unwrap();
            }
            format!("{}/d/x/../../../proj/.git/hooks", own.display())
        }
        _ => unreachable!(),
    };
    set_core_worktree(w, g, &gd, &value);
}

/// W1 and W2 (both variants), each on every git: plain git writes the agent's `pre-commit`
/// into the owner's hooks and the owner's next commit runs it (positive control); the check
/// reports the git dir (exit 1, `embedded_repository_armed` naming the value and where it
/// leads) and `--restore` moves it aside, after which the owner's reset cannot write there.
#[test]
fn a_session_submodules_core_worktree_through_a_link_is_refused() {
    for variant in ["link", "dotdot", "dotdot-tracked"] {
        for g in common::gits() {
            // Control.
            let w = world_with_update(&g);
            let marker = w.root().join("ran");
            arm_session_sub(&w, &g, variant, &marker);
            owner_resets_and_commits(&w, &g, variant == "dotdot-tracked");
            assert!(
                w.git_dir().join("hooks/pre-commit").is_file() && marker.exists(),
                "{variant} {}: control: the owner's reset writes the hook and the commit runs it",
                g.display()
            );
            // Checked.
            let w = world_with_update(&g);
            let marker = w.root().join("ran");
            arm_session_sub(&w, &g, variant, &marker);
            let gd = sub_git_dir(&w);
            let cfg = gd.join("config");
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{variant} {}: {ev:#?}", g.display());
            let hit = ev
                .iter()
                .find(|e| {
                    e["event"] == "embedded_repository_armed"
                        && e["path"] == cfg.to_str().unwrap()
                        && e["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("core.worktree"))
                })
                .unwrap_or_else(|| panic!("{variant} {}: {ev:#?}", g.display()));
            let m = hit["message"].as_str().unwrap();
            match variant {
                "link" => assert!(
                    m.contains("symbolic link") && m.contains("leads to") && m.contains("hooks"),
                    "{m}"
                ),
                _ => assert!(m.contains("`..` after a normal component"), "{m}"),
            }
            assert!(
                !kinds(&ev).contains(&"session_submodule_git_dir"),
                "{ev:#?}"
            );
            let (code, ev) = w.check(true);
            assert_eq!(code, 1, "{variant} {}: {ev:#?}", g.display());
            assert!(
                ev.iter()
                    .any(|e| e["event"] == "quarantined" && e["path"] == gd.to_str().unwrap()),
                "{variant}: {ev:#?}"
            );
            owner_resets_and_commits(&w, &g, variant == "dotdot-tracked");
            assert!(
                !w.git_dir().join("hooks/pre-commit").exists() && !marker.exists(),
                "{variant} {}: nothing written into the hooks after --restore",
                g.display()
            );
        }
    }
}

/// W3: the session's submodule git dir pinned with `core.worktree` naming a link that leads
/// to the submodule's honest checkout (a pin taken by an earlier build, or before any
/// check); the config bytes never change again. Every check refuses the link (report only:
/// the link is a file of the work tree, the agent's: never deleted); after the agent
/// retargets it to the owner's hooks the check still reports, and the control fires.
#[test]
fn a_pinned_session_submodules_core_worktree_through_a_link_is_reported_at_every_check() {
    for g in common::gits() {
        for checked in [false, true] {
            let w = common::world();
            git(&w, &g, &w.own(), &["submodule", "update", "-q", "--init"]);
            let gd = sub_git_dir(&w);
            let own = w.own();
            std::os::unix::fs::symlink("sub", own.join(".wt")).unwrap();
            set_core_worktree(&w, &g, &gd, own.join(".wt").to_str().unwrap());
            // The honest use works through the link.
            git(&w, &g, &own.join("sub"), &["status", "--short"]);
            w.pin();
            let cfg = gd.join("config");
            let reported = |ev: &[serde_json::Value]| {
                ev.iter().any(|e| {
                    e["event"] == "embedded_repository_armed"
                        && e["path"] == cfg.to_str().unwrap()
                        && e["action"] == "reported"
                        && e["message"].as_str().is_some_and(|m| {
                            m.contains("symbolic link") && m.contains("the owner should")
                        })
                })
            };
            if checked {
                let (code, ev) = w.check(false);
                assert_eq!(
                    code,
                    1,
                    "{}: the link is refused today: {ev:#?}",
                    g.display()
                );
                assert!(reported(&ev), "{ev:#?}");
            }
            // Turn 2: the link retargeted, the submodule's HEAD moved; the config unchanged.
            let marker = w.root().join("ran");
            agents_commit(&w, &g, &gd, &marker);
            std::fs::remove_file(own.join(".wt")).unwrap();
            std::os::unix::fs::symlink("../../../proj/.git/hooks", own.join(".wt")).unwrap();
            if checked {
                let (code, ev) = w.check(true);
                assert_eq!(code, 1, "{}: {ev:#?}", g.display());
                assert!(reported(&ev), "{ev:#?}");
                assert!(
                    std::fs::symlink_metadata(own.join(".wt")).is_ok() && gd.join("HEAD").is_file(),
                    "report only: neither the link nor the git dir is touched"
                );
            } else {
                owner_resets_and_commits(&w, &g, false);
                assert!(
                    w.git_dir().join("hooks/pre-commit").is_file() && marker.exists(),
                    "{}: control: the owner's reset writes the hook and the commit runs it",
                    g.display()
                );
            }
        }
    }
}

/// The owner's submodule (`modules/sub`, `core.worktree = ../../../sub`): the agent replaces
/// the work-tree folder `sub` by a link to the owner's hooks and moves the submodule's HEAD.
/// Control: the owner's `git --git-dir=.git/modules/sub reset --hard` writes the hook, the
/// next commit runs it. Checked: reported (exit 1), the link left in place.
#[test]
fn the_owners_submodule_folder_replaced_by_a_link_is_reported() {
    for g in common::gits() {
        for checked in [false, true] {
            let w = common::world();
            w.pin();
            let gd = w.git_dir().join("modules/sub");
            let marker = w.root().join("ran");
            agents_commit(&w, &g, &gd, &marker);
            let sub = w.main().join("sub");
            std::fs::remove_dir_all(&sub).unwrap();
            std::os::unix::fs::symlink(w.git_dir().join("hooks"), &sub).unwrap();
            if checked {
                let cfg = gd.join("config");
                let (code, ev) = w.check(true);
                assert_eq!(code, 1, "{}: {ev:#?}", g.display());
                assert!(
                    ev.iter().any(|e| e["event"] == "embedded_repository_armed"
                        && e["path"] == cfg.to_str().unwrap()
                        && e["action"] == "reported"
                        && e["message"].as_str().is_some_and(
                            |m| m.contains("symbolic link") && m.contains("owner's submodule")
                        )),
                    "{}: {ev:#?}",
                    g.display()
                );
                assert!(std::fs::symlink_metadata(&sub).is_ok_and(|m| m.is_symlink()));
            } else {
                let gdir = format!("--git-dir={}", gd.display());
                run(&w, &g, &w.root(), &[&gdir, "reset", "-q", "--hard"]);
                run(
                    &w,
                    &g,
                    &w.main(),
                    &["commit", "-q", "--allow-empty", "-m", "o"],
                );
                assert!(
                    w.git_dir().join("hooks/pre-commit").is_file() && marker.exists(),
                    "{}: control",
                    g.display()
                );
            }
        }
    }
}

/// Honest layouts stay clean at every check: the session's submodule folder removed (a
/// branch switch; missing is not a link), and the owner's submodule folder missing.
#[test]
fn missing_submodule_folders_are_not_links() {
    for g in common::gits() {
        let w = common::world();
        git(&w, &g, &w.own(), &["submodule", "update", "-q", "--init"]);
        w.pin();
        std::fs::remove_dir_all(w.own().join("sub")).unwrap();
        std::fs::remove_dir_all(w.main().join("sub")).unwrap();
        let (code, ev) = w.check(false);
        assert!(
            !ev.iter().any(|e| e["message"]
                .as_str()
                .is_some_and(|m| m.contains("core.worktree"))),
            "{}: {ev:#?}",
            g.display()
        );
        let _ = code; // a removed folder may be reported by other checks (index stat)
    }
}
