//! Every tool reads config the way git reads it (`gitward::config`, git's own parser), on every
//! git on this machine:
//!
//! * armed: a driver under a header git reads in a surprising way (`[diff.A "b"]` is
//!   `diff.a.b`, a tab before the quote, `[diff. ""]`, `[filter.A "x"]`), selected by an
//!   attribute — the canary fires under plain git (positive control), safe-git runs git
//!   (no refusal) without firing it, and `wt-check audit` flags the key (exit 1);
//! * honest but odd: files git reads without complaint (a lone CR, a NUL in a comment, a key
//!   before any header, an include cycle or a broken file behind a false `includeIf`, a
//!   broken `config.worktree` while `extensions.worktreeConfig` is off) — safe-git's output
//!   is git's, byte for byte, and the audit does not give up (exit 2);
//! * a config error is named as one: safe-git exits 123 (config), naming the file and line.

mod common;

use common::{bin, gits, Sandbox};
use std::path::Path;
use std::process::Output;

fn safe_git(s: &Sandbox, repo: &Path, args: &[&str]) -> Output {
    let mut a = vec!["--git", s.git.to_str().unwrap()];
    a.extend_from_slice(args);
    s.run(&bin("safe-git"), &a, repo)
}

fn canary(s: &Sandbox) -> Option<String> {
    std::fs::read_to_string(s.root().join("canary")).ok()
}

fn reset_canary(s: &Sandbox) {
    let _ = std::fs::remove_file(s.root().join("canary"));
}

const REPO: &str = r#"
git init -q repo && cd repo
echo one > a.txt && git add a.txt && git commit -qm one
printf '#!/bin/sh\necho "fired: $0" >> "%s/canary"\ncat "$1"\n' "$PWD/.." > ../conv.sh
chmod +x ../conv.sh
"#;

struct Armed {
    name: &'static str,
    /// Appended to the setup (in `repo/`).
    setup: &'static str,
    command: &'static [&'static str],
    /// The key git reads, as `git config --list` prints it.
    key: &'static str,
}

const ARMED: &[Armed] = &[
    Armed {
        name: "[diff.A \"b\"] + diff=a.b, git diff",
        setup: r#"echo '*.txt diff=a.b' > .gitattributes && git add . && git commit -qm attrs
printf '[diff.A "b"]\n\ttextconv = %s\n' "$PWD/../conv.sh" >> .git/config
echo more >> a.txt"#,
        command: &["diff"],
        key: "diff.a.b.textconv",
    },
    Armed {
        name: "[diff.a<TAB>\"b\"] + diff=a.b, git log -p",
        setup: r#"echo '*.txt diff=a.b' > .gitattributes && git add . && git commit -qm attrs
echo more >> a.txt && git commit -qam two
printf '[diff.a\t"b"]\n\ttextconv = %s\n' "$PWD/../conv.sh" >> .git/config"#,
        command: &["log", "-p"],
        key: "diff.a.b.textconv",
    },
    Armed {
        name: "[diff. \"\"] + diff=., git show",
        setup: r#"echo '*.txt diff=.' > .gitattributes && git add . && git commit -qm attrs
echo more >> a.txt && git commit -qam two
printf '[diff. ""]\n\ttextconv = %s\n' "$PWD/../conv.sh" >> .git/config"#,
        command: &["show"],
        key: "diff...textconv",
    },
    Armed {
        name: "[filter.A \"x\"] + filter=a.x, git status",
        setup: r#"echo '*.txt filter=a.x' > .gitattributes && git add . && git commit -qm attrs
printf '[filter.A "x"]\n\tclean = %s\n' "$PWD/../conv.sh" >> .git/config
touch -d "2020-01-02 00:00" a.txt"#,
        command: &["status"],
        key: "filter.a.x.clean",
    },
    Armed {
        name: "a lone CR between header and key, git status",
        setup: r#"echo '*.txt filter=cr' > .gitattributes && git add . && git commit -qm attrs
printf '[filter "cr"]\r\tclean = %s\n' "$PWD/../conv.sh" >> .git/config
touch -d "2020-01-02 00:00" a.txt"#,
        command: &["status"],
        key: "filter.cr.clean",
    },
    // git takes any byte but newline and NUL in a subsection; safe-git neutralises the name by
    // its bytes (`-c filter.\xff.clean=`), not a lossy copy of it.
    Armed {
        name: "[filter \"\\xff\"] + filter=\\xff, git status",
        setup: r#"printf '*.txt filter=\377\n' > .gitattributes && git add . && git commit -qm attrs
printf '[filter "\377"]\n\tclean = %s\n' "$PWD/../conv.sh" >> .git/config
touch -d "2020-01-02 00:00" a.txt"#,
        command: &["status"],
        key: "filter.\u{fffd}.clean",
    },
    Armed {
        name: "[diff \"a\\xfeb\"] + diff=a\\xfeb, git log -p",
        setup: r#"printf '*.txt diff=a\376b\n' > .gitattributes && git add . && git commit -qm attrs
echo more >> a.txt && git commit -qam two
printf '[diff "a\376b"]\n\ttextconv = %s\n' "$PWD/../conv.sh" >> .git/config"#,
        command: &["log", "-p"],
        key: "diff.a\u{fffd}b.textconv",
    },
];

#[test]
fn odd_headers_fire_under_git_not_under_safe_git_and_the_audit_flags_them() {
    for g in gits() {
        for case in ARMED {
            let s = Sandbox::new(&g);
            s.sh(&format!("{REPO}{}", case.setup));
            let repo = s.root().join("repo");
            let who = format!("{} {}", g.display(), case.name);
            // git's own reading of the key.
            let list = s.run(&g, &["config", "--list", "--local"], &repo);
            assert!(
                String::from_utf8_lossy(&list.stdout).contains(&format!("{}=", case.key)),
                "{who}: git does not read {}: {}",
                case.key,
                String::from_utf8_lossy(&list.stdout)
            );
            // Positive control: plain git runs the driver.
            let out = s.run(&g, case.command, &repo);
            assert!(
                canary(&s).is_some(),
                "{who}: the canary did not fire under plain git (not a real case here): {}",
                String::from_utf8_lossy(&out.stderr)
            );
            reset_canary(&s);
            // safe-git runs the command and the driver stays quiet.
            let out = safe_git(&s, &repo, case.command);
            assert_eq!(canary(&s), None, "{who}: the canary fired under safe-git");
            // It ran git rather than refusing (an emptied textconv makes git's diff fail
            // with its own 128, as for any neutralised driver name).
            assert!(
                !matches!(out.status.code(), Some(120..=124)),
                "{who}: safe-git refused: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // The audit flags the key git reads.
            let out = s.run(
                &bin("wt-check"),
                &["audit", "--format", "json", repo.to_str().unwrap()],
                s.root(),
            );
            assert_eq!(canary(&s), None, "{who}: the audit fired the canary");
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(1), "{who}: audit: {text}");
            assert!(
                text.contains(case.key),
                "{who}: the audit does not name {}: {text}",
                case.key
            );
        }
    }
}

/// Files git reads without complaint (and that arm nothing): safe-git's output is git's.
const HONEST: &[(&str, &str)] = &[
    (
        "a lone CR in a value",
        r#"printf '[x]\n\ty = a\rb\n' >> .git/config"#,
    ),
    (
        "a NUL byte in a comment",
        r#"printf '# a \000 comment\n[x]\n\ty = 1\n' >> .git/config"#,
    ),
    (
        "a NUL byte ending a value",
        r#"printf '[x]\n\ty = a\000b\n' >> .git/config"#,
    ),
    (
        "a key before any section header",
        r#"{ printf 'k = v\n'; cat .git/config; } > .git/c && mv .git/c .git/config"#,
    ),
    (
        "an include cycle behind a false includeIf",
        r#"printf '[includeIf "onbranch:nope"]\n\tpath = config\n' >> .git/config"#,
    ),
    (
        "a broken file behind a false includeIf",
        r#"printf '[broken\n' > .git/broken.cfg
printf '[includeIf "gitdir:/nowhere/"]\n\tpath = broken.cfg\n' >> .git/config"#,
    ),
    (
        "a folder as an includeIf target behind an unknown condition",
        r#"mkdir .git/folder
printf '[includeIf "nosuch:x"]\n\tpath = folder\n' >> .git/config"#,
    ),
    (
        "a broken config.worktree while extensions.worktreeConfig is off",
        r#"printf '[broken\n' > .git/config.worktree"#,
    ),
    (
        "non-UTF-8 driver names whose keys run nothing",
        r#"printf '[diff "\377"]\n\tbinary = true\n[merge "\376"]\n\tname = m\n' >> .git/config"#,
    ),
];

#[test]
fn files_git_reads_fine_are_not_refused() {
    for g in gits() {
        for (name, setup) in HONEST {
            let s = Sandbox::new(&g);
            s.sh(&format!("{REPO}echo two >> a.txt\n{setup}"));
            let repo = s.root().join("repo");
            let who = format!("{} {name}", g.display());
            for cmd in [&["status"][..], &["diff"], &["log", "-p", "-1"]] {
                let plain = s.run(&g, cmd, &repo);
                assert_eq!(
                    plain.status.code(),
                    Some(0),
                    "{who}: git {cmd:?} fails: {}",
                    String::from_utf8_lossy(&plain.stderr)
                );
                let safe = safe_git(&s, &repo, cmd);
                assert_eq!(
                    (
                        safe.status.code(),
                        String::from_utf8_lossy(&safe.stderr),
                        String::from_utf8_lossy(&safe.stdout)
                    ),
                    (
                        plain.status.code(),
                        String::from_utf8_lossy(&plain.stderr),
                        String::from_utf8_lossy(&plain.stdout)
                    ),
                    "{who}: safe-git {cmd:?} differs from git"
                );
            }
            let audit = s.run(
                &bin("wt-check"),
                &["audit", "--format", "json", repo.to_str().unwrap()],
                s.root(),
            );
            assert_ne!(
                audit.status.code(),
                Some(2),
                "{who}: the audit gives up: {}",
                String::from_utf8_lossy(&audit.stdout)
            );
        }
    }
}

#[test]
fn a_config_error_is_named_as_one() {
    for g in gits() {
        let s = Sandbox::new(&g);
        s.sh(&format!(
            "{REPO}printf '[x]\\n\\ty = \"open\\n' >> .git/config"
        ));
        let repo = s.root().join("repo");
        let plain = s.run(&g, &["status"], &repo);
        assert_ne!(
            plain.status.code(),
            Some(0),
            "{}: git reads it",
            g.display()
        );
        let safe = safe_git(&s, &repo, &["status"]);
        let err = String::from_utf8_lossy(&safe.stderr);
        assert_eq!(safe.status.code(), Some(123), "{}: {err}", g.display());
        assert!(
            err.contains(".git/config") && err.contains("bad config line"),
            "{}: {err}",
            g.display()
        );
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}
