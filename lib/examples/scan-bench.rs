//! Benchmark driver for `gitward::scan` (used by `benches/scan.sh`).
//!
//! `scan-bench GIT_DIR BASE [THREADS]`: scans every commit reachable from the repository's
//! refs and not from BASE (a snapshot in which `refs/heads/main` pointed at BASE), then
//! prints the report's stats, the finding count, peak RSS (VmHWM), sampled peak anonymous
//! memory (RssAnon) and resident file pages (RssFile) as one JSON line.
//! `SCAN_BENCH_MAX_COMMITS=N` lowers `Limits::max_commits` (the report then says why it stopped);
//! `SCAN_BENCH_CACHE_MIB=N` sets `Limits::max_cache_bytes` to N MiB.

use gitward::scan::{self, Limits, RefSnapshot, RefValue};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A `/proc/self/status` field in KiB (`VmHWM`, `RssAnon`, `RssFile`).
fn status_kb(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with(field))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: scan-bench GIT_DIR BASE [THREADS]");
        std::process::exit(120);
    }
    let git_dir = PathBuf::from(&args[1]);
    let threads = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(2);
    let mut snap = match RefSnapshot::take(&git_dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("scan-bench: {e}");
            std::process::exit(124);
        }
    };
    snap.refs = BTreeMap::from([(
        "refs/heads/main".to_string(),
        RefValue {
            id: Some(args[2].clone()),
            symbolic: None,
        },
    )]);
    // SCAN_BENCH_MAX_COMMITS: a lower commit cap, to show what happens at it (`scale` mode).
    let max_commits = std::env::var("SCAN_BENCH_MAX_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(Limits::default().max_commits);
    // SCAN_BENCH_CACHE_MIB: another `Limits::max_cache_bytes` (in MiB), to separate what the
    // caches hold from what grows with the commits.
    let max_cache_bytes = std::env::var("SCAN_BENCH_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(Limits::default().max_cache_bytes, |m| m << 20);
    let limits = Limits {
        threads,
        max_commits,
        max_cache_bytes,
        ..Limits::default()
    };
    // VmHWM counts the mapped pack files' resident pages too (page cache, reclaimable);
    // RssAnon is the scan's own memory. Linux keeps no peak for it, so sample it.
    let stop = Arc::new(AtomicBool::new(false));
    let peak_anon = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak_anon.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(v) = status_kb("RssAnon:") {
                    peak.fetch_max(v, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let result = scan::scan(&git_dir, &snap, &limits);
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    match result {
        Ok(rep) => {
            // Findings by severity and by rule; SCAN_BENCH_FINDINGS=FILE writes them all.
            let mut by_severity = BTreeMap::<String, u64>::new();
            let mut by_rule = BTreeMap::<String, u64>::new();
            for f in &rep.findings {
                let sev = serde_json::to_value(f.severity).unwrap_or_default();
                *by_severity
                    .entry(sev.as_str().unwrap_or("").to_string())
                    .or_default() += 1;
                *by_rule
                    .entry(format!("{} {}", f.rule_id, sev.as_str().unwrap_or("")))
                    .or_default() += 1;
            }
            if let Some(path) = std::env::var_os("SCAN_BENCH_FINDINGS") {
                let text = serde_json::to_string_pretty(&rep.findings).unwrap_or_default();
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("scan-bench: {}: {e}", PathBuf::from(path).display());
                }
            }
            let out = serde_json::json!({
                "stats": rep.stats,
                "findings": rep.findings.len(),
                "by_severity": by_severity,
                "by_rule": by_rule,
                "exit": rep.exit_code().code,
                "rewritten": rep.rewritten.len(),
                "incomplete": rep.incomplete,
                "vm_hwm_kb": status_kb("VmHWM:"),
                "rss_anon_peak_kb": peak_anon.load(Ordering::Relaxed),
                "rss_file_kb": status_kb("RssFile:"),
            });
            println!("{out}");
        }
        Err(e) => {
            eprintln!("scan-bench: {e}");
            std::process::exit(124);
        }
    }
}
