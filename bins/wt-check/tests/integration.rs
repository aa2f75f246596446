//! The integration recipes of docs/integration.md, end to end: the Claude Code Stop hook
//! with the sample inputs in fixtures/hooks/, and the generic orchestrator script.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/hooks");

fn stop_hook(w: &common::World, input: &str, log: &std::path::Path) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
    w.env(&mut c);
    let st = w.state();
    c.args([
        "hook",
        "claude-stop",
        "--state",
        st.to_str().unwrap(),
        "--audit-log",
        log.to_str().unwrap(),
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn plant_hook(w: &common::World) -> std::path::PathBuf {
    let h = w.git_dir().join("hooks/post-checkout");
    std::fs::write(&h, "#!/bin/sh\necho pwned\n").unwrap();
    std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
    h
}

#[test]
fn claude_stop_hook_restores_and_tells_the_agent_once() {
    let w = common::world();
    w.pin();
    let log = w.root().join("state/audit.jsonl");
    let input = std::fs::read_to_string(format!("{FIX}/claude-stop.json")).unwrap();
    let active = std::fs::read_to_string(format!("{FIX}/claude-stop-active.json")).unwrap();

    // A clean turn: no output, exit 0.
    let (code, out) = stop_hook(&w, &input, &log);
    assert_eq!((code, out.as_str()), (0, ""));

    // A planted hook: restored, the agent is told (decision block), the owner sees it.
    let h = plant_hook(&w);
    let (code, out) = stop_hook(&w, &input, &log);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "block", "{v}");
    assert!(
        v["reason"].as_str().unwrap().contains("hook_planted"),
        "{v}"
    );
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("post-checkout"),
        "{v}"
    );
    assert!(!h.exists(), "the planted hook was moved aside");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().any(|e| e["event"] == "hook_planted"
        && e["claude_session_id"] == "9f0c2a8e-3b1d-4e57-8a61-2d4c0e5b7f10"));
    assert!(lines.iter().any(|e| e["event"] == "quarantined"));

    // Again while a Stop hook is already active: no second block (no loop), message only.
    plant_hook(&w);
    let (code, out) = stop_hook(&w, &active, &log);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("decision").is_none(), "{v}");
    assert!(v["systemMessage"]
        .as_str()
        .unwrap()
        .contains("hook_planted"));

    // A state file that cannot be read is never silent.
    std::fs::write(w.state(), "not json").unwrap();
    let (code, out) = stop_hook(&w, &input, &log);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["systemMessage"].as_str().unwrap().contains("NOT checked"),
        "{v}"
    );
}

#[test]
fn claude_settings_sample_is_a_stop_hook_running_wt_check() {
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{FIX}/claude-settings.json")).unwrap(),
    )
    .unwrap();
    let cmd = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(cmd.starts_with("wt-check hook claude-stop --state "));
}

#[test]
fn generic_orchestrator_recipe() {
    let w = common::world();
    let script = format!("{FIX}/orchestrator.sh");
    let run = |args: &[&str]| {
        let mut c = Command::new("/bin/sh");
        w.env(&mut c);
        c.env("WT_CHECK", env!("CARGO_BIN_EXE_wt-check"))
            .arg(&script)
            .args(args);
        c.output().unwrap()
    };
    let (repo, state) = (w.main(), w.root().join("state/s1.json"));
    let log = w.root().join("state/audit.jsonl");
    let (r, s, l) = (
        repo.to_str().unwrap(),
        state.to_str().unwrap(),
        log.to_str().unwrap(),
    );
    let out = run(&["build", r, s, "s1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["own_worktrees"], 1);
    // An honest turn.
    w.git(&repo, &["commit", "-q", "--allow-empty", "-m", "turn 1"]);
    assert_eq!(run(&["turn-end", r, s, "s1", l]).status.code(), Some(0));
    // A turn that plants an include and a hook.
    plant_hook(&w);
    w.git(&repo, &["config", "--add", "include.path", "../evil.cfg"]);
    let out = run(&["turn-end", r, s, "s1", l]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for kind in [
        "hook_planted",
        "config_changed",
        "quarantined",
        "git_dir_entry_restored",
    ] {
        assert!(
            events.iter().any(|e| e["event"] == kind),
            "no {kind} in the audit log"
        );
    }
    assert!(events
        .iter()
        .all(|e| e["tool"] == "wt-check" && e["session"] == "s1"));
    // Restored: the next turn is clean again.
    assert_eq!(run(&["turn-end", r, s, "s1", l]).status.code(), Some(0));
    // A state file inside the repository is refused at build.
    let bad = repo.join("state.json");
    let out = run(&["build", r, bad.to_str().unwrap(), "s1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lies inside"));
}

#[test]
fn claude_stop_hook_checks_on_empty_or_unparseable_input_and_never_passes_unknown() {
    let w = common::world();
    w.pin();
    let log = w.root().join("state/audit.jsonl");
    for input in ["", "not json {"] {
        // A planted hook is found and moved aside whatever the input.
        let h = plant_hook(&w);
        let (code, out) = stop_hook(&w, input, &log);
        assert_eq!(code, 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["decision"], "block", "{input:?}: {v}");
        assert!(!h.exists(), "{input:?}: the planted hook stayed");
        // Clean now: the owner is still told about the input.
        let (code, out) = stop_hook(&w, input, &log);
        assert_eq!(code, 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v.get("decision").is_none(), "{v}");
        assert!(
            v["systemMessage"]
                .as_str()
                .unwrap()
                .contains("checked anyway"),
            "{v}"
        );
    }
    // Cannot check: the turn must not end as if clean.
    std::fs::write(w.state(), "not json").unwrap();
    let (_, out) = stop_hook(&w, "", &log);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "block", "{v}");
    assert!(
        v["reason"].as_str().unwrap().contains("could not check"),
        "{v}"
    );
    // … and when a Stop hook is already active, Claude Code is stopped instead (no loop).
    let (_, out) = stop_hook(
        &w,
        r#"{"hook_event_name":"Stop","stop_hook_active":true}"#,
        &log,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["continue"], false, "{v}");
    assert!(v.get("decision").is_none(), "{v}");
}
