//! Tree reads for the diff workers, with git's delta-base cache.
//!
//! gix 0.90 resolves a deltified object by inflating its whole delta chain and caches only
//! the object asked for, not the bases it resolved on the way. git's history packs trees in
//! chains up to 50 deep, and a scan asks for neighbouring versions of the same tree one after
//! another: each request inflated most of the same chain again (half the scan's CPU time on
//! git.git). git's `unpack_entry` instead keeps every base it resolves in its
//! `delta_base_cache`, so the next version needs one inflate and one delta.
//!
//! [`PackReader`] does what git does with gix-pack's own decoder: it walks the chain by entry
//! headers (no inflating) down to the first entry the cache holds or the full base, then
//! decodes from there up, one entry at a time, each found in the cache as its successor's
//! base and put there in turn. Anything it cannot serve that way — a loose object, a pack that
//! appeared after it was opened, a base in another pack, any error — goes to the repository's
//! own object database, which gives the answer (or the error) gix always gave. The bytes are
//! gix-pack's: only the order of requests and what is cached differ.

use gix::objs::{Data, Find};
use gix::odb::pack::{self, cache::DecodeEntry};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

/// Delta chains longer than this are left to gix (git's own `--depth` limit is 4095; packs
/// made by `gc` use 50, `gc --aggressive` 250).
const MAX_CHAIN: usize = 4096;

/// A memory-capped cache of decoded pack entries keyed by (pack id, data offset), as gix-pack
/// keys its [`DecodeEntry`] caches. Least recently used entries go first: when the cap is
/// passed, the oldest entries are dropped until a quarter of the cap is free.
struct BaseCache {
    map: HashMap<(u32, u64), Cached>,
    bytes: usize,
    cap: usize,
    tick: u64,
}

struct Cached {
    data: Vec<u8>,
    kind: gix::objs::Kind,
    compressed_size: usize,
    used: u64,
}

impl BaseCache {
    fn new(cap: usize) -> Self {
        BaseCache {
            map: HashMap::new(),
            bytes: 0,
            cap,
            tick: 0,
        }
    }

    fn contains(&self, pack_id: u32, offset: u64) -> bool {
        self.map.contains_key(&(pack_id, offset))
    }

    fn evict(&mut self) {
        let target = self.cap - self.cap / 4;
        let mut ages: Vec<(u64, (u32, u64))> = self.map.iter().map(|(k, v)| (v.used, *k)).collect();
        ages.sort_unstable();
        for (_, k) in ages {
            if self.bytes <= target {
                break;
            }
            if let Some(v) = self.map.remove(&k) {
                self.bytes -= v.data.len();
            }
        }
    }
}

impl DecodeEntry for BaseCache {
    fn put(
        &mut self,
        pack_id: u32,
        offset: u64,
        data: &[u8],
        kind: gix::objs::Kind,
        compressed_size: usize,
    ) {
        // One object larger than a quarter of the cap would evict everything else.
        if data.len() > self.cap / 4 {
            return;
        }
        self.tick += 1;
        let entry = Cached {
            data: data.to_vec(),
            kind,
            compressed_size,
            used: self.tick,
        };
        self.bytes += data.len();
        if let Some(old) = self.map.insert((pack_id, offset), entry) {
            self.bytes -= old.data.len();
        }
        if self.bytes > self.cap {
            self.evict();
        }
    }

    fn get(
        &mut self,
        pack_id: u32,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Option<(gix::objs::Kind, usize)> {
        self.tick += 1;
        let e = self.map.get_mut(&(pack_id, offset))?;
        e.used = self.tick;
        out.clear();
        out.extend_from_slice(&e.data);
        Some((e.kind, e.compressed_size))
    }
}

struct State {
    cache: BaseCache,
    inflate: gix::zlib::Inflate,
    /// The entries of the chain being resolved, newest (the object asked for) first.
    chain: Vec<pack::data::Entry>,
    scratch: Vec<u8>,
}

/// An object finder for one worker: packed objects through the delta-base cache, everything
/// else through `fallback`.
pub(super) struct PackReader<'r> {
    bundles: Vec<pack::Bundle>,
    fallback: &'r gix::OdbHandle,
    state: RefCell<State>,
}

impl<'r> PackReader<'r> {
    /// Open every pack of `objects_dir/pack` (a pack that cannot be opened is left to
    /// `fallback`). `cache_bytes` bounds the delta-base cache.
    pub(super) fn new(
        objects_dir: &Path,
        hash: gix::hash::Kind,
        fallback: &'r gix::OdbHandle,
        cache_bytes: usize,
    ) -> Self {
        let mut bundles = Vec::new();
        if let Ok(rd) = std::fs::read_dir(objects_dir.join("pack")) {
            let mut idx: Vec<_> = rd
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "idx"))
                .collect();
            idx.sort();
            for p in idx {
                if let Ok(b) = pack::Bundle::at(&p, hash) {
                    bundles.push(b);
                }
            }
        }
        PackReader {
            bundles,
            fallback,
            state: RefCell::new(State {
                cache: BaseCache::new(cache_bytes),
                inflate: Default::default(),
                chain: Vec::new(),
                scratch: Vec::new(),
            }),
        }
    }

    /// Decode `id` from the packs into `out`; `None` when it is not in them or anything is
    /// off (the caller asks `fallback` then).
    fn read_packed(&self, id: &gix::oid, out: &mut Vec<u8>) -> Option<gix::objs::Kind> {
        let (bundle, offset) = self.bundles.iter().find_map(|b| {
            let i = b.index.lookup(id)?;
            Some((b, b.index.pack_offset_at_index(i)))
        })?;
        let file = &bundle.pack;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        st.chain.clear();
        let mut entry = file.entry(offset).ok()?;
        // Down the chain by headers alone, to a cached entry or the full base.
        loop {
            let cached = st.cache.contains(file.id, entry.data_offset);
            let base = match entry.header {
                _ if cached => None,
                pack::data::entry::Header::OfsDelta { base_distance } => {
                    Some(entry.checked_base_pack_offset(base_distance)?)
                }
                pack::data::entry::Header::RefDelta { base_id } => {
                    // A base in this pack is followed; elsewhere gix resolves the whole object.
                    let i = bundle.index.lookup(base_id)?;
                    Some(bundle.index.pack_offset_at_index(i))
                }
                _ => None,
            };
            let is_delta = entry.header.is_delta();
            st.chain.push(entry);
            match base {
                Some(b) if st.chain.len() < MAX_CHAIN => entry = file.entry(b).ok()?,
                Some(_) => return None,
                None => {
                    if !cached && !is_delta {
                        // The full base: decoded and cached as git caches it.
                        let e = st.chain.last()?;
                        let size = usize::try_from(e.decompressed_size).ok()?;
                        st.scratch.clear();
                        st.scratch.resize(size, 0);
                        file.decompress_entry(e, &mut st.inflate, &mut st.scratch)
                            .ok()?;
                        let kind = e.header.as_kind()?;
                        st.cache.put(file.id, e.data_offset, &st.scratch, kind, 0);
                        if st.chain.len() == 1 {
                            out.clear();
                            out.extend_from_slice(&st.scratch);
                            return Some(kind);
                        }
                    }
                    break;
                }
            }
        }
        // Up the chain: each entry's base is in the cache now, so gix-pack inflates one delta.
        let resolve = |base: &gix::oid, _: &mut Vec<u8>| {
            Ok(bundle.index.lookup(base).and_then(|i| {
                file.entry(bundle.index.pack_offset_at_index(i))
                    .ok()
                    .map(pack::data::decode::entry::ResolvedBase::InPack)
            }))
        };
        // The deepest entry is in the cache (found there or just put): decoded only when it is
        // the object asked for; otherwise its successor finds it there.
        let chain = std::mem::take(&mut st.chain);
        let skip = usize::from(chain.len() > 1);
        let mut kind = None;
        for e in chain.iter().rev().skip(skip) {
            let outcome = file
                .decode_entry(e.clone(), out, &mut st.inflate, &resolve, &mut st.cache)
                .ok()?;
            kind = Some(outcome.kind);
        }
        st.chain = chain;
        kind
    }
}

impl Find for PackReader<'_> {
    fn try_find<'a>(
        &self,
        id: &gix::oid,
        buffer: &'a mut Vec<u8>,
    ) -> gix::error::Result<Option<Data<'a>>> {
        match self.read_packed(id, buffer) {
            Some(kind) => Ok(Some(Data {
                kind,
                object_hash: id.kind(),
                data: buffer.as_slice(),
            })),
            None => self.fallback.try_find(id, buffer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("/usr/bin/git")
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@b")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@b")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Every object of a pack with deep delta chains (git's `gc` depth, trees that change a
    /// little per commit) reads the same through the delta-base cache as through gix, in
    /// three orders (pack order, newest first, oldest first), with a cache small enough to
    /// evict.
    #[test]
    fn every_packed_object_reads_as_gix_reads_it() {
        if !Path::new("/usr/bin/git").exists() {
            assert!(std::env::var_os("CI").is_none(), "CI: no /usr/bin/git");
            eprintln!("skipped: no /usr/bin/git");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path();
        git(r, &["init", "-q", "-b", "main", "."]);
        for i in 0..120 {
            for d in ["a", "a/b", "c"] {
                std::fs::create_dir_all(r.join(d)).unwrap();
                let f = r.join(d).join(format!("f{}", i % 7));
                std::fs::write(&f, format!("{i} {d}\n").repeat(1 + i % 5)).unwrap();
            }
            git(r, &["add", "-A"]);
            git(r, &["commit", "-q", "-m", &format!("c{i}")]);
        }
        git(r, &["repack", "-adfq", "--depth=50", "--window=250"]);
        let repo = crate::scan::open_repo(&r.join(".git")).unwrap();
        for cap in [96 << 20, 4 << 10] {
            let reader = PackReader::new(
                &repo.common_dir().join("objects"),
                repo.object_hash(),
                &repo.objects,
                cap,
            );
            assert_eq!(reader.bundles.len(), 1);
            let mut ids: Vec<gix::ObjectId> =
                reader.bundles[0].index.iter().map(|e| e.oid).collect();
            assert!(ids.len() > 500, "{} objects", ids.len());
            let mut deltas = 0;
            for order in 0..3 {
                match order {
                    1 => ids.sort(),
                    2 => ids.reverse(),
                    _ => {}
                }
                for id in &ids {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    let ours = reader
                        .read_packed(id, &mut a)
                        .expect("served from the pack");
                    let theirs = repo.objects.try_find(id, &mut b).unwrap().unwrap();
                    assert_eq!((ours, a.as_slice()), (theirs.kind, theirs.data), "{id}");
                    let off = reader.bundles[0]
                        .index
                        .pack_offset_at_index(reader.bundles[0].index.lookup(id).unwrap());
                    deltas +=
                        usize::from(reader.bundles[0].pack.entry(off).unwrap().header.is_delta());
                }
            }
            assert!(
                deltas > 300,
                "the pack has too few deltas to test: {deltas}"
            );
        }
    }
}
