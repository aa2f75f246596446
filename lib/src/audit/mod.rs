//! `wt-check audit`: find what an agent could have planted in a repository or a workspace,
//! with no baseline. Planted hooks, armed program-running config with its origin and
//! include chain, includes that leave the git dir, redirects (`commondir`, `.git` files and
//! links), worktree entries that break git's layout, nested and bare repositories in a work
//! tree, promisors with local transports, `exec` lines in a rebase todo list, alternates,
//! attributes that select drivers. Output for people, as JSON, or as SARIF 2.1.0.
//!
//! Unknown is not clean: a part that cannot be read, or a walk cut short, is a finding of
//! its own ([`rules::INCOMPLETE`]) and makes the exit status 2.

pub mod rules;
pub mod sarif;

use crate::catalogue::{self, Severity};
use crate::integrity::nf::{Dir, Kind, NfError};
use crate::integrity::normalize;
use rules::Rule;
use serde::Serialize;
use serde_json::{Map, Value};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Most folder entries looked at while walking one audit path for repositories.
pub const WALK_LIMIT: usize = 500_000;
/// Deepest folder level walked.
pub const WALK_DEPTH: usize = 40;

/// `--format` of `wt-check audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AuditFormat {
    #[default]
    Human,
    Json,
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
}

impl Report {
    /// True when some part could not be read.
    pub fn incomplete(&self) -> bool {
        self.findings.iter().any(|f| f.rule == rules::INCOMPLETE.id)
    }

    fn add(
        &mut self,
        rule: &'static Rule,
        path: &Path,
        repo: Option<&Path>,
        message: String,
        details: Map<String, Value>,
    ) {
        self.findings.push(Finding {
            rule: rule.id,
            name: rule.name,
            level: rule.level,
            path: path.to_path_buf(),
            repo: repo.map(Path::to_path_buf),
            message,
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

    /// The exit code: 0 clean, 1 findings, 2 when some part could not be read.
    pub fn code(&self) -> crate::exit::Code {
        if self.incomplete() {
            crate::exit::INCOMPLETE
        } else if self.findings.is_empty() {
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
pub fn audit(paths: &[PathBuf]) -> Report {
    let mut r = Report::default();
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
        } else {
            walk_workspace(&mut r, &abs);
        }
    }
    r.findings
        .sort_by(|a, b| (b.level, &a.path, a.rule).cmp(&(a.level, &b.path, b.rule)));
    r.findings
        .dedup_by(|a, b| a.rule == b.rule && a.path == b.path && a.message == b.message);
    r
}

/// `HEAD` + `objects/` + `refs/` (git's `is_git_directory`, with `commondir` honoured).
fn looks_like_git_dir(p: &Path) -> bool {
    let Ok(m) = std::fs::symlink_metadata(p.join("HEAD")) else {
        return false;
    };
    if m.file_type().is_dir() {
        return false;
    }
    let common = small_file(&p.join("commondir"))
        .map(|c| p.join(c.trim_end_matches(['\n', '\r'])))
        .unwrap_or_else(|| p.to_path_buf());
    common.join("objects").is_dir() && common.join("refs").is_dir()
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
fn walk_workspace(r: &mut Report, root: &Path) {
    let mut seen = 0usize;
    // Work trees found so far (a repository below one of them is nested).
    let mut work_trees: Vec<PathBuf> = Vec::new();
    let mut it = walkdir::WalkDir::new(root)
        .follow_links(false)
        .max_depth(WALK_DEPTH)
        .sort_by_file_name()
        .into_iter();
    while let Some(ent) = it.next() {
        seen += 1;
        if seen > WALK_LIMIT {
            r.incomplete_at(
                root,
                None,
                format!("more than {WALK_LIMIT} entries; walk stopped"),
            );
            return;
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
        let path = ent.path().to_path_buf();
        let enclosing = work_trees
            .iter()
            .rev()
            .find(|w| path.starts_with(w) && path != **w)
            .cloned();
        if ent.file_name() == OsStr::new(".git") {
            let wt = path.parent().unwrap_or(root).to_path_buf();
            let ft = ent.file_type();
            if ft.is_dir() {
                it.skip_current_dir();
                if let Some(outer) = &enclosing {
                    r.add(&rules::NESTED_REPOSITORY, &wt, Some(outer), format!(
                        "{}: a repository inside the work tree of {} (git discovers it when run there)",
                        wt.display(), outer.display()), details!("enclosing" => outer));
                }
                work_trees.push(wt.clone());
                audit_repository(r, Some(&wt), &path, root);
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                let abs = normalize(&wt.join(&target));
                let leaves = !abs.starts_with(root);
                r.add_level(&rules::GITFILE_REDIRECT, if leaves { Severity::Error } else { Severity::Warning }, &path, Some(&wt), format!(
                    "{}: `.git` is a symbolic link to {}{} (git uses whatever git dir it names)",
                    path.display(), target.display(), if leaves { ", outside the workspace" } else { "" }),
                    details!("target" => target, "leaves_workspace" => leaves));
                work_trees.push(wt);
            } else {
                gitfile(r, root, &wt, &path, enclosing.as_deref(), &mut work_trees);
            }
            continue;
        }
        if ent.file_type().is_dir() && looks_like_git_dir(&path) {
            it.skip_current_dir();
            match &enclosing {
                Some(outer) => r.add(&rules::BARE_IN_WORK_TREE, &path, Some(outer), format!(
                    "{}: a bare repository inside the work tree of {} (git uses its config and hooks when run in it)",
                    path.display(), outer.display()), details!("enclosing" => outer)),
                None => audit_repository(r, None, &path, root),
            }
        }
    }
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
    let bytes = match Dir::open_abs(wt).and_then(|d| d.read(OsStr::new(".git"), 1 << 20)) {
        Ok((b, _)) => b,
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
    // A submodule checkout (gitdir in <outer>/.git/modules/) or a linked worktree
    // (<common>/worktrees/<id>) is git's own layout.
    let own_layout = target
        .components()
        .any(|c| c.as_os_str() == "modules" || c.as_os_str() == "worktrees");
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
    } else if enclosing.is_some() && !own_layout {
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
        // Audit the git dir it names (a linked worktree's common dir is audited once as a
        // whole; a separate git dir is audited here).
        let is_linked = target.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees"));
        if !is_linked && (!target.starts_with(root) || !own_layout) {
            audit_repository(r, Some(wt), &target, root);
        }
    }
}

/// One repository: its git dir (and common dir), hooks, config, includes, redirects,
/// worktree entries, submodule git dirs, state files.
fn audit_repository(r: &mut Report, work_tree: Option<&Path>, git_dir: &Path, _root: &Path) {
    let repo = work_tree.unwrap_or(git_dir).to_path_buf();
    r.repositories.push(repo.clone());
    let repo = Some(repo.as_path());
    // commondir in a main git dir (git never writes one there).
    let commondir = git_dir.join("commondir");
    let in_worktrees = git_dir.parent().and_then(Path::file_name) == Some(OsStr::new("worktrees"));
    let mut common_dir = git_dir.to_path_buf();
    if let Ok(Some(st)) = Dir::open_abs(git_dir).and_then(|d| d.stat(OsStr::new("commondir"))) {
        let text = small_file(&commondir).unwrap_or_default();
        let target = normalize(&git_dir.join(text.trim_end_matches(['\n', '\r'])));
        if !in_worktrees {
            r.add(&rules::COMMONDIR_IN_MAIN, &commondir, repo, format!(
                "{}: `commondir` in a main git dir ({}) takes config, hooks, objects and refs from {}",
                commondir.display(), st.kind.name(), target.display()), details!("target" => target));
        }
        common_dir = target;
    }
    let root = match Dir::open_abs(git_dir) {
        Ok(d) => d,
        Err(e) => {
            r.incomplete_at(git_dir, repo, e);
            return;
        }
    };
    hooks_folder(r, &common_dir.join("hooks"), repo, false);
    config(r, work_tree, git_dir, &common_dir, repo);
    state_files(r, &root, git_dir, repo);
    if common_dir != git_dir {
        if let Ok(c) = Dir::open_abs(&common_dir) {
            state_files(r, &c, &common_dir, repo);
        }
    }
    // Submodule git dirs: their hooks and state (their config is enumerated above).
    for m in module_dirs(r, &common_dir.join("modules"), repo, 0) {
        hooks_folder(r, &m.join("hooks"), repo, false);
        if let Ok(d) = Dir::open_abs(&m) {
            state_files(r, &d, &m, repo);
        }
    }
    // Worktree entries against git's layout (crate::layout: gitdir backlink, commondir,
    // HEAD, unexpected names, links, duplicates).
    match crate::layout::worktree_entries(&common_dir) {
        Ok(entries) => {
            for e in entries {
                let p = e.admin_dir.clone();
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

/// Executable, non-sample files in a hooks folder. `in_work_tree` raises the level.
fn hooks_folder(r: &mut Report, dir: &Path, repo: Option<&Path>, in_work_tree: bool) -> usize {
    let d = match Dir::open_abs(dir) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return 0,
        Err(NfError::Link { path: p }) => {
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
            return 1;
        }
        Err(e) => {
            r.incomplete_at(dir, repo, e);
            return 0;
        }
    };
    let names = match d.list() {
        Ok(n) => n,
        Err(e) => {
            r.incomplete_at(dir, repo, e);
            return 0;
        }
    };
    let mut n_found = 0;
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
        let event = catalogue::HOOK_EVENTS.contains(&name.as_str());
        let runs = match st.kind {
            Kind::File => st.mode & 0o111 != 0,
            Kind::Link => true,
            _ => false,
        };
        if !runs || name.ends_with(".sample") {
            continue;
        }
        n_found += 1;
        let level = if event || in_work_tree {
            Severity::Error
        } else {
            Severity::Warning
        };
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
        r.add_level(&rules::HOOK_PLANTED, level, &p, repo, format!(
            "{}: {what}{}", p.display(),
            if event { format!("; git runs it as the `{name}` hook") } else { "; not a hook event name, but executable in a hooks folder".into() }),
            details!("hook" => name, "event" => event, "kind" => st.kind.name(), "mode" => format!("{:o}", st.mode)));
    }
    n_found
}

/// Armed keys, includes, `core.hooksPath`, promisors.
fn config(
    r: &mut Report,
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
    repo: Option<&Path>,
) {
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
    let chain = |v: &crate::config::Value| -> Vec<String> {
        v.origin
            .include_chain
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    };
    for a in en.armed() {
        let v = a.value;
        let level = a
            .entries
            .iter()
            .map(|e| e.severity)
            .max()
            .unwrap_or(Severity::Warning);
        // Note-level rows (`core.bare`, …) are what every repository sets: not findings.
        if level == Severity::Note {
            continue;
        }
        // git's own layout: a submodule git dir's `core.worktree` naming the submodule's
        // folder inside the superproject's work tree.
        if let crate::config::Scope::Submodule { git_dir: m } = &v.origin.scope {
            if crate::catalogue::loader::CORE_WORKTREE.matches(&v.config_key()) {
                let t = normalize(&m.join(v.text().as_ref()));
                if work_tree.is_some_and(|w| t.starts_with(w) && !t.starts_with(common_dir)) {
                    continue;
                }
            }
        }
        let row = a.entries[0];
        let via = if v.origin.is_include() {
            format!(" (included: {})", chain(v).join(" -> "))
        } else {
            String::new()
        };
        r.add_level(
            &rules::ARMED_KEY,
            level,
            &v.origin.file,
            repo,
            format!(
                "{}:{}: {} = {:?}: {}{via}",
                v.origin.file.display(),
                v.line,
                v.key(),
                v.text(),
                row.runs
            ),
            details!(
                "key" => v.key(), "value" => v.text(), "line" => v.line,
                "scope" => v.origin.scope.git_word(), "include_chain" => chain(v),
                "effective" => en.is_effective(v), "runs" => row.runs, "trigger" => row.trigger,
                "research" => row.research,
            ),
        );
    }
    // Include targets: into the work tree, or outside the repository.
    for f in en.files() {
        if !f.origin.is_include() {
            continue;
        }
        let t = normalize(&f.origin.file);
        let in_wt = work_tree.is_some_and(|w| {
            t.starts_with(w) && !t.starts_with(git_dir) && !t.starts_with(common_dir)
        });
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
            r.add(&rules::INCLUDE_OUTSIDE, &t, repo, format!(
                "{}: include target outside the repository{}: {}",
                t.display(), if missing { ", missing now" } else { "" }, chain.join(" -> ")),
                details!("include_chain" => chain, "missing" => missing, "condition" => f.origin.condition));
        }
    }
    // core.hooksPath: every value git might use, and the hook files in its target.
    for v in en
        .values()
        .iter()
        .filter(|v| crate::catalogue::loader::HOOKS_PATH.matches(&v.config_key()))
    {
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
        let in_wt =
            work_tree.is_some_and(|w| target.starts_with(w) && !target.starts_with(git_dir));
        let rule = if in_wt {
            &rules::HOOKS_PATH_IN_WORK_TREE
        } else {
            &rules::HOOKS_PATH
        };
        r.add(rule, &v.origin.file, repo, format!(
            "{}:{}: core.hooksPath = {raw:?} → {}{}", v.origin.file.display(), v.line, target.display(),
            if in_wt { " (inside the work tree: anything committed there runs as a hook)" } else { "" }),
            details!("value" => raw, "target" => target, "in_work_tree" => in_wt, "scope" => v.origin.scope.git_word(), "effective" => en.is_effective(v)));
        hooks_folder(r, &target, repo, in_wt);
    }
    // Partial-clone promisors with local or custom transports (lazy fetch runs them).
    let mut promisors: Vec<String> = Vec::new();
    for v in en.values() {
        if v.section.eq_ignore_ascii_case("remote")
            && v.name.eq_ignore_ascii_case("promisor")
            && v.as_bool() == Some(true)
        {
            promisors.extend(v.subsection.clone());
        }
        if crate::catalogue::loader::PARTIAL_CLONE.matches(&v.config_key()) {
            promisors.push(v.text().into_owned());
        }
    }
    promisors.sort();
    promisors.dedup();
    for name in promisors {
        for u in en.values().iter().filter(|v| {
            v.section.eq_ignore_ascii_case("remote")
                && v.subsection.as_deref() == Some(name.as_str())
                && v.name.eq_ignore_ascii_case("url")
        }) {
            let url = u.text().into_owned();
            if let Some(kind) = catalogue::classify_url(&url) {
                r.add(&rules::PROMISOR_TRANSPORT, &u.origin.file, repo, format!(
                    "{}:{}: promisor remote `{name}` has url {url:?} ({kind:?}): a lazy fetch runs it",
                    u.origin.file.display(), u.line),
                    details!("remote" => name, "url" => url, "danger" => kind));
            }
        }
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

/// Print the report in `format` and return the exit code.
pub fn run(paths: &[PathBuf], format: AuditFormat) -> crate::exit::Code {
    let report = audit(paths);
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
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return crate::exit::INCOMPLETE;
    }
    report.code()
}

/// The JSON document (documented in `docs/wt-check.md`).
pub fn json(report: &Report) -> Value {
    serde_json::json!({
        "tool": "wt-check",
        "version": env!("CARGO_PKG_VERSION"),
        "complete": !report.incomplete(),
        "paths": report.paths,
        "repositories": report.repositories,
        "findings": report.findings,
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
    s.push_str(&format!(
        "{} finding(s) in {} repositor{}{}\n",
        report.findings.len(),
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
