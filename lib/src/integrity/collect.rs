//! Collection: the protected entries of a common dir as they are now, and the worktree
//! entries judged against git's layout.

use super::*;

// ---------------------------------------------------------------------------------------
// Collection: the protected entries as they are now.

/// An entry that could not be read.
#[derive(Debug, Clone)]
pub(super) struct Problem {
    pub(super) path: PathBuf,
    pub(super) reason: String,
    pub(super) link: bool,
}

/// The protected entries of one common dir, as found.
pub(super) struct Snapshot {
    pub(super) entries: BTreeMap<String, Node>,
    pub(super) includes: BTreeMap<PathBuf, Node>,
    pub(super) problems: Vec<Problem>,
}

pub(super) struct Collector<'a> {
    pub(super) root: &'a Dir,
    pub(super) entries: BTreeMap<String, Node>,
    pub(super) problems: Vec<Problem>,
    /// Folders opened so far in this pass, by path relative to the root: each folder is
    /// opened once (no-follow, one component from its parent), not walked from the root for
    /// every entry. A handle keeps naming the folder it opened, whatever is renamed later.
    pub(super) dirs: crate::layout::FastMap<String, std::rc::Rc<Dir>>,
    /// The baseline's entries (at check time): a file whose bytes equal the baseline's text
    /// takes the baseline's object id instead of being hashed again (see [`read_node_known`]).
    pub(super) known: Option<&'a BTreeMap<String, Node>>,
    /// The worktree entries as `crate::layout::worktree_entries` read them, by id: their
    /// admin-dir files are taken from there instead of being read a second time (see
    /// [`Collector::shared_entry`]).
    pub(super) shared: Option<&'a BTreeMap<String, WorktreeEntry>>,
}

impl<'a> Collector<'a> {
    pub(super) fn new(
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
    pub(super) fn put(&mut self, rel: &str, node: Node) -> bool {
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
    pub(super) fn shared_entry(&mut self, id: &str, base: &str) -> Option<Vec<OsString>> {
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
    pub(super) fn dir(&mut self, rel: &str) -> Result<std::rc::Rc<Dir>, NfError> {
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

    pub(super) fn problem(&mut self, e: &NfError) {
        self.problems.push(Problem {
            path: e.path().to_path_buf(),
            reason: e.to_string(),
            link: e.is_link(),
        });
    }

    pub(super) fn full(&self) -> bool {
        self.entries.len() >= ENTRY_LIMIT
    }

    /// Record the node at `rel` (its parent must be a folder already recorded or the root);
    /// its shape, `None` when it could not be read.
    pub(super) fn node(&mut self, rel: &str) -> Option<Shape> {
        self.node_listed(rel, false)
    }

    /// [`Collector::node`]; `listed_file`: its folder's listing showed a regular file (see
    /// [`read_node_known`]).
    pub(super) fn node_listed(&mut self, rel: &str, listed_file: bool) -> Option<Shape> {
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
    pub(super) fn file(&mut self, rel: &str) {
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
    pub(super) fn tree(&mut self, rel: &str, depth: usize) {
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
    pub(super) fn git_dir(&mut self, base: &str, module_depth: usize) {
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
        if !base.is_empty() {
            // A submodule's own linked worktrees (`git -C <sub> worktree add`): git enters
            // each entry from its worktree's `.git` file and reads `commondir`,
            // `config.worktree` and `HEAD` there, then config and hooks from the git dir
            // `commondir` names (R23-5, R23-8).
            self.sub_worktrees(&j("worktrees"), module_depth);
        }
    }

    /// Every `worktrees/<id>/` entry of a submodule git dir (`rel` is its `worktrees`), as
    /// [`Collector::worktrees`] records the common dir's: the files git reads there
    /// (`catalogue::WORKTREE_ADMIN_FILES`), any name git does not keep there as a whole tree,
    /// and the submodule git dirs under the entry's `modules/` at the nesting `depth` of the
    /// submodule git dir that holds the entry (the walk stays within [`MODULE_DEPTH`]).
    pub(super) fn sub_worktrees(&mut self, rel: &str, depth: usize) {
        self.file(rel);
        if !matches!(self.entries.get(rel), Some(Node::Dir { .. })) {
            return;
        }
        let ids = match self.dir(rel).and_then(|d| d.list()) {
            Ok(n) => n,
            Err(e) => {
                self.problem(&e);
                return;
            }
        };
        for id in ids {
            let Some(id) = id.to_str() else {
                // git enters an entry of any name: one that cannot be recorded is not
                // compared, so the check is incomplete.
                self.problems.push(Problem {
                    path: self.root.path().join(rel).join(&id),
                    reason: "name is not UTF-8; not recorded".into(),
                    link: false,
                });
                continue;
            };
            let base = format!("{rel}/{id}");
            let Some(Shape::Dir) = self.node(&base) else {
                continue;
            };
            for f in WORKTREE_FILES {
                self.file(&format!("{base}/{f}"));
            }
            let names = match self.dir(&base).and_then(|d| d.list()) {
                Ok(n) => n,
                Err(e) => {
                    self.problem(&e);
                    continue;
                }
            };
            for n in names {
                // git reads only names of its own in an entry: one that is not UTF-8 arms
                // nothing (as in the common dir's entries).
                let Some(n) = n.to_str() else { continue };
                if n == "modules" {
                    self.modules(&format!("{base}/modules"), depth);
                    continue;
                }
                if WORKTREE_FILES.contains(&n) || is_worktree_state_name(n) {
                    continue;
                }
                self.tree(&format!("{base}/{n}"), 1);
            }
        }
    }

    /// Submodule git dirs below `rel` (`modules/`), at any nesting of names and submodules.
    pub(super) fn modules(&mut self, rel: &str, depth: usize) {
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
            let Some(n) = n.to_str() else {
                // A submodule git dir (or a folder of names) git enters by a name that the
                // state file cannot hold: not compared, so the check is incomplete.
                self.problems.push(Problem {
                    path: self.root.path().join(rel).join(&n),
                    reason: "name is not UTF-8; not recorded".into(),
                    link: false,
                });
                continue;
            };
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
    pub(super) fn worktrees(&mut self) {
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
            let Some(id) = id.to_str() else {
                // An entry git enters (from its worktree's `.git` file) that the state file
                // cannot hold: not compared, so the check is incomplete.
                self.problems.push(Problem {
                    path: self.root.path().join("worktrees").join(&id),
                    reason: "name is not UTF-8; not recorded".into(),
                    link: false,
                });
                continue;
            };
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
pub(super) enum Shape {
    Absent,
    Dir,
    Other,
}

impl Shape {
    pub(super) fn of(n: &Node) -> Shape {
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
pub(super) fn git_written_unreported(rel: &str) -> bool {
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
pub(super) fn tracking_only_change(rel: &str, before: &Node, after: &Node) -> bool {
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

pub(super) fn split(rel: &str) -> (&str, &str) {
    match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    }
}

pub(super) fn read_node(dir: &Dir, name: &OsStr) -> Result<Node, NfError> {
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
pub(super) fn read_node_known(
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
pub(super) fn file_node(bytes: &[u8], mode: u32, known: Option<&Node>) -> Node {
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
pub(super) fn read_abs(path: &Path) -> Result<Node, NfError> {
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
pub(super) fn include_targets(common_dir: &Path, problems: &mut Vec<Problem>) -> Vec<PathBuf> {
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
pub(super) fn is_config_key(rel: &str) -> bool {
    matches!(split(rel).1, "config" | "config.worktree")
}

/// Collect the protected entries. `baseline` (at check time) lets the include enumeration be
/// skipped when it cannot give another answer: the include targets are a function of the
/// config files' bytes, so when every config file and every known include target is byte-equal
/// to the baseline, the targets are the baseline's.
pub(super) fn collect(
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
pub(super) fn gitdir_path(common_dir: &Path, id: &str, node: Option<&Node>) -> Option<PathBuf> {
    entry_gitdir_path(&common_dir.join("worktrees").join(id), node)
}

/// [`gitdir_path`] of the worktree entry (admin dir) `admin`, wherever it lies (a submodule
/// git dir's `worktrees/<id>` too).
pub(super) fn entry_gitdir_path(admin: &Path, node: Option<&Node>) -> Option<PathBuf> {
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
        admin.join(p)
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
pub(super) fn layout_entries(
    common_dir: &Path,
) -> Result<BTreeMap<String, WorktreeEntry>, LayoutError> {
    layout_entries_with(common_dir, None)
}

/// [`layout_entries`], the entries' `logs/` and `refs/` listings from (and into) the walk
/// record `cache` (`crate::layout::worktree_entries_recorded`).
pub(super) fn layout_entries_with(
    common_dir: &Path,
    cache: Option<&mut crate::layout::walk::WalkCache>,
) -> Result<BTreeMap<String, WorktreeEntry>, LayoutError> {
    let entries = match cache {
        Some(c) => crate::layout::worktree_entries_recorded(common_dir, c),
        None => crate::layout::worktree_entries(common_dir),
    };
    match entries {
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
pub(super) fn wt_problems(
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

pub(super) fn worktree_baselines(
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
