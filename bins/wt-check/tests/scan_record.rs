//! The record of the commit scan's sources (`<state>.refs`, `gitward::integrity::scanlink_key`):
//! a check whose scan found the refs exactly as pinned records the sources' key, and the
//! next check with the same key skips the scan. Each test here is one way the agent could
//! try to move a ref (or lose an object) without moving the key: the check after it must
//! report what the scan reports. Positive control in each: the record did exist before the
//! change (the fast path was armed), and a record forged to hold the key taken *after* the
//! change makes the check say clean — so the key moving is what catches the change, and the
//! test would fail if the key did not hold what was changed.

mod common;

use gitward::integrity::scanlink_key::{record_path, Key};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A world pinned with an unreachable commit `evil` that adds a link to an absolute path
/// (GW-SCAN-020, an error: the scan flags it once a ref reaches it), checked once past the racy margin (the record written).
struct Case {
    w: common::World,
    evil: String,
}

fn case_with(prepare: impl FnOnce(&common::World)) -> Case {
    let w = common::world();
    let m = w.main();
    std::os::unix::fs::symlink("/etc/passwd", m.join("evil-link")).unwrap();
    w.git(&m, &["add", "evil-link"]);
    let tree = String::from_utf8(w.git(&m, &["write-tree"]).stdout).unwrap();
    let evil = String::from_utf8(
        w.git(
            &m,
            &["commit-tree", tree.trim(), "-p", "HEAD", "-m", "evil"],
        )
        .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    w.git(&m, &["reset", "-q"]);
    std::fs::remove_file(m.join("evil-link")).unwrap();
    prepare(&w);
    w.pin();
    std::thread::sleep(Duration::from_millis(1200));
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "honest repository: {ev:?}");
    Case { w, evil }
}

fn case() -> Case {
    case_with(|_| {})
}

impl Case {
    fn common(&self) -> PathBuf {
        self.w.git_dir()
    }
    fn record(&self) -> PathBuf {
        record_path(&self.w.state()).unwrap()
    }
    /// The check after `change`: what it reports, with the record armed before.
    fn after(&self, change: impl FnOnce(&Case)) -> (i32, Vec<serde_json::Value>) {
        assert!(
            self.record().exists(),
            "the fast path is armed before the change"
        );
        // A second check uses the record and says clean (the fast path itself works).
        assert_eq!(self.w.check(false).0, 0);
        change(self);
        self.w.check(false)
    }
    /// Positive control: a record holding the key taken now makes the check say clean.
    fn forged_record_hides_it(&self) {
        let k = Key::take(&self.w.state(), &self.common()).expect("a key");
        std::fs::write(self.record(), k.to_bytes()).unwrap();
        let (code, ev) = self.w.check(false);
        assert_eq!(code, 0, "a forged record vouches for the change: {ev:?}");
    }
}

fn has(ev: &[serde_json::Value], kind: &str) -> bool {
    ev.iter().any(|e| e["event"] == kind)
}

/// Replace `p`'s bytes in place (same inode) and put its `mtime` back.
fn rewrite_keeping_mtime(p: &Path, bytes: &[u8]) {
    let old = std::fs::metadata(p).unwrap().modified().unwrap();
    std::fs::write(p, bytes).unwrap();
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(old))
        .unwrap();
    assert_eq!(std::fs::metadata(p).unwrap().modified().unwrap(), old);
}

#[test]
fn a_new_loose_ref_is_scanned() {
    let c = case();
    let (code, ev) = c.after(|c| {
        std::fs::write(c.common().join("refs/heads/evil"), format!("{}\n", c.evil)).unwrap()
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_loose_ref_rewritten_with_the_same_size_and_mtime_is_scanned() {
    let c = case();
    let (code, ev) = c.after(|c| {
        let p = c.common().join("refs/heads/o");
        let before = std::fs::read(&p).unwrap();
        let new = format!("{}\n", c.evil);
        assert_eq!(before.len(), new.len());
        rewrite_keeping_mtime(&p, new.as_bytes());
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_rename_over_a_ref_is_scanned() {
    let c = case();
    let (code, ev) = c.after(|c| {
        let p = c.common().join("refs/heads/o");
        let old = std::fs::metadata(&p).unwrap().modified().unwrap();
        let tmp = c.common().join("refs/heads/o.new");
        std::fs::write(&tmp, format!("{}\n", c.evil)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn packed_refs_rewritten_with_the_same_size_and_mtime_are_scanned() {
    let c = case_with(|w| {
        w.git(&w.main(), &["pack-refs", "--all"]);
    });
    let (code, ev) = c.after(|c| {
        let p = c.common().join("packed-refs");
        let text = std::fs::read_to_string(&p).unwrap();
        let line = text
            .lines()
            .find(|l| l.ends_with(" refs/heads/o"))
            .expect("o is packed");
        let new = text.replacen(line, &format!("{} refs/heads/o", c.evil), 1);
        assert_eq!(new.len(), text.len());
        rewrite_keeping_mtime(&p, new.as_bytes());
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_worktree_head_moved_is_scanned() {
    let c = case_with(|w| {
        // The other session's worktree detached at the branch's commit (HEAD holds an id).
        w.git(&w.other(), &["checkout", "-q", "--detach"]);
    });
    let (code, ev) = c.after(|c| {
        let p = c.common().join("worktrees/other/HEAD");
        let before = std::fs::read(&p).unwrap();
        let new = format!("{}\n", c.evil);
        assert_eq!(before.len(), new.len());
        rewrite_keeping_mtime(&p, new.as_bytes());
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_worktree_private_ref_added_is_scanned() {
    let c = case();
    let (code, ev) = c.after(|c| {
        let d = c.common().join("worktrees/other/refs/bisect");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("bad"), format!("{}\n", c.evil)).unwrap();
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_deleted_loose_object_is_not_clean() {
    let c = case();
    let (code, ev) = c.after(|c| {
        let head = String::from_utf8(c.w.git(&c.w.main(), &["rev-parse", "HEAD"]).stdout)
            .unwrap()
            .trim()
            .to_string();
        let p = c.common().join("objects").join(&head[..2]).join(&head[2..]);
        std::fs::remove_file(p).unwrap();
    });
    assert_eq!(code, 2, "{ev:?}");
    assert!(has(&ev, "scan_incomplete"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_deleted_pack_is_not_clean() {
    let c = case_with(|w| {
        w.git(&w.main(), &["repack", "-q", "-a", "-d"]);
        w.git(&w.main(), &["prune"]);
    });
    let (code, ev) = c.after(|c| {
        for e in std::fs::read_dir(c.common().join("objects/pack")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "idx" || x == "pack") {
                std::fs::remove_file(p).unwrap();
            }
        }
    });
    assert_eq!(code, 2, "{ev:?}");
    assert!(has(&ev, "scan_incomplete"), "{ev:?}");
    c.forged_record_hides_it();
}

#[test]
fn a_symlinked_ref_is_never_recorded() {
    // A ref that is a link to a file the agent writes: nothing in the git folder moves
    // when the file does, so no record may vouch for it.
    let w = common::world();
    let m = w.main();
    let head = String::from_utf8(w.git(&m, &["rev-parse", "HEAD"]).stdout).unwrap();
    let target = w.outside().join("ref");
    std::fs::write(&target, &head).unwrap();
    let link = w.git_dir().join("refs/heads/linked");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    // `pin` refuses a link in the ref namespace (GW022, R16-1).
    let st = w.state();
    let out = w.wt_check(&[
        "pin",
        "--state",
        st.to_str().unwrap(),
        "--session",
        "s1",
        m.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link where git reads refs"));
    // Made after the pin: reported, the scan skipped, nothing recorded.
    std::fs::remove_file(&link).unwrap();
    w.pin();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let (code, ev) = w.check(false);
    assert_ne!(code, 0, "{ev:#?}");
    assert!(ev.iter().any(|e| e["change"] == "ref_link"), "{ev:#?}");
    let rec = record_path(&w.state()).unwrap();
    assert!(Key::take(&w.state(), &w.git_dir()).is_none());
    assert!(!rec.exists(), "no record beside a linked ref");
    // Positive control: without the link the same world is recorded.
    std::fs::remove_file(w.git_dir().join("refs/heads/linked")).unwrap();
    w.pin();
    std::thread::sleep(Duration::from_millis(1200));
    w.check(false);
    assert!(Key::take(&w.state(), &w.git_dir()).is_some());
    assert!(rec.exists());
}

#[test]
fn a_new_pin_is_a_new_key() {
    let c = case();
    let before = Key::take(&c.w.state(), &c.common()).unwrap();
    // The same state file content written again: another inode and ctime.
    let bytes = std::fs::read(c.w.state()).unwrap();
    std::fs::remove_file(c.w.state()).unwrap();
    std::fs::write(c.w.state(), bytes).unwrap();
    let after = Key::take(&c.w.state(), &c.common()).unwrap();
    assert_ne!(before.to_bytes(), after.to_bytes());
    // Positive control: taken twice without a change, the key is the same.
    let again = Key::take(&c.w.state(), &c.common()).unwrap();
    assert_eq!(after.to_bytes(), again.to_bytes());
}

/// The snapshot is kept as JSON text (`state::Refs`, format 3: the document after the
/// state's object) and parsed only when the scan runs: a state file whose snapshot is not
/// one, or not JSON, is incomplete, whatever the record said before; one with nothing after
/// the state's object cannot be read at all.
#[test]
fn a_damaged_snapshot_in_the_state_file_is_never_clean() {
    let c = case();
    assert!(c.record().exists());
    let text = std::fs::read_to_string(c.w.state()).unwrap();
    let (v, _) = common::read_state_json(&c.w.state());
    for (what, refs, kind) in [
        (
            "another format",
            serde_json::json!({"format": 99, "object_hash": "sha1", "refs": {}}),
            "scan_incomplete",
        ),
        ("not a snapshot", serde_json::json!("x"), "scan_incomplete"),
        ("missing", serde_json::Value::Null, "scan_incomplete"),
    ] {
        common::write_state_json(&c.w.state(), &v, &refs);
        let (code, ev) = c.w.check(false);
        assert_eq!(code, 2, "{what}: {ev:?}");
        assert!(has(&ev, kind), "{what}: {ev:?}");
    }
    // Not JSON in the snapshot (format 3 keeps it as text after the state's object, parsed
    // only when the scan runs): the scan is incomplete, never clean.
    let broken = text.replacen("{\"format\":1,", "{\"format\":1,{", 1);
    assert_ne!(broken, text);
    std::fs::write(c.w.state(), &broken).unwrap();
    let (code, ev) = c.w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    assert!(has(&ev, "scan_incomplete"), "{ev:?}");
    // Nothing after the state's object: the state file is refused.
    std::fs::write(c.w.state(), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let (code, ev) = c.w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    assert!(has(&ev, "check_incomplete"), "{ev:?}");
    // Positive control: the state file as pinned is clean again.
    std::fs::write(c.w.state(), &text).unwrap();
    assert_eq!(c.w.check(false).0, 0);
}

/// The agents' end-of-turn hook (`wt-check hook codex-stop`) scans with the same record: a
/// ref moved since the record is reported there too.
#[test]
fn the_end_of_turn_hook_scans_a_moved_ref_with_the_record_armed() {
    use std::io::Write;
    let c = case();
    let input = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/hooks/codex-stop.json"
    ))
    .unwrap();
    let st = c.w.state();
    let run = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_wt-check"));
        c.w.env(&mut cmd);
        cmd.args(["hook", "codex-stop", "--state", st.to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(c.record().exists());
    let clean = run();
    assert!(!clean.contains("commit_flagged"), "{clean}");
    assert!(c.record().exists(), "a clean hook keeps the record");
    std::fs::write(c.common().join("refs/heads/evil"), format!("{}\n", c.evil)).unwrap();
    let out = run();
    assert!(out.contains("commit_flagged"), "{out}");
    // Positive control: a record holding the key taken now hides it from the hook too.
    let k = Key::take(&st, &c.common()).unwrap();
    std::fs::write(c.record(), k.to_bytes()).unwrap();
    let hidden = run();
    assert!(!hidden.contains("commit_flagged"), "{hidden}");
}

/// Racy git's rule end to end: a ref written less than the margin before the check is not
/// recorded (a second write in the same clock tick could leave every stamp equal).
#[test]
fn a_ref_written_within_the_racy_margin_is_not_recorded() {
    let c = case();
    assert!(c.record().exists());
    let p = c.common().join("refs/heads/o");
    let same = std::fs::read(&p).unwrap();
    // The check must start within the margin (1 s) of the write; a check that took longer
    // (a loaded machine) may have started past it and rightly recorded, so it is not judged
    // but tried again (a new write), a bounded number of times.
    let tries = 5;
    let judged = (1..=tries).any(|n| {
        let written = std::time::Instant::now();
        std::fs::write(&p, &same).unwrap();
        let (code, ev) = c.w.check(false);
        assert_eq!(code, 0, "refs as pinned: {ev:?}");
        let took = written.elapsed();
        if took >= Duration::from_millis(900) {
            eprintln!("try {n}: write to check's end {took:?}, past the margin; tried again");
            return false;
        }
        assert!(
            !c.record().exists(),
            "a stamp within the margin is not recorded"
        );
        true
    });
    if !judged {
        common::timing_miss(&format!(
            "a_ref_written_within_the_racy_margin_is_not_recorded: the check ended past the margin {tries} times"
        ));
    }
    // Positive control: past the margin, the next check records the same sources.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(c.w.check(false).0, 0);
    assert!(c.record().exists());
}

/// The record is a key taken with every folder listed (`Key::take`), whatever names the
/// key of the check that wrote it took from an earlier record (`Key::take_after`); a new
/// ref in a folder whose times the agent put back is scanned all the same (the folder's
/// `ctime` moved: its names are listed, not taken from the record).
#[test]
fn the_record_is_a_key_with_every_folder_listed() {
    let c = case();
    let full = Key::take(&c.w.state(), &c.common()).unwrap();
    assert_eq!(std::fs::read(c.record()).unwrap(), full.to_bytes());
    let after = Key::take_after(&c.w.state(), &c.common(), Some(full.to_bytes())).unwrap();
    assert_eq!(after.to_bytes(), full.to_bytes());
    assert!(
        after.replayed > 0,
        "positive control: names taken from the record"
    );
    let (code, ev) = c.after(|c| {
        let d = c.common().join("refs/heads");
        let m = std::fs::metadata(&d).unwrap();
        std::fs::write(d.join("evil"), format!("{}\n", c.evil)).unwrap();
        std::fs::File::open(&d)
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_modified(m.modified().unwrap())
                    .set_accessed(m.accessed().unwrap()),
            )
            .unwrap();
        assert_eq!(
            std::fs::metadata(&d).unwrap().modified().unwrap(),
            m.modified().unwrap()
        );
    });
    assert_eq!(code, 1, "{ev:?}");
    assert!(has(&ev, "commit_flagged"), "{ev:?}");
}
