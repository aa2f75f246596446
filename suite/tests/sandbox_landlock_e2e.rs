//! End to end on real bubblewrap: the sandbox's special-file rule (Landlock, docs/sandbox-plan.md
//! "special files"). A FIFO at a name git opens hangs the owner's git (red-team rows R6-4,
//! R7-4, R8-3, R9-5, R9-13); under `agent-shell --sandbox bwrap` the agent cannot make one in
//! the work tree, git dir, worktree entry or its worktree folder, while a FIFO in the
//! sandbox's private `/tmp` and `/dev/shm` still works (GNU make's jobserver, tests).
//!
//! Positive control on each git: outside the sandbox, `mkfifo d/.gitattributes` (and
//! `d/.gitignore`) makes plain `git status` hang (ended by `timeout`, status 124).
//!
//! If bwrap is missing or cannot create namespaces here, the tests are compiled as ignored
//! with the reason (build.rs, `gitward_no_bwrap`); under `CI=true` they run and fail. A kernel
//! without Landlock ABI 2: SKIPPED with the reason, a failure under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "common/sandboxed.rs"]
mod sandboxed;
use sandboxed::{bins, gits};

const TIMEOUT: &str = "/usr/bin/timeout";

/// Can this kernel enforce the rule? Else say SKIPPED (a failure under CI=true).
fn landlock_here() -> bool {
    let abi = gitward::sandbox::landlock::abi();
    if abi >= gitward::plan::landlock::MIN_ABI {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "this kernel offers Landlock ABI {abi} (CI=true: the special-file rule must be tested)"
    );
    eprintln!("SKIPPED: this kernel offers Landlock ABI {abi}; the rule needs 2");
    false
}

struct Session {
    _t: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    policy: PathBuf,
    git: PathBuf,
}

impl Session {
    /// A repository with a tracked `d/x` in `<base>/home/src/proj`, a policy outside every
    /// writable root, the shim installed by the "orchestrator".
    fn new(t: tempfile::TempDir, git: &Path, policy_extra: &str) -> Session {
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let repo = home.join("src/proj");
        for d in [&repo.join("d"), &home.join("etc")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Agent\n\temail = agent@example.com\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        let policy = home.join("etc/policy.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"{}\"\nreal_git = \"{}\"\n{policy_extra}\n",
                repo.display(),
                git.display()
            ),
        )
        .unwrap();
        let s = Session {
            _t: t,
            base,
            home,
            repo,
            policy,
            git: git.to_path_buf(),
        };
        s.plain(&["init", "-q"]);
        std::fs::write(s.repo.join("d/x"), "a\n").unwrap();
        s.plain(&["add", "d/x"]);
        s.plain(&["commit", "-q", "-m", "first"]);
        let (shim, _) = bins();
        let o = Command::new(shim)
            .env("HOME", &s.home)
            .env("PATH", "/usr/bin:/bin")
            .arg("--install")
            .arg(s.home.join(".local/state/gitward/s1/bin"))
            .arg("--policy")
            .arg(&s.policy)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        s
    }

    fn plain(&self, args: &[&str]) -> String {
        let o = self.owner_git(args, 30);
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The owner's plain git, ended after `secs` (status 124 when it hung).
    fn owner_git(&self, args: &[&str], secs: u32) -> Output {
        Command::new(TIMEOUT)
            .arg(secs.to_string())
            .arg(&self.git)
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.repo)
            .output()
            .unwrap()
    }

    /// `agent-shell --sandbox bwrap -c SCRIPT` in the repository.
    fn agent(&self, script: &str) -> Output {
        let (_, shell) = bins();
        Command::new(shell)
            .current_dir(&self.repo)
            .env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", "/usr/bin:/bin")
            .args(["--sandbox", "bwrap", "--policy"])
            .arg(&self.policy)
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }
}

fn step<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("step {name} missing from:\n{out}"))
        .trim()
}

/// Each attempt prints `name=<status> <first line of stderr>`.
const ATTEMPTS: &str = r##"
try() { name=$1; shift; err=$("$@" 2>&1 >/dev/null); echo "$name=$? $(printf '%s' "$err" | head -n 1)"; }
step() { name=$1; shift; "$@" >/dev/null 2>&1; echo "$name=$?"; }
echo b >> d/x
step wt_add git worktree add -q -b feat ../proj-worktrees/s1/feat
try f_sub_attributes mkfifo d/.gitattributes
try f_sub_gitignore mkfifo d/.gitignore
try f_top_mailmap mkfifo .mailmap
try f_new_folder sh -c 'mkdir -p e/f && mkfifo e/f/.gitignore'
try f_index sh -c 'mv .git/index .git/index.keep && mkfifo .git/index; s=$?; [ -e .git/index ] || mv .git/index.keep .git/index; exit $s'
try f_packed_refs mkfifo .git/packed-refs
try f_entry_head sh -c 'e=.git/worktrees/feat; mv $e/HEAD $e/HEAD.keep && mkfifo $e/HEAD; s=$?; [ -e $e/HEAD ] || mv $e/HEAD.keep $e/HEAD; exit $s'
try f_worktree sh -c 'mkfifo ../proj-worktrees/s1/feat/.gitattributes'
try f_session_dir mkfifo ../proj-worktrees/s1/.gitignore
try f_mknod_python python3 -c 'import os, sys
try:
    os.mkfifo("d/.gitignore")
except OSError as e:
    sys.exit(e.strerror)'
try f_moved_from_tmp sh -c 'mkfifo /tmp/moved && mv /tmp/moved d/.gitignore'
try f_linked_from_tmp sh -c 'mkfifo /tmp/linked && ln /tmp/linked d/.gitignore'
try f_char_device mknod d/.gitattributes c 1 3
try f_sock_mknod python3 -c 'import os,stat; os.mknod("d/sock", stat.S_IFSOCK|0o600)'
step tmp_fifo sh -c 'mkfifo /tmp/ok && rm /tmp/ok'
step shm_fifo sh -c 'mkfifo /dev/shm/ok && rm /dev/shm/ok'
step make_jobserver_fifo sh -c 'f="${TMPDIR:-/tmp}/GMfifo$$"; mkfifo "$f" && rm "$f"'
printf 'all: a b\na:\n\t@echo a > /dev/null\nb:\n\t@echo b > /dev/null\n' > /tmp/Makefile
step make_j2 make -s -j2 -f /tmp/Makefile
step commit git commit -q -am agent-commit
cd ../proj-worktrees/s1/feat && echo f > f.txt
step wt_commit_add git add f.txt
step wt_commit git commit -q -m worktree-commit
cd - >/dev/null
step wt_remove git worktree remove ../proj-worktrees/s1/feat
step status git status --short
"##;

/// Every attempt at a name git opens fails; the scripted agent's work succeeds; the owner's
/// git afterwards does not hang. Both gits, repository outside `/tmp` (`/tmp` allowed).
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn the_agent_cannot_make_a_fifo_where_git_opens_one() {
    if !landlock_here() {
        return;
    }
    for git in gits() {
        // Outside /tmp when the target folder is (a work tree under /tmp withholds /tmp).
        let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let s = Session::new(t, &git, "");
        let ctx = |o: &Output| {
            format!(
                "{}:\n{}\n{}",
                git.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        };
        // Positive control: a FIFO in a subfolder hangs the owner's git status.
        // Same size, new content: git must read it, and so the attributes of `d/`.
        std::fs::write(s.repo.join("d/x"), "b\n").unwrap();
        for name in ["d/.gitattributes", "d/.gitignore"] {
            nix::unistd::mkfifo(
                &s.repo.join(name),
                nix::sys::stat::Mode::from_bits_truncate(0o644),
            )
            .unwrap();
            let o = s.owner_git(&["status", "--short"], 3);
            assert_eq!(
                o.status.code(),
                Some(124),
                "control: {name} as a FIFO did not hang plain git status ({})",
                ctx(&o)
            );
            std::fs::remove_file(s.repo.join(name)).unwrap();
        }
        s.plain(&["checkout", "-q", "--", "d/x"]);

        let out = s.agent(ATTEMPTS);
        let text = ctx(&out);
        assert!(out.status.success(), "{text}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        for name in [
            "f_sub_attributes",
            "f_sub_gitignore",
            "f_top_mailmap",
            "f_new_folder",
            "f_index",
            "f_packed_refs",
            "f_entry_head",
            "f_worktree",
            "f_session_dir",
            "f_mknod_python",
            "f_moved_from_tmp",
            "f_linked_from_tmp",
            "f_char_device",
        ] {
            let line = step(&stdout, name);
            assert!(!line.starts_with("0 "), "{name} succeeded: {line}\n{text}");
            assert!(
                line.contains("Permission denied")
                    || line.contains("Operation not permitted")
                    || line.contains("Invalid cross-device link"),
                "{name}: {line}\n{text}"
            );
        }
        // The refusal is Landlock's EACCES, not a read-only mount.
        assert!(
            step(&stdout, "f_sub_attributes").contains("Permission denied"),
            "{text}"
        );
        // Socket files are not handled: they cannot hang git (ENXIO) and test suites bind them.
        assert_eq!(step(&stdout, "f_sock_mknod"), "0", "{text}");
        std::fs::remove_file(s.repo.join("d/sock")).unwrap();
        // /tmp is withheld when this checkout (and so the repository) lies below it: see
        // `a_work_tree_under_tmp_withholds_tmp`.
        let tmp_ok = if s.base.starts_with("/tmp") { "1" } else { "0" };
        assert_eq!(step(&stdout, "tmp_fifo"), tmp_ok, "{text}");
        assert_eq!(step(&stdout, "make_jobserver_fifo"), tmp_ok, "{text}");
        for name in [
            "wt_add",
            "shm_fifo",
            "make_j2",
            "commit",
            "wt_commit_add",
            "wt_commit",
            "wt_remove",
            "status",
        ] {
            assert_eq!(step(&stdout, name), "0", "{name}\n{text}");
        }
        // No special file where git opens one; the owner's git ends.
        for name in [
            "d/.gitattributes",
            "d/.gitignore",
            ".mailmap",
            ".git/packed-refs",
        ] {
            let m = std::fs::symlink_metadata(s.repo.join(name));
            assert!(
                m.as_ref().map_or(true, |m| m.is_file()),
                "{name}: {m:?}\n{text}"
            );
        }
        let o = s.owner_git(&["status", "--short"], 10);
        assert!(
            o.status.success(),
            "owner's git status after the turn: {}",
            ctx(&o)
        );
        assert!(
            s.plain(&["log", "--format=%s"]).contains("agent-commit"),
            "{text}"
        );
    }
}

/// A work tree under `/tmp`: Landlock cannot deny beneath an allowed folder, so `/tmp` gets
/// no FIFO rule at all — a FIFO is refused there too, and in the work tree; `/dev/shm` stays
/// allowed; GNU make still runs `-j2`. `wt-check plan` says which tree was withheld.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn a_work_tree_under_tmp_withholds_tmp() {
    if !landlock_here() {
        return;
    }
    let git = gits().into_iter().next().unwrap();
    let t = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let s = Session::new(t, &git, "");
    assert!(s.base.starts_with("/tmp"), "{}", s.base.display());
    std::fs::create_dir_all(s.home.join("src/proj-worktrees/s1")).unwrap();
    let plan = gitward::plan::plan(&gitward::plan::PlanOptions {
        repo: s.repo.clone(),
        session: Some("s1".into()),
        ..gitward::plan::PlanOptions::default()
    })
    .unwrap();
    assert!(
        plan.landlock
            .withheld
            .iter()
            .any(|w| w.path == Path::new("/tmp")),
        "{:?}",
        plan.landlock
    );
    let out = s.agent(
        "mkfifo /tmp/f 2>&1; echo tmp=$?; mkfifo d/.gitignore 2>&1; echo wt=$?; \
         mkfifo /dev/shm/f && echo shm=0; \
         printf 'all: a b\\na:\\n\\t@true\\nb:\\n\\t@true\\n' > /dev/shm/M; make -s -j2 -f /dev/shm/M; echo make=$?",
    );
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("tmp=1"), "{text}");
    assert!(text.contains("wt=1"), "{text}");
    assert!(text.contains("shm=0"), "{text}");
    assert!(text.contains("make=0"), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
}

/// `landlock = "off"` in the policy: no ruleset (the FIFO is made), and the plan says so.
#[test]
#[cfg_attr(
    gitward_no_bwrap,
    ignore = "bubblewrap (/usr/bin/bwrap) is missing or cannot create namespaces here; CI=true runs it and fails"
)]
fn the_policy_can_turn_the_rule_off() {
    let git = gits().into_iter().next().unwrap();
    let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let s = Session::new(t, &git, "landlock = \"off\"");
    let out = s.agent("mkfifo d/.gitattributes; echo made=$?");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("made=0"), "{text}");
    std::fs::remove_file(s.repo.join("d/.gitattributes")).unwrap();
}
