//! Differential test of the `.gitmodules` readers against both gits: seeded, generated files
//! (`[submodule "<name>"]` in every header spelling git accepts or nearly accepts, keys in
//! any case, quoting, continuation lines, CR, NUL, BOM, values that run or redirect something)
//! and mutations of the seed files (`fuzz/seeds/gitmodules/`), read by
//! `git config -f .gitmodules --list -z` and by gitward's two readers:
//!
//! - the commit scan's [`rules::check_gitmodules`]: the findings of git's own reading (the
//!   same rules, [`rules::gitmodules_findings`], applied to git's entries) must all be among
//!   them; where git refuses the file, gitward must report it unparseable at git's line;
//! - safe-git's [`crate::safegit::gitmodules_ignore_keys`]: every `submodule.<name>.ignore`
//!   git reads must be overridable by a key it returns (`git -c` folds the section and the
//!   variable name to lower case, not the subsection) — else a `.gitmodules` hides a
//!   submodule's changes from `safe-git status`.

use super::rules::{self, ModuleEntry};
use crate::difftest::{self, Rng};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const NAMES: &[&[u8]] = &[
    b"lib",
    b"Lib",
    b"a.b",
    b"-x",
    b"../../x",
    b"/abs",
    b"sp ace",
    b"q\\\"t",
    b"b\\\\s",
    b"",
    b"caf\xc3\xa9",
    b"t\tab",
    b"x\xff",
];
const VARS: &[&str] = &[
    "path", "Path", "URL", "url", "update", "UPDATE", "ignore", "Ignore", "branch", "p@th",
];
const VALUES: &[&[u8]] = &[
    b"lib",
    b"https://example.com/x.git",
    b"ext::sh -c touch% /tmp/pwn",
    b"--upload-pack=touch /tmp/pwn",
    b"./local",
    b"../sibling",
    b"file:///tmp/x",
    b"fd::3",
    b"!sh -c x",
    b" !x",
    b"checkout",
    b"all",
    b"dirty",
    b"../../.git/x",
    b"-p",
    b"a\\\nb",
    b"\"q ; c\"",
    b"x ; comment",
    b"x # comment",
    b"\"!x\"",
    b"\\\"x",
    b"a\rb",
];

fn header(r: &mut Rng, out: &mut Vec<u8>) -> Vec<u8> {
    let name = r.pick(NAMES);
    let sec = r.pick(&[&b"submodule"[..], b"submodule", b"Submodule", b"SUBMODULE"]);
    out.push(b'[');
    out.extend_from_slice(sec);
    match r.below(8) {
        0 => {
            // deprecated `[submodule.Name]`: git folds the name to lower case
            out.push(b'.');
            out.extend_from_slice(r.pick(&[&b"Lib"[..], b"lib", b"a-B", b"x.Y"]));
        }
        1 => {
            // `[submodule.a "b"]`: the name is `a.b`
            out.push(b'.');
            out.extend_from_slice(r.pick(&[&b"a"[..], b"A", b""]));
            out.extend_from_slice(b" \"");
            out.extend_from_slice(name);
            out.push(b'"');
        }
        2 => {
            out.push(b'\t');
            out.push(b'"');
            out.extend_from_slice(name);
            out.push(b'"');
        }
        _ => {
            out.extend_from_slice(b" \"");
            out.extend_from_slice(name);
            if r.pct(97) {
                out.push(b'"');
            }
        }
    }
    if r.pct(98) {
        out.push(b']');
    }
    if r.pct(8) {
        out.extend_from_slice(r.pick(&[&b" ; c"[..], b" path = inline", b"url=x"]));
    }
    name.to_vec()
}

fn entry(r: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(r.pick(&[&b"\t"[..], b"", b"  ", b"\t"]));
    out.extend_from_slice(r.pick(VARS).as_bytes());
    if r.pct(92) {
        out.extend_from_slice(r.pick(&[&b" = "[..], b"=", b"\t=\t", b" =", b"= "]));
        for _ in 0..1 + r.below(2) {
            out.extend_from_slice(r.pick(VALUES));
        }
        if r.pct(5) {
            out.extend_from_slice(r.pick(&[&b" "[..], b"\t", b"\\", b"\"", b"\r"]));
        }
    }
}

fn file(r: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    if r.pct(3) {
        out.extend_from_slice(b"\xef\xbb\xbf");
    }
    for i in 0..1 + r.below(3) {
        if i > 0 || r.pct(95) {
            header(r, &mut out);
            out.push(b'\n');
        }
        for _ in 0..1 + r.below(4) {
            match r.below(12) {
                0 => out.extend_from_slice(r.pick(&[&b"# c"[..], b"; c \0 nul", b""])),
                _ => entry(r, &mut out),
            }
            out.extend_from_slice(r.pick(&[&b"\n"[..], b"\n", b"\n", b"\n", b"\r\n", b"\r"]));
        }
    }
    out
}

/// git's `--list -z` output: `(section, name, var, value)` of every `submodule.*.*` entry.
fn git_entries(out: &[u8]) -> Vec<(Vec<u8>, String, Option<Vec<u8>>)> {
    out.split(|&b| b == 0)
        .filter(|c| !c.is_empty())
        .filter_map(|c| {
            let (key, value) = match c.iter().position(|&b| b == b'\n') {
                Some(p) => (&c[..p], Some(c[p + 1..].to_vec())),
                None => (c, None),
            };
            let first = key.iter().position(|&b| b == b'.')?;
            let last = key.iter().rposition(|&b| b == b'.')?;
            (first != last && &key[..first] == b"submodule").then(|| {
                (
                    key[first + 1..last].to_vec(),
                    String::from_utf8_lossy(&key[last + 1..]).into_owned(),
                    value,
                )
            })
        })
        .collect()
}

/// The submodule a finding is about: its name as the message quotes it first.
fn subject(why: &str) -> &str {
    why.split('"').nth(1).unwrap_or(why)
}

/// A key as `git -c` stores it: section and variable name folded, the subsection kept.
fn canonical(key: &str) -> Option<String> {
    let first = key.find('.')?;
    let last = key.rfind('.')?;
    (first != last).then(|| {
        format!(
            "{}{}{}",
            key[..first].to_ascii_lowercase(),
            &key[first..last],
            key[last..].to_ascii_lowercase()
        )
    })
}

#[derive(Default)]
struct Tally {
    git_reads: usize,
    git_refuses: usize,
    findings_git_reading: usize,
    extra_findings: usize,
    ignore_keys: usize,
    ignore_refused: usize,
    disagreements: Vec<String>,
}

fn run_case(g: &Path, home: &Path, dir: &Path, label: &str, t: &mut Tally) {
    let bytes = fs::read(dir.join(".gitmodules")).unwrap();
    let out = difftest::git_isolated(g, home, dir)
        .args(["config", "-f", ".gitmodules", "--list", "-z"])
        .output()
        .unwrap();
    let ours = rules::check_gitmodules(&bytes);
    let unparseable = ours
        .iter()
        .find(|(id, why)| *id == "GW-SCAN-014" && why.starts_with("not valid git config"));
    let shown = String::from_utf8_lossy(&bytes);
    if !out.status.success() {
        t.git_refuses += 1;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr
            .split("bad config line ")
            .nth(1)
            .and_then(|s| s.split(' ').next());
        match (unparseable, line) {
            (Some((_, why)), Some(n)) if why.ends_with(&format!("line {n}")) => {}
            _ => t.disagreements.push(format!(
                "{label}: git refuses ({}), gitward: {ours:?}\n{shown:?}",
                stderr.trim()
            )),
        }
        return;
    }
    t.git_reads += 1;
    if let Some(u) = unparseable {
        t.disagreements
            .push(format!("{label}: git reads it, gitward: {u:?}\n{shown:?}"));
        return;
    }
    let entries = git_entries(&out.stdout);
    let names: Vec<Vec<u8>> = entries
        .iter()
        .map(|(n, _, _)| n.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let module_entries: Vec<ModuleEntry<'_>> = entries
        .iter()
        .map(|(name, var, value)| ModuleEntry {
            name,
            key: var,
            value: value.as_deref(),
        })
        .collect();
    let expected = rules::gitmodules_findings(&names, &module_entries);
    t.findings_git_reading += expected.len();
    let covered = |(id, why): &(&str, String)| {
        let who = subject(why);
        ours.iter().any(|(oid, owhy)| {
            // The same rule for the same submodule (the value may read differently: git < 2.45
            // squashes a lone CR to a blank, where gitward keeps it and flags it as a control
            // character), or a stronger one: a command URL where git's reading is local.
            subject(owhy) == who && (oid == id || (*id == "GW-SCAN-011" && *oid == "GW-SCAN-010"))
        })
    };
    for f in &expected {
        if !covered(f) {
            t.disagreements.push(format!(
                "{label}: git's reading gives {f:?}; gitward: {ours:?}\n{shown:?}"
            ));
        }
    }
    t.extra_findings += ours
        .iter()
        .filter(|f| !expected.contains(f) && f.0 != "GW-SCAN-014")
        .count();
    // safe-git's override of `submodule.<name>.ignore`
    let keys: BTreeSet<String> = crate::safegit::gitmodules_ignore_keys(&bytes)
        .iter()
        .filter_map(|k| canonical(&String::from_utf8_lossy(k)))
        .collect();
    for (name, var, _) in &entries {
        if var != "ignore" {
            continue;
        }
        t.ignore_keys += 1;
        let key = format!("submodule.{}.ignore", String::from_utf8_lossy(name));
        if !keys.contains(&key) {
            t.disagreements.push(format!(
                "{label}: git reads {key:?}; safe-git overrides {keys:?}\n{shown:?}"
            ));
        }
    }
}

#[test]
#[cfg_attr(
    gitward_no_git,
    ignore = "no git at /usr/bin/git or /usr/local/bin/git to compare with"
)]
fn gitmodules_readers_decide_on_what_git_reads() {
    let gits = difftest::gits();
    let seed = difftest::seed(0x6d6f_6475_6c65);
    let n = difftest::cases(2000);
    let seeds = difftest::seeds("gitmodules");
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let home = root.join("home");
    fs::create_dir_all(&home).unwrap();
    let mut r = Rng(seed);
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| {
            let dir = root.join(format!("case{i}"));
            fs::create_dir_all(&dir).unwrap();
            let bytes = if r.pct(30) {
                let base = &seeds[r.below(seeds.len())];
                difftest::mutate(&mut r, base)
            } else {
                file(&mut r)
            };
            fs::write(dir.join(".gitmodules"), bytes).unwrap();
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
            "{}: {n} files (seed {seed:#x}): git reads {}, git refuses {}, findings of git's \
             reading {} (all among gitward's unless listed below), gitward's extra findings {}, \
             ignore keys git reads {} (files safe-git refuses for a non-UTF-8 name {}), disagree {}",
            g.display(),
            t.git_reads,
            t.git_refuses,
            t.findings_git_reading,
            t.extra_findings,
            t.ignore_keys,
            t.ignore_refused,
            t.disagreements.len()
        );
        assert!(
            t.git_reads > n / 3 && t.findings_git_reading > n / 4,
            "too few files git reads: the generator is off"
        );
        failures.extend(t.disagreements.iter().take(15).cloned());
    }
    if !failures.is_empty() {
        eprintln!("cases kept in {}", tmp.keep().display());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The commit scan rates a driver attribute by whether some config file gives the driver a
/// program. Its config comes through gix, which reads `[diff.A "b"]` as the section `diff.A`
/// and keeps `[diff.A]`'s `A`; git reads the drivers `a.b` and `a` (the class the config
/// differential test covers). A `.gitattributes` selecting them must be rated as the armed
/// driver it is, not as a note.
#[test]
#[cfg_attr(
    gitward_no_git,
    ignore = "no git at /usr/bin/git or /usr/local/bin/git to compare with"
)]
fn scan_reads_driver_headers_as_git_does() {
    use crate::catalogue::Severity;
    for g in difftest::gits() {
        for (header, attr) in [
            ("[diff.A \"b\"]", "diff=a.b"),
            ("[diff.A]", "diff=a"),
            ("[diff\t\"t\"]", "diff=t"),
            ("[filter.Q \"x\"]", "filter=q.x"),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let home = tmp.path().join("home");
            let repo = tmp.path().join("repo");
            fs::create_dir_all(&home).unwrap();
            fs::create_dir_all(&repo).unwrap();
            let git = |args: &[&str]| {
                let out = difftest::git_isolated(&g, &home, &repo)
                    .args(["-c", "user.name=a", "-c", "user.email=a@b"])
                    .args(args)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{args:?}: {out:?}");
                out.stdout
            };
            git(&["init", "-q"]);
            fs::write(repo.join("a.txt"), "one\n").unwrap();
            git(&["add", "."]);
            git(&["commit", "-qm", "one"]);
            let snap = super::RefSnapshot::take(&repo.join(".git")).unwrap();
            let mut cfg = fs::read(repo.join(".git/config")).unwrap();
            cfg.extend_from_slice(
                format!("{header}\n\ttextconv = sh -c x\n\tclean = sh -c x\n").as_bytes(),
            );
            fs::write(repo.join(".git/config"), cfg).unwrap();
            let listed = git(&["config", "--list"]);
            let (kind, name) = attr.split_once('=').unwrap();
            assert!(
                String::from_utf8_lossy(&listed).contains(&format!("{kind}.{name}.")),
                "control: git reads {header} as {kind}.{name}"
            );
            fs::write(repo.join(".gitattributes"), format!("*.txt {attr}\n")).unwrap();
            git(&["add", "."]);
            git(&["commit", "-qm", "attrs"]);
            let rep = super::scan(&repo.join(".git"), &snap, &super::Limits::default()).unwrap();
            let f = rep
                .findings
                .iter()
                .find(|f| f.path == ".gitattributes")
                .unwrap_or_else(|| panic!("{header}: no finding: {:?}", rep.findings));
            assert_ne!(
                f.severity,
                Severity::Note,
                "{} {header} + {attr}: rated a note: {}",
                g.display(),
                f.why
            );
        }
    }
}
