//! Differential test of discovery against both gits: a linked worktree whose layout files the
//! agent can write — the `.git` file (gitfile), the admin dir's `commondir`, `gitdir` and
//! `HEAD` — generated in every spelling git accepts or nearly accepts (CR, CRLF, NUL, blanks,
//! relative and absolute paths, `..`, doubled and trailing slashes, a target that is the main
//! git dir, a folder that is not a git dir) and as mutations of the seed files
//! (`fuzz/seeds/layout_files/`). Read by `git rev-parse --path-format=absolute --git-dir
//! --git-common-dir --show-toplevel` in the worktree and by [`discover`].
//!
//! The rule checked, on each git: where git finds a repository, gitward finds the same git
//! dir, common dir and work tree, or refuses. Where git stops with "not a git repository (or
//! any of the parent directories)" — it would climb into an enclosing repository — gitward
//! must not report a layout here. A layout gitward reports where git dies on the files
//! (invalid gitfile, bad `commondir`) is counted: git runs nothing there.

use super::discover;
use crate::difftest::{self, Rng};
use std::fs;
use std::path::{Path, PathBuf};

const GITFILES: &[&[u8]] = &[
    b"gitdir: ADMIN\n",
    b"gitdir: ADMIN",
    b"gitdir: ADMIN\r\n",
    b"gitdir: ADMIN/\n",
    b"gitdir: ADMIN \n",
    b"gitdir:ADMIN\n",
    b"gitdir:  ADMIN\n",
    b"GITDIR: ADMIN\n",
    b"gitdir: ../repo/.git/worktrees/wt\n",
    b"gitdir: ./../repo//.git/worktrees/wt/\n",
    b"gitdir: ../repo/.git\n",
    b"gitdir: MAIN\n",
    b"gitdir: ADMIN\0junk\n",
    b"gitdir: ADMIN\n\ngitdir: MAIN\n",
    b"gitdir: ../repo/.git/worktrees/other\n",
    b"gitdir: ../repo\n",
    b"\xef\xbb\xbfgitdir: ADMIN\n",
    b"gitdir: ADMIN\r",
    b"gitdir: \n",
];
const COMMONDIRS: &[&[u8]] = &[
    b"../..\n",
    b"../..",
    b"../..\r\n",
    b"../../\n",
    b"../.. \n",
    b"../..\0x\n",
    b"MAIN\n",
    b"MAIN",
    b"\n",
    b"",
    b"..\n",
    b"../../..\n",
    b"../../../repo/.git\n",
    b"./../..\n",
    b"../..\n\nx\n",
    b"\n../..\n",
    b"../..\r",
];
const GITDIRS: &[&[u8]] = &[
    b"WT/.git\n",
    b"WT/.git",
    b"../../../../wt/.git\n",
    b"x\n",
    b"",
];
const HEADS: &[&[u8]] = &[
    b"ref: refs/heads/main\n",
    b"ref: refs/heads/main",
    b"ref:refs/heads/main\r\n",
    b"0123456789012345678901234567890123456789\n",
    b"ref: heads/main\n",
    b"garbage\n",
    b"",
];

/// The first entry of each list is the spelling `git worktree add` writes: taken half the time,
/// so that a good share of the layouts is one git reads.
fn pick_or_mutate(r: &mut Rng, xs: &[&[u8]], seeds: &[Vec<u8>], part: usize) -> Vec<u8> {
    if r.pct(50) {
        xs[0].to_vec()
    } else if r.pct(20) {
        // a part of a seed file (parts split at `\0\0`, as the cargo-fuzz target does)
        let seed = &seeds[r.below(seeds.len())];
        let parts: Vec<&[u8]> = split_parts(seed);
        let base = parts.get(part).copied().unwrap_or(b"");
        difftest::mutate(r, base)
    } else {
        let base = r.pick(xs);
        if r.pct(15) {
            difftest::mutate(r, base)
        } else {
            base.to_vec()
        }
    }
}

fn split_parts(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = b;
    while let Some(p) = rest.windows(2).position(|w| w == b"\0\0") {
        out.push(&rest[..p]);
        rest = &rest[p + 2..];
    }
    out.push(rest);
    out
}

fn subst(bytes: &[u8], root: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let r = root.as_os_str().as_bytes();
    let mut s = bytes.to_vec();
    for (from, to) in [
        (&b"ADMIN"[..], &b"/repo/.git/worktrees/wt"[..]),
        (b"MAIN", b"/repo/.git"),
        (b"WT", b"/wt"),
    ] {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            if s[i..].starts_with(from) {
                out.extend_from_slice(r);
                out.extend_from_slice(to);
                i += from.len();
            } else {
                out.push(s[i]);
                i += 1;
            }
        }
        s = out;
    }
    s
}

/// `case/repo/.git/` (main git dir, admin dir `worktrees/wt/`), `case/wt/` (the worktree).
fn make_case(r: &mut Rng, dir: &Path, seeds: &[Vec<u8>]) {
    let main = dir.join("repo/.git");
    let admin = main.join("worktrees/wt");
    for d in ["objects", "refs/heads", "worktrees/wt", "worktrees/other"] {
        fs::create_dir_all(main.join(d)).unwrap();
    }
    fs::create_dir_all(dir.join("wt")).unwrap();
    fs::write(main.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(
        main.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
    )
    .unwrap();
    let gitfile = pick_or_mutate(r, GITFILES, seeds, 0);
    fs::write(dir.join("wt/.git"), subst(&gitfile, dir)).unwrap();
    if r.pct(92) {
        let c = pick_or_mutate(r, COMMONDIRS, seeds, 1);
        fs::write(admin.join("commondir"), subst(&c, dir)).unwrap();
    }
    if r.pct(92) {
        let g = pick_or_mutate(r, GITDIRS, seeds, 2);
        fs::write(admin.join("gitdir"), subst(&g, dir)).unwrap();
    }
    if r.pct(95) {
        let h = pick_or_mutate(r, HEADS, seeds, 3);
        fs::write(admin.join("HEAD"), h).unwrap();
    }
}

#[derive(Default)]
struct Tally {
    same: usize,
    refused: usize,
    git_dies_we_read: usize,
    both_none: usize,
    disagreements: Vec<String>,
}

fn canon(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn run_case(g: &Path, home: &Path, dir: &Path, label: &str, t: &mut Tally) {
    let wt = dir.join("wt");
    let out = difftest::git_isolated(g, home, &wt)
        .args([
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
            "--show-toplevel",
        ])
        .output()
        .unwrap();
    let ours = discover(&wt, &[dir.to_path_buf()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let files = || {
        let show = |p: PathBuf| format!("{:?}", fs::read(p).unwrap_or_default().escape_ascii());
        let admin = dir.join("repo/.git/worktrees/wt");
        format!(
            ".git {} commondir {} gitdir {} HEAD {}",
            show(wt.join(".git")),
            show(admin.join("commondir")),
            show(admin.join("gitdir")),
            show(admin.join("HEAD"))
        )
    };
    if out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        let Ok(l) = ours else {
            t.refused += 1;
            return;
        };
        let theirs = [
            Some(canon(Path::new(lines[0]))),
            Some(canon(Path::new(lines[1]))),
            lines.get(2).map(|p| canon(Path::new(p))),
        ];
        let mine = [
            Some(canon(&l.git_dir)),
            Some(canon(&l.common_dir)),
            l.work_tree.as_deref().map(canon),
        ];
        if theirs == mine {
            t.same += 1;
        } else {
            t.disagreements.push(format!(
                "{label}: git {theirs:?}, gitward {mine:?}; {}",
                files()
            ));
        }
    } else if stderr.contains("or any of the parent directories") {
        match ours {
            Ok(l) => t.disagreements.push(format!(
                "{label}: git climbs on (no repository here), gitward reads {l:?}; {}",
                files()
            )),
            Err(_) => t.both_none += 1,
        }
    } else {
        match ours {
            Ok(_) => t.git_dies_we_read += 1,
            Err(_) => t.both_none += 1,
        }
    }
}

#[test]
#[cfg_attr(
    gitward_no_git,
    ignore = "no git at /usr/bin/git or /usr/local/bin/git to compare with"
)]
fn discovery_finds_what_git_finds() {
    let gits = difftest::gits();
    let seed = difftest::seed(0x6c61_796f_7574);
    let n = difftest::cases(800);
    let seeds = difftest::seeds("layout_files");
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let home = root.join("home");
    fs::create_dir_all(&home).unwrap();
    let mut r = Rng(seed);
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| {
            let dir = root.join(format!("case{i}"));
            make_case(&mut r, &dir, &seeds);
            dir
        })
        .collect();
    let tallies: Vec<(PathBuf, Tally)> =
        crate::difftest::per_git(&gits, &dirs, |g, d, label, t| {
            run_case(g, &home, d, label, t)
        });
    let mut failures = Vec::new();
    for (g, t) in &tallies {
        eprintln!(
            "{}: {n} layouts (seed {seed:#x}): same git dir, common dir and work tree {}, \
             gitward refuses where git reads {}, neither finds one {}, git dies on the files \
             where gitward reads them {}, disagree {}",
            g.display(),
            t.same,
            t.refused,
            t.both_none,
            t.git_dies_we_read,
            t.disagreements.len()
        );
        assert!(
            t.same > n / 10,
            "too few layouts git reads: the generator is off"
        );
        failures.extend(t.disagreements.iter().take(15).cloned());
    }
    if !failures.is_empty() {
        eprintln!("cases kept in {}", tmp.keep().display());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
