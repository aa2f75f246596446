//! No-follow file system access: every path below a trusted root is opened component by
//! component with `openat` + `O_NOFOLLOW`, so a link swapped in for a folder is refused, never
//! followed.
//!
//! # Why
//!
//! gitward's host-side tools (wt-check, safe-git, settings-watch) read and restore files in
//! folders that a sandboxed agent can write: the work tree and parts of the git folder. A path
//! opened the ordinary way (`open("<repo>/.git/worktrees/x/gitdir")`) follows every symbolic
//! link on the way, so an agent that swaps `worktrees/x` for a link to `~/.config` turns a
//! restore into a write outside the sandbox — and it can do the swap between our check and
//! our write. Checking with `lstat` first does not help (time of check ≠ time of use).
//!
//! # Invariant
//!
//! A [`Root`] is a folder the caller trusts, opened once ([`Root::open`]; links in the
//! caller's own path are resolved there, once). Every operation takes a path *relative* to the
//! root and walks it one component at a time from the root's file descriptor: each folder is
//! opened with `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)` relative to the previous one, and
//! the leaf is opened, stat'ed, renamed or removed relative to its parent's descriptor with
//! `O_NOFOLLOW` / `AT_SYMLINK_NOFOLLOW`. A symbolic link anywhere on the path — including the
//! leaf — is therefore never followed, whatever the agent does concurrently: the kernel
//! refuses the link at the moment of use. `..`, absolute and empty components are refused
//! before any system call ([`FsError::Escape`]).
//!
//! A link found where a folder or file was expected is its own error, [`FsError::Link`], so
//! callers can report "link refused" rather than a generic I/O failure.
//!
//! Linux only (`O_PATH`, `renameat2`, `/proc/self/fd` for `set_mode`).

use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, renameat, renameat2, AtFlags, OFlag, RenameFlags};
use nix::sys::stat::{fchmod, fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{fsync, symlinkat, unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Errors of no-follow file access. Every variant names the full path (root + relative path,
/// up to the component that failed) for display.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// A symbolic link where a folder or file was expected. It was not followed.
    #[error("{}: link refused (a symbolic link where a folder or file was expected; not followed)", .path.display())]
    Link { path: PathBuf },
    /// A path component that must be a folder is something else.
    #[error("{}: not a folder", .path.display())]
    NotDir { path: PathBuf },
    #[error("{}: not found", .path.display())]
    NotFound { path: PathBuf },
    #[error("{}: larger than the limit of {limit} bytes", .path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    /// A file that must be a regular file is another kind (`kind` is [`FileType::name`]).
    #[error("{}: not a regular file ({kind})", .path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The relative path has a `..`, `.`, absolute or empty component.
    #[error("{}: refused path (a `..`, `.`, absolute or empty component would leave or blur the root)", .path.display())]
    Escape { path: PathBuf },
    /// The destination of a move already exists; nothing was replaced.
    #[error("{}: already exists (not replaced)", .path.display())]
    Exists { path: PathBuf },
    #[error("{}: {op}: {source}", .path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl FsError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FsError::Link { path }
            | FsError::NotDir { path }
            | FsError::NotFound { path }
            | FsError::TooLarge { path, .. }
            | FsError::NotRegular { path, .. }
            | FsError::Escape { path }
            | FsError::Exists { path }
            | FsError::Io { path, .. } => path,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, FsError::NotFound { .. })
    }

    pub fn is_link(&self) -> bool {
        matches!(self, FsError::Link { .. })
    }

    fn io(path: PathBuf, op: &'static str, e: Errno) -> Self {
        FsError::Io {
            path,
            op,
            source: std::io::Error::from_raw_os_error(e as i32),
        }
    }
}

/// What an `lstat` found. Links are reported with their target (read, never followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileType {
    /// A regular file; `mode` holds the permission bits (`0o7777`).
    File {
        mode: u32,
        size: u64,
    },
    Dir {
        mode: u32,
    },
    Symlink {
        target: PathBuf,
    },
    Fifo,
    Socket,
    CharDev,
    BlockDev,
}

impl FileType {
    /// A short name for messages: `file`, `folder`, `link`, `fifo`, `socket`, `char device`,
    /// `block device`.
    pub fn name(&self) -> &'static str {
        match self {
            FileType::File { .. } => "file",
            FileType::Dir { .. } => "folder",
            FileType::Symlink { .. } => "link",
            FileType::Fifo => "fifo",
            FileType::Socket => "socket",
            FileType::CharDev => "char device",
            FileType::BlockDev => "block device",
        }
    }
}

/// A folder's entries with their kinds, sorted by name ([`Root::list_kinds`]).
pub type Listing = Vec<(OsString, EntryKind)>;

/// An entry's type as a folder listing gives it ([`Root::list_kinds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    CharDev,
    BlockDev,
}

impl EntryKind {
    fn of(t: &FileType) -> EntryKind {
        match t {
            FileType::File { .. } => EntryKind::File,
            FileType::Dir { .. } => EntryKind::Dir,
            FileType::Symlink { .. } => EntryKind::Symlink,
            FileType::Fifo => EntryKind::Fifo,
            FileType::Socket => EntryKind::Socket,
            FileType::CharDev => EntryKind::CharDev,
            FileType::BlockDev => EntryKind::BlockDev,
        }
    }

    /// The [`FileType::name`] of this kind.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "folder",
            EntryKind::Symlink => "link",
            EntryKind::Fifo => "fifo",
            EntryKind::Socket => "socket",
            EntryKind::CharDev => "char device",
            EntryKind::BlockDev => "block device",
        }
    }
}

/// The result of an `lstat` below a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub file_type: FileType,
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub nlink: u64,
    pub mtime: SystemTime,
}

impl Stat {
    pub fn is_file(&self) -> bool {
        matches!(self.file_type, FileType::File { .. })
    }
    pub fn is_dir(&self) -> bool {
        matches!(self.file_type, FileType::Dir { .. })
    }
    pub fn is_symlink(&self) -> bool {
        matches!(self.file_type, FileType::Symlink { .. })
    }
    /// Size in bytes of a regular file, 0 for anything else.
    pub fn size(&self) -> u64 {
        match self.file_type {
            FileType::File { size, .. } => size,
            _ => 0,
        }
    }
}

/// One entry of [`Root::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: OsString,
    pub stat: Stat,
}

/// How [`Root::write_atomic_with`] treats an existing target that is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Replace only a regular file (or create). A link → [`FsError::Link`], anything else →
    /// [`FsError::NotRegular`]. The default of [`Root::write_atomic`].
    RegularOnly,
    /// Also replace a link, fifo, socket or device node (the entry itself is replaced by the
    /// rename; nothing is written through it). A folder is always refused: move it aside
    /// first ([`Root::move_to`]).
    AnyButFolder,
}

const DIR_WALK: OFlag = OFlag::O_PATH
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// Deepest folder tree copied by a cross-filesystem [`Root::move_to`].
const MAX_COPY_DEPTH: usize = 256;

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A trusted folder, opened once. See the module documentation for the invariant.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

impl Root {
    /// Is the folder `rel` certainly absent ([`absent_at_once`])? `false` when it is there or
    /// the answer is anything but "no such name": walk it then.
    pub fn certainly_absent(&self, rel: &Path) -> bool {
        absent_at_once(&self.fd, rel)
    }

    /// Opens the trusted folder `path`. Links in `path` itself are resolved here, once (the
    /// caller vouches for its own path); nothing below the root is ever resolved through a
    /// link.
    pub fn open(path: impl AsRef<Path>) -> Result<Root, FsError> {
        let path = path.as_ref();
        let canon = std::fs::canonicalize(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => FsError::NotFound {
                path: path.to_path_buf(),
            },
            _ => FsError::Io {
                path: path.to_path_buf(),
                op: "resolve",
                source,
            },
        })?;
        let fd = nix::fcntl::open(
            &canon,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::ENOTDIR => FsError::NotDir {
                path: canon.clone(),
            },
            Errno::ENOENT => FsError::NotFound {
                path: canon.clone(),
            },
            e => FsError::io(canon.clone(), "open", e),
        })?;
        Ok(Root { fd, path: canon })
    }

    /// The folder `path` opened for reading its entries (`O_RDONLY | O_DIRECTORY |
    /// O_NOFOLLOW`: a link at its last component is refused as [`FsError::Link`], anything but
    /// a folder fails before it is opened) and listed through that descriptor as
    /// [`Root::list_kinds`] lists. Links in the folders above it are followed (the caller
    /// vouches for its own path, as for [`Root::open`]); unlike `open`, the path is not
    /// canonicalised (no `realpath`): [`Root::path`] is `path` as given, and names the folder
    /// in what the caller reports.
    pub fn open_listed(path: &Path) -> Result<(Root, Listing), FsError> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, Mode::empty()).map_err(|e| match e {
            Errno::ENOENT => FsError::NotFound {
                path: path.to_path_buf(),
            },
            Errno::ELOOP => FsError::Link {
                path: path.to_path_buf(),
            },
            Errno::ENOTDIR => match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => FsError::Link {
                    path: path.to_path_buf(),
                },
                _ => FsError::NotDir {
                    path: path.to_path_buf(),
                },
            },
            e => FsError::io(path.to_path_buf(), "open", e),
        })?;
        let kinds = kinds_of(&fd, path)?;
        Ok((
            Root {
                fd,
                path: path.to_path_buf(),
            },
            kinds,
        ))
    }

    /// The file system root `/`, from which an absolute path can be walked without following
    /// any link: `Root::system()?.stat(abs.strip_prefix("/")?)`.
    pub fn system() -> Result<Root, FsError> {
        Root::open("/")
    }

    /// [`Root::system`] opened once for the process and shared (an `O_PATH` descriptor on
    /// `/`, kept until exit): walking an absolute path from it takes one `openat2` instead of
    /// an `open` of `/`, the walk and a `close`. The same folder as a fresh open: `/` names
    /// the process's root, which only a `chroot` by this process could change (it makes
    /// none). Not inherited by programs it runs (`O_CLOEXEC`).
    pub fn system_shared() -> Result<&'static Root, FsError> {
        static SYSTEM: std::sync::OnceLock<Root> = std::sync::OnceLock::new();
        if let Some(r) = SYSTEM.get() {
            return Ok(r);
        }
        let r = Root::system()?;
        Ok(SYSTEM.get_or_init(|| r))
    }

    /// The root's resolved path (for display and for building absolute paths).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's descriptor (an `O_PATH` folder descriptor).
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// `fstat` of the root folder itself.
    pub fn root_stat(&self) -> Result<Stat, FsError> {
        let st = fstat(&self.fd).map_err(|e| FsError::io(self.path.clone(), "fstat", e))?;
        Ok(to_stat(&st, None))
    }

    /// Another handle on the same folder.
    pub fn try_clone(&self) -> Result<Root, FsError> {
        let fd = self.fd.try_clone().map_err(|source| FsError::Io {
            path: self.path.clone(),
            op: "dup",
            source,
        })?;
        Ok(Root {
            fd,
            path: self.path.clone(),
        })
    }

    /// `lstat` of `rel`. `Ok(None)` if it (or a folder above it) does not exist; a link in a
    /// folder position is [`FsError::Link`]; a link as the leaf is reported as
    /// [`FileType::Symlink`] with its target.
    pub fn stat(&self, rel: impl AsRef<Path>) -> Result<Option<Stat>, FsError> {
        let rel = rel.as_ref();
        let comps = self.components(rel)?;
        let Some((leaf, dirs)) = comps.split_last() else {
            return self.root_stat().map(Some);
        };
        let parent = match self.walk(dirs) {
            Ok(fd) => fd,
            Err(FsError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let full = self.path.join(rel);
        lstat_at(&parent, leaf, &full)
    }

    /// Reads the regular file `rel`, at most `max_bytes` ([`FsError::TooLarge`] beyond).
    /// A link (at any position) is [`FsError::Link`]; a fifo, socket, device or folder is
    /// [`FsError::NotRegular`] — checked before opening and again on the opened descriptor,
    /// which is opened `O_NONBLOCK` so a fifo swapped in between never blocks.
    pub fn read(&self, rel: impl AsRef<Path>, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let (fd, full) = self.open_regular(rel.as_ref())?;
        read_fd(fd, &full, max_bytes)
    }

    /// The first `max_bytes` bytes of the regular file `rel` (no error when it is longer):
    /// for readers that, like git's `validate_headref`, look only at a file's start. Same
    /// no-follow and regular-file rules as [`Root::read`].
    pub fn read_prefix(&self, rel: impl AsRef<Path>, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let (fd, full) = self.open_regular(rel.as_ref())?;
        let st = fstat(&fd).map_err(|e| FsError::io(full.clone(), "fstat", e))?;
        if file_type_bits(&st) != SFlag::S_IFREG {
            return Err(FsError::NotRegular {
                path: full,
                kind: to_stat(&st, None).file_type.name(),
            });
        }
        let mut buf = Vec::new();
        File::from(fd)
            .take(max_bytes)
            .read_to_end(&mut buf)
            .map_err(|source| FsError::Io {
                path: full,
                op: "read",
                source,
            })?;
        Ok(buf)
    }

    /// Open the regular file `rel` for reading: a link (at any position) is
    /// [`FsError::Link`], anything but a regular file [`FsError::NotRegular`] — checked before
    /// opening; opened `O_NOFOLLOW | O_NONBLOCK` so a fifo swapped in between never blocks (the
    /// callers check the opened descriptor's type again).
    fn open_regular(&self, rel: &Path) -> Result<(OwnedFd, PathBuf), FsError> {
        let (parent, leaf, full) = self.parent_of(rel)?;
        let Some(pre) = lstat_at(&parent, leaf, &full)? else {
            return Err(FsError::NotFound { path: full });
        };
        match pre.file_type {
            FileType::File { .. } => {}
            FileType::Symlink { .. } => return Err(FsError::Link { path: full }),
            ref other => {
                return Err(FsError::NotRegular {
                    path: full,
                    kind: other.name(),
                })
            }
        }
        let fd = open_file_nofollow(&parent, leaf, &full)?;
        Ok((fd, full))
    }

    /// [`Root::read`] of the child `name` of the root, for a caller that has already seen a
    /// regular file there (its own `lstat`, e.g. [`Root::stat`], or the folder listing's
    /// type, [`Root::list_kinds`]): the same checks without another `lstat` before the
    /// open. The child is opened `O_NOFOLLOW | O_NONBLOCK` (a link swapped in since is
    /// refused, a fifo never blocks) and the opened descriptor's type is checked before any
    /// byte is read (a fifo, device or folder is never read; a device swapped in since the
    /// caller looked is opened, as one swapped in between an `lstat` and an `open` would
    /// be). Returns the bytes and the permission bits of the file that was read (from that
    /// `fstat`).
    pub fn read_child_regular(
        &self,
        name: &OsStr,
        max_bytes: u64,
    ) -> Result<(Vec<u8>, u32), FsError> {
        let full = self.path.join(name);
        if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
            return Err(FsError::Escape { path: full });
        }
        let fd = open_file_nofollow(&self.fd, name, &full)?;
        read_fd_mode(fd, &full, max_bytes)
    }

    /// The child `name` opened as [`Root::read_child_regular`] opens it (no-follow,
    /// non-blocking, its type and size checked with `fstat` on the descriptor), for a caller
    /// that looks at the file's identity before deciding to read it.
    /// [`Root::open_child_regular`] of `rel`, several components below the root, in one
    /// `openat2` (no link at any component, the last one included; beneath the root; the
    /// same flags) and its `fstat`. `None` when the `openat2` fails in any way (a missing
    /// name, a link, no `openat2`): the caller then walks, which names the component and
    /// the kind of error.
    pub fn open_regular_at_once(
        &self,
        rel: &Path,
        max_bytes: u64,
    ) -> Option<Result<OpenedFile, FsError>> {
        use nix::fcntl::{OpenHow, ResolveFlag};
        if OPENAT2.load(Ordering::Relaxed) == 2 {
            return None;
        }
        let how = OpenHow::new()
            .flags(
                OFlag::O_RDONLY
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_NONBLOCK
                    | OFlag::O_NOCTTY
                    | OFlag::O_CLOEXEC,
            )
            .resolve(
                ResolveFlag::RESOLVE_NO_SYMLINKS
                    | ResolveFlag::RESOLVE_NO_MAGICLINKS
                    | ResolveFlag::RESOLVE_BENEATH,
            );
        let fd = match nix::fcntl::openat2(&self.fd, rel, how) {
            Ok(fd) => fd,
            Err(Errno::ENOSYS) => {
                OPENAT2.store(2, Ordering::Relaxed);
                return None;
            }
            Err(_) => return None,
        };
        let full = self.path.join(rel);
        Some(fstat_regular(&fd, &full, max_bytes).map(|st| OpenedFile {
            fd,
            st,
            full,
            max_bytes,
        }))
    }

    pub fn open_child_regular(&self, name: &OsStr, max_bytes: u64) -> Result<OpenedFile, FsError> {
        let full = self.path.join(name);
        if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
            return Err(FsError::Escape { path: full });
        }
        let fd = open_file_nofollow(&self.fd, name, &full)?;
        let st = fstat_regular(&fd, &full, max_bytes)?;
        Ok(OpenedFile {
            fd,
            st,
            full,
            max_bytes,
        })
    }

    /// Like [`Root::read`], but a missing file (or missing folder above it) is `Ok(None)`.
    pub fn read_opt(
        &self,
        rel: impl AsRef<Path>,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, FsError> {
        match self.read(rel, max_bytes) {
            Ok(b) => Ok(Some(b)),
            Err(FsError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The target of the link `rel` (read, not followed).
    pub fn read_link(&self, rel: impl AsRef<Path>) -> Result<PathBuf, FsError> {
        let rel = rel.as_ref();
        let (parent, leaf, full) = self.parent_of(rel)?;
        readlinkat(&parent, leaf)
            .map(PathBuf::from)
            .map_err(|e| classify(&parent, leaf, e, full, "readlink"))
    }

    /// The entries of the folder `rel` (`""` = the root), each with its `lstat`, sorted by
    /// name (bytewise). An entry that vanishes between `readdir` and `lstat` is left out.
    pub fn list(&self, rel: impl AsRef<Path>) -> Result<Vec<DirEntry>, FsError> {
        let rel = rel.as_ref();
        let comps = self.components(rel)?;
        let full = self.path.join(rel);
        let dir = self.open_listing(&comps, &full)?;
        let names = read_names_fd(&dir, &full)?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let child = full.join(&name);
            if let Some(stat) = lstat_at(&dir, &name, &child)? {
                out.push(DirEntry { name, stat });
            }
        }
        out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(out)
    }

    /// The names in the folder `rel` (`""` = the root), sorted bytewise, without an `lstat`
    /// of each: for callers that look at each entry themselves anyway.
    pub fn list_names(&self, rel: impl AsRef<Path>) -> Result<Vec<OsString>, FsError> {
        let rel = rel.as_ref();
        let comps = self.components(rel)?;
        let full = self.path.join(rel);
        let dir = self.open_listing(&comps, &full)?;
        let mut names = read_names_fd(&dir, &full)?;
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        Ok(names)
    }

    /// The entries of the folder `rel` (`""` = the root), sorted bytewise, each with its
    /// type as the folder listing gives it (`d_type`), without an `lstat` of each. A file
    /// system that does not tell (`DT_UNKNOWN`) gets an `lstat` of that entry (an entry gone
    /// in between is left out). The type is a hint taken at listing time: a caller that
    /// opens an entry still opens it no-follow and checks the opened descriptor.
    pub fn list_kinds(&self, rel: impl AsRef<Path>) -> Result<Listing, FsError> {
        let rel = rel.as_ref();
        let comps = self.components(rel)?;
        let full = self.path.join(rel);
        let dir = self.open_listing(&comps, &full)?;
        kinds_of(&dir, &full)
    }

    /// [`Root::list_kinds`] of the child folder `name` (one name), taken from the walk
    /// record (`crate::layout::walk_cache`, the work trees' record, here for the worktree
    /// entries' `logs/` and `refs/`) when the folder's key — its `lstat` from this root's
    /// descriptor, one name, no link on the way — has a trusted record. Otherwise read as
    /// `list_kinds` reads it (the same no-follow open, the same errors), the key taken with
    /// `fstat` on the opened descriptor before the listing is read, and recorded. The
    /// record's argument is the walk's: any change to a folder's names moves its `ctime`,
    /// which the agent cannot set back, and only keys older than the run's start by the
    /// racy margin, on file systems that keep `ctime` themselves, are recorded or used.
    /// Kinds come from the record (a kind cannot change without the name changing).
    pub(crate) fn list_kinds_recorded(
        &self,
        name: &OsStr,
        cache: &mut crate::layout::walk::WalkCache,
    ) -> Result<Listing, FsError> {
        let comps = self.components(Path::new(name))?;
        if comps.len() != 1 {
            return self.list_kinds(name);
        }
        let full = self.path.join(name);
        if let Ok(st) = fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR {
                if let Some(key) = cache.key_of(&st) {
                    let (mut names, mut slots) = (Vec::new(), Vec::new());
                    if cache.reuse(&key, &mut names, &mut slots).is_some() {
                        if let Some(l) = recorded_listing(&names, &slots) {
                            return Ok(l);
                        }
                    }
                }
            }
        }
        let fd = self.open_listing(&comps, &full)?;
        let key = fstat(&fd).ok().and_then(|st| {
            if cache.fs_of(st.st_dev).is_none() {
                let fs = nix::sys::statfs::fstatfs(&fd)
                    .map(|s| s.filesystem_type().0)
                    .unwrap_or(0);
                cache.note_fs(st.st_dev, fs);
            }
            cache.key_of(&st)
        });
        // (The first folder of a run on a device: its file system was not known at the
        // `lstat`, so its key is whole only now.)
        if let Some(k) = &key {
            let (mut names, mut slots) = (Vec::new(), Vec::new());
            if cache.reuse(k, &mut names, &mut slots).is_some() {
                if let Some(l) = recorded_listing(&names, &slots) {
                    return Ok(l);
                }
            }
        }
        let mut typed = read_typed_fd(&fd, &full)?;
        typed.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let (mut names, mut slots) = (Vec::new(), Vec::new());
        let fits =
            typed.iter().all(
                |(n, t)| match (u32::try_from(names.len()), u16::try_from(n.len())) {
                    (Ok(start), Ok(len)) => {
                        names.extend_from_slice(n.as_bytes());
                        slots.push((start, len, *t));
                        true
                    }
                    _ => false,
                },
            );
        if fits {
            cache.listed(key, &names, &slots);
        }
        kinds_from_typed(&fd, &full, typed)
    }

    /// The child folder `name` as a root of its own, opened once (`O_RDONLY | O_DIRECTORY |
    /// O_NOFOLLOW`: a link is refused, anything but a folder fails before it is opened), and
    /// its [`Root::list_kinds`] read through that same descriptor.
    pub fn open_dir_listed(&self, name: &OsStr) -> Result<(Root, Listing), FsError> {
        let comps = self.components(Path::new(name))?;
        let full = self.path.join(name);
        if comps.len() != 1 {
            return Err(FsError::Escape { path: full });
        }
        let fd = self.open_listing(&comps, &full)?;
        let kinds = kinds_of(&fd, &full)?;
        Ok((Root { fd, path: full }, kinds))
    }

    /// The folder `rel` (one or more components below this root) as a root of its own and
    /// its listing: [`Root::list_kinds`]'s no-follow open (the folders above walked without
    /// following a link, the folder itself `O_NOFOLLOW`), the descriptor kept.
    pub fn open_dir_listed_at(&self, rel: &Path) -> Result<(Root, Listing), FsError> {
        let comps = self.components(rel)?;
        let full = self.path.join(rel);
        if comps.is_empty() {
            return Err(FsError::Escape { path: full });
        }
        let fd = self.open_listing(&comps, &full)?;
        let kinds = kinds_of(&fd, &full)?;
        Ok((Root { fd, path: full }, kinds))
    }

    /// The folder `rel` as a root of its own, opened without following links.
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> Result<Root, FsError> {
        let rel = rel.as_ref();
        let comps = self.components(rel)?;
        let fd = match self.walk(&comps)? {
            DirFd::Owned(fd) => fd,
            DirFd::Borrowed(_) => self.reopen_root()?,
        };
        Ok(Root {
            fd,
            path: self.path.join(rel),
        })
    }

    /// Writes `bytes` to `rel` atomically with permission bits `mode`: a temporary file is
    /// created in the same folder (`O_CREAT | O_EXCL | O_NOFOLLOW`), written, fsync'ed, renamed
    /// over the target, and the folder is fsync'ed. Readers see the old or the new content,
    /// never a mix; no temporary file is left behind on error. An existing target that is
    /// not a regular file is refused ([`Replace::RegularOnly`]).
    pub fn write_atomic(
        &self,
        rel: impl AsRef<Path>,
        bytes: &[u8],
        mode: u32,
    ) -> Result<(), FsError> {
        self.write_atomic_with(rel, bytes, mode, Replace::RegularOnly)
    }

    /// [`Root::write_atomic`] with an explicit policy for a target that is not a regular file.
    pub fn write_atomic_with(
        &self,
        rel: impl AsRef<Path>,
        bytes: &[u8],
        mode: u32,
        replace: Replace,
    ) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let (parent, leaf, full) = self.parent_of(rel)?;
        if let Some(existing) = lstat_at(&parent, leaf, &full)? {
            match (&existing.file_type, replace) {
                (FileType::File { .. }, _) => {}
                (FileType::Dir { .. }, _) => {
                    return Err(FsError::NotRegular {
                        path: full,
                        kind: "folder",
                    })
                }
                (FileType::Symlink { .. }, Replace::RegularOnly) => {
                    return Err(FsError::Link { path: full })
                }
                (other, Replace::RegularOnly) => {
                    return Err(FsError::NotRegular {
                        path: full,
                        kind: other.name(),
                    })
                }
                (_, Replace::AnyButFolder) => {}
            }
        }
        let (tmp_name, fd) = create_temp(&parent, &full, mode)?;
        let result = (|| {
            let mut file = File::from(fd);
            file.write_all(bytes).map_err(|source| FsError::Io {
                path: full.clone(),
                op: "write",
                source,
            })?;
            file.sync_all().map_err(|source| FsError::Io {
                path: full.clone(),
                op: "fsync",
                source,
            })?;
            drop(file);
            renameat(&parent, tmp_name.as_os_str(), &parent, leaf)
                .map_err(|e| classify(&parent, leaf, e, full.clone(), "rename"))
        })();
        if let Err(e) = result {
            let _ = unlinkat(&parent, tmp_name.as_os_str(), UnlinkatFlags::NoRemoveDir);
            return Err(e);
        }
        fsync_dir(&parent, full.parent().unwrap_or(&full))
    }

    /// Creates the folder `rel` and every missing folder above it with permission bits
    /// `mode` (before umask). An existing link on the way is [`FsError::Link`].
    pub fn create_dir_all(&self, rel: impl AsRef<Path>, mode: u32) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let comps = self.components(rel)?;
        let mut cur = self.reopen_root()?;
        let mut full = self.path.clone();
        for name in comps {
            let parent_path = full.clone();
            full.push(name);
            match mkdirat(&cur, name, Mode::from_bits_truncate(mode)) {
                Ok(()) => fsync_dir(&cur, &parent_path)?,
                Err(Errno::EEXIST) => {}
                Err(e) => return Err(classify(&cur, name, e, full, "mkdir")),
            }
            cur = openat(&cur, name, DIR_WALK, Mode::empty())
                .map_err(|e| classify(&cur, name, e, full.clone(), "open"))?;
        }
        Ok(())
    }

    /// Moves `rel` (a file, link or folder — never followed) to `other_rel` below `other`.
    /// An existing destination is never replaced ([`FsError::Exists`]). On the same file
    /// system this is one `renameat2(RENAME_NOREPLACE)`. Across file systems the entry is
    /// copied without following links (files fsync'ed), put in place under a temporary name
    /// and renamed, and only then is the source removed — so the bytes exist in at least one
    /// place at every moment. Used to move an agent's file aside into quarantine.
    pub fn move_to(
        &self,
        rel: impl AsRef<Path>,
        other: &Root,
        other_rel: impl AsRef<Path>,
    ) -> Result<(), FsError> {
        let (rel, other_rel) = (rel.as_ref(), other_rel.as_ref());
        let (src_dir, src_leaf, src_full) = self.parent_of(rel)?;
        let (dst_dir, dst_leaf, dst_full) = other.parent_of(other_rel)?;
        if lstat_at(&src_dir, src_leaf, &src_full)?.is_none() {
            return Err(FsError::NotFound { path: src_full });
        }
        match rename_noreplace(&src_dir, src_leaf, &dst_dir, dst_leaf) {
            Ok(()) => {}
            Err(Errno::EXDEV) => {
                // Park the source under a temporary name in its own folder first (same file
                // system: atomic), so that what is copied is exactly what is removed: a new
                // file the agent writes at the old name meanwhile is a new entry, not lost.
                let parked = temp_name();
                let parked_full = src_full.with_file_name(&parked);
                rename_noreplace(&src_dir, src_leaf, &src_dir, &parked)
                    .map_err(|e| classify(&src_dir, src_leaf, e, src_full.clone(), "rename"))?;
                if let Err(e) = copy_across(
                    &src_dir,
                    &parked,
                    &parked_full,
                    &dst_dir,
                    dst_leaf,
                    &dst_full,
                ) {
                    // Put the source back, never over an entry created meanwhile.
                    return match rename_noreplace(&src_dir, &parked, &src_dir, src_leaf) {
                        Ok(()) => Err(e),
                        Err(_) => Err(FsError::Io {
                            path: parked_full,
                            op: "move failed and the source could not be put back; it is kept under this name",
                            source: std::io::Error::other(e.to_string()),
                        }),
                    };
                }
                // The copy is in place; if removing the parked source fails, both exist.
                remove_tree(&src_dir, &parked, &parked_full, 0)?;
            }
            Err(Errno::EEXIST) | Err(Errno::ENOTEMPTY) => {
                return Err(FsError::Exists { path: dst_full })
            }
            Err(e) => return Err(classify(&dst_dir, dst_leaf, e, dst_full, "rename")),
        }
        fsync_dir(&dst_dir, dst_full.parent().unwrap_or(&dst_full))?;
        fsync_dir(&src_dir, src_full.parent().unwrap_or(&src_full))
    }

    /// Renames `rel` to `new_rel` below the same root, never replacing an existing entry.
    pub fn rename(&self, rel: impl AsRef<Path>, new_rel: impl AsRef<Path>) -> Result<(), FsError> {
        let (rel, new_rel) = (rel.as_ref(), new_rel.as_ref());
        let (src_dir, src_leaf, _) = self.parent_of(rel)?;
        let (dst_dir, dst_leaf, dst_full) = self.parent_of(new_rel)?;
        match rename_noreplace(&src_dir, src_leaf, &dst_dir, dst_leaf) {
            Ok(()) => fsync_dir(&dst_dir, dst_full.parent().unwrap_or(&dst_full)),
            Err(Errno::EEXIST) | Err(Errno::ENOTEMPTY) => Err(FsError::Exists { path: dst_full }),
            Err(e) => Err(classify(
                &src_dir,
                src_leaf,
                e,
                self.path.join(rel),
                "rename",
            )),
        }
    }

    /// Removes the file, link, fifo, … `rel` (a link is removed itself, never followed).
    pub fn remove_file(&self, rel: impl AsRef<Path>) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let (parent, leaf, full) = self.parent_of(rel)?;
        unlinkat(&parent, leaf, UnlinkatFlags::NoRemoveDir)
            .map_err(|e| classify(&parent, leaf, e, full, "unlink"))
    }

    /// Removes the empty folder `rel`.
    pub fn remove_dir(&self, rel: impl AsRef<Path>) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let (parent, leaf, full) = self.parent_of(rel)?;
        unlinkat(&parent, leaf, UnlinkatFlags::RemoveDir)
            .map_err(|e| classify(&parent, leaf, e, full, "rmdir"))
    }

    /// Creates the symbolic link `rel` → `target` (for restores and tests; the target is
    /// stored as given and never resolved here).
    pub fn create_symlink(
        &self,
        target: impl AsRef<Path>,
        rel: impl AsRef<Path>,
    ) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let (parent, leaf, full) = self.parent_of(rel)?;
        symlinkat(target.as_ref(), &parent, leaf)
            .map_err(|e| classify(&parent, leaf, e, full, "symlink"))
    }

    /// Sets the permission bits of `rel` (a link is refused, not followed: the leaf is opened
    /// `O_PATH | O_NOFOLLOW` and changed through `/proc/self/fd`).
    pub fn set_mode(&self, rel: impl AsRef<Path>, mode: u32) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let (parent, leaf, full) = self.parent_of(rel)?;
        let fd = openat(
            &parent,
            leaf,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| classify(&parent, leaf, e, full.clone(), "open"))?;
        let st = fstat(&fd).map_err(|e| FsError::io(full.clone(), "fstat", e))?;
        if file_type_bits(&st) == SFlag::S_IFLNK {
            return Err(FsError::Link { path: full });
        }
        let proc_path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        nix::sys::stat::fchmodat(
            nix::fcntl::AT_FDCWD,
            proc_path.as_str(),
            Mode::from_bits_truncate(mode & 0o7777),
            nix::sys::stat::FchmodatFlags::FollowSymlink,
        )
        .map_err(|e| FsError::io(full, "chmod", e))
    }

    // ---- internals -------------------------------------------------------------------

    /// Splits `rel` into its components, refusing `..`, `.`, absolute and empty components.
    /// The empty path is the root itself (no components).
    fn components<'a>(&self, rel: &'a Path) -> Result<Vec<&'a OsStr>, FsError> {
        let bytes = rel.as_os_str().as_bytes();
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for part in bytes.split(|b| *b == b'/') {
            if part.is_empty() || part == b"." || part == b".." {
                return Err(FsError::Escape {
                    path: self.path.join(rel),
                });
            }
            out.push(OsStr::from_bytes(part));
        }
        Ok(out)
    }

    /// The folder `comps` opened for reading its entries: the folders above it walked as
    /// usual, the folder itself opened `O_RDONLY | O_DIRECTORY | O_NOFOLLOW` from its parent
    /// (a link is refused, anything but a folder fails before it is opened) — one open, not
    /// an `O_PATH` walk step and then a second open of `.`.
    fn open_listing(&self, comps: &[&OsStr], full: &Path) -> Result<OwnedFd, FsError> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let Some((leaf, dirs)) = comps.split_last() else {
            return openat(&self.fd, ".", flags, Mode::empty())
                .map_err(|e| FsError::io(full.to_path_buf(), "open", e));
        };
        let parent = self.walk(dirs)?;
        openat(&parent, *leaf, flags | OFlag::O_NOFOLLOW, Mode::empty())
            .map_err(|e| classify(&parent, leaf, e, full.to_path_buf(), "open"))
    }

    fn reopen_root(&self) -> Result<OwnedFd, FsError> {
        openat(&self.fd, ".", DIR_WALK, Mode::empty())
            .map_err(|e| FsError::io(self.path.clone(), "open", e))
    }

    /// Opens the folders `comps` one by one, no-follow, and returns the last one's descriptor
    /// (the root's own descriptor, borrowed, when `comps` is empty).
    fn walk(&self, comps: &[&OsStr]) -> Result<DirFd<'_>, FsError> {
        if comps.len() > 1 {
            if let Some(fd) = walk_at_once(&self.fd, comps) {
                return Ok(DirFd::Owned(fd));
            }
        }
        let mut cur = DirFd::Borrowed(self.fd.as_fd());
        let mut full = self.path.clone();
        for name in comps {
            full.push(name);
            let next = openat(&cur, *name, DIR_WALK, Mode::empty())
                .map_err(|e| classify(&cur, name, e, full.clone(), "open"))?;
            cur = DirFd::Owned(next);
        }
        Ok(cur)
    }

    /// The parent folder's descriptor, the leaf name and the full path of a non-empty `rel`.
    fn parent_of<'a>(&self, rel: &'a Path) -> Result<(DirFd<'_>, &'a OsStr, PathBuf), FsError> {
        let comps = self.components(rel)?;
        let Some((leaf, dirs)) = comps.split_last() else {
            return Err(FsError::Escape {
                path: self.path.clone(),
            });
        };
        let parent = self.walk(dirs)?;
        Ok((parent, leaf, self.path.join(rel)))
    }
}

/// Whether `openat2` answered once with anything but `ENOSYS` (0 untried, 1 yes, 2 no).
static OPENAT2: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// [`Root::walk`]'s folders in one `openat2` (`RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
/// RESOLVE_BENEATH`, the same `O_PATH | O_DIRECTORY | O_NOFOLLOW` open): the kernel refuses a
/// link at any component, as the walk does one `openat` per component (2 system calls per
/// component with the `close`; the same few folders were walked thousands of times per
/// `wt-check check`). `None` on any error — a link, a missing folder, a kernel without
/// `openat2` — and the walk then takes its steps one by one, which names the component
/// and the kind of error: this never opens what the walk would refuse.
fn walk_at_once(root: &OwnedFd, comps: &[&OsStr]) -> Option<OwnedFd> {
    use nix::fcntl::{OpenHow, ResolveFlag};
    if OPENAT2.load(Ordering::Relaxed) == 2 {
        return None;
    }
    let mut rel = OsString::new();
    for (i, c) in comps.iter().enumerate() {
        if i > 0 {
            rel.push("/");
        }
        rel.push(c);
    }
    let how = OpenHow::new().flags(DIR_WALK).resolve(
        ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_BENEATH,
    );
    match nix::fcntl::openat2(root, Path::new(&rel), how) {
        Ok(fd) => {
            OPENAT2.store(1, Ordering::Relaxed);
            Some(fd)
        }
        Err(Errno::ENOSYS) => {
            OPENAT2.store(2, Ordering::Relaxed);
            None
        }
        Err(_) => None,
    }
}

/// Is the folder `rel` below `root` certainly absent: one `openat2` as
/// [`walk_at_once`]'s (no link at any component, beneath `root`) answered `ENOENT`? `false`
/// on anything else (found, a link, another error, no `openat2`): the caller then walks.
pub(crate) fn absent_at_once(root: &OwnedFd, rel: &Path) -> bool {
    use nix::fcntl::{OpenHow, ResolveFlag};
    if OPENAT2.load(Ordering::Relaxed) == 2 {
        return false;
    }
    let how = OpenHow::new().flags(DIR_WALK).resolve(
        ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_BENEATH,
    );
    match nix::fcntl::openat2(root, rel, how) {
        Err(Errno::ENOENT) => true,
        Err(Errno::ENOSYS) => {
            OPENAT2.store(2, Ordering::Relaxed);
            false
        }
        _ => false,
    }
}

/// A folder descriptor: the root's own (borrowed) or one opened by a walk.
enum DirFd<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl AsFd for DirFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            DirFd::Borrowed(fd) => *fd,
            DirFd::Owned(fd) => fd.as_fd(),
        }
    }
}

fn file_type_bits(st: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT
}

fn to_stat(st: &FileStat, target: Option<PathBuf>) -> Stat {
    let perm = st.st_mode & 0o7777;
    let file_type = match file_type_bits(st) {
        SFlag::S_IFREG => FileType::File {
            mode: perm,
            size: st.st_size as u64,
        },
        SFlag::S_IFDIR => FileType::Dir { mode: perm },
        SFlag::S_IFLNK => FileType::Symlink {
            target: target.unwrap_or_default(),
        },
        SFlag::S_IFIFO => FileType::Fifo,
        SFlag::S_IFSOCK => FileType::Socket,
        SFlag::S_IFCHR => FileType::CharDev,
        _ => FileType::BlockDev,
    };
    let mtime = if st.st_mtime >= 0 {
        UNIX_EPOCH + Duration::new(st.st_mtime as u64, st.st_mtime_nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(st.st_mtime.unsigned_abs())
    };
    Stat {
        file_type,
        dev: st.st_dev,
        ino: st.st_ino,
        uid: st.st_uid,
        nlink: st.st_nlink,
        mtime,
    }
}

/// `lstat` of `name` in `dir`; `Ok(None)` when missing.
/// Open the child `name` of `dir` for reading, never following a link at `name` and never
/// blocking on a fifo (`O_NOFOLLOW | O_NONBLOCK`, no controlling tty). The one open every
/// file read goes through; callers check the opened descriptor's type before reading.
fn open_file_nofollow(dir: &impl AsFd, name: &OsStr, full: &Path) -> Result<OwnedFd, FsError> {
    openat(
        dir,
        name,
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| classify(dir, name, e, full.to_path_buf(), "open"))
}

fn lstat_at(dir: &impl AsFd, name: &OsStr, full: &Path) -> Result<Option<Stat>, FsError> {
    let st = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(classify(dir, name, e, full.to_path_buf(), "lstat")),
    };
    let target = if file_type_bits(&st) == SFlag::S_IFLNK {
        match readlinkat(dir, name) {
            Ok(t) => Some(PathBuf::from(t)),
            // Swapped between lstat and readlink: report what we saw, without a target.
            Err(Errno::EINVAL) | Err(Errno::ENOENT) => None,
            Err(e) => return Err(FsError::io(full.to_path_buf(), "readlink", e)),
        }
    } else {
        None
    };
    Ok(Some(to_stat(&st, target)))
}

/// Turns an errno from an `*at` call on `name` in `dir` into an [`FsError`], telling a link
/// (`ELOOP`, or `ENOTDIR` on a name that is a link) from other failures.
fn classify(dir: &impl AsFd, name: &OsStr, e: Errno, full: PathBuf, op: &'static str) -> FsError {
    match e {
        Errno::ENOENT => FsError::NotFound { path: full },
        Errno::ELOOP => FsError::Link { path: full },
        Errno::EEXIST => FsError::Exists { path: full },
        Errno::ENOTDIR => match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) if file_type_bits(&st) == SFlag::S_IFLNK => FsError::Link { path: full },
            _ => FsError::NotDir { path: full },
        },
        e => FsError::io(full, op, e),
    }
}

fn read_fd(fd: OwnedFd, full: &Path, max_bytes: u64) -> Result<Vec<u8>, FsError> {
    read_fd_mode(fd, full, max_bytes).map(|(b, _)| b)
}

/// Reads the opened `fd` whole after checking with `fstat` that it is a regular file of at
/// most `max_bytes`; returns the bytes and the permission bits.
fn read_fd_mode(fd: OwnedFd, full: &Path, max_bytes: u64) -> Result<(Vec<u8>, u32), FsError> {
    let st = fstat_regular(&fd, full, max_bytes)?;
    let bytes = read_regular(fd, &st, full, max_bytes)?;
    Ok((bytes, st.st_mode & 0o7777))
}

/// `fstat` of an opened descriptor that must be a regular file of at most `max_bytes`: a
/// link is [`FsError::Link`], anything else [`FsError::NotRegular`], a larger file
/// [`FsError::TooLarge`].
fn fstat_regular(fd: &OwnedFd, full: &Path, max_bytes: u64) -> Result<FileStat, FsError> {
    let st = fstat(fd).map_err(|e| FsError::io(full.to_path_buf(), "fstat", e))?;
    match to_stat(&st, None).file_type {
        FileType::File { size, .. } if size > max_bytes => Err(FsError::TooLarge {
            path: full.to_path_buf(),
            limit: max_bytes,
        }),
        FileType::File { .. } => Ok(st),
        FileType::Symlink { .. } => Err(FsError::Link {
            path: full.to_path_buf(),
        }),
        other => Err(FsError::NotRegular {
            path: full.to_path_buf(),
            kind: other.name(),
        }),
    }
}

/// Reads the regular file `fd` (its `fstat` is `st`) whole, at most `max_bytes`.
fn read_regular(
    fd: OwnedFd,
    st: &FileStat,
    full: &Path,
    max_bytes: u64,
) -> Result<Vec<u8>, FsError> {
    let io = |source| FsError::Io {
        path: full.to_path_buf(),
        op: "read",
        source,
    };
    // One read of up to the size fstat reported plus one byte. Exactly that size back means
    // the file as it was at the fstat, whole: no second read to see the end. Anything else
    // (the file grew or shrank since, or a file system that reports no size, as procfs) is
    // read on to its end, as before. The buffer is not zeroed first (an index of git.git is
    // 460 KB, read for 21 git dirs per check).
    let size = usize::try_from(st.st_size.max(0)).unwrap_or(0);
    let mut buf = Vec::with_capacity(size + 1);
    read_into_spare(&fd, &mut buf).map_err(|e| io(e.into()))?;
    let n = buf.len();
    if n != size {
        File::from(fd)
            .take(max_bytes.saturating_add(1).saturating_sub(n as u64))
            .read_to_end(&mut buf)
            .map_err(io)?;
    }
    if buf.len() as u64 > max_bytes {
        return Err(FsError::TooLarge {
            path: full.to_path_buf(),
            limit: max_bytes,
        });
    }
    Ok(buf)
}

/// One `read` into the spare capacity of `buf` (none zeroed first); `buf`'s length grows by
/// the bytes read.
fn read_into_spare(fd: &OwnedFd, buf: &mut Vec<u8>) -> Result<(), Errno> {
    let spare = buf.spare_capacity_mut();
    loop {
        // SAFETY: `fd` is open for the whole call; the kernel writes at most `spare.len()`
        // bytes into `spare`, which is valid, exclusively borrowed memory of `buf`; only the
        // `r` bytes it reports written are then counted as initialised.
        let r = unsafe {
            nix::libc::read(
                fd.as_raw_fd(),
                spare.as_mut_ptr().cast::<nix::libc::c_void>(),
                spare.len(),
            )
        };
        if r >= 0 {
            let n = usize::try_from(r).map_err(|_| Errno::EIO)?.min(spare.len());
            // SAFETY: the kernel initialised the first `n` bytes of the spare capacity.
            unsafe { buf.set_len(buf.len() + n) };
            return Ok(());
        }
        match Errno::last() {
            Errno::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// A regular file opened without following a link and without blocking, its type and size
/// checked with `fstat` on the descriptor (see [`Root::open_child_regular`]).
#[derive(Debug)]
pub struct OpenedFile {
    fd: OwnedFd,
    st: FileStat,
    full: PathBuf,
    max_bytes: u64,
}

/// A file's identity and change stamps from `fstat`: device, inode, size, `mtime` and
/// `ctime` (seconds, nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub size: i64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl OpenedFile {
    /// The opened file's identity and change stamps (its `fstat` before any byte is read).
    pub fn id(&self) -> FileId {
        let st = &self.st;
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }

    /// The path the file was opened as (for messages).
    pub fn path(&self) -> &Path {
        &self.full
    }

    /// `statfs` `f_type` of the file system the opened file is on (`fstatfs` of the
    /// descriptor).
    pub fn fs_type(&self) -> Result<i64, FsError> {
        nix::sys::statfs::fstatfs(&self.fd)
            .map(|s| s.filesystem_type().0)
            .map_err(|e| FsError::io(self.full.clone(), "fstatfs", e))
    }

    /// Write the file's dirty pages back and wait for them (`sync_file_range` with
    /// `WAIT_BEFORE | WRITE | WAIT_AFTER`; no journal commit, no device flush). Writeback
    /// write-protects every shared mapping of those pages, so on a file system whose
    /// `page_mkwrite` updates the file's times (ext4, XFS, Btrfs, F2FS; not tmpfs) the next
    /// write through any mapping faults and moves `mtime` and `ctime`: after this call, bytes
    /// read from the file are its content until its `ctime` changes
    /// (`crate::index_paths::Verdicts`). A read-only descriptor is enough.
    pub fn write_back(&self) -> Result<(), FsError> {
        write_back(self.fd.as_fd())
            .map_err(|e| FsError::io(self.full.clone(), "sync_file_range", e))
    }

    /// The file's bytes, read whole (at most the bound it was opened with).
    pub fn read(self) -> Result<Vec<u8>, FsError> {
        read_regular(self.fd, &self.st, &self.full, self.max_bytes)
    }
}

fn read_dir_names(dir: &impl AsFd, full: &Path) -> Result<Vec<OsString>, FsError> {
    let fd = openat(
        dir,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| FsError::io(full.to_path_buf(), "open", e))?;
    read_names_fd(&fd, full)
}

/// The entries of the folder open for reading as `dir`, sorted, with their `d_type` kind (an
/// `lstat` where the file system does not tell; an entry gone by then is left out).
fn kinds_of(dir: &OwnedFd, full: &Path) -> Result<Listing, FsError> {
    kinds_from_typed(dir, full, read_typed_fd(dir, full)?)
}

/// The kind of a `d_type` byte, `None` for `DT_UNKNOWN` (or anything else).
fn kind_of_dtype(t: u8) -> Option<EntryKind> {
    Some(match t {
        nix::libc::DT_REG => EntryKind::File,
        nix::libc::DT_DIR => EntryKind::Dir,
        nix::libc::DT_LNK => EntryKind::Symlink,
        nix::libc::DT_FIFO => EntryKind::Fifo,
        nix::libc::DT_SOCK => EntryKind::Socket,
        nix::libc::DT_CHR => EntryKind::CharDev,
        nix::libc::DT_BLK => EntryKind::BlockDev,
        _ => return None,
    })
}

/// A listing from a walk record's names and slots (sorted, as recorded); `None` when a
/// kind byte is not one of a listing's (a record never holds `DT_UNKNOWN`).
fn recorded_listing(names: &[u8], slots: &[(u32, u16, u8)]) -> Option<Listing> {
    slots
        .iter()
        .map(|&(s, l, t)| {
            let n = names.get(s as usize..s as usize + usize::from(l))?;
            let k = kind_of_dtype(crate::layout::walk_cache::kind_byte(t))?;
            Some((OsStr::from_bytes(n).to_os_string(), k))
        })
        .collect()
}

/// [`kinds_of`] from entries already read from the folder `dir`.
fn kinds_from_typed(
    dir: &OwnedFd,
    full: &Path,
    typed: Vec<(OsString, u8)>,
) -> Result<Listing, FsError> {
    let mut out = Vec::new();
    for (name, t) in typed {
        let kind = match kind_of_dtype(t) {
            Some(k) => k,
            None => match lstat_at(dir, &name, &full.join(&name))? {
                Some(st) => EntryKind::of(&st.file_type),
                None => continue,
            },
        };
        out.push((name, kind));
    }
    out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(out)
}

/// The names in the folder open for reading as `fd` (`.` and `..` left out), unsorted.
fn read_names_fd(fd: &OwnedFd, full: &Path) -> Result<Vec<OsString>, FsError> {
    Ok(read_typed_fd(fd, full)?
        .into_iter()
        .map(|(n, _)| n)
        .collect())
}

/// [`read_names_fd`] with each entry's `d_type` byte.
fn read_typed_fd(fd: &OwnedFd, full: &Path) -> Result<Vec<(OsString, u8)>, FsError> {
    thread_local! {
        // One buffer per thread, zeroed once (not once per folder listed).
        static DIRENT_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 32 * 1024]);
    }
    DIRENT_BUF.with(|cell| {
        let mut fresh;
        let mut borrowed = cell.try_borrow_mut();
        let buf: &mut Vec<u8> = match &mut borrowed {
            Ok(b) => b,
            Err(_) => {
                fresh = vec![0u8; 32 * 1024];
                &mut fresh
            }
        };
        let mut names = Vec::new();
        loop {
            let n =
                getdents64(fd, buf).map_err(|e| FsError::io(full.to_path_buf(), "readdir", e))?;
            if n == 0 {
                break;
            }
            parse_dirents_typed(&buf[..n], &mut names).ok_or_else(|| {
                FsError::io(full.to_path_buf(), "readdir (malformed record)", Errno::EIO)
            })?;
        }
        Ok(names)
    })
}

/// `file.take(max).read_to_end` into a new buffer sized for `len` bytes (the file's size
/// at its `fstat`), the buffer's pages made present in one call first
/// ([`prefault_spare`]) instead of one page fault each as `read` fills them: the check's
/// own records (the 234 KB walk record, the 124 KB state file of git.git's gs layout) cost
/// ≈90 page faults that way, ≈1 µs each on this VM. The bytes read are the same.
pub(crate) fn read_whole(file: &File, len: u64, max: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len.min(max) as usize);
    prefault_spare(&mut buf);
    let f = file;
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Make the pages of `buf`'s spare capacity present (`madvise(MADV_POPULATE_WRITE)`, Linux
/// 5.14): a hint with no effect on the contents, for a buffer a `read` is about to fill.
/// Any failure (an older kernel's `EINVAL`, a buffer under 16 pages, not page-aligned on
/// this system) leaves the pages to be faulted in one by one, as without it.
pub(crate) fn prefault_spare(buf: &mut Vec<u8>) {
    const MADV_POPULATE_WRITE: nix::libc::c_int = 23;
    let page = match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(p)) if p > 0 && (p as usize).is_power_of_two() => p as usize,
        _ => return,
    };
    let spare = buf.spare_capacity_mut();
    if spare.len() < 16 * page {
        return;
    }
    let start = spare.as_mut_ptr() as usize;
    let end = start + spare.len();
    let (a, b) = ((start + page - 1) & !(page - 1), end & !(page - 1));
    if b > a {
        // SAFETY: `[a, b)` lies inside `buf`'s allocation, which this function borrows
        // mutably; `MADV_POPULATE_WRITE` only makes its pages present (as a write would,
        // without writing): nothing is read, written or unmapped.
        unsafe {
            nix::libc::madvise(a as *mut nix::libc::c_void, b - a, MADV_POPULATE_WRITE);
        }
    }
}

/// One `getdents64` call on the open folder `fd` into `buf`: the number of bytes of
/// `linux_dirent64` records written, 0 at the end of the folder.
///
/// Called directly rather than through `fdopendir`/`readdir`, which cost an `fstat`, two
/// `fcntl` and (nix's iterator) an `lseek` per folder listed — wt-check lists ~1,700 folders
/// per check.
pub(crate) fn getdents64(fd: &impl AsRawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    loop {
        // SAFETY: `fd` is an open descriptor owned by the caller for the whole call; the
        // kernel writes at most `buf.len()` bytes into `buf`, which is valid and exclusively
        // borrowed for the call.
        let r = unsafe {
            nix::libc::syscall(
                nix::libc::SYS_getdents64,
                fd.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if r >= 0 {
            return usize::try_from(r).map_err(|_| Errno::EIO);
        }
        match Errno::last() {
            Errno::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Calls `f(name, d_type)` for each record in a buffer of `linux_dirent64` records
/// (`d_ino` u64, `d_off` i64, `d_reclen` u16, `d_type` u8, NUL-terminated `d_name`), `.` and
/// `..` left out. `None` when a record does not fit the buffer (never from a correct kernel).
/// The one parser of the records [`getdents64`] returns: `fsx`'s listings, the layout walk
/// (`layout::walk`) and the scan record's key (`integrity::scanlink_key`) all read folders
/// through these two.
#[inline]
pub(crate) fn each_dirent(mut b: &[u8], mut f: impl FnMut(&[u8], u8)) -> Option<()> {
    const NAME_AT: usize = 19;
    while !b.is_empty() {
        let reclen = usize::from(u16::from_ne_bytes([*b.get(16)?, *b.get(17)?]));
        if reclen <= NAME_AT {
            return None;
        }
        let rec = b.get(..reclen)?;
        let d_type = *rec.get(NAME_AT - 1)?;
        let raw = rec.get(NAME_AT..)?;
        let name = &raw[..raw.iter().position(|c| *c == 0)?];
        if name != b"." && name != b".." {
            f(name, d_type);
        }
        b = &b[reclen..];
    }
    Some(())
}

/// The entries in a buffer of `linux_dirent64` records with their `d_type` ([`each_dirent`]).
fn parse_dirents_typed(b: &[u8], names: &mut Vec<(OsString, u8)>) -> Option<()> {
    each_dirent(b, |name, d_type| {
        names.push((OsStr::from_bytes(name).to_os_string(), d_type))
    })
}

fn fsync_dir(dir: &impl AsFd, display: &Path) -> Result<(), FsError> {
    let fd = openat(
        dir,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| FsError::io(display.to_path_buf(), "open", e))?;
    fsync(&fd).map_err(|e| FsError::io(display.to_path_buf(), "fsync", e))
}

fn temp_name() -> OsString {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    OsString::from(format!(
        ".gitward-tmp.{}.{}.{:08x}",
        std::process::id(),
        n,
        nanos
    ))
}

/// Creates a fresh temporary file in `dir` (`O_CREAT | O_EXCL | O_NOFOLLOW`) with exactly the
/// permission bits `mode` (set with `fchmod`, so the umask does not change them).
fn create_temp(dir: &impl AsFd, full: &Path, mode: u32) -> Result<(OsString, OwnedFd), FsError> {
    for _ in 0..16 {
        let name = temp_name();
        match openat(
            dir,
            name.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        ) {
            Ok(fd) => {
                if let Err(e) = fchmod(&fd, Mode::from_bits_truncate(mode & 0o7777)) {
                    let _ = unlinkat(dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir);
                    return Err(FsError::io(full.to_path_buf(), "chmod", e));
                }
                return Ok((name, fd));
            }
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(FsError::io(full.to_path_buf(), "create temporary file", e)),
        }
    }
    Err(FsError::io(
        full.to_path_buf(),
        "create temporary file",
        Errno::EEXIST,
    ))
}

/// `renameat2(RENAME_NOREPLACE)`, falling back to check-then-`renameat` on file systems that
/// do not support the flag (`EINVAL`).
fn rename_noreplace(
    src_dir: &impl AsFd,
    src: &OsStr,
    dst_dir: &impl AsFd,
    dst: &OsStr,
) -> Result<(), Errno> {
    match renameat2(src_dir, src, dst_dir, dst, RenameFlags::RENAME_NOREPLACE) {
        Err(Errno::EINVAL) => {
            match fstatat(dst_dir, dst, AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(_) => return Err(Errno::EEXIST),
                Err(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
            renameat(src_dir, src, dst_dir, dst)
        }
        other => other,
    }
}

/// Copies `src` (in `src_dir`) to `dst` (in `dst_dir`) on another file system: into a
/// temporary name first, then renamed into place without replacing anything.
fn copy_across(
    src_dir: &impl AsFd,
    src: &OsStr,
    src_full: &Path,
    dst_dir: &impl AsFd,
    dst: &OsStr,
    dst_full: &Path,
) -> Result<(), FsError> {
    if lstat_at(dst_dir, dst, dst_full)?.is_some() {
        return Err(FsError::Exists {
            path: dst_full.to_path_buf(),
        });
    }
    let tmp = temp_name();
    let tmp_full = dst_full.with_file_name(&tmp);
    let copied = copy_tree(src_dir, src, src_full, dst_dir, &tmp, &tmp_full, 0).and_then(|()| {
        match rename_noreplace(dst_dir, &tmp, dst_dir, dst) {
            Ok(()) => Ok(()),
            Err(Errno::EEXIST) | Err(Errno::ENOTEMPTY) => Err(FsError::Exists {
                path: dst_full.to_path_buf(),
            }),
            Err(e) => Err(FsError::io(dst_full.to_path_buf(), "rename", e)),
        }
    });
    if let Err(e) = copied {
        // Only our own temporary copy is removed; the source is untouched.
        let _ = remove_tree(dst_dir, &tmp, &tmp_full, 0);
        return Err(e);
    }
    fsync_dir(dst_dir, dst_full.parent().unwrap_or(dst_full))
}

fn copy_tree(
    src_dir: &impl AsFd,
    src: &OsStr,
    src_full: &Path,
    dst_dir: &impl AsFd,
    dst: &OsStr,
    dst_full: &Path,
    depth: usize,
) -> Result<(), FsError> {
    if depth > MAX_COPY_DEPTH {
        return Err(FsError::io(
            src_full.to_path_buf(),
            "copy (too deep)",
            Errno::ELOOP,
        ));
    }
    let Some(st) = lstat_at(src_dir, src, src_full)? else {
        return Err(FsError::NotFound {
            path: src_full.to_path_buf(),
        });
    };
    match st.file_type {
        FileType::File { mode, .. } => {
            let fd = open_file_nofollow(src_dir, src, src_full)?;
            let st = fstat(&fd).map_err(|e| FsError::io(src_full.to_path_buf(), "fstat", e))?;
            if file_type_bits(&st) != SFlag::S_IFREG {
                return Err(FsError::NotRegular {
                    path: src_full.to_path_buf(),
                    kind: to_stat(&st, None).file_type.name(),
                });
            }
            let mut input = File::from(fd);
            let (tmp, out) = create_temp(dst_dir, dst_full, mode)?;
            let written = (|| {
                let mut f = File::from(out);
                std::io::copy(&mut input, &mut f).map_err(|source| FsError::Io {
                    path: dst_full.to_path_buf(),
                    op: "copy",
                    source,
                })?;
                f.sync_all().map_err(|source| FsError::Io {
                    path: dst_full.to_path_buf(),
                    op: "fsync",
                    source,
                })?;
                drop(f);
                rename_noreplace(dst_dir, &tmp, dst_dir, dst)
                    .map_err(|e| FsError::io(dst_full.to_path_buf(), "rename", e))
            })();
            if written.is_err() {
                let _ = unlinkat(dst_dir, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
            }
            written
        }
        FileType::Symlink { target } => symlinkat(&target, dst_dir, dst)
            .map_err(|e| FsError::io(dst_full.to_path_buf(), "symlink", e)),
        FileType::Dir { mode } => {
            mkdirat(dst_dir, dst, Mode::from_bits_truncate(mode | 0o700))
                .map_err(|e| FsError::io(dst_full.to_path_buf(), "mkdir", e))?;
            let s = openat(src_dir, src, DIR_WALK, Mode::empty())
                .map_err(|e| classify(src_dir, src, e, src_full.to_path_buf(), "open"))?;
            let d = openat(dst_dir, dst, DIR_WALK, Mode::empty())
                .map_err(|e| classify(dst_dir, dst, e, dst_full.to_path_buf(), "open"))?;
            for name in read_dir_names(&s, src_full)? {
                copy_tree(
                    &s,
                    &name,
                    &src_full.join(&name),
                    &d,
                    &name,
                    &dst_full.join(&name),
                    depth + 1,
                )?;
            }
            fsync_dir(&d, dst_full)?;
            let proc_path = format!("/proc/self/fd/{}", d.as_raw_fd());
            nix::sys::stat::fchmodat(
                nix::fcntl::AT_FDCWD,
                proc_path.as_str(),
                Mode::from_bits_truncate(mode),
                nix::sys::stat::FchmodatFlags::FollowSymlink,
            )
            .map_err(|e| FsError::io(dst_full.to_path_buf(), "chmod", e))
        }
        other => Err(FsError::NotRegular {
            path: src_full.to_path_buf(),
            kind: other.name(),
        }),
    }
}

/// Removes `name` in `dir` and, for a folder, everything below it — without following links.
fn remove_tree(dir: &impl AsFd, name: &OsStr, full: &Path, depth: usize) -> Result<(), FsError> {
    if depth > MAX_COPY_DEPTH {
        return Err(FsError::io(
            full.to_path_buf(),
            "remove (too deep)",
            Errno::ELOOP,
        ));
    }
    let Some(st) = lstat_at(dir, name, full)? else {
        return Ok(());
    };
    if st.is_dir() {
        let sub = openat(dir, name, DIR_WALK, Mode::empty())
            .map_err(|e| classify(dir, name, e, full.to_path_buf(), "open"))?;
        for child in read_dir_names(&sub, full)? {
            remove_tree(&sub, &child, &full.join(&child), depth + 1)?;
        }
        unlinkat(dir, name, UnlinkatFlags::RemoveDir)
            .map_err(|e| classify(dir, name, e, full.to_path_buf(), "rmdir"))
    } else {
        unlinkat(dir, name, UnlinkatFlags::NoRemoveDir)
            .map_err(|e| classify(dir, name, e, full.to_path_buf(), "unlink"))
    }
}

/// Write the dirty pages of the file open on `fd` back and wait for them (`sync_file_range`
/// with `WAIT_BEFORE | WRITE | WAIT_AFTER`; a read-only descriptor is enough; no journal
/// commit, no device flush). Writeback write-protects every shared mapping of those pages, so
/// on a file system whose `page_mkwrite` updates the file's times (ext4, XFS, Btrfs, F2FS; not
/// tmpfs) the next write through any mapping faults and moves `mtime` and `ctime`. The one
/// place both caches keyed by an index's stat take this step (wt-check's verdicts,
/// safe-git's gitlinks; R13-3).
pub fn write_back(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    use nix::libc::{
        SYNC_FILE_RANGE_WAIT_AFTER, SYNC_FILE_RANGE_WAIT_BEFORE, SYNC_FILE_RANGE_WRITE,
    };
    // SAFETY: a plain system call on a borrowed, open descriptor; no memory is passed.
    let r = unsafe {
        nix::libc::sync_file_range(
            fd.as_raw_fd(),
            0,
            0,
            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

#[cfg(test)]
mod tests;
