//! The special-file rule of the plan ([`Plan::landlock`](super::Plan::landlock)): where the
//! sandboxed command may make a FIFO, and the Landlock ruleset that enforces it.
//!
//! # Why
//!
//! git opens many files by name with a blocking `open(2)`: `.gitattributes` and `.gitignore`
//! in every folder it walks, `.mailmap`, `info/exclude`, `index`, `packed-refs`, a loose ref,
//! the files of a worktree entry, paths the owner's config names. A FIFO there (or a link to
//! one) hangs the owner's git until someone writes to it (red-team rows R6-4, R7-4, R8-3,
//! R9-5, R9-13). `wt-check check` finds such FIFOs after the turn (GW021) and safe-git refuses
//! the ones it can see without walking the work tree; the FIFO in a subfolder under
//! `safe-git status` (R9-5) only the sandbox can stop, by never letting the agent make it.
//!
//! # The rule
//!
//! Landlock rules allow an access beneath a folder; what no rule allows is denied. The
//! ruleset handles `MAKE_FIFO`, `MAKE_CHAR`, `MAKE_BLOCK` and `REFER`:
//!
//! - `MAKE_FIFO` is allowed beneath each *private* writable tree of the sandbox (the fresh
//!   tmpfs over `/tmp`, `/var/tmp`, `/dev/shm`, [`super::Plan::hide_trees`]) that holds no
//!   writable root of the plan — and nowhere else: not in a work tree, git dir, common dir,
//!   worktree entry or the session's worktree folder, and not in a policy root either. A FIFO
//!   in a host folder outlives the turn, and a link the agent plants at a name git follows
//!   (`.git/index`, `packed-refs`, a loose ref) would reach it from the owner's git; a FIFO on
//!   a private tmpfs is gone with the sandbox, and the host's `/tmp` never held it.
//! - When a writable root lies inside such a tree (a repository under `/tmp`), the tree gets
//!   no rule: Landlock cannot carve a denied folder out of an allowed one (rules add up along
//!   the path), so FIFOs are denied in all of it ([`Landlock::withheld`]). GNU make ≥ 4.4
//!   then says `jobserver mkfifo: …: Permission denied` once and falls back to a pipe.
//! - `MAKE_CHAR`/`MAKE_BLOCK` are allowed nowhere (no capability makes a device node in the
//!   sandbox anyway; the rule keeps it so whatever the capabilities).
//! - `REFER` is allowed beneath `/`: a ruleset that does not handle it denies every rename
//!   across folders (Landlock's default), which breaks ordinary tools. Handled and allowed,
//!   Landlock still refuses a move that would give a file an access its new place denies: a
//!   FIFO moved or linked from the private `/tmp` into the work tree fails (`EACCES`), a
//!   folder holding one fails (`EXDEV`) — and the allowed trees are mounts of their own, so
//!   nothing crosses from them into a denied tree anyway (`EXDEV` across mounts).
//! - `MAKE_SOCK` is not handled: a socket file at a name git opens fails at once (`ENXIO`),
//!   it cannot hang git; honest test suites bind Unix sockets below their work tree (when
//!   the policy allows Unix sockets at all), and `wt-check check` reports one where git
//!   opens a file by name (GW021).
//!
//! Landlock ABI 2 (Linux 5.19) is the least the rule needs: ABI 1 cannot handle `REFER`, so
//! every cross-folder rename would fail. A kernel without it: the policy's `landlock` says
//! whether agent-shell refuses to start the sandbox (`required`, the default) or runs it
//! without the rule and says so (`optional`); `off` never applies it
//! ([`Landlock::decision`]).

use super::{HiddenTree, Writable};
use serde::Serialize;
use std::path::PathBuf;

/// The least Landlock ABI the rule needs (`REFER` came with ABI 2).
pub const MIN_ABI: u32 = 2;

/// `LANDLOCK_ACCESS_FS_*` bits (include/uapi/linux/landlock.h) the rule uses.
pub const ACCESS_FS_MAKE_CHAR: u64 = 1 << 6;
pub const ACCESS_FS_MAKE_FIFO: u64 = 1 << 10;
pub const ACCESS_FS_MAKE_BLOCK: u64 = 1 << 11;
pub const ACCESS_FS_REFER: u64 = 1 << 13;

/// A filesystem access the ruleset handles, by the kernel's name (lower case, no prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    MakeChar,
    MakeFifo,
    MakeBlock,
    Refer,
}

impl Access {
    /// The `LANDLOCK_ACCESS_FS_*` bit.
    pub fn bit(self) -> u64 {
        match self {
            Access::MakeChar => ACCESS_FS_MAKE_CHAR,
            Access::MakeFifo => ACCESS_FS_MAKE_FIFO,
            Access::MakeBlock => ACCESS_FS_MAKE_BLOCK,
            Access::Refer => ACCESS_FS_REFER,
        }
    }
}

/// The bits of a set of accesses.
pub fn bits(access: &[Access]) -> u64 {
    access.iter().fold(0, |b, a| b | a.bit())
}

/// What the ruleset handles: everything it does not allow somewhere is denied.
pub const HANDLED: &[Access] = &[
    Access::MakeChar,
    Access::MakeFifo,
    Access::MakeBlock,
    Access::Refer,
];

/// The policy's `landlock` key: what agent-shell does with the rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Apply the ruleset; a kernel without Landlock ABI 2 refuses the sandbox (exit 124).
    #[default]
    Required,
    /// Apply it when the kernel can; else run without it, saying so on stderr.
    Optional,
    /// Never apply it (FIFOs can be made anywhere the sandbox can write).
    Off,
}

/// One rule: `access` allowed beneath `path` (a folder inside the sandbox).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Beneath {
    pub path: PathBuf,
    pub access: Vec<Access>,
    pub why: &'static str,
}

/// A private tree that gets no FIFO rule, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withheld {
    pub path: PathBuf,
    /// The writable root inside (or around) it.
    pub root: PathBuf,
    pub why: &'static str,
}

/// The special-file rule of a plan (JSON: `landlock`, format 4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Landlock {
    /// The policy's `landlock` value.
    pub policy: Policy,
    /// The Landlock ABI of the kernel the plan was made on; 0: none.
    pub abi: u32,
    /// The least ABI the rule needs ([`MIN_ABI`]).
    pub min_abi: u32,
    /// Accesses the ruleset handles: denied wherever no rule below allows them.
    pub handled: Vec<Access>,
    /// The rules, parents first.
    pub beneath: Vec<Beneath>,
    /// Private trees left without a FIFO rule because a writable root lies in them.
    pub withheld: Vec<Withheld>,
}

/// What agent-shell does with the rule on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Apply the ruleset inside the sandbox before the command runs.
    Apply,
    /// No sandbox: the kernel cannot, and the policy requires it.
    Refuse,
    /// Run without the ruleset: the policy says `off`, or `optional` on a kernel that cannot.
    Skip,
}

const WHY_REFER: &str = "renames and links across folders (a ruleset that does not handle REFER denies them all); Landlock still refuses a move that would give a file an access its new place denies";
const WHY_PRIVATE: &str = "a private tmpfs of the sandbox: a FIFO made here is gone with the sandbox, the host never sees it (GNU make's jobserver, mkfifo in tests)";
const WHY_HOLDS_ROOT: &str = "a writable root of the plan lies in this tree, and Landlock cannot deny beneath an allowed folder: FIFOs are denied in all of it";

impl Landlock {
    /// The rule for a plan's writable roots and hidden trees on a kernel of `abi`.
    pub fn compute(
        policy: Policy,
        abi: u32,
        writable: &[Writable],
        trees: &[HiddenTree],
    ) -> Landlock {
        let mut beneath = vec![Beneath {
            path: PathBuf::from("/"),
            access: vec![Access::Refer],
            why: WHY_REFER,
        }];
        let mut withheld = Vec::new();
        for t in trees.iter().filter(|t| t.writable) {
            let holds = writable
                .iter()
                .find(|w| w.path.starts_with(&t.path) || t.path.starts_with(&w.path));
            match holds {
                Some(w) => withheld.push(Withheld {
                    path: t.path.clone(),
                    root: w.path.clone(),
                    why: WHY_HOLDS_ROOT,
                }),
                None => beneath.push(Beneath {
                    path: t.path.clone(),
                    access: vec![Access::MakeFifo, Access::Refer],
                    why: WHY_PRIVATE,
                }),
            }
        }
        Landlock {
            policy,
            abi,
            min_abi: MIN_ABI,
            handled: HANDLED.to_vec(),
            beneath,
            withheld,
        }
    }

    /// What agent-shell does: apply, refuse, or run without the ruleset.
    pub fn decision(&self) -> Decision {
        match (self.policy, self.abi >= MIN_ABI) {
            (Policy::Off, _) => Decision::Skip,
            (_, true) => Decision::Apply,
            (Policy::Required, false) => Decision::Refuse,
            (Policy::Optional, false) => Decision::Skip,
        }
    }

    /// The handled bits.
    pub fn handled_bits(&self) -> u64 {
        bits(&self.handled)
    }

    /// May a FIFO be made at `path` (absolute, inside the sandbox) under this rule?
    pub fn allows_fifo(&self, path: &std::path::Path) -> bool {
        self.beneath
            .iter()
            .any(|b| b.access.contains(&Access::MakeFifo) && path.starts_with(&b.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn root(p: &str, role: &'static str) -> Writable {
        Writable {
            path: PathBuf::from(p),
            role,
        }
    }

    fn trees() -> Vec<HiddenTree> {
        let t = |p: &str, writable| HiddenTree {
            path: PathBuf::from(p),
            writable,
            what: "t",
        };
        vec![
            t("/dev/shm", true),
            t("/run", false),
            t("/tmp", true),
            t("/var/tmp", true),
        ]
    }

    /// A repository in the owner's home: FIFOs only on the private tmpfs trees, never in a
    /// writable root (work tree, common dir, session folder, policy root), REFER everywhere.
    #[test]
    fn fifos_only_on_private_trees_that_hold_no_writable_root() {
        let w = [
            root("/home/u/src/proj", "work_tree"),
            root("/home/u/src/proj/.git", "common_dir"),
            root("/home/u/src/proj-worktrees/s1", "session_dir"),
            root("/home/u/.cache", "policy"),
        ];
        let l = Landlock::compute(Policy::Required, 7, &w, &trees());
        assert_eq!(
            l.handled_bits(),
            (1 << 6) | (1 << 10) | (1 << 11) | (1 << 13)
        );
        let paths: Vec<&Path> = l.beneath.iter().map(|b| b.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                Path::new("/"),
                Path::new("/dev/shm"),
                Path::new("/tmp"),
                Path::new("/var/tmp")
            ]
        );
        assert_eq!(l.beneath[0].access, [Access::Refer]);
        assert!(l.withheld.is_empty());
        for p in ["/tmp/GMfifo12", "/tmp/x/y", "/dev/shm/f", "/var/tmp/f"] {
            assert!(l.allows_fifo(Path::new(p)), "{p}");
        }
        for p in [
            "/home/u/src/proj/d/.gitattributes",
            "/home/u/src/proj/.git/index",
            "/home/u/src/proj/.git/worktrees/feat/HEAD",
            "/home/u/src/proj-worktrees/s1/feat/.gitignore",
            "/home/u/.cache/f",
            "/home/u/f",
            "/run/f",
            "/tmpx/f",
        ] {
            assert!(!l.allows_fifo(Path::new(p)), "{p}");
        }
        // Devices are allowed nowhere.
        assert!(l.beneath.iter().all(
            |b| !b.access.contains(&Access::MakeChar) && !b.access.contains(&Access::MakeBlock)
        ));
        assert_eq!(l.decision(), Decision::Apply);
    }

    /// A work tree under /tmp: /tmp gets no FIFO rule at all (Landlock cannot deny below an
    /// allowed folder); the other private trees keep theirs. A policy root that contains a
    /// private tree (`/var`) withholds it too: the root's bind covers the tmpfs.
    #[test]
    fn a_tree_that_holds_a_writable_root_is_withheld_whole() {
        let w = [
            root("/tmp/t1/proj", "work_tree"),
            root("/tmp/t1/proj/.git", "common_dir"),
            root("/var", "policy"),
        ];
        let l = Landlock::compute(Policy::Required, 7, &w, &trees());
        let withheld: Vec<&Path> = l.withheld.iter().map(|x| x.path.as_path()).collect();
        assert_eq!(withheld, [Path::new("/tmp"), Path::new("/var/tmp")]);
        assert_eq!(l.withheld[0].root, Path::new("/tmp/t1/proj"));
        assert!(!l.allows_fifo(Path::new("/tmp/GMfifo1")));
        assert!(!l.allows_fifo(Path::new("/tmp/t1/proj/d/.gitattributes")));
        assert!(l.allows_fifo(Path::new("/dev/shm/f")));
    }

    #[test]
    fn the_decision_follows_the_policy_and_the_kernel() {
        let l = |policy, abi| Landlock::compute(policy, abi, &[], &trees()).decision();
        assert_eq!(l(Policy::Required, 7), Decision::Apply);
        assert_eq!(l(Policy::Required, 2), Decision::Apply);
        // ABI 1 cannot handle REFER: every cross-folder rename would fail.
        assert_eq!(l(Policy::Required, 1), Decision::Refuse);
        assert_eq!(l(Policy::Required, 0), Decision::Refuse);
        assert_eq!(l(Policy::Optional, 0), Decision::Skip);
        assert_eq!(l(Policy::Optional, 7), Decision::Apply);
        assert_eq!(l(Policy::Off, 7), Decision::Skip);
    }

    #[test]
    fn the_json_names_the_kernels_accesses() {
        let l = Landlock::compute(Policy::Required, 7, &[], &trees());
        let j = serde_json::to_value(&l).unwrap();
        assert_eq!(j["policy"], "required");
        assert_eq!(j["abi"], 7);
        assert_eq!(j["min_abi"], 2);
        assert_eq!(
            j["handled"],
            serde_json::json!(["make_char", "make_fifo", "make_block", "refer"])
        );
        assert_eq!(j["beneath"][1]["path"], "/dev/shm");
        assert_eq!(
            j["beneath"][1]["access"],
            serde_json::json!(["make_fifo", "refer"])
        );
    }
}
