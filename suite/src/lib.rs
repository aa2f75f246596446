//! The attack-corpus runner behind `gitward-corpus` and `suite/tests/corpus.rs`.
//!
//! Every case in `fixtures/attacks/*.toml` plants ONE way for a repository (or the caller's
//! environment) to make git run a program, and names the command that triggers it. The
//! planted program appends to a canary file. For every case and every git on the machine the
//! runner does three things, each in a fresh workspace built by the case's `setup`:
//!
//! 1. **positive control**: the trigger under plain git. The canary MUST fire; if it does not,
//!    the case is BROKEN on that git (proof that the attack is real is missing), and the run
//!    fails. A case whose `min_git`/`max_git`/`requires` rule it out is SKIPPED with its
//!    reason, never passed.
//! 2. **safe-git**: the same argv and environment through `safe-git --git <that git>`. The
//!    canary must NOT fire. safe-git's exit code is recorded (121/122/123 = refused).
//! 3. **audit**: `wt-check audit --format json <path>`; exit 1 = flagged. Cases whose vector
//!    is the caller's environment say `audit = "n/a: …"`.
//!
//! Isolation: each run gets its own temporary folder holding the workspace, a `HOME` whose
//! `.gitconfig` has only `user.name`/`user.email`, and the canary (outside the workspace).
//! `setup` runs with `GIT_CONFIG_NOSYSTEM=1`; the trigger does not (safe-git must see the
//! real system config path). Every child runs in its own process group under a timeout; a
//! hung child is killed with its group and reported as a failure that says so.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Errors of the runner itself (not of a case's outcome).
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {rule}")]
    Invalid { path: PathBuf, rule: String },
    #[error(
        "no git found (looked at /usr/bin/git, /usr/local/bin/git and PATH); name one with --git"
    )]
    NoGit,
    #[error("{path}: not a usable git: {reason}")]
    BadGit { path: PathBuf, reason: String },
    #[error("cannot create a temporary folder: {0}")]
    Temp(std::io::Error),
}

/// A git version `(major, minor, patch)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Version(pub u16, pub u16, pub u16);

impl Version {
    /// Parse `2.47.3`, `git version 2.39.5`, `2.55.GIT`.
    pub fn parse(s: &str) -> Option<Version> {
        let v = gitward::catalogue::GitVersion::parse(s)?;
        Some(Version(v.major, v.minor, v.patch))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// One attack case, as written in `fixtures/attacks/<row>-<name>.toml`. The schema is
/// documented in `fixtures/attacks/README.md`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Equal to the file name without `.toml`; starts with the research row (`1a-…`).
    pub id: String,
    pub title: String,
    /// The research row it covers, e.g. `§1d filter.<driver>.clean`.
    pub research: String,
    /// Bash run in the fresh workspace (`$WS`, `$REPO`, `$CANARY`, `$GIT`, `$FIRE`, helpers).
    pub setup: String,
    /// The git argv that triggers the vector (without `git`).
    pub command: Vec<String>,
    /// Folder to run the trigger in; default `$REPO`.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment for the trigger (the caller's environment cases).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Run the trigger with stdout on a terminal (`script -qec … /dev/null`).
    #[serde(default)]
    pub tty: bool,
    /// Lowest git version the vector fires on (inclusive), with `version_reason`.
    #[serde(default)]
    pub min_git: Option<String>,
    /// Highest git version the vector fires on (inclusive), with `version_reason`.
    #[serde(default)]
    pub max_git: Option<String>,
    #[serde(default)]
    pub version_reason: Option<String>,
    /// Programs that must be on PATH (e.g. `man`); a missing one skips the case.
    #[serde(default)]
    pub requires: Vec<String>,
    /// `"n/a: <reason>"` when a repository audit cannot see the vector.
    #[serde(default)]
    pub audit: Option<String>,
    /// What to audit; default `$REPO`.
    #[serde(default)]
    pub audit_path: Option<String>,
    /// Bytes fed to the trigger's standard input (default: none, stdin is `/dev/null`).
    #[serde(default)]
    pub stdin: Option<String>,
    /// Set when the trigger is outside safe-git's allow-list: safe-git must refuse it.
    #[serde(default)]
    pub expect_refusal: bool,
}

impl Case {
    fn min(&self) -> Option<Version> {
        self.min_git.as_deref().and_then(Version::parse)
    }
    fn max(&self) -> Option<Version> {
        self.max_git.as_deref().and_then(Version::parse)
    }
    /// The research row prefix of the id (`1a`, `2b`, `3.1`…).
    pub fn row(&self) -> &str {
        self.id.split('-').next().unwrap_or("")
    }
    /// Why this case cannot run on `git`, if it cannot.
    pub fn skip_reason(&self, git: Version) -> Option<String> {
        let why = || {
            self.version_reason
                .clone()
                .unwrap_or_else(|| "version range".into())
        };
        if let Some(min) = self.min() {
            if git < min {
                return Some(format!("needs git >= {min}: {}", why()));
            }
        }
        if let Some(max) = self.max() {
            if git > max {
                return Some(format!("needs git <= {max}: {}", why()));
            }
        }
        if self.tty && which("script").is_none() {
            return Some("needs script(1) (util-linux) to give the trigger a terminal".into());
        }
        for prog in &self.requires {
            if which(prog).is_none() {
                return Some(format!("needs `{prog}` on PATH"));
            }
        }
        None
    }
    fn audit_na(&self) -> Option<&str> {
        self.audit
            .as_deref()
            .filter(|a| a.starts_with("n/a"))
            .map(|a| a.trim_start_matches("n/a").trim_start_matches(':').trim())
    }
}

/// Load and validate every `*.toml` in `dir`, sorted by id.
pub fn load_cases(dir: &Path) -> Result<Vec<Case>, CorpusError> {
    let rd = std::fs::read_dir(dir).map_err(|source| CorpusError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut cases = Vec::new();
    for ent in rd {
        let ent = ent.map_err(|source| CorpusError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = ent.path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| CorpusError::Read {
            path: path.clone(),
            source,
        })?;
        let case: Case = toml::from_str(&text).map_err(|e| CorpusError::Parse {
            path: path.clone(),
            message: e.to_string().replace('\n', " "),
        })?;
        validate(&case, &path)?;
        cases.push(case);
    }
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(cases)
}

fn validate(case: &Case, path: &Path) -> Result<(), CorpusError> {
    let bad = |rule: &str| {
        Err(CorpusError::Invalid {
            path: path.to_path_buf(),
            rule: rule.to_owned(),
        })
    };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if case.id != stem {
        return bad("id: must equal the file name without .toml");
    }
    let row = case.row();
    if !row.starts_with(|c: char| c.is_ascii_digit()) {
        return bad("id: must start with the research row, e.g. 1a-");
    }
    if case.command.is_empty() {
        return bad("command: must name the git argv that triggers the vector");
    }
    if (case.min_git.is_some() || case.max_git.is_some()) && case.version_reason.is_none() {
        return bad("version_reason: required with min_git/max_git");
    }
    for v in case.min_git.iter().chain(case.max_git.iter()) {
        if Version::parse(v).is_none() {
            return bad("min_git/max_git: not a version like 2.47.0");
        }
    }
    if let Some(a) = &case.audit {
        if !a.starts_with("n/a:") {
            return bad("audit: only \"n/a: <reason>\" is allowed (the default is: audited)");
        }
    }
    if !["$FIRE", "plant", "$CANARY"]
        .iter()
        .any(|w| case.setup.contains(w))
    {
        return bad("setup: must plant a program that writes the canary ($FIRE, plant or $CANARY)");
    }
    Ok(())
}

/// A git binary under test.
#[derive(Debug, Clone, Serialize)]
pub struct GitBin {
    pub path: PathBuf,
    pub version: Version,
}

fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Probe one git: `git version` under an empty environment.
pub fn probe_git(path: &Path) -> Result<GitBin, CorpusError> {
    let out = Command::new(path)
        .arg("version")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CorpusError::BadGit {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = Version::parse(&text)
        .filter(|_| text.starts_with("git version "))
        .ok_or_else(|| CorpusError::BadGit {
            path: path.to_path_buf(),
            reason: format!("`git version` printed {:?}", text.trim()),
        })?;
    Ok(GitBin {
        path: path.to_path_buf(),
        version,
    })
}

/// Whether `p` is a copy of the `git-shim` built next to this executable (same bytes).
fn is_copy_of_shim(p: &Path) -> bool {
    let Some(shim) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("git-shim")))
    else {
        return false;
    };
    match (std::fs::metadata(p), std::fs::metadata(&shim)) {
        (Ok(a), Ok(b)) if a.len() == b.len() => {
            matches!((std::fs::read(p), std::fs::read(&shim)), (Ok(x), Ok(y)) if x == y)
        }
        _ => false,
    }
}

/// Every git on the machine: `/usr/bin/git`, `/usr/local/bin/git`, every `git` on `PATH`,
/// minus gitward's own shim (a `git` whose real path's file name is not `git`, e.g. a link
/// to `git-shim`, or a copy of the `git-shim` built beside this runner), deduplicated by
/// real path. `explicit` (from `--git`) replaces the search.
pub fn find_gits(explicit: &[PathBuf]) -> Result<Vec<GitBin>, CorpusError> {
    let mut cands: Vec<PathBuf> = Vec::new();
    if explicit.is_empty() {
        cands.push("/usr/bin/git".into());
        cands.push("/usr/local/bin/git".into());
        if let Some(path) = std::env::var_os("PATH") {
            for d in std::env::split_paths(&path) {
                if d.is_absolute() {
                    cands.push(d.join("git"));
                }
            }
        }
    } else {
        cands.extend(explicit.iter().cloned());
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut gits = Vec::new();
    for c in cands {
        if !is_executable(&c) {
            if !explicit.is_empty() {
                return Err(CorpusError::BadGit {
                    path: c,
                    reason: "not an executable file".into(),
                });
            }
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&c) else {
            continue;
        };
        let is_git_name = real.file_name().is_some_and(|n| n == "git");
        if (!is_git_name || is_copy_of_shim(&real)) && explicit.is_empty() {
            continue; // gitward's shim installed as `git` (or another wrapper)
        }
        if !seen.insert(real.clone()) {
            continue;
        }
        gits.push(probe_git(&c)?);
    }
    if gits.is_empty() {
        return Err(CorpusError::NoGit);
    }
    gits.sort_by(|a, b| a.version.cmp(&b.version).then(a.path.cmp(&b.path)));
    Ok(gits)
}

/// Whether a gitward tool can take part in the run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Tool {
    Ready {
        path: PathBuf,
    },
    /// Missing, or a stub that does nothing (exit 0, no output).
    NotBuilt {
        path: PathBuf,
        reason: String,
    },
    /// Built, but wrong on an honest repository (safe-git's output differs from git's, the
    /// audit flags a clean repository): every result through it would mean nothing, so each
    /// case fails with this reason.
    Unusable {
        path: PathBuf,
        reason: String,
    },
    Disabled,
}

impl Tool {
    pub fn is_ready(&self) -> bool {
        matches!(self, Tool::Ready { .. })
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tool::Ready { path } => write!(f, "{}", path.display()),
            Tool::NotBuilt { path, reason } => {
                write!(f, "not built ({}: {reason})", path.display())
            }
            Tool::Unusable { path, reason } => {
                write!(f, "UNUSABLE ({}: {reason})", path.display())
            }
            Tool::Disabled => write!(f, "disabled"),
        }
    }
}

/// Run-wide options.
#[derive(Debug, Clone)]
pub struct Options {
    pub jobs: usize,
    /// Per-child time limit (setup, trigger, audit).
    pub timeout: Duration,
    /// Keep every case's temporary folder (for debugging a case); their paths are printed.
    pub keep: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            jobs: 2,
            timeout: Duration::from_secs(120),
            keep: false,
        }
    }
}

/// A small honest repository for probing the tools.
fn honest_repo(git: &GitBin, timeout: Duration) -> Result<(tempfile::TempDir, Workspace), String> {
    let t = tempfile::Builder::new()
        .prefix("gitward-probe-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let ws = Workspace::create(t.path(), git).map_err(|e| e.to_string())?;
    let script = "git init -q -b main \"$REPO\" && cd \"$REPO\" && echo a > a && git add a && git commit -qm init";
    let r = ws.setup(script, timeout);
    if !r.ok() {
        return Err(format!("probe setup failed: {}", r.describe()));
    }
    Ok((t, ws))
}

/// Probe safe-git: in an honest repository, `safe-git --git G rev-parse --show-toplevel`
/// must print what git prints. A stub (exit 0, no output) is "not built".
pub fn probe_safe_git(path: &Path, git: &GitBin, timeout: Duration) -> Tool {
    let not_built = |reason: String| Tool::NotBuilt {
        path: path.to_path_buf(),
        reason,
    };
    if !is_executable(path) {
        return not_built("no such executable; run `cargo build --workspace`".into());
    }
    let (_t, ws) = match honest_repo(git, timeout) {
        Ok(x) => x,
        Err(e) => return not_built(e),
    };
    let repo = &ws.repo;
    let env = base_env(&ws.home, git);
    let plain = run_child(
        Command::new(&git.path)
            .args(["rev-parse", "--show-toplevel"])
            .current_dir(repo),
        &env,
        timeout,
    );
    let safe = run_child(
        Command::new(path)
            .arg("--git")
            .arg(&git.path)
            .args(["rev-parse", "--show-toplevel"])
            .current_dir(repo),
        &env,
        timeout,
    );
    if safe.status == plain.status && safe.stdout == plain.stdout && !plain.stdout.is_empty() {
        Tool::Ready {
            path: path.to_path_buf(),
        }
    } else {
        let probe = format!(
            "`safe-git --git {} rev-parse --show-toplevel` in an honest repository",
            git.path.display()
        );
        if safe.ok() && safe.stdout.is_empty() {
            not_built(format!(
                "{probe}: exits 0 and prints nothing (a stub, not a working safe-git)"
            ))
        } else {
            Tool::Unusable {
                path: path.to_path_buf(),
                reason: format!(
                    "{probe}: printed {:?} (git printed {:?}); {}",
                    String::from_utf8_lossy(&safe.stdout).trim(),
                    String::from_utf8_lossy(&plain.stdout).trim(),
                    safe.describe()
                ),
            }
        }
    }
}

/// Probe `wt-check audit`: on an honest repository it must print JSON and exit 0.
pub fn probe_wt_check(path: &Path, git: &GitBin, timeout: Duration) -> Tool {
    let not_built = |reason: String| Tool::NotBuilt {
        path: path.to_path_buf(),
        reason,
    };
    if !is_executable(path) {
        return not_built("no such executable".into());
    }
    let (_t, ws) = match honest_repo(git, timeout) {
        Ok(x) => x,
        Err(e) => return not_built(e),
    };
    let repo = &ws.repo;
    let env = base_env(&ws.home, git);
    let r = run_child(
        Command::new(path)
            .args(["audit", "--format", "json"])
            .arg(repo),
        &env,
        timeout,
    );
    let json_ok = serde_json::from_slice::<serde_json::Value>(&r.stdout).is_ok();
    let probe = "`wt-check audit --format json` on an honest repository";
    if r.ok() && json_ok {
        Tool::Ready {
            path: path.to_path_buf(),
        }
    } else if r.ok() && r.stdout.is_empty() {
        not_built(format!(
            "{probe}: exits 0 and prints nothing (a stub, audit not built yet)"
        ))
    } else if r.status == Some(1) && json_ok {
        Tool::Unusable {
            path: path.to_path_buf(),
            reason: format!(
                "{probe}: flags it (exit 1): {}",
                String::from_utf8_lossy(&r.stdout)
                    .chars()
                    .take(400)
                    .collect::<String>()
            ),
        }
    } else {
        not_built(format!("{probe}: {}", r.describe()))
    }
}

/// The outcome of one child process.
#[derive(Debug, Clone, Default)]
pub struct ChildResult {
    pub status: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub spawn_error: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
}

impl ChildResult {
    fn ok(&self) -> bool {
        self.status == Some(0)
    }
    fn describe(&self) -> String {
        if let Some(e) = &self.spawn_error {
            return format!("cannot start: {e}");
        }
        if self.timed_out {
            return format!(
                "timed out after {:.1}s (process group killed)",
                self.elapsed.as_secs_f64()
            );
        }
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let s = s.trim();
            let start = s.len().saturating_sub(300);
            let start = (start..=s.len())
                .find(|i| s.is_char_boundary(*i))
                .unwrap_or(s.len());
            s[start..].replace('\n', " | ")
        };
        match (self.status, self.signal) {
            (Some(c), _) => format!("exit {c}; stderr: {}", tail(&self.stderr)),
            (None, Some(s)) => format!("killed by signal {s}; stderr: {}", tail(&self.stderr)),
            _ => "no status".into(),
        }
    }
}

/// The environment every trigger starts from: nothing inherited but what is named here.
fn base_env(home: &Path, git: &GitBin) -> Vec<(String, OsString)> {
    let gitdir = git.path.parent().unwrap_or(Path::new("/usr/bin"));
    let mut path = OsString::from(gitdir);
    path.push(":/usr/local/bin:/usr/bin:/bin");
    vec![
        ("HOME".into(), home.into()),
        ("PATH".into(), path),
        ("LC_ALL".into(), "C".into()),
        ("SHELL".into(), "/bin/sh".into()),
    ]
}

/// Run one child in its own process group with stdin closed, stdout/stderr captured through
/// files (no pipe can fill up), and `timeout`; on timeout the whole group is killed.
fn run_child(cmd: &mut Command, env: &[(String, OsString)], timeout: Duration) -> ChildResult {
    run_child_in(cmd, env, None, timeout)
}

fn run_child_in(
    cmd: &mut Command,
    env: &[(String, OsString)],
    stdin: Option<&Path>,
    timeout: Duration,
) -> ChildResult {
    let start = Instant::now();
    let mut res = ChildResult::default();
    let input = match stdin.map(std::fs::File::open) {
        None => Stdio::null(),
        Some(Ok(f)) => Stdio::from(f),
        Some(Err(e)) => {
            res.spawn_error = Some(format!("stdin file: {e}"));
            return res;
        }
    };
    let (out_f, err_f) = match (tempfile::tempfile(), tempfile::tempfile()) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => {
            res.spawn_error = Some(format!("temp file: {e}"));
            return res;
        }
    };
    let (out_r, err_r) = match (out_f.try_clone(), err_f.try_clone()) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => {
            res.spawn_error = Some(format!("temp file: {e}"));
            return res;
        }
    };
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(input)
        .stdout(out_f)
        .stderr(err_f)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            res.spawn_error = Some(e.to_string());
            return res;
        }
    };
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(e) => {
                res.spawn_error = Some(format!("wait: {e}"));
                break None;
            }
        }
        if start.elapsed() > timeout {
            res.timed_out = true;
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Anything the trigger left behind in its group (a background lazy fetch, a pager) goes
    // too, so it cannot write the canary after we looked.
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    if let Some(st) = status {
        use std::os::unix::process::ExitStatusExt;
        res.status = st.code();
        res.signal = st.signal();
    }
    res.elapsed = start.elapsed();
    res.stdout = read_all(out_r);
    res.stderr = read_all(err_r);
    res
}

fn read_all(mut f: std::fs::File) -> Vec<u8> {
    use std::io::{Read, Seek};
    let mut v = Vec::new();
    if f.seek(std::io::SeekFrom::Start(0)).is_ok() {
        let _ = f.read_to_end(&mut v);
    }
    v
}

/// Bash run before every case's setup: strict mode, `git` = the git under test, and helpers.
pub const PRELUDE: &str = r#"set -euo pipefail
export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
git() { "$GIT" "$@"; }
# $FIRE: a shell snippet that appends one line to the canary (for config values run via sh).
FIRE="echo fired >> '$CANARY'"
# plant PATH [BODY...]: an executable script that appends to the canary, then runs BODY.
plant() {
  local p=$1; shift
  mkdir -p "$(dirname "$p")"
  { printf '#!/bin/sh\necho "fired: $0 $*" >> '"'%s'"'\n' "$CANARY"; printf '%s\n' "$@"; } > "$p"
  chmod +x "$p"
}
# mkrepo [DIR]: a repository with one commit (a.txt) on branch main.
mkrepo() {
  local d=${1:-$REPO}
  git init -q -b main "$d"
  echo hello > "$d/a.txt"
  git -C "$d" add a.txt
  git -C "$d" commit -qm init
}
"#;

/// One prepared temporary workspace.
struct Workspace {
    root: PathBuf,
    ws: PathBuf,
    repo: PathBuf,
    home: PathBuf,
    canary: PathBuf,
    git: GitBin,
}

impl Workspace {
    fn create(root: &Path, git: &GitBin) -> std::io::Result<Workspace> {
        let ws = root.join("ws");
        let home = root.join("home");
        std::fs::create_dir_all(&ws)?;
        std::fs::create_dir_all(&home)?;
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Corpus\n\temail = corpus@example.invalid\n",
        )?;
        Ok(Workspace {
            root: root.to_path_buf(),
            repo: ws.join("repo"),
            ws,
            home,
            canary: root.join("canary"),
            git: git.clone(),
        })
    }

    fn vars(&self) -> Vec<(&'static str, &Path)> {
        vec![
            ("WS", &self.ws),
            ("REPO", &self.repo),
            ("CANARY", &self.canary),
            ("GIT", &self.git.path),
        ]
    }

    /// Replace `$WS`, `$REPO`, `$CANARY`, `$GIT` (and `${…}` forms) in a case string.
    fn expand(&self, s: &str) -> String {
        let mut out = s.to_owned();
        for (k, v) in self.vars() {
            let v = v.to_string_lossy();
            out = out.replace(&format!("${{{k}}}"), &v);
            out = out.replace(&format!("${k}"), &v);
        }
        out
    }

    fn setup(&self, script: &str, timeout: Duration) -> ChildResult {
        let mut env = base_env(&self.home, &self.git);
        env.push(("GIT_CONFIG_NOSYSTEM".into(), "1".into()));
        for (k, v) in self.vars() {
            env.push((k.into(), v.into()));
        }
        let full = format!("{PRELUDE}\n{script}\n");
        let r = run_child(
            Command::new("/bin/bash")
                .arg("-c")
                .arg(&full)
                .current_dir(&self.ws),
            &env,
            timeout,
        );
        // What setup's own git calls fired does not count: start the trigger from nothing.
        let _ = std::fs::remove_file(&self.canary);
        r
    }

    fn fired(&self) -> Option<String> {
        std::fs::read(&self.canary)
            .ok()
            .filter(|b| !b.is_empty())
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
    }

    /// Run `prog args…` as the case's trigger (under `script` when `tty`).
    fn trigger(&self, case: &Case, argv: &[OsString], timeout: Duration) -> ChildResult {
        let mut env = base_env(&self.home, &self.git);
        for (k, v) in &case.env {
            env.retain(|(ek, _)| ek != k);
            env.push((k.clone(), self.expand(v).into()));
        }
        let cwd = case
            .cwd
            .as_deref()
            .map(|c| PathBuf::from(self.expand(c)))
            .unwrap_or_else(|| self.repo.clone());
        let mut cmd = if case.tty {
            let line = argv
                .iter()
                .map(|a| shell_quote(&a.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(" ");
            let mut c = Command::new("script");
            c.args(["-qec", &line, "/dev/null"]);
            c
        } else {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        };
        cmd.current_dir(cwd);
        let stdin = case.stdin.as_ref().map(|text| {
            let p = self.root.join("stdin");
            let _ = std::fs::write(&p, self.expand(text));
            p
        });
        run_child_in(&mut cmd, &env, stdin.as_deref(), timeout)
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Did the positive control fire?
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Control {
    Fired { canary: String },
    Broken { why: String },
    Skipped { reason: String },
}

/// What safe-git did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SafeOutcome {
    /// Canary quiet; safe-git ran git (exit = git's own code; `stderr` = git's last line
    /// of standard error when it failed, e.g. a missing object with lazy fetch off).
    Quiet {
        exit: i32,
        #[serde(skip_serializing_if = "String::is_empty")]
        stderr: String,
    },
    /// Canary quiet; safe-git refused (121 not allowed, 122 layout, 123 config).
    Refused {
        exit: i32,
        message: String,
    },
    /// The canary fired under safe-git.
    Fired {
        exit: Option<i32>,
        canary: String,
    },
    /// safe-git did not evaluate the case (usage/setup error, timeout, signal).
    Error {
        why: String,
    },
    NotBuilt,
    NotRun,
}

/// What the audit said.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AuditOutcome {
    Flagged,
    NotFlagged,
    /// Exit 2: the audit could not read part of what it was given and said so. By wt-check's
    /// contract that is a finding of its own ("unknown is not clean", rule GW016): the
    /// planted state is reported, not passed as clean, so the case counts as flagged.
    Incomplete {
        why: String,
    },
    NotApplicable {
        reason: String,
    },
    Error {
        why: String,
    },
    NotBuilt,
    NotRun,
}

/// One case on one git.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub title: String,
    pub research: String,
    pub command: Vec<String>,
    pub expect_refusal: bool,
    pub control: Control,
    pub safe_git: SafeOutcome,
    pub audit: AuditOutcome,
    pub seconds: f64,
}

/// pass / fail / skip of one case result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Passed,
    Failed,
    Skipped,
}

impl CaseResult {
    /// Passed only if the control fired, safe-git stayed quiet, and the audit (when built and
    /// applicable) flagged it. safe-git not built counts as failed: nothing was shown.
    pub fn verdict(&self) -> Verdict {
        match self.control {
            Control::Skipped { .. } => return Verdict::Skipped,
            Control::Broken { .. } => return Verdict::Failed,
            Control::Fired { .. } => {}
        }
        let safe_ok = matches!(
            self.safe_git,
            SafeOutcome::Quiet { .. } | SafeOutcome::Refused { .. }
        );
        let audit_ok = matches!(
            self.audit,
            AuditOutcome::Flagged
                | AuditOutcome::Incomplete { .. }
                | AuditOutcome::NotApplicable { .. }
                | AuditOutcome::NotBuilt
                | AuditOutcome::NotRun
        );
        if safe_ok && audit_ok {
            Verdict::Passed
        } else {
            Verdict::Failed
        }
    }
}

/// Everything run against one git.
#[derive(Debug, Clone, Serialize)]
pub struct GitReport {
    pub git: GitBin,
    pub safe_git: Tool,
    pub wt_check: Tool,
    pub results: Vec<CaseResult>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub gits: Vec<GitReport>,
    pub seconds: f64,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.gits.iter().all(|g| g.failed == 0)
    }
}

/// The tools to use; `None` = that phase is not run (e.g. the control-only test).
#[derive(Debug, Clone, Default)]
pub struct ToolPaths {
    pub safe_git: Option<PathBuf>,
    pub wt_check: Option<PathBuf>,
}

impl ToolPaths {
    /// `safe-git` and `wt-check` next to the given executable (target/<profile>/).
    pub fn beside(exe: &Path) -> ToolPaths {
        let dir = exe.parent().unwrap_or(Path::new("."));
        ToolPaths {
            safe_git: Some(dir.join("safe-git")),
            wt_check: Some(dir.join("wt-check")),
        }
    }
}

fn run_one(case: &Case, git: &GitBin, safe: &Tool, audit: &Tool, opts: &Options) -> CaseResult {
    let start = Instant::now();
    let mut r = CaseResult {
        id: case.id.clone(),
        title: case.title.clone(),
        research: case.research.clone(),
        command: case.command.clone(),
        expect_refusal: case.expect_refusal,
        control: Control::Skipped {
            reason: String::new(),
        },
        safe_git: SafeOutcome::NotRun,
        audit: AuditOutcome::NotRun,
        seconds: 0.0,
    };
    if let Some(reason) = case.skip_reason(git.version) {
        r.control = Control::Skipped { reason };
        return r;
    }
    r.control = control(case, git, opts);
    if let Control::Fired { .. } = r.control {
        r.safe_git = match safe {
            Tool::Ready { path } => under_safe_git(case, git, path, opts),
            Tool::NotBuilt { .. } => SafeOutcome::NotBuilt,
            Tool::Unusable { reason, .. } => SafeOutcome::Error {
                why: format!("safe-git unusable: {reason}"),
            },
            Tool::Disabled => SafeOutcome::NotRun,
        };
        r.audit = match (case.audit_na(), audit) {
            (Some(reason), _) => AuditOutcome::NotApplicable {
                reason: reason.to_owned(),
            },
            (None, Tool::Ready { path }) => run_audit(case, git, path, opts),
            (None, Tool::NotBuilt { .. }) => AuditOutcome::NotBuilt,
            (None, Tool::Unusable { reason, .. }) => AuditOutcome::Error {
                why: format!("wt-check unusable: {reason}"),
            },
            (None, Tool::Disabled) => AuditOutcome::NotRun,
        };
    }
    r.seconds = start.elapsed().as_secs_f64();
    r
}

/// A fresh workspace with the case set up, or why not.
fn prepared(
    case: &Case,
    git: &GitBin,
    opts: &Options,
) -> Result<(tempfile::TempDir, Workspace), String> {
    let t = tempfile::Builder::new()
        .prefix(&format!("gitward-{}-", case.id))
        .disable_cleanup(opts.keep)
        .tempdir()
        .map_err(|e| format!("temp folder: {e}"))?;
    if opts.keep {
        eprintln!("gitward-corpus: {} kept: {}", case.id, t.path().display());
    }
    let ws = Workspace::create(t.path(), git).map_err(|e| format!("workspace: {e}"))?;
    let s = ws.setup(&case.setup, opts.timeout);
    if !s.ok() {
        return Err(format!("setup failed: {}", s.describe()));
    }
    Ok((t, ws))
}

fn control(case: &Case, git: &GitBin, opts: &Options) -> Control {
    let (_t, ws) = match prepared(case, git, opts) {
        Ok(x) => x,
        Err(why) => return Control::Broken { why },
    };
    let mut argv: Vec<OsString> = vec![git.path.clone().into()];
    argv.extend(case.command.iter().map(|a| OsString::from(ws.expand(a))));
    let r = ws.trigger(case, &argv, opts.timeout);
    match ws.fired() {
        Some(canary) => Control::Fired { canary },
        None if r.timed_out => Control::Broken {
            why: format!("trigger {}", r.describe()),
        },
        None if shadowed_by_system_config(case, git, opts) => Control::Skipped {
            reason: "fires only without this git's system config (git config --system): a \
                     setting there shadows the case on this machine (e.g. a system-wide git-lfs \
                     install's filter.lfs.process, which git prefers to a clean command)"
                .into(),
        },
        None => Control::Broken {
            why: format!("canary did not fire; trigger {}", r.describe()),
        },
    }
}

/// Does the case fire in a fresh workspace when git skips its system config
/// (`GIT_CONFIG_NOSYSTEM=1`)? Asked only when the control did not fire: the machine's system
/// config (`/etc/gitconfig` for a git installed in `/usr`, `$(prefix)/etc/gitconfig`
/// otherwise) is outside the workspace, and safe-git reads it too, so a case it shadows can
/// neither fire nor be tested on this machine — skipped with the reason, never passed.
fn shadowed_by_system_config(case: &Case, git: &GitBin, opts: &Options) -> bool {
    if case.env.contains_key("GIT_CONFIG_NOSYSTEM") || case.env.contains_key("GIT_CONFIG_SYSTEM") {
        return false;
    }
    let Ok((_t, ws)) = prepared(case, git, opts) else {
        return false;
    };
    let mut case = case.clone();
    case.env.insert("GIT_CONFIG_NOSYSTEM".into(), "1".into());
    let mut argv: Vec<OsString> = vec![git.path.clone().into()];
    argv.extend(case.command.iter().map(|a| OsString::from(ws.expand(a))));
    ws.trigger(&case, &argv, opts.timeout);
    ws.fired().is_some()
}

fn under_safe_git(case: &Case, git: &GitBin, safe: &Path, opts: &Options) -> SafeOutcome {
    let (_t, ws) = match prepared(case, git, opts) {
        Ok(x) => x,
        Err(why) => return SafeOutcome::Error { why },
    };
    let mut argv: Vec<OsString> = vec![safe.into(), "--git".into(), git.path.clone().into()];
    argv.extend(case.command.iter().map(|a| OsString::from(ws.expand(a))));
    let r = ws.trigger(case, &argv, opts.timeout);
    if let Some(canary) = ws.fired() {
        return SafeOutcome::Fired {
            exit: r.status,
            canary,
        };
    }
    if r.timed_out || r.spawn_error.is_some() || r.status.is_none() {
        return SafeOutcome::Error { why: r.describe() };
    }
    let code = r.status.unwrap_or(-1);
    let first_line = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    };
    match code {
        121..=123 => SafeOutcome::Refused {
            exit: code,
            message: first_line(if case.tty { &r.stdout } else { &r.stderr }),
        },
        120 | 124 => SafeOutcome::Error {
            why: format!("safe-git could not evaluate the case: {}", r.describe()),
        },
        _ => SafeOutcome::Quiet {
            exit: code,
            stderr: if code == 0 {
                String::new()
            } else {
                String::from_utf8_lossy(if case.tty { &r.stdout } else { &r.stderr })
                    .lines()
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_owned()
            },
        },
    }
}

fn run_audit(case: &Case, git: &GitBin, wt_check: &Path, opts: &Options) -> AuditOutcome {
    let (_t, ws) = match prepared(case, git, opts) {
        Ok(x) => x,
        Err(why) => return AuditOutcome::Error { why },
    };
    let target = case
        .audit_path
        .as_deref()
        .map(|p| PathBuf::from(ws.expand(p)))
        .unwrap_or_else(|| ws.repo.clone());
    let env = base_env(&ws.home, git);
    let r = run_child(
        Command::new(wt_check)
            .args(["audit", "--format", "json"])
            .arg(&target)
            .current_dir(&ws.root),
        &env,
        opts.timeout,
    );
    if let Some(c) = ws.fired() {
        return AuditOutcome::Error {
            why: format!("the audit itself fired the canary: {c}"),
        };
    }
    match r.status {
        Some(1) => AuditOutcome::Flagged,
        Some(0) => AuditOutcome::NotFlagged,
        Some(2) => AuditOutcome::Incomplete {
            why: {
                let err = String::from_utf8_lossy(&r.stderr).trim().to_owned();
                if err.is_empty() {
                    String::from_utf8_lossy(&r.stdout)
                        .chars()
                        .take(300)
                        .collect::<String>()
                        .replace('\n', " ")
                } else {
                    err
                }
            },
        },
        _ => AuditOutcome::Error { why: r.describe() },
    }
}

/// Run `cases` against every git in `gits`, `opts.jobs` cases at a time.
pub fn run(cases: &[Case], gits: &[GitBin], tools: &ToolPaths, opts: &Options) -> Report {
    let start = Instant::now();
    let mut reports = Vec::new();
    for git in gits {
        let safe = match &tools.safe_git {
            Some(p) => probe_safe_git(p, git, opts.timeout),
            None => Tool::Disabled,
        };
        let audit = match &tools.wt_check {
            Some(p) => probe_wt_check(p, git, opts.timeout),
            None => Tool::Disabled,
        };
        let queue = Mutex::new(cases.iter().enumerate());
        let results: Mutex<Vec<(usize, CaseResult)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..opts.jobs.max(1) {
                s.spawn(|| loop {
                    let next = queue.lock().map(|mut q| q.next()).ok().flatten();
                    let Some((i, case)) = next else { break };
                    let r = run_one(case, git, &safe, &audit, opts);
                    if let Ok(mut v) = results.lock() {
                        v.push((i, r));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_default();
        results.sort_by_key(|(i, _)| *i);
        let results: Vec<CaseResult> = results.into_iter().map(|(_, r)| r).collect();
        let count = |v: Verdict| results.iter().filter(|r| r.verdict() == v).count();
        reports.push(GitReport {
            git: git.clone(),
            passed: count(Verdict::Passed),
            failed: count(Verdict::Failed),
            skipped: count(Verdict::Skipped),
            safe_git: safe,
            wt_check: audit,
            results,
        });
    }
    Report {
        gits: reports,
        seconds: start.elapsed().as_secs_f64(),
    }
}

impl std::fmt::Display for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Control::Fired { .. } => write!(f, "yes"),
            Control::Broken { .. } => write!(f, "BROKEN"),
            Control::Skipped { reason } => write!(f, "skipped: {reason}"),
        }
    }
}

impl std::fmt::Display for SafeOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SafeOutcome::Quiet { exit, .. } => write!(f, "quiet (git exit {exit})"),
            SafeOutcome::Refused { exit, .. } => write!(f, "refused {exit}"),
            SafeOutcome::Fired { .. } => write!(f, "FIRED"),
            SafeOutcome::Error { .. } => write!(f, "ERROR"),
            SafeOutcome::NotBuilt => write!(f, "safe-git not built"),
            SafeOutcome::NotRun => write!(f, "-"),
        }
    }
}

impl std::fmt::Display for AuditOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditOutcome::Flagged => write!(f, "yes"),
            AuditOutcome::NotFlagged => write!(f, "NO"),
            AuditOutcome::Incomplete { .. } => write!(f, "incomplete (2)"),
            AuditOutcome::NotApplicable { .. } => write!(f, "n/a"),
            AuditOutcome::Error { .. } => write!(f, "ERROR"),
            AuditOutcome::NotBuilt => write!(f, "not built"),
            AuditOutcome::NotRun => write!(f, "-"),
        }
    }
}

/// The human table: one block per git, a detail line under every failed case, a summary.
pub fn render_human(report: &Report) -> String {
    let mut s = String::new();
    for g in &report.gits {
        let _ = writeln!(
            s,
            "git {} ({})\n  safe-git: {}\n  wt-check: {}",
            g.git.version,
            g.git.path.display(),
            g.safe_git,
            g.wt_check
        );
        let w = g
            .results
            .iter()
            .map(|r| r.id.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            s,
            "  {:w$}  {:16}  {:20}  flagged by audit",
            "case", "fired under git", "under safe-git"
        );
        for r in &g.results {
            let control = match &r.control {
                Control::Skipped { reason } => format!("skipped: {reason}"),
                c => c.to_string(),
            };
            if let Control::Skipped { .. } = r.control {
                let _ = writeln!(s, "  {:w$}  {}", r.id, control);
                continue;
            }
            let _ = writeln!(
                s,
                "  {:w$}  {:16}  {:20}  {}",
                r.id,
                control,
                r.safe_git.to_string(),
                r.audit
            );
            if let Control::Broken { why } = &r.control {
                let _ = writeln!(s, "  {:w$}    broken: {why}", "");
            }
            match &r.safe_git {
                SafeOutcome::Fired { exit, canary } => {
                    let _ = writeln!(
                        s,
                        "  {:w$}    safe-git let it run (exit {}): canary {canary:?}",
                        "",
                        exit.map_or("none".into(), |c| c.to_string())
                    );
                }
                SafeOutcome::Error { why } => {
                    let _ = writeln!(s, "  {:w$}    safe-git: {why}", "");
                }
                SafeOutcome::Quiet { exit, stderr } if *exit != 0 && !stderr.is_empty() => {
                    let _ = writeln!(s, "  {:w$}    git under safe-git: {stderr}", "");
                }
                SafeOutcome::Quiet { .. } if r.expect_refusal => {
                    let _ = writeln!(
                        s,
                        "  {:w$}    note: `{}` is outside safe-git's allow-list; it ran instead of being refused",
                        "",
                        r.command.first().map(String::as_str).unwrap_or("")
                    );
                }
                _ => {}
            }
            if let AuditOutcome::Error { why } | AuditOutcome::Incomplete { why } = &r.audit {
                let _ = writeln!(s, "  {:w$}    audit: {why}", "");
            }
        }
        let _ = writeln!(
            s,
            "git {}: {} passed, {} failed, {} skipped\n",
            g.git.version, g.passed, g.failed, g.skipped
        );
    }
    // The line a reader looks for first: what got through, on which gits.
    let mut fired: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut other: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for g in &report.gits {
        for r in &g.results {
            if r.verdict() != Verdict::Failed {
                continue;
            }
            let into = if matches!(r.safe_git, SafeOutcome::Fired { .. }) {
                &mut fired
            } else {
                &mut other
            };
            into.entry(&r.id)
                .or_default()
                .push(g.git.version.to_string());
        }
    }
    let list = |m: &BTreeMap<&str, Vec<String>>| {
        m.iter()
            .map(|(id, v)| format!("{id} (git {})", v.join(", ")))
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    if !fired.is_empty() {
        let _ = writeln!(s, "FIRED under safe-git:\n  {}", list(&fired));
    }
    if !other.is_empty() {
        let _ = writeln!(s, "other failures:\n  {}", list(&other));
    }
    let _ = writeln!(s, "corpus run took {:.1}s", report.seconds);
    s
}

/// The JSON document: the same data as the table.
pub fn render_json(report: &Report) -> String {
    #[derive(Serialize)]
    struct Row<'a> {
        #[serde(flatten)]
        r: &'a CaseResult,
        verdict: Verdict,
    }
    #[derive(Serialize)]
    struct G<'a> {
        git: &'a GitBin,
        safe_git: &'a Tool,
        wt_check: &'a Tool,
        passed: usize,
        failed: usize,
        skipped: usize,
        results: Vec<Row<'a>>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        ok: bool,
        seconds: f64,
        gits: Vec<G<'a>>,
    }
    let doc = Doc {
        ok: report.ok(),
        seconds: report.seconds,
        gits: report
            .gits
            .iter()
            .map(|g| G {
                git: &g.git,
                safe_git: &g.safe_git,
                wt_check: &g.wt_check,
                passed: g.passed,
                failed: g.failed,
                skipped: g.skipped,
                results: g
                    .results
                    .iter()
                    .map(|r| Row {
                        r,
                        verdict: r.verdict(),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// The case list: id, research row, title, trigger (for `--list`).
pub fn render_list(cases: &[Case], format_json: bool) -> String {
    if format_json {
        return serde_json::to_string_pretty(cases).unwrap_or_default();
    }
    let w = cases.iter().map(|c| c.id.len()).max().unwrap_or(4);
    let mut s = String::new();
    for c in cases {
        let _ = writeln!(
            s,
            "{:w$}  git {}{}\n{:w$}  {} — {}",
            c.id,
            c.command.join(" "),
            if c.tty { "  (tty)" } else { "" },
            "",
            c.research,
            c.title
        );
    }
    let mut rows: BTreeMap<&str, usize> = BTreeMap::new();
    for c in cases {
        *rows.entry(c.row()).or_default() += 1;
    }
    let _ = writeln!(
        s,
        "{} cases: {}",
        cases.len(),
        rows.iter()
            .map(|(r, n)| format!("{r}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s
}

/// `fixtures/attacks` of this source tree (beside `suite/`, at the workspace root).
pub fn default_cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/attacks")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_order_and_skip() {
        assert!(Version::parse("2.39.5").unwrap() < Version::parse("git version 2.47.3").unwrap());
        let case: Case = toml::from_str(
            r#"id = "1a-x"
title = "t"
research = "r"
setup = "plant $WS/x"
command = ["status"]
min_git = "2.54.0"
version_reason = "config hooks"
"#,
        )
        .unwrap();
        assert!(case
            .skip_reason(Version(2, 47, 3))
            .unwrap()
            .contains("2.54.0"));
        assert!(case.skip_reason(Version(2, 54, 0)).is_none());
    }

    fn write_case(dir: &Path, file: &str, body: &str) {
        std::fs::write(dir.join(file), body).unwrap();
    }

    #[test]
    fn invalid_cases_are_refused_with_file_and_rule() {
        let ok =
            "title = \"t\"\nresearch = \"r\"\nsetup = \"plant $WS/x\"\ncommand = [\"status\"]\n";
        for (file, body, rule) in [
            (
                "1a-a.toml",
                format!("id = \"1a-b\"\n{ok}"),
                "id: must equal",
            ),
            ("x-a.toml", format!("id = \"x-a\"\n{ok}"), "research row"),
            (
                "1a-a.toml",
                format!("id = \"1a-a\"\nmin_git = \"2.40.0\"\n{ok}"),
                "version_reason",
            ),
            (
                "1a-a.toml",
                format!("id = \"1a-a\"\naudit = \"no\"\n{ok}"),
                "audit:",
            ),
            (
                "1a-a.toml",
                ok.replace("plant $WS/x", "true") + "id = \"1a-a\"\n",
                "canary",
            ),
            (
                "1a-a.toml",
                format!("id = \"1a-a\"\nbogus = 1\n{ok}"),
                "unknown field",
            ),
        ] {
            let t = tempfile::tempdir().unwrap();
            write_case(t.path(), file, &body);
            let e = load_cases(t.path()).unwrap_err().to_string();
            assert!(e.contains(file) && e.contains(rule), "{file}: {e}");
        }
    }

    #[test]
    fn shell_quote_survives_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }
}
