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
//! Each commit is read once (its tree, parents and committer time kept, ~100 bytes), so
//! the workers get every parent's tree without reading a commit again.

use super::packs::PackReader;
use super::Limits;
use crate::catalogue;
use gix::bstr::ByteSlice;
use gix::objs::commit::ref_iter::Token;
use gix::ObjectId;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// Hidden commits popped after the last visible one leaves the queue, as git's `SLOP`.
const SLOP: u32 = 5;

/// One commit the walk read.
pub(super) struct Node {
    pub id: ObjectId,
    pub tree: ObjectId,
    /// As the commit lists them.
    pub parent_ids: Box<[ObjectId]>,
    /// Indices into [`Walk::nodes`], filled when the commit is popped (its parents read).
    pub parents: Box<[u32]>,
    time: i64,
    hidden: bool,
    queued: bool,
    popped: bool,
    /// The signature header this commit carries (only looked for with `log.showSignature`).
    pub signature: Option<String>,
}

/// The walk's result.
#[derive(Default)]
pub(super) struct Walk {
    pub nodes: Vec<Node>,
    /// The new commits as indices into `nodes`, in the order of a breadth-first walk from the
    /// tips (gix's `Simple` order: the tips as given, then each commit's parents in order).
    pub new: Vec<u32>,
}

impl Walk {
    /// The new commits' parents by id (for the ref phase's ancestry questions).
    pub fn parents_of_new(&self) -> HashMap<ObjectId, Box<[ObjectId]>> {
        self.new
            .iter()
            .map(|&i| {
                let n = &self.nodes[i as usize];
                (n.id, n.parent_ids.clone())
            })
            .collect()
    }

    /// The tree of `parent` (an index into `nodes`).
    pub fn tree(&self, i: u32) -> ObjectId {
        self.nodes[i as usize].tree
    }
}

struct Walker<'r> {
    objects: &'r PackReader<'r>,
    hash: gix::hash::Kind,
    show_signature: bool,
    nodes: Vec<Node>,
    index: HashMap<ObjectId, u32>,
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
        if let Some(&i) = self.index.get(&id) {
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
                .find(|(k, _)| {
                    catalogue::SIGNATURE_HEADERS
                        .iter()
                        .any(|s| k.as_bytes() == s.as_bytes())
                })
                .map(|(k, _)| k.to_str_lossy().into_owned())
        } else {
            None
        };
        let i = u32::try_from(self.nodes.len()).map_err(|_| "too many commits".to_string())?;
        self.nodes.push(Node {
            id,
            tree,
            parent_ids: parent_ids.into(),
            parents: Box::new([]),
            time,
            hidden: false,
            queued: false,
            popped: false,
            signature,
        });
        self.index.insert(id, i);
        Ok(i)
    }

    fn enqueue(&mut self, i: u32) {
        let n = &mut self.nodes[i as usize];
        if n.queued || n.popped {
            return;
        }
        n.queued = true;
        if !n.hidden {
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
            let n = &mut self.nodes[i as usize];
            if n.hidden {
                continue;
            }
            n.hidden = true;
            if n.queued {
                self.visible_queued -= 1;
            }
            if n.popped {
                stack.extend(n.parents.iter().copied());
            }
        }
    }
}

/// Walk from `tips` hiding what `hidden` reaches. `stopped` is polled between commits
/// (time limit, a halt elsewhere). A walk cut short (a bound, an unreadable commit, `stopped`)
/// returns the commits popped so far that are not marked hidden, and why it stopped (empty
/// when `stopped` said so): they are scanned, and the report is incomplete.
pub(super) fn new_commits(
    objects: &PackReader<'_>,
    hash: gix::hash::Kind,
    tips: &[ObjectId],
    hidden: &[ObjectId],
    show_signature: bool,
    limits: &Limits,
    stopped: &dyn Fn() -> bool,
) -> (Walk, Option<String>) {
    let mut w = Walker {
        objects,
        hash,
        show_signature,
        nodes: Vec::new(),
        index: HashMap::new(),
        queue: BinaryHeap::new(),
        inserted: 0,
        visible_queued: 0,
    };
    let mut tip_nodes = Vec::with_capacity(tips.len());
    let cut = paint(&mut w, tips, hidden, limits, stopped, &mut tip_nodes).err();
    // Anything still queued is hidden (see the module comment), so the new commits are the
    // popped, unmarked ones. Their order: breadth first from the tips.
    let mut new = Vec::new();
    let mut seen = vec![false; w.nodes.len()];
    let mut next: VecDeque<u32> = VecDeque::new();
    for &i in &tip_nodes {
        if !seen[i as usize] {
            seen[i as usize] = true;
            next.push_back(i);
        }
    }
    while let Some(i) = next.pop_front() {
        let n = &w.nodes[i as usize];
        if n.hidden || !n.popped {
            continue;
        }
        new.push(i);
        for &p in n.parents.iter() {
            if !seen[p as usize] && !w.nodes[p as usize].hidden {
                seen[p as usize] = true;
                next.push_back(p);
            }
        }
    }
    (
        Walk {
            nodes: w.nodes,
            new,
        },
        cut,
    )
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
        let n = &w.nodes[i as usize];
        let hidden = n.hidden;
        if !hidden && visible_popped >= limits.max_commits {
            return Err(format!("commit limit of {} reached", limits.max_commits));
        }
        let parent_ids = n.parent_ids.clone();
        let mut parents = Vec::with_capacity(parent_ids.len());
        for p in parent_ids.iter() {
            parents.push(w.node(*p)?);
        }
        // Popped only once its parents are read: a commit cut off here is not scanned (as a
        // root commit it would be diffed against nothing).
        let n = &mut w.nodes[i as usize];
        n.queued = false;
        n.popped = true;
        n.parents = parents.clone().into();
        if !hidden {
            w.visible_queued -= 1;
            visible_popped += 1;
            last_visible_time = time;
        }
        for p in parents {
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
                let node = &walk.nodes[n as usize];
                assert_eq!(node.parents.len(), node.parent_ids.len());
            }
        }
    }
}
