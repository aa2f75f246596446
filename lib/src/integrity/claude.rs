//! `wt-check hook claude-stop`: wt-check as a Claude Code `Stop` hook.
//!
//! Claude Code runs a Stop hook when the agent finishes a turn, with a JSON object on stdin
//! (`session_id`, `transcript_path`, `cwd`, `hook_event_name: "Stop"`, `stop_hook_active`).
//! The hook runs `check --restore` (and the commit scan) against the pinned state, appends
//! every event to the audit log, and answers on stdout with the JSON Claude Code reads:
//!
//! - nothing found: no output, exit 0 — the turn ends normally;
//! - something found (and restored): `{"decision": "block", "reason": …, "systemMessage": …}`
//!   so the agent learns that its changes to the git folder were undone and why — unless
//!   `stop_hook_active` is true (the agent is already continuing because of a Stop hook),
//!   then only `systemMessage`, so the hook never loops;
//! - cannot check (the state file unreadable, an entry unreadable, a walk cut short):
//!   `decision: block` with the reason, so the turn never ends as if clean; when a Stop hook
//!   is already active, `continue: false` with the reason (stops instead of looping);
//! - empty or unparseable stdin: the check runs anyway (it needs nothing from the input);
//!   the owner is told about the input.
//!
//! The hook's own exit code is 0 in every case where it produced its answer: Claude Code
//! treats other codes as hook errors and would drop the message.

use super::tool::CheckArgs;
use super::{read_state, Options, Outcome};
use crate::events::{Event, EventKind, Sink};
use serde::Deserialize;
use std::path::PathBuf;

/// The fields of Claude Code's Stop hook input that wt-check uses. The check itself needs
/// none of them: they label events (`session_id`) and prevent a loop (`stop_hook_active`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StopInput {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

/// The answer: what to print on stdout (possibly empty) and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub stdout: String,
    pub code: u8,
}

/// The answer when the git folder could not be (fully) checked: never the silence of a clean
/// turn. The agent is stopped from ending the turn as if clean (`decision: block` with the
/// reason); when it is already continuing because of a Stop hook, Claude Code is stopped
/// (`continue: false`, the reason shown to the owner) instead of blocking again, so the hook
/// never loops.
fn cannot_check(why: &str, stop_hook_active: bool) -> Answer {
    let reason = format!(
        "wt-check could not check the git folder after this turn (unknown is not clean), so the turn must not end as if it were: {why}. Tell the owner; do not retry changes to the git folder."
    );
    let system = format!("wt-check: the git folder was NOT checked after this turn: {why}");
    let v = if stop_hook_active {
        serde_json::json!({ "continue": false, "stopReason": reason, "systemMessage": system })
    } else {
        serde_json::json!({ "decision": "block", "reason": reason, "systemMessage": system })
    };
    Answer {
        stdout: format!("{v}\n"),
        code: 0,
    }
}

/// Handle one Stop hook call. `repo` defaults to the repository named in the state file.
/// Empty or unparseable input does not skip the check: it runs anyway (it needs nothing from
/// the input), and the input's problem is added to what the owner is told.
pub fn claude_stop(input: &str, a: &CheckArgs, repo_given: bool) -> Answer {
    let msg = |v: serde_json::Value| Answer {
        stdout: format!("{v}\n"),
        code: 0,
    };
    let (hook, input_note): (StopInput, Option<String>) = match serde_json::from_str(input) {
        Ok(h) => (h, None),
        Err(e) if input.trim().is_empty() => (
            StopInput::default(),
            Some(format!(
                "the Stop hook input was empty ({e}); checked anyway"
            )),
        ),
        Err(e) => (
            StopInput::default(),
            Some(format!(
                "the Stop hook input is not JSON ({e}); checked anyway"
            )),
        ),
    };
    let state = match read_state(&a.state) {
        Ok(s) => s,
        Err(e) => return cannot_check(&e.to_string(), hook.stop_hook_active),
    };
    let repo = if repo_given {
        a.repo.clone()
    } else {
        state.repo.clone()
    };
    let opts = Options {
        repo,
        state: a.state.clone(),
        session: a.session.clone(),
        session_dir: None,
        restore: true,
        accept_armed: false,
    };
    let log = a.audit_log.clone().map(Sink::File);
    let mut lines: Vec<String> = Vec::new();
    let mut log_failed = false;
    let claude_session = hook.session_id.clone();
    let mut emit = |e: Event| {
        let e = match &claude_session {
            Some(s) => e.with("claude_session_id", s.clone()),
            None => e,
        };
        if matches!(
            e.event,
            EventKind::Quarantined
                | EventKind::GitDirEntryRestored
                | EventKind::WorktreeEntryRestored
        ) {
            // The summary names findings; restores are in the audit log.
        } else {
            lines.push(format!("- {}: {}", e.event.as_str(), e.message));
        }
        if let Some(l) = &log {
            if l.emit(&e).is_err() {
                log_failed = true;
            }
        }
    };
    let mut outcome = super::check(&opts, &state, &mut emit);
    if a.scan {
        outcome = outcome.and(super::scanlink::scan(&state, &mut emit));
    }
    if log_failed {
        lines.push("- the audit log could not be written".into());
        outcome = outcome.and(Outcome::Incomplete);
    }
    const MAX_LINES: usize = 40;
    let more = lines.len().saturating_sub(MAX_LINES);
    lines.truncate(MAX_LINES);
    if more > 0 {
        lines.push(format!("- … and {more} more (see the audit log)"));
    }
    let list = lines.join("\n");
    let qdir = {
        let mut n = a.state.file_name().unwrap_or_default().to_os_string();
        n.push(".quarantine");
        a.state.with_file_name(n)
    };
    match outcome {
        Outcome::Clean => match input_note {
            None => Answer {
                stdout: String::new(),
                code: 0,
            },
            Some(n) => {
                msg(serde_json::json!({ "systemMessage": format!("wt-check: {n}; nothing found") }))
            }
        },
        Outcome::Found => {
            let reason = format!(
                "wt-check found changes to protected parts of the git folder (hooks, config, includes, worktree entries, submodule git dirs), an in-progress operation that names a program, an armed embedded repository, or flagged commits. Git-folder changes were undone; your versions are kept for the owner in {}. Do not write there again; if you need such a change, ask the owner.\n{list}",
                qdir.display()
            );
            let system = format!("wt-check restored the git folder after this turn:\n{list}");
            if hook.stop_hook_active {
                msg(serde_json::json!({ "systemMessage": system }))
            } else {
                msg(
                    serde_json::json!({ "decision": "block", "reason": reason, "systemMessage": system }),
                )
            }
        }
        Outcome::Incomplete => cannot_check(
            &format!("the check was incomplete:\n{list}"),
            hook.stop_hook_active,
        ),
    }
}
