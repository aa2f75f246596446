//! Inodes a revert swapped out of a guarded path, followed until no writer has them open.
//!
//! A revert exchanges the agent's file for the approved bytes (`RENAME_EXCHANGE`): the path is
//! right at once, but a writer that opened the file before the swap — a second writer that
//! truncated it right after the first one closed it, an editor that keeps it open, a shared
//! mapping — goes on writing into the inode that was swapped out, now without a name. Those
//! bytes are the agent's too. So the revert keeps a read-only descriptor of that inode
//! ([`follow`]), and [`poll`] reads it again until the kernel says no process has it open for
//! writing ([`nofollow::open_for_writing`], a read lease) and it has been quiet for
//! [`watch::QUIET`]: every content it shows that differs from what was held is held in turn
//! (a file too large for a record is streamed into the store whole).
//!
//! Invariant: a followed inode is let go only when no writer has it open and its last content
//! is held (or is the approved one). Where the kernel cannot say (no leases on the
//! filesystem, a file of another user), it is followed until it has been quiet for
//! [`UNKNOWN_HOLD`]. The list is per process but each inode belongs to the store whose revert
//! displaced it: [`poll`] reads only that store's, so what is written into it is held there and
//! nowhere else, even with several stores in one process (a library user, the tests).

use super::{new_held, watch, Change, Rules, SettingsError};
use crate::held::{nofollow, Content, HeldWrite, Store};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Followed without an answer from the kernel (no leases) until quiet this long.
pub const UNKNOWN_HOLD: Duration = Duration::from_secs(10);

/// One displaced inode.
pub(crate) struct Tail {
    pub file: std::fs::File,
    /// The change whose revert displaced it (root, rel, rule, approved state).
    pub change: Change,
    /// What it held when last read (held, or the approved content).
    pub last: Content,
    /// When its content last changed (or it was first followed).
    pub changed: Instant,
}

/// Followed inodes, each with the folder of the store it is held into.
static TAILS: Mutex<Vec<(PathBuf, Tail)>> = Mutex::new(Vec::new());

fn tails() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Tail)>> {
    TAILS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Follow a displaced inode until its writers are done; what is written into it is held in
/// `store` (the store that held the write the revert displaced).
pub(crate) fn follow(store: &Store, t: Tail) {
    tails().push((store.dir().to_path_buf(), t));
}

/// Are inodes of `store` being followed (the watcher then polls every [`watch::QUIET`] / 3)?
pub fn following(store: &Store) -> bool {
    tails().iter().any(|(s, _)| s == store.dir())
}

/// Read every inode followed for `store` again; hold what changed; let go of those no writer
/// has open and that are quiet. Another store's inodes are left alone. The caller holds the
/// store lock.
pub fn poll(store: &Store, rules: &Rules, source: &str) -> Result<Vec<HeldWrite>, SettingsError> {
    let mut out = Vec::new();
    let mut list = tails();
    let mut keep = Vec::with_capacity(list.len());
    let mut failed = None;
    for (owner, mut t) in list.drain(..) {
        if failed.is_some() || owner != store.dir() {
            keep.push((owner, t));
            continue;
        }
        // Asked before the read: a writer that closes after it is seen at the next poll.
        let writers = nofollow::open_for_writing(&t.file);
        match step(store, rules, source, &mut t) {
            Ok(h) => out.extend(h),
            Err(e) => {
                failed = Some(e);
                keep.push((owner, t));
                continue;
            }
        }
        let age = modified_age(&t.file).min(t.changed.elapsed());
        let done = match writers {
            Some(true) => false,
            Some(false) => age >= watch::QUIET,
            None => age >= UNKNOWN_HOLD,
        };
        if !done {
            keep.push((owner, t));
        }
    }
    *list = keep;
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Poll until nothing is followed or `bound` has passed (for one-shot passes: `check`,
/// agent-shell), taking the store lock for each poll.
pub fn settle(
    store: &Store,
    rules: &Rules,
    source: &str,
    bound: Duration,
) -> Result<Vec<HeldWrite>, SettingsError> {
    let start = Instant::now();
    let mut out = Vec::new();
    loop {
        {
            let _lock = store.lock()?;
            out.extend(poll(store, rules, source)?);
        }
        if !following(store) || start.elapsed() >= bound {
            return Ok(out);
        }
        std::thread::sleep(watch::QUIET / 3);
    }
}

fn step(
    store: &Store,
    rules: &Rules,
    source: &str,
    t: &mut Tail,
) -> Result<Option<HeldWrite>, SettingsError> {
    let now = nofollow::read_file(&t.file, &t.change.rel).map_err(|source| SettingsError::Io {
        path: t.change.path.clone(),
        op: "read displaced file",
        source,
    })?;
    if now.same_as(&t.last) {
        return Ok(None);
    }
    t.last = now.clone();
    t.changed = Instant::now();
    if now.same_as(&t.change.before) {
        return Ok(None);
    }
    let judged = super::change_of(&t.change.root, &t.change.rel, &t.change.before, &now, rules);
    let base = judged.as_ref().unwrap_or(&t.change);
    let (h, _) = store.hold(new_held(
        base,
        now.clone(),
        source,
        Some("written into the file after it was reverted, by a writer that still had it open"),
    ))?;
    if nofollow::is_oversized(&now) {
        keep_whole(store, &h.id, &t.file, &t.change.path)?;
    }
    Ok(Some(h))
}

/// Stream the whole of the regular file `f` into the store for record `id`.
pub(crate) fn keep_whole(
    store: &Store,
    id: &str,
    f: &std::fs::File,
    path: &std::path::Path,
) -> Result<PathBuf, SettingsError> {
    use std::io::{Seek, SeekFrom};
    let mut r = f;
    r.seek(SeekFrom::Start(0))
        .map_err(|source| SettingsError::Io {
            path: path.to_path_buf(),
            op: "read displaced file",
            source,
        })?;
    Ok(store.keep(id, &mut r)?)
}

fn modified_age(f: &std::fs::File) -> Duration {
    f.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .unwrap_or(Duration::ZERO)
}
