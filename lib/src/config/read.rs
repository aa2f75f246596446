//! Reading and parsing config files, resolving includes the way git's `config.c` does.

use super::parse::{self, Event};
use super::{
    include_condition, ConfigError, Dialect, Enumeration, FileEntry, FileState, Options, Origin,
    Scope, SectionHeader, Submodules, Tolerated, Trust, Value, MAX_INCLUDE_DEPTH,
};
use crate::catalogue::loader;
use gix::bstr::{BStr, BString, ByteSlice};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// git's install prefix (for `%(prefix)/` in include paths) from its exec path: the exec path
/// minus `/libexec/git-core` or `/lib/git-core` (git's `system_path()` with the built-in
/// prefix); `/usr` when the exec path has neither form.
pub fn git_prefix_for(exec_path: &Path) -> PathBuf {
    let s = exec_path.as_os_str().as_bytes();
    for suffix in [&b"/libexec/git-core"[..], &b"/lib/git-core"[..]] {
        if let Some(p) = s.strip_suffix(suffix) {
            if !p.is_empty() {
                return PathBuf::from(OsStr::from_bytes(p));
            }
        }
    }
    PathBuf::from("/usr")
}

/// Read a file for the config reader: `Ok(None)` when it does not exist (`ENOENT`, `ENOTDIR`,
/// as git's `access_or_die` tolerates), an error when it cannot be read, is not a regular file
/// (a FIFO would block; a folder makes git die too) or is larger than `limit`. The open is
/// non-blocking so a planted FIFO cannot hang the reader.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ConfigError> {
    if let Some(reason) = process_dependent(path) {
        return Err(ConfigError::ProcessDependent {
            file: path.to_path_buf(),
            reason,
        });
    }
    read_bounded_checked(path, limit)
}

/// [`read_bounded`] of a path [`process_dependent`] has just cleared (an include target: the
/// include step checks it to name the including line).
fn read_bounded_checked(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ConfigError> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
    {
        Ok(f) => f,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Unreadable {
                file: path.to_path_buf(),
                source,
            })
        }
    };
    read_opened(file, path, limit).map(Some)
}

/// The checks and the read of [`read_bounded`] once the file is open (without blocking).
fn read_opened(file: std::fs::File, path: &Path, limit: u64) -> Result<Vec<u8>, ConfigError> {
    let md = file.metadata().map_err(|source| ConfigError::Unreadable {
        file: path.to_path_buf(),
        source,
    })?;
    if is_dev_null(&md) {
        // The same empty file for every process; git reads it as an empty config.
        return Ok(Vec::new());
    }
    if !md.is_file() {
        return Err(ConfigError::NotAFile {
            file: path.to_path_buf(),
            kind: file_kind(&md.file_type()),
        });
    }
    if md.len() > limit {
        return Err(ConfigError::TooLarge {
            file: path.to_path_buf(),
            size: md.len(),
            limit,
        });
    }
    let mut buf = Vec::with_capacity(md.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|source| ConfigError::Unreadable {
            file: path.to_path_buf(),
            source,
        })?;
    if buf.len() as u64 > limit {
        return Err(ConfigError::TooLarge {
            file: path.to_path_buf(),
            size: buf.len() as u64,
            limit,
        });
    }
    Ok(buf)
}

fn is_dev_null(md: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    md.file_type().is_char_device() && md.rdev() == nix::sys::stat::makedev(1, 3)
}

/// Does `path` name a file that depends on the process that opens it? Every file gitward reads
/// in git's place (config files and includes, attributes files) must be the file git opens;
/// under procfs (`/proc/self/…`, `/proc/thread-self/…`, `/dev/fd/…` and `/dev/stdin`, which
/// are links into it, `/proc/<pid>/cwd`, a procfs mounted elsewhere) the answer depends on the
/// opener's process, working directory and open descriptors. The path is resolved component
/// by component the way the kernel resolves it (links followed, `..` after the link), and
/// every folder on the way is checked with `statfs`; a link whose text leads into procfs is
/// caught before it is followed. `Some(reason)` names the step.
pub fn process_dependent(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    const MAX_LINKS: usize = 40; // Linux's MAXSYMLINKS
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let on_procfs = |p: &Path| -> bool {
        p.starts_with("/proc")
            || nix::sys::statfs::statfs(p)
                .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC)
    };
    // The names still to walk, last first, as spans of `texts` (the path, then each link's
    // text): no allocation per name. Splitting at `/` and dropping empty names is what
    // `Path::components` does here (it also drops inner `.`, which the walk skips anyway).
    let mut texts: Vec<Vec<u8>> = vec![abs.into_os_string().into_vec()];
    // Sized for a path of a dozen names and a few links: no regrowth on the way.
    let mut todo: Vec<(usize, usize, usize)> = Vec::with_capacity(32);
    let push_names = |todo: &mut Vec<(usize, usize, usize)>, t: usize, text: &[u8]| {
        let at = todo.len();
        let mut start = 0;
        for (i, b) in text.iter().chain(std::iter::once(&b'/')).enumerate() {
            if *b == b'/' {
                if i > start {
                    todo.push((t, start, i));
                }
                start = i + 1;
            }
        }
        todo[at..].reverse();
    };
    push_names(&mut todo, 0, &texts[0]);
    let mut cur = PathBuf::with_capacity(texts[0].len() + 64);
    cur.push("/");
    // The device of each folder of `cur` checked not to be on procfs (the root's unknown: its
    // first step is always checked). A folder or file on the device of the folder it is in is
    // on that folder's file system, so only a step onto another device (a mount point), a
    // link or a step from the root needs the `statfs`.
    let mut devs: Vec<Option<u64>> = Vec::with_capacity(32);
    devs.push(None);
    let mut links = 0usize;
    let mut exists = true;
    while let Some((t, start, end)) = todo.pop() {
        let c = OsStr::from_bytes(&texts[t][start..end]);
        if c == "." {
            continue;
        }
        if c == ".." {
            if cur.pop() {
                devs.pop();
            }
            continue;
        }
        // `cur` is the root and plain names (`.` and `..` are handled above), so a byte
        // prefix says what `Path::starts_with("/proc")` would.
        let under_proc = |p: &Path| {
            let b = p.as_os_str().as_bytes();
            b == b"/proc" || b.starts_with(b"/proc/")
        };
        cur.push(c);
        let next = &cur;
        if !exists {
            // Missing: `statfs` would fail too; only the name can say procfs.
            if under_proc(next) {
                return Some(format!("{} lies on procfs", next.display()));
            }
            continue;
        }
        let md = std::fs::symlink_metadata(next);
        let same_device = match (&md, devs.last()) {
            (Ok(m), Some(Some(d))) => !m.file_type().is_symlink() && m.dev() == *d,
            _ => false,
        };
        if under_proc(next) || (!same_device && on_procfs(next)) {
            return Some(format!("{} lies on procfs", next.display()));
        }
        match md {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None; // ELOOP: neither git nor gitward opens it
                }
                let Ok(target) = std::fs::read_link(next) else {
                    return None;
                };
                if on_procfs(&target) || (target.is_absolute() && target.starts_with("/dev/fd")) {
                    return Some(format!(
                        "{} is a link to {}",
                        next.display(),
                        target.display()
                    ));
                }
                // The link's own name is not part of where it leads.
                cur.pop();
                if target.is_absolute() {
                    cur.clear();
                    cur.push("/");
                    devs.truncate(1);
                }
                texts.push(target.into_os_string().into_vec());
                let t = texts.len() - 1;
                push_names(&mut todo, t, &texts[t]);
            }
            Ok(m) => devs.push(Some(m.dev())),
            Err(_) => exists = false,
        }
    }
    None
}

fn is_missing(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ENOTDIR)
}

fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Resolve a path through links as far as it exists, then append the rest lexically (for
/// files that do not exist yet: where they *would* be).
pub(crate) fn resolve_lenient(path: &Path) -> PathBuf {
    resolve_lenient_with(path, |p| std::fs::canonicalize(p).ok())
}

/// [`resolve_lenient`] with `canonical` answering for `std::fs::canonicalize`.
fn resolve_lenient_with(
    path: &Path,
    mut canonical: impl FnMut(&Path) -> Option<PathBuf>,
) -> PathBuf {
    if let Some(p) = canonical(path) {
        return p;
    }
    let mut rest = Vec::new();
    let mut cur = path;
    while let Some(parent) = cur.parent() {
        if let Some(name) = cur.file_name() {
            rest.push(name.to_owned());
        }
        if let Some(mut p) = canonical(parent) {
            for n in rest.iter().rev() {
                p.push(n);
            }
            return p;
        }
        cur = parent;
    }
    path.to_path_buf()
}

/// The canonical names of the folders one enumeration resolves by name — its untrusted
/// roots, the common dir (the [`Anchor`]'s), the git dir and `worktrees/` of the linked
/// worktrees' step — resolved once each ([`std::fs::canonicalize`], `realpath`: one
/// `readlink` per component of the path, from `/`). The same few paths were resolved up to
/// five times per enumeration (the common dir is also the git dir, a root, the anchor and
/// the linked worktrees' `current`), ≈30 `readlink`s of which ≈18 repeated.
///
/// Not a cache across runs or enumerations: the answers live as long as the [`Loader`].
/// What one answer per path changes: the enumeration compares these names with each other
/// (is the git dir the common dir, is an entry of `worktrees/` the current git dir, is a
/// file below a root); a link on one of them changed between two resolutions could make
/// two resolutions of the same path disagree, and now cannot — each comparison sees the
/// path where the enumeration first found it, as the [`Anchor`]'s descriptor pins the
/// common dir for the whole enumeration. Files (config files and includes) are still
/// resolved each time they are read (`locate`): they are not in here.
#[derive(Default)]
struct Resolved(Vec<(PathBuf, Option<PathBuf>)>);

impl Resolved {
    /// `std::fs::canonicalize(path).ok()`, once per path. A path whose parent was
    /// resolved here already is resolved from it: the parent's canonical name joined with
    /// the last name when the `lstat` of the path (by the same name) finds no link there —
    /// what `realpath` gives, which resolves the parent's components first and then finds
    /// the last one not a link. `worktrees/` below the common dir: one `lstat` instead of
    /// one `readlink` per component.
    fn canonical(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some((_, c)) = self.0.iter().find(|(p, _)| p == path) {
            return c.clone();
        }
        let from_parent = || -> Option<Option<PathBuf>> {
            let name = match path.components().next_back()? {
                Component::Normal(n) => n,
                _ => return None,
            };
            let (_, parent) = self
                .0
                .iter()
                .find(|(p, _)| Some(p.as_path()) == path.parent())?;
            let parent = parent.as_ref()?;
            Some(match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => return None,
                Ok(_) => Some(parent.join(name)),
                Err(_) => None,
            })
        };
        let c = match from_parent() {
            Some(c) => c,
            None => std::fs::canonicalize(path).ok(),
        };
        self.0.push((path.to_path_buf(), c.clone()));
        c
    }

    /// [`resolve_lenient`], each `canonicalize` answered once per path.
    fn lenient(&mut self, path: &Path) -> PathBuf {
        resolve_lenient_with(path, |p| self.canonical(p))
    }
}

pub(crate) fn normalize_lexically(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The folders (not links to folders) directly in `dir`, sorted; none when `dir` is missing.
fn list_dirs(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if is_missing(&e) => return Ok(Vec::new()),
        Err(source) => {
            return Err(ConfigError::Unreadable {
                file: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|source| ConfigError::Unreadable {
            file: dir.to_path_buf(),
            source,
        })?;
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// A folder resolved and vetted once per enumeration, under which files are opened without
/// resolving their path again: the repository's common dir, below which are the 200
/// `worktrees/<id>/config.worktree` and the submodules' configs of a large repository.
///
/// The slow path for every file ([`locate`] + [`read_bounded`]) resolves the whole path from
/// `/` three times (links followed and `statfs` of every component in
/// [`process_dependent`], `realpath` for the canonical name, and the kernel's own at `open`):
/// ≈30 system calls per file, the same few folders resolved thousands of times per check.
/// Here the anchor is vetted once ([`process_dependent`], then opened at its canonical path
/// with `RESOLVE_NO_SYMLINKS` and checked with `fstatfs`), and a file below it is opened
/// relative to that descriptor with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`. A success proves what the slow path would
/// have found: no link on the way (so the canonical name is the anchor's plus the
/// components, and the file is not a link), no other mount (so not procfs: the anchor's file
/// system was checked). Anything else — a link, a mount point, an old kernel without
/// `openat2` — takes the slow path, which follows and vets links as before: the fast path
/// never follows a link, so a resolution that races (a folder swapped for a link after the
/// anchor was vetted) fails into the slow path, not through the link. The descriptor pins
/// the folder for this enumeration only (dropped with the [`Loader`]): a folder renamed away
/// during the check is read where it was when the enumeration began, never a later one.
struct Anchor {
    /// The folder as the options name it (absolute, no `.` or `..`).
    lexical: PathBuf,
    /// Its canonical path.
    canonical: PathBuf,
    fd: std::os::fd::OwnedFd,
}

/// `openat2` resolution for the anchor and below it: no link of any kind followed.
fn no_links() -> nix::fcntl::ResolveFlag {
    nix::fcntl::ResolveFlag::RESOLVE_NO_SYMLINKS | nix::fcntl::ResolveFlag::RESOLVE_NO_MAGICLINKS
}

impl Anchor {
    /// `None` when `dir` cannot serve (relative, with `.` or `..`, on procfs, missing, a race
    /// with a link): every file then takes the slow path.
    fn new(dir: &Path, resolved: &mut Resolved) -> Option<Anchor> {
        use nix::fcntl::{OFlag, OpenHow};
        let plain = dir.is_absolute()
            && dir
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain || process_dependent(dir).is_some() {
            return None;
        }
        let canonical = resolved.canonical(dir)?;
        if canonical.starts_with("/proc") {
            return None;
        }
        // SAFETY: `AT_FDCWD` is a valid `dirfd` for the duration of the call (the path is
        // absolute, so it is not even used).
        let cwd = unsafe { std::os::fd::BorrowedFd::borrow_raw(nix::libc::AT_FDCWD) };
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
            .resolve(no_links());
        let fd = nix::fcntl::openat2(cwd, canonical.as_path(), how).ok()?;
        let fs = nix::sys::statfs::fstatfs(&fd).ok()?;
        if fs.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC {
            return None;
        }
        Some(Anchor {
            lexical: dir.to_path_buf(),
            canonical,
            fd,
        })
    }

    /// [`locate`] and [`read_bounded`] of `path` in one `openat2` below the anchor; `None`
    /// when the slow path must answer (not below it as plain names, a link or a mount point
    /// on the way, any other error).
    fn read(&self, path: &Path, limit: u64) -> Option<Result<LocatedRead, ConfigError>> {
        use nix::errno::Errno;
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
        let rel = path.strip_prefix(&self.lexical).ok()?;
        if rel.as_os_str().is_empty()
            || !rel.components().all(|c| matches!(c, Component::Normal(_)))
        {
            return None;
        }
        let how = OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY)
            .resolve(no_links() | ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_XDEV);
        let located = Located {
            canonical: self.canonical.join(rel),
            is_link: false,
        };
        match nix::fcntl::openat2(&self.fd, rel, how) {
            Ok(fd) => Some(
                read_opened(std::fs::File::from(fd), path, limit)
                    .map(|bytes| (located, Some(bytes))),
            ),
            // Every component before the missing one is a folder, not a link: the slow path's
            // lenient resolution gives the same name, and git finds no file either.
            Err(Errno::ENOENT | Errno::ENOTDIR) => Some(Ok((located, None))),
            Err(_) => None,
        }
    }
}

impl Anchor {
    /// Is the folder `path` (below the anchor as plain names) certainly absent: one
    /// `openat2` below the anchor, no link followed at any component, answered `ENOENT`?
    /// Then the slow path's `read_dir` of `path` (which would follow links) meets `ENOENT`
    /// too: every component before the missing one is a folder, not a link (a link on the
    /// way answers `ELOOP`, before the missing name is reached). `false` on anything else —
    /// found, a link, a file, another error, not below the anchor, no `openat2` — and the
    /// caller reads the folder as before. The `modules/` of each linked worktree's entry
    /// (`worktrees/<id>/modules`, absent but for a worktree with submodules) was looked up
    /// from `/`: 7 components each, 21 times per enumeration here.
    fn certainly_absent(&self, path: &Path) -> bool {
        use nix::errno::Errno;
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
        let Ok(rel) = path.strip_prefix(&self.lexical) else {
            return false;
        };
        if rel.as_os_str().is_empty()
            || !rel.components().all(|c| matches!(c, Component::Normal(_)))
        {
            return false;
        }
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .resolve(no_links() | ResolveFlag::RESOLVE_BENEATH);
        matches!(nix::fcntl::openat2(&self.fd, rel, how), Err(Errno::ENOENT))
    }
}

/// A file located and read: `None` when it does not exist.
type LocatedRead = (Located, Option<Vec<u8>>);

/// Where `path` lives and whether it is a link.
struct Located {
    canonical: PathBuf,
    is_link: bool,
}

fn locate(path: &Path) -> Located {
    let is_link = std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    Located {
        canonical: resolve_lenient(path),
        is_link,
    }
}

pub(super) struct Loader<'a> {
    opts: &'a Options,
    /// Untrusted roots, both as given and resolved through links.
    roots: Vec<PathBuf>,
    /// [`Loader::roots`] normalised once ([`normalize_lexically`]), for [`Loader::trust_of`].
    normalized_roots: Vec<PathBuf>,
    out: Enumeration,
    files_seen: usize,
    /// The common dir, vetted once: its files are opened below it ([`Anchor`]).
    anchor: Option<Anchor>,
    /// The folders this enumeration resolved by name, once each.
    resolved: Resolved,
}

/// The include chain so far: lexical paths (as git names them) and resolved ones (for cycle
/// detection and trust).
#[derive(Clone, Default)]
struct Chain {
    lexical: Vec<PathBuf>,
    canonical: Vec<PathBuf>,
    /// Some step is an `includeIf`.
    conditional: bool,
}

impl<'a> Loader<'a> {
    pub(super) fn new(opts: &'a Options) -> Self {
        let mut resolved = Resolved::default();
        let mut roots = Vec::new();
        for r in &opts.untrusted_roots {
            roots.push(normalize_lexically(r));
            let c = resolved.lenient(r);
            if !roots.contains(&c) {
                roots.push(c);
            }
        }
        let normalized_roots = roots.iter().map(|r| normalize_lexically(r)).collect();
        let anchor = opts
            .common_dir
            .as_deref()
            .and_then(|d| Anchor::new(d, &mut resolved));
        Loader {
            opts,
            roots,
            normalized_roots,
            out: Enumeration::default(),
            files_seen: 0,
            anchor,
            resolved,
        }
    }

    pub(super) fn run(mut self) -> Result<Enumeration, ConfigError> {
        let opts = self.opts;
        if let Some(sys) = &opts.system {
            self.load_top(sys, Scope::System, true)?;
        }
        for g in &opts.global {
            self.load_top(g, Scope::Global, true)?;
        }
        if let Some(common) = &opts.common_dir {
            let start = self.out.values.len();
            self.load_top(&common.join("config"), Scope::Local, true)?;
            // Like git's `read_repository_format`: the common config file itself, no includes.
            self.out.worktree_config = self.out.values[start..]
                .iter()
                .filter(|v| v.origin.depth == 0 && loader::WORKTREE_CONFIG.matches(&v.config_key()))
                .rev()
                .find_map(Value::as_bool)
                .unwrap_or(false);
        }
        if let Some(git_dir) = &opts.git_dir {
            self.load_top(&git_dir.join("config.worktree"), Scope::Worktree, true)?;
        }
        if opts.linked_worktrees {
            if let Some(common) = &opts.common_dir {
                self.load_linked_worktrees(common)?;
            }
        }
        match &opts.submodules {
            Submodules::Skip => {}
            Submodules::Dirs(dirs) => {
                for d in dirs {
                    self.load_submodule(d)?;
                }
            }
            Submodules::Walk => {
                if let Some(common) = &opts.common_dir {
                    // `modules/` of the common dir, and of every linked worktree's git dir
                    // (submodules of a linked worktree live in `worktrees/<id>/modules/`).
                    let mut roots = vec![common.join("modules")];
                    roots.extend(
                        list_dirs(&common.join("worktrees"))?
                            .into_iter()
                            .map(|d| d.join("modules")),
                    );
                    for root in roots {
                        for d in self.walk_modules(&root)? {
                            self.load_submodule(&d)?;
                        }
                    }
                }
            }
        }
        self.out.roots = self.roots;
        Ok(self.out)
    }

    fn load_linked_worktrees(&mut self, common: &Path) -> Result<(), ConfigError> {
        let current = self
            .opts
            .git_dir
            .as_deref()
            .map(|g| self.resolved.lenient(g));
        // Seen from a linked worktree, the main worktree's `config.worktree` is another's.
        if current.is_some() && current != Some(self.resolved.lenient(common)) {
            let scope = Scope::OtherWorktree {
                git_dir: common.to_path_buf(),
            };
            self.load_top(&common.join("config.worktree"), scope, false)?;
        }
        let worktrees = common.join("worktrees");
        let entries = list_dirs(&worktrees)?;
        // `list_dirs` hands out folders, not links: each one's canonical name is the
        // container's plus its own (one resolution instead of one per entry).
        let container =
            (!entries.is_empty() && current.is_some()).then(|| self.resolved.lenient(&worktrees));
        for wt in entries {
            let canonical = container
                .as_ref()
                .zip(wt.file_name())
                .map(|(c, n)| c.join(n));
            if current.is_some() && current == canonical {
                continue;
            }
            let scope = Scope::OtherWorktree {
                git_dir: wt.clone(),
            };
            self.load_top(&wt.join("config.worktree"), scope, false)?;
        }
        Ok(())
    }

    fn load_submodule(&mut self, git_dir: &Path) -> Result<(), ConfigError> {
        let scope = Scope::Submodule {
            git_dir: git_dir.to_path_buf(),
        };
        self.load_top(&git_dir.join("config"), scope.clone(), false)?;
        self.load_top(&git_dir.join("config.worktree"), scope, false)
    }

    /// Every folder under `modules` (at any depth, links not followed) that holds a `config`
    /// file or a `HEAD`: a submodule git dir, or something git could take for one (names may
    /// contain `/`, so nesting is arbitrary).
    fn walk_modules(&self, modules: &Path) -> Result<Vec<PathBuf>, ConfigError> {
        let limits = self.opts.limits;
        let mut found = Vec::new();
        let mut stack = vec![(modules.to_path_buf(), 0usize)];
        let mut seen = 0usize;
        if self
            .anchor
            .as_ref()
            .is_some_and(|a| a.certainly_absent(modules))
        {
            return Ok(found);
        }
        while let Some((dir, depth)) = stack.pop() {
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if is_missing(&e) && depth == 0 => return Ok(found),
                Err(e) => {
                    return Err(ConfigError::Incomplete {
                        dir,
                        reason: format!("cannot list: {e}"),
                    })
                }
            };
            let mut candidate = false;
            for e in rd {
                let e = e.map_err(|e| ConfigError::Incomplete {
                    dir: dir.clone(),
                    reason: format!("cannot list: {e}"),
                })?;
                seen += 1;
                if seen > limits.max_walk_entries {
                    return Err(ConfigError::Incomplete {
                        dir: modules.to_path_buf(),
                        reason: format!("more than {} entries", limits.max_walk_entries),
                    });
                }
                let ft = e.file_type().map_err(|e| ConfigError::Incomplete {
                    dir: dir.clone(),
                    reason: format!("cannot stat an entry: {e}"),
                })?;
                let name = e.file_name();
                if ft.is_dir() {
                    if depth + 1 > limits.max_walk_depth {
                        return Err(ConfigError::Incomplete {
                            dir: e.path(),
                            reason: format!("nested deeper than {}", limits.max_walk_depth),
                        });
                    }
                    stack.push((e.path(), depth + 1));
                } else if ft.is_symlink() {
                    // git would follow a linked folder here (a `.git` file pointing at it);
                    // this walk does not, so it cannot vouch for what is behind it.
                    if std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir()) {
                        return Err(ConfigError::Incomplete {
                            dir: e.path(),
                            reason: "a link to a folder under modules/ (not followed)".into(),
                        });
                    }
                    if depth > 0 && (name == "config" || name == "HEAD") {
                        candidate = true;
                    }
                } else if depth > 0 && (name == "config" || name == "HEAD") {
                    candidate = true;
                }
            }
            if candidate {
                found.push(dir);
            }
        }
        found.sort();
        Ok(found)
    }

    fn load_top(
        &mut self,
        path: &Path,
        scope: Scope,
        record_missing: bool,
    ) -> Result<(), ConfigError> {
        self.load(path, scope, &Chain::default(), None, record_missing, false)
    }

    fn trust_of(&self, scope: &Scope, chain: &Chain) -> Trust {
        if !matches!(scope, Scope::System | Scope::Global) {
            return Trust::Untrusted;
        }
        // Is `p` lexically inside a root, `.` removed and `..` resolved on both sides (each
        // side normalised once)?
        let inside = |p: &Path| {
            let p = normalize_lexically(p);
            self.normalized_roots.iter().any(|r| p.starts_with(r))
        };
        if chain.lexical.iter().any(|p| inside(p)) || chain.canonical.iter().any(|p| inside(p)) {
            Trust::Untrusted
        } else {
            Trust::Trusted
        }
    }

    /// Does git surely read this file when it runs in this repository now? The repository's
    /// own files and their unconditional includes (the worktree config only when enabled).
    fn git_reads_surely(&self, scope: &Scope, conditional: bool) -> Option<&'static str> {
        if conditional {
            return Some("behind an includeIf");
        }
        match scope {
            Scope::System | Scope::Global | Scope::Local => None,
            Scope::Worktree if self.out.worktree_config => None,
            Scope::Worktree => Some("config.worktree while extensions.worktreeConfig is off"),
            Scope::OtherWorktree { .. } => Some("another worktree's config"),
            Scope::Submodule { .. } => Some("a submodule's config"),
        }
    }

    fn load(
        &mut self,
        path: &Path,
        scope: Scope,
        parent: &Chain,
        condition: Option<String>,
        record_missing: bool,
        checked: bool,
    ) -> Result<(), ConfigError> {
        let mut chain = parent.clone();
        chain.lexical.push(path.to_path_buf());
        chain.conditional |= condition.is_some();
        let unsure = self.git_reads_surely(&scope, chain.conditional);
        match self.load_file(
            path,
            scope.clone(),
            chain.clone(),
            condition,
            record_missing,
            checked,
        ) {
            Err(error) if error.git_fails_too() && unsure.is_some() => {
                self.out.tolerated.push(Arc::new(Tolerated {
                    chain: chain.lexical,
                    scope,
                    why: unsure.unwrap_or_default(),
                    error,
                }));
                Ok(())
            }
            r => r,
        }
    }

    fn load_file(
        &mut self,
        path: &Path,
        scope: Scope,
        mut chain: Chain,
        condition: Option<String>,
        record_missing: bool,
        checked: bool,
    ) -> Result<(), ConfigError> {
        self.files_seen += 1;
        if self.files_seen > self.opts.limits.max_files {
            return Err(ConfigError::TooManyFiles {
                file: path.to_path_buf(),
                limit: self.opts.limits.max_files,
            });
        }
        let limit = self.opts.limits.max_file_size;
        // `checked`: the include step ran `process_dependent` on this very path.
        let (located, bytes) = match self.anchor.as_ref().and_then(|a| a.read(path, limit)) {
            Some(r) => r?,
            None if checked => (locate(path), read_bounded_checked(path, limit)?),
            None => (locate(path), read_bounded(path, limit)?),
        };
        let depth = chain.lexical.len() - 1;
        if bytes.is_some() {
            // git counts only includes it can access (`access_or_die` first), then dies past
            // the limit; a cycle would run into the same limit, so it is reported as one.
            if chain.canonical.contains(&located.canonical) {
                return Err(ConfigError::IncludeCycle {
                    chain: chain.lexical,
                });
            }
            if depth > MAX_INCLUDE_DEPTH {
                return Err(ConfigError::IncludeDepth {
                    chain: chain.lexical,
                });
            }
        }
        chain.canonical.push(located.canonical.clone());
        let trust = self.trust_of(&scope, &chain);
        let origin = Arc::new(Origin {
            file: path.to_path_buf(),
            scope,
            include_chain: chain.lexical.clone(),
            depth,
            condition,
            conditional: chain.conditional,
            trust,
        });
        let resolved =
            (located.canonical != normalize_lexically(path)).then(|| located.canonical.clone());
        let Some(bytes) = bytes else {
            if record_missing || depth > 0 {
                self.out.files.push(FileEntry {
                    origin,
                    state: FileState::Missing,
                    is_link: located.is_link,
                    resolved,
                });
            }
            return Ok(());
        };
        self.out.files.push(FileEntry {
            origin: Arc::clone(&origin),
            state: FileState::Read {
                size: bytes.len() as u64,
            },
            is_link: located.is_link,
            resolved,
        });
        self.parse(path, &bytes, &origin, &chain)
    }

    fn parse(
        &mut self,
        path: &Path,
        bytes: &[u8],
        origin: &Arc<Origin>,
        chain: &Chain,
    ) -> Result<(), ConfigError> {
        let (events, bad) = match parse::parse(bytes) {
            Ok(ev) => (ev, None),
            Err((ev, bad)) => (ev, Some(bad)),
        };
        let utf8 = |b: &[u8], line: usize| -> Result<String, ConfigError> {
            String::from_utf8(b.to_vec()).map_err(|_| ConfigError::NonUtf8Name {
                file: path.to_path_buf(),
                line,
            })
        };
        // A subsection is any bytes but newline and NUL to git: kept exactly
        // (`raw_subsection`, what a neutraliser hands back to git) and as text, lossy where it
        // is not UTF-8 (display; the catalogue matches section and name only).
        let sub_text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for ev in events {
            match ev {
                Event::Section { stem, line } => {
                    let (section, sub) = parse::split_stem(&stem);
                    self.out.sections.push(SectionHeader {
                        section: utf8(section, line)?,
                        subsection: sub.map(sub_text),
                        raw_subsection: sub.map(BString::from),
                        line,
                        origin: Arc::clone(origin),
                    });
                }
                Event::Entry(e) => {
                    let (section, sub, name) = parse::split_key(&e.key);
                    let (value, other) = match (self.opts.dialect, e.squashed) {
                        (Dialect::SquashInnerWhitespace, Some(old)) => (Some(old), e.value),
                        (Dialect::Verbatim, _) | (_, None) => (e.value, None),
                        (Dialect::Any, Some(old)) => (e.value, Some(old)),
                    };
                    let v = Value {
                        section: utf8(section, e.line)?,
                        subsection: sub.map(sub_text),
                        raw_subsection: sub.map(BString::from),
                        name: utf8(name, e.line)?,
                        value: value.map(BString::from),
                        line: e.line,
                        origin: Arc::clone(origin),
                    };
                    let include = include_condition(&v.config_key());
                    let target = include.as_ref().map(|_| v.value.clone());
                    let vline = v.line;
                    self.out.values.push(v);
                    if let (Some(condition), Some(target)) = (include, target) {
                        // `Dialect::Any`: git < 2.45 reads another file name; follow both.
                        let alt = other.map(BString::from);
                        self.include(path, vline, target, condition.clone(), origin, chain)?;
                        if let Some(alt) = alt {
                            self.include(path, vline, Some(alt), condition, origin, chain)?;
                        }
                    }
                }
            }
        }
        match bad {
            None => Ok(()),
            Some(b) => Err(ConfigError::Parse {
                file: path.to_path_buf(),
                line: b.line,
            }),
        }
    }

    fn include(
        &mut self,
        from: &Path,
        line: usize,
        target: Option<BString>,
        condition: Option<String>,
        origin: &Arc<Origin>,
        chain: &Chain,
    ) -> Result<(), ConfigError> {
        // An error of the include step itself (git makes it only when it follows this
        // include): tolerated like an error in the target when git does not surely follow it.
        let unsure = self.git_reads_surely(&origin.scope, chain.conditional || condition.is_some());
        let step_error = |this: &mut Self, target: &BStr, reason: &str| {
            let error = ConfigError::IncludePath {
                file: from.to_path_buf(),
                line,
                target: target.to_str_lossy().into_owned(),
                reason: reason.to_owned(),
            };
            match unsure {
                Some(why) => {
                    this.out.tolerated.push(Arc::new(Tolerated {
                        chain: chain.lexical.clone(),
                        scope: origin.scope.clone(),
                        why,
                        error,
                    }));
                    Ok(())
                }
                None => Err(error),
            }
        };
        let Some(target) = target else {
            // `[include] path` without `=`: git says "missing value for 'include.path'" and dies.
            return step_error(self, BStr::new(""), "missing value (git refuses it)");
        };
        if target.is_empty() {
            // git ignores an empty include path.
            return Ok(());
        }
        let raw: &[u8] = target.as_ref();
        let unresolved = |reason: &str| ConfigError::IncludeUnresolved {
            file: from.to_path_buf(),
            line,
            target: target.to_str_lossy().into_owned(),
            reason: reason.to_owned(),
        };
        if (raw == b"~" || raw.starts_with(b"~/")) && self.opts.home.is_none() {
            return Err(unresolved("no home folder given for `~/`"));
        }
        if raw.starts_with(b"%(prefix)/") && self.opts.git_prefix.is_none() {
            return Err(unresolved("git's prefix is not known for `%(prefix)/`"));
        }
        let resolved = match self.resolve_include_path(from, target.as_bstr()) {
            Ok(p) => p,
            Err(reason) => return step_error(self, target.as_bstr(), &reason),
        };
        if let Some(reason) = process_dependent(&resolved) {
            return Err(ConfigError::ProcessDependent {
                file: from.to_path_buf(),
                reason: format!(
                    "line {line}: include target {:?}: {reason}",
                    target.to_str_lossy()
                ),
            });
        }
        self.load(
            &resolved,
            origin.scope.clone(),
            chain,
            condition,
            true,
            true,
        )
    }

    /// git's `handle_path_include`: [`interpolate_path`], then a relative path from the
    /// including file's folder (as named, not resolved through links).
    fn resolve_include_path(&self, from: &Path, target: &BStr) -> Result<PathBuf, String> {
        let expanded = interpolate_path(
            target.as_ref(),
            self.opts.home.as_deref(),
            self.opts.git_prefix.as_deref(),
        )?;
        if expanded.is_absolute() {
            Ok(expanded)
        } else {
            Ok(from.parent().unwrap_or(Path::new("")).join(expanded))
        }
    }
}

/// git's `interpolate_path()` for pathname values (`include.path`, `core.attributesFile`,
/// `core.hooksPath`, …): `~` and `~/…` from `home`, `~user/…` from the password database,
/// `%(prefix)/…` from git's install prefix; anything else as written (a relative result is
/// for the caller to anchor). An error where git cannot expand it either.
pub fn interpolate_path(
    value: &[u8],
    home: Option<&Path>,
    git_prefix: Option<&Path>,
) -> Result<PathBuf, String> {
    if let Some(rest) = value.strip_prefix(b"~") {
        let slash = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
        let (user, tail) = rest.split_at(slash);
        let home = if user.is_empty() {
            home.map(Path::to_path_buf)
                .ok_or_else(|| "no home folder given for `~/`".to_owned())?
        } else {
            let name =
                std::str::from_utf8(user).map_err(|_| "user name is not UTF-8".to_owned())?;
            nix::unistd::User::from_name(name)
                .ok()
                .flatten()
                .map(|u| u.dir)
                .ok_or_else(|| format!("no such user {name:?}"))?
        };
        let mut p = home.into_os_string();
        p.push(OsStr::from_bytes(tail));
        Ok(PathBuf::from(p))
    } else if let Some(rest) = value.strip_prefix(b"%(prefix)/") {
        let prefix = git_prefix.ok_or_else(|| "no git prefix given for `%(prefix)/`".to_owned())?;
        Ok(prefix.join(OsStr::from_bytes(rest)))
    } else {
        Ok(PathBuf::from(OsStr::from_bytes(value)))
    }
}

#[cfg(test)]
mod resolved_tests {
    use super::*;

    /// A folder tree with links: `real/dir/sub`, `link -> real`, `real/l2 -> real/dir`,
    /// `real/dangling -> nowhere`.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(r.join("real/dir/sub")).unwrap();
        std::os::unix::fs::symlink(r.join("real"), r.join("link")).unwrap();
        std::os::unix::fs::symlink(r.join("real/dir"), r.join("real/l2")).unwrap();
        std::os::unix::fs::symlink(r.join("nowhere"), r.join("real/dangling")).unwrap();
        (t, r)
    }

    #[test]
    fn one_resolution_per_path_gives_what_realpath_gives() {
        let (_t, r) = tree();
        let paths = [
            r.join("link"),
            r.join("link/dir"),
            r.join("link/dir/sub"),
            r.join("real"),
            r.join("real/dir"),
            r.join("real/l2"),
            r.join("real/l2/sub"),
            r.join("real/dangling"),
            r.join("real/missing"),
            r.join("real/missing/deeper"),
            r.join("link/dir/.."),
        ];
        // Parents first (the child-from-parent step is taken) and children first (it is
        // not): the same answers, each equal to `canonicalize`'s and `resolve_lenient`'s.
        for order in [paths.to_vec(), paths.iter().rev().cloned().collect()] {
            let mut res = Resolved::default();
            for p in &order {
                assert_eq!(
                    res.canonical(p),
                    std::fs::canonicalize(p).ok(),
                    "{}",
                    p.display()
                );
                assert_eq!(res.lenient(p), resolve_lenient(p), "{}", p.display());
            }
        }
        // The child of a resolved parent that is itself a link is resolved through it.
        let mut res = Resolved::default();
        assert_eq!(res.canonical(&r.join("real")), Some(r.join("real")));
        assert_eq!(res.canonical(&r.join("real/l2")), Some(r.join("real/dir")));
        assert_eq!(res.canonical(&r.join("real/dangling")), None);
    }

    #[test]
    fn a_path_resolved_once_keeps_its_answer_for_the_enumeration() {
        let (_t, r) = tree();
        let mut res = Resolved::default();
        assert_eq!(res.canonical(&r.join("link")), Some(r.join("real")));
        // The link moved to elsewhere after the first resolution: this enumeration keeps
        // the first answer (its comparisons all see one), a new one sees the new target.
        std::fs::remove_file(r.join("link")).unwrap();
        std::os::unix::fs::symlink(r.join("real/dir"), r.join("link")).unwrap();
        assert_eq!(res.canonical(&r.join("link")), Some(r.join("real")));
        assert_eq!(
            Resolved::default().canonical(&r.join("link")),
            Some(r.join("real/dir"))
        );
    }

    #[test]
    fn a_modules_folder_is_certainly_absent_only_with_no_link_on_the_way() {
        let (_t, r) = tree();
        let common = r.join("c");
        std::fs::create_dir_all(common.join("worktrees/plain")).unwrap();
        std::fs::create_dir_all(common.join("worktrees/with/modules/m")).unwrap();
        std::fs::create_dir_all(r.join("elsewhere/modules/m")).unwrap();
        std::fs::write(r.join("elsewhere/modules/m/config"), "[core]\n").unwrap();
        // An entry that is a link to a folder with `modules/`, and a `modules` that is one.
        std::os::unix::fs::symlink(r.join("elsewhere"), common.join("worktrees/linked")).unwrap();
        std::fs::create_dir_all(common.join("worktrees/mlink")).unwrap();
        std::os::unix::fs::symlink(
            r.join("elsewhere/modules"),
            common.join("worktrees/mlink/modules"),
        )
        .unwrap();
        let mut res = Resolved::default();
        let a = Anchor::new(&common, &mut res).expect("an anchor");
        let absent = |rel: &str| a.certainly_absent(&common.join(rel));
        assert!(absent("modules"));
        assert!(absent("worktrees/plain/modules"));
        assert!(absent("worktrees/gone/modules"));
        // Positive controls: found, or a link on the way (which `read_dir` would follow to
        // a submodule's config): not absent, the caller reads.
        assert!(!absent("worktrees/with/modules"));
        assert!(!absent("worktrees/linked/modules"));
        assert!(std::fs::read_dir(common.join("worktrees/linked/modules")).is_ok());
        assert!(!absent("worktrees/mlink/modules"));
        // Not below the anchor as plain names.
        assert!(!a.certainly_absent(&r.join("elsewhere/none")));
        assert!(!a.certainly_absent(&common.join("worktrees/../modules")));
        assert!(!a.certainly_absent(&common));
    }
}
