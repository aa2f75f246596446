use super::*;
use std::process::Command;

/// A repository with one commit at `<tmp>/proj`, a linked worktree of session s1 and one of
/// session s2, under `<tmp>/proj-worktrees/`.
struct Repo {
    _t: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@e")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@e")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn repo() -> Repo {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let repo = root.join("proj");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
    git(
        &repo,
        &["worktree", "add", "-q", "../proj-worktrees/s1/mine"],
    );
    git(
        &repo,
        &["worktree", "add", "-q", "../proj-worktrees/s2/theirs"],
    );
    Repo { _t: t, root, repo }
}

fn opts(r: &Repo) -> PlanOptions {
    PlanOptions {
        repo: r.repo.clone(),
        session: Some("s1".into()),
        ..PlanOptions::default()
    }
}

fn ro(p: &Plan) -> Vec<PathBuf> {
    p.read_only.iter().map(|b| b.path.clone()).collect()
}

fn ph(p: &Plan) -> Vec<PathBuf> {
    p.placeholders.iter().map(|b| b.path.clone()).collect()
}

#[test]
fn the_pinned_set_is_exactly_what_pin_records() {
    let r = repo();
    // An include target inside the work tree, and one that does not exist yet.
    std::fs::write(r.repo.join("inc.cfg"), "[core]\n").unwrap();
    git(&r.repo, &["config", "include.path", "../inc.cfg"]);
    git(
        &r.repo,
        &["config", "--add", "include.path", "../missing.cfg"],
    );
    let p = plan(&opts(&r)).unwrap();
    let state = r.root.join("state.json");
    let pinned = crate::integrity::pin(
        &Options {
            repo: r.repo.clone(),
            state: state.clone(),
            session: Some("s1".into()),
            // The include inside the work tree is armed: pin refuses it without this.
            accept_armed: true,
            ..Options::default()
        },
        serde_json::Value::Null,
    )
    .unwrap();
    let mut want: Vec<String> = pinned.state.entries.keys().cloned().collect();
    want.extend(
        pinned
            .state
            .includes
            .keys()
            .map(|k| k.display().to_string()),
    );
    want.sort();
    let mut got: Vec<String> = p.pinned.iter().map(|e| e.entry.clone()).collect();
    got.sort();
    assert_eq!(got, want);
    let c = r.repo.join(".git");
    // Every protected entry is bound, not merely checked after the turn.
    for (e, by) in [
        ("config", "read_only"),
        ("hooks", "read_only"),
        ("info/exclude", "read_only"),
        ("config.worktree", "placeholder"),
        ("modules", "placeholder"),
        ("objects/info/alternates", "placeholder"),
        ("worktrees/theirs/gitdir", "read_only"),
        ("worktrees/mine/commondir", "read_only"),
        ("worktrees/mine/config.worktree", "placeholder"),
        ("HEAD", "after_turn"),
        ("worktrees/mine/gitdir", "after_turn"),
    ] {
        let got = p.pinned.iter().find(|x| x.entry == e).unwrap();
        let v = serde_json::to_value(&got.enforced).unwrap();
        assert_eq!(v["by"], by, "{e}: {v}");
    }
    assert!(ro(&p).contains(&r.repo.join("inc.cfg")));
    assert!(ph(&p).contains(&r.repo.join("missing.cfg")));
    assert!(ro(&p).contains(&c.join("worktrees/theirs")));
    // The session's folder is writable; the other session's is not (the base is read-only).
    let w: Vec<&Path> = p.writable.iter().map(|w| w.path.as_path()).collect();
    assert!(w.contains(&r.root.join("proj-worktrees/s1").as_path()));
    assert!(!w
        .iter()
        .any(|w| w.starts_with(r.root.join("proj-worktrees/s2"))));
    // A main git dir's missing commondir: no placeholder (it would stop git), said so.
    let cd = p.pinned.iter().find(|x| x.entry == "commondir").unwrap();
    assert_eq!(
        serde_json::to_value(&cd.enforced).unwrap()["by"],
        "after_turn"
    );
    assert!(!ph(&p).contains(&c.join("commondir")));
    assert_eq!(p.format, FORMAT);
}

#[test]
fn without_a_session_every_worktree_entry_is_read_only() {
    let r = repo();
    let p = plan(&PlanOptions {
        repo: r.repo.clone(),
        ..PlanOptions::default()
    })
    .unwrap();
    let c = r.repo.join(".git");
    assert!(ro(&p).contains(&c.join("worktrees/theirs")));
    assert!(ro(&p).contains(&c.join("worktrees/mine")));
}

#[test]
fn a_session_folder_inside_a_writable_root_keeps_other_sessions_read_only() {
    let r = repo();
    let mut o = opts(&r);
    o.extra_writable = vec![r.root.join("proj-worktrees")];
    let p = plan(&o).unwrap();
    assert!(
        ro(&p).contains(&r.root.join("proj-worktrees/s2")),
        "{:?}",
        ro(&p)
    );
    assert!(
        ro(&p).contains(&r.root.join("proj-worktrees/s2/theirs"))
            || ro(&p).contains(&r.root.join("proj-worktrees/s2"))
    );
}

#[test]
fn submodule_git_dirs_are_read_only_as_a_whole() {
    let r = repo();
    let m = r.repo.join(".git/modules/sub");
    std::fs::create_dir_all(&m).unwrap();
    git(&r.root, &["init", "-q", "--bare", m.to_str().unwrap()]);
    let p = plan(&opts(&r)).unwrap();
    assert!(ro(&p).contains(&r.repo.join(".git/modules")));
    // Nothing below it is bound again.
    assert!(!ro(&p).iter().any(|x| x.starts_with(&m)));
    let e = p
        .pinned
        .iter()
        .find(|x| x.entry == "modules/sub/config")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&e.enforced).unwrap()["by"],
        "read_only"
    );
}

#[test]
fn a_link_where_a_folder_is_expected_gives_no_plan() {
    let r = repo();
    let hooks = r.repo.join(".git/hooks");
    std::fs::remove_dir_all(&hooks).unwrap();
    std::os::unix::fs::symlink(r.root.join("elsewhere"), &hooks).unwrap();
    let e = plan(&opts(&r)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(&hooks.display().to_string()), "{msg}");
    assert!(msg.contains("symbolic link"), "{msg}");
}

#[test]
fn a_gitfile_pointing_outside_gives_no_plan() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let other = root.join("other");
    std::fs::create_dir(&other).unwrap();
    git(&other, &["init", "-q"]);
    let wt = root.join("wt");
    std::fs::create_dir(&wt).unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .unwrap();
    let e = plan(&PlanOptions {
        repo: wt.clone(),
        ..PlanOptions::default()
    })
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&wt.join(".git").display().to_string()),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn a_session_folder_that_is_a_link_gives_no_plan() {
    let r = repo();
    let sd = r.root.join("proj-worktrees/s3");
    std::os::unix::fs::symlink(&r.root, &sd).unwrap();
    let mut o = opts(&r);
    o.session = Some("s3".into());
    let e = plan(&o).unwrap_err();
    assert!(e.to_string().contains("link"), "{e}");
}

#[test]
fn the_formats_come_from_the_same_plan() {
    let r = repo();
    let p = plan(&opts(&r)).unwrap();
    let c = r.repo.join(".git");
    let s = |p: &Path| p.to_string_lossy().into_owned();
    // bwrap: writable roots bound, protected entries read-only, placeholders inside roots.
    let a = p.bwrap_args();
    let has = |w: &[&str]| a.windows(w.len()).any(|x| x == w);
    assert!(has(&["--bind", &s(&r.repo), &s(&r.repo)]));
    assert!(has(&[
        "--ro-bind",
        &s(&c.join("config")),
        &s(&c.join("config"))
    ]));
    assert!(has(&[
        "--ro-bind-data",
        "3",
        &s(&c.join("config.worktree"))
    ]));
    assert!(has(&[
        "--tmpfs",
        &s(&c.join("modules")),
        "--remount-ro",
        &s(&c.join("modules"))
    ]));
    // Placeholders outside every writable root are the base's (no mount point there).
    assert!(!a.iter().any(|x| x == "/tmp/.git"));
    // Parents are bound before children.
    let pos = |x: &Path| a.iter().position(|y| *y == s(x)).unwrap();
    assert!(pos(&r.repo) < pos(&c.join("config")));
    // srt: allowWrite = roots, denyWrite = every bind and placeholder.
    let v: serde_json::Value = serde_json::from_str(&p.srt()).unwrap();
    let allow: Vec<&str> = v["filesystem"]["allowWrite"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let deny: Vec<&str> = v["filesystem"]["denyWrite"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(allow.len(), p.writable.len());
    assert_eq!(
        deny.len(),
        p.read_only.len() + p.placeholders.len() + p.hide.len() + p.hide_folders.len()
    );
    assert!(deny.contains(&s(&c.join("hooks")).as_str()));
    assert!(deny.contains(&"/tmp/.git"));
    // Seatbelt: allow roots, then deny the protected set (a later rule wins in SBPL).
    let sb = p.seatbelt();
    let allow_at = sb
        .find(&format!("(allow file-write* (subpath \"{}\"))", s(&r.repo)))
        .unwrap();
    let deny_at = sb
        .find(&format!(
            "(deny file-write* (literal \"{}\"))",
            s(&c.join("config"))
        ))
        .unwrap();
    assert!(allow_at < deny_at);
    assert!(sb.contains(&format!(
        "(deny file-write* (subpath \"{}\"))",
        s(&c.join("hooks"))
    )));
    // JSON: the contract round-trips and carries its format.
    let j: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    assert_eq!(j["format"], FORMAT);
    assert_eq!(j["pinned"].as_array().unwrap().len(), p.pinned.len());
}

#[test]
fn sbpl_strings_are_escaped() {
    assert_eq!(sbpl_str(Path::new("/a\"b\\c")), "\"/a\\\"b\\\\c\"");
}

#[test]
fn hidden_sockets_follow_the_switches() {
    // Pure rule check over the catalogue: Docker kept when opted in, databases when online.
    let t = tempfile::tempdir().unwrap();
    let sock = t.path().join("docker.sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let rt = t.path().canonicalize().unwrap();
    let sock = rt.join("docker.sock");
    let link = rt.join("link");
    std::os::unix::fs::symlink(&rt, &link).unwrap();
    // The runtime dir (named through a link here) is hidden as a whole, by its resolved
    // path; the socket below it is covered, not listed again.
    let host = HostPaths {
        runtime_dir: Some(link.as_os_str()),
        home: None,
        uid: 4_000_000_000,
    };
    let (hidden, folders, _) = live_sockets(&PlanOptions::default(), &host);
    assert_eq!(
        folders.iter().filter(|h| h.path == rt).count(),
        1,
        "{folders:?}"
    );
    assert!(
        !hidden.iter().any(|h| h.path.starts_with(&rt)),
        "{hidden:?}"
    );
    // A mount target through a linked parent is the resolved one (B-1: `/var/run` → `/run`).
    assert_eq!(mount_target(&link.join("docker.sock")), Some(sock.clone()));
    let _ = kept_docker(&host);
}

fn kept_docker(host: &HostPaths<'_>) -> Vec<Hidden> {
    let kept = live_sockets(
        &PlanOptions {
            docker: true,
            ..PlanOptions::default()
        },
        host,
    )
    .0;
    assert!(
        !kept.iter().any(|h| h.what.starts_with("Docker")),
        "{kept:?}"
    );
    kept
}

#[test]
fn an_include_outside_every_writable_root_is_the_bases() {
    let r = repo();
    let outside = r.root.join("owner.cfg");
    std::fs::write(&outside, "[user]\n").unwrap();
    git(
        &r.repo,
        &["config", "include.path", outside.to_str().unwrap()],
    );
    let p = plan(&opts(&r)).unwrap();
    let e = p
        .pinned
        .iter()
        .find(|x| x.path == outside)
        .expect("the include target is pinned");
    assert_eq!(serde_json::to_value(&e.enforced).unwrap()["by"], "base");
    assert!(!ro(&p).contains(&outside));
}

#[test]
fn tmp_run_and_the_runtime_dir_are_hidden_as_trees_before_every_bind() {
    let r = repo();
    let mut p = plan(&opts(&r)).unwrap();
    let rt = r.root.join("rt");
    std::fs::create_dir(&rt).unwrap();
    p.hide.push(Hidden {
        path: PathBuf::from("/tmp/x/sock"),
        what: "t",
    });
    p.hide_folders.push(Hidden {
        path: rt.join("sub"),
        what: "t",
    });
    let host = HostPaths {
        runtime_dir: Some(rt.as_os_str()),
        home: None,
        uid: 4_000_000_000,
    };
    hide_trees(&mut p, &host, Vec::new(), &[]);
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    let t = |path: &Path| p.hide_trees.iter().find(|t| t.path == path).cloned();
    assert!(t(&tmp).is_some_and(|t| t.writable), "{:?}", p.hide_trees);
    if !rt.starts_with(&tmp) {
        assert!(t(&rt).is_some_and(|t| !t.writable), "{:?}", p.hide_trees);
    }
    // Covered by a tree: no longer listed one by one.
    assert!(
        !p.hide.iter().any(|h| h.path.starts_with(&tmp)),
        "{:?}",
        p.hide
    );
    assert!(p.hide_folders.iter().all(|h| h.path != rt.join("sub")));
    // No tree inside another; `/var/run` listed once, as what it resolves to.
    for a in &p.hide_trees {
        assert!(!p
            .hide_trees
            .iter()
            .any(|b| b.path != a.path && a.path.starts_with(&b.path)));
    }
    // bwrap: the tmpfs before the first bind of a writable root (the repository is under
    // /tmp here), the read-only trees remounted after every bind.
    let a = p.bwrap_args();
    let first_bind = a.iter().position(|x| x == "--bind").unwrap();
    let tmpfs = a
        .windows(2)
        .position(|w| w[0] == "--tmpfs" && Path::new(&w[1]) == tmp)
        .unwrap();
    assert!(tmpfs < first_bind, "{a:?}");
    if let Some(run) = p.hide_trees.iter().find(|t| !t.writable) {
        let remount = a
            .windows(2)
            .position(|w| w[0] == "--remount-ro" && Path::new(&w[1]) == run.path)
            .unwrap();
        let last_bind = a.iter().rposition(|x| x == "--bind").unwrap();
        assert!(remount > last_bind, "{a:?}");
    }
    assert!(p.seatbelt().contains(&format!(
        "(deny network-outbound (remote unix-socket (subpath {})))",
        sbpl_str(&tmp)
    )));
    assert!(p.srt().contains("gitwardHiddenTrees"));
    assert!(p.to_json().contains("\"hide_trees\""));
}

#[test]
fn what_the_command_reads_below_a_tree_is_bound_back_read_only() {
    let r = repo();
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    if !r.root.starts_with(&tmp) {
        eprintln!(
            "SKIPPED: the test's folder is not below /tmp ({})",
            r.root.display()
        );
        return;
    }
    let policy = r.root.join("cfg/s1.toml");
    let shim = r.root.join("state/bin");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::create_dir_all(&shim).unwrap();
    std::fs::write(&policy, "").unwrap();
    let mut p = plan(&opts(&r)).unwrap();
    let host = HostPaths {
        runtime_dir: None,
        home: None,
        uid: 4_000_000_000,
    };
    hide_trees(&mut p, &host, Vec::new(), &[policy.clone(), shim.clone()]);
    let kept: Vec<&Path> = p.keep.iter().map(|k| k.path.as_path()).collect();
    assert!(kept.contains(&policy.as_path()), "{kept:?}");
    assert!(kept.contains(&shim.as_path()), "{kept:?}");
    // Inside a writable root: the root's bind shows it already.
    let mut p = plan(&opts(&r)).unwrap();
    hide_trees(&mut p, &host, Vec::new(), &[r.repo.join(".git")]);
    assert!(
        p.keep.iter().all(|k| !k.path.starts_with(&r.repo)),
        "{:?}",
        p.keep
    );
}

/// The Unix-socket rule in every format (sixth red-team pass, R6-1, R6-5): denied by default
/// (JSON `unix_sockets.rule`, bubblewrap `--seccomp 4`, srt `allowAllUnixSockets: false`,
/// Seatbelt's blanket deny as the last rule); allowed by the policy or Docker, with none of
/// them and a reason that says every socket outside the hidden trees is reachable.
#[test]
fn the_unix_socket_rule_is_in_every_format() {
    let r = repo();
    let denied = plan(&opts(&r)).unwrap();
    assert!(
        denied.format >= 3,
        "the rule is in the contract since format 2"
    );
    assert_eq!(denied.unix_sockets.rule, UnixRule::Deny);
    let j: serde_json::Value = serde_json::from_str(&denied.to_json()).unwrap();
    assert_eq!(j["unix_sockets"]["rule"], "deny");
    let a = denied.bwrap_args();
    let at = a.iter().position(|x| x == "--seccomp").unwrap();
    assert_eq!(a[at + 1], BWRAP_SECCOMP_FD.to_string());
    let srt: serde_json::Value = serde_json::from_str(&denied.srt()).unwrap();
    assert_eq!(srt["network"]["allowAllUnixSockets"], false);
    let sb = denied.seatbelt();
    assert_eq!(
        sb.lines().last(),
        Some("(deny network-outbound (remote unix-socket))"),
        "{sb}"
    );
    for (o, why) in [
        (
            PlanOptions {
                unix_sockets: true,
                ..opts(&r)
            },
            "unix_sockets = \"allow\"",
        ),
        (
            PlanOptions {
                docker: true,
                ..opts(&r)
            },
            "[docker] enabled",
        ),
    ] {
        let p = plan(&o).unwrap();
        assert_eq!(p.unix_sockets.rule, UnixRule::Allow);
        assert!(
            p.unix_sockets.reason.contains(why),
            "{}",
            p.unix_sockets.reason
        );
        assert!(p.unix_sockets.reason.contains("reachable"));
        let j: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
        assert_eq!(j["unix_sockets"]["rule"], "allow");
        // The filter stands without its Unix rule (vsock, io_uring, other ABIs).
        assert!(p.bwrap_args().iter().any(|x| x == "--seccomp"));
        let srt: serde_json::Value = serde_json::from_str(&p.srt()).unwrap();
        assert_eq!(srt["network"]["allowAllUnixSockets"], true);
        assert!(!p
            .seatbelt()
            .contains("(deny network-outbound (remote unix-socket))"));
    }
}

/// Seventh red-team pass (R7-1): a program value's script is protected by its folder, in the
/// main work tree and in the session's worktree; a script at the top by itself, listed in
/// `unguarded` with the key, the value and why; a program built at run time from work-tree
/// content refuses the plan unless the policy allows it.
#[test]
fn a_program_values_script_is_protected_by_its_folder() {
    let r = repo();
    std::fs::create_dir_all(r.repo.join("tools/lib")).unwrap();
    std::fs::write(r.repo.join("tools/a.sh"), "true\n").unwrap();
    std::fs::write(r.repo.join("top.py"), "pass\n").unwrap();
    std::fs::write(r.repo.join("list"), "tools/a.sh\n").unwrap();
    git(&r.repo, &["config", "alias.a", "!sh tools/a$((1)).sh"]);
    git(&r.repo, &["config", "alias.t", "!python3 top.py"]);
    let p = plan(&opts(&r)).unwrap();
    let tools = r.repo.join("tools");
    assert!(
        p.read_only
            .iter()
            .any(|b| b.path == tools && b.kind == EntryKind::Dir),
        "{:?}",
        ro(&p)
    );
    let mine = r.root.join("proj-worktrees/s1/mine");
    std::fs::create_dir_all(mine.join("tools")).unwrap();
    let p = plan(&opts(&r)).unwrap();
    assert!(ro(&p).contains(&mine.join("tools")), "{:?}", ro(&p));
    assert!(ro(&p).contains(&r.repo.join("top.py")), "{:?}", ro(&p));
    assert_eq!(p.unguarded.len(), 1, "{:?}", p.unguarded);
    assert_eq!(p.unguarded[0].path, r.repo.join("top.py"));
    assert_eq!(p.unguarded[0].key, "alias.t");
    assert_eq!(p.unguarded[0].value, "!python3 top.py");
    let j: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    assert_eq!(j["unguarded"][0]["key"], "alias.t");

    git(&r.repo, &["config", "alias.d", "!sh $(cat list)"]);
    let e = plan(&opts(&r)).unwrap_err().to_string();
    assert!(
        e.contains("alias.d") && e.contains("built at run time"),
        "{e}"
    );
    let p = plan(&PlanOptions {
        allow_unresolved: true,
        ..opts(&r)
    })
    .unwrap();
    // `list` itself is protected by the fragment rule (at the top: by itself).
    assert!(ro(&p).contains(&r.repo.join("list")), "{:?}", ro(&p));
}

/// R9-9: a script the owner's alias runs from a folder that does not exist yet gets a
/// placeholder folder (the agent cannot create `scripts/lint.sh`); R9-6: one resolved from
/// the owner's subfolder (`cd "$GIT_PREFIX"`) gives no plan unless the policy allows it.
#[test]
fn a_missing_scripts_folder_is_a_placeholder_and_a_run_time_folder_gives_no_plan() {
    let r = repo();
    git(&r.repo, &["config", "alias.lint", "!sh scripts/lint.sh"]);
    let p = plan(&opts(&r)).unwrap();
    let scripts = r.repo.join("scripts");
    assert!(
        p.placeholders
            .iter()
            .any(|b| b.path == scripts && b.kind == EntryKind::Dir),
        "{:?}",
        p.placeholders
    );
    git(
        &r.repo,
        &[
            "config",
            "alias.sub",
            r#"!cd -- "${GIT_PREFIX:-.}" && sh tools/x.sh"#,
        ],
    );
    let e = plan(&opts(&r)).unwrap_err().to_string();
    assert!(
        e.contains("alias.sub") && e.contains("known only at run time"),
        "{e}"
    );
    assert!(plan(&PlanOptions {
        allow_unresolved: true,
        ..opts(&r)
    })
    .is_ok());
}

/// R11-7: a relative program is resolved from the top of every submodule checkout too: the
/// missing `scripts/` of `!sh scripts/lint.sh` gets a placeholder in `lib/` as at the top.
#[test]
fn a_relative_program_is_guarded_in_submodule_checkouts() {
    let r = repo();
    let sub = r.root.join("subsrc");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q", "-b", "main"]);
    git(&sub, &["commit", "-q", "--allow-empty", "-m", "s"]);
    git(
        &r.repo,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            sub.to_str().unwrap(),
            "lib",
        ],
    );
    // R12-1: a checkout whose `.git` is a folder (never absorbed), found by its gitlink.
    git(
        &r.root,
        &[
            "clone",
            "-q",
            sub.to_str().unwrap(),
            r.repo.join("lib2").to_str().unwrap(),
        ],
    );
    git(&r.repo, &["add", "lib2"]);
    git(&r.repo, &["config", "alias.lint", "!sh scripts/lint.sh"]);
    let p = plan(&opts(&r)).unwrap();
    for top in [r.repo.clone(), r.repo.join("lib"), r.repo.join("lib2")] {
        assert!(
            p.placeholders.iter().any(|b| b.path == top.join("scripts")),
            "{}: {:?}",
            top.display(),
            p.placeholders
        );
    }
}

/// Files the config names by path (`catalogue::PATH_KEYS`, R7-4): one that decides trust
/// (allowed signers) is read-only in the work tree, a missing one (an fsck skip list) is a
/// placeholder, in every worktree of the repository; the project's own files (a commit
/// template, `.git-blame-ignore-revs`) stay writable. A FIFO at a protected one gives no plan.
#[test]
fn named_files_that_decide_trust_are_read_only_and_the_projects_own_are_not() {
    let r = repo();
    for f in [".signers", ".gitmessage", ".git-blame-ignore-revs"] {
        std::fs::write(r.repo.join(f), "x\n").unwrap();
    }
    git(
        &r.repo,
        &["config", "gpg.ssh.allowedSignersFile", ".signers"],
    );
    git(&r.repo, &["config", "fsck.skipList", "skip.list"]);
    // The owner's own file outside every writable root, a link (a dotfile manager's): not
    // looked at, no refusal.
    let outside = r.root.join("revoked");
    std::os::unix::fs::symlink("/etc/hostname", &outside).unwrap();
    git(
        &r.repo,
        &[
            "config",
            "gpg.ssh.revocationFile",
            outside.to_str().unwrap(),
        ],
    );
    git(&r.repo, &["config", "commit.template", ".gitmessage"]);
    git(
        &r.repo,
        &["config", "blame.ignoreRevsFile", ".git-blame-ignore-revs"],
    );
    let p = plan(&opts(&r)).unwrap();
    let signers = r.repo.join(".signers");
    let b = p
        .read_only
        .iter()
        .find(|b| b.path == signers)
        .unwrap_or_else(|| panic!("allowed signers not read-only: {:#?}", ro(&p)));
    assert!(b.protects.contains("allowed signers"), "{}", b.protects);
    assert!(ph(&p).contains(&r.repo.join("skip.list")), "{:#?}", ph(&p));
    assert!(!ro(&p).contains(&outside) && !ph(&p).contains(&outside));
    let mine = r.root.join("proj-worktrees/s1/mine");
    assert!(ph(&p).contains(&mine.join("skip.list")), "{:#?}", ph(&p));
    for own in [".gitmessage", ".git-blame-ignore-revs"] {
        let path = r.repo.join(own);
        assert!(
            !ro(&p).contains(&path) && !ph(&p).contains(&path),
            "{own} frozen"
        );
    }
    std::fs::remove_file(&signers).unwrap();
    nix::unistd::mkfifo(&signers, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    match plan(&opts(&r)) {
        Err(PlanError::NotPlain { path, .. }) => assert_eq!(path, signers),
        other => panic!("a FIFO at allowed signers gave {other:?}"),
    }
}

/// The special-file rule in the JSON contract (format 4, R9-5): computed from the plan's own
/// writable roots and hidden trees, so a tree that holds a writable root of this repository
/// (its temporary folder here) is withheld, and no rule allows a FIFO in a writable root.
#[test]
fn the_special_file_rule_is_computed_from_the_plans_roots() {
    let r = repo();
    let p = plan(&opts(&r)).unwrap();
    assert_eq!(p.format, 4);
    assert_eq!(p.landlock.abi, crate::sandbox::landlock::abi());
    assert_eq!(p.landlock.policy, landlock::Policy::Required);
    for w in &p.writable {
        assert!(
            !p.landlock.allows_fifo(&w.path.join("d/.gitattributes")),
            "{}: {:?}",
            w.path.display(),
            p.landlock
        );
    }
    for t in p.hide_trees.iter().filter(|t| t.writable) {
        let holds = p.writable.iter().any(|w| w.path.starts_with(&t.path));
        assert_eq!(
            p.landlock.withheld.iter().any(|x| x.path == t.path),
            holds,
            "{}",
            t.path.display()
        );
        assert_eq!(p.landlock.allows_fifo(&t.path.join("f")), !holds);
    }
    let j: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    assert_eq!(j["landlock"]["beneath"][0]["path"], "/");
    assert_eq!(j["landlock"]["beneath"][0]["access"][0], "refer");
    let off = plan(&PlanOptions {
        landlock: landlock::Policy::Off,
        ..opts(&r)
    })
    .unwrap();
    assert_eq!(off.landlock.decision(), landlock::Decision::Skip);
}
