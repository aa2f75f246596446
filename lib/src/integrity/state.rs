//! The state file: what `wt-check pin` recorded, with the bytes needed to restore.
//!
//! Format (JSON, `format: 1`, documented in `docs/wt-check.md`): every protected entry keyed
//! by its path relative to the common dir (`hooks/pre-commit`, `worktrees/wt1/gitdir`,
//! `modules/sub/config`), each an [`Node`]; include targets keyed by absolute path; the
//! linked worktree entries with whom they belong to; the ref snapshot for the commit scan.
//! Files are stored whole (UTF-8 as `text`, anything else as `hex`) with git's blob id, so a
//! restore needs nothing but this file.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The version of the state file format written by this build.
pub const FORMAT: u32 = 1;

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
        let oid = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
            .map(|o| o.to_string())
            .unwrap_or_default();
        Node::File {
            mode: mode & 0o7777,
            oid,
            content: Content::new(bytes),
        }
    }
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

/// The whole state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Ref snapshot for the commit scan (`scan::RefSnapshot`, serialised).
    #[serde(default)]
    pub refs: serde_json::Value,
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
}
