//! `settings-watch`: inotify on the folders of the guarded files; every write judged the
//! moment it lands, widening ones held and reverted.
//!
//! Watched: each root's folder and every folder below it that could hold a guarded file
//! ([`Rules::may_contain`], case-insensitive), so a file created, replaced by rename (an
//! editor's atomic save), written in place, turned into a link, or whose folder is deleted and
//! recreated is seen. Triggers are only triggers: every decision reads the path again,
//! without following links, under the store lock.
//!
//! When to judge: on `IN_CLOSE_WRITE` and `IN_MOVED_TO` at once (the write is complete); on
//! `IN_DELETE`/`IN_MOVED_FROM` at once (the file is gone) — unless a new file already stands
//! at the name and cannot be parsed yet (the event is older than the file: it waits for its
//! own close, or for quiet); a link created at once. A file
//! created or modified but not yet closed, or found in a folder just created, is judged once
//! it has been quiet for [`QUIET`] (at most [`QUIET_MAX`] after the first event), so a writer
//! is not reverted half-way through its write; content that cannot be parsed waits for the
//! writer's close up to [`QUIET_MAX`] (a writer descheduled between its create and its write
//! leaves an empty file that is quiet but unfinished). Every guarded file present is judged again
//! every [`RECHECK`] whatever the events: writes through a shared memory mapping raise none.
//! `IN_Q_OVERFLOW` → a full rescan.
//!
//! The approved state lives in the held store (`Policy::held_dir()`); at the first start for a
//! root it is initialised from the files as they are (marker `roots/<hash>` in the store).

use super::{
    accept, change_of, hold_and_revert, list_dir, recover, Action, Outcome, Rules, SettingsError,
    Snapshot,
};
use crate::events::{Event, EventKind, Tool};
use crate::held::nofollow;
use crate::held::{Content, HeldWrite, Store};
use crate::policy::{Policy, PolicyError};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::collections::{BTreeSet, HashMap};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A file written but not closed is judged after it has been quiet this long.
pub const QUIET: Duration = Duration::from_millis(150);
/// … and at the latest this long after its first event.
pub const QUIET_MAX: Duration = Duration::from_secs(2);
/// Every guarded file present is judged again this often, events or not. A write through a
/// shared memory mapping raises no inotify event (inotify(7): "modifications that may occur
/// because of mmap(2), msync(2), and munmap(2)" are not reported) and the mapping keeps the
/// file open, so its close event waits until it is unmapped — for as long as the writer
/// likes. Neither the change time (a page already dirty is rewritten without a fault) nor
/// open/close counts (inotify merges identical consecutive events) can stand in for reading
/// the bytes, so the bytes are read: a few small files, a few microseconds per pass. Each pass
/// comes between half and one and a half of this after the last, at random ([`next_recheck`]).
pub const RECHECK: Duration = Duration::from_secs(2);

/// The time to the next [`RECHECK`] pass: between half and one and a half of it, at random,
/// so that a writer who sees the watcher's reads (its own inotify watch on the file reports
/// them) cannot put the approved bytes back just in time for each pass.
fn next_recheck() -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let half = RECHECK / 2;
    half + Duration::from_millis(h.finish() % (RECHECK.as_millis() as u64 + 1))
}

/// What to watch, from the policy.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Folders whose guarded files are watched: the repository, the session's existing
    /// worktrees, and the `[settings] roots` of the policy.
    pub roots: Vec<PathBuf>,
    pub rules: Rules,
    /// The held-writes store folder.
    pub store_dir: PathBuf,
    /// The session's worktree folder: `run` watches it, and each folder that appears in it
    /// (a new worktree) becomes a root with nothing approved yet (fail closed: a guarded file
    /// checked out or written there is held until the owner approves it).
    pub worktree_dir: Option<PathBuf>,
    /// The policy's other worktree roots (`worktree_roots`): watched like the session's
    /// worktree folder, each folder in them a root.
    pub worktree_roots: Vec<PathBuf>,
    pub session: Option<String>,
}

impl WatchConfig {
    /// Roots and rules of a policy. The repository is always a root; each folder already in
    /// the session's worktree folder is one too; `[settings] roots = [...]` adds more
    /// (absolute paths).
    pub fn from_policy(policy: &Policy, home: &Path) -> Result<WatchConfig, PolicyError> {
        let rules = Rules::from_policy(policy, home)?;
        let mut roots = vec![policy.repo.clone()];
        for dir in std::iter::once(&policy.worktree_dir).chain(&policy.worktree_roots) {
            if let Ok(rd) = std::fs::read_dir(dir) {
                let mut wts: Vec<PathBuf> = rd
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .filter(|p| !roots.contains(p))
                    .collect();
                wts.sort();
                roots.extend(wts);
            }
        }
        if let Some(toml::Value::Array(extra)) = policy.settings.get("roots") {
            for (i, r) in extra.iter().enumerate() {
                let key = format!("settings.roots[{i}]");
                let p = r
                    .as_str()
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .ok_or_else(|| PolicyError {
                        file: policy.file.clone(),
                        key: key.clone(),
                        rule: "must be an absolute path (a string)".into(),
                    })?;
                roots.push(crate::path::resolve(&p));
            }
        }
        roots.dedup();
        Ok(WatchConfig {
            roots,
            rules,
            store_dir: policy.held_dir(),
            worktree_dir: Some(policy.worktree_dir.clone()),
            worktree_roots: policy.worktree_roots.clone(),
            session: Some(policy.session.clone()),
        })
    }
}

struct Root {
    path: PathBuf,
    fd: OwnedFd,
}

/// The watcher's state. [`Watcher::check`] is one pass; [`Watcher::run`] loops on inotify.
pub struct Watcher {
    cfg: WatchConfig,
    store: Store,
    roots: Vec<Root>,
    source: &'static str,
}

/// Summary of one pass.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassSummary {
    pub held: usize,
    pub accepted: usize,
    pub recovered: usize,
}

fn marker_name(root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in root.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl Watcher {
    /// Open the store and the roots; initialise the approved state of a root seen for the
    /// first time: from its files as they are, except a worktree's, which starts from the
    /// main work tree's approved state ([`Self::seed_from_main`]).
    ///
    /// The rules are extended first with the work-tree files the guarded commands run
    /// ([`super::second_hop`]), named by the approved settings or by the settings as they
    /// stand now (the agent's new command must not run its new script either). Such a file
    /// with no approved record yet starts from its content now only when the main work tree's
    /// approved settings name it and the root is not a worktree seen for the first time;
    /// otherwise from nothing (absent), so a script the agent creates or names is held.
    pub fn open(mut cfg: WatchConfig) -> Result<Watcher, SettingsError> {
        let store = Store::open(&cfg.store_dir)?;
        let mut roots = Vec::new();
        for p in &cfg.roots {
            let fd = nofollow::open_root(p).map_err(|source| SettingsError::Io {
                path: p.clone(),
                op: "open root",
                source,
            })?;
            roots.push(Root {
                path: p.clone(),
                fd,
            });
        }
        let base = cfg.rules.clone();
        let mut named = Vec::new();
        for r in &roots {
            let snap = Snapshot::capture(&r.path, &base)?;
            for (rel, c) in &snap.files {
                if let Some(rule) = base.lookup(rel) {
                    named.extend(super::second_hop::named_by(rule, &r.path, rel, c));
                }
            }
        }
        let approved_named = Self::approved_named(&store, &roots, &base)?;
        named.extend(approved_named.iter().map(|(_, n)| n.clone()));
        named.sort();
        named.dedup_by(|a, b| a.rel == b.rel);
        cfg.rules = base.with_named(&named);
        let w = Watcher {
            cfg,
            store,
            roots,
            source: "settings-watch",
        };
        let first_seen = w.initialise()?;
        w.record_named(&base, &named, &first_seen)?;
        Ok(w)
    }

    /// (root index, named path) for every path a guarded command in an approved settings
    /// file names.
    fn approved_named(
        store: &Store,
        roots: &[Root],
        base: &Rules,
    ) -> Result<Vec<(usize, super::second_hop::Named)>, SettingsError> {
        let mut out = Vec::new();
        for (p, c) in store.approved_all()? {
            let Some((ri, r)) = roots
                .iter()
                .enumerate()
                .filter(|(_, r)| p.starts_with(&r.path))
                .max_by_key(|(_, r)| r.path.as_os_str().len())
            else {
                continue;
            };
            let Ok(rel) = p.strip_prefix(&r.path) else {
                continue;
            };
            let rel = rel.to_string_lossy();
            if let Some(rule) = base.lookup(&rel) {
                for n in super::second_hop::named_by(rule, &r.path, &rel, &c) {
                    out.push((ri, n));
                }
            }
        }
        Ok(out)
    }

    /// Give every named path with no approved record one: its content now where the root's
    /// approved settings name it (the owner's script, at the first start), else absent.
    fn record_named(
        &self,
        base: &Rules,
        named: &[super::second_hop::Named],
        first_seen: &[usize],
    ) -> Result<(), SettingsError> {
        if named.is_empty() {
            return Ok(());
        }
        let _lock = self.store.lock()?;
        let vouched = Self::approved_named(&self.store, &self.roots, base)?;
        // Guarded folders and `**/` paths: every file they hold when the rule is first seen
        // in a root, found by a walk with their rules alone (R7-3, R7-6). A marker record
        // (`<rel>/**`, absent) says the rule was seen: a file made later has no record and is
        // judged against absence, like a named file that did not exist.
        let deep: Vec<super::second_hop::Named> = named
            .iter()
            .filter(|n| n.folder || n.rel.contains("**"))
            .cloned()
            .collect();
        if !deep.is_empty() {
            let only = Rules {
                files: Vec::new(),
                root_check: None,
            }
            .with_named(&deep);
            let vouched_rules = Rules {
                files: Vec::new(),
                root_check: None,
            };
            for (ri, r) in self.roots.iter().enumerate() {
                let mine: Vec<super::second_hop::Named> = vouched
                    .iter()
                    .filter(|(i, _)| *i == ri)
                    .map(|(_, n)| n.clone())
                    .collect();
                let vouched_here = vouched_rules.with_named(&mine);
                let fresh: Vec<&super::second_hop::Named> = deep
                    .iter()
                    .filter(|n| {
                        !matches!(
                            self.store.approved(&r.path.join(&n.rel).join("**")),
                            Ok(Some(_))
                        )
                    })
                    .collect();
                if fresh.is_empty() {
                    continue;
                }
                let snap = Snapshot::capture(&r.path, &only)?;
                for (rel, c) in &snap.files {
                    let p = r.path.join(rel);
                    let mine = Rules {
                        files: Vec::new(),
                        root_check: None,
                    }
                    .with_named(&fresh.iter().map(|n| (*n).clone()).collect::<Vec<_>>());
                    if mine.lookup(rel).is_none()
                        || self.roots_owning(&p) != Some(ri)
                        || self.store.approved(&p)?.is_some()
                    {
                        continue;
                    }
                    let adopt = !(first_seen.contains(&ri) && self.is_worktree(&r.path))
                        && vouched_here.lookup(rel).is_some();
                    let c = if adopt { c.clone() } else { Content::Absent };
                    self.store.set_approved(&p, &c)?;
                }
                for n in fresh {
                    self.store
                        .set_approved(&r.path.join(&n.rel).join("**"), &Content::Absent)?;
                }
            }
        }
        for (ri, r) in self.roots.iter().enumerate() {
            for n in named {
                if n.folder || n.rel.contains("**") {
                    continue;
                }
                let p = r.path.join(&n.rel);
                if self.roots_owning(&p) != Some(ri) || self.store.approved(&p)?.is_some() {
                    continue;
                }
                let adopt = !(first_seen.contains(&ri) && self.is_worktree(&r.path))
                    && vouched.iter().any(|(i, v)| *i == ri && v.rel == n.rel);
                let c = if adopt {
                    nofollow::read(&r.fd, &n.rel).map_err(|source| SettingsError::Io {
                        path: p.clone(),
                        op: "read",
                        source,
                    })?
                } else {
                    Content::Absent
                };
                self.store.set_approved(&p, &c)?;
            }
        }
        Ok(())
    }

    /// The same watcher, naming `source` (e.g. `agent-shell`) in its events and held
    /// entries.
    pub fn with_source(mut self, source: &'static str) -> Self {
        self.source = source;
        self
    }

    /// The store (for `held list|show|approve|reject`).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The indices of the roots seen for the first time.
    fn initialise(&self) -> Result<Vec<usize>, SettingsError> {
        let dir = self.store.dir().join("roots");
        std::fs::create_dir_all(&dir).map_err(|source| SettingsError::Io {
            path: dir.clone(),
            op: "create folder",
            source,
        })?;
        let mut first = Vec::new();
        for (ri, r) in self.roots.iter().enumerate() {
            let marker = dir.join(marker_name(&r.path));
            if marker.exists() {
                continue;
            }
            first.push(ri);
            let _lock = self.store.lock()?;
            if self.is_worktree(&r.path) {
                self.seed_from_main(&r.path)?;
            } else {
                let snap = Snapshot::capture(&r.path, &self.cfg.rules)?;
                for (rel, c) in &snap.files {
                    let p = r.path.join(rel);
                    if self.store.approved(&p)?.is_none() {
                        self.store.set_approved(&p, c)?;
                    }
                }
            }
            std::fs::write(&marker, r.path.as_os_str().as_encoded_bytes())
                .and_then(|_| std::fs::File::open(&dir)?.sync_all())
                .map_err(|source| SettingsError::Io {
                    path: marker.clone(),
                    op: "write root marker",
                    source,
                })?;
        }
        Ok(first)
    }

    /// Whether `root` is a folder of the session's worktree folder or of a policy worktree
    /// root: a worktree the agent may have made, and filled, in the command before it was
    /// first seen.
    fn is_worktree(&self, root: &Path) -> bool {
        root.parent().is_some_and(|d| {
            self.cfg.worktree_dir.as_deref() == Some(d)
                || self.cfg.worktree_roots.iter().any(|w| w == d)
        })
    }

    /// The approved state of a worktree seen for the first time: the main work tree's (the
    /// first root's) approved content at the same relative path, and nothing (absent) where
    /// the main work tree has none. Never the worktree's files as they stand: the agent can
    /// add a worktree and write its settings in one command, before any guard sees the root
    /// (fifth red-team pass, R5-8: a Claude Code `Stop` hook written there was approved). The
    /// pass that follows judges each file against this baseline like any other change: what
    /// widens is held and reverted to the main work tree's content, the rest is accepted.
    /// Links are not copied (a link is judged as a change from nothing).
    fn seed_from_main(&self, root: &Path) -> Result<(), SettingsError> {
        let Some(main) = self.roots.first().filter(|m| !self.is_worktree(&m.path)) else {
            return Ok(());
        };
        for (p, c) in self.store.approved_all()? {
            let Ok(rel) = p.strip_prefix(&main.path) else {
                continue;
            };
            if !matches!(c, Content::File { .. })
                || self.roots_owning(&p) != Some(0)
                || self.cfg.rules.lookup(&rel.to_string_lossy()).is_none()
            {
                continue;
            }
            let target = root.join(rel);
            if self.store.approved(&target)?.is_none() {
                self.store.set_approved(&target, &c)?;
            }
        }
        Ok(())
    }

    /// Judge one guarded path of root `ri` against its approved state and act.
    pub fn evaluate(
        &self,
        ri: usize,
        rel: &str,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<Option<Outcome>, SettingsError> {
        match self.evaluate_or_wait(ri, rel, false, emit)? {
            Judged::Done(o) => Ok(o.map(|o| *o)),
            Judged::Unfinished => Ok(None),
        }
    }

    /// [`Self::evaluate`]; with `may_wait`, a write that would be held is left as it is
    /// ([`Judged::Unfinished`]) when its content cannot be parsed or when a process still has
    /// the file open for writing ([`nofollow::open_for_writing`]): a second writer that
    /// truncated it right after the first one closed it has not written yet. The caller
    /// judges it later (its close, or the wait for quiet, within [`QUIET_MAX`]). The decision
    /// is taken on the one read the judgement uses, under the store lock.
    fn evaluate_or_wait(
        &self,
        ri: usize,
        rel: &str,
        may_wait: bool,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<Judged, SettingsError> {
        let r = &self.roots[ri];
        let _lock = self.store.lock()?;
        let file_rule = self.cfg.rules.lookup(rel).is_some();
        let mut now = nofollow::read(&r.fd, rel).map_err(|source| SettingsError::Io {
            path: r.path.join(rel),
            op: "read",
            source,
        })?;
        if !file_rule {
            // A folder on a guarded path: only a link there matters.
            if !matches!(&now, Content::Link { at, .. } if at == rel) {
                now = Content::Absent;
            }
        }
        let path = r.path.join(rel);
        let approved = self.store.approved(&path)?.unwrap_or(Content::Absent);
        let Some(change) = change_of(&r.path, rel, &approved, &now, &self.cfg.rules) else {
            return Ok(Judged::Done(None));
        };
        if may_wait
            && change.verdict.is_held()
            && matches!(change.after, Content::File { .. })
            && (change.verdict == super::Verdict::Unparseable || self.being_written(ri, rel))
        {
            return Ok(Judged::Unfinished);
        }
        let outcome = if change.verdict.is_held() {
            let o = hold_and_revert(&self.store, &change, &self.cfg.rules, self.source)?;
            if let Content::Link { at, .. } = &change.after {
                // The link is gone; put back every approved file below the folder it replaced.
                let prefix = r.path.join(at);
                for (p, c) in self.store.approved_all()? {
                    if p.starts_with(&prefix) && p != prefix && !matches!(c, Content::Absent) {
                        if let Ok(sub) = p.strip_prefix(&r.path) {
                            let sub = sub.to_string_lossy();
                            super::restore(
                                &self.store,
                                &r.path,
                                &sub,
                                &c,
                                &self.cfg.rules,
                                self.source,
                            )?;
                        }
                    }
                }
            }
            o
        } else {
            accept(&self.store, &change, self.source)?
        };
        emit(&self.event(outcome.event()));
        for d in &outcome.displaced {
            emit(&self.held_event(
                d,
                format!(
                    "write to {} made during a revert held as {}",
                    d.new.rel, d.id
                ),
            ));
        }
        Ok(Judged::Done(Some(Box::new(outcome))))
    }

    /// Does a process have the guarded file `rel` of root `ri` open for writing? (`false`
    /// when it is not a regular file or the kernel cannot say.)
    fn being_written(&self, ri: usize, rel: &str) -> bool {
        match nofollow::parent(&self.roots[ri].fd, rel) {
            Ok(nofollow::Parent::Dir(dir, name)) => nofollow::open_file(&dir, &name)
                .and_then(|f| nofollow::open_for_writing(&f))
                .unwrap_or(false),
            _ => false,
        }
    }

    /// Read again the inodes earlier reverts swapped out while a writer may still have them
    /// open ([`super::tail`]); hold what was written into them.
    fn poll_tails(&self, emit: &mut dyn FnMut(&Event)) -> Result<(), SettingsError> {
        if !super::tail::following(&self.store) {
            return Ok(());
        }
        let held = {
            let _lock = self.store.lock()?;
            super::tail::poll(&self.store, &self.cfg.rules, self.source)?
        };
        for h in held {
            emit(&self.held_event(
                &h,
                format!(
                    "write into {} after its revert (the writer still had it open) held as {}",
                    h.new.rel, h.id
                ),
            ));
        }
        Ok(())
    }

    fn event(&self, e: Event) -> Event {
        e.session(self.cfg.session.as_deref())
    }

    /// `settings_write_held` for a write held outside a judged change (displaced during a
    /// revert, or found after an interrupted one): the held entry carries what the event
    /// needs.
    fn held_event(&self, h: &HeldWrite, message: String) -> Event {
        self.event(
            Event::new(Tool::SettingsWatch, EventKind::SettingsWriteHeld, message)
                .path(&h.path)
                .with("rel", h.new.rel.clone())
                .with("rule", h.new.rule.clone())
                .with("id", h.id.clone())
                .with("verdict", h.new.verdict.clone())
                .with("reasons", h.new.reasons.clone())
                .with("diff", h.new.diff.clone()),
        )
    }

    /// Every guarded path of root `ri`: those present now and those with an approved record.
    fn known_paths(&self, ri: usize, snap: &Snapshot) -> Result<BTreeSet<String>, SettingsError> {
        let r = &self.roots[ri];
        let mut rels: BTreeSet<String> = snap.files.keys().cloned().collect();
        for (p, _) in self.store.approved_all()? {
            if let Ok(rel) = p.strip_prefix(&r.path) {
                let rel = rel.to_string_lossy().into_owned();
                if self.cfg.rules.lookup(&rel).is_some() && self.roots_owning(&p) == Some(ri) {
                    rels.insert(rel);
                }
            }
        }
        Ok(rels)
    }

    /// The root a path belongs to (the longest root that contains it).
    fn roots_owning(&self, p: &Path) -> Option<usize> {
        self.roots
            .iter()
            .enumerate()
            .filter(|(_, r)| p.starts_with(&r.path))
            .max_by_key(|(_, r)| r.path.as_os_str().len())
            .map(|(i, _)| i)
    }

    /// One full pass over every root: finish interrupted reverts, then judge every guarded
    /// path. `settings-watch check` is exactly this.
    pub fn check(&self, emit: &mut dyn FnMut(&Event)) -> Result<PassSummary, SettingsError> {
        let mut sum = PassSummary::default();
        // Our own reverts' displaced entries go first (once their records are durable), so
        // the pass below does not take them for an interrupted revert's.
        self.store.flush()?;
        for ri in 0..self.roots.len() {
            let snap = Snapshot::capture(&self.roots[ri].path, &self.cfg.rules)?;
            if !snap.leftovers.is_empty() {
                let _lock = self.store.lock()?;
                for h in recover(&self.store, &snap, &self.cfg.rules, self.source)? {
                    sum.recovered += 1;
                    emit(&self.held_event(
                        &h,
                        format!(
                            "write to {} found after an interrupted revert; held as {}",
                            h.new.rel, h.id
                        ),
                    ));
                }
            }
            for rel in self.known_paths(ri, &snap)? {
                if let Some(o) = self.evaluate(ri, &rel, emit)? {
                    match o.action {
                        Action::Held => sum.held += 1,
                        _ => sum.accepted += 1,
                    }
                }
            }
        }
        // Writers still in the inodes this pass swapped out: followed for a while (`run`
        // goes on following them in its loop).
        for h in super::tail::settle(&self.store, &self.cfg.rules, self.source, QUIET_MAX)? {
            sum.held += 1;
            emit(&self.held_event(
                &h,
                format!(
                    "write into {} after its revert (the writer still had it open) held as {}",
                    h.new.rel, h.id
                ),
            ));
        }
        Ok(sum)
    }

    /// Watch until SIGTERM / SIGINT / SIGHUP (clean shutdown: the current decision finishes,
    /// then `watch_stopped`). The signals are blocked in this thread and read from a signalfd.
    pub fn run(&mut self, emit: &mut dyn FnMut(&Event)) -> Result<(), SettingsError> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use nix::sys::signal::{SigSet, Signal};
        use nix::sys::signalfd::{SfdFlags, SignalFd};
        let mut mask = SigSet::empty();
        for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
            mask.add(s);
        }
        mask.thread_block().map_err(|e| self.werr(e))?;
        let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| self.werr(e))?;
        let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map_err(|e| self.werr(e))?;
        let mut st = RunState {
            wds: HashMap::new(),
            file_wds: HashMap::new(),
            containers: HashMap::new(),
            deferred: HashMap::new(),
            recheck_due: Instant::now() + next_recheck(),
            link_roots: HashMap::new(),
            retry_due: None,
            failures: 0,
        };
        for ri in 0..self.roots.len() {
            self.watch_tree(&ino, &mut st, ri, "")?;
        }
        self.watch_containers(&ino, &mut st, emit)?;
        // Judge what changed while we were not watching (watches are in place first, so
        // nothing slips between the pass and the loop).
        let sum = self.check(emit)?;
        emit(
            &self.event(
                Event::new(
                    Tool::SettingsWatch,
                    EventKind::WatchStarted,
                    format!(
                        "watching {} folders in {} roots",
                        st.wds.len(),
                        self.roots.len()
                    ),
                )
                .with(
                    "roots",
                    self.roots
                        .iter()
                        .map(|r| r.path.display().to_string())
                        .collect::<Vec<_>>(),
                )
                .with("folders", st.wds.len())
                .with("held_at_start", sum.held + sum.recovered),
            ),
        );
        loop {
            let timeout = st
                .deferred
                .values()
                .map(|d| d.due)
                .chain(st.retry_due)
                .chain(Some(st.recheck_due))
                .chain(super::tail::following(&self.store).then(|| Instant::now() + QUIET / 3))
                .min()
                .map(|due| {
                    let ms = due
                        .saturating_duration_since(Instant::now())
                        .as_millis()
                        .min(60_000);
                    PollTimeout::try_from(ms as u64 + 1).unwrap_or(PollTimeout::MAX)
                })
                .unwrap_or(PollTimeout::NONE);
            let mut fds = [
                PollFd::new(ino.as_fd(), PollFlags::POLLIN),
                PollFd::new(sfd.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(self.werr(e)),
            }
            if let Ok(Some(sig)) = sfd.read_signal() {
                emit(
                    &self.event(
                        Event::new(
                            Tool::SettingsWatch,
                            EventKind::WatchStopped,
                            "stopped on a signal",
                        )
                        .with("signal", sig.ssi_signo),
                    ),
                );
                return Ok(());
            }
            let mut failed: Option<SettingsError> = None;
            loop {
                let events = match ino.read_events() {
                    Ok(ev) => ev,
                    Err(nix::errno::Errno::EAGAIN) => break,
                    Err(e) => return Err(self.werr(e)),
                };
                for ev in events {
                    if let Err(e) = self.handle(&ino, &mut st, ev, emit) {
                        failed = Some(e);
                    }
                }
            }
            if let Err(e) = self.run_deferred(&ino, &mut st, emit) {
                failed = Some(e);
            }
            if let Err(e) = self.poll_tails(emit) {
                failed = Some(e);
            }
            if st.recheck_due <= Instant::now() {
                if let Err(e) = self.refresh_roots(&ino, &mut st, emit) {
                    failed = Some(e);
                }
                self.recheck(&mut st);
                st.recheck_due = Instant::now() + next_recheck();
            }
            if st.retry_due.is_some_and(|t| t <= Instant::now()) {
                st.retry_due = None;
                for ri in 0..self.roots.len() {
                    if let Err(e) = self.watch_tree(&ino, &mut st, ri, "") {
                        failed = Some(e);
                    }
                }
                if let Err(e) = self.check(emit) {
                    failed = Some(e);
                }
            }
            // One path failing (the agent removed a folder while we reverted in it, a file
            // vanished mid-read) never stops the watcher: report it and judge every guarded
            // file again shortly, with a growing delay while the failure persists.
            if let Some(e) = failed {
                st.failures += 1;
                let delay = Duration::from_millis(50 << st.failures.min(6));
                emit(&self.event(Event::new(
                    Tool::SettingsWatch,
                    EventKind::CheckIncomplete,
                    format!(
                        "{e}; every guarded file is judged again in {} ms",
                        delay.as_millis()
                    ),
                )));
                st.retry_due = Some(Instant::now() + delay);
            } else if st.retry_due.is_none() {
                st.failures = 0;
            }
        }
    }

    fn werr(&self, e: nix::Error) -> SettingsError {
        SettingsError::Watch {
            path: self
                .roots
                .first()
                .map(|r| r.path.clone())
                .unwrap_or_default(),
            source: e,
        }
    }

    const MASK: AddWatchFlags = AddWatchFlags::IN_CREATE
        .union(AddWatchFlags::IN_DELETE)
        .union(AddWatchFlags::IN_MODIFY)
        .union(AddWatchFlags::IN_CLOSE_WRITE)
        .union(AddWatchFlags::IN_MOVED_FROM)
        .union(AddWatchFlags::IN_MOVED_TO)
        .union(AddWatchFlags::IN_DELETE_SELF)
        .union(AddWatchFlags::IN_MOVE_SELF)
        .union(AddWatchFlags::IN_DONT_FOLLOW)
        .union(AddWatchFlags::IN_ONLYDIR);

    /// Watch `rel_dir` of root `ri` and every folder below it that could hold a guarded file.
    fn watch_tree(
        &self,
        ino: &Inotify,
        st: &mut RunState,
        ri: usize,
        rel_dir: &str,
    ) -> Result<(), SettingsError> {
        let r = &self.roots[ri];
        // Open without following links; a link here is judged as a folder link, not watched.
        let dir = if rel_dir.is_empty() {
            nofollow::open_root(&r.path).ok()
        } else {
            match nofollow::parent(&r.fd, rel_dir) {
                Ok(nofollow::Parent::Dir(p, name)) => super::open_sub(&p, &name),
                _ => None,
            }
        };
        let Some(dir) = dir else { return Ok(()) };
        let path = r.path.join(rel_dir);
        match ino.add_watch(&path, Self::MASK) {
            Ok(wd) => {
                st.wds.insert(wd, (ri, rel_dir.to_owned()));
            }
            Err(nix::errno::Errno::ENOENT)
            | Err(nix::errno::Errno::ENOTDIR)
            | Err(nix::errno::Errno::ELOOP) => return Ok(()),
            Err(e) => return Err(SettingsError::Watch { path, source: e }),
        }
        let depth = rel_dir.split('/').filter(|s| !s.is_empty()).count();
        if depth >= self.cfg.rules.max_depth().unwrap_or(super::DEEP_LIMIT) {
            return Ok(());
        }
        for (name, is_dir, _) in list_dir(&dir, &path)? {
            let rel = super::join(rel_dir, &name);
            if !is_dir && self.cfg.rules.lookup(&rel).is_some() {
                self.watch_file(ino, st, ri, &rel);
            }
            // A folder is watched as a folder even when a glob matches its name (`tools/**/*`
            // guards the files below `tools/mdir`).
            if is_dir && self.cfg.rules.may_contain(&rel) {
                self.watch_tree(ino, st, ri, &rel)?;
            }
        }
        Ok(())
    }

    /// Watch the session's worktree folder and the policy's worktree roots (or, until they
    /// exist, their parents) and make every folder in them a root. A worktree seen for the first time while running starts with
    /// nothing approved: its guarded files are judged as creations (held), since the agent
    /// controls what a new worktree holds and when.
    fn watch_containers(
        &mut self,
        ino: &Inotify,
        st: &mut RunState,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<(), SettingsError> {
        let mask = AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_ONLYDIR
            | AddWatchFlags::IN_DONT_FOLLOW;
        // The session's worktree folder and the policy's other worktree roots: git-shim lets
        // a worktree be made directly in each of them.
        let wdirs: Vec<PathBuf> = self
            .cfg
            .worktree_dir
            .iter()
            .chain(&self.cfg.worktree_roots)
            .cloned()
            .collect();
        let mut new_roots = Vec::new();
        for wdir in wdirs {
            let parent = wdir.parent().map(Path::to_path_buf);
            let grandparent = parent
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf);
            for c in [grandparent, parent, Some(wdir.clone())]
                .into_iter()
                .flatten()
            {
                if let Ok(wd) = ino.add_watch(&c, mask) {
                    st.containers.insert(wd, c);
                }
            }
            let Ok(fd) = nofollow::open_root(&wdir) else {
                continue;
            };
            for (name, is_dir, _) in list_dir(&fd, &wdir)? {
                let p = wdir.join(&name);
                if is_dir && !self.roots.iter().any(|r| r.path == p) && !new_roots.contains(&p) {
                    new_roots.push(p);
                }
            }
        }
        self.refresh_roots(ino, st, emit)?;
        for p in new_roots {
            let Ok(fd) = nofollow::open_root(&p) else {
                continue;
            };
            // Nothing approved yet: mark the root as known so a restart does not take what
            // is there now as approved.
            let marker = self.store.dir().join("roots").join(marker_name(&p));
            std::fs::write(&marker, p.as_os_str().as_encoded_bytes()).map_err(|source| {
                SettingsError::Io {
                    path: marker.clone(),
                    op: "write root marker",
                    source,
                }
            })?;
            self.roots.push(Root {
                path: p.clone(),
                fd,
            });
            let ri = self.roots.len() - 1;
            self.cfg.roots.push(p.clone());
            self.watch_tree(ino, st, ri, "")?;
            emit(
                &self.event(
                    Event::new(
                        Tool::SettingsWatch,
                        EventKind::WatchStarted,
                        format!("watching the new worktree {}", p.display()),
                    )
                    .with("roots", vec![p.display().to_string()]),
                ),
            );
            let snap = Snapshot::capture(&p, &self.cfg.rules)?;
            for rel in snap.files.keys() {
                st.defer(ri, rel);
            }
        }
        Ok(())
    }

    /// Make sure every root's descriptor is still the folder at the root's path. A worktree
    /// folder renamed away and a new folder made under its name would otherwise never be
    /// watched (the descriptor and the watches follow the old folder, and the name matches a
    /// known root): the root is re-opened at its path, re-watched, and every guarded file in
    /// it judged against the approved state recorded for that path. A root whose path is now
    /// a link is reported (`check_incomplete`): what it leads to is not vouched for.
    fn refresh_roots(
        &mut self,
        ino: &Inotify,
        st: &mut RunState,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<(), SettingsError> {
        use nix::sys::stat::{fstat, lstat, SFlag};
        for ri in 0..self.roots.len() {
            let path = self.roots[ri].path.clone();
            let Ok(now) = lstat(&path) else {
                // Gone: nothing at the name to judge; a folder made there later is seen then.
                continue;
            };
            let Ok(held) = fstat(self.roots[ri].fd.as_fd()) else {
                continue;
            };
            if now.st_dev == held.st_dev && now.st_ino == held.st_ino {
                continue;
            }
            if SFlag::from_bits_truncate(now.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK {
                let target = std::fs::read_link(&path).unwrap_or_default();
                // Said once per link (again if it changes), not at every pass.
                if st.link_roots.get(&path) == Some(&target) {
                    continue;
                }
                st.link_roots.insert(path.clone(), target.clone());
                emit(&self.event(
                    Event::new(
                        Tool::SettingsWatch,
                        EventKind::CheckIncomplete,
                        format!(
                            "{} is now a link to {}: the settings files it leads to are not vouched for",
                            path.display(),
                            target.display()
                        ),
                    )
                    .path(&path),
                ));
                continue;
            }
            let Ok(fd) = nofollow::open_root(&path) else {
                continue;
            };
            // Drop the watches that follow the old folder.
            let stale: Vec<WatchDescriptor> = st
                .wds
                .iter()
                .chain(st.file_wds.iter())
                .filter(|(_, (r, _))| *r == ri)
                .map(|(wd, _)| *wd)
                .collect();
            for wd in stale {
                let _ = ino.rm_watch(wd);
                st.wds.remove(&wd);
                st.file_wds.remove(&wd);
            }
            self.roots[ri].fd = fd;
            emit(
                &self.event(
                    Event::new(
                        Tool::SettingsWatch,
                        EventKind::WatchStarted,
                        format!(
                            "{} was replaced by another folder; watching the new one",
                            path.display()
                        ),
                    )
                    .with("roots", vec![path.display().to_string()]),
                ),
            );
            self.watch_tree(ino, st, ri, "")?;
            let snap = Snapshot::capture(&path, &self.cfg.rules)?;
            for rel in self.known_paths(ri, &snap)? {
                st.defer(ri, &rel);
            }
        }
        Ok(())
    }

    /// Watch the inode of the guarded file `rel` (when it is a regular file): writes through a
    /// hard link are seen too. Re-added after every decision, since a revert or an atomic save
    /// puts a new inode at the name.
    fn watch_file(&self, ino: &Inotify, st: &mut RunState, ri: usize, rel: &str) {
        if !matches!(
            nofollow::read(&self.roots[ri].fd, rel),
            Ok(Content::File { .. })
        ) {
            return;
        }
        let mask = AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_DONT_FOLLOW;
        if let Ok(wd) = ino.add_watch(&self.roots[ri].path.join(rel), mask) {
            st.file_wds.insert(wd, (ri, rel.to_owned()));
        }
    }

    fn handle(
        &mut self,
        ino: &Inotify,
        st: &mut RunState,
        ev: nix::sys::inotify::InotifyEvent,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<(), SettingsError> {
        use AddWatchFlags as F;
        if ev.mask.contains(F::IN_Q_OVERFLOW) {
            emit(&self.event(Event::new(
                Tool::SettingsWatch,
                EventKind::WatchRescan,
                "inotify queue overflowed; rescanning every guarded file",
            )));
            for ri in 0..self.roots.len() {
                self.watch_tree(ino, st, ri, "")?;
            }
            self.check(emit)?;
            return Ok(());
        }
        if st.containers.contains_key(&ev.wd) {
            if ev.mask.contains(F::IN_IGNORED) {
                st.containers.remove(&ev.wd);
            }
            // A folder (a new worktree, or one made under a known worktree's name) or a link.
            if ev.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) {
                self.watch_containers(ino, st, emit)?;
            }
            return Ok(());
        }
        if let Some((ri, rel)) = st.file_wds.get(&ev.wd).cloned() {
            if ev.mask.contains(F::IN_IGNORED) {
                st.file_wds.remove(&ev.wd);
            } else if ev
                .mask
                .intersects(F::IN_CLOSE_WRITE | F::IN_ATTRIB | F::IN_MODIFY)
            {
                // Through the waiting for quiet, not at once: the inode may no longer be the
                // file at the path (a revert moved it away and an event about that arrives
                // late), and the file now there may be half-written — judged at once, it would
                // be taken for a broken file and held.
                st.defer(ri, &rel);
            }
            return Ok(());
        }
        if ev
            .mask
            .intersects(F::IN_IGNORED | F::IN_DELETE_SELF | F::IN_MOVE_SELF)
        {
            if ev.mask.contains(F::IN_MOVE_SELF) {
                let _ = ino.rm_watch(ev.wd);
            }
            st.wds.remove(&ev.wd);
            return Ok(());
        }
        let Some((ri, dir_rel)) = st.wds.get(&ev.wd).cloned() else {
            return Ok(());
        };
        let Some(name) = ev.name.as_ref().map(|n| n.to_string_lossy().into_owned()) else {
            return Ok(());
        };
        if nofollow::tmp_target(&name).is_some() {
            return Ok(());
        }
        let rel = super::join(&dir_rel, &name);
        let rules = &self.cfg.rules;
        let is_file_rule = rules.lookup(&rel).is_some() && !ev.mask.contains(F::IN_ISDIR);
        if ev.mask.contains(F::IN_ISDIR) && !is_file_rule {
            if !rules.may_contain(&rel) {
                return Ok(());
            }
            if ev.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) {
                self.watch_tree(ino, st, ri, &rel)?;
                // Files already inside: judge once quiet (a writer may be mid-way).
                let snap = Snapshot::capture(&self.roots[ri].path, rules)?;
                let prefix = format!("{rel}/");
                for f in snap.files.keys().filter(|f| f.starts_with(&prefix)) {
                    st.defer(ri, f);
                }
            }
            // Created, moved or deleted: the approved files below it may be gone.
            self.evaluate_below(ri, &rel, emit)?;
            return Ok(());
        }
        if !is_file_rule {
            // A link (or other non-folder) where a folder on a guarded path belongs.
            if rules.may_contain(&rel) && ev.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) {
                self.evaluate(ri, &rel, emit)?;
                self.evaluate_below(ri, &rel, emit)?;
            }
            return Ok(());
        }
        if ev.mask.intersects(F::IN_CLOSE_WRITE | F::IN_MOVED_TO) {
            // A write completed, or a file renamed over the name: judged at once — unless
            // another writer has the file open (it truncated it right after this close, say):
            // then it waits for that writer's close, or for quiet.
            st.deferred.remove(&(ri, rel.clone()));
            if let Judged::Unfinished = self.evaluate_or_wait(ri, &rel, true, emit)? {
                st.defer(ri, &rel);
            } else {
                self.watch_file(ino, st, ri, &rel);
            }
        } else if ev.mask.intersects(F::IN_MOVED_FROM | F::IN_DELETE) {
            // The file at the name went (judged at once: a deletion can widen). The event may
            // be old news — our own revert's, read after the agent made a new file there —
            // and the new file may be half-written: content that cannot be parsed is left to
            // its own events (its close is judged at once) or to the wait for quiet.
            st.deferred.remove(&(ri, rel.clone()));
            if let Judged::Unfinished = self.evaluate_or_wait(ri, &rel, true, emit)? {
                st.defer(ri, &rel);
            } else {
                self.watch_file(ino, st, ri, &rel);
            }
        } else if ev.mask.contains(F::IN_CREATE) {
            let is_regular = matches!(
                nofollow::read(&self.roots[ri].fd, &rel),
                Ok(Content::File { .. })
            );
            if is_regular {
                st.defer(ri, &rel);
            } else {
                self.evaluate(ri, &rel, emit)?;
            }
        } else if ev.mask.contains(F::IN_MODIFY) {
            st.defer(ri, &rel);
        }
        Ok(())
    }

    /// Judge every approved path below `rel` (a folder that was created, moved or deleted).
    fn evaluate_below(
        &self,
        ri: usize,
        rel: &str,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<(), SettingsError> {
        let prefix = self.roots[ri].path.join(rel);
        let below: Vec<String> = self
            .store
            .approved_all()?
            .into_iter()
            .filter(|(p, _)| p.starts_with(&prefix) && *p != prefix)
            .filter_map(|(p, _)| {
                p.strip_prefix(&self.roots[ri].path)
                    .ok()
                    .map(|x| x.to_string_lossy().into_owned())
            })
            .collect();
        for sub in below {
            self.evaluate(ri, &sub, emit)?;
        }
        Ok(())
    }

    fn run_deferred(
        &self,
        ino: &Inotify,
        st: &mut RunState,
        emit: &mut dyn FnMut(&Event),
    ) -> Result<(), SettingsError> {
        let now = Instant::now();
        let due: Vec<(usize, String)> = st
            .deferred
            .iter()
            .filter(|(_, d)| d.due <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for (ri, rel) in due {
            let Some(d) = st.deferred.get(&(ri, rel.clone())).cloned() else {
                continue;
            };
            // Still being written? Wait for quiet, within the bound.
            let quiet = self.quiet_for(ri, &rel);
            if quiet < QUIET && now.duration_since(d.first) < QUIET_MAX {
                st.deferred.insert(
                    (ri, rel),
                    Deferred {
                        first: d.first,
                        due: now + (QUIET - quiet),
                    },
                );
                continue;
            }
            // Quiet, but the content cannot be parsed: most often a writer between its
            // create/truncate and its write (descheduled past QUIET, or racing this read).
            // Its close (or a rename over the file) is judged at once; without one, the file
            // is judged as it stands at the bound.
            let may_wait = now.duration_since(d.first) < QUIET_MAX;
            if let Judged::Unfinished = self.evaluate_or_wait(ri, &rel, may_wait, emit)? {
                st.deferred.insert(
                    (ri, rel),
                    Deferred {
                        first: d.first,
                        due: d.first + QUIET_MAX,
                    },
                );
                continue;
            }
            st.deferred.remove(&(ri, rel.clone()));
            self.watch_file(ino, st, ri, &rel);
        }
        Ok(())
    }

    /// Judge again every guarded file whose inode is watched (every one present), events or
    /// not ([`RECHECK`]): each goes through the same wait for quiet as a written file (judged
    /// once it has not been modified for [`QUIET`], at the latest [`QUIET_MAX`] later), so a
    /// writer caught half-way through an ordinary write is not taken for a broken file.
    /// Unchanged files cost a read and a comparison.
    fn recheck(&self, st: &mut RunState) {
        let files: BTreeSet<(usize, String)> = st.file_wds.values().cloned().collect();
        for (ri, rel) in files {
            if !st.deferred.contains_key(&(ri, rel.clone())) {
                st.defer(ri, &rel);
            }
        }
    }

    /// How long since the file was last modified (zero when unknown).
    fn quiet_for(&self, ri: usize, rel: &str) -> Duration {
        let p = self.roots[ri].path.join(rel);
        std::fs::symlink_metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or(QUIET)
    }
}

/// What [`Watcher::evaluate_or_wait`] did.
enum Judged {
    Done(Option<Box<Outcome>>),
    /// Unparseable content left for later (a writer may be half-way).
    Unfinished,
}

#[derive(Clone)]
struct Deferred {
    first: Instant,
    due: Instant,
}

struct RunState {
    wds: HashMap<WatchDescriptor, (usize, String)>,
    /// Watches on guarded files' inodes: a write through a hard link elsewhere is reported
    /// only to the inode (and the folder of the name used), not to the guarded file's folder.
    file_wds: HashMap<WatchDescriptor, (usize, String)>,
    deferred: HashMap<(usize, String), Deferred>,
    /// When every watched guarded file is judged again ([`RECHECK`]).
    recheck_due: Instant,
    /// Roots whose path is a link, with the target last reported.
    link_roots: HashMap<PathBuf, PathBuf>,
    /// Watches on the worktree folder (and its parent, until it exists).
    containers: HashMap<WatchDescriptor, PathBuf>,
    /// A full pass is due (after a failure).
    retry_due: Option<Instant>,
    failures: u32,
}

impl RunState {
    fn defer(&mut self, ri: usize, rel: &str) {
        let now = Instant::now();
        let e = self
            .deferred
            .entry((ri, rel.to_owned()))
            .or_insert(Deferred {
                first: now,
                due: now + QUIET,
            });
        e.due = (now + QUIET).min(e.first + QUIET_MAX);
    }
}
