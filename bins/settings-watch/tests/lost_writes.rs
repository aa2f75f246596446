//! Nothing the agent wrote is lost, whatever the timing of its writers: a second writer that
//! truncates the file right after a first one closed it, a writer that keeps writing into the
//! file after it was reverted, a file too large to read whole, two such files in a row.

mod common;
use common::*;
use gitward::held::{Content, Store};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

const FILE: &str = ".claude/settings.json";
const BEFORE: &str = r#"{"permissions":{"deny":["Bash"]}}"#;

/// The bytes of every pending held write: inline, or kept whole in the store.
fn held_bytes(env: &Env) -> Vec<Vec<u8>> {
    let store = Store::open(&env.store_dir()).unwrap();
    let mut out = Vec::new();
    for h in store.pending().unwrap() {
        if let Some(Content::File { bytes, .. }) = &h.proposed {
            out.push(bytes.clone());
        }
        for k in &h.kept {
            out.push(std::fs::read(k).unwrap());
        }
    }
    out
}

fn held_has(env: &Env, want: &[u8]) -> bool {
    held_bytes(env).iter().any(|b| b == want)
}

#[test]
fn a_second_writer_truncating_after_a_close_is_waited_for() {
    for i in 0..6 {
        let env = Env::new();
        env.write(FILE, BEFORE.as_bytes());
        let w = env.start();
        let path = env.repo.join(FILE);
        let first = format!(r#"{{"permissions":{{"allow":["Bash(first{i})"]}}}}"#);
        let second = format!(r#"{{"permissions":{{"allow":["Bash(second{i})"]}}}}"#);
        std::fs::write(&path, &first).unwrap();
        // The second writer truncates at once, then pauses (descheduled, or slow) before it
        // writes: the first close's judgement must not take the empty file for the write.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::thread::sleep(Duration::from_millis(400 + 150 * (i % 3)));
        f.write_all(second.as_bytes()).unwrap();
        drop(f);
        assert!(
            eventually(Duration::from_secs(30), || {
                std::fs::read(&path).ok().as_deref() == Some(BEFORE.as_bytes())
                    && held_has(&env, second.as_bytes())
            }),
            "round {i}: file {:?}, held {:?}",
            std::fs::read_to_string(&path),
            held_bytes(&env)
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<Vec<_>>()
        );
        let (code, _) = w.stop();
        assert_eq!(code, 0);
    }
}

#[test]
fn writes_into_the_reverted_inode_are_held() {
    let env = Env::new();
    env.write(FILE, BEFORE.as_bytes());
    let w = env.start();
    let path = env.repo.join(FILE);
    // A writer that keeps the file open past the wait for quiet: judged (and reverted) at the
    // bound, its later write lands in the inode that was swapped out.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"permissions":{"#).unwrap();
    f.flush().unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    f.write_all(br#""allow":["Bash(late)"]}}"#).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(f);
    let whole = br#"{"permissions":{"allow":["Bash(late)"]}}"#;
    assert!(
        eventually(Duration::from_secs(30), || std::fs::read(&path)
            .ok()
            .as_deref()
            == Some(BEFORE.as_bytes())
            && held_has(&env, whole)),
        "file {:?}, held {:?}",
        std::fs::read_to_string(&path),
        held_bytes(&env)
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect::<Vec<_>>()
    );
    let (code, _) = w.stop();
    assert_eq!(code, 0);
}

#[test]
fn oversized_files_are_kept_whole_each_under_its_own_name() {
    let env = Env::new();
    env.write(FILE, BEFORE.as_bytes());
    let w = env.start();
    let path = env.repo.join(FILE);
    let big = |fill: u8| -> Vec<u8> {
        let mut v = br#"{"permissions":{"allow":["Bash(*)"]},"pad":""#.to_vec();
        v.extend(std::iter::repeat_n(fill, (4 << 20) + 4096));
        v.extend(br#""}"#);
        v
    };
    let a = big(b'a');
    let b = big(b'b');
    for (n, content) in [&a, &b].into_iter().enumerate() {
        let tmp = env.repo.join(format!(".claude/incoming{n}"));
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert!(
            eventually(Duration::from_secs(30), || std::fs::read(&path)
                .ok()
                .as_deref()
                == Some(BEFORE.as_bytes())
                && held_has(&env, content)),
            "write {n}: held sizes {:?}",
            held_bytes(&env).iter().map(Vec::len).collect::<Vec<_>>()
        );
    }
    // Both are still whole: the second did not overwrite the first.
    assert!(held_has(&env, &a) && held_has(&env, &b));
    // Nothing set aside under a fixed name beside the file.
    let beside: Vec<PathBuf> = std::fs::read_dir(env.repo.join(".claude"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("gitward-held-x"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
    let (code, _) = w.stop();
    assert_eq!(code, 0);
}

#[test]
fn folders_set_aside_never_share_a_name() {
    let env = Env::new();
    env.write(FILE, BEFORE.as_bytes());
    let w = env.start();
    let path = env.repo.join(FILE);
    for n in 0..2 {
        let tmp = env.repo.join(format!(".claude/made{n}"));
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("inside.txt"), format!("folder {n}")).unwrap();
        // Swapped in atomically (a folder cannot be renamed over a file).
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &tmp,
            nix::fcntl::AT_FDCWD,
            &path,
            nix::fcntl::RenameFlags::RENAME_EXCHANGE,
        )
        .unwrap();
        assert!(
            eventually(Duration::from_secs(30), || std::fs::read(&path)
                .ok()
                .as_deref()
                == Some(BEFORE.as_bytes())),
            "folder {n} not reverted"
        );
        std::fs::remove_file(&tmp).unwrap();
    }
    // Each folder kept whole, under a name of its own.
    let mut kept: Vec<String> = std::fs::read_dir(env.repo.join(".claude"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .filter_map(|p| std::fs::read_to_string(p.join("inside.txt")).ok())
        .collect();
    kept.sort();
    assert_eq!(kept, ["folder 0", "folder 1"]);
    let (code, _) = w.stop();
    assert_eq!(code, 0);
}
