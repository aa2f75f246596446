//! Shared harness: a fresh HOME, workspace and policy; a settings-watch process whose events
//! are read line by line.

#![allow(dead_code)]

use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_settings-watch");

pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub policy: PathBuf,
    pub outside: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let home = base.join("home");
        let repo = home.join("src/proj");
        let outside = base.join("outside");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(home.join(".config/gitward")).unwrap();
        std::fs::create_dir_all(home.join(".local/state/gitward")).unwrap();
        let policy = home.join(".config/gitward/alpha.toml");
        std::fs::write(
            &policy,
            format!(
                "session = \"alpha\"\nrepo = \"{}\"\naudit_log = \"{}\"\n",
                repo.display(),
                home.join(".local/state/gitward/audit.jsonl").display()
            ),
        )
        .unwrap();
        Env {
            tmp,
            home,
            repo,
            policy,
            outside,
        }
    }

    pub fn store_dir(&self) -> PathBuf {
        self.home.join(".local/state/gitward/alpha/held")
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("HOME", &self.home).env_remove("XDG_STATE_HOME");
        c
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) {
        let p = self.repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    pub fn start(&self) -> Watch {
        self.start_with(|_| {})
    }

    /// `start` with the command amended by `f` first (an environment variable); returns once
    /// the watcher says `watch_started` (its watches are in place and its first pass done).
    pub fn start_with(&self, f: impl FnOnce(&mut Command)) -> Watch {
        let mut c = self.cmd();
        c.args(["run", "--policy"])
            .arg(&self.policy)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        f(&mut c);
        let mut child = c.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).expect("one JSON object per line");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut w = Watch {
            child,
            rx,
            seen: Vec::new(),
        };
        w.wait_for(|e| e["event"] == "watch_started", Duration::from_secs(20))
            .expect("watch_started");
        w
    }
}

pub struct Watch {
    pub child: Child,
    rx: Receiver<Value>,
    pub seen: Vec<Value>,
}

impl Watch {
    /// Wait for an event matching `pred` (events already seen count).
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool, t: Duration) -> Option<Value> {
        if let Some(e) = self.seen.iter().find(|e| pred(e)) {
            return Some(e.clone());
        }
        let end = Instant::now() + t;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(e) => {
                    self.seen.push(e.clone());
                    if pred(&e) {
                        return Some(e);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return None
                }
            }
        }
    }

    /// Drain events for `d`.
    pub fn settle(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while let Ok(e) = self
            .rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            self.seen.push(e);
        }
    }

    pub fn stop(mut self) -> (i32, Vec<Value>) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let st = self.child.wait().unwrap();
        // Every line the watcher wrote before it exited: the reader thread ends at the pipe's
        // end and drops its sender, which ends `settle` (a fixed 100 ms drain lost the last
        // events, `watch_stopped` among them, when the reader was not scheduled in time).
        self.settle(Duration::from_secs(30));
        (st.code().unwrap_or(-1), std::mem::take(&mut self.seen))
    }

    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A test that fails before `stop` must not leave its watcher running.
impl Drop for Watch {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Poll `f` until it holds or `t` passes.
pub fn eventually(t: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + t;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The content at a path as the tests see it: bytes of a file, `None` if absent,
/// `Some(b"<link>")` marker for a link.
pub fn state(p: &Path) -> Option<Vec<u8>> {
    match std::fs::symlink_metadata(p) {
        Err(_) => None,
        Ok(m) if m.file_type().is_symlink() => Some(b"<link>".to_vec()),
        Ok(m) if m.is_dir() => Some(b"<dir>".to_vec()),
        Ok(_) => std::fs::read(p).ok(),
    }
}
