//! Micro benchmark of `config::enumerate` and `attributes::collect`, against plain git in the
//! same run. Run with `cargo bench -p gitward --bench config_attributes` (release build).
//!
//! Fixtures are built in a temp folder with an isolated git (temp HOME, no system config):
//! a repository whose local config includes 3 files (one through `includeIf`) and whose
//! global config includes one more, and 10 000 tracked files in 100 folders with 5
//! `.gitattributes` files. Figures: median wall time over many runs.

use gitward::{attributes, config};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn git(g: &Path, home: &Path, cwd: &Path, args: &[&str]) {
    let st = Command::new(g)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(st.success(), "git {args:?}");
}

fn median(mut f: impl FnMut(), runs: usize) -> Duration {
    f(); // warm caches
    let mut v: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    v[runs / 2]
}

fn w(p: &Path, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, s).unwrap();
}

fn main() {
    let g = PathBuf::from(
        ["/usr/local/bin/git", "/usr/bin/git"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("a git"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    git(&g, &home, &root, &["init", "-q", "-b", "main", "repo"]);
    let repo = root.join("repo");
    let gd = repo.join(".git");
    let mut local = std::fs::read_to_string(gd.join("config")).unwrap();
    local.push_str(
        "[include]\n\tpath = inc1.cfg\n\tpath = inc2.cfg\n[includeIf \"onbranch:main\"]\n\tpath = inc3.cfg\n[remote \"origin\"]\n\turl = https://example.invalid/r\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
    );
    w(&gd.join("config"), &local);
    for i in 1..=3 {
        w(
            &gd.join(format!("inc{i}.cfg")),
            &format!("[alias]\n\ta{i} = status\n[diff \"d{i}\"]\n\ttextconv = cat\n[filter \"f{i}\"]\n\tclean = cat\n\tsmudge = cat\n"),
        );
    }
    w(
        &home.join(".gitconfig"),
        "[user]\n\tname = b\n\temail = b@b\n[include]\n\tpath = ~/.gitconfig.d/extra\n",
    );
    w(&home.join(".gitconfig.d/extra"), "[core]\n\tpager = less\n");

    let copts =
        config::Options::for_repository(Some(&repo), &gd, &gd).with_owner(None, Some(&home), None);
    let e = config::enumerate(&copts).unwrap();
    assert_eq!(e.files().iter().filter(|f| f.origin.depth > 0).count(), 4);
    let t_config = median(
        || {
            config::enumerate(&copts).unwrap();
        },
        2001,
    );

    for d in 0..100 {
        for f in 0..100 {
            w(&repo.join(format!("d{d:02}/f{f:03}.txt")), "x\n");
        }
        if d % 20 == 0 {
            w(
                &repo.join(format!("d{d:02}/.gitattributes")),
                "*.txt diff=d1\n*.bin filter=f2\n",
            );
        }
    }
    git(&g, &home, &repo, &["add", "."]);
    git(&g, &home, &repo, &["commit", "-q", "-m", "bench"]);
    let mut aopts = attributes::Options::for_repository(Some(&repo), &gd, &gd);
    aopts.attributes_files =
        attributes::attributes_files(&e, Some(&home), None, Some(&repo), None).unwrap();
    let a = attributes::collect(&aopts).unwrap();
    assert_eq!(a.names(gitward::catalogue::DriverKind::Diff).len(), 1);
    let t_attr = median(
        || {
            attributes::collect(&aopts).unwrap();
        },
        51,
    );
    let mut noindex = aopts.clone();
    noindex.read_index = false;
    let t_attr_walk = median(
        || {
            attributes::collect(&noindex).unwrap();
        },
        51,
    );
    let mut results = Vec::new();
    for gbin in ["/usr/bin/git", "/usr/local/bin/git"] {
        let gbin = Path::new(gbin);
        if !gbin.exists() {
            continue;
        }
        let status = median(|| git(gbin, &home, &repo, &["status", "--porcelain"]), 31);
        let cfg = median(|| git(gbin, &home, &repo, &["config", "-l"]), 101);
        results.push((gbin.display().to_string(), status, cfg));
    }
    println!("config::enumerate, 1 local + 3 includes + 1 global + 1 include: {t_config:?}");
    println!("attributes::collect, 10k files, 100 folders, 5 .gitattributes, index: {t_attr:?} (walk only: {t_attr_walk:?})");
    for (g, status, cfg) in results {
        println!(
            "{g}: status --porcelain {status:?}; config -l {cfg:?}; enumerate/status = {:.3}; (enumerate+collect)/status = {:.3}",
            t_config.as_secs_f64() / status.as_secs_f64(),
            (t_config + t_attr).as_secs_f64() / status.as_secs_f64()
        );
    }
}
