//! End-of-turn commit scans: refs at pin time against refs now, every new commit's changed
//! paths checked against rules, with bounded work.
//!
//! At `wt-check pin` the orchestrator stores a [`RefSnapshot`]. At the turn's end,
//! [`scan`] walks every commit reachable from the refs now and not from the snapshot's tips,
//! diffs each against its first parent (a root commit against the empty tree), and checks
//! every added or changed path against [`RULES`]. A merge keeps a hit only where its content
//! differs from every parent (git's combined-diff rule): what a parent brought in is scanned
//! with that parent's own commits. Hits are reported once per (rule, severity, path) with the
//! number of commits and contents, the first and the last commit (error-level hits once per
//! offending content). A ref
//! whose old tip is no longer reachable from its new tip, or that was deleted, is reported
//! in [`ScanReport::rewritten`].
//!
//! Objects are read with gix only: no git process is started, and the repository is opened
//! with isolated permissions and `git_binary` off (research `gix-and-perf.md` §1.1–1.2).
//! The walk ignores the repository's commit-graph, shallow file and replace refs — all
//! three are files the agent can write, and each could hide commits from the walk.
//!
//! Work is bounded by [`Limits`]. Past a bound the report carries
//! [`ScanReport::incomplete`] and is never clean: `wt-check` exits 2. The finding cap is not a
//! work bound: past it findings are summarised per rule and the report stays complete.

#[cfg(test)]
mod differential;
mod engine;
pub(crate) mod packs;
pub(crate) mod reflogs;
pub mod rules;
mod snapshot;
mod treediff;
mod walk;

pub use rules::{rule, Rule, RULES};
pub use snapshot::{RefSnapshot, RefValue, ReflogIds, MAIN_WORKTREE, SNAPSHOT_FORMAT};

use crate::catalogue::Severity;
use crate::events::{Event, EventKind, Tool};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What went wrong before the scan could decide anything. Errors found while walking are
/// not errors: they make the report [`ScanReport::incomplete`] and keep what was found.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("{path}: cannot open the repository with gix: {message}")]
    Open { path: PathBuf, message: String },
    #[error("{git_dir}: cannot read refs: {message}")]
    Refs { git_dir: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("ref snapshot: {0}")]
    Snapshot(String),
    #[error("ref snapshot is for object format {snapshot}, the repository uses {repo}")]
    ObjectFormat { snapshot: String, repo: String },
}

/// Bounds on the work one scan may do. Past any of them the scan stops and the report says
/// why in [`ScanReport::incomplete`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// New commits walked (and diffed).
    pub max_commits: u64,
    /// Tree entries visited by all diffs together (every added, changed or deleted entry,
    /// folders included).
    pub max_paths: u64,
    /// Largest single blob read for a content rule (`.gitattributes`, `.gitmodules`,
    /// symlink targets, `config`). A larger one stops the scan: unread is not clean.
    pub max_blob_bytes: u64,
    /// All blob bytes read for content rules together.
    pub max_total_blob_bytes: u64,
    /// Wall-clock time, in seconds.
    pub max_seconds: u64,
    /// Distinct findings kept; past it, further ones are summarised per rule and severity
    /// (never dropped: the scan stays complete).
    pub max_findings: usize,
    /// Threads diffing commits (the walk runs on the calling thread). Not a bound on work.
    pub threads: usize,
    /// Memory for decoded objects kept between reads, all threads together: the walk's and
    /// every worker's delta-base cache (each entry counted with its bookkeeping) and each
    /// worker's object cache. Not a bound on work: a smaller value costs time, never
    /// completeness. The default gives each of the two default workers git's
    /// `core.deltaBaseCacheLimit` (96 MiB); more threads share the same total.
    pub max_cache_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_commits: 250_000,
            max_paths: 20_000_000,
            max_blob_bytes: 8 << 20,
            max_total_blob_bytes: 512 << 20,
            max_seconds: 300,
            max_findings: 10_000,
            threads: 2,
            max_cache_bytes: 216 << 20,
        }
    }
}

/// One finding: a rule that flags a path (or a ref) in the new commits, once per
/// (rule, severity, path) however many commits changed it — and for error-level findings once
/// per offending content too, so that every armed version is shown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Finding {
    /// `GW-SCAN-nnn`, see [`RULES`].
    pub rule_id: String,
    /// The rule's severity, or `note` for a driver attribute whose driver no config file
    /// gives a program.
    pub severity: Severity,
    /// The first (oldest in walk order) commit that adds or changes the path (for a ref rule:
    /// the object the ref names; for a tree named directly by a ref: the tree).
    pub commit: String,
    /// The path in the commit's tree, or the ref name for ref rules. Bytes that are not
    /// printable UTF-8 are escaped (`\r`, `\n`, `\t`, `\\`, `\xNN`); see [`escape_path`].
    pub path: String,
    /// Why, in one line, with the offending detail (of the newest commit).
    pub why: String,
    /// The last (newest) commit that changed the path this way; `commit` if only one did.
    #[serde(default)]
    pub last_commit: String,
    /// How many new commits changed the path this way.
    #[serde(default)]
    pub commits: u64,
    /// How many distinct contents (blob or tree ids) those commits left at the path.
    #[serde(default)]
    pub contents: u64,
    /// Non-zero for a summary past `Limits::max_findings`: the hits (one per commit and
    /// path) folded into it. Its `path` is empty.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub summarised: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a ref lost commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriteKind {
    /// The ref existed at the snapshot and is gone.
    Deleted,
    /// The ref moved to a commit from which its old tip is not reachable (force-push,
    /// rebase, reset, amend).
    NotFastForward,
    /// The ref now names an object that is not a commit, or named one before.
    Retargeted,
}

/// A ref whose move dropped history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    pub ref_name: String,
    pub kind: RewriteKind,
    pub old: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
}

/// Counters, for the log and the benchmark.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub refs_snapshot: usize,
    pub refs_now: usize,
    pub commits: u64,
    pub diffs: u64,
    pub paths: u64,
    pub blobs_read: u64,
    pub blob_bytes: u64,
    pub elapsed_ms: u64,
    pub threads: usize,
    /// The refs read now are exactly the snapshot's (names, ids and symbolic targets), and
    /// every symbolic ref names a ref under `refs/`: what `wt-check`'s record of the ref
    /// sources (`integrity::scanlink_key`) may vouch for.
    #[serde(default)]
    pub refs_as_snapshot: bool,
}

/// The result of [`scan`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanReport {
    pub findings: Vec<Finding>,
    pub rewritten: Vec<Rewrite>,
    /// Why the scan stopped early; `Some` means the result is incomplete and not clean.
    pub incomplete: Option<String>,
    pub stats: Stats,
}

impl ScanReport {
    /// Nothing found above a note, nothing rewritten, and the scan ran to its end. Notes
    /// (driver names no config arms) are reported but do not make the result dirty.
    pub fn is_clean(&self) -> bool {
        self.findings.iter().all(|f| f.severity == Severity::Note)
            && self.rewritten.is_empty()
            && self.incomplete.is_none()
    }

    /// The checker exit code: incomplete (2) wins over found (1) wins over clean (0).
    pub fn exit_code(&self) -> crate::exit::Code {
        if self.incomplete.is_some() {
            crate::exit::INCOMPLETE
        } else if !self.is_clean() {
            crate::exit::FOUND
        } else {
            crate::exit::CLEAN
        }
    }

    /// The report as events, for `wt-check` to print or log: one `commit_flagged` per
    /// finding, one `history_rewritten` per rewrite, and `scan_incomplete` if it stopped.
    pub fn events(&self, repo: &Path) -> Vec<Event> {
        let mut out = Vec::new();
        for f in &self.findings {
            out.push(finding_event(f, repo));
        }
        for r in &self.rewritten {
            out.push(rewrite_event(r, repo));
        }
        if let Some(why) = &self.incomplete {
            out.push(incomplete_event(why, &self.stats, repo));
        }
        out
    }
}

/// `commit_flagged` for one finding.
pub fn finding_event(f: &Finding, repo: &Path) -> Event {
    let name = rule(&f.rule_id).map(|r| r.name).unwrap_or("");
    let place = if f.commits > 1 {
        format!(
            "{} commits, {} contents, {}..{}",
            f.commits,
            f.contents,
            short(&f.commit),
            short(&f.last_commit)
        )
    } else {
        short(&f.commit).to_string()
    };
    let e = Event::new(
        Tool::WtCheck,
        EventKind::CommitFlagged,
        format!("{} {}: {} ({place})", f.rule_id, f.path, f.why),
    )
    .repo(repo)
    .path(&f.path)
    .with("rule", f.rule_id.clone())
    .with("rule_name", name)
    .with(
        "severity",
        serde_json::to_value(f.severity).unwrap_or_default(),
    )
    .with("commit", f.commit.clone())
    .with("last_commit", f.last_commit.clone())
    .with("commits", f.commits)
    .with("contents", f.contents)
    .with("why", f.why.clone());
    if f.summarised > 0 {
        e.with("summarised", f.summarised)
    } else {
        e
    }
}

/// `history_rewritten` for one ref.
pub fn rewrite_event(r: &Rewrite, repo: &Path) -> Event {
    let what = match r.kind {
        RewriteKind::Deleted => "was deleted".to_string(),
        RewriteKind::NotFastForward => format!(
            "moved from {} to {}, which does not contain it",
            short(&r.old),
            r.new.as_deref().map(short).unwrap_or("")
        ),
        RewriteKind::Retargeted => "now names an object of another kind".to_string(),
    };
    let mut e = Event::new(
        Tool::WtCheck,
        EventKind::HistoryRewritten,
        format!("{} {what}", r.ref_name),
    )
    .repo(repo)
    .with("ref", r.ref_name.clone())
    .with("kind", serde_json::to_value(r.kind).unwrap_or_default())
    .with("old", r.old.clone());
    if let Some(n) = &r.new {
        e = e.with("new", n.clone());
    }
    e
}

/// `scan_incomplete`.
pub fn incomplete_event(why: &str, stats: &Stats, repo: &Path) -> Event {
    Event::new(
        Tool::WtCheck,
        EventKind::ScanIncomplete,
        format!("commit scan incomplete: {why}"),
    )
    .repo(repo)
    .with("reason", why)
    .with("commits", stats.commits)
    .with("paths", stats.paths)
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// Scan the commits that are reachable from the refs of the repository at `repo_git_dir`
/// now and were not reachable from `snapshot`, and the refs that moved since.
///
/// `Err` only when nothing could be decided (the repository or its refs cannot be read, the
/// snapshot does not fit it). Everything else — a missing object, a bound reached — keeps
/// what was found and sets [`ScanReport::incomplete`].
pub fn scan(
    repo_git_dir: &Path,
    snapshot: &RefSnapshot,
    limits: &Limits,
) -> Result<ScanReport, ScanError> {
    engine::run(repo_git_dir, snapshot, limits)
}

/// Open a repository for reading only: no program runs (`git_binary` off), no `GIT_*`
/// variable is honoured, no attribute file outside the repository is read. System and
/// global config files and includes *are* read, for `core.hooksPath` and
/// `log.showSignature` (as a superset: every value any file sets). Replace refs and the
/// commit-graph are switched off. The delta-base cache is git's default, 96 MiB per handle: on
/// the synthetic benchmark 16 MiB was as fast, but on git.git's own history (deep tree deltas)
/// 16 MiB cost 1.5× the CPU time of 96 MiB (docs/perf-scan.md); 512 MiB bought nothing more.
pub(crate) fn open_repo(path: &Path) -> Result<gix::Repository, ScanError> {
    use gix::open::permissions::{Attributes, Config, Environment};
    use gix::sec::Permission;
    let mut perms = gix::open::Permissions::isolated();
    perms.config = Config {
        git_binary: false,
        system: true,
        git: true,
        user: true,
        env: false,
        includes: true,
    };
    perms.env = Environment {
        home: Permission::Allow,
        xdg_config_home: Permission::Allow,
        ..Environment::isolated()
    };
    perms.attributes = Attributes::isolated();
    let opts = gix::open::Options::default()
        .permissions(perms)
        .strict_config(false)
        .config_overrides([
            "core.deltaBaseCacheLimit=96m",
            "core.useReplaceRefs=false",
            "core.commitGraph=false",
        ]);
    gix::open_opts(path, opts).map_err(|e| ScanError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Render tree-path bytes as one printable line without losing information: valid UTF-8
/// passes through except `\` (as `\\`) and control characters (`\r`, `\n`, `\t`, `\xNN`);
/// bytes that are not UTF-8 become `\xNN`.
pub fn escape_path(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '\r' => s.push_str("\\r"),
                '\n' => s.push_str("\\n"),
                '\t' => s.push_str("\\t"),
                c if c.is_control() => {
                    let mut b = [0u8; 4];
                    for byte in c.encode_utf8(&mut b).bytes() {
                        s.push_str(&format!("\\x{byte:02x}"));
                    }
                }
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_is_printable_and_lossless_enough() {
        assert_eq!(escape_path(b"a/b.txt"), "a/b.txt");
        assert_eq!(escape_path(b"sub\r"), "sub\\r");
        assert_eq!(escape_path(b"a\\b"), "a\\\\b");
        assert_eq!(escape_path(b"x\xffy"), "x\\xffy");
        assert_eq!(escape_path(".g\u{200c}it".as_bytes()), ".g\u{200c}it");
    }

    #[test]
    fn events_carry_rule_commit_path_and_why() {
        let rep = ScanReport {
            findings: vec![Finding {
                rule_id: "GW-SCAN-001".into(),
                severity: Severity::Error,
                commit: "a".repeat(40),
                path: "sub/.gitattributes".into(),
                why: "line 1: filter=evil".into(),
                last_commit: "b".repeat(40),
                commits: 3,
                contents: 2,
                summarised: 0,
            }],
            rewritten: vec![],
            incomplete: Some("commit limit of 3 reached".into()),
            stats: Stats::default(),
        };
        let ev = rep.events(Path::new("/r"));
        assert_eq!(ev.len(), 2);
        let v: serde_json::Value = serde_json::from_str(&ev[0].to_line()).unwrap();
        assert_eq!(v["event"], "commit_flagged");
        assert_eq!(v["rule"], "GW-SCAN-001");
        assert_eq!(v["rule_name"], "attributes-filter");
        assert_eq!(v["severity"], "error");
        assert_eq!(v["commit"], "a".repeat(40));
        assert_eq!(v["path"], "sub/.gitattributes");
        assert_eq!(v["last_commit"], "b".repeat(40));
        assert_eq!(v["commits"], 3);
        assert_eq!(v["contents"], 2);
        assert!(v.get("summarised").is_none());
        let v: serde_json::Value = serde_json::from_str(&ev[1].to_line()).unwrap();
        assert_eq!(v["event"], "scan_incomplete");
        assert_eq!(v["reason"], "commit limit of 3 reached");
        // The report itself round-trips through JSON.
        let back: ScanReport = serde_json::from_str(&serde_json::to_string(&rep).unwrap()).unwrap();
        assert_eq!(back, rep);
    }

    #[test]
    fn exit_codes_order() {
        let mut r = ScanReport::default();
        assert_eq!(r.exit_code(), crate::exit::CLEAN);
        r.rewritten.push(Rewrite {
            ref_name: "refs/heads/x".into(),
            kind: RewriteKind::Deleted,
            old: "0".repeat(40),
            new: None,
        });
        assert_eq!(r.exit_code(), crate::exit::FOUND);
        r.incomplete = Some("time".into());
        assert_eq!(r.exit_code(), crate::exit::INCOMPLETE);
    }
}
