//! Benchmark driver for `gitward::scan` (used by `benches/scan.sh`).
//!
//! `scan-bench GIT_DIR BASE [THREADS]`: scans every commit reachable from the repository's
//! refs and not from BASE (a snapshot in which `refs/heads/main` pointed at BASE), then
//! prints the report's stats, the finding count and the peak RSS (VmHWM) as one JSON line.

use gitward::scan::{self, Limits, RefSnapshot, RefValue};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn vm_hwm_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
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
    let limits = Limits {
        threads,
        ..Limits::default()
    };
    match scan::scan(&git_dir, &snap, &limits) {
        Ok(rep) => {
            let out = serde_json::json!({
                "stats": rep.stats,
                "findings": rep.findings.len(),
                "rewritten": rep.rewritten.len(),
                "incomplete": rep.incomplete,
                "vm_hwm_kb": vm_hwm_kb(),
            });
            println!("{out}");
        }
        Err(e) => {
            eprintln!("scan-bench: {e}");
            std::process::exit(124);
        }
    }
}
