//! Reading `.gitattributes` blobs from the object database: trees (sparse-index directory
//! entries, `attr.tree`) and blobs, bounded, through `gix::odb::at` — no repository opened, no
//! config read by gix, no filter applied.

use super::{AttributesError, GITATTRIBUTES};
use gix::bstr::ByteSlice;
use gix::objs::{Find, FindHeader};
use gix::ObjectId;
use std::path::{Path, PathBuf};

pub(super) struct Objects {
    odb: gix::odb::Handle,
    dir: PathBuf,
    max_blob: u64,
    max_trees: usize,
    trees_read: usize,
    buf: Vec<u8>,
}

/// `.gitattributes` found in trees: blobs to read and links not followed, by path.
#[derive(Default)]
pub(super) struct Found {
    pub blobs: Vec<(Vec<u8>, ObjectId)>,
    pub links: Vec<Vec<u8>>,
}

impl Objects {
    pub(super) fn open(
        common_dir: &Path,
        max_blob: u64,
        max_trees: usize,
    ) -> Result<Self, AttributesError> {
        let dir = common_dir.join("objects");
        let odb =
            gix::odb::at(&dir, gix::hash::Kind::Sha1).map_err(|e| AttributesError::Object {
                objects: dir.clone(),
                path: String::new(),
                id: String::new(),
                message: e.to_string(),
            })?;
        Ok(Objects {
            odb,
            dir,
            max_blob,
            max_trees,
            trees_read: 0,
            buf: Vec::new(),
        })
    }

    fn err(&self, path: &[u8], id: &gix::oid, message: String) -> AttributesError {
        AttributesError::Object {
            objects: self.dir.clone(),
            path: path.to_str_lossy().into_owned(),
            id: id.to_string(),
            message,
        }
    }

    /// Read an object of the expected kind (a copy of its data).
    fn read(
        &mut self,
        path: &[u8],
        id: &gix::oid,
        want: gix::objs::Kind,
    ) -> Result<Vec<u8>, AttributesError> {
        let header = self
            .odb
            .try_header(id)
            .map_err(|e| self.err(path, id, e.to_string()))?
            .ok_or_else(|| self.err(path, id, format!("missing {want}")))?;
        if header.size > self.max_blob && want == gix::objs::Kind::Blob {
            return Err(self.err(
                path,
                id,
                format!(
                    "{} bytes, more than the limit of {}",
                    header.size, self.max_blob
                ),
            ));
        }
        let mut buf = std::mem::take(&mut self.buf);
        let res = match self.odb.try_find(id, &mut buf) {
            Err(e) => Err(self.err(path, id, e.to_string())),
            Ok(None) => Err(self.err(path, id, format!("missing {want}"))),
            Ok(Some(d)) if d.kind != want => Err(self.err(
                path,
                id,
                format!("a {} where a {want} was expected", d.kind),
            )),
            Ok(Some(d)) => Ok(d.data.to_vec()),
        };
        self.buf = buf;
        res
    }

    /// A blob's bytes (bounded by the size limit).
    pub(super) fn blob(&mut self, path: &[u8], id: &gix::oid) -> Result<Vec<u8>, AttributesError> {
        self.read(path, id, gix::objs::Kind::Blob)
    }

    /// Every `.gitattributes` below the given trees, at any depth (bounded tree count).
    pub(super) fn scan_trees(
        &mut self,
        mut trees: Vec<(Vec<u8>, ObjectId)>,
        found: &mut Found,
    ) -> Result<(), AttributesError> {
        while let Some((prefix, id)) = trees.pop() {
            self.trees_read += 1;
            if self.trees_read > self.max_trees {
                return Err(AttributesError::Incomplete {
                    dir: self.dir.clone(),
                    reason: format!("more than {} trees to read", self.max_trees),
                });
            }
            let data = self.read(&prefix, &id, gix::objs::Kind::Tree)?;
            for e in gix::objs::TreeRefIter::from_bytes(&data, gix::hash::Kind::Sha1) {
                let e = e.map_err(|err| self.err(&prefix, &id, err.to_string()))?;
                let mut p = prefix.clone();
                if !p.is_empty() && !p.ends_with(b"/") {
                    p.push(b'/');
                }
                p.extend_from_slice(e.filename);
                if e.mode.is_tree() {
                    trees.push((p, e.oid.to_owned()));
                } else if e.filename == GITATTRIBUTES.as_bytes() {
                    if e.mode.is_link() {
                        found.links.push(p);
                    } else if e.mode.is_blob() {
                        found.blobs.push((p, e.oid.to_owned()));
                    }
                }
            }
        }
        Ok(())
    }

    /// Resolve a tree-ish the way `attr.tree` names one, for the forms that need no git:
    /// a full object id, a ref name (git's lookup order: `<name>`, `refs/<name>`,
    /// `refs/tags/<name>`, `refs/heads/<name>`, `refs/remotes/<name>`, …), `HEAD`, each
    /// optionally followed by `:<path>`. Tags and commits are peeled to their tree. `Ok(None)`
    /// when the ref or path does not exist (git then reads no attributes from it); `Err` for
    /// any other revision syntax (`~`, `^`, `@{…}`, abbreviated ids), which this reader cannot
    /// evaluate without running git.
    pub(super) fn resolve_treeish(
        &mut self,
        refs: &gix::refs::file::Store,
        spec: &str,
    ) -> Result<Option<ObjectId>, String> {
        let (rev, sub) = match spec.split_once(':') {
            Some((r, p)) => (r, Some(p)),
            None => (spec, None),
        };
        let rev = if rev.is_empty() { "HEAD" } else { rev };
        let mut id = if rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
            ObjectId::from_hex(rev.as_bytes()).map_err(|e| e.to_string())?
        } else {
            if rev.contains(['~', '^', '@', '{', '}']) || rev.contains("..") {
                return Err("revision syntax that only git can evaluate".into());
            }
            let mut name = rev.to_owned();
            let mut hops = 0;
            loop {
                let r = refs
                    .try_find(name.as_str())
                    .map_err(|e| format!("cannot look up {name:?}: {e}"))?;
                let Some(r) = r else { return Ok(None) };
                match r.target {
                    gix::refs::Target::Object(id) => break id,
                    gix::refs::Target::Symbolic(to) => {
                        hops += 1;
                        if hops > 5 {
                            return Err("symbolic refs nested too deeply".into());
                        }
                        name = to.as_bstr().to_str_lossy().into_owned();
                    }
                }
            }
        };
        // Peel tags and commits to a tree.
        for _ in 0..16 {
            let header = match self.odb.try_header(&id) {
                Ok(Some(h)) => h,
                Ok(None) => return Ok(None),
                Err(e) => return Err(e.to_string()),
            };
            match header.kind {
                gix::objs::Kind::Tree => break,
                gix::objs::Kind::Commit => {
                    let data = self
                        .read(b"", &id, gix::objs::Kind::Commit)
                        .map_err(|e| e.to_string())?;
                    id = gix::objs::CommitRefIter::from_bytes(&data, gix::hash::Kind::Sha1)
                        .tree_id()
                        .map_err(|e| e.to_string())?;
                }
                gix::objs::Kind::Tag => {
                    let data = self
                        .read(b"", &id, gix::objs::Kind::Tag)
                        .map_err(|e| e.to_string())?;
                    id = gix::objs::TagRefIter::from_bytes(&data, gix::hash::Kind::Sha1)
                        .target_id()
                        .map_err(|e| e.to_string())?;
                }
                gix::objs::Kind::Blob => return Ok(None),
            }
        }
        // Walk down `:<path>`.
        for comp in sub.unwrap_or("").split('/').filter(|c| !c.is_empty()) {
            let data = self
                .read(comp.as_bytes(), &id, gix::objs::Kind::Tree)
                .map_err(|e| e.to_string())?;
            let mut next = None;
            for e in gix::objs::TreeRefIter::from_bytes(&data, gix::hash::Kind::Sha1) {
                let e = e.map_err(|e| e.to_string())?;
                if e.filename == comp.as_bytes() && e.mode.is_tree() {
                    next = Some(e.oid.to_owned());
                }
            }
            match next {
                Some(n) => id = n,
                None => return Ok(None),
            }
        }
        Ok(Some(id))
    }
}
