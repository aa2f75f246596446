//! End to end: a scripted agent runs through agent-shell (git-shim first on its PATH) inside a
//! real bubblewrap sandbox built from the repository's sandbox plan (`agent-shell --sandbox
//! bwrap`, the same plan `wt-check plan` prints). Runs on every git of the machine.
//!
//! If bwrap is missing or cannot create namespaces here, the sandbox tests are compiled as
//! ignored with the reason (build.rs, `gitward_no_bwrap`); under `CI=true` they run and fail.
//! The agent-shell tests that need no sandbox always run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "common/sandboxed.rs"]
mod sandboxed;
use sandboxed::{bins, bwrap_works, gits, BWRAP};

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

    /// agent-shell -c SCRIPT, optionally inside bubblewrap built from the repository's plan
    /// (`agent-shell --sandbox bwrap`).
    fn agent(&self, script: &str, sandbox: bool) -> Output {
        self.agent_env(script, sandbox, &[])
    }

    /// [`Session::agent`] with more variables in agent-shell's environment.
    fn agent_env(&self, script: &str, sandbox: bool, extra: &[(&str, &Path)]) -> Output {
        let (_, shell) = bins();
        let mut cmd = Command::new(shell);
        cmd.current_dir(&self.repo);
        if sandbox {
            cmd.args(["--sandbox", "bwrap"]);
        }
        cmd.env_clear();
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd.env("HOME", &self.home)
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

/// The scripted agent: each step prints `name=<exit status>`; `try` steps (attempts on the
/// protected set) print `name=<exit status> <first line of stderr>`.
const AGENT: &str = r##"
step() { name=$1; shift; "$@"; echo "$name=$?"; }
try() { name=$1; shift; err=$("$@" 2>&1 >/dev/null); echo "$name=$? $(printf '%s' "$err" | head -n 1)"; }
echo b > b.txt
step add git add b.txt
step commit git commit -q -m agent-commit
step branch git branch topic
step status git status --short
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
G=$REAL_GIT
try p_hooks_dir mkdir .git/hooks
try p_hook sh -c 'echo "#!/bin/sh" > .git/hooks/pre-commit'
try p_hooks_swap sh -c 'mv .git/hooks .git/hooks.old'
try p_config_append sh -c 'echo "[core]" >> .git/config'
try p_config_git $G config core.hooksPath /tmp/h
try p_config_replace sh -c 'cp .git/config /tmp/c 2>/dev/null; echo x > .git/c.new && mv .git/c.new .git/config'
try p_config_worktree sh -c 'echo "[core] hooksPath = /tmp/h" > .git/config.worktree'
try p_config_worktree_git $G config --file .git/config.worktree core.hooksPath /tmp/h
try p_own_commondir sh -c 'echo /tmp > .git/worktrees/mine/commondir'
try p_own_commondir_mv mv .git/worktrees/mine/commondir .git/worktrees/mine/c.old
try p_own_config_worktree sh -c 'echo x > .git/worktrees/mine/config.worktree'
try p_attributes sh -c 'echo "* filter=x" > .git/info/attributes'
try p_exclude sh -c 'echo x >> .git/info/exclude'
try p_modules mkdir -p .git/modules/x
try p_modules_file sh -c 'echo x > .git/modules/config'
try p_alternates sh -c 'echo /tmp > .git/objects/info/alternates'
try p_remotes sh -c 'echo "URL: ext::sh" > .git/remotes/origin'
try p_other_entry sh -c 'echo /tmp/x > .git/worktrees/theirs/gitdir'
try p_other_entry_rm rm -rf .git/worktrees/theirs
try p_other_worktree sh -c 'echo x > ../proj-worktrees/s2/theirs/planted'
try p_other_session sh -c 'mkdir ../proj-worktrees/s2/new'
try p_tmp_git mkdir /tmp/.git
test -d /tmp/.git; echo tmp_git_inside=$?
echo "path_git=$(command -v git)"
echo "ld_preload=${LD_PRELOAD-unset} git_dir=${GIT_DIR-unset} docker=${DOCKER_HOST-unset}"
"##;

/// The attempts on the protected set in [`AGENT`], each of which must fail.
const PROTECTED_STEPS: &[&str] = &[
    "p_hooks_dir",
    "p_hook",
    "p_hooks_swap",
    "p_config_append",
    "p_config_git",
    "p_config_replace",
    "p_config_worktree",
    "p_config_worktree_git",
    "p_own_commondir",
    "p_own_commondir_mv",
    "p_own_config_worktree",
    "p_attributes",
    "p_exclude",
    "p_modules",
    "p_modules_file",
    "p_alternates",
    "p_remotes",
    "p_other_entry",
    "p_other_entry_rm",
    "p_other_worktree",
    "p_other_session",
];

fn status_of(out: &str, step: &str) -> i32 {
    step_line(out, step)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn step_line<'a>(out: &'a str, step: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{step}=")))
        .unwrap_or_else(|| panic!("step {step} missing from:\n{out}"))
        .trim()
}

/// The errors a write on the protected set may meet: a read-only mount (EROFS), a denied
/// operation (EPERM), a mount point that cannot be renamed or removed (EBUSY), a placeholder
/// already standing where a folder was to be made (EEXIST), git's own words for them.
const REFUSALS: &[&str] = &[
    "Read-only file system",
    "Operation not permitted",
    "Device or resource busy",
    "File exists",
    "could not lock config file",
    "could not write config file",
];

/// wt-check with the test's HOME.
fn wt_check(s: &Session, args: &[&str]) -> Output {
    Command::new(bins().0.with_file_name("wt-check"))
        .env("HOME", &s.home)
        .args(args)
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn scripted_agent_in_bubblewrap() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        let s = Session::new(&g);
        // Before the turn: the session has a worktree, another session has one, and the
        // repository has no hooks folder (a placeholder must keep it from being created).
        s.plain(&["worktree", "add", "-q", "../proj-worktrees/s1/mine"]);
        s.plain(&["worktree", "add", "-q", "../proj-worktrees/s2/theirs"]);
        std::fs::remove_dir_all(s.repo.join(".git/hooks")).unwrap();
        // The orchestrator pins the git folder at sandbox build, outside the sandbox.
        let state = s.home.join("var/wt-state.json");
        let st = state.to_str().unwrap();
        let repo = s.repo.to_str().unwrap();
        let pin = wt_check(&s, &["pin", "--session", "s1", "--state", st, repo]);
        assert!(
            pin.status.success(),
            "wt-check pin: {}",
            String::from_utf8_lossy(&pin.stderr)
        );
        // The plan's JSON names exactly the set pin recorded.
        let plan = wt_check(&s, &["plan", "--session", "s1", "--format", "json", repo]);
        assert!(
            plan.status.success(),
            "{}",
            String::from_utf8_lossy(&plan.stderr)
        );
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        // The state's object (format 3: the ref snapshot follows it as a second document).
        let pinned: serde_json::Value =
            serde_json::Deserializer::from_slice(&std::fs::read(&state).unwrap())
                .into_iter::<serde_json::Value>()
                .next()
                .unwrap()
                .unwrap();
        let mut want: Vec<String> = pinned["entries"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .chain(pinned["includes"].as_object().unwrap().keys().cloned())
            .collect();
        let mut got: Vec<String> = plan["pinned"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["entry"].as_str().unwrap().to_owned())
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "wt-check plan against the state file");

        let script = AGENT.replace("$REAL_GIT", g.to_str().unwrap());
        let o = s.agent(&script, true);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let ctx = format!("{}\nstdout:\n{out}\nstderr:\n{err}", g.display());
        assert!(o.status.success(), "{ctx}");
        // What the agent may do works.
        for step in [
            "add",
            "commit",
            "branch",
            "status",
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
        assert!(!s.wt.join("feat").exists(), "{ctx}");
        // What it may not do is refused by the shim, exit 121, with the documented messages.
        for step in ["wt_elsewhere", "wt_inside", "hookspath", "ext_remote"] {
            assert_eq!(status_of(&out, step), 121, "{step}: {ctx}");
        }
        assert!(err.contains("git-shim: refused (config-key): "), "{ctx}");
        assert!(err.contains("git-shim: refused (remote-url): "), "{ctx}");
        // Every attempt on the protected set fails, with the sandbox's refusal, whatever
        // tool makes it (the real git by absolute path too: the shim is not the boundary).
        for step in PROTECTED_STEPS {
            let line = step_line(&out, step);
            assert_ne!(status_of(&out, step), 0, "{step} succeeded: {ctx}");
            assert!(
                REFUSALS.iter().any(|r| line.contains(r)),
                "{step}: not refused by the sandbox ({line}): {ctx}"
            );
        }
        // Nothing of it reached the host.
        let git_dir = s.repo.join(".git");
        for gone in [
            "hooks",
            "config.worktree",
            "info/attributes",
            "modules",
            "objects/info/alternates",
            "remotes",
            "worktrees/mine/config.worktree",
        ] {
            assert!(
                std::fs::symlink_metadata(git_dir.join(gone)).is_err(),
                "{gone} exists after the turn (a placeholder's mount point left behind?): {ctx}"
            );
        }
        let cfg = std::fs::read_to_string(git_dir.join("config")).unwrap();
        assert!(
            !cfg.contains("hooksPath") && !cfg.contains("ext::"),
            "{cfg}"
        );
        assert!(!s.worktrees.join("s2/theirs/planted").exists());
        assert!(!Path::new("/tmp/gitward-e2e-elsewhere").exists());
        // `/tmp` is a fresh tmpfs inside (R5-1): a `.git` made there stays inside.
        assert_eq!(status_of(&out, "tmp_git_inside"), 0, "{ctx}");
        assert!(!Path::new("/tmp/.git").exists(), "{ctx}");
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
        // The audit log holds every decision of the shim.
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
        // add, commit, branch, status, worktree add, add, commit, worktree remove.
        assert_eq!(count("git_allowed"), 8, "{ev:?}");
        assert_eq!(count("command_finished"), 1, "{ev:?}");
        assert!(ev.iter().all(|e| e["session"] == "s1"));
        // At the turn's end, the git folder check finds nothing the sandbox let through.
        let check = wt_check(&s, &["check", "--session", "s1", "--state", st, repo]);
        assert_eq!(
            check.status.code(),
            Some(0),
            "wt-check check after the turn: {}\n{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

/// The plan is made afresh for each command: a worktree another session adds between two
/// commands is bound read-only in the next one, and the first session's sandbox did not need
/// restarting for it.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn each_command_gets_a_fresh_plan() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        let s = Session::new(&g);
        let o = s.agent("git status --short && echo ok", true);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        s.plain(&["worktree", "add", "-q", "../proj-worktrees/s2/late"]);
        let o = s.agent(
            "echo /tmp > .git/worktrees/late/gitdir; echo entry=$?; git log -1 --format=%s",
            true,
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("entry=1"), "{out}");
        assert!(out.contains("first"), "{out}");
        let gitdir = std::fs::read_to_string(s.repo.join(".git/worktrees/late/gitdir")).unwrap();
        assert!(gitdir.contains("proj-worktrees/s2/late"), "{gitdir}");
    }
}

/// The command keeps no capability, whoever starts agent-shell: with CAP_SYS_ADMIN a root
/// caller's command could unmount the read-only binds (`umount .git/config`) or remount `/`
/// read-write and write the git dir (red-team pass on the plan, P-13). Positive control: the
/// same bubblewrap base without `--cap-drop ALL` keeps them for root.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn the_sandboxed_command_keeps_no_capability() {
    bwrap_works().expect("bubblewrap must work for this test");
    let cap_eff = |out: &[u8]| -> String {
        String::from_utf8_lossy(out)
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let g = &gits()[0];
    let s = Session::new(g);
    let o = s.agent(
        "grep CapEff /proc/self/status; umount .git/config; echo umount=$?
         grep NoNewPrivs /proc/self/status; grep \" $PWD \" /proc/self/mountinfo",
        true,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(cap_eff(&o.stdout), "0000000000000000", "{out}");
    // A set-uid program gains nothing inside: no_new_privs is set, and the writable roots
    // are mounted nosuid (a set-uid bit the agent sets stays on the host's file, though:
    // docs/sandbox-plan.md). Control: this test process runs without no_new_privs.
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    assert!(own.contains("NoNewPrivs:\t0"), "control: {own}");
    let mnt = out
        .lines()
        .find(|l| l.contains(&format!(" {} ", s.repo.display())))
        .unwrap_or_else(|| panic!("no mount of the work tree: {out}"));
    assert!(mnt.contains("nosuid"), "{mnt}");
    assert!(
        out.contains("umount=") && !out.contains("umount=0"),
        "{out}"
    );
    // Positive control, only meaningful for a root caller.
    if nix::unistd::Uid::effective().is_root() {
        let plain = Command::new(BWRAP)
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--unshare-all", "--die-with-parent", "--new-session"])
            .args(["grep", "CapEff", "/proc/self/status"])
            .output()
            .unwrap();
        assert_ne!(
            cap_eff(&plain.stdout),
            "0000000000000000",
            "bubblewrap without --cap-drop keeps a root caller's capabilities"
        );
    }
}

/// A link swapped in after planning is refused, not followed: the binder opens every path
/// again without following links. Positive control: bubblewrap binding by path follows it.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_link_swapped_in_after_planning_is_refused() {
    use gitward::plan::{plan, PlanOptions};
    use gitward::sandbox::{prepare, Base, SandboxError};
    bwrap_works().expect("bubblewrap must work for this test");
    let g = gits().remove(0);
    let s = Session::new(&g);
    let p = plan(&PlanOptions {
        repo: s.repo.clone(),
        session: Some("s1".into()),
        session_dir: Some(s.wt.clone()),
        ..PlanOptions::default()
    });
    // The session folder must exist to be planned (agent-shell creates it).
    assert!(p.is_err(), "a missing session folder cannot be bound");
    std::fs::create_dir_all(&s.wt).unwrap();
    let p = plan(&PlanOptions {
        repo: s.repo.clone(),
        session: Some("s1".into()),
        session_dir: Some(s.wt.clone()),
        ..PlanOptions::default()
    })
    .unwrap();
    assert!(prepare(&p, &Base::default()).is_ok());
    // The swap: hooks becomes a link to a folder holding a hook.
    let hooks = s.repo.join(".git/hooks");
    let evil = s.home.join("evil-hooks");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("pre-commit"), "#!/bin/sh\necho pwned\n").unwrap();
    std::fs::rename(&hooks, s.home.join("hooks.real")).unwrap();
    std::os::unix::fs::symlink(&evil, &hooks).unwrap();
    // Positive control: bind by path (what `--ro-bind SRC DEST` does) follows the link.
    let h = hooks.to_str().unwrap();
    let o = Command::new(BWRAP)
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all"])
        .args(["--ro-bind", h, "/mnt", "--", "cat", "/mnt/pre-commit"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("pwned"),
        "control: bwrap by path should follow the link: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // From the plan made before the swap: refused, naming the path.
    let e = prepare(&p, &Base::default()).unwrap_err();
    assert!(
        matches!(&e, SandboxError::Link { path, .. } if *path == hooks),
        "{e}"
    );
    // A writable root swapped for a link is refused the same way.
    std::fs::remove_file(&hooks).unwrap();
    std::fs::rename(s.home.join("hooks.real"), &hooks).unwrap();
    std::fs::rename(&s.wt, s.home.join("wt.real")).unwrap();
    std::os::unix::fs::symlink(s.home.join("etc"), &s.wt).unwrap();
    let e = prepare(&p, &Base::default()).unwrap_err();
    assert!(
        matches!(&e, SandboxError::Link { path, .. } if *path == s.wt),
        "{e}"
    );
    // agent-shell plans afresh and refuses the layout: one line, setup exit status.
    std::fs::remove_file(&s.wt).unwrap();
    std::fs::rename(&hooks, s.home.join("hooks.real")).unwrap();
    std::os::unix::fs::symlink(&evil, &hooks).unwrap();
    let o = s.agent("echo ran", true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(124), "{err}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("ran"));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(h) && err.contains("symbolic link"), "{err}");
}

/// `wt-check plan` on a layout it cannot vouch for: no plan, one line naming the path, exit 2.
#[test]
fn wt_check_plan_refuses_a_layout_it_cannot_vouch_for() {
    let g = gits().remove(0);
    let s = Session::new(&g);
    let other = s.home.join("other");
    std::fs::create_dir_all(&other).unwrap();
    s.plain(&["init", "-q", other.to_str().unwrap()]);
    let wt = s.home.join("src/wt");
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}/.git\n", other.display()),
    )
    .unwrap();
    for format in ["json", "bwrap", "srt", "seatbelt", "seccomp"] {
        let o = wt_check(&s, &["plan", "--format", format, wt.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(o.stdout.is_empty(), "never a partial plan");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&wt.join(".git").display().to_string()),
            "{err}"
        );
    }
    // And a good one in every format.
    for format in ["json", "bwrap", "srt", "seatbelt", "seccomp"] {
        let o = wt_check(
            &s,
            &[
                "plan",
                "--session",
                "s1",
                "--format",
                format,
                s.repo.to_str().unwrap(),
            ],
        );
        // The session folder does not exist yet: no plan (a bind needs it).
        assert_eq!(o.status.code(), Some(2), "{format}");
    }
    std::fs::create_dir_all(&s.wt).unwrap();
    for format in ["json", "bwrap", "srt", "seatbelt"] {
        let o = wt_check(
            &s,
            &[
                "plan",
                "--policy",
                s.policy.to_str().unwrap(),
                "--format",
                format,
                s.repo.to_str().unwrap(),
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(".git/config"),
            "{format}"
        );
    }
    // The Unix-socket filter, as bubblewrap's --seccomp reads it: struct sock_filter[],
    // starting with the load of seccomp_data.arch.
    let o = wt_check(
        &s,
        &[
            "plan",
            "--policy",
            s.policy.to_str().unwrap(),
            "--format",
            "seccomp",
            s.repo.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(!o.stdout.is_empty() && o.stdout.len().is_multiple_of(8));
    assert_eq!(&o.stdout[..8], &[0x20, 0, 0, 0, 4, 0, 0, 0]);
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
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn settings_guard_holds_widening_writes() {
    bwrap_works().expect("bubblewrap must work for this test");
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
        (0..1200).any(|_| {
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

/// Two sessions' sandboxes on one repository: the one that ends first leaves the
/// placeholders' mount points alone (removing one from the host unmounts it in the other
/// sandbox, where the agent could then create the name — seen here by hand with `rmdir`
/// during a sandbox); the last one out removes them. On this kernel the first sandbox's own
/// removal also tends to fail while its namespace is torn down, so this test does not fail
/// without the lock; it pins the behaviour, the lock is the guarantee.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn the_last_sandbox_out_removes_the_placeholders() {
    bwrap_works().expect("bubblewrap must work for this test");
    let g = gits().remove(0);
    let s = Session::new(&g);
    let p2 = s.home.join("etc/policy2.toml");
    std::fs::write(
        &p2,
        std::fs::read_to_string(&s.policy)
            .unwrap()
            .replace("session = \"s1\"", "session = \"s2\""),
    )
    .unwrap();
    let (_, shell) = bins();
    let modules = s.repo.join(".git/modules");
    let first = Command::new(shell)
        .current_dir(&s.repo)
        .env_clear()
        .env("HOME", &s.home)
        .env("PATH", "/usr/bin:/bin")
        .args(["--sandbox", "bwrap", "--policy", s.policy.to_str().unwrap()])
        // In, then out only once the second has run (signal files in the work tree, which
        // both sides see; a fixed `sleep 3` and a 1.2 s wait for the first to be in failed
        // either way on a loaded machine).
        .args([
            "-c",
            "touch .first-in; for i in $(seq 1200); do [ -e .first-go ] && break; sleep 0.05; done; \
             mkdir -p .git/modules/x; echo first=$?",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first_in = s.repo.join(".first-in");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !first_in.exists() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(first_in.exists(), "the first sandbox's command never ran");
    assert!(modules.is_dir(), "the first sandbox's mount point stands");
    let o = Command::new(shell)
        .current_dir(&s.repo)
        .env_clear()
        .env("HOME", &s.home)
        .env("PATH", "/usr/bin:/bin")
        .args([
            "--sandbox",
            "bwrap",
            "--policy",
            p2.to_str().unwrap(),
            "-c",
            "true",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        modules.is_dir(),
        "the second sandbox left the first one's placeholder"
    );
    std::fs::write(s.repo.join(".first-go"), "").unwrap();
    let o = first.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("first=1"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!modules.exists(), "the last one out removed it");
}

/// The attacks of the red-team pass on the plan's read-only set (P-1, P-2, P-5, P-10): each
/// renames a folder that holds a read-only bind or placeholder (the mount travels with the
/// folder) and puts a writable copy where the protected path was. `name=<status>` per attack.
const RENAME_ATTACKS: &str = r##"
step() { name=$1; shift; sh -c "$*" >/dev/null 2>&1; echo "$name=$?"; }
step r_include 'mv conf conf.old && mkdir conf && printf "[core]\n\tfsmonitor = \"touch $MARK; false\"\n" > conf/shared.cfg'
step r_own_entry 'mv .git/worktrees/mine .git/worktrees/mine.old && mkdir .git/worktrees/mine && cp -a .git/worktrees/mine.old/. .git/worktrees/mine/ 2>/dev/null; echo /tmp > .git/worktrees/mine/commondir'
step r_other_entry 'mv .git/worktrees .git/wt.old && mkdir .git/worktrees && cp -a .git/wt.old/. .git/worktrees/ 2>/dev/null; echo /tmp > .git/worktrees/theirs/commondir'
step r_objects_info 'mv .git/objects/info .git/objects/info.old && mkdir .git/objects/info && echo /tmp > .git/objects/info/alternates'
step r_objects 'mv .git/objects .git/objects.x && mv .git/objects.x .git/objects'
step r_other_session 'mv .worktrees .wt.old && mkdir -p .worktrees/s2 && cp -a .wt.old/s2/theirs .worktrees/s2/ 2>/dev/null; echo planted > .worktrees/s2/theirs/planted'
"##;

/// A read-only bind or placeholder cannot be escaped by renaming a folder above it (red-team
/// pass on the plan, P-1, P-2, P-5, P-10): every folder between a writable root and a mount is
/// an anchor, itself a mount point, which the kernel refuses to rename (`EBUSY`). Positive
/// control: the same plan without its anchors (the sandbox before the fix) lets every attack
/// through, and the owner's plain git then runs the planted fsmonitor. The session folder lies
/// inside the work tree (`proj/.worktrees/s1`, a nested writable root), beside another
/// session's. After the attacks, the agent's normal work goes on and `wt-check check` is clean.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_protected_entry_cannot_be_renamed_away_with_its_folder() {
    use gitward::plan::{plan, PlanOptions};
    use gitward::sandbox::{prepare, Base};
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        for naive in [true, false] {
            let s = Session::new(&g);
            let repo = s.repo.to_str().unwrap().to_owned();
            let wt_dir = s.repo.join(".worktrees/s1");
            let mark = s.home.join("FIRED");
            // The owner's layout: an include target in the work tree, sessions' folders in it.
            std::fs::create_dir_all(s.repo.join("conf")).unwrap();
            std::fs::write(s.repo.join("conf/shared.cfg"), "[user]\n\tname = o\n").unwrap();
            std::fs::write(s.repo.join(".gitignore"), ".worktrees/\n").unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "layout"]);
            let inc = s.repo.join("conf/shared.cfg");
            s.plain(&["config", "include.path", inc.to_str().unwrap()]);
            // A missing include target whose folders are missing too: the placeholder covers
            // the topmost missing folder (a folder bubblewrap would create could be renamed).
            let deep = s.repo.join("newdir/sub/x.cfg");
            s.plain(&["config", "--add", "include.path", deep.to_str().unwrap()]);
            s.plain(&["worktree", "add", "-q", ".worktrees/s1/mine"]);
            s.plain(&["worktree", "add", "-q", ".worktrees/s2/theirs"]);
            let mut pol = std::fs::read_to_string(&s.policy).unwrap();
            pol.push_str(&format!("worktree_dir = \"{}\"\n", wt_dir.display()));
            std::fs::write(&s.policy, pol).unwrap();
            let state = s.home.join("var/wt-state.json");
            let st = state.to_str().unwrap();
            let wd = wt_dir.to_str().unwrap();
            let pin = wt_check(
                &s,
                &[
                    "pin",
                    "--accept-armed",
                    "--session",
                    "s1",
                    "--worktree-dir",
                    wd,
                    "--state",
                    st,
                    &repo,
                ],
            );
            assert!(
                pin.status.success(),
                "{}",
                String::from_utf8_lossy(&pin.stderr)
            );
            let script = RENAME_ATTACKS.replace("$MARK", mark.to_str().unwrap());
            let out = if naive {
                let mut p = plan(&PlanOptions {
                    repo: s.repo.clone(),
                    session: Some("s1".into()),
                    session_dir: Some(wt_dir.clone()),
                    ..PlanOptions::default()
                })
                .unwrap();
                assert!(!p.anchors.is_empty(), "the plan has anchors to take away");
                p.anchors.clear();
                let base = Base {
                    chdir: Some(s.repo.clone()),
                    ..Base::default()
                };
                let prep = prepare(&p, &base).unwrap();
                prep.command(Path::new("/bin/bash"), &["-c".into(), script.into()])
                    .env("PATH", "/usr/bin:/bin")
                    .output()
                    .unwrap()
            } else {
                s.agent(&script, true)
            };
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let ctx = format!(
                "{} naive={naive}\n{text}\n{}",
                g.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let steps = [
                "r_include",
                "r_own_entry",
                "r_other_entry",
                "r_objects_info",
                "r_objects",
                "r_other_session",
            ];
            let git_dir = s.repo.join(".git");
            let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
            // The owner's plain git after the turn, in the main work tree.
            s.plain(&["status", "--short"]);
            let planted = [
                mark.exists(),
                read(git_dir.join("worktrees/mine/commondir")).trim() == "/tmp",
                read(git_dir.join("worktrees/theirs/commondir")).trim() == "/tmp",
                git_dir.join("objects/info/alternates").exists(),
                true,
                s.repo.join(".worktrees/s2/theirs/planted").exists(),
            ];
            for (step, planted) in steps.iter().zip(planted) {
                if naive {
                    assert_eq!(status_of(&text, step), 0, "control {step}: {ctx}");
                    assert!(planted, "control {step}: nothing reached the host: {ctx}");
                } else {
                    assert_ne!(status_of(&text, step), 0, "{step} succeeded: {ctx}");
                    assert!(
                        !planted || *step == "r_objects",
                        "{step} reached the host: {ctx}"
                    );
                }
            }
            if naive {
                continue;
            }
            assert!(!mark.exists(), "{ctx}");
            let o = s.agent(
                "mkdir -p newdir/sub; echo '[core] fsmonitor = x' > newdir/sub/x.cfg; echo deep=$?
                 mv newdir newdir.old; echo deep_mv=$?",
                true,
            );
            let t = String::from_utf8_lossy(&o.stdout);
            assert_ne!(status_of(&t, "deep"), 0, "{t}");
            assert_ne!(status_of(&t, "deep_mv"), 0, "{t}");
            assert!(!deep.exists() && !s.repo.join("newdir").exists(), "{t}");
            // The agent's normal work still goes on, in the work tree and in its worktree
            // (git-shim refuses a new worktree inside the checkout; adding and removing one
            // under anchored `.git/worktrees` is `scripted_agent_in_bubblewrap`'s).
            let o = s.agent(
                "set -e; echo b > b.txt; git add b.txt; git commit -q -m agent-commit
                 cd .worktrees/s1/mine; echo f > f.txt; git add f.txt; git commit -q -m wt-commit
                 echo done",
                true,
            );
            let t = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success() && t.contains("done"),
                "{ctx}\n{t}\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let check = wt_check(&s, &["check", "--session", "s1", "--state", st, &repo]);
            assert_eq!(
                check.status.code(),
                Some(0),
                "wt-check check after the turn: {}\n{}",
                String::from_utf8_lossy(&check.stdout),
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
}

/// A plan for the test's session (the session folder created, as agent-shell does).
fn session_plan(s: &Session, extra: Vec<PathBuf>) -> gitward::plan::Plan {
    std::fs::create_dir_all(&s.wt).unwrap();
    gitward::plan::plan(&gitward::plan::PlanOptions {
        repo: s.repo.clone(),
        session: Some("s1".into()),
        session_dir: Some(s.wt.clone()),
        extra_writable: extra,
        ..gitward::plan::PlanOptions::default()
    })
    .unwrap()
}

/// Run `script` with bash inside bubblewrap built from `plan` (a test's own, e.g. one with a
/// protection taken away as a positive control), in the repository.
fn run_in(plan: &gitward::plan::Plan, s: &Session, script: &str) -> (Output, bool) {
    let base = gitward::sandbox::Base {
        chdir: Some(s.repo.clone()),
        ..gitward::sandbox::Base::default()
    };
    let prep = gitward::sandbox::prepare(plan, &base).unwrap();
    let o = prep
        .command(Path::new("/bin/bash"), &["-c".into(), script.into()])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &s.home)
        .output()
        .unwrap();
    let started = prep.started();
    prep.remove_stubs();
    (o, started)
}

/// The owner's hooks folder (`core.hooksPath`, repository config) and a program its global
/// config names by path (`core.fsmonitor`) inside the work tree are read-only in the sandbox
/// (red-team pass on the plan, P-6, P-9). Positive control: the same writes without the
/// sandbox, after which the owner's plain `git commit` runs both.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn programs_the_owners_config_names_are_read_only() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        for sandbox in [false, true] {
            let s = Session::new(&g);
            let hook_mark = s.home.join("HOOK-FIRED");
            let fsm_mark = s.home.join("FSMONITOR-FIRED");
            std::fs::create_dir_all(s.repo.join(".husky")).unwrap();
            std::fs::create_dir_all(s.repo.join("tools")).unwrap();
            std::fs::write(s.repo.join(".husky/README"), "hooks\n").unwrap();
            std::fs::write(s.repo.join("tools/fsmon.sh"), "#!/bin/sh\nexit 1\n").unwrap();
            let mut perm = std::fs::metadata(s.repo.join("tools/fsmon.sh"))
                .unwrap()
                .permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(s.repo.join("tools/fsmon.sh"), perm).unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "tools"]);
            s.plain(&["config", "core.hooksPath", ".husky"]);
            let mut global = std::fs::read_to_string(s.home.join(".gitconfig")).unwrap();
            global.push_str("[core]\n\tfsmonitor = tools/fsmon.sh\n");
            std::fs::write(s.home.join(".gitconfig"), global).unwrap();
            let script = format!(
                "printf '#!/bin/sh\\ntouch {h}\\n' > .husky/pre-commit && chmod +x .husky/pre-commit; echo hook=$?
                 printf '#!/bin/sh\\ntouch {f}; exit 1\\n' > tools/fsmon.sh; echo fsmon=$?",
                h = hook_mark.display(),
                f = fsm_mark.display()
            );
            let o = s.agent(&script, sandbox);
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let ctx = format!(
                "{} sandbox={sandbox}\n{out}\n{}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            // The owner's next commit, outside the sandbox.
            std::fs::write(s.repo.join("c.txt"), "c\n").unwrap();
            s.plain(&["add", "c.txt"]);
            s.plain(&["commit", "-q", "-m", "owner"]);
            if !sandbox {
                assert_eq!(status_of(&out, "hook"), 0, "control: {ctx}");
                assert_eq!(status_of(&out, "fsmon"), 0, "control: {ctx}");
                assert!(
                    hook_mark.exists() && fsm_mark.exists(),
                    "control did not fire: {ctx}"
                );
                continue;
            }
            assert_ne!(status_of(&out, "hook"), 0, "{ctx}");
            assert_ne!(status_of(&out, "fsmon"), 0, "{ctx}");
            assert!(!hook_mark.exists() && !fsm_mark.exists(), "{ctx}");
            assert!(!s.repo.join(".husky/pre-commit").exists(), "{ctx}");
        }
    }
}

/// The owner's session daemons are out of reach: the runtime dir (user bus, systemd user
/// manager) and the tmux server's folder are hidden as a whole (red-team pass on the plan,
/// P-7). Positive control: the same plan without its hidden folders shows the sockets, and
/// (when tmux is installed) `tmux run-shell` from it runs a command on the host.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn the_owners_session_sockets_are_hidden() {
    bwrap_works().expect("bubblewrap must work for this test");
    let g = gits().remove(0);
    let s = Session::new(&g);
    let rt = s.home.join("run");
    std::fs::create_dir_all(rt.join("systemd")).unwrap();
    let _bus = std::os::unix::net::UnixListener::bind(rt.join("bus")).unwrap();
    let _mgr = std::os::unix::net::UnixListener::bind(rt.join("systemd/private")).unwrap();
    let uid = nix::unistd::getuid().as_raw();
    let name = format!("gw-e2e-{}", std::process::id());
    let tmux = Path::new("/usr/bin/tmux").exists();
    if tmux {
        let st = Command::new("/usr/bin/tmux")
            .args(["-L", &name, "new-session", "-d", "-s", "owner", "sleep 60"])
            .env_remove("TMUX_TMPDIR")
            .status()
            .unwrap();
        assert!(st.success());
    } else {
        // A part that cannot run must not pass in CI (.ci/run installs tmux).
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "/usr/bin/tmux is missing (CI=true: the tmux part must run)"
        );
        eprintln!("tmux part SKIPPED: /usr/bin/tmux is not installed (the runtime-dir sockets are still tested)");
    }
    let mark = s.home.join("TMUX-FIRED");
    let script = format!(
        "[ -S {rt}/bus ]; echo bus=$?; [ -S {rt}/systemd/private ]; echo mgr=$?
         tmux -S /tmp/tmux-{uid}/{name} run-shell 'touch {m}' 2>/dev/null; echo tmux=$?",
        rt = rt.display(),
        m = mark.display()
    );
    // Positive control: without the hidden folders and trees (the runtime dir is a hidden
    // tree of its own, fifth red-team pass).
    // The runtime dir given in the options, not by `set_var`: the other tests' threads read
    // the process environment (and the plan reads `$XDG_RUNTIME_DIR` from it).
    std::fs::create_dir_all(&s.wt).unwrap();
    let mut p = gitward::plan::plan(&gitward::plan::PlanOptions {
        repo: s.repo.clone(),
        session: Some("s1".into()),
        session_dir: Some(s.wt.clone()),
        runtime_dir: Some(rt.clone()),
        ..gitward::plan::PlanOptions::default()
    })
    .unwrap();
    assert!(
        p.hide_trees
            .iter()
            .map(|t| &t.path)
            .chain(p.hide_folders.iter().map(|h| &h.path))
            .any(|h| rt.starts_with(h)),
        "{:?} {:?}",
        p.hide_trees,
        p.hide_folders
    );
    p.hide_folders.clear();
    p.hide_trees.clear();
    p.keep.clear();
    // And without the Unix-socket filter, which alone would keep tmux out (sixth pass, R6-1).
    p.unix_sockets.rule = gitward::plan::UnixRule::Allow;
    let (o, _) = run_in(&p, &s, &script);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(status_of(&out, "bus"), 0, "control: {out}");
    assert_eq!(status_of(&out, "mgr"), 0, "control: {out}");
    if tmux {
        // `run-shell` runs in the server, after the client returned: waited for, bounded.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !mark.exists() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(mark.exists(), "control: tmux run-shell did not fire: {out}");
        std::fs::remove_file(&mark).unwrap();
    }
    // agent-shell: hidden.
    let o = s.agent_env(&script, true, &[("XDG_RUNTIME_DIR", &rt)]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let ctx = format!("{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert_ne!(status_of(&out, "bus"), 0, "{ctx}");
    assert_ne!(status_of(&out, "mgr"), 0, "{ctx}");
    assert_ne!(status_of(&out, "tmux"), 0, "{ctx}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!mark.exists(), "{ctx}");
    if tmux {
        let _ = Command::new("/usr/bin/tmux")
            .args(["-L", &name, "kill-server"])
            .status();
    }
}

/// A `.git` cannot be made at the top of the session's folder or a policy writable root,
/// where the owner's git started below would discover it (red-team pass on the plan, P-12).
/// Positive control: the plan without those placeholders lets `git init` plant it.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn no_repository_can_be_planted_at_the_top_of_a_writable_root() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        for naive in [true, false] {
            let s = Session::new(&g);
            let scratch = s.home.join("scratch");
            std::fs::create_dir_all(&scratch).unwrap();
            let mut pol = std::fs::read_to_string(&s.policy).unwrap();
            pol.push_str(&format!("writable_roots = [\"{}\"]\n", scratch.display()));
            std::fs::write(&s.policy, pol).unwrap();
            let script = format!(
                "{g} init -q {sc}; echo scratch=$?; {g} init -q {wt}; echo session=$?",
                g = g.display(),
                sc = scratch.display(),
                wt = s.wt.display()
            );
            let out = if naive {
                let mut p = session_plan(&s, vec![scratch.clone()]);
                let n = p.placeholders.len();
                p.placeholders
                    .retain(|b| b.path != scratch.join(".git") && b.path != s.wt.join(".git"));
                assert_eq!(p.placeholders.len(), n - 2, "{:?}", p.placeholders);
                run_in(&p, &s, &script).0
            } else {
                s.agent(&script, true)
            };
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let ctx = format!(
                "{} naive={naive}\n{text}\n{}",
                g.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            for (step, dir) in [("scratch", &scratch), ("session", &s.wt)] {
                let planted = dir.join(".git/HEAD").exists();
                if naive {
                    assert_eq!(status_of(&text, step), 0, "control: {ctx}");
                    assert!(planted, "control: {ctx}");
                } else {
                    assert_ne!(status_of(&text, step), 0, "{ctx}");
                    assert!(!planted, "{ctx}");
                    assert!(!dir.join(".git").exists(), "placeholder left behind: {ctx}");
                }
            }
        }
    }
}

/// bubblewrap failing to build the sandbox (a mount it cannot make: B-1's `/var/run` link)
/// is told apart from the command's own failure, so agent-shell exits with the setup status
/// (124), not the command's.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_sandbox_bubblewrap_cannot_build_is_told_from_the_commands_status() {
    bwrap_works().expect("bubblewrap must work for this test");
    let g = gits().remove(0);
    let s = Session::new(&g);
    let mut p = session_plan(&s, vec![]);
    let (o, started) = run_in(&p, &s, "exit 1");
    assert_eq!(o.status.code(), Some(1));
    assert!(started, "the command ran and failed");
    p.hide.push(gitward::plan::Hidden {
        path: PathBuf::from("/nonexistent-gitward-dir/x.sock"),
        what: "test",
    });
    let (o, started) = run_in(&p, &s, "exit 0");
    assert_ne!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!started, "bubblewrap could not build this sandbox");
}

/// The audit log is append-only from inside the sandbox: a FIFO relayed by agent-shell stands
/// over it, so `: > LOG` erases nothing and nothing inside can read (and so swallow) the
/// events. Positive control: the log bound writable (the sandbox before) is truncated.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn the_audit_log_cannot_be_truncated_from_inside() {
    bwrap_works().expect("bubblewrap must work for this test");
    let g = gits().remove(0);
    let s = Session::new(&g);
    std::fs::write(&s.log, "{\"event\":\"earlier\"}\n").unwrap();
    let script = format!(
        ": > {l}; echo trunc=$?; timeout 3 cat {l} >/dev/null 2>&1; echo read=$?; git status >/dev/null",
        l = s.log.display()
    );
    // Control: bound writable, the log is emptied.
    let p = session_plan(&s, vec![]);
    let base = gitward::sandbox::Base {
        chdir: Some(s.repo.clone()),
        writable_files: vec![s.log.clone()],
        ..gitward::sandbox::Base::default()
    };
    let prep = gitward::sandbox::prepare(&p, &base).unwrap();
    let o = prep
        .command(
            Path::new("/bin/bash"),
            &["-c".into(), script.clone().into()],
        )
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(status_of(&String::from_utf8_lossy(&o.stdout), "trunc"), 0);
    assert_eq!(std::fs::read_to_string(&s.log).unwrap(), "", "control");
    // agent-shell: the earlier event stays, the shim's events of the command arrive.
    std::fs::write(&s.log, "{\"event\":\"earlier\"}\n").unwrap();
    let o = s.agent(&script, true);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_ne!(status_of(&out, "read"), 0, "{out}");
    let ev = s.events();
    assert_eq!(ev[0]["event"], "earlier", "{ev:?}");
    assert!(ev.iter().any(|e| e["event"] == "git_allowed"), "{ev:?}");
    assert!(
        ev.iter().any(|e| e["event"] == "command_finished"),
        "{ev:?}"
    );
}

/// No host socket below `/tmp` or `/run` is reachable, listed or not, existing when the plan
/// is made or made during the command: both are covered by a fresh tmpfs and only the plan's
/// own roots are bound back (fifth red-team pass, R5-1, R5-6, R5-13: an owner's tmux on a
/// custom socket under `/tmp` ran a command on the host). `/tmp` stays writable scratch
/// space (`mktemp`). Positive control: the same plan without its hidden trees shows both
/// sockets.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn sockets_below_tmp_and_run_are_hidden_even_when_made_during_the_command() {
    use std::os::unix::net::UnixListener;
    bwrap_works().expect("bubblewrap must work for this test");
    let g = gits().remove(0);
    let s = Session::new(&g);
    let pid = std::process::id();
    let early_dir = PathBuf::from(format!("/tmp/gw-e2e-early-{pid}"));
    let late_dir = PathBuf::from(format!("/tmp/gw-e2e-late-{pid}"));
    let _ = std::fs::remove_dir_all(&late_dir);
    std::fs::create_dir_all(&early_dir).unwrap();
    let early = early_dir.join("sock");
    let _early = UnixListener::bind(&early).unwrap();
    // A root-level socket under /run, outside every list (only when this user may make one).
    let run_sock = PathBuf::from(format!("/run/gw-e2e-{pid}.sock"));
    let _run = match UnixListener::bind(&run_sock) {
        Ok(l) => Some(l),
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "cannot make a socket in /run ({e}; CI=true: the /run part must run)"
            );
            eprintln!("/run part SKIPPED: cannot make a socket in /run here ({e})");
            None
        }
    };
    let go = s.repo.join("GO");
    let ack = s.repo.join("ACK");
    let script = format!(
        "[ -S {early} ]; echo early=$?
         [ -S {run} ]; echo run=$?
         f=$(mktemp) && echo x > \"$f\"; echo mktemp=$?
         touch {go}; for i in $(seq 100); do [ -e {ack} ] && break; sleep 0.1; done
         [ -S {late}/sock ]; echo late=$?",
        early = early.display(),
        run = run_sock.display(),
        go = go.display(),
        ack = ack.display(),
        late = late_dir.display(),
    );
    // The host makes the late socket once the command has started (after the plan).
    let host = |go: PathBuf, ack: PathBuf, late_dir: PathBuf| {
        std::thread::spawn(move || {
            for _ in 0..200 {
                if go.exists() {
                    std::fs::create_dir_all(&late_dir).unwrap();
                    let l = UnixListener::bind(late_dir.join("sock")).unwrap();
                    std::fs::write(&ack, "").unwrap();
                    return Some(l);
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            None
        })
    };
    for naive in [true, false] {
        let _ = std::fs::remove_dir_all(&late_dir);
        let _ = std::fs::remove_file(&go);
        let _ = std::fs::remove_file(&ack);
        let t = host(go.clone(), ack.clone(), late_dir.clone());
        let o = if naive {
            let mut p = session_plan(&s, vec![]);
            assert!(
                p.hide_trees.iter().any(|t| t.path == Path::new("/tmp")),
                "{:?}",
                p.hide_trees
            );
            p.hide_trees.clear();
            p.keep.clear();
            run_in(&p, &s, &script).0
        } else {
            s.agent(&script, true)
        };
        let sock = t.join().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let ctx = format!(
            "naive={naive}\n{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(sock.is_some(), "the host never made the late socket: {ctx}");
        let want_seen = |step: &str| {
            if naive {
                assert_eq!(status_of(&out, step), 0, "control: {step} hidden: {ctx}");
            } else {
                assert_ne!(status_of(&out, step), 0, "{step} reachable: {ctx}");
            }
        };
        want_seen("early");
        want_seen("late");
        if _run.is_some() {
            want_seen("run");
        }
        if !naive {
            assert_eq!(status_of(&out, "mktemp"), 0, "mktemp fails: {ctx}");
        }
    }
    let _ = std::fs::remove_file(&run_sock);
    let _ = std::fs::remove_dir_all(&early_dir);
    let _ = std::fs::remove_dir_all(&late_dir);
}

/// A worktree the session added in an earlier command can be removed in a later one: the
/// plan puts no placeholder on the own entry's missing `modules/`, which made git believe the
/// worktree had submodules (`validate_no_submodules`: "working trees containing submodules
/// cannot be moved or removed"; fifth red-team pass, R5-12). Positive control: the plan with
/// that placeholder added back refuses the removal, on every git.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_worktree_added_in_an_earlier_command_can_be_removed() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        let s = Session::new(&g);
        let add = s.agent(
            "git worktree add -q ../proj-worktrees/s1/w -b w; echo add=$?",
            true,
        );
        let out = String::from_utf8_lossy(&add.stdout).into_owned();
        let ctx = format!(
            "{}\n{out}\n{}",
            g.display(),
            String::from_utf8_lossy(&add.stderr)
        );
        assert_eq!(status_of(&out, "add"), 0, "{ctx}");
        let entry = s.repo.join(".git/worktrees/w");
        assert!(entry.is_dir(), "{ctx}");
        let script = format!(
            "{} worktree remove ../proj-worktrees/s1/w; echo rm=$?",
            g.display()
        );
        // Positive control: the placeholder of before.
        let mut p = session_plan(&s, vec![]);
        assert!(
            !p.placeholders
                .iter()
                .any(|b| b.path == entry.join("modules")),
            "{:?}",
            p.placeholders
        );
        p.placeholders.push(gitward::plan::Bind {
            path: entry.join("modules"),
            kind: gitward::plan::EntryKind::Dir,
            protects: "control",
        });
        let (o, _) = run_in(&p, &s, &script);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_ne!(status_of(&out, "rm"), 0, "control: {out}\n{err}");
        assert!(err.contains("submodules"), "control: {err}");
        assert!(
            !entry.join("modules").exists(),
            "the control's mount point was left behind"
        );
        // agent-shell: the worktree is removed. Its admin dir stays (its `commondir` is a
        // read-only mount point, which cannot be removed: git says "failed to delete" and
        // exits non-zero); the owner's `git worktree prune` drops it after the turn.
        let o = s.agent(&script, true);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let ctx = format!("{}\n{out}\n{err}", g.display());
        assert!(!err.contains("submodules"), "{ctx}");
        assert!(!s.worktrees.join("s1/w").exists(), "{ctx}");
        s.plain(&["worktree", "prune"]);
        assert!(!entry.exists(), "{ctx}");
    }
}

/// The owner's relative `core.hooksPath` and `core.fsmonitor` are read-only in the session's
/// worktree too, not only in the main work tree: git resolves them from the top of the work
/// tree it runs in (fifth red-team pass, R5-3). Positive control: without the sandbox the
/// owner's commit in the session's worktree runs both.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn relative_programs_are_read_only_in_the_sessions_worktree() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        for sandbox in [false, true] {
            let s = Session::new(&g);
            let hook_mark = s.home.join("HOOK-FIRED");
            let fsm_mark = s.home.join("FSMON-FIRED");
            std::fs::create_dir_all(s.repo.join(".husky")).unwrap();
            std::fs::create_dir_all(s.repo.join("tools")).unwrap();
            std::fs::write(s.repo.join(".husky/README"), "hooks\n").unwrap();
            std::fs::write(s.repo.join("tools/fsmon.sh"), "#!/bin/sh\nexit 1\n").unwrap();
            let mut perm = std::fs::metadata(s.repo.join("tools/fsmon.sh"))
                .unwrap()
                .permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(s.repo.join("tools/fsmon.sh"), perm).unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "tools"]);
            s.plain(&["worktree", "add", "-q", "../proj-worktrees/s1/mine"]);
            s.plain(&["config", "core.hooksPath", ".husky"]);
            let mut global = std::fs::read_to_string(s.home.join(".gitconfig")).unwrap();
            global.push_str("[core]\n\tfsmonitor = tools/fsmon.sh\n");
            std::fs::write(s.home.join(".gitconfig"), global).unwrap();
            let wt = s.worktrees.join("s1/mine");
            let script = format!(
                "cd {wt} || exit 9
                 printf '#!/bin/sh\\ntouch {h}\\n' > .husky/pre-commit && chmod +x .husky/pre-commit; echo hook=$?
                 printf '#!/bin/sh\\ntouch {f}; exit 1\\n' > tools/fsmon.sh; echo fsmon=$?",
                wt = wt.display(),
                h = hook_mark.display(),
                f = fsm_mark.display()
            );
            let o = s.agent(&script, sandbox);
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let ctx = format!(
                "{} sandbox={sandbox}\n{out}\n{}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            // The owner's next commit in the session's worktree (reviewing the branch).
            std::fs::write(wt.join("c.txt"), "c\n").unwrap();
            for args in [&["add", "c.txt"][..], &["commit", "-q", "-m", "owner"][..]] {
                let o = Command::new(&g)
                    .env_clear()
                    .env("HOME", &s.home)
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("PATH", "/usr/bin:/bin")
                    .current_dir(&wt)
                    .args(args)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{args:?}: {o:?} {ctx}");
            }
            if !sandbox {
                assert_eq!(status_of(&out, "hook"), 0, "control: {ctx}");
                assert_eq!(status_of(&out, "fsmon"), 0, "control: {ctx}");
                assert!(
                    hook_mark.exists() && fsm_mark.exists(),
                    "control did not fire: {ctx}"
                );
                continue;
            }
            assert_ne!(status_of(&out, "hook"), 0, "{ctx}");
            assert_ne!(status_of(&out, "fsmon"), 0, "{ctx}");
            assert!(!hook_mark.exists() && !fsm_mark.exists(), "{ctx}");
        }
    }
}

/// A program value with an interpreter in front (`!bash tools/fmt.sh`, `sh tools/clean.sh`)
/// protects the file it runs, not only a first word with a `/` (fifth red-team pass, R5-2).
/// Positive control: without the sandbox the owner's `git fmt` and `git add` run the
/// rewritten scripts.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_script_behind_an_interpreter_is_read_only() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        for sandbox in [false, true] {
            let s = Session::new(&g);
            let fmt_mark = s.home.join("FMT-FIRED");
            let clean_mark = s.home.join("CLEAN-FIRED");
            std::fs::create_dir_all(s.repo.join("tools")).unwrap();
            std::fs::write(s.repo.join("tools/fmt.sh"), "exit 0\n").unwrap();
            std::fs::write(s.repo.join("tools/clean.sh"), "cat\n").unwrap();
            std::fs::write(s.repo.join(".gitattributes"), "*.x filter=x\n").unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "tools"]);
            s.plain(&["config", "alias.fmt", "!bash tools/fmt.sh"]);
            s.plain(&["config", "filter.x.clean", "sh tools/clean.sh"]);
            let script = format!(
                "printf 'touch {f}\\n' > tools/fmt.sh; echo fmt=$?
                 printf 'touch {c}; cat\\n' > tools/clean.sh; echo clean=$?",
                f = fmt_mark.display(),
                c = clean_mark.display()
            );
            let o = s.agent(&script, sandbox);
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let ctx = format!(
                "{} sandbox={sandbox}\n{out}\n{}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            // The owner, outside the sandbox.
            s.plain(&["fmt"]);
            std::fs::write(s.repo.join("a.x"), "x\n").unwrap();
            s.plain(&["add", "a.x"]);
            if !sandbox {
                assert_eq!(status_of(&out, "fmt"), 0, "control: {ctx}");
                assert_eq!(status_of(&out, "clean"), 0, "control: {ctx}");
                assert!(
                    fmt_mark.exists() && clean_mark.exists(),
                    "control did not fire: {ctx}"
                );
                continue;
            }
            assert_ne!(status_of(&out, "fmt"), 0, "{ctx}");
            assert_ne!(status_of(&out, "clean"), 0, "{ctx}");
            assert!(!fmt_mark.exists() && !clean_mark.exists(), "{ctx}");
        }
    }
}

/// What the agent writes to the audit log cannot spoil a tool's event: an unterminated
/// `{"note":"` before git-shim's `git_refused` is logged as its own `audit_line_rejected`
/// line and the refusal stays one JSON line; a partial line left when the command ends is
/// rejected too (fifth red-team pass, R5-5). Positive control: without the sandbox's relay
/// (agent-shell without `--sandbox`, the shim appending to the log itself) the prefix is glued
/// to the refusal and a line-by-line reader loses it.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn an_agents_partial_line_cannot_spoil_the_next_event() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        let s = Session::new(&g);
        let script = format!(
            "printf '{{\"note\":\"' >> {l}; git config core.fsmonitor 'touch /tmp/x'; echo refused=$?; printf 'tail' >> {l}",
            l = s.log.display()
        );
        let parsed = |s: &Session| -> (Vec<serde_json::Value>, usize) {
            let text = std::fs::read_to_string(&s.log).unwrap();
            let mut ok = Vec::new();
            let mut bad = 0;
            for l in text.lines() {
                match serde_json::from_str::<serde_json::Value>(l) {
                    Ok(v) => ok.push(v),
                    Err(_) => bad += 1,
                }
            }
            (ok, bad)
        };
        // Control: the refusal is glued to the prefix.
        let o = s.agent(&script, false);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(status_of(&out, "refused"), 121, "{out}");
        let (ok, bad) = parsed(&s);
        assert!(bad >= 1, "control: the prefix should spoil a line ({g:?})");
        assert!(
            !ok.iter().any(|e| e["event"] == "git_refused"),
            "control: the refusal should be lost to a JSON reader ({g:?}): {ok:?}"
        );
        // The sandbox's relay: every line is one JSON object, the refusal is there.
        std::fs::write(&s.log, "").unwrap();
        let o = s.agent(&script, true);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(
            status_of(&out, "refused"),
            121,
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (ok, bad) = parsed(&s);
        assert_eq!(bad, 0, "{:?}", std::fs::read_to_string(&s.log));
        let names: Vec<_> = ok.iter().map(|e| e["event"].as_str().unwrap()).collect();
        let refused = names.iter().position(|&n| n == "git_refused");
        let rejected: Vec<_> = ok
            .iter()
            .filter(|e| e["event"] == "audit_line_rejected")
            .map(|e| (e["text"].as_str().unwrap(), e["len"].as_u64().unwrap()))
            .collect();
        assert!(refused.is_some(), "{names:?}");
        assert_eq!(rejected, [("{\"note\":\"", 9), ("tail", 4)], "{names:?}");
        assert_eq!(
            names[refused.unwrap() - 1],
            "audit_line_rejected",
            "the prefix is logged just before the event it preceded: {names:?}"
        );
    }
}

/// A worktree added and filled in one command is judged right after that command, against
/// the main work tree's approved settings, not approved as it stands (fifth red-team pass,
/// R5-8: a Claude Code `Stop` hook and a VS Code `git.path` written in the new worktree were
/// taken as its approved state by the next command). Precision: a second new worktree, whose
/// checked-out settings equal the main work tree's, raises nothing. The agent's bytes are
/// kept in the held store. (Positive control: /work/rt3/repro/08 against the binaries before
/// this change prints FIRED; here the held store holding the hook shows the write landed.)
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn settings_in_a_worktree_made_in_the_same_command_are_judged() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        let s = Session::new(&g);
        let neutral = r#"{"editor.tabSize": 2}"#;
        std::fs::create_dir_all(s.repo.join(".vscode")).unwrap();
        std::fs::write(s.repo.join(".vscode/settings.json"), neutral).unwrap();
        s.plain(&["add", ".vscode/settings.json"]);
        s.plain(&["commit", "-q", "-m", "settings"]);
        assert!(s.agent("true", true).status.success());
        let w = s.wt.join("w");
        let w2 = s.wt.join("w2");
        let script = format!(
            "git worktree add -q {w} -b w && git worktree add -q {w2} -b w2 && mkdir -p {w}/.claude && \
             printf '{{\"hooks\":{{\"Stop\":[{{\"hooks\":[{{\"type\":\"command\",\"command\":\"touch /tmp/pwned\"}}]}}]}}}}' > {w}/.claude/settings.json && \
             printf '{{\"git.path\":\"/tmp/evil-git\"}}' > {w}/.vscode/settings.json && echo PLANTED",
            w = w.display(),
            w2 = w2.display()
        );
        let o = s.agent(&script, true);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            o.status.success() && out.contains("PLANTED"),
            "{out}\n{err}"
        );
        assert!(
            !w.join(".claude/settings.json").exists(),
            "the Stop hook stays in the new worktree ({g:?}): {err}"
        );
        assert_eq!(
            std::fs::read_to_string(w.join(".vscode/settings.json")).unwrap(),
            neutral,
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(w2.join(".vscode/settings.json")).unwrap(),
            neutral
        );
        let ev = s.events();
        let held: Vec<_> = ev
            .iter()
            .filter(|e| e["event"] == "settings_write_held")
            .map(|e| e["path"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            held.len(),
            2,
            "exactly the two widening files are held ({g:?}): {ev:?}"
        );
        assert!(
            held.iter().all(|p| Path::new(p).starts_with(&w)),
            "{held:?}"
        );
        assert!(
            !ev.iter().any(|e| e["event"] == "check_incomplete"),
            "{ev:?}"
        );
        let pending = s.home.join(".local/state/gitward/s1/held/pending");
        let stored: String = std::fs::read_dir(&pending)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
            .collect();
        assert!(
            stored.contains("/tmp/pwned") && stored.contains("evil-git"),
            "{stored}"
        );
        // The next command finds nothing new to judge.
        let o = s.agent("true", true);
        assert!(o.status.success());
        assert_eq!(
            s.events()
                .iter()
                .filter(|e| e["event"] == "settings_write_held")
                .count(),
            2
        );
    }
}

/// Where `pre-commit` is (its folder), if installed.
fn pre_commit_dir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/root/.pyenv/shims", "/usr/local/bin", "/usr/bin"].map(PathBuf::from))
        .find(|d| d.is_absolute() && d.join("pre-commit").is_file())
}

/// What the owner's installed hooks run from the work tree is read-only in the sandbox (fifth
/// red-team pass, R5-7): the pre-commit framework's `.pre-commit-config.yaml` and the script
/// its `repo: local` entry names, and the script a hand-written `post-commit` hook execs. The
/// agent's own commit still works with the hooks installed. Positive control: without the
/// sandbox the same writes land and the owner's next `git commit` runs all three payloads.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn what_the_owners_hooks_run_is_read_only() {
    bwrap_works().expect("bubblewrap must work for this test");
    let Some(pc) = pre_commit_dir() else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "pre-commit is not installed (CI=true: this test must run)"
        );
        eprintln!("SKIPPED what_the_owners_hooks_run_is_read_only: pre-commit is not installed");
        return;
    };
    let path = format!("{}:/usr/bin:/bin", pc.display());
    for g in gits() {
        for sandbox in [false, true] {
            let s = Session::new(&g);
            let marks: Vec<PathBuf> = ["CFG", "FMT", "LINT"]
                .iter()
                .map(|m| s.home.join(format!("{m}-FIRED")))
                .collect();
            let exec = |rel: &str, text: &str| {
                let p = s.repo.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, text).unwrap();
                let mut perm = std::fs::metadata(&p).unwrap().permissions();
                std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
                std::fs::set_permissions(&p, perm).unwrap();
            };
            exec("scripts/lint.sh", "#!/bin/sh\nexit 0\n");
            exec("tools/fmt.sh", "#!/bin/sh\nexit 0\n");
            std::fs::write(
                s.repo.join(".pre-commit-config.yaml"),
                "repos:\n- repo: local\n  hooks:\n  - id: fmt\n    name: fmt\n    entry: tools/fmt.sh\n    language: system\n    pass_filenames: false\n  - id: ok\n    name: ok\n    entry: \"true\"\n    language: system\n    pass_filenames: false\n",
            )
            .unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "hooks"]);
            let o = Command::new(pc.join("pre-commit"))
                .env_clear()
                .env("HOME", &s.home)
                .env("PATH", &path)
                .current_dir(&s.repo)
                .arg("install")
                .output()
                .unwrap();
            assert!(o.status.success(), "pre-commit install: {o:?}");
            exec(
                ".git/hooks/post-commit",
                "#!/bin/sh\nexec ./scripts/lint.sh\n",
            );
            let script = format!(
                "sed -i 's|entry: \"true\"|entry: sh -c \"touch {cfg}\"|' .pre-commit-config.yaml; echo cfg=$?
                 printf '#!/bin/sh\\ntouch {fmt}\\n' > tools/fmt.sh; echo fmt=$?
                 printf '#!/bin/sh\\ntouch {lint}\\n' > scripts/lint.sh; echo lint=$?
                 echo b > b.txt; git add b.txt .pre-commit-config.yaml tools/fmt.sh scripts/lint.sh && git commit -q -m agent; echo commit=$?",
                cfg = marks[0].display(),
                fmt = marks[1].display(),
                lint = marks[2].display()
            );
            let o = s.agent(&script, sandbox);
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let ctx = format!(
                "{} sandbox={sandbox}\n{out}\n{}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            for m in &marks {
                let _ = std::fs::remove_file(m);
            }
            // The owner's next commit, with pre-commit on PATH.
            std::fs::write(s.repo.join("c.txt"), "c\n").unwrap();
            for args in [&["add", "c.txt"][..], &["commit", "-q", "-m", "owner"][..]] {
                let o = Command::new(&g)
                    .env_clear()
                    .env("HOME", &s.home)
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("PATH", &path)
                    .current_dir(&s.repo)
                    .args(args)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{args:?}: {o:?} {ctx}");
            }
            let fired: Vec<bool> = marks.iter().map(|m| m.exists()).collect();
            if !sandbox {
                for step in ["cfg", "fmt", "lint"] {
                    assert_eq!(status_of(&out, step), 0, "control: {ctx}");
                }
                assert_eq!(fired, [true, true, true], "control: {ctx}");
                continue;
            }
            for step in ["cfg", "fmt", "lint"] {
                assert_ne!(status_of(&out, step), 0, "{step}: {ctx}");
            }
            assert_eq!(fired, [false, false, false], "{ctx}");
            assert_eq!(status_of(&out, "commit"), 0, "the agent's commit: {ctx}");
        }
    }
}

/// Sixth red-team pass, R6-6: the owner's committed `.claude/settings.json` runs a work-tree
/// hook script (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/fmt.sh`, the documented pattern; Claude
/// Code runs it on the host). The agent rewrites that script, and creates the one a second
/// hook names that did not exist: both are held and reverted after the command, the owner's
/// approval brings the agent's bytes back, and the next command leaves them.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_script_a_guarded_hook_runs_is_held_then_released() {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        let s = Session::new(&g);
        let owner = "#!/bin/sh\nexit 0\n";
        std::fs::create_dir_all(s.repo.join(".claude/hooks")).unwrap();
        std::fs::write(s.repo.join(".claude/hooks/fmt.sh"), owner).unwrap();
        std::fs::write(
            s.repo.join(".claude/settings.json"),
            r#"{"hooks":{"PostToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fmt.sh"},{"type":"command","command":"sh tools/lint.sh"}]}]}}"#,
        )
        .unwrap();
        s.plain(&["add", ".claude"]);
        s.plain(&["commit", "-q", "-m", "hooks"]);
        assert!(s.agent("true", true).status.success());
        let o = s.agent(
            "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .claude/hooks/fmt.sh && mkdir -p tools && \
             echo 'touch /tmp/pwned' > tools/lint.sh && echo PLANTED",
            true,
        );
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("PLANTED"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(s.repo.join(".claude/hooks/fmt.sh")).unwrap(),
            owner,
            "the hook script the agent rewrote stays ({g:?}): {err}"
        );
        assert!(!s.repo.join("tools/lint.sh").exists(), "{err}");
        let ev = s.events();
        let held: Vec<_> = ev
            .iter()
            .filter(|e| e["event"] == "settings_write_held")
            .collect();
        assert_eq!(held.len(), 2, "{ev:?}");
        assert!(held.iter().all(|e| e["rule"] == "second-hop"), "{held:?}");
        // The owner approves: nothing the agent wrote is lost.
        let store =
            gitward::held::Store::open(&s.home.join(".local/state/gitward/s1/held")).unwrap();
        for w in store.pending().unwrap() {
            store.approve(&w.id).unwrap();
        }
        assert!(std::fs::read_to_string(s.repo.join(".claude/hooks/fmt.sh"))
            .unwrap()
            .contains("/tmp/pwned"));
        assert!(s.repo.join("tools/lint.sh").exists());
        assert!(s.agent("true", true).status.success());
        assert_eq!(
            s.events()
                .iter()
                .filter(|e| e["event"] == "settings_write_held")
                .count(),
            2,
            "approved writes stand"
        );
    }
}

/// No pathname Unix socket the owner has anywhere is reachable: the sandbox cannot make a Unix
/// socket (`socket(AF_UNIX)` fails under the seccomp filter, `gitward::plan::seccomp`), so a
/// plain listener, an owner's tmux on `~/…/sock` and git's credential-cache daemon at
/// `~/.cache/git/credential/socket` (the owner's token) are out of reach, while the agent's
/// work goes on: commits, `git worktree add`/`remove`, `socket.socketpair()` (sixth red-team
/// pass, R6-1, R6-5). Positive control: the same commands through agent-shell with the
/// policy's `unix_sockets = "allow"` reach all three. An `AF_VSOCK` socket (the host's vsock
/// services) cannot be made under either rule (positive control: it can outside).
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn no_unix_socket_of_the_owner_is_reachable_wherever_it_lies() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    bwrap_works().expect("bubblewrap must work for this test");
    let python = Path::new("/usr/bin/python3");
    assert!(
        python.exists(),
        "/usr/bin/python3 is needed to connect and use socketpair"
    );
    for g in gits() {
        let s = Session::new(&g);
        // A plain listener in $HOME, answering "hello".
        let plain = s.home.join(".owner-daemon/sock");
        std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
        let l = std::os::unix::net::UnixListener::bind(&plain).unwrap();
        l.set_nonblocking(true).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let th = {
            let (accepted, stop) = (accepted.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match l.accept() {
                        Ok((mut c, _)) => {
                            accepted.fetch_add(1, Ordering::SeqCst);
                            let _ = std::io::Write::write_all(&mut c, b"hello");
                        }
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                    }
                }
            })
        };
        // git's credential-cache daemon, started by the owner's git, holding a token.
        let host_git = |args: &[&str], input: &str| {
            let mut c = Command::new(&s.git)
                .current_dir(&s.home)
                .env_clear()
                .env("HOME", &s.home)
                .env("PATH", "/usr/bin:/bin")
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::io::Write::write_all(c.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
            drop(c.stdin.take());
            assert!(c.wait().unwrap().success(), "git {args:?}");
        };
        host_git(
            &["credential-cache", "--timeout", "120", "store"],
            "protocol=https\nhost=example.com\nusername=owner\npassword=ghp_OWNER_TOKEN\n\n",
        );
        assert!(s.home.join(".cache/git/credential/socket").exists());
        // An owner's tmux on a socket in $HOME.
        let tmux_sock = s.home.join(".tmux-owner/sock");
        std::fs::create_dir_all(tmux_sock.parent().unwrap()).unwrap();
        let st = Command::new("/usr/bin/tmux")
            .arg("-S")
            .arg(&tmux_sock)
            .args(["new-session", "-d", "-s", "owner", "sleep 120"])
            .env_remove("TMUX")
            .status();
        assert!(
            matches!(st, Ok(s) if s.success()),
            "an owner's tmux server is needed (.ci/run installs tmux)"
        );
        let mark = s.home.join("TMUX-FIRED");
        let script = format!(
            r#"/usr/bin/python3 -c 'import socket,sys; c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); sys.exit(0 if c.recv(5)==b"hello" else 3)' {plain} 2>/dev/null; echo plain=$?
printf 'protocol=https\nhost=example.com\n\n' | {git} credential-cache get 2>/dev/null | grep -q ghp_OWNER_TOKEN; echo cred=$?
/usr/bin/tmux -S {tmux} run-shell 'touch {mark}' 2>/dev/null; echo tmux=$?
/usr/bin/python3 -c 'import socket; a,b=socket.socketpair(); a.send(b"x"); assert b.recv(1)==b"x"'; echo socketpair=$?
/usr/bin/python3 -c 'import socket; socket.socket(40, socket.SOCK_STREAM)' 2>/dev/null; echo vsock=$?
date +%s%N > b.txt; git add b.txt && git commit -q -m agent; echo commit=$?
w=w$(date +%s%N); git worktree add -q -b $w ../proj-worktrees/s1/$w; echo wt_add=$?
git worktree remove ../proj-worktrees/s1/$w; echo wt_remove=$?
"#,
            plain = plain.display(),
            git = s.git.display(),
            tmux = tmux_sock.display(),
            mark = mark.display(),
        );
        // Positive control for the vsock step: this kernel makes an AF_VSOCK socket (the
        // hypervisor's and the host's vsock services; eighth red-team pass).
        let vsock_here = Command::new(python)
            .args(["-c", "import socket; socket.socket(40, socket.SOCK_STREAM)"])
            .status()
            .is_ok_and(|st| st.success());
        if !vsock_here {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "this kernel makes no AF_VSOCK socket outside the sandbox (CI=true: the vsock part must run)"
            );
            eprintln!(
                "vsock part SKIPPED: this kernel makes no AF_VSOCK socket outside the sandbox"
            );
        }
        let policy = std::fs::read_to_string(&s.policy).unwrap();
        for allow in [true, false] {
            let text = if allow {
                format!("unix_sockets = \"allow\"\n{policy}")
            } else {
                policy.clone()
            };
            std::fs::write(&s.policy, text).unwrap();
            let before = accepted.load(Ordering::SeqCst);
            let o = s.agent(&script, true);
            std::thread::sleep(std::time::Duration::from_millis(300));
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let ctx = format!(
                "{} allow={allow}\n{out}\n{}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            for step in ["socketpair", "commit", "wt_add", "wt_remove"] {
                assert_eq!(status_of(&out, step), 0, "{step}: {ctx}");
            }
            // vsock is denied whatever the Unix rule.
            if vsock_here {
                assert_ne!(status_of(&out, "vsock"), 0, "vsock socket made: {ctx}");
            }
            if allow {
                for step in ["plain", "cred", "tmux"] {
                    assert_eq!(
                        status_of(&out, step),
                        0,
                        "control: {step} unreachable: {ctx}"
                    );
                }
                assert!(accepted.load(Ordering::SeqCst) > before, "control: {ctx}");
                assert!(mark.exists(), "control: tmux run-shell did not fire: {ctx}");
                std::fs::remove_file(&mark).unwrap();
            } else {
                for step in ["plain", "cred", "tmux"] {
                    assert_ne!(status_of(&out, step), 0, "{step} reachable: {ctx}");
                }
                assert_eq!(accepted.load(Ordering::SeqCst), before, "{ctx}");
                assert!(!mark.exists(), "tmux run-shell fired on the host: {ctx}");
            }
        }
        stop.store(true, Ordering::SeqCst);
        th.join().unwrap();
        let _ = Command::new("/usr/bin/tmux")
            .arg("-S")
            .arg(&tmux_sock)
            .arg("kill-server")
            .status();
        host_git(&["credential-cache", "exit"], "");
    }
}

/// The seventh red-team pass (R7-1) end to end: the owner's `core.fsmonitor` runs a work-tree
/// script in a shape the sixth pass's lexer missed (arithmetic expansion, brace expansion) or
/// a Python script whose folder holds the modules it imports (`import json` finds a
/// `tools/json.py` first). The plan makes the script's whole folder read-only. Positive
/// control: the same writes made by agent-shell without the sandbox, after which the owner's
/// plain `git status` runs the agent's code; in the sandbox each write fails and the owner's
/// `git status` runs nothing of the agent's. Both gits.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_script_the_owners_program_runs_is_protected_with_its_folder() {
    bwrap_works().expect("bubblewrap must work for this test");
    assert!(
        Path::new("/usr/bin/python3").exists() || std::env::var("CI").as_deref() != Ok("true"),
        "/usr/bin/python3 is missing (CI=true: the sibling-module case must run)"
    );
    let values: &[&str] = if Path::new("/usr/bin/python3").exists() {
        &[
            "sh tools/f$((1)).sh",
            "bash -c \"bash tools/f{1,}.sh\"",
            "python3 tools/fsm.py",
        ]
    } else {
        eprintln!("skipped: the python3 sibling-module case (/usr/bin/python3 is missing)");
        &["sh tools/f$((1)).sh", "bash -c \"bash tools/f{1,}.sh\""]
    };
    for g in gits() {
        for value in values {
            for sandbox in [false, true] {
                let s = Session::new(&g);
                let mark = s.home.join("FSMONITOR-FIRED");
                std::fs::create_dir_all(s.repo.join("tools")).unwrap();
                std::fs::write(s.repo.join("tools/f1.sh"), "#!/bin/sh\nexit 1\n").unwrap();
                std::fs::write(
                    s.repo.join("tools/fsm.py"),
                    "import sys, json\nsys.exit(1)\n",
                )
                .unwrap();
                s.plain(&["add", "."]);
                s.plain(&["commit", "-q", "-m", "tools"]);
                s.plain(&["config", "core.fsmonitor", value]);
                let script = format!(
                    "printf '#!/bin/sh\\ntouch {m}\\nexit 1\\n' > tools/f1.sh; echo script=$?
                     printf 'open(\"{m}\", \"w\")\\n' > tools/json.py; echo sibling=$?",
                    m = mark.display()
                );
                let o = s.agent(&script, sandbox);
                let out = String::from_utf8_lossy(&o.stdout).into_owned();
                let ctx = format!(
                    "{} {value} sandbox={sandbox}\n{out}\n{}",
                    g.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
                // The owner's plain git, outside any sandbox.
                s.plain(&["status", "--short"]);
                if !sandbox {
                    assert_eq!(status_of(&out, "script"), 0, "control: {ctx}");
                    assert_eq!(status_of(&out, "sibling"), 0, "control: {ctx}");
                    assert!(mark.exists(), "control did not fire: {ctx}");
                    continue;
                }
                assert_ne!(status_of(&out, "script"), 0, "{ctx}");
                assert_ne!(status_of(&out, "sibling"), 0, "{ctx}");
                assert!(
                    String::from_utf8_lossy(&o.stderr).contains("Read-only file system"),
                    "{ctx}"
                );
                assert!(
                    !mark.exists(),
                    "the owner's git ran the agent's code: {ctx}"
                );
                assert!(!s.repo.join("tools/json.py").exists(), "{ctx}");
            }
        }
    }
}
