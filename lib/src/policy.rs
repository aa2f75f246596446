//! The policy file: one TOML file per agent session, written by the orchestrator (or the
//! person running the agent), read by every gitward binary.
//!
//! Trust: the policy is trusted input, so it must live outside every root the sandbox lets
//! the agent write; [`Policy::load`] refuses a policy file inside one. Every error names the
//! file, the key and the rule in one line (see [`PolicyError`]). A commented example is in
//! `docs/policy.example.toml`, and `docs/policy.md` documents each key.

/// Where [`crate::path::resolve`] used to live; integrity/ still calls it by this name.
pub use crate::path::resolve;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A policy error: `<file>: <key>: <rule>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {key}: {rule}", file.display())]
pub struct PolicyError {
    pub file: PathBuf,
    /// The key at fault (`worktree_roots[1]`, `session`, or `-` for the file as a whole).
    pub key: String,
    pub rule: String,
}

/// Docker access for the agent's commands (agent-shell).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Docker {
    /// Let the agent's commands reach a Docker daemon. Off by default.
    #[serde(default)]
    pub enabled: bool,
}

/// May the agent's commands make Unix sockets (`unix_sockets`, top level)? `deny` (the
/// default) runs the sandbox under a seccomp filter that makes `socket(AF_UNIX)` fail, so no
/// pathname socket (the owner's tmux, ssh ControlMaster and agent, git credential-cache) is
/// reachable wherever it lies; `allow` drops the filter. `[docker] enabled` needs sockets: it
/// implies `allow`, and with an explicit `deny` the policy is refused.
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UnixSocketsRule {
    #[default]
    Deny,
    Allow,
}

/// How the agent's git (git-shim) runs inside the sandbox. See `docs/policy.md` for why each
/// default is what it is.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Shim {
    /// Let the repository's hooks run inside the sandbox (the agent's commits then run the
    /// project's pre-commit checks). Off by default: `core.hooksPath=/dev/null` is passed.
    #[serde(default)]
    pub hooks: bool,
    /// Transports the agent's git may use (`GIT_ALLOW_PROTOCOL`, colon-separated).
    #[serde(default = "default_protocols")]
    pub allow_protocols: String,
    /// Let the agent give sequencer commands the options whose values the owner's
    /// `--continue` would run or use outside the sandbox (`rebase --exec`, `--strategy`,
    /// `-X`, `-S<key>`, …; `catalogue::SEQUENCER_OPTIONS`). Off by default; wt-check `check`
    /// sets such state aside at turn end either way.
    #[serde(default)]
    pub allow_sequencer_options: bool,
}

fn default_protocols() -> String {
    "https:ssh:file".to_owned()
}

impl Default for Shim {
    fn default() -> Self {
        Shim {
            hooks: false,
            allow_protocols: default_protocols(),
            allow_sequencer_options: false,
        }
    }
}

/// The file as written (before defaults and validation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    session: String,
    repo: PathBuf,
    worktree_dir: Option<PathBuf>,
    #[serde(default)]
    worktree_roots: Vec<PathBuf>,
    #[serde(default)]
    writable_roots: Vec<PathBuf>,
    real_git: Option<PathBuf>,
    audit_log: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    #[serde(default)]
    allow_transient_config: bool,
    #[serde(default)]
    allow_unresolved_programs: bool,
    #[serde(default)]
    docker: Docker,
    unix_sockets: Option<UnixSocketsRule>,
    #[serde(default)]
    landlock: crate::plan::landlock::Policy,
    #[serde(default)]
    settings: toml::Table,
    #[serde(default)]
    shim: Shim,
}

/// A loaded, validated policy. Paths are absolute and resolved (links followed once, here,
/// by the trusted loader).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct Policy {
    /// The file it came from.
    pub file: PathBuf,
    /// Session name: `[A-Za-z0-9._-]{1,64}`, not `.` or `..`. Stable across resumes.
    pub session: String,
    /// The repository's main work tree.
    pub repo: PathBuf,
    /// The session's own worktree folder (default `<repo>-worktrees/<session>`).
    pub worktree_dir: PathBuf,
    /// Extra folders where the session may add worktrees.
    pub worktree_roots: Vec<PathBuf>,
    /// Every folder the sandbox lets the agent write (the repo, the worktree folder and the
    /// roots are always included).
    pub writable_roots: Vec<PathBuf>,
    /// The real git (else: the first `git` on PATH that is not gitward).
    pub real_git: Option<PathBuf>,
    /// Where events are appended (one JSON object per line).
    pub audit_log: Option<PathBuf>,
    /// gitward's own folder for this session: held writes, probe cache.
    pub state_dir: PathBuf,
    /// Let the agent pass program-running keys with `-c`/`--config-env` for one call.
    pub allow_transient_config: bool,
    /// Let the sandbox plan be made although a program value of the owner's config runs a
    /// program built at run time from work-tree content (`sh $(cat list)`): off by default,
    /// the plan is refused (docs/sandbox-plan.md, "unresolved programs").
    #[serde(default)]
    pub allow_unresolved_programs: bool,
    pub docker: Docker,
    /// `unix_sockets`: `allow` when the file says so or `[docker] enabled` (Docker needs a
    /// Unix socket), else `deny`.
    #[serde(default)]
    pub unix_sockets: UnixSocketsRule,
    /// `landlock`: whether the sandbox applies the special-file rule (no FIFO or device made
    /// outside its private tmpfs trees; docs/sandbox-plan.md): `required` (the default: a
    /// kernel without Landlock ABI 2 refuses the sandbox), `optional` (runs without it there,
    /// saying so), `off`.
    #[serde(default)]
    pub landlock: crate::plan::landlock::Policy,
    /// The `[settings]` table, interpreted by the settings rules (presets, extra rules).
    pub settings: toml::Table,
    /// The `[shim]` table: how the agent's git runs inside the sandbox.
    pub shim: Shim,
}

impl Policy {
    /// Read, parse and validate a policy file. `home` is the owner's home folder (for the
    /// forbidden-root checks and `~` expansion); normally `$HOME`.
    pub fn load(file: &Path, home: &Path) -> Result<Policy, PolicyError> {
        let err = |key: &str, rule: String| PolicyError {
            file: file.to_path_buf(),
            key: key.into(),
            rule,
        };
        let text = std::fs::read_to_string(file)
            .map_err(|e| err("-", format!("cannot read the policy file: {e}")))?;
        Self::parse(file, &text, home)
    }

    /// Parse and validate policy text that came from `file`.
    pub fn parse(file: &Path, text: &str, home: &Path) -> Result<Policy, PolicyError> {
        let err = |key: &str, rule: String| PolicyError {
            file: file.to_path_buf(),
            key: key.into(),
            rule,
        };
        let raw: RawPolicy = toml::from_str(text).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            let key = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}")
                })
                .unwrap_or_else(|| "-".into());
            err(&key, format!("not a valid policy: {msg}"))
        })?;
        if !valid_session_name(&raw.session) {
            return Err(err(
                "session",
                "must be 1-64 characters of A-Z a-z 0-9 . _ - and not . or ..".into(),
            ));
        }
        if !raw.shim.allow_protocols.is_empty()
            && raw.shim.allow_protocols.split(':').any(|t| {
                t.is_empty()
                    || !t
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c))
            })
        {
            return Err(err(
                "shim.allow_protocols",
                "must be transport names separated by ':' (e.g. https:ssh:file)".into(),
            ));
        }
        let abs = |key: &str, p: &Path| -> Result<PathBuf, PolicyError> {
            let p = expand_home(p, home);
            if !p.is_absolute() {
                return Err(err(
                    key,
                    format!("{} must be an absolute path", p.display()),
                ));
            }
            Ok(resolve(&p))
        };
        let repo = abs("repo", &raw.repo)?;
        let worktree_dir = match &raw.worktree_dir {
            Some(p) => abs("worktree_dir", p)?,
            None => {
                let mut name = repo.file_name().unwrap_or_default().to_os_string();
                name.push("-worktrees");
                repo.with_file_name(name).join(&raw.session)
            }
        };
        let state_dir = match &raw.state_dir {
            Some(p) => abs("state_dir", p)?,
            None => home.join(".local/state/gitward").join(&raw.session),
        };
        let audit_log = raw
            .audit_log
            .as_deref()
            .map(|p| abs("audit_log", p))
            .transpose()?;
        let real_git = raw
            .real_git
            .as_deref()
            .map(|p| abs("real_git", p))
            .transpose()?;

        let own = OwnFolders {
            state_dir: &state_dir,
            policy_file: file,
            audit_log: audit_log.as_deref(),
        };
        validate_root(&worktree_dir, home, &own).map_err(|r| err("worktree_dir", r))?;
        let mut worktree_roots = Vec::new();
        for (i, r) in raw.worktree_roots.iter().enumerate() {
            let key = format!("worktree_roots[{i}]");
            let p = abs(&key, r)?;
            // Validate the path as written, so the message shows what it resolves to.
            validate_root(&expand_home(r, home), home, &own).map_err(|r| err(&key, r))?;
            worktree_roots.push(p);
        }
        let mut writable_roots = vec![repo.clone(), worktree_dir.clone()];
        writable_roots.extend(worktree_roots.iter().cloned());
        for (i, r) in raw.writable_roots.iter().enumerate() {
            writable_roots.push(abs(&format!("writable_roots[{i}]"), r)?);
        }
        // No writable root may undo the hidden trees or expose the home folder (R6-11).
        let mut keys = vec!["repo".to_owned(), "worktree_dir".to_owned()];
        keys.extend((0..worktree_roots.len()).map(|i| format!("worktree_roots[{i}]")));
        keys.extend((0..raw.writable_roots.len()).map(|i| format!("writable_roots[{i}]")));
        let trees = hidden_trees();
        for (key, root) in keys.iter().zip(&writable_roots) {
            check_tree_overlap(root, home, &trees).map_err(|r| err(key, r))?;
        }
        // The policy itself must be out of the agent's reach.
        let me = resolve(&std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
        if let Some(root) = writable_roots.iter().find(|r| me.starts_with(r)) {
            return Err(err(
                "-",
                format!("the policy file lies inside the writable root {}; keep it where the agent cannot write", root.display()),
            ));
        }
        for (what, p) in [
            ("state_dir", Some(&state_dir)),
            ("audit_log", audit_log.as_ref()),
        ] {
            if let Some(p) = p {
                if let Some(root) = writable_roots.iter().find(|r| p.starts_with(r)) {
                    return Err(err(
                        what,
                        format!(
                            "{} lies inside the writable root {}",
                            p.display(),
                            root.display()
                        ),
                    ));
                }
            }
        }
        let unix_sockets = match (raw.unix_sockets, raw.docker.enabled) {
            (Some(UnixSocketsRule::Deny), true) => {
                return Err(err(
                    "unix_sockets",
                    "\"deny\" with [docker] enabled: the Docker socket needs Unix sockets; say \"allow\" (every pathname socket outside the hidden trees becomes reachable) or turn Docker off".into(),
                ))
            }
            (Some(r), _) => r,
            (None, true) => UnixSocketsRule::Allow,
            (None, false) => UnixSocketsRule::Deny,
        };
        Ok(Policy {
            file: file.to_path_buf(),
            session: raw.session,
            repo,
            worktree_dir,
            worktree_roots,
            writable_roots,
            real_git,
            audit_log,
            state_dir,
            allow_transient_config: raw.allow_transient_config,
            allow_unresolved_programs: raw.allow_unresolved_programs,
            unix_sockets,
            landlock: raw.landlock,
            docker: raw.docker,
            settings: raw.settings,
            shim: raw.shim,
        })
    }

    /// Is `path` (resolved) under the session's worktree folder or one of its roots?
    pub fn worktree_allowed(&self, path: &Path) -> bool {
        let p = resolve(path);
        std::iter::once(&self.worktree_dir)
            .chain(&self.worktree_roots)
            .any(|r| p.starts_with(r) && p != *r)
    }

    /// The held-writes store of this session.
    pub fn held_dir(&self) -> PathBuf {
        self.state_dir.join("held")
    }
}

/// Session names are used as folder names: keep them to a safe alphabet.
pub fn valid_session_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn expand_home(p: &Path, home: &Path) -> PathBuf {
    match p.strip_prefix("~") {
        Ok(rest) => home.join(rest),
        Err(_) => p.to_path_buf(),
    }
}

/// gitward's own files, which no worktree root may contain or sit in.
pub struct OwnFolders<'a> {
    pub state_dir: &'a Path,
    pub policy_file: &'a Path,
    pub audit_log: Option<&'a Path>,
}

/// Folders (relative to the home folder) whose contents run outside the sandbox: a worktree
/// there plants code the owner's session, shell or scheduler will run.
pub static FORBIDDEN_IN_HOME: &[&str] = &[
    ".config",
    ".local",
    ".ssh",
    ".gnupg",
    ".cargo",
    ".rustup",
    ".npm",
    ".docker",
    ".kube",
    ".aws",
    "bin",
    "Library/LaunchAgents",
    "Library/LaunchDaemons",
];

/// Absolute folders whose contents run outside the sandbox or belong to the system.
pub static FORBIDDEN_ABSOLUTE: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/boot",
    "/run/systemd",
    "/var/spool/cron",
    "/Library/LaunchAgents",
    "/Library/LaunchDaemons",
    "/System",
    "/proc",
    "/sys",
    "/dev",
];

/// The trees the sandbox covers with a fresh tmpfs (`catalogue::HIDDEN_TREES`; `{runtime}`
/// is `$XDG_RUNTIME_DIR`, else `/run/user/<uid>`), each resolved through links.
pub fn hidden_trees() -> Vec<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{}", nix::unistd::getuid())));
    crate::catalogue::HIDDEN_TREES
        .iter()
        .map(|t| {
            if t.path == "{runtime}" {
                resolve(&runtime)
            } else {
                resolve(Path::new(t.path))
            }
        })
        .collect()
}

/// A writable root (resolved) must not be a hidden tree, hold one, or be the home folder or
/// above it: its bind would bring the host's tree back over the sandbox's fresh tmpfs (an
/// owner's tmux on `/tmp/x/sock`, `/var` holding `/var/tmp`), or make the owner's dotfiles
/// and every socket in `$HOME` writable and reachable (sixth red-team pass, R6-11). A folder
/// *inside* a tree (`/tmp/build`) is fine: only it is bound back. Returns the rule broken.
pub fn check_tree_overlap(root: &Path, home: &Path, trees: &[PathBuf]) -> Result<(), String> {
    let home = resolve(home);
    if let Some(t) = trees.iter().find(|t| t.starts_with(root)) {
        let how = if t == root { "is" } else { "contains" };
        return Err(format!(
            "{} {how} the hidden tree {}: its bind would bring the host's tree back over the sandbox's fresh tmpfs (sockets, other users' files); name a folder inside it",
            root.display(),
            t.display()
        ));
    }
    if home.starts_with(root) {
        return Err(format!(
            "{} is the home folder or contains it; a writable root must be a folder of its own (the owner's dotfiles and sockets would be writable and reachable)",
            root.display()
        ));
    }
    Ok(())
}

/// Validate a worktree root (from the policy or from a settings file): after resolving links,
/// it is never `/`, the home folder or one of its ancestors, inside or above a folder whose
/// contents run outside the sandbox, or inside or above gitward's own files. Returns the rule
/// broken.
pub fn validate_root(root: &Path, home: &Path, own: &OwnFolders<'_>) -> Result<(), String> {
    let r = resolve(root);
    let home = resolve(home);
    let shown = if r == root {
        r.display().to_string()
    } else {
        format!("{} (resolves to {})", root.display(), r.display())
    };
    if r.parent().is_none() {
        return Err(format!(
            "{shown} is the root folder; name a folder of its own"
        ));
    }
    if home.starts_with(&r) {
        return Err(format!(
            "{shown} is the home folder or contains it; name a folder of its own"
        ));
    }
    let mut forbidden: Vec<PathBuf> = FORBIDDEN_IN_HOME.iter().map(|f| home.join(f)).collect();
    forbidden.extend(FORBIDDEN_ABSOLUTE.iter().map(PathBuf::from));
    for f in &forbidden {
        let f = resolve(f);
        if r.starts_with(&f) || f.starts_with(&r) {
            return Err(format!(
                "{shown} overlaps {}, whose contents run outside the sandbox",
                f.display()
            ));
        }
    }
    let mut mine: Vec<PathBuf> = vec![resolve(own.state_dir)];
    if let Some(parent) = own.policy_file.parent() {
        mine.push(resolve(
            &std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf()),
        ));
    }
    if let Some(log) = own.audit_log.and_then(Path::parent) {
        mine.push(resolve(log));
    }
    for m in &mine {
        if r.starts_with(m) || m.starts_with(&r) {
            return Err(format!(
                "{shown} overlaps gitward's own folder {}",
                m.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home/u");
        let repo = home.join("src/proj");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(home.join(".config/gitward")).unwrap();
        (t, home, repo)
    }

    fn policy_text(repo: &Path, extra: &str) -> String {
        format!(
            "session = \"alpha\"\nrepo = \"{}\"\n{extra}\n",
            repo.display()
        )
    }

    #[test]
    fn defaults_and_worktree_folder() {
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        let p = Policy::parse(&file, &policy_text(&repo, ""), &home).unwrap();
        assert_eq!(
            p.worktree_dir,
            resolve(&home.join("src/proj-worktrees/alpha"))
        );
        assert_eq!(p.state_dir, home.join(".local/state/gitward/alpha"));
        assert!(p.worktree_allowed(&home.join("src/proj-worktrees/alpha/feature")));
        assert!(!p.worktree_allowed(&home.join("src/proj-worktrees/alpha")));
        assert!(!p.worktree_allowed(&home.join("src/proj-worktrees/beta/x")));
        assert!(!p.worktree_allowed(&home.join("src/proj-worktrees/alpha/../beta/x")));
        assert!(!p.docker.enabled);
    }

    #[test]
    fn unix_sockets_are_denied_unless_allowed_or_docker() {
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        let load = |extra: &str| Policy::parse(&file, &policy_text(&repo, extra), &home);
        assert_eq!(load("").unwrap().unix_sockets, UnixSocketsRule::Deny);
        assert_eq!(
            load("unix_sockets = \"allow\"").unwrap().unix_sockets,
            UnixSocketsRule::Allow
        );
        // Docker needs a Unix socket: it implies allow, and an explicit deny is refused.
        assert_eq!(
            load("[docker]\nenabled = true").unwrap().unix_sockets,
            UnixSocketsRule::Allow
        );
        let e = load("unix_sockets = \"deny\"\n[docker]\nenabled = true").unwrap_err();
        assert_eq!(e.key, "unix_sockets");
        assert!(e.rule.contains("[docker] enabled"), "{e}");
        assert!(load("unix_sockets = \"maybe\"").is_err());
    }

    #[test]
    fn the_special_file_rule_is_required_unless_the_policy_says_otherwise() {
        use crate::plan::landlock::Policy as L;
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        let load = |extra: &str| Policy::parse(&file, &policy_text(&repo, extra), &home);
        assert_eq!(load("").unwrap().landlock, L::Required);
        assert_eq!(
            load("landlock = \"optional\"").unwrap().landlock,
            L::Optional
        );
        assert_eq!(load("landlock = \"off\"").unwrap().landlock, L::Off);
        assert!(load("landlock = \"maybe\"").is_err());
        assert!(load("landlock = true").is_err());
    }

    #[test]
    fn a_writable_root_that_is_or_holds_a_hidden_tree_or_home_is_refused() {
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        let trees = hidden_trees();
        let tmp = resolve(Path::new("/tmp"));
        assert!(trees.contains(&tmp));
        for (root, want) in [
            ("/tmp".to_owned(), "is the hidden tree"),
            ("/var".to_owned(), "contains the hidden tree"),
            ("/var/tmp".to_owned(), "is the hidden tree"),
            ("/dev/shm".to_owned(), "is the hidden tree"),
            (home.display().to_string(), "home folder"),
            (home.parent().unwrap().display().to_string(), "home folder"),
        ] {
            let text = policy_text(&repo, &format!("writable_roots = [\"{root}\"]"));
            let e = Policy::parse(&file, &text, &home).unwrap_err();
            assert_eq!(e.key, "writable_roots[0]", "{root}");
            assert!(e.rule.contains(want), "{root}: {e}");
            assert!(e.to_string().starts_with(&file.display().to_string()));
        }
        // A folder inside a tree is bound back alone: allowed.
        let inside = tmp.join(format!("gw-policy-test-{}", std::process::id()));
        let text = policy_text(
            &repo,
            &format!("writable_roots = [\"{}\"]", inside.display()),
        );
        Policy::parse(&file, &text, &home).unwrap();
        // The checks in isolation, with a made-up tree list.
        let t = vec![PathBuf::from("/srv/t")];
        assert!(check_tree_overlap(Path::new("/srv"), Path::new("/h"), &t).is_err());
        assert!(check_tree_overlap(Path::new("/srv/t/x"), Path::new("/h"), &t).is_ok());
        assert!(check_tree_overlap(Path::new("/h"), Path::new("/h"), &t).is_err());
        assert!(check_tree_overlap(Path::new("/h/src"), Path::new("/h"), &t).is_ok());
    }

    #[test]
    fn policy_inside_a_writable_root_is_refused() {
        let (_t, home, repo) = setup();
        let file = repo.join(".gitward.toml");
        let e = Policy::parse(&file, &policy_text(&repo, ""), &home).unwrap_err();
        assert_eq!(e.key, "-");
        assert!(e.rule.contains("inside the writable root"), "{e}");
        assert!(e.to_string().starts_with(&file.display().to_string()));
    }

    #[test]
    fn forbidden_roots() {
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        for (root, want) in [
            ("/", "root folder"),
            (home.to_str().unwrap(), "home folder"),
            (home.parent().unwrap().to_str().unwrap(), "home folder"),
            (&format!("{}/.config/x", home.display()), "run outside"),
            (
                &format!("{}/.local/share/wt", home.display()),
                "run outside",
            ),
            ("/etc/systemd/system", "run outside"),
            (
                &format!("{}/Library/LaunchAgents", home.display()),
                "run outside",
            ),
            (
                &format!("{}/.local/state/gitward/alpha/wt", home.display()),
                "run outside",
            ),
        ] {
            let text = policy_text(&repo, &format!("worktree_roots = [\"{root}\"]"));
            let e = Policy::parse(&file, &text, &home).unwrap_err();
            assert_eq!(e.key, "worktree_roots[0]", "{root}");
            assert!(e.rule.contains(want), "{root}: {e}");
        }
        std::fs::create_dir_all(home.join("scratch")).unwrap();
        let ok = policy_text(
            &repo,
            &format!("worktree_roots = [\"{}/scratch\"]", home.display()),
        );
        Policy::parse(&file, &ok, &home).unwrap();
    }

    #[test]
    fn a_link_to_a_forbidden_folder_is_refused_after_resolving() {
        let (_t, home, repo) = setup();
        std::os::unix::fs::symlink(home.join(".config"), home.join("innocent")).unwrap();
        let file = home.join(".config/gitward/alpha.toml");
        let text = policy_text(
            &repo,
            &format!("worktree_roots = [\"{}/innocent/wt\"]", home.display()),
        );
        let e = Policy::parse(&file, &text, &home).unwrap_err();
        assert!(e.rule.contains("resolves to"), "{e}");
    }

    #[test]
    fn bad_input_names_the_key() {
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        let e = Policy::parse(&file, "session = \"a/b\"\nrepo = \"/x\"\n", &home).unwrap_err();
        assert_eq!(e.key, "session");
        let e = Policy::parse(&file, &policy_text(&repo, "unknown_key = 1"), &home).unwrap_err();
        assert!(e.rule.contains("unknown_key"), "{e}");
        assert!(e.key.starts_with("line "), "{e}");
        let e = Policy::parse(&file, "session = \"a\"\nrepo = \"rel/path\"\n", &home).unwrap_err();
        assert_eq!(e.key, "repo");
        assert_eq!(e.to_string().lines().count(), 1);
    }

    #[test]
    fn state_dir_inside_the_repo_is_refused() {
        let (_t, home, repo) = setup();
        let file = home.join(".config/gitward/alpha.toml");
        let text = policy_text(
            &repo,
            &format!("state_dir = \"{}/.gitward\"", repo.display()),
        );
        let e = Policy::parse(&file, &text, &home).unwrap_err();
        assert_eq!(e.key, "state_dir");
    }
}
