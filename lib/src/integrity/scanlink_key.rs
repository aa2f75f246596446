//! The record of the commit scan's sources: when nothing the scan reads about refs and
//! object presence changed since a check whose scan found the refs exactly as pinned, the
//! scan's answer is that check's (clean), and the repository is not opened.
//!
//! **What the scan reads when no ref moved.** Every ref (`packed-refs`, the loose refs under
//! `refs/` of the common dir, its `HEAD`, each `worktrees/<id>/HEAD` and the entry's own
//! `refs/`), compared with the pinned snapshot; then whether each ref's object is still in
//! the object store (`objects/pack/*`, loose objects in `objects/xx/`; alternates not
//! supported here); and every reflog (`logs/` and each `worktrees/<id>/logs/`), whose ids
//! the pin did not know are walked and scanned with the objects they reach. With every ref
//! as pinned, no ref is rewritten: the answer is a function of those files and objects.
//!
//! **The key** ([`Key::take`]), a byte string compared whole with the record's:
//! - this build's version, the state file's device, inode, size, `mtime` and `ctime` (a new
//!   pin is a new key), the common dir's path, device and inode, its file system's type;
//! - `HEAD`, `packed-refs`, `config` and `commondir` of the common dir (a `commondir` there
//!   would make gix read the refs of another folder): present or absent, and if present
//!   device, inode, size, `mtime` and `ctime` (nanoseconds);
//! - the trees `refs/`, `logs/`, `worktrees/<id>/refs/`, `worktrees/<id>/logs/` (the
//!   reflogs name tips of the scan too, `crate::scan`'s `reflogs`), `objects/pack/`,
//!   `objects/info/`: every
//!   name, in sorted order, listed now; for a folder its device and inode (its listing and
//!   its children's stamps follow), for a file all five stamps;
//! - `worktrees/`: every entry's name and device and inode; its `HEAD` (stamps or absent),
//!   its `refs/` tree, its `logs/` tree and its root refs (below);
//! - the root refs of the common dir: every name of root-ref syntax (`ORIG_HEAD`,
//!   `FETCH_HEAD`, `MERGE_HEAD`, …: `catalogue::is_root_ref_name`) but `HEAD`, with all five stamps;
//! - `objects/`: every entry's name and all five stamps; the fan-out folders `objects/xx`
//!   are not listed: removing or renaming a loose object moves its folder's `mtime`/`ctime`.
//!
//! **What makes a key unusable** (no record is used nor written; the scan runs): a link or
//! a special file anywhere in those trees (a link's target could change without any stamp
//! here moving); another device below the common dir (a mount); a file system outside
//! [`crate::index_paths::VERDICT_FS`]; `objects/info/alternates` (objects elsewhere); more
//! than [`MAX_ENTRIES`] names; any error but "absent".
//!
//! **Why an equal key means the same answer.** The agent can write every file named here.
//! Each way it has to change what the scan would read moves a stamp the key holds to the
//! current time, which it cannot set back: a write or truncation (`ctime`); a same-size
//! rewrite with `mtime` put back (`touch -d` moves `ctime`); a new ref file (a new name in a
//! listing); a rename over a ref (a new inode at that name, and the renamed inode's
//! `ctime`); a folder swap (another inode at that name); a deleted or new loose object (its
//! fan-out folder's `ctime`, or a new name in `objects/`); a pack added, removed or
//! rewritten (a name in `objects/pack/`, or the file's stamps); a write through a shared
//! mapping (before the scan reads them, every file of the key is written back, as for the
//! index verdicts, so a later write through a mapping faults and moves `ctime`). Racy git's
//! rule: a record is written only when every recorded `ctime` is older than the check's
//! start by more than [`crate::layout::walk_cache::RACY_MARGIN_NS`], so a change in the same
//! clock tick as a recorded stamp cannot leave it equal. Symbolic refs must name refs under
//! `refs/` (`Stats::refs_as_snapshot`): a `HEAD` naming a root file (`ref: ORIG_HEAD`)
//! would be resolved through a file the key does not hold.
//!
//! **Names taken from the record** ([`Key::take_after`]): while the key taken so far is the
//! record's prefix, a folder whose five stamps (just put) are the recorded ones is not
//! listed: its names are read from the record. The ground is the walk record's
//! (`crate::layout::walk_cache`): any change to a folder's names (create, unlink, rename in
//! or out, `mkdir`, `rmdir`) sets its `ctime` to the current time, which an unprivileged
//! process cannot set back, and the record holds only stamps older than its check's start
//! by the racy margin, so a folder with its recorded stamps has its recorded names. Only
//! folders whose `ctime` the key holds: `refs/` and `logs/` trees, `worktrees/` and each
//! entry (its root refs), `objects/`, `objects/pack`, `objects/info` — not the common dir
//! itself (its root refs are listed every time). Its files and subfolders are still stamped
//! one by one; a folder the record holds as empty whose `lstat` gives the recorded stamps is
//! not opened at all. From the first byte that differs from the record every folder is listed, and
//! a folder left in the middle must list the names already put. The record written after a
//! scan is a key taken with every folder listed, so no record holds names another record
//! lent. What this saves, on git.git with 20 worktree entries: 148 of 324 `getdents64`
//! calls, and 22 `openat`/`close` pairs (each entry's empty `refs/`).
//!
//! **What invalidates the record**: any change of the key (above); a check whose scan is not
//! clean with refs as pinned removes it. The record is the owner's file beside the state file
//! (`<state>.refs`), outside the agent's reach as the state file is; one that cannot be
//! read or is damaged is no record.

use crate::fsx::write_back;
use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"gitward-refk-v2\n";

/// Names the key may hold; past it the scan runs and nothing is recorded.
pub const MAX_ENTRIES: usize = 50_000;

/// The sources' key, and what the slow path needs to record it.
pub struct Key {
    bytes: Vec<u8>,
    /// The newest `ctime` among the full stamps (files, fan-out folders), nanoseconds.
    newest_ctime_ns: i128,
    /// The files of the key, relative to the common dir: written back before the scan.
    files: Vec<PathBuf>,
    entries: usize,
    /// Folders whose names came from the record ([`Key::take_after`]).
    pub replayed: usize,
}

/// Where `check` keeps the record: beside the state file, `<state>.refs`.
pub fn record_path(state: &Path) -> Option<PathBuf> {
    let mut n = state.file_name()?.to_os_string();
    n.push(".refs");
    Some(state.with_file_name(n))
}

fn ctime_ns(st: &FileStat) -> i128 {
    i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec)
}

fn kind(st: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT
}

fn open_dir(dir: impl AsFd, name: &[u8]) -> nix::Result<OwnedFd> {
    openat(
        dir,
        OsStr::from_bytes(name),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

const DT_DIR: u8 = nix::libc::DT_DIR;

/// The entries of the folder open as `fd` (freshly opened: read from its start), sorted,
/// each with its `d_type` (a hint: what is opened as a folder is checked on the descriptor).
fn list(fd: &OwnedFd, buf: &mut [u8]) -> Option<Vec<(Vec<u8>, u8)>> {
    let mut out = Vec::new();
    loop {
        let n = crate::fsx::getdents64(fd, buf).ok()?;
        if n == 0 {
            break;
        }
        crate::fsx::each_dirent(&buf[..n], |name, d_type| out.push((name.to_vec(), d_type)))?;
    }
    out.sort();
    Some(out)
}

/// What [`Taker::names`] does after putting each name (the name, and whether it is a
/// folder).
type Each<'a, 'r> = dyn FnMut(&mut Taker<'r>, &[u8], bool) -> Option<()> + 'a;

struct Taker<'r> {
    key: Key,
    dev: u64,
    /// One listing buffer for the whole key.
    buf: Vec<u8>,
    /// The recorded key, while the key taken so far is a prefix of it ([`Key::take_after`]);
    /// `None` from the first byte that differs on.
    prev: Option<&'r [u8]>,
    /// How much of `key.bytes` was found equal to `prev` already.
    checked: usize,
    /// Folders whose names came from the record (for the tests and the figures).
    replayed: usize,
}

impl<'r> Taker<'r> {
    /// Is the key taken so far the recorded key's prefix? Once not, never again.
    fn in_step(&mut self) -> bool {
        let Some(p) = self.prev else { return false };
        let b = &self.key.bytes;
        if p.len() >= b.len() && p[self.checked..b.len()] == b[self.checked..] {
            self.checked = b.len();
            true
        } else {
            self.prev = None;
            false
        }
    }

    /// The recorded key's word at `at`.
    fn prev_word(&self, at: usize) -> Option<u64> {
        let b = self.prev?.get(at..at.checked_add(8)?)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// The recorded key's name at `at` (as [`Taker::put_name`] wrote it), and whether what
    /// follows it is a folder's stamps (a hint, as a listing's `d_type` is).
    fn prev_name(&self, at: usize) -> Option<(Vec<u8>, bool)> {
        let len = usize::try_from(self.prev_word(at)?).ok()?;
        let start = at.checked_add(8)?;
        let end = start.checked_add(len)?;
        let p = self.prev?;
        Some((p.get(start..end)?.to_vec(), p.get(end) == Some(&b'D')))
    }

    /// The names of the folder open as `fd` (those `keep` keeps), their count then each one
    /// put in the key, `each` called after each name with it and whether it is a folder (a
    /// hint). `replay`: the folder's own five stamps are in the key already — when the key
    /// is so far the recorded one's prefix, the folder's stamps are the recorded ones, and
    /// its names (a change of names moves its `ctime`, which nobody can set back, and the
    /// record holds only stamps older than its check's start by the racy margin) are the
    /// recorded ones: read from the record, not listed. From the first byte that differs on
    /// the folder is listed now, and its names must then be the ones already put (else no
    /// key).
    fn names(
        &mut self,
        fd: &OwnedFd,
        replay: bool,
        keep: fn(&[u8]) -> bool,
        each: &mut Each<'_, 'r>,
    ) -> Option<()> {
        let listing = |t: &mut Self| -> Option<Vec<(Vec<u8>, u8)>> {
            Some(
                list(fd, &mut t.buf)?
                    .into_iter()
                    .filter(|(n, _)| keep(n))
                    .collect(),
            )
        };
        let mut listed = None;
        let count = match replay.then(|| self.in_step()) {
            Some(true) => match self.prev_word(self.key.bytes.len()) {
                Some(n) => usize::try_from(n).ok()?,
                None => {
                    let l = listing(self)?;
                    let n = l.len();
                    listed = Some(l);
                    n
                }
            },
            _ => {
                let l = listing(self)?;
                let n = l.len();
                listed = Some(l);
                n
            }
        };
        if listed.is_none() {
            self.replayed += 1;
        }
        self.put(count as u64);
        let mut put: Vec<Vec<u8>> = Vec::new();
        for i in 0..count {
            let from_record = match listed {
                None if self.in_step() => self.prev_name(self.key.bytes.len()),
                _ => None,
            };
            let (name, dir) = match (from_record, &listed) {
                (Some(r), _) => r,
                (None, Some(l)) => (l.get(i)?.0.clone(), l.get(i)?.1 == DT_DIR),
                (None, None) => {
                    // The key left the record's inside this folder: its names now must be
                    // those already put, and as many.
                    let l = listing(self)?;
                    if l.len() != count || l.iter().zip(&put).any(|((n, _), p)| n != p) {
                        return None;
                    }
                    let e = (l[i].0.clone(), l[i].1 == DT_DIR);
                    listed = Some(l);
                    e
                }
            };
            self.put_name(&name)?;
            each(self, &name, dir)?;
            if listed.is_none() {
                put.push(name);
            }
        }
        Some(())
    }

    fn put(&mut self, w: u64) {
        self.key.bytes.extend_from_slice(&w.to_le_bytes());
    }

    fn put_name(&mut self, n: &[u8]) -> Option<()> {
        self.key.entries += 1;
        if self.key.entries > MAX_ENTRIES {
            return None;
        }
        self.put(n.len() as u64);
        self.key.bytes.extend_from_slice(n);
        Some(())
    }

    /// A folder whose listing follows: all five stamps, not only its identity. A folder
    /// swapped out and back (`renameat2(RENAME_EXCHANGE)` keeps every file's stamps, and the
    /// folder returns with its inode, names and children) moves its own `ctime` each time
    /// it is renamed: without it a key taken with one folder in place and a scan that read
    /// another matched again once the first was put back (fourteenth red-team pass, R14-5).
    fn put_dir(&mut self, st: &FileStat) -> Option<()> {
        if kind(st) != SFlag::S_IFDIR {
            return None;
        }
        self.put_full(st)
    }

    /// All five stamps.
    fn put_full(&mut self, st: &FileStat) -> Option<()> {
        if st.st_dev != self.dev {
            return None;
        }
        self.key.bytes.push(if kind(st) == SFlag::S_IFDIR {
            b'D'
        } else {
            b'f'
        });
        for w in [
            st.st_ino,
            st.st_size as u64,
            st.st_mtime as u64,
            st.st_mtime_nsec as u64,
            st.st_ctime as u64,
            st.st_ctime_nsec as u64,
        ] {
            self.put(w);
        }
        self.key.newest_ctime_ns = self.key.newest_ctime_ns.max(ctime_ns(st));
        Some(())
    }

    fn lstat(dir: &OwnedFd, name: &[u8]) -> Option<Option<FileStat>> {
        match fstatat(dir, OsStr::from_bytes(name), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Some(Some(st)),
            Err(Errno::ENOENT) => Some(None),
            Err(_) => None,
        }
    }

    /// A regular file that may be absent: its stamps, or `-`.
    fn leaf(&mut self, dir: &OwnedFd, rel: &Path, name: &str) -> Option<()> {
        self.put_name(name.as_bytes())?;
        match Self::lstat(dir, name.as_bytes())? {
            None => self.key.bytes.push(b'-'),
            Some(st) if kind(&st) == SFlag::S_IFREG => {
                self.put_full(&st)?;
                self.key.files.push(rel.join(name));
            }
            Some(_) => return None,
        }
        Some(())
    }

    /// The folder `name` of `dir`, opened (no link followed) and checked on the descriptor;
    /// `Ok(None)` when it is absent, `Err(())` when it is something else than a folder.
    fn open_folder(dir: &OwnedFd, name: &[u8]) -> Result<Option<(OwnedFd, FileStat)>, ()> {
        match open_dir(dir, name) {
            Ok(fd) => {
                let st = fstat(&fd).map_err(|_| ())?;
                Ok(Some((fd, st)))
            }
            Err(Errno::ENOENT) => Ok(None),
            Err(_) => Err(()),
        }
    }

    /// The name `name` of `dir`, already put: a folder listed to the bottom (device and inode,
    /// then each entry), a file with its stamps, `-` for a missing name; anything else (a
    /// link, a special file) gives no key.
    fn entry(&mut self, dir: &OwnedFd, rel: &Path, name: &[u8], dir_hint: bool) -> Option<()> {
        if dir_hint && self.empty_folder_from_record(dir, name) {
            return Some(());
        }
        if dir_hint {
            match Self::open_folder(dir, name) {
                Ok(Some((fd, st))) => {
                    return self.folder(&fd, &st, &rel.join(OsStr::from_bytes(name)))
                }
                Ok(None) => {
                    self.key.bytes.push(b'-');
                    return Some(());
                }
                // Not a folder (a link, a file): as `lstat` says below.
                Err(()) => {}
            }
        }
        match Self::lstat(dir, name)? {
            None => self.key.bytes.push(b'-'),
            Some(st) if kind(&st) == SFlag::S_IFREG => {
                self.put_full(&st)?;
                self.key.files.push(rel.join(OsStr::from_bytes(name)));
            }
            Some(st) if kind(&st) == SFlag::S_IFDIR && !dir_hint => {
                return self.entry(dir, rel, name, true);
            }
            Some(_) => return None,
        }
        Some(())
    }

    /// A folder the record holds as empty (its five stamps, then no names), whose `lstat`
    /// now gives those stamps: put as the record has it, without opening it (what
    /// [`Taker::names`] would read from the record). `false`, with nothing put, otherwise:
    /// the caller opens the folder as always.
    fn empty_folder_from_record(&mut self, dir: &OwnedFd, name: &[u8]) -> bool {
        let at = self.key.bytes.len();
        let empty_next = self.in_step()
            && self.prev.and_then(|p| p.get(at)) == Some(&b'D')
            && self.prev_word(at + 1 + 6 * 8) == Some(0);
        if !empty_next {
            return false;
        }
        let Some(Some(st)) = Self::lstat(dir, name) else {
            return false;
        };
        if kind(&st) != SFlag::S_IFDIR {
            return false;
        }
        let newest = self.key.newest_ctime_ns;
        if self.put_dir(&st).is_some() && self.in_step() {
            self.put(0);
            self.replayed += 1;
            return true;
        }
        // Not the recorded stamps: taken back; the folder is opened and listed.
        self.key.bytes.truncate(at);
        self.key.newest_ctime_ns = newest;
        self.checked = self.checked.min(at);
        false
    }

    /// An open folder: its five stamps, then its entries, each listed to the bottom (its
    /// names from the record when its stamps are the recorded ones, [`Taker::names`]).
    fn folder(&mut self, fd: &OwnedFd, st: &FileStat, rel: &Path) -> Option<()> {
        self.put_dir(st)?;
        self.names(fd, true, |_| true, &mut |t, n, dir| {
            t.entry(fd, rel, n, dir)
        })
    }
}

fn is_root_ref(n: &[u8]) -> bool {
    n != b"HEAD" && crate::catalogue::is_root_ref_name(n)
}

impl Taker<'_> {
    /// The root refs of the git dir open as `dir` (`ORIG_HEAD`, `FETCH_HEAD`, …: every name of
    /// root-ref syntax but `HEAD`, which is keyed on its own), each with its stamps (a folder
    /// of such a name listed to the bottom); a tip of the scan (`scan::reflogs`). `replay`:
    /// the git dir's five stamps are in the key (a worktree entry's; not the common dir's).
    fn root_refs(&mut self, dir: &OwnedFd, rel: &Path, replay: bool) -> Option<()> {
        self.names(dir, replay, is_root_ref, &mut |t, n, d| {
            t.entry(dir, rel, n, d)
        })
    }
}

impl Key {
    /// The key of the scan's sources in `common` for the state file `state`; `None` when
    /// no record may vouch for them (see the module documentation). Every folder listed.
    pub fn take(state: &Path, common: &Path) -> Option<Key> {
        Key::take_after(state, common, None)
    }

    /// [`Key::take`], with the names of each folder whose five stamps are the recorded
    /// ones taken from `record` (the last key recorded) rather than listed, while the key
    /// is the record's prefix (see [`Taker::names`]): the same bytes as [`Key::take`] when
    /// `record` is a key [`Key::take`] gave (the record is written only when a key taken
    /// with every folder listed after the scan equals it, [`super::scanlink::scan_recorded`]).
    /// Not the common dir's own names (its root refs): its `ctime` is not in the key (it
    /// moves with every `index.lock` git renames there).
    pub fn take_after(state: &Path, common: &Path, record: Option<&[u8]>) -> Option<Key> {
        let st_state = nix::sys::stat::lstat(state).ok()?;
        if kind(&st_state) != SFlag::S_IFREG {
            return None;
        }
        let root = nix::fcntl::open(
            common,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let fs = nix::sys::statfs::fstatfs(&root).ok()?.filesystem_type().0;
        if !crate::index_paths::VERDICT_FS.iter().any(|(t, _)| *t == fs) {
            return None;
        }
        let st_root = fstat(&root).ok()?;
        let mut t = Taker {
            key: Key {
                bytes: MAGIC.to_vec(),
                newest_ctime_ns: 0,
                files: Vec::new(),
                entries: 0,
                replayed: 0,
            },
            dev: st_root.st_dev,
            buf: vec![0u8; 16 * 1024],
            prev: record,
            checked: 0,
            replayed: 0,
        };
        t.key
            .bytes
            .extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        t.key.bytes.push(0);
        for w in [
            st_state.st_dev,
            st_state.st_ino,
            st_state.st_size as u64,
            st_state.st_mtime as u64,
            st_state.st_mtime_nsec as u64,
            st_state.st_ctime as u64,
            st_state.st_ctime_nsec as u64,
            fs as u64,
            st_root.st_dev,
            st_root.st_ino,
        ] {
            t.put(w);
        }
        t.put_name(common.as_os_str().as_bytes())?;
        let here = Path::new("");
        for f in ["HEAD", "packed-refs", "config", "commondir"] {
            t.leaf(&root, here, f)?;
        }
        t.put_name(b"refs")?;
        t.entry(&root, here, b"refs", true)?;
        // The reflogs name tips of the scan (`scan::reflogs`): listed to the bottom as refs/.
        t.put_name(b"logs")?;
        t.entry(&root, here, b"logs", true)?;
        t.root_refs(&root, here, false)?;

        // Worktree entries: each one's HEAD and private refs.
        t.put_name(b"worktrees")?;
        match Taker::open_folder(&root, b"worktrees") {
            Ok(None) => t.key.bytes.push(b'-'),
            Ok(Some((wt, st))) => {
                t.put_dir(&st)?;
                let rel = Path::new("worktrees");
                t.names(&wt, true, |_| true, &mut |t, id, dir| {
                    let opened = if dir {
                        Taker::open_folder(&wt, id)
                    } else {
                        Err(())
                    };
                    match opened {
                        Ok(Some((e, st))) => {
                            t.put_dir(&st)?;
                            let rel = rel.join(OsStr::from_bytes(id));
                            t.leaf(&e, &rel, "HEAD")?;
                            t.put_name(b"refs")?;
                            t.entry(&e, &rel, b"refs", true)?;
                            t.put_name(b"logs")?;
                            t.entry(&e, &rel, b"logs", true)?;
                            t.root_refs(&e, &rel, true)
                        }
                        Ok(None) => None,
                        // Not a folder: a regular file is stamped (git and the snapshot
                        // skip it), anything else gives no key.
                        Err(()) => {
                            let st = Taker::lstat(&wt, id)??;
                            if kind(&st) != SFlag::S_IFREG {
                                return None;
                            }
                            t.put_full(&st)
                        }
                    }
                })?;
            }
            Err(()) => return None,
        }

        // The object store: packs and info listed to the bottom, fan-out folders stamped.
        t.put_name(b"objects")?;
        let Ok(Some((objects, st))) = Taker::open_folder(&root, b"objects") else {
            return None;
        };
        t.put_dir(&st)?;
        let rel = Path::new("objects");
        t.names(&objects, true, |_| true, &mut |t, n, _| {
            match n {
                b"pack" => t.entry(&objects, rel, n, true)?,
                b"info" => {
                    if Taker::lstat(&objects, b"info/alternates")?.is_some() {
                        return None;
                    }
                    t.entry(&objects, rel, n, true)?;
                }
                _ => {
                    let st = Taker::lstat(&objects, n)??;
                    match kind(&st) {
                        SFlag::S_IFDIR => t.put_full(&st)?,
                        SFlag::S_IFREG => {
                            t.put_full(&st)?;
                            t.key.files.push(rel.join(OsStr::from_bytes(n)));
                        }
                        _ => return None,
                    }
                }
            }
            Some(())
        })?;
        t.key.replayed = t.replayed;
        Some(t.key)
    }

    /// May this key be recorded by a check that started at `started_ns`? Every stamp must be
    /// older than the start by more than the racy margin.
    pub fn recordable(&self, started_ns: i128) -> bool {
        self.newest_ctime_ns < started_ns - crate::layout::walk_cache::RACY_MARGIN_NS
    }

    /// Write back every file of the key (before the scan reads them): a write through a
    /// shared mapping after this faults and moves `ctime`. `false` if any cannot be.
    pub fn write_back(&self, common: &Path) -> bool {
        let Ok(root) = crate::fsx::Root::open(common) else {
            return false;
        };
        self.files.iter().all(|rel| {
            openat(
                root.as_fd(),
                rel.as_os_str(),
                OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .is_ok_and(|fd| write_back(fd.as_fd()).is_ok())
        })
    }

    /// Does the record at `path` hold this key?
    pub fn matches_record(&self, path: &Path) -> bool {
        crate::layout::walk_cache::read_owner_file(path).is_ok_and(|b| b == self.bytes)
    }

    /// The record's bytes.
    pub fn to_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A common dir of the shape the key reads, and a state file beside it.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let common = t.path().join("repo.git");
        for d in [
            "refs/heads",
            "refs/tags",
            "objects/pack",
            "objects/info",
            "objects/ab",
        ] {
            std::fs::create_dir_all(common.join(d)).unwrap();
        }
        std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            common.join("refs/heads/main"),
            format!("{}\n", "a".repeat(40)),
        )
        .unwrap();
        std::fs::write(common.join("objects/pack/p.idx"), "idx").unwrap();
        let state = t.path().join("st.json");
        std::fs::write(&state, "{}").unwrap();
        (t, common, state)
    }

    fn fs_ok(p: &Path) -> bool {
        let fs = nix::sys::statfs::statfs(p).unwrap().filesystem_type().0;
        crate::index_paths::VERDICT_FS.iter().any(|(t, _)| *t == fs)
    }

    /// Racy git's rule: a key whose newest stamp is within the margin of the check's start
    /// is not recorded; past it, it is.
    #[test]
    fn a_key_changed_within_the_racy_margin_is_not_recordable() {
        let (t, common, state) = tree();
        if !fs_ok(t.path()) {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "TMPDIR on a trusted fs"
            );
            return;
        }
        let before = crate::layout::walk_cache::now_ns();
        let k = Key::take(&state, &common).expect("a key");
        // The newest stamp is the files just written (not a time read by chance later than
        // the margin, which a stalled machine passes: a check starting at it is judged
        // below by its distance from the stamp, not by the clock).
        assert!(
            k.newest_ctime_ns <= before && before - k.newest_ctime_ns < 600 * 1_000_000_000,
            "{} {before}",
            k.newest_ctime_ns
        );
        assert!(
            !k.recordable(k.newest_ctime_ns),
            "just written: within the margin"
        );
        assert!(!k.recordable(k.newest_ctime_ns + crate::layout::walk_cache::RACY_MARGIN_NS));
        // Positive control: the same key past the margin.
        assert!(k.recordable(k.newest_ctime_ns + crate::layout::walk_cache::RACY_MARGIN_NS + 1));
        // The loose ref is among the newest stamps: a write to it moves the key.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(
            common.join("refs/heads/main"),
            format!("{}\n", "b".repeat(40)),
        )
        .unwrap();
        let k2 = Key::take(&state, &common).unwrap();
        assert_ne!(k.to_bytes(), k2.to_bytes());
        assert!(k2.newest_ctime_ns > k.newest_ctime_ns);
    }

    /// R14-5: `refs/heads` exchanged with another folder and put back (two
    /// `renameat2(RENAME_EXCHANGE)`): every file keeps its stamps and the folder comes back
    /// with its inode, names and children, so a key of identities alone matched again —
    /// which let a key taken with one folder in place stand for a scan that read the other.
    /// The folder's own `ctime` moves with each rename; the key holds it. So do `worktrees/`
    /// entries and `objects/pack`, keyed the same way.
    #[test]
    fn a_folder_exchanged_and_put_back_moves_the_key() {
        use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
        let (t, common, state) = tree();
        if !fs_ok(t.path()) {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "TMPDIR on a trusted fs"
            );
            eprintln!("SKIPPED: the key is not taken on this file system (TMPDIR)");
            return;
        }
        let other = common.join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("main"), format!("{}\n", "f".repeat(40))).unwrap();
        for folder in ["refs/heads", "objects/pack"] {
            let before = Key::take(&state, &common).expect("a key");
            // Positive control: taken again with nothing changed, the key is the same.
            let same = Key::take(&state, &common).unwrap();
            assert_eq!(before.to_bytes(), same.to_bytes(), "{folder}");
            std::thread::sleep(std::time::Duration::from_millis(20));
            let swap = || {
                renameat2(
                    AT_FDCWD,
                    &common.join(folder),
                    AT_FDCWD,
                    &other,
                    RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap()
            };
            swap();
            let during = Key::take(&state, &common).unwrap();
            assert_ne!(
                before.to_bytes(),
                during.to_bytes(),
                "{folder}: other folder"
            );
            swap();
            let after = Key::take(&state, &common).unwrap();
            assert_ne!(
                before.to_bytes(),
                after.to_bytes(),
                "{folder}: exchanged and put back, the key must move"
            );
        }
    }

    type Step = Box<dyn Fn(&Path)>;

    /// What makes a key unusable: a link, a special file, alternates; each one against the
    /// same tree without it (positive control: a key).
    #[test]
    fn links_special_files_and_alternates_give_no_key() {
        let (t, common, state) = tree();
        if !fs_ok(t.path()) {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "TMPDIR on a trusted fs"
            );
            return;
        }
        assert!(Key::take(&state, &common).is_some());
        let cases: Vec<(&str, Step, Step)> = vec![
            (
                "linked ref",
                Box::new(|c| {
                    std::os::unix::fs::symlink("/etc/hostname", c.join("refs/heads/l")).unwrap()
                }),
                Box::new(|c| std::fs::remove_file(c.join("refs/heads/l")).unwrap()),
            ),
            (
                "linked refs folder",
                Box::new(|c| {
                    std::os::unix::fs::symlink(c.join("refs/heads"), c.join("refs/x")).unwrap()
                }),
                Box::new(|c| std::fs::remove_file(c.join("refs/x")).unwrap()),
            ),
            (
                "linked HEAD",
                Box::new(|c| {
                    std::fs::rename(c.join("HEAD"), c.join("HEAD.real")).unwrap();
                    std::os::unix::fs::symlink("HEAD.real", c.join("HEAD")).unwrap()
                }),
                Box::new(|c| std::fs::rename(c.join("HEAD.real"), c.join("HEAD")).unwrap()),
            ),
            (
                "fifo in refs",
                Box::new(|c| {
                    nix::unistd::mkfifo(&c.join("refs/heads/f"), Mode::from_bits_truncate(0o600))
                        .unwrap()
                }),
                Box::new(|c| std::fs::remove_file(c.join("refs/heads/f")).unwrap()),
            ),
            (
                "alternates",
                Box::new(|c| {
                    std::fs::write(c.join("objects/info/alternates"), "/elsewhere\n").unwrap()
                }),
                Box::new(|c| std::fs::remove_file(c.join("objects/info/alternates")).unwrap()),
            ),
            (
                "linked pack",
                Box::new(|c| {
                    std::os::unix::fs::symlink("/etc/hostname", c.join("objects/pack/l.idx"))
                        .unwrap()
                }),
                Box::new(|c| std::fs::remove_file(c.join("objects/pack/l.idx")).unwrap()),
            ),
            (
                "linked worktree entry",
                Box::new(|c| {
                    std::fs::create_dir_all(c.join("worktrees")).unwrap();
                    std::os::unix::fs::symlink("/tmp", c.join("worktrees/w")).unwrap()
                }),
                Box::new(|c| std::fs::remove_file(c.join("worktrees/w")).unwrap()),
            ),
        ];
        for (name, make, undo) in cases {
            make(&common);
            assert!(Key::take(&state, &common).is_none(), "{name}");
            undo(&common);
            assert!(
                Key::take(&state, &common).is_some(),
                "{name}: positive control"
            );
        }
    }

    /// A damaged or foreign record never matches; the key's own bytes do.
    #[test]
    fn only_the_same_bytes_match_a_record() {
        let (t, common, state) = tree();
        if !fs_ok(t.path()) {
            return;
        }
        let k = Key::take(&state, &common).unwrap();
        let rec = record_path(&state).unwrap();
        std::fs::write(&rec, k.to_bytes()).unwrap();
        assert!(k.matches_record(&rec));
        let mut damaged = k.to_bytes().to_vec();
        damaged.pop();
        std::fs::write(&rec, &damaged).unwrap();
        assert!(!k.matches_record(&rec));
        std::fs::remove_file(&rec).unwrap();
        std::os::unix::fs::symlink(t.path().join("elsewhere"), &rec).unwrap();
        std::fs::write(t.path().join("elsewhere"), k.to_bytes()).unwrap();
        assert!(
            !k.matches_record(&rec),
            "a linked record is not the owner's file"
        );
    }

    /// A common dir with a reflog and two worktree entries, for the replay tests.
    fn tree_with_worktrees() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let (t, common, state) = tree();
        for d in [
            "logs/refs/heads",
            "worktrees/wt1/refs",
            "worktrees/wt1/logs",
            "worktrees/wt2/logs",
        ] {
            std::fs::create_dir_all(common.join(d)).unwrap();
        }
        let line = format!(
            "{} {} t <t@x> 1 +0000\tcommit\n",
            "0".repeat(40),
            "a".repeat(40)
        );
        std::fs::write(common.join("logs/HEAD"), &line).unwrap();
        std::fs::write(common.join("logs/refs/heads/main"), &line).unwrap();
        for wt in ["wt1", "wt2"] {
            let e = common.join("worktrees").join(wt);
            std::fs::write(e.join("HEAD"), format!("{}\n", "a".repeat(40))).unwrap();
            std::fs::write(e.join("logs/HEAD"), &line).unwrap();
            std::fs::write(e.join("gitdir"), "/w/.git\n").unwrap();
        }
        (t, common, state)
    }

    /// Put a folder's `mtime` and `atime` back (what `touch -d` does): its `ctime` moves.
    fn times_back(dir: &Path, m: &std::fs::Metadata) {
        std::fs::File::open(dir)
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_modified(m.modified().unwrap())
                    .set_accessed(m.accessed().unwrap()),
            )
            .unwrap();
    }

    /// The key taken after a record takes the names of the folders whose stamps are the
    /// recorded ones from it; it is the key a listing of every folder gives — unchanged, and
    /// after every change the agent can make to a folder's names with its times put back
    /// (a new loose ref, a root ref in a worktree entry, a private ref of an entry, a new
    /// entry, a reflog removed), or to a file only (the key leaves the record inside a
    /// folder whose names it took from it, and lists that folder from there on).
    #[test]
    fn a_key_taken_after_its_record_is_the_key_a_listing_of_every_folder_gives() {
        let (t, common, state) = tree_with_worktrees();
        if !fs_ok(t.path()) {
            return;
        }
        let full = Key::take(&state, &common).unwrap();
        let after = Key::take_after(&state, &common, Some(full.to_bytes())).unwrap();
        assert_eq!(after.to_bytes(), full.to_bytes());
        // refs, refs/heads, refs/tags, logs, logs/refs, logs/refs/heads, worktrees, each
        // entry's root refs, refs and logs, objects, objects/pack, objects/info…
        assert!(after.replayed >= 12, "{}", after.replayed);
        assert_eq!(full.replayed, 0);
        type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let changes: Vec<Change> = vec![
            (
                "a new loose ref",
                Box::new(|| {
                    let d = common.join("refs/heads");
                    let m = std::fs::metadata(&d).unwrap();
                    std::fs::write(d.join("evil"), format!("{}\n", "c".repeat(40))).unwrap();
                    times_back(&d, &m);
                }),
            ),
            (
                "a root ref in a worktree entry",
                Box::new(|| {
                    let d = common.join("worktrees/wt2");
                    let m = std::fs::metadata(&d).unwrap();
                    std::fs::write(d.join("ORIG_HEAD"), format!("{}\n", "d".repeat(40))).unwrap();
                    times_back(&d, &m);
                }),
            ),
            (
                "a private ref of an entry",
                Box::new(|| {
                    let d = common.join("worktrees/wt1/refs");
                    let m = std::fs::metadata(&d).unwrap();
                    std::fs::create_dir(d.join("bisect")).unwrap();
                    std::fs::write(d.join("bisect/bad"), format!("{}\n", "e".repeat(40))).unwrap();
                    times_back(&d, &m);
                }),
            ),
            (
                "a new worktree entry",
                Box::new(|| {
                    let d = common.join("worktrees");
                    let m = std::fs::metadata(&d).unwrap();
                    std::fs::create_dir_all(d.join("wt0/refs")).unwrap();
                    std::fs::write(d.join("wt0/HEAD"), format!("{}\n", "f".repeat(40))).unwrap();
                    times_back(&d, &m);
                }),
            ),
            (
                "a reflog removed",
                Box::new(|| {
                    let d = common.join("logs/refs/heads");
                    let m = std::fs::metadata(&d).unwrap();
                    std::fs::remove_file(d.join("main")).unwrap();
                    times_back(&d, &m);
                }),
            ),
            (
                "an entry's refs folder made again, empty",
                Box::new(|| {
                    let d = common.join("worktrees/wt1");
                    let m = std::fs::metadata(&d).unwrap();
                    std::fs::remove_dir_all(d.join("refs")).unwrap();
                    std::fs::create_dir(d.join("refs")).unwrap();
                    times_back(&d, &m);
                }),
            ),
            (
                "a file's content only",
                Box::new(|| {
                    std::fs::write(common.join("worktrees/wt1/logs/HEAD"), "x\n").unwrap();
                }),
            ),
        ];
        for (what, change) in changes {
            let record = Key::take(&state, &common).unwrap();
            // Past the clock tick of every stamp in the record (the record's own racy
            // margin is a second; the kernel's tick a few milliseconds).
            std::thread::sleep(std::time::Duration::from_millis(30));
            change();
            let full = Key::take(&state, &common).unwrap();
            let after = Key::take_after(&state, &common, Some(record.to_bytes())).unwrap();
            assert_ne!(
                full.to_bytes(),
                record.to_bytes(),
                "{what}: the change moves the key"
            );
            assert_eq!(after.to_bytes(), full.to_bytes(), "{what}");
            assert!(
                after.replayed > 0,
                "{what}: positive control, names were replayed"
            );
        }
    }

    /// An empty folder the record holds (not opened when its stamps are the recorded ones)
    /// swapped for a link or a file: no key, or the file's stamps — as a listing gives.
    #[test]
    fn an_empty_recorded_folder_swapped_for_a_link_or_a_file_is_seen() {
        let (t, common, state) = tree_with_worktrees();
        if !fs_ok(t.path()) {
            return;
        }
        let record = Key::take(&state, &common).unwrap();
        let refs = common.join("worktrees/wt1/refs");
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::fs::remove_dir(&refs).unwrap();
        std::os::unix::fs::symlink(t.path(), &refs).unwrap();
        assert!(Key::take(&state, &common).is_none());
        assert!(Key::take_after(&state, &common, Some(record.to_bytes())).is_none());
        std::fs::remove_file(&refs).unwrap();
        std::fs::write(&refs, "").unwrap();
        let full = Key::take(&state, &common).unwrap();
        let after = Key::take_after(&state, &common, Some(record.to_bytes())).unwrap();
        assert_eq!(after.to_bytes(), full.to_bytes());
        assert_ne!(after.to_bytes(), record.to_bytes());
        // Positive control: an empty folder there again is taken from the record.
        std::fs::remove_file(&refs).unwrap();
        std::fs::create_dir(&refs).unwrap();
        let again = Key::take(&state, &common).unwrap();
        let after = Key::take_after(&state, &common, Some(again.to_bytes())).unwrap();
        assert_eq!(after.to_bytes(), again.to_bytes());
        assert!(after.replayed > 0);
    }

    /// A record cut short gives the key a listing of every folder gives, or no key; a record
    /// whose names do not follow its counts (no check writes one) is not matched.
    #[test]
    fn a_damaged_record_lends_no_names() {
        let (t, common, state) = tree_with_worktrees();
        if !fs_ok(t.path()) {
            return;
        }
        let full = Key::take(&state, &common).unwrap();
        let b = full.to_bytes();
        for cut in [b.len() / 3, b.len() / 2, b.len() - 9, b.len() - 1] {
            let rec = &b[..cut];
            if let Some(k) = Key::take_after(&state, &common, Some(rec)) {
                assert_eq!(k.to_bytes(), b, "cut at {cut}");
            }
        }
        // A name inserted in a recorded folder, its count left as it was: the key differs
        // from that record.
        let ghost = b"ghost";
        let mut forged = b.to_vec();
        // The name as the key puts it (its length, 8 bytes little-endian, then its bytes):
        // the four bytes `main` alone can stand in a stamp or the temporary folder's name.
        let name = [&4u64.to_le_bytes()[..], b"main"].concat();
        let at = forged
            .windows(name.len())
            .position(|w| w == name)
            .expect("the ref's name");
        forged.splice(
            at..at,
            [&(ghost.len() as u64).to_le_bytes()[..], ghost, b"-"].concat(),
        );
        let after = Key::take_after(&state, &common, Some(&forged)).unwrap();
        assert_ne!(after.to_bytes(), &forged[..]);
    }
}
