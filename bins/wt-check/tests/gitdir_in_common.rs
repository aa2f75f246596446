//! A git dir the agent builds *inside* the common dir, where no baseline git dir is: under a
//! submodule git dir's `logs/` (also `refs/`, `objects/`, `rebase-merge/`: folders the agent
//! may write), reached by a `.git` file in the work tree (twenty-seventh red-team pass, W4,
//! W5). The check took every git dir under `modules/` for a baselined submodule git dir and
//! audited none of it: the owner's `git status` ran the agent's `core.fsmonitor`, and the
//! owner's `git merge` in the submodule replayed a planted resolution, while `check` exited 0.
//! Now only the baseline's own git dirs (`stores::baseline_git_dirs`) are taken as compared;
//! any other is audited and rerere-judged like a repository nested in the work tree.
//! Positive control on both gits: plain git runs the program / replays the resolution.

mod common;

use std::path::Path;
use std::process::Command;

fn git(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(g);
    w.env(&mut c);
    c.arg("-C").arg(dir).args(args).output().unwrap()
}

fn ok(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> String {
    let out = git(w, g, dir, args);
    assert!(out.status.success(), "{} {args:?}: {out:?}", g.display());
    String::from_utf8(out.stdout).unwrap()
}

/// A copy of the submodule's git dir at `modules/sub/<rel>` (no `core.worktree`), and the
/// submodule checkout's `.git` file pointed at it.
fn plant_copy(w: &common::World, g: &Path, rel: &str) -> std::path::PathBuf {
    let m = w.main();
    let src = w.git_dir().join("modules/sub");
    let t = src.join(rel);
    std::fs::create_dir_all(&t).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let n = e.file_name();
        if n == "logs" || n == "refs" && rel.starts_with("refs") {
            continue;
        }
        assert!(Command::new("cp")
            .arg("-a")
            .arg(e.path())
            .arg(t.join(&n))
            .status()
            .unwrap()
            .success());
    }
    std::fs::create_dir_all(t.join("refs/heads")).unwrap();
    let head = ok(w, g, &m.join("sub"), &["rev-parse", "HEAD"]);
    std::fs::write(t.join("HEAD"), &head).unwrap();
    let _ = git(
        w,
        g,
        &m,
        &[
            "config",
            "-f",
            t.join("config").to_str().unwrap(),
            "--unset",
            "core.worktree",
        ],
    );
    std::fs::write(
        m.join("sub/.git"),
        format!("gitdir: ../.git/modules/sub/{rel}\n"),
    )
    .unwrap();
    t
}

/// W4: `core.fsmonitor` in the config of a git dir built under `modules/sub/logs/` (and
/// `refs/`), the existing submodule's `.git` file pointed at it: the owner's `git status`
/// in the superproject runs the program.
#[test]
fn a_git_dir_built_under_a_submodule_git_dirs_logs_is_audited() {
    for g in common::gits() {
        for rel in ["logs/gd", "refs/gd"] {
            for checked in [false, true] {
                let w = common::world();
                let m = w.main();
                if checked {
                    w.pin();
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let t = plant_copy(&w, &g, rel);
                let marker = w.root().join("PWNED");
                let prog = w.root().join("prog.sh");
                std::fs::write(
                    &prog,
                    format!("#!/bin/sh\necho ran >> '{}'\n", marker.display()),
                )
                .unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
                ok(
                    &w,
                    &g,
                    &m,
                    &[
                        "config",
                        "-f",
                        t.join("config").to_str().unwrap(),
                        "core.fsmonitor",
                        prog.to_str().unwrap(),
                    ],
                );
                if checked {
                    let (code, ev) = w.check(false);
                    assert_eq!(code, 1, "{} {rel}: {ev:#?}", g.display());
                    let cfg = t.join("config");
                    assert!(
                        ev.iter().any(|e| e["event"] == "embedded_repository_armed"
                            && e["level"] == "error"
                            && e["path"] == cfg.to_str().unwrap()),
                        "{} {rel}: {ev:#?}",
                        g.display()
                    );
                } else {
                    let _ = git(&w, &g, &m, &["status", "--porcelain"]);
                    assert!(
                        marker.exists(),
                        "{} {rel}: control: git status did not run the program",
                        g.display()
                    );
                }
            }
        }
    }
}

/// W5: the same copy holding a planted `rr-cache/<id>` (preimage and the agent's postimage):
/// the owner's `git merge` in the submodule replays the agent's text.
#[test]
fn a_resolution_in_a_git_dir_built_under_modules_is_reported() {
    const AGENT: &str = "l1\nAGENT-CHOSEN RESOLUTION\nl3\n";
    for g in common::gits() {
        for checked in [false, true] {
            let w = common::world();
            let m = w.main();
            let sub = m.join("sub");
            // A conflict the owner will merge in the submodule: main and side change f.
            ok(&w, &g, &sub, &["config", "user.email", "o@x"]);
            ok(&w, &g, &sub, &["config", "user.name", "o"]);
            ok(&w, &g, &sub, &["config", "rerere.enabled", "true"]);
            std::fs::write(sub.join("f"), "l1\nbase\nl3\n").unwrap();
            ok(&w, &g, &sub, &["commit", "-qam", "base"]);
            ok(&w, &g, &sub, &["checkout", "-qb", "side"]);
            std::fs::write(sub.join("f"), "l1\nside\nl3\n").unwrap();
            ok(&w, &g, &sub, &["commit", "-qam", "side"]);
            ok(&w, &g, &sub, &["checkout", "-q", "-"]);
            std::fs::write(sub.join("f"), "l1\nmain\nl3\n").unwrap();
            ok(&w, &g, &sub, &["commit", "-qam", "main"]);
            // The conflict's id and preimage, from a scratch clone (the agent's own).
            let scratch = w.root().join("scratch");
            ok(
                &w,
                &g,
                &w.root(),
                &["clone", "-q", sub.to_str().unwrap(), "scratch"],
            );
            ok(&w, &g, &scratch, &["branch", "-q", "side", "origin/side"]);
            let _ = git(
                &w,
                &g,
                &scratch,
                &["-c", "rerere.enabled=true", "merge", "side"],
            );
            let rr = std::fs::read(scratch.join(".git/MERGE_RR")).unwrap();
            let id = String::from_utf8_lossy(&rr[..40]).into_owned();
            let pre = std::fs::read(scratch.join(format!(".git/rr-cache/{id}/preimage"))).unwrap();
            if checked {
                w.pin();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let t = plant_copy(&w, &g, "logs/gd");
            let entry = t.join("rr-cache").join(&id);
            std::fs::create_dir_all(&entry).unwrap();
            std::fs::write(entry.join("preimage"), pre).unwrap();
            std::fs::write(entry.join("postimage"), AGENT).unwrap();
            if checked {
                let (code, ev) = w.check(true);
                assert_eq!(code, 1, "{}: {ev:#?}", g.display());
                assert!(
                    ev.iter().any(|e| e["event"] == "resolution_recorded"
                        && e["path"]
                            .as_str()
                            .is_some_and(|p| p.starts_with(t.to_str().unwrap()))),
                    "{}: {ev:#?}",
                    g.display()
                );
            }
            let _ = git(&w, &g, &sub, &["merge", "side"]);
            let f = std::fs::read_to_string(sub.join("f")).unwrap();
            if checked {
                assert!(f.contains("<<<<<<<"), "{}: {f}", g.display());
            } else {
                assert_eq!(f, AGENT, "{}: control did not fire", g.display());
            }
        }
    }
}
