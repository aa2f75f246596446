//! Every case in `fixtures/commits/`: built with each git, in each placement (checked-out
//! branch, a branch that is not checked out, a merge), scanned; the expected rule, commit
//! and path must be reported, and the honest twin must report nothing at all.

mod scan_support;
use gitward::scan::{self, Limits, RefSnapshot, ScanReport};
use scan_support::{gits, Repo};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    description: String,
    rule: String,
    path: String,
    #[serde(default = "tip")]
    commit: String,
    setup: String,
    twin: String,
    #[serde(default)]
    config: Vec<String>,
    #[serde(default = "all_placements")]
    placements: Vec<Placement>,
    /// The severity expected (default: the rule's own).
    #[serde(default)]
    severity: Option<gitward::catalogue::Severity>,
}

fn tip() -> String {
    "tip".into()
}
fn all_placements() -> Vec<Placement> {
    vec![Placement::Head, Placement::Branch, Placement::Merge]
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Placement {
    Head,
    Branch,
    Merge,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/commits")
}

fn load() -> Vec<(String, Case)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixtures_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text = std::fs::read_to_string(&p).unwrap();
            let case: Case =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(
                scan::rule(&case.rule).is_some(),
                "{}: unknown rule {}",
                p.display(),
                case.rule
            );
            assert!(!case.description.is_empty());
            out.push((p.file_stem().unwrap().to_string_lossy().into_owned(), case));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    // GW_FIXTURE=<substring> runs only the matching cases (debugging).
    if let Ok(only) = std::env::var("GW_FIXTURE") {
        out.retain(|(n, _)| n.contains(&only));
    }
    out
}

/// Build the history; return the report and the branch the setup wrote to.
fn run(git: &Path, case: &Case, script: &str, place: Placement) -> (Repo, ScanReport, String) {
    let r = Repo::new(git);
    for kv in &case.config {
        let (k, v) = kv.split_once('=').expect("config entries are key=value");
        r.sh(&format!("$GIT config '{k}' '{v}'"));
    }
    let snap = RefSnapshot::take(&r.git_dir()).unwrap();
    let branch = match place {
        Placement::Head => "refs/heads/main",
        Placement::Branch => "refs/heads/side",
        Placement::Merge => "refs/heads/topic",
    };
    if place != Placement::Head {
        r.sh(&format!("$GIT update-ref {branch} HEAD"));
    }
    r.sh_env(script, &[("GW_BRANCH", branch)]);
    if place == Placement::Merge {
        r.sh(&format!(
            "m=$($GIT commit-tree {branch}^{{tree}} -p refs/heads/main -p {branch} -m merge) && $GIT update-ref refs/heads/main $m"
        ));
    }
    let rep = scan::scan(&r.git_dir(), &snap, &Limits::default()).unwrap();
    (r, rep, branch.to_string())
}

#[test]
fn fixture_count() {
    if std::env::var_os("GW_FIXTURE").is_some() {
        return;
    }
    assert!(load().len() >= 25, "issue 4 asks for at least 25 cases");
}

#[test]
fn every_fixture_and_its_twin() {
    let cases = load();
    let gits = gits();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (name, case) in &cases {
        for git in &gits {
            for &place in &case.placements {
                ran += 1;
                let label = format!("{name} [{place:?}, {}]", git.display());
                // Hostile history.
                let (r, rep, branch) = run(git, case, &case.setup, place);
                let c = r.rev(&case.commit.replace("tip", &branch));
                let severity = case
                    .severity
                    .unwrap_or_else(|| scan::rule(&case.rule).unwrap().severity);
                let hit = rep.findings.iter().any(|f| {
                    f.rule_id == case.rule
                        && (f.commit == c || f.last_commit == c)
                        && f.path == case.path
                        && f.severity == severity
                });
                if !hit {
                    failures.push(format!(
                        "{label}: expected {} ({severity:?}) at {c} path {:?}; got {:#?}",
                        case.rule, case.path, rep
                    ));
                }
                // The merge into main takes the topic's tree: by git's combined-diff rule it
                // changes nothing of its own and is never the (last) commit reported.
                if place == Placement::Merge {
                    let merge = r.rev("refs/heads/main");
                    if rep
                        .findings
                        .iter()
                        .any(|f| f.commit == merge || f.last_commit == merge)
                    {
                        failures.push(format!(
                            "{label}: the clean merge {merge} is flagged: {rep:#?}"
                        ));
                    }
                }
                if rep.incomplete.is_some() {
                    failures.push(format!("{label}: incomplete: {:?}", rep.incomplete));
                }
                // Honest twin.
                let (_r, rep, _) = run(git, case, &case.twin, place);
                if !rep.is_clean() {
                    failures.push(format!("{label} twin: expected nothing; got {rep:#?}"));
                }
                if rep.stats.commits == 0 {
                    failures.push(format!("{label} twin: walked no commit"));
                }
            }
        }
    }
    eprintln!("{ran} case runs, each with its twin");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
