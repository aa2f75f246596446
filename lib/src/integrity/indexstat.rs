//! Index entries whose stat data hides a work-tree file's content from git.
//!
//! git decides that a tracked file is unchanged when the stat data its index entry holds
//! (`mtime`, `ctime`, inode, size, uid, gid) equals the file's, and then never reads the
//! file: `status` and `diff` show nothing, `reset --hard` and `checkout -- f` leave it as it
//! is. The agent can write the index (it must, to commit). It writes its content into a
//! tracked file, stages it, and patches the entry's object id back to the owner's blob (and
//! the index checksum): the owner's git then reports a clean work tree over the agent's
//! content, the review (`git diff`) shows nothing, and the owner's next build or test runs it
//! (sixteenth red-team pass, R16-12; both gits).
//!
//! [`scan`] reads each index the session could write (the main work tree's, the session's
//! worktrees'; as `hops` does) whose file was written since the pin, and `lstat`s the file
//! of every entry of a regular file or link: a file whose `ctime` is not older than the pin
//! (written since: no process can set `ctime` back) and that git may take as unchanged — its
//! `mtime` and size match the entry's, the fields git compares whatever `core.trustctime`
//! and `core.checkStat` say (the agent can set `mtime`, and the entry's other fields, to
//! anything) — is read and hashed: a blob id other than the entry's is a finding. A file
//! not written since the pin holds what it held at the pin, whatever its entry says, and an
//! entry that names another object than the file's is then a staged change `git diff
//! --cached` shows. A regular file that hashes differently
//! only because git converts line endings on `add` (`text`, `eol`, `core.autocrlf`) is
//! accepted when its CRLF → LF form hashes to the entry; a work tree whose attributes name a
//! filter (`filter=`, `ident`, `working-tree-encoding`: git LFS, for one) cannot be verified
//! without running it, so a mismatch there is a warning, elsewhere an error. An index older
//! than the pin holds no entry written since and is not read.
//!
//! With `--restore`, the file's `mtime` is set to now: git's stat check then fails, git reads
//! the file and shows the agent's content as a change. Nothing is written to the index or
//! the file's content.

use crate::events::{Event, EventKind};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most entries whose file is read and hashed in one check; past it the check is
/// incomplete.
pub const MAX_HASHED: usize = 200_000;
/// Largest file hashed.
pub const MAX_FILE: u64 = 1 << 30;

/// One entry whose stat data matches a file whose content is not the entry's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The work-tree file.
    pub path: PathBuf,
    /// The index it is in.
    pub index: PathBuf,
    /// The entry's object id (what git believes the file holds).
    pub entry_id: String,
    /// The file's blob id.
    pub file_id: String,
    /// A filter may apply (the work tree's attributes name one): not verifiable.
    pub filtered: bool,
}

/// What [`scan`] found.
#[derive(Debug, Default)]
pub struct Found {
    pub hidden: Vec<Hidden>,
    pub incomplete: Option<(PathBuf, String)>,
}

fn blob_id(bytes: &[u8]) -> String {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .map(|o| o.to_string())
        .unwrap_or_default()
}

/// Whether git may take the file `m` as unchanged from an entry with stat data `s`: the
/// fields `read-cache.c`'s `match_stat_data` compares under every setting (`mtime` seconds,
/// its nanoseconds when the entry holds them, the size; truncated to 32 bits as the index
/// stores them). With the defaults git also compares `ctime`, inode, uid and gid: a superset
/// of the entries git skips, so more files are hashed, none missed.
fn git_may_take_as_unchanged(s: &gix::index::entry::Stat, m: &std::fs::Metadata) -> bool {
    u64::from(s.mtime.secs) == (m.mtime() as u64 & 0xffff_ffff)
        && (s.mtime.nsecs == 0 || i64::from(s.mtime.nsecs) == m.mtime_nsec())
        && u64::from(s.size) == (m.size() & 0xffff_ffff)
}

/// Whether any attributes file of the work tree `top` or the git dir names a filter git
/// would run on `add` (a superset: the pattern is not evaluated).
fn filters_named(top: &Path, index: &gix::index::File, git_dir_info: &Path) -> bool {
    let words: [&[u8]; 3] = [b"filter", b"ident", b"working-tree-encoding"];
    let mentions = |p: &Path| {
        crate::audit::special::read_regular(p, 1 << 20)
            .is_ok_and(|b| words.iter().any(|w| b.windows(w.len()).any(|x| x == *w)))
    };
    if mentions(&git_dir_info.join("attributes")) {
        return true;
    }
    index.entries().iter().any(|e| {
        let p = e.path(index);
        (p == ".gitattributes" || p.ends_with(b"/.gitattributes"))
            && mentions(&top.join(std::ffi::OsStr::from_bytes(p)))
    })
}

/// Every hidden entry in the indexes `indexes` (`(index file, its work tree)`) written since
/// `since` (seconds, nanoseconds).
pub fn scan(indexes: &[(PathBuf, PathBuf)], common_dir: &Path, since: (i64, i64)) -> Found {
    let mut out = Found::default();
    let mut hashed = 0usize;
    for (index_path, top) in indexes {
        let Ok(im) = std::fs::metadata(index_path) else {
            continue; // no index: nothing staged
        };
        if (im.mtime(), im.mtime_nsec()) < since {
            continue; // written before the pin: no entry in it was written since
        }
        let index = match crate::index_paths::read_index(index_path, true) {
            Ok(Some(i)) => i,
            Ok(None) => continue,
            Err(e) => {
                out.incomplete = Some((index_path.clone(), e));
                return out;
            }
        };
        let mut filtered: Option<bool> = None;
        for e in index.entries() {
            let mode = e.mode;
            if mode != gix::index::entry::Mode::FILE
                && mode != gix::index::entry::Mode::FILE_EXECUTABLE
                && mode != gix::index::entry::Mode::SYMLINK
            {
                continue;
            }
            let rel = e.path(&index);
            let path = top.join(std::ffi::OsStr::from_bytes(rel));
            let Ok(m) = std::fs::symlink_metadata(&path) else {
                continue; // gone: git shows it deleted
            };
            if (m.ctime(), m.ctime_nsec()) < since {
                continue; // not written since the pin
            }
            if !git_may_take_as_unchanged(&e.stat, &m) {
                continue; // git reads the file and shows what is there
            }
            hashed += 1;
            if hashed > MAX_HASHED {
                out.incomplete =
                    Some((top.clone(), format!("more than {MAX_HASHED} files to hash")));
                return out;
            }
            let bytes = if m.file_type().is_symlink() {
                match std::fs::read_link(&path) {
                    Ok(t) => t.into_os_string().into_encoded_bytes(),
                    Err(_) => continue,
                }
            } else if m.is_file() {
                match crate::audit::special::read_regular(&path, MAX_FILE) {
                    Ok(b) => b,
                    Err(err) => {
                        out.incomplete = Some((path, format!("cannot read: {err}")));
                        return out;
                    }
                }
            } else {
                continue; // a folder or FIFO at a file's entry: git sees the change itself
            };
            let want = e.id.to_string();
            let got = blob_id(&bytes);
            if got == want {
                continue;
            }
            if m.is_file() && bytes.contains(&b'\r') {
                let lf: Vec<u8> = bytes
                    .windows(2)
                    .filter(|w| !(w[0] == b'\r' && w[1] == b'\n'))
                    .map(|w| w[0])
                    .chain(bytes.last().copied())
                    .collect();
                if blob_id(&lf) == want {
                    continue; // git's CRLF → LF on add
                }
            }
            let filtered = *filtered
                .get_or_insert_with(|| filters_named(top, &index, &common_dir.join("info")));
            out.hidden.push(Hidden {
                path,
                index: index_path.clone(),
                entry_id: want,
                file_id: got,
                filtered,
            });
        }
    }
    out
}

/// Set `path`'s `mtime` to now (not following a link; its content untouched): git's stat
/// check of the entry then fails under every `core.trustctime`/`core.checkStat`, and git
/// reads the file.
fn unhide(path: &Path) -> std::io::Result<()> {
    use nix::sys::stat::{utimensat, UtimensatFlags};
    use nix::sys::time::TimeSpec;
    utimensat(
        nix::fcntl::AT_FDCWD,
        path,
        &TimeSpec::UTIME_OMIT,
        &TimeSpec::UTIME_NOW,
        UtimensatFlags::NoFollowSymlink,
    )
    .map_err(std::io::Error::from)
}

/// Report every hidden entry; with `restore`, set each file's `mtime` to now so git reads it.
pub fn check(
    indexes: &[(PathBuf, PathBuf)],
    common_dir: &Path,
    state: &Path,
    restore: bool,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> super::Outcome {
    use super::Outcome;
    let Some(since) = std::fs::metadata(state)
        .ok()
        .map(|m| (m.mtime(), m.mtime_nsec()))
    else {
        emit(mk(
            EventKind::CheckIncomplete,
            format!("{}: cannot stat the state file", state.display()),
        ));
        return Outcome::Incomplete;
    };
    let found = scan(indexes, common_dir, since);
    let mut outcome = Outcome::Clean;
    for h in &found.hidden {
        outcome = outcome.and(Outcome::Found);
        let why = if h.filtered {
            "git takes this file as unchanged (its index entry's stat data matches) but it does not hash to the entry's object; the work tree's attributes name a filter, which may explain it (not run to verify)"
        } else {
            "git takes this file as unchanged (its index entry's stat data matches) but its content is not the entry's object: git status, diff and reset --hard do not show or undo it"
        };
        let mut ev = mk(
            EventKind::IndexStatForged,
            format!("{}: {why}", h.path.display()),
        )
        .path(&h.path)
        .with("index", h.index.display().to_string())
        .with("entry_id", h.entry_id.clone())
        .with("file_id", h.file_id.clone())
        .with("level", if h.filtered { "warning" } else { "error" })
        .with("why", why);
        if restore {
            match unhide(&h.path) {
                Ok(()) => ev = ev.with("action", "stat_invalidated"),
                Err(e) => {
                    outcome = outcome.and(Outcome::Incomplete);
                    ev = ev.with("action", format!("failed: {e}"));
                }
            }
        } else {
            ev = ev.with("action", "reported");
        }
        emit(ev);
    }
    if let Some((p, why)) = found.incomplete {
        outcome = outcome.and(Outcome::Incomplete);
        emit(
            mk(
                EventKind::CheckIncomplete,
                format!("{}: {why}", p.display()),
            )
            .path(&p),
        );
    }
    outcome
}
