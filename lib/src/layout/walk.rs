//! A fast, no-follow, depth-first walk of a folder tree, for the search of nested
//! repositories (`crate::audit`'s workspace walk, which `wt-check check` runs over every work
//! tree the owner's git works in).
//!
//! Why its own walker: a work tree can hold a build folder of hundreds of thousands of
//! entries (`target/`, `node_modules/`), ignored by git but still a place where the owner's
//! git, run there, discovers a repository — so it cannot be skipped, and it must be cheap.
//! Per folder: one `openat` relative to the parent's descriptor (`O_NOFOLLOW |
//! O_DIRECTORY`: a folder swapped for a link between the listing and the open is refused,
//! never followed), `getdents64` into a reused buffer, the names kept in one byte buffer per
//! folder and sorted as offsets. Per entry: no system call (the kind comes from `d_type`; an
//! `fstatat` only where the file system does not fill it) and no allocation; the path of the
//! current entry is one buffer pushed and popped.
//!
//! Order and bounds are walkdir's with `sort_by_file_name`, `follow_links(false)` and
//! `max_depth`: the root first (depth 0), then each folder's entries sorted by name bytes,
//! a folder's contents right after it. A folder's listing is read before the folder is
//! handed out, so [`Entry::has_child`] answers from it; a listing that fails is handed out
//! as an error right after the folder.

use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

pub use super::walk_cache::WalkCache;
use super::walk_cache::{kind_byte, HINT_HAS_DIRS};

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// [`DIR_FLAGS`] for a descriptor used only to `fstat` the folder and to reach its
/// entries (`O_PATH`: no link followed either, `O_DIRECTORY` refusing one).
const PATH_FLAGS: OFlag = OFlag::O_PATH
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

const DT_UNKNOWN: u8 = 0;
const DT_DIR: u8 = 4;
const DT_LNK: u8 = 10;
const DT_REG: u8 = 8;

/// What an entry is, as the listing (or an `lstat` of it) says; links are never followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkKind {
    Dir,
    File,
    Symlink,
    /// A fifo, socket or device.
    Other,
}

impl WalkKind {
    pub fn is_dir(self) -> bool {
        self == WalkKind::Dir
    }
    pub fn is_symlink(self) -> bool {
        self == WalkKind::Symlink
    }
    fn from_dtype(t: u8) -> Option<WalkKind> {
        match kind_byte(t) {
            DT_DIR => Some(WalkKind::Dir),
            DT_REG => Some(WalkKind::File),
            DT_LNK => Some(WalkKind::Symlink),
            DT_UNKNOWN => None,
            _ => Some(WalkKind::Other),
        }
    }
}

/// A folder that could not be opened or listed.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot {op}: {source}", path.display())]
pub struct WalkError {
    pub path: PathBuf,
    pub op: &'static str,
    #[source]
    pub source: std::io::Error,
}

impl WalkError {
    pub fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// One entry of the walk; its path borrows the walker's buffer.
#[derive(Debug)]
pub struct Entry<'a> {
    path: &'a Path,
    depth: usize,
    kind: WalkKind,
    /// The folder's own listing (folders only, when it was read).
    listing: Option<&'a Listing>,
}

impl Entry<'_> {
    pub fn path(&self) -> &Path {
        self.path
    }
    pub fn depth(&self) -> usize {
        self.depth
    }
    pub fn file_type(&self) -> WalkKind {
        self.kind
    }
    /// The last component of the path (the whole path for a root without one).
    pub fn file_name(&self) -> &OsStr {
        let b = self.path.as_os_str().as_bytes();
        match b.iter().rposition(|c| *c == b'/') {
            Some(i) if i + 1 < b.len() => OsStr::from_bytes(&b[i + 1..]),
            _ => self.path.as_os_str(),
        }
    }
    /// Is `name` the name of this folder's child (answered from its listing)? `None` when
    /// the entry is not a folder or its listing could not be read: the caller must look.
    pub fn has_child(&self, name: &str) -> Option<bool> {
        self.listing.map(|l| l.find(name.as_bytes()).is_some())
    }
}

/// One folder's sorted listing: names in one buffer, sorted `(start, len, d_type)` slots.
#[derive(Debug, Default)]
pub struct Listing {
    names: Vec<u8>,
    slots: Vec<(u32, u16, u8)>,
}

impl Listing {
    fn name(&self, i: usize) -> &[u8] {
        let (s, l, _) = self.slots[i];
        &self.names[s as usize..s as usize + l as usize]
    }
    fn find(&self, name: &[u8]) -> Option<usize> {
        self.slots
            .binary_search_by(|&(s, l, _)| {
                self.names[s as usize..s as usize + l as usize].cmp(name)
            })
            .ok()
    }
}

struct Frame {
    /// `None` only for a folder whose recorded listing ([`WalkCache`]) holds no folder: it
    /// is never opened (its entries' kinds are in the record).
    fd: Option<OwnedFd>,
    /// Where this folder's record starts in the walk record's new records, when it was
    /// listed and recorded now: its subfolders' hints are set there as they are entered.
    recorded_at: Option<usize>,
    listing: Listing,
    next: usize,
    /// Length of the walker's path buffer for this folder.
    path_len: usize,
    depth: usize,
}

/// The walker. Use as `while let Some(e) = walk.next() { … walk.skip_current_dir() … }`.
/// Most entries [`Walk::skip_plain_files`] passes over in a row.
pub const SKIP_RUN: usize = 1 << 16;

pub struct Walk<'c> {
    root: PathBuf,
    max_depth: usize,
    stack: Vec<Frame>,
    path: PathBuf,
    buf: Vec<u8>,
    started: bool,
    /// The folder just handed out; `skip_current_dir` drops its frame.
    current_frame: bool,
    pending_error: Option<WalkError>,
    /// Frames given up (listings dropped), reused to keep their buffers.
    spare: Vec<Listing>,
    /// Listings recorded by an earlier walk, reused for folders whose key is unchanged.
    cache: Option<&'c mut WalkCache>,
    /// [`Walk::skip_plain_files`]: files and links not named `.git` are counted there, not
    /// handed out.
    skip_plain: Option<&'c std::cell::Cell<usize>>,
    /// Entries passed over since the last one handed out.
    run: usize,
}

impl Walk<'static> {
    pub fn new(root: &Path, max_depth: usize) -> Walk<'static> {
        Walk::with_cache(root, max_depth, None)
    }
}

impl<'c> Walk<'c> {
    /// A walk that takes the listing of a folder whose [`super::walk_cache::FolderKey`]
    /// equals a recorded one from `cache` instead of reading it, and records the listings
    /// it reads. The entries handed out are the same as [`Walk::new`]'s.
    pub fn with_cache(root: &Path, max_depth: usize, cache: Option<&'c mut WalkCache>) -> Walk<'c> {
        Walk {
            root: root.to_path_buf(),
            max_depth,
            stack: Vec::new(),
            path: root.to_path_buf(),
            buf: vec![0; 64 << 10],
            started: false,
            current_frame: false,
            pending_error: None,
            spare: Vec::new(),
            cache,
            skip_plain: None,
            run: 0,
        }
    }

    /// Pass over regular files and symbolic links not named `.git` instead of handing them
    /// out (for a caller that looks only at folders, `.git` entries and fifos, sockets and
    /// devices: the nested-repository audit), adding one to `count` for each. At most
    /// [`SKIP_RUN`] are passed over in a row: the caller's bound on the entries walked is
    /// checked at least that often. The order and the folders walked are unchanged.
    pub fn skip_plain_files(mut self, count: &'c std::cell::Cell<usize>) -> Self {
        self.skip_plain = Some(count);
        self
    }

    /// Do not walk the contents of the folder just handed out.
    pub fn skip_current_dir(&mut self) {
        if self.current_frame {
            self.current_frame = false;
            if let Some(f) = self.stack.pop() {
                self.recycle(f);
            }
        }
    }

    fn recycle(&mut self, f: Frame) {
        let mut l = f.listing;
        l.names.clear();
        l.slots.clear();
        self.spare.push(l);
    }

    /// The next entry, or an error for a folder that could not be read.
    #[allow(clippy::should_implement_trait)] // a lending iterator: entries borrow the walker
    pub fn next(&mut self) -> Option<Result<Entry<'_>, WalkError>> {
        self.current_frame = false;
        if let Some(e) = self.pending_error.take() {
            return Some(Err(e));
        }
        if !self.started {
            self.started = true;
            let root = self.root.clone();
            let mut listing = self.spare.pop().unwrap_or_default();
            let fd = open_and_list(
                None,
                root.as_os_str(),
                false,
                self.cache.as_deref_mut(),
                &mut self.buf,
                &mut listing,
            );
            return Some(self.enter(fd, listing, root.as_os_str().len(), 0, WalkKind::Dir));
        }
        loop {
            let top = self.stack.last_mut()?;
            if top.next >= top.listing.slots.len() {
                let f = self.stack.pop().expect("a frame");
                self.recycle(f);
                continue;
            }
            let i = top.next;
            top.next += 1;
            let depth = top.depth + 1;
            let top = self.stack.last().expect("a frame");
            let name_bytes = top.listing.name(i);
            let dtype = top.listing.slots[i].2;
            let name = OsStr::from_bytes(name_bytes);
            let kind = match WalkKind::from_dtype(dtype) {
                Some(k) => k,
                // (A folder without a handle has a recorded listing, which never holds an
                // unknown kind; `File` there, like a name gone since the listing, is never
                // descended into and the caller's own read of it meets the truth.)
                None => match top
                    .fd
                    .as_ref()
                    .map(|fd| fstatat(fd, name, AtFlags::AT_SYMLINK_NOFOLLOW))
                {
                    Some(Ok(st)) => kind_of(&st),
                    // Gone since the listing: handed out as a file (no descent); the
                    // caller's own read of it meets the error.
                    Some(Err(_)) | None => WalkKind::File,
                },
            };
            if let Some(count) = self.skip_plain {
                // A link at a name git opens by name is handed out: where it leads decides
                // whether git's open blocks (R11-9).
                let opened_link = kind == WalkKind::Symlink
                    && crate::catalogue::OPENED_BY_NAME
                        .iter()
                        .any(|n| n.as_bytes() == name_bytes);
                if matches!(kind, WalkKind::File | WalkKind::Symlink)
                    && name_bytes != b".git"
                    && !opened_link
                    && self.run < SKIP_RUN
                {
                    self.run += 1;
                    count.set(count.get() + 1);
                    continue;
                }
                self.run = 0;
            }
            // The path of the entry: the parent's, one component pushed.
            let mut bytes = std::mem::take(&mut self.path).into_os_string().into_vec();
            bytes.truncate(top.path_len);
            if bytes.last() != Some(&b'/') {
                bytes.push(b'/');
            }
            bytes.extend_from_slice(name_bytes);
            self.path = PathBuf::from(std::ffi::OsString::from_vec(bytes));
            if kind != WalkKind::Dir || depth >= self.max_depth {
                return Some(Ok(Entry {
                    path: &self.path,
                    depth,
                    kind,
                    listing: None,
                }));
            }
            // No-follow: a folder swapped for a link since the listing is refused (ELOOP).
            let mut listing = self.spare.pop().unwrap_or_default();
            let hinted = dtype & HINT_HAS_DIRS != 0;
            let parent_recorded_at = top.recorded_at;
            let fd = match top.fd.as_ref() {
                Some(parent) => open_and_list(
                    Some(parent),
                    name,
                    hinted,
                    self.cache.as_deref_mut(),
                    &mut self.buf,
                    &mut listing,
                ),
                None => Err(("open", Errno::EBADF)),
            };
            // The parent was recorded now: hint on its entry whether this folder has
            // subfolders, for the next walk.
            if let (Some(at), Some(c), Ok(_)) = (parent_recorded_at, self.cache.as_deref_mut(), &fd)
            {
                let has_dirs = listing.slots.iter().any(|s| kind_byte(s.2) == DT_DIR);
                c.hint(at, i, has_dirs);
            }
            let path_len = self.path.as_os_str().len();
            return Some(self.enter(fd, listing, path_len, depth, WalkKind::Dir));
        }
    }

    /// Hand out the folder at `self.path`, its listing read (a frame pushed) when it opened.
    fn enter(
        &mut self,
        fd: Result<OpenedFolder, (&'static str, Errno)>,
        mut listing: Listing,
        path_len: usize,
        depth: usize,
        kind: WalkKind,
    ) -> Result<Entry<'_>, WalkError> {
        let listed = match fd {
            Ok((fd, recorded_at)) => {
                self.stack.push(Frame {
                    fd,
                    recorded_at,
                    listing,
                    next: 0,
                    path_len,
                    depth,
                });
                true
            }
            // ELOOP/ENOTDIR at the open: swapped for a link or a file since the listing.
            Err((op, e)) => {
                self.pending_error = Some(WalkError {
                    path: self.path.to_path_buf(),
                    op,
                    source: std::io::Error::from(e),
                });
                listing.names.clear();
                listing.slots.clear();
                self.spare.push(listing);
                false
            }
        };
        self.current_frame = listed;
        Ok(Entry {
            path: &self.path,
            depth,
            kind,
            listing: if listed {
                self.stack.last().map(|f| &f.listing)
            } else {
                None
            },
        })
    }
}

fn kind_of(st: &FileStat) -> WalkKind {
    match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFDIR => WalkKind::Dir,
        SFlag::S_IFREG => WalkKind::File,
        SFlag::S_IFLNK => WalkKind::Symlink,
        _ => WalkKind::Other,
    }
}

/// A folder opened (or not) and listed: its descriptor, `None` for a folder not opened,
/// and, for a listing recorded now, where its record starts ([`WalkCache::listed`]).
type OpenedFolder = (Option<OwnedFd>, Option<usize>);

/// Open the folder `name` (relative to `parent`, or a path from the current folder for the
/// root; never following a link at the last component) and fill `out` with its listing —
/// read, or taken from `cache` when the folder's key equals a recorded one.
///
/// With a cache, a child folder is `lstat`ed first: a recorded listing with no folder in it
/// is used without opening the folder at all (its entries need no handle). A folder its
/// parent's record hints has subfolders (`hinted`: [`HINT_HAS_DIRS`]) is opened without
/// that `lstat`, which would only say to open it. Otherwise (and then) the key is taken
/// with `fstat` on the opened descriptor, before the listing is read, so a change made
/// while it is read gives the next run another key.
fn open_and_list(
    parent: Option<&OwnedFd>,
    name: &OsStr,
    hinted: bool,
    mut cache: Option<&mut WalkCache>,
    buf: &mut [u8],
    out: &mut Listing,
) -> Result<OpenedFolder, (&'static str, Errno)> {
    out.names.clear();
    out.slots.clear();
    if let (Some(c), Some(p), false) = (cache.as_deref_mut(), parent, hinted) {
        c.stats.looked_up += 1;
        if let Ok(st) = fstatat(p, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            if kind_of(&st) == WalkKind::Dir {
                if let Some(key) = c.key_of(&st) {
                    if c.peek(&key) == Some(false)
                        && c.reuse(&key, &mut out.names, &mut out.slots).is_some()
                    {
                        return Ok((None, None));
                    }
                }
            }
        }
    }
    // With a cache the folder is opened `O_PATH` (what its key and its children's
    // `lstat`s and opens need; cheaper to open and close than a readable descriptor), and
    // opened readable below (`.` of that descriptor: the same folder) only to be listed.
    let flags = if cache.is_some() {
        PATH_FLAGS
    } else {
        DIR_FLAGS
    };
    let fd = match parent {
        Some(p) => openat(p, name, flags, Mode::empty()),
        None => openat(AT_FDCWD, name, flags, Mode::empty()),
    }
    .map_err(|e| ("open", e))?;
    let Some(c) = cache else {
        list(&fd, buf, out).map_err(|e| ("list", e))?;
        return Ok((Some(fd), None));
    };
    c.stats.opened += 1;
    let key = fstat(&fd).ok().and_then(|st| {
        if c.fs_of(st.st_dev).is_none() {
            let fs = nix::sys::statfs::fstatfs(&fd)
                .map(|s| s.filesystem_type().0)
                .unwrap_or(0);
            c.note_fs(st.st_dev, fs);
        }
        c.key_of(&st)
    });
    if let Some(k) = &key {
        if c.reuse(k, &mut out.names, &mut out.slots).is_some() {
            return Ok((Some(fd), None));
        }
    }
    let readable = openat(&fd, ".", DIR_FLAGS, Mode::empty()).map_err(|e| ("open", e))?;
    list(&readable, buf, out).map_err(|e| ("list", e))?;
    let at = c.listed(key, &out.names, &out.slots);
    Ok((Some(fd), at))
}

/// Read the whole folder `fd` into `out`, sorted by name bytes, `.` and `..` left out.
fn list(fd: &OwnedFd, buf: &mut [u8], out: &mut Listing) -> Result<(), Errno> {
    loop {
        let n = crate::fsx::getdents64(fd, buf)?;
        if n == 0 {
            break;
        }
        let mut overflow = false;
        crate::fsx::each_dirent(&buf[..n], |name, d_type| {
            match (u32::try_from(out.names.len()), u16::try_from(name.len())) {
                (Ok(start), Ok(len)) => {
                    out.names.extend_from_slice(name);
                    out.slots.push((start, len, d_type));
                }
                _ => overflow = true,
            }
        })
        .ok_or(Errno::EIO)?;
        if overflow {
            return Err(Errno::EOVERFLOW);
        }
    }
    let names = &out.names;
    out.slots.sort_unstable_by(|&(a, al, _), &(b, bl, _)| {
        names[a as usize..a as usize + al as usize]
            .cmp(&names[b as usize..b as usize + bl as usize])
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(root: &Path, max_depth: usize) -> Vec<(String, usize, WalkKind)> {
        let mut w = Walk::new(root, max_depth);
        let mut out = Vec::new();
        while let Some(e) = w.next() {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            out.push((rel, e.depth(), e.file_type()));
        }
        out
    }

    #[test]
    fn same_order_and_kinds_as_walkdir_sorted() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for d in ["a/b/c", "a/.git", "B", "z/y", "-x"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        for f in ["a/f", "a/b/c/g", "z/y/h", ".hidden", "a/.git/HEAD"] {
            std::fs::write(r.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink("/etc", r.join("a/link")).unwrap();
        nix::unistd::mkfifo(&r.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        for depth in [1, 2, 3, 40] {
            let ours = collect(r, depth);
            let theirs: Vec<_> = walkdir::WalkDir::new(r)
                .follow_links(false)
                .max_depth(depth)
                .sort_by_file_name()
                .into_iter()
                .map(|e| {
                    let e = e.unwrap();
                    let ft = e.file_type();
                    let k = if ft.is_dir() {
                        WalkKind::Dir
                    } else if ft.is_symlink() {
                        WalkKind::Symlink
                    } else if ft.is_file() {
                        WalkKind::File
                    } else {
                        WalkKind::Other
                    };
                    let rel = e.path().strip_prefix(r).unwrap().display().to_string();
                    (rel, e.depth(), k)
                })
                .collect();
            assert_eq!(ours, theirs, "max_depth {depth}");
        }
    }

    /// Passing over plain files hands out exactly the full walk's folders, `.git` entries
    /// (file, folder or link) and special files, in its order, and counts every other entry.
    #[test]
    fn skipping_plain_files_keeps_every_entry_the_audit_looks_at() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for d in ["a/b/c", "a/.git", "B", "z/y", "-x", "w/.git/refs"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        for f in [
            "a/f",
            "a/b/c/g",
            "z/y/h",
            ".hidden",
            "a/.git/HEAD",
            "z/.git",
            "HEAD",
        ] {
            std::fs::write(r.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink("/etc", r.join("a/link")).unwrap();
        std::os::unix::fs::symlink("/nowhere", r.join("B/.git")).unwrap();
        nix::unistd::mkfifo(&r.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        nix::unistd::mkfifo(&r.join("z/HEAD"), Mode::from_bits_truncate(0o600)).unwrap();
        for depth in [1, 2, 3, 40] {
            let all = collect(r, depth);
            let count = std::cell::Cell::new(0);
            let mut w = Walk::new(r, depth).skip_plain_files(&count);
            let mut handed = Vec::new();
            while let Some(e) = w.next() {
                let e = e.unwrap();
                let rel = e.path().strip_prefix(r).unwrap().display().to_string();
                handed.push((rel, e.depth(), e.file_type()));
            }
            let expected: Vec<_> = all
                .iter()
                .filter(|(rel, _, k)| {
                    !matches!(k, WalkKind::File | WalkKind::Symlink)
                        || Path::new(rel).file_name() == Some(OsStr::new(".git"))
                })
                .cloned()
                .collect();
            assert_eq!(handed, expected, "max_depth {depth}");
            assert_eq!(handed.len() + count.get(), all.len(), "max_depth {depth}");
        }
    }

    #[test]
    fn skip_and_has_child() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("a/.git/objects")).unwrap();
        std::fs::create_dir_all(r.join("b")).unwrap();
        std::fs::write(r.join("a/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let mut w = Walk::new(r, 40);
        let mut seen = Vec::new();
        while let Some(e) = w.next() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let head = e.has_child("HEAD");
            seen.push(name.clone());
            if name == ".git" {
                assert_eq!(head, Some(true));
                w.skip_current_dir();
            } else if name == "b" {
                assert_eq!(head, Some(false));
            }
        }
        assert!(
            !seen.iter().any(|n| n == "objects" || n == "HEAD"),
            "{seen:?}"
        );
        assert!(seen.iter().any(|n| n == "b"));
    }

    #[test]
    fn with_a_record_a_folder_swapped_for_a_link_is_an_error_after_it_too() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("r");
        std::fs::create_dir_all(r.join("d/sub")).unwrap();
        std::fs::create_dir_all(r.join("e/sub")).unwrap();
        // The folders are opened `O_PATH` with a record: a link swapped in is refused there
        // too, hinted (opened without an `lstat`) or not.
        let mut cache = WalkCache::empty();
        let mut w = Walk::with_cache(&r, 40, Some(&mut cache));
        let root = w.next().unwrap().unwrap();
        assert_eq!(root.depth(), 0);
        std::fs::remove_dir_all(r.join("d")).unwrap();
        std::os::unix::fs::symlink("/", r.join("d")).unwrap();
        let d = w.next().unwrap().unwrap();
        assert!(d.file_type().is_dir());
        assert_eq!(d.has_child("etc"), None);
        let e = w.next().unwrap().unwrap_err();
        assert!(e.path.ends_with("d"), "{e}");
        let e = w.next().unwrap().unwrap();
        assert!(e.path().ends_with("e"));
        assert_eq!(e.has_child("sub"), Some(true));
        drop(w);
        // Straight through `open_and_list` with the hint: the link is refused at the open.
        let parent = openat(AT_FDCWD, &r, DIR_FLAGS, Mode::empty()).unwrap();
        let mut out = Listing::default();
        let mut buf = vec![0; 4096];
        let got = open_and_list(
            Some(&parent),
            OsStr::new("d"),
            true,
            Some(&mut cache),
            &mut buf,
            &mut out,
        );
        assert!(
            matches!(got, Err(("open", Errno::ENOTDIR | Errno::ELOOP))),
            "{:?}",
            got.map(|_| ())
        );
        // Positive control: the folder beside it opens and lists (through `.` of the
        // `O_PATH` descriptor).
        let got = open_and_list(
            Some(&parent),
            OsStr::new("e"),
            true,
            Some(&mut cache),
            &mut buf,
            &mut out,
        );
        assert!(got.is_ok());
        assert_eq!(out.find(b"sub"), Some(0));
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_an_error_after_it() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("r");
        std::fs::create_dir_all(r.join("d")).unwrap();
        // Open the root, then swap `d` for a link before it is entered.
        let mut w = Walk::new(&r, 40);
        let root = w.next().unwrap().unwrap();
        assert_eq!(root.depth(), 0);
        std::fs::remove_dir(r.join("d")).unwrap();
        std::os::unix::fs::symlink("/", r.join("d")).unwrap();
        // The listing said folder; the open refuses the link.
        let d = w.next().unwrap().unwrap();
        assert!(d.file_type().is_dir());
        assert_eq!(d.has_child("etc"), None);
        let e = w.next().unwrap().unwrap_err();
        assert!(e.path.ends_with("d"), "{e}");
        assert!(w.next().is_none());
    }
}

/// The audit's workspace walk over this walker still finds what is planted deep in a big
/// ignored build folder: a nested repository with a hook, and a bare-shaped folder with a
/// program-running config.
#[cfg(test)]
mod audit_tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn git_dir(at: &Path) {
        std::fs::create_dir_all(at.join("objects")).unwrap();
        std::fs::create_dir_all(at.join("refs/heads")).unwrap();
        std::fs::write(at.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    #[test]
    fn repositories_planted_in_a_large_build_folder_are_found() {
        let t = tempfile::tempdir().unwrap();
        let outer = std::fs::canonicalize(t.path()).unwrap().join("outer");
        git_dir(&outer.join(".git"));
        std::fs::write(outer.join(".git/info-exclude"), "target/\n").unwrap();
        // 3,000 files in 60 folders around the planted ones.
        for a in 0..60 {
            let d = outer.join(format!("target/debug/deps/d{a}"));
            std::fs::create_dir_all(&d).unwrap();
            for c in 0..50 {
                std::fs::write(d.join(format!("f{c}.o")), "").unwrap();
            }
        }
        let inner = outer.join("target/debug/deps/d31/inner");
        git_dir(&inner.join(".git"));
        let hook = inner.join(".git/hooks/pre-commit");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(&hook, "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bare = outer.join("target/debug/deps/d59/zz/bare");
        git_dir(&bare);
        std::fs::write(bare.join("config"), "[core]\n\tfsmonitor = /tmp/evil\n").unwrap();
        let report = crate::audit::audit(std::slice::from_ref(&outer));
        let armed = |p: &Path| {
            report
                .findings
                .iter()
                .any(|f| f.path.starts_with(p) && f.level > crate::catalogue::Severity::Note)
        };
        assert!(armed(&inner), "{:#?}", report.findings);
        assert!(armed(&bare), "{:#?}", report.findings);
        assert!(
            !report
                .findings
                .iter()
                .any(|f| f.rule == crate::audit::rules::INCOMPLETE.id),
            "{:#?}",
            report.findings
        );
    }
}
