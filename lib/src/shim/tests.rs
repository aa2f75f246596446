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
    worktree_config: Option<bool>,
    gitmodules: Result<Vec<(String, String)>, String>,
    prunable: Result<Vec<PathBuf>, String>,
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
    fn local_bool(&self, key: &str) -> Option<bool> {
        (key == "extensions.worktreeConfig")
            .then_some(self.worktree_config)
            .flatten()
    }
    fn gitmodules_urls(&self) -> Result<Vec<(String, String)>, String> {
        self.gitmodules.clone()
    }
    fn prunable_worktrees(&self) -> Result<Vec<PathBuf>, String> {
        self.prunable.clone()
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
    neutral: Vec<(gix::bstr::BString, String)>,
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
        worktree_config: None,
        gitmodules: Ok(Vec::new()),
        prunable: Ok(Vec::new()),
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
    // A refusal quotes the URL without its userinfo.
    let m = e.refused(
        &["remote", "add", "x", "evil::https://alice:s3cr3t@host/r"],
        "remote-url",
    );
    assert!(
        !m.contains("s3cr3t") && m.contains("evil::https://***@host/r"),
        "{m}"
    );
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
    // Builtins are never aliases. An external command (`git-lfs`) may be one: git falls back
    // to the alias when the program fails to start (rt24 W2), so its alias is checked too.
    e.refused(&["lfs"], "alias");
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
        home: Some(home.clone()),
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

// Third red-team pass (docs/redteam3.md): each case was first run under plain git.

#[test]
fn redteam3_unknown_global_options_are_refused() {
    let e = env("");
    // R3: git knows these; the parse used to stop at them and read nothing after.
    e.refused(
        &[
            "--no-literal-pathspecs",
            "--frobnicate",
            "config",
            "core.hooksPath",
            "/x",
        ],
        "global-option",
    );
    e.refused(
        &["--no-literal-pathspecs", "config", "core.hooksPath", "/x"],
        "config-key",
    );
    e.refused(
        &[
            "--shallow-file",
            "/dev/null",
            "-c",
            "core.fsmonitor=x",
            "status",
        ],
        "transient-config",
    );
    e.refused(&["--bogus", "status"], "global-option");
    assert_eq!(e.allowed(&["--no-literal-pathspecs", "status"]), Plan::Exec);
    assert_eq!(e.allowed(&["--version", "--build-options"]), Plan::Exec);
    assert_eq!(e.allowed(&["--help", "config"]), Plan::Exec);
}

#[test]
fn redteam3_every_abbreviation_of_a_guarded_option() {
    let e = env("");
    // R2: parse-options takes any unambiguous prefix.
    e.refused(&["init", "--t=/tmp/tpl"], "init-option");
    e.refused(&["init", "--sep=/tmp/gd", "x"], "init-option");
    e.refused(&["clone", "--te=/tmp/tpl", "https://h/r"], "clone-option");
    e.refused(
        &["clone", "--sep", "/tmp/gd", "https://h/r"],
        "clone-option",
    );
    e.refused(
        &["clone", "--c=core.hooksPath=/h", "https://h/r"],
        "clone-option",
    );
    e.refused(&["ls-remote", "--u=touch x", "/r"], "transport-program");
    e.refused(&["clone", "--up=touch x", "/r", "d"], "transport-program");
    e.refused(&["push", "--e=touch x", "/r", "HEAD"], "transport-program");
    e.allowed(&["push", "--recurse-submodules=check", "origin"]);
    e.allowed(&["init", "--no-template", "x"]);
    e.allowed(&["clone", "--depth=1", "https://h/r"]);
}

#[test]
fn redteam3_remote_add_mirror_takes_no_separate_value() {
    let e = env("");
    // R1: `--mirror` took the remote's name as its value, so the URL was never read.
    e.refused(
        &["remote", "add", "--mirror", "evil", "ext::sh -c x"],
        "remote-url",
    );
    e.refused(
        &["remote", "add", "--track", "main", "evil", "ext::sh -c x"],
        "remote-url",
    );
    e.allowed(&["remote", "add", "--mirror=fetch", "m", "https://h/r"]);
    e.allowed(&["remote", "add", "--master", "main", "o", "https://h/r"]);
}

#[test]
fn redteam3_template_dir_is_a_program_running_key() {
    let e = env("");
    // R4: init.templateDir copies hooks; -c, --config-env and git config all carry it.
    e.refused(
        &["-c", "init.templateDir=/tmp/tpl", "init"],
        "transient-config",
    );
    e.refused(
        &["config", "--global", "init.templateDir", "/tmp/tpl"],
        "config-key",
    );
    e.refused(
        &["clone", "-c", "init.templateDir=/t", "https://h/r"],
        "clone-option",
    );
    // The defused set passes an empty template folder, which is allowed again.
    assert!(e
        .neutral
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case(b"init.templateDir") && v.is_empty()));
    e.allowed(&["-c", "init.templateDir=", "init"]);
}

#[test]
fn redteam3_builtins_are_builtins_in_every_version() {
    let mut e = env("");
    // R5: on 2.39 `replay` is not a builtin and git looks it up as an alias.
    e.fake
        .aliases
        .insert("replay".into(), "config core.hooksPath /tmp/h".into());
    e.fake
        .aliases
        .insert("env--helper".into(), "config core.fsmonitor x".into());
    e.refused(&["replay"], "config-key");
    e.refused(&["env--helper"], "config-key");
}

#[test]
fn redteam3_submodule_helper_and_gitmodules_urls() {
    let mut e = env("");
    // R6: the builtin behind `git submodule` is reachable directly.
    e.refused(
        &["submodule--helper", "set-url", "s", "ext::sh -c x"],
        "submodule-url",
    );
    e.refused(
        &["submodule--helper", "add", "--", "ext::sh -c x", "s"],
        "submodule-url",
    );
    e.refused(
        &[
            "submodule--helper",
            "clone",
            "--path",
            "s",
            "--name",
            "s",
            "--url",
            "ext::x",
        ],
        "submodule-url",
    );
    e.allowed(&["submodule--helper", "set-url", "s", "https://h/r"]);
    // sync/init/update copy .gitmodules URLs (a work-tree file) into .git/config.
    e.fake.gitmodules = Ok(vec![("submodule.s.url".into(), "ext::sh -c x".into())]);
    e.refused(&["submodule", "sync"], "submodule-url");
    e.refused(&["submodule", "update", "--init"], "submodule-url");
    e.refused(&["submodule--helper", "init"], "submodule-url");
    e.allowed(&["submodule", "status"]);
    e.fake.gitmodules = Ok(vec![("submodule.s.url".into(), "../s.git".into())]);
    e.allowed(&["submodule", "sync"]);
    e.fake.gitmodules = Err("bad".into());
    e.refused(&["submodule", "init"], "submodule-url");
}

#[test]
fn redteam3_worktree_config_and_maintenance_verbs() {
    let mut e = env("");
    // R7: sparse-checkout switches extensions.worktreeConfig on.
    e.refused(&["sparse-checkout", "init", "--cone"], "config-key");
    e.refused(&["sparse-checkout", "set", "d"], "config-key");
    e.allowed(&["sparse-checkout", "list"]);
    e.fake.worktree_config = Some(true);
    e.allowed(&["sparse-checkout", "set", "d"]);
    // R8: maintenance scheduling writes the owner's global config and scheduler.
    e.refused(&["maintenance", "register"], "outside-write");
    e.refused(
        &["maintenance", "start", "--scheduler=crontab"],
        "outside-write",
    );
    e.refused(
        &["config", "--global", "--add", "maintenance.repo", "/x"],
        "config-key",
    );
    e.allowed(&["maintenance", "run", "--task=gc"]);
}

#[test]
fn redteam3_config_count_past_the_cap_is_unreadable() {
    let e = env("");
    // R9: keys past the cap were never read, git reads them all (refused on the count
    // alone, before any key is read).
    let n = (super::argv::CONFIG_COUNT_MAX + 1).to_string();
    let vars = [("GIT_CONFIG_COUNT", n.as_str())];
    match e.check_env(&["status"], &vars) {
        Err((rule, _)) => assert_eq!(rule, "transient-config"),
        Ok(p) => panic!("allowed: {p:?}"),
    }
}

#[test]
fn redteam3_builtin_list_holds_for_every_installed_git() {
    let mut checked = 0;
    for g in ["/usr/bin/git", "/usr/local/bin/git"] {
        if !Path::new(g).exists() {
            eprintln!("SKIPPED for {g}: not installed on this machine");
            continue;
        }
        let out = std::process::Command::new(g)
            .args(["--list-cmds=builtins"])
            .env_clear()
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        let list = String::from_utf8_lossy(&out.stdout).into_owned();
        for w in super::rules::BUILTINS {
            assert!(
                list.lines().any(|l| l == *w),
                "{w} is no builtin of {g}: git looks it up as an alias there"
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "no git installed");
}

#[test]
fn redteam3_worktree_repair_registers_only_session_paths() {
    let e = env("");
    // R10: repair points any entry (another session's too) at the path given.
    let outside = e.fake.top.with_file_name("elsewhere/hijack");
    e.refused(
        &["worktree", "repair", outside.to_str().unwrap()],
        "worktree-location",
    );
    let mine = format!("{}/feat", e.wt().display());
    assert_eq!(e.allowed(&["worktree", "repair", &mine]), Plan::Exec);
    // Without paths: this call's work tree (here the main one) is what gets registered.
    assert_eq!(e.allowed(&["worktree", "repair"]), Plan::Exec);
    // R11: trace2 targets in the global config append to any file on every git call.
    e.refused(
        &[
            "config",
            "--global",
            "trace2.eventTarget",
            "/home/u/.bashrc",
        ],
        "config-key",
    );
}

#[test]
fn redteam3_branch_remote_is_a_url_when_it_names_no_remote() {
    let e = env("");
    // R16: git fetch takes a branch.<name>.remote that names no remote as the URL itself.
    e.refused(
        &["config", "branch.main.remote", "ext::sh -c x"],
        "config-key",
    );
    e.refused(
        &["config", "branch.main.pushRemote", "/tmp/r"],
        "config-key",
    );
    e.refused(&["config", "remote.pushDefault", "fd::1"], "config-key");
    e.allowed(&["config", "branch.main.remote", "origin"]);
    e.allowed(&["config", "branch.main.remote", "."]);
    e.allowed(&["config", "branch.main.remote", "https://example.com/r.git"]);
}

#[test]
fn push_set_upstream_to_a_url_is_judged_as_one() {
    let e = env("");
    // `push -u <repository>` stores <repository> as branch.<name>.remote (checked on
    // git 2.39.5 and 2.47.3: `git push -u ../target.git HEAD:main` stores `../target.git`).
    e.refused(&["push", "-u", "../target.git", "main"], "remote-url");
    e.refused(&["push", "--set-upstream", "/tmp/r", "main"], "remote-url");
    e.refused(&["push", "--set-up", "file:///tmp/r", "main"], "remote-url");
    e.refused(&["push", "-fu", "./r", "main"], "remote-url");
    // --repo is the repository when no positional names one (a positional wins).
    e.refused(&["push", "-u", "--repo=/tmp/r"], "remote-url");
    e.refused(&["push", "-u", "--repo", "/tmp/r"], "remote-url");
    e.refused(&["push", "-o", "ci.skip", "-u", "/tmp/r"], "remote-url");
    // A remote's name, the repository itself, an ordinary URL, or no -u: allowed.
    e.allowed(&["push", "-u", "origin", "main"]);
    e.allowed(&["push", "--set-upstream", ".", "main"]);
    e.allowed(&["push", "-u", "https://example.com/r.git", "main"]);
    e.allowed(&["push", "../target.git", "main"]);
    e.allowed(&["push", "-o", "-u", "origin"]);
}

#[test]
fn redteam3_redirects_for_every_repository() {
    let e = env("");
    // R19: the per-URL form of http.proxy, and TLS switches.
    e.refused(
        &[
            "config",
            "http.https://github.com/.proxy",
            "http://127.0.0.1:9",
        ],
        "config-key",
    );
    e.refused(
        &["config", "--global", "http.sslVerify", "false"],
        "config-key",
    );
    e.refused(
        &["config", "http.https://h/.sslCAInfo", "/tmp/ca.pem"],
        "config-key",
    );
    // R20: a URL rewrite is the repository's business, not every repository's.
    let rewrite = "url.https://attacker.invalid/.insteadOf";
    e.refused(
        &["config", "--global", rewrite, "https://github.com/"],
        "config-key",
    );
    e.refused(
        &[
            "config",
            "-f",
            "/home/u/.gitconfig",
            rewrite,
            "https://github.com/",
        ],
        "config-key",
    );
    e.refused(
        &["config", "set", "--system", rewrite, "https://github.com/"],
        "config-key",
    );
    e.allowed(&["config", rewrite, "https://github.com/"]);
    e.allowed(&["config", "--global", "user.name", "A"]);
    // R21: the owner's protections against other users' and embedded bare repositories.
    e.refused(
        &["config", "--global", "safe.bareRepository", "all"],
        "config-key",
    );
    e.refused(
        &["config", "--global", "--add", "safe.directory", "*"],
        "config-key",
    );
}

#[test]
fn redteam3_worktrees_directly_in_the_session_folder() {
    let e = env("");
    // R22: settings-watch guards each folder directly in the session folder as a worktree;
    // one further down had its settings files below every rule's paths.
    let nested = format!("{}/group/feat", e.wt().display());
    e.refused(&["worktree", "add", &nested], "worktree-location");
    let a = format!("{}/a", e.wt().display());
    e.refused(&["worktree", "move", &a, &nested], "worktree-location");
    e.allowed(&["worktree", "add", &format!("{}/feat", e.wt().display())]);
}

#[test]
fn sequencer_options_that_the_owners_continue_would_run() {
    let e = env("");
    for bad in [
        &["rebase", "-x", "make test", "main"][..],
        &["rebase", "--exec=make test", "main"],
        &["rebase", "--exec", "make", "main"],
        &["rebase", "-ixmake", "main"],
        &["rebase", "--ex", "make", "main"],
        &["rebase", "-s", "/../evil", "main"],
        &["rebase", "--strategy=resolve", "main"],
        &["rebase", "-Xtheirs", "main"],
        &["rebase", "--strategy-option", "theirs", "main"],
        &["rebase", "-SKEYID", "main"],
        &["rebase", "--gpg-sign=KEYID", "main"],
        &["cherry-pick", "--strategy=x", "abc"],
        &["cherry-pick", "-X", "ours", "abc"],
        &["cherry-pick", "-SKEY", "abc"],
        &["revert", "--strategy", "x", "abc"],
        &["pull", "--rebase", "-s", "x"],
        &["pull", "-SKEY"],
    ] {
        let m = e.refused(bad, "sequencer-option");
        assert!(m.contains("allow_sequencer_options"), "{m}");
    }
    for ok in [
        &["rebase", "main"][..],
        &["rebase", "-i", "main"],
        &["rebase", "-S", "main"],
        &["rebase", "--gpg-sign", "main"],
        &["rebase", "--continue"],
        &["rebase", "--onto", "x", "main"],
        &["cherry-pick", "-x", "abc"],
        &["cherry-pick", "-s", "abc"],
        &["cherry-pick", "-S", "abc"],
        &["cherry-pick", "-m", "1", "abc"],
        &["merge", "-s", "ours", "x"],
        &["merge", "-Xtheirs", "x"],
        &["am", "--directory=a", "p.patch"],
        &["pull", "--rebase"],
    ] {
        e.allowed(ok);
    }
    let allow = env("[shim]\nallow_sequencer_options = true");
    allow.allowed(&["rebase", "-x", "make", "main"]);
    allow.allowed(&["cherry-pick", "--strategy=x", "abc"]);
}

#[test]
fn pruning_touches_only_the_sessions_own_worktree_entries() {
    let mut e = env("");
    let own = e.fake.top.with_file_name("proj-worktrees/s1/feat");
    let other = e.fake.top.with_file_name("proj-worktrees/s2/other");
    let prune_all = ["worktree", "prune"];
    // Nothing prunable, or only this session's own entries: allowed.
    assert_eq!(e.allowed(&prune_all), Plan::ChildThenTidy);
    e.fake.prunable = Ok(vec![own.clone()]);
    assert_eq!(e.allowed(&["worktree", "prune", "-v"]), Plan::ChildThenTidy);
    assert_eq!(e.allowed(&["gc"]), Plan::Exec);
    // Another session's entry (its folder is not visible here): every command that prunes
    // entries is refused, naming it; a dry run only prints.
    e.fake.prunable = Ok(vec![own, other.clone()]);
    for args in [
        &prune_all[..],
        &["worktree", "prune", "--expire", "now"],
        &["worktree", "prune", "--expire=1.day.ago", "-v"],
        &["gc"],
        &["gc", "--prune=now"],
        &["gc", "--auto"],
        &["maintenance", "run"],
        &["maintenance", "run", "--task=gc"],
        &["-C", ".", "worktree", "prune"],
    ] {
        let m = e.refused(args, "worktree-prune");
        assert!(m.contains(&other.display().to_string()), "{m}");
        assert!(!m.contains("s1/feat"), "{m}");
    }
    assert_eq!(e.allowed(&["worktree", "prune", "-n"]), Plan::ChildThenTidy);
    assert_eq!(
        e.allowed(&["worktree", "prune", "--dry-run", "-v"]),
        Plan::ChildThenTidy
    );
    assert_eq!(
        e.allowed(&["worktree", "prune", "-nv"]),
        Plan::ChildThenTidy
    );
    // git could not list the entries: fail closed.
    e.fake.prunable = Err("git worktree list exited 128".into());
    e.refused(&prune_all, "worktree-prune");
    e.refused(&["gc"], "worktree-prune");
}

/// Reinstalling the same binary (the shim folder already holds a hard link to it) leaves no
/// `.git-shim-<pid>.tmp` behind: rename(2) between two links to one file does nothing.
#[test]
fn reinstall_leaves_no_temporary_link() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("git-shim");
    std::fs::write(&bin, b"#!/bin/sh\n").unwrap();
    let dir = d.path().join("bin");
    for _ in 0..2 {
        super::install_binary(&bin, &dir, None).unwrap();
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["git"], "{names:?}");
    }
}

/// The environment git gets, built over `environ`'s `name=value` entries without copying
/// them ([`super::Session::env_entries`]), is the one the `(name, value)` filter before it
/// built: same variables, same order, same values (a reference copy of that filter below),
/// with and without the agent's `GIT_CONFIG_*` kept.
#[test]
fn env_entries_are_what_the_pair_filter_built() {
    use super::{is_config_carrier, Session};
    use crate::env::{GitProbe, GitVersionRepr};
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let e = env("");
    let mut opts = DefuseOptions::new(GitVersion::new(2, 47, 3));
    opts.ceilings = super::ceilings(&e.policy);
    opts.keep = super::KEEP.iter().map(|s| (*s).to_owned()).collect();
    // A kept name the set also sets (none in the shim's own lists): the set's value wins.
    opts.keep.push("GIT_PAGER".to_owned());
    let session = Session {
        policy: e.policy.clone(),
        git: PathBuf::from("/usr/bin/git"),
        probe: GitProbe {
            path: PathBuf::from("/usr/bin/git"),
            version: GitVersionRepr(2, 47, 3),
            exec_path: PathBuf::from("/usr/lib/git-core"),
            system_config: PathBuf::from("/etc/gitconfig"),
        },
        defused: Defused::new(opts),
    };
    let raw: Vec<&[u8]> = vec![
        b"PATH=/usr/bin:/bin",
        b"HOME=/home/a",
        b"LD_PRELOAD=/tmp/evil.so",
        b"GIT_PAGER=less",
        b"PAGER=more",
        b"GIT_DIR=/r/.git",
        b"GIT_AUTHOR_NAME=A=B",
        b"GIT_TRACE=1",
        b"GIT_CONFIG_COUNT=1",
        b"GIT_CONFIG_KEY_0=user.name",
        b"GIT_CONFIG_VALUE_0=Env",
        b"GIT_CONFIG_PARAMETERS='user.email'='e@x'",
        b"GIT_CEILING_DIRECTORIES=/",
        b"NOEQUALS",
        b"=odd=value",
        b"EMPTY=",
        b"HOME=/home/second",
        b"N\xffX=non-utf8",
        b"GIT_\xff=non-utf8",
        // Another shim's marker (never passed on: `Session::exec` sets git's own).
        b"GITWARD_SHIM_EXEC=1:/elsewhere/git",
    ];
    // The filter as it was, over `(name, value)` pairs split as `std::env::vars_os` splits.
    let reference = |keep_config_env: bool| -> Vec<(Vec<u8>, Vec<u8>)> {
        let pairs = raw.iter().filter_map(|kv| {
            let at = 1 + kv.get(1..)?.iter().position(|&b| b == b'=')?;
            Some((
                OsStr::from_bytes(&kv[..at]).to_owned(),
                OsStr::from_bytes(&kv[at + 1..]).to_owned(),
            ))
        });
        let mut inherited_params = None;
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        for (k, v) in pairs {
            if k == super::EXEC_MARKER {
                continue;
            }
            if keep_config_env && is_config_carrier(k.as_bytes()) {
                if k == "GIT_CONFIG_PARAMETERS" {
                    inherited_params = Some(v);
                } else {
                    out.push((k, v));
                }
            } else if session.defused.keeps(&k) {
                out.push((k, v));
            }
        }
        for (k, v) in session.defused.set_vars() {
            out.retain(|(have, _)| have.as_os_str() != OsStr::new(k));
            out.push((OsString::from(k), v.clone()));
        }
        let params = session
            .defused
            .config_parameters(session.config_pairs(), inherited_params.as_deref());
        if let Some(p) = params {
            out.push(("GIT_CONFIG_PARAMETERS".into(), p));
        }
        out.into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    for keep_config_env in [false, true] {
        let got: Vec<(Vec<u8>, Vec<u8>)> = session
            .env_entries(keep_config_env, raw.iter().copied())
            .iter()
            .map(|e| {
                let (k, v) = e.split();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert_eq!(got, reference(keep_config_env), "keep {keep_config_env}");
        let names: Vec<&[u8]> = got.iter().map(|(k, _)| k.as_slice()).collect();
        let value = |n: &[u8]| got.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_slice());
        // Controls: each rule is seen to act (dropped, replaced, kept, carried).
        assert!(!names.contains(&b"LD_PRELOAD".as_slice()));
        assert!(!names.contains(&b"GIT_TRACE".as_slice()));
        assert!(!names.contains(&b"NOEQUALS".as_slice()));
        assert!(!names.contains(&b"GIT_\xff".as_slice()));
        assert!(!names.contains(&super::EXEC_MARKER.as_bytes()));
        assert!(names.contains(&b"N\xffX".as_slice()));
        assert_eq!(value(b"GIT_PAGER"), Some(b"cat".as_slice()));
        assert_eq!(names.iter().filter(|n| **n == b"GIT_PAGER").count(), 1);
        assert_eq!(value(b"GIT_DIR"), Some(b"/r/.git".as_slice()));
        assert_eq!(value(b"GIT_AUTHOR_NAME"), Some(b"A=B".as_slice()));
        assert_eq!(value(b"=odd"), Some(b"value".as_slice()));
        assert_eq!(names.iter().filter(|n| **n == b"HOME").count(), 2);
        assert_eq!(
            names
                .iter()
                .filter(|n| **n == b"GIT_CEILING_DIRECTORIES")
                .count(),
            1
        );
        assert_ne!(value(b"GIT_CEILING_DIRECTORIES"), Some(b"/".as_slice()));
        let params = value(b"GIT_CONFIG_PARAMETERS").unwrap();
        assert!(params.starts_with(b"'core.fsmonitor'='false'") != keep_config_env);
        assert_eq!(params.starts_with(b"'user.email'='e@x' "), keep_config_env);
        assert_eq!(
            names.contains(&b"GIT_CONFIG_COUNT".as_slice()),
            keep_config_env
        );
    }
}

/// The builtin list the rules read (one text, `packed::Words`) is `BUILTINS`, word for word:
/// each word is found, a longer or shorter word, another case or an empty word is not.
#[test]
fn builtin_words_are_the_builtin_list() {
    let words = super::rules::BUILTIN_WORDS;
    assert_eq!(
        words.iter().collect::<Vec<_>>(),
        super::rules::BUILTINS.to_vec()
    );
    for w in super::rules::BUILTINS {
        assert!(words.contains(w.as_bytes()), "{w}");
        assert!(!words.contains(format!("{w}x").as_bytes()), "{w}x");
        let shorter = &w[..w.len() - 1];
        assert_eq!(
            words.contains(shorter.as_bytes()),
            super::rules::BUILTINS.contains(&shorter),
            "{shorter}"
        );
        assert!(!words.contains(w.to_uppercase().as_bytes()), "{w} upper");
        assert!(!words.contains(format!("{w}\n").as_bytes()), "{w} newline");
    }
    assert!(!words.contains(b""));
    assert!(
        !words.contains(b"add\nam"),
        "control: two words are not one"
    );
}

#[test]
fn rt24_commands_and_dash_operands() {
    let e = env("");
    e.refused(
        &["for-each-repo", "--config=x.r", "--", "status"],
        "command",
    );
    e.refused(&["remote-ext", "x", "sh -c id"], "command");
    // W7: operands after `--` that the child fetch reads as options.
    e.refused(&["pull", "--", "--upload-pack=/tmp/p"], "dash-operand");
    e.refused(&["pull", "--end-of-options", "-x"], "dash-operand");
    e.refused(
        &["fetch", "--multiple", "--", "--upload-pack=/tmp/p"],
        "dash-operand",
    );
    e.refused(
        &["remote", "update", "--", "--upload-pack=/tmp/p"],
        "dash-operand",
    );
    e.refused(&["push", "--", "-oProxyCommand=x"], "dash-operand");
    // W8: a remote named as an option.
    e.refused(
        &[
            "remote",
            "add",
            "--",
            "--upload-pack=/tmp/p",
            "https://example.com/x",
        ],
        "dash-operand",
    );
    e.refused(&["remote", "rename", "origin", "--", "-x"], "dash-operand");
    e.refused(
        &[
            "config",
            "remote.--upload-pack=/tmp/p.url",
            "https://example.com/x",
        ],
        "config-key",
    );
    // W6: a remote group member read as an option.
    e.refused(
        &["config", "remotes.g", "origin --upload-pack=/tmp/p"],
        "config-key",
    );
    e.refused(
        &[
            "-c",
            "remotes.g=--upload-pack=/tmp/p",
            "fetch",
            "--multiple",
            "g",
        ],
        "transient-config",
    );
    e.refused(
        &[
            "-c",
            "remote.-x.url=https://example.com/x",
            "fetch",
            "--all",
        ],
        "transient-config",
    );
    // git config stops at the first operand: a value starting with '-' is a value.
    e.refused(&["config", "core.hooksPath", "--x"], "config-key");
    e.refused(&["config", "set", "core.hooksPath", "-x"], "config-key");
    e.refused(
        &["config", "--add", "core.fsmonitor", "--", "x"],
        "config-key",
    );
    e.allowed(&["config", "user.name", "--x"]);
    // The ordinary forms stay allowed.
    e.allowed(&["pull", "--", "origin", "main"]);
    e.allowed(&["fetch", "--multiple", "origin", "up"]);
    e.allowed(&["remote", "update", "g"]);
    e.allowed(&["remote", "add", "--", "up", "https://example.com/x"]);
    e.allowed(&["remote", "remove", "--", "-x"]);
    e.allowed(&["config", "remotes.g", "origin up\tother"]);
    e.allowed(&["-c", "remotes.g=origin up", "fetch", "--multiple", "g"]);
    e.allowed(&["log", "--", "-weird-path"]);
}

/// The twenty-fifth red-team pass: a word spelled as a transport-program option anywhere on
/// a transport command's line (behind an option whose separate value is `--`, or an operand a
/// script hands on), a clone remote named as an option, and keys whose value is a remote name.
#[test]
fn rt25_option_words_anywhere_and_remote_name_keys() {
    let e = env("");
    for args in [
        &["ls-remote", "-o", "--", "--upload-pack=/tmp/p", "/tmp/r"][..],
        &[
            "ls-remote",
            "--server-option",
            "--end-of-options",
            "--upload-p=/tmp/p",
            "/tmp/r",
        ],
        &[
            "archive",
            "--remote=/tmp/r",
            "-o",
            "--",
            "--exec=/tmp/p",
            "HEAD",
        ],
        &[
            "send-pack",
            "--push-option",
            "--",
            "--receive-pack=/tmp/p",
            "/tmp/r",
            "master",
        ],
        &["request-pull", "HEAD", "--", "--upload-pack=/tmp/p"],
    ] {
        e.refused(args, "transport-program");
    }
    e.refused(
        &["clone", "-o", "--upload-pack=x", "/tmp/r", "d"],
        "transport-program",
    );
    for args in [
        &["clone", "--origin", "-x", "/tmp/r", "d"][..],
        &["clone", "--origin=-x", "/tmp/r", "d"],
        &["clone", "-o-x", "/tmp/r", "d"],
    ] {
        e.refused(args, "dash-operand");
    }
    e.allowed(&["clone", "-o", "upstream", "/tmp/r", "d"]);
    e.allowed(&["ls-remote", "-o", "x", "/tmp/r"]);
    for (k, v) in [
        ("clone.defaultRemoteName", "--upload-pack=/tmp/p"),
        ("Clone.DefaultRemoteName", "-x"),
        ("branch.main.remote", "--upload-pack=/tmp/p"),
        ("branch.main.pushRemote", "-x"),
        ("remote.pushDefault", "-x"),
        ("checkout.defaultRemote", "-x"),
    ] {
        assert!(
            crate::shim::rules::key_danger(k, Some(v)).is_some(),
            "{k}={v}"
        );
    }
    assert!(crate::shim::rules::key_danger("clone.defaultRemoteName", Some("upstream")).is_none());
    assert!(crate::shim::rules::key_danger("branch.main.remote", Some("origin")).is_none());
}

/// An entry the shim makes is `name=value` and its NUL, so `exec` hands it to `execve` as it
/// is; its name and value are read without the NUL.
#[test]
fn an_owned_entry_ends_with_its_nul_and_splits_without_it() {
    use crate::shim::EnvEntry;
    let e = EnvEntry::owned(b"GIT_PAGER", b"cat");
    let EnvEntry::Owned { kv, .. } = &e else {
        panic!("owned");
    };
    assert_eq!(kv.as_slice(), b"GIT_PAGER=cat\0");
    assert_eq!(e.split(), (&b"GIT_PAGER"[..], &b"cat"[..]));
    assert_eq!(e.name(), b"GIT_PAGER");
    let empty = EnvEntry::owned(b"GIT_ASKPASS", b"");
    assert_eq!(empty.split(), (&b"GIT_ASKPASS"[..], &b""[..]));
    // Control: a borrowed entry (an `environ` string, its NUL outside the slice) splits the same.
    assert_eq!(EnvEntry::Borrowed(b"GIT_PAGER=cat").split(), e.split());
}

/// The real git's probe rides in the policy cache (one file a call): it is stored there
/// after the first call, used while it describes the git found — same path, same device,
/// inode, size and modification time — and never for a git that changed or another path.
#[test]
fn the_policy_cache_holds_the_probe_of_the_git_it_found() {
    use super::{load_policy_cached, PolicySource, Session};
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let repo = home.join("src/proj");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(home.join("etc")).unwrap();
    std::fs::create_dir_all(home.join("bin")).unwrap();
    // A stand-in git that answers the probe's two questions.
    let git = home.join("bin/real-git");
    let fake = |version: &str| {
        std::fs::write(
            &git,
            format!(
                "#!/bin/sh\ncase \"$1\" in version) echo 'git version {version}';; \
                 --exec-path) echo /usr/lib/git-core;; esac\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    fake("2.40.1");
    let file = home.join("etc/p.toml");
    std::fs::write(
        &file,
        format!(
            "session = \"a\"\nrepo = \"{}\"\nreal_git = \"{}\"\nstate_dir = \"{}\"\n",
            repo.display(),
            git.display(),
            home.join("state").display()
        ),
    )
    .unwrap();
    let cache = home.join("bin/cache.json");
    let src = PolicySource {
        file: file.clone(),
        cache: Some(cache.clone()),
        home: Some(home.clone()),
    };
    let held = |src: &PolicySource| {
        let l = load_policy_cached(src, &home).unwrap();
        l.git.map(|g| g.probe.version)
    };
    // First call: nothing held; the probe is made and stored beside the policy.
    assert_eq!(held(&src), None);
    let s = Session::open_loaded(load_policy_cached(&src, &home).unwrap()).unwrap();
    assert_eq!(s.probe.version.0, 2);
    assert_eq!(s.probe.version.1, 40);
    assert_eq!(held(&src).map(|v| v.1), Some(40));
    // Held and used: the next session gets it from the policy cache (the probe cache under
    // the state folder is gone, and the stand-in git would now answer something else — but
    // it has not changed, so its key still matches and the held probe is right).
    std::fs::remove_dir_all(home.join("state")).unwrap();
    let s = Session::open_loaded(load_policy_cached(&src, &home).unwrap()).unwrap();
    assert_eq!(s.probe.version.1, 40);
    assert!(
        !home.join("state").exists(),
        "no probe file was read or written"
    );
    // The git changes (size and modification time): the held probe no longer matches.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    fake("2.41.10");
    let s = Session::open_loaded(load_policy_cached(&src, &home).unwrap()).unwrap();
    assert_eq!(s.probe.version.1, 41, "a changed git is probed again");
    assert_eq!(
        held(&src).map(|v| v.1),
        Some(41),
        "and the new probe is stored"
    );
    // A held probe of another path (same key) is not taken for this git.
    let text = std::fs::read_to_string(&cache).unwrap();
    let other = text.replace(
        &format!("\"path\":\"{}\"", git.display()),
        "\"path\":\"/elsewhere/git\"",
    );
    assert_ne!(text, other);
    std::fs::write(&cache, other).unwrap();
    let l = load_policy_cached(&src, &home).unwrap();
    let md = std::fs::metadata(&git).unwrap();
    assert!(l.git.as_ref().unwrap().for_git(&git, Some(&md)).is_none());
    let s = Session::open_loaded(l).unwrap();
    assert_eq!(s.probe.path, git);
    // An edit of the policy file drops what the cache held, the probe with it.
    std::fs::write(
        &file,
        format!(
            "session = \"bb\"\nrepo = \"{}\"\nreal_git = \"{}\"\nstate_dir = \"{}\"\n",
            repo.display(),
            git.display(),
            home.join("state").display()
        ),
    )
    .unwrap();
    assert_eq!(held(&src), None);
}

/// The pin holds the policy path and the owner's home, one a line; anything else is not a
/// pin (an older one, an edited one) and the shim refuses it rather than read `~/` with the
/// caller's `HOME`.
#[test]
fn the_pin_records_the_owners_home() {
    use super::{parse_pin, pin_text};
    let text = pin_text(Path::new("/etc/gw/s1.toml"), Path::new("/home/o")).unwrap();
    assert_eq!(text, "/etc/gw/s1.toml\nhome=/home/o\n");
    assert_eq!(
        parse_pin(&text),
        Some(("/etc/gw/s1.toml".into(), "/home/o".into()))
    );
    for bad in [
        "/etc/gw/s1.toml\n",
        "/etc/gw/s1.toml",
        "/etc/gw/s1.toml\nhome=/home/o",
        "/etc/gw/s1.toml\nhome=\n",
        "/etc/gw/s1.toml\nhome=rel\n",
        "rel.toml\nhome=/home/o\n",
        "/etc/gw/s1.toml\nHOME=/home/o\n",
        "/etc/gw/s1.toml\nhome=/home/o\nextra\n",
    ] {
        assert_eq!(parse_pin(bad), None, "{bad:?}");
    }
    assert_eq!(pin_text(Path::new("/a\nb"), Path::new("/h")), None);
    assert_eq!(pin_text(Path::new("/a"), Path::new("rel")), None);
}
