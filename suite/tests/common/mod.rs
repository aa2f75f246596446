//! Helpers shared by the cross-binary tests: where the workspace's binaries are, which gits
//! this machine has, and an isolated environment for running git.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A workspace binary (`safe-git`, `wt-check`, …) built next to this test executable.
/// `cargo test --workspace` builds every member's binaries before running any test.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/..");
    let p = dir.join(name);
    assert!(
        p.exists(),
        "{} is not built; run `cargo test --workspace` (or `cargo build --workspace`) first",
        p.display()
    );
    p
}

/// Every git binary on this machine that the tests run against.
pub fn gits() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    for g in ["/usr/bin/git", "/usr/local/bin/git"] {
        let p = PathBuf::from(g);
        if p.exists() && !v.iter().any(|h| same_file(h, &p)) {
            v.push(p);
        }
    }
    assert!(
        !v.is_empty(),
        "no git found at /usr/bin/git or /usr/local/bin/git"
    );
    v
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// `git version` of a binary, e.g. "2.47.3".
pub fn version(git: &Path) -> String {
    let out = Command::new(git)
        .arg("version")
        .output()
        .expect("git version");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .trim_start_matches("git version ")
        .to_owned()
}

/// An isolated environment: its own HOME with only an identity in `.gitconfig`, fixed dates,
/// the git under test first on PATH, nothing else inherited.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub git: PathBuf,
}

impl Sandbox {
    pub fn new(git: &Path) -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .unwrap();
        Sandbox {
            dir,
            git: git.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let bin = self.git.parent().unwrap().to_path_buf();
        let path =
            std::env::join_paths([bin, PathBuf::from("/usr/bin"), PathBuf::from("/bin")]).unwrap();
        [
            ("HOME", self.root().join("home").into_os_string()),
            ("PATH", path),
            ("LANG", "C".into()),
            ("LC_ALL", "C".into()),
            ("TZ", "UTC".into()),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z".into()),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z".into()),
        ]
        .into_iter()
        .map(|(k, v)| (OsString::from(k), v))
        .collect()
    }

    /// Run a bash script in the sandbox root with `$GIT` and `git` being the git under test.
    pub fn sh(&self, script: &str) -> Output {
        let out = Command::new("bash")
            .arg("-euo")
            .arg("pipefail")
            .arg("-c")
            .arg(script)
            .current_dir(self.root())
            .env_clear()
            .envs(self.env())
            .env("GIT", &self.git)
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "setup failed:\n{script}\n--- stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Run a program in `cwd` with the sandbox environment.
    pub fn run(&self, program: &Path, args: &[&str], cwd: &Path) -> Output {
        Command::new(program)
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(self.env())
            .output()
            .expect("spawn")
    }
}

/// Masks the date git blame and git annotate print for lines not committed yet: git takes it
/// from the clock at the time of the call (`fmt_ident` with no date), so it is the one part of
/// the output two honest runs need not share. blame writes `Not Committed Yet 2026-12-02
/// 06:28:07 +0000`, annotate `Not Committed Yet\t2026-12-06 07:55:49 +0000`: the separators
/// after the tag are skipped and the digits of the `YYYY-MM-DD HH:MM:SS` that follows become
/// `0`; every other byte (non-UTF-8 included) is kept as it was, so it stays compared.
pub fn mask_uncommitted_dates(out: &[u8]) -> Vec<u8> {
    const TAG: &[u8] = b"Not Committed Yet";
    const DATE_LEN: usize = "2026-11-30 06:56:25".len();
    let mut v = out.to_vec();
    let mut i = 0;
    while let Some(p) = v[i..].windows(TAG.len()).position(|w| w == TAG) {
        let mut start = i + p + TAG.len();
        while start < v.len() && (v[start] == b' ' || v[start] == b'\t') {
            start += 1;
        }
        for b in v.iter_mut().skip(start).take(DATE_LEN) {
            if b.is_ascii_digit() {
                *b = b'0';
            }
        }
        i = start;
    }
    v
}
