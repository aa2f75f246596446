//! End-to-end tests of the safe-git binary: conventions (help, version, man page,
//! completions), refusals (one line, documented code, event), and git's status passed through.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn gits() -> Vec<PathBuf> {
    ["/usr/bin/git", "/usr/local/bin/git"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect()
}

/// A fresh repository with one commit, made with `git`, in an isolated HOME.
fn repo(git: &Path) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = T\n\temail = t@example.com\n",
    )
    .unwrap();
    let r = t.path().join("repo");
    let run = |args: &[&str]| {
        // Nothing from the caller's environment (a GIT_DIR or GIT_CONFIG_* of a CI job or
        // a hook would point git elsewhere).
        let st = std::process::Command::new(git)
            .args(args)
            .current_dir(t.path())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LC_ALL", "C")
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(st.success(), "{args:?}");
    };
    run(&["init", "-q", "repo"]);
    std::fs::write(r.join("a.txt"), "a\n").unwrap();
    run(&["-C", "repo", "add", "a.txt"]);
    run(&["-C", "repo", "commit", "-qm", "one"]);
    (t, r)
}

fn safe_git(home: &Path) -> Command {
    let mut c = Command::cargo_bin("safe-git").unwrap();
    c.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LC_ALL", "C");
    c
}

#[test]
fn help_shows_examples_and_exit_codes() {
    Command::cargo_bin("safe-git")
        .unwrap()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("EXAMPLES:"))
        .stdout(predicate::str::contains("safe-git status --porcelain"))
        .stdout(predicate::str::contains("121 not allowed"));
}

#[test]
fn version_man_page_and_completions() {
    Command::cargo_bin("safe-git")
        .unwrap()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("safe-git "));
    Command::cargo_bin("safe-git")
        .unwrap()
        .args(["--generate", "man"])
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH safe-git"));
    for shell in ["bash", "zsh", "fish"] {
        Command::cargo_bin("safe-git")
            .unwrap()
            .args(["--generate", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("safe-git"));
    }
}

#[test]
fn refusals_are_one_line_with_documented_codes() {
    for git in gits() {
        let (t, r) = repo(&git);
        let home = t.path().join("home");
        let cases: &[(&[&str], i32, &str)] = &[
            (&["commit", "-m", "x"], 121, "not-allowed"),
            (&["st"], 121, "not-allowed"),
            (
                &["-c", "core.fsmonitor=touch /tmp/x", "status"],
                121,
                "core.fsmonitor",
            ),
            (&["--exec-path=/tmp", "status"], 121, "--exec-path"),
            (&["config", "core.hooksPath", "/tmp"], 121, "may only read"),
            (&["branch", "-D", "main"], 121, "listing"),
            (&["worktree", "add", "../x"], 121, "worktree list"),
            (&["--no-pager"], 120, "no subcommand"),
        ];
        for (args, code, needle) in cases {
            let out = safe_git(&home)
                .arg("--git")
                .arg(&git)
                .args(*args)
                .current_dir(&r)
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(*code),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
            assert!(err.starts_with("safe-git: refused ("), "{err}");
            assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
            assert!(out.stdout.is_empty());
        }
    }
}

#[test]
fn git_exit_status_and_output_pass_through() {
    for git in gits() {
        let (t, r) = repo(&git);
        let home = t.path().join("home");
        safe_git(&home)
            .arg("--git")
            .arg(&git)
            .args(["rev-parse", "--verify", "-q", "no-such-ref"])
            .current_dir(&r)
            .assert()
            .code(1);
        safe_git(&home)
            .arg("--git")
            .arg(&git)
            .args(["log", "--format=%s"])
            .current_dir(&r)
            .assert()
            .success()
            .stdout("one\n");
    }
}

#[test]
fn explain_shows_the_plan_and_runs_nothing() {
    let git = &gits()[0];
    let (t, r) = repo(git);
    let home = t.path().join("home");
    let out = safe_git(&home)
        .arg("--git")
        .arg(git)
        .args(["--explain", "--format", "json", "status"])
        .current_dir(&r)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let config: Vec<String> = v["config"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}={}",
                c["key"].as_str().unwrap(),
                c["value"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        config.contains(&"core.fsmonitor=false".to_owned()),
        "{config:?}"
    );
    assert!(config.contains(&"core.hooksPath=/dev/null".to_owned()));
    assert_eq!(
        v["repository"]["work_tree"].as_str().map(Path::new),
        Some(r.canonicalize().unwrap().as_path())
    );
    let argv: Vec<&str> = v["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv.last(), Some(&"status"));
}

#[test]
fn events_are_written_for_allowed_and_refused_calls() {
    let git = &gits()[0];
    let (t, r) = repo(git);
    let home = t.path().join("home");
    let log = t.path().join("events.jsonl");
    safe_git(&home)
        .arg("--git")
        .arg(git)
        .arg("--events")
        .arg(&log)
        .arg("status")
        .current_dir(&r)
        .assert()
        .success();
    safe_git(&home)
        .arg("--git")
        .arg(git)
        .arg("--events")
        .arg(&log)
        .arg("push")
        .current_dir(&r)
        .assert()
        .code(121);
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["event"], "git_allowed");
    assert_eq!(events[0]["tool"], "safe-git");
    assert_eq!(events[1]["event"], "git_refused");
    assert_eq!(events[1]["rule"], "not-allowed");
    assert_eq!(events[1]["exit_code"], 121);
}

/// A full disk is one line on stderr and the setup code, not a panic (exit 101).
#[test]
fn explain_to_a_full_disk_is_an_error_line() {
    if !Path::new("/dev/full").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "/dev/full is missing"
        );
        eprintln!("skipped: /dev/full is missing");
        return;
    }
    let git = &gits()[0];
    let (t, r) = repo(git);
    let home = t.path().join("home");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_safe-git"))
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LC_ALL", "C")
        .arg("--git")
        .arg(git)
        .args(["--explain", "status"])
        .current_dir(&r)
        .stdout(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A full disk: one line on stderr and a documented code, never a panic. `--explain` and the
/// help are safe-git's own output (124, setup); would-lose-work's answer that cannot be
/// written is "cannot tell" (2), so the worktree is kept.
#[test]
fn a_full_disk_is_one_error_line_never_a_panic() {
    use assert_cmd::prelude::*;
    let Some(git) = gits().into_iter().next() else {
        if std::env::var_os("CI").is_some() {
            panic!("no git");
        }
        eprintln!("skipped: no git");
        return;
    };
    let (t, r) = repo(&git);
    let home = t.path().join("home");
    for (args, code) in [
        (vec!["--explain", "status"], 124),
        (vec!["--help"], 124),
        (vec!["--version"], 124),
        (vec!["would-lose-work", r.to_str().unwrap()], 2),
        (
            vec!["would-lose-work", "--format", "json", r.to_str().unwrap()],
            2,
        ),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        std::process::Command::cargo_bin("safe-git")
            .unwrap()
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LC_ALL", "C")
            .current_dir(&r)
            .args(&args)
            .stdout(full)
            .assert()
            .code(code)
            .stderr(
                predicate::str::starts_with("safe-git: cannot write to standard output")
                    .and(predicate::str::contains("panicked").not())
                    .and(predicate::function(|s: &str| s.lines().count() == 1)),
            );
    }
}

/// A FIFO (or a link to one) where git opens a file by name — one the owner's config names
/// (`blame.ignoreRevsFile`, `core.excludesFile`, `mailmap.file`), or `.mailmap` at the top —
/// hangs plain git; safe-git refuses in one line (layout, 122) instead of hanging (seventh
/// red-team pass, R7-4). Positive control per case on every git: plain git is still running
/// after 4 s. Honest control: a real `.git-blame-ignore-revs` gives git's own output.
#[test]
fn a_fifo_git_would_open_is_refused_in_one_line_instead_of_hanging() {
    use std::time::{Duration, Instant};
    for git in gits() {
        let (t, r) = repo(&git);
        let home = t.path().join("home");
        let plain = |args: &[&str]| {
            let mut c = std::process::Command::new(&git);
            c.args(args)
                .current_dir(&r)
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("LC_ALL", "C")
                .env("HOME", &home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
            c
        };
        let hangs = |args: &[&str]| {
            let mut child = plain(args).spawn().unwrap();
            let end = Instant::now() + Duration::from_secs(4);
            while Instant::now() < end {
                if child.try_wait().unwrap().is_some() {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            child.kill().unwrap();
            child.wait().unwrap();
            true
        };
        let fifo = |p: &Path| {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap()
        };
        assert!(
            plain(&["config", "blame.ignoreRevsFile", ".git-blame-ignore-revs"])
                .status()
                .unwrap()
                .success()
        );
        let revs = r.join(".git-blame-ignore-revs");
        std::fs::write(&revs, "# formatting commits\n").unwrap();
        let want = plain(&["blame", "a.txt"]).output().unwrap();
        assert!(want.status.success());
        safe_git(&home)
            .current_dir(&r)
            .args(["blame", "a.txt"])
            .assert()
            .success()
            .stdout(want.stdout);
        let outside = t.path().join("outside-fifo");
        fifo(&outside);
        // (the file, a link to a FIFO outside rather than a FIFO, the owner's command)
        // …and files of the git dir git opens by name (R8-3).
        let cases: [(&str, bool, &[&str]); 9] = [
            (".git-blame-ignore-revs", false, &["blame", "a.txt"]),
            (".mailmap", false, &["log", "-1"]),
            (".myignore", true, &["status", "--short"]),
            (".git/packed-refs", false, &["branch", "--list"]),
            (".git/info/exclude", false, &["status", "--short"]),
            (".git/logs/HEAD", false, &["reflog", "-1"]),
            (".git/shallow", false, &["log", "-1"]),
            (".git/objects/info/alternates", false, &["log", "-1"]),
            // safe-git's own read of the index must not block either (R9-5).
            (".git/index", false, &["status", "--short"]),
        ];
        assert!(
            plain(&["config", "--global", "core.excludesFile", ".myignore"])
                .status()
                .unwrap()
                .success()
        );
        for (file, link, cmd) in cases {
            let p = r.join(file);
            let _ = std::fs::remove_file(&p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if link {
                std::os::unix::fs::symlink(&outside, &p).unwrap();
            } else {
                fifo(&p);
            }
            assert!(
                hangs(cmd),
                "{}: plain git {cmd:?} did not hang on {file}",
                git.display()
            );
            let out = safe_git(&home)
                .current_dir(&r)
                .args(cmd)
                .timeout(Duration::from_secs(30))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(122),
                "{}: {cmd:?}: {err}",
                git.display()
            );
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.contains(p.to_str().unwrap()) && err.contains("fifo"),
                "{err}"
            );
            std::fs::remove_file(&p).unwrap();
            if !file.starts_with(".git/") {
                std::fs::write(&p, "\n").unwrap();
            }
        }
    }
}
