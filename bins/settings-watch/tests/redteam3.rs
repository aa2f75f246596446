//! Third red-team pass (docs/redteam3.md): a write through a shared memory mapping raises
//! no inotify event while the mapping is held, however long.

mod common;

use common::{eventually, state, Env};
use std::num::NonZeroUsize;
use std::os::fd::AsFd;
use std::time::Duration;

/// How long a test waits for what the watcher must do (was 3 to 6 s). Each wait ends as soon
/// as it holds; the bound only has to outlast a loaded 2-core machine.
const T: Duration = Duration::from_secs(30);

#[test]
fn write_through_a_shared_mapping_is_held() {
    let env = Env::new();
    let approved = br#"{"chat.tools.autoApprove": false}"#;
    env.write(".vscode/settings.json", approved);
    let mut w = env.start();
    let path = env.repo.join(".vscode/settings.json");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let len = NonZeroUsize::new(approved.len()).unwrap();
    // SAFETY: a fresh shared mapping of a file we opened; only this test touches it, and it
    // is unmapped below before the file goes away.
    let map = unsafe {
        nix::sys::mman::mmap(
            None,
            len,
            nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE,
            nix::sys::mman::MapFlags::MAP_SHARED,
            file.as_fd(),
            0,
        )
        .unwrap()
    };
    // The descriptor is closed at once: the mapping keeps the file open, so no close event
    // comes until it is unmapped.
    drop(file);
    let widening = br#"{"chat.tools.autoApprove": true }"#;
    assert_eq!(widening.len(), approved.len());
    // SAFETY: the mapping is `len` bytes long and writable.
    unsafe {
        std::ptr::copy_nonoverlapping(widening.as_ptr(), map.as_ptr().cast::<u8>(), len.get());
    }
    // Control: the bytes are on disk for every reader, and nothing was written with write(2).
    assert_eq!(std::fs::read(&path).unwrap(), widening);
    // While the mapping is still held, the write is held and the file put back.
    let held = w.wait_for(
        |e| e["event"] == "settings_write_held" && e["rel"] == ".vscode/settings.json",
        T,
    );
    let back = eventually(T, || state(&path).as_deref() == Some(&approved[..]));
    // SAFETY: unmapping the mapping made above.
    unsafe { nix::sys::mman::munmap(map, len.get()).unwrap() };
    assert!(
        held.is_some(),
        "no settings_write_held while the mapping was held: {:?}",
        w.seen
    );
    assert!(back, "the file was not put back while the mapping was held");
    w.stop();
}

/// R17: a worktree folder renamed away and a new folder made under its name. The watcher
/// held the old folder's descriptor (and the new name matched a known root), so the new
/// folder was never watched: its settings were never judged.
#[test]
fn worktree_folder_replaced_under_the_same_name() {
    let env = Env::new();
    let wt = env.home.join("src/proj-worktrees/alpha/feat");
    let approved = br#"{"chat.tools.autoApprove": false}"#;
    std::fs::create_dir_all(wt.join(".vscode")).unwrap();
    std::fs::write(wt.join(".vscode/settings.json"), approved).unwrap();
    let mut w = env.start();
    std::fs::rename(&wt, wt.with_file_name("feat-old")).unwrap();
    std::fs::create_dir_all(wt.join(".vscode")).unwrap();
    let file = wt.join(".vscode/settings.json");
    std::fs::write(&file, br#"{"chat.tools.autoApprove": true}"#).unwrap();
    let held = w.wait_for(
        |e| e["event"] == "settings_write_held" && e["path"].as_str() == file.to_str(),
        T,
    );
    let Some(held) = held else {
        panic!("the new folder's settings were not judged: {:?}", w.seen)
    };
    // What the file is put back to is the approved state when the write was judged. The
    // watcher may look at the new folder between its `mkdir` and the write (the scheduler
    // decides): the file is absent then, and its removal (of a `false`) is neutral, accepted
    // — the approved state becomes "absent" and the widening write is reverted to that.
    // Both orders are sound; each must show in the events and end as its order says.
    let removal_accepted = w.seen.iter().any(|e| {
        e["event"] == "settings_write_accepted"
            && e["path"].as_str() == file.to_str()
            && e["diff"]
                .as_str()
                .is_some_and(|d| d.ends_with("+ <absent>\n"))
    });
    let reverted_to_absent = held["diff"]
        .as_str()
        .is_some_and(|d| d.starts_with("- <absent>\n"));
    assert_eq!(
        removal_accepted, reverted_to_absent,
        "the approved state the write was reverted to is not the one the events give: {:#?}",
        w.seen
    );
    let want: Option<&[u8]> = if reverted_to_absent {
        None
    } else {
        Some(&approved[..])
    };
    let back = eventually(T, || state(&file).as_deref() == want);
    assert!(
        back,
        "not put back to {:?}: {:?}, events {:#?}",
        want.map(String::from_utf8_lossy),
        state(&file).map(|b| String::from_utf8_lossy(&b).into_owned()),
        w.seen
    );
    w.stop();
}

/// R17, link variant: the worktree folder replaced by a link to a folder elsewhere. What the
/// link leads to is not vouched for: reported, never taken as clean.
#[test]
fn worktree_folder_replaced_by_a_link_is_reported() {
    let env = Env::new();
    let wt = env.home.join("src/proj-worktrees/alpha/feat");
    std::fs::create_dir_all(wt.join(".vscode")).unwrap();
    std::fs::write(
        wt.join(".vscode/settings.json"),
        br#"{"chat.tools.autoApprove": false}"#,
    )
    .unwrap();
    let mut w = env.start();
    std::fs::create_dir_all(env.outside.join(".vscode")).unwrap();
    std::fs::write(
        env.outside.join(".vscode/settings.json"),
        br#"{"chat.tools.autoApprove": true}"#,
    )
    .unwrap();
    std::fs::rename(&wt, wt.with_file_name("feat-old")).unwrap();
    std::os::unix::fs::symlink(&env.outside, &wt).unwrap();
    let seen = w.wait_for(
        |e| {
            e["event"] == "check_incomplete"
                && e["message"].as_str().is_some_and(|m| m.contains("link"))
        },
        T,
    );
    assert!(seen.is_some(), "the link was not reported: {:?}", w.seen);
    w.stop();
}

/// R18 (not fixed): Claude Code reads `.claude/settings.json` from the folder it is started
/// in, not from the repository's top (anthropics/claude-code#12962), so an owner who starts
/// it in a subfolder of a monorepo reads a settings file no preset guards. Guarding
/// `**/.claude/…` means watching every folder of the work tree; left to the lead (see
/// docs/redteam3.md). Run with `--ignored` to see it fail.
#[test]
#[ignore = "R18 is not fixed: settings files below the root are not guarded"]
fn settings_in_a_subfolder_are_guarded() {
    let env = Env::new();
    std::fs::create_dir_all(env.repo.join("packages/app")).unwrap();
    let mut w = env.start();
    env.write(
        "packages/app/.claude/settings.json",
        br#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/x"}]}]}}"#,
    );
    let held = w.wait_for(|e| e["event"] == "settings_write_held", T);
    assert!(held.is_some(), "not held: {:?}", w.seen);
    w.stop();
}

/// R18's mitigation, as docs/threat-model.md gives it: an owner who starts Claude Code in a
/// subfolder adds that folder's settings files to the shipped rule in the policy; the rule
/// keeps its keys and judgement, and a widening write there is held.
#[test]
fn a_subfolder_named_in_the_policy_is_guarded() {
    let env = Env::new();
    std::fs::create_dir_all(env.repo.join("packages/app")).unwrap();
    let mut text = std::fs::read_to_string(&env.policy).unwrap();
    text.push_str(
        "[[settings.rule]]\nname = \"claude-settings\"\npaths = [\".claude/settings.json\", \".claude/settings.local.json\", \"packages/app/.claude/settings.json\"]\n",
    );
    std::fs::write(&env.policy, text).unwrap();
    let mut w = env.start();
    env.write(
        "packages/app/.claude/settings.json",
        br#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/x"}]}]}}"#,
    );
    let path = env.repo.join("packages/app/.claude/settings.json");
    let held = w.wait_for(
        |e| e["event"] == "settings_write_held" && e["path"].as_str() == path.to_str(),
        T,
    );
    assert!(held.is_some(), "not held: {:?}", w.seen);
    assert!(eventually(T, || state(&path).is_none()));
    // A narrowing write there (an empty object) is accepted.
    env.write("packages/app/.claude/settings.json", b"{}");
    assert!(eventually(T, || state(&path).as_deref() == Some(&b"{}"[..])));
    w.stop();
}

/// R22: a worktree made in one of the policy's `worktree_roots` (git-shim allows it) was
/// never watched: only the session's worktree folder was.
#[test]
fn worktree_in_an_extra_root_is_watched() {
    let env = Env::new();
    let extra = env.home.join("wt-extra");
    std::fs::create_dir_all(&extra).unwrap();
    let mut text = std::fs::read_to_string(&env.policy).unwrap();
    text.push_str(&format!("worktree_roots = [\"{}\"]\n", extra.display()));
    std::fs::write(&env.policy, text).unwrap();
    let mut w = env.start();
    let file = extra.join("w1/.vscode/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, br#"{"chat.tools.autoApprove": true}"#).unwrap();
    let held = w.wait_for(
        |e| e["event"] == "settings_write_held" && e["path"].as_str() == file.to_str(),
        T,
    );
    assert!(held.is_some(), "not held: {:?}", w.seen);
    assert!(eventually(T, || state(&file).is_none()));
    w.stop();
}
