//! Forged commit-graph (GW-OBJ-002): a commit-graph file whose entries do not match the
//! commit objects they index.
//!
//! git takes a commit's root tree, parents, commit date and generation from the commit-graph
//! (`objects/info/commit-graph`, or the split chain `objects/info/commit-graphs/
//! commit-graph-chain` and the `graph-<hash>.graph` files it names) without checking them
//! against the commit object (`repo_get_commit_tree` → `get_commit_tree_in_graph`,
//! `parse_commit_in_graph`). The agent can write `objects/`, so it can rewrite a graph so
//! that a commit of the owner's trusted history names a tree the agent made: the owner's
//! later `git cherry-pick`/`checkout` of that commit writes the agent's content.
//!
//! This module reads the format itself ([`parse`]: header `CGPH`, version 1, hash version 1,
//! the chunk table; `OIDF`, `OIDL`, `CDAT`, `EDGE`, `GDA2`/`GDO2`, `BIDX`/`BDAT`, `BASE`;
//! unknown chunks skipped) from bytes read with `read` from a descriptor opened `O_NOFOLLOW
//! | O_NONBLOCK` and checked regular (never mapped: the agent could truncate it under us),
//! and verifies every commit of a graph as `git commit-graph verify` does ([`verify_chain`]):
//! OIDs sorted and the fan-out consistent; the commit object exists, is a commit, and its
//! tree, parents (positions resolved across the chain, base layers first; `EDGE` lists for
//! octopus merges) and commit date equal the graph's; generation numbers consistent
//! (topological level ≥ 1 + the parents' highest, corrected commit date > the parents'
//! highest); the file's checksum trailer; for a chain, each layer's `BASE` chunk naming
//! exactly the layers below it and its trailer equal to its name. Anything that does not
//! parse as git writes it is a finding too (git would ignore or die on it; either way it
//! is not what git wrote).
//!
//! Changed-path Bloom filters (`BIDX`/`BDAT`) are checked for shape only (`BIDX` monotone
//! and within `BDAT`, `BDAT`'s header sane): a wrong filter can hide a commit from
//! `git log -- <path>` (it hides, it writes nothing); checking the filters' content costs a
//! tree diff per commit and is not done.
//!
//! At pin ([`pin`]) every graph file whose identity (device, inode, size, `mtime`, `ctime`:
//! [`super::objects::Stamp`]) is not in the previous record of the same state is verified; a
//! graph that does not verify refuses the pin (unless `--accept-armed`) and is left out of
//! the record. The identities of the files that verified are written to `<state>.graphs`.
//! At check ([`check`]) each graph file is opened and `fstat`ed; a graph (the single file,
//! or the chain) any of whose files is new, has another identity than the record's, has a
//! write bit, or lies on a file system whose stamps are not trusted
//! (`objects::stamps_trusted`), is read and verified. For a chain, the layers from the
//! lowest changed one upward are verified against the commit objects, the unchanged layers
//! below them only read (their positions, OIDs and generations are what the upper layers
//! refer to; each was verified in the configuration its `BASE` chunk names, at the files that
//! are still there unchanged). A forged graph is reported as `commit_graph_forged` (rule
//! [`crate::catalogue::OBJECT_GRAPH_RULE`]); with `--restore` the single file, or the chain
//! file and every graph file it names, are moved into the run's quarantine: git then walks
//! without a graph (safe, slower).
//!
//! Bounds: at most [`COMMIT_LIMIT`] commits verified and [`BYTE_LIMIT`] bytes of graph files
//! read per run, [`LAYER_LIMIT`] layers per chain; past any, the result is incomplete (exit
//! 2), naming the bound. A SHA-256 graph is reported as not supported (incomplete).

use super::objects::{kind_name, stamps_trusted_at, Stamp};
use super::restore::Quarantine;
use super::{Key, Outcome};
use crate::events::{Event, EventKind, Tool};
use crate::fsx::{FsError, Root};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, fstatat, Mode, SFlag};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most commits verified against their objects per run.
pub const COMMIT_LIMIT: usize = 5_000_000;
/// Most bytes of graph files read per run.
pub const BYTE_LIMIT: u64 = 4 << 30;
/// Most bytes of one graph file (read whole into memory): a 5,000,000-commit graph with
/// changed-path filters is ≈ 400 MB. A larger (perhaps sparse) file is not read: incomplete.
pub const FILE_BYTES_LIMIT: u64 = 512 << 20;
/// Most layers of one chain.
pub const LAYER_LIMIT: usize = 10_000;
/// First line of the record file.
const HEADER: &str = "gitward-graphs 1";
/// The single graph file, below `objects/info`.
pub const SINGLE: &str = "commit-graph";
/// The chain folder, below `objects/info`.
pub const CHAIN_DIR: &str = "commit-graphs";
/// The chain file, below [`CHAIN_DIR`].
pub const CHAIN_FILE: &str = "commit-graph-chain";

const HASH_LEN: usize = 20;
const GRAPH_PARENT_NONE: u32 = 0x7000_0000;
const EXTRA_EDGES_NEEDED: u32 = 0x8000_0000;
const EDGE_LAST_MASK: u32 = 0x7fff_ffff;
const LAST_EDGE: u32 = 0x8000_0000;
const GENERATION_V1_MAX: u64 = 0x3FFF_FFFF;
const OFFSET_OVERFLOW: u32 = 0x8000_0000;

const fn id(s: &[u8; 4]) -> u32 {
    u32::from_be_bytes(*s)
}
const OIDF: u32 = id(b"OIDF");
const OIDL: u32 = id(b"OIDL");
const CDAT: u32 = id(b"CDAT");
const EDGE: u32 = id(b"EDGE");
const GDA2: u32 = id(b"GDA2");
const GDO2: u32 = id(b"GDO2");
const BIDX: u32 = id(b"BIDX");
const BDAT: u32 = id(b"BDAT");
const BASE: u32 = id(b"BASE");

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Why a graph cannot be judged (not a finding: the run is incomplete).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// A SHA-256 graph.
    Sha256,
}

/// One parsed graph file (held in memory: read, never mapped).
#[derive(Debug, Clone)]
pub struct Graph {
    data: Vec<u8>,
    /// Commits in this file.
    pub num_commits: u32,
    /// Header's count of base layers.
    pub num_base: u8,
    oidl: (usize, usize),
    cdat: usize,
    edge: (usize, usize),
    gda2: Option<usize>,
    gdo2: (usize, usize),
    base: (usize, usize),
    /// The file's checksum trailer, hex.
    pub trailer: String,
}

impl Graph {
    /// The OID at lexicographic index `i`.
    pub fn oid(&self, i: u32) -> &[u8] {
        let at = self.oidl.0 + i as usize * HASH_LEN;
        &self.data[at..at + HASH_LEN]
    }
    fn cdat_entry(&self, i: u32) -> &[u8] {
        let at = self.cdat + i as usize * (HASH_LEN + 16);
        &self.data[at..at + HASH_LEN + 16]
    }
    /// The root tree the graph gives commit `i`.
    pub fn tree(&self, i: u32) -> &[u8] {
        &self.cdat_entry(i)[..HASH_LEN]
    }
    /// The commit date (34 bits) the graph gives commit `i`.
    pub fn date(&self, i: u32) -> u64 {
        let e = self.cdat_entry(i);
        (u64::from(be32(e, HASH_LEN + 8) & 0x3) << 32) | u64::from(be32(e, HASH_LEN + 12))
    }
    /// The topological level (generation v1) of commit `i`.
    pub fn topo(&self, i: u32) -> u64 {
        u64::from(be32(self.cdat_entry(i), HASH_LEN + 8) >> 2)
    }
    /// The corrected commit date of commit `i` (`GDA2`/`GDO2`), `None` without `GDA2`;
    /// `Some(Err)` when it points past `GDO2` or overflows.
    pub fn corrected(&self, i: u32) -> Option<Result<u64, String>> {
        let at = self.gda2? + i as usize * 4;
        let off = be32(&self.data, at);
        let date = self.date(i);
        Some(if off & OFFSET_OVERFLOW != 0 {
            let k = (off ^ OFFSET_OVERFLOW) as usize;
            if k >= self.gdo2.1 / 8 {
                Err(format!(
                    "its generation data points past the overflow chunk (entry {k})"
                ))
            } else {
                date.checked_add(be64(&self.data, self.gdo2.0 + k * 8))
                    .ok_or_else(|| "its corrected commit date overflows".to_owned())
            }
        } else {
            Ok(date + u64::from(off))
        })
    }
    /// The raw parent fields of commit `i`: as git reads them, positions (`Err`: an `EDGE`
    /// index out of bounds).
    fn parent_positions(&self, i: u32) -> Result<Vec<u32>, String> {
        let e = self.cdat_entry(i);
        let p1 = be32(e, HASH_LEN);
        let mut out = Vec::new();
        if p1 == GRAPH_PARENT_NONE {
            return Ok(out);
        }
        out.push(p1);
        let p2 = be32(e, HASH_LEN + 4);
        if p2 == GRAPH_PARENT_NONE {
            return Ok(out);
        }
        if p2 & EXTRA_EDGES_NEEDED == 0 {
            out.push(p2);
            return Ok(out);
        }
        let mut k = (p2 & EDGE_LAST_MASK) as usize;
        let n = self.edge.1 / 4;
        loop {
            if k >= n {
                return Err(format!(
                    "its extra-edges pointer is out of bounds (entry {k} of {n})"
                ));
            }
            let v = be32(&self.data, self.edge.0 + k * 4);
            out.push(v & EDGE_LAST_MASK);
            if v & LAST_EDGE != 0 {
                return Ok(out);
            }
            k += 1;
        }
    }
    /// The `BASE` chunk's i-th graph name, hex.
    fn base_name(&self, i: usize) -> Option<String> {
        if (i + 1) * HASH_LEN > self.base.1 {
            return None;
        }
        let at = self.base.0 + i * HASH_LEN;
        Some(hex(&self.data[at..at + HASH_LEN]))
    }
    fn has_generation_data(&self) -> bool {
        self.gda2.is_some()
    }
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Parse a graph file's bytes; `Err(Ok(why))` when it is not a graph as git writes it,
/// `Err(Err(_))` when it is a kind this build does not read.
pub fn parse(data: Vec<u8>) -> Result<Graph, Result<String, Unsupported>> {
    parse_layer(data, true)
}

/// [`parse`]; the checksum trailer is compared with the SHA-1 of the content only when
/// `checksum` (a lower layer of a chain unchanged since the record was verified then, with
/// its checksum: hashing it again is most of an incremental check's cost — 127 M
/// instructions for git.git's 5.7 MB graph).
fn parse_layer(data: Vec<u8>, checksum: bool) -> Result<Graph, Result<String, Unsupported>> {
    let bad = |w: String| Err(Ok(w));
    let len = data.len();
    if len < 8 + 12 + HASH_LEN {
        return bad(format!("is too small ({len} bytes)"));
    }
    if &data[..4] != b"CGPH" {
        return bad("does not start with the signature CGPH".into());
    }
    if data[4] != 1 {
        return bad(format!("has version {} (git reads 1)", data[4]));
    }
    match data[5] {
        1 => {}
        2 => return Err(Err(Unsupported::Sha256)),
        v => return bad(format!("has hash version {v}")),
    }
    let chunks = usize::from(data[6]);
    let num_base = data[7];
    let toc_end = 8 + (chunks + 1) * 12;
    let body_end = len - HASH_LEN;
    if toc_end > body_end {
        return bad(format!("has a chunk table of {chunks} chunks past its end"));
    }
    let mut found: HashMap<u32, (usize, usize)> = HashMap::new();
    let mut prev_end = toc_end;
    for c in 0..chunks {
        let at = 8 + c * 12;
        let cid = be32(&data, at);
        let off = be64(&data, at + 4);
        let next = be64(&data, at + 16);
        if cid == 0 {
            return bad("has a terminating chunk id earlier than its count says".into());
        }
        // git writes the chunks one after the other, right after the table.
        if off != prev_end as u64 || next < off || next > body_end as u64 {
            return bad(format!(
                "has improper chunk offsets {off:#x} and {next:#x} (chunk {})",
                String::from_utf8_lossy(&cid.to_be_bytes())
            ));
        }
        if found.insert(cid, (off as usize, next as usize)).is_some() {
            return bad(format!(
                "has chunk {} twice",
                String::from_utf8_lossy(&cid.to_be_bytes())
            ));
        }
        prev_end = next as usize;
    }
    let term = 8 + chunks * 12;
    if be32(&data, term) != 0 {
        return bad("has a final chunk with a non-zero id".into());
    }
    if prev_end != body_end || (chunks == 0 && be64(&data, term + 4) != body_end as u64) {
        return bad(format!(
            "has bytes between its last chunk and its trailer ({prev_end} ≠ {body_end})"
        ));
    }
    let get = |cid: u32| found.get(&cid).map(|&(a, b)| (a, b - a));
    let name = |cid: u32| String::from_utf8_lossy(&cid.to_be_bytes()).into_owned();
    let Some((oidf, oidf_len)) = get(OIDF) else {
        return bad("has no OID fan-out chunk (OIDF)".into());
    };
    if oidf_len != 256 * 4 {
        return bad(format!("has an OIDF chunk of {oidf_len} bytes (git: 1024)"));
    }
    let num_commits = be32(&data, oidf + 255 * 4);
    let n = num_commits as usize;
    let Some(oidl) = get(OIDL) else {
        return bad("has no OID lookup chunk (OIDL)".into());
    };
    if oidl.1 != n * HASH_LEN {
        return bad(format!(
            "has an OIDL chunk of {} bytes for {n} commits",
            oidl.1
        ));
    }
    let Some((cdat, cdat_len)) = get(CDAT) else {
        return bad("has no commit data chunk (CDAT)".into());
    };
    if cdat_len != n * (HASH_LEN + 16) {
        return bad(format!(
            "has a CDAT chunk of {cdat_len} bytes for {n} commits"
        ));
    }
    let edge = get(EDGE).unwrap_or((0, 0));
    if edge.1 % 4 != 0 {
        return bad("has an EDGE chunk whose size is not a multiple of 4".into());
    }
    let gda2 = match get(GDA2) {
        None => None,
        Some((a, l)) if l == n * 4 => Some(a),
        Some((_, l)) => return bad(format!("has a GDA2 chunk of {l} bytes for {n} commits")),
    };
    let gdo2 = get(GDO2).unwrap_or((0, 0));
    if gdo2.1 % 8 != 0 {
        return bad("has a GDO2 chunk whose size is not a multiple of 8".into());
    }
    let base = get(BASE).unwrap_or((0, 0));
    if base.1 != usize::from(num_base) * HASH_LEN {
        return bad(format!(
            "has a BASE chunk of {} bytes for {num_base} base graphs",
            base.1
        ));
    }
    // Fan-out monotone, OIDs strictly sorted, each in its fan-out bucket.
    let mut prev = 0u32;
    for b in 0..256 {
        let v = be32(&data, oidf + b * 4);
        if v < prev {
            return bad(format!("has fan-out values out of order (byte {b:#04x})"));
        }
        prev = v;
    }
    let mut lo = 0u32;
    for b in 0..256usize {
        let hi = be32(&data, oidf + b * 4);
        for i in lo..hi {
            let at = oidl.0 + i as usize * HASH_LEN;
            let o = &data[at..at + HASH_LEN];
            if usize::from(o[0]) != b {
                return bad(format!(
                    "has OID {} outside its fan-out bucket {b:#04x}",
                    hex(o)
                ));
            }
            if i > 0 && data[at - HASH_LEN..at] >= *o {
                return bad(format!("has OIDs out of order at {}", hex(o)));
            }
        }
        lo = hi;
    }
    // Changed-path Bloom filters: shape only (see the module comment).
    match (get(BIDX), get(BDAT)) {
        (None, None) => {}
        (Some((bi, bl)), Some((bd, dl))) => {
            if bl != n * 4 {
                return bad(format!("has a BIDX chunk of {bl} bytes for {n} commits"));
            }
            if dl < 12 {
                return bad(format!("has a BDAT chunk of {dl} bytes (header: 12)"));
            }
            let hv = be32(&data, bd);
            if !(1..=2).contains(&hv) || be32(&data, bd + 4) == 0 || be32(&data, bd + 8) == 0 {
                return bad("has a BDAT header git does not write".into());
            }
            let mut p = 0u32;
            for i in 0..n {
                let v = be32(&data, bi + i * 4);
                if v < p || v as usize > dl - 12 {
                    return bad(format!(
                        "has a Bloom filter index out of order or past BDAT (commit {})",
                        hex(&data[oidl.0 + i * HASH_LEN..oidl.0 + (i + 1) * HASH_LEN])
                    ));
                }
                p = v;
            }
        }
        (Some(_), None) => return bad("has a BIDX chunk without BDAT".into()),
        (None, Some(_)) => return bad("has a BDAT chunk without BIDX".into()),
    }
    let _ = name;
    // The checksum trailer: SHA-1 of everything before it (what `git commit-graph verify`
    // checks, and what names a chain's layers).
    let trailer = hex(&data[body_end..]);
    if checksum {
        let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
        h.update(&data[..body_end]);
        let sum = match h.try_finalize() {
            Ok(id) => id.to_string(),
            Err(e) => return bad(format!("its checksum trips collision detection: {e}")),
        };
        if sum != trailer {
            return bad(format!(
                "has the checksum {trailer}, but its content hashes to {sum}"
            ));
        }
    }
    Ok(Graph {
        num_commits,
        num_base,
        oidl,
        cdat,
        edge,
        gda2,
        gdo2,
        base,
        trailer,
        data,
    })
}

/// What a commit object says, as git's `parse_commit_buffer` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFacts {
    pub tree: [u8; HASH_LEN],
    pub parents: Vec<[u8; HASH_LEN]>,
    /// The commit date as git 2.43 and later parse it, and as earlier gits did (they differ
    /// on malformed committer lines); either is what an honest writer may have stored.
    pub dates: [u64; 2],
}

fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn oid_hex(b: &[u8]) -> Option<[u8; HASH_LEN]> {
    let mut o = [0u8; HASH_LEN];
    for (i, x) in o.iter_mut().enumerate() {
        *x = (hexval(*b.get(2 * i)?)? << 4) | hexval(*b.get(2 * i + 1)?)?;
    }
    Some(o)
}

/// `strtoumax(p, NULL, 10)` on a buffer that ends at `b`'s end (git's buffers end in NUL).
fn strtoumax(b: &[u8]) -> u64 {
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut v: u64 = 0;
    let mut over = false;
    while i < b.len() && b[i].is_ascii_digit() {
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(b[i] - b'0')))
        {
            Some(x) => v = x,
            None => over = true,
        }
        i += 1;
    }
    if over {
        u64::MAX
    } else if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// The author/committer prelude both versions of `parse_commit_date` share: the committer
/// line's start, or `None` (date 0).
fn committer_line(buf: &[u8]) -> Option<usize> {
    let tail = buf.len();
    if 6 >= tail || &buf[..6] != b"author" {
        return None;
    }
    let mut i = 0;
    while i < tail {
        i += 1;
        if buf[i - 1] == b'\n' {
            break;
        }
    }
    if i + 9 >= tail || &buf[i..i + 9] != b"committer" {
        return None;
    }
    Some(i)
}

/// git ≥ 2.43's `parse_commit_date`: the digits after the last `>` of the committer line.
fn commit_date_new(buf: &[u8]) -> u64 {
    let Some(start) = committer_line(buf) else {
        return 0;
    };
    let Some(eol) = buf[start..]
        .iter()
        .position(|&c| c == b'\n')
        .map(|p| start + p)
    else {
        return 0;
    };
    let mut d = eol;
    while d > start && buf[d - 1] != b'>' {
        d -= 1;
    }
    if d == start {
        return 0;
    }
    // git's `isspace` (sane_ctype: space, tab, LF, CR; no LF before `eol`).
    while d < eol && matches!(buf[d], b' ' | b'\t' | b'\r') {
        d += 1;
    }
    if !(buf[d].is_ascii_digit() || buf[d] == b'-') {
        return 0;
    }
    strtoumax(&buf[d..])
}

/// git < 2.43's `parse_commit_date`: what follows the first `>` of the committer line.
fn commit_date_old(buf: &[u8]) -> u64 {
    let Some(mut i) = committer_line(buf) else {
        return 0;
    };
    let tail = buf.len();
    while i < tail {
        i += 1;
        if buf[i - 1] == b'>' {
            break;
        }
    }
    if i >= tail {
        return 0;
    }
    let d = i;
    while i < tail {
        i += 1;
        if buf[i - 1] == b'\n' {
            break;
        }
    }
    if i >= tail {
        return 0;
    }
    strtoumax(&buf[d..])
}

/// git's `parse_commit_buffer` (tree, parents, date) on a commit object's bytes; `Err` where
/// git refuses the object ("bogus commit object", "bad tree pointer", "bad parents").
pub fn commit_facts(buf: &[u8]) -> Result<CommitFacts, String> {
    let tail = buf.len();
    let tree_len = 40 + 5;
    let parent_len = 40 + 7;
    if tail <= tree_len + 1 || &buf[..5] != b"tree " || buf[tree_len] != b'\n' {
        return Err("bogus commit object".into());
    }
    let tree = oid_hex(&buf[5..45]).ok_or("bad tree pointer")?;
    let mut p = tree_len + 1;
    let mut parents = Vec::new();
    while p + parent_len < tail && &buf[p..p + 7] == b"parent " {
        if tail <= p + parent_len + 1 || buf[p + parent_len] != b'\n' {
            return Err("bad parents".into());
        }
        parents.push(oid_hex(&buf[p + 7..p + 47]).ok_or("bad parents")?);
        p += parent_len + 1;
    }
    let rest = &buf[p..];
    Ok(CommitFacts {
        tree,
        parents,
        dates: [commit_date_new(rest), commit_date_old(rest)],
    })
}

/// One problem found in a graph: the commit (hex) it concerns, if any, the field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub commit: Option<String>,
    pub field: &'static str,
    pub why: String,
}

/// How many problems one graph group reports at most (the count is given in full).
const PROBLEMS_SHOWN: usize = 20;

/// A source of commit objects.
pub trait Commits {
    /// The commit object's bytes; `Ok(None)` when missing, `Err(kind)` when it is another
    /// kind of object, `Err` text on a read error.
    fn commit(&mut self, oid: &[u8]) -> Result<Option<Vec<u8>>, String>;
}

/// Budgets of one run.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub commits: usize,
    pub bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            commits: COMMIT_LIMIT,
            bytes: BYTE_LIMIT,
        }
    }
}

/// The run stopped: a bound was reached, or a graph kind is not supported; the text says
/// which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop(pub String);

/// Verify the layers `layers` (base first; `names[i]` is layer i's file name for the
/// problems) of one graph or chain: the commits of layers `from..` against `objects`, the
/// structure of all. Returns the problems found (empty: the graph is what git wrote).
pub fn verify_chain(
    layers: &[Graph],
    names: &[String],
    chain: bool,
    from: usize,
    objects: &mut dyn Commits,
    budget: &mut Budget,
) -> Result<Vec<Problem>, Stop> {
    let mut problems = Vec::new();
    let mut push = |p: Problem| problems.push(p);
    // Structure across the chain: layer i has i bases, named (and checksummed) as the layers
    // below it; the chain's layers are named by their checksums.
    let mut starts = Vec::with_capacity(layers.len());
    let mut total: u64 = 0;
    for (i, g) in layers.iter().enumerate() {
        starts.push(total as u32);
        total += u64::from(g.num_commits);
        if total > u64::from(u32::MAX) - 1 || total >= u64::from(GRAPH_PARENT_NONE) {
            push(Problem {
                file: names[i].clone(),
                commit: None,
                field: "structure",
                why: "the chain holds more commits than a graph position can name".into(),
            });
            return Ok(problems);
        }
        if chain {
            let want = format!("graph-{}.graph", g.trailer);
            if !names[i].ends_with(&want) {
                push(Problem {
                    file: names[i].clone(),
                    commit: None,
                    field: "structure",
                    why: format!("its checksum {} is not its name", g.trailer),
                });
            }
            if usize::from(g.num_base) != i {
                push(Problem {
                    file: names[i].clone(),
                    commit: None,
                    field: "structure",
                    why: format!(
                        "it names {} base graphs but is layer {i} of the chain",
                        g.num_base
                    ),
                });
            }
            for (j, lower) in layers.iter().enumerate().take(i) {
                if g.base_name(j).as_deref() != Some(lower.trailer.as_str()) {
                    push(Problem {
                        file: names[i].clone(),
                        commit: None,
                        field: "structure",
                        why: format!(
                            "its BASE chunk does not name layer {j} ({}) of the chain",
                            lower.trailer
                        ),
                    });
                }
            }
        } else if g.num_base != 0 {
            push(Problem {
                file: names[i].clone(),
                commit: None,
                field: "structure",
                why: format!("it names {} base graphs but is not in a chain", g.num_base),
            });
        }
    }
    if !problems.is_empty() {
        return Ok(problems);
    }
    // Every layer has generation data, or git reads none of it (`validate_mixed_generation_chain`).
    let gen_data = layers.iter().all(Graph::has_generation_data);
    let locate = |pos: u32| -> Option<(usize, u32)> {
        let i = starts.partition_point(|&s| s <= pos).checked_sub(1)?;
        let lex = pos - starts[i];
        (lex < layers[i].num_commits).then_some((i, lex))
    };
    for (li, g) in layers.iter().enumerate().skip(from) {
        let file = &names[li];
        for i in 0..g.num_commits {
            if budget.commits == 0 {
                return Err(Stop(format!(
                    "more than {COMMIT_LIMIT} commit-graph entries to verify: the rest were not verified"
                )));
            }
            budget.commits -= 1;
            let oid = g.oid(i);
            let commit = Some(hex(oid));
            let mut bad = |field: &'static str, why: String| {
                problems.push(Problem {
                    file: file.clone(),
                    commit: commit.clone(),
                    field,
                    why,
                })
            };
            let facts = match objects.commit(oid) {
                Ok(Some(b)) => match commit_facts(&b) {
                    Ok(f) => f,
                    Err(w) => {
                        bad("object", format!("its commit object does not parse: {w}"));
                        continue;
                    }
                },
                Ok(None) => {
                    bad(
                        "object",
                        "its commit object is missing (git would take the graph's tree and parents when it arrives)".into(),
                    );
                    continue;
                }
                Err(w) => {
                    bad("object", format!("its object {w}"));
                    continue;
                }
            };
            if g.tree(i) != facts.tree {
                bad(
                    "tree",
                    format!(
                        "the graph gives root tree {}, the commit object {}",
                        hex(g.tree(i)),
                        hex(&facts.tree)
                    ),
                );
            }
            let positions = match g.parent_positions(i) {
                Ok(p) => p,
                Err(w) => {
                    bad("parents", w);
                    continue;
                }
            };
            let mut parents = Vec::with_capacity(positions.len());
            let mut ok = true;
            for &pos in &positions {
                match locate(pos) {
                    // A parent at or above this commit's own layer's end is invalid (git dies).
                    Some((pl, lex)) if pl <= li => parents.push((pl, lex)),
                    _ => {
                        bad("parents", format!("parent position {pos} is invalid"));
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            let graph_parents: Vec<&[u8]> = parents
                .iter()
                .map(|&(pl, lex)| layers[pl].oid(lex))
                .collect();
            let object_parents: Vec<&[u8]> = facts.parents.iter().map(|p| &p[..]).collect();
            if graph_parents != object_parents {
                bad(
                    "parents",
                    format!(
                        "the graph gives parents [{}], the commit object [{}]",
                        graph_parents
                            .iter()
                            .map(|p| hex(p))
                            .collect::<Vec<_>>()
                            .join(" "),
                        object_parents
                            .iter()
                            .map(|p| hex(p))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                );
            }
            let date = g.date(i);
            let mask = (1u64 << 34) - 1;
            if !facts.dates.iter().any(|d| d & mask == date) {
                bad(
                    "date",
                    format!(
                        "the graph gives commit date {date}, the commit object {}",
                        facts.dates[0] & mask
                    ),
                );
            }
            // Topological levels: git's rule, ≥ 1 + the parents' highest (capped at
            // GENERATION_NUMBER_V1_MAX). Every edge going up is what git's reachability cuts
            // rely on. A level of 0 ("not computed") was written only by git before 2.19; in
            // a chain it lets a walk stop early, so it is a finding too (rewrite the graph).
            let topo = g.topo(i);
            let maxp = parents
                .iter()
                .map(|&(pl, lex)| layers[pl].topo(lex))
                .max()
                .unwrap_or(0);
            let need = maxp.min(GENERATION_V1_MAX - 1) + 1;
            if topo < need {
                bad(
                    "generation",
                    format!("its topological level {topo} is below {need}"),
                );
            }
            if gen_data {
                match g.corrected(i) {
                    Some(Ok(gen)) => {
                        // A parent whose own value is unreadable is reported at its entry.
                        let maxp = parents
                            .iter()
                            .filter_map(|&(pl, lex)| layers[pl].corrected(lex)?.ok())
                            .max();
                        if gen < date {
                            bad(
                                "generation",
                                format!("its corrected commit date {gen} is before its commit date {date}"),
                            );
                        }
                        if let Some(m) = maxp {
                            if gen <= m {
                                bad(
                                    "generation",
                                    format!("its corrected commit date {gen} is not after its parents' {m}"),
                                );
                            }
                        }
                    }
                    Some(Err(w)) => bad("generation", w),
                    None => {}
                }
            }
        }
    }
    Ok(problems)
}

// ---------------------------------------------------------------------------------------
// files

/// Where the record of the state file `state` is kept: `<state>.graphs`.
pub fn record_path(state: &Path) -> Option<PathBuf> {
    let mut n = state.file_name()?.to_os_string();
    n.push(".graphs");
    Some(state.with_file_name(n))
}

/// The record: path below `objects/info` → stamp.
type Record = HashMap<String, Stamp>;

/// The record's text, less the identities [`Stamp::recordable`] refuses for a run started at
/// `started_ns` (those files are verified again next time).
fn render(rec: &[(String, Stamp)], started_ns: i128) -> Vec<u8> {
    let mut s = String::new();
    s.push_str(HEADER);
    s.push('\n');
    for (rel, t) in rec.iter().filter(|(_, t)| t.recordable(started_ns)) {
        s.push_str(&format!(
            "{rel} {} {} {} {} {} {} {}\n",
            t.dev, t.ino, t.size, t.mtime.0, t.mtime.1, t.ctime.0, t.ctime.1
        ));
    }
    s.into_bytes()
}

fn parse_record(bytes: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
    let mut lines = text.split('\n');
    if lines.next() != Some(HEADER) {
        return Err(format!("does not start with {HEADER:?}"));
    }
    let mut rec = Record::new();
    for l in lines {
        if l.is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split(' ').collect();
        let num = |i: usize| -> Result<i64, String> {
            f.get(i)
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| format!("malformed line {l:?}"))
        };
        if f.len() != 8 {
            return Err(format!("malformed line {l:?}"));
        }
        let unum = |i: usize| -> Result<u64, String> {
            f[i].parse::<u64>()
                .map_err(|_| format!("malformed line {l:?}"))
        };
        rec.insert(
            f[0].to_owned(),
            Stamp {
                dev: unum(1)?,
                ino: unum(2)?,
                size: num(3)?,
                mtime: (num(4)?, num(5)?),
                ctime: (num(6)?, num(7)?),
            },
        );
    }
    Ok(rec)
}

/// Read the record beside `state`: `Ok(None)` when there is none (an older pin: everything
/// is verified).
fn read_record(state: &Path) -> Result<Option<Record>, String> {
    let Some(p) = record_path(state) else {
        return Ok(None);
    };
    match crate::fsx::Root::open(p.parent().unwrap_or(Path::new("/")))
        .and_then(|r| r.read_opt(p.file_name().unwrap_or_default(), 1 << 26))
    {
        Ok(None) => Ok(None),
        Ok(Some(b)) => parse_record(&b).map(Some).map_err(|w| {
            format!(
                "{}: commit-graph record unreadable: {w}; pin again",
                p.display()
            )
        }),
        Err(e) => Err(format!("commit-graph record unreadable: {e}")),
    }
}

/// An opened graph file: its descriptor, identity, whether it must be verified whatever its
/// stamps.
struct Opened {
    rel: String,
    file: std::fs::File,
    stamp: Stamp,
    must_verify: bool,
}

/// What opening a path gave.
enum Open {
    Absent,
    /// Not a regular file (by kind name).
    Other(&'static str),
    File(Opened),
}

/// Open `leaf` in `dir` without following a link or blocking; check it is a regular file.
fn open_file(dir: &Root, leaf: &str, rel: String) -> Result<Open, String> {
    let full = dir.path().join(leaf);
    let st = match fstatat(
        dir.as_fd(),
        OsStr::new(leaf),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    ) {
        Ok(st) => st,
        Err(nix::errno::Errno::ENOENT) => return Ok(Open::Absent),
        Err(e) => return Err(format!("{}: lstat: {e}", full.display())),
    };
    if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return Ok(Open::Other(kind_name(st.st_mode)));
    }
    let fd = match openat(
        dir.as_fd(),
        OsStr::new(leaf),
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(nix::errno::Errno::ENOENT) => return Ok(Open::Absent),
        Err(nix::errno::Errno::ELOOP) => return Ok(Open::Other("symbolic link")),
        Err(e) => return Err(format!("{}: open: {e}", full.display())),
    };
    let st = fstat(&fd).map_err(|e| format!("{}: fstat: {e}", full.display()))?;
    if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return Ok(Open::Other(kind_name(st.st_mode)));
    }
    Ok(Open::File(Opened {
        rel,
        file: std::fs::File::from(fd),
        stamp: Stamp::of(&st),
        // A second link is no reason (a local `git clone` hard-links the graph): where
        // stamps are trusted, a write through any name, or a link made or removed, moves the
        // inode's `ctime`; where they are not, every graph is verified anyway.
        must_verify: st.st_mode & 0o222 != 0,
    }))
}

impl Opened {
    /// Write back dirty pages (R15-1), take the identity the record will hold, then read the
    /// whole file within the byte budget.
    fn read_all(&mut self, budget: &mut Budget) -> Result<Vec<u8>, String> {
        use std::os::fd::AsFd;
        crate::fsx::write_back(self.file.as_fd())
            .map_err(|e| format!("objects/info/{}: sync_file_range: {e}", self.rel))?;
        let st = fstat(self.file.as_fd())
            .map_err(|e| format!("objects/info/{}: fstat: {e}", self.rel))?;
        self.stamp = Stamp::of(&st);
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if size > FILE_BYTES_LIMIT {
            return Err(format!(
                "objects/info/{} is larger than {FILE_BYTES_LIMIT} bytes: not verified",
                self.rel
            ));
        }
        if size > budget.bytes {
            return Err(format!(
                "more than {BYTE_LIMIT} bytes of commit-graph files to read: objects/info/{} not verified",
                self.rel
            ));
        }
        let mut out = Vec::with_capacity(size as usize);
        (&self.file)
            .take(size + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("objects/info/{}: read: {e}", self.rel))?;
        budget.bytes -= out.len().min(size as usize) as u64;
        // What was read is what the identity stands for (nothing may write meanwhile).
        let after = fstat(self.file.as_fd())
            .map_err(|e| format!("objects/info/{}: fstat: {e}", self.rel))?;
        if Stamp::of(&after) != self.stamp || out.len() as u64 != size {
            return Err(format!(
                "objects/info/{} changed while it was read: not verified",
                self.rel
            ));
        }
        Ok(out)
    }
}

/// One graph group's findings (the single file, or the chain).
#[derive(Debug, Clone)]
pub struct Forged {
    /// `commit-graph` or `commit-graphs` (below `objects/info`).
    pub group: &'static str,
    /// `forged` (an entry differs from its commit), `malformed` (not a graph as git
    /// writes it), `not-a-file` (a link, a fifo, …).
    pub change: &'static str,
    pub problems: Vec<Problem>,
    /// What to move aside with `--restore`, below `objects/info`.
    pub files: Vec<String>,
}

/// The result of looking at every graph of a common dir.
#[derive(Debug, Default)]
pub struct Seen {
    pub forged: Vec<Forged>,
    /// Stamps of every graph file that verified (or was unchanged since the record).
    pub good: Vec<(String, Stamp)>,
    /// Commits verified against their objects.
    pub verified: usize,
}

/// Look at the graphs of `common` against `record` (`None`: verify all).
fn examine<'s>(
    common: &Path,
    record: Option<&Record>,
    budget: &mut Budget,
    store: &'s Store,
    objects: &mut Option<Box<dyn Commits + 's>>,
) -> Result<Seen, Stop> {
    let mut seen = Seen::default();
    let sys = Root::system().map_err(|e| Stop(e.to_string()))?;
    let rel = common
        .strip_prefix("/")
        .map_err(|_| Stop(format!("{}: not absolute", common.display())))?;
    let info = match sys.open_dir(rel.join("objects").join("info")) {
        Ok(r) => r,
        Err(e) if e.is_not_found() => return Ok(seen),
        Err(e) => return Err(Stop(format!("cannot read the commit-graph: {e}"))),
    };
    let trusted = stamps_trusted_at(&info);
    let unchanged = |o: &Opened| {
        trusted && !o.must_verify && record.and_then(|r| r.get(&o.rel)) == Some(&o.stamp)
    };
    // The single file.
    match open_file(&info, SINGLE, SINGLE.into()).map_err(Stop)? {
        Open::Absent => {}
        Open::Other(k) => seen.forged.push(Forged {
            group: SINGLE,
            change: "not-a-file",
            problems: vec![Problem {
                file: SINGLE.into(),
                commit: None,
                field: "file",
                why: format!("is a {k}, not a regular file"),
            }],
            files: vec![SINGLE.into()],
        }),
        Open::File(mut o) => {
            if unchanged(&o) {
                seen.good.push((o.rel.clone(), o.stamp));
            } else {
                let bytes = o.read_all(budget).map_err(Stop)?;
                match parse(bytes) {
                    Err(Err(Unsupported::Sha256)) => {
                        return Err(Stop(
                            "objects/info/commit-graph is a SHA-256 commit-graph: not supported, not verified".into(),
                        ))
                    }
                    Err(Ok(why)) => seen.forged.push(Forged {
                        group: SINGLE,
                        change: "malformed",
                        problems: vec![Problem {
                            file: SINGLE.into(),
                            commit: None,
                            field: "structure",
                            why,
                        }],
                        files: vec![SINGLE.into()],
                    }),
                    Ok(g) => {
                        ensure_odb(common, store, objects)?;
                        let n = g.num_commits as usize;
                        let names = [SINGLE.to_owned()];
                        let p = verify_chain(
                            std::slice::from_ref(&g),
                            &names,
                            false,
                            0,
                            objects.as_deref_mut().expect("opened"),
                            budget,
                        )?;
                        seen.verified += n;
                        if p.is_empty() {
                            seen.good.push((o.rel.clone(), o.stamp));
                        } else {
                            seen.forged.push(Forged {
                                group: SINGLE,
                                change: change_of(&p),
                                problems: p,
                                files: vec![SINGLE.into()],
                            });
                        }
                    }
                }
            }
        }
    }
    // The chain.
    let chain_dir = match info.open_dir(CHAIN_DIR) {
        Ok(d) => Some(d),
        Err(e) if e.is_not_found() => None,
        Err(FsError::Link { .. }) | Err(FsError::NotDir { .. }) => {
            seen.forged.push(Forged {
                group: CHAIN_DIR,
                change: "not-a-file",
                problems: vec![Problem {
                    file: CHAIN_DIR.into(),
                    commit: None,
                    field: "file",
                    why: "is not a folder (a link or another kind of file)".into(),
                }],
                files: vec![CHAIN_DIR.into()],
            });
            None
        }
        Err(e) => return Err(Stop(format!("cannot read the commit-graph chain: {e}"))),
    };
    let Some(dir) = chain_dir else {
        return Ok(seen);
    };
    let chain_rel = format!("{CHAIN_DIR}/{CHAIN_FILE}");
    let mut chain = match open_file(&dir, CHAIN_FILE, chain_rel.clone()).map_err(Stop)? {
        Open::Absent => return Ok(seen),
        Open::Other(k) => {
            seen.forged.push(Forged {
                group: CHAIN_DIR,
                change: "not-a-file",
                problems: vec![Problem {
                    file: chain_rel.clone(),
                    commit: None,
                    field: "file",
                    why: format!("is a {k}, not a regular file"),
                }],
                files: vec![chain_rel],
            });
            return Ok(seen);
        }
        Open::File(o) => o,
    };
    let malformed = |why: String, files: Vec<String>, seen: &mut Seen| {
        seen.forged.push(Forged {
            group: CHAIN_DIR,
            change: "malformed",
            problems: vec![Problem {
                file: chain_rel.clone(),
                commit: None,
                field: "structure",
                why,
            }],
            files,
        });
    };
    // The chain file: always read (small); each line a 40-hex name.
    let text = chain.read_all(budget).map_err(Stop)?;
    let mut names = Vec::new();
    if text.is_empty() || text.len() % 41 != 0 {
        malformed(
            format!("is not a list of 40-hex lines ({} bytes)", text.len()),
            vec![chain.rel.clone()],
            &mut seen,
        );
        return Ok(seen);
    }
    for l in text.chunks(41) {
        if l[40] != b'\n'
            || !l[..40]
                .iter()
                .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        {
            malformed(
                format!(
                    "has a line that is not 40 lower-case hex digits: {:?}",
                    String::from_utf8_lossy(l)
                ),
                vec![chain.rel.clone()],
                &mut seen,
            );
            return Ok(seen);
        }
        names.push(String::from_utf8_lossy(&l[..40]).into_owned());
    }
    if names.len() > LAYER_LIMIT {
        return Err(Stop(format!(
            "the commit-graph chain has more than {LAYER_LIMIT} layers: not verified"
        )));
    }
    let mut files = vec![chain.rel.clone()];
    let mut opened = Vec::new();
    for n in &names {
        let leaf = format!("graph-{n}.graph");
        let rel = format!("{CHAIN_DIR}/{leaf}");
        files.push(rel.clone());
        match open_file(&dir, &leaf, rel.clone()).map_err(Stop)? {
            Open::File(o) => opened.push(o),
            Open::Absent => {
                malformed(
                    format!("names {leaf}, which does not exist"),
                    files.clone(),
                    &mut seen,
                );
                return Ok(seen);
            }
            Open::Other(k) => {
                seen.forged.push(Forged {
                    group: CHAIN_DIR,
                    change: "not-a-file",
                    problems: vec![Problem {
                        file: rel,
                        commit: None,
                        field: "file",
                        why: format!("is a {k}, not a regular file"),
                    }],
                    files: names
                        .iter()
                        .map(|n| format!("{CHAIN_DIR}/graph-{n}.graph"))
                        .chain([chain.rel.clone()])
                        .collect(),
                });
                return Ok(seen);
            }
        }
    }
    let first_changed = opened.iter().position(|o| !unchanged(o));
    let Some(from) = first_changed else {
        // Every layer as recorded. The chain file may have changed (a prefix, another
        // order): the layers' `BASE` chunks must still match, which needs them read — only
        // when the chain file itself changed.
        if unchanged(&chain) {
            seen.good.push((chain.rel.clone(), chain.stamp));
            seen.good
                .extend(opened.iter().map(|o| (o.rel.clone(), o.stamp)));
            return Ok(seen);
        }
        verify_layers(
            &mut seen,
            chain,
            opened,
            &names,
            files,
            names.len(),
            budget,
            objects,
            common,
            store,
        )?;
        return Ok(seen);
    };
    verify_layers(
        &mut seen, chain, opened, &names, files, from, budget, objects, common, store,
    )?;
    Ok(seen)
}

/// The object store of one run, opened on first use: packs read as the commit scan reads
/// them (`scan::packs`: only a packed commit's header is inflated), everything else through
/// gix.
pub(crate) type Store = std::cell::OnceCell<(crate::scan::packs::Packs, gix::OdbHandle)>;

/// Delta-base cache of the run's pack reader (commits are rarely deltified).
const PACK_CACHE: usize = 8 << 20;

/// Open the object store on first use (a run whose graphs are all unchanged opens none).
/// Reading objects opens every pack index: a FIFO in the git dir (a `.idx` the agent made)
/// would block it, so the special-file sweep runs first and a FIFO, socket or device stops
/// the verification (incomplete; the check's own sweep reports the file, `--restore` moves it).
fn ensure_odb<'s>(
    common: &Path,
    store: &'s Store,
    objects: &mut Option<Box<dyn Commits + 's>>,
) -> Result<(), Stop> {
    if objects.is_some() {
        return Ok(());
    }
    let sp = crate::audit::special::sweep(common);
    if let Some((p, kind)) = sp.found.first() {
        return Err(Stop(format!(
            "commit-graph not verified: {} is a {kind} in the git dir (reading objects would hang); move it aside (`--restore`) and check again",
            p.display()
        )));
    }
    if store.get().is_none() {
        let dir = common.join("objects");
        let odb = gix::odb::at(&dir, gix::hash::Kind::Sha1)
            .map_err(|e| Stop(format!("cannot open the object store: {e}")))?;
        let packs = crate::scan::packs::Packs::open(&dir, gix::hash::Kind::Sha1);
        let _ = store.set((packs, gix::OdbHandle::from(odb)));
    }
    let (packs, odb) = store.get().expect("set above");
    *objects = Some(Box::new(crate::scan::packs::PackReader::new(
        packs, odb, PACK_CACHE,
    )));
    Ok(())
}

impl Commits for crate::scan::packs::PackReader<'_> {
    fn commit(&mut self, oid: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let id = gix::ObjectId::try_from(oid).map_err(|e| e.to_string())?;
        if let Some((mut head, size)) = self.commit_header_sized(&id) {
            // Only whether bytes follow the committer line matters to the dates (git before
            // 2.43 reads 0 when none do): one stands for the rest.
            if size > head.len() {
                head.push(b'\n');
            }
            return Ok(Some(head));
        }
        match self.read(&id) {
            Ok(None) => Ok(None),
            Ok(Some((gix::objs::Kind::Commit, d))) => Ok(Some(d.to_vec())),
            Ok(Some((kind, _))) => Err(format!("is a {kind}, not a commit")),
            Err(e) => Err(format!("cannot be read: {e}")),
        }
    }
}

fn change_of(p: &[Problem]) -> &'static str {
    if p.iter().all(|p| p.field == "structure") {
        "malformed"
    } else {
        "forged"
    }
}

#[allow(clippy::too_many_arguments)]
fn verify_layers<'s>(
    seen: &mut Seen,
    chain: Opened,
    mut opened: Vec<Opened>,
    names: &[String],
    files: Vec<String>,
    from: usize,
    budget: &mut Budget,
    objects: &mut Option<Box<dyn Commits + 's>>,
    common: &Path,
    store: &'s Store,
) -> Result<(), Stop> {
    let mut layers = Vec::with_capacity(opened.len());
    for (i, (o, n)) in opened.iter_mut().zip(names).enumerate() {
        let bytes = o.read_all(budget).map_err(Stop)?;
        // Layers below `from` are as recorded (verified, checksum included, at the pin).
        match parse_layer(bytes, i >= from) {
            Ok(g) => layers.push(g),
            Err(Err(Unsupported::Sha256)) => {
                return Err(Stop(format!(
                    "objects/info/{CHAIN_DIR}/graph-{n}.graph is a SHA-256 commit-graph: not supported, not verified"
                )))
            }
            Err(Ok(why)) => {
                seen.forged.push(Forged {
                    group: CHAIN_DIR,
                    change: "malformed",
                    problems: vec![Problem {
                        file: o.rel.clone(),
                        commit: None,
                        field: "structure",
                        why,
                    }],
                    files,
                });
                return Ok(());
            }
        }
    }
    let rels: Vec<String> = opened.iter().map(|o| o.rel.clone()).collect();
    if from < layers.len() {
        ensure_odb(common, store, objects)?;
    }
    let mut none = NoObjects;
    let src: &mut dyn Commits = match objects.as_deref_mut() {
        Some(o) => o,
        None => &mut none,
    };
    let p = verify_chain(&layers, &rels, true, from, src, budget)?;
    seen.verified += layers
        .iter()
        .skip(from)
        .map(|g| g.num_commits as usize)
        .sum::<usize>();
    if p.is_empty() {
        seen.good.push((chain.rel.clone(), chain.stamp));
        seen.good
            .extend(opened.iter().map(|o| (o.rel.clone(), o.stamp)));
    } else {
        seen.forged.push(Forged {
            group: CHAIN_DIR,
            change: change_of(&p),
            problems: p,
            files,
        });
    }
    Ok(())
}

/// No object is read (every layer's commits were verified before).
struct NoObjects;
impl Commits for NoObjects {
    fn commit(&mut self, _: &[u8]) -> Result<Option<Vec<u8>>, String> {
        Err("was not expected to be read".into())
    }
}

/// Verify the graphs of `common_dir` whose files are not in the previous record beside
/// `state` (chain of trust: a file a verifying pin recorded and unchanged since needs no new
/// verification), and write the record of every graph file that verified. Returns the
/// forged groups (left out of the record: every check reports them until they are gone).
pub fn pin(common_dir: &Path, state: &Path) -> Result<Vec<Forged>, String> {
    let started = crate::layout::walk_cache::now_ns();
    let path = record_path(state).ok_or_else(|| format!("{}: no file name", state.display()))?;
    // A previous record that cannot be read is no trust: verify everything.
    let prev = read_record(state).unwrap_or(None);
    let mut budget = Budget::default();
    let store = Store::new();
    let mut objects = None;
    let seen = examine(common_dir, prev.as_ref(), &mut budget, &store, &mut objects)
        .map_err(|Stop(w)| w)?;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("{}: no parent folder", path.display()));
    };
    let dir = super::nf::Dir::open_trusted(parent).map_err(|e| e.to_string())?;
    dir.write_atomic(name, &render(&seen.good, started), 0o600)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(seen.forged)
}

/// One line naming a forged group (for the pin's refusal).
pub fn describe(f: &Forged) -> String {
    let first = f.problems.first();
    format!(
        "{} objects/info/{}: {}{}",
        crate::catalogue::OBJECT_GRAPH_RULE.0,
        first.map_or(f.group, |p| p.file.as_str()),
        first.map_or(String::new(), |p| match &p.commit {
            Some(c) => format!("commit {c}: {} ", p.field),
            None => String::new(),
        }),
        first.map_or("", |p| p.why.as_str())
    )
}

/// Check the commit-graphs of the object store in `common` against the records named after `state`;
/// with `restore`, set aside what fails. `integrity::stores` calls it for every store.
// Not inlined: its cost is measured on its own (docs/perf-wt-check.md).
#[inline(never)]
pub(crate) fn check_at(
    common: &Path,
    repo: &Path,
    session: Option<&str>,
    state: &Path,
    restore: bool,
    mut budget: Budget,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    let info = common.join("objects").join("info");
    let mk = |kind: EventKind, msg: String, path: &Path| {
        Event::new(Tool::WtCheck, kind, msg)
            .session(session)
            .repo(repo)
            .path(path)
    };
    let record = match read_record(state) {
        Ok(r) => r,
        Err(w) => {
            emit(mk(EventKind::CheckIncomplete, w, &info));
            return Outcome::Incomplete;
        }
    };
    let store = Store::new();
    let mut objects = None;
    let seen = match examine(common, record.as_ref(), &mut budget, &store, &mut objects) {
        Ok(s) => s,
        Err(Stop(w)) => {
            emit(mk(EventKind::CheckIncomplete, w, &info));
            return Outcome::Incomplete;
        }
    };
    if seen.forged.is_empty() {
        return Outcome::Clean;
    }
    let mut outcome = Outcome::Found;
    let mut q = restore.then(|| Quarantine::new(state));
    for f in seen.forged {
        let path = info.join(f.group);
        let first = f.problems.first().cloned();
        let problems: Vec<serde_json::Value> = f
            .problems
            .iter()
            .take(PROBLEMS_SHOWN)
            .map(|p| {
                serde_json::json!({
                    "file": format!("objects/info/{}", p.file),
                    "commit": p.commit,
                    "field": p.field,
                    "why": p.why,
                })
            })
            .collect();
        let summary = first.as_ref().map_or(String::new(), |p| {
            format!(
                "{}{}{}",
                p.commit
                    .as_ref()
                    .map_or(String::new(), |c| format!("commit {c}: ")),
                if p.field == "structure" || p.field == "file" || p.field == "object" {
                    String::new()
                } else {
                    format!("{}: ", p.field)
                },
                p.why
            )
        });
        let mut e = mk(
            EventKind::CommitGraphForged,
            format!(
                "{}: {}{}: git takes commits' trees and parents from the commit-graph without checking them",
                info.join(first.as_ref().map_or(f.group, |p| p.file.as_str())).display(),
                summary,
                if f.problems.len() > 1 {
                    format!(" (and {} more)", f.problems.len() - 1)
                } else {
                    String::new()
                }
            ),
            &path,
        )
        .with("rule", crate::catalogue::OBJECT_GRAPH_RULE.0)
        .with("change", f.change)
        .with("graph", format!("objects/info/{}", f.group))
        .with("problems", serde_json::Value::Array(problems))
        .with("count", f.problems.len());
        if let Some(p) = &first {
            if let Some(c) = &p.commit {
                e = e.with("commit", c.clone());
            }
            e = e.with("field", p.field).with("why", p.why.clone());
        }
        match q.as_mut() {
            None => emit(e.with("action", "report")),
            Some(q) => {
                let mut moved = Vec::new();
                let mut failed = None;
                for rel in &f.files {
                    match set_aside(common, rel, q) {
                        Ok(Some(dest)) => {
                            let src = info.join(rel);
                            emit(
                                mk(
                                    EventKind::Quarantined,
                                    format!("{} moved to {}", src.display(), dest.display()),
                                    &src,
                                )
                                .with("quarantine", dest.display().to_string()),
                            );
                            moved.push(serde_json::Value::String(dest.display().to_string()));
                        }
                        Ok(None) => {}
                        Err(err) => {
                            failed = Some(format!(
                                "{}: cannot move aside: {err}",
                                info.join(rel).display()
                            ));
                            break;
                        }
                    }
                }
                match failed {
                    None => emit(
                        e.with("action", "quarantined")
                            .with("quarantine", serde_json::Value::Array(moved))
                            .with(
                                "after",
                                "git now walks without this commit-graph (slower, and it reads trees and parents from the commit objects); `git commit-graph write --reachable` writes an honest one",
                            ),
                    ),
                    Some(w) => {
                        emit(e.with("action", "report"));
                        emit(mk(EventKind::RestoreFailed, w, &path));
                        outcome = outcome.and(Outcome::Incomplete);
                    }
                }
            }
        }
    }
    outcome
}

/// Move `rel` (below `objects/info`) into the quarantine; `None` when it is already gone.
fn set_aside(common: &Path, rel: &str, q: &mut Quarantine) -> Result<Option<PathBuf>, String> {
    let full = common.join("objects").join("info").join(rel);
    let (Some(parent), Some(name)) = (full.parent(), full.file_name()) else {
        return Err(format!("{}: no parent", full.display()));
    };
    let src = super::nf::Dir::open_abs(parent).map_err(|e| e.to_string())?;
    match src.stat(name) {
        Ok(None) => return Ok(None),
        Ok(Some(_)) => {}
        Err(e) => return Err(e.to_string()),
    }
    let (qdir, qname, dest) = q
        .slot(&Key::Rel(format!("objects/info/{rel}")))
        .map_err(|e| e.to_string())?;
    src.move_out(name, &qdir, &qname)
        .map_err(|e| e.to_string())?;
    Ok(Some(dest))
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

    /// A repository of three commits (the last a merge) with a graph written by git
    /// (`--changed-paths`); (tmp, common dir, state path, graph path).
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let repo = root.join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        for (i, f) in ["a", "b"].iter().enumerate() {
            std::fs::write(repo.join(f), format!("{i}\n")).unwrap();
            git(&repo, &["add", f]);
            git(&repo, &["commit", "-q", "-m", f]);
        }
        git(&repo, &["checkout", "-q", "-b", "x", "HEAD~1"]);
        std::fs::write(repo.join("c"), "c\n").unwrap();
        git(&repo, &["add", "c"]);
        git(&repo, &["commit", "-q", "-m", "c"]);
        git(&repo, &["merge", "-q", "--no-edit", "@{-1}"]);
        git(
            &repo,
            &["commit-graph", "write", "--reachable", "--changed-paths"],
        );
        let common = repo.join(".git");
        let graph = common.join("objects/info/commit-graph");
        let state = root.join("st.json");
        (t, common, state, graph)
    }

    fn run(common: &Path, state: &Path, budget: Budget) -> (Outcome, Vec<Event>) {
        let mut ev = Vec::new();
        let o = check_at(common, common, None, state, false, budget, &mut |e| {
            ev.push(e)
        });
        (o, ev)
    }

    fn chunk(d: &[u8], want: &[u8; 4]) -> (usize, usize) {
        for c in 0..usize::from(d[6]) {
            let at = 8 + c * 12;
            if &d[at..at + 4] == want {
                return (be64(d, at + 4) as usize, be64(d, at + 16) as usize);
            }
        }
        panic!("no chunk {want:?}");
    }

    fn fix_trailer(d: &mut [u8]) {
        let n = d.len() - HASH_LEN;
        let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
        h.update(&d[..n]);
        let id = h.try_finalize().unwrap();
        d[n..].copy_from_slice(id.as_slice());
    }

    /// Replace a read-only file's content in place (the inode kept).
    fn overwrite(p: &Path, bytes: &[u8]) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(p, bytes).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o444)).unwrap();
    }

    /// The record as `pin` writes it, but of the files as they are now, without verifying:
    /// stands for stamps that did not move although the content did.
    fn record_unverified(common: &Path, state: &Path) {
        let info = Root::open(common.join("objects/info")).unwrap();
        let mut rec = Vec::new();
        if let Open::File(o) = open_file(&info, SINGLE, SINGLE.into()).unwrap() {
            rec.push((o.rel, o.stamp));
        }
        std::fs::write(record_path(state).unwrap(), render(&rec, i128::MAX)).unwrap();
    }

    fn is_malformed(r: Result<Graph, Result<String, Unsupported>>, what: &str) {
        match r {
            Err(Ok(w)) => assert!(w.contains(what), "{w}"),
            Err(Err(u)) => panic!("unsupported {u:?}"),
            Ok(_) => panic!("parsed"),
        }
    }

    #[test]
    fn strtoumax_reads_as_c_does() {
        assert_eq!(strtoumax(b"1700000000 +0000"), 1_700_000_000);
        assert_eq!(strtoumax(b"  \n42x"), 42);
        assert_eq!(strtoumax(b"-1"), u64::MAX);
        assert_eq!(strtoumax(b"+7"), 7);
        assert_eq!(strtoumax(b"x"), 0);
        assert_eq!(strtoumax(b""), 0);
        assert_eq!(strtoumax(b"99999999999999999999999"), u64::MAX);
    }

    #[test]
    fn commit_facts_read_what_git_reads() {
        let t = "1".repeat(40);
        let p = "2".repeat(40);
        let c = format!(
            "tree {t}\nparent {p}\nparent {}\nauthor A <a> 5 +0000\ncommitter C <c> 1700000000 +0000\n\nm\n",
            "3".repeat(40)
        );
        let f = commit_facts(c.as_bytes()).unwrap();
        assert_eq!(f.tree, [0x11; 20]);
        assert_eq!(f.parents, vec![[0x22; 20], [0x33; 20]]);
        assert_eq!(f.dates, [1_700_000_000; 2]);
        // Upper-case hex is read as git's get_oid_hex reads it.
        let c = format!(
            "tree {}\nauthor A <a> 5 +0000\ncommitter C <c> 9 +0000\n",
            "AB".repeat(20)
        );
        assert_eq!(commit_facts(c.as_bytes()).unwrap().tree, [0xab; 20]);
        // A '>' in the committer's name: git ≥ 2.43 reads after the last '>', older gits
        // after the first.
        let c = format!("tree {t}\nauthor A <a> 5 +0000\ncommitter C> <c> 77 +0000\n");
        assert_eq!(commit_facts(c.as_bytes()).unwrap().dates, [77, 0]);
        // Whitespace before the date: git ≥ 2.43 trims git's isspace (CR, not VT), the
        // older parse hands it to strtoumax (which skips both).
        let c = format!("tree {t}\nauthor A <a> 5 +0000\ncommitter C <c>\r77 +0000\n\n");
        assert_eq!(commit_facts(c.as_bytes()).unwrap().dates, [77, 77]);
        let c = format!("tree {t}\nauthor A <a> 5 +0000\ncommitter C <c>\x0b77 +0000\n\n");
        assert_eq!(commit_facts(c.as_bytes()).unwrap().dates, [0, 77]);
        // No committer line: date 0.
        let c = format!("tree {t}\nauthor A <a> 5 +0000\n");
        assert_eq!(commit_facts(c.as_bytes()).unwrap().dates, [0, 0]);
        // What git refuses.
        assert!(commit_facts(b"tree xyz\n").is_err());
        assert!(commit_facts(format!("tree {}\n\n", "g".repeat(40)).as_bytes()).is_err());
        let c = format!(
            "tree {t}\nparent {}\nauthor A <a> 5 +0000\n",
            "z".repeat(40)
        );
        assert!(commit_facts(c.as_bytes()).is_err());
    }

    #[test]
    fn an_honest_graph_parses_and_verifies() {
        let (_t, common, _state, graph) = setup();
        let g = parse(std::fs::read(&graph).unwrap()).unwrap();
        assert_eq!(g.num_commits, 4);
        assert!(g.has_generation_data() || g.topo(0) > 0);
        let store = Store::new();
        let mut odb = None;
        ensure_odb(&common, &store, &mut odb).unwrap();
        let mut b = Budget::default();
        let p = verify_chain(
            &[g],
            &[SINGLE.into()],
            false,
            0,
            odb.as_deref_mut().unwrap(),
            &mut b,
        )
        .unwrap();
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(b.commits, COMMIT_LIMIT - 4);
    }

    #[test]
    fn malformed_graphs_are_refused() {
        let (_t, _common, _state, graph) = setup();
        let d = std::fs::read(&graph).unwrap();
        assert!(parse(d.clone()).is_ok());
        let mut x = d.clone();
        x[0] = b'X';
        is_malformed(parse(x), "signature");
        let mut x = d.clone();
        x[4] = 2;
        is_malformed(parse(x), "version 2");
        let mut x = d.clone();
        x[5] = 2;
        assert!(matches!(parse(x), Err(Err(Unsupported::Sha256))));
        is_malformed(parse(d[..30].to_vec()), "small");
        is_malformed(parse(d[..d.len() - 1].to_vec()), "");
        // A chunk offset moved by one.
        let mut x = d.clone();
        let v = be64(&x, 8 + 12 + 4) + 1;
        x[8 + 12 + 4..8 + 12 + 12].copy_from_slice(&v.to_be_bytes());
        is_malformed(parse(x), "OIDF chunk of 1025 bytes");
        // Two OIDs swapped (sorted order broken).
        let mut x = d.clone();
        let (o, _) = chunk(&x, b"OIDL");
        let (a, b) = (x[o..o + 20].to_vec(), x[o + 20..o + 40].to_vec());
        x[o..o + 20].copy_from_slice(&b);
        x[o + 20..o + 40].copy_from_slice(&a);
        fix_trailer(&mut x);
        let r = parse(x);
        assert!(matches!(r, Err(Ok(_))), "{:?}", r.map(|g| g.num_commits));
        // A fan-out out of order.
        let mut x = d.clone();
        let (f, _) = chunk(&x, b"OIDF");
        x[f..f + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        fix_trailer(&mut x);
        is_malformed(parse(x), "fan-out");
        // Bloom index not monotone.
        let mut x = d.clone();
        let (bi, _) = chunk(&x, b"BIDX");
        x[bi..bi + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        fix_trailer(&mut x);
        is_malformed(parse(x), "Bloom");
        // The trailer.
        let mut x = d.clone();
        let n = x.len();
        x[n - 1] ^= 1;
        is_malformed(parse(x), "checksum");
    }

    #[test]
    fn forged_fields_are_named() {
        let (_t, common, _state, graph) = setup();
        let d = std::fs::read(&graph).unwrap();
        let (c, _) = chunk(&d, b"CDAT");
        let store = Store::new();
        let mut odb = None;
        ensure_odb(&common, &store, &mut odb).unwrap();
        let mut odb = odb.unwrap();
        let check = |x: Vec<u8>, odb: &mut Box<dyn Commits + '_>| {
            let g = parse(x).unwrap();
            verify_chain(
                &[g],
                &[SINGLE.into()],
                false,
                0,
                odb.as_mut(),
                &mut Budget::default(),
            )
            .unwrap()
        };
        // Each field of commit 0's entry in turn.
        for (at, len, field) in [(0usize, 1usize, "tree"), (HASH_LEN + 15, 1, "date")] {
            let mut x = d.clone();
            x[c + at + len - 1] ^= 1;
            fix_trailer(&mut x);
            let p = check(x, &mut odb);
            // (A date moved also moves the corrected commit date computed from it.)
            assert_eq!(p[0].field, field, "{p:?}");
            assert_eq!(
                p[0].commit.as_deref(),
                Some(hex(&d[chunk(&d, b"OIDL").0..][..20]).as_str())
            );
        }
        // A root commit's topological level raised: its children's levels are then too low.
        let g = parse(d.clone()).unwrap();
        let root = (0..g.num_commits)
            .find(|&i| g.parent_positions(i).unwrap().is_empty())
            .unwrap();
        let mut x = d.clone();
        let at = c + root as usize * (HASH_LEN + 16) + HASH_LEN + 8;
        let v = be32(&x, at) + (50 << 2);
        x[at..at + 4].copy_from_slice(&v.to_be_bytes());
        fix_trailer(&mut x);
        let p = check(x, &mut odb);
        assert!(p.iter().any(|p| p.field == "generation"), "{p:?}");
        // A level of 0 ("not computed", what git before 2.19 wrote) on the root.
        let mut x = d.clone();
        let at = c + root as usize * (HASH_LEN + 16) + HASH_LEN + 8;
        let v = be32(&x, at) & 0x3;
        x[at..at + 4].copy_from_slice(&v.to_be_bytes());
        fix_trailer(&mut x);
        let p = check(x, &mut odb);
        assert!(
            p.iter()
                .any(|p| p.field == "generation" && p.why.contains("level 0")),
            "{p:?}"
        );
        // A parent position past the graph.
        let mut x = d.clone();
        let child = (0..g.num_commits)
            .find(|&i| !g.parent_positions(i).unwrap().is_empty())
            .unwrap();
        let at = c + child as usize * (HASH_LEN + 16) + HASH_LEN;
        x[at..at + 4].copy_from_slice(&1000u32.to_be_bytes());
        fix_trailer(&mut x);
        let p = check(x, &mut odb);
        assert_eq!(p[0].field, "parents", "{p:?}");
        assert!(p[0].why.contains("invalid"), "{p:?}");
    }

    #[test]
    fn the_commit_budget_stops_the_run() {
        let (_t, common, state, _graph) = setup();
        let (o, ev) = run(
            &common,
            &state,
            Budget {
                commits: 2,
                bytes: BYTE_LIMIT,
            },
        );
        assert_eq!(o, Outcome::Incomplete, "{ev:?}");
        assert!(ev[0].message.contains("5000000"), "{ev:?}");
        let (o, ev) = run(
            &common,
            &state,
            Budget {
                commits: COMMIT_LIMIT,
                bytes: 100,
            },
        );
        assert_eq!(o, Outcome::Incomplete, "{ev:?}");
        assert!(ev[0].message.contains("bytes"), "{ev:?}");
        // Positive control: with the default budget, clean.
        assert_eq!(run(&common, &state, Budget::default()).0, Outcome::Clean);
    }

    #[test]
    fn records_round_trip_and_damage_is_incomplete() {
        let t = Stamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (-4, 5),
            ctime: (6, 7),
        };
        let rec = vec![(SINGLE.to_owned(), t)];
        let back = parse_record(&render(&rec, i128::MAX)).unwrap();
        assert_eq!(back.get(SINGLE), Some(&t));
        assert!(parse_record(b"gitward-graphs 2\n").is_err());
        assert!(parse_record(b"gitward-graphs 1\ncommit-graph 1 2\n").is_err());
        let (_t, common, state, _graph) = setup();
        std::fs::write(record_path(&state).unwrap(), "junk\n").unwrap();
        assert_eq!(
            run(&common, &state, Budget::default()).0,
            Outcome::Incomplete
        );
    }

    /// The stamp skip is what lets an unchanged file through; a write bit overrides it, a
    /// link made after the record moves the stamps. The record is re-taken after the forgery to stand for a write that moved
    /// no stamp.
    #[test]
    fn writable_or_linked_graphs_are_verified_whatever_their_stamps() {
        let (t, common, state, graph) = setup();
        assert!(pin(&common, &state).unwrap().is_empty());
        assert_eq!(run(&common, &state, Budget::default()).0, Outcome::Clean);
        let mut d = std::fs::read(&graph).unwrap();
        let (c, _) = chunk(&d, b"CDAT");
        d[c] ^= 1;
        fix_trailer(&mut d);
        overwrite(&graph, &d);
        assert_eq!(run(&common, &state, Budget::default()).0, Outcome::Found);
        // Stamps re-recorded: the skip applies (positive control of the skip itself).
        record_unverified(&common, &state);
        let info = Root::open(common.join("objects/info")).unwrap();
        let skip = if stamps_trusted_at(&info) {
            Outcome::Clean
        } else {
            Outcome::Found
        };
        assert_eq!(run(&common, &state, Budget::default()).0, skip);
        // A write bit.
        std::fs::set_permissions(&graph, std::fs::Permissions::from_mode(0o644)).unwrap();
        record_unverified(&common, &state);
        assert_eq!(run(&common, &state, Budget::default()).0, Outcome::Found);
        // A second link made after the record moves the stamps: verified. One recorded as
        // such (a local clone) is skipped as any unchanged file.
        std::fs::set_permissions(&graph, std::fs::Permissions::from_mode(0o444)).unwrap();
        record_unverified(&common, &state);
        assert_eq!(run(&common, &state, Budget::default()).0, skip);
        std::fs::hard_link(&graph, t.path().join("second")).unwrap();
        assert_eq!(run(&common, &state, Budget::default()).0, Outcome::Found);
        record_unverified(&common, &state);
        assert_eq!(run(&common, &state, Budget::default()).0, skip);
        // The pin refuses it (its identity moved again: the second link removed) and leaves
        // it out of the record.
        std::fs::remove_file(t.path().join("second")).unwrap();
        let forged = pin(&common, &state).unwrap();
        assert_eq!(forged.len(), 1);
        assert!(describe(&forged[0]).starts_with("GW-OBJ-002 objects/info/commit-graph: commit "));
        let rec = std::fs::read_to_string(record_path(&state).unwrap()).unwrap();
        assert_eq!(rec, format!("{HEADER}\n"));
    }

    /// A chain: an upper layer written after the pin is verified against the objects, the
    /// recorded lower layer only read. A lower layer changed since makes every layer above
    /// it verified (their parent positions resolve through it).
    #[test]
    fn a_chain_verifies_from_its_lowest_changed_layer() {
        let (_t, common, state, graph) = setup();
        let repo = common.parent().unwrap().to_path_buf();
        std::fs::remove_file(&graph).unwrap();
        git(&repo, &["commit-graph", "write", "--reachable", "--split"]);
        // Past the racy margin, or the pin records no layer (`Stamp::recordable`).
        std::thread::sleep(std::time::Duration::from_nanos(
            crate::layout::walk_cache::RACY_MARGIN_NS as u64 + 100_000_000,
        ));
        assert!(pin(&common, &state).unwrap().is_empty());
        std::fs::write(repo.join("d"), "d\n").unwrap();
        git(&repo, &["add", "d"]);
        git(&repo, &["commit", "-q", "-m", "d"]);
        git(
            &repo,
            &["commit-graph", "write", "--reachable", "--split=no-merge"],
        );
        let mut budget = Budget::default();
        let rec = read_record(&state).unwrap();
        let seen = examine(&common, rec.as_ref(), &mut budget, &Store::new(), &mut None).unwrap();
        assert!(seen.forged.is_empty(), "{:?}", seen.forged);
        let info = Root::open(common.join("objects/info")).unwrap();
        if stamps_trusted_at(&info) {
            assert_eq!(seen.verified, 1, "only the new layer's commit");
        }
        // Without a record, all five.
        let seen = examine(
            &common,
            None,
            &mut Budget::default(),
            &Store::new(),
            &mut None,
        )
        .unwrap();
        assert_eq!(seen.verified, 5);
    }
}
