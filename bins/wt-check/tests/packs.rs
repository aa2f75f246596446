//! Object substitution through packs (rule GW-OBJ-003), end to end on every git of the
//! machine. git does not verify an object read from a pack against its id: a new pack holding
//! a trusted id with other content, an `.idx` pointing a trusted id at another object's
//! offset, or a `multi-pack-index` entry doing the same makes the owner's `git show` /
//! `git checkout` of trusted history read the agent's content.
//!
//! Every attack first fires under plain git (the positive control), then `check` reports
//! `object_substituted` with `rule: GW-OBJ-003` (exit 1) and `check --restore` sets the files
//! aside, after which git reads the honest object. Honest controls (`repack -a -d`, `gc`, a
//! fetch that keeps a pack, `multi-pack-index write`) stay clean.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

struct W {
    w: common::World,
    git: PathBuf,
}

impl W {
    /// `proj/`: main with commit one (`f` = "hello\n", `g` = "other\n") and commit two (`f`
    /// removed); branch `side` at commit one; everything in one pack (dated in the past, so
    /// any later pack is newer); pinned.
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
        std::fs::write(m.join("g"), "other\n").unwrap();
        me.ok(&m, &["add", "f", "g"]);
        me.ok(&m, &["commit", "-q", "-m", "one"]);
        me.ok(&m, &["branch", "side"]);
        me.ok(&m, &["rm", "-q", "f"]);
        me.ok(&m, &["commit", "-q", "-m", "two"]);
        me.ok(&m, &["repack", "-q", "-a", "-d"]);
        me.ok(&m, &["prune-packed"]);
        for p in me.pack_files() {
            let f = std::fs::File::open(&p).unwrap();
            f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
                .unwrap();
        }
        me.pin();
        me
    }

    fn pack_dir(&self) -> PathBuf {
        self.w.git_dir().join("objects/pack")
    }

    fn pack_files(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.pack_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        v.sort();
        v
    }

    fn with_ext(&self, ext: &str) -> Vec<PathBuf> {
        self.pack_files()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect()
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

    fn run(&self, dir: &Path, args: &[&str]) -> std::process::Output {
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
        c.output().unwrap()
    }

    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            self.git.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// What git reads under `id` (`None` when it cannot).
    fn cat(&self, id: &str) -> Option<String> {
        let out = self.run(&self.w.main(), &["cat-file", "blob", id]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The owner checks `side` out into a fresh worktree and reads `f` there.
    fn owner_reads_side(&self, name: &str) -> Option<String> {
        let wt = self.w.root().join(name);
        let out = self.run(
            &self.w.main(),
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                wt.to_str().unwrap(),
                "side",
            ],
        );
        let f = std::fs::read_to_string(wt.join("f")).ok();
        // Removed again: the check would report the new worktree entry.
        let _ = self.run(
            &self.w.main(),
            &["worktree", "remove", "--force", wt.to_str().unwrap()],
        );
        let _ = self.run(&self.w.main(), &["worktree", "prune"]);
        out.status.success().then_some(f).flatten()
    }

    fn check(&self, restore: bool) -> (i32, Vec<serde_json::Value>) {
        self.w.check(restore)
    }
}

fn sha1(bytes: &[u8]) -> [u8; 20] {
    let mut c = Command::new("sha1sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    c.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = c.wait_with_output().unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    let mut r = [0u8; 20];
    for (i, b) in r.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    r
}

fn unhex(s: &str) -> [u8; 20] {
    let mut r = [0u8; 20];
    for (i, b) in r.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    r
}

/// Replace the trailing SHA-1 of `bytes` by the hash of what precedes it.
fn fix_trailer(bytes: &mut [u8]) {
    let n = bytes.len();
    let s = sha1(&bytes[..n - 20]);
    bytes[n - 20..].copy_from_slice(&s);
}

/// Write `bytes` at `p` as a new file (the agent cannot write git's read-only files in place;
/// it removes and rewrites them).
fn rewrite(p: &Path, bytes: &[u8]) {
    let _ = std::fs::remove_file(p);
    std::fs::write(p, bytes).unwrap();
}

/// A v2 pack index with the id `from` renamed `to` (entries re-sorted, fan-out and trailer
/// rebuilt): what the agent crafts after `git index-pack` named its object by its true id.
fn rename_in_index(idx: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(&idx[..8], &[0xff, b't', b'O', b'c', 0, 0, 0, 2]);
    let n = u32::from_be_bytes(idx[8 + 255 * 4..8 + 256 * 4].try_into().unwrap()) as usize;
    let (ids, crcs, offs) = (1032, 1032 + 20 * n, 1032 + 24 * n);
    let (from, to) = (unhex(from), unhex(to));
    let mut e: Vec<([u8; 20], [u8; 4], [u8; 4])> = (0..n)
        .map(|i| {
            let mut id: [u8; 20] = idx[ids + 20 * i..ids + 20 * i + 20].try_into().unwrap();
            if id == from {
                id = to;
            }
            (
                id,
                idx[crcs + 4 * i..crcs + 4 * i + 4].try_into().unwrap(),
                idx[offs + 4 * i..offs + 4 * i + 4].try_into().unwrap(),
            )
        })
        .collect();
    e.sort();
    let mut out = idx[..8].to_vec();
    for b in 0..256usize {
        let c = e.iter().filter(|x| usize::from(x.0[0]) <= b).count() as u32;
        out.extend_from_slice(&c.to_be_bytes());
    }
    for x in &e {
        out.extend_from_slice(&x.0);
    }
    for x in &e {
        out.extend_from_slice(&x.1);
    }
    for x in &e {
        out.extend_from_slice(&x.2);
    }
    let tail = offs + 4 * n;
    out.extend_from_slice(&idx[tail..]);
    fix_trailer(&mut out);
    out
}

/// A pack holding a blob whose content is `content` under the trusted id `id` (+ its index),
/// made with git in a scratch repository: `pack-objects`, `index-pack`, then the blob's id
/// renamed in the index. With `commit`, honest copies of that commit of `proj` and its tree go
/// in too, so a checkout of it reads them — and then the blob — from this pack (git keeps the
/// pack it last found an object in first).
fn forged_pack(w: &W, content: &str, id: &str, commit: Option<&str>) -> (Vec<u8>, Vec<u8>) {
    let x = w.w.root().join("scratch");
    if !x.exists() {
        w.ok(&w.w.root(), &["init", "-q", "scratch"]);
    }
    std::fs::write(x.join("e"), content).unwrap();
    let e = w.ok(&x, &["hash-object", "-w", "e"]);
    let mut list = vec![e.clone()];
    if let Some(c) = commit {
        for (kind, oid) in [
            (
                "commit",
                w.ok(&w.w.main(), &["rev-parse", &format!("{c}^{{commit}}")]),
            ),
            (
                "tree",
                w.ok(&w.w.main(), &["rev-parse", &format!("{c}^{{tree}}")]),
            ),
        ] {
            let raw = w.run(&w.w.main(), &["cat-file", kind, &oid]).stdout;
            let f = x.join("raw");
            std::fs::write(&f, raw).unwrap();
            let got = w.ok(&x, &["hash-object", "-t", kind, "-w", "--literally", "raw"]);
            assert_eq!(got, oid);
            list.push(oid);
        }
    }
    let mut c = Command::new(&w.git);
    w.w.env(&mut c);
    let mut c = c
        .arg("-C")
        .arg(&x)
        .args(["pack-objects", "-q", "--no-reuse-delta", "--depth=0", "tmp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    c.stdin
        .take()
        .unwrap()
        .write_all((list.join("\n") + "\n").as_bytes())
        .unwrap();
    let out = c.wait_with_output().unwrap();
    let h = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let pack = std::fs::read(x.join(format!("tmp-{h}.pack"))).unwrap();
    let idx = std::fs::read(x.join(format!("tmp-{h}.idx"))).unwrap();
    (pack, rename_in_index(&idx, &e, id))
}

fn substituted(events: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event"] == "object_substituted" && e["rule"] == "GW-OBJ-003")
        .collect()
}

/// A new pack holding the trusted blob's id with the agent's content: git reads it (control),
/// `check` reports the pack, `--restore` moves its files aside, git reads the honest blob.
#[test]
fn a_new_pack_with_a_substituted_blob_is_reported_and_set_aside() {
    for git in common::gits() {
        let w = W::new(&git);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let (pack, idx) = forged_pack(&w, "evil!\n", &id, Some("side"));
        let name = "pack-0000000000000000000000000000000000000001";
        std::fs::write(w.pack_dir().join(format!("{name}.pack")), &pack).unwrap();
        std::fs::write(w.pack_dir().join(format!("{name}.idx")), &idx).unwrap();
        // Positive control: plain git reads the agent's content under the trusted id.
        assert_eq!(
            w.cat(&id).as_deref(),
            Some("evil!\n"),
            "{}: the substitution did not fire",
            git.display()
        );
        assert_eq!(w.ok(&w.w.main(), &["show", &id]), "evil!");
        // The owner's checkout of the trusted commit writes it (the pack also holds honest
        // copies of the commit and its tree, so git reads them, and then the blob, from it).
        assert_eq!(
            w.owner_reads_side("owner1").as_deref(),
            Some("evil!\n"),
            "{}: the checkout did not read the forged pack",
            git.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        let s = substituted(&ev);
        assert_eq!(s.len(), 1, "{ev:?}");
        assert_eq!(s[0]["pack"], name);
        assert_eq!(s[0]["change"], "pack");
        assert_eq!(s[0]["action"], "report");
        assert!(w.pack_dir().join(format!("{name}.pack")).exists());
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s[0]["action"], "quarantined", "{ev:?}");
        assert_eq!(s[0]["missing_count"], 0, "the honest copy is still there");
        assert_eq!(s[0]["quarantine"].as_array().unwrap().len(), 2);
        assert!(!w.pack_dir().join(format!("{name}.pack")).exists());
        assert_eq!(w.cat(&id).as_deref(), Some("hello\n"));
        assert_eq!(w.ok(&w.w.main(), &["show", &id]), "hello");
        assert_eq!(w.owner_reads_side("owner2").as_deref(), Some("hello\n"));
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:?}");
    }
}

/// A pin after the agent's session verifies what is new since the previous pin of the same
/// state path: the forged pack refuses it (exit 1, naming GW-OBJ-003); the first pin of a
/// state path trusts the owner's packs as they are.
#[test]
fn a_later_pin_verifies_new_packs() {
    for git in common::gits() {
        let w = W::new(&git);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let (pack, idx) = forged_pack(&w, "evil!\n", &id, None);
        let name = "pack-0000000000000000000000000000000000000004";
        std::fs::write(w.pack_dir().join(format!("{name}.pack")), &pack).unwrap();
        std::fs::write(w.pack_dir().join(format!("{name}.idx")), &idx).unwrap();
        let st = w.w.state();
        let out = w.w.wt_check(&[
            "pin",
            "--state",
            st.to_str().unwrap(),
            w.w.main().to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("GW-OBJ-003") && err.contains(name), "{err}");
        // A fresh state path: the first pin trusts (positive control of the chain's start),
        // once the files are past the racy margin (within it, a first pin verifies them:
        // `Stamp::recordable`).
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let st2 = w.w.root().join("state/other.json");
        let out = w.w.wt_check(&[
            "pin",
            "--state",
            st2.to_str().unwrap(),
            w.w.main().to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The agent plants its pack and then writes a multi-pack-index over every pack (git picks the
/// newest pack's copy of an id): the multi-pack-index agrees with the forged pack's index, the
/// pack is what fails; `--restore` moves the pack and the multi-pack-index naming it (left,
/// it would keep git from the honest copy), after which git reads the honest blob.
#[test]
fn a_forged_pack_under_a_multi_pack_index_is_set_aside_with_it() {
    for git in common::gits() {
        let w = W::new(&git);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let (pack, idx) = forged_pack(&w, "evil!\n", &id, None);
        let name = "pack-0000000000000000000000000000000000000005";
        std::fs::write(w.pack_dir().join(format!("{name}.pack")), &pack).unwrap();
        std::fs::write(w.pack_dir().join(format!("{name}.idx")), &idx).unwrap();
        w.ok(&w.w.main(), &["multi-pack-index", "write"]);
        assert_eq!(w.cat(&id).as_deref(), Some("evil!\n"), "{}", git.display());
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s.len(), 1, "{ev:?}");
        assert_eq!(s[0]["pack"], name);
        assert!(!w.pack_dir().join("multi-pack-index").exists(), "{ev:?}");
        assert_eq!(w.cat(&id).as_deref(), Some("hello\n"));
        assert_eq!(w.check(false).0, 0);
    }
}

/// The honest pack's `.idx` patched: the trusted blob's offset swapped with another blob's
/// (trailer fixed). git reads the other blob under the trusted id.
#[test]
fn an_index_patched_to_another_offset_is_reported() {
    for git in common::gits() {
        let w = W::new(&git);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let other = w.ok(&w.w.main(), &["rev-parse", "side:g"]);
        let idx_p = w.with_ext("idx").remove(0);
        let mut b = std::fs::read(&idx_p).unwrap();
        let n = u32::from_be_bytes(b[8 + 255 * 4..8 + 256 * 4].try_into().unwrap()) as usize;
        let pos = |h: &str| {
            let want = unhex(h);
            (0..n)
                .find(|i| b[1032 + 20 * i..1032 + 20 * i + 20] == want)
                .unwrap()
        };
        let (i, j) = (pos(&id), pos(&other));
        let off = 1032 + 24 * n;
        let (x, y) = (off + 4 * i, off + 4 * j);
        let t: Vec<u8> = b[x..x + 4].to_vec();
        b.copy_within(y..y + 4, x);
        b[y..y + 4].copy_from_slice(&t);
        fix_trailer(&mut b);
        rewrite(&idx_p, &b);
        assert_eq!(
            w.cat(&id).as_deref(),
            Some("other\n"),
            "{}: the patched index did not fire",
            git.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        let s = substituted(&ev);
        assert_eq!(s[0]["change"], "pack", "{ev:?}");
        // Restore moves the whole pack aside: the ids it held are now missing.
        let (_, ev) = w.check(true);
        let s = substituted(&ev);
        assert_eq!(s[0]["action"], "quarantined");
        assert!(s[0]["missing_count"].as_u64().unwrap() > 0, "{ev:?}");
        assert_ne!(w.cat(&id).as_deref(), Some("other\n"));
    }
}

/// The same patch written in place (`chmod u+w`, same size, `chmod a-w`, `mtime` set back):
/// same inode, size and `mtime` as recorded, but `ctime` moved; reported.
#[test]
fn an_index_rewritten_in_place_with_its_mtime_set_back_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    for git in common::gits() {
        let w = W::new(&git);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let other = w.ok(&w.w.main(), &["rev-parse", "side:g"]);
        let idx_p = w.with_ext("idx").remove(0);
        let before = std::fs::metadata(&idx_p).unwrap().modified().unwrap();
        let mut b = std::fs::read(&idx_p).unwrap();
        let n = u32::from_be_bytes(b[8 + 255 * 4..8 + 256 * 4].try_into().unwrap()) as usize;
        let pos = |b: &[u8], h: &str| {
            let want = unhex(h);
            (0..n)
                .find(|i| b[1032 + 20 * i..1032 + 20 * i + 20] == want)
                .unwrap()
        };
        let (i, j) = (pos(&b, &id), pos(&b, &other));
        let off = 1032 + 24 * n;
        let (x, y) = (off + 4 * i, off + 4 * j);
        let t: Vec<u8> = b[x..x + 4].to_vec();
        b.copy_within(y..y + 4, x);
        b[y..y + 4].copy_from_slice(&t);
        fix_trailer(&mut b);
        std::fs::set_permissions(&idx_p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&idx_p, &b).unwrap();
        std::fs::set_permissions(&idx_p, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::File::open(&idx_p)
            .unwrap()
            .set_modified(before)
            .unwrap();
        assert_eq!(w.cat(&id).as_deref(), Some("other\n"), "{}", git.display());
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        assert_eq!(substituted(&ev)[0]["change"], "pack");
    }
}

/// Offsets of the chunks of a multi-pack-index (id → (start, end)).
fn midx_chunks(b: &[u8]) -> Vec<([u8; 4], usize, usize)> {
    assert_eq!(&b[..4], b"MIDX");
    let n = b[6] as usize;
    let mut v = Vec::new();
    for k in 0..n {
        let at = 12 + 12 * k;
        let id: [u8; 4] = b[at..at + 4].try_into().unwrap();
        let s = u64::from_be_bytes(b[at + 4..at + 12].try_into().unwrap()) as usize;
        let e = u64::from_be_bytes(b[at + 16..at + 24].try_into().unwrap()) as usize;
        v.push((id, s, e));
    }
    v
}

/// `git multi-pack-index write`, then the trusted id's entry patched to the other blob's
/// offset (checksum fixed): git reads the other blob through the MIDX.
#[test]
fn a_forged_multi_pack_index_is_reported_and_set_aside() {
    for git in common::gits() {
        let w = W::new(&git);
        w.ok(&w.w.main(), &["multi-pack-index", "write"]);
        // The MIDX written by the owner is honest: a pin and a check take it.
        w.pin();
        assert_eq!(w.check(false).0, 0);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let other = w.ok(&w.w.main(), &["rev-parse", "side:g"]);
        let p = w.pack_dir().join("multi-pack-index");
        let mut b = std::fs::read(&p).unwrap();
        let ch = midx_chunks(&b);
        let find = |c: &[u8; 4]| ch.iter().find(|x| &x.0 == c).copied().unwrap();
        let (_, l0, l1) = find(b"OIDL");
        let (_, o0, _) = find(b"OOFF");
        let n = (l1 - l0) / 20;
        let pos = |h: &str| {
            let want = unhex(h);
            (0..n)
                .find(|i| b[l0 + 20 * i..l0 + 20 * i + 20] == want)
                .unwrap()
        };
        let (i, j) = (pos(&id), pos(&other));
        let src: Vec<u8> = b[o0 + 8 * j..o0 + 8 * j + 8].to_vec();
        b[o0 + 8 * i..o0 + 8 * i + 8].copy_from_slice(&src);
        fix_trailer(&mut b);
        rewrite(&p, &b);
        assert_eq!(
            w.cat(&id).as_deref(),
            Some("other\n"),
            "{}: the forged multi-pack-index did not fire",
            git.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        let s = substituted(&ev);
        assert_eq!(s.len(), 1, "{ev:?}");
        assert_eq!(s[0]["change"], "multi-pack-index");
        let (_, ev) = w.check(true);
        assert_eq!(substituted(&ev)[0]["action"], "quarantined");
        assert!(!p.exists());
        assert_eq!(w.cat(&id).as_deref(), Some("hello\n"));
        assert_eq!(w.check(false).0, 0);
    }
}

/// git 2.47's incremental multi-pack-index: a layer patched like the single file above (the
/// layer renamed after its new checksum and the chain rewritten to name it). Skipped on a git
/// without `--incremental`.
#[test]
fn a_forged_incremental_multi_pack_index_layer_is_reported() {
    for git in common::gits() {
        let w = W::new(&git);
        let m = w.w.main();
        if !w
            .run(&m, &["multi-pack-index", "write", "--incremental"])
            .status
            .success()
        {
            eprintln!(
                "SKIPPED on {}: no incremental multi-pack-index",
                git.display()
            );
            continue;
        }
        assert!(!w.pack_dir().join("multi-pack-index").exists());
        assert_eq!(w.check(false).0, 0, "honest incremental write");
        let d = w.pack_dir().join("multi-pack-index.d");
        let chain = std::fs::read_to_string(d.join("multi-pack-index-chain")).unwrap();
        let layer_hash = chain.lines().last().unwrap().to_owned();
        let layer = d.join(format!("multi-pack-index-{layer_hash}.midx"));
        let id = w.ok(&m, &["rev-parse", "side:f"]);
        let other = w.ok(&m, &["rev-parse", "side:g"]);
        let mut b = std::fs::read(&layer).unwrap();
        let ch = midx_chunks(&b);
        let find = |c: &[u8; 4]| ch.iter().find(|x| &x.0 == c).copied().unwrap();
        let (_, l0, l1) = find(b"OIDL");
        let (_, o0, _) = find(b"OOFF");
        let n = (l1 - l0) / 20;
        let pos = |h: &str| {
            let want = unhex(h);
            (0..n)
                .find(|i| b[l0 + 20 * i..l0 + 20 * i + 20] == want)
                .unwrap()
        };
        let (i, j) = (pos(&id), pos(&other));
        let src: Vec<u8> = b[o0 + 8 * j..o0 + 8 * j + 8].to_vec();
        b[o0 + 8 * i..o0 + 8 * i + 8].copy_from_slice(&src);
        fix_trailer(&mut b);
        let new_hash: String = b[b.len() - 20..]
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect();
        std::fs::remove_file(&layer).unwrap();
        std::fs::write(d.join(format!("multi-pack-index-{new_hash}.midx")), &b).unwrap();
        std::fs::remove_file(d.join("multi-pack-index-chain")).unwrap();
        std::fs::write(
            d.join("multi-pack-index-chain"),
            chain.replace(&layer_hash, &new_hash),
        )
        .unwrap();
        assert_eq!(
            w.cat(&id).as_deref(),
            Some("other\n"),
            "{}: the forged layer did not fire",
            git.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s.len(), 1, "{ev:?}");
        assert_eq!(s[0]["change"], "multi-pack-index");
        let (_, ev) = w.check(true);
        assert_eq!(substituted(&ev)[0]["action"], "quarantined");
        assert!(!d.exists());
        assert_eq!(w.cat(&id).as_deref(), Some("hello\n"));
        assert_eq!(w.check(false).0, 0);
    }
}

/// A zlib stream of one stored block holding `raw`.
fn stored(raw: &[u8]) -> Vec<u8> {
    let len = u16::try_from(raw.len()).unwrap();
    let mut out = vec![0x78, 0x01, 0x01];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(raw);
    let (mut a, mut b) = (1u32, 0u32);
    for &x in raw {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

/// An honest, pinned multi-pack-index left alone while the agent rewrites the `.pack` it
/// covers, its own blob at the trusted id's offset (the `.idx` untouched): git reads it through
/// the multi-pack-index (control); the pack changed, so it is verified against its index.
#[test]
fn a_pack_rewritten_under_an_unchanged_multi_pack_index_is_reported() {
    for git in common::gits() {
        let w = W::new(&git);
        let m = w.w.main();
        w.ok(&m, &["multi-pack-index", "write"]);
        w.pin();
        assert_eq!(w.check(false).0, 0);
        let id = w.ok(&m, &["rev-parse", "side:f"]);
        let idx_p = w.with_ext("idx").remove(0);
        let pack_p = w.with_ext("pack").remove(0);
        let pack = std::fs::read(&pack_p).unwrap();
        // `git show-index`: "<offset> <id> (<crc>)" per object.
        // Run in the test's repository: from the test's own working folder git would find
        // the checkout of this project (another owner's under CI: "dubious ownership", an
        // empty listing; or another object format) and read the index by its rules.
        let mut c = Command::new(&w.git);
        w.w.env(&mut c);
        let out = c
            .arg("-C")
            .arg(w.w.main())
            .arg("show-index")
            .stdin(std::fs::File::open(&idx_p).unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git show-index: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut offs: Vec<(usize, String)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let mut it = l.split(' ');
                (
                    it.next().unwrap().parse().unwrap(),
                    it.next().unwrap().to_owned(),
                )
            })
            .collect();
        offs.sort();
        let k = offs.iter().position(|(_, i)| *i == id).unwrap();
        let at = offs[k].0;
        let end = offs.get(k + 1).map_or(pack.len() - 20, |x| x.0);
        let mut evil = pack[..at].to_vec();
        evil.push(0x36); // blob, size 6
        evil.extend_from_slice(&stored(b"evil!\n"));
        evil.extend_from_slice(&pack[end..]);
        rewrite(&pack_p, &evil);
        assert_eq!(
            w.cat(&id).as_deref(),
            Some("evil!\n"),
            "{}: control",
            git.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:?}", git.display());
        let s = substituted(&ev);
        assert!(s.iter().any(|e| e["change"] == "pack"), "{ev:?}");
    }
}

/// The forged pack linked in from outside (git follows the links), and a FIFO at an index
/// name: reported as not regular files, never followed nor opened blocking.
#[test]
fn links_and_fifos_at_pack_names_are_reported() {
    for git in common::gits() {
        // The forged pack outside, linked in: git follows the links (control).
        let w = W::new(&git);
        let id = w.ok(&w.w.main(), &["rev-parse", "side:f"]);
        let (pack, idx) = forged_pack(&w, "evil!\n", &id, None);
        let out = w.w.root().join("outside");
        std::fs::create_dir_all(&out).unwrap();
        let name = "pack-0000000000000000000000000000000000000002";
        for (ext, bytes) in [("pack", &pack), ("idx", &idx)] {
            let o = out.join(format!("{name}.{ext}"));
            std::fs::write(&o, bytes).unwrap();
            std::os::unix::fs::symlink(&o, w.pack_dir().join(format!("{name}.{ext}"))).unwrap();
        }
        assert_eq!(w.cat(&id).as_deref(), Some("evil!\n"), "{}", git.display());
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s.len(), 2, "{ev:?}");
        assert!(s.iter().all(|e| e["change"] == "not-a-file"));
        let (_, ev) = w.check(true);
        assert!(substituted(&ev)
            .iter()
            .all(|e| e["action"] == "quarantined"));
        assert!(out.join(format!("{name}.pack")).exists(), "never followed");
        assert_eq!(w.cat(&id).as_deref(), Some("hello\n"));

        // A name that is not UTF-8: git reads it (control), it is reported and moved aside.
        let w = W::new(&git);
        use std::os::unix::ffi::OsStrExt;
        for (ext, bytes) in [("pack", &pack), ("idx", &idx)] {
            let n = [b"pack-\xff.".as_slice(), ext.as_bytes()].concat();
            std::fs::write(w.pack_dir().join(std::ffi::OsStr::from_bytes(&n)), bytes).unwrap();
        }
        assert_eq!(w.cat(&id).as_deref(), Some("evil!\n"), "{}", git.display());
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:?}");
        let s = substituted(&ev);
        assert_eq!(s.len(), 2, "{ev:?}");
        assert!(s.iter().all(|e| e["action"] == "quarantined"), "{ev:?}");
        assert_eq!(w.cat(&id).as_deref(), Some("hello\n"));

        // A FIFO at an index name: reported (never opened blocking).
        let w = W::new(&git);
        let f = w
            .pack_dir()
            .join("pack-0000000000000000000000000000000000000003.idx");
        nix::unistd::mkfifo(&f, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        // Exit 2: the commit scan is skipped while a FIFO is in the git dir.
        let (code, ev) = w.check(false);
        assert_ne!(code, 0, "{ev:?}");
        assert!(
            substituted(&ev)
                .iter()
                .any(|e| e["why"].as_str().unwrap().contains("fifo")),
            "{ev:?}"
        );
    }
}

/// Honest pack writes after the pin: every one verifies, the check is clean, and a pin after
/// it records them.
#[test]
fn honest_repack_gc_fetch_and_midx_are_clean() {
    for git in common::gits() {
        let w = W::new(&git);
        let m = w.w.main();
        let more = |k: &str| {
            std::fs::write(m.join(k), format!("{k}\n")).unwrap();
            w.ok(&m, &["add", k]);
            w.ok(&m, &["commit", "-q", "-m", k]);
        };
        more("h1");
        w.ok(&m, &["repack", "-q", "-a", "-d"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "repack -a -d: {ev:?}");
        more("h2");
        w.ok(
            &m,
            &[
                "-c",
                "gc.auto=1",
                "-c",
                "gc.autoPackLimit=1",
                "gc",
                "--auto",
                "-q",
            ],
        );
        w.ok(&m, &["gc", "-q"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "gc: {ev:?}");
        // A fetch that keeps the pack it receives.
        let up = w.w.root().join("up");
        w.ok(
            &w.w.root(),
            &["clone", "-q", m.to_str().unwrap(), up.to_str().unwrap()],
        );
        std::fs::write(up.join("u"), "upstream\n").unwrap();
        w.ok(&up, &["add", "u"]);
        w.ok(&up, &["commit", "-q", "-m", "u"]);
        let before = w.with_ext("pack").len();
        w.ok(
            &m,
            &[
                "-c",
                "fetch.unpackLimit=1",
                "fetch",
                "-q",
                up.to_str().unwrap(),
                "main:up",
            ],
        );
        assert!(w.with_ext("pack").len() > before, "the fetch kept a pack");
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "fetch: {ev:?}");
        w.ok(&m, &["multi-pack-index", "write"]);
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "multi-pack-index write: {ev:?}");
        if w.run(&m, &["multi-pack-index", "write", "--incremental"])
            .status
            .success()
        {
            more("h3");
            w.ok(&m, &["repack", "-q", "-d"]);
            w.ok(&m, &["multi-pack-index", "write", "--incremental"]);
            let (code, ev) = w.check(false);
            assert_eq!(code, 0, "multi-pack-index write --incremental: {ev:?}");
        }
        // A pin after honest work records it; the check stays clean.
        w.pin();
        assert_eq!(w.check(false).0, 0);
    }
}

/// Real repositories: each bundle of `../shared/realrepos` cloned, pinned, `git repack -a -d
/// -f` (one new pack of everything), checked: clean, with its time printed.
#[test]
fn real_repository_full_repack_is_clean() {
    for name in ["ripgrep.bundle", "pre-commit.bundle"] {
        let rel = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realrepos");
        let bundle = [rel, PathBuf::from("/work/shared/realrepos")]
            .into_iter()
            .map(|d| d.join(name))
            .find(|b| b.exists());
        let Some(bundle) = bundle else {
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{name} missing");
            eprintln!("SKIPPED: ../shared/realrepos/{name} missing");
            continue;
        };
        let git = common::git_bin();
        let w = common::World {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.home()).unwrap();
        std::fs::write(w.home().join(".gitconfig"), "").unwrap();
        std::fs::create_dir_all(w.root().join("state")).unwrap();
        let w = W { w, git };
        w.ok(
            &w.w.root(),
            &["clone", "-q", bundle.to_str().unwrap(), "proj"],
        );
        w.pin();
        w.ok(&w.w.main(), &["repack", "-q", "-a", "-d", "-f"]);
        let t = std::time::Instant::now();
        let (code, ev) = w.check(false);
        eprintln!(
            "check after repack -a -d -f of {}: {:?}",
            bundle.display(),
            t.elapsed()
        );
        assert_eq!(code, 0, "{ev:?}");
    }
}
