//! git config syntax on arbitrary bytes: `gitward::config::parse_bytes` (git's own grammar,
//! every value dialect) is total — no panic — and bounded: no more entries or sections than
//! bytes, no value or subsection longer than the input.
#![no_main]

use gitward::config::{parse_bytes, Dialect};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for dialect in [
        Dialect::Verbatim,
        Dialect::SquashInnerWhitespace,
        Dialect::Any,
    ] {
        let raw = parse_bytes(data, dialect);
        assert!(raw.entries.len() <= data.len());
        assert!(raw.sections.len() <= data.len());
        let lines = data.iter().filter(|&&b| b == b'\n').count() + 1;
        if let Some(bad) = raw.bad_line {
            // git counts the end of the file as one more line (`get_next_char` returns a
            // newline at EOF and counts it): a quote or continuation open at the end is
            // "bad config line <lines + 1>", as the differential test checks against git.
            assert!(bad >= 1 && bad <= lines + 1, "bad line {bad} of {lines}");
        }
        for e in &raw.entries {
            assert!(e.line >= 1 && e.line <= lines);
            assert!(e.value.as_ref().map_or(0, |v| v.len()) <= data.len());
            assert!(e.subsection.as_ref().map_or(0, |s| s.len()) <= data.len());
            let _ = e.config_key();
        }
    }
});
