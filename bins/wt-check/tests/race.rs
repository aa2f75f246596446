//! A folder swapped for a link while `check --restore` runs never receives a write: a thread
//! keeps replacing `hooks/` and `worktrees/other/` with links to a trap folder outside the
//! repository while wt-check restores files in both. After every run the trap is empty.
//! Iterations: `WT_RACE_ITERATIONS` (default 100).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn swap_loop(dir: &Path, trap: &Path, stop: &AtomicBool) {
    let real = dir.with_extension("real");
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if std::fs::rename(dir, &real).is_ok() {
            let _ = std::os::unix::fs::symlink(trap, dir);
            std::thread::yield_now();
            // Put the folder back (wt-check may have moved the link aside and made a new one).
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                let _ = std::fs::remove_file(dir);
                let _ = std::fs::rename(&real, dir);
            } else {
                let _ = std::fs::remove_dir_all(&real);
            }
        }
        n += 1;
        if n & 63 == 0 {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
    // Leave a folder in place.
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        let _ = std::fs::remove_file(dir);
    }
    if std::fs::symlink_metadata(&real).is_ok() {
        if std::fs::symlink_metadata(dir).is_ok() {
            let _ = std::fs::remove_dir_all(&real);
        } else {
            let _ = std::fs::rename(&real, dir);
        }
    }
}

fn trap_is_empty(trap: &Path) -> bool {
    std::fs::read_dir(trap).unwrap().next().is_none()
}

#[test]
fn swapped_folder_never_gets_a_write_outside_the_git_folder() {
    let iterations: usize = std::env::var("WT_RACE_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let w = common::World {
        tmp: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join(".gitconfig"), "").unwrap();
    std::fs::create_dir_all(w.root().join("state")).unwrap();
    w.git(&w.root(), &["init", "-q", "proj"]);
    std::fs::write(w.main().join("f"), "x\n").unwrap();
    w.git(&w.main(), &["add", "f"]);
    w.git(&w.main(), &["commit", "-q", "-m", "i"]);
    w.git(
        &w.main(),
        &["worktree", "add", "-q", w.other().to_str().unwrap()],
    );
    let trap = w.root().join("trap");
    std::fs::create_dir(&trap).unwrap();
    w.pin();
    let hooks = w.git_dir().join("hooks");
    let entry = w.git_dir().join("worktrees/other");
    let mut saw_link_refused = 0;
    for i in 0..iterations {
        // The agent's turn: a planted hook, a changed sample, a rewritten gitdir backlink.
        let h = hooks.join("pre-commit");
        std::fs::write(&h, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(hooks.join("update.sample"), "changed\n").unwrap();
        std::fs::write(entry.join("gitdir"), "/elsewhere/.git\n").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let attackers: Vec<_> = [hooks.clone(), entry.clone()]
            .into_iter()
            .map(|d| {
                let (stop, trap) = (stop.clone(), trap.clone());
                std::thread::spawn(move || swap_loop(&d, &trap, &stop))
            })
            .collect();
        let (_code, events) = w.check(true);
        stop.store(true, Ordering::Relaxed);
        for a in attackers {
            a.join().unwrap();
        }
        saw_link_refused += events
            .iter()
            .filter(|e| e["event"] == "link_refused")
            .count();
        assert!(
            trap_is_empty(&trap),
            "iteration {i}: wt-check wrote into the trap: {:?}",
            std::fs::read_dir(&trap).unwrap().collect::<Vec<_>>()
        );
        // Settle: a restore without the attacker puts everything back.
        let _ = w.check(true);
        let (code, ev) = w.check(false);
        assert_eq!(
            code, 0,
            "iteration {i}: not clean after a quiet restore: {ev:?}"
        );
        assert!(trap_is_empty(&trap));
    }
    eprintln!("{iterations} iterations, {saw_link_refused} link_refused events");
    // Positive control: a plain path write through the swapped folder does land in the trap,
    // so an empty trap above means wt-check never wrote through a link.
    std::fs::rename(&hooks, hooks.with_extension("real")).unwrap();
    std::os::unix::fs::symlink(&trap, &hooks).unwrap();
    std::fs::write(hooks.join("pre-commit"), "naive\n").unwrap();
    assert!(
        !trap_is_empty(&trap),
        "the trap must catch a write that follows the link"
    );
}
