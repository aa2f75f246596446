//! The tampering cases of fixtures/tamper/cases.toml, end to end: pin, tamper, check
//! --restore, then check again. See the fixture file for the format.

mod common;

use serde::Deserialize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    ops: Vec<Vec<String>>,
    event: Option<String>,
    at: Option<String>,
    #[serde(default = "one")]
    exit: i32,
    #[serde(default)]
    restored: Vec<String>,
    #[serde(default)]
    quarantine: bool,
    audit: Option<String>,
}

fn one() -> i32 {
    1
}

fn resolve(w: &common::World, p: &str) -> PathBuf {
    let r = w.root();
    let s = p
        .replace("{tmp}", r.to_str().unwrap())
        .replace("{outside}", w.outside().to_str().unwrap())
        .replace("{other}", w.other().to_str().unwrap())
        .replace("{own}", w.own().to_str().unwrap())
        .replace("{main}", w.main().to_str().unwrap());
    if Path::new(&s).is_absolute() {
        PathBuf::from(s)
    } else {
        w.git_dir().join(s)
    }
}

fn remove_any(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).unwrap(),
        Ok(_) => std::fs::remove_file(p).unwrap(),
        Err(_) => {}
    }
}

/// Apply one op; returns the path it touched.
fn apply(w: &common::World, op: &[String]) -> Option<PathBuf> {
    let sub = |s: &str| {
        s.replace("{tmp}", w.root().to_str().unwrap())
            .replace("{outside}", w.outside().to_str().unwrap())
    };
    match op[0].as_str() {
        "write" => {
            let p = resolve(w, &op[1]);
            std::fs::write(&p, sub(&op[2])).unwrap();
            if let Some(m) = op.get(3) {
                let mode = u32::from_str_radix(m, 8).unwrap();
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            Some(p)
        }
        "append" => {
            let p = resolve(w, &op[1]);
            let mut b = std::fs::read(&p).unwrap();
            b.extend_from_slice(sub(&op[2]).as_bytes());
            std::fs::write(&p, b).unwrap();
            Some(p)
        }
        "remove" => {
            let p = resolve(w, &op[1]);
            remove_any(&p);
            Some(p)
        }
        "link" => {
            let p = resolve(w, &op[1]);
            std::os::unix::fs::symlink(sub(&op[2]), &p).unwrap();
            Some(p)
        }
        "fifo" => {
            let p = resolve(w, &op[1]);
            nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
            Some(p)
        }
        "mkdir" => {
            let p = resolve(w, &op[1]);
            std::fs::create_dir_all(&p).unwrap();
            Some(p)
        }
        "rename" => {
            let to = resolve(w, &op[2]);
            std::fs::rename(resolve(w, &op[1]), &to).unwrap();
            Some(to)
        }
        "chmod" => {
            let p = resolve(w, &op[1]);
            let mode = u32::from_str_radix(&op[2], 8).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            Some(p)
        }
        "git" => {
            let args: Vec<String> = op[1..].iter().map(|a| sub(a)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            w.git(&w.main(), &args);
            None
        }
        o => panic!("unknown op {o}"),
    }
}

fn run_case(c: &Case) -> Result<(), String> {
    let w = common::world();
    w.pin();
    let (code, ev) = w.check(false);
    if code != 0 {
        return Err(format!("check right after pin: exit {code}, events {ev:?}"));
    }
    let pinned: Vec<(PathBuf, Vec<u8>)> = c
        .restored
        .iter()
        .map(|r| {
            let p = resolve(&w, r);
            let b = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((p, b))
        })
        .collect::<Result<_, String>>()?;
    let mut last = None;
    for op in &c.ops {
        if let Some(p) = apply(&w, op) {
            last = Some(p);
        }
    }
    // The agent's version of what it touched last (files only), for the quarantine check.
    let agent_bytes = last.as_ref().and_then(|p| {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|_| std::fs::read(p).ok())
    });
    let (code, events) = w.check(true);
    let dump = || {
        events
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    if code != c.exit {
        return Err(format!("exit {code}, expected {}\n{}", c.exit, dump()));
    }
    if let Some(kind) = &c.event {
        let at =
            c.at.as_ref()
                .map(|a| resolve(&w, a))
                .or(last.clone())
                .unwrap();
        let hit = events.iter().any(|e| {
            e["event"] == kind.as_str() && e["path"].as_str().map(PathBuf::from) == Some(at.clone())
        });
        if !hit {
            return Err(format!("no `{kind}` event at {}\n{}", at.display(), dump()));
        }
        if !events.iter().any(|e| {
            e["event"] == kind.as_str() && e.get("action").is_some() && e.get("change").is_some()
                || e["event"] == "link_refused"
        }) {
            return Err(format!("`{kind}` event lacks change/action\n{}", dump()));
        }
    } else if !events.is_empty() {
        return Err(format!("expected no event\n{}", dump()));
    }
    for (p, b) in &pinned {
        let now = std::fs::read(p).map_err(|e| format!("after restore, {}: {e}", p.display()))?;
        if &now != b {
            return Err(format!(
                "{}: restored bytes differ from the baseline",
                p.display()
            ));
        }
        let m = std::fs::symlink_metadata(p).unwrap();
        if !m.is_file() {
            return Err(format!("{}: restored but not a regular file", p.display()));
        }
    }
    if c.quarantine {
        let last = last.clone().unwrap();
        let q = events.iter().find_map(|e| {
            if e["event"] != "quarantined" {
                return None;
            }
            let from = PathBuf::from(e["path"].as_str()?);
            let to = PathBuf::from(e["quarantine"].as_str()?);
            last.strip_prefix(&from).ok().map(|rest| {
                if rest.as_os_str().is_empty() {
                    to
                } else {
                    to.join(rest)
                }
            })
        });
        let Some(q) = q else {
            return Err(format!(
                "nothing quarantined for {}\n{}",
                last.display(),
                dump()
            ));
        };
        if std::fs::symlink_metadata(&q).is_err() {
            return Err(format!("quarantine {} does not exist", q.display()));
        }
        if !q.starts_with(w.root().join("state")) {
            return Err(format!(
                "quarantine {} is not next to the state file",
                q.display()
            ));
        }
        if let Some(b) = &agent_bytes {
            if &std::fs::read(&q).unwrap_or_default() != b {
                return Err(format!(
                    "quarantine {} does not hold the agent's bytes",
                    q.display()
                ));
            }
        }
    }
    // Everything back: a second check finds nothing.
    let (code2, ev2) = w.check(false);
    if code2 != 0 {
        return Err(format!(
            "second check after restore: exit {code2}\n{}",
            ev2.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    if let Some(rule) = &c.audit {
        // Tamper again (a fresh world) and audit without a baseline.
        let w2 = common::world();
        for op in &c.ops {
            apply(&w2, op);
        }
        let out = w2.wt_check(&["audit", "--format", "json", w2.root().to_str().unwrap()]);
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("audit JSON: {e}"))?;
        let found = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == rule.as_str());
        if !found || out.status.code() == Some(0) {
            return Err(format!(
                "audit did not report {rule} (exit {:?}):\n{v:#}",
                out.status.code()
            ));
        }
    }
    Ok(())
}

#[test]
fn tamper_cases() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/tamper/cases.toml"
    ))
    .unwrap();
    let cases: Cases = toml::from_str(&text).unwrap();
    assert!(cases.case.len() >= 30, "at least 30 cases");
    let only = std::env::var("TAMPER_CASE").ok();
    let mut failed = Vec::new();
    let mut ran = 0;
    for c in &cases.case {
        if only.as_deref().is_some_and(|o| o != c.name) {
            continue;
        }
        ran += 1;
        if let Err(e) = run_case(c) {
            failed.push(format!("--- {}: {e}", c.name));
        }
    }
    assert!(ran > 0);
    assert!(
        failed.is_empty(),
        "{} of {ran} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// In-progress operations, embedded repositories, git's own writes, armed pins: each with a
// positive control under plain git, on every git of the machine.

/// A small repository for one git: `main` with two commits, a side commit to pick, a remote
/// `origin` (https) with its tracking ref, and a state folder outside it.
struct Small {
    t: tempfile::TempDir,
    git: PathBuf,
}

impl Small {
    fn new(git: &Path) -> Small {
        let s = Small {
            t: tempfile::tempdir().unwrap(),
            git: git.to_path_buf(),
        };
        std::fs::create_dir_all(s.root().join("home")).unwrap();
        std::fs::write(s.root().join("home/.gitconfig"), "").unwrap();
        std::fs::create_dir_all(s.root().join("state")).unwrap();
        s.run(&s.root(), &["init", "-q", "-b", "main", "r"]);
        let r = s.repo();
        std::fs::write(r.join("a"), "a\n").unwrap();
        s.run(&r, &["add", "a"]);
        s.run(&r, &["commit", "-qm", "a"]);
        std::fs::write(r.join("b"), "b\n").unwrap();
        s.run(&r, &["add", "b"]);
        s.run(&r, &["commit", "-qm", "b"]);
        s.run(&r, &["checkout", "-q", "-b", "side", "HEAD~1"]);
        std::fs::write(r.join("s"), "s\n").unwrap();
        s.run(&r, &["add", "s"]);
        s.run(&r, &["commit", "-qm", "s"]);
        s.run(&r, &["checkout", "-q", "main"]);
        s.run(
            &r,
            &["remote", "add", "origin", "https://example.invalid/r.git"],
        );
        s.run(&r, &["update-ref", "refs/remotes/origin/main", "HEAD"]);
        s
    }
    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.t.path()).unwrap()
    }
    fn repo(&self) -> PathBuf {
        self.root().join("r")
    }
    fn canary(&self) -> PathBuf {
        self.root().join("canary")
    }
    fn state(&self) -> PathBuf {
        self.root().join("state/s.json")
    }
    fn env(&self, c: &mut std::process::Command) {
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.root().join("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .env("LC_ALL", "C");
    }
    /// Plain git, which must succeed.
    fn run(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.try_run(dir, args);
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            self.git.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn try_run(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        let mut c = std::process::Command::new(&self.git);
        self.env(&mut c);
        c.current_dir(dir).args(args).output().unwrap()
    }
    fn wt_check(&self, args: &[&str]) -> (i32, String, String) {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_wt-check"));
        self.env(&mut c);
        let out = c.args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
    fn pin(&self, extra: &[&str]) -> (i32, String, String) {
        let st = self.state();
        let r = self.repo();
        let mut a = vec!["pin", "--state", st.to_str().unwrap()];
        a.extend_from_slice(extra);
        a.push(r.to_str().unwrap());
        self.wt_check(&a)
    }
    fn check(&self, restore: bool) -> (i32, Vec<serde_json::Value>) {
        let st = self.state();
        let r = self.repo();
        let mut a = vec!["check", "--no-scan", "--state", st.to_str().unwrap()];
        if restore {
            a.push("--restore");
        }
        a.push(r.to_str().unwrap());
        let (code, out, _) = self.wt_check(&a);
        let ev = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (code, ev)
    }
    fn audit(&self, path: &Path) -> i32 {
        self.wt_check(&["audit", "--format", "json", path.to_str().unwrap()])
            .0
    }
    fn head(&self) -> String {
        self.run(&self.repo(), &["rev-parse", "HEAD"])
            .trim()
            .to_owned()
    }
    fn side(&self) -> String {
        self.run(&self.repo(), &["rev-parse", "side"])
            .trim()
            .to_owned()
    }
    /// A stopped interactive rebase of `main` onto itself, as git leaves it.
    fn plant_rebase(&self, git_dir: &Path, todo: &str) {
        let d = git_dir.join("rebase-merge");
        std::fs::create_dir_all(&d).unwrap();
        let h = self.head();
        std::fs::write(d.join("head-name"), "refs/heads/main\n").unwrap();
        std::fs::write(d.join("onto"), format!("{h}\n")).unwrap();
        std::fs::write(d.join("orig-head"), format!("{h}\n")).unwrap();
        std::fs::write(d.join("interactive"), "").unwrap();
        std::fs::write(d.join("git-rebase-todo"), todo).unwrap();
    }
    /// `git-merge-/../evil` resolves to `<work tree>/evil` from the work tree.
    fn plant_strategy_program(&self) {
        let r = self.repo();
        std::fs::create_dir_all(r.join("git-merge-")).unwrap();
        std::fs::write(
            r.join("evil"),
            format!(
                "#!/bin/sh\necho fired >> '{}'\nexit 1\n",
                self.canary().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(r.join("evil"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    /// A copy of the whole world (repository, state) for a positive control that consumes it.
    fn copy(&self) -> Small {
        let c = Small {
            t: tempfile::tempdir().unwrap(),
            git: self.git.clone(),
        };
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", self.root().display()))
            .arg(c.root())
            .status()
            .unwrap();
        assert!(st.success());
        c
    }
    fn fired(&self) -> bool {
        self.canary().exists()
    }
    /// Run the positive control on a copy of the world (the planted program writes this
    /// world's canary): true when it fired. The canary is removed again.
    fn control(&self, args: &[&str]) -> bool {
        let ctl = self.copy();
        let _ = ctl.try_run(&ctl.repo(), args);
        let fired = self.fired();
        let _ = std::fs::remove_file(self.canary());
        fired
    }
}

fn events_of<'a>(ev: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    ev.iter().filter(|e| e["event"] == kind).collect()
}

#[test]
fn a_planted_todo_exec_in_every_parser_form_is_reported_and_set_aside() {
    for git in common::gits() {
        for (form, todo) in [
            ("exec", "exec echo fired >> {c}\n"),
            ("x", "x echo fired >> {c}\n"),
            ("tab", "exec\techo fired >> {c}\n"),
            ("blanks-crlf", " \t x \t echo fired >> {c}\r\n"),
            ("no-newline", "exec echo fired >> {c}"),
        ] {
            let s = Small::new(&git);
            assert_eq!(s.pin(&[]).0, 0);
            let todo = todo.replace("{c}", &format!("'{}'", s.canary().display()));
            s.plant_rebase(&s.repo().join(".git"), &todo);
            // Positive control: the owner's plain `git rebase --continue` runs it.
            assert!(
                s.control(&["rebase", "--continue"]),
                "{}: {form}: the control did not fire",
                git.display()
            );
            // The audit flags it.
            assert_eq!(s.audit(&s.repo()), 1, "{form}");
            // check reports and moves the operation aside; nothing is deleted.
            let (code, ev) = s.check(true);
            assert_eq!(code, 1, "{form}: {ev:?}");
            let armed = events_of(&ev, "sequencer_state_armed");
            assert_eq!(armed.len(), 1, "{form}: {ev:?}");
            assert!(armed[0]["message"]
                .as_str()
                .unwrap()
                .contains("git-rebase-todo:1"));
            let q = events_of(&ev, "quarantined");
            assert_eq!(q.len(), 1, "{form}: {ev:?}");
            let kept = PathBuf::from(q[0]["quarantine"].as_str().unwrap());
            assert!(
                kept.join("git-rebase-todo").is_file(),
                "kept in {}",
                kept.display()
            );
            assert!(!s.repo().join(".git/rebase-merge").exists());
            // The owner's continue now has nothing to run.
            let _ = s.try_run(&s.repo(), &["rebase", "--continue"]);
            assert!(!s.fired(), "{form}: fired after the restore");
            assert_eq!(s.check(false).0, 0);
        }
    }
}

#[test]
fn a_strategy_with_a_slash_is_reported_for_rebase_and_cherry_pick() {
    for git in common::gits() {
        // rebase-merge/strategy
        let s = Small::new(&git);
        s.plant_strategy_program();
        s.run(&s.repo(), &["add", "evil"]);
        s.run(&s.repo(), &["commit", "-qm", "evil"]);
        assert_eq!(s.pin(&[]).0, 0);
        s.plant_rebase(&s.repo().join(".git"), &format!("pick {} s\n", s.side()));
        std::fs::write(s.repo().join(".git/rebase-merge/strategy"), "/../evil\n").unwrap();
        assert!(
            s.control(&["rebase", "--continue"]),
            "{}: rebase strategy control",
            git.display()
        );
        assert_eq!(s.audit(&s.repo()), 1);
        let (code, ev) = s.check(true);
        assert_eq!(code, 1, "{ev:?}");
        assert!(events_of(&ev, "sequencer_state_armed")
            .iter()
            .any(|e| e["message"]
                .as_str()
                .unwrap()
                .contains("git-merge-/../evil")));
        let _ = s.try_run(&s.repo(), &["rebase", "--continue"]);
        assert!(!s.fired());

        // sequencer/opts of a cherry-pick (the first todo line is the stopped pick).
        let s = Small::new(&git);
        s.plant_strategy_program();
        s.run(&s.repo(), &["add", "evil"]);
        s.run(&s.repo(), &["commit", "-qm", "evil"]);
        assert_eq!(s.pin(&[]).0, 0);
        let seq = s.repo().join(".git/sequencer");
        std::fs::create_dir_all(&seq).unwrap();
        std::fs::write(seq.join("head"), format!("{}\n", s.head())).unwrap();
        std::fs::write(seq.join("abort-safety"), format!("{}\n", s.head())).unwrap();
        let pick = s.side();
        std::fs::write(seq.join("todo"), format!("pick {pick} s\npick {pick} s\n")).unwrap();
        std::fs::write(seq.join("opts"), "[options]\n\tstrategy = /../evil\n").unwrap();
        assert!(
            s.control(&["cherry-pick", "--continue"]),
            "{}: cherry-pick strategy control",
            git.display()
        );
        assert_eq!(s.audit(&s.repo()), 1);
        let (code, ev) = s.check(true);
        assert_eq!(code, 1, "{ev:?}");
        assert_eq!(events_of(&ev, "sequencer_state_armed").len(), 1, "{ev:?}");
        assert!(!seq.exists());
        let _ = s.try_run(&s.repo(), &["cherry-pick", "--continue"]);
        assert!(!s.fired());
    }
}

#[test]
fn an_honest_stopped_rebase_and_git_s_own_writes_are_not_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        let r = s.repo();
        assert_eq!(s.pin(&[]).0, 0);
        // gc, repack, update-server-info, commit-graph, pack-refs, maintenance, branch -u.
        s.run(&r, &["gc", "-q"]);
        s.run(&r, &["repack", "-adq"]);
        s.run(&r, &["update-server-info"]);
        s.run(&r, &["commit-graph", "write", "--reachable"]);
        s.run(&r, &["pack-refs", "--all"]);
        s.run(
            &r,
            &[
                "maintenance",
                "run",
                "--task=commit-graph",
                "--task=incremental-repack",
            ],
        );
        s.run(&r, &["branch", "-u", "origin/main"]);
        assert!(r.join(".git/info/refs").is_file());
        // A rebase stopped on a conflict (no exec, git's own strategy).
        std::fs::write(r.join("a"), "main\n").unwrap();
        s.run(&r, &["commit", "-qam", "main a"]);
        s.run(&r, &["checkout", "-q", "side"]);
        std::fs::write(r.join("a"), "side\n").unwrap();
        s.run(&r, &["commit", "-qam", "side a"]);
        let out = s.try_run(&r, &["rebase", "main"]);
        assert!(
            !out.status.success(),
            "the rebase should stop on the conflict"
        );
        assert!(r.join(".git/rebase-merge").is_dir());
        let (code, ev) = s.check(false);
        assert_eq!((code, ev.len()), (0, 0), "{}: {ev:?}", git.display());
        let (_, out, _) = s.wt_check(&["audit", "--format", "json", r.to_str().unwrap()]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["rule"] != "GW013" && f["rule"] != "GW017" && f["level"] != "error"),
            "{}: the audit flags an honest state: {v}",
            git.display()
        );
        // Tracking config naming a URL that runs a command is reported.
        s.run(&r, &["config", "branch.main.remote", "ext::sh -c true"]);
        let (code, ev) = s.check(false);
        assert_eq!(code, 1);
        assert_eq!(events_of(&ev, "config_changed").len(), 1, "{ev:?}");
    }
}

#[test]
fn a_staged_embedded_repository_that_is_armed_is_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        let r = s.repo();
        assert_eq!(s.pin(&[]).0, 0);
        let sub = r.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        s.run(&sub, &["init", "-q", "-b", "main"]);
        std::fs::write(sub.join("x"), "x\n").unwrap();
        s.run(&sub, &["add", "x"]);
        s.run(&sub, &["commit", "-qm", "x"]);
        let _ = s.try_run(&r, &["add", "sub"]);
        s.run(
            &sub,
            &[
                "config",
                "core.fsmonitor",
                &format!("echo fired >> '{}'; false", s.canary().display()),
            ],
        );
        // Positive control: the owner's plain `git status` runs the nested fsmonitor.
        assert!(
            s.control(&["status"]),
            "{}: embedded status control",
            git.display()
        );
        let (code, ev) = s.check(true);
        assert_eq!(code, 1, "{ev:?}");
        let e = events_of(&ev, "embedded_repository_armed");
        assert!(
            e.iter()
                .any(|e| e["message"].as_str().unwrap().contains("core.fsmonitor")),
            "{ev:?}"
        );
        // Reported, not moved: it lives in the work tree.
        assert!(sub.join(".git/config").is_file());
    }
}

#[test]
fn pin_refuses_an_armed_repository_unless_accepted() {
    for git in common::gits() {
        let s = Small::new(&git);
        let hook = s.repo().join(".git/hooks/pre-commit");
        std::fs::write(&hook, "#!/bin/sh\ntrue\n").unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (code, _, err) = s.pin(&[]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("already armed") && err.contains("GW001"),
            "{err}"
        );
        assert!(!s.state().exists(), "nothing written");
        let (code, out, err) = s.pin(&["--accept-armed", "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["accepted"].as_u64().unwrap() >= 1, "{v}");
        let (st, _) = common::read_state_json(&s.state());
        assert!(st["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["rule"] == "GW001"));
        // Accepted and unchanged: clean. Changed: reported.
        assert_eq!(s.check(false).0, 0);
        std::fs::write(&hook, "#!/bin/sh\necho changed\n").unwrap();
        assert_eq!(s.check(false).0, 1);
        // An armed in-progress operation blocks a pin too.
        let s = Small::new(&git);
        s.plant_rebase(&s.repo().join(".git"), "x true\n");
        let (code, _, err) = s.pin(&[]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("in-progress operation"), "{err}");
        assert_eq!(s.pin(&["--accept-armed"]).0, 0);
        assert_eq!(s.check(false).0, 0, "accepted");
        s.plant_rebase(&s.repo().join(".git"), "x true\nx echo other\n");
        assert_eq!(
            s.check(false).0,
            1,
            "a new exec line is not the accepted one"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Every repository the owner's ordinary git enters from a work tree (red-team R4-3, R4-4,
// R4-6, R4-8): audited at check time, an armed one reported as `embedded_repository_armed`.

impl Small {
    /// A repository at `dir` with one commit, its `core.fsmonitor` writing the canary.
    fn armed_repo(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        self.run(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("x"), "x\n").unwrap();
        self.run(dir, &["add", "x"]);
        self.run(dir, &["commit", "-qm", "x"]);
        self.run(
            dir,
            &[
                "config",
                "core.fsmonitor",
                &format!("echo fired >> '{}'; false", self.canary().display()),
            ],
        );
    }
    /// Run each command in turn on a copy of the world; true when the canary was written.
    fn control_seq(&self, cmds: &[&[&str]]) -> bool {
        let ctl = self.copy();
        for c in cmds {
            let _ = ctl.try_run(&ctl.repo(), c);
        }
        let fired = self.fired();
        let _ = std::fs::remove_file(self.canary());
        fired
    }
    fn armed_events(&self) -> (i32, Vec<serde_json::Value>) {
        let (code, ev) = self.check(true);
        let armed = events_of(&ev, "embedded_repository_armed");
        assert!(
            armed
                .iter()
                .any(|e| e["message"].as_str().unwrap().contains("core.fsmonitor")),
            "{}: {ev:?}",
            self.git.display()
        );
        (code, ev)
    }
}

#[test]
fn an_untracked_armed_repository_the_next_add_stages_is_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        let r = s.repo();
        assert_eq!(s.pin(&[]).0, 0);
        s.armed_repo(&r.join("n"));
        // Positive control (R4-8): the owner's `git add -A` stages it, `git status` enters it.
        assert!(
            s.control_seq(&[&["add", "-A"], &["status"]]),
            "{}: untracked nested repository control",
            git.display()
        );
        assert_eq!(s.armed_events().0, 1);
        assert!(r.join("n/.git/config").is_file(), "reported, not moved");
    }
}

#[test]
fn an_armed_repository_staged_in_a_submodule_s_own_index_is_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        let r = s.repo();
        let src = s.root().join("subsrc");
        std::fs::create_dir_all(&src).unwrap();
        s.run(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("f"), "f\n").unwrap();
        s.run(&src, &["add", "f"]);
        s.run(&src, &["commit", "-qm", "f"]);
        s.run(
            &r,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                src.to_str().unwrap(),
                "sub",
            ],
        );
        s.run(&r, &["commit", "-qm", "sub"]);
        assert_eq!(s.pin(&[]).0, 0);
        let sub = r.join("sub");
        s.armed_repo(&sub.join("inner"));
        let _ = s.try_run(&sub, &["add", "inner"]);
        // Positive control (R4-3): the owner's `git status` at the top recurses twice.
        assert!(
            s.control(&["status"]),
            "{}: submodule index control",
            git.display()
        );
        assert_eq!(s.armed_events().0, 1);
    }
}

#[test]
fn a_repository_behind_a_gitlink_only_in_the_turn_s_commits_is_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        let r = s.repo();
        assert_eq!(s.pin(&[]).0, 0);
        s.armed_repo(&r.join("foo"));
        s.run(
            &r.join("foo"),
            &[
                "config",
                "diff.external",
                &format!("sh -c 'echo fired >> {}'", s.canary().display()),
            ],
        );
        std::fs::write(r.join("foo/x"), "changed\n").unwrap();
        s.run(&r.join("foo"), &["commit", "-qam", "y"]);
        let _ = s.try_run(&r, &["add", "foo"]);
        s.run(&r, &["commit", "-qm", "add foo"]);
        s.run(&r.join("foo"), &["reset", "-q", "--hard", "HEAD~1"]);
        s.run(&r, &["rm", "-q", "--cached", "foo"]);
        s.run(&r, &["commit", "-qm", "rm foo"]);
        // Positive control (R4-6): `git log -p --submodule=diff` diffs inside foo/.
        assert!(
            s.control(&["log", "-p", "--submodule=diff"]),
            "{}: gitlink-in-commits control",
            git.display()
        );
        assert_eq!(s.armed_events().0, 1);
    }
}

#[test]
fn a_repository_in_the_session_folder_or_behind_a_redirected_gitfile_is_reported() {
    for git in common::gits() {
        // A plain repository made in the session folder (R4-4's sibling).
        let s = Small::new(&git);
        assert_eq!(s.pin(&["--session", "s1"]).0, 0);
        let sd = s.root().join("r-worktrees/s1");
        s.armed_repo(&sd.join("x"));
        let fired = {
            let _ = s.try_run(&sd.join("x"), &["status"]);
            let f = s.fired();
            let _ = std::fs::remove_file(s.canary());
            f
        };
        assert!(fired, "{}: session folder control", git.display());
        let st = s.state();
        let (code, out, _) = s.wt_check(&[
            "check",
            "--no-scan",
            "--state",
            st.to_str().unwrap(),
            s.repo().to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("embedded_repository_armed"), "{out}");
        // A session worktree whose `.git` file names a git dir the agent made (R4-4).
        let s = Small::new(&git);
        assert_eq!(s.pin(&["--session", "s1"]).0, 0);
        let sd = s.root().join("r-worktrees/s1");
        s.run(
            &s.repo(),
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feat",
                sd.join("feat").to_str().unwrap(),
            ],
        );
        s.armed_repo(&sd.join("evil"));
        std::fs::write(
            sd.join("feat/.git"),
            format!("gitdir: {}\n", sd.join("evil/.git").display()),
        )
        .unwrap();
        let _ = s.try_run(&sd.join("feat"), &["status"]);
        assert!(s.fired(), "{}: redirected gitfile control", git.display());
        let _ = std::fs::remove_file(s.canary());
        let st = s.state();
        let (code, out, _) = s.wt_check(&[
            "check",
            "--no-scan",
            "--state",
            st.to_str().unwrap(),
            s.repo().to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.lines()
                .any(|l| l.contains("embedded_repository_armed") && l.contains("core.fsmonitor")),
            "{out}"
        );
        // --restore: the gitfile names its entry again (the agent's one kept aside), and the
        // owner's git there no longer runs the planted program.
        let (code, ev) = s.check(true);
        assert_eq!(code, 1, "{ev:?}");
        let gitfile = std::fs::read_to_string(sd.join("feat/.git")).unwrap();
        assert!(
            !gitfile.contains("evil") && gitfile.starts_with("gitdir: "),
            "{}: {gitfile}",
            git.display()
        );
        assert!(events_of(&ev, "quarantined")
            .iter()
            .any(|e| e["path"].as_str().unwrap().ends_with("feat/.git")));
        let _ = s.try_run(&sd.join("feat"), &["status"]);
        assert!(!s.fired(), "{}: fired after restore", git.display());
    }
}

/// The walk's listing record (`<state>.walk`, written by `check`) cannot hide a repository
/// the agent plants in a folder it recorded, even with the folder's times put back.
#[test]
fn a_repository_planted_in_a_recorded_folder_with_its_times_put_back_is_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        assert_eq!(s.pin(&["--session", "s1"]).0, 0);
        let sd = s.root().join("r-worktrees/s1");
        s.run(
            &s.repo(),
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                sd.join("wt").to_str().unwrap(),
            ],
        );
        let deep = sd.join("wt/src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "x").unwrap();
        // Past the racy margin, so the next check records the folders.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let (code, ev) = s.check(false);
        assert_eq!(code, 0, "{}: {ev:?}", git.display());
        let record = PathBuf::from(format!("{}.walk", s.state().display()));
        assert!(
            std::fs::metadata(&record).is_ok_and(|m| m.len() > 100),
            "{}: no listing record written",
            git.display()
        );
        let before = std::fs::metadata(&deep).unwrap();
        s.armed_repo(&deep.join("x"));
        std::fs::File::open(&deep)
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_modified(before.modified().unwrap())
                    .set_accessed(before.accessed().unwrap()),
            )
            .unwrap();
        assert_eq!(
            std::fs::metadata(&deep).unwrap().modified().unwrap(),
            before.modified().unwrap()
        );
        // Past the margin: only the folder's ctime tells it from the record.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let _ = s.try_run(&deep.join("x"), &["status"]);
        assert!(s.fired(), "{}: control", git.display());
        let _ = std::fs::remove_file(s.canary());
        let st = s.state();
        let (code, out, _) = s.wt_check(&[
            "check",
            "--no-scan",
            "--state",
            st.to_str().unwrap(),
            s.repo().to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{}: {out}", git.display());
        assert!(out.contains("embedded_repository_armed"), "{out}");
    }
}

#[test]
fn tracking_setup_under_auto_setup_rebase_is_git_s_own_write() {
    for git in common::gits() {
        let s = Small::new(&git);
        std::fs::write(
            s.root().join("home/.gitconfig"),
            "[branch]\n\tautoSetupRebase = always\n",
        )
        .unwrap();
        assert_eq!(s.pin(&[]).0, 0);
        s.run(&s.repo(), &["checkout", "-q", "-b", "topic", "origin/main"]);
        let cfg = std::fs::read_to_string(s.repo().join(".git/config")).unwrap();
        assert!(cfg.contains("rebase = true"), "{}: {cfg}", git.display());
        let (code, ev) = s.check(true);
        assert_eq!((code, ev.len()), (0, 0), "{}: {ev:?}", git.display());
        assert!(std::fs::read_to_string(s.repo().join(".git/config"))
            .unwrap()
            .contains("rebase = true"));
    }
}

#[test]
fn a_session_worktree_s_submodule_index_staging_an_armed_repository_is_reported() {
    for git in common::gits() {
        let s = Small::new(&git);
        let r = s.repo();
        let src = s.root().join("subsrc");
        std::fs::create_dir_all(&src).unwrap();
        s.run(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("f"), "f\n").unwrap();
        s.run(&src, &["add", "f"]);
        s.run(&src, &["commit", "-qm", "f"]);
        let file_ok = ["-c", "protocol.file.allow=always"];
        let add = [
            &file_ok[..],
            &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
        ]
        .concat();
        s.run(&r, &add);
        s.run(&r, &["commit", "-qm", "sub"]);
        assert_eq!(s.pin(&["--session", "s1"]).0, 0);
        // The agent's honest turn: a session worktree with its submodule checked out
        // (git writes `<common>/worktrees/w/modules/sub`, with `core.worktree`).
        let w = s.root().join("r-worktrees/s1/w");
        s.run(
            &r,
            &["worktree", "add", "-q", "-b", "w", w.to_str().unwrap()],
        );
        let upd = [&file_ok[..], &["submodule", "update", "-q", "--init"]].concat();
        s.run(&w, &upd);
        // Nothing in it is taken for an armed repository (the new `worktrees/w/modules` folder
        // itself is still reported by the baseline comparison: a separate, known cry-wolf).
        let (_, ev) = s.check(false);
        assert!(
            events_of(&ev, "embedded_repository_armed").is_empty(),
            "{}: {ev:?}",
            git.display()
        );
        // An armed repository staged in that submodule's index (`worktrees/w/modules/sub/index`).
        s.armed_repo(&w.join("sub/inner"));
        let _ = s.try_run(&w.join("sub"), &["add", "inner"]);
        let _ = s.try_run(&w, &["status"]);
        assert!(
            s.fired(),
            "{}: linked submodule index control",
            git.display()
        );
        let _ = std::fs::remove_file(s.canary());
        assert_eq!(s.armed_events().0, 1);
    }
}
