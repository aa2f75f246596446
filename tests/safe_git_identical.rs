//! On honest repositories safe-git's output is byte-identical to git's: stdout, stderr and
//! exit status, over a matrix of allowed commands × repositories (plain history, submodules,
//! linked worktrees, subfolders) × every git on this machine.

mod common;

use common::{bin, gits, Sandbox};
use std::path::Path;

/// Builds an honest repository with the shapes scripts meet: history with a merge, tags,
/// a rename, a binary file, attributes, staged/unstaged/untracked/ignored changes, a stash,
/// a remote, a submodule (modified), and two linked worktrees (one locked).
const SETUP: &str = r#"
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
git init -q sub
( cd sub && echo "sub file" > s.txt && git add . && git commit -qm "sub: first" )
git init -q repo
cd repo
mkdir -p src docs
printf 'alpha\nbeta\ngamma\n' > src/a.txt
printf 'one\ntwo\n' > docs/readme.md
printf '\000\001\002binary' > blob.bin
printf '*.bin binary\n*.txt text\n' > .gitattributes
printf 'ignored.log\n' > .gitignore
git add . && git commit -qm "first commit"
git tag v1.0
git tag -a -m "annotated" v1.1
git checkout -q -b topic
printf 'delta\n' >> src/a.txt && git commit -qam "topic: delta"
git checkout -q main
git mv docs/readme.md docs/README.md && git commit -qm "rename readme"
git merge -q --no-edit topic
git -c protocol.file.allow=always submodule --quiet add ../sub sub
git commit -qm "add submodule"
git remote add origin ../sub
echo "stash me" >> docs/README.md && git stash -q
git worktree add -q ../wt-feature -b feature
git worktree add -q --lock ../wt-locked -b locked-branch
# working state
echo "staged" >> src/a.txt && git add src/a.txt
echo "unstaged" >> src/a.txt
echo "new" > untracked.txt
echo "log" > ignored.log
echo "changed in sub" >> sub/s.txt
echo "wt change" >> ../wt-feature/src/a.txt
"#;

const COMMANDS: &[&[&str]] = &[
    &["status"],
    &["status", "--porcelain"],
    &["status", "-s", "-b"],
    &["status", "--porcelain=v2", "--branch"],
    &["status", "-uall", "--ignored"],
    &["diff"],
    &["diff", "--stat"],
    &["diff", "--cached"],
    &["diff", "HEAD~2"],
    &["diff", "--word-diff", "HEAD~1", "HEAD"],
    &["log", "--oneline"],
    &["log", "-p", "-3"],
    &["log", "--stat", "--all"],
    &["log", "--graph", "--all", "--oneline", "--decorate"],
    &["log", "--format=%H %an %s"],
    &["show"],
    &["show", "--stat", "HEAD~1"],
    &["show", "v1.1"],
    &["show", "HEAD:src/a.txt"],
    &["blame", "src/a.txt"],
    &["grep", "-n", "a"],
    &[
        "rev-parse",
        "HEAD",
        "--show-toplevel",
        "--git-dir",
        "--git-common-dir",
        "--absolute-git-dir",
        "--show-prefix",
    ],
    &["rev-list", "--all", "--count"],
    &["ls-files", "-s"],
    &["ls-files", "-o", "--exclude-standard"],
    &["ls-tree", "-r", "HEAD"],
    &["cat-file", "-p", "HEAD"],
    &["cat-file", "-t", "v1.1"],
    &["for-each-ref"],
    &["show-ref"],
    &["branch", "-a", "-v"],
    &["branch", "--list", "t*"],
    &["tag", "-l"],
    &["tag", "-n1"],
    &["describe", "--always", "--dirty", "--tags"],
    &["merge-base", "HEAD", "topic"],
    &["diff-tree", "-r", "HEAD~1", "HEAD"],
    &["worktree", "list"],
    &["worktree", "list", "--porcelain"],
    &["config", "--list", "--show-origin"],
    &["config", "--get", "user.name"],
    &["shortlog", "-sn", "HEAD"],
    &["name-rev", "HEAD"],
    &["stash", "list"],
    &["stash", "show", "-p"],
    &["remote", "-v"],
    &["check-attr", "-a", "blob.bin", "src/a.txt"],
    &["check-ignore", "-v", "ignored.log"],
    &["symbolic-ref", "HEAD"],
    &["log", "-1", "--format=%s", "--", "no-such-path"],
    &["show", "no-such-rev"],
];

#[test]
fn output_is_byte_identical_on_honest_repositories() {
    let safe_git = bin("safe-git");
    let mut checked = 0;
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        let places = [
            sb.root().join("repo"),
            sb.root().join("repo/src"),
            sb.root().join("wt-feature"),
            sb.root().join("repo/sub"),
        ];
        for place in &places {
            for cmd in COMMANDS {
                let plain = sb.run(&git, cmd, place);
                let mut args = vec!["--git", git.to_str().unwrap()];
                args.extend_from_slice(cmd);
                let safe = sb.run(&safe_git, &args, place);
                let show = |o: &std::process::Output| {
                    format!(
                        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
                        o.status.code(),
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    )
                };
                assert!(
                    plain.stdout == safe.stdout
                        && plain.stderr == safe.stderr
                        && plain.status.code() == safe.status.code(),
                    "{} git {} in {}: outputs differ\n=== git\n{}\n=== safe-git\n{}",
                    git.display(),
                    cmd.join(" "),
                    place
                        .strip_prefix(sb.root())
                        .unwrap_or(Path::new("?"))
                        .display(),
                    show(&plain),
                    show(&safe)
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= COMMANDS.len() * 4);
}
