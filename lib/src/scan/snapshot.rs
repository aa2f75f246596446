//! The ref snapshot taken at `wt-check pin`: every ref of the repository and of each of its
//! worktrees, so that the end-of-turn scan knows which commits are new.

use super::{open_repo, ScanError};
use gix::refs::TargetRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the serialised [`RefSnapshot`] format. Bumped on incompatible changes; a
/// snapshot of another version is refused rather than misread.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// Where one ref pointed when the snapshot was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefValue {
    /// The object the ref resolves to (hex), after following symbolic refs but without
    /// peeling tags. `None` for a symbolic ref whose target does not exist (an unborn branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// For a symbolic ref (`HEAD` on a branch), the full name it points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbolic: Option<String>,
}

/// All refs of a repository at one moment: branches, remote-tracking branches, tags, notes,
/// the stash, `refs/replace/*`, and for every worktree its `HEAD` and per-worktree refs
/// (`refs/worktree/*`, `refs/bisect/*`, `refs/rewritten/*`).
///
/// Names follow git's own spelling: shared refs by their full name (`refs/heads/main`),
/// per-worktree refs with git's worktree prefix — `main-worktree/HEAD`,
/// `worktrees/<id>/HEAD`, `worktrees/<id>/refs/bisect/bad` — which `git rev-parse`
/// understands as written.
///
/// Invariant: `take` fails rather than returning a partial snapshot, so a later scan never
/// treats an unread ref as "known".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefSnapshot {
    pub format: u32,
    /// The object format of the ids (`sha1`, `sha256`).
    pub object_hash: String,
    pub refs: BTreeMap<String, RefValue>,
    /// The ids the reflogs and root refs (`ORIG_HEAD`, `FETCH_HEAD`, …) named at the pin
    /// (`scan::reflogs`), other than the refs' ids. Absent in a snapshot taken before they
    /// were read: then every id they name at the check is a tip of the scan.
    #[serde(default)]
    pub reflogs: ReflogIds,
}

/// The ids the reflogs and root refs named at the pin, split by whether the object was there. An id
/// whose object was there is known like a pinned ref's (the commit scan does not walk from
/// it); one whose object was missing is known only as long as it stays missing (an object
/// that appears later is scanned). Each is one string of the ids' lower-case hex, sorted and
/// concatenated without separator (one JSON string parses ten times faster than 5,000: a
/// long-lived branch's reflog costs the check next to nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflogIds {
    /// Read completely: `false` when the pin could not read every reflog (then nothing is
    /// known and the check scans every id, or fails closed if it cannot read them either).
    #[serde(default)]
    pub complete: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub present: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub missing: String,
}

impl ReflogIds {
    /// Is `id` among `list` (`present` or `missing`)? A list that is not sorted, or not
    /// made of whole ids, answers "no" for some ids: more is scanned, nothing is skipped.
    pub fn holds(list: &str, id: &gix::ObjectId) -> bool {
        let mut buf = [0u8; 64];
        let hex = id.hex_to_buf(&mut buf);
        let w = hex.len();
        if w == 0 || !list.len().is_multiple_of(w) {
            return false;
        }
        let (mut lo, mut hi) = (0, list.len() / w);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match list.as_bytes()[mid * w..(mid + 1) * w].cmp(hex.as_bytes()) {
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        false
    }
}

/// Ref prefixes that belong to one worktree (git `refs.c`: `is_per_worktree_ref`).
pub(crate) const PER_WORKTREE_PREFIXES: &[&str] =
    &["refs/worktree/", "refs/bisect/", "refs/rewritten/"];

/// The worktree prefix of the main worktree's per-worktree refs and `HEAD`.
pub const MAIN_WORKTREE: &str = "main-worktree/";

impl RefSnapshot {
    /// Read every ref of the repository whose git dir (or common dir, or a linked worktree's
    /// git dir) is `repo_git_dir`. Objects are read with gix; no program is run.
    /// The ids the reflogs name are recorded too ([`RefSnapshot::reflogs`]); a reflog that
    /// cannot be read leaves them unrecorded (`complete: false`), never fails the pin.
    pub fn take(repo_git_dir: &Path) -> Result<Self, ScanError> {
        let repo = open_repo(repo_git_dir)?;
        let mut snap = Self::take_from(&repo)?;
        snap.reflogs = reflog_ids(&repo, &snap);
        Ok(snap)
    }

    pub(crate) fn take_from(repo: &gix::Repository) -> Result<Self, ScanError> {
        let common = repo.common_dir().to_path_buf();
        // Read from the main git dir, whichever worktree's git dir we were given.
        let main = if repo.git_dir() == common {
            None
        } else {
            Some(open_repo(&common)?)
        };
        let main = main.as_ref().unwrap_or(repo);
        let mut refs = BTreeMap::new();
        let err = |what: &str, e: &dyn std::fmt::Display| ScanError::Refs {
            git_dir: main.git_dir().to_path_buf(),
            message: format!("{what}: {e}"),
        };

        let platform = main.references().map_err(|e| err("listing refs", &e))?;
        for r in platform.all().map_err(|e| err("listing refs", &e))? {
            let r = r.map_err(|e| err("reading a ref", &e))?;
            let name = r.name().as_bstr().to_string();
            let key = if PER_WORKTREE_PREFIXES.iter().any(|p| name.starts_with(p)) {
                format!("{MAIN_WORKTREE}{name}")
            } else {
                name
            };
            refs.insert(
                key,
                value_of(main, r).map_err(|e| err("resolving a ref", &e))?,
            );
        }
        let head = read_head(main).map_err(|e| err("reading HEAD", &e))?;
        if let Some(head) = head {
            refs.insert(format!("{MAIN_WORKTREE}HEAD"), head);
        }

        // Linked worktrees: git lists `$GIT_COMMON_DIR/worktrees/<id>/` entries; each has
        // its own HEAD and per-worktree refs.
        let wt_root = common.join("worktrees");
        let mut ids = Vec::new();
        match std::fs::read_dir(&wt_root) {
            Ok(rd) => {
                for e in rd {
                    let e = e.map_err(|e| ScanError::Io {
                        path: wt_root.clone(),
                        source: e,
                    })?;
                    let ft = e.file_type().map_err(|source| ScanError::Io {
                        path: e.path(),
                        source,
                    })?;
                    // A link where an entry folder is expected is not followed.
                    if ft.is_dir() {
                        ids.push(e.file_name());
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(ScanError::Io {
                    path: wt_root,
                    source,
                })
            }
        }
        ids.sort();
        // One ref store per entry, built from the main repository's settings: the same store
        // gix builds when it opens the entry's git dir (private refs in the entry, shared refs
        // in the common dir), without re-reading every config file 200 times. Shared refs
        // are those of this common dir whatever the entry's `commondir` file says — as for
        // git's own `worktrees/<id>/HEAD` lookups; a `commondir` that points elsewhere is
        // reported by the git-folder check (`layout::worktree_entries`).
        let opts = gix::refs::store::init::Options {
            write_reflog: main.refs.write_reflog,
            precompose_unicode: main.refs.precompose_unicode,
            prohibit_windows_device_names: main.refs.prohibit_windows_device_names,
        };
        let packed = main
            .refs
            .cached_packed_buffer()
            .map_err(|e| err("reading packed-refs", &e))?;
        let packed = packed.as_ref().map(|p| &***p);
        let mut key = String::new();
        for id in ids {
            let idstr = id.to_string_lossy();
            let dir = wt_root.join(&id);
            let werr = |what: &str, e: &dyn std::fmt::Display| ScanError::Refs {
                git_dir: dir.clone(),
                message: format!("{what}: {e}"),
            };
            let store = gix::refs::file::Store::for_linked_worktree_opts(
                dir.clone(),
                common.clone(),
                main.object_hash(),
                opts,
            );
            key.clear();
            key.push_str("worktrees/");
            key.push_str(&idstr);
            key.push('/');
            let base = key.len();
            // git skips an entry without a readable HEAD; gix cannot open it either. Asked
            // only when the lookup finds nothing or fails (one stat fewer per entry).
            let skip = || !dir.join("HEAD").is_file();
            match store.try_find_packed("HEAD", packed) {
                Ok(Some(head)) => {
                    let v = store_value_of(&store, packed, head)
                        .map_err(|e| werr("reading HEAD", &e))?;
                    key.push_str("HEAD");
                    refs.insert(key.clone(), v);
                    key.truncate(base);
                }
                Ok(None) => continue,
                Err(_) if skip() => continue,
                Err(e) => return Err(werr("reading HEAD", &e)),
            }
            // Listed through a store of the entry's own folder: the entry's store would also
            // walk the common dir's folder of each prefix, only to skip every ref there (all
            // of these prefixes are worktree-private: gix's overlay iteration drops private
            // refs of the common dir), one stat per prefix and entry. Same refs, same
            // order; the main worktree's own refs under these prefixes are listed above.
            // Values are still resolved through the entry's store.
            let private = gix::refs::file::Store::at_opts(dir.clone(), main.object_hash(), opts);
            for prefix in PER_WORKTREE_PREFIXES {
                let prefix = <&gix::path::RelativePath>::try_from(*prefix)
                    .map_err(|e| werr("listing refs", &e))?;
                let it = private
                    .iter_prefixed_packed(prefix, packed)
                    .map_err(|e| werr("listing refs", &e))?;
                for r in it {
                    let r = r.map_err(|e| werr("reading a ref", &e))?;
                    let name = r.name.as_bstr().to_string();
                    let v = store_value_of(&store, packed, r)
                        .map_err(|e| werr("resolving a ref", &e))?;
                    key.push_str(&name);
                    refs.insert(key.clone(), v);
                    key.truncate(base);
                }
            }
        }

        Ok(RefSnapshot {
            format: SNAPSHOT_FORMAT,
            object_hash: main.object_hash().to_string(),
            refs,
            reflogs: ReflogIds::default(),
        })
    }

    /// Parse a snapshot written by [`RefSnapshot::to_json`]; refuses another format version.
    pub fn from_json(text: &str) -> Result<Self, ScanError> {
        let s: RefSnapshot =
            serde_json::from_str(text).map_err(|e| ScanError::Snapshot(e.to_string()))?;
        if s.format != SNAPSHOT_FORMAT {
            return Err(ScanError::Snapshot(format!(
                "format {} (this build reads format {SNAPSHOT_FORMAT})",
                s.format
            )));
        }
        Ok(s)
    }

    /// The snapshot as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("snapshots serialise")
    }
}

/// The ids the reflogs of `repo` name now, other than the ids of `snap`'s refs, split by
/// whether their object is in the repository.
fn reflog_ids(repo: &gix::Repository, snap: &RefSnapshot) -> ReflogIds {
    let Ok(ids) = super::reflogs::read(repo.common_dir(), repo.object_hash(), &|| false) else {
        return ReflogIds::default();
    };
    let refs: std::collections::HashSet<&str> =
        snap.refs.values().filter_map(|v| v.id.as_deref()).collect();
    let (mut present, mut missing) = (Vec::new(), Vec::new());
    for id in ids.ids.keys() {
        let hex = id.to_string();
        if refs.contains(hex.as_str()) {
            continue;
        }
        if repo.has_object(id) {
            present.push(hex);
        } else {
            missing.push(hex);
        }
    }
    present.sort();
    missing.sort();
    ReflogIds {
        complete: true,
        present: present.concat(),
        missing: missing.concat(),
    }
}

/// Follow a ref through symbolic refs to an object id (tags are not peeled).
fn value_of(
    repo: &gix::Repository,
    mut r: gix::Reference<'_>,
) -> Result<RefValue, Box<dyn std::error::Error + Send + Sync>> {
    match r.target() {
        TargetRef::Object(id) => Ok(RefValue {
            id: Some(id.to_string()),
            symbolic: None,
        }),
        TargetRef::Symbolic(name) => {
            let symbolic = Some(name.as_bstr().to_string());
            let id = match repo.try_find_reference(name)? {
                Some(_) => Some(r.follow_to_object()?.to_string()),
                None => None,
            };
            Ok(RefValue { id, symbolic })
        }
    }
}

/// [`value_of`] for a ref read from a bare ref store (a linked worktree's): the same
/// answer — the object after following symbolic refs, `None` for an unborn branch.
fn store_value_of(
    store: &gix::refs::file::Store,
    packed: Option<&gix::refs::packed::Buffer>,
    mut r: gix::refs::Reference,
) -> Result<RefValue, Box<dyn std::error::Error + Send + Sync>> {
    use gix::refs::file::ReferenceExt;
    match &r.target {
        gix::refs::Target::Object(id) => Ok(RefValue {
            id: Some(id.to_string()),
            symbolic: None,
        }),
        gix::refs::Target::Symbolic(name) => {
            let symbolic = Some(name.as_bstr().to_string());
            let id = match store.try_find_packed(name.as_ref(), packed)? {
                Some(_) => Some(r.follow_to_object_packed(store, packed)?.to_string()),
                None => None,
            };
            Ok(RefValue { id, symbolic })
        }
    }
}

fn read_head(
    repo: &gix::Repository,
) -> Result<Option<RefValue>, Box<dyn std::error::Error + Send + Sync>> {
    match repo.try_find_reference("HEAD")? {
        Some(r) => Ok(Some(value_of(repo, r)?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::ReflogIds;
    use gix::ObjectId;

    #[test]
    fn reflog_ids_are_found_by_binary_search() {
        let ids: Vec<String> = ["1", "5", "a", "f"].iter().map(|c| c.repeat(40)).collect();
        let list = ids.concat();
        for h in &ids {
            let id = ObjectId::from_hex(h.as_bytes()).unwrap();
            assert!(ReflogIds::holds(&list, &id), "{h}");
            assert!(!ReflogIds::holds("", &id));
            assert!(!ReflogIds::holds(&list[1..], &id), "not whole ids");
        }
        for c in ["0", "3", "b", "e"] {
            let id = ObjectId::from_hex(c.repeat(40).as_bytes()).unwrap();
            assert!(!ReflogIds::holds(&list, &id), "{c}");
        }
    }
}
