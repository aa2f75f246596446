//! Races between the agent and the watcher: the folder removed and recreated while the
//! watcher puts a file back in it; a writer that holds the file open. After each, every
//! widening write is held (never overwritten unseen) and the file is back to its approved
//! state.

mod common;
use common::*;
use gitward::held::Store;
use std::io::Write;
use std::time::Duration;

const FILE: &str = ".claude/settings.json";
const BEFORE: &str = r#"{"permissions":{"deny":["Bash"]}}"#;

fn held_texts(env: &Env) -> Vec<String> {
    Store::open(&env.store_dir())
        .unwrap()
        .pending()
        .unwrap()
        .into_iter()
        .filter_map(|h| {
            h.proposed
                .and_then(|p| p.bytes().map(|b| String::from_utf8_lossy(b).into_owned()))
        })
        .collect()
}

#[test]
fn folder_removed_and_recreated_while_reverting() {
    for i in 0..15 {
        let env = Env::new();
        env.write(FILE, BEFORE.as_bytes());
        let w = env.start();
        let dir = env.repo.join(".claude");
        while std::fs::remove_dir_all(&dir).is_err() {}
        std::fs::create_dir_all(&dir).unwrap();
        let evil = format!(r#"{{"permissions":{{"defaultMode":"bypassPermissions","n":{i}}}}}"#);
        std::fs::write(dir.join("settings.json"), &evil).unwrap();
        let path = env.repo.join(FILE);
        assert!(
            eventually(Duration::from_secs(30), || std::fs::read(&path)
                .ok()
                .as_deref()
                == Some(BEFORE.as_bytes())
                && held_texts(&env).contains(&evil)),
            "round {i}: file {:?}, held {:?}",
            std::fs::read_to_string(&path),
            held_texts(&env)
        );
        let (code, _) = w.stop();
        assert_eq!(code, 0);
    }
}

/// The watcher judges a file still open for writing at the latest `QUIET_MAX` after its first
/// event. A test whose writer means to stay under that bound but was descheduled past it
/// (the open-to-close time measured, with a margin for the watcher's own delay) is not
/// judged: `attempt` returns false and is tried again, a bounded number of times; one that
/// never stays under the bound fails under `CI=true`.
fn within_the_bound(what: &str, mut attempt: impl FnMut(u32) -> bool) {
    let tries = 5;
    if (1..=tries).any(&mut attempt) {
        return;
    }
    let msg = format!("{what}: the writer overran the watcher's bound {tries} times");
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "{msg} (CI=true: a test that never got its condition fails)"
    );
    eprintln!("not judged: {msg}");
}

/// Whether a writer open for `open_for` stayed under the watcher's bound by a margin.
fn under_the_bound(open_for: Duration) -> bool {
    open_for + Duration::from_millis(500) < gitward::settings::watch::QUIET_MAX
}

#[test]
fn writer_holding_the_file_open() {
    within_the_bound("writer_holding_the_file_open", |n| {
        let env = Env::new();
        env.write(FILE, BEFORE.as_bytes());
        let w = env.start();
        let path = env.repo.join(FILE);
        // Open (truncating), pause, write in two parts, pause, close: judged once complete.
        let opened = std::time::Instant::now();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::thread::sleep(Duration::from_millis(40));
        f.write_all(br#"{"permissions":{"deny":[],"#).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        f.write_all(br#""allow":["Bash(*)"]}}"#).unwrap();
        drop(f);
        let open_for = opened.elapsed();
        if !under_the_bound(open_for) {
            eprintln!("try {n}: the file was open {open_for:?}; tried again");
            return false;
        }
        let whole = r#"{"permissions":{"deny":[],"allow":["Bash(*)"]}}"#.to_string();
        assert!(
            eventually(Duration::from_secs(30), || std::fs::read(&path).unwrap()
                == BEFORE.as_bytes()
                && held_texts(&env).contains(&whole)),
            "held: {:?}",
            held_texts(&env)
        );
        // Nothing partial was held.
        assert!(
            held_texts(&env).iter().all(|t| t == &whole),
            "{:?}",
            held_texts(&env)
        );
        let (code, _) = w.stop();
        assert_eq!(code, 0);
        true
    });
}

/// A writer descheduled between its create and its write (CI load did it: the watcher judged
/// the empty file as unparseable, held it, and then held the honest write that landed during
/// the revert). The empty file is quiet but unfinished: the watcher waits for the close, and
/// the narrowing write is accepted, nothing held.
#[test]
fn writer_paused_between_create_and_write() {
    within_the_bound("writer_paused_between_create_and_write", |n| {
        let env = Env::new();
        std::fs::create_dir_all(env.repo.join(".claude")).unwrap();
        let mut w = env.start();
        let path = env.repo.join(FILE);
        let created = std::time::Instant::now();
        let mut f = std::fs::File::create(&path).unwrap();
        // Longer than the watcher's quiet time (150 ms), shorter than its bound (2 s).
        std::thread::sleep(Duration::from_millis(600));
        f.write_all(BEFORE.as_bytes()).unwrap();
        drop(f);
        let open_for = created.elapsed();
        if !under_the_bound(open_for) {
            eprintln!("try {n}: the file was open {open_for:?}; tried again");
            return false;
        }
        let shown = path.display().to_string();
        let accepted = w.wait_for(
            |e| e["event"] == "settings_write_accepted" && e["path"] == shown.as_str(),
            Duration::from_secs(30),
        );
        assert!(accepted.is_some(), "{:#?}", w.seen);
        assert!(
            !w.seen.iter().any(|e| e["event"] == "settings_write_held"),
            "{:#?}",
            w.seen
        );
        assert_eq!(std::fs::read(&path).unwrap(), BEFORE.as_bytes());
        assert!(held_texts(&env).is_empty(), "{:?}", held_texts(&env));
        w.stop();
        true
    });
}
