//! Real repositories: honest work raises nothing, and every real layout works.
//!
//! Each bundle in `../shared/realrepos/` is a public project's whole history, written by
//! nobody here. For each, on every git on this machine, the suite builds what an owner really
//! has — a clone with an https remote, a linked worktree, a submodule below the top
//! (`vendor/x`) with a submodule of its own, and an `include.path` from the owner's global
//! config into a file in the owner's home — and asks of gitward what a new user would:
//!
//! - `wt-check audit` of that clone, of the linked worktree and of the submodule checkout
//!   exits 0 and reports nothing above a note;
//! - the commit scan from an old pin to the tip (the turn "fetched" hundreds of honest commits,
//!   merges included) reports no error-level finding and a few dozen warnings at most;
//! - `wt-check check` after `git gc` is clean;
//! - `safe-git` runs in the superproject, the submodule and the linked worktree with git's own
//!   output, and `worktree remove` works there.
//!
//! Without `../shared/realrepos/` these tests are ignored with the reason (see `build.rs`);
//! under `CI=true` they run and fail on the missing folder.

mod common;

use common::{bin, gits, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A bundle and how far back the turn's pin is (first-parent steps from the tip).
struct Bundle {
    name: &'static str,
    https: &'static str,
    pin_back: usize,
}

const BUNDLES: &[Bundle] = &[
    Bundle {
        name: "pre-commit",
        https: "https://github.com/pre-commit/pre-commit",
        pin_back: 400,
    },
    Bundle {
        name: "ripgrep",
        https: "https://github.com/BurntSushi/ripgrep",
        pin_back: 600,
    },
];

/// At most this many warning-level scan findings on a range of honest history: what a reviewer
/// wants to see is the few paths that deserve a look (CI workflows), not every commit.
const SCAN_WARNINGS_AT_MOST: usize = 36;

fn realrepos() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/realrepos");
    assert!(
        dir.is_dir(),
        "{}: missing; the real-repository suite needs the shared bundles (CI=true makes this a failure, not a skip)",
        dir.display()
    );
    dir
}

/// A process's outcome for a failure message, each stream cut to its first 40 lines.
fn show(o: &Output) -> String {
    let head = |b: &[u8]| {
        let text = String::from_utf8_lossy(b);
        let mut lines: Vec<&str> = text.lines().take(40).collect();
        let more = text.lines().count().saturating_sub(40);
        let tail = format!("… {more} more lines");
        if more > 0 {
            lines.push(&tail);
        }
        lines.join("\n")
    };
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        head(&o.stdout),
        head(&o.stderr)
    )
}

/// Builds the owner's world for one bundle: `<root>/proj` (clone, https remote, `vendor/x`
/// submodule with `deps/y` inside it), `<root>/proj-wt` (a linked worktree) and an include from
/// the owner's global config into `~/.config/git/extra`.
fn owner_world(sb: &Sandbox, b: &Bundle) {
    let bundle = realrepos().join(format!("{}.bundle", b.name));
    assert!(bundle.is_file(), "{}: missing", bundle.display());
    let script = format!(
        r#"
mkdir -p home/.config/git
printf '[include]\n\tpath = ~/.config/git/extra\n' >> home/.gitconfig
printf '[core]\n\tpager = less -R\n[alias]\n\tst = status\n' > home/.config/git/extra
# The submodules' sources: small honest repositories beside the project.
git init -q y && (cd y && echo y > y.txt && git add . && git commit -qm y)
git init -q x && (cd x && echo x > x.txt && git add . && git commit -qm x \
  && git -c protocol.file.allow=always submodule -q add "$PWD/../y" deps/y && git commit -qm "add y")
git clone -q {bundle} proj
cd proj
git remote set-url origin {https}
git -c protocol.file.allow=always submodule -q add "$PWD/../x" vendor/x
git -c protocol.file.allow=always submodule -q update --init --recursive
git commit -qm "vendor x"
git worktree add -q ../proj-wt -b gitward-wt
"#,
        bundle = bundle.display(),
        https = b.https,
    );
    sb.sh(&script);
}

/// `wt-check audit --format json` of `path`: (exit code, findings above note level).
fn audit(sb: &Sandbox, path: &Path) -> (i32, Vec<Value>, Output) {
    let out = sb.run(
        &bin("wt-check"),
        &["audit", "--format", "json", path.to_str().unwrap()],
        sb.root(),
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("audit JSON: {e}\n{}", show(&out)));
    let loud = v["findings"]
        .as_array()
        .expect("findings array")
        .iter()
        .filter(|f| matches!(f["level"].as_str(), Some("error" | "warning")))
        .cloned()
        .collect();
    (out.status.code().unwrap_or(-1), loud, out)
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn an_honest_clone_audits_clean_wherever_it_is_audited() {
    for git in gits() {
        for b in BUNDLES {
            let sb = Sandbox::new(&git);
            owner_world(&sb, b);
            for place in ["proj", "proj-wt", "proj/vendor/x", "proj/vendor/x/deps/y"] {
                let (code, loud, out) = audit(&sb, &sb.root().join(place));
                assert!(
                    code == 0 && loud.is_empty(),
                    "{} {}: audit of {place} on an honest clone: exit {code}, findings {loud:#?}\n{}",
                    git.display(),
                    b.name,
                    show(&out)
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn the_scan_of_honest_history_is_quiet_and_complete() {
    let wt_check = bin("wt-check");
    for git in gits() {
        for b in BUNDLES {
            let sb = Sandbox::new(&git);
            let bundle = realrepos().join(format!("{}.bundle", b.name));
            // Only the default branch, no tags: the pin knows the old tip and nothing newer.
            sb.sh(&format!(
                r#"git clone -q --no-tags --single-branch {bundle} proj
cd proj
git rev-parse HEAD > ../tip
git reset -q --hard HEAD~{back}
git for-each-ref --format='%(refname)' refs/remotes | xargs -r -n1 git update-ref -d
"#,
                bundle = bundle.display(),
                back = b.pin_back
            ));
            let proj = sb.root().join("proj");
            let state = sb.root().join("state.json");
            let pin = sb.run(
                &wt_check,
                &[
                    "pin",
                    "--state",
                    state.to_str().unwrap(),
                    proj.to_str().unwrap(),
                ],
                sb.root(),
            );
            assert!(pin.status.success(), "pin: {}", show(&pin));
            sb.sh("cd proj && git merge -q --ff-only \"$(cat ../tip)\"");
            let new = sb.run(&git, &["rev-list", "--count", "ORIG_HEAD..HEAD"], &proj);
            let new: usize = String::from_utf8_lossy(&new.stdout).trim().parse().unwrap();
            assert!(new >= b.pin_back, "the turn brought {new} commits");

            let out = sb.run(
                &wt_check,
                &[
                    "check",
                    "--state",
                    state.to_str().unwrap(),
                    proj.to_str().unwrap(),
                ],
                sb.root(),
            );
            let code = out.status.code().unwrap_or(-1);
            let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
                .collect();
            let level = |e: &Value| {
                e["severity"]
                    .as_str()
                    .or(e["level"].as_str())
                    .unwrap_or("")
                    .to_owned()
            };
            let errors: Vec<&Value> = events.iter().filter(|e| level(e) == "error").collect();
            let warnings = events.iter().filter(|e| level(e) == "warning").count();
            let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
            assert!(
                (code == 0 || code == 1)
                    && errors.is_empty()
                    && warnings <= SCAN_WARNINGS_AT_MOST
                    && names.iter().all(|n| *n == "commit_flagged"),
                "{} {}: scan of {new} honest commits: exit {code}, {} errors, {warnings} warnings, events {names:?}\nerrors: {errors:#?}\n{}",
                git.display(),
                b.name,
                errors.len(),
                show(&out)
            );
        }
    }
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn check_after_gc_and_ordinary_maintenance_is_clean() {
    let wt_check = bin("wt-check");
    for git in gits() {
        let b = &BUNDLES[0];
        let sb = Sandbox::new(&git);
        owner_world(&sb, b);
        let proj = sb.root().join("proj");
        let state = sb.root().join("state.json");
        let pin = sb.run(
            &wt_check,
            &[
                "pin",
                "--state",
                state.to_str().unwrap(),
                proj.to_str().unwrap(),
            ],
            sb.root(),
        );
        assert!(pin.status.success(), "pin: {}", show(&pin));
        // What git writes by itself during ordinary work.
        sb.sh(r#"cd proj
git gc -q
git repack -q -d
git update-server-info
git commit-graph write --reachable 2>/dev/null
git pack-refs --all
git -c protocol.file.allow=always fetch -q ../x HEAD 2>/dev/null
git branch -q -u origin/HEAD gitward-wt 2>/dev/null || true
"#);
        let out = sb.run(
            &wt_check,
            &[
                "check",
                "--state",
                state.to_str().unwrap(),
                "--no-scan",
                proj.to_str().unwrap(),
            ],
            sb.root(),
        );
        assert!(
            out.status.code() == Some(0) && out.stdout.is_empty(),
            "{}: check after gc and maintenance: {}",
            git.display(),
            show(&out)
        );
    }
}

#[test]
#[cfg_attr(
    gitward_no_realrepos,
    ignore = "../shared/realrepos is missing (CI=true makes this a failure)"
)]
fn safe_git_runs_in_a_superproject_with_a_submodule_below_the_top() {
    let safe_git = bin("safe-git");
    for git in gits() {
        for b in BUNDLES {
            let sb = Sandbox::new(&git);
            owner_world(&sb, b);
            sb.sh("cd proj && echo dirty >> README.md && echo new > untracked.txt && echo dirty >> vendor/x/x.txt");
            let commands: &[&[&str]] = &[
                &["status"],
                &["status", "--porcelain"],
                &["status", "--porcelain=v2", "--branch"],
                &["diff", "--stat"],
                &["log", "--oneline", "-20"],
                &["log", "-p", "-2"],
                &["show", "--stat", "HEAD~3"],
                &["ls-files", "-s", "vendor"],
                &["worktree", "list", "--porcelain"],
                &[
                    "rev-parse",
                    "--show-toplevel",
                    "--git-dir",
                    "--git-common-dir",
                ],
            ];
            for place in ["proj", "proj/vendor/x", "proj/vendor/x/deps/y", "proj-wt"] {
                let cwd = sb.root().join(place);
                for cmd in commands {
                    let plain = sb.run(&git, cmd, &cwd);
                    let mut args = vec!["--git", git.to_str().unwrap()];
                    args.extend_from_slice(cmd);
                    let safe = sb.run(&safe_git, &args, &cwd);
                    assert!(
                        plain.stdout == safe.stdout
                            && plain.stderr == safe.stderr
                            && plain.status.code() == safe.status.code(),
                        "{} {}: git {} in {place}: outputs differ\n=== git\n{}\n=== safe-git\n{}",
                        git.display(),
                        b.name,
                        cmd.join(" "),
                        show(&plain),
                        show(&safe)
                    );
                }
            }
            // A destroy script removes the linked worktree from the superproject.
            let proj = sb.root().join("proj");
            let wt = sb.root().join("proj-wt");
            let rm = sb.run(
                &safe_git,
                &[
                    "--git",
                    git.to_str().unwrap(),
                    "worktree",
                    "remove",
                    wt.to_str().unwrap(),
                ],
                &proj,
            );
            assert!(
                rm.status.success() && !wt.exists(),
                "{} {}: safe-git worktree remove: {}",
                git.display(),
                b.name,
                show(&rm)
            );
        }
    }
}
