//! The end-of-turn hooks of Codex CLI (`Stop`) and Gemini CLI (`AfterAgent`), and the
//! session-start pin of all three CLIs, fed with each CLI's real hook JSON
//! (fixtures/hooks/; the shapes are copied from openai/codex
//! `codex-rs/hooks/schema/generated/stop.command.input.schema.json` and from
//! google-gemini/gemini-cli `docs/hooks/reference.md` / `packages/core/src/hooks/types.ts`).
//! Claude Code's `Stop` hook is tested in integration.rs.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/hooks");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIX}/{name}")).unwrap()
}

/// Run `wt-check hook <args…>` with `input` on stdin: (exit code, stdout, stderr).
fn hook(w: &common::World, args: &[&str], input: &str) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
    w.env(&mut c);
    c.arg("hook")
        .args(args)
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
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn plant_hook(w: &common::World) -> std::path::PathBuf {
    let h = w.git_dir().join("hooks/post-checkout");
    std::fs::write(&h, "#!/bin/sh\necho pwned\n").unwrap();
    std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
    h
}

fn events(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One CLI's end-of-turn hook as the CLI sees it.
struct Cli {
    sub: &'static str,
    input: &'static str,
    active: &'static str,
    /// The `decision` that keeps the agent going with `reason`.
    block: &'static str,
    /// What a clean turn prints.
    clean: &'static str,
    session_key: &'static str,
}

const CODEX: Cli = Cli {
    sub: "codex-stop",
    input: "codex-stop.json",
    active: "codex-stop-active.json",
    block: "block",
    clean: "",
    session_key: "codex_session_id",
};
const GEMINI: Cli = Cli {
    sub: "gemini-after-agent",
    input: "gemini-after-agent.json",
    active: "gemini-after-agent-active.json",
    block: "deny",
    clean: "{}\n",
    session_key: "gemini_session_id",
};

fn end_of_turn_hook_restores_tells_once_and_never_passes_unknown(cli: &Cli) {
    let w = common::world();
    w.pin();
    let log = w.root().join("state/audit.jsonl");
    let st = w.state();
    let args = [
        cli.sub,
        "--state",
        st.to_str().unwrap(),
        "--audit-log",
        log.to_str().unwrap(),
    ];
    let input = fixture(cli.input);
    let active = fixture(cli.active);
    let sid: serde_json::Value = serde_json::from_str(&input).unwrap();
    let sid = sid["session_id"].as_str().unwrap().to_owned();

    // A clean turn.
    let (code, out, _) = hook(&w, &args, &input);
    assert_eq!((code, out.as_str()), (0, cli.clean), "{}", cli.sub);

    // A planted hook: moved aside, the agent is told once, the owner sees it.
    let h = plant_hook(&w);
    let (code, out, _) = hook(&w, &args, &input);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], cli.block, "{}: {v}", cli.sub);
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains("hook_planted"), "{v}");
    assert!(!reason.trim().is_empty());
    assert!(v["systemMessage"]
        .as_str()
        .unwrap()
        .contains("post-checkout"));
    assert!(!h.exists(), "{}: the planted hook stayed", cli.sub);
    let ev = events(&log);
    assert!(
        ev.iter()
            .any(|e| e["event"] == "hook_planted" && e[cli.session_key] == sid.as_str()),
        "{}: no hook_planted labelled {}",
        cli.sub,
        cli.session_key
    );
    assert!(ev.iter().any(|e| e["event"] == "quarantined"));

    // While the hook is already active: no second block (no loop), the owner is told.
    plant_hook(&w);
    let (code, out, _) = hook(&w, &args, &active);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("decision").is_none(), "{}: {v}", cli.sub);
    assert!(v["systemMessage"]
        .as_str()
        .unwrap()
        .contains("hook_planted"));

    // Empty or unparseable input: checked anyway, a planted hook is still found.
    for bad in ["", "not json {"] {
        let h = plant_hook(&w);
        let (_, out, _) = hook(&w, &args, bad);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["decision"], cli.block, "{}: {bad:?}: {v}", cli.sub);
        assert!(!h.exists());
        let (_, out, _) = hook(&w, &args, bad);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(
            v["systemMessage"]
                .as_str()
                .unwrap()
                .contains("checked anyway"),
            "{v}"
        );
    }

    // Cannot check: never the clean answer; stop instead of looping when already active.
    std::fs::write(w.state(), "not json").unwrap();
    let (code, out, _) = hook(&w, &args, &input);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], cli.block, "{}: {v}", cli.sub);
    assert!(v["reason"].as_str().unwrap().contains("could not check"));
    let (_, out, _) = hook(&w, &args, &active);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["continue"], false, "{}: {v}", cli.sub);
    assert!(v.get("decision").is_none());
    // A missing state file, likewise.
    std::fs::remove_file(w.state()).unwrap();
    let (_, out, _) = hook(&w, &args, &input);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], cli.block, "{}: {v}", cli.sub);
}

#[test]
fn codex_stop_hook_with_codex_input() {
    end_of_turn_hook_restores_tells_once_and_never_passes_unknown(&CODEX);
}

#[test]
fn gemini_after_agent_hook_with_gemini_input() {
    end_of_turn_hook_restores_tells_once_and_never_passes_unknown(&GEMINI);
}

#[test]
fn codex_events_carry_the_turn_id() {
    let w = common::world();
    w.pin();
    let log = w.root().join("state/audit.jsonl");
    let st = w.state();
    plant_hook(&w);
    let (_, out, _) = hook(
        &w,
        &[
            "codex-stop",
            "--state",
            st.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &fixture("codex-stop.json"),
    );
    assert!(out.contains("\"block\""), "{out}");
    assert!(events(&log)
        .iter()
        .any(|e| e["codex_turn_id"] == "0199a3c4-7a02-7e11-8c33-5b9d1f0e2a66"));
}

#[test]
fn a_hook_wired_to_the_wrong_event_still_checks_and_says_so() {
    let w = common::world();
    w.pin();
    let st = w.state();
    // Gemini's AfterAgent input given to the Codex Stop hook.
    let (code, out, _) = hook(
        &w,
        &["codex-stop", "--state", st.to_str().unwrap()],
        &fixture("gemini-after-agent.json"),
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let m = v["systemMessage"].as_str().unwrap();
    assert!(
        m.contains("AfterAgent") && m.contains("checked anyway"),
        "{m}"
    );
}

#[test]
fn settings_samples_run_the_right_hooks() {
    let codex: serde_json::Value = serde_json::from_str(&fixture("codex-hooks.json")).unwrap();
    let gemini: serde_json::Value = serde_json::from_str(&fixture("gemini-settings.json")).unwrap();
    for (v, event, sub) in [
        (&codex, "Stop", "wt-check hook codex-stop --state "),
        (
            &gemini,
            "AfterAgent",
            "wt-check hook gemini-after-agent --state ",
        ),
    ] {
        let cmd = v["hooks"][event][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert!(cmd.starts_with(sub), "{cmd}");
        let start = &v["hooks"]["SessionStart"][0];
        assert_eq!(start["matcher"], "startup");
        assert!(start["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .starts_with("wt-check hook session-start --state "));
    }
    // Gemini CLI's timeout is in milliseconds, Codex CLI's in seconds.
    assert_eq!(
        gemini["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"],
        60000
    );
    assert_eq!(codex["hooks"]["Stop"][0]["hooks"][0]["timeout"], 60);
}

fn session_start(w: &common::World, input: &str) -> serde_json::Value {
    let st = w.state();
    let m = w.main();
    let (code, out, err) = hook(
        w,
        &[
            "session-start",
            "--state",
            st.to_str().unwrap(),
            "--session",
            "s1",
            m.to_str().unwrap(),
        ],
        input,
    );
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn with_source(source: &str) -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(&fixture("claude-session-start.json")).unwrap();
    v["source"] = source.into();
    v.to_string()
}

#[test]
fn session_start_pins_on_startup_only() {
    let w = common::world();
    // startup: pinned.
    let v = session_start(&w, &fixture("claude-session-start.json"));
    assert!(v.get("continue").is_none(), "{v}");
    assert!(
        v["systemMessage"].as_str().unwrap().contains("pinned"),
        "{v}"
    );
    let pinned = std::fs::read(w.state()).unwrap();

    // The agent plants a hook; the session is resumed, cleared, compacted (Claude Code,
    // Codex CLI) or compressed (Gemini CLI): the baseline is kept, not re-pinned.
    let h = plant_hook(&w);
    for source in ["resume", "clear", "compact", "compress", "something-new"] {
        let v = session_start(&w, &with_source(source));
        assert!(v.get("continue").is_none(), "{source}: {v}");
        assert!(
            v["systemMessage"]
                .as_str()
                .unwrap()
                .contains("kept the baseline"),
            "{source}: {v}"
        );
        assert_eq!(
            std::fs::read(w.state()).unwrap(),
            pinned,
            "{source}: re-pinned"
        );
    }
    // … so the end-of-turn check still finds the planted hook.
    let st = w.state();
    let (_, out, _) = hook(
        &w,
        &["codex-stop", "--state", st.to_str().unwrap()],
        &fixture("codex-stop.json"),
    );
    assert!(out.contains("hook_planted"), "{out}");
    assert!(!h.exists());
}

#[test]
fn session_start_without_a_baseline_or_a_source_stops_and_writes_nothing() {
    let w = common::world();
    // Resumed with no baseline: never pinned mid-session; the session is stopped.
    let v = session_start(&w, &with_source("resume"));
    assert_eq!(v["continue"], false, "{v}");
    assert!(v["stopReason"]
        .as_str()
        .unwrap()
        .contains("never taken mid-session"));
    assert!(!w.state().exists());
    // No source, empty input, not JSON, another event: cannot tell startup; nothing written.
    for input in [
        r#"{"hook_event_name":"SessionStart"}"#.to_owned(),
        String::new(),
        "{".into(),
        fixture("codex-stop.json"),
    ] {
        let v = session_start(&w, &input);
        assert_eq!(v["continue"], false, "{input:?}: {v}");
        assert!(!w.state().exists(), "{input:?}: pinned");
    }
}

#[test]
fn session_start_on_an_armed_repository_stops_and_does_not_accept_it() {
    let w = common::world();
    plant_hook(&w);
    let v = session_start(&w, &fixture("claude-session-start.json"));
    assert_eq!(v["continue"], false, "{v}");
    assert!(
        v["stopReason"].as_str().unwrap().contains("already armed"),
        "{v}"
    );
    assert!(!w.state().exists());
}
