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
        // To the end of the component; a backslash is a separator to NTFS.
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
pub fn bad_entries(index: &std::path::Path, bytes: &[u8]) -> Result<Vec<BadEntry>, String> {
    bad_entries_of(index, bytes).0
}

/// [`bad_entries`], and whether the verdict depends on the bytes alone (not a split index).
fn bad_entries_of(index: &std::path::Path, bytes: &[u8]) -> (Result<Vec<BadEntry>, String>, bool) {
    use crate::safegit::gitlinks::{walk, Walked};
    let mut out = Vec::new();
    let mut visit = |mode: u32, name: &[u8]| {
        if let Err(invalid) = verify_path(name, mode) {
            out.push(BadEntry {
                path: name.to_vec(),
                mode,
                invalid,
            });
        }
    };
    let split = match walk(bytes, &mut visit) {
        Some(Walked::Complete) => return (Ok(out), true),
        Some(Walked::Split) => (|| {
            let options = gix::index::decode::Options {
                thread_limit: Some(1),
                ..Default::default()
            };
            let file = gix::index::File::at(index, gix::hash::Kind::Sha1, true, options)
                .map_err(|e| format!("cannot read the split index: {e}"))?;
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
        })(),
        None => Err(
            "the index is not laid out as git reads it (version, object format or sizes)".into(),
        ),
    };
    (split, false)
}

/// Bound on the index bytes [`bad_entries_shared`] keeps for comparison in one process.
const SHARED_BYTES: usize = 64 << 20;

/// Verdicts of [`bad_entries_shared`]: each distinct index content read, with its verdict.
static SHARED: std::sync::Mutex<Vec<(Vec<u8>, Vec<BadEntry>)>> = std::sync::Mutex::new(Vec::new());

/// [`bad_entries`], decided once per distinct index content in this process: `check` reads
/// each git dir's index several times (the baseline comparison, the audit of the nested
/// walk) and linked worktrees on one commit hold byte-identical indexes. The key is the whole
/// content, compared byte for byte (never a hash the agent could collide), and only a
/// verdict that depends on the bytes alone is kept (not a split index's, which reads the
/// shared index too). At most [`SHARED_BYTES`] of contents are kept.
pub fn bad_entries_shared(index: &std::path::Path, bytes: &[u8]) -> Result<Vec<BadEntry>, String> {
    let mut memo = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, v)) = memo.iter().find(|(b, _)| b.as_slice() == bytes) {
        return Ok(v.clone());
    }
    let (verdict, bytes_alone) = bad_entries_of(index, bytes);
    let verdict = verdict?;
    let kept: usize = memo.iter().map(|(b, _)| b.len()).sum();
    if bytes_alone && kept + bytes.len() <= SHARED_BYTES {
        memo.push((bytes.to_vec(), verdict.clone()));
    }
    Ok(verdict)
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

    /// The shared verdict is the verdict of exactly these bytes: an index that differs from
    /// a clean one in a single byte is judged on its own.
    #[test]
    fn shared_verdicts_are_keyed_by_the_whole_content() {
        let clean = index_v2(&["a/b.txt".into(), "c/d.txt".into()]);
        let bad = index_v2(&["a/b.txt".into(), "c/.GIT".into()]);
        assert_eq!(clean.len(), bad.len());
        let p = std::path::Path::new("index");
        for _ in 0..2 {
            assert!(bad_entries_shared(p, &clean).unwrap().is_empty());
            assert_eq!(bad_entries_shared(p, &bad).unwrap().len(), 1);
            assert_eq!(
                bad_entries_shared(p, &bad).unwrap(),
                bad_entries(p, &bad).unwrap()
            );
        }
        // Unreadable bytes stay an error every time.
        assert!(bad_entries_shared(p, &clean[..clean.len() - 3]).is_err());
        assert!(bad_entries_shared(p, &clean[..clean.len() - 3]).is_err());
    }
}
