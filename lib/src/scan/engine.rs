//! The walk and the diffs behind [`super::scan`].
//!
//! Shape: the calling thread computes the new refs and rewrites, then walks the new commits
//! (breadth first, streaming: only ids and the walk's seen-set are held) and sends them in
//! small batches over a bounded channel to `Limits::threads` workers. Each worker owns a
//! thread-local repository handle with an object cache, a commit → tree memo (cleared when
//! it grows past a bound) and its own tree-diff state; it diffs a commit against each parent
//! with a visitor that applies the name rules inline and keeps only the few entries whose
//! contents a rule must read. Nothing grows with the size of the push except the walk's set
//! of seen commit ids, and the walk is itself bounded by `Limits::max_commits`.

use super::rules::{self, r};
use super::snapshot::{RefSnapshot, RefValue};
use super::{
    escape_path, open_repo, Finding, Limits, Rewrite, RewriteKind, ScanError, ScanReport, Stats,
};
use crate::catalogue::{self, PathMatch};
use gix::bstr::{BStr, BString, ByteSlice};
use gix::diff::tree::{visit, Visit};
use gix::objs::tree::EntryKind;
use gix::objs::{FindExt, TreeRefIter};
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
/// Entries kept in a worker's commit → tree memo before it is cleared.
const MEMO_MAX: usize = 1 << 16;
/// Decoded-object cache per worker.
const OBJECT_CACHE_BYTES: usize = 4 << 20;
/// Decoded-object cache of the commit walk: holds the commits of a range of ~50,000 commits
/// between gix's two reads of each (commits only; the workers have their own caches).
const WALK_OBJECT_CACHE_BYTES: usize = 16 << 20;
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
    findings: Mutex<Vec<Finding>>,
    commits: AtomicU64,
    diffs: AtomicU64,
    paths: AtomicU64,
    blobs: AtomicU64,
    blob_bytes: AtomicU64,
    /// Tree-relative folders (no trailing slash) that `core.hooksPath` names.
    hooks_dirs: Vec<Vec<u8>>,
    show_signature: bool,
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

    fn add(&self, rule_id: &'static str, commit: &gix::oid, path: String, why: String) {
        let rule = r(rule_id);
        let mut g = self.findings.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() >= self.limits.max_findings {
            drop(g);
            self.halt(format!(
                "finding limit of {} reached",
                self.limits.max_findings
            ));
            return;
        }
        g.push(Finding {
            rule_id: rule_id.to_string(),
            severity: rule.severity,
            commit: commit.to_string(),
            path,
            why,
        });
    }
}

/// One unit of work for a worker.
enum Job {
    /// A commit with its tree and parents.
    Commit {
        id: ObjectId,
        tree: ObjectId,
        parents: Vec<ObjectId>,
    },
    /// A tree named directly by a ref (through tags): scanned whole, labelled by `label`.
    Tree { label: ObjectId, tree: ObjectId },
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
    let (hooks_dirs, show_signature) = config_facts(&repo);
    let ctx = Ctx {
        limits: limits.clone(),
        deadline: started + Duration::from_secs(limits.max_seconds),
        stop: AtomicBool::new(false),
        incomplete: Mutex::new(None),
        findings: Mutex::new(Vec::new()),
        commits: AtomicU64::new(0),
        diffs: AtomicU64::new(0),
        paths: AtomicU64::new(0),
        blobs: AtomicU64::new(0),
        blob_bytes: AtomicU64::new(0),
        hooks_dirs,
        show_signature,
    };

    let (tips, trees, hidden) = tips_and_hidden(&repo, snapshot, &now, &ctx);

    let threads = limits.threads.max(1);
    let new_commits = if ctx.stopped() {
        NewCommits::default()
    } else {
        walk_and_diff(&repo, tips, trees, hidden, &ctx, threads)
    };
    let rewritten = refs_phase(&repo, snapshot, &now, &new_commits, &ctx);

    let mut findings = ctx.findings.into_inner().unwrap_or_else(|e| e.into_inner());
    findings.sort();
    findings.dedup();
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
        },
    })
}

/// `core.hooksPath` folders inside the work tree, and whether any config file turns on
/// `log.showSignature`. Every value of every file counts (a superset of the effective one).
fn config_facts(repo: &gix::Repository) -> (Vec<Vec<u8>>, bool) {
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
    (dirs, show)
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

/// The parents of every commit the scan walked: reachable from the refs now and not from the
/// snapshot. A ref that moved forward over new commits reaches its old tip through them, so
/// most ancestry questions are answered here without walking the history a second time.
#[derive(Default)]
struct NewCommits(HashMap<ObjectId, Box<[ObjectId]>>);

impl NewCommits {
    /// Does a path of new commits lead from `new` to its ancestor `old`? `false` means "not
    /// through new commits alone" (the path may pass through a commit another snapshot ref
    /// already had): ask [`is_ancestor`] then.
    fn reaches(&self, new: ObjectId, old: ObjectId) -> bool {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([new]);
        while let Some(id) = queue.pop_front() {
            let Some(parents) = self.0.get(&id) else {
                continue;
            };
            for p in parents.iter() {
                if *p == old {
                    return true;
                }
                if seen.insert(*p) {
                    queue.push_back(*p);
                }
            }
        }
        false
    }
}

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
                &id,
                name.clone(),
                format!("{name} now replaces an object with {id}"),
            );
        }
        if ctx.show_signature {
            if let Ok(obj) = repo.find_object(id) {
                if obj.kind == gix::object::Kind::Tag && tag_is_signed(&obj.data) {
                    ctx.add(
                        "GW-SCAN-081",
                        &id,
                        name.clone(),
                        "signed tag while log.showSignature is on".into(),
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

/// Commit tips now, trees named directly by refs, and the snapshot's commits to hide.
fn tips_and_hidden(
    repo: &gix::Repository,
    snapshot: &RefSnapshot,
    now: &RefSnapshot,
    ctx: &Ctx,
) -> (Vec<ObjectId>, Vec<ObjectId>, Vec<ObjectId>) {
    let mut tips = BTreeSet::new();
    let mut trees = BTreeSet::new();
    let mut hidden = BTreeSet::new();
    // Many refs name the same object (200 worktree HEADs on one commit): peel each object
    // once. Same answers as peeling every ref, since objects do not change during the run.
    let mut memo: HashMap<ObjectId, Result<Peeled, String>> = HashMap::new();
    let mut peeled = |id: ObjectId| memo.entry(id).or_insert_with(|| peel(repo, id)).clone();
    for v in snapshot.refs.values() {
        if let Some(id) = id_of(v) {
            // A snapshot tip that is gone (pruned) hides nothing: more gets scanned.
            if let Ok(Peeled::Commit(c)) = peeled(id) {
                hidden.insert(c);
            }
        }
    }
    let old_ids: HashSet<ObjectId> = snapshot.refs.values().filter_map(id_of).collect();
    for (name, v) in &now.refs {
        let Some(id) = id_of(v) else { continue };
        match peeled(id) {
            Ok(Peeled::Commit(c)) => {
                if !hidden.contains(&c) {
                    tips.insert(c);
                }
            }
            Ok(Peeled::Tree(t)) => {
                if !old_ids.contains(&id) {
                    trees.insert(t);
                }
            }
            Ok(Peeled::Other) => {}
            Err(e) => ctx.halt(format!("{name}: cannot read {id}: {e}")),
        }
    }
    (
        tips.into_iter().collect(),
        trees.into_iter().collect(),
        hidden.into_iter().collect(),
    )
}

fn walk_and_diff(
    repo: &gix::Repository,
    tips: Vec<ObjectId>,
    trees: Vec<ObjectId>,
    hidden: Vec<ObjectId>,
    ctx: &Ctx,
    threads: usize,
) -> NewCommits {
    let mut graph = NewCommits::default();
    let ts = repo.clone().into_sync();
    let (tx, rx) = mpsc::sync_channel::<Vec<Job>>(threads * 4);
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let ts = &ts;
            let rx = &rx;
            s.spawn(move || {
                let mut repo = ts.to_thread_local();
                repo.object_cache_size(OBJECT_CACHE_BYTES);
                let mut w = Worker::new(&repo, ctx);
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
            .map(|t| Job::Tree { label: t, tree: t })
            .collect();
        if !batch.is_empty() && !send(batch) {
            return;
        }
        if tips.is_empty() {
            drop(tx);
            return;
        }
        // gix reads every commit of the range twice: once to find where the hidden history
        // begins, once to hand it out. An object cache on the walk's own handle makes the
        // second read a hit (callgrind, 10,000 commits: the walk 951 M → 361 M instructions).
        let mut walk_repo = repo.clone();
        walk_repo.object_cache_size(WALK_OBJECT_CACHE_BYTES);
        let walk = gix::traverse::commit::Simple::new(tips, &walk_repo.objects)
            .commit_graph(None)
            .hide(hidden);
        let mut walk = match walk {
            Ok(w) => w,
            Err(e) => {
                ctx.halt(format!("cannot start the commit walk: {e}"));
                drop(tx);
                return;
            }
        };
        let hash = repo.object_hash();
        let mut batch = Vec::new();
        let mut n: u64 = 0;
        loop {
            if ctx.stopped() {
                break;
            }
            let info = match walk.next() {
                None => break,
                Some(Ok(info)) => info,
                Some(Err(e)) => {
                    ctx.halt(format!("commit walk failed: {e}"));
                    break;
                }
            };
            n += 1;
            if n > ctx.limits.max_commits {
                ctx.halt(format!(
                    "commit limit of {} reached",
                    ctx.limits.max_commits
                ));
                break;
            }
            let data = walk.commit_data();
            let commit = match gix::objs::CommitRef::from_bytes(data, hash) {
                Ok(c) => c,
                Err(e) => {
                    ctx.halt(format!("commit {} cannot be parsed: {e}", info.id));
                    break;
                }
            };
            if ctx.show_signature {
                if let Some((h, _)) = commit.extra_headers.iter().find(|(k, _)| {
                    catalogue::SIGNATURE_HEADERS
                        .iter()
                        .any(|s| k.as_bytes() == s.as_bytes())
                }) {
                    ctx.add(
                        "GW-SCAN-081",
                        &info.id,
                        String::new(),
                        format!("commit carries a {h} header while log.showSignature is on"),
                    );
                }
            }
            let parents: Vec<ObjectId> = info.parent_ids.iter().copied().collect();
            graph.0.insert(info.id, parents.as_slice().into());
            batch.push(Job::Commit {
                id: info.id,
                tree: commit.tree(),
                parents,
            });
            if batch.len() == CHUNK && !send_oldest_first(&mut batch) {
                break;
            }
        }
        if !batch.is_empty() {
            send_oldest_first(&mut batch);
        }
        ctx.commits
            .store(n.min(ctx.limits.max_commits), Ordering::Relaxed);
        drop(tx);
    });
    graph
}

/// A blob whose contents a rule reads after the diff.
struct Deferred {
    what: Content,
    path: BString,
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
    ctx: &'r Ctx,
    state: gix::diff::tree::State,
    memo: HashMap<ObjectId, ObjectId>,
    cbuf: Vec<u8>,
    buf1: Vec<u8>,
    buf2: Vec<u8>,
    blob: Vec<u8>,
    settings_memo: SettingsMemo,
}

/// Paths already matched against the settings rules (paths repeat across commits, and glob
/// matching is most of the per-path cost). Cleared when it grows past [`MEMO_MAX`].
type SettingsMemo = HashMap<BString, Option<&'static crate::settings::FileRule>>;

impl<'r> Worker<'r> {
    fn new(repo: &'r gix::Repository, ctx: &'r Ctx) -> Self {
        Worker {
            repo,
            ctx,
            state: Default::default(),
            memo: HashMap::new(),
            cbuf: Vec::new(),
            buf1: Vec::new(),
            buf2: Vec::new(),
            blob: Vec::new(),
            settings_memo: HashMap::new(),
        }
    }

    fn tree_of(&mut self, commit: &ObjectId) -> Result<ObjectId, String> {
        if let Some(t) = self.memo.get(commit) {
            return Ok(*t);
        }
        let t = self
            .repo
            .objects
            .find_commit_iter(commit, &mut self.cbuf)
            .map_err(|e| e.to_string())?
            .tree_id()
            .map_err(|e| e.to_string())?;
        self.remember(*commit, t);
        Ok(t)
    }

    fn remember(&mut self, commit: ObjectId, tree: ObjectId) {
        if self.memo.len() >= MEMO_MAX {
            self.memo.clear();
        }
        self.memo.insert(commit, tree);
    }

    fn job(&mut self, job: Job) {
        let (label, tree, parents) = match job {
            Job::Commit { id, tree, parents } => {
                self.remember(id, tree);
                (id, tree, parents)
            }
            Job::Tree { label, tree } => (label, tree, Vec::new()),
        };
        let mut seen: HashSet<(&'static str, String)> = HashSet::new();
        let olds: Vec<Option<ObjectId>> = if parents.is_empty() {
            vec![None]
        } else {
            let mut v = Vec::with_capacity(parents.len());
            for p in &parents {
                match self.tree_of(p) {
                    Ok(t) => v.push(Some(t)),
                    Err(e) => {
                        self.ctx
                            .halt(format!("parent {p} of {label} cannot be read: {e}"));
                        return;
                    }
                }
            }
            v
        };
        for old in olds {
            if old == Some(tree) {
                continue;
            }
            if let Err(e) = self.diff(label, old, tree, &mut seen) {
                self.ctx.halt(e);
                return;
            }
        }
    }

    fn diff(
        &mut self,
        label: ObjectId,
        old: Option<ObjectId>,
        new: ObjectId,
        seen: &mut HashSet<(&'static str, String)>,
    ) -> Result<(), String> {
        self.ctx.diffs.fetch_add(1, Ordering::Relaxed);
        let hash = self.repo.object_hash();
        let new_iter = self
            .repo
            .objects
            .find_tree_iter(&new, &mut self.buf1)
            .map_err(|e| format!("tree {new} of {label} cannot be read: {e}"))?;
        let old_iter = match old {
            Some(t) => self
                .repo
                .objects
                .find_tree_iter(&t, &mut self.buf2)
                .map_err(|e| format!("tree {t} cannot be read: {e}"))?,
            None => TreeRefIter::from_bytes(&[], hash),
        };
        if self.settings_memo.len() >= MEMO_MAX {
            self.settings_memo.clear();
        }
        let mut v = Visitor::new(self.ctx, &mut self.settings_memo);
        match gix::diff::tree(
            old_iter,
            new_iter,
            &mut self.state,
            &self.repo.objects,
            &mut v,
        ) {
            Ok(()) => {}
            Err(gix::diff::tree::Error::Cancelled) => return Ok(()),
            Err(e) => return Err(format!("diff of {label} failed: {e}")),
        }
        let mut emit = |id: &'static str, path: &[u8], why: String| {
            let p = escape_path(path);
            if seen.insert((id, p.clone())) {
                self.ctx.add(id, &label, p, why);
            }
        };
        for (id, path, why) in v.hits.drain(..) {
            emit(id, &path, why);
        }
        // Contents.
        for d in std::mem::take(&mut v.deferred) {
            let cap = match d.what {
                Content::Link => MAX_LINK_TARGET,
                _ => self.ctx.limits.max_blob_bytes,
            };
            if d.what == Content::Attributes {
                if let Ok(h) = self.repo.find_header(d.oid) {
                    if h.size() > rules::ATTR_MAX_FILE_SIZE {
                        emit(
                            "GW-SCAN-005",
                            &d.path,
                            format!("{} bytes (git's limit is 100 MiB)", h.size()),
                        );
                        continue;
                    }
                }
            }
            let bytes = match read_blob(self.repo, self.ctx, d.oid, cap, &d.path, &mut self.blob) {
                Some(b) => b,
                None => return Ok(()),
            };
            match d.what {
                Content::Attributes => {
                    for (id, why) in rules::check_attributes(bytes) {
                        emit(id, &d.path, why);
                    }
                }
                Content::Modules => {
                    for (id, why) in rules::check_gitmodules(bytes) {
                        emit(id, &d.path, why);
                    }
                }
                Content::Link => {
                    if let Some((id, why)) = rules::symlink_problem(&d.path, bytes) {
                        let why = format!("{why}: {}", escape_path(bytes));
                        emit(id, &d.path, why);
                    }
                }
            }
        }
        // Folders shaped like a git dir.
        let mut dirs: Vec<BString> = std::mem::take(&mut v.candidates);
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let tree_id = if dir.is_empty() {
                Some(new)
            } else {
                v.trees.iter().find(|(p, _)| *p == dir).map(|(_, id)| *id)
            };
            let Some(tree_id) = tree_id else { continue };
            let (mut head, mut objects, mut refs, mut config) = (false, false, false, None);
            let iter = self
                .repo
                .objects
                .find_tree_iter(&tree_id, &mut self.buf2)
                .map_err(|e| format!("tree {tree_id} cannot be read: {e}"))?;
            for e in iter {
                let e = e.map_err(|e| format!("tree {tree_id} cannot be parsed: {e}"))?;
                match (e.filename.as_bytes(), e.mode.is_tree()) {
                    (b"HEAD", false) => head = true,
                    (b"objects", true) => objects = true,
                    (b"refs", true) => refs = true,
                    (b"config", false) if e.mode.is_blob() => config = Some(e.oid.to_owned()),
                    _ => {}
                }
            }
            let shown = if dir.is_empty() {
                BString::from(".")
            } else {
                dir.clone()
            };
            if head && objects && refs {
                emit(
                    "GW-SCAN-040",
                    &shown,
                    "folder holds HEAD, objects/ and refs/".into(),
                );
            }
            if let Some(cfg) = config {
                let mut p = dir.clone();
                if !p.is_empty() {
                    p.push(b'/');
                }
                p.extend_from_slice(b"config");
                let cap = self.ctx.limits.max_blob_bytes;
                let Some(bytes) = read_blob(self.repo, self.ctx, cfg, cap, &p, &mut self.blob)
                else {
                    return Ok(());
                };
                if rules::has_core_section(bytes) {
                    emit("GW-SCAN-041", &p, "has a [core] section".into());
                }
            }
        }
        Ok(())
    }
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
    hits: Vec<(&'static str, BString, String)>,
    deferred: Vec<Deferred>,
    /// Changed folders (path, tree id), for the git-dir shape check.
    trees: Vec<(BString, ObjectId)>,
    /// Folders in which HEAD, objects, refs or config changed.
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
        self.hits.push((id, path.clone(), why));
    }

    fn check(&mut self, mode: gix::objs::tree::EntryMode, oid: &gix::oid) {
        // Borrow the current path without copying it; it is put back below.
        let path = std::mem::take(&mut self.path);
        self.check_path(&path, mode, oid);
        self.path = path;
    }

    fn check_path(&mut self, path: &BString, mode: gix::objs::tree::EntryMode, oid: &gix::oid) {
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
        if matches!(name, b"HEAD" | b"objects" | b"refs" | b"config") {
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
                oid: oid.to_owned(),
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
                    oid: oid.to_owned(),
                });
            }
        }
        // Hooks.
        for hd in &self.ctx.hooks_dirs {
            let under = hd.is_empty()
                || (path.len() > hd.len() && path.starts_with(hd) && path[hd.len()] == b'/');
            if under {
                self.hits.push((
                    "GW-SCAN-050",
                    path.clone(),
                    format!("under core.hooksPath {:?}", escape_path(hd)),
                ));
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
            }
            | visit::Change::Modification {
                entry_mode, oid, ..
            } => self.check(entry_mode, &oid),
        }
        std::ops::ControlFlow::Continue(())
    }
}
