//! Layout tests on real repositories made by both gits. Each refusal has a positive control:
//! plain git really does the dangerous thing on this fixture.

use super::*;
use std::os::unix::fs::symlink;
use std::process::{Command, Output};

const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];

/// The gits installed on this machine; a missing one is reported as skipped.
fn gits() -> Vec<&'static str> {
    GITS.iter()
        .copied()
        .filter(|g| {
            let there = Path::new(g).exists();
            if !there {
                eprintln!("skipped: {g} is not installed");
            }
            there
        })
        .collect()
}

/// An isolated scratch area: empty HOME, no system or global config, fixed identity.
struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(tmp.path().join("home")).unwrap();
        std::fs::write(tmp.path().join("home/gitconfig"), "").unwrap();
        Env { tmp }
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.tmp.path()).unwrap()
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn run(&self, git: &str, dir: &Path, args: &[&str]) -> Output {
        let home = self.root().join("home");
        Command::new(git)
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
            .env("GIT_CEILING_DIRECTORIES", self.root())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .expect("run git")
    }

    fn ok(&self, git: &str, dir: &Path, args: &[&str]) -> String {
        let out = self.run(git, dir, args);
        assert!(
            out.status.success(),
            "{git} {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `git init` + one commit at `rel`.
    fn repo(&self, git: &str, rel: &str) -> PathBuf {
        let dir = self.p(rel);
        std::fs::create_dir_all(&dir).unwrap();
        self.ok(git, &dir, &["init", "-q"]);
        std::fs::write(dir.join("file"), rel).unwrap();
        self.ok(git, &dir, &["add", "file"]);
        self.ok(git, &dir, &["commit", "-q", "-m", "init"]);
        dir
    }

    fn ceilings(&self) -> Vec<PathBuf> {
        vec![self.root()]
    }

    fn discover(&self, start: &Path) -> Result<Layout, LayoutError> {
        discover(start, &self.ceilings())
    }
}

// ---- validate_head ---------------------------------------------------------------------------

#[test]
fn validate_head_follows_validate_headref() {
    let oid = "0123456789abcdef0123456789abcdef01234567";
    assert_eq!(
        validate_head(b"ref: refs/heads/main\n"),
        Some(Head::Symref {
            target: "refs/heads/main".into()
        })
    );
    assert!(validate_head(b"ref:refs/heads/x").is_some());
    assert!(validate_head(b"ref: \t refs/x").is_some());
    assert!(validate_head(format!("{oid}\n").as_bytes()).is_some());
    // git parses only the first 40 hex digits; trailing bytes do not matter.
    assert!(validate_head(format!("{oid}garbage").as_bytes()).is_some());
    assert!(validate_head(&b"ABCDEF0123456789abcdef0123456789abcdef01"[..]).is_some());
    assert_eq!(validate_head(b"ref: heads/main"), None);
    assert_eq!(validate_head(b"garbage"), None);
    assert_eq!(validate_head(b""), None);
    assert_eq!(validate_head(&oid.as_bytes()[..39]), None);
    // A NUL ends the C string git looks at.
    assert_eq!(validate_head(b"ref: \0refs/heads/x"), None);
    // Only the first 255 bytes are read.
    let mut long = vec![b' '; 300];
    long.splice(0..4, b"ref:".iter().copied());
    long.extend_from_slice(b"refs/heads/x");
    assert_eq!(validate_head(&long), None);
}

#[test]
fn trim_and_implicit_bare() {
    assert_eq!(trim_crlf(b"a\r\n\n"), b"a");
    assert!(is_implicit_bare_repo(Path::new("/x/.git")));
    assert!(is_implicit_bare_repo(Path::new("/x/.git/worktrees/a")));
    assert!(is_implicit_bare_repo(Path::new("/x/.git/modules/a")));
    assert!(!is_implicit_bare_repo(Path::new("/x/repo.git")));
    assert!(!is_implicit_bare_repo(Path::new("/x/y.git/worktrees/a")));
}

#[test]
fn resolve_never_follows_links_even_after_a_missing_component() {
    let env = Env::new();
    let root = env.root();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/file"), "x").unwrap();
    symlink("/etc", root.join("a/ln")).unwrap();
    let sys = Sys::new().unwrap();
    assert_eq!(
        sys.resolve(&root.join("a/./b/../b"), false).unwrap(),
        root.join("a/b")
    );
    assert_eq!(
        sys.resolve(&root.join("a/missing/x"), true).unwrap(),
        root.join("a/missing/x")
    );
    assert!(sys.resolve(&root.join("a/missing"), false).is_err());
    // `..` back out of a missing part: the link after it is still checked.
    assert!(matches!(
        sys.resolve(&root.join("a/missing/../ln/passwd"), true),
        Err(LayoutError::Link { .. })
    ));
    assert!(matches!(
        sys.resolve(&root.join("a/ln"), true),
        Err(LayoutError::Link { .. })
    ));
    assert!(sys.resolve(&root.join("a/file/.."), true).is_err());
    assert_eq!(
        sys.resolve(Path::new("/../.."), false).unwrap(),
        PathBuf::from("/")
    );
}

// ---- honest layouts, both gits ---------------------------------------------------------------

#[test]
fn main_repository_from_work_tree_and_from_inside_git_dir() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        let l = env.discover(&repo.join("a/b")).unwrap();
        assert_eq!(l.kind, Kind::Main, "{git}");
        assert_eq!(l.work_tree.as_deref(), Some(repo.as_path()));
        assert_eq!(l.git_dir, repo.join(".git"));
        assert_eq!(l.common_dir, repo.join(".git"));
        assert_eq!(l.found_by, FoundBy::DotGitDir);
        assert!(l.is_implicit_bare_repo());
        // git agrees on the git dir.
        let g = env.ok(git, &repo.join("a/b"), &["rev-parse", "--absolute-git-dir"]);
        assert_eq!(g.trim(), repo.join(".git").to_str().unwrap());
        // From inside the git dir: git treats it as a bare-like git dir without work tree.
        let l = env.discover(&repo.join(".git/refs/heads")).unwrap();
        assert_eq!(l.git_dir, repo.join(".git"));
        assert_eq!(l.work_tree, None);
        assert_eq!(l.found_by, FoundBy::Bare);
        assert!(is_git_directory(&repo.join(".git")));
        assert!(!is_git_directory(&repo));
    }
}

#[test]
fn linked_worktree_absolute_both_gits() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        env.ok(
            git,
            &repo,
            &["worktree", "add", "-q", "../wt", "-b", "feature"],
        );
        let wt = env.p("wt");
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        let l = env.discover(&wt.join("sub")).unwrap();
        assert_eq!(l.kind, Kind::Linked { id: "wt".into() }, "{git}: {l:?}");
        assert_eq!(l.work_tree.as_deref(), Some(wt.as_path()));
        assert_eq!(l.git_dir, repo.join(".git/worktrees/wt"));
        assert_eq!(l.common_dir, repo.join(".git"));
        assert_eq!(
            l.found_by,
            FoundBy::Gitfile {
                gitfile: wt.join(".git")
            }
        );
        let entries = worktree_entries(&repo.join(".git")).unwrap();
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!(e.id, "wt");
        assert_eq!(e.worktree_path.as_deref(), Some(wt.as_path()));
        assert_eq!(e.problems, vec![], "{git}: {:?}", e.problems);
        assert_eq!(e.prune, None);
        let json = serde_json::to_value(e).unwrap();
        assert_eq!(json["commondir"], "../..\n");
        assert!(e.belongs_to(&env.root()));
        assert!(!e.belongs_to(&wt));
        assert!(!e.belongs_to(&repo));
        // Explicit --git-dir on the admin dir.
        let l = open_git_dir(&repo.join(".git/worktrees/wt"), None).unwrap();
        assert_eq!(l.kind, Kind::Linked { id: "wt".into() });
        assert_eq!(l.work_tree.as_deref(), Some(wt.as_path()));
        // Explicit main git dir.
        let l = open_git_dir(&repo.join(".git"), None).unwrap();
        assert_eq!(l.kind, Kind::Main);
        assert_eq!(l.work_tree.as_deref(), Some(repo.as_path()));
    }
}

/// Rewrites a linked worktree's two link files in git 2.48's relative form.
fn make_relative(repo: &Path, id: &str, wt: &Path) {
    std::fs::write(
        repo.join(format!(".git/worktrees/{id}/gitdir")),
        "../../../../wt/.git\n",
    )
    .unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: ../repo/.git/worktrees/{id}\n"),
    )
    .unwrap();
}

#[test]
fn relative_worktree_links_resolve_like_git_2_48_and_are_flagged_for_older_git() {
    let gits = gits();
    for git in &gits {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        env.ok(git, &repo, &["worktree", "add", "-q", "../wt"]);
        let wt = env.p("wt");
        make_relative(&repo, "wt", &wt);
        let l = env.discover(&wt).unwrap();
        assert_eq!(l.kind, Kind::Linked { id: "wt".into() }, "{git}");
        let entries = worktree_entries(&repo.join(".git")).unwrap();
        let e = &entries[0];
        assert_eq!(e.worktree_path.as_deref(), Some(wt.as_path()));
        assert_eq!(
            e.problems,
            vec![Problem::RelativeGitdir {
                understood_since: RELATIVE_WORKTREES_SINCE_FOR_TESTS
            }]
        );
        assert_eq!(e.prune, None);
        let older = crate::catalogue::GitVersion::new(2, 47, 3);
        assert_eq!(
            e.prune_verdict(older),
            Some("gitdir file points to non-existent location")
        );
        assert_eq!(e.prune_verdict(RELATIVE_WORKTREES_SINCE_FOR_TESTS), None);
        // Positive control: this git (< 2.48) misreads the relative gitdir and would prune it.
        let out = env.ok(git, &repo, &["worktree", "prune", "-n", "-v"]);
        let err = String::from_utf8_lossy(
            &env.run(git, &repo, &["worktree", "prune", "-n", "-v"])
                .stderr,
        )
        .into_owned();
        assert!(
            (out + &err)
                .contains("Removing worktrees/wt: gitdir file points to non-existent location"),
            "{git} did not want to prune the relative entry: control failed"
        );
    }
}

const RELATIVE_WORKTREES_SINCE_FOR_TESTS: crate::catalogue::GitVersion =
    crate::catalogue::RELATIVE_WORKTREES_SINCE;

#[test]
fn bare_repository_and_its_subfolders() {
    for git in gits() {
        let env = Env::new();
        let bare = env.p("x.git");
        env.ok(git, &env.root(), &["init", "-q", "--bare", "x.git"]);
        let l = env.discover(&bare).unwrap();
        assert_eq!(l.kind, Kind::Bare, "{git}");
        assert_eq!(l.work_tree, None);
        assert_eq!(l.found_by, FoundBy::Bare);
        assert!(!l.is_implicit_bare_repo());
        let l = env.discover(&bare.join("refs/heads")).unwrap();
        assert_eq!(l.git_dir, bare);
        let l = open_git_dir(&bare, None).unwrap();
        assert_eq!((l.kind, l.work_tree), (Kind::Bare, None));
    }
}

/// A superproject `top` with submodule `mid`, which has its own submodule `leaf`.
fn nested_submodules(env: &Env, git: &str) -> (PathBuf, PathBuf, PathBuf) {
    let leaf = env.repo(git, "src/leaf");
    let mid = env.repo(git, "src/mid");
    let allow = ["-c", "protocol.file.allow=always"];
    let add = |dir: &Path, url: &Path, name: &str| {
        let mut args = allow.to_vec();
        args.extend(["submodule", "add", "-q", url.to_str().unwrap(), name]);
        env.ok(git, dir, &args);
        env.ok(git, dir, &["commit", "-q", "-m", name]);
    };
    add(&mid, &leaf, "leaf");
    let top = env.repo(git, "top");
    add(&top, &mid, "mid");
    let mut args = allow.to_vec();
    args.extend(["submodule", "update", "-q", "--init", "--recursive"]);
    env.ok(git, &top, &args);
    (top.clone(), top.join("mid"), top.join("mid/leaf"))
}

#[test]
fn submodules_at_any_depth() {
    for git in gits() {
        let env = Env::new();
        let (top, mid, leaf) = nested_submodules(&env, git);
        let l = env.discover(&mid).unwrap();
        assert_eq!(
            l.kind,
            Kind::Submodule {
                superproject_common_dir: top.join(".git"),
                name: "mid".into()
            },
            "{git}"
        );
        assert_eq!(l.git_dir, top.join(".git/modules/mid"));
        assert_eq!(l.work_tree.as_deref(), Some(mid.as_path()));
        let l = env.discover(&leaf).unwrap();
        assert_eq!(
            l.git_dir,
            top.join(".git/modules/mid/modules/leaf"),
            "{git}"
        );
        assert_eq!(
            l.kind,
            Kind::Submodule {
                superproject_common_dir: top.join(".git/modules/mid"),
                name: "leaf".into()
            }
        );
        let dirs = submodule_git_dirs(&top.join(".git")).unwrap();
        let names: Vec<_> = dirs
            .iter()
            .map(|d| (d.name.as_str(), d.git_dir.clone()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("mid", top.join(".git/modules/mid")),
                ("leaf", top.join(".git/modules/mid/modules/leaf")),
            ]
        );
        assert!(dirs
            .iter()
            .all(|d| matches!(d.status, ModuleStatus::GitDir { .. })));
        // Explicit --git-dir on a submodule git dir.
        let l = open_git_dir(&top.join(".git/modules/mid"), None).unwrap();
        assert!(matches!(l.kind, Kind::Submodule { .. }), "{l:?}");
    }
}

#[test]
fn submodule_git_dirs_report_links_and_names_with_slashes() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    let other = env.repo(git, "other");
    let modules = repo.join(".git/modules");
    std::fs::create_dir_all(modules.join("lib")).unwrap();
    // A submodule named "lib/x": modules/lib/x is the git dir.
    env.ok(
        git,
        &env.root(),
        &[
            "init",
            "-q",
            "--bare",
            modules.join("lib/x").to_str().unwrap(),
        ],
    );
    symlink(other.join(".git"), modules.join("evil")).unwrap();
    std::fs::create_dir(modules.join("empty")).unwrap();
    let dirs = submodule_git_dirs(&repo.join(".git")).unwrap();
    let got: Vec<_> = dirs
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                match &d.status {
                    ModuleStatus::GitDir { .. } => "git dir",
                    ModuleStatus::Link { .. } => "link",
                    ModuleStatus::NotGitDir { .. } => "not a git dir",
                },
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("empty".to_string(), "not a git dir"),
            ("evil".to_string(), "link"),
            ("lib/x".to_string(), "git dir"),
        ]
    );
}

// ---- refusals, each with a positive control ---------------------------------------------------

#[test]
fn garbled_head_refused_where_git_climbs_into_the_parent_repository() {
    for git in gits() {
        let env = Env::new();
        let outer = env.repo(git, "outer");
        let inner = env.repo(git, "outer/inner");
        std::fs::write(inner.join(".git/HEAD"), "garbage\n").unwrap();
        // Control: git silently uses the outer repository.
        let out = env.run(git, &inner, &["rev-parse", "--absolute-git-dir"]);
        assert!(out.status.success(), "{git}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            outer.join(".git").to_str().unwrap(),
            "{git}: control failed: git did not climb into the parent repository"
        );
        match env.discover(&inner) {
            Err(LayoutError::DotGitInvalid { path, reason }) => {
                assert_eq!(path, inner.join(".git"));
                assert!(reason.contains("HEAD"), "{reason}");
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
        // Missing objects/ has the same effect.
        std::fs::write(inner.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::rename(inner.join(".git/objects"), inner.join(".git/objects.away")).unwrap();
        let out = env.ok(git, &inner, &["rev-parse", "--absolute-git-dir"]);
        assert_eq!(out.trim(), outer.join(".git").to_str().unwrap());
        assert!(matches!(
            env.discover(&inner),
            Err(LayoutError::DotGitInvalid { .. })
        ));
    }
}

#[test]
fn planted_commondir_in_main_git_dir_refused() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        let other = env.repo(git, "other");
        env.ok(git, &other, &["config", "gitward.marker", "foreign"]);
        std::fs::write(
            repo.join(".git/commondir"),
            format!("{}\n", other.join(".git").display()),
        )
        .unwrap();
        // Control: git reads the other folder's config.
        let cfg = env.ok(git, &repo, &["config", "-l"]);
        assert!(
            cfg.contains("gitward.marker=foreign"),
            "{git}: control failed: {cfg}"
        );
        match env.discover(&repo) {
            Err(LayoutError::CommondirInMainGitDir { path, points_to }) => {
                assert_eq!(path, repo.join(".git/commondir"));
                assert_eq!(points_to, other.join(".git"));
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
        assert!(matches!(
            open_git_dir(&repo.join(".git"), None),
            Err(LayoutError::CommondirInMainGitDir { .. })
        ));
    }
}

#[test]
fn dot_git_symlink_refused() {
    for git in gits() {
        let env = Env::new();
        let other = env.repo(git, "other");
        let wt = env.p("wt");
        std::fs::create_dir(&wt).unwrap();
        symlink(other.join(".git"), wt.join(".git")).unwrap();
        let out = env.ok(git, &wt, &["rev-parse", "--absolute-git-dir"]);
        assert_eq!(
            out.trim(),
            other.join(".git").to_str().unwrap(),
            "{git}: control"
        );
        match env.discover(&wt) {
            Err(LayoutError::DotGitLink { path, target }) => {
                assert_eq!(path, wt.join(".git"));
                assert_eq!(target, other.join(".git"));
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
    }
}

#[test]
fn gitfile_to_an_arbitrary_git_dir_refused() {
    for git in gits() {
        let env = Env::new();
        let other = env.repo(git, "other");
        env.ok(git, &other, &["config", "gitward.marker", "foreign"]);
        let wt = env.p("wt");
        std::fs::create_dir(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", other.join(".git").display()),
        )
        .unwrap();
        let cfg = env.ok(git, &wt, &["config", "-l"]);
        assert!(cfg.contains("gitward.marker=foreign"), "{git}: control");
        match env.discover(&wt) {
            Err(LayoutError::GitfileUnvouched { path, target, .. }) => {
                assert_eq!(path, wt.join(".git"));
                assert_eq!(target, other.join(".git"));
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
    }
}

#[test]
fn gitfile_to_another_worktrees_admin_dir_refused() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        env.ok(git, &repo, &["worktree", "add", "-q", "../wt"]);
        let impostor = env.p("impostor");
        std::fs::create_dir(&impostor).unwrap();
        let admin = repo.join(".git/worktrees/wt");
        std::fs::write(
            impostor.join(".git"),
            format!("gitdir: {}\n", admin.display()),
        )
        .unwrap();
        // Control: git uses the admin dir silently.
        let out = env.ok(git, &impostor, &["rev-parse", "--absolute-git-dir"]);
        assert_eq!(out.trim(), admin.to_str().unwrap(), "{git}: control");
        match env.discover(&impostor) {
            Err(LayoutError::GitfileUnvouched { reason, .. }) => {
                assert!(reason.contains("not back to this .git file"), "{reason}")
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
        // The honest worktree is still fine.
        assert!(env.discover(&env.p("wt")).is_ok());
    }
}

#[test]
fn linked_commondir_pointing_elsewhere_refused() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        let other = env.repo(git, "other");
        env.ok(git, &other, &["config", "gitward.marker", "foreign"]);
        env.ok(git, &repo, &["worktree", "add", "-q", "../wt"]);
        let wt = env.p("wt");
        std::fs::write(
            repo.join(".git/worktrees/wt/commondir"),
            format!("{}\n", other.join(".git").display()),
        )
        .unwrap();
        let cfg = env.ok(git, &wt, &["config", "-l"]);
        assert!(cfg.contains("gitward.marker=foreign"), "{git}: control");
        match env.discover(&wt) {
            Err(LayoutError::CommondirMismatch {
                points_to,
                expected,
                ..
            }) => {
                assert_eq!(points_to, other.join(".git"));
                assert_eq!(expected, repo.join(".git"));
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
        let e = &worktree_entries(&repo.join(".git")).unwrap()[0];
        assert!(e.problems.contains(&Problem::CommondirElsewhere {
            resolved: other.join(".git")
        }));
        assert!(e
            .problems
            .iter()
            .any(|p| matches!(p, Problem::CommondirUnexpected { .. })));
    }
}

#[test]
fn invalid_gitfiles_refused_where_git_dies() {
    for git in gits() {
        let env = Env::new();
        let wt = env.p("wt");
        std::fs::create_dir(&wt).unwrap();
        for (content, needle) in [
            (&b"gitdir:/nowhere\n"[..], "gitdir: "),
            (&b"gitdir: \n"[..], "no path"),
            (&b"gitdir: /nowhere/at/all\n"[..], "not a git dir"),
        ] {
            std::fs::write(wt.join(".git"), content).unwrap();
            let out = env.run(git, &wt, &["rev-parse", "--git-dir"]);
            assert!(
                !out.status.success(),
                "{git}: control: git accepted {content:?}"
            );
            match env.discover(&wt) {
                Err(LayoutError::InvalidGitfile { reason, .. }) => {
                    assert!(reason.contains(needle), "{reason}")
                }
                other => panic!("{git}: {content:?} not refused: {other:?}"),
            }
        }
        let big = vec![b'x'; (GITFILE_MAX + 1) as usize];
        std::fs::write(wt.join(".git"), big).unwrap();
        assert!(!env
            .run(git, &wt, &["rev-parse", "--git-dir"])
            .status
            .success());
        assert!(matches!(
            env.discover(&wt),
            Err(LayoutError::InvalidGitfile { .. })
        ));
    }
}

#[test]
fn link_on_a_gitfile_target_path_refused() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    env.ok(git, &repo, &["worktree", "add", "-q", "../wt"]);
    let wt = env.p("wt");
    symlink(&repo, env.p("alias")).unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", env.p("alias/.git/worktrees/wt").display()),
    )
    .unwrap();
    // Control: git follows the link and works.
    env.ok(git, &wt, &["status", "--short"]);
    match env.discover(&wt) {
        Err(LayoutError::Link { path }) => assert_eq!(path, env.p("alias")),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn dot_git_fifo_refused_where_git_climbs() {
    let git = gits()[0];
    let env = Env::new();
    let outer = env.repo(git, "outer");
    let wt = outer.join("wt");
    std::fs::create_dir(&wt).unwrap();
    nix::unistd::mkfifo(
        &wt.join(".git"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    // Control: git skips the fifo and uses the outer repository.
    let out = env.ok(git, &wt, &["rev-parse", "--absolute-git-dir"]);
    assert_eq!(out.trim(), outer.join(".git").to_str().unwrap());
    assert!(matches!(
        env.discover(&wt),
        Err(LayoutError::DotGitOther { kind: "fifo", .. })
    ));
}

#[test]
fn unreadable_or_oversized_layout_files_fail_closed() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    // A commondir git would read whole but we will not: refused, not skipped.
    std::fs::write(
        repo.join(".git/commondir"),
        vec![b'x'; (SMALL_FILE_MAX + 1) as usize],
    )
    .unwrap();
    assert!(matches!(
        env.discover(&repo),
        Err(LayoutError::InvalidCommondir { .. })
    ));
    // An empty commondir makes git die; we refuse too.
    std::fs::write(repo.join(".git/commondir"), "").unwrap();
    assert!(
        !env.run(git, &repo, &["status"]).status.success(),
        "control"
    );
    assert!(matches!(
        env.discover(&repo),
        Err(LayoutError::InvalidCommondir { .. })
    ));
    std::fs::remove_file(repo.join(".git/commondir")).unwrap();
    // `objects` swapped for a link: git would follow it; we refuse instead of guessing.
    std::fs::rename(repo.join(".git/objects"), env.p("objects")).unwrap();
    symlink(env.p("objects"), repo.join(".git/objects")).unwrap();
    env.ok(git, &repo, &["status", "--short"]);
    match env.discover(&repo) {
        Err(e @ LayoutError::Link { .. }) => assert!(e.is_link()),
        other => panic!("{other:?}"),
    }
    // A HEAD that is a folder is an invalid HEAD (git: read fails).
    std::fs::remove_file(repo.join(".git/objects")).unwrap();
    std::fs::rename(env.p("objects"), repo.join(".git/objects")).unwrap();
    std::fs::remove_file(repo.join(".git/HEAD")).unwrap();
    std::fs::create_dir(repo.join(".git/HEAD")).unwrap();
    assert!(matches!(
        env.discover(&repo),
        Err(LayoutError::DotGitInvalid { .. })
    ));
}

#[test]
fn explicit_git_dir_refusals() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    let other = env.repo(git, "other");
    symlink(other.join(".git"), env.p("gitlink")).unwrap();
    assert!(matches!(
        open_git_dir(&env.p("gitlink"), None),
        Err(LayoutError::DotGitLink { .. })
    ));
    std::fs::write(
        env.p("gf"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .unwrap();
    assert!(matches!(
        open_git_dir(&env.p("gf"), None),
        Err(LayoutError::GitfileUnvouched { .. })
    ));
    assert!(matches!(
        open_git_dir(&repo, None),
        Err(LayoutError::NotAGitDir { .. })
    ));
    let l = open_git_dir(&repo.join(".git"), Some(&env.p("home"))).unwrap();
    assert_eq!(l.work_tree, Some(env.p("home")));
    assert_eq!(l.found_by, FoundBy::Explicit);
}

#[test]
fn ceilings_follow_gits_rules() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        let sub = repo.join("sub");
        std::fs::create_dir(&sub).unwrap();
        // A ceiling that is a proper ancestor of the start: folders at and above it are not
        // examined.
        match discover(&sub, std::slice::from_ref(&repo)) {
            Err(LayoutError::NoRepository {
                reason, stopped_at, ..
            }) => {
                assert_eq!(reason, StopReason::Ceiling);
                assert_eq!(stopped_at, repo);
            }
            other => panic!("{other:?}"),
        }
        let out = Command::new(git)
            .args(["rev-parse", "--git-dir"])
            .current_dir(&sub)
            .env("GIT_CEILING_DIRECTORIES", &repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", env.p("home"))
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "{git}: control: git found a repo past the ceiling"
        );
        // The start folder itself being a ceiling does not stop the search.
        let l = discover(&repo, std::slice::from_ref(&repo)).unwrap();
        assert_eq!(l.git_dir, repo.join(".git"));
        // Without ceilings the walk ends somewhere above the scratch area, never in it.
        match discover(&env.p("home"), &env.ceilings()) {
            Err(LayoutError::NoRepository { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn mount_point_stops_the_walk() {
    // /dev/shm is a tmpfs: a folder there whose parent chain crosses to another device.
    let Ok(tmp) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skipped: /dev/shm not available");
        return;
    };
    let start = std::fs::canonicalize(tmp.path()).unwrap();
    let dev = |p: &Path| std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(p).unwrap());
    if dev(&start) == dev(Path::new("/dev")) {
        eprintln!("skipped: /dev/shm is not a separate file system");
        return;
    }
    match discover(&start, &[]) {
        Err(LayoutError::NoRepository { reason, .. }) => assert_eq!(reason, StopReason::MountPoint),
        other => panic!("{other:?}"),
    }
}

// ---- worktree entries against git's own verdicts -----------------------------------------------

/// git's `worktree list --porcelain` prunable reasons, by worktree path.
fn git_prunable(env: &Env, git: &str, repo: &Path) -> Vec<(String, Option<String>)> {
    let out = env.ok(git, repo, &["worktree", "list", "--porcelain"]);
    let mut v = Vec::new();
    for block in out.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut path = String::new();
        let mut prunable = None;
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = p.to_string();
            }
            if let Some(r) = line.strip_prefix("prunable ") {
                prunable = Some(r.to_string());
            }
        }
        v.push((path, prunable));
    }
    v
}

#[test]
fn worktree_entry_problems_and_prune_verdicts_match_git() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        for name in ["gone", "locked", "moved", "planted", "badhead"] {
            env.ok(
                git,
                &repo,
                &["worktree", "add", "-q", "--detach", &format!("../{name}")],
            );
        }
        let admin = |id: &str| repo.join(".git/worktrees").join(id);
        // gone: the worktree folder was deleted.
        std::fs::remove_dir_all(env.p("gone")).unwrap();
        // locked: deleted too, but locked.
        env.ok(
            git,
            &repo,
            &["worktree", "lock", "--reason", "kept", "../locked"],
        );
        std::fs::remove_dir_all(env.p("locked")).unwrap();
        // moved: gitdir points at a folder that does not exist.
        std::fs::write(admin("moved").join("gitdir"), "/nonexistent/moved/.git\n").unwrap();
        // planted: hooks and config in the admin dir, an unknown file.
        std::fs::create_dir(admin("planted").join("hooks")).unwrap();
        std::fs::write(admin("planted").join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::write(admin("planted").join("config"), "[core]\n\tfsmonitor = x\n").unwrap();
        std::fs::write(admin("planted").join("evil"), "x").unwrap();
        std::fs::create_dir_all(admin("planted").join("refs/heads")).unwrap();
        // badhead: invalid HEAD.
        std::fs::write(admin("badhead").join("HEAD"), "nonsense\n").unwrap();

        let entries = worktree_entries(&repo.join(".git")).unwrap();
        let by_id = |id: &str| entries.iter().find(|e| e.id == id).unwrap();
        // Our prune verdicts equal git's (worktree list --porcelain, expire = TIME_MAX ~ now).
        let git_view = git_prunable(&env, git, &repo);
        for e in &entries {
            let wt = e
                .worktree_path
                .as_ref()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let theirs = git_view
                .iter()
                .find(|(p, _)| *p == wt)
                .map(|(_, r)| r.clone());
            assert_eq!(
                Some(e.prune.clone()),
                theirs,
                "{git}: worktrees/{}: ours {:?}, git's listing {git_view:?}",
                e.id,
                e.prune
            );
        }
        assert_eq!(
            by_id("gone").prune.as_deref(),
            Some("gitdir file points to non-existent location")
        );
        assert!(by_id("gone")
            .problems
            .iter()
            .any(|p| matches!(p, Problem::BacklinkMissing { .. })));
        assert_eq!(by_id("locked").prune, None);
        assert_eq!(by_id("locked").locked.as_deref(), Some(&b"kept\n"[..]));
        assert!(by_id("moved").prune.is_some());
        let planted = &by_id("planted").problems;
        for (name, ignored) in [
            ("config", true),
            ("evil", false),
            ("hooks", true),
            ("refs/heads", true),
        ] {
            assert!(
                planted.contains(&Problem::UnexpectedEntry {
                    name: name.into(),
                    ignored_by_git: ignored
                }),
                "{git}: {name} not reported: {planted:?}"
            );
        }
        assert_eq!(planted.len(), 4, "{planted:?}");
        assert!(by_id("badhead")
            .problems
            .iter()
            .any(|p| matches!(p, Problem::HeadInvalid { .. })));
    }
}

#[test]
fn worktree_entry_missing_gitdir_and_backlink_mismatch() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        env.ok(git, &repo, &["worktree", "add", "-q", "../a"]);
        env.ok(git, &repo, &["worktree", "add", "-q", "../b"]);
        env.ok(git, &repo, &["worktree", "add", "-q", "../c"]);
        let admin = |id: &str| repo.join(".git/worktrees").join(id);
        std::fs::remove_file(admin("a").join("gitdir")).unwrap();
        // b's .git file points at c's admin dir.
        std::fs::write(
            env.p("b/.git"),
            format!("gitdir: {}\n", admin("c").display()),
        )
        .unwrap();
        let entries = worktree_entries(&repo.join(".git")).unwrap();
        let a = entries.iter().find(|e| e.id == "a").unwrap();
        assert!(a.problems.contains(&Problem::GitdirMissing));
        assert_eq!(a.prune.as_deref(), Some("gitdir file does not exist"));
        // Control: git does not list the entry without gitdir.
        let list = env.ok(git, &repo, &["worktree", "list", "--porcelain"]);
        assert!(
            !list.contains(&format!("worktree {}\n", env.p("a").display())),
            "{list}"
        );
        let b = entries.iter().find(|e| e.id == "b").unwrap();
        assert_eq!(
            b.problems,
            vec![Problem::BacklinkMismatch {
                dot_git: env.p("b/.git"),
                points_to: admin("c")
            }],
            "{git}"
        );
        // Control: git's validate_worktree refuses to remove it for the same reason.
        let out = env.run(git, &repo, &["worktree", "remove", "../b"]);
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("does not point back"),
            "{git}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn worktrees_folder_link_refused_and_entry_link_reported() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    let other = env.p("elsewhere");
    std::fs::create_dir_all(other.join("x")).unwrap();
    symlink(other.join("x"), repo.join(".git/worktrees")).unwrap();
    assert!(matches!(
        worktree_entries(&repo.join(".git")),
        Err(LayoutError::Link { .. })
    ));
    std::fs::remove_file(repo.join(".git/worktrees")).unwrap();
    std::fs::create_dir(repo.join(".git/worktrees")).unwrap();
    symlink(&other, repo.join(".git/worktrees/ln")).unwrap();
    let e = worktree_entries(&repo.join(".git")).unwrap();
    assert!(matches!(e[0].problems[0], Problem::Link { .. }));
}

// ---- nested repositories -------------------------------------------------------------------

#[test]
fn nested_repositories_are_all_reported() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    let other = env.repo(git, "other");
    env.repo(git, "repo/vendor/inner");
    std::fs::create_dir_all(repo.join("a/gf")).unwrap();
    std::fs::write(repo.join("a/gf/.git"), "gitdir: /elsewhere\n").unwrap();
    std::fs::create_dir_all(repo.join("a/ln")).unwrap();
    symlink(other.join(".git"), repo.join("a/ln/.git")).unwrap();
    env.ok(git, &repo, &["init", "-q", "--bare", "deep/bare.git"]);
    std::fs::create_dir_all(repo.join("cfg")).unwrap();
    std::fs::write(repo.join("cfg/config"), "[core]\n\tfsmonitor = evil\n").unwrap();
    // A link to a repository elsewhere is not followed.
    symlink(&other, repo.join("linked-dir")).unwrap();
    let r = nested_repositories(&repo, &NestedLimits::default()).unwrap();
    assert!(r.complete, "{:?}", r.incomplete);
    let got: Vec<_> = r
        .findings
        .iter()
        .map(|f| {
            (
                f.path.strip_prefix(&repo).unwrap().to_path_buf(),
                f.kind.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                PathBuf::from("a/gf/.git"),
                NestedKind::Gitfile {
                    target: Some("/elsewhere".into())
                }
            ),
            (
                PathBuf::from("a/ln/.git"),
                NestedKind::GitLink {
                    target: other.join(".git")
                }
            ),
            (PathBuf::from("cfg"), NestedKind::CoreConfig),
            (PathBuf::from("deep/bare.git"), NestedKind::BareShaped),
            (
                PathBuf::from("vendor/inner/.git"),
                NestedKind::GitDir { valid: true }
            ),
        ]
    );
    // Control: git run inside the planted bare repository uses it.
    let out = env.ok(
        git,
        &repo.join("deep/bare.git"),
        &["rev-parse", "--absolute-git-dir"],
    );
    assert_eq!(out.trim(), repo.join("deep/bare.git").to_str().unwrap());
    // Past a bound the report is incomplete, never clean.
    let r = nested_repositories(
        &repo,
        &NestedLimits {
            max_entries: 3,
            ..NestedLimits::default()
        },
    )
    .unwrap();
    assert!(!r.complete);
    let r = nested_repositories(
        &repo,
        &NestedLimits {
            max_depth: 1,
            ..NestedLimits::default()
        },
    )
    .unwrap();
    assert!(!r.complete && !r.incomplete.is_empty());
}

#[test]
fn worktrees_of_a_bare_repository_and_submodules_of_a_linked_worktree() {
    for git in gits() {
        let env = Env::new();
        let src = env.repo(git, "src");
        env.ok(
            git,
            &env.root(),
            &["clone", "-q", "--bare", src.to_str().unwrap(), "b.git"],
        );
        let bare = env.p("b.git");
        env.ok(
            git,
            &bare,
            &["worktree", "add", "-q", "../b-worktrees/s1/wt", "-b", "s1"],
        );
        let wt = env.p("b-worktrees/s1/wt");
        let l = env.discover(&wt).unwrap();
        assert_eq!(l.kind, Kind::Linked { id: "wt".into() }, "{git}");
        assert_eq!(l.common_dir, bare);
        let e = worktree_entries(&bare).unwrap();
        assert_eq!(e[0].problems, vec![], "{git}");
        assert!(e[0].belongs_to(&env.p("b-worktrees/s1")));
        assert!(!e[0].belongs_to(&env.p("b-worktrees/s2")));

        // A linked worktree of a superproject keeps its submodules' git dirs in
        // worktrees/<id>/modules/.
        let (top, _, _) = nested_submodules(&env, git);
        env.ok(git, &top, &["worktree", "add", "-q", "../topwt"]);
        let topwt = env.p("topwt");
        env.ok(
            git,
            &topwt,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "update",
                "-q",
                "--init",
            ],
        );
        let l = env.discover(&topwt.join("mid")).unwrap();
        assert_eq!(
            l.git_dir,
            top.join(".git/worktrees/topwt/modules/mid"),
            "{git}"
        );
        assert_eq!(
            l.kind,
            Kind::Submodule {
                superproject_common_dir: top.join(".git"),
                name: "mid".into()
            }
        );
        let dirs = submodule_git_dirs(&top.join(".git")).unwrap();
        assert!(dirs
            .iter()
            .any(|d| d.git_dir == top.join(".git/worktrees/topwt/modules/mid")));
    }
}

#[test]
fn callers_start_path_may_contain_links_but_unreadable_layout_fails_closed() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    std::fs::create_dir(repo.join("sub")).unwrap();
    // The caller's own path is resolved once (like git's getcwd).
    symlink(repo.join("sub"), env.p("alias")).unwrap();
    let l = env.discover(&env.p("alias")).unwrap();
    assert_eq!(l.work_tree.as_deref(), Some(repo.as_path()));
    // A gitfile naming a path the kernel cannot even look up: an error, never "no repository".
    let wt = env.p("wt");
    std::fs::create_dir(&wt).unwrap();
    let long = "x".repeat(300);
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}/{long}\n", env.root().display()),
    )
    .unwrap();
    assert!(
        !env.run(git, &wt, &["status"]).status.success(),
        "control: git accepted it"
    );
    match env.discover(&wt) {
        Err(LayoutError::Unreadable { path, .. }) => assert!(path.ends_with(&long)),
        other => panic!("{other:?}"),
    }
}

/// Differential test: our prune verdict for every entry state against git's own
/// `git worktree prune -n -v --expire=now` on both gits.
#[test]
fn prune_verdicts_equal_gits_own_dry_run() {
    for git in gits() {
        let env = Env::new();
        let repo = env.repo(git, "repo");
        let version = crate::catalogue::GitVersion::parse(&env.ok(git, &repo, &["version"]))
            .expect("git version");
        let ids = [
            "ok",
            "gone",
            "lockedgone",
            "moved",
            "emptygd",
            "nlgd",
            "wsgd",
            "nogd",
            "dirgd",
            "rel",
            "noslash",
        ];
        for id in ids {
            env.ok(
                git,
                &repo,
                &["worktree", "add", "-q", "--detach", &format!("../{id}")],
            );
        }
        let admin = |id: &str| repo.join(".git/worktrees").join(id);
        std::fs::remove_dir_all(env.p("gone")).unwrap();
        env.ok(git, &repo, &["worktree", "lock", "../lockedgone"]);
        std::fs::remove_dir_all(env.p("lockedgone")).unwrap();
        std::fs::write(admin("moved").join("gitdir"), "/nonexistent/moved/.git\n").unwrap();
        std::fs::write(admin("emptygd").join("gitdir"), "").unwrap();
        std::fs::write(admin("nlgd").join("gitdir"), "\r\n").unwrap();
        std::fs::write(admin("wsgd").join("gitdir"), "   \n").unwrap();
        std::fs::remove_file(admin("nogd").join("gitdir")).unwrap();
        std::fs::remove_file(admin("dirgd").join("gitdir")).unwrap();
        std::fs::create_dir(admin("dirgd").join("gitdir")).unwrap();
        std::fs::write(admin("rel").join("gitdir"), "../../../../rel/.git\n").unwrap();
        std::fs::write(
            admin("noslash").join("gitdir"),
            format!("{}\n", env.p("noslash").display()),
        )
        .unwrap();
        std::fs::write(repo.join(".git/worktrees/notdir"), "x").unwrap();

        let out = env.run(
            git,
            &repo,
            &["worktree", "prune", "-n", "-v", "--expire=now"],
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let theirs: std::collections::BTreeMap<String, String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("Removing worktrees/"))
            .filter_map(|l| l.split_once(": "))
            .map(|(id, r)| (id.to_string(), r.to_string()))
            .collect();
        let entries = worktree_entries(&repo.join(".git")).unwrap();
        assert_eq!(entries.len(), ids.len() + 1);
        for e in &entries {
            assert_eq!(
                e.prune_verdict(version),
                theirs.get(&e.id).map(String::as_str),
                "{git}: worktrees/{}: git said {text}",
                e.id
            );
        }
        // The states that must be pruned are, and the others are not (guards the oracle).
        for id in [
            "gone", "moved", "emptygd", "nlgd", "wsgd", "nogd", "dirgd", "rel", "notdir",
        ] {
            assert!(theirs.contains_key(id), "{git}: git kept {id}: {text}");
        }
        for id in ["ok", "lockedgone", "noslash"] {
            assert!(!theirs.contains_key(id), "{git}: git pruned {id}");
        }
    }
}

#[test]
fn embedded_bare_repository_refused_where_git_uses_it() {
    for git in gits() {
        let env = Env::new();
        let outer = env.repo(git, "outer");
        env.ok(git, &outer, &["init", "-q", "--bare", "vendor/evil.git"]);
        let evil = outer.join("vendor/evil.git");
        env.ok(git, &evil, &["config", "gitward.marker", "embedded"]);
        std::fs::create_dir_all(evil.join("refs/heads/deep")).unwrap();
        // Control: git run inside it uses the embedded bare repository and its config.
        let cfg = env.ok(git, &evil.join("refs/heads/deep"), &["config", "-l"]);
        assert!(
            cfg.contains("gitward.marker=embedded"),
            "{git}: control: {cfg}"
        );
        match env.discover(&evil.join("refs/heads/deep")) {
            Err(LayoutError::EmbeddedBare { path, enclosing }) => {
                assert_eq!(path, evil);
                assert_eq!(enclosing, outer.join(".git"));
            }
            other => panic!("{git}: not refused: {other:?}"),
        }
        // The caller may opt in, or name it explicitly (like git's GIT_DIR).
        let opts = DiscoverOptions {
            ceilings: env.ceilings(),
            allow_embedded_bare: true,
            ..DiscoverOptions::default()
        };
        assert_eq!(discover_with(&evil, &opts).unwrap().kind, Kind::Bare);
        assert_eq!(open_git_dir(&evil, None).unwrap().kind, Kind::Bare);
        // git's own exemptions are not "embedded": a main git dir entered from inside.
        let l = env.discover(&outer.join(".git/refs")).unwrap();
        assert_eq!(l.git_dir, outer.join(".git"));
    }
}

/// Two entries whose `gitdir` names the same worktree: each names the other (and only the
/// other), in listing order; an entry with its own path has no such problem.
#[test]
fn duplicate_worktree_paths_name_each_other() {
    let git = gits()[0];
    let env = Env::new();
    let repo = env.repo(git, "repo");
    for name in ["a", "b", "c"] {
        env.ok(
            git,
            &repo,
            &["worktree", "add", "-q", "--detach", &format!("../{name}")],
        );
    }
    // b's entry now claims a's worktree (an agent could write this file).
    let a_git = env.p("a").join(".git");
    std::fs::write(
        repo.join(".git/worktrees/b/gitdir"),
        format!("{}\n", a_git.display()),
    )
    .unwrap();
    let entries = worktree_entries(&repo.join(".git")).unwrap();
    let dup = |id: &str| -> Vec<Problem> {
        entries
            .iter()
            .find(|e| e.id == id)
            .unwrap()
            .problems
            .iter()
            .filter(|p| matches!(p, Problem::DuplicateWorktreePath { .. }))
            .cloned()
            .collect()
    };
    assert_eq!(
        dup("a"),
        vec![Problem::DuplicateWorktreePath {
            other_id: "b".into()
        }]
    );
    assert_eq!(
        dup("b"),
        vec![Problem::DuplicateWorktreePath {
            other_id: "a".into()
        }]
    );
    assert_eq!(dup("c"), vec![]);
}

#[test]
fn resolve_last_hands_out_the_lstat_it_took_of_the_last_component() {
    let t = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(t.path()).unwrap();
    std::fs::create_dir_all(base.join("d/e")).unwrap();
    std::fs::write(base.join("d/f"), "x").unwrap();
    let sys = Sys::new().unwrap();
    let (p, last) = sys.resolve_last(&base.join("d/f"), true).unwrap();
    assert_eq!(p, base.join("d/f"));
    assert!(last.unwrap().unwrap().is_file());
    // The same lstat a separate stat gives.
    assert_eq!(
        sys.stat(&base.join("d/f")).unwrap().unwrap().ino,
        sys.resolve_last(&base.join("d/f"), true)
            .unwrap()
            .1
            .unwrap()
            .unwrap()
            .ino
    );
    let (_, last) = sys.resolve_last(&base.join("d/missing"), true).unwrap();
    assert!(matches!(last, Some(None)));
    let (p, last) = sys.resolve_last(&base.join("gone/deeper/x"), true).unwrap();
    assert_eq!(p, base.join("gone/deeper/x"));
    assert!(matches!(last, Some(None)), "below a missing folder");
    // Ending in `..`: no lstat of the result taken.
    let (p, last) = sys.resolve_last(&base.join("d/e/.."), true).unwrap();
    assert_eq!(p, base.join("d"));
    assert!(last.is_none());
    std::os::unix::fs::symlink(base.join("d"), base.join("l")).unwrap();
    assert!(matches!(
        sys.resolve_last(&base.join("l/f"), true),
        Err(LayoutError::Link { .. })
    ));
    // A link as the last component is refused too; a file in a folder's place is an error;
    // a missing folder on the way is an error unless forgiving.
    assert!(matches!(
        sys.resolve_last(&base.join("l"), true),
        Err(LayoutError::Link { .. })
    ));
    assert!(matches!(
        sys.resolve_last(&base.join("d/f/x"), true),
        Err(LayoutError::Unreadable {
            source: FsError::NotDir { .. },
            ..
        })
    ));
    assert!(matches!(
        sys.resolve_last(&base.join("d/f/.."), true),
        Err(LayoutError::Unreadable {
            source: FsError::NotDir { .. },
            ..
        })
    ));
    assert!(matches!(
        sys.resolve_last(&base.join("gone/x"), false),
        Err(LayoutError::Unreadable {
            source: FsError::NotFound { .. },
            ..
        })
    ));
    assert_eq!(
        sys.resolve(&base.join("d/e/../f"), false).unwrap(),
        base.join("d/f")
    );
}

/// The entries' `logs/` and `refs/` listings from the walk record: the same as read, every
/// change the agent can make to them seen (times put back), a link refused as when read.
#[test]
fn entries_logs_and_refs_listings_from_the_walk_record_match_a_read_and_changes_are_seen() {
    use crate::layout::walk::WalkCache;
    let t = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(t.path()).unwrap();
    let common = top.join("repo/.git");
    let e = common.join("worktrees/w1");
    std::fs::create_dir_all(e.join("logs")).unwrap();
    std::fs::create_dir_all(e.join("refs")).unwrap();
    std::fs::write(e.join("logs/HEAD"), "").unwrap();
    std::fs::write(e.join("gitdir"), format!("{}/wt/.git\n", top.display())).unwrap();
    std::fs::write(e.join("commondir"), "../..\n").unwrap();
    std::fs::write(e.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let fs = nix::sys::statfs::statfs(&e).unwrap().filesystem_type().0;
    if !crate::layout::walk_cache::TRUSTED_FS
        .iter()
        .any(|(t, _)| *t == fs)
    {
        let why = format!("the temporary folder's file system ({fs:#x}) is not trusted");
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("SKIPPED: {why}");
        return;
    }
    let listings = |v: &[WorktreeEntry]| -> String {
        format!(
            "{:?}",
            v.iter()
                .map(|e| (&e.id, &e.listings, &e.problems))
                .collect::<Vec<_>>()
        )
    };
    let reload = |c: &WalkCache| {
        let p = state.path().join("s.walk");
        std::fs::write(&p, c.to_bytes()).unwrap();
        WalkCache::load(&p)
    };
    let put_back = |dir: &Path, m: &std::fs::Metadata| {
        std::fs::File::open(dir)
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_modified(m.modified().unwrap())
                    .set_accessed(m.accessed().unwrap()),
            )
            .unwrap();
    };
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let plain = listings(&worktree_entries(&common).unwrap());
    let mut first = WalkCache::empty();
    assert_eq!(
        listings(&worktree_entries_recorded(&common, &mut first).unwrap()),
        plain
    );
    assert_eq!(first.stats.listed, 2, "{first:?}");
    // The next read: both listings from the record (positive control for what follows).
    let mut second = reload(&first);
    assert_eq!(
        listings(&worktree_entries_recorded(&common, &mut second).unwrap()),
        plain
    );
    assert_eq!(
        (second.stats.listed, second.stats.reused),
        (0, 2),
        "{second:?}"
    );
    assert!(!second.changed());

    // A FIFO planted in `logs/` and a file in `refs/`, each folder's times put back.
    let m = std::fs::metadata(e.join("logs")).unwrap();
    nix::unistd::mkfifo(
        &e.join("logs/ORIG_HEAD"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    put_back(&e.join("logs"), &m);
    let m = std::fs::metadata(e.join("refs")).unwrap();
    std::fs::write(e.join("refs/planted"), "x").unwrap();
    put_back(&e.join("refs"), &m);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let plain = listings(&worktree_entries(&common).unwrap());
    let mut third = reload(&second);
    let got = worktree_entries_recorded(&common, &mut third).unwrap();
    assert_eq!(listings(&got), plain);
    let logs = &got[0].listings.iter().find(|(r, _)| r == "logs").unwrap().1;
    assert!(
        logs.iter()
            .any(|(n, k)| n == "ORIG_HEAD" && *k == crate::fsx::EntryKind::Fifo),
        "{logs:?}"
    );
    assert!(plain.contains("planted"), "{plain}");
    assert_eq!(
        (third.stats.listed, third.stats.reused),
        (2, 0),
        "{third:?}"
    );

    // `logs` swapped for a link: the same error (or result) as a read without the record.
    let admin = crate::fsx::Root::open(&e).unwrap();
    std::fs::remove_file(e.join("logs/ORIG_HEAD")).unwrap();
    std::fs::remove_file(e.join("logs/HEAD")).unwrap();
    std::fs::remove_dir(e.join("logs")).unwrap();
    symlink(top.join("repo"), e.join("logs")).unwrap();
    let mut fourth = reload(&third);
    let read = admin.list_kinds("logs").map_err(|e| e.to_string());
    let recorded = admin
        .list_kinds_recorded(std::ffi::OsStr::new("logs"), &mut fourth)
        .map_err(|e| e.to_string());
    assert!(read.is_err(), "{read:?}");
    assert_eq!(recorded, read);
}
