//! settings-watch benchmark: latency from a widening write to the revert (median, p99 over
//! 1,000 writes), bursts of 10,000 writes (none lost), CPU while idle.
//!
//! Run: `cargo bench -p settings-watch --bench settings-watch` (or benches/settings-watch.sh).
//! Knobs: `LATENCY_WRITES` (1000), `BURST_WRITES` (10000), `IDLE_SECS` (10),
//! `LATENCY_TIMEOUT_SECS` (30: a write not reverted by then fails the run with a message).
//!
//! Latency is measured without polling: the bench watches the folder with its own inotify and
//! times from its rename of the agent's file over the guarded one to the rename that puts the
//! approved bytes back (the second `IN_MOVED_TO` on the name), then checks the bytes.

use gitward::held::Store;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::io::BufRead;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    policy: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    let repo = home.join("src/proj");
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::create_dir_all(home.join(".config/gitward")).unwrap();
    let policy = home.join(".config/gitward/bench.toml");
    std::fs::write(
        &policy,
        format!("session = \"bench\"\nrepo = \"{}\"\n", repo.display()),
    )
    .unwrap();
    Env {
        _tmp: tmp,
        home,
        repo,
        policy,
    }
}

struct Watcher {
    child: Child,
    held: Arc<AtomicUsize>,
    rescans: Arc<AtomicUsize>,
}

fn start(e: &Env) -> Watcher {
    let mut child = Command::new(env!("CARGO_BIN_EXE_settings-watch"))
        .env("HOME", &e.home)
        .args(["run", "--policy"])
        .arg(&e.policy)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let held = Arc::new(AtomicUsize::new(0));
    let rescans = Arc::new(AtomicUsize::new(0));
    let (h, r) = (held.clone(), rescans.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if line.contains("\"event\":\"watch_started\"") {
                let _ = tx.send(());
            } else if line.contains("\"event\":\"settings_write_held\"") {
                h.fetch_add(1, Ordering::SeqCst);
            } else if line.contains("\"event\":\"watch_rescan\"") {
                r.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("watch_started");
    Watcher {
        child,
        held,
        rescans,
    }
}

/// Peak resident memory (VmHWM, KiB) of each watcher stopped, in order.
static PEAKS: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

fn stop(mut w: Watcher) {
    let hwm = std::fs::read_to_string(format!("/proc/{}/status", w.child.id()))
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            l.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0);
    PEAKS.lock().unwrap().push(hwm);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = w.child.wait();
}

fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // Fields 14 and 15 (utime, stime) are 12 and 13 after the command name and state.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn pct(v: &[f64], p: f64) -> f64 {
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn wait_until(t: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + t;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

fn latency(e: &Env, n: usize) -> Vec<f64> {
    let file = e.repo.join(".claude/settings.json");
    let before = br#"{"permissions":{"allow":["Read"]}}"#;
    let w = start(e);
    let ino = Inotify::init(InitFlags::IN_CLOEXEC).unwrap();
    // IN_MOVED_FROM too, though only IN_MOVED_TO is counted: the kernel merges an inotify
    // event into the last unread one when mask, watch and name are equal (the cookie is not
    // compared), so with IN_MOVED_TO alone the watcher's swap, landing while the bench's own
    // rename event is still unread (the bench descheduled under load), merged into it and the
    // bench waited for ever. Each rename's IN_MOVED_FROM now sits between the two.
    ino.add_watch(
        &e.repo.join(".claude"),
        AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_MOVED_FROM,
    )
    .unwrap();
    let timeout = Duration::from_secs(knob("LATENCY_TIMEOUT_SECS", 30) as u64);
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let tmp = e.repo.join(".claude/.agent-tmp");
        std::fs::write(
            &tmp,
            format!(r#"{{"permissions":{{"allow":["Read","Bash(x{i})"]}}}}"#),
        )
        .unwrap();
        let t0 = Instant::now();
        std::fs::rename(&tmp, &file).unwrap();
        let mut seen = 0;
        let deadline = t0 + timeout;
        'wait: loop {
            // Wait for events with a deadline: a stalled watcher (or a lost event) fails the
            // run with a message instead of hanging it.
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fds = [PollFd::new(ino.as_fd(), PollFlags::POLLIN)];
            let ready = poll(
                &mut fds,
                PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX),
            )
            .unwrap_or_else(|e| match e {
                nix::errno::Errno::EINTR => 0,
                e => panic!("poll on the bench's inotify: {e}"),
            });
            if ready == 0 {
                if Instant::now() < deadline {
                    continue;
                }
                let now = std::fs::read(&file).unwrap_or_default();
                stop(w);
                panic!(
                    "write {i}: no revert within {} s ({seen} of 2 renames onto settings.json \
                     seen); settings.json is now {:?}",
                    timeout.as_secs(),
                    String::from_utf8_lossy(&now)
                );
            }
            for ev in ino.read_events().unwrap() {
                if ev.mask.contains(AddWatchFlags::IN_MOVED_TO)
                    && ev.name.as_deref() == Some(std::ffi::OsStr::new("settings.json"))
                {
                    seen += 1;
                    if seen == 2 {
                        break 'wait;
                    }
                }
            }
        }
        v.push(t0.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            before,
            "write {i} not reverted"
        );
        // Let the watcher finish the hold (event written) before the next write.
        assert!(wait_until(Duration::from_secs(10), || w
            .held
            .load(Ordering::SeqCst)
            > i));
    }
    stop(w);
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// 10,000 widening writes, each a new guarded file (`w<i>.code-workspace` at the root):
/// every one must end up held and none left in place.
fn burst_files(e: &Env, n: usize) -> (f64, usize, usize) {
    let w = start(e);
    let t0 = Instant::now();
    for i in 0..n {
        std::fs::write(
            e.repo.join(format!("w{i}.code-workspace")),
            format!("{{\"settings\":{{\"n\":{i}}}}}"),
        )
        .unwrap();
    }
    let remaining = || {
        std::fs::read_dir(&e.repo)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|d| d.file_name().to_string_lossy().ends_with(".code-workspace"))
            .count()
    };
    let ok = wait_until(Duration::from_secs(600), || remaining() == 0);
    let secs = t0.elapsed().as_secs_f64();
    let rescans = w.rescans.load(Ordering::SeqCst);
    stop(w);
    assert!(ok, "{} files still in place", remaining());
    let store = Store::open(&e.home.join(".local/state/gitward/bench/held")).unwrap();
    let mut held: Vec<String> = store
        .pending()
        .unwrap()
        .into_iter()
        .filter(|h| h.new.rel.ends_with(".code-workspace"))
        .map(|h| h.new.rel)
        .collect();
    held.sort();
    held.dedup();
    (secs, held.len(), rescans)
}

/// 10,000 rename-over writes to the same file as fast as possible: the file ends reverted,
/// the last write is held, and every write the watcher displaced is held.
fn burst_same(e: &Env, n: usize) -> (f64, usize, bool) {
    let file = e.repo.join(".claude/settings.json");
    let before = br#"{"permissions":{"allow":["Read"]}}"#;
    let store_dir = e.home.join(".local/state/gitward/bench/held");
    let already = Store::open(&store_dir).unwrap().pending().unwrap().len();
    let w = start(e);
    let t0 = Instant::now();
    let mut last = String::new();
    for i in 0..n {
        last = format!(r#"{{"permissions":{{"allow":["Read","Bash(burst{i})"]}}}}"#);
        let tmp = e.repo.join(".claude/.agent-tmp");
        std::fs::write(&tmp, &last).unwrap();
        std::fs::rename(&tmp, &file).unwrap();
    }
    let ok = wait_until(Duration::from_secs(120), || {
        std::fs::read(&file).unwrap() == before
            && Store::open(&store_dir)
                .unwrap()
                .pending()
                .unwrap()
                .iter()
                .any(|h| h.proposed.as_ref().and_then(|p| p.bytes()) == Some(last.as_bytes()))
    });
    let secs = t0.elapsed().as_secs_f64();
    stop(w);
    let held = Store::open(&store_dir).unwrap().pending().unwrap().len() - already;
    (secs, held, ok)
}

fn idle(e: &Env, secs: u64) -> (u64, u64) {
    let w = start(e);
    std::thread::sleep(Duration::from_millis(500));
    let a = cpu_ticks(w.child.id());
    std::thread::sleep(Duration::from_secs(secs));
    let b = cpu_ticks(w.child.id());
    stop(w);
    (b - a, secs)
}

fn main() {
    // `cargo bench` passes --bench; nothing to parse.
    let e = env();
    std::fs::write(
        e.repo.join(".claude/settings.json"),
        br#"{"permissions":{"allow":["Read"]}}"#,
    )
    .unwrap();
    let n = knob("LATENCY_WRITES", 1000);
    let v = latency(&e, n);
    println!(
        "latency write->revert over {n} widening writes: median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(&v, 0.5),
        pct(&v, 0.9),
        pct(&v, 0.99),
        v[v.len() - 1]
    );
    let b = knob("BURST_WRITES", 10_000);
    if b == 0 {
        return;
    }
    let (secs, held, rescans) = burst_files(&e, b);
    println!(
        "burst of {b} new guarded files: {held} held, {} lost, {} left in place; {:.1} s to settle ({:.0} holds/s), {rescans} queue-overflow rescans",
        b - held,
        0,
        secs,
        held as f64 / secs
    );
    let (secs, held, ok) = burst_same(&e, b);
    println!(
        "burst of {b} rename-over writes to one file: settled in {secs:.1} s, {held} distinct writes held (the rest superseded by the writer's next write before the watcher saw them), file reverted and last write held: {ok}"
    );
    let s = knob("IDLE_SECS", 10) as u64;
    let (ticks, secs) = idle(&e, s);
    println!(
        "idle CPU over {secs} s: {ticks} ticks of 1/{} s ({:.3}%)",
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100),
        ticks as f64 / (secs as f64 * 100.0) * 100.0
    );
    let peaks = PEAKS.lock().unwrap();
    let names = ["latency", "burst of new files", "burst to one file", "idle"];
    let shown: Vec<String> = names
        .iter()
        .zip(peaks.iter())
        .map(|(n, kb)| format!("{n} {:.1} MB", *kb as f64 / 1000.0))
        .collect();
    println!("peak RSS (VmHWM) of the watcher: {}", shown.join(", "));
    let _ = Path::new("");
}
