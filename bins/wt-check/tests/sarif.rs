//! `wt-check audit --format sarif` is valid SARIF 2.1.0: validated against the published
//! schema (fixtures/sarif/, from an npm package, see SOURCE.md) with Python's `jsonschema`.
//! A missing validator fails the test with the install command; it is never skipped.

mod common;

use std::process::Command;

const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/sarif/sarif-schema-2.1.0.json"
);

fn validate(doc: &std::path::Path) {
    let script = "import json,sys,jsonschema\n\
                  schema=json.load(open(sys.argv[1]))\n\
                  doc=json.load(open(sys.argv[2]))\n\
                  jsonschema.Draft4Validator.check_schema(schema)\n\
                  errs=sorted(jsonschema.Draft4Validator(schema).iter_errors(doc), key=str)\n\
                  [print(e.message, list(e.absolute_path)) for e in errs]\n\
                  sys.exit(1 if errs else 0)\n";
    let out = Command::new("python3")
        .args(["-c", script, SCHEMA])
        .arg(doc)
        .output()
        .expect(
            "python3 is needed to validate SARIF (install: python3 -m pip install 'jsonschema>=4')",
        );
    assert!(
        out.status.success(),
        "SARIF does not validate against the 2.1.0 schema (or jsonschema is missing: \
         python3 -m pip install 'jsonschema>=4'):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn audit_sarif_validates_against_the_published_schema() {
    let w = common::world();
    // Findings of several rules: a planted hook, an armed key, alternates, a nested bare repo.
    let hook = w.git_dir().join("hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    w.git(
        &w.main(),
        &["config", "core.fsmonitor", "/tmp/evil fsmonitor"],
    );
    std::fs::write(
        w.git_dir().join("objects/info/alternates"),
        "/nowhere/objects\n",
    )
    .unwrap();
    w.git(&w.main(), &["init", "-q", "--bare", "vendor/x.git"]);
    let out = w.wt_check(&["audit", "--format", "sarif", w.root().to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = w.root().join("out.sarif");
    std::fs::write(&doc, &out.stdout).unwrap();
    validate(&doc);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let results = run["results"].as_array().unwrap();
    for id in ["GW001", "GW004", "GW014", "GW011"] {
        assert!(
            results.iter().any(|r| r["ruleId"] == id),
            "no {id} result: {v:#}"
        );
    }
    for r in results {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            rules[idx],
            r["ruleId"].as_str().unwrap(),
            "ruleIndex points at its rule"
        );
        // Relative to the audited path, which `originalUriBaseIds` names.
        let art = &r["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(art["uriBaseId"], "%SRCROOT%", "{r:#}");
        assert!(!art["uri"].as_str().unwrap().starts_with('/'), "{r:#}");
        let fp = r["partialFingerprints"]["gitward/v1"].as_str().unwrap();
        assert_eq!(fp.len(), 32, "{r:#}");
        assert!(r["properties"]["security-severity"].is_string(), "{r:#}");
        // The title (first sentence) says what is wrong, not where.
        let text = r["message"]["text"].as_str().unwrap();
        assert!(!text.starts_with('/'), "{text}");
        assert!(!text.contains(w.root().to_str().unwrap()), "{text}");
    }
    let base = &run["originalUriBaseIds"]["%SRCROOT%"]["uri"];
    assert!(base.as_str().unwrap().starts_with("file:///"), "{base}");
    assert!(base.as_str().unwrap().ends_with('/'), "{base}");
    // The armed key's line is the alert's start line.
    let key = results.iter().find(|r| r["ruleId"] == "GW004").unwrap();
    let line = key["properties"]["line"].as_u64().unwrap();
    assert!(line > 0);
    assert_eq!(
        key["locations"][0]["physicalLocation"]["region"]["startLine"],
        line
    );
    for rule in run["tool"]["driver"]["rules"].as_array().unwrap() {
        let sev: f64 = rule["properties"]["security-severity"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((0.1..=10.0).contains(&sev), "{rule:#}");
        assert!(rule["help"]["markdown"].is_string(), "{rule:#}");
    }
    // No placeholder host is ever written as the tool's or a rule's home.
    assert!(!String::from_utf8_lossy(&out.stdout).contains(".invalid"));
    // Fingerprints are stable: a second run gives the same ones (path independence is a
    // unit test of `audit::baseline`).
    let again = w.wt_check(&["audit", "--format", "sarif", w.root().to_str().unwrap()]);
    let v2: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let fps = |v: &serde_json::Value| -> Vec<String> {
        v["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["partialFingerprints"]["gitward/v1"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(fps(&v), fps(&v2));
}

#[test]
fn read_errors_are_tool_notifications_not_alerts() {
    let w = common::world();
    let missing = w.root().join("no-such-folder");
    let out = w.wt_check(&[
        "audit",
        "--format",
        "sarif",
        w.main().to_str().unwrap(),
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let doc = w.root().join("err.sarif");
    std::fs::write(&doc, &out.stdout).unwrap();
    validate(&doc);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    assert!(run["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["ruleId"] != "GW016"));
    let inv = &run["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    let n = inv["toolExecutionNotifications"].as_array().unwrap();
    assert!(
        n.iter().any(|n| n["message"]["text"]
            .as_str()
            .unwrap()
            .contains("no-such-folder")),
        "{inv:#}"
    );
}

/// A baseline (JSON or SARIF output of an earlier run) leaves out what it records; new
/// findings still count; `--fail-on` chooses the level that sets exit 1.
#[test]
fn baseline_and_fail_on() {
    let w = common::world();
    let root = w.root().to_str().unwrap().to_owned();
    w.git(
        &w.main(),
        &["config", "core.hooksPath", "/opt/shared-hooks"],
    );
    let first = w.wt_check(&["audit", "--format", "json", &root]);
    assert_eq!(first.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert!(v["findings"][0]["fingerprint"].is_string(), "{v:#}");
    let json_base = w.root().join("base.json");
    std::fs::write(&json_base, &first.stdout).unwrap();
    let sarif = w.wt_check(&["audit", "--format", "sarif", &root]);
    let sarif_base = w.root().join("base.sarif");
    std::fs::write(&sarif_base, &sarif.stdout).unwrap();
    for base in [&json_base, &sarif_base] {
        let out = w.wt_check(&["audit", "--baseline", base.to_str().unwrap(), &root]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("left out"));
    }
    // Something new is reported and counts.
    let hook = w.git_dir().join("hooks/post-checkout");
    std::fs::write(
        &hook,
        "#!/bin/sh
",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = w.wt_check(&["audit", "--baseline", json_base.to_str().unwrap(), &root]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("post-checkout"), "{text}");
    assert!(!text.contains("hooks-path"), "{text}");
    // --fail-on: the warning alone (hooksPath outside) does not fail at `error`.
    std::fs::remove_file(&hook).unwrap();
    let warn_only = w.wt_check(&["audit", "--fail-on", "error", &root]);
    assert_eq!(
        warn_only.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&warn_only.stdout)
    );
    let warn = w.wt_check(&["audit", "--fail-on", "warning", &root]);
    assert_eq!(warn.status.code(), Some(1));
    // A baseline that is not one is an error, never an empty baseline.
    let bad = w.root().join("bad.json");
    std::fs::write(&bad, "[]").unwrap();
    let out = w.wt_check(&["audit", "--baseline", bad.to_str().unwrap(), &root]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
    let out = w.wt_check(&["audit", "--baseline", "/nonexistent/b.json", &root]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn empty_sarif_validates_and_clean_exits_zero() {
    // A plain repository with a submodule: git's own layout is not a finding.
    let w = common::World {
        tmp: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join(".gitconfig"), "").unwrap();
    w.git(&w.root(), &["init", "-q", "proj"]);
    std::fs::write(w.main().join("f"), "x\n").unwrap();
    w.git(&w.main(), &["add", "f"]);
    w.git(&w.main(), &["commit", "-q", "-m", "i"]);
    w.git(
        &w.main(),
        &["worktree", "add", "-q", w.other().to_str().unwrap()],
    );
    let out = w.wt_check(&["audit", "--format", "sarif", w.root().to_str().unwrap()]);
    let doc = w.root().join("clean.sarif");
    std::fs::write(&doc, &out.stdout).unwrap();
    validate(&doc);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
