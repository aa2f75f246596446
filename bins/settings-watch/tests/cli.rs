//! The CLI: help, version, generate, check exit codes, held list/show/approve/reject.

mod common;
use common::*;
use serde_json::Value;

fn run(env: &Env, args: &[&str]) -> std::process::Output {
    let mut c = env.cmd();
    c.args(args);
    if !args.contains(&"--version") && !args.contains(&"--help") && !args.contains(&"--generate") {
        c.arg("--policy").arg(&env.policy);
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_version_generate() {
    let env = Env::new();
    let o = run(&env, &["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let h = text(&o.stdout);
    assert!(h.contains("EXAMPLES:") && h.contains("EXIT CODES:"), "{h}");
    let o = run(&env, &["--version"]);
    assert!(text(&o.stdout).starts_with("settings-watch "));
    let o = run(&env, &["--generate", "man"]);
    assert!(text(&o.stdout).contains(".TH settings-watch"));
    let o = env.cmd().args(["held", "frobnicate"]).output().unwrap();
    assert_eq!(o.status.code(), Some(120));
}

#[test]
fn check_clean_found_and_error() {
    let env = Env::new();
    env.write(".claude/settings.json", br#"{"permissions":{"allow":[]}}"#);
    // First start: the approved state is the files as they are.
    assert_eq!(run(&env, &["check"]).status.code(), Some(0));
    env.write(
        ".claude/settings.json",
        br#"{"permissions":{"allow":["Bash(*)"]}}"#,
    );
    let o = run(&env, &["check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let ev: Value = serde_json::from_str(text(&o.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(ev["event"], "settings_write_held");
    assert_eq!(
        std::fs::read(env.repo.join(".claude/settings.json")).unwrap(),
        br#"{"permissions":{"allow":[]}}"#
    );
    assert_eq!(run(&env, &["check"]).status.code(), Some(0));
    // A bad [settings] table: one line naming file, key, rule; exit 2.
    let mut p = std::fs::read_to_string(&env.policy).unwrap();
    p.push_str("[settings]\npresets = [\"emacs\"]\n");
    std::fs::write(&env.policy, p).unwrap();
    let o = run(&env, &["check"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("settings.presets[0]") && err.contains("unknown preset"),
        "{err}"
    );
}

#[test]
fn held_list_show_approve_reject() {
    let env = Env::new();
    env.write(".vscode/settings.json", b"{}");
    assert_eq!(run(&env, &["check"]).status.code(), Some(0));
    env.write(
        ".vscode/settings.json",
        br#"{"chat.tools.autoApprove": true}"#,
    );
    env.write(".mcp.json", br#"{"mcpServers":{"x":{"command":"sh"}}}"#);
    assert_eq!(run(&env, &["check"]).status.code(), Some(1));
    let o = run(&env, &["held", "list", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let id_of = |rel: &str| {
        list.iter().find(|h| h["rel"] == rel).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let vs = id_of(".vscode/settings.json");
    let mcp = id_of(".mcp.json");
    let o = run(&env, &["held", "show", &vs]);
    let s = text(&o.stdout);
    assert!(
        s.contains("chat.tools.autoApprove: set to true")
            && s.contains("+ {\"chat.tools.autoApprove\": true}"),
        "{s}"
    );
    let o = run(&env, &["held", "show", &vs, "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["proposed"]["bytes"]["text"],
        r#"{"chat.tools.autoApprove": true}"#
    );
    // Approve with the command `held show` printed, as printed (from another folder): the
    // bytes go in, event on stdout and in the audit log.
    let hint = s
        .lines()
        .find_map(|l| l.strip_prefix("approve: "))
        .unwrap_or_else(|| panic!("no approve hint: {s}"))
        .to_owned();
    assert!(hint.contains("--policy"), "{hint}");
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    let o = std::process::Command::new("/bin/sh")
        .current_dir("/")
        .env("HOME", &env.home)
        .env_remove("XDG_STATE_HOME")
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .args(["-c", &hint])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{hint}: {}", text(&o.stderr));
    let ev: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ev["event"], "held_approved");
    assert_eq!(
        std::fs::read(env.repo.join(".vscode/settings.json")).unwrap(),
        br#"{"chat.tools.autoApprove": true}"#
    );
    // Now approved: a check finds nothing.
    assert_eq!(run(&env, &["check"]).status.code(), Some(0));
    // Approving twice is refused (exit 1).
    assert_eq!(run(&env, &["held", "approve", &vs]).status.code(), Some(1));
    // Approve refuses when the file changed since the write was held.
    env.write(".mcp.json", b"{}");
    let o = run(&env, &["held", "approve", &mcp]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("changed since it was held"));
    std::fs::remove_file(env.repo.join(".mcp.json")).unwrap();
    let o = run(&env, &["held", "reject", &mcp]);
    assert_eq!(o.status.code(), Some(0));
    let ev: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ev["event"], "held_rejected");
    let o = run(&env, &["held", "list"]);
    assert!(text(&o.stdout).contains("no held writes"));
    let o = run(&env, &["held", "list", "--all", "--format", "json"]);
    let all: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(run(&env, &["held", "show", "nope"]).status.code(), Some(2));
    let log = std::fs::read_to_string(env.home.join(".local/state/gitward/audit.jsonl")).unwrap();
    assert!(log.contains("held_approved") && log.contains("held_rejected"));
}

#[test]
fn sigterm_is_a_clean_shutdown() {
    let env = Env::new();
    let w = env.start();
    let (code, seen) = w.stop();
    assert_eq!(code, 0);
    assert!(seen
        .iter()
        .any(|e| e["event"] == "watch_stopped" && e["signal"] == 15));
}

#[test]
fn worktrees_and_extra_roots_are_guarded() {
    let env = Env::new();
    // The session's worktree folder (default <repo>-worktrees/<session>) with one worktree,
    // and an extra root named in [settings] roots.
    let wt = env.home.join("src/proj-worktrees/alpha/feature");
    std::fs::create_dir_all(wt.join(".vscode")).unwrap();
    std::fs::write(wt.join(".vscode/settings.json"), "{}").unwrap();
    let extra = env.home.join("src/other");
    std::fs::create_dir_all(&extra).unwrap();
    let mut p = std::fs::read_to_string(&env.policy).unwrap();
    p.push_str(&format!("[settings]\nroots = [\"{}\"]\n", extra.display()));
    std::fs::write(&env.policy, p).unwrap();
    let mut w = env.start();
    std::fs::write(
        wt.join(".vscode/settings.json"),
        r#"{"chat.tools.autoApprove": true}"#,
    )
    .unwrap();
    std::fs::create_dir_all(extra.join(".codex")).unwrap();
    std::fs::write(
        extra.join(".codex/config.toml"),
        "approval_policy = \"never\"\n",
    )
    .unwrap();
    let t = std::time::Duration::from_secs(30);
    for path in [
        wt.join(".vscode/settings.json"),
        extra.join(".codex/config.toml"),
    ] {
        let shown = path.display().to_string();
        assert!(
            w.wait_for(
                |e| e["event"] == "settings_write_held" && e["path"] == shown.as_str(),
                t
            )
            .is_some(),
            "{shown}: {:#?}",
            w.seen
        );
    }
    assert_eq!(
        std::fs::read(wt.join(".vscode/settings.json")).unwrap(),
        b"{}"
    );
    assert!(!extra.join(".codex/config.toml").exists());
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    // A relative extra root is refused with one line naming the key.
    let mut p = std::fs::read_to_string(&env.policy).unwrap();
    p = p.replace(
        &format!("roots = [\"{}\"]", extra.display()),
        "roots = [\"rel/dir\"]",
    );
    std::fs::write(&env.policy, p).unwrap();
    let o = run(&env, &["check"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("settings.roots[0]"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_worktree_created_while_running_is_guarded_from_its_first_file() {
    let env = Env::new();
    let mut w = env.start();
    // The shim creates <repo>-worktrees/<session>/<name>; a checkout (or the agent) puts a
    // settings file there at once.
    let wt = env.home.join("src/proj-worktrees/alpha/feat");
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    std::fs::write(
        wt.join(".claude/settings.json"),
        r#"{"permissions":{"defaultMode":"bypassPermissions"}}"#,
    )
    .unwrap();
    let shown = wt.join(".claude/settings.json").display().to_string();
    let t = std::time::Duration::from_secs(30);
    assert!(
        w.wait_for(
            |e| e["event"] == "settings_write_held" && e["path"] == shown.as_str(),
            t
        )
        .is_some(),
        "{:#?}",
        w.seen
    );
    assert!(eventually(t, || !wt.join(".claude/settings.json").exists()));
    // Later writes there are judged like anywhere else: a file that only denies narrows.
    std::fs::write(
        wt.join(".claude/settings.json"),
        r#"{"permissions":{"deny":["Bash"]}}"#,
    )
    .unwrap();
    assert!(
        w.wait_for(
            |e| e["event"] == "settings_write_accepted" && e["path"] == shown.as_str(),
            t
        )
        .is_some(),
        "{:#?}",
        w.seen
    );
    assert!(wt.join(".claude/settings.json").exists());
    let (code, _) = w.stop();
    assert_eq!(code, 0);
}

/// A full disk: one line on stderr and 2 (a listing or an event stream that did not arrive
/// never reads as clean), never a panic.
#[test]
fn a_full_disk_is_one_error_line() {
    let env = Env::new();
    env.write(".claude/settings.json", br#"{"permissions":{"allow":[]}}"#);
    assert_eq!(run(&env, &["check"]).status.code(), Some(0));
    for args in [
        &["--help"][..],
        &["held", "list"],
        &["held", "list", "--format", "json"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut c = env.cmd();
        c.args(args);
        if args[0] != "--help" {
            c.arg("--policy").arg(&env.policy);
        }
        let o = c.stdout(full).output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("settings-watch: cannot write to standard output")
                && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // No subcommand: the help goes to stderr (a usage error), not stdout.
    let o = env.cmd().output().unwrap();
    assert_eq!(o.status.code(), Some(120));
    assert!(o.stdout.is_empty() && text(&o.stderr).contains("Usage: settings-watch"));
}
