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
        assert!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
                .starts_with("file:///")
        );
    }
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
