//! An index entry whose stat data hides the agent's content (sixteenth red-team pass, R16-12):
//! the agent writes its text into a tracked file, stages it, and patches the entry's object id
//! back to the owner's blob (fixing the index checksum). git then takes the file as unchanged
//! from its stat data and never reads it: `status` and `diff` show nothing and `reset --hard`
//! leaves the agent's text in place (positive control on both gits). `check` reports the
//! entry (`index_stat_forged`, error, exit 1); `--restore` moves the file's `ctime`, after
//! which git reads it and shows the change.

mod common;

use std::path::Path;
use std::process::Command;

fn git(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> String {
    let mut c = Command::new(g);
    w.env(&mut c);
    let out = c.arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "{} {args:?}", g.display());
    String::from_utf8(out.stdout).unwrap()
}

/// Put `honest` (40 hex) as the object id of the entry named `name` in the v2 index at
/// `index`, and rewrite the trailing checksum (SHA-1 of everything before it).
fn patch_entry_id(index: &Path, name: &str, honest: &str) {
    let mut b = std::fs::read(index).unwrap();
    let id_at = entry_at(&b, name) + 40;
    let id: Vec<u8> = (0..20)
        .map(|i| u8::from_str_radix(&honest[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    b[id_at..id_at + 20].copy_from_slice(&id);
    fix_checksum(index, &mut b);
    std::fs::write(index, &b).unwrap();
}

/// The entry named `name`'s offset in the version 2 or 3 index bytes `b` (its first byte:
/// ctime). The entries are walked as git lays them out (62 bytes of stat data, id and flags,
/// 2 more with the extended flag, the name, NUL padding to a multiple of 8), not searched
/// for: the name's bytes can stand inside another entry's stat data or id.
fn entry_at(b: &[u8], name: &str) -> usize {
    assert_eq!(&b[..4], b"DIRC", "an index");
    let version = u32::from_be_bytes(b[4..8].try_into().unwrap());
    assert!(version == 2 || version == 3, "index version {version}");
    let count = u32::from_be_bytes(b[8..12].try_into().unwrap());
    let mut at = 12;
    for _ in 0..count {
        let flags = u16::from_be_bytes(b[at + 60..at + 62].try_into().unwrap());
        let fixed = if flags & 0x4000 != 0 { 64 } else { 62 };
        let start = at + fixed;
        let len = b[start..]
            .iter()
            .position(|&c| c == 0)
            .expect("NUL-ended name");
        if &b[start..start + len] == name.as_bytes() {
            return at;
        }
        at += (fixed + len + 8) & !7;
    }
    panic!("no entry {name} in the index");
}

/// Rewrite the trailing checksum of the index bytes `b` (SHA-1 of everything before it).
fn fix_checksum(index: &Path, b: &mut [u8]) {
    let body = b.len() - 20;
    let tmp = index.with_extension("body");
    std::fs::write(&tmp, &b[..body]).unwrap();
    let sum = Command::new("sha1sum").arg(&tmp).output().unwrap();
    std::fs::remove_file(&tmp).unwrap();
    let hex = String::from_utf8(sum.stdout).unwrap();
    for i in 0..20 {
        b[body + i] = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
}

/// Set the entry `name`'s stat data to the file's at `file` (ctime, mtime, dev, ino, uid,
/// gid, size; the mode kept) and its id to `id`, and fix the checksum.
fn forge_entry(index: &Path, name: &str, id: &str, file: &Path) {
    use std::os::unix::fs::MetadataExt;
    let mut b = std::fs::read(index).unwrap();
    let at = entry_at(&b, name);
    let m = std::fs::metadata(file).unwrap();
    let be = |v: u64| (v as u32).to_be_bytes();
    let fields: [(usize, [u8; 4]); 9] = [
        (0, be(m.ctime() as u64)),
        (4, be(m.ctime_nsec() as u64)),
        (8, be(m.mtime() as u64)),
        (12, be(m.mtime_nsec() as u64)),
        (16, be(m.dev())),
        (20, be(m.ino())),
        (28, be(u64::from(m.uid()))),
        (32, be(u64::from(m.gid()))),
        (36, be(m.size())),
    ];
    for (off, v) in fields {
        b[at + off..at + off + 4].copy_from_slice(&v);
    }
    for i in 0..20 {
        b[at + 40 + i] = u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap();
    }
    fix_checksum(index, &mut b);
    std::fs::write(index, &b).unwrap();
}

#[test]
fn stat_data_that_hides_the_agents_content_is_reported_and_undone() {
    for g in common::gits() {
        let w = common::world();
        let m = w.main();
        w.pin();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let honest = git(&w, &g, &m, &["rev-parse", "HEAD:README"]);
        std::fs::write(m.join("README"), "evil\n").unwrap();
        git(&w, &g, &m, &["add", "README"]);
        // Older than the index, so the entry is not racily clean.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        git(&w, &g, &m, &["update-index", "--refresh"]);
        patch_entry_id(&w.git_dir().join("index"), "README", honest.trim());
        // Positive control: git sees nothing and does not undo it.
        assert_eq!(
            git(&w, &g, &m, &["status", "--porcelain", "-uno"]),
            "",
            "{}",
            g.display()
        );
        assert_eq!(git(&w, &g, &m, &["diff", "HEAD"]), "");
        git(&w, &g, &m, &["reset", "-q", "--hard"]);
        assert_eq!(std::fs::read_to_string(m.join("README")).unwrap(), "evil\n");
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        let e = ev
            .iter()
            .find(|e| e["event"] == "index_stat_forged")
            .unwrap_or_else(|| panic!("not reported: {ev:#?}"));
        assert_eq!(e["path"], m.join("README").to_str().unwrap());
        assert_eq!(e["level"], "error");
        assert_eq!(e["entry_id"], honest.trim());
        let (_, ev) = w.check(true);
        assert!(
            ev.iter()
                .any(|e| e["event"] == "index_stat_forged" && e["action"] == "stat_invalidated"),
            "{ev:#?}"
        );
        assert_eq!(
            git(&w, &g, &m, &["status", "--porcelain", "-uno"]),
            " M README\n",
            "{}: git sees the change after --restore",
            g.display()
        );
    }
}

/// Honest: files edited, staged, refreshed and committed during the turn are not reported.
#[test]
fn honest_edits_and_commits_are_clean() {
    for g in common::gits() {
        let w = common::world();
        let m = w.main();
        // The conversion named where git reads it (the repository's config): a CRLF file
        // hashes as LF there. Without it a CRLF file must hash as it is (R19-2).
        w.git(&m, &["config", "core.autocrlf", "input"]);
        w.pin();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(m.join("README"), "changed\n").unwrap();
        std::fs::write(m.join("crlf.txt"), "a\r\nb\r\n").unwrap();
        git(&w, &g, &m, &["add", "README", "crlf.txt"]);
        git(&w, &g, &m, &["commit", "-qm", "turn"]);
        std::fs::write(m.join("README"), "changed again\n").unwrap();
        // `--refresh` exits 1 when a file needs updating (README does): its status is not
        // the point, the index it writes is.
        let mut c = Command::new(&g);
        w.env(&mut c);
        let _ = c
            .arg("-C")
            .arg(&m)
            .args(["update-index", "-q", "--refresh"])
            .output();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let _ = git(&w, &g, &m, &["status", "--porcelain"]);
        let (code, ev) = w.check(false);
        assert!(
            !ev.iter().any(|e| e["event"] == "index_stat_forged"),
            "{}: {ev:#?}",
            g.display()
        );
        assert_ne!(code, 2, "{ev:#?}");
    }
}

/// The other ways an index hides a work-tree file (eighteenth red-team pass): the
/// `skip-worktree` bit (R18-1: git never looks at the file; `reset --hard` keeps it), and an
/// entry whose `mtime` nanoseconds differ from the file's (R18-2: git compares seconds only,
/// `check` had taken the file as one git re-reads). Positive controls on both gits.
#[test]
fn flags_and_nanoseconds_do_not_hide_the_agents_content() {
    for g in common::gits() {
        for variant in ["skip-worktree", "nsec"] {
            let w = common::world();
            let m = w.main();
            w.pin();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let honest = git(&w, &g, &m, &["rev-parse", "HEAD:README"]);
            let index = w.git_dir().join("index");
            if variant == "skip-worktree" {
                std::fs::write(m.join("README"), "evil\n").unwrap();
                git(&w, &g, &m, &["update-index", "--skip-worktree", "README"]);
            } else {
                std::fs::write(m.join("README"), "evil\n").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1100));
                forge_entry(&index, "README", honest.trim(), &m.join("README"));
                let mut b = std::fs::read(&index).unwrap();
                let at = entry_at(&b, "README");
                b[at + 12..at + 16].copy_from_slice(&12345u32.to_be_bytes());
                fix_checksum(&index, &mut b);
                std::fs::write(&index, &b).unwrap();
            }
            // Positive control: git shows nothing and `reset --hard` keeps the text.
            assert_eq!(
                git(&w, &g, &m, &["status", "--porcelain", "-uno"]),
                "",
                "{} {variant}",
                g.display()
            );
            git(&w, &g, &m, &["reset", "-q", "--hard"]);
            assert_eq!(
                std::fs::read_to_string(m.join("README")).unwrap(),
                "evil\n",
                "{} {variant}",
                g.display()
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {variant}: {ev:#?}", g.display());
            assert!(
                ev.iter().any(|e| e["event"] == "index_stat_forged"
                    && e["path"] == m.join("README").to_str().unwrap()),
                "{variant}: {ev:#?}"
            );
        }
    }
}

/// A forged cache-tree (R18-3): the agent stages its script, lets `write-tree` cache its
/// folder's tree, then puts the owner's file and entry back (real stat data). `status`,
/// `diff` and `diff --cached` are clean; the owner's next `commit -a` of another change
/// commits the agent's script (positive control, both gits). `check` reports the cached tree.
#[test]
fn a_cached_tree_the_entries_do_not_make_is_reported() {
    for g in common::gits() {
        let w = common::world();
        let m = w.main();
        std::fs::create_dir_all(m.join("scripts")).unwrap();
        std::fs::write(m.join("scripts/build.sh"), "echo build\n").unwrap();
        w.git(&m, &["add", "scripts/build.sh"]);
        w.git(&m, &["commit", "-qm", "scripts"]);
        w.pin();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let honest = git(&w, &g, &m, &["rev-parse", "HEAD:scripts/build.sh"]);
        std::fs::write(m.join("scripts/build.sh"), "echo PWNED\n").unwrap();
        git(&w, &g, &m, &["add", "scripts/build.sh"]);
        git(&w, &g, &m, &["write-tree"]);
        std::fs::write(m.join("scripts/build.sh"), "echo build\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        forge_entry(
            &w.git_dir().join("index"),
            "scripts/build.sh",
            honest.trim(),
            &m.join("scripts/build.sh"),
        );
        // Positive control, in a copy: clean to every look, the next commit carries it.
        let copy = w.root().join("copy");
        assert!(Command::new("cp")
            .arg("-a")
            .arg(&m)
            .arg(&copy)
            .status()
            .unwrap()
            .success());
        assert_eq!(git(&w, &g, &copy, &["status", "--porcelain", "-uno"]), "");
        assert_eq!(git(&w, &g, &copy, &["diff", "--cached"]), "");
        std::fs::write(copy.join("README"), "owner's change\n").unwrap();
        git(&w, &g, &copy, &["commit", "-qam", "owner"]);
        assert_eq!(
            git(&w, &g, &copy, &["show", "HEAD:scripts/build.sh"]),
            "echo PWNED\n",
            "{}: the cached tree did not reach the commit",
            g.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(
            ev.iter()
                .any(|e| e["event"] == "index_stat_forged" && e["change"] == "cache_tree"),
            "{ev:#?}"
        );
    }
}

/// Where the attributes name a filter (git LFS: the blob is a pointer, the work tree holds the
/// smudged content, and git records the smudged file's stat), a file that does not hash to its
/// entry cannot be judged without running the filter: one warning for the index, with the
/// count and the paths, no error.
#[test]
fn files_under_a_filter_are_one_warning() {
    let g = common::git_bin();
    let w = common::world();
    let m = w.main();
    std::fs::write(
        m.join(".gitattributes"),
        "*.dat filter=lfs diff=lfs merge=lfs -text\n",
    )
    .unwrap();
    std::fs::write(m.join("a.dat"), "pointer a\n").unwrap();
    std::fs::write(m.join("b.dat"), "pointer b\n").unwrap();
    w.git(&m, &["add", ".gitattributes", "a.dat", "b.dat"]);
    w.git(&m, &["commit", "-qm", "lfs-like"]);
    w.pin();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // What a smudge filter leaves: other bytes in the work tree, the entry's stat theirs.
    let index = w.git_dir().join("index");
    for name in ["a.dat", "b.dat"] {
        let id = git(&w, &g, &m, &["rev-parse", &format!("HEAD:{name}")]);
        std::fs::write(m.join(name), format!("smudged {name}\n")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        forge_entry(&index, name, id.trim(), &m.join(name));
    }
    let (_, ev) = w.check(false);
    let found: Vec<_> = ev
        .iter()
        .filter(|e| e["event"] == "index_stat_forged")
        .collect();
    assert_eq!(found.len(), 1, "{ev:#?}");
    assert_eq!(found[0]["change"], "filtered");
    assert_eq!(found[0]["level"], "warning");
    assert_eq!(found[0]["count"], 2);
}

/// The nineteenth pass's ways past the index check (positive controls on both gits): the
/// index's `mtime` set back to before the pin (R19-1: "written since the pin" is its
/// `ctime`); a `\r` added to a file where nothing converts line endings (R19-2); a forged
/// entry in a submodule's index (R19-4).
#[test]
fn mtime_rollback_crlf_and_submodule_indexes_do_not_hide_content() {
    for g in common::gits() {
        for variant in ["mtime-back", "crlf", "submodule", "submodule-git-folder"] {
            let w = common::world();
            let m = w.main();
            w.pin();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let (top, index, name) = if variant == "submodule" {
                (m.join("sub"), w.git_dir().join("modules/sub/index"), "f")
            } else if variant == "submodule-git-folder" {
                // The absorbed submodule's `.git` file swapped for a copy of its git dir
                // (R20-2; a submodule added from an existing clone has it so: R20-1).
                let sub = m.join("sub");
                std::fs::remove_file(sub.join(".git")).unwrap();
                assert!(Command::new("cp")
                    .arg("-a")
                    .arg(w.git_dir().join("modules/sub"))
                    .arg(sub.join(".git"))
                    .status()
                    .unwrap()
                    .success());
                // Its `core.worktree` (if git wrote one) names the old place: dropped.
                let _ = Command::new(&g)
                    .current_dir(w.root())
                    .arg("config")
                    .arg("-f")
                    .arg(sub.join(".git/config"))
                    .args(["--unset", "core.worktree"])
                    .status();
                (sub.clone(), sub.join(".git/index"), "f")
            } else {
                (m.clone(), w.git_dir().join("index"), "README")
            };
            let honest = git(&w, &g, &top, &["rev-parse", &format!("HEAD:{name}")]);
            let before = std::fs::metadata(&index).unwrap().modified().unwrap();
            let text = if variant == "crlf" {
                let mut t = std::fs::read(top.join(name)).unwrap();
                t.pop();
                t.extend_from_slice(b"\r\n");
                t
            } else {
                b"evil\n".to_vec()
            };
            std::fs::write(top.join(name), &text).unwrap();
            if variant == "mtime-back" {
                // Older than the index's time put back, or git re-reads it as racily clean.
                let f = std::fs::File::options()
                    .write(true)
                    .open(top.join(name))
                    .unwrap();
                f.set_times(
                    std::fs::FileTimes::new()
                        .set_modified(before - std::time::Duration::from_secs(2)),
                )
                .unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(1100));
            forge_entry(&index, name, honest.trim(), &top.join(name));
            if variant == "mtime-back" {
                let f = std::fs::File::options().write(true).open(&index).unwrap();
                f.set_times(std::fs::FileTimes::new().set_modified(before))
                    .unwrap();
            }
            // Positive control: git shows nothing.
            assert_eq!(
                git(&w, &g, &top, &["status", "--porcelain", "-uno"]),
                "",
                "{} {variant}",
                g.display()
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {variant}: {ev:#?}", g.display());
            assert!(
                ev.iter().any(|e| e["event"] == "index_stat_forged"
                    && e["path"] == top.join(name).to_str().unwrap()
                    && e["level"] == "error"),
                "{variant}: {ev:#?}"
            );
        }
    }
}

/// An untracked cache written during the turn (R19-3: a forged one hid a new file from
/// `status`; the owner's `add -A` committed it) is reported as a warning.
#[test]
fn an_untracked_cache_written_during_the_turn_is_reported() {
    let g = common::git_bin();
    let w = common::world();
    let m = w.main();
    w.pin();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(m.join("zz.sh"), "echo x\n").unwrap();
    git(
        &w,
        &g,
        &m,
        &["-c", "core.untrackedCache=true", "status", "--porcelain"],
    );
    let (_, ev) = w.check(false);
    assert!(
        ev.iter().any(|e| e["event"] == "index_stat_forged"
            && e["change"] == "untracked_cache"
            && e["level"] == "warning"),
        "{ev:#?}"
    );
}

/// The twenty-first pass's way past the submodule indexes (R21-2, R21-3) and its siblings: a
/// repository git enters because the index holds a gitlink for it, whatever `.gitmodules`
/// says. Its git dir is a folder in the work tree, or the one its `.git` file or `.git` link
/// names; its index is forged as R16-12. Positive control on both gits: `status` in the
/// superproject (which recurses into the gitlink) and in the repository itself are clean.
#[test]
fn gitlinks_lead_to_the_indexes_git_enters_whatever_gitmodules_says() {
    fn cp_a(from: &Path, to: &Path) {
        assert!(Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap()
            .success());
    }
    for g in common::gits() {
        for variant in [
            "no-gitmodules",
            "gitmodules-other-path",
            "nested-without-gitmodules",
            "gitfile-to-a-copy",
            "dot-git-link",
        ] {
            let w = common::world();
            let m = w.main();
            let sub = m.join("sub");
            w.pin();
            std::thread::sleep(std::time::Duration::from_millis(20));
            // The agent's turn: the submodule's git dir moved where `.gitmodules` does not lead.
            let gd = w.git_dir().join("modules/sub");
            std::fs::remove_file(sub.join(".git")).unwrap();
            let own_git_dir = match variant {
                "gitfile-to-a-copy" | "dot-git-link" => m.join(".cache-gd"),
                _ => sub.join(".git"),
            };
            cp_a(&gd, &own_git_dir);
            let _ = Command::new(&g)
                .current_dir(w.root())
                .arg("config")
                .arg("-f")
                .arg(own_git_dir.join("config"))
                .args(["--unset", "core.worktree"])
                .status();
            match variant {
                "gitfile-to-a-copy" => {
                    std::fs::write(sub.join(".git"), "gitdir: ../.cache-gd\n").unwrap()
                }
                "dot-git-link" => {
                    std::os::unix::fs::symlink("../.cache-gd", sub.join(".git")).unwrap()
                }
                _ => {}
            }
            match variant {
                "gitmodules-other-path" => {
                    let t = std::fs::read_to_string(m.join(".gitmodules")).unwrap();
                    std::fs::write(
                        m.join(".gitmodules"),
                        t.replace("path = sub", "path = elsewhere"),
                    )
                    .unwrap();
                    git(&w, &g, &m, &["commit", "-qam", "gitmodules"]);
                }
                "gitfile-to-a-copy" | "dot-git-link" => {
                    std::fs::write(m.join(".gitignore"), ".cache-gd\n").unwrap();
                    git(&w, &g, &m, &["add", ".gitignore"]);
                    git(&w, &g, &m, &["rm", "-q", ".gitmodules"]);
                    git(&w, &g, &m, &["commit", "-qm", "no gitmodules"]);
                }
                _ => {
                    git(&w, &g, &m, &["rm", "-q", ".gitmodules"]);
                    git(&w, &g, &m, &["commit", "-qm", "no gitmodules"]);
                }
            }
            // The repository whose index is forged: the submodule, or one inside it that only
            // the submodule's own index names (no `.gitmodules` there either).
            let (top, index) = if variant == "nested-without-gitmodules" {
                let inner = sub.join("inner");
                git(&w, &g, &sub, &["init", "-q", "inner"]);
                std::fs::write(inner.join("run.sh"), "echo honest\n").unwrap();
                git(&w, &g, &inner, &["add", "run.sh"]);
                git(&w, &g, &inner, &["commit", "-qm", "inner"]);
                git(&w, &g, &sub, &["add", "inner"]);
                git(&w, &g, &sub, &["commit", "-qm", "gitlink"]);
                git(&w, &g, &m, &["add", "sub"]);
                git(&w, &g, &m, &["commit", "-qm", "bump"]);
                (inner.clone(), inner.join(".git/index"))
            } else {
                (sub.clone(), own_git_dir.join("index"))
            };
            let name = if variant == "nested-without-gitmodules" {
                "run.sh"
            } else {
                "f"
            };
            let honest = git(&w, &g, &top, &["rev-parse", &format!("HEAD:{name}")]);
            std::fs::write(top.join(name), "echo PWNED\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1100));
            forge_entry(&index, name, honest.trim(), &top.join(name));
            // Positive control: git enters the repository and shows nothing.
            assert_eq!(
                git(&w, &g, &top, &["status", "--porcelain", "-uno"]),
                "",
                "{} {variant}",
                g.display()
            );
            assert_eq!(
                git(&w, &g, &m, &["status", "--porcelain", "-uno"]),
                "",
                "{} {variant}: the superproject shows the change",
                g.display()
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {variant}: {ev:#?}", g.display());
            assert!(
                ev.iter().any(|e| e["event"] == "index_stat_forged"
                    && e["path"] == top.join(name).to_str().unwrap()
                    && e["level"] == "error"),
                "{} {variant}: {ev:#?}",
                g.display()
            );
        }
    }
}

/// R20-3: the owner's config relaxes git's stat check (`core.trustctime=false`, or
/// `core.checkStat=minimal`): git compares only `mtime` and size, so a tracked file rewritten
/// in place at the same size with its `mtime` put back, and no index written, is invisible to
/// `status` (positive control on both gits). The pin records that the owner's config relaxes
/// the check, and the check hashes the tracked files changed since the pin: an error. An
/// honest edit under the same config is clean; with git's default config the same rewrite
/// is git's own to see (its `ctime` moved), and the state records no relaxation.
#[test]
fn an_owner_config_that_relaxes_the_stat_check_does_not_hide_an_in_place_rewrite() {
    use std::io::Write;
    for g in common::gits() {
        for setting in [
            "[core]\n\ttrustctime = false\n",
            "[core]\n\tcheckStat = minimal\n",
            "",
        ] {
            let w = common::world();
            let m = w.main();
            let gc = w.home().join(".gitconfig");
            let mut t = std::fs::read_to_string(&gc).unwrap_or_default();
            t.push_str(setting);
            std::fs::write(&gc, t).unwrap();
            // An index written before the pin, its entries past git's racy window (a racily
            // clean entry is written with its size zeroed, and git then reads the file).
            std::thread::sleep(std::time::Duration::from_millis(1100));
            git(&w, &g, &m, &["status", "--porcelain"]);
            std::thread::sleep(std::time::Duration::from_millis(20));
            w.pin();
            let state = std::fs::read_to_string(w.state()).unwrap();
            assert_eq!(
                state.contains("\"stat_relaxed\": true"),
                !setting.is_empty(),
                "{setting:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
            let path = m.join("README");
            let before = std::fs::metadata(&path).unwrap();
            let honest = std::fs::read(&path).unwrap();
            let mut evil = b"#!".to_vec();
            evil.resize(honest.len(), b'x');
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all(&evil).unwrap();
            f.set_times(std::fs::FileTimes::new().set_modified(before.modified().unwrap()))
                .unwrap();
            drop(f);
            let shown = git(&w, &g, &m, &["status", "--porcelain", "-uno"]);
            if setting.is_empty() {
                // git's default: the moved ctime makes git read the file.
                assert_eq!(shown, " M README\n", "{}", g.display());
                continue;
            }
            // Positive control: the owner's git shows nothing.
            assert_eq!(shown, "", "{} {setting:?}", g.display());
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {setting:?}: {ev:#?}", g.display());
            assert!(
                ev.iter().any(|e| e["event"] == "index_stat_forged"
                    && e["path"] == path.to_str().unwrap()
                    && e["level"] == "error"),
                "{setting:?}: {ev:#?}"
            );
            // An honest edit (a new mtime) under the same config: git shows it, the check is clean.
            std::fs::write(&path, &honest).unwrap();
            std::fs::write(&path, b"honest edit\n").unwrap();
            let (code, ev) = w.check(false);
            assert!(
                !ev.iter().any(|e| e["event"] == "index_stat_forged"),
                "{setting:?}: {ev:#?}"
            );
            assert!(code == 0 || code == 1, "{ev:#?}");
        }
    }
}

/// Set the stat data of the entry `name` in the v2 index bytes at `index` to the given
/// `ctime`/`mtime` seconds (nanoseconds zero), inode and size; with `fix`, rewrite the
/// trailing checksum (a shared index is patched without: git compares its trailer only with
/// the id the split index's `link` extension names).
fn set_entry_stat(
    index: &Path,
    name: &str,
    ctime: u32,
    mtime: u32,
    ino: u32,
    size: u32,
    fix: bool,
) {
    let mut b = std::fs::read(index).unwrap();
    let at = entry_at(&b, name);
    for (off, v) in [
        (0, ctime),
        (4, 0),
        (8, mtime),
        (12, 0),
        (20, ino),
        (36, size),
    ] {
        b[at + off..at + off + 4].copy_from_slice(&v.to_be_bytes());
    }
    if fix {
        fix_checksum(index, &mut b);
    }
    std::fs::write(index, &b).unwrap();
}

/// Rewrite `path` in place with `text` (same length as the file), its `mtime` put back to
/// `mtime`.
fn rewrite_in_place(path: &Path, text: &[u8], mtime: std::time::SystemTime) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all(text).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
}

fn evil_like(honest: &[u8]) -> Vec<u8> {
    let mut evil = b"#!".to_vec();
    evil.resize(honest.len(), b'x');
    evil
}

fn forged_error(ev: &[serde_json::Value], path: &Path) -> bool {
    ev.iter().any(|e| {
        e["event"] == "index_stat_forged"
            && e["path"] == path.to_str().unwrap()
            && e["level"] == "error"
    })
}

/// The twenty-second pass (R22-1): an index written before the pin — in an earlier session,
/// or before this pin of the same state path — whose entry is flagged `skip-worktree`
/// (R22-1b) or carries stat data made for a file the agent writes later, at a `ctime` second
/// it predicted (R22-1a). The index is not written during the turn; git (default stat check,
/// seconds only) takes the later file as unchanged. The pin records every entry it cannot
/// vouch for (`<state>.watch`); the check looks at those. Positive control on both gits.
#[test]
fn entries_primed_before_the_pin_do_not_hide_a_later_write() {
    for g in common::gits() {
        for variant in ["skip-worktree", "predicted-stat"] {
            // The predicted-stat variant needs the turn's write to land in the `ctime` second
            // chosen before the pin; a loaded machine can oversleep past it. Such a miss is
            // not judged but tried again, a bounded number of times (a new world each); one
            // that never lands fails under `CI=true`.
            let tries = 5;
            let landed = (1..=tries).any(|n| primed_entry_case(&g, variant, n));
            if !landed {
                common::timing_miss(&format!(
                    "{} {variant}: the write missed its predicted second {tries} times",
                    g.display()
                ));
            }
        }
    }
}

/// One try of `entries_primed_before_the_pin_do_not_hide_a_later_write`: false (nothing
/// judged) when the predicted-stat write missed its second.
fn primed_entry_case(g: &Path, variant: &str, attempt: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let w = common::world();
    let m = w.main();
    let path = m.join("README");
    let honest = std::fs::read(&path).unwrap();
    let evil = evil_like(&honest);
    let before = std::fs::metadata(&path).unwrap();
    let index = w.git_dir().join("index");
    let now_secs = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
    };
    // An earlier session: the index primed.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    git(&w, g, &m, &["status", "--porcelain"]);
    let target = if variant == "skip-worktree" {
        git(&w, g, &m, &["update-index", "--skip-worktree", "README"]);
        None
    } else {
        let t2 = now_secs().as_secs() + 4;
        set_entry_stat(
            &index,
            "README",
            t2 as u32,
            before.mtime() as u32,
            before.ino() as u32,
            evil.len() as u32,
            true,
        );
        Some(t2)
    };
    std::thread::sleep(std::time::Duration::from_millis(1100));
    w.pin();
    // The turn: the file rewritten, the index untouched.
    if let Some(t2) = target {
        let wait = std::time::Duration::from_secs(t2) + std::time::Duration::from_millis(100);
        let now = now_secs();
        if wait > now {
            std::thread::sleep(wait - now);
        }
        // Already too late for the second (the pin or the sleep overran): not written.
        if now_secs() >= std::time::Duration::from_secs(t2) + std::time::Duration::from_millis(900)
        {
            eprintln!("{variant} (try {attempt}): past the predicted second {t2}; tried again");
            return false;
        }
    }
    rewrite_in_place(&path, &evil, before.modified().unwrap());
    if let Some(t2) = target {
        let c = std::fs::metadata(&path).unwrap().ctime() as u64;
        if c != t2 {
            eprintln!(
                "{variant} (try {attempt}): the write missed its second ({c} != {t2}); tried again"
            );
            return false;
        }
    }
    // Positive control: git shows nothing.
    assert_eq!(
        git(&w, g, &m, &["status", "--porcelain", "-uno"]),
        "",
        "{} {variant}",
        g.display()
    );
    let (code, ev) = w.check(false);
    assert_eq!(code, 1, "{} {variant}: {ev:#?}", g.display());
    assert!(forged_error(&ev, &path), "{variant}: {ev:#?}");
    true
}

/// R22-2: the owner's index is split (`core.splitIndex`); the agent patches the entry in the
/// shared index in place (its trailer kept: git compares it only with the id `index` names)
/// and never writes `index`. "Written since the pin" counts the shared index too.
#[test]
fn a_shared_index_rewritten_in_place_is_read() {
    use std::os::unix::fs::MetadataExt;
    for g in common::gits() {
        let w = common::world();
        let m = w.main();
        let path = m.join("README");
        let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(day_ago))
            .unwrap();
        // Refreshed first, so that the split puts every entry (README's too) into the shared
        // index and none into `index`.
        git(&w, &g, &m, &["status", "--porcelain"]);
        git(&w, &g, &m, &["config", "core.splitIndex", "true"]);
        git(&w, &g, &m, &["update-index", "--split-index"]);
        let shared: Vec<_> = std::fs::read_dir(w.git_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("sharedindex.")
            })
            .collect();
        assert_eq!(shared.len(), 1, "{shared:?}");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        w.pin();
        let honest = std::fs::read(&path).unwrap();
        // Its `mtime` put back: older than the index, or git re-reads it as racily clean.
        rewrite_in_place(&path, &evil_like(&honest), day_ago);
        let st = std::fs::metadata(&path).unwrap();
        set_entry_stat(
            &shared[0],
            "README",
            st.ctime() as u32,
            st.mtime() as u32,
            st.ino() as u32,
            st.size() as u32,
            false,
        );
        // Positive control: git shows nothing.
        assert_eq!(
            git(&w, &g, &m, &["status", "--porcelain", "-uno"]),
            "",
            "{}",
            g.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(forged_error(&ev, &path), "{ev:#?}");
    }
}

/// R22-3: a tracked file whose path is longer than `PATH_MAX` once made absolute (git reaches
/// it relative to the work tree); flagged `skip-worktree` and rewritten during the turn.
/// The check reaches it as git does; any error but "not there" would be incomplete.
#[test]
fn a_path_too_long_to_be_absolute_is_still_looked_at() {
    for g in common::gits() {
        let w = common::world();
        let m = w.main();
        // 4,087 bytes relative (git's limit is PATH_MAX, 4,096), over it once made absolute.
        let seg = "d".repeat(254);
        let rel_dir = vec![seg.as_str(); 16].join("/");
        let rel = format!("{rel_dir}/run.sh");
        let sh = |script: &str| {
            let ok = Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&m)
                .status()
                .unwrap()
                .success();
            assert!(ok, "{script}");
        };
        sh(&format!(
            "mkdir -p {rel_dir} && printf 'echo honest\\n' > {rel}"
        ));
        git(&w, &g, &m, &["add", &rel]);
        git(&w, &g, &m, &["commit", "-qm", "long"]);
        w.pin();
        std::thread::sleep(std::time::Duration::from_millis(20));
        git(&w, &g, &m, &["update-index", "--skip-worktree", &rel]);
        sh(&format!("printf 'echo PWNED\\n' > {rel}"));
        // Positive control: git shows nothing.
        assert_eq!(
            git(&w, &g, &m, &["status", "--porcelain", "-uno"]),
            "",
            "{}",
            g.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(
            ev.iter().any(|e| e["event"] == "index_stat_forged"
                && e["path"].as_str().is_some_and(|p| p.ends_with("/run.sh"))),
            "{ev:#?}"
        );
    }
}

/// R22-4: a repository nested in the work tree (its git dir a folder there, existing at the
/// pin) gets `core.checkStat=minimal` in its own config — the agent's to write — and a
/// tracked file rewritten in place at the same size, `mtime` put back, no index written.
#[test]
fn a_nested_repository_that_relaxes_its_own_stat_check_is_looked_at() {
    for g in common::gits() {
        let w = common::world();
        let m = w.main();
        let inner = m.join("vendor");
        git(&w, &g, &m, &["init", "-q", "vendor"]);
        std::fs::write(inner.join("build.sh"), "echo honest build\n").unwrap();
        git(&w, &g, &inner, &["add", "build.sh"]);
        git(&w, &g, &inner, &["commit", "-qm", "v"]);
        git(&w, &g, &m, &["add", "vendor"]);
        git(&w, &g, &m, &["commit", "-qm", "gitlink"]);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        git(&w, &g, &inner, &["status", "--porcelain"]);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        w.pin();
        let cfg = inner.join(".git/config");
        let mut t = std::fs::read_to_string(&cfg).unwrap();
        t.push_str("[core]\n\tcheckStat = minimal\n\ttrustctime = false\n");
        std::fs::write(&cfg, t).unwrap();
        let path = inner.join("build.sh");
        let before = std::fs::metadata(&path).unwrap();
        let honest = std::fs::read(&path).unwrap();
        rewrite_in_place(&path, &evil_like(&honest), before.modified().unwrap());
        // Positive control: neither repository shows it.
        assert_eq!(git(&w, &g, &inner, &["status", "--porcelain", "-uno"]), "");
        assert_eq!(git(&w, &g, &m, &["status", "--porcelain", "-uno"]), "");
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(forged_error(&ev, &path), "{ev:#?}");
    }
}

/// R23-4..R23-6: under a relaxed stat check (the owner's `core.checkStat=minimal`, or a
/// repository nested in the work tree relaxing its own) git compares only `mtime` and size; a
/// file prepared before the pin (same size, `mtime` put back) moved in with its folder after
/// it keeps its old `ctime`, so a "changed since the pin" test by `ctime` passes it over. The
/// pin records each entry's file identity (device, inode, `ctime`); a moved-in file has
/// another inode and is judged. No index is written. Positive control on both gits.
#[test]
fn files_moved_in_with_their_folder_do_not_hide_under_a_relaxed_stat_check() {
    use std::os::unix::fs::MetadataExt;
    for g in common::gits() {
        for variant in ["owner-relaxed", "nested-relaxes-itself"] {
            let w = common::world();
            let m = w.main();
            let top = if variant == "nested-relaxes-itself" {
                let inner = m.join("vendor");
                git(&w, &g, &m, &["init", "-q", "vendor"]);
                inner
            } else {
                let gc = w.home().join(".gitconfig");
                let mut t = std::fs::read_to_string(&gc).unwrap_or_default();
                t.push_str("[core]\n\tcheckStat = minimal\n");
                std::fs::write(&gc, t).unwrap();
                m.clone()
            };
            std::fs::create_dir_all(top.join("tools")).unwrap();
            std::fs::write(top.join("tools/run.sh"), "echo honest tool\n").unwrap();
            git(&w, &g, &top, &["add", "tools/run.sh"]);
            git(&w, &g, &top, &["commit", "-qm", "tools"]);
            if variant == "nested-relaxes-itself" {
                git(&w, &g, &m, &["add", "vendor"]);
                git(&w, &g, &m, &["commit", "-qm", "gitlink"]);
                let cfg = top.join(".git/config");
                let mut t = std::fs::read_to_string(&cfg).unwrap();
                t.push_str("[core]\n\tcheckStat = minimal\n");
                std::fs::write(&cfg, t).unwrap();
            }
            // The agent prepares, before the pin, a folder holding its file: same size, the
            // tracked file's `mtime`.
            let honest = top.join("tools/run.sh");
            let md = std::fs::metadata(&honest).unwrap();
            let prep = top.join(".prep/tools");
            std::fs::create_dir_all(&prep).unwrap();
            let text = std::fs::read(&honest).unwrap();
            std::fs::write(prep.join("run.sh"), evil_like(&text)).unwrap();
            std::fs::File::options()
                .write(true)
                .open(prep.join("run.sh"))
                .unwrap()
                .set_times(std::fs::FileTimes::new().set_modified(md.modified().unwrap()))
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1100));
            git(&w, &g, &top, &["status", "--porcelain"]);
            std::thread::sleep(std::time::Duration::from_millis(1100));
            w.pin();
            // The turn: the folder swapped for the prepared one; no index written.
            std::fs::rename(top.join("tools"), top.join(".old-tools")).unwrap();
            std::fs::rename(&prep, top.join("tools")).unwrap();
            let moved = std::fs::metadata(&honest).unwrap();
            assert_ne!(moved.ino(), md.ino());
            // Positive control: git shows nothing (untracked folders aside).
            assert_eq!(
                git(&w, &g, &top, &["status", "--porcelain", "-uno"]),
                "",
                "{} {variant}",
                g.display()
            );
            let (code, ev) = w.check(false);
            assert_eq!(code, 1, "{} {variant}: {ev:#?}", g.display());
            assert!(forged_error(&ev, &honest), "{variant}: {ev:#?}");
        }
    }
}
