//! The agent's git: the session's rules on worktrees and persistent config writes, checked
//! against the effective repository, then the real git `exec`'d with the defused environment.
//!
//! `git-shim` is installed as `git` first on the agent's `PATH` ([`install`]). Each call:
//!
//! 1. loads the policy (the file pinned beside the shim by `--install --policy`, else
//!    `GITWARD_POLICY`); no policy → exit 124, never a silent pass-through;
//! 2. finds the real git (the policy's `real_git`, else the first `git` on `PATH` after this
//!    binary's own entry, compared by device and inode: a `git` before it may be a wrapper
//!    that runs the shim again) and its version (cached in the state dir);
//!    a shim started as git by another copy of the shim found that way stops first
//!    ([`EXEC_MARKER`], exit 124);
//! 3. reads the command line like `git.c` ([`argv`]) and applies [`rules`];
//! 4. refused → one line on stderr, a `git_refused` event, exit 121; allowed → a `git_allowed`
//!    event (one `O_APPEND` write) and `exec` of git, so the pid, exit status, signals and
//!    terminal are git's own. `worktree remove|move|prune` run git as a child instead, so the
//!    session's worktree folder can be removed once its last worktree is gone.
//!
//! The hot path (`status`, `rev-parse`, `commit`, …) reads the policy and one small cache file,
//! and starts no other process. Worktree commands and words that may be aliases ask the real
//! git (`rev-parse`, `config --get alias.<word>`) first.
//!
//! This is a policy and clear-message layer, not a boundary: an agent that runs the real git
//! by its absolute path skips it, and there the OS sandbox (read-only hooks and config) holds.

pub mod argv;
pub mod packed;
pub mod rules;

use crate::env::{
    find_real_git, find_real_git_with_metadata, read_small, DefuseOptions, Defused, GitError,
    GitProbe,
};
use crate::events::{append_line, Event, EventKind, Tool};
use crate::exit;
use crate::policy::{Policy, PolicyError};
use argv::{env_config, Invocation};
use gix::bstr::BString;
use rules::{Effective, Plan, Refusal, Repository, Rules};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variable agent-shell sets to the policy file.
pub const POLICY_ENV: &str = "GITWARD_POLICY";
/// The file beside an installed shim that pins its policy (one absolute path).
pub const PINNED_POLICY: &str = "git-shim.policy";
/// The variable a shim that found git on `PATH` sets for the git it runs: `<pid>:<path>` for
/// the program it `exec`s (its own process id, which `execve` keeps, and its own path), and
/// `^<pid>:<path>` for a git it starts as a child (a `worktree remove`, a question to git). A
/// shim that starts with this variable naming its own process (or, after `^`, its parent) was
/// run as "git" by another shim — a second copy of git-shim (a copy, not a link, so not
/// recognised by device and inode) on `PATH` before the real git — and stops
/// ([`ShimError::ExecdByShim`], exit 124) instead of looping or running under the other's
/// policy. Any other value (git's children, hooks and aliases calling `git` again run in other
/// processes) is ignored, and dropped from what git gets; the real git sees the value set for
/// it and passes it on to its children (harmless: their pids and parents differ).
///
/// The pid carries the nesting depth, `<pid>/<depth>:<path>`: the number of shims that found
/// git on `PATH` in the process's ancestry (one more than the marker the shim inherited). A
/// shim started at [`MAX_NESTED`] stops ([`ShimError::Nested`], exit 124): a git on `PATH`
/// that runs git again as a child (a wrapper after the shim that runs "the first git on PATH
/// other than itself") would otherwise make shim -> wrapper -> shim -> … one process per level
/// without end (rt30 W3). The depth is the agent's to set, like the rest of the variable: it
/// can only make its own calls stop.
pub const EXEC_MARKER: &str = "GITWARD_SHIM_EXEC";

/// The nesting depth at which a shim that finds git on `PATH` stops (see [`EXEC_MARKER`]):
/// honest nesting (a hook, `rebase -x`, a `pre-commit` hook running `git` again, each through
/// the shim) is a few levels; a loop reaches it after this many shims, sequentially.
pub const MAX_NESTED: u32 = 16;

/// The depth the inherited [`EXEC_MARKER`] carried (0 without one), read by
/// [`execd_by_a_shim`]; the markers this shim sets carry one more.
static INHERITED_DEPTH: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Why the shim cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    #[error("no policy: {POLICY_ENV} is not set and no {PINNED_POLICY} is pinned beside the shim; start the agent through agent-shell or install the shim with --policy")]
    NoPolicy,
    #[error("{path}: cannot read the pinned policy path: {source}")]
    Pinned {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Policy(#[from] PolicyError),
    #[error("{0}")]
    Git(#[from] GitError),
    #[error("{me}: started as the real git by the git-shim {by} (it found this copy first on PATH and ran it): two copies of git-shim are on PATH before the real git; set real_git in the policy to the real git's absolute path")]
    ExecdByShim { me: PathBuf, by: String },
    #[error("{me}: started inside {depth} nested git-shims, each run by a git the one before ran (the last: {by}): a git on PATH runs git again without end (a wrapper that runs the first git on PATH other than itself?); set real_git in the policy to the real git's absolute path")]
    Nested { me: PathBuf, depth: u32, by: String },
    #[error("{path}: cannot start git: {source}")]
    Exec {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
}

/// Inherited variables the shim passes to git although the defused set would drop them: the
/// agent's own, explicit choices of repository and config files. They change which repository
/// a call works on, never what runs, and every rule is checked against the repository git
/// resolves with them.
const KEEP: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
];

/// Where the policy comes from: the file, and for a pinned policy the cache of its validated
/// form beside the pin and the owner's home folder recorded by `--install`.
pub struct PolicySource {
    pub file: PathBuf,
    pub cache: Option<PathBuf>,
    /// The home folder `~/` means in the policy (its paths, the default state folder): for a
    /// pinned policy the one `--install` recorded, never the caller's `HOME` — the agent sets
    /// that, and with it could move the audit log, the state folder (the version probe) and
    /// the session's worktree folder into its own (twenty-ninth red-team pass, W2). `None`:
    /// `HOME` (a policy named by `GITWARD_POLICY`, which the caller chooses anyway).
    pub home: Option<PathBuf>,
}

impl PolicySource {
    /// The home folder the policy is read with (see [`PolicySource::home`]).
    pub fn home(&self) -> PathBuf {
        self.home.clone().unwrap_or_else(home)
    }
}

/// The pin's text: the policy file's path, then `home=` and the owner's home folder, one a
/// line. `None` for any other text (a pin written before the home line, or edited).
fn parse_pin(text: &str) -> Option<(PathBuf, PathBuf)> {
    let mut lines = text.strip_suffix('\n')?.split('\n');
    let (file, home) = (lines.next()?, lines.next()?.strip_prefix("home=")?);
    let ok = |p: &str| !p.is_empty() && p.starts_with('/');
    (lines.next().is_none() && ok(file) && ok(home)).then(|| (file.into(), home.into()))
}

/// The pin's text for `file` and `home` ([`parse_pin`]'s inverse); `None` where a path cannot
/// be written so (not UTF-8, not absolute, or holding a line break).
fn pin_text(file: &Path, home: &Path) -> Option<String> {
    let (f, h) = (file.to_str()?, home.to_str()?);
    let text = format!("{f}\nhome={h}\n");
    (parse_pin(&text)? == (file.to_path_buf(), home.to_path_buf())).then_some(text)
}

/// Find the policy file: pinned beside the running binary, else `GITWARD_POLICY`.
pub fn policy_path() -> Result<PolicySource, ShimError> {
    if let Some(dir) = current_exe().and_then(Path::parent) {
        let pin = dir.join(PINNED_POLICY);
        // The pin's bytes as `read_to_string` returns them: UTF-8 or an error.
        let text = read_small(&pin).and_then(|b| {
            String::from_utf8(b)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        });
        match text {
            Ok(s) => {
                let Some((file, home)) = parse_pin(&s) else {
                    let source = std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "not a policy path and a home= line (written by an older \
                         git-shim --install, or edited): re-run git-shim --install",
                    );
                    return Err(ShimError::Pinned { path: pin, source });
                };
                return Ok(PolicySource {
                    file,
                    cache: Some(dir.join(POLICY_CACHE)),
                    home: Some(home),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ShimError::Pinned { path: pin, source }),
        }
    }
    std::env::var_os(POLICY_ENV)
        .filter(|v| !v.is_empty())
        .map(|f| PolicySource {
            file: PathBuf::from(f),
            cache: None,
            home: None,
        })
        .ok_or(ShimError::NoPolicy)
}

/// The running binary (`/proc/self/exe`), read once per process: the pinned policy beside it
/// and the real git's search (which skips it) both need it.
fn current_exe() -> Option<&'static Path> {
    static EXE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().ok()).as_deref()
}

/// The validated policy, cached beside the pin (gitward's own folder, outside every writable
/// root), so the hot path does not resolve every forbidden folder on each git call.
pub const POLICY_CACHE: &str = "git-shim.policy.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct CachedPolicy {
    /// The policy file's identity and change times, and the home folder it was checked with.
    key: String,
    policy: Policy,
    /// The real git's probe, kept here too so that a call reads one file, not two (the probe
    /// cache under the state folder stays the source: this is a copy of one of its entries).
    /// Used only while its key still matches the git the call found (see [`CachedProbe`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    git: Option<CachedProbe>,
}

/// A [`GitProbe`] with the key of the binary it describes ([`GitProbe::cache_key`]: device,
/// inode, size and modification time): an upgraded or replaced git no longer matches and is
/// probed again. Whoever could write it could write the policy cache beside it, or the shim.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CachedProbe {
    key: String,
    probe: GitProbe,
}

impl CachedProbe {
    /// The probe, if it describes the git at `path` as `md` shows it now.
    fn for_git(&self, path: &Path, md: Option<&std::fs::Metadata>) -> Option<&GitProbe> {
        let md = md?;
        (self.probe.path == path && self.key == GitProbe::cache_key(md)).then_some(&self.probe)
    }
}

/// Writes `c` to `cache` (a temporary file renamed over it; best effort: a cache that
/// cannot be written only costs time).
fn write_cache(cache: &Path, c: &CachedPolicy) {
    let tmp = cache.with_extension(format!("{}.tmp", std::process::id()));
    if let Ok(bytes) = serde_json::to_vec(c) {
        if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, cache).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Rewrites the policy cache at `cache` with `policy` under `key` and `probe` beside it
/// (best effort, as every write of the cache; no read first, so a cache folder the call cannot
/// write costs one failed `open`). A policy written so is the one the call loaded under
/// `key`: the cache is checked against the file at every call.
fn store_probe(cache: &Path, key: &str, policy: &Policy, probe: CachedProbe) {
    write_cache(
        cache,
        &CachedPolicy {
            key: key.to_owned(),
            policy: policy.clone(),
            git: Some(probe),
        },
    );
}

/// The cache key: device, inode, size, modification and change times (nanoseconds) of the
/// policy file, and the home folder. Any edit, replacement or `touch` changes it.
fn cache_key(file: &Path, home: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(file).ok()?;
    Some(format!(
        "{:x}:{:x}:{}:{}.{}:{}.{}:{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        home.display()
    ))
}

/// Load a policy, through its cache when it has one: a cache whose key still matches the
/// file is used as is; otherwise the file is loaded and validated in full and the cache
/// rewritten (best effort: a cache that cannot be written only costs time).
pub fn load_policy_from(src: &PolicySource, home: &Path) -> Result<Policy, ShimError> {
    load_policy_cached(src, home).map(|l| l.policy)
}

/// A policy as [`load_policy_from`] loads it, with what its cache also held.
pub struct LoadedPolicy {
    pub policy: Policy,
    /// The real git's probe from the policy cache (checked against the git found later).
    git: Option<CachedProbe>,
    /// The cache file and the key the policy is held under there, to add the probe to.
    cache: Option<(PathBuf, String)>,
}

/// [`load_policy_from`], keeping the probe the cache holds and where to store one.
pub fn load_policy_cached(src: &PolicySource, home: &Path) -> Result<LoadedPolicy, ShimError> {
    let key = src.cache.as_ref().and_then(|_| cache_key(&src.file, home));
    if let (Some(cache), Some(key)) = (&src.cache, &key) {
        if let Ok(bytes) = read_small(cache) {
            if let Ok(c) = serde_json::from_slice::<CachedPolicy>(&bytes) {
                if &c.key == key && c.policy.file == src.file {
                    return Ok(LoadedPolicy {
                        policy: c.policy,
                        git: c.git,
                        cache: Some((cache.clone(), key.clone())),
                    });
                }
            }
        }
    }
    let policy = Policy::load(&src.file, home)?;
    let cache = src.cache.clone().zip(key);
    if let Some((file, key)) = &cache {
        let c = CachedPolicy {
            key: key.clone(),
            policy: policy.clone(),
            git: None,
        };
        write_cache(file, &c);
    }
    Ok(LoadedPolicy {
        policy,
        git: None,
        cache,
    })
}

/// The owner's home folder for policy validation.
fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Load the session's policy the way the shim does.
pub fn load_policy() -> Result<Policy, ShimError> {
    let src = policy_path()?;
    load_policy_from(&src, &src.home())
}

/// [`load_policy`] with what the policy cache also held (the real git's probe).
fn load_policy_for_call() -> Result<LoadedPolicy, ShimError> {
    let src = policy_path()?;
    load_policy_cached(&src, &src.home())
}

/// Everything a call needs, set up once.
pub struct Session {
    pub policy: Policy,
    pub git: PathBuf,
    pub probe: GitProbe,
    pub defused: Defused,
}

impl Session {
    /// Policy, real git, version (cached) and the defused set for it.
    pub fn open(policy: Policy) -> Result<Session, ShimError> {
        Self::open_loaded(LoadedPolicy {
            policy,
            git: None,
            cache: None,
        })
    }

    /// [`Session::open`] with the policy cache's probe: used when it describes the git found
    /// (no probe file read); otherwise the probe cache under the state folder answers, and
    /// its answer is added to the policy cache for the next call.
    fn open_loaded(loaded: LoadedPolicy) -> Result<Session, ShimError> {
        let LoadedPolicy {
            policy,
            git: held,
            cache,
        } = loaded;
        // The git found and its metadata from the same `stat` (one per call, not two).
        let (git, md) = find_real_git_with_metadata(
            current_exe(),
            policy.real_git.as_deref(),
            std::env::var_os("PATH").as_deref(),
        )?;
        let probe = match held.as_ref().and_then(|h| h.for_git(&git, md.as_ref())) {
            Some(p) => p.clone(),
            None => {
                let p = GitProbe::probe_cached_with(
                    &git,
                    md.as_ref(),
                    Some(&policy.state_dir.join("probe")),
                )?;
                if let (Some((file, key)), Some(md)) = (&cache, &md) {
                    let entry = CachedProbe {
                        key: GitProbe::cache_key(md),
                        probe: p.clone(),
                    };
                    store_probe(file, key, &policy, entry);
                }
                p
            }
        };
        let mut opts = DefuseOptions::new(probe.version());
        opts.allow_protocols = policy.shim.allow_protocols.clone();
        opts.ceilings = ceilings(&policy);
        opts.keep = KEEP.iter().map(|s| (*s).to_owned()).collect();
        if policy.allow_transient_config {
            // The policy lets the agent choose git's exec path for a call (rule `exec-path`).
            opts.keep.push("GIT_EXEC_PATH".to_owned());
        }
        let defused = Defused::new(opts);
        Ok(Session {
            policy,
            git,
            probe,
            defused,
        })
    }

    /// The command-scope pairs git gets before the agent's arguments: the defused set, without
    /// the hook switches when the policy lets hooks run inside the sandbox.
    pub fn config_pairs(&self) -> impl Iterator<Item = &(BString, String)> {
        let hooks = self.policy.shim.hooks;
        self.defused.config_pairs().iter().filter(move |(k, _)| {
            let hook_switch = k.eq_ignore_ascii_case(b"core.hooksPath")
                || k.get(..5).is_some_and(|p| p.eq_ignore_ascii_case(b"hook."));
            !(hooks && hook_switch)
        })
    }

    /// The arguments before the agent's: `--config-env` for a pair whose key holds `=` (none
    /// in the fixed set); every other pair travels in `GIT_CONFIG_PARAMETERS`
    /// ([`Session::child_env`]).
    pub fn config_args(&self) -> Vec<OsString> {
        self.config_pairs()
            .enumerate()
            .filter(|(_, (k, _))| k.contains(&b'='))
            .map(|(i, (k, _))| {
                let var = format!("=GITWARD_CONFIG_VALUE_{i}");
                OsString::from_vec([b"--config-env=".as_slice(), k, var.as_bytes()].concat())
            })
            .collect()
    }

    /// git's environment: the inherited variables the defused set keeps, its own settings,
    /// the agent's `GIT_CONFIG_*` when `keep_config_env` (they passed the rules), and
    /// `GIT_CONFIG_PARAMETERS` holding the command-scope pairs exactly as git would after
    /// reading them as `-c` before the agent's arguments (so the agent's own `-c` still comes
    /// later, and the agent's `GIT_CONFIG_PARAMETERS` earlier).
    pub fn child_env(&self, keep_config_env: bool) -> Vec<(OsString, OsString)> {
        use std::os::unix::ffi::OsStrExt;
        let inherited: Vec<Vec<u8>> = std::env::vars_os()
            .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        self.env_entries(keep_config_env, inherited.iter().map(Vec::as_slice))
            .into_iter()
            .map(|e| {
                let (k, v) = e.split();
                (
                    OsStr::from_bytes(k).to_owned(),
                    OsStr::from_bytes(v).to_owned(),
                )
            })
            .collect()
    }

    /// [`Session::child_env`] over `inherited`, each variable as its `name=value` bytes (the
    /// form `environ` holds), the result in the same form: inherited entries are borrowed, not
    /// copied. The one place that decides git's environment, for the `exec` of the hot path
    /// (which reads `environ` itself) and for every `Command`.
    ///
    /// An entry's name is everything before its first `=` after the first byte, as std reads
    /// `environ` (`std::env::vars_os`); an entry without one is not a variable and is dropped.
    pub fn env_entries<'a>(
        &self,
        keep_config_env: bool,
        inherited: impl IntoIterator<Item = &'a [u8]>,
    ) -> Vec<EnvEntry<'a>> {
        let mut inherited_params: Option<&[u8]> = None;
        let mut out: Vec<EnvEntry<'a>> = Vec::with_capacity(64);
        // Each set variable replaces every inherited one of its name (dropped here), and a
        // later one of the set an earlier: what a `retain` then `push` per set variable does.
        let set = self.defused.set_vars();
        // The set's first bytes (a few `GIT_…` and `PAGER`): most inherited names start
        // otherwise and are ruled out with one test instead of a scan of the set.
        let mut first = [0u64; 4];
        for (s, _) in set {
            match s.as_bytes().first() {
                Some(&b) => first[usize::from(b >> 6)] |= 1 << (b & 63),
                None => first = [u64::MAX; 4],
            }
        }
        let is_set = |k: &[u8]| {
            k.first()
                .is_none_or(|&b| first[usize::from(b >> 6)] >> (b & 63) & 1 == 1)
                && set.iter().any(|(s, _)| s.as_bytes() == k)
        };
        for kv in inherited {
            let Some((k, v)) = split_entry(kv) else {
                continue;
            };
            let kept = if keep_config_env && is_config_carrier(k) {
                if k == CONFIG_PARAMETERS {
                    inherited_params = Some(v);
                    false
                } else {
                    true
                }
            } else {
                self.defused.keeps_bytes(k)
            };
            // An inherited marker is never passed on: the one git gets, if any, is this
            // process's own (`Session::exec`).
            if kept && !is_set(k) && k != EXEC_MARKER.as_bytes() {
                out.push(EnvEntry::Borrowed(kv));
            }
        }
        for (i, (k, v)) in set.iter().enumerate() {
            use std::os::unix::ffi::OsStrExt;
            if set[i + 1..].iter().all(|(later, _)| later != k) {
                out.push(EnvEntry::owned(k.as_bytes(), v.as_bytes()));
            }
        }
        for (i, (k, v)) in self.config_pairs().enumerate() {
            if k.contains(&b'=') {
                let name = format!("GITWARD_CONFIG_VALUE_{i}");
                out.push(EnvEntry::owned(name.as_bytes(), v.as_bytes()));
            }
        }
        let params = self.defused.config_parameters(
            self.config_pairs(),
            inherited_params.map(std::os::unix::ffi::OsStrExt::from_bytes),
        );
        if let Some(p) = params {
            use std::os::unix::ffi::OsStrExt;
            out.push(EnvEntry::owned(CONFIG_PARAMETERS, p.as_bytes()));
        }
        out
    }

    /// A command for the real git with the defused environment, the command-scope config and
    /// `args`. `keep_config_env`: the call's `GIT_CONFIG_*` passed the rules and travel on.
    pub fn command(&self, args: &[OsString], keep_config_env: bool) -> Command {
        let mut cmd = Command::new(&self.git);
        cmd.env_clear();
        cmd.envs(self.child_env(keep_config_env));
        if self.policy.real_git.is_none() {
            // Found on PATH, git may be another copy of the shim: tell it that its parent is
            // this shim (`EXEC_MARKER`).
            use std::os::unix::ffi::OsStringExt;
            cmd.env(EXEC_MARKER, OsString::from_vec(marker("^")));
        }
        cmd.args(self.config_args());
        cmd.args(args);
        cmd
    }

    /// Replace this process by the real git: what [`Session::command`]`.exec()` does, without
    /// building std's environment map on the hot path. Returns only on failure.
    ///
    /// Unlike std's `exec`, the signal mask and dispositions are left as the shim found them
    /// (no `sigprocmask`/`sigaction`: two system calls a call): git gets what it would get
    /// without the shim. The shim itself changes neither (`no_main`: std's runtime never set
    /// `SIGPIPE` to ignored), and git's own `main` unblocks `SIGPIPE` and restores its default
    /// (`restore_sigpipe_to_default` in common-main.c), which is all std's reset was for.
    pub fn exec(&self, args: &[OsString], keep_config_env: bool) -> std::io::Error {
        use nix::libc::{c_char, execve};
        use std::ffi::{CStr, CString};
        use std::os::unix::ffi::OsStrExt;
        if !self.git.is_absolute() {
            return self.command(args, keep_config_env).exec();
        }
        let c = |b: &[u8]| CString::new(b).map_err(|_| std::io::ErrorKind::InvalidInput);
        let prepared = (|| {
            let path = c(self.git.as_os_str().as_bytes())?;
            let mut argv = vec![path.clone()];
            for a in self.config_args().iter().chain(args) {
                argv.push(c(a.as_bytes())?);
            }
            Ok::<_, std::io::ErrorKind>((path, argv))
        })();
        let (path, argv) = match prepared {
            Ok(p) => p,
            Err(kind) => return kind.into(),
        };
        // The inherited environment as the C strings `environ` holds (no copy of the kept
        // ones): this process is single-threaded and nothing changes `environ` before exec.
        // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings.
        let inherited = unsafe { environ_entries() };
        let entries = self.env_entries(keep_config_env, inherited);
        // The entries the shim made, NUL-terminated; a NUL inside one is refused as std does.
        let mut envp: Vec<*const c_char> = Vec::with_capacity(entries.len() + 1);
        for e in &entries {
            match e {
                // SAFETY: a borrowed entry is a whole `environ` string, followed by its NUL.
                EnvEntry::Borrowed(b) => envp.push(b.as_ptr().cast()),
                // An owned entry ends with its NUL (`EnvEntry::owned`); one inside it is refused
                // as std's `Command` refuses it.
                EnvEntry::Owned { kv, .. } => {
                    if kv[..kv.len() - 1].contains(&0) {
                        return std::io::ErrorKind::InvalidInput.into();
                    }
                    envp.push(kv.as_ptr().cast());
                }
            }
        }
        // Found on PATH, git may be another copy of the shim: tell it that it runs in this
        // process (`EXEC_MARKER`). A path the policy names is the real git.
        let marker = self.policy.real_git.is_none().then(exec_marker);
        if let Some(m) = &marker {
            // NUL-terminated, and no NUL inside (a pid, and a path from the kernel).
            envp.push(m.as_ptr().cast());
        }
        envp.push(std::ptr::null());
        let argvp: Vec<*const c_char> = argv
            .iter()
            .map(|a| CStr::as_ptr(a))
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        // SAFETY: `path`, `argvp` and `envp` are NULL-terminated arrays of NUL-terminated
        // strings that outlive the call (`argv`, `entries` and `environ` are alive here).
        unsafe { execve(path.as_ptr(), argvp.as_ptr(), envp.as_ptr()) };
        std::io::Error::last_os_error()
    }
}

/// One variable of git's environment as `name=value` bytes: borrowed from the inherited
/// environment (an `environ` string, its NUL after the slice), or made by the shim (`kv` is
/// `name=value` and a NUL, so `execve` takes it as it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvEntry<'a> {
    Borrowed(&'a [u8]),
    Owned { kv: Vec<u8>, name_len: usize },
}

/// An inherited `name=value`, split as std splits `environ`: at the first `=` after the first
/// byte (a name may start with `=`); `None` without one.
fn split_entry(kv: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = 1 + kv.get(1..)?.iter().position(|&b| b == b'=')?;
    Some((&kv[..at], &kv[at + 1..]))
}

impl EnvEntry<'_> {
    fn owned(name: &[u8], value: &[u8]) -> Self {
        let mut kv = Vec::with_capacity(name.len() + value.len() + 2);
        kv.extend_from_slice(name);
        kv.push(b'=');
        kv.extend_from_slice(value);
        kv.push(0);
        EnvEntry::Owned {
            kv,
            name_len: name.len(),
        }
    }

    /// The name and the value.
    pub fn split(&self) -> (&[u8], &[u8]) {
        match self {
            // Only entries `split_entry` accepted are borrowed.
            EnvEntry::Borrowed(kv) => split_entry(kv).unwrap_or((kv, b"")),
            EnvEntry::Owned { kv, name_len } => (&kv[..*name_len], &kv[name_len + 1..kv.len() - 1]),
        }
    }

    pub fn name(&self) -> &[u8] {
        self.split().0
    }
}

/// The process's environment as `environ` holds it, without copying.
///
/// # Safety
/// Nothing may change the environment while the returned slices are in use (the shim is
/// single-threaded and calls no `setenv`).
unsafe fn environ_entries() -> impl Iterator<Item = &'static [u8]> {
    extern "C" {
        static environ: *const *const std::ffi::c_char;
    }
    let mut p = environ;
    std::iter::from_fn(move || {
        if p.is_null() || (*p).is_null() {
            return None;
        }
        let s = std::ffi::CStr::from_ptr(*p).to_bytes();
        p = p.add(1);
        Some(s)
    })
}

/// The variable git keeps `-c` in.
const CONFIG_PARAMETERS: &[u8] = b"GIT_CONFIG_PARAMETERS";

fn is_config_carrier(k: &[u8]) -> bool {
    k == CONFIG_PARAMETERS
        || k == b"GIT_CONFIG_COUNT"
        || k.starts_with(b"GIT_CONFIG_KEY_")
        || k.starts_with(b"GIT_CONFIG_VALUE_")
}

/// `GIT_CEILING_DIRECTORIES` for the session: the parent of the repository and of every
/// worktree folder, so discovery never climbs out of the workspace into a repository above it.
pub fn ceilings(p: &Policy) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for r in std::iter::once(&p.repo)
        .chain(std::iter::once(&p.worktree_dir))
        .chain(&p.worktree_roots)
    {
        if let Some(parent) = r.parent() {
            if !out.iter().any(|o| o == parent) {
                out.push(parent.to_path_buf());
            }
        }
    }
    out
}

/// The real git, asked about this call (same global options, same environment).
///
/// Fails closed: a question git could not answer (the child could not be started or waited
/// for, was killed by a signal, or answered with a status the question does not expect) is
/// recorded in `failed`, and [`run_inner`] refuses the call (exit 124, setup) whatever the
/// rules concluded from the missing answer (rt30 W1: an inherited `SIGCHLD=SIG_IGN` or a tiny
/// descriptor limit made the alias lookup look like "no alias").
struct GitRepo<'a> {
    session: &'a Session,
    inv: &'a Invocation,
    keep_config_env: bool,
    /// The first question git could not answer, as one line (`git <args>: <what failed>`,
    /// then the last line git wrote on stderr, if any).
    failed: std::cell::RefCell<Option<String>>,
    /// The last line the last question wrote on stderr (for `failed`).
    last_err: std::cell::RefCell<String>,
}

impl GitRepo<'_> {
    fn ask(&self, args: &[&str]) -> Option<(bool, String)> {
        self.ask_code(args)
            .map(|(code, out)| (code == Some(0), out))
    }

    /// `git config --get-regexp` of submodule URLs over one `.gitmodules` source (`-f <file>`
    /// or `--blob <rev>`): `Some` when git read the source (found or not), `None` when it
    /// could not.
    fn submodule_urls(&self, source: &[&str]) -> Option<Vec<(String, String)>> {
        let mut args = vec!["config", "--null"];
        args.extend_from_slice(source);
        args.extend(["--get-regexp", r"^submodule\..*\.url$"]);
        match self.ask_code(&args)? {
            (Some(0), out) => Some(
                out.split('\0')
                    .filter(|e| !e.is_empty())
                    .map(|e| match e.split_once('\n') {
                        Some((k, v)) => (k.to_owned(), v.to_owned()),
                        None => (e.to_owned(), String::new()),
                    })
                    .collect(),
            ),
            // 1: no URL in a source git could read.
            (Some(1), _) => Some(Vec::new()),
            _ => None,
        }
    }

    /// Ask git; `None` (and the failure recorded) when it could not answer: not started, not
    /// waited for, or killed by a signal.
    fn ask_code(&self, args: &[&str]) -> Option<(Option<i32>, String)> {
        let mut all: Vec<OsString> = self.inv.globals.clone();
        all.extend(args.iter().map(OsString::from));
        let mut cmd = self.session.command(&all, self.keep_config_env);
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
        let out = crate::env::output(&mut cmd);
        self.last_err.borrow_mut().clear();
        if let Ok(out) = &out {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            *self.last_err.borrow_mut() = last.chars().take(400).collect();
        }
        match out {
            Ok(out) if out.status.code().is_some() => Some((
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )),
            Ok(out) => {
                self.fail(args, &format!("git ended by {}", out.status));
                None
            }
            Err(e) => {
                self.fail(args, &e.to_string());
                None
            }
        }
    }

    /// Record that git could not answer `args` (the first failure is the one reported).
    fn fail(&self, args: &[&str], why: &str) {
        let mut f = self.failed.borrow_mut();
        if f.is_none() {
            let mut line = format!("git {}: {why}", args.join(" "));
            let err = self.last_err.borrow();
            if !err.is_empty() {
                line.push_str(": ");
                line.push_str(&err);
            }
            *f = Some(line);
        }
    }
}

impl Repository for GitRepo<'_> {
    fn effective(&self) -> Effective {
        let mut cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        for d in &self.inv.chdirs {
            cwd = cwd.join(d);
        }
        let (common_dir, toplevel) = match self.ask(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-common-dir",
            "--show-toplevel",
        ]) {
            Some((_, out)) => {
                let mut lines = out.lines().map(PathBuf::from);
                (lines.next(), lines.next())
            }
            None => (None, None),
        };
        Effective {
            cwd,
            toplevel,
            common_dir,
        }
    }

    /// git's `alias_lookup`: every `alias.*` key whose whole name after `alias.` equals the
    /// word case-insensitively, subsection included (`git ZZ.x` finds `[alias "zz"] x`; rt24
    /// W3); the last one read wins.
    fn alias(&self, name: &str) -> Option<String> {
        let args = ["config", "--null", "--get-regexp", r"^alias\."];
        match self.ask_code(&args) {
            Some((Some(0), out)) => out
                .split('\0')
                .filter_map(|e| e.split_once('\n'))
                .filter(|(k, _)| k.get(6..).is_some_and(|n| n.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v.to_owned())
                .next_back(),
            // 1: no `alias.*` key at all.
            Some((Some(1), _)) => None,
            // Any other status (a config git cannot read: git would die on it too) is no
            // answer, and no answer is never "not an alias".
            Some((code, _)) => {
                self.fail(&args, &format!("git exited {}", code.unwrap_or(-1)));
                None
            }
            None => None,
        }
    }

    fn worktrees(&self) -> Vec<PathBuf> {
        match self.ask(&["worktree", "list", "--porcelain"]) {
            Some((true, out)) => out
                .lines()
                .filter_map(|l| l.strip_prefix("worktree "))
                .map(PathBuf::from)
                .collect(),
            _ => Vec::new(),
        }
    }

    fn prunable_worktrees(&self) -> Result<Vec<PathBuf>, String> {
        use std::os::unix::ffi::OsStrExt;
        let mut all: Vec<OsString> = self.inv.globals.clone();
        all.extend(["worktree", "list", "--porcelain", "-z"].map(OsString::from));
        let mut cmd = self.session.command(&all, self.keep_config_env);
        cmd.stdin(Stdio::null()).stderr(Stdio::null());
        let out = crate::env::output(&mut cmd).map_err(|e| format!("git worktree list: {e}"))?;
        if !out.status.success() {
            return Err(format!("git worktree list exited {}", out.status));
        }
        // Records of NUL-terminated fields, each ended by an empty field.
        let mut prunable = Vec::new();
        let mut path: Option<PathBuf> = None;
        for field in out.stdout.split(|&b| b == 0) {
            if field.is_empty() {
                path = None;
            } else if let Some(p) = field.strip_prefix(b"worktree ") {
                path = Some(PathBuf::from(std::ffi::OsStr::from_bytes(p)));
            } else if field == b"prunable" || field.starts_with(b"prunable ") {
                prunable.push(path.clone().unwrap_or_default());
            }
        }
        Ok(prunable)
    }

    fn local_bool(&self, key: &str) -> Option<bool> {
        match self.ask(&["config", "--local", "--type=bool", "--get", key]) {
            Some((true, out)) => Some(out.trim() == "true"),
            _ => None,
        }
    }

    fn gitmodules_urls(&self) -> Result<Vec<(String, String)>, String> {
        let Some(top) = self.effective().toplevel else {
            return Ok(Vec::new());
        };
        // git's own order (`config_from_gitmodules`): the work tree's file, else the
        // index's blob, else HEAD's.
        let file = top.join(".gitmodules");
        if std::fs::symlink_metadata(&file).is_ok() {
            let f = file.to_string_lossy();
            return self
                .submodule_urls(&["-f", &f])
                .ok_or_else(|| format!("{f} is not readable config"));
        }
        for blob in [":.gitmodules", "HEAD:.gitmodules"] {
            if let Some(urls) = self.submodule_urls(&["--blob", blob]) {
                return Ok(urls);
            }
        }
        Ok(Vec::new())
    }
}

/// Append an event to the audit log, if the policy names one. A log that cannot be written
/// does not stop git, but is said on stderr.
fn log(policy: &Policy, ev: Event) {
    let Some(path) = &policy.audit_log else {
        return;
    };
    let ev = ev.session(Some(&policy.session));
    if let Err(e) = append_line(path, ev.to_line().as_bytes()) {
        eprintln!(
            "git-shim: warning: cannot append to the audit log {}: {e}",
            path.display()
        );
    }
}

fn call_event(kind: EventKind, message: String, inv: &Invocation, cwd: &Path) -> Event {
    let args: Vec<String> = inv
        .subcommand
        .iter()
        .chain(&inv.args)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    Event::new(Tool::GitShim, kind, message)
        .repo(cwd)
        .with("command", inv.command().unwrap_or_default())
        .with("args", args)
}

/// A message with every control character (newline, carriage return, escape…) written as
/// an escape, so a refusal quoting the agent's arguments stays one line and cannot drive the
/// terminal or forge log lines.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Run the shim as `git` with `args` (without `argv[0]`). Returns only when git was not
/// `exec`'d: a refusal, a setup error, or a child run for `worktree remove|move|prune`; the
/// value is the process's exit status.
pub fn run(args: Vec<OsString>) -> u8 {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("git-shim: {e}");
            exit::SETUP.code
        }
    }
}

fn run_inner(args: Vec<OsString>) -> Result<u8, ShimError> {
    if let Some(e) = execd_by_a_shim() {
        return Err(e);
    }
    let session = Session::open_loaded(load_policy_for_call()?)?;
    let getenv = |k: &str| std::env::var_os(k);
    let inv = Invocation::parse(&args, getenv);
    let env_cfg = env_config(getenv);
    let exec_path = std::env::var_os("GIT_EXEC_PATH").filter(|v| !v.is_empty());
    let keep_config_env = !env_cfg.is_empty();
    let repo = GitRepo {
        session: &session,
        inv: &inv,
        keep_config_env,
        failed: Default::default(),
        last_err: Default::default(),
    };
    let rules = Rules {
        policy: &session.policy,
        neutral: session.defused.config_pairs(),
    };
    let mut cwd = std::env::current_dir().unwrap_or_default();
    for d in &inv.chdirs {
        cwd = cwd.join(d);
    }
    let p = &session.policy;
    let checked = rules.check(&inv, &env_cfg, exec_path.as_deref(), &repo);
    if let (Ok(_), Some(why)) = (&checked, repo.failed.take()) {
        // Fail closed: an answer the rules needed is missing (see `GitRepo`).
        let message = one_line(&format!("cannot ask the real git ({why}); nothing was run"));
        eprintln!("git-shim: refused (setup): {message}");
        log(
            p,
            call_event(EventKind::GitRefused, message, &inv, &cwd).with("rule", "setup"),
        );
        return Ok(exit::SETUP.code);
    }
    let plan = match checked {
        Ok(plan) => plan,
        Err(Refusal { rule, message }) => {
            let message = one_line(&message);
            eprintln!("git-shim: refused ({rule}): {message}");
            log(
                p,
                call_event(EventKind::GitRefused, message, &inv, &cwd).with("rule", rule),
            );
            return Ok(exit::NOT_ALLOWED.code);
        }
    };
    log(
        p,
        call_event(
            EventKind::GitAllowed,
            format!("git {}", inv.command().unwrap_or_default()),
            &inv,
            &cwd,
        )
        .with("decision", "allowed"),
    );
    match plan {
        Plan::Exec => {}
        Plan::CreateFolderThenExec(dir) => {
            std::fs::create_dir_all(&dir).map_err(|source| ShimError::Io {
                path: dir.clone(),
                what: "cannot create the session's worktree folder",
                source,
            })?;
            log(
                p,
                Event::new(
                    Tool::GitShim,
                    EventKind::WorktreeFolderCreated,
                    "the session's worktree folder was created for its first worktree",
                )
                .path(&dir),
            );
        }
        Plan::ChildThenTidy => {
            return child_then_tidy(&session, session.command(&args, keep_config_env))
        }
    }
    let source = session.exec(&args, keep_config_env);
    Err(ShimError::Exec {
        path: session.git.clone(),
        source,
    })
}

/// [`ShimError::ExecdByShim`] when [`EXEC_MARKER`] names this process: another shim `exec`'d
/// this one as git. The marker's path is the agent's to set, so it is quoted on one line.
fn execd_by_a_shim() -> Option<ShimError> {
    // SAFETY: single-threaded, and nothing has changed the environment since
    // `one_copy_per_name` (so the first entry of the name is the only one).
    let v = unsafe { marker_value() }?;
    let (child, v) = match v.split_first() {
        Some((b'^', rest)) => (true, rest),
        _ => (false, v),
    };
    let (pid, by) = match v.iter().position(|&b| b == b':') {
        Some(at) => (&v[..at], &v[at + 1..]),
        None => (v, &b""[..]),
    };
    // `<pid>/<depth>`; a marker without a depth (or an unreadable one) counts as depth 0.
    let (pid, depth) = match pid.iter().position(|&b| b == b'/') {
        Some(at) => (
            &pid[..at],
            std::str::from_utf8(&pid[at + 1..])
                .ok()
                .and_then(|d| d.parse::<u32>().ok())
                .unwrap_or(0),
        ),
        None => (pid, 0),
    };
    let ours = if child {
        std::os::unix::process::parent_id()
    } else {
        std::process::id()
    };
    if pid != ours.to_string().as_bytes() {
        if depth >= MAX_NESTED {
            return Some(ShimError::Nested {
                me: current_exe().map(Path::to_path_buf).unwrap_or_default(),
                depth,
                by: one_line(&String::from_utf8_lossy(by)),
            });
        }
        INHERITED_DEPTH.store(depth, std::sync::atomic::Ordering::Relaxed);
        return None;
    }
    Some(ShimError::ExecdByShim {
        me: current_exe().map(Path::to_path_buf).unwrap_or_default(),
        by: one_line(&String::from_utf8_lossy(by)),
    })
}

/// The value of [`EXEC_MARKER`] in `environ`, found as `getenv` finds it, but by comparing
/// only each entry's first bytes with the name (most differ at the first): every git call
/// pays for this scan, and the variable is almost never there.
///
/// # Safety
/// As [`environ_entries`].
unsafe fn marker_value() -> Option<&'static [u8]> {
    extern "C" {
        static environ: *const *const std::ffi::c_char;
    }
    let name = EXEC_MARKER.as_bytes();
    let mut p = environ;
    while !p.is_null() && !(*p).is_null() {
        let e = (*p).cast::<u8>();
        let mut i = 0;
        // The entry's NUL differs from every byte of the name: nothing past it is read.
        while i < name.len() && *e.add(i) == name[i] {
            i += 1;
        }
        if i == name.len() && *e.add(i) == b'=' {
            return Some(std::ffi::CStr::from_ptr(e.add(i + 1).cast()).to_bytes());
        }
        p = p.add(1);
    }
    None
}

/// `EXEC_MARKER=<this pid>/<depth>:<this binary>` and its NUL, as `execve` takes it.
fn exec_marker() -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let exe = current_exe().map_or(&b""[..], |p| p.as_os_str().as_bytes());
    let mut kv = format!("{EXEC_MARKER}={}/{}:", std::process::id(), next_depth()).into_bytes();
    kv.extend_from_slice(exe);
    kv.push(0);
    kv
}

/// The value of [`EXEC_MARKER`]: `prefix`, this process's id, `/`, the depth, `:`, this
/// binary's path.
fn marker(prefix: &str) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let exe = current_exe().map_or(&b""[..], |p| p.as_os_str().as_bytes());
    let mut v = format!("{prefix}{}/{}:", std::process::id(), next_depth()).into_bytes();
    v.extend_from_slice(exe);
    v
}

/// The depth the markers this shim sets carry: one more than it inherited.
fn next_depth() -> u32 {
    INHERITED_DEPTH
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_add(1)
}

/// Run git as a child (for commands after which the session folder may be empty), remove the
/// session folder if nothing is left in it, and end with git's status: its exit code, or the
/// same signal re-raised.
fn child_then_tidy(session: &Session, mut cmd: Command) -> Result<u8, ShimError> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    let mut child = cmd.spawn().map_err(|source| ShimError::Exec {
        path: session.git.clone(),
        source,
    })?;
    // Like a shell waiting for its job: a terminal's SIGINT/SIGQUIT reaches git (same process
    // group) and git decides; the shim stays to tidy up. Set after spawn, so git never inherits
    // an ignored disposition.
    // SAFETY: installing SIG_IGN runs no handler code.
    unsafe {
        let _ = signal(Signal::SIGINT, SigHandler::SigIgn);
        let _ = signal(Signal::SIGQUIT, SigHandler::SigIgn);
    }
    let status = child.wait().map_err(|source| ShimError::Exec {
        path: session.git.clone(),
        source,
    })?;
    let dir = &session.policy.worktree_dir;
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        // rmdir removes only an empty folder: nothing the agent wrote can be lost.
        if std::fs::remove_dir(dir).is_ok() {
            log(
                &session.policy,
                Event::new(
                    Tool::GitShim,
                    EventKind::WorktreeFolderRemoved,
                    "the session's worktree folder was removed with its last worktree",
                )
                .path(dir),
            );
        }
    }
    Ok(pass_status(status))
}

/// Turn a child's status into ours: its code, or the same signal raised on ourselves (falling
/// back to 128+n if that does not end us).
pub fn pass_status(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return u8::try_from(code).unwrap_or(1);
    }
    let sig = status.signal().unwrap_or(0);
    if let Ok(s) = nix::sys::signal::Signal::try_from(sig) {
        use nix::sys::signal::{signal, SigHandler};
        // SAFETY: restoring the default disposition runs no handler code.
        unsafe {
            let _ = signal(s, SigHandler::SigDfl);
        }
        let _ = nix::sys::signal::raise(s);
    }
    128u8.wrapping_add(u8::try_from(sig).unwrap_or(0))
}

/// What `git-shim --install` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Installed {
    pub shim: PathBuf,
    pub pinned_policy: Option<PathBuf>,
    pub real_git: Option<PathBuf>,
}

/// Install the running binary as `<dir>/git` (a hard link, else a copy; replaced atomically),
/// and with a policy, pin it (`<dir>/git-shim.policy`) and warm the git version cache so the
/// shim never runs `git version` on the agent's calls.
pub fn install(dir: &Path, policy: Option<&Path>) -> Result<Installed, ShimError> {
    let me = std::env::current_exe().map_err(|source| ShimError::Io {
        path: dir.to_path_buf(),
        what: "cannot find the running binary",
        source,
    })?;
    install_binary(&me, dir, policy)
}

/// [`install`] with the shim binary named (agent-shell installs the `git-shim` beside it).
pub fn install_binary(
    me: &Path,
    dir: &Path,
    policy: Option<&Path>,
) -> Result<Installed, ShimError> {
    let io = |path: &Path, what: &'static str| {
        let path = path.to_path_buf();
        move |source| ShimError::Io { path, what, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir, "cannot create the shim folder"))?;
    let target = dir.join("git");
    let tmp = dir.join(format!(".git-shim-{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if std::fs::hard_link(me, &tmp).is_err() {
        std::fs::copy(me, &tmp).map_err(io(&tmp, "cannot copy the shim"))?;
    }
    std::fs::rename(&tmp, &target).map_err(io(&target, "cannot install the shim"))?;
    // rename(2) of two links to one file (a reinstall of the same binary) succeeds and does
    // nothing: the temporary link would stay behind.
    let _ = std::fs::remove_file(&tmp);
    let mut out = Installed {
        shim: target,
        pinned_policy: None,
        real_git: None,
    };
    if let Some(p) = policy {
        let p = std::path::absolute(p).map_err(io(p, "cannot make the policy path absolute"))?;
        let pin = dir.join(PINNED_POLICY);
        let cache = dir.join(POLICY_CACHE);
        let _ = std::fs::remove_file(&cache);
        // The owner's home, as `~/` in the policy means at install: recorded in the pin, so
        // that a call reads the policy with it whatever `HOME` the caller has.
        let owner_home = home();
        let text = pin_text(&p, &owner_home).ok_or_else(|| ShimError::Io {
            path: pin.clone(),
            what: "cannot pin the policy: its path and HOME must be absolute UTF-8 paths without line breaks",
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        })?;
        let loaded = load_policy_from(
            &PolicySource {
                file: p.clone(),
                cache: Some(cache),
                home: Some(owner_home.clone()),
            },
            &owner_home,
        )?;
        std::fs::write(&pin, text).map_err(io(&pin, "cannot pin the policy"))?;
        // Find the real git as the installed shim will (skipping the shim itself).
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path_var));
        let joined = std::env::join_paths(dirs).unwrap_or_default();
        let git = find_real_git(loaded.real_git.as_deref(), Some(&joined))?;
        let md = std::fs::metadata(&git).ok();
        let probe =
            GitProbe::probe_cached_with(&git, md.as_ref(), Some(&loaded.state_dir.join("probe")))?;
        // The installed shim's first call then reads one file: the policy and this probe.
        if let (Some(md), Some(key)) = (&md, cache_key(&p, &owner_home)) {
            let entry = CachedProbe {
                key: GitProbe::cache_key(md),
                probe,
            };
            store_probe(&dir.join(POLICY_CACHE), &key, &loaded, entry);
        }
        out.pinned_policy = Some(p);
        out.real_git = Some(git);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
