//! No-follow folder handles for wt-check's reads, moves and restores under a git folder.
//!
//! Every path below a [`Dir`] is walked one component at a time with
//! `openat(O_NOFOLLOW | O_DIRECTORY)`; a symbolic link where a folder or file is expected is
//! [`NfError::Link`], never followed. Files are opened with `O_NOFOLLOW | O_NONBLOCK` and
//! checked with `fstat` after opening, so a fifo swapped in for a file neither blocks nor is
//! read, and a file swapped for a link between `stat` and `open` fails with `ELOOP`. Writes go
//! to a temporary name in the already-opened folder and are renamed over the target with
//! `renameat` on that folder's descriptor: a folder swapped for a link after it was opened
//! cannot redirect the write (the descriptor keeps naming the original folder's inode).

use nix::errno::Errno;
use nix::fcntl::{openat, renameat, OFlag};
use nix::sys::stat::{fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// What failed, and where.
#[derive(Debug, thiserror::Error)]
pub enum NfError {
    #[error("{0}: is a symbolic link; not followed")]
    Link(PathBuf),
    #[error("{0}: is not a folder")]
    NotDir(PathBuf),
    #[error("{0}: is not a regular file ({1})")]
    NotRegular(PathBuf, &'static str),
    #[error("{0}: larger than the {1}-byte limit")]
    TooLarge(PathBuf, u64),
    #[error("{0}: path is not absolute and normal (no `..`)")]
    BadPath(PathBuf),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl NfError {
    fn errno(path: PathBuf, e: Errno) -> Self {
        match e {
            Errno::ELOOP => NfError::Link(path),
            Errno::ENOTDIR => NfError::NotDir(path),
            e => NfError::Io(path, std::io::Error::from(e)),
        }
    }
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            NfError::Link(p)
            | NfError::NotDir(p)
            | NfError::NotRegular(p, _)
            | NfError::TooLarge(p, _)
            | NfError::BadPath(p)
            | NfError::Io(p, _) => p,
        }
    }
}

/// The type of a directory entry, as `lstat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Dir,
    Link,
    Fifo,
    Socket,
    Device,
}

impl Kind {
    fn of(st: &FileStat) -> Kind {
        let t = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        if t == SFlag::S_IFREG {
            Kind::File
        } else if t == SFlag::S_IFDIR {
            Kind::Dir
        } else if t == SFlag::S_IFLNK {
            Kind::Link
        } else if t == SFlag::S_IFIFO {
            Kind::Fifo
        } else if t == SFlag::S_IFSOCK {
            Kind::Socket
        } else {
            Kind::Device
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "folder",
            Kind::Link => "symbolic link",
            Kind::Fifo => "fifo",
            Kind::Socket => "socket",
            Kind::Device => "device",
        }
    }
}

/// An entry's type and permission bits.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub kind: Kind,
    pub mode: u32,
    pub size: u64,
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// A folder opened without following links. `path` is for messages only: every operation
/// goes through the descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Open an absolute path from `/`, refusing a link at any component.
    pub fn open_abs(path: &Path) -> Result<Dir, NfError> {
        if !path.is_absolute() {
            return Err(NfError::BadPath(path.to_path_buf()));
        }
        let fd = openat(nix::fcntl::AT_FDCWD, "/", DIR_FLAGS, Mode::empty())
            .map_err(|e| NfError::errno(PathBuf::from("/"), e))?;
        let root = Dir {
            fd,
            path: PathBuf::from("/"),
        };
        let rel = path.strip_prefix("/").unwrap_or(path);
        root.walk(rel)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder's descriptor (for `*at` calls this module does not wrap).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn child_path(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// Open a child folder (one component).
    pub fn child(&self, name: &OsStr) -> Result<Dir, NfError> {
        let p = self.child_path(name);
        check_name(name, &p)?;
        let fd = match openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            // `O_DIRECTORY | O_NOFOLLOW` on a link gives ENOTDIR on Linux (ELOOP elsewhere):
            // tell a link from a file or fifo in the way.
            Err(Errno::ENOTDIR | Errno::ELOOP) => {
                return Err(match self.stat(name) {
                    Ok(Some(st)) if st.kind == Kind::Link => NfError::Link(p),
                    _ => NfError::NotDir(p),
                })
            }
            Err(e) => return Err(NfError::errno(p, e)),
        };
        Ok(Dir { fd, path: p })
    }

    /// Walk a relative path of normal components.
    pub fn walk(&self, rel: &Path) -> Result<Dir, NfError> {
        let mut cur = Dir {
            fd: self
                .fd
                .try_clone()
                .map_err(|e| NfError::Io(self.path.clone(), e))?,
            path: self.path.clone(),
        };
        for c in rel.components() {
            match c {
                Component::Normal(n) => cur = cur.child(n)?,
                Component::CurDir => {}
                _ => return Err(NfError::BadPath(self.path.join(rel))),
            }
        }
        Ok(cur)
    }

    /// `lstat` of a child; `None` when it does not exist.
    pub fn stat(&self, name: &OsStr) -> Result<Option<Stat>, NfError> {
        let p = self.child_path(name);
        check_name(name, &p)?;
        match fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Stat {
                kind: Kind::of(&st),
                mode: st.st_mode & 0o7777,
                size: st.st_size as u64,
            })),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(NfError::errno(p, e)),
        }
    }

    /// Read a regular file, at most `limit` bytes (more is an error, never a truncation).
    pub fn read(&self, name: &OsStr, limit: u64) -> Result<(Vec<u8>, u32), NfError> {
        let p = self.child_path(name);
        check_name(name, &p)?;
        let fd = openat(
            &self.fd,
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| NfError::errno(p.clone(), e))?;
        let st = fstat(&fd).map_err(|e| NfError::errno(p.clone(), e))?;
        let kind = Kind::of(&st);
        if kind != Kind::File {
            return Err(NfError::NotRegular(p, kind.name()));
        }
        if st.st_size as u64 > limit {
            return Err(NfError::TooLarge(p, limit));
        }
        let mut f = std::fs::File::from(fd);
        let mut buf = Vec::with_capacity(st.st_size as usize);
        (&mut f)
            .take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| NfError::Io(p.clone(), e))?;
        if buf.len() as u64 > limit {
            return Err(NfError::TooLarge(p, limit));
        }
        Ok((buf, st.st_mode & 0o7777))
    }

    /// The target of a symbolic link child.
    pub fn read_link(&self, name: &OsStr) -> Result<OsString, NfError> {
        let p = self.child_path(name);
        nix::fcntl::readlinkat(&self.fd, name).map_err(|e| NfError::errno(p, e))
    }

    /// Names in this folder, sorted, without `.` and `..`.
    pub fn list(&self) -> Result<Vec<OsString>, NfError> {
        let fd = openat(&self.fd, ".", DIR_FLAGS, Mode::empty())
            .map_err(|e| NfError::errno(self.path.clone(), e))?;
        let mut d = nix::dir::Dir::from_fd(fd).map_err(|e| NfError::errno(self.path.clone(), e))?;
        let mut out = Vec::new();
        for ent in d.iter() {
            let ent = ent.map_err(|e| NfError::errno(self.path.clone(), e))?;
            let n = ent.file_name().to_bytes();
            if n == b"." || n == b".." {
                continue;
            }
            out.push(OsStr::from_bytes(n).to_os_string());
        }
        out.sort();
        Ok(out)
    }

    /// Create a child folder with `mode` (umask applies); an existing folder is fine.
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> Result<Dir, NfError> {
        let p = self.child_path(name);
        check_name(name, &p)?;
        match mkdirat(&self.fd, name, Mode::from_bits_truncate(mode)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(NfError::errno(p, e)),
        }
        self.child(name)
    }

    /// Write `bytes` atomically: a temporary file in this folder (`O_EXCL`), `fchmod`,
    /// `fsync`, `renameat` over `name`, then `fsync` of the folder.
    pub fn write_atomic(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<(), NfError> {
        let p = self.child_path(name);
        check_name(name, &p)?;
        let mut tmp = OsString::from(".gitward-restore.");
        tmp.push(name);
        tmp.push(format!(".{}", std::process::id()));
        let _ = unlinkat(&self.fd, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        let fd = openat(
            &self.fd,
            tmp.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(|e| NfError::errno(self.child_path(&tmp), e))?;
        let res = (|| {
            nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(mode & 0o7777))
                .map_err(|e| NfError::errno(p.clone(), e))?;
            let mut f = std::fs::File::from(fd);
            f.write_all(bytes).map_err(|e| NfError::Io(p.clone(), e))?;
            f.sync_all().map_err(|e| NfError::Io(p.clone(), e))?;
            renameat(&self.fd, tmp.as_os_str(), &self.fd, name)
                .map_err(|e| NfError::errno(p.clone(), e))?;
            nix::unistd::fsync(&self.fd).map_err(|e| NfError::errno(self.path.clone(), e))
        })();
        if res.is_err() {
            let _ = unlinkat(&self.fd, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
        res
    }

    /// Move the child `name` (of any type) into `dest` (a folder the caller trusts, e.g. the
    /// quarantine) under `dest_name`. `renameat` first; across filesystems the entry is
    /// copied without following links (files, folders recursively, links as links, fifos
    /// recreated) and then removed here. Nothing is removed before its copy is on disk.
    pub fn move_out(&self, name: &OsStr, dest: &Dir, dest_name: &OsStr) -> Result<(), NfError> {
        let p = self.child_path(name);
        check_name(name, &p)?;
        match renameat(&self.fd, name, &dest.fd, dest_name) {
            Ok(()) => {
                let _ = nix::unistd::fsync(&dest.fd);
                Ok(())
            }
            Err(Errno::EXDEV) => {
                self.copy_into(name, dest, dest_name)?;
                self.remove_all(name)
            }
            Err(e) => Err(NfError::errno(p, e)),
        }
    }

    fn copy_into(&self, name: &OsStr, dest: &Dir, dest_name: &OsStr) -> Result<(), NfError> {
        let p = self.child_path(name);
        let Some(st) = self.stat(name)? else {
            return Err(NfError::Io(p, std::io::ErrorKind::NotFound.into()));
        };
        match st.kind {
            Kind::File => {
                let (bytes, mode) = self.read(name, COPY_LIMIT)?;
                dest.write_atomic(dest_name, &bytes, mode)
            }
            Kind::Dir => {
                let src = self.child(name)?;
                let d = dest.mkdir(dest_name, 0o700)?;
                for n in src.list()? {
                    src.copy_into(&n, &d, &n)?;
                }
                Ok(())
            }
            Kind::Link => {
                let t = self.read_link(name)?;
                nix::unistd::symlinkat(t.as_os_str(), &dest.fd, dest_name)
                    .map_err(|e| NfError::errno(dest.child_path(dest_name), e))
            }
            Kind::Fifo => {
                nix::unistd::mkfifoat(&dest.fd, dest_name, Mode::from_bits_truncate(0o600))
                    .map_err(|e| NfError::errno(dest.child_path(dest_name), e))
            }
            Kind::Socket | Kind::Device => {
                // Not copyable as such: keep a note of what was there.
                let note = format!("{} (mode {:o}) was here\n", st.kind.name(), st.mode);
                let mut n = dest_name.to_os_string();
                n.push(".what");
                dest.write_atomic(&n, note.as_bytes(), 0o600)
            }
        }
    }

    /// Remove a child of any type; folders recursively (used only after a copy).
    fn remove_all(&self, name: &OsStr) -> Result<(), NfError> {
        let p = self.child_path(name);
        match self.stat(name)? {
            None => Ok(()),
            Some(st) if st.kind == Kind::Dir => {
                let d = self.child(name)?;
                for n in d.list()? {
                    d.remove_all(&n)?;
                }
                unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir).map_err(|e| NfError::errno(p, e))
            }
            Some(_) => unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir)
                .map_err(|e| NfError::errno(p, e)),
        }
    }
}

/// Size bound for files copied across filesystems into quarantine.
const COPY_LIMIT: u64 = 256 << 20;

fn check_name(name: &OsStr, p: &Path) -> Result<(), NfError> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(NfError::BadPath(p.to_path_buf()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_in_the_walk_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink(t.path().join("a"), t.path().join("l")).unwrap();
        let root = Dir::open_abs(t.path()).unwrap();
        assert!(root.walk(Path::new("a/b")).is_ok());
        assert!(matches!(root.walk(Path::new("l/b")), Err(NfError::Link(_))));
        assert!(matches!(
            root.walk(Path::new("../x")),
            Err(NfError::BadPath(_))
        ));
    }

    #[test]
    fn fifo_is_not_read_and_does_not_block() {
        let t = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&t.path().join("f"), Mode::from_bits_truncate(0o600)).unwrap();
        let root = Dir::open_abs(t.path()).unwrap();
        assert!(matches!(
            root.read(OsStr::new("f"), 10),
            Err(NfError::NotRegular(_, "fifo"))
        ));
    }

    #[test]
    fn write_atomic_then_move_out() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("q")).unwrap();
        let root = Dir::open_abs(t.path()).unwrap();
        root.write_atomic(OsStr::new("x"), b"hello", 0o755).unwrap();
        let (b, m) = root.read(OsStr::new("x"), 100).unwrap();
        assert_eq!((b.as_slice(), m), (&b"hello"[..], 0o755));
        assert!(matches!(
            root.read(OsStr::new("x"), 3),
            Err(NfError::TooLarge(..))
        ));
        let q = root.child(OsStr::new("q")).unwrap();
        root.move_out(OsStr::new("x"), &q, OsStr::new("x.1"))
            .unwrap();
        assert!(root.stat(OsStr::new("x")).unwrap().is_none());
        assert_eq!(std::fs::read(t.path().join("q/x.1")).unwrap(), b"hello");
    }
}
