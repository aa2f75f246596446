//! The state file: what `wt-check pin` recorded, with the bytes needed to restore.
//!
//! Format (JSON, `format: 1`, documented in `docs/wt-check.md`): every protected entry keyed
//! by its path relative to the common dir (`hooks/pre-commit`, `worktrees/wt1/gitdir`,
//! `modules/sub/config`), each an [`Node`]; include targets keyed by absolute path; the
//! linked worktree entries with whom they belong to; the ref snapshot for the commit scan.
//! Files are stored whole (UTF-8 as `text`, anything else as `hex`) with git's blob id, so a
//! restore needs nothing but this file.
//!
//! Format 2 stores each distinct file content once, in a blob table keyed by its blob id
//! (`blobs`); a file entry names its content by `oid` (21 git dirs with git's sample hooks
//! hold one copy of each sample, not 21). A file whose content the table cannot hold under
//! its id (no id: the hash refused the bytes; or the table already holds other bytes under
//! that id) keeps its content inline, as in format 1. Format 1 (every content inline, no
//! `blobs`) is still read: it is format 2 with an empty table.
//!
//! Format 3 is format 2 with the ref snapshot taken out of the state's JSON object and
//! written after it, as a second JSON document ([`State::to_bytes`], [`State::from_bytes`]):
//! a check reads the snapshot only when the commit scan runs, and skipping it inside the
//! object cost more than the rest of the state file (git.git's 1,018 refs: 1.1 M of the
//! parse's 1.7 M instructions). Formats 1 and 2 (the snapshot inside, as `refs`) are still
//! read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The version of the state file format written by this build.
pub const FORMAT: u32 = 3;
/// The state file formats this build reads (1: every file content inline; 2: blob table;
/// 3: the ref snapshot as a second document after the state's).
pub const FORMATS_READ: &[u32] = &[1, 2, 3];

/// One protected entry as `lstat` saw it (links never followed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Node {
    /// Nothing there. Recorded so that a file planted later is found.
    Absent,
    /// A regular file with its permission bits, git blob id and content.
    File {
        mode: u32,
        oid: String,
        #[serde(flatten)]
        content: Content,
    },
    /// A folder. Compared by type only; its protected children have keys of their own.
    Dir { mode: u32 },
    /// A symbolic link and its target (never followed).
    Link { target: String },
    /// A fifo, socket or device: recorded by type.
    Special { kind: super::nf::Kind },
}

impl Node {
    /// One word for messages: `absent`, `file`, `folder`, `symbolic link`, `fifo`, ….
    pub fn kind_name(&self) -> &'static str {
        match self {
            Node::Absent => "absent",
            Node::File { .. } => "file",
            Node::Dir { .. } => "folder",
            Node::Link { .. } => "symbolic link",
            Node::Special { kind } => kind.name(),
        }
    }

    pub fn is_dir(&self) -> bool {
        matches!(self, Node::Dir { .. })
    }

    /// A file node for `bytes`.
    pub fn file(bytes: &[u8], mode: u32) -> Node {
        let oid = blob_id(bytes);
        Node::File {
            mode: mode & 0o7777,
            oid,
            content: Content::new(bytes),
        }
    }
}

/// git's blob id of `bytes` (SHA-1 of `blob <n>\0<bytes>`, what `git hash-object
/// --no-filters` prints); empty when the hash refuses the bytes (SHA-1 collision detection).
/// The one place the integrity checks compute it.
pub fn blob_id(bytes: &[u8]) -> String {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .map(|o| o.to_string())
        .unwrap_or_default()
}

/// File bytes: UTF-8 text as is, anything else as lower-case hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    Text(String),
    Hex(String),
}

impl Content {
    pub fn new(bytes: &[u8]) -> Content {
        match std::str::from_utf8(bytes) {
            Ok(s) => Content::Text(s.to_owned()),
            Err(_) => Content::Hex(bytes.iter().map(|b| format!("{b:02x}")).collect()),
        }
    }

    /// The bytes back; `None` if the hex is malformed (a damaged state file).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Content::Text(s) => Some(s.as_bytes().to_vec()),
            Content::Hex(h) => {
                if h.len() % 2 != 0 {
                    return None;
                }
                (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
                    .collect()
            }
        }
    }
}

/// A linked worktree entry at pin time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeBaseline {
    /// The worktree's path as `worktrees/<id>/gitdir` names it (`/.git` stripped, resolved).
    pub path: Option<PathBuf>,
    /// True when the worktree lies in the session's own folder.
    pub own: bool,
    /// How the entry departed from git's layout at pin time (empty when consistent); only
    /// new departures are reported by `check`.
    #[serde(default)]
    pub problems: Vec<String>,
}

/// An armed finding the owner accepted at pin time (`wt-check pin --accept-armed`): `check`
/// does not report it again while it stays the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    /// `audit` (a finding of `wt-check audit`: rule id) or `sequencer` (an in-progress
    /// operation's state file).
    pub kind: String,
    /// The rule id (`GW013`) or the state file's catalogue name.
    pub rule: String,
    pub path: PathBuf,
    /// What identifies the finding: the audit's message, or the state file's value.
    pub key: String,
}

/// The whole state file. (De)serialised through [`StateFile`], which holds each file content
/// once; in memory every file node carries its content. The ref snapshot is not in the
/// serialised object (format 3): the state file is written and read whole only through
/// [`State::to_bytes`] and [`State::from_bytes`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "StateFile", try_from = "StateFile")]
pub struct State {
    pub format: u32,
    pub pinned_at: String,
    /// The repository argument, resolved.
    pub repo: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    /// The main work tree (`None` for a bare repository).
    pub work_tree: Option<PathBuf>,
    pub session: Option<String>,
    /// `<repo>-worktrees/<session>/`: worktrees the session may add, change and remove.
    pub session_dir: Option<PathBuf>,
    /// Protected entries, keyed by path relative to the common dir.
    pub entries: BTreeMap<String, Node>,
    /// Include targets (files named by `include.path` / `includeIf.*.path`), by absolute path.
    pub includes: BTreeMap<PathBuf, Node>,
    /// Linked worktree entries by id.
    pub worktrees: BTreeMap<String, WorktreeBaseline>,
    /// Ref snapshot for the commit scan (`scan::RefSnapshot`, serialised): the state file's
    /// second document (format 3), or its `refs` (formats 1 and 2).
    #[serde(skip)]
    pub refs: Refs,
    /// Armed findings the owner accepted at pin time (empty unless `--accept-armed`).
    #[serde(default)]
    pub accepted: Vec<Accepted>,
    /// Work-tree files the owner's git runs, as seen in each work tree at pin time
    /// (`super::hops`; empty in a state file written before they were recorded).
    #[serde(default)]
    pub hops: Vec<super::hops::HopPin>,
    /// The owner's config (any file git may read for this repository, its worktrees and
    /// submodules, at pin time) relaxes git's stat check
    /// ([`crate::catalogue::STAT_CHECK_RELAXING`]): the check then hashes tracked files
    /// changed since the pin whatever the index (R20-3).
    #[serde(default)]
    pub stat_relaxed: bool,
}

/// The state file's ref snapshot, kept as the JSON text it was read as: a check reads it
/// only when the commit scan runs (`scanlink::scan`), and a check whose scan record vouches
/// for the sources does not (parsing git.git's 1,018 refs into a JSON tree cost 3.7 M
/// instructions per check; skipping them inside the state's object 1.1 M). In format 3 it
/// is the text after the state's document, not parsed when the state file is read: parsed
/// (and its format version checked) where it is used, where text that is not one JSON
/// snapshot makes the scan incomplete, never clean. (In formats 1 and 2 it was checked to
/// be well-formed JSON when the state file was read.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refs(Vec<u8>);

impl Refs {
    /// The snapshot's JSON text, as bytes.
    pub fn json(&self) -> &[u8] {
        &self.0
    }

    /// From a JSON value (`scanlink::snapshot`'s).
    pub fn from_value(v: &serde_json::Value) -> Refs {
        Refs(serde_json::to_vec(v).expect("a JSON value serialises"))
    }
}

impl Default for Refs {
    /// `null`: no snapshot (a state file written before snapshots were taken).
    fn default() -> Refs {
        Refs(b"null".to_vec())
    }
}

impl<'de> Deserialize<'de> for Refs {
    /// `refs` inside the state's object (formats 1 and 2): well-formed JSON, kept as text.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Refs, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Ok(Refs(raw.get().as_bytes().to_vec()))
    }
}

/// Why a state file's bytes are not a state ([`State::from_bytes`]).
#[derive(Debug)]
pub enum FromBytesError {
    /// Not JSON of the state's shape (or a format 3 file without its snapshot).
    Parse(serde_json::Error),
    /// A well-formed state of a format this build does not read.
    Format(u32),
}

impl State {
    /// The state file's bytes: the state's JSON object (pretty-printed, without the ref
    /// snapshot), then the ref snapshot's JSON text as a second document on its own line.
    pub fn to_bytes(&self) -> serde_json::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        bytes.extend_from_slice(self.refs.json());
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// A state from a state file's bytes (formats 1 to 3). Format 3: the state's object,
    /// then the snapshot's text (not parsed here; see [`Refs`]); no text after the object
    /// is a parse error, never "no snapshot". Formats 1 and 2: one object, its `refs` the
    /// snapshot, nothing after it.
    pub fn from_bytes(mut bytes: Vec<u8>) -> Result<State, FromBytesError> {
        let mut stream = serde_json::Deserializer::from_slice(&bytes).into_iter::<StateFile>();
        let parsed = match stream.next() {
            Some(Ok(p)) => p,
            None => return Err(FromBytesError::Parse(serde::de::Error::custom("empty"))),
            Some(Err(e)) => {
                // A second look tells a state file of another format from a damaged one.
                let format = serde_json::Deserializer::from_slice(&bytes)
                    .into_iter::<serde_json::Value>()
                    .next()
                    .and_then(Result::ok)
                    .and_then(|v| v.get("format").and_then(serde_json::Value::as_u64));
                return Err(match format {
                    Some(f) if !FORMATS_READ.iter().any(|r| u64::from(*r) == f) => {
                        FromBytesError::Format(u32::try_from(f).unwrap_or(u32::MAX))
                    }
                    _ => FromBytesError::Parse(e),
                });
            }
        };
        if !FORMATS_READ.contains(&parsed.format) {
            return Err(FromBytesError::Format(parsed.format));
        }
        let custom = |m: &str| FromBytesError::Parse(serde::de::Error::custom(m));
        let in_object = parsed.refs.is_some();
        let third = parsed.format >= 3;
        let end = stream.byte_offset();
        if !third && !bytes[end..].trim_ascii().is_empty() {
            return Err(custom("trailing characters after the state's object"));
        }
        let mut st = State::try_from(parsed).map_err(|e| custom(&e))?;
        if third {
            if in_object {
                return Err(custom(
                    "format 3 keeps the ref snapshot after the state's object, not in it",
                ));
            }
            let rest = &bytes[end..];
            let start = end + (rest.len() - rest.trim_ascii_start().len());
            let len = rest.trim_ascii().len();
            if len == 0 {
                return Err(custom("no ref snapshot after the state's object"));
            }
            // The snapshot's text moved to the front of the buffer read (no copy), the
            // rest of the buffer given back (the check goes on allocating).
            bytes.truncate(start + len);
            bytes.drain(..start);
            bytes.shrink_to_fit();
            st.refs = Refs(bytes);
        }
        Ok(st)
    }
}

/// A node as stored in the state file: a file's content may be left in the blob table.
/// Deserialised by hand (see the `Deserialize` impl): serde's derive for an internally
/// tagged enum with a flattened field buffers every entry before reading it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StoredNode {
    Absent,
    File {
        mode: u32,
        oid: String,
        /// Inline content (format 1, or a content the blob table cannot hold); absent when
        /// the content is `blobs[oid]`.
        #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
        content: Option<Content>,
    },
    Dir {
        mode: u32,
    },
    Link {
        target: String,
    },
    Special {
        kind: super::nf::Kind,
    },
}

impl<'de> Deserialize<'de> for StoredNode {
    /// The shape the derived `Serialize` writes — `{"type": …, field: …}`, fields in any
    /// order, `text` / `hex` optional on a file — read in one pass. Unknown fields are
    /// ignored (as the derive did); a missing field is an error naming it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StoredNode, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, Visitor};

        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "snake_case")]
        enum Field {
            Type,
            Mode,
            Oid,
            Text,
            Hex,
            Target,
            Kind,
            #[serde(other)]
            Other,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Tag {
            Absent,
            File,
            Dir,
            Link,
            Special,
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StoredNode;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an entry: an object with a `type`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<StoredNode, A::Error> {
                let mut tag: Option<Tag> = None;
                let mut mode: Option<u32> = None;
                let mut oid: Option<String> = None;
                let mut content: Option<Content> = None;
                let mut target: Option<String> = None;
                let mut kind: Option<super::nf::Kind> = None;
                while let Some(k) = m.next_key::<Field>()? {
                    match k {
                        Field::Type => tag = Some(m.next_value()?),
                        Field::Mode => mode = Some(m.next_value()?),
                        Field::Oid => oid = Some(m.next_value()?),
                        Field::Text | Field::Hex if content.is_some() => {
                            return Err(A::Error::custom("both `text` and `hex`"))
                        }
                        Field::Text => content = Some(Content::Text(m.next_value()?)),
                        Field::Hex => content = Some(Content::Hex(m.next_value()?)),
                        Field::Target => target = Some(m.next_value()?),
                        Field::Kind => kind = Some(m.next_value()?),
                        Field::Other => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let tag = tag.ok_or_else(|| A::Error::missing_field("type"))?;
                Ok(match tag {
                    Tag::Absent => StoredNode::Absent,
                    Tag::File => StoredNode::File {
                        mode: mode.ok_or_else(|| A::Error::missing_field("mode"))?,
                        oid: oid.ok_or_else(|| A::Error::missing_field("oid"))?,
                        content,
                    },
                    Tag::Dir => StoredNode::Dir {
                        mode: mode.ok_or_else(|| A::Error::missing_field("mode"))?,
                    },
                    Tag::Link => StoredNode::Link {
                        target: target.ok_or_else(|| A::Error::missing_field("target"))?,
                    },
                    Tag::Special => StoredNode::Special {
                        kind: kind.ok_or_else(|| A::Error::missing_field("kind"))?,
                    },
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// A JSON object as a list of its (key, value) pairs in file order, and back: the state's
/// maps are then built in one pass from sorted input rather than one insert per key.
mod pairs {
    use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
    use serde::ser::{SerializeMap, Serializer};
    use serde::Serialize;

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        v: &[(K, V)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, x) in v {
            m.serialize_entry(k, x)?;
        }
        m.end()
    }

    pub fn deserialize<'de, K, V, D>(d: D) -> Result<Vec<(K, V)>, D::Error>
    where
        K: Deserialize<'de>,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        struct P<K, V>(std::marker::PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for P<K, V> {
            type Value = Vec<(K, V)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some(kv) = m.next_entry()? {
                    out.push(kv);
                }
                Ok(out)
            }
        }
        d.deserialize_map(P(std::marker::PhantomData))
    }
}

/// The state file as written: [`State`] with file contents in `blobs`, once per blob id.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StateFile {
    format: u32,
    pinned_at: String,
    repo: PathBuf,
    git_dir: PathBuf,
    common_dir: PathBuf,
    work_tree: Option<PathBuf>,
    session: Option<String>,
    session_dir: Option<PathBuf>,
    /// A JSON object; read into a list in file order (the map is built once, from it).
    #[serde(with = "pairs")]
    entries: Vec<(String, StoredNode)>,
    #[serde(with = "pairs")]
    includes: Vec<(PathBuf, StoredNode)>,
    worktrees: BTreeMap<String, WorktreeBaseline>,
    /// The snapshot inside the object: formats 1 and 2 only (format 3 writes it after).
    #[serde(default, skip_serializing)]
    refs: Option<Refs>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    accepted: Vec<Accepted>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    hops: Vec<super::hops::HopPin>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    stat_relaxed: bool,
    /// File contents by git blob id (format 2; absent in format 1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    blobs: BTreeMap<String, Content>,
}

impl From<State> for StateFile {
    fn from(s: State) -> StateFile {
        let mut blobs: BTreeMap<String, Content> = BTreeMap::new();
        let mut store = |n: Node| -> StoredNode {
            match n {
                Node::Absent => StoredNode::Absent,
                Node::File { mode, oid, content } => {
                    // Into the table under its id, unless there is no id or the table holds
                    // other bytes under it: then inline (restore stays byte-exact).
                    let inline = oid.is_empty()
                        || match blobs.get(&oid) {
                            Some(c) => c != &content,
                            None => {
                                blobs.insert(oid.clone(), content.clone());
                                false
                            }
                        };
                    StoredNode::File {
                        mode,
                        oid,
                        content: inline.then_some(content),
                    }
                }
                Node::Dir { mode } => StoredNode::Dir { mode },
                Node::Link { target } => StoredNode::Link { target },
                Node::Special { kind } => StoredNode::Special { kind },
            }
        };
        let entries = s.entries.into_iter().map(|(k, n)| (k, store(n))).collect();
        let includes = s.includes.into_iter().map(|(k, n)| (k, store(n))).collect();
        // (Both in key order: from the BTreeMaps.)
        StateFile {
            format: FORMAT,
            pinned_at: s.pinned_at,
            repo: s.repo,
            git_dir: s.git_dir,
            common_dir: s.common_dir,
            work_tree: s.work_tree,
            session: s.session,
            session_dir: s.session_dir,
            entries,
            includes,
            worktrees: s.worktrees,
            refs: None,
            accepted: s.accepted,
            hops: s.hops,
            stat_relaxed: s.stat_relaxed,
            blobs,
        }
    }
}

impl TryFrom<StateFile> for State {
    type Error = String;

    /// Every file entry gets its content back: inline, or from the blob table. An entry
    /// whose content is in neither makes the state file unusable (a restore could not
    /// rewrite it): refused, never taken as empty.
    fn try_from(f: StateFile) -> Result<State, String> {
        let blobs = &f.blobs;
        let load = |key: &dyn std::fmt::Display, n: StoredNode| -> Result<Node, String> {
            Ok(match n {
                StoredNode::Absent => Node::Absent,
                StoredNode::File { mode, oid, content } => {
                    let content = match content {
                        Some(c) => c,
                        None => blobs.get(&oid).cloned().ok_or_else(|| {
                            format!(
                                "entry {key}: its content (blob {oid}) is not in the state file"
                            )
                        })?,
                    };
                    Node::File { mode, oid, content }
                }
                StoredNode::Dir { mode } => Node::Dir { mode },
                StoredNode::Link { target } => Node::Link { target },
                StoredNode::Special { kind } => Node::Special { kind },
            })
        };
        // Collected in one pass (BTreeMap's bulk build: sorted, a key given twice keeps its
        // last value, as inserting one by one would).
        let entries = f
            .entries
            .into_iter()
            .map(|(k, n)| load(&k, n).map(|n| (k, n)))
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        let includes = f
            .includes
            .into_iter()
            .map(|(k, n)| load(&k.display(), n).map(|n| (k, n)))
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        Ok(State {
            format: f.format,
            pinned_at: f.pinned_at,
            repo: f.repo,
            git_dir: f.git_dir,
            common_dir: f.common_dir,
            work_tree: f.work_tree,
            session: f.session,
            session_dir: f.session_dir,
            entries,
            includes,
            worktrees: f.worktrees,
            refs: f.refs.unwrap_or_default(),
            accepted: f.accepted,
            hops: f.hops,
            stat_relaxed: f.stat_relaxed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_round_trips_text_and_binary() {
        for b in [&b"#!/bin/sh\necho hi\n"[..], &[0u8, 255, 10, 13][..], b""] {
            let c = Content::new(b);
            let j = serde_json::to_string(&c).unwrap();
            let back: Content = serde_json::from_str(&j).unwrap();
            assert_eq!(back.bytes().unwrap(), b);
        }
        assert!(matches!(Content::new(&[0xff]), Content::Hex(_)));
    }

    #[test]
    fn blob_id_is_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        match Node::file(b"hello\n", 0o644) {
            Node::File { oid, .. } => assert_eq!(oid, "ce013625030ba8dba906f756967f9e9ca394464a"),
            n => panic!("{n:?}"),
        }
    }

    fn state(entries: Vec<(&str, Node)>) -> State {
        State {
            format: FORMAT,
            pinned_at: "2026-11-30T00:00:00Z".into(),
            repo: "/r".into(),
            git_dir: "/r/.git".into(),
            common_dir: "/r/.git".into(),
            work_tree: Some("/r".into()),
            session: None,
            session_dir: None,
            entries: entries
                .into_iter()
                .map(|(k, n)| (k.to_owned(), n))
                .collect(),
            includes: [(PathBuf::from("/inc.cfg"), Node::file(b"[core]\n", 0o644))].into(),
            worktrees: BTreeMap::new(),
            refs: Refs::default(),
            accepted: Vec::new(),
            hops: Vec::new(),
            stat_relaxed: false,
        }
    }

    fn bytes_of(n: &Node) -> Vec<u8> {
        match n {
            Node::File { content, .. } => content.bytes().unwrap(),
            n => panic!("{n:?}"),
        }
    }

    #[test]
    fn identical_files_are_stored_once_and_come_back_byte_exact() {
        let sample = b"#!/bin/sh\n# \"sample\" hook\n\texit 0\n".to_vec();
        let binary = vec![0u8, 0xff, b'\n', 0x80];
        let mut entries = Vec::new();
        let keys: Vec<String> = (0..21)
            .map(|i| format!("modules/m{i}/hooks/pre-commit.sample"))
            .collect();
        for k in &keys {
            entries.push((k.as_str(), Node::file(&sample, 0o755)));
        }
        entries.push(("a.bin", Node::file(&binary, 0o600)));
        entries.push(("b.bin", Node::file(&binary, 0o644)));
        entries.push(("empty", Node::file(b"", 0o644)));
        entries.push(("hooks", Node::Dir { mode: 0o755 }));
        entries.push(("gone", Node::Absent));
        entries.push((
            "l",
            Node::Link {
                target: "/x".into(),
            },
        ));
        let st = state(entries);
        let json = serde_json::to_string(&st).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["format"], 3);
        // One copy of the sample, one of the binary, one of the empty file, one include.
        assert_eq!(v["blobs"].as_object().unwrap().len(), 4, "{json}");
        assert_eq!(json.matches("sample\\\" hook").count(), 1, "{json}");
        assert!(v["entries"]["a.bin"].get("hex").is_none());
        let back: State = serde_json::from_str(&json).unwrap();
        assert_eq!(back.entries, st.entries);
        assert_eq!(back.includes, st.includes);
        for k in &keys {
            assert_eq!(bytes_of(&back.entries[k]), sample);
        }
        assert_eq!(bytes_of(&back.entries["a.bin"]), binary);
        assert!(matches!(
            back.entries["b.bin"],
            Node::File { mode: 0o644, .. }
        ));
        assert_eq!(bytes_of(&back.entries["empty"]), b"");
    }

    #[test]
    fn contents_the_table_cannot_hold_stay_inline() {
        // No blob id (the hash refused the bytes), and other bytes under an id already in the
        // table: both kept inline, both restored byte-exact.
        let a = Node::file(b"first\n", 0o644);
        let Node::File { oid, .. } = a.clone() else {
            unreachable!()
        };
        let clash = Node::File {
            mode: 0o644,
            oid: oid.clone(),
            content: Content::new(b"other bytes\n"),
        };
        let no_id = Node::File {
            mode: 0o644,
            oid: String::new(),
            content: Content::new(b"unhashed\n"),
        };
        let st = state(vec![("a", a), ("b", clash.clone()), ("c", no_id.clone())]);
        let json = serde_json::to_string(&st).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(v["entries"]["a"].get("text").is_none());
        assert_eq!(v["entries"]["b"]["text"], "other bytes\n");
        assert_eq!(v["entries"]["c"]["text"], "unhashed\n");
        let back: State = serde_json::from_str(&json).unwrap();
        assert_eq!(back.entries, st.entries);
        assert_eq!(bytes_of(&back.entries["b"]), b"other bytes\n");
    }

    #[test]
    fn format_1_with_every_content_inline_still_loads() {
        let v1 = r#"{"format": 1, "pinned_at": "t", "repo": "/r", "git_dir": "/r/.git",
            "common_dir": "/r/.git", "work_tree": "/r", "session": "s1", "session_dir": null,
            "entries": {
              "HEAD": {"type": "file", "mode": 420, "oid": "x1", "text": "ref: refs/heads/main\n"},
              "hooks/b": {"type": "file", "mode": 493, "oid": "x2", "hex": "00ff"},
              "commondir": {"type": "absent"},
              "hooks": {"type": "dir", "mode": 493}},
            "includes": {"/i": {"type": "file", "mode": 420, "oid": "x3", "text": "[a]\n"}},
            "worktrees": {"wt1": {"path": "/w/wt1", "own": true}},
            "refs": {}}"#;
        let st: State = serde_json::from_str(v1).unwrap();
        assert_eq!(st.format, 1);
        assert_eq!(bytes_of(&st.entries["HEAD"]), b"ref: refs/heads/main\n");
        assert_eq!(bytes_of(&st.entries["hooks/b"]), [0u8, 0xff]);
        assert_eq!(bytes_of(&st.includes[&PathBuf::from("/i")]), b"[a]\n");
        // Written again, it is format 3.
        let again: serde_json::Value = serde_json::to_value(&st).unwrap();
        assert_eq!(again["format"], 3);
        assert!(again["blobs"].get("x1").is_some());
    }

    fn snapshot() -> Refs {
        Refs::from_value(&serde_json::json!({"format": 1, "refs": {"refs/heads/main": "ab"}}))
    }

    #[test]
    fn format_3_writes_the_snapshot_after_the_state_and_reads_it_back_as_text() {
        let mut st = state(vec![("HEAD", Node::file(b"ref: refs/heads/main\n", 0o644))]);
        st.refs = snapshot();
        let bytes = st.to_bytes().unwrap();
        let mut docs =
            serde_json::Deserializer::from_slice(&bytes).into_iter::<serde_json::Value>();
        let first = docs.next().unwrap().unwrap();
        assert_eq!(first["format"], 3);
        assert!(first.get("refs").is_none(), "{first}");
        let second = docs.next().unwrap().unwrap();
        assert_eq!(second["refs"]["refs/heads/main"], "ab");
        assert!(docs.next().is_none());
        let back = State::from_bytes(bytes).unwrap();
        assert_eq!(back.refs, st.refs);
        assert_eq!(back.entries, st.entries);
        // The snapshot's text is not parsed when the state file is read: parsed where it is
        // used (the commit scan), where text that is not a snapshot makes it incomplete.
        let mut damaged = serde_json::to_vec_pretty(&st).unwrap();
        damaged.extend_from_slice(b"\n{\"format\": 1,{\n");
        let back = State::from_bytes(damaged).unwrap();
        assert_eq!(back.refs.json(), b"{\"format\": 1,{");
    }

    #[test]
    fn format_3_without_its_snapshot_or_with_it_inside_is_refused() {
        let st = state(vec![]);
        let object = serde_json::to_vec_pretty(&st).unwrap();
        for tail in [&b""[..], b"\n", b"  \n\t"] {
            let e = State::from_bytes([object.as_slice(), tail].concat());
            assert!(
                matches!(&e, Err(FromBytesError::Parse(m)) if m.to_string().contains("no ref snapshot")),
                "{e:?}"
            );
        }
        let mut v = serde_json::to_value(&st).unwrap();
        v["refs"] = serde_json::json!({"format": 1});
        let inside = [serde_json::to_vec(&v).unwrap(), b"\n{}\n".to_vec()].concat();
        assert!(matches!(
            State::from_bytes(inside),
            Err(FromBytesError::Parse(_))
        ));
        // Positive control: the object and a snapshot after it.
        assert!(State::from_bytes([object.as_slice(), b"\nnull\n"].concat()).is_ok());
    }

    #[test]
    fn formats_1_and_2_keep_the_snapshot_inside_and_nothing_after_it() {
        let mut v = serde_json::to_value(state(vec![])).unwrap();
        v["format"] = 2.into();
        v["refs"] = serde_json::json!({"format": 1, "refs": {}});
        let one = serde_json::to_vec_pretty(&v).unwrap();
        let st = State::from_bytes([one.as_slice(), b"\n"].concat()).unwrap();
        assert_eq!(st.format, 2);
        let refs: serde_json::Value = serde_json::from_slice(st.refs.json()).unwrap();
        assert_eq!(refs, v["refs"]);
        assert!(matches!(
            State::from_bytes([one.as_slice(), b"\n{}\n"].concat()),
            Err(FromBytesError::Parse(_))
        ));
        // An unknown format, whatever its shape: refused as such.
        v["format"] = 9.into();
        assert!(matches!(
            State::from_bytes(serde_json::to_vec(&v).unwrap()),
            Err(FromBytesError::Format(9))
        ));
        assert!(matches!(
            State::from_bytes(br#"{"format": 7, "other": "shape"}"#.to_vec()),
            Err(FromBytesError::Format(7))
        ));
    }

    #[test]
    fn an_entry_whose_blob_is_missing_is_refused() {
        let st = state(vec![("HEAD", Node::file(b"ref: refs/heads/main\n", 0o644))]);
        let mut v = serde_json::to_value(&st).unwrap();
        v["blobs"].as_object_mut().unwrap().retain(|_, c| {
            c.get("text").and_then(|t| t.as_str()) != Some("ref: refs/heads/main\n")
        });
        let e = serde_json::from_value::<State>(v).unwrap_err().to_string();
        assert!(
            e.contains("entry HEAD") && e.contains("is not in the state file"),
            "{e}"
        );
    }

    #[test]
    fn stored_nodes_read_in_any_field_order_and_refuse_missing_fields() {
        let ok = |j: &str| serde_json::from_str::<StoredNode>(j).unwrap();
        assert!(matches!(
            ok(r#"{"oid": "x", "text": "a", "mode": 420, "type": "file", "new_field": [1]}"#),
            StoredNode::File {
                mode: 420,
                content: Some(Content::Text(_)),
                ..
            }
        ));
        assert!(matches!(
            ok(r#"{"type": "file", "mode": 420, "oid": "x"}"#),
            StoredNode::File { content: None, .. }
        ));
        assert!(matches!(
            ok(r#"{"kind": "fifo", "type": "special"}"#),
            StoredNode::Special {
                kind: super::super::nf::Kind::Fifo
            }
        ));
        assert!(matches!(ok(r#"{"type": "absent"}"#), StoredNode::Absent));
        for (j, why) in [
            (r#"{"type": "file", "oid": "x"}"#, "mode"),
            (r#"{"type": "file", "mode": 1}"#, "oid"),
            (r#"{"mode": 1}"#, "type"),
            (r#"{"type": "link"}"#, "target"),
            (r#"{"type": "special"}"#, "kind"),
            (r#"{"type": "dir"}"#, "mode"),
            (
                r#"{"type": "file", "mode": 1, "oid": "x", "text": "a", "hex": "00"}"#,
                "both",
            ),
            (r#"{"type": "pipe"}"#, "unknown variant"),
        ] {
            let e = serde_json::from_str::<StoredNode>(j)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{j}: {e}");
        }
        // Every kind written by Serialize reads back.
        for n in [
            StoredNode::Absent,
            StoredNode::Dir { mode: 0o755 },
            StoredNode::Link { target: "t".into() },
            StoredNode::Special {
                kind: super::super::nf::Kind::Device,
            },
            StoredNode::File {
                mode: 0o644,
                oid: "o".into(),
                content: Some(Content::Hex("00".into())),
            },
        ] {
            let j = serde_json::to_string(&n).unwrap();
            assert_eq!(serde_json::to_string(&ok(&j)).unwrap(), j);
        }
    }

    #[test]
    fn entries_in_any_order_and_a_key_given_twice_keeps_its_last_value() {
        let j = r#"{"format": 2, "pinned_at": "t", "repo": "/r", "git_dir": "/r/.git",
            "common_dir": "/r/.git", "work_tree": null, "session": null, "session_dir": null,
            "entries": {"b": {"type": "absent"}, "a": {"type": "dir", "mode": 1},
                        "b": {"type": "dir", "mode": 2}},
            "includes": {}, "worktrees": {}}"#;
        let st: State = serde_json::from_str(j).unwrap();
        let keys: Vec<&str> = st.entries.keys().map(String::as_str).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(st.entries["b"], Node::Dir { mode: 2 });
    }
}
