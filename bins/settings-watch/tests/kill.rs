//! Kill tests: SIGKILL the watcher at each step of a hold (crash points), and at random
//! moments, many times. After a restart every agent write is either the approved state or in
//! the held store, the file is never half-written, and nothing is held twice.

mod common;
use common::*;
use gitward::held::{Content, Store};
use std::process::Stdio;
use std::time::Duration;

const FILE: &str = ".claude/settings.json";
const BEFORE: &str = r#"{"permissions":{"allow":["Read"]}}"#;

/// The steps of a hold, in order (see `settings::hold_and_revert` and `held::Store`); the last
/// three run on the store's sync thread (`held::sync`): after the fsyncs, after the displaced
/// entry is unlinked, at the end of the batch.
const STEPS: &[&str] = &[
    "record-written",
    "record-renamed",
    "revert-tmp-written",
    "revert-swapped",
    "held-synced",
    "revert-tmp-removed",
    "revert-done",
];

fn widening(i: usize) -> String {
    format!(r#"{{"permissions":{{"allow":["Read","Bash(step-{i})"]}}}}"#)
}

fn held_bytes(env: &Env) -> Vec<Vec<u8>> {
    Store::open(&env.store_dir())
        .unwrap()
        .pending()
        .unwrap()
        .into_iter()
        .filter_map(|h| h.proposed.and_then(|p| p.bytes().map(<[u8]>::to_vec)))
        .collect()
}

fn leftovers(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.repo.join(".claude"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".gitward-"))
        .collect()
}

/// Initialise the approved state (first start), without a crash point.
fn initialise(env: &Env) {
    env.write(FILE, BEFORE.as_bytes());
    let st = env
        .cmd()
        .args(["check", "--policy"])
        .arg(&env.policy)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0));
}

#[test]
fn sigkill_at_each_step_of_a_hold() {
    for (k, step) in STEPS.iter().enumerate() {
        for round in 0..3 {
            let env = Env::new();
            initialise(&env);
            let path = env.repo.join(FILE);
            // Returns once it watches (the initial pass makes no record: nothing changed); a
            // fixed 300 ms wait let the write come before the watches under load.
            let mut w = env.start_with(|c| {
                c.env("GITWARD_CRASH_AT", step).stderr(Stdio::null());
            });
            let p = widening(k * 10 + round);
            std::fs::write(&path, &p).unwrap();
            let st = w.child.wait().unwrap();
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                st.signal(),
                Some(9),
                "{step}: the watcher did not reach the crash point"
            );
            // Never half-written: exactly the approved bytes or the agent's.
            let now = std::fs::read(&path).unwrap();
            assert!(
                now == BEFORE.as_bytes() || now == p.as_bytes(),
                "{step}: half-written file {:?}",
                String::from_utf8_lossy(&now)
            );
            // Restart: the pass finishes what the crash interrupted.
            let out = env
                .cmd()
                .args(["check", "--policy"])
                .arg(&env.policy)
                .output()
                .unwrap();
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{step}: {out:?}"
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                BEFORE.as_bytes(),
                "{step}: not reverted after restart"
            );
            let held = held_bytes(&env);
            assert_eq!(
                held.iter().filter(|b| *b == p.as_bytes()).count(),
                1,
                "{step}: the write must be held exactly once, held: {:?}",
                held.iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .collect::<Vec<_>>()
            );
            assert!(
                leftovers(&env).is_empty(),
                "{step}: leftovers {:?}",
                leftovers(&env)
            );
        }
    }
}

#[test]
fn sigkill_at_random_moments() {
    let env = Env::new();
    initialise(&env);
    let path = env.repo.join(FILE);
    let rounds = std::env::var("KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let mut written = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..rounds {
        let w = env.start();
        let p = widening(1000 + i);
        // Write (rename-over), then kill after 0-4 ms: anywhere in the hold.
        let tmp = env.repo.join(".claude/.swap");
        std::fs::write(&tmp, &p).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_micros(seed % 4000));
        w.kill9();
        written.push(p);
        let now = std::fs::read(&path).unwrap();
        assert!(
            now == BEFORE.as_bytes() || written.iter().any(|x| x.as_bytes() == now),
            "round {i}: half-written {:?}",
            String::from_utf8_lossy(&now)
        );
    }
    // A final restart settles everything.
    let w = env.start();
    assert!(eventually(Duration::from_secs(30), || std::fs::read(&path)
        .unwrap()
        == BEFORE.as_bytes()));
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    let held = held_bytes(&env);
    for p in &written {
        assert_eq!(
            held.iter().filter(|b| *b == p.as_bytes()).count(),
            1,
            "a write is lost or held twice: {p}"
        );
    }
    assert!(leftovers(&env).is_empty(), "{:?}", leftovers(&env));
    let _ = Content::Absent;
}
