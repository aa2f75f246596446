//! The sandbox plan (`wt-check plan`, `agent-shell --sandbox bwrap`): which folders the agent's
//! sandbox makes writable, which paths inside them stay read-only, which names get a
//! read-only placeholder so they cannot be created, and which sockets are hidden.
//!
//! # Why
//!
//! `wt-check check` finds and undoes tampering *after* a turn; the plan makes the sandbox
//! refuse it *during* the turn, so that no host tool (the owner's IDE, another session's git)
//! ever sees a planted hook or config in between. The plan is computed from
//! [`crate::integrity::protected`], the very function `wt-check pin` records its baseline
//! with: the sandbox and the checker cannot disagree on what is protected. Every key `pin`
//! records appears in [`Plan::pinned`] with how the sandbox enforces it.
//!
//! # Invariants
//!
//! - All or nothing: a layout the plan cannot vouch for (a gitfile pointing outside, an
//!   unreadable entry, a link where a file or folder is expected) is a [`PlanError`]; there is
//!   no partial plan.
//! - Paths are absolute and resolved without following links (`crate::layout`'s resolver);
//!   the binder ([`crate::sandbox`]) opens each one again without following links and binds
//!   from the descriptor, so a link swapped in after planning is refused, not followed.
//! - Read-only binds and placeholders lie inside a writable root (outside one, the sandbox's
//!   read-only base already protects them); they are ordered parents first.
//! - The git dir's top level stays writable: git writes every ref, the index and `HEAD` by
//!   creating `<name>.lock` beside the file and renaming it over, which needs the folder
//!   writable. A read-only bind makes that rename fail (`EBUSY`), which is what keeps
//!   `config` and the other protected files.

pub mod words;
use crate::catalogue::{self, SocketRule};
use crate::integrity::state::Node;
use crate::integrity::{self, IntegrityError, Options, Protected};
use crate::layout::{LayoutError, Sys};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Version of the JSON contract (`docs/sandbox-plan.md`). Bumped on any change a consumer
/// would notice: a field removed or renamed, a meaning changed.
///
/// Format 2 (sixth red-team pass, R6-1/R6-5): [`Plan::unix_sockets`]. A format-1 consumer
/// built a sandbox in which every pathname Unix socket outside the hidden trees stayed
/// reachable; the version changes so that such a consumer notices instead of ignoring the rule.
///
/// Format 3 (seventh red-team pass, R7-1): a program value's or hook's script is protected by
/// its folder (`read_only` entries of kind `dir` with the program reason), and
/// [`Plan::unguarded`] lists what stays writable beside a script at the top of a work tree.
///
/// Format 4 (R9-5, the FIFO class): [`Plan::landlock`], the Landlock ruleset that keeps the
/// command from making a FIFO or device anywhere but the sandbox's private tmpfs trees. A
/// format-3 consumer built a sandbox in which a FIFO in a subfolder hung the owner's git.
pub const FORMAT: u32 = 4;

pub mod landlock;
pub mod seccomp;

/// What to plan for.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// A work tree, linked worktree or bare git dir.
    pub repo: PathBuf,
    /// The session whose worktree folder and worktree entries are writable.
    pub session: Option<String>,
    /// The session's worktree folder, if not `<repo>-worktrees/<session>/`.
    pub session_dir: Option<PathBuf>,
    /// More writable folders (the policy's `writable_roots` and `worktree_roots`).
    pub extra_writable: Vec<PathBuf>,
    /// The policy opts in to Docker: its socket stays reachable.
    pub docker: bool,
    /// The sandbox keeps the network: database sockets stay reachable.
    pub network: bool,
    /// The policy lets the sandbox make Unix sockets (`unix_sockets = "allow"`): the seccomp
    /// filter without its Unix rule, every pathname socket outside the hidden trees, folders and sockets reachable.
    pub unix_sockets: bool,
    /// Paths the command reads that may lie below a hidden tree (agent-shell's shim folder,
    /// the policy file the shim reads): bound back read-only there, with `$HOME` and the
    /// folders on `$PATH`.
    pub read_back: Vec<PathBuf>,
    /// Plan although a program value runs a program built at run time from work-tree
    /// content (the policy's `allow_unresolved_programs`); by default that is
    /// [`PlanError::Unresolved`].
    pub allow_unresolved: bool,
    /// The policy's `landlock` value ([`landlock::Policy`]).
    pub landlock: landlock::Policy,
    /// The owner's runtime dir, in place of `$XDG_RUNTIME_DIR` (then `/run/user/<uid>`):
    /// for tests, which must not change the environment other tests' threads read.
    pub runtime_dir: Option<PathBuf>,
}

/// What stands at `path` (a program or a file the config names), for [`guard`]: nothing, a
/// folder or a file; anything else (a link, a FIFO, a device) gives no plan, since a bind
/// would follow or expose it.
fn plain_node(sys: &Sys, path: &Path, kind: EntryKind) -> Result<Node, PlanError> {
    Ok(match sys.stat(path)? {
        None => Node::Absent,
        Some(st) if st.is_dir() => Node::Dir { mode: 0 },
        Some(st) if st.is_file() => Node::File {
            mode: 0,
            oid: String::new(),
            content: integrity::state::Content::Text(String::new()),
        },
        Some(_) => {
            return Err(PlanError::NotPlain {
                path: path.to_path_buf(),
                kind: "link or special file",
                expected: if kind == EntryKind::Dir {
                    "folder"
                } else {
                    "file"
                },
            })
        }
    })
}

/// Why there is no plan. One line naming the path and the reason.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Integrity(#[from] IntegrityError),
    #[error("{0}")]
    Layout(#[from] LayoutError),
    /// A protected entry that is neither a file nor a folder (a link, a fifo, a device).
    #[error("{}: {kind} where a {expected} is expected: no plan (a bind would follow or expose it)", .path.display())]
    NotPlain {
        path: PathBuf,
        kind: &'static str,
        expected: &'static str,
    },
    /// The config that names programs cannot be read.
    #[error("{}: cannot read the config for the programs it names: {reason}: no plan", .path.display())]
    Config { path: PathBuf, reason: String },
    /// A program value runs a program or script the plan cannot name before the shell runs:
    /// one built from work-tree content (`sh $(cat list)`), or a relative script resolved
    /// from a folder only known at run time (`cd "$GIT_PREFIX" && sh x.sh`,
    /// `sh ${GIT_PREFIX}x.sh`): no path the plan could make read-only names it. `word` says
    /// which and why ([`words::Reaches::unresolved`]).
    #[error("{}: {key}: the program word {word}; the plan cannot know what it runs: no plan (the policy's allow_unresolved_programs = true plans anyway)", .path.display())]
    Unresolved {
        path: PathBuf,
        key: String,
        word: String,
    },
    /// A writable root that is missing or not a folder.
    #[error("{}: writable root is {what}: no plan", .path.display())]
    BadRoot { path: PathBuf, what: &'static str },
}

/// File or folder: what a bind or placeholder mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
}

/// A writable root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Writable {
    pub path: PathBuf,
    /// `work_tree`, `git_dir`, `common_dir`, `session_dir`, `policy`.
    pub role: &'static str,
}

/// A read-only bind of an existing path, or a placeholder for a missing one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bind {
    pub path: PathBuf,
    pub kind: EntryKind,
    /// The rule it enforces (a row of `docs/sandbox-plan.md`).
    pub protects: &'static str,
}

/// A script the owner's git runs from the top of a work tree: the file is read-only, its
/// folder (the work tree) cannot be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unguarded {
    /// The script (in the main work tree; the same name in every worktree), or a search root
    /// of the interpreter that runs one: the top itself (`python3 -m x` run there), a missing
    /// `node_modules` or `.npmrc` ([`words::Reaches::searched`]).
    pub path: PathBuf,
    /// The config key, or the hook, that runs it.
    pub key: String,
    /// The value that names it (empty for a hook).
    pub value: String,
    pub why: &'static str,
}

/// Why an [`Unguarded`] entry stays open.
pub const R_TOP_SCRIPT: &str = "a script at the top of the work tree: the file is read-only, but its folder is the work tree, which stays writable, so what an interpreter finds beside it there (a Python script's modules, a Node script's require('./x'), a shell script's . ./x) can be planted; move the script into a folder to close it";

/// A hidden socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hidden {
    pub path: PathBuf,
    pub what: &'static str,
}

/// A tree hidden by a fresh tmpfs (see [`Plan::hide_trees`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenTree {
    pub path: PathBuf,
    /// Writable scratch space (`/tmp`, `/var/tmp`, `/dev/shm`) or read-only and empty.
    pub writable: bool,
    pub what: &'static str,
}

/// Whether the command may make Unix sockets ([`Plan::unix_sockets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnixRule {
    /// `socket(AF_UNIX)` fails with `EPERM` ([`seccomp`]): no pathname socket is reachable.
    Deny,
    /// No filter: every pathname socket the sandbox can see is reachable.
    Allow,
}

/// The Unix-socket rule and why it is what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnixSockets {
    pub rule: UnixRule,
    pub reason: &'static str,
}

const R_UNIX_DENY: &str = "socket(AF_UNIX) fails with EPERM (seccomp; io_uring and other ABIs denied; socketpair allowed): no pathname socket is reachable, wherever it lies (tmux, ssh ControlMaster and agent, git credential-cache in $HOME, /var/lib, /srv)";
const R_UNIX_POLICY: &str = "the policy says unix_sockets = \"allow\": every pathname Unix socket outside the hidden trees, hidden folders and hidden sockets is reachable ($HOME: tmux -S, ssh ControlMaster and agent, git credential-cache; /var/lib, /srv)";
const R_UNIX_DOCKER: &str = "[docker] enabled: the Docker socket needs socket(AF_UNIX), so every pathname Unix socket outside the hidden trees, hidden folders and hidden sockets is reachable ($HOME: tmux -S, ssh ControlMaster and agent, git credential-cache; /var/lib, /srv)";

impl UnixSockets {
    /// The rule for these options: denied unless the policy allows it or opts in to Docker.
    pub fn for_options(opts: &PlanOptions) -> UnixSockets {
        match (opts.unix_sockets, opts.docker) {
            (true, _) => UnixSockets {
                rule: UnixRule::Allow,
                reason: R_UNIX_POLICY,
            },
            (false, true) => UnixSockets {
                rule: UnixRule::Allow,
                reason: R_UNIX_DOCKER,
            },
            (false, false) => UnixSockets {
                rule: UnixRule::Deny,
                reason: R_UNIX_DENY,
            },
        }
    }
}

/// How the sandbox enforces one entry `pin` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Enforced {
    /// Inside the read-only bind or placeholder at `bind`.
    ReadOnly {
        bind: PathBuf,
    },
    Placeholder {
        bind: PathBuf,
    },
    /// Inside the read-only base of the sandbox (outside every writable root).
    Base,
    /// Writable during the turn by design; `wt-check check` compares it after the turn.
    AfterTurn {
        reason: &'static str,
    },
}

/// One entry `pin` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pinned {
    /// The key in the state file (relative to the common dir; an include target's absolute
    /// path).
    pub entry: String,
    pub path: PathBuf,
    /// `absent`, `file`, `folder`.
    pub node: &'static str,
    pub enforced: Enforced,
}

/// The plan. Serialised as the JSON contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub format: u32,
    pub repo: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    pub work_tree: Option<PathBuf>,
    pub session: Option<String>,
    pub session_dir: Option<PathBuf>,
    /// Writable roots, parents first.
    pub writable: Vec<Writable>,
    /// Existing paths inside writable roots bound read-only, parents first.
    pub read_only: Vec<Bind>,
    /// Missing names inside writable roots covered by an empty read-only file or folder.
    pub placeholders: Vec<Bind>,
    /// Folders bound onto themselves (writable): every folder between a writable root and a
    /// read-only bind, placeholder or nested writable root below it. A mount point cannot be
    /// renamed or removed (`EBUSY`), while a folder that merely *contains* one can, and the
    /// mount travels with it: without these, `mv conf conf.old; mkdir conf` puts a new,
    /// writable `conf/shared.cfg` where the read-only include target was.
    pub anchors: Vec<PathBuf>,
    /// Sockets covered by `/dev/null`.
    pub hide: Vec<Hidden>,
    /// Folders of the owner's session daemons (tmux, the runtime dir: user bus, systemd,
    /// gpg-agent, ssh-agent), each covered as a whole by an empty read-only tmpfs.
    pub hide_folders: Vec<Hidden>,
    /// Trees covered by a fresh tmpfs before any other mount ([`catalogue::HIDDEN_TREES`]):
    /// nothing of the host below them is reachable unless the plan binds it back (writable
    /// roots, anchors, read-only binds and placeholders below them, then [`Plan::keep`]).
    /// Parents first, each an existing folder resolved through links, none inside another.
    pub hide_trees: Vec<HiddenTree>,
    /// Host paths below a hidden tree bound back read-only: sockets the options keep (Docker
    /// when the policy opts in, database sockets with the network on) and the resolver file.
    pub keep: Vec<Hidden>,
    /// Exactly the set `wt-check pin` records, each with how it is enforced.
    pub pinned: Vec<Pinned>,
    /// Whether the command may make Unix sockets. Hiding trees and listing sockets cannot be
    /// complete (a read-only bind does not stop `connect(2)`, and sockets sit in `$HOME`,
    /// `/var/lib`, `/srv`): by default the sandbox cannot make a Unix socket at all.
    pub unix_sockets: UnixSockets,
    /// Scripts at the top of a work tree that the owner's git runs: the file is protected,
    /// what stays open beside it is said here (format 3).
    pub unguarded: Vec<Unguarded>,
    /// Where the command may make a FIFO or device, as a Landlock ruleset (format 4).
    pub landlock: landlock::Landlock,
}

// Reasons, one per rule (rows of docs/sandbox-plan.md).
const R_CONFIG: &str = "config: core.hooksPath, core.fsmonitor, filters, aliases, includes run programs (git-exec-surfaces §1)";
const R_HOOKS: &str =
    "hooks: any executable there runs on commit, checkout, merge (git-exec-surfaces §2)";
const R_COMMONDIR: &str = "commondir: names the folder config and hooks come from (layout)";
const R_INFO: &str = "info/: attributes name filter and diff drivers; exclude and sparse-checkout steer the walk (git-exec-surfaces §3)";
const R_REMOTES: &str = "branches/, remotes/: legacy remote definitions, URLs with ext:: transports (git-exec-surfaces §1b)";
const R_ALTERNATES: &str = "objects/info/alternates: borrows objects from a folder the agent names";
const R_MODULES: &str = "modules/: submodule git dirs, each with its own config and hooks";
const R_WORKTREE: &str = "worktrees/<id>/: another session's worktree entry";
const R_OWN_WT: &str = "the session's own worktree entry: commondir and config.worktree stay";
const R_INCLUDE: &str = "include target: config read by git like config";
const R_OTHER_SESSION: &str = "another session's worktree folder";
const R_PROGRAM: &str = "a program or hooks folder the config names by path (core.hooksPath, core.fsmonitor, filters, textconv, credential helpers, aliases), or a work-tree file an installed hook runs (.pre-commit-config.yaml, .husky/, lefthook.yml, a script the hook names), with the folder that holds a script (its modules, requires and sourced files): git runs it";
const R_DISCOVERY: &str = "a `.git` planted here is discovered by host tools started below it";

/// The submodule checkouts inside the work trees `inside`: every gitlink of each one's index,
/// recursively (`safegit::gitlinks::scan`), whether the checkout's git dir is absorbed or
/// not, with or without `core.worktree` (eleventh and twelfth red-team passes, R11-7,
/// R12-1). Only adds protection, so an index the agent wrote can only add folders; an index
/// or `.git` that cannot be read adds none below it.
fn submodule_checkouts(inside: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = inside.iter().map(|t| (t.clone(), 0)).collect();
    while let Some((top, depth)) = stack.pop() {
        if depth > crate::safegit::locate::MAX_SUBMODULE_DEPTH {
            continue;
        }
        let dot = top.join(".git");
        let git_dir = match std::fs::symlink_metadata(&dot) {
            Ok(m) if m.is_dir() => dot,
            Ok(m) if m.is_file() => {
                let Ok(raw) = crate::audit::special::read_regular(&dot, 1 << 20) else {
                    continue;
                };
                let Ok(g) = crate::layout::parse_gitfile(&dot, &raw) else {
                    continue;
                };
                top.join(g)
            }
            _ => continue,
        };
        let Ok(bytes) = crate::audit::special::read_regular(&git_dir.join("index"), 1 << 32) else {
            continue;
        };
        if let Some(crate::safegit::gitlinks::Scan::Gitlinks(links)) =
            crate::safegit::gitlinks::scan(&bytes)
        {
            for l in links {
                let sub = integrity::normalize(&top.join(String::from_utf8_lossy(&l).as_ref()));
                if sub.starts_with(&top) && !out.contains(&sub) {
                    out.push(sub.clone());
                    stack.push((sub, depth + 1));
                }
            }
        }
    }
    out
}

/// Build the plan. Reads the repository the way `wt-check pin` does.
pub fn plan(opts: &PlanOptions) -> Result<Plan, PlanError> {
    let p = integrity::protected(&Options {
        repo: opts.repo.clone(),
        session: opts.session.clone(),
        session_dir: opts.session_dir.clone(),
        ..Options::default()
    })?;
    let sys = Sys::new()?;
    // `pin` resolves the session's folder following links (its baseline is about the git
    // folder); a bind source must not be reached through one.
    let given = match (&opts.session_dir, &opts.session) {
        (Some(d), _) => Some(std::path::absolute(d).unwrap_or_else(|_| d.clone())),
        (None, Some(s)) => Some(integrity::default_session_dir(&p.loc, s)),
        (None, None) => None,
    };
    if let Some(g) = given {
        sys.resolve(&g, true)?;
    }
    let owner = owner_programs(&p.loc)?;
    if !opts.allow_unresolved {
        if let Some((path, key, word)) = owner.unresolved.first() {
            return Err(PlanError::Unresolved {
                path: path.clone(),
                key: key.clone(),
                word: word.clone(),
            });
        }
    }
    let mut unguarded = owner.unguarded;
    let mut programs = owner.programs;
    // git resolves a relative program from the top of the work tree it runs in: the same
    // relative path in every worktree of the repository (the session's are writable roots)
    // runs for the owner's git there too (fifth red-team pass, R5-3).
    if let Some(top) = p.loc.work_tree.as_deref() {
        let relative: Vec<(PathBuf, EntryKind)> = programs
            .iter()
            .filter_map(|(path, kind)| Some((path.strip_prefix(top).ok()?.to_path_buf(), *kind)))
            .collect();
        // And from the top of every submodule checkout inside them: git runs in a
        // submodule's work tree for `status`, `diff`, `submodule foreach`, and the owner's
        // global config applies there (eleventh red-team pass, R11-7).
        let mut tops: Vec<PathBuf> = p
            .worktrees
            .values()
            .filter_map(|w| w.path.clone())
            .collect();
        let inside: Vec<PathBuf> = std::iter::once(top.to_path_buf())
            .chain(tops.iter().cloned())
            .collect();
        tops.extend(submodule_checkouts(&inside));
        for wt in &tops {
            for (rel, kind) in &relative {
                let path = integrity::normalize(&wt.join(rel));
                if !programs.iter().any(|(q, _)| *q == path) {
                    programs.push((path, *kind));
                }
            }
        }
    }
    // What the owner's hooks run from the work tree (the second hop, R5-7), and the relative
    // programs again: read-only in the main work tree and in every worktree present now.
    // Only what exists (a placeholder in a work tree would be staged by `git add -A`).
    let tops: Vec<PathBuf> = p
        .loc
        .work_tree
        .iter()
        .cloned()
        .chain(p.worktrees.values().filter_map(|w| w.path.clone()))
        .collect();
    let (hops, hop_searched) = hop::hops_and_searched(&p.loc)?;
    // What the hooks' interpreters search that no bind can protect (R9-1, R9-7, R9-8).
    if let Some(top) = p.loc.work_tree.as_deref() {
        for h in hop_searched {
            let path = integrity::normalize(&top.join(&h.searched.rel));
            if !unguarded.iter().any(|u| u.path == path) {
                unguarded.push(Unguarded {
                    path,
                    key: h.via,
                    value: String::new(),
                    why: h.searched.why,
                });
            }
        }
    }
    for h in hops {
        // A searched folder no bind can protect (the top): reported above, compared by
        // `check`, never bound.
        if !h.globs.is_empty() {
            continue;
        }
        if h.at_top {
            if let Some(top) = p.loc.work_tree.as_deref() {
                let path = top.join(&h.rel);
                if !unguarded.iter().any(|u| u.path == path) {
                    unguarded.push(Unguarded {
                        path,
                        key: h.via.clone(),
                        value: String::new(),
                        why: R_TOP_SCRIPT,
                    });
                }
            }
        }
        for top in &tops {
            let path = integrity::normalize(&top.join(&h.rel));
            let exists = std::fs::symlink_metadata(&path).is_ok_and(|m| match h.kind {
                EntryKind::File => m.is_file(),
                EntryKind::Dir => m.is_dir(),
            });
            if exists && !programs.iter().any(|(q, _)| *q == path) {
                programs.push((path, h.kind));
            }
        }
    }
    let rt = match &opts.runtime_dir {
        Some(r) => Some(r.clone().into_os_string()),
        None => std::env::var_os("XDG_RUNTIME_DIR"),
    };
    let home = std::env::var_os("HOME");
    let host = HostPaths {
        runtime_dir: rt.as_deref(),
        home: home.as_deref(),
        uid: nix::unistd::getuid().as_raw(),
    };
    let (sockets, folders, kept) = live_sockets(opts, &host);
    let named = owner_named(&p.loc, &tops)?;
    let mut plan = build(&sys, &p, opts, &sockets, &programs, &named)?;
    plan.hide_folders = folders;
    plan.unguarded = unguarded;
    let mut read_back = opts.read_back.clone();
    read_back.extend(home.as_deref().map(PathBuf::from));
    if let Some(path) = std::env::var_os("PATH") {
        read_back.extend(std::env::split_paths(&path).filter(|p| p.is_absolute()));
    }
    hide_trees(&mut plan, &host, kept, &read_back);
    plan.landlock = landlock::Landlock::compute(
        opts.landlock,
        crate::sandbox::landlock::abi(),
        &plan.writable,
        &plan.hide_trees,
    );
    Ok(plan)
}

/// Fill [`Plan::hide_trees`] and [`Plan::keep`], and drop the hidden sockets and folders a
/// tree covers (they are gone with it), except those inside a writable root, which the root's
/// bind shows again.
pub(crate) fn hide_trees(
    plan: &mut Plan,
    host: &HostPaths<'_>,
    kept: Vec<Hidden>,
    read_back: &[PathBuf],
) {
    let runtime = runtime_dir(host);
    let mut trees: Vec<HiddenTree> = Vec::new();
    for t in catalogue::HIDDEN_TREES {
        let raw = if t.path == "{runtime}" {
            runtime.clone()
        } else {
            PathBuf::from(t.path)
        };
        // The tree as the kernel sees it: `/var/run` is `/run` on most systems.
        let Ok(path) = std::fs::canonicalize(&raw) else {
            continue;
        };
        if !path.is_dir() || path == Path::new("/") {
            continue;
        }
        if trees.iter().any(|o| o.path == path) {
            continue;
        }
        trees.push(HiddenTree {
            path,
            writable: t.writable,
            what: t.what,
        });
    }
    let all = trees.clone();
    trees.retain(|h| {
        !all.iter()
            .any(|o| o.path != h.path && h.path.starts_with(&o.path))
    });
    trees.sort_by(|a, b| depth_then_path(&a.path, &b.path));
    let under_tree = |p: &Path| trees.iter().any(|t| p.starts_with(&t.path));
    let writable: Vec<PathBuf> = plan.writable.iter().map(|w| w.path.clone()).collect();
    let in_root = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut keep: Vec<Hidden> = kept
        .into_iter()
        .filter(|k| under_tree(&k.path) && !in_root(&k.path))
        .collect();
    // Folders the command reads (its shim, `$HOME`, `$PATH`), each resolved through links.
    for d in read_back {
        let Ok(path) = std::fs::canonicalize(d) else {
            continue;
        };
        if (path.is_dir() || path.is_file())
            && under_tree(&path)
            && !in_root(&path)
            && !trees.iter().any(|t| t.path == path)
        {
            keep.push(Hidden {
                path,
                what: "a path the command reads (its shim and policy, $HOME, $PATH)",
            });
        }
    }
    let kept_dirs: Vec<PathBuf> = keep.iter().map(|k| k.path.clone()).collect();
    let shown = |p: &Path| in_root(p) || kept_dirs.iter().any(|k| p.starts_with(k));
    plan.hide.retain(|h| !under_tree(&h.path) || shown(&h.path));
    plan.hide_folders
        .retain(|h| !under_tree(&h.path) || shown(&h.path));
    for f in catalogue::KEPT_SYSTEM_FILES {
        if let Ok(path) = std::fs::canonicalize(f) {
            if path.is_file() && under_tree(&path) && !shown(&path) {
                keep.push(Hidden {
                    path,
                    what: "resolver configuration",
                });
            }
        }
    }
    keep.sort_by(|a, b| depth_then_path(&a.path, &b.path));
    keep.dedup_by(|a, b| a.path == b.path);
    plan.hide_trees = trees;
    plan.keep = keep;
}

/// The owner's runtime dir: `$XDG_RUNTIME_DIR`, else `/run/user/<uid>`.
fn runtime_dir(host: &HostPaths<'_>) -> PathBuf {
    match host.runtime_dir.filter(|v| !v.is_empty()) {
        Some(r) => PathBuf::from(r),
        None => PathBuf::from(format!("/run/user/{}", host.uid)),
    }
}

/// Where the hidden sockets and folders of the catalogue are looked up.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostPaths<'a> {
    pub runtime_dir: Option<&'a std::ffi::OsStr>,
    pub home: Option<&'a std::ffi::OsStr>,
    pub uid: u32,
}

/// The sockets of the catalogue (and `<runtime_dir>/docker.sock`) that exist now and the
/// options do not keep, and the folders of [`catalogue::HIDDEN_FOLDERS`] that exist now.
///
/// Each target is the path bubblewrap will mount on: its parent resolved through links
/// (`/var/run/docker.sock` is `/run/docker.sock` where `/var/run` links to `/run`; bubblewrap
/// cannot create a mount point through a link, red-team B-1), the last component itself
/// never a link (a link in `/tmp` would aim the tmpfs at any folder). Duplicates and targets
/// inside a hidden folder are dropped: every target is one bubblewrap can mount.
fn live_sockets(
    opts: &PlanOptions,
    host: &HostPaths<'_>,
) -> (Vec<Hidden>, Vec<Hidden>, Vec<Hidden>) {
    use std::os::unix::fs::FileTypeExt;
    let canon = mount_target;
    let uid = host.uid.to_string();
    let runtime = match host.runtime_dir.filter(|v| !v.is_empty()) {
        Some(r) => PathBuf::from(r),
        None => PathBuf::from(format!("/run/user/{uid}")),
    };
    let home = host.home.filter(|h| !h.is_empty()).map(PathBuf::from);
    let mut folders: Vec<Hidden> = Vec::new();
    for f in catalogue::HIDDEN_FOLDERS {
        let t = f.path.replace("{uid}", &uid);
        // The owner's own folders (its environment's runtime dir and home) are resolved as a
        // whole: a runtime dir reached through a link is still the owner's.
        let t = if let Some(rest) = t.strip_prefix("{runtime}") {
            match std::fs::canonicalize(&runtime) {
                Ok(r) => PathBuf::from(format!("{}{rest}", r.display())),
                Err(_) => continue,
            }
        } else if let Some(rest) = t.strip_prefix("{home}") {
            match home.as_ref().and_then(|h| std::fs::canonicalize(h).ok()) {
                Some(h) => PathBuf::from(format!("{}{rest}", h.display())),
                None => continue,
            }
        } else {
            PathBuf::from(t)
        };
        let cands: Vec<PathBuf> = match t.file_name().and_then(|n| n.to_str()) {
            Some(n) if n.ends_with('*') => {
                let prefix = &n[..n.len() - 1];
                let parent = t.parent().unwrap_or(Path::new("/"));
                std::fs::read_dir(parent)
                    .map(|rd| {
                        rd.filter_map(Result::ok)
                            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                            .map(|e| e.path())
                            .collect()
                    })
                    .unwrap_or_default()
            }
            _ => vec![t],
        };
        for c in cands {
            let is_dir = std::fs::symlink_metadata(&c).is_ok_and(|m| m.file_type().is_dir());
            let Some(path) = canon(&c).filter(|_| is_dir) else {
                continue;
            };
            if !folders.iter().any(|h| h.path == path) {
                folders.push(Hidden { path, what: f.what });
            }
        }
    }
    // A folder inside another hidden folder is covered by it.
    let all = folders.clone();
    folders.retain(|h| {
        !all.iter()
            .any(|o| o.path != h.path && h.path.starts_with(&o.path))
    });
    folders.sort_by(|a, b| depth_then_path(&a.path, &b.path));

    let mut cands: Vec<(PathBuf, &'static str, SocketRule)> = catalogue::HIDDEN_SOCKETS
        .iter()
        .map(|s| (PathBuf::from(s.path), s.what, s.when))
        .collect();
    cands.push((
        runtime.join("docker.sock"),
        "Docker (rootless)",
        SocketRule::UnlessDocker,
    ));
    let mut out: Vec<Hidden> = Vec::new();
    let mut kept: Vec<Hidden> = Vec::new();
    for (path, what, when) in cands {
        let keep = match when {
            SocketRule::Always => false,
            SocketRule::UnlessDocker => opts.docker,
            SocketRule::NetworkOff => opts.network,
        };
        let is_sock = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket());
        if !is_sock {
            continue;
        }
        let Some(path) = canon(&path) else { continue };
        if keep {
            if !kept.iter().any(|h| h.path == path) {
                kept.push(Hidden { path, what });
            }
            continue;
        }
        if out.iter().any(|h| h.path == path) || folders.iter().any(|f| path.starts_with(&f.path)) {
            continue;
        }
        out.push(Hidden { path, what });
    }
    (out, folders, kept)
}

/// Where the owner's system config files may be (both gits of a machine: the distribution's
/// and one built under `/usr/local`).
const SYSTEM_CONFIGS: &[&str] = &["/etc/gitconfig", "/usr/local/etc/gitconfig"];

/// The programs the repository's and the owner's config (system, global, includes) name by a
/// path — `core.hooksPath` (a folder) and the first word of every program-running key's value
/// (`core.fsmonitor`, `filter.*.clean`, `diff.*.textconv`, `credential.helper`, `!`-aliases,
/// …) when it has a `/`, and every later word naming an existing file (an interpreter in front)
/// — resolved the way git does (`~/`, absolute, else from the work-tree
/// top). A bare name is looked up on `PATH` by git and is not listed. A superset: every value
/// of every file, effective or not.
fn owner_programs(loc: &integrity::Located) -> Result<OwnerPrograms, PlanError> {
    use catalogue::Effect;
    let mut unguarded: Vec<Unguarded> = Vec::new();
    let mut unresolved: Vec<(PathBuf, String, String)> = Vec::new();
    let mut keys: Vec<(PathBuf, String)> = Vec::new();
    let mut top_globs: &'static [&'static str] = &[];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let mut out: Vec<(PathBuf, EntryKind)> = Vec::new();
    let systems: Vec<Option<PathBuf>> = {
        let v: Vec<_> = SYSTEM_CONFIGS
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .map(Some)
            .collect();
        if v.is_empty() {
            vec![None]
        } else {
            v
        }
    };
    let top = loc.work_tree.clone().unwrap_or_else(|| loc.git_dir.clone());
    for system in systems {
        let mut o = crate::config::Options::for_repository(
            loc.work_tree.as_deref(),
            &loc.git_dir,
            &loc.common_dir,
        )
        .with_owner(None, home.as_deref(), xdg.as_deref());
        o.system = system;
        o.linked_worktrees = true;
        let en = crate::config::enumerate(&o).map_err(|e| PlanError::Config {
            path: loc.common_dir.join("config"),
            reason: e.to_string(),
        })?;
        for a in en.armed() {
            let hooks = a.entries.iter().any(|e| {
                matches!(
                    e.key,
                    catalogue::KeyPattern::Key {
                        section: "core",
                        name: "hooksPath"
                    }
                )
            });
            let runs = a
                .entries
                .iter()
                .any(|e| matches!(e.effect, Effect::RunsShell | Effect::RunsProgram));
            if !hooks && !runs {
                continue;
            }
            let text = a.value.text();
            if hooks {
                let path = resolve_word(text.trim(), &top, home.as_deref());
                if let Some(path) = path {
                    if !out.iter().any(|(p, _)| *p == path) {
                        out.push((path, EntryKind::Dir));
                    }
                }
                continue;
            }
            // The program itself (the first word, when it has a `/`), named whether or not it
            // exists: a missing one must not be created.
            let t = text.trim().trim_start_matches('!').trim_start();
            let lexed = words::lex(t);
            if lexed.cut {
                let v = a.value;
                return Err(PlanError::Config {
                    path: v.origin.file.clone(),
                    reason: format!(
                        "{}: a command line nested deeper than the plan reads",
                        v.key()
                    ),
                });
            }
            if let Some(words::Candidate {
                shape: words::Shape::Path(first),
                ..
            }) = lexed.candidates.iter().find(|c| c.cd.is_empty())
            {
                if first.contains('/') {
                    if let Some(path) = resolve_word(first, &top, home.as_deref()) {
                        if !out.iter().any(|(p, _)| *p == path) {
                            out.push((path, EntryKind::File));
                        }
                    }
                }
            }
            // Every path of the work tree the value reaches (R5-2, R6-2, R7-1): the folder of
            // each script it names, in any shape (`words::reach`: the lexer's words and every
            // fragment of the text), so that the modules, requires and sourced files beside the
            // script are the owner's too; a script at the top by itself, and said so.
            let r = words::reach(t, &top);
            // What the value's interpreter searches that no bind can protect: the top itself
            // (`python3 -m x`), a missing `node_modules` or `.npmrc` (R9-1, R9-7, R9-8).
            for s in &r.searched {
                if top_globs.len() < s.module_globs.len() {
                    top_globs = s.module_globs;
                }
                let path = integrity::normalize(&top.join(&s.rel));
                if !unguarded.iter().any(|u| u.path == path) {
                    unguarded.push(Unguarded {
                        path,
                        key: a.value.key(),
                        value: text.to_string(),
                        why: s.why,
                    });
                }
            }
            for x in &r.paths {
                let path = integrity::normalize(&top.join(&x.rel));
                let kind = match x.reach {
                    words::Reach::Folder => EntryKind::Dir,
                    words::Reach::File => {
                        if !unguarded.iter().any(|u| u.path == path) {
                            unguarded.push(Unguarded {
                                path: path.clone(),
                                key: a.value.key(),
                                value: text.to_string(),
                                why: R_TOP_SCRIPT,
                            });
                        }
                        EntryKind::File
                    }
                };
                if !out.iter().any(|(p, _)| *p == path) {
                    keys.push((path.clone(), a.value.key()));
                    out.push((path, kind));
                }
            }
            for w in &r.unresolved {
                unresolved.push((a.value.origin.file.clone(), a.value.key(), w.clone()));
            }
            // `~/x` and absolute words outside the work tree: the owner's own files, named as
            // before (an interpreter's script there).
            for c in &lexed.candidates {
                if let words::Shape::Path(w) = &c.shape {
                    if !(w.starts_with("~/") || Path::new(w).is_absolute()) {
                        continue;
                    }
                    let Some(path) = resolve_word(w, &top, home.as_deref()) else {
                        continue;
                    };
                    if path.starts_with(&top) {
                        continue;
                    }
                    let m = std::fs::symlink_metadata(&path);
                    if m.is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
                        && !out.iter().any(|(p, _)| *p == path)
                    {
                        out.push((path, EntryKind::File));
                    }
                }
            }
        }
    }
    Ok(OwnerPrograms {
        programs: out,
        keys,
        unguarded,
        unresolved,
        top_globs,
    })
}

/// What [`owner_programs`] found.
pub(crate) struct OwnerPrograms {
    /// Paths to protect: a program, a hooks folder, a script's folder.
    pub programs: Vec<(PathBuf, EntryKind)>,
    /// The key whose value reached a script's folder or file (the others are programs and
    /// hooks folders named as such).
    pub keys: Vec<(PathBuf, String)>,
    /// Scripts at the top of the work tree ([`Plan::unguarded`]).
    pub unguarded: Vec<Unguarded>,
    /// (config file, key, word) of each program word built at run time from the work tree
    /// ([`PlanError::Unresolved`]).
    pub unresolved: Vec<(PathBuf, String, String)>,
    /// A value's interpreter searches the top for modules (`!python3 -m black`): the names a
    /// module takes there, which `check` compares (`hop::Hop::globs`); empty otherwise.
    pub top_globs: &'static [&'static str],
}

/// The paths of [`catalogue::PATH_KEYS`] rows the plan protects, from every config file the
/// owner's git reads (every value, effective or not), a relative one from each work tree's
/// top (`tops`; the main work tree's, or the git dir when bare, when there is none).
fn owner_named(
    loc: &integrity::Located,
    tops: &[PathBuf],
) -> Result<Vec<(PathBuf, EntryKind, &'static str)>, PlanError> {
    let o =
        crate::named_paths::owner_options(loc.work_tree.as_deref(), &loc.git_dir, &loc.common_dir);
    let home = o.home.clone();
    let en = crate::config::enumerate(&o).map_err(|e| PlanError::Config {
        path: loc.common_dir.join("config"),
        reason: e.to_string(),
    })?;
    let pairs: Vec<(String, Option<String>)> = en
        .values()
        .iter()
        .map(|v| (v.key(), v.value.as_ref().map(|_| v.text().into_owned())))
        .collect();
    let fallback = [loc.git_dir.clone()];
    let tops = if tops.is_empty() { &fallback[..] } else { tops };
    let mut out: Vec<(PathBuf, EntryKind, &'static str)> = Vec::new();
    for top in tops {
        for n in crate::named_paths::named(
            pairs.iter().map(|(k, v)| (k.as_str(), v.as_deref())),
            top,
            home.as_deref(),
        ) {
            if !n.row.protect || out.iter().any(|(p, _, _)| *p == n.path) {
                continue;
            }
            let kind = if n.row.uses == catalogue::PathUse::Folder {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            out.push((n.path, kind, n.row.why));
        }
    }
    Ok(out)
}

/// A word of a program value as git's shell resolves it: `~/` from the owner's home, an
/// absolute path as it is, anything else from the top of the work tree.
fn resolve_word(word: &str, top: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let path = if let Some(rest) = word.strip_prefix("~/") {
        home?.join(rest)
    } else if Path::new(word).is_absolute() {
        PathBuf::from(word)
    } else {
        top.join(word)
    };
    Some(integrity::normalize(&path))
}

/// The path bubblewrap mounts on for `p`: its parent resolved through links, its last
/// component as it is. `None` when the parent cannot be resolved.
fn mount_target(p: &Path) -> Option<PathBuf> {
    let parent = std::fs::canonicalize(p.parent()?).ok()?;
    Some(parent.join(p.file_name()?))
}

/// The plan from a protected set (pure apart from no-follow `lstat`s through `sys`).
pub(crate) fn build(
    sys: &Sys,
    p: &Protected,
    opts: &PlanOptions,
    hide: &[Hidden],
    programs: &[(PathBuf, EntryKind)],
    named: &[(PathBuf, EntryKind, &'static str)],
) -> Result<Plan, PlanError> {
    let loc = &p.loc;
    // Writable roots.
    let mut writable: Vec<Writable> = Vec::new();
    let mut add_root = |path: &Path, role: &'static str| -> Result<(), PlanError> {
        let path = sys.resolve(path, false).map_err(|e| match e {
            LayoutError::Unreadable { path, .. } if !path.exists() => PlanError::BadRoot {
                path,
                what: "missing",
            },
            e => e.into(),
        })?;
        match sys.stat(&path)? {
            Some(st) if st.is_dir() => {}
            _ => {
                return Err(PlanError::BadRoot {
                    path,
                    what: "not a folder",
                })
            }
        }
        if !writable.iter().any(|w| w.path == path) {
            writable.push(Writable { path, role });
        }
        Ok(())
    };
    if let Some(wt) = &loc.work_tree {
        add_root(wt, "work_tree")?;
    }
    add_root(&loc.common_dir, "common_dir")?;
    if loc.git_dir != loc.common_dir {
        add_root(&loc.git_dir, "git_dir")?;
        // The linked worktree the repository was named by.
        if loc.repo != loc.git_dir {
            add_root(&loc.repo, "work_tree")?;
        }
    }
    if let Some(sd) = &p.session_dir {
        add_root(sd, "session_dir")?;
    }
    for x in &opts.extra_writable {
        add_root(x, "policy")?;
    }
    writable.sort_by(|a, b| depth_then_path(&a.path, &b.path));
    let inside = |path: &Path| writable.iter().any(|w| path.starts_with(&w.path));

    let c = &loc.common_dir;
    let mut ro: Vec<Bind> = Vec::new();
    let mut ph: Vec<Bind> = Vec::new();
    // An entry of the pinned set made read-only (present) or a placeholder (absent).
    let mut protect = |rel: &str, kind: EntryKind, why: &'static str| -> Result<(), PlanError> {
        let path = c.join(rel);
        let node = p.entries.get(rel).unwrap_or(&Node::Absent);
        guard(&path, node, kind, why, &mut ro, &mut ph)
    };
    for f in integrity::GIT_DIR_FILES {
        let why = match *f {
            "config" | "config.worktree" => R_CONFIG,
            "commondir" => R_COMMONDIR,
            _ => R_ALTERNATES,
        };
        // A main git dir's missing `commondir` gets no placeholder: a mount point is a file
        // there, and git dies on an empty `commondir` (`get_common_dir_noenv`), so the
        // placeholder would stop the owner's git. `wt-check check` catches a planted one.
        if *f == "commondir" && matches!(p.entries.get(*f), None | Some(Node::Absent)) {
            continue;
        }
        protect(f, EntryKind::File, why)?;
    }
    for t in integrity::GIT_DIR_TREES {
        let why = match *t {
            "hooks" => R_HOOKS,
            "info" => R_INFO,
            _ => R_REMOTES,
        };
        protect(t, EntryKind::Dir, why)?;
    }
    protect("modules", EntryKind::Dir, R_MODULES)?;
    for (id, wb) in &p.worktrees {
        let base = format!("worktrees/{id}");
        if !wb.own {
            protect(&base, EntryKind::Dir, R_WORKTREE)?;
            continue;
        }
        protect(&format!("{base}/commondir"), EntryKind::File, R_OWN_WT)?;
        protect(
            &format!("{base}/config.worktree"),
            EntryKind::File,
            R_CONFIG,
        )?;
        // The own entry's `modules/` only when it stands (the worktree's submodule git dirs):
        // a placeholder folder there makes git believe the worktree has submodules, and `git
        // worktree remove`/`move` refuse it (`validate_no_submodules`, fifth red-team pass
        // R5-12). A `modules/` made during the turn is the session's own entry, which `wt-check
        // check` audits after the turn like `modules/` of the common dir's walk.
        let own_modules = format!("{base}/modules");
        if !matches!(p.entries.get(&own_modules), None | Some(Node::Absent)) {
            protect(&own_modules, EntryKind::Dir, R_MODULES)?;
        }
        // Names git never writes there (planted before the turn): kept as they are.
        let prefix = format!("{base}/");
        let planted: Vec<String> = p
            .entries
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter(|n| !n.contains('/'))
            .filter(|n| {
                !catalogue::WORKTREE_ADMIN_FILES.contains(n)
                    && !integrity::is_worktree_state_name(n)
                    && *n != "modules"
            })
            .map(|n| format!("{prefix}{n}"))
            .collect();
        for k in planted {
            let kind = if p.entries[&k].is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            protect(&k, kind, R_OWN_WT)?;
        }
    }
    for (path, node) in &p.includes {
        guard(path, node, EntryKind::File, R_INCLUDE, &mut ro, &mut ph)?;
    }
    // Other sessions' worktrees, and other sessions' folders beside the session's own.
    let mut others: Vec<PathBuf> = p
        .worktrees
        .values()
        .filter(|w| !w.own)
        .filter_map(|w| w.path.clone())
        .collect();
    if let Some(parent) = p.session_dir.as_deref().and_then(Path::parent) {
        if let Ok(list) = sys.list(parent) {
            for e in list {
                let path = parent.join(&e.name);
                if Some(path.as_path()) != p.session_dir.as_deref() {
                    others.push(path);
                }
            }
        }
    }
    for o in others {
        match sys.stat(&o)? {
            Some(st) if st.is_dir() => ro.push(Bind {
                path: o,
                kind: EntryKind::Dir,
                protects: R_OTHER_SESSION,
            }),
            _ => {}
        }
    }
    for s in catalogue::SHARED_DISCOVERY_DIRS {
        let dir = Path::new(s);
        if !matches!(sys.stat(dir), Ok(Some(st)) if st.is_dir()) {
            continue;
        }
        let path = dir.join(".git");
        let node = match sys.stat(&path)? {
            None => Node::Absent,
            Some(st) if st.is_dir() => Node::Dir { mode: 0 },
            Some(st) if st.is_file() => Node::File {
                mode: 0,
                oid: String::new(),
                content: integrity::state::Content::Text(String::new()),
            },
            // A link or special file standing there already: nothing to bind (a bind would
            // follow it); the name exists, so it cannot be created, and a sandbox whose base
            // is read-only keeps it as it is.
            Some(_) => continue,
        };
        guard(&path, &node, EntryKind::Dir, R_DISCOVERY, &mut ro, &mut ph)?;
    }
    // Programs the config names by path (and the hooks folder), inside a writable root: the
    // owner's next git runs what the agent wrote there (P-6, P-9).
    for (path, kind) in programs {
        let node = plain_node(sys, path, *kind)?;
        guard(path, &node, *kind, R_PROGRAM, &mut ro, &mut ph)?;
    }
    // Files the config names by path whose content decides trust or where git writes
    // (`catalogue::PATH_KEYS` rows with `protect`): allowed signers, CA files, fsck skip
    // lists, trace2 targets, the template folder. The project's own files those rows leave
    // out (a commit template, `.git-blame-ignore-revs`) stay writable; `wt-check check`
    // reports a FIFO or device there (GW021).
    for (path, kind, why) in named {
        // Outside every writable root the base is read-only already; the owner's own files
        // there (`~/.ssh/allowed_signers` as a dotfile manager's link) are not looked at.
        if !inside(path) {
            continue;
        }
        let node = plain_node(sys, path, *kind)?;
        guard(path, &node, *kind, why, &mut ro, &mut ph)?;
    }
    // A `.git` at the top of a writable root that is not a work tree (the session's folder,
    // the policy's roots): the owner's git started anywhere below it would discover a
    // repository the agent made there (red-team pass on the plan, P-12).
    for w in writable
        .iter()
        .filter(|w| matches!(w.role, "session_dir" | "policy"))
    {
        let path = w.path.join(".git");
        let node = plain_node(sys, &path, EntryKind::Dir)?;
        guard(&path, &node, EntryKind::Dir, R_DISCOVERY, &mut ro, &mut ph)?;
    }
    // Inside writable roots only (the base is read-only already), parents first, and nothing
    // below a bind that already covers it.
    let shared: Vec<PathBuf> = catalogue::SHARED_DISCOVERY_DIRS
        .iter()
        .map(|s| Path::new(s).join(".git"))
        .collect();
    let keep = |b: &Bind| inside(&b.path) || shared.contains(&b.path);
    ro.retain(keep);
    ph.retain(keep);
    // A placeholder whose parent folders are missing covers the topmost missing one instead
    // (an empty read-only folder): a folder the sandbox would create as a mount point's
    // parent is no mount point itself, could be renamed away with the placeholder inside,
    // and could not be anchored (it does not exist yet to be opened).
    for b in ph.iter_mut() {
        let mut top: Option<PathBuf> = None;
        let mut a = b.path.parent();
        while let Some(d) = a {
            if !inside(d) || sys.stat(d)?.is_some() {
                break;
            }
            top = Some(d.to_path_buf());
            a = d.parent();
        }
        if let Some(t) = top {
            b.path = t;
            b.kind = EntryKind::Dir;
        }
    }
    let mut all: Vec<(Bind, bool)> = ro
        .into_iter()
        .map(|b| (b, false))
        .chain(ph.into_iter().map(|b| (b, true)))
        .collect();
    all.sort_by(|a, b| depth_then_path(&a.0.path, &b.0.path));
    let mut kept: Vec<(Bind, bool)> = Vec::new();
    for (b, is_ph) in all {
        if kept.iter().any(|(k, _)| b.path.starts_with(&k.path)) {
            continue;
        }
        kept.push((b, is_ph));
    }
    let (read_only, placeholders): (Vec<_>, Vec<_>) = kept.into_iter().partition(|(_, ph)| !ph);
    let read_only: Vec<Bind> = read_only.into_iter().map(|(b, _)| b).collect();
    let placeholders: Vec<Bind> = placeholders.into_iter().map(|(b, _)| b).collect();
    let anchors = anchors_for(
        &writable,
        read_only
            .iter()
            .chain(placeholders.iter())
            .map(|b| b.path.as_path()),
    );

    // Every pinned entry, with how it is enforced.
    let enforced = |path: &Path, rel: Option<&str>| -> Enforced {
        if let Some(b) = read_only.iter().find(|b| path.starts_with(&b.path)) {
            return Enforced::ReadOnly {
                bind: b.path.clone(),
            };
        }
        if let Some(b) = placeholders.iter().find(|b| path.starts_with(&b.path)) {
            return Enforced::Placeholder {
                bind: b.path.clone(),
            };
        }
        if !inside(path) {
            return Enforced::Base;
        }
        Enforced::AfterTurn {
            reason: after_turn_reason(rel.unwrap_or("")),
        }
    };
    let mut pinned: Vec<Pinned> = p
        .entries
        .iter()
        .map(|(rel, node)| {
            let path = c.join(rel);
            Pinned {
                enforced: enforced(&path, Some(rel)),
                entry: rel.clone(),
                path,
                node: node.kind_name(),
            }
        })
        .collect();
    pinned.extend(p.includes.iter().map(|(path, node)| Pinned {
        entry: path.display().to_string(),
        path: path.clone(),
        node: node.kind_name(),
        enforced: enforced(path, None),
    }));
    Ok(Plan {
        format: FORMAT,
        repo: loc.repo.clone(),
        git_dir: loc.git_dir.clone(),
        common_dir: loc.common_dir.clone(),
        work_tree: loc.work_tree.clone(),
        session: opts.session.clone(),
        session_dir: p.session_dir.clone(),
        writable,
        read_only,
        placeholders,
        anchors,
        hide: hide.to_vec(),
        hide_folders: Vec::new(),
        hide_trees: Vec::new(),
        keep: Vec::new(),
        pinned,
        unix_sockets: UnixSockets::for_options(opts),
        unguarded: Vec::new(),
        landlock: landlock::Landlock::compute(opts.landlock, 0, &[], &[]),
    })
}

/// The anchors (see [`Plan::anchors`]): for every mount target (a read-only bind, a
/// placeholder, a writable root inside another), each folder strictly between it and the
/// innermost writable root strictly containing it. Parents first, no duplicates, none that is
/// a target itself.
fn anchors_for<'a>(
    writable: &'a [Writable],
    binds: impl Iterator<Item = &'a Path>,
) -> Vec<PathBuf> {
    let targets: Vec<&Path> = writable
        .iter()
        .map(|w| w.path.as_path())
        .chain(binds)
        .collect();
    let mut out: Vec<PathBuf> = Vec::new();
    for t in &targets {
        let Some(root) = writable
            .iter()
            .map(|w| w.path.as_path())
            .filter(|w| t.starts_with(w) && w != t)
            .max_by_key(|w| w.components().count())
        else {
            continue;
        };
        let mut a = t.parent();
        while let Some(d) = a {
            if d == root {
                break;
            }
            if !targets.contains(&d) && !out.iter().any(|o| o == d) {
                out.push(d.to_path_buf());
            }
            a = d.parent();
        }
    }
    out.sort_by(|a, b| depth_then_path(a, b));
    out
}

/// Why a pinned entry inside a writable root is left writable during the turn.
fn after_turn_reason(rel: &str) -> &'static str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if integrity::is_head_key(rel) {
        "HEAD: git rewrites it (checkout, commit on a detached HEAD); checked by form after the turn"
    } else if rel == "commondir" {
        "a main git dir's missing commondir: a placeholder would be a file git dies on; checked after the turn, refused by gitward's layout"
    } else if rel.starts_with("worktrees/") && rel.matches('/').count() <= 2 {
        match name {
            "gitdir" | "locked" => "the session's own worktree entry: git worktree move/lock write it; checked after the turn",
            _ if rel.matches('/').count() == 1 => "a worktree entry git itself adds and removes; checked after the turn",
            _ => "the session's own worktree entry; checked after the turn",
        }
    } else if rel == "worktrees" || rel == "objects" || rel == "objects/info" {
        "a folder git writes into (lock files, new entries, commit-graph); its protected entries are bound on their own"
    } else {
        "checked after the turn"
    }
}

/// Record `path` (pinned as `node`) as a read-only bind when present, a placeholder when
/// absent; anything but a file or a folder is refused.
fn guard(
    path: &Path,
    node: &Node,
    kind: EntryKind,
    why: &'static str,
    ro: &mut Vec<Bind>,
    ph: &mut Vec<Bind>,
) -> Result<(), PlanError> {
    let expected = match kind {
        EntryKind::File => "file",
        EntryKind::Dir => "folder",
    };
    let (list, kind) = match node {
        Node::Absent => (ph, kind),
        Node::File { .. } => (ro, EntryKind::File),
        Node::Dir { .. } => (ro, EntryKind::Dir),
        Node::Link { .. } | Node::Special { .. } => {
            return Err(PlanError::NotPlain {
                path: path.to_path_buf(),
                kind: node.kind_name(),
                expected,
            })
        }
    };
    list.push(Bind {
        path: path.to_path_buf(),
        kind,
        protects: why,
    });
    Ok(())
}

fn depth_then_path(a: &Path, b: &Path) -> std::cmp::Ordering {
    let d = |p: &Path| p.components().count();
    d(a).cmp(&d(b)).then_with(|| a.cmp(b))
}

// ---- formats ---------------------------------------------------------------------------

/// One mount of [`Plan::mounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mount<'a> {
    /// A writable root, bound read-write.
    Writable(&'a Path),
    /// A folder bound onto itself read-write, so it cannot be renamed or removed.
    Anchor(&'a Path),
    /// An existing path bound read-only.
    ReadOnly(&'a Bind),
    /// A missing name covered by an empty read-only file or folder.
    Placeholder(&'a Bind),
}

impl Mount<'_> {
    pub fn path(&self) -> &Path {
        match self {
            Mount::Writable(p) | Mount::Anchor(p) => p,
            Mount::ReadOnly(b) | Mount::Placeholder(b) => &b.path,
        }
    }
}

/// The descriptor the `bwrap` format's file placeholders copy their (empty) content from.
pub const BWRAP_EMPTY_FD: i32 = 3;

/// The descriptor the `bwrap` format's `--seccomp` reads the Unix-socket filter from
/// ([`seccomp`]; `wt-check plan --format seccomp` writes it: `4< <(wt-check plan --format
/// seccomp …)`).
pub const BWRAP_SECCOMP_FD: i32 = 4;

impl Plan {
    /// The JSON contract (pretty, one trailing newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a plan serialises");
        s.push('\n');
        s
    }

    /// bubblewrap arguments by path (`--bind`, `--ro-bind`), for an orchestrator that builds
    /// its own sandbox; agent-shell binds from descriptors instead ([`crate::sandbox`]). The
    /// base (`--ro-bind / /`, `--dev`, `--proc`, namespaces) is the orchestrator's.
    /// Placeholders: an empty read-only tmpfs for a folder; for a file an empty read-only
    /// regular file copied from descriptor [`BWRAP_EMPTY_FD`], which the caller opens on
    /// `/dev/null` (`3</dev/null`). Not `--ro-bind /dev/null`: a device on a `nodev` mount
    /// cannot be opened, and git warns on every command that reads it (`alternates`).
    pub fn bwrap_args(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        for t in &self.hide_trees {
            let perms = if t.writable { "1777" } else { "0755" };
            a.extend(["--perms".into(), perms.into(), "--tmpfs".into(), s(&t.path)]);
        }
        for k in &self.keep {
            a.extend(["--ro-bind".into(), s(&k.path), s(&k.path)]);
        }
        for m in self.mounts() {
            match m {
                Mount::Writable(p) | Mount::Anchor(p) => a.extend(["--bind".into(), s(p), s(p)]),
                Mount::ReadOnly(b) => a.extend(["--ro-bind".into(), s(&b.path), s(&b.path)]),
                Mount::Placeholder(b) => match b.kind {
                    EntryKind::File => a.extend([
                        "--ro-bind-data".into(),
                        BWRAP_EMPTY_FD.to_string(),
                        s(&b.path),
                    ]),
                    EntryKind::Dir => a.extend([
                        "--perms".into(),
                        "0555".into(),
                        "--tmpfs".into(),
                        s(&b.path),
                        "--remount-ro".into(),
                        s(&b.path),
                    ]),
                },
            }
        }
        // Read-only once everything below is bound (bubblewrap makes the mount points in the
        // tmpfs while it is still writable).
        for t in self.hide_trees.iter().filter(|t| !t.writable) {
            a.extend(["--remount-ro".into(), s(&t.path)]);
        }
        for h in &self.hide_folders {
            a.extend([
                "--perms".into(),
                "0555".into(),
                "--tmpfs".into(),
                s(&h.path),
                "--remount-ro".into(),
                s(&h.path),
            ]);
        }
        for h in &self.hide {
            a.extend(["--ro-bind".into(), "/dev/null".into(), s(&h.path)]);
        }
        // The socket filter stands whatever the Unix rule (vsock, io_uring, other ABIs).
        a.extend(["--seccomp".into(), BWRAP_SECCOMP_FD.to_string()]);
        a
    }

    /// Every mount a sandbox whose base is read-only (`--ro-bind / /`) makes, in the order it
    /// must make them: parents first, so that a later mount is never hidden by an earlier one
    /// bound over its parent (writable roots, anchors, read-only binds and placeholders
    /// together; [`Plan::mount_binds`] decides which placeholders).
    pub fn mounts(&self) -> Vec<Mount<'_>> {
        let mut v: Vec<Mount<'_>> = self
            .writable
            .iter()
            .map(|w| Mount::Writable(&w.path))
            .chain(self.anchors.iter().map(|a| Mount::Anchor(a)))
            .chain(self.mount_binds().into_iter().map(|(b, ph)| {
                if ph {
                    Mount::Placeholder(b)
                } else {
                    Mount::ReadOnly(b)
                }
            }))
            .collect();
        v.sort_by(|a, b| depth_then_path(a.path(), b.path()));
        v
    }

    /// Is `path` inside a writable root?
    pub fn is_writable(&self, path: &Path) -> bool {
        self.writable.iter().any(|w| path.starts_with(&w.path))
    }

    /// The binds a mount-namespace sandbox whose base is read-only (`--ro-bind / /`) needs:
    /// parents first (`true`: placeholder), without the placeholders outside every writable
    /// root (the base already keeps the name from being created, and a mount point cannot be
    /// made there).
    pub fn mount_binds(&self) -> Vec<(&Bind, bool)> {
        self.binds_in_order()
            .into_iter()
            .filter(|(b, ph)| !ph || self.is_writable(&b.path))
            .collect()
    }

    /// Read-only binds and placeholders together, parents first (`true`: placeholder).
    pub fn binds_in_order(&self) -> Vec<(&Bind, bool)> {
        let mut v: Vec<(&Bind, bool)> = self
            .read_only
            .iter()
            .map(|b| (b, false))
            .chain(self.placeholders.iter().map(|b| (b, true)))
            .collect();
        v.sort_by(|a, b| depth_then_path(&a.0.path, &b.0.path));
        v
    }

    /// A settings fragment for Anthropic's sandbox-runtime (`srt`): `filesystem.allowWrite`
    /// (writable roots), `filesystem.denyWrite` (read-only binds, placeholders — srt denies
    /// the path whether or not it exists — and hidden sockets).
    pub fn srt(&self) -> String {
        let deny: Vec<String> = self
            .binds_in_order()
            .into_iter()
            .map(|(b, _)| b.path.to_string_lossy().into_owned())
            .chain(
                self.hide
                    .iter()
                    .chain(&self.hide_folders)
                    .map(|h| h.path.to_string_lossy().into_owned()),
            )
            .collect();
        let allow: Vec<String> = self
            .writable
            .iter()
            .map(|w| w.path.to_string_lossy().into_owned())
            .collect();
        // srt has no "fresh tmpfs": its own Unix-socket rule (seccomp on Linux, no
        // `allowUnixSockets` by default on macOS) is what keeps the hidden trees' sockets out;
        // the trees are listed so the orchestrator can check that rule is in force.
        let trees: Vec<String> = self
            .hide_trees
            .iter()
            .map(|t| t.path.to_string_lossy().into_owned())
            .collect();
        let v = serde_json::json!({
            "filesystem": { "allowWrite": allow, "denyWrite": deny },
            "network": {
                "allowUnixSockets": [],
                "allowAllUnixSockets": self.unix_sockets.rule == UnixRule::Allow,
            },
            "gitwardHiddenTrees": trees,
        });
        let mut s = serde_json::to_string_pretty(&v).expect("json");
        s.push('\n');
        s
    }

    /// An SBPL fragment for macOS Seatbelt (`sandbox-exec`): writes allowed below each
    /// writable root, denied on each read-only path and placeholder (a later rule wins in
    /// SBPL), connections to hidden sockets denied. Generated and unit-tested; it cannot run
    /// on Linux.
    pub fn seatbelt(&self) -> String {
        let mut s = format!(
            "; gitward sandbox plan (format {FORMAT}): writable roots, then the protected set\n"
        );
        for w in &self.writable {
            let _ = writeln!(s, "(allow file-write* (subpath {}))", sbpl_str(&w.path));
        }
        for (b, _) in self.binds_in_order() {
            let filter = match b.kind {
                EntryKind::Dir => "subpath",
                EntryKind::File => "literal",
            };
            let _ = writeln!(s, "(deny file-write* ({filter} {}))", sbpl_str(&b.path));
        }
        // Every socket below a hidden tree is denied, then those the plan shows again
        // (writable roots, kept sockets), then the hidden sockets and folders again (a later
        // rule wins).
        for t in &self.hide_trees {
            let _ = writeln!(
                s,
                "(deny network-outbound (remote unix-socket (subpath {})))",
                sbpl_str(&t.path)
            );
        }
        for w in self
            .writable
            .iter()
            .filter(|w| self.hide_trees.iter().any(|t| w.path.starts_with(&t.path)))
        {
            let _ = writeln!(
                s,
                "(allow network-outbound (remote unix-socket (subpath {})))",
                sbpl_str(&w.path)
            );
        }
        for k in &self.keep {
            let _ = writeln!(
                s,
                "(allow network-outbound (remote unix-socket (path-literal {})))",
                sbpl_str(&k.path)
            );
        }
        for h in &self.hide {
            let _ = writeln!(
                s,
                "(deny network-outbound (remote unix-socket (path-literal {})))",
                sbpl_str(&h.path)
            );
        }
        for h in &self.hide_folders {
            let _ = writeln!(
                s,
                "(deny network-outbound (remote unix-socket (subpath {})))",
                sbpl_str(&h.path)
            );
        }
        // Last, so it wins over every allow above: no outbound Unix socket at all, wherever
        // it lies ($HOME, /var/lib, /srv), unless the policy allows them.
        if self.unix_sockets.rule == UnixRule::Deny {
            s.push_str("(deny network-outbound (remote unix-socket))\n");
        }
        s
    }
}

/// An SBPL string literal: `"` and `\` escaped; other bytes as they are (paths are UTF-8 on
/// macOS).
fn sbpl_str(p: &Path) -> String {
    let mut out = String::from("\"");
    for ch in p.to_string_lossy().chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;

pub mod hop;

// ---- the `wt-check plan` subcommand ------------------------------------------------------

/// `wt-check plan --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    /// The JSON contract (docs/sandbox-plan.md).
    Json,
    /// bubblewrap arguments, one per line.
    Bwrap,
    /// A settings fragment for Anthropic's sandbox-runtime.
    Srt,
    /// An SBPL fragment for macOS Seatbelt.
    Seatbelt,
    /// The Unix-socket filter (classic BPF, `struct sock_filter[]`) for bubblewrap's
    /// `--seccomp`; nothing when the plan allows Unix sockets.
    Seccomp,
}

/// What `wt-check plan` was given.
#[derive(Debug, Clone)]
pub struct ToolArgs {
    pub repo: PathBuf,
    pub session: Option<String>,
    pub worktree_dir: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub network: bool,
    pub format: PlanFormat,
}

/// The plan's options from the command line and, when given, the session's policy (its
/// session name, worktree folder, writable roots and Docker switch; the command line wins).
pub fn options_from(args: &ToolArgs) -> Result<PlanOptions, String> {
    let mut o = PlanOptions {
        repo: args.repo.clone(),
        session: args.session.clone(),
        session_dir: args.worktree_dir.clone(),
        network: args.network,
        ..PlanOptions::default()
    };
    if let Some(f) = &args.policy {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let p = crate::policy::Policy::load(f, &home).map_err(|e| e.to_string())?;
        if o.session.is_none() {
            o.session = Some(p.session.clone());
        }
        if o.session_dir.is_none() {
            o.session_dir = Some(p.worktree_dir.clone());
        }
        o.extra_writable = policy_writable(&p);
        o.read_back = vec![crate::shell::shim_dir(&p), p.file.clone()];
        o.docker = p.docker.enabled;
        o.unix_sockets = p.unix_sockets == crate::policy::UnixSocketsRule::Allow;
        o.allow_unresolved = p.allow_unresolved_programs;
        o.landlock = p.landlock;
    }
    Ok(o)
}

/// A policy's extra writable folders: its worktree roots and writable roots that exist (the
/// repository and the session's folder are planned on their own).
pub fn policy_writable(p: &crate::policy::Policy) -> Vec<PathBuf> {
    p.worktree_roots
        .iter()
        .chain(&p.writable_roots)
        .filter(|r| **r != p.repo && **r != p.worktree_dir && r.is_dir())
        .cloned()
        .collect()
}

/// Run `wt-check plan`: the plan on stdout, or one line on stderr and exit 2.
pub fn run_tool(args: &ToolArgs) -> crate::exit::Code {
    let fail = |msg: String| {
        eprintln!("wt-check: plan: {msg}");
        crate::exit::INCOMPLETE
    };
    let opts = match options_from(args) {
        Ok(o) => o,
        Err(e) => return fail(e),
    };
    let plan = match plan(&opts) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    let out = match args.format {
        PlanFormat::Seccomp => {
            let bytes =
                match seccomp::native_filter_bytes(plan.unix_sockets.rule == UnixRule::Allow) {
                    Some(b) => b,
                    None => {
                        return fail(format!(
                            "{}: no socket filter for this architecture (x86_64, aarch64 only)",
                            std::env::consts::ARCH
                        ))
                    }
                };
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            return match out.write_all(&bytes).and_then(|()| out.flush()) {
                Ok(()) => crate::exit::CLEAN,
                Err(e) => {
                    eprintln!("wt-check: cannot write to standard output: {e}");
                    crate::exit::INCOMPLETE
                }
            };
        }
        PlanFormat::Json => plan.to_json(),
        PlanFormat::Srt => plan.srt(),
        PlanFormat::Seatbelt => plan.seatbelt(),
        PlanFormat::Bwrap => {
            let a = plan.bwrap_args();
            if let Some(bad) = a.iter().find(|s| s.contains('\n')) {
                return fail(format!(
                    "{bad}: a path with a newline cannot be listed one per line"
                ));
            }
            let mut s = a.join("\n");
            s.push('\n');
            s
        }
    };
    match crate::cli::print("wt-check", &out, crate::exit::INCOMPLETE) {
        Ok(()) => crate::exit::CLEAN,
        Err(code) => code,
    }
}
