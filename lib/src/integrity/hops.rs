//! Work-tree files the owner's git runs (`crate::plan::hop`: relative programs of the config,
//! what an installed hook runs from the work tree), recorded by `pin` in every work tree and
//! compared by `check` in every work tree the session could write, including one added during
//! the turn (fifth red-team pass, R5-3 and R5-7).
//!
//! # Why after the turn too
//!
//! The plan makes these files read-only in the work trees that exist when a command starts; a
//! worktree the agent adds and writes in the same command is not covered, and outside a
//! sandbox nothing stops the write. `check` knows every worktree of the session at the turn's
//! end and reports, for each file: its content in the work tree and the blob staged for it in
//! that work tree's index (the pre-commit framework stashes unstaged changes and runs the
//! staged config), each against what `pin` recorded in the same work tree, or, for a work tree
//! `pin` did not see, against the main work tree's. A finding names the hook or key that would
//! run the file. Reported, not restored: the file is the agent's work-tree content.

use super::*;
use crate::plan::hop::{self, Hop};
use crate::plan::EntryKind;
use serde::{Deserialize, Serialize};

/// At most this many files are read below a folder (`.husky/`); beyond it (a `node_modules/`,
/// a venv) the folder's digest is taken over every file's identity instead of its bytes
/// ([`stat_identity`]), so a change is still a finding without reading gigabytes.
const MAX_FILES: usize = 10_000;

/// Beyond this many entries below one folder the walk stops and the digest cannot be taken:
/// an error, never a digest that would hide a change (fail closed).
const MAX_ENTRIES: usize = 5_000_000;

/// A file's identity without its bytes: device, inode, size, and the modification and
/// change times to the nanosecond. The agent can put a modification time back (`touch -d`),
/// never a change time: the kernel sets it on every write, rename into place or `utimensat`,
/// so a file whose bytes changed since `pin` has another identity.
fn stat_identity(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "stat:{}:{}:{}:{}.{}:{}.{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// One work-tree path as `pin` saw it in each work tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopPin {
    /// Relative to the top of each work tree.
    pub rel: PathBuf,
    pub dir: bool,
    /// What runs it (`hook pre-commit (pre-commit)`, `core.hooksPath …`).
    pub via: String,
    /// By work tree (its top): what was there.
    pub seen: BTreeMap<PathBuf, Seen>,
    /// Not empty: `rel` is a folder an interpreter searches for modules (the top, for
    /// `python3 -m x` run there: `hop::Hop::globs`), and only the entries of these names are
    /// compared (`*.py`, `*/__init__.py`: a module planted there shadows the one meant).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<String>,
}

/// A hop file in one work tree: its digest in the work tree and in the index (`None`: absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub work_tree: Option<String>,
    pub staged: Option<String>,
}

/// What `pin` records: every hop file of the repository in each of `trees` (index file, top).
pub(super) fn record(
    loc: &Located,
    trees: &[(PathBuf, PathBuf)],
) -> Result<Vec<HopPin>, IntegrityError> {
    let hops = hop::hops(loc).map_err(|e| IntegrityError::Unreadable {
        path: loc.common_dir.join("hooks"),
        reason: e.to_string(),
    })?;
    let mut out = Vec::new();
    for Hop {
        rel,
        kind,
        via,
        globs,
        ..
    } in hops
    {
        let dir = kind == EntryKind::Dir;
        let globs: Vec<String> = globs.iter().map(|g| (*g).to_owned()).collect();
        let mut seen = BTreeMap::new();
        for (index, top) in trees {
            let s = seen_in(top, index, &rel, dir, &globs).map_err(|reason| {
                IntegrityError::Unreadable {
                    path: top.join(&rel),
                    reason,
                }
            })?;
            seen.insert(top.clone(), s);
        }
        out.push(HopPin {
            rel,
            dir,
            via,
            seen,
            globs,
        });
    }
    Ok(out)
}

/// The work trees `pin` records: the main one and every linked worktree with a path.
pub(super) fn pin_trees(
    loc: &Located,
    worktrees: &BTreeMap<String, WorktreeBaseline>,
) -> Vec<(PathBuf, PathBuf)> {
    let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let Some(wt) = &loc.work_tree {
        out.push((loc.git_dir.join("index"), wt.clone()));
    }
    for (id, b) in worktrees {
        if let Some(p) = &b.path {
            if !out.iter().any(|(_, t)| t == p) {
                out.push((
                    loc.common_dir.join("worktrees").join(id).join("index"),
                    p.clone(),
                ));
            }
        }
    }
    out
}

/// `check`: every recorded hop file in each of `trees` (index file, top) against the
/// baseline. One event per change.
pub(super) fn compare(
    state: &State,
    trees: &[(PathBuf, PathBuf)],
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    let mut outcome = Outcome::Clean;
    let main = state.work_tree.as_deref();
    for h in &state.hops {
        for (index, top) in trees {
            if !top.is_dir() {
                continue;
            }
            let (base, new_tree) = match h.seen.get(top) {
                Some(b) => (b, false),
                None => match main.and_then(|m| h.seen.get(m)) {
                    Some(b) => (b, true),
                    None => continue,
                },
            };
            let now = match seen_in(top, index, &h.rel, h.dir, &h.globs) {
                Ok(s) => s,
                Err(reason) => {
                    outcome = Outcome::Incomplete;
                    emit(
                        mk(
                            EventKind::CheckIncomplete,
                            format!("{}: {reason}", top.join(&h.rel).display()),
                        )
                        .path(top.join(&h.rel)),
                    );
                    continue;
                }
            };
            let mut wheres = Vec::new();
            if new_tree {
                // A worktree pin did not see: what it holds must be what the owner has in
                // the main work tree (absent is fine: nothing runs). A folder is compared
                // file by file, so files the main work tree has and a fresh checkout lacks
                // (husky's generated `.husky/_/`) are not findings.
                let main_top = main.unwrap_or(top);
                let differs = match if h.globs.is_empty() {
                    foreign_file(top, main_top, &h.rel, h.dir)
                } else {
                    digest_globs(&top.join(&h.rel), &h.globs).and_then(|here| {
                        Ok(here != digest_globs(&main_top.join(&h.rel), &h.globs)?)
                    })
                } {
                    Ok(d) => d,
                    Err(reason) => {
                        outcome = Outcome::Incomplete;
                        emit(
                            mk(
                                EventKind::CheckIncomplete,
                                format!("{}: {reason}", top.join(&h.rel).display()),
                            )
                            .path(top.join(&h.rel)),
                        );
                        continue;
                    }
                };
                if differs {
                    wheres.push("work tree");
                }
                let staged_ok = h.dir
                    || now.staged.is_none()
                    || now.staged == base.staged
                    || now.staged == base.work_tree;
                if !staged_ok {
                    wheres.push("index");
                }
            } else {
                if now.work_tree != base.work_tree {
                    wheres.push("work tree");
                }
                if now.staged != base.staged {
                    wheres.push("index");
                }
            }
            for w in wheres {
                outcome = outcome.and(Outcome::Found);
                let path = top.join(&h.rel);
                emit(
                    mk(
                        EventKind::WorkTreeProgramChanged,
                        format!(
                            "{}: changed in the {w} during the turn; the owner's git runs it ({})",
                            path.display(),
                            h.via
                        ),
                    )
                    .path(&path)
                    .with("rel", h.rel.display().to_string())
                    .with("via", h.via.clone())
                    .with("where", w)
                    .with(
                        "baseline",
                        if new_tree {
                            "main work tree at pin"
                        } else {
                            "this work tree at pin"
                        },
                    )
                    .with("action", "reported"),
                );
            }
        }
    }
    outcome
}

/// Whether the work tree at `top` holds at `rel` a file the main work tree at `main` does not
/// hold with the same content (a folder: any file below it).
fn foreign_file(top: &Path, main: &Path, rel: &Path, dir: bool) -> Result<bool, String> {
    if !dir {
        let here = digest_path(&top.join(rel), false)?;
        return Ok(here.is_some() && here != digest_path(&main.join(rel), false)?);
    }
    let root = top.join(rel);
    if !std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) {
        return Ok(digest_path(&root, true)?.is_some());
    }
    let mut stack = vec![PathBuf::new()];
    let mut n = 0;
    while let Some(sub) = stack.pop() {
        for e in std::fs::read_dir(root.join(&sub)).map_err(|e| e.to_string())? {
            let e = e.map_err(|e| e.to_string())?;
            let r = sub.join(e.file_name());
            n += 1;
            if n > MAX_FILES {
                return Ok(true);
            }
            if e.file_type().map_err(|e| e.to_string())?.is_dir() {
                stack.push(r);
            } else if digest_path(&root.join(&r), false)?
                != digest_path(&main.join(rel).join(&r), false)?
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// What is at `rel` in the work tree at `top` and in the index file `index` (with `globs`:
/// only the entries of those names, [`HopPin::globs`]).
fn seen_in(
    top: &Path,
    index: &Path,
    rel: &Path,
    dir: bool,
    globs: &[String],
) -> Result<Seen, String> {
    if !globs.is_empty() {
        return Ok(Seen {
            work_tree: Some(digest_globs(&top.join(rel), globs)?),
            staged: staged_globs(index, rel, globs)?,
        });
    }
    let work_tree = digest_path(&top.join(rel), dir)?;
    let staged = staged(index, rel, dir)?;
    Ok(Seen { work_tree, staged })
}

/// `rel` (`/`-separated) matches one of `globs`, segment by segment (the shell's rules:
/// [`crate::plan::words::glob_match`]).
fn matches_globs(globs: &[String], rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    globs.iter().any(|g| {
        let pats: Vec<&str> = g.split('/').collect();
        pats.len() == parts.len()
            && pats
                .iter()
                .zip(&parts)
                .all(|(p, n)| crate::plan::words::glob_match(p, n))
    })
}

/// The digest of the entries of the folder `p` whose names match `globs` (one level per
/// segment of a glob; links not followed): a module created, changed or removed there
/// changes it.
fn digest_globs(p: &Path, globs: &[String]) -> Result<String, String> {
    let depth = globs
        .iter()
        .map(|g| g.split('/').count())
        .max()
        .unwrap_or(1);
    let mut list: Vec<(String, String)> = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = vec![(PathBuf::new(), 1)];
    while let Some((sub, d)) = stack.pop() {
        let rd = match std::fs::read_dir(p.join(&sub)) {
            Ok(rd) => rd,
            Err(e) if d > 1 => {
                // A folder below the top that cannot be listed: its name stands for it.
                list.push((sub.display().to_string(), format!("unreadable:{e}")));
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        for e in rd {
            let e = e.map_err(|e| e.to_string())?;
            let rel = sub.join(e.file_name());
            let name = rel.to_string_lossy().into_owned();
            let t = e.file_type().map_err(|e| e.to_string())?;
            if t.is_dir() && d < depth && name != ".git" {
                stack.push((rel.clone(), d + 1));
            }
            if !matches_globs(globs, &name) {
                continue;
            }
            if let Some(id) = digest_path(&p.join(&rel), false)? {
                list.push((name, id));
            }
            if list.len() > MAX_FILES {
                return Err(format!("more than {MAX_FILES} module files"));
            }
        }
    }
    Ok(list_digest(list))
}

/// The digest of the index entries below `rel` whose names match `globs`; `None` when there
/// are none (or no index).
fn staged_globs(index: &Path, rel: &Path, globs: &[String]) -> Result<Option<String>, String> {
    let Some(file) = crate::index_paths::read_index(index, false)? else {
        return Ok(None);
    };
    let base = rel.to_string_lossy().into_owned();
    let mut list = Vec::new();
    for e in file.entries() {
        let name = e.path(&file).to_string();
        let r = if base.is_empty() {
            Some(name.as_str())
        } else {
            name.strip_prefix(&format!("{base}/"))
        };
        if let Some(r) = r.filter(|r| matches_globs(globs, r)) {
            list.push((r.to_owned(), e.id.to_string()));
        }
    }
    Ok((!list.is_empty()).then(|| list_digest(list)))
}

use super::state::blob_id;

/// A file's blob id, a folder's digest over its files' (relative name, blob id), a link's
/// target; `None` when nothing is there. Links are not followed.
fn digest_path(p: &Path, dir: bool) -> Result<Option<String>, String> {
    let m = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if m.file_type().is_symlink() {
        let t = std::fs::read_link(p).map_err(|e| e.to_string())?;
        return Ok(Some(format!("link:{}", t.display())));
    }
    if m.is_file() && !dir {
        let b = std::fs::read(p).map_err(|e| e.to_string())?;
        return Ok(Some(blob_id(&b)));
    }
    if !m.is_dir() || !dir {
        return Ok(Some(format!("other:{:?}", m.file_type())));
    }
    // Every entry below, links not followed; files by identity first (one `lstat` each),
    // by their bytes when there are few enough to read.
    let mut list: Vec<(String, String)> = Vec::new();
    let mut files: Vec<usize> = Vec::new();
    let mut stack = vec![PathBuf::new()];
    let mut n = 0usize;
    while let Some(sub) = stack.pop() {
        for e in std::fs::read_dir(p.join(&sub)).map_err(|e| e.to_string())? {
            let e = e.map_err(|e| e.to_string())?;
            n += 1;
            if n > MAX_ENTRIES {
                return Err(format!(
                    "{}: more than {MAX_ENTRIES} entries below it: no digest",
                    p.display()
                ));
            }
            let rel = sub.join(e.file_name());
            let t = e.file_type().map_err(|e| e.to_string())?;
            if t.is_dir() {
                stack.push(rel);
            } else if t.is_file() {
                let m = e.metadata().map_err(|e| e.to_string())?;
                files.push(list.len());
                list.push((rel.display().to_string(), stat_identity(&m)));
            } else if t.is_symlink() {
                let target = std::fs::read_link(p.join(&rel)).map_err(|e| e.to_string())?;
                list.push((
                    rel.display().to_string(),
                    format!("link:{}", target.display()),
                ));
            } else {
                list.push((rel.display().to_string(), format!("other:{t:?}")));
            }
        }
    }
    if files.len() <= MAX_FILES {
        for i in files {
            let b = std::fs::read(p.join(&list[i].0)).map_err(|e| e.to_string())?;
            list[i].1 = blob_id(&b);
        }
    }
    Ok(Some(list_digest(list)))
}

fn list_digest(mut list: Vec<(String, String)>) -> String {
    list.sort();
    let mut text = String::new();
    for (n, id) in list {
        text.push_str(&n);
        text.push('\t');
        text.push_str(&id);
        text.push('\n');
    }
    format!("tree:{}", blob_id(text.as_bytes()))
}

/// The blob staged for `rel` (a folder: the digest of the entries below it), `None` when
/// the index has none or does not exist.
fn staged(index: &Path, rel: &Path, dir: bool) -> Result<Option<String>, String> {
    let Some(file) = crate::index_paths::read_index(index, false)? else {
        return Ok(None);
    };
    let want = rel.to_string_lossy().into_owned();
    let prefix = format!("{want}/");
    let mut list = Vec::new();
    for e in file.entries() {
        let name = e.path(&file).to_string();
        if !dir && name == want {
            return Ok(Some(e.id.to_string()));
        }
        if dir {
            if let Some(r) = name.strip_prefix(&prefix) {
                list.push((r.to_owned(), e.id.to_string()));
            }
        }
    }
    Ok((dir && !list.is_empty()).then(|| list_digest(list)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder past [`MAX_FILES`] (a `node_modules/`) is digested by its files' identities:
    /// a same-size rewrite with the modification time put back still changes the digest (the
    /// change time moves), and so does a file added; an unchanged folder keeps its digest.
    #[test]
    fn a_large_folders_digest_still_changes_with_its_content() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("node_modules");
        for i in 0..=MAX_FILES {
            let sub = d.join(format!("p{}", i % 50));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join(format!("f{i}.js")), "x").unwrap();
        }
        let before = digest_path(&d, true).unwrap().unwrap();
        assert_eq!(digest_path(&d, true).unwrap().unwrap(), before);
        let f = d.join("p7/f7.js");
        let old = std::fs::metadata(&f).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&f, "y").unwrap();
        let times = std::fs::FileTimes::new()
            .set_modified(old.modified().unwrap())
            .set_accessed(old.accessed().unwrap());
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_times(times)
            .unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().len(), old.len());
        let rewritten = digest_path(&d, true).unwrap().unwrap();
        assert_ne!(
            rewritten, before,
            "a same-size rewrite with its mtime put back"
        );
        std::fs::write(d.join("p3/new.js"), "z").unwrap();
        assert_ne!(digest_path(&d, true).unwrap().unwrap(), rewritten);
    }
}
