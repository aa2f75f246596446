//! A record of folder listings for [`super::walk::Walk`], so that `wt-check check` does not
//! list again, every turn, the folders of checkouts that did not change.
//!
//! The record lives beside the state file (the owner's, outside the agent's reach) and holds,
//! per folder, the folder's identity and change stamps — its [`FolderKey`]: device, inode,
//! `ctime` and `mtime` (seconds and nanoseconds) and the type of its file system — with its
//! sorted listing (names and kinds). A folder whose key, taken now with an `lstat` (or an
//! `fstat` of the descriptor the walk opened), equals the recorded one is not read: its
//! recorded listing is used.
//!
//! Why that is safe against the agent, which can write every folder walked:
//! - Any change to a folder's names (create, unlink, rename in or out, `mkdir`, `rmdir`,
//!   `symlink`, `mknod`, `link`) sets the folder's `ctime` to the current time. An
//!   unprivileged process cannot set `ctime` back: `utimensat` (`touch -d`) sets `mtime` and
//!   `atime` and moves `ctime` to now. Kinds cannot change without a name changing (a file
//!   becomes a folder only by unlink + create).
//! - A folder replaced by another (renamed into place, or removed and made again) has
//!   another inode, or the same inode number reused with a new `ctime`: a different key.
//!   Mount points change the device.
//! - Racy git's rule: a change in the same timestamp tick as the `lstat` that recorded the
//!   key would leave the same `ctime`. So a listing is recorded only when its folder's
//!   `ctime` is older than the moment the walk started by more than [`RACY_MARGIN`] (far
//!   above the kernel's coarse clock tick): every later change gets a `ctime` at or after
//!   that moment, so it differs.
//! - Only file systems whose inode `ctime` the kernel keeps itself are trusted
//!   ([`TRUSTED_FS`]: ext2/3/4, XFS, Btrfs, tmpfs, F2FS). A folder on any other (FUSE, whose
//!   server may be the agent's; NFS and other network file systems, which may report cached
//!   or server-chosen stamps; overlayfs; 9p; vfat) is always listed.
//! - A listing the file system left `d_type` unknown in is not recorded (its kinds would need
//!   an `lstat` per entry, which is the walk's job).
//! - The record is the owner's file; one that cannot be read, or is damaged, counts as
//!   empty (every folder is listed), never as "unchanged".
//!
//! What the cache does not cover: the files' contents (the audit reads every `.git` file,
//! `HEAD` and config it looks at, as before) and the walk's order and bounds (the walk hands
//! out the same entries, in the same order, as a walk that lists every folder).

use super::FastMap;
use nix::sys::stat::FileStat;
use std::path::Path;

/// Racy-git margin: a folder whose `ctime` is not older than the walk's start by more than
/// this is listed but not recorded.
pub const RACY_MARGIN_NS: i128 = 1_000_000_000;

/// File systems (`statfs` `f_type`) whose folder `ctime` the cache trusts.
pub const TRUSTED_FS: &[(i64, &str)] = &[
    (0xEF53, "ext2/ext3/ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0xF2F5_2010, "f2fs"),
];

/// Version 2: an entry's kind byte may carry [`HINT_HAS_DIRS`]. A version-1 record is not
/// read (every folder listed once), and a version-1 binary does not read a version-2 one
/// (it would take a hinted folder for a special file).
const MAGIC: &[u8; 16] = b"gitward-walk-v2\n";

/// Set on a folder entry's kind byte when that folder had subfolders the last time it was
/// walked: the walk then opens it right away (the open and its `fstat` are needed for its
/// subfolders anyway) instead of `lstat`ing it first to learn whether it has any. Only a
/// hint: the folder's listing still comes from its own key, taken with `fstat` on the
/// descriptor opened ([`WalkCache::reuse`] or a listing), so a wrong or forged hint costs
/// at most an `open` or an `lstat`, never a listing. Kinds are read without it
/// ([`kind_byte`]).
pub(crate) const HINT_HAS_DIRS: u8 = 0x80;

/// An entry's `d_type` without [`HINT_HAS_DIRS`].
pub(crate) fn kind_byte(t: u8) -> u8 {
    t & !HINT_HAS_DIRS
}
/// Bound on a record file read (a larger one counts as empty).
const FILE_LIMIT: u64 = 256 << 20;

/// A folder's identity and change stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FolderKey {
    pub dev: u64,
    pub ino: u64,
    pub ctime: (i64, i64),
    pub mtime: (i64, i64),
    /// `statfs` `f_type` of the folder's file system.
    pub fs: i64,
}

impl FolderKey {
    const LEN: usize = 8 * 7;

    fn to_bytes(self, out: &mut Vec<u8>) {
        for v in [
            self.dev,
            self.ino,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.fs as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    fn from_bytes(b: &[u8]) -> Option<FolderKey> {
        let w = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                b.get(i * 8..i * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(FolderKey {
            dev: w(0)?,
            ino: w(1)?,
            ctime: (w(2)? as i64, w(3)? as i64),
            mtime: (w(4)? as i64, w(5)? as i64),
            fs: w(6)? as i64,
        })
    }
}

/// One recorded listing: names in order, each with its `d_type`.
#[derive(Debug)]
struct Recorded {
    key: FolderKey,
    /// The record's bytes in [`WalkCache::data`] (key included), copied as is when kept.
    span: std::ops::Range<usize>,
    /// `(name start, name length, d_type)` into `data`.
    entries: std::ops::Range<usize>,
    count: usize,
    has_dirs: bool,
}

/// Counts of one walk (or several sharing the cache), for the figures in
/// `docs/perf-wt-check.md` and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Folders whose recorded listing was used.
    pub reused: usize,
    /// Folders listed (no record, a different key, or an untrusted file system).
    pub listed: usize,
    /// Folders listed whose listing could not be recorded (racy `ctime`, untrusted file
    /// system, `d_type` unknown).
    pub not_recorded: usize,
    /// Folders opened (listed, or reused after an `fstat` of the descriptor).
    pub opened: usize,
    /// Folders `lstat`ed before the walk decided whether to open them (those not hinted
    /// to have subfolders: [`HINT_HAS_DIRS`]).
    pub looked_up: usize,
}

/// The listings recorded by the last walk, and those of this one (to write back).
pub struct WalkCache {
    data: Vec<u8>,
    loaded: FastMap<(u64, u64), Recorded>,
    /// Records of `data` this run used, kept as they are: their bytes are copied only when
    /// the record is written ([`WalkCache::to_bytes`]), which a run that reused every folder
    /// does not do.
    kept: Vec<std::ops::Range<usize>>,
    /// This run's new records (folders listed now), in the file's format.
    out: Vec<u8>,
    out_count: u32,
    /// Folders already in `out` (a folder reached from two roots is recorded once).
    written: FastMap<(u64, u64), ()>,
    /// Wall-clock time when this run started (before any `lstat`), nanoseconds.
    started_ns: i128,
    fs_types: FastMap<u64, i64>,
    pub stats: Stats,
}

impl std::fmt::Debug for WalkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkCache")
            .field("loaded", &self.loaded.len())
            .field("recorded", &self.out_count)
            .field("stats", &self.stats)
            .finish()
    }
}

/// Wall-clock time (`CLOCK_REALTIME`, the clock file stamps come from), nanoseconds; 0 when
/// the clock is before 1970 (nothing is then trusted).
pub(crate) fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

impl WalkCache {
    /// An empty cache (every folder is listed; trusted listings are recorded).
    pub fn empty() -> WalkCache {
        WalkCache::starting_at(now_ns())
    }

    fn starting_at(started_ns: i128) -> WalkCache {
        WalkCache {
            data: Vec::new(),
            loaded: FastMap::default(),
            kept: Vec::new(),
            out: Vec::new(),
            out_count: 0,
            written: FastMap::default(),
            started_ns,
            fs_types: FastMap::default(),
            stats: Stats::default(),
        }
    }

    /// The cache recorded in `path` (the owner's file, beside the state file). A missing,
    /// unreadable, oversized or damaged file gives an empty cache: the walk then lists
    /// every folder.
    pub fn load(path: &Path) -> WalkCache {
        let started = now_ns();
        let mut c = WalkCache::starting_at(started);
        let Ok(bytes) = read_owner_file(path) else {
            return c;
        };
        if c.parse(bytes).is_none() {
            c = WalkCache::starting_at(started);
        }
        c
    }

    fn parse(&mut self, bytes: Vec<u8>) -> Option<()> {
        self.data = bytes;
        let d = &self.data;
        if d.get(..MAGIC.len())? != MAGIC {
            return None;
        }
        let mut at = MAGIC.len();
        let n = u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        // Sized once (no rehash while loading); a record takes at least `FolderKey::LEN + 4`
        // bytes, so a damaged count cannot make it reserve more than the file could hold.
        let cap = (n as usize).min(d.len() / (FolderKey::LEN + 4));
        self.loaded.reserve(cap);
        self.written.reserve(cap);
        self.kept.reserve(cap);
        for _ in 0..n {
            let start = at;
            let key = FolderKey::from_bytes(d.get(at..at + FolderKey::LEN)?)?;
            at += FolderKey::LEN;
            let count = u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?) as usize;
            at += 4;
            let entries = at..at.checked_add(count.checked_mul(3)?)?;
            let lens = d.get(entries.clone())?;
            let mut names = 0usize;
            let mut has_dirs = false;
            for e in lens.chunks_exact(3) {
                names += usize::from(u16::from_le_bytes([e[0], e[1]]));
                if kind_byte(e[2]) == DT_DIR {
                    has_dirs = true;
                }
                // Never recorded: a kind the walk would have to look up.
                if kind_byte(e[2]) == DT_UNKNOWN {
                    return None;
                }
            }
            at = entries.end.checked_add(names)?;
            d.get(entries.end..at)?;
            self.loaded.insert(
                (key.dev, key.ino),
                Recorded {
                    key,
                    span: start..at,
                    entries,
                    count,
                    has_dirs,
                },
            );
        }
        (at == d.len()).then_some(())
    }

    /// The file system type of device `dev`, when this run has seen it.
    pub(crate) fn fs_of(&self, dev: u64) -> Option<i64> {
        self.fs_types.get(&dev).copied()
    }

    pub(crate) fn note_fs(&mut self, dev: u64, fs: i64) {
        self.fs_types.insert(dev, fs);
    }

    /// The key of a folder from its `lstat`/`fstat`, when its file system type is known.
    pub(crate) fn key_of(&self, st: &FileStat) -> Option<FolderKey> {
        Some(FolderKey {
            dev: st.st_dev,
            ino: st.st_ino,
            ctime: (st.st_ctime, st.st_ctime_nsec),
            mtime: (st.st_mtime, st.st_mtime_nsec),
            fs: self.fs_of(st.st_dev)?,
        })
    }

    /// Is a listing of a folder with this key one the cache may record (and use)?
    fn trusted(&self, key: &FolderKey) -> bool {
        let ctime = i128::from(key.ctime.0) * 1_000_000_000 + i128::from(key.ctime.1);
        TRUSTED_FS.iter().any(|(t, _)| *t == key.fs) && ctime < self.started_ns - RACY_MARGIN_NS
    }

    /// Is there a usable record for this key, and does its listing hold a folder?
    pub(crate) fn peek(&self, key: &FolderKey) -> Option<bool> {
        let r = self.loaded.get(&(key.dev, key.ino))?;
        (r.key == *key && self.trusted(key)).then_some(r.has_dirs)
    }

    /// The recorded listing of a folder with exactly this key (a trusted one), copied into
    /// `names`/`slots` in the walk's format. Returns whether the folder has subfolders, or
    /// `None` when there is no such record.
    pub(crate) fn reuse(
        &mut self,
        key: &FolderKey,
        names: &mut Vec<u8>,
        slots: &mut Vec<(u32, u16, u8)>,
    ) -> Option<bool> {
        let r = self.loaded.get(&(key.dev, key.ino))?;
        if r.key != *key || !self.trusted(key) {
            return None;
        }
        let d = &self.data;
        let mut name_at = r.entries.end;
        names.clear();
        slots.clear();
        names.extend_from_slice(&d[name_at..r.span.end]);
        name_at = 0;
        for e in d[r.entries.clone()].chunks_exact(3) {
            let len = u16::from_le_bytes([e[0], e[1]]);
            slots.push((name_at as u32, len, e[2]));
            name_at += usize::from(len);
        }
        debug_assert_eq!(slots.len(), r.count);
        let has_dirs = r.has_dirs;
        if self.written.insert((key.dev, key.ino), ()).is_none() {
            self.kept.push(r.span.clone());
            self.out_count += 1;
        }
        self.stats.reused += 1;
        Some(has_dirs)
    }

    /// A folder was listed now: record its listing when its key is trusted. `key` must come
    /// from a stat taken before the listing was read. Returns where the record's entries
    /// start in this run's records, for [`WalkCache::hint`].
    pub(crate) fn listed(
        &mut self,
        key: Option<FolderKey>,
        names: &[u8],
        slots: &[(u32, u16, u8)],
    ) -> Option<usize> {
        self.stats.listed += 1;
        let Some(key) = key.filter(|k| self.trusted(k)) else {
            self.stats.not_recorded += 1;
            return None;
        };
        if slots.iter().any(|s| kind_byte(s.2) == DT_UNKNOWN) || slots.len() > u32::MAX as usize {
            self.stats.not_recorded += 1;
            return None;
        }
        if self.written.insert((key.dev, key.ino), ()).is_some() {
            return None;
        }
        key.to_bytes(&mut self.out);
        self.out
            .extend_from_slice(&(slots.len() as u32).to_le_bytes());
        let at = self.out.len();
        for &(_, len, t) in slots {
            self.out.extend_from_slice(&len.to_le_bytes());
            self.out.push(t);
        }
        for &(s, len, _) in slots {
            self.out
                .extend_from_slice(&names[s as usize..s as usize + usize::from(len)]);
        }
        self.out_count += 1;
        Some(at)
    }

    /// Set or clear [`HINT_HAS_DIRS`] on entry `i` of the record listed now whose entries
    /// start at `at` ([`WalkCache::listed`]): whether that entry, a folder, has subfolders.
    pub(crate) fn hint(&mut self, at: usize, i: usize, has_dirs: bool) {
        if let Some(t) = self.out.get_mut(at + 3 * i + 2) {
            if kind_byte(*t) == DT_DIR {
                *t = if has_dirs {
                    DT_DIR | HINT_HAS_DIRS
                } else {
                    DT_DIR
                };
            }
        }
    }

    /// This run's records in the file's format: every folder walked whose listing is
    /// trusted (records of folders not walked this time are dropped).
    pub fn to_bytes(&self) -> Vec<u8> {
        let kept: usize = self.kept.iter().map(|r| r.len()).sum();
        let mut b = Vec::with_capacity(MAGIC.len() + 4 + kept + self.out.len());
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.out_count.to_le_bytes());
        for r in &self.kept {
            b.extend_from_slice(&self.data[r.clone()]);
        }
        b.extend_from_slice(&self.out);
        b
    }

    /// Does writing [`WalkCache::to_bytes`] change what the next run reuses? (Not when every
    /// folder was reused and none of the loaded records went unused.)
    pub fn changed(&self) -> bool {
        self.stats.listed > 0 || self.out_count as usize != self.loaded.len()
    }
}

pub(crate) const DT_UNKNOWN: u8 = 0;
pub(crate) const DT_DIR: u8 = 4;

/// Read the record file: a regular file (no link followed at the last component), bounded.
pub(crate) fn read_owner_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW).bits())
        .open(path)?;
    let md = f.metadata()?;
    if !md.is_file() || md.len() > FILE_LIMIT {
        return Err(std::io::Error::other("not a regular file of a sane size"));
    }
    crate::fsx::read_whole(&f, md.len(), FILE_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::walk::Walk;
    use std::path::Path;

    /// Every entry of a walk (path, depth, kind, has `HEAD`), as the audit sees them.
    fn walk(root: &Path, cache: Option<&mut WalkCache>) -> Vec<String> {
        let mut w = Walk::with_cache(root, 40, cache);
        let mut out = Vec::new();
        while let Some(e) = w.next() {
            match e {
                Ok(e) => out.push(format!(
                    "{} {} {:?} {:?}",
                    e.path().display(),
                    e.depth(),
                    e.file_type(),
                    e.has_child("HEAD")
                )),
                Err(e) => out.push(format!("error {e}")),
            }
        }
        out
    }

    fn tree(r: &Path) {
        for d in ["a/x", "b/y", "c/z", "d/e/f", "keep/k1/k2", "rep"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        for f in ["a/x/1", "b/y/2", "c/z/3", "d/e/f/4", "keep/k1/k2/5", "top"] {
            std::fs::write(r.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink("/etc", r.join("a/link")).unwrap();
    }

    /// A record as the next check loads it: written, then read from a file.
    fn reload(c: &WalkCache, dir: &Path) -> WalkCache {
        let p = dir.join("state.json.walk");
        std::fs::write(&p, c.to_bytes()).unwrap();
        WalkCache::load(&p)
    }

    /// Set a folder's mtime and atime back to what they were (what `touch -d` does): the
    /// kernel moves its ctime to now all the same.
    fn restore_times(dir: &Path, m: &std::fs::Metadata) {
        let f = std::fs::File::open(dir).unwrap();
        f.set_times(
            std::fs::FileTimes::new()
                .set_modified(m.modified().unwrap())
                .set_accessed(m.accessed().unwrap()),
        )
        .unwrap();
        let now = std::fs::metadata(dir).unwrap();
        assert_eq!(now.modified().unwrap(), m.modified().unwrap());
    }

    #[test]
    fn unchanged_folders_are_reused_and_every_change_the_agent_can_make_is_seen() {
        let t = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(t.path()).unwrap().join("w");
        tree(&r);
        let fs = nix::sys::statfs::statfs(&r).unwrap().filesystem_type().0;
        if !TRUSTED_FS.iter().any(|(t, _)| *t == fs) {
            let why =
                format!("the temporary folder's file system ({fs:#x}) is not one the cache trusts");
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
            eprintln!("SKIPPED: {why}");
            return;
        }
        // Older than the racy margin when recorded.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let plain = walk(&r, None);
        let mut first = WalkCache::empty();
        assert_eq!(walk(&r, Some(&mut first)), plain);
        assert_eq!(first.stats.reused, 0);
        assert_eq!(first.stats.not_recorded, 0, "{first:?}");
        let mut second = reload(&first, state.path());
        assert_eq!(walk(&r, Some(&mut second)), plain);
        assert_eq!(second.stats.listed, 0, "{second:?}");
        assert!(second.stats.reused >= 13, "{second:?}");
        assert!(!second.changed());

        // 1. A repository planted in a recorded folder, its mtime and atime put back.
        let m = std::fs::metadata(r.join("a/x")).unwrap();
        std::fs::create_dir_all(r.join("a/x/.git/objects")).unwrap();
        std::fs::create_dir_all(r.join("a/x/.git/refs")).unwrap();
        std::fs::write(r.join("a/x/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        restore_times(&r.join("a/x"), &m);
        // 2. A `HEAD` added (a bare-shaped folder), times put back.
        let m = std::fs::metadata(r.join("c/z")).unwrap();
        std::fs::write(r.join("c/z/HEAD"), "ref: refs/heads/main\n").unwrap();
        restore_times(&r.join("c/z"), &m);
        // 3. A recorded folder replaced by another with the same names (renamed into place),
        //    and the parent's times put back.
        let m = std::fs::metadata(r.join("b")).unwrap();
        std::fs::create_dir_all(r.join("b2/y/.git")).unwrap();
        std::fs::write(r.join("b2/y/2"), "x").unwrap();
        std::fs::rename(r.join("b"), r.join("old-b")).unwrap();
        std::fs::rename(r.join("b2"), r.join("b")).unwrap();
        std::fs::rename(r.join("old-b"), t.path().join("old-b")).unwrap();
        restore_times(&r.join("b"), &m);
        // 4. A file swapped for a folder of the same name in a leaf folder.
        let m = std::fs::metadata(r.join("d/e/f")).unwrap();
        std::fs::remove_file(r.join("d/e/f/4")).unwrap();
        std::fs::create_dir(r.join("d/e/f/4")).unwrap();
        std::fs::write(r.join("d/e/f/4/HEAD"), "ref: refs/heads/main\n").unwrap();
        restore_times(&r.join("d/e/f"), &m);

        // Past the margin again: the changed folders' new keys are trusted too, so only
        // their ctime (which `utimensat` cannot set back) tells them from the record.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let plain = walk(&r, None);
        let mut third = reload(&second, state.path());
        let cached = walk(&r, Some(&mut third));
        assert_eq!(cached, plain);
        for want in [
            "a/x/.git 3 Dir Some(true)",
            "c/z 2 Dir Some(true)",
            "b/y/.git 3 Dir",
            "d/e/f/4 4 Dir Some(true)",
        ] {
            assert!(
                cached.iter().any(|l| l.contains(want)),
                "{want}: {cached:#?}"
            );
        }
        // The untouched folders still come from the record.
        assert!(third.stats.reused >= 5, "{third:?}");
        assert!(third.stats.listed >= 4, "{third:?}");
        // A record written from both the records kept as loaded (copied from the loaded
        // file only when written) and those listed now: the next walk reuses every folder.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let mut fourth = reload(&third, state.path());
        assert_eq!(fourth.loaded.len(), third.out_count as usize);
        assert_eq!(walk(&r, Some(&mut fourth)), plain);
        assert_eq!(fourth.stats.listed, 0, "{fourth:?}");
        assert!(!fourth.changed());
    }

    /// Set [`HINT_HAS_DIRS`] on every entry of every record of a record file (what a
    /// forged or damaged record could hold), the file's format otherwise kept.
    fn hint_every_entry(p: &Path) {
        let mut d = std::fs::read(p).unwrap();
        let mut at = MAGIC.len();
        let n = u32::from_le_bytes(d[at..at + 4].try_into().unwrap());
        at += 4;
        for _ in 0..n {
            at += FolderKey::LEN;
            let count = u32::from_le_bytes(d[at..at + 4].try_into().unwrap()) as usize;
            at += 4;
            let mut names = 0;
            for e in 0..count {
                names += usize::from(u16::from_le_bytes([d[at + 3 * e], d[at + 3 * e + 1]]));
                d[at + 3 * e + 2] |= HINT_HAS_DIRS;
            }
            at += 3 * count + names;
        }
        assert_eq!(at, d.len());
        std::fs::write(p, d).unwrap();
    }

    fn trusted_here(r: &Path) -> bool {
        let fs = nix::sys::statfs::statfs(r).unwrap().filesystem_type().0;
        if TRUSTED_FS.iter().any(|(t, _)| *t == fs) {
            return true;
        }
        let why =
            format!("the temporary folder's file system ({fs:#x}) is not one the cache trusts");
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("SKIPPED: {why}");
        false
    }

    #[test]
    fn folders_hinted_to_have_subfolders_are_opened_without_an_lstat_and_forged_hints_change_nothing(
    ) {
        let t = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(t.path()).unwrap().join("w");
        tree(&r);
        if !trusted_here(&r) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let plain = walk(&r, None);
        // The first walk has no record: every folder below the root is `lstat`ed first
        // (13), then every folder opened and listed (14, the root included).
        let mut first = WalkCache::empty();
        assert_eq!(walk(&r, Some(&mut first)), plain);
        assert_eq!(
            (first.stats.looked_up, first.stats.opened),
            (13, 14),
            "{first:?}"
        );
        // The next one: the 7 folders below the root with subfolders are opened right away
        // (hinted by their parents' records), only the 6 without are `lstat`ed (and not
        // opened: 8 opened, the root included).
        let mut second = reload(&first, state.path());
        assert_eq!(walk(&r, Some(&mut second)), plain);
        assert_eq!(
            (second.stats.looked_up, second.stats.opened),
            (6, 8),
            "{second:?}"
        );
        assert_eq!(second.stats.listed, 0, "{second:?}");
        assert!(!second.changed());

        // Hints on every entry (files, links and folders without subfolders too): the
        // same entries, every folder opened (positive control: the hints were read), and
        // still every listing from the record.
        let p = state.path().join("state.json.walk");
        hint_every_entry(&p);
        let mut forged = WalkCache::load(&p);
        assert_eq!(walk(&r, Some(&mut forged)), plain);
        assert_eq!(
            (forged.stats.looked_up, forged.stats.opened),
            (0, 14),
            "{forged:?}"
        );
        assert_eq!(forged.stats.listed, 0, "{forged:?}");

        // A folder hinted to have subfolders that lost them, and one hinted to have none
        // that gained one, their times put back: seen as in a walk without a record.
        let m = std::fs::metadata(r.join("keep/k1")).unwrap();
        std::fs::remove_file(r.join("keep/k1/k2/5")).unwrap();
        std::fs::remove_dir(r.join("keep/k1/k2")).unwrap();
        restore_times(&r.join("keep/k1"), &m);
        let m = std::fs::metadata(r.join("rep")).unwrap();
        std::fs::create_dir_all(r.join("rep/.git/objects")).unwrap();
        restore_times(&r.join("rep"), &m);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let plain = walk(&r, None);
        let mut third = reload(&second, state.path());
        let cached = walk(&r, Some(&mut third));
        assert_eq!(cached, plain);
        assert!(
            cached.iter().any(|l| l.contains("rep/.git 2 Dir")),
            "{cached:#?}"
        );
        assert!(!cached.iter().any(|l| l.contains("k2")), "{cached:#?}");
    }

    #[test]
    fn a_version_1_record_is_not_read() {
        let t = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(t.path()).unwrap().join("w");
        tree(&r);
        if !trusted_here(&r) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let mut first = WalkCache::empty();
        walk(&r, Some(&mut first));
        let mut bytes = first.to_bytes();
        // Positive control: as written, the record is used.
        let p = state.path().join("v.walk");
        std::fs::write(&p, &bytes).unwrap();
        let mut again = WalkCache::load(&p);
        walk(&r, Some(&mut again));
        assert!(again.stats.reused > 0, "{again:?}");
        // The same records under the version-1 magic: every folder listed.
        bytes[..MAGIC.len()].copy_from_slice(b"gitward-walk-v1\n");
        std::fs::write(&p, &bytes).unwrap();
        let mut old = WalkCache::load(&p);
        walk(&r, Some(&mut old));
        assert_eq!(old.stats.reused, 0, "{old:?}");
    }

    #[test]
    fn a_folder_changed_within_the_racy_margin_is_not_recorded() {
        let t = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let r = t.path().join("w");
        tree(&r);
        // Recorded right away: every folder's ctime is within the margin.
        let mut first = WalkCache::empty();
        walk(&r, Some(&mut first));
        assert_eq!(first.stats.not_recorded, first.stats.listed, "{first:?}");
        let mut second = reload(&first, state.path());
        walk(&r, Some(&mut second));
        assert_eq!(second.stats.reused, 0, "{second:?}");
    }

    #[test]
    fn keys_from_other_file_systems_or_the_future_are_not_trusted() {
        let c = WalkCache::starting_at(10 * 1_000_000_000);
        let key = |fs, ctime| FolderKey {
            dev: 1,
            ino: 2,
            ctime: (ctime, 0),
            mtime: (ctime, 0),
            fs,
        };
        assert!(c.trusted(&key(0xEF53, 5)));
        // 0x65735546: FUSE; 0x6969: NFS; 0x794c7630: overlayfs.
        for fs in [0x6573_5546, 0x6969, 0x794c_7630] {
            assert!(!c.trusted(&key(fs, 5)));
        }
        assert!(!c.trusted(&key(0xEF53, 9)), "within the margin");
        assert!(!c.trusted(&key(0xEF53, 11)), "after the start");
    }

    #[test]
    fn a_damaged_record_is_an_empty_one() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("w");
        tree(&r);
        let mut c = WalkCache::starting_at(now_ns() + 5_000_000_000);
        walk(&r, Some(&mut c));
        let good = c.to_bytes();
        assert!(good.len() > MAGIC.len() + 4);
        let p = t.path().join("x.walk");
        for bad in [
            good[..good.len() - 1].to_vec(),
            [good.as_slice(), b"x"].concat(),
            b"gitward-walk-v0\n\0\0\0\0".to_vec(),
            Vec::new(),
        ] {
            std::fs::write(&p, &bad).unwrap();
            let l = WalkCache::load(&p);
            assert!(l.loaded.is_empty(), "{l:?}");
        }
        // A link at the record's place is not followed.
        std::fs::write(t.path().join("real"), &good).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(t.path().join("real"), &p).unwrap();
        assert!(WalkCache::load(&p).loaded.is_empty());
    }
}
