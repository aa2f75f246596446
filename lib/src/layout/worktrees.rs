//! Linked worktree entries (`<common>/worktrees/<id>/`) and submodule git dirs
//! (`modules/…`), checked against git's own rules.

use super::{
    absolute_against, check_git_dir_with, head_link_verdict, parse_gitfile, path_from_bytes,
    trim_crlf, until_nul, Head, LayoutError, Sys, SMALL_FILE_MAX,
};
use crate::catalogue::{
    GitVersion, RELATIVE_WORKTREES_SINCE, WORKTREE_COMMON_ONLY, WORKTREE_PRIVATE_ENTRIES,
    WORKTREE_PRIVATE_SUBPATHS,
};
use crate::fsx::{EntryKind, FileType, FsError, Root};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Deepest `modules/…/modules/…` nesting followed by [`submodule_git_dirs`].
const MAX_MODULES_DEPTH: usize = 64;

/// Reads `<admin>/gitdir` the way `get_linked_worktree` does: `None` when missing or empty;
/// trailing whitespace trimmed; a relative path resolved against the admin dir (git ≥ 2.48,
/// `strbuf_realpath_forgiving`). Returns the path of the worktree's `.git` file.
pub(crate) fn read_backlink(sys: &Sys, admin: &Path) -> Result<Option<PathBuf>, LayoutError> {
    let raw = match sys.read(&admin.join("gitdir"), SMALL_FILE_MAX) {
        Ok(b) => b,
        Err(FsError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let trimmed = rtrim(until_nul(&raw));
    if trimmed.is_empty() {
        return Ok(None);
    }
    let p = absolute_against(admin, &path_from_bytes(trimmed));
    Ok(Some(sys.resolve(&p, true)?))
}

fn rtrim(mut b: &[u8]) -> &[u8] {
    while let [rest @ .., c] = b {
        if c.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Something in a worktree entry that departs from what git writes or expects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "problem")]
pub enum Problem {
    /// `worktrees/<id>` is not a folder (git: "not a valid directory"; pruned).
    NotADirectory {
        kind: String,
    },
    /// An entry of the admin dir (or `worktrees/<id>` itself) is a symbolic link. Not followed.
    Link {
        name: String,
        target: PathBuf,
    },
    /// No `gitdir` file: git skips the entry in `worktree list` and prunes it.
    GitdirMissing,
    /// `gitdir` is empty (after trimming): git skips and prunes the entry.
    GitdirEmpty,
    /// `gitdir` could not be read (git: "unable to read gitdir file").
    GitdirUnreadable {
        error: String,
    },
    /// `gitdir` holds a relative path. git older than 2.48 reads it literally, lists the entry
    /// as prunable and `worktree prune`/auto-gc delete it.
    RelativeGitdir {
        understood_since: GitVersion,
    },
    /// The worktree's `.git` (named by `gitdir`) does not exist.
    BacklinkMissing {
        dot_git: PathBuf,
    },
    /// The worktree's `.git` is not a regular file (git's `validate_worktree` fails).
    BacklinkNotGitfile {
        dot_git: PathBuf,
        kind: String,
    },
    /// The worktree's `.git` file is not a valid gitfile.
    BacklinkInvalid {
        dot_git: PathBuf,
        reason: String,
    },
    /// The worktree's `.git` file points elsewhere than this admin dir (git: "does not point
    /// back to").
    BacklinkMismatch {
        dot_git: PathBuf,
        points_to: PathBuf,
    },
    /// No `commondir`: git would treat the admin dir as its own common dir.
    CommondirMissing,
    /// `commondir` is not `../..` as git writes it.
    CommondirUnexpected {
        content: String,
    },
    /// `commondir` resolves to another folder than the common dir holding the entry.
    CommondirElsewhere {
        resolved: PathBuf,
    },
    /// `commondir` cannot be read or resolved.
    CommondirInvalid {
        reason: String,
    },
    HeadMissing,
    HeadInvalid {
        reason: String,
    },
    /// A file or folder git does not keep per worktree. `ignored_by_git`: git resolves this
    /// name in the common dir instead (`path.c` `common_list`), so the copy here is never read;
    /// otherwise the name is unknown to git.
    UnexpectedEntry {
        name: String,
        ignored_by_git: bool,
    },
    /// Another entry names the same worktree path (git's prune keeps only one).
    DuplicateWorktreePath {
        other_id: String,
    },
    /// The worktree path lies inside the common dir.
    WorktreeInsideGitDir {
        path: PathBuf,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::NotADirectory { kind } => write!(f, "not a folder but a {kind}"),
            Problem::Link { name, target } => {
                write!(f, "{name} is a symbolic link to {} (not followed)", target.display())
            }
            Problem::GitdirMissing => f.write_str("no gitdir file (git skips and prunes the entry)"),
            Problem::GitdirEmpty => f.write_str("empty gitdir file (git skips and prunes the entry)"),
            Problem::GitdirUnreadable { error } => write!(f, "gitdir unreadable: {error}"),
            Problem::RelativeGitdir { understood_since } => write!(
                f,
                "relative gitdir: git older than {understood_since} reads it literally and prunes the entry"
            ),
            Problem::BacklinkMissing { dot_git } => {
                write!(f, "{} does not exist", dot_git.display())
            }
            Problem::BacklinkNotGitfile { dot_git, kind } => {
                write!(f, "{} is a {kind}, not a gitfile", dot_git.display())
            }
            Problem::BacklinkInvalid { dot_git, reason } => {
                write!(f, "{}: {reason}", dot_git.display())
            }
            Problem::BacklinkMismatch { dot_git, points_to } => write!(
                f,
                "{} does not point back to this entry (points to {})",
                dot_git.display(),
                points_to.display()
            ),
            Problem::CommondirMissing => f.write_str("no commondir file"),
            Problem::CommondirUnexpected { content } => {
                write!(f, "commondir is {content:?}, git writes \"../..\"")
            }
            Problem::CommondirElsewhere { resolved } => write!(
                f,
                "commondir resolves to {}, not to the common dir holding the entry",
                resolved.display()
            ),
            Problem::CommondirInvalid { reason } => write!(f, "commondir: {reason}"),
            Problem::HeadMissing => f.write_str("no HEAD"),
            Problem::HeadInvalid { reason } => write!(f, "invalid HEAD: {reason}"),
            Problem::UnexpectedEntry {
                name,
                ignored_by_git: true,
            } => write!(
                f,
                "unexpected {name} (git reads it from the common dir, not from here)"
            ),
            Problem::UnexpectedEntry {
                name,
                ignored_by_git: false,
            } => write!(f, "unexpected {name} (not a file git keeps per worktree)"),
            Problem::DuplicateWorktreePath { other_id } => {
                write!(f, "same worktree path as worktrees/{other_id}")
            }
            Problem::WorktreeInsideGitDir { path } => {
                write!(f, "worktree path {} is inside the git dir", path.display())
            }
        }
    }
}

fn lossy<S: serde::Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(b) => s.serialize_some(&String::from_utf8_lossy(b)),
        None => s.serialize_none(),
    }
}

/// One `worktrees/<id>/` entry with its raw files, the resolved worktree path, what departs
/// from git's rules, and the prune verdict git would reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorktreeEntry {
    pub id: String,
    /// `<common>/worktrees/<id>`.
    pub admin_dir: PathBuf,
    /// Raw contents (`None` when absent or not a readable regular file). Serialised as text
    /// (invalid UTF-8 replaced).
    #[serde(serialize_with = "lossy")]
    pub gitdir: Option<Vec<u8>>,
    #[serde(serialize_with = "lossy")]
    pub commondir: Option<Vec<u8>>,
    #[serde(serialize_with = "lossy")]
    pub head: Option<Vec<u8>>,
    #[serde(serialize_with = "lossy")]
    pub locked: Option<Vec<u8>>,
    pub has_config_worktree: bool,
    /// The worktree's `.git` file as named by `gitdir` (relative resolved against the admin
    /// dir, as git ≥ 2.48 does).
    pub dot_git: Option<PathBuf>,
    /// The worktree folder: `dot_git` without its `/.git` (git's `get_linked_worktree`).
    pub worktree_path: Option<PathBuf>,
    /// Names present in the admin dir, sorted.
    pub names: Vec<String>,
    pub problems: Vec<Problem>,
    /// `Some(reason)` when git's `should_prune_worktree` with expire = now would prune the
    /// entry (`git worktree prune`), with git's reason text. This is the verdict of git ≥ 2.48,
    /// which resolves a relative `gitdir` against the admin dir.
    pub prune: Option<String>,
    /// The verdict of git < 2.48, which reads a relative `gitdir` literally (relative to its
    /// own working folder, where the path practically never exists): such an entry is pruned
    /// unless locked or within the index grace period.
    pub prune_older_git: Option<String>,
    /// `worktrees/<id>` itself as the listing of `worktrees/` saw it (`lstat`).
    #[serde(skip)]
    pub admin_type: FileType,
    /// The files git reads here (`gitdir`, `commondir`, `HEAD`, `locked`,
    /// `config.worktree`) that are present, sorted, with the bytes read: for callers that
    /// need the same bytes (wt-check compares them with its baseline), each file is read
    /// once. Empty when `worktrees/<id>` is not a folder.
    #[serde(skip)]
    pub files: Vec<AdminFile>,
    /// Every name of the admin dir as listed, raw and sorted (`names` is their text).
    #[serde(skip)]
    pub listed: Vec<std::ffi::OsString>,
    /// The listings read here, each with its entries' kinds (`d_type`, an `lstat` where the
    /// file system does not tell), by path relative to the admin dir: the admin dir itself
    /// (`""`) and the folders `refs`, `logs`, `info`, `logs/refs` it holds — every one opened
    /// no-follow below the one handle on the admin dir. The common dir's sweep for FIFOs
    /// takes them instead of listing the same folders again
    /// (`crate::audit::special::sweep_known`).
    #[serde(skip)]
    pub listings: Vec<(String, crate::fsx::Listing)>,
}

/// One of the files git reads in a worktree's admin dir, as [`worktree_entries`] saw it,
/// without following links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminFile {
    pub name: std::ffi::OsString,
    /// For a file read whole ([`AdminFile::bytes`]), the `fstat` of the descriptor read (the
    /// type and mode of the very bytes held); otherwise an `lstat` taken after the listing.
    pub file_type: FileType,
    /// The whole content when it is a regular file read without error; `None` otherwise (not
    /// a regular file, or unreadable: a caller that needs the bytes reads again and meets the
    /// error itself).
    pub bytes: Option<Vec<u8>>,
}

/// The files of an admin dir read whole into [`WorktreeEntry::files`].
const ADMIN_FILES_READ: &[&str] = crate::catalogue::WORKTREE_ADMIN_FILES;

impl WorktreeEntry {
    /// Whether the worktree path lies strictly below `session_dir` (e.g.
    /// `<repo>-worktrees/<session>`). Both are compared as resolved paths; `session_dir` is
    /// resolved here (the caller's path, trusted).
    pub fn belongs_to(&self, session_dir: &Path) -> bool {
        let Some(wt) = &self.worktree_path else {
            return false;
        };
        let session =
            std::fs::canonicalize(session_dir).unwrap_or_else(|_| session_dir.to_path_buf());
        wt.starts_with(&session) && wt != &session
    }

    pub fn is_locked(&self) -> bool {
        self.locked.is_some()
    }

    /// git's prune verdict for the given git version (see [`WorktreeEntry::prune`] and
    /// [`WorktreeEntry::prune_older_git`]).
    pub fn prune_verdict(&self, git: GitVersion) -> Option<&str> {
        if git >= RELATIVE_WORKTREES_SINCE {
            self.prune.as_deref()
        } else {
            self.prune_older_git.as_deref()
        }
    }
}

/// Every `worktrees/<id>/` of `common_dir`, read without following links, each checked
/// against git's rules (see [`Problem`]) with git's prune verdict. An absent `worktrees/` is
/// an empty list; `worktrees` being a link is [`LayoutError::Link`].
pub fn worktree_entries(common_dir: &Path) -> Result<Vec<WorktreeEntry>, LayoutError> {
    worktree_entries_with(common_dir, None)
}

/// [`worktree_entries`], the listings of each entry's `logs/` and `refs/` taken from the
/// walk record `cache` when their folders' keys are recorded, and recorded there when read
/// (`crate::fsx::Root::list_kinds_recorded`): `wt-check check`, whose record is beside its
/// state file. Every other read of the entries is as in [`worktree_entries`].
pub fn worktree_entries_recorded(
    common_dir: &Path,
    cache: &mut super::walk::WalkCache,
) -> Result<Vec<WorktreeEntry>, LayoutError> {
    worktree_entries_with(common_dir, Some(cache))
}

fn worktree_entries_with(
    common_dir: &Path,
    mut cache: Option<&mut super::walk::WalkCache>,
) -> Result<Vec<WorktreeEntry>, LayoutError> {
    let sys = Sys::new()?;
    let common = sys.resolve(common_dir, false)?;
    let wt_dir = common.join("worktrees");
    match sys.stat(&wt_dir)? {
        None => return Ok(Vec::new()),
        Some(st) if st.is_symlink() => return Err(LayoutError::Link { path: wt_dir }),
        Some(st) if !st.is_dir() => {
            return Err(LayoutError::Unreadable {
                path: wt_dir.clone(),
                source: FsError::NotDir { path: wt_dir },
            })
        }
        Some(_) => {}
    }
    let now = SystemTime::now();
    let mut out = Vec::new();
    for e in sys.list(&wt_dir)? {
        out.push(read_entry(
            &sys,
            &common,
            &wt_dir,
            &e.name,
            &e.stat.file_type,
            now,
            cache.as_deref_mut(),
        )?);
    }
    // Duplicates: git's prune keeps one entry per worktree path.
    // Ids by worktree path, in listing order (one lookup per entry, not a pass over all).
    let mut by_path: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for e in &out {
        if let Some(p) = &e.worktree_path {
            by_path.entry(p.clone()).or_default().push(e.id.clone());
        }
    }
    for e in &mut out {
        let Some(p) = &e.worktree_path else { continue };
        for other in by_path.get(p).into_iter().flatten() {
            if other != &e.id {
                e.problems.push(Problem::DuplicateWorktreePath {
                    other_id: other.clone(),
                });
            }
        }
        if p.starts_with(&common) {
            e.problems
                .push(Problem::WorktreeInsideGitDir { path: p.clone() });
        }
    }
    Ok(out)
}

fn read_entry(
    sys: &Sys,
    common: &Path,
    wt_dir: &Path,
    name: &OsStr,
    ft: &FileType,
    now: SystemTime,
    cache: Option<&mut super::walk::WalkCache>,
) -> Result<WorktreeEntry, LayoutError> {
    let id = name.to_string_lossy().into_owned();
    let admin = wt_dir.join(name);
    let mut entry = WorktreeEntry {
        id: id.clone(),
        admin_dir: admin.clone(),
        gitdir: None,
        commondir: None,
        head: None,
        locked: None,
        has_config_worktree: false,
        dot_git: None,
        worktree_path: None,
        names: Vec::new(),
        problems: Vec::new(),
        prune: None,
        prune_older_git: None,
        admin_type: ft.clone(),
        files: Vec::new(),
        listed: Vec::new(),
        listings: Vec::new(),
    };
    match ft {
        FileType::Dir { .. } => {}
        FileType::Symlink { target } => {
            entry.problems.push(Problem::Link {
                name: format!("worktrees/{id}"),
                target: target.clone(),
            });
            return Ok(entry);
        }
        other => {
            entry.problems.push(Problem::NotADirectory {
                kind: other.name().into(),
            });
            entry.prune = Some("not a valid directory".into());
            entry.prune_older_git = entry.prune.clone();
            return Ok(entry);
        }
    }
    // One handle on the admin dir (opened no-follow); its listing's types (`d_type`) say
    // what each name is, and every file is read relative to the handle, once (see
    // `AdminReads`).
    let (admin_dir, listing) = sys.dir_listed(&admin)?;
    let mut read = AdminReads {
        dir: &admin_dir,
        listing: &listing,
        files: Vec::new(),
    };
    entry.names = listing
        .iter()
        .map(|(n, _)| n.to_string_lossy().into_owned())
        .collect();
    for (n, k) in &listing {
        if *k == EntryKind::Symlink {
            entry.problems.push(Problem::Link {
                name: n.to_string_lossy().into_owned(),
                target: admin_dir.read_link(n).unwrap_or_default(),
            });
        }
    }
    check_unexpected(
        &admin_dir,
        &listing,
        &mut entry.problems,
        &mut entry.listings,
        cache,
    )?;
    entry.listings.push((String::new(), listing.clone()));
    entry.has_config_worktree = listing.iter().any(|(n, _)| n == "config.worktree");
    let locked_present = listing.iter().any(|(n, _)| n == "locked");

    // gitdir
    let gitdir_entry = listing.iter().find(|(n, _)| n == "gitdir");
    let gitdir_raw = match read.read("gitdir", SMALL_FILE_MAX) {
        Ok(b) => b,
        Err(FsError::Link { .. }) => None, // reported above as Problem::Link
        Err(e) => {
            entry.problems.push(Problem::GitdirUnreadable {
                error: e.to_string(),
            });
            None
        }
    };
    let mut prune: Option<String> = None;
    // The path `gitdir` names, resolved, with its lstat (for the backlink check below).
    let mut named_seen: Option<(PathBuf, Result<Option<crate::fsx::Stat>, LayoutError>)> = None;
    match &gitdir_raw {
        None => match gitdir_entry.map(|(_, k)| k) {
            None => {
                entry.problems.push(Problem::GitdirMissing);
                prune = Some("gitdir file does not exist".into());
            }
            // should_prune_worktree: open succeeds on a folder, read fails with EISDIR.
            Some(EntryKind::Dir) => {
                prune = Some("unable to read gitdir file (Is a directory)".into());
            }
            Some(_) => prune = Some("unable to read gitdir file".into()),
        },
        Some(raw) => {
            // should_prune_worktree's view: trailing CR/LF stripped, the path must exist.
            let crlf = until_nul(trim_crlf(raw));
            if crlf.is_empty() {
                entry.problems.push(Problem::GitdirEmpty);
                prune = Some("invalid gitdir file".into());
            } else {
                let p = path_from_bytes(crlf);
                if p.is_relative() {
                    entry.problems.push(Problem::RelativeGitdir {
                        understood_since: RELATIVE_WORKTREES_SINCE,
                    });
                }
                let exists = match sys.resolve_last(&absolute_against(&admin, &p), true) {
                    Ok((named, last)) => {
                        // The resolution's own lstat of the last component, else one now.
                        let st = match last {
                            Some(st) => Ok(st),
                            None => sys.stat(&named),
                        };
                        let exists = st.as_ref().map(|st| st.is_some()).unwrap_or(true);
                        named_seen = Some((named, st));
                        exists
                    }
                    // A link on the way: git would follow it; we do not know, so we do not
                    // claim a prune.
                    Err(_) => true,
                };
                if !exists && !index_newer_than(sys, &admin, now)? {
                    prune = Some("gitdir file points to non-existent location".into());
                }
            }
            // get_linked_worktree's view: all trailing whitespace trimmed, `/.git` stripped;
            // an empty result means the entry is not listed.
            let t = rtrim(until_nul(raw));
            let t = t.strip_suffix(b"/.git").unwrap_or(t);
            if t.is_empty() {
                if !crlf.is_empty() {
                    entry.problems.push(Problem::GitdirEmpty);
                }
            } else {
                // When `gitdir` holds `<t>/.git` (as git writes it), `<t>` was resolved above
                // on the way to `.git`: resolving `<t>/.git` walks the very components of
                // `<t>` first, so its parent is `<t>` resolved (resolve of `<t>/.git` fails
                // when `<t>` ends in a non-folder; then `<t>` is resolved on its own).
                let derived = named_seen.as_ref().and_then(|(named, _)| {
                    let same = crlf.len() == t.len() + 5
                        && crlf.starts_with(t)
                        && crlf.ends_with(b"/.git");
                    (same && named.file_name() == Some(OsStr::new(".git")))
                        .then(|| named.parent().map(Path::to_path_buf))
                        .flatten()
                });
                let resolved = match derived {
                    Some(wt) => Ok(wt),
                    None => sys.resolve(&absolute_against(&admin, &path_from_bytes(t)), true),
                };
                match resolved {
                    Ok(wt) => {
                        entry.dot_git = Some(wt.join(".git"));
                        entry.worktree_path = Some(wt);
                    }
                    Err(LayoutError::Link { path }) => entry.problems.push(Problem::Link {
                        name: "gitdir (a folder on the path it names)".into(),
                        target: path,
                    }),
                    Err(e) => entry.problems.push(Problem::GitdirUnreadable {
                        error: e.to_string(),
                    }),
                }
            }
        }
    }
    entry.gitdir = gitdir_raw;

    // The backlink: <wt>/.git must be a gitfile whose target is this admin dir
    // (validate_worktree).
    if let Some(dot_git) = entry.dot_git.clone() {
        let st = match named_seen {
            Some((named, Ok(st))) if named == dot_git => Ok(st),
            _ => sys.stat(&dot_git),
        };
        match st {
            Ok(None) => entry.problems.push(Problem::BacklinkMissing {
                dot_git: dot_git.clone(),
            }),
            Ok(Some(st)) => match st.file_type {
                FileType::File { .. } => {
                    check_backlink(sys, &admin, &dot_git, &mut entry.problems)?
                }
                FileType::Symlink { target } => entry.problems.push(Problem::Link {
                    name: dot_git.display().to_string(),
                    target,
                }),
                other => entry.problems.push(Problem::BacklinkNotGitfile {
                    dot_git: dot_git.clone(),
                    kind: other.name().into(),
                }),
            },
            Err(LayoutError::Link { path }) => entry.problems.push(Problem::Link {
                name: "a folder above the worktree's .git".into(),
                target: path,
            }),
            Err(e) => return Err(e),
        }
    }

    // commondir
    match read.read("commondir", SMALL_FILE_MAX) {
        Ok(None) => {
            if !listing.iter().any(|(n, _)| n == "commondir") {
                entry.problems.push(Problem::CommondirMissing);
            }
        }
        Ok(Some(raw)) => {
            let content = trim_crlf(&raw);
            if content != b"../.." {
                entry.problems.push(Problem::CommondirUnexpected {
                    content: String::from_utf8_lossy(content).into_owned(),
                });
            }
            if content.is_empty() {
                entry.problems.push(Problem::CommondirInvalid {
                    reason: "empty (git dies: failed to read)".into(),
                });
            } else {
                let target = absolute_against(&admin, &path_from_bytes(until_nul(content)));
                match sys.resolve(&target, false) {
                    Ok(resolved) if resolved == common => {}
                    Ok(resolved) => entry
                        .problems
                        .push(Problem::CommondirElsewhere { resolved }),
                    Err(e) => entry.problems.push(Problem::CommondirInvalid {
                        reason: e.to_string(),
                    }),
                }
            }
            entry.commondir = Some(raw);
        }
        Err(FsError::Link { .. }) => {}
        Err(e) => entry.problems.push(Problem::CommondirInvalid {
            reason: e.to_string(),
        }),
    }

    // HEAD
    // As `read_head` (git's validate_headref), from the listing's type and one whole read:
    // only the first HEAD_READ_MAX bytes are looked at, so a HEAD too large to hold whole is
    // still judged by its start.
    let head_type = listing.iter().find(|(n, _)| n == "HEAD").map(|(_, k)| *k);
    let head_verdict = match head_type {
        None => Err("no HEAD".to_string()),
        Some(EntryKind::Symlink) => match admin_dir.read_link("HEAD") {
            Ok(target) => head_link_verdict(&target),
            Err(FsError::NotFound { .. }) => Err("no HEAD".to_string()),
            Err(e) => return Err(e.into()),
        },
        Some(EntryKind::File) => match read.read("HEAD", SMALL_FILE_MAX) {
            Ok(Some(bytes)) => {
                let v = head_bytes_verdict(&bytes);
                entry.head = Some(bytes);
                v
            }
            Ok(None) => Err("no HEAD".to_string()),
            Err(FsError::TooLarge { .. }) => {
                match admin_dir.read_prefix("HEAD", super::HEAD_READ_MAX) {
                    Ok(bytes) => head_bytes_verdict(&bytes),
                    Err(FsError::NotFound { .. }) => Err("no HEAD".to_string()),
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        },
        Some(other) => Err(format!("HEAD is a {}", other.name())),
    };
    match head_verdict {
        Ok(_) => {}
        Err(reason) if reason == "no HEAD" => entry.problems.push(Problem::HeadMissing),
        Err(reason) => entry.problems.push(Problem::HeadInvalid { reason }),
    }
    entry.locked = match read.read("locked", SMALL_FILE_MAX) {
        Ok(b) => b,
        // A locked entry that is not a readable file still blocks prune in git
        // (file_exists); keep that verdict.
        Err(_) if locked_present => Some(Vec::new()),
        Err(_) => None,
    };
    let relative = entry
        .problems
        .iter()
        .any(|p| matches!(p, Problem::RelativeGitdir { .. }));
    entry.prune_older_git = if locked_present {
        None
    } else if relative && prune.is_none() && !index_newer_than(sys, &admin, now)? {
        Some("gitdir file points to non-existent location".into())
    } else {
        prune.clone()
    };
    entry.prune = if locked_present { None } else { prune };
    // config.worktree is read only for callers that compare it (wt-check); an error here is
    // theirs to meet when they read it themselves.
    let _ = read.read("config.worktree", SMALL_FILE_MAX);
    entry.files = read.into_files()?;
    entry.listed = listing.into_iter().map(|(n, _)| n).collect();
    Ok(entry)
}

/// The admin dir's listing with the files read so far (see [`AdminFile`]).
struct AdminReads<'a> {
    dir: &'a Root,
    listing: &'a [(std::ffi::OsString, EntryKind)],
    files: Vec<AdminFile>,
}

impl AdminReads<'_> {
    /// The files read, plus an `lstat` of each other name of [`ADMIN_FILES_READ`] present
    /// (not a regular file, or unreadable), sorted by name.
    fn into_files(mut self) -> Result<Vec<AdminFile>, FsError> {
        for (name, _) in self.listing {
            let wanted = ADMIN_FILES_READ.iter().any(|f| name == f);
            if !wanted || self.files.iter().any(|f| &f.name == name) {
                continue;
            }
            if let Some(st) = self.dir.stat(name)? {
                self.files.push(AdminFile {
                    name: name.clone(),
                    file_type: st.file_type,
                    bytes: None,
                });
            }
        }
        self.files
            .sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(self.files)
    }

    /// Read `name` as `Root::read` would (`Ok(None)` when missing): a name not listed is
    /// missing; from the listing's type, a link is [`FsError::Link`] and anything but a
    /// regular file [`FsError::NotRegular`], without opening it; a regular file is read
    /// through `Root::read_child_regular` (opened no-follow and non-blocking, its type
    /// checked on the descriptor before any read). A file read is kept with its bytes.
    fn read(&mut self, name: &str, max: u64) -> Result<Option<Vec<u8>>, FsError> {
        let Some((_, kind)) = self.listing.iter().find(|(n, _)| n == name) else {
            return Ok(None);
        };
        let full = self.dir.path().join(name);
        match kind {
            EntryKind::File => {}
            EntryKind::Symlink => return Err(FsError::Link { path: full }),
            other => {
                return Err(FsError::NotRegular {
                    path: full,
                    kind: other.name(),
                })
            }
        }
        match self.dir.read_child_regular(OsStr::new(name), max) {
            Ok((bytes, mode)) => {
                self.files.push(AdminFile {
                    name: name.into(),
                    file_type: FileType::File {
                        mode,
                        size: bytes.len() as u64,
                    },
                    bytes: Some(bytes.clone()),
                });
                Ok(Some(bytes))
            }
            Err(FsError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// git's `validate_headref` verdict on HEAD's first bytes.
fn head_bytes_verdict(bytes: &[u8]) -> Result<super::Head, String> {
    super::validate_head(bytes)
        .ok_or_else(|| "HEAD is neither `ref: refs/…` nor a full hex object id".to_string())
}

/// git's grace rule in `should_prune_worktree`: an entry whose worktree is missing is kept
/// while `worktrees/<id>/index` is newer than `expire` (here: now).
fn index_newer_than(sys: &Sys, admin: &Path, expire: SystemTime) -> Result<bool, LayoutError> {
    match sys.stat(&admin.join("index"))? {
        Some(st) if !st.is_symlink() => Ok(st.mtime > expire),
        _ => Ok(false),
    }
}

fn check_backlink(
    sys: &Sys,
    admin: &Path,
    dot_git: &Path,
    problems: &mut Vec<Problem>,
) -> Result<(), LayoutError> {
    // The caller has just lstat'ed `dot_git` as a regular file: read it without a second
    // lstat (opened no-follow and non-blocking, type checked on the descriptor).
    let read = sys.split(dot_git).and_then(|(dir, name)| {
        dir.read_child_regular(name, super::GITFILE_MAX)
            .map(|(b, _)| b)
    });
    let raw = match read {
        Ok(b) => b,
        Err(e) => {
            problems.push(Problem::BacklinkInvalid {
                dot_git: dot_git.to_path_buf(),
                reason: e.to_string(),
            });
            return Ok(());
        }
    };
    let raw_target = match parse_gitfile(dot_git, &raw) {
        Ok(t) => t,
        Err(e) => {
            problems.push(Problem::BacklinkInvalid {
                dot_git: dot_git.to_path_buf(),
                reason: e.to_string(),
            });
            return Ok(());
        }
    };
    let folder = dot_git.parent().unwrap_or(Path::new("/"));
    match sys.resolve(&absolute_against(folder, &raw_target), true) {
        Ok(t) if t == admin => {}
        Ok(t) => problems.push(Problem::BacklinkMismatch {
            dot_git: dot_git.to_path_buf(),
            points_to: t,
        }),
        Err(LayoutError::Link { path }) => problems.push(Problem::Link {
            name: format!("a folder on the path {} names", dot_git.display()),
            target: path,
        }),
        Err(e) => problems.push(Problem::BacklinkInvalid {
            dot_git: dot_git.to_path_buf(),
            reason: e.to_string(),
        }),
    }
    Ok(())
}

fn is_private_name(name: &str) -> bool {
    let stem = name.strip_suffix(".lock").unwrap_or(name);
    WORKTREE_PRIVATE_ENTRIES.contains(&stem) || stem.starts_with("sharedindex.")
}

/// Reports names git does not keep per worktree, including below `refs/`, `logs/` and
/// `info/`, where only a few subpaths are per worktree.
fn check_unexpected(
    admin: &Root,
    listing: &[(std::ffi::OsString, EntryKind)],
    problems: &mut Vec<Problem>,
    listings: &mut Vec<(String, crate::fsx::Listing)>,
    mut cache: Option<&mut super::walk::WalkCache>,
) -> Result<(), LayoutError> {
    for (n, kind) in listing {
        let name = n.to_string_lossy().into_owned();
        if !is_private_name(&name) {
            problems.push(Problem::UnexpectedEntry {
                ignored_by_git: WORKTREE_COMMON_ONLY.contains(&name.as_str()),
                name,
            });
            continue;
        }
        if matches!(name.as_str(), "refs" | "logs" | "info") && *kind == EntryKind::Dir {
            check_container(admin, &name, problems, listings, cache.as_deref_mut())?;
        }
    }
    Ok(())
}

/// Names below the admin dir's folder `rel`, from the folder listing (opened no-follow; a
/// folder swapped for a link is an error, never followed); the listing kept in `listings`.
fn check_container(
    admin: &Root,
    rel: &str,
    problems: &mut Vec<Problem>,
    listings: &mut Vec<(String, crate::fsx::Listing)>,
    mut cache: Option<&mut super::walk::WalkCache>,
) -> Result<(), LayoutError> {
    // One name below the admin dir (`logs`, `refs`, `info`): from the walk record when its
    // key is recorded. `logs/refs` is read: its `lstat` by path would cross `logs`, which
    // could be swapped for a link meanwhile.
    let kinds = match cache.as_deref_mut() {
        Some(c) if !rel.contains('/') => admin.list_kinds_recorded(OsStr::new(rel), c)?,
        _ => admin.list_kinds(rel)?,
    };
    for (child, kind) in kinds.iter().cloned() {
        let sub = format!("{rel}/{}", child.to_string_lossy());
        let stem = sub.strip_suffix(".lock").unwrap_or(&sub);
        if !WORKTREE_PRIVATE_SUBPATHS.contains(&stem) {
            problems.push(Problem::UnexpectedEntry {
                name: sub,
                ignored_by_git: true,
            });
        } else if sub == "logs/refs" && kind == EntryKind::Dir {
            check_container(admin, &sub, problems, listings, cache.as_deref_mut())?;
        }
    }
    listings.push((rel.to_owned(), kinds));
    Ok(())
}

/// What a folder below `modules/` is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum ModuleStatus {
    /// A git dir (passes the git-dir test).
    GitDir { head: Head },
    /// A symbolic link (not followed).
    Link { target: PathBuf },
    /// Something git would refuse to use as a git dir: an empty folder left by `submodule
    /// deinit`, or a broken one. `reason` is the git-dir test's.
    NotGitDir { reason: String },
}

/// A folder below a `modules/` folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubmoduleGitDir {
    /// The submodule name: the path below the nearest `modules/` (may contain `/`).
    pub name: String,
    pub git_dir: PathBuf,
    /// The git dir whose `modules/` holds it (the superproject's, a linked worktree's admin
    /// dir, or an outer submodule's for nested submodules).
    pub superproject_git_dir: PathBuf,
    pub status: ModuleStatus,
}

/// Every git dir under `modules/` at any depth (`modules/a/modules/b`), of the common dir and
/// of each linked worktree's admin dir (git keeps a linked worktree's submodules in
/// `worktrees/<id>/modules/`), without following links. Folders with a `/` in the name
/// (`modules/lib/x`) are searched: a folder that is not a git dir is descended into; leaf
/// folders that are not git dirs are reported as [`ModuleStatus::NotGitDir`].
pub fn submodule_git_dirs(common_dir: &Path) -> Result<Vec<SubmoduleGitDir>, LayoutError> {
    let sys = Sys::new()?;
    let common = sys.resolve(common_dir, false)?;
    let mut out = Vec::new();
    modules_of(&sys, &common, &mut out, 0)?;
    let wt_dir = common.join("worktrees");
    if let Some(st) = sys.stat(&wt_dir)? {
        if st.is_dir() {
            for e in sys.list(&wt_dir)? {
                if e.stat.is_dir() {
                    modules_of(&sys, &wt_dir.join(&e.name), &mut out, 0)?;
                }
            }
        }
    }
    Ok(out)
}

fn modules_of(
    sys: &Sys,
    git_dir: &Path,
    out: &mut Vec<SubmoduleGitDir>,
    depth: usize,
) -> Result<(), LayoutError> {
    let modules = git_dir.join("modules");
    match sys.stat(&modules)? {
        None => Ok(()),
        Some(st) if st.is_symlink() => {
            out.push(SubmoduleGitDir {
                name: String::new(),
                git_dir: modules.clone(),
                superproject_git_dir: git_dir.to_path_buf(),
                status: ModuleStatus::Link {
                    target: match st.file_type {
                        FileType::Symlink { target } => target,
                        _ => PathBuf::new(),
                    },
                },
            });
            Ok(())
        }
        Some(st) if st.is_dir() => walk_modules(sys, git_dir, &modules, &modules, out, depth),
        Some(_) => Ok(()),
    }
}

fn walk_modules(
    sys: &Sys,
    super_git_dir: &Path,
    modules: &Path,
    folder: &Path,
    out: &mut Vec<SubmoduleGitDir>,
    depth: usize,
) -> Result<(), LayoutError> {
    if depth > MAX_MODULES_DEPTH {
        return Err(LayoutError::Unreadable {
            path: folder.to_path_buf(),
            source: FsError::Io {
                path: folder.to_path_buf(),
                op: "walk modules/ (nested too deep)",
                source: std::io::Error::from_raw_os_error(nix::libc::ELOOP),
            },
        });
    }
    for e in sys.list(folder)? {
        let path = folder.join(&e.name);
        let name = path
            .strip_prefix(modules)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &e.stat.file_type {
            FileType::Symlink { target } => out.push(SubmoduleGitDir {
                name,
                git_dir: path.clone(),
                superproject_git_dir: super_git_dir.to_path_buf(),
                status: ModuleStatus::Link {
                    target: target.clone(),
                },
            }),
            FileType::Dir { .. } => match check_git_dir_with(sys, &path) {
                Ok(info) => {
                    out.push(SubmoduleGitDir {
                        name,
                        git_dir: path.clone(),
                        superproject_git_dir: super_git_dir.to_path_buf(),
                        status: ModuleStatus::GitDir { head: info.head },
                    });
                    modules_of(sys, &path, out, depth + 1)?;
                }
                Err(LayoutError::NotAGitDir { reason, .. }) => {
                    let has_subfolders = sys
                        .list(&path)?
                        .iter()
                        .any(|c| c.stat.is_dir() || c.stat.is_symlink());
                    let has_head = sys.stat(&path.join("HEAD"))?.is_some();
                    if has_subfolders && !has_head {
                        walk_modules(sys, super_git_dir, modules, &path, out, depth + 1)?;
                    } else {
                        out.push(SubmoduleGitDir {
                            name,
                            git_dir: path.clone(),
                            superproject_git_dir: super_git_dir.to_path_buf(),
                            status: ModuleStatus::NotGitDir { reason },
                        });
                    }
                }
                Err(LayoutError::Link { path: link }) => out.push(SubmoduleGitDir {
                    name,
                    git_dir: path.clone(),
                    superproject_git_dir: super_git_dir.to_path_buf(),
                    status: ModuleStatus::Link { target: link },
                }),
                Err(e) => return Err(e),
            },
            _ => {}
        }
    }
    Ok(())
}
