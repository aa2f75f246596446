//! End to end, on real bubblewrap: what an interpreter the owner's git starts searches besides
//! the script it is given — Node's `node_modules/` up to the top, a venv's
//! `site-packages/*.pth` — is read-only inside `agent-shell --sandbox bwrap` (ninth red-team
//! pass, R9-1 and R9-11). Positive control: the same writes without the sandbox, after which
//! the owner's plain `git status` runs the agent's code through `core.fsmonitor`. Both gits.
//!
//! If bwrap is missing or cannot create namespaces here, the tests are compiled as ignored
//! with the reason (build.rs, `gitward_no_bwrap`); under `CI=true` they run and fail. A missing
//! `node` or `/usr/bin/python3` is SKIPPED with the reason (under `CI=true`: a failure).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "common/sandboxed.rs"]
mod sandboxed;
use sandboxed::{bins, bwrap_works, gits, present};

const NODE: &str = "/usr/bin/node";
const PYTHON: &str = "/usr/bin/python3";

/// A repository with one commit, a policy outside every writable root, and the shim installed
/// (pinned to the policy) by the "orchestrator", outside the sandbox.
struct Session {
    _t: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    policy: PathBuf,
    git: PathBuf,
}

impl Session {
    fn new(git: &Path) -> Session {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap().join("home");
        let repo = home.join("src/proj");
        for d in [
            &repo,
            &home.join("src/proj-worktrees"),
            &home.join("etc"),
            &home.join("var"),
        ] {
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
            _t: t,
            home: home.clone(),
            repo,
            policy: policy.clone(),
            git: git.to_path_buf(),
        };
        s.plain(&["init", "-q"]);
        std::fs::write(s.repo.join("a.txt"), "a\n").unwrap();
        s.plain(&["add", "a.txt"]);
        s.plain(&["commit", "-q", "-m", "first"]);
        let (shim, _) = bins();
        let o = Command::new(shim)
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .arg("--install")
            .arg(home.join(".local/state/gitward/s1/bin"))
            .arg("--policy")
            .arg(&policy)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "install: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        s
    }

    /// The owner's plain git (status is not checked: an fsmonitor that prints nothing makes
    /// git fall back to a full scan, after it ran).
    fn plain(&self, args: &[&str]) -> Output {
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
            o.status.success() || args == ["status"],
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// agent-shell -c SCRIPT, inside bubblewrap built from the repository's plan or not.
    fn agent(&self, script: &str, sandbox: bool) -> Output {
        let (_, shell) = bins();
        let mut cmd = Command::new(shell);
        cmd.current_dir(&self.repo);
        if sandbox {
            cmd.args(["--sandbox", "bwrap"]);
        }
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", "/usr/bin:/bin")
            .arg("--policy")
            .arg(&self.policy)
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }
}

/// Runs one case on every git, without and with the sandbox: `setup` lays out the repository
/// (the owner's), `attack` is the agent's script (it prints `w=<status>`), and the owner's
/// plain `git status` afterwards must run the agent's code (`mark`) only without the sandbox.
fn case(name: &str, setup: &dyn Fn(&Session), attack: &dyn Fn(&Path) -> String) {
    bwrap_works().expect("bubblewrap must work for this test");
    for g in gits() {
        for sandbox in [false, true] {
            let s = Session::new(&g);
            let mark = s.home.join("FIRED");
            setup(&s);
            let o = s.agent(&attack(&mark), sandbox);
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let ctx = format!(
                "{name}: {} sandbox={sandbox}\n{out}\n{}",
                g.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(!mark.exists(), "the agent's code ran inside: {ctx}");
            // The owner, outside the sandbox, after the turn.
            s.plain(&["status"]);
            if !sandbox {
                assert!(out.contains("w=0"), "control: the write failed: {ctx}");
                assert!(mark.exists(), "control did not fire: {ctx}");
                continue;
            }
            assert!(
                out.contains("w=") && !out.contains("w=0"),
                "the write succeeded: {ctx}"
            );
            assert!(
                !mark.exists(),
                "the owner's git ran the agent's code: {ctx}"
            );
        }
    }
}

/// R9-1: `core.fsmonitor = node tools/fsm.js`, and `fsm.js` requires `helper`, installed in
/// the ignored top `node_modules/` (Node resolves a bare require upward: `tools/node_modules`,
/// then the top's). The agent rewrites `node_modules/helper/index.js`; in the sandbox the
/// whole `node_modules/` is read-only.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn node_require_from_the_tops_node_modules_is_read_only() {
    if !present(NODE, "Node's require") {
        return;
    }
    case(
        "node require",
        &|s| {
            std::fs::create_dir_all(s.repo.join("tools")).unwrap();
            std::fs::create_dir_all(s.repo.join("node_modules/helper")).unwrap();
            std::fs::write(
                s.repo.join("tools/fsm.js"),
                "require('helper'); process.exit(0);\n",
            )
            .unwrap();
            std::fs::write(
                s.repo.join("node_modules/helper/index.js"),
                "module.exports = 1;\n",
            )
            .unwrap();
            std::fs::write(s.repo.join(".gitignore"), "node_modules/\n").unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "tools"]);
            s.plain(&["config", "core.fsmonitor", "node tools/fsm.js"]);
        },
        &|mark| {
            format!(
                "printf 'require(\"fs\").writeFileSync(\"{}\", \"x\");\\n' > node_modules/helper/index.js; echo w=$?",
                mark.display()
            )
        },
    );
}

/// R9-11: `core.fsmonitor = .venv/bin/fsmtool`, a console script of a venv in the work tree
/// (`#!<top>/.venv/bin/python`, the shape of every pip-installed tool), `.venv/` ignored. The
/// agent drops `zz.pth` in `site-packages/` (Python's `site` runs its `import` line at every
/// start); in the sandbox the whole venv is read-only.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_venvs_site_packages_pth_is_read_only() {
    if !present(PYTHON, "a venv's site-packages") {
        return;
    }
    case(
        "venv .pth",
        &|s| {
            std::fs::write(s.repo.join(".gitignore"), ".venv/\n").unwrap();
            s.plain(&["add", "."]);
            s.plain(&["commit", "-q", "-m", "ignore"]);
            let o = Command::new(PYTHON)
                .args(["-m", "venv", "--without-pip", ".venv"])
                .current_dir(&s.repo)
                .output()
                .unwrap();
            assert!(o.status.success(), "venv: {o:?}");
            std::fs::write(
                s.repo.join(".venv/bin/fsmtool"),
                format!(
                    "#!{}/.venv/bin/python\nimport sys\nsys.exit(0)\n",
                    s.repo.display()
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                s.repo.join(".venv/bin/fsmtool"),
                std::fs::Permissions::from_mode(0o755),
            )
            .unwrap();
            s.plain(&["config", "core.fsmonitor", ".venv/bin/fsmtool"]);
        },
        &|mark| {
            format!(
                "echo 'import os; open(\"{}\", \"w\")' > \"$(ls -d .venv/lib/python3*/site-packages)/zz.pth\"; echo w=$?",
                mark.display()
            )
        },
    );
}

/// R9-7: the owner's pre-commit hook `exec python3 -m pytest -q` (a tool installed outside the
/// repository) has the top first on `sys.path`; no bind can make the top read-only, so the
/// plan lists it in `unguarded[]`, and `wt-check check` reports a module the agent plants
/// there (`pytest.py`). Positive control: the owner's plain `git commit` runs it. Both gits.
#[test]
fn a_module_planted_at_the_top_for_python_m_is_reported_by_check() {
    if !present(PYTHON, "python -m") {
        return;
    }
    let (shim, _) = bins();
    let wt_check = shim.parent().unwrap().join("wt-check");
    for g in gits() {
        let s = Session::new(&g);
        let mark = s.home.join("FIRED");
        let hook = s.repo.join(".git/hooks/pre-commit");
        std::fs::write(&hook, "#!/bin/sh\nexec /usr/bin/python3 -m pytest -q\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(s.home.join("src/proj-worktrees/s1")).unwrap();
        let state = s.home.join("var/pin.json");
        let run = |args: &[&str]| {
            Command::new(&wt_check)
                .env("HOME", &s.home)
                .env("PATH", "/usr/bin:/bin")
                .args(args)
                .arg(&s.repo)
                .output()
                .unwrap()
        };
        let plan = run(&["plan", "--session", "s1"]);
        assert!(plan.status.success(), "plan: {plan:?}");
        let j: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let top = s.repo.display().to_string();
        assert!(
            j["unguarded"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u["path"] == top.as_str() && u["key"] == "hook pre-commit"),
            "{}",
            j["unguarded"]
        );
        let st = state.display().to_string();
        let pin = run(&["pin", "--state", &st, "--session", "s1", "--accept-armed"]);
        assert!(pin.status.success(), "pin: {pin:?}");
        // An honest turn: nothing reported.
        let clean = run(&["check", "--state", &st]);
        assert_eq!(clean.status.code(), Some(0), "{clean:?}");
        // The agent's turn (no sandbox needed: the top is writable in it too).
        std::fs::write(
            s.repo.join("pytest.py"),
            format!("open({:?}, 'w')\n", mark.display().to_string()),
        )
        .unwrap();
        let c = run(&["check", "--state", &st]);
        let out = String::from_utf8_lossy(&c.stdout).into_owned();
        assert_eq!(c.status.code(), Some(1), "{g:?}: {out}");
        assert!(out.contains("work_tree_program_changed"), "{out}");
        // Positive control: the owner's commit runs the planted module.
        std::fs::write(s.repo.join("a.txt"), "b\n").unwrap();
        let _ = Command::new(&s.git)
            .env_clear()
            .env("HOME", &s.home)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&s.repo)
            .args(["commit", "-qam", "x"])
            .output()
            .unwrap();
        assert!(mark.exists(), "control did not fire on {g:?}");
    }
}
