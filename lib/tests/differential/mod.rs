//! Shared parts of the differential tests (`differential_*.rs`): a seeded generator, the gits
//! to use as oracles, the run size, and where the non-git oracles live.
//!
//! A differential test feeds the same bytes to one of gitward's parsers and to the program that
//! really reads them (git, VS Code's `jsonc-parser`, python's `tomllib`, `python-dotenv`), and
//! fails where gitward would decide differently from that reading *and not refuse*: a refusal
//! is the safe answer, a silent difference is a finding.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A small seeded generator (SplitMix64): the same seed gives the same inputs on every machine,
/// so a failure names a seed and an iteration that reproduce it.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// How many inputs a bounded run feeds each target: `GITWARD_DIFF_N` or `default`.
/// A long run sets it high (docs/fuzzing.md).
pub fn run_size(default: usize) -> usize {
    std::env::var("GITWARD_DIFF_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The seed of a run: `GITWARD_DIFF_SEED` or `default` (the bounded run is fixed).
pub fn seed(default: u64) -> u64 {
    std::env::var("GITWARD_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The gits on this machine. A missing one fails under `CI=true` and is reported as skipped
/// otherwise.
pub fn gits() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for g in ["/usr/bin/git", "/usr/local/bin/git"] {
        if Path::new(g).is_file() {
            out.push(PathBuf::from(g));
        } else {
            assert!(!ci(), "{g} is missing (CI=true: every git must be tested)");
            eprintln!("SKIPPED with {g}: not installed");
        }
    }
    assert!(!out.is_empty(), "no git to use as the oracle");
    out
}

/// The workspace root (the folder holding `Cargo.lock`).
pub fn workspace_root() -> PathBuf {
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !root.join("Cargo.lock").is_file() && root.pop() {}
    root
}

/// Where the npm oracles (`jsonc-parser`, `dotenv`) are installed: `GITWARD_NODE_MODULES`, or
/// `target/oracles/node_modules` under the workspace root (where `.ci/run` installs them).
pub fn node_modules() -> PathBuf {
    std::env::var_os("GITWARD_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/oracles/node_modules"))
}

/// Real repository bundles (`../shared/realrepos/*.bundle`), if any.
pub fn real_bundles() -> Vec<PathBuf> {
    let dir = workspace_root().join("../shared/realrepos");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "bundle"))
        .collect();
    out.sort();
    out
}

/// Byte-level mutations shared by the targets: flips, interesting values, splices, cuts.
pub fn mutate_bytes(rng: &mut Rng, data: &mut Vec<u8>, interesting: &[&[u8]]) {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        if data.is_empty() {
            data.extend_from_slice(rng.pick::<&[u8]>(interesting));
            continue;
        }
        let at = rng.below(data.len());
        match rng.below(7) {
            0 => data[at] ^= 1 << rng.below(8),
            1 => data[at] = rng.next() as u8,
            2 => {
                let v = *rng.pick(interesting);
                let end = (at + v.len()).min(data.len());
                data.splice(at..end, v.iter().copied());
            }
            3 => {
                let v = *rng.pick(interesting);
                data.splice(at..at, v.iter().copied());
            }
            4 => {
                let n = 1 + rng.below(8.min(data.len() - at));
                data.drain(at..at + n);
            }
            5 => {
                // Duplicate a slice somewhere else.
                let n = 1 + rng.below(32.min(data.len() - at));
                let chunk: Vec<u8> = data[at..at + n].to_vec();
                let to = rng.below(data.len());
                data.splice(to..to, chunk);
            }
            _ => data.truncate(at),
        }
    }
}
