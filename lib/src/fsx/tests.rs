use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

fn setup() -> (tempfile::TempDir, Root, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root_path = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root_path.join("a/b")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root_path.join("a/b/f"), b"inside").unwrap();
    std::fs::write(outside.join("f"), b"OUTSIDE").unwrap();
    let root = Root::open(&root_path).unwrap();
    (tmp, root, outside)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn reads_and_stats_plain_paths() {
    let (_t, root, _) = setup();
    assert_eq!(root.read("a/b/f", 100).unwrap(), b"inside");
    let st = root.stat("a/b/f").unwrap().unwrap();
    assert!(matches!(st.file_type, FileType::File { size: 6, .. }));
    assert!(root.stat("a/b").unwrap().unwrap().is_dir());
    assert!(root.stat("a/missing").unwrap().is_none());
    assert!(root.stat("missing/deeper/x").unwrap().is_none());
    assert!(root.read("a/missing", 10).unwrap_err().is_not_found());
    assert_eq!(root.read_opt("a/missing", 10).unwrap(), None);
    assert!(root.stat("").unwrap().unwrap().is_dir());
}

#[test]
fn refuses_escape_components() {
    let (_t, root, _) = setup();
    for p in [
        "../outside/f",
        "/etc/passwd",
        "a//b/f",
        "a/./b/f",
        "a/b/",
        "./a",
        "a/..",
    ] {
        assert!(
            matches!(root.read(p, 100), Err(FsError::Escape { .. })),
            "{p} not refused"
        );
        assert!(matches!(root.stat(p), Err(FsError::Escape { .. })), "{p}");
        assert!(
            matches!(
                root.write_atomic(p, b"x", 0o644),
                Err(FsError::Escape { .. })
            ),
            "{p}"
        );
    }
    assert!(matches!(
        root.write_atomic("", b"x", 0o644),
        Err(FsError::Escape { .. })
    ));
}

#[test]
fn link_as_leaf_is_refused_for_read_and_write_but_reported_by_stat() {
    let (_t, root, outside) = setup();
    symlink(outside.join("f"), root.path().join("a/b/leaf")).unwrap();
    assert!(matches!(
        root.read("a/b/leaf", 100),
        Err(FsError::Link { .. })
    ));
    match root.stat("a/b/leaf").unwrap().unwrap().file_type {
        FileType::Symlink { target } => assert_eq!(target, outside.join("f")),
        other => panic!("{other:?}"),
    }
    assert_eq!(root.read_link("a/b/leaf").unwrap(), outside.join("f"));
    assert!(matches!(
        root.write_atomic("a/b/leaf", b"evil", 0o644),
        Err(FsError::Link { .. })
    ));
    assert!(matches!(
        root.set_mode("a/b/leaf", 0o777),
        Err(FsError::Link { .. })
    ));
    assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"OUTSIDE");
    // With an explicit policy the link itself is replaced; the outside file is untouched.
    root.write_atomic_with("a/b/leaf", b"new", 0o644, Replace::AnyButFolder)
        .unwrap();
    assert!(root.stat("a/b/leaf").unwrap().unwrap().is_file());
    assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"OUTSIDE");
    // Removing a link removes the link, not its target.
    symlink(outside.join("f"), root.path().join("a/l2")).unwrap();
    root.remove_file("a/l2").unwrap();
    assert!(outside.join("f").exists());
}

#[test]
fn link_as_middle_folder_is_refused() {
    let (_t, root, outside) = setup();
    symlink(&outside, root.path().join("a/mid")).unwrap();
    assert!(matches!(
        root.read("a/mid/f", 100),
        Err(FsError::Link { .. })
    ));
    assert!(matches!(root.stat("a/mid/f"), Err(FsError::Link { .. })));
    assert!(matches!(root.list("a/mid"), Err(FsError::Link { .. })));
    assert!(matches!(root.open_dir("a/mid"), Err(FsError::Link { .. })));
    assert!(matches!(
        root.write_atomic("a/mid/new", b"x", 0o644),
        Err(FsError::Link { .. })
    ));
    assert!(matches!(
        root.create_dir_all("a/mid/x/y", 0o755),
        Err(FsError::Link { .. })
    ));
    assert_eq!(files_in(&outside), vec!["f"]);
}

#[test]
fn link_as_roots_child_is_refused() {
    let (_t, root, outside) = setup();
    symlink(&outside, root.path().join("top")).unwrap();
    assert!(matches!(root.read("top/f", 100), Err(FsError::Link { .. })));
    assert!(matches!(root.list("top"), Err(FsError::Link { .. })));
    assert!(matches!(
        root.write_atomic("top/g", b"x", 0o644),
        Err(FsError::Link { .. })
    ));
    let err = root.read("top/f", 100).unwrap_err();
    assert!(err.to_string().contains("link refused"), "{err}");
    assert!(err.path().ends_with("root/top"), "{}", err.path().display());
}

#[test]
fn root_path_may_contain_a_link() {
    let (t, _root, _) = setup();
    let alias = t.path().join("alias");
    symlink(t.path().join("root"), &alias).unwrap();
    let r = Root::open(&alias).unwrap();
    assert_eq!(r.read("a/b/f", 10).unwrap(), b"inside");
    assert_eq!(
        r.path(),
        std::fs::canonicalize(t.path().join("root")).unwrap()
    );
}

#[test]
fn file_in_folder_position_is_not_dir() {
    let (_t, root, _) = setup();
    assert!(matches!(
        root.read("a/b/f/x", 100),
        Err(FsError::NotDir { .. })
    ));
    assert!(matches!(root.list("a/b/f"), Err(FsError::NotDir { .. })));
}

#[test]
fn fifo_does_not_block_and_is_refused() {
    let (_t, root, _) = setup();
    nix::unistd::mkfifo(&root.path().join("a/fifo"), Mode::from_bits_truncate(0o644)).unwrap();
    let start = Instant::now();
    assert!(matches!(
        root.read("a/fifo", 100),
        Err(FsError::NotRegular { kind: "fifo", .. })
    ));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(
        root.stat("a/fifo").unwrap().unwrap().file_type,
        FileType::Fifo
    );
}

#[test]
fn read_limit_is_enforced() {
    let (_t, root, _) = setup();
    assert!(matches!(
        root.read("a/b/f", 5),
        Err(FsError::TooLarge { limit: 5, .. })
    ));
    assert_eq!(root.read("a/b/f", 6).unwrap(), b"inside");
    assert!(matches!(
        root.read("a/b", 100),
        Err(FsError::NotRegular { kind: "folder", .. })
    ));
}

#[test]
fn write_atomic_replaces_without_leftovers_and_sets_mode() {
    let (_t, root, _) = setup();
    root.write_atomic("a/b/f", b"second", 0o640).unwrap();
    assert_eq!(root.read("a/b/f", 100).unwrap(), b"second");
    let mode = std::fs::metadata(root.path().join("a/b/f"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);
    root.write_atomic("a/new", b"n", 0o755).unwrap();
    assert_eq!(files_in(&root.path().join("a")), vec!["b", "new"]);
    assert_eq!(files_in(&root.path().join("a/b")), vec!["f"]);
    // A folder target is refused and left alone.
    assert!(matches!(
        root.write_atomic("a/b", b"x", 0o644),
        Err(FsError::NotRegular { kind: "folder", .. })
    ));
    assert_eq!(files_in(&root.path().join("a")), vec!["b", "new"]);
}

#[test]
fn concurrent_readers_never_see_a_half_written_target() {
    let (_t, root, _) = setup();
    let big_a = vec![b'a'; 256 * 1024];
    let big_b = vec![b'b'; 256 * 1024];
    root.write_atomic("a/big", &big_a, 0o644).unwrap();
    let root = Arc::new(root);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (root, stop) = (root.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let got = root.read("a/big", 1 << 20).unwrap();
                assert_eq!(got.len(), 256 * 1024);
                assert!(got.iter().all(|c| *c == got[0]), "mixed content");
                reads += 1;
            }
            reads
        })
    };
    for i in 0..40 {
        root.write_atomic("a/big", if i % 2 == 0 { &big_b } else { &big_a }, 0o644)
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    assert_eq!(files_in(&root.path().join("a")), vec!["b", "big"]);
}

#[test]
fn create_dir_all_and_list() {
    let (_t, root, _) = setup();
    root.create_dir_all("x/y/z", 0o755).unwrap();
    root.create_dir_all("x/y/z", 0o755).unwrap();
    root.write_atomic("x/y/z/f", b"1", 0o644).unwrap();
    root.create_symlink("/etc", "x/y/l").unwrap();
    let names: Vec<_> = root
        .list("x/y")
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.name.to_string_lossy().into_owned(),
                e.stat.file_type.name(),
            )
        })
        .collect();
    assert_eq!(names, vec![("l".into(), "link"), ("z".into(), "folder")]);
    let sub = root.open_dir("x/y/z").unwrap();
    assert_eq!(sub.read("f", 10).unwrap(), b"1");
    root.remove_file("x/y/z/f").unwrap();
    root.remove_dir("x/y/z").unwrap();
    assert!(root.stat("x/y/z").unwrap().is_none());
}

#[test]
fn set_mode_changes_files_and_folders() {
    let (_t, root, _) = setup();
    root.set_mode("a/b/f", 0o600).unwrap();
    root.set_mode("a/b", 0o700).unwrap();
    let f = std::fs::metadata(root.path().join("a/b/f")).unwrap();
    let d = std::fs::metadata(root.path().join("a/b")).unwrap();
    assert_eq!(f.permissions().mode() & 0o7777, 0o600);
    assert_eq!(d.permissions().mode() & 0o7777, 0o700);
}

#[test]
fn move_to_same_filesystem_keeps_bytes_and_never_replaces() {
    let (t, root, _) = setup();
    std::fs::create_dir_all(t.path().join("quarantine")).unwrap();
    let q = Root::open(t.path().join("quarantine")).unwrap();
    root.move_to("a/b/f", &q, "f1").unwrap();
    assert_eq!(q.read("f1", 100).unwrap(), b"inside");
    assert!(root.stat("a/b/f").unwrap().is_none());
    std::fs::write(root.path().join("a/g"), b"other").unwrap();
    assert!(matches!(
        root.move_to("a/g", &q, "f1"),
        Err(FsError::Exists { .. })
    ));
    assert_eq!(q.read("f1", 100).unwrap(), b"inside");
    assert_eq!(root.read("a/g", 100).unwrap(), b"other");
    // A link is moved as a link.
    root.create_symlink("/etc/passwd", "a/lnk").unwrap();
    root.move_to("a/lnk", &q, "lnk").unwrap();
    assert_eq!(q.read_link("lnk").unwrap(), PathBuf::from("/etc/passwd"));
    assert!(matches!(
        root.move_to("a/none", &q, "x"),
        Err(FsError::NotFound { .. })
    ));
}

#[test]
fn move_to_across_filesystems_copies_then_removes() {
    let shm = Path::new("/dev/shm");
    let (_t, root, _) = setup();
    let tmp_dev = root.root_stat().unwrap().dev;
    let Ok(shm_root_dir) = tempfile::tempdir_in(shm) else {
        eprintln!("skipped: /dev/shm is not available");
        return;
    };
    let q = Root::open(shm_root_dir.path()).unwrap();
    if q.root_stat().unwrap().dev == tmp_dev {
        eprintln!("skipped: /dev/shm is on the same file system as the temp folder");
        return;
    }
    // A folder tree with a file, a nested folder and a link.
    root.create_dir_all("a/tree/sub", 0o755).unwrap();
    root.write_atomic("a/tree/sub/x", b"deep bytes", 0o600)
        .unwrap();
    root.create_symlink("../../outside", "a/tree/l").unwrap();
    root.move_to("a/tree", &q, "tree").unwrap();
    assert_eq!(q.read("tree/sub/x", 100).unwrap(), b"deep bytes");
    assert_eq!(
        q.read_link("tree/l").unwrap(),
        PathBuf::from("../../outside")
    );
    let m = std::fs::metadata(q.path().join("tree/sub/x")).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o600);
    assert!(root.stat("a/tree").unwrap().is_none());
    root.move_to("a/b/f", &q, "f").unwrap();
    assert_eq!(q.read("f", 100).unwrap(), b"inside");
    // No temporary copy is left in the destination.
    assert_eq!(files_in(q.path()), vec!["f", "tree"]);
    // The destination exists: refused, source kept.
    root.write_atomic("a/again", b"again", 0o644).unwrap();
    assert!(matches!(
        root.move_to("a/again", &q, "f"),
        Err(FsError::Exists { .. })
    ));
    assert_eq!(root.read("a/again", 100).unwrap(), b"again");
    assert_eq!(files_in(q.path()), vec!["f", "tree"]);
    // A copy that fails half way (a fifo cannot be copied) leaves the source where it was,
    // complete, and nothing in the destination.
    root.create_dir_all("a/t2", 0o755).unwrap();
    root.write_atomic("a/t2/keep", b"keep me", 0o644).unwrap();
    nix::unistd::mkfifo(
        &root.path().join("a/t2/zz-fifo"),
        Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    assert!(matches!(
        root.move_to("a/t2", &q, "t2"),
        Err(FsError::NotRegular { kind: "fifo", .. })
    ));
    assert_eq!(root.read("a/t2/keep", 100).unwrap(), b"keep me");
    assert_eq!(files_in(&root.path().join("a")), vec!["again", "b", "t2"]);
    assert_eq!(files_in(q.path()), vec!["f", "tree"]);
}

/// One thread keeps swapping `root/a` between the real folder and a link to a folder
/// outside the root (rename dance); another writes and reads below `a/` as fast as it can.
/// Nothing may ever be written outside, no read may ever return the outside file, and every
/// failure must be an error (never a follow).
#[test]
fn race_swapping_a_folder_for_a_link_never_escapes() {
    let (t, root, outside) = setup();
    let root_path = root.path().to_path_buf();
    let root = Arc::new(root);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let outside = outside.clone();
        let a = root_path.join("a");
        let parked = root_path.join("a.real");
        let tmp_link = root_path.join("a.link");
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) {
                // a (folder) -> a.real; link -> a; then back.
                std::fs::rename(&a, &parked).unwrap();
                symlink(&outside, &tmp_link).unwrap();
                std::fs::rename(&tmp_link, &a).unwrap();
                std::thread::yield_now();
                std::fs::remove_file(&a).unwrap();
                std::fs::rename(&parked, &a).unwrap();
                swaps += 1;
                // Leave the real folder in place for a moment so that both outcomes occur
                // even on a loaded machine.
                std::thread::sleep(Duration::from_micros(50));
            }
            swaps
        })
    };
    // Generous: on a loaded machine the swapper's renames wait behind the writer's fsyncs
    // (the loop ends as soon as both outcomes were seen; 10 s could pass on a loaded 2-core
    // machine before the swapper thread ran enough).
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut ok_w, mut err_w, mut ok_r, mut err_r, mut iters) = (0, 0, 0, 0, 0);
    // At least 5000 rounds, and on until both outcomes have been seen (or the deadline).
    while (iters < 5000 || ok_w + ok_r == 0 || err_w + err_r == 0) && Instant::now() < deadline {
        iters += 1;
        match root.write_atomic("a/b/f", b"inside", 0o644) {
            Ok(()) => ok_w += 1,
            Err(FsError::Link { .. } | FsError::NotFound { .. } | FsError::NotDir { .. }) => {
                err_w += 1
            }
            Err(e) => panic!("unexpected error kind: {e}"),
        }
        match root.read("a/b/f", 100) {
            Ok(bytes) => {
                assert_eq!(bytes, b"inside", "read followed a link");
                ok_r += 1
            }
            Err(FsError::Link { .. } | FsError::NotFound { .. } | FsError::NotDir { .. }) => {
                err_r += 1
            }
            Err(e) => panic!("unexpected error kind: {e}"),
        }
        // The outside folder's `f` and the outside folder itself: `b/` may not appear there.
        if iters % 64 == 0 {
            assert_eq!(files_in(&outside), vec!["f"]);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!(
        "race: {iters} iterations, {swaps} swaps; writes ok/refused {ok_w}/{err_w}, reads ok/refused {ok_r}/{err_r}"
    );
    assert_eq!(files_in(&outside), vec!["f"]);
    assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"OUTSIDE");
    // Both outcomes must have happened for the race to have been exercised.
    assert!(swaps >= 2, "swapper made only {swaps} swaps");
    assert!(ok_w + ok_r > 0, "never succeeded");
    assert!(err_w + err_r > 0, "the race never hit (iterations {iters})");
    // No temporary file left anywhere under the real folder.
    assert_eq!(files_in(&root_path.join("a/b")), vec!["f"]);
    drop(t);
}

#[test]
fn list_names_reads_every_name_across_several_getdents_calls() {
    // More names than one 32 KiB getdents64 buffer holds (each record is ~24 + name bytes),
    // with bytes that are not UTF-8, compared with std's readdir.
    let (t, root, _) = setup();
    let d = t.path().join("root/many");
    std::fs::create_dir(&d).unwrap();
    let mut want: Vec<OsString> = Vec::new();
    for i in 0..1500 {
        let mut n = format!("entry-with-a-longish-name-{i:05}").into_bytes();
        if i % 100 == 0 {
            n.push(0xff);
        }
        let n = OsString::from(OsStr::from_bytes(&n));
        std::fs::write(d.join(&n), b"").unwrap();
        want.push(n);
    }
    std::fs::create_dir(d.join("sub")).unwrap();
    symlink("/etc", d.join("link")).unwrap();
    want.push("sub".into());
    want.push("link".into());
    want.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let got = root.list_names("many").unwrap();
    assert_eq!(got, want);
    let listed: Vec<OsString> = root
        .list("many")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(listed, want);
    // The kinds from the listing (d_type) are the lstat's.
    let kinds = root.list_kinds("many").unwrap();
    assert_eq!(kinds.len(), want.len());
    for (name, kind) in &kinds {
        let st = std::fs::symlink_metadata(d.join(name)).unwrap();
        let expected = if st.is_symlink() {
            EntryKind::Symlink
        } else if st.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        };
        assert_eq!(*kind, expected, "{name:?}");
    }
    assert!(root.list_kinds("many/link").unwrap_err().is_link());
    // Opened and listed through one descriptor: the same listing, and a usable root.
    let (many, same) = root.open_dir_listed(OsStr::new("many")).unwrap();
    assert_eq!(same, kinds);
    assert!(many.stat("sub").unwrap().unwrap().is_dir());
    assert_eq!(many.list_kinds("").unwrap(), kinds);
    assert!(many
        .open_dir_listed(OsStr::new("link"))
        .unwrap_err()
        .is_link());
    assert!(matches!(
        root.open_dir_listed(OsStr::new("a/b")),
        Err(FsError::Escape { .. })
    ));
    assert!(root.list_names("").unwrap().contains(&OsString::from("a")));
    assert!(root.list_names("many/link").unwrap_err().is_link());
}

#[test]
fn dirent_records_that_do_not_fit_are_refused() {
    let mut names = Vec::new();
    // d_reclen 0 would loop forever; a record longer than the buffer is cut.
    let mut rec = vec![0u8; 24];
    assert_eq!(parse_dirents_typed(&rec, &mut names), None);
    rec[16] = 200;
    assert_eq!(parse_dirents_typed(&rec, &mut names), None);
    rec[16] = 24;
    rec[18] = nix::libc::DT_REG;
    rec[19] = b'x';
    assert_eq!(parse_dirents_typed(&rec, &mut names), Some(()));
    assert_eq!(names, vec![(OsString::from("x"), nix::libc::DT_REG)]);
}

#[test]
fn read_child_regular_refuses_links_fifos_and_folders_without_blocking() {
    let (t, root, outside) = setup();
    let base = t.path().join("root");
    symlink(outside.join("f"), base.join("l")).unwrap();
    nix::unistd::mkfifo(&base.join("p"), Mode::from_bits_truncate(0o600)).unwrap();
    std::fs::write(base.join("f"), b"abc").unwrap();
    std::fs::set_permissions(base.join("f"), std::fs::Permissions::from_mode(0o751)).unwrap();
    assert_eq!(
        root.read_child_regular(OsStr::new("f"), 10).unwrap(),
        (b"abc".to_vec(), 0o751)
    );
    assert!(root
        .read_child_regular(OsStr::new("l"), 10)
        .unwrap_err()
        .is_link());
    assert!(matches!(
        root.read_child_regular(OsStr::new("p"), 10),
        Err(FsError::NotRegular { kind: "fifo", .. })
    ));
    assert!(matches!(
        root.read_child_regular(OsStr::new("a"), 10),
        Err(FsError::NotRegular { .. })
    ));
    assert!(matches!(
        root.read_child_regular(OsStr::new("f"), 2),
        Err(FsError::TooLarge { .. })
    ));
    assert!(root
        .read_child_regular(OsStr::new("nope"), 2)
        .unwrap_err()
        .is_not_found());
    for bad in ["", ".", "..", "a/b"] {
        assert!(matches!(
            root.read_child_regular(OsStr::new(bad), 2),
            Err(FsError::Escape { .. })
        ));
    }
}

#[test]
fn reads_whole_files_of_every_size_and_files_that_report_no_size() {
    let (t, root, _) = setup();
    for len in [0usize, 1, 4095, 4096, 4097, 100_000] {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(t.path().join("root/sized"), &bytes).unwrap();
        assert_eq!(root.read("sized", 1 << 20).unwrap(), bytes, "{len}");
        assert_eq!(
            root.read_child_regular(OsStr::new("sized"), 1 << 20)
                .unwrap()
                .0,
            bytes
        );
    }
    std::fs::write(t.path().join("root/sized"), b"12345").unwrap();
    assert!(root.read("sized", 5).is_ok());
    assert!(matches!(
        root.read("sized", 4),
        Err(FsError::TooLarge { .. })
    ));
    // procfs reports size 0 for files with content: read on to the end.
    let proc_self = Root::open("/proc/self").unwrap();
    let status = proc_self.read("status", 1 << 20).unwrap();
    assert!(
        status.starts_with(b"Name:"),
        "{}",
        String::from_utf8_lossy(&status)
    );
    assert!(status.len() > 100);
    assert!(matches!(
        proc_self.read("status", 10),
        Err(FsError::TooLarge { .. })
    ));
}

/// The shared handle on `/` is one descriptor for the process, and walks from it refuse
/// links as walks from a fresh `Root::system()` do: a link on the way is `FsError::Link`,
/// the same folder is reached (same device and inode) where there is none.
#[test]
fn the_shared_system_root_walks_as_a_fresh_one() {
    let a = Root::system_shared().unwrap();
    let b = Root::system_shared().unwrap();
    assert_eq!(a.as_fd().as_raw_fd(), b.as_fd().as_raw_fd());
    assert_eq!(a.path(), Path::new("/"));
    let t = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(t.path()).unwrap();
    std::fs::create_dir_all(real.join("d/e")).unwrap();
    symlink(real.join("d"), real.join("l")).unwrap();
    let rel = |p: &Path| p.strip_prefix("/").unwrap().to_path_buf();
    let fresh = Root::system().unwrap();
    for (shared, fresh) in [
        (
            a.open_dir(rel(&real.join("d/e"))),
            fresh.open_dir(rel(&real.join("d/e"))),
        ),
        (
            a.open_dir(rel(&real.join("l/e"))),
            fresh.open_dir(rel(&real.join("l/e"))),
        ),
    ] {
        match (shared, fresh) {
            (Ok(s), Ok(f)) => assert_eq!(
                (s.root_stat().unwrap().dev, s.root_stat().unwrap().ino),
                (f.root_stat().unwrap().dev, f.root_stat().unwrap().ino)
            ),
            (Err(s), Err(f)) => {
                assert!(s.is_link() && f.is_link(), "{s} / {f}");
            }
            (s, f) => panic!("shared {s:?}, fresh {f:?}"),
        }
    }
    // Positive control: the link does lead to the folder when followed.
    assert!(std::fs::metadata(real.join("l/e")).unwrap().is_dir());
}

#[test]
fn read_whole_reads_what_take_read_to_end_reads() {
    let t = tempfile::tempdir().unwrap();
    for (size, max) in [
        (0usize, 10u64),
        (100, 10),
        (300 << 10, u64::MAX),
        (300 << 10, 200 << 10),
    ] {
        let p = t.path().join(format!("f{size}-{max}"));
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = File::open(&p).unwrap();
        let len = f.metadata().unwrap().len();
        let got = super::read_whole(&f, len, max).unwrap();
        assert_eq!(got, data[..size.min(max as usize)], "{size} {max}");
        // A size hint below the file's (it grew since the fstat): still read whole.
        let f = File::open(&p).unwrap();
        assert_eq!(super::read_whole(&f, 1, max).unwrap(), got);
    }
}
