//! Conflict resolutions recorded during the turn (`rr-cache/`), which the owner's git replays.
//!
//! git's rerere keeps, for each conflict it meets, the conflicted text (`preimage`) and the
//! resolution that was committed (`postimage`) in `rr-cache/<conflict id>/`; when the same
//! conflict comes again (`merge`, `rebase`, `cherry-pick`, `am`, `revert`) it writes the
//! recorded resolution into the work tree ("Resolved 'f' using previous resolution"; staged
//! too with `rerere.autoUpdate`). rerere is on where `rerere.enabled` says so or, unset,
//! wherever `rr-cache/` exists. `rr-cache/` lives in the common dir beside `objects/`, where
//! the agent can write: a postimage planted for a conflict between two of the owner's commits
//! is written into the owner's next merge of them (sixteenth red-team pass, R16-9), and a
//! resolution the agent recorded honestly is replayed the same way. Neither names a program;
//! both put text the agent chose into the owner's work tree without a commit to review.
//!
//! [`check`] reports each `rr-cache/<id>` (of the common dir and of every submodule git dir
//! below `modules/`) whose folder or any file in it has a `ctime` not older than the pin: any
//! write, rename into place, `chmod` or `touch` moves `ctime` to now, and no unprivileged
//! process can set it back. The pin's instant is the state file's modification time (`pin`
//! writes a new file). A warning, not an error: the owner may have resolved a conflict in
//! another worktree during the turn, and an agent that merges with rerere on records its own.
//! With `--restore` the `<id>` folder is moved aside into the quarantine (never deleted) and
//! git no longer replays it. `rr-cache` itself a link, or not a folder, is reported as an
//! error (git never makes one; the special-file sweep also follows the link for FIFOs).
//! `rr-cache` whose own `ctime` moved since the pin is read as made anew: a folder of
//! resolutions prepared before the pin and renamed into place keeps its entries' old
//! `ctime`s, so then every entry is reported (the owner's `git rerere gc` or `forget` during
//! the turn also moves it: a warning for each entry, which `--restore` would set aside).
//! `MERGE_RR` written since the pin (in any git dir: it is per worktree) is reported too: the
//! owner's next `git rerere` reads it and records a preimage and resolution from the files it
//! names, then replays them in the same merge (seventeenth pass, R17-1); and so is an
//! `rr-cache` made or emptied since the pin that holds no entry (rerere switched on). Each a
//! warning, moved aside with `--restore`. Bounds: [`MAX_IDS`] entries, [`MAX_MODULES`]
//! submodule git dirs; past them the check is incomplete.

use super::restore::Quarantine;
use super::Outcome;
use crate::events::{Event, EventKind, Tool};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most `rr-cache/<id>` folders looked at in one check.
pub const MAX_IDS: usize = 100_000;
/// Most submodule git dirs (below `modules/`) looked at.
pub const MAX_MODULES: usize = 10_000;

/// One `rr-cache` entry found new since the pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// `<git dir>/rr-cache/<id>`.
    pub path: PathBuf,
    /// The files in it (`preimage`, `postimage`, `thisimage`, …), sorted.
    pub files: Vec<String>,
}

/// What [`scan`] found.
#[derive(Debug, Default)]
pub struct Found {
    pub recorded: Vec<Recorded>,
    /// `MERGE_RR` files (of any git dir) written since the pin: rerere's list of the
    /// conflicts being recorded, which the owner's next `git rerere` (run by `merge`,
    /// `cherry-pick`, …) reads and records from — a planted one names work-tree or git-dir
    /// files as the preimage and resolution of a conflict to come (R17-1).
    pub merge_rr: Vec<PathBuf>,
    /// `rr-cache` folders changed since the pin that hold no entry: rerere switched on (git
    /// records and replays wherever `rr-cache/` exists), or emptied.
    pub emptied_or_made: Vec<PathBuf>,
    /// `rr-cache` paths that are a link or not a folder.
    pub not_folder: Vec<PathBuf>,
    pub incomplete: Option<(PathBuf, String)>,
}

/// Whether a `ctime` of `(secs, nsecs)` is not older than `since`.
fn not_older(secs: i64, nsecs: i64, since: (i64, i64)) -> bool {
    (secs, nsecs) >= since
}

/// Every `rr-cache/<id>` below `common` (and its submodule git dirs) with a `ctime` at or
/// after `since` (seconds, nanoseconds), on the folder or any file in it.
pub fn scan(common: &Path, since: (i64, i64)) -> Found {
    let mut out = Found::default();
    let mut git_dirs = vec![common.to_path_buf()];
    collect_modules(&common.join("modules"), &mut git_dirs, &mut out, 0);
    // `MERGE_RR` is per worktree (`git_path`): the common dir's, each worktree entry's, each
    // submodule git dir's.
    let mut merge_rr_dirs = git_dirs.clone();
    if let Ok(rd) = std::fs::read_dir(common.join("worktrees")) {
        merge_rr_dirs.extend(rd.flatten().map(|e| e.path()));
    }
    for d in &merge_rr_dirs {
        let p = d.join("MERGE_RR");
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            // An empty `MERGE_RR` names no conflict, so rerere records and replays nothing
            // from it: git's own `commit` writes one wherever rerere is on (seen on the real
            // pre-commit clone with `rerere.enabled`). Anything else is reported.
            let names_nothing = m.is_file() && m.len() == 0;
            if not_older(m.ctime(), m.ctime_nsec(), since) && !names_nothing {
                out.merge_rr.push(p);
            }
        }
    }
    out.merge_rr.sort();
    let mut ids = 0usize;
    for g in git_dirs {
        let rr = g.join("rr-cache");
        let md = match std::fs::symlink_metadata(&rr) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.incomplete = Some((rr, format!("cannot lstat: {e}")));
                return out;
            }
        };
        if !md.is_dir() {
            out.not_folder.push(rr);
            continue;
        }
        let folder_new = not_older(md.ctime(), md.ctime_nsec(), since);
        let before = out.recorded.len();
        let mut any_entry = false;
        let entries = match std::fs::read_dir(&rr) {
            Ok(e) => e,
            Err(e) => {
                out.incomplete = Some((rr, format!("cannot list: {e}")));
                return out;
            }
        };
        for e in entries {
            let Ok(e) = e else {
                out.incomplete = Some((rr.clone(), "cannot list".into()));
                return out;
            };
            ids += 1;
            any_entry = true;
            if ids > MAX_IDS {
                out.incomplete = Some((rr, format!("more than {MAX_IDS} entries")));
                return out;
            }
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue; // gone since the listing
            };
            let mut new = folder_new || not_older(m.ctime(), m.ctime_nsec(), since);
            let mut files = Vec::new();
            if m.is_dir() {
                if let Ok(inner) = std::fs::read_dir(&p) {
                    for f in inner.flatten() {
                        if let Ok(fm) = std::fs::symlink_metadata(f.path()) {
                            new |= not_older(fm.ctime(), fm.ctime_nsec(), since);
                        }
                        files.push(f.file_name().to_string_lossy().into_owned());
                    }
                }
            }
            // Only a resolution is replayed: an entry with a preimage alone (what rerere
            // leaves of a conflict merged and aborted, or not resolved yet) writes nothing.
            // Seen on the real ripgrep and pre-commit clones: a conflicted merge with
            // `rerere.enabled` left one, and it was reported.
            let resolved = files.iter().any(|f| f.starts_with("postimage"));
            if new && resolved {
                files.sort();
                out.recorded.push(Recorded { path: p, files });
            }
        }
        if folder_new && !any_entry && out.recorded.len() == before {
            out.emptied_or_made.push(rr);
        }
    }
    out.recorded.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The submodule git dirs below `modules` (a git dir's `modules/`; names with slashes
/// nest, nested submodules too: a folder holding `HEAD` or `config` is one), at most
/// [`MAX_MODULES`]; `Err` names the bound reached. Also `indexstat`'s list of submodule
/// indexes.
pub(super) fn module_git_dirs(modules: &Path) -> Result<Vec<PathBuf>, (PathBuf, String)> {
    let mut out = Vec::new();
    let mut found = Found::default();
    collect_modules(modules, &mut out, &mut found, 0);
    match found.incomplete {
        Some(why) => Err(why),
        None => Ok(out),
    }
}

/// Submodule git dirs below `dir` (`modules/`, names with slashes nest), into `out`.
fn collect_modules(dir: &Path, out: &mut Vec<PathBuf>, found: &mut Found, depth: usize) {
    if found.incomplete.is_some() {
        return;
    }
    if depth > 8 {
        // A walk cut short is never a complete list (fail closed).
        found.incomplete = Some((
            dir.to_path_buf(),
            "submodule git dirs nested more than 8 levels deep: not walked".into(),
        ));
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if !std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if out.len() > MAX_MODULES {
            found.incomplete = Some((p, format!("more than {MAX_MODULES} submodule git dirs")));
            return;
        }
        if p.join("HEAD").exists() || p.join("config").exists() {
            out.push(p.clone());
            collect_modules(&p.join("modules"), out, found, depth + 1);
            // The submodule's own linked worktrees have submodules too
            // (`<git dir>/worktrees/<id>/modules/`: twenty-third red-team pass, R23-1).
            if let Ok(wts) = std::fs::read_dir(p.join("worktrees")) {
                for w in wts.flatten() {
                    if w.file_type().is_ok_and(|t| t.is_dir()) {
                        collect_modules(&w.path().join("modules"), out, found, depth + 1);
                    }
                }
            }
        } else {
            collect_modules(&p, out, found, depth + 1);
        }
    }
}

/// The pin's instant: the state file's modification time (`pin` writes it anew).
fn pinned_since(state: &Path) -> Option<(i64, i64)> {
    let m = std::fs::metadata(state).ok()?;
    Some((m.mtime(), m.mtime_nsec()))
}

/// Report the resolutions recorded since the pin; with `restore`, move each aside.
pub fn check(
    st: &super::state::State,
    state: &Path,
    restore: bool,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    let mk = |kind: EventKind, msg: String, path: &Path| {
        Event::new(Tool::WtCheck, kind, msg)
            .session(st.session.as_deref())
            .repo(&st.repo)
            .path(path)
    };
    let Some(since) = pinned_since(state) else {
        emit(mk(
            EventKind::CheckIncomplete,
            format!("{}: cannot stat the state file", state.display()),
            state,
        ));
        return Outcome::Incomplete;
    };
    let mut found = scan(&st.common_dir, since);
    // An rr-cache made with no entry switches rerere on only where the owner's config does
    // not: git's own first `commit` with `rerere.enabled` makes it (seen on the real
    // pre-commit clone), which is no finding.
    if !found.emptied_or_made.is_empty()
        && super::indexstat::owner_config_any(
            st.work_tree.as_deref(),
            &st.git_dir,
            &st.common_dir,
            &|v| v.is("rerere.enabled") && v.as_bool() == Some(true),
        ) == Some(true)
    {
        found.emptied_or_made.clear();
    }
    let mut outcome = Outcome::Clean;
    let mut q = Quarantine::new(state);
    for p in &found.not_folder {
        outcome = outcome.and(Outcome::Found);
        let why = "rr-cache is not a folder (a link: git reads and writes resolutions wherever it points); git never makes one";
        emit(
            mk(
                EventKind::ResolutionRecorded,
                format!("{}: {why}", p.display()),
                p,
            )
            .with("change", "not-a-folder")
            .with("level", "error")
            .with("why", why)
            .with("action", if restore { "quarantined" } else { "reported" }),
        );
        if restore {
            outcome = outcome.and(move_aside(&mut q, p, &mk, emit));
        }
    }
    for p in &found.merge_rr {
        if outcome == Outcome::Clean {
            outcome = Outcome::Found;
        }
        let why = "MERGE_RR written during the turn: rerere's list of conflicts being recorded, from which the owner's next merge, cherry-pick or rebase records a preimage and a resolution and replays them (a planted one names the agent's files)";
        emit(
            mk(
                EventKind::ResolutionRecorded,
                format!("{}: {why}", p.display()),
                p,
            )
            .with("change", "merge_rr")
            .with("level", "warning")
            .with("why", why)
            .with("action", if restore { "quarantined" } else { "reported" }),
        );
        if restore {
            outcome = outcome.and(move_aside(&mut q, p, &mk, emit));
        }
    }
    for p in &found.emptied_or_made {
        if outcome == Outcome::Clean {
            outcome = Outcome::Found;
        }
        let why = "rr-cache made (or emptied) during the turn: git records and replays conflict resolutions wherever rr-cache exists and rerere.enabled is unset";
        emit(
            mk(
                EventKind::ResolutionRecorded,
                format!("{}: {why}", p.display()),
                p,
            )
            .with("change", "rr_cache_made")
            .with("level", "warning")
            .with("why", why)
            .with("action", if restore { "quarantined" } else { "reported" }),
        );
        if restore {
            outcome = outcome.and(move_aside(&mut q, p, &mk, emit));
        }
    }
    for r in &found.recorded {
        if outcome == Outcome::Clean {
            outcome = Outcome::Found;
        }
        let id = r
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let why = "a conflict resolution recorded during the turn: the owner's git writes it into the work tree when it meets the same conflict (merge, rebase, cherry-pick), without a commit to review";
        emit(
            mk(
                EventKind::ResolutionRecorded,
                format!("{}: {why}", r.path.display()),
                &r.path,
            )
            .with("change", "recorded")
            .with("id", id)
            .with("files", r.files.clone())
            .with("level", "warning")
            .with("why", why)
            .with("action", if restore { "quarantined" } else { "reported" }),
        );
        if restore {
            outcome = outcome.and(move_aside(&mut q, &r.path, &mk, emit));
        }
    }
    if let Some((p, why)) = found.incomplete {
        outcome = outcome.and(Outcome::Incomplete);
        emit(mk(
            EventKind::CheckIncomplete,
            format!("{}: {why}", p.display()),
            &p,
        ));
    }
    outcome
}

fn move_aside(
    q: &mut Quarantine,
    p: &Path,
    mk: &dyn Fn(EventKind, String, &Path) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    match super::compare::set_aside(q, p) {
        Ok(to) => {
            emit(
                mk(
                    EventKind::Quarantined,
                    format!("{}: moved aside to {}", p.display(), to.display()),
                    p,
                )
                .with("quarantined_to", to.display().to_string()),
            );
            Outcome::Clean
        }
        Err(e) => {
            emit(mk(
                EventKind::RestoreFailed,
                format!("{}: cannot move it aside: {e}", p.display()),
                p,
            ));
            Outcome::Incomplete
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_newer_than_the_pin_are_found_and_older_ones_are_not() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("g");
        std::fs::create_dir_all(g.join("rr-cache/old")).unwrap();
        std::fs::write(g.join("rr-cache/old/preimage"), "a").unwrap();
        std::fs::write(g.join("rr-cache/old/postimage"), "b").unwrap();
        std::fs::create_dir_all(g.join("modules/s/rr-cache")).unwrap();
        std::fs::write(g.join("modules/s/HEAD"), "ref: refs/heads/main\n").unwrap();
        // The pin's instant as `check` takes it: a state file's modification time (the
        // kernel's file clock, which `ctime` uses too; `SystemTime::now` may run ahead of it).
        std::thread::sleep(std::time::Duration::from_millis(20));
        let state = t.path().join("state.json");
        std::fs::write(&state, "{}").unwrap();
        let since = pinned_since(&state).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(scan(&g, since).recorded.is_empty(), "as pinned");
        // A resolution written after the pin, in the common dir and in a submodule git dir.
        std::fs::create_dir_all(g.join("rr-cache/new")).unwrap();
        std::fs::write(g.join("rr-cache/new/postimage"), "evil").unwrap();
        std::fs::create_dir_all(g.join("modules/s/rr-cache/sub")).unwrap();
        std::fs::write(g.join("modules/s/rr-cache/sub/postimage"), "r").unwrap();
        let f = scan(&g, since);
        let paths = f
            .recorded
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>();
        assert!(
            paths.contains(&g.join("modules/s/rr-cache/sub")),
            "{paths:?}"
        );
        let new = f
            .recorded
            .iter()
            .find(|r| r.path == g.join("rr-cache/new"))
            .unwrap();
        assert_eq!(new.files, vec!["postimage".to_owned()]);
        // A preimage alone (a conflict not resolved) is no resolution: not reported.
        std::fs::create_dir_all(g.join("rr-cache/open")).unwrap();
        std::fs::write(g.join("rr-cache/open/preimage"), "conflict").unwrap();
        assert!(!scan(&g, since)
            .recorded
            .iter()
            .any(|r| r.path == g.join("rr-cache/open")));
        // rr-cache renamed into place (or changed) since the pin: every entry.
        std::fs::rename(g.join("rr-cache"), t.path().join("prepared")).unwrap();
        std::fs::rename(t.path().join("prepared"), g.join("rr-cache")).unwrap();
        assert!(scan(&g, since)
            .recorded
            .iter()
            .any(|r| r.path == g.join("rr-cache/old")));
        // A file rewritten in an old entry moves its ctime: found.
        std::fs::write(g.join("rr-cache/old/postimage"), "x").unwrap();
        assert!(scan(&g, since)
            .recorded
            .iter()
            .any(|r| r.path == g.join("rr-cache/old")));
        // An empty MERGE_RR (git's own commit writes one) names nothing: not reported.
        std::fs::write(g.join("MERGE_RR"), "").unwrap();
        assert!(scan(&g, since).merge_rr.is_empty());
        // MERGE_RR written since the pin, in the common dir and a worktree entry.
        std::fs::write(g.join("MERGE_RR"), "x").unwrap();
        std::fs::create_dir_all(g.join("worktrees/w")).unwrap();
        std::fs::write(g.join("worktrees/w/MERGE_RR"), "x").unwrap();
        assert_eq!(
            scan(&g, since).merge_rr,
            vec![g.join("MERGE_RR"), g.join("worktrees/w/MERGE_RR")]
        );
        // An empty rr-cache made since the pin (rerere switched on).
        let e = t.path().join("e");
        std::fs::create_dir_all(e.join("rr-cache")).unwrap();
        assert_eq!(scan(&e, since).emptied_or_made, vec![e.join("rr-cache")]);
        // rr-cache a link: reported as such.
        let h = t.path().join("h");
        std::fs::create_dir_all(&h).unwrap();
        std::os::unix::fs::symlink(t.path().join("elsewhere"), h.join("rr-cache")).unwrap();
        assert_eq!(scan(&h, since).not_folder, vec![h.join("rr-cache")]);
    }
}
