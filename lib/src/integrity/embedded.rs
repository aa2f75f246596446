//! Repositories behind the index's gitlinks: what the owner's `git status` recurses into.
//!
//! A repository the agent creates in the work tree and stages (`git add sub`: a gitlink in
//! the index, no commit needed) is a submodule to git from then on: the owner's next
//! `git status` runs `git status` inside it, with its own config (`core.fsmonitor`, filters)
//! and hooks. Its git dir lies in the work tree, not under the common dir's `modules/`, so
//! the baseline comparison never sees it. `check` reads every index's gitlinks (main work
//! tree and linked worktrees) with safe-git's scanner (`crate::safegit::gitlinks`), and
//! audits each populated gitlink whose git dir is not one of the common dir's submodule git
//! dirs (those are compared with the baseline) with `crate::audit` — the same judgement the
//! audit and safe-git make.
//!
//! Unknown is not clean: an index that cannot be read or that the scanner cannot vouch for
//! (another object format, a sparse-directory entry, sizes that do not add up) is a problem.

use super::nf::Dir;
use crate::audit::Finding;
use crate::layout::walk::WalkCache;
use std::path::{Path, PathBuf};

/// Largest index read (a 1,000,000-file index is about 100 MiB).
pub const INDEX_LIMIT: u64 = 1 << 30;

/// What was found behind the gitlinks of the indexes given.
#[derive(Debug, Default)]
pub struct Embedded {
    /// Audit findings (any level but notes) of repositories behind gitlinks.
    pub findings: Vec<Finding>,
    /// What could not be read, and why.
    pub problems: Vec<(PathBuf, String)>,
}

/// Audit the repositories behind the gitlinks of each `(index file, work tree)`.
/// `common_dir`: gitlinks whose `.git` file leads into its `modules/` are skipped (compared
/// with the baseline instead).
/// `cache`: folder listings recorded by the last check (`crate::layout::walk_cache`).
pub fn armed(indexes: &[(PathBuf, PathBuf)], common_dir: &Path, cache: &mut WalkCache) -> Embedded {
    let mut out = Embedded::default();
    let common = std::fs::canonicalize(common_dir).unwrap_or_else(|_| common_dir.to_path_buf());
    let baseline = match super::stores::baseline_git_dirs(&common) {
        Ok(b) => b,
        Err((p, why)) => {
            // Unknown is not clean: every gitlink is then audited, and the check incomplete.
            out.problems.push((p, why));
            Vec::new()
        }
    };
    for (index, work_tree) in indexes {
        let paths = match gitlink_paths(index) {
            Ok(p) => p,
            Err(why) => {
                out.problems.push((index.clone(), why));
                continue;
            }
        };
        // The work tree opened once (links in its path followed, as `symlink_metadata` of
        // `work_tree/rel/.git` follows them): each gitlink's `.git` is then `lstat`ed relative
        // to it — the same answer, with the kernel walking `rel/.git` instead of the whole
        // path again for each of the index's gitlinks. Unopenable: by path, as before.
        let wt_fd = (!paths.is_empty())
            .then(|| {
                use nix::fcntl::OFlag;
                nix::fcntl::open(
                    work_tree.as_path(),
                    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                    nix::sys::stat::Mode::empty(),
                )
                .ok()
            })
            .flatten();
        for rel in paths {
            let sub = work_tree.join(&rel);
            let dot_git = sub.join(".git");
            let Some(is_file) = dot_git_lstat(wt_fd.as_ref(), &rel, &dot_git) else {
                continue; // not populated: git does not enter it
            };
            if is_file && gitfile_into_modules(&dot_git, &sub, &common, &baseline) {
                continue;
            }
            let report = crate::audit::audit_cached(std::slice::from_ref(&sub), cache);
            for f in report.findings {
                if f.rule == crate::audit::rules::INCOMPLETE.id {
                    out.problems.push((f.path.clone(), f.message.clone()));
                } else if f.level > crate::catalogue::Severity::Note
                    && f.rule != crate::audit::rules::NESTED_REPOSITORY.id
                {
                    out.findings.push(f);
                }
            }
        }
    }
    out
}

/// Whether `<work tree>/<rel>/.git` exists (`lstat`, the last component not followed), and
/// if so whether it is a regular file: relative to `wt` (the work tree, held open) when
/// given, else by its full path `dot_git`. An absolute `rel` names the same file either way
/// (`openat` ignores the folder for an absolute path, as `Path::join` does).
fn dot_git_lstat(wt: Option<&std::os::fd::OwnedFd>, rel: &Path, dot_git: &Path) -> Option<bool> {
    match wt {
        Some(fd) => nix::sys::stat::fstatat(
            fd,
            &rel.join(".git"),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .ok()
        .map(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFREG),
        None => std::fs::symlink_metadata(dot_git).ok().map(|m| m.is_file()),
    }
}

/// Audit every repository nested in the given work trees, the way `wt-check audit` walks a
/// work tree (`crate::audit::audit`: no links followed, bounded in entries and depth, a walk
/// cut short is a problem, not clean).
///
/// This is the class behind the gitlinks: every repository the owner's ordinary git enters
/// from a work tree is in it — a submodule's own staged repository at any depth (the inner
/// `git status` recurses), an untracked one the next `git add -A` stages, one behind a
/// gitlink only in the turn's commits (`log -p --submodule=diff`), a session worktree whose
/// `.git` file names a git dir of the agent's, a repository made directly in the session
/// folder. `roots`: the main work tree, and the session folder or the linked worktrees.
/// The baseline's repository (`common_dir`) is audited once for all roots
/// ([`crate::audit::audit_baseline`]: what its config names outside the common dir, in every
/// work tree) and taken as audited under each root; what lies inside the common dir is the
/// baseline comparison's, and so are `.git` files that lead into it (git's own layout: a
/// linked worktree's entry, a submodule's git dir under `modules/`).
/// `cache`: folder listings recorded by the last check (`crate::layout::walk_cache`): the
/// walk hands out the same entries, reading only the folders that changed.
pub fn nested(
    roots: &[PathBuf],
    main_work_tree: Option<&Path>,
    common_dir: &Path,
    cache: &mut WalkCache,
) -> Embedded {
    let mut out = Embedded::default();
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let main = main_work_tree.map(canon);
    let common = canon(common_dir);
    let mut walked: Vec<PathBuf> = Vec::new();
    for root in roots {
        walked.push(root.clone());
        walked.extend(inside_bare_top(root));
    }
    let present: Vec<PathBuf> = walked
        .iter()
        .filter(|r| std::fs::symlink_metadata(r).is_ok()) // a session folder not made yet
        .cloned()
        .collect();
    // The baseline's repository, audited once for every root (it was audited once per root,
    // each time to drop most of what it found). What it reports inside the common dir is the
    // baseline comparison's; what lies outside — a FIFO or a link into /dev at a path its
    // config names (`commit.template`, `mailmap.file`, …) in any of its work trees, include
    // targets and armed values in the agent's reach — is kept whatever root would have met it
    // (the per-root audits kept it only under a root other than the main work tree: with no
    // session folder it was lost, eleventh red-team pass).
    // The baseline's git dirs (`stores::baseline_git_dirs`): a repository whose git dir is one
    // of them is compared with the pin; any other, even inside the common dir, is audited.
    let baseline = match super::stores::baseline_git_dirs(&common) {
        Ok(b) => b,
        Err((p, why)) => {
            out.problems.push((p, why));
            vec![common.clone()]
        }
    };
    let is_baseline = |g: &Path| baseline.binary_search_by(|b| b.as_path().cmp(g)).is_ok();
    // The git dir a finding's repository uses (its `.git` folder, the dir its `.git` file
    // names, or itself when bare), resolved as git's `stat` resolves it.
    let git_dir_of = |r: &Path| -> Option<PathBuf> {
        let dot = r.join(".git");
        let g = match std::fs::symlink_metadata(&dot) {
            Ok(m) if m.is_file() => gitfile_target(&dot, r)?,
            Ok(_) => dot,
            Err(_) => r.to_path_buf(),
        };
        Some(canon(&g))
    };
    let shared = crate::audit::audit_baseline(&common, main.as_deref(), &present);
    let known = shared.audited().to_vec();
    for f in shared.findings {
        if f.path.starts_with(&common) || f.repo.as_deref().is_some_and(|r| r.starts_with(&common))
        {
            continue;
        }
        keep(&mut out, vec![f]);
    }
    for root in &present {
        // The baseline's git dirs are taken as audited: a `.git` leading to one is still
        // judged as a `.git` (redirect, second work tree, nested repository).
        let report = crate::audit::audit_cached_beside(std::slice::from_ref(root), cache, &known);
        for f in report.findings {
            // The main repository, and what lies in the common dir (worktree entries and
            // submodule git dirs, `worktrees/<id>/modules/` included): the baseline's — unless
            // the finding's repository uses a git dir built inside the common dir that is none
            // of the baseline's (under a submodule git dir's `logs/`, `refs/`, …: twenty-
            // seventh red-team pass, W4), which nothing compares.
            let planted = f.repo.as_deref().is_some_and(|r| {
                git_dir_of(r).is_some_and(|g| {
                    g.starts_with(&common)
                        && !is_baseline(&g)
                        && std::fs::symlink_metadata(&g).is_ok()
                })
            });
            if (main.is_some() && f.repo == main)
                || (!planted
                    && (f.path.starts_with(&common)
                        || f.repo.as_deref().is_some_and(|r| r.starts_with(&common))))
            {
                continue;
            }
            // A submodule checkout whose `.git` leads to a submodule git dir of the baseline:
            // that git dir is compared with the pin (a planted `commondir` there is reported as
            // such), so what its audit says, even that it cannot be read, is not repeated.
            if f.repo
                .as_deref()
                .is_some_and(|r| gitfile_into_modules(&r.join(".git"), r, &common, &baseline))
            {
                continue;
            }
            let into_common = f
                .details
                .get("target")
                .and_then(|t| t.as_str())
                .is_some_and(|t| {
                    // One of the baseline's git dirs, or a path in the common dir that is not
                    // there (git enters nothing; the comparison reports what went missing).
                    let t = Path::new(t);
                    t.starts_with(&common)
                        && (is_baseline(&canon(t)) || std::fs::symlink_metadata(t).is_err())
                });
            // …but a `.git` file that makes a folder a second work tree of this very
            // repository outside git's layout is the agent's (R6-3), not the baseline's.
            let second_work_tree =
                f.details.get("same_repository") == Some(&serde_json::Value::Bool(true));
            if f.rule == crate::audit::rules::GITFILE_REDIRECT.id
                && into_common
                && !second_work_tree
            {
                continue;
            }
            if f.rule == crate::audit::rules::BARE_IN_WORK_TREE.id {
                // The walk names it but does not look inside: audit it as a repository
                // (the owner's git run in that folder uses its config).
                keep(
                    &mut out,
                    crate::audit::audit_cached(std::slice::from_ref(&f.path), cache).findings,
                );
                continue;
            }
            keep(&mut out, vec![f]);
        }
    }
    out
}

/// Sort audit findings: a part not read is a problem; anything above a note that is not
/// only "a repository is here" is armed.
fn keep(out: &mut Embedded, findings: Vec<Finding>) {
    for f in findings {
        if f.rule == crate::audit::rules::INCOMPLETE.id {
            out.problems.push((f.path.clone(), f.message.clone()));
        } else if f.level > crate::catalogue::Severity::Note
            && f.rule != crate::audit::rules::NESTED_REPOSITORY.id
            && f.rule != crate::audit::rules::BARE_IN_WORK_TREE.id
        {
            out.findings.push(f);
        }
    }
}

/// Does the gitfile at `dot_git` name a submodule git dir of the baseline (one of `baseline`,
/// sorted: [`super::stores::baseline_git_dirs`], under the common dir's `modules/` or a linked
/// worktree's `worktrees/<id>/modules/`)? Its git dir is compared with the pin. A git dir
/// built anywhere else under `modules/` — under a submodule git dir's `logs/` or `refs/`
/// (twenty-seventh red-team pass, W4) — is none of them, and its repository is audited.
fn gitfile_into_modules(dot_git: &Path, sub: &Path, common: &Path, baseline: &[PathBuf]) -> bool {
    let Some(abs) = gitfile_target(dot_git, sub) else {
        return false;
    };
    let abs = std::fs::canonicalize(&abs).unwrap_or(abs);
    let under_modules = abs.starts_with(common.join("modules"))
        || abs
            .strip_prefix(common.join("worktrees"))
            .is_ok_and(|rest| {
                let mut c = rest.components();
                c.next().is_some() && c.next().is_some_and(|m| m.as_os_str() == "modules")
            });
    // A target that is not there is no git dir git can enter (git stops: "not a git
    // repository"); it is the baseline comparison's to report what was moved or removed.
    under_modules
        && (baseline.binary_search(&abs).is_ok() || std::fs::symlink_metadata(&abs).is_err())
}

/// The git dir a `.git` file names, as git's `read_gitfile_gently` reads it: the whole text
/// after `gitdir: `, less trailing `\n` and `\r` (not the first line: a path with a newline is
/// git's too), relative to `sub`, the folder the `.git` is in; a `.git` link to a file is
/// followed, as git's `stat` and `open` follow it. `None` when it is not such a file. Never
/// blocks: a `.git` swapped for a FIFO (or a link to one) is not opened for reading.
pub(super) fn gitfile_target(dot_git: &Path, sub: &Path) -> Option<PathBuf> {
    let text = match read_small_regular(dot_git) {
        Ok(t) => t,
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            read_small_regular(&std::fs::canonicalize(dot_git).ok()?).ok()?
        }
        Err(_) => return None,
    };
    let target = text
        .strip_prefix("gitdir: ")?
        .trim_end_matches(['\n', '\r']);
    if target.is_empty() {
        return None;
    }
    let t = Path::new(target);
    Some(super::normalize(&if t.is_absolute() {
        t.to_path_buf()
    } else {
        sub.join(t)
    }))
}

/// The gitlink paths of an index file (no index: none), read without following links.
pub(super) fn gitlink_paths(index_path: &Path) -> Result<Vec<PathBuf>, String> {
    let (Some(parent), Some(name)) = (index_path.parent(), index_path.file_name()) else {
        return Err("not a file path".into());
    };
    let index = match Dir::open_abs(parent)
        .and_then(|d| crate::index_paths::read_shared(&d, name, INDEX_LIMIT))
    {
        Ok(i) => i,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read the index: {e}")),
    };
    use crate::safegit::gitlinks::Scan;
    let raw: Vec<Vec<u8>> = match index.gitlinks() {
        Some(Scan::Gitlinks(p)) => p,
        Some(Scan::SparseDirectory(d)) => {
            return Err(format!(
                "sparse-directory entry {:?}: git expands it from a tree whose gitlinks the index does not list",
                String::from_utf8_lossy(&d)
            ))
        }
        Some(Scan::Split(shared)) => {
            let file = crate::index_paths::read_split_index(index_path, &shared)?;
            file.entries()
                .iter()
                .filter(|e| e.mode == gix::index::entry::Mode::COMMIT)
                .map(|e| e.path(&file).to_vec())
                .collect()
        }
        None => {
            return Err(
                "the index is not laid out as git reads it (version, object format or sizes)"
                    .into(),
            )
        }
    };
    raw.into_iter()
        .map(|p| {
            gix::path::from_bstr(gix::bstr::BStr::new(&p))
                .map(|c| c.into_owned())
                .map_err(|e| format!("gitlink path is not a valid path: {e}"))
        })
        .collect()
}

/// A small regular file's text, opened without blocking or following a link
/// (`O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC`) and refused unless `fstat` says it is a regular file.
fn read_small_regular(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW).bits())
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let mut s = String::new();
    f.take(64 * 1024).read_to_string(&mut s)?;
    Ok(s)
}

/// A root that is itself a bare-shaped git dir (`HEAD`, `objects/`, `refs/` at its top: the
/// audit reports it and, as for any git dir, does not walk inside) may still be a work
/// folder: `core.worktree` can name the folder itself, and the owner's git started in a
/// subfolder discovers a `.git` there first. Its subfolders other than git's own
/// (`objects`, `refs`, `hooks`, `info`, `logs`, `worktrees`, `modules`) are walked as roots
/// too. Links are not followed.
fn inside_bare_top(root: &Path) -> Vec<PathBuf> {
    const GIT_OWN: &[&str] = &[
        "objects",
        "refs",
        "hooks",
        "info",
        "logs",
        "worktrees",
        "modules",
    ];
    let is_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let bare = std::fs::symlink_metadata(root.join("HEAD")).is_ok()
        && is_dir(&root.join("objects"))
        && is_dir(&root.join("refs"));
    if !bare {
        return Vec::new();
    }
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !GIT_OWN.iter().any(|g| e.file_name() == *g))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::dot_git_lstat;
    use std::path::{Path, PathBuf};

    /// The `.git` of a gitlink `lstat`ed relative to the held work tree answers as
    /// `symlink_metadata` of the full path, for every shape: a `.git` file, folder, link,
    /// none, a gitlink folder that is itself a link (followed by both), `..` in the path, an
    /// absolute path, the work tree itself reached through a link.
    #[test]
    fn relative_to_the_held_work_tree_answers_as_the_full_path() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let top = t.path().canonicalize().unwrap();
        let wt = top.join("wt");
        let away = top.join("away");
        for d in ["wt/file", "wt/dir/.git", "wt/link", "wt/none", "away"] {
            std::fs::create_dir_all(top.join(d)).unwrap();
        }
        std::fs::write(wt.join("file/.git"), "gitdir: x\n").unwrap();
        symlink(wt.join("file/.git"), wt.join("link/.git")).unwrap();
        std::fs::write(away.join(".git"), "gitdir: y\n").unwrap();
        symlink(&away, wt.join("to_away")).unwrap();
        symlink(&wt, top.join("wt_link")).unwrap();
        let rels: Vec<PathBuf> = [
            "file",
            "dir",
            "link",
            "none",
            "absent",
            "to_away",
            "none/../file",
            "",
        ]
        .iter()
        .map(PathBuf::from)
        .chain([away.clone()])
        .collect();
        let mut answers = std::collections::BTreeSet::new();
        for w in [&wt, &top.join("wt_link")] {
            let fd = nix::fcntl::open(
                w.as_path(),
                nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY,
                nix::sys::stat::Mode::empty(),
            )
            .unwrap();
            for rel in &rels {
                let full = w.join(rel).join(".git");
                let by_path = dot_git_lstat(None, rel, &full);
                assert_eq!(dot_git_lstat(Some(&fd), rel, &full), by_path, "{rel:?}");
                answers.insert(format!("{by_path:?}"));
            }
        }
        // Positive control: all three answers occur (file, other, none).
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert_eq!(
            dot_git_lstat(None, Path::new("to_away"), &wt.join("to_away/.git")),
            Some(true)
        );
    }
}
