//! `.gitmodules` on arbitrary bytes: the commit scan's rules (`check_gitmodules`) and
//! safe-git's reading of `submodule.<name>.ignore` are total and bounded.
#![no_main]

use gitward::scan::rules::check_gitmodules;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let findings = check_gitmodules(data);
    // At most a few findings per byte: every one names a line, a name or a value.
    assert!(findings.len() <= 4 * data.len() + 2);
    let keys = gitward::safegit::gitmodules_ignore_keys(data);
    assert!(keys.len() <= data.len());
});
