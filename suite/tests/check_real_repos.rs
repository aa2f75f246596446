//! Honest clones of the real repositories in `../shared/realrepos/*.bundle` check clean:
//! pinned with a session, a session worktree added, a commit made there, the nested-repository
//! walk over the main work tree and the session folder finds nothing armed.
//! Without the folder the test is ignored with the reason (`build.rs`); with `CI=true` it runs
//! and fails on the missing folder.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn bundles() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/realrepos");
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the real repositories must be tested)",
            dir.display()
        )
    });
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "bundle"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{}: no bundles", dir.display());
    out
}

fn run(cmd: &mut Command, home: &Path) -> std::process::Output {
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn honest_clones_of_real_repositories_check_clean() {
    for bundle in bundles() {
        for git in common::gits() {
            let t = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(t.path()).unwrap();
            let home = root.join("home");
            std::fs::create_dir_all(&home).unwrap();
            std::fs::write(home.join(".gitconfig"), "").unwrap();
            let repo = root.join("r");
            let g = |dir: &Path, args: &[&str]| {
                let out = run(Command::new(&git).current_dir(dir).args(args), &home);
                assert!(
                    out.status.success(),
                    "{} {args:?}: {}",
                    git.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            g(&root, &["clone", "-q", bundle.to_str().unwrap(), "r"]);
            let st = root.join("st.json");
            let wc = |args: &[&str]| run(Command::new(common::bin("wt-check")).args(args), &home);
            let out = wc(&[
                "pin",
                "--state",
                st.to_str().unwrap(),
                "--session",
                "s1",
                repo.to_str().unwrap(),
            ]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // The agent's ordinary turn: a session worktree, a commit in it.
            let w = root.join("r-worktrees/s1/w");
            g(
                &repo,
                &["worktree", "add", "-q", "-b", "agent", w.to_str().unwrap()],
            );
            std::fs::write(w.join("agent-note.txt"), "x\n").unwrap();
            g(&w, &["add", "agent-note.txt"]);
            g(&w, &["commit", "-qm", "note"]);
            let started = std::time::Instant::now();
            let out = wc(&[
                "check",
                "--state",
                st.to_str().unwrap(),
                repo.to_str().unwrap(),
            ]);
            let took = started.elapsed();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                (out.status.code(), stdout.trim()),
                (Some(0), ""),
                "{} on {}: {}",
                bundle.display(),
                git.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!(
                "{} on {}: check clean in {took:?}",
                bundle.display(),
                git.display()
            );
        }
    }
}
