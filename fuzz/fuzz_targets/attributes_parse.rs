//! gitattributes syntax on arbitrary bytes: `gitward::attributes::parse_file` is total and
//! bounded (no more lines than the input has, no state longer than the input), and a line
//! read alone gives what it gives inside the file.
#![no_main]

use gitward::attributes::{parse_file, parse_line, State};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lines = parse_file(data);
    let count = data.iter().filter(|&&b| b == b'\n').count() + 1;
    assert!(lines.len() <= count);
    for l in &lines {
        assert!(l.number >= 1 && l.number <= count);
        assert!(l.pattern.is_some() != l.macro_name.is_some());
        assert!(l.states.len() <= data.len());
        for (name, state) in &l.states {
            assert!(name.len() <= data.len());
            if let State::Value(v) = state {
                assert!(v.len() <= data.len());
            }
        }
        let raw = data.split(|&b| b == b'\n').nth(l.number - 1).unwrap();
        assert_eq!(parse_line(raw, l.number).as_ref(), Some(l));
    }
});
