//! Precision of the commit scan on honest, merge-heavy history: git's combined-diff rule for
//! merges, one finding per (rule, path) with counts, drivers judged by the configuration,
//! `.gitattributes` judged on its changed lines, `*.sample` hooks, and the finding cap that
//! summarises instead of stopping. Run with every git (`/usr/bin/git`, `/usr/local/bin/git`).

mod scan_support;
use gitward::catalogue::Severity;
use gitward::scan::{self, Finding, Limits, RefSnapshot, ScanReport};
use scan_support::{gits, Repo};

fn scan_since(r: &Repo, snap: &RefSnapshot) -> ScanReport {
    scan::scan(&r.git_dir(), snap, &Limits::default()).unwrap()
}

fn of<'a>(rep: &'a ScanReport, rule: &str) -> Vec<&'a Finding> {
    rep.findings.iter().filter(|f| f.rule_id == rule).collect()
}

/// A topic adds a CI file and a hook-like executable; main moves on; the merge takes the
/// topic's content unchanged. The topic commit is flagged, the merge is not.
#[test]
fn merge_equal_to_a_parent_is_not_flagged() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("$GIT checkout -qb topic && mkdir -p .github/workflows && echo x > .github/workflows/ci.yml && $GIT add . && $GIT commit -qm ci");
        r.sh("$GIT checkout -q main && echo b > b && $GIT add b && $GIT commit -qm b");
        r.sh("$GIT merge -q --no-edit topic");
        let topic = r.rev("topic");
        let merge = r.rev("main");
        let rep = scan_since(&r, &snap);
        assert!(rep.incomplete.is_none(), "{rep:?}");
        let ci = of(&rep, "GW-SCAN-070");
        assert_eq!(ci.len(), 1, "{}: {rep:#?}", git.display());
        assert_eq!(ci[0].commit, topic);
        assert_eq!(ci[0].last_commit, topic, "the merge {merge} is not flagged");
        assert_eq!((ci[0].commits, ci[0].contents), (1, 1));
    }
}

/// The same history seen from the other side: main's own change (`b`) is not reported
/// again at the merge, whichever parent is first.
#[test]
fn merge_does_not_repeat_mainline_changes() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a && $GIT branch topic");
        r.sh("mkdir -p .github/workflows && echo x > .github/workflows/ci.yml && $GIT add . && $GIT commit -qm ci");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        // The topic forked before the CI file and is merged with main as its *second* parent
        // and as its first: neither merge brings the CI file again.
        r.sh("$GIT checkout -q topic && echo t > t && $GIT add t && $GIT commit -qm t && $GIT merge -q --no-edit main");
        r.sh("$GIT checkout -q main && $GIT merge -q --no-edit topic");
        let rep = scan_since(&r, &snap);
        assert!(rep.is_clean(), "{}: {rep:#?}", git.display());
    }
}

/// An evil merge: its own tree adds a path neither parent has. Flagged at the merge.
#[test]
fn evil_merge_is_flagged() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a && $GIT branch topic");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("$GIT checkout -q topic && echo t > t && $GIT add t && $GIT commit -qm t");
        r.sh("$GIT checkout -q main && echo b > b && $GIT add b && $GIT commit -qm b");
        r.sh("$GIT merge -q --no-commit topic; mkdir -p .github/workflows && echo evil > .github/workflows/ci.yml && $GIT add . && $GIT commit -qm merge");
        let merge = r.rev("main");
        let rep = scan_since(&r, &snap);
        let ci = of(&rep, "GW-SCAN-070");
        assert_eq!(ci.len(), 1, "{}: {rep:#?}", git.display());
        assert_eq!(ci[0].commit, merge);
        // The same path changed in the merge to content that differs from both parents,
        // where both parents have it: still the merge's own.
        r.sh("$GIT checkout -q topic && mkdir -p .github/workflows && echo one > .github/workflows/ci.yml && $GIT add . && $GIT commit -qm one");
        r.sh(
            "$GIT checkout -q main && echo two > .github/workflows/ci.yml && $GIT commit -qam two",
        );
        r.sh("tree=$(gw_add \"$($GIT rev-parse main^{tree})\" .github/workflows/ci.yml 100644 \"$(gw_blob 'three\\n')\") && gw_commit_tree \"$tree\" $($GIT rev-parse main topic)");
        let merge2 = r.rev("main");
        let rep = scan_since(&r, &snap);
        let ci = of(&rep, "GW-SCAN-070");
        assert_eq!(ci.len(), 1, "{rep:#?}");
        assert_eq!(ci[0].last_commit, merge2);
        // merge, one, two, merge2: four commits, four contents.
        assert_eq!((ci[0].commits, ci[0].contents), (4, 4), "{rep:#?}");
    }
}

/// A path changed by many commits is one finding with the counts, the first and the last
/// commit; a content that comes back counts once.
#[test]
fn findings_are_aggregated_per_rule_and_path() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        let first = r.sh(
            "echo v1 > .gitlab-ci.yml && $GIT add . && $GIT commit -qm 1 && $GIT rev-parse HEAD",
        );
        r.sh("for v in v2 v3 v1 v4; do echo $v > .gitlab-ci.yml && $GIT commit -qam $v; done");
        let last = r.rev("main");
        let rep = scan_since(&r, &snap);
        let ci = of(&rep, "GW-SCAN-070");
        assert_eq!(ci.len(), 1, "{rep:#?}");
        assert_eq!(ci[0].commit, first.trim());
        assert_eq!(ci[0].last_commit, last);
        assert_eq!((ci[0].commits, ci[0].contents), (5, 4));
        // The event carries the counts.
        let ev = rep.events(std::path::Path::new("/r"));
        let v: serde_json::Value = serde_json::from_str(&ev[0].to_line()).unwrap();
        assert_eq!(v["event"], "commit_flagged");
        assert_eq!(v["commits"], 5);
        assert_eq!(v["contents"], 4);
        assert_eq!(v["last_commit"], last);
    }
}

/// Error-level findings keep each offending content: two armed versions are two findings.
#[test]
fn error_findings_keep_each_content() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a && $GIT config filter.evil.smudge 'touch pwned'");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("printf '*.c filter=evil\\n' > .gitattributes && $GIT add . && $GIT commit -qm 1");
        r.sh(
            "printf '*.c filter=evil\\n*.h filter=evil\\n' > .gitattributes && $GIT commit -qam 2",
        );
        let rep = scan_since(&r, &snap);
        let f = of(&rep, "GW-SCAN-001");
        assert_eq!(f.len(), 2, "{rep:#?}");
        assert!(f
            .iter()
            .all(|f| f.severity == Severity::Error && f.commits == 1));
        assert_ne!(f[0].commit, f[1].commit);
        assert_eq!(rep.exit_code(), gitward::exit::FOUND);
    }
}

/// `diff=cpp` (built into git) and a driver no config defines are notes; the same names
/// with a program in the owner's config are the rule's own severity.
#[test]
fn drivers_are_judged_by_the_configuration() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("printf '*.c diff=cpp\\n*.po filter=gettext-no-location\\n*.x merge=union\\n*.y merge=mine\\n' > .gitattributes && $GIT add . && $GIT commit -qm attrs");
        let rep = scan_since(&r, &snap);
        assert!(rep.incomplete.is_none());
        let sev = |rep: &ScanReport, rule: &str| -> Vec<Severity> {
            of(rep, rule).iter().map(|f| f.severity).collect()
        };
        assert_eq!(sev(&rep, "GW-SCAN-001"), [Severity::Note], "{rep:#?}");
        assert_eq!(sev(&rep, "GW-SCAN-002"), [Severity::Note]);
        assert_eq!(sev(&rep, "GW-SCAN-003"), [Severity::Note]);
        assert!(of(&rep, "GW-SCAN-002")[0]
            .why
            .contains("built-in diff driver"));
        assert!(of(&rep, "GW-SCAN-001")[0]
            .why
            .contains("no config file defines a program for filter.gettext-no-location"));
        // Notes alone leave the result clean (exit 0).
        assert!(rep.is_clean(), "{rep:#?}");
        assert_eq!(rep.exit_code(), gitward::exit::CLEAN);

        // The owner's config gives the drivers programs: warning and error per the rule.
        r.sh("$GIT config diff.cpp.textconv 'sh -c x' && $GIT config filter.gettext-no-location.clean 'sh -c y' && $GIT config merge.mine.driver 'sh -c z'");
        let rep = scan_since(&r, &snap);
        assert_eq!(sev(&rep, "GW-SCAN-001"), [Severity::Error], "{rep:#?}");
        assert_eq!(sev(&rep, "GW-SCAN-002"), [Severity::Warning]);
        let mut merge = sev(&rep, "GW-SCAN-003");
        merge.sort();
        assert_eq!(
            merge,
            [Severity::Note, Severity::Warning],
            "union stays a note"
        );
        assert_eq!(rep.exit_code(), gitward::exit::FOUND);

        // An empty program is how a driver is disarmed: a note again.
        r.sh("$GIT config filter.gettext-no-location.clean ''");
        let rep = scan_since(&r, &snap);
        assert_eq!(sev(&rep, "GW-SCAN-001"), [Severity::Note], "{rep:#?}");
    }
}

/// A driver defined in a file the repository's config includes counts too (includes are
/// read, as git reads them).
#[test]
fn drivers_in_included_config_count() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("printf '[filter \"lfsish\"]\\n\\tprocess = sh -c x\\n' > ../extra.cfg && $GIT config include.path ../../extra.cfg");
        r.sh("printf '*.bin filter=lfsish\\n' > .gitattributes && $GIT add . && $GIT commit -qm attrs");
        let rep = scan_since(&r, &snap);
        let f = of(&rep, "GW-SCAN-001");
        assert_eq!(f.len(), 1, "{rep:#?}");
        assert_eq!(f[0].severity, Severity::Error, "{rep:#?}");
    }
}

/// A changed `.gitattributes` is judged on the lines that changed.
#[test]
fn gitattributes_unchanged_lines_are_not_reported() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("$GIT config filter.evil.smudge 'touch pwned'");
        r.sh("printf '*.c filter=evil\\n' > .gitattributes && $GIT add . && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("printf '*.c filter=evil\\n*.txt text\\n' > .gitattributes && $GIT commit -qam b");
        let rep = scan_since(&r, &snap);
        assert!(rep.is_clean(), "{}: {rep:#?}", git.display());
        // A new line that sets a driver is reported, the old one is not.
        r.sh("printf '*.c filter=evil\\n*.txt text\\n*.h filter=evil\\n' > .gitattributes && $GIT commit -qam c");
        let rep = scan_since(&r, &snap);
        let f = of(&rep, "GW-SCAN-001");
        assert_eq!(f.len(), 1, "{rep:#?}");
        assert!(f[0].why.starts_with("line 3: filter=evil"), "{rep:#?}");
        // Removing a neutraliser below an unchanged driver line re-judges the whole file.
        let r = Repo::new(&git);
        r.sh("$GIT config filter.evil.smudge 'touch pwned'");
        r.sh("printf '*.c filter=evil\\n*.c -filter\\n' > .gitattributes && $GIT add . && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("printf '*.c filter=evil\\n' > .gitattributes && $GIT commit -qam b");
        let rep = scan_since(&r, &snap);
        assert_eq!(of(&rep, "GW-SCAN-001").len(), 1, "{rep:#?}");
    }
}

/// git runs a hook only by its exact name: `*.sample` files are not hook-like.
#[test]
fn sample_hooks_are_not_hook_like() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("mkdir -p templates/hooks && printf '#!/bin/sh\\n' > templates/hooks/pre-commit.sample && chmod +x templates/hooks/pre-commit.sample && $GIT add . && $GIT commit -qm t");
        let rep = scan_since(&r, &snap);
        assert!(rep.is_clean(), "{}: {rep:#?}", git.display());
        // Control: the same file without the suffix is hook-like.
        r.sh("$GIT mv templates/hooks/pre-commit.sample templates/hooks/pre-commit && $GIT commit -qm u");
        let rep = scan_since(&r, &snap);
        assert_eq!(of(&rep, "GW-SCAN-051").len(), 1, "{rep:#?}");
    }
}

/// Past the finding cap the rest is summarised per rule, and the scan stays complete.
#[test]
fn finding_cap_summarises_and_stays_complete() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let snap = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("mkdir -p .github/workflows && for i in 1 2 3 4 5 6; do echo $i > .github/workflows/w$i.yml; done && $GIT add . && $GIT commit -qm w");
        let limits = Limits {
            max_findings: 2,
            ..Limits::default()
        };
        let rep = scan::scan(&r.git_dir(), &snap, &limits).unwrap();
        assert!(rep.incomplete.is_none(), "{rep:#?}");
        assert_eq!(rep.exit_code(), gitward::exit::FOUND);
        let ci = of(&rep, "GW-SCAN-070");
        assert_eq!(ci.len(), 3, "two findings and one summary: {rep:#?}");
        let summary: Vec<_> = ci.iter().filter(|f| f.summarised > 0).collect();
        assert_eq!(summary.len(), 1);
        assert_eq!(summary[0].summarised, 4);
        assert!(summary[0].path.is_empty());
        assert!(
            summary[0].why.contains("past the cap of 2"),
            "{}",
            summary[0].why
        );
    }
}
