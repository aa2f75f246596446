//! The write cases of fixtures/settings/cases.toml, each against a real `settings-watch run`.

mod common;
use common::*;
use gitward::held::{Content, Store};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    file: String,
    event_rel: Option<String>,
    before: Option<String>,
    how: String,
    write: String,
    expect: String,
    reason: String,
    #[serde(default)]
    blocked: bool,
}

#[derive(Deserialize)]
struct Cases {
    case: Vec<Case>,
}

const T: Duration = Duration::from_secs(30);
const BURST: usize = 50;

fn cases() -> Vec<Case> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/settings/cases.toml");
    let c: Cases = toml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    c.case
}

fn do_write(env: &Env, c: &Case) -> Vec<u8> {
    let path = env.repo.join(&c.file);
    let dir = path.parent().unwrap().to_path_buf();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let bytes = c.write.as_bytes().to_vec();
    match c.how.as_str() {
        "in-place" | "create" => env.write(&c.file, &bytes),
        "rename-over" => {
            let tmp = dir.join(format!(".{name}.swp~"));
            std::fs::write(&tmp, &bytes).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
        "through-link" => {
            let link = env.outside.join("link");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            std::fs::write(&link, &bytes).unwrap();
        }
        "hard-link" => {
            let other = env.repo.join("notes.txt");
            std::fs::hard_link(&path, &other).unwrap();
            std::fs::write(&other, &bytes).unwrap();
        }
        "make-link" => {
            let target = env.outside.join("evil.json");
            std::fs::write(&target, &bytes).unwrap();
            let tmp = dir.join(".newlink");
            std::os::unix::fs::symlink(&target, &tmp).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
        "folder-link" => {
            let evil = env.outside.join("evil-dir");
            std::fs::create_dir_all(&evil).unwrap();
            std::fs::write(evil.join(&name), &bytes).unwrap();
            let tmp = dir.parent().unwrap().join(".newdir");
            std::os::unix::fs::symlink(&evil, &tmp).unwrap();
            // Swap the folder and the link in one step, as an attacker racing us would.
            nix::fcntl::renameat2(
                nix::fcntl::AT_FDCWD,
                &tmp,
                nix::fcntl::AT_FDCWD,
                &dir,
                nix::fcntl::RenameFlags::RENAME_EXCHANGE,
            )
            .unwrap();
        }
        "folder-recreate" => {
            // The watcher may put a file back while the folder is being emptied: retry, as
            // an agent's `rm -rf` loop would.
            let mut tries = 0;
            while let Err(e) = std::fs::remove_dir_all(&dir) {
                tries += 1;
                assert!(tries < 50, "cannot remove {}: {e}", dir.display());
            }
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        "delete" => std::fs::remove_file(&path).unwrap(),
        "burst" => {
            let mut last = Vec::new();
            for n in 0..BURST {
                last = c.write.replace("{n}", &n.to_string()).into_bytes();
                let tmp = dir.join(format!(".{name}.{n}.swp~"));
                std::fs::write(&tmp, &last).unwrap();
                std::fs::rename(&tmp, &path).unwrap();
            }
            return last;
        }
        other => panic!("{}: unknown how {other:?}", c.name),
    }
    bytes
}

fn reasons(e: &Value) -> String {
    e["reasons"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn run_case(c: &Case) -> Result<(), String> {
    let env = Env::new();
    if let Some(b) = &c.before {
        env.write(&c.file, b.as_bytes());
    }
    let before_state = state(&env.repo.join(&c.file));
    let mut w = env.start();
    let written = do_write(&env, c);
    let rel = c.event_rel.clone().unwrap_or_else(|| c.file.clone());
    let want_event = match c.expect.as_str() {
        "held" => "settings_write_held",
        "accepted" => "settings_write_accepted",
        other => return Err(format!("unknown expect {other:?}")),
    };
    let ev = w
        .wait_for(
            |e| {
                e["event"] == want_event
                    && e["rel"] == rel.as_str()
                    && reasons(e).contains(&c.reason)
            },
            T,
        )
        .ok_or_else(|| {
            format!(
                "no {want_event} for {rel} with {:?}; saw {:#?}",
                c.reason, w.seen
            )
        })?;
    let path = env.repo.join(&c.file);
    let store_dir = env.store_dir();
    let pending = || Store::open(&store_dir).unwrap().pending().unwrap();
    match c.expect.as_str() {
        "held" => {
            if !eventually(T, || state(&path) == before_state) {
                return Err(format!(
                    "file not put back: {:?}",
                    state(&path).map(|v| String::from_utf8_lossy(&v).into_owned())
                ));
            }
            let id = ev["id"].as_str().ok_or("event has no id")?;
            let p = pending();
            let h = p.iter().find(|h| h.id == id).ok_or("held entry missing")?;
            let proposed = h.proposed.as_ref().ok_or("no proposed content")?;
            match c.how.as_str() {
                "make-link" | "folder-link" => {
                    if !matches!(proposed, Content::Link { .. }) {
                        return Err(format!("held entry is not the link: {proposed:?}"));
                    }
                }
                "delete" => {
                    if *proposed != Content::Absent {
                        return Err(format!("held entry is not the deletion: {proposed:?}"));
                    }
                }
                "burst" => {
                    if !eventually(T, || {
                        pending().iter().any(|h| {
                            h.proposed.as_ref().and_then(|p| p.bytes()) == Some(&written[..])
                        })
                    }) {
                        return Err("last write of the burst is not held".into());
                    }
                }
                _ => {
                    if proposed.bytes() != Some(&written[..]) {
                        return Err(format!("held bytes differ: {proposed:?}"));
                    }
                }
            }
            let replaced_ok = match (&h.new.replaced, &before_state) {
                (Content::Absent, None) => true,
                (Content::File { bytes, .. }, Some(b)) => bytes == b,
                (Content::Absent, Some(_)) => c.how == "folder-link",
                _ => false,
            };
            if !replaced_ok {
                return Err(format!(
                    "held entry's replaced state is wrong: {:?}",
                    h.new.replaced
                ));
            }
            if c.blocked {
                if h.new.blocked.is_empty() {
                    return Err("expected the write to be blocked".into());
                }
                let out = env
                    .cmd()
                    .args(["held", "approve", id, "--policy"])
                    .arg(&env.policy)
                    .output()
                    .unwrap();
                if out.status.code() != Some(1) {
                    return Err(format!("approve of a blocked write: {:?}", out));
                }
            }
        }
        _ => {
            if !eventually(T, || {
                state(&path).as_deref() == Some(&written[..])
                    || (c.how == "delete" && state(&path).is_none())
            }) {
                return Err(format!("accepted write not in place: {:?}", state(&path)));
            }
            w.settle(Duration::from_millis(300));
            if !pending().is_empty() {
                return Err(format!(
                    "something held for an accepted write: {:?}",
                    pending()
                ));
            }
        }
    }
    let (code, seen) = w.stop();
    if code != 0 {
        return Err(format!("watcher exit {code}"));
    }
    if !seen.iter().any(|e| e["event"] == "watch_stopped") {
        return Err("no watch_stopped".into());
    }
    let log = std::fs::read_to_string(env.home.join(".local/state/gitward/audit.jsonl"))
        .unwrap_or_default();
    if !log
        .lines()
        .any(|l| l.contains(want_event) && l.contains(&format!("\"rel\":\"{rel}\"")))
    {
        return Err("event missing from the audit log".into());
    }
    // No temporary file of ours is left in the workspace.
    for e in walkdir(&env.repo) {
        if e.contains(".gitward-") {
            return Err(format!("leftover {e}"));
        }
    }
    Ok(())
}

fn walkdir(p: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            out.push(e.path().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    out
}

#[test]
fn fixture_cases() {
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let filter = std::env::var("CASE").ok();
    let mut failed = Vec::new();
    let mut ran = 0;
    for c in &cases {
        if filter.as_deref().is_some_and(|f| !c.name.contains(f)) {
            continue;
        }
        ran += 1;
        match run_case(c) {
            Ok(()) => eprintln!("ok   {}", c.name),
            Err(e) => {
                eprintln!("FAIL {}: {e}", c.name);
                failed.push(c.name.clone());
            }
        }
    }
    assert!(ran > 0);
    assert!(failed.is_empty(), "failed: {failed:?}");
}
