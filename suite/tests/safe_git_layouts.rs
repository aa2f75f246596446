//! safe-git works on every layout git accepts — submodules at any depth of path and nesting,
//! absorbed or not, linked worktrees of superprojects — with git's own output, and stays
//! fail-closed for a gitfile git would follow out of the repository.

mod common;

use common::{bin, gits, Sandbox};
use std::path::Path;

/// A superproject with a submodule two folders down (`vendor/mid`), which has its own
/// submodule three folders down (`deep/er/leaf`), an unabsorbed submodule (`third/party/leaf2`,
/// its `.git` a folder), and a linked worktree of the superproject with its submodules
/// checked out (their git dirs under `worktrees/<id>/modules/`).
const SETUP: &str = r#"
git config --global protocol.file.allow always
git init -q leaf && ( cd leaf && echo l > l && git add . && git commit -qm l )
git init -q mid && ( cd mid && echo m > m && git add . && git commit -qm m \
  && git submodule --quiet add ../leaf deep/er/leaf && git commit -qm s )
git init -q sup && cd sup && echo y > a && git add . && git commit -qm a
git submodule --quiet add ../mid vendor/mid && git submodule --quiet update --init --recursive
git commit -qm sub
git clone -q ../leaf third/party/leaf2 && git submodule --quiet add ../leaf third/party/leaf2
git commit -qm s2
git worktree add -q ../sup-wt && ( cd ../sup-wt && git submodule --quiet update --init --recursive )
echo dirty >> vendor/mid/deep/er/leaf/l
echo new > vendor/mid/untracked
"#;

const PLACES: &[&str] = &[
    "sup",
    "sup/vendor",
    "sup/vendor/mid",
    "sup/vendor/mid/deep/er/leaf",
    "sup/third/party/leaf2",
    "sup-wt",
    "sup-wt/vendor/mid/deep/er/leaf",
];

const COMMANDS: &[&[&str]] = &[
    &["status"],
    &["status", "--porcelain"],
    &["diff", "--submodule=short"],
    &["worktree", "list"],
    &["submodule", "status", "--recursive"],
    &["submodule"],
    &[
        "rev-parse",
        "--show-toplevel",
        "--git-dir",
        "--show-superproject-working-tree",
    ],
];

#[test]
fn submodules_at_any_depth_and_worktrees_of_superprojects_match_git() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        assert!(sb
            .root()
            .join("sup/.git/worktrees/sup-wt/modules/vendor/mid/HEAD")
            .exists());
        for place in PLACES {
            let cwd = sb.root().join(place);
            for cmd in COMMANDS {
                let plain = sb.run(&git, cmd, &cwd);
                let mut args = vec!["--git", git.to_str().unwrap()];
                args.extend_from_slice(cmd);
                let safe = sb.run(&safe_git, &args, &cwd);
                assert!(
                    plain.status.success(),
                    "control: git {cmd:?} in {place} failed"
                );
                assert_eq!(
                    (plain.status.code(), &plain.stdout, &plain.stderr),
                    (safe.status.code(), &safe.stdout, &safe.stderr),
                    "{} {cmd:?} in {place}: safe-git differs from git:\n{}",
                    git.display(),
                    String::from_utf8_lossy(&safe.stderr)
                );
            }
        }
    }
}

/// A submodule folder whose gitfile leads outside the superproject's `modules/`: git follows
/// it (and so would run that repository's drivers); safe-git refuses at every depth.
#[test]
fn a_gitfile_leading_out_of_the_repository_is_refused_at_any_depth() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        sb.sh(
            r#"git init -q foreign && ( cd foreign && echo f > f && git add . && git commit -qm f )
            rm -rf sup/vendor/mid/deep/er/leaf/.git
            echo "gitdir: $PWD/foreign/.git" > sup/vendor/mid/deep/er/leaf/.git"#,
        );
        let cwd = sb.root().join("sup");
        // Control: git follows the gitfile into the foreign repository.
        let plain = sb.run(
            &git,
            &["-C", "vendor/mid/deep/er/leaf", "rev-parse", "--git-dir"],
            &cwd,
        );
        assert_eq!(
            String::from_utf8_lossy(&plain.stdout).trim(),
            sb.root().join("foreign/.git").to_str().unwrap(),
            "control: git must follow the planted gitfile"
        );
        let args = ["--git", git.to_str().unwrap(), "status", "--porcelain"];
        let safe = sb.run(&safe_git, &args, &cwd);
        assert_eq!(
            safe.status.code(),
            Some(122),
            "{}",
            Path::new(&git).display()
        );
        assert!(String::from_utf8_lossy(&safe.stderr).contains("vendor/mid/deep/er/leaf/.git"));
    }
}

/// `worktree remove <path>` where `<path>` (or a folder above it) has been swapped for a link
/// to another worktree (and its own worktree entry is gone): plain git follows the link and removes the other worktree; safe-git
/// refuses and both worktrees stay.
#[test]
fn worktree_remove_never_goes_through_a_link() {
    let safe_git = bin("safe-git");
    for git in gits() {
        for swapped in ["sess-a/wt", "sess-a"] {
            let sb = Sandbox::new(&git);
            sb.sh(
                r#"git init -q repo && ( cd repo && echo a > a && git add . && git commit -qm a )
                mkdir sess-a sess-b
                git -C repo worktree add -q ../sess-a/wt -b a
                git -C repo worktree add -q ../sess-b/wt -b b
                echo precious > sess-b/wt/work.txt
                # The agent may write its own worktree entry: it drops it, so git's lookup by
                # real path can only find session b's entry.
                rm -rf repo/.git/worktrees/wt"#,
            );
            let swap = |root: &Path| {
                let at = root.join(swapped);
                std::fs::rename(&at, root.join(format!("{swapped}.moved"))).unwrap();
                let to = if swapped == "sess-a" {
                    "sess-b"
                } else {
                    "sess-b/wt"
                };
                std::os::unix::fs::symlink(root.join(to), &at).unwrap();
            };
            swap(sb.root());
            let victim = sb.root().join("sess-b/wt/work.txt");
            let target = sb.root().join("sess-a/wt");
            let target = target.to_str().unwrap();
            let args = [
                "--git",
                git.to_str().unwrap(),
                "worktree",
                "remove",
                "--force",
                target,
            ];
            let safe = sb.run(&safe_git, &args, &sb.root().join("repo"));
            assert_eq!(
                safe.status.code(),
                Some(122),
                "{} {swapped}: {}",
                git.display(),
                String::from_utf8_lossy(&safe.stderr)
            );
            assert!(String::from_utf8_lossy(&safe.stderr).contains("symbolic link"));
            assert!(victim.exists(), "safe-git removed the other worktree");
            // Control: plain git follows the link and removes session b's worktree.
            let plain = sb.run(
                &git,
                &["worktree", "remove", "--force", target],
                &sb.root().join("repo"),
            );
            assert!(
                plain.status.success(),
                "control: {}",
                String::from_utf8_lossy(&plain.stderr)
            );
            assert!(
                !victim.exists(),
                "control: git did not follow the link ({swapped})"
            );
        }
    }
}

/// `worktree prune` where a worktree entry `worktrees/<id>` is a symbolic link to a folder of
/// the owner's (eighth red-team pass, R8-1): git finds no `gitdir` there, prunes the entry
/// and `remove_dir_recursively` follows the link, deleting everything inside the folder it
/// leads to. safe-git refuses (exit 122, the entry named); the owner's files stay. Control:
/// plain git deletes them. A link inside an entry is not followed by git (it unlinks it),
/// so an ordinary prune of a real stale entry still goes through.
#[test]
fn worktree_prune_never_deletes_through_a_linked_entry() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(
            r#"mkdir -p victim/deep && echo precious > victim/deep/keep.txt
            git init -q repo && ( cd repo && echo a > a && git add . && git commit -qm a )
            mkdir -p repo/.git/worktrees"#,
        );
        let victim = sb.root().join("victim/deep/keep.txt");
        let entry = sb.root().join("repo/.git/worktrees/x");
        std::os::unix::fs::symlink(sb.root().join("victim"), &entry).unwrap();
        let repo = sb.root().join("repo");
        for mode in [&["worktree", "prune"][..], &["worktree", "prune", "-v"]] {
            let mut args = vec!["--git", git.to_str().unwrap()];
            args.extend_from_slice(mode);
            let safe = sb.run(&safe_git, &args, &repo);
            let err = String::from_utf8_lossy(&safe.stderr);
            assert_eq!(safe.status.code(), Some(122), "{}: {err}", git.display());
            assert!(
                err.contains("worktrees/x") && err.contains("symbolic link"),
                "{err}"
            );
            assert!(
                victim.exists(),
                "{}: safe-git deleted the owner's files",
                git.display()
            );
        }
        // An honest stale entry (its worktree folder deleted) is pruned as git would.
        std::fs::remove_file(&entry).unwrap();
        sb.sh("git -C repo worktree add -q ../gone && rm -rf gone");
        let safe = sb.run(
            &safe_git,
            &["--git", git.to_str().unwrap(), "worktree", "prune"],
            &repo,
        );
        assert!(
            safe.status.success(),
            "{}",
            String::from_utf8_lossy(&safe.stderr)
        );
        assert!(!repo.join(".git/worktrees/gone").exists());
        // Control: plain git follows the link (the prune removed the empty `worktrees/`).
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(sb.root().join("victim"), &entry).unwrap();
        let plain = sb.run(&git, &["worktree", "prune"], &repo);
        assert!(plain.status.success());
        assert!(!victim.exists(), "{}: control did not fire", git.display());
    }
}

/// A repository with an embedded repository behind a gitlink (its `.git` a folder, nothing
/// under `modules/`, so only the index scan finds it) whose config defines the clean filter its
/// `.gitattributes` names, and two linked worktrees.
const REACH_SETUP: &str = r#"
git init -q r && cd r && echo a > a.txt && git add . && git commit -qm a
git init -q emb && ( cd emb && echo e > a.txt && printf '*.txt filter=x\n' > .gitattributes \
  && git add . && git commit -qm e )
git add emb 2>/dev/null && git commit -qm emb
git -C emb config filter.x.clean "echo fired >> $PWD/../fired; cat"
git worktree add -q ../wt1 && git worktree add -q ../wt2
"#;

/// The smallest allowed form of each subcommand (the plan is all that is asked for).
fn minimal_form(sub: &str) -> Vec<&str> {
    match sub {
        "worktree" => vec![sub, "list"],
        "stash" | "notes" => vec![sub, "list"],
        "clean" => vec![sub, "-n"],
        "submodule" => vec![sub, "status"],
        _ => vec![sub],
    }
}

/// safe-git reads what each subcommand's git can reach (`args::REACH`) and nothing less: the
/// plan of every subcommand marked as reaching submodules names the embedded repository's git
/// dir (found through the index), and one marked as reaching other worktrees lists their
/// entries; the others read neither. And the scan still works where it is needed: the commands
/// that run git in the submodule run its filter under plain git (the positive control) and
/// not under safe-git.
#[test]
fn each_subcommand_reads_what_its_git_can_reach_and_recursing_ones_stay_defused() {
    use gitward::safegit::args::REACH;
    let safe_git = bin("safe-git");
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(REACH_SETUP);
        let cwd = sb.root().join("r");
        let emb_git_dir = cwd.join("emb/.git");
        for (sub, reach, _) in REACH {
            let mut args = vec![
                "--git",
                git.to_str().unwrap(),
                "--explain",
                "--format",
                "json",
            ];
            args.extend(minimal_form(sub));
            let out = sb.run(&safe_git, &args, &cwd);
            assert!(
                out.status.success(),
                "{sub}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let repo = &plan["repository"];
            let dirs: Vec<&str> = repo["submodule_git_dirs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d.as_str())
                .collect();
            assert_eq!(
                dirs.iter().any(|d| Path::new(d) == emb_git_dir),
                reach.submodules,
                "{sub}: submodule git dirs {dirs:?}"
            );
            let linked = repo["linked_worktrees"].as_array().unwrap().len();
            assert_eq!(
                linked,
                if reach.other_worktrees { 2 } else { 0 },
                "{sub}: linked worktrees read"
            );
            assert_eq!(repo["reach"]["submodules"], reach.submodules, "{sub}");
        }
        let fired = sb.root().join("fired");
        let mut day = 10;
        for cmd in [
            &["status"][..],
            &["diff-files"],
            &["diff"],
            &["describe", "--dirty", "--always"],
        ] {
            // A new modification time each run: the submodule's status must look at the file.
            let mut run = |program: &Path, args: &[&str]| {
                day += 1;
                sb.sh(&format!("touch -d 2020-01-{day} r/emb/a.txt; rm -f fired"));
                let out = sb.run(program, args, &cwd);
                (out, fired.exists())
            };
            let (plain, plain_fired) = run(&git, cmd);
            assert!(
                plain_fired,
                "control: git {cmd:?} did not run the submodule's filter ({})",
                git.display()
            );
            let mut args = vec!["--git", git.to_str().unwrap()];
            args.extend_from_slice(cmd);
            let (safe, safe_fired) = run(&safe_git, &args);
            assert!(
                !safe_fired,
                "safe-git {cmd:?} ran the submodule's filter ({})",
                git.display()
            );
            assert_eq!(
                plain.status.code(),
                safe.status.code(),
                "{cmd:?}: {}",
                String::from_utf8_lossy(&safe.stderr)
            );
        }
    }
}
