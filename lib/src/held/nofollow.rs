//! No-follow access to guarded files below a trusted root, for the held-writes store and the
//! settings watcher.
//!
//! Every path below the root is walked component by component with `openat(O_NOFOLLOW |
//! O_DIRECTORY)`; a link where a folder or the file is expected is reported as
//! [`Content::Link`], never followed. This is the narrow set of operations settings-watch needs.
//!
//! It walks like [`crate::fsx::Root`] but hands out what `Root` keeps inside: folder descriptors
//! opened `O_RDONLY`, kept by the caller across several operations (`Root` walks with `O_PATH` and
//! reopens for each one), a link on the path reported with its target as content (the held record
//! shows what was planted; `Root` refuses with [`crate::fsx::FsError::Link`]), `RENAME_EXCHANGE` so
//! a revert cannot overwrite a write that lands in the same instant, read leases on open files
//! ([`open_for_writing`]), and temporary names the watcher recognises as its own ([`tmp_target`]).
//! Approved file contents are already written through `Root` (held's `write_approved`); moving the
//! rest onto `Root` means giving `Root` these operations first.

use super::Content;
use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, renameat, AtFlags, OFlag};
use nix::sys::stat::{fstatat, Mode, SFlag};
use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest guarded file we read (a settings file is small; a huge one is refused, not read).
pub const MAX_BYTES: u64 = 4 << 20;

/// Marker in the names of our temporary files (`.<name>.gitward-<pid>-<n>.tmp`).
pub const TMP_MARK: &str = ".gitward-";

const DIR: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// Open a trusted root folder (the path comes from the policy, already resolved).
pub fn open_root(root: &Path) -> std::io::Result<OwnedFd> {
    Ok(openat(nix::fcntl::AT_FDCWD, root, DIR, Mode::empty())?)
}

/// Where a walk to the parent folder of a relative path ended.
pub enum Parent {
    /// The parent folder, opened, and the file's name in it.
    Dir(OwnedFd, String),
    /// A component (given as a relative path) is missing.
    Missing,
    /// A component is a link (relative path of the link, its target).
    Link(String, Vec<u8>),
    /// A component is neither a folder nor a link.
    NotDir(String),
}

/// Split `rel` into normal components, refusing `..`, absolute paths and empties.
pub fn components(rel: &str) -> std::io::Result<Vec<&str>> {
    let mut out = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(s) => out.push(s.to_str().ok_or_else(|| bad(rel))?),
            Component::CurDir => {}
            _ => return Err(bad(rel)),
        }
    }
    if out.is_empty() {
        return Err(bad(rel));
    }
    Ok(out)
}

fn bad(rel: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{rel:?} is not a plain relative path"),
    )
}

/// Walk to the folder holding `rel`, without following links.
pub fn parent(root: &impl AsFd, rel: &str) -> std::io::Result<Parent> {
    let comps = components(rel)?;
    let mut cur: OwnedFd = openat(root.as_fd(), ".", DIR, Mode::empty())?;
    for (i, name) in comps[..comps.len() - 1].iter().enumerate() {
        match openat(cur.as_fd(), *name, DIR, Mode::empty()) {
            Ok(fd) => cur = fd,
            Err(Errno::ENOENT) => return Ok(Parent::Missing),
            Err(Errno::ELOOP) | Err(Errno::ENOTDIR) => {
                let at = comps[..=i].join("/");
                return Ok(match readlinkat(cur.as_fd(), *name) {
                    Ok(t) => Parent::Link(at, t.as_bytes().to_vec()),
                    Err(_) => Parent::NotDir(at),
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Parent::Dir(cur, comps[comps.len() - 1].to_owned()))
}

/// Read the entry `name` in `dir` as content, without following a link.
pub fn read_at(dir: &impl AsFd, name: &str, rel: &str) -> std::io::Result<Content> {
    let st = match fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(Content::Absent),
        Err(e) => return Err(e.into()),
    };
    let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    if kind == SFlag::S_IFLNK {
        let t = match readlinkat(dir.as_fd(), name) {
            Ok(t) => t,
            Err(Errno::ENOENT) => return Ok(Content::Absent),
            Err(e) => return Err(e.into()),
        };
        return Ok(Content::Link {
            at: rel.to_owned(),
            target: t.as_bytes().to_vec(),
        });
    }
    if kind != SFlag::S_IFREG {
        return Ok(Content::Other {
            at: rel.to_owned(),
            what: kind_name(kind).into(),
        });
    }
    let fd = match openat(
        dir.as_fd(),
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(Content::Absent),
        // Swapped for a link between the stat and the open.
        Err(Errno::ELOOP) => return read_at(dir, name, rel),
        Err(e) => return Err(e.into()),
    };
    let f = std::fs::File::from(fd);
    if !f.metadata()?.is_file() {
        return read_at(dir, name, rel);
    }
    read_file(&f, rel)
}

/// The content of the regular file open at `f`, read from its start (`pread`, the file
/// offset is left alone): its bytes, or [`oversized`] past [`MAX_BYTES`].
pub fn read_file(f: &std::fs::File, rel: &str) -> std::io::Result<Content> {
    use std::os::unix::fs::{FileExt, PermissionsExt};
    let meta = f.metadata()?;
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_BYTES + 1) as usize);
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = f.read_at(&mut buf, bytes.len() as u64)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        if bytes.len() as u64 > MAX_BYTES {
            let size = f.metadata()?.len().max(bytes.len() as u64);
            return Ok(oversized(rel, size));
        }
    }
    Ok(Content::File {
        bytes,
        mode: meta.permissions().mode() & 0o7777,
    })
}

/// What stands for a regular file over [`MAX_BYTES`]: too large for a record, its bytes are
/// streamed into the held store whole ([`crate::held::Store::keep`]) once it has been moved
/// out of the agent's reach.
pub fn oversized(rel: &str, size: u64) -> Content {
    Content::Other {
        at: rel.to_owned(),
        what: format!("{OVERSIZED} ({size} bytes; the limit is {MAX_BYTES})"),
    }
}

/// The start of [`oversized`]'s description.
pub const OVERSIZED: &str = "a file too large to read whole";

/// Is `c` a regular file over [`MAX_BYTES`]?
pub fn is_oversized(c: &Content) -> bool {
    matches!(c, Content::Other { what, .. } if what.starts_with(OVERSIZED))
}

/// Does any process have the regular file open at `f` open for writing (a write descriptor,
/// a shared writable mapping)? Asked the kernel through a read lease (`fcntl(F_SETLEASE,
/// F_RDLCK)`, fcntl(2)): it is refused with `EAGAIN` exactly when the inode is open for
/// writing, whoever holds it and whatever their mount namespace. The lease is dropped at
/// once; a writer that opened the file in that instant was held back until then (its
/// break signal is `SIGURG`, ignored by default, so no handler is needed). `None` when the
/// kernel cannot say: a filesystem without leases, a file owned by another user.
pub fn open_for_writing(f: &impl AsFd) -> Option<bool> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    /// `F_SETSIG` (linux/fcntl.h; not exported by the libc crate for every target).
    const F_SETSIG: libc::c_int = 10;
    let fd = f.as_fd().as_raw_fd();
    // SAFETY: plain fcntl calls on a descriptor we own; no memory is passed.
    unsafe {
        if libc::fcntl(fd, F_SETSIG, libc::SIGURG) == -1 {
            return None;
        }
        if libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) == 0 {
            libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK);
            return Some(false);
        }
    }
    match Errno::last() {
        Errno::EAGAIN => Some(true),
        _ => None,
    }
}

/// Open the regular file `name` in `dir` for reading, without following a link (`None` when
/// it is not a regular file, or gone).
pub fn open_file(dir: &impl AsFd, name: &str) -> Option<std::fs::File> {
    let fd = openat(
        dir.as_fd(),
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    let f = std::fs::File::from(fd);
    f.metadata().ok()?.is_file().then_some(f)
}

fn kind_name(k: SFlag) -> &'static str {
    match k {
        SFlag::S_IFDIR => "a folder",
        SFlag::S_IFIFO => "a fifo",
        SFlag::S_IFSOCK => "a socket",
        SFlag::S_IFCHR => "a character device",
        SFlag::S_IFBLK => "a block device",
        _ => "an unknown file type",
    }
}

/// Read the guarded file `rel` below `root`, without following links anywhere.
pub fn read(root: &impl AsFd, rel: &str) -> std::io::Result<Content> {
    match parent(root, rel)? {
        Parent::Dir(d, name) => read_at(&d, &name, rel),
        Parent::Missing | Parent::NotDir(_) => Ok(Content::Absent),
        Parent::Link(at, target) => Ok(Content::Link { at, target }),
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name beside `name`: `.<name>.gitward-<pid>-<n>.tmp`.
pub fn tmp_name(name: &str) -> String {
    format!(
        ".{name}{TMP_MARK}{}-{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// If `entry` is one of our temporary names, the name it was made for.
pub fn tmp_target(entry: &str) -> Option<&str> {
    let rest = entry.strip_prefix('.')?.strip_suffix(".tmp")?;
    let at = rest.rfind(TMP_MARK)?;
    let tail = &rest[at + TMP_MARK.len()..];
    let ok = tail.split('-').count() == 2 && tail.split('-').all(|p| p.parse::<u64>().is_ok());
    (ok && at > 0).then(|| &rest[..at])
}

/// Create `content` at the fresh name `tmp` in `dir`, durably (file data fsynced).
pub fn create_tmp(dir: &impl AsFd, tmp: &str, content: &Content) -> std::io::Result<()> {
    match create_tmp_unsynced(dir, tmp, content)? {
        Some(f) => f.sync_all(),
        None => Ok(()),
    }
}

/// [`create_tmp`] without the fsync: a file is returned open, for the caller to fsync later
/// (`None` for a link, which has no data of its own to sync).
pub fn create_tmp_unsynced(
    dir: &impl AsFd,
    tmp: &str,
    content: &Content,
) -> std::io::Result<Option<std::fs::File>> {
    match content {
        Content::File { bytes, mode } => {
            let fd = openat(
                dir.as_fd(),
                tmp,
                OFlag::O_WRONLY
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(*mode & 0o777),
            )?;
            let mut f = std::fs::File::from(fd);
            f.write_all(bytes)?;
            // The umask may have narrowed the mode; put the recorded one.
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(*mode & 0o777))?;
            Ok(Some(f))
        }
        Content::Link { target, .. } => {
            nix::unistd::symlinkat(OsStr::from_bytes(target), dir.as_fd(), tmp)?;
            Ok(None)
        }
        Content::Absent | Content::Other { .. } => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "only a file or a link can be written",
        )),
    }
}

/// fsync a folder, so a rename in it is durable.
pub fn sync_dir(dir: &impl AsFd) -> std::io::Result<()> {
    nix::unistd::fsync(dir.as_fd())?;
    Ok(())
}

/// Exchange `tmp` and `name` in `dir` atomically (`renameat2(RENAME_EXCHANGE)`): afterwards
/// `name` holds what `tmp` held and `tmp` holds whatever was at `name` at that instant, so a
/// write that lands just before the swap is caught, not overwritten. When `name` is missing
/// the file is moved in without replacing anything (`RENAME_NOREPLACE`). Returns whether
/// something was displaced into `tmp`. Falls back to a plain rename where the filesystem
/// lacks these flags.
pub fn swap_in(dir: &impl AsFd, tmp: &str, name: &str) -> std::io::Result<bool> {
    use nix::fcntl::{renameat2, RenameFlags};
    match renameat2(
        dir.as_fd(),
        tmp,
        dir.as_fd(),
        name,
        RenameFlags::RENAME_EXCHANGE,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) => {
            match renameat2(
                dir.as_fd(),
                tmp,
                dir.as_fd(),
                name,
                RenameFlags::RENAME_NOREPLACE,
            ) {
                Ok(()) => Ok(false),
                // Recreated in between: exchange again.
                Err(Errno::EEXIST) => swap_in(dir, tmp, name),
                Err(Errno::EINVAL) => plain_rename(dir, tmp, name).map(|_| false),
                Err(e) => Err(e.into()),
            }
        }
        Err(Errno::EINVAL) => plain_rename(dir, tmp, name).map(|_| false),
        Err(e) => Err(e.into()),
    }
}

fn plain_rename(dir: &impl AsFd, from: &str, to: &str) -> std::io::Result<()> {
    renameat(dir.as_fd(), from, dir.as_fd(), to)?;
    Ok(())
}

/// Move `name` to `tmp` (same folder). Returns false when `name` was already gone.
pub fn steal(dir: &impl AsFd, name: &str, tmp: &str) -> std::io::Result<bool> {
    use nix::fcntl::{renameat2, RenameFlags};
    match renameat2(
        dir.as_fd(),
        name,
        dir.as_fd(),
        tmp,
        RenameFlags::RENAME_NOREPLACE,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) => Ok(false),
        Err(Errno::EINVAL) => match renameat(dir.as_fd(), name, dir.as_fd(), tmp) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// Remove a file or link entry (never a folder).
pub fn remove(dir: &impl AsFd, name: &str) -> std::io::Result<()> {
    match nix::unistd::unlinkat(dir.as_fd(), name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Create the folders of `rel`'s parent below `root` (no links followed) and open it.
pub fn create_parent(root: &impl AsFd, rel: &str) -> std::io::Result<(OwnedFd, String)> {
    let comps = components(rel)?;
    let mut cur: OwnedFd = openat(root.as_fd(), ".", DIR, Mode::empty())?;
    for name in &comps[..comps.len() - 1] {
        match nix::sys::stat::mkdirat(cur.as_fd(), *name, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        cur = openat(cur.as_fd(), *name, DIR, Mode::empty())?;
    }
    Ok((cur, comps[comps.len() - 1].to_owned()))
}

/// Write `content` at `rel` below `root` atomically (temporary file, fsync, rename, folder
/// fsync); `Content::Absent` removes the entry. Nothing is followed. Used by approve.
pub fn write_atomic(root: &impl AsFd, rel: &str, content: &Content) -> std::io::Result<()> {
    let (dir, name) = match content {
        Content::Absent => match parent(root, rel)? {
            Parent::Dir(d, n) => (d, n),
            _ => return Ok(()),
        },
        _ => create_parent(root, rel)?,
    };
    if let Content::Absent = content {
        remove(&dir, &name)?;
        return sync_dir(&dir);
    }
    let tmp = tmp_name(&name);
    create_tmp(&dir, &tmp, content)?;
    if let Err(e) = plain_rename(&dir, &tmp, &name) {
        let _ = remove(&dir, &tmp);
        return Err(e);
    }
    sync_dir(&dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_without_following() {
        let t = tempfile::tempdir().unwrap();
        let root = open_root(t.path()).unwrap();
        assert_eq!(read(&root, "a/b.json").unwrap(), Content::Absent);
        std::fs::create_dir(t.path().join("a")).unwrap();
        std::fs::write(t.path().join("a/b.json"), "{}").unwrap();
        assert!(
            matches!(read(&root, "a/b.json").unwrap(), Content::File { ref bytes, .. } if bytes == b"{}")
        );
        std::fs::remove_file(t.path().join("a/b.json")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", t.path().join("a/b.json")).unwrap();
        assert_eq!(
            read(&root, "a/b.json").unwrap(),
            Content::Link {
                at: "a/b.json".into(),
                target: b"/etc/passwd".to_vec()
            }
        );
        std::fs::create_dir(t.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", t.path().join("l")).unwrap();
        std::fs::write(t.path().join("real/x"), "1").unwrap();
        assert_eq!(
            read(&root, "l/x").unwrap(),
            Content::Link {
                at: "l".into(),
                target: b"real".to_vec()
            }
        );
        assert!(read(&root, "../x").is_err());
    }

    #[test]
    fn swap_and_write() {
        let t = tempfile::tempdir().unwrap();
        let root = open_root(t.path()).unwrap();
        let c = Content::File {
            bytes: b"A".to_vec(),
            mode: 0o640,
        };
        write_atomic(&root, "d/e/f", &c).unwrap();
        assert_eq!(read(&root, "d/e/f").unwrap(), c);
        let (dir, name) = create_parent(&root, "d/e/f").unwrap();
        let tmp = tmp_name(&name);
        assert_eq!(tmp_target(&tmp), Some("f"));
        create_tmp(
            &dir,
            &tmp,
            &Content::File {
                bytes: b"B".to_vec(),
                mode: 0o644,
            },
        )
        .unwrap();
        assert!(swap_in(&dir, &tmp, &name).unwrap());
        assert!(
            matches!(read_at(&dir, &tmp, "x").unwrap(), Content::File { ref bytes, .. } if bytes == b"A")
        );
        remove(&dir, &tmp).unwrap();
        write_atomic(&root, "d/e/f", &Content::Absent).unwrap();
        assert_eq!(read(&root, "d/e/f").unwrap(), Content::Absent);
        assert_eq!(tmp_target(".f.gitward-1-x.tmp"), None);
        assert_eq!(tmp_target("f.gitward-1-2.tmp"), None);
    }
}
