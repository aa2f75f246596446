//! End to end: a scripted agent runs through agent-shell (git-shim first on its PATH) inside a
//! real bubblewrap sandbox that leaves the repository writable except its hooks and config
//! (read-only binds, as an orchestrator would). Runs on every git of the machine.
//!
//! If bwrap is missing or cannot create namespaces here, the sandbox tests say so loudly and
//! are skipped with the reason; the agent-shell tests that need no sandbox still run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];
const BWRAP: &str = "/usr/bin/bwrap";

/// The binaries under test, built once (they belong to other packages of the workspace).
fn bins() -> &'static (PathBuf, PathBuf) {
    static BINS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BINS.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/<profile>/deps/<test> → target/<profile>/
        let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let mut build = Command::new(env!("CARGO"));
        build.args([
            "build",
            "-q",
            "-p",
            "git-shim",
            "-p",
            "agent-shell",
            "-p",
            "wt-check",
        ]);
        if dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build");
        assert!(
            status.success(),
            "building git-shim, agent-shell and wt-check failed"
        );
        (dir.join("git-shim"), dir.join("agent-shell"))
    })
}

fn gits() -> Vec<PathBuf> {
    GITS.iter()
        .filter(|g| {
            let ok = Path::new(g).exists();
            if !ok {
                eprintln!("SKIPPED for {g}: not installed on this machine");
            }
            ok
        })
        .map(PathBuf::from)
        .collect()
}

/// Can bwrap build a sandbox here? `Err` carries the reason.
fn bwrap_works() -> Result<(), String> {
    if !Path::new(BWRAP).exists() {
        return Err(format!(
            "{BWRAP} is not installed (apt-get install -y bubblewrap)"
        ));
    }
    let o = Command::new(BWRAP)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-all",
            "--die-with-parent",
            "/bin/true",
        ])
        .output()
        .map_err(|e| format!("cannot run {BWRAP}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "bwrap cannot create namespaces on this machine: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

struct Session {
    _t: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    worktrees: PathBuf,
    wt: PathBuf,
    policy: PathBuf,
    log: PathBuf,
    shim_dir: PathBuf,
    git: PathBuf,
}

impl Session {
    /// A repository with one commit, a policy outside every writable root, and the shim
    /// installed (pinned to the policy) by the "orchestrator", outside the sandbox.
    fn new(git: &Path) -> Session {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap().join("home");
        let repo = home.join("src/proj");
        let worktrees = home.join("src/proj-worktrees");
        for d in [&repo, &worktrees, &home.join("etc"), &home.join("var")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Agent\n\temail = agent@example.com\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        let log = home.join("var/audit.log");
        std::fs::write(&log, "").unwrap();
        let policy = home.join("etc/policy.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"{}\"\nreal_git = \"{}\"\naudit_log = \"{}\"\n",
                repo.display(),
                git.display(),
                log.display()
            ),
        )
        .unwrap();
        let s = Session {
            wt: worktrees.join("s1"),
            shim_dir: home.join(".local/state/gitward/s1/bin"),
            _t: t,
            home,
            repo,
            worktrees,
            policy,
            log,
            git: git.to_path_buf(),
        };
        s.plain(&["init", "-q"]);
        std::fs::write(s.repo.join("a.txt"), "a\n").unwrap();
        s.plain(&["add", "a.txt"]);
        s.plain(&["commit", "-q", "-m", "first"]);
        let (shim, _) = bins();
        let o = Command::new(shim)
            .env("HOME", &s.home)
            .env("PATH", "/usr/bin:/bin")
            .arg("--install")
            .arg(&s.shim_dir)
            .arg("--policy")
            .arg(&s.policy)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "install: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        s
    }

    fn plain(&self, args: &[&str]) -> String {
        let o = Command::new(&self.git)
            .env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.repo)
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// agent-shell -c SCRIPT, optionally inside bwrap.
    fn agent(&self, script: &str, sandbox: bool) -> Output {
        let (_, shell) = bins();
        let mut cmd = if sandbox {
            let mut c = Command::new(BWRAP);
            let s = |p: &Path| p.to_str().unwrap().to_owned();
            c.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
                .args(["--unshare-all", "--die-with-parent", "--new-session"])
                // The repository and the session's worktree folder are writable…
                .args(["--bind", &s(&self.repo), &s(&self.repo)])
                .args(["--bind", &s(&self.worktrees), &s(&self.worktrees)])
                // …except the repository's hooks and config.
                .args([
                    "--ro-bind",
                    &s(&self.repo.join(".git/hooks")),
                    &s(&self.repo.join(".git/hooks")),
                ])
                .args([
                    "--ro-bind",
                    &s(&self.repo.join(".git/config")),
                    &s(&self.repo.join(".git/config")),
                ])
                // The audit log is appended to from inside.
                .args(["--bind", &s(&self.log), &s(&self.log)])
                .args(["--chdir", &s(&self.repo)])
                .arg("--")
                .arg(shell);
            c
        } else {
            let mut c = Command::new(shell);
            c.current_dir(&self.repo);
            c
        };
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", "/usr/bin:/bin")
            .env("LD_PRELOAD", "")
            .env("BASH_ENV", "/nonexistent-bash-env")
            .env("GIT_DIR", "/nonexistent")
            .env("DOCKER_HOST", "unix:///var/run/docker.sock")
            .arg("--policy")
            .arg(&self.policy)
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }

    fn events(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// The scripted agent: each step prints `name=<exit status>`.
const AGENT: &str = r##"
step() { name=$1; shift; "$@"; echo "$name=$?"; }
echo b > b.txt
step add git add b.txt
step commit git commit -q -m agent-commit
step wt_add git worktree add -q -b feat ../proj-worktrees/s1/feat
cd ../proj-worktrees/s1/feat && echo f > f.txt
step wt_commit_add git add f.txt
step wt_commit git commit -q -m worktree-commit
cd - >/dev/null
step wt_remove git worktree remove ../proj-worktrees/s1/feat
step wt_elsewhere git worktree add -q /tmp/gitward-e2e-elsewhere
step wt_inside git worktree add -q inside
step hookspath git config core.hooksPath /tmp/h
step ext_remote git remote add evil 'ext::sh -c touch% /tmp/gitward-e2e-pwned'
step real_git_config /usr/bin/git config core.hooksPath /tmp/h
step plant_hook sh -c 'echo "#!/bin/sh" > .git/hooks/pre-commit'
echo "path_git=$(command -v git)"
echo "ld_preload=${LD_PRELOAD-unset} git_dir=${GIT_DIR-unset} docker=${DOCKER_HOST-unset}"
"##;

fn status_of(out: &str, step: &str) -> i32 {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{step}=")))
        .unwrap_or_else(|| panic!("step {step} missing from:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn scripted_agent_in_bubblewrap() {
    if let Err(why) = bwrap_works() {
        eprintln!("\n!!! SKIPPED scripted_agent_in_bubblewrap: {why}\n");
        return;
    }
    for g in gits() {
        let s = Session::new(&g);
        // The orchestrator pins the git folder at sandbox build, outside the sandbox.
        let state = s.home.join("var/wt-state.json");
        let wt_check = bins().0.with_file_name("wt-check");
        let pin = Command::new(&wt_check)
            .env("HOME", &s.home)
            .args(["pin", "--session", "s1", "--state"])
            .arg(&state)
            .arg(&s.repo)
            .output()
            .unwrap();
        assert!(
            pin.status.success(),
            "wt-check pin: {}",
            String::from_utf8_lossy(&pin.stderr)
        );
        let o = s.agent(AGENT, true);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let ctx = format!("{}\nstdout:\n{out}\nstderr:\n{err}", g.display());
        assert!(o.status.success(), "{ctx}");
        // What the agent may do works.
        for step in [
            "add",
            "commit",
            "wt_add",
            "wt_commit_add",
            "wt_commit",
            "wt_remove",
        ] {
            assert_eq!(status_of(&out, step), 0, "{step}: {ctx}");
        }
        assert_eq!(
            s.plain(&["log", "-1", "--format=%s"]).trim(),
            "agent-commit",
            "{ctx}"
        );
        assert_eq!(
            s.plain(&["log", "-1", "--format=%s", "feat"]).trim(),
            "worktree-commit",
            "{ctx}"
        );
        assert!(
            !s.wt.exists(),
            "the session folder goes with its last worktree: {ctx}"
        );
        // What it may not do is refused by the shim, exit 121, with the documented messages.
        for step in ["wt_elsewhere", "wt_inside", "hookspath", "ext_remote"] {
            assert_eq!(status_of(&out, step), 121, "{step}: {ctx}");
        }
        let line = |rule: &str| {
            err.lines()
                .find(|l| l.starts_with(&format!("git-shim: refused ({rule}): ")))
                .unwrap_or_else(|| panic!("no {rule} refusal: {ctx}"))
                .to_owned()
        };
        let wt_line = line("worktree-location");
        assert!(
            wt_line.contains(&format!("go under {}/", s.wt.display())),
            "{wt_line}"
        );
        assert!(line("config-key").contains("core.hooksPath"));
        assert!(line("remote-url").contains("ext::"));
        // The sandbox itself holds against the real git by absolute path (the shim is the
        // message layer, not the boundary).
        assert_ne!(status_of(&out, "real_git_config"), 0, "{ctx}");
        assert_ne!(status_of(&out, "plant_hook"), 0, "{ctx}");
        assert!(!s.repo.join(".git/hooks/pre-commit").exists());
        let cfg = std::fs::read_to_string(s.repo.join(".git/config")).unwrap();
        assert!(
            !cfg.contains("hooksPath") && !cfg.contains("ext::"),
            "{cfg}"
        );
        assert!(!Path::new("/tmp/gitward-e2e-elsewhere").exists());
        assert!(!s.repo.join("inside").exists());
        // The shim was first on PATH; the defused environment reached the agent.
        assert!(
            out.contains(&format!("path_git={}", s.shim_dir.join("git").display())),
            "{ctx}"
        );
        assert!(
            out.contains("ld_preload=unset git_dir=unset docker=unset"),
            "{ctx}"
        );
        // The audit log holds every decision.
        let ev = s.events();
        let count = |kind: &str| ev.iter().filter(|e| e["event"] == kind).count();
        let refused: Vec<&str> = ev
            .iter()
            .filter(|e| e["event"] == "git_refused")
            .map(|e| e["rule"].as_str().unwrap())
            .collect();
        assert_eq!(
            refused,
            [
                "worktree-location",
                "worktree-location",
                "config-key",
                "remote-url"
            ],
            "{ev:?}"
        );
        // add, commit, worktree add, add, commit, worktree remove.
        assert_eq!(count("git_allowed"), 6, "{ev:?}");
        assert_eq!(count("worktree_folder_created"), 1, "{ev:?}");
        assert_eq!(count("worktree_folder_removed"), 1, "{ev:?}");
        assert_eq!(count("command_finished"), 1, "{ev:?}");
        assert!(ev.iter().all(|e| e["session"] == "s1"));
        // At the turn's end, the git folder check finds nothing the sandbox let through: the
        // commits and the session's own worktree are allowed, everything else was refused.
        let check = Command::new(&wt_check)
            .env("HOME", &s.home)
            .args(["check", "--session", "s1", "--state"])
            .arg(&state)
            .arg(&s.repo)
            .output()
            .unwrap();
        assert_eq!(
            check.status.code(),
            Some(0),
            "wt-check check after the turn: {}\n{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
fn agent_shell_passes_the_status_and_defuses_the_environment() {
    let g = gits().remove(0);
    let s = Session::new(&g);
    let o = s.agent(
        "echo ${BASH_ENV-unset} ${GIT_DIR-unset} ${GITWARD_POLICY}; exit 7",
        false,
    );
    assert_eq!(o.status.code(), Some(7));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.trim(), format!("unset unset {}", s.policy.display()));
    let o = s.agent("kill -TERM $$", false);
    assert_eq!(o.status.code(), Some(128 + 15));
    // As $SHELL: -lc and positional parameters.
    let (_, shell) = bins();
    let o = Command::new(shell)
        .current_dir(&s.repo)
        .env("HOME", &s.home)
        .env("GITWARD_POLICY", &s.policy)
        .args([
            "-lc",
            "echo $0 $1; git rev-parse --show-toplevel",
            "zero",
            "one",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("zero one\n{}\n", s.repo.display())
    );
    // Its own flags.
    let o = Command::new(shell).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("agent-shell "));
    let o = Command::new(shell)
        .args(["--generate", "bash"])
        .output()
        .unwrap();
    assert!(o.status.success() && !o.stdout.is_empty());
    let o = Command::new(shell).arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("EXAMPLES"));
    let o = Command::new(shell).arg("--bogus").output().unwrap();
    assert_eq!(o.status.code(), Some(120));
    // No policy: refuse to start.
    let o = Command::new(shell)
        .env_remove("GITWARD_POLICY")
        .args(["-c", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(124));
    // Discovery stops at the ceiling: a repository above the workspace is not found.
    let above = s.home.join("src");
    s.plain(&["init", "-q", above.to_str().unwrap()]);
    let plain_dir = s.home.join("src/other");
    std::fs::create_dir_all(&plain_dir).unwrap();
    let o = Command::new(shell)
        .current_dir(&plain_dir)
        .env("HOME", &s.home)
        .args([
            "--policy",
            s.policy.to_str().unwrap(),
            "-c",
            "git rev-parse --git-dir",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(128),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The orchestrator topology for the settings guard: agent-shell outside the sandbox starts
/// bwrap as its command, so the held-writes store stays out of the agent's reach. A widening
/// write to `.claude/settings.json` is reverted and held; a narrowing one is accepted.
#[test]
fn settings_guard_holds_widening_writes() {
    if let Err(why) = bwrap_works() {
        eprintln!("\n!!! SKIPPED settings_guard_holds_widening_writes: {why}\n");
        return;
    }
    let g = gits().remove(0);
    let s = Session::new(&g);
    let settings = s.repo.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let narrow = r#"{"permissions":{"allow":["Bash(ls)"],"deny":["Bash(rm)"]}}"#;
    std::fs::write(&settings, r#"{"permissions":{"allow":["Bash(ls)"]}}"#).unwrap();
    let (_, shell) = bins();
    let run = |inner: &str| {
        let r = s.repo.to_str().unwrap();
        let script = format!(
            "{BWRAP} --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent \
             --bind {r} {r} --ro-bind {r}/.git/hooks {r}/.git/hooks --ro-bind {r}/.git/config {r}/.git/config \
             --bind {log} {log} --chdir {r} -- /bin/bash -c '{inner}'",
            log = s.log.display()
        );
        Command::new(shell)
            .current_dir(&s.repo)
            .env_clear()
            .env("HOME", &s.home)
            .env("PATH", "/usr/bin:/bin")
            .args(["--policy", s.policy.to_str().unwrap(), "-c", &script])
            .output()
            .unwrap()
    };
    // Narrowing: a deny rule added. Accepted, stays.
    let o = run(&format!(
        "echo {narrow:?} > .claude/settings.json; git status --short >/dev/null"
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&settings).unwrap().trim(), narrow);
    // Widening: permissions.allow grows. Reverted to the approved bytes and held.
    let o = run(
        r#"echo "{\"permissions\":{\"allow\":[\"Bash(ls)\",\"Bash(curl:*)\"]}}" > .claude/settings.json"#,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap().trim(),
        narrow,
        "{err}"
    );
    assert!(err.contains("held as"), "{err}");
    let ev = s.events();
    let held: Vec<_> = ev
        .iter()
        .filter(|e| e["event"] == "settings_write_held")
        .collect();
    assert_eq!(held.len(), 1, "{ev:?}");
    assert_eq!(held[0]["tool"], "agent-shell");
    assert_eq!(held[0]["rel"], ".claude/settings.json");
    assert!(
        ev.iter().any(|e| e["event"] == "settings_write_accepted"),
        "{ev:?}"
    );
    // The agent's bytes are in the held store, not lost.
    let pending = s.home.join(".local/state/gitward/s1/held/pending");
    let stored: String = std::fs::read_dir(&pending)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    assert!(stored.contains("curl"), "{stored}");
}

/// Third red-team pass (docs/redteam3.md): a write made between two commands — by a job a
/// command left in the background, or by an editing tool that does not go through the shell —
/// used to fall outside every command's before/after window and then became the next
/// command's "before". The guard judges every guarded file against its approved state.
#[test]
fn settings_guard_judges_writes_made_between_commands() {
    let g = gits().remove(0);
    let s = Session::new(&g);
    let settings = s.repo.join(".vscode/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let approved = r#"{"chat.tools.autoApprove": false}"#;
    std::fs::write(&settings, approved).unwrap();
    // The first command makes the files as they are the approved state.
    assert!(s.agent("true", false).status.success());
    // A background job writes after its command has returned.
    let o = s.agent(
        r#"(sleep 1; printf '{"chat.tools.autoApprove": true}' > .vscode/settings.json) >/dev/null 2>&1 &"#,
        false,
    );
    assert!(o.status.success());
    assert!(
        (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::fs::read_to_string(&settings).unwrap().contains("true")
        }),
        "the background write did not land"
    );
    // Control: nothing judged it yet. The next command, whatever it is, does.
    let o = s.agent("true", false);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        approved,
        "{err}"
    );
    assert!(err.contains("held as"), "{err}");
    let ev = s.events();
    assert!(
        ev.iter().any(|e| e["event"] == "settings_write_held"
            && e["tool"] == "agent-shell"
            && e["rel"] == ".vscode/settings.json"),
        "{ev:?}"
    );
}
