//! `wt-check hook …`: wt-check as an agent CLI's hook — the end-of-turn check of Claude Code
//! (`Stop`), Codex CLI (`Stop`) and Gemini CLI (`AfterAgent`), and the session-start pin.
//!
//! The three CLIs share one protocol shape (sources, read for this module):
//!
//! - Claude Code: <https://docs.anthropic.com/en/docs/claude-code/hooks> — `Stop` input
//!   `{session_id, transcript_path, cwd, permission_mode, hook_event_name: "Stop",
//!   stop_hook_active}`; output `decision: "block"` + `reason` (fed to the agent),
//!   `continue: false` + `stopReason`, `systemMessage` (shown to the user).
//! - Codex CLI: openai/codex `codex-rs/hooks/schema/generated/stop.command.input.schema.json`
//!   and `…/stop.command.output.schema.json`, `codex-rs/hooks/src/events/stop.rs` — `Stop`
//!   input `{session_id, turn_id, transcript_path, cwd, hook_event_name: "Stop", model,
//!   permission_mode, stop_hook_active, last_assistant_message}`; the same output fields as
//!   Claude Code (`decision: "block"` needs a non-empty `reason`, which becomes the
//!   continuation prompt; `continue: false` stops). Codex's older `notify` program is not
//!   usable: it is started with its output discarded and not waited for (`legacy_notify.rs`),
//!   so it can neither tell the agent nor hold the next turn until the check is done.
//! - Gemini CLI: google-gemini/gemini-cli `docs/hooks/reference.md` and
//!   `packages/core/src/hooks/types.ts` — `AfterAgent` input `{session_id, transcript_path,
//!   cwd, hook_event_name: "AfterAgent", timestamp, prompt, prompt_response,
//!   stop_hook_active}`; output `decision: "deny"` + `reason` (the response is rejected and
//!   `reason` is sent to the agent as a new prompt), `continue: false` + `stopReason`,
//!   `systemMessage`; on exit 0 stdout must be JSON only.
//!
//! The end-of-turn hook runs `check --restore` (and the commit scan) against the pinned state,
//! appends every event to the audit log, and answers on stdout:
//!
//! - nothing found: no output (Gemini CLI: `{}`), exit 0 — the turn ends normally;
//! - something found (and restored): block (`decision`) with the reason for the agent and a
//!   `systemMessage` for the owner — unless `stop_hook_active` is true (the agent is already
//!   continuing because of this hook), then only `systemMessage`, so the hook never loops;
//! - cannot check (the state file unreadable, an entry unreadable, a walk cut short): block
//!   with the reason, so the turn never ends as if clean; when the hook is already active,
//!   `continue: false` with the reason (stops instead of looping);
//! - empty or unparseable stdin, or an input naming another event: the check runs anyway (it
//!   needs nothing from the input); the owner is told about the input.
//!
//! The hook's own exit code is 0 in every case where it produced its answer: the CLIs treat
//! other codes as hook errors (and exit 2 as a block whose reason is stderr), and would drop
//! the JSON.

use super::tool::{CheckArgs, PinArgs};
use super::{read_state, Options, Outcome};
use crate::events::{Event, EventKind, Sink};
use serde::Deserialize;
use std::path::PathBuf;

/// The agent CLI whose end-of-turn hook wt-check answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code, `Stop`.
    Claude,
    /// Codex CLI, `Stop`.
    Codex,
    /// Gemini CLI, `AfterAgent`.
    Gemini,
}

impl Agent {
    /// The hook event the CLI names in `hook_event_name`.
    pub fn event(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Codex => "Stop",
            Agent::Gemini => "AfterAgent",
        }
    }
    /// The `decision` value that keeps the turn going with `reason` as the agent's prompt.
    fn block(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Codex => "block",
            Agent::Gemini => "deny",
        }
    }
    /// The event field that carries the CLI's session id in the audit log.
    fn session_key(self) -> &'static str {
        match self {
            Agent::Claude => "claude_session_id",
            Agent::Codex => "codex_session_id",
            Agent::Gemini => "gemini_session_id",
        }
    }
    /// What a clean turn prints: nothing, or the empty JSON object where stdout must be JSON.
    fn clean(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Codex => "",
            Agent::Gemini => "{}\n",
        }
    }
}

/// The fields of an end-of-turn hook's input that wt-check uses. The check itself needs none
/// of them: they label events (`session_id`, `turn_id`) and prevent a loop
/// (`stop_hook_active`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StopInput {
    #[serde(default)]
    pub session_id: Option<String>,
    /// Codex CLI only.
    #[serde(default)]
    pub turn_id: Option<String>,
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

fn json(v: serde_json::Value) -> Answer {
    Answer {
        stdout: format!("{v}\n"),
        code: 0,
    }
}

/// The answer when the git folder could not be (fully) checked: never the silence of a clean
/// turn. The agent is stopped from ending the turn as if clean (block with the reason); when
/// it is already continuing because of this hook, the CLI is stopped (`continue: false`, the
/// reason shown to the owner) instead of blocking again, so the hook never loops.
fn cannot_check(agent: Agent, why: &str, stop_hook_active: bool) -> Answer {
    let reason = format!(
        "wt-check could not check the git folder after this turn (unknown is not clean), so the turn must not end as if it were: {why}. Tell the owner; do not retry changes to the git folder."
    );
    let system = format!("wt-check: the git folder was NOT checked after this turn: {why}");
    if stop_hook_active {
        json(
            serde_json::json!({ "continue": false, "stopReason": reason, "systemMessage": system }),
        )
    } else {
        json(
            serde_json::json!({ "decision": agent.block(), "reason": reason, "systemMessage": system }),
        )
    }
}

/// Parse a hook input; a problem with it becomes a note for the owner, never a reason to skip.
fn parse_input<T: for<'de> Deserialize<'de> + Default>(
    input: &str,
    what: &str,
) -> (T, Option<String>) {
    match serde_json::from_str(input) {
        Ok(h) => (h, None),
        Err(e) if input.trim().is_empty() => (
            T::default(),
            Some(format!("the {what} input was empty ({e})")),
        ),
        Err(e) => (
            T::default(),
            Some(format!("the {what} input is not JSON ({e})")),
        ),
    }
}

/// Claude Code's `Stop` hook (kept for callers of the first API).
pub fn claude_stop(input: &str, a: &CheckArgs, repo_given: bool) -> Answer {
    end_of_turn(Agent::Claude, input, a, repo_given)
}

/// Handle one end-of-turn hook call. `repo` defaults to the repository named in the state
/// file. Empty or unparseable input does not skip the check: it runs anyway (it needs nothing
/// from the input), and the input's problem is added to what the owner is told.
pub fn end_of_turn(agent: Agent, input: &str, a: &CheckArgs, repo_given: bool) -> Answer {
    let what = format!("{} hook", agent.event());
    let (hook, mut input_note): (StopInput, Option<String>) = parse_input(input, &what);
    if let Some(name) = hook.hook_event_name.as_deref() {
        if name != agent.event() {
            input_note = Some(format!(
                "the hook input names the event {name:?}, not {:?} (is the hook wired to the right event?)",
                agent.event()
            ));
        }
    }
    let input_note = input_note.map(|n| format!("{n}; checked anyway"));
    let state = match read_state(&a.state) {
        Ok(s) => s,
        Err(e) => return cannot_check(agent, &e.to_string(), hook.stop_hook_active),
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
    let (session_id, turn_id) = (hook.session_id.clone(), hook.turn_id.clone());
    let mut emit = |e: Event| {
        let mut e = match &session_id {
            Some(s) => e.with(agent.session_key(), s.clone()),
            None => e,
        };
        if let Some(t) = &turn_id {
            e = e.with("codex_turn_id", t.clone());
        }
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
    // Loose objects, commit-graphs and packs new or changed since the pin, in every object
    // store (`stores`: the repository's and each submodule's).
    outcome = outcome.and(super::stores::check(&state, &a.state, true, &mut emit));
    // Conflict resolutions recorded during the turn (`rerere`): set aside, as the rest.
    outcome = outcome.and(super::rerere::check(&state, &a.state, true, &mut emit));
    if a.scan {
        // With the record of the scan's sources beside the state file, as `wt-check check`.
        outcome = outcome.and(super::scanlink::scan_recorded(&state, &a.state, &mut emit));
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
                stdout: agent.clean().into(),
                code: 0,
            },
            Some(n) => json(
                serde_json::json!({ "systemMessage": format!("wt-check: {n}; nothing found") }),
            ),
        },
        Outcome::Found => {
            let reason = format!(
                "wt-check found changes to protected parts of the git folder (hooks, config, includes, worktree entries, submodule git dirs), an in-progress operation that names a program, an armed embedded repository, or flagged commits. Git-folder changes were undone; your versions are kept for the owner in {}. Do not write there again; if you need such a change, ask the owner.\n{list}",
                qdir.display()
            );
            let mut system = format!("wt-check restored the git folder after this turn:\n{list}");
            if let Some(n) = input_note {
                system.push_str(&format!("\n(wt-check: {n})"));
            }
            if hook.stop_hook_active {
                json(serde_json::json!({ "systemMessage": system }))
            } else {
                json(
                    serde_json::json!({ "decision": agent.block(), "reason": reason, "systemMessage": system }),
                )
            }
        }
        Outcome::Incomplete => cannot_check(
            agent,
            &format!("the check was incomplete:\n{list}"),
            hook.stop_hook_active,
        ),
    }
}

/// The fields of a `SessionStart` hook's input that wt-check uses (the same in Claude Code,
/// Codex CLI and Gemini CLI).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SessionStartInput {
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// Claude Code: `startup | resume | clear | compact`; Codex CLI: the same; Gemini CLI:
    /// `startup | resume | clear | compress`.
    #[serde(default)]
    pub source: Option<String>,
}

/// The only `source` on which the session-start hook pins.
pub const PIN_SOURCE: &str = "startup";

/// `wt-check hook session-start`: pin on `source: "startup"` only.
///
/// `SessionStart` also fires on `resume`, `clear` and `compact` (Gemini CLI: `compress`) —
/// in the middle of a session whose agent has already written to the repository. Pinning then
/// would take whatever it tampered with as the new baseline, and every later `check
/// --restore` would keep it. So on any other source (or an input that does not say) the hook
/// never writes the state file: it keeps the existing baseline and says so, or, when there
/// is none to keep, stops the session (`continue: false`) — the end-of-turn check would have
/// nothing to compare with.
///
/// A pin that fails (the repository already armed, an unreadable entry, a state file inside
/// the repository) also stops the session: an agent must not start on a repository whose
/// baseline could not be taken. Gemini CLI treats `SessionStart` as advisory and ignores
/// `continue`; there the `systemMessage` tells the owner, and the end-of-turn hook fails
/// closed on the missing state file. `--accept-armed` is not offered here: accepting what is
/// armed is the owner's decision at a terminal, never a hook's.
pub fn session_start(input: &str, a: &PinArgs) -> Answer {
    let stop = |why: String| {
        json(serde_json::json!({
            "continue": false,
            "stopReason": format!("wt-check did not pin the repository: {why}"),
            "systemMessage": format!("wt-check: the repository was NOT pinned: {why}"),
        }))
    };
    let (hook, note): (SessionStartInput, Option<String>) = parse_input(input, "SessionStart hook");
    if let Some(n) = note {
        return stop(format!(
            "{n}, so it cannot tell a new session (source \"startup\") from a resumed one"
        ));
    }
    if let Some(name) = hook.hook_event_name.as_deref() {
        if name != "SessionStart" {
            return stop(format!(
                "the hook input names the event {name:?}, not \"SessionStart\""
            ));
        }
    }
    match hook.source.as_deref() {
        Some(PIN_SOURCE) => {}
        Some(other) => {
            // Never re-pin mid-session: keep the baseline there is.
            return match read_state(&a.state) {
                Ok(st) => json(serde_json::json!({
                    "systemMessage": format!(
                        "wt-check: session {other}: kept the baseline pinned at {} in {} (re-pinning mid-session would take the agent's changes as the baseline)",
                        st.pinned_at,
                        a.state.display()
                    )
                })),
                Err(e) => stop(format!(
                    "session {other}: there is no usable baseline ({e}), and one is never taken mid-session (it would take the agent's changes as the baseline); pin by hand with `wt-check pin` after reviewing the repository (`wt-check audit`)"
                )),
            };
        }
        None => {
            return stop(
                "the hook input has no \"source\", so it cannot tell a new session (\"startup\") from a resumed one".into(),
            )
        }
    }
    let a = PinArgs {
        accept_armed: false,
        ..a.clone()
    };
    match super::tool::pin_state(&a) {
        Ok(p) => json(serde_json::json!({
            "systemMessage": format!(
                "wt-check pinned {} entries of {} into {}",
                p.state.entries.len(),
                p.state.common_dir.display(),
                p.path.display()
            )
        })),
        Err(e) => stop(e.to_string()),
    }
}
