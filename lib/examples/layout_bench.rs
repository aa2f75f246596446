//! Measures `layout::discover` and `layout::worktree_entries` against the git commands that
//! answer the same question, in the same run: `git rev-parse --absolute-git-dir` and
//! `git worktree list --porcelain`. Usage: `layout_bench <git> <start folder> <common dir> [N]`.
//! Driven by `benches/layout.sh`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn time<F: FnMut()>(n: u32, mut f: F) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed() / n
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: layout_bench <git> <start folder> <common dir> [N]");
        std::process::exit(120);
    }
    let git = PathBuf::from(&args[1]);
    let start = PathBuf::from(&args[2]);
    let common = PathBuf::from(&args[3]);
    let n: u32 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(200);
    let git_run = |a: &[&str]| {
        let out = Command::new(&git)
            .args(a)
            .current_dir(&start)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {a:?} failed");
    };
    let d = time(n, || {
        gitward::layout::discover(&start, &[]).expect("discover");
    });
    let g = time(n, || git_run(&["rev-parse", "--absolute-git-dir"]));
    let w = time(n, || {
        gitward::layout::worktree_entries(&common).expect("worktree_entries");
    });
    let gw = time(n, || git_run(&["worktree", "list", "--porcelain"]));
    let sm = time(n, || {
        gitward::layout::submodule_git_dirs(&common).expect("submodule_git_dirs");
    });
    println!("runs per measurement: {n}");
    println!(
        "discover            {:>9.1} µs   git rev-parse --absolute-git-dir {:>9.1} µs   ratio {:.2}",
        d.as_secs_f64() * 1e6,
        g.as_secs_f64() * 1e6,
        d.as_secs_f64() / g.as_secs_f64()
    );
    println!(
        "worktree_entries    {:>9.1} µs   git worktree list --porcelain    {:>9.1} µs   ratio {:.2}",
        w.as_secs_f64() * 1e6,
        gw.as_secs_f64() * 1e6,
        w.as_secs_f64() / gw.as_secs_f64()
    );
    println!("submodule_git_dirs  {:>9.1} µs", sm.as_secs_f64() * 1e6);
    // The process's own peak (the gits it ran are children, not counted): every layout call
    // above ran in it, `n` times each.
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0);
    println!(
        "peak RSS (VmHWM) of this process, all layout calls: {:.1} MB",
        hwm as f64 / 1024.0
    );
}
