//! The walk and the diffs behind [`super::scan`].
//!
//! Shape: the calling thread computes the new refs and rewrites, then finds the new commits
//! ([`super::walk`]: git's date-ordered `A..B` walk, each commit read once, its tree and
//! parents kept) and sends them in batches over a bounded channel to `Limits::threads`
//! workers, each job with its parents' trees. Each worker owns a thread-local repository
//! handle, a [`PackReader`] over the packs all threads share (its own delta-base cache) and
//! its own tree-diff state; it diffs a commit against its first parent ([`super::treediff`])
//! with a visitor that applies the name rules inline and keeps only the few entries whose
//! contents a rule must read.
//!
//! Memory: the caches (every worker's delta-base and object cache, the walk's delta-base
//! cache) share `Limits::max_cache_bytes` ([`CacheShares`]), whatever the thread count. They
//! fill as the diffs read trees — on a history of small trees ≈ 6 decoded trees a commit, the
//! "≈ 2.8 KB a commit" once measured as growth — and stop at their share. What grows with
//! the push past that is the walk's record of each commit (bounded by `Limits::max_commits`)
//! and the findings (bounded by `Limits::max_findings`); docs/perf-scan.md, "Scaling".

use super::packs::{PackReader, Packs};
use super::rules::{self, r};
use super::snapshot::{RefSnapshot, RefValue};
use super::walk::Walk;
use super::{
    escape_path, open_repo, Finding, Limits, Rewrite, RewriteKind, ScanError, ScanReport, Stats,
};
use crate::catalogue::{self, DriverKind, PathMatch, Severity};
use gix::bstr::{BStr, BString, ByteSlice};
use gix::diff::tree::{visit, Visit};
use gix::objs::tree::EntryKind;
use gix::objs::FindExt;
use gix::ObjectId;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// Commits sent to a worker at once.
const BATCH: usize = 64;
/// Commits the walk hands over at once, diffed oldest first. gix caches the tree it was asked
/// for but not the delta bases it resolved on the way, so the order of requests decides how
/// long the delta chains it walks are. Measured (docs/perf-scan.md): oldest first took a
/// third of the CPU time on packs with git's default depth 50 (10,000 and 100,000 commits)
/// and 1.4× more on a depth-10 pack. A chunk costs about 100 bytes per commit.
const CHUNK: usize = 16_384;
/// Entries kept in a worker's path → settings-rule memo before it is cleared.
const MEMO_MAX: usize = 1 << 16;
/// Decoded-object cache per worker (blobs; at most an eighth of its share of
/// `Limits::max_cache_bytes`).
const OBJECT_CACHE_BYTES: usize = 4 << 20;
/// Delta-base cache of the commit walk (commits are rarely deltas; their bases are other
/// commits), at most an eighth of `Limits::max_cache_bytes`.
const WALK_CACHE_BYTES: usize = 16 << 20;

/// How `Limits::max_cache_bytes` is shared: the walk's delta-base cache, then per worker its
/// object cache and its tree reads' delta-base cache ([`PackReader`]). With the defaults (216
/// MiB, two workers): 16 MiB, then 4 + 96 MiB each, git's `core.deltaBaseCacheLimit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CacheShares {
    walk: usize,
    object: usize,
    delta_base: usize,
}

impl CacheShares {
    fn of(limits: &Limits) -> Self {
        let total = usize::try_from(limits.max_cache_bytes).unwrap_or(usize::MAX);
        let walk = WALK_CACHE_BYTES.min(total / 8);
        let per_worker = (total - walk) / limits.threads.max(1);
        let object = OBJECT_CACHE_BYTES.min(per_worker / 8);
        CacheShares {
            walk,
            object,
            delta_base: per_worker - object,
        }
    }
}
/// Longest symbolic-link target read (PATH_MAX).
const MAX_LINK_TARGET: u64 = 4096;
/// Tag chains followed at most this deep.
const MAX_TAG_DEPTH: usize = 32;

/// Shared state of one scan.
struct Ctx {
    limits: Limits,
    deadline: Instant,
    stop: AtomicBool,
    incomplete: Mutex<Option<String>>,
    findings: Mutex<Collector>,
    commits: AtomicU64,
    diffs: AtomicU64,
    paths: AtomicU64,
    blobs: AtomicU64,
    blob_bytes: AtomicU64,
    /// Tree-relative folders (no trailing slash) that `core.hooksPath` names.
    hooks_dirs: Vec<Vec<u8>>,
    show_signature: bool,
    /// Drivers for which some config file git would read sets a program
    /// (`filter.<name>.clean`, `diff.<name>.textconv`, …; [`DriverKind::program_keys`]).
    drivers: HashSet<(DriverKind, BString)>,
}

/// What a hit is reported under: one finding per (rule, severity, path), and for error-level
/// hits per offending content too, so that every distinct armed version stays visible.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    rule: &'static str,
    severity: Severity,
    path: String,
    content: Option<ObjectId>,
}

/// The commits behind one finding. `seq` is the commit's place in the walk (1 = the newest
/// tip; refs and trees named by refs are 0), so "first" and "last" do not depend on which
/// worker saw a commit first.
#[derive(Debug, Clone)]
struct Agg {
    /// Oldest commit: the largest (seq, id).
    first: (u64, ObjectId),
    /// Newest commit: the smallest (seq, id); `why` is this commit's.
    last: (u64, ObjectId),
    why: String,
    commits: u64,
    contents: HashSet<ObjectId>,
}

impl Agg {
    fn new(seq: u64, commit: ObjectId, why: String, content: Option<ObjectId>) -> Self {
        Agg {
            first: (seq, commit),
            last: (seq, commit),
            why,
            commits: 1,
            contents: content.into_iter().collect(),
        }
    }

    fn add(&mut self, seq: u64, commit: ObjectId, why: String, content: Option<ObjectId>) {
        self.commits += 1;
        if (seq, commit) > self.first {
            self.first = (seq, commit);
        }
        if (seq, commit) < self.last {
            self.last = (seq, commit);
            self.why = why;
        }
        if let Some(c) = content {
            self.contents.insert(c);
        }
    }
}

/// Findings, aggregated. Past `Limits::max_findings` distinct findings, further ones are
/// folded into one summary per (rule, severity): the scan stays complete.
#[derive(Default)]
struct Collector {
    map: HashMap<Key, Agg>,
    /// Per (rule, severity): hits past the cap (one per commit and path) and their commits.
    overflow: HashMap<(&'static str, Severity), (u64, Agg)>,
}

impl Collector {
    fn into_findings(self, cap: usize) -> Vec<Finding> {
        let mut out: Vec<Finding> = self
            .map
            .into_iter()
            .map(|(k, a)| Finding {
                rule_id: k.rule.to_string(),
                severity: k.severity,
                commit: a.first.1.to_string(),
                path: k.path,
                why: a.why,
                last_commit: a.last.1.to_string(),
                commits: a.commits,
                contents: a.contents.len() as u64,
                summarised: 0,
            })
            .collect();
        for ((rule, severity), (hits, a)) in self.overflow {
            out.push(Finding {
                rule_id: rule.to_string(),
                severity,
                commit: a.first.1.to_string(),
                path: String::new(),
                why: format!(
                    "{hits} more hits of this rule past the cap of {cap} findings, summarised (newest: {})",
                    a.why
                ),
                last_commit: a.last.1.to_string(),
                commits: a.commits,
                contents: a.contents.len() as u64,
                summarised: hits,
            });
        }
        out.sort();
        out
    }
}

impl Ctx {
    fn halt(&self, why: String) {
        let mut g = self.incomplete.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(why);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopped(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return true;
        }
        if Instant::now() > self.deadline {
            self.halt(format!(
                "time limit of {} s reached",
                self.limits.max_seconds
            ));
            return true;
        }
        false
    }

    /// Record one hit: `rule_id` at `path` in the commit `commit` (walk position `seq`),
    /// with the rule's severity unless `severity` lowers it (a driver no config defines).
    /// `content` is the object at the path (the offending version).
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        rule_id: &'static str,
        severity: Option<Severity>,
        seq: u64,
        commit: &gix::oid,
        path: String,
        why: String,
        content: Option<ObjectId>,
    ) {
        let severity = severity.unwrap_or(r(rule_id).severity);
        let key = Key {
            rule: rule_id,
            severity,
            path,
            content: if severity == Severity::Error {
                content
            } else {
                None
            },
        };
        let commit = commit.to_owned();
        let mut g = self.findings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = g.map.get_mut(&key) {
            a.add(seq, commit, why, content);
        } else if g.map.len() < self.limits.max_findings {
            g.map.insert(key, Agg::new(seq, commit, why, content));
        } else {
            match g.overflow.entry((rule_id, severity)) {
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    let (hits, a) = o.get_mut();
                    *hits += 1;
                    a.add(seq, commit, why, content);
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert((1, Agg::new(seq, commit, why, content)));
                }
            }
        }
    }
}

/// One unit of work for a worker.
enum Job {
    /// A commit with its tree and its parents' trees; `seq` is its place in the walk
    /// (1 = newest).
    Commit {
        id: ObjectId,
        seq: u64,
        tree: ObjectId,
        parent_trees: Vec<ObjectId>,
    },
    /// A tree named directly by a ref (through tags): scanned whole, labelled by `label`;
    /// one only a reflog or root ref names (`AUTO_MERGE`) is diffed against `base`, the
    /// tree of its git dir's `HEAD` (a ref, so scanned or known), when there is one.
    Tree {
        label: ObjectId,
        tree: ObjectId,
        base: Option<ObjectId>,
    },
}

/// What a ref's object peels to.
#[derive(Clone)]
enum Peeled {
    Commit(ObjectId),
    Tree(ObjectId),
    Other,
}

pub(super) fn run(
    repo_git_dir: &Path,
    snapshot: &RefSnapshot,
    limits: &Limits,
) -> Result<ScanReport, ScanError> {
    let started = Instant::now();
    if snapshot.format != super::SNAPSHOT_FORMAT {
        return Err(ScanError::Snapshot(format!(
            "format {} (this build reads format {})",
            snapshot.format,
            super::SNAPSHOT_FORMAT
        )));
    }
    let repo = open_repo(repo_git_dir)?;
    if snapshot.object_hash != repo.object_hash().to_string() {
        return Err(ScanError::ObjectFormat {
            snapshot: snapshot.object_hash.clone(),
            repo: repo.object_hash().to_string(),
        });
    }
    let now = RefSnapshot::take_from(&repo)?;
    let (hooks_dirs, show_signature, drivers) = config_facts(&repo);
    let ctx = Ctx {
        limits: limits.clone(),
        deadline: started + Duration::from_secs(limits.max_seconds),
        stop: AtomicBool::new(false),
        incomplete: Mutex::new(None),
        findings: Mutex::new(Collector::default()),
        commits: AtomicU64::new(0),
        diffs: AtomicU64::new(0),
        paths: AtomicU64::new(0),
        blobs: AtomicU64::new(0),
        blob_bytes: AtomicU64::new(0),
        hooks_dirs,
        show_signature,
        drivers,
    };

    // Every id a reflog names is a tip too (`reflogs`); one that cannot all be read stops
    // the scan (incomplete).
    let reflog =
        match super::reflogs::read(repo.common_dir(), repo.object_hash(), &|| ctx.stopped()) {
            Ok(r) => r,
            Err(why) => {
                if !why.is_empty() {
                    ctx.halt(format!("cannot read the reflogs: {why}"));
                }
                Default::default()
            }
        };
    let (tips, trees, hidden) = tips_and_hidden(&repo, snapshot, &now, &reflog, &ctx);

    let threads = limits.threads.max(1);
    let new_commits = if ctx.stopped() {
        NewCommits::default()
    } else {
        walk_and_diff(&repo, tips, trees, hidden, &ctx, threads)
    };
    let rewritten = refs_phase(&repo, snapshot, &now, &new_commits, &ctx);
    let refs_as_snapshot = now.refs == snapshot.refs
        && now
            .refs
            .values()
            .all(|v| v.symbolic.as_deref().is_none_or(|t| t.starts_with("refs/")));

    let findings = ctx
        .findings
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_findings(limits.max_findings);
    Ok(ScanReport {
        findings,
        rewritten,
        incomplete: ctx
            .incomplete
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
        stats: Stats {
            refs_snapshot: snapshot.refs.len(),
            refs_now: now.refs.len(),
            commits: ctx.commits.into_inner(),
            diffs: ctx.diffs.into_inner(),
            paths: ctx.paths.into_inner(),
            blobs_read: ctx.blobs.into_inner(),
            blob_bytes: ctx.blob_bytes.into_inner(),
            elapsed_ms: started.elapsed().as_millis() as u64,
            threads,
            refs_as_snapshot,
        },
    })
}

/// `core.hooksPath` folders inside the work tree, whether any config file turns on
/// `log.showSignature`, and the drivers some config file gives a program. Every value of
/// every file counts (a superset of the effective one).
fn config_facts(repo: &gix::Repository) -> (Vec<Vec<u8>>, bool, HashSet<(DriverKind, BString)>) {
    let snap = repo.config_snapshot();
    let file = snap.plumbing();
    let workdir = repo.workdir().map(gix::path::realpath).and_then(Result::ok);
    let mut dirs = Vec::new();
    let hooks_path = crate::catalogue::loader::HOOKS_PATH.display();
    for v in file.strings(hooks_path.as_str()).unwrap_or_default() {
        let v = v.to_vec();
        let rel: Option<Vec<u8>> = if v.first() == Some(&b'/') {
            let p = gix::path::from_bstr(v.as_bstr()).map(|p| p.into_owned());
            match (&workdir, p.map(|p| gix::path::realpath(&p))) {
                (Some(w), Ok(Ok(p))) => p
                    .strip_prefix(w)
                    .ok()
                    .and_then(|r| gix::path::into_bstr(r).ok().map(|b| b.to_vec())),
                _ => None,
            }
        } else if v.first() == Some(&b'~') {
            None
        } else {
            Some(v)
        };
        if let Some(rel) = rel.and_then(|r: Vec<u8>| normalise(&r)) {
            dirs.push(rel);
        }
    }
    let truthy = |v: &[u8]| {
        let v = v.trim_ascii().to_ascii_lowercase();
        v.is_empty() || matches!(v.as_slice(), b"true" | b"yes" | b"on" | b"1")
    };
    let show = file
        .strings(crate::catalogue::loader::SHOW_SIGNATURE.display().as_str())
        .unwrap_or_default()
        .iter()
        .any(|v| truthy(v));
    let mut drivers = HashSet::new();
    for section in file.sections() {
        // The header as git reads it: gix takes `[diff.A "b"]` for the section `diff.A` and
        // keeps `[diff.A]`'s `A`, where git reads the driver `a.b` and `a`. Its bytes (gix
        // writes them back as they were) are read again with git's grammar.
        let mut header = section.header().to_bstring().to_vec();
        header.push(b'\n');
        let raw = crate::config::parse_bytes(&header, crate::config::Dialect::Any);
        let Some((sec, Some(name), _)) = raw.sections.first() else {
            continue;
        };
        let Some(kind) = DriverKind::ALL.into_iter().find(|k| k.name() == sec) else {
            continue;
        };
        // An empty value runs nothing (git skips an empty command): it is how a driver
        // is disarmed.
        let armed = kind
            .program_keys()
            .any(|k| section.values(k).iter().any(|v| !v.trim_ascii().is_empty()));
        if armed {
            drivers.insert((kind, name.clone()));
        }
    }
    (dirs, show, drivers)
}

/// Lexically normalise a tree-relative folder: drop `.` and empty components, apply `..`.
/// `None` if it climbs out of the tree; `Some(empty)` for the top.
fn normalise(p: &[u8]) -> Option<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in p.split(|c| *c == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join(&b'/'))
}

fn id_of(v: &RefValue) -> Option<ObjectId> {
    v.id.as_deref()
        .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok())
}

/// The tree of the commit `c`, if it can be read.
fn commit_tree(repo: &gix::Repository, c: ObjectId) -> Option<ObjectId> {
    repo.find_object(c)
        .ok()?
        .try_into_commit()
        .ok()?
        .tree_id()
        .ok()
        .map(|t| t.detach())
}

/// Follow tags to the end.
fn peel(repo: &gix::Repository, id: ObjectId) -> Result<Peeled, String> {
    let mut id = id;
    for _ in 0..MAX_TAG_DEPTH {
        let obj = repo.find_object(id).map_err(|e| e.to_string())?;
        match obj.kind {
            gix::object::Kind::Commit => return Ok(Peeled::Commit(id)),
            gix::object::Kind::Tree => return Ok(Peeled::Tree(id)),
            gix::object::Kind::Blob => return Ok(Peeled::Other),
            gix::object::Kind::Tag => {
                id = obj
                    .try_into_tag()
                    .map_err(|e| e.to_string())?
                    .target_id()
                    .map_err(|e| e.to_string())?
                    .detach();
            }
        }
    }
    Err(format!("tag chain deeper than {MAX_TAG_DEPTH}"))
}

/// The commits the scan walked, with the parents of every new one (reachable from the refs
/// now and not from the snapshot). A ref that moved forward over new commits reaches its old
/// tip through them, so most ancestry questions are answered by [`Walk::reaches`] without
/// walking the history a second time; [`is_ancestor`] answers the rest.
type NewCommits = Walk;

/// Is `old` reachable from `new`? Walks from `old` hiding `new`: nothing left means yes.
fn is_ancestor(repo: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<bool, String> {
    let mut walk = gix::traverse::commit::Simple::new([old], &repo.objects)
        .commit_graph(None)
        .hide([new])
        .map_err(|e| e.to_string())?;
    match walk.next() {
        None => Ok(true),
        Some(Ok(_)) => Ok(false),
        Some(Err(e)) => Err(e.to_string()),
    }
}

/// Rewrites, new replace refs, signed new tags.
fn refs_phase(
    repo: &gix::Repository,
    snapshot: &RefSnapshot,
    now: &RefSnapshot,
    new_commits: &NewCommits,
    ctx: &Ctx,
) -> Vec<Rewrite> {
    let mut out = Vec::new();
    for (name, old) in &snapshot.refs {
        // HEADs move on every checkout and symbolic refs follow their branch: their
        // commits are scanned, their moves are not rewrites.
        if old.symbolic.is_some() || name == "HEAD" || name.ends_with("/HEAD") {
            continue;
        }
        let Some(old_id) = id_of(old) else { continue };
        let Some(new) = now.refs.get(name) else {
            out.push(Rewrite {
                ref_name: name.clone(),
                kind: RewriteKind::Deleted,
                old: old_id.to_string(),
                new: None,
            });
            continue;
        };
        let Some(new_id) = id_of(new) else {
            out.push(Rewrite {
                ref_name: name.clone(),
                kind: RewriteKind::Deleted,
                old: old_id.to_string(),
                new: None,
            });
            continue;
        };
        if new_id == old_id {
            continue;
        }
        let kind = match (peel(repo, old_id), peel(repo, new_id)) {
            (Ok(Peeled::Commit(a)), Ok(Peeled::Commit(b))) => {
                if a == b || new_commits.reaches(b, a) {
                    None
                } else {
                    match is_ancestor(repo, a, b) {
                        Ok(true) => None,
                        Ok(false) => Some(RewriteKind::NotFastForward),
                        Err(e) => {
                            ctx.halt(format!("cannot tell whether {name} moved forward: {e}"));
                            None
                        }
                    }
                }
            }
            // The old object is gone (pruned): its history cannot be shown to survive.
            (Err(_), _) => Some(RewriteKind::NotFastForward),
            (_, Err(e)) => {
                ctx.halt(format!("{name}: cannot read {new_id}: {e}"));
                None
            }
            (Ok(Peeled::Tree(a)), Ok(Peeled::Tree(b))) if a == b => None,
            _ => Some(RewriteKind::Retargeted),
        };
        if let Some(kind) = kind {
            out.push(Rewrite {
                ref_name: name.clone(),
                kind,
                old: old_id.to_string(),
                new: Some(new_id.to_string()),
            });
        }
    }

    for (name, v) in &now.refs {
        let changed = snapshot.refs.get(name) != Some(v);
        if !changed {
            continue;
        }
        let Some(id) = id_of(v) else { continue };
        if name.starts_with("refs/replace/") {
            ctx.add(
                "GW-SCAN-080",
                None,
                0,
                &id,
                name.clone(),
                format!("{name} now replaces an object with {id}"),
                Some(id),
            );
        }
        if ctx.show_signature {
            if let Ok(obj) = repo.find_object(id) {
                if obj.kind == gix::object::Kind::Tag && tag_is_signed(&obj.data) {
                    ctx.add(
                        "GW-SCAN-081",
                        None,
                        0,
                        &id,
                        name.clone(),
                        "signed tag while log.showSignature is on".into(),
                        None,
                    );
                }
            }
        }
    }
    out
}

fn tag_is_signed(data: &[u8]) -> bool {
    data.lines().any(|l| {
        catalogue::TAG_SIGNATURE_MARKERS
            .iter()
            .any(|m| l == m.as_bytes())
            || catalogue::SIGNATURE_HEADERS
                .iter()
                .any(|h| l.starts_with(h.as_bytes()) && l.get(h.len()) == Some(&b' '))
    })
}

/// A tree to scan and the tree to diff it against (`None`: scanned whole); see [`Job::Tree`].
type TreeJob = (ObjectId, Option<ObjectId>);

/// The walk's tips: the refs' first (`of_refs` of them), then the reflogs' others.
#[derive(Default)]
struct Tips {
    ids: Vec<ObjectId>,
    of_refs: usize,
}

/// Commit tips now (of the refs and of the ids the reflogs name that the pin did not know),
/// trees named directly by refs or reflogs, and the snapshot's commits to hide.
fn tips_and_hidden(
    repo: &gix::Repository,
    snapshot: &RefSnapshot,
    now: &RefSnapshot,
    reflog: &super::reflogs::Places,
    ctx: &Ctx,
) -> (Tips, Vec<TreeJob>, Vec<ObjectId>) {
    let mut candidates = BTreeSet::new();
    let mut of_reflogs = BTreeSet::new();
    let mut trees = BTreeSet::new();
    let mut hidden = BTreeSet::new();
    // Many refs name the same object (200 worktree HEADs on one commit): peel each object
    // once. Same answers as peeling every ref, since objects do not change during the run.
    let mut memo: HashMap<ObjectId, Result<Peeled, String>> = HashMap::new();
    let mut peeled = |id: ObjectId| memo.entry(id).or_insert_with(|| peel(repo, id)).clone();
    let old_ids: HashSet<ObjectId> = snapshot.refs.values().filter_map(id_of).collect();
    for (name, v) in &now.refs {
        let Some(id) = id_of(v) else { continue };
        // An object a snapshot ref named peels as it did then (objects do not change): a
        // commit it reaches is hidden, a tree was there already. Nothing of it is new, so
        // it is not peeled again (1,000 tags of git.git cost 100 M instructions of
        // inflating); that it is still there is checked.
        if old_ids.contains(&id) {
            if !repo.has_object(id) {
                ctx.halt(format!("{name}: cannot read {id}: object not found"));
            }
            continue;
        }
        match peeled(id) {
            Ok(Peeled::Commit(c)) => {
                candidates.insert(c);
            }
            Ok(Peeled::Tree(t)) => {
                trees.insert((t, None));
            }
            Ok(Peeled::Other) => {}
            Err(e) => ctx.halt(format!("{name}: cannot read {id}: {e}")),
        }
    }
    // The reflogs' ids: one the pin knew (a ref's, or a reflog's whose object was there) is
    // not walked from; one whose object was missing at the pin and still is names nothing
    // git could use; any other missing one stops the scan (it may appear later, and the next
    // pin would take it for known). The rest are peeled as a ref's object is.
    if !reflog.is_empty() {
        let known = super::snapshot::ReflogIds::holds;
        for id in reflog.ids.keys() {
            if old_ids.contains(id) || known(&snapshot.reflogs.present, id) {
                continue;
            }
            if !repo.has_object(id) {
                if !known(&snapshot.reflogs.missing, id) {
                    let place = reflog.place(id);
                    ctx.halt(format!("{place}: cannot read {id}: object not found"));
                }
                continue;
            }
            match peeled(*id) {
                Ok(Peeled::Commit(c)) => {
                    if !candidates.contains(&c) {
                        of_reflogs.insert(c);
                    }
                }
                Ok(Peeled::Tree(t)) => {
                    // Diffed against its git dir's HEAD tree: an honest `AUTO_MERGE` is that
                    // tree and the stash's changes, and the rest of it is known.
                    let head = match reflog.git_dir_of(id) {
                        Some(wt) => format!("worktrees/{wt}/HEAD"),
                        None => format!("{}HEAD", super::MAIN_WORKTREE),
                    };
                    let base = now
                        .refs
                        .get(&head)
                        .and_then(id_of)
                        .and_then(|h| match peeled(h) {
                            Ok(Peeled::Commit(c)) => commit_tree(repo, c),
                            _ => None,
                        });
                    trees.insert((t, base));
                }
                Ok(Peeled::Other) => {}
                Err(e) => {
                    let place = reflog.place(id);
                    ctx.halt(format!("{place}: cannot read {id}: {e}"))
                }
            }
        }
    }
    // Nothing new to walk: the snapshot's commits need not be peeled to hide them.
    if candidates.is_empty() && of_reflogs.is_empty() && trees.is_empty() {
        return (Tips::default(), Vec::new(), Vec::new());
    }
    for v in snapshot.refs.values() {
        if let Some(id) = id_of(v) {
            // A snapshot tip that is gone (pruned) hides nothing: more gets scanned.
            if let Ok(Peeled::Commit(c)) = peeled(id) {
                hidden.insert(c);
            }
        }
    }
    let mut ids: Vec<ObjectId> = candidates
        .into_iter()
        .filter(|c| !hidden.contains(c))
        .collect();
    let of_refs = ids.len();
    ids.extend(of_reflogs.into_iter().filter(|c| !hidden.contains(c)));
    (
        Tips { ids, of_refs },
        trees.into_iter().collect(),
        hidden.into_iter().collect(),
    )
}

fn walk_and_diff(
    repo: &gix::Repository,
    tips: Tips,
    trees: Vec<TreeJob>,
    hidden: Vec<ObjectId>,
    ctx: &Ctx,
    threads: usize,
) -> NewCommits {
    let mut graph = NewCommits::default();
    // No ref names a new commit or tree (no ref moved): nothing to walk or diff, and the
    // packs need not be opened (git.git's pack index alone is 4.7 M instructions to open).
    if tips.ids.is_empty() && trees.is_empty() {
        return graph;
    }
    let ts = repo.clone().into_sync();
    // Each pack mapped once for every reader: a mapping per thread counted its resident
    // pages once per thread.
    let packs = &Packs::open(&repo.common_dir().join("objects"), repo.object_hash());
    let shares = CacheShares::of(&ctx.limits);
    let (tx, rx) = mpsc::sync_channel::<Vec<Job>>(threads * 4);
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let ts = &ts;
            let rx = &rx;
            s.spawn(move || {
                let mut repo = ts.to_thread_local();
                repo.object_cache_size(shares.object);
                let mut w = Worker::new(&repo, packs, ctx, shares.delta_base);
                loop {
                    let batch = {
                        let g = rx.lock().unwrap_or_else(|e| e.into_inner());
                        g.recv()
                    };
                    let Ok(batch) = batch else { break };
                    for job in batch {
                        if ctx.stopped() {
                            break;
                        }
                        w.job(job);
                    }
                }
            });
        }

        let send = |batch: Vec<Job>| tx.send(batch).is_ok();
        // The walk yields newest first; a chunk is diffed oldest first (see CHUNK).
        let send_oldest_first = |chunk: &mut Vec<Job>| {
            let mut chunk = std::mem::take(chunk);
            chunk.reverse();
            // One contiguous run per worker keeps each worker's caches on neighbouring
            // commits.
            let per = chunk.len().div_ceil(threads).max(BATCH);
            let mut it = chunk.into_iter().peekable();
            while it.peek().is_some() {
                if !send(it.by_ref().take(per).collect()) {
                    return false;
                }
            }
            true
        };
        let batch: Vec<Job> = trees
            .into_iter()
            .map(|(t, base)| Job::Tree {
                label: t,
                tree: t,
                base,
            })
            .collect();
        if !batch.is_empty() && !send(batch) {
            return;
        }
        if tips.ids.is_empty() {
            drop(tx);
            return;
        }
        let stopped = || ctx.stopped();
        // Commits are read through a delta-base cache too: a few are deltas of others.
        let commits = PackReader::new(packs, &repo.objects, shares.walk);
        let (walk, cut) = super::walk::new_commits(
            &commits,
            repo.object_hash(),
            &tips.ids,
            tips.of_refs,
            &hidden,
            ctx.show_signature,
            &ctx.limits,
            &stopped,
        );
        // A walk cut short makes the report incomplete (exit 2, never clean), and the halt
        // stops the scan here: none of the commits it popped is diffed (some may be hidden
        // commits not yet marked). An empty reason: `stopped` said so and the halt is
        // recorded.
        if let Some(why) = cut.filter(|w| !w.is_empty()) {
            ctx.halt(why);
        }
        let mut batch = Vec::new();
        let mut n: u64 = 0;
        for &i in &walk.new {
            if ctx.stopped() {
                break;
            }
            n += 1;
            let node = &walk.nodes[i as usize];
            if let Some(h) = walk.signature(i) {
                ctx.add(
                    "GW-SCAN-081",
                    None,
                    n,
                    &node.id,
                    String::new(),
                    format!("commit carries a {h} header while log.showSignature is on"),
                    None,
                );
            }
            batch.push(Job::Commit {
                id: node.id,
                seq: n,
                tree: node.tree,
                parent_trees: walk.parents(i).iter().map(|&p| walk.tree(p)).collect(),
            });
            if batch.len() == CHUNK && !send_oldest_first(&mut batch) {
                break;
            }
        }
        if !batch.is_empty() {
            send_oldest_first(&mut batch);
        }
        ctx.commits.store(n, Ordering::Relaxed);
        drop(tx);
        graph = walk;
    });
    graph
}

/// A blob whose contents a rule reads after the diff.
struct Deferred {
    what: Content,
    path: BString,
    kind: EntryKind,
    oid: ObjectId,
    /// The blob at the path in the first parent, for a changed file.
    prev: Option<ObjectId>,
}

/// A name rule's hit, with the entry it is about.
struct Hit {
    rule: &'static str,
    path: BString,
    why: String,
    kind: EntryKind,
    oid: ObjectId,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    Attributes,
    Modules,
    Link,
}

/// Per-thread diff worker.
struct Worker<'r> {
    repo: &'r gix::Repository,
    /// Trees are read through this (git's delta-base cache); blobs and commits through `repo`.
    trees: PackReader<'r>,
    ctx: &'r Ctx,
    state: super::treediff::State,
    buf2: Vec<u8>,
    /// Tree reads of path look-ups in a merge's other parents.
    buf3: Vec<u8>,
    blob: Vec<u8>,
    settings_memo: SettingsMemo,
}

/// Paths already matched against the settings rules (paths repeat across commits, and glob
/// matching is most of the per-path cost). Cleared when it grows past [`MEMO_MAX`].
type SettingsMemo = HashMap<BString, Option<&'static crate::settings::FileRule>>;

impl<'r> Worker<'r> {
    fn new(repo: &'r gix::Repository, packs: &'r Packs, ctx: &'r Ctx, cache: usize) -> Self {
        Worker {
            repo,
            trees: PackReader::new(packs, &repo.objects, cache),
            ctx,
            state: Default::default(),
            buf2: Vec::new(),
            buf3: Vec::new(),
            blob: Vec::new(),
            settings_memo: HashMap::new(),
        }
    }

    fn job(&mut self, job: Job) {
        let (label, seq, tree, parent_trees) = match job {
            Job::Commit {
                id,
                seq,
                tree,
                parent_trees,
            } => (id, seq, tree, parent_trees),
            Job::Tree { label, tree, base } => (label, 0, tree, base.into_iter().collect()),
        };
        // git's combined-diff rule (`diff -c`): a merge changes a path only where its content
        // differs from every parent. A tree equal to a parent's differs nowhere; otherwise
        // the diff against the first parent finds the candidates and each hit is kept only
        // if no other parent has the same entry. What a parent brought in is scanned with
        // that parent's own commits (or was there at the pin).
        if parent_trees.contains(&tree) {
            return;
        }
        let (first, others) = match parent_trees.split_first() {
            Some((f, rest)) => (Some(*f), rest.to_vec()),
            None => (None, Vec::new()),
        };
        if let Err(e) = self.diff(label, seq, first, &others, tree) {
            self.ctx.halt(e);
        }
    }

    /// The entry at `path` (slash-separated, tree-relative) in `tree`, if any.
    fn entry_at(
        &mut self,
        tree: ObjectId,
        path: &[u8],
    ) -> Result<Option<(EntryKind, ObjectId)>, String> {
        let mut cur = tree;
        let mut comps = path.split(|c| *c == b'/').peekable();
        while let Some(name) = comps.next() {
            let iter = self
                .trees
                .find_tree_iter(&cur, &mut self.buf3)
                .map_err(|e| format!("tree {cur} cannot be read: {e}"))?;
            let mut found = None;
            for e in iter {
                let e = e.map_err(|e| format!("tree {cur} cannot be parsed: {e}"))?;
                if e.filename.as_bytes() == name {
                    found = Some((e.mode.kind(), e.oid.to_owned()));
                    break;
                }
            }
            match found {
                None => return Ok(None),
                Some(hit) if comps.peek().is_none() => return Ok(Some(hit)),
                Some((EntryKind::Tree, id)) => cur = id,
                Some(_) => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Does some tree of `others` (a merge's other parents) hold exactly this entry at
    /// `path`? Then the merge took it from that parent and it is not the merge's own.
    fn in_other_parent(
        &mut self,
        others: &[ObjectId],
        path: &[u8],
        kind: EntryKind,
        oid: ObjectId,
    ) -> Result<bool, String> {
        for t in others {
            if self.entry_at(*t, path)? == Some((kind, oid)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Diff `new` against `old` (the first parent's tree; `None`: the empty tree) and report
    /// what the rules flag, except what one of `others` (a merge's other parents' trees)
    /// holds unchanged.
    fn diff(
        &mut self,
        label: ObjectId,
        seq: u64,
        old: Option<ObjectId>,
        others: &[ObjectId],
        new: ObjectId,
    ) -> Result<(), String> {
        self.ctx.diffs.fetch_add(1, Ordering::Relaxed);
        let hash = self.repo.object_hash();
        if self.settings_memo.len() >= MEMO_MAX {
            self.settings_memo.clear();
        }
        let mut v = Visitor::new(self.ctx, &mut self.settings_memo);
        match super::treediff::diff(&self.trees, hash, old, new, &mut self.state, &mut v) {
            Ok(()) => {}
            Err(super::treediff::Stop::Cancelled) => return Ok(()),
            Err(super::treediff::Stop::Error(e)) => {
                return Err(format!("diff of {label} failed: {e}"))
            }
        }
        let Visitor {
            hits,
            deferred,
            trees,
            candidates,
            ..
        } = v;
        let ctx = self.ctx;
        let mut seen: HashSet<(&'static str, Option<Severity>, BString)> = HashSet::new();
        let mut emit = |id: &'static str,
                        sev: Option<Severity>,
                        path: &[u8],
                        why: String,
                        content: Option<ObjectId>| {
            if seen.insert((id, sev, path.into())) {
                ctx.add(id, sev, seq, &label, escape_path(path), why, content);
            }
        };
        for h in hits {
            if !others.is_empty() && self.in_other_parent(others, &h.path, h.kind, h.oid)? {
                continue;
            }
            emit(h.rule, None, &h.path, h.why, Some(h.oid));
        }
        // Contents.
        for d in deferred {
            let kind = match d.what {
                Content::Link => EntryKind::Link,
                _ => d.kind,
            };
            if !others.is_empty() && self.in_other_parent(others, &d.path, kind, d.oid)? {
                continue;
            }
            let cap = match d.what {
                Content::Link => MAX_LINK_TARGET,
                _ => self.ctx.limits.max_blob_bytes,
            };
            if d.what == Content::Attributes {
                if let Ok(h) = self.repo.find_header(d.oid) {
                    if h.size() > rules::ATTR_MAX_FILE_SIZE {
                        emit(
                            "GW-SCAN-005",
                            None,
                            &d.path,
                            format!("{} bytes (git's limit is 100 MiB)", h.size()),
                            Some(d.oid),
                        );
                        continue;
                    }
                }
            }
            match d.what {
                Content::Attributes => {
                    // The file in each parent: only its changed lines are judged.
                    let mut olds: Vec<Vec<u8>> = Vec::new();
                    let mut old_ids: Vec<ObjectId> = d.prev.into_iter().collect();
                    for t in others {
                        if let Some((EntryKind::Blob | EntryKind::BlobExecutable, id)) =
                            self.entry_at(*t, &d.path)?
                        {
                            old_ids.push(id);
                        }
                    }
                    old_ids.sort();
                    old_ids.dedup();
                    for id in old_ids {
                        match read_blob(self.repo, self.ctx, id, cap, &d.path, &mut self.blob) {
                            Some(b) => olds.push(b.to_vec()),
                            None => return Ok(()),
                        }
                    }
                    let Some(bytes) =
                        read_blob(self.repo, self.ctx, d.oid, cap, &d.path, &mut self.blob)
                    else {
                        return Ok(());
                    };
                    let old_refs: Vec<&[u8]> = olds.iter().map(Vec::as_slice).collect();
                    for hit in rules::check_attributes(bytes, &old_refs) {
                        let (sev, why) = match &hit.driver {
                            Some((kind, name)) => driver_severity(ctx, *kind, name, hit.why),
                            None => (None, hit.why),
                        };
                        emit(hit.rule, sev, &d.path, why, Some(d.oid));
                    }
                }
                Content::Modules => {
                    let Some(bytes) =
                        read_blob(self.repo, self.ctx, d.oid, cap, &d.path, &mut self.blob)
                    else {
                        return Ok(());
                    };
                    for (id, why) in rules::check_gitmodules(bytes) {
                        emit(id, None, &d.path, why, Some(d.oid));
                    }
                }
                Content::Link => {
                    let Some(bytes) =
                        read_blob(self.repo, self.ctx, d.oid, cap, &d.path, &mut self.blob)
                    else {
                        return Ok(());
                    };
                    if let Some((id, why)) = rules::symlink_problem(&d.path, bytes) {
                        let why = format!("{why}: {}", escape_path(bytes));
                        emit(id, None, &d.path, why, Some(d.oid));
                    }
                }
            }
        }
        // Folders shaped like a git dir.
        let mut dirs: Vec<BString> = candidates;
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let tree_id = if dir.is_empty() {
                Some(new)
            } else {
                trees.iter().find(|(p, _)| *p == dir).map(|(_, id)| *id)
            };
            let Some(tree_id) = tree_id else { continue };
            if !dir.is_empty()
                && !others.is_empty()
                && self.in_other_parent(others, &dir, EntryKind::Tree, tree_id)?
            {
                continue;
            }
            // git setup.c `is_git_directory`: a HEAD `validate_headref` accepts, and
            // `access(X_OK)` on `<common dir>/objects` and `<common dir>/refs`, where a
            // `commondir` file moves the common dir anywhere. An executable file, a link or
            // a gitlink (an empty folder) passes `access` as well as a folder does, and so
            // does a plain file where the checkout has no mode bits: any type counts.
            let mut head = None;
            let (mut objects, mut refs, mut commondir) = (false, false, false);
            let mut configs: Vec<(&'static str, EntryKind, ObjectId)> = Vec::new();
            let iter = self
                .trees
                .find_tree_iter(&tree_id, &mut self.buf2)
                .map_err(|e| format!("tree {tree_id} cannot be read: {e}"))?;
            for e in iter {
                let e = e.map_err(|e| format!("tree {tree_id} cannot be parsed: {e}"))?;
                let kind = e.mode.kind();
                match e.filename.as_bytes() {
                    b"HEAD" => head = Some((kind, e.oid.to_owned())),
                    b"objects" => objects = true,
                    b"refs" => refs = true,
                    b"commondir" => commondir = true,
                    b"config" if e.mode.is_blob() => configs.push(("config", kind, e.oid.into())),
                    b"config.worktree" if e.mode.is_blob() => {
                        configs.push(("config.worktree", kind, e.oid.into()))
                    }
                    _ => {}
                }
            }
            let shown = if dir.is_empty() {
                BString::from(".")
            } else {
                dir.clone()
            };
            let at = |name: &str| {
                let mut p = dir.clone();
                if !p.is_empty() {
                    p.push(b'/');
                }
                p.extend_from_slice(name.as_bytes());
                p
            };
            if let Some((kind, oid)) = head.filter(|_| (objects && refs) || commondir) {
                let link = kind == EntryKind::Link;
                let valid = match kind {
                    EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                        let cap = if link {
                            MAX_LINK_TARGET
                        } else {
                            self.ctx.limits.max_blob_bytes
                        };
                        let p = at("HEAD");
                        let Some(bytes) =
                            read_blob(self.repo, self.ctx, oid, cap, &p, &mut self.blob)
                        else {
                            return Ok(());
                        };
                        rules::head_is_valid(link, bytes)
                    }
                    // A folder or a gitlink: git cannot read it as HEAD.
                    EntryKind::Tree | EntryKind::Commit => false,
                };
                if valid {
                    let what = if objects && refs && commondir {
                        "HEAD git accepts, objects, refs and commondir"
                    } else if commondir {
                        "HEAD git accepts and commondir (objects and refs are looked up where it points)"
                    } else {
                        "HEAD git accepts, objects and refs"
                    };
                    emit(
                        "GW-SCAN-040",
                        None,
                        &shown,
                        format!("folder holds a {what}: git's discovery takes it for a git dir"),
                        Some(tree_id),
                    );
                }
            }
            for (name, kind, cfg) in configs {
                let p = at(name);
                if !others.is_empty() && self.in_other_parent(others, &p, kind, cfg)? {
                    continue;
                }
                let cap = self.ctx.limits.max_blob_bytes;
                let Some(bytes) = read_blob(self.repo, self.ctx, cfg, cap, &p, &mut self.blob)
                else {
                    return Ok(());
                };
                let keys = rules::config_file_keys(bytes);
                if let Some(first) = keys.first() {
                    let more = match keys.len() {
                        1 => String::new(),
                        n => format!(" and {} more", n - 1),
                    };
                    emit(
                        "GW-SCAN-041",
                        None,
                        &p,
                        format!("git's config reader finds {first}{more}"),
                        Some(cfg),
                    );
                }
            }
        }
        Ok(())
    }
}

/// The severity of a hit that selects a driver: the rule's own if some config file git would
/// read gives the driver a program, else a note (git's built-in drivers and undefined names
/// run nothing; a later config change would arm them, which the config checks watch).
fn driver_severity(
    ctx: &Ctx,
    kind: DriverKind,
    name: &[u8],
    why: String,
) -> (Option<Severity>, String) {
    if ctx.drivers.contains(&(kind, BString::from(name))) {
        return (None, format!("{why} (a config file defines its program)"));
    }
    let k = kind.name();
    let n = escape_path(name);
    let builtin = std::str::from_utf8(name)
        .ok()
        .is_some_and(|n| kind.builtin_names().contains(&n));
    let why = if builtin {
        format!("{why} (git's built-in {k} driver; no config file gives {k}.{n} a program)")
    } else {
        format!("{why} (no config file defines a program for {k}.{n})")
    };
    (Some(Severity::Note), why)
}

/// Read a blob for a content rule, within the per-blob and total bounds. `None` means the
/// scan was halted (and says why).
fn read_blob<'b>(
    repo: &gix::Repository,
    ctx: &Ctx,
    oid: ObjectId,
    cap: u64,
    path: &[u8],
    buf: &'b mut Vec<u8>,
) -> Option<&'b [u8]> {
    let size = match repo.find_header(oid) {
        Ok(h) => h.size(),
        Err(e) => {
            ctx.halt(format!(
                "blob {oid} at {} cannot be read: {e}",
                escape_path(path)
            ));
            return None;
        }
    };
    if size > cap {
        ctx.halt(format!(
            "{} ({oid}) is {size} bytes, more than the {cap} bytes a content rule reads",
            escape_path(path)
        ));
        return None;
    }
    let total = ctx.blob_bytes.fetch_add(size, Ordering::Relaxed) + size;
    if total > ctx.limits.max_total_blob_bytes {
        ctx.halt(format!(
            "blob byte limit of {} reached",
            ctx.limits.max_total_blob_bytes
        ));
        return None;
    }
    ctx.blobs.fetch_add(1, Ordering::Relaxed);
    match repo.objects.find_blob(&oid, buf) {
        Ok(b) => Some(b.data),
        Err(e) => {
            ctx.halt(format!(
                "blob {oid} at {} cannot be read: {e}",
                escape_path(path)
            ));
            None
        }
    }
}

/// The tree-diff delegate: tracks paths like gix's `Recorder`, applies name rules inline,
/// and keeps only entries whose contents must be read.
struct Visitor<'c> {
    ctx: &'c Ctx,
    settings_memo: &'c mut SettingsMemo,
    path: BString,
    path_deque: VecDeque<BString>,
    hits: Vec<Hit>,
    deferred: Vec<Deferred>,
    /// The entry being checked.
    cur: (EntryKind, ObjectId),
    /// Changed folders (path, tree id), for the git-dir shape check.
    trees: Vec<(BString, ObjectId)>,
    /// Folders in which an entry git's discovery looks at (HEAD, objects, refs, commondir,
    /// config) changed.
    candidates: Vec<BString>,
}

impl<'c> Visitor<'c> {
    fn new(ctx: &'c Ctx, settings_memo: &'c mut SettingsMemo) -> Self {
        Visitor {
            ctx,
            settings_memo,
            path: BString::default(),
            path_deque: VecDeque::new(),
            hits: Vec::new(),
            deferred: Vec::new(),
            cur: (EntryKind::Blob, ObjectId::null(gix::hash::Kind::Sha1)),
            trees: Vec::new(),
            candidates: Vec::new(),
        }
    }

    fn push_element(&mut self, name: &BStr) {
        if name.is_empty() {
            return;
        }
        if !self.path.is_empty() {
            self.path.push(b'/');
        }
        self.path.extend_from_slice(name);
    }

    fn pop_element(&mut self) {
        match self.path.rfind_byte(b'/') {
            Some(pos) => self.path.truncate(pos),
            None => self.path.clear(),
        }
    }

    fn hit_at(&mut self, path: &BString, id: &'static str, why: String) {
        self.hits.push(Hit {
            rule: id,
            path: path.clone(),
            why,
            kind: self.cur.0,
            oid: self.cur.1,
        });
    }

    fn check(&mut self, mode: gix::objs::tree::EntryMode, oid: &gix::oid, prev: Option<ObjectId>) {
        // Borrow the current path without copying it; it is put back below.
        let path = std::mem::take(&mut self.path);
        self.check_path(&path, mode, oid, prev);
        self.path = path;
    }

    fn check_path(
        &mut self,
        path: &BString,
        mode: gix::objs::tree::EntryMode,
        oid: &gix::oid,
        prev: Option<ObjectId>,
    ) {
        self.cur = (mode.kind(), oid.to_owned());
        let (parent, name) = match path.rfind_byte(b'/') {
            Some(p) => (&path[..p], &path[p + 1..]),
            None => (&b""[..], &path[..]),
        };
        if rules::is_dotgit_like(name) {
            self.hit_at(
                path,
                "GW-SCAN-030",
                format!(
                    "component {:?} is .git on some filesystem",
                    escape_path(name)
                ),
            );
        }
        if let Some(why) = rules::invalid_component(name) {
            self.hit_at(path, "GW-SCAN-031", why.to_string());
        }
        if rules::GIT_DIR_ENTRY_NAMES.contains(&name) {
            self.candidates.push(parent.into());
        }
        let kind = mode.kind();
        if kind == EntryKind::Tree {
            self.trees.push((path.clone(), oid.to_owned()));
            return;
        }
        if kind == EntryKind::Commit {
            return;
        }
        let dotfile = rules::dotfile_of(name);
        if kind == EntryKind::Link {
            if let Some(d) = dotfile {
                self.hit_at(
                    path,
                    "GW-SCAN-015",
                    format!(".{} is a symbolic link", d.name),
                );
            }
            self.deferred.push(Deferred {
                what: Content::Link,
                path: path.clone(),
                kind,
                oid: oid.to_owned(),
                prev: None,
            });
        } else if let Some(d) = dotfile {
            let what = match d.name {
                "gitattributes" => Some(Content::Attributes),
                "gitmodules" => Some(Content::Modules),
                _ => None,
            };
            if let Some(what) = what {
                self.deferred.push(Deferred {
                    what,
                    path: path.clone(),
                    kind,
                    oid: oid.to_owned(),
                    prev,
                });
            }
        }
        // Hooks. git runs a hook only by its exact event name: a `*.sample` never runs.
        if name.ends_with(catalogue::HOOK_SAMPLE_SUFFIX.as_bytes()) {
            self.check_settings_and_ci(path);
            return;
        }
        for hd in &self.ctx.hooks_dirs {
            let under = hd.is_empty()
                || (path.len() > hd.len() && path.starts_with(hd) && path[hd.len()] == b'/');
            if under {
                let why = format!("under core.hooksPath {:?}", escape_path(hd));
                self.hit_at(path, "GW-SCAN-050", why);
                break;
            }
        }
        let in_hook_dir = parent.split(|c| *c == b'/').find(|c| {
            catalogue::HOOK_LIKE_DIRS
                .iter()
                .any(|h| c.eq_ignore_ascii_case(h.as_bytes()))
        });
        if let Some(dir) = in_hook_dir {
            let exec = kind == EntryKind::BlobExecutable;
            let event = std::str::from_utf8(name)
                .ok()
                .is_some_and(|n| catalogue::HOOK_EVENTS.contains(&n));
            if exec || event {
                let why = match (exec, event) {
                    (true, true) => "executable named after a hook event",
                    (true, false) => "executable",
                    _ => "named after a hook event",
                };
                self.hit_at(
                    path,
                    "GW-SCAN-051",
                    format!("{why} in hook-like folder {:?}", escape_path(dir)),
                );
            }
        }
        self.check_settings_and_ci(path);
    }

    fn check_settings_and_ci(&mut self, path: &BString) {
        // Agent and IDE settings: the files settings-watch guards (one list, in settings).
        let guarded = match self.settings_memo.get(path) {
            Some(g) => *g,
            None => {
                let g = std::str::from_utf8(path)
                    .ok()
                    .and_then(crate::settings::guarded_path);
                self.settings_memo.insert(path.clone(), g);
                g
            }
        };
        if let Some(rule) = guarded {
            self.hit_at(
                path,
                "GW-SCAN-060",
                format!("settings file guarded by {} ({})", rule.name, rule.preset),
            );
        }
        // CI.
        for ci in catalogue::CI_PATHS {
            let p = ci.path.as_bytes();
            let m = match ci.how {
                PathMatch::Exact => path.as_bytes() == p,
                PathMatch::Under => {
                    path.len() > p.len() && path.starts_with(p) && path[p.len()] == b'/'
                }
            };
            if m {
                self.hit_at(path, "GW-SCAN-070", format!("{} definition", ci.service));
                break;
            }
        }
    }
}

impl super::treediff::CurrentPath for Visitor<'_> {
    fn path_mut(&mut self) -> &mut BString {
        &mut self.path
    }
}

impl Visit for Visitor<'_> {
    fn pop_front_tracked_path_and_set_current(&mut self) {
        self.path = self.path_deque.pop_front().unwrap_or_default();
    }

    fn push_back_tracked_path_component(&mut self, component: &BStr) {
        self.push_element(component);
        self.path_deque.push_back(self.path.clone());
    }

    fn push_path_component(&mut self, component: &BStr) {
        self.push_element(component);
    }

    fn pop_path_component(&mut self) {
        self.pop_element();
    }

    fn visit(&mut self, change: visit::Change) -> visit::Action {
        let n = self.ctx.paths.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.ctx.limits.max_paths {
            self.ctx.halt(format!(
                "path limit of {} reached",
                self.ctx.limits.max_paths
            ));
            return std::ops::ControlFlow::Break(());
        }
        match change {
            visit::Change::Deletion { .. } => {}
            visit::Change::Addition {
                entry_mode, oid, ..
            } => self.check(entry_mode, &oid, None),
            visit::Change::Modification {
                previous_entry_mode,
                previous_oid,
                entry_mode,
                oid,
            } => {
                let prev = previous_entry_mode.is_blob().then_some(previous_oid);
                self.check(entry_mode, &oid, prev)
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults give each of the two workers git's 96 MiB and the walk 16 MiB; more
    /// threads share the same total, so `max_cache_bytes` bounds the caches whatever the
    /// thread count, and a tiny or zero budget gives tiny or zero caches, never a panic.
    #[test]
    fn cache_shares_stay_within_max_cache_bytes() {
        let d = CacheShares::of(&Limits::default());
        assert_eq!(
            d,
            CacheShares {
                walk: 16 << 20,
                object: 4 << 20,
                delta_base: 96 << 20
            }
        );
        for threads in [0, 1, 2, 3, 8, 64] {
            for total in [0u64, 1, 1000, 24 << 20, 216 << 20, 4 << 30] {
                let l = Limits {
                    threads,
                    max_cache_bytes: total,
                    ..Limits::default()
                };
                let s = CacheShares::of(&l);
                let used = s.walk + threads.max(1) * (s.object + s.delta_base);
                assert!(used as u64 <= total, "{threads} threads, {total}: {s:?}");
            }
        }
    }
}
