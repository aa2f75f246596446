use super::*;

fn file(s: &str) -> Content {
    Content::File {
        bytes: s.as_bytes().to_vec(),
        mode: 0o644,
    }
}

fn verdict(rel: &str, before: &Content, after: &Content) -> (Verdict, Vec<String>) {
    let rules = Rules::presets();
    let c = change_of(Path::new("/ws"), rel, before, after, &rules).expect("a change");
    (c.verdict, c.reasons())
}

#[test]
fn judge_table() {
    use Verdict::*;
    let a = Content::Absent;
    let cases: &[(&str, Content, Content, Verdict, &str)] = &[
        (
            ".claude/settings.json",
            a.clone(),
            file(r#"{"hooks":{"SessionStart":[]}}"#),
            Widens,
            "hooks",
        ),
        (
            ".claude/settings.json",
            file(r#"{"permissions":{"allow":["Read"]}}"#),
            file(r#"{"permissions":{"allow":["Read","Bash(*)"]}}"#),
            Widens,
            "added \"Bash(*)\"",
        ),
        (
            ".claude/settings.json",
            file(r#"{"permissions":{"allow":["Read","Bash(*)"]}}"#),
            file(r#"{"permissions":{"allow":["Read"]}}"#),
            Narrows,
            "removed",
        ),
        (
            ".claude/settings.json",
            file(r#"{"permissions":{"deny":["Bash(curl:*)"]}}"#),
            file(r#"{"permissions":{"deny":[]}}"#),
            Widens,
            "removed",
        ),
        (
            ".claude/settings.json",
            file(r#"{"permissions":{"defaultMode":"default"}}"#),
            file(r#"{"permissions":{"defaultMode":"bypassPermissions"}}"#),
            Widens,
            "bypassPermissions",
        ),
        (
            ".claude/settings.json",
            file(r#"{"permissions":{"defaultMode":"acceptEdits"}}"#),
            file(r#"{"permissions":{"defaultMode":"plan"}}"#),
            Narrows,
            "plan",
        ),
        (
            ".claude/settings.json",
            file(r#"{"model":"a"}"#),
            file(r#"{"model":"b"}"#),
            Neutral,
            "model",
        ),
        (
            ".claude/settings.json",
            file(r#"{}"#),
            file(r#"{"somethingNew":"x"}"#),
            Widens,
            "fail closed",
        ),
        (
            ".claude/settings.json",
            file(r#"{}"#),
            file(r#"{"env":{"ANTHROPIC_BASE_URL":"http://x"}}"#),
            Widens,
            "ANTHROPIC_BASE_URL",
        ),
        (
            ".claude/settings.json",
            file(r#"{}"#),
            file("{ // c\n}"),
            Unparseable,
            "cannot be parsed",
        ),
        (
            ".Claude/Settings.json",
            a.clone(),
            file(r#"{"permissions":{"defaultMode":"bypassPermissions"}}"#),
            Widens,
            "bypass",
        ),
        (
            ".vscode/settings.json",
            file("{}"),
            file("{\n // yolo\n \"chat.tools.autoApprove\": true,\n}"),
            Widens,
            "chat.tools.autoApprove",
        ),
        (
            ".vscode/settings.json",
            file(r#"{"chat.tools.autoApprove":true}"#),
            file(r#"{"chat.tools.autoApprove":false}"#),
            Narrows,
            "false",
        ),
        (
            ".vscode/settings.json",
            file(r#"{"editor.fontSize":12}"#),
            file(r#"{"editor.fontSize":14}"#),
            Neutral,
            "editor.fontSize",
        ),
        (
            ".vscode/settings.json",
            file(r#"{}"#),
            file(r#"{"git.path":"/tmp/evil"}"#),
            Widens,
            "git.path",
        ),
        (
            ".vscode/settings.json",
            file(r#"{}"#),
            file(r#"{"python.defaultInterpreterPath":"/tmp/py"}"#),
            Widens,
            "python",
        ),
        (
            ".vscode/tasks.json",
            file(r#"{"version":"2.0.0","tasks":[]}"#),
            file(
                r#"{"version":"2.0.0","tasks":[{"label":"x","command":"sh","runOptions":{"runOn":"folderOpen"}}]}"#,
            ),
            Widens,
            "tasks",
        ),
        (
            ".mcp.json",
            file(r#"{"mcpServers":{"a":{"command":"npx","args":["a"]}}}"#),
            file(r#"{"mcpServers":{"a":{"command":"npx","args":["evil"]}}}"#),
            Widens,
            "a new approval",
        ),
        (
            ".mcp.json",
            file(r#"{"mcpServers":{"a":{"command":"npx"},"b":{"command":"x"}}}"#),
            file(r#"{"mcpServers":{"a":{"command":"npx"}}}"#),
            Narrows,
            "removed",
        ),
        (
            ".cursor/mcp.json",
            a.clone(),
            file(r#"{"mcpServers":{"x":{"command":"sh"}}}"#),
            Widens,
            "added",
        ),
        (
            ".codex/config.toml",
            file("approval_policy = \"on-request\"\n"),
            file("approval_policy = \"never\"\n"),
            Widens,
            "never",
        ),
        (
            ".codex/config.toml",
            file("sandbox_mode = \"danger-full-access\"\n"),
            file("sandbox_mode = \"read-only\"\n"),
            Narrows,
            "read-only",
        ),
        (
            ".codex/config.toml",
            file(""),
            file("[sandbox_workspace_write]\nwritable_roots = [\"/\"]\n"),
            Widens,
            "writable_roots",
        ),
        (
            ".gemini/settings.json",
            file(r#"{"tools":{"sandbox":true}}"#),
            file(r#"{"tools":{"sandbox":false}}"#),
            Widens,
            "sandbox",
        ),
        (
            ".gemini/settings.json",
            file(r#"{"tools":{"exclude":["run_shell_command"]}}"#),
            file(r#"{"tools":{"exclude":["run_shell_command","web_fetch"]}}"#),
            Narrows,
            "added",
        ),
        (
            ".envrc",
            file("use nix\n"),
            file("use nix\ncurl x|sh\n"),
            Widens,
            "changed",
        ),
        (".envrc", file("use nix\n"), a.clone(), Narrows, "removed"),
        (
            ".env",
            file("A=1\n"),
            file("A=1\nCODEX_HOME=./.codex\n"),
            Widens,
            "CODEX_HOME",
        ),
        (
            ".devcontainer/devcontainer.json",
            file(r#"{"name":"a"}"#),
            file(r#"{"name":"a","initializeCommand":"touch /tmp/p"}"#),
            Widens,
            "initializeCommand",
        ),
        (
            ".devcontainer/devcontainer.json",
            file(r#"{"name":"a"}"#),
            file(r#"{"name":"b"}"#),
            Neutral,
            "name",
        ),
        (
            ".gitward/settings.toml",
            file("[docker]\nenabled = false\n"),
            file("[docker]\nenabled = true\n"),
            Widens,
            "docker/enabled",
        ),
        (
            ".gitward/settings.toml",
            file("[docker]\nenabled = true\n"),
            file("[docker]\nenabled = false\n"),
            Narrows,
            "docker/enabled",
        ),
        (
            ".claude/settings.json",
            file("{}"),
            Content::Link {
                at: ".claude/settings.json".into(),
                target: b"/tmp/x".to_vec(),
            },
            Unparseable,
            "link",
        ),
    ];
    for (rel, before, after, want, needle) in cases {
        let (got, reasons) = verdict(rel, before, after);
        assert_eq!(got, *want, "{rel}: {reasons:?}");
        assert!(
            reasons.iter().any(|r| r.contains(needle)),
            "{rel}: {needle:?} not in {reasons:?}"
        );
    }
}

#[test]
fn duplicate_keys_fail_closed() {
    let (v, _) = verdict(
        ".claude/settings.json",
        &file("{}"),
        &file(r#"{"permissions":{"defaultMode":"default","defaultMode":"bypassPermissions"}}"#),
    );
    assert_eq!(v, Verdict::Unparseable);
}

#[test]
fn roots_are_validated() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    let mut rules = Rules::presets();
    rules.root_check = Some(RootCheck {
        home: home.clone(),
        state_dir: t.path().join("state"),
        policy_file: t.path().join("etc/p.toml"),
        audit_log: None,
    });
    let after = file(&format!(
        "worktree_roots = [\"{}/.config/x\", \"/srv/wt\"]\n",
        home.display()
    ));
    let c = change_of(t.path(), ".gitward.toml", &Content::Absent, &after, &rules).unwrap();
    assert_eq!(c.verdict, Verdict::Widens);
    assert_eq!(c.blocked.len(), 1, "{:?}", c.blocked);
    assert!(
        c.blocked[0].contains("run outside the sandbox"),
        "{:?}",
        c.blocked
    );
}

fn setup() -> (tempfile::TempDir, PathBuf, Store) {
    let t = tempfile::tempdir().unwrap();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    let store = Store::open(&t.path().join("state/held")).unwrap();
    (t, ws, store)
}

#[test]
fn enforce_holds_widening_and_accepts_narrowing() {
    let (_t, ws, store) = setup();
    let rules = Rules::presets();
    let settings = ws.join(".claude/settings.json");
    std::fs::write(&settings, r#"{"permissions":{"allow":["Read"]}}"#).unwrap();
    std::fs::create_dir_all(ws.join(".vscode")).unwrap();
    std::fs::write(
        ws.join(".vscode/settings.json"),
        r#"{"chat.tools.autoApprove":true}"#,
    )
    .unwrap();
    let before = Snapshot::capture(&ws, &rules).unwrap();
    assert_eq!(before.files.len(), 2);
    std::fs::write(&settings, r#"{"permissions":{"allow":["Read","Bash(*)"]}}"#).unwrap();
    std::fs::write(
        ws.join(".vscode/settings.json"),
        r#"{"chat.tools.autoApprove":false}"#,
    )
    .unwrap();
    std::fs::write(
        ws.join(".mcp.json"),
        r#"{"mcpServers":{"x":{"command":"sh"}}}"#,
    )
    .unwrap();
    let after = Snapshot::capture(&ws, &rules).unwrap();
    let out = enforce(&store, &before, &after, &rules, "agent-shell").unwrap();
    let by: BTreeMap<_, _> = out
        .iter()
        .map(|o| (o.change.rel.as_str(), o.action))
        .collect();
    assert_eq!(by[".claude/settings.json"], Action::Held);
    assert_eq!(by[".mcp.json"], Action::Held);
    assert_eq!(by[".vscode/settings.json"], Action::Accepted);
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        r#"{"permissions":{"allow":["Read"]}}"#
    );
    assert!(!ws.join(".mcp.json").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(".vscode/settings.json")).unwrap(),
        r#"{"chat.tools.autoApprove":false}"#
    );
    let pending = store.pending().unwrap();
    assert_eq!(pending.len(), 2);
    let h = pending
        .iter()
        .find(|w| w.new.rel == ".claude/settings.json")
        .unwrap();
    assert_eq!(
        h.proposed.as_ref().unwrap().bytes().unwrap(),
        br#"{"permissions":{"allow":["Read","Bash(*)"]}}"#
    );
    let ev = out
        .iter()
        .find(|o| o.change.rel == ".mcp.json")
        .unwrap()
        .event();
    let line: serde_json::Value = serde_json::from_str(&ev.to_line()).unwrap();
    assert_eq!(line["event"], "settings_write_held");
    assert_eq!(line["tool"], "agent-shell");
    assert!(line["diff"].as_str().unwrap().contains("+ {\"mcpServers\""));
    // No temporary files are left beside the guarded ones.
    for d in [ws.clone(), ws.join(".claude")] {
        for e in std::fs::read_dir(d).unwrap() {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!n.contains(".gitward-"), "{n}");
        }
    }
    // Approve: the held bytes go in.
    store.approve(&h.id).unwrap();
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        r#"{"permissions":{"allow":["Read","Bash(*)"]}}"#
    );
}

#[test]
fn folder_link_is_reverted_and_files_below_restored() {
    let (t, ws, store) = setup();
    let rules = Rules::presets();
    std::fs::write(
        ws.join(".claude/settings.json"),
        r#"{"permissions":{"deny":["Bash"]}}"#,
    )
    .unwrap();
    let before = Snapshot::capture(&ws, &rules).unwrap();
    let evil = t.path().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(
        evil.join("settings.json"),
        r#"{"permissions":{"defaultMode":"bypassPermissions"}}"#,
    )
    .unwrap();
    std::fs::rename(ws.join(".claude"), t.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&evil, ws.join(".claude")).unwrap();
    let after = Snapshot::capture(&ws, &rules).unwrap();
    assert!(matches!(after.get(".claude"), Content::Link { .. }));
    let out = enforce(&store, &before, &after, &rules, "agent-shell").unwrap();
    assert_eq!(out[0].change.rel, ".claude");
    assert_eq!(out[0].action, Action::Held);
    assert!(!std::fs::symlink_metadata(ws.join(".claude"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(ws.join(".claude/settings.json")).unwrap(),
        r#"{"permissions":{"deny":["Bash"]}}"#
    );
    // The link's target was never written.
    assert_eq!(
        std::fs::read_to_string(evil.join("settings.json")).unwrap(),
        r#"{"permissions":{"defaultMode":"bypassPermissions"}}"#
    );
}

#[test]
fn recover_holds_displaced_leftovers() {
    let (_t, ws, store) = setup();
    let rules = Rules::presets();
    let p = ws.join(".claude/settings.json");
    std::fs::write(&p, "{}").unwrap();
    store.set_approved(&p, &file("{}")).unwrap();
    // A crash after the swap: the agent's bytes sit in our temporary name.
    std::fs::write(
        ws.join(".claude/.settings.json.gitward-99-1.tmp"),
        r#"{"hooks":{}}"#,
    )
    .unwrap();
    // A crash before the swap: the approved bytes sit there.
    std::fs::write(ws.join(".claude/.settings.json.gitward-99-2.tmp"), "{}").unwrap();
    let snap = Snapshot::capture(&ws, &rules).unwrap();
    assert_eq!(snap.leftovers.len(), 2);
    let held = recover(&store, &snap, &rules, "settings-watch").unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].new.rel, ".claude/settings.json");
    assert_eq!(
        held[0].proposed.as_ref().unwrap().bytes().unwrap(),
        br#"{"hooks":{}}"#
    );
    assert_eq!(std::fs::read_dir(ws.join(".claude")).unwrap().count(), 1);
}

/// A revert waits for no fsync: until the store's sync thread has run, the agent's bytes are
/// in the pending record and under the displaced name (the agent's own inode, never the
/// approved copy's); a process that dies then (the store forgotten, its thread never run)
/// loses nothing: the next store and pass find both and hold the write once.
#[test]
fn a_revert_before_its_fsyncs_keeps_the_agents_inode_and_recovers() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let (t, ws, store) = setup();
    let rules = Rules::presets();
    let p = ws.join(".claude/settings.json");
    let approved = r#"{"permissions":{"allow":["Read"]}}"#;
    let agent = r#"{"permissions":{"allow":["Read","Bash(*)"]}}"#;
    std::fs::write(&p, approved).unwrap();
    store.set_approved(&p, &file(approved)).unwrap();
    let before = Snapshot::capture(&ws, &rules).unwrap();
    // The agent writes in place and keeps its descriptor.
    let mut fd = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    fd.write_all(agent.as_bytes()).unwrap();
    let agent_ino = fd.metadata().unwrap().ino();
    let after = Snapshot::capture(&ws, &rules).unwrap();
    let change = compare(&before, &after, &rules)
        .into_iter()
        .find(|c| c.rel == ".claude/settings.json")
        .unwrap();
    store.pause_sync();
    let o = {
        let _lock = store.lock().unwrap();
        hold_and_revert(&store, &change, &rules, "settings-watch").unwrap()
    };
    let id = o.held.unwrap().id;
    // Reverted, by a fresh inode.
    assert_eq!(std::fs::read_to_string(&p).unwrap(), approved);
    assert_ne!(std::fs::metadata(&p).unwrap().ino(), agent_ino);
    // The agent's inode is the displaced entry, still beside the file.
    let displaced: Vec<_> = std::fs::read_dir(ws.join(".claude"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|x| x.to_string_lossy().contains(".gitward-"))
        .collect();
    assert_eq!(displaced.len(), 1, "{displaced:?}");
    assert_eq!(std::fs::metadata(&displaced[0]).unwrap().ino(), agent_ino);
    assert_eq!(std::fs::read_to_string(&displaced[0]).unwrap(), agent);
    // A write through the agent's descriptor after the hold lands there, never at the path.
    fd.write_all(b" ").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), approved);
    drop(fd);
    // The record is complete before any fsync.
    assert_eq!(
        store.get(&id).unwrap().proposed.unwrap().bytes().unwrap(),
        agent.as_bytes()
    );
    // The process dies here: its sync thread never runs.
    std::mem::forget(store);
    let store = Store::open(&t.path().join("state/held")).unwrap();
    let snap = Snapshot::capture(&ws, &rules).unwrap();
    assert_eq!(snap.leftovers.len(), 1);
    recover(&store, &snap, &rules, "settings-watch").unwrap();
    let pending = store.pending().unwrap();
    // Held once as recorded, and the later write through the descriptor held too.
    let held: Vec<_> = pending
        .iter()
        .map(|w| w.proposed.as_ref().unwrap().bytes().unwrap().to_vec())
        .collect();
    assert!(held.contains(&agent.as_bytes().to_vec()), "{held:?}");
    assert!(held.contains(&format!("{agent} ").into_bytes()), "{held:?}");
    assert_eq!(held.len(), 2, "{held:?}");
    assert_eq!(std::fs::read_dir(ws.join(".claude")).unwrap().count(), 1);
}

/// With the sync thread running, the displaced entry goes once the record is durable
/// ([`Store::flush`]); a record left empty by a power loss is set aside when the store opens,
/// never deleted, and the store opens.
#[test]
fn deferred_removal_and_an_empty_record_after_power_loss() {
    let (t, ws, store) = setup();
    let rules = Rules::presets();
    let p = ws.join(".claude/settings.json");
    std::fs::write(&p, "{}").unwrap();
    store.set_approved(&p, &file("{}")).unwrap();
    let before = Snapshot::capture(&ws, &rules).unwrap();
    std::fs::write(&p, r#"{"hooks":{}}"#).unwrap();
    let after = Snapshot::capture(&ws, &rules).unwrap();
    for c in compare(&before, &after, &rules) {
        let _lock = store.lock().unwrap();
        hold_and_revert(&store, &c, &rules, "settings-watch").unwrap();
    }
    store.flush().unwrap();
    assert_eq!(std::fs::read_dir(ws.join(".claude")).unwrap().count(), 1);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "{}");
    let id = store.pending().unwrap()[0].id.clone();
    drop(store);
    // Power loss before the record's data reached the disk: the name is there, empty.
    let rec = t.path().join(format!("state/held/pending/{id}.json"));
    std::fs::write(&rec, "").unwrap();
    let store = Store::open(&t.path().join("state/held")).unwrap();
    assert!(store.pending().unwrap().is_empty());
    assert!(t
        .path()
        .join(format!("state/held/pending/{id}.json.unreadable"))
        .exists());
}

/// A write into an inode a revert swapped out is held in the store that reverted it, never in
/// another store of the same process: a second store's pass (its `settle`, a watcher's poll)
/// neither sees it nor holds it. (The list of followed inodes is per process: before it was
/// keyed by store, a concurrent test's `enforce` held this write as its own.)
#[test]
fn a_displaced_inode_is_followed_only_by_its_own_store() {
    use std::io::Write;
    let (t, ws, store) = setup();
    let other = Store::open(&t.path().join("other/held")).unwrap();
    let rules = Rules::presets();
    let p = ws.join(".claude/settings.json");
    let approved = r#"{"permissions":{"allow":["Read"]}}"#;
    let agent = r#"{"permissions":{"allow":["Read","Bash(*)"]}}"#;
    std::fs::write(&p, approved).unwrap();
    store.set_approved(&p, &file(approved)).unwrap();
    let before = Snapshot::capture(&ws, &rules).unwrap();
    // The agent writes in place and keeps its descriptor.
    let mut fd = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    fd.write_all(agent.as_bytes()).unwrap();
    let after = Snapshot::capture(&ws, &rules).unwrap();
    for c in compare(&before, &after, &rules) {
        let _lock = store.lock().unwrap();
        hold_and_revert(&store, &c, &rules, "settings-watch").unwrap();
    }
    // Written after the revert, into the swapped-out inode.
    fd.write_all(b" ").unwrap();
    assert!(tail::following(&store));
    assert!(!tail::following(&other));
    let late = tail::settle(&other, &rules, "agent-shell", watch::QUIET).unwrap();
    assert!(late.is_empty(), "{late:?}");
    assert!(other.pending().unwrap().is_empty());
    drop(fd);
    let late = tail::settle(&store, &rules, "settings-watch", watch::QUIET_MAX).unwrap();
    assert_eq!(late.len(), 1, "{late:?}");
    let held: Vec<_> = store
        .pending()
        .unwrap()
        .iter()
        .map(|w| w.proposed.as_ref().unwrap().bytes().unwrap().to_vec())
        .collect();
    assert!(held.contains(&agent.as_bytes().to_vec()), "{held:?}");
    assert!(held.contains(&format!("{agent} ").into_bytes()), "{held:?}");
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(other.pending().unwrap().is_empty());
}
