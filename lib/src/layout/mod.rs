//! Git layout: discovery of a repository's git dir, common dir and work tree the way git does
//! it, `.git` files, linked worktree entries (`worktrees/<id>/`) checked against git's own
//! rules, and submodule git dirs under `modules/`.
//!
//! # Why
//!
//! Everything git does starts with *where* the git dir is, and an agent can write most of
//! what decides it: a `.git` file, a `.git` link, a `commondir`, a garbled `HEAD` that makes
//! git skip the repository's own `.git` and climb into a parent repository (research
//! `git-exec-surfaces.md`, headline 8), a `worktrees/<id>/gitdir` that makes `worktree prune`
//! delete an entry. A host-side tool must know the layout *before* it runs git, and must
//! refuse a layout it cannot vouch for instead of guessing.
//!
//! # Invariants
//!
//! - Every file is read through [`crate::fsx`]: no symbolic link below `/` is ever followed.
//!   The caller's own start path (and ceilings) are resolved once, like git's `getcwd`;
//!   every path that comes from a file (a gitfile, `commondir`, `gitdir`) is resolved
//!   component by component, and a link anywhere on it is [`LayoutError::Link`].
//!   git writes real paths into these files (`write_worktree_linking_files` calls
//!   `strbuf_realpath`), so an honest layout has no link to refuse.
//! - The checks are git's own: [`is_git_directory`] (`setup.c:is_git_directory`),
//!   [`validate_head`] (`setup.c:validate_headref`), [`read_gitfile`]
//!   (`setup.c:read_gitfile_gently`), `commondir` (`setup.c:get_common_dir_noenv`), the
//!   upward walk (`setup.c:setup_git_directory_gently_1`), and for worktree entries
//!   `worktree.c:get_linked_worktree`, `validate_worktree` and `should_prune_worktree`.
//! - Where git would silently do something a host-side tool cannot vouch for — skip an
//!   invalid `.git` folder and use a parent repository, follow a `.git` link, follow a gitfile
//!   to an arbitrary git dir, honour a `commondir` in a main git dir — [`discover`] refuses,
//!   with a [`LayoutError`] variant of its own naming the path and the reason.
//! - Unknown is not clean: an unreadable component is an error, never "no repository".
//!
//! Paths read from files are compared after resolution, not as strings. Reads race with an
//! agent that keeps writing: each read is no-follow, so a race can make a check fail or see a
//! different file, but never makes it read through a link.

#[cfg(test)]
mod differential;
mod nested;
pub mod walk;
pub mod walk_cache;
mod worktrees;

pub use nested::{nested_repositories, NestedFinding, NestedKind, NestedLimits, NestedReport};
pub use worktrees::{
    submodule_git_dirs, worktree_entries, worktree_entries_recorded, AdminFile, ModuleStatus,
    Problem, SubmoduleGitDir, WorktreeEntry,
};

use crate::fsx::{FileType, FsError, Root};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// git refuses a `.git` file larger than this (`read_gitfile_gently`: `max_file_size`).
pub const GITFILE_MAX: u64 = 1 << 20;
/// `validate_headref` reads at most this many bytes of `HEAD`.
pub const HEAD_READ_MAX: u64 = 255;
/// Upper bound for small files git reads whole (`commondir`, `gitdir`, `locked`).
pub const SMALL_FILE_MAX: u64 = 1 << 20;

/// What kind of git dir a [`Layout`] describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Kind {
    /// A main worktree's `.git` folder (or a main git dir reached from inside it).
    Main,
    /// A linked worktree: git dir `<common>/worktrees/<id>`.
    Linked { id: String },
    /// A bare repository.
    Bare,
    /// A submodule whose git dir lives in the superproject's `modules/` (at any depth).
    Submodule {
        superproject_common_dir: PathBuf,
        name: String,
    },
}

/// How the git dir was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum FoundBy {
    /// `<work tree>/.git` is a folder.
    DotGitDir,
    /// `<work tree>/.git` is a gitfile (`gitdir: <path>`).
    Gitfile { gitfile: PathBuf },
    /// A folder reached by the upward walk is itself a git dir (git's `GIT_DIR_BARE`).
    Bare,
    /// Given explicitly (`--git-dir`, `GIT_DIR`).
    Explicit,
}

/// Where a repository's git dir, common dir and work tree are. All paths are absolute and
/// resolved without following links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    pub work_tree: Option<PathBuf>,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    pub kind: Kind,
    pub found_by: FoundBy,
}

impl Layout {
    /// git's `is_implicit_bare_repo` for this git dir: whether `safe.bareRepository=explicit`
    /// still lets git use it when discovered.
    pub fn is_implicit_bare_repo(&self) -> bool {
        is_implicit_bare_repo(&self.git_dir)
    }
}

/// Why the upward walk stopped without finding a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A ceiling directory (`GIT_CEILING_DIRECTORIES`).
    Ceiling,
    /// A file system boundary (`GIT_DISCOVERY_ACROSS_FILESYSTEM` not set).
    MountPoint,
    /// The root folder `/`.
    Root,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Ceiling => "ceiling directory",
            StopReason::MountPoint => "file system boundary",
            StopReason::Root => "root folder",
        })
    }
}

/// A layout gitward cannot vouch for, or could not read. Every variant names the path; the
/// message says what git would do and why it is refused.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A symbolic link on a path read from the layout. Not followed.
    #[error("{}: link refused (a symbolic link in the git layout; not followed)", .path.display())]
    Link { path: PathBuf },
    /// `<dir>/.git` is a symbolic link. git follows it to whatever git dir it names.
    #[error("{}: `.git` is a symbolic link to {}: refused (git would follow it to a foreign git dir)", .path.display(), .target.display())]
    DotGitLink { path: PathBuf, target: PathBuf },
    /// `<dir>/.git` is neither a folder nor a regular file (fifo, socket, device).
    #[error("{}: `.git` is a {kind}: refused (git would skip it and search the parent folders)", .path.display())]
    DotGitOther { path: PathBuf, kind: &'static str },
    /// `<dir>/.git` is a folder that fails git's git-dir test. git skips it silently and
    /// climbs into a parent repository, whose config and hooks then apply.
    #[error("{}: `.git` folder is not a valid git dir ({reason}): refused (git would skip it and use a parent repository)", .path.display())]
    DotGitInvalid { path: PathBuf, reason: String },
    /// A folder given or named as a git dir fails git's git-dir test.
    #[error("{}: not a git dir ({reason})", .path.display())]
    NotAGitDir { path: PathBuf, reason: String },
    /// A `.git` file git would refuse (or, for some forms, read differently).
    #[error("{}: invalid gitfile: {reason}", .path.display())]
    InvalidGitfile { path: PathBuf, reason: String },
    /// A bare repository found by the walk inside another repository's work tree. git uses it
    /// (unless `safe.bareRepository=explicit`), with its own config and hooks.
    #[error("{}: bare repository inside the work tree of {}: refused (git would use it and its config unless safe.bareRepository=explicit; name it with --git-dir to use it)", .path.display(), .enclosing.display())]
    EmbeddedBare { path: PathBuf, enclosing: PathBuf },
    /// A valid gitfile whose target is neither a linked worktree's admin dir that points back
    /// at it nor a submodule git dir inside the enclosing superproject's `modules/`.
    #[error("{}: gitfile points to {}: refused ({reason})", .path.display(), .target.display())]
    GitfileUnvouched {
        path: PathBuf,
        target: PathBuf,
        reason: String,
    },
    /// A `commondir` file in a main git dir, bare repository or submodule git dir. git never
    /// writes one there, and honours it: config, hooks, objects and refs come from elsewhere.
    #[error("{}: `commondir` in a git dir that is not a linked worktree's (points to {}): refused (git never writes one there; it would take config and hooks from that folder)", .path.display(), .points_to.display())]
    CommondirInMainGitDir { path: PathBuf, points_to: PathBuf },
    /// A linked worktree's `commondir` does not resolve to the common dir holding the entry.
    #[error("{}: `commondir` resolves to {}, not to {} which holds this entry: refused", .path.display(), .points_to.display(), .expected.display())]
    CommondirMismatch {
        path: PathBuf,
        points_to: PathBuf,
        expected: PathBuf,
    },
    /// A `commondir` file git would die on (empty, unreadable, too large).
    #[error("{}: invalid `commondir`: {reason}", .path.display())]
    InvalidCommondir { path: PathBuf, reason: String },
    /// No repository between the start folder and where the walk stopped.
    #[error("{}: not a git repository (or any parent up to {}: {reason})", .start.display(), .stopped_at.display())]
    NoRepository {
        start: PathBuf,
        stopped_at: PathBuf,
        reason: StopReason,
    },
    /// A part of the layout could not be read. Fail closed.
    #[error("{}: cannot read the git layout: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: FsError,
    },
    /// The caller's start path could not be resolved.
    #[error("{}: {source}", .path.display())]
    Start {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<FsError> for LayoutError {
    fn from(e: FsError) -> Self {
        match e {
            FsError::Link { path } => LayoutError::Link { path },
            other => LayoutError::Unreadable {
                path: other.path().to_path_buf(),
                source: other,
            },
        }
    }
}

impl LayoutError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            LayoutError::Link { path }
            | LayoutError::DotGitLink { path, .. }
            | LayoutError::DotGitOther { path, .. }
            | LayoutError::DotGitInvalid { path, .. }
            | LayoutError::NotAGitDir { path, .. }
            | LayoutError::InvalidGitfile { path, .. }
            | LayoutError::GitfileUnvouched { path, .. }
            | LayoutError::EmbeddedBare { path, .. }
            | LayoutError::CommondirInMainGitDir { path, .. }
            | LayoutError::CommondirMismatch { path, .. }
            | LayoutError::InvalidCommondir { path, .. }
            | LayoutError::Unreadable { path, .. }
            | LayoutError::Start { path, .. } => path,
            LayoutError::NoRepository { start, .. } => start,
        }
    }

    /// A link was refused somewhere in the layout (callers report "link refused").
    pub fn is_link(&self) -> bool {
        matches!(
            self,
            LayoutError::Link { .. } | LayoutError::DotGitLink { .. }
        )
    }
}

// ---- no-follow access to absolute paths ---------------------------------------------------

/// Absolute-path access through [`Root::system`]: every component below `/` is opened
/// without following links.
///
/// Folder handles are cached by absolute path, so a lookup below an already opened folder is
/// one `*at` call relative to its handle instead of a walk from `/`. A folder swapped for a
/// link after it was opened is not noticed: the handle keeps pointing at the real folder it
/// opened, never at the link's target.
pub(crate) struct Sys {
    root: Root,
    /// Folder handles by absolute path, keyed by the path's bytes (hashed and compared as
    /// bytes, not component by component as `Path` does): every key is built by pushing
    /// plain components onto `/`, so one folder has one spelling; another spelling of a
    /// path only misses the cache and is walked again.
    dirs: RefCell<FastMap<OsString, Rc<Root>>>,
}

/// A `HashMap` with [`FxHasher`]: for the per-pass caches of opened folders, looked up once
/// per path component (thousands of times on a repository with 200 worktrees).
pub(crate) type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// rustc's FxHash: a multiply-rotate hash, several times cheaper than SipHash on short keys.
/// Not resistant to chosen collisions; used only for caches bounded in size (a collision
/// costs a comparison, never a wrong answer).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The `lstat` [`Sys::resolve_last`] took of a resolved path's last component, if it took
/// one (`Some(None)`: missing).
pub(crate) type LastStat = Option<Option<crate::fsx::Stat>>;

/// Folder handles kept open at most by one [`Sys`] (each is a file descriptor).
const SYS_DIR_CACHE_MAX: usize = 256;

impl Sys {
    pub(crate) fn new() -> Result<Sys, LayoutError> {
        let root = Root::system()?;
        let mut dirs = FastMap::default();
        dirs.insert(OsString::from("/"), Rc::new(root.try_clone()?));
        Ok(Sys {
            root,
            dirs: RefCell::new(dirs),
        })
    }

    /// The no-follow handle of the folder `abs`.
    fn dir(&self, abs: &Path) -> Result<Rc<Root>, FsError> {
        if let Some(r) = self.dirs.borrow().get(abs.as_os_str()) {
            return Ok(r.clone());
        }
        let escape = || FsError::Escape {
            path: abs.to_path_buf(),
        };
        let (mut cur_path, mut cur) = {
            let cache = self.dirs.borrow();
            abs.ancestors()
                .skip(1)
                .find_map(|a| {
                    cache
                        .get(a.as_os_str())
                        .map(|r| (a.to_path_buf(), r.clone()))
                })
                .map(Ok)
                .unwrap_or_else(|| {
                    self.root
                        .try_clone()
                        .map(|r| (PathBuf::from("/"), Rc::new(r)))
                })?
        };
        let rest = abs.strip_prefix(&cur_path).map_err(|_| escape())?;
        let mut cache = self.dirs.borrow_mut();
        if cache.len() > SYS_DIR_CACHE_MAX {
            cache.retain(|p, _| p == "/");
        }
        for c in rest.components() {
            let Component::Normal(name) = c else {
                return Err(escape());
            };
            let next = Rc::new(cur.open_dir(name)?);
            cur_path.push(name);
            cache.insert(cur_path.clone().into_os_string(), next.clone());
            cur = next;
        }
        Ok(cur)
    }

    /// The folder `abs` opened once for both uses — a cached no-follow handle (as
    /// [`Sys::dir`]) and its listing with `d_type` kinds (`fsx::Root::open_dir_listed`).
    pub(crate) fn dir_listed(
        &self,
        abs: &Path,
    ) -> Result<(Rc<Root>, crate::fsx::Listing), FsError> {
        let (parent, name) = self.split(abs)?;
        let (root, kinds) = parent.open_dir_listed(name)?;
        let root = Rc::new(root);
        let mut cache = self.dirs.borrow_mut();
        if cache.len() > SYS_DIR_CACHE_MAX {
            cache.retain(|p, _| p == "/");
        }
        cache.insert(abs.as_os_str().to_os_string(), root.clone());
        Ok((root, kinds))
    }

    /// The parent folder's handle and the leaf name of `abs` (not `/`).
    fn split<'a>(&self, abs: &'a Path) -> Result<(Rc<Root>, &'a OsStr), FsError> {
        let escape = || FsError::Escape {
            path: abs.to_path_buf(),
        };
        let name = abs.file_name().ok_or_else(escape)?;
        let parent = abs.parent().ok_or_else(escape)?;
        if !abs.is_absolute() || abs.components().any(|c| c == Component::ParentDir) {
            return Err(escape());
        }
        Ok((self.dir(parent)?, name))
    }

    pub(crate) fn stat(&self, abs: &Path) -> Result<Option<crate::fsx::Stat>, LayoutError> {
        if abs == Path::new("/") {
            return Ok(Some(self.root.root_stat()?));
        }
        match self.split(abs) {
            Ok((dir, name)) => Ok(dir.stat(name)?),
            Err(FsError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn read(&self, abs: &Path, max: u64) -> Result<Vec<u8>, FsError> {
        let (dir, name) = self.split(abs)?;
        dir.read(name, max)
    }

    pub(crate) fn read_prefix(&self, abs: &Path, max: u64) -> Result<Vec<u8>, FsError> {
        let (dir, name) = self.split(abs)?;
        dir.read_prefix(name, max)
    }

    pub(crate) fn list(&self, abs: &Path) -> Result<Vec<crate::fsx::DirEntry>, FsError> {
        self.dir(abs)?.list("")
    }

    /// git's `realpath`, without following links: `path` (absolute) is resolved component by
    /// component; `..` drops the previous component (which was verified to be a real folder,
    /// so this equals the kernel's `..`). A link is [`LayoutError::Link`]. With `forgiving`,
    /// missing trailing components are kept lexically (`strbuf_realpath_forgiving`);
    /// otherwise a missing component is an error.
    pub(crate) fn resolve(&self, path: &Path, forgiving: bool) -> Result<PathBuf, LayoutError> {
        self.resolve_last(path, forgiving).map(|(p, _)| p)
    }

    /// [`Sys::resolve`], with the `lstat` it took of the resolved path's last component when
    /// it took one (`Some(None)`: missing); `None` when it did not (the last component was a
    /// folder opened earlier, or `..`): a caller that needs it stats the path itself.
    pub(crate) fn resolve_last(
        &self,
        path: &Path,
        forgiving: bool,
    ) -> Result<(PathBuf, LastStat), LayoutError> {
        // Each step is one no-follow lookup relative to the (cached) handle of its parent.
        // `here` is the path resolved so far, kept in step with `depth` (its component count).
        let mut last: LastStat = None;
        let mut here = PathBuf::from("/");
        let mut depth = 0usize;
        let mut missing_at: Option<usize> = None;
        let mut after_non_dir = false;
        let mut comps = path.components().peekable();
        while let Some(c) = comps.next() {
            match c {
                Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
                Component::ParentDir | Component::Normal(_) if after_non_dir => {
                    return Err(LayoutError::Unreadable {
                        path: here.clone(),
                        source: FsError::NotDir { path: here },
                    });
                }
                Component::ParentDir => {
                    last = None;
                    if depth == 0 {
                        continue; // `/..` is `/`
                    }
                    here.pop();
                    depth -= 1;
                    if matches!(missing_at, Some(m) if depth <= m) {
                        missing_at = None;
                    }
                }
                Component::Normal(name) => {
                    here.push(name);
                    depth += 1;
                    last = None;
                    if missing_at.is_some() {
                        // Below a missing folder: missing too.
                        last = Some(None);
                        continue;
                    }
                    if self.dirs.borrow().contains_key(here.as_os_str()) {
                        continue; // opened no-follow earlier: a real folder
                    }
                    if comps.peek().is_some() {
                        // Not the last component: it must be a folder to go on, and the next
                        // lookup needs its handle. Opened no-follow as a folder (and cached)
                        // in one call rather than an lstat now and the open on the next
                        // lookup; a link, a missing name or a non-folder is told as the lstat
                        // told it.
                        match self.dir(&here) {
                            Ok(_) => continue,
                            Err(FsError::NotFound { .. }) if forgiving => {
                                missing_at = Some(depth - 1);
                                continue;
                            }
                            Err(FsError::NotFound { .. }) => {
                                return Err(LayoutError::Unreadable {
                                    path: here.clone(),
                                    source: FsError::NotFound { path: here },
                                });
                            }
                            Err(FsError::Link { .. }) => {
                                return Err(LayoutError::Link { path: here })
                            }
                            Err(FsError::NotDir { .. }) => {
                                after_non_dir = true;
                                continue;
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    let st = self.stat(&here)?;
                    last = Some(st.clone());
                    match st {
                        None if forgiving => missing_at = Some(depth - 1),
                        None => {
                            return Err(LayoutError::Unreadable {
                                path: here.clone(),
                                source: FsError::NotFound { path: here },
                            });
                        }
                        Some(st) if st.is_symlink() => {
                            return Err(LayoutError::Link { path: here })
                        }
                        Some(st) if st.is_dir() => {}
                        Some(_) => after_non_dir = true,
                    }
                }
            }
        }
        Ok((here, last))
    }
}

/// `path` made absolute against `base` when relative (git: relative to the folder holding
/// the file that named it).
fn absolute_against(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// Trailing `\n` and `\r` removed, as git does for gitfiles, `commondir` and `gitdir`.
pub(crate) fn trim_crlf(mut b: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = b {
        b = rest;
    }
    b
}

/// C string semantics: the bytes before the first NUL.
fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|c| *c == 0) {
        Some(i) => &b[..i],
        None => b,
    }
}

pub(crate) fn path_from_bytes(b: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b))
}

// ---- git's tests ----------------------------------------------------------------------------

/// What `HEAD` holds when valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "head")]
pub enum Head {
    /// `ref: refs/…` (or a symbolic link into `refs/`).
    Symref { target: String },
    /// A full hex object id (40 or 64 hex digits).
    Detached { oid: String },
}

/// git's `validate_headref` on the contents of a `HEAD` file: valid if, within the first
/// 255 bytes (up to a NUL), it is `ref:` + optional whitespace + `refs/…`, or starts with a
/// full hex object id. Returns what it holds, or `None` when git would call it invalid.
pub fn validate_head(contents: &[u8]) -> Option<Head> {
    let buf = until_nul(&contents[..contents.len().min(HEAD_READ_MAX as usize)]);
    if let Some(rest) = buf.strip_prefix(b"ref:") {
        let start = rest
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
            .unwrap_or(rest.len());
        let refname = &rest[start..];
        if refname.starts_with(b"refs/") {
            let end = refname
                .iter()
                .position(|c| matches!(c, b'\n' | b'\r'))
                .unwrap_or(refname.len());
            return Some(Head::Symref {
                target: String::from_utf8_lossy(&refname[..end]).into_owned(),
            });
        }
    }
    // get_oid_hex_any: tries SHA-256 (64) then SHA-1 (40) hex digits at the start.
    for len in [64usize, 40] {
        if buf.len() >= len && buf[..len].iter().all(u8::is_ascii_hexdigit) {
            return Some(Head::Detached {
                oid: String::from_utf8_lossy(&buf[..len]).into_owned(),
            });
        }
    }
    None
}

/// The result of git's git-dir test on a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirInfo {
    pub git_dir: PathBuf,
    /// The common dir: from `commondir` when present, else the git dir itself.
    pub common_dir: PathBuf,
    /// The raw contents of `commondir`, when present.
    pub commondir_file: Option<Vec<u8>>,
    pub head: Head,
}

/// git's `is_git_directory`: a valid `HEAD` in the folder (a link into `refs/`, a `ref:
/// refs/…` symref or a full hex id) plus `objects/` and `refs/` in its common dir, where the
/// common dir is taken from a `commondir` file if there is one (`get_common_dir_noenv`).
///
/// Stricter than git where git would follow a link (`objects`, `refs`, `commondir` or a
/// component of the commondir path being a link → [`LayoutError::Link`]) or where git
/// accepts a non-folder (`access(X_OK)` on an executable file named `objects`).
/// `GIT_OBJECT_DIRECTORY` is not consulted (callers run git with a defused environment).
pub fn check_git_dir(path: &Path) -> Result<GitDirInfo, LayoutError> {
    let sys = Sys::new()?;
    check_git_dir_with(&sys, path)
}

/// `true` when [`check_git_dir`] passes.
pub fn is_git_directory(path: &Path) -> bool {
    check_git_dir(path).is_ok()
}

fn not_git_dir(path: &Path, reason: impl Into<String>) -> LayoutError {
    LayoutError::NotAGitDir {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

pub(crate) fn read_head(sys: &Sys, head_path: &Path) -> Result<Result<Head, String>, LayoutError> {
    let Some(st) = sys.stat(head_path)? else {
        return Ok(Err("no HEAD".into()));
    };
    match &st.file_type {
        FileType::Symlink { target } => Ok(head_link_verdict(target)),
        FileType::File { .. } => match sys.read_prefix(head_path, HEAD_READ_MAX) {
            Ok(bytes) => Ok(validate_head(&bytes).ok_or_else(|| {
                "HEAD is neither `ref: refs/…` nor a full hex object id".to_string()
            })),
            Err(FsError::NotFound { .. }) => Ok(Err("no HEAD".into())),
            Err(e) => Err(e.into()),
        },
        other => Ok(Err(format!("HEAD is a {}", other.name()))),
    }
}

/// validate_headref on a HEAD that is a symbolic link: valid when its target starts with
/// `refs/` (the link is read, never followed).
pub(crate) fn head_link_verdict(target: &Path) -> Result<Head, String> {
    let t = target.as_os_str().as_bytes();
    if t.len() >= 5 && t.starts_with(b"refs/") {
        Ok(Head::Symref {
            target: String::from_utf8_lossy(t).into_owned(),
        })
    } else {
        Err(format!(
            "HEAD is a symbolic link to {}, not into refs/",
            target.display()
        ))
    }
}

/// Reads and resolves `<git_dir>/commondir` (`get_common_dir_noenv`): trailing CR/LF
/// stripped, relative to the git dir. `Ok(None)` when there is no such file.
pub(crate) fn read_commondir(
    sys: &Sys,
    git_dir: &Path,
) -> Result<Option<(Vec<u8>, PathBuf)>, LayoutError> {
    let path = git_dir.join("commondir");
    let raw = match sys.read(&path, SMALL_FILE_MAX) {
        Ok(b) => b,
        Err(FsError::NotFound { .. }) => return Ok(None),
        Err(FsError::Link { path }) => return Err(LayoutError::Link { path }),
        Err(e @ (FsError::TooLarge { .. } | FsError::NotRegular { .. })) => {
            return Err(LayoutError::InvalidCommondir {
                path,
                reason: e.to_string(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let data = trim_crlf(&raw);
    if raw.is_empty() {
        // git: strbuf_read_file(...) <= 0 → die("failed to read").
        return Err(LayoutError::InvalidCommondir {
            path,
            reason: "empty (git dies: failed to read)".into(),
        });
    }
    let target = absolute_against(git_dir, &path_from_bytes(until_nul(data)));
    let resolved = match sys.resolve(&target, false) {
        Ok(p) => p,
        Err(LayoutError::Unreadable {
            source: FsError::NotFound { .. },
            ..
        }) => {
            return Err(not_git_dir(
                git_dir,
                format!(
                    "commondir points to {}, which does not exist",
                    target.display()
                ),
            ))
        }
        Err(e) => return Err(e),
    };
    Ok(Some((raw, resolved)))
}

pub(crate) fn check_git_dir_with(sys: &Sys, path: &Path) -> Result<GitDirInfo, LayoutError> {
    let git_dir = sys.resolve(path, true)?;
    match sys.stat(&git_dir)? {
        None => return Err(not_git_dir(&git_dir, "does not exist")),
        Some(st) if st.is_dir() => {}
        Some(st) => return Err(not_git_dir(&git_dir, format!("a {}", st.file_type.name()))),
    }
    let head = read_head(sys, &git_dir.join("HEAD"))?.map_err(|r| not_git_dir(&git_dir, r))?;
    let (commondir_file, common_dir) = match read_commondir(sys, &git_dir)? {
        Some((raw, resolved)) => (Some(raw), resolved),
        None => (None, git_dir.clone()),
    };
    for sub in ["objects", "refs"] {
        let p = common_dir.join(sub);
        match sys.stat(&p)? {
            Some(st) if st.is_dir() => {}
            Some(st) if st.is_symlink() => return Err(LayoutError::Link { path: p }),
            Some(st) => {
                return Err(not_git_dir(
                    &git_dir,
                    format!("{} is a {}", p.display(), st.file_type.name()),
                ))
            }
            None => {
                return Err(not_git_dir(
                    &git_dir,
                    format!("no {sub}/ in the common dir {}", common_dir.display()),
                ))
            }
        }
    }
    Ok(GitDirInfo {
        git_dir,
        common_dir,
        commondir_file,
        head,
    })
}

/// A parsed `.git` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gitfile {
    /// The `.git` file itself.
    pub path: PathBuf,
    /// The path as written after `gitdir: ` (trailing CR/LF stripped).
    pub raw_target: PathBuf,
    /// The target, made absolute against the file's folder and resolved (no links).
    pub target: PathBuf,
    /// git's git-dir test on the target.
    pub info: GitDirInfo,
}

/// git's `read_gitfile_gently`: `path` must be a regular file of at most 1 MiB starting with
/// `gitdir: `; trailing CR/LF are stripped; a relative path is relative to the folder holding
/// the file; the target must pass the git-dir test. A link (the file itself or on the target
/// path) is refused rather than followed.
pub fn read_gitfile(path: &Path) -> Result<Gitfile, LayoutError> {
    let sys = Sys::new()?;
    read_gitfile_with(&sys, path)
}

fn invalid_gitfile(path: &Path, reason: impl Into<String>) -> LayoutError {
    LayoutError::InvalidGitfile {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Parses gitfile bytes the way `read_gitfile_gently` does; returns the raw target path.
pub(crate) fn parse_gitfile(path: &Path, raw: &[u8]) -> Result<PathBuf, LayoutError> {
    if !raw.starts_with(b"gitdir: ") {
        return Err(invalid_gitfile(path, "does not start with `gitdir: `"));
    }
    let body = trim_crlf(raw);
    if body.len() < 9 {
        return Err(invalid_gitfile(path, "no path after `gitdir: `"));
    }
    let target = until_nul(&body[8..]);
    if target.is_empty() {
        return Err(invalid_gitfile(path, "no path after `gitdir: `"));
    }
    Ok(path_from_bytes(target))
}

pub(crate) fn read_gitfile_with(sys: &Sys, path: &Path) -> Result<Gitfile, LayoutError> {
    let raw = match sys.read(path, GITFILE_MAX) {
        Ok(b) => b,
        Err(FsError::Link { .. }) => {
            let target = match sys.stat(path)? {
                Some(crate::fsx::Stat {
                    file_type: FileType::Symlink { target },
                    ..
                }) => target,
                _ => PathBuf::new(),
            };
            return Err(LayoutError::DotGitLink {
                path: path.to_path_buf(),
                target,
            });
        }
        Err(FsError::TooLarge { .. }) => {
            return Err(invalid_gitfile(
                path,
                "larger than 1 MiB (git: too large to be a .git file)",
            ))
        }
        Err(FsError::NotRegular { kind, .. }) => {
            return Err(invalid_gitfile(
                path,
                format!("a {kind}, not a regular file"),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let raw_target = parse_gitfile(path, &raw)?;
    let folder = path.parent().unwrap_or(Path::new("/"));
    let target = sys.resolve(&absolute_against(folder, &raw_target), true)?;
    let info = match check_git_dir_with(sys, &target) {
        Ok(info) => info,
        Err(LayoutError::NotAGitDir { reason, .. }) => {
            return Err(invalid_gitfile(
                path,
                format!("target {} is not a git dir ({reason})", target.display()),
            ))
        }
        Err(e) => return Err(e),
    };
    Ok(Gitfile {
        path: path.to_path_buf(),
        raw_target,
        target,
        info,
    })
}

/// git's `is_implicit_bare_repo`: git dirs that `safe.bareRepository=explicit` still allows —
/// a path ending in the component `.git`, or containing `/.git/worktrees/` or
/// `/.git/modules/`.
pub fn is_implicit_bare_repo(path: &Path) -> bool {
    let b = path.as_os_str().as_bytes();
    let ends_with_dot_git = path.file_name() == Some(OsStr::new(".git"));
    let contains = |needle: &[u8]| b.windows(needle.len()).any(|w| w == needle);
    ends_with_dot_git || contains(b"/.git/worktrees/") || contains(b"/.git/modules/")
}

// ---- discovery ------------------------------------------------------------------------------

/// Options of [`discover_with`].
#[derive(Debug, Clone, Default)]
pub struct DiscoverOptions {
    /// `GIT_CEILING_DIRECTORIES`: absolute folders, each resolved once (entries that cannot be
    /// resolved are dropped, as git does).
    pub ceilings: Vec<PathBuf>,
    /// `GIT_DISCOVERY_ACROSS_FILESYSTEM=true`.
    pub across_filesystems: bool,
    /// Accept a bare repository found by the walk inside another repository's work tree
    /// (an "embedded" bare repository, the case `safe.bareRepository=explicit` exists for).
    /// Refused by default.
    pub allow_embedded_bare: bool,
}

/// git's upward walk from `start` (`setup_git_directory_gently_1`) with git's ceiling rules,
/// stopping at file system boundaries. See [`discover_with`].
pub fn discover(start: &Path, ceilings: &[PathBuf]) -> Result<Layout, LayoutError> {
    discover_with(
        start,
        &DiscoverOptions {
            ceilings: ceilings.to_vec(),
            across_filesystems: false,
            allow_embedded_bare: false,
        },
    )
}

/// git's upward walk: in each folder from `start` up, `<dir>/.git` as a gitfile or a git
/// dir, then `<dir>` itself as a bare git dir; stop before a ceiling that is a proper
/// ancestor of `start` (git's `longest_ancestor_length`) and, unless `across_filesystems`,
/// at a folder on another device than `start`.
///
/// Refused, each with its own [`LayoutError`] variant: a `.git` folder failing the git-dir
/// test (git would climb into a parent repository), a `.git` link, a `.git` fifo/socket/
/// device, an invalid gitfile, a gitfile whose target is neither the admin dir of a linked
/// worktree that points back at it (with `commondir` resolving to the common dir holding it)
/// nor a submodule git dir inside the enclosing superproject's git dir, a `commondir` in a
/// main git dir, and any unreadable component.
pub fn discover_with(start: &Path, opts: &DiscoverOptions) -> Result<Layout, LayoutError> {
    let sys = Sys::new()?;
    let start = std::fs::canonicalize(start).map_err(|source| LayoutError::Start {
        path: start.to_path_buf(),
        source,
    })?;
    let ceilings: Vec<PathBuf> = opts
        .ceilings
        .iter()
        .filter(|c| c.is_absolute())
        .filter_map(|c| std::fs::canonicalize(c).ok())
        .collect();
    let walk = Walk {
        ceilings,
        across_filesystems: opts.across_filesystems,
        allow_embedded_bare: opts.allow_embedded_bare,
    };
    discover_from(&sys, &start, &walk)
}

/// The walk's settings, resolved.
struct Walk {
    ceilings: Vec<PathBuf>,
    across_filesystems: bool,
    allow_embedded_bare: bool,
}

fn discover_from(sys: &Sys, start: &Path, walk: &Walk) -> Result<Layout, LayoutError> {
    let ceilings = &walk.ceilings;
    // The deepest ceiling that is a proper ancestor of start; folders at or above it are
    // never examined.
    let ceiling = ceilings
        .iter()
        .filter(|c| start.starts_with(c) && start != c.as_path())
        .max_by_key(|c| c.components().count());
    match sys.stat(start)? {
        Some(st) if st.is_dir() => {}
        Some(st) => {
            return Err(LayoutError::Start {
                path: start.to_path_buf(),
                source: std::io::Error::other(format!("not a folder ({})", st.file_type.name())),
            })
        }
        None => {
            return Err(LayoutError::Start {
                path: start.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })
        }
    }
    // One no-follow handle per folder from `/` down to start: each step of the walk is then a
    // couple of lookups relative to its folder, not a walk from `/`.
    let mut chain = Vec::new();
    for dir in start.ancestors().collect::<Vec<_>>().into_iter().rev() {
        chain.push(sys.dir(dir)?);
    }
    let start_dev = chain.last().expect("non-empty").root_stat()?.dev;
    for (i, folder) in chain.iter().enumerate().rev() {
        let dir = folder.path();
        if i + 1 != chain.len() {
            if let Some(c) = ceiling {
                if !dir.starts_with(c) || dir == c.as_path() {
                    return Err(LayoutError::NoRepository {
                        start: start.to_path_buf(),
                        stopped_at: dir.to_path_buf(),
                        reason: StopReason::Ceiling,
                    });
                }
            }
            if !walk.across_filesystems && folder.root_stat()?.dev != start_dev {
                return Err(LayoutError::NoRepository {
                    start: start.to_path_buf(),
                    stopped_at: dir.to_path_buf(),
                    reason: StopReason::MountPoint,
                });
            }
        }
        if let Some(layout) = examine_folder(sys, folder, walk)? {
            return Ok(layout);
        }
    }
    Err(LayoutError::NoRepository {
        start: start.to_path_buf(),
        stopped_at: PathBuf::from("/"),
        reason: StopReason::Root,
    })
}

/// One step of the walk: `<dir>/.git`, then `<dir>` as a bare git dir.
fn examine_folder(sys: &Sys, folder: &Root, walk: &Walk) -> Result<Option<Layout>, LayoutError> {
    let dir = folder.path();
    let dot_git = dir.join(".git");
    if let Some(st) = folder.stat(".git")? {
        return match st.file_type {
            FileType::Symlink { target } => Err(LayoutError::DotGitLink {
                path: dot_git,
                target,
            }),
            FileType::File { .. } => vouch_gitfile(sys, &dot_git, dir, walk).map(Some),
            FileType::Dir { .. } => {
                let info = match check_git_dir_with(sys, &dot_git) {
                    Ok(info) => info,
                    Err(LayoutError::NotAGitDir { reason, .. }) => {
                        return Err(LayoutError::DotGitInvalid {
                            path: dot_git,
                            reason,
                        })
                    }
                    Err(e) => return Err(e),
                };
                if info.commondir_file.is_some() {
                    return Err(LayoutError::CommondirInMainGitDir {
                        path: dot_git.join("commondir"),
                        points_to: info.common_dir,
                    });
                }
                Ok(Some(Layout {
                    work_tree: Some(dir.to_path_buf()),
                    git_dir: info.git_dir,
                    common_dir: info.common_dir,
                    kind: Kind::Main,
                    found_by: FoundBy::DotGitDir,
                }))
            }
            other => Err(LayoutError::DotGitOther {
                path: dot_git,
                kind: other.name(),
            }),
        };
    }
    // `<dir>` itself as a git dir (git's GIT_DIR_BARE). A folder whose HEAD is not valid is
    // simply not a git dir; once HEAD is valid, anything we cannot vouch for is refused.
    if folder.stat("HEAD")?.is_none() {
        return Ok(None);
    }
    match check_git_dir_with(sys, dir) {
        Err(LayoutError::NotAGitDir { .. }) => Ok(None),
        Err(e) => Err(e),
        Ok(info) => {
            let layout = classify_git_dir(sys, info, None, FoundBy::Bare)?;
            if !walk.allow_embedded_bare && !is_implicit_bare_repo(dir) {
                if let Some(enclosing) = enclosing_dot_git(sys, dir)? {
                    return Err(LayoutError::EmbeddedBare {
                        path: dir.to_path_buf(),
                        enclosing,
                    });
                }
            }
            Ok(Some(layout))
        }
    }
}

/// The nearest `.git` (of any kind) in a folder above `dir`: `dir` then lies in that
/// repository's work tree.
fn enclosing_dot_git(sys: &Sys, dir: &Path) -> Result<Option<PathBuf>, LayoutError> {
    for anc in dir.ancestors().skip(1) {
        let candidate = anc.join(".git");
        if sys.stat(&candidate)?.is_some() {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// Names the kind of a git dir reached directly (bare discovery or `--git-dir`), refusing a
/// `commondir` anywhere but in a linked worktree's admin dir whose `commondir` resolves to
/// the common dir that holds it.
fn classify_git_dir(
    sys: &Sys,
    info: GitDirInfo,
    work_tree: Option<PathBuf>,
    found_by: FoundBy,
) -> Result<Layout, LayoutError> {
    if info.commondir_file.is_some() {
        let id =
            linked_admin_id(&info.git_dir).ok_or_else(|| LayoutError::CommondirInMainGitDir {
                path: info.git_dir.join("commondir"),
                points_to: info.common_dir.clone(),
            })?;
        let holder = info
            .git_dir
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        if info.common_dir != holder {
            return Err(LayoutError::CommondirMismatch {
                path: info.git_dir.join("commondir"),
                points_to: info.common_dir,
                expected: holder,
            });
        }
        check_main_git_dir(sys, &holder)?;
        return Ok(Layout {
            work_tree,
            git_dir: info.git_dir,
            common_dir: info.common_dir,
            kind: Kind::Linked { id },
            found_by,
        });
    }
    let kind = if info.git_dir.file_name() == Some(OsStr::new(".git")) {
        Kind::Main
    } else if let Some((sup, name)) = enclosing_modules_git_dir(sys, &info.git_dir)? {
        Kind::Submodule {
            superproject_common_dir: sup.common_dir,
            name,
        }
    } else {
        Kind::Bare
    };
    Ok(Layout {
        work_tree,
        git_dir: info.git_dir.clone(),
        common_dir: info.common_dir,
        kind,
        found_by,
    })
}

/// `Some(id)` when `git_dir` is `<something>/worktrees/<id>`.
fn linked_admin_id(git_dir: &Path) -> Option<String> {
    let parent = git_dir.parent()?;
    if parent.file_name() != Some(OsStr::new("worktrees")) {
        return None;
    }
    Some(git_dir.file_name()?.to_string_lossy().into_owned())
}

/// A common dir holding linked worktrees must itself be a git dir without `commondir`.
fn check_main_git_dir(sys: &Sys, common: &Path) -> Result<GitDirInfo, LayoutError> {
    let info = check_git_dir_with(sys, common)?;
    if info.commondir_file.is_some() {
        return Err(LayoutError::CommondirInMainGitDir {
            path: common.join("commondir"),
            points_to: info.common_dir,
        });
    }
    Ok(info)
}

/// For a git dir below some `<G>/modules/`, the nearest such `G` that is a git dir, and the
/// submodule name (the path below `modules/`).
fn enclosing_modules_git_dir(
    sys: &Sys,
    git_dir: &Path,
) -> Result<Option<(GitDirInfo, String)>, LayoutError> {
    let mut cur = git_dir;
    while let Some(parent) = cur.parent() {
        if parent.file_name() == Some(OsStr::new("modules")) {
            if let Some(g) = parent.parent() {
                match check_git_dir_with(sys, g) {
                    Ok(info) => {
                        let name = git_dir
                            .strip_prefix(parent)
                            .map(|p| p.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        return Ok(Some((info, name)));
                    }
                    Err(LayoutError::NotAGitDir { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        cur = parent;
    }
    Ok(None)
}

/// A gitfile at `<dir>/.git` is vouched for only when its target is (a) the admin dir
/// `<common>/worktrees/<id>` of a linked worktree whose `gitdir` points back at this file
/// and whose `commondir` resolves to `<common>`, or (b) a submodule git dir inside the git
/// dir of the repository enclosing `<dir>` (`<super git dir>/modules/<name>`, any depth).
fn vouch_gitfile(
    sys: &Sys,
    gitfile: &Path,
    dir: &Path,
    walk: &Walk,
) -> Result<Layout, LayoutError> {
    let gf = read_gitfile_with(sys, gitfile)?;
    let unvouched = |reason: String| LayoutError::GitfileUnvouched {
        path: gitfile.to_path_buf(),
        target: gf.target.clone(),
        reason,
    };
    let found_by = FoundBy::Gitfile {
        gitfile: gitfile.to_path_buf(),
    };
    if let Some(id) = linked_admin_id(&gf.target) {
        let holder = gf
            .target
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        if gf.info.commondir_file.is_none() {
            return Err(unvouched(format!(
                "worktrees/{id} has no commondir file (git would use it as its own common dir)"
            )));
        }
        if gf.info.common_dir != holder {
            return Err(LayoutError::CommondirMismatch {
                path: gf.target.join("commondir"),
                points_to: gf.info.common_dir.clone(),
                expected: holder,
            });
        }
        check_main_git_dir(sys, &holder)?;
        let backlink = worktrees::read_backlink(sys, &gf.target)?;
        match backlink {
            // git strips a trailing `/.git` from gitdir (get_linked_worktree), so both forms
            // name this worktree.
            Some(dot_git) if dot_git == gitfile || dot_git == dir => {}
            Some(dot_git) => {
                return Err(unvouched(format!(
                    "worktrees/{id}/gitdir points to {}, not back to this .git file",
                    dot_git.display()
                )))
            }
            None => {
                return Err(unvouched(format!(
                    "worktrees/{id}/gitdir is missing or empty (git does not list this worktree)"
                )))
            }
        }
        return Ok(Layout {
            work_tree: Some(dir.to_path_buf()),
            git_dir: gf.target.clone(),
            common_dir: gf.info.common_dir.clone(),
            kind: Kind::Linked { id },
            found_by,
        });
    }
    if gf.target.components().any(|c| c.as_os_str() == "modules") {
        if let Some(parent) = dir.parent() {
            let sup = discover_from(sys, parent, walk)
                .map_err(|e| unvouched(format!("no enclosing superproject vouches for it: {e}")))?;
            let modules = sup.git_dir.join("modules");
            if gf.target.starts_with(&modules) && gf.target != modules {
                if gf.info.commondir_file.is_some() {
                    return Err(LayoutError::CommondirInMainGitDir {
                        path: gf.target.join("commondir"),
                        points_to: gf.info.common_dir.clone(),
                    });
                }
                let name = gf
                    .target
                    .strip_prefix(&modules)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                return Ok(Layout {
                    work_tree: Some(dir.to_path_buf()),
                    git_dir: gf.target.clone(),
                    common_dir: gf.info.common_dir.clone(),
                    kind: Kind::Submodule {
                        superproject_common_dir: sup.common_dir,
                        name,
                    },
                    found_by,
                });
            }
            return Err(unvouched(format!(
                "not inside the enclosing superproject's {}",
                modules.display()
            )));
        }
    }
    Err(unvouched(
        "neither a linked worktree's admin dir (<common>/worktrees/<id>) nor a submodule git dir \
         inside the enclosing superproject's modules/"
            .into(),
    ))
}

/// An explicit git dir (`--git-dir`, `GIT_DIR`) with the same refusals as [`discover`]. The
/// caller's paths are resolved once. A gitfile is followed under the same rules as in
/// discovery (its folder is taken as the work tree). `work_tree` (`--work-tree`,
/// `GIT_WORK_TREE`) overrides; otherwise a git dir named `.git` has its parent as work tree,
/// a linked worktree's admin dir the folder its `gitdir` names, and any other git dir none.
pub fn open_git_dir(git_dir: &Path, work_tree: Option<&Path>) -> Result<Layout, LayoutError> {
    let sys = Sys::new()?;
    let canon = |p: &Path| {
        std::fs::canonicalize(p).map_err(|source| LayoutError::Start {
            path: p.to_path_buf(),
            source,
        })
    };
    let work_tree = work_tree.map(canon).transpose()?;
    // Resolve the caller's path except for its last component, which is examined no-follow.
    let given = git_dir;
    let parent = given
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = given.file_name().ok_or_else(|| LayoutError::Start {
        path: given.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no final component"),
    })?;
    let path = canon(parent)?.join(name);
    match sys.stat(&path)? {
        None => Err(not_git_dir(&path, "does not exist")),
        Some(st) if st.is_symlink() => Err(LayoutError::DotGitLink {
            path,
            target: match st.file_type {
                FileType::Symlink { target } => target,
                _ => PathBuf::new(),
            },
        }),
        Some(st) if st.is_file() => {
            let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            let walk = Walk {
                ceilings: Vec::new(),
                across_filesystems: true,
                allow_embedded_bare: false,
            };
            let mut layout = vouch_gitfile(&sys, &path, &dir, &walk)?;
            if work_tree.is_some() {
                layout.work_tree = work_tree;
            }
            layout.found_by = FoundBy::Explicit;
            Ok(layout)
        }
        Some(_) => {
            let info = check_git_dir_with(&sys, &path)?;
            let default_wt = if info.git_dir.file_name() == Some(OsStr::new(".git")) {
                info.git_dir.parent().map(Path::to_path_buf)
            } else if linked_admin_id(&info.git_dir).is_some() {
                worktrees::read_backlink(&sys, &info.git_dir)?
                    .and_then(|p| p.parent().map(Path::to_path_buf))
            } else {
                None
            };
            classify_git_dir(&sys, info, work_tree.or(default_wt), FoundBy::Explicit)
        }
    }
}

#[cfg(test)]
mod tests;
