//! A diff driver the repository defines (`diff.<driver>.textconv`, `diff.<driver>.command`,
//! `diff.external`) is neutralised without breaking the command: safe-git's output is
//! byte-identical to git's own run with `--no-textconv` / `--no-ext-diff` (which runs no
//! driver), where plain git runs the planted programs (the positive control).

mod common;

use common::{bin, gits, mask_uncommitted_dates, Sandbox};

const SETUP: &str = r#"
git init -q r && cd r
echo '*.txt diff=evil' > .gitattributes
printf 'a\nb\n' > a.txt && printf '\000bin' > b.bin && echo '*.bin diff=evil' >> .gitattributes
git add . && git commit -qm one
printf 'c\n' >> a.txt && printf 'more\000' >> b.bin && git commit -qam two
echo staged >> a.txt && git add a.txt && echo unstaged >> a.txt
git stash -q && echo again >> a.txt
git config diff.evil.textconv "touch $PWD/../TEXTCONV_RAN; cat"
git config diff.evil.command "touch $PWD/../COMMAND_RAN; true"
git config diff.external "touch $PWD/../EXTERNAL_RAN; true"
"#;

/// (safe-git's command, plain git's equivalent without the drivers)
const MATRIX: &[(&[&str], &[&str])] = &[
    (&["diff"], &["diff", "--no-textconv", "--no-ext-diff"]),
    (
        &["diff", "HEAD~1"],
        &["diff", "--no-textconv", "--no-ext-diff", "HEAD~1"],
    ),
    (
        &["log", "-p"],
        &["log", "--no-textconv", "--no-ext-diff", "-p"],
    ),
    (
        &["log", "-p", "--textconv", "--ext-diff"],
        &["log", "--no-textconv", "--no-ext-diff", "-p"],
    ),
    (&["show"], &["show", "--no-textconv", "--no-ext-diff"]),
    (
        &["show", "HEAD:a.txt"],
        &["show", "--no-textconv", "HEAD:a.txt"],
    ),
    (&["blame", "a.txt"], &["blame", "--no-textconv", "a.txt"]),
    (
        &["annotate", "a.txt"],
        &["annotate", "--no-textconv", "a.txt"],
    ),
    (
        &["cat-file", "--textconv", "HEAD:a.txt"],
        &["cat-file", "-p", "HEAD:a.txt"],
    ),
    (
        &["grep", "--textconv", "-n", "more"],
        &["grep", "-n", "more"],
    ),
    (
        &["diff-tree", "-p", "--textconv", "HEAD~1", "HEAD"],
        &["diff-tree", "-p", "HEAD~1", "HEAD"],
    ),
    (
        &["stash", "show", "-p"],
        &["stash", "show", "--no-textconv", "--no-ext-diff", "-p"],
    ),
    (
        &["reflog", "-p", "-2"],
        &["reflog", "--no-textconv", "--no-ext-diff", "-p", "-2"],
    ),
    // `-h` alone prints the usage (found by safe_git_argv_differential: an inserted
    // `--no-textconv` made `grep -h` an option, "no pattern given").
    (&["grep", "-h"], &["grep", "-h"]),
    (&["log", "-h"], &["log", "-h"]),
];

#[test]
fn a_neutralised_diff_driver_leaves_the_command_working() {
    let safe_git = bin("safe-git");
    for git in gits() {
        let sb = Sandbox::new(&git);
        sb.sh(SETUP);
        let r = sb.root().join("r");
        let ran = |name: &str| sb.root().join(name).exists();
        // Positive control: plain git runs the repository's textconv and diff command.
        sb.run(&git, &["log", "-p", "-1"], &r);
        assert!(ran("TEXTCONV_RAN"), "control: git log -p ran no textconv");
        sb.run(&git, &["diff"], &r);
        assert!(
            ran("EXTERNAL_RAN") || ran("COMMAND_RAN"),
            "control: git diff ran no external diff"
        );
        for f in ["TEXTCONV_RAN", "COMMAND_RAN", "EXTERNAL_RAN"] {
            let _ = std::fs::remove_file(sb.root().join(f));
        }
        for (cmd, equivalent) in MATRIX {
            let mut args = vec!["--git", git.to_str().unwrap()];
            args.extend_from_slice(cmd);
            let safe = sb.run(&safe_git, &args, &r);
            let plain = sb.run(&git, equivalent, &r);
            let usage = cmd.last() == Some(&"-h");
            assert_eq!(
                safe.status.code(),
                Some(if usage { 129 } else { 0 }),
                "{} safe-git {cmd:?} failed: {}",
                git.display(),
                String::from_utf8_lossy(&safe.stderr)
            );
            assert_eq!(
                (mask_uncommitted_dates(&plain.stdout), &plain.stderr),
                (mask_uncommitted_dates(&safe.stdout), &safe.stderr),
                "{} safe-git {cmd:?} differs from git {equivalent:?}",
                git.display()
            );
            for f in ["TEXTCONV_RAN", "COMMAND_RAN", "EXTERNAL_RAN"] {
                assert!(!ran(f), "{} {cmd:?}: {f}", git.display());
            }
        }
        // The forms that run a textconv internally and take no --no-textconv are refused with
        // the config code, not left to die.
        for cmd in [
            &["status", "-v"][..],
            &["status", "-sv"],
            &["cat-file", "--batch", "--textconv"],
            &["range-diff", "HEAD~2", "HEAD~1", "HEAD"],
        ] {
            let mut args = vec!["--git", git.to_str().unwrap()];
            args.extend_from_slice(cmd);
            let safe = sb.run(&safe_git, &args, &r);
            assert_eq!(
                safe.status.code(),
                Some(123),
                "{cmd:?}: {}",
                String::from_utf8_lossy(&safe.stderr)
            );
        }
    }
}

#[test]
fn both_forms_of_the_now_date_are_masked() {
    let blame = b"00000000 (Not Committed Yet 2026-12-06 07:55:49 +0000 4) again\n";
    let annotate = b"00000000\t(Not Committed Yet\t2026-12-06 07:55:49 +0000\t4)again\n";
    for line in [&blame[..], &annotate[..]] {
        let later: Vec<u8> = line
            .iter()
            .map(|&b| if b == b'9' { b'8' } else { b })
            .collect();
        assert_ne!(line, &later[..]);
        assert_eq!(mask_uncommitted_dates(line), mask_uncommitted_dates(&later));
        // The content after the date stays compared.
        let mut other = line.to_vec();
        *other.last_mut().unwrap() = b'?';
        assert_ne!(mask_uncommitted_dates(line), mask_uncommitted_dates(&other));
    }
}
