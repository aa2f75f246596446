//! `pin`: the protected set read now, and the state file written from it.

use super::*;

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
    let hops = hops::record(&loc, &hops::pin_trees(&loc, &worktrees))?;
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
        refs: super::state::Refs::from_value(&refs),
        accepted,
        hops,
        stat_relaxed: super::indexstat::owner_relaxes_stat_check(
            loc.work_tree.as_deref(),
            &loc.git_dir,
            &loc.common_dir,
        ),
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
pub(super) fn armed_at_pin(
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

pub(super) fn session_dir(opts: &Options, loc: &Located) -> Option<PathBuf> {
    match (&opts.session_dir, &opts.session) {
        (Some(d), _) => Some(crate::policy::resolve(&absolute(d))),
        (None, Some(s)) => Some(crate::policy::resolve(&default_session_dir(loc, s))),
        (None, None) => None,
    }
}

pub(super) fn write_state(path: &Path, state: &State) -> Result<(), IntegrityError> {
    let err =
        |e: &dyn std::fmt::Display| IntegrityError::StateWrite(path.to_path_buf(), e.to_string());
    let bytes = state.to_bytes().map_err(|e| err(&e))?;
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
    // `std::fs::read`'s open and read, the buffer's pages made present in one call.
    let bytes = std::fs::File::open(path)
        .and_then(|f| {
            let len = f.metadata()?.len();
            crate::fsx::read_whole(&f, len, u64::MAX)
        })
        .map_err(|e| IntegrityError::StateRead(path.to_path_buf(), e))?;
    match State::from_bytes(bytes) {
        Ok(s) => Ok(s),
        Err(state::FromBytesError::Format(f)) => {
            Err(IntegrityError::StateFormat(path.to_path_buf(), f))
        }
        Err(state::FromBytesError::Parse(e)) => {
            Err(IntegrityError::StateParse(path.to_path_buf(), e))
        }
    }
}
