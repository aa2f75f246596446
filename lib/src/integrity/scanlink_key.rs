//! The record of the commit scan's sources: when nothing the scan reads about refs and
//! object presence changed since a check whose scan found the refs exactly as pinned, the
//! scan's answer is that check's (clean), and the repository is not opened.
//!
//! **What the scan reads when no ref moved.** Every ref (`packed-refs`, the loose refs under
//! `refs/` of the common dir, its `HEAD`, each `worktrees/<id>/HEAD` and the entry's own
//! `refs/`), compared with the pinned snapshot; then whether each ref's object is still in
//! the object store (`objects/pack/*`, loose objects in `objects/xx/`; alternates not
//! supported here). With every ref as pinned, nothing new is walked and no ref is rewritten:
//! the answer is "clean" exactly when every object is still there.
//!
//! **The key** ([`Key::take`]), a byte string compared whole with the record's:
//! - this build's version, the state file's device, inode, size, `mtime` and `ctime` (a new
//!   pin is a new key), the common dir's path, device and inode, its file system's type;
//! - `HEAD`, `packed-refs`, `config` and `commondir` of the common dir (a `commondir` there
//!   would make gix read the refs of another folder): present or absent, and if present
//!   device, inode, size, `mtime` and `ctime` (nanoseconds);
//! - the trees `refs/`, `worktrees/<id>/refs/`, `objects/pack/`, `objects/info/`: every
//!   name, in sorted order, listed now; for a folder its device and inode (its listing and
//!   its children's stamps follow), for a file all five stamps;
//! - `worktrees/`: every entry's name and device and inode; its `HEAD` (stamps or absent)
//!   and its `refs/` tree;
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
//! **What invalidates the record**: any change of the key (above); a check whose scan is not
//! clean with refs as pinned removes it. The record is the owner's file beside the state file
//! (`<state>.refs`), outside the agent's reach as the state file is; one that cannot be
//! read or is damaged is no record.

use crate::fsx::write_back;
use nix::dir::Dir;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"gitward-refk-v1\n";

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

fn open_dir(dir: impl AsFd, name: &OsStr) -> nix::Result<OwnedFd> {
    openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Sorted names of the open folder (without `.` and `..`).
fn names(fd: &OwnedFd) -> Option<Vec<Vec<u8>>> {
    let dup = fd.try_clone().ok()?;
    let mut d = Dir::from_fd(dup).ok()?;
    let mut out = Vec::new();
    for e in d.iter() {
        let e = e.ok()?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            out.push(n.to_vec());
        }
    }
    out.sort();
    Some(out)
}

struct Taker {
    key: Key,
    dev: u64,
}

impl Taker {
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

    /// Device and inode only: a folder whose listing follows.
    fn put_dir(&mut self, st: &FileStat) -> Option<()> {
        if st.st_dev != self.dev {
            return None;
        }
        self.key.bytes.push(b'd');
        self.put(st.st_ino);
        Some(())
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
            Err(nix::errno::Errno::ENOENT) => Some(None),
            Err(_) => None,
        }
    }

    /// A file that may be absent: its stamps, or `-`.
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

    /// A folder that may be absent, listed to the bottom.
    fn tree(&mut self, dir: &OwnedFd, rel: &Path, name: &[u8]) -> Option<()> {
        self.put_name(name)?;
        let Some(st) = Self::lstat(dir, name)? else {
            self.key.bytes.push(b'-');
            return Some(());
        };
        self.subtree(dir, rel, name, &st)
    }

    fn subtree(&mut self, dir: &OwnedFd, rel: &Path, name: &[u8], st: &FileStat) -> Option<()> {
        let rel = rel.join(OsStr::from_bytes(name));
        match kind(st) {
            SFlag::S_IFREG => {
                self.put_full(st)?;
                self.key.files.push(rel);
            }
            SFlag::S_IFDIR => {
                let fd = open_dir(dir, OsStr::from_bytes(name)).ok()?;
                // The folder opened is the folder stated (no swap in between).
                let st2 = fstat(&fd).ok()?;
                if st2.st_ino != st.st_ino || st2.st_dev != st.st_dev {
                    return None;
                }
                self.put_dir(st)?;
                let list = names(&fd)?;
                self.put(list.len() as u64);
                for n in list {
                    self.put_name(&n)?;
                    let st = Self::lstat(&fd, &n)??;
                    self.subtree(&fd, &rel, &n, &st)?;
                }
            }
            _ => return None,
        }
        Some(())
    }
}

impl Key {
    /// The key of the scan's sources in `common` for the state file `state`; `None` when
    /// no record may vouch for them (see the module documentation).
    pub fn take(state: &Path, common: &Path) -> Option<Key> {
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
            },
            dev: st_root.st_dev,
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
        t.tree(&root, here, b"refs")?;

        // Worktree entries: each one's HEAD and private refs.
        t.put_name(b"worktrees")?;
        match Taker::lstat(&root, b"worktrees")? {
            None => t.key.bytes.push(b'-'),
            Some(st) if kind(&st) == SFlag::S_IFDIR => {
                let wt = open_dir(&root, OsStr::new("worktrees")).ok()?;
                t.put_dir(&st)?;
                let rel = Path::new("worktrees");
                let list = names(&wt)?;
                t.put(list.len() as u64);
                for id in list {
                    t.put_name(&id)?;
                    let st = Taker::lstat(&wt, &id)??;
                    match kind(&st) {
                        SFlag::S_IFDIR => {
                            let e = open_dir(&wt, OsStr::from_bytes(&id)).ok()?;
                            let st2 = fstat(&e).ok()?;
                            if st2.st_ino != st.st_ino {
                                return None;
                            }
                            t.put_dir(&st)?;
                            let rel = rel.join(OsStr::from_bytes(&id));
                            t.leaf(&e, &rel, "HEAD")?;
                            t.tree(&e, &rel, b"refs")?;
                        }
                        SFlag::S_IFREG => t.put_full(&st)?,
                        _ => return None,
                    }
                }
            }
            Some(_) => return None,
        }

        // The object store: packs and info listed to the bottom, fan-out folders stamped.
        t.put_name(b"objects")?;
        let st = Taker::lstat(&root, b"objects")??;
        if kind(&st) != SFlag::S_IFDIR {
            return None;
        }
        let objects = open_dir(&root, OsStr::new("objects")).ok()?;
        t.put_dir(&st)?;
        let rel = Path::new("objects");
        let list = names(&objects)?;
        t.put(list.len() as u64);
        for n in list {
            t.put_name(&n)?;
            let st = Taker::lstat(&objects, &n)??;
            match (n.as_slice(), kind(&st)) {
                (b"pack", _) => t.subtree(&objects, rel, &n, &st)?,
                (b"info", SFlag::S_IFDIR) => {
                    let info = open_dir(&objects, OsStr::new("info")).ok()?;
                    if Taker::lstat(&info, b"alternates")?.is_some() {
                        return None;
                    }
                    t.subtree(&objects, rel, &n, &st)?;
                }
                (_, SFlag::S_IFDIR) => t.put_full(&st)?,
                (_, SFlag::S_IFREG) => {
                    t.put_full(&st)?;
                    t.key.files.push(rel.join(OsStr::from_bytes(&n)));
                }
                _ => return None,
            }
        }
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
        let k = Key::take(&state, &common).expect("a key");
        let now = crate::layout::walk_cache::now_ns();
        assert!(!k.recordable(now), "just written: within the margin");
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
}
