//! The gitlink entries (mode 160000, submodules) of an index file, found in one pass.
//!
//! safe-git must know every submodule git will recurse into, on every call; decoding the
//! whole index with gix costs about half of safe-git's own work on a 10,000-file repository.
//! This scanner reads only what it needs from git's on-disk format (`Documentation/gitformat-
//! index.txt`): the fixed part of each entry for the mode, and the path. It handles index
//! versions 2, 3 and 4 (prefix-compressed paths) with SHA-1 object ids. Anything it does not
//! fully understand — another version, a split index (`link` extension: entries live in a
//! shared index too), a size that does not add up — returns `None`, and the caller falls back
//! to gix's full decoder. It never guesses.

/// What the scan found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    /// Every gitlink path, in index order.
    Gitlinks(Vec<Vec<u8>>),
    /// A split index (`link` extension): entries live in a shared index as well, the one
    /// whose id this is (`sharedindex.<hex>` beside the index); the caller reads both with
    /// gix's full decoder (`crate::index_paths::read_split_index`).
    Split([u8; 20]),
    /// A sparse-directory entry (mode 040000): git expands it from a tree that may hold
    /// gitlinks the index does not list. Not vouched for.
    SparseDirectory(Vec<u8>),
}

/// Gitlink paths of `data` (an index file's bytes, SHA-1 repository), or `None` when the
/// bytes are not exactly what git would read (the caller refuses: a reader that disagrees
/// with git about entry boundaries is how a gitlink is hidden).
///
/// Versions 2 and 3 (what git writes unless `index.version` or `feature.manyFiles` asks for
/// 4) are stepped over by the length fields alone ([`gitlinks_v2`]): the bytes of a name are
/// read only when its entry is a gitlink or a directory. Version 4 names are prefix-compressed
/// (each is built from the previous one), so they go through [`walk`].
pub fn scan(data: &[u8]) -> Option<Scan> {
    let (version, count, end) = header(data)?;
    if version == 4 {
        return scan_visiting(data, &mut |_, _| {}).0;
    }
    let mut out = Vec::new();
    let mut sparse = None;
    let entries_end = gitlinks_v2(data, version, count, end, &mut out, &mut sparse);
    if let Some(d) = sparse {
        // As `scan_visiting`: the first directory entry is the answer, however the walk ends.
        return Some(Scan::SparseDirectory(d));
    }
    Some(match extensions(data, version, count, end, entries_end?)? {
        Walked::Complete => Scan::Gitlinks(out),
        Walked::Split(id) => Scan::Split(id),
    })
}

/// [`scan`], with every entry also handed to `also` in the same pass (`crate::index_paths`
/// judges the entries' paths while the gitlinks are collected), and how the [`walk`] ended.
pub fn scan_visiting(
    data: &[u8],
    also: &mut dyn FnMut(u32, &[u8]),
) -> (Option<Scan>, Option<Walked>) {
    let mut out = Vec::new();
    let mut sparse: Option<Vec<u8>> = None;
    let walked = walk(data, &mut |mode, name| {
        also(mode, name);
        if sparse.is_some() {
            return;
        }
        match mode & 0o170000 {
            0o040000 => sparse = Some(name.to_vec()),
            0o160000 => out.push(name.to_vec()),
            _ => {}
        }
    });
    if let Some(d) = sparse {
        return (Some(Scan::SparseDirectory(d)), walked);
    }
    let scan = match walked {
        Some(Walked::Complete) => Some(Scan::Gitlinks(out)),
        Some(Walked::Split(id)) => Some(Scan::Split(id)),
        None => None,
    };
    (scan, walked)
}

/// How a [`walk`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walked {
    /// Every entry was visited and the extensions add up to the trailer.
    Complete,
    /// A split index (`link` extension): more entries live in the shared index, the one
    /// whose id this is.
    Split([u8; 20]),
}

/// Visits every entry of `data` (an index file's bytes, SHA-1 repository) as `(mode, path)`,
/// in index order, or returns `None` when the bytes are not exactly what git would read
/// (entries visited before that point were visited; the caller must not trust them).
///
/// Entry boundaries follow `read-cache.c:create_from_disk`: the name length comes from the
/// flags (`flags & 0xFFF`; `strlen` only when it is 0xFFF), never from the first NUL, and the
/// name must end with a NUL exactly there.
///
/// git has a second way to read the same file, and the walk must agree with both: with more
/// than one thread (`index.threads` ≥ 3, or unset on a machine with 3+ CPUs and an index of
/// 20,000+ entries), git takes the extensions from the offset the `EOIE` extension names and
/// loads the entries in blocks where the `IEOT` table says, each block starting afresh (no
/// previous name to strip in version 4). A crafted table points a block into an unknown
/// extension that holds other entries (`.git/hooks/pre-commit`, a gitlink), which only the
/// threaded reader sees. So an `EOIE` must name the end of the entries, and an `IEOT` must
/// name exactly the entry boundaries of the sequential reading, or the walk refuses
/// (docs/fuzzing.md, index: found by the differential test).
pub fn walk<F: FnMut(u32, &[u8]) + ?Sized>(data: &[u8], visit: &mut F) -> Option<Walked> {
    let (version, count, end) = header(data)?;
    // Entry starts are recorded only for an index with an `IEOT` (a second pass, in
    // `extensions`): git writes none unless `index.recordOffsetTable` asks, and a push per
    // entry is a tenth of the walk.
    let entries_end = entries(data, version, count, end, visit, None)?;
    extensions(data, version, count, end, entries_end)
}

/// SHA-1 object ids only; a SHA-256 index fails the size checks.
const OID: usize = 20;

/// The header of an index file: `(version, entry count, where the trailer begins)`, or
/// `None` unless it is `DIRC`, version 2–4, with room for a SHA-1 trailer.
fn header(data: &[u8]) -> Option<(u32, usize, usize)> {
    const HEADER: usize = 12;
    const TRAILER: usize = OID;
    if data.len() < HEADER + TRAILER || &data[..4] != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes(data[4..8].try_into().ok()?);
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = u32::from_be_bytes(data[8..12].try_into().ok()?) as usize;
    Some((version, count, data.len() - TRAILER))
}

/// What follows the entries (which end at `entries_end`): the extensions must add up to the
/// trailer, an `EOIE` must name the end of the entries and an `IEOT` exactly the sequential
/// reading's entry boundaries (see [`walk`]); a `link` extension makes it a split index.
fn extensions(
    data: &[u8],
    version: u32,
    count: usize,
    end: usize,
    entries_end: usize,
) -> Option<Walked> {
    const HEADER: usize = 12;
    let mut pos = entries_end;
    // Extensions: a split index keeps entries in a shared index as well.
    let mut split: Option<[u8; 20]> = None;
    let mut ieot: Option<&[u8]> = None;
    while pos + 8 <= end {
        let sig = &data[pos..pos + 4];
        let size = u32::from_be_bytes(data[pos + 4..pos + 8].try_into().ok()?) as usize;
        let body = pos + 8;
        pos = pos.checked_add(8 + size)?;
        match sig {
            // `read_link_extension`: the shared index's id first (then the bitmaps).
            b"link" => split = Some(data.get(body..body + OID)?.try_into().ok()?),
            b"IEOT" if ieot.is_none() => ieot = Some(data.get(body..pos.min(end))?),
            _ => {}
        }
    }
    if pos != end {
        return None;
    }
    // `read_eoie_extension`: the last extension, at a fixed distance from the end.
    const EOIE_WITH_HEADER: usize = 8 + 4 + OID;
    if end >= HEADER + EOIE_WITH_HEADER && &data[end - EOIE_WITH_HEADER..][..4] == b"EOIE" {
        let at = end - EOIE_WITH_HEADER;
        let size = u32::from_be_bytes(data[at + 4..at + 8].try_into().ok()?) as usize;
        let offset = u32::from_be_bytes(data[at + 8..at + 12].try_into().ok()?) as usize;
        if size != 4 + OID || offset != entries_end {
            return None;
        }
    }
    // `read_ieot_extension` + `load_cache_entries_threaded`: version 1, then (offset, count)
    // pairs; every block must begin where the sequential reading has an entry begin (and
    // reads the same name there), and the blocks must cover the entries exactly.
    if let Some(t) = ieot {
        if t.len() < 4 + 8 || u32::from_be_bytes(t[..4].try_into().ok()?) != 1 {
            return None;
        }
        let mut starts = Vec::with_capacity(count.min(end / ENTRY_FIXED));
        entries(data, version, count, end, &mut |_, _| {}, Some(&mut starts))?;
        let mut next = 0usize;
        for pair in t[4..].chunks_exact(8) {
            let offset = u32::from_be_bytes(pair[..4].try_into().ok()?) as usize;
            let nr = u32::from_be_bytes(pair[4..].try_into().ok()?) as usize;
            match starts.get(next) {
                Some(&(at, fresh)) if at == offset && fresh => {}
                _ => return None,
            }
            next = next.checked_add(nr)?;
        }
        if next != count {
            return None;
        }
    }
    Some(match split {
        Some(id) => Walked::Split(id),
        None => Walked::Complete,
    })
}

/// The fixed part of an entry: stat data, mode, …, object id (SHA-1), flags.
const ENTRY_FIXED: usize = 40 + 20 + 2;

/// The entries of a version 2 or 3 index, stepped over by their length fields: pushes each
/// gitlink's path to `out`, records the first directory entry (mode 040000) in `sparse` and
/// stops there, and returns where the entries end — or `None` where [`entries`] would, with one
/// deliberate difference: a NUL inside the name of an entry that is neither a gitlink nor a
/// directory is not looked for.
///
/// Why that is sound for `scan`: entry boundaries are the same (the name length comes from
/// the flags, `strlen` only at 0xFFF, and the byte after the name must be the NUL, as in
/// `read-cache.c:create_from_disk`), and whether git enters a submodule depends on an entry's
/// mode alone (`S_ISGITLINK(ce->ce_mode)`), never on another entry's name. The name of a
/// gitlink or a directory entry is still refused when it holds a NUL: git reads it up to the
/// NUL (`ce->name` as a C string) where a byte-slice reader would not, and that is how a
/// submodule would be hidden. [`walk`] keeps refusing every such name for `index_paths`,
/// whose subject is the names.
#[inline(never)]
fn gitlinks_v2(
    data: &[u8],
    version: u32,
    count: usize,
    end: usize,
    out: &mut Vec<Vec<u8>>,
    sparse: &mut Option<Vec<u8>>,
) -> Option<usize> {
    const HEADER: usize = 12;
    let data = data.get(..end)?;
    let mut pos = HEADER;
    for _ in 0..count {
        let e = data.get(pos..pos + ENTRY_FIXED)?;
        let mode = u32::from_be_bytes([e[24], e[25], e[26], e[27]]);
        let flags = u16::from_be_bytes([e[60], e[61]]);
        let mut p = pos + ENTRY_FIXED;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            p += 2;
        }
        let flag_len = usize::from(flags & 0xFFF);
        let len = if flag_len == 0xFFF {
            data.get(p..)?.iter().position(|&b| b == 0)?
        } else {
            flag_len
        };
        // Padded with 1–8 NUL bytes to a multiple of 8 from the entry start: the name and its
        // NUL lie before `next`, which must not pass the trailer.
        let next = pos + ((p - pos + len + 8) & !7);
        if next > end || data[p + len] != 0 {
            return None;
        }
        match mode & 0o170000 {
            0o160000 | 0o040000 => {
                let name = &data[p..p + len];
                if has_nul(name) {
                    return None;
                }
                if mode & 0o170000 == 0o040000 {
                    *sparse = Some(name.to_vec());
                    return Some(next);
                }
                out.push(name.to_vec());
            }
            _ => {}
        }
        pos = next;
    }
    Some(pos)
}

/// The entries of [`walk`]: visits each as `(mode, path)` and returns where they end, or
/// `None` when they are not exactly what git reads. With `starts`, records where each entry
/// begins and whether a reader starting a block there (no previous name) reads the same name.
///
/// Entry boundaries follow `read-cache.c:create_from_disk`: the name length comes from the
/// flags (`flags & 0xFFF`; `strlen` only when it is 0xFFF), never from the first NUL, and the
/// name must end with a NUL exactly there.
#[inline(always)]
fn entries<F: FnMut(u32, &[u8]) + ?Sized>(
    data: &[u8],
    version: u32,
    count: usize,
    end: usize,
    visit: &mut F,
    mut starts: Option<&mut Vec<(usize, bool)>>,
) -> Option<usize> {
    const HEADER: usize = 12;
    let mut pos = HEADER;
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..count {
        if pos + ENTRY_FIXED > end {
            return None;
        }
        let start = pos;
        let mode = u32::from_be_bytes(data[pos + 24..pos + 28].try_into().ok()?);
        let flags = u16::from_be_bytes(data[pos + 60..pos + 62].try_into().ok()?);
        let mut p = pos + ENTRY_FIXED;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            p += 2;
        }
        let flag_len = usize::from(flags & 0xFFF);
        if version == 4 {
            // Strip count (git's offset varint), then the suffix: `len - copy_len` bytes and a
            // NUL, appended to what is left of the previous name.
            let (strip, used) = varint(data.get(p..end)?)?;
            p += used;
            let keep = prev.len().checked_sub(strip)?;
            if let Some(s) = starts.as_deref_mut() {
                s.push((start, keep == 0));
            }
            let suffix_len = if flag_len == 0xFFF {
                data.get(p..end)?.iter().position(|&b| b == 0)?
            } else {
                flag_len.checked_sub(keep)?
            };
            let suffix = data.get(p..p.checked_add(suffix_len)?)?;
            if data.get(p + suffix_len) != Some(&0) || has_nul(suffix) {
                return None;
            }
            prev.truncate(keep);
            prev.extend_from_slice(suffix);
            p += suffix_len + 1;
            pos = p;
            visit(mode, &prev);
        } else {
            if let Some(s) = starts.as_deref_mut() {
                s.push((start, true));
            }
            let len = if flag_len == 0xFFF {
                data.get(p..end)?.iter().position(|&b| b == 0)?
            } else {
                flag_len
            };
            let n = data.get(p..p.checked_add(len)?)?;
            if data.get(p + len) != Some(&0) || has_nul(n) {
                return None;
            }
            // Entries are padded with 1–8 NUL bytes to a multiple of 8 from the entry start.
            let base = p - pos;
            pos += (base + len + 8) & !7;
            if pos > end {
                return None;
            }
            visit(mode, n);
        }
    }
    Some(pos)
}

/// Does `b` hold a NUL byte? Eight bytes at a time (a word has a zero byte exactly when
/// `(w - 0x01…01) & !w & 0x80…80` is non-zero), the tail byte by byte: the same answer as
/// `b.contains(&0)`, a quarter of its instructions on paths of a few dozen bytes.
#[inline(always)]
fn has_nul(b: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or([1; 8]));
        if w.wrapping_sub(LO) & !w & HI != 0 {
            return true;
        }
    }
    words.remainder().contains(&0)
}

/// git's offset encoding (`decode_varint`): 7 bits a byte, high bit = more, plus one per
/// continuation.
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    let mut c = *b.first()?;
    let mut val = usize::from(c & 127);
    while c & 128 != 0 {
        i += 1;
        c = *b.get(i)?;
        val = val.checked_add(1)?.checked_shl(7)? + usize::from(c & 127);
    }
    Some((val, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-2 index entry with `name`, `mode` and the flags' name length `flag_len`
    /// (which a hostile index may set unlike the name's), padded as git pads it.
    fn raw_entry(name: &[u8], flag_len: u16, mode: u32) -> Vec<u8> {
        let mut e = vec![0u8; 62];
        e[24..28].copy_from_slice(&mode.to_be_bytes());
        e[60..62].copy_from_slice(&flag_len.to_be_bytes());
        e.extend_from_slice(name);
        let len = (62 + name.len() + 8) & !7;
        e.resize(len, 0);
        e
    }

    /// A version-2 index of `entries` with a zero checksum.
    fn raw_index(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut v = b"DIRC\0\0\0\x02".to_vec();
        v.extend((entries.len() as u32).to_be_bytes());
        for e in entries {
            v.extend(e);
        }
        v.extend([0u8; 20]);
        v
    }
    use std::path::Path;
    use std::process::Command;

    fn git(g: &Path, dir: &Path, args: &[&str]) {
        let st = Command::new(g)
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e")
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
    }

    fn with_gix(index: &Path) -> Vec<Vec<u8>> {
        let f =
            gix::index::File::at(index, gix::hash::Kind::Sha1, false, Default::default()).unwrap();
        f.entries()
            .iter()
            .filter(|e| e.mode == gix::index::entry::Mode::COMMIT)
            .map(|e| e.path(&f).to_vec())
            .collect()
    }

    /// The scanner agrees with gix's full decoder on indexes of every version git writes,
    /// with long and nested paths and gitlinks among them; a split index is left to gix.
    #[test]
    fn agrees_with_gix_on_every_index_version() {
        for g in ["/usr/bin/git", "/usr/local/bin/git"]
            .map(Path::new)
            .into_iter()
            .filter(|g| g.exists())
        {
            let t = tempfile::tempdir().unwrap();
            let r = t.path().join("r");
            std::fs::create_dir_all(&r).unwrap();
            git(g, &r, &["init", "-q"]);
            for i in 0..40 {
                let d = r.join(format!(
                    "dir{}/deeper/and-a-much-longer-folder-name-{i}",
                    i % 7
                ));
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join(format!("file-{i}.txt")), "x").unwrap();
            }
            git(g, &r, &["add", "."]);
            for (i, p) in ["sub-a", "dir3/sub-b", "zz/sub-c"].iter().enumerate() {
                let oid = format!("{:040x}", i + 1);
                git(
                    g,
                    &r,
                    &[
                        "update-index",
                        "--add",
                        "--cacheinfo",
                        &format!("160000,{oid},{p}"),
                    ],
                );
            }
            // An entry with extended flags (intent-to-add) makes git write version 3.
            std::fs::write(r.join("later.txt"), "y").unwrap();
            git(g, &r, &["add", "-N", "later.txt"]);
            for version in ["2", "3", "4"] {
                git(g, &r, &["update-index", "--index-version", version]);
                let index = r.join(".git/index");
                let bytes = std::fs::read(&index).unwrap();
                let Some(Scan::Gitlinks(fast)) = scan(&bytes) else {
                    panic!("v{version}: fast path refused")
                };
                assert_eq!(fast, with_gix(&index), "v{version} with {}", g.display());
                assert_eq!(fast.len(), 3);
            }
            git(g, &r, &["update-index", "--split-index"]);
            let bytes = std::fs::read(r.join(".git/index")).unwrap();
            assert!(
                matches!(scan(&bytes), Some(Scan::Split(id))
                    if r.join(".git").join(format!("sharedindex.{}", id.iter().map(|b| format!("{b:02x}")).collect::<String>())).is_file()),
                "a split index is left to the full decoder, naming its shared index"
            );
        }
    }

    /// A name whose length in the flags disagrees with its NUL (git takes the flags) is not
    /// read at all: that disagreement is how an entry is hidden from a second reader.
    #[test]
    fn a_name_length_that_disagrees_with_git_is_refused() {
        let entry = raw_entry;
        let index = raw_index;
        let ok = index(&[entry(b"a.txt", 5, 0o100644), entry(b"sub", 3, 0o160000)]);
        assert_eq!(scan(&ok), Some(Scan::Gitlinks(vec![b"sub".to_vec()])));
        // The flags say 9 bytes, the NUL comes after 5: git reads 9. The walk refuses; `scan`
        // steps over a file's name by the flags, as git does, and refuses it in a gitlink.
        let bad = index(&[entry(b"a.txt\0xyz", 9, 0o100644)]);
        assert_eq!(walk(&bad, &mut |_, _| {}), None);
        assert_eq!(scan(&bad), Some(Scan::Gitlinks(Vec::new())));
        let bad = index(&[entry(b"sub\0xyz", 7, 0o160000)]);
        assert_eq!(scan(&bad), None);
        // The flags say 3 bytes, the NUL comes after 5: the byte after the name is not a NUL.
        let bad = index(&[entry(b"a.txt", 3, 0o100644)]);
        assert_eq!(scan(&bad), None);
        let sparse = index(&[entry(b"d/", 2, 0o040000)]);
        assert_eq!(scan(&sparse), Some(Scan::SparseDirectory(b"d/".to_vec())));
    }

    /// `scan` steps over the names of entries that are neither gitlinks nor directories: a
    /// NUL inside such a name (git reads the flags' length, the entry is a file) does not make
    /// it refuse, while one inside a gitlink's or a directory entry's name still does (git
    /// would read the name only up to it). `walk` refuses all three, for `index_paths`.
    #[test]
    fn a_nul_matters_in_gitlink_and_directory_names_only() {
        let entry = |name: &[u8], mode: u32| raw_entry(name, name.len() as u16, mode);
        let index = raw_index;
        let file = index(&[entry(b"a\0b.txt", 0o100644), entry(b"sub", 0o160000)]);
        assert_eq!(scan(&file), Some(Scan::Gitlinks(vec![b"sub".to_vec()])));
        assert_eq!(walk(&file, &mut |_, _| {}), None);
        let link = index(&[entry(b"a.txt", 0o100644), entry(b"sub\0x", 0o160000)]);
        assert_eq!(scan(&link), None);
        let dir = index(&[entry(b"d\0/", 0o040000)]);
        assert_eq!(scan(&dir), None);
        // A directory entry is the answer however the rest reads (as `scan_visiting`).
        let mut dir_then_junk = index(&[entry(b"d/", 0o040000)]);
        dir_then_junk[11] = 2; // claims a second entry that is not there
        assert_eq!(
            scan(&dir_then_junk),
            Some(Scan::SparseDirectory(b"d/".to_vec()))
        );
        assert_eq!(
            scan(&dir_then_junk),
            scan_visiting(&dir_then_junk, &mut |_, _| {}).0
        );
    }

    /// The version 2/3 fast path answers as the full walk (`scan_visiting`) on every index
    /// without a NUL inside a name: byte mutations of indexes git wrote, each also resealed
    /// nowhere (the trailer is not read) — the boundaries, flags, sizes and extensions.
    #[test]
    fn the_fast_path_answers_as_the_walk() {
        let Some(g) = ["/usr/local/bin/git", "/usr/bin/git"]
            .map(Path::new)
            .into_iter()
            .find(|g| g.exists())
        else {
            assert!(std::env::var_os("CI").is_none(), "no git to write an index");
            eprintln!("SKIPPED: no git to write an index");
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("r");
        std::fs::create_dir_all(r.join("d")).unwrap();
        git(g, &r, &["init", "-q"]);
        for i in 0..12 {
            std::fs::write(r.join(format!("d/f{i}.txt")), "x").unwrap();
        }
        git(g, &r, &["add", "."]);
        let oid = format!("{:040x}", 7);
        git(
            g,
            &r,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{oid},d/sub"),
            ],
        );
        std::fs::write(r.join("later.txt"), "y").unwrap();
        git(g, &r, &["add", "-N", "later.txt"]);
        let mut seeds = Vec::new();
        for v in ["3", "2"] {
            git(g, &r, &["update-index", "--index-version", v]);
            seeds.push(std::fs::read(r.join(".git/index")).unwrap());
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut same_some, mut same_none) = (0, 0);
        for round in 0..20_000 {
            let mut d = seeds[round % seeds.len()].clone();
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % d.len();
                d[at] = match next() % 4 {
                    0 => 0,
                    1 => 0xFF,
                    2 => d[at] ^ (1 << (next() % 8)),
                    _ => next() as u8,
                };
            }
            let fast = scan(&d);
            let full = scan_visiting(&d, &mut |_, _| {}).0;
            if fast != full {
                // The one difference: a NUL inside a file's name, which the walk refuses.
                let mut nul_in_a_file_name = false;
                let _ = entries_v2_names(&d, &mut |mode, name| {
                    if mode & 0o170000 != 0o160000
                        && mode & 0o170000 != 0o040000
                        && name.contains(&0)
                    {
                        nul_in_a_file_name = true;
                    }
                });
                assert!(
                    full.is_none() && nul_in_a_file_name,
                    "round {round}: fast {fast:?}, walk {full:?}"
                );
                continue;
            }
            if fast.is_some() {
                same_some += 1;
            } else {
                same_none += 1;
            }
        }
        assert!(
            same_some > 1_000 && same_none > 1_000,
            "{same_some} {same_none}"
        );
    }

    /// Every version 2/3 entry as `(mode, name by the flags' length)`, NULs included: what
    /// the fast path steps over (test oracle for the one difference from the walk).
    fn entries_v2_names(data: &[u8], visit: &mut dyn FnMut(u32, &[u8])) -> Option<()> {
        let (version, count, end) = header(data)?;
        let mut pos = 12;
        for _ in 0..count {
            let e = data.get(pos..pos + ENTRY_FIXED)?;
            let mode = u32::from_be_bytes(e[24..28].try_into().ok()?);
            let flags = u16::from_be_bytes(e[60..62].try_into().ok()?);
            let p = pos
                + ENTRY_FIXED
                + if flags & 0x4000 != 0 && version >= 3 {
                    2
                } else {
                    0
                };
            let len = match usize::from(flags & 0xFFF) {
                0xFFF => data.get(p..end)?.iter().position(|&b| b == 0)?,
                l => l,
            };
            visit(mode, data.get(p..p + len)?);
            pos += (p - pos + len + 8) & !7;
        }
        Some(())
    }

    /// The word-at-a-time NUL search answers as `contains(&0)` at every length and position,
    /// and for the bytes that trip naive versions of the trick (0x80, 0x01, 0xFF next to 0).
    #[test]
    fn has_nul_is_contains_zero() {
        for len in 0..40 {
            for fill in [b'a', 0x01, 0x80, 0xFF, 0x7F] {
                let mut v = vec![fill; len];
                assert_eq!(has_nul(&v), v.contains(&0), "len {len} fill {fill:#x}");
                for at in 0..len {
                    v[at] = 0;
                    assert!(has_nul(&v), "len {len} fill {fill:#x} NUL at {at}");
                    v[at] = fill;
                }
            }
        }
        assert!(!has_nul(b"\x80\x01\x80\x01\x80\x01\x80\x01\x80"));
        assert!(has_nul(b"\x01\x01\x01\x01\x01\x01\x01\x00\x01"));
    }

    #[test]
    fn refuses_what_does_not_add_up() {
        assert_eq!(scan(b""), None);
        assert_eq!(scan(b"DIRC\0\0\0\x05\0\0\0\0xxxxxxxxxxxxxxxxxxxx"), None);
        // Claims one entry, holds none.
        let mut v = b"DIRC\0\0\0\x02\0\0\0\x01".to_vec();
        v.extend([0u8; 20]);
        assert_eq!(scan(&v), None);
        // An empty index is fine.
        let mut v = b"DIRC\0\0\0\x02\0\0\0\0".to_vec();
        v.extend([0u8; 20]);
        assert_eq!(scan(&v), Some(Scan::Gitlinks(Vec::new())));
    }
}
