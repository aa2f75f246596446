//! safe-git's own argument checks (`safegit::args::parse`): total on any command line (an
//! error, never a panic), and what it allows is passed to git unchanged, names an
//! allow-listed subcommand and no catalogue key with `-c`; and the scan of git's option
//! tables (`safegit::options::scan`) is total on any words, with every word read once.
//! Input: words separated by NUL.
//! The differential run against git itself (canaries, written files, byte-identical output)
//! is `suite/tests/safe_git_argv_differential.rs` (`GITWARD_DIFF_N` for long runs): a git
//! process per input is too slow for libFuzzer.
#![no_main]

use gitward::safegit::args::{parse, ALLOWED};
use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

fuzz_target!(|data: &[u8]| {
    if data.len() > 4096 {
        return;
    }
    let words: Vec<OsString> = data
        .split(|b| *b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect();
    let texts: Vec<&str> = words.iter().filter_map(|w| w.to_str()).collect();
    for t in gitward::safegit::options::tables() {
        for specs in t.commands.values() {
            for stop in [false, true] {
                let read = gitward::safegit::options::scan(specs, &texts, stop);
                // Each word is read as options (one per letter of a bundle at most), an
                // argument, a terminator or unknown, and a value is part of its option.
                let most: usize = texts.iter().map(|w| w.len().max(1)).sum();
                assert!(read.len() <= most, "{} readings of {} words", read.len(), texts.len());
            }
        }
    }
    if let Ok(g) = parse(&words) {
        assert_eq!(g.to_argv(), words, "allowed lines reach git unchanged");
        assert!(ALLOWED.contains(&g.subcommand.as_str()));
        for k in &g.config_keys {
            assert!(!gitward::catalogue::is_dangerous(k), "-c {k} passed");
        }
    }
});
