//! Shared parts of the differential tests (docs/fuzzing.md): a seeded generator, byte-level
//! mutation of real files, the gits to compare with, and the run's size.
//!
//! Every differential test reads bytes the agent could write with gitward's parser and with
//! git itself, and fails where the two readings lead gitward to decide differently from git
//! without refusing. Seed and size come from the environment so that a long run is the same
//! test with more cases: `GITWARD_DIFF_SEED`, `GITWARD_DIFF_N` (or `GITWARD_DIFF_CASES`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// splitmix64: small, seeded, reproducible.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `p` percent.
    pub fn pct(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// The seed of this run (`GITWARD_DIFF_SEED`, decimal), else `default`.
pub(crate) fn seed(default: u64) -> u64 {
    std::env::var("GITWARD_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Cases per git (`GITWARD_DIFF_N`, the name the other differential tests read, or
/// `GITWARD_DIFF_CASES`), else `default`.
pub(crate) fn cases(default: usize) -> usize {
    ["GITWARD_DIFF_N", "GITWARD_DIFF_CASES"]
        .iter()
        .find_map(|v| std::env::var(v).ok().and_then(|s| s.parse().ok()))
        .unwrap_or(default)
}

/// The gits to compare with. None installed: the test is compiled `#[ignore]` with the reason
/// (`build.rs`, `gitward_no_git`) except under `CI=true`, where it runs and fails here.
pub(crate) fn gits() -> Vec<PathBuf> {
    let gits: Vec<PathBuf> = ["/usr/bin/git", "/usr/local/bin/git"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect();
    assert!(
        !gits.is_empty(),
        "no git at /usr/bin/git or /usr/local/bin/git to compare with"
    );
    gits
}

/// `git <args>` isolated from the machine: empty environment, `HOME` an empty folder, no
/// system config, discovery stopped above `cwd`'s parent.
pub(crate) fn git_isolated(git: &Path, home: &Path, cwd: &Path) -> Command {
    let mut c = Command::new(git);
    c.current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("PATH", "/usr/bin:/bin")
        .env(
            "GIT_CEILING_DIRECTORIES",
            cwd.parent().unwrap_or(Path::new("/")),
        );
    c
}

/// Bytes that move parsers between states: quoting, escapes, blanks, line ends, NUL, BOM,
/// comment starters, brackets, `=`, `!`, `-`, `:`.
const SPICE: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"\\\n",
    b"\\\r\n",
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b"\0",
    b"\xef\xbb\xbf",
    b"#",
    b";",
    b"[",
    b"]",
    b"=",
    b"!",
    b"-",
    b":",
    b".",
    b"/",
    b"..",
    b"\xff",
    b"\xc3\xa9",
    b"\\\"",
    b"\\t",
    b"\\n",
    b"\\101",
    b"\x0b",
];

/// A near-miss of `base`: one to four byte-level edits (insert a spice, delete a span,
/// duplicate a line, swap case, flip a byte, cut the end).
pub(crate) fn mutate(r: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    for _ in 0..1 + r.below(4) {
        let at = if out.is_empty() {
            0
        } else {
            r.below(out.len() + 1)
        };
        match r.below(7) {
            0 | 1 => {
                let s = r.pick(SPICE);
                out.splice(at..at, s.iter().copied());
            }
            2 if !out.is_empty() => {
                let end = (at + 1 + r.below(4)).min(out.len());
                out.drain(at.min(end)..end);
            }
            3 => {
                let lines: Vec<&[u8]> = base.split(|&b| b == b'\n').collect();
                let l = r.pick(&lines).to_vec();
                out.splice(at..at, l.into_iter().chain([b'\n']));
            }
            4 if at < out.len() => out[at] = out[at].to_ascii_uppercase(),
            5 if at < out.len() => out[at] ^= 1 << r.below(8),
            6 => out.truncate(at),
            _ => {}
        }
    }
    out
}

/// The seed corpus of a cargo-fuzz target (`fuzz/seeds/<target>/`): small real and
/// hand-made files, the bases [`mutate`] starts from.
pub(crate) fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{}: no seeds", dir.display());
    out.into_iter().map(|(_, b)| b).collect()
}

/// Runs every case against each git, one thread per git (the gits are the slow part): `run`
/// gets the git, a case's folder and its label (`case<i>`), and adds to that git's tally.
/// Returns each git with its tally, in the order of `gits`.
pub(crate) fn per_git<T: Default + Send>(
    gits: &[PathBuf],
    dirs: &[PathBuf],
    run: impl Fn(&Path, &Path, &str, &mut T) + Sync,
) -> Vec<(PathBuf, T)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = gits
            .iter()
            .map(|g| {
                let run = &run;
                s.spawn(move || {
                    let mut t = T::default();
                    for (i, d) in dirs.iter().enumerate() {
                        run(g, d, &format!("case{i}"), &mut t);
                    }
                    (g.clone(), t)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}
