//! Shared setup for wt-check's end-to-end tests: isolated git, a repository with a
//! submodule, an include outside the repository, another session's linked worktree and the
//! session's own worktree.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The git used to build test repositories (absolute path; the newest one on the machine).
pub fn git_bin() -> PathBuf {
    for g in ["/usr/local/bin/git", "/usr/bin/git"] {
        if Path::new(g).exists() {
            return PathBuf::from(g);
        }
    }
    panic!("no git at /usr/local/bin/git or /usr/bin/git");
}

/// A temp world: `home/` (empty HOME with an empty global config), the repository, the
/// state folder.
pub struct World {
    pub tmp: tempfile::TempDir,
}

impl World {
    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.tmp.path()).unwrap()
    }
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }
    pub fn main(&self) -> PathBuf {
        self.root().join("proj")
    }
    pub fn git_dir(&self) -> PathBuf {
        self.main().join(".git")
    }
    pub fn outside(&self) -> PathBuf {
        self.root().join("outside")
    }
    pub fn other(&self) -> PathBuf {
        self.root().join("other")
    }
    pub fn own(&self) -> PathBuf {
        self.root().join("proj-worktrees/s1/wt1")
    }
    pub fn state(&self) -> PathBuf {
        self.root().join("state/st.json")
    }

    /// Environment for git and wt-check: nothing from the real home or system.
    pub fn env(&self, c: &mut Command) {
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home().join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .env("LC_ALL", "C");
    }

    pub fn git(&self, dir: &Path, args: &[&str]) -> Output {
        let mut c = Command::new(git_bin());
        self.env(&mut c);
        c.arg("-C")
            .arg(dir)
            .args([
                "-c",
                "protocol.file.allow=always",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args);
        let out = c.output().expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub fn wt_check(&self, args: &[&str]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
        self.env(&mut c);
        c.args(args).output().expect("run wt-check")
    }

    pub fn pin(&self) -> Output {
        let st = self.state();
        let out = self.wt_check(&[
            "pin",
            "--state",
            st.to_str().unwrap(),
            "--session",
            "s1",
            self.main().to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "pin failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub fn check(&self, restore: bool) -> (i32, Vec<serde_json::Value>) {
        let st = self.state();
        let mut a = vec!["check", "--state", st.to_str().unwrap()];
        if restore {
            a.push("--restore");
        }
        let m = self.main();
        a.push(m.to_str().unwrap());
        let out = self.wt_check(&a);
        let events = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        (out.status.code().unwrap_or(-1), events)
    }
}

/// Build the standard repository (see fixtures/tamper/cases.toml).
pub fn world() -> World {
    let w = World {
        tmp: tempfile::tempdir().unwrap(),
    };
    let root = w.root();
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join(".gitconfig"), "").unwrap();
    std::fs::create_dir_all(w.outside()).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    // Submodule source.
    w.git(&root, &["init", "-q", "subsrc"]);
    std::fs::write(root.join("subsrc/f"), "sub\n").unwrap();
    w.git(&root.join("subsrc"), &["add", "f"]);
    w.git(&root.join("subsrc"), &["commit", "-q", "-m", "sub"]);
    // Main repository.
    w.git(&root, &["init", "-q", "proj"]);
    let m = w.main();
    std::fs::write(m.join("README"), "hello\n").unwrap();
    w.git(&m, &["add", "README"]);
    w.git(&m, &["commit", "-q", "-m", "init"]);
    w.git(
        &m,
        &[
            "submodule",
            "add",
            "-q",
            root.join("subsrc").to_str().unwrap(),
            "sub",
        ],
    );
    w.git(&m, &["commit", "-q", "-m", "sub"]);
    std::fs::write(w.outside().join("inc.cfg"), "[user]\n\tname = t\n").unwrap();
    w.git(
        &m,
        &[
            "config",
            "include.path",
            w.outside().join("inc.cfg").to_str().unwrap(),
        ],
    );
    w.git(
        &m,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "o",
            w.other().to_str().unwrap(),
        ],
    );
    w.git(
        &m,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "s",
            w.own().to_str().unwrap(),
        ],
    );
    w
}

/// Every git this machine has; a missing one is reported, and is a failure under `CI=true`.
pub fn gits() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for g in ["/usr/bin/git", "/usr/local/bin/git"] {
        if Path::new(g).exists() {
            out.push(PathBuf::from(g));
        } else if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{g} is missing (CI=true: every git must be tested)");
        } else {
            eprintln!("skipped on {g}: not installed");
        }
    }
    out
}

/// A state file (format 3) as JSON: the state's object and the ref snapshot after it.
pub fn read_state_json(path: &Path) -> (serde_json::Value, serde_json::Value) {
    let bytes = std::fs::read(path).unwrap();
    let mut docs = serde_json::Deserializer::from_slice(&bytes).into_iter::<serde_json::Value>();
    let state = docs.next().expect("the state's object").unwrap();
    let refs = docs.next().expect("the ref snapshot after it").unwrap();
    assert!(docs.next().is_none(), "two documents");
    (state, refs)
}

/// Write a state file (format 3) from its two documents.
pub fn write_state_json(path: &Path, state: &serde_json::Value, refs: &serde_json::Value) {
    let mut b = serde_json::to_vec_pretty(state).unwrap();
    b.push(b'\n');
    b.extend_from_slice(&serde_json::to_vec(refs).unwrap());
    b.push(b'\n');
    std::fs::write(path, b).unwrap();
}

/// A test that needs a timing condition (a write landing in a chosen second) and did not get
/// it in its bounded tries: a failure under `CI=true` (CI must not pass what it did not
/// judge), a note elsewhere.
pub fn timing_miss(what: &str) {
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "{what} (CI=true: a test that never got its condition fails)"
    );
    eprintln!("not judged: {what}");
}
