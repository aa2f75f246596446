//! Isolated test repositories built with a real git: temp HOME, no system or global
//! config, fixed identity and dates, absolute git path.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The gits to build test repositories with. Each that is missing is reported as skipped.
pub fn gits() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for g in ["/usr/bin/git", "/usr/local/bin/git"] {
        if Path::new(g).is_file() {
            out.push(PathBuf::from(g));
        } else {
            assert!(
                !(std::env::var("CI").as_deref() == Ok("true")),
                "{g} is missing (CI=true: every git must be tested)"
            );
            eprintln!("SKIPPED with {g}: not installed");
        }
    }
    assert!(!out.is_empty(), "no git to build test repositories");
    out
}

/// Shell functions available to every setup script (see fixtures/commits/README.md).
pub const PRELUDE: &str = r#"
set -eu
git_obj() { local id; id=$($GIT rev-parse "$1"); printf '%s/%s' "${id:0:2}" "${id:2}"; }
# gw_blob CONTENT -> blob id (printf %b: escapes such as \r and \n are honoured)
gw_blob() { printf '%b' "$1" | $GIT hash-object -w --stdin; }
# gw_drop NAME: filter NUL-separated ls-tree records, dropping the entry NAME
gw_drop() { local rec; while IFS= read -r -d '' rec; do [ "${rec#*$'\t'}" = "$1" ] || printf '%s\0' "$rec"; done; }
# gw_sub NAME: the tree id of entry NAME from NUL-separated ls-tree records
gw_sub() { local rec; while IFS= read -r -d '' rec; do if [ "${rec#*$'\t'}" = "$1" ]; then rec=${rec%%$'\t'*}; set -- $rec; [ "$2" = tree ] && printf '%s' "$3"; fi; done; return 0; }
# gw_add TREE PATH MODE OBJ -> tree id with PATH (any bytes but '/') set to OBJ
gw_add() {
  local tree=$1 path=$2 mode=$3 obj=$4 head sub type
  head=${path%%/*}
  if [ "$head" = "$path" ]; then
    case $mode in 040000) type=tree;; 160000) type=commit;; *) type=blob;; esac
    { if [ -n "$tree" ]; then $GIT ls-tree -z "$tree" | gw_drop "$head"; fi
      printf '%s %s %s\t%s\0' "$mode" "$type" "$obj" "$head"; } | $GIT mktree -z
  else
    sub=""
    if [ -n "$tree" ]; then sub=$($GIT ls-tree -z "$tree" | gw_sub "$head"); fi
    sub=$(gw_add "$sub" "${path#*/}" "$mode" "$obj")
    gw_add "$tree" "$head" 040000 "$sub"
  fi
}
# gw_put PATH MODE CONTENT...: add files to the tip of $GW_BRANCH as one new commit
gw_put() {
  local tip tree
  tip=$($GIT rev-parse -q --verify "$GW_BRANCH^{commit}" || true)
  tree=""; [ -n "$tip" ] && tree=$($GIT rev-parse "$tip^{tree}")
  while [ $# -ge 3 ]; do
    tree=$(gw_add "$tree" "$1" "$2" "$(gw_blob "$3")")
    shift 3
  done
  gw_commit_tree "$tree" ${tip:+"$tip"}
}
# gw_commit_tree TREE [PARENT...]: commit TREE on $GW_BRANCH with the given parents
gw_commit_tree() {
  local tree=$1 c; shift
  local args=(); for p in "$@"; do args+=(-p "$p"); done
  c=$($GIT commit-tree "$tree" "${args[@]}" -m "change")
  $GIT update-ref "$GW_BRANCH" "$c"
}
"#;

/// A test repository in a temp dir, with a work tree at `work`.
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub work: PathBuf,
    pub git: PathBuf,
}

impl Repo {
    /// `git init -b main` with one commit holding `README`.
    pub fn new(git: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("repo");
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let r = Repo {
            dir,
            work,
            git: git.to_path_buf(),
        };
        r.sh_in(r.dir.path(), "$GIT init -q -b main repo 2>/dev/null || { $GIT init -q repo && $GIT -C repo symbolic-ref HEAD refs/heads/main; }");
        r.sh("echo readme > README && $GIT add README && $GIT commit -qm base");
        r
    }

    pub fn git_dir(&self) -> PathBuf {
        self.work.join(".git")
    }

    fn command(&self, dir: &Path, script: &str) -> Command {
        let home = self.dir.path().join("home");
        let mut c = Command::new("/bin/bash");
        c.arg("-c")
            .arg(format!("{PRELUDE}\n{script}"))
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("GIT", &self.git)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .env("GIT_AUTHOR_DATE", "1700000000 +0000")
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .env("GW_BRANCH", "refs/heads/main");
        c
    }

    fn sh_in(&self, dir: &Path, script: &str) -> String {
        let out = self.command(dir, script).output().unwrap();
        assert!(
            out.status.success(),
            "script failed with {}: {script}\n{}",
            self.git.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run a bash script in the work tree (with the prelude's functions and `$GIT`).
    pub fn sh(&self, script: &str) -> String {
        self.sh_in(&self.work, script)
    }

    /// Run with extra environment variables.
    pub fn sh_env(&self, script: &str, env: &[(&str, &str)]) -> String {
        let mut c = self.command(&self.work, script);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "script failed with {}: {script}\n{}",
            self.git.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `git rev-parse --verify <rev>`.
    pub fn rev(&self, rev: &str) -> String {
        self.sh(&format!("$GIT rev-parse --verify '{rev}'"))
            .trim()
            .to_string()
    }
}
