//! Tree-to-tree diff on the trees' bytes, reporting what gix's `gix::diff::tree` reports.
//!
//! A commit changes a few entries of trees that hold hundreds (git.git's top folder: ~480);
//! `gix::diff::tree` parses and compares every entry of both trees, unchanged ones included,
//! and that was a fifth of the scan's instructions. git's own tree-diff does the same work in
//! C. Here the unchanged runs are skipped as bytes: from two entry boundaries, the common
//! prefix of both trees is found with wide comparisons, and every entry that lies wholly
//! inside it is the same entry on both sides (same mode text, name and id) — what gix skips
//! after parsing it. Only where the bytes differ are entries parsed (by gix's own tree
//! parser) and compared by git's name order.
//!
//! The changes, and the order of the visits inside one folder, are gix's: an added or
//! deleted folder is visited and then walked (its entries visited as added or deleted), a
//! changed folder is visited as modified and walked, a folder that became a file (or the
//! reverse) is visited as deleted and added, a file whose id or mode changed as modified.
//! Folders are walked breadth first, as gix does. An identical entry is never parsed: its
//! bytes equal the parent's entry, which the parent's own scan (or the pin) covered.

use super::packs::Bytes;
use gix::bstr::BString;
use gix::bstr::ByteSlice;
use gix::diff::tree::{visit::Change, Visit};
use gix::objs::tree::EntryMode;
use gix::objs::TreeRefIter;
use gix::{oid, ObjectId};
use std::collections::VecDeque;

/// Why a diff stopped.
pub(super) enum Stop {
    /// The visitor said stop (a bound): not an error of the diff.
    Cancelled,
    /// A tree could not be read or parsed.
    Error(String),
}

/// Reads a tree's bytes (shared with the reader's cache, not copied).
pub(super) trait TreeSource {
    fn read_tree(&self, id: &oid) -> Result<Bytes, String>;
}

/// Reusable state of [`diff`].
#[derive(Default)]
pub(super) struct State {
    queue: VecDeque<(Option<ObjectId>, Option<ObjectId>, BString)>,
}

/// One parsed entry and where it ends in its tree.
struct Entry<'a> {
    mode: EntryMode,
    name: &'a [u8],
    oid: &'a oid,
    end: usize,
}

fn parse(
    tree: &[u8],
    at: usize,
    hash: gix::hash::Kind,
    id: Option<ObjectId>,
) -> Result<Option<Entry<'_>>, String> {
    let rest = &tree[at..];
    match TreeRefIter::from_bytes(rest, hash).next() {
        None => Ok(None),
        Some(Err(e)) => Err(match id {
            Some(id) => format!("tree {id} cannot be parsed: {e}"),
            None => format!("a tree cannot be parsed: {e}"),
        }),
        Some(Ok(e)) => {
            // The name is a slice of `rest`: the entry ends after it, its NUL and the id.
            let name_at = e.filename.as_ptr() as usize - rest.as_ptr() as usize;
            let end = at + name_at + e.filename.len() + 1 + e.oid.as_bytes().len();
            Ok(Some(Entry {
                mode: e.mode,
                name: e.filename,
                oid: e.oid,
                end,
            }))
        }
    }
}

/// Length of the common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const W: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + W <= n && a[i..i + W] == b[i..i + W] {
        i += W;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Entries wholly inside `common` bytes of `tree` from `at` (identical on both sides):
/// how many bytes they take. Stops at the first entry that does not end inside.
fn skip_identical(tree: &[u8], at: usize, common: usize, hash_len: usize) -> usize {
    let region = &tree[at..at + common];
    let mut k = 0;
    while let Some(z) = region[k..].find_byte(0) {
        let end = k + z + 1 + hash_len;
        if end > common {
            break;
        }
        k = end;
    }
    k
}

/// The full path of `name` in folder `dir`.
fn join(path: &mut BString, dir: &[u8], name: &[u8]) {
    path.clear();
    path.extend_from_slice(dir);
    if !dir.is_empty() && !name.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// The path a visit is about, set where `V` reads it.
pub(super) trait CurrentPath {
    fn path_mut(&mut self) -> &mut BString;
}

/// Diff `old` (`None`: the empty tree) against `new`, visiting every change with the
/// visitor's current path set to the changed entry's path.
pub(super) fn diff<V: Visit + CurrentPath>(
    trees: &impl TreeSource,
    hash: gix::hash::Kind,
    old: Option<ObjectId>,
    new: ObjectId,
    state: &mut State,
    v: &mut V,
) -> Result<(), Stop> {
    let hash_len = hash.len_in_bytes();
    state.queue.clear();
    state.queue.push_back((old, Some(new), BString::default()));
    while let Some((l, r, dir)) = state.queue.pop_front() {
        let lhs = l
            .map(|l| trees.read_tree(&l))
            .transpose()
            .map_err(Stop::Error)?;
        let rhs = r
            .map(|r| trees.read_tree(&r))
            .transpose()
            .map_err(Stop::Error)?;
        let lb: &[u8] = lhs.as_deref().map_or(&[], Vec::as_slice);
        let rb: &[u8] = rhs.as_deref().map_or(&[], Vec::as_slice);
        let (mut i, mut j) = (0, 0);
        loop {
            if i < lb.len() && j < rb.len() {
                let common = common_prefix(&lb[i..], &rb[j..]);
                if common > hash_len {
                    let k = skip_identical(lb, i, common, hash_len);
                    i += k;
                    j += k;
                }
            }
            let a = parse(lb, i, hash, l).map_err(Stop::Error)?;
            let b = parse(rb, j, hash, r).map_err(Stop::Error)?;
            match (a, b) {
                (None, None) => break,
                (Some(a), None) => {
                    i = a.end;
                    deleted(&a, &dir, v, &mut state.queue)?;
                }
                (None, Some(b)) => {
                    j = b.end;
                    added(&b, &dir, v, &mut state.queue)?;
                }
                (Some(a), Some(b)) => {
                    use std::cmp::Ordering::*;
                    match gix::objs::tree::name_order(
                        a.name,
                        a.mode.is_tree(),
                        b.name,
                        b.mode.is_tree(),
                    ) {
                        Less => {
                            i = a.end;
                            deleted(&a, &dir, v, &mut state.queue)?;
                        }
                        Greater => {
                            j = b.end;
                            added(&b, &dir, v, &mut state.queue)?;
                        }
                        Equal => {
                            i = a.end;
                            j = b.end;
                            same_name(&a, &b, &dir, v, &mut state.queue)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

type Queue = VecDeque<(Option<ObjectId>, Option<ObjectId>, BString)>;

fn visit<V: Visit + CurrentPath>(
    v: &mut V,
    dir: &[u8],
    name: &[u8],
    change: Change,
) -> Result<(), Stop> {
    join(v.path_mut(), dir, name);
    if v.visit(change).is_break() {
        return Err(Stop::Cancelled);
    }
    Ok(())
}

fn deleted<V: Visit + CurrentPath>(
    a: &Entry<'_>,
    dir: &[u8],
    v: &mut V,
    q: &mut Queue,
) -> Result<(), Stop> {
    visit(
        v,
        dir,
        a.name,
        Change::Deletion {
            entry_mode: a.mode,
            oid: a.oid.to_owned(),
            relation: None,
        },
    )?;
    if a.mode.is_tree() {
        q.push_back((Some(a.oid.to_owned()), None, v.path_mut().clone()));
    }
    Ok(())
}

fn added<V: Visit + CurrentPath>(
    b: &Entry<'_>,
    dir: &[u8],
    v: &mut V,
    q: &mut Queue,
) -> Result<(), Stop> {
    visit(
        v,
        dir,
        b.name,
        Change::Addition {
            entry_mode: b.mode,
            oid: b.oid.to_owned(),
            relation: None,
        },
    )?;
    if b.mode.is_tree() {
        q.push_back((None, Some(b.oid.to_owned()), v.path_mut().clone()));
    }
    Ok(())
}

fn same_name<V: Visit + CurrentPath>(
    a: &Entry<'_>,
    b: &Entry<'_>,
    dir: &[u8],
    v: &mut V,
    q: &mut Queue,
) -> Result<(), Stop> {
    match (a.mode.is_tree(), b.mode.is_tree()) {
        (true, true) => {
            if a.oid != b.oid {
                visit(
                    v,
                    dir,
                    b.name,
                    Change::Modification {
                        previous_entry_mode: a.mode,
                        previous_oid: a.oid.to_owned(),
                        entry_mode: b.mode,
                        oid: b.oid.to_owned(),
                    },
                )?;
                q.push_back((
                    Some(a.oid.to_owned()),
                    Some(b.oid.to_owned()),
                    v.path_mut().clone(),
                ));
            }
        }
        (true, false) => {
            // A folder became a file: its old entries are walked as deleted.
            visit(
                v,
                dir,
                a.name,
                Change::Deletion {
                    entry_mode: a.mode,
                    oid: a.oid.to_owned(),
                    relation: None,
                },
            )?;
            visit(
                v,
                dir,
                b.name,
                Change::Addition {
                    entry_mode: b.mode,
                    oid: b.oid.to_owned(),
                    relation: None,
                },
            )?;
            q.push_back((Some(a.oid.to_owned()), None, v.path_mut().clone()));
        }
        (false, true) => {
            // A file became a folder: its new entries are walked as added.
            visit(
                v,
                dir,
                a.name,
                Change::Deletion {
                    entry_mode: a.mode,
                    oid: a.oid.to_owned(),
                    relation: None,
                },
            )?;
            visit(
                v,
                dir,
                b.name,
                Change::Addition {
                    entry_mode: b.mode,
                    oid: b.oid.to_owned(),
                    relation: None,
                },
            )?;
            q.push_back((None, Some(b.oid.to_owned()), v.path_mut().clone()));
        }
        (false, false) => {
            if a.oid != b.oid || a.mode != b.mode {
                visit(
                    v,
                    dir,
                    b.name,
                    Change::Modification {
                        previous_entry_mode: a.mode,
                        previous_oid: a.oid.to_owned(),
                        entry_mode: b.mode,
                        oid: b.oid.to_owned(),
                    },
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::packs::{PackReader, Packs};
    use gix::diff::tree::recorder::Change as Rec;
    use gix::objs::FindExt;
    use std::path::Path;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("/usr/bin/git")
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@b")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@b")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    #[derive(Default)]
    struct Collect {
        path: BString,
        seen: Vec<(BString, String)>,
    }

    impl CurrentPath for Collect {
        fn path_mut(&mut self) -> &mut BString {
            &mut self.path
        }
    }

    impl Visit for Collect {
        fn pop_front_tracked_path_and_set_current(&mut self) {}
        fn push_back_tracked_path_component(&mut self, _: &gix::bstr::BStr) {}
        fn push_path_component(&mut self, _: &gix::bstr::BStr) {}
        fn pop_path_component(&mut self) {}
        fn visit(&mut self, c: Change) -> gix::diff::tree::visit::Action {
            let what = match c {
                Change::Addition {
                    entry_mode, oid, ..
                } => format!("A {entry_mode:?} {oid}"),
                Change::Deletion {
                    entry_mode, oid, ..
                } => format!("D {entry_mode:?} {oid}"),
                Change::Modification {
                    previous_entry_mode,
                    previous_oid,
                    entry_mode,
                    oid,
                } => format!("M {previous_entry_mode:?} {previous_oid} {entry_mode:?} {oid}"),
            };
            self.seen.push((self.path.clone(), what));
            std::ops::ControlFlow::Continue(())
        }
    }

    /// Every pair of trees in a history with added, deleted and changed files and folders,
    /// files that become folders and the reverse, mode changes, and names that sort
    /// differently as a file and as a folder (`a.b`, `a`, `a0`): the byte-skipping diff
    /// reports exactly the changes `gix::diff::tree` reports, in both directions.
    #[test]
    fn changes_are_gix_changes() {
        if !Path::new("/usr/bin/git").exists() {
            assert!(std::env::var_os("CI").is_none(), "CI: no /usr/bin/git");
            eprintln!("skipped: no /usr/bin/git");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path();
        git(r, &["init", "-q", "-b", "main", "."]);
        let names = ["a", "a.b", "a0", "b/c", "b/d/e", "z", "m/n/o/p"];
        for i in 0..40usize {
            for (k, n) in names.iter().enumerate() {
                let p = r.join(n);
                if (i + k) % 5 == 0 {
                    let _ = std::fs::remove_file(&p);
                    let _ = std::fs::remove_dir_all(&p);
                    continue;
                }
                if (i + k) % 7 == 3 {
                    // The name as a folder this time.
                    let _ = std::fs::remove_file(&p);
                    std::fs::create_dir_all(p.join("x")).unwrap();
                    std::fs::write(p.join("x/y"), format!("{i}")).unwrap();
                    continue;
                }
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, format!("{}", i / 3 + k)).unwrap();
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = if (i + k) % 4 == 1 { 0o755 } else { 0o644 };
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
                }
            }
            git(r, &["add", "-A"]);
            git(
                r,
                &["commit", "-q", "--allow-empty", "-m", &format!("c{i}")],
            );
        }
        git(r, &["repack", "-adq"]);
        let repo = crate::scan::open_repo(&r.join(".git")).unwrap();
        let packs = Packs::open(&repo.common_dir().join("objects"), repo.object_hash());
        let reader = PackReader::new(&packs, &repo.objects, 1 << 20);
        let trees: Vec<ObjectId> = git(r, &["log", "--format=%T"])
            .lines()
            .map(|l| ObjectId::from_hex(l.as_bytes()).unwrap())
            .collect();
        let hash = repo.object_hash();
        let mut state = State::default();
        let mut compared = 0;
        for (n, a) in trees.iter().enumerate() {
            for b in trees.iter().skip(n.saturating_sub(3)).take(7) {
                let mut ours = Collect::default();
                assert!(diff(&reader, hash, Some(*a), *b, &mut state, &mut ours).is_ok());
                let mut rec = gix::diff::tree::Recorder::default();
                let (mut ba, mut bb) = (Vec::new(), Vec::new());
                let ta = repo.objects.find_tree_iter(a, &mut ba).unwrap();
                let tb = repo.objects.find_tree_iter(b, &mut bb).unwrap();
                gix::diff::tree(
                    ta,
                    tb,
                    &mut gix::diff::tree::State::default(),
                    &repo.objects,
                    &mut rec,
                )
                .unwrap();
                let mut theirs: Vec<(BString, String)> = rec
                    .records
                    .into_iter()
                    .map(|c| match c {
                        Rec::Addition {
                            entry_mode,
                            oid,
                            path,
                            ..
                        } => (path, format!("A {entry_mode:?} {oid}")),
                        Rec::Deletion {
                            entry_mode,
                            oid,
                            path,
                            ..
                        } => (path, format!("D {entry_mode:?} {oid}")),
                        Rec::Modification {
                            previous_entry_mode,
                            previous_oid,
                            entry_mode,
                            oid,
                            path,
                        } => (
                            path,
                            format!(
                                "M {previous_entry_mode:?} {previous_oid} {entry_mode:?} {oid}"
                            ),
                        ),
                    })
                    .collect();
                let mut ours = ours.seen;
                ours.sort();
                theirs.sort();
                assert_eq!(ours, theirs, "{a} -> {b}");
                compared += usize::from(!theirs.is_empty());
            }
        }
        assert!(compared > 100, "only {compared} diffs with changes");
        // The empty tree on the left: everything added.
        let mut ours = Collect::default();
        assert!(diff(&reader, hash, None, trees[0], &mut state, &mut ours).is_ok());
        assert!(ours.seen.iter().all(|(_, w)| w.starts_with('A')) && !ours.seen.is_empty());
    }
}
