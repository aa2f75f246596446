//! safe-git's CPU bound (red team R17-3, `gitward::safegit::cpu`): a git that would spin —
//! `git status` re-hashing a tracked file grown to a *sparse* 16 GiB file whose size modulo
//! 2³² equals its index entry's — ends by `SIGXCPU` under `--cpu-limit 1` on both gits, and
//! runs on without it (the positive control); a lower inherited limit is kept; `0` sets
//! none; the default applies when neither the option nor `SAFE_GIT_CPU_LIMIT` is given;
//! `--explain` says what applies. The sparse file takes a few KiB of disk and goes with its
//! temporary folder.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn gits() -> Vec<PathBuf> {
    ["/usr/bin/git", "/usr/local/bin/git"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect()
}

fn safe_git_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_safe-git"))
}

/// A repository whose tracked `big` (one byte committed) is now a sparse file of 16 GiB + 1
/// byte: same size modulo 2³², another mtime, so `git status` reads and hashes all of it.
fn spinning_repo(git: &Path) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let r = t.path().join("repo");
    let run = |args: &[&str]| {
        let st = Command::new(git)
            .args(args)
            .current_dir(t.path())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(st.success(), "{args:?}");
    };
    run(&["init", "-q", "repo"]);
    std::fs::write(r.join("big"), "x").unwrap();
    run(&["-C", "repo", "add", "big"]);
    run(&[
        "-C",
        "repo",
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-qm",
        "one",
    ]);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(r.join("big"))
        .unwrap();
    f.set_len((16u64 << 30) + 1).unwrap(); // sparse: no block written
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .unwrap();
    drop(f);
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(r.join("big")).unwrap();
    assert!(md.blocks() * 512 < 1 << 20, "the file must stay sparse");
    (t, r)
}

fn safe_git(home: &Path, git: &Path, repo: &Path) -> Command {
    let mut c = Command::new(safe_git_bin());
    c.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("SAFE_GIT_GIT", git)
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Wait for `child`, at most `limit` of wall time: its status, or `None` (then it is killed).
fn wait_at_most(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// CPU seconds (user + system) the process has used so far, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // Fields 14 and 15 of proc(5) (utime, stime), here 11 and 12 after the name.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Generous for a loaded 2-core machine: a bound of 1 CPU second ends well within it.
const WALL: Duration = Duration::from_secs(90);

#[test]
fn a_spinning_status_ends_by_sigxcpu_and_runs_on_without_the_bound() {
    for git in gits() {
        let (t, repo) = spinning_repo(&git);
        let home = t.path().join("home");
        // Bounded: killed by SIGXCPU, in bounded wall time.
        let start = Instant::now();
        let mut child = safe_git(&home, &git, &repo)
            .args(["--cpu-limit", "1", "status"])
            .spawn()
            .unwrap();
        let st = wait_at_most(&mut child, WALL).unwrap_or_else(|| {
            panic!(
                "{}: safe-git --cpu-limit 1 status still ran after {WALL:?}",
                git.display()
            )
        });
        assert_eq!(
            st.signal(),
            Some(nix::sys::signal::Signal::SIGXCPU as i32),
            "{}: {st:?}",
            git.display()
        );
        eprintln!(
            "{}: bounded run ended by SIGXCPU after {:?} wall",
            git.display(),
            start.elapsed()
        );

        // Positive control: with `--cpu-limit 0` the same git is still hashing after using
        // three times the bound's CPU time.
        let mut child = safe_git(&home, &git, &repo)
            .args(["--cpu-limit", "0", "status"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = Instant::now();
        let mut ran_past = false;
        while start.elapsed() < WALL {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if cpu_seconds(pid).is_some_and(|c| c >= 3.0) {
                ran_past = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            ran_past,
            "{}: without the bound git should still spin after 3 CPU seconds",
            git.display()
        );
    }
}

/// `SAFE_GIT_CPU_LIMIT` gives the bound when the option does not.
#[test]
fn the_environment_variable_bounds_too() {
    let git = gits().pop().expect("a git");
    let (t, repo) = spinning_repo(&git);
    let mut child = safe_git(&t.path().join("home"), &git, &repo)
        .env("SAFE_GIT_CPU_LIMIT", "1")
        .arg("status")
        .spawn()
        .unwrap();
    let st = wait_at_most(&mut child, WALL).expect("ends");
    assert_eq!(
        st.signal(),
        Some(nix::sys::signal::Signal::SIGXCPU as i32),
        "{st:?}"
    );
}

/// A lower limit the caller set (here soft 1 s, hard 3 s) is kept under a larger asked one:
/// git still ends by SIGXCPU at about 1 s, and `--explain` shows the inherited limits kept.
#[test]
fn a_lower_inherited_limit_is_kept() {
    let git = gits().pop().expect("a git");
    let (t, repo) = spinning_repo(&git);
    let home = t.path().join("home");
    let lowered = |c: &mut Command| {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            c.pre_exec(|| {
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CPU, 1, 3)
                    .map_err(std::io::Error::from)
            });
        }
    };
    let mut c = safe_git(&home, &git, &repo);
    c.args(["--cpu-limit", "100", "status"]);
    lowered(&mut c);
    let mut child = c.spawn().unwrap();
    let st = wait_at_most(&mut child, WALL).expect("the inherited 1 s bound ends it");
    assert_eq!(
        st.signal(),
        Some(nix::sys::signal::Signal::SIGXCPU as i32),
        "{st:?}"
    );

    let mut c = safe_git(&home, &git, &repo);
    c.args([
        "--cpu-limit",
        "100",
        "--explain",
        "--format",
        "json",
        "status",
    ])
    .stdout(Stdio::piped());
    lowered(&mut c);
    let out = c.output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cpu_limit"]["asked"], 100);
    assert_eq!(v["cpu_limit"]["soft"], 1);
    assert_eq!(v["cpu_limit"]["hard"], 3);
}

fn explain(extra_env: &[(&str, &str)], args: &[&str]) -> serde_json::Value {
    let git = gits().pop().expect("a git");
    let t = tempfile::tempdir().unwrap();
    let mut c = safe_git(t.path(), &git, t.path());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = c
        .args(["--explain", "--format", "json"])
        .args(args)
        .arg("version")
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["cpu_limit"].clone()
}

/// No option, no variable: the documented default, with the kernel's SIGKILL 5 s above it.
#[test]
fn the_default_applies_and_explain_shows_it() {
    let d = gitward::safegit::cpu::DEFAULT_CPU_LIMIT;
    let v = explain(&[], &[]);
    assert_eq!(v["asked"], d);
    assert_eq!(v["default"], true);
    assert_eq!(v["soft"], d);
    assert_eq!(v["hard"], d + gitward::safegit::cpu::GRACE);
    // The option beats the variable; both beat the default.
    let v = explain(&[("SAFE_GIT_CPU_LIMIT", "42")], &[]);
    assert_eq!(
        (v["soft"].clone(), v["default"].clone()),
        (42.into(), false.into())
    );
    let v = explain(&[("SAFE_GIT_CPU_LIMIT", "42")], &["--cpu-limit", "7"]);
    assert_eq!(v["soft"], 7);
    // The human form names it.
    let git = gits().pop().expect("a git");
    let t = tempfile::tempdir().unwrap();
    let out = safe_git(t.path(), &git, t.path())
        .args(["--explain", "version"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("cpu limit:  {d} s CPU (then SIGXCPU, status 152)")),
        "{text}"
    );
}

/// `0`: no bound of safe-git's own (the inherited limits, here none, stay).
#[test]
fn zero_sets_none() {
    let v = explain(&[], &["--cpu-limit", "0"]);
    assert_eq!(v["asked"], 0);
    assert!(v["soft"].is_null() && v["hard"].is_null(), "{v}");
    let v = explain(&[("SAFE_GIT_CPU_LIMIT", "0")], &[]);
    assert!(v["soft"].is_null(), "{v}");
}

/// A value that is not a number of seconds is a usage error (120), not "no bound".
#[test]
fn a_bad_value_is_refused() {
    let git = gits().pop().expect("a git");
    let t = tempfile::tempdir().unwrap();
    for (env, arg) in [(None, Some("x")), (Some("-1"), None), (Some(""), None)] {
        let mut c = safe_git(t.path(), &git, t.path());
        if let Some(e) = env {
            c.env("SAFE_GIT_CPU_LIMIT", e);
        }
        if let Some(a) = arg {
            c.args(["--cpu-limit", a]);
        }
        let st = c.arg("version").status().unwrap();
        assert_eq!(st.code(), Some(120), "{env:?} {arg:?}");
    }
}

/// `would-lose-work`'s own gits run under the bound (set on safe-git's process, inherited):
/// a git step that spins ends by SIGXCPU and the answer is "cannot tell" (2), naming the
/// limit — not a step read as a negative answer. The spinning git is a script in front of
/// the real one that loops on `ls-files`. Positive control: with `--cpu-limit 0` it is
/// still running after the bound's wall time many times over.
#[test]
fn would_lose_work_says_cannot_tell_when_a_git_step_passes_the_bound() {
    use std::os::unix::fs::PermissionsExt;
    let git = gits().pop().expect("a git");
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("home")).unwrap();
    let repo = t.path().join("small");
    let st = Command::new(&git)
        .args(["init", "-q"])
        .arg(&repo)
        .env("HOME", t.path().join("home"))
        .status()
        .unwrap();
    assert!(st.success());
    let version = Command::new(&git).arg("--version").output().unwrap().stdout;
    let fake = t.path().join("bin/git");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *--version*) printf '%s' '{}'; exit 0;;\n  *ls-files*) while :; do :; done;;\nesac\nexec '{}' \"$@\"\n",
            String::from_utf8_lossy(&version),
            git.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = t.path().join("home");

    let out = safe_git(&home, &fake, t.path())
        .args(["--cpu-limit", "1", "would-lose-work"])
        .arg(&repo)
        .stderr(Stdio::piped())
        .process_group(0)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("was killed by signal 24 (the CPU limit"),
        "{err}"
    );

    let mut child = safe_git(&home, &fake, t.path())
        .args(["--cpu-limit", "0", "would-lose-work"])
        .arg(&repo)
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    std::thread::sleep(Duration::from_secs(5));
    let still = child.try_wait().unwrap().is_none();
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    assert!(
        still,
        "without the bound the spinning step should still run"
    );
}

/// `would-lose-work` does not read a tracked file further than something git produced is
/// long: its own comparison of the 16 GiB sparse `big` (blob: one byte) reads none of it, so
/// under a 2 s bound that hashing the file would pass, safe-git gets as far as its
/// `git status` step — which re-hashes the file (git's racy-stat refresh) and ends by SIGXCPU:
/// "cannot tell" (2), naming that step; were safe-git's own hashing to spin, safe-git itself
/// would end by SIGXCPU (152) with nothing said. Positive control: `git hash-object` of the
/// same file under the same bound ends by SIGXCPU (reading it costs more than the bound).
#[test]
fn would_lose_work_does_not_read_a_huge_sparse_file() {
    let git = gits().pop().expect("a git");
    let (t, repo) = spinning_repo(&git);
    let out = safe_git(&t.path().join("home"), &git, t.path())
        .args(["--cpu-limit", "2", "would-lose-work"])
        .arg(&repo)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        err.contains("cannot tell: git status") && err.contains("killed by signal 24"),
        "{err}"
    );

    let mut c = Command::new(&git);
    c.arg("hash-object")
        .arg(repo.join("big"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CPU, 2, 4)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = c.spawn().unwrap();
    let st = wait_at_most(&mut child, WALL).expect("ends");
    assert_eq!(
        st.signal(),
        Some(nix::sys::signal::Signal::SIGXCPU as i32),
        "{st:?}"
    );
}

/// Under a CPU bound git runs with no core file allowed (`SIGXCPU` would write one in the
/// agent's work tree, the host script's environment in it); with `--cpu-limit 0` the
/// inherited core limit is left as it was. Read from git's own `/proc/self/limits` through a
/// stand-in git that answers the version probe and prints them for `rev-parse`.
#[test]
fn no_core_file_under_the_bound() {
    use std::os::unix::fs::PermissionsExt;
    let git = gits().pop().expect("a git");
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let repo = t.path().join("small");
    assert!(Command::new(&git)
        .args(["init", "-q"])
        .arg(&repo)
        .env("HOME", &home)
        .status()
        .unwrap()
        .success());
    let version = Command::new(&git).arg("--version").output().unwrap().stdout;
    let fake = t.path().join("bin/git");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *--version*) printf '%s' '{}'; exit 0;;\n  *rev-parse*) grep 'Max core file size' /proc/self/limits; exit 0;;\nesac\nexec '{}' \"$@\"\n",
            String::from_utf8_lossy(&version),
            git.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // safe-git starts with core files allowed (soft = the hard limit), so that a limit it
    // set and one it left can be told apart.
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, core_hard) = getrlimit(Resource::RLIMIT_CORE).unwrap();
    assert!(
        core_hard > 0,
        "core files cannot be allowed here: the test cannot tell"
    );
    let core_soft = |args: &[&str]| {
        use std::os::unix::process::CommandExt;
        let mut c = safe_git(&home, &fake, &repo);
        c.args(args)
            .args(["rev-parse", "HEAD"])
            .stdout(Stdio::piped());
        // SAFETY: only an async-signal-safe system call between fork and exec.
        unsafe {
            c.pre_exec(move || {
                setrlimit(Resource::RLIMIT_CORE, core_hard, core_hard).map_err(std::io::Error::from)
            });
        }
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let soft = text.split_whitespace().nth(4).unwrap_or("").to_owned();
        (soft, text)
    };
    let (soft, text) = core_soft(&["--cpu-limit", "30"]);
    assert_eq!(soft, "0", "{text}");
    // Positive control: without a bound the allowed core size reaches git.
    let (soft, text) = core_soft(&["--cpu-limit", "0"]);
    assert_ne!(soft, "0", "{text}");
    assert!(!soft.is_empty(), "{text}");
}
