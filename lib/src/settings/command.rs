//! The `settings-watch` commands, so that the binary stays a thin clap layer.
//!
//! Exit codes (documented in docs/settings-watch.md): `run` 0 after a clean shutdown, 2 on an
//! error; `check` 0 clean, 1 a widening write found and held, 2 cannot check; `held list|show`
//! 0, 2 on an error; `held approve|reject` 0 done, 1 refused (changed since held, blocked, not
//! pending), 2 error (unknown id, bad policy, I/O). Usage errors: 120.

use super::watch::{WatchConfig, Watcher};
use super::SettingsError;
use crate::cli::Format;
use crate::events::{Event, EventKind, Sink, Tool};
use crate::exit::{self, Code};
use crate::held::{HeldError, HeldWrite, Status, Store};
use crate::policy::Policy;
use std::path::{Path, PathBuf};

/// A `held` subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldCmd {
    List { all: bool },
    Show(String),
    Approve(String),
    Reject(String),
}

/// Where events go: standard output and the policy's audit log.
pub struct Sinks {
    sinks: Vec<Sink>,
    /// A sink failed at least once: the caller did not get every event.
    failed: std::cell::Cell<bool>,
}

impl Sinks {
    fn new(stdout: bool, policy: &Policy) -> Sinks {
        let mut sinks = Vec::new();
        if stdout {
            sinks.push(Sink::Stdout);
        }
        if let Some(log) = &policy.audit_log {
            sinks.push(Sink::File(log.clone()));
        }
        Sinks {
            sinks,
            failed: std::cell::Cell::new(false),
        }
    }

    /// Emit to every sink; a sink that fails is reported on stderr (the decision stands).
    pub fn emit(&self, e: &Event) {
        for s in &self.sinks {
            if let Err(err) = s.emit(e) {
                eprintln!("settings-watch: cannot write event to {s:?}: {err}");
                self.failed.set(true);
            }
        }
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn fail(msg: impl std::fmt::Display) -> Code {
    eprintln!("settings-watch: {msg}");
    exit::INCOMPLETE
}

fn load(policy: &Path) -> Result<(Policy, WatchConfig), Code> {
    let home = home();
    let p = Policy::load(policy, &home).map_err(fail)?;
    let cfg = WatchConfig::from_policy(&p, &home).map_err(fail)?;
    Ok((p, cfg))
}

/// `settings-watch run --policy FILE`.
pub fn run(policy: &Path) -> Code {
    let (p, cfg) = match load(policy) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let sinks = Sinks::new(true, &p);
    let mut w = match Watcher::open(cfg) {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    match w.run(&mut |e| sinks.emit(e)) {
        Ok(()) => exit::CLEAN,
        Err(e) => fail(e),
    }
}

/// `settings-watch check --policy FILE`.
pub fn check(policy: &Path) -> Code {
    let (p, cfg) = match load(policy) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let sinks = Sinks::new(true, &p);
    let res: Result<_, SettingsError> =
        Watcher::open(cfg).and_then(|w| w.check(&mut |e| sinks.emit(e)));
    match res {
        Ok(s) if s.held + s.recovered > 0 => exit::FOUND,
        // Clean, but not every event reached stdout or the audit log: never reads as clean.
        Ok(_) if sinks.failed.get() => exit::INCOMPLETE,
        Ok(_) => exit::CLEAN,
        Err(e) => fail(e),
    }
}

/// `settings-watch held …`.
pub fn held(policy: &Path, cmd: HeldCmd, format: Format) -> Code {
    let home = home();
    let p = match Policy::load(policy, &home) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let store = match Store::open(&p.held_dir()) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let sinks = Sinks::new(true, &p);
    let approve = matches!(cmd, HeldCmd::Approve(_));
    match cmd {
        HeldCmd::List { all } => {
            let mut list = match store.pending() {
                Ok(l) => l,
                Err(e) => return fail(e),
            };
            if all {
                match store.resolved() {
                    Ok(r) => list.extend(r),
                    Err(e) => return fail(e),
                }
            }
            let text = match format {
                Format::Json => {
                    let v: Vec<_> = list.iter().map(summary_json).collect();
                    format!("{}\n", serde_json::Value::Array(v))
                }
                Format::Human => {
                    let mut t = String::new();
                    if list.is_empty() {
                        t.push_str("no held writes\n");
                    }
                    for w in &list {
                        t.push_str(&format!(
                            "{}  {:<8} {}  {}  {}\n",
                            w.id,
                            format!("{:?}", w.status).to_lowercase(),
                            w.time,
                            w.path.display(),
                            w.new.reasons.first().map(String::as_str).unwrap_or("")
                        ));
                    }
                    t
                }
            };
            print(&text)
        }
        HeldCmd::Show(id) => match store.get(&id) {
            Ok(w) => print(&match format {
                Format::Json => {
                    format!("{}\n", serde_json::to_string_pretty(&w).unwrap_or_default())
                }
                Format::Human => show_human(
                    &w,
                    &std::fs::canonicalize(policy).unwrap_or_else(|_| policy.to_path_buf()),
                ),
            }),
            Err(e) => fail(e),
        },
        HeldCmd::Approve(id) | HeldCmd::Reject(id) => {
            let r = if approve {
                store.approve(&id)
            } else {
                store.reject(&id)
            };
            match r {
                Ok(w) => {
                    let (kind, verb) = if approve {
                        (EventKind::HeldApproved, "approved; its bytes were written")
                    } else {
                        (
                            EventKind::HeldRejected,
                            "rejected; its bytes were discarded",
                        )
                    };
                    sinks.emit(
                        &Event::new(
                            Tool::SettingsWatch,
                            kind,
                            format!("held write {} to {} {verb}", w.id, w.new.rel),
                        )
                        .session(Some(&p.session))
                        .repo(&w.new.root)
                        .path(&w.path)
                        .with("id", w.id.clone())
                        .with("rel", w.new.rel.clone())
                        .with("rule", w.new.rule.clone()),
                    );
                    exit::CLEAN
                }
                Err(
                    e @ (HeldError::Changed { .. }
                    | HeldError::Blocked { .. }
                    | HeldError::NotPending { .. }),
                ) => {
                    eprintln!("settings-watch: {e}");
                    exit::FOUND
                }
                Err(e) => fail(e),
            }
        }
    }
}

fn summary_json(w: &HeldWrite) -> serde_json::Value {
    serde_json::json!({
        "id": w.id,
        "status": w.status,
        "time": w.time,
        "path": w.path,
        "rel": w.new.rel,
        "rule": w.new.rule,
        "verdict": w.new.verdict,
        "reasons": w.new.reasons,
        "blocked": w.new.blocked,
        "source": w.new.source,
    })
}

/// Write a listing to stdout: `held list|show` exit 0, or 2 when it cannot be written.
fn print(text: &str) -> Code {
    match crate::cli::print("settings-watch", text, exit::INCOMPLETE) {
        Ok(()) => exit::CLEAN,
        Err(c) => c,
    }
}

/// `p` as one word for a POSIX shell: unchanged when it is made of safe characters, else in
/// single quotes (a `'` inside becomes `'\''`).
fn shell_word(p: &Path) -> String {
    let s = p.to_string_lossy();
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=~".contains(&b))
        && !s.starts_with('~')
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `held show` for people; the approve/reject hints are commands that work as printed
/// (they name the policy: `held` has no default).
fn show_human(w: &HeldWrite, policy: &Path) -> String {
    let mut s = format!(
        "id:       {}\nstatus:   {}\nheld at:  {}\npath:     {}\nrule:     {}\nverdict:  {}\nsource:   {}\nreplaced: {}\nproposed: {}\n",
        w.id,
        format!("{:?}", w.status).to_lowercase(),
        w.time,
        w.path.display(),
        w.new.rule,
        w.new.verdict,
        w.new.source,
        w.new.replaced.describe(),
        w.proposed.as_ref().map_or("discarded".into(), |p| p.describe()),
    );
    if let Some(t) = &w.resolved_time {
        s.push_str(&format!("resolved: {t}\n"));
    }
    for k in &w.kept {
        s.push_str(&format!("kept:     {} (the bytes, whole)\n", k.display()));
    }
    s.push_str("why:\n");
    for r in &w.new.reasons {
        s.push_str(&format!("  {r}\n"));
    }
    for b in &w.new.blocked {
        s.push_str(&format!("  cannot be approved: {b}\n"));
    }
    s.push_str("diff:\n");
    s.push_str(&w.new.diff);
    if w.status == Status::Pending {
        s.push_str(&format!(
            "\napprove: settings-watch held approve {id} --policy {p}\nreject:  settings-watch held reject {id} --policy {p}\n",
            id = w.id,
            p = shell_word(policy)
        ));
    }
    s
}
