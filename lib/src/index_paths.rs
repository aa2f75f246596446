//! Index entry paths that git itself would refuse to add: `read-cache.c:verify_path`, ported.
//!
//! git checks a path with `verify_path` when it *adds* it to the index (`update-index`,
//! `add`) and when it merges trees into it (`unpack_trees`: `reset --hard`, `checkout -f`,
//! `read-tree -u`), but not when it *loads* the index from disk. The index is the agent's to
//! write (every `git add` writes it), so an agent that edits the file directly can store an
//! entry named `.git/hooks/pre-commit`, `../home/.gitconfig` or `/etc/…`. The owner's next
//! ordinary `git checkout -- .` (or `checkout-index -a`) then writes it as named — into the git
//! dir or anywhere the owner may write — and `git commit -a` / `add -u` hash the file it names
//! into the agent's object store (red-team pass 4, R4-11 to R4-13).
//!
//! Invariant: an entry is accepted only when git's own `verify_path` would accept it on a
//! repository with `core.protectNTFS` **and** `core.protectHFS` on (git turns the first on by
//! default on every platform since 2.24; the second guards a macOS checkout of the same index).
//! Being stricter than the owner's git can only turn an odd honest name into a finding, never
//! let a dangerous one through; git refuses to *add* every name refused here, so an honest
//! index holds none of them.

/// Why git would refuse an entry's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Empty, or an empty component (`a//b`, a leading `/`: an absolute path).
    EmptyComponent,
    /// A `.` or `..` component.
    DotComponent,
    /// A `.git` component, in any case, or a name NTFS or HFS+ reads as `.git`
    /// (`git~1`, `.git.`, `.g\u{200c}it`).
    DotGit,
    /// A symbolic link named `.gitmodules` (git reads it through the link).
    GitmodulesLink,
    /// A trailing `/` on an entry that is not a sparse-directory entry.
    TrailingSlash,
}

impl Invalid {
    /// What the owner's git would do with such an entry, in words.
    pub fn why(self) -> &'static str {
        match self {
            Invalid::EmptyComponent => {
                "an absolute path or an empty component: git checkout writes it outside the work tree"
            }
            Invalid::DotComponent => {
                "a `.` or `..` component: git checkout writes it outside the work tree"
            }
            Invalid::DotGit => {
                "a `.git` component: git checkout writes it into the git dir (hooks, config)"
            }
            Invalid::GitmodulesLink => "a symbolic link named .gitmodules",
            Invalid::TrailingSlash => "a trailing slash on a file entry",
        }
    }
}

const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
const S_IFDIR: u32 = 0o040000;

/// `verify_path(path, mode)` with `protect_ntfs` and `protect_hfs` on, for a POSIX build
/// (`is_dir_sep` is `/` only; a backslash is still checked for NTFS, as git does under
/// `protect_ntfs`).
pub fn verify_path(path: &[u8], mode: u32) -> Result<(), Invalid> {
    let is_link = mode & S_IFMT == S_IFLNK;
    let is_dir = mode & S_IFMT == S_IFDIR;
    // `inside:` runs at the start of the path and after every '/'.
    let mut i = 0;
    loop {
        // At the start of a component.
        let rest = &path[i..];
        // Every name the four checks below refuse starts with `.` (HFS+ and NTFS `.git`,
        // `.gitmodules`), `g`/`G` (NTFS `git~1`, `gitmod~1`, `gi7eba~1`) or a code point HFS+
        // ignores (not ASCII): a component starting with any other ASCII byte skips them.
        let plain =
            matches!(rest.first(), Some(&c) if c < 0x80 && !matches!(c, b'.' | b'g' | b'G'));
        if !plain {
            if is_hfs_dotgit(rest) || is_ntfs_dotgit(rest) {
                return Err(Invalid::DotGit);
            }
            if is_link && (is_hfs_dot(rest, b"gitmodules") || is_ntfs_dotgitmodules(rest)) {
                return Err(Invalid::GitmodulesLink);
            }
        }
        match rest.first() {
            None => {
                return if is_dir {
                    Ok(())
                } else if i == 0 {
                    Err(Invalid::EmptyComponent)
                } else {
                    Err(Invalid::TrailingSlash)
                }
            }
            Some(b'/') => return Err(Invalid::EmptyComponent),
            Some(b'.') => verify_dotfile(&rest[1..], is_link)?,
            Some(_) => {}
        }
        // To the end of the component; a backslash is a separator to NTFS.
        let mut j = 0;
        loop {
            let Some(k) = rest[j..].iter().position(|&c| c == b'/' || c == b'\\') else {
                return Ok(());
            };
            j += k;
            if rest[j] == b'/' {
                break;
            }
            let after = &rest[j + 1..];
            if is_ntfs_dotgit(after) {
                return Err(Invalid::DotGit);
            }
            if is_link && is_ntfs_dotgitmodules(after) {
                return Err(Invalid::GitmodulesLink);
            }
            j += 1;
        }
        i += j + 1;
    }
}

/// `verify_dotfile`: `rest` follows a component's leading `.`.
fn verify_dotfile(rest: &[u8], is_link: bool) -> Result<(), Invalid> {
    let sep_or_end = |b: Option<&u8>| matches!(b, None | Some(b'/'));
    if sep_or_end(rest.first()) {
        return Err(Invalid::DotComponent);
    }
    if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(b"git") {
        if sep_or_end(rest.get(3)) {
            return Err(Invalid::DotGit);
        }
        if is_link
            && rest.len() >= 10
            && rest[3..10].eq_ignore_ascii_case(b"modules")
            && sep_or_end(rest.get(10))
        {
            return Err(Invalid::GitmodulesLink);
        }
    }
    if rest[0] == b'.' && sep_or_end(rest.get(1)) {
        return Err(Invalid::DotComponent);
    }
    Ok(())
}

/// `path.c:is_ntfs_dotgit`: `.git` or `git~1`, any case, followed by only spaces and periods
/// up to the end of the component (`/`, `\`, `:` or the end).
fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let rest = if name.first() == Some(&b'.') && name.len() >= 4 {
        if !name[1..4].eq_ignore_ascii_case(b"git") {
            return false;
        }
        &name[4..]
    } else if name.len() >= 5 && name[..3].eq_ignore_ascii_case(b"git") && &name[3..5] == b"~1" {
        &name[5..]
    } else {
        return false;
    };
    for &c in rest {
        match c {
            b'/' | b'\\' | b':' => return true,
            b'.' | b' ' => {}
            _ => return false,
        }
    }
    true
}

/// `.gitmodules` as NTFS may read it: the name, any case, with trailing spaces and periods,
/// or an 8.3 short name `gitmod~<n>` (git also checks the hashed short names `gi7eba~<n>`;
/// a link named like that is refused too).
fn is_ntfs_dotgitmodules(name: &[u8]) -> bool {
    let end = name
        .iter()
        .position(|&c| matches!(c, b'/' | b'\\' | b':'))
        .unwrap_or(name.len());
    let comp = &name[..end];
    let trimmed = {
        let mut t = comp;
        while let Some((&last, head)) = t.split_last() {
            if last == b' ' || last == b'.' {
                t = head;
            } else {
                break;
            }
        }
        t
    };
    if trimmed.eq_ignore_ascii_case(b".gitmodules") {
        return true;
    }
    let short = |prefix: &[u8]| {
        comp.len() >= prefix.len() + 2
            && comp[..prefix.len()].eq_ignore_ascii_case(prefix)
            && comp[prefix.len()] == b'~'
            && comp[prefix.len() + 1..].iter().all(u8::is_ascii_digit)
    };
    short(b"gitmod") || short(b"gi7eba")
}

/// `utf8.c:is_hfs_dotgit`.
fn is_hfs_dotgit(path: &[u8]) -> bool {
    is_hfs_dot(path, b"git")
}

/// `utf8.c:is_hfs_dot_generic`: `.` + `needle` (ASCII, lower case), any case, with the code
/// points HFS+ ignores anywhere in between, up to the end of the component.
fn is_hfs_dot(path: &[u8], needle: &[u8]) -> bool {
    let mut p = path;
    if next_hfs_char(&mut p) != Some('.' as u32) {
        return false;
    }
    for &n in needle {
        match next_hfs_char(&mut p) {
            Some(c) if c < 128 && (c as u8).to_ascii_lowercase() == n => {}
            _ => return false,
        }
    }
    match next_hfs_char(&mut p) {
        None => p.is_empty(),
        Some(c) => c == '/' as u32,
    }
}

/// The next code point of `p` that HFS+ does not ignore; `None` at the end or on bytes that
/// are not UTF-8 (git's `next_hfs_char` returns 0 then: "cannot be .git").
fn next_hfs_char(p: &mut &[u8]) -> Option<u32> {
    loop {
        let (c, len) = decode_utf8(p)?;
        *p = &p[len..];
        match c {
            0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff => continue,
            _ => return Some(c),
        }
    }
}

fn decode_utf8(p: &[u8]) -> Option<(u32, usize)> {
    let b0 = *p.first()?;
    let len = match b0 {
        0x00..=0x7f => return Some((u32::from(b0), 1)),
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let s = std::str::from_utf8(p.get(..len)?).ok()?;
    s.chars().next().map(|c| (c as u32, len))
}

use crate::fsx::FileId;
use crate::integrity::nf::{Dir, NfError};
use crate::safegit::gitlinks::{scan_visiting, Scan, Walked};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// One entry git would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadEntry {
    pub path: Vec<u8>,
    pub mode: u32,
    pub invalid: Invalid,
}

/// The entries of an index file's bytes that git's `verify_path` refuses, read exactly as git
/// reads the file (`crate::safegit::gitlinks::walk`); a split index is decoded with gix (its
/// entries live in the shared index too). `Err` when the bytes are not what git would read:
/// the caller reports that as incomplete, never as clean.
pub fn bad_entries(index: &Path, bytes: &[u8]) -> Result<Vec<BadEntry>, String> {
    let judged = Judged::of(bytes);
    judged.bad_entries(index)
}

/// What one pass over an index's bytes decides: the entries `verify_path` refuses, and the
/// gitlinks (`crate::safegit::gitlinks::scan`).
#[derive(Debug, Clone)]
struct Judged {
    walked: Option<Walked>,
    bad: Vec<BadEntry>,
    scan: Option<Scan>,
}

impl Judged {
    fn of(bytes: &[u8]) -> Judged {
        let mut bad = Vec::new();
        let (scan, walked) = scan_visiting(bytes, &mut |mode, name| {
            if let Err(invalid) = verify_path(name, mode) {
                bad.push(BadEntry {
                    path: name.to_vec(),
                    mode,
                    invalid,
                });
            }
        });
        Judged { walked, bad, scan }
    }

    /// The refused entries; a split index's are read with gix from `index` (its shared index
    /// beside it) every time, as the verdict then depends on another file.
    fn bad_entries(&self, index: &Path) -> Result<Vec<BadEntry>, String> {
        match self.walked {
            Some(Walked::Complete) => Ok(self.bad.clone()),
            Some(Walked::Split(shared)) => split_bad_entries(index, &shared),
            None => Err(
                "the index is not laid out as git reads it (version, object format or sizes)"
                    .into(),
            ),
        }
    }
}

/// Most bytes of an index or shared index [`read_split_index`] copies.
pub const SPLIT_INDEX_LIMIT: u64 = 1 << 30;

/// A split index read as git reads it — its entries laid over those of the shared index
/// `sharedindex.<shared>` beside it — with gix's full decoder, but without any blocking
/// open: the index and the shared index are each opened `O_NONBLOCK` and must be regular
/// files (`audit::special::open_regular`, which follows a link as git does), read whole and
/// decoded from private copies in a fresh temporary folder. gix opens the shared index by
/// path with a blocking open and maps it: a FIFO planted at `sharedindex.<id>` (or a link to
/// one) hung `check`, `audit` and the end-of-turn hook (sixteenth red-team pass, R16-11),
/// and a mapping of a file the agent can truncate could fault. `shared` is the id the index's
/// `link` extension names (`safegit::gitlinks::Scan::Split`). Every reader of a split index
/// in gitward goes through here.
pub fn read_split_index(index: &Path, shared: &[u8; 20]) -> Result<gix::index::File, String> {
    use std::io::Read;
    let read = |p: &Path| -> Result<Vec<u8>, String> {
        let (mut f, md) = crate::audit::special::open_regular(p, SPLIT_INDEX_LIMIT)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        let mut v = Vec::with_capacity(usize::try_from(md.len()).unwrap_or(0));
        f.read_to_end(&mut v)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(v)
    };
    let hex: String = shared.iter().map(|b| format!("{b:02x}")).collect();
    let shared_name = format!("sharedindex.{hex}");
    let index_bytes = read(index)?;
    let shared_bytes = read(&index.with_file_name(&shared_name))?;
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    std::fs::write(tmp.path().join("index"), &index_bytes)
        .and_then(|()| std::fs::write(tmp.path().join(&shared_name), &shared_bytes))
        .map_err(|e| format!("a copy in {}: {e}", tmp.path().display()))?;
    // One thread, so entries are read in order, as git does under the defused
    // `index.threads=1`.
    let options = gix::index::decode::Options {
        thread_limit: Some(1),
        ..Default::default()
    };
    gix::index::File::at(
        tmp.path().join("index"),
        gix::hash::Kind::Sha1,
        true,
        options,
    )
    .map_err(|e| format!("cannot read the split index: {e}"))
}

/// The shared index (`sharedindex.<id>` beside it) a split index file names in its `link`
/// extension; `None` for an index that is not split or not there. Read as [`read_index`]
/// reads it (non-blocking, regular only).
pub fn shared_index_path(index: &Path) -> Result<Option<PathBuf>, String> {
    use std::io::Read;
    let (mut f, md) = match crate::audit::special::open_regular(index, SPLIT_INDEX_LIMIT) {
        Ok(x) => x,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", index.display())),
    };
    let mut bytes = Vec::with_capacity(usize::try_from(md.len()).unwrap_or(0));
    f.read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", index.display()))?;
    Ok(
        match crate::safegit::gitlinks::walk(&bytes, &mut |_, _| {}) {
            Some(crate::safegit::gitlinks::Walked::Split(shared)) => {
                let hex: String = shared.iter().map(|b| format!("{b:02x}")).collect();
                index.parent().map(|d| d.join(format!("sharedindex.{hex}")))
            }
            _ => None,
        },
    )
}

/// Any index file read with gix's full decoder without a blocking open: `None` when there is
/// none. Opened `O_NONBLOCK` and regular only (a link followed, as git does); a split index
/// goes to [`read_split_index`]; any other is decoded by gix from the descriptor just vetted
/// (`/proc/self/fd/<n>` reopens that very file, whatever was renamed over the path since). An
/// index that is a FIFO, or a split index whose shared index is one, would otherwise hang
/// the reader (R16-11). `skip_hash` as gix's `File::at`.
pub fn read_index(index: &Path, skip_hash: bool) -> Result<Option<gix::index::File>, String> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let (mut f, md) = match crate::audit::special::open_regular(index, SPLIT_INDEX_LIMIT) {
        Ok(x) => x,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", index.display())),
    };
    let mut bytes = Vec::with_capacity(usize::try_from(md.len()).unwrap_or(0));
    f.read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", index.display()))?;
    if let Some(crate::safegit::gitlinks::Walked::Split(shared)) =
        crate::safegit::gitlinks::walk(&bytes, &mut |_, _| {})
    {
        return read_split_index(index, &shared).map(Some);
    }
    let options = gix::index::decode::Options {
        thread_limit: Some(1),
        ..Default::default()
    };
    let fd_path = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
    gix::index::File::at(&fd_path, gix::hash::Kind::Sha1, skip_hash, options)
        .map(Some)
        .map_err(|e| format!("cannot read the index {}: {e}", index.display()))
}

fn split_bad_entries(index: &Path, shared: &[u8; 20]) -> Result<Vec<BadEntry>, String> {
    let file = read_split_index(index, shared)?;
    let mut out = Vec::new();
    for e in file.entries() {
        let name = e.path(&file);
        let mode = e.mode.bits();
        if let Err(invalid) = verify_path(name, mode) {
            out.push(BadEntry {
                path: name.to_vec(),
                mode,
                invalid,
            });
        }
    }
    Ok(out)
}

/// Bound on the index bytes [`read_shared`] keeps in one process.
const SHARED_BYTES: usize = 64 << 20;

/// An index file as this process read it ([`read_shared`]): what one pass over its bytes
/// decides, computed once — or taken from the verdict recorded by an earlier check for the
/// very same file ([`Verdicts`]), in which case its bytes are not read.
#[derive(Debug)]
pub struct IndexRead {
    id: FileId,
    path: PathBuf,
    /// The bytes read; `None` when the verdict came from the record.
    bytes: Option<Vec<u8>>,
    judged: OnceLock<Judged>,
}

impl IndexRead {
    /// The path the index was read at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes read, or `None` when the verdict was taken from the record of an earlier
    /// check ([`Verdicts`]).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.bytes.as_deref()
    }

    fn judged(&self) -> &Judged {
        self.judged
            .get_or_init(|| Judged::of(self.bytes.as_deref().unwrap_or_default()))
    }

    /// [`bad_entries`] of this index.
    pub fn bad_entries(&self) -> Result<Vec<BadEntry>, String> {
        self.judged().bad_entries(&self.path)
    }

    /// `crate::safegit::gitlinks::scan` of this index (found in the same pass as
    /// [`IndexRead::bad_entries`]).
    pub fn gitlinks(&self) -> Option<Scan> {
        self.judged().scan.clone()
    }
}

/// Indexes read by this process, with their file's identity when read.
static READ: Mutex<Vec<Arc<IndexRead>>> = Mutex::new(Vec::new());

/// The verdicts of the check under way ([`use_verdicts`]), if any.
static VERDICTS: Mutex<Option<Verdicts>> = Mutex::new(None);

/// The index file `name` in `dir`, read at most once per process while it stays the same
/// file: `check` looks at each git dir's index several times (the baseline comparison, the
/// gitlinks of the nested walk, the audit of each repository the walk meets, the common dir's
/// once per root), and reading git.git's 460 KB index four times for each of 21 git dirs was
/// a third of its system time.
///
/// The file is opened every time (no-follow, non-blocking, its type checked on the
/// descriptor, as `nf::Dir::read_stated`), and the bytes of an earlier read are handed out
/// only when the opened file has the same path, device, inode, size, `mtime` and `ctime` as
/// the one read then; any other file is read. Within one process this hands a later reader
/// the content the file had at the first read — the content a check that read it once would
/// see, as if the agent wrote after that read; the next check reads it again, unless the
/// check installed the verdicts of the last one ([`use_verdicts`]): then an index whose
/// identity the record holds, under the conditions [`Verdicts`] states, is not read at all.
pub fn read_shared(dir: &Dir, name: &OsStr, limit: u64) -> Result<Arc<IndexRead>, NfError> {
    read_shared_opened(dir.open_regular(name, limit)?)
}

/// [`read_shared`] of an index already opened (as `Dir::open_regular` opens it).
pub fn read_shared_opened(opened: crate::fsx::OpenedFile) -> Result<Arc<IndexRead>, NfError> {
    let id = opened.id();
    let mut memo = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = memo.iter().find(|r| r.id == id && r.path == opened.path()) {
        return Ok(r.clone());
    }
    let read = {
        let mut v = VERDICTS.lock().unwrap_or_else(|e| e.into_inner());
        Arc::new(open_judged(opened, v.as_mut())?)
    };
    let kept: usize = memo
        .iter()
        .map(|r| r.bytes.as_ref().map_or(0, Vec::len))
        .sum();
    if kept + read.bytes.as_ref().map_or(0, Vec::len) <= SHARED_BYTES {
        memo.push(read.clone());
    }
    Ok(read)
}

/// The opened index judged: from `verdicts` when it vouches for this file, else read (and,
/// when `verdicts` may record it, written back first, judged at once and recorded).
fn open_judged(
    opened: crate::fsx::OpenedFile,
    verdicts: Option<&mut Verdicts>,
) -> Result<IndexRead, NfError> {
    let id = opened.id();
    let path = opened.path().to_path_buf();
    let Some(v) = verdicts else {
        let bytes = opened.read()?;
        return Ok(IndexRead {
            id,
            path,
            bytes: Some(bytes),
            judged: OnceLock::new(),
        });
    };
    let fs = opened.fs_type().ok();
    let key = fs.filter(|&fs| v.may_vouch(&id, fs)).map(|fs| (id, fs));
    if let Some(judged) = key.and_then(|k| v.lookup(&k)) {
        return Ok(IndexRead {
            id,
            path,
            bytes: None,
            judged: OnceLock::from(judged),
        });
    }
    // Written back before the read: a write through a mapping after it faults and moves
    // `ctime` (see `Verdicts`). A write-back that fails only means nothing is recorded.
    let key = key.filter(|_| opened.write_back().is_ok());
    v.judged_anew += 1;
    let bytes = opened.read()?;
    let judged = Judged::of(&bytes);
    if let Some(k) = key {
        v.record(k, &judged);
    }
    Ok(IndexRead {
        id,
        path,
        bytes: Some(bytes),
        judged: OnceLock::from(judged),
    })
}

/// Install `verdicts` for the [`read_shared`] calls of this process until
/// [`take_verdicts`] (`wt-check check` loads them from beside its state file).
pub fn use_verdicts(verdicts: Verdicts) {
    *VERDICTS.lock().unwrap_or_else(|e| e.into_inner()) = Some(verdicts);
}

/// The installed verdicts, with what this process recorded and used, uninstalled.
pub fn take_verdicts() -> Option<Verdicts> {
    VERDICTS.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// File systems (`statfs` `f_type`) whose index files the verdict record vouches for: the
/// kernel keeps their `ctime` itself, and their `page_mkwrite` updates the file's times, so
/// a write through a shared mapping after a write-back moves `ctime`. Not tmpfs (a write
/// through a mapping never moves its times: test
/// `a_write_through_a_mapping_keeps_the_stat` and `docs/perf-wt-check.md`), not FUSE, NFS
/// or overlayfs (stamps the kernel does not keep, or another layer's).
pub const VERDICT_FS: &[(i64, &str)] = &[
    (0xEF53, "ext2/ext3/ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0xF2F5_2010, "f2fs"),
];

type VerdictKey = (FileId, i64);

/// What earlier checks decided about index files ([`IndexRead::bad_entries`] and
/// [`IndexRead::gitlinks`]), keyed by the file's identity — device, inode, size, `mtime` and
/// `ctime` to the nanosecond — and its file system, kept beside the state file (the owner's,
/// outside the agent's reach) so that the next check need not read and judge 21 unchanged
/// indexes of 460 KB.
///
/// A recorded verdict is used for a file only when all of these hold, and then vouches for
/// exactly the bytes that were judged:
/// - **The file is the same file with the same stamps.** Every way to change an index's
///   bytes that the agent has moves `ctime` to the current time, which it cannot set back:
///   `write`, `truncate`, a same-size rewrite with `mtime` put back (`touch -d` moves `ctime`),
///   a new file renamed into place or made after an unlink (another inode, or a reused inode
///   number with a new `ctime`), a hard link's write (the same inode's `ctime`).
/// - **A write through a shared mapping moves `ctime` too.** It does so only at the first
///   write to a page after the page was written back (`page_mkwrite`): before reading, the
///   check writes the file's dirty pages back (`sync_file_range`), which write-protects them
///   in every mapping, so any write after that read faults and moves `ctime`; a write before
///   it is in the bytes read. File systems whose `page_mkwrite` does not update the times
///   (tmpfs) are never vouched for ([`VERDICT_FS`]).
/// - **Racy git's rule.** A file whose `ctime` is not older than the moment the check
///   started by more than `RACY_MARGIN_NS` (1 s, far above the kernel's coarse clock tick) is
///   neither recorded nor looked up: a write in the same tick as the stamps recorded would
///   leave them equal, a write after that margin cannot.
/// - **Only complete verdicts.** A split index (its entries depend on the shared index
///   beside it) and bytes git would not read as an index are judged every time.
/// - The record is the owner's file: one that cannot be read, or is damaged, counts as
///   empty (every index is read), never as "unchanged". What the agent can do to the record
///   itself is what it can do to the state file (nothing, by the sandbox's policy).
///
/// What invalidates a verdict: any change of the file's device, inode, size, `mtime` or
/// `ctime` (nanoseconds), or of its file system type; a verdict not used by a check is
/// dropped from the record that check writes.
#[derive(Debug, Default)]
pub struct Verdicts {
    started_ns: i128,
    loaded: std::collections::HashMap<VerdictKey, Judged>,
    /// Verdicts used or recorded by this process, in order: the next record.
    kept: Vec<(VerdictKey, Judged)>,
    /// Indexes read (not taken from the record) since [`Verdicts::load`].
    pub judged_anew: usize,
}

const VERDICT_MAGIC: &[u8; 16] = b"gitward-idxv-v1\n";

impl Verdicts {
    /// No verdicts: every index is read, and those that qualify are recorded.
    pub fn empty() -> Verdicts {
        Verdicts::starting_at(crate::layout::walk_cache::now_ns())
    }

    fn starting_at(started_ns: i128) -> Verdicts {
        Verdicts {
            started_ns,
            ..Verdicts::default()
        }
    }

    /// The record at `path`; absent, unreadable or damaged: [`Verdicts::empty`].
    pub fn load(path: &Path) -> Verdicts {
        let mut v = Verdicts::empty();
        if let Ok(bytes) = crate::layout::walk_cache::read_owner_file(path) {
            if let Some(loaded) = parse_verdicts(&bytes) {
                v.loaded = loaded;
            }
        }
        v
    }

    /// Was anything recorded, or a loaded verdict left unused (the record to write differs)?
    pub fn changed(&self) -> bool {
        self.kept.len() != self.loaded.len()
            || self.kept.iter().any(|(k, _)| !self.loaded.contains_key(k))
    }

    fn may_vouch(&self, id: &FileId, fs: i64) -> bool {
        let ctime = i128::from(id.ctime.0) * 1_000_000_000 + i128::from(id.ctime.1);
        VERDICT_FS.iter().any(|(t, _)| *t == fs)
            && ctime < self.started_ns - crate::layout::walk_cache::RACY_MARGIN_NS
    }

    fn lookup(&mut self, key: &VerdictKey) -> Option<Judged> {
        let j = self.loaded.get(key)?.clone();
        if !self.kept.iter().any(|(k, _)| k == key) {
            self.kept.push((*key, j.clone()));
        }
        Some(j)
    }

    fn record(&mut self, key: VerdictKey, judged: &Judged) {
        let complete = judged.walked == Some(Walked::Complete)
            && matches!(
                judged.scan,
                Some(Scan::Gitlinks(_)) | Some(Scan::SparseDirectory(_))
            );
        if complete && !self.kept.iter().any(|(k, _)| *k == key) {
            self.kept.push((key, judged.clone()));
        }
    }

    /// The record's bytes: the verdicts used or recorded by this process.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = VERDICT_MAGIC.to_vec();
        let put = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
        let put_bytes = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            out.extend_from_slice(b);
        };
        for ((id, fs), j) in &self.kept {
            for w in [
                id.dev,
                id.ino,
                id.size as u64,
                id.mtime.0 as u64,
                id.mtime.1 as u64,
                id.ctime.0 as u64,
                id.ctime.1 as u64,
                *fs as u64,
            ] {
                put(&mut out, w);
            }
            match &j.scan {
                Some(Scan::Gitlinks(paths)) => {
                    out.push(0);
                    put(&mut out, paths.len() as u64);
                    for p in paths {
                        put_bytes(&mut out, p);
                    }
                }
                Some(Scan::SparseDirectory(d)) => {
                    out.push(1);
                    put_bytes(&mut out, d);
                }
                _ => unreachable!("only complete verdicts are kept"),
            }
            put(&mut out, j.bad.len() as u64);
            for b in &j.bad {
                put(&mut out, u64::from(b.mode));
                out.push(invalid_code(b.invalid));
                put_bytes(&mut out, &b.path);
            }
        }
        out
    }
}

fn invalid_code(i: Invalid) -> u8 {
    match i {
        Invalid::EmptyComponent => 0,
        Invalid::DotComponent => 1,
        Invalid::DotGit => 2,
        Invalid::GitmodulesLink => 3,
        Invalid::TrailingSlash => 4,
    }
}

fn invalid_of(c: u8) -> Option<Invalid> {
    Some(match c {
        0 => Invalid::EmptyComponent,
        1 => Invalid::DotComponent,
        2 => Invalid::DotGit,
        3 => Invalid::GitmodulesLink,
        4 => Invalid::TrailingSlash,
        _ => return None,
    })
}

/// The record's verdicts, or `None` if any byte of it is not as [`Verdicts::to_bytes`]
/// writes it.
fn parse_verdicts(b: &[u8]) -> Option<std::collections::HashMap<VerdictKey, Judged>> {
    let mut rest = b.strip_prefix(VERDICT_MAGIC.as_slice())?;
    let take = |rest: &mut &[u8], n: usize| -> Option<Vec<u8>> {
        if rest.len() < n {
            return None;
        }
        let (a, b) = rest.split_at(n);
        *rest = b;
        Some(a.to_vec())
    };
    let word = |rest: &mut &[u8]| -> Option<u64> {
        Some(u64::from_le_bytes(take(rest, 8)?.try_into().ok()?))
    };
    let bytes = |rest: &mut &[u8]| -> Option<Vec<u8>> {
        let n = usize::try_from(word(rest)?).ok()?;
        take(rest, n)
    };
    let mut out = std::collections::HashMap::new();
    while !rest.is_empty() {
        let mut w = [0u64; 8];
        for x in &mut w {
            *x = word(&mut rest)?;
        }
        let id = FileId {
            dev: w[0],
            ino: w[1],
            size: w[2] as i64,
            mtime: (w[3] as i64, w[4] as i64),
            ctime: (w[5] as i64, w[6] as i64),
        };
        let scan = match take(&mut rest, 1)?[0] {
            0 => {
                let n = word(&mut rest)?;
                let mut paths = Vec::new();
                for _ in 0..n {
                    paths.push(bytes(&mut rest)?);
                }
                Scan::Gitlinks(paths)
            }
            1 => Scan::SparseDirectory(bytes(&mut rest)?),
            _ => return None,
        };
        let n = word(&mut rest)?;
        let mut bad = Vec::new();
        for _ in 0..n {
            let mode = u32::try_from(word(&mut rest)?).ok()?;
            let invalid = invalid_of(take(&mut rest, 1)?[0])?;
            bad.push(BadEntry {
                path: bytes(&mut rest)?,
                mode,
                invalid,
            });
        }
        out.insert(
            (id, w[7] as i64),
            Judged {
                walked: Some(Walked::Complete),
                bad,
                scan: Some(scan),
            },
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: u32 = 0o100644;
    const LINK: u32 = 0o120000;
    const DIR: u32 = 0o040000;
    const GITLINK: u32 = 0o160000;

    #[test]
    fn honest_paths_pass() {
        for p in [
            &b"a"[..],
            b"src/main.rs",
            b".gitignore",
            b".gitattributes",
            b".github/workflows/ci.yml",
            b".gitmodules",
            b"a/.gitkeep",
            b"..a",
            b".a.",
            b"a..b/c",
            b"git",
            b"gitx/y",
            b".gitx",
            b"vendor/x",
            b"templates/hooks/pre-commit.sample",
            "d\u{e9}j\u{e0}/vu".as_bytes(),
        ] {
            assert_eq!(
                verify_path(p, FILE),
                Ok(()),
                "{}",
                String::from_utf8_lossy(p)
            );
        }
        assert_eq!(verify_path(b"vendor/x", GITLINK), Ok(()));
        assert_eq!(verify_path(b"a/", DIR), Ok(()));
        assert_eq!(verify_path(b".gitmodules", FILE), Ok(()));
        assert_eq!(verify_path(b"link", LINK), Ok(()));
    }

    #[test]
    fn what_git_refuses_is_refused() {
        use Invalid::*;
        for (p, want) in [
            (&b""[..], EmptyComponent),
            (b"/etc/passwd", EmptyComponent),
            (b"a//b", EmptyComponent),
            (b"a/", TrailingSlash),
            (b".", DotComponent),
            (b"..", DotComponent),
            (b"../home/.gitconfig", DotComponent),
            (b"a/../../x", DotComponent),
            (b"a/./b", DotComponent),
            (b".git", DotGit),
            (b".git/hooks/pre-commit", DotGit),
            (b".GIT/config", DotGit),
            (b"sub/.Git/config", DotGit),
            (b"git~1/config", DotGit),
            (b".git./config", DotGit),
            (b".git /hooks/x", DotGit),
            (b".git::$INDEX_ALLOCATION/config", DotGit),
            (b"a\\.git\\config", DotGit),
            (b"\\.git", DotGit),
            (".g\u{200c}it/config".as_bytes(), DotGit),
            ("\u{feff}.git/config".as_bytes(), DotGit),
        ] {
            assert_eq!(
                verify_path(p, FILE),
                Err(want),
                "{}",
                String::from_utf8_lossy(p)
            );
        }
        for p in [
            &b".gitmodules"[..],
            b"a/.GitModules",
            b".gitmodules .",
            b"gitmod~1",
        ] {
            assert_eq!(
                verify_path(p, LINK),
                Err(GitmodulesLink),
                "{}",
                String::from_utf8_lossy(p)
            );
        }
    }

    /// A version-2 index of `names` (file entries, stat data and oids zero, trailer zero:
    /// the walk does not hash).
    fn index_v2(names: &[String]) -> Vec<u8> {
        let mut d = b"DIRC".to_vec();
        d.extend_from_slice(&2u32.to_be_bytes());
        d.extend_from_slice(&(names.len() as u32).to_be_bytes());
        for n in names {
            let start = d.len();
            d.extend_from_slice(&[0; 24]);
            d.extend_from_slice(&FILE.to_be_bytes());
            d.extend_from_slice(&[0; 12 + 20]);
            d.extend_from_slice(&(n.len().min(0xFFF) as u16).to_be_bytes());
            d.extend_from_slice(n.as_bytes());
            let size = (62 + n.len() + 8) & !7;
            d.resize(start + size, 0);
        }
        d.extend_from_slice(&[0; 20]);
        d
    }

    /// The cost of the pass on a 10,000-entry index (printed; run with `--nocapture`), and
    /// that it finds the one bad entry among them.
    #[test]
    fn ten_thousand_entries() {
        let mut names: Vec<String> = (0..10_000)
            .map(|i| format!("d{:02}/sub/file-{i:05}.txt", i % 100))
            .collect();
        names[9_999] = "../home/.gitconfig".into();
        let data = index_v2(&names);
        let runs: u32 = 20;
        let t = std::time::Instant::now();
        let mut found = Vec::new();
        for _ in 0..runs {
            found = bad_entries(std::path::Path::new("index"), &data).unwrap();
        }
        let each = t.elapsed() / runs;
        let t = std::time::Instant::now();
        for _ in 0..runs {
            crate::safegit::gitlinks::walk(&data, &mut |_, _| {});
        }
        let walk = t.elapsed() / runs;
        eprintln!(
            "verify pass over 10,000 entries ({} bytes): {each:?} per pass, of which reading the index {walk:?}",
            data.len()
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, b"../home/.gitconfig");
        assert_eq!(found[0].invalid, Invalid::DotComponent);
    }

    /// `verify_path` as written before the fast path for plain components: every check at
    /// every component start.
    fn verify_path_reference(path: &[u8], mode: u32) -> Result<(), Invalid> {
        let is_link = mode & S_IFMT == S_IFLNK;
        let is_dir = mode & S_IFMT == S_IFDIR;
        let mut i = 0;
        loop {
            let rest = &path[i..];
            if is_hfs_dotgit(rest) || is_ntfs_dotgit(rest) {
                return Err(Invalid::DotGit);
            }
            if is_link && (is_hfs_dot(rest, b"gitmodules") || is_ntfs_dotgitmodules(rest)) {
                return Err(Invalid::GitmodulesLink);
            }
            match rest.first() {
                None => {
                    return if is_dir {
                        Ok(())
                    } else if i == 0 {
                        Err(Invalid::EmptyComponent)
                    } else {
                        Err(Invalid::TrailingSlash)
                    }
                }
                Some(b'/') => return Err(Invalid::EmptyComponent),
                Some(b'.') => verify_dotfile(&rest[1..], is_link)?,
                Some(_) => {}
            }
            let mut j = 0;
            loop {
                match rest.get(j) {
                    None => return Ok(()),
                    Some(b'/') => break,
                    Some(b'\\') => {
                        let after = &rest[j + 1..];
                        if is_ntfs_dotgit(after) {
                            return Err(Invalid::DotGit);
                        }
                        if is_link && is_ntfs_dotgitmodules(after) {
                            return Err(Invalid::GitmodulesLink);
                        }
                    }
                    Some(_) => {}
                }
                j += 1;
            }
            i += j + 1;
        }
    }

    /// The fast path for components that start with a plain ASCII byte decides as the
    /// reference does, on every path of up to three pieces from names git and NTFS/HFS+
    /// treat specially, their near misses, separators and non-ASCII starts.
    #[test]
    fn the_plain_component_shortcut_agrees_with_every_check() {
        let pieces: &[&str] = &[
            "",
            ".",
            "..",
            ".git",
            ".GIT",
            ".git.",
            ".git ",
            "git~1",
            "GIT~1",
            "git~1 .",
            ".gitmodules",
            ".GitModules ",
            "gitmod~1",
            "GITMOD~12",
            "gi7eba~3",
            ".gitmodulesx",
            "\u{200c}.git",
            ".g\u{200c}it",
            "\u{feff}.gitmodules",
            "a",
            "g",
            "G",
            "gx",
            "Git",
            "x\\.git",
            "x\\git~1",
            "x\\.gitmodules",
            "\\",
            "/",
            ":",
            ".git:x",
            "\u{e9}t\u{e9}",
            "~1",
            "-",
            "0",
            "\u{7f}",
            "\u{80}",
        ];
        let mut checked = 0;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let joined = [*a, *b, *c];
                    for sep in ["", "/"] {
                        let p = joined.join(sep);
                        for mode in [FILE, LINK, DIR, GITLINK] {
                            assert_eq!(
                                verify_path(p.as_bytes(), mode),
                                verify_path_reference(p.as_bytes(), mode),
                                "{p:?} {mode:o}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000);
    }

    fn write_index(dir: &std::path::Path, names: &[&str]) {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        std::fs::write(dir.join("index"), index_v2(&names)).unwrap();
    }

    /// The bad entries of `dir/index` judged with `v`, and whether its bytes were read
    /// (`false`: the verdict came from the record).
    fn judge_with(dir: &std::path::Path, v: &mut Verdicts) -> (Vec<BadEntry>, bool) {
        let d = Dir::open_abs(dir).unwrap();
        let opened = d.open_regular(OsStr::new("index"), 1 << 30).unwrap();
        let r = open_judged(opened, Some(v)).unwrap();
        (r.bad_entries().unwrap(), r.bytes().is_some())
    }

    fn next_check(v: &Verdicts) -> Verdicts {
        // Started far after every write of the test: only the key can tell a change.
        let mut next =
            Verdicts::starting_at(crate::layout::walk_cache::now_ns() + 3_600_000_000_000);
        next.loaded = parse_verdicts(&v.to_bytes()).expect("the record reads back");
        next
    }

    /// The verdict record across checks: an unchanged index is not read again; every change
    /// the agent can make to it — a same-size rewrite, the same with `mtime` put back
    /// (`touch -d`), a file renamed into place, one made after an unlink (inode reuse), a
    /// write through a shared mapping made before the check — is read and judged on its new
    /// bytes. Each bad index has the honest one's size, and the two differ only in a
    /// `.git` component.
    #[test]
    fn recorded_verdicts_are_not_poisoned_by_any_change_to_the_index() {
        use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
        use std::num::NonZeroUsize;
        use std::os::unix::fs::MetadataExt;
        let honest = index_v2(&["abcd/x".into(), "b".into()]);
        let bad = index_v2(&[".git/x".into(), "b".into()]);
        assert_eq!(honest.len(), bad.len());
        let t = tempfile::tempdir().unwrap();
        let cases = [
            "unchanged",
            "rewrite",
            "touch_d",
            "rename",
            "unlink",
            "mapping",
        ];
        for c in cases {
            std::fs::create_dir(t.path().join(c)).unwrap();
            std::fs::write(t.path().join(c).join("index"), &honest).unwrap();
        }
        // The agent maps the index and writes through the mapping before the check (the
        // page is dirty and writable: later writes through it would not fault).
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(t.path().join("mapping/index"))
            .unwrap();
        let len = NonZeroUsize::new(honest.len()).unwrap();
        // SAFETY: a shared mapping of a file this test owns, written only inside its
        // length, unmapped before the test ends.
        let ptr = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &f,
                0,
            )
        }
        .unwrap();
        let mapped = ptr.as_ptr().cast::<u8>();
        // SAFETY: offset 0 is inside the mapping; the same byte as before.
        unsafe { mapped.write_volatile(honest[0]) };
        // Past the racy margin: the first check may record every index.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let mut first = Verdicts::empty();
        for c in cases {
            assert!(judge_with(&t.path().join(c), &mut first).0.is_empty());
        }
        let fs = nix::sys::statfs::statfs(t.path())
            .unwrap()
            .filesystem_type()
            .0 as i64;
        if !VERDICT_FS.iter().any(|(t, _)| *t == fs) {
            // SAFETY: the mapping made above, not used after this.
            unsafe { munmap(ptr, honest.len()) }.unwrap();
            assert!(
                first.kept.is_empty(),
                "an untrusted file system was recorded"
            );
            assert!(
                std::env::var_os("CI").is_none(),
                "the temporary folder's file system ({fs:#x}) is not one the record vouches for"
            );
            eprintln!("skipped: the temporary folder's file system ({fs:#x}) is not one the record vouches for");
            return;
        }
        assert_eq!(first.kept.len(), cases.len(), "every index recorded");
        // The agent's changes.
        let dir = |c: &str| t.path().join(c);
        std::fs::write(dir("rewrite").join("index"), &bad).unwrap();
        let before = std::fs::metadata(dir("touch_d").join("index")).unwrap();
        std::fs::write(dir("touch_d").join("index"), &bad).unwrap();
        std::fs::File::options()
            .write(true)
            .open(dir("touch_d").join("index"))
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_accessed(before.accessed().unwrap())
                    .set_modified(before.modified().unwrap()),
            )
            .unwrap();
        let after = std::fs::metadata(dir("touch_d").join("index")).unwrap();
        assert_eq!(
            (after.mtime(), after.mtime_nsec(), after.len(), after.ino()),
            (
                before.mtime(),
                before.mtime_nsec(),
                before.len(),
                before.ino()
            )
        );
        std::fs::write(dir("rename").join("index.lock"), &bad).unwrap();
        std::fs::rename(
            dir("rename").join("index.lock"),
            dir("rename").join("index"),
        )
        .unwrap();
        std::fs::remove_file(dir("unlink").join("index")).unwrap();
        std::fs::write(dir("unlink").join("index"), &bad).unwrap();
        // SAFETY: the whole mapping, inside its length.
        unsafe { std::ptr::copy_nonoverlapping(bad.as_ptr(), mapped, bad.len()) };
        let mut second = next_check(&first);
        for c in cases {
            let (found, read) = judge_with(&dir(c), &mut second);
            if c == "unchanged" {
                assert!(!read && found.is_empty(), "{c}: taken from the record");
            } else {
                assert!(read, "{c}: read again");
                assert_eq!(found.len(), 1, "{c}: the bad entry is found");
                assert_eq!(found[0].invalid, Invalid::DotGit, "{c}");
            }
        }
        // SAFETY: the mapping made above, not used after this.
        unsafe { munmap(ptr, honest.len()) }.unwrap();
        // The record written by the second check keeps only what it used or judged.
        let third = next_check(&second);
        assert_eq!(third.loaded.len(), cases.len());
    }

    /// Racy git's rule: an index changed within the margin before the check started is
    /// judged but not recorded, so a write in the same clock tick after the check cannot
    /// leave a stale verdict behind.
    #[test]
    fn an_index_changed_within_the_racy_margin_is_not_recorded() {
        let t = tempfile::tempdir().unwrap();
        write_index(t.path(), &["a", "b"]);
        // The check starts at the last instant within the margin of the index's `ctime` (not
        // at the clock's now, which a stalled machine can take past the margin).
        let m = std::fs::metadata(t.path().join("index")).unwrap();
        let ctime = {
            use std::os::unix::fs::MetadataExt;
            i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
        };
        let mut v = Verdicts::starting_at(ctime + crate::layout::walk_cache::RACY_MARGIN_NS);
        let (found, read) = judge_with(t.path(), &mut v);
        assert!(found.is_empty() && read);
        assert!(v.kept.is_empty());
        assert!(!v.changed());
    }

    /// A damaged record counts as empty, never as a verdict.
    #[test]
    fn a_damaged_verdict_record_is_an_empty_one() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.json.index");
        for bytes in [
            b"not a record".to_vec(),
            [VERDICT_MAGIC.as_slice(), &[1, 2, 3]].concat(),
            Vec::new(),
        ] {
            std::fs::write(&p, &bytes).unwrap();
            assert!(Verdicts::load(&p).loaded.is_empty());
        }
    }

    /// One process reads an unchanged index once; a same-size rewrite with its `mtime` put
    /// back (`touch -d`), and an index renamed into place, are read again and judged on
    /// their own bytes. The rewrite differs from the first file only in `ctime`: the test
    /// fails if the identity leaves `ctime` out.
    #[test]
    fn read_shared_reads_a_changed_index_again() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        write_index(&base, &["a/b.txt", "c/d.txt"]);
        let dir = Dir::open_abs(&base).unwrap();
        let name = OsStr::new("index");
        let first = read_shared(&dir, name, 1 << 20).unwrap();
        assert!(first.bad_entries().unwrap().is_empty());
        assert!(Arc::ptr_eq(
            &first,
            &read_shared(&dir, name, 1 << 20).unwrap()
        ));
        let before = std::fs::metadata(base.join("index")).unwrap();

        // Same size, same inode, mtime and atime put back. Past the file clock's tick first:
        // a kernel without fine-grained timestamps (before 6.13) stamps a rewrite within the
        // same tick (a few ms) with the same `ctime`, and the rewrite would be the same file.
        std::thread::sleep(std::time::Duration::from_millis(30));
        write_index(&base, &["a/b.txt", "c/.GIT"]);
        let times = |m: &std::fs::Metadata| {
            use std::os::unix::fs::MetadataExt;
            (
                nix::sys::time::TimeSpec::new(m.atime(), m.atime_nsec()),
                nix::sys::time::TimeSpec::new(m.mtime(), m.mtime_nsec()),
            )
        };
        let (at, mt) = times(&before);
        nix::sys::stat::utimensat(
            nix::fcntl::AT_FDCWD,
            &base.join("index"),
            &at,
            &mt,
            nix::sys::stat::UtimensatFlags::NoFollowSymlink,
        )
        .unwrap();
        let after = std::fs::metadata(base.join("index")).unwrap();
        {
            use std::os::unix::fs::MetadataExt;
            assert_ne!(
                (after.ctime(), after.ctime_nsec()),
                (before.ctime(), before.ctime_nsec()),
                "the rewrite's ctime is the first write's"
            );
            assert_eq!(
                (after.ino(), after.size(), after.mtime(), after.mtime_nsec()),
                (
                    before.ino(),
                    before.size(),
                    before.mtime(),
                    before.mtime_nsec()
                )
            );
        }
        let second = read_shared(&dir, name, 1 << 20).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(second.bad_entries().unwrap().len(), 1);
        assert!(second.gitlinks().is_some());

        // Renamed into place.
        let names: Vec<String> = vec!["a/b.txt".into(), "c/d.txt".into()];
        std::fs::write(base.join("index.new"), index_v2(&names)).unwrap();
        std::fs::rename(base.join("index.new"), base.join("index")).unwrap();
        let third = read_shared(&dir, name, 1 << 20).unwrap();
        assert!(third.bad_entries().unwrap().is_empty());
        assert_eq!(third.bytes(), Some(index_v2(&names).as_slice()));

        // Unreadable bytes stay an error every time; a link is refused, not followed.
        std::fs::write(base.join("index"), &index_v2(&names)[..40]).unwrap();
        for _ in 0..2 {
            assert!(read_shared(&dir, name, 1 << 20)
                .unwrap()
                .bad_entries()
                .is_err());
        }
        std::fs::remove_file(base.join("index")).unwrap();
        assert!(read_shared(&dir, name, 1 << 20).unwrap_err().is_not_found());
        std::os::unix::fs::symlink(base.join("index.new"), base.join("index")).unwrap();
        assert!(read_shared(&dir, name, 1 << 20).unwrap_err().is_link());
    }

    /// Why no verdict is kept for the *next* check by the index file's stat (device, inode,
    /// size, `mtime`, `ctime`), as the walk's listing record is kept by a folder's: the
    /// agent can write the index through a shared writable mapping, and a write to a page
    /// already dirty changes the bytes without touching any of the five (Linux updates the
    /// times in `page_mkwrite`, once per page between writebacks; tmpfs never). A record
    /// taken between two such writes would vouch for the second content. Tried a few times:
    /// a writeback between the two writes (another process's `sync`) makes the second one
    /// update the times.
    #[test]
    fn a_write_through_a_mapping_keeps_the_stat() {
        use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
        use std::num::NonZeroUsize;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("index");
        let id = |p: &std::path::Path| {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(p).unwrap();
            (
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            )
        };
        let mut seen = false;
        for _ in 0..5 {
            std::fs::write(&p, vec![b'a'; 4096]).unwrap();
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&p)
                .unwrap();
            let len = NonZeroUsize::new(4096).unwrap();
            // SAFETY: a fresh shared mapping of a 4096-byte file this test owns, written
            // only inside its length and unmapped before the file is dropped.
            let ptr = unsafe {
                mmap(
                    None,
                    len,
                    ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                    MapFlags::MAP_SHARED,
                    &f,
                    0,
                )
            }
            .unwrap();
            let bytes = ptr.as_ptr().cast::<u8>();
            // SAFETY: offsets 0 and 1 are inside the mapping.
            unsafe { bytes.write_volatile(b'b') };
            let (stat1, content1) = (id(&p), std::fs::read(&p).unwrap());
            // SAFETY: as above.
            unsafe { bytes.add(1).write_volatile(b'c') };
            let (stat2, content2) = (id(&p), std::fs::read(&p).unwrap());
            // SAFETY: the mapping made above, not used after this.
            unsafe { munmap(ptr, 4096) }.unwrap();
            assert_ne!(content1, content2);
            if stat1 == stat2 {
                seen = true;
                break;
            }
        }
        assert!(
            seen,
            "every write through the mapping changed the stat: reconsider the note on read_shared"
        );
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let st = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    }

    /// Every index reader goes through here: an index or a shared index that is a FIFO (or a
    /// link to one) is an error at once, never a hang (R16-11); an honest index, split or
    /// not, reads as gix reads it from the path.
    #[test]
    fn indexes_are_read_without_a_blocking_open() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("r");
        std::fs::create_dir(&r).unwrap();
        git(&r, &["init", "-q"]);
        std::fs::write(r.join("a"), "a").unwrap();
        std::fs::write(r.join("b"), "b").unwrap();
        git(&r, &["add", "a", "b"]);
        let index = r.join(".git/index");
        let names = |f: &gix::index::File| {
            f.entries()
                .iter()
                .map(|e| e.path(f).to_string())
                .collect::<Vec<_>>()
        };
        let direct = |p: &Path| {
            gix::index::File::at(p, gix::hash::Kind::Sha1, false, Default::default()).unwrap()
        };
        assert_eq!(
            names(&read_index(&index, false).unwrap().unwrap()),
            names(&direct(&index))
        );
        assert!(read_index(&r.join(".git/none"), false).unwrap().is_none());
        // Split: the same entries, read through private copies.
        git(&r, &["update-index", "--split-index"]);
        std::fs::write(r.join("c"), "c").unwrap();
        git(&r, &["add", "c"]);
        let split = read_index(&index, false).unwrap().unwrap();
        assert_eq!(names(&split), names(&direct(&index)));
        assert_eq!(names(&split), ["a", "b", "c"]);
        // The shared index a FIFO, then a link to one: an error, promptly.
        let Some(crate::safegit::gitlinks::Walked::Split(id)) =
            crate::safegit::gitlinks::walk(&std::fs::read(&index).unwrap(), &mut |_, _| {})
        else {
            panic!("not a split index");
        };
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let shared = r.join(".git").join(format!("sharedindex.{hex}"));
        assert!(shared.is_file());
        let fifo = |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::rename(&shared, t.path().join("kept")).unwrap();
        fifo(&shared);
        assert!(read_index(&index, false).is_err());
        std::fs::remove_file(&shared).unwrap();
        fifo(&t.path().join("f"));
        std::os::unix::fs::symlink(t.path().join("f"), &shared).unwrap();
        assert!(read_index(&index, false).is_err());
        // The index itself a FIFO.
        std::fs::remove_file(&index).unwrap();
        fifo(&index);
        assert!(read_index(&index, false).is_err());
    }
}
