//! Repositories planted in the folders a session could write besides the work trees
//! (R5-9, R5-10): the session folder itself made a bare-style git dir, a policy
//! `writable_roots` folder made one (`core.worktree` naming itself, `core.fsmonitor`), and a
//! plain `build/.git` inside it. Positive control on every git: the owner's plain
//! `git status` started there runs the planted `core.fsmonitor`. Then `wt-check check`
//! (`--policy` for the writable roots) reports each as `embedded_repository_armed`.

mod common;

use std::path::Path;
use std::process::Command;

fn plant_bare_top(dir: &Path, marker: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs")).unwrap();
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        dir.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = {}\n\tfsmonitor = touch {}; false\n",
            dir.display(),
            marker.display()
        ),
    )
    .unwrap();
}

fn plant_dot_git(w: &common::World, dir: &Path, marker: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    w.git(dir, &["init", "-q"]);
    let cfg = dir.join(".git/config");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[core]\n\tfsmonitor = touch {}; false\n",
        marker.display()
    ));
    std::fs::write(cfg, text).unwrap();
}

/// Does the owner's plain `git status` in `dir` run the planted program?
fn fires(w: &common::World, git: &Path, dir: &Path, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    let mut c = Command::new(git);
    w.env(&mut c);
    let _ = c.arg("-C").arg(dir).arg("status").output().unwrap();
    let fired = marker.exists();
    let _ = std::fs::remove_file(marker);
    fired
}

fn check(w: &common::World, policy: Option<&Path>) -> (i32, Vec<serde_json::Value>, String) {
    let st = w.state();
    let mut a = vec!["check", "--no-scan", "--state", st.to_str().unwrap()];
    if let Some(p) = policy {
        a.push("--policy");
        a.push(p.to_str().unwrap());
    }
    let m = w.main();
    a.push(m.to_str().unwrap());
    let out = w.wt_check(&a);
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        out.status.code().unwrap_or(-1),
        events,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn armed_under(ev: &[serde_json::Value], dir: &Path) -> bool {
    ev.iter().any(|e| {
        e["event"] == "embedded_repository_armed"
            && e["path"]
                .as_str()
                .is_some_and(|p| Path::new(p).starts_with(dir))
            && e["message"].as_str().unwrap().contains("core.fsmonitor")
    })
}

#[test]
fn repositories_in_policy_writable_roots_are_reported() {
    for git in common::gits() {
        let w = common::world();
        let scratch = w.root().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let cfg = w.root().join("cfg");
        std::fs::create_dir_all(&cfg).unwrap();
        let policy = cfg.join("s1.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"{}\"\nwritable_roots = [\"{}\"]\n",
                w.main().display(),
                scratch.display()
            ),
        )
        .unwrap();
        w.pin();
        let marker = w.root().join("pwned");
        plant_bare_top(&scratch, &marker);
        let build = scratch.join("build");
        plant_dot_git(&w, &build, &marker);
        // Positive control: both fire under the owner's plain git.
        assert!(
            fires(&w, &git, &scratch, &marker),
            "{}: bare top",
            git.display()
        );
        assert!(
            fires(&w, &git, &build, &marker),
            "{}: build/.git",
            git.display()
        );
        // Without the policy check does not know the folder (documented): exit 0.
        let (code, _, _) = check(&w, None);
        assert_eq!(code, 0);
        let (code, ev, err) = check(&w, Some(&policy));
        assert_eq!(code, 1, "{}: {ev:#?} {err}", git.display());
        assert!(armed_under(&ev, &scratch.join("config")), "{ev:#?}");
        assert!(armed_under(&ev, &build), "{ev:#?}");
    }
}

#[test]
fn the_session_folder_made_a_bare_style_git_dir_is_reported() {
    for git in common::gits() {
        let w = common::world();
        w.pin();
        let session = w.root().join("proj-worktrees/s1");
        let marker = w.root().join("pwned");
        plant_bare_top(&session, &marker);
        assert!(fires(&w, &git, &session, &marker), "{}", git.display());
        let (code, ev, err) = check(&w, None);
        assert_eq!(code, 1, "{}: {ev:#?} {err}", git.display());
        assert!(armed_under(&ev, &session.join("config")), "{ev:#?}");
    }
}

#[test]
fn an_unreadable_policy_is_one_line_and_exit_2() {
    let w = common::world();
    w.pin();
    let missing = w.root().join("cfg/none.toml");
    let (code, _, err) = check(&w, Some(&missing));
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("none.toml"), "{err}");
}

/// R5-4: the session's own worktree entry's `commondir` pointed at a common dir the agent
/// made in its worktree (objects/, refs/, a config with `core.fsmonitor`, no HEAD). Plain git
/// in that worktree runs it; `check` names the redirect and the armed config, `--restore`
/// moves the entry aside, after which git there runs nothing.
#[test]
fn a_session_entry_commondir_redirect_is_reported_and_set_aside() {
    for git in common::gits() {
        let w = common::world();
        w.pin();
        let own = w.own();
        let cd = own.join(".cache/cd");
        std::fs::create_dir_all(cd.join("objects")).unwrap();
        std::fs::create_dir_all(cd.join("refs")).unwrap();
        let marker = w.root().join("pwned");
        std::fs::write(
            cd.join("config"),
            format!(
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = touch {}; false\n",
                marker.display()
            ),
        )
        .unwrap();
        let entry = w.git_dir().join("worktrees/wt1");
        std::fs::write(entry.join("commondir"), format!("{}\n", cd.display())).unwrap();
        assert!(fires(&w, &git, &own, &marker), "{}", git.display());
        let st = w.state();
        let m = w.main();
        let out = w.wt_check(&[
            "check",
            "--no-scan",
            "--restore",
            "--state",
            st.to_str().unwrap(),
            m.to_str().unwrap(),
        ]);
        let ev: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(out.status.code(), Some(1), "{ev:#?}");
        assert!(
            ev.iter().any(|e| e["event"] == "worktree_entry_changed"
                && e["message"].as_str().unwrap().contains("commondir")),
            "{ev:#?}"
        );
        assert!(armed_under(&ev, &cd), "{ev:#?}");
        assert!(
            !fires(&w, &git, &own, &marker),
            "{}: still fires",
            git.display()
        );
    }
}
