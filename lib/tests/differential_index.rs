//! Differential test of the index reader (`safegit::gitlinks::walk`, which `gitlinks::scan`
//! and `index_paths::bad_entries` both use) against git's own: `git ls-files --stage -z` on the
//! same bytes, with both gits, reading in one thread and in several (`index.threads`: the
//! owner's git on a machine with more than one CPU loads entry blocks where the `IEOT` table
//! says).
//!
//! Inputs: indexes git writes (versions 2, 3 and 4; gitlinks, intent-to-add and skip-worktree
//! entries, conflict stages and `REUC`, `TREE`, `UNTR`, `EOIE`/`IEOT`, a split index, a
//! sparse index; and the index of each real repository bundle), structure-aware ones built
//! here (name lengths that disagree with the NUL, extended flags in version 2, prefix strips
//! past the previous name, extensions whose sizes do not add up), and byte mutations of both,
//! each with its trailing SHA-1 recomputed (or not) so that git reads past its checksum.
//!
//! A disagreement: the walk completes and lists entries (mode, path) that differ from what git
//! lists while git reads the file without error. Where the walk refuses (`None`) or defers to
//! gix (split index), or git refuses the file, there is nothing to compare: both are safe.
mod differential;

use differential::{gits, mutate_bytes, real_bundles, run_size, seed, Rng};
use gitward::safegit::gitlinks::{scan, walk, Scan, Walked};
use std::path::Path;
use std::process::Command;

fn git(g: &Path, dir: &Path, args: &[&str]) -> Vec<u8> {
    git_env(g, dir, args, &[])
}

fn git_env(g: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let out = Command::new(g)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        g.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

const FILE: u32 = 0o100644;
const GITLINK: u32 = 0o160000;

/// Indexes git itself writes, of every version and with every extension this git writes.
fn seeds_from_git(g: &Path, tmp: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let r = tmp.join("seed");
    std::fs::create_dir_all(&r).unwrap();
    git(g, &r, &["init", "-q"]);
    for i in 0..30 {
        let d = r.join(format!("d{}/deeper-{}", i % 4, i % 3));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i}.txt")), "x").unwrap();
    }
    std::fs::write(r.join("top.txt"), "t").unwrap();
    git(g, &r, &["add", "."]);
    git(g, &r, &["commit", "-qm", "c"]);
    for (i, p) in ["sub-a", "d1/sub-b", "zz/sub-c"].iter().enumerate() {
        let spec = format!("160000,{:040x},{p}", i + 1);
        git(g, &r, &["update-index", "--add", "--cacheinfo", &spec]);
    }
    git(g, &r, &["write-tree"]); // TREE
    std::fs::write(r.join("later.txt"), "y").unwrap();
    git(g, &r, &["add", "-N", "later.txt"]); // extended flags: intent-to-add
    git(g, &r, &["update-index", "--skip-worktree", "top.txt"]);
    // Conflict stages, then a resolution (REUC).
    let blob = String::from_utf8(git(g, &r, &["hash-object", "-w", "top.txt"])).unwrap();
    let blob = blob.trim();
    let info = format!(
        "100644 {blob} 1\tconf.txt\n100644 {blob} 2\tconf.txt\n100644 {blob} 3\tconf.txt\n"
    );
    let mut child = Command::new(g)
        .args(["update-index", "--index-info"])
        .current_dir(&r)
        .env("HOME", &r)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(info.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let with_conflict = std::fs::read(r.join(".git/index")).unwrap();
    out.push(("conflict stages".into(), with_conflict));
    std::fs::write(r.join("conf.txt"), "t").unwrap();
    git(g, &r, &["add", "conf.txt"]);
    git(g, &r, &["update-index", "--untracked-cache"]);
    git(
        g,
        &r,
        &["-c", "core.untrackedCache=true", "status", "--porcelain"],
    ); // UNTR
    for v in ["2", "3", "4"] {
        git(g, &r, &["update-index", "--index-version", v]);
        out.push((
            format!("v{v} with TREE/REUC/UNTR"),
            std::fs::read(r.join(".git/index")).unwrap(),
        ));
    }
    // EOIE and IEOT: git writes them with index.threads > 1 on a large enough index.
    let big = tmp.join("big");
    std::fs::create_dir_all(&big).unwrap();
    git(g, &big, &["init", "-q"]);
    let mut info = String::new();
    let empty = String::from_utf8(git(g, &big, &["hash-object", "-w", "--stdin"])).unwrap();
    for i in 0..1200 {
        let mode = if i % 97 == 5 { "160000" } else { "100644" };
        let oid = if mode == "160000" {
            format!("{:040x}", i + 1)
        } else {
            empty.trim().to_owned()
        };
        info.push_str(&format!("{mode} {oid}\tdir{}/file-{i:05}\n", i % 13));
    }
    let mut child = Command::new(g)
        .args(["update-index", "--index-info"])
        .current_dir(&big)
        .env("HOME", &big)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(info.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    for v in ["2", "4"] {
        git(
            g,
            &big,
            &[
                "-c",
                "index.threads=4",
                "-c",
                "index.recordEndOfIndexEntries=true",
                "-c",
                "index.recordOffsetTable=true",
                "update-index",
                "--index-version",
                v,
            ],
        );
        out.push((
            format!("v{v} with EOIE/IEOT"),
            std::fs::read(big.join(".git/index")).unwrap(),
        ));
    }
    // A sparse index (sdir extension, directory entries).
    git(
        g,
        &r,
        &["sparse-checkout", "init", "--cone", "--sparse-index"],
    );
    git(g, &r, &["sparse-checkout", "set", "d1"]);
    out.push((
        "sparse index".into(),
        std::fs::read(r.join(".git/index")).unwrap(),
    ));
    out
}

/// A structure-aware index: entries with chosen modes, names, flag lengths and extended flags,
/// then extensions, then (usually) a correct SHA-1 trailer.
fn generated(rng: &mut Rng) -> Vec<u8> {
    let version = *rng.pick(&[2u32, 3, 4, 4, 2, 5, 1]);
    let n = rng.below(9);
    let names: &[&[u8]] = &[
        b"a",
        b"a.txt",
        b"sub",
        b"d/sub",
        b"d/e/f",
        b"d/",
        b".git/hooks/pre-commit",
        b"",
        b"a\0b",
        b"zz/sub-c",
        b"long-name-that-goes-on-and-on/and-on",
        b"d/e",
    ];
    let mut d = b"DIRC".to_vec();
    d.extend(version.to_be_bytes());
    let count =
        if rng.one_in(8) { n + rng.below(3) } else { n }.saturating_sub(usize::from(rng.one_in(8)));
    d.extend((count as u32).to_be_bytes());
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..n {
        let start = d.len();
        let mut name: Vec<u8> = rng.pick(names).to_vec();
        if rng.one_in(10) {
            name = vec![b'x'; 0xFF0 + rng.below(40)];
        }
        let mode = *rng.pick(&[
            FILE, FILE, GITLINK, GITLINK, 0o120000, 0o040000, 0o100755, 0o160644, 0,
        ]);
        d.extend([0u8; 24]);
        d.extend(mode.to_be_bytes());
        d.extend([0u8; 12]);
        d.extend([0x11u8; 20]);
        let extended = rng.one_in(5);
        let mut flag_len = name.len().min(0xFFF) as u16;
        if rng.one_in(6) {
            flag_len = *rng.pick(&[
                0u16,
                1,
                3,
                0xFFF,
                flag_len.wrapping_add(1),
                flag_len.wrapping_sub(1),
            ]) & 0xFFF;
        }
        let stage = if rng.one_in(6) {
            rng.below(4) as u16
        } else {
            0
        };
        let flags = flag_len
            | (stage << 12)
            | if extended { 0x4000 } else { 0 }
            | if rng.one_in(10) { 0x8000 } else { 0 };
        d.extend(flags.to_be_bytes());
        if extended {
            let ext = *rng.pick(&[0x2000u16, 0x4000, 0x6000, 0x8000, 0x1000]);
            d.extend(ext.to_be_bytes());
        }
        if version == 4 {
            let common = prev.iter().zip(&name).take_while(|(a, b)| a == b).count();
            let mut strip = prev.len() - common;
            if rng.one_in(8) {
                strip = rng.below(prev.len() + 3);
            }
            // git's offset varint.
            let mut buf = [0u8; 16];
            let mut pos = buf.len() - 1;
            let mut v = strip;
            buf[pos] = (v & 127) as u8;
            v >>= 7;
            while v != 0 {
                v -= 1;
                pos -= 1;
                buf[pos] = 128 | (v & 127) as u8;
                v >>= 7;
            }
            d.extend(&buf[pos..]);
            d.extend(&name[common.min(name.len())..]);
            d.push(0);
            prev = name;
        } else {
            d.extend(&name);
            let size = (d.len() - start + 8) & !7;
            let pad = if rng.one_in(12) {
                rng.below(12)
            } else {
                start + size - d.len()
            };
            d.resize(d.len() + pad, 0);
        }
    }
    let exts: &[&[u8]] = &[
        b"TREE", b"REUC", b"UNTR", b"link", b"sdir", b"EOIE", b"IEOT", b"FSMN", b"abcd", b"ZZZZ",
    ];
    for _ in 0..rng.below(3) {
        let sig = rng.pick(exts);
        let payload_len = rng.below(40);
        let mut size = payload_len as u32;
        if rng.one_in(6) {
            size = *rng.pick(&[0u32, u32::MAX, size + 1, size.wrapping_sub(1), 1 << 31]);
        }
        d.extend(*sig);
        d.extend(size.to_be_bytes());
        d.extend((0..payload_len).map(|_| rng.next() as u8));
    }
    d
}

/// One version-2 entry (or version 4 with an empty previous name): zero stat data.
fn entry(version: u32, mode: u32, name: &[u8]) -> Vec<u8> {
    let mut e = vec![0u8; 24];
    e.extend(mode.to_be_bytes());
    e.extend([0u8; 12]);
    e.extend([0x22u8; 20]);
    e.extend((name.len().min(0xFFF) as u16).to_be_bytes());
    if version == 4 {
        e.push(0); // strip nothing: with no previous name, or at a block start
        e.extend(name);
        e.push(0);
    } else {
        e.extend(name);
        let size = (62 + name.len() + 8) & !7;
        e.resize(size, 0);
    }
    e
}

/// An index with an offset table (`IEOT`) and a valid `EOIE`, the way a reader that loads
/// entry blocks in threads sees it: block offsets that follow the entries, or that point into
/// an unknown extension holding other entries (redteam2 G2), or an `EOIE` whose offset names
/// another extension chain.
fn generated_ieot(rng: &mut Rng) -> Vec<u8> {
    let version = *rng.pick(&[2u32, 4]);
    let names: &[(u32, &[u8])] = &[
        (FILE, b"a.txt"),
        (FILE, b"b"),
        (GITLINK, b"sub"),
        (0o100755, b".git/hooks/pre-commit"),
        (FILE, b"c/d"),
    ];
    let n = 1 + rng.below(4);
    let mut d = b"DIRC".to_vec();
    d.extend(version.to_be_bytes());
    d.extend((n as u32).to_be_bytes());
    let mut starts = Vec::new();
    for _ in 0..n {
        starts.push(d.len() as u32);
        let (m, name) = *rng.pick(names);
        // Version 4 entries all strip nothing and carry full names here: a sequential
        // reader with a previous name sees the previous name as a prefix.
        d.extend(entry(version, m, name));
    }
    let ext_start = d.len() as u32;
    // Hidden entries inside an unknown (optional, upper-case) extension.
    let mut hidden = Vec::new();
    let hidden_at = ext_start + 8;
    let mut hidden_starts = Vec::new();
    for _ in 0..1 + rng.below(2) {
        hidden_starts.push(hidden_at + hidden.len() as u32);
        let (m, name) = *rng.pick(names);
        hidden.extend(entry(version, m, name));
    }
    let mut exts: Vec<(&[u8], Vec<u8>)> = vec![(b"ZZZZ", hidden)];
    // Blocks: split n entries into 1..=n blocks, then maybe point some elsewhere.
    let mut ieot = 1u32.to_be_bytes().to_vec();
    let mut i = 0;
    while i < n {
        let nr = 1 + rng.below(n - i);
        let mut off = starts[i];
        let mut cnt = nr as u32;
        if rng.one_in(3) {
            off = *rng.pick(&hidden_starts);
            cnt = 1;
        }
        if rng.one_in(10) {
            cnt += 1;
        }
        ieot.extend(off.to_be_bytes());
        ieot.extend(cnt.to_be_bytes());
        i += nr;
    }
    exts.push((b"IEOT", ieot));
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    for (sig, data) in &exts {
        d.extend(*sig);
        d.extend((data.len() as u32).to_be_bytes());
        h.update(sig);
        h.update(&(data.len() as u32).to_be_bytes());
        d.extend(data);
    }
    let mut eoie_off = ext_start;
    if rng.one_in(4) {
        eoie_off = hidden_at; // the extensions as the threaded reader finds them
    }
    d.extend(b"EOIE");
    d.extend(24u32.to_be_bytes());
    d.extend(eoie_off.to_be_bytes());
    d.extend(h.try_finalize().unwrap().as_bytes());
    d
}

fn seal(mut d: Vec<u8>) -> Vec<u8> {
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    h.update(&d);
    d.extend(h.try_finalize().unwrap().as_bytes());
    d
}

/// Recomputes the trailer of an index that already has one.
fn reseal(d: &[u8]) -> Vec<u8> {
    if d.len() < 20 {
        return d.to_vec();
    }
    seal(d[..d.len() - 20].to_vec())
}

const INTERESTING: &[&[u8]] = &[
    b"\0",
    b"\xff",
    b"\x0f\xff",
    b"\x00\x00",
    b"\x40\x00",
    b"\x00\x00\x00\x04",
    b"\x00\x00\x00\x03",
    b"\x00\x01\x60\x00",
    b"\x00\x00\x40\x00",
    b"\xff\xff\xff\xff",
    b"link",
    b"sdir",
    b"EOIE",
    b"IEOT",
    b"TREE",
    b"/",
    b".git",
    b"\x80\x80\x01",
];

type Entries = Vec<(u32, Vec<u8>)>;

/// What git lists: `None` when git refuses the file.
fn oracle(g: &Path, repo: &Path, index: &Path, threads: &str) -> Option<Entries> {
    let out = Command::new(g)
        .args([
            "-c",
            &format!("index.threads={threads}"),
            "ls-files",
            "--stage",
            "-z",
        ])
        .current_dir(repo)
        .env("HOME", repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_INDEX_FILE", index)
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    let mut v = Vec::new();
    for rec in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let tab = rec.iter().position(|&b| b == b'\t')?;
        let head = std::str::from_utf8(&rec[..tab]).ok()?;
        let mode = u32::from_str_radix(head.split(' ').next()?, 8).ok()?;
        // ls-files shows an empty name as `./` (quote_path relative to the top).
        let name = &rec[tab + 1..];
        v.push((
            mode,
            if name == b"./" {
                Vec::new()
            } else {
                name.to_vec()
            },
        ));
    }
    Some(v)
}

fn walked(data: &[u8]) -> Option<(Walked, Entries)> {
    let mut v = Vec::new();
    let w = walk(data, &mut |mode, name| v.push((mode, name.to_vec())))?;
    Some((w, v))
}

fn short(e: &Entries) -> Vec<(String, String)> {
    e.iter()
        .take(4)
        .map(|(m, p)| {
            let s = String::from_utf8_lossy(p);
            let s = if s.len() > 40 {
                format!("{}…({} bytes)", &s[..40], p.len())
            } else {
                s.into_owned()
            };
            (format!("{m:o}"), s)
        })
        .collect()
}

#[derive(Default, Debug)]
struct Tally {
    inputs: usize,
    compared: usize,
    walk_refused: usize,
    split: usize,
    git_refused: usize,
    sparse: usize,
    /// Inputs the walk refuses and `scan` reads (a NUL in a file's name), compared with git.
    scan_compared: usize,
}

#[test]
fn index_walk_agrees_with_git_ls_files() {
    let n = run_size(600);
    let seed = seed(0x1d3c_0001);
    let tmp = tempfile::tempdir().unwrap();
    for (gi, g) in gits().into_iter().enumerate() {
        let gtmp = tmp.path().join(format!("git{gi}"));
        std::fs::create_dir_all(&gtmp).unwrap();
        let mut seeds = seeds_from_git(&g, &gtmp);
        for b in real_bundles() {
            let dir = gtmp.join(b.file_stem().unwrap());
            git(
                &g,
                &gtmp,
                &[
                    "clone",
                    "-q",
                    "--no-checkout",
                    b.to_str().unwrap(),
                    dir.to_str().unwrap(),
                ],
            );
            git(&g, &dir, &["read-tree", "HEAD"]);
            for v in ["2", "4"] {
                git(&g, &dir, &["update-index", "--index-version", v]);
                seeds.push((
                    format!("{} v{v}", b.display()),
                    std::fs::read(dir.join(".git/index")).unwrap(),
                ));
            }
        }
        // Precision: every index git itself writes is read (the sparse one lists its
        // directory entries, which `scan` then refuses).
        for (label, data) in &seeds {
            assert!(
                walked(data).is_some(),
                "{label}: the walk refuses an index git wrote"
            );
        }
        let repo = gtmp.join("oracle");
        std::fs::create_dir_all(&repo).unwrap();
        git(&g, &repo, &["init", "-q"]);
        let index = repo.join(".git/fuzz-index");
        let mut rng = Rng::new(seed);
        let mut tally = Tally::default();
        let mut failures = Vec::new();
        // Every seed as is, then mutations and generated indexes.
        let mut inputs: Vec<(String, Vec<u8>)> = seeds.clone();
        for i in 0..n {
            let (label, data) = match rng.below(4) {
                0 => (format!("generated #{i}"), generated(&mut rng)),
                1 => (format!("generated IEOT #{i}"), generated_ieot(&mut rng)),
                _ => {
                    let (l, s) = rng.pick(&seeds).clone();
                    let mut d = s;
                    // Mutate near the entries and extensions as often as anywhere.
                    mutate_bytes(&mut rng, &mut d, INTERESTING);
                    (format!("{l} mutated #{i}"), d)
                }
            };
            let data = if label.starts_with("generated") {
                if rng.one_in(10) {
                    data
                } else {
                    seal(data)
                }
            } else if rng.one_in(10) {
                data
            } else {
                reseal(&data)
            };
            inputs.push((label, data));
        }
        for (label, data) in inputs {
            tally.inputs += 1;
            // `scan` steps over the names of files (not gitlinks or directories) in versions
            // 2 and 3, so it may read what the walk refuses: wherever it lists gitlinks and
            // git reads the file, they are exactly git's mode-160000 entries.
            if let Some(Scan::Gitlinks(links)) = scan(&data) {
                if walked(&data).is_none() {
                    std::fs::write(&index, &data).unwrap();
                    for threads in ["1", "4"] {
                        let Some(theirs) = oracle(&g, &repo, &index, threads) else {
                            continue;
                        };
                        tally.scan_compared += 1;
                        let theirs: Vec<Vec<u8>> = theirs
                            .into_iter()
                            .filter(|(m, _)| m & 0o170000 == 0o160000)
                            .map(|(_, p)| p)
                            .collect();
                        if theirs != links {
                            failures.push(format!(
                                "{label} (index.threads={threads}): git's gitlinks {theirs:?}, scan {links:?}"
                            ));
                        }
                    }
                }
            }
            let Some((w, ours)) = walked(&data) else {
                tally.walk_refused += 1;
                continue;
            };
            if matches!(w, Walked::Split(_)) {
                tally.split += 1;
                continue;
            }
            // A directory entry (mode 040000): git expands a sparse directory from its tree, or
            // drops the entry; `gitlinks::scan` refuses every such index (redteam2 G4).
            if ours.iter().any(|(m, _)| m & 0o170000 == 0o040000) {
                tally.sparse += 1;
                continue;
            }
            std::fs::write(&index, &data).unwrap();
            for threads in ["1", "4"] {
                match oracle(&g, &repo, &index, threads) {
                    None => tally.git_refused += 1,
                    Some(theirs) => {
                        tally.compared += 1;
                        // `scan` on the same file lists git's gitlinks (the walk and git agree
                        // on every entry here).
                        if let Some(Scan::Gitlinks(links)) = scan(&data) {
                            let from_git: Vec<&[u8]> = theirs
                                .iter()
                                .filter(|(m, _)| m & 0o170000 == 0o160000)
                                .map(|(_, p)| p.as_slice())
                                .collect();
                            if from_git != links.iter().map(Vec::as_slice).collect::<Vec<_>>() {
                                failures.push(format!(
                                    "{label} (index.threads={threads}): scan lists {links:?}"
                                ));
                            }
                        }
                        if theirs != ours {
                            let keep = gtmp.join(format!("disagreement-{}.index", failures.len()));
                            std::fs::write(&keep, &data).unwrap();
                            failures.push(format!(
                                "{label} (index.threads={threads}, kept as {}): git lists {} entries {:?}…, the walk {} {:?}…",
                                keep.display(),
                                theirs.len(),
                                short(&theirs),
                                ours.len(),
                                short(&ours),
                            ));
                        }
                    }
                }
            }
        }
        eprintln!("{} (seed {seed:#x}): {tally:?}", g.display());
        assert!(
            tally.compared > n / 10,
            "too few inputs reached the comparison: {tally:?}"
        );
        assert!(
            failures.is_empty(),
            "{} disagreements with {}:\n{}",
            failures.len(),
            g.display(),
            failures.join("\n")
        );
    }
}

/// The attack the differential test found (docs/fuzzing.md, index): an index whose `IEOT`
/// block points into an unknown extension holding `.git/hooks/pre-commit`. Read in sequence
/// (as the walk did) it lists `a.txt` only; the owner's git reading in threads
/// (`index.threads=3`, or unset with 3+ CPUs and 20,000+ entries) lists the hook entry, and
/// `git checkout -- .` writes it into the git dir as an executable hook. Positive control under
/// each git; under gitward the walk refuses the file, so `index_paths::bad_entries` reports
/// the index as unreadable (wt-check: a finding) and safe-git refuses (122).
#[test]
fn an_offset_table_that_hides_a_hook_entry_is_refused() {
    for g in gits() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("r");
        std::fs::create_dir_all(&r).unwrap();
        git(&g, &r, &["init", "-q"]);
        std::fs::write(r.join("a.txt"), "hi\n").unwrap();
        let canary = t.path().join("canary");
        std::fs::write(
            r.join("hook"),
            format!("#!/bin/sh\necho fired > '{}'\n", canary.display()),
        )
        .unwrap();
        git(&g, &r, &["add", "a.txt", "hook"]);
        let blob = |p: &str| {
            let out = git(&g, &r, &["rev-parse", &format!(":{p}")]);
            gix::ObjectId::from_hex(String::from_utf8(out).unwrap().trim().as_bytes()).unwrap()
        };
        let with_oid = |mode: u32, name: &[u8], oid: gix::ObjectId| {
            let mut e = entry(2, mode, name);
            e[40..60].copy_from_slice(oid.as_bytes());
            e
        };
        let a = with_oid(FILE, b"a.txt", blob("a.txt"));
        let hook = with_oid(0o100755, b".git/hooks/pre-commit", blob("hook"));
        let mut d = b"DIRC\0\0\0\x02\0\0\0\x01".to_vec();
        d.extend(&a);
        let ext_start = d.len() as u32;
        let mut ieot = 1u32.to_be_bytes().to_vec();
        ieot.extend((ext_start + 8).to_be_bytes());
        ieot.extend(1u32.to_be_bytes());
        let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
        for (sig, body) in [(&b"ZZZZ"[..], &hook), (b"IEOT", &ieot)] {
            let head = [sig, &(body.len() as u32).to_be_bytes()[..]].concat();
            h.update(&head);
            d.extend(head);
            d.extend(body);
        }
        d.extend(b"EOIE");
        d.extend(24u32.to_be_bytes());
        d.extend(ext_start.to_be_bytes());
        d.extend(h.try_finalize().unwrap().as_bytes());
        let d = seal(d);
        let index = r.join(".git/index");
        std::fs::write(&index, &d).unwrap();

        // Positive control: read in threads, git sees and writes the hook.
        let threaded = oracle(&g, &r, &index, "3").expect("git reads the crafted index");
        assert_eq!(
            threaded,
            vec![(0o100755, b".git/hooks/pre-commit".to_vec())]
        );
        let sequential = oracle(&g, &r, &index, "1").unwrap();
        assert_eq!(sequential, vec![(FILE, b"a.txt".to_vec())]);
        git(&g, &r, &["-c", "index.threads=3", "checkout", "--", "."]);
        assert!(
            r.join(".git/hooks/pre-commit").is_file(),
            "{}: positive control",
            g.display()
        );
        git(&g, &r, &["commit", "-qm", "x", "--allow-empty"]);
        assert!(canary.is_file(), "{}: the planted hook ran", g.display());

        // Under gitward: the walk refuses; wt-check's index pass reports it unreadable.
        assert_eq!(walk(&d, &mut |_, _| {}), None);
        assert!(gitward::index_paths::bad_entries(&index, &d).is_err());
        assert_eq!(gitward::safegit::gitlinks::scan(&d), None);
    }
}
