//! wt-check `pin` / `check [--restore]`: the protected parts of a git folder come out of every
//! agent turn exactly as they went in.
//!
//! At sandbox build, [`pin`] records every protected entry of the repository's common dir
//! (hooks folder, `config` and its include targets, `config.worktree`, `commondir`,
//! `info/attributes`, `objects/info/alternates`, `HEAD` form, every `worktrees/<id>/` entry,
//! every submodule git dir under `modules/` and its own `worktrees/<id>/` entries) into a
//! state file outside the repository. At turn end, [`check`] reads them again and reports
//! each difference as an event; with `restore` it puts them back: what the agent created or
//! changed is moved into a quarantine folder beside the state file (never deleted), then the
//! baseline bytes are written atomically.
//!
//! Invariants:
//! - Every read and write below the common dir walks component by component without
//!   following links ([`nf::Dir`]); a link where a folder or file is expected is reported
//!   (`link_refused`) and never followed, so a folder swapped for a link mid-check cannot
//!   redirect a write outside the git folder.
//! - The paths checked come from the state file, not from a new discovery: a `.git` file or
//!   `commondir` planted during the turn cannot point the check at another folder.
//! - Unknown is not clean: an entry that cannot be read, or a restore that fails, makes the
//!   result [`Outcome::Incomplete`] (exit 2).
//! - The session's own worktrees (under `<repo>-worktrees/<session>/`) may be added, changed
//!   and removed, but must stay consistent with git's layout (gix-and-perf §3) and inside
//!   that folder. Everyone else's entries must not change.

pub mod embedded;
pub mod graph;
pub mod hook;
pub mod hops;
pub mod indexstat;
pub mod inprogress;
pub mod nf;
pub mod objects;
pub mod packs;
pub mod rerere;
pub mod scanlink;
pub mod scanlink_key;
pub mod session_modules;
pub mod state;
pub mod stores;
pub mod subwt;
pub mod tool;

mod collect;
mod compare;
mod pin;
mod restore;

use crate::events::{Event, EventKind, Tool};
use crate::fsx::FileType;
use crate::layout::{LayoutError, Problem as LayoutProblem, WorktreeEntry};
use nf::{Dir, Kind, NfError};
use state::{Content, Node, State, WorktreeBaseline};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

pub(crate) use collect::is_worktree_state_name;
use collect::*;
pub use compare::*;
pub use pin::*;
use restore::*;

/// Largest protected file read (hooks can be binaries; config files are small).
pub const FILE_LIMIT: u64 = 16 << 20;
/// Deepest folder level walked inside a protected tree (`hooks/`, `modules/<name>/info/`).
pub const TREE_DEPTH: usize = 8;
/// Most entries recorded in one pin or check; past it the result is incomplete.
pub const ENTRY_LIMIT: usize = 200_000;
/// Deepest submodule nesting followed under `modules/`.
pub const MODULE_DEPTH: usize = 6;

/// Files of the common dir (and of each submodule git dir) compared byte for byte.
pub(crate) const GIT_DIR_FILES: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "objects/info/alternates",
];
/// Folders whose whole contents are protected.
pub(crate) const GIT_DIR_TREES: &[&str] = &["hooks", "info", "branches", "remotes"];
/// In a submodule git dir, `info/` is protected as a whole.
const MODULE_TREES: &[&str] = &["hooks", "info"];
/// Files of a `worktrees/<id>/` entry compared against the baseline (`HEAD` by form).
const WORKTREE_FILES: &[&str] = crate::catalogue::WORKTREE_ADMIN_FILES;

/// What went wrong before any comparison could start.
#[derive(Debug, thiserror::Error)]
pub enum IntegrityError {
    #[error("{0}: cannot pin: {1}")]
    NotARepository(PathBuf, String),
    #[error("{state}: the state file lies inside {inside} (the agent could rewrite it); put it outside the repository, its git dir and its work trees")]
    StateInside { state: PathBuf, inside: PathBuf },
    #[error("{0}: the state file is a symbolic link; refused")]
    StateLink(PathBuf),
    #[error("{0}: cannot read the state file: {1}")]
    StateRead(PathBuf, std::io::Error),
    #[error("{0}: not a wt-check state file: {1}")]
    StateParse(PathBuf, serde_json::Error),
    #[error("{0}: state file format {1} is not supported (this build reads formats 1 to 3 and writes {f}); pin again with `wt-check pin`", f = state::FORMAT)]
    StateFormat(PathBuf, u32),
    #[error("{0}: cannot write the state file: {1}")]
    StateWrite(PathBuf, String),
    #[error("{0}: session name must be 1-64 characters of [A-Za-z0-9._-]")]
    BadSession(String),
    #[error("{path}: cannot pin: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{repo}: cannot pin: the repository is already armed, and the baseline would take that as its normal state; remove what is listed (see `wt-check audit`) or pin with --accept-armed to record it as accepted:\n  {}", findings.join("\n  "))]
    Armed {
        repo: PathBuf,
        findings: Vec<String>,
    },
    #[error(transparent)]
    Fs(#[from] NfError),
}

/// What to pin or check.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub repo: PathBuf,
    pub state: PathBuf,
    /// The session whose worktrees (`<repo>-worktrees/<session>/`) may change.
    pub session: Option<String>,
    /// Overrides the session's worktree folder.
    pub session_dir: Option<PathBuf>,
    /// `check` only: put every protected entry back.
    pub restore: bool,
    /// `pin` only: record what is armed as accepted instead of refusing (`--accept-armed`).
    pub accept_armed: bool,
}

/// The result of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    Found,
    Incomplete,
}

impl Outcome {
    pub fn code(self) -> crate::exit::Code {
        match self {
            Outcome::Clean => crate::exit::CLEAN,
            Outcome::Found => crate::exit::FOUND,
            Outcome::Incomplete => crate::exit::INCOMPLETE,
        }
    }
    /// The worse of two outcomes.
    pub fn and(self, o: Outcome) -> Outcome {
        use Outcome::*;
        match (self, o) {
            (Incomplete, _) | (_, Incomplete) => Incomplete,
            (Found, _) | (_, Found) => Found,
            _ => Clean,
        }
    }
}

/// Where a repository's parts are (resolved by the trusted caller at pin time).
#[derive(Debug, Clone)]
pub struct Located {
    pub repo: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    pub work_tree: Option<PathBuf>,
}

/// Find the git dir, common dir and main work tree of `repo` (a work tree, a linked worktree
/// or a bare git dir) with `crate::layout::discover`, which refuses layouts a host tool
/// cannot vouch for (a `commondir` in a main git dir, a `.git` link, a gitfile that does not
/// point back). Discovery does not climb above `repo`. Runs at pin time, on the owner's side;
/// `check` uses the paths pinned in the state file, never a new discovery.
pub fn locate(repo: &Path) -> Result<Located, IntegrityError> {
    let not = |why: String| IntegrityError::NotARepository(repo.to_path_buf(), why);
    let abs = std::fs::canonicalize(repo).map_err(|e| not(e.to_string()))?;
    let ceilings: Vec<PathBuf> = abs.parent().map(Path::to_path_buf).into_iter().collect();
    let l = crate::layout::discover(&abs, &ceilings).map_err(|e| not(e.to_string()))?;
    // The main work tree: the common dir's parent when it is a `.git` folder.
    let work_tree = if l.common_dir.file_name() == Some(OsStr::new(".git")) {
        l.common_dir.parent().map(Path::to_path_buf)
    } else {
        None
    };
    Ok(Located {
        repo: abs,
        git_dir: l.git_dir,
        common_dir: l.common_dir,
        work_tree,
    })
}

/// `<repo>-worktrees/<session>`, the session's own worktree folder.
pub fn default_session_dir(loc: &Located, session: &str) -> PathBuf {
    let base = loc.work_tree.clone().unwrap_or_else(|| {
        let c = &loc.common_dir;
        match c.file_name().and_then(OsStr::to_str) {
            Some(n) => c.with_file_name(n.trim_end_matches(".git")),
            None => c.clone(),
        }
    });
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push("-worktrees");
    base.with_file_name(name).join(session)
}

/// Refuse a state file inside anything the agent can write: the repository, its git dir,
/// common dir, work trees, and the session's worktree folder.
pub fn check_state_location(
    state: &Path,
    loc: &Located,
    worktrees: &[PathBuf],
    session_dir: Option<&Path>,
) -> Result<PathBuf, IntegrityError> {
    if std::fs::symlink_metadata(state).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(IntegrityError::StateLink(state.to_path_buf()));
    }
    let resolved = crate::policy::resolve(&absolute(state));
    let mut forbidden: Vec<PathBuf> = vec![
        loc.repo.clone(),
        loc.git_dir.clone(),
        loc.common_dir.clone(),
    ];
    forbidden.extend(loc.work_tree.clone());
    forbidden.extend(worktrees.iter().cloned());
    forbidden.extend(session_dir.map(Path::to_path_buf));
    for f in forbidden {
        let f = crate::policy::resolve(&f);
        if resolved.starts_with(&f) {
            return Err(IntegrityError::StateInside {
                state: state.to_path_buf(),
                inside: f,
            });
        }
    }
    Ok(resolved)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Lexical normalisation: `.` dropped, `..` pops (never above `/`).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            o => out.push(o.as_os_str()),
        }
    }
    out
}

/// Is `HEAD` content in a form git accepts (`validate_headref`): `ref: refs/…` or a full
/// hex object id?
pub fn head_is_valid(bytes: &[u8]) -> bool {
    let s = match std::str::from_utf8(bytes) {
        Ok(s) => s.trim_end_matches(['\n', '\r']),
        Err(_) => return false,
    };
    if let Some(r) = s.strip_prefix("ref:") {
        let r = r.trim_start();
        return r.starts_with("refs/") && !r.contains("..") && !r.chars().any(char::is_whitespace);
    }
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn head_node_valid(n: &Node) -> bool {
    match n {
        Node::File { content, .. } => content.bytes().is_some_and(|b| head_is_valid(&b)),
        _ => false,
    }
}

pub(crate) fn is_head_key(rel: &str) -> bool {
    // `HEAD` of the common dir, of a worktree entry, of a submodule git dir (at any depth);
    // never a file of that name inside a protected tree such as `hooks/` or `info/`.
    (rel == "HEAD" || rel.ends_with("/HEAD"))
        && !rel
            .split('/')
            .any(|c| c == "hooks" || c == "info" || c == "refs" || c == "logs")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A common dir with worktree entries in every shape the collector must record: an
    /// honest entry, one whose files are a link, a fifo, a folder and a file of another mode,
    /// one with names git does not keep there (a hooks folder, a name that is not UTF-8),
    /// an entry that is a link and one that is a file.
    fn odd_common_dir() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let common = base.join("proj/.git");
        let wts = common.join("worktrees");
        for id in ["honest", "odd", "extra"] {
            let a = wts.join(id);
            std::fs::create_dir_all(&a).unwrap();
            std::fs::create_dir_all(base.join(id)).unwrap();
            std::fs::write(a.join("gitdir"), format!("{}/{id}/.git\n", base.display())).unwrap();
            std::fs::write(a.join("commondir"), "../..\n").unwrap();
            std::fs::write(a.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(
                base.join(id).join(".git"),
                format!("gitdir: {}\n", a.display()),
            )
            .unwrap();
        }
        let odd = wts.join("odd");
        std::fs::remove_file(odd.join("HEAD")).unwrap();
        symlink("refs/heads/main", odd.join("HEAD")).unwrap();
        std::fs::remove_file(odd.join("commondir")).unwrap();
        std::fs::create_dir(odd.join("commondir")).unwrap();
        nix::unistd::mkfifo(
            &odd.join("locked"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        std::fs::set_permissions(odd.join("gitdir"), std::fs::Permissions::from_mode(0o751))
            .unwrap();
        std::fs::write(odd.join("config.worktree"), [0xffu8, 0, 1]).unwrap();
        let extra = wts.join("extra");
        std::fs::create_dir(extra.join("hooks")).unwrap();
        std::fs::write(extra.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::write(extra.join("index"), "not compared").unwrap();
        use std::os::unix::ffi::OsStrExt;
        std::fs::write(extra.join(OsStr::from_bytes(b"bad\xffname")), "x").unwrap();
        symlink(base.join("honest"), wts.join("linked")).unwrap();
        std::fs::write(wts.join("plain"), "a file").unwrap();
        (t, common)
    }

    #[test]
    fn worktree_files_taken_from_the_layout_read_equal_a_second_read() {
        let (_t, common) = odd_common_dir();
        let root = Dir::open_abs(&common).unwrap();
        let layout = layout_entries(&common).unwrap();
        // The layout read holds the files' bytes (read once) …
        let odd = &layout["odd"];
        let gitdir = odd.files.iter().find(|f| f.name == "gitdir").unwrap();
        assert!(gitdir.bytes.is_some());
        assert!(matches!(
            gitdir.file_type,
            FileType::File { mode: 0o751, .. }
        ));
        // … and the snapshot built from it is the one the collector reads itself.
        let shared = collect(&root, &common, None, &layout);
        let own = collect(&root, &common, None, &BTreeMap::new());
        assert_eq!(shared.entries, own.entries);
        assert_eq!(shared.problems.len(), own.problems.len());
        let e = &shared.entries;
        assert!(
            matches!(&e["worktrees/odd/HEAD"], Node::Link { target } if target == "refs/heads/main")
        );
        assert!(matches!(e["worktrees/odd/commondir"], Node::Dir { .. }));
        assert!(matches!(
            e["worktrees/odd/locked"],
            Node::Special { kind: Kind::Fifo }
        ));
        assert!(matches!(
            e["worktrees/odd/gitdir"],
            Node::File { mode: 0o751, .. }
        ));
        assert!(matches!(
            &e["worktrees/odd/config.worktree"],
            Node::File {
                content: Content::Hex(_),
                ..
            }
        ));
        assert!(matches!(e["worktrees/honest/locked"], Node::Absent));
        assert!(matches!(
            e["worktrees/extra/hooks/post-checkout"],
            Node::File { .. }
        ));
        assert!(!e.contains_key("worktrees/extra/index"));
        assert!(matches!(e["worktrees/linked"], Node::Link { .. }));
        assert!(matches!(e["worktrees/plain"], Node::File { .. }));
        assert!(!e.keys().any(|k| k.contains("bad")));
    }

    #[test]
    fn a_file_the_layout_could_not_hold_is_read_by_the_collector() {
        // A layout record without bytes (as for a file too large for it) is read again by
        // the collector, not taken as absent or empty.
        let (_t, common) = odd_common_dir();
        let root = Dir::open_abs(&common).unwrap();
        let mut layout = layout_entries(&common).unwrap();
        for f in &mut layout.get_mut("honest").unwrap().files {
            f.bytes = None;
        }
        let shared = collect(&root, &common, None, &layout);
        let own = collect(&root, &common, None, &BTreeMap::new());
        assert_eq!(shared.entries, own.entries);
        assert!(matches!(
            &shared.entries["worktrees/honest/commondir"],
            Node::File { content: Content::Text(t), .. } if t == "../..\n"
        ));
    }

    #[test]
    fn a_file_hint_from_the_listing_gives_the_lstat_verdict_when_it_is_stale() {
        // An entry listed as a regular file that is now a fifo, a link, a folder or gone is
        // recorded as what it is now (the fifo neither blocks nor is read).
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::write(base.join("f"), "x").unwrap();
        nix::unistd::mkfifo(
            &base.join("p"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        symlink("/etc/passwd", base.join("l")).unwrap();
        std::fs::create_dir(base.join("d")).unwrap();
        let dir = Dir::open_abs(&base).unwrap();
        for name in ["f", "p", "l", "d", "missing"] {
            let n = OsStr::new(name);
            assert_eq!(
                read_node_known(&dir, n, None, true).unwrap(),
                read_node_known(&dir, n, None, false).unwrap(),
                "{name}"
            );
        }
        assert!(matches!(
            read_node_known(&dir, OsStr::new("p"), None, true).unwrap(),
            Node::Special { kind: Kind::Fifo }
        ));
    }

    /// A chain of `levels` submodule git dirs, each one the submodule `s` of the previous
    /// one's linked worktree `w` (`modules/s/worktrees/w/modules/s/…`), each holding `HEAD`,
    /// `config` and an entry `w` with git's files; the deepest git dir's `config` path.
    fn sub_worktree_chain(common: &Path, levels: usize) -> String {
        let mut rel = String::from("modules/s");
        let mut deepest = String::new();
        for i in 0..levels {
            let d = common.join(&rel);
            std::fs::create_dir_all(d.join("hooks")).unwrap();
            std::fs::write(d.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(d.join("config"), format!("[core]\n\tlevel = {i}\n")).unwrap();
            deepest = format!("{rel}/config");
            let e = d.join("worktrees/w");
            std::fs::create_dir_all(&e).unwrap();
            std::fs::write(e.join("HEAD"), "ref: refs/heads/w\n").unwrap();
            std::fs::write(e.join("commondir"), "../..\n").unwrap();
            std::fs::write(e.join("gitdir"), "/nowhere/w/.git\n").unwrap();
            std::fs::write(e.join("index"), "state, not recorded").unwrap();
            rel = format!("{rel}/worktrees/w/modules/s");
        }
        deepest
    }

    #[test]
    fn submodule_linked_worktree_entries_are_recorded_at_any_nesting_within_the_bound() {
        let t = tempfile::tempdir().unwrap();
        let common = std::fs::canonicalize(t.path()).unwrap().join("proj/.git");
        std::fs::create_dir_all(&common).unwrap();
        std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let deepest = sub_worktree_chain(&common, MODULE_DEPTH);
        let root = Dir::open_abs(&common).unwrap();
        let snap = collect(&root, &common, None, &BTreeMap::new());
        assert!(snap.problems.is_empty(), "{:?}", snap.problems);
        let e = &snap.entries;
        assert!(matches!(e[&deepest], Node::File { .. }), "{deepest}");
        for k in [
            "modules/s/worktrees/w/commondir",
            "modules/s/worktrees/w/gitdir",
            "modules/s/worktrees/w/HEAD",
            "modules/s/worktrees/w/modules/s/config",
            "modules/s/worktrees/w/modules/s/worktrees/w/commondir",
        ] {
            assert!(matches!(e[k], Node::File { .. }), "{k}");
        }
        assert!(matches!(e["modules/s/worktrees/w/locked"], Node::Absent));
        assert!(!e.contains_key("modules/s/worktrees/w/index"));
        // Each entry is a git dir of the snapshot (in-progress operations, index paths) but
        // not a submodule git dir: its `worktrees` is not an entry's.
        let bases = git_dir_bases(e);
        assert!(bases.contains("modules/s/worktrees/w"));
        let subs = module_git_dirs(e);
        assert!(subs.contains("modules/s"));
        assert!(subs.contains("modules/s/worktrees/w/modules/s"));
        assert!(!subs.contains("modules/s/worktrees/w"));
        assert_eq!(
            sub_worktree_entry("modules/s/worktrees/w/modules/s/worktrees/w/HEAD", &subs),
            Some(("modules/s/worktrees/w/modules/s/worktrees/w", "HEAD"))
        );
        assert_eq!(
            sub_worktree_entry("modules/s/worktrees/w/modules/s/config", &subs),
            Some(("modules/s/worktrees/w", "modules/s/config"))
        );
        assert_eq!(sub_worktree_entry("modules/s/config", &subs), None);

        // One level more: the walk is cut short and says so (check: exit 2).
        let t = tempfile::tempdir().unwrap();
        let common = std::fs::canonicalize(t.path()).unwrap().join("proj/.git");
        std::fs::create_dir_all(&common).unwrap();
        std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let deepest = sub_worktree_chain(&common, MODULE_DEPTH + 1);
        let root = Dir::open_abs(&common).unwrap();
        let snap = collect(&root, &common, None, &BTreeMap::new());
        assert!(!snap.entries.contains_key(&deepest));
        assert_eq!(snap.problems.len(), 1, "{:?}", snap.problems);
        assert!(snap.problems[0].reason.contains("nested deeper"));
    }

    #[test]
    fn a_submodule_named_like_a_worktree_entry_is_not_taken_for_one() {
        // `modules/a` is a folder of names (no HEAD, no config): `modules/a/worktrees/b` is the
        // submodule `a/worktrees/b`, its files compared as a git dir's.
        let t = tempfile::tempdir().unwrap();
        let common = std::fs::canonicalize(t.path()).unwrap().join("proj/.git");
        let g = common.join("modules/a/worktrees/b");
        std::fs::create_dir_all(g.join("hooks")).unwrap();
        std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("config"), "[core]\n").unwrap();
        let root = Dir::open_abs(&common).unwrap();
        let snap = collect(&root, &common, None, &BTreeMap::new());
        assert!(snap.problems.is_empty(), "{:?}", snap.problems);
        let subs = module_git_dirs(&snap.entries);
        assert!(subs.contains("modules/a/worktrees/b"), "{subs:?}");
        assert_eq!(
            sub_worktree_entry("modules/a/worktrees/b/config", &subs),
            None
        );
    }

    #[test]
    fn a_submodule_or_worktree_entry_git_enters_by_a_name_that_is_not_utf8_makes_the_walk_incomplete(
    ) {
        // git enters `modules/<name>` and `worktrees/<id>` by whatever bytes the name has;
        // the state file holds UTF-8 keys only, so such a git dir cannot be compared.
        use std::os::unix::ffi::OsStrExt;
        for parent in [
            "modules",
            "worktrees",
            "modules/s/worktrees",
            "modules/s/worktrees/w/modules",
        ] {
            let t = tempfile::tempdir().unwrap();
            let common = std::fs::canonicalize(t.path()).unwrap().join("proj/.git");
            std::fs::create_dir_all(&common).unwrap();
            std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            sub_worktree_chain(&common, 1);
            let root = Dir::open_abs(&common).unwrap();
            let clean = collect(&root, &common, None, &BTreeMap::new());
            assert!(clean.problems.is_empty(), "{parent}: {:?}", clean.problems);
            let g = common.join(parent).join(OsStr::from_bytes(b"bad\xffname"));
            std::fs::create_dir_all(&g).unwrap();
            std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(g.join("config"), "[core]\n").unwrap();
            let snap = collect(&root, &common, None, &BTreeMap::new());
            assert_eq!(snap.problems.len(), 1, "{parent}: {:?}", snap.problems);
            assert!(snap.problems[0].reason.contains("not UTF-8"), "{parent}");
        }
    }

    #[test]
    fn merged_yields_every_key_once_in_order() {
        let n = |m: u32| Node::Dir { mode: m };
        let a: BTreeMap<String, Node> = [("a", 1), ("c", 2), ("e", 3)]
            .into_iter()
            .map(|(k, m)| (k.to_owned(), n(m)))
            .collect();
        let b: BTreeMap<String, Node> = [("b", 4), ("c", 5), ("f", 6)]
            .into_iter()
            .map(|(k, m)| (k.to_owned(), n(m)))
            .collect();
        let got: Vec<(&str, Option<u32>, Option<u32>)> = merged(&a, &b)
            .into_iter()
            .map(|(k, x, y)| {
                let mode = |o: Option<&Node>| match o {
                    Some(Node::Dir { mode }) => Some(*mode),
                    _ => None,
                };
                (k.as_str(), mode(x), mode(y))
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some(1), None),
                ("b", None, Some(4)),
                ("c", Some(2), Some(5)),
                ("e", Some(3), None),
                ("f", None, Some(6)),
            ]
        );
        assert!(merged(&BTreeMap::new(), &BTreeMap::new()).is_empty());
    }
}
