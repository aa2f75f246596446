//! The new commits: reachable from the refs now and not from the snapshot's tips.
//!
//! git answers `A..B` with `limit_list` (revision.c): it pops commits newest first by
//! committer date from one queue holding both sides, marks the parents of a hidden commit
//! hidden (and, through commits already popped, their ancestors), and stops once every
//! commit left in the queue is hidden and a few more pops changed nothing (`SLOP`). The walk
//! here is that algorithm. gix's `Simple::hide` instead paints hidden history until no commit
//! in its queue lacks the "both" mark, which on git.git meant reading all 71,560 commits
//! behind a 10,406-commit range, every time.
//!
//! Dates are written by whoever made the commit, so they decide only how much is walked,
//! never what is missed. The hidden mark travels along parent edges from the snapshot's tips
//! alone, so a commit marked hidden is reachable from a snapshot tip. When the walk stops,
//! every commit left in the queue is hidden, and every commit not yet read is reachable from
//! the tips only through the queue, hence hidden too. A skewed date can only leave an old
//! commit unmarked and so scanned again (git shows the same commit in `A..B`): more work,
//! never a new commit unscanned.
//!
//! Each commit is read once and kept in 64 bytes (its id, tree, committer time, flags and
//! where its parents are) plus 24 bytes a parent in two shared arrays and its slot in the id
//! index, so the workers get every parent's tree without reading a commit again. This is
//! the only state that grows with the number of commits walked (bounded by
//! `Limits::max_commits`); per-commit boxes and a second id → parents map (≈ 300 bytes a
//! commit together) were the walk's share before.

use super::packs::PackReader;
use super::Limits;
use crate::catalogue;
use gix::bstr::ByteSlice;
use gix::objs::commit::ref_iter::Token;
use gix::ObjectId;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

/// Hidden commits popped after the last visible one leaves the queue, as git's `SLOP`.
const SLOP: u32 = 5;

/// [`Node::flags`]: marked hidden (reachable from a snapshot tip).
const HIDDEN: u8 = 1;
/// [`Node::flags`]: in the queue.
const QUEUED: u8 = 2;
/// [`Node::flags`]: popped, its parents read.
const POPPED: u8 = 4;
/// [`Node::flags`]: one of [`Walk::new`].
const NEW: u8 = 8;
/// [`Walk::parents`] of a commit not popped: its parents were never read.
const UNREAD: u32 = u32::MAX;

/// One commit the walk read (64 bytes; its parents are in [`Walk`]'s arrays).
pub(super) struct Node {
    pub id: ObjectId,
    pub tree: ObjectId,
    time: i64,
    /// Where this commit's parents start in [`Walk::parent_ids`] and [`Walk::parents`].
    first_parent: u32,
    parent_count: u32,
    flags: u8,
    /// The signature header this commit carries, an index into
    /// [`catalogue::SIGNATURE_HEADERS`] (only looked for with `log.showSignature`).
    signature: Option<u8>,
}

/// The walk's result.
#[derive(Default)]
pub(super) struct Walk {
    pub nodes: Vec<Node>,
    /// Every commit's parents as it lists them, at [`Node::first_parent`].
    parent_ids: Vec<ObjectId>,
    /// The same parents as indices into `nodes`, filled when the commit is popped (its
    /// parents read); [`UNREAD`] before.
    parents: Vec<u32>,
    /// Commit id → index into `nodes`.
    index: HashMap<ObjectId, u32>,
    /// The new commits as indices into `nodes`, in the order of a breadth-first walk from the
    /// tips (gix's `Simple` order: the tips as given, then each commit's parents in order).
    pub new: Vec<u32>,
}

impl Walk {
    fn range(&self, i: u32) -> std::ops::Range<usize> {
        let n = &self.nodes[i as usize];
        let start = n.first_parent as usize;
        start..start + n.parent_count as usize
    }

    /// The parents of commit `i` as it lists them.
    pub fn parent_ids(&self, i: u32) -> &[ObjectId] {
        &self.parent_ids[self.range(i)]
    }

    /// The parents of commit `i` as indices into `nodes` (popped commits only: every new one).
    pub fn parents(&self, i: u32) -> &[u32] {
        &self.parents[self.range(i)]
    }

    /// The tree of `parent` (an index into `nodes`).
    pub fn tree(&self, i: u32) -> ObjectId {
        self.nodes[i as usize].tree
    }

    /// The signature header commit `i` carries (with `log.showSignature` only).
    pub fn signature(&self, i: u32) -> Option<&'static str> {
        let h = self.nodes[i as usize].signature?;
        catalogue::SIGNATURE_HEADERS.get(usize::from(h)).copied()
    }

    /// Does a path of new commits lead from `new` to its ancestor `old`? `false` means "not
    /// through new commits alone" (the path may pass through a commit a snapshot ref already
    /// had): the caller asks git's ancestry then.
    pub fn reaches(&self, new: ObjectId, old: ObjectId) -> bool {
        let is_new = |i: u32| self.nodes[i as usize].flags & NEW != 0;
        let Some(&start) = self.index.get(&new).filter(|&&i| is_new(i)) else {
            return false;
        };
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([start]);
        while let Some(i) = queue.pop_front() {
            for (id, &p) in self.parent_ids(i).iter().zip(self.parents(i)) {
                if *id == old {
                    return true;
                }
                if is_new(p) && seen.insert(p) {
                    queue.push_back(p);
                }
            }
        }
        false
    }
}

struct Walker<'r> {
    objects: &'r PackReader<'r>,
    hash: gix::hash::Kind,
    show_signature: bool,
    w: Walk,
    /// Newest first; equal times in insertion order, as git's date-ordered list.
    queue: BinaryHeap<(i64, std::cmp::Reverse<u64>, u32)>,
    inserted: u64,
    /// Commits in `queue` not marked hidden.
    visible_queued: usize,
}

/// A commit's tree, parents and committer time (seconds).
fn header_fields(
    data: &[u8],
    hash: gix::hash::Kind,
) -> Result<(ObjectId, Vec<ObjectId>, i64), String> {
    let mut tree = None;
    let mut parents = Vec::new();
    for token in gix::objs::CommitRefIter::from_bytes(data, hash) {
        match token.map_err(|e| e.to_string())? {
            Token::Tree { id } => tree = Some(id),
            Token::Parent { id } => parents.push(id),
            Token::Author { .. } => {}
            Token::Committer { signature } => {
                let tree = tree.ok_or("no tree")?;
                return Ok((tree, parents, signature.seconds()));
            }
            _ => break,
        }
    }
    Err("no committer".into())
}

impl Walker<'_> {
    /// The node of `id`, reading the commit the first time.
    fn node(&mut self, id: ObjectId) -> Result<u32, String> {
        if let Some(&i) = self.w.index.get(&id) {
            return Ok(i);
        }
        // The header alone when that is all the walk needs (and it parses); the whole commit
        // otherwise, whose errors are the walk's.
        let from_header = if self.show_signature {
            None
        } else {
            self.objects
                .commit_header(&id)
                .and_then(|h| header_fields(&h, self.hash).ok())
        };
        let mut whole = None;
        let (tree, parent_ids, time) = match from_header {
            Some(fields) => fields,
            None => {
                let data = match self.objects.read(&id) {
                    Ok(Some((gix::objs::Kind::Commit, data))) => data,
                    Ok(Some((kind, _))) => return Err(format!("{id} is a {kind}, not a commit")),
                    Ok(None) => return Err(format!("commit {id} cannot be read: not found")),
                    Err(e) => return Err(format!("commit {id} cannot be read: {e}")),
                };
                let fields = header_fields(&data, self.hash)
                    .map_err(|e| format!("commit {id} cannot be parsed: {e}"))?;
                whole = Some(data);
                fields
            }
        };
        let signature = if let Some(whole) = whole.filter(|_| self.show_signature) {
            let commit = gix::objs::CommitRef::from_bytes(&whole, self.hash)
                .map_err(|e| format!("commit {id} cannot be parsed: {e}"))?;
            commit
                .extra_headers
                .iter()
                .find_map(|(k, _)| {
                    catalogue::SIGNATURE_HEADERS
                        .iter()
                        .position(|s| k.as_bytes() == s.as_bytes())
                })
                .and_then(|h| u8::try_from(h).ok())
        } else {
            None
        };
        let w = &mut self.w;
        let too_many = || "too many commits".to_string();
        let i = u32::try_from(w.nodes.len()).map_err(|_| too_many())?;
        let first_parent = u32::try_from(w.parent_ids.len()).map_err(|_| too_many())?;
        let parent_count = u32::try_from(parent_ids.len()).map_err(|_| too_many())?;
        first_parent
            .checked_add(parent_count)
            .ok_or_else(too_many)?;
        w.parents.extend(parent_ids.iter().map(|_| UNREAD));
        w.parent_ids.extend(parent_ids);
        w.nodes.push(Node {
            id,
            tree,
            time,
            first_parent,
            parent_count,
            flags: 0,
            signature,
        });
        w.index.insert(id, i);
        Ok(i)
    }

    fn enqueue(&mut self, i: u32) {
        let n = &mut self.w.nodes[i as usize];
        if n.flags & (QUEUED | POPPED) != 0 {
            return;
        }
        n.flags |= QUEUED;
        if n.flags & HIDDEN == 0 {
            self.visible_queued += 1;
        }
        self.inserted += 1;
        self.queue
            .push((n.time, std::cmp::Reverse(self.inserted), i));
    }

    /// Mark `i` hidden, and through commits already popped, everything behind it (git's
    /// `mark_parents_uninteresting`).
    fn hide(&mut self, i: u32) {
        let mut stack = vec![i];
        while let Some(i) = stack.pop() {
            let n = &mut self.w.nodes[i as usize];
            if n.flags & HIDDEN != 0 {
                continue;
            }
            n.flags |= HIDDEN;
            if n.flags & QUEUED != 0 {
                self.visible_queued -= 1;
            }
            if n.flags & POPPED != 0 {
                stack.extend_from_slice(self.w.parents(i));
            }
        }
    }
}

/// Walk from `tips` hiding what `hidden` reaches. `stopped` is polled between commits
/// (time limit, a halt elsewhere). A walk cut short (a bound, an unreadable commit, `stopped`)
/// returns the commits popped so far that are not marked hidden, and why it stopped (empty
/// when `stopped` said so); the report is then incomplete. The order of the new commits is
/// breadth first from the first `first_group` tips, then from the rest.
#[allow(clippy::too_many_arguments)]
pub(super) fn new_commits(
    objects: &PackReader<'_>,
    hash: gix::hash::Kind,
    tips: &[ObjectId],
    first_group: usize,
    hidden: &[ObjectId],
    show_signature: bool,
    limits: &Limits,
    stopped: &dyn Fn() -> bool,
) -> (Walk, Option<String>) {
    let mut w = Walker {
        objects,
        hash,
        show_signature,
        w: Walk::default(),
        queue: BinaryHeap::new(),
        inserted: 0,
        visible_queued: 0,
    };
    let mut tip_nodes = Vec::with_capacity(tips.len());
    let cut = paint(&mut w, tips, hidden, limits, stopped, &mut tip_nodes).err();
    // Anything still queued is hidden (see the module comment), so the new commits are the
    // popped, unmarked ones. Their order: breadth first from the tips.
    let mut walk = w.w;
    drop(w.queue);
    let mut new = Vec::new();
    let mut seen = vec![false; walk.nodes.len()];
    let mut next: VecDeque<u32> = VecDeque::new();
    // The first `first_group` tips (the refs') are walked to the end before the others (the
    // reflogs'): a reflog naming a commit a ref reaches does not move it in the order.
    let (first, rest) = tip_nodes.split_at(first_group.min(tip_nodes.len()));
    for group in [first, rest] {
        for &i in group {
            if !seen[i as usize] {
                seen[i as usize] = true;
                next.push_back(i);
            }
        }
        while let Some(i) = next.pop_front() {
            let n = &mut walk.nodes[i as usize];
            if n.flags & HIDDEN != 0 || n.flags & POPPED == 0 {
                continue;
            }
            n.flags |= NEW;
            new.push(i);
            for &p in walk.parents(i) {
                if !seen[p as usize] && walk.nodes[p as usize].flags & HIDDEN == 0 {
                    seen[p as usize] = true;
                    next.push_back(p);
                }
            }
        }
    }
    walk.new = new;
    (walk, cut)
}

/// The date-ordered walk itself: pops until only hidden commits are left (and `SLOP` more).
fn paint(
    w: &mut Walker<'_>,
    tips: &[ObjectId],
    hidden: &[ObjectId],
    limits: &Limits,
    stopped: &dyn Fn() -> bool,
    tip_nodes: &mut Vec<u32>,
) -> Result<(), String> {
    for &t in tips {
        tip_nodes.push(w.node(t)?);
    }
    for &h in hidden {
        let i = w.node(h)?;
        w.hide(i);
        w.enqueue(i);
    }
    for &i in tip_nodes.iter() {
        w.enqueue(i);
    }
    let mut visible_popped: u64 = 0;
    let mut last_visible_time = i64::MAX;
    let mut slop = SLOP;
    while let Some((time, _, i)) = w.queue.pop() {
        if stopped() {
            return Err(String::new());
        }
        let hidden = w.w.nodes[i as usize].flags & HIDDEN != 0;
        if !hidden && visible_popped >= limits.max_commits {
            return Err(format!("commit limit of {} reached", limits.max_commits));
        }
        let range = w.w.range(i);
        for k in range.clone() {
            let p = w.node(w.w.parent_ids[k])?;
            w.w.parents[k] = p;
        }
        // Popped only once its parents are read: a commit cut off here is not scanned (as a
        // root commit it would be diffed against nothing).
        let n = &mut w.w.nodes[i as usize];
        n.flags = (n.flags & !QUEUED) | POPPED;
        if !hidden {
            w.visible_queued -= 1;
            visible_popped += 1;
            last_visible_time = time;
        }
        for k in range {
            let p = w.w.parents[k];
            if hidden {
                w.hide(p);
            }
            w.enqueue(p);
        }
        if hidden {
            // git's `still_interesting`: go on while a visible commit is queued or the queue
            // holds commits as new as the last visible one, then SLOP more.
            let newest = w.queue.peek().map(|(t, _, _)| *t);
            match newest {
                None => break,
                Some(_) if w.visible_queued > 0 => slop = SLOP,
                Some(t) if t >= last_visible_time => slop = SLOP,
                Some(_) => {
                    slop -= 1;
                    if slop == 0 {
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::packs::Packs;
    use std::path::Path;
    use std::process::Command;

    fn git(dir: &Path, date: i64, args: &[&str]) -> String {
        let d = format!("@{date} +0000");
        let out = Command::new("/usr/bin/git")
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@b")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@b")
            .env("GIT_AUTHOR_DATE", &d)
            .env("GIT_COMMITTER_DATE", &d)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn ids(s: &str) -> Vec<ObjectId> {
        s.lines()
            .map(|l| ObjectId::from_hex(l.trim().as_bytes()).unwrap())
            .collect()
    }

    /// A history of topic branches forked from old commits and merged back, the pin in the
    /// middle. `date(i)` is commit i's date: with honest dates the walk finds exactly git's
    /// `pin..main`, in gix's breadth-first order; with dates that lie (new commits older than
    /// the pin, hidden ones in the future) it still finds every commit of `pin..main`.
    #[test]
    fn new_commits_are_gits_range_whatever_the_dates() {
        if !Path::new("/usr/bin/git").exists() {
            assert!(std::env::var_os("CI").is_none(), "CI: no /usr/bin/git");
            eprintln!("skipped: no /usr/bin/git");
            return;
        }
        type DateFn = fn(i64, bool) -> i64;
        let honest: DateFn = |i, _| 1_600_000_000 + i * 60;
        let lying: DateFn = |i, after_pin| {
            if after_pin {
                1_000_000_000 + (i * 7919) % 5000
            } else {
                2_000_000_000 - (i * 104_729) % 100_000
            }
        };
        for (name, date) in [("honest", honest), ("lying", lying)] {
            let tmp = tempfile::tempdir().unwrap();
            let r = tmp.path();
            git(r, 0, &["init", "-q", "-b", "main", "."]);
            let mut i = 0i64;
            let commit = |r: &Path, i: &mut i64, after: bool, msg: &str| {
                *i += 1;
                std::fs::write(r.join(format!("f{i}")), msg).unwrap();
                git(r, date(*i, after), &["add", "-A"]);
                git(r, date(*i, after), &["commit", "-qm", msg]);
            };
            let mut pin = String::new();
            for round in 0..12 {
                let after = round >= 6;
                if round == 6 {
                    pin = git(r, 0, &["rev-parse", "HEAD"]).trim().to_string();
                }
                commit(r, &mut i, after, "main");
                // A topic forked a few rounds back.
                let base = format!("HEAD~{}", round.min(3));
                git(r, 0, &["checkout", "-q", "-b", &format!("t{round}"), &base]);
                commit(r, &mut i, after, "topic");
                commit(r, &mut i, after, "topic");
                git(r, 0, &["checkout", "-q", "main"]);
                i += 1;
                git(
                    r,
                    date(i, after),
                    &[
                        "merge",
                        "-q",
                        "--no-ff",
                        "-m",
                        "merge",
                        &format!("t{round}"),
                    ],
                );
            }
            let repo = crate::scan::open_repo(&r.join(".git")).unwrap();
            let packs = Packs::open(&repo.common_dir().join("objects"), repo.object_hash());
            let reader = PackReader::new(&packs, &repo.objects, 1 << 20);
            let tip = ids(&git(r, 0, &["rev-parse", "main"]));
            let hidden = ids(&pin);
            let (walk, cut) = new_commits(
                &reader,
                repo.object_hash(),
                &tip,
                tip.len(),
                &hidden,
                false,
                &Limits::default(),
                &|| false,
            );
            assert!(cut.is_none(), "{name}: {cut:?}");
            let ours: Vec<ObjectId> = walk
                .new
                .iter()
                .map(|&i| walk.nodes[i as usize].id)
                .collect();
            let mut want = ids(&git(r, 0, &["rev-list", "main", "--not", &pin]));
            assert!(want.len() > 20, "{name}: {} commits", want.len());
            let mut got = ours.clone();
            got.sort();
            want.sort();
            if name == "honest" {
                assert_eq!(got, want, "{name}");
                // gix's order, which the findings' first and last commits follow.
                let gix: Vec<ObjectId> =
                    gix::traverse::commit::Simple::new(tip.clone(), &repo.objects)
                        .hide(hidden.clone())
                        .unwrap()
                        .map(|i| i.unwrap().id)
                        .collect();
                assert_eq!(ours, gix, "{name}: order");
            } else {
                assert!(
                    want.iter().all(|c| got.binary_search(c).is_ok()),
                    "{name}: a new commit was missed"
                );
            }
            // Every parent of a new commit is known, with its tree.
            for &n in &walk.new {
                assert_eq!(walk.parents(n).len(), walk.parent_ids(n).len());
                for (&p, id) in walk.parents(n).iter().zip(walk.parent_ids(n)) {
                    assert_eq!(walk.nodes[p as usize].id, *id, "{name}");
                }
            }
        }
    }
}
