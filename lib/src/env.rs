//! The defused git environment: the environment and command-scope config (`-c`) under which
//! git runs nothing it was not asked to run.
//!
//! Built from the catalogue ([`crate::catalogue::ENV`] and [`crate::catalogue::KEYS`]) for the
//! git version actually installed. Both `safe-git` and `git-shim` start git through
//! [`Defused::command`], so the two can never disagree about what "defused" means.
//!
//! What this type guarantees on its own (no repository knowledge needed): no fsmonitor, no
//! hook-folder hooks (and, from git 2.54, no config-based hooks for any known event), no pager,
//! editor, askpass, credential helper, external diff, proxy or ssh program from config, no
//! transports beyond the allowed list, no lazy fetch, no auto-gc, and no inherited `GIT_*`
//! variable except the harmless ones. What needs the repository's names (filter, diff and merge
//! drivers, tools, config hooks, trusted values to re-assert) is added with
//! [`Defused::neutralise_name`] and [`Defused::reassert_trusted`] from the config enumeration.

use crate::catalogue::{self, ConfigKey, GitVersion, KeyPattern, Neutraliser, CONFIG_HOOKS_SINCE};
use gix::bstr::{BStr, BString, ByteSlice};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Errors while locating or probing the real git.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("no real git found on PATH (every `git` found is gitward itself, missing, or before gitward's own entry on PATH); name one with --git or the policy's real_git")]
    NotFound,
    #[error("{path}: the git named is gitward itself; name the real git")]
    IsSelf { path: PathBuf },
    #[error("{path}: cannot run git: {source}")]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: `git version` printed {output:?}, which is not a git version")]
    BadVersion { path: PathBuf, output: String },
}

/// Facts about one real git binary, found by running it with an empty environment
/// (`git version` and `git --exec-path` run nothing from any repository or config).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GitProbe {
    pub path: PathBuf,
    pub version: GitVersionRepr,
    pub exec_path: PathBuf,
    /// The system config file this build reads (`$(sysconfdir)/gitconfig`).
    pub system_config: PathBuf,
}

/// Serialisable mirror of [`GitVersion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GitVersionRepr(pub u16, pub u16, pub u16);

impl From<GitVersionRepr> for GitVersion {
    fn from(v: GitVersionRepr) -> Self {
        GitVersion::new(v.0, v.1, v.2)
    }
}

/// `cmd.output()` for a question to git (the shim's questions, the version probe), with
/// `SIGCHLD` at its default disposition while the child runs: an inherited `SIG_IGN` makes the
/// kernel reap the child itself, and the wait then fails with `ECHILD` (rt30 W1). The disposition found is restored afterwards, so git, when `exec`'d,
/// still gets what it would get without the shim. Only the paths that ask git pay for the two
/// `sigaction`s; the `exec` hot path does not come here.
pub fn output(cmd: &mut Command) -> std::io::Result<std::process::Output> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: installing SIG_DFL, then the disposition found, runs no handler code.
    let before = unsafe { signal(Signal::SIGCHLD, SigHandler::SigDfl) }.ok();
    let out = cmd.output();
    if let Some(h) = before.filter(|h| !matches!(h, SigHandler::SigDfl)) {
        // SAFETY: as above; `h` is the disposition this process had.
        unsafe {
            let _ = signal(Signal::SIGCHLD, h);
        }
    }
    out
}

impl GitProbe {
    pub fn version(&self) -> GitVersion {
        self.version.into()
    }

    /// Run `git version` and `git --exec-path` under an empty environment.
    pub fn probe(git: &Path) -> Result<Self, GitError> {
        let run = |arg: &str| -> Result<String, GitError> {
            let out = output(
                Command::new(git)
                    .arg(arg)
                    .env_clear()
                    .env("PATH", "/usr/bin:/bin")
                    .stdin(std::process::Stdio::null()),
            )
            .map_err(|source| GitError::Spawn {
                path: git.to_path_buf(),
                source,
            })?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        };
        let v = run("version")?;
        let version = GitVersion::parse(&v).ok_or_else(|| GitError::BadVersion {
            path: git.to_path_buf(),
            output: v.clone(),
        })?;
        let exec_path = PathBuf::from(run("--exec-path")?);
        let system_config = system_config_for(&exec_path);
        Ok(GitProbe {
            path: git.to_path_buf(),
            version: GitVersionRepr(version.major, version.minor, version.patch),
            exec_path,
            system_config,
        })
    }

    /// [`GitProbe::probe_cached`] with the binary's metadata already read (by
    /// [`find_real_git_with_metadata`], so the hot path `stat`s git once).
    pub fn probe_cached_with(
        git: &Path,
        md: Option<&std::fs::Metadata>,
        cache_dir: Option<&Path>,
    ) -> Result<Self, GitError> {
        let Some(dir) = cache_dir else {
            return Self::probe(git);
        };
        let Some(md) = md else {
            return Self::probe_cached(git, cache_dir);
        };
        let file = dir.join(format!("probe-{}.json", Self::cache_key(md)));
        if let Ok(bytes) = read_small(&file) {
            if let Ok(p) = serde_json::from_slice::<GitProbe>(&bytes) {
                if p.path == git {
                    return Ok(p);
                }
            }
        }
        Self::probe_and_store(git, dir, &file)
    }

    /// The key a probe of the binary `md` describes is kept under: its device, inode, size and
    /// modification time (an upgraded or replaced git gets another key).
    pub fn cache_key(md: &std::fs::Metadata) -> String {
        use std::os::unix::fs::MetadataExt;
        format!(
            "{:x}-{:x}-{:x}-{:x}",
            md.dev(),
            md.ino(),
            md.size(),
            md.mtime()
        )
    }

    /// Like [`GitProbe::probe`], with the result cached under `cache_dir`, keyed by the binary's
    /// device, inode, size and mtime (so an upgraded git is probed again).
    pub fn probe_cached(git: &Path, cache_dir: Option<&Path>) -> Result<Self, GitError> {
        if cache_dir.is_none() {
            return Self::probe(git);
        }
        match std::fs::metadata(git) {
            Ok(md) => Self::probe_cached_with(git, Some(&md), cache_dir),
            Err(_) => Self::probe(git),
        }
    }

    /// Probe `git` and write the result to `file` in `dir` (best effort).
    fn probe_and_store(git: &Path, dir: &Path, file: &Path) -> Result<Self, GitError> {
        let p = Self::probe(git)?;
        // Best effort: a cache that cannot be written only costs the next call a probe.
        if std::fs::create_dir_all(dir).is_ok() {
            let tmp = dir.join(format!(".probe-{}.tmp", std::process::id()));
            if std::fs::write(&tmp, serde_json::to_vec(&p).unwrap_or_default()).is_ok() {
                let _ = std::fs::rename(&tmp, file);
            }
        }
        Ok(p)
    }
}

/// Where a git build reads its system config: git's Makefile sets `sysconfdir = /etc` when
/// `prefix = /usr` and `$(prefix)/etc` otherwise; the prefix is the exec path minus
/// `/libexec/git-core` or `/lib/git-core`.
pub fn system_config_for(exec_path: &Path) -> PathBuf {
    let s = exec_path.to_string_lossy();
    let prefix = ["/libexec/git-core", "/lib/git-core"]
        .iter()
        .find_map(|suffix| s.strip_suffix(suffix))
        .unwrap_or("/usr");
    if prefix == "/usr" || prefix.is_empty() {
        PathBuf::from("/etc/gitconfig")
    } else {
        Path::new(prefix).join("etc/gitconfig")
    }
}

/// A small file's bytes, as [`std::fs::read`] returns them: `open`, `fstat`, `read`, `close`.
/// The files the shim reads on each call (the pin, the validated policy, git's probe) are a
/// few hundred bytes.
///
/// The file is opened without blocking (`O_NONBLOCK`: a FIFO or a device in its place opens at
/// once instead of waiting for a writer) and refused unless `fstat` says it is a regular file
/// (`InvalidData`, "not a regular file"): a FIFO at the pin made every call hang (rt24).
///
/// The buffer is the size `fstat` gave plus one byte (at most 64 KiB), and reading stops once
/// a read has brought the file to exactly that size without filling the buffer: the `read`
/// that would see the end of the file (and the buffer `fs::read` would size for a longer one)
/// is skipped. Bytes appended after the `fstat` are a write racing the read, which `fs::read`
/// also sees or misses by timing; a file that grew past its size (the buffer filled), shrank
/// (a read returned 0 first) or came in short reads is read on until a read returns 0, as
/// `fs::read` reads it.
pub fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(std::io::Error::new(
            if m.is_dir() {
                std::io::ErrorKind::IsADirectory
            } else {
                std::io::ErrorKind::InvalidData
            },
            "not a regular file",
        ));
    }
    const MAX_BUFFER: u64 = 64 * 1024;
    let size = m.len();
    let cap = size.saturating_add(1).min(MAX_BUFFER) as usize;
    let mut out = vec![0u8; cap];
    let mut f = f;
    let mut n = 0usize;
    loop {
        match f.read(&mut out[n..]) {
            Ok(0) => break,
            Ok(k) => {
                n += k;
                if n as u64 == size && n < cap {
                    break;
                }
                if n == cap {
                    // Longer than the `fstat` said, or than the buffer: read on to the end
                    // (through `Take`, std's generic `read_to_end`, which asks for no size).
                    out.truncate(n);
                    f.take(u64::MAX).read_to_end(&mut out)?;
                    return Ok(out);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(n);
    Ok(out)
}

/// Find the real git: the explicit path if given, else the first `git` on `PATH` *after* the
/// running binary's own entry (the first folder whose `git` is the running binary, compared by
/// device and inode, so a symlink or hard link to the shim is recognised and skipped, and the
/// shim can never exec itself). A `git` before that entry is never taken: it may be a wrapper
/// that runs the next git after itself, which is the shim again (rt30 W3). When the running
/// binary is not on `PATH` at all (run by its path), the first `git` on `PATH`.
pub fn find_real_git(
    explicit: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, GitError> {
    find_real_git_from(std::env::current_exe().ok().as_deref(), explicit, path_var)
}

/// [`find_real_git`] with the running binary's path (`current_exe`) already known: the shim
/// reads it once per call, for the pinned policy and for this.
pub fn find_real_git_from(
    current_exe: Option<&Path>,
    explicit: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, GitError> {
    find_real_git_with_metadata(current_exe, explicit, path_var).map(|(p, _)| p)
}

/// [`find_real_git_from`], with the metadata of the git found when it was read (the `stat`
/// that compared it with the running binary): [`GitProbe::probe_cached_with`] keys its cache
/// by it instead of `stat`ing the same path again. `None` when no `stat` was made or it failed
/// (an explicit git while the running binary is unknown, or one that does not exist).
pub fn find_real_git_with_metadata(
    current_exe: Option<&Path>,
    explicit: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Result<(PathBuf, Option<std::fs::Metadata>), GitError> {
    use std::os::unix::fs::MetadataExt;
    let me = current_exe.and_then(|p| std::fs::metadata(p).ok());
    let same =
        |m: &std::fs::Metadata, o: &std::fs::Metadata| m.dev() == o.dev() && m.ino() == o.ino();
    if let Some(p) = explicit {
        let Some(m) = &me else {
            return Ok((p.to_path_buf(), None));
        };
        let md = std::fs::metadata(p).ok();
        if md.as_ref().is_some_and(|o| same(m, o)) {
            return Err(GitError::IsSelf {
                path: p.to_path_buf(),
            });
        }
        return Ok((p.to_path_buf(), md));
    }
    let is_me = |o: &std::fs::Metadata| me.as_ref().is_some_and(|m| same(m, o));
    let path_var = path_var.map(OsStr::to_owned).unwrap_or_default();
    // The first git before the running binary's own entry: the answer only when the running
    // binary is not on PATH at all. A git before the shim's entry may be a wrapper that runs
    // "the next git on PATH after itself", i.e. the shim again (rt30 W3: wrapper -> shim ->
    // wrapper -> … without end); the real git is searched after the shim, as a wrapper would.
    let mut before: Option<(PathBuf, std::fs::Metadata)> = None;
    let mut seen_me = false;
    for dir in std::env::split_paths(&path_var) {
        if dir.as_os_str().is_empty() || dir.is_relative() {
            // A relative PATH entry resolves against the current (agent-writable) folder.
            continue;
        }
        let cand = dir.join("git");
        let Ok(md) = std::fs::metadata(&cand) else {
            continue;
        };
        use std::os::unix::fs::PermissionsExt;
        if !md.is_file() || md.permissions().mode() & 0o111 == 0 {
            continue;
        }
        if is_me(&md) {
            // Every git before this entry is skipped; the first one after it is the answer.
            seen_me = true;
            continue;
        }
        if seen_me || me.is_none() {
            return Ok((cand, Some(md)));
        }
        // Keep looking for the running binary's own entry further on.
        before.get_or_insert((cand, md));
    }
    if seen_me {
        // On PATH with no git after it: a git before it may be a wrapper that runs this
        // binary again, so it is not taken.
        return Err(GitError::NotFound);
    }
    match before {
        Some((p, md)) => Ok((p, Some(md))),
        None => Err(GitError::NotFound),
    }
}

/// Options for building a defused environment.
#[derive(Debug, Clone)]
pub struct DefuseOptions {
    pub version: GitVersion,
    /// Transports git may use (`GIT_ALLOW_PROTOCOL`); empty = none at all.
    pub allow_protocols: String,
    /// `GIT_OPTIONAL_LOCKS=0`: no opportunistic index writes (read-only callers).
    pub read_only: bool,
    /// `GIT_CEILING_DIRECTORIES`: discovery never climbs into or above these.
    pub ceilings: Vec<PathBuf>,
    /// Pin the system config file to the one that was enumerated.
    pub system_config: Option<PathBuf>,
    /// Inherited variables to keep although they are not on the harmless list (e.g. a
    /// validated `GIT_DIR` the shim passes through).
    pub keep: Vec<String>,
}

impl DefuseOptions {
    pub fn new(version: GitVersion) -> Self {
        DefuseOptions {
            version,
            allow_protocols: String::new(),
            read_only: false,
            ceilings: Vec::new(),
            system_config: None,
            keep: Vec::new(),
        }
    }
}

/// Errors building the `-c` list.
#[derive(Debug, thiserror::Error)]
pub enum DefuseError {
    #[error("config name {name:?} (section {section}) holds a newline or NUL and cannot be neutralised on the command line")]
    Unrepresentable { section: String, name: BString },
}

/// The defused environment: what to drop, what to set, and the command-scope config.
#[derive(Debug, Clone)]
pub struct Defused {
    opts: DefuseOptions,
    /// `(key, value)` command-scope pairs, in order; a later pair for the same key wins. Keys
    /// are bytes: a subsection (a driver's name) is any bytes but newline and NUL to git, and
    /// an argument or `GIT_CONFIG_PARAMETERS` carries them unchanged.
    config: Vec<(BString, String)>,
    set_env: Vec<(String, OsString)>,
    /// The first bytes of `opts.keep`'s names: an inherited name starting otherwise is none of
    /// them (one test instead of a scan of the list, for each inherited variable of a call).
    keep_first: FirstBytes,
}

/// A set of first bytes (256 bits); an empty name stands for every byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct FirstBytes([u64; 4]);

impl FirstBytes {
    fn of<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut f = FirstBytes::default();
        for n in names {
            f.add(n);
        }
        f
    }

    fn add(&mut self, name: &[u8]) {
        match name.first() {
            Some(&b) => self.0[usize::from(b >> 6)] |= 1 << (b & 63),
            None => self.0 = [u64::MAX; 4],
        }
    }

    /// Could `name` be one of the names added? (An empty `name` always could.)
    fn may_hold(&self, name: &[u8]) -> bool {
        name.first()
            .is_none_or(|&b| self.0[usize::from(b >> 6)] >> (b & 63) & 1 == 1)
    }
}

impl Defused {
    /// The fixed part: every catalogue `Set` neutraliser, the hook switches for this version,
    /// and the environment of [`catalogue::ENV`].
    pub fn new(opts: DefuseOptions) -> Self {
        // The catalogue's rows through their copies without pointers (`shim::packed`: the
        // rows are not relocated at every start of a static PIE).
        // The rows with a fixed value and the scoped keys' values are worked out at compile
        // time (`packed::fixed_pairs`); only the version gates are applied here.
        use crate::shim::packed;
        let mut config = Vec::with_capacity(64);
        for (key, value) in packed::fixed_pairs(opts.version) {
            config.push((key.into(), value.to_owned()));
        }
        if opts.version >= CONFIG_HOOKS_SINCE {
            for ev in packed::HOOK_EVENTS.iter() {
                let key = [b"hook.".as_slice(), ev.as_bytes(), b".enabled"].concat();
                config.push((key.into(), "false".to_owned()));
            }
        }
        // Transports: cut everything not allowed, whatever protocol.* the repository sets.
        for (k, v) in catalogue::ALWAYS_SET {
            config.push(((*k).into(), (*v).to_owned()));
        }
        let mut set_env: Vec<(String, OsString)> = packed::env_sets()
            .map(|(name, value)| (name.to_owned(), OsString::from(value)))
            .collect();
        set_env.push((
            "GIT_ALLOW_PROTOCOL".into(),
            opts.allow_protocols.clone().into(),
        ));
        if opts.read_only {
            set_env.push(("GIT_OPTIONAL_LOCKS".into(), "0".into()));
        }
        if !opts.ceilings.is_empty() {
            let joined = std::env::join_paths(&opts.ceilings).unwrap_or_default();
            set_env.push(("GIT_CEILING_DIRECTORIES".into(), joined));
        }
        if let Some(sys) = &opts.system_config {
            set_env.push(("GIT_CONFIG_SYSTEM".into(), sys.clone().into_os_string()));
        }
        Defused {
            keep_first: FirstBytes::of(opts.keep.iter().map(|k| k.as_bytes())),
            opts,
            config,
            set_env,
        }
    }

    /// Neutralise every program-running per-name key of `section.<name>` (a filter, diff or
    /// merge driver, a tool, a config hook, …) that the catalogue knows, for this version.
    /// `name` is the subsection's exact bytes.
    pub fn neutralise_name(
        &mut self,
        section: &str,
        name: impl AsRef<[u8]>,
    ) -> Result<(), DefuseError> {
        let name = name.as_ref();
        if name.contains(&b'\n') || name.contains(&0) {
            return Err(DefuseError::Unrepresentable {
                section: section.into(),
                name: name.into(),
            });
        }
        for e in catalogue::KEYS {
            if e.since.is_some_and(|v| self.opts.version < v) {
                continue;
            }
            if let (
                KeyPattern::PerName {
                    section: s,
                    name: key,
                },
                Neutraliser::PerName {
                    key: set_key,
                    value,
                },
            ) = (e.key, e.neutraliser)
            {
                if s.eq_ignore_ascii_case(section) {
                    let k = per_name_key(s, name.as_bstr(), set_key.unwrap_or(key));
                    if !self.config.iter().any(|(have, v)| *have == k && v == value) {
                        self.config.push((k, value.to_owned()));
                    }
                }
            }
        }
        Ok(())
    }

    /// Neutralise the per-name keys (drivers, tools, config hooks) that an untrusted file sets,
    /// given every config value as `(key, value, trusted)` in git's load order; a key is git's
    /// (section and name lower-cased), with the subsection's exact bytes.
    ///
    /// For each catalogue per-name key set by any untrusted file, the command scope gets the
    /// last *trusted* value for that key if the owner's config has one (so a globally
    /// configured driver such as git-lfs keeps working exactly as under plain git), else the
    /// neutral value. A filter whose clean, smudge or process is emptied also gets
    /// `required=false`, or git would fail on the emptied filter. Keys that only trusted files
    /// set are left alone.
    pub fn neutralise_untrusted<'a>(
        &mut self,
        values: impl IntoIterator<Item = (&'a [u8], Option<&'a str>, bool)>,
    ) -> Result<(), DefuseError> {
        // lower-cased section + name, subsection's bytes → (untrusted seen, last trusted)
        let mut seen: BTreeMap<(String, BString, String), (bool, Option<String>)> = BTreeMap::new();
        for (key, value, trusted) in values {
            // Section and name are ASCII to git, so the lossy text splits where the bytes do;
            // the catalogue matches section and name only.
            let text = key.to_str_lossy();
            let Some(k) = ConfigKey::parse(&text) else {
                continue;
            };
            if k.subsection.is_none() {
                continue;
            }
            let per_name = catalogue::lookup(&text).any(|e| {
                matches!(e.key, KeyPattern::PerName { .. })
                    && matches!(e.neutraliser, Neutraliser::PerName { .. })
            });
            if !per_name {
                continue;
            }
            let sub = &key[k.section.len() + 1..key.len() - k.name.len() - 1];
            if sub.contains(&b'\n') || sub.contains(&0) {
                return Err(DefuseError::Unrepresentable {
                    section: k.section.into(),
                    name: sub.into(),
                });
            }
            let slot = seen
                .entry((
                    k.section.to_ascii_lowercase(),
                    sub.into(),
                    k.name.to_ascii_lowercase(),
                ))
                .or_insert((false, None));
            if trusted {
                slot.1 = Some(value.unwrap_or("true").to_owned());
            } else {
                slot.0 = true;
            }
        }
        let mut emptied_filters = std::collections::BTreeSet::new();
        for ((section, sub, name), (untrusted, last_trusted)) in &seen {
            if !untrusted {
                continue;
            }
            // Any subsection finds the same rows (they match section and name).
            for e in catalogue::lookup(&format!("{section}.x.{name}")) {
                if e.since.is_some_and(|v| self.opts.version < v) {
                    continue;
                }
                let (
                    KeyPattern::PerName { name: row_name, .. },
                    Neutraliser::PerName {
                        key: set_key,
                        value,
                    },
                ) = (e.key, e.neutraliser)
                else {
                    continue;
                };
                let target = per_name_key(section, sub.as_bstr(), set_key.unwrap_or(row_name));
                let v = match (set_key, last_trusted) {
                    (None, Some(t)) => t.clone(),
                    _ => value.to_owned(),
                };
                if section == "filter"
                    && v.is_empty()
                    && matches!(row_name, "clean" | "smudge" | "process")
                {
                    emptied_filters.insert(sub.clone());
                }
                self.config.push((target, v));
            }
        }
        for sub in emptied_filters {
            self.config.push((
                per_name_key("filter", sub.as_bstr(), "required"),
                "false".to_owned(),
            ));
        }
        Ok(())
    }

    /// Add one command-scope pair (a later pair for the same key wins).
    pub fn set_config(&mut self, key: impl Into<BString>, value: impl Into<String>) {
        self.config.push((key.into(), value.into()));
    }

    /// Pass the caller's values of `names` through instead of this environment's overrides
    /// (for a command that only reports them, `git var`).
    pub fn pass_through(&mut self, names: &[&str]) {
        self.set_env.retain(|(k, _)| !names.contains(&k.as_str()));
        self.opts.keep.extend(names.iter().map(|n| (*n).to_owned()));
        for n in names {
            self.keep_first.add(n.as_bytes());
        }
    }

    /// Drop the command-scope config entirely (for `git config` reads, which would list it).
    pub fn without_config(mut self) -> Self {
        self.config.clear();
        self
    }

    /// Re-assert the owner's trusted value (system/global config) for every `TrustedOr` key,
    /// instead of the neutral value, so honest repositories behave as under plain git.
    /// `trusted` maps lower-cased `section.name` to the last trusted value.
    pub fn reassert_trusted(&mut self, trusted: &BTreeMap<String, String>) {
        if trusted.is_empty() {
            return;
        }
        for (key, value) in self.config.iter_mut() {
            // The fixed keys these rows name are ASCII.
            let Ok(key) = std::str::from_utf8(key) else {
                continue;
            };
            // The map lookup first: the catalogue lookup scans every row.
            let Some(v) = trusted.get(&key.to_ascii_lowercase()) else {
                continue;
            };
            if ConfigKey::parse(key).is_none() {
                continue;
            }
            let is_trusted_or = catalogue::lookup(key).any(|e| {
                matches!(e.neutraliser, Neutraliser::TrustedOr { .. })
                    && !matches!(e.key, KeyPattern::PerName { .. })
            });
            if is_trusted_or {
                *value = v.clone();
            }
        }
    }

    /// The command-scope pairs, in the order they are passed.
    pub fn config_pairs(&self) -> &[(BString, String)] {
        &self.config
    }

    /// The variables set in the child (after inherited ones are filtered).
    pub fn set_vars(&self) -> &[(String, OsString)] {
        &self.set_env
    }

    /// Git's global options that carry the config: `--config-env=key=VAR` (git splits that at
    /// the *last* `=`) for a pair whose key holds `=`, which `-c` cannot carry; every other pair
    /// travels in `GIT_CONFIG_PARAMETERS` ([`Self::child_env`], [`Self::config_parameters`]).
    /// Returns the arguments and the extra variables those `--config-env` names need.
    pub fn config_args(&self) -> (Vec<OsString>, Vec<(String, OsString)>) {
        let mut args = Vec::new();
        let mut extra = Vec::new();
        // Arguments are bytes on Unix: a key whose subsection is not UTF-8 reaches git as is.
        let arg = |parts: &[&[u8]]| OsString::from(OsStr::from_bytes(&parts.concat()));
        for (i, (k, v)) in self.config.iter().enumerate() {
            if k.contains(&b'=') {
                let var = format!("GITWARD_CONFIG_VALUE_{i}");
                args.push(arg(&[b"--config-env=", k, b"=", var.as_bytes()]));
                extra.push((var, OsString::from(v)));
            }
        }
        (args, extra)
    }

    /// `GIT_CONFIG_PARAMETERS` as git itself leaves it after reading `-c key=value` for each of
    /// `pairs` (`git_config_push_parameter`): the `inherited` value if not empty, then each pair
    /// shell-quoted, separated by spaces; `'key'='value'` from git 2.31, `'key=value'` before.
    /// Set once in the environment it is the same command-scope config, in the same order
    /// (before the caller's own `-c`, after `GIT_CONFIG_COUNT`), without git calling `setenv`
    /// on the growing string once per `-c`. Keys holding `=` cannot be written as `-c`; they
    /// are skipped here and must travel as `--config-env` ([`Self::config_args`]).
    pub fn config_parameters<'a, K: AsRef<[u8]> + 'a>(
        &self,
        pairs: impl IntoIterator<Item = &'a (K, String)>,
        inherited: Option<&OsStr>,
    ) -> Option<OsString> {
        use std::os::unix::ffi::OsStringExt;
        let pairs: Vec<(&[u8], &String)> =
            pairs.into_iter().map(|(k, v)| (k.as_ref(), v)).collect();
        // Sized once (each pair: two quoted strings, `=` and a space; quoting a `'` or `!`
        // grows it further), not regrown byte by byte on every call.
        let size = pairs
            .iter()
            .map(|(k, v)| k.len() + v.len() + 6)
            .sum::<usize>();
        let mut buf: Vec<u8> = Vec::with_capacity(inherited.map_or(0, OsStr::len) + size);
        buf.extend_from_slice(inherited.map(OsStr::as_bytes).unwrap_or_default());
        let split = self.opts.version >= SPLIT_PARAMETERS_SINCE;
        // Keys are bytes: a subsection that is not UTF-8 reaches git as is.
        for (k, v) in pairs
            .into_iter()
            .filter(|(k, _)| !k.contains(&b'=') && !self.beaten_by_env(k))
        {
            if !buf.is_empty() {
                buf.push(b' ');
            }
            if split {
                sq_quote(&mut buf, k);
                buf.push(b'=');
                sq_quote(&mut buf, v.as_bytes());
            } else {
                sq_quote(&mut buf, &[k, b"=", v.as_bytes()].concat());
            }
        }
        (!buf.is_empty() || inherited.is_some()).then(|| OsString::from_vec(buf))
    }

    /// Does this set give git a variable that git reads instead of `key`
    /// ([`catalogue::BEATEN_BY_ENV`])? Then the pair for `key` need not travel.
    pub fn beaten_by_env(&self, key: &[u8]) -> bool {
        catalogue::BEATEN_BY_ENV.iter().any(|(k, var)| {
            key.eq_ignore_ascii_case(k.as_bytes()) && self.set_env.iter().any(|(n, _)| n == var)
        })
    }

    /// Is an inherited variable kept in the child's environment?
    pub fn keeps(&self, name: &OsStr) -> bool {
        self.keeps_bytes(name.as_bytes())
    }

    /// [`Defused::keeps`] for a name as bytes (as `environ` holds it).
    pub fn keeps_bytes(&self, name: &[u8]) -> bool {
        // A name no row of the catalogue can match and that is not `GIT…` is kept whatever
        // the lists below say (a kept name starting otherwise is kept either way): one table
        // lookup for most of an environment, on every call.
        if let Some(&b) = name.first() {
            if b != b'G' && !catalogue::ENV_FIRST_BYTES[usize::from(b)] {
                return true;
            }
        }
        if !name.is_ascii() && std::str::from_utf8(name).is_err() {
            // Non-UTF-8 names cannot match our lists; keep non-GIT ones, drop GIT_-prefixed.
            return !name.starts_with(b"GIT_");
        }
        // The lists below are compared as bytes: the same as comparing the UTF-8 name.
        if self.keep_first.may_hold(name) && self.opts.keep.iter().any(|k| k.as_bytes() == name) {
            return true;
        }
        if env_row_matches(name) {
            return false;
        }
        if name.starts_with(b"GIT_") || name.starts_with(b"GITWARD_CONFIG_VALUE_") {
            return crate::shim::packed::GIT_HARMLESS.contains(name);
        }
        true
    }

    /// The child's full environment from an inherited one.
    pub fn child_env(
        &self,
        inherited: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = inherited
            .into_iter()
            .filter(|(k, _)| self.keeps(k))
            .collect();
        let (_, extra) = self.config_args();
        for (k, v) in self.set_env.iter().chain(extra.iter()) {
            out.retain(|(have, _)| have.as_os_str() != OsStr::new(k));
            out.push((OsString::from(k), v.clone()));
        }
        // The command-scope pairs, after a kept `GIT_CONFIG_PARAMETERS` (never kept by default:
        // the catalogue removes it) as git would append `-c` to it.
        let at = out.iter().position(|(k, _)| k == CONFIG_PARAMETERS);
        let inherited = at.map(|i| out.remove(i).1);
        if let Some(p) = self.config_parameters(&self.config, inherited.as_deref()) {
            out.push((CONFIG_PARAMETERS.into(), p));
        }
        out
    }

    /// A `Command` for `git <args…>` with the defused environment (the command-scope config
    /// in `GIT_CONFIG_PARAMETERS`) built from `inherited` (normally `std::env::vars_os()`).
    pub fn command<I, S>(
        &self,
        git: &Path,
        inherited: impl IntoIterator<Item = (OsString, OsString)>,
        args: I,
    ) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(git);
        cmd.env_clear();
        cmd.envs(self.child_env(inherited));
        let (cargs, _) = self.config_args();
        cmd.args(cargs);
        cmd.args(args);
        cmd
    }
}

/// For each first byte, the rows of [`catalogue::ENV`] a name starting with it can match (bit
/// `i`: row `i`; a row starting with `*` is in every entry), computed at compile time. With
/// more than 128 rows it is unused and every row is scanned ([`env_row_matches`]).
static ENV_ROWS_BY_FIRST: [u128; 256] = {
    let env = catalogue::ENV;
    let mut t = [0u128; 256];
    let mut i = 0;
    while i < env.len() && env.len() <= 128 {
        let name = env[i].name.as_bytes();
        if name.is_empty() || name[0] == b'*' {
            let mut b = 0;
            while b < 256 {
                t[b] |= 1 << i;
                b += 1;
            }
        } else {
            t[name[0] as usize] |= 1 << i;
        }
        i += 1;
    }
    t
};

/// For each name length (63: 63 or more), the rows of [`catalogue::ENV`] a name of that length
/// can match: a name row of exactly that length, a prefix row (`…*`) no longer than it; a
/// superset, like [`ENV_ROWS_BY_FIRST`], and ANDed with it, so a name is compared with the
/// few rows of both its first byte and its length (most names: none).
static ENV_ROWS_BY_LEN: [u128; 64] = {
    let env = catalogue::ENV;
    let mut t = [0u128; 64];
    let mut i = 0;
    while i < env.len() && env.len() <= 128 {
        let name = env[i].name.as_bytes();
        let prefix = !name.is_empty() && name[name.len() - 1] == b'*';
        let len = if prefix { name.len() - 1 } else { name.len() };
        let from = if len < 63 { len } else { 63 };
        let mut l = from;
        while l < 64 {
            if prefix || l == from {
                t[l] |= 1 << i;
            }
            l += 1;
        }
        i += 1;
    }
    t
};

/// Does a row of [`catalogue::ENV`] match `name`? The rows of `name`'s first byte and length
/// only.
fn env_row_matches(name: &[u8]) -> bool {
    // The rows' names through their copy without pointers (`shim::packed`), same order.
    use crate::shim::packed::{env_name_bytes, env_rows};
    let (Some(&first), true) = (name.first(), env_rows() <= 128) else {
        return (0..env_rows()).any(|i| env_name_matches(env_name_bytes(i), name));
    };
    let mut rows = ENV_ROWS_BY_FIRST[usize::from(first)] & ENV_ROWS_BY_LEN[name.len().min(63)];
    while rows != 0 {
        let i = rows.trailing_zeros() as usize;
        rows &= rows - 1;
        if env_name_matches(env_name_bytes(i), name) {
            return true;
        }
    }
    false
}

/// [`catalogue::env_name_matches`] on bytes (the same comparison: a row is ASCII).
fn env_name_matches(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_last() {
        Some((b'*', prefix)) => name.starts_with(prefix),
        _ => pattern == name,
    }
}

/// The variable git keeps `-c` in.
const CONFIG_PARAMETERS: &str = "GIT_CONFIG_PARAMETERS";

/// From git 2.31 `-c key=value` is pushed as `'key'='value'` (`git_config_push_split_parameter`).
const SPLIT_PARAMETERS_SINCE: GitVersion = GitVersion::new(2, 31, 0);

/// git's `sq_quote_buf`: `'…'`, with each `'` and `!` written as `'\''` and `'\!'`.
fn sq_quote(dst: &mut Vec<u8>, src: &[u8]) {
    dst.push(b'\'');
    // The runs between the two bytes that need it are copied whole, not byte by byte.
    let mut rest = src;
    while let Some(at) = rest.iter().position(|&b| b == b'\'' || b == b'!') {
        dst.extend_from_slice(&rest[..at]);
        dst.extend_from_slice(&[b'\'', b'\\', rest[at], b'\'']);
        rest = &rest[at + 1..];
    }
    dst.extend_from_slice(rest);
    dst.push(b'\'');
}

/// `section.<sub>.name` with the subsection's exact bytes.
fn per_name_key(section: &str, sub: &BStr, name: &str) -> BString {
    let mut k: Vec<u8> = Vec::with_capacity(section.len() + sub.len() + name.len() + 2);
    k.extend_from_slice(section.as_bytes());
    k.push(b'.');
    k.extend_from_slice(sub);
    k.push(b'.');
    k.extend_from_slice(name.as_bytes());
    k.into()
}

/// `PATH` without empty or relative entries: git resolves `ssh-keygen`, `gpg`, helpers and
/// dashed commands through it, and an empty or `.` entry means the folder git runs in — the
/// repository.
pub fn absolute_path_entries(path: &OsStr) -> OsString {
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|p| p.is_absolute())
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> GitVersion {
        GitVersion::parse(s).unwrap()
    }

    /// The first-byte shortcut of `keeps` decides every name as the full lists do.
    #[test]
    fn keeps_shortcut_agrees_with_the_lists() {
        let mut opts = DefuseOptions::new(v("2.47.3"));
        opts.keep = vec!["GIT_DIR".into(), "PAGER".into()];
        // Also after `pass_through` (which adds kept names after `new`): names of a first byte
        // the construction's list did not have.
        let mut passed = Defused::new(opts.clone());
        passed.pass_through(&["VISUAL", "EDITOR", "MANPAGER"]);
        for d in [Defused::new(opts), passed] {
            let full = |name: &str| {
                d.opts.keep.iter().any(|k| k == name)
                    || (!catalogue::ENV
                        .iter()
                        .any(|e| catalogue::env_name_matches(e.name, name))
                        && (!(name.starts_with("GIT_")
                            || name.starts_with("GITWARD_CONFIG_VALUE_"))
                            || catalogue::ENV_GIT_HARMLESS.contains(&name)))
            };
            let mut names: Vec<String> = [
                "PATH",
                "HOME",
                "TERM",
                "USER",
                "LANG",
                "LC_ALL",
                "PWD",
                "SHELL",
                "PAGER",
                "EDITOR",
                "VISUAL",
                "LESS",
                "LESSOPEN",
                "LD_PRELOAD",
                "GCONV_PATH",
                "GIT_DIR",
                "GIT_AUTHOR_NAME",
                "GITWARD_CONFIG_VALUE_0",
                "GIT_TRACE2_EVENT",
                "XDG_CONFIG_HOME",
                "_",
                "G",
                "",
            ]
            .map(String::from)
            .to_vec();
            names.extend(catalogue::ENV.iter().map(|e| e.name.replace('*', "X")));
            // The per-first-byte rows: every row's own text, its prefix, a longer name, another
            // first byte (each may fall on a different row or none).
            names.extend(catalogue::ENV.iter().map(|e| e.name.to_owned()));
            names.extend(
                catalogue::ENV
                    .iter()
                    .map(|e| e.name.trim_end_matches('*').to_owned()),
            );
            names.extend(catalogue::ENV.iter().map(|e| format!("{}Z", e.name)));
            names.extend(catalogue::ENV.iter().map(|e| format!("X{}", e.name)));
            // Past the length table's last entry (63 and more bytes).
            names.extend(
                catalogue::ENV
                    .iter()
                    .map(|e| format!("{}{}", e.name.trim_end_matches('*'), "X".repeat(70))),
            );
            names.extend(catalogue::ENV.iter().map(|e| e.name.to_ascii_lowercase()));
            names.extend(catalogue::ENV_GIT_HARMLESS.iter().map(|n| (*n).to_owned()));
            for name in &names {
                assert_eq!(d.keeps(OsStr::new(name)), full(name), "{name}");
            }
            // Positive control: the table does rule names out (a name of each row is dropped).
            assert!(!d.keeps(OsStr::new("LD_PRELOAD")) && !d.keeps(OsStr::new("PYTHONPATH")));
            // Non-UTF-8 names: kept unless `GIT_`-prefixed, as before the byte comparison.
            assert!(d.keeps(OsStr::from_bytes(b"LD_\xff")));
            assert!(!d.keeps(OsStr::from_bytes(b"GIT_\xff")));
        }
    }

    #[test]
    fn fixed_set_contains_the_research_neutralisers() {
        let d = Defused::new(DefuseOptions::new(v("2.47.3")));
        let has = |k: &str, val: &str| d.config_pairs().iter().any(|(a, b)| a == k && b == val);
        assert!(has("core.fsmonitor", "false"));
        assert!(has("core.hooksPath", "/dev/null"));
        assert!(has("core.pager", "cat"));
        assert!(has("credential.helper", ""));
        assert!(has("gc.auto", "0"));
        assert!(has("maintenance.auto", "false"));
        assert!(has("log.showSignature", "false"));
        assert!(has("protocol.ext.allow", "never"));
        // Config hooks do not exist before 2.54.
        assert!(!d
            .config_pairs()
            .iter()
            .any(|(k, _)| k.starts_with_str("hook.")));
        let d = Defused::new(DefuseOptions::new(v("2.54.0")));
        let hooks = d
            .config_pairs()
            .iter()
            .filter(|(k, _)| k.starts_with_str("hook."))
            .count();
        assert_eq!(hooks, catalogue::HOOK_EVENTS.len());
    }

    /// Each variable of [`catalogue::BEATEN_BY_ENV`] beats a repository's value of its key on
    /// every git here, so dropping the pair changes nothing git does: with the variable the
    /// repository's program does not run (or is not the pager); without it (the positive
    /// control) it does. And the defused set drops exactly those pairs, only while it sets
    /// the variable (`pass_through`, for `git var`, puts the pair back).
    #[test]
    fn variables_beat_the_pairs_they_replace() {
        use std::os::unix::fs::PermissionsExt;
        const GITS: [&str; 2] = ["/usr/bin/git", "/usr/local/bin/git"];
        let mut d = Defused::new(DefuseOptions::new(GitVersion::new(2, 47, 0)));
        for (k, var) in catalogue::BEATEN_BY_ENV {
            assert!(d.beaten_by_env(k.as_bytes()), "{k}: {var} is set");
            assert!(
                d.set_vars().iter().any(|(n, _)| n == var),
                "{var} is in the set"
            );
        }
        let params = d.config_parameters(d.config_pairs(), None).unwrap();
        let params = params.to_string_lossy();
        assert!(!params.contains("core.pager") && !params.contains("protocol.ext.allow"));
        assert!(params.contains("core.fsmonitor"), "other pairs travel");
        d.pass_through(&["GIT_PAGER"]);
        let params = d.config_parameters(d.config_pairs(), None).unwrap();
        assert!(params.to_string_lossy().contains("'core.pager'='cat'"));
        let mut ran = 0;
        for g in GITS {
            if !Path::new(g).exists() {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "{g} is missing (CI=true: every git must be tested)"
                );
                eprintln!("SKIPPED for {g}: not installed on this machine");
                continue;
            }
            let t = tempfile::tempdir().unwrap();
            let repo = t.path().join("r");
            let marker = t.path().join("ran");
            let prog = t.path().join("prog");
            std::fs::write(
                &prog,
                format!(
                    "#!/bin/sh
touch '{}'
echo x
",
                    marker.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
            let git = |env: &[(&str, &str)], args: &[&str], stdin: &str| {
                use std::io::Write;
                let mut cmd = Command::new(g);
                cmd.env_clear()
                    .env("PATH", "/usr/bin:/bin")
                    .env("HOME", t.path())
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_TERMINAL_PROMPT", "0")
                    .current_dir(&repo)
                    .args(args)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                for (k, v) in env {
                    cmd.env(k, v);
                }
                let mut child = cmd.spawn().unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(stdin.as_bytes())
                    .unwrap();
                child.wait_with_output().unwrap()
            };
            std::fs::create_dir_all(&repo).unwrap();
            assert!(git(&[], &["init", "-q"], "").status.success());
            let p = prog.to_str().unwrap();
            for (k, v) in [
                ("core.pager", p),
                ("core.askPass", p),
                ("protocol.ext.allow", "always"),
            ] {
                assert!(git(&[], &["config", k, v], "").status.success());
            }
            // core.pager: the pager git would run is the variable's.
            let pager = |env: &[(&str, &str)]| {
                String::from_utf8(git(env, &["var", "GIT_PAGER"], "").stdout).unwrap()
            };
            assert_eq!(pager(&[("GIT_PAGER", "cat")]).trim(), "cat", "{g}");
            assert_eq!(pager(&[]).trim(), p, "{g}: control, the repository's pager");
            // core.askPass: a credential prompt runs no program with GIT_ASKPASS set empty.
            let ask = "protocol=https\nhost=example.invalid\n\n";
            let _ = git(&[("GIT_ASKPASS", "")], &["credential", "fill"], ask);
            assert!(!marker.exists(), "{g}: core.askPass ran under GIT_ASKPASS=");
            let _ = git(&[], &["credential", "fill"], ask);
            assert!(
                marker.exists(),
                "{g}: control, core.askPass runs without it"
            );
            std::fs::remove_file(&marker).unwrap();
            // protocol.ext.allow: the allow list alone decides.
            let ext = format!("ext::{p} %S");
            let _ = git(
                &[("GIT_ALLOW_PROTOCOL", "https:ssh:file")],
                &["ls-remote", &ext],
                "",
            );
            assert!(!marker.exists(), "{g}: ext:: ran under GIT_ALLOW_PROTOCOL");
            let _ = git(&[], &["ls-remote", &ext], "");
            assert!(marker.exists(), "{g}: control, ext:: runs without it");
            ran += 1;
        }
        assert!(ran > 0, "no git to test against");
    }

    /// `config_parameters` is byte for byte what git itself leaves in `GIT_CONFIG_PARAMETERS`
    /// after reading the same pairs as `-c`, after an inherited value; checked against each
    /// real git (an alias prints the variable; its own pair, pushed last, is cut off).
    #[test]
    fn config_parameters_are_what_git_builds_from_dash_c() {
        use std::os::unix::ffi::OsStringExt;
        const GITS: [&str; 2] = ["/usr/bin/git", "/usr/local/bin/git"];
        let mut ran = 0;
        for g in GITS {
            if !Path::new(g).exists() {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "{g} is missing (CI=true: every git must be tested)"
                );
                eprintln!("SKIPPED for {g}: not installed on this machine");
                continue;
            }
            let probe = GitProbe::probe(Path::new(g)).unwrap();
            let mut d = Defused::new(DefuseOptions::new(probe.version()));
            d.set_config("user.name", "it's a \"bang\"! $HOME `x`");
            d.set_config("Section.Sub Name.Key", "a=b");
            let inherited = "'user.email'='agent@example.com'";
            let mut cmd = Command::new(g);
            cmd.env_clear()
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("PATH", "/usr/bin:/bin")
                .env("GIT_CONFIG_PARAMETERS", inherited)
                .current_dir("/");
            for (k, v) in d.config_pairs().iter().filter(|(k, _)| !d.beaten_by_env(k)) {
                cmd.arg("-c").arg(format!("{k}={v}"));
            }
            let alias = "!printf %s \"$GIT_CONFIG_PARAMETERS\"";
            let out = cmd
                .arg("-c")
                .arg(format!("alias.e={alias}"))
                .arg("e")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{g}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut ours = d
                .config_parameters(d.config_pairs(), Some(OsStr::new(inherited)))
                .unwrap()
                .into_vec();
            ours.extend_from_slice(b" 'alias.e'=");
            sq_quote(&mut ours, alias.as_bytes());
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&ours),
                "{g}"
            );
            ran += 1;
        }
        assert!(ran > 0, "no git found at {GITS:?}");
        // Before 2.31 git pushed the pair whole.
        let d = Defused::new(DefuseOptions::new(v("2.30.0"))).without_config();
        let pairs = [("a.b".to_owned(), "it's".to_owned())];
        assert_eq!(
            d.config_parameters(&pairs, None).unwrap(),
            OsStr::new("'a.b=it'\\''s'")
        );
        let none: [(String, String); 0] = [];
        assert_eq!(d.config_parameters(&none, None), None);
        assert_eq!(
            d.config_parameters(&none, Some(OsStr::new(""))),
            Some(OsString::new())
        );
    }

    #[test]
    fn per_name_neutralisers() {
        let mut d = Defused::new(DefuseOptions::new(v("2.47.3")));
        d.neutralise_name("filter", "Evil").unwrap();
        d.neutralise_name("diff", "x").unwrap();
        d.neutralise_name("hook", "h").unwrap();
        let has = |k: &str, val: &str| d.config_pairs().iter().any(|(a, b)| a == k && b == val);
        assert!(has("filter.Evil.clean", ""));
        assert!(has("filter.Evil.smudge", ""));
        assert!(has("filter.Evil.process", ""));
        assert!(has("filter.Evil.required", "false"));
        assert!(has("diff.x.textconv", ""));
        assert!(has("diff.x.command", ""));
        // hook.<name> only from 2.54.
        assert!(!d
            .config_pairs()
            .iter()
            .any(|(k, _)| k.starts_with_str("hook.h.")));
        let mut d = Defused::new(DefuseOptions::new(v("2.54.1")));
        d.neutralise_name("hook", "h").unwrap();
        assert!(d
            .config_pairs()
            .iter()
            .any(|(a, b)| a == "hook.h.enabled" && b == "false"));
        assert!(d.neutralise_name("filter", "a\nb").is_err());
    }

    #[test]
    fn untrusted_per_name_keys_are_neutralised_and_trusted_ones_kept() {
        let mut d = Defused::new(DefuseOptions::new(v("2.47.3")));
        let values = [
            // The owner's git-lfs, untouched by the repository.
            ("filter.lfs.clean", Some("git-lfs clean -- %f"), true),
            ("filter.lfs.required", Some("true"), true),
            // The owner's textconv, overridden by the repository: the owner's value wins.
            ("diff.pdf.textconv", Some("pdftotext"), true),
            ("diff.pdf.textconv", Some("evil"), false),
            // A driver only the repository defines.
            ("filter.Evil.clean", Some("evil"), false),
            ("filter.Evil.required", None, false),
            ("user.name", Some("x"), false),
        ];
        d.neutralise_untrusted(values.map(|(k, v, t)| (k.as_bytes(), v, t)))
            .unwrap();
        let get = |k: &str| {
            d.config_pairs()
                .iter()
                .rev()
                .find(|(a, _)| a == k)
                .map(|(_, b)| b.clone())
        };
        assert_eq!(get("filter.lfs.clean"), None);
        assert_eq!(get("diff.pdf.textconv").as_deref(), Some("pdftotext"));
        assert_eq!(get("filter.Evil.clean").as_deref(), Some(""));
        assert_eq!(get("filter.Evil.required").as_deref(), Some("false"));
        assert_eq!(get("user.name"), None);
    }

    /// git takes any byte but newline and NUL in a subsection (`[filter "\xff"]`), and an
    /// argument carries bytes: the neutraliser names exactly that driver, never a lossy copy
    /// of its name (which would leave the real one armed).
    #[test]
    fn non_utf8_names_are_neutralised_by_their_bytes() {
        let mut d = Defused::new(DefuseOptions::new(v("2.47.3")));
        let values: [(&[u8], Option<&str>, bool); 2] = [
            (b"filter.\xff.clean", Some("evil"), false),
            (b"diff.a\xfeb.textconv", Some("evil"), false),
        ];
        d.neutralise_untrusted(values).unwrap();
        d.neutralise_name("merge", b"m\xff").unwrap();
        // The pairs travel in `GIT_CONFIG_PARAMETERS`, shell-quoted as git itself quotes `-c`.
        let env = d.child_env(Vec::new());
        let params = env
            .iter()
            .find(|(k, _)| k == "GIT_CONFIG_PARAMETERS")
            .map(|(_, v)| v.as_bytes().to_vec())
            .expect("GIT_CONFIG_PARAMETERS is set");
        let has = |a: &[u8]| params.windows(a.len()).any(|w| w == a);
        assert!(has(b"'filter.\xff.clean'=''"));
        assert!(has(b"'filter.\xff.required'='false'"));
        assert!(has(b"'diff.a\xfeb.textconv'=''"));
        assert!(has(b"'merge.m\xff.driver'=''"));
        // No lossy copy (U+FFFD's UTF-8 bytes) of any name.
        let fffd = "\u{fffd}".as_bytes();
        assert!(!has(fffd));
    }

    #[test]
    fn names_with_equals_use_config_env() {
        let mut d = Defused::new(DefuseOptions::new(v("2.47.3")));
        d.neutralise_name("filter", "a=b").unwrap();
        let (args, extra) = d.config_args();
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let ce = args
            .iter()
            .find(|a| a.starts_with("--config-env=filter.a=b.clean="))
            .unwrap();
        let var = ce.rsplit('=').next().unwrap();
        assert!(extra.iter().any(|(k, v)| k == var && v.is_empty()));
        // The extra variable reaches the child even though it is not inherited; every other
        // pair is in GIT_CONFIG_PARAMETERS, none of them as an argument.
        let env = d.child_env(Vec::new());
        assert!(env.iter().any(|(k, _)| k == var));
        let params = env
            .iter()
            .find(|(k, _)| k == "GIT_CONFIG_PARAMETERS")
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .unwrap();
        assert!(params.contains("'core.fsmonitor'='false'"), "{params}");
        assert!(!params.contains("a=b"), "{params}");
        assert!(
            args.iter()
                .all(|a| a.starts_with("--config-env=filter.a=b.")),
            "{args:?}"
        );
    }

    #[test]
    fn trusted_values_are_reasserted() {
        let mut d = Defused::new(DefuseOptions::new(v("2.47.3")));
        let mut t = BTreeMap::new();
        t.insert("log.showsignature".to_owned(), "true".to_owned());
        t.insert("core.fsmonitor".to_owned(), "/owner/hook".to_owned());
        d.reassert_trusted(&t);
        let get = |k: &str| {
            d.config_pairs()
                .iter()
                .rev()
                .find(|(a, _)| a == k)
                .map(|(_, b)| b.clone())
        };
        assert_eq!(get("log.showSignature").as_deref(), Some("true"));
        // core.fsmonitor is `Set`, not `TrustedOr`: never re-asserted.
        assert_eq!(get("core.fsmonitor").as_deref(), Some("false"));
    }

    #[test]
    fn inherited_git_variables_are_dropped_unless_harmless() {
        let d = Defused::new(DefuseOptions {
            keep: vec!["GIT_DIR".into()],
            ..DefuseOptions::new(v("2.47.3"))
        });
        let inherited = [
            ("GIT_CONFIG_PARAMETERS", "'core.pager'='evil'"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_EXTERNAL_DIFF", "/evil"),
            ("GIT_SOMETHING_NEW", "x"),
            ("GIT_AUTHOR_NAME", "A"),
            ("GIT_DIR", "/r/.git"),
            ("LD_PRELOAD", "/evil.so"),
            ("BASH_ENV", "/evil.sh"),
            ("HOME", "/home/u"),
        ]
        .map(|(a, b)| (OsString::from(a), OsString::from(b)));
        let env = d.child_env(inherited);
        let get = |k: &str| {
            env.iter()
                .find(|(a, _)| a == k)
                .map(|(_, b)| b.to_string_lossy().into_owned())
        };
        // The inherited command-scope config is gone; the variable holds only the defused set.
        let own = d.config_parameters(d.config_pairs(), None).unwrap();
        assert_eq!(
            get("GIT_CONFIG_PARAMETERS"),
            Some(own.to_string_lossy().into_owned())
        );
        assert!(!own.to_string_lossy().contains("evil"));
        assert_eq!(get("GIT_CONFIG_COUNT"), None);
        assert_eq!(get("GIT_EXTERNAL_DIFF"), None);
        assert_eq!(get("GIT_SOMETHING_NEW"), None);
        assert_eq!(get("GIT_AUTHOR_NAME").as_deref(), Some("A"));
        assert_eq!(get("GIT_DIR").as_deref(), Some("/r/.git"));
        assert_eq!(get("LD_PRELOAD"), None);
        assert_eq!(get("BASH_ENV"), None);
        assert_eq!(get("HOME").as_deref(), Some("/home/u"));
        assert_eq!(get("GIT_PAGER").as_deref(), Some("cat"));
        assert_eq!(get("GIT_ALLOW_PROTOCOL").as_deref(), Some(""));
        assert_eq!(get("GIT_NO_LAZY_FETCH").as_deref(), Some("1"));
    }

    #[test]
    fn system_config_location_follows_the_prefix() {
        assert_eq!(
            system_config_for(Path::new("/usr/lib/git-core")),
            PathBuf::from("/etc/gitconfig")
        );
        assert_eq!(
            system_config_for(Path::new("/usr/local/libexec/git-core")),
            PathBuf::from("/usr/local/etc/gitconfig")
        );
    }

    /// `Defused::new` reads the catalogue through `shim::packed` (rows without pointers); its
    /// pairs and variables are those of the same function over `catalogue::KEYS`/`ENV`
    /// themselves (the code it replaced, kept here as the reference), for gits before and
    /// after each version gate of the catalogue.
    #[test]
    fn defused_set_is_the_catalogues() {
        type Pairs = Vec<(BString, String)>;
        type Vars = Vec<(String, OsString)>;
        fn reference(version: GitVersion) -> (Pairs, Vars) {
            let mut config: Vec<(BString, String)> = Vec::new();
            for e in catalogue::KEYS {
                if e.since.is_some_and(|v| version < v) {
                    continue;
                }
                match (e.key, e.neutraliser) {
                    (KeyPattern::Key { section, name }, Neutraliser::Set { value })
                    | (KeyPattern::Key { section, name }, Neutraliser::TrustedOr { value })
                    | (KeyPattern::AnyScope { section, name }, Neutraliser::Set { value })
                    | (KeyPattern::AnyScope { section, name }, Neutraliser::TrustedOr { value }) => {
                        config.push((format!("{section}.{name}").into(), value.to_owned()));
                    }
                    _ => {}
                }
            }
            for key in catalogue::SCOPED_KEYS {
                let neutral = catalogue::lookup(key).find_map(|e| match e.neutraliser {
                    Neutraliser::Set { value } | Neutraliser::TrustedOr { value } => Some(value),
                    _ => None,
                });
                if let Some(value) = neutral {
                    config.push(((*key).into(), value.to_owned()));
                }
            }
            if version >= CONFIG_HOOKS_SINCE {
                for ev in catalogue::HOOK_EVENTS {
                    config.push((format!("hook.{ev}.enabled").into(), "false".to_owned()));
                }
            }
            for (k, v) in catalogue::ALWAYS_SET {
                config.push(((*k).into(), (*v).to_owned()));
            }
            let mut env: Vec<(String, OsString)> = catalogue::ENV
                .iter()
                .filter_map(|e| match e.action {
                    catalogue::EnvAction::Set { value } => {
                        Some((e.name.to_owned(), OsString::from(value)))
                    }
                    catalogue::EnvAction::Remove => None,
                })
                .collect();
            env.push(("GIT_ALLOW_PROTOCOL".into(), "".into()));
            (config, env)
        }
        let mut versions: Vec<GitVersion> =
            vec![GitVersion::new(2, 0, 0), GitVersion::new(9, 0, 0)];
        for e in catalogue::KEYS {
            if let Some(v) = e.since {
                versions.push(v);
                versions.push(GitVersion::new(v.major, v.minor.saturating_sub(1), 0));
            }
        }
        versions.push(CONFIG_HOOKS_SINCE);
        let mut hook_pairs_seen = false;
        for v in versions {
            let d = Defused::new(DefuseOptions::new(v));
            let (config, env) = reference(v);
            assert_eq!(d.config_pairs(), config.as_slice(), "{v:?}");
            assert_eq!(d.set_env, env, "{v:?}");
            hook_pairs_seen |= config.iter().any(|(k, _)| k.starts_with(b"hook."));
        }
        assert!(
            hook_pairs_seen,
            "control: a version with the hook switches was tried"
        );
    }

    /// `read_small` (no `fstat` for a size hint) returns what `std::fs::read` returns: the
    /// same bytes for an empty file, a one-read file and one longer than its buffer (several
    /// reads), and an error of the same kind where `fs::read` fails.
    #[test]
    fn read_small_refuses_a_fifo_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("pin");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Positive control: a plain open of the FIFO blocks (no writer), so the test would
        // catch a blocking read; it is run on a thread that is left behind.
        let (tx, rx) = std::sync::mpsc::channel();
        let f2 = fifo.clone();
        std::thread::spawn(move || {
            let _ = std::fs::File::open(&f2);
            let _ = tx.send(());
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(300))
            .is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        let f3 = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(read_small(&f3).map_err(|e| e.kind()));
        });
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("read_small blocked on a FIFO");
        assert_eq!(r, Err(std::io::ErrorKind::InvalidData));
        // A folder is not a regular file either.
        assert!(read_small(t.path()).is_err());
        // Unblock the left-behind plain open.
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&fifo);
    }

    #[test]
    fn read_small_reads_what_fs_read_reads() {
        let t = tempfile::tempdir().unwrap();
        for (name, len) in [
            ("empty", 0usize),
            ("pin", 29),
            ("buffer", 4096),
            ("long", 10_007),
            ("past the buffer cap", 64 * 1024),
            ("far past the buffer cap", 200_003),
        ] {
            let f = t.path().join(name);
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            std::fs::write(&f, &bytes).unwrap();
            assert_eq!(read_small(&f).unwrap(), bytes, "{name}");
            assert_eq!(
                read_small(&f).unwrap(),
                std::fs::read(&f).unwrap(),
                "{name}"
            );
        }
        // A regular file whose `fstat` size is not its length (procfs says 0): read to its
        // end, not stopped at the size.
        let proc_version = Path::new("/proc/version");
        let whole = std::fs::read(proc_version).unwrap();
        assert!(!whole.is_empty() && proc_version.metadata().unwrap().len() == 0);
        assert_eq!(read_small(proc_version).unwrap(), whole);
        for bad in [t.path().join("missing"), t.path().to_path_buf()] {
            let ours = read_small(&bad).unwrap_err().kind();
            let std = std::fs::read(&bad).unwrap_err().kind();
            assert_eq!(ours, std, "{}", bad.display());
        }
    }

    /// rt30 W3: a `git` before the running binary's own entry on `PATH` (a wrapper that runs
    /// "the next git after itself", i.e. the shim again) is never taken; the first one after
    /// it is. Without the running binary on `PATH`, the first `git` (as before); with nothing
    /// after its entry, none.
    #[test]
    fn the_real_git_is_searched_after_the_shims_own_entry() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let dirs = ["wrap", "me", "link", "real", "later"].map(|d| t.path().join(d));
        for d in &dirs {
            std::fs::create_dir(d).unwrap();
        }
        let [wrap, me_dir, link, real, later] = &dirs;
        let me = me_dir.join("git");
        for (f, body) in [
            (wrap.join("git"), "wrapper"),
            (me.clone(), "shim"),
            (real.join("git"), "real git"),
            (later.join("git"), "later git"),
        ] {
            std::fs::write(&f, body).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::hard_link(&me, link.join("git")).unwrap();
        let find = |order: &[&PathBuf]| {
            let path = std::env::join_paths(order).unwrap();
            find_real_git_from(Some(&me), None, Some(&path))
        };
        // The wrapper before the shim is skipped (it was taken before the fix: the loop).
        assert_eq!(find(&[wrap, me_dir, real]).unwrap(), real.join("git"));
        // A hard link of the shim after the first entry: still itself, skipped.
        assert_eq!(find(&[wrap, me_dir, link, real]).unwrap(), real.join("git"));
        assert_eq!(
            find(&[wrap, link, me_dir, real, later]).unwrap(),
            real.join("git")
        );
        // Control: the shim not on PATH (run by its path): the first git, the wrapper.
        assert_eq!(find(&[wrap, real]).unwrap(), wrap.join("git"));
        // The shim first (agent-shell, --install): the next git, as before.
        assert_eq!(find(&[me_dir, real, wrap]).unwrap(), real.join("git"));
        // Nothing after the shim's entry: no real git (the wrapper before it is not taken).
        assert!(matches!(
            find(&[wrap, real, me_dir]),
            Err(GitError::NotFound)
        ));
        // The running binary unknown: the first git, as before.
        let path = std::env::join_paths([wrap, me_dir, real]).unwrap();
        assert_eq!(
            find_real_git_from(None, None, Some(&path)).unwrap(),
            wrap.join("git")
        );
    }

    /// The metadata `find_real_git_with_metadata` returns is that of the path it returns (the
    /// stat the probe cache is keyed by), and the running binary is still refused, named
    /// explicitly or met on `PATH` (also as a hard link).
    #[test]
    fn found_git_metadata_is_the_path_found() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let t = tempfile::tempdir().unwrap();
        let (me_dir, other, real) = (t.path().join("me"), t.path().join("b"), t.path().join("r"));
        for d in [&me_dir, &other, &real] {
            std::fs::create_dir(d).unwrap();
        }
        let me = me_dir.join("git");
        std::fs::write(&me, "shim").unwrap();
        std::fs::hard_link(&me, other.join("git")).unwrap();
        let git = real.join("git");
        std::fs::write(&git, "real git").unwrap();
        for f in [&me, &git] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let same = |md: &std::fs::Metadata, p: &Path| {
            let fresh = std::fs::metadata(p).unwrap();
            (md.dev(), md.ino(), md.size(), md.mtime(), md.mtime_nsec())
                == (
                    fresh.dev(),
                    fresh.ino(),
                    fresh.size(),
                    fresh.mtime(),
                    fresh.mtime_nsec(),
                )
        };
        // PATH: the shim and its hard link are skipped, the real git found with its own stat.
        let path = std::env::join_paths([&me_dir, &other, &real]).unwrap();
        let (found, md) = find_real_git_with_metadata(Some(&me), None, Some(&path)).unwrap();
        assert_eq!(found, git);
        assert!(same(md.as_ref().unwrap(), &git));
        assert!(
            !same(md.as_ref().unwrap(), &me),
            "control: another file's stat differs"
        );
        // Explicit: its own stat; the shim (or its link) named explicitly is refused.
        let (found, md) = find_real_git_with_metadata(Some(&me), Some(&git), None).unwrap();
        assert_eq!(found, git);
        assert!(same(md.as_ref().unwrap(), &git));
        for p in [me.clone(), other.join("git")] {
            assert!(matches!(
                find_real_git_with_metadata(Some(&me), Some(&p), None),
                Err(GitError::IsSelf { .. })
            ));
        }
        // Unknown running binary: the explicit path as given, no stat made.
        let (found, md) = find_real_git_with_metadata(None, Some(&git), None).unwrap();
        assert_eq!((found, md.is_none()), (git.clone(), true));
        // A PATH holding only the shim: no real git.
        let path = std::env::join_paths([&me_dir]).unwrap();
        assert_eq!(
            find_real_git_from(Some(&me), None, Some(&path))
                .unwrap_err()
                .to_string(),
            GitError::NotFound.to_string()
        );
    }

    /// `probe_cached_with` reads the cache entry `probe_cached` names from its own `stat`: the
    /// key is the metadata passed; the metadata of another file names another entry (here: none,
    /// so it probes, and the fake git cannot run).
    #[test]
    fn probe_cache_key_from_the_metadata_passed() {
        let t = tempfile::tempdir().unwrap();
        let git = t.path().join("fake-git");
        std::fs::write(&git, "not a program").unwrap();
        let other = t.path().join("other");
        std::fs::write(&other, "another file").unwrap();
        let dir = t.path().join("probe");
        std::fs::create_dir(&dir).unwrap();
        let p = GitProbe {
            path: git.clone(),
            version: GitVersionRepr(2, 47, 3),
            exec_path: PathBuf::from("/x/libexec/git-core"),
            system_config: PathBuf::from("/x/etc/gitconfig"),
        };
        // The entry written where probe_cached would look: found by its own stat.
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(&git).unwrap();
        let name = format!(
            "probe-{:x}-{:x}-{:x}-{:x}.json",
            md.dev(),
            md.ino(),
            md.size(),
            md.mtime()
        );
        std::fs::write(dir.join(name), serde_json::to_vec(&p).unwrap()).unwrap();
        assert_eq!(GitProbe::probe_cached(&git, Some(&dir)).unwrap(), p);
        assert_eq!(
            GitProbe::probe_cached_with(&git, Some(&md), Some(&dir)).unwrap(),
            p
        );
        // No metadata: the same, through probe_cached's own stat.
        assert_eq!(
            GitProbe::probe_cached_with(&git, None, Some(&dir)).unwrap(),
            p
        );
        // Another file's metadata: another key, no entry, a probe of the fake git fails.
        let md_other = std::fs::metadata(&other).unwrap();
        assert!(GitProbe::probe_cached_with(&git, Some(&md_other), Some(&dir)).is_err());
    }

    #[test]
    fn probes_the_installed_gits() {
        for g in ["/usr/bin/git", "/usr/local/bin/git"] {
            if Path::new(g).exists() {
                let p = GitProbe::probe(Path::new(g)).unwrap();
                assert!(p.version() >= GitVersion::new(2, 0, 0));
                assert!(p.exec_path.is_absolute());
            }
        }
    }
}
