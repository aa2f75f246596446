//! Differential test of the attributes reader against both gits: seeded, generated work trees
//! (root `.gitattributes`, nested ones, `info/attributes`; macros, negation, quoting, CR, NUL,
//! BOM, long lines) and mutations of the seed files (`fuzz/seeds/attributes_parse/`), read
//! by `git check-attr -a -z --stdin` for a set of paths and by [`collect`].
//!
//! gitward's decision is the set of driver names selected for each kind ([`Attributes::names`]),
//! a superset by design (patterns are not evaluated). The rule checked: every `filter`, `diff`
//! or `merge` value git reports for any path is in that set, or gitward refuses
//! ([`AttributesError::NonUtf8Name`]). A value git reports that gitward does not know is a
//! driver git would run unseen: the test fails. Names gitward reports that git does not
//! (the superset) are counted and printed.
//!
//! git prints `set`, `unset` and `unspecified` for the states; a driver named so would be
//! ambiguous in its output, so the generator never names one so.

use super::{collect, AttributesError, Options};
use crate::catalogue::DriverKind;
use crate::difftest::{self, Rng};
use std::fs;
use std::path::{Path, PathBuf};

const DRIVERS: &[&[u8]] = &[
    b"x",
    b"lfs",
    b"a.b",
    b"A",
    b"q-1",
    b"",
    b"with space",
    b"caf\xc3\xa9",
    b"\xff",
    b"x=y",
];
const ATTRS: &[&[u8]] = &[
    b"filter", b"diff", b"merge", b"FILTER", b"Diff", b"text", b"eol", b"m", b"m2", b"binary",
    b"b@d",
];
const MACROS: &[&[u8]] = &[b"m", b"m2", b"binary", b"filter", b"M"];
/// Patterns, and paths that match them (the query set is the union).
const PATTERNS: &[&[u8]] = &[
    b"*",
    b"*.txt",
    b"a*",
    b"sub/*",
    b"**/x",
    b"\"a b\"",
    b"\"\\141\"",
    b"\"\\t\"",
    b"\"bad\\q",
    b"\\!x",
    b"!x",
    b"#x",
    b"\\#x",
    b"[ab]",
    b"x/",
    b"/a",
    b"A.TXT",
    b"\"*\"",
];
const PATHS: &[&[u8]] = &[
    b"a",
    b"a.txt",
    b"b",
    b"x",
    b"a b",
    b"\t",
    b"!x",
    b"#x",
    b"\"bad\\q",
    b"A.TXT",
    b"*",
    b"sub/a.txt",
    b"sub/x",
    b"sub/deep/x",
    b"sub/deep/a",
    b"x/y",
];

fn state(r: &mut Rng, out: &mut Vec<u8>) {
    match r.below(10) {
        0 => out.push(b'-'),
        1 => out.push(b'!'),
        _ => {}
    }
    out.extend_from_slice(r.pick(ATTRS));
    if r.pct(65) {
        out.push(b'=');
        out.extend_from_slice(r.pick(DRIVERS));
    }
}

fn blank(r: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(r.pick(&[&b" "[..], b" ", b"\t", b"  ", b"\r", b" \x0b"]));
}

fn line(r: &mut Rng, out: &mut Vec<u8>) {
    if r.pct(10) {
        blank(r, out);
    }
    match r.below(10) {
        0 => out.extend_from_slice(r.pick(&[&b"# filter=x"[..], b"", b"  ", b"#"])),
        1 | 2 => {
            // a macro definition, odd spellings included
            out.extend_from_slice(r.pick(&[
                &b"[attr]"[..],
                b"[attr]",
                b"[attr] ",
                b"\"[attr]",
                b"[ATTR]",
            ]));
            out.extend_from_slice(r.pick(MACROS));
            if out.ends_with(b"\"[attr]m") || r.pct(3) {
                out.push(b'"');
            }
        }
        _ => out.extend_from_slice(r.pick(PATTERNS)),
    }
    for _ in 0..1 + r.below(4) {
        blank(r, out);
        state(r, out);
    }
    if r.pct(3) {
        out.push(0);
        out.extend_from_slice(b" filter=after-nul");
    }
    if r.pct(1) {
        out.extend(std::iter::repeat_n(b' ', 2100));
        out.extend_from_slice(b"filter=long");
    }
}

fn file(r: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    if r.pct(5) {
        out.extend_from_slice(b"\xef\xbb\xbf");
    }
    for _ in 0..1 + r.below(6) {
        line(r, &mut out);
        out.extend_from_slice(r.pick(&[&b"\n"[..], b"\n", b"\n", b"\r\n", b"\r"]));
    }
    out
}

/// The four files of one case: `.gitattributes`, `sub/.gitattributes`,
/// `sub/deep/.gitattributes`, `.git/info/attributes` (`None`: absent).
fn case(r: &mut Rng, seeds: &[Vec<u8>]) -> [Option<Vec<u8>>; 4] {
    let one = |r: &mut Rng| -> Option<Vec<u8>> {
        match r.below(10) {
            0..=2 => None,
            3 | 4 => {
                let base = &seeds[r.below(seeds.len())];
                Some(difftest::mutate(r, base))
            }
            _ => Some(file(r)),
        }
    };
    [one(r), one(r), one(r), one(r)]
}

/// A git dir without `git init`: `HEAD`, `objects/`, `refs/`, a minimal `config`.
fn make_repo(dir: &Path, files: &[Option<Vec<u8>>; 4]) {
    for d in [".git/objects", ".git/refs", ".git/info", "sub/deep"] {
        fs::create_dir_all(dir.join(d)).unwrap();
    }
    fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(
        dir.join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
    )
    .unwrap();
    let at = [
        ".gitattributes",
        "sub/.gitattributes",
        "sub/deep/.gitattributes",
        ".git/info/attributes",
    ];
    for (f, bytes) in at.iter().zip(files) {
        if let Some(b) = bytes {
            fs::write(dir.join(f), b).unwrap();
        }
    }
}

#[derive(Default)]
struct Tally {
    compared: usize,
    driver_values: usize,
    refused: usize,
    superset_only: usize,
    disagreements: Vec<String>,
}

fn run_case(g: &Path, home: &Path, dir: &Path, label: &str, t: &mut Tally) {
    let mut stdin = Vec::new();
    for p in PATHS {
        stdin.extend_from_slice(p);
        stdin.push(0);
    }
    let mut cmd = difftest::git_isolated(g, home, dir);
    cmd.args(["check-attr", "-a", "-z", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&stdin).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{label}: git check-attr failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let git_dir = dir.join(".git");
    let ours = collect(&Options::for_repository(Some(dir), &git_dir, &git_dir));
    let ours = match ours {
        Ok(a) => a,
        Err(AttributesError::NonUtf8Name { .. }) => {
            t.refused += 1;
            return;
        }
        Err(e) => {
            t.disagreements
                .push(format!("{label}: git reads it, gitward fails: {e}"));
            return;
        }
    };
    t.compared += 1;
    let fields: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
    let mut seen: Vec<(DriverKind, String)> = Vec::new();
    for triple in fields.chunks(3).filter(|c| c.len() == 3) {
        let (path, attr, value) = (triple[0], triple[1], triple[2]);
        let Some(kind) = std::str::from_utf8(attr)
            .ok()
            .and_then(DriverKind::from_attribute)
        else {
            continue;
        };
        if matches!(value, b"set" | b"unset" | b"unspecified") {
            continue;
        }
        t.driver_values += 1;
        let value = String::from_utf8_lossy(value).into_owned();
        if !ours.names(kind).contains(&value) {
            t.disagreements.push(format!(
                "{label}: git: {} {}={value:?}; gitward's {} names: {:?}",
                String::from_utf8_lossy(path),
                kind.name(),
                kind.name(),
                ours.names(kind)
            ));
        }
        seen.push((kind, value));
    }
    for kind in DriverKind::ALL {
        t.superset_only += ours
            .names(kind)
            .into_iter()
            .filter(|n| !seen.contains(&(kind, n.clone())))
            .count();
    }
}

#[test]
#[cfg_attr(
    gitward_no_git,
    ignore = "no git at /usr/bin/git or /usr/local/bin/git to compare with"
)]
fn every_driver_git_selects_is_collected() {
    let gits = difftest::gits();
    let seed = difftest::seed(0x6174_7472);
    let n = difftest::cases(1500);
    let seeds = difftest::seeds("attributes_parse");
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let home = root.join("home");
    fs::create_dir_all(&home).unwrap();
    let mut r = Rng(seed);
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| {
            let dir = root.join(format!("case{i}"));
            make_repo(&dir, &case(&mut r, &seeds));
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
            "{}: {n} work trees (seed {seed:#x}): compared {}, driver values git reports {}, \
             gitward refuses (non-UTF-8 name) {}, names only gitward reports (superset) {}, \
             disagree {}",
            g.display(),
            t.compared,
            t.driver_values,
            t.refused,
            t.superset_only,
            t.disagreements.len()
        );
        assert!(
            t.driver_values > n,
            "too few driver values from git: the generator is off"
        );
        failures.extend(t.disagreements.iter().take(20).cloned());
    }
    if !failures.is_empty() {
        eprintln!("cases kept in {}", tmp.keep().display());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
