//! Conflict resolutions recorded during the turn (`rr-cache/`), which the owner's git replays.
//!
//! git's rerere keeps, for each conflict it meets, the conflicted text (`preimage`) and the
//! resolution that was committed (`postimage`) in `rr-cache/<conflict id>/`; when the same
//! conflict comes again (`merge`, `rebase`, `cherry-pick`, `am`, `revert`) it writes the
//! recorded resolution into the work tree ("Resolved 'f' using previous resolution"; staged
//! too with `rerere.autoUpdate`). rerere is on where `rerere.enabled` says so or, unset,
//! wherever `rr-cache/` exists. `rr-cache/` lives in the common dir beside `objects/`, where
//! the agent can write: a postimage planted for a conflict between two of the owner's commits
//! is written into the owner's next merge of them (sixteenth red-team pass, R16-9), and a
//! resolution the agent recorded honestly is replayed the same way. Neither names a program;
//! both put text the agent chose into the owner's work tree without a commit to review.
//!
//! [`check`] judges every git dir git can enter for this work tree ([`git_dirs`]: the common
//! dir, every submodule git dir below `modules/` and each `worktrees/<id>/modules/`, the git
//! dir of every repository nested in a work tree that the owner's git enters, each nested
//! one's `modules/` and the common dir its `commondir` names; twenty-sixth red-team pass W1,
//! W5). In each it reports every `rr-cache/<id>` holding a resolution whose folder or any
//! file in it has a `ctime` not older than the pin: any write, rename into place, `chmod` or
//! `touch` moves `ctime` to now, and no unprivileged process can set it back. The pin's
//! instant is the state file's modification time (`pin` writes a new file). A warning, not an
//! error: the owner may have resolved a conflict in another worktree during the turn, and an
//! agent that merges with rerere on records its own. `rr-cache` whose own `ctime` moved since
//! the pin is read as made anew: a folder of resolutions prepared before the pin and renamed
//! into place keeps its entries' old `ctime`s, so then every entry is reported. Every name
//! under `rr-cache/` is judged by `lstat`: `rr-cache` itself, or an entry, a link, or an entry
//! holding anything but regular files of one link, is an error whatever its times (git never
//! makes one; rerere reads through a link, whose `ctime` does not move as its target changes:
//! W2); an entry that is a plain file is a warning (git ignores it). An `rr-cache` made or
//! changed since the pin, whatever it holds, is a warning where the owner's config does not
//! surely set `rerere.enabled` (rerere switched on: W4; `owner_sets_rerere`). `MERGE_RR`
//! (per worktree: each git dir's and each `worktrees/<id>/`'s) written since the pin that
//! names something is a warning (the owner's next `git rerere` records a preimage and
//! resolution from the files it names, absolute paths too, and replays them: R17-1); one that
//! is a link, a second name or not a file is an error whatever its times. With `--restore`
//! each is moved aside into the quarantine (never deleted), `rr-cache` itself last. Bounds:
//! [`MAX_IDS`] entries, [`MAX_MODULES`] submodule git dirs; past them the check is
//! incomplete.

use super::restore::Quarantine;
use super::Outcome;
use crate::events::{Event, EventKind, Tool};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most `rr-cache/<id>` folders looked at in one check.
pub const MAX_IDS: usize = 100_000;
/// Most submodule git dirs (below `modules/`) looked at.
pub const MAX_MODULES: usize = 10_000;

/// One `rr-cache` entry found new since the pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// `<git dir>/rr-cache/<id>`.
    pub path: PathBuf,
    /// The files in it (`preimage`, `postimage`, `thisimage`, …), sorted.
    pub files: Vec<String>,
}

/// What [`scan`] found.
#[derive(Debug, Default)]
pub struct Found {
    pub recorded: Vec<Recorded>,
    /// `MERGE_RR` files (of any git dir) written since the pin: rerere's list of the
    /// conflicts being recorded, which the owner's next `git rerere` (run by `merge`,
    /// `cherry-pick`, …) reads and records from — a planted one names work-tree or git-dir
    /// files as the preimage and resolution of a conflict to come (R17-1).
    pub merge_rr: Vec<PathBuf>,
    /// `rr-cache` folders made or changed since the pin (rerere switched on: git records and
    /// replays wherever `rr-cache/` exists and `rerere.enabled` is unset), whatever they hold.
    /// [`check`] keeps those where the owner's config does not set `rerere.enabled`.
    pub made: Vec<PathBuf>,
    /// `rr-cache` paths that are a link or not a folder.
    pub not_folder: Vec<PathBuf>,
    /// `rr-cache/<id>` that is a link (git reads the resolution wherever it points), or a
    /// name inside an entry that is not a regular file (a link, a FIFO, a folder): git never
    /// makes either. Reported whenever seen, whatever their times.
    pub odd_entries: Vec<PathBuf>,
    /// `MERGE_RR` that is not a regular file of one link (a link to a file the agent writes).
    pub odd_merge_rr: Vec<PathBuf>,
    /// `rr-cache/<id>` that is a regular file or another non-folder, not a link: git ignores
    /// it (rerere opens `<id>/preimage`), but never makes one.
    pub stray: Vec<PathBuf>,
    /// Records of `MERGE_RR` files (not odd) judged against their work tree, index and
    /// `rr-cache` ([`judge_records`]), whatever the `MERGE_RR`'s own times.
    pub records: Vec<RecordFinding>,
    pub incomplete: Option<(PathBuf, String)>,
}

/// A `MERGE_RR` record that is not surely git's own (twenty-eighth red-team pass, W1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFinding {
    /// The `MERGE_RR` file.
    pub merge_rr: PathBuf,
    /// The record's path, as written (lossy).
    pub record: String,
    /// The record's conflict id (without the variant).
    pub id: String,
    /// An error (else a warning).
    pub error: bool,
    /// The event's `change`.
    pub change: &'static str,
    /// One line: the record and why (the event's message puts the `MERGE_RR`'s path first).
    pub why: String,
    /// A planted `rr-cache/<id>` to move aside with the `MERGE_RR`.
    pub entry: Option<PathBuf>,
}

/// Whether a `ctime` of `(secs, nsecs)` is not older than `since`.
fn not_older(secs: i64, nsecs: i64, since: (i64, i64)) -> bool {
    (secs, nsecs) >= since
}

/// Every git dir rerere may work in for the repository pinned in `st`: the common dir, every
/// submodule git dir below `modules/` and below each `worktrees/<id>/modules/`, and the git
/// dir of every repository nested in a work tree that the owner's git enters (the object
/// stores' list, [`super::stores::stores`]), with each one's own `modules/` and the common
/// dir its `commondir` names. [`scan`] reads `rr-cache/` in each (git's `rr-cache` is a
/// common-dir path), and `MERGE_RR` in each and in each one's `worktrees/<id>/` (per
/// worktree). `Err` names a walk cut short.
pub fn git_dirs(st: &super::state::State, state: &Path) -> Result<Vec<PathBuf>, (PathBuf, String)> {
    let nested = super::stores::nested_of(st)?;
    let stores = super::stores::stores(&st.common_dir, state, &nested)?;
    let mut out: Vec<PathBuf> = Vec::new();
    for s in stores {
        let g = s.git_dir;
        // A nested repository's store is keyed by its absolute git dir (also one built
        // inside the common dir that is none of the baseline's: `stores::baseline_git_dirs`).
        if Path::new(&s.rel).is_absolute() {
            // A nested repository's own submodules (not populated ones too: the owner may
            // enter them).
            out.extend(module_git_dirs(&g.join("modules"))?);
        }
        if let Ok(b) = crate::audit::special::read_regular(&g.join("commondir"), 1 << 16) {
            let text = String::from_utf8_lossy(&b);
            let rel = text.trim_end_matches(['\n', '\r']);
            if !rel.is_empty() {
                out.push(super::normalize(&g.join(rel)));
            }
        }
        out.push(g);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// In each of `git_dirs` ([`git_dirs`]): every `rr-cache/<id>` with a resolution whose
/// folder or any file in it has a `ctime` at or after `since` (seconds, nanoseconds), every
/// `rr-cache` made or changed since then, every name under `rr-cache/` that git would not
/// have made, and every `MERGE_RR` (of the git dir and of each `worktrees/<id>/`) written
/// since then that names something.
pub fn scan(git_dirs: &[PathBuf], since: (i64, i64)) -> Found {
    let mut out = Found::default();
    // `MERGE_RR` is per worktree (`git_path`): each git dir's, each worktree entry's.
    let mut merge_rr_dirs = Vec::new();
    for g in git_dirs {
        merge_rr_dirs.push(g.clone());
        if let Ok(rd) = std::fs::read_dir(g.join("worktrees")) {
            merge_rr_dirs.extend(rd.flatten().map(|e| e.path()));
        }
    }
    merge_rr_dirs.sort();
    merge_rr_dirs.dedup();
    for d in &merge_rr_dirs {
        let p = d.join("MERGE_RR");
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            // git writes `MERGE_RR` anew as a regular file of one link; a link (git reads
            // wherever it points, whose `ctime` moves with neither), a second name for a
            // work-tree file, or anything else, is reported whatever its times.
            if !m.is_file() || m.nlink() > 1 || !merge_rr_paths_are_gits(&p) {
                out.odd_merge_rr.push(p);
                continue;
            }
            // An empty `MERGE_RR` names no conflict, so rerere records and replays nothing
            // from it: git's own `commit` writes one wherever rerere is on (seen on the real
            // pre-commit clone with `rerere.enabled`). Anything else is reported.
            let names_nothing = m.is_file() && m.len() == 0;
            let new = not_older(m.ctime(), m.ctime_nsec(), since);
            if !names_nothing {
                judge_records(d, &p, new, since, &mut out.records);
            }
            if new && !names_nothing {
                out.merge_rr.push(p);
            }
        }
    }
    out.merge_rr.sort();
    out.odd_merge_rr.sort();
    let mut ids = 0usize;
    for g in git_dirs {
        let rr = g.join("rr-cache");
        let md = match std::fs::symlink_metadata(&rr) {
            Ok(m) => m,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(nix::libc::ENOTDIR) =>
            {
                continue
            }
            Err(e) => {
                out.incomplete = Some((rr, format!("cannot lstat: {e}")));
                return out;
            }
        };
        if !md.is_dir() {
            out.not_folder.push(rr);
            continue;
        }
        let folder_new = not_older(md.ctime(), md.ctime_nsec(), since);
        if folder_new {
            out.made.push(rr.clone());
        }
        let entries = match std::fs::read_dir(&rr) {
            Ok(e) => e,
            Err(e) => {
                out.incomplete = Some((rr, format!("cannot list: {e}")));
                return out;
            }
        };
        for e in entries {
            let Ok(e) = e else {
                out.incomplete = Some((rr.clone(), "cannot list".into()));
                return out;
            };
            ids += 1;
            if ids > MAX_IDS {
                out.incomplete = Some((rr, format!("more than {MAX_IDS} entries")));
                return out;
            }
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue; // gone since the listing
            };
            if m.file_type().is_symlink() {
                out.odd_entries.push(p);
                continue;
            }
            if !m.is_dir() {
                out.stray.push(p);
                continue;
            }
            let mut new = folder_new || not_older(m.ctime(), m.ctime_nsec(), since);
            let mut files = Vec::new();
            let inner = match std::fs::read_dir(&p) {
                Ok(i) => i,
                Err(e) => {
                    out.incomplete = Some((p, format!("cannot list: {e}")));
                    return out;
                }
            };
            let mut odd = false;
            for f in inner.flatten() {
                match std::fs::symlink_metadata(f.path()) {
                    Ok(fm) => {
                        new |= not_older(fm.ctime(), fm.ctime_nsec(), since);
                        // git writes regular files of one link only here; a link is read
                        // where it points (its `ctime` stays as the target changes), a second
                        // name for a file elsewhere too, a FIFO blocks the owner's merge.
                        odd |= !fm.is_file() || fm.nlink() > 1;
                    }
                    Err(_) => continue, // gone since the listing
                }
                files.push(f.file_name().to_string_lossy().into_owned());
            }
            if odd {
                out.odd_entries.push(p);
                continue;
            }
            // Only a resolution is replayed: an entry with a preimage alone (what rerere
            // leaves of a conflict merged and aborted, or not resolved yet) writes nothing.
            // Seen on the real ripgrep and pre-commit clones: a conflicted merge with
            // `rerere.enabled` left one, and it was reported. (An entry without one made
            // during the turn changed `rr-cache` too: `made` judges that.)
            let resolved = files.iter().any(|f| f.starts_with("postimage"));
            if new && resolved {
                files.sort();
                out.recorded.push(Recorded { path: p, files });
            }
        }
    }
    out.recorded.sort_by(|a, b| a.path.cmp(&b.path));
    out.odd_entries.sort();
    out.stray.sort();
    out
}

/// Whether the owner's config surely sets `rerere.enabled` (to either value) for the
/// repository whose common dir is `common`, as git run there reads it: a value counts only
/// when it is in the system, global or local file or an unconditional include of one (a
/// value behind an `includeIf` may not hold for this repository: W4 of the twenty-sixth
/// red-team pass; `config.worktree` is read only with `extensions.worktreeConfig`), and no
/// file of its include chain changed since `since` (the agent may write the local config
/// and whatever else it can reach; a changed file is reported or restored elsewhere, and
/// the setting must not outlive it). With every system file candidate (which git the owner
/// runs is not known: a setting in a system file alone does not count). When unsure — a
/// config that cannot be read — `false`: not excused.
fn owner_sets_rerere(common: &Path, since: (i64, i64)) -> bool {
    use crate::config::Scope;
    let mut o = super::indexstat::owner_options(None, common, common);
    // With `GIT_CONFIG_GLOBAL` set, git reads that file as the global config and no other.
    if let Some(g) = std::env::var_os("GIT_CONFIG_GLOBAL").filter(|v| !v.is_empty()) {
        o.global = vec![PathBuf::from(g)];
    }
    let Some(all) = super::indexstat::owner_enumerations(o) else {
        return false;
    };
    let unchanged = |f: &Path| {
        let old = |m: std::fs::Metadata| !not_older(m.ctime(), m.ctime_nsec(), since);
        std::fs::symlink_metadata(f).is_ok_and(old) && std::fs::metadata(f).is_ok_and(old)
    };
    all.iter().all(|en| {
        en.values().iter().any(|v| {
            v.is("rerere.enabled")
                && v.as_bool().is_some()
                && !v.origin.conditional
                && matches!(v.origin.scope, Scope::System | Scope::Global | Scope::Local)
                && v.origin.include_chain.iter().all(|f| unchanged(f))
        })
    })
}

/// The submodule git dirs below `modules` (a git dir's `modules/`; names with slashes
/// nest, nested submodules too: a folder holding `HEAD` or `config` is one), at most
/// [`MAX_MODULES`]; `Err` names the bound reached. Also `indexstat`'s list of submodule
/// indexes.
pub(super) fn module_git_dirs(modules: &Path) -> Result<Vec<PathBuf>, (PathBuf, String)> {
    let mut out = Vec::new();
    let mut found = Found::default();
    collect_modules(modules, &mut out, &mut found, 0);
    match found.incomplete {
        Some(why) => Err(why),
        None => Ok(out),
    }
}

/// Submodule git dirs below `dir` (`modules/`, names with slashes nest), into `out`.
fn collect_modules(dir: &Path, out: &mut Vec<PathBuf>, found: &mut Found, depth: usize) {
    if found.incomplete.is_some() {
        return;
    }
    if depth > 8 {
        // A walk cut short is never a complete list (fail closed).
        found.incomplete = Some((
            dir.to_path_buf(),
            "submodule git dirs nested more than 8 levels deep: not walked".into(),
        ));
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if !std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if out.len() > MAX_MODULES {
            found.incomplete = Some((p, format!("more than {MAX_MODULES} submodule git dirs")));
            return;
        }
        if p.join("HEAD").exists() || p.join("config").exists() {
            out.push(p.clone());
            collect_modules(&p.join("modules"), out, found, depth + 1);
            // The submodule's own linked worktrees have submodules too
            // (`<git dir>/worktrees/<id>/modules/`: twenty-third red-team pass, R23-1).
            if let Ok(wts) = std::fs::read_dir(p.join("worktrees")) {
                for w in wts.flatten() {
                    if w.file_type().is_ok_and(|t| t.is_dir()) {
                        collect_modules(&w.path().join("modules"), out, found, depth + 1);
                    }
                }
            }
        } else {
            collect_modules(&p, out, found, depth + 1);
        }
    }
}

/// Does every record of the `MERGE_RR` at `p` name a path as git writes one? git writes
/// `<conflict id>[.<n>]\t<path>\0` with the path of an index entry: relative to the work tree,
/// never absolute, never through `..`. A record naming any other path makes rerere record
/// whatever file lies there as a preimage and a resolution — files the agent writes outside
/// the work tree, into a `MERGE_RR` the pin accepted (twenty-seventh red-team pass, W3) — so
/// it is judged whatever its times. A file that cannot be read whole (over 1 MiB, or gone) is
/// not vouched for either.
fn merge_rr_paths_are_gits(p: &Path) -> bool {
    let Ok(bytes) = crate::audit::special::read_regular(p, 1 << 20) else {
        return false;
    };
    bytes.split(|&b| b == 0).filter(|r| !r.is_empty()).all(|r| {
        match r.iter().position(|&b| b == b'\t') {
            Some(at) => {
                let path = &r[at + 1..];
                !path.is_empty()
                    && path[0] != b'/'
                    && !path.split(|&b| b == b'/').any(|c| c == b"..")
            }
            None => false,
        }
    })
}

/// The work tree of the git dir (or worktree entry) `dir`, as git finds it: a worktree
/// entry's `gitdir` names the work tree's `.git` file; else the config's `core.worktree`
/// (relative to the git dir; git writes it for an absorbed submodule); else the folder
/// holding a git dir named `.git`. `None` when none says (a bare repository: no merge runs
/// there).
fn work_tree_of(dir: &Path) -> Option<PathBuf> {
    if let Ok(b) = crate::audit::special::read_regular(&dir.join("gitdir"), 1 << 16) {
        let text = String::from_utf8_lossy(&b);
        let dot_git = dir.join(text.trim_end_matches(['\n', '\r']));
        return dot_git.parent().map(super::normalize);
    }
    let configured = crate::audit::special::read_regular(&dir.join("config"), 1 << 20)
        .ok()
        .and_then(|b| crate::config::last_value_in_file(&b, "core.worktree"));
    if let Some(w) = configured {
        return Some(super::normalize(&dir.join(w)));
    }
    (dir.file_name()? == ".git").then(|| dir.parent().map(Path::to_path_buf))?
}

/// The common dir of the git dir (or worktree entry) `dir`: where its `commondir` points, or
/// itself. rerere's `rr-cache` is a common-dir path.
fn common_of(dir: &Path) -> PathBuf {
    match crate::audit::special::read_regular(&dir.join("commondir"), 1 << 16) {
        Ok(b) => {
            let text = String::from_utf8_lossy(&b);
            let rel = text.trim_end_matches(['\n', '\r']);
            if rel.is_empty() {
                dir.to_path_buf()
            } else {
                super::normalize(&dir.join(rel))
            }
        }
        Err(_) => dir.to_path_buf(),
    }
}

/// What [`judge_records`] reads of a worktree's index.
#[derive(Debug, Default)]
struct IndexView {
    /// Every path (any stage; a sparse-directory entry as its folder, with its trailing `/`).
    names: std::collections::HashSet<Vec<u8>>,
    /// The paths git vouches were conflicted: every path with a stage 1–3 entry, and every
    /// path of the resolve-undo list (`REUC`: git's `record_resolve_undo` keeps there the
    /// stages of a conflicted path that `add`, `rm`, `rm --cached` or `reset -- <path>`
    /// resolved). `None` when the index could not be read.
    conflicted: Option<std::collections::HashSet<Vec<u8>>>,
}

/// Read the index `index`: its paths, and the paths git says were conflicted. `Err` says
/// why the paths could not be read. A `REUC` that cannot be parsed counts as empty (git
/// itself drops one it cannot read, `resolve_undo_read`, and so vouches for nothing).
fn index_view(index: &Path) -> Result<IndexView, String> {
    let Some(file) = crate::index_paths::read_index(index, true)? else {
        return Ok(IndexView {
            conflicted: Some(Default::default()),
            ..Default::default()
        });
    };
    let mut conflicted: std::collections::HashSet<Vec<u8>> = Default::default();
    let mut names: std::collections::HashSet<Vec<u8>> = Default::default();
    for e in file.entries() {
        let p = e.path(&file).to_vec();
        if e.stage_raw() != 0 {
            conflicted.insert(p.clone());
        }
        names.insert(p);
    }
    // `REUC` lives in the index file itself (for a split index, the small one: git writes
    // its extensions there, the shared index holds entries only).
    let bytes = crate::audit::special::read_regular(index, crate::index_paths::SPLIT_INDEX_LIMIT)
        .map_err(|e| format!("{}: {e}", index.display()))?;
    conflicted.extend(resolve_undo_paths(&bytes).unwrap_or_default());
    Ok(IndexView {
        names,
        conflicted: Some(conflicted),
    })
}

/// The paths of the resolve-undo extension (`REUC`) of the index file `data` (SHA-1), or
/// `None` where the file is not what git reads (then nothing is vouched for). Entries are
/// stepped as `read-cache.c:create_from_disk` does (versions 2–4: the name length from the
/// flags, `strlen` at 0xFFF; version 4 prefix-compressed, unpadded); each `REUC` record is
/// `<path>\0<mode>\0<mode>\0<mode>\0` and an object id per non-zero mode
/// (`resolve-undo.c:resolve_undo_read`).
fn resolve_undo_paths(data: &[u8]) -> Option<Vec<Vec<u8>>> {
    const OID: usize = 20;
    const FIXED: usize = 40 + OID + 2;
    if data.len() < 12 + OID || &data[..4] != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes(data[4..8].try_into().ok()?);
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = u32::from_be_bytes(data[8..12].try_into().ok()?) as usize;
    let end = data.len() - OID;
    let mut pos = 12usize;
    for _ in 0..count {
        let flags = u16::from_be_bytes(data.get(pos + FIXED - 2..pos + FIXED)?.try_into().ok()?);
        let mut name = pos + FIXED;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            name += 2;
        }
        if version == 4 {
            // The varint of the bytes taken from the previous name, then the rest of the
            // name up to its NUL.
            loop {
                let b = *data.get(name)?;
                name += 1;
                if b & 0x80 == 0 {
                    break;
                }
            }
            let nul = data.get(name..end)?.iter().position(|&b| b == 0)?;
            pos = name + nul + 1;
        } else {
            let len = match (flags & 0xFFF) as usize {
                0xFFF => data.get(name..end)?.iter().position(|&b| b == 0)?,
                n => n,
            };
            if *data.get(name + len)? != 0 {
                return None;
            }
            pos += (name - pos + len + 8) & !7;
        }
        if pos > end {
            return None;
        }
    }
    let mut out = Vec::new();
    while pos + 8 <= end {
        let size = u32::from_be_bytes(data[pos + 4..pos + 8].try_into().ok()?) as usize;
        let body = data.get(pos + 8..(pos + 8).checked_add(size)?.min(end + 1))?;
        if body.len() != size {
            return None;
        }
        if &data[pos..pos + 4] == b"REUC" {
            let mut d = body;
            while !d.is_empty() {
                let nul = d.iter().position(|&b| b == 0)?;
                let path = d[..nul].to_vec();
                d = &d[nul + 1..];
                let mut ids = 0;
                for _ in 0..3 {
                    let nul = d.iter().position(|&b| b == 0)?;
                    let mode = u32::from_str_radix(std::str::from_utf8(&d[..nul]).ok()?, 8).ok()?;
                    ids += usize::from(mode != 0);
                    d = &d[nul + 1..];
                }
                d = d.get(ids * OID..)?;
                out.push(path);
            }
        }
        pos += 8 + size;
    }
    (pos == end).then_some(out)
}

/// Judge each record of the `MERGE_RR` at `merge_rr` (of the git dir or worktree entry
/// `dir`), whatever the `MERGE_RR`'s own times. git's rerere (`read_rr`, then
/// `do_rerere_one_path` at the owner's next `merge`, `commit`, `rerere`) opens each record's
/// path relative to the work tree, following links, and when it holds no conflict markers
/// copies it to `rr-cache/<id>/postimage`: the resolution replayed in every later conflict
/// with that id. git writes a record only for a path that was a conflicted index entry (two
/// regular-file stages), so:
///
/// - an error: a path git never gives an index entry (`index_paths::verify_path`: a `.git`
///   component in any spelling, `..`, empty components), a path through a symbolic link in
///   the work tree (each leading component `lstat`ed), a path that is a link or not a regular
///   file (a FIFO blocks the owner's merge);
/// - a warning: a regular file that is no entry of the worktree's index (any stage): git's
///   own `git rm --cached` of a conflicted path leaves one, and so does an agent naming its
///   own file;
/// - nothing: a path that is not there (git's `git rm` or `git mv` of a conflicted path
///   leaves one; git cannot open it), or a folder.
///
/// With a pin (`since` not `i64::MIN`) and a `MERGE_RR` not written since it: an error for a
/// `preimage` of the record's `rr-cache/<id>/` made or changed since the pin (every honest
/// rerere run that writes a preimage rewrites `MERGE_RR`), and a warning for a named file
/// changed since the pin whose `rr-cache/<id>/` has no resolution for the record's variant:
/// the owner's next rerere records the file as it is now. (A `MERGE_RR` written since the
/// pin is reported as such, which covers both.)
fn judge_records(
    dir: &Path,
    merge_rr: &Path,
    merge_rr_new: bool,
    since: (i64, i64),
    out: &mut Vec<RecordFinding>,
) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(bytes) = crate::audit::special::read_regular(merge_rr, 1 << 20) else {
        return; // judged odd by the caller
    };
    let pinned = since.0 > i64::MIN;
    let wt = work_tree_of(dir);
    let common = common_of(dir);
    let mut index: Option<Result<IndexView, String>> = None;
    for r in bytes.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let Some(at) = r.iter().position(|&b| b == b'\t') else {
            continue; // judged odd by the caller
        };
        let (head, path) = (&r[..at], &r[at + 1..]);
        let (id, variant) = match head.iter().position(|&b| b == b'.') {
            Some(dot) => (&head[..dot], &head[dot + 1..]),
            None => (head, &b""[..]),
        };
        let id = String::from_utf8_lossy(id).into_owned();
        let suffix = if variant.is_empty() || variant == b"0" {
            String::new()
        } else {
            format!(".{}", String::from_utf8_lossy(variant))
        };
        let record = String::from_utf8_lossy(path).into_owned();
        let mut add = |error: bool, change: &'static str, why: String, entry: Option<PathBuf>| {
            out.push(RecordFinding {
                merge_rr: merge_rr.to_path_buf(),
                record: record.clone(),
                id: id.clone(),
                error,
                change,
                why: format!("record '{record}': {why}"),
                entry,
            })
        };
        // An entry is a plain name: anything else is no conflict id of git's (and never a
        // path to join).
        let entry = (!id.is_empty() && !id.contains(['/', '\\']) && id != "..")
            .then(|| common.join("rr-cache").join(&id));
        if let (true, false, Some(e)) = (pinned, merge_rr_new, &entry) {
            let planted = std::fs::read_dir(e)
                .into_iter()
                .flatten()
                .flatten()
                .any(|f| {
                    f.file_name().to_string_lossy().starts_with("preimage")
                        && std::fs::symlink_metadata(f.path())
                            .is_ok_and(|m| not_older(m.ctime(), m.ctime_nsec(), since))
                });
            if planted {
                add(
                    true,
                    "merge_rr-preimage-planted",
                    format!("{} has a preimage made or changed during the turn while this MERGE_RR is as pinned (git rewrites MERGE_RR whenever it records a preimage): the owner's next rerere records the named file as the resolution and replays it", e.display()),
                    Some(e.clone()),
                );
            }
        }
        if crate::index_paths::verify_path(path, 0o100_644).is_err() {
            add(
                true,
                "merge_rr-record",
                "names a path git never gives an index entry (a .git component, `..`, an empty component): git never writes such a record, and the owner's next rerere records whatever file lies there as a resolution".into(),
                None,
            );
            continue;
        }
        // Written in the turn: git writes a record for a conflicted index entry only, and the
        // index keeps the path as conflicted (stages 1–3) or, once resolved with `add`, `rm`,
        // `rm --cached` or `reset -- <path>`, in its resolve-undo list — until `merge
        // --abort`, `reset --merge`, a branch switch, which remove `MERGE_RR` too. Seen on
        // both gits for a conflicted merge, rebase, cherry-pick, revert, stash pop and
        // `am -3` (`checkout -m` writes none). Whether or not the file is there: a merge the
        // owner runs may bring it in before its rerere reads the record.
        if pinned && merge_rr_new {
            let view = index.get_or_insert_with(|| index_view(&dir.join("index")));
            let vouched = match view {
                Ok(v) => v.conflicted.as_ref().is_some_and(|c| c.contains(path)),
                Err(_) => false,
            };
            if !vouched {
                let why = match view {
                    Ok(_) => format!("this MERGE_RR was written during the turn, and {} holds no conflicted entry of the path and no resolve-undo record of it: git writes a record only for a conflicted path, so the owner's next rerere would record the named file as the resolution of conflict {id} and replay it", dir.join("index").display()),
                    Err(e) => format!("this MERGE_RR was written during the turn, and the index that would vouch for the path as conflicted is not read ({e})"),
                };
                let there = entry
                    .clone()
                    .filter(|e| std::fs::symlink_metadata(e).is_ok());
                add(true, "merge_rr-not-conflicted", why, there);
            }
        }
        let Some(wt) = &wt else {
            add(
                false,
                "merge_rr-record",
                format!(
                    "the work tree of {} is not known: the record is not judged against it",
                    dir.display()
                ),
                None,
            );
            continue;
        };
        // Each component by `lstat`, from the work tree down (git's `fopen` follows links).
        let comps: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        let mut here = wt.clone();
        let mut named = None;
        for (i, c) in comps.iter().enumerate() {
            here.push(std::ffi::OsStr::from_bytes(c));
            let Ok(m) = std::fs::symlink_metadata(&here) else {
                break; // not there: git cannot open it
            };
            let last = i + 1 == comps.len();
            if m.file_type().is_symlink() {
                let what = if last {
                    "is a symbolic link"
                } else {
                    "goes through a symbolic link"
                };
                add(
                    true,
                    "merge_rr-record",
                    format!("{what} ({}): git's rerere reads the file wherever the link points and records it as a resolution; a conflicted index entry it records is a regular file", here.display()),
                    None,
                );
                break;
            }
            if !last {
                if !m.is_dir() {
                    break; // git cannot open it
                }
                continue;
            }
            if m.is_file() {
                named = Some(m);
            } else if !m.is_dir() {
                add(
                    true,
                    "merge_rr-record",
                    format!("names {}, which is not a regular file (a FIFO blocks the owner's merge): git records conflicts of regular files only", here.display()),
                    None,
                );
            }
        }
        let Some(m) = named else { continue };
        let view = index.get_or_insert_with(|| index_view(&dir.join("index")));
        match view {
            Ok(IndexView { names, .. }) => {
                let sparse = names
                    .iter()
                    .any(|n| n.ends_with(b"/") && path.starts_with(n));
                if !names.contains(path) && !sparse {
                    add(
                        false,
                        "merge_rr-untracked",
                        format!("names {}, which is no entry of {}: the owner's next rerere records it as a resolution (git leaves such a record after `git rm --cached` of a conflicted path; an agent names its own file so)", here.display(), dir.join("index").display()),
                        None,
                    );
                }
            }
            Err(e) => add(
                false,
                "merge_rr-untracked",
                format!("the index is not read ({e}): the record is not judged against it"),
                None,
            ),
        }
        // A `MERGE_RR` written in the turn is reported as such (`merge_rr`), which says the
        // same of every file it names.
        if pinned && !merge_rr_new && not_older(m.ctime(), m.ctime_nsec(), since) {
            let resolved = entry
                .as_ref()
                .is_some_and(|e| e.join(format!("postimage{suffix}")).exists());
            if !resolved {
                add(
                    false,
                    "merge_rr-file-changed",
                    format!("names {}, changed during the turn, and rr-cache/{id} has no resolution for it: the owner's next rerere records the file as it is now as the resolution and replays it in later merges", here.display()),
                    None,
                );
            }
        }
    }
}

/// What the records of the `MERGE_RR` at `merge_rr` (of the git dir or worktree entry `dir`)
/// make the owner's next rerere read: each record's `rr-cache/<id>/` files and the file it
/// names (relative to the work tree). The audit's `MERGE_RR` finding names their newest
/// `ctime`, so a preimage planted or a named file written since is a new finding where
/// only the audit looks (a repository nested in the work tree that no gitlink names:
/// twenty-seventh red-team pass, W1/W2).
pub fn merge_rr_inputs(dir: &Path, merge_rr: &Path) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(bytes) = crate::audit::special::read_regular(merge_rr, 1 << 20) else {
        return Vec::new();
    };
    let wt = work_tree_of(dir);
    let common = common_of(dir);
    let mut out = Vec::new();
    for r in bytes
        .split(|&b| b == 0)
        .filter(|r| !r.is_empty())
        .take(10_000)
    {
        let Some(at) = r.iter().position(|&b| b == b'\t') else {
            continue;
        };
        let head = &r[..at];
        let id = &head[..head.iter().position(|&b| b == b'.').unwrap_or(head.len())];
        if !id.is_empty() && !id.contains(&b'/') && id != b".." {
            let e = common
                .join("rr-cache")
                .join(std::ffi::OsStr::from_bytes(id));
            out.push(e.clone());
            if let Ok(rd) = std::fs::read_dir(&e) {
                out.extend(rd.flatten().map(|f| f.path()));
            }
        }
        let path = &r[at + 1..];
        if let (Some(wt), Ok(())) = (&wt, crate::index_paths::verify_path(path, 0o100_644)) {
            out.push(wt.join(std::ffi::OsStr::from_bytes(path)));
        }
    }
    out
}

/// The pin's instant: the state file's modification time (`pin` writes it anew).
fn pinned_since(state: &Path) -> Option<(i64, i64)> {
    let m = std::fs::metadata(state).ok()?;
    Some((m.mtime(), m.mtime_nsec()))
}

/// Report the resolutions recorded since the pin; with `restore`, move each aside.
pub fn check(
    st: &super::state::State,
    state: &Path,
    restore: bool,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    let mk = |kind: EventKind, msg: String, path: &Path| {
        Event::new(Tool::WtCheck, kind, msg)
            .session(st.session.as_deref())
            .repo(&st.repo)
            .path(path)
    };
    let Some(since) = pinned_since(state) else {
        emit(mk(
            EventKind::CheckIncomplete,
            format!("{}: cannot stat the state file", state.display()),
            state,
        ));
        return Outcome::Incomplete;
    };
    let dirs = match git_dirs(st, state) {
        Ok(d) => d,
        Err((p, why)) => {
            emit(mk(
                EventKind::CheckIncomplete,
                format!("{}: {why}", p.display()),
                &p,
            ));
            return Outcome::Incomplete;
        }
    };
    let mut found = scan(&dirs, since);
    // An rr-cache made or changed switches rerere on only where the owner's config does not
    // set `rerere.enabled`: git's own first `commit` with `rerere.enabled` makes it (seen on
    // the real pre-commit clone), and an honest merge then records in it; neither is a
    // finding. Judged per repository, as git run there reads its config.
    found.made.retain(|rr| {
        let common = rr.parent().unwrap_or(rr);
        !owner_sets_rerere(common, since)
    });
    let mut outcome = Outcome::Clean;
    let mut q = Quarantine::new(state);
    let action = if restore { "quarantined" } else { "reported" };
    // A `MERGE_RR` may be reported more than once (a warning for the file, one per record):
    // moved aside once.
    let mut moved: std::collections::HashSet<PathBuf> = Default::default();
    let mut report = |outcome: &mut Outcome,
                      q: &mut Quarantine,
                      p: &Path,
                      change: &str,
                      level: &str,
                      why: &str,
                      extra: &dyn Fn(Event) -> Event| {
        *outcome = outcome.and(Outcome::Found);
        emit(extra(
            mk(
                EventKind::ResolutionRecorded,
                format!("{}: {why}", p.display()),
                p,
            )
            .with("change", change)
            .with("level", level)
            .with("why", why)
            .with("action", action),
        ));
        if restore && moved.insert(p.to_path_buf()) {
            *outcome = outcome.and(move_aside(q, p, &mk, emit));
        }
    };
    let none = |e: Event| e;
    for p in &found.not_folder {
        let why = "rr-cache is not a folder (a link: git reads and writes resolutions wherever it points); git never makes one";
        report(&mut outcome, &mut q, p, "not-a-folder", "error", why, &none);
    }
    for p in &found.odd_entries {
        let why = "an rr-cache entry that is a link, or holds a name that is not a regular file: git never makes one, and rerere reads (and replays) a resolution wherever a link points";
        report(
            &mut outcome,
            &mut q,
            p,
            "entry-not-a-folder",
            "error",
            why,
            &none,
        );
    }
    for p in &found.odd_merge_rr {
        let why = "MERGE_RR that is a link, a second name of another file, not a file, or names a path git never writes (absolute, through `..`, unreadable records): git never makes one, and records as a resolution whatever file each record names";
        report(
            &mut outcome,
            &mut q,
            p,
            "merge_rr-not-a-file",
            "error",
            why,
            &none,
        );
    }
    // Before the entries and `rr-cache` are moved: a planted entry goes aside with the
    // `MERGE_RR` that names it.
    for r in &found.records {
        let level = if r.error { "error" } else { "warning" };
        let add = |e: Event| e.with("id", r.id.clone()).with("record", r.record.clone());
        report(
            &mut outcome,
            &mut q,
            &r.merge_rr,
            r.change,
            level,
            &r.why,
            &add,
        );
        if let Some(entry) = &r.entry {
            report(&mut outcome, &mut q, entry, r.change, level, &r.why, &add);
        }
    }
    for p in &found.stray {
        let why = "an rr-cache entry that is not a folder: git ignores it but never makes one";
        report(&mut outcome, &mut q, p, "stray", "warning", why, &none);
    }
    for p in &found.merge_rr {
        let why = "MERGE_RR written during the turn: rerere's list of conflicts being recorded, from which the owner's next merge, cherry-pick or rebase records a preimage and a resolution and replays them (a planted one names the agent's files)";
        report(&mut outcome, &mut q, p, "merge_rr", "warning", why, &none);
    }
    for r in &found.recorded {
        let id = r
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let why = "a conflict resolution recorded during the turn: the owner's git writes it into the work tree when it meets the same conflict (merge, rebase, cherry-pick), without a commit to review";
        let add = |e: Event| e.with("id", id.clone()).with("files", r.files.clone());
        report(
            &mut outcome,
            &mut q,
            &r.path,
            "recorded",
            "warning",
            why,
            &add,
        );
    }
    // Last: moving `rr-cache` aside takes its entries with it.
    for p in &found.made {
        let why = "rr-cache made or changed during the turn where the owner's config does not set rerere.enabled: git records and replays conflict resolutions wherever rr-cache exists and rerere.enabled is unset (rerere switched on)";
        report(
            &mut outcome,
            &mut q,
            p,
            "rr_cache_made",
            "warning",
            why,
            &none,
        );
    }
    if let Some((p, why)) = found.incomplete {
        outcome = outcome.and(Outcome::Incomplete);
        emit(mk(
            EventKind::CheckIncomplete,
            format!("{}: {why}", p.display()),
            &p,
        ));
    }
    outcome
}

fn move_aside(
    q: &mut Quarantine,
    p: &Path,
    mk: &dyn Fn(EventKind, String, &Path) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Outcome {
    match super::compare::set_aside(q, p) {
        Ok(to) => {
            emit(
                mk(
                    EventKind::Quarantined,
                    format!("{}: moved aside to {}", p.display(), to.display()),
                    p,
                )
                .with("quarantined_to", to.display().to_string()),
            );
            Outcome::Clean
        }
        Err(e) => {
            emit(mk(
                EventKind::RestoreFailed,
                format!("{}: cannot move it aside: {e}", p.display()),
                p,
            ));
            Outcome::Incomplete
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_newer_than_the_pin_are_found_and_older_ones_are_not() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("g");
        std::fs::create_dir_all(g.join("rr-cache/old")).unwrap();
        std::fs::write(g.join("rr-cache/old/preimage"), "a").unwrap();
        std::fs::write(g.join("rr-cache/old/postimage"), "b").unwrap();
        std::fs::create_dir_all(g.join("modules/s/rr-cache")).unwrap();
        std::fs::write(g.join("modules/s/HEAD"), "ref: refs/heads/main\n").unwrap();
        // The pin's instant as `check` takes it: a state file's modification time (the
        // kernel's file clock, which `ctime` uses too; `SystemTime::now` may run ahead of it).
        std::thread::sleep(std::time::Duration::from_millis(20));
        let state = t.path().join("state.json");
        std::fs::write(&state, "{}").unwrap();
        let since = pinned_since(&state).unwrap();
        let dirs = vec![g.clone(), g.join("modules/s")];
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(scan(&dirs, since).recorded.is_empty(), "as pinned");
        // A resolution written after the pin, in the common dir and in a submodule git dir.
        std::fs::create_dir_all(g.join("rr-cache/new")).unwrap();
        std::fs::write(g.join("rr-cache/new/postimage"), "evil").unwrap();
        std::fs::create_dir_all(g.join("modules/s/rr-cache/sub")).unwrap();
        std::fs::write(g.join("modules/s/rr-cache/sub/postimage"), "r").unwrap();
        let f = scan(&dirs, since);
        let paths = f
            .recorded
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>();
        assert!(
            paths.contains(&g.join("modules/s/rr-cache/sub")),
            "{paths:?}"
        );
        let new = f
            .recorded
            .iter()
            .find(|r| r.path == g.join("rr-cache/new"))
            .unwrap();
        assert_eq!(new.files, vec!["postimage".to_owned()]);
        // A preimage alone (a conflict not resolved) is no resolution: not reported.
        std::fs::create_dir_all(g.join("rr-cache/open")).unwrap();
        std::fs::write(g.join("rr-cache/open/preimage"), "conflict").unwrap();
        assert!(!scan(&dirs, since)
            .recorded
            .iter()
            .any(|r| r.path == g.join("rr-cache/open")));
        // rr-cache renamed into place (or changed) since the pin: every entry.
        std::fs::rename(g.join("rr-cache"), t.path().join("prepared")).unwrap();
        std::fs::rename(t.path().join("prepared"), g.join("rr-cache")).unwrap();
        assert!(scan(&dirs, since)
            .recorded
            .iter()
            .any(|r| r.path == g.join("rr-cache/old")));
        // A file rewritten in an old entry moves its ctime: found.
        std::fs::write(g.join("rr-cache/old/postimage"), "x").unwrap();
        assert!(scan(&dirs, since)
            .recorded
            .iter()
            .any(|r| r.path == g.join("rr-cache/old")));
        // An empty MERGE_RR (git's own commit writes one) names nothing: not reported.
        std::fs::write(g.join("MERGE_RR"), "").unwrap();
        assert!(scan(&dirs, since).merge_rr.is_empty());
        // MERGE_RR written since the pin, in the common dir and a worktree entry (records as
        // git writes them: an id, a tab, a path relative to the work tree).
        let record = "0123456789abcdef0123456789abcdef01234567\tf\0";
        std::fs::write(g.join("MERGE_RR"), record).unwrap();
        std::fs::create_dir_all(g.join("worktrees/w")).unwrap();
        std::fs::write(g.join("worktrees/w/MERGE_RR"), record).unwrap();
        assert_eq!(
            scan(&dirs, since).merge_rr,
            vec![g.join("MERGE_RR"), g.join("worktrees/w/MERGE_RR")]
        );
        // Records git never writes (twenty-seventh pass, W3): an absolute path, a path through
        // `..`, a record without a path; each odd whatever its times.
        for bad in [
            "0123456789abcdef0123456789abcdef01234567\t/tmp/a1\0",
            "0123456789abcdef0123456789abcdef01234567\tsub/../../a1\0",
            "x",
        ] {
            std::fs::write(g.join("worktrees/w/MERGE_RR"), bad).unwrap();
            let f = scan(&dirs, since);
            assert_eq!(
                f.odd_merge_rr,
                vec![g.join("worktrees/w/MERGE_RR")],
                "{bad:?}"
            );
            assert_eq!(f.merge_rr, vec![g.join("MERGE_RR")], "{bad:?}");
        }
        std::fs::write(g.join("worktrees/w/MERGE_RR"), record).unwrap();
        // An empty rr-cache made since the pin (rerere switched on).
        let e = t.path().join("e");
        std::fs::create_dir_all(e.join("rr-cache")).unwrap();
        assert_eq!(
            scan(std::slice::from_ref(&e), since).made,
            vec![e.join("rr-cache")]
        );
        // … and one holding an empty entry folder, or a preimage alone, is made too (W4).
        std::fs::create_dir(e.join("rr-cache/0123")).unwrap();
        std::fs::write(e.join("rr-cache/0123/preimage"), "x").unwrap();
        let f = scan(std::slice::from_ref(&e), since);
        assert_eq!(f.made, vec![e.join("rr-cache")]);
        assert!(f.recorded.is_empty());
        // An entry that is a link (W2), or that holds a link, is odd whatever its times;
        // one that is a plain file is stray.
        std::fs::create_dir_all(t.path().join("agent")).unwrap();
        std::os::unix::fs::symlink(t.path().join("agent"), e.join("rr-cache/link")).unwrap();
        std::fs::create_dir(e.join("rr-cache/holds")).unwrap();
        std::os::unix::fs::symlink(t.path().join("agent/x"), e.join("rr-cache/holds/postimage"))
            .unwrap();
        std::fs::write(e.join("rr-cache/file"), "x").unwrap();
        let f = scan(std::slice::from_ref(&e), since);
        assert_eq!(
            f.odd_entries,
            vec![e.join("rr-cache/holds"), e.join("rr-cache/link")]
        );
        assert_eq!(f.stray, vec![e.join("rr-cache/file")]);
        // A later pin: the link is still odd (git never makes one), the rest is old.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&state, "{}").unwrap();
        let later = pinned_since(&state).unwrap();
        let f = scan(std::slice::from_ref(&e), later);
        assert!(f.made.is_empty() && f.recorded.is_empty());
        assert_eq!(f.odd_entries.len(), 2);
        // A MERGE_RR that is a link (to a file the agent keeps writing) or a second name
        // of one, even from before the pin: reported whatever its times.
        std::fs::write(t.path().join("agent/rr"), "x").unwrap();
        std::fs::create_dir_all(e.join("worktrees/l")).unwrap();
        std::os::unix::fs::symlink(t.path().join("agent/rr"), e.join("worktrees/l/MERGE_RR"))
            .unwrap();
        std::fs::hard_link(t.path().join("agent/rr"), e.join("MERGE_RR")).unwrap();
        std::fs::create_dir_all(e.join("rr-cache/hard")).unwrap();
        std::fs::hard_link(t.path().join("agent/rr"), e.join("rr-cache/hard/postimage")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&state, "{}").unwrap();
        let latest = pinned_since(&state).unwrap();
        let f = scan(std::slice::from_ref(&e), latest);
        assert_eq!(
            f.odd_merge_rr,
            vec![e.join("MERGE_RR"), e.join("worktrees/l/MERGE_RR")]
        );
        assert!(f.merge_rr.is_empty());
        assert!(f.odd_entries.contains(&e.join("rr-cache/hard")));
        // MERGE_RR of a submodule's own worktree entry (W5).
        std::fs::create_dir_all(g.join("modules/s/worktrees/w2")).unwrap();
        std::fs::write(g.join("modules/s/worktrees/w2/MERGE_RR"), record).unwrap();
        assert!(scan(&dirs, since)
            .merge_rr
            .contains(&g.join("modules/s/worktrees/w2/MERGE_RR")));
        // rr-cache a link: reported as such.
        let h = t.path().join("h");
        std::fs::create_dir_all(&h).unwrap();
        std::os::unix::fs::symlink(t.path().join("elsewhere"), h.join("rr-cache")).unwrap();
        assert_eq!(
            scan(std::slice::from_ref(&h), since).not_folder,
            vec![h.join("rr-cache")]
        );
    }

    /// Each record judged against the work tree, the index and `rr-cache` (twenty-eighth
    /// red-team pass, W1), whatever the `MERGE_RR`'s times; each way of naming a file git
    /// never records has its honest counterpart beside it.
    #[test]
    fn merge_rr_records_are_judged_against_the_work_tree_and_index() {
        let t = tempfile::tempdir().unwrap();
        let wt = t.path().join("w");
        let run = |args: &[&str]| {
            let o = std::process::Command::new("git")
                .args(["-c", "user.name=o", "-c", "user.email=o@o", "-C"])
                .arg(&wt)
                .args(args)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap();
            assert!(o.status.success(), "{args:?}: {o:?}");
        };
        std::fs::create_dir_all(wt.join("s")).unwrap();
        run(&["init", "-q"]);
        std::fs::write(wt.join("f"), "x").unwrap();
        std::fs::write(wt.join("s/e"), "x").unwrap();
        run(&["add", "f", "s/e"]);
        let g = wt.join(".git");
        let id = "0123456789abcdef0123456789abcdef01234567";
        std::fs::create_dir_all(g.join("rr-cache").join(id)).unwrap();
        std::fs::write(g.join("rr-cache").join(id).join("preimage"), "p").unwrap();
        std::fs::write(t.path().join("out"), "agent").unwrap();
        std::os::unix::fs::symlink(t.path(), wt.join("lnk")).unwrap();
        std::os::unix::fs::symlink(t.path().join("out"), wt.join("l")).unwrap();
        nix::unistd::mkfifo(&wt.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(wt.join("untracked"), "agent").unwrap();
        std::fs::write(g.join("logs-x"), "agent").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let state = t.path().join("state.json");
        std::fs::write(&state, "{}").unwrap();
        let since = pinned_since(&state).unwrap();
        let judge = |records: &[&str], since: (i64, i64)| {
            let text: String = records.iter().map(|r| format!("{id}\t{r}\0")).collect();
            std::fs::write(g.join("MERGE_RR"), text).unwrap();
            let f = scan(std::slice::from_ref(&g), since);
            assert!(f.odd_merge_rr.is_empty(), "{records:?}");
            f.records
                .iter()
                .map(|r| (r.record.clone(), r.change, r.error))
                .collect::<Vec<_>>()
        };
        // The shapes are judged whatever the times: without a pin (the audit), so that a
        // `MERGE_RR` written now is not also judged as written in the turn (below).
        let nopin = (i64::MIN, 0);
        // Honest: index entries (stage 0 here), and paths no longer there (`git rm`,
        // `git mv` of a conflicted path), or a folder.
        assert_eq!(
            judge(&["f", "s/e", "gone", "s/gone", "f/x", "s"], nopin),
            vec![]
        );
        // git's own rule for an index entry's name: any `.git` spelling.
        for bad in [
            ".git/logs-x",
            ".GIT/logs-x",
            "s/.git/x",
            "git~1/logs-x",
            ".git./logs-x",
        ] {
            assert_eq!(
                judge(&[bad], nopin),
                vec![(bad.to_owned(), "merge_rr-record", true)],
                "{bad}"
            );
        }
        // Through a link, a link, a FIFO: errors.
        for bad in ["lnk/out", "l", "fifo"] {
            assert_eq!(
                judge(&[bad], nopin),
                vec![(bad.to_owned(), "merge_rr-record", true)],
                "{bad}"
            );
        }
        // A regular file that is no index entry: a warning (git's `rm --cached` leaves one).
        assert_eq!(
            judge(&["untracked"], nopin),
            vec![("untracked".to_owned(), "merge_rr-untracked", false)]
        );
        // Written in the turn (twenty-ninth pass): a record is git's own only for a path
        // the index holds as conflicted (stages 1–3) or in its resolve-undo list (`REUC`),
        // whether or not the file is there; the planted entry goes aside with it.
        for r in ["f", "gone", "untracked"] {
            let f = judge(&[r], since);
            assert!(
                f.contains(&(r.to_owned(), "merge_rr-not-conflicted", true)),
                "{r}: {f:?}"
            );
        }
        let blob = {
            let o = std::process::Command::new("git")
                .arg("-C")
                .arg(&wt)
                .args(["hash-object", "-w", "f"])
                .output()
                .unwrap();
            String::from_utf8(o.stdout).unwrap().trim().to_owned()
        };
        // Stage 0 out, stages 1–3 in (what a conflicted merge leaves).
        let info = std::iter::once(format!("0 {}\tf\n", "0".repeat(40)))
            .chain((1..=3).map(|n| format!("100644 {blob} {n}\tf\n")))
            .collect::<String>();
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(&wt)
            .args(["update-index", "--index-info"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(info.as_bytes())?;
                c.wait()
            })
            .unwrap();
        assert!(o.success());
        // Conflicted: vouched.
        assert!(!judge(&["f"], since)
            .iter()
            .any(|r| r.1 == "merge_rr-not-conflicted"));
        // Resolved with `git add` (the stages move to `REUC`): vouched; another path is not.
        run(&["add", "f"]);
        let idx = std::fs::read(g.join("index")).unwrap();
        assert_eq!(resolve_undo_paths(&idx), Some(vec![b"f".to_vec()]));
        assert!(!judge(&["f"], since)
            .iter()
            .any(|r| r.1 == "merge_rr-not-conflicted"));
        let f = judge(&["s/e"], since);
        assert!(
            f.contains(&("s/e".to_owned(), "merge_rr-not-conflicted", true)),
            "{f:?}"
        );
        // A damaged `REUC` vouches for nothing (git drops it too): its body cut short.
        let at = idx.windows(4).position(|w| w == b"REUC").unwrap();
        let mut bad = idx.clone();
        bad[at + 7] = bad[at + 7].wrapping_add(1);
        assert_eq!(resolve_undo_paths(&bad), None);
        // Version 4 (prefix-compressed names) reads the same.
        run(&["update-index", "--index-version", "4"]);
        let idx4 = std::fs::read(g.join("index")).unwrap();
        assert_eq!(&idx4[4..8], &[0, 0, 0, 4]);
        assert_eq!(resolve_undo_paths(&idx4), Some(vec![b"f".to_vec()]));
        // Written in the turn after the pin of a MERGE_RR: the preimage, then a named file.
        // Rewrite MERGE_RR before the new pin (else it is new: `merge_rr` covers it).
        judge(&["f"], since);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&state, "{}").unwrap();
        let later = pinned_since(&state).unwrap();
        let f = scan(std::slice::from_ref(&g), later);
        assert!(f.records.is_empty() && f.merge_rr.is_empty(), "{f:?}");
        std::fs::write(g.join("rr-cache").join(id).join("preimage"), "planted").unwrap();
        let f = scan(std::slice::from_ref(&g), later);
        assert_eq!(f.records.len(), 1, "{f:?}");
        assert_eq!(f.records[0].change, "merge_rr-preimage-planted");
        assert!(f.records[0].error);
        assert_eq!(f.records[0].entry, Some(g.join("rr-cache").join(id)));
        // No pin (the audit): times are not judged.
        assert!(scan(std::slice::from_ref(&g), (i64::MIN, 0))
            .records
            .is_empty());
        // A later pin; the named file changed after it, no resolution for it: a warning;
        // with a postimage for the variant, nothing (the resolution is `recorded`'s).
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&state, "{}").unwrap();
        let latest = pinned_since(&state).unwrap();
        std::fs::write(wt.join("f"), "agent").unwrap();
        let f = scan(std::slice::from_ref(&g), latest);
        assert_eq!(
            f.records
                .iter()
                .map(|r| (r.change, r.error))
                .collect::<Vec<_>>(),
            vec![("merge_rr-file-changed", false)]
        );
        std::fs::write(g.join("rr-cache").join(id).join("postimage"), "r").unwrap();
        assert!(scan(std::slice::from_ref(&g), latest).records.is_empty());
        // A variant's resolution is `postimage.<n>`.
        std::fs::write(g.join("MERGE_RR"), format!("{id}.1\tf\0")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&state, "{}").unwrap();
        let last = pinned_since(&state).unwrap();
        std::fs::write(wt.join("f"), "agent2").unwrap();
        let f = scan(std::slice::from_ref(&g), last);
        assert_eq!(f.records.len(), 1, "{f:?}");
        assert_eq!(f.records[0].change, "merge_rr-file-changed");
        // A worktree entry's records are judged against its own work tree and index.
        let e = g.join("worktrees/w2");
        let wt2 = t.path().join("w2");
        std::fs::create_dir_all(&e).unwrap();
        std::fs::create_dir_all(&wt2).unwrap();
        std::fs::write(
            e.join("gitdir"),
            format!("{}\n", wt2.join(".git").display()),
        )
        .unwrap();
        std::fs::write(e.join("commondir"), "../..\n").unwrap();
        std::fs::write(wt2.join("f"), "not in w2's index").unwrap();
        std::fs::write(e.join("MERGE_RR"), format!("{id}\tf\0")).unwrap();
        std::fs::remove_file(g.join("MERGE_RR")).unwrap();
        let f = scan(std::slice::from_ref(&g), (i64::MIN, 0));
        assert_eq!(
            f.records
                .iter()
                .map(|r| (r.merge_rr.clone(), r.change))
                .collect::<Vec<_>>(),
            vec![(e.join("MERGE_RR"), "merge_rr-untracked")]
        );
    }
}
