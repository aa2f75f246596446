//! On honest repositories safe-git's output is byte-identical to git's: stdout, stderr and
//! exit status, over a matrix of allowed commands × repositories (plain history, submodules,
//! linked worktrees, subfolders) × every git on this machine.

mod common;

use common::{bin, gits, mask_uncommitted_dates, Sandbox};
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
    // No option: git shows stash.showStat/showPatch's choice (the stat by default); an
    // inserted --no-ext-diff alone switched it to a patch (argv differential, long run).
    &["stash", "show"],
    &["stash", "show", "stash@{0}"],
    &["-c", "stash.showPatch=true", "stash", "show"],
    &["-c", "stash.showStat=false", "stash", "show"],
    &["remote", "-v"],
    &["check-attr", "-a", "blob.bin", "src/a.txt"],
    &["check-ignore", "-v", "ignored.log"],
    &["symbolic-ref", "HEAD"],
    &["log", "-1", "--format=%s", "--", "no-such-path"],
    &["show", "no-such-rev"],
    // The read-only commands added for dashboards and destroy scripts.
    &["reflog"],
    &["reflog", "show", "-3", "main"],
    &["reflog", "exists", "refs/heads/main"],
    &["submodule", "status"],
    &["submodule"],
    &["cherry", "-v", "topic"],
    &["clean", "-n"],
    &["clean", "-ndx"],
    &["show-branch", "--all"],
    &["notes", "list"],
    &["range-diff", "HEAD~3", "HEAD~1", "HEAD"],
    &["var", "GIT_EDITOR"],
    &["var", "GIT_PAGER"],
    &["var", "-l"],
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
                let mut plain = sb.run(&git, cmd, place);
                let mut args = vec!["--git", git.to_str().unwrap()];
                args.extend_from_slice(cmd);
                let mut safe = sb.run(&safe_git, &args, place);
                if cmd[0] == "blame" || cmd[0] == "annotate" {
                    // The "Not Committed Yet" lines carry the wall clock of each run; two runs
                    // straddling a second differ there and nowhere else.
                    plain.stdout = mask_uncommitted_dates(&plain.stdout);
                    safe.stdout = mask_uncommitted_dates(&safe.stdout);
                }
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

#[test]
fn only_the_uncommitted_date_is_masked() {
    let a = b"3960bed0 (Test              2026-01-01 00:00:00 +0000 4) delta\n00000000 (Not Committed Yet 2026-11-30 06:56:25 +0000 5) staged\n";
    let b = b"3960bed0 (Test              2026-01-01 00:00:00 +0000 4) delta\n00000000 (Not Committed Yet 2026-11-30 06:56:26 +0000 5) staged\n";
    assert_eq!(mask_uncommitted_dates(a), mask_uncommitted_dates(b));
    let other_line = b"00000000 (Not Committed Yet 2026-11-30 06:56:25 +0000 5) unstaged\n";
    assert_ne!(
        mask_uncommitted_dates(a),
        mask_uncommitted_dates(other_line)
    );
    let committed = b"3960bed0 (Test              2026-01-02 00:00:00 +0000 4) delta\n00000000 (Not Committed Yet 2026-11-30 06:56:25 +0000 5) staged\n";
    assert_ne!(mask_uncommitted_dates(a), mask_uncommitted_dates(committed));
}

/// Real repositories (ripgrep, pre-commit from `../shared/realrepos`), each with a submodule
/// at `vendor/x`, clean and then dirty: safe-git's output is git's, byte for byte. Without
/// the bundles the test fails under `CI=true` and is ignored with the reason otherwise
/// (`build.rs`).
#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn output_is_byte_identical_on_real_repositories() {
    // `GITWARD_REALREPOS` names another folder (a worktree checked out elsewhere).
    let bundles = std::env::var_os("GITWARD_REALREPOS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/realrepos"));
    let names = ["ripgrep.bundle", "pre-commit.bundle"];
    for n in names {
        assert!(
            bundles.join(n).exists(),
            "{}: the {n} bundle is missing",
            bundles.display()
        );
    }
    const REAL: &[&[&str]] = &[
        &["status"],
        &["status", "--porcelain"],
        &["log", "--oneline", "-20"],
        &["log", "-p", "-3"],
        &["show"],
        &["diff"],
        &["diff", "HEAD~3"],
        &["ls-files"],
        &["rev-parse", "HEAD", "--show-toplevel"],
        &["worktree", "list"],
        &["reflog", "-5"],
        &["submodule", "status"],
        &["clean", "-n"],
        &["show-branch", "--all"],
        &["cherry", "-v", "HEAD~5"],
        &["notes", "list"],
        &["var", "GIT_EDITOR"],
    ];
    let safe_git = bin("safe-git");
    for git in gits() {
        for name in names {
            let sb = Sandbox::new(&git);
            sb.sh(&format!(
                r#"git clone -q "{}" r
                git init -q x && ( cd x && echo x > x && git add . && git commit -qm x )
                cd r && git -c protocol.file.allow=always submodule --quiet add "$PWD/../x" vendor/x
                git commit -qm "vendor x""#,
                bundles.join(name).display()
            ));
            let r = sb.root().join("r");
            let blame_file = String::from_utf8(sb.run(&git, &["ls-files"], &r).stdout)
                .unwrap()
                .lines()
                .find(|l| l.ends_with(".md"))
                .unwrap_or("README.md")
                .to_owned();
            // An honest linked worktree loses nothing; a change in it is work.
            sb.sh("cd r && git worktree add -q ../wt -b wt origin/HEAD");
            let g = ["--git", git.to_str().unwrap(), "would-lose-work", "wt"];
            let clean = sb.run(&safe_git, &g, sb.root());
            assert_eq!(
                clean.status.code(),
                Some(0),
                "{name}: would-lose-work on a clean worktree: {}{}",
                String::from_utf8_lossy(&clean.stdout),
                String::from_utf8_lossy(&clean.stderr)
            );
            sb.sh("echo change >> wt/README.md");
            let dirty = sb.run(&safe_git, &g, sb.root());
            assert_eq!(dirty.status.code(), Some(1), "{name}");
            assert_eq!(
                String::from_utf8_lossy(&dirty.stdout),
                "modified: README.md\n"
            );
            for dirty in [false, true] {
                if dirty {
                    sb.sh(&format!(
                        "cd r && echo change >> {blame_file} && echo new > untracked.txt && echo y >> vendor/x/x"
                    ));
                }
                let blame = ["blame", "--", blame_file.as_str()];
                for cmd in REAL.iter().copied().chain([&blame[..]]) {
                    let mut plain = sb.run(&git, cmd, &r);
                    let mut args = vec!["--git", git.to_str().unwrap()];
                    args.extend_from_slice(cmd);
                    let mut safe = sb.run(&safe_git, &args, &r);
                    if cmd[0] == "blame" || cmd[0] == "annotate" {
                        plain.stdout = mask_uncommitted_dates(&plain.stdout);
                        safe.stdout = mask_uncommitted_dates(&safe.stdout);
                    }
                    assert!(
                        plain.stdout == safe.stdout
                            && plain.stderr == safe.stderr
                            && plain.status.code() == safe.status.code(),
                        "{} {name} (dirty: {dirty}) git {}: outputs differ:\n{}",
                        git.display(),
                        cmd.join(" "),
                        String::from_utf8_lossy(&safe.stderr)
                    );
                }
            }
        }
    }
}
