//! An operation in progress (`rebase-merge`, `rebase-apply`, `sequencer`) is judged in every
//! git dir of the snapshot — the common dir and each linked worktree's entry — also now that
//! a git dir with none of the three is passed over after one "no such name" per folder:
//! anything else there (a folder, a link, a file) is judged as before.

mod common;

fn armed(ev: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    ev.iter()
        .filter(|e| e["event"] == "sequencer_state_armed")
        .collect()
}

#[test]
fn an_operation_in_a_linked_worktree_entry_is_judged() {
    let w = common::world();
    w.pin();
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
    for entry in ["other", "wt1"] {
        let d = w
            .git_dir()
            .join("worktrees")
            .join(entry)
            .join("rebase-merge");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("head-name"), "refs/heads/o\n").unwrap();
        std::fs::write(d.join("interactive"), "").unwrap();
        std::fs::write(d.join("git-rebase-todo"), "exec echo fired\n").unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{entry}: {ev:?}");
        let a = armed(&ev);
        assert_eq!(a.len(), 1, "{entry}: {ev:?}");
        assert!(
            a[0]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("worktrees/{entry}/rebase-merge")),
            "{entry}: {ev:?}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
    // Positive control: gone again, clean again.
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
}

#[test]
fn an_operation_folder_that_is_a_link_is_judged_and_a_file_is_not() {
    let w = common::world();
    w.pin();
    let elsewhere = w.outside().join("ops");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // A link in a linked worktree's entry and in the common dir: reported, not followed.
    for git_dir in [w.git_dir().join("worktrees/other"), w.git_dir()] {
        let l = git_dir.join("rebase-apply");
        std::os::unix::fs::symlink(&elsewhere, &l).unwrap();
        let (code, ev) = w.check(false);
        assert_ne!(code, 0, "{}: {ev:?}", l.display());
        // (Reported as a link refused, with the operation's reason.)
        assert!(
            ev.iter().any(|e| e["path"] == l.to_str().unwrap()
                && e["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("`rebase-apply` is a symbolic link")),
            "{}: {ev:?}",
            l.display()
        );
        std::fs::remove_file(&l).unwrap();
    }
    // A file where git expects the folder: git does not read through it, nor does check.
    std::fs::write(w.git_dir().join("worktrees/wt1/sequencer"), "x\n").unwrap();
    let (_, ev) = w.check(false);
    assert!(armed(&ev).is_empty(), "{ev:?}");
}
