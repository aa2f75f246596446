//! Durability after the swap: the fsyncs a revert used to wait for, done by one background
//! thread in batches, and the removal of the displaced file once they are done.
//!
//! A revert ([`crate::settings::hold_and_revert`]) writes the held record (temporary name,
//! rename into `pending/`) and the approved copy without `fsync`, exchanges the approved copy
//! with the agent's file (`RENAME_EXCHANGE`), and hands the rest to this thread: the record,
//! `pending/`, the approved copy and the guarded file's folder are fsynced, and only then is
//! the displaced entry — the agent's own inode, moved beside the file by the exchange, never
//! copied — unlinked. Until then the agent's bytes have two names: the record and that entry.
//!
//! What survives, by the moment of the interruption:
//! - **the watcher dies (SIGKILL, a panic)**: everything above is in the kernel's page cache and
//!   visible: the record is complete (it is renamed into place only when written) and, until
//!   the batch ran, the displaced entry is still beside the file; the next pass
//!   ([`crate::settings::recover`]) finds it, holds it (the identical pending record dedupes)
//!   and removes it. Nothing is lost.
//! - **the machine stops (power loss, kernel crash) before the batch ran**: what reached the
//!   disk depends on the filesystem. On a journalling filesystem that commits metadata
//!   operations in order (ext4 `data=ordered`, xfs), a durable exchange implies a durable record
//!   name and a durable displaced entry (both renames come earlier); the record's bytes may not
//!   be (delayed allocation), and a record that does not parse is set aside at the next start
//!   ([`super::Store::open`]); the displaced entry is the agent's inode, exactly as durable as
//!   the agent made it (no fsync of ours adds to or takes from that), and is held by the next
//!   pass. The approved copy may come back empty: it is then judged like any write, and an
//!   unparseable file is held and reverted again. Without that ordering (other filesystems),
//!   a crash inside the window — one batch, bounded by [`MAX_QUEUED`] holds — may lose the
//!   held bytes of a write that was itself not yet durable.
//! - **after the batch**: the record is durable (file and folder fsynced) before the displaced
//!   entry is unlinked; the unlink itself needs no fsync (a resurrected entry is held again,
//!   and dedupes).
//!
//! An fsync that fails stops every later removal for the life of the process (the entries stay
//! for the next pass, whose holds are durable before anything is removed): fail closed.

use std::collections::HashSet;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};

/// Holds queued before [`Syncer::defer`] waits for the thread (bounds open descriptors: each
/// queued hold keeps at most three).
pub const MAX_QUEUED: usize = 128;

/// A displaced entry to unlink once the batch is durable: only while `name` in `dir` is still
/// the inode `(dev, ino)` (the agent may have put something else there since).
pub struct Removal {
    pub dir: OwnedFd,
    pub name: String,
    pub inode: (u64, u64),
}

/// What one hold leaves for after its swap.
#[derive(Default)]
pub struct AfterSwap {
    /// Files whose data must reach the disk (the record, the approved copy).
    pub files: Vec<File>,
    /// Folders whose entries must (`pending/`, the guarded file's folder).
    pub dirs: Vec<OwnedFd>,
    /// Displaced entries, unlinked after the rest.
    pub remove: Vec<Removal>,
}

#[derive(Default)]
struct State {
    queue: Vec<AfterSwap>,
    busy: bool,
    started: bool,
    /// The first fsync error; sticky (no removal after it).
    failed: Option<String>,
    /// Test hook: the thread takes nothing while set.
    paused: bool,
}

/// The background thread's queue (one per [`super::Store`]).
#[derive(Default)]
pub struct Syncer {
    state: Mutex<State>,
    /// Work queued, or unpaused.
    work: Condvar,
    /// A batch finished (queue space, or idle for [`Syncer::flush`]).
    done: Condvar,
}

impl std::fmt::Debug for Syncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("Syncer")
            .field("queued", &st.queue.len())
            .field("busy", &st.busy)
            .field("failed", &st.failed)
            .finish()
    }
}

impl Syncer {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue `a`; waits while [`MAX_QUEUED`] holds are queued (the disk sets the pace of a
    /// burst, in batches).
    pub fn defer(self: &Arc<Self>, a: AfterSwap) {
        let mut st = self.lock();
        if !st.started {
            st.started = true;
            let me = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("held-sync".into())
                .spawn(move || me.run());
            if spawned.is_err() {
                // No thread: do it here, now (the synchronous order of before).
                st.started = false;
                drop(st);
                let mut failed = None;
                run_batch(vec![a], &mut failed);
                if let Some(e) = failed {
                    self.lock().failed.get_or_insert(e);
                }
                return;
            }
        }
        while st.queue.len() >= MAX_QUEUED && !st.paused {
            st = self.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.queue.push(a);
        self.work.notify_one();
    }

    /// Wait until everything queued is durable and the displaced entries are gone. The first
    /// fsync error, if any happened (then nothing has been removed since).
    pub fn flush(&self) -> Result<(), String> {
        let mut st = self.lock();
        st.paused = false;
        self.work.notify_one();
        while st.started && (!st.queue.is_empty() || st.busy) {
            st = self.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        match &st.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Test hook: hold the thread back (until [`Syncer::flush`]).
    pub(crate) fn pause(&self) {
        self.lock().paused = true;
    }

    fn run(&self) {
        loop {
            let mut st = self.lock();
            while st.queue.is_empty() || st.paused {
                st = self.work.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            let batch = std::mem::take(&mut st.queue);
            st.busy = true;
            let mut failed = st.failed.clone();
            drop(st);
            run_batch(batch, &mut failed);
            let mut st = self.lock();
            st.busy = false;
            st.failed = failed;
            self.done.notify_all();
        }
    }
}

// `st_dev`/`st_ino` are not `u64` on every target.
#[allow(clippy::unnecessary_cast)]
fn key(s: &nix::sys::stat::FileStat) -> (u64, u64) {
    (s.st_dev as u64, s.st_ino as u64)
}

fn dev_ino(fd: &impl AsFd) -> Option<(u64, u64)> {
    nix::sys::stat::fstat(fd.as_fd()).ok().map(|s| key(&s))
}

/// `(st_dev, st_ino)` of the entry `name` in `dir`, not following a link.
pub fn inode_at(dir: &impl AsFd, name: &str) -> Option<(u64, u64)> {
    nix::sys::stat::fstatat(dir.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .ok()
        .map(|s| key(&s))
}

/// fsync every file, every distinct folder once, then (unless an fsync ever failed) unlink
/// the displaced entries that still name the inode they named.
fn run_batch(batch: Vec<AfterSwap>, failed: &mut Option<String>) {
    let mut seen = HashSet::new();
    let mut removals = Vec::new();
    for a in &batch {
        for f in &a.files {
            if let Err(e) = f.sync_all() {
                failed.get_or_insert(format!("fsync: {e}"));
            }
        }
    }
    for a in batch {
        for d in a.dirs {
            if dev_ino(&d).is_some_and(|k| !seen.insert(k)) {
                continue;
            }
            if let Err(e) = nix::unistd::fsync(d.as_fd()) {
                failed.get_or_insert(format!("fsync folder: {e}"));
            }
        }
        removals.extend(a.remove);
    }
    super::crash_point("held-synced");
    if failed.is_some() {
        return;
    }
    for r in removals {
        let same = inode_at(&r.dir, &r.name) == Some(r.inode);
        if same {
            let _ = super::nofollow::remove(&r.dir, &r.name);
        }
        super::crash_point("revert-tmp-removed");
    }
    super::crash_point("revert-done");
}
