//! The files of a work tree that git's own listing does not account for.
//!
//! `git status` is git's directory walk (dir.c), and that walk leaves things out by design:
//! every path component named `.git` is skipped (`d/.git/notes.txt`, a plain file `d/.git`,
//! neither of them a repository), and a folder it cannot open is only warned about. `git
//! worktree remove` deletes all of them. So [`walk`] lists the work tree itself, one folder
//! descriptor at a time (`openat`, no link followed, no `PATH_MAX` limit), and returns every
//! entry that is neither tracked nor listed by git. A folder it cannot open or read is not
//! "nothing there": it is an error, and the caller answers "cannot tell".

use crate::fsx::{EntryKind, FsError, Root};
use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How deep the walk goes before it gives up (an honest tree is far shallower; each level
/// holds one open descriptor).
pub const MAX_DEPTH: usize = 512;

/// What git accounts for, as paths relative to the top of the work tree (bytes, `/`-joined).
#[derive(Debug, Default)]
pub struct Accounted {
    /// Tracked paths and the untracked or ignored files git listed.
    pub files: HashSet<Vec<u8>>,
    /// Folders git listed whole (`dir/`: an untracked nested repository, an ignored folder)
    /// and populated submodules (asked on their own): not entered.
    pub folders: HashSet<Vec<u8>>,
}

/// Why the walk could not finish.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("{0}")]
    Fs(#[from] FsError),
    #[error("{path}: folders nested deeper than {MAX_DEPTH}")]
    TooDeep { path: String },
}

/// Every non-folder entry below `top` (files, links, fifos, ...) that `acc` does not account
/// for, as `/`-joined paths. The top-level `.git` (the gitfile or git dir of this work tree)
/// is left out; a `.git` anywhere below is an ordinary entry. Empty folders hold no work and
/// are not reported.
pub fn walk(top: &Path, acc: &Accounted) -> Result<Vec<Vec<u8>>, WalkError> {
    let root = Root::open(top)?;
    let listing = root.list_kinds("")?;
    let mut out = Vec::new();
    visit(&root, listing, &[], acc, 0, &mut out)?;
    Ok(out)
}

fn visit(
    dir: &Root,
    listing: crate::fsx::Listing,
    prefix: &[u8],
    acc: &Accounted,
    depth: usize,
    out: &mut Vec<Vec<u8>>,
) -> Result<(), WalkError> {
    for (name, kind) in listing {
        if prefix.is_empty() && name == ".git" {
            continue;
        }
        let mut rel = prefix.to_vec();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name.as_bytes());
        match kind {
            EntryKind::Dir => {
                if acc.folders.contains(&rel) {
                    continue;
                }
                if depth + 1 > MAX_DEPTH {
                    return Err(WalkError::TooDeep {
                        path: String::from_utf8_lossy(&rel).into_owned(),
                    });
                }
                let (child, kids) = dir.open_dir_listed(&name)?;
                visit(&child, kids, &rel, acc, depth + 1, out)?;
            }
            _ => {
                if !acc.files.contains(&rel) {
                    out.push(rel);
                }
            }
        }
    }
    Ok(())
}
