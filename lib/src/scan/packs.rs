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

use gix::bstr::ByteSlice;
use gix::objs::{Data, Find};
use gix::odb::pack;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// Delta chains longer than this are left to gix (git's own `--depth` limit is 4095; packs
/// made by `gc` use 50, `gc --aggressive` 250).
const MAX_CHAIN: usize = 4096;
/// Bytes of a commit inflated for its header (tree, parents, author, committer lines).
const COMMIT_PREFIX: usize = 1024;

/// A decoded object, shared between the cache and its readers: handing it out copies nothing.
pub(crate) type Bytes = Rc<Vec<u8>>;

/// What one cached entry costs besides its object's bytes: the shared box (two counts and the
/// `Vec`: 40 bytes, a 48-byte heap chunk), the heap chunk header of the object's bytes, the
/// map's slot (key 16 bytes, [`Cached`] 24, a control byte) at a load factor down to 7/16
/// (hashbrown doubles, then fills to 7/8), and the eviction's sort record. Counted so that the
/// cap bounds memory, not only object bytes: a small-tree history (a few hundred bytes an
/// object) keeps hundreds of thousands of entries, and the map alone was a third of the cache.
const ENTRY_OVERHEAD: usize = 48 + 16 + 96 + 24;

/// What `data` costs the cache: its allocation and [`ENTRY_OVERHEAD`].
fn entry_cost(data: &Bytes) -> usize {
    data.capacity() + ENTRY_OVERHEAD
}

/// A memory-capped cache of decoded pack entries keyed by (pack index, data offset), as
/// gix-pack keys its caches. Least recently used entries go first: when the cap is passed,
/// the oldest entries are dropped until a quarter of the cap is free. Each entry is counted
/// at its allocation plus [`ENTRY_OVERHEAD`], so the cap is the cache's memory. An entry a
/// reader still holds stays alive until the reader drops it, so the cap bounds what the cache
/// keeps, and at most a few trees per diff come on top.
struct BaseCache {
    map: HashMap<(usize, u64), Cached>,
    bytes: usize,
    cap: usize,
    tick: u64,
}

struct Cached {
    data: Bytes,
    kind: gix::objs::Kind,
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

    fn get(&mut self, pack: usize, offset: u64) -> Option<(gix::objs::Kind, Bytes)> {
        self.tick += 1;
        let e = self.map.get_mut(&(pack, offset))?;
        e.used = self.tick;
        Some((e.kind, e.data.clone()))
    }

    fn put(&mut self, pack: usize, offset: u64, data: &Bytes, kind: gix::objs::Kind) {
        // One object larger than a quarter of the cap would evict everything else.
        if entry_cost(data) > self.cap / 4 {
            return;
        }
        self.tick += 1;
        let entry = Cached {
            data: data.clone(),
            kind,
            used: self.tick,
        };
        self.bytes += entry_cost(data);
        if let Some(old) = self.map.insert((pack, offset), entry) {
            self.bytes -= entry_cost(&old.data);
        }
        if self.bytes > self.cap {
            self.evict();
        }
    }

    fn evict(&mut self) {
        let target = self.cap - self.cap / 4;
        let mut ages: Vec<(u64, (usize, u64))> =
            self.map.iter().map(|(k, v)| (v.used, *k)).collect();
        ages.sort_unstable();
        for (_, k) in ages {
            if self.bytes <= target {
                break;
            }
            if let Some(v) = self.map.remove(&k) {
                self.bytes -= entry_cost(&v.data);
            }
        }
    }
}

/// A buffer of `len` zero bytes with room for `capacity`, or `None` when the allocator refuses
/// (a size from a pack or delta header is whatever the pack says: gix then reports it).
fn zeroed(len: usize, capacity: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(capacity.max(len)).ok()?;
    v.resize(len, 0);
    Some(v)
}

/// A size in a delta's header (git's `get_delta_hdr_size`): 7 bits a byte, low bits first.
fn delta_size(d: &[u8], at: &mut usize) -> Option<usize> {
    let mut size: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *d.get(*at)?;
        *at += 1;
        if shift > 63 {
            return None;
        }
        size |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return usize::try_from(size).ok();
        }
    }
}

/// Apply a delta (git's `patch_delta`) to `base`. `None` for anything git would refuse: a
/// base of another size, a copy outside the base, an insert past the data, a result of
/// another size than announced, the reserved command 0.
fn apply_delta(base: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
    let mut i = 0;
    if delta_size(delta, &mut i)? != base.len() {
        return None;
    }
    let size = delta_size(delta, &mut i)?;
    let mut out = zeroed(0, size)?;
    while let Some(&cmd) = delta.get(i) {
        i += 1;
        if cmd & 0x80 != 0 {
            let mut ofs: usize = 0;
            let mut len: usize = 0;
            for bit in 0..4 {
                if cmd & (1 << bit) != 0 {
                    ofs |= usize::from(*delta.get(i)?) << (8 * bit);
                    i += 1;
                }
            }
            for bit in 0..3 {
                if cmd & (0x10 << bit) != 0 {
                    len |= usize::from(*delta.get(i)?) << (8 * bit);
                    i += 1;
                }
            }
            if len == 0 {
                len = 0x10000;
            }
            out.extend_from_slice(base.get(ofs..ofs.checked_add(len)?)?);
        } else if cmd != 0 {
            let len = usize::from(cmd);
            out.extend_from_slice(delta.get(i..i + len)?);
            i += len;
        } else {
            return None;
        }
        if out.len() > size {
            return None;
        }
    }
    (out.len() == size).then_some(out)
}

struct State {
    cache: BaseCache,
    inflate: gix::zlib::Inflate,
    /// The entries of the chain being resolved, newest (the object asked for) first.
    chain: Vec<pack::data::Entry>,
    /// Inflated delta instructions.
    scratch: Vec<u8>,
}

/// The packs of a repository, opened (mapped) once and read by every thread.
pub(crate) struct Packs(Vec<pack::Bundle>);

impl Packs {
    /// Open every pack of `objects_dir/pack`. A pack that cannot be opened is left to the
    /// object database (each [`PackReader`]'s fallback), as is any pack that appears later.
    pub(crate) fn open(objects_dir: &Path, hash: gix::hash::Kind) -> Self {
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
        Packs(bundles)
    }
}

/// An object reader for one thread: packed objects through its delta-base cache, everything
/// else through `fallback`.
pub(crate) struct PackReader<'r> {
    bundles: &'r [pack::Bundle],
    fallback: &'r gix::OdbHandle,
    state: RefCell<State>,
}

impl<'r> PackReader<'r> {
    /// A reader of `packs`; `cache_bytes` bounds its delta-base cache.
    pub(crate) fn new(packs: &'r Packs, fallback: &'r gix::OdbHandle, cache_bytes: usize) -> Self {
        PackReader {
            bundles: &packs.0,
            fallback,
            state: RefCell::new(State {
                cache: BaseCache::new(cache_bytes),
                inflate: Default::default(),
                chain: Vec::new(),
                scratch: Vec::new(),
            }),
        }
    }

    /// Decode `id` from the packs; `None` when it is not in them or anything is off (the
    /// caller asks `fallback` then, which gives gix's answer or error).
    fn read_packed(&self, id: &gix::oid) -> Option<(gix::objs::Kind, Bytes)> {
        let (pack, bundle, offset) = self.bundles.iter().enumerate().find_map(|(n, b)| {
            let i = b.index.lookup(id)?;
            Some((n, b, b.index.pack_offset_at_index(i)))
        })?;
        let file = &bundle.pack;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        st.chain.clear();
        let mut entry = file.entry(offset).ok()?;
        // Down the chain by headers alone, to a cached entry or the full base.
        let (kind, mut data) = loop {
            if let Some(hit) = st.cache.get(pack, entry.data_offset) {
                break hit;
            }
            let base = match entry.header {
                pack::data::entry::Header::OfsDelta { base_distance } => {
                    entry.checked_base_pack_offset(base_distance)?
                }
                pack::data::entry::Header::RefDelta { base_id } => {
                    // A base in this pack is followed; elsewhere gix resolves the whole object.
                    let i = bundle.index.lookup(base_id)?;
                    bundle.index.pack_offset_at_index(i)
                }
                _ => {
                    // The full base: inflated and cached as git caches it.
                    let kind = entry.header.as_kind()?;
                    let size = usize::try_from(entry.decompressed_size).ok()?;
                    let mut out = zeroed(size, size)?;
                    file.decompress_entry(&entry, &mut st.inflate, &mut out)
                        .ok()?;
                    let out = Rc::new(out);
                    st.cache.put(pack, entry.data_offset, &out, kind);
                    break (kind, out);
                }
            };
            st.chain.push(entry);
            if st.chain.len() >= MAX_CHAIN {
                return None;
            }
            entry = file.entry(base).ok()?;
        };
        // Up the chain: each delta applied to the object below it, and cached in turn.
        while let Some(e) = st.chain.pop() {
            let size = usize::try_from(e.decompressed_size).ok()?;
            st.scratch.clear();
            st.scratch.try_reserve(size).ok()?;
            st.scratch.resize(size, 0);
            file.decompress_entry(&e, &mut st.inflate, &mut st.scratch)
                .ok()?;
            let out = Rc::new(apply_delta(&data, &st.scratch)?);
            st.cache.put(pack, e.data_offset, &out, kind);
            data = out;
        }
        Some((kind, data))
    }

    /// The start of commit `id` up to the end of its committer line, when the commit is
    /// stored whole in a pack and that line ends within its first [`COMMIT_PREFIX`] bytes:
    /// only that much is inflated (a commit's message is most of it, and the walk needs the
    /// tree, parents and committer). `None`: read the whole commit.
    pub(super) fn commit_header(&self, id: &gix::oid) -> Option<Vec<u8>> {
        self.commit_header_sized(id).map(|(h, _)| h)
    }

    /// [`Self::commit_header`], and the whole commit's size (the commit-graph check,
    /// `integrity::graph`, needs to know whether bytes follow the committer line: git before
    /// 2.43 reads the date as 0 when none do).
    pub(crate) fn commit_header_sized(&self, id: &gix::oid) -> Option<(Vec<u8>, usize)> {
        let (bundle, offset) = self.bundles.iter().find_map(|b| {
            let i = b.index.lookup(id)?;
            Some((b, b.index.pack_offset_at_index(i)))
        })?;
        let file = &bundle.pack;
        let entry = file.entry(offset).ok()?;
        if entry.header != pack::data::entry::Header::Commit {
            return None;
        }
        let size = usize::try_from(entry.decompressed_size).ok()?;
        let mut out = vec![0; size.min(COMMIT_PREFIX)];
        let input = file.entry_slice(entry.data_offset..file.pack_end() as u64)?;
        let mut st = self.state.borrow_mut();
        st.inflate.reset();
        let (_, _, written) = st.inflate.prefix(input, &mut out).ok()?;
        out.truncate(written);
        let line = out.find(b"\ncommitter ")?;
        let end = line + 1 + out[line + 1..].find_byte(b'\n')?;
        out.truncate(end + 1);
        Some((out, size))
    }

    /// The object `id`: from the packs through the cache, else from the object database.
    pub(crate) fn read(&self, id: &gix::oid) -> Result<Option<(gix::objs::Kind, Bytes)>, String> {
        if let Some(hit) = self.read_packed(id) {
            return Ok(Some(hit));
        }
        let mut buf = Vec::new();
        match self.fallback.try_find(id, &mut buf) {
            Ok(Some(d)) => {
                let kind = d.kind;
                Ok(Some((kind, Rc::new(buf))))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl super::treediff::TreeSource for PackReader<'_> {
    fn read_tree(&self, id: &gix::oid) -> Result<Bytes, String> {
        match self.read(id) {
            Ok(Some((gix::objs::Kind::Tree, d))) => Ok(d),
            Ok(Some((kind, _))) => Err(format!("{id} is a {kind}, not a tree")),
            Ok(None) => Err(format!("tree {id} cannot be read: not found")),
            Err(e) => Err(format!("tree {id} cannot be read: {e}")),
        }
    }
}

impl Find for PackReader<'_> {
    fn try_find<'a>(
        &self,
        id: &gix::oid,
        buffer: &'a mut Vec<u8>,
    ) -> gix::error::Result<Option<Data<'a>>> {
        match self.read_packed(id) {
            Some((kind, data)) => {
                buffer.clear();
                buffer.extend_from_slice(&data);
                Ok(Some(Data {
                    kind,
                    object_hash: id.kind(),
                    data: buffer.as_slice(),
                }))
            }
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

    /// The cap bounds what the cache keeps counted as memory: each entry at its allocation
    /// plus its bookkeeping, however small the objects (a history of small trees kept
    /// hundreds of thousands of entries whose bookkeeping the byte count did not see).
    #[test]
    fn cache_counts_entries_at_their_cost() {
        let cap = 1 << 20;
        let mut c = BaseCache::new(cap);
        for i in 0..100_000u64 {
            let data: Bytes = Rc::new(vec![7u8; 1 + (i % 300) as usize]);
            c.put(0, i, &data, gix::objs::Kind::Tree);
            assert!(c.bytes <= cap, "{} > {cap} after {i}", c.bytes);
            let held: usize = c.map.values().map(|e| entry_cost(&e.data)).sum();
            if i % 997 == 0 {
                assert_eq!(held, c.bytes);
            }
        }
        // What the entries hold, bookkeeping included, is within the cap (the object bytes
        // alone, ~150 an entry, would have let twice as many stay), and eviction keeps the
        // cache well filled.
        let objects: usize = c.map.values().map(|e| e.data.capacity()).sum();
        assert!(objects + c.map.len() * ENTRY_OVERHEAD <= cap);
        assert!(c.bytes >= cap / 2, "{} bytes left", c.bytes);
        // The latest entry is still there, one read back shares its bytes.
        let (kind, d) = c.get(0, 99_999).expect("most recent entry kept");
        assert_eq!((kind, d.len()), (gix::objs::Kind::Tree, 1 + 99_999 % 300));
        // An object over a quarter of the cap is not cached.
        let big: Bytes = Rc::new(vec![0u8; cap / 4]);
        c.put(1, 0, &big, gix::objs::Kind::Blob);
        assert!(c.get(1, 0).is_none());
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
        let packs = Packs::open(&repo.common_dir().join("objects"), repo.object_hash());
        for cap in [96 << 20, 4 << 10] {
            let reader = PackReader::new(&packs, &repo.objects, cap);
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
                    let mut b = Vec::new();
                    let (kind, a) = reader.read_packed(id).expect("served from the pack");
                    let theirs = repo.objects.try_find(id, &mut b).unwrap().unwrap();
                    assert_eq!((kind, a.as_slice()), (theirs.kind, theirs.data), "{id}");
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
