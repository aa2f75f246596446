//! Commits only a reflog names are scanned (red-team finding of 2026-12-06): the agent
//! writes a flagged commit into `logs/refs/stash`, `logs/HEAD` or a worktree's
//! `worktrees/<id>/logs/HEAD`, and the owner's `git stash apply stash@{1}` /
//! `git reset --hard HEAD@{1}` brings it in. Every attack runs under both gits with two
//! positive controls: the owner's command does write the payload with that git, and the same
//! commit without the reflog line leaves the check clean (the line is what is caught). The
//! honest controls: ordinary commits, amends, resets, rebases and stashes of flagged-free
//! work, and a clone's reflogs, are clean. The record of the scan's sources
//! (`<state>.refs`) must not vouch for a reflog changed after it was written.

mod common;

use gitward::integrity::scanlink_key::{record_path, Key};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const NULL: &str = "0000000000000000000000000000000000000000";

fn git_with(w: &common::World, git: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(git);
    w.env(&mut c);
    let out = c.arg("-C").arg(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        git.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(o: Output) -> String {
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn has(ev: &[serde_json::Value], kind: &str) -> bool {
    ev.iter().any(|e| e["event"] == kind)
}

fn flagged(ev: &[serde_json::Value], commit: &str) -> bool {
    ev.iter()
        .any(|e| e["event"] == "commit_flagged" && e["commit"] == commit)
}

fn line(old: &str, new: &str, msg: &str) -> String {
    format!("{old} {new} t <t@example.invalid> 1765000000 +0000\t{msg}\n")
}

fn append(p: &Path, s: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .unwrap()
        .write_all(s.as_bytes())
        .unwrap();
}

/// Is `p` the payload: a link to `/etc/passwd`?
fn payload_at(p: &Path) -> bool {
    std::fs::read_link(p).is_ok_and(|t| t == Path::new("/etc/passwd"))
}

/// A commit on top of `HEAD` of `dir` that adds `evil-link` → `/etc/passwd` (GW-SCAN-020,
/// an error), made with `commit-tree`: no ref and no reflog names it.
fn evil_commit(w: &common::World, git: &Path, dir: &Path) -> String {
    std::os::unix::fs::symlink("/etc/passwd", dir.join("evil-link")).unwrap();
    git_with(w, git, dir, &["add", "evil-link"]);
    let tree = text(git_with(w, git, dir, &["write-tree"]));
    let c = text(git_with(
        w,
        git,
        dir,
        &["commit-tree", &tree, "-p", "HEAD", "-m", "evil"],
    ));
    git_with(w, git, dir, &["reset", "-q"]);
    std::fs::remove_file(dir.join("evil-link")).unwrap();
    c
}

#[test]
fn a_stash_only_the_stash_reflog_names_is_scanned() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        // The owner's own stash at the pin: refs/stash and one reflog line.
        std::fs::write(m.join("README"), "owner's change\n").unwrap();
        git_with(&w, &git, &m, &["stash", "push", "-q", "-m", "owner"]);
        let owner = text(git_with(&w, &git, &m, &["rev-parse", "refs/stash"]));
        w.pin();
        // The agent: a stash-shaped commit with the payload (no ref, no reflog)...
        std::os::unix::fs::symlink("/etc/passwd", m.join("evil-link")).unwrap();
        git_with(&w, &git, &m, &["add", "evil-link"]);
        let evil = text(git_with(&w, &git, &m, &["stash", "create", "WIP"]));
        git_with(&w, &git, &m, &["reset", "-q", "--hard"]);
        assert!(!m.join("evil-link").exists());
        // Positive control: the commit alone, unnamed, is not what the check catches.
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: unnamed: {ev:?}", git.display());
        // ...written into the stash reflog as stash@{1}; refs/stash is untouched.
        let log = w.git_dir().join("logs/refs/stash");
        std::fs::write(
            &log,
            line(NULL, &evil, "WIP on main: evil") + &line(&evil, &owner, "On main: owner"),
        )
        .unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        // Reported at the stash's index commit (the stash itself brings nothing its parent
        // does not: git's combined-diff rule).
        assert!(
            ev.iter()
                .any(|e| e["event"] == "commit_flagged" && e["path"] == "evil-link"),
            "{}: {ev:?}",
            git.display()
        );
        // Positive control: the owner's apply of stash@{1} writes the payload with this git.
        git_with(&w, &git, &m, &["stash", "apply", "-q", "stash@{1}"]);
        assert!(payload_at(&m.join("evil-link")), "{}", git.display());
    }
}

#[test]
fn a_commit_only_head_at_1_names_is_scanned() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        w.pin();
        let head = text(git_with(&w, &git, &m, &["rev-parse", "HEAD"]));
        let evil = evil_commit(&w, &git, &m);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: unnamed: {ev:?}", git.display());
        append(
            &w.git_dir().join("logs/HEAD"),
            &(line(&head, &evil, "reset: moving to evil") + &line(&evil, &head, "reset: back")),
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        assert!(flagged(&ev, &evil), "{}: {ev:?}", git.display());
        git_with(&w, &git, &m, &["reset", "-q", "--hard", "HEAD@{1}"]);
        assert!(payload_at(&m.join("evil-link")), "{}", git.display());
    }
}

#[test]
fn a_commit_only_a_worktrees_own_head_log_names_is_scanned() {
    for git in common::gits() {
        let w = common::world();
        let o = w.other();
        w.pin();
        let head = text(git_with(&w, &git, &o, &["rev-parse", "HEAD"]));
        // Upper-case hex: git's get_oid_hex reads it.
        let evil = evil_commit(&w, &git, &o);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: unnamed: {ev:?}", git.display());
        let gd = PathBuf::from(text(git_with(
            &w,
            &git,
            &o,
            &["rev-parse", "--absolute-git-dir"],
        )));
        assert!(gd.starts_with(w.git_dir().join("worktrees")));
        append(
            &gd.join("logs/HEAD"),
            &(line(&head, &evil.to_uppercase(), "reset: moving to evil")
                + &line(&evil.to_uppercase(), &head, "reset: back")),
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        assert!(flagged(&ev, &evil), "{}: {ev:?}", git.display());
        git_with(&w, &git, &o, &["reset", "-q", "--hard", "HEAD@{1}"]);
        assert!(payload_at(&o.join("evil-link")), "{}", git.display());
    }
}

/// A reflog naming an object that is not there fails closed (it could appear later and the
/// next pin would take it for known); positive control: the same line naming a present,
/// flagged-free commit is clean.
#[test]
fn a_reflog_naming_a_missing_object_is_incomplete() {
    let w = common::world();
    let m = w.main();
    w.pin();
    let head = text(w.git(&m, &["rev-parse", "HEAD"]));
    let log = w.git_dir().join("logs/HEAD");
    let before = std::fs::read(&log).unwrap();
    let honest = text(w.git(&m, &["commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "x"]));
    append(&log, &line(&head, &honest, "x"));
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "{ev:?}");
    std::fs::write(&log, &before).unwrap();
    append(&log, &line(&head, &"1".repeat(40), "x"));
    let (code, ev) = w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    assert!(has(&ev, "scan_incomplete"), "{ev:?}");
}

#[test]
fn honest_work_with_reflogs_is_clean() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        w.pin();
        let g = |args: &[&str]| git_with(&w, &git, &m, args);
        g(&["checkout", "-q", "-b", "feat"]);
        for i in 0..3 {
            std::fs::write(m.join(format!("f{i}")), format!("{i}\n")).unwrap();
            g(&["add", "."]);
            g(&["commit", "-q", "-m", &format!("f{i}")]);
        }
        g(&["commit", "-q", "--amend", "-m", "amended"]);
        g(&["reset", "-q", "--hard", "HEAD~1"]);
        std::fs::write(m.join("README"), "stashed\n").unwrap();
        g(&["stash", "push", "-q"]);
        g(&["checkout", "-q", "main"]);
        std::fs::write(m.join("g"), "g\n").unwrap();
        g(&["add", "g"]);
        g(&["commit", "-q", "-m", "g"]);
        g(&["checkout", "-q", "-"]);
        g(&["rebase", "-q", "main"]);
        g(&["stash", "pop", "-q"]);
        g(&["commit", "-q", "-am", "popped"]);
        g(&["checkout", "-q", "main"]);
        g(&["branch", "-q", "-D", "feat"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:?}", git.display());
        // Positive control: the same history with one flagged commit named only by HEAD's
        // reflog is caught.
        let head = text(g(&["rev-parse", "HEAD"]));
        let evil = evil_commit(&w, &git, &m);
        append(&w.git_dir().join("logs/HEAD"), &line(&head, &evil, "x"));
        assert_eq!(w.check(false).0, 1, "{}", git.display());
    }
}

/// A clone's reflogs (and the owner's long history before the pin) are known at the pin:
/// the check is clean and walks nothing.
#[test]
fn a_clones_reflogs_are_known_at_the_pin() {
    let w = common::world();
    let m = w.main();
    for i in 0..50 {
        std::fs::write(m.join("n"), format!("{i}\n")).unwrap();
        w.git(&m, &["add", "n"]);
        w.git(&m, &["commit", "-q", "-m", &format!("n{i}")]);
        if i % 10 == 0 {
            w.git(&m, &["reset", "-q", "--hard", "HEAD~1"]);
        }
    }
    let clone = w.root().join("clone");
    w.git(
        &w.root(),
        &["clone", "-q", m.to_str().unwrap(), clone.to_str().unwrap()],
    );
    assert!(clone.join(".git/logs/HEAD").is_file());
    for dir in [&m, &clone] {
        let st = w.root().join("state/c.json");
        let _ = std::fs::remove_file(&st);
        let out = w.wt_check(&[
            "pin",
            "--state",
            st.to_str().unwrap(),
            "--session",
            "s1",
            dir.to_str().unwrap(),
        ]);
        assert!(out.status.success());
        let out = w.wt_check(&[
            "check",
            "--state",
            st.to_str().unwrap(),
            dir.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout)
        );
        // The reset-away commits are in the pin's known reflog ids.
        let (_, refs) = common::read_state_json(&st);
        let s = refs.to_string();
        if dir == &m {
            assert!(s.contains("present"), "{s}");
        }
    }
}

/// The record of the scan's sources: a reflog changed after a clean check must not be
/// vouched for. Positive control: a record forged to hold the key taken after the change
/// makes the check say clean, so the key's logs/ is what catches it.
#[test]
fn the_scan_record_covers_the_reflogs() {
    for wt in [false, true] {
        let w = common::world();
        let dir = if wt { w.other() } else { w.main() };
        let git = common::git_bin();
        let head = text(git_with(&w, &git, &dir, &["rev-parse", "HEAD"]));
        let evil = evil_commit(&w, &git, &dir);
        let gd = PathBuf::from(text(git_with(
            &w,
            &git,
            &dir,
            &["rev-parse", "--absolute-git-dir"],
        )));
        let log = gd.join("logs/HEAD");
        w.pin();
        std::thread::sleep(Duration::from_millis(1200));
        assert_eq!(w.check(false).0, 0);
        let record = record_path(&w.state()).unwrap();
        assert!(record.exists(), "the fast path is armed");
        assert_eq!(w.check(false).0, 0);
        // Same size, mtime put back: only ctime (and the bytes) move.
        // The last line replaced by one as long naming `evil`.
        let before = std::fs::read(&log).unwrap();
        let body = &before[..before.len() - 1];
        let start = body.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1);
        let last = before.len() - start;
        let pad = last - line(&head, &evil, "").len();
        let mut after = before[..start].to_vec();
        after.extend_from_slice(line(&head, &evil, &"x".repeat(pad)).as_bytes());
        assert_eq!(before.len(), after.len());
        let old = std::fs::metadata(&log).unwrap().modified().unwrap();
        std::fs::write(&log, &after).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&log)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "worktree {wt}: {ev:?}");
        assert!(flagged(&ev, &evil), "worktree {wt}: {ev:?}");
        let k = Key::take(&w.state(), &w.git_dir()).expect("a key");
        std::fs::write(&record, k.to_bytes()).unwrap();
        assert_eq!(
            w.check(false).0,
            0,
            "worktree {wt}: a forged record vouches for the change"
        );
    }
}

/// An id a reflog named at the pin whose object was missing is known only while it stays
/// missing: an honest broken entry checks clean, and the object appearing afterwards (the
/// agent restores it) is scanned. Positive control: clean before the object comes back.
#[test]
fn an_object_missing_at_the_pin_is_scanned_when_it_appears() {
    let w = common::world();
    let m = w.main();
    let git = common::git_bin();
    let head = text(w.git(&m, &["rev-parse", "HEAD"]));
    let evil = evil_commit(&w, &git, &m);
    let loose = w
        .git_dir()
        .join("objects")
        .join(&evil[..2])
        .join(&evil[2..]);
    let saved = std::fs::read(&loose).unwrap();
    append(&w.git_dir().join("logs/HEAD"), &line(&head, &evil, "x"));
    std::fs::remove_file(&loose).unwrap();
    w.pin();
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "missing at the pin and now: {ev:?}");
    std::fs::write(&loose, saved).unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 1, "{ev:?}");
    assert!(flagged(&ev, &evil), "{ev:?}");
}

/// `git checkout -` (`@{-1}`) takes the commit from the text of the last `checkout: moving
/// from <id> to …` message, not from the id columns.
#[test]
fn a_commit_only_a_checkout_message_names_is_scanned() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        w.pin();
        let head = text(git_with(&w, &git, &m, &["rev-parse", "HEAD"]));
        let evil = evil_commit(&w, &git, &m);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: unnamed: {ev:?}", git.display());
        append(
            &w.git_dir().join("logs/HEAD"),
            &line(
                &head,
                &head,
                &format!("checkout: moving from {evil} to main"),
            ),
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        assert!(flagged(&ev, &evil), "{}: {ev:?}", git.display());
        git_with(&w, &git, &m, &["checkout", "-q", "-"]);
        assert_eq!(text(git_with(&w, &git, &m, &["rev-parse", "HEAD"])), evil);
        assert!(payload_at(&m.join("evil-link")), "{}", git.display());
    }
}

/// Root refs git reads by name: the owner's `git reset --hard ORIG_HEAD` (main worktree and
/// a linked one's own `ORIG_HEAD`), every line of `MERGE_HEAD` (a parent of the owner's
/// next `git commit`). Positive controls: unnamed, clean; the owner's reset writes the
/// payload with this git.
#[test]
fn a_commit_only_a_root_ref_names_is_scanned() {
    for git in common::gits() {
        for wt in [false, true] {
            let w = common::world();
            let dir = if wt { w.other() } else { w.main() };
            w.pin();
            let evil = evil_commit(&w, &git, &dir);
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "{}: unnamed: {ev:?}", git.display());
            let gd = PathBuf::from(text(git_with(
                &w,
                &git,
                &dir,
                &["rev-parse", "--absolute-git-dir"],
            )));
            std::fs::write(gd.join("ORIG_HEAD"), format!("{evil}\n")).unwrap();
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} worktree {wt}: {ev:?}", git.display());
            assert!(
                flagged(&ev, &evil),
                "{} worktree {wt}: {ev:?}",
                git.display()
            );
            git_with(&w, &git, &dir, &["reset", "-q", "--hard", "ORIG_HEAD"]);
            assert!(payload_at(&dir.join("evil-link")), "{}", git.display());
        }
    }
    let w = common::world();
    let m = w.main();
    w.pin();
    let head = text(w.git(&m, &["rev-parse", "HEAD"]));
    let evil = evil_commit(&w, &common::git_bin(), &m);
    std::fs::write(w.git_dir().join("MERGE_HEAD"), format!("{head}\n{evil}\n")).unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 1, "MERGE_HEAD's second line: {ev:?}");
    assert!(flagged(&ev, &evil), "{ev:?}");
}

/// The record of the scan's sources covers the root refs: an `ORIG_HEAD` written after a
/// clean check is scanned (forged-record control).
#[test]
fn the_scan_record_covers_the_root_refs() {
    let w = common::world();
    let m = w.main();
    let evil = evil_commit(&w, &common::git_bin(), &m);
    w.pin();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(w.check(false).0, 0);
    let record = record_path(&w.state()).unwrap();
    assert!(record.exists(), "the fast path is armed");
    assert_eq!(w.check(false).0, 0);
    std::fs::write(w.git_dir().join("ORIG_HEAD"), format!("{evil}\n")).unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 1, "{ev:?}");
    let k = Key::take(&w.state(), &w.git_dir()).expect("a key");
    std::fs::write(&record, k.to_bytes()).unwrap();
    assert_eq!(
        w.check(false).0,
        0,
        "a forged record vouches for the change"
    );
}

/// A tree only a root ref names (`AUTO_MERGE`, left by an honest `git stash pop`) is diffed
/// against its git dir's `HEAD` tree, not scanned whole: a CI file already in the history
/// is not reported again. Positive control: an `AUTO_MERGE` whose tree adds the payload is.
#[test]
fn auto_merge_is_diffed_against_head() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        let g = |args: &[&str]| git_with(&w, &git, &m, args);
        std::fs::create_dir_all(m.join(".github/workflows")).unwrap();
        std::fs::write(m.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        g(&["add", "."]);
        g(&["commit", "-q", "-m", "ci"]);
        w.pin();
        std::fs::write(m.join("README"), "changed\n").unwrap();
        g(&["stash", "push", "-q"]);
        g(&["stash", "pop", "-q"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: {ev:?}", git.display());
        // Positive control.
        std::os::unix::fs::symlink("/etc/passwd", m.join("evil-link")).unwrap();
        g(&["add", "evil-link"]);
        let tree = text(g(&["write-tree"]));
        g(&["reset", "-q"]);
        std::fs::remove_file(m.join("evil-link")).unwrap();
        std::fs::write(w.git_dir().join("AUTO_MERGE"), format!("{tree}\n")).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        assert!(
            ev.iter()
                .any(|e| e["event"] == "commit_flagged" && e["path"] == "evil-link"),
            "{}: {ev:?}",
            git.display()
        );
        assert!(
            !ev.iter().any(|e| e["path"] == ".github/workflows/ci.yml"),
            "{}: {ev:?}",
            git.display()
        );
    }
}
