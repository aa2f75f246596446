//! The commit scan (`crate::scan`) wired into pin and check: the ref snapshot is stored in
//! the state file at pin time; at check time every commit new since then is scanned.

use super::state::State;
use super::Outcome;
use crate::events::{Event, EventKind, Tool};
use std::path::Path;

/// The ref snapshot of the repository whose common dir is `common_dir`, as stored in the
/// state file.
pub fn snapshot(common_dir: &Path) -> Result<serde_json::Value, String> {
    packed_refs_bounded(common_dir)?;
    let snap = crate::scan::RefSnapshot::take(common_dir).map_err(|e| e.to_string())?;
    serde_json::to_value(snap).map_err(|e| e.to_string())
}

/// `packed-refs` no larger than [`crate::catalogue::PACKED_REFS_LIMIT`]: gix (as git) reads
/// it whole, and a sparse file of terabytes (which costs no disk) held the check — and the
/// owner's `git status` — for hours (seventeenth red-team pass, R17-4). Past the bound the
/// scan (and the pin) stop with the reason, never reading it.
pub fn packed_refs_bounded(common_dir: &Path) -> Result<(), String> {
    let p = common_dir.join("packed-refs");
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.len() > crate::catalogue::PACKED_REFS_LIMIT => Err(format!(
            "{} is {} bytes, more than the {} the scan reads (git reads it whole: a sparse file this size hangs the owner's git)",
            p.display(),
            m.len(),
            crate::catalogue::PACKED_REFS_LIMIT
        )),
        _ => Ok(()),
    }
}

/// Scan the commits new since the pin; every finding is an event. A state file without a
/// snapshot, or a scan that cannot run or stops at a bound, is incomplete (never clean).
pub fn scan(state: &State, emit: &mut dyn FnMut(Event)) -> Outcome {
    scan_inner(state, emit).0
}

/// [`scan`] with the record of its sources beside the state file `state_path`
/// ([`super::scanlink_key`]): when the sources' key equals the record's, the last scan's
/// answer (clean, refs as pinned) stands and the repository is not opened; otherwise the
/// scan runs, and a clean scan that read the refs exactly as pinned records the key taken
/// before it (when every stamp is past the racy margin and every file could be written back).
pub fn scan_recorded(state: &State, state_path: &Path, emit: &mut dyn FnMut(Event)) -> Outcome {
    use super::scanlink_key::{record_path, Key};
    let started = crate::layout::walk_cache::now_ns();
    let record = record_path(state_path);
    // The record's bytes (the owner's file; one that cannot be read is no record), from
    // which the key takes the names of the folders whose stamps it holds unchanged.
    let recorded = record
        .as_deref()
        .and_then(|r| crate::layout::walk_cache::read_owner_file(r).ok());
    let key = Key::take_after(state_path, &state.common_dir, recorded.as_deref());
    if let (Some(k), Some(r)) = (&key, &recorded) {
        if k.to_bytes() == r.as_slice() {
            return Outcome::Clean;
        }
    }
    let key = key.filter(|k| k.recordable(started) && k.write_back(&state.common_dir));
    let (outcome, as_snapshot) = scan_inner(state, emit);
    let Some(r) = record else { return outcome };
    match key {
        // The key is taken again after the scan and must be the one taken before it: a
        // source swapped while the scan read it (a folder exchanged and put back) and not
        // yet back, or back with a moved stamp, leaves no record (R14-5). Taken with every
        // folder listed: a record is always a key no earlier record contributed names to.
        Some(k)
            if outcome == Outcome::Clean
                && as_snapshot
                && Key::take(state_path, &state.common_dir)
                    .is_some_and(|again| again.to_bytes() == k.to_bytes()) =>
        {
            let (Some(parent), Some(name)) = (r.parent(), r.file_name()) else {
                return outcome;
            };
            // A failure costs the next check speed only.
            if let Ok(dir) = super::nf::Dir::open_trusted(parent) {
                let _ = dir.write_atomic(name, k.to_bytes(), 0o600);
            }
        }
        _ => {
            // Nothing else may match again (a stamp's `ctime` cannot go back), but a record
            // that no longer describes the sources is not kept.
            let _ = std::fs::remove_file(&r);
        }
    }
    outcome
}

fn scan_inner(state: &State, emit: &mut dyn FnMut(Event)) -> (Outcome, bool) {
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
    if let Err(why) = packed_refs_bounded(&state.common_dir) {
        emit(incomplete(why));
        return (Outcome::Incomplete, false);
    }
    // Parsed from the state's JSON text here, where it is needed (`state::Refs`).
    let snap = match serde_json::from_slice::<crate::scan::RefSnapshot>(state.refs.json()) {
        Ok(s) => s,
        Err(e) => {
            emit(incomplete(format!(
                "the state file holds no usable ref snapshot: {e}"
            )));
            return (Outcome::Incomplete, false);
        }
    };
    match crate::scan::scan(&state.common_dir, &snap, &crate::scan::Limits::default()) {
        Ok(report) => {
            for e in report.events(&state.repo) {
                emit(e.session(session));
            }
            let outcome = match report.exit_code().code {
                0 => Outcome::Clean,
                1 => Outcome::Found,
                _ => Outcome::Incomplete,
            };
            (outcome, report.stats.refs_as_snapshot)
        }
        Err(e) => {
            emit(incomplete(e.to_string()));
            (Outcome::Incomplete, false)
        }
    }
}

#[cfg(test)]
mod bound_tests {
    /// A sparse `packed-refs` of terabytes is refused by size, never read (R17-4); an
    /// ordinary one passes.
    #[test]
    fn a_huge_packed_refs_is_refused_unread() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("packed-refs");
        std::fs::write(&p, "# pack-refs with: peeled fully-peeled sorted \n").unwrap();
        assert!(super::packed_refs_bounded(t.path()).is_ok());
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(15 << 40).unwrap();
        let e = super::packed_refs_bounded(t.path()).unwrap_err();
        assert!(e.contains("more than"), "{e}");
    }
}
