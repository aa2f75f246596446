//! The `wt-check pin | check | scan` commands: arguments in, events and summary out, an exit
//! code back. The binary only parses flags and calls these.

use super::{IntegrityError, Options, Outcome};
use crate::cli::Format;
use crate::events::{Event, EventKind, Sink, Tool};
use crate::exit::Code;
use std::path::PathBuf;

/// `wt-check pin`.
#[derive(Debug, Clone)]
pub struct PinArgs {
    pub repo: PathBuf,
    pub state: PathBuf,
    pub session: Option<String>,
    pub worktree_dir: Option<PathBuf>,
    /// Record what is armed as accepted instead of refusing.
    pub accept_armed: bool,
    pub format: Format,
}

/// `wt-check check` and `wt-check scan`.
#[derive(Debug, Clone)]
pub struct CheckArgs {
    pub repo: PathBuf,
    pub state: PathBuf,
    pub session: Option<String>,
    pub restore: bool,
    pub audit_log: Option<PathBuf>,
    /// Run the commit scan after the git-folder check.
    pub scan: bool,
    /// The session's policy (`--policy`): its writable roots are walked for repositories.
    pub policy: Option<PathBuf>,
    pub format: Format,
}

fn fail(e: &IntegrityError) -> Code {
    eprintln!("wt-check: {e}");
    crate::exit::INCOMPLETE
}

/// Pin without printing: locate the repository, take the ref snapshot, write the state file.
/// Shared by `wt-check pin` and the session-start hook.
pub fn pin_state(a: &PinArgs) -> Result<super::Pinned, IntegrityError> {
    let opts = Options {
        repo: a.repo.clone(),
        state: a.state.clone(),
        session: a.session.clone(),
        session_dir: a.worktree_dir.clone(),
        restore: false,
        accept_armed: a.accept_armed,
    };
    let loc = super::locate(&a.repo)?;
    // The ref snapshot reads through gix's blocking opens: a FIFO in the common dir would
    // hang the pin. git never makes one; refuse, naming it.
    let sp = crate::audit::special::sweep(&loc.common_dir);
    if let Some((p, kind)) = sp.found.first() {
        return Err(IntegrityError::Unreadable {
            path: p.clone(),
            reason: format!(
                "a {kind} in the git dir ({}); move it out of the git dir and pin again",
                crate::audit::special::harm(kind)
            ),
        });
    }
    let refs =
        super::scanlink::snapshot(&loc.common_dir).map_err(|e| IntegrityError::Unreadable {
            path: a.repo.clone(),
            reason: format!("cannot take the ref snapshot: {e}"),
        })?;
    let pinned = super::pin(&opts, refs)?;
    // Every object store (the repository's and each submodule's, `stores`): loose object
    // identities (a loose object that does not hash to its name is not recorded), commit-graph
    // files not in the previous record verified against the commits, pack identities (a pack
    // new since the previous pin of this state path verified). What fails is not recorded, and
    // refuses the pin unless the owner accepts it.
    let found = super::stores::pin(&pinned.state, &pinned.path)
        .map_err(|reason| IntegrityError::StateWrite(pinned.path.clone(), reason))?;
    // The index entries the pin cannot vouch for (`indexstat::pin`): what the check looks at
    // in an index not written during the turn.
    super::indexstat::pin(
        &super::compare::index_work_trees(&pinned.state, &pinned.state.entries),
        &pinned.state.common_dir,
        &pinned.path,
        pinned.state.stat_relaxed,
    )
    .map_err(|reason| IntegrityError::StateWrite(pinned.path.clone(), reason))?;
    if !found.is_empty() && !a.accept_armed {
        return Err(IntegrityError::Armed {
            repo: pinned.state.repo.clone(),
            findings: found,
        });
    }
    Ok(pinned)
}

/// Pin: write the state file; print a summary.
pub fn pin(a: &PinArgs) -> Code {
    match pin_state(a) {
        Ok(p) => {
            let own = p.state.worktrees.values().filter(|w| w.own).count();
            let summary = serde_json::json!({
                "state": p.path,
                "common_dir": p.state.common_dir,
                "entries": p.state.entries.len(),
                "includes": p.state.includes.len(),
                "worktrees": p.state.worktrees.len(),
                "own_worktrees": own,
                "session_dir": p.state.session_dir,
                "accepted": p.state.accepted.len(),
            });
            let text = match a.format {
                Format::Json => format!("{summary}\n"),
                Format::Human => format!(
                    "pinned {} entries, {} include targets, {} worktree entries ({} the session's) of {} into {}\n",
                    p.state.entries.len(),
                    p.state.includes.len(),
                    p.state.worktrees.len(),
                    own,
                    p.state.common_dir.display(),
                    p.path.display()
                ),
            };
            // The state file is written; a summary that cannot be shown is still an error.
            match crate::cli::print("wt-check", &text, crate::exit::INCOMPLETE) {
                Ok(()) => crate::exit::CLEAN,
                Err(c) => c,
            }
        }
        Err(e @ IntegrityError::Armed { .. }) => {
            eprintln!("wt-check: {e}");
            crate::exit::FOUND
        }
        Err(e) => fail(&e),
    }
}

/// Where events go: stdout (JSON lines or human lines) and, optionally, the audit log. A
/// sink that cannot be written is said once on stderr and makes the outcome incomplete: the
/// caller did not get the whole answer.
struct Out {
    format: Format,
    log: Option<Sink>,
    failed_log: bool,
    failed_stdout: bool,
}

impl Out {
    fn new(a: &CheckArgs) -> Out {
        Out {
            format: a.format,
            log: a.audit_log.clone().map(Sink::File),
            failed_log: false,
            failed_stdout: false,
        }
    }

    fn emit(&mut self, e: Event) {
        let line = match self.format {
            Format::Json => e.to_line(),
            Format::Human => format!("{}: {}\n", e.event.as_str(), e.message),
        };
        if !self.failed_stdout
            && crate::cli::print("wt-check", &line, crate::exit::INCOMPLETE).is_err()
        {
            self.failed_stdout = true;
        }
        if let Some(l) = &self.log {
            if let Err(err) = l.emit(&e) {
                if !self.failed_log {
                    eprintln!("wt-check: cannot append to the audit log: {err}");
                }
                self.failed_log = true;
            }
        }
    }

    fn failed(&self) -> bool {
        self.failed_log || self.failed_stdout
    }
}

/// Cannot check: the reason as an event on stdout (and in the audit log) and as one line on
/// stderr, where errors go.
fn cannot(out: &mut Out, path: &std::path::Path, why: String) -> Code {
    eprintln!("wt-check: {why}");
    out.emit(Event::new(Tool::WtCheck, EventKind::CheckIncomplete, why).path(path));
    crate::exit::INCOMPLETE
}

fn load(a: &CheckArgs, out: &mut Out) -> Result<super::state::State, Code> {
    let st = match super::read_state(&a.state) {
        Ok(st) => st,
        Err(e) => return Err(cannot(out, &a.state, e.to_string())),
    };
    // The state must be about this repository: compare the common dir it names.
    match super::locate(&a.repo) {
        Ok(l) if l.common_dir == st.common_dir => Ok(st),
        Ok(l) => Err(cannot(
            out,
            &a.repo,
            format!(
                "{}: the state file {} was pinned for {}, but this repository uses {}",
                a.repo.display(),
                a.state.display(),
                st.common_dir.display(),
                l.common_dir.display()
            ),
        )),
        // The repository may be damaged now (a removed HEAD, a planted `.git` file): the
        // check runs on the pinned paths anyway — but only when the path given is one of
        // them. A path that does not exist, or names something else, is a mistake in the
        // call, and checking the pinned repository instead would answer another question.
        Err(e) => {
            let pinned = [
                Some(&st.repo),
                st.work_tree.as_ref(),
                Some(&st.git_dir),
                Some(&st.common_dir),
            ];
            match std::fs::canonicalize(&a.repo) {
                Ok(p) if pinned.iter().flatten().any(|q| **q == p) => Ok(st),
                Ok(_) => Err(cannot(
                    out,
                    &a.repo,
                    format!(
                        "{}: not a git repository ({}), and not the repository pinned in {} ({})",
                        a.repo.display(),
                        match e {
                            IntegrityError::NotARepository(_, why) => why,
                            other => other.to_string(),
                        },
                        a.state.display(),
                        st.repo.display()
                    ),
                )),
                Err(io) => Err(cannot(out, &a.repo, format!("{}: {io}", a.repo.display()))),
            }
        }
    }
}

/// Check (and restore), then the commit scan.
pub fn check(a: &CheckArgs) -> Code {
    let mut out = Out::new(a);
    let st = match load(a, &mut out) {
        Ok(s) => s,
        Err(c) => return c,
    };
    // The policy's writable roots (the repository, the worktree folders, `writable_roots`):
    // every folder the session could write, walked for planted repositories.
    let extra_roots = match &a.policy {
        None => Vec::new(),
        Some(f) => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/"));
            match crate::policy::Policy::load(f, &home) {
                Ok(p) => p.writable_roots,
                Err(e) => return cannot(&mut out, f, e.to_string()),
            }
        }
    };
    let opts = Options {
        repo: a.repo.clone(),
        state: a.state.clone(),
        session: a.session.clone(),
        session_dir: None,
        restore: a.restore,
        accept_armed: false,
    };
    let mut events = 0usize;
    let (mut outcome, swept_clean) =
        super::compare::check_with_roots_swept(&opts, &st, &extra_roots, &mut |e| {
            events += 1;
            out.emit(e)
        });
    // Object substitution, in every object store (`stores`: the repository's and each
    // submodule's): loose objects new or changed since the pin must hash to their ids,
    // commit-graph files must match the commit objects, packs, their indexes and
    // multi-pack-indexes must verify.
    outcome = outcome.and(super::stores::check(&st, &a.state, a.restore, &mut |e| {
        events += 1;
        out.emit(e)
    }));
    // Conflict resolutions recorded during the turn, which the owner's git would replay.
    outcome = outcome.and(super::rerere::check(&st, &a.state, a.restore, &mut |e| {
        events += 1;
        out.emit(e)
    }));
    if a.scan {
        // The check's own sweep of the common dir is the scan's guard when the check wrote
        // nothing there since: without `--restore` it writes nothing, and with it every
        // restore or move is an event (none: nothing was touched). Only the check itself
        // could have changed the common dir between the two sweeps under the scan's premise
        // (the agent stopped); a writer still running can make a FIFO after either sweep.
        outcome = if swept_clean && (!a.restore || events == 0) {
            outcome.and(super::scanlink::scan_recorded(&st, &a.state, &mut |e| {
                out.emit(e)
            }))
        } else {
            outcome.and(scan_unless_blocked(&st, &a.state, &mut out))
        };
    }
    if out.failed() {
        outcome = outcome.and(Outcome::Incomplete);
    }
    outcome.code()
}

/// The commit scan, unless a FIFO, socket or device lies in the common dir: the scan reads
/// refs and objects through gix, whose blocking open of a FIFO would never return. The
/// special file itself is reported by the check; the scan is then said to be skipped.
fn scan_unless_blocked(
    st: &super::state::State,
    state_path: &std::path::Path,
    out: &mut Out,
) -> Outcome {
    let sp = crate::audit::special::sweep(&st.common_dir);
    if let Some((p, _)) = sp.found.first() {
        let why = format!(
            "commit scan skipped: {} is a {} ({}); move it aside (`--restore`) and check again",
            p.display(),
            sp.found[0].1,
            crate::audit::special::harm(sp.found[0].1)
        );
        eprintln!("wt-check: {why}");
        out.emit(Event::new(Tool::WtCheck, EventKind::CheckIncomplete, why).path(p));
        return Outcome::Incomplete;
    }
    super::scanlink::scan_recorded(st, state_path, &mut |e| out.emit(e))
}

/// The commit scan alone (`wt-check scan`).
pub fn scan_only(a: &CheckArgs) -> Code {
    let mut out = Out::new(a);
    let st = match load(a, &mut out) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let mut outcome = scan_unless_blocked(&st, &a.state, &mut out);
    if out.failed() {
        outcome = outcome.and(Outcome::Incomplete);
    }
    outcome.code()
}
