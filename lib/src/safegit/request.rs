//! What safe-git was asked ([`Request`]) and how it says no ([`Refusal`]): the types that
//! [`super::plan`] and [`super::locate`] both speak, kept apart from either so that neither
//! module needs the other's.

use crate::events::{Event, EventKind, Sink, Tool};
use crate::exit::Code;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// What the caller asked for, with the process context made explicit (no hidden reads of
/// the environment below this point).
#[derive(Debug, Clone)]
pub struct Request {
    /// `--git` / `SAFE_GIT_GIT`.
    pub git: Option<PathBuf>,
    /// git's arguments.
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Where the git probe is cached (`$XDG_CACHE_HOME/gitward`, `~/.cache/gitward`).
    pub cache_dir: Option<PathBuf>,
    /// Event log (`--events` / `SAFE_GIT_EVENTS`).
    pub events: Option<PathBuf>,
    /// The CPU bound set on this process ([`super::cpu::apply`]), for `--explain`; `None`
    /// when the caller set none (a library use).
    pub cpu: Option<super::cpu::Bound>,
}

impl Request {
    /// A request from this process's environment and working folder.
    pub fn from_process(
        git: Option<PathBuf>,
        args: Vec<OsString>,
        events: Option<PathBuf>,
    ) -> Self {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let get = |k: &str| {
            env.iter()
                .find(|(a, _)| a == k)
                .map(|(_, v)| PathBuf::from(v))
        };
        let cache_dir = get("XDG_CACHE_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| get("HOME").map(|h| h.join(".cache")))
            .map(|c| c.join("gitward"));
        Request {
            git,
            args,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            env,
            cache_dir,
            events,
            cpu: None,
        }
    }

    pub(super) fn var(&self, k: &str) -> Option<&OsStr> {
        self.env
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_os_str())
    }
}

/// A refusal: exit code, what it is about (a file or an argument), why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: Code,
    pub subject: String,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    /// `refused (<code>): [<subject>: ]<reason>`, with the userinfo of any URL in it removed
    /// ([`crate::url::redact_userinfo`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.subject.is_empty() {
            format!("refused ({}): {}", self.code.name, self.reason)
        } else {
            format!(
                "refused ({}): {}: {}",
                self.code.name, self.subject, self.reason
            )
        };
        f.write_str(&crate::url::redact_userinfo(&s))
    }
}

impl Refusal {
    pub(super) fn new(
        code: Code,
        subject: impl Into<String>,
        reason: impl std::fmt::Display,
    ) -> Self {
        // One line, always: flatten whatever a lower layer said.
        let reason = reason.to_string().replace('\n', " ");
        Refusal {
            code,
            subject: subject.into(),
            reason,
        }
    }

    /// Append a `git_refused` event if the request names an event log. A log that cannot be
    /// written is reported on stderr but does not change the refusal.
    pub fn log(&self, req: &Request) {
        if let Some(path) = &req.events {
            let e = Event::new(Tool::SafeGit, EventKind::GitRefused, self.to_string())
                .with("argv", argv_strings(&req.args))
                .with("rule", self.code.name)
                .with("exit_code", self.code.code)
                .with("subject", self.subject.clone());
            if let Err(err) = Sink::File(path.clone()).emit(&e) {
                eprintln!("safe-git: {}: cannot write event: {err}", path.display());
            }
        }
    }
}

pub(super) fn argv_strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}
