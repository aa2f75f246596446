//! agent-shell: the launcher for the agent's commands (defused environment, shim first on
//! PATH, Docker socket selection).
//!
//! `agent-shell --policy FILE -c CMD` runs `CMD` through bash with an environment built by
//! [`environment`]:
//!
//! - the git-shim folder (`<state_dir>/bin`, holding `git`) first on `PATH`, relative and empty
//!   `PATH` entries dropped (they resolve against the agent-writable current folder);
//! - `GITWARD_POLICY` set to the policy, `SHELL` to agent-shell itself (so a tool that starts
//!   `$SHELL` comes back here);
//! - the defused removals of the catalogue ([`catalogue::ENV`]: `LD_PRELOAD`, `BASH_ENV`,
//!   `ENV`, inherited `GIT_*` except identity and output switches, …) and of
//!   [`catalogue::SHELL_ENV`] (`PROMPT_COMMAND`, exported bash functions, Docker variables);
//!   git's own neutral values (`GIT_PAGER=cat`, …) are *not* exported: the shim passes them
//!   to each git call, so other tools the agent runs see no `GIT_CONFIG_*` (a leak that broke
//!   child tools in Copilot CLI, anchors §2.5);
//! - `GIT_CEILING_DIRECTORIES`: the parents of the repository and of every worktree folder;
//! - Docker only when the policy opts in: `DOCKER_HOST` from an explicit `DOCKER_HOST`, else the
//!   user's rootless socket (`$XDG_RUNTIME_DIR/docker.sock`), else `/var/run/docker.sock`, and
//!   `DOCKER_CONFIG` pointing at an empty folder gitward owns, so registry logins stay hidden.
//!
//! The exit status is the command's (128+n when the shell is killed by signal n).
//!
//! Settings guard: after each command the guarded settings files of the repository and of the
//! session's existing worktrees are judged against their approved state, with the same rules
//! and the same held-writes store as `settings-watch` (one `settings-watch check` pass,
//! [`crate::settings::watch::Watcher::check`]): a widening change is stored, then reverted; a
//! narrowing one becomes the approved state. The approved state, not a snapshot taken before
//! the command, so a write made between commands (a background job, an editing tool) is judged
//! too. The roots are taken again after the command; a root seen for the first time starts from its files as they
//! are, except a worktree (the command may have made it and written in it): it starts from the main work tree's
//! approved state, so what widens that is held (R5-8). The store must be writable by agent-shell and not
//! by the agent, so the guard runs when agent-shell sits outside the sandbox and starts it
//! (`agent-shell -c 'bwrap … -- bash -c CMD'`); inside a sandbox that leaves the store
//! read-only, agent-shell says once on stderr that the guard is off (settings-watch covers it).
//!
//! Login profiles are never read: `-l` is accepted for callers that use `$SHELL -lc`, but
//! `/etc/profile` resets `PATH` on most systems and would take the shim off it.

use crate::catalogue::{self, GitVersion};
use crate::env::{DefuseOptions, Defused};
use crate::events::{append_line, Event, EventKind, Tool};
use crate::policy::{Policy, PolicyError};
use crate::settings::watch::{WatchConfig, Watcher};
use crate::shim::{self, ShimError};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Why agent-shell cannot start a command.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error("no policy: pass --policy FILE or set GITWARD_POLICY")]
    NoPolicy,
    #[error("{0}")]
    Policy(#[from] PolicyError),
    #[error("{0}")]
    Shim(#[from] ShimError),
    #[error("{path}: no git-shim beside agent-shell and none installed in the shim folder {dir}; run git-shim --install {dir} --policy <policy>")]
    NoShim { path: PathBuf, dir: PathBuf },
    /// `--sandbox bwrap`: no plan for this repository (the layout cannot be vouched for).
    #[error("sandbox plan: {0}")]
    Plan(#[from] crate::plan::PlanError),
    /// `--sandbox bwrap`: a planned path cannot be bound (a link swapped in, a type changed).
    #[error("sandbox: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// `--sandbox bwrap`: bubblewrap stopped before the command started (a mount it could
    /// not make); its own message is on stderr above this line.
    #[error("sandbox: bubblewrap could not build the sandbox (exit status {status}); the command did not run")]
    SandboxFailed { status: u8 },
    #[error("{path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The policy file (else `GITWARD_POLICY`).
    pub policy: Option<PathBuf>,
    /// `-c CMD`; `None` starts the shell itself (interactive on a terminal).
    pub command: Option<OsString>,
    /// `-i`: force an interactive shell.
    pub interactive: bool,
    /// Positional parameters after the command (`$0`, `$1`, …).
    pub args: Vec<OsString>,
    /// Run the command inside this sandbox, built from the plan made afresh for it.
    pub sandbox: Option<SandboxKind>,
}

/// `agent-shell --sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxKind {
    /// bubblewrap, every path bound from a descriptor opened without following links.
    Bwrap,
}

/// The folder holding the session's shim as `git`.
pub fn shim_dir(p: &Policy) -> PathBuf {
    p.state_dir.join("bin")
}

/// The folder `DOCKER_CONFIG` points at: empty, gitward's own, so no registry login of the
/// owner reaches the agent.
pub fn docker_config_dir(p: &Policy) -> PathBuf {
    p.state_dir.join("docker-config")
}

/// The Docker daemon the agent may reach, when the policy opts in: an explicit `DOCKER_HOST`,
/// else the user's rootless socket, else the system socket. `is_socket` is asked about paths.
pub fn docker_host(
    inherited: &[(OsString, OsString)],
    is_socket: impl Fn(&Path) -> bool,
) -> Option<OsString> {
    let get = |k: &str| {
        inherited
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    if let Some(h) = get("DOCKER_HOST") {
        return Some(h);
    }
    if let Some(rt) = get("XDG_RUNTIME_DIR") {
        let sock = Path::new(&rt).join("docker.sock");
        if is_socket(&sock) {
            let mut v = OsString::from("unix://");
            v.push(sock.as_os_str());
            return Some(v);
        }
    }
    let system = Path::new("/var/run/docker.sock");
    is_socket(system).then(|| OsString::from("unix:///var/run/docker.sock"))
}

/// The agent's environment, from the inherited one. Pure apart from `is_socket`.
pub fn environment(
    p: &Policy,
    inherited: Vec<(OsString, OsString)>,
    shim_dir: &Path,
    me: &Path,
    is_socket: impl Fn(&Path) -> bool,
) -> Vec<(OsString, OsString)> {
    // `keeps` is the same for every version: only the `-c` set depends on it.
    let defused = Defused::new(DefuseOptions::new(GitVersion::new(2, 0, 0)));
    let docker = p
        .docker
        .enabled
        .then(|| docker_host(&inherited, &is_socket))
        .flatten();
    let path: Vec<PathBuf> = inherited
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::env::split_paths(v).collect())
        .unwrap_or_else(|| vec![PathBuf::from("/usr/bin"), PathBuf::from("/bin")]);
    let mut out: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, _)| {
            defused.keeps(k)
                && !catalogue::SHELL_ENV.iter().any(|e| {
                    k.to_str()
                        .is_some_and(|k| catalogue::env_name_matches(e.name, k))
                })
        })
        .collect();
    let mut set = |k: &str, v: OsString| {
        out.retain(|(have, _)| have != k);
        out.push((OsString::from(k), v));
    };
    let mut dirs = vec![shim_dir.to_path_buf()];
    dirs.extend(
        path.into_iter()
            .filter(|d| d.is_absolute() && d != shim_dir),
    );
    set("PATH", std::env::join_paths(dirs).unwrap_or_default());
    set("GITWARD_POLICY", p.file.clone().into_os_string());
    set("SHELL", me.as_os_str().to_owned());
    set(
        "GIT_CEILING_DIRECTORIES",
        std::env::join_paths(shim::ceilings(p)).unwrap_or_default(),
    );
    if p.docker.enabled {
        if let Some(h) = docker {
            set("DOCKER_HOST", h);
        }
        set("DOCKER_CONFIG", docker_config_dir(p).into_os_string());
    }
    out
}

fn is_socket(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

/// Make sure `<state_dir>/bin/git` is the shim: install the `git-shim` that sits beside
/// agent-shell if the folder has none, or if the one there is not that binary (an upgrade
/// replaced the `git-shim` beside agent-shell: the old shim must not keep running).
pub fn ensure_shim(p: &Policy, me: &Path) -> Result<PathBuf, ShellError> {
    let dir = shim_dir(p);
    let src = me.with_file_name("git-shim");
    let installed = dir.join("git");
    if installed.is_file() && (!src.is_file() || same_binary(&src, &installed)) {
        return Ok(dir);
    }
    if !src.is_file() {
        return Err(ShellError::NoShim { path: src, dir });
    }
    shim::install_binary(&src, &dir, Some(&p.file))?;
    Ok(dir)
}

/// True when `a` and `b` are the same file (a hard link: the usual install) or hold the same
/// bytes (a copy across file systems).
fn same_binary(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if (ma.dev(), ma.ino()) == (mb.dev(), mb.ino()) {
        return true;
    }
    ma.len() == mb.len() && matches!((std::fs::read(a), std::fs::read(b)), (Ok(x), Ok(y)) if x == y)
}

fn log(p: &Policy, ev: Event) {
    let Some(path) = &p.audit_log else { return };
    let ev = ev.session(Some(&p.session));
    if let Err(e) = append_line(path, ev.to_line().as_bytes()) {
        eprintln!(
            "agent-shell: warning: cannot append to the audit log {}: {e}",
            path.display()
        );
    }
}

/// The settings guard around a command: every guarded file is judged against its approved
/// state in the held-writes store settings-watch uses — not against a snapshot taken before
/// the command, which would let a write made between commands (a job the previous command
/// left in the background, an editing tool that does not go through the shell) pass unjudged
/// and then stand as the next command's "before".
struct Guard {
    watcher: Watcher,
    policy: Policy,
    home: PathBuf,
}

impl Guard {
    /// Open the store and the roots (a root seen for the first time starts from its files as
    /// they are), or say why the guard is off.
    fn before(p: &Policy, home: &Path) -> Result<Guard, String> {
        let cfg = WatchConfig::from_policy(p, home).map_err(|e| e.to_string())?;
        let dir = &cfg.store_dir;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).map_err(|e| {
            format!(
                "the held-writes store {} is not writable: {e}",
                dir.display()
            )
        })?;
        let watcher = Watcher::open(cfg)
            .map_err(|e| e.to_string())?
            .with_source("agent-shell");
        Ok(Guard {
            watcher,
            policy: p.clone(),
            home: home.to_path_buf(),
        })
    }

    /// Judge every guarded file now and carry out every decision; the events to log. The
    /// roots are taken afresh: a worktree the command added is judged now, against the main
    /// work tree's approved state ([`Watcher::open`]), and one it removed is no longer
    /// opened.
    fn after(&self) -> Vec<Event> {
        let mut events = Vec::new();
        let fresh = WatchConfig::from_policy(&self.policy, &self.home)
            .map_err(|e| e.to_string())
            .and_then(|cfg| Watcher::open(cfg).map_err(|e| e.to_string()))
            .map(|w| w.with_source("agent-shell"));
        let watcher = match &fresh {
            Ok(w) => w,
            Err(e) => {
                // The worktrees the command added are not judged: say so, then judge the
                // roots opened before the command.
                eprintln!("agent-shell: settings guard incomplete: {e}");
                events.push(Event::new(
                    Tool::AgentShell,
                    EventKind::CheckIncomplete,
                    format!("settings guard incomplete: {e}"),
                ));
                &self.watcher
            }
        };
        let res = watcher.check(&mut |ev: &Event| {
            if ev.event != EventKind::SettingsWriteAccepted {
                eprintln!("agent-shell: {}", shim::one_line(&ev.message));
            }
            events.push(ev.clone());
        });
        if let Err(e) = res {
            eprintln!("agent-shell: settings guard incomplete: {e}");
            events.push(Event::new(
                Tool::AgentShell,
                EventKind::CheckIncomplete,
                format!("settings guard incomplete: {e}"),
            ));
        }
        events
    }
}

/// The shell that runs the agent's commands.
fn shell_binary() -> &'static Path {
    if Path::new("/bin/bash").exists() {
        Path::new("/bin/bash")
    } else {
        Path::new("/bin/sh")
    }
}

/// Run one request; the exit code is the command's.
pub fn run(req: Request) -> Result<ExitCode, ShellError> {
    let file = req
        .policy
        .clone()
        .or_else(|| {
            std::env::var_os(shim::POLICY_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .ok_or(ShellError::NoPolicy)?;
    let file = std::path::absolute(&file).unwrap_or(file);
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let policy = Policy::load(&file, &home)?;
    let me = std::env::current_exe().map_err(|source| ShellError::Io {
        path: PathBuf::from("/proc/self/exe"),
        what: "cannot find agent-shell itself",
        source,
    })?;
    let dir = ensure_shim(&policy, &me)?;
    if policy.docker.enabled {
        let d = docker_config_dir(&policy);
        std::fs::create_dir_all(&d).map_err(|source| ShellError::Io {
            path: d.clone(),
            what: "cannot create the empty Docker config folder",
            source,
        })?;
    }
    let guard = match Guard::before(&policy, &home) {
        Ok(g) => Some(g),
        Err(why) => {
            eprintln!("agent-shell: settings guard off: {why}");
            None
        }
    };
    let env = environment(&policy, std::env::vars_os().collect(), &dir, &me, is_socket);
    let sh = shell_binary();
    let mut sh_args: Vec<OsString> = Vec::new();
    if sh.ends_with("bash") {
        sh_args.extend(["--noprofile".into(), "--norc".into()]);
    }
    if req.interactive {
        sh_args.push("-i".into());
    }
    if let Some(c) = &req.command {
        sh_args.push("-c".into());
        sh_args.push(c.clone());
    }
    sh_args.extend(req.args.iter().cloned());
    let sandbox = match req.sandbox {
        Some(SandboxKind::Bwrap) => Some(bwrap_sandbox(&policy, &me)?),
        None => None,
    };
    let mut cmd = match &sandbox {
        Some(s) => s.prepared.command(sh, &sh_args),
        None => {
            let mut c = Command::new(sh);
            c.args(&sh_args);
            c
        }
    };
    cmd.env_clear().envs(env);
    let shown = req
        .command
        .as_deref()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|| "(interactive shell)".into());
    let mut child = cmd.spawn().map_err(|source| ShellError::Io {
        path: sh.to_path_buf(),
        what: "cannot start the shell",
        source,
    })?;
    // Like a shell waiting for a foreground job: the terminal's SIGINT/SIGQUIT reach the
    // command (same process group); agent-shell stays to report its status.
    // SAFETY: installing SIG_IGN runs no handler code.
    unsafe {
        use nix::sys::signal::{signal, SigHandler, Signal};
        let _ = signal(Signal::SIGINT, SigHandler::SigIgn);
        let _ = signal(Signal::SIGQUIT, SigHandler::SigIgn);
    }
    let status = child.wait().map_err(|source| ShellError::Io {
        path: sh.to_path_buf(),
        what: "cannot wait for the shell",
        source,
    })?;
    let code = exit_code(status);
    if let Some(s) = &sandbox {
        s.after();
        // Killed by a signal, bubblewrap reports nothing: that is the command's fate.
        if status.code().is_some() && !s.prepared.started() {
            return Err(ShellError::SandboxFailed { status: code });
        }
    }
    if let Some(g) = &guard {
        for ev in g.after() {
            log(&policy, ev);
        }
    }
    log(
        &policy,
        Event::new(Tool::AgentShell, EventKind::CommandFinished, shown).with("exit", code),
    );
    Ok(ExitCode::from(code))
}

/// A bubblewrap sandbox for one command (`--sandbox bwrap`).
struct Sandboxed {
    prepared: crate::sandbox::Prepared,
    /// The audit log's relay (see `crate::sandbox::Relay`).
    relay: std::cell::RefCell<Option<crate::sandbox::Relay>>,
    session_dir: PathBuf,
    common_dir: PathBuf,
    /// Held while the sandbox runs (see `crate::sandbox::lock_shared`).
    lock: std::cell::Cell<Option<nix::fcntl::Flock<std::fs::File>>>,
}

/// The plan made afresh for this command (so a worktree another session added or removed
/// since the last one is bound as it is now), then every path opened and bound from its
/// descriptor. The session's worktree folder is created when missing: a bind needs it.
fn bwrap_sandbox(policy: &Policy, me: &Path) -> Result<Sandboxed, ShellError> {
    use crate::plan::{self, PlanOptions};
    let sd = policy.worktree_dir.clone();
    std::fs::create_dir_all(&sd).map_err(|source| ShellError::Io {
        path: sd.clone(),
        what: "cannot create the session's worktree folder",
        source,
    })?;
    let plan = plan::plan(&PlanOptions {
        repo: policy.repo.clone(),
        session: Some(policy.session.clone()),
        session_dir: Some(sd.clone()),
        extra_writable: plan::policy_writable(policy),
        docker: policy.docker.enabled,
        unix_sockets: policy.unix_sockets == crate::policy::UnixSocketsRule::Allow,
        network: false,
        // agent-shell itself: the Landlock inner step runs it inside the sandbox.
        read_back: vec![shim_dir(policy), policy.file.clone(), me.to_path_buf()],
        allow_unresolved: policy.allow_unresolved_programs,
        landlock: policy.landlock,
        runtime_dir: None,
    })?;
    let inner_step = match plan.landlock.decision() {
        crate::plan::landlock::Decision::Apply => Some(me.to_path_buf()),
        crate::plan::landlock::Decision::Refuse => {
            return Err(crate::sandbox::SandboxError::NoLandlock {
                abi: plan.landlock.abi,
                min: plan.landlock.min_abi,
            }
            .into())
        }
        crate::plan::landlock::Decision::Skip => {
            if policy.landlock != crate::plan::landlock::Policy::Off {
                eprintln!(
                    "agent-shell: warning: this kernel offers Landlock ABI {} (the special-file rule needs {}): the sandbox runs without it (landlock = \"optional\"); a FIFO made in the work tree can hang the owner's git",
                    plan.landlock.abi, plan.landlock.min_abi
                );
            }
            None
        }
    };
    // The audit log: append-only from inside (a FIFO over it, relayed from outside).
    let mut relays = Vec::new();
    let mut relay = None;
    if let Some(log) = policy.audit_log.as_ref().filter(|p| p.is_file()) {
        let r =
            crate::sandbox::Relay::start(log, &std::env::temp_dir(), Some(policy.session.clone()))
                .map_err(|source| ShellError::Io {
                    path: log.clone(),
                    what: "cannot relay the audit log into the sandbox",
                    source,
                })?;
        relays.push((log.clone(), r.fifo.clone()));
        relay = Some(r);
    }
    let base = crate::sandbox::Base {
        network: false,
        writable_files: Vec::new(),
        relays,
        chdir: std::env::current_dir().ok(),
        inner_step,
    };
    let lock = crate::sandbox::lock_shared(&plan.common_dir).map_err(|source| ShellError::Io {
        path: plan.common_dir.clone(),
        what: "cannot lock the common dir for the sandbox",
        source,
    })?;
    let prepared = crate::sandbox::prepare(&plan, &base)?;
    Ok(Sandboxed {
        prepared,
        relay: std::cell::RefCell::new(relay),
        session_dir: sd,
        common_dir: plan.common_dir,
        lock: std::cell::Cell::new(Some(lock)),
    })
}

impl Sandboxed {
    /// After the sandbox: the placeholders' mount points go (only while still empty, and only
    /// when no other sandbox of the repository runs: removing one would unmount it there), and an
    /// empty session folder goes with its last worktree, as git-shim removes it outside a
    /// sandbox (inside, it is a mount point and cannot be removed).
    fn after(&self) {
        if let Some(mut r) = self.relay.borrow_mut().take() {
            r.finish();
        }
        drop(self.lock.take());
        if let Some(_last) = crate::sandbox::last_out(&self.common_dir) {
            for p in self.prepared.remove_stubs() {
                eprintln!(
                    "agent-shell: warning: {}: placeholder mount point left in place (no longer empty)",
                    p.display()
                );
            }
        }
        let _ = std::fs::remove_dir(&self.session_dir);
    }
}

/// A shell's exit code for a child's status: its code, or 128+n for signal n.
pub fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(s)) => 128u8.wrapping_add(u8::try_from(s).unwrap_or(0)),
        _ => 1,
    }
}

/// Is `name` (an inherited variable) passed to the agent's commands?
pub fn passes(name: &OsStr) -> bool {
    let defused = Defused::new(DefuseOptions::new(GitVersion::new(2, 0, 0)));
    defused.keeps(name)
        && !catalogue::SHELL_ENV.iter().any(|e| {
            name.to_str()
                .is_some_and(|k| catalogue::env_name_matches(e.name, k))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(extra: &str) -> (tempfile::TempDir, Policy) {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let repo = home.join("src/proj");
        std::fs::create_dir_all(&repo).unwrap();
        let text = format!("session = \"s1\"\nrepo = \"{}\"\n{extra}\n", repo.display());
        let p = Policy::parse(&home.join("etc/p.toml"), &text, &home).unwrap();
        (t, p)
    }

    fn vars(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter()
            .map(|(a, b)| (OsString::from(a), OsString::from(b)))
            .collect()
    }

    fn get<'a>(env: &'a [(OsString, OsString)], k: &str) -> Option<&'a str> {
        env.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.to_str())
    }

    #[test]
    fn defused_environment() {
        let (_t, p) = policy("");
        let inherited = vars(&[
            ("PATH", "/usr/bin:.::relative/bin:/bin:/shim"),
            ("BASH_ENV", "/tmp/evil"),
            ("ENV", "/tmp/evil"),
            ("PROMPT_COMMAND", "touch /tmp/p"),
            ("BASH_FUNC_ls%%", "() { evil; }"),
            ("LD_PRELOAD", "/tmp/e.so"),
            ("LD_LIBRARY_PATH", "/tmp"),
            ("GIT_DIR", "/elsewhere"),
            ("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='x'"),
            ("GIT_SSH_COMMAND", "evil"),
            ("GIT_AUTHOR_NAME", "A"),
            ("DOCKER_HOST", "unix:///var/run/docker.sock"),
            ("DOCKER_CONFIG", "/home/u/.docker"),
            ("HOME", "/home/u"),
            ("TERM", "xterm"),
        ]);
        let env = environment(
            &p,
            inherited,
            Path::new("/shim"),
            Path::new("/opt/agent-shell"),
            |_| true,
        );
        assert_eq!(get(&env, "PATH"), Some("/shim:/usr/bin:/bin"));
        for gone in [
            "BASH_ENV",
            "ENV",
            "PROMPT_COMMAND",
            "BASH_FUNC_ls%%",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "GIT_DIR",
            "GIT_CONFIG_PARAMETERS",
            "GIT_SSH_COMMAND",
            "DOCKER_HOST",
            "DOCKER_CONFIG",
        ] {
            assert_eq!(get(&env, gone), None, "{gone}");
        }
        // git's neutral values are the shim's business, not exported to every tool.
        assert_eq!(get(&env, "GIT_PAGER"), None);
        assert_eq!(get(&env, "GIT_AUTHOR_NAME"), Some("A"));
        assert_eq!(get(&env, "HOME"), Some("/home/u"));
        assert_eq!(get(&env, "TERM"), Some("xterm"));
        assert_eq!(get(&env, "SHELL"), Some("/opt/agent-shell"));
        assert_eq!(get(&env, "GITWARD_POLICY"), p.file.to_str());
        let ceil = get(&env, "GIT_CEILING_DIRECTORIES").unwrap();
        assert!(
            ceil.split(':')
                .any(|c| Path::new(c) == p.repo.parent().unwrap()),
            "{ceil}"
        );
    }

    #[test]
    fn docker_only_when_the_policy_opts_in() {
        let (_t, p) = policy("[docker]\nenabled = true");
        let sock = |want: &'static str| move |q: &Path| q == Path::new(want);
        // Explicit DOCKER_HOST first.
        let env = environment(
            &p,
            vars(&[
                ("DOCKER_HOST", "tcp://h:2375"),
                ("XDG_RUNTIME_DIR", "/run/user/1"),
            ]),
            Path::new("/s"),
            Path::new("/a"),
            sock("/run/user/1/docker.sock"),
        );
        assert_eq!(get(&env, "DOCKER_HOST"), Some("tcp://h:2375"));
        assert_eq!(get(&env, "DOCKER_CONFIG"), docker_config_dir(&p).to_str());
        // Then the rootless socket, then the system daemon.
        let env = environment(
            &p,
            vars(&[("XDG_RUNTIME_DIR", "/run/user/1")]),
            Path::new("/s"),
            Path::new("/a"),
            sock("/run/user/1/docker.sock"),
        );
        assert_eq!(
            get(&env, "DOCKER_HOST"),
            Some("unix:///run/user/1/docker.sock")
        );
        let env = environment(
            &p,
            vars(&[("XDG_RUNTIME_DIR", "/run/user/1")]),
            Path::new("/s"),
            Path::new("/a"),
            sock("/var/run/docker.sock"),
        );
        assert_eq!(
            get(&env, "DOCKER_HOST"),
            Some("unix:///var/run/docker.sock")
        );
        let env = environment(&p, vars(&[]), Path::new("/s"), Path::new("/a"), |_| false);
        assert_eq!(get(&env, "DOCKER_HOST"), None);
        // Off: nothing Docker passes, whatever was inherited.
        let (_t2, off) = policy("");
        let env = environment(
            &off,
            vars(&[("DOCKER_HOST", "tcp://h:2375"), ("DOCKER_CONTEXT", "x")]),
            Path::new("/s"),
            Path::new("/a"),
            |_| true,
        );
        assert_eq!(get(&env, "DOCKER_HOST"), None);
        assert_eq!(get(&env, "DOCKER_CONTEXT"), None);
        assert_eq!(get(&env, "DOCKER_CONFIG"), None);
    }

    #[test]
    fn exit_codes_of_signals() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(9)), 137);
        assert!(!passes(OsStr::new("LD_PRELOAD")));
        assert!(passes(OsStr::new("LANG")));
    }
}

#[cfg(test)]
mod same_binary_tests {
    /// An upgrade replaces the `git-shim` beside agent-shell (a new file): the installed shim,
    /// a link to the old one, is no longer the same binary and is reinstalled.
    #[test]
    fn an_upgraded_shim_is_not_the_installed_one() {
        let d = tempfile::tempdir().unwrap();
        let (src, inst, copy) = (
            d.path().join("git-shim"),
            d.path().join("git"),
            d.path().join("copy"),
        );
        std::fs::write(&src, b"v1").unwrap();
        std::fs::hard_link(&src, &inst).unwrap();
        std::fs::copy(&src, &copy).unwrap();
        assert!(super::same_binary(&src, &inst));
        assert!(super::same_binary(&src, &copy));
        // What `cargo install` does: a new file renamed over the old name.
        std::fs::write(d.path().join("new"), b"v2").unwrap();
        std::fs::rename(d.path().join("new"), &src).unwrap();
        assert!(!super::same_binary(&src, &inst));
        assert!(!super::same_binary(&src, &copy));
    }
}
