//! Driver names (`filter=`, `diff=`, `merge=`) selected by every attributes source git reads:
//! `.gitattributes` at any depth in the work tree (tracked or not), `.gitattributes` present
//! only in the index, `<common dir>/info/attributes`, `core.attributesFile` (default
//! `$XDG_CONFIG_HOME/git/attributes`), the system file `$(prefix)/etc/gitattributes`, and
//! macros (`[attr]name …`, the built-in `binary`) that expand to a driver.
//!
//! Invariants:
//! - A superset: every driver assignment in every file is reported, whatever paths its pattern
//!   matches (patterns are not evaluated — a path the pattern matches can appear with the next
//!   file the agent writes). Every macro definition that assigns a driver is reported, and
//!   every line that sets such a macro, even where git ignores the definition (marked
//!   `macro_honoured: false`).
//! - Nothing runs: files are read with `std::fs` (non-blocking open, regular files only,
//!   bounded size), the index with `gix::index::File::at` and blobs with `gix::odb::at` (no
//!   repository is opened, no config read by gix, no filter applied).
//! - Bounded: the work-tree walk (entries, depth, time) and file sizes; past a bound →
//!   [`AttributesError::Incomplete`], never a short clean answer. Links are not followed by the
//!   walk; a `.gitattributes` that is a link is recorded and not read (git ≥ 2.32 does not
//!   follow in-tree `.gitattributes` links either).

#[cfg(test)]
mod differential;
mod objects;
mod parse;
#[cfg(test)]
mod tests;

pub use parse::{parse_file, parse_line, Line, State};

use crate::catalogue::{self, loader, DriverKind, Effect, KeyPattern};
use crate::config::{self, ConfigError, Enumeration};
use gix::bstr::ByteSlice;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// git's name for in-tree attributes files.
pub const GITATTRIBUTES: &str = ".gitattributes";

/// Errors while collecting. Each names the file or folder and what failed, in one line.
#[derive(Debug, thiserror::Error)]
pub enum AttributesError {
    /// Reading an attributes file failed (unreadable, not a regular file, too large).
    #[error(transparent)]
    Read(ConfigError),
    #[error("{}: cannot read the index: {message}", file.display())]
    Index { file: PathBuf, message: String },
    #[error("{}: cannot read blob {id} of {path} from the object database: {message}", objects.display())]
    Object {
        objects: PathBuf,
        path: String,
        id: String,
        message: String,
    },
    #[error(
        "{origin}: line {line}: {kind} driver name is not UTF-8 and cannot be neutralised by name"
    )]
    NonUtf8Name {
        origin: Source,
        line: usize,
        kind: &'static str,
    },
    #[error("{}: core.attributesFile {value:?} cannot be resolved: {reason}", file.display())]
    AttributesFile {
        file: PathBuf,
        value: String,
        reason: String,
    },
    #[error("{}: attributes walk cut short: {reason}", dir.display())]
    Incomplete { dir: PathBuf, reason: String },
}

impl From<ConfigError> for AttributesError {
    fn from(e: ConfigError) -> Self {
        AttributesError::Read(e)
    }
}

/// Where an attributes line comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "source", content = "path", rename_all = "snake_case")]
pub enum Source {
    /// A `.gitattributes` file in the work tree; the path is relative to the work tree.
    WorkTree(PathBuf),
    /// A `.gitattributes` blob in the index; the path is the index path.
    Index(PathBuf),
    /// `<common dir>/info/attributes`.
    InfoAttributes(PathBuf),
    /// `core.attributesFile` (or its default).
    AttributesFile(PathBuf),
    /// `$(prefix)/etc/gitattributes`.
    System(PathBuf),
    /// A `.gitattributes` blob in the tree named by `rev` (`attr.tree`, or `HEAD` of a bare
    /// repository); `path` is its path in that tree.
    Tree { rev: String, path: PathBuf },
    /// git's built-in macros (`binary`).
    Builtin,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::WorkTree(p) => write!(f, "work tree {}", p.display()),
            Source::Index(p) => write!(f, "index {}", p.display()),
            Source::InfoAttributes(p) | Source::AttributesFile(p) | Source::System(p) => {
                write!(f, "{}", p.display())
            }
            Source::Tree { rev, path } => write!(f, "{rev}:{}", path.display()),
            Source::Builtin => write!(f, "[builtin]"),
        }
    }
}

impl Source {
    /// Does git honour `[attr]` macro definitions from this source? Only top-level files:
    /// the root `.gitattributes` (work tree or index), `info/attributes`,
    /// `core.attributesFile`, the system file and the built-ins.
    pub fn honours_macros(&self) -> bool {
        match self {
            Source::WorkTree(p) | Source::Index(p) | Source::Tree { path: p, .. } => {
                p == Path::new(GITATTRIBUTES)
            }
            _ => true,
        }
    }
}

/// One driver selected by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    pub kind: DriverKind,
    pub name: String,
    pub source: Source,
    /// 1-based line in the source.
    pub line: usize,
    /// The pattern as written (unquoted), or `[attr]<macro>` for a macro definition.
    pub pattern: String,
    /// The macro the driver is selected through (the one set on the line, or defined there).
    pub via_macro: Option<String>,
    /// `false` when the macro's definition is in a file where git ignores macros (a nested
    /// `.gitattributes`); reported anyway.
    pub macro_honoured: bool,
}

/// A selection whose name has a program-running key defined in the config enumeration.
#[derive(Debug, Clone)]
pub struct ArmedSelection<'a> {
    pub selection: &'a Selection,
    pub values: Vec<&'a config::Value>,
}

/// An attributes file that was read (or recorded and skipped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    pub source: Source,
    pub state: FileState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileState {
    Read {
        size: u64,
    },
    /// Looked for and absent (top-level sources only).
    Missing,
    /// A link named `.gitattributes` in the work tree, or a link entry in the index: git does
    /// not follow it, so neither does this reader.
    LinkNotFollowed,
}

/// Bounds on the work done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most folder entries looked at in the work-tree walk.
    pub max_entries: usize,
    /// Deepest folder nesting in the work tree.
    pub max_depth: usize,
    /// Longest the walk and index read may take.
    pub max_time: Duration,
    /// Largest attributes file or blob read (git itself ignores files above 100 MiB).
    pub max_file_size: u64,
    /// Most trees read to expand sparse-index directory entries.
    pub max_trees: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 2_000_000,
            max_depth: 256,
            max_time: Duration::from_secs(30),
            max_file_size: 8 << 20,
            max_trees: 100_000,
        }
    }
}

/// What to read. Every path is given; nothing is discovered or taken from the environment.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Walk `.gitattributes` files here (none for a bare repository).
    pub work_tree: Option<PathBuf>,
    /// The current git dir: its `index`.
    pub git_dir: Option<PathBuf>,
    /// The common dir: `info/attributes` and `objects/`.
    pub common_dir: Option<PathBuf>,
    /// Read `.gitattributes` blobs from the index.
    pub read_index: bool,
    /// `core.attributesFile` values (all of them, from any config file) and the default
    /// ([`attributes_files`]).
    pub attributes_files: Vec<PathBuf>,
    /// The system attributes file ([`system_attributes_for`]).
    pub system: Option<PathBuf>,
    /// Submodule git dirs (e.g. `layout::submodule_git_dirs`): their `info/attributes` are read
    /// too (git uses them inside the submodule, also during superproject recursion).
    pub submodule_git_dirs: Vec<PathBuf>,
    /// Tree-ishes whose `.gitattributes` files git may read instead of the work tree's:
    /// every `attr.tree` value, and `HEAD` for a bare repository ([`tree_sources`]).
    pub trees: Vec<String>,
    pub limits: Limits,
}

impl Options {
    /// A repository's own sources: work-tree walk, index, `info/attributes`.
    pub fn for_repository(work_tree: Option<&Path>, git_dir: &Path, common_dir: &Path) -> Self {
        Options {
            work_tree: work_tree.map(Path::to_path_buf),
            git_dir: Some(git_dir.to_path_buf()),
            common_dir: Some(common_dir.to_path_buf()),
            read_index: true,
            ..Options::default()
        }
    }
}

impl Options {
    /// Every source git reads for this repository, as far as the config enumeration `e` and
    /// the owner's folders tell: the repository's own sources ([`Options::for_repository`]),
    /// every `core.attributesFile` ([`attributes_files`], relative ones from the work-tree top
    /// or, when bare, the git dir), the system file of `probe`'s git, every `attr.tree` (and
    /// `HEAD` when bare, [`tree_sources`]), and the submodule git dirs' `info/attributes`.
    #[allow(clippy::too_many_arguments)]
    pub fn for_enumeration(
        e: &Enumeration,
        work_tree: Option<&Path>,
        git_dir: &Path,
        common_dir: &Path,
        home: Option<&Path>,
        xdg_config_home: Option<&Path>,
        probe: Option<&crate::env::GitProbe>,
        submodule_git_dirs: Vec<PathBuf>,
    ) -> Result<Self, AttributesError> {
        let prefix = probe.map(|p| config::git_prefix_for(&p.exec_path));
        let mut o = Options::for_repository(work_tree, git_dir, common_dir);
        o.attributes_files = attributes_files(
            e,
            home,
            xdg_config_home,
            Some(work_tree.unwrap_or(git_dir)),
            prefix.as_deref(),
        )?;
        o.system = probe.map(|p| system_attributes_for(&p.system_config));
        o.trees = tree_sources(e, work_tree.is_none());
        o.submodule_git_dirs = submodule_git_dirs;
        Ok(o)
    }
}

/// The system attributes file of a git build: `gitattributes` beside its system config
/// (`$(sysconfdir)/gitattributes`, i.e. `/etc/gitattributes` for a `/usr` build).
pub fn system_attributes_for(system_config: &Path) -> PathBuf {
    system_config
        .parent()
        .unwrap_or(Path::new("/etc"))
        .join("gitattributes")
}

/// Every attributes file named by `core.attributesFile` in any enumerated file (a superset of
/// the effective one), resolved like git (`~/`, `%(prefix)/`; a relative path from `run_dir`,
/// the folder git runs in: the work-tree top, or the git dir of a bare repository), plus the
/// default `$XDG_CONFIG_HOME/git/attributes` (or `~/.config/git/attributes`).
pub fn attributes_files(
    e: &Enumeration,
    home: Option<&Path>,
    xdg_config_home: Option<&Path>,
    run_dir: Option<&Path>,
    git_prefix: Option<&Path>,
) -> Result<Vec<PathBuf>, AttributesError> {
    let mut out: Vec<PathBuf> = Vec::new();
    match (xdg_config_home.filter(|p| !p.as_os_str().is_empty()), home) {
        (Some(x), _) => out.push(x.join("git/attributes")),
        (None, Some(h)) => out.push(h.join(".config/git/attributes")),
        (None, None) => {}
    }
    for v in e.values() {
        if !loader::ATTRIBUTES_FILE.matches(&v.config_key()) {
            continue;
        }
        let Some(raw) = v.value.as_ref().filter(|r| !r.is_empty()) else {
            continue;
        };
        let p = config::interpolate_path(raw, home, git_prefix).map_err(|reason| {
            AttributesError::AttributesFile {
                file: v.origin.file.clone(),
                value: raw.to_str_lossy().into_owned(),
                reason,
            }
        })?;
        let p = match (p.is_absolute(), run_dir) {
            (true, _) => p,
            (false, Some(dir)) => dir.join(p),
            (false, None) => {
                return Err(AttributesError::AttributesFile {
                    file: v.origin.file.clone(),
                    value: raw.to_str_lossy().into_owned(),
                    reason: "relative, and no folder given to resolve it from".into(),
                })
            }
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Tree-ishes git may read attributes from: every `attr.tree` value in any enumerated file
/// (a superset of the effective one), and `HEAD` when the repository is bare (newer git
/// defaults `attr.tree` to `HEAD` there).
pub fn tree_sources(e: &Enumeration, bare: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if bare {
        out.push("HEAD".to_owned());
    }
    for v in e.values() {
        if loader::ATTR_TREE.matches(&v.config_key()) {
            if let Some(val) = v.value.as_ref().filter(|r| !r.is_empty()) {
                let val = val.to_str_lossy().into_owned();
                if !out.contains(&val) {
                    out.push(val);
                }
            }
        }
    }
    out
}

/// A macro definition.
#[derive(Debug, Clone)]
struct MacroDef {
    source: Source,
    states: Vec<(Vec<u8>, State)>,
}

/// Everything found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Attributes {
    selections: Vec<Selection>,
    files: Vec<FileEntry>,
}

/// Collect every driver selection from every source in `opts`.
pub fn collect(opts: &Options) -> Result<Attributes, AttributesError> {
    Collector::new(opts).run()
}

impl Attributes {
    /// Every selection, by source in reading order (system, attributes files, info, work
    /// tree, index), then line.
    pub fn selections(&self) -> &[Selection] {
        &self.selections
    }

    /// Every attributes file read or recorded.
    pub fn files(&self) -> &[FileEntry] {
        &self.files
    }

    /// Every driver name of this kind selected anywhere.
    pub fn names(&self, kind: DriverKind) -> BTreeSet<String> {
        self.selections
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.name.clone())
            .collect()
    }

    /// Selections whose driver has a program-running key (`filter.<name>.clean`,
    /// `diff.<name>.textconv`, `merge.<name>.driver`, … per the catalogue) in any file of the
    /// enumeration: the drivers that would run.
    pub fn armed<'a>(&'a self, e: &'a Enumeration) -> Vec<ArmedSelection<'a>> {
        self.selections
            .iter()
            .filter_map(|s| {
                let values: Vec<&config::Value> = e
                    .values()
                    .iter()
                    .filter(|v| {
                        v.section.eq_ignore_ascii_case(s.kind.name())
                            && v.subsection.as_deref() == Some(s.name.as_str())
                            && driver_program_key(s.kind, &v.name)
                    })
                    .collect();
                (!values.is_empty()).then_some(ArmedSelection {
                    selection: s,
                    values,
                })
            })
            .collect()
    }
}

/// Is `name` a catalogue key of `kind.<driver>.` that runs a program?
fn driver_program_key(kind: DriverKind, name: &str) -> bool {
    catalogue::KEYS.iter().any(|e| {
        matches!(e.effect, Effect::RunsShell | Effect::RunsProgram)
            && matches!(e.key, KeyPattern::PerName { section, name: n }
                if section == kind.name() && n.eq_ignore_ascii_case(name))
    })
}

struct Collector<'a> {
    opts: &'a Options,
    deadline: Instant,
    entries_seen: usize,
    /// Parsed files in reading order.
    parsed: Vec<(Source, Vec<Line>)>,
    files: Vec<FileEntry>,
    objects: Option<objects::Objects>,
}

impl<'a> Collector<'a> {
    fn new(opts: &'a Options) -> Self {
        Collector {
            opts,
            deadline: Instant::now() + opts.limits.max_time,
            entries_seen: 0,
            parsed: Vec::new(),
            files: Vec::new(),
            objects: None,
        }
    }

    fn run(mut self) -> Result<Attributes, AttributesError> {
        let opts = self.opts;
        let builtin: Vec<Line> = catalogue::BUILTIN_MACROS
            .iter()
            .enumerate()
            .filter_map(|(i, (name, states))| {
                parse_line(format!("[attr]{name} {states}").as_bytes(), i + 1)
            })
            .collect();
        self.parsed.push((Source::Builtin, builtin));
        if let Some(sys) = &opts.system {
            self.read_file(sys, Source::System(sys.clone()))?;
        }
        for f in &opts.attributes_files {
            self.read_file(f, Source::AttributesFile(f.clone()))?;
        }
        if let Some(common) = &opts.common_dir {
            let p = common.join("info/attributes");
            self.read_file(&p, Source::InfoAttributes(p.clone()))?;
        }
        for sub in &opts.submodule_git_dirs {
            let p = sub.join("info/attributes");
            if let Some(bytes) = config::read_bounded(&p, opts.limits.max_file_size)? {
                self.push_parsed(Source::InfoAttributes(p), &bytes);
            }
        }
        if let Some(wt) = &opts.work_tree {
            self.walk(wt)?;
        }
        if let (Some(git_dir), Some(common)) = (&opts.git_dir, &opts.common_dir) {
            if opts.read_index {
                self.read_index(git_dir, common)?;
            }
            for spec in &opts.trees {
                self.read_tree(git_dir, common, spec)?;
            }
        }
        let selections = self.selections()?;
        Ok(Attributes {
            selections,
            files: self.files,
        })
    }

    fn read_file(&mut self, path: &Path, source: Source) -> Result<(), AttributesError> {
        match config::read_bounded(path, self.opts.limits.max_file_size)? {
            None => self.files.push(FileEntry {
                source,
                state: FileState::Missing,
            }),
            Some(bytes) => self.push_parsed(source, &bytes),
        }
        Ok(())
    }

    fn push_parsed(&mut self, source: Source, bytes: &[u8]) {
        self.files.push(FileEntry {
            source: source.clone(),
            state: FileState::Read {
                size: bytes.len() as u64,
            },
        });
        self.parsed.push((source, parse_file(bytes)));
    }

    fn check_time(&self, dir: &Path) -> Result<(), AttributesError> {
        if Instant::now() > self.deadline {
            return Err(AttributesError::Incomplete {
                dir: dir.to_path_buf(),
                reason: format!("took longer than {:?}", self.opts.limits.max_time),
            });
        }
        Ok(())
    }

    /// Walk the work tree folder by folder with `openat(O_NOFOLLOW | O_DIRECTORY)` (a folder
    /// swapped for a link between listing and opening is an error, not followed), skipping
    /// every `.git` entry, reading each `.gitattributes` regular file through its folder's
    /// descriptor.
    fn walk(&mut self, work_tree: &Path) -> Result<(), AttributesError> {
        use nix::dir::{Dir, Type};
        use nix::fcntl::OFlag;
        use nix::sys::stat::Mode;
        use std::os::unix::ffi::OsStrExt;
        use std::rc::Rc;

        let limits = self.opts.limits;
        let dflags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let incomplete = |dir: &Path, what: &str, e: nix::Error| AttributesError::Incomplete {
            dir: dir.to_path_buf(),
            reason: format!("{what}: {e}"),
        };
        let root = Dir::open(work_tree, dflags, Mode::empty())
            .map_err(|e| incomplete(work_tree, "cannot open", e))?;
        // Pending folders: (parent, name, path relative to the work tree, depth). A parent stays
        // open while a child is pending: at most one open folder per level of the walk.
        type Pending = (Option<Rc<Dir>>, Vec<u8>, PathBuf, usize);
        let mut stack: Vec<Pending> = Vec::new();
        let mut first = Some(root);
        let mut found: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        loop {
            let (mut dir, rel, depth) = match first.take() {
                Some(d) => (d, PathBuf::new(), 0usize),
                None => {
                    let Some((parent, name, rel, depth)) = stack.pop() else {
                        break;
                    };
                    let parent = parent.expect("children have a parent");
                    let d = Dir::openat(parent.as_ref(), name.as_slice(), dflags, Mode::empty())
                        .map_err(|e| incomplete(&work_tree.join(&rel), "cannot open", e))?;
                    (d, rel, depth)
                }
            };
            self.check_time(&work_tree.join(&rel))?;
            let mut subdirs: Vec<Vec<u8>> = Vec::new();
            let mut unknown: Vec<Vec<u8>> = Vec::new();
            let mut has_attributes = false;
            for entry in dir.iter() {
                let entry =
                    entry.map_err(|e| incomplete(&work_tree.join(&rel), "cannot list", e))?;
                let name = entry.file_name().to_bytes();
                if name == b"." || name == b".." || name == b".git" {
                    continue;
                }
                self.entries_seen += 1;
                if self.entries_seen > limits.max_entries {
                    return Err(AttributesError::Incomplete {
                        dir: work_tree.to_path_buf(),
                        reason: format!("more than {} entries", limits.max_entries),
                    });
                }
                if name == GITATTRIBUTES.as_bytes() && entry.file_type() != Some(Type::Directory) {
                    has_attributes = true;
                    continue;
                }
                match entry.file_type() {
                    Some(Type::Directory) => subdirs.push(name.to_vec()),
                    Some(_) => {}
                    // No d_type from this file system: ask below, without following links.
                    None => unknown.push(name.to_vec()),
                }
            }
            for name in unknown {
                let st = nix::sys::stat::fstatat(
                    &dir,
                    name.as_slice(),
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .map_err(|e| incomplete(&work_tree.join(&rel), "cannot stat an entry", e))?;
                if st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR {
                    subdirs.push(name);
                }
            }
            if has_attributes {
                let file_rel = rel.join(GITATTRIBUTES);
                match read_at(&dir, &work_tree.join(&file_rel), limits.max_file_size)? {
                    Some(bytes) => found.push((file_rel, bytes)),
                    None => self.files.push(FileEntry {
                        source: Source::WorkTree(file_rel),
                        state: FileState::LinkNotFollowed,
                    }),
                }
            }
            if !subdirs.is_empty() {
                if depth + 1 > limits.max_depth {
                    return Err(AttributesError::Incomplete {
                        dir: work_tree.join(&rel),
                        reason: format!("nested deeper than {}", limits.max_depth),
                    });
                }
                let dir = Rc::new(dir);
                for name in subdirs {
                    let child = rel.join(std::ffi::OsStr::from_bytes(&name));
                    stack.push((Some(Rc::clone(&dir)), name, child, depth + 1));
                }
            }
        }
        // Root first, then by path: the order git stacks them in.
        found.sort_by(|a, b| {
            (a.0.components().count(), a.0.as_os_str())
                .cmp(&(b.0.components().count(), b.0.as_os_str()))
        });
        for (rel, bytes) in found {
            self.push_parsed(Source::WorkTree(rel), &bytes);
        }
        Ok(())
    }

    /// `.gitattributes` blobs in the index (every stage), including those inside sparse-index
    /// directory entries.
    fn read_index(&mut self, git_dir: &Path, common_dir: &Path) -> Result<(), AttributesError> {
        let index_path = git_dir.join("index");
        let index_err = |message: String| AttributesError::Index {
            file: index_path.clone(),
            message,
        };
        // A FIFO or a folder planted as the index (or as a split index's shared index) must
        // not block or confuse the reader. Read only: the trailing checksum protects against
        // torn writes, not against the agent (who can rewrite it); skipping it halves the cost.
        let index = match crate::index_paths::read_index(&index_path, true) {
            Ok(Some(i)) => i,
            Ok(None) => return Ok(()),
            Err(e) => return Err(index_err(e)),
        };
        let mut found = objects::Found::default();
        let mut sparse_dirs = Vec::new();
        for entry in index.entries() {
            let path: &[u8] = entry.path(&index).as_ref();
            let mode = entry.mode;
            if mode == gix::index::entry::Mode::DIR {
                sparse_dirs.push((path.to_vec(), entry.id));
                continue;
            }
            let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
            if base != GITATTRIBUTES.as_bytes() {
                continue;
            }
            if mode == gix::index::entry::Mode::SYMLINK {
                found.links.push(path.to_vec());
            } else if mode == gix::index::entry::Mode::FILE
                || mode == gix::index::entry::Mode::FILE_EXECUTABLE
            {
                found.blobs.push((path.to_vec(), entry.id));
            }
        }
        let objects = self.objects(common_dir)?;
        objects.scan_trees(sparse_dirs, &mut found)?;
        self.check_time(&index_path)?;
        self.push_found(found, |p| Source::Index(bytes_path(p)), &index_path)
    }

    /// The object database, opened once.
    fn objects(&mut self, common_dir: &Path) -> Result<&mut objects::Objects, AttributesError> {
        if self.objects.is_none() {
            self.objects = Some(objects::Objects::open(
                common_dir,
                self.opts.limits.max_file_size,
                self.opts.limits.max_trees,
            )?);
        }
        Ok(self.objects.as_mut().expect("just opened"))
    }

    /// `.gitattributes` at any depth of the tree a tree-ish (an `attr.tree` value, `HEAD` of a
    /// bare repository) names.
    fn read_tree(
        &mut self,
        git_dir: &Path,
        common_dir: &Path,
        spec: &str,
    ) -> Result<(), AttributesError> {
        let refs = if git_dir == common_dir {
            gix::refs::file::Store::at(git_dir.to_path_buf(), gix::hash::Kind::Sha1)
        } else {
            gix::refs::file::Store::for_linked_worktree(
                git_dir.to_path_buf(),
                common_dir.to_path_buf(),
                gix::hash::Kind::Sha1,
            )
        };
        let objects = self.objects(common_dir)?;
        let root =
            objects
                .resolve_treeish(&refs, spec)
                .map_err(|reason| AttributesError::Incomplete {
                    dir: git_dir.to_path_buf(),
                    reason: format!("attribute tree {spec:?} cannot be resolved: {reason}"),
                })?;
        let Some(root) = root else {
            self.files.push(FileEntry {
                source: Source::Tree {
                    rev: spec.to_owned(),
                    path: PathBuf::from(GITATTRIBUTES),
                },
                state: FileState::Missing,
            });
            return Ok(());
        };
        let mut found = objects::Found::default();
        objects.scan_trees(vec![(Vec::new(), root)], &mut found)?;
        let rev = spec.to_owned();
        self.push_found(
            found,
            |p| Source::Tree {
                rev: rev.clone(),
                path: bytes_path(p),
            },
            git_dir,
        )
    }

    /// Read and parse the blobs found in trees or the index, root first.
    fn push_found(
        &mut self,
        mut found: objects::Found,
        source: impl Fn(&[u8]) -> Source,
        at: &Path,
    ) -> Result<(), AttributesError> {
        for l in &found.links {
            self.files.push(FileEntry {
                source: source(l),
                state: FileState::LinkNotFollowed,
            });
        }
        found.blobs.sort_by(|a, b| {
            let depth = |p: &[u8]| p.iter().filter(|&&c| c == b'/').count();
            (depth(&a.0), &a.0).cmp(&(depth(&b.0), &b.0))
        });
        for (path, id) in found.blobs {
            self.check_time(at)?;
            let bytes = self
                .objects
                .as_mut()
                .expect("opened before blobs are found")
                .blob(&path, &id)?;
            self.push_parsed(source(&path), &bytes);
        }
        Ok(())
    }

    /// Turn parsed lines into selections: direct assignments, macro definitions that assign a
    /// driver, and lines that set such a macro (transitively).
    fn selections(&self) -> Result<Vec<Selection>, AttributesError> {
        let mut macros: BTreeMap<Vec<u8>, Vec<MacroDef>> = BTreeMap::new();
        for (source, lines) in &self.parsed {
            for l in lines {
                if let Some(m) = &l.macro_name {
                    macros.entry(m.clone()).or_default().push(MacroDef {
                        source: source.clone(),
                        states: l.states.clone(),
                    });
                }
            }
        }
        let mut out = Vec::new();
        for (source, lines) in &self.parsed {
            for l in lines {
                let (pattern, via, honoured) = match &l.macro_name {
                    Some(m) => (
                        format!("[attr]{}", m.to_str_lossy()),
                        Some(m.to_str_lossy().into_owned()),
                        source.honours_macros(),
                    ),
                    None => (
                        l.pattern
                            .as_deref()
                            .map(|p| p.to_str_lossy().into_owned())
                            .unwrap_or_default(),
                        None,
                        true,
                    ),
                };
                for (attr, state) in &l.states {
                    let mut push = |kind: DriverKind,
                                    name: &[u8],
                                    via_macro: Option<String>,
                                    honoured: bool|
                     -> Result<(), AttributesError> {
                        let name = std::str::from_utf8(name).map_err(|_| {
                            AttributesError::NonUtf8Name {
                                origin: source.clone(),
                                line: l.number,
                                kind: kind.name(),
                            }
                        })?;
                        let sel = Selection {
                            kind,
                            name: name.to_owned(),
                            source: source.clone(),
                            line: l.number,
                            pattern: pattern.clone(),
                            via_macro,
                            macro_honoured: honoured,
                        };
                        if !out.contains(&sel) {
                            out.push(sel);
                        }
                        Ok(())
                    };
                    if let (Some(kind), State::Value(v)) = (
                        attr.to_str().ok().and_then(DriverKind::from_attribute),
                        state,
                    ) {
                        push(kind, v, via.clone(), honoured)?;
                    }
                    // Setting a macro (superset: any state but false/unspecified).
                    if matches!(state, State::Set | State::Value(_)) && macros.contains_key(attr) {
                        for (kind, name, def_honoured) in expand(&macros, attr) {
                            push(
                                kind,
                                &name,
                                Some(attr.to_str_lossy().into_owned()),
                                honoured && def_honoured,
                            )?;
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Every driver assignment reachable from macro `name` (through nested macros, each visited
/// once), with whether every definition on the way is honoured by git.
fn expand(
    macros: &BTreeMap<Vec<u8>, Vec<MacroDef>>,
    name: &[u8],
) -> Vec<(DriverKind, Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut stack: Vec<(Vec<u8>, bool)> = vec![(name.to_vec(), true)];
    while let Some((m, honoured_so_far)) = stack.pop() {
        if !seen.insert(m.clone()) {
            continue;
        }
        for def in macros.get(&m).into_iter().flatten() {
            let honoured = honoured_so_far && def.source.honours_macros();
            for (attr, state) in &def.states {
                if let (Some(kind), State::Value(v)) = (
                    attr.to_str().ok().and_then(DriverKind::from_attribute),
                    state,
                ) {
                    out.push((kind, v.clone(), honoured));
                }
                if matches!(state, State::Set | State::Value(_)) && macros.contains_key(attr) {
                    stack.push((attr.clone(), honoured));
                }
            }
        }
    }
    out
}

/// Read `.gitattributes` in an open folder without following a link (`Ok(None)` for a link,
/// which git does not follow either), non-blocking, regular files only, bounded.
fn read_at(
    dir: &nix::dir::Dir,
    path: &Path,
    limit: u64,
) -> Result<Option<Vec<u8>>, AttributesError> {
    use nix::fcntl::OFlag;
    use std::io::Read;
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let unreadable = |e: std::io::Error| {
        AttributesError::Read(ConfigError::Unreadable {
            file: path.to_path_buf(),
            source: e,
        })
    };
    let fd = match nix::fcntl::openat(dir, GITATTRIBUTES, flags, nix::sys::stat::Mode::empty()) {
        Ok(fd) => fd,
        Err(nix::Error::ELOOP) => return Ok(None),
        Err(e) => return Err(unreadable(e.into())),
    };
    let file = std::fs::File::from(fd);
    let md = file.metadata().map_err(unreadable)?;
    if !md.is_file() {
        return Err(AttributesError::Read(ConfigError::NotAFile {
            file: path.to_path_buf(),
            kind: if md.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            },
        }));
    }
    let too_large = |size: u64| {
        AttributesError::Read(ConfigError::TooLarge {
            file: path.to_path_buf(),
            size,
            limit,
        })
    };
    if md.len() > limit {
        return Err(too_large(md.len()));
    }
    let mut buf = Vec::with_capacity(md.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(unreadable)?;
    if buf.len() as u64 > limit {
        return Err(too_large(buf.len() as u64));
    }
    Ok(Some(buf))
}

fn bytes_path(p: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(p))
}
