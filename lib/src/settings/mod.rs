//! Settings rules: which project settings files are guarded, how each is parsed, and which
//! changes widen what the agent may do — plus the snapshot / compare / hold-and-revert steps
//! that `settings-watch` and `agent-shell` share.
//!
//! An agent that can edit `.vscode/settings.json`, `.mcp.json`, `.claude/settings.json`,
//! `.codex/config.toml`, `.envrc`… can widen its own permissions or plant a program that runs
//! outside the sandbox later. Every guarded file has a [`FileRule`] (shipped presets in
//! `presets.toml`; the policy's `[settings]` table adds or overrides). A change is judged key by
//! key ([`judge`]); a widening one is first stored in the held-writes store, then the file is
//! put back to the state the owner approved ([`enforce`], [`Watch`](watch)). Fail closed: a file
//! that cannot be parsed, a link, a folder where a file should be — all count as widening.
//!
//! Quick use (agent-shell):
//! ```no_run
//! # use gitward::settings::{Rules, Snapshot, enforce};
//! # fn f(store: &gitward::held::Store, root: &std::path::Path) -> Result<(), gitward::settings::SettingsError> {
//! let rules = Rules::presets();
//! let before = Snapshot::capture(root, &rules)?;
//! // … run the agent's command …
//! let after = Snapshot::capture(root, &rules)?;
//! for outcome in enforce(store, &before, &after, &rules, "agent-shell")? {
//!     println!("{}", outcome.event().to_line());
//! }
//! # Ok(()) }
//! ```

pub mod command;
mod compare;
pub mod glob;
pub mod parse;
mod rules;
pub mod second_hop;
pub mod tail;
pub mod watch;

pub use compare::{judge, text_diff, Effect, Finding, Judgement, Verdict};
pub use rules::{
    guarded_path, FileRule, Format, KeyKind, KeyRule, RootCheck, Rules, Unlisted, PRESETS,
};

use crate::events::{Event, EventKind, Tool};
use crate::held::nofollow::{self, Parent};
use crate::held::{Content, HeldError, HeldWrite, NewHeld, NewHeldMeta, Store};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Errors of the settings steps: what failed and where.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error(transparent)]
    Held(#[from] HeldError),
    #[error("{}: walk stopped after {limit} entries; the snapshot would be incomplete", root.display())]
    TooBig { root: PathBuf, limit: usize },
    #[error("{}: inotify: {source}", path.display())]
    Watch { path: PathBuf, source: nix::Error },
}

fn io_err(path: PathBuf, op: &'static str) -> impl FnOnce(std::io::Error) -> SettingsError {
    move |source| SettingsError::Io { path, op, source }
}

/// Entries a snapshot walk may visit before it gives up (fail closed: an error, not a partial
/// snapshot).
pub const WALK_LIMIT: usize = 200_000;
/// Folder depth a walk descends when a glob has `**`.
pub const DEEP_LIMIT: usize = 24;

/// The state of every guarded file below one root.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    pub root: PathBuf,
    /// Relative path → content. Includes folders on a guarded path that are links (as
    /// [`Content::Link`] at that folder).
    pub files: BTreeMap<String, Content>,
    /// Our own temporary files (`.<name>.gitward-<pid>-<n>.tmp`) found on the way: left by an
    /// interrupted revert ([`recover`]).
    #[serde(skip)]
    pub leftovers: Vec<String>,
}

impl Snapshot {
    /// Walk `root` (without following links) and read every guarded file the rules name.
    pub fn capture(root: &Path, rules: &Rules) -> Result<Snapshot, SettingsError> {
        let fd = nofollow::open_root(root).map_err(io_err(root.to_path_buf(), "open root"))?;
        let mut s = Snapshot {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
            leftovers: Vec::new(),
        };
        let mut budget = WALK_LIMIT;
        let max = rules.max_depth().unwrap_or(DEEP_LIMIT);
        walk(&fd, "", 0, max, rules, &mut s, &mut budget)?;
        Ok(s)
    }

    /// The content at `rel` (absent when not in the snapshot).
    pub fn get(&self, rel: &str) -> &Content {
        self.files.get(rel).unwrap_or(&Content::Absent)
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// List a folder: (name, is_dir, is_link) without following links.
pub(crate) fn list_dir(
    dir: &impl AsFd,
    shown: &Path,
) -> Result<Vec<(String, bool, bool)>, SettingsError> {
    use nix::dir::{Dir, Type};
    use nix::fcntl::OFlag;
    use nix::sys::stat::{fstatat, Mode, SFlag};
    let mut d = Dir::openat(
        dir.as_fd(),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| SettingsError::Io {
        path: shown.to_path_buf(),
        op: "list",
        source: e.into(),
    })?;
    let mut out = Vec::new();
    for e in d.iter() {
        let e = e.map_err(|e| SettingsError::Io {
            path: shown.to_path_buf(),
            op: "list",
            source: e.into(),
        })?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        let t = match e.file_type() {
            Some(t) => Some(t),
            None => fstatat(
                dir.as_fd(),
                name.as_str(),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .ok()
            .map(
                |st| match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
                    SFlag::S_IFDIR => Type::Directory,
                    SFlag::S_IFLNK => Type::Symlink,
                    _ => Type::File,
                },
            ),
        };
        out.push((name, t == Some(Type::Directory), t == Some(Type::Symlink)));
    }
    Ok(out)
}

fn open_sub(dir: &impl AsFd, name: &str) -> Option<OwnedFd> {
    use nix::fcntl::{openat, OFlag};
    openat(
        dir.as_fd(),
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()
}

fn walk(
    dir: &OwnedFd,
    rel_dir: &str,
    depth: usize,
    max: usize,
    rules: &Rules,
    s: &mut Snapshot,
    budget: &mut usize,
) -> Result<(), SettingsError> {
    let shown = s.root.join(rel_dir);
    for (name, is_dir, is_link) in list_dir(dir, &shown)? {
        if *budget == 0 {
            return Err(SettingsError::TooBig {
                root: s.root.clone(),
                limit: WALK_LIMIT,
            });
        }
        *budget -= 1;
        let rel = join(rel_dir, &name);
        if nofollow::tmp_target(&name).is_some() {
            s.leftovers.push(rel);
            continue;
        }
        // A real folder is walked even when a rule's glob matches its name (`tools/**/*`
        // guards the files below `tools/mdir`, not `tools/mdir` as a file).
        if (is_link || !is_dir) && rules.lookup(&rel).is_some() {
            let c =
                nofollow::read_at(dir, &name, &rel).map_err(io_err(s.root.join(&rel), "read"))?;
            if c != Content::Absent {
                s.files.insert(rel, c);
            }
            continue;
        }
        if !rules.may_contain(&rel) {
            continue;
        }
        if is_link {
            let c =
                nofollow::read_at(dir, &name, &rel).map_err(io_err(s.root.join(&rel), "read"))?;
            if matches!(c, Content::Link { .. }) {
                s.files.insert(rel, c);
            }
        } else if is_dir && depth < max {
            if let Some(sub) = open_sub(dir, &name) {
                walk(&sub, &rel, depth + 1, max, rules, s, budget)?;
            }
        }
    }
    Ok(())
}

/// One changed guarded file (or a folder on a guarded path that became a link).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub root: PathBuf,
    pub rel: String,
    /// `root` joined with `rel`.
    pub path: PathBuf,
    /// The rule's name.
    pub rule: String,
    pub before: Content,
    pub after: Content,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub blocked: Vec<String>,
    /// Readable line diff before → after.
    pub diff: String,
}

impl Change {
    /// One line per finding.
    pub fn reasons(&self) -> Vec<String> {
        self.findings
            .iter()
            .filter(|f| f.effect != Effect::Neutral || self.verdict == Verdict::Neutral)
            .map(Finding::line)
            .collect()
    }
}

/// Judge one guarded path's change (`None` when before and after are the same, or no rule
/// covers `rel`).
pub fn change_of(
    root: &Path,
    rel: &str,
    before: &Content,
    after: &Content,
    rules: &Rules,
) -> Option<Change> {
    if before.same_as(after) {
        return None;
    }
    let rule = rules
        .lookup(rel)
        .or_else(|| rules.files.iter().find(|r| r.may_contain(rel)))?;
    let mut j = judge(rule, before, after, rules.root_check.as_ref(), root);
    if rule.name == second_hop::RULE {
        // Name the setting that runs the file: the reason the owner reads first.
        for f in &mut j.findings {
            f.detail = format!("{}; {}", f.detail, rule.why);
        }
    }
    Some(Change {
        root: root.to_path_buf(),
        rel: rel.to_owned(),
        path: root.join(rel),
        rule: rule.name.clone(),
        before: before.clone(),
        after: after.clone(),
        verdict: j.verdict,
        findings: j.findings,
        blocked: j.blocked,
        diff: text_diff(before, after),
    })
}

/// Every change between two snapshots of the same root, folder links first.
pub fn compare(before: &Snapshot, after: &Snapshot, rules: &Rules) -> Vec<Change> {
    let keys: BTreeSet<&String> = before.files.keys().chain(after.files.keys()).collect();
    let mut out: Vec<Change> = keys
        .into_iter()
        .filter_map(|rel| change_of(&after.root, rel, before.get(rel), after.get(rel), rules))
        .collect();
    // Folders on a guarded path (no rule names them as files) come first: reverting a folder
    // link decides what happens to the files below it.
    out.sort_by_key(|c| (rules.lookup(&c.rel).is_some(), c.rel.clone()));
    out
}

/// What was done with one change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub change: Change,
    /// The held write (for a held change).
    pub held: Option<HeldWrite>,
    /// Writes displaced while reverting (the agent wrote again in between): held too.
    pub displaced: Vec<HeldWrite>,
    /// Held (reverted) or accepted.
    pub action: Action,
    pub source: String,
}

/// The decision carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Stored, then put back to the approved state.
    Held,
    /// Accepted: the new content is the approved state.
    Accepted,
    /// Put back because a folder on its path was a link that was reverted.
    Restored,
}

impl Outcome {
    /// The event for this outcome (`settings_write_held` / `settings_write_accepted`).
    pub fn event(&self) -> Event {
        let c = &self.change;
        let (kind, msg) = match self.action {
            Action::Held => (
                EventKind::SettingsWriteHeld,
                format!(
                    "write to {} {} ({}); reverted to {} and held as {}",
                    c.rel,
                    c.verdict.as_str(),
                    c.reasons().first().cloned().unwrap_or_default(),
                    c.before.describe(),
                    self.held.as_ref().map(|h| h.id.as_str()).unwrap_or("-")
                ),
            ),
            Action::Accepted => (
                EventKind::SettingsWriteAccepted,
                format!("write to {} {}: accepted", c.rel, c.verdict.as_str()),
            ),
            Action::Restored => (
                EventKind::SettingsWriteHeld,
                format!("{} restored after a link on its path was reverted", c.rel),
            ),
        };
        let tool = if self.source == "agent-shell" {
            Tool::AgentShell
        } else {
            Tool::SettingsWatch
        };
        let mut e = Event::new(tool, kind, msg)
            .repo(&c.root)
            .path(&c.path)
            .with("rel", c.rel.clone())
            .with("rule", c.rule.clone())
            .with("verdict", c.verdict.as_str())
            .with("reasons", c.reasons())
            .with("diff", c.diff.clone());
        if let Some(h) = &self.held {
            e = e.with("id", h.id.clone());
        }
        if !self.displaced.is_empty() {
            e = e.with(
                "displaced_ids",
                self.displaced
                    .iter()
                    .map(|h| h.id.clone())
                    .collect::<Vec<_>>(),
            );
        }
        if !c.blocked.is_empty() {
            e = e.with("blocked", c.blocked.clone());
        }
        e
    }
}

fn new_held(c: &Change, proposed: Content, source: &str, extra: Option<&str>) -> NewHeld {
    let mut reasons = c.reasons();
    if let Some(x) = extra {
        reasons.insert(0, x.to_owned());
    }
    NewHeld {
        meta: NewHeldMeta {
            root: c.root.clone(),
            rel: c.rel.clone(),
            diff: text_diff(&c.before, &proposed),
            replaced: c.before.clone(),
            rule: c.rule.clone(),
            verdict: c.verdict.as_str().into(),
            reasons,
            blocked: c.blocked.clone(),
            source: source.into(),
        },
        proposed,
    }
}

/// Hold a widening change and put the file back to `change.before`. The caller holds the
/// store lock. Order (no step waits for the disk; a SIGKILL anywhere loses nothing, because
/// every step is visible in the page cache before the next):
/// 1. the agent's content is recorded (`pending/<id>.json` written whole, then renamed in);
/// 2. the approved content is written to a temporary file beside the guarded one;
/// 3. it is swapped in with `renameat2(RENAME_EXCHANGE)` — the file is never half-written,
///    and whatever sat at the path at that instant — the agent's own inode, not a copy —
///    lands in the temporary name; the approved copy at the path is always the inode made in
///    2, never one the agent had open;
/// 4. that displaced content, if it is not what was recorded in 1 (the agent wrote again), is
///    held too (durably, at once);
/// 5. the fsyncs (record, `pending/`, approved copy, folder) go to the store's sync thread,
///    batched across a burst, and only once they are done is the displaced entry unlinked:
///    until then the agent's bytes are both in the record and under that name. What a power
///    loss in that window keeps is stated in [`crate::held::sync`].
pub fn hold_and_revert(
    store: &Store,
    change: &Change,
    rules: &Rules,
    source: &str,
) -> Result<Outcome, SettingsError> {
    let (held, _, mut after) =
        store.hold_deferred(new_held(change, change.after.clone(), source, None))?;
    // The agent may remove or replace the folder between our walk and the swap: walk again.
    let mut attempt = 0;
    let displaced = loop {
        let prepared = match prepare(change, &change.before, Some(&mut after)) {
            Ok(p) => p,
            Err(e) => break Err(e),
        };
        match put_back_prepared(
            store,
            change,
            &change.before,
            rules,
            source,
            prepared,
            Some(&held.id),
            Some(&mut after),
        ) {
            Err(SettingsError::Io { source: e, .. })
                if attempt < 3 && e.kind() == std::io::ErrorKind::NotFound =>
            {
                attempt += 1;
            }
            other => break other,
        }
    };
    // Whatever happened, the record is made durable (and nothing displaced is removed
    // before it is).
    store.defer(after);
    let displaced = displaced?;
    Ok(Outcome {
        change: change.clone(),
        held: Some(held),
        displaced,
        action: Action::Held,
        source: source.into(),
    })
}

fn open_root(root: &Path) -> Result<OwnedFd, SettingsError> {
    nofollow::open_root(root).map_err(io_err(root.to_path_buf(), "open root"))
}

/// Put `target` at `change.rel`, holding anything displaced that is not `change.after`.
/// The revert's temporary file, written and fsynced ahead of the swap.
struct Prepared {
    root: OwnedFd,
    parent: Parent,
    tmp: Option<String>,
}

/// Walk to the file's folder and, when the target is a file or link, write it to a fresh
/// temporary name there: fsynced here, or with `deferred` its fsync is added there (for
/// after the swap).
fn prepare(
    change: &Change,
    target: &Content,
    deferred: Option<&mut crate::held::sync::AfterSwap>,
) -> Result<Prepared, SettingsError> {
    let root = open_root(&change.root)?;
    let p = || change.path.clone();
    let parent = nofollow::parent(&root, &change.rel).map_err(io_err(p(), "walk"))?;
    let mut tmp = None;
    if let (Parent::Dir(dir, name), Content::File { .. } | Content::Link { .. }) = (&parent, target)
    {
        let t = nofollow::tmp_name(name);
        match deferred {
            Some(after) => after.files.extend(
                nofollow::create_tmp_unsynced(dir, &t, target)
                    .map_err(io_err(p(), "write temporary file"))?,
            ),
            None => nofollow::create_tmp(dir, &t, target)
                .map_err(io_err(p(), "write temporary file"))?,
        }
        crate::held::crash_point("revert-tmp-written");
        tmp = Some(t);
    }
    Ok(Prepared { root, parent, tmp })
}

fn put_back(
    store: &Store,
    change: &Change,
    target: &Content,
    rules: &Rules,
    source: &str,
) -> Result<Vec<HeldWrite>, SettingsError> {
    let prepared = prepare(change, target, None)?;
    put_back_prepared(store, change, target, rules, source, prepared, None, None)
}

/// `held_id`: the record already holding `change.after` (a revert), to which a file too large
/// for a record is added whole when it is what the swap displaced. `deferred`: the folder's
/// fsync and the removal of a displaced file or link are left there, for after the record is
/// durable ([`crate::held::sync`]); without it both happen here.
#[allow(clippy::too_many_arguments)]
fn put_back_prepared(
    store: &Store,
    change: &Change,
    target: &Content,
    rules: &Rules,
    source: &str,
    prepared: Prepared,
    held_id: Option<&str>,
    mut deferred: Option<&mut crate::held::sync::AfterSwap>,
) -> Result<Vec<HeldWrite>, SettingsError> {
    let Prepared {
        root,
        parent,
        tmp: ready,
    } = prepared;
    let p = || change.path.clone();
    let mut displaced = Vec::new();
    match parent {
        Parent::Dir(dir, name) => {
            let tmp = ready.clone().unwrap_or_else(|| nofollow::tmp_name(&name));
            let moved = match target {
                Content::File { .. } | Content::Link { .. } => {
                    nofollow::swap_in(&dir, &tmp, &name).map_err(io_err(p(), "swap in"))?
                }
                Content::Absent | Content::Other { .. } => {
                    nofollow::steal(&dir, &name, &tmp).map_err(io_err(p(), "move aside"))?
                }
            };
            crate::held::crash_point("revert-swapped");
            if moved {
                // The displaced entry, opened once: a regular file is read (and followed)
                // through this descriptor, whatever later happens to its name.
                let file = nofollow::open_file(&dir, &tmp);
                let read = |f: &Option<std::fs::File>| match f {
                    Some(f) => nofollow::read_file(f, &change.rel),
                    None => nofollow::read_at(&dir, &tmp, &change.rel),
                };
                let mut x = read(&file).map_err(io_err(p(), "read displaced"))?;
                if matches!(x, Content::File { .. }) && !x.same_as(&change.after) {
                    // Not what we judged: a writer got in between, and may still hold the
                    // file open (its remaining writes land in the inode now at `tmp`). Wait
                    // until no writer has it open and it is quiet (bounded), then take what
                    // it holds; later writes are followed ([`tail`]).
                    wait_writers(&dir, &tmp, file.as_ref());
                    x = read(&file).map_err(io_err(p(), "read displaced"))?;
                }
                let mut owner = held_id.map(str::to_owned);
                if !x.same_as(&change.after) && !x.same_as(target) && x != Content::Absent {
                    // Judged on its own, but held whatever the verdict: it was already
                    // replaced by the approved state, and only the owner brings it back.
                    let judged = change_of(&change.root, &change.rel, target, &x, rules);
                    let base = judged.as_ref().unwrap_or(change);
                    let (h, _) = store.hold(new_held(
                        base,
                        x.clone(),
                        source,
                        Some("written again while the previous write was being reverted"),
                    ))?;
                    owner = Some(h.id.clone());
                    displaced.push(h);
                }
                match (&x, &file) {
                    (Content::Other { .. }, Some(f)) if nofollow::is_oversized(&x) => {
                        // Too large for a record: streamed into the store whole, under a
                        // name of its own, before the temporary name goes.
                        let id = match owner {
                            Some(id) => id,
                            None => {
                                let (h, _) =
                                    store.hold(new_held(change, x.clone(), source, None))?;
                                let id = h.id.clone();
                                displaced.push(h);
                                id
                            }
                        };
                        tail::keep_whole(store, &id, f, &change.path)?;
                        nofollow::remove(&dir, &tmp)
                            .map_err(io_err(p(), "remove temporary file"))?;
                    }
                    (Content::Other { .. }, _) => {
                        // A folder or fifo: kept beside the file, under a name no other
                        // revert takes (the held id; a link never replaces an entry).
                        set_aside(&dir, &tmp, &name, owner.as_deref())
                            .map_err(io_err(p(), "set aside"))?;
                    }
                    _ => match deferred
                        .as_deref_mut()
                        .zip(crate::held::sync::inode_at(&dir, &tmp))
                    {
                        // Removed by the sync thread once the record is durable, if the
                        // name still holds this inode then.
                        Some((after, inode)) => after.remove.push(crate::held::sync::Removal {
                            dir: dir.try_clone().map_err(io_err(p(), "dup folder"))?,
                            name: tmp.clone(),
                            inode,
                        }),
                        None => nofollow::remove(&dir, &tmp)
                            .map_err(io_err(p(), "remove temporary file"))?,
                    },
                }
                if let (Some(f), Content::File { .. } | Content::Other { .. }) = (file, &x) {
                    tail::follow(
                        store,
                        tail::Tail {
                            file: f,
                            change: Change {
                                before: target.clone(),
                                ..change.clone()
                            },
                            last: x,
                            changed: std::time::Instant::now(),
                        },
                    );
                }
            }
            match deferred {
                Some(after) => after.dirs.push(dir),
                None => {
                    crate::held::crash_point("revert-tmp-removed");
                    nofollow::sync_dir(&dir).map_err(io_err(p(), "fsync folder"))?;
                    crate::held::crash_point("revert-done");
                }
            }
        }
        Parent::Link(at, _) => {
            // A folder on the path is a link: the link (already stored as `after`) goes, a
            // real folder comes back with the approved content.
            if let Parent::Dir(dir, name) =
                nofollow::parent(&root, &at).map_err(io_err(p(), "walk"))?
            {
                let tmp = nofollow::tmp_name(&name);
                if nofollow::steal(&dir, &name, &tmp).map_err(io_err(p(), "move link aside"))? {
                    let x = nofollow::read_at(&dir, &tmp, &at).map_err(io_err(p(), "read"))?;
                    if !x.same_as(&change.after) {
                        if let Content::Other { .. } = x {
                            // Swapped for a folder meanwhile: put it back, judge again later.
                            let _ = nix::fcntl::renameat(
                                dir.as_fd(),
                                tmp.as_str(),
                                dir.as_fd(),
                                name.as_str(),
                            );
                            return Ok(displaced);
                        }
                        let (h, _) = store.hold(new_held(
                            change,
                            x,
                            source,
                            Some("replaced while the link was being reverted"),
                        ))?;
                        displaced.push(h);
                    }
                    nofollow::remove(&dir, &tmp).map_err(io_err(p(), "remove link"))?;
                    nofollow::sync_dir(&dir).map_err(io_err(p(), "fsync folder"))?;
                }
            }
            displaced.extend(recreate_and_put_back(
                store, change, target, rules, source, &root,
            )?);
        }
        Parent::Missing | Parent::NotDir(_) => {
            displaced.extend(recreate_and_put_back(
                store, change, target, rules, source, &root,
            )?);
        }
    }
    Ok(displaced)
}

/// Wait (at most [`watch::QUIET_MAX`]) until no process has the file `name` in `dir` (open
/// as `f`) open for writing and it has not been modified for [`watch::QUIET`].
fn wait_writers(dir: &impl AsFd, name: &str, f: Option<&std::fs::File>) {
    let start = std::time::Instant::now();
    loop {
        let age =
            nix::sys::stat::fstatat(dir.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .ok()
                .and_then(|st| {
                    let m = std::time::UNIX_EPOCH
                        + std::time::Duration::new(
                            st.st_mtime.max(0) as u64,
                            st.st_mtime_nsec as u32,
                        );
                    m.elapsed().ok()
                })
                .unwrap_or(watch::QUIET);
        let writing = f.and_then(nofollow::open_for_writing) == Some(true);
        if (age >= watch::QUIET && !writing) || start.elapsed() >= watch::QUIET_MAX {
            return;
        }
        std::thread::sleep((watch::QUIET.saturating_sub(age)).clamp(
            std::time::Duration::from_millis(10),
            std::time::Duration::from_millis(50),
        ));
    }
}

/// Move the displaced entry `tmp` (a folder, a fifo) to `.<name>.gitward-held-<id>` beside
/// the guarded file, with `-<n>` added until the name is free: never over another entry
/// (`RENAME_NOREPLACE`), so nothing set aside earlier is replaced.
fn set_aside(dir: &impl AsFd, tmp: &str, name: &str, id: Option<&str>) -> std::io::Result<()> {
    use nix::fcntl::{renameat2, RenameFlags};
    let base = match id {
        Some(id) => format!(".{name}.gitward-held-{id}"),
        None => format!(
            ".{name}.gitward-held-{}",
            nofollow::tmp_name("x").trim_start_matches(".x")
        ),
    };
    for n in 0..1000u32 {
        let keep = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        match renameat2(
            dir.as_fd(),
            tmp,
            dir.as_fd(),
            keep.as_str(),
            RenameFlags::RENAME_NOREPLACE,
        ) {
            Ok(()) => return Ok(()),
            Err(nix::errno::Errno::EEXIST) => continue,
            // No RENAME_NOREPLACE here: the temporary name is unique already; leave it.
            Err(nix::errno::Errno::EINVAL) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The file's folder is gone (or was a link, now removed): create it and put the approved
/// content back through the same swap as above, so a file the agent created there meanwhile
/// is displaced and held, never overwritten.
fn recreate_and_put_back(
    store: &Store,
    change: &Change,
    target: &Content,
    rules: &Rules,
    source: &str,
    root: &OwnedFd,
) -> Result<Vec<HeldWrite>, SettingsError> {
    if matches!(target, Content::Absent | Content::Other { .. }) {
        return Ok(Vec::new());
    }
    nofollow::create_parent(root, &change.rel)
        .map_err(io_err(change.path.clone(), "create folder"))?;
    let prepared = prepare(change, target, None)?;
    if !matches!(prepared.parent, Parent::Dir(..)) {
        // The agent keeps swapping the folder: the next pass tries again.
        return Err(SettingsError::Io {
            path: change.path.clone(),
            op: "recreate folder",
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the folder was replaced again",
            ),
        });
    }
    put_back_prepared(store, change, target, rules, source, prepared, None, None)
}

/// Put the approved content `target` back at `rel` below `root` (a file below a folder link
/// that was just reverted), through the same exchange as a revert: whatever the agent put
/// there meanwhile is displaced and held, never overwritten.
pub(crate) fn restore(
    store: &Store,
    root: &Path,
    rel: &str,
    target: &Content,
    rules: &Rules,
    source: &str,
) -> Result<Vec<HeldWrite>, SettingsError> {
    let rule = rules
        .lookup(rel)
        .map(|r| r.name.clone())
        .unwrap_or_default();
    let c = Change {
        root: root.to_path_buf(),
        rel: rel.to_owned(),
        path: root.join(rel),
        rule,
        before: target.clone(),
        after: Content::Absent,
        verdict: Verdict::Widens,
        findings: Vec::new(),
        blocked: Vec::new(),
        diff: String::new(),
    };
    put_back(store, &c, target, rules, source)
}

/// Accept a narrowing or neutral change: it becomes the approved state.
pub fn accept(store: &Store, change: &Change, source: &str) -> Result<Outcome, SettingsError> {
    store.set_approved(&change.path, &change.after)?;
    Ok(Outcome {
        change: change.clone(),
        held: None,
        displaced: Vec::new(),
        action: Action::Accepted,
        source: source.into(),
    })
}

/// Compare two snapshots and carry out every decision under the store lock: widening changes
/// are held and reverted to `before`, the rest accepted. A file below a folder link that was
/// reverted is put back to `before` as well. For agent-shell after each command.
pub fn enforce(
    store: &Store,
    before: &Snapshot,
    after: &Snapshot,
    rules: &Rules,
    source: &str,
) -> Result<Vec<Outcome>, SettingsError> {
    let _lock = store.lock()?;
    let mut out = Vec::new();
    let mut reverted_links: Vec<String> = Vec::new();
    for c in compare(before, after, rules) {
        let under_link = reverted_links
            .iter()
            .any(|l| c.rel.starts_with(&format!("{l}/")));
        if c.verdict.is_held() {
            let o = hold_and_revert(store, &c, rules, source)?;
            if let Content::Link { at, .. } = &c.after {
                reverted_links.push(at.clone());
            }
            out.push(o);
        } else if under_link {
            put_back(store, &c, &c.before, rules, source)?;
            out.push(Outcome {
                change: c,
                held: None,
                displaced: Vec::new(),
                action: Action::Restored,
                source: source.into(),
            });
        } else {
            out.push(accept(store, &c, source)?);
        }
    }
    drop(_lock);
    // Writers still in the inodes the reverts swapped out: what they write is held too.
    let late = tail::settle(store, rules, source, watch::QUIET_MAX)?;
    if !late.is_empty() {
        if let Some(o) = out.iter_mut().find(|o| o.action == Action::Held) {
            o.displaced.extend(late);
        }
    }
    // The command's holds are durable, and nothing of ours is left beside the files, before
    // agent-shell goes on.
    store.flush()?;
    Ok(out)
}

/// Finish reverts a crash interrupted: each of our temporary files left in `snap` is either the
/// approved content that was about to be swapped in (removed) or content displaced from a
/// guarded file (held, then removed). Nothing is deleted before it is stored.
pub fn recover(
    store: &Store,
    snap: &Snapshot,
    rules: &Rules,
    source: &str,
) -> Result<Vec<HeldWrite>, SettingsError> {
    let root = open_root(&snap.root)?;
    let mut held = Vec::new();
    for rel in &snap.leftovers {
        let (dir_rel, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        let Some(target) = nofollow::tmp_target(name) else {
            continue;
        };
        let target_rel = join(dir_rel, target);
        let Parent::Dir(dir, _) =
            nofollow::parent(&root, rel).map_err(io_err(snap.root.join(rel), "walk"))?
        else {
            continue;
        };
        let x = nofollow::read_at(&dir, name, rel).map_err(io_err(snap.root.join(rel), "read"))?;
        let approved = store.approved(&snap.root.join(&target_rel))?;
        let ours = approved.as_ref().is_some_and(|a| a.same_as(&x));
        if !ours && matches!(x, Content::File { .. } | Content::Link { .. }) {
            let rule = rules
                .lookup(&target_rel)
                .map(|r| r.name.clone())
                .unwrap_or_else(|| "-".into());
            let before = approved.clone().unwrap_or(Content::Absent);
            let (h, _) = store.hold(NewHeld {
                meta: NewHeldMeta {
                    root: snap.root.clone(),
                    rel: target_rel.clone(),
                    diff: text_diff(&before, &x),
                    replaced: before,
                    rule,
                    verdict: Verdict::Widens.as_str().into(),
                    reasons: vec!["found in a temporary file after an interrupted revert".into()],
                    blocked: vec![],
                    source: source.into(),
                },
                proposed: x.clone(),
            })?;
            held.push(h);
        }
        if nofollow::is_oversized(&x) {
            // Too large for a record: held, and streamed into the store whole.
            if let Some(f) = nofollow::open_file(&dir, name) {
                let x =
                    nofollow::read_file(&f, rel).map_err(io_err(snap.root.join(rel), "read"))?;
                let before = approved.clone().unwrap_or(Content::Absent);
                let rule = rules
                    .lookup(&target_rel)
                    .map(|r| r.name.clone())
                    .unwrap_or_else(|| "-".into());
                let (h, _) = store.hold(NewHeld {
                    meta: NewHeldMeta {
                        root: snap.root.clone(),
                        rel: target_rel.clone(),
                        diff: text_diff(&before, &x),
                        replaced: before,
                        rule,
                        verdict: Verdict::Widens.as_str().into(),
                        reasons: vec![
                            "found in a temporary file after an interrupted revert".into()
                        ],
                        blocked: vec![],
                        source: source.into(),
                    },
                    proposed: x,
                })?;
                tail::keep_whole(store, &h.id, &f, &snap.root.join(rel))?;
                held.push(h);
                nofollow::remove(&dir, name)
                    .map_err(io_err(snap.root.join(rel), "remove leftover"))?;
            }
        } else if !matches!(x, Content::Other { .. }) {
            nofollow::remove(&dir, name).map_err(io_err(snap.root.join(rel), "remove leftover"))?;
        }
    }
    Ok(held)
}

#[cfg(test)]
mod tests;
