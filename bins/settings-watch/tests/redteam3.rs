//! Third red-team pass (docs/redteam3.md): a write through a shared memory mapping raises
//! no inotify event while the mapping is held, however long.

mod common;

use common::{eventually, state, Env};
use std::num::NonZeroUsize;
use std::os::fd::AsFd;
use std::time::Duration;

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
        Duration::from_secs(5),
    );
    let back = eventually(Duration::from_secs(5), || {
        state(&path).as_deref() == Some(&approved[..])
    });
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
