//! `safe-git would-lose-work`: the repository cannot steer it into hiding work. Each case
//! hides real work from plain `git status --porcelain` (the positive control: it prints
//! nothing) while `would-lose-work` exits 1 and names it; a clean worktree exits 0.

mod common;

use common::{bin, gits, Sandbox};

const SETUP: &str = r#"
git init -q repo && cd repo
mkdir -p src && echo one > src/a.txt && echo two > b.txt && echo keep > c.txt
git add . && git commit -qm one
git worktree add -q ../wt -b wt
"#;

/// (what hides the work, script run in the worktree)
const CASES: &[(&str, &str)] = &[
    ("assume-unchanged", "echo changed >> b.txt && git update-index --assume-unchanged b.txt"),
    ("skip-worktree", "echo changed >> b.txt && git update-index --skip-worktree b.txt"),
    ("status.showUntrackedFiles=no", "git config status.showUntrackedFiles no && echo new > new.txt"),
    ("info/exclude", "echo 'new.txt' >> \"$(git rev-parse --git-common-dir)/info/exclude\" && echo new > new.txt"),
    ("core.excludesFile", "echo '*' > ../excl && git config core.excludesFile \"$PWD/../excl\" && echo new > new.txt"),
    ("core.ignoreCase", "git config core.ignoreCase true && echo new > B.TXT"),
    ("diff.ignoreSubmodules", "git -c protocol.file.allow=always submodule --quiet add \"$PWD/../repo\" sub && git commit -qm sub && git config diff.ignoreSubmodules all && echo hidden >> sub/b.txt"),
    ("submodule.<name>.ignore in .gitmodules", "git -c protocol.file.allow=always submodule --quiet add \"$PWD/../repo\" sub && git config -f .gitmodules submodule.sub.ignore all && git commit -qam sub && echo hidden > sub/new.txt"),
    ("assume-unchanged in a submodule", "git -c protocol.file.allow=always submodule --quiet add \"$PWD/../repo\" sub && git config -f .gitmodules submodule.sub.ignore all && git commit -qam sub && echo hidden >> sub/b.txt && git -C sub update-index --assume-unchanged b.txt"),
    // The index's stat data match the changed file (same size, mtime, inode; ctime not
    // trusted): git never rehashes it.
    ("stat data with core.trustctime=false", "git config core.trustctime false && touch -d 2020-01-01 b.txt && git update-index --refresh -q && echo TWO > ../x && cat ../x > b.txt && touch -d 2020-01-01 b.txt"),
];

#[test]
fn work_hidden_from_status_is_reported() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        let wt = sb.root().join("wt");
        let g = ["--git", git.to_str().unwrap()];
        let clean = sb.run(&safe_git, &[g[0], g[1], "would-lose-work", "wt"], sb.root());
        assert_eq!(
            clean.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&clean.stderr)
        );
        for (name, script) in CASES {
            let sb = Sandbox::new(&git);
            sb.sh(SETUP);
            sb.sh(&format!("cd wt && {script}"));
            let plain = sb.run(&git, &["status", "--porcelain"], &wt);
            assert!(
                plain.stdout.is_empty(),
                "control {name}: git status shows it:\n{}",
                String::from_utf8_lossy(&plain.stdout)
            );
            let safe = sb.run(
                &safe_git,
                &[g[0], g[1], "would-lose-work", "--format", "json", "wt"],
                sb.root(),
            );
            assert_eq!(
                safe.status.code(),
                Some(1),
                "{} {name}: {}{}",
                git.display(),
                String::from_utf8_lossy(&safe.stdout),
                String::from_utf8_lossy(&safe.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&safe.stdout).unwrap();
            assert_eq!(v["would_lose_work"], true);
        }
        // Honest shapes lose nothing: eol conversion on checkout, a clean submodule.
        for (name, script) in [
            ("eol=crlf", "printf '* text eol=crlf\\n' > .gitattributes && git add . && git commit -qm eol && rm b.txt && git checkout -- b.txt && git branch -f keep-eol"),
            ("clean submodule", "git -c protocol.file.allow=always submodule --quiet add \"$PWD/../repo\" sub && git commit -qm sub && git branch -f keep-sub"),
        ] {
            let sb = Sandbox::new(&git);
            sb.sh(SETUP);
            sb.sh(&format!("cd wt && {script}"));
            let safe = sb.run(&safe_git, &[g[0], g[1], "would-lose-work", "wt"], sb.root());
            assert_eq!(
                safe.status.code(),
                Some(0),
                "{name}: {}{}",
                String::from_utf8_lossy(&safe.stdout),
                String::from_utf8_lossy(&safe.stderr)
            );
        }
        // Ignored files, a stash and commits on no other branch are work too.
        for (name, script) in [
            ("ignored", "echo 'x.log' > .gitignore && git add .gitignore && git commit -qm i && git branch -f keep-i && echo l > x.log"),
            ("stash", "echo s >> b.txt && git stash -q"),
            ("commit", "echo c >> b.txt && git commit -qam c"),
        ] {
            let sb = Sandbox::new(&git);
            sb.sh(SETUP);
            sb.sh(&format!("cd wt && {script}"));
            let safe = sb.run(&safe_git, &[g[0], g[1], "would-lose-work", "wt"], sb.root());
            assert_eq!(safe.status.code(), Some(1), "{name}: {}", String::from_utf8_lossy(&safe.stdout));
        }
    }
}

/// `safe-git status --porcelain` itself takes the owner's view where repository config would
/// hide work: plain git prints nothing (the control), safe-git prints the work.
#[test]
fn status_is_not_steered_by_repository_config() {
    let safe_git = bin("safe-git");
    let sub = "git -c protocol.file.allow=always submodule --quiet add \"$PWD/../repo\" sub && git commit -qm sub";
    let cases: &[(&str, String)] = &[
        ("status.showUntrackedFiles=no", "git config status.showUntrackedFiles no && echo new > new.txt".into()),
        ("diff.ignoreSubmodules=all", format!("{sub} && git config diff.ignoreSubmodules all && echo hidden >> sub/b.txt")),
        (".gitmodules ignore=all", format!("{sub} && git config -f .gitmodules submodule.sub.ignore all && git commit -qam i && echo hidden >> sub/b.txt")),
        ("submodule.sub.ignore=all in config", format!("{sub} && git config submodule.sub.ignore all && echo hidden >> sub/b.txt")),
    ];
    for git in gits() {
        for (name, script) in cases {
            let sb = Sandbox::new(&git);
            sb.sh(SETUP);
            sb.sh(&format!("cd wt && {script}"));
            let wt = sb.root().join("wt");
            let plain = sb.run(&git, &["status", "--porcelain"], &wt);
            assert!(
                plain.stdout.is_empty(),
                "control {name}: {}",
                String::from_utf8_lossy(&plain.stdout)
            );
            let safe = sb.run(
                &safe_git,
                &["--git", git.to_str().unwrap(), "status", "--porcelain"],
                &wt,
            );
            assert_eq!(
                safe.status.code(),
                Some(0),
                "{name}: {}",
                String::from_utf8_lossy(&safe.stderr)
            );
            assert!(
                !safe.stdout.is_empty(),
                "{} {name}: safe-git status hid the work",
                git.display()
            );
        }
    }
}
