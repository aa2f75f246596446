//! The tampering cases of fixtures/tamper/cases.toml, end to end: pin, tamper, check
//! --restore, then check again. See the fixture file for the format.

mod common;

use serde::Deserialize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    ops: Vec<Vec<String>>,
    event: Option<String>,
    at: Option<String>,
    #[serde(default = "one")]
    exit: i32,
    #[serde(default)]
    restored: Vec<String>,
    #[serde(default)]
    quarantine: bool,
    audit: Option<String>,
}

fn one() -> i32 {
    1
}

fn resolve(w: &common::World, p: &str) -> PathBuf {
    let r = w.root();
    let s = p
        .replace("{tmp}", r.to_str().unwrap())
        .replace("{outside}", w.outside().to_str().unwrap())
        .replace("{other}", w.other().to_str().unwrap())
        .replace("{own}", w.own().to_str().unwrap())
        .replace("{main}", w.main().to_str().unwrap());
    if Path::new(&s).is_absolute() {
        PathBuf::from(s)
    } else {
        w.git_dir().join(s)
    }
}

fn remove_any(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).unwrap(),
        Ok(_) => std::fs::remove_file(p).unwrap(),
        Err(_) => {}
    }
}

/// Apply one op; returns the path it touched.
fn apply(w: &common::World, op: &[String]) -> Option<PathBuf> {
    let sub = |s: &str| {
        s.replace("{tmp}", w.root().to_str().unwrap())
            .replace("{outside}", w.outside().to_str().unwrap())
    };
    match op[0].as_str() {
        "write" => {
            let p = resolve(w, &op[1]);
            std::fs::write(&p, sub(&op[2])).unwrap();
            if let Some(m) = op.get(3) {
                let mode = u32::from_str_radix(m, 8).unwrap();
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            Some(p)
        }
        "append" => {
            let p = resolve(w, &op[1]);
            let mut b = std::fs::read(&p).unwrap();
            b.extend_from_slice(sub(&op[2]).as_bytes());
            std::fs::write(&p, b).unwrap();
            Some(p)
        }
        "remove" => {
            let p = resolve(w, &op[1]);
            remove_any(&p);
            Some(p)
        }
        "link" => {
            let p = resolve(w, &op[1]);
            std::os::unix::fs::symlink(sub(&op[2]), &p).unwrap();
            Some(p)
        }
        "fifo" => {
            let p = resolve(w, &op[1]);
            nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
            Some(p)
        }
        "mkdir" => {
            let p = resolve(w, &op[1]);
            std::fs::create_dir_all(&p).unwrap();
            Some(p)
        }
        "rename" => {
            let to = resolve(w, &op[2]);
            std::fs::rename(resolve(w, &op[1]), &to).unwrap();
            Some(to)
        }
        "chmod" => {
            let p = resolve(w, &op[1]);
            let mode = u32::from_str_radix(&op[2], 8).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            Some(p)
        }
        "git" => {
            let args: Vec<String> = op[1..].iter().map(|a| sub(a)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            w.git(&w.main(), &args);
            None
        }
        o => panic!("unknown op {o}"),
    }
}

fn run_case(c: &Case) -> Result<(), String> {
    let w = common::world();
    w.pin();
    let (code, ev) = w.check(false);
    if code != 0 {
        return Err(format!("check right after pin: exit {code}, events {ev:?}"));
    }
    let pinned: Vec<(PathBuf, Vec<u8>)> = c
        .restored
        .iter()
        .map(|r| {
            let p = resolve(&w, r);
            let b = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((p, b))
        })
        .collect::<Result<_, String>>()?;
    let mut last = None;
    for op in &c.ops {
        if let Some(p) = apply(&w, op) {
            last = Some(p);
        }
    }
    // The agent's version of what it touched last (files only), for the quarantine check.
    let agent_bytes = last.as_ref().and_then(|p| {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|_| std::fs::read(p).ok())
    });
    let (code, events) = w.check(true);
    let dump = || {
        events
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    if code != c.exit {
        return Err(format!("exit {code}, expected {}\n{}", c.exit, dump()));
    }
    if let Some(kind) = &c.event {
        let at =
            c.at.as_ref()
                .map(|a| resolve(&w, a))
                .or(last.clone())
                .unwrap();
        let hit = events.iter().any(|e| {
            e["event"] == kind.as_str() && e["path"].as_str().map(PathBuf::from) == Some(at.clone())
        });
        if !hit {
            return Err(format!("no `{kind}` event at {}\n{}", at.display(), dump()));
        }
        if !events.iter().any(|e| {
            e["event"] == kind.as_str() && e.get("action").is_some() && e.get("change").is_some()
                || e["event"] == "link_refused"
        }) {
            return Err(format!("`{kind}` event lacks change/action\n{}", dump()));
        }
    } else if !events.is_empty() {
        return Err(format!("expected no event\n{}", dump()));
    }
    for (p, b) in &pinned {
        let now = std::fs::read(p).map_err(|e| format!("after restore, {}: {e}", p.display()))?;
        if &now != b {
            return Err(format!(
                "{}: restored bytes differ from the baseline",
                p.display()
            ));
        }
        let m = std::fs::symlink_metadata(p).unwrap();
        if !m.is_file() {
            return Err(format!("{}: restored but not a regular file", p.display()));
        }
    }
    if c.quarantine {
        let last = last.clone().unwrap();
        let q = events.iter().find_map(|e| {
            if e["event"] != "quarantined" {
                return None;
            }
            let from = PathBuf::from(e["path"].as_str()?);
            let to = PathBuf::from(e["quarantine"].as_str()?);
            last.strip_prefix(&from).ok().map(|rest| {
                if rest.as_os_str().is_empty() {
                    to
                } else {
                    to.join(rest)
                }
            })
        });
        let Some(q) = q else {
            return Err(format!(
                "nothing quarantined for {}\n{}",
                last.display(),
                dump()
            ));
        };
        if std::fs::symlink_metadata(&q).is_err() {
            return Err(format!("quarantine {} does not exist", q.display()));
        }
        if !q.starts_with(w.root().join("state")) {
            return Err(format!(
                "quarantine {} is not next to the state file",
                q.display()
            ));
        }
        if let Some(b) = &agent_bytes {
            if &std::fs::read(&q).unwrap_or_default() != b {
                return Err(format!(
                    "quarantine {} does not hold the agent's bytes",
                    q.display()
                ));
            }
        }
    }
    // Everything back: a second check finds nothing.
    let (code2, ev2) = w.check(false);
    if code2 != 0 {
        return Err(format!(
            "second check after restore: exit {code2}\n{}",
            ev2.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    if let Some(rule) = &c.audit {
        // Tamper again (a fresh world) and audit without a baseline.
        let w2 = common::world();
        for op in &c.ops {
            apply(&w2, op);
        }
        let out = w2.wt_check(&["audit", "--format", "json", w2.root().to_str().unwrap()]);
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("audit JSON: {e}"))?;
        let found = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == rule.as_str());
        if !found || out.status.code() == Some(0) {
            return Err(format!(
                "audit did not report {rule} (exit {:?}):\n{v:#}",
                out.status.code()
            ));
        }
    }
    Ok(())
}

#[test]
fn tamper_cases() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/tamper/cases.toml"
    ))
    .unwrap();
    let cases: Cases = toml::from_str(&text).unwrap();
    assert!(cases.case.len() >= 30, "at least 30 cases");
    let only = std::env::var("TAMPER_CASE").ok();
    let mut failed = Vec::new();
    let mut ran = 0;
    for c in &cases.case {
        if only.as_deref().is_some_and(|o| o != c.name) {
            continue;
        }
        ran += 1;
        if let Err(e) = run_case(c) {
            failed.push(format!("--- {}: {e}", c.name));
        }
    }
    assert!(ran > 0);
    assert!(
        failed.is_empty(),
        "{} of {ran} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
