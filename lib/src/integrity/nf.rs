//! wt-check's view of [`crate::fsx`]: a folder handle ([`Dir`]) whose operations take one
//! entry name or a relative path, all through `fsx::Root` — every component opened with
//! `O_NOFOLLOW`, a link where a folder or file is expected refused as
//! [`FsError::Link`], never followed. This module adds only what wt-check needs on top:
//! opening an absolute path from `/` without following any link (the pinned common dir is
//! re-opened that way at check time, so a `.git` swapped for a link is seen), and entry
//! kinds as recorded in the state file.

pub use crate::fsx::FsError as NfError;
use crate::fsx::{FileType, Root};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The type of a directory entry, as `lstat` sees it (stored in the state file).
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
    fn of(t: &FileType) -> Kind {
        match t {
            FileType::File { .. } => Kind::File,
            FileType::Dir { .. } => Kind::Dir,
            FileType::Symlink { .. } => Kind::Link,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            FileType::CharDev | FileType::BlockDev => Kind::Device,
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

/// A folder opened without following links.
#[derive(Debug)]
pub struct Dir(Root);

impl Dir {
    /// Open an absolute path walking from `/`, refusing a link at any component.
    /// The walk starts at the process's shared handle on `/` ([`Root::system_shared`]).
    pub fn open_abs(path: &Path) -> Result<Dir, NfError> {
        match path.strip_prefix("/") {
            Ok(rel) if rel.as_os_str().is_empty() => Ok(Dir(Root::system()?)),
            Ok(rel) => Root::system_shared()?.open_dir(rel).map(Dir),
            Err(_) => Err(NfError::Escape {
                path: path.to_path_buf(),
            }),
        }
    }

    /// Open a folder the caller trusts (links in its own path resolved once, as
    /// `fsx::Root::open`): the quarantine, the state file's folder.
    pub fn open_trusted(path: &Path) -> Result<Dir, NfError> {
        Root::open(path).map(Dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The folder `rel` below this one (`""` is this folder).
    /// Is the folder `rel` certainly absent (one `openat2` answered "no such name", no link
    /// crossed)? `false` on anything else: [`Dir::walk`] it then.
    pub fn certainly_absent(&self, rel: &Path) -> bool {
        self.0.certainly_absent(rel)
    }

    pub fn walk(&self, rel: &Path) -> Result<Dir, NfError> {
        if rel.as_os_str().is_empty() {
            return self.0.try_clone().map(Dir);
        }
        self.0.open_dir(rel).map(Dir)
    }

    /// `lstat` of a child; `None` when it does not exist.
    pub fn stat(&self, name: &OsStr) -> Result<Option<Stat>, NfError> {
        Ok(self.0.stat(name)?.map(|st| {
            let (mode, size) = match st.file_type {
                FileType::File { mode, size } => (mode, size),
                FileType::Dir { mode } => (mode, 0),
                _ => (0, 0),
            };
            Stat {
                kind: Kind::of(&st.file_type),
                mode,
                size,
            }
        }))
    }

    /// Read a regular file child, at most `limit` bytes, with its permission bits.
    pub fn read(&self, name: &OsStr, limit: u64) -> Result<(Vec<u8>, u32), NfError> {
        let mode = match self.0.stat(name)?.map(|s| s.file_type) {
            Some(FileType::File { mode, .. }) => mode,
            _ => 0,
        };
        Ok((self.0.read(name, limit)?, mode))
    }

    /// Read a regular file child, at most `limit` bytes (no mode; one lookup fewer).
    pub fn read_bytes(&self, name: &OsStr, limit: u64) -> Result<Vec<u8>, NfError> {
        self.0.read(name, limit)
    }

    /// Read a regular file child the caller has already seen as one (its `lstat`,
    /// [`Dir::stat`], or its folder listing's type, [`Dir::list_kinds`]), without another
    /// `lstat`: `fsx::Root::read_child_regular` (opened no-follow and non-blocking, its type
    /// checked on the opened descriptor before any byte is read). The bytes and the
    /// permission bits of the file read.
    pub fn read_stated(&self, name: &OsStr, limit: u64) -> Result<(Vec<u8>, u32), NfError> {
        self.0.read_child_regular(name, limit)
    }

    /// A regular file child opened as [`Dir::read_stated`] opens it, not yet read
    /// (`fsx::Root::open_child_regular`): its identity can be looked at first.
    pub fn open_regular(
        &self,
        name: &OsStr,
        limit: u64,
    ) -> Result<crate::fsx::OpenedFile, NfError> {
        self.0.open_child_regular(name, limit)
    }

    /// A regular file `rel` below this folder (several components) in one `openat2`, no
    /// link crossed (`fsx::Root::open_regular_at_once`); `None` on any failure of the open:
    /// walk to it then.
    pub fn open_regular_at_once(
        &self,
        rel: &Path,
        limit: u64,
    ) -> Option<Result<crate::fsx::OpenedFile, NfError>> {
        self.0.open_regular_at_once(rel, limit)
    }

    /// The target of a symbolic link child (read, not followed).
    pub fn read_link(&self, name: &OsStr) -> Result<OsString, NfError> {
        self.0.read_link(name).map(PathBuf::into_os_string)
    }

    /// Names in this folder, sorted.
    pub fn list(&self) -> Result<Vec<OsString>, NfError> {
        self.0.list_names("")
    }

    /// Names in this folder with their type from the listing (`d_type`), sorted: a hint
    /// taken at listing time (see `fsx::Root::list_kinds`).
    pub fn list_kinds(&self) -> Result<Vec<(OsString, crate::fsx::EntryKind)>, NfError> {
        self.0.list_kinds("")
    }

    /// Create a child folder (an existing one is fine).
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> Result<(), NfError> {
        self.0.create_dir_all(name, mode)
    }

    /// Write a child atomically (temporary file, fsync, rename, folder fsync). An existing
    /// link, fifo or folder in its place is refused, not replaced.
    pub fn write_atomic(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<(), NfError> {
        self.0.write_atomic(name, bytes, mode)
    }

    /// Create a symbolic link child.
    pub fn symlink(&self, target: &str, name: &OsStr) -> Result<(), NfError> {
        self.0.create_symlink(target, name)
    }

    /// Move a child (never followed) into `dest` as `dest_name`; never replaces, never
    /// deletes before the copy exists (fsx `move_to`).
    pub fn move_out(&self, name: &OsStr, dest: &Dir, dest_name: &OsStr) -> Result<(), NfError> {
        self.0.move_to(name, &dest.0, dest_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_in_the_walk_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("l")).unwrap();
        assert!(Dir::open_abs(&base.join("a/b")).is_ok());
        assert!(Dir::open_abs(&base.join("l/b")).unwrap_err().is_link());
        let root = Dir::open_abs(&base).unwrap();
        assert!(root.walk(Path::new("l/b")).unwrap_err().is_link());
        assert!(matches!(
            root.walk(Path::new("../x")),
            Err(NfError::Escape { .. })
        ));
    }

    #[test]
    fn fifo_is_not_read_and_does_not_block() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        nix::unistd::mkfifo(
            &base.join("f"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let root = Dir::open_abs(&base).unwrap();
        assert!(matches!(
            root.read(OsStr::new("f"), 10),
            Err(NfError::NotRegular { .. })
        ));
    }

    #[test]
    fn write_atomic_then_move_out() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(base.join("q")).unwrap();
        let root = Dir::open_abs(&base).unwrap();
        root.write_atomic(OsStr::new("x"), b"hello", 0o755).unwrap();
        let (b, m) = root.read(OsStr::new("x"), 100).unwrap();
        assert_eq!((b.as_slice(), m), (&b"hello"[..], 0o755));
        assert!(matches!(
            root.read(OsStr::new("x"), 3),
            Err(NfError::TooLarge { .. })
        ));
        let q = root.walk(Path::new("q")).unwrap();
        root.move_out(OsStr::new("x"), &q, OsStr::new("x.1"))
            .unwrap();
        assert!(root.stat(OsStr::new("x")).unwrap().is_none());
        assert_eq!(std::fs::read(base.join("q/x.1")).unwrap(), b"hello");
    }
}
