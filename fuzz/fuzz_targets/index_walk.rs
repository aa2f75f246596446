//! The index reader (`safegit::gitlinks::walk`, `scan`, `index_paths::bad_entries`): total on
//! arbitrary bytes, consistent with itself, and — with `GITWARD_FUZZ_GIT=/path/to/git` — the
//! same entries as `git ls-files --stage -z` reads, in one thread and in several.
//!
//! The input is an index without its trailer: the target appends the SHA-1 git checks, so
//! mutations reach git's entry and extension readers instead of its checksum.
#![no_main]

use gitward::safegit::gitlinks::{scan, walk, Scan, Walked};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn oracle_repo() -> Option<&'static (PathBuf, PathBuf)> {
    static REPO: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    REPO.get_or_init(|| {
        let git = PathBuf::from(std::env::var_os("GITWARD_FUZZ_GIT")?);
        let dir = std::env::temp_dir().join(format!("gitward-fuzz-index-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        Command::new(&git)
            .args(["init", "-q"])
            .current_dir(&dir)
            .status()
            .ok()?;
        Some((git, dir))
    })
    .as_ref()
}

fn ls_files(
    git: &PathBuf,
    repo: &PathBuf,
    index: &PathBuf,
    threads: &str,
) -> Option<Vec<(u32, Vec<u8>)>> {
    let out = Command::new(git)
        .args([
            "-c",
            &format!("index.threads={threads}"),
            "ls-files",
            "--stage",
            "-z",
        ])
        .current_dir(repo)
        .env("HOME", repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_INDEX_FILE", index)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut v = Vec::new();
    for rec in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let tab = rec.iter().position(|&b| b == b'\t')?;
        // `%06o`: at least six digits, more for a mode wider than 18 bits (git prints the
        // 32 bits it read, as the walk reports them).
        let sp = rec.iter().position(|&b| b == b' ')?;
        let mode = u32::from_str_radix(std::str::from_utf8(&rec[..sp]).ok()?, 8).ok()?;
        let name = &rec[tab + 1..];
        v.push((
            mode,
            if name == b"./" {
                Vec::new()
            } else {
                name.to_vec()
            },
        ));
    }
    Some(v)
}

fuzz_target!(|body: &[u8]| {
    let mut data = body.to_vec();
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    h.update(body);
    data.extend(h.try_finalize().unwrap().as_bytes());

    let mut ours = Vec::new();
    let walked = walk(&data, &mut |mode, name| {
        assert!(name.len() <= data.len());
        ours.push((mode, name.to_vec()));
    });
    let scanned = scan(&data);
    // scan is walk plus the gitlink filter: they agree on refusing.
    match (&walked, &scanned) {
        (None, None) | (Some(_), Some(Scan::SparseDirectory(_))) => {}
        (Some(Walked::Split(a)), Some(Scan::Split(b))) if a == b => {}
        (Some(Walked::Complete), Some(Scan::Gitlinks(g))) => {
            let want: Vec<&Vec<u8>> = ours
                .iter()
                .filter(|(m, _)| m & 0o170000 == 0o160000)
                .map(|(_, n)| n)
                .collect();
            assert_eq!(g.iter().collect::<Vec<_>>(), want);
        }
        (None, Some(Scan::SparseDirectory(_))) => {}
        other => panic!("walk and scan disagree: {other:?}"),
    }
    let _ = gitward::index_paths::bad_entries(std::path::Path::new("/nonexistent/index"), &data);

    if walked != Some(Walked::Complete) || ours.iter().any(|(m, _)| m & 0o170000 == 0o040000) {
        return;
    }
    let Some((git, repo)) = oracle_repo() else {
        return;
    };
    let index = repo.join(".git/fuzz-index");
    std::fs::write(&index, &data).unwrap();
    for threads in ["1", "4"] {
        if let Some(theirs) = ls_files(git, repo, &index, threads) {
            assert_eq!(
                theirs, ours,
                "git (index.threads={threads}) reads other entries than the walk"
            );
        }
    }
});
