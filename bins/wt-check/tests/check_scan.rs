//! `check` with the commit scan: the scan's events come after the git-folder check's and the
//! outcome is the worse of the two, with and without --restore (the scan runs after the
//! restore, so it sees the repository as restored).

mod common;

fn kinds(ev: &[serde_json::Value]) -> Vec<String> {
    ev.iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn scan_events_follow_the_check_events_with_and_without_restore() {
    let w = common::world();
    w.pin();
    // A planted hook (git-folder check) and a commit selecting a filter driver (scan).
    let h = w.git_dir().join("hooks/post-checkout");
    std::fs::write(&h, "#!/bin/sh\necho pwned\n").unwrap();
    let m = w.main();
    std::fs::write(m.join(".gitattributes"), "*.c filter=evil\n").unwrap();
    w.git(&m, &["add", ".gitattributes"]);
    w.git(&m, &["commit", "-q", "-m", "attrs"]);

    let (code, ev) = w.check(false);
    assert_eq!(code, 1, "{ev:?}");
    let k = kinds(&ev);
    let hook = k
        .iter()
        .position(|x| x == "hook_planted")
        .expect("hook_planted");
    let flagged = k
        .iter()
        .position(|x| x == "commit_flagged")
        .expect("commit_flagged");
    assert!(hook < flagged, "{k:?}");
    assert!(h.exists(), "nothing is moved without --restore");

    // The same findings, same order, when the scan runs after a restore.
    let (code_r, ev_r) = w.check(true);
    assert_eq!(code_r, 1);
    let k_r = kinds(&ev_r);
    let flagged_r = k_r
        .iter()
        .position(|x| x == "commit_flagged")
        .expect("commit_flagged");
    assert!(
        k_r.iter().take(flagged_r).any(|x| x == "hook_planted"),
        "{k_r:?}"
    );
    assert!(
        k_r[flagged_r..]
            .iter()
            .all(|x| x == "commit_flagged" || x == "history_rewritten"),
        "{k_r:?}"
    );
    assert!(!h.exists(), "moved aside by --restore");
}
