//! Object substitution: a loose object whose stored content no longer hashes to its id.
//!
//! git does not verify that a blob's content hashes to its name when it checks the blob out
//! or diffs it. The agent can write `objects/` (it must, to commit), so it can rewrite a loose
//! object of the owner's trusted history in place (`chmod u+w`, write a zlib stream of
//! `blob <n>\0<evil>`): no ref moves, and the owner's next `git checkout` writes the evil
//! content into a work tree the agent never wrote.
//!
//! At pin, [`pin`] verifies every loose object (a substitute is left out of the record and
//! refuses the pin unless `--accept-armed`) and records the identity of every loose object
//! file (`objects/xx/<38 hex>`):
//! device, inode, size, `mtime` and `ctime` (seconds and nanoseconds), in `<state>.objects`
//! beside the state file (the owner's folder, outside the agent's reach, as the state file).
//! At check, [`check`] `lstat`s every loose object file (one `fstatat` each) and inflates and
//! hashes (SHA-1, git's `<type> <size>\0<content>`) every one that is new, whose identity
//! differs from the record, or that has a write bit. A file
//! whose content does not hash to its name (or does not inflate, or has bytes after its zlib
//! stream) is reported as `object_substituted` (rule [`crate::catalogue::OBJECT_RULE`]); an
//! entry in `objects/xx/` named as an object that is not a regular file (git's `open` follows
//! a symbolic link), and an `objects/xx` that is not a folder, likewise.
//!
//! The stamps are trusted only on the file systems of `layout::walk_cache::TRUSTED_FS` less
//! tmpfs (a write through a shared mapping there moves no time); elsewhere every loose object
//! is verified at every check.
//!
//! Why the identity is enough: any write to a file moves its `ctime`, which no unprivileged
//! process can set back (`utimensat` sets `mtime` and moves `ctime` to now); a rename over it
//! changes its inode; a hard link made to it or removed moves its `ctime` (so a second link
//! is no reason by itself: a local `git clone` hard-links every loose object, and a write
//! through the other name moves the same inode's `ctime`). A write through a shared mapping
//! on a file system without `page_mkwrite` time updates (tmpfs) moves no time, but stamps are
//! not trusted there at all; a write bit makes the file verified at every check, whatever
//! its stamps.
//!
//! With `--restore` a reported file is moved aside into the run's quarantine (never
//! deleted). Its true content cannot be put back: the file held only the substitute. The
//! event says whether the id is still found in a pack or an alternate (git then reads that
//! copy; packs are not verified by this step) or is now missing (the owner fetches it again
//! from a trusted remote).
//!
//! Bounds: at most [`FILE_LIMIT`] loose files looked at, [`VERIFY_LIMIT`] verified and
//! [`BYTE_LIMIT`] inflated bytes per check; past any of them the check is incomplete (exit 2,
//! fail closed), naming the bound. A record that is missing (a state pinned by an older
//! build) makes every loose object verified; one that cannot be read or parsed makes the check
//! incomplete.
//!
//! Not covered (see `docs/wt-check.md`, "Object substitution"): packs and their `.idx`,
//! `.rev`, `.bitmap`, `multi-pack-index`, submodule object stores. The commit-graph is
//! [`super::graph`]'s (GW-OBJ-002).

use super::restore::Quarantine;
use super::{Key, Outcome};
use crate::events::{Event, EventKind, Tool};
use crate::fsx::{EntryKind, FsError, Root};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, fstatat, Mode, SFlag};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Most loose object files looked at (pin and check) before the result is incomplete.
pub const FILE_LIMIT: usize = 4_000_000;
/// Most loose object files inflated and hashed in one check.
pub const VERIFY_LIMIT: usize = 1_000_000;
/// Most inflated bytes hashed in one check (the sum over every object verified).
pub const BYTE_LIMIT: u64 = 16 << 30;
/// tmpfs's `statfs` type: its stamps are not trusted (see [`check`]).
const TMPFS_MAGIC: i64 = 0x0102_1994;
/// First line of the record file.
const HEADER: &str = "gitward-objects 1";

/// A loose object file's identity and change stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: i64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    /// The identity and change stamps `fstat`/`lstat` gave.
    pub fn of(st: &nix::sys::stat::FileStat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }

    /// Whether a record may hold this identity, taken with `fstat` after the file's dirty
    /// pages were written back, in a run that started at `started_ns`
    /// ([`crate::layout::walk_cache::now_ns`]): its `ctime` is older than that start by
    /// [`crate::layout::walk_cache::RACY_MARGIN_NS`] (twenty-first red-team pass, R21-1).
    ///
    /// Why: after the write-back, the first write through a shared mapping faults and moves
    /// `ctime` to the clock's now — unless the inode's `ctime` already holds that value (the
    /// file system's clock is coarse, and its `ctime` may keep whole seconds). A write in the
    /// gap between the write-back and the `fstat` leaves the page dirty and writable, so every
    /// later write through the mapping moves nothing; such a write moved `ctime` to a time
    /// after the run's start, which this test refuses. A `ctime` a second older than the
    /// start cannot be the value a write after the write-back sets. Not recorded, the file is
    /// verified again by the next run (cost only).
    pub fn recordable(&self, started_ns: i128) -> bool {
        i128::from(self.ctime.0) * 1_000_000_000 + i128::from(self.ctime.1)
            < started_ns - crate::layout::walk_cache::RACY_MARGIN_NS
    }
}

/// The name of a file type for messages (`symbolic link`, `folder`, `fifo`, …).
pub(super) fn kind_name(mode: u32) -> &'static str {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFLNK => "symbolic link",
        SFlag::S_IFDIR => "folder",
        SFlag::S_IFIFO => "fifo",
        SFlag::S_IFSOCK => "socket",
        SFlag::S_IFREG => "regular file",
        _ => "device",
    }
}

/// One entry of `objects/xx/` (or `objects/xx` itself, or of `objects/pack/`) as `lstat`
/// saw it: the one description the object checks (`objects`, `packs`) share.
#[derive(Debug, Clone)]
pub(super) enum Seen {
    /// A regular file: its stamp, whether it has a write bit.
    File { stamp: Stamp, must_verify: bool },
    /// Anything else (a symbolic link, a folder, a fifo, …), by its kind's name.
    Other(&'static str),
}

/// Where the record of the state file `state` is kept: `<state>.objects`.
pub fn record_path(state: &Path) -> Option<PathBuf> {
    let mut n = state.file_name()?.to_os_string();
    n.push(".objects");
    Some(state.with_file_name(n))
}

fn is_hex(b: &[u8]) -> bool {
    b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// `objects/` of `common_dir`, opened from `/` without following any link; `None` when
/// there is none.
fn open_objects(common_dir: &Path) -> Result<Option<Root>, FsError> {
    let sys = Root::system()?;
    let rel = common_dir.strip_prefix("/").map_err(|_| FsError::Escape {
        path: common_dir.to_path_buf(),
    })?;
    match sys.open_dir(rel.join("objects")) {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every loose object entry: `(rel, seen)` with `rel` = `xx/<38 hex>` (or `xx` for a
/// fan-out entry that is not a folder). Names git does not read as objects (`tmp_obj_*`,
/// `pack`, `info`) are skipped.
fn walk(objects: &Root) -> Result<Vec<(String, Seen)>, FsError> {
    let mut out = Vec::new();
    for (name, kind) in objects.list_kinds("")? {
        let b = name.as_bytes();
        if b.len() != 2 || !is_hex(b) {
            continue;
        }
        let fan = name.to_string_lossy().into_owned();
        if kind != EntryKind::Dir {
            out.push((fan, Seen::Other(kind.name())));
            continue;
        }
        let (dir, list) = match objects.open_dir_listed(&name) {
            Ok(x) => x,
            Err(e) if e.is_not_found() => continue,
            Err(FsError::Link { .. }) => {
                out.push((fan, Seen::Other("symbolic link")));
                continue;
            }
            Err(e) => return Err(e),
        };
        for (leaf, _) in list {
            let lb = leaf.as_bytes();
            if lb.len() != 38 || !is_hex(lb) {
                continue;
            }
            if out.len() >= FILE_LIMIT {
                return Err(FsError::TooLarge {
                    path: objects.path().to_path_buf(),
                    limit: FILE_LIMIT as u64,
                });
            }
            let st = match fstatat(
                dir.as_fd(),
                leaf.as_os_str(),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                Ok(st) => st,
                Err(nix::errno::Errno::ENOENT) => continue,
                Err(e) => return Err(io_err(dir.path().join(&leaf), "lstat", e)),
            };
            // Both names are ASCII hex (checked above).
            let mut rel = String::with_capacity(41);
            rel.push_str(&fan);
            rel.push('/');
            rel.push_str(std::str::from_utf8(lb).unwrap_or_default());
            out.push((rel, seen_of(&st)));
        }
    }
    Ok(out)
}

/// What `lstat` says of one object file: a regular file's identity (and a write bit: verified
/// whatever its stamps), or the kind of anything else.
pub(super) fn seen_of(st: &nix::sys::stat::FileStat) -> Seen {
    if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return Seen::Other(kind_name(st.st_mode));
    }
    Seen::File {
        stamp: Stamp::of(st),
        // A second link is no reason (a local `git clone` hard-links every object file and
        // the commit-graph): see the module's note on the identity.
        must_verify: st.st_mode & 0o222 != 0,
    }
}

/// One record line (without its newline): `xx/<38 hex> dev ino size mtime_s mtime_ns
/// ctime_s ctime_ns`, into `buf` (cleared first).
fn render_line(buf: &mut String, rel: &str, t: &Stamp) {
    buf.clear();
    buf.push_str(rel);
    for (neg, n) in [
        (false, t.dev),
        (false, t.ino),
        (t.size < 0, t.size.unsigned_abs()),
        (t.mtime.0 < 0, t.mtime.0.unsigned_abs()),
        (t.mtime.1 < 0, t.mtime.1.unsigned_abs()),
        (t.ctime.0 < 0, t.ctime.0.unsigned_abs()),
        (t.ctime.1 < 0, t.ctime.1.unsigned_abs()),
    ] {
        buf.push(' ');
        push_int(buf, neg, n);
    }
}

/// `n` (negated when `neg`) in decimal, what `{}` prints, without the formatting machinery:
/// this runs once per loose object file at every check.
fn push_int(buf: &mut String, neg: bool, mut v: u64) {
    if neg {
        buf.push('-');
    }
    let mut d = [0u8; 20];
    let mut i = d.len();
    loop {
        i -= 1;
        d[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.push_str(std::str::from_utf8(&d[i..]).unwrap_or_default());
}

/// The record's text: each regular file's identity, less those [`Stamp::recordable`] refuses
/// for a run started at `started_ns`.
fn render(entries: &[(String, Seen)], started_ns: i128) -> Vec<u8> {
    let mut s = String::with_capacity(entries.len() * 96 + 32);
    s.push_str(HEADER);
    s.push('\n');
    let mut line = String::new();
    for (rel, seen) in entries {
        if let Seen::File { stamp, .. } = seen {
            if !stamp.recordable(started_ns) {
                continue;
            }
            render_line(&mut line, rel, stamp);
            s.push_str(&line);
            s.push('\n');
        }
    }
    s.into_bytes()
}

/// The record's lines in order (sorted by path, as [`walk`] lists them), after its header;
/// `Err` when the header is not this build's.
fn record_lines(
    bytes: &[u8],
) -> Result<std::slice::Split<'_, u8, impl FnMut(&u8) -> bool>, String> {
    let mut lines = bytes.split(|b| *b == b'\n');
    if lines.next() != Some(HEADER.as_bytes()) {
        return Err(format!("does not start with {HEADER:?}"));
    }
    Ok(lines)
}

/// Record the identity of every loose object of `common_dir` beside `state`, after
/// verifying each (the baseline must not take a substituted object as the owner's: a
/// session that ended without its check could have left one). Returns how many were
/// recorded, and the loose objects that do not verify, each as `(rel, why)`: those are left
/// out of the record, so every `check` reports them until they are gone.
pub fn pin(common_dir: &Path, state: &Path) -> Result<(usize, Vec<(String, String)>), String> {
    let started = crate::layout::walk_cache::now_ns();
    let path = record_path(state).ok_or_else(|| format!("{}: no file name", state.display()))?;
    let (mut entries, objects) = match open_objects(common_dir).map_err(|e| e.to_string())? {
        Some(o) => (walk(&o).map_err(|e| e.to_string())?, Some(o)),
        None => (Vec::new(), None),
    };
    let mut bad = Vec::new();
    if let Some(objects) = &objects {
        let mut verifier = None;
        let mut fan_dir = None;
        let mut budget = BYTE_LIMIT;
        let mut keep = Vec::with_capacity(entries.len());
        for (rel, seen) in entries {
            let why = match &seen {
                Seen::Other(kind) => Some(format!("is a {kind}, not a regular file")),
                Seen::File { .. } => {
                    let (fan, leaf) = rel.split_at(2);
                    match open_verify_seen(
                        objects,
                        &mut fan_dir,
                        fan,
                        &leaf[1..],
                        verifier.get_or_insert_with(Verifier::new),
                        &mut budget,
                    ) {
                        // The record holds what was verified (see `open_verify_seen`).
                        Ok((None, verified)) => {
                            keep.push((rel, verified));
                            continue;
                        }
                        Ok((Some(b), _)) => Some(b.why()),
                        Err(None) => {
                            return Err(format!(
                                "more than {BYTE_LIMIT} inflated bytes of loose objects: not all verified"
                            ))
                        }
                        Err(Some(e)) if e.is_not_found() => continue,
                        Err(Some(e)) => return Err(format!("cannot verify {rel}: {e}")),
                    }
                }
            };
            match why {
                None => keep.push((rel, seen)),
                Some(w) => bad.push((rel, w)),
            }
        }
        entries = keep;
    }
    let n = entries
        .iter()
        .filter(|(_, s)| matches!(s, Seen::File { .. }))
        .count();
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("{}: no parent folder", path.display()));
    };
    let dir = super::nf::Dir::open_trusted(parent).map_err(|e| e.to_string())?;
    dir.write_atomic(name, &render(&entries, started), 0o600)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((n, bad))
}

/// Why a loose object file does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bad {
    /// It inflates to content whose id is this one.
    Hash(String),
    /// It does not inflate, or has bytes after its zlib stream, or SHA-1 collision detection
    /// fired.
    Corrupt(String),
}

impl Bad {
    fn why(&self) -> String {
        match self {
            Bad::Hash(h) => format!("its content hashes to {h}"),
            Bad::Corrupt(w) => w.clone(),
        }
    }
}

/// The inflated-byte budget of one check ran out before an object was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

/// Inflate the loose object stream `rd` and hash what comes out; `Ok(None)` when it hashes
/// to `name` (40 hex). `budget` is the inflated bytes still allowed this check.
pub fn verify(rd: &mut impl Read, name: &str, budget: &mut u64) -> Result<Option<Bad>, OverBudget> {
    Verifier::new().verify(rd, name, budget)
}

/// The inflater and buffers of one check, reused from object to object.
struct Verifier {
    z: gix::zlib::Decompress,
    inbuf: Vec<u8>,
    out: Vec<u8>,
}

impl Verifier {
    fn new() -> Verifier {
        Verifier {
            z: gix::zlib::Decompress::new(),
            inbuf: vec![0u8; 64 << 10],
            out: vec![0u8; 64 << 10],
        }
    }

    fn verify(
        &mut self,
        rd: &mut impl Read,
        name: &str,
        budget: &mut u64,
    ) -> Result<Option<Bad>, OverBudget> {
        use gix::zlib::{FlushDecompress, Status};
        let Verifier { z, inbuf, out } = self;
        z.reset();
        let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
        let (mut start, mut end) = (0usize, 0usize);
        let mut eof = false;
        let corrupt = |w: &str| Ok(Some(Bad::Corrupt(w.to_owned())));
        loop {
            if start == end && !eof {
                match rd.read(inbuf) {
                    Ok(0) => eof = true,
                    Ok(k) => (start, end) = (0, k),
                    Err(e) => return corrupt(&format!("cannot be read: {e}")),
                }
            }
            let (bi, bo) = (z.total_in(), z.total_out());
            let flush = if eof {
                FlushDecompress::Finish
            } else {
                FlushDecompress::None
            };
            let st = z.decompress(&inbuf[start..end], out, flush);
            let used = (z.total_in() - bi) as usize;
            let made = (z.total_out() - bo) as usize;
            start += used;
            if made as u64 > *budget {
                return Err(OverBudget);
            }
            *budget -= made as u64;
            h.update(&out[..made]);
            match st {
                Ok(Status::StreamEnd) => break,
                Ok(_) if used == 0 && made == 0 && eof => {
                    return corrupt("its zlib stream is cut short")
                }
                Ok(_) => {}
                Err(e) => return corrupt(&format!("does not inflate: {e}")),
            }
        }
        // git refuses a loose object with bytes after its stream ("garbage at end").
        if start < end {
            return corrupt("has bytes after its zlib stream");
        }
        let mut probe = [0u8; 1];
        match rd.read(&mut probe) {
            Ok(0) => {}
            Ok(_) => return corrupt("has bytes after its zlib stream"),
            Err(e) => return corrupt(&format!("cannot be read: {e}")),
        }
        match h.try_finalize() {
            Ok(id) => {
                let id = id.to_string();
                Ok((id != name).then_some(Bad::Hash(id)))
            }
            Err(e) => corrupt(&e.to_string()),
        }
    }
}

/// What became of one reported object file.
struct Finding {
    rel: String,
    /// `substituted` (the content does not hash to the name) or `not-a-file`.
    change: &'static str,
    why: String,
}

/// Check every loose object of the object store in `common` against the records named after `state`;
/// with `restore`, set aside what fails. `integrity::stores` calls it for every store.
pub(super) fn check_at(
    common: &Path,
    repo: &Path,
    session: Option<&str>,
    state: &Path,
    restore: bool,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    let mk = |kind: EventKind, msg: String, path: &Path| {
        Event::new(Tool::WtCheck, kind, msg)
            .session(session)
            .repo(repo)
            .path(path)
    };
    let incomplete = |why: String, path: &Path, emit: &mut dyn FnMut(Event)| {
        emit(mk(EventKind::CheckIncomplete, why, path));
        Outcome::Incomplete
    };
    // The record: absent (pinned by an older build) means "verify everything". A line that
    // is damaged or out of order matches nothing: that file is verified (never skipped).
    let bytes = match record_path(state) {
        None => Vec::new(),
        Some(p) => match crate::fsx::Root::open(p.parent().unwrap_or(Path::new("/")))
            .and_then(|r| r.read_opt(p.file_name().unwrap_or_default(), 1 << 30))
        {
            Ok(None) => Vec::new(),
            Ok(Some(bytes)) => match record_lines(&bytes) {
                Ok(_) => bytes,
                Err(w) => {
                    return incomplete(
                        format!("{}: object record unreadable: {w}; pin again", p.display()),
                        &p,
                        emit,
                    )
                }
            },
            Err(e) => {
                return incomplete(format!("object record unreadable: {e}"), &p, emit);
            }
        },
    };
    let mut record = record_lines(&bytes).ok();
    let mut rec_cur: Option<&[u8]> = record.as_mut().and_then(|r| r.next());
    let mut line = String::new();
    let objects = match open_objects(common) {
        Ok(Some(o)) => o,
        Ok(None) => return Outcome::Clean,
        Err(e) => {
            return incomplete(
                format!("cannot read the loose objects: {e}"),
                &common.join("objects"),
                emit,
            )
        }
    };
    let entries = match walk(&objects) {
        Ok(v) => v,
        Err(e) => {
            return incomplete(
                format!("cannot read the loose objects: {e}"),
                &common.join("objects"),
                emit,
            )
        }
    };
    // Stamps are trusted only where `ctime` is known to move on every change, writes through
    // a shared mapping included (the walk cache's list less tmpfs, whose mapped writes move
    // no time: an agent with CAP_DAC_OVERRIDE opens a read-only file for writing without a
    // `chmod`); elsewhere every loose object is verified at every check.
    let stamps_trusted = stamps_trusted(&objects);
    let mut findings = Vec::new();
    // Made on the first object to verify (its buffers and inflater cost ~150 k instructions).
    let mut verifier: Option<Verifier> = None;
    let mut fan_dir: Option<(String, Root)> = None;
    let mut budget = BYTE_LIMIT;
    let mut verified = 0usize;
    let mut outcome = Outcome::Clean;
    for (rel, seen) in entries {
        match seen {
            Seen::Other(kind) => findings.push(Finding {
                change: "not-a-file",
                why: format!("is a {kind}, not a regular file (git follows a link to read it)"),
                rel,
            }),
            Seen::File { stamp, must_verify } => {
                // Merge with the record (both sorted by path): skip the record's lines
                // before this path, then compare the whole line.
                while let (Some(l), Some(r)) = (rec_cur, record.as_mut()) {
                    if l.get(..41).unwrap_or(l) < rel.as_bytes() {
                        rec_cur = r.next();
                    } else {
                        break;
                    }
                }
                render_line(&mut line, &rel, &stamp);
                if stamps_trusted && !must_verify && rec_cur == Some(line.as_bytes()) {
                    continue;
                }
                if verified >= VERIFY_LIMIT {
                    outcome = outcome.and(incomplete(
                        format!(
                            "more than {VERIFY_LIMIT} loose objects new or changed since the pin: the rest were not verified"
                        ),
                        &common.join("objects"),
                        emit,
                    ));
                    break;
                }
                verified += 1;
                let (fan, leaf) = rel.split_at(2);
                let leaf = &leaf[1..];
                let path = common.join("objects").join(&rel);
                match open_verify(
                    &objects,
                    &mut fan_dir,
                    fan,
                    leaf,
                    verifier.get_or_insert_with(Verifier::new),
                    &mut budget,
                ) {
                    Ok(None) => {}
                    Ok(Some(bad)) => findings.push(Finding {
                        change: "substituted",
                        why: bad.why(),
                        rel,
                    }),
                    Err(None) => {
                        outcome = outcome.and(incomplete(
                            format!(
                                "more than {BYTE_LIMIT} inflated bytes of loose objects new or changed since the pin: the rest were not verified"
                            ),
                            &path,
                            emit,
                        ));
                        break;
                    }
                    Err(Some(e)) => {
                        if e.is_not_found() {
                            continue;
                        }
                        if e.is_link() {
                            findings.push(Finding {
                                change: "not-a-file",
                                why: "is a symbolic link (git follows it to read the object)"
                                    .into(),
                                rel,
                            });
                            continue;
                        }
                        outcome = outcome.and(incomplete(
                            format!("cannot verify the loose object: {e}"),
                            &path,
                            emit,
                        ));
                    }
                }
            }
        }
    }
    if findings.is_empty() {
        return outcome;
    }
    outcome = outcome.and(Outcome::Found);
    let mut q = restore.then(|| Quarantine::new(state));
    for f in findings {
        let path = common.join("objects").join(&f.rel);
        let id = f.rel.replace('/', "");
        let mut e = mk(
            EventKind::ObjectSubstituted,
            format!(
                "{}: loose object {id} {}: git reads this content under that id without checking it",
                path.display(),
                f.why
            ),
            &path,
        )
        .with("rule", crate::catalogue::OBJECT_RULE.0)
        .with("change", f.change)
        .with("id", id.clone())
        .with("why", f.why.clone());
        match q.as_mut() {
            None => {
                e = e.with("action", "report");
                emit(e);
            }
            Some(q) => match set_aside(common, &f.rel, q) {
                Ok(dest) => {
                    emit(
                        mk(
                            EventKind::Quarantined,
                            format!("{} moved to {}", path.display(), dest.display()),
                            &path,
                        )
                        .with("quarantine", dest.display().to_string()),
                    );
                    let still = still_found(common, &id);
                    e = e
                        .with("action", "quarantined")
                        .with("quarantine", dest.display().to_string())
                        .with(
                            "after",
                            if still {
                                "the id is still found in a pack or an alternate; git now reads that copy (packs are not verified by this check)"
                            } else {
                                "the id is now missing: its true content is gone from this repository; fetch it again from a trusted remote"
                            },
                        );
                    emit(e);
                }
                Err(err) => {
                    emit(e.with("action", "report"));
                    emit(mk(
                        EventKind::RestoreFailed,
                        format!("{}: cannot move aside: {err}", path.display()),
                        &path,
                    ));
                    outcome = outcome.and(Outcome::Incomplete);
                }
            },
        }
    }
    outcome
}

/// Whether the stamps of files in `objects` can stand for their content (see [`check`]).
fn stamps_trusted(objects: &Root) -> bool {
    stamps_trusted_at(objects)
}

/// [`stamps_trusted`] for any folder (the commit-graph check, `super::graph`, uses it for
/// `objects/info`).
pub(super) fn stamps_trusted_at(objects: &Root) -> bool {
    nix::sys::statfs::fstatfs(objects.as_fd()).is_ok_and(|f| {
        let t = f.filesystem_type().0;
        t != TMPFS_MAGIC
            && crate::layout::walk_cache::TRUSTED_FS
                .iter()
                .any(|(m, _)| *m == t)
    })
}

/// Open `fan/leaf` below `objects` without following a link or blocking, check it is a
/// regular file, and verify it. `Err(None)`: the byte budget ran out.
fn open_verify(
    objects: &Root,
    fan_dir: &mut Option<(String, Root)>,
    fan: &str,
    leaf: &str,
    verifier: &mut Verifier,
    budget: &mut u64,
) -> Result<Option<Bad>, Option<FsError>> {
    open_verify_seen(objects, fan_dir, fan, leaf, verifier, budget).map(|(bad, _)| bad)
}

/// [`open_verify`], and what the verified descriptor is: its identity taken with `fstat`
/// after its dirty pages were written back and before its bytes were read — what `pin`
/// records (R15-1, R15-2):
/// - the write-back: a page dirtied through a shared writable mapping before the pin and
///   written after it moves no time (ext4 moves `ctime` at the first write fault after
///   writeback only); written back here, any later write through a mapping faults and moves
///   `ctime`, and a write before it is in the bytes verified (as for the index verdicts);
/// - the descriptor's identity, not the walk's `lstat`: a fan-out folder exchanged with
///   another between the walk and the open (`renameat2(RENAME_EXCHANGE)` keeps every file's
///   stamps) made the record hold the identity of a file that was never verified.
fn open_verify_seen(
    objects: &Root,
    fan_dir: &mut Option<(String, Root)>,
    fan: &str,
    leaf: &str,
    verifier: &mut Verifier,
    budget: &mut u64,
) -> Result<(Option<Bad>, Seen), Option<FsError>> {
    if fan_dir.as_ref().is_none_or(|(f, _)| f != fan) {
        *fan_dir = Some((fan.to_owned(), objects.open_dir(fan).map_err(Some)?));
    }
    let dir = &fan_dir.as_ref().expect("set above").1;
    let full = dir.path().join(leaf);
    let fd = openat(
        dir.as_fd(),
        OsStr::new(leaf),
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        Some(match e {
            nix::errno::Errno::ELOOP => FsError::Link { path: full.clone() },
            nix::errno::Errno::ENOENT => FsError::NotFound { path: full.clone() },
            e => io_err(full.clone(), "open", e),
        })
    })?;
    let st = fstat(&fd).map_err(|e| Some(io_err(full.clone(), "fstat", e)))?;
    if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return Ok((
            Some(Bad::Corrupt("is not a regular file".into())),
            seen_of(&st),
        ));
    }
    crate::fsx::write_back(std::os::fd::AsFd::as_fd(&fd))
        .map_err(|e| Some(io_err(full.clone(), "sync_file_range", e)))?;
    let st = fstat(&fd).map_err(|e| Some(io_err(full.clone(), "fstat", e)))?;
    let mut f = std::fs::File::from(fd);
    let name = format!("{fan}{leaf}");
    let bad = verifier
        .verify(&mut f, &name, budget)
        .map_err(|OverBudget| None)?;
    Ok((bad, seen_of(&st)))
}

/// Move `rel` (`xx/<38 hex>`) below `objects` into the quarantine; where it went.
fn set_aside(common: &Path, rel: &str, q: &mut Quarantine) -> Result<PathBuf, FsError> {
    let (fan, leaf) = rel.split_at(2);
    let (src, name) = if leaf.is_empty() {
        (super::nf::Dir::open_abs(&common.join("objects"))?, fan)
    } else {
        (
            super::nf::Dir::open_abs(&common.join("objects").join(fan))?,
            &leaf[1..],
        )
    };
    let (qdir, qname, dest) = q.slot(&Key::Rel(format!("objects/{rel}")))?;
    src.move_out(OsStr::new(name), &qdir, &qname)?;
    Ok(dest)
}

/// Whether `id` is still found in the object store (a pack, an alternate) after its loose
/// file was moved aside.
fn still_found(common: &Path, id: &str) -> bool {
    let Ok(oid) = gix::ObjectId::from_hex(id.as_bytes()) else {
        return false;
    };
    match gix::odb::at(common.join("objects"), gix::hash::Kind::Sha1) {
        Ok(store) => {
            use gix::objs::Exists;
            store.exists(&oid)
        }
        Err(_) => false,
    }
}

fn io_err(path: PathBuf, op: &'static str, e: nix::errno::Errno) -> FsError {
    FsError::Io {
        path,
        op,
        source: e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn deflate(raw: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut w = gix::zlib::stream::deflate::Write::new(Vec::new(), Default::default());
        w.write_all(raw).unwrap();
        w.flush().unwrap();
        w.into_inner()
    }

    /// The record as `pin` writes it, but without verifying (`pin` leaves a bad object
    /// out): stands for stamps that did not move although the content did.
    fn record_unverified(common: &Path, state: &Path) {
        let entries = walk(&open_objects(common).unwrap().unwrap()).unwrap();
        std::fs::write(record_path(state).unwrap(), render(&entries, i128::MAX)).unwrap();
    }

    /// What a check of an unchanged-stamp substitute gives on the test's file system: skipped
    /// (clean) where stamps are trusted, verified (found) elsewhere (tmpfs).
    fn skip_outcome(common: &Path) -> Outcome {
        if stamps_trusted(&open_objects(common).unwrap().unwrap()) {
            Outcome::Clean
        } else {
            eprintln!("stamps not trusted on this file system: every object verified");
            Outcome::Found
        }
    }

    fn run(common: &Path, state: &Path) -> (Outcome, Vec<Event>) {
        let mut ev = Vec::new();
        let o = check_at(common, common, None, state, false, &mut |e| ev.push(e));
        (o, ev)
    }

    /// A repository with one blob ("hello\n"), pinned; (tmp, common dir, state, object path).
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let repo = root.join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("f"), "hello\n").unwrap();
        let id = git(&repo, &["hash-object", "-w", "f"]);
        let common = repo.join(".git");
        let p = common.join("objects").join(&id[..2]).join(&id[2..]);
        let state = root.join("st.json");
        assert_eq!(pin(&common, &state).unwrap(), (1, vec![]));
        (t, common, state, p)
    }

    /// A zlib stream of one stored block: its size depends on `raw`'s length only, so two
    /// contents of one length give streams of one size (what a same-size rewrite needs).
    fn stored(raw: &[u8]) -> Vec<u8> {
        let len = u16::try_from(raw.len()).unwrap();
        let mut out = vec![0x78, 0x01, 0x01];
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(raw);
        let (mut a, mut b) = (1u32, 0u32);
        for &x in raw {
            a = (a + u32::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        out.extend_from_slice(&((b << 16) | a).to_be_bytes());
        out
    }

    /// R15-1: a page of a loose object dirtied through a shared writable mapping before the
    /// pin and rewritten through it after moves no time (ext4 moves `ctime` only at the
    /// first write fault after writeback). `pin` writes each object back before recording
    /// it, so the later write faults and moves `ctime`, and the check verifies the file.
    /// Fails on a pin without the write-back ("the substitute was not verified").
    #[test]
    fn a_write_through_a_mapping_dirtied_before_the_pin_is_verified() {
        use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
        let (t, common, state, p) = setup();
        if !stamps_trusted(&open_objects(&common).unwrap().unwrap()) {
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "TMPDIR on ext4");
            eprintln!("SKIPPED: stamps are not trusted on this file system");
            return;
        }
        // The object as one stored block: "hello\n" and "evil!\n" give files of one size.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, stored(b"blob 6\0hello\n")).unwrap();
        let forged = stored(b"blob 6\0evil!\n");
        assert_eq!(forged.len(), std::fs::metadata(&p).unwrap().len() as usize);
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        let len = std::num::NonZeroUsize::new(forged.len()).unwrap();
        // SAFETY: a fresh shared mapping of a file this test owns, unmapped below.
        let map = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &f,
                0,
            )
            .unwrap()
        };
        let bytes = map.cast::<u8>().as_ptr();
        // Dirty the page with the byte it holds, then pin.
        // SAFETY: within the mapping.
        unsafe { bytes.write_volatile(bytes.read_volatile()) };
        drop(f);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(pin(&common, &state).unwrap(), (1, vec![]));
        assert_eq!(run(&common, &state).0, Outcome::Clean, "honest, as pinned");
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SAFETY: within the mapping; unmapped once.
        unsafe {
            std::ptr::copy_nonoverlapping(forged.as_ptr(), bytes, forged.len());
            munmap(map, forged.len()).unwrap();
        }
        assert_eq!(
            std::fs::read(&p).unwrap(),
            forged,
            "the mapping wrote the file"
        );
        let (o, ev) = run(&common, &state);
        assert_eq!(o, Outcome::Found, "the substitute was not verified: {ev:?}");
        drop(t);
    }

    #[test]
    fn verify_accepts_git_objects_and_refuses_others() {
        let raw = b"blob 6\0hello\n";
        let id = "ce013625030ba8dba906f756967f9e9ca394464a";
        let mut budget = 1 << 20;
        assert_eq!(verify(&mut &deflate(raw)[..], id, &mut budget), Ok(None));
        assert_eq!(budget, (1 << 20) - raw.len() as u64);
        // Other content under the id.
        let r = verify(&mut &deflate(b"blob 5\0evil\n")[..], id, &mut budget);
        assert!(matches!(r, Ok(Some(Bad::Hash(_)))), "{r:?}");
        // The right content plus bytes inside the stream (git would read `size` bytes).
        let r = verify(&mut &deflate(b"blob 6\0hello\nextra")[..], id, &mut budget);
        assert!(matches!(r, Ok(Some(Bad::Hash(_)))), "{r:?}");
        // Bytes after the stream; a stream cut short; not zlib at all.
        let mut z = deflate(raw);
        z.push(0);
        assert!(matches!(
            verify(&mut &z[..], id, &mut budget),
            Ok(Some(Bad::Corrupt(_)))
        ));
        let z = deflate(raw);
        let cut = &z[..z.len() - 3];
        assert!(matches!(
            verify(&mut &cut[..], id, &mut budget),
            Ok(Some(Bad::Corrupt(_)))
        ));
        assert!(matches!(
            verify(&mut &b"plain"[..], id, &mut budget),
            Ok(Some(Bad::Corrupt(_)))
        ));
    }

    #[test]
    fn verify_stops_at_the_byte_budget() {
        let big = [b"blob 100000\0".as_slice(), &vec![b'a'; 100_000]].concat();
        let mut budget = 50_000;
        assert_eq!(
            verify(&mut &deflate(&big)[..], "00", &mut budget),
            Err(OverBudget)
        );
        let mut budget = 200_000;
        assert!(verify(&mut &deflate(&big)[..], "00", &mut budget).is_ok());
    }

    #[test]
    fn push_int_prints_what_display_prints() {
        for n in [0i64, 7, -7, 10, 1796535809, -1, i64::MAX, i64::MIN] {
            let mut b = String::new();
            push_int(&mut b, n < 0, n.unsigned_abs());
            assert_eq!(b, n.to_string());
        }
        let mut b = String::new();
        push_int(&mut b, false, u64::MAX);
        assert_eq!(b, u64::MAX.to_string());
    }

    #[test]
    fn record_lines_need_the_header() {
        assert!(record_lines(b"gitward-objects 2\n").is_err());
        assert!(record_lines(b"").is_err());
        let mut l = record_lines(b"gitward-objects 1\nab/x 1\n").unwrap();
        assert_eq!(l.next(), Some(&b"ab/x 1"[..]));
    }

    /// A damaged line (or one out of order) matches nothing: its file is verified.
    #[test]
    fn a_damaged_record_line_never_skips() {
        let (_t, common, state, p) = setup();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, deflate(b"blob 5\0evil\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        record_unverified(&common, &state);
        let rec = record_path(&state).unwrap();
        // Positive control: the re-taken record skips the file.
        assert_eq!(run(&common, &state).0, skip_outcome(&common));
        let text = std::fs::read_to_string(&rec).unwrap();
        let damaged = text
            .replacen(&format!("{HEADER}\n"), "", 1)
            .replacen(' ', "  ", 1);
        std::fs::write(&rec, format!("{HEADER}\n{damaged}")).unwrap();
        assert_eq!(run(&common, &state).0, Outcome::Found);
        // Out of order: a line sorting after the file's comes first.
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(1, "ff/ffffffffffffffffffffffffffffffffffffff 0 0 0 0 0 0 0");
        std::fs::write(&rec, lines.join("\n") + "\n").unwrap();
        assert_eq!(run(&common, &state).0, Outcome::Found);
    }

    /// The stamp skip is what lets an unchanged file through; a write bit (or a second
    /// link) overrides it. The record is re-taken after the substitution to stand for a write
    /// that moved no stamp (a shared mapping on tmpfs).
    #[test]
    fn writable_or_linked_files_are_verified_whatever_their_stamps() {
        let (t, common, state, p) = setup();
        assert_eq!(run(&common, &state).0, Outcome::Clean);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, deflate(b"blob 5\0evil\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        assert_eq!(run(&common, &state).0, Outcome::Found);
        // Stamps re-recorded: the skip applies (positive control of the skip itself).
        record_unverified(&common, &state);
        assert_eq!(run(&common, &state).0, skip_outcome(&common));
        // A write bit: verified despite matching stamps.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        record_unverified(&common, &state);
        let (o, ev) = run(&common, &state);
        assert_eq!(o, Outcome::Found);
        assert_eq!(ev[0].event, EventKind::ObjectSubstituted);
        // A second link made after the record moves the stamps: verified. One recorded as
        // such (a local clone hard-links every loose object) is skipped as any other.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        record_unverified(&common, &state);
        assert_eq!(run(&common, &state).0, skip_outcome(&common));
        std::fs::hard_link(&p, t.path().join("second")).unwrap();
        assert_eq!(run(&common, &state).0, Outcome::Found);
        record_unverified(&common, &state);
        assert_eq!(run(&common, &state).0, skip_outcome(&common));
    }

    #[test]
    fn names_git_does_not_read_are_ignored() {
        let (_t, common, state, p) = setup();
        let dir = p.parent().unwrap();
        std::fs::write(dir.join("tmp_obj_abc"), "junk").unwrap();
        std::fs::write(common.join("objects/zz"), "junk").unwrap();
        std::fs::write(dir.join("ABCDEF0123456789ABCDEF0123456789ABCDEF"), "junk").unwrap();
        assert_eq!(run(&common, &state).0, Outcome::Clean);
        // Positive control: a hex name with junk is reported.
        std::fs::write(dir.join("0".repeat(38)), "junk").unwrap();
        assert_eq!(run(&common, &state).0, Outcome::Found);
    }
}
