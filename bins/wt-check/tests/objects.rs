//! Object substitution (rule GW-OBJ-001), end to end on every git of the machine. The agent
//! rewrites a loose object of the owner's history in place (no ref moves); git does not
//! verify a blob against its id when it checks it out, so the owner's `git checkout side`
//! writes the agent's content into a work tree the agent never wrote.
//!
//! Every attack case first fires under plain git (the positive control: the evil content
//! lands in a fresh worktree the owner checks out), then `check` reports
//! `object_substituted` (exit 1) and `check --restore` sets the file aside into the
//! quarantine, byte for byte. Honest controls (commits, `gc`, `repack -ad`, a fetch,
//! `commit-graph write`, `maintenance run`) stay clean.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

struct W {
    w: common::World,
    git: PathBuf,
}

impl W {
    /// `proj/`: main with commit one (`f` = "hello") and commit two (`f` removed, `g`
    /// added); branch `side` at commit one. Pinned.
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
        me.ok(&m, &["rm", "-q", "f"]);
        std::fs::write(m.join("g"), "other\n").unwrap();
        me.ok(&m, &["add", "g"]);
        me.ok(&m, &["commit", "-q", "-m", "two"]);
        me.pin();
        me
    }

    fn pin(&self) {
        let st = self.w.state();
        let out = self.w.wt_check(&[
            "pin",
            "--state",
            st.to_str().unwrap(),
            self.w.main().to_str().unwrap(),
        ]);
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

    /// The loose object file of `side:f` (the owner's blob "hello\n").
    fn target(&self) -> (String, PathBuf) {
        let b = self.ok(&self.w.main(), &["rev-parse", "side:f"]);
        let p = self.w.git_dir().join("objects").join(&b[..2]).join(&b[2..]);
        (b, p)
    }

    /// A well-formed loose object file of the blob "evil\n" (made by git in a scratch
    /// repository): what the agent writes under the owner's id.
    fn evil_bytes(&self) -> Vec<u8> {
        let x = self.w.root().join("scratch");
        if !x.exists() {
            self.ok(&self.w.root(), &["init", "-q", "scratch"]);
        }
        std::fs::write(x.join("e"), "evil\n").unwrap();
        let e = self.ok(&x, &["hash-object", "-w", "e"]);
        std::fs::read(x.join(".git/objects").join(&e[..2]).join(&e[2..])).unwrap()
    }

    /// The owner checks `side` out into a fresh worktree (one the agent never wrote) and
    /// reads `f` there; `None` when git refuses.
    fn owner_reads_side(&self, name: &str) -> Option<String> {
        let wt = self.w.root().join(name);
        let mut c = Command::new(&self.git);
        self.w.env(&mut c);
        let out = c
            .arg("-C")
            .arg(self.w.main())
            .args(["worktree", "add", "-q", "--detach"])
            .arg(&wt)
            .arg("side")
            .output()
            .unwrap();
        let f = std::fs::read_to_string(wt.join("f")).ok();
        if !out.status.success() {
            return None;
        }
        f
    }

    fn check(&self, restore: bool) -> (i32, Vec<serde_json::Value>) {
        self.w.check(restore)
    }
}

fn substituted(events: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event"] == "object_substituted")
        .collect()
}

/// The repro of the finding: in-place rewrite (`chmod u+w`, write). Fires under plain git;
/// `check` reports it with the id and rule; `--restore` sets the file aside byte for byte,
/// after which the owner's checkout no longer writes the evil content.
#[test]
fn in_place_rewrite_is_reported_and_set_aside() {
    for git in common::gits() {
        let w = W::new(&git);
        let (id, p) = w.target();
        let evil = w.evil_bytes();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, &evil).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        // Positive control: the attack fires under plain git.
        assert_eq!(
            w.owner_reads_side("owner1").as_deref(),
            Some("evil\n"),
            "{}: the substitution did not fire under plain git",
            git.display()
        );
        let (code, ev) = w.check(false);
        let s = substituted(&ev);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        assert_eq!(s.len(), 1, "{ev:?}");
        assert_eq!(s[0]["id"], id.as_str());
        assert_eq!(s[0]["rule"], "GW-OBJ-001");
        assert_eq!(s[0]["action"], "report");
        assert!(p.exists(), "check without --restore must not move anything");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s[0]["action"], "quarantined");
        assert!(s[0]["after"].as_str().unwrap().contains("now missing"));
        let q = PathBuf::from(s[0]["quarantine"].as_str().unwrap());
        assert_eq!(std::fs::read(&q).unwrap(), evil, "kept byte for byte");
        assert!(!p.exists());
        // The owner's checkout now fails on the missing object instead of writing "evil".
        assert_ne!(w.owner_reads_side("owner2").as_deref(), Some("evil\n"));
        // And the next check is clean (nothing left to report).
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:?}");
    }
}

/// The agent sets `mtime` back after the write (`touch -d`): `ctime` still moved.
#[test]
fn mtime_set_back_is_still_reported() {
    for git in common::gits() {
        let w = W::new(&git);
        let (id, p) = w.target();
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        // Same length as the original file is not needed: the size is in the stamp, and
        // the ctime moves anyway.
        std::fs::write(&p, w.evil_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::File::open(&p)
            .unwrap()
            .set_modified(before)
            .unwrap();
        assert_eq!(w.owner_reads_side("owner").as_deref(), Some("evil\n"));
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(substituted(&ev)[0]["id"], id.as_str());
    }
}

/// A new file renamed over the object (new inode), and a symbolic link in its place (git's
/// `open` follows it).
#[test]
fn rename_over_and_symlink_are_reported() {
    for git in common::gits() {
        let w = W::new(&git);
        let (id, p) = w.target();
        let tmp = p.with_file_name("tmp_obj_x");
        std::fs::write(&tmp, w.evil_bytes()).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        assert_eq!(w.owner_reads_side("owner1").as_deref(), Some("evil\n"));
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(substituted(&ev)[0]["id"], id.as_str());

        let w = W::new(&git);
        let (id, p) = w.target();
        let outside = w.w.root().join("evilobj");
        std::fs::write(&outside, w.evil_bytes()).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&outside, &p).unwrap();
        assert_eq!(w.owner_reads_side("owner1").as_deref(), Some("evil\n"));
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s[0]["id"], id.as_str());
        assert!(s[0]["why"].as_str().unwrap().contains("symbolic link"));
        // Restore moves the link itself aside (never follows it); the outside file stays.
        let (_, ev) = w.check(true);
        assert_eq!(substituted(&ev)[0]["action"], "quarantined");
        assert!(std::fs::symlink_metadata(&p).is_err());
        assert!(outside.exists());
    }
}

/// `objects/xx` swapped for a link to a folder the agent filled: reported by its fan-out
/// name.
#[test]
fn fanout_folder_link_is_reported() {
    for git in common::gits() {
        let w = W::new(&git);
        let (id, p) = w.target();
        let fan = p.parent().unwrap().to_path_buf();
        let planted = w.w.root().join("planted");
        std::fs::create_dir_all(&planted).unwrap();
        std::fs::write(planted.join(&id[2..]), w.evil_bytes()).unwrap();
        std::fs::rename(&fan, w.w.root().join("was-fan")).unwrap();
        std::os::unix::fs::symlink(&planted, &fan).unwrap();
        assert_eq!(w.owner_reads_side("owner1").as_deref(), Some("evil\n"));
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s[0]["id"], &id[..2], "{ev:?}");
    }
}

/// A substituted object written as a *new* loose file for an id that is packed (after a
/// `gc`). git reads the packed copy first (the substitute fires only once the agent also
/// gets the pack removed), but a new loose file that does not hash to its name is reported
/// all the same; restore says the id is still found in a pack.
#[test]
fn new_loose_file_for_a_packed_id_is_verified() {
    for git in common::gits() {
        let w = W::new(&git);
        let (id, p) = w.target();
        w.ok(&w.w.main(), &["gc", "-q"]);
        assert!(!p.exists());
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, w.evil_bytes()).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(substituted(&ev)[0]["id"], id.as_str());
        // Restore: the id is still in the pack, git reads that copy.
        let (_, ev) = w.check(true);
        assert!(substituted(&ev)[0]["after"]
            .as_str()
            .unwrap()
            .contains("still found"));
        assert_eq!(w.owner_reads_side("owner").as_deref(), Some("hello\n"));
    }
}

/// Without the record (a state pinned by an older build) every loose object is verified.
#[test]
fn missing_record_verifies_everything() {
    for git in common::gits() {
        let w = W::new(&git);
        let rec = w.w.root().join("state/st.json.objects");
        assert!(rec.exists());
        std::fs::remove_file(&rec).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "honest repository, no record: {ev:?}");
        let (_, p) = w.target();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, w.evil_bytes()).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(substituted(&ev).len(), 1);
    }
}

/// A record that is a symbolic link, or not of this format, is not read: incomplete, never
/// clean. (A damaged line only makes its file verified: `objects::tests`.)
#[test]
fn record_link_or_damage_is_incomplete() {
    let w = W::new(&common::git_bin());
    let rec = w.w.root().join("state/st.json.objects");
    let other = w.w.root().join("other-record");
    std::fs::rename(&rec, &other).unwrap();
    std::os::unix::fs::symlink(&other, &rec).unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    std::fs::remove_file(&rec).unwrap();
    std::fs::write(&rec, "gitward-objects 9\n").unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    // Positive control: the intact record checks clean.
    std::fs::rename(&other, &rec).unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 0, "{ev:?}");
}

/// Honest work inside the session: commits, a fetch, `gc`, `repack -ad`, `commit-graph
/// write`, `maintenance run`, a large file — `check` stays clean.
#[test]
fn honest_object_writes_stay_clean() {
    for git in common::gits() {
        let w = W::new(&git);
        let m = w.w.main();
        for i in 0..5 {
            std::fs::write(m.join(format!("n{i}")), format!("{i}\n")).unwrap();
            w.ok(&m, &["add", "."]);
            w.ok(&m, &["commit", "-q", "-m", &format!("c{i}")]);
        }
        std::fs::write(m.join("big"), vec![b'x'; 3 << 20]).unwrap();
        w.ok(&m, &["add", "big"]);
        w.ok(&m, &["commit", "-q", "-m", "big"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{}: after commits: {ev:?}", git.display());
        // A fetch from another repository (loose objects: under unpackLimit).
        let r = w.w.root();
        w.ok(&r, &["init", "-q", "up"]);
        std::fs::write(r.join("up/u"), "up\n").unwrap();
        w.ok(&r.join("up"), &["add", "u"]);
        w.ok(&r.join("up"), &["commit", "-q", "-m", "up"]);
        w.ok(
            &m,
            &[
                "fetch",
                "-q",
                r.join("up").to_str().unwrap(),
                "main:refs/remotes/up/main",
            ],
        );
        for args in [
            &["gc", "-q"][..],
            &["repack", "-adq"][..],
            &["commit-graph", "write", "--reachable"][..],
            &["maintenance", "run"][..],
        ] {
            w.ok(&m, args);
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "{}: after {args:?}: {ev:?}", git.display());
        }
        // Positive control in the same repository: a substitution after all that is found.
        std::fs::write(m.join("late"), "late\n").unwrap();
        w.ok(&m, &["add", "late"]);
        let b = w.ok(&m, &["rev-parse", ":late"]);
        let p = w.w.git_dir().join("objects").join(&b[..2]).join(&b[2..]);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, w.evil_bytes()).unwrap();
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
    }
}

/// The end-of-turn hook runs the same step: it blocks the turn and sets the file aside.
#[test]
fn claude_stop_hook_blocks_and_sets_aside() {
    use std::io::Write;
    let w = W::new(&common::git_bin());
    let hook = |w: &W| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
        w.w.env(&mut c);
        let st = w.w.state();
        c.args(["hook", "claude-stop", "--state", st.to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(br#"{"hook_event_name":"Stop","stop_hook_active":false}"#)
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    // Positive control of the hook's quiet answer: nothing changed, no output.
    assert_eq!(hook(&w).trim(), "");
    let (id, p) = w.target();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&p, w.evil_bytes()).unwrap();
    let out = hook(&w);
    assert!(out.contains("\"decision\":\"block\""), "{out}");
    assert!(
        out.contains("object_substituted") && out.contains(&id),
        "{out}"
    );
    assert!(!p.exists(), "the hook restores: the file is set aside");
}

/// `pin` verifies every loose object: a substitution left by a session that ended without
/// its check is not taken as the owner's baseline. It refuses (exit 1, naming the rule);
/// with `--accept-armed` it pins, leaving the object out of the record, so `check` still
/// reports it.
#[test]
fn pin_refuses_a_substituted_object() {
    for git in common::gits() {
        let w = W::new(&git);
        let (id, p) = w.target();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, w.evil_bytes()).unwrap();
        assert_eq!(w.owner_reads_side("owner").as_deref(), Some("evil\n"));
        let st = w.w.state();
        let m = w.w.main();
        let out =
            w.w.wt_check(&["pin", "--state", st.to_str().unwrap(), m.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("GW-OBJ-001") && err.contains(&id[2..]),
            "{err}"
        );
        let out = w.w.wt_check(&[
            "pin",
            "--accept-armed",
            "--state",
            st.to_str().unwrap(),
            m.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(substituted(&ev)[0]["id"], id.as_str());
    }
}
