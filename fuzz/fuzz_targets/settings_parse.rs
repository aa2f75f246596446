//! The settings parsers (`settings::parse::parse`: JSON, JSON with comments, TOML, dotenv):
//! total on arbitrary bytes (an error, never a panic), and `strip_jsonc` keeps what it does
//! not strip (line count, strings). The differential runs against VS Code's `jsonc-parser`,
//! python's `tomllib` and `python-dotenv` are in `lib/tests/differential_settings.rs`
//! (`GITWARD_DIFF_N` for long runs): a process per input is too slow for libFuzzer.
#![no_main]

use gitward::settings::parse::{parse, strip_jsonc};
use gitward::settings::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for f in [
        Format::Json,
        Format::Jsonc,
        Format::Toml,
        Format::Shell,
        Format::Opaque,
    ] {
        let _ = parse(f, data);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(out) = strip_jsonc(text) {
            assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        }
    }
});
