//! Held writes: a durable, crash-safe store of writes that wait for the owner.
//!
//! Shared by `settings-watch` and `agent-shell`. A write that widens what the agent may do is
//! first recorded here — the proposed content, the content it replaced (or that the file was
//! absent), why (rule, findings, a readable diff), when, and an id — and only then is the file
//! put back. Each record is one JSON file written to a temporary name, fsynced, renamed into
//! place, and the folder fsynced: after a crash (SIGKILL included) a record is either complete
//! or absent, never half-written.
//!
//! The store also keeps the **approved state** of every guarded file it has seen (the bytes the
//! owner accepted, or that the file was absent): that is what a widening write is reverted to,
//! and what `approve` moves forward.
//!
//! Layout below the store folder (the policy's `state_dir/held`, 0700):
//! `pending/<id>.json`, `resolved/<id>.json`, `approved/<hash>.json`, `kept/<id>-<n>.bytes`
//! (bytes too large for a record), `tmp/`, `.lock`.
//! A revert's record ([`Store::hold_deferred`]) is written the same way but fsynced after the
//! swap, in batches, by [`sync`]'s thread: what survives a crash at each step is stated there.
//! Invariants: a pending record is never removed except by [`Store::approve`] or
//! [`Store::reject`] (the owner's word); every record write runs under [`Store::lock`], an
//! exclusive `flock` shared by every process using the same store ([`Store::hold`] and
//! [`Store::set_approved`] expect the caller to hold it; `approve`/`reject` take it).

pub mod nofollow;
pub mod sync;

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What a guarded path holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Content {
    /// Nothing at the path.
    Absent,
    /// A regular file.
    File {
        #[serde(with = "bytes_repr")]
        bytes: Vec<u8>,
        /// Permission bits (restored with the bytes).
        mode: u32,
    },
    /// A symbolic link at `at` (the path itself, or one of its folders): never followed.
    Link {
        at: String,
        #[serde(with = "bytes_repr")]
        target: Vec<u8>,
    },
    /// Something else at `at` (a folder where the file should be, a fifo, an oversized file).
    Other { at: String, what: String },
}

impl Content {
    /// Same for the purpose of comparison (a file's mode is not compared).
    pub fn same_as(&self, other: &Content) -> bool {
        match (self, other) {
            (Content::File { bytes: a, .. }, Content::File { bytes: b, .. }) => a == b,
            (a, b) => a == b,
        }
    }

    /// The file's bytes, if it is a regular file.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Content::File { bytes, .. } => Some(bytes),
            _ => None,
        }
    }

    /// A short description (`absent`, `312 bytes`, `a link to X at .claude`).
    pub fn describe(&self) -> String {
        match self {
            Content::Absent => "absent".into(),
            Content::File { bytes, .. } => format!("{} bytes", bytes.len()),
            Content::Link { at, target } => {
                format!("a link at {at} to {}", String::from_utf8_lossy(target))
            }
            Content::Other { at, what } => format!("{what} at {at}"),
        }
    }

    fn hash(&self) -> u64 {
        let mut h = Fnv::new();
        match self {
            Content::Absent => h.write(b"a"),
            Content::File { bytes, .. } => {
                h.write(b"f");
                h.write(bytes)
            }
            Content::Link { at, target } => {
                h.write(b"l");
                h.write(at.as_bytes());
                h.write(b"\0");
                h.write(target)
            }
            Content::Other { at, what } => {
                h.write(b"o");
                h.write(at.as_bytes());
                h.write(what.as_bytes())
            }
        }
        h.0
    }
}

/// Bytes as `{"text": "..."}` when UTF-8 (readable in the store), else `{"hex": "..."}`.
mod bytes_repr {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Repr {
        Text(String),
        Hex(String),
    }

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(b) {
            Ok(t) => Repr::Text(t.to_owned()).serialize(s),
            Err(_) => Repr::Hex(b.iter().map(|x| format!("{x:02x}")).collect()).serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        match Repr::deserialize(d)? {
            Repr::Text(t) => Ok(t.into_bytes()),
            Repr::Hex(h) => {
                if h.len() % 2 != 0 {
                    return Err(serde::de::Error::custom("odd hex length"));
                }
                (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&h[i..i + 2], 16).map_err(serde::de::Error::custom))
                    .collect()
            }
        }
    }
}

/// FNV-1a 64: file names for approved-state records and a dedupe key. Not a security
/// boundary: a record names its path in full and a mismatch is an error.
struct Fnv(u64);
impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, b: &[u8]) {
        for x in b {
            self.0 ^= u64::from(*x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Where a held write stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Approved,
    Rejected,
}

/// A write to hold (what the caller knows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewHeld {
    /// What the agent wrote.
    pub proposed: Content,
    /// Where, what it replaced, and why it is held: stored with the record as it is.
    #[serde(flatten)]
    pub meta: NewHeldMeta,
}

/// A held write as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldWrite {
    pub id: String,
    /// RFC 3339 UTC time it was held.
    pub time: String,
    pub status: Status,
    /// When approved or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_time: Option<String>,
    /// Absolute path of the file (root joined with rel), for display.
    pub path: PathBuf,
    /// `None` once rejected (the owner's word discards the bytes).
    pub proposed: Option<Content>,
    /// Files in the store (`kept/`) holding the agent's bytes that do not fit a record: a
    /// file over [`nofollow::MAX_BYTES`] (`proposed` then says its size), streamed in whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<PathBuf>,
    #[serde(flatten)]
    pub new: NewHeldMeta,
}

/// What a held write is about, besides the agent's bytes: stored as part of its record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewHeldMeta {
    /// The watched root the path is relative to (opened without following links).
    pub root: PathBuf,
    /// The guarded file, relative to `root`.
    pub rel: String,
    /// What it replaced: the approved content the file is put back to.
    pub replaced: Content,
    /// The rule that guards the file (`claude-settings`).
    pub rule: String,
    /// `widens` or `unparseable`.
    pub verdict: String,
    /// One line per finding (`permissions/allow: added "Bash(*)"`).
    pub reasons: Vec<String>,
    /// A readable line diff of replaced → proposed.
    pub diff: String,
    /// Reasons this write can never be approved as is (a worktree root that fails
    /// validation); empty when approvable.
    pub blocked: Vec<String>,
    /// Who held it (`settings-watch`, `agent-shell`).
    pub source: String,
}

/// The approved state of one guarded file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ApprovedRecord {
    path: PathBuf,
    content: Content,
    time: String,
}

/// Errors of the store: what failed and where.
#[derive(Debug, thiserror::Error)]
pub enum HeldError {
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("{}: corrupt record: {why}", path.display())]
    Corrupt { path: PathBuf, why: String },
    #[error("no held write with id {0:?}")]
    NotFound(String),
    #[error("held write {id} is already {status:?}")]
    NotPending { id: String, status: Status },
    #[error("held write {id}: {} changed since it was held (now {now}, held over {was}); refusing to overwrite it", path.display())]
    Changed {
        id: String,
        path: PathBuf,
        now: String,
        was: String,
    },
    #[error("held write {id} cannot be approved: {why}")]
    Blocked { id: String, why: String },
    #[error("{0:?} is not a held-write id")]
    BadId(String),
}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> HeldError + 'a {
    move |source| HeldError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// The held-writes store.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// Dedupe index of pending records: (path, hash of proposed) → id.
    index: Mutex<HashMap<(PathBuf, u64), String>>,
    /// Durability deferred past a revert's swap ([`Store::defer`]).
    syncer: std::sync::Arc<sync::Syncer>,
}

impl Drop for Store {
    /// Whatever was deferred is made durable, and the displaced entries removed, before the
    /// store goes (a clean exit leaves nothing beside the guarded files).
    fn drop(&mut self) {
        let _ = self.syncer.flush();
    }
}

/// The store's exclusive lock; released on drop.
pub struct StoreLock(#[allow(dead_code)] nix::fcntl::Flock<File>);

impl Store {
    /// Open (creating, 0700) the store in `dir`: normally `Policy::held_dir()`.
    pub fn open(dir: &Path) -> Result<Store, HeldError> {
        use std::os::unix::fs::DirBuilderExt;
        for sub in ["", "pending", "resolved", "approved", "tmp", "kept"] {
            let p = dir.join(sub);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&p)
                .map_err(io(&p, "create folder"))?;
        }
        let s = Store {
            dir: dir.to_path_buf(),
            index: Mutex::new(HashMap::new()),
            syncer: Default::default(),
        };
        // Temporary files are records that never got renamed into place: incomplete by
        // definition, and the write they describe is still in the guarded file (the file is
        // only reverted after the rename), so removing them loses nothing.
        // Under the lock: every record write happens under it, so no other process is
        // half-way through one of these.
        {
            let _lock = s.lock()?;
            let tmp = dir.join("tmp");
            for e in std::fs::read_dir(&tmp).map_err(io(&tmp, "list"))? {
                let e = e.map_err(io(&tmp, "list"))?;
                let _ = std::fs::remove_file(e.path());
            }
            s.set_aside_unreadable()?;
        }
        let pending = s.pending()?;
        let mut idx = s.index.lock().unwrap_or_else(|p| p.into_inner());
        for w in pending {
            if let Some(p) = &w.proposed {
                idx.insert((w.path.clone(), p.hash()), w.id.clone());
            }
        }
        drop(idx);
        Ok(s)
    }

    /// A pending record that does not parse — after a power loss, one whose fsync was still
    /// deferred ([`sync`]) can be empty — is renamed to `<id>.json.unreadable` (kept, never
    /// removed; no longer listed), so the store opens; the write it held is still in the
    /// displaced entry beside the guarded file, which the next pass holds again.
    fn set_aside_unreadable(&self) -> Result<(), HeldError> {
        let d = self.dir.join("pending");
        for e in std::fs::read_dir(&d).map_err(io(&d, "list"))? {
            let p = e.map_err(io(&d, "list"))?.path();
            if p.extension().is_some_and(|x| x == "json")
                && matches!(self.read_record(&p), Err(HeldError::Corrupt { .. }))
            {
                let mut to = p.clone().into_os_string();
                to.push(".unreadable");
                std::fs::rename(&p, &to).map_err(io(&p, "set aside unreadable record"))?;
            }
        }
        Ok(())
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Take the store's exclusive lock (blocks). Hold it across read-compare-hold-revert so a
    /// concurrent `approve` and the watcher never interleave.
    pub fn lock(&self) -> Result<StoreLock, HeldError> {
        let p = self.dir.join(".lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(io(&p, "open lock"))?;
        nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
            .map(StoreLock)
            .map_err(|(_, e)| HeldError::Io {
                path: p,
                op: "flock",
                source: e.into(),
            })
    }

    /// Record a write durably. If an identical write to the same path is already pending,
    /// that record is returned instead (`false`): holding is idempotent, so a hold repeated
    /// after a crash does not duplicate.
    pub fn hold(&self, new: NewHeld) -> Result<(HeldWrite, bool), HeldError> {
        self.hold_with(new, None)
    }

    /// [`Store::hold`] without waiting for the disk: the record is complete and visible when
    /// this returns (it survives the process), and the returned [`sync::AfterSwap`] carries its
    /// fsyncs (record, `pending/`). The caller adds the swap's own and hands it to
    /// [`Store::defer`] after the swap; a displaced entry still naming the agent's bytes stays
    /// until then. For a revert only: the crash semantics are in [`sync`].
    pub fn hold_deferred(
        &self,
        new: NewHeld,
    ) -> Result<(HeldWrite, bool, sync::AfterSwap), HeldError> {
        let mut after = sync::AfterSwap::default();
        let (w, fresh) = self.hold_with(new, Some(&mut after))?;
        Ok((w, fresh, after))
    }

    /// Queue `after` for the store's sync thread (waits while [`sync::MAX_QUEUED`] are queued).
    pub fn defer(&self, after: sync::AfterSwap) {
        self.syncer.defer(after);
    }

    /// Wait until everything deferred is durable and the displaced entries are removed.
    pub fn flush(&self) -> Result<(), HeldError> {
        self.syncer.flush().map_err(|e| HeldError::Io {
            path: self.dir.join("pending"),
            op: "deferred fsync",
            source: std::io::Error::other(e),
        })
    }

    /// Test hook: the sync thread takes nothing until [`Store::flush`].
    #[doc(hidden)]
    pub fn pause_sync(&self) {
        self.syncer.pause();
    }

    fn hold_with(
        &self,
        new: NewHeld,
        deferred: Option<&mut sync::AfterSwap>,
    ) -> Result<(HeldWrite, bool), HeldError> {
        let path = new.meta.root.join(&new.meta.rel);
        let key = (path.clone(), new.proposed.hash());
        let known = self
            .index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(id) = known {
            if let Ok(w) = self.read_record(&self.dir.join("pending").join(format!("{id}.json"))) {
                if w.status == Status::Pending && w.proposed.as_ref() == Some(&new.proposed) {
                    return Ok((w, false));
                }
            }
        }
        let w = HeldWrite {
            id: new_id(),
            time: crate::events::rfc3339_now(),
            status: Status::Pending,
            resolved_time: None,
            path,
            proposed: Some(new.proposed),
            kept: Vec::new(),
            new: new.meta,
        };
        let pending = self.dir.join("pending");
        match deferred {
            None => self.write_json(&pending, &format!("{}.json", w.id), &w)?,
            Some(after) => {
                let f = self.write_json_with(&pending, &format!("{}.json", w.id), &w, false)?;
                after.files.extend(f);
                let d = File::open(&pending).map_err(io(&pending, "open folder"))?;
                after.dirs.push(d.into());
            }
        }
        self.index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, w.id.clone());
        Ok((w, true))
    }

    /// Stream `src` whole into the store as bytes of the pending write `id` (a file too large
    /// for a record): `tmp/`, fsync, then linked to a name no other call has taken
    /// (`kept/<id>-<n>.bytes`, the first free `n`: a link never replaces an entry, so a
    /// second write kept for the same record cannot overwrite the first), folder fsynced, and
    /// the name added to the record's `kept`. The caller holds the lock.
    pub fn keep(&self, id: &str, src: &mut dyn std::io::Read) -> Result<PathBuf, HeldError> {
        check_id(id)?;
        let tmp = self
            .dir
            .join("tmp")
            .join(format!("keep-{}", nofollow::tmp_name(id)));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io(&tmp, "create"))?;
        std::io::copy(src, &mut f).map_err(io(&tmp, "copy"))?;
        f.sync_all().map_err(io(&tmp, "fsync"))?;
        drop(f);
        let kept_dir = self.dir.join("kept");
        let mut n = 0u32;
        let dest = loop {
            let dest = kept_dir.join(format!("{id}-{n}.bytes"));
            match std::fs::hard_link(&tmp, &dest) {
                Ok(()) => break dest,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(HeldError::Io {
                        path: dest,
                        op: "link into kept/",
                        source: e,
                    });
                }
            }
        };
        let _ = std::fs::remove_file(&tmp);
        sync_path(&kept_dir)?;
        let rec = self.dir.join("pending").join(format!("{id}.json"));
        let mut w = self.read_record(&rec)?;
        w.kept.push(dest.clone());
        self.write_json(&self.dir.join("pending"), &format!("{id}.json"), &w)?;
        Ok(dest)
    }

    /// Pending held writes, oldest first.
    pub fn pending(&self) -> Result<Vec<HeldWrite>, HeldError> {
        self.list_in("pending")
    }

    /// Resolved (approved or rejected) held writes, oldest first.
    pub fn resolved(&self) -> Result<Vec<HeldWrite>, HeldError> {
        self.list_in("resolved")
    }

    fn list_in(&self, sub: &str) -> Result<Vec<HeldWrite>, HeldError> {
        let d = self.dir.join(sub);
        let mut out = Vec::new();
        for e in std::fs::read_dir(&d).map_err(io(&d, "list"))? {
            let e = e.map_err(io(&d, "list"))?;
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                match self.read_record(&p) {
                    Ok(w) => out.push(w),
                    // Approved/rejected between the listing and the read.
                    Err(HeldError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// One held write, pending or resolved.
    pub fn get(&self, id: &str) -> Result<HeldWrite, HeldError> {
        check_id(id)?;
        for sub in ["pending", "resolved"] {
            let p = self.dir.join(sub).join(format!("{id}.json"));
            match self.read_record(&p) {
                Ok(w) => return Ok(w),
                Err(HeldError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Err(HeldError::NotFound(id.to_owned()))
    }

    /// The owner approves: the proposed content is written to the file atomically (no links
    /// followed) and becomes the approved state. Refused when the file no longer holds what the
    /// write was reverted to (someone changed it since), or when the write is blocked.
    /// Takes the store lock itself.
    pub fn approve(&self, id: &str) -> Result<HeldWrite, HeldError> {
        let _lock = self.lock()?;
        let mut w = self.get(id)?;
        if w.status != Status::Pending {
            return Err(HeldError::NotPending {
                id: id.into(),
                status: w.status,
            });
        }
        if !w.new.blocked.is_empty() {
            return Err(HeldError::Blocked {
                id: id.into(),
                why: w.new.blocked.join("; "),
            });
        }
        let proposed = w.proposed.clone().unwrap_or(Content::Absent);
        if let Content::Link { at, .. } = &proposed {
            if *at != w.new.rel {
                return Err(HeldError::Blocked {
                    id: id.into(),
                    why: format!(
                        "it replaces the folder {at} with a link; do that by hand if you mean it"
                    ),
                });
            }
        }
        if let Content::Other { what, .. } = &proposed {
            return Err(HeldError::Blocked {
                id: id.into(),
                why: format!("it is {what}, not a file"),
            });
        }
        let root_fd = nofollow::open_root(&w.new.root).map_err(io(&w.new.root, "open root"))?;
        let now = nofollow::read(&root_fd, &w.new.rel).map_err(io(&w.path, "read"))?;
        let done_before = now.same_as(&proposed)
            && self
                .approved(&w.path)?
                .is_some_and(|a| a.same_as(&proposed));
        if !done_before {
            if !now.same_as(&w.new.replaced) {
                return Err(HeldError::Changed {
                    id: id.into(),
                    path: w.path.clone(),
                    now: now.describe(),
                    was: w.new.replaced.describe(),
                });
            }
            // Approved state first: a watcher that sees the write finds it already approved.
            self.set_approved(&w.path, &proposed)?;
            write_approved(&w, &root_fd, &proposed)?;
        }
        w.status = Status::Approved;
        w.resolved_time = Some(crate::events::rfc3339_now());
        self.resolve(&w)?;
        Ok(w)
    }

    /// The owner rejects: the proposed bytes are discarded (the record is kept, without them,
    /// among the resolved ones). The file is not touched: it already holds the approved state.
    pub fn reject(&self, id: &str) -> Result<HeldWrite, HeldError> {
        let _lock = self.lock()?;
        let mut w = self.get(id)?;
        if w.status != Status::Pending {
            return Err(HeldError::NotPending {
                id: id.into(),
                status: w.status,
            });
        }
        w.status = Status::Rejected;
        w.resolved_time = Some(crate::events::rfc3339_now());
        w.proposed = None;
        self.resolve(&w)?;
        Ok(w)
    }

    fn resolve(&self, w: &HeldWrite) -> Result<(), HeldError> {
        self.write_json(&self.dir.join("resolved"), &format!("{}.json", w.id), w)?;
        let p = self.dir.join("pending").join(format!("{}.json", w.id));
        std::fs::remove_file(&p).map_err(io(&p, "remove pending record"))?;
        let d = self.dir.join("pending");
        sync_path(&d)?;
        self.index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, v| *v != w.id);
        Ok(())
    }

    /// The approved state of `path` (absolute), or `None` when the store has no record.
    pub fn approved(&self, path: &Path) -> Result<Option<Content>, HeldError> {
        let p = self.approved_file(path);
        match std::fs::read(&p) {
            Ok(b) => {
                let r: ApprovedRecord =
                    serde_json::from_slice(&b).map_err(|e| HeldError::Corrupt {
                        path: p.clone(),
                        why: e.to_string(),
                    })?;
                if r.path != path {
                    return Err(HeldError::Corrupt {
                        path: p,
                        why: format!(
                            "record is for {} (hash collision with {})",
                            r.path.display(),
                            path.display()
                        ),
                    });
                }
                Ok(Some(r.content))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HeldError::Io {
                path: p,
                op: "read approved state",
                source: e,
            }),
        }
    }

    /// Record `content` as the approved state of `path` (absolute), durably.
    pub fn set_approved(&self, path: &Path, content: &Content) -> Result<(), HeldError> {
        let rec = ApprovedRecord {
            path: path.to_path_buf(),
            content: content.clone(),
            time: crate::events::rfc3339_now(),
        };
        let f = self.approved_file(path);
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.write_json(&self.dir.join("approved"), &name, &rec)
    }

    /// Every path with an approved-state record, with its content.
    pub fn approved_all(&self) -> Result<Vec<(PathBuf, Content)>, HeldError> {
        let d = self.dir.join("approved");
        let mut out = Vec::new();
        for e in std::fs::read_dir(&d).map_err(io(&d, "list"))? {
            let p = e.map_err(io(&d, "list"))?.path();
            let b = std::fs::read(&p).map_err(io(&p, "read approved state"))?;
            let r: ApprovedRecord = serde_json::from_slice(&b).map_err(|e| HeldError::Corrupt {
                path: p.clone(),
                why: e.to_string(),
            })?;
            out.push((r.path, r.content));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn approved_file(&self, path: &Path) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let mut h = Fnv::new();
        h.write(path.as_os_str().as_bytes());
        self.dir.join("approved").join(format!("{:016x}.json", h.0))
    }

    fn read_record(&self, p: &Path) -> Result<HeldWrite, HeldError> {
        let b = std::fs::read(p).map_err(io(p, "read record"))?;
        serde_json::from_slice(&b).map_err(|e| HeldError::Corrupt {
            path: p.to_path_buf(),
            why: e.to_string(),
        })
    }

    /// Write `value` as `dir/name` atomically: `tmp/`, fsync, rename, fsync `dir`.
    fn write_json<T: Serialize>(&self, dir: &Path, name: &str, value: &T) -> Result<(), HeldError> {
        self.write_json_with(dir, name, value, true).map(drop)
    }

    /// `durable` false: no fsync here; the written file is returned open, for the caller to
    /// fsync (with `dir`) later.
    fn write_json_with<T: Serialize>(
        &self,
        dir: &Path,
        name: &str,
        value: &T,
        durable: bool,
    ) -> Result<Option<File>, HeldError> {
        let tmp = self.dir.join("tmp").join(format!(
            "{name}.{}-{}",
            std::process::id(),
            nofollow::tmp_name("r")
        ));
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| HeldError::Corrupt {
            path: tmp.clone(),
            why: e.to_string(),
        })?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io(&tmp, "create"))?;
        f.write_all(&bytes).map_err(io(&tmp, "write"))?;
        if durable {
            f.sync_all().map_err(io(&tmp, "fsync"))?;
        }
        crash_point("record-written");
        let dest = dir.join(name);
        std::fs::rename(&tmp, &dest).map_err(io(&dest, "rename into place"))?;
        crash_point("record-renamed");
        if durable {
            sync_path(dir)?;
            return Ok(None);
        }
        Ok(Some(f))
    }
}

/// Write the content the owner approved, through `gitward::fsx` (no link followed anywhere on
/// the path; a link at the file itself is replaced, never written through; a folder there is
/// refused). A link to create goes through [`nofollow`] (temporary link + rename).
fn write_approved(
    w: &HeldWrite,
    root_fd: &impl std::os::fd::AsFd,
    c: &Content,
) -> Result<(), HeldError> {
    let fs_err = |e: crate::fsx::FsError| HeldError::Io {
        path: w.path.clone(),
        op: "write approved bytes",
        source: std::io::Error::other(e.to_string()),
    };
    let rel = Path::new(&w.new.rel);
    match c {
        Content::File { bytes, mode } => {
            let root = crate::fsx::Root::open(&w.new.root).map_err(fs_err)?;
            if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                root.create_dir_all(parent, 0o755).map_err(fs_err)?;
            }
            root.write_atomic_with(rel, bytes, *mode, crate::fsx::Replace::AnyButFolder)
                .map_err(fs_err)
        }
        Content::Absent => {
            let root = crate::fsx::Root::open(&w.new.root).map_err(fs_err)?;
            match root.remove_file(rel) {
                Ok(()) => Ok(()),
                Err(e) if e.is_not_found() => Ok(()),
                Err(e) => Err(fs_err(e)),
            }
        }
        Content::Link { .. } | Content::Other { .. } => {
            nofollow::write_atomic(root_fd, &w.new.rel, c)
                .map_err(io(&w.path, "write approved link"))
        }
    }
}

/// Crash points for the kill tests: in debug builds, when `GITWARD_CRASH_AT` names this point,
/// the process SIGKILLs itself here (no destructors, no flush: exactly a `kill -9`). Release
/// builds have none.
#[inline]
pub fn crash_point(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("GITWARD_CRASH_AT").is_some_and(|v| v == name) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

fn sync_path(dir: &Path) -> Result<(), HeldError> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io(dir, "fsync folder"))
}

fn check_id(id: &str) -> Result<(), HeldError> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(HeldError::BadId(id.into()));
    }
    Ok(())
}

/// A new id: time in milliseconds (hex, fixed width, so ids sort by time), pid, sequence.
fn new_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    format!(
        "{ms:011x}-{:x}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str) -> Content {
        Content::File {
            bytes: s.as_bytes().to_vec(),
            mode: 0o644,
        }
    }

    fn new_held(root: &Path, proposed: Content, replaced: Content) -> NewHeld {
        NewHeld {
            proposed,
            meta: NewHeldMeta {
                root: root.to_path_buf(),
                rel: ".claude/settings.json".into(),
                replaced,
                rule: "claude-settings".into(),
                verdict: "widens".into(),
                reasons: vec!["permissions/allow: added \"Bash(*)\"".into()],
                diff: "+x".into(),
                blocked: vec![],
                source: "test".into(),
            },
        }
    }

    #[test]
    fn hold_dedupes_and_survives_reopen() {
        let t = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let s = Store::open(&t.path().join("held")).unwrap();
        let (a, fresh) = s
            .hold(new_held(ws.path(), file("P"), Content::Absent))
            .unwrap();
        assert!(fresh);
        let (b, fresh) = s
            .hold(new_held(ws.path(), file("P"), Content::Absent))
            .unwrap();
        assert!(!fresh);
        assert_eq!(a.id, b.id);
        let (c, _) = s
            .hold(new_held(ws.path(), file("\u{0}\u{ff}"), Content::Absent))
            .unwrap();
        // A stray temporary file from a crash is swept on open.
        std::fs::write(t.path().join("held/tmp/x.json.1"), "{").unwrap();
        let s = Store::open(&t.path().join("held")).unwrap();
        let ids: Vec<_> = s.pending().unwrap().into_iter().map(|w| w.id).collect();
        assert_eq!(ids, vec![a.id.clone(), c.id.clone()]);
        assert_eq!(s.get(&c.id).unwrap().proposed, Some(file("\u{0}\u{ff}")));
        let (d, fresh) = s
            .hold(new_held(ws.path(), file("P"), Content::Absent))
            .unwrap();
        assert!(!fresh);
        assert_eq!(d.id, a.id);
        assert!(std::fs::read_dir(t.path().join("held/tmp"))
            .unwrap()
            .next()
            .is_none());
    }

    #[test]
    fn approve_writes_and_refuses_a_changed_file() {
        let t = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let s = Store::open(&t.path().join("held")).unwrap();
        let path = ws.path().join(".claude/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "A").unwrap();
        s.set_approved(&path, &file("A")).unwrap();
        let (w, _) = s.hold(new_held(ws.path(), file("P"), file("A"))).unwrap();
        // Someone changed the file since: refused.
        std::fs::write(&path, "Z").unwrap();
        let e = s.approve(&w.id).unwrap_err();
        assert!(matches!(e, HeldError::Changed { .. }), "{e}");
        assert!(e.to_string().contains("changed since it was held"));
        std::fs::write(&path, "A").unwrap();
        let done = s.approve(&w.id).unwrap();
        assert_eq!(done.status, Status::Approved);
        assert_eq!(std::fs::read(&path).unwrap(), b"P");
        assert_eq!(s.approved(&path).unwrap(), Some(file("P")));
        assert!(s.pending().unwrap().is_empty());
        assert!(matches!(
            s.approve(&w.id),
            Err(HeldError::NotPending { .. })
        ));
        assert_eq!(s.resolved().unwrap().len(), 1);
    }

    #[test]
    fn reject_discards_and_blocked_cannot_be_approved() {
        let t = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let s = Store::open(&t.path().join("held")).unwrap();
        let (w, _) = s
            .hold(new_held(ws.path(), file("P"), Content::Absent))
            .unwrap();
        let r = s.reject(&w.id).unwrap();
        assert_eq!(r.proposed, None);
        assert_eq!(s.get(&w.id).unwrap().status, Status::Rejected);
        let mut n = new_held(ws.path(), file("Q"), Content::Absent);
        n.meta.blocked = vec!["worktree root ~/.config fails".into()];
        let (w, _) = s.hold(n).unwrap();
        assert!(matches!(s.approve(&w.id), Err(HeldError::Blocked { .. })));
        assert!(matches!(s.get("../x"), Err(HeldError::BadId(_))));
        assert!(matches!(s.get("nope"), Err(HeldError::NotFound(_))));
        assert!(!ws.path().join(".claude/settings.json").exists());
    }
}
