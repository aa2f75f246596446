//! Events: one JSON object per line, with stable names, for the orchestrator's audit log.
//!
//! Every gitward binary reports what it decided and did through [`Event`]. The names in
//! [`EventKind`] are a contract (documented in `docs/events.md`): they are only ever added
//! to, never renamed. Each line is written with a single `write(2)` on a file opened with
//! `O_APPEND`, so lines from concurrent processes (the shim runs once per git call) never
//! interleave.

use serde::Serialize;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The tool that emitted an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    SafeGit,
    GitShim,
    AgentShell,
    SettingsWatch,
    WtCheck,
}

/// Stable event names. Grouped by the tool that emits them; a name may be shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    // git-shim, safe-git
    /// A git call was allowed and git was started.
    GitAllowed,
    /// A git call was refused before git started.
    GitRefused,
    /// A worktree folder was created for the session (first use).
    WorktreeFolderCreated,
    /// The session's worktree folder was removed with its last worktree.
    WorktreeFolderRemoved,
    // agent-shell
    /// A command was started by agent-shell.
    CommandStarted,
    /// A command finished (exit status in details).
    CommandFinished,
    // settings-watch, agent-shell
    /// A widening write to a guarded settings file was reverted and held for the owner.
    SettingsWriteHeld,
    /// A narrowing or neutral write was accepted and became the approved state.
    SettingsWriteAccepted,
    /// The owner approved a held write; its bytes were written.
    HeldApproved,
    /// The owner rejected a held write; its bytes were discarded.
    HeldRejected,
    /// The inotify queue overflowed; every guarded file was rescanned.
    WatchRescan,
    /// Bytes written to the audit log from inside the sandbox that were not one JSON object
    /// per line; logged escaped with their length (agent-shell's relay).
    AuditLineRejected,
    /// settings-watch is watching (roots, folders watched, guarded files found).
    WatchStarted,
    /// settings-watch stopped on a signal.
    WatchStopped,
    // wt-check: integrity
    /// A hook file was planted or changed in a hooks folder.
    HookPlanted,
    /// A protected config file changed.
    ConfigChanged,
    /// A file named by include.path / includeIf.*.path changed, appeared or vanished.
    IncludeTargetChanged,
    /// A linked worktree entry (`worktrees/<id>/`) changed against git's layout or the baseline.
    WorktreeEntryChanged,
    /// A worktree entry was put back from the baseline.
    WorktreeEntryRestored,
    /// A new worktree entry appeared that does not belong to the session.
    WorktreeEntryPlanted,
    /// A protected git-folder entry (commondir, info/attributes, alternates, …) changed.
    GitDirEntryChanged,
    /// A protected entry was put back from the baseline.
    GitDirEntryRestored,
    /// A file the agent created was moved aside into quarantine.
    Quarantined,
    /// A path was replaced by a symbolic link (or another type); it was not followed.
    LinkRefused,
    /// Part of the repository could not be read; the check is incomplete.
    CheckIncomplete,
    /// A protected entry could not be put back (details say why); the check is incomplete.
    RestoreFailed,
    /// Audit finding (no baseline).
    AuditFinding,
    /// An in-progress operation's state (`rebase-merge/`, `rebase-apply/`, `sequencer/`) names
    /// a program, a strategy, options or a signing key the owner's `--continue` would use.
    SequencerStateArmed,
    /// A repository behind a gitlink of the index (an embedded repository the owner's
    /// `git status` recurses into) is armed: a hook, a program-running key, a redirect.
    EmbeddedRepositoryArmed,
    /// A submodule git dir made during the turn under the session's own worktree entry
    /// (`worktrees/<id>/modules/<name>`: `git submodule update --init` in the session's
    /// worktree): the agent's own repository, audited and found clean (info; an armed one is
    /// `embedded_repository_armed`).
    SessionSubmoduleGitDir,
    /// An index holds an entry whose path git's `verify_path` refuses (`..`, an absolute
    /// path, a `.git` component): the owner's `git checkout -- .` writes it outside the work
    /// tree or into the git dir, `git commit -a` hashes the file it names.
    IndexEntryInvalid,
    /// A work-tree file the owner's git runs (a program the config names by a relative
    /// path, or what an installed hook runs: `.pre-commit-config.yaml`, `.husky/`, a script
    /// the hook names) changed during the turn, in a work tree or in its index.
    WorkTreeProgramChanged,
    /// A loose object file's content does not hash to its id (or it is not a regular file):
    /// git reads that content under the id of an object of trusted history without checking.
    ObjectSubstituted,
    /// A conflict resolution (`rr-cache/<id>`) recorded or changed during the turn, which the
    /// owner's git replays into the work tree when it meets the same conflict; or `rr-cache`
    /// is not a folder.
    ResolutionRecorded,
    /// An index entry's stat data matches a work-tree file whose content is not the entry's
    /// object: git takes the file as unchanged and never reads it (status, diff and
    /// `reset --hard` neither show nor undo the content).
    IndexStatForged,
    /// A commit-graph file new or changed since the pin does not match the commit objects it
    /// indexes (a tree, parents, date or generation differs, or it is not a graph as git
    /// writes it, or not a regular file): git takes trees and parents from it without
    /// checking.
    CommitGraphForged,
    // wt-check: commit scans
    /// A new commit changes a path that a scan rule flags.
    CommitFlagged,
    /// A ref moved in a way that drops commits (force-push, deletion).
    HistoryRewritten,
    /// The scan stopped at its bound; the result is incomplete.
    ScanIncomplete,
}

impl EventKind {
    /// The stable name as written in the JSON line.
    pub fn as_str(self) -> String {
        match serde_json::to_value(self) {
            Ok(Value::String(s)) => s,
            _ => unreachable!("EventKind serialises to a string"),
        }
    }
}

/// One event. Serialised as a flat JSON object: the fixed fields, then `details` flattened.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// RFC 3339 UTC time with milliseconds.
    pub time: String,
    pub tool: Tool,
    pub event: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "path_text")]
    pub repo: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "path_text")]
    pub path: Option<PathBuf>,
    /// One human-readable line.
    pub message: String,
    #[serde(flatten)]
    pub details: Map<String, Value>,
}

impl Event {
    /// The message, like every detail added with [`Event::with`], loses the userinfo of the
    /// URLs it carries ([`crate::url::redact_userinfo`]): no event logs a credential.
    pub fn new(tool: Tool, event: EventKind, message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = match crate::url::redact_userinfo(&message) {
            std::borrow::Cow::Owned(r) => r,
            std::borrow::Cow::Borrowed(_) => message,
        };
        Event {
            time: rfc3339_now(),
            tool,
            event,
            session: None,
            repo: None,
            path: None,
            message,
            details: Map::new(),
        }
    }

    pub fn session(mut self, s: Option<&str>) -> Self {
        self.session = s.map(str::to_owned);
        self
    }

    pub fn repo(mut self, p: impl AsRef<Path>) -> Self {
        self.repo = Some(p.as_ref().to_path_buf());
        self
    }

    pub fn path(mut self, p: impl AsRef<Path>) -> Self {
        self.path = Some(p.as_ref().to_path_buf());
        self
    }

    /// Add a detail field. Fixed field names (`time`, `tool`, `event`, …) are refused so a
    /// detail can never shadow them.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        const FIXED: &[&str] = &[
            "time", "tool", "event", "session", "repo", "path", "message",
        ];
        assert!(
            !FIXED.contains(&key),
            "detail key {key:?} shadows a fixed field"
        );
        let mut value = value.into();
        crate::url::redact_json(&mut value);
        self.details.insert(key.to_owned(), value);
        self
    }

    /// The event as one line of JSON, with the trailing newline.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("events serialise");
        s.push('\n');
        s
    }
}

/// A path as event text: its bytes as they are where they are UTF-8, and each byte of a
/// sequence that is not as `\xNN` (a file name is bytes; JSON strings are Unicode). serde's
/// own `Path` serialisation fails on such a name, and an event the agent can name a path in
/// (a planted ref, hook or FIFO) must still be written (R15-5: `check` stopped with a panic,
/// exit 101, before restoring anything).
pub fn path_text_of(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in p.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn path_text<S: serde::Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_str(&path_text_of(p)),
        None => s.serialize_none(),
    }
}

/// Where events go.
#[derive(Debug)]
pub enum Sink {
    /// Discard.
    Null,
    /// Standard output (wt-check, settings-watch check).
    Stdout,
    /// Standard error.
    Stderr,
    /// Append to a file (the orchestrator's audit log).
    File(PathBuf),
}

impl Sink {
    /// Write one event. Errors are returned, not swallowed: a caller that must not fail
    /// because of logging (the shim) decides itself what to do.
    pub fn emit(&self, event: &Event) -> std::io::Result<()> {
        let line = event.to_line();
        match self {
            Sink::Null => Ok(()),
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(line.as_bytes())?;
                out.flush()
            }
            Sink::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
            Sink::File(path) => append_line(path, line.as_bytes()),
        }
    }
}

/// Append one line with a single write on an `O_APPEND` file (created 0600 if missing).
pub fn append_line(path: &Path, line: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_CLOEXEC.bits())
        .open(path)?;
    // One write call: O_APPEND makes it atomic with respect to other appenders for the
    // sizes we write (well under a page on local filesystems).
    let n = f.write(line)?;
    if n != line.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            "short write to event log",
        ));
    }
    Ok(())
}

/// Current time as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T04:36:04.123Z`.
pub fn rfc3339_now() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d.as_secs() as i64, d.subsec_millis())
}

/// Format seconds since the epoch (UTC) as RFC 3339 with milliseconds.
pub fn rfc3339(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_796_013_364, 123), "2026-11-30T04:36:04.123Z");
    }

    /// R15-5: a path that is not UTF-8 (a planted ref or hook name) is written, its invalid
    /// bytes as `\xNN`, instead of failing the event (which panicked `check`, exit 101).
    #[test]
    fn paths_that_are_not_utf8_are_written_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(
            b"/r/.git/refs/heads/\xff\xfe-\xc3\xa9",
        ));
        let e = Event::new(Tool::WtCheck, EventKind::GitRefused, "x")
            .repo(Path::new(std::ffi::OsStr::from_bytes(b"/r\x80")))
            .path(p);
        let v: serde_json::Value = serde_json::from_str(&e.to_line()).unwrap();
        assert_eq!(v["path"], "/r/.git/refs/heads/\\xff\\xfe-\u{e9}");
        assert_eq!(v["repo"], "/r\\x80");
        assert_eq!(path_text_of(Path::new("/plain/ü")), "/plain/ü");
    }

    #[test]
    fn event_line_is_one_flat_json_object() {
        let e = Event::new(Tool::GitShim, EventKind::GitRefused, "refused")
            .session(Some("s1"))
            .with("rule", "worktree-outside-session")
            .with("argv", vec!["worktree", "add", "/tmp/x"]);
        let line = e.to_line();
        assert!(line.ends_with('\n'));
        assert_eq!(line.matches('\n').count(), 1);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "git_refused");
        assert_eq!(v["tool"], "git-shim");
        assert_eq!(v["rule"], "worktree-outside-session");
        assert_eq!(v["session"], "s1");
        assert!(v.get("repo").is_none());
    }

    #[test]
    #[should_panic(expected = "shadows a fixed field")]
    fn details_cannot_shadow_fixed_fields() {
        let _ = Event::new(Tool::WtCheck, EventKind::HookPlanted, "x").with("event", "ok");
    }

    #[test]
    fn urls_lose_their_userinfo() {
        let e = Event::new(
            Tool::GitShim,
            EventKind::GitAllowed,
            "remote.o.url = https://alice:s3cr3t@host/r",
        )
        .with("url", "https://ghp_s3cr3t@host/r")
        .with(
            "urls",
            serde_json::json!(["git@host:r", {"u": "http://u:s3cr3t@h/"}]),
        );
        let line = e.to_line();
        assert!(!line.contains("s3cr3t"), "{line}");
        assert!(line.contains("https://***@host/r"), "{line}");
        assert!(line.contains("git@host:r"), "{line}");
    }

    #[test]
    fn names_are_snake_case() {
        assert_eq!(
            EventKind::WorktreeEntryRestored.as_str(),
            "worktree_entry_restored"
        );
        assert_eq!(EventKind::SettingsWriteHeld.as_str(), "settings_write_held");
    }

    #[test]
    fn file_sink_appends_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit.jsonl");
        let sink = Sink::File(p.clone());
        for i in 0..3 {
            sink.emit(&Event::new(
                Tool::SafeGit,
                EventKind::GitAllowed,
                format!("n{i}"),
            ))
            .unwrap();
        }
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 3);
        for l in text.lines() {
            serde_json::from_str::<Value>(l).unwrap();
        }
    }
}
