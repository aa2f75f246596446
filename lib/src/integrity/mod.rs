//! wt-check `pin` / `check [--restore]`: the protected parts of a git folder come out of every
//! agent turn exactly as they went in.
//!
//! At sandbox build, [`pin`] records every protected entry of the repository's common dir
//! (hooks folder, `config` and its include targets, `config.worktree`, `commondir`,
//! `info/attributes`, `objects/info/alternates`, `HEAD` form, every `worktrees/<id>/` entry,
//! every submodule git dir under `modules/`) into a state file outside the repository. At
//! turn end, [`check`] reads them again and reports each difference as an event; with
//! `restore` it puts them back: what the agent created or changed is moved into a quarantine
//! folder beside the state file (never deleted), then the baseline bytes are written
//! atomically.
//!
//! Invariants:
//! - Every read and write below the common dir walks component by component without
//!   following links ([`nf::Dir`]); a link where a folder or file is expected is reported
//!   (`link_refused`) and never followed, so a folder swapped for a link mid-check cannot
//!   redirect a write outside the git folder.
//! - The paths checked come from the state file, not from a new discovery: a `.git` file or
//!   `commondir` planted during the turn cannot point the check at another folder.
//! - Unknown is not clean: an entry that cannot be read, or a restore that fails, makes the
//!   result [`Outcome::Incomplete`] (exit 2).
//! - The session's own worktrees (under `<repo>-worktrees/<session>/`) may be added, changed
//!   and removed, but must stay consistent with git's layout (gix-and-perf §3) and inside
//!   that folder. Everyone else's entries must not change.

pub mod embedded;
pub mod hook;
pub mod inprogress;
pub mod nf;
pub mod scanlink;
pub mod state;
pub mod tool;

use crate::events::{Event, EventKind, Tool};
use crate::fsx::FileType;
use crate::layout::{LayoutError, Problem as LayoutProblem, WorktreeEntry};
use nf::{Dir, Kind, NfError};
use state::{Content, Node, State, WorktreeBaseline};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

/// Largest protected file read (hooks can be binaries; config files are small).
pub const FILE_LIMIT: u64 = 16 << 20;
/// Deepest folder level walked inside a protected tree (`hooks/`, `modules/<name>/info/`).
pub const TREE_DEPTH: usize = 8;
/// Most entries recorded in one pin or check; past it the result is incomplete.
pub const ENTRY_LIMIT: usize = 200_000;
/// Deepest submodule nesting followed under `modules/`.
pub const MODULE_DEPTH: usize = 6;

/// Files of the common dir (and of each submodule git dir) compared byte for byte.
pub(crate) const GIT_DIR_FILES: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "objects/info/alternates",
];
/// Folders whose whole contents are protected.
pub(crate) const GIT_DIR_TREES: &[&str] = &["hooks", "info", "branches", "remotes"];
/// In a submodule git dir, `info/` is protected as a whole.
const MODULE_TREES: &[&str] = &["hooks", "info"];
/// Files of a `worktrees/<id>/` entry compared against the baseline (`HEAD` by form).
const WORKTREE_FILES: &[&str] = crate::catalogue::WORKTREE_ADMIN_FILES;

/// What went wrong before any comparison could start.
#[derive(Debug, thiserror::Error)]
pub enum IntegrityError {
    #[error("{0}: cannot pin: {1}")]
    NotARepository(PathBuf, String),
    #[error("{state}: the state file lies inside {inside} (the agent could rewrite it); put it outside the repository, its git dir and its work trees")]
    StateInside { state: PathBuf, inside: PathBuf },
    #[error("{0}: the state file is a symbolic link; refused")]
    StateLink(PathBuf),
    #[error("{0}: cannot read the state file: {1}")]
    StateRead(PathBuf, std::io::Error),
    #[error("{0}: not a wt-check state file: {1}")]
    StateParse(PathBuf, serde_json::Error),
    #[error("{0}: state file format {1} is not supported (this build reads formats 1 and 2 and writes {f}); pin again with `wt-check pin`", f = state::FORMAT)]
    StateFormat(PathBuf, u32),
    #[error("{0}: cannot write the state file: {1}")]
    StateWrite(PathBuf, String),
    #[error("{0}: session name must be 1-64 characters of [A-Za-z0-9._-]")]
    BadSession(String),
    #[error("{path}: cannot pin: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{repo}: cannot pin: the repository is already armed, and the baseline would take that as its normal state; remove what is listed (see `wt-check audit`) or pin with --accept-armed to record it as accepted:\n  {}", findings.join("\n  "))]
    Armed {
        repo: PathBuf,
        findings: Vec<String>,
    },
    #[error(transparent)]
    Fs(#[from] NfError),
}

/// What to pin or check.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub repo: PathBuf,
    pub state: PathBuf,
    /// The session whose worktrees (`<repo>-worktrees/<session>/`) may change.
    pub session: Option<String>,
    /// Overrides the session's worktree folder.
    pub session_dir: Option<PathBuf>,
    /// `check` only: put every protected entry back.
    pub restore: bool,
    /// `pin` only: record what is armed as accepted instead of refusing (`--accept-armed`).
    pub accept_armed: bool,
}

/// The result of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    Found,
    Incomplete,
}

impl Outcome {
    pub fn code(self) -> crate::exit::Code {
        match self {
            Outcome::Clean => crate::exit::CLEAN,
            Outcome::Found => crate::exit::FOUND,
            Outcome::Incomplete => crate::exit::INCOMPLETE,
        }
    }
    /// The worse of two outcomes.
    pub fn and(self, o: Outcome) -> Outcome {
        use Outcome::*;
        match (self, o) {
            (Incomplete, _) | (_, Incomplete) => Incomplete,
            (Found, _) | (_, Found) => Found,
            _ => Clean,
        }
    }
}

/// Where a repository's parts are (resolved by the trusted caller at pin time).
#[derive(Debug, Clone)]
pub struct Located {
    pub repo: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    pub work_tree: Option<PathBuf>,
}

/// Find the git dir, common dir and main work tree of `repo` (a work tree, a linked worktree
/// or a bare git dir) with `crate::layout::discover`, which refuses layouts a host tool
/// cannot vouch for (a `commondir` in a main git dir, a `.git` link, a gitfile that does not
/// point back). Discovery does not climb above `repo`. Runs at pin time, on the owner's side;
/// `check` uses the paths pinned in the state file, never a new discovery.
pub fn locate(repo: &Path) -> Result<Located, IntegrityError> {
    let not = |why: String| IntegrityError::NotARepository(repo.to_path_buf(), why);
    let abs = std::fs::canonicalize(repo).map_err(|e| not(e.to_string()))?;
    let ceilings: Vec<PathBuf> = abs.parent().map(Path::to_path_buf).into_iter().collect();
    let l = crate::layout::discover(&abs, &ceilings).map_err(|e| not(e.to_string()))?;
    // The main work tree: the common dir's parent when it is a `.git` folder.
    let work_tree = if l.common_dir.file_name() == Some(OsStr::new(".git")) {
        l.common_dir.parent().map(Path::to_path_buf)
    } else {
        None
    };
    Ok(Located {
        repo: abs,
        git_dir: l.git_dir,
        common_dir: l.common_dir,
        work_tree,
    })
}

/// `<repo>-worktrees/<session>`, the session's own worktree folder.
pub fn default_session_dir(loc: &Located, session: &str) -> PathBuf {
    let base = loc.work_tree.clone().unwrap_or_else(|| {
        let c = &loc.common_dir;
        match c.file_name().and_then(OsStr::to_str) {
            Some(n) => c.with_file_name(n.trim_end_matches(".git")),
            None => c.clone(),
        }
    });
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push("-worktrees");
    base.with_file_name(name).join(session)
}

/// Refuse a state file inside anything the agent can write: the repository, its git dir,
/// common dir, work trees, and the session's worktree folder.
pub fn check_state_location(
    state: &Path,
    loc: &Located,
    worktrees: &[PathBuf],
    session_dir: Option<&Path>,
) -> Result<PathBuf, IntegrityError> {
    if std::fs::symlink_metadata(state).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(IntegrityError::StateLink(state.to_path_buf()));
    }
    let resolved = crate::policy::resolve(&absolute(state));
    let mut forbidden: Vec<PathBuf> = vec![
        loc.repo.clone(),
        loc.git_dir.clone(),
        loc.common_dir.clone(),
    ];
    forbidden.extend(loc.work_tree.clone());
    forbidden.extend(worktrees.iter().cloned());
    forbidden.extend(session_dir.map(Path::to_path_buf));
    for f in forbidden {
        let f = crate::policy::resolve(&f);
        if resolved.starts_with(&f) {
            return Err(IntegrityError::StateInside {
                state: state.to_path_buf(),
                inside: f,
            });
        }
    }
    Ok(resolved)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Lexical normalisation: `.` dropped, `..` pops (never above `/`).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            o => out.push(o.as_os_str()),
        }
    }
    out
}

/// Is `HEAD` content in a form git accepts (`validate_headref`): `ref: refs/…` or a full
/// hex object id?
pub fn head_is_valid(bytes: &[u8]) -> bool {
    let s = match std::str::from_utf8(bytes) {
        Ok(s) => s.trim_end_matches(['\n', '\r']),
        Err(_) => return false,
    };
    if let Some(r) = s.strip_prefix("ref:") {
        let r = r.trim_start();
        return r.starts_with("refs/") && !r.contains("..") && !r.chars().any(char::is_whitespace);
    }
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn head_node_valid(n: &Node) -> bool {
    match n {
        Node::File { content, .. } => content.bytes().is_some_and(|b| head_is_valid(&b)),
        _ => false,
    }
}

pub(crate) fn is_head_key(rel: &str) -> bool {
    // `HEAD` of the common dir, of a worktree entry, of a submodule git dir (at any depth);
    // never a file of that name inside a protected tree such as `hooks/` or `info/`.
    (rel == "HEAD" || rel.ends_with("/HEAD"))
        && !rel
            .split('/')
            .any(|c| c == "hooks" || c == "info" || c == "refs" || c == "logs")
}

// ---------------------------------------------------------------------------------------
// Collection: the protected entries as they are now.

/// An entry that could not be read.
#[derive(Debug, Clone)]
struct Problem {
    path: PathBuf,
    reason: String,
    link: bool,
}

/// The protected entries of one common dir, as found.
struct Snapshot {
    entries: BTreeMap<String, Node>,
    includes: BTreeMap<PathBuf, Node>,
    problems: Vec<Problem>,
}

struct Collector<'a> {
    root: &'a Dir,
    entries: BTreeMap<String, Node>,
    problems: Vec<Problem>,
    /// Folders opened so far in this pass, by path relative to the root: each folder is
    /// opened once (no-follow, one component from its parent), not walked from the root for
    /// every entry. A handle keeps naming the folder it opened, whatever is renamed later.
    dirs: crate::layout::FastMap<String, std::rc::Rc<Dir>>,
    /// The baseline's entries (at check time): a file whose bytes equal the baseline's text
    /// takes the baseline's object id instead of being hashed again (see [`read_node_known`]).
    known: Option<&'a BTreeMap<String, Node>>,
    /// The worktree entries as `crate::layout::worktree_entries` read them, by id: their
    /// admin-dir files are taken from there instead of being read a second time (see
    /// [`Collector::shared_entry`]).
    shared: Option<&'a BTreeMap<String, WorktreeEntry>>,
}

impl<'a> Collector<'a> {
    fn new(
        root: &'a Dir,
        known: Option<&'a BTreeMap<String, Node>>,
        shared: Option<&'a BTreeMap<String, WorktreeEntry>>,
    ) -> Self {
        Collector {
            root,
            entries: BTreeMap::new(),
            problems: Vec::new(),
            dirs: crate::layout::FastMap::default(),
            known,
            shared,
        }
    }

    /// Record `node` at `rel` unless the entry limit is reached (then a problem, `false`).
    fn put(&mut self, rel: &str, node: Node) -> bool {
        if self.full() {
            self.problems.push(Problem {
                path: self.root.path().join(rel),
                reason: format!("more than {ENTRY_LIMIT} entries; stopped"),
                link: false,
            });
            return false;
        }
        self.entries.insert(rel.to_owned(), node);
        true
    }

    /// Record the worktree entry `worktrees/<id>` and its files from what
    /// `crate::layout::worktree_entries` read (no-follow, each file once, see
    /// `layout::AdminFile`), instead of reading them again; the names of its admin dir, or
    /// `None` when the layout read has nothing for this id as a folder (the caller reads
    /// the entry itself). The nodes are those [`read_node_known`] builds from the same lstat
    /// and bytes; a file the layout read could not hold (unreadable, too large for it) is
    /// read here, so its error is met and reported as before.
    fn shared_entry(&mut self, id: &str, base: &str) -> Option<Vec<OsString>> {
        let e = self.shared.and_then(|l| l.get(id))?;
        let FileType::Dir { mode } = e.admin_type else {
            return None;
        };
        if self.entries.contains_key(base) || !self.put(base, Node::Dir { mode }) {
            return Some(Vec::new());
        }
        for f in WORKTREE_FILES {
            let rel = format!("{base}/{f}");
            let node = match e.files.iter().find(|a| a.name == *f) {
                None => Node::Absent,
                Some(a) => match (&a.file_type, &a.bytes) {
                    (FileType::File { mode, .. }, Some(bytes)) => {
                        file_node(bytes, *mode, self.known.and_then(|k| k.get(&rel)))
                    }
                    (FileType::File { .. }, None) => {
                        self.file(&rel);
                        continue;
                    }
                    (FileType::Dir { mode }, _) => Node::Dir { mode: *mode },
                    (FileType::Symlink { target }, _) => Node::Link {
                        target: target.to_string_lossy().into_owned(),
                    },
                    (FileType::Fifo, _) => Node::Special { kind: Kind::Fifo },
                    (FileType::Socket, _) => Node::Special { kind: Kind::Socket },
                    (FileType::CharDev | FileType::BlockDev, _) => {
                        Node::Special { kind: Kind::Device }
                    }
                },
            };
            if !self.put(&rel, node) {
                return Some(Vec::new());
            }
        }
        Some(e.listed.clone())
    }

    /// The folder `rel` (`""` is the root), opened once per pass.
    fn dir(&mut self, rel: &str) -> Result<std::rc::Rc<Dir>, NfError> {
        if let Some(d) = self.dirs.get(rel) {
            return Ok(d.clone());
        }
        let d = if rel.is_empty() {
            self.root.walk(Path::new(""))?
        } else {
            let (parent, name) = split(rel);
            self.dir(parent)?.walk(Path::new(name))?
        };
        let d = std::rc::Rc::new(d);
        self.dirs.insert(rel.to_owned(), d.clone());
        Ok(d)
    }

    fn problem(&mut self, e: &NfError) {
        self.problems.push(Problem {
            path: e.path().to_path_buf(),
            reason: e.to_string(),
            link: e.is_link(),
        });
    }

    fn full(&self) -> bool {
        self.entries.len() >= ENTRY_LIMIT
    }

    /// Record the node at `rel` (its parent must be a folder already recorded or the root);
    /// its shape, `None` when it could not be read.
    fn node(&mut self, rel: &str) -> Option<Shape> {
        self.node_listed(rel, false)
    }

    /// [`Collector::node`]; `listed_file`: its folder's listing showed a regular file (see
    /// [`read_node_known`]).
    fn node_listed(&mut self, rel: &str, listed_file: bool) -> Option<Shape> {
        if let Some(n) = self.entries.get(rel) {
            return Some(Shape::of(n));
        }
        if self.full() {
            self.problems.push(Problem {
                path: self.root.path().join(rel),
                reason: format!("more than {ENTRY_LIMIT} entries; stopped"),
                link: false,
            });
            return None;
        }
        let (parent, name) = split(rel);
        let dir = match self.dir(parent) {
            Ok(d) => d,
            Err(e) => {
                self.problem(&e);
                return None;
            }
        };
        let known = self.known.and_then(|k| k.get(rel));
        match read_node_known(&dir, OsStr::new(name), known, listed_file) {
            Ok(n) => {
                let shape = Shape::of(&n);
                self.entries.insert(rel.to_owned(), n);
                Some(shape)
            }
            Err(e) => {
                self.problem(&e);
                None
            }
        }
    }

    /// Record a file and every folder on its way; stops below anything that is not a folder.
    fn file(&mut self, rel: &str) {
        let parts: Vec<&str> = rel.split('/').collect();
        let mut prefix = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                prefix.push('/');
            }
            prefix.push_str(p);
            let Some(n) = self.node(&prefix) else { return };
            let last = i + 1 == parts.len();
            if !last {
                match n {
                    Shape::Dir => {}
                    Shape::Absent => {
                        // Parent missing: the file is absent too (recorded, so a later plant shows).
                        self.entries.insert(rel.to_owned(), Node::Absent);
                        return;
                    }
                    _ => return,
                }
            }
        }
    }

    /// Record a folder and everything below it (bounded depth).
    fn tree(&mut self, rel: &str, depth: usize) {
        self.file(rel);
        if !matches!(self.entries.get(rel), Some(Node::Dir { .. })) {
            return;
        }
        if depth >= TREE_DEPTH {
            self.problems.push(Problem {
                path: self.root.path().join(rel),
                reason: format!("deeper than {TREE_DEPTH} levels; not walked"),
                link: false,
            });
            return;
        }
        let names = match self.dir(rel).and_then(|d| d.list_kinds()) {
            Ok(n) => n,
            Err(e) => {
                self.problem(&e);
                return;
            }
        };
        for (n, kind) in names {
            let Some(n) = n.to_str() else {
                self.problems.push(Problem {
                    path: self.root.path().join(rel).join(&n),
                    reason: "name is not UTF-8".into(),
                    link: false,
                });
                continue;
            };
            let child = format!("{rel}/{n}");
            if git_written_unreported(&child) {
                continue; // written by git itself, arms nothing (catalogue::GIT_WRITTEN_ENTRIES)
            }
            if kind == crate::fsx::EntryKind::File && !self.entries.contains_key(&child) {
                // The listing says a regular file: read it without an lstat first.
                self.node_listed(&child, true);
            }
            self.tree(&child, depth + 1);
        }
    }

    /// One git dir's protected parts (`base` is `""` for the common dir or `modules/<name>`).
    fn git_dir(&mut self, base: &str, module_depth: usize) {
        let j = |n: &str| {
            if base.is_empty() {
                n.to_owned()
            } else {
                format!("{base}/{n}")
            }
        };
        for f in GIT_DIR_FILES {
            self.file(&j(f));
        }
        self.file(&j("HEAD"));
        let trees: &[&str] = if base.is_empty() {
            GIT_DIR_TREES
        } else {
            MODULE_TREES
        };
        for t in trees {
            self.tree(&j(t), 1);
        }
        self.modules(&j("modules"), module_depth);
    }

    /// Submodule git dirs below `rel` (`modules/`), at any nesting of names and submodules.
    fn modules(&mut self, rel: &str, depth: usize) {
        self.file(rel);
        if !matches!(self.entries.get(rel), Some(Node::Dir { .. })) {
            return;
        }
        let names = match self.dir(rel).and_then(|d| d.list()) {
            Ok(n) => n,
            Err(e) => {
                self.problem(&e);
                return;
            }
        };
        for n in names {
            let Some(n) = n.to_str() else { continue };
            let child = format!("{rel}/{n}");
            let Some(Shape::Dir) = self.node(&child) else {
                continue;
            };
            // A submodule git dir holds HEAD or config; otherwise it is a folder of a name
            // with slashes (`modules/a/b`).
            let looks_git = ["HEAD", "config"].iter().any(|f| {
                !matches!(
                    self.node(&format!("{child}/{f}")),
                    Some(Shape::Absent) | None
                )
            });
            if depth >= MODULE_DEPTH {
                self.problems.push(Problem {
                    path: self.root.path().join(&child),
                    reason: format!("submodules nested deeper than {MODULE_DEPTH}; not walked"),
                    link: false,
                });
                continue;
            }
            if looks_git {
                self.git_dir(&child, depth + 1);
            } else {
                self.modules(&child, depth + 1);
            }
        }
    }

    /// Every `worktrees/<id>/` entry: its files, and any name git does not write there.
    fn worktrees(&mut self) {
        self.file("worktrees");
        if !matches!(self.entries.get("worktrees"), Some(Node::Dir { .. })) {
            return;
        }
        let ids = match self
            .root
            .walk(Path::new("worktrees"))
            .and_then(|d| d.list())
        {
            Ok(n) => n,
            Err(e) => {
                self.problem(&e);
                return;
            }
        };
        for id in ids {
            let Some(id) = id.to_str() else { continue };
            let base = format!("worktrees/{id}");
            let names = if let Some(names) = self.shared_entry(id, &base) {
                names
            } else {
                let Some(Shape::Dir) = self.node(&base) else {
                    continue;
                };
                for f in WORKTREE_FILES {
                    self.file(&format!("{base}/{f}"));
                }
                match self.dir(&base).and_then(|d| d.list()) {
                    Ok(n) => n,
                    Err(e) => {
                        self.problem(&e);
                        continue;
                    }
                }
            };
            for n in names {
                let Some(n) = n.to_str() else { continue };
                if n == "modules" {
                    // Submodule git dirs of this worktree: config and hooks, as `modules/`.
                    self.modules(&format!("{base}/modules"), 0);
                    continue;
                }
                if WORKTREE_FILES.contains(&n) || is_worktree_state_name(n) {
                    continue;
                }
                self.tree(&format!("{base}/{n}"), 1);
            }
        }
    }
}

/// What a recorded node is, for the walk's decisions (the node itself stays in the map).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Absent,
    Dir,
    Other,
}

impl Shape {
    fn of(n: &Node) -> Shape {
        match n {
            Node::Absent => Shape::Absent,
            Node::Dir { .. } => Shape::Dir,
            _ => Shape::Other,
        }
    }
}

/// A name git keeps per worktree in `worktrees/<id>/` (the catalogue's list, their `.lock`
/// files, split-index shared files): per-worktree state the agent may change freely.
/// `modules` is listed there too but holds submodule git dirs, protected like `modules/`.
pub(crate) fn is_worktree_state_name(n: &str) -> bool {
    let stem = n.strip_suffix(".lock").unwrap_or(n);
    n != "modules"
        && (crate::catalogue::WORKTREE_PRIVATE_ENTRIES.contains(&stem)
            || stem.starts_with("sharedindex."))
}

/// Is `rel` (relative to the common dir) something git writes on its own inside a protected
/// tree and that arms nothing ([`crate::catalogue::GIT_WRITTEN_ENTRIES`] with
/// `reported: false`), in the common dir or a submodule git dir? Left out of the comparison.
fn git_written_unreported(rel: &str) -> bool {
    crate::catalogue::GIT_WRITTEN_ENTRIES
        .iter()
        .filter(|e| !e.reported)
        .any(|e| {
            rel == e.path
                || (rel.starts_with("modules/")
                    && rel.strip_suffix(e.path).is_some_and(|p| p.ends_with('/')))
        })
}

/// A change of a config file that only touches the tracking keys git writes itself
/// (`inprogress::tracking_only`), with the file's mode unchanged.
fn tracking_only_change(rel: &str, before: &Node, after: &Node) -> bool {
    if split(rel).1 != "config" {
        return false;
    }
    match (before, after) {
        (
            Node::File {
                mode: m1,
                content: c1,
                ..
            },
            Node::File {
                mode: m2,
                content: c2,
                ..
            },
        ) if (m1 & 0o777) == (m2 & 0o777) => match (c1.bytes(), c2.bytes()) {
            (Some(b), Some(a)) => inprogress::tracking_only(&b, &a),
            _ => false,
        },
        _ => false,
    }
}

fn split(rel: &str) -> (&str, &str) {
    match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    }
}

fn read_node(dir: &Dir, name: &OsStr) -> Result<Node, NfError> {
    read_node_known(dir, name, None, false)
}

/// [`read_node`], given what the baseline holds for this entry. Every file is still read
/// whole and its bytes compared: when they equal the baseline's text, the node is built
/// from the baseline's object id and text instead of hashing the bytes again — the same
/// node `Node::file` builds, since the id is the blob hash of those very bytes (the state
/// file is written by `pin`, outside the sandbox). Any other case hashes as before.
///
/// `listed_file`: the folder's listing (`d_type`) showed a regular file, so the file is opened
/// straight away — no-follow and non-blocking, its type checked on the descriptor before any
/// byte is read (a fifo never blocks, a device or folder is never read). When it is no longer
/// a regular file (a link, fifo, folder swapped in since the listing, or gone), the entry is
/// judged by its `lstat` as without the hint.
fn read_node_known(
    dir: &Dir,
    name: &OsStr,
    known: Option<&Node>,
    listed_file: bool,
) -> Result<Node, NfError> {
    if listed_file {
        match dir.read_stated(name, FILE_LIMIT) {
            Ok((bytes, mode)) => return Ok(file_node(&bytes, mode, known)),
            Err(NfError::NotRegular { .. } | NfError::Link { .. } | NfError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let Some(st) = dir.stat(name)? else {
        return Ok(Node::Absent);
    };
    Ok(match st.kind {
        Kind::File => {
            // The mode of the file actually read (its descriptor's `fstat`).
            let (bytes, mode) = dir.read_stated(name, FILE_LIMIT)?;
            file_node(&bytes, mode, known)
        }
        Kind::Dir => Node::Dir { mode: st.mode },
        Kind::Link => Node::Link {
            target: dir.read_link(name)?.to_string_lossy().into_owned(),
        },
        k => Node::Special { kind: k },
    })
}

/// The node of a file read with `bytes` and permission bits `mode`, given the baseline's
/// node for it (see [`read_node_known`]).
fn file_node(bytes: &[u8], mode: u32, known: Option<&Node>) -> Node {
    match known {
        Some(Node::File {
            oid,
            content: content @ Content::Text(text),
            ..
        }) if text.as_bytes() == bytes => Node::File {
            mode: mode & 0o7777,
            oid: oid.clone(),
            content: content.clone(),
        },
        _ => Node::file(bytes, mode),
    }
}

/// Read an absolute path's node without following links on the way.
fn read_abs(path: &Path) -> Result<Node, NfError> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(NfError::Escape {
            path: path.to_path_buf(),
        });
    };
    match Dir::open_abs(parent) {
        Ok(d) => read_node(&d, name),
        Err(e) if e.is_not_found() => Ok(Node::Absent),
        Err(e) => Err(e),
    }
}

/// Include targets of the repository's config files (common `config`, every
/// `config.worktree`, submodule configs), as a superset: `crate::config` follows every
/// `include.path` and `includeIf.*.path` whatever its condition, nested includes too.
fn include_targets(common_dir: &Path, problems: &mut Vec<Problem>) -> Vec<PathBuf> {
    let mut o = crate::config::Options::for_repository(None, common_dir, common_dir);
    o.linked_worktrees = true;
    o.submodules = crate::config::Submodules::Walk;
    o.home = std::env::var_os("HOME").map(PathBuf::from);
    match crate::config::enumerate(&o) {
        Ok(en) => {
            // Tolerated include targets too (a broken file behind a false `includeIf`): git
            // does not read them now, but the agent could mend one before its condition holds.
            let set: BTreeSet<PathBuf> = en
                .files()
                .iter()
                .filter(|f| f.origin.is_include())
                .map(|f| normalize(&f.origin.file))
                .chain(
                    en.tolerated()
                        .iter()
                        .filter(|t| t.chain.len() > 1)
                        .filter_map(|t| t.chain.last().map(|p| normalize(p))),
                )
                .collect();
            set.into_iter().collect()
        }
        Err(e) => {
            problems.push(Problem {
                path: common_dir.join("config"),
                reason: format!("cannot enumerate includes: {e}"),
                link: false,
            });
            Vec::new()
        }
    }
}

/// Is `rel` a file git reads as config (so one that can name include targets)?
fn is_config_key(rel: &str) -> bool {
    matches!(split(rel).1, "config" | "config.worktree")
}

/// Collect the protected entries. `baseline` (at check time) lets the include enumeration be
/// skipped when it cannot give another answer: the include targets are a function of the
/// config files' bytes, so when every config file and every known include target is byte-equal
/// to the baseline, the targets are the baseline's.
fn collect(
    root: &Dir,
    common_dir: &Path,
    baseline: Option<&State>,
    layout: &BTreeMap<String, WorktreeEntry>,
) -> Snapshot {
    let mut c = Collector::new(root, baseline.map(|b| &b.entries), Some(layout));
    c.git_dir("", 0);
    c.worktrees();
    let mut includes = BTreeMap::new();
    let mut problems = c.problems;
    let known: Vec<PathBuf> =
        baseline.map_or_else(Vec::new, |b| b.includes.keys().cloned().collect());
    let mut known_nodes = BTreeMap::new();
    for t in &known {
        match read_abs(t) {
            Ok(n) => {
                known_nodes.insert(t.clone(), n);
            }
            Err(e) => problems.push(Problem {
                path: e.path().to_path_buf(),
                reason: e.to_string(),
                link: e.is_link(),
            }),
        }
    }
    let unchanged = baseline.is_some_and(|b| {
        let cfg_now = c.entries.iter().filter(|(k, _)| is_config_key(k));
        let cfg_then = b.entries.iter().filter(|(k, _)| is_config_key(k));
        cfg_now.eq(cfg_then)
            && known_nodes.len() == b.includes.len()
            && b.includes
                .iter()
                .all(|(p, n)| known_nodes.get(p) == Some(n))
    });
    // Targets known from the baseline are read again even if no config names them now (a
    // removed include line is a config change; the target itself must still be compared).
    includes.extend(known_nodes);
    if !unchanged {
        let targets: BTreeSet<PathBuf> = include_targets(common_dir, &mut problems)
            .into_iter()
            .filter(|t| !includes.contains_key(t))
            .collect();
        for t in targets {
            match read_abs(&t) {
                Ok(n) => {
                    includes.insert(t, n);
                }
                Err(e) => problems.push(Problem {
                    path: e.path().to_path_buf(),
                    reason: e.to_string(),
                    link: e.is_link(),
                }),
            }
        }
    }
    Snapshot {
        entries: c.entries,
        includes,
        problems,
    }
}

// ---------------------------------------------------------------------------------------
// Worktree entries against git's layout.

/// The worktree path named by a `gitdir` file: trailing whitespace and `/.git` stripped,
/// relative paths resolved against `worktrees/<id>/` (git ≥ 2.48), lexically normalised.
fn gitdir_path(common_dir: &Path, id: &str, node: Option<&Node>) -> Option<PathBuf> {
    let Some(Node::File { content, .. }) = node else {
        return None;
    };
    let b = content.bytes()?;
    let s = std::str::from_utf8(&b).ok()?.trim_end();
    if s.is_empty() {
        return None;
    }
    let p = Path::new(s);
    let p = p.strip_prefix("").unwrap_or(p);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        common_dir.join("worktrees").join(id).join(p)
    };
    let p = normalize(&p);
    Some(if p.file_name() == Some(OsStr::new(".git")) {
        p.parent().map(Path::to_path_buf).unwrap_or(p)
    } else {
        p
    })
}

/// Every worktree entry as `crate::layout` reads it (no-follow, git's rules), by id. A
/// `worktrees` that is a link gives an empty map: the entry comparison reports the link.
fn layout_entries(common_dir: &Path) -> Result<BTreeMap<String, WorktreeEntry>, LayoutError> {
    match crate::layout::worktree_entries(common_dir) {
        Ok(v) => Ok(v.into_iter().map(|e| (e.id.clone(), e)).collect()),
        Err(e) if e.is_link() => Ok(BTreeMap::new()),
        Err(e) => Err(e),
    }
}

/// What wt-check reports of an entry's departures from git's layout: `crate::layout`'s
/// problems, less those the entry comparison reports itself (unexpected names and links are
/// planted entries, moved aside), less a missing worktree folder of the session's own entry
/// (the session may delete its worktree); plus, for the session's own entries, a worktree
/// path outside the session folder.
fn wt_problems(
    e: Option<&WorktreeEntry>,
    path: Option<&Path>,
    own: bool,
    session_dir: Option<&Path>,
) -> Vec<String> {
    let mut out: Vec<String> = e
        .map(|e| {
            e.problems
                .iter()
                .filter(|p| {
                    let reported_elsewhere = matches!(
                        p,
                        LayoutProblem::UnexpectedEntry { .. } | LayoutProblem::Link { .. }
                    );
                    let own_gone = own && matches!(p, LayoutProblem::BacklinkMissing { .. });
                    !(reported_elsewhere || own_gone)
                })
                .map(ToString::to_string)
                .collect()
        })
        .unwrap_or_default();
    if own {
        if let (Some(p), Some(sd)) = (path, session_dir) {
            if !p.starts_with(sd) || p == sd {
                out.push(format!(
                    "gitdir names {} outside the session folder {}",
                    p.display(),
                    sd.display()
                ));
            }
        }
    }
    out
}

fn worktree_baselines(
    common_dir: &Path,
    entries: &BTreeMap<String, Node>,
    layout: &BTreeMap<String, WorktreeEntry>,
    session_dir: Option<&Path>,
) -> BTreeMap<String, WorktreeBaseline> {
    let mut out = BTreeMap::new();
    for (k, n) in entries {
        let Some(id) = k.strip_prefix("worktrees/") else {
            continue;
        };
        if id.contains('/') || !n.is_dir() {
            continue;
        }
        let path = gitdir_path(common_dir, id, entries.get(&format!("{k}/gitdir")));
        let own = match (&path, session_dir) {
            (Some(p), Some(sd)) => p.starts_with(sd) && p != sd,
            _ => false,
        };
        let problems = wt_problems(layout.get(id), path.as_deref(), own, session_dir);
        out.insert(
            id.to_owned(),
            WorktreeBaseline {
                path,
                own,
                problems,
            },
        );
    }
    out
}

// ---------------------------------------------------------------------------------------
// pin

/// Summary of a pin.
#[derive(Debug, Clone)]
pub struct Pinned {
    pub state: State,
    pub path: PathBuf,
}

/// The protected set as [`pin`] records it, read now and not written anywhere: the one
/// source of both the state file and the sandbox plan (`crate::plan`), so the sandbox and the
/// checker cannot disagree on what is protected.
#[derive(Debug, Clone)]
pub struct Protected {
    pub loc: Located,
    pub session_dir: Option<PathBuf>,
    /// Protected entries by path relative to the common dir (absent ones included).
    pub entries: BTreeMap<String, Node>,
    /// Include targets of the repository's config files.
    pub includes: BTreeMap<PathBuf, Node>,
    pub worktrees: BTreeMap<String, WorktreeBaseline>,
}

/// Read the protected set of `opts.repo` (`opts.state` is not used). Fails closed: any
/// entry that cannot be read is an error naming it.
pub fn protected(opts: &Options) -> Result<Protected, IntegrityError> {
    if let Some(s) = &opts.session {
        if !crate::policy::valid_session_name(s) {
            return Err(IntegrityError::BadSession(s.clone()));
        }
    }
    let loc = locate(&opts.repo)?;
    let session_dir = session_dir(opts, &loc);
    let root = Dir::open_abs(&loc.common_dir)?;
    // The worktree entries are read first: the collector takes their admin-dir files from
    // this read instead of reading each again.
    let layout = layout_entries(&loc.common_dir);
    let snap = collect(
        &root,
        &loc.common_dir,
        None,
        layout.as_ref().unwrap_or(&BTreeMap::new()),
    );
    if let Some(p) = snap.problems.first() {
        return Err(IntegrityError::Unreadable {
            path: p.path.clone(),
            reason: p.reason.clone(),
        });
    }
    let layout = layout.map_err(|e| IntegrityError::Unreadable {
        path: e.path().to_path_buf(),
        reason: e.to_string(),
    })?;
    let worktrees = worktree_baselines(
        &loc.common_dir,
        &snap.entries,
        &layout,
        session_dir.as_deref(),
    );
    Ok(Protected {
        loc,
        session_dir,
        entries: snap.entries,
        includes: snap.includes,
        worktrees,
    })
}

/// Record the baseline and write the state file atomically. `refs` is the commit scan's ref
/// snapshot (serialised), taken by the caller.
pub fn pin(opts: &Options, refs: serde_json::Value) -> Result<Pinned, IntegrityError> {
    let Protected {
        loc,
        session_dir,
        entries,
        includes,
        worktrees,
    } = protected(opts)?;
    let wt_paths: Vec<PathBuf> = worktrees.values().filter_map(|w| w.path.clone()).collect();
    let state_path = check_state_location(&opts.state, &loc, &wt_paths, session_dir.as_deref())?;
    // An armed repository must not become the baseline unnoticed.
    let root = Dir::open_abs(&loc.common_dir)?;
    let found = armed_at_pin(&loc, &root, &entries)?;
    let blocking: Vec<String> = found
        .iter()
        .filter(|(_, _, blocks)| *blocks)
        .map(|(_, m, _)| m.clone())
        .collect();
    if !blocking.is_empty() && !opts.accept_armed {
        return Err(IntegrityError::Armed {
            repo: loc.repo.clone(),
            findings: blocking,
        });
    }
    let accepted: Vec<state::Accepted> = found.into_iter().map(|(a, _, _)| a).collect();
    let state = State {
        format: state::FORMAT,
        pinned_at: crate::events::rfc3339_now(),
        repo: loc.repo.clone(),
        git_dir: loc.git_dir.clone(),
        common_dir: loc.common_dir.clone(),
        work_tree: loc.work_tree.clone(),
        session: opts.session.clone(),
        session_dir,
        entries,
        includes,
        worktrees,
        refs,
        accepted,
    };
    write_state(&state_path, &state)?;
    Ok(Pinned {
        state,
        path: state_path,
    })
}

/// Everything armed in the repository at pin time, each with the record `check` compares
/// against, a one-line description, and whether it blocks the pin without `--accept-armed`:
/// `wt-check audit`'s findings of error level (and its `incomplete`: unknown is not clean),
/// and every in-progress operation that names a program, strategy, options or key. Findings
/// below error level are recorded without asking (a nested repository, an include outside
/// the repository), so `check` does not report them again.
fn armed_at_pin(
    loc: &Located,
    root: &Dir,
    entries: &BTreeMap<String, Node>,
) -> Result<Vec<(state::Accepted, String, bool)>, IntegrityError> {
    let mut out = Vec::new();
    let report = crate::audit::audit(std::slice::from_ref(&loc.repo));
    for f in report.findings {
        let blocks = f.level == crate::catalogue::Severity::Error;
        let line = format!("{} {}: {}", f.rule, f.name, f.message);
        out.push((
            state::Accepted {
                kind: "audit".into(),
                rule: f.rule.into(),
                path: f.path,
                key: f.message,
            },
            line,
            blocks,
        ));
    }
    let mut problems = Vec::new();
    let to_problem = |e: &NfError| Problem {
        path: e.path().to_path_buf(),
        reason: e.to_string(),
        link: e.is_link(),
    };
    let armed = in_progress(root, entries, &mut problems, &to_problem);
    if let Some(p) = problems.first() {
        return Err(IntegrityError::Unreadable {
            path: p.path.clone(),
            reason: p.reason.clone(),
        });
    }
    for (base, list) in armed {
        for a in list {
            let rel = if base.is_empty() {
                a.file.clone()
            } else {
                format!("{base}/{}", a.file)
            };
            let path = loc.common_dir.join(&rel);
            let line = format!("in-progress operation: {}: {}", path.display(), a.why);
            out.push((
                state::Accepted {
                    kind: "sequencer".into(),
                    rule: a.file.clone(),
                    path,
                    key: a.key(),
                },
                line,
                true,
            ));
        }
    }
    Ok(out)
}

fn session_dir(opts: &Options, loc: &Located) -> Option<PathBuf> {
    match (&opts.session_dir, &opts.session) {
        (Some(d), _) => Some(crate::policy::resolve(&absolute(d))),
        (None, Some(s)) => Some(crate::policy::resolve(&default_session_dir(loc, s))),
        (None, None) => None,
    }
}

fn write_state(path: &Path, state: &State) -> Result<(), IntegrityError> {
    let err =
        |e: &dyn std::fmt::Display| IntegrityError::StateWrite(path.to_path_buf(), e.to_string());
    let bytes = serde_json::to_vec_pretty(state).map_err(|e| err(&e))?;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(err(&"no parent folder"));
    };
    let dir = Dir::open_trusted(parent).map_err(|e| err(&e))?;
    dir.write_atomic(name, &bytes, 0o600).map_err(|e| err(&e))
}

/// Read and validate a state file.
pub fn read_state(path: &Path) -> Result<State, IntegrityError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(IntegrityError::StateLink(path.to_path_buf()));
    }
    let bytes =
        std::fs::read(path).map_err(|e| IntegrityError::StateRead(path.to_path_buf(), e))?;
    // One parse into the typed state; on failure, a second look tells a state file of
    // another format from a damaged one.
    match serde_json::from_slice::<State>(&bytes) {
        Ok(s) if state::FORMATS_READ.contains(&s.format) => Ok(s),
        Ok(s) => Err(IntegrityError::StateFormat(path.to_path_buf(), s.format)),
        Err(e) => {
            let f = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v.get("format").and_then(serde_json::Value::as_u64));
            match f {
                Some(f) if !state::FORMATS_READ.iter().any(|r| u64::from(*r) == f) => {
                    Err(IntegrityError::StateFormat(
                        path.to_path_buf(),
                        u32::try_from(f).unwrap_or(u32::MAX),
                    ))
                }
                _ => Err(IntegrityError::StateParse(path.to_path_buf(), e)),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// check

/// One difference between the baseline and now.
#[derive(Debug, Clone)]
struct Diff {
    key: Key,
    kind: EventKind,
    change: &'static str,
    before: Node,
    after: Option<Node>,
    /// Why (for layout findings).
    why: Option<String>,
    /// What restore does.
    plan: Plan,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Rel(String),
    Abs(PathBuf),
}

impl Key {
    fn path(&self, common_dir: &Path) -> PathBuf {
        match self {
            Key::Rel(r) => common_dir.join(r),
            Key::Abs(p) => p.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Plan {
    /// Put the baseline back (moving the agent's version aside first).
    Restore,
    /// Move the whole entry aside (a planted worktree entry, a new folder).
    Quarantine,
    /// Cannot be undone from here (e.g. a worktree's own `.git` file): reported.
    Report,
}

/// Compare the state file's baseline with the repository now; with `opts.restore`, put it
/// back. Every event goes to `emit` as it happens.
pub fn check(opts: &Options, state: &State, emit: &mut dyn FnMut(Event)) -> Outcome {
    let mut outcome = Outcome::Clean;
    let session = state.session.clone().or(opts.session.clone());
    let mk = |kind: EventKind, msg: String| {
        Event::new(Tool::WtCheck, kind, msg)
            .session(session.as_deref())
            .repo(&state.repo)
    };
    let common = &state.common_dir;
    let root = match Dir::open_abs(common) {
        Ok(r) => r,
        Err(e) => {
            let kind = if e.is_link() {
                EventKind::LinkRefused
            } else {
                EventKind::CheckIncomplete
            };
            emit(
                mk(kind, format!("cannot open the common dir: {e}"))
                    .path(e.path())
                    .with("action", "none"),
            );
            if kind == EventKind::LinkRefused {
                emit(
                    mk(
                        EventKind::CheckIncomplete,
                        "the common dir cannot be opened without following a link".into(),
                    )
                    .path(common),
                );
            }
            return Outcome::Incomplete;
        }
    };
    // The worktree entries first: the collector takes their admin-dir files from this read.
    let layout = layout_entries(common);
    let snap = collect(
        &root,
        common,
        Some(state),
        layout.as_ref().unwrap_or(&BTreeMap::new()),
    );
    for p in &snap.problems {
        outcome = Outcome::Incomplete;
        if p.link {
            emit(
                mk(
                    EventKind::LinkRefused,
                    format!(
                        "{}: a symbolic link where a folder was expected; not followed",
                        p.path.display()
                    ),
                )
                .path(&p.path)
                .with("action", if opts.restore { "restore" } else { "reported" }),
            );
        } else {
            emit(mk(EventKind::CheckIncomplete, p.reason.clone()).path(&p.path));
        }
    }
    let layout = match layout {
        Ok(l) => l,
        Err(e) => {
            outcome = Outcome::Incomplete;
            emit(
                mk(
                    EventKind::CheckIncomplete,
                    format!("cannot read the worktree entries: {e}"),
                )
                .path(e.path()),
            );
            BTreeMap::new()
        }
    };
    let mut diffs = compare(state, &snap, &layout, session.is_some());
    // In-progress operations that name a program: reported and set aside whole.
    let (armed, problems) = in_progress_diffs(state, &root, &snap.entries);
    diffs.extend(armed);
    for p in problems {
        outcome = Outcome::Incomplete;
        emit(mk(EventKind::CheckIncomplete, p.reason.clone()).path(&p.path));
    }
    // Index entries git's own verify_path refuses (written where the owner's checkout goes).
    let (bad, problems) = index_path_diffs(&root, &snap.entries);
    diffs.extend(bad);
    for p in problems {
        outcome = Outcome::Incomplete;
        emit(mk(EventKind::CheckIncomplete, p.reason.clone()).path(&p.path));
    }
    // Repositories behind the index's gitlinks (what the owner's `git status` enters).
    let indexes = index_work_trees(state, &snap.entries);
    let mut emb = embedded::armed(&indexes, common);
    // Every repository nested in the work trees the owner's git works in (untracked, in a
    // submodule's index, behind a gitlink only in the turn's commits, a session worktree's
    // `.git` file redirected): the same audit, over a bounded walk.
    let mut roots: Vec<PathBuf> = state.work_tree.iter().cloned().collect();
    match &state.session_dir {
        Some(sd) if state.session.is_some() => roots.push(sd.clone()),
        _ => roots.extend(
            indexes
                .iter()
                .filter(|(i, _)| *i != common.join("index"))
                .map(|(_, wt)| wt.clone()),
        ),
    }
    let more = embedded::nested(&roots, state.work_tree.as_deref(), common);
    emb.problems.extend(more.problems);
    for f in more.findings {
        if !emb
            .findings
            .iter()
            .any(|e| e.rule == f.rule && e.path == f.path && e.message == f.message)
        {
            emb.findings.push(f);
        }
    }
    for (path, why) in &emb.problems {
        outcome = Outcome::Incomplete;
        emit(
            mk(
                EventKind::CheckIncomplete,
                format!("{}: {why}", path.display()),
            )
            .path(path),
        );
    }
    for f in &emb.findings {
        if accepted(state, "audit", f.rule, &f.path, &f.message) {
            continue;
        }
        if outcome == Outcome::Clean {
            outcome = Outcome::Found;
        }
        emit(
            mk(EventKind::EmbeddedRepositoryArmed, f.message.clone())
                .path(&f.path)
                .with("rule", f.rule)
                .with("level", format!("{:?}", f.level).to_ascii_lowercase())
                .with("action", "reported"),
        );
    }
    let suppressed = suppressed_keys(&diffs);
    let mut q = Quarantine::new(&opts.state);
    for d in &diffs {
        if outcome == Outcome::Clean {
            outcome = Outcome::Found;
        }
        if outcome == Outcome::Incomplete && d.change == "unreadable" {
            continue;
        }
        let path = d.key.path(common);
        let action = if !opts.restore {
            "reported"
        } else {
            match d.plan {
                Plan::Restore if matches!(d.before, Node::Absent) => "quarantined",
                Plan::Restore => "restored",
                Plan::Quarantine => "quarantined",
                Plan::Report => "reported",
            }
        };
        let mut ev_kind = d.kind;
        if matches!(d.after, Some(Node::Link { .. })) {
            ev_kind = EventKind::LinkRefused;
        }
        let mut msg = format!(
            "{}: {} ({} → {})",
            path.display(),
            d.change,
            d.before.kind_name(),
            d.after.as_ref().map_or("unreadable", Node::kind_name)
        );
        if let Some(w) = &d.why {
            msg = format!("{}: {w}", path.display());
        }
        let mut ev = mk(ev_kind, msg)
            .path(&path)
            .with("change", d.change)
            .with("before", d.before.kind_name())
            .with(
                "after",
                d.after.as_ref().map_or("unreadable", Node::kind_name),
            )
            .with("action", action);
        if let Some(w) = &d.why {
            ev = ev.with("why", w.clone());
        }
        if let (Some(Node::File { oid, .. }), Node::File { oid: b, .. }) = (&d.after, &d.before) {
            ev = ev
                .with("oid_before", b.clone())
                .with("oid_after", oid.clone());
        }
        if suppressed.contains(&d.key) {
            // Implied by a parent's finding; still restored below.
        } else {
            emit(ev);
        }
    }
    if opts.restore {
        let quarantined: Vec<&Key> = diffs
            .iter()
            .filter(|d| d.plan == Plan::Quarantine)
            .map(|d| &d.key)
            .collect();
        for d in &diffs {
            if d.plan == Plan::Report {
                continue;
            }
            let inside_quarantined = quarantined.iter().any(|q| match (q, &d.key) {
                (Key::Rel(q), Key::Rel(k)) => {
                    k.starts_with(q.as_str()) && k.as_bytes().get(q.len()) == Some(&b'/')
                }
                _ => false,
            });
            if inside_quarantined {
                continue; // moved aside with its folder
            }
            if let Err(e) = restore_one(state, &root, d, &mut q, &mk, emit) {
                outcome = Outcome::Incomplete;
                let kind = if e.is_link() {
                    EventKind::LinkRefused
                } else {
                    EventKind::RestoreFailed
                };
                emit(
                    mk(
                        kind,
                        format!("restore of {} failed: {e}", d.key.path(common).display()),
                    )
                    .path(d.key.path(common))
                    .with("action", "none"),
                );
            }
        }
        // A linked worktree's `.git` file that names another git dir (one the agent made):
        // git's own layout back, the agent's file kept aside.
        for (index, wt) in &indexes {
            if *index == common.join("index") {
                continue;
            }
            let Some(entry) = index.parent() else {
                continue;
            };
            // Only a worktree the baseline knows at that path, or one in the session's own
            // folder: the entry's `gitdir` is the agent's to write and could name any folder.
            let id = entry
                .file_name()
                .and_then(OsStr::to_str)
                .unwrap_or_default();
            let known = state
                .worktrees
                .get(id)
                .and_then(|b| b.path.as_ref())
                .is_some_and(|p| p == wt);
            let in_session = state
                .session_dir
                .as_ref()
                .is_some_and(|sd| wt.starts_with(sd) && wt != sd);
            if !(known || in_session) || state.work_tree.as_ref() == Some(wt) {
                continue;
            }
            if let Err(e) = restore_gitfile(wt, entry, &mut q, &mk, emit) {
                outcome = Outcome::Incomplete;
                emit(
                    mk(
                        EventKind::RestoreFailed,
                        format!("restore of {}/.git failed: {e}", wt.display()),
                    )
                    .path(wt.join(".git"))
                    .with("action", "none"),
                );
            }
        }
    }
    outcome
}

/// Rewrite the `.git` of the linked worktree `wt` to name its entry `entry` (what `git
/// worktree add` wrote) when it names anything else or is not a file; what was there goes to
/// the quarantine. A worktree folder that is gone is left alone (git's "prunable").
fn restore_gitfile(
    wt: &Path,
    entry: &Path,
    q: &mut Quarantine,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Result<(), NfError> {
    let dir = match Dir::open_abs(wt) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    let name = OsStr::new(".git");
    let path = wt.join(".git");
    let st = dir.stat(name)?;
    if let Some(st) = &st {
        if st.kind == Kind::File {
            let (bytes, _) = dir.read(name, 1 << 20)?;
            let text = String::from_utf8_lossy(&bytes);
            if let Some(t) = text.strip_prefix("gitdir: ") {
                let t = Path::new(t.trim_end_matches(['\n', '\r']));
                if normalize(&wt.join(t)) == normalize(entry) {
                    return Ok(());
                }
            }
        }
        let (qdir, qname, dest) = q.slot(&Key::Abs(path.clone()))?;
        dir.move_out(name, &qdir, &qname)?;
        emit(
            mk(
                EventKind::Quarantined,
                format!("{} moved to {}", path.display(), dest.display()),
            )
            .path(&path)
            .with("quarantine", dest.display().to_string())
            .with("was", st.kind.name()),
        );
    }
    dir.write_atomic(
        name,
        format!("gitdir: {}\n", entry.display()).as_bytes(),
        0o644,
    )?;
    emit(
        mk(
            EventKind::WorktreeEntryRestored,
            format!("{} rewritten to name its worktree entry", path.display()),
        )
        .path(&path),
    );
    Ok(())
}

/// Was this finding present at pin time and recorded as accepted (`pin --accept-armed`,
/// or a finding below error level, which pin records without asking)?
fn accepted(state: &State, kind: &str, rule: &str, path: &Path, key: &str) -> bool {
    state
        .accepted
        .iter()
        .any(|a| a.kind == kind && a.rule == rule && a.path == path && a.key == key)
}

/// The git dirs of a snapshot, as keys relative to the common dir: `""` (the common dir),
/// every `worktrees/<id>`, every submodule git dir (a folder below a `modules` folder that
/// holds `HEAD` or `config`).
fn git_dir_bases(entries: &BTreeMap<String, Node>) -> BTreeSet<String> {
    let mut out = BTreeSet::from([String::new()]);
    for (k, n) in entries {
        if let Some(id) = k.strip_prefix("worktrees/") {
            if !id.contains('/') && n.is_dir() {
                out.insert(k.clone());
            }
        }
        let (parent, name) = split(k);
        let in_modules = parent.starts_with("modules/") || parent.contains("/modules/");
        if in_modules
            && (name == "HEAD" || name == "config")
            && !matches!(n, Node::Absent)
            && entries.get(parent).is_some_and(Node::is_dir)
        {
            out.insert(parent.to_owned());
        }
    }
    out
}

/// The in-progress operations of every git dir that name a program, strategy, options or
/// signing key (`inprogress::judge`), not accepted at pin time: one finding each, the
/// operation's folder set aside whole on restore. The owner's git then sees no operation in
/// progress; the agent's state stays in the quarantine.
fn in_progress_diffs(
    state: &State,
    root: &Dir,
    entries: &BTreeMap<String, Node>,
) -> (Vec<Diff>, Vec<Problem>) {
    let mut diffs = Vec::new();
    let mut problems = Vec::new();
    let to_problem = |e: &NfError| Problem {
        path: e.path().to_path_buf(),
        reason: e.to_string(),
        link: e.is_link(),
    };
    for (base, armed) in in_progress(root, entries, &mut problems, &to_problem) {
        for a in armed {
            let j = |n: &str| {
                if base.is_empty() {
                    n.to_owned()
                } else {
                    format!("{base}/{n}")
                }
            };
            let file = state.common_dir.join(j(&a.file));
            if accepted(state, "sequencer", a.file.as_str(), &file, &a.key()) {
                continue;
            }
            let op = j(a.op_dir);
            let after = root
                .walk(Path::new(if base.is_empty() { "" } else { base.as_str() }))
                .and_then(|d| read_node(&d, OsStr::new(a.op_dir)))
                .ok();
            // The message starts with the operation's folder; name the file inside it.
            let inside = a
                .file
                .strip_prefix(a.op_dir)
                .map(|r| r.trim_start_matches('/'))
                .unwrap_or(&a.file);
            let why = match (inside.is_empty(), a.line) {
                (true, _) => a.why.clone(),
                (false, Some(l)) => format!("{inside}:{l}: {}", a.why),
                (false, None) => format!("{inside}: {}", a.why),
            };
            diffs.push(Diff {
                key: Key::Rel(op),
                kind: EventKind::SequencerStateArmed,
                change: "armed",
                before: Node::Absent,
                after,
                why: Some(why),
                plan: Plan::Quarantine,
            });
        }
    }
    (diffs, problems)
}

/// The index of every git dir of the snapshot (common dir, each `worktrees/<id>`, each
/// submodule git dir) whose entries include a path git's `verify_path` refuses
/// ([`crate::index_paths`]): one finding per index, the index set aside whole on restore (the
/// owner's git then has no index there: `git status` shows every file as deleted and
/// untracked until `git reset` rebuilds it from `HEAD`; nothing is lost, the work tree is
/// untouched and the agent's index is kept in the quarantine).
fn index_path_diffs(root: &Dir, entries: &BTreeMap<String, Node>) -> (Vec<Diff>, Vec<Problem>) {
    const SHOWN: usize = 3;
    let mut diffs = Vec::new();
    let mut problems = Vec::new();
    for base in git_dir_bases(entries) {
        let dir = match root.walk(Path::new(if base.is_empty() { "" } else { base.as_str() })) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                problems.push(Problem {
                    path: e.path().to_path_buf(),
                    reason: e.to_string(),
                    link: e.is_link(),
                });
                continue;
            }
        };
        let name = OsStr::new("index");
        let bytes = match dir.stat(name).and_then(|st| match st {
            None => Ok(None),
            Some(_) => dir.read_bytes(name, embedded::INDEX_LIMIT).map(Some),
        }) {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                problems.push(Problem {
                    path: e.path().to_path_buf(),
                    reason: e.to_string(),
                    link: e.is_link(),
                });
                continue;
            }
        };
        let rel = if base.is_empty() {
            "index".to_owned()
        } else {
            format!("{base}/index")
        };
        let bad = match crate::index_paths::bad_entries(&dir.path().join(name), &bytes) {
            Ok(b) => b,
            Err(why) => {
                problems.push(Problem {
                    path: dir.path().join(name),
                    reason: format!("{}: {why}", dir.path().join(name).display()),
                    link: false,
                });
                continue;
            }
        };
        if bad.is_empty() {
            continue;
        }
        let mut why: Vec<String> = bad
            .iter()
            .take(SHOWN)
            .map(|b| {
                format!(
                    "entry {:?}: {}",
                    String::from_utf8_lossy(&b.path),
                    b.invalid.why()
                )
            })
            .collect();
        if bad.len() > SHOWN {
            why.push(format!("{} more", bad.len() - SHOWN));
        }
        diffs.push(Diff {
            key: Key::Rel(rel),
            kind: EventKind::IndexEntryInvalid,
            change: "invalid-path",
            before: Node::Absent,
            after: read_node(&dir, name).ok(),
            why: Some(why.join("; ")),
            plan: Plan::Quarantine,
        });
    }
    (diffs, problems)
}

/// `inprogress::judge` over every git dir of the snapshot: `(base, findings)`.
fn in_progress(
    root: &Dir,
    entries: &BTreeMap<String, Node>,
    problems: &mut Vec<Problem>,
    to_problem: &dyn Fn(&NfError) -> Problem,
) -> Vec<(String, Vec<inprogress::Armed>)> {
    let mut out = Vec::new();
    for base in git_dir_bases(entries) {
        let dir = match root.walk(Path::new(&base)) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                problems.push(to_problem(&e));
                continue;
            }
        };
        let (armed, errors) = inprogress::judge(&dir);
        problems.extend(errors.iter().map(to_problem));
        if !armed.is_empty() {
            out.push((base, armed));
        }
    }
    out
}

/// Every index the agent can stage into, with the work tree it stages: the main work tree's
/// (`<common>/index`) and each linked worktree's (`worktrees/<id>/index`, its work tree as
/// the entry's `gitdir` names it) — with a session, only the session's own worktrees (another
/// session's work tree is not this agent's to write; its own check reads it).
fn index_work_trees(state: &State, entries: &BTreeMap<String, Node>) -> Vec<(PathBuf, PathBuf)> {
    let common = &state.common_dir;
    let mut out = Vec::new();
    if let Some(wt) = &state.work_tree {
        out.push((common.join("index"), wt.clone()));
    }
    for (k, n) in entries {
        let Some(id) = k.strip_prefix("worktrees/") else {
            continue;
        };
        if id.contains('/') || !n.is_dir() {
            continue;
        }
        if let Some(p) = gitdir_path(common, id, entries.get(&format!("{k}/gitdir"))) {
            let own = match (&state.session_dir, state.worktrees.get(id)) {
                (None, _) => true,
                (Some(_), Some(b)) => b.own,
                (Some(sd), None) => p.starts_with(sd) && &p != sd,
            };
            if own || state.session.is_none() {
                out.push((common.join(k).join("index"), p));
            }
        }
    }
    out
}

/// Keys whose finding is implied by an ancestor's (a folder turned into a link or file, or a
/// new folder moved aside as a whole).
fn suppressed_keys(diffs: &[Diff]) -> BTreeSet<Key> {
    let mut out = BTreeSet::new();
    for d in diffs {
        let Key::Rel(k) = &d.key else { continue };
        let parent_covers = diffs.iter().any(|p| {
            let Key::Rel(pk) = &p.key else { return false };
            k.starts_with(pk.as_str())
                && k.as_bytes().get(pk.len()) == Some(&b'/')
                && (!matches!(p.after, Some(Node::Dir { .. })) || p.plan == Plan::Quarantine)
        });
        if parent_covers {
            out.insert(d.key.clone());
        }
    }
    out
}

fn event_kinds(rel: &str, change: &str) -> EventKind {
    let name = split(rel).1;
    if rel.starts_with("worktrees/") {
        return if name == "config.worktree" {
            EventKind::ConfigChanged
        } else {
            EventKind::WorktreeEntryChanged
        };
    }
    if (rel == "hooks"
        || rel.starts_with("hooks/")
        || rel.contains("/hooks/")
        || rel.ends_with("/hooks"))
        && change != "removed"
    {
        return EventKind::HookPlanted;
    }
    if name == "config" || name == "config.worktree" {
        return EventKind::ConfigChanged;
    }
    EventKind::GitDirEntryChanged
}

fn same(rel: &str, a: &Node, b: &Node) -> bool {
    if is_head_key(rel) && head_node_valid(a) && head_node_valid(b) {
        return true;
    }
    match (a, b) {
        (Node::Dir { .. }, Node::Dir { .. }) => true,
        (
            Node::File {
                mode: m1, oid: o1, ..
            },
            Node::File {
                mode: m2, oid: o2, ..
            },
        ) => o1 == o2 && (m1 & 0o777) == (m2 & 0o777),
        _ => a == b,
    }
}

fn change_word(before: &Node, after: &Node) -> &'static str {
    match (before, after) {
        (Node::Absent, _) => "created",
        (_, Node::Absent) => "removed",
        (Node::File { oid: a, .. }, Node::File { oid: b, .. }) if a == b => "mode_changed",
        (Node::File { .. }, Node::File { .. }) => "content_changed",
        (Node::File { .. }, Node::Dir { .. })
        | (Node::Dir { .. }, _)
        | (_, Node::Link { .. })
        | (_, Node::Special { .. })
        | (Node::Link { .. }, _)
        | (Node::Special { .. }, _) => "type_changed",
    }
}

/// The keys of two sorted maps in order, each once, with its node in each (a merge join).
fn merged<'a>(
    a: &'a BTreeMap<String, Node>,
    b: &'a BTreeMap<String, Node>,
) -> Vec<(&'a String, Option<&'a Node>, Option<&'a Node>)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut ia, mut ib) = (a.iter().peekable(), b.iter().peekable());
    loop {
        let step = match (ia.peek(), ib.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
        };
        match step {
            std::cmp::Ordering::Less => {
                let (k, n) = ia.next().expect("peeked");
                out.push((k, Some(n), None));
            }
            std::cmp::Ordering::Greater => {
                let (k, n) = ib.next().expect("peeked");
                out.push((k, None, Some(n)));
            }
            std::cmp::Ordering::Equal => {
                let (k, n) = ia.next().expect("peeked");
                let (_, m) = ib.next().expect("peeked");
                out.push((k, Some(n), Some(m)));
            }
        }
    }
    out
}

/// The id of the worktree entry a key belongs to.
fn worktree_id(rel: &str) -> Option<&str> {
    rel.strip_prefix("worktrees/")
        .map(|r| r.split('/').next().unwrap_or(r))
}

fn compare(
    state: &State,
    snap: &Snapshot,
    layout: &BTreeMap<String, WorktreeEntry>,
    has_session: bool,
) -> Vec<Diff> {
    let common = &state.common_dir;
    let sd = state.session_dir.as_deref();
    let now_wt = worktree_baselines(common, &snap.entries, layout, sd);
    let mut diffs = Vec::new();
    // Which current entries are the session's own: in the baseline, by the baseline's
    // record; new ones, by where their gitdir points now.
    let own = |id: &str| -> bool {
        match state.worktrees.get(id) {
            Some(b) => b.own,
            None => has_session && now_wt.get(id).is_some_and(|w| w.own),
        }
    };
    let absent = Node::Absent;
    // Every key of the baseline and of now, in order: one merge of the two sorted maps.
    for (k, before, now) in merged(&state.entries, &snap.entries) {
        if git_written_unreported(k) {
            continue; // recorded by an older pin; git writes it on its own
        }
        let before: &Node = before.unwrap_or(&absent);
        // Not recorded now: removed when its folder was listed, else hidden (a parent is not
        // a folder, or could not be read).
        let after: Option<&Node> = now.or_else(|| {
            let parent = split(k).0;
            let parent_listed =
                parent.is_empty() || matches!(snap.entries.get(parent), Some(Node::Dir { .. }));
            parent_listed.then_some(&absent)
        });
        let own_skip = worktree_id(k).is_some_and(|id| {
            own(id) && !k.ends_with("/config.worktree") && {
                let rest = &k[("worktrees/".len() + id.len())..];
                let name = rest.trim_start_matches('/');
                let top = name.split('/').next().unwrap_or("");
                name.is_empty() || WORKTREE_FILES.contains(&top) || is_worktree_state_name(top)
            }
        });
        if own_skip {
            // The session's own entry: its files may change; its layout is checked below.
            // Extra names (hooks/, config) are still planted.
            continue;
        }
        let Some(after_n) = after else {
            if matches!(before, Node::Absent) {
                continue; // nothing was there; the parent's own difference says it all
            }
            diffs.push(Diff {
                key: Key::Rel(k.clone()),
                kind: event_kinds(k, "unreadable"),
                change: "unreadable",
                before: before.clone(),
                after: None,
                why: None,
                plan: Plan::Restore,
            });
            continue;
        };
        if let Some(id) = worktree_id(k) {
            // `worktrees/<id>` itself (not a file below it).
            let is_entry = k.len() == "worktrees/".len() + id.len();
            if is_entry && !state.worktrees.contains_key(id) {
                if own(id) {
                    continue;
                }
                if !same(k, before, after_n) {
                    diffs.push(Diff {
                        key: Key::Rel(k.clone()),
                        kind: EventKind::WorktreeEntryPlanted,
                        change: "created",
                        before: before.clone(),
                        after: Some(after_n.clone()),
                        why: Some(format!(
                            "new worktree entry `{id}` that is not the session's (its gitdir names {})",
                            now_wt.get(id).and_then(|w| w.path.as_ref()).map_or("nothing".into(), |p| p.display().to_string())
                        )),
                        plan: Plan::Quarantine,
                    });
                }
                continue;
            }
        }
        if (k == "worktrees" || k == "modules")
            && matches!(before, Node::Absent)
            && after_n.is_dir()
        {
            continue;
        }
        if same(k, before, after_n) || tracking_only_change(k, before, after_n) {
            continue;
        }
        let created_dir = matches!(before, Node::Absent) && after_n.is_dir();
        diffs.push(Diff {
            key: Key::Rel(k.clone()),
            kind: event_kinds(k, change_word(before, after_n)),
            change: change_word(before, after_n),
            before: before.clone(),
            after: Some(after_n.clone()),
            why: None,
            plan: if created_dir {
                Plan::Quarantine
            } else {
                Plan::Restore
            },
        });
    }
    // Layout of every worktree entry now: problems that were not there at pin time.
    for id in now_wt.keys() {
        let w_problems = wt_problems(
            layout.get(id),
            now_wt.get(id).and_then(|w| w.path.as_deref()),
            own(id),
            sd,
        );
        let was: &[String] = state
            .worktrees
            .get(id)
            .map_or(&[], |b| b.problems.as_slice());
        let is_own = own(id);
        let new_problems: Vec<&String> = w_problems.iter().filter(|p| !was.contains(p)).collect();
        if new_problems.is_empty() {
            continue;
        }
        if !is_own && !state.worktrees.contains_key(id) {
            continue; // already a planted entry
        }
        let rel = format!("worktrees/{id}");
        // Another session's entry: its files are restored from the baseline (diffs above);
        // the layout finding says why. A new own entry that breaks git's layout is moved
        // aside whole; a baseline own entry gets its protected files back.
        let restorable_by_files = state.worktrees.contains_key(id) && !is_own;
        let plan = if restorable_by_files {
            Plan::Report
        } else if !state.worktrees.contains_key(id) {
            Plan::Quarantine
        } else {
            // Own baseline entry: gitdir/commondir/HEAD back from the baseline.
            Plan::Report
        };
        for p in new_problems {
            diffs.push(Diff {
                key: Key::Rel(rel.clone()),
                kind: EventKind::WorktreeEntryChanged,
                change: "layout",
                before: state.entries.get(&rel).cloned().unwrap_or(Node::Absent),
                after: snap.entries.get(&rel).cloned(),
                why: Some(p.clone()),
                plan: plan.clone(),
            });
        }
        if is_own && state.worktrees.contains_key(id) {
            // Restore the files that define the linkage from the baseline.
            for f in ["gitdir", "commondir", "HEAD"] {
                let k = format!("{rel}/{f}");
                let (Some(b), Some(a)) = (state.entries.get(&k), snap.entries.get(&k)) else {
                    continue;
                };
                if !same(&k, b, a) {
                    diffs.push(Diff {
                        key: Key::Rel(k),
                        kind: EventKind::WorktreeEntryChanged,
                        change: change_word(b, a),
                        before: b.clone(),
                        after: Some(a.clone()),
                        why: Some("the session's entry no longer matches git's layout".into()),
                        plan: Plan::Restore,
                    });
                }
            }
        }
    }
    // Includes.
    let inc_keys: BTreeSet<&PathBuf> = state.includes.keys().chain(snap.includes.keys()).collect();
    for p in inc_keys {
        let before = state.includes.get(p).cloned().unwrap_or(Node::Absent);
        let Some(after) = snap.includes.get(p) else {
            continue;
        };
        if same("", &before, after) {
            continue;
        }
        // A target that no baseline config named is reported, not moved: the config change
        // that names it is restored, and the file may be the agent's own work.
        let plan = if state.includes.contains_key(p) {
            Plan::Restore
        } else {
            Plan::Report
        };
        diffs.push(Diff {
            key: Key::Abs(p.clone()),
            kind: EventKind::IncludeTargetChanged,
            change: change_word(&before, after),
            before,
            after: Some(after.clone()),
            why: None,
            plan,
        });
    }
    diffs.sort_by(|a, b| a.key.cmp(&b.key));
    diffs
}

// ---------------------------------------------------------------------------------------
// restore

/// The quarantine folder of one run: `<state>.quarantine/<time>-<pid>/`.
struct Quarantine {
    base: PathBuf,
    root: Option<Dir>,
    n: usize,
}

impl Quarantine {
    fn new(state: &Path) -> Quarantine {
        let mut name = state.file_name().unwrap_or_default().to_os_string();
        name.push(".quarantine");
        let stamp = crate::events::rfc3339_now().replace(':', "");
        Quarantine {
            base: state
                .with_file_name(name)
                .join(format!("{stamp}-{}", std::process::id())),
            root: None,
            n: 0,
        }
    }

    /// Where `key`'s current version goes: `<base>/git-dir/<rel>` (or `include/<abs>`),
    /// folders made and opened **without following links** — what was moved in earlier in
    /// this run is the agent's, and may be a link (a `worktrees/<id>` swapped for a link to
    /// anywhere). When that path is taken or blocked, a flat unique name is used instead:
    /// `<base>/<n>-<rel with / as %>`. The base itself is the owner's (next to the state file).
    fn slot(&mut self, key: &Key) -> Result<(Dir, OsString, PathBuf), NfError> {
        if self.root.is_none() {
            std::fs::create_dir_all(&self.base).map_err(|e| NfError::Io {
                path: self.base.clone(),
                op: "mkdir",
                source: e,
            })?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.base, std::fs::Permissions::from_mode(0o700));
            self.root = Some(Dir::open_trusted(&self.base)?);
        }
        let root = self.root.as_ref().expect("opened above");
        let rel = match key {
            Key::Rel(r) => Path::new("git-dir").join(r),
            Key::Abs(p) => Path::new("include").join(p.strip_prefix("/").unwrap_or(p)),
        };
        let (Some(parent_rel), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(NfError::Escape { path: rel.clone() });
        };
        let nested = root
            .mkdir(parent_rel.as_os_str(), 0o700)
            .and_then(|()| root.walk(parent_rel))
            .and_then(|d| d.stat(name).map(|st| (d, st)));
        if let Ok((d, None)) = nested {
            return Ok((d, name.to_os_string(), self.base.join(&rel)));
        }
        // Taken, or blocked by something moved in earlier (possibly a link): a flat name.
        self.n += 1;
        let flat: OsString =
            format!("{}-{}", self.n, rel.to_string_lossy().replace('/', "%")).into();
        let dest = self.base.join(&flat);
        Ok((root.walk(Path::new(""))?, flat, dest))
    }
}

fn restore_one(
    state: &State,
    root: &Dir,
    d: &Diff,
    q: &mut Quarantine,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Result<(), NfError> {
    let common = &state.common_dir;
    // The folder holding the entry, opened without following links, and the entry's name.
    let (parent, name): (Dir, &OsStr) = match &d.key {
        Key::Rel(r) => {
            let (p, n) = split(r);
            match root.walk(Path::new(p)) {
                Ok(dir) => (dir, OsStr::new(n)),
                // A parent that is gone was moved aside with its parent, or will be recreated
                // by the parent's own restore, which sorts first.
                Err(e)
                    if e.is_not_found()
                        && (d.plan == Plan::Quarantine || matches!(d.before, Node::Absent)) =>
                {
                    return Ok(())
                }
                Err(e) => return Err(e),
            }
        }
        Key::Abs(p) => {
            let (Some(pp), Some(n)) = (p.parent(), p.file_name()) else {
                return Err(NfError::Escape { path: p.clone() });
            };
            (Dir::open_abs(pp)?, n)
        }
    };
    let path = d.key.path(common);
    let now = read_node(&parent, name).or_else(|e| match e {
        // A fifo or oversized file is still "something there" to move aside.
        NfError::NotRegular { .. } | NfError::TooLarge { .. } => {
            Ok(Node::Special { kind: Kind::Fifo })
        }
        e => Err(e),
    })?;
    let restored_kind = match &d.key {
        Key::Rel(r) if r.starts_with("worktrees/") => EventKind::WorktreeEntryRestored,
        _ => EventKind::GitDirEntryRestored,
    };
    let rel_str = match &d.key {
        Key::Rel(r) => r.clone(),
        Key::Abs(_) => String::new(),
    };
    if d.plan == Plan::Restore && same(&rel_str, &d.before, &now) {
        return Ok(());
    }
    // 1. The agent's version goes aside (a folder that should be a folder stays).
    let keep_dir = matches!((&d.before, &now), (Node::Dir { .. }, Node::Dir { .. }))
        && d.plan == Plan::Restore;
    if !matches!(now, Node::Absent) && !keep_dir {
        let (qdir, qname, dest) = q.slot(&d.key)?;
        parent.move_out(name, &qdir, &qname)?;
        emit(
            mk(
                EventKind::Quarantined,
                format!("{} moved to {}", path.display(), dest.display()),
            )
            .path(&path)
            .with("quarantine", dest.display().to_string())
            .with("was", now.kind_name()),
        );
    }
    if d.plan == Plan::Quarantine {
        return Ok(());
    }
    // 2. The baseline back.
    match &d.before {
        Node::Absent => return Ok(()),
        Node::File { mode, content, oid } => {
            let bytes = content.bytes().ok_or_else(|| NfError::Io {
                path: path.clone(),
                op: "restore",
                source: std::io::Error::other("state file content is damaged"),
            })?;
            parent.write_atomic(name, &bytes, *mode)?;
            emit(
                mk(
                    restored_kind,
                    format!("{} rewritten from the baseline", path.display()),
                )
                .path(&path)
                .with("oid", oid.clone()),
            );
        }
        Node::Dir { mode } => {
            if !keep_dir {
                parent.mkdir(name, *mode)?;
                emit(
                    mk(
                        restored_kind,
                        format!("{} recreated as a folder", path.display()),
                    )
                    .path(&path),
                );
            }
        }
        Node::Link { target } => {
            parent.symlink(target, name)?;
            emit(
                mk(
                    restored_kind,
                    format!("{} recreated as a link to {target}", path.display()),
                )
                .path(&path),
            );
        }
        Node::Special { kind } => {
            return Err(NfError::Io {
                path: path.clone(),
                op: "restore",
                source: std::io::Error::other(format!(
                    "baseline was a {}; not recreated",
                    kind.name()
                )),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A common dir with worktree entries in every shape the collector must record: an
    /// honest entry, one whose files are a link, a fifo, a folder and a file of another mode,
    /// one with names git does not keep there (a hooks folder, a name that is not UTF-8),
    /// an entry that is a link and one that is a file.
    fn odd_common_dir() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let common = base.join("proj/.git");
        let wts = common.join("worktrees");
        for id in ["honest", "odd", "extra"] {
            let a = wts.join(id);
            std::fs::create_dir_all(&a).unwrap();
            std::fs::create_dir_all(base.join(id)).unwrap();
            std::fs::write(a.join("gitdir"), format!("{}/{id}/.git\n", base.display())).unwrap();
            std::fs::write(a.join("commondir"), "../..\n").unwrap();
            std::fs::write(a.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(
                base.join(id).join(".git"),
                format!("gitdir: {}\n", a.display()),
            )
            .unwrap();
        }
        let odd = wts.join("odd");
        std::fs::remove_file(odd.join("HEAD")).unwrap();
        symlink("refs/heads/main", odd.join("HEAD")).unwrap();
        std::fs::remove_file(odd.join("commondir")).unwrap();
        std::fs::create_dir(odd.join("commondir")).unwrap();
        nix::unistd::mkfifo(
            &odd.join("locked"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        std::fs::set_permissions(odd.join("gitdir"), std::fs::Permissions::from_mode(0o751))
            .unwrap();
        std::fs::write(odd.join("config.worktree"), [0xffu8, 0, 1]).unwrap();
        let extra = wts.join("extra");
        std::fs::create_dir(extra.join("hooks")).unwrap();
        std::fs::write(extra.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::write(extra.join("index"), "not compared").unwrap();
        use std::os::unix::ffi::OsStrExt;
        std::fs::write(extra.join(OsStr::from_bytes(b"bad\xffname")), "x").unwrap();
        symlink(base.join("honest"), wts.join("linked")).unwrap();
        std::fs::write(wts.join("plain"), "a file").unwrap();
        (t, common)
    }

    #[test]
    fn worktree_files_taken_from_the_layout_read_equal_a_second_read() {
        let (_t, common) = odd_common_dir();
        let root = Dir::open_abs(&common).unwrap();
        let layout = layout_entries(&common).unwrap();
        // The layout read holds the files' bytes (read once) …
        let odd = &layout["odd"];
        let gitdir = odd.files.iter().find(|f| f.name == "gitdir").unwrap();
        assert!(gitdir.bytes.is_some());
        assert!(matches!(
            gitdir.file_type,
            FileType::File { mode: 0o751, .. }
        ));
        // … and the snapshot built from it is the one the collector reads itself.
        let shared = collect(&root, &common, None, &layout);
        let own = collect(&root, &common, None, &BTreeMap::new());
        assert_eq!(shared.entries, own.entries);
        assert_eq!(shared.problems.len(), own.problems.len());
        let e = &shared.entries;
        assert!(
            matches!(&e["worktrees/odd/HEAD"], Node::Link { target } if target == "refs/heads/main")
        );
        assert!(matches!(e["worktrees/odd/commondir"], Node::Dir { .. }));
        assert!(matches!(
            e["worktrees/odd/locked"],
            Node::Special { kind: Kind::Fifo }
        ));
        assert!(matches!(
            e["worktrees/odd/gitdir"],
            Node::File { mode: 0o751, .. }
        ));
        assert!(matches!(
            &e["worktrees/odd/config.worktree"],
            Node::File {
                content: Content::Hex(_),
                ..
            }
        ));
        assert!(matches!(e["worktrees/honest/locked"], Node::Absent));
        assert!(matches!(
            e["worktrees/extra/hooks/post-checkout"],
            Node::File { .. }
        ));
        assert!(!e.contains_key("worktrees/extra/index"));
        assert!(matches!(e["worktrees/linked"], Node::Link { .. }));
        assert!(matches!(e["worktrees/plain"], Node::File { .. }));
        assert!(!e.keys().any(|k| k.contains("bad")));
    }

    #[test]
    fn a_file_the_layout_could_not_hold_is_read_by_the_collector() {
        // A layout record without bytes (as for a file too large for it) is read again by
        // the collector, not taken as absent or empty.
        let (_t, common) = odd_common_dir();
        let root = Dir::open_abs(&common).unwrap();
        let mut layout = layout_entries(&common).unwrap();
        for f in &mut layout.get_mut("honest").unwrap().files {
            f.bytes = None;
        }
        let shared = collect(&root, &common, None, &layout);
        let own = collect(&root, &common, None, &BTreeMap::new());
        assert_eq!(shared.entries, own.entries);
        assert!(matches!(
            &shared.entries["worktrees/honest/commondir"],
            Node::File { content: Content::Text(t), .. } if t == "../..\n"
        ));
    }

    #[test]
    fn a_file_hint_from_the_listing_gives_the_lstat_verdict_when_it_is_stale() {
        // An entry listed as a regular file that is now a fifo, a link, a folder or gone is
        // recorded as what it is now (the fifo neither blocks nor is read).
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::write(base.join("f"), "x").unwrap();
        nix::unistd::mkfifo(
            &base.join("p"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        symlink("/etc/passwd", base.join("l")).unwrap();
        std::fs::create_dir(base.join("d")).unwrap();
        let dir = Dir::open_abs(&base).unwrap();
        for name in ["f", "p", "l", "d", "missing"] {
            let n = OsStr::new(name);
            assert_eq!(
                read_node_known(&dir, n, None, true).unwrap(),
                read_node_known(&dir, n, None, false).unwrap(),
                "{name}"
            );
        }
        assert!(matches!(
            read_node_known(&dir, OsStr::new("p"), None, true).unwrap(),
            Node::Special { kind: Kind::Fifo }
        ));
    }

    #[test]
    fn merged_yields_every_key_once_in_order() {
        let n = |m: u32| Node::Dir { mode: m };
        let a: BTreeMap<String, Node> = [("a", 1), ("c", 2), ("e", 3)]
            .into_iter()
            .map(|(k, m)| (k.to_owned(), n(m)))
            .collect();
        let b: BTreeMap<String, Node> = [("b", 4), ("c", 5), ("f", 6)]
            .into_iter()
            .map(|(k, m)| (k.to_owned(), n(m)))
            .collect();
        let got: Vec<(&str, Option<u32>, Option<u32>)> = merged(&a, &b)
            .into_iter()
            .map(|(k, x, y)| {
                let mode = |o: Option<&Node>| match o {
                    Some(Node::Dir { mode }) => Some(*mode),
                    _ => None,
                };
                (k.as_str(), mode(x), mode(y))
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some(1), None),
                ("b", None, Some(4)),
                ("c", Some(2), Some(5)),
                ("e", Some(3), None),
                ("f", None, Some(6)),
            ]
        );
        assert!(merged(&BTreeMap::new(), &BTreeMap::new()).is_empty());
    }
}
