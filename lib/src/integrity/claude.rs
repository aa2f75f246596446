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
//! - cannot check: `systemMessage` telling the owner, exit 0 (a Stop hook cannot make the
//!   state checkable; failing loudly to the owner is what it can do).
//!
//! The hook's own exit code is 0 in every case where it produced its answer: Claude Code
//! treats other codes as hook errors and would drop the message.

use super::tool::CheckArgs;
use super::{read_state, Options, Outcome};
use crate::events::{Event, EventKind, Sink};
use serde::Deserialize;
use std::path::PathBuf;

/// The fields of Claude Code's Stop hook input that wt-check uses.
#[derive(Debug, Clone, Deserialize)]
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

/// Handle one Stop hook call. `repo` defaults to the repository named in the state file.
pub fn claude_stop(input: &str, a: &CheckArgs, repo_given: bool) -> Answer {
    let msg = |v: serde_json::Value| Answer {
        stdout: format!("{v}\n"),
        code: 0,
    };
    let hook: StopInput = match serde_json::from_str(input) {
        Ok(h) => h,
        Err(e) => {
            return msg(serde_json::json!({
                "systemMessage": format!("wt-check: the Stop hook input is not JSON ({e}); the git folder was NOT checked"),
            }))
        }
    };
    let state = match read_state(&a.state) {
        Ok(s) => s,
        Err(e) => {
            return msg(serde_json::json!({
                "systemMessage": format!("wt-check: {e}; the git folder was NOT checked"),
            }))
        }
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
        Outcome::Clean => Answer {
            stdout: String::new(),
            code: 0,
        },
        Outcome::Found => {
            let reason = format!(
                "wt-check found changes to protected parts of the git folder (hooks, config, includes, worktree entries, submodule git dirs) or flagged commits. Git-folder changes were undone; your versions are kept for the owner in {}. Do not write there again; if you need such a change, ask the owner.\n{list}",
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
        Outcome::Incomplete => msg(serde_json::json!({
            "systemMessage": format!("wt-check could not fully check the git folder after this turn (unknown is not clean):\n{list}"),
        })),
    }
}
