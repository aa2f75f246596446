//! The layout files the agent can write — a `.git` file (gitfile), a `commondir` file and a
//! `gitdir` file of a linked worktree's admin dir, and `HEAD` — on arbitrary bytes, read by
//! `gitward::layout::discover` in a real folder: no panic, and an answer (a layout or an
//! error) for every input. The input is split at the first two `\0\0` pairs into the three
//! files' bytes; the rest is `HEAD`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

/// `root/repo/.git/` (a main git dir with `worktrees/wt/`), `root/wt/` (a linked worktree).
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let gd = root.join("repo/.git");
        for d in ["objects", "refs/heads", "worktrees/wt"] {
            std::fs::create_dir_all(gd.join(d)).unwrap();
        }
        std::fs::write(gd.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        Fixture { _tmp: tmp, root }
    })
}

fn split<'a>(data: &'a [u8]) -> (&'a [u8], &'a [u8]) {
    match data.windows(2).position(|w| w == b"\0\0") {
        Some(p) => (&data[..p], &data[p + 2..]),
        None => (data, &[]),
    }
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let (gitfile, rest) = split(data);
    let (commondir, rest) = split(rest);
    let (gitdir, head) = split(rest);
    let admin = f.root.join("repo/.git/worktrees/wt");
    std::fs::write(f.root.join("wt/.git"), gitfile).unwrap();
    std::fs::write(admin.join("commondir"), commondir).unwrap();
    std::fs::write(admin.join("gitdir"), gitdir).unwrap();
    std::fs::write(admin.join("HEAD"), head).unwrap();
    let ceiling: &Path = &f.root;
    let _ = gitward::layout::discover(&f.root.join("wt"), &[ceiling.to_path_buf()]);
    let _ = gitward::layout::read_gitfile(&f.root.join("wt/.git"));
});
