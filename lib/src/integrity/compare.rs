//! `check`: the baseline of the state file compared with the repository now.

use super::*;
use crate::layout::walk::WalkCache;

// ---------------------------------------------------------------------------------------
// check

/// One difference between the baseline and now.
#[derive(Debug, Clone)]
pub(super) struct Diff {
    pub(super) key: Key,
    pub(super) kind: EventKind,
    pub(super) change: &'static str,
    pub(super) before: Node,
    pub(super) after: Option<Node>,
    /// Why (for layout findings).
    pub(super) why: Option<String>,
    /// What restore does.
    pub(super) plan: Plan,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Key {
    Rel(String),
    Abs(PathBuf),
}

impl Key {
    pub(super) fn path(&self, common_dir: &Path) -> PathBuf {
        match self {
            Key::Rel(r) => common_dir.join(r),
            Key::Abs(p) => p.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Plan {
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
    check_with_roots(opts, state, &[], emit)
}

/// [`check`], also walking `extra_roots` for planted repositories and bare-style git dirs
/// (the policy's writable roots, `check --policy`): every folder the session could write is
/// one the owner's git may be started in, and discovers a git dir in as readily.
pub fn check_with_roots(
    opts: &Options,
    state: &State,
    extra_roots: &[PathBuf],
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    check_with_roots_swept(opts, state, extra_roots, emit).0
}

/// [`check_with_roots`], also saying whether its sweep of the common dir for FIFOs, sockets
/// and devices ([`crate::audit::special::sweep`]) was complete and found none. The commit
/// scan needs that answer before gix opens refs and objects; when this check wrote nothing
/// in the common dir since (no `--restore`, or nothing restored or moved), it is this
/// answer, and the scan need not sweep again.
pub fn check_with_roots_swept(
    opts: &Options,
    state: &State,
    extra_roots: &[PathBuf],
    emit: &mut dyn FnMut(Event),
) -> (Outcome, bool) {
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
            return (Outcome::Incomplete, false);
        }
    };
    // The verdicts on index files recorded by the last check, beside the state file
    // (`crate::index_paths::Verdicts`: an index is read and judged again unless it is the
    // same file with the same stamps, written back before it was judged).
    let verdicts_path = index_verdicts_path(&opts.state);
    crate::index_paths::use_verdicts(verdicts_path.as_deref().map_or_else(
        crate::index_paths::Verdicts::empty,
        crate::index_paths::Verdicts::load,
    ));
    // The listings of the work trees' folders recorded by the last check, beside the state
    // file (`crate::layout::walk_cache`: a folder is read again unless its device, inode,
    // ctime and mtime are unchanged); loaded before the worktree entries, whose `logs/` and
    // `refs/` listings it holds too.
    let cache_path = walk_cache_path(&opts.state);
    let mut cache = cache_path
        .as_deref()
        .map_or_else(WalkCache::empty, WalkCache::load);
    // The worktree entries first: the collector takes their admin-dir files from this read.
    let layout = layout_entries_with(common, Some(&mut cache));
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
    let (mut diffs, agent_subs, snap_subs) = compare(state, &snap, &layout, session.is_some());
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
    // FIFOs, sockets and devices anywhere else in the common dir (refs, logs, objects,
    // `modules/`): git's blocking open of one hangs the owner's git. Reported; with
    // `--restore` moved aside (never deleted).
    // The worktree entries' listings, just read no-follow by `layout_entries`, stand for
    // their folders (`sweep_known`): each `worktrees/<id>`, its `refs/`, `logs/`, `logs/refs/`
    // is not listed a second time.
    let sp = crate::audit::special::sweep_known(common, &known_listings(common, &layout));
    let swept_clean = sp.found.is_empty() && sp.incomplete.is_none();
    if let Some((p, why)) = &sp.incomplete {
        outcome = Outcome::Incomplete;
        emit(
            mk(
                EventKind::CheckIncomplete,
                format!("{}: {why}", p.display()),
            )
            .path(p),
        );
    }
    let mut q_special = Quarantine::new(&opts.state);
    for (p, kind) in &sp.found {
        // One the baseline comparison names (a protected file, a hook): reported, restored
        // or moved aside there, with its own event. Inside a folder it names (a planted
        // worktree entry): reported here, moved aside with the folder.
        let in_moved = diffs.iter().any(|d| {
            let k = d.key.path(common);
            p.starts_with(&k) && *p != k
        });
        if !in_moved && diffs.iter().any(|d| *p == d.key.path(common)) {
            continue;
        }
        if outcome == Outcome::Clean {
            outcome = Outcome::Found;
        }
        let why = format!(
            "a {kind} in the git dir: {}",
            crate::audit::special::harm(kind)
        );
        let change = if *kind == crate::audit::special::REF_LINK {
            "ref_link"
        } else {
            "special_file"
        };
        emit(
            mk(
                EventKind::GitDirEntryChanged,
                format!("{}: {why}", p.display()),
            )
            .path(p)
            .with("change", change)
            .with("after", *kind)
            .with("level", "error")
            .with("why", why.clone())
            .with(
                "action",
                if opts.restore && !in_moved {
                    "quarantined"
                } else {
                    "reported"
                },
            ),
        );
        if opts.restore && !in_moved && !move_aside(&mut q_special, p, &mk, emit) {
            outcome = Outcome::Incomplete;
        }
    }
    // Repositories behind the index's gitlinks (what the owner's `git status` enters).
    let indexes = index_work_trees(state, &snap.entries);
    // Work-tree files the owner's git runs (relative programs, what the hooks run), in every
    // work tree the session could write, one added during the turn included (R5-3, R5-7).
    outcome = outcome.and(hops::compare(state, &indexes, &mk, emit));
    // Index entries whose stat data makes git take the agent's content for the entry's
    // object (R16-12): reported; with `--restore` the file's ctime is moved so git reads it.
    outcome = outcome.and(super::indexstat::check(
        &indexes,
        common,
        &opts.state,
        state.stat_relaxed,
        opts.restore,
        &mk,
        emit,
    ));
    let mut emb = embedded::armed(&indexes, common, &mut cache);
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
    for r in extra_roots {
        if !roots.contains(r) {
            roots.push(r.clone());
        }
    }
    let more = embedded::nested(&roots, state.work_tree.as_deref(), common, &mut cache);
    if let Some(p) = &cache_path {
        save_walk_cache(p, &cache);
    }
    let verdicts = crate::index_paths::take_verdicts();
    if let (Some(p), Some(v)) = (&verdicts_path, verdicts) {
        save_index_verdicts(p, &v);
    }
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
    // The submodule git dirs made in the turn under the session's own worktree entry: the
    // agent's own repositories, judged as nested ones are; clean, an info line each.
    let agent_dirs: Vec<PathBuf> = agent_subs.iter().map(|r| common.join(r)).collect();
    let mut armed_subs: Vec<PathBuf> = Vec::new();
    if let (false, Some(sd)) = (agent_dirs.is_empty(), state.session_dir.as_deref()) {
        let judged = super::session_modules::judge(&agent_dirs, sd, common, &mut cache);
        emb.problems.extend(judged.problems);
        for (g, f) in judged.findings {
            if !armed_subs.contains(&g) {
                armed_subs.push(g);
            }
            if !emb
                .findings
                .iter()
                .any(|e| e.rule == f.rule && e.path == f.path && e.message == f.message)
            {
                emb.findings.push(f);
            }
        }
        for g in &agent_dirs {
            if armed_subs.iter().any(|a| g.starts_with(a)) {
                continue;
            }
            emit(
                mk(
                    EventKind::SessionSubmoduleGitDir,
                    format!(
                        "{}: submodule git dir made in the session's worktree entry (the agent's own repository: audited, not compared)",
                        g.display()
                    ),
                )
                .path(g)
                .with("level", "info")
                .with("action", "none"),
            );
        }
    }
    // Every other submodule git dir (pinned under the session's entry, the owner's under
    // `modules/`, other entries'): its `core.worktree` resolved as git does, at every check —
    // the config bytes may be the pinned ones while a link on the way was retargeted
    // (`subwt`). Reported only: what changed is a link in a work tree (the agent's files).
    pinned_core_worktrees(
        state,
        common,
        &snap.entries,
        &snap_subs,
        &agent_subs,
        &mut emb,
    );
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
        // A FIFO, socket or device in a nested repository's git dir: moved aside with
        // `--restore` (nothing else of a nested repository is touched).
        let aside = opts.restore && f.rule == crate::audit::rules::SPECIAL_FILE.id;
        emit(
            mk(EventKind::EmbeddedRepositoryArmed, f.message.clone())
                .path(&f.path)
                .with("rule", f.rule)
                .with("level", format!("{:?}", f.level).to_ascii_lowercase())
                .with("action", if aside { "quarantined" } else { "reported" }),
        );
        if aside && !move_aside(&mut q_special, &f.path, &mk, emit) {
            outcome = Outcome::Incomplete;
        }
    }
    // An armed one, with `--restore`: moved aside whole (the outermost), never deleted.
    if opts.restore {
        for g in &armed_subs {
            if armed_subs.iter().any(|a| a != g && g.starts_with(a)) {
                continue; // moved aside with its parent
            }
            if !move_aside(&mut q_special, g, &mk, emit) {
                outcome = Outcome::Incomplete;
            }
        }
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
    (outcome, swept_clean)
}

/// Was this finding present at pin time and recorded as accepted (`pin --accept-armed`,
/// or a finding below error level, which pin records without asking)?
pub(super) fn accepted(state: &State, kind: &str, rule: &str, path: &Path, key: &str) -> bool {
    state
        .accepted
        .iter()
        .any(|a| a.kind == kind && a.rule == rule && a.path == path && a.key == key)
}

/// The git dirs of a snapshot, as keys relative to the common dir: `""` (the common dir),
/// every `worktrees/<id>`, every submodule git dir (a folder below a `modules` folder that
/// holds `HEAD` or `config`).
pub(super) fn git_dir_bases(entries: &BTreeMap<String, Node>) -> BTreeSet<String> {
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
pub(super) fn in_progress_diffs(
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
pub(super) fn index_path_diffs(
    root: &Dir,
    entries: &BTreeMap<String, Node>,
) -> (Vec<Diff>, Vec<Problem>) {
    const SHOWN: usize = 3;
    let mut diffs = Vec::new();
    let mut problems = Vec::new();
    for base in git_dir_bases(entries) {
        let name = OsStr::new("index");
        let rel_index = Path::new(&base).join(name);
        // The index in one `openat2` from the common dir (no link crossed); on any failure
        // of that open, the git dir walked and the index opened in it, as before (which
        // names the component and the kind of error).
        let opened = match root.open_regular_at_once(&rel_index, embedded::INDEX_LIMIT) {
            Some(o) => o,
            None => match root.walk(Path::new(&base)) {
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
            }
            .open_regular(name, embedded::INDEX_LIMIT),
        };
        let dir_path = root.path().join(&base);
        let index = match opened.and_then(crate::index_paths::read_shared_opened) {
            Ok(i) => i,
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
        let bad = match index.bad_entries() {
            Ok(b) => b,
            Err(why) => {
                problems.push(Problem {
                    path: dir_path.join(name),
                    reason: format!("{}: {why}", dir_path.join(name).display()),
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
            after: root
                .walk(Path::new(&base))
                .ok()
                .and_then(|dir| read_node(&dir, name).ok()),
            why: Some(why.join("; ")),
            plan: Plan::Quarantine,
        });
    }
    (diffs, problems)
}

/// The listings `crate::layout::worktree_entries` read of each worktree entry's admin dir
/// and its `refs/`, `logs/`, `info/`, `logs/refs/`, by path relative to `common`, for the
/// sweep of `common` ([`crate::audit::special::sweep_known`]). Only entries whose admin dir
/// is `common/worktrees/<name>` as the sweep names it (the layout read resolves the common
/// dir; a different spelling shares nothing), keyed by the folder's raw name (an entry's id
/// is its lossy text, which two names can share).
pub(super) fn known_listings(
    common: &Path,
    layout: &BTreeMap<String, WorktreeEntry>,
) -> crate::audit::special::Known {
    let wt_dir = common.join("worktrees");
    let mut out = crate::audit::special::Known::default();
    for e in layout.values() {
        let (Some(parent), Some(name)) = (e.admin_dir.parent(), e.admin_dir.file_name()) else {
            continue;
        };
        if parent != wt_dir {
            continue;
        }
        for (rel, listing) in &e.listings {
            let mut key = Path::new("worktrees").join(name);
            if !rel.is_empty() {
                key.push(rel);
            }
            out.insert(key, listing.clone());
        }
    }
    out
}

/// `inprogress::judge` over every git dir of the snapshot: `(base, findings)`.
pub(super) fn in_progress(
    root: &Dir,
    entries: &BTreeMap<String, Node>,
    problems: &mut Vec<Problem>,
    to_problem: &dyn Fn(&NfError) -> Problem,
) -> Vec<(String, Vec<inprogress::Armed>)> {
    let mut out = Vec::new();
    for base in git_dir_bases(entries) {
        // No operation folder there (the usual case): one `openat2` each from the common
        // dir (no link crossed, beneath it) answering "no such name", instead of the git dir
        // opened, each name looked up in it and the git dir closed. Anything else for one of
        // them (a folder, a file, a link, the git dir itself a link, an error, no `openat2`)
        // is judged below, as before.
        let absent = |op: &str| {
            let rel = if base.is_empty() {
                PathBuf::from(op)
            } else {
                Path::new(&base).join(op)
            };
            root.certainly_absent(&rel)
        };
        if crate::catalogue::SEQUENCER_DIRS.iter().all(|op| absent(op)) {
            continue;
        }
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
/// Where the walk's listing record of the state file `state` is kept: beside it, as
/// `<state>.walk` (the owner's folder, outside the agent's reach, like the state file).
pub fn walk_cache_path(state: &Path) -> Option<PathBuf> {
    let name = state.file_name()?;
    let mut n = name.to_os_string();
    n.push(".walk");
    Some(state.with_file_name(n))
}

/// Where `check` keeps the verdicts on index files (`crate::index_paths::Verdicts`): beside
/// the state file, `<state>.index`.
pub fn index_verdicts_path(state: &Path) -> Option<PathBuf> {
    let mut n = state.file_name()?.to_os_string();
    n.push(".index");
    Some(state.with_file_name(n))
}

/// Write the index verdicts when they changed; as for the listing record, a failure costs
/// the next check speed only.
fn save_index_verdicts(path: &Path, v: &crate::index_paths::Verdicts) {
    if !v.changed() {
        return;
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    if let Ok(dir) = Dir::open_trusted(parent) {
        let _ = dir.write_atomic(name, &v.to_bytes(), 0o600);
    }
}

/// Write the listing record when it changed. A failure costs the next check speed only
/// (every folder is read again), so it is not an error of the check.
fn save_walk_cache(path: &Path, cache: &WalkCache) {
    if !cache.changed() {
        return;
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    if let Ok(dir) = Dir::open_trusted(parent) {
        let _ = dir.write_atomic(name, &cache.to_bytes(), 0o600);
    }
}

pub(super) fn index_work_trees(
    state: &State,
    entries: &BTreeMap<String, Node>,
) -> Vec<(PathBuf, PathBuf)> {
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
pub(super) fn suppressed_keys(diffs: &[Diff]) -> BTreeSet<Key> {
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

pub(super) fn event_kinds(rel: &str, change: &str) -> EventKind {
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

pub(super) fn same(rel: &str, a: &Node, b: &Node) -> bool {
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

pub(super) fn change_word(before: &Node, after: &Node) -> &'static str {
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
pub(super) fn merged<'a>(
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

/// [`super::subwt`] over the submodule git dirs `subs` ([`module_git_dirs`] of `entries`) that are not the agent's new
/// ones (those are judged by `session_modules`): a refused `core.worktree` is a finding
/// (`embedded_repository_armed`, reported), a part that cannot be read a problem.
fn pinned_core_worktrees(
    state: &State,
    common: &Path,
    entries: &BTreeMap<String, Node>,
    subs: &BTreeSet<String>,
    agent_subs: &BTreeSet<String>,
    emb: &mut super::embedded::Embedded,
) {
    let gitdir_of =
        |e: &str| entry_gitdir_path(&common.join(e), entries.get(&format!("{e}/gitdir")));
    let sd = state
        .session_dir
        .as_deref()
        .filter(|_| state.session.is_some());
    let mut roots: Option<Vec<PathBuf>> = None;
    let mut real_common: Option<PathBuf> = None;
    for rel in subs.iter().filter(|r| !agent_subs.contains(*r)) {
        let g = common.join(rel);
        let value = match crate::audit::special::read_regular(&g.join("config"), 1 << 20) {
            Ok(b) => crate::config::last_value_in_file(&b, "core.worktree"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                emb.problems
                    .push((g.join("config"), format!("cannot read the config: {e}")));
                continue;
            }
        };
        let Some(value) = value else { continue };
        let own = match (sd, worktree_id(rel)) {
            (Some(sd), Some(id)) => gitdir_of(&format!("worktrees/{id}"))
                .is_some_and(|p| p.starts_with(sd) && p != sd)
                .then_some(sd),
            _ => None,
        };
        let roots = roots.get_or_insert_with(|| {
            let mut r: Vec<PathBuf> = state.work_tree.iter().cloned().collect();
            // Every linked worktree: the common dir's (`worktrees/<id>`) and the submodules'
            // own (`modules/<name>/worktrees/<id>`, at any nesting: the work trees of a
            // submodule's linked worktree's submodules are there).
            for k in entries.keys() {
                let Some(e) = k.strip_suffix("/gitdir") else {
                    continue;
                };
                let (p, _) = split(e);
                if p == "worktrees" || p.ends_with("/worktrees") {
                    r.extend(gitdir_of(e));
                }
            }
            r
        });
        let place = match own {
            Some(sd) => super::subwt::Place::Session(sd),
            None => super::subwt::Place::WorkTrees(roots),
        };
        let rc = real_common.get_or_insert_with(|| super::subwt::real_common(common));
        match super::subwt::judge(&g, &value, rc, &place) {
            Ok(_) => {}
            Err(Ok(r)) => {
                let whose = if own.is_some() {
                    "a submodule git dir of the session's worktree entry"
                } else {
                    "the owner's submodule git dir"
                };
                let advice = match &r.link {
                    Some(l) => format!(
                        "nothing was changed: the link {} is in a work tree (the agent's file); before running git in that submodule the owner should look at it and remove it (or replace it by a folder), or set core.worktree back to what git writes",
                        l.display()
                    ),
                    None => "nothing was changed: before running git in that submodule the owner should set core.worktree back to what git writes (leading `..`s, then the submodule's path in its work tree)".into(),
                };
                emb.findings.push(crate::audit::Finding {
                    rule: crate::audit::rules::ARMED_KEY.id,
                    name: crate::audit::rules::ARMED_KEY.name,
                    level: crate::catalogue::Severity::Error,
                    path: g.join("config"),
                    repo: Some(g.clone()),
                    message: format!(
                        "{}: core.worktree `{}` of {}{}: {}; {}",
                        g.join("config").display(),
                        value,
                        whose,
                        r.leads_to
                            .as_ref()
                            .map(|p| format!(" leads to {}", p.display()))
                            .unwrap_or_default(),
                        r.why,
                        advice
                    ),
                    details: Default::default(),
                });
            }
            Err(Err(why)) => emb.problems.push((g.join("config"), why)),
        }
    }
}

/// The submodule git dirs of a snapshot (a folder below a `modules` folder that holds `HEAD`
/// or `config`), less the linked worktree entries of one of them (`<sub>/worktrees/<id>`
/// holds `HEAD` too, but is an entry: [`sub_worktree_entry`]).
pub(super) fn module_git_dirs(entries: &BTreeMap<String, Node>) -> BTreeSet<String> {
    let cand: BTreeSet<String> = git_dir_bases(entries)
        .into_iter()
        .filter(|b| b.starts_with("modules/") || b.contains("/modules/"))
        .collect();
    cand.iter()
        .filter(|b| {
            let (p, _) = split(b);
            let (pp, w) = split(p);
            !(w == "worktrees" && cand.contains(pp))
        })
        .cloned()
        .collect()
}

/// The linked worktree entry of a submodule git dir (`<sub>/worktrees/<id>`, `<sub>` one of
/// `subs`) that `rel` is or lies in, the innermost one, and the rest of `rel` below it
/// (`""` for the entry itself).
pub(super) fn sub_worktree_entry<'k>(
    rel: &'k str,
    subs: &BTreeSet<String>,
) -> Option<(&'k str, &'k str)> {
    const W: &str = "/worktrees/";
    let mut found = None;
    for (i, _) in rel.match_indices(W) {
        if !subs.contains(&rel[..i]) {
            continue;
        }
        let after = &rel[i + W.len()..];
        let id = after.split('/').next().unwrap_or(after);
        if id.is_empty() {
            continue;
        }
        let end = i + W.len() + id.len();
        found = Some((&rel[..end], rel[end..].trim_start_matches('/')));
    }
    found
}

/// Is `node` the `commondir` git's `worktree add` writes (`../..`, the entry's submodule git
/// dir; git strips the trailing newline when it reads it, `setup.c:get_common_dir_noenv`)?
pub(super) fn commondir_is_gits(node: Option<&Node>) -> bool {
    let Some(Node::File { content, .. }) = node else {
        return false;
    };
    content
        .bytes()
        .is_some_and(|b| b.strip_suffix(b"\n").unwrap_or(&b) == b"../..")
}

/// The id of the worktree entry a key belongs to.
pub(super) fn worktree_id(rel: &str) -> Option<&str> {
    rel.strip_prefix("worktrees/")
        .map(|r| r.split('/').next().unwrap_or(r))
}

pub(super) fn compare(
    state: &State,
    snap: &Snapshot,
    layout: &BTreeMap<String, WorktreeEntry>,
    has_session: bool,
) -> (Vec<Diff>, BTreeSet<String>, BTreeSet<String>) {
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
    // The linked worktree entries of submodule git dirs (`<sub>/worktrees/<id>`): the
    // session's own are those whose `gitdir` names a worktree inside the session folder (the
    // baseline's `gitdir` for an entry of the baseline; for a new one, its `gitdir` now, and
    // its `commondir` git's `../..`, so that it names its submodule git dir and nothing the
    // agent built, R23-8).
    let pinned_subs = module_git_dirs(&state.entries);
    let mut subs = pinned_subs.clone();
    let snap_subs = module_git_dirs(&snap.entries);
    subs.extend(snap_subs.iter().cloned());
    // A submodule git dir of the baseline without its `worktrees` key: pinned by a build
    // that did not walk the submodules' linked worktree entries (each submodule git dir's
    // `worktrees` is recorded, absent or not, since).
    let unrecorded = |sub: &str| {
        pinned_subs.contains(sub) && !state.entries.contains_key(&format!("{sub}/worktrees"))
    };
    let in_session = |p: &Path| sd.is_some_and(|sd| p.starts_with(sd) && p != sd);
    let gitdir_of = |entries: &BTreeMap<String, Node>, e: &str| {
        entry_gitdir_path(&common.join(e), entries.get(&format!("{e}/gitdir")))
    };
    let sub_own = |e: &str| -> bool {
        match state.entries.get(e) {
            Some(n) if n.is_dir() => gitdir_of(&state.entries, e).is_some_and(|p| in_session(&p)),
            _ => {
                has_session
                    && gitdir_of(&snap.entries, e).is_some_and(|p| in_session(&p))
                    && commondir_is_gits(snap.entries.get(&format!("{e}/commondir")))
            }
        }
    };
    // Submodule git dirs made during the turn under the session's own worktree entry
    // (`git submodule update --init` in the session's worktree): the agent's own
    // repositories, audited (`session_modules`), not compared.
    let agent_subs = session_module_git_dirs(
        common,
        &state.entries,
        &snap.entries,
        &snap_subs,
        &pinned_subs,
        &own,
    );
    let agents = |k: &str| -> bool {
        if agent_subs.is_empty() {
            return false;
        }
        let below =
            |m: &str| k == m || (k.starts_with(m) && k.as_bytes().get(m.len()) == Some(&b'/'));
        // The innermost submodule git dir `k` is in must be one of the agent's: a git dir
        // below one of them that git would not enter is compared as before.
        match snap_subs
            .iter()
            .filter(|m| below(m))
            .max_by_key(|m| m.len())
        {
            Some(m) => agent_subs.contains(m),
            None => false,
        }
    };
    let agents_parent = |k: &str, before: &Node, now: Option<&Node>| -> bool {
        // A folder made during the turn on the way to one of them (`worktrees/<id>/modules`,
        // `modules/a` of a submodule named `a/b`); or the session's own entry's `modules`
        // folder made during the turn and empty (what is left when an armed one was moved
        // aside: nothing git reads).
        if !(matches!(before, Node::Absent) && now.is_some_and(Node::is_dir)) {
            return false;
        }
        let Some(id) = worktree_id(k) else {
            return false;
        };
        let m = format!("worktrees/{id}/modules");
        let empty_own_modules = k == m
            && own(id)
            && snap
                .entries
                .range::<str, _>((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded))
                .next()
                .is_none_or(|(n, _)| !n.starts_with(&format!("{m}/")));
        (k == m || k.starts_with(&format!("{m}/")))
            && (empty_own_modules
                || agent_subs
                    .iter()
                    .any(|c| c.starts_with(k) && c.as_bytes().get(k.len()) == Some(&b'/')))
    };
    let absent = Node::Absent;
    // Every key of the baseline and of now, in order: one merge of the two sorted maps.
    for (k, before, now) in merged(&state.entries, &snap.entries) {
        if git_written_unreported(k) {
            continue; // recorded by an older pin; git writes it on its own
        }
        let sub_entry = sub_worktree_entry(k, &subs);
        // In an entry of a submodule git dir whose `worktrees` the baseline lacks (the
        // outermost such): nothing to compare with. The entry is reported (the owner's
        // entries may be among them), never moved; a new pin records it.
        let unrecorded_at = k
            .match_indices("/worktrees/")
            .map(|(i, _)| i)
            .find(|&i| unrecorded(&k[..i]));
        if let Some(i) = unrecorded_at {
            let id = &k[i + "/worktrees/".len()..];
            if let (false, Some(n)) = (id.contains('/'), now) {
                diffs.push(Diff {
                    key: Key::Rel(k.clone()),
                    kind: EventKind::WorktreeEntryChanged,
                    change: "unrecorded",
                    before: Node::Absent,
                    after: Some(n.clone()),
                    why: Some(
                        "a linked worktree entry of a submodule git dir, not in the state file (pinned by a build that did not record them): not compared; pin again".into(),
                    ),
                    plan: Plan::Report,
                });
            }
            continue;
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
        // A link, FIFO or device is never git's own layout: in the session's own entry too
        // it is a finding (ninth red-team pass, R9-13/R9-14: `gitdir` or `HEAD` made a link
        // to a FIFO hung safe-git and the owner's git; a link to an owner's file had
        // `git worktree repair` write through it).
        let not_plain = matches!(after, Some(Node::Link { .. }) | Some(Node::Special { .. }));
        let own_skip = !not_plain
            && worktree_id(k).is_some_and(|id| {
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
        if !not_plain && (agents(k) || agents_parent(k, before, now)) {
            continue;
        }
        // The session's own entry of a submodule git dir: its per-worktree state may change
        // and it may be added or removed; its `gitdir` must keep naming a worktree in the
        // session folder and its `commondir` stay git's `../..`; `config.worktree`, `modules/`
        // and any name git does not keep there are compared as everywhere.
        let sub_own_skip = !not_plain
            && sub_entry.is_some_and(|(e, rest)| {
                let top = rest.split('/').next().unwrap_or("");
                let gone = !snap.entries.get(e).is_some_and(Node::is_dir);
                sub_own(e)
                    && (gone
                        || match top {
                            "" => true,
                            "config.worktree" => false,
                            "commondir" => commondir_is_gits(now),
                            "gitdir" => gitdir_of(&snap.entries, e).is_some_and(|p| in_session(&p)),
                            t => WORKTREE_FILES.contains(&t) || is_worktree_state_name(t),
                        })
            });
        if sub_own_skip {
            continue;
        }
        // A submodule git dir's `worktrees` folder made during the turn (`git worktree add`
        // in the submodule): each entry in it is judged on its own.
        if matches!(before, Node::Absent)
            && now.is_some_and(Node::is_dir)
            && split(k).1 == "worktrees"
            && subs.contains(split(k).0)
        {
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
                    diffs.push(planted_entry(
                        k,
                        before,
                        after_n,
                        format!(
                            "new worktree entry `{id}` that is not the session's (its gitdir names {})",
                            now_wt.get(id).and_then(|w| w.path.as_ref()).map_or("nothing".into(), |p| p.display().to_string())
                        ),
                    ));
                }
                continue;
            }
        }
        if let Some((e, "")) = sub_entry {
            if matches!(before, Node::Absent) {
                // A new entry that is not the session's, as a new `worktrees/<id>` above.
                if !same(k, before, after_n) {
                    diffs.push(planted_entry(
                        k,
                        before,
                        after_n,
                        format!(
                            "new worktree entry `{}` of the submodule git dir {} that is not the session's (its gitdir names {}; its commondir {})",
                            split(e).1,
                            common.join(split(split(e).0).0).display(),
                            gitdir_of(&snap.entries, e)
                                .map_or("nothing".into(), |p| p.display().to_string()),
                            if commondir_is_gits(snap.entries.get(&format!("{e}/commondir"))) {
                                "is git's `../..`"
                            } else {
                                "is not git's `../..`"
                            }
                        ),
                    ));
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
        // In a submodule's linked worktree entry (not below its `modules/`): reported as the
        // common dir's entries are.
        let entry_kind = sub_entry.and_then(|(_, rest)| {
            let mut parts = rest.split('/');
            let top = parts.next().unwrap_or("");
            let below_modules = top == "modules" && parts.next().is_some();
            (!below_modules).then(|| {
                if rest == "config.worktree" {
                    EventKind::ConfigChanged
                } else {
                    EventKind::WorktreeEntryChanged
                }
            })
        });
        diffs.push(Diff {
            key: Key::Rel(k.clone()),
            kind: entry_kind.unwrap_or_else(|| event_kinds(k, change_word(before, after_n))),
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
    (diffs, agent_subs, snap_subs)
}

/// The submodule git dirs made during the turn under the session's own worktree entry
/// (`worktrees/<id>/modules/**`, `own(id)`: the entry whose `gitdir` names a worktree in the
/// session folder, as the comparison decides it): a git dir of the snapshot (`HEAD` or
/// `config`) that the baseline lacks, below no submodule git dir of the baseline, and that
/// git would enter as one (`HEAD`, `objects/`, `refs/`: [`crate::audit::looks_like_git_dir`];
/// a folder git would not enter is compared as every other new folder is). Relative to the
/// common dir. Those nested in one another are all listed. `now_subs`: [`module_git_dirs`]
/// of `now`.
pub(super) fn session_module_git_dirs(
    common: &Path,
    before: &BTreeMap<String, Node>,
    now: &BTreeMap<String, Node>,
    now_subs: &BTreeSet<String>,
    pinned: &BTreeSet<String>,
    own: &dyn Fn(&str) -> bool,
) -> BTreeSet<String> {
    now_subs
        .iter()
        .filter(|g| {
            let Some(id) = worktree_id(g) else {
                return false;
            };
            g.starts_with(&format!("worktrees/{id}/modules/"))
                && own(id)
                && !before.contains_key(g.as_str())
                && !pinned
                    .iter()
                    .any(|p| g.starts_with(p.as_str()) && g.as_bytes().get(p.len()) == Some(&b'/'))
                && matches!(now.get(&format!("worktrees/{id}")), Some(Node::Dir { .. }))
                && crate::audit::looks_like_git_dir(&common.join(g))
        })
        .cloned()
        .collect()
}

/// Move `p` (a FIFO, socket or device) into the run's quarantine without opening it: a
/// rename from its folder, opened without following links. Never deletes.
/// A worktree entry made during the turn that is not the session's (of the common dir or of a
/// submodule git dir): one `worktree_entry_planted` event, the entry moved aside whole.
fn planted_entry(k: &str, before: &Node, after: &Node, why: String) -> Diff {
    Diff {
        key: Key::Rel(k.to_owned()),
        kind: EventKind::WorktreeEntryPlanted,
        change: "created",
        before: before.clone(),
        after: Some(after.clone()),
        why: Some(why),
        plan: Plan::Quarantine,
    }
}

/// Moves `p` aside into `q` (never deleted) and says so: a `quarantined` event naming where
/// it went, or `restore_failed` with the reason. `false` when it could not be moved (the
/// check is then incomplete). `mk` makes an event of this check (session, repository).
fn move_aside(
    q: &mut Quarantine,
    p: &Path,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> bool {
    match set_aside(q, p) {
        Ok(to) => {
            emit(
                mk(
                    EventKind::Quarantined,
                    format!("{}: moved aside to {}", p.display(), to.display()),
                )
                .path(p)
                .with("quarantined_to", to.display().to_string()),
            );
            true
        }
        Err(e) => {
            emit(
                mk(
                    EventKind::RestoreFailed,
                    format!("{}: cannot move it aside: {e}", p.display()),
                )
                .path(p),
            );
            false
        }
    }
}

pub(super) fn set_aside(q: &mut Quarantine, p: &Path) -> Result<PathBuf, NfError> {
    let key = Key::Abs(p.to_path_buf());
    let (dest, name, dest_path) = q.slot(&key)?;
    let (Some(parent), Some(file)) = (p.parent(), p.file_name()) else {
        return Err(NfError::Escape {
            path: p.to_path_buf(),
        });
    };
    Dir::open_abs(parent)?.move_out(file, &dest, &name)?;
    Ok(dest_path)
}
