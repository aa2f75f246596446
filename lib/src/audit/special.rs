//! FIFOs, sockets and devices in a git dir.
//!
//! git opens the files of a git dir (`HEAD`, `config`, `commondir`, `gitdir`, `index`, refs,
//! `packed-refs`, logs, `objects/info/alternates`, hooks, `worktrees/<id>/*`, `modules/**`)
//! with a plain blocking `open(2)`: a FIFO there makes the owner's `git status`,
//! `git worktree list`, `git gc`, `git branch -D` (and any reader built on gix) block forever,
//! and a device there is read as whatever it yields. git itself never makes one. An agent
//! that can write part of a git dir (a worktree entry, a nested repository in the work tree)
//! can, so the sweep reports every one, at any depth, without opening anything: the walk
//! reads folder listings and `lstat`s only, and never follows a link.

use std::path::{Path, PathBuf};

/// Bound on the entries one sweep examines; past it the sweep is incomplete.
pub const MAX_ENTRIES: usize = 1_000_000;
/// The socket `git fsmonitor--daemon` makes in a git dir (`fsmonitor-ipc.c`): git's own,
/// never reported.
pub const FSMONITOR_SOCKET: &str = "fsmonitor--daemon.ipc";
/// Bound on folder depth below the swept folder.
pub const MAX_DEPTH: usize = 32;

/// What [`sweep`] found.
#[derive(Debug, Default)]
pub struct Special {
    /// Each FIFO, socket or device, with its kind (`fifo`, `socket`, `char device`,
    /// `block device`).
    pub found: Vec<(PathBuf, &'static str)>,
    /// Why the sweep was cut short (a bound, an unreadable folder), when it was.
    pub incomplete: Option<(PathBuf, String)>,
}

/// The kind of a non-regular, non-folder, non-link file type, or `None`.
pub fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        Some("fifo")
    } else if ft.is_socket() {
        Some("socket")
    } else if ft.is_char_device() {
        Some("char device")
    } else if ft.is_block_device() {
        Some("block device")
    } else {
        None
    }
}

/// What a blocking `open(2)` of `path` by git would meet: a FIFO, socket or device there
/// (`lstat`), or a link — through any number of links — to one, or into `/dev` or `/proc`
/// at all. A link into `/dev` or `/proc` is judged by where it points, not by what it names
/// for this process: `/dev/stdin` → `/proc/self/fd/0` is the reader's own standard input,
/// `/dev/null` for `check` and a pipe or a terminal for the owner's git (eleventh red-team
/// pass, R11-9, R11-10). `/dev/null` itself reads as empty and is left alone (an owner may
/// switch a file off with it). Only `lstat`, `readlink` and `stat`: never opens.
pub fn blocking(path: &Path) -> Option<&'static str> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if let Some(k) = special_kind(&m.file_type()) {
        return Some(k);
    }
    if !m.file_type().is_symlink() {
        return None;
    }
    if std::fs::canonicalize(path).is_ok_and(|t| t == Path::new("/dev/null"))
        && !link_through_proc(path)
    {
        return None;
    }
    if let Some(k) = std::fs::metadata(path)
        .ok()
        .and_then(|m| special_kind(&m.file_type()))
    {
        return Some(k);
    }
    link_into_devices(path).then_some("link into /dev or /proc")
}

/// Whether some hop of the link chain at `path` points into `/dev` (but `/dev/null`) or
/// `/proc`, each hop's folder resolved by the kernel and its last name as written.
fn link_into_devices(path: &Path) -> bool {
    hops(path)
        .iter()
        .any(|t| (t.starts_with("/dev") && t != Path::new("/dev/null")) || t.starts_with("/proc"))
}

/// Whether some hop of the link chain at `path` points into `/proc`.
fn link_through_proc(path: &Path) -> bool {
    hops(path).iter().any(|t| t.starts_with("/proc"))
}

/// The targets of the link chain at `path` (at most 40 hops, as the kernel follows), each
/// as its folder's real path joined with its last name.
fn hops(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = path.to_path_buf();
    for _ in 0..40 {
        let Ok(t) = std::fs::read_link(&cur) else {
            break;
        };
        let abs = if t.is_absolute() {
            t
        } else {
            cur.parent().unwrap_or(Path::new("/")).join(t)
        };
        let abs = crate::integrity::normalize(&abs);
        let real = match (abs.parent(), abs.file_name()) {
            (Some(d), Some(n)) => std::fs::canonicalize(d).map_or(abs.clone(), |d| d.join(n)),
            _ => abs.clone(),
        };
        out.push(real.clone());
        if !std::fs::symlink_metadata(&real).is_ok_and(|m| m.file_type().is_symlink()) {
            break;
        }
        cur = real;
    }
    out
}

/// Every FIFO, socket or device at or below `dir` (not following links; `dir` itself is
/// `lstat`ed). A `dir` that does not exist yields nothing.
pub fn sweep(dir: &Path) -> Special {
    let mut out = Special::default();
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) => {
            if let Some(k) = special_kind(&m.file_type()) {
                out.found.push((dir.to_path_buf(), k));
            }
            return out;
        }
        Err(_) => return out,
    }
    let mut seen = 0usize;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.incomplete = Some((d, format!("cannot list: {e}")));
                return out;
            }
        };
        for e in rd {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    out.incomplete = Some((d, format!("cannot list: {err}")));
                    return out;
                }
            };
            seen += 1;
            if seen > MAX_ENTRIES {
                out.incomplete = Some((d, format!("more than {MAX_ENTRIES} entries")));
                return out;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    out.incomplete = Some((e.path(), format!("deeper than {MAX_DEPTH} folders")));
                    return out;
                }
                stack.push((e.path(), depth + 1));
            } else if let Some(k) = special_kind(&ft) {
                // git's own: the builtin fsmonitor daemon's socket (macOS, Windows).
                if k == "socket" && e.file_name() == FSMONITOR_SOCKET {
                    continue;
                }
                out.found.push((e.path(), k));
            } else if ft.is_symlink() {
                // A link git opens follows to what it names: a link to a FIFO or device
                // blocks the same (ninth red-team pass, R9-13: a worktree entry's `HEAD`
                // made a link to a FIFO hung the owner's git and `check`'s ref snapshot).
                // `/dev/null` reads as empty and is left alone.
                let p = e.path();
                if let Some(k) = blocking(&p) {
                    out.found.push((p, k));
                }
            }
        }
    }
    out.found.sort();
    out
}

/// Open a file that must be regular, as [`read_regular`] reads it: `O_NONBLOCK|O_CLOEXEC`
/// (a FIFO swapped in after an `lstat` cannot block the open), refused unless `fstat` on the
/// descriptor says regular and smaller than `limit` bytes. Follows a link. The descriptor and
/// its `fstat` are returned for callers that read it their own way (safe-git's gitlink cache).
pub fn open_regular(
    path: &Path,
    limit: u64,
) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let md = f.metadata()?;
    if !md.is_file() {
        return Err(std::io::Error::other(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    if md.len() >= limit {
        return Err(std::io::Error::other(format!(
            "{}: larger than {limit} bytes",
            path.display()
        )));
    }
    Ok((f, md))
}

/// Read a small file that must be regular: opened `O_NONBLOCK|O_CLOEXEC` (a FIFO swapped in
/// after an `lstat` cannot block the open), refused unless `fstat` says regular, at most
/// `limit` bytes (larger: an error). Follows a link, as git does for the files it names.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (f, md) = open_regular(path, limit)?;
    // Sized from the stat (one more byte, so a file that grew is still read to its end
    // without a second allocation of the whole): a 1 MB index read into a growing buffer
    // costs five reallocations and copies.
    let mut b = Vec::with_capacity(usize::try_from(md.len()).unwrap_or(0).saturating_add(1));
    f.take(limit).read_to_end(&mut b)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fifos_at_any_depth_and_nothing_in_an_ordinary_git_dir() {
        let d = tempfile::tempdir().unwrap();
        let g = d.path().join("g");
        std::fs::create_dir_all(g.join("worktrees/zz")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(sweep(&g).found.is_empty());
        nix::unistd::mkfifo(&g.join("worktrees/zz/HEAD"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let s = sweep(&g);
        assert_eq!(s.found, vec![(g.join("worktrees/zz/HEAD"), "fifo")]);
        assert!(s.incomplete.is_none());
        assert!(sweep(&d.path().join("absent")).found.is_empty());
    }
}

#[cfg(test)]
mod blocking_tests {
    use super::*;

    /// R11-9, R11-10: a link to `/dev/stdin` is found whatever this process's standard input
    /// is (the test harness gives `/dev/null`), and so are `/dev/zero`, a relative way into
    /// `/dev`, a link to a link into `/proc`; `/dev/null` and an ordinary file are not.
    #[test]
    fn links_into_dev_or_proc_are_blocking_whatever_they_name_here() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let link = |name: &str, to: &str| {
            std::os::unix::fs::symlink(to, d.join(name)).unwrap();
            d.join(name)
        };
        std::fs::write(d.join("plain"), "x").unwrap();
        let up = "../".repeat(d.components().count());
        for (name, to) in [
            ("stdin", "/dev/stdin"),
            ("fd0", "/proc/self/fd/0"),
            ("zero", "/dev/zero"),
            ("rel", &format!("{up}dev/stdin")),
        ] {
            assert!(blocking(&link(name, to)).is_some(), "{name} -> {to}");
        }
        let hop = link("hop", &d.join("stdin").display().to_string());
        assert!(blocking(&hop).is_some());
        assert_eq!(blocking(&link("null", "/dev/null")), None);
        assert_eq!(blocking(&link("file", "plain")), None);
        assert_eq!(blocking(&d.join("plain")), None);
        // The sweep reports them too.
        let found: Vec<_> = sweep(d).found.into_iter().map(|(p, _)| p).collect();
        assert!(found.contains(&d.join("stdin")) && found.contains(&d.join("hop")));
        assert!(!found.contains(&d.join("null")));
    }
}
