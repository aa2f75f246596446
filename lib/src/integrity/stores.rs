//! The object stores the object checks verify: the repository's own (`<common dir>/objects`)
//! and every submodule's, below `<common dir>/modules/` and each
//! `<common dir>/worktrees/<id>/modules/` (names with slashes nest, nested submodules too).
//!
//! The owner's `git submodule update` checks a submodule's recorded commit out of the
//! submodule's own store, which the agent can write as it writes the superproject's: a blob
//! substituted there (loose, packed, or through a forged commit-graph) lands in the owner's
//! work tree under its trusted id, and `status` is clean. Each store gets the same three checks
//! ([`super::objects`], [`super::packs`], [`super::graph`]), with records of its own beside
//! the state file: the repository's are named after the state file (`<state>.objects`,
//! `.packs`, `.graphs`); another store's after `<state>.modules/<id>` (`<id>.objects`, …),
//! `<id>` the SHA-1 of its key: its git dir relative to the common dir, or the absolute git
//! dir of a repository nested in a work tree (whose store the owner's checkout there reads).
//! A submodule's own linked worktrees' submodules are walked too. A store first seen
//! by a check (cloned during the turn) has no record: every object in it is verified.

use super::Outcome;
use crate::events::{Event, EventKind, Tool};
use std::path::{Path, PathBuf};

/// One object store: the git dir holding `objects/`, and the path its records are named after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub git_dir: PathBuf,
    /// For the repository's own store, the state file itself.
    pub records: PathBuf,
    /// The git dir relative to the common dir (`""` for the repository's own).
    pub rel: String,
}

/// The folder beside the state file holding the submodule stores' records (`<state>.modules`).
fn records_dir(state: &Path) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_os_string();
    name.push(".modules");
    state.with_file_name(name)
}

/// The records' base path of the store whose git dir is `key` (relative to the common dir,
/// or absolute for a repository nested in a work tree): named by the SHA-1 of `key`'s bytes,
/// so any name fits a file name (a long submodule name overflowed it: R23-2).
fn records_for(state: &Path, key: &str) -> PathBuf {
    records_dir(state).join(super::state::blob_id(key.as_bytes()))
}

/// Make the records' folder (mode 0700, beside the state file) when a submodule store needs it.
fn make_records_dir(state: &Path, all: &[Store]) -> Result<(), String> {
    if all.len() < 2 {
        return Ok(());
    }
    let d = records_dir(state);
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(&d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("{}: {e}", d.display())),
    }
}

/// The git dirs of the baseline: the common dir, each linked worktree entry
/// (`worktrees/<id>`), every submodule git dir below `modules/` and each
/// `worktrees/<id>/modules/` (nested ones too, and those of a submodule's own linked worktrees),
/// and each submodule git dir's own `worktrees/<id>` entries. Their protected entries are
/// compared with the pin; what lies *inside* the common dir but is none of them — a git dir
/// built under `logs/`, `refs/`, `objects/`, `rebase-merge/` of one of them, which a `.git`
/// file or a gitlink can name — is not, and is judged like a repository nested in a work tree
/// (twenty-seventh red-team pass, W4/W5). `Err` names a walk cut short.
///
/// Kept for the process, keyed by `common` (the embedded-repository audit, the gitlinks' audit
/// and the object stores' list each ask for it in one check, as `indexstat::all_indexes` is
/// kept): a folder made under `modules/` later in the process is then not in the list, and is
/// audited (the safe side); one removed stays in it, and is none to audit.
pub fn baseline_git_dirs(common: &Path) -> Result<Vec<PathBuf>, (PathBuf, String)> {
    type Listed = Result<Vec<PathBuf>, (PathBuf, String)>;
    static MEMO: std::sync::Mutex<Option<(PathBuf, Listed)>> = std::sync::Mutex::new(None);
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((c, r)) = memo.as_ref() {
        if c == common {
            return r.clone();
        }
    }
    let r = walk_baseline_git_dirs(common);
    *memo = Some((common.to_path_buf(), r.clone()));
    r
}

/// [`baseline_git_dirs`], walked.
fn walk_baseline_git_dirs(common: &Path) -> Result<Vec<PathBuf>, (PathBuf, String)> {
    let entries = |g: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(g.join("worktrees"))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = vec![common.to_path_buf()];
    let own = entries(common);
    let mut module_roots = vec![common.join("modules")];
    module_roots.extend(own.iter().map(|e| e.join("modules")));
    out.extend(own);
    for root in module_roots {
        for g in super::rerere::module_git_dirs(&root)? {
            out.extend(entries(&g));
            out.push(g);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Every store of the repository whose common dir is `common`, the repository's first, then
/// its submodules', then those of `nested`: the git dirs of repositories nested in a work
/// tree (a submodule whose git dir is a folder there: the owner's checkout in it reads that
/// store, R23-2). `Err` names what could not be walked (a bound reached).
pub fn stores(
    common: &Path,
    state: &Path,
    nested: &[PathBuf],
) -> Result<Vec<Store>, (PathBuf, String)> {
    let mut out = vec![Store {
        git_dir: common.to_path_buf(),
        records: state.to_path_buf(),
        rel: String::new(),
    }];
    let mut module_roots = vec![common.join("modules")];
    if let Ok(rd) = std::fs::read_dir(common.join("worktrees")) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                module_roots.push(e.path().join("modules"));
            }
        }
    }
    for root in module_roots {
        for g in super::rerere::module_git_dirs(&root)? {
            let Ok(rel) = g.strip_prefix(common) else {
                continue;
            };
            let rel = rel.to_string_lossy().into_owned();
            out.push(Store {
                records: records_for(state, &rel),
                git_dir: g,
                rel,
            });
        }
    }
    for g in nested {
        if g == common || out.iter().any(|s| &s.git_dir == g) {
            continue;
        }
        let key = g.to_string_lossy().into_owned();
        out.push(Store {
            records: records_for(state, &key),
            git_dir: g.clone(),
            rel: key,
        });
    }
    Ok(out)
}

/// The git dirs of the repositories nested in the work trees of `st` (git dir outside the
/// common dir) that the owner's git enters (`indexstat`'s walk of gitlinks and
/// `.gitmodules`).
pub(super) fn nested_of(st: &super::state::State) -> Result<Vec<PathBuf>, (PathBuf, String)> {
    let indexes = super::compare::index_work_trees(st, &st.entries);
    let baseline = baseline_git_dirs(&st.common_dir)?;
    Ok(super::indexstat::all_indexes(&indexes, &st.common_dir)?
        .into_iter()
        .filter_map(|(i, _)| i.parent().map(Path::to_path_buf))
        .filter(|g| baseline.binary_search(g).is_err())
        .collect())
}

/// `objects/<x>` of `store`, as the pin's refusal names it.
fn named(store: &Store, what: &str) -> String {
    if store.rel.is_empty() {
        what.to_owned()
    } else {
        format!("{}/{what}", store.rel)
    }
}

/// Pin every store: record its loose objects, commit-graphs and packs. Returns the armed
/// findings (one line each, naming the rule and the file) that refuse the pin unless the
/// owner accepts them.
pub fn pin(st: &super::state::State, state: &Path) -> Result<Vec<String>, String> {
    let common = &st.common_dir;
    let all = nested_of(st)
        .and_then(|n| stores(common, state, &n))
        .map_err(|(p, why)| format!("{}: {why}", p.display()))?;
    make_records_dir(state, &all)?;
    let mut found = Vec::new();
    for s in &all {
        let (_, bad) = super::objects::pin(&s.git_dir, &s.records)?;
        found.extend(bad.iter().map(|(rel, why)| {
            format!(
                "{} {}: {why}",
                crate::catalogue::OBJECT_RULE.0,
                named(s, &format!("objects/{rel}"))
            )
        }));
        let forged = super::graph::pin(&s.git_dir, &s.records)?;
        found.extend(forged.iter().map(|f| {
            let d = super::graph::describe(f);
            if s.rel.is_empty() {
                d
            } else {
                format!("{d} (submodule git dir {})", s.rel)
            }
        }));
        let (_, bad) = super::packs::pin(&s.git_dir, &s.records)?;
        found.extend(bad.iter().map(|(n, why)| {
            format!(
                "{} {}: {why}",
                crate::catalogue::PACK_RULE.0,
                named(s, &format!("objects/pack/{n}"))
            )
        }));
    }
    Ok(found)
}

/// Check every store of the pinned repository: loose objects, commit-graphs and packs new or
/// changed since the pin (with `restore`, what fails is set aside).
pub fn check(
    st: &super::state::State,
    state: &Path,
    restore: bool,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    let (all, mut outcome) = match nested_of(st).and_then(|n| stores(&st.common_dir, state, &n)) {
        Ok(v) => (v, Outcome::Clean),
        Err((p, why)) => {
            emit(
                Event::new(
                    Tool::WtCheck,
                    EventKind::CheckIncomplete,
                    format!("{}: {why}", p.display()),
                )
                .session(st.session.as_deref())
                .repo(&st.repo)
                .path(&p),
            );
            // The repository's own store is still checked; the check is incomplete.
            let own = Store {
                git_dir: st.common_dir.clone(),
                records: state.to_path_buf(),
                rel: String::new(),
            };
            (vec![own], Outcome::Incomplete)
        }
    };
    if let Err(why) = make_records_dir(state, &all) {
        // Without it no submodule store's check can record what it verified (cost only).
        eprintln!("wt-check: {why}");
    }
    for s in &all {
        let session = st.session.as_deref();
        outcome = outcome.and(super::objects::check_at(
            &s.git_dir, &st.repo, session, &s.records, restore, emit,
        ));
        outcome = outcome.and(super::graph::check_at(
            &s.git_dir,
            &st.repo,
            session,
            &s.records,
            restore,
            super::graph::Budget::default(),
            emit,
        ));
        outcome = outcome.and(super::packs::check_at(
            &s.git_dir, &st.repo, session, &s.records, restore, emit,
        ));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repository's store first, then every submodule git dir below `modules/` (nested,
    /// names with slashes) and `worktrees/<id>/modules/`, then nested git dirs outside the
    /// common dir, each with records of its own named by the hash of its key.
    #[test]
    fn every_submodule_git_dir_is_a_store_with_its_own_records() {
        let t = tempfile::tempdir().unwrap();
        let common = t.path().join("repo.git");
        for d in [
            "modules/a",
            "modules/a/modules/b",
            "modules/x/y",
            "modules/p%2Fq",
            "worktrees/w1/modules/c",
        ] {
            std::fs::create_dir_all(common.join(d)).unwrap();
            std::fs::write(common.join(d).join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        let state = t.path().join("st.json");
        let inner = t.path().join("wt/vendor/.git");
        let all = stores(&common, &state, &[inner.clone(), common.join("modules/a")]).unwrap();
        assert_eq!(all[0].git_dir, common);
        assert_eq!(all[0].records, state);
        let mut rest: Vec<String> = all[1..].iter().map(|s| s.rel.clone()).collect();
        rest.sort();
        let inner_key = inner.to_string_lossy().into_owned();
        let mut want = vec![
            "modules/a",
            "modules/a/modules/b",
            "modules/p%2Fq",
            "modules/x/y",
            "worktrees/w1/modules/c",
            inner_key.as_str(),
        ];
        want.sort();
        assert_eq!(
            rest, want,
            "a nested git dir once, one below the common dir not again"
        );
        for s in &all[1..] {
            assert_eq!(
                s.records,
                t.path()
                    .join("st.json.modules")
                    .join(crate::integrity::state::blob_id(s.rel.as_bytes()))
            );
        }
        // No submodule: the repository's store alone, no records folder made.
        let lone = t.path().join("lone.git");
        std::fs::create_dir_all(lone.join("objects")).unwrap();
        let st2 = t.path().join("lone.json");
        let all = stores(&lone, &st2, &[]).unwrap();
        assert_eq!(all.len(), 1);
        make_records_dir(&st2, &all).unwrap();
        assert!(!records_dir(&st2).exists());
    }
}
