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
//!   `FETCH_HEAD`, `MERGE_HEAD`, …, `[A-Z_-]+`) but `HEAD`, with all five stamps;
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

struct Taker {
    key: Key,
    dev: u64,
    /// One listing buffer for the whole key.
    buf: Vec<u8>,
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

    /// An open folder: device and inode, then its entries, each listed to the bottom.
    fn folder(&mut self, fd: &OwnedFd, st: &FileStat, rel: &Path) -> Option<()> {
        self.put_dir(st)?;
        let list = list(fd, &mut self.buf)?;
        self.put(list.len() as u64);
        for (n, t) in list {
            self.put_name(&n)?;
            self.entry(fd, rel, &n, t == DT_DIR)?;
        }
        Some(())
    }
}

impl Taker {
    /// The root refs of the git dir open as `dir` (`ORIG_HEAD`, `FETCH_HEAD`, …: every name of
    /// root-ref syntax but `HEAD`, which is keyed on its own), each with its stamps (a folder
    /// of such a name listed to the bottom); a tip of the scan (`scan::reflogs`).
    fn root_refs(&mut self, dir: &OwnedFd, rel: &Path) -> Option<()> {
        let names: Vec<(Vec<u8>, u8)> = list(dir, &mut self.buf)?
            .into_iter()
            .filter(|(n, _)| n != b"HEAD" && crate::catalogue::is_root_ref_name(n))
            .collect();
        self.put(names.len() as u64);
        for (n, ty) in names {
            self.put_name(&n)?;
            self.entry(dir, rel, &n, ty == DT_DIR)?;
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
            buf: vec![0u8; 16 * 1024],
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
        t.root_refs(&root, here)?;

        // Worktree entries: each one's HEAD and private refs.
        t.put_name(b"worktrees")?;
        match Taker::open_folder(&root, b"worktrees") {
            Ok(None) => t.key.bytes.push(b'-'),
            Ok(Some((wt, st))) => {
                t.put_dir(&st)?;
                let rel = Path::new("worktrees");
                let list = list(&wt, &mut t.buf)?;
                t.put(list.len() as u64);
                for (id, ty) in list {
                    t.put_name(&id)?;
                    let opened = if ty == DT_DIR {
                        Taker::open_folder(&wt, &id)
                    } else {
                        Err(())
                    };
                    match opened {
                        Ok(Some((e, st))) => {
                            t.put_dir(&st)?;
                            let rel = rel.join(OsStr::from_bytes(&id));
                            t.leaf(&e, &rel, "HEAD")?;
                            t.put_name(b"refs")?;
                            t.entry(&e, &rel, b"refs", true)?;
                            t.put_name(b"logs")?;
                            t.entry(&e, &rel, b"logs", true)?;
                            t.root_refs(&e, &rel)?;
                        }
                        Ok(None) => return None,
                        // Not a folder: a regular file is stamped (git and the snapshot
                        // skip it), anything else gives no key.
                        Err(()) => {
                            let st = Taker::lstat(&wt, &id)??;
                            if kind(&st) != SFlag::S_IFREG {
                                return None;
                            }
                            t.put_full(&st)?;
                        }
                    }
                }
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
        let list = list(&objects, &mut t.buf)?;
        t.put(list.len() as u64);
        for (n, _) in list {
            t.put_name(&n)?;
            match n.as_slice() {
                b"pack" => t.entry(&objects, rel, &n, true)?,
                b"info" => {
                    if Taker::lstat(&objects, b"info/alternates")?.is_some() {
                        return None;
                    }
                    t.entry(&objects, rel, &n, true)?;
                }
                _ => {
                    let st = Taker::lstat(&objects, &n)??;
                    match kind(&st) {
                        SFlag::S_IFDIR => t.put_full(&st)?,
                        SFlag::S_IFREG => {
                            t.put_full(&st)?;
                            t.key.files.push(rel.join(OsStr::from_bytes(&n)));
                        }
                        _ => return None,
                    }
                }
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
}
