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

/// Links to folders one sweep follows ([`Sweep::through_link`]); past it the sweep is
/// incomplete.
pub const MAX_LINKS: usize = 64;

/// The kind [`sweep`] gives a symbolic link in the ref namespace: at or below a folder named
/// `refs` (a git dir's `refs/`, `worktrees/<id>/refs/`, `modules/**/refs/`, `logs/refs/`).
/// git follows such a link as it reads or lists refs — a replace ref behind it rewrote the
/// owner's checkout, a FIFO behind it hung the owner's git and the check (sixteenth red-team
/// pass, R16-1, R16-2, R16-4, R16-5, R16-8) — while gix, which the commit scan reads refs
/// with, does not: what such a link shows git is never scanned. git never makes one (only
/// `HEAD` may be a link, with the long-deprecated `core.preferSymlinkRefs`), so each is
/// reported, and with `--restore` moved aside, as a FIFO is.
pub const REF_LINK: &str = "symbolic link where git reads refs";

/// What a found entry of kind `kind` does to the owner's git, for messages.
pub fn harm(kind: &str) -> &'static str {
    if kind == REF_LINK {
        "git reads refs through it from wherever it points (a replace ref there rewrites what a checkout writes; a FIFO there hangs), and the commit scan does not follow it; git never makes one"
    } else {
        "git's blocking open of it hangs the owner's git"
    }
}

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
///
/// Each folder is opened once, relative to its parent's descriptor (`O_RDONLY |
/// O_DIRECTORY | O_NOFOLLOW`, [`Root::open_dir_listed`]), and listed through that descriptor
/// with the listing's types (`d_type`; an `lstat` where the file system does not tell): four
/// system calls a folder (`openat`, two `getdents64`, `close`) where `read_dir` of the full
/// path took five (glibc's `opendir` adds an `fstat`) and walked every component from `/`
/// again. A folder that is no longer one when it is opened — swapped for a link, a FIFO or a
/// file after its parent was listed — is not entered: it is judged as the entry it now is
/// ([`rejudge`]), as a sweep started a moment later would have listed it (`read_dir` of the
/// path followed such a link).
///
/// [`Root::open_dir_listed`]: crate::fsx::Root::open_dir_listed
pub fn sweep(dir: &Path) -> Special {
    sweep_known(dir, &Known::default())
}

/// Listings already read of folders below a swept folder, by path relative to it: what
/// [`sweep_known`] takes instead of listing the folder again.
pub type Known = std::collections::HashMap<PathBuf, crate::fsx::Listing>;

/// [`sweep`], with the listings in `known` taken for the folders they name instead of
/// opening and listing those folders again (`wt-check check`: the worktree entries' admin
/// dirs and their `refs/`, `logs/`, `logs/refs/`, just listed no-follow by
/// `crate::layout::worktree_entries`). A known listing must have been read as the sweep reads
/// (no-follow, with `d_type` kinds) moments before, of the folder at that path: it is then
/// what the sweep would have read, but for what a writer changed in between — which it could
/// as well change just after the sweep. A folder below a known one that is not known itself
/// is opened from the swept folder's descriptor, no link followed on the way; one that cannot
/// be (a known folder swapped since) makes the sweep incomplete.
pub fn sweep_known(dir: &Path, known: &Known) -> Special {
    let (mut seen, mut links) = (0usize, 0usize);
    sweep_at(dir, known, &mut seen, &mut links)
}

/// [`sweep_known`] with the entry and link counts of the sweep this one is part of.
fn sweep_at(dir: &Path, known: &Known, seen: &mut usize, links: &mut usize) -> Special {
    let mut out = Special::default();
    let own_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) => {
            if let Some(k) = special_kind(&m.file_type()) {
                out.found.push((dir.to_path_buf(), k));
            } else if m.file_type().is_symlink() {
                // The swept folder itself a link (safe-git sweeps `<git dir>/refs` and
                // `<git dir>/logs`): judged as a link met in its parent would be.
                if let Some(k) = blocking(dir) {
                    out.found.push((dir.to_path_buf(), k));
                } else if own_name == "refs" {
                    out.found.push((dir.to_path_buf(), REF_LINK));
                } else if crate::catalogue::GIT_DIR_LISTED_FOLDERS.contains(&own_name)
                    && std::fs::metadata(dir).is_ok_and(|m| m.is_dir())
                {
                    let up = dir.parent().unwrap_or(Path::new("/"));
                    let _ = follow(dir, up, seen, links, &mut out);
                }
            }
            return out;
        }
        Err(_) => return out,
    }
    let (root, listing) = match crate::fsx::Root::open_listed(dir) {
        Ok(r) => r,
        Err(e) if e.is_not_found() => return out,
        Err(crate::fsx::FsError::Link { .. } | crate::fsx::FsError::NotDir { .. }) => {
            let _ = rejudge(dir, &mut out);
            out.found.sort();
            return out;
        }
        Err(e) => {
            out.incomplete = Some((dir.to_path_buf(), format!("cannot list: {e}")));
            return out;
        }
    };
    let mut at = Sweep {
        top: &root,
        top_path: dir,
        top_refs: own_name == "refs",
        known,
        seen,
        links,
        out: &mut out,
    };
    // An `Err` is the sweep cut short (`out.incomplete` says why).
    let _ = at.listed(Some(&root), Path::new(""), dir, listing, 0);
    out.found.sort();
    out
}

/// One sweep's state: the swept folder's handle, the listings known, the count, the findings.
struct Sweep<'a> {
    top: &'a crate::fsx::Root,
    /// The swept folder's path (a link leading back to it or above it is not followed).
    top_path: &'a Path,
    /// The swept folder is a `refs` folder: every link in it is in the ref namespace.
    top_refs: bool,
    known: &'a Known,
    seen: &'a mut usize,
    /// Links to folders followed so far ([`MAX_LINKS`]).
    links: &'a mut usize,
    out: &'a mut Special,
}

impl Sweep<'_> {
    /// The entries of the folder at `rel` below the swept one (full path `path`, `depth`
    /// folders down), as listed in `listing`; `dir`, its handle when it was opened (`None`
    /// for a known listing: its sub-folders are opened from the swept folder's handle).
    fn listed(
        &mut self,
        dir: Option<&crate::fsx::Root>,
        rel: &Path,
        path: &Path,
        listing: crate::fsx::Listing,
        depth: usize,
    ) -> Result<(), ()> {
        use crate::fsx::{EntryKind, FsError};
        for (name, kind) in listing {
            *self.seen += 1;
            if *self.seen > MAX_ENTRIES {
                self.out.incomplete = Some((
                    path.to_path_buf(),
                    format!("more than {MAX_ENTRIES} entries"),
                ));
                return Err(());
            }
            let p = path.join(&name);
            match kind {
                EntryKind::Dir => {
                    if depth + 1 > MAX_DEPTH {
                        self.out.incomplete = Some((p, format!("deeper than {MAX_DEPTH} folders")));
                        return Err(());
                    }
                    let child_rel = rel.join(&name);
                    if let Some(l) = self.known.get(&child_rel) {
                        self.listed(None, &child_rel, &p, l.clone(), depth + 1)?;
                        continue;
                    }
                    let opened = match dir {
                        Some(d) => d.open_dir_listed(&name),
                        None => self.top.open_dir_listed_at(&child_rel),
                    };
                    match opened {
                        Ok((child, listing)) => {
                            self.listed(Some(&child), &child_rel, &p, listing, depth + 1)?;
                        }
                        // Gone since it was listed: nothing there to open.
                        Err(e) if e.is_not_found() => {}
                        // No longer a folder: judged as what it is now, not entered.
                        Err(FsError::Link { .. } | FsError::NotDir { .. }) if dir.is_some() => {
                            rejudge(&p, self.out)?
                        }
                        Err(e) => {
                            self.out.incomplete = Some((p, format!("cannot list: {e}")));
                            return Err(());
                        }
                    }
                }
                EntryKind::Fifo | EntryKind::Socket | EntryKind::CharDev | EntryKind::BlockDev => {
                    let k = kind.name();
                    // git's own: the builtin fsmonitor daemon's socket (macOS, Windows).
                    if k == "socket" && name == FSMONITOR_SOCKET {
                        continue;
                    }
                    self.out.found.push((p, k));
                }
                EntryKind::Symlink => {
                    // A link git opens follows to what it names: a link to a FIFO or device
                    // blocks the same (ninth red-team pass, R9-13: a worktree entry's `HEAD`
                    // made a link to a FIFO hung the owner's git and `check`'s ref snapshot).
                    // `/dev/null` reads as empty and is left alone.
                    let link_rel = rel.join(&name);
                    if let Some(k) = blocking(&p) {
                        self.out.found.push((p, k));
                    } else if self.top_refs || in_ref_namespace(&link_rel) {
                        self.out.found.push((p, REF_LINK));
                    } else if descended(&link_rel)
                        && std::fs::metadata(&p).is_ok_and(|m| m.is_dir())
                    {
                        self.through_link(&p)?;
                    }
                }
                EntryKind::File => {}
            }
        }
        Ok(())
    }

    /// A link to a folder where git lists and opens whatever it finds (at or below `logs/`,
    /// `objects/`, `rr-cache/`; one in the ref namespace is [`REF_LINK`]): git descends it as the folder it names — `objects/pack` or a
    /// folder of refs made a link to a folder holding a FIFO hung the owner's git and the
    /// commit scan (fifteenth red-team pass, R15-3/R15-4) — so its target is swept too, and
    /// what is found there is reported at the path git opens. Links elsewhere (`hooks`, say)
    /// are the comparison's to judge and restore, not followed here. A target that is the
    /// swept folder or holds it makes the sweep incomplete (git would loop through it); the
    /// links followed count against [`MAX_LINKS`], their entries against [`MAX_ENTRIES`].
    fn through_link(&mut self, link: &Path) -> Result<(), ()> {
        follow(link, self.top_path, self.seen, self.links, self.out)
    }
}

/// [`Sweep::through_link`]: the link `link` to a folder followed, its target swept, what is
/// found there reported at the path git opens, into `out`; `top` is the folder whose sweep
/// this is part of (a target that is it or holds it makes the sweep incomplete).
fn follow(
    link: &Path,
    top: &Path,
    seen: &mut usize,
    links: &mut usize,
    out: &mut Special,
) -> Result<(), ()> {
    *links += 1;
    // Through `/proc` (`/proc/self/cwd/x`: the folder depends on who follows it — the
    // owner's git at the top of the work tree, the check wherever it was started: R16-8)
    // or into `/dev`: not judged by where it leads for this process, reported.
    if link_through_proc(link) || link_into_devices(link) {
        out.found
            .push((link.to_path_buf(), "link into /dev or /proc"));
        return Ok(());
    }
    let target = std::fs::canonicalize(link);
    let top = std::fs::canonicalize(top);
    let why = match (&target, &top) {
        _ if *links > MAX_LINKS => Some(format!("more than {MAX_LINKS} links to folders")),
        (Ok(t), Ok(top)) if top.starts_with(t) => {
            Some("a link to the swept folder or a folder above it".to_owned())
        }
        // Gone since it was listed: judged by the next sweep, as any late change.
        (Err(_), _) => return Ok(()),
        _ => None,
    };
    if let Some(why) = why {
        out.incomplete = Some((link.to_path_buf(), why));
        return Err(());
    }
    let target = target.expect("checked above");
    let inner = sweep_at(&target, &Known::default(), seen, links);
    let at_link = |p: PathBuf| match p.strip_prefix(&target) {
        Ok(rest) if rest.as_os_str().is_empty() => link.to_path_buf(),
        Ok(rest) => link.join(rest),
        Err(_) => p,
    };
    out.found
        .extend(inner.found.into_iter().map(|(p, k)| (at_link(p), k)));
    if let Some((p, why)) = inner.incomplete {
        out.incomplete = Some((at_link(p), why));
        return Err(());
    }
    Ok(())
}

/// An entry listed as a folder that could not be opened as one: judged by its `lstat` now,
/// as the listing would have shown it — a FIFO, socket or device is found, a link is judged
/// by [`blocking`] (never followed), a file is left. A folder again (swapped back between
/// the open and the `lstat`) was not swept: the sweep is incomplete (`Err`).
fn rejudge(p: &Path, out: &mut Special) -> Result<(), ()> {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return Ok(());
    };
    let ft = m.file_type();
    if ft.is_dir() {
        out.incomplete = Some((
            p.to_path_buf(),
            "cannot list: swapped for something else and back while the sweep read it".into(),
        ));
        return Err(());
    }
    if let Some(k) = special_kind(&ft) {
        if !(k == "socket" && p.file_name() == Some(std::ffi::OsStr::new(FSMONITOR_SOCKET))) {
            out.found.push((p.to_path_buf(), k));
        }
    } else if ft.is_symlink() {
        if let Some(k) = blocking(p) {
            out.found.push((p.to_path_buf(), k));
        }
    }
    Ok(())
}

/// Whether `rel` (below a swept git dir) lies where git lists folders and opens what it
/// finds: one of [`crate::catalogue::GIT_DIR_LISTED_FOLDERS`] on the way, or its own name
/// (a link at `modules/<m>/logs` or `rr-cache` is descended by git as the folder it names:
/// R16-6, R16-10).
fn descended(rel: &Path) -> bool {
    rel.components().any(|c| {
        c.as_os_str()
            .to_str()
            .is_some_and(|n| crate::catalogue::GIT_DIR_LISTED_FOLDERS.contains(&n))
    })
}

/// Whether `rel` (below a swept git dir) is at or below a folder named `refs`: where git
/// reads refs ([`REF_LINK`]).
fn in_ref_namespace(rel: &Path) -> bool {
    rel.components().any(|c| c.as_os_str() == "refs")
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

    /// The sweep before descriptors were held: `read_dir` of each folder's full path.
    fn sweep_by_path(dir: &Path) -> Vec<(PathBuf, &'static str)> {
        let mut found = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                let ft = e.file_type().unwrap();
                if ft.is_dir() {
                    stack.push(e.path());
                } else if let Some(k) = special_kind(&ft) {
                    if !(k == "socket" && e.file_name() == FSMONITOR_SOCKET) {
                        found.push((e.path(), k));
                    }
                } else if ft.is_symlink() {
                    if let Some(k) = blocking(&e.path()) {
                        found.push((e.path(), k));
                    }
                }
            }
        }
        found.sort();
        found
    }

    /// Held descriptors find what `read_dir` of each path found, at every depth and of every
    /// kind (FIFO, socket, git's fsmonitor socket left alone, links to a FIFO, into `/dev`,
    /// to `/dev/null`, to a folder), and the paths are named under `dir` as given (here
    /// through a link above it, which the caller vouches for).
    /// R15-3/R15-4: a folder git descends made a link to a folder holding a FIFO
    /// (`objects/pack` → `…/p` with a FIFO `.idx`; a folder of refs): the FIFO is found, at
    /// the path git opens. A link to an honest folder finds nothing (positive control of the
    /// FIFO finding); a link elsewhere (`hooks`, the comparison's) is not followed; a link to
    /// the swept folder or above it makes the sweep incomplete, never loops.
    #[test]
    fn folders_git_descends_behind_links_are_swept_where_git_opens_them() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("g");
        std::fs::create_dir_all(g.join("objects")).unwrap();
        std::fs::create_dir_all(g.join("refs/heads")).unwrap();
        let outside = t.path().join("p");
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("pack-1.pack"), "").unwrap();
        std::os::unix::fs::symlink(&outside, g.join("objects/pack")).unwrap();
        let s = sweep(&g);
        assert!(s.found.is_empty() && s.incomplete.is_none(), "{s:?}");
        let fifo = |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        fifo(&outside.join("sub/pack-1.idx"));
        let s = sweep(&g);
        assert_eq!(
            s.found,
            vec![(g.join("objects/pack/sub/pack-1.idx"), "fifo")]
        );
        assert!(s.incomplete.is_none());
        std::fs::remove_file(outside.join("sub/pack-1.idx")).unwrap();
        // A relative link to a folder of reflogs outside the git dir.
        let d = t.path().join("d");
        std::fs::create_dir(&d).unwrap();
        fifo(&d.join("x"));
        std::fs::create_dir_all(g.join("logs/refs")).unwrap();
        std::os::unix::fs::symlink("../../../d", g.join("logs/refs/dd")).unwrap();
        assert_eq!(
            sweep(&g).found,
            vec![(g.join("logs/refs/dd"), REF_LINK)],
            "a link in the ref namespace is reported, not followed"
        );
        std::fs::remove_file(g.join("logs/refs/dd")).unwrap();
        // A link whose own name is a folder git descends (R16-6: a submodule's `logs`;
        // R16-10: `rr-cache`) is followed.
        std::fs::create_dir_all(g.join("modules/s")).unwrap();
        std::os::unix::fs::symlink("../../../d", g.join("modules/s/logs")).unwrap();
        std::os::unix::fs::symlink("../d", g.join("rr-cache")).unwrap();
        assert_eq!(
            sweep(&g).found,
            vec![
                (g.join("modules/s/logs/x"), "fifo"),
                (g.join("rr-cache/x"), "fifo")
            ]
        );
        std::fs::remove_file(g.join("modules/s/logs")).unwrap();
        std::fs::remove_file(g.join("rr-cache")).unwrap();
        // Not a folder git descends: left to the comparison.
        std::os::unix::fs::symlink(&d, g.join("hooks")).unwrap();
        let s = sweep(&g);
        assert!(s.found.is_empty() && s.incomplete.is_none(), "{s:?}");
        // A link to an ancestor: incomplete.
        std::os::unix::fs::symlink(t.path(), g.join("objects/up")).unwrap();
        assert!(sweep(&g).incomplete.is_some());
    }

    /// Every link in the ref namespace is reported whatever it points at (R16-1: `refs/replace`
    /// a link to a folder in the work tree showed git a replace ref the commit scan never
    /// read; R16-2: one replace ref a link to a file; R16-4/R16-5/R16-7: `refs` itself a link
    /// in the common dir, a submodule git dir, a worktree entry; R16-8: through
    /// `/proc/self/cwd`), in the sweep of a git dir and in the sweep of a `refs` folder
    /// (safe-git's). Links elsewhere are not (`HEAD` with `core.preferSymlinkRefs`).
    #[test]
    fn links_in_the_ref_namespace_are_reported_whatever_they_name() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("g");
        let wt = t.path().join("wt");
        std::fs::create_dir_all(wt.join("rd/heads")).unwrap();
        std::fs::write(wt.join("agentref"), "0".repeat(40) + "\n").unwrap();
        for d in ["refs/heads", "worktrees/w/x", "modules/s/x", "objects"] {
            std::fs::create_dir_all(g.join(d)).unwrap();
        }
        std::fs::write(g.join("refs/heads/main"), "0".repeat(40) + "\n").unwrap();
        std::os::unix::fs::symlink("refs/heads/main", g.join("HEAD")).unwrap();
        // Honest: nothing found (the HEAD link is not in the ref namespace).
        let s = sweep(&g);
        assert!(s.found.is_empty() && s.incomplete.is_none(), "{s:?}");
        let cases: &[(&str, PathBuf)] = &[
            ("refs/replace", wt.join("rd")),
            ("refs/heads/r", wt.join("agentref")),
            ("worktrees/w/refs", wt.join("rd")),
            ("modules/s/refs", wt.join("rd")),
            ("refs/tags", PathBuf::from("/proc/self/cwd/rd")),
        ];
        for (at, to) in cases {
            std::os::unix::fs::symlink(to, g.join(at)).unwrap();
            assert_eq!(sweep(&g).found, vec![(g.join(at), REF_LINK)], "{at}");
            std::fs::remove_file(g.join(at)).unwrap();
        }
        // safe-git sweeps `<git dir>/refs` on its own: the folder itself a link, and a link in it.
        std::fs::rename(g.join("refs"), g.join("refs.real")).unwrap();
        std::os::unix::fs::symlink("refs.real", g.join("refs")).unwrap();
        assert_eq!(
            sweep(&g.join("refs")).found,
            vec![(g.join("refs"), REF_LINK)]
        );
        std::fs::remove_file(g.join("refs")).unwrap();
        std::fs::rename(g.join("refs.real"), g.join("refs")).unwrap();
        std::os::unix::fs::symlink(wt.join("agentref"), g.join("refs/heads/r")).unwrap();
        assert_eq!(
            sweep(&g.join("refs")).found,
            vec![(g.join("refs/heads/r"), REF_LINK)]
        );
        // A folder git descends behind a link through /proc: reported, not followed.
        std::fs::create_dir_all(g.join("logs")).unwrap();
        std::os::unix::fs::symlink("/proc/self/cwd", g.join("logs/x")).unwrap();
        assert!(sweep(&g)
            .found
            .contains(&(g.join("logs/x"), "link into /dev or /proc")));
    }

    #[test]
    fn held_descriptors_find_what_paths_found() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("g");
        let fifo = |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for d in [
            "refs/heads/a/b/c",
            "worktrees/w1/refs",
            "worktrees/w2/logs",
            "objects/ab",
            "info",
        ] {
            std::fs::create_dir_all(g.join(d)).unwrap();
        }
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("objects/ab/cd"), "x").unwrap();
        fifo(&g.join("refs/heads/a/b/c/deep"));
        fifo(&g.join("worktrees/w1/HEAD"));
        let _s1 = std::os::unix::net::UnixListener::bind(g.join("worktrees/w2/sock")).unwrap();
        let _s2 = std::os::unix::net::UnixListener::bind(g.join(FSMONITOR_SOCKET)).unwrap();
        std::os::unix::fs::symlink(g.join("worktrees/w1/HEAD"), g.join("worktrees/w2/HEAD"))
            .unwrap();
        std::os::unix::fs::symlink("/dev/zero", g.join("worktrees/w2/index")).unwrap();
        std::os::unix::fs::symlink("/dev/null", g.join("worktrees/w1/index")).unwrap();
        std::os::unix::fs::symlink("../objects", g.join("info/objs")).unwrap();
        let up = t.path().join("up");
        std::os::unix::fs::symlink(t.path(), &up).unwrap();
        let via = up.join("g");
        for d in [&g, &via] {
            let s = sweep(d);
            assert!(s.incomplete.is_none());
            assert_eq!(s.found, sweep_by_path(d));
        }
        assert_eq!(
            sweep(&via).found,
            vec![
                (via.join("refs/heads/a/b/c/deep"), "fifo"),
                (via.join("worktrees/w1/HEAD"), "fifo"),
                (via.join("worktrees/w2/HEAD"), "fifo"),
                (via.join("worktrees/w2/index"), "char device"),
                (via.join("worktrees/w2/sock"), "socket"),
            ]
        );
    }

    /// Known listings are taken for the folders they name, and a folder below a known one is
    /// opened from the swept folder's handle: with the listings as read moments before, the
    /// sweep finds what a sweep reading every folder finds. Positive controls: a known listing
    /// is what the sweep goes by (a FIFO added after it was read is not seen, one it names is
    /// reported), and a folder below a known one swapped for a link makes the sweep
    /// incomplete, never followed.
    #[test]
    fn known_listings_stand_for_the_folders_they_name() {
        use crate::fsx::Root;
        let t = tempfile::tempdir().unwrap();
        let g = t.path().canonicalize().unwrap().join("g");
        let fifo = |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for d in [
            "worktrees/w1/logs/refs/heads",
            "worktrees/w1/refs",
            "worktrees/w2",
            "objects",
        ] {
            std::fs::create_dir_all(g.join(d)).unwrap();
        }
        std::fs::write(g.join("worktrees/w1/HEAD"), "x").unwrap();
        fifo(&g.join("worktrees/w1/logs/refs/heads/f"));
        fifo(&g.join("worktrees/w2/index"));
        std::os::unix::fs::symlink("/dev/zero", g.join("worktrees/w1/refs/z")).unwrap();
        let (root, _) = Root::open_listed(&g).unwrap();
        let read = |rel: &str| root.open_dir_listed_at(Path::new(rel)).unwrap().1;
        let mut known = Known::default();
        for rel in [
            "worktrees/w1",
            "worktrees/w1/logs",
            "worktrees/w1/refs",
            "worktrees/w2",
        ] {
            known.insert(PathBuf::from(rel), read(rel));
        }
        let full = sweep(&g);
        assert_eq!(full.found.len(), 3, "{full:?}");
        let with = sweep_known(&g, &known);
        assert!(with.incomplete.is_none());
        assert_eq!(with.found, full.found);
        // The known listing is what the sweep goes by.
        fifo(&g.join("worktrees/w2/late"));
        let mut stale = known.clone();
        stale.get_mut(Path::new("worktrees/w2")).unwrap().push((
            std::ffi::OsString::from("named"),
            crate::fsx::EntryKind::Fifo,
        ));
        let found: Vec<_> = sweep_known(&g, &stale)
            .found
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert!(found.contains(&g.join("worktrees/w2/named")));
        assert!(!found.contains(&g.join("worktrees/w2/late")));
        assert!(sweep(&g)
            .found
            .iter()
            .any(|(p, _)| *p == g.join("worktrees/w2/late")));
        // A folder below a known one (`logs/refs`, not known) swapped for a link: not followed.
        let away = g.parent().unwrap().join("away");
        std::fs::rename(g.join("worktrees/w1/logs/refs"), &away).unwrap();
        std::os::unix::fs::symlink(&away, g.join("worktrees/w1/logs/refs")).unwrap();
        let s = sweep_known(&g, &known);
        assert!(s.incomplete.is_some(), "{s:?}");
        assert!(!s.found.iter().any(|(p, _)| p.ends_with("heads/f")));
    }

    /// A folder swapped after its parent was listed (the listing says folder, the name is now
    /// something else) is judged as what it is now and never entered: a link to a folder
    /// holding a FIFO is not followed (`read_dir` of the path followed it: the positive
    /// control), a link into `/dev` and a FIFO are found, a file is left.
    #[test]
    fn a_folder_swapped_after_the_listing_is_judged_as_what_it_is_now() {
        use crate::fsx::{EntryKind, Root};
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("g");
        let away = t.path().join("away");
        std::fs::create_dir_all(&g).unwrap();
        std::fs::create_dir_all(&away).unwrap();
        nix::unistd::mkfifo(&away.join("f"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink(&away, g.join("to_folder")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", g.join("to_dev")).unwrap();
        nix::unistd::mkfifo(&g.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(g.join("file"), "x").unwrap();
        // What the parent's listing said before the swap: four folders.
        let listing: crate::fsx::Listing = ["file", "fifo", "to_dev", "to_folder"]
            .iter()
            .map(|n| (std::ffi::OsString::from(n), EntryKind::Dir))
            .collect();
        let (root, _) = Root::open_listed(&g).unwrap();
        let mut out = Special::default();
        let (mut seen, mut links) = (0, 0);
        let known = Known::default();
        let mut at = Sweep {
            top: &root,
            top_path: &g,
            top_refs: false,
            known: &known,
            seen: &mut seen,
            links: &mut links,
            out: &mut out,
        };
        assert!(at
            .listed(Some(&root), Path::new(""), &g, listing, 0)
            .is_ok());
        out.found.sort();
        assert_eq!(
            out.found,
            vec![(g.join("fifo"), "fifo"), (g.join("to_dev"), "char device")]
        );
        assert!(out.incomplete.is_none());
        // Positive control: a path-based listing follows the swapped-in link.
        let followed: Vec<_> = std::fs::read_dir(g.join("to_folder"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(followed, vec![std::ffi::OsString::from("f")]);
        // The swept folder itself swapped for a link between its lstat and its open: refused.
        assert!(Root::open_listed(&g.join("to_folder"))
            .unwrap_err()
            .is_link());
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
