//! Index entries whose stat data hides a work-tree file's content from git.
//!
//! git decides that a tracked file is unchanged when the stat data its index entry holds
//! (`mtime`, `ctime`, inode, size, uid, gid) equals the file's, and then never reads the
//! file: `status` and `diff` show nothing, `reset --hard` and `checkout -- f` leave it as it
//! is. The agent can write the index (it must, to commit). It writes its content into a
//! tracked file, stages it, and patches the entry's object id back to the owner's blob (and
//! the index checksum): the owner's git then reports a clean work tree over the agent's
//! content, the review (`git diff`) shows nothing, and the owner's next build or test runs it
//! (sixteenth red-team pass, R16-12; both gits).
//!
//! [`scan`] reads each index the session could write (the main work tree's, the session's
//! worktrees'; as `hops` does) whose file was written since the pin, and `lstat`s the file
//! of every entry of a regular file or link. Every file git may take as unchanged — its
//! `mtime` seconds and size match the entry's, the fields git compares whatever
//! `core.trustctime` and `core.checkStat` say (the agent sets the rest of an entry to
//! anything), and git built without `USE_NSEC` compares no nanoseconds (R18-2) — and every
//! file whose entry carries `skip-worktree` or `assume-unchanged` (git does not look at it
//! at all: R18-1) is read and hashed: a blob id other than the entry's is a finding. No
//! shortcut by `ctime`: a file moved into place with its folder keeps its old `ctime`
//! (R18-4), and a file already changed before the pin is hidden by an entry written after
//! it. The cost is one hash of the tracked files at the first check after a turn that wrote
//! the index (git's own `status` after a checkout does the same); an index not written since
//! the pin is not read. The index's cache-tree (`TREE` extension), from which the owner's
//! next `commit`, `merge` or `cherry-pick` builds its trees, is recomputed from the entries
//! and every valid cached tree id compared (R18-3: a cached tree naming the agent's subtree
//! put its files into the owner's next commit while `status` and both diffs were clean). A regular file that hashes differently
//! only because git converts line endings on `add` (`text`, `eol`, `core.autocrlf`) is
//! accepted when its CRLF → LF form hashes to the entry; a work tree whose attributes name a
//! filter (`filter=`, `ident`, `working-tree-encoding`: git LFS, for one) cannot be verified
//! without running it, so a mismatch there is a warning, elsewhere an error. An index older
//! than the pin holds no entry written since and is not read — unless the owner's config
//! relaxes git's stat check to `mtime` and size ([`owner_relaxes_stat_check`], recorded by
//! the pin): then a file rewritten in place with its `mtime` put back hides without any index
//! written, and the tracked files changed since the pin are hashed (R20-3).
//!
//! With `--restore`, the file's `mtime` is set to now: git's stat check then fails, git reads
//! the file and shows the agent's content as a change. Nothing is written to the index or
//! the file's content.

use crate::events::{Event, EventKind};
use nix::sys::stat::FileStat;
use serde::{Deserialize, Serialize};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most entries whose file is read and hashed in one check; past it the check is
/// incomplete.
pub const MAX_HASHED: usize = 200_000;
/// Largest file hashed.
pub const MAX_FILE: u64 = 1 << 30;

/// One entry whose stat data matches a file whose content is not the entry's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The work-tree file.
    pub path: PathBuf,
    /// The index it is in.
    pub index: PathBuf,
    /// The entry's object id (what git believes the file holds).
    pub entry_id: String,
    /// The file's blob id.
    pub file_id: String,
    /// A filter may apply (the work tree's attributes name one): not verifiable.
    pub filtered: bool,
    /// The entry carries `skip-worktree` or `assume-unchanged`: git does not look at the
    /// file whatever its stamps (setting its `mtime` undoes nothing; the owner clears the bit
    /// with `git update-index --no-skip-worktree` / `--no-assume-unchanged`).
    pub flagged: bool,
}

/// A cached tree of an index's `TREE` extension that is not the tree its entries make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgedTree {
    pub index: PathBuf,
    /// The folder (relative to the work tree's top; empty for the top).
    pub dir: String,
    /// The cached tree id.
    pub cached: String,
    /// The tree the entries make (`None` when the cached count of entries does not match).
    pub computed: Option<String>,
}

/// What [`scan`] found.
#[derive(Debug, Default)]
pub struct Found {
    pub hidden: Vec<Hidden>,
    pub trees: Vec<ForgedTree>,
    /// Indexes written since the pin that carry an untracked cache (`UNTR`).
    pub untracked_cache: Vec<PathBuf>,
    pub incomplete: Option<(PathBuf, String)>,
}

use super::state::blob_id;

/// Whether git may take the file `m` as unchanged from an entry with stat data `s`: the
/// fields `read-cache.c`'s `match_stat_data` compares under every setting (`mtime` seconds,
/// its nanoseconds when the entry holds them, the size; truncated to 32 bits as the index
/// stores them). With the defaults git also compares `ctime`, inode, uid and gid: a superset
/// of the entries git skips, so more files are hashed, none missed.
fn git_may_take_as_unchanged(mtime_secs: u32, size: u32, f: &FileStat) -> bool {
    // Seconds only: git compares nanoseconds only when built with `USE_NSEC`, which neither
    // git here is (an entry whose nanoseconds differ was taken as unchanged: R18-2).
    u64::from(mtime_secs) == (f.st_mtime as u64 & 0xffff_ffff)
        && u64::from(size) == (f.st_size as u64 & 0xffff_ffff)
}

/// Whether the pin can vouch for an entry: the file's stat data is the entry's in every field
/// git's default stat check compares (`ctime` and `mtime` seconds, their nanoseconds where the
/// entry holds them, inode, uid, gid, size), and the file's `ctime` is older than the pin's
/// start by the racy margin. A later write then moves the file's `ctime` past the entry's, so
/// under the default check git reads the file again: no later content can hide behind the
/// entry. Any other entry — its file missing, stale, racy, or the entry flagged — is watched.
fn vouched(s: &gix::index::entry::Stat, f: &FileStat, started_ns: i128) -> bool {
    let ns_ok = |entry: u32, file: i64| entry == 0 || i64::from(entry) == file;
    s.ctime.secs == f.st_ctime as u32
        && s.mtime.secs == f.st_mtime as u32
        && ns_ok(s.ctime.nsecs, f.st_ctime_nsec)
        && ns_ok(s.mtime.nsecs, f.st_mtime_nsec)
        && s.ino == f.st_ino as u32
        && s.uid == f.st_uid
        && s.gid == f.st_gid
        && s.size == f.st_size as u32
        && i128::from(f.st_ctime) * 1_000_000_000 + i128::from(f.st_ctime_nsec)
            < started_ns - crate::layout::walk_cache::RACY_MARGIN_NS
}

/// A work tree opened once (`O_PATH`, links in its own path followed as git follows them):
/// every tracked file is reached relative to it, as git reaches it relative to its working
/// directory — a path longer than `PATH_MAX` once made absolute still resolves (R22-3), and
/// any error but "not there" is an error, never a file passed over.
struct Top {
    fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

impl Top {
    fn open(path: &Path) -> Result<Option<Top>, String> {
        use nix::fcntl::OFlag;
        match nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        ) {
            Ok(fd) => Ok(Some(Top {
                fd,
                path: path.to_path_buf(),
            })),
            Err(nix::errno::Errno::ENOENT) | Err(nix::errno::Errno::ENOTDIR) => Ok(None),
            Err(e) => Err(format!(
                "{}: cannot open the work tree: {e}",
                path.display()
            )),
        }
    }

    /// `lstat` of `rel`; `None` when it is not there (git shows it deleted).
    fn lstat(&self, rel: &[u8]) -> Result<Option<FileStat>, String> {
        match nix::sys::stat::fstatat(
            &self.fd,
            std::ffi::OsStr::from_bytes(rel),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => Ok(Some(st)),
            Err(nix::errno::Errno::ENOENT) | Err(nix::errno::Errno::ENOTDIR) => Ok(None),
            Err(e) => Err(format!("{}: lstat: {e}", self.full(rel).display())),
        }
    }

    fn full(&self, rel: &[u8]) -> PathBuf {
        self.path.join(std::ffi::OsStr::from_bytes(rel))
    }

    /// What git hashes for `rel`, whose `lstat` gave `st`: a link's target or a regular
    /// file's bytes (opened without following a link, non-blocking, at most [`MAX_FILE`]);
    /// `None` for anything else (git sees the change of type itself).
    fn content(&self, rel: &[u8], st: &FileStat) -> Result<Option<Vec<u8>>, String> {
        use nix::sys::stat::SFlag;
        let kind = st.st_mode & SFlag::S_IFMT.bits();
        let name = std::ffi::OsStr::from_bytes(rel);
        if kind == SFlag::S_IFLNK.bits() {
            return nix::fcntl::readlinkat(&self.fd, name)
                .map(|t| Some(t.into_encoded_bytes()))
                .map_err(|e| format!("{}: readlink: {e}", self.full(rel).display()));
        }
        if kind != SFlag::S_IFREG.bits() {
            return Ok(None);
        }
        if st.st_size as u64 > MAX_FILE {
            return Err(format!(
                "{}: larger than {MAX_FILE} bytes: not hashed",
                self.full(rel).display()
            ));
        }
        use nix::fcntl::OFlag;
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| format!("{}: open: {e}", self.full(rel).display()))?;
        let f = std::fs::File::from(fd);
        let md = f
            .metadata()
            .map_err(|e| format!("{}: fstat: {e}", self.full(rel).display()))?;
        if !md.is_file() {
            return Ok(None);
        }
        use std::io::Read;
        let mut b = Vec::with_capacity(usize::try_from(md.len()).unwrap_or(0).saturating_add(1));
        f.take(MAX_FILE + 1)
            .read_to_end(&mut b)
            .map_err(|e| format!("{}: read: {e}", self.full(rel).display()))?;
        Ok(Some(b))
    }
}

/// Whether any attributes file of the work tree `top` or the git dir names a filter git
/// would run on `add` (a superset: the pattern is not evaluated).
fn filters_named(top: &Path, index: &gix::index::File, git_dir_info: &Path) -> bool {
    attributes_mention(
        top,
        index,
        git_dir_info,
        crate::catalogue::ATTRIBUTES_THAT_FILTER,
    )
}

/// Whether git may turn CRLF into LF when it adds a file of the work tree `top`: an
/// attributes file names `text`, `eol` or `crlf` (a superset: patterns not evaluated), or a
/// config file git reads for it names `autocrlf` or `eol` (the repository's, the worktree's,
/// the global ones). Elsewhere a CRLF file must hash as it is (R19-2: a `\r` after a `#!`
/// line accepted as git's conversion made the script run another program).
fn crlf_converted(top: &Path, index: &gix::index::File, git_dir: &Path, common: &Path) -> bool {
    if attributes_mention(
        top,
        index,
        &common.join("info"),
        crate::catalogue::ATTRIBUTES_THAT_CONVERT_EOL,
    ) {
        return true;
    }
    let mut configs = vec![
        common.join("config"),
        git_dir.join("config.worktree"),
        common.join("config.worktree"),
    ];
    if let Some(h) = std::env::var_os("HOME") {
        configs.push(Path::new(&h).join(".gitconfig"));
        configs.push(Path::new(&h).join(".config/git/config"));
    }
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME") {
        configs.push(Path::new(&x).join("git/config"));
    }
    if let Some(g) = std::env::var_os("GIT_CONFIG_GLOBAL") {
        configs.push(PathBuf::from(g));
    }
    configs.extend(crate::named_paths::SYSTEM_CONFIGS.iter().map(PathBuf::from));
    configs.iter().any(|p| {
        crate::audit::special::read_regular(p, 1 << 20).is_ok_and(|b| {
            let l = b.to_ascii_lowercase();
            crate::catalogue::CONFIG_KEYS_THAT_CONVERT_EOL
                .iter()
                .any(|k| l.windows(k.len()).any(|w| w == *k))
        })
    })
}

/// Whether an attributes file of `top` (any `.gitattributes` the index lists) or
/// `info/attributes` names one of `words`.
fn attributes_mention(
    top: &Path,
    index: &gix::index::File,
    git_dir_info: &Path,
    words: &[&[u8]],
) -> bool {
    let mentions = |p: &Path| {
        crate::audit::special::read_regular(p, 1 << 20)
            .is_ok_and(|b| words.iter().any(|w| b.windows(w.len()).any(|x| x == *w)))
    };
    if mentions(&git_dir_info.join("attributes")) {
        return true;
    }
    index.entries().iter().any(|e| {
        let p = e.path(index);
        (p == ".gitattributes" || p.ends_with(b"/.gitattributes"))
            && mentions(&top.join(std::ffi::OsStr::from_bytes(p)))
    })
}

/// `<state>.watch`, beside the state file: per index the pin saw, the entries it could not
/// vouch for ([`vouched`]) and the shared index of a split one.
pub fn watch_path(state: &Path) -> Option<PathBuf> {
    let mut n = state.file_name()?.to_os_string();
    n.push(".watch");
    Some(state.with_file_name(n))
}

const WATCH_FORMAT: u32 = 1;

/// The pin's record of the index entries it could not vouch for.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Watch {
    format: u32,
    indexes: Vec<WatchIndex>,
}

#[derive(Debug, Serialize, Deserialize)]
struct WatchIndex {
    /// The index file's path bytes, hex.
    index: String,
    /// A split index's shared index (`sharedindex.<id>`), path bytes in hex: the entries are
    /// in it too, so its `ctime` is part of "written since the pin" (R22-2).
    shared: Option<String>,
    /// Recorded under a relaxed stat check ([`relaxed_for`]): every entry is listed, each
    /// with its file's identity at the pin where the pin could take one.
    #[serde(default)]
    relaxed: bool,
    entries: Vec<WatchEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct WatchEntry {
    /// Path bytes relative to the work tree, hex.
    path: String,
    /// The entry's object id.
    id: String,
    mtime: u32,
    size: u32,
    flagged: bool,
    /// Under a relaxed stat check: the file's device, inode and `ctime` (seconds,
    /// nanoseconds) at the pin, taken after its dirty pages were written back and only when
    /// its `ctime` is older than the pin's start by the racy margin. The same identity at the
    /// check is the same content (any write moves `ctime`); any other — a file moved in with
    /// its folder keeps an old `ctime` but not the inode (R23-4) — is judged.
    #[serde(default)]
    ident: Option<[i64; 4]>,
}

fn ident_of(st: &FileStat) -> [i64; 4] {
    [
        st.st_dev as i64,
        st.st_ino as i64,
        st.st_ctime,
        st.st_ctime_nsec,
    ]
}

/// Whether git may compare only `mtime` and size for the index at `index_path`: the owner's
/// config relaxes the stat check (`relaxed`, recorded by the pin), or the repository's git
/// dir lies outside the common dir, where its config is the agent's to write (R22-4).
fn relaxed_for(relaxed: bool, index_path: &Path, common_dir: &Path) -> bool {
    relaxed || !index_path.starts_with(common_dir)
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from(b"0123456789abcdef"[usize::from(x >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(x & 15)]));
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Watch {
    /// The record beside `state`; `None` when it is missing or cannot be read as this build
    /// writes it (every index is then looked at as under a relaxed stat check: cost only).
    pub fn load(state: &Path) -> Option<Watch> {
        let p = watch_path(state)?;
        let b = crate::audit::special::read_regular(&p, 1 << 30).ok()?;
        let w: Watch = serde_json::from_slice(&b).ok()?;
        (w.format == WATCH_FORMAT).then_some(w)
    }

    fn get(&self, index: &Path) -> Option<&WatchIndex> {
        let key = hex(index.as_os_str().as_bytes());
        self.indexes.iter().find(|w| w.index == key)
    }
}

/// One entry [`scan`] looks at: its path, object id, `mtime` seconds and size as the index
/// holds them, its flags, and its file's identity at the pin (relaxed records only).
struct Todo {
    rel: Vec<u8>,
    want: String,
    mtime: u32,
    size: u32,
    flagged: bool,
    ident: Option<[i64; 4]>,
}

/// How [`scan`] looks at one index.
enum Look<'a> {
    /// Written since the pin: every entry git may take as unchanged, and the cache-tree.
    Written,
    /// Not written, under a relaxed stat check: every entry git may take as unchanged whose
    /// file changed since the pin.
    Relaxed,
    /// Not written: the entries the pin could not vouch for.
    Watched(&'a WatchIndex),
}

/// The index read on first use (a watched index is read only to judge a mismatch).
struct Lazy<'a> {
    path: &'a Path,
    file: Option<gix::index::File>,
}

impl Lazy<'_> {
    fn get(&mut self) -> Result<Option<&gix::index::File>, String> {
        if self.file.is_none() {
            self.file = crate::index_paths::read_index(self.path, true)?;
        }
        Ok(self.file.as_ref())
    }
}

/// Every hidden entry in the indexes `indexes` (`(index file, its work tree)`), as
/// [`check`] describes; `since` is the pin (seconds, nanoseconds).
///
/// An index written since the pin (its `ctime`, or its shared index's) is read whole. One
/// not written since holds what it held at the pin: the entries the pin vouched for cannot
/// hide a later write (see [`vouched`]), the others are in `watch` and are looked at. Where
/// git may compare only `mtime` and size ([`relaxed_for`]: the owner's config, R20-3, or a
/// repository whose git dir is outside the common dir, R22-4) the pin listed every entry
/// with its file's identity, and a file whose identity moved is judged (not its `ctime`
/// alone: a file moved in with its folder keeps an old one, R23-4). An index the record
/// does not hold, or holds under another rule, is read whole.
pub fn scan(
    indexes: &[(PathBuf, PathBuf)],
    common_dir: &Path,
    since: (i64, i64),
    relaxed: bool,
    watch: Option<&Watch>,
) -> Found {
    let mut out = Found::default();
    let mut hashed = 0usize;
    for (index_path, top_path) in indexes {
        let im = match std::fs::metadata(index_path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // nothing staged
            Err(e) => {
                out.incomplete = Some((index_path.clone(), format!("cannot stat: {e}")));
                return out;
            }
        };
        let recorded = watch.and_then(|w| w.get(index_path));
        // By `ctime`, which no unprivileged process sets back (the `mtime` put back with
        // `touch -d` hid a forged index: R19-1); a split index's shared index too (R22-2).
        let shared_written = recorded
            .and_then(|r| r.shared.as_deref())
            .and_then(unhex)
            .map(|b| PathBuf::from(std::ffi::OsString::from_vec(b)))
            .is_some_and(|p| {
                std::fs::metadata(&p).map_or(true, |m| (m.ctime(), m.ctime_nsec()) >= since)
            });
        let written = (im.ctime(), im.ctime_nsec()) >= since || shared_written;
        let relaxed_here = relaxed_for(relaxed, index_path, common_dir);
        let look = if written {
            Look::Written
        } else {
            match recorded {
                // A record taken under the same stat rule as now.
                Some(r) if r.relaxed == relaxed_here => Look::Watched(r),
                _ => Look::Relaxed,
            }
        };
        let top = match Top::open(top_path) {
            Ok(Some(t)) => t,
            Ok(None) => continue, // no work tree: nothing git compares
            Err(e) => {
                out.incomplete = Some((top_path.clone(), e));
                return out;
            }
        };
        let mut lazy = Lazy {
            path: index_path,
            file: None,
        };
        let mut todo: Vec<Todo> = Vec::new();
        match look {
            Look::Watched(r) => {
                for e in &r.entries {
                    let Some(p) = unhex(&e.path) else {
                        out.incomplete = Some((index_path.clone(), "damaged watch record".into()));
                        return out;
                    };
                    todo.push(Todo {
                        rel: p,
                        want: e.id.clone(),
                        mtime: e.mtime,
                        size: e.size,
                        flagged: e.flagged,
                        ident: e.ident,
                    });
                }
            }
            Look::Written | Look::Relaxed => {
                let index = match lazy.get() {
                    Ok(Some(i)) => i,
                    Ok(None) => continue,
                    Err(e) => {
                        out.incomplete = Some((index_path.clone(), e));
                        return out;
                    }
                };
                if matches!(look, Look::Written) {
                    out.trees.extend(forged_trees(index).into_iter().map(
                        |(dir, cached, computed)| ForgedTree {
                            index: index_path.clone(),
                            dir,
                            cached,
                            computed,
                        },
                    ));
                    // An untracked cache written during the turn (R19-3): git trusts it to
                    // list the untracked files (`core.untrackedCache` unset keeps one found),
                    // so a forged one hides a file from `status` that `add -A` then commits.
                    // Not verified (that needs git's ignore rules over the whole tree):
                    // reported.
                    if index.untracked().is_some() {
                        out.untracked_cache.push(index_path.clone());
                    }
                }
                for e in index.entries() {
                    let mode = e.mode;
                    if mode != gix::index::entry::Mode::FILE
                        && mode != gix::index::entry::Mode::FILE_EXECUTABLE
                        && mode != gix::index::entry::Mode::SYMLINK
                    {
                        continue;
                    }
                    // skip-worktree and assume-unchanged: git does not look at the file at
                    // all (R18-1).
                    let flagged = e.flags.intersects(
                        gix::index::entry::Flags::SKIP_WORKTREE
                            | gix::index::entry::Flags::ASSUME_VALID,
                    );
                    todo.push(Todo {
                        rel: e.path(index).to_vec(),
                        want: e.id.to_string(),
                        mtime: e.stat.mtime.secs,
                        size: e.stat.size,
                        flagged,
                        ident: None,
                    });
                }
            }
        }
        let mut filtered: Option<bool> = None;
        let mut crlf: Option<bool> = None;
        for Todo {
            rel,
            want,
            mtime,
            size,
            flagged,
            ident,
        } in todo
        {
            let st = match top.lstat(&rel) {
                Ok(Some(st)) => st,
                Ok(None) => continue, // gone: git shows it deleted
                Err(e) => {
                    out.incomplete = Some((top.full(&rel), e));
                    return out;
                }
            };
            if !flagged && !git_may_take_as_unchanged(mtime, size, &st) {
                continue; // git reads the file and shows what is there
            }
            if ident.is_some_and(|i| i == ident_of(&st)) {
                continue; // the file the pin saw, unwritten since: the entry unchanged too
            }
            hashed += 1;
            if hashed > MAX_HASHED {
                out.incomplete = Some((
                    top_path.clone(),
                    format!("more than {MAX_HASHED} files to hash"),
                ));
                return out;
            }
            let bytes = match top.content(&rel, &st) {
                Ok(Some(b)) => b,
                Ok(None) => continue, // a folder or FIFO at a file's entry: git sees the change
                Err(e) => {
                    out.incomplete = Some((top.full(&rel), e));
                    return out;
                }
            };
            let got = blob_id(&bytes);
            if got == want {
                continue;
            }
            let path = top.full(&rel);
            let is_file = st.st_mode & nix::sys::stat::SFlag::S_IFMT.bits()
                == nix::sys::stat::SFlag::S_IFREG.bits();
            let index = match lazy.get() {
                Ok(Some(i)) => i,
                Ok(None) => {
                    out.incomplete = Some((index_path.clone(), "the index is gone".into()));
                    return out;
                }
                Err(e) => {
                    out.incomplete = Some((index_path.clone(), e));
                    return out;
                }
            };
            if is_file
                && bytes.contains(&b'\r')
                && *crlf.get_or_insert_with(|| {
                    crlf_converted(
                        top_path,
                        index,
                        index_path.parent().unwrap_or(top_path),
                        common_dir,
                    )
                })
            {
                let lf: Vec<u8> = bytes
                    .windows(2)
                    .filter(|w| !(w[0] == b'\r' && w[1] == b'\n'))
                    .map(|w| w[0])
                    .chain(bytes.last().copied())
                    .collect();
                if blob_id(&lf) == want {
                    continue; // git's CRLF → LF on add
                }
            }
            let filtered = *filtered
                .get_or_insert_with(|| filters_named(top_path, index, &common_dir.join("info")));
            out.hidden.push(Hidden {
                path,
                index: index_path.clone(),
                entry_id: want,
                file_id: got,
                filtered,
                flagged,
            });
        }
    }
    out
}

/// Record, beside `state`, the entries of every index the session could write (and of the
/// repositories git enters below them) that the pin cannot vouch for ([`vouched`]): stale,
/// racy, missing or flagged. A vouched file's dirty pages are written back first (a page
/// dirtied through a shared writable mapping before the pin would otherwise take later
/// writes without moving its `ctime`: R21-1's way, on a tracked file). An index the pin
/// cannot read, or a file it cannot `lstat`, fails the pin.
pub fn pin(
    indexes: &[(PathBuf, PathBuf)],
    common_dir: &Path,
    state: &Path,
    relaxed: bool,
) -> Result<usize, String> {
    let started = crate::layout::walk_cache::now_ns();
    let all =
        all_indexes(indexes, common_dir).map_err(|(p, why)| format!("{}: {why}", p.display()))?;
    let mut w = Watch {
        format: WATCH_FORMAT,
        indexes: Vec::new(),
    };
    let mut watched = 0usize;
    for (index_path, top_path) in &all {
        let index = match crate::index_paths::read_index(index_path, true)? {
            Some(i) => i,
            None => continue,
        };
        let Some(top) = Top::open(top_path)? else {
            continue;
        };
        let relaxed_here = relaxed_for(relaxed, index_path, common_dir);
        let mut entries = Vec::new();
        for e in index.entries() {
            let mode = e.mode;
            if mode != gix::index::entry::Mode::FILE
                && mode != gix::index::entry::Mode::FILE_EXECUTABLE
                && mode != gix::index::entry::Mode::SYMLINK
            {
                continue;
            }
            let rel = e.path(&index);
            let flagged = e.flags.intersects(
                gix::index::entry::Flags::SKIP_WORKTREE | gix::index::entry::Flags::ASSUME_VALID,
            );
            let st = top.lstat(rel)?;
            if relaxed_here {
                // Every entry, with the file's identity where it is settled and not racy.
                let ident = st
                    .filter(|st| {
                        i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec)
                            < started - crate::layout::walk_cache::RACY_MARGIN_NS
                            && settled(&top, rel, st)
                    })
                    .map(|st| ident_of(&st));
                entries.push(WatchEntry {
                    path: hex(rel),
                    id: e.id.to_string(),
                    mtime: e.stat.mtime.secs,
                    size: e.stat.size,
                    flagged,
                    ident,
                });
                continue;
            }
            let ok = !flagged
                && match st {
                    Some(st) if vouched(&e.stat, &st, started) => settled(&top, rel, &st),
                    _ => false,
                };
            if !ok {
                entries.push(WatchEntry {
                    path: hex(rel),
                    id: e.id.to_string(),
                    mtime: e.stat.mtime.secs,
                    size: e.stat.size,
                    flagged,
                    ident: None,
                });
            }
        }
        watched += entries.len();
        w.indexes.push(WatchIndex {
            index: hex(index_path.as_os_str().as_bytes()),
            shared: crate::index_paths::shared_index_path(index_path)?
                .map(|p| hex(p.as_os_str().as_bytes())),
            relaxed: relaxed_here,
            entries,
        });
    }
    let path = watch_path(state).ok_or_else(|| format!("{}: no file name", state.display()))?;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("{}: no parent folder", path.display()));
    };
    let bytes = serde_json::to_vec(&w).map_err(|e| e.to_string())?;
    super::nf::Dir::open_trusted(parent)
        .and_then(|d| d.write_atomic(name, &bytes, 0o600))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(watched)
}

/// A regular file's dirty pages written back, its stat data unchanged by then (a link has no
/// pages: true).
fn settled(top: &Top, rel: &[u8], st: &FileStat) -> bool {
    use nix::sys::stat::SFlag;
    if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return true;
    }
    use nix::fcntl::OFlag;
    let Ok(fd) = nix::fcntl::openat(
        &top.fd,
        std::ffi::OsStr::from_bytes(rel),
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    ) else {
        return false;
    };
    use std::os::fd::AsFd;
    if crate::fsx::write_back(fd.as_fd()).is_err() {
        return false;
    }
    nix::sys::stat::fstat(&fd).is_ok_and(|a| {
        (a.st_ino, a.st_ctime, a.st_ctime_nsec, a.st_size)
            == (st.st_ino, st.st_ctime, st.st_ctime_nsec, st.st_size)
    })
}

/// The indexes [`check`] and [`pin`] look at: those given, the submodules' below the common
/// dir's `modules/`, and every repository git enters below them ([`nested_indexes`]).
///
/// Kept for the process (the index check and the object stores' walk ask for the same list in
/// one check; the agent's processes are stopped meanwhile, as the threat model has it), keyed
/// by the arguments: another list given is walked again.
pub(super) fn all_indexes(
    indexes: &[(PathBuf, PathBuf)],
    common_dir: &Path,
) -> Result<Vec<(PathBuf, PathBuf)>, (PathBuf, String)> {
    type Memo = (Vec<(PathBuf, PathBuf)>, PathBuf, AllIndexes);
    static MEMO: std::sync::Mutex<Option<Memo>> = std::sync::Mutex::new(None);
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((i, c, r)) = memo.as_ref() {
        if i.as_slice() == indexes && c == common_dir {
            return r.clone();
        }
    }
    let r = (|| {
        let mut all = indexes.to_vec();
        all.extend(submodule_indexes(common_dir)?);
        let more = nested_indexes(&all)?;
        all.extend(more);
        all.sort();
        all.dedup();
        Ok(all)
    })();
    *memo = Some((indexes.to_vec(), common_dir.to_path_buf(), r.clone()));
    r
}

type AllIndexes = Result<Vec<(PathBuf, PathBuf)>, (PathBuf, String)>;

/// The tree ids git would write for the entries of `index`, by folder (`""` the top), as
/// `cache-tree.c` makes them: stage-0 entries less intent-to-add ones, each folder's items
/// in index order (which is git's tree order), `<octal mode> <name>\0<id>`. `None` when
/// git would not use a cache-tree (a conflicted entry, a sparse-directory entry).
fn computed_trees(
    index: &gix::index::File,
) -> Option<std::collections::HashMap<Vec<u8>, (gix::ObjectId, u32)>> {
    use gix::index::entry::{Flags, Mode};
    let mut items: Vec<(&[u8], u32, &gix::oid)> = Vec::new();
    for e in index.entries() {
        if e.flags.stage_raw() != 0 || e.mode == Mode::DIR {
            return None;
        }
        if e.flags.contains(Flags::INTENT_TO_ADD) {
            continue;
        }
        items.push((e.path(index).as_ref(), e.mode.bits(), e.id.as_ref()));
    }
    let mut out = std::collections::HashMap::new();
    let mut i = 0;
    build(&items, &mut i, b"", &mut out);
    Some(out)
}

/// The tree of the folder `dir` from `items[*i..]` (its entries are contiguous from there),
/// recording every folder's (id, entry count) in `out`.
fn build(
    items: &[(&[u8], u32, &gix::oid)],
    i: &mut usize,
    dir: &[u8],
    out: &mut std::collections::HashMap<Vec<u8>, (gix::ObjectId, u32)>,
) -> gix::ObjectId {
    let start = *i;
    let mut buf = Vec::new();
    let skip = if dir.is_empty() { 0 } else { dir.len() + 1 };
    while *i < items.len() {
        let (path, mode, id) = items[*i];
        let inside =
            dir.is_empty() || (path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'));
        if !inside {
            break;
        }
        let rest = &path[skip..];
        match rest.iter().position(|&c| c == b'/') {
            None => {
                buf.extend_from_slice(format!("{mode:o} ").as_bytes());
                buf.extend_from_slice(rest);
                buf.push(0);
                buf.extend_from_slice(id.as_bytes());
                *i += 1;
            }
            Some(k) => {
                let sub = &path[..skip + k];
                let sub_id = build(items, i, sub, out);
                buf.extend_from_slice(b"40000 ");
                buf.extend_from_slice(&rest[..k]);
                buf.push(0);
                buf.extend_from_slice(sub_id.as_bytes());
            }
        }
    }
    let id = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Tree, &buf)
        .unwrap_or_else(|_| gix::ObjectId::null(gix::hash::Kind::Sha1));
    let count = u32::try_from(*i - start).unwrap_or(u32::MAX);
    out.insert(dir.to_vec(), (id, count));
    id
}

/// Every valid cached tree of `index`'s `TREE` extension (a count of entries given) whose id
/// or count is not what its entries make: `(folder, cached id, computed id)`.
fn forged_trees(index: &gix::index::File) -> Vec<(String, String, Option<String>)> {
    let Some(root) = index.tree() else {
        return Vec::new();
    };
    let Some(computed) = computed_trees(index) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<u8>, &gix::index::extension::Tree)> = vec![(Vec::new(), root)];
    while let Some((dir, t)) = stack.pop() {
        if let Some(n) = t.num_entries {
            let got = computed.get(&dir);
            let ok = got.is_some_and(|(id, count)| *id == t.id && *count == n);
            if !ok {
                out.push((
                    String::from_utf8_lossy(&dir).into_owned(),
                    t.id.to_string(),
                    got.filter(|(_, count)| *count == n)
                        .map(|(id, _)| id.to_string()),
                ));
            }
        }
        for c in &t.children {
            let mut p = dir.clone();
            if !p.is_empty() {
                p.push(b'/');
            }
            p.extend_from_slice(&c.name);
            stack.push((p, c));
        }
    }
    out.sort();
    out
}

/// Whether any config file the owner's git may read for this repository — the system files
/// of both install prefixes, the global ones (`GIT_CONFIG_GLOBAL`, `$XDG_CONFIG_HOME/git/config`
/// or `~/.config/git/config`, `~/.gitconfig`), the local and every worktree's and submodule's
/// config, includes followed whatever their condition — sets a value of
/// [`crate::catalogue::STAT_CHECK_RELAXING`] (a superset: a later `true` is not weighed). A
/// config that cannot be enumerated counts as relaxing (more files hashed, none missed).
pub fn owner_relaxes_stat_check(
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
) -> bool {
    let relaxing = |v: &crate::config::Value| {
        crate::catalogue::STAT_CHECK_RELAXING
            .iter()
            .any(|(k, val)| {
                v.is(k)
                    && if *val == "false" {
                        v.as_bool() == Some(false)
                    } else {
                        v.text().eq_ignore_ascii_case(val)
                    }
            })
    };
    // A config that cannot be enumerated counts as relaxing (more files hashed, none missed).
    owner_config_any(work_tree, git_dir, common_dir, &relaxing).unwrap_or(true)
}

/// Whether any value of the config files the owner's git may read for this repository (as
/// [`owner_relaxes_stat_check`] lists them) satisfies `pred`; `None` when the config cannot
/// be enumerated (each caller picks its safe answer).
pub(super) fn owner_config_any(
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
    pred: &dyn Fn(&crate::config::Value) -> bool,
) -> Option<bool> {
    let mut o = owner_options(work_tree, git_dir, common_dir);
    o.linked_worktrees = true;
    o.submodules = crate::config::Submodules::Walk;
    let all = owner_enumerations(o)?;
    Some(all.iter().any(|en| en.values().iter().any(pred)))
}

/// The owner's config files for a repository (system, global from `HOME`, `XDG_CONFIG_HOME`
/// and `GIT_CONFIG_GLOBAL`, local, worktree), with no system file yet
/// ([`owner_enumerations`] adds each candidate).
pub(super) fn owner_options(
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
) -> crate::config::Options {
    let home = env_path("HOME");
    let mut o = crate::config::Options::for_repository(work_tree, git_dir, common_dir).with_owner(
        None,
        home.as_deref(),
        env_path("XDG_CONFIG_HOME").as_deref(),
    );
    o.global.extend(env_path("GIT_CONFIG_GLOBAL"));
    o
}

fn env_path(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `o` enumerated once with no system file and once with each system file that exists (of
/// `GIT_CONFIG_SYSTEM` and both install prefixes: which git the owner runs is not known);
/// `None` when one of them cannot be enumerated.
pub(super) fn owner_enumerations(
    mut o: crate::config::Options,
) -> Option<Vec<crate::config::Enumeration>> {
    let mut systems: Vec<Option<PathBuf>> = vec![None];
    for p in env_path("GIT_CONFIG_SYSTEM")
        .into_iter()
        .chain(crate::named_paths::SYSTEM_CONFIGS.iter().map(PathBuf::from))
    {
        if std::fs::symlink_metadata(&p).is_ok() {
            systems.push(Some(p));
        }
    }
    let mut out = Vec::new();
    for system in systems {
        o.system = system;
        out.push(crate::config::enumerate(&o).ok()?);
    }
    Some(out)
}

/// Set `path`'s `mtime` to now (not following a link; its content untouched): git's stat
/// check of the entry then fails under every `core.trustctime`/`core.checkStat`, and git
/// reads the file.
fn unhide(path: &Path) -> std::io::Result<()> {
    use nix::sys::stat::{utimensat, UtimensatFlags};
    use nix::sys::time::TimeSpec;
    utimensat(
        nix::fcntl::AT_FDCWD,
        path,
        &TimeSpec::UTIME_OMIT,
        &TimeSpec::UTIME_NOW,
        UtimensatFlags::NoFollowSymlink,
    )
    .map_err(std::io::Error::from)
}

/// The submodule git dirs below `common/modules/` (names with slashes nest, nested
/// submodules too), each with its index and the work tree its `core.worktree` names (git
/// writes it for an absorbed submodule; the config is a protected entry): the submodules'
/// indexes hide files as the superproject's do (R19-4).
fn submodule_indexes(common: &Path) -> Result<Vec<(PathBuf, PathBuf)>, (PathBuf, String)> {
    let mut out = Vec::new();
    for g in super::rerere::module_git_dirs(&common.join("modules"))? {
        let worktree = crate::audit::special::read_regular(&g.join("config"), 1 << 20)
            .ok()
            .and_then(|b| crate::config::last_value_in_file(&b, "core.worktree"));
        if let Some(w) = worktree {
            out.push((g.join("index"), super::normalize(&g.join(w))));
        }
        // The submodule's own linked worktrees: each entry's index, its work tree the folder
        // of the `.git` file its `gitdir` names (R23-3).
        if let Ok(wts) = std::fs::read_dir(g.join("worktrees")) {
            for e in wts.flatten() {
                let entry = e.path();
                let Ok(b) = crate::audit::special::read_regular(&entry.join("gitdir"), 1 << 16)
                else {
                    continue;
                };
                let text = String::from_utf8_lossy(&b);
                let dot_git = Path::new(text.trim_end_matches(['\n', '\r']));
                if let Some(wt) = dot_git.parent().filter(|_| dot_git.is_absolute()) {
                    out.push((entry.join("index"), wt.to_path_buf()));
                }
            }
        }
    }
    Ok(out)
}

/// Most repositories [`nested_indexes`] follows, and how deep; past either the check is
/// incomplete (a walk cut short never passes for a clean one).
const MAX_NESTED: usize = 10_000;
const MAX_DEPTH: usize = 16;

/// The indexes of the repositories the owner's git enters below the work trees of `tops`
/// (`(index, work tree)` pairs), nested ones too: every gitlink of each index read — what
/// `git status` recurses into whether or not `.gitmodules` names it (twenty-first red-team
/// pass, R21-2, R21-3) — and every `path = …` of each work tree's `.gitmodules` (R20-1).
/// The repository at `<work tree>/<path>` is the one its `.git` names, as git's
/// `read_gitfile_gently` and `is_git_directory` find it, links followed: a folder (a submodule
/// added from an existing clone, or an absorbed one's `.git` file swapped for a copy of its
/// git dir: R20-1, R20-2), or a file `gitdir: <dir>` (relative to the submodule's folder;
/// the agent can point it at any git dir it made). Git dirs below the common dir's `modules/`
/// are listed here too; [`scan`] reads each index once, and only if it was written since the
/// pin. An index whose gitlinks cannot be read, or a walk past [`MAX_NESTED`] repositories or
/// [`MAX_DEPTH`] levels, is an error (fail closed).
fn nested_indexes(
    tops: &[(PathBuf, PathBuf)],
) -> Result<Vec<(PathBuf, PathBuf)>, (PathBuf, String)> {
    let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut work: Vec<(PathBuf, PathBuf, usize, bool)> = tops
        .iter()
        .map(|(i, t)| (i.clone(), t.clone(), 0, true))
        .collect();
    let mut seen: std::collections::BTreeSet<(PathBuf, PathBuf)> = tops.iter().cloned().collect();
    while let Some((index, top, depth, given)) = work.pop() {
        // The repositories' paths relative to `top`, each once (a gitlink and its
        // `.gitmodules` entry name the same one).
        let mut subs: std::collections::BTreeSet<Vec<u8>> =
            match super::embedded::gitlink_paths(&index) {
                Ok(p) => p
                    .into_iter()
                    .map(|r| r.into_os_string().into_vec())
                    .collect(),
                // The indexes given are `embedded::armed`'s too, which reports them unreadable.
                Err(_) if given => Default::default(),
                Err(why) => return Err((index, why)),
            };
        if let Ok(b) = crate::audit::special::read_regular(&top.join(".gitmodules"), 1 << 20) {
            for l in String::from_utf8_lossy(&b).lines() {
                let Some((k, v)) = l.trim().split_once('=') else {
                    continue;
                };
                if !k.trim().eq_ignore_ascii_case("path") {
                    continue;
                }
                let v = v.trim().trim_matches('"');
                // Plain relative paths as they are; anything else normalised and kept only
                // inside `top`.
                let plain = !v.is_empty()
                    && !v.starts_with('/')
                    && v.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
                if plain {
                    subs.insert(v.as_bytes().to_vec());
                } else if let Ok(r) = super::normalize(&top.join(v)).strip_prefix(&top) {
                    if !r.as_os_str().is_empty() {
                        subs.insert(r.as_os_str().as_bytes().to_vec());
                    }
                }
            }
        }
        let top_fd = if subs.is_empty() {
            None
        } else {
            match Top::open(&top) {
                Ok(t) => t,
                Err(e) => return Err((top.clone(), e)),
            }
        };
        for rel in subs {
            let Some(t) = &top_fd else { break };
            let sub = top.join(std::ffi::OsStr::from_bytes(&rel));
            let dot_git = sub.join(".git");
            let mut rel_git = rel.clone();
            rel_git.extend_from_slice(b"/.git");
            // `stat` (links followed), as git's: a `.git` link to a folder is a git dir to
            // git. Relative to the work tree held open, as git reaches it.
            let st = match nix::sys::stat::fstatat(
                &t.fd,
                std::ffi::OsStr::from_bytes(&rel_git),
                nix::fcntl::AtFlags::empty(),
            ) {
                Ok(st) => st,
                Err(nix::errno::Errno::ENOENT) | Err(nix::errno::Errno::ENOTDIR) => {
                    continue; // not populated: git does not enter it
                }
                // A folder that cannot be searched, a link loop: not known, so not clean
                // (R22-3).
                Err(e) => return Err((dot_git, format!("cannot stat: {e}"))),
            };
            use nix::sys::stat::SFlag;
            let kind = st.st_mode & SFlag::S_IFMT.bits();
            let m_is_dir = kind == SFlag::S_IFDIR.bits();
            let m_is_file = kind == SFlag::S_IFREG.bits();
            let git_dir = if m_is_dir {
                // A `.git` link to a folder: its index read where the link leads (the index
                // reads refuse links on the way).
                match std::fs::symlink_metadata(&dot_git) {
                    Ok(l) if l.file_type().is_symlink() => match std::fs::canonicalize(&dot_git) {
                        Ok(c) => c,
                        Err(e) => return Err((dot_git, format!("cannot resolve the link: {e}"))),
                    },
                    _ => dot_git,
                }
            } else if m_is_file {
                match super::embedded::gitfile_target(&dot_git, &sub) {
                    Some(g) => g,
                    None => continue, // not a gitfile: git does not enter it either
                }
            } else {
                continue;
            };
            let pair = (git_dir.join("index"), sub);
            if !seen.insert(pair.clone()) {
                continue;
            }
            if depth + 1 > MAX_DEPTH || out.len() >= MAX_NESTED {
                return Err((
                    pair.1,
                    format!(
                        "more than {MAX_NESTED} nested repositories or {MAX_DEPTH} levels: not all indexes read"
                    ),
                ));
            }
            out.push(pair.clone());
            work.push((pair.0, pair.1, depth + 1, false));
        }
    }
    Ok(out)
}

/// Report every hidden entry; with `restore`, set each file's `mtime` to now so git reads it.
pub fn check(
    indexes: &[(PathBuf, PathBuf)],
    common_dir: &Path,
    state: &Path,
    relaxed: bool,
    restore: bool,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> super::Outcome {
    use super::Outcome;
    let Some(since) = std::fs::metadata(state)
        .ok()
        .map(|m| (m.mtime(), m.mtime_nsec()))
    else {
        emit(mk(
            EventKind::CheckIncomplete,
            format!("{}: cannot stat the state file", state.display()),
        ));
        return Outcome::Incomplete;
    };
    let all = match all_indexes(indexes, common_dir) {
        Ok(v) => v,
        Err((p, why)) => {
            emit(
                mk(
                    EventKind::CheckIncomplete,
                    format!("{}: {why}", p.display()),
                )
                .path(&p),
            );
            return Outcome::Incomplete;
        }
    };
    let watch = Watch::load(state);
    let found = scan(&all, common_dir, since, relaxed, watch.as_ref());
    let mut outcome = Outcome::Clean;
    // Files a filter may explain (git LFS' smudged files, whose blob is a pointer): one
    // warning per index with the count and the first paths, not one per file.
    let mut filtered: std::collections::BTreeMap<&Path, Vec<&Hidden>> = Default::default();
    for h in found.hidden.iter().filter(|h| h.filtered && !h.flagged) {
        filtered.entry(h.index.as_path()).or_default().push(h);
    }
    for (index, hs) in &filtered {
        outcome = outcome.and(Outcome::Found);
        let why = "tracked files git takes as unchanged do not hash to their entries' objects; the work tree's attributes name a filter (git LFS, for one), which may explain them: not run to verify";
        let paths: Vec<String> = hs
            .iter()
            .take(20)
            .map(|h| h.path.display().to_string())
            .collect();
        emit(
            mk(
                EventKind::IndexStatForged,
                format!("{}: {} files: {why}", index.display(), hs.len()),
            )
            .path(index)
            .with("index", index.display().to_string())
            .with("change", "filtered")
            .with("count", hs.len())
            .with("paths", paths)
            .with("level", "warning")
            .with("why", why)
            .with("action", "reported"),
        );
    }
    for h in found.hidden.iter().filter(|h| !h.filtered || h.flagged) {
        outcome = outcome.and(Outcome::Found);
        let why = if h.filtered {
            "git takes this file as unchanged (its index entry's stat data matches) but it does not hash to the entry's object; the work tree's attributes name a filter, which may explain it (not run to verify)"
        } else {
            "git takes this file as unchanged (its index entry's stat data matches) but its content is not the entry's object: git status, diff and reset --hard do not show or undo it"
        };
        let mut ev = mk(
            EventKind::IndexStatForged,
            format!("{}: {why}", h.path.display()),
        )
        .path(&h.path)
        .with("index", h.index.display().to_string())
        .with("entry_id", h.entry_id.clone())
        .with("file_id", h.file_id.clone())
        .with("level", if h.filtered { "warning" } else { "error" })
        .with("why", why);
        if h.flagged {
            ev = ev
                .with("flag", "skip-worktree or assume-unchanged")
                .with("action", "reported");
        } else if restore {
            match unhide(&h.path) {
                Ok(()) => ev = ev.with("action", "stat_invalidated"),
                Err(e) => {
                    outcome = outcome.and(Outcome::Incomplete);
                    ev = ev.with("action", format!("failed: {e}"));
                }
            }
        } else {
            ev = ev.with("action", "reported");
        }
        emit(ev);
    }
    for p in &found.untracked_cache {
        outcome = outcome.and(Outcome::Found);
        let why = "an index written during the turn carries an untracked cache: git takes the untracked files it lists as the whole truth (core.untrackedCache unset keeps it), so a forged one hides a file from git status that git add -A then commits; not verified here";
        emit(
            mk(
                EventKind::IndexStatForged,
                format!("{}: {why}", p.display()),
            )
            .path(p)
            .with("index", p.display().to_string())
            .with("change", "untracked_cache")
            .with("level", "warning")
            .with("why", why)
            .with("action", "reported"),
        );
    }
    for t in &found.trees {
        outcome = outcome.and(Outcome::Found);
        let why = "the index's cache-tree names a tree its entries do not make: the owner's next commit, merge or cherry-pick builds its tree from it and commits that content, while status and both diffs show nothing";
        let dir = if t.dir.is_empty() {
            "/"
        } else {
            t.dir.as_str()
        };
        emit(
            mk(
                EventKind::IndexStatForged,
                format!("{}: cached tree of {dir}: {why}", t.index.display()),
            )
            .path(&t.index)
            .with("change", "cache_tree")
            .with("dir", t.dir.clone())
            .with("cached", t.cached.clone())
            .with("computed", t.computed.clone().unwrap_or_default())
            .with("level", "error")
            .with("why", why)
            .with("action", "reported"),
        );
    }
    if let Some((p, why)) = found.incomplete {
        outcome = outcome.and(Outcome::Incomplete);
        emit(
            mk(
                EventKind::CheckIncomplete,
                format!("{}: {why}", p.display()),
            )
            .path(&p),
        );
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_paths_round_trip_any_bytes() {
        for b in [&b""[..], b"a/b.sh", b"\xff\x00\n/x"] {
            assert_eq!(unhex(&hex(b)).as_deref(), Some(b));
        }
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    /// The pin vouches only for an entry whose stat data is the file's and whose file's
    /// `ctime` is older than the pin's start by the racy margin; any field off, or a racy
    /// file, is watched.
    #[test]
    fn only_settled_exact_entries_are_vouched_for() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "x\n").unwrap();
        let st = nix::sys::stat::lstat(&p).unwrap();
        let t = |s: i64, ns: i64| gix::index::entry::stat::Time {
            secs: s as u32,
            nsecs: ns as u32,
        };
        let exact = gix::index::entry::Stat {
            mtime: t(st.st_mtime, st.st_mtime_nsec),
            ctime: t(st.st_ctime, st.st_ctime_nsec),
            dev: st.st_dev as u32,
            ino: st.st_ino as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            size: st.st_size as u32,
        };
        let ctime_ns = i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec);
        let later = ctime_ns + crate::layout::walk_cache::RACY_MARGIN_NS + 1;
        assert!(vouched(&exact, &st, later));
        assert!(!vouched(&exact, &st, ctime_ns + 1), "racy");
        let mut s = exact;
        s.ctime.secs += 3;
        assert!(!vouched(&s, &st, later), "a predicted ctime");
        let mut s = exact;
        s.ino ^= 1;
        assert!(!vouched(&s, &st, later));
        let mut s = exact;
        s.size += 1;
        assert!(!vouched(&s, &st, later));
        let mut s = exact;
        s.mtime.nsecs = 0;
        s.ctime.nsecs = 0;
        assert!(
            vouched(&s, &st, later),
            "nanoseconds the entry does not hold"
        );
    }
}
