//! The commit scan (`crate::scan`) wired into pin and check: the ref snapshot is stored in
//! the state file at pin time; at check time every commit new since then is scanned.

use super::state::State;
use super::Outcome;
use crate::events::{Event, EventKind, Tool};
use std::path::Path;

/// The ref snapshot of the repository whose common dir is `common_dir`, as stored in the
/// state file.
pub fn snapshot(common_dir: &Path) -> Result<serde_json::Value, String> {
    let snap = crate::scan::RefSnapshot::take(common_dir).map_err(|e| e.to_string())?;
    serde_json::to_value(snap).map_err(|e| e.to_string())
}

/// Scan the commits new since the pin; every finding is an event. A state file without a
/// snapshot, or a scan that cannot run or stops at a bound, is incomplete (never clean).
pub fn scan(state: &State, emit: &mut dyn FnMut(Event)) -> Outcome {
    let session = state.session.as_deref();
    let incomplete = |why: String| {
        Event::new(
            Tool::WtCheck,
            EventKind::ScanIncomplete,
            format!("commit scan: {why}"),
        )
        .session(session)
        .repo(&state.repo)
        .with("reason", why)
    };
    // Deserialised from the state's value in place (a clone of git.git's 1,018 refs as a
    // JSON tree cost 6 M instructions, its drop 1.5 M).
    use serde::Deserialize;
    let snap = match crate::scan::RefSnapshot::deserialize(&state.refs) {
        Ok(s) => s,
        Err(e) => {
            emit(incomplete(format!(
                "the state file holds no usable ref snapshot: {e}"
            )));
            return Outcome::Incomplete;
        }
    };
    match crate::scan::scan(&state.common_dir, &snap, &crate::scan::Limits::default()) {
        Ok(report) => {
            for e in report.events(&state.repo) {
                emit(e.session(session));
            }
            match report.exit_code().code {
                0 => Outcome::Clean,
                1 => Outcome::Found,
                _ => Outcome::Incomplete,
            }
        }
        Err(e) => {
            emit(incomplete(e.to_string()));
            Outcome::Incomplete
        }
    }
}
