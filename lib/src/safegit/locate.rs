//! Where git will work, vouched for; and every config file it may read.
//!
//! The repository is found the way git finds it ([`crate::layout`]), so the git dir safe-git
//! vouches for is the one git will use; anything git's own layout does not explain (a `.git`
//! that git would skip, a gitfile to a foreign git dir, `commondir` in a main git dir,
//! `core.worktree` elsewhere) is refused. The config view is the superset git could read:
//! system and global files, the common dir's `config`, every `config.worktree`, every
//! submodule git dir (under `modules/` and behind gitlinks), and every include target.

use super::args::{GitArgs, Reach};
use super::request::{Refusal, Request};
use crate::config::{self, Enumeration};
use crate::env::GitProbe;
use crate::exit;
use crate::layout::{self, Layout};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repository git will use, as vouched for.
#[derive(Debug, Clone)]
pub struct Located {
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    pub work_tree: Option<PathBuf>,
    pub kind: String,
    /// Linked worktree entries whose `gitdir` is relative (git < 2.48 would prune them).
    pub relative_worktree_entries: Vec<PathBuf>,
    /// Linked worktrees: (entry folder, resolved worktree path, problems found).
    pub worktrees: Vec<(PathBuf, Option<PathBuf>, Vec<String>)>,
    /// Git dirs of submodules whose config git may read when it recurses.
    pub submodule_git_dirs: Vec<PathBuf>,
    /// What the subcommand's git can reach ([`super::args::REACH`]): the worktree entries are
    /// read (`worktrees` above) only with `other_worktrees`, the submodule git dirs found only
    /// with `submodules`; otherwise both lists stay empty because git never goes there.
    pub reach: Reach,
}

impl Located {
    /// The top of what git will look at: the work tree, else the git dir.
    pub fn top(&self) -> &Path {
        self.work_tree.as_deref().unwrap_or(&self.git_dir)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "git_dir": self.git_dir,
            "common_dir": self.common_dir,
            "work_tree": self.work_tree,
            "kind": self.kind,
            "linked_worktrees": self.worktrees.iter().map(|(e, p, problems)| json!({"entry": e, "path": p, "problems": problems})).collect::<Vec<_>>(),
            "submodule_git_dirs": self.submodule_git_dirs,
            "reach": {"submodules": self.reach.submodules, "other_worktrees": self.reach.other_worktrees},
        })
    }
}

fn layout_refusal(e: &layout::LayoutError) -> Refusal {
    Refusal {
        code: exit::LAYOUT,
        subject: String::new(),
        reason: e.to_string(),
    }
}

/// Problems of a worktree entry that make git act on something other than the worktree the
/// caller named (a foreign backlink, a redirected common dir, a link): `worktree remove`
/// is refused on those. Leftovers git ignores (a planted `hooks/`) do not block clean-up.
fn misdirects(p: &layout::Problem) -> bool {
    use layout::Problem as P;
    !matches!(
        p,
        P::UnexpectedEntry { .. }
            | P::RelativeGitdir { .. }
            | P::HeadMissing
            | P::HeadInvalid { .. }
    )
}

/// Find and vouch for the repository git will use from `start`.
pub fn locate(req: &Request, args: &GitArgs, start: &Path) -> Result<Option<Located>, Refusal> {
    let env_path = |k: &str| {
        req.env
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| PathBuf::from(v))
    };
    let git_dir = args
        .git_dir
        .clone()
        .or_else(|| env_path("GIT_DIR"))
        .map(|p| start.join(p));
    let work_tree = args
        .work_tree
        .clone()
        .or_else(|| env_path("GIT_WORK_TREE"))
        .map(|p| start.join(p));
    let explicit_git_dir = git_dir.is_some();
    let ceilings: Vec<PathBuf> = env_path("GIT_CEILING_DIRECTORIES")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    let mut layout: Layout = match git_dir {
        Some(g) => {
            layout::open_git_dir(&g, work_tree.as_deref()).map_err(|e| layout_refusal(&e))?
        }
        None => match layout::discover(start, &ceilings) {
            Ok(l) => l,
            Err(layout::LayoutError::NoRepository { .. }) => return Ok(None),
            Err(e) => return Err(layout_refusal(&e)),
        },
    };
    // The work tree git will use (git's setup): --work-tree / GIT_WORK_TREE wins; with an
    // explicit git dir and none given, git takes the folder it runs in. Gitlinks are looked
    // up there, and `core.worktree` is checked against it.
    if let Some(w) = &work_tree {
        layout.work_tree = Some(crate::path::resolve(w));
    } else if explicit_git_dir && layout.kind != layout::Kind::Bare {
        layout.work_tree = Some(crate::path::resolve(start));
    }
    // Only what the subcommand's git can reach is read and vouched for (`args::REACH`, one
    // argued row per subcommand): `rev-parse` never enters a submodule or another worktree, so
    // a 10,000-entry index or 20 worktree entries are not its cost.
    let reach = super::args::reach(&args.subcommand);
    let entries = if reach.other_worktrees {
        layout::worktree_entries(&layout.common_dir).map_err(|e| layout_refusal(&e))?
    } else {
        Vec::new()
    };
    let mut relative = Vec::new();
    let mut worktrees = Vec::new();
    for e in &entries {
        if e.problems
            .iter()
            .any(|p| matches!(p, layout::Problem::RelativeGitdir { .. }))
        {
            relative.push(e.admin_dir.clone());
        }
        let blocking = e
            .problems
            .iter()
            .filter(|p| misdirects(p))
            .map(|p| p.to_string())
            .collect();
        worktrees.push((e.admin_dir.clone(), e.worktree_path.clone(), blocking));
    }
    let mut submodule_git_dirs = Vec::new();
    let modules = if reach.submodules {
        layout::submodule_git_dirs(&layout.common_dir).map_err(|e| layout_refusal(&e))?
    } else {
        Vec::new()
    };
    for m in modules {
        match m.status {
            layout::ModuleStatus::GitDir { .. } => submodule_git_dirs.push(m.git_dir),
            layout::ModuleStatus::Link { target } => {
                return Err(Refusal {
                    code: exit::LAYOUT,
                    subject: m.git_dir.display().to_string(),
                    reason: format!("submodule git dir is a symbolic link to {} (git would follow it to a foreign git dir)", target.display()),
                })
            }
            // git refuses to use it as a git dir, but only after opening its `HEAD`: a FIFO
            // or device at the top of it hangs the owner's `git status` there (R9-5).
            layout::ModuleStatus::NotGitDir { .. } => {
                if let Ok(rd) = std::fs::read_dir(&m.git_dir) {
                    for e in rd.flatten() {
                        let Ok(ft) = e.file_type() else { continue };
                        if let Some(kind) = crate::audit::special::special_kind(&ft) {
                            return Err(Refusal {
                                code: exit::LAYOUT,
                                subject: e.path().display().to_string(),
                                reason: format!("a {kind} in a submodule git dir: git's blocking open of it would hang"),
                            });
                        }
                    }
                }
            }
        }
    }
    if let (true, Some(wt)) = (reach.submodules, &layout.work_tree) {
        // git recurses into submodules of submodules (status, diff): follow every populated
        // gitlink, each submodule's own index and `modules/`, to a fixed depth.
        let mut queue = vec![(
            layout.git_dir.clone(),
            layout.common_dir.clone(),
            wt.clone(),
            0usize,
        )];
        let mut entered: Vec<PathBuf> = vec![layout.git_dir.clone()];
        // The gitlinks of an unchanged index come from safe-git's cache (`gitlink_cache`: keyed
        // by the index file's identity, never kept where the repository is).
        let cache = super::gitlink_cache::Cache::new(
            req.cache_dir.as_deref(),
            &[&layout.git_dir, &layout.common_dir, wt],
        );
        while let Some((git_dir, common_dir, work_tree, depth)) = queue.pop() {
            for sub in
                gitlink_layouts(&git_dir, &common_dir, &work_tree, &ceilings, cache.as_ref())?
            {
                if depth + 1 > MAX_SUBMODULE_DEPTH {
                    return Err(Refusal {
                        code: exit::LAYOUT,
                        subject: sub.git_dir.display().to_string(),
                        reason: format!("submodules nested deeper than {MAX_SUBMODULE_DEPTH}; not enumerated, so not vouched for"),
                    });
                }
                if entered.contains(&sub.git_dir) {
                    continue;
                }
                entered.push(sub.git_dir.clone());
                if !submodule_git_dirs.contains(&sub.git_dir) {
                    submodule_git_dirs.push(sub.git_dir.clone());
                }
                for m in
                    layout::submodule_git_dirs(&sub.common_dir).map_err(|e| layout_refusal(&e))?
                {
                    match m.status {
                        layout::ModuleStatus::GitDir { .. } if !submodule_git_dirs.contains(&m.git_dir) => submodule_git_dirs.push(m.git_dir),
                        layout::ModuleStatus::Link { target } => {
                            return Err(Refusal {
                                code: exit::LAYOUT,
                                subject: m.git_dir.display().to_string(),
                                reason: format!("submodule git dir is a symbolic link to {} (git would follow it to a foreign git dir)", target.display()),
                            })
                        }
                        _ => {}
                    }
                }
                if let Some(swt) = sub.work_tree.clone() {
                    queue.push((sub.git_dir.clone(), sub.common_dir.clone(), swt, depth + 1));
                }
            }
        }
    }
    Ok(Some(Located {
        git_dir: layout.git_dir.clone(),
        common_dir: layout.common_dir.clone(),
        work_tree: layout.work_tree.clone(),
        kind: match &layout.kind {
            layout::Kind::Main => "main".into(),
            layout::Kind::Linked { id } => format!("linked worktree {id}"),
            layout::Kind::Bare => "bare".into(),
            layout::Kind::Submodule { name, .. } => format!("submodule {name}"),
        },
        relative_worktree_entries: relative,
        worktrees,
        submodule_git_dirs,
        reach,
    }))
}

/// How deep submodules of submodules are followed before safe-git refuses to vouch.
pub(crate) const MAX_SUBMODULE_DEPTH: usize = 8;

/// Git dirs behind the index's gitlinks: the submodules git recurses into (`status`, `diff`).
/// Each populated submodule folder is discovered the way git does (its `.git` folder, or a
/// gitfile that must lead into the superproject's `modules/`); a layout that cannot be
/// vouched for is refused like the superproject's own.
///
/// The walk that vouches for a submodule's gitfile climbs from the submodule folder's parent
/// to the enclosing superproject, which may sit any number of folders up (`vendor/x`,
/// `a/b/c`, a submodule of a submodule), so it runs under the caller's ceilings only, the
/// same walk that found the repository: it ends at the latest at the `.git` that walk found.
/// A gitfile is still vouched for only when it leads into that superproject's `modules/`.
fn gitlink_layouts(
    git_dir: &Path,
    common_dir: &Path,
    work_tree: &Path,
    ceilings: &[PathBuf],
    cache: Option<&super::gitlink_cache::Cache>,
) -> Result<Vec<Layout>, Refusal> {
    let index_path = git_dir.join("index");
    // No index (or none git could stat): nothing to enter.
    let Ok(index_md) = std::fs::metadata(&index_path) else {
        return Ok(Vec::new());
    };
    require_sha1(common_dir)?;
    let unreadable = |e: &dyn std::fmt::Display| Refusal {
        code: exit::LAYOUT,
        subject: index_path.display().to_string(),
        reason: format!("cannot read the index: {e}"),
    };
    // Opened without blocking and taken only when it is a regular file: a FIFO planted as
    // the index must not hang safe-git's own read (ninth red-team pass, R9-5).
    if let Some(kind) = crate::audit::special::special_kind(&index_md.file_type()) {
        return Err(unreadable(&format!(
            "a {kind}: git's blocking open of it would hang"
        )));
    }
    let read =
        super::gitlink_cache::read(&index_path, 1 << 40, cache).map_err(|e| unreadable(&e))?;
    use super::gitlinks::Scan;
    let paths: Vec<Vec<u8>> = match read.scan {
        Some(Scan::Gitlinks(p)) => p,
        Some(Scan::SparseDirectory(dir)) => {
            return Err(Refusal {
                code: exit::LAYOUT,
                subject: index_path.display().to_string(),
                reason: format!(
                    "sparse-directory entry {:?}: git expands it from a tree whose submodules the index does not list",
                    String::from_utf8_lossy(&dir)
                ),
            })
        }
        Some(Scan::Split(shared)) => {
            // A split index: gix's full decoder reads the shared index too, from private
            // copies (no blocking open of a planted FIFO: R16-11).
            let index = crate::index_paths::read_split_index(&index_path, &shared)
                .map_err(|e| unreadable(&e))?;
            index
                .entries()
                .iter()
                .filter(|e| e.mode == gix::index::entry::Mode::COMMIT)
                .map(|e| e.path(&index).to_vec())
                .collect()
        }
        None => {
            return Err(Refusal {
                code: exit::LAYOUT,
                subject: index_path.display().to_string(),
                reason: "the index is not laid out as git reads it (entry lengths, version or size do not add up)".into(),
            })
        }
    };
    let mut out = Vec::new();
    for path in paths {
        let rel = gix::path::from_bstr(gix::bstr::BStr::new(&path))
            .map_err(|e| Refusal {
                code: exit::LAYOUT,
                subject: index_path.display().to_string(),
                reason: format!("gitlink path is not a valid path: {e}"),
            })?
            .into_owned();
        let sub = work_tree.join(&rel);
        let dot_git = sub.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_err() {
            continue; // not populated: git does not enter it
        }
        let l = layout::discover(&sub, ceilings).map_err(|e| layout_refusal(&e))?;
        out.push(l);
    }
    Ok(out)
}

/// The index is read with SHA-1 object ids: refuse any other object format, read the way git
/// reads it (the common dir's `config` alone, no includes, git's parser). A SHA-256 index read
/// with the SHA-1 layout can be crafted to parse cleanly while hiding entries. A file git
/// cannot read either is a config refusal naming the file and line.
fn require_sha1(common_dir: &Path) -> Result<(), Refusal> {
    let file = common_dir.join("config");
    let bytes = match config::read_bounded(&file, config::Limits::default().max_file_size) {
        Ok(None) => return Ok(()),
        Ok(Some(b)) => b,
        Err(e) => return Err(config_refusal(&e)),
    };
    let raw = config::parse_bytes(&bytes, config::Dialect::Any);
    if let Some(line) = raw.bad_line {
        return Err(config_refusal(&config::ConfigError::Parse { file, line }));
    }
    let key = crate::catalogue::loader::OBJECT_FORMAT;
    let last = raw
        .entries
        .iter()
        .rev()
        .find(|e| e.config_key().is_some_and(|k| key.matches(&k)));
    match last.map(|e| e.value.as_ref()) {
        None => Ok(()),
        Some(Some(v)) if v.eq_ignore_ascii_case(b"sha1") => Ok(()),
        Some(v) => Err(Refusal {
            code: exit::LAYOUT,
            subject: file.display().to_string(),
            reason: format!(
                "{} = {}: safe-git reads indexes of SHA-1 repositories only",
                key.display(),
                v.map(|v| v.to_string())
                    .unwrap_or_else(|| "(no value)".into())
            ),
        }),
    }
}

/// The config view safe-git builds the defused environment from.
pub struct ConfigView {
    /// `(key, value, trusted)` in git's load order.
    pub values: Vec<ViewValue>,
    pub files: Vec<PathBuf>,
    /// Last trusted value per lower-cased key.
    pub trusted: BTreeMap<String, String>,
}

pub struct ViewValue {
    /// git's key as text, lossy (U+FFFD) where a subsection is not UTF-8.
    pub key: String,
    /// git's key with the subsection's exact bytes: what a `-c` neutraliser names.
    pub raw_key: gix::bstr::BString,
    pub value: Option<String>,
    pub trusted: bool,
}

fn config_refusal(e: &config::ConfigError) -> Refusal {
    Refusal {
        code: exit::CONFIG,
        subject: String::new(),
        reason: e.to_string(),
    }
}

/// Enumerate every config file git may read for this call.
pub fn enumerate(
    req: &Request,
    probe: &GitProbe,
    located: Option<&Located>,
) -> Result<ConfigView, Refusal> {
    let env_path = |k: &str| {
        req.env
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let home = env_path("HOME");
    let mut opts = match located {
        Some(l) => {
            let mut o =
                config::Options::for_repository(l.work_tree.as_deref(), &l.git_dir, &l.common_dir);
            // Other worktrees' `config.worktree` is read by a git running there only.
            o.linked_worktrees = l.reach.other_worktrees;
            o.submodules = config::Submodules::Dirs(l.submodule_git_dirs.clone());
            o
        }
        None => config::Options::default(),
    };
    let xdg = env_path("XDG_CONFIG_HOME");
    opts = opts.with_owner(Some(probe), home.as_deref(), xdg.as_deref());
    // The owner's global config is the one under the owner's home as the password database
    // names it. A HOME or XDG_CONFIG_HOME pointing elsewhere is the caller's choice (possibly
    // a folder the agent wrote): files there count as untrusted, so what they define is
    // neutralised like the repository's own config.
    let owner_home = owner_home();
    for (is_home, path) in [(true, &home), (false, &xdg)] {
        let Some(p) = path else { continue };
        let resolved = crate::path::resolve(p);
        let owners = owner_home.as_ref().is_some_and(|h| {
            if is_home {
                resolved == *h
            } else {
                resolved.starts_with(h)
            }
        });
        if !owners {
            opts.untrusted_roots.push(resolved);
        }
    }
    let e: Enumeration = config::enumerate(&opts).map_err(|e| config_refusal(&e))?;
    if let Some(l) = located {
        check_core_worktree(&e, l)?;
    }
    // The owner's file, the agent's program: an owner's value that names a relative path
    // (git resolves it in the work tree) or a path inside an untrusted root is not trusted.
    let reaching: Vec<*const config::Value> = e
        .trusted_reaching_untrusted()
        .into_iter()
        .map(|v| v as *const _)
        .collect();
    let values: Vec<ViewValue> = e
        .values()
        .iter()
        .map(|v| ViewValue {
            key: v.key(),
            raw_key: v.key_bytes(),
            value: v.value.as_ref().map(|b| b.to_string()),
            trusted: v.origin.trust == config::Trust::Trusted
                && !reaching.contains(&(v as *const _)),
        })
        .collect();
    let trusted = trusted_values(&values);
    Ok(ConfigView {
        values,
        files: e.files().iter().map(|f| f.origin.file.clone()).collect(),
        trusted,
    })
}

/// The last trusted value per lower-cased key, with git's aliases
/// ([`crate::catalogue::KEY_ALIASES`]) filled in under both names: values come in load order,
/// so the value git reads last wins under both, as in git.
pub fn trusted_values(values: &[ViewValue]) -> BTreeMap<String, String> {
    let mut trusted = BTreeMap::new();
    for v in values.iter().filter(|v| v.trusted) {
        let key = v.key.to_ascii_lowercase();
        let value = v.value.clone().unwrap_or_else(|| "true".to_owned());
        for (a, b) in crate::catalogue::KEY_ALIASES {
            if key == *a {
                trusted.insert((*b).to_owned(), value.clone());
            } else if key == *b {
                trusted.insert((*a).to_owned(), value.clone());
            }
        }
        trusted.insert(key, value);
    }
    trusted
}

/// The current user's home folder from the password database (resolved), if any.
fn owner_home() -> Option<PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()?;
    Some(crate::path::resolve(&user.dir))
}

/// `core.worktree` moves the work tree anywhere. Accept it only where git's own layout puts
/// it: in a submodule git dir, pointing at that submodule's folder inside the superproject's
/// work tree; in the main repository, pointing at the work tree already found.
fn check_core_worktree(e: &Enumeration, l: &Located) -> Result<(), Refusal> {
    for v in e.values() {
        if !crate::catalogue::loader::CORE_WORKTREE.matches(&v.config_key())
            || v.origin.trust == config::Trust::Trusted
        {
            continue;
        }
        let Some(value) = &v.value else { continue };
        let value = value.to_string();
        let (base, in_submodule) = match &v.origin.scope {
            config::Scope::Submodule { git_dir } => (git_dir.clone(), true),
            // Read only when git runs in that other worktree (e.g. `worktree remove`'s status
            // there), which stays under the defused config either way.
            config::Scope::OtherWorktree { .. } => continue,
            _ => (l.git_dir.clone(), false),
        };
        // `/proc/self/cwd/…` names git's working directory for git and ours for us.
        if let Some(reason) = config::process_dependent(&base.join(&value)) {
            return Err(Refusal {
                code: exit::CONFIG,
                subject: v.origin.file.display().to_string(),
                reason: format!(
                    "{}:{}: core.worktree = {value}: {reason}; git would resolve it elsewhere",
                    v.origin.file.display(),
                    v.line
                ),
            });
        }
        let target = crate::path::resolve(&base.join(&value));
        let ok = if in_submodule {
            // git's own layout for an absorbed submodule: its work tree's `.git` is a gitfile
            // leading back to this git dir (or the submodule is not populated there).
            let dot_git = target.join(".git");
            match std::fs::symlink_metadata(&dot_git) {
                Err(_) => true,
                Ok(_) => layout::read_gitfile(&dot_git)
                    .map(|g| crate::path::resolve(&g.target) == crate::path::resolve(&base))
                    .unwrap_or(false),
            }
        } else {
            l.work_tree
                .as_ref()
                .is_some_and(|w| crate::path::resolve(w) == target)
        };
        if !ok {
            return Err(Refusal {
                code: exit::LAYOUT,
                subject: v.origin.file.display().to_string(),
                reason: format!("core.worktree = {value} moves the work tree to {}, outside the repository's own layout", target.display()),
            });
        }
    }
    Ok(())
}

/// `path` made absolute component by component without following a link: every folder on the
/// way is examined with `lstat`, so `..` is resolved against real folders only. A link, or a
/// component that cannot be examined, is an error naming the component.
fn physical_path(path: &Path) -> Result<PathBuf, (PathBuf, &'static str)> {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                match std::fs::symlink_metadata(&out) {
                    Ok(m) if m.file_type().is_symlink() => return Err((out, "is a symbolic link")),
                    Ok(_) => {}
                    Err(_) => return Err((out, "cannot be examined (missing or unreadable)")),
                }
            }
        }
    }
    Ok(out)
}

/// `worktree remove <path>`: the path must be a linked worktree of this repository whose
/// entry is consistent with git's layout (else git would act on a tampered entry).
///
/// `worktree prune` (and `remove`, which prunes its own entry the same way): git deletes a
/// prunable entry with `remove_dir_recursively`, whose first `opendir` follows a link. An
/// entry `worktrees/<id>` that is a symbolic link (never git's layout: git makes a folder)
/// would have git delete everything inside the folder it leads to — an owner's folder, or
/// the repository's parent (eighth red-team pass, R8-1). Links inside an entry are removed,
/// not followed (`lstat` first), so the entry itself is the one place; any such entry
/// refuses the prune.
pub fn check_worktree_forms(args: &GitArgs, l: &Located, start: &Path) -> Result<(), Refusal> {
    if args.subcommand != "worktree" {
        return Ok(());
    }
    if matches!(args.mode(), Some("prune") | Some("remove") | Some("list")) {
        for (admin, _, _) in &l.worktrees {
            if let Ok(m) = std::fs::symlink_metadata(admin) {
                if m.file_type().is_symlink() {
                    let to = std::fs::read_link(admin).unwrap_or_default();
                    return Err(Refusal {
                        code: exit::LAYOUT,
                        subject: admin.display().to_string(),
                        reason: format!(
                            "worktree entry is a symbolic link to {} (git makes a folder): git's prune would delete what it leads to",
                            to.display()
                        ),
                    });
                }
            }
            // Its files (`gitdir`, `locked`, `HEAD`, …) are read, and `gitdir` rewritten, by
            // git's worktree commands with a plain open: a link or FIFO there is never git's
            // layout (ninth red-team pass, R9-13/R9-14: `worktree list`/`prune` hung).
            if let Ok(rd) = std::fs::read_dir(admin) {
                for e in rd.flatten() {
                    let Ok(ft) = e.file_type() else { continue };
                    let kind = if ft.is_symlink() {
                        Some("symbolic link")
                    } else {
                        crate::audit::special::special_kind(&ft)
                    };
                    if let Some(kind) = kind {
                        return Err(Refusal {
                            code: exit::LAYOUT,
                            subject: e.path().display().to_string(),
                            reason: format!("a {kind} in a worktree entry (git makes regular files there): git's worktree commands would read or write through it"),
                        });
                    }
                }
            }
        }
    }
    if args.mode() != Some("remove") {
        return Ok(());
    }
    let target = args.rest[1..]
        .iter()
        .filter_map(|a| a.to_str())
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from);
    let Some(target) = target else { return Ok(()) };
    // git resolves the path from where it runs (after -C) with realpath, and also accepts a
    // unique suffix of a worktree's path: only an exact match of a known entry, named
    // without a link anywhere on the way, is vouched for. A link (the worktree folder, or
    // any folder above it, swapped for a link to another worktree) would make git remove
    // the worktree the link points to.
    // A relative path starts in the folder git runs in, which git reaches with chdir (links
    // in `-C` are followed there, as by the caller's shell); from there, no link.
    let base = if target.is_absolute() {
        PathBuf::from("/")
    } else {
        crate::path::resolve(start)
    };
    let wanted = physical_path(&base.join(&target)).map_err(|(at, why)| Refusal {
        code: exit::LAYOUT,
        subject: at.display().to_string(),
        reason: format!(
            "{why}; git would remove whatever it leads to: name the worktree by its own path"
        ),
    })?;
    let entry = l
        .worktrees
        .iter()
        .find(|(_, p, _)| p.as_ref().map(|p| crate::path::resolve(p)) == Some(wanted.clone()));
    match entry {
        None => Err(Refusal {
            code: exit::LAYOUT,
            subject: target.display().to_string(),
            reason: format!("{} is not the path of a linked worktree of this repository (name it by its full path)", wanted.display()),
        }),
        Some((admin, _, problems)) if !problems.is_empty() => Err(Refusal {
            code: exit::LAYOUT,
            subject: admin.display().to_string(),
            reason: format!("worktree entry is inconsistent with git's layout: {}", problems.join("; ")),
        }),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::GitVersion;
    use crate::env::{DefuseOptions, Defused};

    fn value(key: &str, v: &str, trusted: bool) -> ViewValue {
        ViewValue {
            key: key.into(),
            raw_key: key.into(),
            value: Some(v.into()),
            trusted,
        }
    }

    /// The last `-c` pair for `key`: the value git uses.
    fn effective(d: &Defused, key: &str) -> Option<String> {
        d.config_pairs()
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key.as_bytes()))
            .map(|(_, v)| v.clone())
    }

    /// `gpg.program` is the legacy name of `gpg.openpgp.program` (one field in
    /// gpg-interface.c): the owner's value under either name ends up as both names' value, so
    /// the neutral `gpg.openpgp.program=` no longer follows the owner's `gpg.program`.
    #[test]
    fn the_owners_gpg_program_wins_under_either_name() {
        for owner_key in ["gpg.program", "gpg.openpgp.program"] {
            let values = vec![
                value(owner_key, "/owner/gpg", true),
                value("gpg.program", "/repo/evil", false),
            ];
            let mut d = Defused::new(DefuseOptions::new(GitVersion::new(2, 47, 3)));
            d.reassert_trusted(&trusted_values(&values));
            for k in ["gpg.program", "gpg.openpgp.program"] {
                assert_eq!(
                    effective(&d, k).as_deref(),
                    Some("/owner/gpg"),
                    "{owner_key} -> {k}"
                );
            }
            // gpg.program and gpg.openpgp.program both pass; whichever git reads last, the
            // owner's program is the one it gets. x509/ssh stay neutral.
            assert_eq!(effective(&d, "gpg.ssh.program").as_deref(), Some(""));
        }
        // Both names set by the owner: the one read last wins, under both names.
        let values = vec![
            value("gpg.openpgp.program", "/first", true),
            value("gpg.program", "/second", true),
        ];
        let t = trusted_values(&values);
        assert_eq!(t["gpg.openpgp.program"], "/second");
        assert_eq!(t["gpg.program"], "/second");
        // No owner's value: both stay neutral.
        let mut d = Defused::new(DefuseOptions::new(GitVersion::new(2, 47, 3)));
        d.reassert_trusted(&trusted_values(&[value(
            "gpg.program",
            "/repo/evil",
            false,
        )]));
        assert_eq!(effective(&d, "gpg.program").as_deref(), Some(""));
        assert_eq!(effective(&d, "gpg.openpgp.program").as_deref(), Some(""));
    }
}
