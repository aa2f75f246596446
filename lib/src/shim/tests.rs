//! The rules, one allowed and one refused case each, against a scripted repository.

use super::argv::{env_config, Invocation};
use super::rules::{split_cmdline, Effective, Plan, Repository, Rules};
use crate::catalogue::GitVersion;
use crate::env::{DefuseOptions, Defused};
use crate::policy::Policy;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

struct Fake {
    cwd: PathBuf,
    top: PathBuf,
    aliases: BTreeMap<String, String>,
}

impl Repository for Fake {
    fn effective(&self) -> Effective {
        Effective {
            cwd: self.cwd.clone(),
            toplevel: Some(self.top.clone()),
            common_dir: Some(self.top.join(".git")),
        }
    }
    fn alias(&self, name: &str) -> Option<String> {
        self.aliases.get(name).cloned()
    }
    fn is_external(&self, name: &str) -> bool {
        name == "lfs"
    }
    fn worktrees(&self) -> Vec<PathBuf> {
        vec![
            self.top.clone(),
            self.top.with_file_name("proj-worktrees/s1/feat"),
            self.top.with_file_name("proj-worktrees/s2/other"),
        ]
    }
}

struct Env {
    _t: tempfile::TempDir,
    policy: Policy,
    fake: Fake,
    neutral: Vec<(String, String)>,
}

fn env(extra: &str) -> Env {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let repo = home.join("src/proj");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(home.join("etc")).unwrap();
    let text = format!("session = \"s1\"\nrepo = \"{}\"\n{extra}\n", repo.display());
    let policy = Policy::parse(&home.join("etc/policy.toml"), &text, &home).unwrap();
    let d = Defused::new(DefuseOptions::new(GitVersion::new(2, 47, 3)));
    let fake = Fake {
        cwd: repo.clone(),
        top: repo,
        aliases: BTreeMap::new(),
    };
    Env {
        _t: t,
        policy,
        fake,
        neutral: d.config_pairs().to_vec(),
    }
}

impl Env {
    fn check_env(&self, args: &[&str], vars: &[(&str, &str)]) -> Result<Plan, (String, String)> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let get = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        };
        let inv = Invocation::parse(&args, get);
        let cfg = env_config(get);
        let exec = get("GIT_EXEC_PATH");
        let rules = Rules {
            policy: &self.policy,
            neutral: &self.neutral,
        };
        rules
            .check(&inv, &cfg, exec.as_deref(), &self.fake)
            .map_err(|r| (r.rule.to_owned(), r.message))
    }
    fn check(&self, args: &[&str]) -> Result<Plan, (String, String)> {
        self.check_env(args, &[])
    }
    fn refused(&self, args: &[&str], rule: &str) -> String {
        match self.check(args) {
            Err((r, m)) => {
                assert_eq!(r, rule, "{args:?}: {m}");
                assert_eq!(m.lines().count(), 1);
                m
            }
            Ok(p) => panic!("{args:?} allowed ({p:?}), expected {rule}"),
        }
    }
    fn allowed(&self, args: &[&str]) -> Plan {
        match self.check(args) {
            Ok(p) => p,
            Err((r, m)) => panic!("{args:?} refused: {r}: {m}"),
        }
    }
    fn wt(&self) -> &Path {
        &self.policy.worktree_dir
    }
}

#[test]
fn worktree_add_only_in_the_session_folder() {
    let e = env("");
    let inside = format!("{}/feat", e.wt().display());
    assert_eq!(
        e.allowed(&["worktree", "add", &inside]),
        Plan::CreateFolderThenExec(e.wt().to_path_buf())
    );
    std::fs::create_dir_all(e.wt()).unwrap();
    assert_eq!(
        e.allowed(&["worktree", "add", "-b", "x", &inside, "HEAD"]),
        Plan::Exec
    );
    // Relative to the cwd, through `..`.
    assert_eq!(
        e.allowed(&["worktree", "add", "../proj-worktrees/s1/y"]),
        Plan::Exec
    );
    let m = e.refused(&["worktree", "add", "/tmp/elsewhere"], "worktree-location");
    assert!(m.contains(&format!("{}/", e.wt().display())), "{m}");
    e.refused(&["worktree", "add", "inside"], "worktree-location");
    e.refused(
        &["worktree", "add", "-b", &inside, "../other"],
        "worktree-location",
    );
    e.refused(
        &["worktree", "add", "-b", "x", "../proj-worktrees/s2/y"],
        "worktree-location",
    );
    // Nested in another worktree's checkout.
    e.refused(
        &["worktree", "add", &format!("{inside}/nested")],
        "worktree-location",
    );
    // The session folder itself is not a worktree path.
    e.refused(
        &["worktree", "add", &e.wt().display().to_string()],
        "worktree-location",
    );
    // `-C` elsewhere: the path is taken from there.
    e.refused(&["-C", "/tmp", "worktree", "add", "x"], "worktree-location");
}

#[test]
fn worktree_move_and_remove_run_as_child() {
    let e = env("");
    let a = format!("{}/a", e.wt().display());
    let b = format!("{}/b", e.wt().display());
    assert_eq!(
        e.allowed(&["worktree", "move", &a, &b]),
        Plan::ChildThenTidy
    );
    e.refused(&["worktree", "move", &a, "/tmp/b"], "worktree-location");
    assert_eq!(
        e.allowed(&["worktree", "remove", "--force", &a]),
        Plan::ChildThenTidy
    );
    e.refused(&["worktree", "remove", "/tmp/other"], "worktree-location");
    // By name, as git finds it (a unique path suffix).
    assert_eq!(
        e.allowed(&["worktree", "remove", "feat"]),
        Plan::ChildThenTidy
    );
    assert_eq!(
        e.allowed(&["worktree", "remove", "s1/feat/"]),
        Plan::ChildThenTidy
    );
    e.refused(&["worktree", "remove", "other"], "worktree-location");
    assert_eq!(
        e.allowed(&["worktree", "move", "feat", &b]),
        Plan::ChildThenTidy
    );
    assert_eq!(e.allowed(&["worktree", "prune"]), Plan::ChildThenTidy);
    assert_eq!(e.allowed(&["worktree", "list"]), Plan::Exec);
}

#[test]
fn worktree_roots_from_the_policy() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("scratch");
    std::fs::create_dir_all(&root).unwrap();
    let e = env(&format!("worktree_roots = [\"{}\"]", root.display()));
    e.allowed(&["worktree", "add", &format!("{}/x", root.display())]);
    let m = e.refused(&["worktree", "add", "/tmp/nope"], "worktree-location");
    assert!(m.contains(&root.display().to_string()), "{m}");
}

#[test]
fn config_writes_in_every_syntax() {
    let e = env("");
    for ok in [
        &["config", "user.name", "A"][..],
        &["config", "set", "user.name", "A"],
        &["config", "--get", "core.hooksPath"],
        &["config", "core.hooksPath"],
        &["config", "get", "core.hooksPath"],
        &["config", "-l"],
        &["config", "--list", "--show-origin"],
        &["config", "remote.origin.url", "https://example.com/r.git"],
        &["config", "--unset", "remote.origin.url"],
        &["config", "--get-regexp", "include"],
        &["config", "--file", "include.path", "user.name", "x"],
    ] {
        e.allowed(ok);
    }
    for bad in [
        &["config", "core.hooksPath", "/tmp/h"][..],
        &["config", "core.hookspath", "/tmp/h"],
        &["config", "set", "core.hooksPath", "/tmp/h"],
        &["config", "set", "--append", "include.path", "/tmp/x"],
        &["config", "--add", "include.path", "/tmp/x"],
        &["config", "--replace-all", "core.fsmonitor", "x"],
        &["config", "--repl", "core.fsmonitor", "x"],
        &["config", "-f", ".git/config", "core.fsmonitor", "x"],
        &["config", "-f.git/config", "core.fsmonitor", "x"],
        &["config", "--file=.git/config", "core.sshCommand", "x"],
        &["config", "--worktree", "core.worktree", "/x"],
        &["config", "--local", "extensions.worktreeConfig", "true"],
        &["config", "--global", "alias.x", "!sh"],
        &["config", "includeIf.gitdir:/x.path", "/tmp/c"],
        &["config", "--unset", "core.hooksPath"],
        &["config", "unset", "include.path"],
        &["config", "--unset-all", "include.path"],
        &["config", "remote.origin.url", "ext::sh -c evil"],
        &["config", "remote.origin.pushurl", "/tmp/local"],
        &["config", "submodule.s.url", "evil::x"],
        &[
            "config",
            "url.ext::sh -c x.insteadOf",
            "https://github.com/",
        ],
        &["config", "remote.origin.uploadpack", "evil"],
        &["config", "--type", "bool", "filter.x.required", "true"],
        &["config", "--rename-section", "junk", "filter.x"],
        &["config", "rename-section", "core", "junk"],
        &["config", "--remove-section", "core"],
        &["config", "--edit"],
        &["config", "edit"],
        &["config", "-e"],
    ] {
        e.refused(bad, "config-key");
    }
}

#[test]
fn remotes_and_submodules_by_url() {
    let e = env("");
    e.allowed(&["remote", "add", "origin", "https://example.com/r.git"]);
    e.allowed(&["remote", "add", "-t", "main", "up", "git@example.com:r.git"]);
    e.allowed(&["remote", "set-url", "--delete", "origin", "/tmp/x"]);
    e.allowed(&["remote", "-v"]);
    let m = e.refused(
        &["remote", "add", "x", "ext::sh -c touch% /tmp/p"],
        "remote-url",
    );
    assert!(m.contains("ext::"), "{m}");
    e.refused(&["remote", "add", "-f", "x", "evil::addr"], "remote-url");
    e.refused(&["remote", "add", "x", "/tmp/other"], "remote-url");
    e.refused(
        &["remote", "set-url", "origin", "file:///tmp/x"],
        "remote-url",
    );
    e.refused(
        &["remote", "set-url", "--push", "origin", "ext::x"],
        "remote-url",
    );
    e.allowed(&["submodule", "add", "https://example.com/s.git", "s"]);
    e.allowed(&["submodule", "add", "../s.git", "s"]);
    e.allowed(&["submodule", "update", "--init"]);
    e.refused(&["submodule", "add", "ext::sh -c x", "s"], "submodule-url");
    e.refused(
        &["submodule", "--quiet", "add", "-b", "m", "/tmp/s", "s"],
        "submodule-url",
    );
    e.refused(&["submodule", "set-url", "s", "fd::17"], "submodule-url");
}

#[test]
fn clone_init_and_transport_programs() {
    let e = env("");
    e.allowed(&["clone", "https://example.com/r.git", "x"]);
    e.allowed(&[
        "clone",
        "-c",
        "core.autocrlf=false",
        "https://example.com/r.git",
    ]);
    e.allowed(&["clone", "/tmp/local", "x"]);
    e.allowed(&[
        "clone",
        "--depth",
        "1",
        "-b",
        "main",
        "https://example.com/r.git",
    ]);
    for bad in [
        &["clone", "-c", "core.hooksPath=/tmp/h", "https://e.com/r"][..],
        &["clone", "-ccore.fsmonitor=x", "https://e.com/r"],
        &["clone", "--config=include.path=/tmp/i", "https://e.com/r"],
        &["clone", "--config", "alias.x=!sh", "https://e.com/r"],
        &["clone", "--template=/tmp/t", "https://e.com/r"],
        &["clone", "--templ", "/tmp/t", "https://e.com/r"],
        &["clone", "--separate-git-dir", "/tmp/g", "https://e.com/r"],
    ] {
        e.refused(bad, "clone-option");
    }
    e.refused(&["clone", "ext::sh -c x", "d"], "remote-url");
    e.refused(&["clone", "-u", "sh -c x", "/tmp/r"], "transport-program");
    e.refused(&["clone", "--upload-pack=x", "/tmp/r"], "transport-program");
    e.refused(
        &["fetch", "--upload-pack", "x", "origin"],
        "transport-program",
    );
    e.refused(&["fetch", "--upload=x", "origin"], "transport-program");
    e.refused(
        &["ls-remote", "--upload-pack=x", "/tmp/r"],
        "transport-program",
    );
    e.refused(&["push", "--receive-pack=x", "origin"], "transport-program");
    e.refused(&["push", "--exec=x", "origin"], "transport-program");
    e.refused(
        &["archive", "--remote=/tmp/r", "--exec=x", "HEAD"],
        "transport-program",
    );
    e.allowed(&["push", "-u", "origin", "main"]);
    e.allowed(&["fetch", "origin"]);
    e.allowed(&["init"]);
    e.allowed(&["init", "--bare", "/tmp/b"]);
    e.refused(&["init", "--template=/tmp/t"], "init-option");
    e.refused(
        &["init", "--separate-git-dir", "/tmp/g", "x"],
        "init-option",
    );
}

#[test]
fn transient_config_and_exec_path() {
    let e = env("");
    e.allowed(&["-c", "user.name=A", "commit", "-m", "x"]);
    // What the defused set passes anyway is harmless to pass again.
    e.allowed(&["-c", "core.pager=cat", "log"]);
    e.allowed(&["-c", "core.hooksPath=/dev/null", "status"]);
    e.allowed(&["--exec-path"]);
    for bad in [
        &["-c", "core.fsmonitor=touch /tmp/p", "status"][..],
        &["-c", "core.hooksPath=/tmp/h", "commit"],
        &["-c", "include.path=/tmp/x", "status"],
        &["-c", "alias.st=!touch /tmp/p", "st"],
        &["-c", "core.pager", "log"],
        &["-C", "/tmp", "-c", "diff.external=x", "diff"],
    ] {
        e.refused(bad, "transient-config");
    }
    let r = e.check_env(
        &["--config-env=core.fsmonitor=EVIL", "status"],
        &[("EVIL", "touch /tmp/p")],
    );
    assert_eq!(r.unwrap_err().0, "transient-config");
    let r = e.check_env(
        &["--config-env", "core.fsmonitor=EVIL", "status"],
        &[("EVIL", "x")],
    );
    assert_eq!(r.unwrap_err().0, "transient-config");
    let r = e.check_env(
        &["status"],
        &[("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='touch /tmp/p'")],
    );
    assert_eq!(r.unwrap_err().0, "transient-config");
    let r = e.check_env(
        &["status"],
        &[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.sshCommand"),
            ("GIT_CONFIG_VALUE_0", "x"),
        ],
    );
    assert_eq!(r.unwrap_err().0, "transient-config");
    let r = e.check_env(
        &["status"],
        &[(
            "GIT_CONFIG_PARAMETERS",
            "'core.pager'='cat' 'user.name'='A'",
        )],
    );
    assert!(r.is_ok(), "{r:?}");
    let r = e.check_env(&["status"], &[("GIT_CONFIG_PARAMETERS", "'broken")]);
    assert_eq!(r.unwrap_err().0, "transient-config");
    e.refused(&["--exec-path=/tmp/e", "status"], "exec-path");
    let r = e.check_env(&["status"], &[("GIT_EXEC_PATH", "/tmp/e")]);
    assert_eq!(r.unwrap_err().0, "exec-path");
    // The policy may allow transient config.
    let e = env("allow_transient_config = true");
    e.allowed(&["-c", "core.fsmonitor=x", "status"]);
    e.allowed(&["--exec-path=/tmp/e", "status"]);
    // …but never a persistent write.
    e.refused(&["config", "core.fsmonitor", "x"], "config-key");
}

#[test]
fn aliases_are_expanded_and_checked() {
    let mut e = env("");
    e.fake.aliases.insert("st".into(), "status -s".into());
    e.fake
        .aliases
        .insert("hp".into(), "config core.hooksPath".into());
    e.fake.aliases.insert("wa".into(), "worktree add".into());
    e.fake.aliases.insert("chain".into(), "hp".into());
    e.fake.aliases.insert("sh".into(), "!touch /tmp/p".into());
    e.fake.aliases.insert("loop".into(), "loop".into());
    e.fake.aliases.insert("lfs".into(), "!evil".into());
    e.fake.aliases.insert("status".into(), "!evil".into());
    e.allowed(&["st"]);
    e.allowed(&["hp"]);
    e.refused(&["hp", "/tmp/h"], "config-key");
    e.refused(&["chain", "/tmp/h"], "config-key");
    e.refused(&["wa", "/tmp/x"], "worktree-location");
    e.refused(&["sh"], "alias");
    e.refused(&["loop"], "alias");
    // External commands and builtins are never aliases.
    e.allowed(&["lfs"]);
    e.allowed(&["status"]);
    // Unknown and not an alias: git says so itself.
    e.allowed(&["nosuchcommand"]);
}

#[test]
fn split_cmdline_like_git() {
    assert_eq!(
        split_cmdline(r#"log --format="%h %s" 'a b' c\ d"#).unwrap(),
        vec!["log", "--format=%h %s", "a b", "c d"]
    );
    assert!(split_cmdline("'open").is_none());
}

#[test]
fn the_policy_cache_follows_the_file() {
    use super::{load_policy_from, PolicySource};
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let repo = home.join("src/proj");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(home.join("etc")).unwrap();
    std::fs::create_dir_all(home.join("bin")).unwrap();
    let file = home.join("etc/p.toml");
    std::fs::write(
        &file,
        format!("session = \"a\"\nrepo = \"{}\"\n", repo.display()),
    )
    .unwrap();
    let src = PolicySource {
        file: file.clone(),
        cache: Some(home.join("bin/cache.json")),
    };
    let first = load_policy_from(&src, &home).unwrap();
    assert!(home.join("bin/cache.json").exists());
    assert_eq!(load_policy_from(&src, &home).unwrap(), first);
    // An edit is seen at once (size and change time are in the key).
    std::fs::write(
        &file,
        format!("session = \"bb\"\nrepo = \"{}\"\n", repo.display()),
    )
    .unwrap();
    assert_eq!(load_policy_from(&src, &home).unwrap().session, "bb");
    // A bad edit is an error, never the stale cache.
    std::fs::write(&file, "session = \n").unwrap();
    assert!(load_policy_from(&src, &home).is_err());
    // A corrupt cache falls back to a full load.
    std::fs::write(
        &file,
        format!("session = \"cc\"\nrepo = \"{}\"\n", repo.display()),
    )
    .unwrap();
    std::fs::write(home.join("bin/cache.json"), "{").unwrap();
    assert_eq!(load_policy_from(&src, &home).unwrap().session, "cc");
}

#[test]
fn the_documented_example_policy_parses() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join("src/proj")).unwrap();
    let text = include_str!("../../../docs/policy.example.toml");
    let p = Policy::parse(&home.join(".config/gitward/s1.toml"), text, &home).unwrap();
    assert_eq!(p.session, "s1");
    assert_eq!(p.worktree_dir, home.join("src/proj-worktrees/s1"));
    assert!(!p.shim.hooks);
    assert_eq!(p.shim.allow_protocols, "https:ssh:file");
    assert!(!p.docker.enabled && !p.allow_transient_config);
}

#[test]
fn bad_shim_keys_name_the_key() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join("src/proj")).unwrap();
    let base = format!("session = \"s\"\nrepo = \"{}/src/proj\"\n", home.display());
    let f = home.join("etc/p.toml");
    let e = Policy::parse(
        &f,
        &format!("{base}[shim]\nallow_protocols = \"https;ext\"\n"),
        &home,
    )
    .unwrap_err();
    assert_eq!(e.key, "shim.allow_protocols");
    let e = Policy::parse(&f, &format!("{base}[shim]\nhook = true\n"), &home).unwrap_err();
    assert!(e.rule.contains("unknown field"), "{e}");
    assert_eq!(e.to_string().lines().count(), 1);
}

#[test]
fn refusals_quoting_control_characters_stay_one_line() {
    let e = env("");
    let (rule, msg) = e
        .check(&["remote", "add", "x", "https://example.com/\n\u{1b}[31mfake"])
        .unwrap_err();
    assert_eq!(rule, "remote-url");
    let shown = super::one_line(&msg);
    assert_eq!(shown.lines().count(), 1);
    assert!(
        !shown.contains('\u{1b}') && shown.contains("\\n"),
        "{shown}"
    );
}
