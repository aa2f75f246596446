//! Two copies of git-shim on `PATH` (copies, not links: `--install` copies where it cannot
//! hard-link) and a policy without `real_git`: the first finds the second as "the next git on
//! PATH that is not itself" (device and inode differ). Without `GITWARD_SHIM_EXEC` the two ran
//! each other until the environment outgrew `execve` (`exec`), or without end (`worktree
//! remove`, run as a child). Each call must now stop at once with the one-line error (exit
//! 124); one copy, and a policy naming the real git, keep working; the marker of another
//! process (git's hooks calling `git` again) is ignored.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];

fn gits() -> Vec<PathBuf> {
    let v: Vec<PathBuf> = GITS
        .iter()
        .map(PathBuf::from)
        .filter(|g| g.exists())
        .collect();
    assert!(!v.is_empty(), "no git found at {GITS:?}");
    v
}

struct World {
    _t: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    wt: PathBuf,
    git: PathBuf,
}

/// The exit code, stdout and stderr of `cmd`, which must end within 30 s (a loop of shims
/// would not). Output goes to files: a killed loop's descendants may keep pipes open.
fn bounded(w: &World, mut cmd: Command) -> (Option<i32>, String, String) {
    let out = w.home.join("out");
    let err = w.home.join("err");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{:?} did not end within 30 s (a loop of shims?): {}",
                cmd,
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code(),
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&err).unwrap(),
    )
}

impl World {
    fn new(git: &Path) -> World {
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
        let w = World {
            wt: home.join("src/proj-worktrees/s1"),
            _t: t,
            home,
            repo,
            git: git.to_path_buf(),
        };
        w.plain(&["init", "-q"]);
        w.plain(&["commit", "-q", "--allow-empty", "-m", "first"]);
        w.plain(&["worktree", "add", "-q", w.wt.join("x").to_str().unwrap()]);
        w
    }

    fn plain(&self, args: &[&str]) {
        let o = Command::new(&self.git)
            .env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join("gitconfig"))
            .current_dir(&self.repo)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// A policy file (`extra` appended) and a copy of git-shim installed with it in `dir`
    /// (its own copy of the binary, so `--install`'s hard link makes a file of its own).
    fn install(&self, dir: &str, extra: &str) -> PathBuf {
        let policy = self.home.join(format!("etc/{dir}.toml"));
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"{}\"\n{extra}\n",
                self.repo.display()
            ),
        )
        .unwrap();
        let src = self.home.join(format!("{dir}-src"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_git-shim"), src.join("git-shim")).unwrap();
        let bin = self.home.join(dir);
        let o = Command::new(src.join("git-shim"))
            .env("HOME", &self.home)
            .arg("--install")
            .arg(&bin)
            .arg("--policy")
            .arg(&policy)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        bin.join("git")
    }

    /// `git` as the agent runs it: the first `git` on `PATH`, which is `dirs`' then the real
    /// git's folder.
    fn agent(&self, dirs: &[&Path], args: &[&str]) -> Command {
        self.run(dirs[0], dirs, args)
    }

    /// `prog` with the agent's environment, `dirs`' folders first on `PATH`.
    fn run(&self, prog: &Path, dirs: &[&Path], args: &[&str]) -> Command {
        let mut path: Vec<PathBuf> = dirs.iter().map(|d| d.parent().unwrap().into()).collect();
        path.push(self.git.parent().unwrap().into());
        path.extend(["/usr/bin", "/bin"].map(PathBuf::from));
        let mut c = Command::new(prog);
        c.env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join("gitconfig"))
            .env("PATH", std::env::join_paths(path).unwrap())
            .current_dir(&self.repo)
            .args(args);
        c
    }
}

fn ino(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().ino()
}

fn assert_stopped(w: &World, (code, _, err): (Option<i32>, String, String), a: &Path, b: &Path) {
    assert_eq!(code, Some(124), "{}: {err}", w.git.display());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "git-shim: {}: started as the real git by the git-shim {} ",
            b.display(),
            a.display()
        )),
        "{err}"
    );
    assert!(err.contains("set real_git in the policy"), "{err}");
}

#[test]
fn two_copies_on_path_stop_with_one_error_and_never_loop() {
    for g in gits() {
        let w = World::new(&g);
        let a = w.install("a", "");
        let b = w.install("b", "");
        assert_ne!(
            ino(&a),
            ino(&b),
            "two files, not links: the case under test"
        );
        let head = w.agent(&[&a], &["rev-parse", "HEAD"]);
        // One copy: the real git behind it answers (the control that PATH reaches git).
        let (code, out, err) = bounded(&w, head);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(out.trim().len(), 40, "{out}");
        // Two copies: the first execs the second in its own process, which stops.
        let r = bounded(&w, w.agent(&[&a, &b], &["rev-parse", "HEAD"]));
        assert_stopped(&w, r, &a, &b);
        // A word that may be an alias (asked of "git" as a child first: the question fails,
        // so the call is refused, quoting the second copy's line), and the commands the shim
        // runs as a child (its tidy-up after them): stopped too, never a chain.
        let (code, _, err) = bounded(&w, w.agent(&[&a, &b], &["frobnicate"]));
        assert_eq!(code, Some(124), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("git-shim: refused (setup): cannot ask the real git (git config --null --get-regexp ^alias\\.: git exited 124: git-shim: ")
                && err.contains(&format!(
                    "{}: started as the real git by the git-shim {} ",
                    b.display(),
                    a.display()
                ))
                && err.contains("set real_git in the policy"),
            "{err}"
        );
        let x = w.wt.join("x");
        let r = bounded(
            &w,
            w.agent(&[&a, &b], &["worktree", "remove", x.to_str().unwrap()]),
        );
        assert_stopped(&w, r, &a, &b);
        let y = w.wt.join("y");
        let r = bounded(
            &w,
            w.agent(
                &[&a, &b],
                &["worktree", "move", x.to_str().unwrap(), y.to_str().unwrap()],
            ),
        );
        assert_stopped(&w, r, &a, &b);
        assert!(x.is_dir(), "the worktree is untouched");
        // The same two copies in the other order: the same stop, paths swapped.
        let r = bounded(&w, w.agent(&[&b, &a], &["status"]));
        assert_stopped(&w, r, &b, &a);
        // A policy naming the real git: the second copy is never looked for.
        let c = w.install("c", &format!("real_git = \"{}\"", g.display()));
        let (code, out, err) = bounded(&w, w.agent(&[&c, &a, &b], &["rev-parse", "HEAD"]));
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(out.trim().len(), 40, "{out}");
        // And one copy still removes a worktree (a child run, then its tidy-up).
        let (code, _, err) = bounded(
            &w,
            w.agent(&[&a], &["worktree", "remove", x.to_str().unwrap()]),
        );
        assert_eq!(code, Some(0), "{err}");
        assert!(!x.exists());
    }
}

#[test]
fn the_marker_of_another_process_is_ignored_and_ones_own_fails_closed() {
    let g = gits().remove(0);
    let w = World::new(&g);
    let a = w.install("a", "[shim]\nhooks = true");
    // Set by someone else (a stale value, another pid, a parent that is not ours): ignored.
    for v in ["1:/elsewhere/git", "^1:/elsewhere/git", "", "junk", "^"] {
        let mut c = w.agent(&[&a], &["rev-parse", "HEAD"]);
        c.env("GITWARD_SHIM_EXEC", v);
        let (code, out, err) = bounded(&w, c);
        assert_eq!(code, Some(0), "{v:?}: {err}");
        assert_eq!(out.trim().len(), 40);
    }
    // Set by the agent to its own process (`sh` execs git in place, keeping its pid) or to
    // its parent: only its own call fails, closed, and the agent's text is one line.
    for (v, name) in [
        (r#""$$:$(printf '/evil\033[2J\nforged')""#, "$$"),
        (r#""^$PPID:/evil""#, "$PPID"),
    ] {
        let script = format!("GITWARD_SHIM_EXEC={v} exec git rev-parse HEAD");
        let c = w.run(Path::new("/bin/sh"), &[&a], &["-c", &script]);
        let (code, _, err) = bounded(&w, c);
        assert_eq!(code, Some(124), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("by the git-shim /evil"), "{err}");
    }
    // git's children calling `git` again carry the marker git got and run in other
    // processes: a hook that execs `git` in place (its parent is the git the shim became)
    // works, and saw the marker (the control that the case is the one under test).
    let seen = w.home.join("hook-saw");
    let hook = w.repo.join(".git/hooks/post-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$GITWARD_SHIM_EXEC\" > {s}\nexec git rev-parse HEAD >> {s}\n",
            s = seen.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, _, err) = bounded(
        &w,
        w.agent(&[&a], &["commit", "-q", "--allow-empty", "-m", "hook"]),
    );
    assert_eq!(code, Some(0), "{err}");
    let saw = std::fs::read_to_string(&seen).unwrap();
    let mut lines = saw.lines();
    let marker = lines.next().unwrap();
    assert!(
        marker.ends_with(&format!(":{}", a.display())) && !marker.starts_with('^'),
        "{saw}"
    );
    assert_eq!(lines.next().map(str::len), Some(40), "{saw}");
}

/// rt30 W3: an honest wrapper `git` *before* the shim on `PATH`, running "the next git on
/// PATH after itself" as a child (not in place: the exec marker would stop that), with a policy without `real_git`. The shim used to take the
/// first git on PATH that is not itself -- the wrapper -- for the real git: wrapper -> shim ->
/// wrapper -> … one process per level, without end. The real git is now searched after the
/// shim's own entry, so the wrapper runs once. The wrapper stops itself at 15 levels (the
/// bound of the demo); positive control: a wrapper *after* the shim that runs "the first git
/// on PATH other than itself" still loops (the shim -> that wrapper -> the shim …: only the
/// wrapper's own bound ends it), which shows the test sees a loop when there is one.
#[test]
fn rt30_a_wrapper_before_the_shim_runs_once() {
    use std::os::unix::fs::PermissionsExt;
    for g in gits() {
        let w = World::new(&g);
        let a = w.install("a", "");
        let wrap_dir = w.home.join("wrap");
        std::fs::create_dir_all(&wrap_dir).unwrap();
        let real = g.display().to_string();
        let wrapper = |next_after_self: bool| {
            let pick = if next_after_self {
                // The next git after itself.
                "[ $found = 1 ] && { next=\"$dir/git\"; break; }\n  [ \"$(readlink -f \"$dir/git\")\" = \"$self\" ] && found=1"
            } else {
                // The first git that is not itself.
                "[ \"$(readlink -f \"$dir/git\")\" = \"$self\" ] || { next=\"$dir/git\"; break; }"
            };
            let script = format!(
                "#!/bin/sh\nd=${{RT30_DEPTH:-0}}; [ \"$d\" -ge 40 ] && {{ echo \"wrapper: depth $d\" >&2; exit 99; }}\nexport RT30_DEPTH=$((d+1))\nself=$(readlink -f \"$0\"); found=0; next=\nIFS=:; for dir in $PATH; do\n  [ -x \"$dir/git\" ] || continue\n  {pick}\ndone\nunset IFS; [ -n \"$next\" ] || next={real}\necho \"$d $*\" >> \"$(dirname \"$self\")/levels\"\n\"$next\" \"$@\"\n"
            );
            let f = wrap_dir.join("git");
            std::fs::write(&f, script).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
            f
        };
        // Levels of the agent's call (the shim's `git version` probe of a wrapper it takes
        // for the real git runs it too, outside the agent's PATH: not counted).
        let levels = || {
            let n = std::fs::read_to_string(wrap_dir.join("levels"))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.ends_with(" version") && !l.ends_with(" --exec-path"))
                .count();
            let _ = std::fs::remove_file(wrap_dir.join("levels"));
            n
        };
        let wrap = wrapper(true);
        // Wrapper first, shim second: git answers, the wrapper ran once.
        let (code, out, err) = bounded(&w, w.agent(&[&wrap, &a], &["rev-parse", "HEAD"]));
        assert_eq!(code, Some(0), "{}: {err}", g.display());
        assert_eq!(out.trim().len(), 40, "{out}");
        assert_eq!(levels(), 1, "{}: {err}", g.display());
        // Also a word the shim asks git about first (an alias lookup, a child), and the shim
        // first: once each.
        let (code, _, err) = bounded(&w, w.agent(&[&wrap, &a], &["frobnicate"]));
        assert_eq!(code, Some(1), "{}: {err}", g.display());
        assert!(err.contains("is not a git command"), "{err}");
        assert_eq!(levels(), 1, "{}: {err}", g.display());
        let (code, _, err) = bounded(&w, w.agent(&[&a, &wrap], &["rev-parse", "HEAD"]));
        assert_eq!(code, Some(0), "{}: {err}", g.display());
        assert_eq!(levels(), 1, "{}: {err}", g.display());
        // The loop the search cannot avoid (the shim, then a wrapper that runs the first git
        // other than itself, which is the shim again): the nesting depth stops it at
        // MAX_NESTED shims, one line, before the wrapper's own bound (40).
        let wrap = wrapper(false);
        let (code, _, err) = bounded(&w, w.agent(&[&a, &wrap], &["rev-parse", "HEAD"]));
        assert_eq!(code, Some(124), "{}: {err}", g.display());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "git-shim: {}: started inside 16 nested git-shims",
                a.display()
            )) && err.contains("set real_git in the policy"),
            "{err}"
        );
        assert_eq!(levels(), 16, "{}: {err}", g.display());
    }
}

/// The depth in `GITWARD_SHIM_EXEC` (`<pid>/<depth>:<path>`): below 16 a shim runs and passes
/// one more on (a hook through the shim sees it); at 16 it stops, whatever the pid (positive
/// control of the bound the loop above meets). Without a depth, 0.
#[test]
fn the_nesting_depth_is_bounded() {
    use std::os::unix::fs::PermissionsExt;
    let g = gits().remove(0);
    let w = World::new(&g);
    let a = w.install("a", "[shim]\nhooks = true");
    for (v, ok) in [
        ("1/15:/elsewhere/git", true),
        ("^1/15:/elsewhere/git", true),
        ("1:/elsewhere/git", true),
        ("1/x:/elsewhere/git", true),
        ("1/16:/elsewhere/git", false),
        ("^1/4000000000:/elsewhere/git", false),
    ] {
        let mut c = w.agent(&[&a], &["rev-parse", "HEAD"]);
        c.env("GITWARD_SHIM_EXEC", v);
        let (code, _, err) = bounded(&w, c);
        if ok {
            assert_eq!(code, Some(0), "{v:?}: {err}");
        } else {
            assert_eq!(code, Some(124), "{v:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains("nested git-shims"), "{err}");
        }
    }
    // Honest nesting: a hook run by the git the shim became sees depth 1, and the shim it runs
    // (by path: git puts its exec path first on its children's PATH) passes on depth 2 to its
    // own hook.
    let seen = w.home.join("hook-saw");
    let hook = w.repo.join(".git/hooks/post-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$GITWARD_SHIM_EXEC\" >> {s}\n[ -n \"$NESTED\" ] || unset GIT_EXEC_PATH; NESTED=1 {a} commit -q --allow-empty -m inner 2>> {s}.err\n",
            s = seen.display(),
            a = a.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, _, err) = bounded(
        &w,
        w.agent(&[&a], &["commit", "-q", "--allow-empty", "-m", "outer"]),
    );
    assert_eq!(code, Some(0), "{err}");
    let saw = std::fs::read_to_string(&seen).unwrap();
    let depths: Vec<&str> = saw
        .lines()
        .map(|l| l.split(':').next().unwrap().split('/').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        depths,
        ["1", "2"],
        "{saw}{}",
        std::fs::read_to_string(w.home.join("hook-saw.err")).unwrap_or_default()
    );
}
