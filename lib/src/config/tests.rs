use super::*;
use std::fs;
use std::path::{Path, PathBuf};

fn w(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// A scratch layout: `home/`, `repo/` (work tree) with `repo/.git/` (git dir = common dir).
struct Scratch {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    git: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let repo = root.join("repo");
        let git = repo.join(".git");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&git).unwrap();
        Scratch {
            _tmp: tmp,
            root,
            home,
            repo,
            git,
        }
    }

    fn opts(&self) -> Options {
        Options::for_repository(Some(&self.repo), &self.git, &self.git).with_owner(
            None,
            Some(&self.home),
            None,
        )
    }
}

fn keys(e: &Enumeration) -> Vec<String> {
    e.values()
        .iter()
        .map(|v| format!("{}={}", v.key(), v.text()))
        .collect()
}

#[test]
fn values_in_load_order_with_implicit_and_mixed_case() {
    let s = Scratch::new();
    w(&s.home.join(".gitconfig"), "[user]\n\tname = Owner\n");
    w(
        &s.home.join(".config/git/config"),
        "[Core]\n\tPager = less\n",
    );
    w(
        &s.git.join("config"),
        "[core]\n\tbare = false\n\tFSMonitor\n[Filter \"Evil\"]\n\tClean = x %f\n[Diff.TXT]\n\ttextconv = cat\n[merge \"m\"]\n",
    );
    let e = enumerate(&s.opts()).unwrap();
    assert_eq!(
        keys(&e),
        [
            "core.pager=less",
            "user.name=Owner",
            "core.bare=false",
            "core.fsmonitor=true",
            "filter.Evil.clean=x %f",
            "diff.txt.textconv=cat",
        ]
    );
    let fsm = &e.values()[3];
    assert_eq!(fsm.value, None, "no '=': implicit boolean");
    assert_eq!(fsm.name, "fsmonitor", "lower-cased, as git reads it");
    assert_eq!(fsm.line, 3);
    assert_eq!(fsm.origin.scope, Scope::Local);
    assert!(e.get_last("core.fsmonitor").is_some());
    assert!(e.get_last("CORE.FSMONITOR").is_some());
    assert!(
        e.get_last("filter.evil.clean").is_none(),
        "subsections are case-sensitive"
    );
    assert!(e.get_last("filter.Evil.CLEAN").is_some());
    let names = e.per_name_sections();
    assert!(names.contains(&("filter".into(), "Evil".into())));
    // The deprecated `[Diff.TXT]` form is lower-cased, as git does.
    assert!(names.contains(&("diff".into(), "txt".into())));
    // An empty section still names a driver.
    assert!(names.contains(&("merge".into(), "m".into())));
    let armed: Vec<String> = e.armed().iter().map(|a| a.value.key()).collect();
    assert!(armed.contains(&"core.fsmonitor".to_string()));
    assert!(armed.contains(&"filter.Evil.clean".to_string()));
    assert!(!armed.contains(&"user.name".to_string()));
    let json = serde_json::to_value(&e.values()[3]).unwrap();
    assert_eq!(json["key"], "core.fsmonitor");
    assert_eq!(json["value"], serde_json::Value::Null);
    assert_eq!(json["origin"]["scope"]["scope"], "local");
    assert_eq!(json["origin"]["trust"], "untrusted");
    // Global files come in git's order: XDG first, then ~/.gitconfig.
    assert_eq!(e.values()[0].origin.file, s.home.join(".config/git/config"));
}

#[test]
fn includes_followed_whatever_the_condition() {
    let s = Scratch::new();
    w(
        &s.home.join(".gitconfig"),
        "[include]\n\tpath = ~/inc/a.cfg\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = inc/cond.cfg\n[user]\n\temail = after@x\n",
    );
    w(
        &s.home.join("inc/a.cfg"),
        "[include]\n\tpath = b.cfg\n[a]\n\tx = 1\n",
    );
    w(&s.home.join("inc/b.cfg"), "[b]\n\ty = 2\n");
    w(&s.home.join("inc/cond.cfg"), "[alias]\n\tst = !evil\n");
    w(
        &s.git.join("config"),
        "[includeIf \"onbranch:never\"]\n\tpath = ../tracked.cfg\n[includeIf \"hasconfig:remote.*.url:https://x/**\"]\n\tpath = /absent/file\n",
    );
    w(
        &s.repo.join("tracked.cfg"),
        "[core]\n\tfsmonitor = ./run.sh\n",
    );
    let e = enumerate(&s.opts()).unwrap();
    assert_eq!(
        keys(&e),
        [
            "include.path=~/inc/a.cfg".to_string(),
            "include.path=b.cfg".into(),
            "b.y=2".into(),
            "a.x=1".into(),
            "includeif.gitdir:/nowhere/.path=inc/cond.cfg".into(),
            "alias.st=!evil".into(),
            "user.email=after@x".into(),
            "includeif.onbranch:never.path=../tracked.cfg".into(),
            "core.fsmonitor=./run.sh".into(),
            "includeif.hasconfig:remote.*.url:https://x/**.path=/absent/file".into(),
        ]
    );
    let b = e.values().iter().find(|v| v.is("b.y")).unwrap();
    assert_eq!(b.origin.depth, 2);
    assert_eq!(
        b.origin.include_chain,
        [
            s.home.join(".gitconfig"),
            s.home.join("inc/a.cfg"),
            s.home.join("inc/b.cfg")
        ]
    );
    assert_eq!(b.origin.scope, Scope::Global);
    assert_eq!(b.origin.trust, Trust::Trusted);
    let cond = e.values().iter().find(|v| v.is("alias.st")).unwrap();
    assert_eq!(cond.origin.condition.as_deref(), Some("gitdir:/nowhere/"));
    let fsm = e.get_last("core.fsmonitor").unwrap();
    assert_eq!(fsm.origin.file, s.git.join("../tracked.cfg"));
    assert_eq!(fsm.origin.scope, Scope::Local);
    assert_eq!(fsm.origin.trust, Trust::Untrusted);
    // The missing target is recorded, not an error.
    let missing: Vec<&FileEntry> = e
        .files()
        .iter()
        .filter(|f| f.state == FileState::Missing)
        .collect();
    assert!(missing
        .iter()
        .any(|f| f.origin.file == Path::new("/absent/file") && f.origin.depth == 1));
}

#[test]
fn include_cycle_and_depth_are_errors() {
    let s = Scratch::new();
    w(&s.git.join("config"), "[include]\n\tpath = ../a.cfg\n");
    w(&s.repo.join("a.cfg"), "[include]\n\tpath = b.cfg\n");
    w(&s.repo.join("b.cfg"), "[include]\n\tpath = a.cfg\n");
    let err = enumerate(&s.opts()).unwrap_err();
    assert!(matches!(err, ConfigError::IncludeCycle { .. }), "{err}");
    assert!(err.to_string().contains("a.cfg"), "{err}");

    // Depth: the top file includes i1, i1 includes i2 … git accepts ten levels, not eleven.
    let chain = |n: usize| {
        let s = Scratch::new();
        w(&s.git.join("config"), "[include]\n\tpath = ../i1.cfg\n");
        for i in 1..=n {
            w(
                &s.repo.join(format!("i{i}.cfg")),
                &format!("[include]\n\tpath = i{}.cfg\n[v]\n\td{i} = 1\n", i + 1),
            );
        }
        (enumerate(&s.opts()), s)
    };
    let (ok, _s) = chain(MAX_INCLUDE_DEPTH);
    let ok = ok.unwrap();
    assert_eq!(
        ok.values().iter().map(|v| v.origin.depth).max(),
        Some(MAX_INCLUDE_DEPTH)
    );
    let (err, _s) = chain(MAX_INCLUDE_DEPTH + 1);
    assert!(matches!(err, Err(ConfigError::IncludeDepth { .. })));
}

#[test]
fn include_without_value_is_an_error_and_empty_is_ignored() {
    let s = Scratch::new();
    w(&s.git.join("config"), "[include]\n\tpath =\n");
    assert!(enumerate(&s.opts()).is_ok());
    w(&s.git.join("config"), "[include]\n\tpath\n");
    let err = enumerate(&s.opts()).unwrap_err();
    assert!(
        matches!(err, ConfigError::IncludePath { line: 2, .. }),
        "{err}"
    );
}

#[test]
fn prefix_and_other_users_home() {
    let s = Scratch::new();
    // `~<name>/` as getpwnam gives it: root's when the tests run as root (CI), else this
    // user's — another user's home is commonly closed (root's is 0700), and an include git
    // cannot open is an error (git dies on EACCES), so `~root` failed under any other user.
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .expect("the current user in the password database");
    w(
        &s.git.join("config"),
        &format!(
            "[include]\n\tpath = %(prefix)/etc/extra\n\tpath = ~{}/.gitconfig-gitward-test\n",
            me.name
        ),
    );
    let mut o = s.opts();
    o.git_prefix = Some(s.root.join("prefix"));
    w(&s.root.join("prefix/etc/extra"), "[x]\n\ty = 1\n");
    let e = enumerate(&o).unwrap();
    assert!(e.get_last("x.y").is_some());
    assert!(e
        .files()
        .iter()
        .any(|f| f.origin.file == me.dir.join(".gitconfig-gitward-test")));
    // Without a prefix, `%(prefix)/` cannot be resolved: an error, not a silent skip.
    o.git_prefix = None;
    assert!(matches!(
        enumerate(&o),
        Err(ConfigError::IncludeUnresolved { .. })
    ));
}

#[test]
fn unparseable_file_fails_closed_naming_the_file() {
    let s = Scratch::new();
    w(&s.git.join("config"), "[core\n\tfsmonitor = x\n");
    let err = enumerate(&s.opts()).unwrap_err();
    assert!(matches!(err, ConfigError::Parse { .. }));
    let msg = err.to_string();
    assert!(msg.contains(".git/config"), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
    // A variable before any section: git reads it (as the key `fsmonitor`, which no git
    // consumer looks up), and so does the enumeration.
    w(&s.git.join("config"), "fsmonitor = x\n");
    let e = enumerate(&s.opts()).unwrap();
    assert_eq!(e.values()[0].key(), "fsmonitor");
    assert!(e.armed().is_empty());
}

#[test]
fn worktree_config_is_read_always_and_effective_only_when_enabled() {
    let s = Scratch::new();
    w(
        &s.git.join("config"),
        "[core]\n\thooksPath = /owner/hooks\n",
    );
    w(
        &s.git.join("config.worktree"),
        "[core]\n\thooksPath = .githooks\n",
    );
    let e = enumerate(&s.opts()).unwrap();
    assert!(!e.worktree_config_enabled());
    assert_eq!(e.get_last("core.hooksPath").unwrap().text(), "/owner/hooks");
    assert!(e
        .values()
        .iter()
        .any(|v| v.origin.scope == Scope::Worktree && v.text() == ".githooks"));
    // Enabled through an include only: git reads the format from the file itself, so no.
    w(
        &s.git.join("config"),
        "[core]\n\thooksPath = /owner/hooks\n[include]\n\tpath = ext.cfg\n",
    );
    w(
        &s.git.join("ext.cfg"),
        "[extensions]\n\tworktreeConfig = true\n",
    );
    assert!(!enumerate(&s.opts()).unwrap().worktree_config_enabled());
    w(
        &s.git.join("config"),
        "[core]\n\thooksPath = /owner/hooks\n[extensions]\n\tworktreeConfig\n",
    );
    let e = enumerate(&s.opts()).unwrap();
    assert!(e.worktree_config_enabled());
    assert_eq!(e.get_last("core.hooksPath").unwrap().text(), ".githooks");
    assert_eq!(
        e.last_of(crate::catalogue::loader::HOOKS_PATH)
            .unwrap()
            .text(),
        ".githooks"
    );
}

#[test]
fn linked_worktree_and_submodule_configs() {
    let s = Scratch::new();
    w(&s.git.join("config"), "[core]\n\tbare = false\n");
    w(
        &s.git.join("worktrees/wt1/config.worktree"),
        "[filter \"wt\"]\n\tclean = x\n",
    );
    w(&s.git.join("worktrees/wt1/HEAD"), "ref: refs/heads/x\n");
    w(
        &s.git.join("modules/sub/config"),
        "[diff \"s\"]\n\ttextconv = y\n",
    );
    w(&s.git.join("modules/sub/HEAD"), "ref: refs/heads/main\n");
    w(
        &s.git.join("modules/sub/modules/nested/config"),
        "[merge \"n\"]\n\tdriver = z\n",
    );
    w(
        &s.git.join("modules/with/slash/config.worktree"),
        "[core]\n\tfsmonitor = q\n",
    );
    w(
        &s.git.join("modules/with/slash/HEAD"),
        "ref: refs/heads/main\n",
    );
    // A submodule of the linked worktree wt1.
    w(
        &s.git.join("worktrees/wt1/modules/wsub/config"),
        "[filter \"wsub\"]\n\tsmudge = x\n",
    );
    let mut o = s.opts();
    o.linked_worktrees = true;
    o.submodules = Submodules::Walk;
    let e = enumerate(&o).unwrap();
    let names = e.per_name_sections();
    for (sec, sub) in [
        ("filter", "wt"),
        ("diff", "s"),
        ("merge", "n"),
        ("filter", "wsub"),
    ] {
        assert!(names.contains(&(sec.into(), sub.into())), "{sec}.{sub}");
    }
    let fsm = e.values().iter().find(|v| v.is("core.fsmonitor")).unwrap();
    assert_eq!(
        fsm.origin.scope,
        Scope::Submodule {
            git_dir: s.git.join("modules/with/slash")
        }
    );
    // Not this repository's value: not effective, not trusted.
    assert!(e.get_last("core.fsmonitor").is_none());
    assert_eq!(fsm.origin.trust, Trust::Untrusted);
    let wt = e.values().iter().find(|v| v.is("filter.wt.clean")).unwrap();
    assert!(matches!(wt.origin.scope, Scope::OtherWorktree { .. }));

    // A link to a folder under modules/ is not followed, and the walk says so.
    std::os::unix::fs::symlink(&s.home, s.git.join("modules/linked")).unwrap();
    assert!(matches!(enumerate(&o), Err(ConfigError::Incomplete { .. })));
    // Callers may give the list themselves.
    o.submodules = Submodules::Dirs(vec![s.git.join("modules/sub")]);
    let e = enumerate(&o).unwrap();
    assert!(e.names_in("diff").contains("s"));
    assert!(!e.names_in("merge").contains("n"));
}

#[test]
fn trust_of_owner_files_that_reach_into_the_repository() {
    let s = Scratch::new();
    w(
        &s.home.join(".gitconfig"),
        "[log]\n\tshowSignature = true\n[include]\n\tpath = ~/own.cfg\n\tpath = ../repo/planted.cfg\n",
    );
    w(&s.home.join("own.cfg"), "[gpg]\n\tprogram = /usr/bin/gpg\n");
    w(&s.repo.join("planted.cfg"), "[gpg]\n\tprogram = ./evil\n");
    let e = enumerate(&s.opts()).unwrap();
    let gpg: Vec<&Value> = e.get_all("gpg.program").collect();
    assert_eq!(gpg.len(), 2);
    assert_eq!(gpg[0].origin.trust, Trust::Trusted);
    assert_eq!(gpg[1].origin.trust, Trust::Untrusted);
    assert_eq!(gpg[1].origin.scope, Scope::Global, "git's scope word");
    let t = e.trusted_values();
    assert_eq!(
        t.get("gpg.program").map(String::as_str),
        Some("/usr/bin/gpg")
    );
    assert_eq!(t.get("log.showsignature").map(String::as_str), Some("true"));

    // An owner's include that is a link into the repository is untrusted too, and recorded.
    w(&s.repo.join("linked.cfg"), "[core]\n\tpager = evil\n");
    std::os::unix::fs::symlink(s.repo.join("linked.cfg"), s.home.join("own.cfg")).ok();
    fs::remove_file(s.home.join("own.cfg")).unwrap();
    std::os::unix::fs::symlink(s.repo.join("linked.cfg"), s.home.join("own.cfg")).unwrap();
    let e = enumerate(&s.opts()).unwrap();
    let pager = e.get_last("core.pager").unwrap();
    assert_eq!(pager.origin.trust, Trust::Untrusted);
    let f = e
        .files()
        .iter()
        .find(|f| f.origin.file == s.home.join("own.cfg"))
        .unwrap();
    assert!(f.is_link);
    assert_eq!(
        f.resolved.as_deref(),
        Some(s.repo.join("linked.cfg").as_path())
    );
    assert!(!e.trusted_values().contains_key("core.pager"));
}

#[test]
fn fifo_and_oversized_files_are_errors_not_hangs() {
    let s = Scratch::new();
    nix::unistd::mkfifo(&s.git.join("config"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(matches!(
        enumerate(&s.opts()),
        Err(ConfigError::NotAFile { .. })
    ));
    fs::remove_file(s.git.join("config")).unwrap();
    w(&s.git.join("config"), &"[a]\nb = c\n".repeat(100));
    let mut o = s.opts();
    o.limits.max_file_size = 100;
    assert!(matches!(enumerate(&o), Err(ConfigError::TooLarge { .. })));
    fs::create_dir_all(s.root.join("d")).unwrap();
    w(&s.git.join("config"), "[include]\n\tpath = ../../d\n");
    assert!(matches!(
        enumerate(&s.opts()),
        Err(ConfigError::NotAFile { .. })
    ));
}

/// git takes any byte but newline and NUL in a subsection: `[filter "ev\xffil"]` is read,
/// kept byte for byte (what a neutraliser names) and as lossy text (what is shown).
#[test]
fn non_utf8_driver_names_are_kept_byte_for_byte() {
    let s = Scratch::new();
    fs::write(
        s.git.join("config"),
        b"[filter \"ev\xffil\"]\n\tclean = x\n[filter \"ev\xfeil\"]\n\tclean = y\n",
    )
    .unwrap();
    let e = enumerate(&s.opts()).unwrap();
    let keys: Vec<Vec<u8>> = e.values().iter().map(|v| v.key_bytes().to_vec()).collect();
    assert_eq!(
        keys,
        [
            b"filter.ev\xffil.clean".to_vec(),
            b"filter.ev\xfeil.clean".to_vec()
        ]
    );
    assert_eq!(e.values()[0].key(), "filter.ev\u{fffd}il.clean");
    // Two names that read the same as text stay two names.
    let names = e.per_name_sections();
    assert!(names.contains(&("filter".into(), b"ev\xffil".as_slice().into())));
    assert!(names.contains(&("filter".into(), b"ev\xfeil".as_slice().into())));
    // The audit still sees a driver program there.
    assert_eq!(e.armed().len(), 2);
    // A non-UTF-8 value is data, kept as is.
    fs::write(s.git.join("config"), b"[user]\n\tname = \xff\n").unwrap();
    let e = enumerate(&s.opts()).unwrap();
    assert_eq!(
        e.values()[0].value.as_ref().map(|v| v.to_vec()),
        Some(b"\xff".to_vec())
    );
}

#[test]
fn git_prefix_from_exec_path() {
    assert_eq!(
        git_prefix_for(Path::new("/usr/lib/git-core")),
        Path::new("/usr")
    );
    assert_eq!(
        git_prefix_for(Path::new("/usr/local/libexec/git-core")),
        Path::new("/usr/local")
    );
    assert_eq!(git_prefix_for(Path::new("/odd")), Path::new("/usr"));
}

#[test]
fn global_files_follow_xdg() {
    let h = Path::new("/h");
    assert_eq!(
        global_files(Some(h), None),
        [h.join(".config/git/config"), h.join(".gitconfig")]
    );
    assert_eq!(
        global_files(Some(h), Some(Path::new("/x"))),
        [PathBuf::from("/x/git/config"), h.join(".gitconfig")]
    );
    assert_eq!(
        global_files(Some(h), Some(Path::new(""))),
        [h.join(".config/git/config"), h.join(".gitconfig")]
    );
}

/// The real gits on this machine.
/// The value dialect of the git at `g` (its version, probed).
pub(super) fn dialect_of(g: &Path) -> super::Dialect {
    super::Dialect::of(crate::env::GitProbe::probe(g).unwrap().version())
}

fn gits() -> Vec<PathBuf> {
    ["/usr/bin/git", "/usr/local/bin/git"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect()
}

/// Run git isolated: empty environment, temp HOME, no system config.
fn git(git: &Path, home: &Path, cwd: &Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(git)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        git.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `git config -l -z --show-origin --show-scope` as (scope, file, key, value).
fn git_listing(g: &Path, home: &Path, repo: &Path) -> Vec<(String, PathBuf, String, String)> {
    let out = git(
        g,
        home,
        repo,
        &["config", "-l", "-z", "--show-origin", "--show-scope"],
    );
    let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
    let mut v = Vec::new();
    for chunk in fields.chunks(3) {
        if chunk.len() < 3 {
            break;
        }
        let scope = String::from_utf8_lossy(chunk[0]).into_owned();
        let file = String::from_utf8_lossy(chunk[1]);
        let file = file.strip_prefix("file:").expect("origin is a file");
        let file = if Path::new(file).is_absolute() {
            PathBuf::from(file)
        } else {
            repo.join(file)
        };
        let kv = String::from_utf8_lossy(chunk[2]);
        let (k, val) = match kv.split_once('\n') {
            Some((k, val)) => (k.to_owned(), val.to_owned()),
            None => (kv.into_owned(), "true".to_owned()),
        };
        v.push((scope, read::normalize_lexically(&file), k, val));
    }
    v
}

#[test]
fn git_lists_a_subset_of_the_enumeration_with_the_same_values() {
    let gits = gits();
    assert!(!gits.is_empty(), "no git found on this machine");
    for g in gits {
        let s = Scratch::new();
        git(&g, &s.home, &s.root, &["init", "-q", "-b", "main", "repo"]);
        let mut local = fs::read_to_string(s.git.join("config")).unwrap();
        local.push_str(concat!(
            "[Sec.SuB]\n\tK = v\n",
            "[sec \"Sub \\\"q\\\" \\\\ x\"]\n",
            "\tk = \"a b\" ; comment\n",
            "\tm = a\\\n  b\n",
            "\tn = \"tab\\there\" # c\n",
            "\te =\n",
            "\timplicit\n",
            "\tq = x\"y z\"w\n",
            "\tsp =   lead and trail   \n",
            "[include]\n\tpath = ../inc.cfg\n",
            "[includeIf \"gitdir:/nowhere/\"]\n\tpath = ../never.cfg\n",
            "[includeIf \"onbranch:main\"]\n\tpath = ../onbranch.cfg\n",
            "[extensions]\n\tworktreeConfig = true\n",
            "[url \"ssh://x/\"]\n\tinsteadOf = https://y/\n",
            "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\trequired\n",
        ));
        w(&s.git.join("config"), &local);
        w(
            &s.repo.join("inc.cfg"),
            "[alias]\r\n\tst = status\r\n[Diff \"Txt\"]\r\n\ttextconv = cat\r\n",
        );
        w(&s.repo.join("never.cfg"), "[core]\n\tpager = never\n");
        w(&s.repo.join("onbranch.cfg"), "[core]\n\teditor = vi\n");
        w(
            &s.git.join("config.worktree"),
            "[core]\n\tsparseCheckout = false\n",
        );
        w(
            &s.home.join(".gitconfig"),
            "\u{feff}[user]\n\tname = Owner\n[include]\n\tpath = ~/more.cfg\n",
        );
        w(&s.home.join("more.cfg"), "[log]\n\tshowSignature = false\n");
        w(&s.home.join(".config/git/config"), "[color]\n\tui = auto\n");

        let e = enumerate(&s.opts()).unwrap();
        let ours: Vec<(String, PathBuf, String, String)> = e
            .values()
            .iter()
            .filter(|v| e.is_effective(v))
            .map(|v| {
                (
                    v.origin.scope.git_word().to_owned(),
                    read::normalize_lexically(&v.origin.file),
                    v.key(),
                    v.text().into_owned(),
                )
            })
            .collect();
        let theirs = git_listing(&g, &s.home, &s.repo);
        assert!(theirs.len() > 20, "{theirs:?}");
        // git's list is a subsequence of ours: same order, same files, same values.
        let mut it = ours.iter();
        for t in &theirs {
            assert!(
                it.any(|o| o == t),
                "{}: git lists {t:?}, which the enumeration lacks (or orders differently); ours: {ours:#?}",
                g.display()
            );
        }
        // The false condition is followed by us, not by git.
        assert!(ours.iter().any(|o| o.2 == "core.pager"));
        assert!(!theirs.iter().any(|o| o.2 == "core.pager"));
    }
}

#[test]
fn worktree_config_switch_agrees_with_git() {
    for g in gits() {
        for (how, on) in [("in the file", true), ("through an include", false)] {
            let s = Scratch::new();
            git(&g, &s.home, &s.root, &["init", "-q", "repo"]);
            let mut local = fs::read_to_string(s.git.join("config")).unwrap();
            if on {
                local.push_str("[extensions]\n\tworktreeConfig = true\n");
            } else {
                local.push_str("[include]\n\tpath = ext.cfg\n");
                w(
                    &s.git.join("ext.cfg"),
                    "[extensions]\n\tworktreeConfig = true\n",
                );
            }
            w(&s.git.join("config"), &local);
            w(&s.git.join("config.worktree"), "[x]\n\ty = 1\n");
            let e = enumerate(&s.opts()).unwrap();
            let theirs = git_listing(&g, &s.home, &s.repo);
            let git_reads = theirs.iter().any(|t| t.2 == "x.y");
            assert_eq!(git_reads, on, "{} {how}", g.display());
            assert_eq!(e.worktree_config_enabled(), on, "{} {how}", g.display());
            assert_eq!(e.get_last("x.y").is_some(), on);
            // Enumerated either way.
            assert!(e.values().iter().any(|v| v.is("x.y")));
        }
    }
}

#[test]
fn include_depth_limit_agrees_with_git() {
    for g in gits() {
        for n in [MAX_INCLUDE_DEPTH, MAX_INCLUDE_DEPTH + 1] {
            let s = Scratch::new();
            git(&g, &s.home, &s.root, &["init", "-q", "repo"]);
            let mut local = fs::read_to_string(s.git.join("config")).unwrap();
            local.push_str("[include]\n\tpath = ../i1.cfg\n");
            w(&s.git.join("config"), &local);
            for i in 1..=n {
                w(
                    &s.repo.join(format!("i{i}.cfg")),
                    &format!("[include]\n\tpath = i{}.cfg\n", i + 1),
                );
            }
            let git_ok = std::process::Command::new(&g)
                .args(["config", "-l"])
                .current_dir(&s.repo)
                .env_clear()
                .env("HOME", &s.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap()
                .status
                .success();
            assert_eq!(
                enumerate(&s.opts()).is_ok(),
                git_ok,
                "{} n={n}",
                g.display()
            );
            assert_eq!(git_ok, n == MAX_INCLUDE_DEPTH, "{} n={n}", g.display());
        }
    }
}

/// Syntax corner cases: wherever git accepts a file, the enumeration must accept it and read
/// exactly git's keys and values, in git's order (a parser that disagrees with git about a
/// value is a way to hide a program from the checks).
#[test]
fn parser_agrees_with_git_on_syntax_corners() {
    let cases = [
        "[core] bare = true\n",
        "[a]\n\tb-1 = x\n",
        "[a] ; c\n\tb = 1\n",
        "[a]\n\tb = x\\\n",
        "[a \"s p\tt\"]\n\tb = 1\n",
        "[a \"\"]\n\tb = 1\n",
        "[a]\n\t1b = x\n",
        "[a]\n\tb = \\x\n",
        "[a]\n\tb = \"x ; y\" # z\n",
        "[a]\n\tb = x \" y \"\n",
        "[a]\n\tb = \"unbalanced\n",
        "[a]\n\tb = a\\tb\\nc\\\\d\\\"e\n",
        "[a]\n\tb =   x   y   \n",
        "[A.B.C]\n\td = 1\n",
        "[a \"b.c\"]\n\td = 1\n",
        "[a \"b\"]\n\t[c]\n\td = 1\n",
        "[a]b=1\n",
        "[a]\n\tb\n\tb = \n\tb = 0\n",
        "[a]\n\tb = x\\\n\ty\n",
        "[a]\n\tb = \"x\\\ny\"\n",
        "[a]\n\tb=1;c\n",
        "[a]\n\tb=1#c\n",
        "[a \"x\\y\"]\n\tb = 1\n",
        "[a \"x\\\\y\"]\n\tb = 1\n",
        "[a-b]\n\tc = 1\n",
        "[a_b]\n\tc = 1\n",
        "[a.]\n\tc = 1\n",
        "\t[a]\n\t\tb = 1\n",
        "[a]\r\n\tb = 1\r\n",
        "[a]\n\tb = x\ty\n",
        "[a]\n\tb = \"x\ty\"\n",
        "[filter \"x\"]\n\tclean = \"sh -c 'touch /tmp/x'\" ; # c\n",
        "\u{feff}[a]\n\tb = bom\n",
        "[a]\n\tb = 1\n[a]\n\tc = 2\n[A]\n\tB = 3\n",
        "# only a comment\n",
        "",
        "[a]\n\tb = x\\ty\\\\\n",
        "[a \"q\\\"uote\"]\n\tb = 1\n",
        "[a]\n\tb = \"\"\n",
        "[a]\n\tb = x\"\"y\n",
    ];
    let mut cases: Vec<String> = cases.iter().map(|c| c.to_string()).collect();
    for extra in [
        "[a]\n\tb_c = 1\n",
        "[a]\n\tb = x\0y\n",
        "[a]\n\tb = x\\\r\n y\n",
        "[a]\n\tb = \"x\" \"y\"\n",
        "[a]#c\n\tb=1\n",
        "[a \"b\"] c = 1 ; d\n",
        "[a]\n\tb\t=\t1\n",
        "[ a ]\n\tb = 1\n",
        "[a \"b\"]c\n",
        "[a]\n\tb = 1\n\tb = 2\n[a]\n\tb = 3\n",
        "[a]\n\tb = ;\n",
        "[a]\n\tb = \"\\\"\"\n",
        "[include]\n\tpath\t=\t\n",
    ] {
        cases.push(extra.to_owned());
    }
    cases.push(format!("[a]\n\tlong = {}\n", "x".repeat(100_000)));
    cases.push(format!("[a \"{}\"]\n\tb = 1\n", "s".repeat(5_000)));
    let mut agreed = 0;
    let mut failures = Vec::new();
    for g in gits() {
        for (i, case) in cases.iter().enumerate() {
            let s = Scratch::new();
            let file = s.root.join(format!("c{i}.cfg"));
            fs::write(&file, case).unwrap();
            let out = std::process::Command::new(&g)
                .args(["config", "-f"])
                .arg(&file)
                .args(["-l", "-z"])
                .env_clear()
                .env("HOME", &s.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            let opts = Options {
                system: Some(file.clone()),
                dialect: dialect_of(&g),
                ..Options::default()
            };
            let ours = enumerate(&opts);
            let short: String = case.chars().take(80).collect();
            if !out.status.success() {
                // git refuses the file: so does the enumeration.
                assert!(
                    matches!(ours, Err(ConfigError::Parse { .. })),
                    "{}: git refuses case {i} {short:?}, we read it",
                    g.display()
                );
                continue;
            }
            let ours = ours.unwrap_or_else(|e| {
                panic!(
                    "{}: git reads case {i} {short:?}, we fail: {e}",
                    g.display()
                )
            });
            let theirs: Vec<(String, String)> = out
                .stdout
                .split(|&b| b == 0)
                .filter(|c| !c.is_empty())
                .map(|c| {
                    let c = String::from_utf8_lossy(c);
                    match c.split_once('\n') {
                        Some((k, v)) => (k.to_owned(), v.to_owned()),
                        None => (c.into_owned(), "true".to_owned()),
                    }
                })
                .collect();
            let mine: Vec<(String, String)> = ours
                .values()
                .iter()
                .map(|v| (v.key(), v.text().into_owned()))
                .collect();
            if mine != theirs {
                failures.push(format!(
                    "{}: case {i} {short:?}: ours {mine:?}, git {theirs:?}",
                    g.display()
                ));
                continue;
            }
            agreed += 1;
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(agreed > 60, "only {agreed} cases compared");
}

/// The claim safe-git builds on, with a positive control: a clean filter defined in a file
/// reached through a conditional include runs under plain git; neutralising every name in
/// `per_name_sections()` stops it.
#[test]
fn neutralising_enumerated_names_stops_a_planted_filter() {
    use crate::catalogue::GitVersion;
    use crate::env::{DefuseOptions, Defused};
    for g in gits() {
        let s = Scratch::new();
        git(&g, &s.home, &s.root, &["init", "-q", "-b", "main", "repo"]);
        let canary = s.root.join("canary");
        let mut local = fs::read_to_string(s.git.join("config")).unwrap();
        local.push_str("[includeIf \"onbranch:main\"]\n\tpath = ../tracked.cfg\n");
        w(&s.git.join("config"), &local);
        w(
            &s.repo.join("tracked.cfg"),
            &format!(
                "[filter \"evil\"]\n\tclean = \"touch {}; cat\"\n\trequired\n",
                canary.display()
            ),
        );
        w(&s.repo.join(".gitattributes"), "*.txt filter=evil\n");
        w(&s.repo.join("a.txt"), "one\n");
        git(&g, &s.home, &s.repo, &["add", "a.txt", ".gitattributes"]);
        git(&g, &s.home, &s.repo, &["commit", "-q", "-m", "c"]);
        let dirty = || {
            // Same size, new mtime: stat-dirty, so status must run the clean filter.
            std::thread::sleep(std::time::Duration::from_millis(1100));
            w(&s.repo.join("a.txt"), "two\n");
            let _ = fs::remove_file(&canary);
        };
        dirty();
        git(&g, &s.home, &s.repo, &["status", "--porcelain"]);
        assert!(
            canary.exists(),
            "{}: positive control: the filter did not run",
            g.display()
        );

        dirty();
        let e = enumerate(&s.opts()).unwrap();
        let version = GitVersion::parse(&String::from_utf8_lossy(&git(
            &g,
            &s.home,
            &s.repo,
            &["version"],
        )))
        .unwrap();
        let empty_system = s.root.join("empty-system-config");
        w(&empty_system, "");
        let mut d = Defused::new(DefuseOptions {
            system_config: Some(empty_system),
            read_only: true,
            ..DefuseOptions::new(version)
        });
        for (section, name) in e.per_name_sections() {
            d.neutralise_name(&section, &name).unwrap();
        }
        let inherited = [
            ("HOME", s.home.as_os_str()),
            ("PATH", std::ffi::OsStr::new("/usr/bin:/bin")),
        ]
        .map(|(k, v)| (std::ffi::OsString::from(k), v.to_owned()));
        let out = d
            .command(&g, inherited, ["status", "--porcelain"])
            .current_dir(&s.repo)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            g.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !canary.exists(),
            "{}: the filter ran under the defused git",
            g.display()
        );
    }
}

#[test]
fn from_a_linked_worktree_its_config_worktree_is_the_worktree_scope() {
    let s = Scratch::new();
    w(
        &s.git.join("config"),
        "[extensions]\n\tworktreeConfig = true\n[INCLUDE]\n\tPATH = upper.cfg\n",
    );
    w(&s.git.join("upper.cfg"), "[x]\n\tviaupper = 1\n");
    let wt_git = s.git.join("worktrees/wt1");
    w(
        &wt_git.join("config.worktree"),
        "[core]\n\thooksPath = mine\n",
    );
    w(
        &s.git.join("worktrees/wt2/config.worktree"),
        "[core]\n\thooksPath = theirs\n",
    );
    w(
        &s.git.join("config.worktree"),
        "[core]\n\thooksPath = main\n",
    );
    let mut o = Options::for_repository(Some(&s.root.join("wt1")), &wt_git, &s.git);
    o.linked_worktrees = true;
    let e = enumerate(&o).unwrap();
    assert!(
        e.get_last("x.viaupper").is_some(),
        "include keys are case-insensitive"
    );
    assert_eq!(e.get_last("core.hooksPath").unwrap().text(), "mine");
    let hp: Vec<(String, String)> = e
        .values()
        .iter()
        .filter(|v| v.is("core.hooksPath"))
        .map(|v| (format!("{:?}", v.origin.scope), v.text().into_owned()))
        .collect();
    // wt1 once (as this worktree's), then the main tree's and wt2's as other worktrees'.
    assert_eq!(hp.len(), 3, "{hp:?}");
    assert_eq!(hp[0], ("Worktree".to_string(), "mine".to_string()));
    assert!(hp[1].0.starts_with("OtherWorktree") && hp[1].1 == "main");
    assert!(hp[2].0.starts_with("OtherWorktree") && hp[2].1 == "theirs");
}

#[test]
fn trusted_values_that_still_run_the_agents_programs() {
    let s = Scratch::new();
    w(
        &s.home.join(".gitconfig"),
        &format!(
            "[core]\n\thooksPath = .githooks\n\tpager = less -R\n\tsshCommand = ./bin/ssh\n\
             [gpg]\n\tprogram = {}/tools/gpg\n[alias]\n\tx = !scripts/run.sh\n\tst = status\n\
             [remote \"o\"]\n\turl = https://example.invalid/r\n\
             [core]\n\tattributesFile = ~/.gitattributes\n",
            s.repo.display()
        ),
    );
    let e = enumerate(&s.opts()).unwrap();
    let keys: Vec<String> = e
        .trusted_reaching_untrusted()
        .iter()
        .map(|v| v.key())
        .collect();
    assert_eq!(
        keys,
        [
            "core.hookspath",
            "core.sshcommand",
            "gpg.program",
            "alias.x"
        ],
        "{keys:?}"
    );
}

/// `git config --list` in `cwd` with an isolated HOME: `(success, stdout)`.
fn git_list(g: &Path, home: &Path, cwd: &Path) -> (bool, String) {
    let out = std::process::Command::new(g)
        .args(["config", "--list"])
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// An error git makes too (a cycle, a bad line, a folder, a missing value) in a file git does
/// not read now is tolerated, not refused: git reads the repository fine (both gits), and it
/// would die before running anything should it ever read that file. The same error where git
/// reads the file is a refusal, as git fails too.
#[test]
fn errors_git_shares_refuse_only_where_git_reads_the_file() {
    /// (name, appended to the local config, other files in the git dir)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (
            "cycle behind includeIf",
            "[includeIf \"onbranch:nope\"]\n\tpath = config\n",
            &[],
        ),
        (
            "bad line behind includeIf",
            "[includeIf \"gitdir:/nowhere/\"]\n\tpath = broken.cfg\n",
            &[("broken.cfg", "[x]\n\ty = 1\n[broken\n")],
        ),
        (
            "folder behind an unknown condition",
            "[includeIf \"nosuch:x\"]\n\tpath = folder/\n",
            &[("folder/keep", "")],
        ),
        (
            "missing value behind includeIf",
            "[includeIf \"onbranch:nope\"]\n\tpath\n",
            &[],
        ),
        (
            "nested cycle behind includeIf",
            "[includeIf \"onbranch:nope\"]\n\tpath = a.cfg\n",
            &[
                ("a.cfg", "[include]\n\tpath = b.cfg\n"),
                ("b.cfg", "[include]\n\tpath = a.cfg\n"),
            ],
        ),
    ];
    for (name, local, files) in cases {
        let s = Scratch::new();
        for g in gits() {
            git(
                &g,
                &s.home,
                &s.root,
                &["init", "-q", s.repo.to_str().unwrap()],
            );
        }
        let base = fs::read_to_string(s.git.join("config")).unwrap();
        fs::write(s.git.join("config"), format!("{base}{local}")).unwrap();
        for (f, content) in *files {
            w(&s.git.join(f), content);
        }
        for g in gits() {
            let (ok, _) = git_list(&g, &s.home, &s.repo);
            assert!(ok, "{name}: {} does not read it", g.display());
        }
        let e = enumerate(&s.opts()).unwrap_or_else(|e| panic!("{name}: refused: {e}"));
        assert_eq!(e.tolerated().len(), 1, "{name}: {:?}", e.tolerated());
        assert!(e.tolerated()[0].error.git_fails_too());
        assert_eq!(e.tolerated()[0].why, "behind an includeIf", "{name}");
        // Unconditionally, git dies and the enumeration refuses.
        let plain = local.replacen("[includeIf \"", "[include]\n#", 1);
        let plain = plain.replacen("\"]\n", "\n", 1);
        fs::write(s.git.join("config"), format!("{base}{plain}")).unwrap();
        for g in gits() {
            let (ok, _) = git_list(&g, &s.home, &s.repo);
            assert!(!ok, "{name}: {} reads it unconditionally", g.display());
        }
        let err = enumerate(&s.opts()).unwrap_err();
        assert!(err.git_fails_too(), "{name}: {err}");
    }
}

#[test]
fn broken_worktree_config_counts_only_when_enabled() {
    let s = Scratch::new();
    w(&s.git.join("config"), "[core]\n\tbare = false\n");
    w(&s.git.join("config.worktree"), "[broken\n");
    let e = enumerate(&s.opts()).unwrap();
    assert_eq!(
        e.tolerated()[0].why,
        "config.worktree while extensions.worktreeConfig is off"
    );
    w(
        &s.git.join("config"),
        "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n",
    );
    let r = enumerate(&s.opts());
    assert!(
        matches!(r, Err(ConfigError::Parse { line: 1, .. })),
        "{:?}",
        r.map(|e| e.tolerated().len())
    );
}

/// What gitward cannot know is refused wherever it is, behind a condition too.
#[test]
fn what_cannot_be_read_is_refused_even_behind_a_condition() {
    let s = Scratch::new();
    w(
        &s.git.join("config"),
        "[includeIf \"onbranch:nope\"]\n\tpath = big.cfg\n",
    );
    let mut o = s.opts();
    o.limits.max_file_size = 10;
    w(&s.git.join("big.cfg"), "[a]\n\tb = 0123456789\n");
    assert!(matches!(enumerate(&o), Err(ConfigError::TooLarge { .. })));
    fs::remove_file(s.git.join("big.cfg")).unwrap();
    nix::unistd::mkfifo(&s.git.join("big.cfg"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let err = enumerate(&s.opts()).unwrap_err();
    assert!(
        matches!(err, ConfigError::NotAFile { kind: "a FIFO", .. }),
        "{err}"
    );
    assert!(!err.git_fails_too());
}

/// `include.path` (and every file read in git's place) through procfs names another file for
/// git than for gitward: refused, naming the file and the rule. Positive control: git reads
/// `/proc/self/cwd/x.cfg` from its own working directory (the work-tree top after setup),
/// which is not ours.
#[test]
fn include_paths_through_procfs_are_refused() {
    let g = gits();
    let s = Scratch::new();
    for g in &g {
        git(
            g,
            &s.home,
            &s.root,
            &["init", "-q", s.repo.to_str().unwrap()],
        );
    }
    let base = fs::read_to_string(s.git.join("config")).unwrap();
    w(&s.repo.join("x.cfg"), "[gitward]\n\tmarker = top\n");
    w(&s.repo.join("sub/keep"), "");
    let targets = [
        "/proc/self/cwd/x.cfg".to_owned(),
        "/proc/thread-self/cwd/x.cfg".to_owned(),
        "/dev/fd/0".to_owned(),
        "/dev/stdin".to_owned(),
        format!("/proc/{}/cwd/x.cfg", std::process::id()),
        "link.cfg".to_owned(),
        "dirlink/x.cfg".to_owned(),
    ];
    std::os::unix::fs::symlink("/proc/self/cwd/x.cfg", s.git.join("link.cfg")).unwrap();
    std::os::unix::fs::symlink("/proc/self/cwd", s.git.join("dirlink")).unwrap();
    for t in &targets {
        for kind in ["[include]", "[includeIf \"onbranch:nope\"]"] {
            fs::write(
                s.git.join("config"),
                format!("{base}{kind}\n\tpath = {t}\n"),
            )
            .unwrap();
            let err = enumerate(&s.opts()).unwrap_err();
            assert!(
                matches!(err, ConfigError::ProcessDependent { .. }),
                "{t}: {err}"
            );
            let msg = err.to_string();
            assert!(
                msg.contains("procfs") && msg.contains(".git/config: line ") && !msg.contains('\n'),
                "{msg}"
            );
        }
    }
    // The positive control: git, run in a subfolder, reads the top's x.cfg.
    fs::write(
        s.git.join("config"),
        format!("{base}[include]\n\tpath = /proc/self/cwd/x.cfg\n"),
    )
    .unwrap();
    for g in &g {
        let (ok, list) = git_list(g, &s.home, &s.repo.join("sub"));
        assert!(
            ok && list.contains("gitward.marker=top"),
            "{}: {list}",
            g.display()
        );
    }
    // /dev/null is the same empty file for everyone.
    fs::write(
        s.git.join("config"),
        format!("{base}[include]\n\tpath = /dev/null\n"),
    )
    .unwrap();
    enumerate(&s.opts()).unwrap();
    assert_eq!(process_dependent(Path::new("/usr/bin/../bin")), None);
}

/// `process_dependent` states a folder's file system only where the device changes: a link to
/// `/` followed by `proc/…`, a relative link climbing into `/proc`, and `..` back into it are
/// still caught; an ordinary path through the same link is not.
#[test]
fn procfs_is_caught_after_links_and_parent_steps() {
    let t = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/", t.path().join("root")).unwrap();
    assert!(process_dependent(&t.path().join("root/proc/self/cwd/x")).is_some());
    let up = "../".repeat(t.path().components().count() + 2);
    std::os::unix::fs::symlink(format!("{up}proc"), t.path().join("up")).unwrap();
    assert!(process_dependent(&t.path().join("up/self/cwd")).is_some());
    assert!(process_dependent(Path::new("/usr/../proc/self")).is_some());
    assert!(process_dependent(Path::new("/usr/./../proc")).is_some());
    assert_eq!(process_dependent(&t.path().join("root/usr/bin")), None);
    assert_eq!(process_dependent(&t.path().join("missing/proc")), None);
}

/// Files below the common dir are opened below one vetted handle (`read::Anchor`: `openat2`
/// without following any link); whatever is not a plain file reached through plain folders
/// takes the slow path. Each case gives what the slow path alone gives: a link to a
/// readable file is read and marked as a link with its resolved name, a link (as the file or
/// as a folder on the way) into procfs is refused, a FIFO is not a file, a missing file is
/// missing under the name the lenient resolution gives.
#[test]
fn files_below_the_common_dir_read_as_the_slow_path_reads_them() {
    let s = Scratch::new();
    w(&s.git.join("config"), "[core]\n\tbare = false\n");
    w(
        &s.root.join("elsewhere/wt.cfg"),
        "[gitward]\n\tmarker = linked\n",
    );
    let entry = |id: &str| s.git.join("worktrees").join(id);
    // A plain entry, one whose config.worktree is a link to a file, one whose admin dir
    // is reached through a link on the way (`modules/` of the entry), one missing.
    w(
        &entry("plain").join("config.worktree"),
        "[gitward]\n\tmarker = plain\n",
    );
    fs::create_dir_all(entry("linked")).unwrap();
    std::os::unix::fs::symlink(
        s.root.join("elsewhere/wt.cfg"),
        entry("linked").join("config.worktree"),
    )
    .unwrap();
    fs::create_dir_all(entry("missing")).unwrap();
    let mut o = s.opts();
    o.linked_worktrees = true;
    let en = enumerate(&o).unwrap();
    let ks = keys(&en);
    assert!(ks.contains(&"gitward.marker=plain".to_owned()), "{ks:?}");
    assert!(ks.contains(&"gitward.marker=linked".to_owned()), "{ks:?}");
    let file = |id: &str| {
        en.files()
            .iter()
            .find(|f| f.origin.file == entry(id).join("config.worktree"))
            .unwrap_or_else(|| panic!("{id}: not listed"))
    };
    assert!(!file("plain").is_link && file("plain").resolved.is_none());
    assert!(file("linked").is_link);
    assert_eq!(
        file("linked").resolved.as_deref(),
        Some(s.root.join("elsewhere/wt.cfg").as_path())
    );
    // Another worktree's missing file is not recorded (as on the slow path).
    let missing = entry("missing").join("config.worktree");
    assert!(en.files().iter().all(|f| f.origin.file != missing));
    // A link into procfs as the file, then as a folder on the way: refused.
    w(&s.repo.join("x.cfg"), "[gitward]\n\tmarker = top\n");
    fs::remove_file(entry("linked").join("config.worktree")).unwrap();
    std::os::unix::fs::symlink(
        "/proc/self/cwd/x.cfg",
        entry("linked").join("config.worktree"),
    )
    .unwrap();
    let err = enumerate(&o).unwrap_err();
    assert!(matches!(err, ConfigError::ProcessDependent { .. }), "{err}");
    fs::remove_file(entry("linked").join("config.worktree")).unwrap();
    fs::remove_dir(entry("linked")).unwrap();
    std::os::unix::fs::symlink("/proc/self/cwd", entry("linked")).unwrap();
    // `worktrees/linked` is a link: not an entry git lists (`list_dirs` takes folders only);
    // a submodule config reached through a link on the way is read as git reads it.
    let err = {
        let mut o = s.opts();
        o.submodules = Submodules::Dirs(vec![entry("linked")]);
        enumerate(&o).unwrap_err()
    };
    assert!(matches!(err, ConfigError::ProcessDependent { .. }), "{err}");
    // A FIFO where a config file is: not a file (and the read does not block).
    fs::remove_file(entry("linked")).unwrap();
    fs::create_dir_all(entry("linked")).unwrap();
    nix::unistd::mkfifo(
        &entry("linked").join("config.worktree"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let err = enumerate(&o).unwrap_err();
    assert!(matches!(err, ConfigError::NotAFile { .. }), "{err}");
}

/// `last_value_in_file` answers as git reads one file: the section counts, the last value
/// wins, quotes and escapes are git's, a comment is not a value.
#[test]
fn last_value_in_file_reads_as_git_does() {
    use super::last_value_in_file as last;
    let text = b"[foo]\n\tworktree = /not/this\n[core]\n\tworktree = \"../a b\" ; c\n\
                 [core]\nworktree=/last # comment\n[other]\nworktree = /neither\n";
    assert_eq!(last(text, "core.worktree").as_deref(), Some("/last"));
    assert_eq!(
        last(b"[core]\n\tWorkTree = \"x\\\"y\"\n", "core.worktree").as_deref(),
        Some("x\"y")
    );
    assert_eq!(last(b"[foo]\nworktree = /x\n", "core.worktree"), None);
    assert_eq!(last(b"[core]\nworktree\n", "core.worktree"), None);
    // git stops at a bad line: what came before it stands.
    assert_eq!(
        last(
            b"[core]\nworktree = /a\n[bad\nworktree = /b\n",
            "core.worktree"
        )
        .as_deref(),
        Some("/a")
    );
}
