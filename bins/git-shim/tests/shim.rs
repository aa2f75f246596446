//! git-shim end to end, on every git of the machine: installed as `git`, with a policy, in an
//! isolated home. Security claims carry a positive control: the same attack under plain git
//! fires its canary.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];

struct World {
    _t: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    wt: PathBuf,
    bin: PathBuf,
    policy: PathBuf,
    log: PathBuf,
    git: PathBuf,
}

fn gits() -> Vec<PathBuf> {
    let v: Vec<PathBuf> = GITS
        .iter()
        .map(PathBuf::from)
        .filter(|g| g.exists())
        .collect();
    assert!(!v.is_empty(), "no git found at {GITS:?}");
    for g in GITS {
        if !Path::new(g).exists() {
            assert!(
                !(std::env::var("CI").as_deref() == Ok("true")),
                "{g} is missing (CI=true: every git must be tested)"
            );
            eprintln!("SKIPPED for {g}: not installed on this machine");
        }
    }
    v
}

impl World {
    fn new(git: &Path, extra: &str) -> World {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap().join("home");
        let repo = home.join("src/proj");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(home.join("etc")).unwrap();
        std::fs::write(
            home.join("gitconfig"),
            "[user]\n\tname = Agent\n\temail = agent@example.com\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        std::fs::create_dir_all(home.join("var")).unwrap();
        let log = home.join("var/audit.log");
        let policy = home.join("etc/policy.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"{}\"\nreal_git = \"{}\"\naudit_log = \"{}\"\n{extra}\n",
                repo.display(),
                git.display(),
                log.display()
            ),
        )
        .unwrap();
        let bin = home.join("shim-bin");
        let out = Command::new(env!("CARGO_BIN_EXE_git-shim"))
            .arg("--install")
            .arg(&bin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let w = World {
            wt: home.join("src/proj-worktrees/s1"),
            _t: t,
            home,
            repo,
            bin,
            policy,
            log,
            git: git.to_path_buf(),
        };
        w.plain(&w.repo, &["init", "-q"]);
        std::fs::write(w.repo.join("a.txt"), "a\n").unwrap();
        w.plain(&w.repo, &["add", "a.txt"]);
        w.plain(&w.repo, &["commit", "-q", "-m", "first"]);
        w
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join("gitconfig"))
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()));
    }

    /// The real git, directly (positive controls, setup).
    fn plain_out(&self, dir: &Path, args: &[&str]) -> Output {
        let mut c = Command::new(&self.git);
        self.env(&mut c);
        c.current_dir(dir).args(args).output().unwrap()
    }

    fn plain(&self, dir: &Path, args: &[&str]) {
        let o = self.plain_out(dir, args);
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// `git` through the shim, as the agent runs it.
    fn shim_cmd(&self, dir: &Path) -> Command {
        let mut c = Command::new(self.bin.join("git"));
        self.env(&mut c);
        c.current_dir(dir).env("GITWARD_POLICY", &self.policy);
        c
    }

    fn shim<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S]) -> Output {
        self.shim_cmd(dir).args(args).output().unwrap()
    }

    fn ok<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S]) -> String {
        let o = self.shim(dir, args);
        assert!(
            o.status.success(),
            "{}: shim git {:?}: {}",
            self.git.display(),
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Refused with exit 121, one stderr line naming the rule.
    fn refused<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S], rule: &str) -> String {
        let o = self.shim(dir, args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(121), "{}: {err}", self.git.display());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("git-shim: refused ({rule}): ")),
            "{err}"
        );
        err
    }

    fn events(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

#[test]
fn commits_work_and_every_call_is_logged() {
    for g in gits() {
        let w = World::new(&g, "");
        std::fs::write(w.repo.join("b.txt"), "b\n").unwrap();
        w.ok(&w.repo, &["add", "b.txt"]);
        w.ok(&w.repo, &["commit", "-q", "-m", "second"]);
        let log = w.ok(&w.repo, &["log", "--format=%s"]);
        assert_eq!(log, "second\nfirst\n");
        w.refused(
            &w.repo,
            &["config", "core.hooksPath", "/tmp/h"],
            "config-key",
        );
        let ev = w.events();
        assert_eq!(ev.len(), 4, "{ev:?}");
        assert!(ev[..3]
            .iter()
            .all(|e| e["event"] == "git_allowed" && e["decision"] == "allowed"));
        assert_eq!(ev[1]["command"], "commit");
        assert_eq!(ev[3]["event"], "git_refused");
        assert_eq!(ev[3]["rule"], "config-key");
        assert_eq!(ev[3]["session"], "s1");
        assert_eq!(ev[3]["tool"], "git-shim");
    }
}

#[test]
fn exit_status_and_stdin_pass_through() {
    for g in gits() {
        let w = World::new(&g, "");
        assert_eq!(
            w.shim(&w.repo, &["rev-parse", "--verify", "-q", "nosuch"])
                .status
                .code(),
            Some(1)
        );
        assert_eq!(w.shim(&w.repo, &["frobnicate"]).status.code(), Some(1));
        assert_eq!(w.shim(&w.repo, &["log", "nosuch"]).status.code(), Some(128));
        assert_eq!(
            w.shim(&w.repo, &["commit", "--nosuchflag"]).status.code(),
            Some(129)
        );
        use std::io::Write;
        let mut child = w
            .shim_cmd(&w.repo)
            .args(["hash-object", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        // A refusal exits 121 before git starts.
        let o = w
            .shim_cmd(&w.repo)
            .args(["-c", "alias.x=!echo $PPID", "x"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(121));
    }
}

#[test]
fn the_shim_execs_git_in_place() {
    // A shell that records its pid, then execs the shim, which execs git: git's view of its
    // parent's pid for a hook-free command is not observable directly, so compare the pid that
    // `sh` exec'd with the one the kernel reports for the git process via /proc.
    for g in gits() {
        let w = World::new(&g, "");
        let script = format!(
            "echo $$; exec {} cat-file '--batch-check=%(objectname)'",
            w.bin.join("git").display()
        );
        let mut c = Command::new("/bin/sh");
        w.env(&mut c);
        let mut child = c
            .current_dir(&w.repo)
            .env("GITWARD_POLICY", &w.policy)
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Wait until the process image is git (the shim exec'd it, same pid).
        let mut exe = PathBuf::new();
        for _ in 0..1000 {
            exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            if exe == g {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"HEAD\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(exe, g, "pid {pid} never became the real git");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().next().unwrap(), pid.to_string());
        assert_eq!(text.lines().nth(1).unwrap().len(), 40);
    }
}

#[test]
fn no_policy_no_git() {
    let g = gits().remove(0);
    let w = World::new(&g, "");
    let o = w
        .shim_cmd(&w.repo)
        .env_remove("GITWARD_POLICY")
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(124));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no policy") && err.lines().count() == 1,
        "{err}"
    );
    // A policy inside a writable root is refused.
    let inside = w.repo.join("p.toml");
    std::fs::copy(&w.policy, &inside).unwrap();
    let o = w
        .shim_cmd(&w.repo)
        .env("GITWARD_POLICY", &inside)
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&o.stderr).contains("inside the writable root"));
}

#[test]
fn install_pins_the_policy_and_never_loops() {
    let g = gits().remove(0);
    let w = World::new(&g, "");
    // No real_git in the policy: the shim must find the next git on PATH that is not itself,
    // even with its own folder on PATH twice.
    let policy = w.home.join("etc/nogit.toml");
    std::fs::write(
        &policy,
        format!("session = \"s1\"\nrepo = \"{}\"\n", w.repo.display()),
    )
    .unwrap();
    let pinned = w.home.join("pinned-bin");
    let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
        .env("HOME", &w.home)
        .env("PATH", format!("{}:/usr/bin:/bin", w.bin.display()))
        .args([
            "--install",
            pinned.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["real_git"], "/usr/bin/git");
    assert!(pinned.join("git").exists());
    assert!(pinned.join("git-shim.policy").exists());
    let mut c = Command::new(pinned.join("git"));
    w.env(&mut c);
    let path = format!(
        "{p}:{b}:{p}:{b}:/usr/bin:/bin",
        p = pinned.display(),
        b = w.bin.display()
    );
    let o = c
        .current_dir(&w.repo)
        .env("PATH", path)
        .env("GITWARD_POLICY", "/nonexistent") // the pinned policy wins
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        w.repo.display().to_string()
    );
    // The version probe was cached at install time.
    let state = w.home.join(".local/state/gitward/s1/probe");
    assert!(std::fs::read_dir(state).unwrap().count() >= 1);
    // git-shim's own flags only under its own name.
    let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("git-shim "));
    let o = w.shim(&w.repo, &["--version"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("git version "));
}

#[test]
fn worktrees_in_the_session_folder_only() {
    for g in gits() {
        let w = World::new(&g, "");
        let feat = w.wt.join("feat");
        assert!(!w.wt.exists());
        w.ok(
            &w.repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feat",
                feat.to_str().unwrap(),
            ],
        );
        assert!(feat.join("a.txt").exists());
        // A commit in the new worktree.
        std::fs::write(feat.join("c.txt"), "c\n").unwrap();
        w.ok(&feat, &["add", "c.txt"]);
        w.ok(&feat, &["commit", "-q", "-m", "in worktree"]);
        // Relative paths, from the worktree itself.
        w.ok(&feat, &["worktree", "add", "-q", "--detach", "../second"]);
        let err = w.refused(
            &w.repo,
            &["worktree", "add", "/tmp/gitward-nope"],
            "worktree-location",
        );
        assert!(err.contains(&format!("{}/", w.wt.display())), "{err}");
        assert!(!Path::new("/tmp/gitward-nope").exists());
        w.refused(
            &w.repo,
            &["worktree", "add", "sub/inside"],
            "worktree-location",
        );
        assert!(!w.repo.join("sub").exists());
        w.ok(
            &w.repo,
            &[
                "worktree",
                "move",
                w.wt.join("second").to_str().unwrap(),
                w.wt.join("third").to_str().unwrap(),
            ],
        );
        w.ok(
            &w.repo,
            &["worktree", "remove", "third"], // by name, as git allows
        );
        assert!(w.wt.exists());
        w.ok(&w.repo, &["worktree", "remove", feat.to_str().unwrap()]);
        assert!(
            !w.wt.exists(),
            "the session folder goes with its last worktree"
        );
        let ev = w.events();
        let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
        assert!(kinds.contains(&"worktree_folder_created"), "{kinds:?}");
        assert!(kinds.contains(&"worktree_folder_removed"), "{kinds:?}");
        // The folder comes back on the next first use.
        w.ok(
            &w.repo,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                w.wt.join("again").to_str().unwrap(),
            ],
        );
        assert!(w.wt.join("again/a.txt").exists());
    }
}

#[test]
fn escape_routes_meet_the_same_rules() {
    for g in gits() {
        let w = World::new(&g, "");
        let other = w.home.join("elsewhere");
        std::fs::create_dir_all(&other).unwrap();
        let gd = w.repo.join(".git");
        let (gd_s, repo_s) = (gd.to_str().unwrap(), w.repo.to_str().unwrap());
        // -C from another folder: a relative path is taken from there.
        w.refused(
            &other,
            &["-C", repo_s, "worktree", "add", "x"],
            "worktree-location",
        );
        assert!(!w.repo.join("x").exists());
        // --git-dir/--work-tree from outside the checkout.
        w.refused(
            &other,
            &[
                "--git-dir",
                gd_s,
                "--work-tree",
                repo_s,
                "worktree",
                "add",
                "y",
            ],
            "worktree-location",
        );
        w.refused(
            &other,
            &[
                &format!("--git-dir={gd_s}"),
                "worktree",
                "add",
                &format!("{repo_s}/z"),
            ],
            "worktree-location",
        );
        // GIT_DIR in the environment: the worktree would land inside the checkout.
        let o = w
            .shim_cmd(&w.repo)
            .env("GIT_DIR", &gd)
            .args(["worktree", "add", "inside"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(121),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("inside the checkout"));
        // ...and allowed where the session may put it, through the same routes.
        w.ok(
            &other,
            &[
                "--git-dir",
                gd_s,
                "worktree",
                "add",
                "-q",
                "--detach",
                w.wt.join("via-gitdir").to_str().unwrap(),
            ],
        );
        let o = w
            .shim_cmd(&other)
            .env("GIT_DIR", &gd)
            .args(["worktree", "list"])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&o.stdout).contains("via-gitdir"));
        // Config keys, whatever repository the call names.
        w.refused(
            &other,
            &["-C", repo_s, "config", "core.hooksPath", "/tmp/h"],
            "config-key",
        );
        w.refused(
            &other,
            &[
                "--git-dir",
                gd_s,
                "config",
                "--add",
                "include.path",
                "/tmp/i",
            ],
            "config-key",
        );
        w.refused(
            &w.repo,
            &["config", "--file", gd_s, "core.fsmonitor", "x"],
            "config-key",
        );
        let o = w
            .shim_cmd(&other)
            .env("GIT_DIR", &gd)
            .args(["config", "--worktree", "core.worktree", "/x"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(121));
        // The repository's config is untouched.
        let cfg = std::fs::read_to_string(gd.join("config")).unwrap();
        assert!(
            !cfg.contains("hooksPath") && !cfg.contains("include") && !cfg.contains("fsmonitor"),
            "{cfg}"
        );
    }
}

#[test]
fn transient_config_is_refused_with_a_positive_control() {
    for g in gits() {
        let w = World::new(&g, "");
        let canary = w.home.join("canary");
        let fsm = format!("core.fsmonitor=touch {}; false", canary.display());
        // Positive control: plain git runs it.
        let _ = w.plain_out(&w.repo, &["-c", &fsm, "status"]);
        assert!(canary.exists(), "{}: the control did not fire", g.display());
        std::fs::remove_file(&canary).unwrap();
        w.refused(&w.repo, &["-c", &fsm, "status"], "transient-config");
        let inc = w.home.join("inc");
        std::fs::write(
            &inc,
            format!("[core]\n\tfsmonitor = touch {}; false\n", canary.display()),
        )
        .unwrap();
        w.refused(
            &w.repo,
            &["-c", &format!("include.path={}", inc.display()), "status"],
            "transient-config",
        );
        w.refused(
            &w.repo,
            &["-c", &format!("alias.x=!touch {}", canary.display()), "x"],
            "transient-config",
        );
        let o = w
            .shim_cmd(&w.repo)
            .env("EVIL", format!("touch {}; false", canary.display()))
            .args(["--config-env=core.fsmonitor=EVIL", "status"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(121));
        let o = w
            .shim_cmd(&w.repo)
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "core.fsmonitor")
            .env(
                "GIT_CONFIG_VALUE_0",
                format!("touch {}; false", canary.display()),
            )
            .args(["status"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(121));
        w.refused(&w.repo, &["--exec-path=/tmp", "status"], "exec-path");
        assert!(!canary.exists());
        // A harmless -c still works, and an allowed GIT_CONFIG_PARAMETERS travels on.
        assert_eq!(
            w.ok(&w.repo, &["-c", "user.name=Other", "config", "user.name"])
                .trim(),
            "Other"
        );
        let o = w
            .shim_cmd(&w.repo)
            .env("GIT_CONFIG_PARAMETERS", "'user.name'='Env'")
            .args(["config", "user.name"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "Env");
        // The policy may allow transient config: the agent's -c comes after the defused set
        // and applies, for that one call, inside the sandbox.
        let w = World::new(&g, "allow_transient_config = true");
        let _ = w.shim(&w.repo, &["-c", &fsm, "status"]);
        assert!(canary.exists(), "allowed transient config did not apply");
        std::fs::remove_file(&canary).unwrap();
    }
}

#[test]
fn repository_config_is_defused_with_a_positive_control() {
    for g in gits() {
        let w = World::new(&g, "");
        let canary = w.home.join("fsmonitor-canary");
        // Planted by someone (the sandbox would stop the agent; the shim does not rely on it).
        w.plain(
            &w.repo,
            &[
                "config",
                "core.fsmonitor",
                &format!("touch {}; false", canary.display()),
            ],
        );
        let _ = w.plain_out(&w.repo, &["status"]);
        assert!(canary.exists(), "control did not fire on {}", g.display());
        std::fs::remove_file(&canary).unwrap();
        w.ok(&w.repo, &["status", "--short"]);
        assert!(
            !canary.exists(),
            "fsmonitor ran through the shim on {}",
            g.display()
        );
    }
}

#[test]
fn hooks_follow_the_policy() {
    for g in gits() {
        for (extra, runs) in [("", false), ("[shim]\nhooks = true", true)] {
            let w = World::new(&g, extra);
            let canary = w.home.join("hook-canary");
            let hook = w.repo.join(".git/hooks/pre-commit");
            std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", canary.display())).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
            w.ok(&w.repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
            assert_eq!(canary.exists(), runs, "{} hooks={runs}", g.display());
        }
    }
}

#[test]
fn remotes_aliases_clone_init() {
    for g in gits() {
        let w = World::new(&g, "");
        w.ok(
            &w.repo,
            &["remote", "add", "origin", "https://example.com/r.git"],
        );
        let err = w.refused(
            &w.repo,
            &["remote", "add", "evil", "ext::sh -c touch% /tmp/x"],
            "remote-url",
        );
        assert!(err.contains("ext::"), "{err}");
        w.refused(
            &w.repo,
            &["remote", "set-url", "origin", "/tmp/local"],
            "remote-url",
        );
        w.refused(
            &w.repo,
            &["submodule", "add", "ext::sh -c x", "s"],
            "submodule-url",
        );
        w.refused(
            &w.repo,
            &["clone", "--template=/tmp/t", "https://example.com/r.git"],
            "clone-option",
        );
        w.refused(
            &w.repo,
            &[
                "clone",
                "-c",
                "core.hooksPath=/tmp/h",
                "https://example.com/r.git",
            ],
            "clone-option",
        );
        w.refused(&w.repo, &["init", "--template=/tmp/t", "x"], "init-option");
        w.refused(
            &w.repo,
            &["fetch", "--upload-pack=touch /tmp/x", "origin"],
            "transport-program",
        );
        // A local clone is allowed (file transport in the policy's default list).
        let copy = w.home.join("copy");
        w.ok(
            &w.home,
            &[
                "clone",
                "-q",
                w.repo.to_str().unwrap(),
                copy.to_str().unwrap(),
            ],
        );
        assert!(copy.join("a.txt").exists());
        // Aliases from the owner's config: a shell alias is refused (positive control first),
        // a git alias is expanded and checked.
        let canary = w.home.join("alias-canary");
        let mut cfg = std::fs::read_to_string(w.home.join("gitconfig")).unwrap();
        cfg.push_str(&format!(
            "[alias]\n\tsh = !touch {}\n\thp = config core.hooksPath\n\tst = status --short\n",
            canary.display()
        ));
        std::fs::write(w.home.join("gitconfig"), cfg).unwrap();
        w.plain(&w.repo, &["sh"]);
        assert!(canary.exists());
        std::fs::remove_file(&canary).unwrap();
        w.refused(&w.repo, &["sh"], "alias");
        assert!(!canary.exists());
        w.refused(&w.repo, &["hp", "/tmp/h"], "config-key");
        w.ok(&w.repo, &["hp"]);
        w.ok(&w.repo, &["st"]);
    }
}

#[test]
fn a_policy_naming_the_shim_as_real_git_is_refused() {
    let g = gits().remove(0);
    let w = World::new(&g, "");
    let policy = w.home.join("etc/self.toml");
    std::fs::write(
        &policy,
        format!(
            "session = \"s1\"\nrepo = \"{}\"\nreal_git = \"{}\"\n",
            w.repo.display(),
            w.bin.join("git").display()
        ),
    )
    .unwrap();
    let o = w
        .shim_cmd(&w.repo)
        .env("GITWARD_POLICY", &policy)
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(124));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("gitward itself"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Only the shim on PATH, no other git: refused, never a loop.
    let nogit = w.home.join("etc/nogit.toml");
    std::fs::write(
        &nogit,
        format!("session = \"s1\"\nrepo = \"{}\"\n", w.repo.display()),
    )
    .unwrap();
    let o = w
        .shim_cmd(&w.repo)
        .env("GITWARD_POLICY", &nogit)
        .env("PATH", format!("{b}:{b}", b = w.bin.display()))
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no real git"));
}

#[test]
fn own_flags_only_under_its_own_name() {
    let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
        .args(["--generate", "man"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH git-shim"));
    let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("EXAMPLES"));
    let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(120));
}

/// Third red-team pass (docs/redteam3.md): each route with its positive control under plain
/// git, then refused (or neutralised) through the shim, and what persists checked.
#[test]
fn redteam3_routes_to_persistent_config_and_hooks() {
    use std::os::unix::fs::PermissionsExt;
    for g in gits() {
        let w = World::new(&g, "");
        let cfg = |w: &World| std::fs::read_to_string(w.repo.join(".git/config")).unwrap();
        // A template folder with a post-checkout hook.
        let tpl = w.home.join("tpl");
        std::fs::create_dir_all(tpl.join("hooks")).unwrap();
        let planted = w.repo.join(".git/hooks/post-checkout");
        std::fs::write(tpl.join("hooks/post-checkout"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(
            tpl.join("hooks/post-checkout"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let tpl_s = tpl.to_str().unwrap();

        // R4: re-initialising the session repository copies template hooks into .git/hooks.
        let set = format!("init.templateDir={tpl_s}");
        w.plain(&w.repo, &["-c", &set, "init", "-q"]);
        assert!(planted.exists(), "{}: control did not plant", g.display());
        std::fs::remove_file(&planted).unwrap();
        w.refused(&w.repo, &["-c", &set, "init", "-q"], "transient-config");
        w.refused(
            &w.repo,
            &["config", "--global", "init.templateDir", tpl_s],
            "config-key",
        );
        // ...and through a global config file of the agent's choosing: neutralised.
        let agent_cfg = w.home.join("agent.cfg");
        std::fs::write(&agent_cfg, format!("[init]\n\ttemplateDir = {tpl_s}\n")).unwrap();
        let o = w
            .shim_cmd(&w.repo)
            .env("GIT_CONFIG_GLOBAL", &agent_cfg)
            .args(["init", "-q"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!planted.exists(), "{}: template hook planted", g.display());
        // R2: an abbreviation shorter than the shim used to read.
        w.refused(
            &w.repo,
            &["init", "-q", &format!("--t={tpl_s}")],
            "init-option",
        );
        assert!(!planted.exists());

        // R3: a global option git knows and the shim did not.
        let o = w.plain_out(
            &w.repo,
            &[
                "--no-literal-pathspecs",
                "config",
                "core.hooksPath",
                "/tmp/h",
            ],
        );
        assert!(o.status.success() && cfg(&w).contains("hooksPath"));
        w.plain(&w.repo, &["config", "--unset", "core.hooksPath"]);
        w.refused(
            &w.repo,
            &[
                "--no-literal-pathspecs",
                "config",
                "core.hooksPath",
                "/tmp/h",
            ],
            "config-key",
        );
        w.refused(
            &w.repo,
            &[
                "--shallow-file",
                "/dev/null",
                "config",
                "core.hooksPath",
                "/tmp/h",
            ],
            "config-key",
        );
        assert!(!cfg(&w).contains("hooksPath"));

        // R1: `remote add --mirror <name> <url>`.
        w.refused(
            &w.repo,
            &["remote", "add", "--mirror", "evil", "ext::sh -c x"],
            "remote-url",
        );
        assert!(!cfg(&w).contains("ext::"));

        // R5: a word that is no builtin of this git is looked up as an alias.
        let builtins = w.plain_out(&w.repo, &["--list-cmds=builtins"]);
        let builtins = String::from_utf8_lossy(&builtins.stdout).into_owned();
        let word = ["replay", "refs", "env--helper", "bisect--helper"]
            .into_iter()
            .find(|c| !builtins.lines().any(|b| b == *c))
            .expect("one of them is not a builtin of this git");
        std::fs::write(
            &agent_cfg,
            format!("[alias]\n\t{word} = config core.hooksPath /tmp/h\n"),
        )
        .unwrap();
        let mut plain = Command::new(&w.git);
        w.env(&mut plain);
        let o = plain
            .current_dir(&w.repo)
            .env("GIT_CONFIG_GLOBAL", &agent_cfg)
            .arg(word)
            .output()
            .unwrap();
        assert!(
            o.status.success() && cfg(&w).contains("hooksPath"),
            "{}: control alias {word} did not write",
            g.display()
        );
        w.plain(&w.repo, &["config", "--unset", "core.hooksPath"]);
        let o = w
            .shim_cmd(&w.repo)
            .env("GIT_CONFIG_GLOBAL", &agent_cfg)
            .arg(word)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(121), "{}: alias {word}", g.display());
        assert!(!cfg(&w).contains("hooksPath"));

        // R7: sparse-checkout switches extensions.worktreeConfig on in the common config.
        w.refused(
            &w.repo,
            &["sparse-checkout", "init", "--cone"],
            "config-key",
        );
        assert!(!cfg(&w).to_ascii_lowercase().contains("worktreeconfig"));
        w.plain(&w.repo, &["sparse-checkout", "init", "--cone"]);
        assert!(cfg(&w)
            .to_ascii_lowercase()
            .contains("worktreeconfig = true"));
        // Once the owner has it on, the agent's sparse-checkout works.
        w.ok(&w.repo, &["sparse-checkout", "set", "d"]);
        w.plain(&w.repo, &["sparse-checkout", "disable"]);

        // R8: maintenance register writes the owner's global config.
        w.refused(&w.repo, &["maintenance", "register"], "outside-write");
        let global = std::fs::read_to_string(w.home.join("gitconfig")).unwrap();
        assert!(!global.contains("maintenance"), "{global}");

        // R6: the builtin behind `git submodule`, and URLs copied from .gitmodules.
        let sub = w.home.join("subsrc");
        w.plain(&w.home, &["init", "-q", sub.to_str().unwrap()]);
        w.plain(&sub, &["commit", "-q", "--allow-empty", "-m", "s"]);
        w.plain(
            &w.repo,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                sub.to_str().unwrap(),
                "s",
            ],
        );
        w.refused(
            &w.repo,
            &["submodule--helper", "set-url", "s", "ext::sh -c x"],
            "submodule-url",
        );
        let gm = w.repo.join(".gitmodules");
        let text = std::fs::read_to_string(&gm).unwrap();
        let url_line = text
            .lines()
            .find(|l| l.contains("url ="))
            .unwrap()
            .to_owned();
        std::fs::write(&gm, text.replace(&url_line, "\turl = ext::sh -c x")).unwrap();
        w.refused(&w.repo, &["submodule", "sync"], "submodule-url");
        assert!(!cfg(&w).contains("ext::"));
        // Positive control: plain git copies it.
        w.plain(&w.repo, &["submodule", "sync", "-q"]);
        assert!(cfg(&w).contains("ext::"), "{}: sync control", g.display());
    }
}

/// Third red-team pass, R10 and R11: `worktree repair` re-registers another session's entry
/// anywhere; trace2 targets in the global config make every later git call append to a file.
#[test]
fn redteam3_repair_and_trace2() {
    for g in gits() {
        let w = World::new(&g, "");
        let other = w.home.join("src/proj-worktrees/s2/other");
        w.plain(
            &w.repo,
            &["worktree", "add", "-q", "--detach", other.to_str().unwrap()],
        );
        let gitdir = w.repo.join(".git/worktrees/other/gitdir");
        let before = std::fs::read_to_string(&gitdir).unwrap();
        let hijack = w.home.join("elsewhere/hijack");
        std::fs::create_dir_all(&hijack).unwrap();
        std::fs::write(
            hijack.join(".git"),
            format!(
                "gitdir: {}\n",
                w.repo.join(".git/worktrees/other").display()
            ),
        )
        .unwrap();
        let h = hijack.to_str().unwrap();
        w.refused(&w.repo, &["worktree", "repair", h], "worktree-location");
        assert_eq!(std::fs::read_to_string(&gitdir).unwrap(), before);
        // Positive control: plain git re-points the entry.
        let _ = w.plain_out(&w.repo, &["worktree", "repair", h]);
        assert!(
            std::fs::read_to_string(&gitdir).unwrap().contains("hijack"),
            "{}: repair control",
            g.display()
        );
        // trace2: the shim refuses the write; plain git then appends on every call.
        let target = w.home.join("t2.out");
        let t = target.to_str().unwrap();
        w.refused(
            &w.repo,
            &["config", "--global", "trace2.eventTarget", t],
            "config-key",
        );
        assert!(!std::fs::read_to_string(w.home.join("gitconfig"))
            .unwrap()
            .contains("trace2"));
        w.plain(&w.repo, &["config", "--global", "trace2.eventTarget", t]);
        w.plain(&w.repo, &["status", "--short"]);
        let out = std::fs::read_to_string(&target).unwrap_or_default();
        assert!(
            out.contains("\"worktree\":"),
            "{}: trace2 control",
            g.display()
        );
    }
}

/// Third red-team pass, R16: `branch.<name>.remote` that names no remote is the URL git
/// fetches from.
#[test]
fn redteam3_branch_remote_url() {
    for g in gits() {
        let w = World::new(&g, "");
        let canary = w.home.join("branch-remote-canary");
        let url = format!("ext::sh -c touch% {}", canary.display());
        w.refused(
            &w.repo,
            &["config", "branch.main.remote", &url],
            "config-key",
        );
        // Positive control: the same value set by plain git runs on a plain fetch (ext is
        // allowed here for the demonstration; a <helper>:: URL needs no such switch).
        w.plain(&w.repo, &["config", "branch.main.remote", &url]);
        let _ = w.plain_out(&w.repo, &["-c", "protocol.ext.allow=always", "fetch"]);
        assert!(canary.exists(), "{}: control did not fire", g.display());
        w.plain(&w.repo, &["config", "--unset", "branch.main.remote"]);
        w.ok(&w.repo, &["config", "branch.main.remote", "origin"]);
        w.ok(&w.repo, &["config", "branch.main.remote", "."]);
    }
}

/// Third red-team pass, R19 and R20: redirects of the owner's every repository through the
/// global config.
#[test]
fn redteam3_global_redirects() {
    for g in gits() {
        let w = World::new(&g, "");
        let rewrite = "url.https://attacker.invalid/.insteadOf";
        w.refused(
            &w.repo,
            &["config", "--global", rewrite, "https://github.com/"],
            "config-key",
        );
        w.refused(
            &w.repo,
            &[
                "config",
                "--global",
                "http.https://github.com/.proxy",
                "http://127.0.0.1:9",
            ],
            "config-key",
        );
        let global = std::fs::read_to_string(w.home.join("gitconfig")).unwrap();
        assert!(
            !global.contains("attacker") && !global.contains("proxy"),
            "{global}"
        );
        // Positive control: written by plain git, every repository's GitHub URLs go to the
        // attacker's host.
        w.plain(
            &w.repo,
            &["config", "--global", rewrite, "https://github.com/"],
        );
        let o = w.plain_out(
            &w.home,
            &["ls-remote", "--get-url", "https://github.com/git/git"],
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "https://attacker.invalid/git/git",
            "{}",
            g.display()
        );
        // In the repository's own config the rewrite is the repository's business.
        w.ok(&w.repo, &["config", rewrite, "https://github.com/"]);
        // R21: the owner's safe.bareRepository = explicit, lifted by the agent.
        w.plain(
            &w.repo,
            &["config", "--global", "safe.bareRepository", "explicit"],
        );
        let bare = w.home.join("emb/b.git");
        w.plain(&w.home, &["init", "-q", "--bare", bare.to_str().unwrap()]);
        assert!(!w
            .plain_out(&bare, &["rev-parse", "--git-dir"])
            .status
            .success());
        w.refused(
            &w.repo,
            &["config", "--global", "safe.bareRepository", "all"],
            "config-key",
        );
        assert!(!w
            .plain_out(&bare, &["rev-parse", "--git-dir"])
            .status
            .success());
        // Positive control: the same write by plain git lifts the protection.
        w.plain(
            &w.repo,
            &["config", "--global", "safe.bareRepository", "all"],
        );
        assert!(w
            .plain_out(&bare, &["rev-parse", "--git-dir"])
            .status
            .success());
    }
}

/// Third red-team pass, R22: a worktree one folder below the session folder.
#[test]
fn redteam3_worktree_depth() {
    for g in gits() {
        let w = World::new(&g, "");
        let nested = w.wt.join("group/feat");
        w.refused(
            &w.repo,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                nested.to_str().unwrap(),
            ],
            "worktree-location",
        );
        assert!(!nested.exists());
        w.ok(
            &w.repo,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                w.wt.join("feat").to_str().unwrap(),
            ],
        );
    }
}

/// `git push -u <local path>` stores the path as the branch's remote (positive control with
/// the real git); through the shim it is refused and nothing is stored, while `push -u` to a
/// remote's name still works.
#[test]
fn push_set_upstream_to_a_local_path_is_refused() {
    for g in gits() {
        let w = World::new(&g, "");
        let target = w.home.join("target.git");
        w.plain(&w.home, &["init", "-q", "--bare", target.to_str().unwrap()]);
        let upstream = |w: &World| {
            let o = w.plain_out(&w.repo, &["config", "--get", "branch.main.remote"]);
            String::from_utf8_lossy(&o.stdout).trim().to_owned()
        };
        // Positive control: plain git stores the path.
        w.plain(&w.repo, &["push", "-q", "-u", "../../target.git", "main"]);
        assert_eq!(upstream(&w), "../../target.git", "{}", g.display());
        w.plain(&w.repo, &["config", "--unset", "branch.main.remote"]);
        w.plain(&w.repo, &["config", "--unset", "branch.main.merge"]);
        // Through the shim: refused, nothing stored.
        w.refused(
            &w.repo,
            &["push", "-q", "-u", "../../target.git", "main"],
            "remote-url",
        );
        assert_eq!(upstream(&w), "", "{}", g.display());
        // A remote's name: allowed (a remote with a local URL is set up by plain git here).
        w.plain(&w.repo, &["remote", "add", "t", target.to_str().unwrap()]);
        w.ok(&w.repo, &["push", "-q", "-u", "t", "main"]);
        assert_eq!(upstream(&w), "t", "{}", g.display());
    }
}

/// git-shim's own output (help, install summary) to a full disk: one line, 124.
#[test]
fn a_full_disk_is_one_error_line() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("bin");
    for args in [
        vec!["--help".to_owned()],
        vec!["--install".to_owned(), dir.to_string_lossy().into_owned()],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
            .args(&args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", t.path())
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(124), "{args:?}: {err}");
        assert!(
            err.starts_with("git-shim: cannot write to standard output")
                && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// Runs `prog args` in `dir` with exactly `env` as its `environ` (duplicates included, which
/// std's `Command` cannot express); output discarded; the exit status.
fn raw_exec(prog: &Path, args: &[&str], env: &[String], dir: &Path) -> Option<i32> {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{execve, fork, ForkResult};
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let path = CString::new(prog.as_os_str().as_bytes()).unwrap();
    let argv: Vec<CString> = std::iter::once(path.clone())
        .chain(args.iter().map(|a| CString::new(*a).unwrap()))
        .collect();
    let envp: Vec<CString> = env
        .iter()
        .map(|e| CString::new(e.as_str()).unwrap())
        .collect();
    let dir = CString::new(dir.as_os_str().as_bytes()).unwrap();
    let null = CString::new("/dev/null").unwrap();
    // SAFETY: the child only calls async-signal-safe functions (open, dup2, chdir, execve,
    // _exit) on data prepared before the fork.
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => unsafe {
            let fd = nix::libc::open(null.as_ptr(), nix::libc::O_RDWR);
            nix::libc::dup2(fd, 0);
            nix::libc::dup2(fd, 1);
            nix::libc::dup2(fd, 2);
            nix::libc::chdir(dir.as_ptr());
            let _ = execve(&path, &argv, &envp);
            nix::libc::_exit(127);
        },
        ForkResult::Parent { child } => match waitpid(child, None).unwrap() {
            WaitStatus::Exited(_, c) => Some(c),
            _ => None,
        },
    }
}

/// R14-1 … R14-4: two entries of one name in the agent's environment. git (`getenv`) reads the
/// first, std's `Command` the last, shells the last; the shim checked one copy and another ran.
/// Every gitward binary now keeps the first copy of each name before reading anything
/// (`gitward::environ`), so the copy checked is the copy every reader sees.
#[test]
fn duplicate_environment_entries_meet_the_rules_of_the_first() {
    for g in gits() {
        let w = World::new(&g, "");
        let canary = w.home.join("canary");
        let fired = || canary.exists();
        let clear = || {
            let _ = std::fs::remove_file(&canary);
        };
        let arm = format!("touch {}; cat", canary.display());
        std::fs::write(w.repo.join("f"), "one\n").unwrap();
        std::fs::write(w.repo.join(".gitattributes"), "f diff=rt\n").unwrap();
        w.plain(&w.repo, &["add", "f", ".gitattributes"]);
        w.plain(&w.repo, &["commit", "-q", "-m", "f"]);
        std::fs::write(w.repo.join("f"), "two\n").unwrap();
        w.plain(&w.repo, &["commit", "-q", "-am", "f2"]);
        std::fs::write(w.repo.join("f"), "three\n").unwrap();
        let base = [
            format!("HOME={}", w.home.display()),
            "GIT_CONFIG_NOSYSTEM=1".to_string(),
            format!("GIT_CONFIG_GLOBAL={}", w.home.join("gitconfig").display()),
            format!("PATH={}:/usr/bin:/bin", w.bin.display()),
            format!("GITWARD_POLICY={}", w.policy.display()),
        ];
        let with = |extra: &[String]| -> Vec<String> {
            // The extra entries first: a duplicate of a base name (GIT_CONFIG_GLOBAL) is then
            // the first copy, as the attack placed it.
            extra.iter().chain(base.iter()).cloned().collect()
        };
        let shim = w.bin.join("git");

        // R14-1: a harmless first GIT_CONFIG_PARAMETERS, an armed second one.
        let good = "GIT_CONFIG_PARAMETERS='user.email'='y'".to_string();
        let evil = format!("GIT_CONFIG_PARAMETERS='diff.rt.textconv'='{arm}'");
        clear();
        raw_exec(&g, &["diff"], &with(std::slice::from_ref(&evil)), &w.repo);
        assert!(
            fired(),
            "{}: control (armed copy alone) did not fire",
            g.display()
        );
        clear();
        raw_exec(&shim, &["diff"], &with(&[good, evil]), &w.repo);
        assert!(
            !fired(),
            "{}: R14-1 the second copy reached git",
            g.display()
        );

        // R14-3: a second GIT_CONFIG_KEY_0 reaches the shells of git's script commands.
        let dup_key = [
            "GIT_CONFIG_COUNT=1".to_string(),
            "GIT_CONFIG_KEY_0=user.name".to_string(),
            "GIT_CONFIG_KEY_0=diff.rt.textconv".to_string(),
            format!("GIT_CONFIG_VALUE_0={arm}"),
        ];
        let repo = w.repo.display().to_string();
        let rp = ["request-pull", "-p", "HEAD~1", repo.as_str(), "HEAD"];
        clear();
        raw_exec(&g, &rp, &with(&dup_key), &w.repo);
        assert!(
            fired(),
            "{}: control (plain git, same environment) did not fire",
            g.display()
        );
        clear();
        raw_exec(&shim, &rp, &with(&dup_key), &w.repo);
        assert!(
            !fired(),
            "{}: R14-3 a shell saw the second key",
            g.display()
        );

        // R14-4: a second GIT_CONFIG_GLOBAL: the alias rule looked at one file, git read another.
        let g1 = w.home.join("g1");
        let g2 = w.home.join("g2");
        std::fs::write(
            &g1,
            format!("[alias]\n\trtx = !touch {}\n", canary.display()),
        )
        .unwrap();
        std::fs::write(&g2, "").unwrap();
        let dup_global = [
            format!("GIT_CONFIG_GLOBAL={}", g1.display()),
            format!("GIT_CONFIG_GLOBAL={}", g2.display()),
        ];
        clear();
        raw_exec(&g, &["rtx"], &with(&dup_global), &w.repo);
        assert!(
            fired(),
            "{}: control (plain git, same environment) did not fire",
            g.display()
        );
        clear();
        let code = raw_exec(&shim, &["rtx"], &with(&dup_global), &w.repo);
        assert!(!fired(), "{}: R14-4 the alias ran", g.display());
        assert_eq!(
            code,
            Some(121),
            "{}: the alias rule must refuse it",
            g.display()
        );
    }
}

/// A payload that records that it ran (and fails, so a transport stops there).
fn payload(w: &World) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let canary = w.home.join("FIRED");
    let pay = w.home.join("pay.sh");
    std::fs::write(
        &pay,
        format!(
            "#!/bin/sh\necho ran >> {}\ncat >/dev/null 2>&1 </dev/null\nexit 1\n",
            canary.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&pay, std::fs::Permissions::from_mode(0o755)).unwrap();
    (pay, canary)
}

/// Did the canary fire? Removes it.
fn fired(canary: &Path) -> bool {
    let f = canary.exists();
    let _ = std::fs::remove_file(canary);
    f
}

#[test]
fn rt24_for_each_repo_and_remote_ext_are_refused() {
    for g in gits() {
        let w = World::new(&g, "");
        let (pay, canary) = payload(&w);
        std::fs::write(w.repo.join("a.txt"), "changed\n").unwrap();
        let r = format!("x.r={}", w.repo.display());
        let diff_ext = format!("diff.external={}", pay.display());
        let w4 = [
            "-c",
            &r,
            "for-each-repo",
            "--config=x.r",
            "--",
            "-c",
            &diff_ext,
            "diff",
        ];
        // Positive control: plain git's child runs the program.
        let _ = w.plain_out(&w.repo, &w4);
        assert!(fired(&canary), "{}: W4 control did not fire", g.display());
        w.refused(&w.repo, &w4, "command");
        assert!(!fired(&canary));
        // The persistent form: plain git writes core.hooksPath, the shim refuses.
        let hooks = w.home.join("hooks");
        let hooks = hooks.to_str().unwrap();
        let w4c = [
            "-c",
            &r,
            "for-each-repo",
            "--config=x.r",
            "--",
            "config",
            "core.hooksPath",
            hooks,
        ];
        let config = w.repo.join(".git/config");
        let before = std::fs::read(&config).unwrap();
        w.refused(&w.repo, &w4c, "command");
        assert_eq!(std::fs::read(&config).unwrap(), before);
        let _ = w.plain_out(&w.repo, &w4c);
        assert_ne!(std::fs::read(&config).unwrap(), before, "W4 control");
        std::fs::write(&config, &before).unwrap();
        // An alias to it (in the global config the agent may choose) meets the same rule.
        let mut cfg = std::fs::read_to_string(w.home.join("gitconfig")).unwrap();
        cfg.push_str("[alias]\n\tfe = for-each-repo\n");
        std::fs::write(w.home.join("gitconfig"), cfg).unwrap();
        w.refused(
            &w.repo,
            &["-c", &r, "fe", "--config=x.r", "--", "status"],
            "command",
        );
        // W5: remote-ext runs the command it is given.
        let cmd = format!("sh -c {}", pay.display());
        let ext = |c: &mut Command| {
            use std::io::Write;
            let mut child = c
                .args(["remote-ext", "x", &cmd])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let _ = child
                .stdin
                .take()
                .unwrap()
                .write_all(b"connect git-upload-pack\n");
            child.wait_with_output().unwrap()
        };
        let mut c = Command::new(&w.git);
        w.env(&mut c);
        c.current_dir(&w.repo);
        let _ = ext(&mut c);
        assert!(fired(&canary), "{}: W5 control did not fire", g.display());
        let o = ext(&mut w.shim_cmd(&w.repo));
        assert_eq!(o.status.code(), Some(121));
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("git-shim: refused (command): "));
        assert!(!fired(&canary));
    }
}

/// A world whose `origin` is a local path (its upload-pack runs here, so `--upload-pack`
/// matters).
fn with_local_origin(g: &Path) -> World {
    let w = World::new(g, "");
    let up = w.home.join("up.git");
    w.plain(
        &w.home,
        &[
            "clone",
            "-q",
            "--bare",
            w.repo.to_str().unwrap(),
            up.to_str().unwrap(),
        ],
    );
    w.plain(&w.repo, &["remote", "add", "origin", up.to_str().unwrap()]);
    w.plain(&w.repo, &["fetch", "-q", "origin"]);
    w.plain(&w.repo, &["branch", "-q", "--set-upstream-to=origin/main"]);
    w
}

#[test]
fn rt24_options_passed_to_child_fetch_as_operands_are_refused() {
    for g in gits() {
        let w = with_local_origin(&g);
        let (pay, canary) = payload(&w);
        let up = format!("--upload-pack={}", pay.display());
        // W7: `--` before an option the child fetch reads as one.
        for line in [
            vec!["pull", "--", up.as_str()],
            vec!["remote", "update", "--", up.as_str()],
        ] {
            let _ = w.plain_out(&w.repo, &line);
            assert!(
                fired(&canary),
                "{}: control {line:?} did not fire",
                g.display()
            );
            w.refused(&w.repo, &line, "dash-operand");
            assert!(!fired(&canary));
        }
        // The same through fetch --multiple (its members go to child fetches as they are).
        w.refused(
            &w.repo,
            &["fetch", "--multiple", "--", up.as_str()],
            "dash-operand",
        );
        // W6: a remote group whose member is an option.
        let grp = format!("remotes.g={up}");
        for line in [
            vec!["-c", grp.as_str(), "fetch", "--multiple", "g"],
            vec!["-c", grp.as_str(), "remote", "update", "g"],
        ] {
            let _ = w.plain_out(&w.repo, &line);
            assert!(
                fired(&canary),
                "{}: control {line:?} did not fire",
                g.display()
            );
            w.refused(&w.repo, &line, "transient-config");
            assert!(!fired(&canary));
        }
        w.refused(&w.repo, &["config", "remotes.g", &up], "config-key");
        w.refused(
            &w.repo,
            &["config", "remotes.g", &format!("origin {up}")],
            "config-key",
        );
        // W8: a remote named as an option, fetched later by `fetch --all` (and maintenance's
        // prefetch, `remote update`).
        let add = [
            "remote",
            "add",
            "--",
            up.as_str(),
            "https://example.invalid/x",
        ];
        let config = w.repo.join(".git/config");
        let before = std::fs::read(&config).unwrap();
        w.refused(&w.repo, &add, "dash-operand");
        w.refused(
            &w.repo,
            &[
                "config",
                &format!("remote.{up}.url"),
                "https://example.invalid/x",
            ],
            "config-key",
        );
        assert_eq!(std::fs::read(&config).unwrap(), before);
        assert!(!fired(&canary));
        // (git's `remote add` refuses this name only because the temporary folder's name
        // starts with '.', an invalid ref component; the config write is what it stores.)
        w.plain(
            &w.repo,
            &[
                "config",
                &format!("remote.{up}.url"),
                "https://example.invalid/x",
            ],
        );
        let _ = w.plain_out(&w.repo, &["fetch", "--all"]);
        assert!(fired(&canary), "{}: W8 control did not fire", g.display());
        std::fs::write(&config, &before).unwrap();
        // The ordinary forms work.
        w.ok(&w.repo, &["pull", "-q", "--", "origin", "main"]);
        w.ok(
            &w.repo,
            &["-c", "remotes.g=origin", "fetch", "-q", "--multiple", "g"],
        );
        w.ok(&w.repo, &["config", "remotes.g", "origin"]);
        w.ok(&w.repo, &["remote", "update", "g"]);
        assert!(!fired(&canary));
    }
}

#[test]
fn rt24_aliases_as_git_finds_them() {
    use std::os::unix::fs::PermissionsExt;
    for g in gits() {
        let w = World::new(&g, "");
        let (pay, canary) = payload(&w);
        let mut cfg = std::fs::read_to_string(w.home.join("gitconfig")).unwrap();
        cfg.push_str(&format!(
            "[alias \"zz\"]\n\tx = !{p}\n[alias]\n\tzz = !{p}\n",
            p = pay.display()
        ));
        std::fs::write(w.home.join("gitconfig"), cfg).unwrap();
        // W3: the name after `alias.` is compared case-insensitively, subsection included.
        for word in ["ZZ.x", "Zz.X", "zz.x"] {
            let _ = w.plain_out(&w.repo, &[word]);
            assert!(
                fired(&canary),
                "{}: control `git {word}` did not fire",
                g.display()
            );
            w.refused(&w.repo, &[word], "alias");
            assert!(!fired(&canary));
        }
        // W2: an executable git-zz whose `#!` interpreter is missing: git falls back to the
        // alias.
        let agentbin = w.home.join("agentbin");
        std::fs::create_dir_all(&agentbin).unwrap();
        let zz = agentbin.join("git-zz");
        std::fs::write(&zz, "#!/nonexistent/interpreter\n").unwrap();
        std::fs::set_permissions(&zz, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}:/usr/bin:/bin", w.bin.display(), agentbin.display());
        let mut c = Command::new(&w.git);
        w.env(&mut c);
        let _ = c
            .env("PATH", &path)
            .current_dir(&w.repo)
            .arg("zz")
            .output()
            .unwrap();
        assert!(fired(&canary), "{}: W2 control did not fire", g.display());
        let o = w
            .shim_cmd(&w.repo)
            .env("PATH", &path)
            .arg("zz")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(121),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("git-shim: refused (alias): "));
        assert!(!fired(&canary));
    }
}

#[test]
fn rt24_man_variables_do_not_reach_git_help() {
    if !Path::new("/usr/bin/script").exists() || !Path::new("/usr/bin/man").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "script and man are needed"
        );
        eprintln!("SKIPPED: script or man missing");
        return;
    }
    for g in gits() {
        let w = World::new(&g, "");
        let (pay, canary) = payload(&w);
        for var in [
            format!("MANPAGER={}", pay.display()),
            format!("MANOPT=-P{}", pay.display()),
        ] {
            let (k, v) = var.split_once('=').unwrap();
            // `git help log` on a terminal (script gives it one): man runs the pager.
            let help = |git: &Path| {
                let mut c = Command::new("/usr/bin/script");
                w.env(&mut c);
                c.env("GITWARD_POLICY", &w.policy)
                    .env(k, v)
                    .current_dir(&w.repo)
                    .args(["-qec", &format!("{} help log", git.display()), "/dev/null"])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .unwrap()
            };
            let _ = help(&w.git);
            if !fired(&canary) {
                // No manual page for git on this machine: nothing to control against.
                eprintln!(
                    "SKIPPED {var} for {}: plain git help log ran no pager",
                    g.display()
                );
                continue;
            }
            let _ = help(&w.bin.join("git"));
            assert!(
                !fired(&canary),
                "{}: {var} ran through the shim",
                g.display()
            );
        }
    }
}

#[test]
fn rt24_a_fifo_in_place_of_the_pin_or_a_cache_does_not_hang() {
    use std::time::{Duration, Instant};
    let g = &gits()[0];
    let w = World::new(g, "");
    let dir = w.home.join("pinned");
    // Installed by the owner whose home the world is (`~/` in the policy, the state folder).
    let out = Command::new(env!("CARGO_BIN_EXE_git-shim"))
        .env("HOME", &w.home)
        .arg("--install")
        .arg(&dir)
        .arg("--policy")
        .arg(&w.policy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Run the pinned shim with a deadline; Some(code) when it ended in time.
    let run = || {
        let mut c = Command::new(dir.join("git"));
        w.env(&mut c);
        let mut child = c
            .current_dir(&w.repo)
            .args(["rev-parse", "--git-dir"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return Some(s.code());
            }
            if start.elapsed() > Duration::from_secs(10) {
                child.kill().unwrap();
                child.wait().unwrap();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert_eq!(run(), Some(Some(0)));
    let mkfifo = |p: &Path| {
        let _ = std::fs::remove_file(p);
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    };
    // The cached policy and the probe caches as FIFOs: read as missing, git still runs.
    mkfifo(&dir.join("git-shim.policy.json"));
    let probes: Vec<PathBuf> = walk_files(&w.home)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("probe-"))
        })
        .collect();
    assert!(!probes.is_empty(), "no probe cache was written");
    for p in &probes {
        mkfifo(p);
    }
    assert_eq!(
        run(),
        Some(Some(0)),
        "a cache FIFO blocked or failed the call"
    );
    // The pin as a FIFO: the documented setup failure, at once.
    mkfifo(&dir.join("git-shim.policy"));
    assert_eq!(
        run(),
        Some(Some(124)),
        "a FIFO pin blocked the call or was used"
    );
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => out.extend(walk_files(&p)),
                Ok(_) => out.push(p),
                Err(_) => {}
            }
        }
    }
    out
}

/// `~/` in a pinned policy is the owner's home recorded by `--install`, never the caller's
/// `HOME` (twenty-ninth red-team pass, W2: with `HOME` set to a folder of its own the agent
/// moved the audit log, the state folder's version probe and the session's worktree folder
/// there). Positive control: plain git makes the worktree the shim refuses.
#[test]
fn the_callers_home_does_not_move_a_pinned_policy() {
    for g in gits() {
        let w = World::new(&g, "");
        let policy = w.home.join("etc/tilde.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"~/src/proj\"\nreal_git = \"{}\"\naudit_log = \"~/var/tilde.log\"\n",
                g.display()
            ),
        )
        .unwrap();
        let pinned = w.home.join("tilde-bin");
        let o = Command::new(env!("CARGO_BIN_EXE_git-shim"))
            .env("HOME", &w.home)
            .args(["--install", pinned.to_str().unwrap(), "--policy"])
            .arg(&policy)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let pin = std::fs::read_to_string(pinned.join("git-shim.policy")).unwrap();
        assert_eq!(
            pin,
            format!("{}\nhome={}\n", policy.display(), w.home.display())
        );
        // The agent's own home, with a state folder and a log of its own.
        let agent = w.home.parent().unwrap().join("agent");
        std::fs::create_dir_all(agent.join("var")).unwrap();
        let outside = agent.join("src/proj-worktrees/s1/w");
        let run = |args: &[&str]| {
            let mut c = Command::new(pinned.join("git"));
            w.env(&mut c);
            c.current_dir(&w.repo)
                .env("HOME", &agent)
                .args(args)
                .output()
                .unwrap()
        };
        let o = run(&[
            "worktree",
            "add",
            "-q",
            outside.to_str().unwrap(),
            "-b",
            "t1",
        ]);
        assert_eq!(o.status.code(), Some(121), "{g:?}: {o:?}");
        assert!(!outside.exists());
        let o = run(&["rev-parse", "HEAD"]);
        assert!(o.status.success(), "{o:?}");
        assert!(
            !agent.join("var/tilde.log").exists(),
            "no event in the agent's log"
        );
        let log = std::fs::read_to_string(w.home.join("var/tilde.log")).unwrap();
        assert!(
            log.contains("rev-parse") && log.contains("worktree"),
            "{log}"
        );
        assert!(
            !agent.join(".local").exists(),
            "no state folder under the agent's home"
        );
        // A pin without the home line (an older install, or edited) is refused, not read
        // with the caller's HOME.
        std::fs::write(
            pinned.join("git-shim.policy"),
            format!("{}\n", policy.display()),
        )
        .unwrap();
        let o = run(&["rev-parse", "HEAD"]);
        assert_eq!(o.status.code(), Some(124), "{o:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("re-run git-shim --install"));
        // Positive control: plain git makes that worktree.
        let o = Command::new(&g)
            .current_dir(&w.repo)
            .args([
                "worktree",
                "add",
                "-q",
                outside.to_str().unwrap(),
                "-b",
                "t2",
            ])
            .output()
            .unwrap();
        assert!(o.status.success() && outside.exists(), "{o:?}");
    }
}

/// rt30 W1: the alias lookup (`git config --get-regexp '^alias\.'`) run as a child the shim
/// cannot start or wait for must refuse, never read as "not an alias". An inherited
/// `SIGCHLD=SIG_IGN` (the kernel reaps the child, the wait fails with `ECHILD`) is put back to
/// its default for the question, so the alias is seen and refused (121); a descriptor limit
/// too small for the question's pipes is a refusal (124, one line naming what failed). Honest
/// calls in the same environments keep working. Positive control: plain git, in the same
/// environment, runs the `!` alias and stores the program-running key.
#[test]
fn rt30_an_alias_lookup_that_cannot_run_refuses() {
    for g in gits() {
        let w = World::new(&g, "");
        // `touch`, not a script: with 6 descriptors `/bin/sh` cannot open a script file.
        let canary = w.home.join("FIRED");
        let hooks = w.home.join("hooks");
        let mut cfg = std::fs::read_to_string(w.home.join("gitconfig")).unwrap();
        cfg.push_str(&format!(
            "[alias]\n\tzz = !touch {}\n\thp = config core.hooksPath {}\n",
            canary.display(),
            hooks.display()
        ));
        std::fs::write(w.home.join("gitconfig"), cfg).unwrap();
        let stored = || {
            let o = w.plain_out(&w.repo, &["config", "--local", "core.hooksPath"]);
            let v = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            w.plain_out(&w.repo, &["config", "--local", "--unset", "core.hooksPath"]);
            v == hooks.to_str().unwrap()
        };
        // `prog args…` started with SIGCHLD ignored, or with `RLIMIT_NOFILE` 6 (git itself runs
        // with 6; the shim's question needs more). Descriptors 3-5 the test harness let the
        // child inherit are closed first, so the limit leaves what it would in a shell.
        let wrap = |how: &str, prog: &Path, args: &[&str]| {
            use std::os::unix::process::CommandExt;
            let mut c = Command::new(prog);
            w.env(&mut c);
            c.current_dir(&w.repo)
                .env("GITWARD_POLICY", &w.policy)
                .args(args);
            let sigchld = how == "sigchld";
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                c.pre_exec(move || {
                    use nix::libc;
                    if sigchld {
                        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
                    } else {
                        for fd in 3..6 {
                            let fl = libc::fcntl(fd, libc::F_GETFD);
                            if fl >= 0 && fl & libc::FD_CLOEXEC == 0 {
                                libc::close(fd);
                            }
                        }
                        let lim = libc::rlimit {
                            rlim_cur: 6,
                            rlim_max: 6,
                        };
                        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
            c.output().unwrap()
        };
        for how in ["sigchld", "nofile"] {
            // Positive control: plain git in the same environment runs both aliases.
            let o = wrap(how, &w.git, &["zz"]);
            assert!(
                fired(&canary),
                "{}: {how}: control `zz` did not fire: {}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            wrap(how, &w.git, &["hp"]);
            assert!(
                stored(),
                "{}: {how}: control `hp` stored nothing",
                g.display()
            );
            let shim = w.bin.join("git");
            for word in ["zz", "hp"] {
                let o = wrap(how, &shim, &[word]);
                let err = String::from_utf8_lossy(&o.stderr).into_owned();
                assert_eq!(
                    err.lines().count(),
                    1,
                    "{}: {how} {word}: {err}",
                    g.display()
                );
                if how == "sigchld" {
                    // The question is answered: the `!` alias is refused, and the git
                    // alias's expansion meets the rules of `git config`.
                    let rule = if word == "zz" { "alias" } else { "config-key" };
                    assert_eq!(
                        o.status.code(),
                        Some(121),
                        "{}: {how} {word}: {err}",
                        g.display()
                    );
                    assert!(
                        err.starts_with(&format!("git-shim: refused ({rule}): ")),
                        "{err}"
                    );
                } else {
                    assert_eq!(
                        o.status.code(),
                        Some(124),
                        "{}: {how} {word}: {err}",
                        g.display()
                    );
                    assert!(
                        err.starts_with("git-shim: refused (setup): cannot ask the real git (git config --null --get-regexp ^alias\\.: "),
                        "{err}"
                    );
                }
                assert!(!fired(&canary), "{}: {how}: `zz` ran", g.display());
                assert!(!stored(), "{}: {how}: `hp` stored the key", g.display());
            }
            // Honest calls: the fast path asks git nothing; a builtin and git's own error for
            // an unknown word are unchanged.
            let o = wrap(how, &shim, &["rev-parse", "HEAD"]);
            assert!(
                o.status.success(),
                "{}: {how}: {}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        // SIGCHLD ignored: an unknown word that is no alias reaches git (its own error).
        let o = wrap("sigchld", &w.bin.join("git"), &["no-such-word"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("is not a git command"),
            "{}: {err}",
            g.display()
        );
        let refused: Vec<_> = w
            .events()
            .into_iter()
            .filter(|e| e["rule"] == "setup")
            .collect();
        assert_eq!(refused.len(), 2, "{}: {refused:?}", g.display());
    }
}
