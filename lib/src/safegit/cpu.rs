//! The CPU-time bound of a safe-git run (red team R17-3).
//!
//! A tracked file grown to a huge *sparse* file whose size modulo 2³² equals its index
//! entry's makes `git status` re-hash it: reading the holes is CPU time (user + system) for
//! hours, and a host-side script calling safe-git hangs with it. safe-git execs git (same
//! pid, git's own exit status), so it cannot wait with a timer without becoming a parent.
//! Instead it sets `RLIMIT_CPU` on its own process, once, before it reads anything of the
//! repository: the limit survives `execve` (git runs under it, and so do the processes git
//! starts: each inherits the limit with a budget of its own) and bounds safe-git's own
//! reading too (`plan`'s config and index reads, `would-lose-work`'s hashing of every
//! tracked file and the gits it runs as children). Setting it on the process rather than in
//! each child (`pre_exec`) keeps std's `posix_spawn` path, needs no code between `fork` and
//! `exec`, and covers what safe-git reads itself.
//!
//! At the soft limit the kernel sends `SIGXCPU` (default action: the process ends; a shell
//! shows status 152 = 128 + 24); at the hard limit — [`GRACE`] seconds later, for a process
//! that ignores `SIGXCPU` — `SIGKILL`. A limit the caller already set lower (soft or hard)
//! is kept: the limits set are the minimum of the asked one and the inherited ones, so
//! safe-git never raises either (a privileged caller could otherwise raise its hard limit).

use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};

/// The default bound, in CPU seconds: ten minutes. No honest run of an allowed subcommand on
/// the repositories measured comes near it (docs/safe-git.md, "CPU bound": on git.git,
/// `status` 0.015 s, `would-lose-work` 0.13 s, `log -p` of its whole history 30 s); a run
/// that needs more is given `--cpu-limit 0` or a larger value.
pub const DEFAULT_CPU_LIMIT: u64 = 600;

/// Seconds between the soft limit (`SIGXCPU`) and the hard one (`SIGKILL`): the kernel's
/// check sends `SIGKILL` first when both are reached at once, so the hard limit is set above
/// the soft one for `SIGXCPU` — what git dies of, and what the documentation promises — to
/// come first.
pub const GRACE: u64 = 5;

/// The environment variable that gives the bound when `--cpu-limit` does not.
pub const ENV: &str = "SAFE_GIT_CPU_LIMIT";

/// `RLIMIT_CPU` as a (soft, hard) pair of seconds; [`RLIM_INFINITY`] for none.
pub type Limits = (u64, u64);

/// What applies to a run: asked for, inherited, and set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Seconds asked for (`--cpu-limit`, `SAFE_GIT_CPU_LIMIT`, else [`DEFAULT_CPU_LIMIT`]);
    /// 0 = no bound of safe-git's own.
    pub asked: u64,
    /// Whether `asked` is the default (neither the option nor the variable was given).
    pub default: bool,
    /// The limits the process had when safe-git started.
    pub inherited: Limits,
    /// The limits git runs under.
    pub set: Limits,
}

/// The limits for `asked` seconds (0 = none) under `inherited`: never above an inherited
/// one, the hard limit [`GRACE`] seconds above the soft one where the inherited hard limit
/// leaves room.
pub fn limits_for(asked: u64, inherited: Limits) -> Limits {
    let (soft, hard) = inherited;
    if asked == 0 {
        return inherited;
    }
    let hard = hard.min(asked.saturating_add(GRACE));
    let soft = soft.min(asked).min(hard);
    (soft, hard)
}

/// Set the bound on this process (two system calls: `getrlimit`, and `setrlimit` when the
/// limits change). `asked` is `None` when neither `--cpu-limit` nor [`ENV`] was given.
pub fn apply(asked: Option<u64>) -> Result<Bound, String> {
    let (asked, default) = match asked {
        Some(s) => (s, false),
        None => (DEFAULT_CPU_LIMIT, true),
    };
    let inherited =
        getrlimit(Resource::RLIMIT_CPU).map_err(|e| format!("cannot read RLIMIT_CPU: {e}"))?;
    let set = limits_for(asked, inherited);
    if set != inherited {
        setrlimit(Resource::RLIMIT_CPU, set.0, set.1)
            .map_err(|e| format!("cannot set RLIMIT_CPU to {set:?}: {e}"))?;
    }
    if set.0 != RLIM_INFINITY {
        no_core_files()?;
    }
    Ok(Bound {
        asked,
        default,
        inherited,
        set,
    })
}

/// No core file from a process the bound ends: `SIGXCPU`'s default action writes one, in the
/// folder git runs in — the agent's work tree — with the host script's environment in it.
/// The soft `RLIMIT_CORE` is set to 0 (the hard one is left: nothing is raised or lowered
/// for good), whenever a CPU bound applies.
fn no_core_files() -> Result<(), String> {
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_CORE).map_err(|e| format!("cannot read RLIMIT_CORE: {e}"))?;
    if soft != 0 {
        setrlimit(Resource::RLIMIT_CORE, 0, hard)
            .map_err(|e| format!("cannot set RLIMIT_CORE to 0: {e}"))?;
    }
    Ok(())
}

/// `600 s` or `none`.
pub fn seconds(v: u64) -> String {
    if v == RLIM_INFINITY {
        "none".to_owned()
    } else {
        format!("{v} s")
    }
}

impl Bound {
    /// One line for `--explain` and messages.
    pub fn describe(&self) -> String {
        let from = if self.default {
            format!("the default {DEFAULT_CPU_LIMIT} s")
        } else if self.asked == 0 {
            "none asked (--cpu-limit 0)".to_owned()
        } else {
            format!("{} s asked", self.asked)
        };
        let inherited = format!(
            "inherited soft {} / hard {}",
            seconds(self.inherited.0),
            seconds(self.inherited.1)
        );
        match self.set {
            (RLIM_INFINITY, RLIM_INFINITY) => format!("none; {from}, {inherited}"),
            (soft, hard) => format!(
                "{} CPU (then SIGXCPU, status 152), SIGKILL at {}; {from}, {inherited}",
                seconds(soft),
                seconds(hard),
            ),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let n = |v: u64| {
            if v == RLIM_INFINITY {
                serde_json::Value::Null
            } else {
                v.into()
            }
        };
        serde_json::json!({
            "asked": self.asked,
            "default": self.default,
            "inherited_soft": n(self.inherited.0),
            "inherited_hard": n(self.inherited.1),
            "soft": n(self.set.0),
            "hard": n(self.set.1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const INF: u64 = RLIM_INFINITY;

    #[test]
    fn asked_under_no_inherited_limit() {
        assert_eq!(limits_for(600, (INF, INF)), (600, 605));
        assert_eq!(limits_for(1, (INF, INF)), (1, 6));
    }

    /// A lower inherited limit, soft or hard, is never raised.
    #[test]
    fn a_lower_inherited_limit_is_kept() {
        assert_eq!(limits_for(600, (30, INF)), (30, 605));
        assert_eq!(limits_for(600, (30, 40)), (30, 40));
        assert_eq!(limits_for(600, (INF, 100)), (100, 100));
        assert_eq!(limits_for(600, (700, 800)), (600, 605));
        // Positive control: the asked value alone would raise these.
        assert_ne!((600, 605), (30, 40));
    }

    #[test]
    fn zero_keeps_what_is_inherited() {
        assert_eq!(limits_for(0, (INF, INF)), (INF, INF));
        assert_eq!(limits_for(0, (30, 40)), (30, 40));
    }

    #[test]
    fn no_overflow_near_the_top() {
        assert_eq!(limits_for(u64::MAX - 1, (INF, INF)), (u64::MAX - 1, INF));
        assert_eq!(limits_for(INF, (INF, INF)), (INF, INF));
    }

    #[test]
    fn describe_names_every_part() {
        let b = Bound {
            asked: DEFAULT_CPU_LIMIT,
            default: true,
            inherited: (INF, INF),
            set: (600, 605),
        };
        let d = b.describe();
        assert!(d.starts_with("600 s CPU (then SIGXCPU"), "{d}");
        assert!(d.contains("SIGKILL at 605 s"), "{d}");
        assert!(d.contains("the default 600 s"), "{d}");
        assert!(d.contains("inherited soft none / hard none"), "{d}");
        assert_eq!(b.to_json()["soft"], 600);
        assert!(b.to_json()["inherited_hard"].is_null());
        let none = Bound {
            asked: 0,
            default: false,
            inherited: (INF, INF),
            set: (INF, INF),
        };
        assert!(
            none.describe().starts_with("none; none asked"),
            "{}",
            none.describe()
        );
    }
}
