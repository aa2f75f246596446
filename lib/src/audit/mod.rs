//! `wt-check audit`: find what an agent could have planted in a repository or a workspace,
//! with no baseline. Planted hooks, armed program-running config with its origin and
//! include chain, includes that leave the git dir, redirects (`commondir`, `.git` files and
//! links), worktree entries that break git's layout, nested and bare repositories in a work
//! tree, promisors with local transports, `exec` lines in a rebase todo list, alternates,
//! attributes that select drivers. Output for people, as JSON, or as SARIF 2.1.0.
//!
//! What is audited is what git would use there: the repository git discovers above a folder
//! (also past a `.git` it skips), the repository behind a linked worktree or a submodule
//! checkout. Precision is designed in, not patched per case: every finding says what would
//! run on which of the owner's commands, at one of three levels — error (something in the
//! agent's reach names a program git runs), warning (something else must also be in place
//! that the agent could plausibly arrange), note (worth knowing, nothing runs; no effect on
//! the exit status) — and one root cause is one finding. The owner's own files are never
//! findings. No output carries a URL's userinfo ([`crate::url::redact_userinfo`]).
//!
//! Unknown is not clean: a part that cannot be read, or a walk cut short, is a finding of
//! its own ([`rules::INCOMPLETE`]) and makes the exit status 2.

pub mod baseline;
pub mod rules;
pub mod sarif;
pub mod special;

use crate::catalogue::{self, Severity};
use crate::integrity::nf::{Dir, Kind, NfError};
use crate::integrity::normalize;
use rules::Rule;
use serde::Serialize;
use serde_json::{Map, Value};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Most folder entries looked at while walking one audit path for repositories.
pub const WALK_LIMIT: usize = 5_000_000;
/// Deepest folder level walked.
pub const WALK_DEPTH: usize = 40;

/// `--format` of `wt-check audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AuditFormat {
    /// One line per finding, then a summary.
    #[default]
    Human,
    /// One JSON document (docs/wt-check.md).
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable rule id (`GW…`).
    pub rule: &'static str,
    /// Rule name (kebab-case).
    pub name: &'static str,
    pub level: Severity,
    /// The file or folder the finding is about.
    pub path: PathBuf,
    /// The repository (work tree, or git dir when bare) it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    pub message: String,
    /// Rule-specific fields (key, value, origin, include chain, target…).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
}

/// Everything one audit found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The paths audited, resolved.
    pub paths: Vec<PathBuf>,
    /// Repositories found (work tree or bare git dir).
    pub repositories: Vec<PathBuf>,
    pub findings: Vec<Finding>,
    /// Common dirs (and submodule git dirs) already audited: a repository reached twice (a
    /// linked worktree next to its main work tree, a submodule checkout next to its
    /// superproject) is audited once.
    #[serde(skip)]
    audited: Vec<PathBuf>,
    /// Folders the walk did not enter ([`Walk`]): listed in every output format, so what was
    /// not audited is never silent.
    pub skipped: Vec<SkippedFolder>,
}

/// A folder the workspace walk did not enter, and why.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedFolder {
    pub path: PathBuf,
    pub why: String,
}

/// How the workspace walk chooses folders (`wt-check audit --exclude`, `--walk-all`).
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// Folders not to enter: a glob on the path relative to the audited path, or, when it has
    /// no `/`, on the folder's name at any depth (`crate::settings::glob` syntax, ignoring
    /// case).
    pub exclude: Vec<crate::settings::glob::Glob>,
    /// Skip dependency folders ([`crate::catalogue::DEPENDENCY_FOLDERS`]) that hold no
    /// repository at their top level. Off in [`audit`] (what `pin` and `check` use: they
    /// must see everything), on by default in `wt-check audit`.
    pub skip_dependencies: bool,
}

impl Walk {
    /// Why the folder `path` (below `root`) is not entered, or `None` to walk it.
    fn skip(&self, root: &Path, path: &Path) -> Option<String> {
        if self.exclude.is_empty() && !self.skip_dependencies {
            return None;
        }
        let rel = path.strip_prefix(root).ok()?.to_string_lossy().into_owned();
        let name = path.file_name()?.to_string_lossy().into_owned();
        if let Some(g) = self
            .exclude
            .iter()
            .find(|g| g.matches(&rel) || (!g.as_str().contains('/') && g.matches(&name)))
        {
            return Some(format!("--exclude {}", g.as_str()));
        }
        if !self.skip_dependencies {
            return None;
        }
        let kind = if crate::catalogue::DEPENDENCY_FOLDERS.contains(&name.as_str()) {
            name.clone()
        } else {
            let marker = crate::catalogue::DEPENDENCY_MARKERS
                .iter()
                .find(|(file, sig)| has_marker(path, file, *sig))?;
            marker.0.to_owned()
        };
        // A repository at its top level (or the folder itself one): walked as usual.
        if holds_repository_at_top(path) {
            return None;
        }
        Some(format!(
            "a dependency folder ({kind}) with no repository at its top level; --walk-all walks it"
        ))
    }
}

/// Does `dir` hold `file` (a regular file, not a link) starting with `sig`?
fn has_marker(dir: &Path, file: &str, sig: Option<&[u8]>) -> bool {
    let p = dir.join(file);
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_file() => match sig {
            None => true,
            Some(sig) => small_file(&p).is_some_and(|t| t.as_bytes().starts_with(sig)),
        },
        _ => false,
    }
}

/// Is `dir` a repository (a `.git` entry of any kind, or a git dir), or does one of its
/// children hold a `.git` entry or look like a git dir? Links are not followed. An unreadable
/// folder counts as holding one, so the walk enters it and reports what it cannot read.
fn holds_repository_at_top(dir: &Path) -> bool {
    let dot_git = |d: &Path| std::fs::symlink_metadata(d.join(".git")).is_ok();
    if dot_git(dir) || looks_like_git_dir(dir) {
        return true;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return true;
    };
    for ent in rd {
        let Ok(ent) = ent else { return true };
        let Ok(ft) = ent.file_type() else { return true };
        if ft.is_dir() {
            let p = ent.path();
            if dot_git(&p) || looks_like_git_dir(&p) {
                return true;
            }
        }
    }
    false
}

impl Report {
    /// True when some part could not be read.
    pub fn incomplete(&self) -> bool {
        self.findings.iter().any(|f| f.rule == rules::INCOMPLETE.id)
    }

    /// Findings that count for the exit status (warning and error; a note does not).
    pub fn counted(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.level > Severity::Note)
            .count()
    }

    /// Every finding goes through here: the message and every string of the details lose
    /// the userinfo of the URLs they carry ([`crate::url::redact_userinfo`]), so no output
    /// format (human, JSON, SARIF) prints a credential.
    fn add(
        &mut self,
        rule: &'static Rule,
        path: &Path,
        repo: Option<&Path>,
        message: String,
        details: Map<String, Value>,
    ) {
        let mut details = Value::Object(details);
        crate::url::redact_json(&mut details);
        let Value::Object(details) = details else {
            unreachable!("an object stays an object")
        };
        self.findings.push(Finding {
            rule: rule.id,
            name: rule.name,
            level: rule.level,
            path: path.to_path_buf(),
            repo: repo.map(Path::to_path_buf),
            message: crate::url::redact_userinfo(&message).into_owned(),
            details,
        });
    }

    fn add_level(
        &mut self,
        rule: &'static Rule,
        level: Severity,
        path: &Path,
        repo: Option<&Path>,
        message: String,
        details: Map<String, Value>,
    ) {
        self.add(rule, path, repo, message, details);
        if let Some(f) = self.findings.last_mut() {
            f.level = level;
        }
    }

    fn incomplete_at(&mut self, path: &Path, repo: Option<&Path>, why: impl std::fmt::Display) {
        self.add(
            &rules::INCOMPLETE,
            path,
            repo,
            format!("{}: {why}", path.display()),
            Map::new(),
        );
    }

    /// The exit code: 0 clean (notes only), 1 a warning or an error, 2 when some part could
    /// not be read.
    pub fn code(&self) -> crate::exit::Code {
        if self.incomplete() {
            crate::exit::INCOMPLETE
        } else if self.counted() == 0 {
            crate::exit::CLEAN
        } else {
            crate::exit::FOUND
        }
    }
}

macro_rules! details {
    ($($k:literal => $v:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = Map::new();
        $( m.insert($k.to_owned(), serde_json::json!($v)); )*
        m
    }};
}

/// Audit every path (a repository's work tree, a workspace folder, or a bare git dir).
///
/// What is audited is what git would use: a folder inside a repository's work tree (or whose
/// own `.git` git skips) also gets the repository git finds above it ([`discover`]).
pub fn audit(paths: &[PathBuf]) -> Report {
    audit_with(paths, &Walk::default())
}

/// [`audit`], with the folders `walk` leaves out.
pub fn audit_with(paths: &[PathBuf], walk: &Walk) -> Report {
    audit_with_cache(paths, walk, None)
}

/// [`audit`], the workspace walk taking the listings of unchanged folders from `cache`
/// (`crate::layout::walk_cache`: same entries, fewer folders read) and recording the ones
/// it reads.
pub fn audit_cached(paths: &[PathBuf], cache: &mut crate::layout::walk::WalkCache) -> Report {
    audit_with_cache(paths, &Walk::default(), Some(cache))
}

/// [`audit_cached`], with the git dirs in `known` taken as audited already: a `.git` that
/// leads to one of them (its own work tree's, a linked worktree's, a submodule checkout's) is
/// still judged as a `.git` — redirect, second work tree, nested repository — but the
/// repository behind it is not audited again. `wt-check check` passes the git dirs of
/// [`audit_baseline`]'s one audit of the baseline's repository ([`Report::audited`]):
/// auditing it again under each walked root was most of the walk's cost.
pub fn audit_cached_beside(
    paths: &[PathBuf],
    cache: &mut crate::layout::walk::WalkCache,
    known: &[PathBuf],
) -> Report {
    audit_seeded(paths, &Walk::default(), Some(cache), known)
}

/// Where the one audit of the baseline's repository looks besides its own work tree
/// ([`audit_baseline`]).
struct Shared {
    /// Every root the check walks: in the agent's reach, as an audited path is.
    roots: Vec<PathBuf>,
    /// The common dir whose worktree entries name the other work trees: the tops the
    /// config's named files are resolved from, read only when the config names a file.
    common_dir: PathBuf,
}

impl Shared {
    /// Every linked worktree of the repository (each worktree entry's `gitdir` backlink).
    fn linked_worktrees(&self) -> Vec<PathBuf> {
        crate::layout::worktree_entries(&self.common_dir)
            .map(|es| es.into_iter().filter_map(|e| e.worktree_path).collect())
            .unwrap_or_default()
    }
}

/// The repository of `common_dir` audited once for a whole `wt-check check`, where each root
/// of the nested walk used to audit it again ([`audit_cached_beside`] then takes it as
/// audited under every root).
///
/// Its findings inside the common dir are the baseline comparison's (hooks, config files,
/// worktree entries, submodule git dirs are compared with the pinned state). What it alone
/// reports lies outside: special files at the paths the config names (`commit.template`,
/// `core.excludesFile`, … , GW021), resolved from the top of *every* work tree of the
/// repository — the main one and each worktree entry's, where the per-root audits looked
/// only at the main work tree and the first worktree their walk met — and include targets,
/// armed values and hooks folders outside it in the agent's reach (judged with every walked
/// root in reach). `main_work_tree`: the repository's work tree (`None`: bare); `roots`:
/// the roots of the nested walk.
pub fn audit_baseline(
    common_dir: &Path,
    main_work_tree: Option<&Path>,
    roots: &[PathBuf],
) -> Report {
    let mut r = Report::default();
    let shared = Shared {
        roots: roots.to_vec(),
        common_dir: common_dir.to_path_buf(),
    };
    let root = main_work_tree.unwrap_or(common_dir);
    audit_repository_in(&mut r, main_work_tree, common_dir, root, Some(shared), None);
    r
}

impl Report {
    /// The git dirs audited (keys of [`audit_repository`]): what [`audit_cached_beside`]
    /// takes as known after [`audit_baseline`].
    pub fn audited(&self) -> &[PathBuf] {
        &self.audited
    }
}

/// The keys under which [`audit`] records the repository of `common_dir` as audited: the
/// common dir and every submodule git dir below its `modules/` (as its own audit lists them,
/// a link among them left out). Each is the key [`audit_repository`] looks up: a linked
/// worktree's git dir counts as its common dir.
pub fn baseline_git_dirs(common_dir: &Path) -> Vec<PathBuf> {
    let mut scratch = Report::default();
    let mut out = vec![common_dir.to_path_buf()];
    out.extend(module_dirs(
        &mut scratch,
        &common_dir.join("modules"),
        None,
        0,
    ));
    out
}

fn audit_with_cache(
    paths: &[PathBuf],
    walk: &Walk,
    cache: Option<&mut crate::layout::walk::WalkCache>,
) -> Report {
    audit_seeded(paths, walk, cache, &[])
}

fn audit_seeded(
    paths: &[PathBuf],
    walk: &Walk,
    mut cache: Option<&mut crate::layout::walk::WalkCache>,
    known: &[PathBuf],
) -> Report {
    let mut r = Report {
        audited: known.to_vec(),
        ..Report::default()
    };
    for p in paths {
        let abs = match std::fs::canonicalize(p) {
            Ok(a) => a,
            Err(e) => {
                r.incomplete_at(p, None, format!("cannot open: {e}"));
                continue;
            }
        };
        r.paths.push(abs.clone());
        if looks_like_git_dir(&abs) {
            audit_repository(&mut r, None, &abs, &abs);
            continue;
        }
        let found = discover(&abs);
        for (dot_git, why) in &found.skipped {
            if dot_git.parent() != Some(abs.as_path()) {
                skipped_note(&mut r, dot_git, why);
            }
        }
        if let Some((wt, git_dir)) = &found.repository {
            if wt.as_deref() != Some(abs.as_path()) {
                let at = wt.as_deref().unwrap_or(git_dir);
                r.add(&rules::ENCLOSING, &abs, Some(at), format!(
                    "{}: git run here uses the repository at {} (its config and hooks are audited with it)",
                    abs.display(), at.display()), details!("repository" => at, "git_dir" => git_dir));
                audit_repository(&mut r, wt.as_deref(), git_dir, &abs);
            }
        }
        walk_workspace(&mut r, &abs, walk, cache.as_deref_mut());
    }
    r.findings
        .sort_by(|a, b| (b.level, &a.path, a.rule).cmp(&(a.level, &b.path, b.rule)));
    r.findings
        .dedup_by(|a, b| a.rule == b.rule && a.path == b.path && a.message == b.message);
    r
}

/// The note for a `.git` that git skips on its way up.
fn skipped_note(r: &mut Report, dot_git: &Path, why: &str) {
    r.add(
        &rules::GIT_DIR_SKIPPED,
        dot_git,
        None,
        format!(
            "{}: {why}: git skips it and uses the repository above",
            dot_git.display()
        ),
        details!("why" => why),
    );
}

/// git's `is_git_directory` (setup.c): a valid `HEAD` ([`valid_head`]) and `objects/` and
/// `refs/` — in the common dir when a `commondir` file names one. git skips a `.git` folder
/// that fails this and climbs to the parent folder.
pub(crate) fn looks_like_git_dir(p: &Path) -> bool {
    if !valid_head(&p.join("HEAD")) {
        return false;
    }
    let common = small_file(&p.join("commondir"))
        .map(|c| p.join(c.trim_end_matches(['\n', '\r'])))
        .unwrap_or_else(|| p.to_path_buf());
    common.join("objects").is_dir() && common.join("refs").is_dir()
}

/// git's `validate_headref`: a symbolic link into `refs/`, or a file holding
/// `ref: refs/…` or an object id.
fn valid_head(head: &Path) -> bool {
    let Ok(m) = std::fs::symlink_metadata(head) else {
        return false;
    };
    if m.file_type().is_symlink() {
        return std::fs::read_link(head).is_ok_and(|t| t.starts_with("refs"));
    }
    if !m.file_type().is_file() {
        return false;
    }
    let Some(text) = small_file(head) else {
        return false;
    };
    valid_head_text(&text)
}

/// Whether [`git_dir_in`] takes `p` (the tests compare it with [`looks_like_git_dir`]).
#[cfg(test)]
fn looks_like_git_dir_in(d: &Dir, p: &Path) -> bool {
    git_dir_in(d, p).is_some()
}

/// [`looks_like_git_dir`] of the folder `d` is open on (its path `p`, opened without a link
/// from `/`, as [`small_file`] opens it): `HEAD` and `commondir` read below the one handle.
/// With no link on the way to `p`, `lstat` of `p/HEAD` is that of `d`'s child and
/// [`small_file`]'s open of `p` is `d`: the same answers, one open of the folder instead of
/// two. When `p` looks like a git dir, its common dir as [`common_dir_of`] gives it: both
/// read `commondir` the same way (no link from `/` to `p`, the file's bytes, lossy UTF-8,
/// trailing CR/LF cut, normalised; unreadable: `p` itself), so the caller need not read it a
/// second time.
fn git_dir_in(d: &Dir, p: &Path) -> Option<PathBuf> {
    let head = OsStr::new("HEAD");
    let valid = match d.stat(head) {
        Ok(Some(st)) if st.kind == Kind::Link => d
            .read_link(head)
            .is_ok_and(|t| Path::new(&t).starts_with("refs")),
        // Seen as a regular file by this `lstat`: opened no-follow, non-blocking, its type
        // checked again on the descriptor (`Dir::read_stated`).
        Ok(Some(st)) if st.kind == Kind::File => d
            .read_stated(head, 1 << 20)
            .is_ok_and(|(b, _)| valid_head_text(&String::from_utf8_lossy(&b))),
        _ => false,
    };
    if !valid {
        return None;
    }
    let (common, key) = match d.read_bytes(OsStr::new("commondir"), 1 << 20) {
        Ok(c) => {
            let c = p.join(String::from_utf8_lossy(&c).trim_end_matches(['\n', '\r']));
            let key = normalize(&c);
            (c, key)
        }
        Err(_) => (p.to_path_buf(), p.to_path_buf()),
    };
    (common.join("objects").is_dir() && common.join("refs").is_dir()).then_some(key)
}

/// The text of a `HEAD` file git takes ([`valid_head`]).
fn valid_head_text(text: &str) -> bool {
    if let Some(rest) = text.strip_prefix("ref:") {
        return rest.trim_start().starts_with("refs/");
    }
    // `get_oid_hex`: an object id's worth of hex digits leads; the rest is not looked at.
    text.len() >= 40 && text.as_bytes()[..40].iter().all(u8::is_ascii_hexdigit)
}

/// What git makes of `<dir>/.git` while discovering a repository
/// (`setup_git_directory_gently_1`, `read_gitfile_gently`).
enum DotGit {
    /// No `.git` here.
    Absent,
    /// The git dir git uses.
    Repository(PathBuf),
    /// git skips it and climbs: a folder (or link to one) that is not a git dir, a link to
    /// nothing, something that is neither file nor folder.
    Skipped(&'static str),
    /// git stops with a fatal error (a `.git` file it cannot use).
    Fatal,
}

fn dot_git(dir: &Path) -> DotGit {
    let p = dir.join(".git");
    let Ok(lm) = std::fs::symlink_metadata(&p) else {
        return DotGit::Absent;
    };
    // git stats through links.
    let m = match std::fs::metadata(&p) {
        Ok(m) => m,
        Err(_) if lm.file_type().is_symlink() => return DotGit::Skipped("a link to nothing"),
        Err(_) => return DotGit::Skipped("cannot be read"),
    };
    if m.is_dir() {
        return if looks_like_git_dir(&p) {
            DotGit::Repository(p)
        } else {
            DotGit::Skipped("not a git dir (no valid HEAD, objects/ or refs/)")
        };
    }
    if !m.is_file() {
        return DotGit::Skipped("neither a file nor a folder");
    }
    // Opened without blocking (a `.git` swapped for a FIFO after the stat above) and
    // refused unless it is still a regular file.
    let Some(text) = special::read_regular(&p, 1 << 20)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    else {
        return DotGit::Fatal;
    };
    match text.strip_prefix("gitdir: ") {
        Some(t) => {
            let target = normalize(&dir.join(t.trim_end_matches(['\n', '\r'])));
            if looks_like_git_dir(&target) {
                DotGit::Repository(target)
            } else {
                DotGit::Fatal
            }
        }
        None => DotGit::Fatal,
    }
}

/// The result of [`discover`].
#[derive(Default)]
struct Discovery {
    /// `.git` entries git skipped on the way, with the reason.
    skipped: Vec<(PathBuf, &'static str)>,
    /// The work tree (`None`: bare) and git dir git would use.
    repository: Option<(Option<PathBuf>, PathBuf)>,
}

/// git's repository discovery from `start` upwards: at each folder, `.git` ([`dot_git`]),
/// then the folder itself as a bare git dir; stops at a file system boundary (unless
/// `GIT_DISCOVERY_ACROSS_FILESYSTEM` is on) and before a folder of
/// `GIT_CEILING_DIRECTORIES`, as git does.
fn discover(start: &Path) -> Discovery {
    use std::os::unix::fs::MetadataExt;
    let mut out = Discovery::default();
    let across = std::env::var("GIT_DISCOVERY_ACROSS_FILESYSTEM")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    let ceilings: Vec<PathBuf> = std::env::var_os("GIT_CEILING_DIRECTORIES")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
                .collect()
        })
        .unwrap_or_default();
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    let first_dev = dev(start);
    let mut dir = start.to_path_buf();
    loop {
        match dot_git(&dir) {
            DotGit::Repository(g) => {
                out.repository = Some((Some(dir), g));
                return out;
            }
            DotGit::Skipped(why) => out.skipped.push((dir.join(".git"), why)),
            DotGit::Fatal => return out,
            DotGit::Absent => {}
        }
        if looks_like_git_dir(&dir) {
            out.repository = Some((None, dir));
            return out;
        }
        let Some(parent) = dir.parent().map(Path::to_path_buf) else {
            return out;
        };
        if ceilings.contains(&parent) || (!across && dev(&parent) != first_dev) {
            return out;
        }
        dir = parent;
    }
}

/// A small regular file's text, read without following links and without blocking on a
/// fifo (`fsx`); `None` for anything else.
fn small_file(path: &Path) -> Option<String> {
    let (parent, name) = (path.parent()?, path.file_name()?);
    let (bytes, _) = Dir::open_abs(parent).ok()?.read(name, 1 << 20).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Walk a folder for repositories: every `.git` (folder, file or link), every folder shaped
/// like a git dir. Never follows links, never descends into a git dir.
fn walk_workspace(
    r: &mut Report,
    root: &Path,
    walk: &Walk,
    cache: Option<&mut crate::layout::walk::WalkCache>,
) {
    let mut seen = 0usize;
    // Work trees found so far (a repository below one of them is nested).
    let mut work_trees: Vec<PathBuf> = Vec::new();
    // Whether a folder above a `.git` has a `.git` of its own, by folder: `lstat`ed once per
    // walk (the session folder above 100 worktrees was `lstat`ed 100 times). A `.git` made
    // there after the first look is not seen by later entries, as one made after the walk
    // is not: the answer is the walk's snapshot of that folder.
    let mut has_dot_git: std::collections::HashMap<PathBuf, bool> = Default::default();
    // walkdir's order and bounds, without a system call or an allocation per entry
    // (`crate::layout::walk`): a build folder of 50,000 entries is walked, not skipped.
    // Files and links not named `.git` are only counted: nothing below looks at them.
    let passed_over = std::cell::Cell::new(0);
    let mut it = crate::layout::walk::Walk::with_cache(root, WALK_DEPTH, cache)
        .skip_plain_files(&passed_over);
    let too_many = |r: &mut Report| {
        r.incomplete_at(
            root,
            None,
            format!(
                "more than {WALK_LIMIT} entries; walk stopped (leave out folders that hold no repositories with --exclude GLOB, e.g. --exclude build{})",
                if walk.skip_dependencies {
                    "; dependency folders such as node_modules are already left out"
                } else {
                    "; without --walk-all, dependency folders such as node_modules are left out"
                }
            ),
        )
    };
    while let Some(ent) = it.next() {
        seen += 1 + passed_over.take();
        if seen > WALK_LIMIT {
            return too_many(r);
        }
        let ent = match ent {
            Ok(e) => e,
            Err(e) => {
                let p = e.path().unwrap_or(root).to_path_buf();
                r.incomplete_at(&p, None, format!("cannot read: {e}"));
                continue;
            }
        };
        if ent.depth() + 1 >= WALK_DEPTH && ent.file_type().is_dir() {
            r.incomplete_at(
                ent.path(),
                None,
                format!("deeper than {WALK_DEPTH} levels; not walked"),
            );
        }
        // A FIFO, socket or device under a name git opens with a blocking open: `HEAD`
        // (discovery's `is_git_directory`, a bare-shaped folder's too), `.gitignore`,
        // `.gitattributes`, `.mailmap`, `.gitmodules` (`catalogue::OPENED_BY_NAME`).
        // A link there that leads to one, or into `/dev` or `/proc` (`/dev/stdin`: the
        // owner's terminal or pipe), blocks the same where git follows it: `.gitmodules`,
        // `HEAD` (eleventh red-team pass, R11-9; `crate::audit::special::blocking`).
        let kind = ent.file_type();
        if (kind == crate::layout::walk::WalkKind::Other
            || (kind == crate::layout::walk::WalkKind::Symlink
                && crate::audit::special::blocking(ent.path()).is_some()))
            && crate::catalogue::OPENED_BY_NAME
                .iter()
                .any(|n| ent.file_name() == OsStr::new(n))
        {
            let p = ent.path().to_path_buf();
            // Named by the config too (`mailmap.file = .mailmap`): reported once.
            if r.findings
                .iter()
                .any(|f| f.rule == rules::SPECIAL_FILE.id && f.path == p)
            {
                continue;
            }
            let by = if ent.file_name() == OsStr::new("HEAD") {
                "git's discovery opens it (blocking)"
            } else {
                "git opens it by name (blocking) in status, add, commit, log"
            };
            r.add(
                &rules::SPECIAL_FILE,
                &p,
                None,
                format!(
                    "{}: not a file: {by} when run in {}, and hangs",
                    p.display(),
                    p.parent().unwrap_or(root).display()
                ),
                details!("kind" => "special"),
            );
            continue;
        }
        // Only a `.git` or a folder with a `HEAD` (git's `is_git_directory` needs one) can be
        // a repository: nothing else is looked at further.
        let is_dot_git = ent.file_name() == OsStr::new(".git");
        // A dependency folder or an --exclude match is left out before anything else is
        // looked at in it (it need not be a git dir itself to be skipped).
        if ent.depth() > 0 && ent.file_type().is_dir() && !is_dot_git {
            let path = ent.path().to_path_buf();
            if let Some(why) = walk.skip(root, &path) {
                it.skip_current_dir();
                r.skipped.push(SkippedFolder { path, why });
                continue;
            }
        }
        let may_be_git_dir = ent.file_type().is_dir() && ent.has_child("HEAD") != Some(false);
        if !is_dot_git && !may_be_git_dir {
            continue;
        }
        let path = ent.path().to_path_buf();
        // The work tree this one lies in: one found already, or an ancestor with a `.git`
        // the sorted walk has not reached yet (`.a/sub/.git` comes before the top's `.git`:
        // seventh red-team pass, R7-2).
        let enclosing = work_trees
            .iter()
            .rev()
            .find(|w| strictly_below(&path, w))
            .cloned()
            .or_else(|| {
                let own = if is_dot_git {
                    path.parent()
                } else {
                    Some(path.as_path())
                }?;
                own.ancestors()
                    .skip(1)
                    .take_while(|a| a.starts_with(root))
                    .find(|a| {
                        *has_dot_git
                            .entry(a.to_path_buf())
                            .or_insert_with(|| std::fs::symlink_metadata(a.join(".git")).is_ok())
                    })
                    .map(Path::to_path_buf)
            });
        if is_dot_git {
            let wt = path.parent().unwrap_or(root).to_path_buf();
            let ft = ent.file_type();
            if ft.is_dir() {
                it.skip_current_dir();
                if !looks_like_git_dir(&path) {
                    // git's own test of it (`validate_headref`) opens `HEAD` with a blocking
                    // open: a FIFO anywhere in it is reported even though git then skips it.
                    let sp = special::sweep(&path);
                    for (p, kind) in &sp.found {
                        r.add(
                            special_rule(kind),
                            p,
                            Some(&wt),
                            format!(
                                "{}: a {kind} in a nested repository's git dir: {} (in {})",
                                p.display(),
                                special::harm(kind),
                                wt.display()
                            ),
                            details!("kind" => *kind),
                        );
                    }
                    if let Some((p, why)) = sp.incomplete {
                        r.incomplete_at(&p, Some(&wt), format!("{}: {why}", p.display()));
                    }
                    // git skips it: what runs here is the enclosing repository's, audited
                    // with it (or through discovery above the audited path).
                    skipped_note(r, &path, "not a git dir (no valid HEAD, objects/ or refs/)");
                    continue;
                }
                let before = r.counted();
                audit_repository(r, Some(&wt), &path, root);
                if let Some(outer) = &enclosing {
                    // Nothing armed in it (no hook, no program-running config): a note.
                    let armed = r.counted() > before;
                    r.add_level(&rules::NESTED_REPOSITORY, if armed { Severity::Warning } else { Severity::Note }, &wt, Some(outer), format!(
                        "{}: a repository inside the work tree of {} (git discovers it when run there){}",
                        wt.display(), outer.display(), if armed { "; it arms git (see its findings)" } else { "; its config runs nothing and it has no hooks" }),
                        details!("enclosing" => outer, "armed" => armed));
                }
                work_trees.push(wt.clone());
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                let abs = normalize(&wt.join(&target));
                let leaves = !abs.starts_with(root);
                // git follows the link: a git dir there is used, anything else is skipped.
                match std::fs::canonicalize(&path)
                    .ok()
                    .filter(|t| looks_like_git_dir(t))
                {
                    Some(git_dir)
                        if second_work_tree_of(&wt, &git_dir, enclosing.as_deref()).is_some() =>
                    {
                        // A `.git` link to a git dir that belongs to another work tree: a
                        // second work tree of that repository, as a `.git` file would make it
                        // (R9-4).
                        let owner = second_work_tree_of(&wt, &git_dir, enclosing.as_deref())
                            .unwrap_or_default();
                        r.add_level(&rules::GITFILE_REDIRECT, Severity::Error, &path, Some(&wt), format!(
                            "{}: `.git` is a symbolic link that makes {} a second work tree of {}: the owner's git there runs that repository's hooks and its relative programs from this folder",
                            path.display(), wt.display(), owner.display()),
                            details!("target" => target, "leaves_workspace" => leaves, "same_repository" => true, "work_tree" => owner));
                        if !git_dir.starts_with(root) {
                            audit_repository(r, Some(&wt), &git_dir, root);
                        }
                        work_trees.push(wt);
                    }
                    Some(git_dir) => {
                        r.add_level(&rules::GITFILE_REDIRECT, if leaves { Severity::Error } else { Severity::Warning }, &path, Some(&wt), format!(
                            "{}: `.git` is a symbolic link to {}{} (git uses whatever git dir it names)",
                            path.display(), target.display(), if leaves { ", outside the workspace" } else { "" }),
                            details!("target" => target, "leaves_workspace" => leaves));
                        audit_repository(r, Some(&wt), &git_dir, root);
                        work_trees.push(wt);
                    }
                    None => {
                        skipped_note(
                            r,
                            &path,
                            if abs.exists() {
                                "a symbolic link to a folder that is not a git dir"
                            } else {
                                "a link to nothing"
                            },
                        );
                        // Whoever can write where it points can make it a git dir.
                        if !abs.starts_with(root) && others_can_write(&abs) {
                            r.add(&rules::GITFILE_REDIRECT, &path, Some(&wt), format!(
                                "{}: `.git` is a symbolic link to {}, outside the workspace, where others than the owner can write (a git dir made there would be used)",
                                path.display(), target.display()),
                                details!("target" => target, "leaves_workspace" => true));
                        }
                    }
                }
            } else {
                gitfile(r, root, &wt, &path, enclosing.as_deref(), &mut work_trees);
            }
            continue;
        }
        if ent.file_type().is_dir() && looks_like_git_dir(&path) {
            it.skip_current_dir();
            let before = r.counted();
            audit_repository(r, None, &path, root);
            if let Some(outer) = &enclosing {
                // A committed fixture (`tests/fixtures/*.git`) runs nothing unless its config
                // or hooks do: a note then.
                let armed = r.counted() > before;
                r.add_level(&rules::BARE_IN_WORK_TREE, if armed { Severity::Warning } else { Severity::Note }, &path, Some(outer), format!(
                    "{}: a bare repository inside the work tree of {} (git uses its config and hooks when run in it){}",
                    path.display(), outer.display(), if armed { "; it arms git (see its findings)" } else { "; its config runs nothing and it has no hooks" }),
                    details!("enclosing" => outer, "armed" => armed));
            }
        }
    }
    // Files passed over after the last entry handed out.
    if seen + passed_over.take() > WALK_LIMIT {
        too_many(r);
    }
}

/// `path` lies below `dir` (not at it): `Path::starts_with` on the bytes. Both are the walk's
/// own paths (the canonical root joined with listed names: no `.`, `..`, doubled or trailing
/// `/`), so the component comparison reduces to a byte prefix ending at a `/` — without the
/// component parsing, which was most of the walk's instructions at 100 linked worktrees.
fn strictly_below(path: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (p, d) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    p.len() > d.len() && p.starts_with(d) && (d.ends_with(b"/") || p[d.len()] == b'/')
}

/// A `.git` file: where it points, and whether that leaves the workspace.
fn gitfile(
    r: &mut Report,
    root: &Path,
    wt: &Path,
    path: &Path,
    enclosing: Option<&Path>,
    work_trees: &mut Vec<PathBuf>,
) {
    // `read_bytes`: `Dir::read` less the `lstat` for the permission bits, not used here.
    let bytes = match Dir::open_abs(wt).and_then(|d| d.read_bytes(OsStr::new(".git"), 1 << 20)) {
        Ok(b) => b,
        Err(e) => {
            r.incomplete_at(path, Some(wt), e);
            return;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(t) = text.strip_prefix("gitdir: ") else {
        r.add(
            &rules::GITFILE_REDIRECT,
            path,
            Some(wt),
            format!(
                "{}: `.git` file does not start with `gitdir: ` (git stops with a fatal error)",
                path.display()
            ),
            Map::new(),
        );
        return;
    };
    let t = t.trim_end_matches(['\n', '\r']);
    let target = normalize(&wt.join(t));
    work_trees.push(wt.to_path_buf());
    if let Some((_, key)) = own_layout_keyed(wt, &target) {
        // git's own layout, wherever the git dir lies: what git uses here is the repository
        // behind it, audited (once) with its hooks and config. A worktree entry's common
        // dir, the audit's key, as the layout check read it.
        audit_repository_in(r, Some(wt), &target, root, None, key);
        return;
    }
    // A `.git` file that makes this folder a second work tree of a repository whose git dir
    // belongs to another work tree (outside git's own layout, checked above): git run here
    // uses that repository's hooks and config, and resolves its relative programs
    // (`core.fsmonitor = tools/x.sh`, a relative `core.hooksPath`) from this folder, whose
    // files are the agent's (sixth red-team pass, R6-3). git never writes one. Wherever the
    // folder lies — in the enclosing work tree, above the audited path, in a session's folder
    // or linked worktree next to the repository (eighth pass, R8-5) — and whatever it names:
    // the main git dir, a worktree entry, a submodule git dir.
    // Classified by where it leads, links followed (git follows them): `gitdir: <s1>/l`
    // with `l -> <repo>/.git` names the repository's git dir all the same (R9-4).
    // The value as the kernel resolves it, not as text: `gitdir: <s1>/l/..` with
    // `l -> <repo>/.git/refs` is `<repo>/.git`, though `l/..` reads as `<s1>` (R10-1).
    let real = std::fs::canonicalize(wt.join(t))
        .or_else(|_| std::fs::canonicalize(&target))
        .unwrap_or_else(|_| target.clone());
    if let Some(owner) = second_work_tree_of(wt, &real, enclosing) {
        r.add_level(
            &rules::GITFILE_REDIRECT,
            Severity::Error,
            path,
            Some(wt),
            format!(
                "{}: `.git` file makes {} a second work tree of {}: the owner's git there runs that repository's hooks and its relative programs from this folder",
                path.display(),
                wt.display(),
                owner.display()
            ),
            details!("target" => target.clone(), "leaves_workspace" => !target.starts_with(root), "same_repository" => true, "work_tree" => owner),
        );
        // One finding for one `.git` file: the "outside the workspace" and
        // nested-repository findings below would name it again at a lower level. The
        // repository behind it is audited with the walk, or here when it lies outside.
        if !target.starts_with(root) && looks_like_git_dir(&target) {
            audit_repository(r, Some(wt), &target, root);
        }
        return;
    }
    if !target.starts_with(root) {
        r.add(
            &rules::GITFILE_REDIRECT,
            path,
            Some(wt),
            format!(
                "{}: `.git` file points to {}, outside the workspace",
                path.display(),
                target.display()
            ),
            details!("target" => target, "leaves_workspace" => true),
        );
    } else if enclosing.is_some() {
        r.add(
            &rules::NESTED_REPOSITORY,
            wt,
            enclosing,
            format!(
                "{}: a `.git` file inside the work tree of {} points to {}",
                wt.display(),
                enclosing
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                target.display()
            ),
            details!("target" => target),
        );
    }
    if looks_like_git_dir(&target) {
        audit_repository(r, Some(wt), &target, root);
    }
}

/// Is `<wt>/.git` → `git_dir` a layout git itself writes, and which? A linked worktree: an
/// admin dir `<common dir>/worktrees/<id>` whose `gitdir` backlink names this very `.git`
/// file. A submodule checkout: a git dir below a `modules/` folder whose `core.worktree`
/// names this very folder. Anything else (a `.git` file naming some other git dir) is a
/// redirect, judged by [`gitfile`].
/// The work tree the git dir `target` belongs to, when that is not `wt`: `wt/.git` then makes
/// `wt` a second work tree of that repository. Called for a `.git` file that is not git's
/// own layout ([`own_layout`]). A git dir belongs to
/// - its folder's parent, when it is named `.git` (a main git dir; `core.worktree` aside);
/// - the work tree its `gitdir` backlink names, when it is a worktree entry
///   (`<common>/worktrees/<id>`);
/// - the folder `core.worktree` names in it (an absorbed submodule's git dir under
///   `modules/`, or any git dir that says where its work tree is);
/// - the enclosing work tree, when it is that one's git dir by another spelling.
///
/// A git dir that says nothing of a work tree (`git init --separate-git-dir`, a bare
/// repository) belongs to no other: the folder naming it is its work tree.
fn second_work_tree_of(wt: &Path, target: &Path, enclosing: Option<&Path>) -> Option<PathBuf> {
    if !looks_like_git_dir(target) {
        return None;
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| normalize(p));
    let here = canon(wt);
    let elsewhere = |w: PathBuf| (canon(&w) != here).then_some(w);
    if target.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees")) {
        let back = small_file(&target.join("gitdir"))?;
        let back = normalize(&target.join(back.trim_end_matches(['\n', '\r'])));
        return elsewhere(back.parent().unwrap_or(&back).to_path_buf());
    }
    let o = crate::config::Options::for_repository(None, target, target);
    let core_worktree = crate::config::enumerate(&o).ok().and_then(|en| {
        en.values()
            .iter()
            .rev()
            .find(|v| {
                v.origin.depth == 0
                    && crate::catalogue::loader::CORE_WORKTREE.matches(&v.config_key())
            })
            .map(|v| normalize(&target.join(v.text().as_ref())))
    });
    if let Some(w) = core_worktree {
        return elsewhere(w);
    }
    if target.file_name() == Some(OsStr::new(".git")) {
        return elsewhere(target.parent()?.to_path_buf());
    }
    // The enclosing work tree may lie above the audited path (`wt-check audit sub`): found
    // from the ancestors then.
    let enc = enclosing.map(Path::to_path_buf).or_else(|| {
        wt.ancestors()
            .skip(1)
            .find(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
            .map(Path::to_path_buf)
    })?;
    (canon(&enc.join(".git")) == canon(target)).then_some(enc)
}

fn own_layout(wt: &Path, git_dir: &Path) -> Option<&'static str> {
    own_layout_keyed(wt, git_dir).map(|(l, _)| l)
}

/// [`own_layout`], with a worktree entry's common dir as [`common_dir_of`] gives it (read
/// once, by the layout check: see [`git_dir_in`]); `None` for a submodule git dir.
fn own_layout_keyed(wt: &Path, git_dir: &Path) -> Option<(&'static str, Option<PathBuf>)> {
    let same = |a: &Path, b: &Path| {
        normalize(a) == normalize(b)
            || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    };
    if git_dir.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees")) {
        // A worktree entry: `HEAD`, `commondir` and `gitdir` read below one handle on the
        // admin dir. Its `gitdir` is read as `small_file` reads it (the folder opened with no
        // link from `/`): where that open fails, no answer but `None` was possible.
        let d = Dir::open_abs(git_dir).ok()?;
        let key = git_dir_in(&d, git_dir)?;
        let back = d.read_bytes(OsStr::new("gitdir"), 1 << 20).ok()?;
        let back = String::from_utf8_lossy(&back);
        // Absolute, or (worktree.useRelativePaths) relative to the admin dir.
        let back = git_dir.join(back.trim_end_matches(['\n', '\r']));
        return same(&back, &wt.join(".git")).then_some(("linked worktree", Some(key)));
    }
    if !looks_like_git_dir(git_dir) {
        return None;
    }
    // git never writes a `commondir` in a submodule git dir.
    if git_dir.components().any(|c| c.as_os_str() == "modules")
        && std::fs::symlink_metadata(git_dir.join("commondir")).is_err()
    {
        let o = crate::config::Options::for_repository(None, git_dir, git_dir);
        let en = crate::config::enumerate(&o).ok()?;
        let v = en.values().iter().rev().find(|v| {
            v.origin.depth == 0 && crate::catalogue::loader::CORE_WORKTREE.matches(&v.config_key())
        })?;
        return same(&git_dir.join(v.text().as_ref()), wt).then_some(("submodule checkout", None));
    }
    None
}

/// The common dir of a git dir: the one its `commondir` file names, or itself.
fn common_dir_of(git_dir: &Path) -> PathBuf {
    match small_file(&git_dir.join("commondir")) {
        Some(t) => normalize(&git_dir.join(t.trim_end_matches(['\n', '\r']))),
        None => git_dir.to_path_buf(),
    }
}

/// One repository: its git dir (and common dir), hooks, config, includes, redirects,
/// worktree entries, submodule git dirs, state files.
fn audit_repository(r: &mut Report, work_tree: Option<&Path>, git_dir: &Path, root: &Path) {
    audit_repository_in(r, work_tree, git_dir, root, None, None);
}

/// [`audit_repository`]; `shared`: the baseline's one audit ([`audit_baseline`]);
/// `common_key`: a worktree entry's common dir as [`common_dir_of`] gives it, when the
/// caller has read it ([`own_layout_keyed`]).
fn audit_repository_in(
    r: &mut Report,
    work_tree: Option<&Path>,
    git_dir: &Path,
    root: &Path,
    shared: Option<Shared>,
    common_key: Option<PathBuf>,
) {
    // Once per common dir: a linked worktree's and its main work tree's hooks and config are
    // the same files.
    // A main git dir is its own key (a `commondir` there is a finding, not a share).
    let key = if git_dir.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees")) {
        common_key.unwrap_or_else(|| common_dir_of(git_dir))
    } else {
        git_dir.to_path_buf()
    };
    if r.audited.contains(&key) {
        return;
    }
    r.audited.push(key);
    let repo = work_tree.unwrap_or(git_dir).to_path_buf();
    r.repositories.push(repo.clone());
    let repo = Some(repo.as_path());
    let common_dir = own_common_dir(r, git_dir, repo);
    if let Some(mut s) = shared {
        // The baseline's one audit for `wt-check check` ([`audit_baseline`]): its caller keeps
        // only what lies outside the common dir, whose files the comparison reads and sweeps
        // itself; the rest is not looked at twice.
        s.common_dir.clone_from(&common_dir);
        config(r, work_tree, git_dir, &common_dir, repo, root, Some(&s));
        // The submodule git dirs, as taken as audited by the walks (a planted `commondir`
        // in one makes it a repository of its own, whose findings name it: inside too).
        for m in module_dirs(r, &common_dir.join("modules"), repo, 0) {
            r.audited.push(m);
        }
        return;
    }
    // FIFOs, sockets, devices (the reads below never block on one: `Dir` and the config
    // reader open without blocking and refuse what is not a regular file).
    let sp = special::sweep(git_dir);
    for (p, kind) in &sp.found {
        r.add(
            special_rule(kind),
            p,
            repo,
            format!(
                "{}: a {kind} in a git dir: {}",
                p.display(),
                special::harm(kind)
            ),
            details!("kind" => *kind),
        );
    }
    if let Some((p, why)) = sp.incomplete {
        r.add(
            &rules::INCOMPLETE,
            &p,
            repo,
            format!("{}: {why}", p.display()),
            Map::new(),
        );
    }
    let gd = match Dir::open_abs(git_dir) {
        Ok(d) => d,
        Err(e) => {
            r.incomplete_at(git_dir, repo, e);
            return;
        }
    };
    git_dir_hooks(r, &common_dir.join("hooks"), repo);
    config(r, work_tree, git_dir, &common_dir, repo, root, None);
    state_files(r, &gd, git_dir, repo);
    index_entries(r, git_dir, repo);
    if common_dir != git_dir {
        if let Ok(c) = Dir::open_abs(&common_dir) {
            state_files(r, &c, &common_dir, repo);
        }
        index_entries(r, &common_dir, repo);
    }
    rerere_state(r, &common_dir, repo);
    // Submodule git dirs: their hooks and state (their config is enumerated above).
    for m in module_dirs(r, &common_dir.join("modules"), repo, 0) {
        if std::fs::symlink_metadata(m.join("commondir")).is_ok() {
            // git never writes a `commondir` in a submodule git dir: it takes config and
            // hooks from the folder it names. Audited as the repository it makes.
            audit_repository(r, None, &m, root);
            continue;
        }
        r.audited.push(m.clone());
        git_dir_hooks(r, &m.join("hooks"), repo);
        index_entries(r, &m, repo);
        if let Ok(d) = Dir::open_abs(&m) {
            state_files(r, &d, &m, repo);
        }
        rerere_state(r, &m, repo);
    }
    // Worktree entries against git's layout (crate::layout: gitdir backlink, commondir,
    // HEAD, unexpected names, links, duplicates).
    match crate::layout::worktree_entries(&common_dir) {
        Ok(entries) => {
            for e in entries {
                let p = e.admin_dir.clone();
                if p != git_dir {
                    index_entries(r, &p, repo);
                }
                for why in &e.problems {
                    // A worktree folder that is gone is git's "prunable", not a redirect.
                    if matches!(why, crate::layout::Problem::BacklinkMissing { .. }) {
                        continue;
                    }
                    r.add(
                        &rules::WORKTREE_ENTRY,
                        &p,
                        repo,
                        format!("{}: {why}", p.display()),
                        details!("id" => e.id, "problem" => why),
                    );
                }
                if e.names.iter().any(|n| n == "rebase-merge") {
                    if let Ok(d) = Dir::open_abs(&p) {
                        state_files(r, &d, &p, repo);
                    }
                }
            }
        }
        Err(e) if e.is_link() => {
            let p = e.path().to_path_buf();
            r.add(
                &rules::WORKTREE_ENTRY,
                &p,
                repo,
                format!(
                    "{}: a symbolic link where git keeps worktree entries (not followed)",
                    p.display()
                ),
                Map::new(),
            );
        }
        Err(e) => r.incomplete_at(e.path(), repo, &e),
    }
}

/// The common dir git uses with `git_dir`: the one its `commondir` names, or itself; a
/// `commondir` in a main git dir (git never writes one there) is a finding.
fn own_common_dir(r: &mut Report, git_dir: &Path, repo: Option<&Path>) -> PathBuf {
    let commondir = git_dir.join("commondir");
    let in_worktrees = git_dir.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees"));
    let mut common_dir = git_dir.to_path_buf();
    if let Ok(Some(st)) = Dir::open_abs(git_dir).and_then(|d| d.stat(OsStr::new("commondir"))) {
        let text = small_file(&commondir).unwrap_or_default();
        let target = normalize(&git_dir.join(text.trim_end_matches(['\n', '\r'])));
        if !in_worktrees {
            r.add(&rules::COMMONDIR_IN_MAIN, &commondir, repo, format!(
                "{}: `commondir` in a git dir that is not a linked worktree's ({}): git takes config, hooks, objects and refs from {}",
                commondir.display(), st.kind.name(), target.display()), details!("target" => target));
        }
        common_dir = target;
    }
    common_dir
}

/// The index of one git dir (main, linked worktree's admin dir, submodule's) when it holds
/// entries git's `verify_path` refuses ([`crate::index_paths`]): one GW020 finding, the first
/// entries in the details. An index that cannot be read as git reads it is incomplete, not
/// clean.
fn index_entries(r: &mut Report, dir: &Path, repo: Option<&Path>) {
    const SHOWN: usize = 5;
    let name = OsStr::new("index");
    let path = dir.join(name);
    let index = match Dir::open_abs(dir).and_then(|d| {
        crate::index_paths::read_shared(&d, name, crate::integrity::embedded::INDEX_LIMIT)
    }) {
        Ok(i) => i,
        Err(e) if e.is_not_found() => return,
        Err(e) => return r.incomplete_at(&path, repo, e),
    };
    let bad = match index.bad_entries() {
        Ok(b) => b,
        Err(why) => return r.incomplete_at(&path, repo, why),
    };
    let Some(first) = bad.first() else { return };
    let entries: Vec<Value> = bad
        .iter()
        .take(SHOWN)
        .map(|b| {
            serde_json::json!({
                "path": String::from_utf8_lossy(&b.path),
                "mode": format!("{:o}", b.mode),
                "why": b.invalid.why(),
            })
        })
        .collect();
    r.add(
        &rules::INDEX_ENTRY_PATH,
        &path,
        repo,
        format!(
            "{}: {} entr{} git refuses to add, e.g. {:?}: {}",
            path.display(),
            bad.len(),
            if bad.len() == 1 { "y" } else { "ies" },
            String::from_utf8_lossy(&first.path),
            first.invalid.why()
        ),
        details!("count" => bad.len(), "entries" => entries),
    );
}

/// Submodule git dirs below `modules/` (any nesting of names and submodules), no links.
fn module_dirs(r: &mut Report, dir: &Path, repo: Option<&Path>, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let d = match Dir::open_abs(dir) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return out,
        Err(e) => {
            r.incomplete_at(dir, repo, e);
            return out;
        }
    };
    if depth > crate::integrity::MODULE_DEPTH * 4 {
        r.incomplete_at(dir, repo, "submodule git dirs nested too deep; not walked");
        return out;
    }
    let names = match d.list() {
        Ok(n) => n,
        Err(e) => {
            r.incomplete_at(dir, repo, e);
            return out;
        }
    };
    for n in names {
        let p = dir.join(&n);
        match d.stat(&n) {
            Ok(Some(st)) if st.kind == Kind::Dir => {}
            Ok(Some(st)) if st.kind == Kind::Link => {
                r.add(
                    &rules::GITFILE_REDIRECT,
                    &p,
                    repo,
                    format!("{}: a symbolic link among submodule git dirs", p.display()),
                    Map::new(),
                );
                continue;
            }
            _ => continue,
        }
        let is_git = looks_like_git_dir(&p) || p.join("config").is_file();
        if is_git {
            out.push(p.clone());
            out.extend(module_dirs(r, &p.join("modules"), repo, depth + 1));
        } else {
            out.extend(module_dirs(r, &p, repo, depth + 1));
        }
    }
    out
}

/// An executable entry of a hooks folder.
struct HookFile {
    name: String,
    path: PathBuf,
    /// Named after a hook event: git runs it.
    event: bool,
    kind: Kind,
    mode: u32,
    /// `executable file (mode 755)` or `symbolic link to …`.
    what: String,
}

/// What a hooks folder holds: executable, non-sample files and links. `Err(finding)` when
/// the folder (or one on its path) is a link; not-found is an empty folder.
fn hooks_in(r: &mut Report, dir: &Path, repo: Option<&Path>) -> Result<Vec<HookFile>, PathBuf> {
    let d = match Dir::open_abs(dir) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(NfError::Link { path: p }) => return Err(p),
        Err(e) => {
            r.incomplete_at(dir, repo, e);
            return Ok(Vec::new());
        }
    };
    let names = match d.list() {
        Ok(n) => n,
        Err(e) => {
            r.incomplete_at(dir, repo, e);
            return Ok(Vec::new());
        }
    };
    let mut out = Vec::new();
    for n in names {
        let name = n.to_string_lossy().into_owned();
        let p = dir.join(&n);
        let st = match d.stat(&n) {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(e) => {
                r.incomplete_at(&p, repo, e);
                continue;
            }
        };
        let runs = match st.kind {
            Kind::File => st.mode & 0o111 != 0,
            Kind::Link => true,
            _ => false,
        };
        if !runs || name.ends_with(".sample") {
            continue;
        }
        let what = if st.kind == Kind::Link {
            format!(
                "symbolic link to {}",
                d.read_link(&n)
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default()
            )
        } else {
            format!("executable file (mode {:o})", st.mode)
        };
        out.push(HookFile {
            event: catalogue::HOOK_EVENTS.contains(&name.as_str()),
            name,
            path: p,
            kind: st.kind,
            mode: st.mode,
            what,
        });
    }
    Ok(out)
}

/// The hooks folder of a git dir: each executable named after a hook event is an error of
/// its own (each is a program planted on its own); any other executable is a note (git
/// never runs it).
fn git_dir_hooks(r: &mut Report, dir: &Path, repo: Option<&Path>) {
    let hooks = match hooks_in(r, dir, repo) {
        Ok(h) => h,
        Err(p) => {
            r.add(
                &rules::HOOK_PLANTED,
                &p,
                repo,
                format!(
                    "{}: the hooks folder (or a folder on its path) is a symbolic link",
                    p.display()
                ),
                Map::new(),
            );
            return;
        }
    };
    for h in hooks {
        let level = if h.event {
            Severity::Error
        } else {
            Severity::Note
        };
        r.add_level(&rules::HOOK_PLANTED, level, &h.path, repo, format!(
            "{}: {}{}", h.path.display(), h.what,
            if h.event { format!("; git runs it as the `{}` hook", h.name) } else { "; not a hook event name: git never runs it".into() }),
            details!("hook" => h.name, "event" => h.event, "kind" => h.kind.name(), "mode" => format!("{:o}", h.mode)));
    }
}

/// Can others than the owner write `p` (the file itself, or replace it in its folder), or
/// create it when it is missing? Such a file is in the agent's reach wherever it lies
/// (`/tmp/x.cfg`).
fn others_can_write(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| m.permissions().mode())
    };
    if let Some(m) = mode(p) {
        // The file, or its folder without the sticky bit (anyone may replace it).
        return m & 0o002 != 0
            || p.parent()
                .and_then(mode)
                .is_some_and(|d| d & 0o002 != 0 && d & 0o1000 == 0);
    }
    // Missing: whoever may create it in the nearest folder that exists.
    p.ancestors()
        .skip(1)
        .find_map(mode)
        .is_some_and(|d| d & 0o002 != 0)
}

/// Where the agent can write, as far as the audit can tell. The owner's files are those in
/// the owner's home (`$HOME`) outside every audited path and repository, and files of
/// another user (root's `/etc`) — in both cases only when others than their owner cannot
/// write them. Everything else is in the agent's reach: the audit cannot see the sandbox,
/// so a place it cannot place is not trusted (fail closed).
struct Reach<'a> {
    roots: Vec<&'a Path>,
    home: Option<PathBuf>,
}

impl Reach<'_> {
    fn contains(&self, p: &Path) -> bool {
        self.why(p).is_some()
    }

    /// Why `p` is in the agent's reach, in words; `None`: the owner's.
    fn why(&self, p: &Path) -> Option<&'static str> {
        use std::os::unix::fs::MetadataExt;
        let p = normalize(p);
        if self.roots.iter().any(|r| p.starts_with(r)) {
            return Some("inside the audited path");
        }
        if others_can_write(&p) {
            return Some("others than the owner can write it");
        }
        if self.home.as_ref().is_some_and(|h| p.starts_with(h)) {
            return None;
        }
        let ours = nix::unistd::geteuid().as_raw();
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.uid() != ours && ours != 0 => None,
            _ => Some("outside the owner's home: the audit cannot tell who writes it"),
        }
    }
}

/// Armed keys, includes, `core.hooksPath`, promisors: one finding per root cause.
///
/// * An include directive is judged by where its target lies ([`rules::INCLUDE_IN_WORK_TREE`],
///   [`rules::INCLUDE_OUTSIDE`]), never also as an armed key; `core.hooksPath` likewise
///   ([`rules::HOOKS_PATH`], with the hooks it runs in its details).
/// * A value from a file outside the agent's reach ([`Reach`]) is the owner's: listed in the
///   details of the include that brings it, not a finding of its own.
/// * Remote URLs are classified as the catalogue does ([`catalogue::classify_url`]): https,
///   ssh and scp-form URLs are not findings; a local path is a note unless a lazy fetch uses
///   it (a promisor: [`rules::PROMISOR_TRANSPORT`]).
/// * `core.worktree` naming the work tree audited is git's own layout.
fn config(
    r: &mut Report,
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
    repo: Option<&Path>,
    root: &Path,
    shared: Option<&Shared>,
) {
    use crate::catalogue::loader;
    let mut o = crate::config::Options::for_repository(work_tree, git_dir, common_dir);
    o.linked_worktrees = true;
    o.submodules = crate::config::Submodules::Walk;
    o.home = std::env::var_os("HOME").map(PathBuf::from);
    let en = match crate::config::enumerate(&o) {
        Ok(e) => e,
        Err(e) => {
            r.incomplete_at(&common_dir.join("config"), repo, e);
            return;
        }
    };
    // The main work tree of a repository with a `.git` folder: a linked worktree's
    // repository has its work tree there too.
    let main_wt = (common_dir.file_name() == Some(OsStr::new(".git")))
        .then(|| common_dir.parent())
        .flatten();
    let work_trees: Vec<&Path> = [work_tree, main_wt].into_iter().flatten().collect();
    let mut roots = vec![root, git_dir, common_dir];
    roots.extend(work_tree);
    // The shared audit: every walked root in reach.
    if let Some(s) = shared {
        roots.extend(s.roots.iter().map(PathBuf::as_path));
    }
    let reach = Reach {
        roots,
        home: o.home.as_deref().map(normalize),
    };
    let chain = |v: &crate::config::Value| -> Vec<String> {
        v.origin
            .include_chain
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    };
    // Partial-clone promisors: a lazy fetch runs their transport.
    let mut promisors: Vec<String> = Vec::new();
    for v in en.values() {
        if v.section.eq_ignore_ascii_case("remote")
            && v.name.eq_ignore_ascii_case("promisor")
            && v.as_bool() == Some(true)
        {
            promisors.extend(v.subsection.clone());
        }
        if loader::PARTIAL_CLONE.matches(&v.config_key()) {
            promisors.push(v.text().into_owned());
        }
    }
    promisors.sort();
    promisors.dedup();
    // Armed values of files outside the agent's reach, by file (the owner's).
    let mut owners: Vec<(PathBuf, String)> = Vec::new();
    for a in en.armed() {
        let v = a.value;
        let key = v.config_key();
        let mut level = a
            .entries
            .iter()
            .map(|e| e.severity)
            .max()
            .unwrap_or(Severity::Warning);
        // Note-level rows (`core.bare`, …) are what every repository sets: not findings.
        if level == Severity::Note {
            continue;
        }
        // Keys judged by their own rule: includes by their target, `core.hooksPath` with
        // the hooks it runs, promisor markers with the URL a lazy fetch uses (GW012; a
        // promisor with an https or ssh URL runs nothing).
        if loader::INCLUDE_PATH.matches(&key)
            || loader::INCLUDE_IF_PATH.matches(&key)
            || loader::HOOKS_PATH.matches(&key)
            || loader::PARTIAL_CLONE.matches(&key)
            || (v.section.eq_ignore_ascii_case("remote") && v.name.eq_ignore_ascii_case("promisor"))
        {
            continue;
        }
        if !reach.contains(&v.origin.file) {
            owners.push((normalize(&v.origin.file), v.key()));
            continue;
        }
        // The shared audit: a value of a file in the common dir is the comparison's.
        if shared.is_some() && normalize(&v.origin.file).starts_with(common_dir) {
            continue;
        }
        // git's own layout: `core.worktree` naming the work tree git uses with this git
        // dir (a submodule's git dir under `modules/`, an absorbed submodule audited
        // directly).
        if loader::CORE_WORKTREE.matches(&key) {
            let base = match &v.origin.scope {
                crate::config::Scope::Submodule { git_dir: m } => m.as_path(),
                crate::config::Scope::Worktree => git_dir,
                _ => common_dir,
            };
            let t = normalize(&base.join(v.text().as_ref()));
            // The main work tree of a repository with a `.git` folder.
            let own = match &v.origin.scope {
                crate::config::Scope::Submodule { git_dir: m } => {
                    !t.starts_with(common_dir)
                        && (own_layout(&t, m).is_some()
                            || [work_tree, main_wt]
                                .into_iter()
                                .flatten()
                                .any(|w| t.starts_with(w)))
                }
                _ => work_tree.is_some_and(|w| t == normalize(w)),
            };
            if own {
                continue;
            }
        }
        let mut danger = None;
        if let Some((_, at)) = catalogue::URL_KEYS.iter().find(|(p, _)| p.matches(&key)) {
            let url = match at {
                catalogue::UrlIn::Value => v.text().into_owned(),
                catalogue::UrlIn::Subsection => v.subsection.clone().unwrap_or_default(),
                catalogue::UrlIn::NameOrUrl => {
                    let t = v.text();
                    if t == "." || !(t.contains('/') || t.contains(':')) {
                        continue;
                    }
                    t.into_owned()
                }
            };
            let is_remote_url = v.section.eq_ignore_ascii_case("remote")
                && (v.name.eq_ignore_ascii_case("url") || v.name.eq_ignore_ascii_case("pushurl"));
            let promisor = is_remote_url
                && v.name.eq_ignore_ascii_case("url")
                && v.subsection.as_ref().is_some_and(|n| promisors.contains(n));
            match catalogue::classify_url(&url) {
                // https, ssh, scp form: a remote URL is no finding; a rewrite to one
                // (`url.<base>.insteadOf`) runs nothing but is worth knowing.
                None if matches!(at, catalogue::UrlIn::Subsection) => level = Severity::Note,
                None => continue,
                // Reported once, as the promisor's transport (GW012).
                Some(_) if promisor => continue,
                Some(catalogue::UrlDanger::Local) if is_remote_url => level = Severity::Note,
                Some(_) => {}
            }
            danger = catalogue::classify_url(&url);
        }
        let row = a.entries[0];
        let via = if v.origin.is_include() {
            format!(" (included: {})", chain(v).join(" -> "))
        } else {
            String::new()
        };
        // What runs, on which of the owner's commands.
        let what = match danger {
            Some(d) => format!("{}; on {}", url_danger_words(d), row.trigger),
            None => format!("{}; on {}", row.runs, row.trigger),
        };
        r.add_level(
            &rules::ARMED_KEY,
            level,
            &v.origin.file,
            repo,
            format!(
                "{}:{}: {} = {:?}: {what}{via}",
                v.origin.file.display(),
                v.line,
                v.key(),
                v.text(),
            ),
            details!(
                "key" => v.key(), "value" => v.text(), "line" => v.line,
                "scope" => v.origin.scope.git_word(), "include_chain" => chain(v),
                "effective" => en.is_effective(v), "runs" => row.runs, "trigger" => row.trigger,
                "research" => row.research, "url" => danger,
            ),
        );
    }
    // Include targets: into the work tree (the agent writes what git reads), elsewhere in
    // the agent's reach, or the owner's file.
    for f in en.files() {
        if !f.origin.is_include() {
            continue;
        }
        let t = normalize(&f.origin.file);
        let in_wt = work_trees
            .iter()
            .any(|w| t.starts_with(w) && !t.starts_with(git_dir) && !t.starts_with(common_dir));
        let in_git = t.starts_with(common_dir) || t.starts_with(git_dir);
        let chain: Vec<String> = f
            .origin
            .include_chain
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let missing = matches!(f.state, crate::config::FileState::Missing);
        if in_wt {
            r.add(&rules::INCLUDE_IN_WORK_TREE, &t, repo, format!(
                "{}: include target inside the work tree{} (the agent can write it): {}",
                t.display(), if missing { ", missing now" } else { "" }, chain.join(" -> ")),
                details!("include_chain" => chain, "missing" => missing, "condition" => f.origin.condition));
        } else if !in_git {
            let writable = reach.why(&t);
            let brings: Vec<&str> = owners
                .iter()
                .filter(|(file, _)| *file == t)
                .map(|(_, k)| k.as_str())
                .collect();
            let level = if writable.is_some() {
                Severity::Warning
            } else {
                Severity::Note
            };
            r.add_level(&rules::INCLUDE_OUTSIDE, level, &t, repo, format!(
                "{}: include target outside the repository{}{}: {}",
                t.display(), if missing { ", missing now" } else { "" },
                match writable { Some(w) => format!(" ({w})"), None if brings.is_empty() => "; the owner's file".into(), None => "; the owner's file, whose own settings run".into() },
                chain.join(" -> ")),
                details!("include_chain" => chain, "missing" => missing, "condition" => f.origin.condition,
                    "in_reach" => writable, "brings" => brings));
        }
    }
    // core.hooksPath: one finding per value, with the hooks its folder holds.
    for v in en
        .values()
        .iter()
        .filter(|v| loader::HOOKS_PATH.matches(&v.config_key()))
    {
        if !reach.contains(&v.origin.file) {
            continue;
        }
        let raw = v.text().into_owned();
        let target = if let Some(rest) = raw.strip_prefix("~/") {
            o.home.clone().unwrap_or_default().join(rest)
        } else if Path::new(&raw).is_absolute() {
            PathBuf::from(&raw)
        } else {
            // Relative to where hooks run: the work tree top, or the git dir when bare.
            work_tree.unwrap_or(git_dir).join(&raw)
        };
        let target = normalize(&target);
        let in_wt = work_trees.iter().any(|w| {
            target.starts_with(w) && !target.starts_with(git_dir) && !target.starts_with(common_dir)
        });
        let writable = in_wt || reach.contains(&target);
        let rule = if in_wt {
            &rules::HOOKS_PATH_IN_WORK_TREE
        } else {
            &rules::HOOKS_PATH
        };
        let (hooks, link) = match hooks_in(r, &target, repo) {
            Ok(h) => (h, None),
            Err(p) => (Vec::new(), Some(p)),
        };
        let events: Vec<&str> = hooks
            .iter()
            .filter(|h| h.event)
            .map(|h| h.name.as_str())
            .collect();
        let others: Vec<&str> = hooks
            .iter()
            .filter(|h| !h.event)
            .map(|h| h.name.as_str())
            .collect();
        // Error: a program the agent can write runs. Warning: a folder the agent can fill,
        // or the owner's hooks run from where the repository's config points. Note: the
        // owner's empty folder.
        let level = match (writable || link.is_some(), !events.is_empty()) {
            (true, true) => Severity::Error,
            (true, false) | (false, true) => Severity::Warning,
            (false, false) => Severity::Note,
        };
        let runs = if events.is_empty() {
            "no hook there now".to_owned()
        } else {
            format!("runs {}", events.join(", "))
        };
        r.add_level(rule, level, &v.origin.file, repo, format!(
            "{}:{}: core.hooksPath = {raw:?} → {}: {runs}{}{}", v.origin.file.display(), v.line, target.display(),
            if in_wt { " (inside the work tree: anything written there runs as a hook)" } else if writable { " (others than the owner can write there)" } else { "" },
            if link.is_some() { "; the folder (or one on its path) is a symbolic link" } else { "" }),
            details!("value" => raw, "target" => target, "in_work_tree" => in_wt, "scope" => v.origin.scope.git_word(),
                "effective" => en.is_effective(v), "hooks" => events, "other_executables" => others, "link" => link));
    }
    named_special_files(
        r,
        work_tree,
        git_dir,
        common_dir,
        &work_trees,
        &reach,
        shared,
    );
    // Partial-clone promisors with local or custom transports (lazy fetch runs them).
    for name in promisors {
        for u in en.values().iter().filter(|v| {
            v.section.eq_ignore_ascii_case("remote")
                && v.subsection.as_deref() == Some(name.as_str())
                && v.name.eq_ignore_ascii_case("url")
        }) {
            let url = u.text().into_owned();
            if let Some(kind) = catalogue::classify_url(&url) {
                r.add(
                    &rules::PROMISOR_TRANSPORT,
                    &u.origin.file,
                    repo,
                    format!(
                    "{}:{}: promisor remote `{name}` has url {url:?} ({}): a lazy fetch runs it",
                    u.origin.file.display(), u.line, url_danger_words(kind)),
                    details!("remote" => name, "url" => url, "danger" => kind),
                );
            }
        }
    }
}

/// Files the config names by path that git opens with a blocking open (`core.excludesFile`,
/// `blame.ignoreRevsFile`, `commit.template`, … : [`catalogue::PATH_KEYS`]), resolved as git
/// does from the top of each work tree: a FIFO, socket or device there, or a link to one, in
/// the agent's reach hangs or feeds the owner's git (seventh red-team pass, R7-4). GW021,
/// without a repository (`wt-check check` reports it as the agent's, `--restore` sets it
/// aside). Nothing is opened (`crate::named_paths::special_at`: `lstat`/`stat` only).
/// The rule of an entry the special-file sweep found: a link in the ref namespace has its
/// own ([`rules::REF_LINK`]), a FIFO, socket or device [`rules::SPECIAL_FILE`].
fn special_rule(kind: &str) -> &'static rules::Rule {
    if kind == special::REF_LINK {
        &rules::REF_LINK
    } else {
        &rules::SPECIAL_FILE
    }
}

fn named_special_files(
    r: &mut Report,
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
    work_trees: &[&Path],
    reach: &Reach<'_>,
    shared: Option<&Shared>,
) {
    // The owner's files too (a global `core.excludesFile = .myignore` is the common form).
    let o = crate::named_paths::owner_options(work_tree, git_dir, common_dir);
    let en = match crate::config::enumerate(&o) {
        Ok(e) => e,
        Err(e) => {
            r.incomplete_at(&common_dir.join("config"), work_tree.or(Some(git_dir)), e);
            return;
        }
    };
    let pairs: Vec<(String, Option<String>, &crate::config::Value)> = en
        .values()
        .iter()
        .filter(|v| catalogue::path_key(&v.key()).is_some())
        .map(|v| (v.key(), v.value.as_ref().map(|_| v.text().into_owned()), v))
        .collect();
    if pairs.is_empty() {
        return;
    }
    let mut tops: Vec<&Path> = if work_trees.is_empty() {
        vec![git_dir]
    } else {
        work_trees.to_vec()
    };
    // The shared audit: from every work tree of the repository too, each in the agent's
    // reach as an audited path is (the per-root audits looked from the main work tree and
    // the first linked worktree their walk met).
    let linked = shared.map(Shared::linked_worktrees).unwrap_or_default();
    for t in &linked {
        if !tops.contains(&t.as_path()) {
            tops.push(t);
        }
    }
    for top in tops {
        let named = crate::named_paths::named(
            pairs.iter().map(|(k, v, _)| (k.as_str(), v.as_deref())),
            top,
            reach.home.as_deref(),
        );
        for n in named {
            if !crate::named_paths::opened_as_file(n.row) {
                continue;
            }
            // In an audited root, or elsewhere in the agent's reach; never the system's
            // device and process folders (`/dev/stdin` is the owner's choice).
            let system = ["/dev", "/proc", "/sys"]
                .iter()
                .any(|d| n.path.starts_with(d));
            if system || !(reach.contains(&n.path) || linked.iter().any(|t| n.path.starts_with(t)))
            {
                continue;
            }
            let Some(sp) = crate::named_paths::special_at(&n.path) else {
                continue;
            };
            if r.findings
                .iter()
                .any(|f| f.rule == rules::SPECIAL_FILE.id && f.path == n.path)
            {
                continue;
            }
            let Some((_, _, v)) = pairs.iter().find(|(k, _, _)| *k == n.key) else {
                continue;
            };
            let what = match &sp.link_to {
                Some(t) => format!("a link to a {} ({})", sp.kind, t.display()),
                None => format!("a {}", sp.kind),
            };
            r.add(
                &rules::SPECIAL_FILE,
                &n.path,
                None,
                format!(
                    "{}: {what} where `{}` ({}:{}) names a file: {} with a blocking open, and hangs",
                    n.path.display(),
                    n.key,
                    v.origin.file.display(),
                    v.line,
                    crate::named_paths::how(n.row)
                ),
                details!("kind" => sp.kind, "key" => n.key, "origin" => v.origin.file,
                    "link_to" => sp.link_to, "top" => top),
            );
        }
    }
}

/// A URL's danger in words.
fn url_danger_words(d: catalogue::UrlDanger) -> &'static str {
    match d {
        catalogue::UrlDanger::Ext => "ext:: runs a command line",
        catalogue::UrlDanger::Helper => "<helper>:: runs git-remote-<helper>",
        catalogue::UrlDanger::DashLeading => "a leading dash is taken as an option",
        catalogue::UrlDanger::Local => "a local path: upload-pack runs there",
        catalogue::UrlDanger::ControlChar => "a control character",
    }
}

/// In-progress operations whose state names a program, strategy, options or signing key
/// (`crate::integrity::inprogress`, the same judgement `wt-check check` makes: `exec` lines
/// in every form git's todo parser accepts, strategies, `-S<key>`, `git apply` options),
/// `objects/info/alternates`, `info/attributes` driver selections, in one git dir.
fn state_files(r: &mut Report, d: &Dir, git_dir: &Path, repo: Option<&Path>) {
    let read = |rel: &str| -> Result<Option<Vec<u8>>, NfError> {
        let (parent, name) = match rel.rfind('/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => ("", rel),
        };
        let dir = match d.walk(Path::new(parent)) {
            Ok(x) => x,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        match dir.stat(OsStr::new(name))? {
            None => Ok(None),
            Some(_) => dir.read(OsStr::new(name), 16 << 20).map(|(b, _)| Some(b)),
        }
    };
    let (armed, errors) = crate::integrity::inprogress::judge(d);
    for e in errors {
        r.incomplete_at(e.path(), repo, &e);
    }
    for a in armed {
        let p = git_dir.join(&a.file);
        let at = match a.line {
            Some(l) => format!("{}:{l}", p.display()),
            None => p.display().to_string(),
        };
        let rule = if a.names == catalogue::StateNames::TodoExec {
            &rules::REBASE_EXEC
        } else {
            &rules::SEQUENCER_STATE
        };
        r.add_level(
            rule,
            a.severity,
            &p,
            repo,
            format!("{at}: {}", a.why),
            details!("file" => a.file, "line" => a.line, "value" => a.value, "names" => a.names),
        );
    }
    let p = git_dir.join("objects/info/alternates");
    match read("objects/info/alternates") {
        Ok(Some(b)) => {
            let lines: Vec<String> = String::from_utf8_lossy(&b)
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(str::to_owned)
                .collect();
            if !lines.is_empty() {
                r.add(
                    &rules::ALTERNATES,
                    &p,
                    repo,
                    format!(
                        "{}: objects borrowed from {}",
                        p.display(),
                        lines.join(", ")
                    ),
                    details!("alternates" => lines),
                );
            }
        }
        Ok(None) => {}
        Err(e) => r.incomplete_at(&p, repo, e),
    }
    let p = git_dir.join("info/attributes");
    match read("info/attributes") {
        Ok(Some(b)) => {
            for (i, line) in String::from_utf8_lossy(&b).lines().enumerate() {
                let l = line.trim();
                if l.is_empty() || l.starts_with('#') {
                    continue;
                }
                for tok in l.split_whitespace().skip(1) {
                    let Some((attr, val)) = tok.split_once('=') else {
                        continue;
                    };
                    if let Some(kind) = catalogue::DriverKind::from_attribute(attr) {
                        r.add(&rules::ATTRIBUTES_DRIVER, &p, repo, format!(
                            "{}:{}: `{tok}` selects the {} driver `{val}` (runs what config names for it)",
                            p.display(), i + 1, kind.name()),
                            details!("line" => i + 1, "attribute" => attr, "driver" => val));
                    }
                }
            }
        }
        Ok(None) => {}
        Err(e) => r.incomplete_at(&p, repo, e),
    }
}

/// rerere's state in the common dir (or submodule git dir) `common`: its recorded
/// resolutions, a `MERGE_RR` naming conflicts (its own and each `worktrees/<id>/`'s), and any
/// name there git would not make (`integrity::rerere::scan` with no pin: everything counts
/// as new). One finding per `rr-cache` (a warning: an owner with `rerere.enabled` has them),
/// one per `MERGE_RR`, one per odd name (an error).
fn rerere_state(r: &mut Report, common: &Path, repo: Option<&Path>) {
    let f = crate::integrity::rerere::scan(&[common.to_path_buf()], (i64::MIN, 0));
    let rule = &rules::RERERE_STATE;
    if !f.recorded.is_empty() {
        let rr = common.join("rr-cache");
        let ids: Vec<String> = f
            .recorded
            .iter()
            .filter_map(|e| e.path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        let mut paths: Vec<PathBuf> = vec![rr.clone()];
        for e in &f.recorded {
            paths.push(e.path.clone());
            paths.extend(e.files.iter().map(|n| e.path.join(n)));
        }
        let changed = last_changed(&paths);
        r.add(
            rule,
            &rr,
            repo,
            format!(
                "{}: {} recorded conflict resolution(s), last changed {changed}: git replays each into the owner's next merge, rebase or cherry-pick of the same conflict",
                rr.display(),
                ids.len()
            ),
            details!("ids" => ids.iter().take(20).collect::<Vec<_>>(), "count" => ids.len(), "last_changed" => changed),
        );
    }
    for p in &f.merge_rr {
        // With what its records make rerere read: a preimage planted or a named file written
        // since changes the finding (twenty-seventh red-team pass, W1/W2).
        let mut inputs = vec![p.clone()];
        inputs.extend(crate::integrity::rerere::merge_rr_inputs(
            p.parent().unwrap_or(p),
            p,
        ));
        let changed = last_changed(&inputs);
        r.add(
            rule,
            p,
            repo,
            format!(
                "{}: conflicts being recorded, last changed {changed}: the owner's next merge, cherry-pick or rebase records the files it names as a preimage and a resolution, and replays them",
                p.display()
            ),
            details!("last_changed" => changed),
        );
    }
    // Each record judged against its work tree and index (twenty-eighth red-team pass, W1):
    // an error refuses the pin as the lexical rule does.
    for rec in &f.records {
        let msg = format!("{}: {}", rec.merge_rr.display(), rec.why);
        let d = details!("change" => rec.change, "id" => rec.id.clone(), "record" => rec.record.clone());
        if rec.error {
            r.add_level(rule, Severity::Error, &rec.merge_rr, repo, msg, d);
        } else {
            r.add(rule, &rec.merge_rr, repo, msg, d);
        }
    }
    let odd = f
        .not_folder
        .iter()
        .map(|p| (p, "rr-cache that is a link or not a folder"))
        .chain(f.odd_entries.iter().map(|p| {
            (
                p,
                "an rr-cache entry that is a link, or holds a link, a second name of another file or something else than a file",
            )
        }))
        .chain(f.odd_merge_rr.iter().map(|p| {
            (
                p,
                "MERGE_RR that is a link, a second name of another file, not a file, or names a path git never writes (absolute, through `..`)",
            )
        }));
    for (p, what) in odd {
        r.add_level(
            rule,
            Severity::Error,
            p,
            repo,
            format!(
                "{}: {what}: git never makes one, and reads resolutions wherever it points",
                p.display()
            ),
            Map::new(),
        );
    }
    for p in &f.stray {
        r.add(
            rule,
            p,
            repo,
            format!(
                "{}: an rr-cache entry that is not a folder (git ignores it, but never makes one)",
                p.display()
            ),
            Map::new(),
        );
    }
    if let Some((p, why)) = f.incomplete {
        r.incomplete_at(&p, repo, why);
    }
}

/// The newest `ctime` of `paths` (`lstat`), RFC 3339 to the nanosecond. In a finding's
/// message it makes the finding new whenever one of them changes: `pin` accepts findings
/// below error level by their message, and `check` reports a nested repository's finding
/// that is not accepted (a resolution rewritten in an accepted `rr-cache` moves it).
fn last_changed(paths: &[PathBuf]) -> String {
    use std::os::unix::fs::MetadataExt;
    let newest = paths
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .map(|m| (m.ctime(), m.ctime_nsec()))
        .max()
        .unwrap_or((0, 0));
    let at = crate::events::rfc3339(newest.0, 0);
    format!(
        "{}.{:09}Z",
        at.trim_end_matches(".000Z"),
        newest.1.clamp(0, 999_999_999)
    )
}

/// Print the report in `format` and return the exit code.
pub fn run(paths: &[PathBuf], format: AuditFormat) -> crate::exit::Code {
    run_with(
        paths,
        &RunOptions {
            format,
            ..RunOptions::default()
        },
    )
}

/// What `wt-check audit` was asked for beyond the paths.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub format: AuditFormat,
    /// An earlier JSON or SARIF output: the findings it records are left out.
    pub baseline: Option<PathBuf>,
    /// The lowest level that makes the exit status 1.
    pub fail_on: baseline::FailOn,
    /// Which folders the workspace walk leaves out.
    pub walk: Walk,
}

/// Audit, subtract the baseline, print in the chosen format and return the exit code:
/// 2 when some part could not be read (or the baseline cannot), else 1 when a finding at
/// `fail_on` or above remains, else 0.
pub fn run_with(paths: &[PathBuf], opts: &RunOptions) -> crate::exit::Code {
    let known = match opts.baseline.as_deref().map(baseline::load).transpose() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("wt-check: {e}");
            return crate::exit::INCOMPLETE;
        }
    };
    let mut report = audit_with(paths, &opts.walk);
    let left_out = known.map_or(0, |k| baseline::subtract(&mut report, &k));
    let format = opts.format;
    let text = match format {
        AuditFormat::Human => human(&report),
        AuditFormat::Json => {
            let mut s = serde_json::to_string_pretty(&json(&report)).unwrap_or_default();
            s.push('\n');
            s
        }
        AuditFormat::Sarif => {
            let mut s = serde_json::to_string_pretty(&sarif::to_sarif(&report)).unwrap_or_default();
            s.push('\n');
            s
        }
    };
    if let Err(code) = crate::cli::print("wt-check", &text, crate::exit::INCOMPLETE) {
        return code;
    }
    if left_out > 0 {
        eprintln!("wt-check: {left_out} finding(s) left out: recorded in the baseline");
    }
    if report.repositories.is_empty() && format != AuditFormat::Human {
        // The human report says it on stdout; JSON and SARIF readers may not look.
        eprintln!("wt-check: no git repository found under the audited path(s)");
    }
    if report.incomplete() {
        crate::exit::INCOMPLETE
    } else if report
        .findings
        .iter()
        .any(|f| f.level >= opts.fail_on.level())
    {
        crate::exit::FOUND
    } else {
        crate::exit::CLEAN
    }
}

/// The JSON document (documented in `docs/wt-check.md`).
pub fn json(report: &Report) -> Value {
    serde_json::json!({
        "tool": "wt-check",
        "version": env!("CARGO_PKG_VERSION"),
        "complete": !report.incomplete(),
        "paths": report.paths,
        "repositories": report.repositories,
        "skipped_folders": report.skipped,
        "findings": report.findings.iter().map(|f| {
            let mut v = serde_json::to_value(f).unwrap_or_default();
            v["fingerprint"] = baseline::fingerprint(f, &report.paths).into();
            v
        }).collect::<Vec<_>>(),
    })
}

/// Lines for people: `level[rule-name] message`.
pub fn human(report: &Report) -> String {
    let mut s = String::new();
    for f in &report.findings {
        let lvl = match f.level {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        s.push_str(&format!("{lvl}[{}] {}\n", f.name, f.message));
    }
    if report.repositories.is_empty() {
        s.push_str("no git repository found under the audited path(s)\n");
    }
    if !report.skipped.is_empty() {
        const SHOWN: usize = 5;
        let names: Vec<String> = report
            .skipped
            .iter()
            .take(SHOWN)
            .map(|f| f.path.display().to_string())
            .collect();
        let more = report.skipped.len().saturating_sub(SHOWN);
        s.push_str(&format!(
            "not walked: {} folder(s) ({}{}): dependency folders with no repository at their top level (--walk-all walks them) or --exclude\n",
            report.skipped.len(),
            names.join(", "),
            if more > 0 { format!(", … {more} more; --format json lists all") } else { String::new() }
        ));
    }
    let n = |l: Severity| report.findings.iter().filter(|f| f.level == l).count();
    s.push_str(&format!(
        "{} finding(s) ({} error(s), {} warning(s), {} note(s)) in {} repositor{}{}\n",
        report.findings.len(),
        n(Severity::Error),
        n(Severity::Warning),
        n(Severity::Note),
        report.repositories.len(),
        if report.repositories.len() == 1 {
            "y"
        } else {
            "ies"
        },
        if report.incomplete() {
            "; INCOMPLETE: some parts could not be read"
        } else {
            ""
        }
    ));
    s
}

#[cfg(test)]
mod tests {
    /// Repositories met before their enclosing work tree's `.git` (`.a` sorts before `.git`:
    /// R7-2) each find it through their folders above, whose `.git` is looked at once per
    /// walk: both are nested in the top, none in `.a` (which has no `.git`). Positive
    /// control: a third, under a folder `.b` that has a `.git` file of its own, is nested in
    /// `.b` — the look-up of one folder's answer is not taken for another's.
    #[test]
    fn each_folder_above_a_git_is_looked_at_once_and_answers_for_every_repository_below() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().canonicalize().unwrap().join("top");
        let init = |p: &std::path::Path| {
            std::fs::create_dir_all(p).unwrap();
            let ok = std::process::Command::new("git")
                .args(["init", "-q"])
                .arg(p)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .status()
                .unwrap()
                .success();
            assert!(ok);
        };
        init(&top);
        init(&top.join(".a/r1"));
        init(&top.join(".a/r2"));
        init(&top.join(".b/r3"));
        std::fs::write(top.join(".b/.git"), "gitdir: ../.git\n").unwrap();
        let report = super::audit(std::slice::from_ref(&top));
        let nested_in = |r: &str| -> Option<String> {
            report
                .findings
                .iter()
                .find(|f| f.rule == super::rules::NESTED_REPOSITORY.id && f.path.ends_with(r))
                .and_then(|f| f.details.get("enclosing"))
                .and_then(|v| v.as_str().map(str::to_owned))
        };
        let top_s = top.display().to_string();
        assert_eq!(
            nested_in(".a/r1").as_deref(),
            Some(top_s.as_str()),
            "{report:#?}"
        );
        assert_eq!(
            nested_in(".a/r2").as_deref(),
            Some(top_s.as_str()),
            "{report:#?}"
        );
        let b = top.join(".b").display().to_string();
        assert_eq!(
            nested_in(".b/r3").as_deref(),
            Some(b.as_str()),
            "{report:#?}"
        );
    }

    /// [`super::looks_like_git_dir_in`] (one handle on the admin dir) answers as
    /// [`super::looks_like_git_dir`] (a path per file) for every shape of `HEAD` and
    /// `commondir` a worktree entry can hold: a ref, an object id, garbage, a link into
    /// `refs/` and one elsewhere, a FIFO (never opened blocking), a folder, none; `commondir`
    /// naming a common dir with and without `objects/` and `refs/`, a FIFO, a link.
    #[test]
    fn one_handle_on_an_admin_dir_answers_as_the_paths_do() {
        use super::{looks_like_git_dir, looks_like_git_dir_in, Dir};
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let top = t.path().canonicalize().unwrap();
        let common = top.join("common");
        std::fs::create_dir_all(common.join("objects")).unwrap();
        std::fs::create_dir_all(common.join("refs")).unwrap();
        std::fs::create_dir_all(top.join("bare")).unwrap();
        let fifo = |p: &std::path::Path| {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap()
        };
        type Make = fn(&std::path::Path, &dyn Fn(&std::path::Path));
        let heads: [(&str, Make); 8] = [
            ("ref", |p, _| {
                std::fs::write(p, "ref: refs/heads/main\n").unwrap()
            }),
            ("oid", |p, _| {
                std::fs::write(p, "0123456789abcdef0123456789abcdef01234567\n").unwrap()
            }),
            ("garbage", |p, _| std::fs::write(p, "nonsense\n").unwrap()),
            ("link-refs", |p, _| symlink("refs/heads/main", p).unwrap()),
            ("link-out", |p, _| symlink("/etc/hostname", p).unwrap()),
            ("fifo", |p, f| f(p)),
            ("folder", |p, _| std::fs::create_dir(p).unwrap()),
            ("none", |_, _| {}),
        ];
        let commondirs: [(&str, Make); 5] = [
            ("none", |_, _| {}),
            ("good", |p, _| std::fs::write(p, "../common\n").unwrap()),
            ("bare", |p, _| std::fs::write(p, "../bare").unwrap()),
            ("fifo", |p, f| f(p)),
            ("link", |p, _| symlink("../common-name", p).unwrap()),
        ];
        let mut n = 0;
        let mut keys = 0;
        // `own`: the admin dir has `objects/` and `refs/` of its own (where `commondir` cannot
        // be read, git looks there: the common dir read on the way is then the admin dir).
        for own in [false, true] {
            for (hn, head) in &heads {
                for (cn, cd) in &commondirs {
                    let p = top.join(format!("{hn}-{cn}-{own}"));
                    std::fs::create_dir(&p).unwrap();
                    if *cn == "none" || own {
                        std::fs::create_dir_all(p.join("objects")).unwrap();
                        std::fs::create_dir_all(p.join("refs")).unwrap();
                    }
                    head(&p.join("HEAD"), &fifo);
                    cd(&p.join("commondir"), &fifo);
                    let d = Dir::open_abs(&p).unwrap();
                    let (one, paths) = (looks_like_git_dir_in(&d, &p), looks_like_git_dir(&p));
                    assert_eq!(one, paths, "HEAD {hn}, commondir {cn}");
                    // The common dir read on the way is the one `common_dir_of` reads.
                    if let Some(key) = super::git_dir_in(&d, &p) {
                        assert_eq!(key, super::common_dir_of(&p), "HEAD {hn}, commondir {cn}");
                        keys += usize::from(key != p);
                    }
                    n += usize::from(one);
                }
            }
        }
        // Positive control: the shapes git takes are taken (ref, oid, link into refs/, each
        // with no commondir or a good one; with `objects/` and `refs/` of its own, also with
        // an unreadable one), six of them through a `commondir`.
        assert_eq!(n, 18);
        assert_eq!(keys, 6);
    }

    /// `wt-check check` takes the baseline's repository as audited under the main work tree
    /// (`audit_cached_beside` with `baseline_git_dirs`): what it keeps there — every finding
    /// whose repository is not the main work tree — is what the full audit gives. A planted
    /// repository with an armed config, a second work tree of the main repository and a
    /// submodule checkout are in the work tree; on both gits.
    #[test]
    fn the_baseline_seed_keeps_every_finding_not_about_the_main_repository() {
        use super::{audit_cached, audit_cached_beside, baseline_git_dirs, Report};
        use std::path::{Path, PathBuf};
        use std::process::Command;
        for git in ["/usr/bin/git", "/usr/local/bin/git"] {
            if !Path::new(git).exists() {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "{git} missing"
                );
                eprintln!("SKIPPED for {git}: not installed");
                continue;
            }
            let t = tempfile::tempdir().unwrap();
            let top = t.path().canonicalize().unwrap();
            let run = |dir: &Path, args: &[&str]| {
                let st = Command::new(git)
                    .args([
                        "-c",
                        "protocol.file.allow=always",
                        "-c",
                        "init.defaultBranch=main",
                    ])
                    .args(args)
                    .current_dir(dir)
                    .env("HOME", &top)
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_AUTHOR_NAME", "a")
                    .env("GIT_AUTHOR_EMAIL", "a@example.invalid")
                    .env("GIT_COMMITTER_NAME", "a")
                    .env("GIT_COMMITTER_EMAIL", "a@example.invalid")
                    .output()
                    .unwrap();
                assert!(st.status.success(), "{git} {args:?}: {st:?}");
            };
            let (sub, main) = (top.join("sub"), top.join("main"));
            for r in [&sub, &main] {
                std::fs::create_dir(r).unwrap();
                run(r, &["init", "-q"]);
                std::fs::write(r.join("f"), "x\n").unwrap();
                run(r, &["add", "f"]);
                run(r, &["commit", "-q", "-m", "x"]);
            }
            run(
                &main,
                &["submodule", "add", "-q", sub.to_str().unwrap(), "mods/s"],
            );
            run(&main, &["commit", "-q", "-m", "s"]);
            let wt1 = top.join("session/wt1");
            run(
                &main,
                &["worktree", "add", "-q", "--detach", wt1.to_str().unwrap()],
            );
            let planted = main.join("planted");
            std::fs::create_dir(&planted).unwrap();
            run(&planted, &["init", "-q"]);
            run(&planted, &["config", "core.fsmonitor", "./x"]);
            std::fs::create_dir(main.join("second")).unwrap();
            let gitdir = format!("gitdir: {}\n", main.join(".git").display());
            std::fs::write(main.join("second/.git"), gitdir).unwrap();
            let kept = |r: Report| -> Vec<String> {
                let mut v: Vec<String> = r
                    .findings
                    .iter()
                    .filter(|f| f.repo.as_deref() != Some(main.as_path()))
                    .map(|f| format!("{} {} {:?} {}", f.rule, f.path.display(), f.repo, f.message))
                    .collect();
                v.sort();
                v
            };
            let roots: Vec<PathBuf> = vec![main.clone()];
            let mut c1 = crate::layout::walk::WalkCache::empty();
            let mut c2 = crate::layout::walk::WalkCache::empty();
            let full = kept(audit_cached(&roots, &mut c1));
            let known = baseline_git_dirs(&main.join(".git"));
            assert!(
                known.contains(&main.join(".git/modules/mods/s")),
                "{known:?}"
            );
            let seeded = kept(audit_cached_beside(&roots, &mut c2, &known));
            assert_eq!(full, seeded, "{git}");
            for planted_part in ["planted", "second/.git"] {
                let p = main.join(planted_part).display().to_string();
                assert!(
                    seeded.iter().any(|f| f.contains(&p)),
                    "{git}: {p} not reported: {seeded:#?}"
                );
            }
        }
    }

    #[test]
    fn strictly_below_is_path_starts_with_on_walk_paths() {
        use std::path::Path;
        let cases = [
            ("/a/b/c", "/a/b", true),
            ("/a/b", "/a/b", false),
            ("/a/bc", "/a/b", false),
            ("/a/b-c/d", "/a/b", false),
            ("/a", "/", true),
            ("/", "/", false),
            ("/a/b/.git", "/a/b", true),
            ("/a", "/a/b", false),
        ];
        for (p, d, want) in cases {
            let (p, d) = (Path::new(p), Path::new(d));
            assert_eq!(super::strictly_below(p, d), want, "{p:?} below {d:?}");
            assert_eq!(p.starts_with(d) && p != d, want, "{p:?} below {d:?}");
        }
    }

    use super::valid_head;

    /// git's `validate_headref`: what makes git take a folder as a git dir or skip it.
    #[test]
    fn head_is_validated_like_git() {
        let d = tempfile::tempdir().unwrap();
        let head = d.path().join("HEAD");
        let hex = "0123456789abcdef0123456789abcdef01234567";
        for (text, ok) in [
            ("ref: refs/heads/main\n", true),
            ("ref:refs/heads/main", true),
            ("ref: \trefs/x\n", true),
            (&format!("{hex}\n") as &str, true),
            (&format!("{hex} trailing") as &str, true),
            ("ref: heads/main\n", false),
            ("garbage\n", false),
            (&hex[..39], false),
            ("", false),
        ] {
            std::fs::write(&head, text).unwrap();
            assert_eq!(valid_head(&head), ok, "{text:?}");
        }
        std::fs::remove_file(&head).unwrap();
        assert!(!valid_head(&head), "missing");
        std::os::unix::fs::symlink("refs/heads/main", &head).unwrap();
        assert!(valid_head(&head), "link into refs/");
        std::fs::remove_file(&head).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &head).unwrap();
        assert!(!valid_head(&head), "link elsewhere");
        std::fs::remove_file(&head).unwrap();
        std::fs::create_dir(&head).unwrap();
        assert!(!valid_head(&head), "a folder");
    }
}
