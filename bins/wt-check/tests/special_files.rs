//! FIFOs planted where git opens a file (R5-11, R5-14). git opens `HEAD`, `gitdir` and the
//! rest of a git dir with a blocking `open(2)`: a FIFO in a new worktree entry hangs the
//! owner's `git worktree list`, one at a nested repository's `.git/HEAD` hangs `git status`.
//! Positive control on every git: the plain command hangs (killed after a timeout). Then
//! `wt-check check` answers promptly with an error-level finding naming the file, and
//! `--restore` moves it aside (never deletes), after which the same git command returns.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run `c`; `None` when it is still running after `secs` (it is then killed).
fn run_for(mut c: Command, secs: u64) -> Option<(i32, String)> {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut out = String::new();
            use std::io::Read;
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            return Some((st.code().unwrap_or(-1), out));
        }
        if Instant::now() > end {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn plain_git(w: &common::World, git: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(git);
    w.env(&mut c);
    c.arg("-C").arg(dir).args(args);
    c
}

fn check(w: &common::World, restore: bool) -> (i32, Vec<serde_json::Value>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
    w.env(&mut c);
    c.args(["check", "--state"]).arg(w.state());
    if restore {
        c.arg("--restore");
    }
    c.arg(w.main());
    let started = Instant::now();
    let (code, out) = run_for(c, 60).expect("wt-check check hung (killed after 60 s)");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "wt-check check took too long"
    );
    let events = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (code, events)
}

fn mkfifo(p: &Path) {
    nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
}

fn names(events: &[serde_json::Value], path: &Path) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["path"].as_str() == Some(path.to_str().unwrap()))
        .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn fifos_in_a_new_worktree_entry_are_reported_promptly_and_set_aside() {
    for git in common::gits() {
        let w = common::world();
        w.pin();
        let entry = w.git_dir().join("worktrees/zz");
        std::fs::create_dir_all(&entry).unwrap();
        mkfifo(&entry.join("HEAD"));
        mkfifo(&entry.join("gitdir"));
        // Positive control: the owner's plain git hangs there.
        assert!(
            run_for(plain_git(&w, &git, &w.main(), &["worktree", "list"]), 5).is_none(),
            "{}: `git worktree list` did not hang on the planted FIFOs",
            git.display()
        );
        let (code, ev) = check(&w, false);
        assert_ne!(code, 0, "{}: {ev:#?}", git.display());
        let head = entry.join("HEAD");
        let e = ev
            .iter()
            .find(|e| e["path"].as_str() == Some(head.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{}: HEAD fifo not reported: {ev:#?}", git.display()));
        assert_eq!(e["change"], "special_file");
        assert_eq!(e["level"], "error");
        // The scan is not run over a FIFO: it says so.
        assert!(ev.iter().any(|e| e["event"] == "check_incomplete"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("commit scan skipped")));
        // --restore: moved aside, not deleted; git answers again.
        let (_, ev) = check(&w, true);
        // The planted entry is moved aside whole, its FIFOs with it.
        assert!(
            names(&ev, &entry).contains(&"quarantined".to_owned()),
            "{ev:#?}"
        );
        let q = w.root().join("state");
        let kept = walk_fifos(&q);
        assert!(kept.len() >= 2, "the FIFOs were not kept aside: {kept:?}");
        let back = run_for(plain_git(&w, &git, &w.main(), &["worktree", "list"]), 20);
        assert_eq!(back.map(|b| b.0), Some(0), "{}", git.display());
        let (code, ev) = check(&w, false);
        assert_eq!(code, 0, "{}: {ev:#?}", git.display());
    }
}

#[test]
fn a_fifo_at_a_nested_repositorys_head_is_reported_and_set_aside() {
    for git in common::gits() {
        let w = common::world();
        w.pin();
        let sub = w.main().join("nested/.git");
        std::fs::create_dir_all(sub.join("objects")).unwrap();
        std::fs::create_dir_all(sub.join("refs")).unwrap();
        mkfifo(&sub.join("HEAD"));
        // Positive control: the owner's `git status` enters the folder and hangs.
        assert!(
            run_for(
                plain_git(&w, &git, &w.main(), &["status", "--porcelain"]),
                5
            )
            .is_none(),
            "{}: `git status` did not hang on the nested FIFO HEAD",
            git.display()
        );
        let (code, ev) = check(&w, false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        let head = sub.join("HEAD");
        let e = ev
            .iter()
            .find(|e| e["path"].as_str() == Some(head.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{}: nested FIFO not reported: {ev:#?}", git.display()));
        assert_eq!(e["rule"], "GW021");
        assert_eq!(e["level"], "error");
        let (_, ev) = check(&w, true);
        assert!(
            names(&ev, &head).contains(&"quarantined".to_owned()),
            "{ev:#?}"
        );
        assert_eq!(walk_fifos(&w.root().join("state")).len(), 1);
        let back = run_for(
            plain_git(&w, &git, &w.main(), &["status", "--porcelain"]),
            20,
        );
        assert_eq!(back.map(|b| b.0), Some(0), "{}", git.display());
    }
}

/// A FIFO under a name git opens by name in the work tree (`.gitignore` in a subfolder,
/// `.gitattributes`, `.mailmap` at the top): the owner's `git status` / `git log` hangs on it
/// (sixth red-team pass, R6-4). `check` reports each as GW021 and `--restore` moves it aside,
/// after which the owner's git runs. Positive control: plain git hangs first.
#[test]
fn fifos_git_opens_by_name_in_the_work_tree_are_reported_and_set_aside() {
    for git in common::gits() {
        let w = common::world();
        w.pin();
        std::fs::create_dir_all(w.main().join("sub")).unwrap();
        let fifos = [
            w.main().join("sub/.gitignore"),
            w.main().join(".gitattributes"),
            w.main().join(".mailmap"),
        ];
        for f in &fifos {
            mkfifo(f);
        }
        assert!(
            run_for(
                plain_git(&w, &git, &w.main(), &["status", "--porcelain"]),
                5
            )
            .is_none(),
            "{}: `git status` did not hang on the work-tree FIFOs",
            git.display()
        );
        let (code, ev) = check(&w, false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        for f in &fifos {
            let e = ev
                .iter()
                .find(|e| e["path"].as_str() == Some(f.to_str().unwrap()))
                .unwrap_or_else(|| {
                    panic!("{}: {} not reported: {ev:#?}", git.display(), f.display())
                });
            assert_eq!(e["rule"], "GW021");
            assert_eq!(e["level"], "error");
        }
        let (_, ev) = check(&w, true);
        for f in &fifos {
            assert!(
                names(&ev, f).contains(&"quarantined".to_owned()),
                "{}: {ev:#?}",
                f.display()
            );
            assert!(
                std::fs::symlink_metadata(f).is_err(),
                "{} still there",
                f.display()
            );
        }
        let back = run_for(
            plain_git(&w, &git, &w.main(), &["status", "--porcelain"]),
            20,
        );
        assert_eq!(back.map(|b| b.0), Some(0), "{}", git.display());
    }
}

/// FIFOs below `dir` (the quarantine), not following links.
fn walk_fifos(dir: &Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_fifo() {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn pin_refuses_a_fifo_in_the_git_dir_in_one_line() {
    let w = common::world();
    let fifo = w.git_dir().join("worktrees/zz/HEAD");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    mkfifo(&fifo);
    let mut c = Command::new(env!("CARGO_BIN_EXE_wt-check"));
    w.env(&mut c);
    c.args(["pin", "--session", "s1", "--state"])
        .arg(w.state())
        .arg(w.main())
        .stderr(Stdio::piped());
    let out = c.spawn().unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    let mut out = out;
    let status = loop {
        if let Some(s) = out.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            out.kill().unwrap();
            out.wait().unwrap();
            panic!("pin hung on the FIFO (killed after 60 s)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read;
    out.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(fifo.to_str().unwrap()) && err.contains("fifo"),
        "{err}"
    );
    assert!(!w.state().exists());
}

/// Files the owner's config names by path (`catalogue::PATH_KEYS`): a FIFO, or a link to one
/// outside the work tree, at `core.excludesFile`, `core.attributesFile`,
/// `blame.ignoreRevsFile`, `commit.template`, `mailmap.file` hangs the owner's `git status`,
/// `blame`, `commit`, `log` (seventh red-team pass, R7-4). Honest control first: the same keys
/// naming regular files (a real `.git-blame-ignore-revs`) leave `check` clean. Positive control
/// per file on every git: plain git hangs on it alone. Then `check` reports each as GW021,
/// `audit` too, and `--restore` moves each aside (a link, not what it points at), after which
/// the owner's git answers (an error for the missing file, no hang).
#[test]
fn fifos_at_paths_the_owners_config_names_are_reported_and_set_aside() {
    let outside_fifo = |w: &common::World| {
        let f = w.outside().join("fifo");
        if std::fs::symlink_metadata(&f).is_err() {
            mkfifo(&f);
        }
        f
    };
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        // (key, file, where, the owner's command, plant a link rather than a FIFO)
        let cases: [(&str, &str, &str, &[&str], bool); 5] = [
            (
                "core.excludesFile",
                ".myignore",
                "global",
                &["status", "--porcelain"],
                false,
            ),
            (
                "core.attributesFile",
                ".myattr",
                "local",
                &["status", "--porcelain"],
                true,
            ),
            (
                "blame.ignoreRevsFile",
                ".git-blame-ignore-revs",
                "local",
                &["blame", "README"],
                false,
            ),
            (
                "commit.template",
                ".gitmessage",
                "local",
                &["commit", "-q", "--allow-empty"],
                true,
            ),
            ("mailmap.file", ".mm", "local", &["log", "-1"], false),
        ];
        for (key, file, scope, _, _) in &cases {
            std::fs::write(m.join(file), "# the project's own file\n").unwrap();
            w.git(&m, &["config", &format!("--{scope}"), key, file]);
        }
        w.git(&m, &["add", "-A"]);
        w.git(&m, &["commit", "-q", "-m", "project files"]);
        w.pin();
        // Honest control: regular files at every named path raise nothing.
        let (code, ev) = check(&w, false);
        assert_eq!(code, 0, "{}: honest files reported: {ev:#?}", git.display());
        let audit = w.wt_check(&["audit", "--format", "json", m.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&audit.stdout);
        assert!(!text.contains("GW021"), "{}: {text}", git.display());
        for (_, file, _, cmd, link) in &cases {
            let p = m.join(file);
            std::fs::remove_file(&p).unwrap();
            if *link {
                std::os::unix::fs::symlink(outside_fifo(&w), &p).unwrap();
            } else {
                mkfifo(&p);
            }
            let mut c = plain_git(&w, &git, &m, cmd);
            c.env("GIT_EDITOR", "true");
            let r = run_for(c, 4);
            assert!(
                r.is_none(),
                "{}: `git {cmd:?}` did not hang on {file}: {r:?}",
                git.display()
            );
            // A killed `git status` leaves its `index.lock` behind.
            let _ = std::fs::remove_file(w.git_dir().join("index.lock"));
            // Alone: the next case's control must hang on its own file only.
            std::fs::remove_file(&p).unwrap();
            std::fs::write(&p, "# the project's own file\n").unwrap();
        }
        for (_, file, _, _, link) in &cases {
            let p = m.join(file);
            std::fs::remove_file(&p).unwrap();
            if *link {
                std::os::unix::fs::symlink(outside_fifo(&w), &p).unwrap();
            } else {
                mkfifo(&p);
            }
        }
        let audit = w.wt_check(&["audit", "--format", "json", m.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&audit.stdout);
        for (key, file, ..) in &cases {
            let p = m.join(file);
            assert!(
                text.contains(&format!("\"path\":\"{}\"", p.display()))
                    || text.contains(&format!("\"path\": \"{}\"", p.display())),
                "{}: audit missed {key} = {file}: {text}",
                git.display()
            );
        }
        let (code, ev) = check(&w, false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        for (key, file, ..) in &cases {
            let p = m.join(file);
            let e = ev
                .iter()
                .find(|e| e["path"].as_str() == Some(p.to_str().unwrap()))
                .unwrap_or_else(|| {
                    panic!("{}: {key} = {file} not reported: {ev:#?}", git.display())
                });
            assert_eq!(e["rule"], "GW021", "{e}");
            assert_eq!(e["level"], "error", "{e}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains(&key.to_ascii_lowercase()),
                "{e}"
            );
        }
        let (_, ev) = check(&w, true);
        for (_, file, ..) in &cases {
            let p = m.join(file);
            assert!(
                names(&ev, &p).contains(&"quarantined".to_owned()),
                "{}: {ev:#?}",
                p.display()
            );
            assert!(
                std::fs::symlink_metadata(&p).is_err(),
                "{} still there",
                p.display()
            );
        }
        // What a link pointed at is not the agent's to move: it stays.
        assert!(std::fs::symlink_metadata(w.outside().join("fifo")).is_ok());
        for (_, file, _, cmd, _) in &cases {
            let mut c = plain_git(&w, &git, &m, cmd);
            c.env("GIT_EDITOR", "true");
            assert!(
                run_for(c, 20).is_some(),
                "{}: `git {cmd:?}` still hangs after --restore ({file})",
                git.display()
            );
        }
    }
}

/// The session's own worktree entry may change (git writes `HEAD`, `gitdir`, `locked`), but a
/// link there is never git's layout (ninth red-team pass, R9-13/R9-14): a link to a FIFO hung
/// the owner's `git worktree list` and `check`'s own ref snapshot, a link to an owner's file
/// had `git worktree repair` write through it. `check` reports it (and does not hang); safe-git
/// refuses the worktree commands. Positive control: plain git hangs on it.
#[test]
fn a_link_in_the_sessions_own_worktree_entry_is_reported_not_followed() {
    for git in common::gits() {
        for name in ["HEAD", "gitdir", "locked"] {
            let w = common::world();
            w.pin();
            let entry = w.git_dir().join("worktrees/wt1");
            let fifo = w.own().parent().unwrap().join("ff");
            mkfifo(&fifo);
            let at = entry.join(name);
            let _ = std::fs::remove_file(&at);
            std::os::unix::fs::symlink(&fifo, &at).unwrap();
            assert!(
                run_for(plain_git(&w, &git, &w.main(), &["worktree", "list"]), 4).is_none(),
                "{} {name}: control: plain git worktree list did not hang",
                git.display()
            );
            let (code, ev) = check(&w, false);
            assert_ne!(code, 0, "{} {name}: {ev:#?}", git.display());
            assert!(
                !names(&ev, &at).is_empty(),
                "{} {name}: not named: {ev:#?}",
                git.display()
            );
            let sg =
                std::path::PathBuf::from(env!("CARGO_BIN_EXE_wt-check")).with_file_name("safe-git");
            if !sg.exists() {
                // Built by `cargo test --workspace`; `-p wt-check` alone does not build it.
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "{}: safe-git is not built (CI=true: this part must run)",
                    sg.display()
                );
                eprintln!("safe-git part SKIPPED: {} is not built", sg.display());
            } else {
                let mut c = Command::new(&sg);
                w.env(&mut c);
                c.args(["--git", git.to_str().unwrap(), "worktree", "list"])
                    .current_dir(w.main());
                let got = run_for(c, 30).expect("safe-git worktree list hung");
                assert_eq!(got.0, 122, "{} {name}: safe-git", git.display());
            }
        }
    }
}

/// Eleventh red-team pass, R11-9/R11-10: a link to `/dev/stdin` at a path the owner's config
/// names (`commit.template`) and at `.gitmodules`, in the main work tree. It names the
/// reader's own standard input: `/dev/null` for `check` (which used to pass it), a pipe or a
/// terminal for the owner's git, which then waits forever. Positive control: plain
/// `git commit` with an open pipe as stdin hangs. Both must be GW021 findings of `check`.
#[test]
fn links_to_dev_stdin_at_names_git_opens_are_reported() {
    for git in common::gits() {
        let w = common::world();
        let m = w.main();
        std::fs::write(m.join(".gitmessage"), "# template\n").unwrap();
        w.git(&m, &["config", "commit.template", ".gitmessage"]);
        w.git(&m, &["add", "-A"]);
        w.git(&m, &["commit", "-q", "-m", "template"]);
        w.pin();
        for name in [".gitmessage", ".gitmodules"] {
            let p = m.join(name);
            let _ = std::fs::remove_file(&p);
            std::os::unix::fs::symlink("/dev/stdin", &p).unwrap();
        }
        // Control: the owner's git with an open pipe as stdin (an IDE, `sleep | git …`).
        let mut c = plain_git(&w, &git, &m, &["commit", "-q", "--allow-empty"]);
        c.env("GIT_EDITOR", "true");
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(3));
        let hung = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(w.git_dir().join("index.lock"));
        assert!(hung, "{}: control: git commit did not hang", git.display());
        let (code, ev) = check(&w, false);
        assert_eq!(code, 1, "{}: {ev:#?}", git.display());
        for name in [".gitmessage", ".gitmodules"] {
            let p = m.join(name);
            assert!(
                ev.iter()
                    .any(|e| e["rule"] == "GW021" && e["path"].as_str() == p.to_str()),
                "{}: {name} not reported: {ev:#?}",
                git.display()
            );
        }
    }
}

/// The baseline's repository is audited once per check, for every root of the nested walk
/// (seventh performance pass). What only that audit finds — a FIFO at a path the owner's
/// config names — must be found whatever the roots are: with no session folder and no
/// linked worktree (the main work tree the only root: the sixth pass's seed lost it there),
/// and in a linked worktree that is not the session's (the per-root audits looked only at
/// the main work tree and the first worktree their walk met). Positive control on every git:
/// the owner's `git commit` in that folder hangs on it.
#[test]
fn fifos_at_config_named_paths_are_reported_whatever_the_roots() {
    for git in common::gits() {
        // (remove the linked worktrees and pin without a session, where the FIFO lies)
        for (alone, in_other) in [(true, false), (false, true)] {
            let w = common::world();
            let m = w.main();
            std::fs::write(m.join(".gitmessage"), "# template\n").unwrap();
            w.git(&m, &["config", "commit.template", ".gitmessage"]);
            w.git(&m, &["add", "-A"]);
            w.git(&m, &["commit", "-q", "-m", "template"]);
            let top = if in_other { w.other() } else { m.clone() };
            if alone {
                for wt in [w.other(), w.own()] {
                    w.git(&m, &["worktree", "remove", "--force", wt.to_str().unwrap()]);
                }
                let out = w.wt_check(&[
                    "pin",
                    "--state",
                    w.state().to_str().unwrap(),
                    m.to_str().unwrap(),
                ]);
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            } else {
                std::fs::write(top.join(".gitmessage"), "# template\n").unwrap();
                w.pin();
            }
            let p = top.join(".gitmessage");
            std::fs::remove_file(&p).unwrap();
            mkfifo(&p);
            let mut c = plain_git(&w, &git, &top, &["commit", "-q", "--allow-empty"]);
            c.env("GIT_EDITOR", "true");
            assert!(
                run_for(c, 4).is_none(),
                "{} alone={alone}: control: git commit did not hang",
                git.display()
            );
            let gd = w.git_dir();
            let _ = std::fs::remove_file(gd.join("index.lock"));
            let _ = std::fs::remove_file(gd.join("worktrees/other/index.lock"));
            let (code, ev) = check(&w, false);
            assert_eq!(code, 1, "{} alone={alone}: {ev:#?}", git.display());
            assert!(
                ev.iter()
                    .any(|e| e["rule"] == "GW021" && e["path"].as_str() == p.to_str()),
                "{} alone={alone}: {} not reported: {ev:#?}",
                git.display(),
                p.display()
            );
        }
    }
}

/// The output of a plain git command that must succeed (the positive controls below).
fn plain_out(w: &common::World, git: &Path, dir: &Path, args: &[&str]) -> String {
    let (code, out) = run_for(plain_git(w, git, dir, args), 20)
        .unwrap_or_else(|| panic!("{}: git {args:?} hung", git.display()));
    assert_eq!(code, 0, "{}: git {args:?}", git.display());
    out
}

/// A replace ref shown to git through a link in the ref namespace (sixteenth red-team pass,
/// R16-1: `refs/replace` a link to a folder in the work tree; R16-2: one replace ref a link
/// to a file there): both gits read the agent's blob for a blob of the owner's history, so
/// the owner's `reset --hard`/`checkout` writes it, and the commit scan (gix) never saw the
/// replace ref. `check` reports the link (`ref_link`, error) and `--restore` moves it aside,
/// after which git reads the owner's blob again.
#[test]
fn replace_refs_behind_links_are_reported_and_set_aside() {
    for git in common::gits() {
        for variant in ["folder", "file"] {
            let w = common::world();
            w.pin();
            let m = w.main();
            let honest = plain_out(&w, &git, &m, &["rev-parse", "HEAD:README"]);
            let h = honest.trim();
            let e = {
                let mut c = plain_git(&w, &git, &m, &["hash-object", "-w", "--stdin"]);
                c.stdin(Stdio::piped()).stdout(Stdio::piped());
                let mut child = c.spawn().unwrap();
                use std::io::Write;
                child.stdin.take().unwrap().write_all(b"evil\n").unwrap();
                let out = child.wait_with_output().unwrap();
                String::from_utf8(out.stdout).unwrap().trim().to_owned()
            };
            let (link, target) = match variant {
                "folder" => {
                    std::fs::create_dir_all(m.join(".cache/rd")).unwrap();
                    std::fs::write(m.join(".cache/rd").join(h), format!("{e}\n")).unwrap();
                    (w.git_dir().join("refs/replace"), m.join(".cache/rd"))
                }
                _ => {
                    std::fs::write(m.join(".agentref"), format!("{e}\n")).unwrap();
                    std::fs::create_dir_all(w.git_dir().join("refs/replace")).unwrap();
                    (
                        w.git_dir().join("refs/replace").join(h),
                        m.join(".agentref"),
                    )
                }
            };
            std::os::unix::fs::symlink(&target, &link).unwrap();
            // Positive control: the owner's git reads the agent's blob for README.
            assert_eq!(
                plain_out(&w, &git, &m, &["show", "HEAD:README"]),
                "evil\n",
                "{} {variant}: git did not follow the link",
                git.display()
            );
            // Reported (an error), the scan skipped: exit 2, as for a FIFO.
            let (code, ev) = check(&w, false);
            assert_ne!(code, 0, "{} {variant}: {ev:#?}", git.display());
            let found = ev
                .iter()
                .find(|x| x["path"].as_str() == Some(link.to_str().unwrap()))
                .unwrap_or_else(|| panic!("{variant}: link not reported: {ev:#?}"));
            assert_eq!(found["change"], "ref_link");
            assert_eq!(found["level"], "error");
            let (_, ev) = check(&w, true);
            assert!(
                names(&ev, &link).contains(&"quarantined".to_owned()),
                "{ev:#?}"
            );
            assert!(std::fs::symlink_metadata(&link).is_err());
            assert_eq!(
                plain_out(&w, &git, &m, &["show", "HEAD:README"]),
                "hello\n",
                "{} {variant}: after --restore",
                git.display()
            );
        }
    }
}

/// `refs` itself a link, in the common dir and in a worktree entry, to a copy holding a FIFO
/// that a `HEAD` names (R16-4, R16-7): the owner's git hangs; `check` hung in the commit
/// scan (gix opened the FIFO through the link) and otherwise exited 0. Now it answers
/// promptly, reports the link and skips the scan, and `--restore` moves the link aside.
#[test]
fn a_refs_folder_that_is_a_link_is_reported_without_hanging() {
    for git in common::gits() {
        for entry in ["", "worktrees/wt1"] {
            let w = common::world();
            w.pin();
            let gd = w.git_dir().join(entry);
            let copy = w.main().join(".refs-copy");
            if gd.join("refs").exists() {
                let status = Command::new("cp")
                    .arg("-a")
                    .arg(gd.join("refs"))
                    .arg(&copy)
                    .status()
                    .unwrap();
                assert!(status.success());
                std::fs::remove_dir_all(gd.join("refs")).unwrap();
            }
            // A linked worktree's own refs are `refs/worktree/*` (the rest are the common
            // dir's).
            let ns = if entry.is_empty() {
                "heads"
            } else {
                "worktree"
            };
            std::fs::create_dir_all(copy.join(ns)).unwrap();
            mkfifo(&copy.join(ns).join("x"));
            std::os::unix::fs::symlink(&copy, gd.join("refs")).unwrap();
            std::fs::write(gd.join("HEAD"), format!("ref: refs/{ns}/x\n")).unwrap();
            let dir = if entry.is_empty() { w.main() } else { w.own() };
            // Positive control: the owner's git hangs.
            assert!(
                run_for(plain_git(&w, &git, &dir, &["status"]), 5).is_none(),
                "{} {entry:?}: `git status` did not hang",
                git.display()
            );
            let (code, ev) = check(&w, false);
            assert_ne!(code, 0, "{} {entry:?}: {ev:#?}", git.display());
            let link = gd.join("refs");
            assert!(
                ev.iter()
                    .any(|x| x["path"].as_str() == Some(link.to_str().unwrap())
                        && x["change"] == "ref_link"),
                "{entry:?}: {ev:#?}"
            );
            let (_, ev) = check(&w, true);
            assert!(
                names(&ev, &link).contains(&"quarantined".to_owned()),
                "{ev:#?}"
            );
        }
    }
}

/// The shared index of a split index (`sharedindex.<id>`) made a FIFO, or a link to one in
/// the work tree (sixteenth red-team pass, R16-11): the owner's `git status` hangs, and so
/// did `check` (gix opened it with a blocking open while reading the index's entries). Now
/// the check answers, reports it, and `--restore` moves it aside.
#[test]
fn a_fifo_shared_index_hangs_neither_check_nor_restore() {
    for git in common::gits() {
        for variant in ["fifo", "link"] {
            let w = common::world();
            let m = w.main();
            w.git(&m, &["update-index", "--split-index"]);
            w.pin();
            let shared = std::fs::read_dir(w.git_dir())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .starts_with("sharedindex.")
                })
                .expect("a shared index");
            std::fs::remove_file(&shared).unwrap();
            if variant == "fifo" {
                mkfifo(&shared);
            } else {
                mkfifo(&m.join(".f"));
                std::os::unix::fs::symlink(m.join(".f"), &shared).unwrap();
            }
            // Positive control: the owner's git hangs.
            assert!(
                run_for(plain_git(&w, &git, &m, &["status"]), 5).is_none(),
                "{} {variant}: `git status` did not hang",
                git.display()
            );
            let (code, ev) = check(&w, false);
            assert_ne!(code, 0, "{} {variant}: {ev:#?}", git.display());
            assert!(
                ev.iter()
                    .any(|x| x["path"].as_str() == Some(shared.to_str().unwrap())
                        && x["change"] == "special_file"),
                "{variant}: {ev:#?}"
            );
            let (_, ev) = check(&w, true);
            assert!(
                names(&ev, &shared).contains(&"quarantined".to_owned()),
                "{variant}: {ev:#?}"
            );
        }
    }
}
