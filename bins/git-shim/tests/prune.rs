//! `git worktree prune`, `git gc` and `git maintenance run` through git-shim, on every git of
//! the machine: another session's worktree entry is never deleted because its folder is not
//! visible to this session. Positive control: plain git deletes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];

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

/// A repository with a worktree of this session (`s1`) and one of another session (`s2`),
/// whose folder is then moved out of sight, as a sandbox hides it.
struct World {
    _t: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    bin: PathBuf,
    policy: PathBuf,
    git: PathBuf,
    own: PathBuf,
    theirs: PathBuf,
    hidden: PathBuf,
}

impl World {
    fn new(git: &Path, theirs_opts: &[&str]) -> World {
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
        let policy = home.join("etc/policy.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"s1\"\nrepo = \"{}\"\nreal_git = \"{}\"\n",
                repo.display(),
                git.display()
            ),
        )
        .unwrap();
        let bin = home.join("shim-bin");
        let out = Command::new(env!("CARGO_BIN_EXE_git-shim"))
            .arg("--install")
            .arg(&bin)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let w = World {
            own: home.join("src/proj-worktrees/s1/mine"),
            theirs: home.join("src/proj-worktrees/s2/theirs"),
            hidden: home.join("elsewhere"),
            _t: t,
            home,
            repo,
            bin,
            policy,
            git: git.to_path_buf(),
        };
        w.plain(&["init", "-q"]);
        std::fs::write(w.repo.join("a.txt"), "a\n").unwrap();
        w.plain(&["add", "a.txt"]);
        w.plain(&["commit", "-q", "-m", "first"]);
        let own = w.own.to_str().unwrap().to_owned();
        w.plain(&["worktree", "add", "-q", "--detach", &own]);
        let theirs = w.theirs.to_str().unwrap().to_owned();
        let mut args = vec!["worktree", "add", "-q", "--detach"];
        args.extend_from_slice(theirs_opts);
        args.push(&theirs);
        w.plain(&args);
        // The other session's folder is out of this session's sight.
        std::fs::rename(&w.theirs, &w.hidden).unwrap();
        w
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join("gitconfig"))
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()));
    }

    fn plain_out(&self, args: &[&str]) -> Output {
        let mut c = Command::new(&self.git);
        self.env(&mut c);
        c.current_dir(&self.repo).args(args).output().unwrap()
    }

    fn plain(&self, args: &[&str]) {
        let o = self.plain_out(args);
        assert!(o.status.success(), "git {args:?}: {o:?}");
    }

    fn shim(&self, args: &[&str]) -> Output {
        let mut c = Command::new(self.bin.join("git"));
        self.env(&mut c);
        c.current_dir(&self.repo)
            .env("GITWARD_POLICY", &self.policy)
            .args(args)
            .output()
            .unwrap()
    }

    /// The admin dirs left in `<common dir>/worktrees/`.
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.repo.join(".git/worktrees"))
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    fn refused(&self, args: &[&str]) {
        let o = self.shim(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(121),
            "{}: {args:?}: {err}",
            self.git.display()
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("git-shim: refused (worktree-prune): "),
            "{err}"
        );
        assert!(err.contains(self.theirs.to_str().unwrap()), "{err}");
    }
}

#[test]
fn worktree_prune_keeps_other_sessions_entries() {
    for g in gits() {
        // Positive control: plain git deletes the other session's entry.
        let c = World::new(&g, &[]);
        assert_eq!(c.entries(), ["mine", "theirs"]);
        c.plain(&["worktree", "prune"]);
        assert_eq!(c.entries(), ["mine"], "{}: control", g.display());

        let w = World::new(&g, &[]);
        w.refused(&["worktree", "prune"]);
        w.refused(&["worktree", "prune", "--expire", "now", "-v"]);
        w.refused(&["-C", w.repo.to_str().unwrap(), "worktree", "prune"]);
        assert_eq!(w.entries(), ["mine", "theirs"], "{}", g.display());
        // A dry run only prints.
        let o = w.shim(&["worktree", "prune", "-n"]);
        assert!(o.status.success(), "{o:?}");
        assert_eq!(w.entries(), ["mine", "theirs"]);
        // Refused like `worktree remove` of the same worktree.
        let o = w.shim(&["worktree", "remove", w.theirs.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(121), "{o:?}");
        // The other session's folder back in sight: this session's own missing worktree is
        // pruned, the other's kept.
        std::fs::rename(&w.hidden, &w.theirs).unwrap();
        std::fs::remove_dir_all(&w.own).unwrap();
        let o = w.shim(&["worktree", "prune"]);
        assert!(o.status.success(), "{}: {o:?}", g.display());
        assert_eq!(w.entries(), ["theirs"], "{}", g.display());
    }
}

#[test]
fn gc_and_maintenance_keep_other_sessions_entries() {
    for g in gits() {
        // An entry without an index (`--no-checkout`) is pruned by a plain `git gc` at once,
        // whatever gc.worktreePruneExpire says: the control.
        let c = World::new(&g, &["--no-checkout"]);
        c.plain(&["gc", "-q"]);
        assert_eq!(c.entries(), ["mine"], "{}: control", g.display());
        let c = World::new(&g, &["--no-checkout"]);
        c.plain(&["maintenance", "run", "--task=gc", "--quiet"]);
        assert_eq!(
            c.entries(),
            ["mine"],
            "{}: control (maintenance)",
            g.display()
        );

        let w = World::new(&g, &["--no-checkout"]);
        w.refused(&["gc", "-q"]);
        w.refused(&["gc", "--prune=now"]);
        w.refused(&["maintenance", "run", "--task=gc"]);
        w.refused(&["maintenance", "run"]);
        assert_eq!(w.entries(), ["mine", "theirs"], "{}", g.display());
        // Nothing prunable that is not this session's: gc runs.
        std::fs::rename(&w.hidden, &w.theirs).unwrap();
        let o = w.shim(&["gc", "-q"]);
        assert!(o.status.success(), "{}: {o:?}", g.display());
        assert_eq!(w.entries(), ["mine", "theirs"]);
    }
}
