//! The object ids a worktree's own state names: what `git worktree remove` deletes.
//!
//! `worktree remove` (builtin/worktree.c `delete_git_dir`) deletes the whole admin dir
//! `<common>/worktrees/<id>/`, and with it every per-worktree ref (`refs/worktree/*`,
//! `refs/bisect/*`, `refs/rewritten/*`: refs/files-backend `is_per_worktree_ref`), the HEAD
//! reflog `logs/HEAD`, the pseudorefs (`ORIG_HEAD`, `MERGE_HEAD`, `CHERRY_PICK_HEAD`,
//! `REVERT_HEAD`, `REBASE_HEAD`, `AUTO_MERGE`, `MERGE_AUTOSTASH`, `BISECT_*`) and the
//! operation state (`rebase-merge/`, `rebase-apply/`, `sequencer/`, whose `autostash`,
//! `orig-head`, `onto`, `done` and todo lists name commits). An object only those name is
//! unreachable afterwards and the next gc prunes it.
//!
//! [`read`] collects every full object id (40 or 64 hex digits) written in any of those
//! files, file by file. In a linked worktree's admin dir every entry must be one git writes
//! there ([`catalogue::WORKTREE_PRIVATE_ENTRIES`], [`catalogue::WORKTREE_PRIVATE_SUBPATHS`]):
//! anything else, a link, or a file it cannot read is an error (the caller answers "cannot
//! tell"), since it may hold work in a shape this reader does not know. For the main
//! worktree the same per-worktree state is read at the top of the git dir
//! ([`catalogue::MAIN_WORKTREE_STATE`]).

use crate::catalogue;
use crate::fsx::{EntryKind, FsError, Root};
use std::path::Path;

/// Largest state file read (a HEAD reflog of a long-lived worktree is well below this).
const MAX_FILE: u64 = 64 << 20;

/// What the worktree's own state holds.
#[derive(Debug, Default)]
pub struct State {
    /// (file relative to the git dir, full object ids written in it)
    pub ids: Vec<(String, Vec<String>)>,
    /// `git am` stopped: its patches (`rebase-apply/0001`...) exist nowhere else.
    pub am_in_progress: bool,
}

/// Why the state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Fs(#[from] FsError),
    #[error("{dir}: {what}: not an entry git keeps in a worktree admin dir")]
    Unknown { dir: String, what: String },
    #[error("{dir}: {what}: a {kind} (git keeps plain files here)")]
    NotFile {
        dir: String,
        what: String,
        kind: &'static str,
    },
}

/// Reads the state of the worktree whose git dir is `git_dir`; `linked` says whether it is a
/// linked worktree's admin dir (read whole) or the main worktree's git dir (only its
/// per-worktree entries).
pub fn read(git_dir: &Path, linked: bool) -> Result<State, AdminError> {
    let root = Root::open(git_dir)?;
    let mut st = State::default();
    let dir = git_dir.display().to_string();
    if linked {
        for (name, kind) in root.list_kinds("")? {
            let n = name.to_string_lossy().into_owned();
            let stem = n.strip_suffix(".lock").unwrap_or(&n);
            if !catalogue::WORKTREE_PRIVATE_ENTRIES.contains(&stem) {
                return Err(AdminError::Unknown { dir, what: n });
            }
            // A submodule's git dir (its own repository) and the binary index (staged work
            // is compared by the caller) are not read for ids.
            if n == "modules" || n == "index" || n == "index.lock" {
                continue;
            }
            collect(&root, &n, kind, &dir, &mut st)?;
        }
    } else {
        for rel in catalogue::MAIN_WORKTREE_STATE {
            if let Some(stat) = root.stat(rel)? {
                let kind = if stat.is_dir() {
                    EntryKind::Dir
                } else if stat.is_file() {
                    EntryKind::File
                } else {
                    EntryKind::Symlink
                };
                collect(&root, rel, kind, &dir, &mut st)?;
            }
        }
    }
    st.am_in_progress = root.stat("rebase-apply/applying")?.is_some();
    Ok(st)
}

/// Whether `rel` (below `refs/` or `logs/` of an admin dir) is a per-worktree path.
fn private_subpath(rel: &str) -> bool {
    catalogue::WORKTREE_PRIVATE_SUBPATHS.iter().any(|s| {
        rel == *s
            || (rel.starts_with(s)
                && rel.as_bytes().get(s.len()) == Some(&b'/')
                && *s != "logs/refs")
    })
}

fn collect(
    root: &Root,
    rel: &str,
    kind: EntryKind,
    dir: &str,
    st: &mut State,
) -> Result<(), AdminError> {
    let top = rel.split('/').next().unwrap_or(rel);
    if matches!(top, "refs" | "logs" | "info") && rel != top && !private_subpath(rel) {
        return Err(AdminError::Unknown {
            dir: dir.to_owned(),
            what: rel.to_owned(),
        });
    }
    match kind {
        EntryKind::Dir => {
            for (name, k) in root.list_kinds(rel)? {
                let child = format!("{rel}/{}", name.to_string_lossy());
                collect(root, &child, k, dir, st)?;
            }
        }
        EntryKind::File => {
            let data = root.read(rel, MAX_FILE)?;
            let mut ids = object_ids(&data);
            let leaf = rel.rsplit('/').next().unwrap_or(rel);
            if TODO_LISTS.iter().any(|t| leaf.starts_with(t)) {
                for id in todo_ids(&data) {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            if !ids.is_empty() {
                st.ids.push((rel.to_owned(), ids));
            }
        }
        other => {
            return Err(AdminError::NotFile {
                dir: dir.to_owned(),
                what: rel.to_owned(),
                kind: other.name(),
            })
        }
    }
    Ok(())
}

/// The todo lists of the sequencer (`sequencer/todo`) and of `rebase -i`
/// (`rebase-merge/git-rebase-todo`, `.backup`, `done`): git writes their commits
/// abbreviated, and the caller resolves them.
const TODO_LISTS: &[&str] = &["todo", "git-rebase-todo", "done"];

/// The commit named on each line of a todo list (`pick 88574e5 subject`, `fixup -C abc1234`,
/// `merge -C abc1234 label`): every word of 4 to 64 lowercase hex digits among its first
/// three, abbreviated or not.
pub fn todo_ids(data: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(data).lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        for w in line.split_whitespace().skip(1).take(3) {
            if (4..=64).contains(&w.len())
                && w.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                && !out.iter().any(|o| o == w)
            {
                out.push(w.to_owned());
            }
        }
    }
    out
}

/// Every full object id (40 or 64 lowercase hex digits, not part of a longer word) in
/// `data`, first occurrence order, without repeats.
pub fn object_ids(data: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if !data[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < data.len() && data[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let word = &data[start..i];
        if (word.len() == 40 || word.len() == 64)
            && word.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && word.iter().any(|&b| b != b'0')
        {
            let id = String::from_utf8_lossy(word).into_owned();
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_a_reflog_and_a_todo_list() {
        let a = "a".repeat(40);
        let b = "0123456789abcdef0123456789abcdef01234567";
        let text = format!(
            "{} {a} A <a@b> 1 +0000\tcommit: x\npick {b} msg\nxx{a}\n",
            "0".repeat(40)
        );
        assert_eq!(object_ids(text.as_bytes()), vec![a.clone(), b.to_owned()]);
        assert!(object_ids(b"ref: refs/heads/main\n").is_empty());
        assert!(object_ids("A".repeat(40).as_bytes()).is_empty());
    }

    #[test]
    fn abbreviated_ids_in_a_todo_list() {
        let todo =
            b"pick 88574e5 c2\n# pick deadbee no\nfixup -C e44012c fix\nexec make\nlabel onto\n";
        assert_eq!(todo_ids(todo), vec!["88574e5", "e44012c"]);
    }

    #[test]
    fn per_worktree_subpaths() {
        assert!(private_subpath("refs/worktree/save"));
        assert!(private_subpath("refs/bisect/bad"));
        assert!(private_subpath("logs/HEAD"));
        assert!(private_subpath("logs/refs/worktree/save"));
        assert!(private_subpath("logs/refs"));
        assert!(!private_subpath("logs/refs/heads/main"));
        assert!(!private_subpath("refs/heads/main"));
        assert!(!private_subpath("refs/worktreex"));
    }
}
