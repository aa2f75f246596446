//! Index entries git would refuse to add (red-team pass 4, R4-11 to R4-13), end to end on
//! every git of the machine. The agent writes `.git/index` directly (git runs `verify_path`
//! when it adds an entry, not when it loads the index); the owner's ordinary
//! `git checkout -- .` then writes the entry into the git dir or outside the work tree, and
//! `git commit -a` hashes the outside file into the agent's object store.
//!
//! Each case first fires under plain git (the positive control), then: `pin` before the
//! agent's edit, `check` reports `index_entry_invalid` (exit 1), `check --restore` sets the
//! index aside into the quarantine (kept byte for byte), after which the owner's same command
//! writes nothing; `hook claude-stop` blocks.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// A temp world for one git: `home/`, `proj/` (one commit, file `f`), `state/`.
struct W {
    w: common::World,
    git: PathBuf,
}

impl W {
    fn new(git: &Path) -> W {
        let w = common::World {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.home().join(".ssh")).unwrap();
        std::fs::write(w.home().join(".gitconfig"), "").unwrap();
        std::fs::create_dir_all(w.root().join("state")).unwrap();
        let me = W {
            w,
            git: git.to_path_buf(),
        };
        me.ok(&me.w.root(), &["init", "-q", "proj"]);
        std::fs::write(me.w.main().join("f"), "a\n").unwrap();
        me.ok(&me.w.main(), &["add", "f"]);
        me.ok(&me.w.main(), &["commit", "-q", "-m", "init"]);
        me
    }

    fn cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.git);
        self.w.env(&mut c);
        c.arg("-C")
            .arg(dir)
            .args([
                "-c",
                "protocol.file.allow=always",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args);
        c
    }

    /// Run git; its outcome, success or not (the owner's command after a restore may fail).
    fn run(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir, args).output().expect("run git")
    }

    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "{} {args:?} in {}: {}",
            self.git.display(),
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn hash(&self, dir: &Path, content: &str) -> String {
        let mut c = self.cmd(dir, &["hash-object", "-w", "--stdin"]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(content.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// The agent's edit: an entry `real` (mode, content) in the index of the work tree `wt`,
    /// added under a same-length name git accepts and renamed in the file, trailer rehashed.
    /// Returns the index file.
    fn plant(
        &self,
        wt: &Path,
        placeholder: &str,
        real: &str,
        mode: &str,
        content: &str,
    ) -> PathBuf {
        assert_eq!(placeholder.len(), real.len());
        let oid = self.hash(wt, content);
        self.ok(
            wt,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("{mode},{oid},{placeholder}"),
            ],
        );
        let index = PathBuf::from(self.ok(
            wt,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        ));
        let bytes = std::fs::read(&index).unwrap();
        let body = &bytes[..bytes.len() - 20];
        let at: Vec<usize> = body
            .windows(placeholder.len())
            .enumerate()
            .filter(|(_, w)| *w == placeholder.as_bytes())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            at.len(),
            1,
            "placeholder {placeholder} not once in the index"
        );
        let mut body = body.to_vec();
        body[at[0]..at[0] + real.len()].copy_from_slice(real.as_bytes());
        let sum = sha1(&body);
        body.extend_from_slice(&sum);
        std::fs::write(&index, body).unwrap();
        // git loads it and lists the entry as named.
        let ls = self.ok(wt, &["ls-files", "--stage"]);
        assert!(ls.contains(real), "git does not list {real}:\n{ls}");
        index
    }

    fn pin(&self) {
        self.w.pin();
    }

    fn check(&self, restore: bool) -> (i32, Vec<serde_json::Value>) {
        self.w.check(restore)
    }

    fn stop_hook(&self) -> (i32, String) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
        self.w.env(&mut c);
        let st = self.w.state();
        c.args(["hook", "claude-stop", "--state", st.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(br#"{"hook_event_name":"Stop","stop_hook_active":false}"#)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
        )
    }
}

/// SHA-1 (FIPS 180-4) for the index trailer; the test crates carry no hash crate.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in chunk.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

#[test]
fn sha1_matches_the_standard_vectors() {
    let hex = |b: [u8; 20]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(hex(sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    assert_eq!(
        hex(sha1(b"abc")),
        "a9993e364706816aba3e25717850c26c9cd0d89d"
    );
}

/// One attack: where the entry goes and how the owner's command shows it.
struct Case {
    name: &'static str,
    placeholder: &'static str,
    real: &'static str,
    mode: &'static str,
    /// The owner's command after the agent's turn.
    owner: fn(&W),
    /// Did the attack land (the file written, the secret stored)?
    landed: fn(&W) -> bool,
}

const HOOK: &str = "#!/bin/sh\necho FIRED\n";
const SECRET: &str = "-----BEGIN OPENSSH PRIVATE KEY----- owner-secret";

fn discard(w: &W) {
    std::fs::write(w.w.main().join("f"), "changed\n").unwrap();
    let _ = w.run(&w.w.main(), &["checkout", "--", "."]);
}

fn commit_all(w: &W) {
    std::fs::write(w.w.main().join("f"), "more\n").unwrap();
    let _ = w.run(&w.w.main(), &["commit", "-q", "-a", "-m", "owner"]);
}

/// Every object of the store, as `git cat-file --batch-all-objects --batch` prints it.
fn all_objects(w: &W) -> String {
    let out = w.run(&w.w.main(), &["cat-file", "--batch-all-objects", "--batch"]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "R4-11 .git/hooks/pre-commit",
            placeholder: "agit/hooks/pre-commit",
            real: ".git/hooks/pre-commit",
            mode: "100755",
            owner: discard,
            landed: |w| {
                std::fs::read_to_string(w.w.git_dir().join("hooks/pre-commit"))
                    .ok()
                    .as_deref()
                    == Some(HOOK)
            },
        },
        Case {
            name: "R4-12 ../home/.gitconfig",
            placeholder: "aaaaaaa/.gitconfig",
            real: "../home/.gitconfig",
            mode: "100644",
            owner: discard,
            landed: |w| {
                std::fs::read_to_string(w.w.home().join(".gitconfig"))
                    .unwrap_or_default()
                    .contains("fsmonitor")
            },
        },
        Case {
            name: "R4-13 ../home/.ssh/id_test",
            placeholder: "aaaaaaaaaaaaaaaaaaaa",
            real: "../home/.ssh/id_test",
            mode: "100644",
            owner: commit_all,
            landed: |w| all_objects(w).contains(SECRET),
        },
    ]
}

fn content(c: &Case) -> &'static str {
    match c.real {
        ".git/hooks/pre-commit" => HOOK,
        "../home/.gitconfig" => "[core]\n\tfsmonitor = /bin/true\n",
        _ => "placeholder\n",
    }
}

fn setup(git: &Path) -> W {
    let w = W::new(git);
    std::fs::write(w.w.home().join(".ssh/id_test"), format!("{SECRET}\n")).unwrap();
    w
}

fn events_of<'a>(ev: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    ev.iter().filter(|e| e["event"] == kind).collect()
}

#[test]
fn plain_git_writes_the_entries_where_they_point() {
    for git in common::gits() {
        for c in cases() {
            let w = setup(&git);
            w.plant(&w.w.main(), c.placeholder, c.real, c.mode, content(&c));
            assert!(
                !(c.landed)(&w),
                "{} {}: landed before",
                git.display(),
                c.name
            );
            (c.owner)(&w);
            assert!(
                (c.landed)(&w),
                "{} {}: positive control did not fire under plain git",
                git.display(),
                c.name
            );
        }
    }
}

#[test]
fn check_reports_and_restore_sets_the_index_aside() {
    for git in common::gits() {
        for c in cases() {
            let w = setup(&git);
            w.pin();
            let index = w.plant(&w.w.main(), c.placeholder, c.real, c.mode, content(&c));
            let agent = std::fs::read(&index).unwrap();
            let ctx = format!("{} {}", git.display(), c.name);

            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{ctx}: {ev:#?}");
            let found = events_of(&ev, "index_entry_invalid");
            assert_eq!(found.len(), 1, "{ctx}: {ev:#?}");
            assert_eq!(found[0]["path"], index.to_str().unwrap(), "{ctx}");
            assert!(
                found[0]["why"].as_str().unwrap().contains(c.real),
                "{ctx}: {}",
                found[0]
            );
            assert_eq!(
                std::fs::read(&index).unwrap(),
                agent,
                "{ctx}: check alone moved it"
            );

            let (code, ev) = w.check(true);
            assert_eq!(code, 1, "{ctx}: {ev:#?}");
            let q = events_of(&ev, "quarantined");
            let kept = q
                .iter()
                .find(|e| e["path"] == index.to_str().unwrap())
                .unwrap_or_else(|| panic!("{ctx}: index not quarantined: {ev:#?}"));
            let kept = PathBuf::from(kept["quarantine"].as_str().unwrap());
            assert!(kept.starts_with(w.w.root().join("state")), "{ctx}");
            assert_eq!(
                std::fs::read(&kept).unwrap(),
                agent,
                "{ctx}: not kept as is"
            );
            assert!(!index.exists(), "{ctx}: index still in the git dir");

            (c.owner)(&w);
            assert!(!(c.landed)(&w), "{ctx}: landed after check --restore");
            // What the threat model tells the owner: `git reset` rebuilds the index from HEAD.
            w.ok(&w.w.main(), &["reset", "-q"]);
            (c.owner)(&w);
            assert!(!(c.landed)(&w), "{ctx}: landed after reset");
            let (code, ev) = w.check(false);
            assert!(
                events_of(&ev, "index_entry_invalid").is_empty(),
                "{ctx}: after reset {code} {ev:#?}"
            );
        }
    }
}

#[test]
fn the_stop_hook_blocks_on_a_bad_index() {
    for git in common::gits() {
        let w = setup(&git);
        w.pin();
        let index = w.plant(
            &w.w.main(),
            "agit/hooks/pre-commit",
            ".git/hooks/pre-commit",
            "100755",
            HOOK,
        );
        let (code, out) = w.stop_hook();
        assert_eq!(code, 0, "{}: {out}", git.display());
        let v: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {out:?}", git.display()));
        assert_eq!(v["decision"], "block", "{v}");
        assert!(
            v["reason"]
                .as_str()
                .unwrap()
                .contains("index_entry_invalid"),
            "{v}"
        );
        assert!(
            !index.exists(),
            "{}: the hook left the index",
            git.display()
        );
    }
}

/// A linked worktree's index (`.git/worktrees/<id>/index`): an entry `../x` escapes the
/// linked worktree.
#[test]
fn a_linked_worktrees_index_is_checked() {
    for git in common::gits() {
        let w = setup(&git);
        let wt = w.w.root().join("lwt");
        w.ok(
            &w.w.main(),
            &["worktree", "add", "-q", "-b", "l", wt.to_str().unwrap()],
        );
        let ctx = format!("{} linked worktree", git.display());
        // Positive control.
        {
            let w2 = setup(&git);
            let wt2 = w2.w.root().join("lwt");
            w2.ok(
                &w2.w.main(),
                &["worktree", "add", "-q", "-b", "l", wt2.to_str().unwrap()],
            );
            w2.plant(&wt2, "aaaaaaaaa", "../escape", "100644", "x\n");
            let _ = w2.run(&wt2, &["checkout", "--", "."]);
            assert!(
                w2.w.root().join("escape").exists(),
                "{ctx}: positive control did not fire"
            );
        }
        w.pin();
        let index = w.plant(&wt, "aaaaaaaaa", "../escape", "100644", "x\n");
        assert!(index.starts_with(w.w.git_dir().join("worktrees")), "{ctx}");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ctx}: {ev:#?}");
        let found = events_of(&ev, "index_entry_invalid");
        assert_eq!(found.len(), 1, "{ctx}: {ev:#?}");
        assert_eq!(found[0]["path"], index.to_str().unwrap(), "{ctx}");
        assert!(!index.exists(), "{ctx}: not set aside");
        let _ = w.run(&wt, &["checkout", "--", "."]);
        assert!(!w.w.root().join("escape").exists(), "{ctx}: escaped");
    }
}

/// A submodule's index (`.git/modules/<name>/index`): `../.git/hooks/pre-commit` from the
/// submodule's work tree is the superproject's hook.
#[test]
fn a_submodules_index_is_checked() {
    for git in common::gits() {
        let make = || {
            let w = setup(&git);
            let src = w.w.root().join("subsrc");
            w.ok(&w.w.root(), &["init", "-q", "subsrc"]);
            std::fs::write(src.join("g"), "sub\n").unwrap();
            w.ok(&src, &["add", "g"]);
            w.ok(&src, &["commit", "-q", "-m", "sub"]);
            w.ok(
                &w.w.main(),
                &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
            );
            w.ok(&w.w.main(), &["commit", "-q", "-m", "sub"]);
            w
        };
        let ctx = format!("{} submodule", git.display());
        let hook = |w: &W| w.w.git_dir().join("hooks/pre-commit");
        // Positive control.
        {
            let w = make();
            let sub = w.w.main().join("sub");
            w.plant(
                &sub,
                "aa/agit/hooks/pre-commit",
                "../.git/hooks/pre-commit",
                "100755",
                HOOK,
            );
            let _ = w.run(&sub, &["checkout", "--", "."]);
            assert!(hook(&w).exists(), "{ctx}: positive control did not fire");
        }
        let w = make();
        let sub = w.w.main().join("sub");
        w.pin();
        let index = w.plant(
            &sub,
            "aa/agit/hooks/pre-commit",
            "../.git/hooks/pre-commit",
            "100755",
            HOOK,
        );
        assert_eq!(index, w.w.git_dir().join("modules/sub/index"), "{ctx}");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ctx}: {ev:#?}");
        let found = events_of(&ev, "index_entry_invalid");
        assert_eq!(found.len(), 1, "{ctx}: {ev:#?}");
        assert_eq!(found[0]["path"], index.to_str().unwrap(), "{ctx}");
        assert!(!index.exists(), "{ctx}: not set aside");
        let _ = w.run(&sub, &["checkout", "--", "."]);
        assert!(!hook(&w).exists(), "{ctx}: hook written after restore");
    }
}

/// `../shared/realrepos` beside the repository root. Without it the test is ignored with the
/// reason (`build.rs`); under `CI=true` it runs and fails here.
fn realrepos() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realrepos");
    assert!(
        dir.is_dir(),
        "{}: missing (the real repositories must be tested)",
        dir.display()
    );
    dir
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn honest_clones_hold_no_invalid_entry() {
    let dir = realrepos();
    for git in common::gits() {
        for b in ["ripgrep", "pre-commit"] {
            let w = W::new(&git);
            let clone = w.w.main();
            std::fs::remove_dir_all(&clone).unwrap();
            w.ok(
                &w.w.root(),
                &[
                    "clone",
                    "-q",
                    dir.join(format!("{b}.bundle")).to_str().unwrap(),
                    "proj",
                ],
            );
            w.pin();
            let t = Instant::now();
            let (code, ev) = w.check(false);
            eprintln!(
                "{} {b}: check of an honest clone in {:?}",
                git.display(),
                t.elapsed()
            );
            assert!(
                events_of(&ev, "index_entry_invalid").is_empty(),
                "{} {b}: {ev:#?}",
                git.display()
            );
            assert_eq!(code, 0, "{} {b}: {ev:#?}", git.display());
            let (_, v) = audit(&w);
            assert!(gw020(&v).is_empty(), "{} {b}: {v:#}", git.display());
        }
    }
}

/// A 10,000-entry honest index: no finding, and the whole `check` timed (printed; the verify
/// pass alone is timed in `gitward`'s `index_paths` unit tests).
#[test]
fn check_on_a_ten_thousand_entry_index() {
    let git = common::gits().pop().expect("a git");
    let w = W::new(&git);
    let m = w.w.main();
    let oid = w.hash(&m, "x\n");
    let mut c = w.cmd(&m, &["update-index", "--add", "--index-info"]);
    c.stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        let mut s = child.stdin.take().unwrap();
        for i in 0..10_000 {
            writeln!(s, "100644 {oid}\td{:02}/sub/file-{i:05}.txt", i % 100).unwrap();
        }
    }
    assert!(child.wait().unwrap().success());
    w.pin();
    let t = Instant::now();
    let (code, ev) = w.check(false);
    eprintln!("check with a 10,000-entry index: {:?}", t.elapsed());
    assert!(events_of(&ev, "index_entry_invalid").is_empty(), "{ev:#?}");
    assert_eq!(code, 0, "{ev:#?}");
}

fn audit(w: &W) -> (i32, serde_json::Value) {
    let out =
        w.w.wt_check(&["audit", "--format", "json", w.w.main().to_str().unwrap()]);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), v)
}

fn gw020(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "GW020")
        .collect()
}

/// The audit: one GW020 error per index (main, linked worktree's, submodule's), the first
/// entries in the details; none on the same repository before the agent's edit.
#[test]
fn audit_reports_every_index_once() {
    for git in common::gits() {
        let w = setup(&git);
        let src = w.w.root().join("subsrc");
        w.ok(&w.w.root(), &["init", "-q", "subsrc"]);
        std::fs::write(src.join("g"), "sub\n").unwrap();
        w.ok(&src, &["add", "g"]);
        w.ok(&src, &["commit", "-q", "-m", "sub"]);
        w.ok(
            &w.w.main(),
            &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
        );
        w.ok(&w.w.main(), &["commit", "-q", "-m", "sub"]);
        let wt = w.w.root().join("lwt");
        w.ok(
            &w.w.main(),
            &["worktree", "add", "-q", "-b", "l", wt.to_str().unwrap()],
        );
        let ctx = git.display().to_string();
        let (code, v) = audit(&w);
        assert!(gw020(&v).is_empty() && code == 0, "{ctx}: honest: {v:#}");

        let mut want = vec![
            w.plant(
                &w.w.main(),
                "agit/hooks/pre-commit",
                ".git/hooks/pre-commit",
                "100755",
                HOOK,
            ),
            w.plant(&wt, "aaaaaaaaa", "../escape", "100644", "x\n"),
            w.plant(
                &w.w.main().join("sub"),
                "aa/agit/hooks/pre-commit",
                "../.git/hooks/pre-commit",
                "100755",
                HOOK,
            ),
        ];
        // A second bad entry in the main index: still one finding, counted.
        w.plant(&w.w.main(), "aaaaaaa", "/etc/x1", "100644", "x\n");
        let (code, v) = audit(&w);
        assert_eq!(code, 1, "{ctx}: {v:#}");
        let found = gw020(&v);
        let mut got: Vec<PathBuf> = found
            .iter()
            .map(|f| PathBuf::from(f["path"].as_str().unwrap()))
            .collect();
        got.sort();
        want.sort();
        want.dedup();
        assert_eq!(got, want, "{ctx}: {v:#}");
        for f in &found {
            assert_eq!(f["level"], "error", "{ctx}: {f}");
        }
        let main = found
            .iter()
            .find(|f| f["path"] == w.w.git_dir().join("index").to_str().unwrap())
            .unwrap();
        assert_eq!(main["details"]["count"], 2, "{ctx}: {main}");
        let names: Vec<&str> = main["details"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert_eq!(names, [".git/hooks/pre-commit", "/etc/x1"], "{ctx}: {main}");
    }
}

/// A linked worktree's index that is a link, or a FIFO: the one `openat2` that opens an
/// index below the common dir refuses both (no link crossed, the last component included;
/// a FIFO is not a regular file), and the check reports them as the walk to the index
/// always did — never follows the link, never reads the FIFO.
#[test]
fn a_linked_worktrees_index_that_is_a_link_or_a_fifo_is_reported_not_read() {
    let w = common::world();
    w.pin();
    let index = w.git_dir().join("worktrees/other/index");
    let (code, ev) = w.check(false);
    assert_eq!(
        (code, ev.len()),
        (0, 0),
        "positive control: clean before: {ev:?}"
    );
    std::fs::remove_file(&index).unwrap();
    std::os::unix::fs::symlink(w.git_dir().join("index"), &index).unwrap();
    let (code, ev) = w.check(false);
    assert_ne!(code, 0, "{ev:?}");
    assert!(
        ev.iter().any(|e| e["path"] == index.to_str().unwrap()),
        "{ev:?}"
    );
    std::fs::remove_file(&index).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&index)
        .status()
        .unwrap()
        .success());
    let (code, ev) = w.check(false);
    assert_ne!(code, 0, "{ev:?}");
    assert!(
        ev.iter().any(|e| e["path"] == index.to_str().unwrap()),
        "{ev:?}"
    );
}
