//! Fingerprints, baselines and the exit threshold of `wt-check audit`.
//!
//! A fingerprint names one finding independently of where the audited tree lives: the rule
//! id, the finding's path relative to the audited path it lies under, and the message with
//! every audited path taken out. So the same planted hook has the same fingerprint in two CI
//! checkouts at different absolute paths, and in two runs. It is what SARIF carries as
//! `partialFingerprints["gitward/v1"]` (code scanning tracks alerts by it) and what a
//! baseline records.
//!
//! A baseline is the output of an earlier `wt-check audit --format json` or
//! `--format sarif`: its fingerprints are read, and the findings that carry one of them are
//! left out of later runs (as gitleaks, zizmor and semgrep do). A baseline that cannot be read
//! or parsed is an error (exit 2), never an empty baseline. Read errors (rule `incomplete`)
//! are never subtracted: unknown stays unknown.

use super::{rules, Finding, Report};
use crate::catalogue::Severity;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The key of our fingerprint in SARIF's `partialFingerprints`; bump the version when the
/// recipe changes (old baselines then stop matching, which is visible, not silent).
pub const FINGERPRINT_KEY: &str = "gitward/v1";

/// `--fail-on`: the lowest level that makes the exit status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FailOn {
    Error,
    #[default]
    Warning,
    Note,
}

impl FailOn {
    /// The lowest level that counts.
    pub fn level(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Note => Severity::Note,
        }
    }
}

/// The audited path `p` lies under (the longest), as (index in `roots`, relative path).
pub fn relative<'a>(p: &'a Path, roots: &[PathBuf]) -> Option<(usize, &'a Path)> {
    roots
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            p.strip_prefix(r)
                .ok()
                .map(|rel| (i, rel, r.as_os_str().len()))
        })
        .max_by_key(|&(_, _, len)| len)
        .map(|(i, rel, _)| (i, rel))
}

/// The finding's message with every audited path taken out (longest first), so the text
/// does not depend on where the tree was checked out.
pub fn portable_message(msg: &str, roots: &[PathBuf]) -> String {
    let mut roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let mut s = msg.to_owned();
    for r in roots.iter().filter(|r| r.len() > 1) {
        s = s.replace(&format!("{r}/"), "").replace(r.as_str(), ".");
    }
    s
}

/// FNV-1a, 64 bits: stable across Rust versions and platforms (std's hasher is not).
fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The fingerprint of a finding (32 hex digits).
pub fn fingerprint(f: &Finding, roots: &[PathBuf]) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut text = Vec::new();
    text.extend_from_slice(f.rule.as_bytes());
    text.push(0);
    match relative(&f.path, roots) {
        Some((_, rel)) => text.extend_from_slice(rel.as_os_str().as_bytes()),
        None => text.extend_from_slice(f.path.as_os_str().as_bytes()),
    }
    text.push(0);
    text.extend_from_slice(portable_message(&f.message, roots).as_bytes());
    format!(
        "{:016x}{:016x}",
        fnv1a(&text, 0),
        fnv1a(&text, 0x9e37_79b9_7f4a_7c15)
    )
}

/// Why a baseline file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("{path}: cannot read the baseline: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a baseline (JSON or SARIF output of `wt-check audit`): {why}")]
    Parse { path: PathBuf, why: String },
}

/// The fingerprints recorded in a baseline file (JSON or SARIF output of `wt-check audit`).
pub fn load(path: &Path) -> Result<BTreeSet<String>, BaselineError> {
    let text = std::fs::read(path).map_err(|source| BaselineError::Read {
        path: path.to_owned(),
        source,
    })?;
    let parse = |why: String| BaselineError::Parse {
        path: path.to_owned(),
        why,
    };
    let v: Value = serde_json::from_slice(&text).map_err(|e| parse(e.to_string()))?;
    let mut set = BTreeSet::new();
    if let Some(findings) = v.get("findings").and_then(Value::as_array) {
        for f in findings {
            let fp = f
                .get("fingerprint")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    parse("a finding has no `fingerprint` (written by an older wt-check?)".into())
                })?;
            set.insert(fp.to_owned());
        }
    } else if let Some(runs) = v.get("runs").and_then(Value::as_array) {
        for r in runs.iter().filter_map(|r| r.get("results")?.as_array()) {
            for res in r {
                let fp = res
                    .get("partialFingerprints")
                    .and_then(|p| p.get(FINGERPRINT_KEY))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        parse(format!("a result has no `{FINGERPRINT_KEY}` fingerprint"))
                    })?;
                set.insert(fp.to_owned());
            }
        }
    } else {
        return Err(parse("neither `findings` nor `runs`".into()));
    }
    Ok(set)
}

/// Leave out the findings a baseline records; returns how many were left out. Read errors
/// (rule `incomplete`) stay.
pub fn subtract(report: &mut Report, known: &BTreeSet<String>) -> usize {
    let roots = report.paths.clone();
    let before = report.findings.len();
    report
        .findings
        .retain(|f| f.rule == rules::INCOMPLETE.id || !known.contains(&fingerprint(f, &roots)));
    before - report.findings.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(path: &str, msg: &str) -> Finding {
        Finding {
            rule: "GW001",
            name: "hook-planted",
            level: Severity::Error,
            path: PathBuf::from(path),
            repo: None,
            message: msg.into(),
            details: Default::default(),
        }
    }

    #[test]
    fn fingerprints_do_not_depend_on_the_checkout_path() {
        let a = finding("/ci/a/proj/.git/hooks/x", "/ci/a/proj/.git/hooks/x: runs");
        let b = finding(
            "/home/o/proj/.git/hooks/x",
            "/home/o/proj/.git/hooks/x: runs",
        );
        let fa = fingerprint(&a, &[PathBuf::from("/ci/a/proj")]);
        assert_eq!(fa, fingerprint(&b, &[PathBuf::from("/home/o/proj")]));
        assert_eq!(fa.len(), 32);
        let c = finding("/ci/a/proj/.git/hooks/y", "/ci/a/proj/.git/hooks/y: runs");
        assert_ne!(fa, fingerprint(&c, &[PathBuf::from("/ci/a/proj")]));
    }

    #[test]
    fn relative_takes_the_longest_root() {
        let roots = [PathBuf::from("/w"), PathBuf::from("/w/p")];
        assert_eq!(
            relative(Path::new("/w/p/x"), &roots),
            Some((1, Path::new("x")))
        );
        assert_eq!(relative(Path::new("/v"), &roots), None);
    }
}
