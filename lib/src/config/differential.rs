//! Differential test of the config reader against both gits: a few thousand seeded, generated
//! config files (with include targets) in every syntax git accepts or nearly accepts, and
//! mutations of real and hand-made files (`fuzz/seeds/config_parse/`), read by
//! `git config --list -z --includes --file F` and by [`enumerate`].
//!
//! The rule checked for every file, on each git:
//! - git refuses it → the enumeration refuses it with an error git makes too
//!   ([`ConfigError::git_fails_too`]); for a bad line, the same file and line as git names;
//! - git reads it → the enumeration gives exactly git's `(key, value)` list (the values of
//!   files git reads; `includeIf` targets are also read, as a superset, but git outside a
//!   repository takes every condition for false), or refuses for a reason git does not share
//!   (a path through procfs): those are counted and printed. Keys are compared byte for
//!   byte (a subsection may hold any bytes, non-UTF-8 ones included).
//!
//! Any other outcome is a silent disagreement and fails the test.

use super::tests::dialect_of;
use super::{enumerate, ConfigError, Options};
use crate::difftest::Rng;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const NAMES: &[&str] = &[
    "a",
    "b",
    "core",
    "Core",
    "diff",
    "filter",
    "merge",
    "remote",
    "x-y",
    "k9",
    "A",
    "include",
    "includeIf",
    "alias",
];
const KEYS: &[&str] = &[
    "b", "B", "clean", "textconv", "driver", "url", "x-1", "Path", "path", "pager", "k",
];
const SUBS: &[&[u8]] = &[
    b"x",
    b"X y",
    b"",
    b"a.b",
    b"q\\\"t",
    b"back\\\\slash",
    b"t\tab",
    b"cr\rx",
    b"nul\0x",
    b"\\z",
    b"caf\xc3\xa9",
    b"hi\xff",
    b"gitdir:/nowhere/",
    b"onbranch:main",
    b"unknown:x",
];
const EOLS: &[&[u8]] = &[b"\n", b"\n", b"\n", b"\r\n", b"\r"];

fn eol(r: &mut Rng, out: &mut Vec<u8>) {
    if r.pct(85) {
        out.push(b'\n');
    } else {
        out.extend_from_slice(r.pick(EOLS));
    }
}

fn ws(r: &mut Rng, out: &mut Vec<u8>) {
    match r.below(6) {
        0 => {}
        1 => out.push(b'\t'),
        2 => out.extend_from_slice(b"  "),
        3 if r.pct(20) => out.push(b'\r'),
        _ => out.push(b' '),
    }
}

fn header(r: &mut Rng, out: &mut Vec<u8>) {
    out.push(b'[');
    if r.pct(5) {
        ws(r, out);
    }
    out.extend_from_slice(r.pick(NAMES).as_bytes());
    match r.below(10) {
        0..=3 => {}
        4..=6 => {
            // `[section "sub"]`, maybe with a tab, maybe broken
            out.push(if r.pct(20) { b'\t' } else { b' ' });
            out.push(b'"');
            out.extend_from_slice(r.pick(SUBS));
            if r.pct(95) {
                out.push(b'"');
            }
        }
        7 => {
            // deprecated `[section.Sub]`
            out.push(b'.');
            out.extend_from_slice(r.pick(&["Sub", "x", "", "a.B"][..]).as_bytes());
        }
        _ => {
            // mixed: `[diff.a "b"]`, `[diff. ""]`
            out.push(b'.');
            out.extend_from_slice(r.pick(&["a", "A", "", "b.c"][..]).as_bytes());
            out.push(if r.pct(30) { b'\t' } else { b' ' });
            out.push(b'"');
            out.extend_from_slice(r.pick(SUBS));
            out.push(b'"');
        }
    }
    if r.pct(97) {
        out.push(b']');
    }
    if r.pct(10) {
        out.extend_from_slice(r.pick(&[&b" ; c"[..], b"#c", b" x = 1", b"k"]));
    }
}

fn value(r: &mut Rng, out: &mut Vec<u8>) {
    let pieces: &[&[u8]] = &[
        b"v",
        b"sh -c 'x'",
        b" ",
        b"\t",
        b"\"q\"",
        b"\"in ; side # q\"",
        b"\\t",
        b"\\n",
        b"\\\\",
        b"\\\"",
        b"\\b",
        b"\\x",
        b"\\\n",
        b"\\\r\n",
        b" ; comment",
        b" # comment",
        b"\r",
        b"\0",
        b"\"",
        b"%f",
        b"\xc3\xa9",
        b"\xfe",
        b"\x0b\x0c",
    ];
    for _ in 0..r.below(5) {
        if r.pct(70) {
            out.extend_from_slice(pieces[r.below(6)]);
        } else {
            out.extend_from_slice(r.pick(pieces));
        }
    }
    if r.pct(2) {
        out.extend(std::iter::repeat_n(b'y', 3000 + r.below(3000)));
    }
}

fn include_target(r: &mut Rng) -> &'static [u8] {
    r.pick(&[
        &b"inc1.cfg"[..],
        b"./inc2.cfg",
        b"main.cfg",
        b"missing.cfg",
        b"folder",
        b"~/h.cfg",
        b"inc1.cfg\t",
        b"\"inc2.cfg\"",
        b"",
    ])
}

fn entry(r: &mut Rng, out: &mut Vec<u8>, includes: bool) {
    ws(r, out);
    if includes && r.pct(12) {
        if r.pct(50) {
            out.extend_from_slice(b"[include]");
        } else {
            out.extend_from_slice(b"[includeIf \"");
            out.extend_from_slice(r.pick(&[&b"onbranch:main"[..], b"gitdir:/nowhere/", b"x:y"]));
            out.extend_from_slice(b"\"]");
        }
        eol(r, out);
        out.extend_from_slice(b"\tpath = ");
        out.extend_from_slice(include_target(r));
        if r.pct(3) {
            out.extend_from_slice(b"\n\tpath");
        }
        return;
    }
    let k = r.pick(KEYS).as_bytes();
    if r.pct(2) {
        out.extend_from_slice(r.pick(&[&b"1k"[..], b"k_x", b"k\0", b"-k", b"k\r"]));
    } else {
        out.extend_from_slice(k);
    }
    match r.below(10) {
        0 => {}
        1 => ws(r, out),
        _ => {
            ws(r, out);
            out.push(b'=');
            ws(r, out);
            value(r, out);
        }
    }
}

/// One generated file: a mix of comments, headers, entries, blank lines.
fn file(r: &mut Rng, lines: usize, includes: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if r.pct(3) {
        out.extend_from_slice(b"\xef\xbb\xbf");
    }
    if r.pct(5) {
        entry(r, &mut out, false); // a key before any section header
        eol(r, &mut out);
    }
    for i in 0..lines {
        match r.below(10) {
            0 => {
                out.extend_from_slice(r.pick(&[
                    &b"# comment"[..],
                    b"; c",
                    b"# nul \0 in comment",
                    b"# cr \r in comment",
                    b"#\xff",
                ]));
            }
            1 => {}
            2 | 3 => header(r, &mut out),
            _ if i == 0 => header(r, &mut out),
            _ => entry(r, &mut out, includes),
        }
        eol(r, &mut out);
    }
    if r.pct(10) {
        out.truncate(out.len().saturating_sub(1)); // no final newline
    }
    out
}

#[derive(Default, Debug)]
struct Tally {
    git_reads_same: usize,
    git_refuses_we_refuse: usize,
    refused_by_rule: Vec<String>,
    /// Files git reads fine that hold a broken include behind a condition (or the like),
    /// left out of the enumeration ([`super::Enumeration::tolerated`]).
    with_tolerated: usize,
    disagreements: Vec<String>,
}

/// `(key, value)` pairs of `git config --list -z` output; `None` for an implicit boolean.
fn git_pairs(out: &[u8]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    out.split(|&b| b == 0)
        .filter(|c| !c.is_empty())
        .map(|c| match c.iter().position(|&b| b == b'\n') {
            Some(p) => (c[..p].to_vec(), Some(c[p + 1..].to_vec())),
            None => (c.to_vec(), None),
        })
        .collect()
}

/// git's "bad config line N in file F" → `(N, F)`.
fn git_bad_line(stderr: &[u8]) -> Option<(usize, String)> {
    let s = String::from_utf8_lossy(stderr);
    let rest = s.split("bad config line ").nth(1)?;
    let (n, rest) = rest.split_once(" in file ")?;
    Some((n.parse().ok()?, rest.lines().next()?.to_owned()))
}

fn run_case(g: &Path, dir: &Path, home: &Path, tally: &mut Tally, label: &str) {
    let out = Command::new(g)
        .args(["config", "--list", "-z", "--includes", "--file", "main.cfg"])
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .output()
        .unwrap();
    let opts = Options {
        system: Some(dir.join("main.cfg")),
        home: Some(home.to_path_buf()),
        dialect: dialect_of(g),
        ..Options::default()
    };
    let ours = enumerate(&opts);
    let who = format!("{} {label}", g.display());
    match (out.status.success(), ours) {
        (true, Ok(e)) => {
            let mine: Vec<(Vec<u8>, Option<Vec<u8>>)> = e
                .values()
                .iter()
                .filter(|v| !v.origin.conditional)
                .map(|v| (v.key_bytes().to_vec(), v.value.as_ref().map(|b| b.to_vec())))
                .collect();
            let theirs = git_pairs(&out.stdout);
            if !e.tolerated().is_empty() {
                tally.with_tolerated += 1;
            }
            if mine == theirs {
                tally.git_reads_same += 1;
            } else {
                tally.disagreements.push(format!(
                    "{who}: git reads {:?}, we read {:?}",
                    theirs
                        .iter()
                        .map(|(k, v)| (
                            String::from_utf8_lossy(k).into_owned(),
                            v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned())
                        ))
                        .collect::<Vec<_>>(),
                    mine.iter()
                        .map(|(k, v)| (
                            String::from_utf8_lossy(k).into_owned(),
                            v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned())
                        ))
                        .collect::<Vec<_>>()
                ));
            }
        }
        (true, Err(err)) if !err.git_fails_too() => {
            tally.refused_by_rule.push(format!("{who}: {err}"));
        }
        (true, Err(err)) => tally
            .disagreements
            .push(format!("{who}: git reads it, we refuse: {err}")),
        (false, Ok(_)) => tally.disagreements.push(format!(
            "{who}: git refuses ({}), we read it",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        (false, Err(err)) if !err.git_fails_too() => {
            // Refused for a reason of ours where git fails anyway: a refusal either way.
            tally.git_refuses_we_refuse += 1;
        }
        (false, Err(err)) => {
            if let (Some((n, f)), ConfigError::Parse { file, line }) =
                (git_bad_line(&out.stderr), &err)
            {
                let same_file = dir.join(&f) == *file;
                if n != *line || !same_file {
                    tally
                        .disagreements
                        .push(format!("{who}: git: bad line {n} in {f}; we: {err}"));
                    return;
                }
            }
            tally.git_refuses_we_refuse += 1;
        }
    }
}

fn seed() -> u64 {
    crate::difftest::seed(0x0067_6974_7761_7264)
}

fn cases() -> usize {
    crate::difftest::cases(1500)
}

/// The generated corpus, written once: `case<i>/main.cfg`, `inc1.cfg`, `inc2.cfg`, `folder/`,
/// and the shared `home/h.cfg`.
fn corpus(root: &Path) -> Vec<PathBuf> {
    let mut r = Rng(seed());
    let seeds = crate::difftest::seeds("config_parse");
    let home = root.join("home");
    fs::create_dir_all(&home).unwrap();
    fs::write(home.join("h.cfg"), "[home]\n\tk = 1\n").unwrap();
    (0..cases())
        .map(|i| {
            let dir = root.join(format!("case{i}"));
            fs::create_dir_all(dir.join("folder")).unwrap();
            let n = 2 + r.below(10);
            let main = if r.pct(25) {
                // a near-miss of a real or hand-made file (`fuzz/seeds/config_parse/`)
                let base = &seeds[r.below(seeds.len())];
                let mut m = crate::difftest::mutate(&mut r, base);
                if r.pct(50) {
                    m.extend_from_slice(&file(&mut r, n / 2, true));
                }
                m
            } else {
                file(&mut r, n, true)
            };
            fs::write(dir.join("main.cfg"), main).unwrap();
            let n = 1 + r.below(4);
            let nested = r.pct(20);
            let inc1 = file(&mut r, n, nested);
            fs::write(dir.join("inc1.cfg"), inc1).unwrap();
            let n = 1 + r.below(4);
            fs::write(dir.join("inc2.cfg"), file(&mut r, n, false)).unwrap();
            dir
        })
        .collect()
}

#[test]
#[cfg_attr(
    gitward_no_git,
    ignore = "no git at /usr/bin/git or /usr/local/bin/git to compare with"
)]
fn enumeration_reads_what_git_reads() {
    let gits = crate::difftest::gits();
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let dirs = corpus(&root);
    let home = root.join("home");
    let tallies: Vec<(PathBuf, Tally)> =
        crate::difftest::per_git(&gits, &dirs, |g, d, label, t| {
            run_case(g, d, &home, t, label)
        });
    let mut failures = Vec::new();
    for (g, t) in &tallies {
        eprintln!(
            "{}: {} files (seed {:#x}): git and gitward read the same {}, both refuse {}, \
             gitward refuses by rule where git reads {}, disagree {}",
            g.display(),
            dirs.len(),
            seed(),
            t.git_reads_same,
            t.git_refuses_we_refuse,
            t.refused_by_rule.len(),
            t.disagreements.len()
        );
        eprintln!(
            "  of the files read the same, {} hold a broken file git does not read now (tolerated)",
            t.with_tolerated
        );
        for x in t.refused_by_rule.iter().take(5) {
            eprintln!("  refused by rule: {x}");
        }
        failures.extend(t.disagreements.iter().take(20).cloned());
        assert!(
            t.git_reads_same > dirs.len() / 3,
            "too few files git reads: the generator is off"
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
