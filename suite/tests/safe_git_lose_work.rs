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
        // Found by the differential test (docs/fuzzing.md): git folds the deprecated
        // `[submodule.Sub]` to the submodule `sub`; a reader that keeps `Sub` overrides
        // `submodule.Sub.ignore`, which git never reads.
        (".gitmodules [submodule.Sub] ignore=all", format!("{sub} && printf '[submodule.Sub]\\n\\tignore = all\\n' >> .gitmodules && git commit -qam i && echo hidden >> sub/b.txt")),
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

/// What `git worktree remove` deletes beyond what `git status` lists (red-team pass 4: R4-1,
/// R4-2, R4-7). Each case: plain `git status` lists nothing (control 1), `would-lose-work`
/// exits 1 naming the kind, and on a second copy plain `git worktree remove` really loses the
/// work (control 2: the `lost` script succeeds only when the data is gone).
/// (name, script in wt, line expected, script in the sandbox root that succeeds when lost)
const REMOVED_WITH_THE_WORKTREE: &[(&str, &str, &str, &str)] = &[
    // R4-1: git's walk skips every `.git` component; neither is a repository.
    ("file under d/.git/", "mkdir -p d/.git && echo precious > d/.git/notes.txt", "unlisted: d/.git/notes.txt", "test ! -e wt/d/.git/notes.txt"),
    ("plain file e/.git", "mkdir e && echo precious > e/.git", "unlisted: e/.git", "test ! -e wt/e/.git"),
    // R4-2: per-worktree refs and the HEAD reflog live in the admin dir.
    ("refs/worktree/", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/worktree/save HEAD && git checkout -q --detach HEAD~1 && git reflog expire --expire=now --all && git rev-parse refs/worktree/save > ../W", "held: refs/worktree/save:", "! git -C repo rev-list --all --reflog | grep -q \"$(cat W)\""),
    ("refs/bisect/", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/bisect/bad HEAD && git checkout -q --detach HEAD~1 && git reflog expire --expire=now --all && git rev-parse refs/bisect/bad > ../W", "held: refs/bisect/bad:", "! git -C repo rev-list --all --reflog | grep -q \"$(cat W)\""),
    ("refs/rewritten/", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/rewritten/x HEAD && git checkout -q --detach HEAD~1 && git reflog expire --expire=now --all && git rev-parse refs/rewritten/x > ../W", "held: refs/rewritten/x:", "! git -C repo rev-list --all --reflog | grep -q \"$(cat W)\""),
    ("HEAD reflog only", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git rev-parse HEAD > ../W && git checkout -q --detach HEAD~1", "held: logs/HEAD:", "! git -C repo rev-list --all --reflog | grep -q \"$(cat W)\""),
    // R8-4: a branch or tag that is a symbolic ref to a per-worktree ref (or to `HEAD`) is
    // resolved from this worktree: it keeps nothing once the worktree is gone.
    ("branch symref to refs/worktree/", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/worktree/save HEAD && git symbolic-ref refs/heads/keep refs/worktree/save && git checkout -q --detach HEAD~1 && git reflog expire --expire=now --all && git rev-parse refs/worktree/save > ../W", "held: refs/worktree/save:", "! git -C repo rev-list --all --reflog 2>/dev/null | grep -q \"$(cat W)\""),
    ("tag symref to refs/worktree/", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/worktree/save HEAD && printf 'ref: refs/worktree/save\\n' > \"$(git rev-parse --git-common-dir)/refs/tags/t\" && git checkout -q --detach HEAD~1 && git reflog expire --expire=now --all && git rev-parse refs/worktree/save > ../W", "held: refs/worktree/save:", "! git -C repo rev-list --all --reflog 2>/dev/null | grep -q \"$(cat W)\""),
    ("branch symref to HEAD", "git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && printf 'ref: HEAD\\n' > \"$(git rev-parse --git-common-dir)/refs/heads/keep\" && git rev-parse HEAD > ../W", "commits: 1 commits reachable from HEAD only", "! git -C repo rev-list --all 2>/dev/null | grep -q \"$(cat W)\""),
    // R9-10: a remote-tracking ref the agent wrote (the remote never had it) keeps nothing:
    // the owner's `fetch --prune` deletes it.
    ("remote-tracking ref the remote lacks", "git clone -q --bare ../repo ../origin.git && git remote add origin ../origin.git && git fetch -q origin && git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/remotes/origin/wip HEAD && git rev-parse HEAD > ../W && git checkout -q --detach HEAD~1", "held: logs/HEAD:", "git -C repo fetch -q --prune origin && ! git -C repo rev-list --all --reflog 2>/dev/null | grep -q \"$(cat W)\""),
    // R11-5: the same ref written by a genuine fetch from the repository itself.
    ("remote-tracking ref fetched from the repository itself", "git clone -q --bare ../repo ../origin.git && git remote add origin ../origin.git && git fetch -q origin && git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git fetch -q . +HEAD:refs/remotes/origin/wip && git rev-parse HEAD > ../W && git checkout -q --detach HEAD~1", "held: logs/HEAD:", "git -C repo fetch -q --prune origin && ! git -C repo rev-list --all --reflog 2>/dev/null | grep -q \"$(cat W)\""),
    // R12-3: ... and from the worktree about to be removed, by its absolute path.
    ("remote-tracking ref fetched from the worktree itself", "git clone -q --bare ../repo ../origin.git && git remote add origin ../origin.git && git fetch -q origin && git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git fetch -q \"$PWD\" +HEAD:refs/remotes/origin/wip && git rev-parse HEAD > ../W && git checkout -q --detach HEAD~1", "held: logs/HEAD:", "git -C repo fetch -q --prune origin && ! git -C repo rev-list --all --reflog 2>/dev/null | grep -q \"$(cat W)\""),
    // R4-7: the autostash of a stopped operation is named only by its state file.
    ("rebase-merge/autostash", "echo c1 > c && git add c && git commit -qm c1 && echo precious >> b.txt && GIT_SEQUENCE_EDITOR=\"sed -i '1i break'\" git rebase -q -i --autostash HEAD~1 >/dev/null 2>&1; cat \"$(git rev-parse --git-dir)/rebase-merge/autostash\" > ../W && test -z \"$(git status --porcelain)\"", "held: rebase-merge/autostash:", "git -C repo fsck --unreachable --no-reflogs 2>/dev/null | grep -q \"$(cat W)\""),
    // A stopped cherry-pick's todo list names its commits abbreviated (reflogs expired).
    ("sequencer/todo", "git checkout -q --detach && echo one-changed > src/a.txt && git commit -qam c1 && echo 2 > n2 && git add n2 && git commit -qm c2 && echo 3 > n3 && git add n3 && git commit -qm c3 && git rev-parse HEAD > ../W && git checkout -q wt && echo conflict > src/a.txt && git commit -qam t && { git cherry-pick main..$(cat ../W) >/dev/null 2>&1 || true; } && git checkout -q --theirs src/a.txt && git add src/a.txt && git commit -q --no-edit && git branch -f keep HEAD && git reflog expire --expire=now --all", "held: sequencer/todo:", "! git -C repo rev-list --all --reflog | grep -q \"$(cat W)\""),
    ("MERGE_AUTOSTASH", "git checkout -q -b side && echo s > src/a.txt && git commit -qam s && git checkout -q wt && echo t > src/a.txt && git commit -qam t && echo precious >> b.txt && { git merge -q --autostash side >/dev/null 2>&1 || true; } && cat \"$(git rev-parse --git-dir)/MERGE_AUTOSTASH\" > ../W && git checkout -q --theirs src/a.txt && git add src/a.txt && git branch -f side2 HEAD", "held: MERGE_AUTOSTASH:", "git -C repo fsck --unreachable --no-reflogs 2>/dev/null | grep -q \"$(cat W)\""),
];

#[test]
fn what_worktree_remove_deletes_is_work() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let g = git.to_str().unwrap();
        for (name, script, kind, lost) in REMOVED_WITH_THE_WORKTREE {
            let sb = Sandbox::new(&git);
            sb.sh(SETUP);
            sb.sh(&format!("cd wt && {script}"));
            let wt = sb.root().join("wt");
            let plain = sb.run(
                &git,
                &[
                    "status",
                    "--porcelain",
                    "--untracked-files=all",
                    "--ignored=matching",
                ],
                &wt,
            );
            let listed = String::from_utf8_lossy(&plain.stdout).into_owned();
            // A stopped merge shows its resolved file as staged, never the autostash.
            assert!(
                listed.lines().all(|l| l.starts_with("M ")),
                "control {name}: git status lists it:\n{listed}"
            );
            let safe = sb.run(&safe_git, &["--git", g, "would-lose-work", "wt"], sb.root());
            let out = String::from_utf8_lossy(&safe.stdout);
            assert_eq!(
                safe.status.code(),
                Some(1),
                "{g} {name}: {out}{}",
                String::from_utf8_lossy(&safe.stderr)
            );
            assert!(out.contains(kind), "{g} {name}: no {kind} in {out}");
            // Control 2: plain git's removal loses it.
            sb.sh("git -C repo worktree remove --force --force wt");
            sb.sh(lost);
        }
    }
}

/// A folder git cannot open (deeper than PATH_MAX: git only warns and `status` exits 0) and
/// an entry git never writes in the admin dir make the answer "cannot tell" (2), never 0.
#[test]
fn what_cannot_be_read_is_not_nothing() {
    let safe_git = bin("safe-git");
    let deep = "python3 -c \"
import os
fd=os.open('.',os.O_RDONLY)
for i in range(25):
    c='d'*200; os.mkdir(c,dir_fd=fd); n=os.open(c,os.O_RDONLY,dir_fd=fd); os.close(fd); fd=n
f=os.open('deep.txt',os.O_CREAT|os.O_WRONLY,0o644,dir_fd=fd); os.write(f,b'precious'); os.close(f)
\"";
    for git in gits() {
        let g = git.to_str().unwrap();
        // R4-9: the control is plain git status exiting 0 and listing nothing.
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        sb.sh(&format!("cd wt && {deep}"));
        let wt = sb.root().join("wt");
        let plain = sb.run(
            &git,
            &["status", "--porcelain", "--untracked-files=all"],
            &wt,
        );
        assert_eq!(plain.status.code(), Some(0));
        assert!(
            plain.stdout.is_empty(),
            "control: {}",
            String::from_utf8_lossy(&plain.stdout)
        );
        let safe = sb.run(&safe_git, &["--git", g, "would-lose-work", "wt"], sb.root());
        assert_eq!(
            safe.status.code(),
            Some(2),
            "{g} deep: {}",
            String::from_utf8_lossy(&safe.stdout)
        );
        // A planted entry in the admin dir: not git's, so its meaning is unknown.
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        sb.sh("cd wt && echo x > \"$(git rev-parse --git-dir)/stash-of-my-own\"");
        let safe = sb.run(&safe_git, &["--git", g, "would-lose-work", "wt"], sb.root());
        assert_eq!(safe.status.code(), Some(2), "{g} planted admin entry");
        assert!(String::from_utf8_lossy(&safe.stderr).contains("stash-of-my-own"));
    }
}

/// The main worktree's per-worktree refs count too when it is the one asked about.
#[test]
fn main_worktree_state_is_read() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let g = git.to_str().unwrap();
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        let clean = sb.run(
            &safe_git,
            &["--git", g, "would-lose-work", "repo"],
            sb.root(),
        );
        assert_eq!(
            clean.status.code(),
            Some(0),
            "{g}: {}",
            String::from_utf8_lossy(&clean.stdout)
        );
        sb.sh("cd repo && git checkout -q --detach && echo w > w.txt && git add w.txt && git commit -qm w && git update-ref refs/worktree/save HEAD && git checkout -q main");
        let safe = sb.run(
            &safe_git,
            &["--git", g, "would-lose-work", "repo"],
            sb.root(),
        );
        assert_eq!(safe.status.code(), Some(1), "{g}");
        assert!(String::from_utf8_lossy(&safe.stdout).contains("held: refs/worktree/save"));
    }
}

/// The precision side of R9-10: a commit that only fetched, cloned or pushed remote-tracking
/// refs hold is kept (the remote has it): a worktree detached at `origin/main` after a fetch
/// loses nothing.
#[test]
fn what_a_fetch_brought_is_kept() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let g = git.to_str().unwrap();
        let sb = Sandbox::new(&git);
        sb.sh(
            "git init -q --bare origin.git && git init -q up && cd up && git commit -q --allow-empty -m 1 \
             && git push -q ../origin.git HEAD:refs/heads/main && cd .. && git clone -q origin.git repo \
             && cd up && git commit -q --allow-empty -m 2 && git push -q ../origin.git HEAD:refs/heads/main \
             && git push -q ../origin.git HEAD:refs/heads/side && cd ../repo && git fetch -q origin \
             && git worktree add -q --detach ../wt origin/main && git worktree add -q --detach ../wt2 origin/side",
        );
        for wt in ["wt", "wt2"] {
            let safe = sb.run(&safe_git, &["--git", g, "would-lose-work", wt], sb.root());
            assert_eq!(
                safe.status.code(),
                Some(0),
                "{g} {wt}: {}{}",
                String::from_utf8_lossy(&safe.stdout),
                String::from_utf8_lossy(&safe.stderr)
            );
        }
    }
}
