//! The session's rules for the agent's git, as pure functions of the command line, the policy
//! and (for worktree commands only) the effective repository.
//!
//! Every refusal names its rule (a stable kebab-case id, documented in `docs/git-shim.md`) and
//! the allowed alternative in one line. The rules hold whatever `-C`, `--git-dir`,
//! `--work-tree` or `GIT_*` variables the call carries: key and URL rules do not depend on the
//! repository at all, and worktree rules are checked against the repository git itself
//! resolves for this very call (see [`Repository`]).

use super::argv::{long_opt, ConfigRoute, Invocation, TransientConfig};
use crate::catalogue::{self, ConfigKey, KeyPattern, UrlDanger, UrlIn};
use crate::policy::{resolve, Policy};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A refusal: the rule broken and the one-line message (without the `git-shim: ` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: &'static str,
    pub message: String,
}

/// A refusal. Its message (printed, and logged as an event) loses the userinfo of the URLs
/// it quotes ([`crate::url::redact_userinfo`]).
fn refuse(rule: &'static str, message: impl Into<String>) -> Refusal {
    let message: String = message.into();
    Refusal {
        rule,
        message: crate::url::redact_userinfo(&message).into_owned(),
    }
}

/// What the shim does with an allowed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Replace the shim with git (same pid, status and signals).
    Exec,
    /// Create the session's worktree folder (first use), then exec git.
    CreateFolderThenExec(PathBuf),
    /// Run git as a child, then remove the session's worktree folder if it is left empty
    /// (`worktree remove|move|prune`), and exit with git's status.
    ChildThenTidy,
}

/// The repository a call works on, as git itself resolves it for that call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The folder git starts in (the process's folder after every `-C`).
    pub cwd: PathBuf,
    /// The work tree's top (`None` for a bare repository or outside any repository).
    pub toplevel: Option<PathBuf>,
    /// The common dir (`None` outside any repository).
    pub common_dir: Option<PathBuf>,
}

/// Questions only git can answer for this call (run through the real git, defused, with the
/// call's own global options and environment). Only worktree commands and unknown subcommands
/// ask them, so the common calls stay on the fast path.
pub trait Repository {
    fn effective(&self) -> Effective;
    /// The value of `alias.<name>`, if set.
    fn alias(&self, name: &str) -> Option<String>;
    /// The repository's worktree paths (`git worktree list --porcelain`).
    fn worktrees(&self) -> Vec<PathBuf>;
    /// The worktree entries git would prune now (`git worktree list --porcelain -z`, the
    /// entries with a `prunable` line: folder missing, `gitdir` file missing or broken), as
    /// the path each entry names; `Err` with the reason when git could not list them.
    fn prunable_worktrees(&self) -> Result<Vec<PathBuf>, String>;
    /// A key of the repository's own config file (`git config --local`), as a boolean.
    fn local_bool(&self, key: &str) -> Option<bool>;
    /// The `submodule.<name>.url` values of the `.gitmodules` git reads (the work tree's
    /// file, else the index's, else `HEAD`'s), as `(key, url)`; `Err` with the reason when
    /// they cannot be read.
    fn gitmodules_urls(&self) -> Result<Vec<(String, String)>, String>;
}

/// The worktree `arg` names for `worktree remove|move`, the way git finds it: a unique
/// worktree whose path ends with `arg` at a component boundary, else the path itself.
fn named_worktree(arg: &OsStr, cwd: &Path, repo: &dyn Repository) -> PathBuf {
    let text = arg.to_string_lossy();
    let suffix = text.trim_end_matches('/');
    if !suffix.is_empty() && !Path::new(suffix).is_absolute() {
        let all = repo.worktrees();
        let mut hits = all.iter().filter(|p| {
            let p = p.to_string_lossy();
            p == suffix || p.ends_with(&format!("/{suffix}"))
        });
        if let (Some(one), None) = (hits.next(), hits.next()) {
            return resolve(one);
        }
    }
    resolve(&cwd.join(Path::new(arg)))
}

/// Everything the rules read besides the command line.
pub struct Rules<'a> {
    pub policy: &'a Policy,
    /// The defused `-c` pairs: passing one of them again (e.g. `-c core.pager=cat`) is harmless.
    pub neutral: &'a [(gix::bstr::BString, String)],
}

/// The commands that are builtins in *every* supported git (2.39–2.47, the intersection of
/// their `git --list-cmds=builtins`): a typed word on this list can never be an alias, so no
/// alias lookup is needed. A word that is a builtin in one version only (`replay`, `refs`
/// from 2.44/2.46; `bisect--helper`, `env--helper` until 2.40/2.47) must not be here: on the
/// other version git looks it up as an alias, and its expansion must meet the rules (a test
/// checks this list against every installed git).
pub(crate) const BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout--worker",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-cache--daemon",
    "credential-store",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "index-pack",
    "init",
    "init-db",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-ours",
    "merge-recursive",
    "merge-recursive-ours",
    "merge-recursive-theirs",
    "merge-subtree",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "pickaxe",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "remote",
    "remote-ext",
    "remote-fd",
    "repack",
    "replace",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule--helper",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// [`BUILTINS`] as one text (`shim::packed::Words`): the list is read on every call, and as a
/// slice of `&str` it is ~140 pointers that a static PIE relocates at every start. Only this
/// copy is in the binary ([`BUILTINS`] is a `const`, read at compile time).
static BUILTIN_BYTES: [u8; super::packed::joined_len(BUILTINS)] = super::packed::join(BUILTINS);
pub(crate) static BUILTIN_WORDS: super::packed::Words = super::packed::Words::new(&BUILTIN_BYTES);

/// Commands that start a transport and accept a program for its other end.
static TRANSPORT_COMMANDS: &[&str] = &[
    "clone",
    "fetch",
    "pull",
    "push",
    "ls-remote",
    "archive",
    "fetch-pack",
    "send-pack",
    // Runs `git ls-remote "$url"` with the URL operand as it is (rt25 W7).
    "request-pull",
];

/// The shortest abbreviation of a long option that git's parse-options accepts: any prefix
/// that names one option of the command unambiguously (`git init --t=<dir>` is
/// `--template`). A shorter prefix is ambiguous and git refuses the call itself, so reading
/// every prefix of a guarded option as that option never refuses what git would run.
const ABBREV: usize = 1;

/// How deep aliases are followed (git itself stops at a loop).
const ALIAS_DEPTH: usize = 8;

impl Rules<'_> {
    /// Check one call. `env_config` is the command-scope config the environment carries.
    pub fn check(
        &self,
        inv: &Invocation,
        env_config: &[TransientConfig],
        inherited_exec_path: Option<&OsStr>,
        repo: &dyn Repository,
    ) -> Result<Plan, Refusal> {
        if let Some(opt) = &inv.unknown_option {
            return Err(refuse(
                "global-option",
                format!(
                    "git-shim does not know the global option {}, so it cannot read the rest of the command line; drop it, or put it after the subcommand if it is the subcommand's",
                    opt.to_string_lossy()
                ),
            ));
        }
        self.transient(inv, env_config, inherited_exec_path)?;
        let Some(mut cmd) = inv.command() else {
            return Ok(Plan::Exec);
        };
        let mut args = inv.args.clone();
        let mut depth = 0;
        // An executable `git-<word>` does not skip the lookup: git falls back to the alias when
        // that program fails to start (a `#!` interpreter that does not exist; rt24 W2).
        while !BUILTIN_WORDS.contains(cmd.as_bytes()) {
            let Some(value) = repo.alias(&cmd) else {
                break;
            };
            if value.trim_start().starts_with('!') {
                return Err(refuse(
                    "alias",
                    format!(
                        "`git {cmd}` is a shell alias (`{}`); run the command it names directly",
                        value.trim()
                    ),
                ));
            }
            let Some(words) = split_cmdline(&value) else {
                return Err(refuse(
                    "alias",
                    format!("alias `{cmd}` cannot be read (`{value}`); run the git command it names directly"),
                ));
            };
            let Some((first, rest)) = words.split_first() else {
                break;
            };
            if first.starts_with('-') {
                // git refuses these too ("alias changes environment variables").
                return Err(refuse(
                    "alias",
                    format!("alias `{cmd}` starts with a global option (`{first}`); run the git command directly"),
                ));
            }
            depth += 1;
            if depth > ALIAS_DEPTH {
                return Err(refuse(
                    "alias",
                    format!("alias `{cmd}` expands more than {ALIAS_DEPTH} times; run the git command directly"),
                ));
            }
            let mut expanded: Vec<OsString> = rest.iter().map(OsString::from).collect();
            expanded.extend(args);
            args = expanded;
            cmd = first.clone();
        }
        self.subcommand(&cmd, &args, inv, repo)
    }

    /// `-c`, `--config-env`, `GIT_CONFIG_*` and `--exec-path` / `GIT_EXEC_PATH`.
    fn transient(
        &self,
        inv: &Invocation,
        env_config: &[TransientConfig],
        inherited_exec_path: Option<&OsStr>,
    ) -> Result<(), Refusal> {
        if self.policy.allow_transient_config {
            return Ok(());
        }
        if let Some(p) = &inv.exec_path {
            return Err(refuse(
                "exec-path",
                format!("--exec-path={} makes git run programs from that folder; drop it (policy: allow_transient_config = true allows it)", p.to_string_lossy()),
            ));
        }
        if let Some(p) = inherited_exec_path {
            return Err(refuse(
                "exec-path",
                format!("GIT_EXEC_PATH={} makes git run programs from that folder; unset it (policy: allow_transient_config = true allows it)", p.to_string_lossy()),
            ));
        }
        for c in inv.config.iter().chain(env_config) {
            if c.key.starts_with(super::argv::UNREADABLE) {
                return Err(refuse(
                    "transient-config",
                    format!(
                        "{}>: cannot tell which config it carries; unset it",
                        c.key.trim_end_matches('>')
                    ),
                ));
            }
            if self.is_neutral(c) {
                continue;
            }
            if let Some(why) = key_danger(&c.key, c.value.as_deref()) {
                let shown = match &c.value {
                    Some(v) => format!("{}={v}", c.key),
                    None => c.key.clone(),
                };
                let how = match c.route {
                    ConfigRoute::DashC => format!("-c {shown}"),
                    ConfigRoute::ConfigEnv => {
                        format!("--config-env {} (from the environment)", c.key)
                    }
                    ConfigRoute::Environment => {
                        format!("{shown} in GIT_CONFIG_PARAMETERS/GIT_CONFIG_COUNT")
                    }
                };
                return Err(refuse(
                    "transient-config",
                    format!(
                        "{how}: {why}; drop it (policy: allow_transient_config = true allows it)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A pair the defused set passes anyway (e.g. `core.pager=cat`, `core.hooksPath=/dev/null`).
    fn is_neutral(&self, c: &TransientConfig) -> bool {
        let Some(v) = &c.value else { return false };
        let Some(k) = ConfigKey::parse(&c.key) else {
            return false;
        };
        self.neutral.iter().any(|(nk, nv)| {
            nv == v
                && std::str::from_utf8(nk)
                    .ok()
                    .and_then(ConfigKey::parse)
                    .is_some_and(|n| {
                        n.section.eq_ignore_ascii_case(k.section)
                            && n.name.eq_ignore_ascii_case(k.name)
                            && n.subsection == k.subsection
                    })
        })
    }

    fn subcommand(
        &self,
        cmd: &str,
        args: &[OsString],
        inv: &Invocation,
        repo: &dyn Repository,
    ) -> Result<Plan, Refusal> {
        if let Some((_, what)) = catalogue::REFUSED_COMMANDS.iter().find(|(c, _)| *c == cmd) {
            return Err(refuse(
                "command",
                format!("git {cmd} {what}; run the git commands it would run one by one"),
            ));
        }
        dash_operands(cmd, args)?;
        if TRANSPORT_COMMANDS.contains(&cmd) {
            transport_programs(cmd, args)?;
        }
        if !self.policy.shim.allow_sequencer_options {
            sequencer_options(cmd, args)?;
        }
        match cmd {
            "config" => config(args).map(|_| Plan::Exec),
            "remote" => remote(args).map(|_| Plan::Exec),
            "submodule" | "submodule--helper" => submodule(cmd, args, repo).map(|_| Plan::Exec),
            "maintenance" | "sparse-checkout" => {
                verbs(cmd, args, repo)?;
                if cmd == "maintenance" && verb_of(args).is_some_and(|(_, v)| v == "run") {
                    self.prune_guard("git maintenance run (its gc task)", repo)?;
                }
                Ok(Plan::Exec)
            }
            "gc" => self.prune_guard("git gc", repo).map(|_| Plan::Exec),
            "clone" => clone(args).map(|_| Plan::Exec),
            "push" => push(args).map(|_| Plan::Exec),
            "init" | "init-db" => init(args).map(|_| Plan::Exec),
            "worktree" => self.worktree(args, inv, repo),
            _ => Ok(Plan::Exec),
        }
    }

    fn worktree(
        &self,
        args: &[OsString],
        inv: &Invocation,
        repo: &dyn Repository,
    ) -> Result<Plan, Refusal> {
        let Some(verb) = args.first().map(|a| a.to_string_lossy().into_owned()) else {
            return Ok(Plan::Exec);
        };
        let spec = Spec {
            short_value: "bB",
            long_value: &["--reason"],
        };
        let (_, pos) = walk(&args[1..], &spec);
        let target = match verb.as_str() {
            "add" => pos.first(),
            "move" => pos.get(1),
            "remove" => pos.first(),
            "prune" => {
                let spec = Spec {
                    short_value: "",
                    long_value: &["--expire"],
                };
                let (opts, _) = walk(&args[1..], &spec);
                let dry = opts
                    .iter()
                    .any(|o| o.short == Some('n') || is_long(o, "--dry-run", 1));
                if !dry {
                    self.prune_guard("git worktree prune", repo)?;
                }
                return Ok(Plan::ChildThenTidy);
            }
            "repair" => return self.repair(&pos, repo),
            _ => return Ok(Plan::Exec),
        };
        let Some(target) = target else {
            // git prints its usage.
            return Ok(Plan::Exec);
        };
        let eff = repo.effective();
        let abs = if verb == "remove" {
            named_worktree(target, &eff.cwd, repo)
        } else {
            resolve(&eff.cwd.join(Path::new(target)))
        };
        let p = self.policy;
        let roots = std::iter::once(&p.worktree_dir)
            .chain(&p.worktree_roots)
            .map(|r| format!("{}/", r.display()))
            .collect::<Vec<_>>()
            .join(" or ");
        if verb == "remove" {
            if !p.worktree_allowed(&abs) {
                return Err(refuse(
                    "worktree-location",
                    format!("{} is not one of this session's worktrees; the session removes only worktrees under {roots}", abs.display()),
                ));
            }
            return Ok(Plan::ChildThenTidy);
        }
        let inside =
            |root: &Option<PathBuf>| root.as_ref().is_some_and(|r| abs.starts_with(resolve(r)));
        // Inside this call's checkout or git dir, the session's repository, or any worktree
        // of the repository (a worktree nested in another's checkout).
        let nested = || {
            std::iter::once(p.repo.clone())
                .chain(repo.worktrees())
                .map(|w| resolve(&w))
                // Strictly inside: the path of an existing worktree itself is git's to refuse.
                .any(|w| abs != w && abs.starts_with(&w))
        };
        if inside(&eff.toplevel) || inside(&eff.common_dir) || nested() {
            return Err(refuse(
                "worktree-location",
                format!("{} is inside the checkout; worktrees of session {} go under {roots} (e.g. git worktree add {}/<name>)", abs.display(), p.session, p.worktree_dir.display()),
            ));
        }
        if !p.worktree_allowed(&abs) {
            return Err(refuse(
                "worktree-location",
                format!("{} is outside this session's worktree folders; worktrees of session {} go under {roots} (e.g. git worktree add {}/<name>)", abs.display(), p.session, p.worktree_dir.display()),
            ));
        }
        // Directly in one of those folders: settings-watch and agent-shell guard each folder
        // there as one worktree, so a worktree one level further down would be a folder of
        // another, its settings files below the paths the rules name.
        let direct = std::iter::once(&p.worktree_dir)
            .chain(&p.worktree_roots)
            .any(|r| abs.parent() == Some(resolve(r).as_path()));
        if !direct {
            return Err(refuse(
                "worktree-location",
                format!("{} is not directly in a worktree folder of session {}; put each worktree directly under {roots} (e.g. git worktree add {}/<name>)", abs.display(), p.session, p.worktree_dir.display()),
            ));
        }
        if verb == "move" {
            if let Some(src) = pos.first() {
                let src = named_worktree(src, &eff.cwd, repo);
                if !p.worktree_allowed(&src) {
                    return Err(refuse(
                        "worktree-location",
                        format!("{} is not one of this session's worktrees; the session moves only worktrees under {roots}", src.display()),
                    ));
                }
            }
            return Ok(Plan::ChildThenTidy);
        }
        let _ = inv;
        if abs.starts_with(&p.worktree_dir) && !p.worktree_dir.exists() {
            return Ok(Plan::CreateFolderThenExec(p.worktree_dir.clone()));
        }
        Ok(Plan::Exec)
    }
}

impl Rules<'_> {
    /// `git worktree prune`, `git gc` and `git maintenance run` delete every worktree entry
    /// (`<common dir>/worktrees/<id>`: the worktree's `HEAD`, index, refs, logs) whose folder
    /// git cannot see. In a sandbox another session's worktree folder is not visible, so git
    /// takes it for deleted: the call is refused when an entry git would prune is not one of
    /// this session's worktrees (the same test as `worktree remove`, which is refused for
    /// them too). gc and maintenance prune only entries older than `gc.worktreePruneExpire`
    /// (or without an index), but no value of that key turns the pruning off, so every entry
    /// git lists as prunable counts. Fail closed: when git cannot list them, refused.
    fn prune_guard(&self, what: &str, repo: &dyn Repository) -> Result<(), Refusal> {
        let p = self.policy;
        let foreign: Vec<PathBuf> = match repo.prunable_worktrees() {
            Ok(v) => v.into_iter().filter(|w| !p.worktree_allowed(w)).collect(),
            Err(why) => {
                return Err(refuse(
                    "worktree-prune",
                    format!("{what} prunes worktree entries, and git could not list them ({why}); run it where git can"),
                ))
            }
        };
        if foreign.is_empty() {
            return Ok(());
        }
        let shown = foreign
            .iter()
            .map(|w| w.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        Err(refuse(
            "worktree-prune",
            format!("{what} would delete the worktree entry of {shown}, whose folder this session cannot see (not one of its worktrees under {}/); git worktree remove this session's own worktrees instead", p.worktree_dir.display()),
        ))
    }

    /// `git worktree repair [<path>…]` points a worktree entry's `gitdir` at each path whose
    /// `.git` file names it — any entry, another session's too — and, without paths, at the
    /// folder the call runs in: a worktree moved by hand is registered where it now is. So
    /// every path it would register (the given ones, else this call's work tree) must be
    /// the main worktree or under the session's folders, as for `worktree add|move`.
    fn repair(&self, pos: &[&OsStr], repo: &dyn Repository) -> Result<Plan, Refusal> {
        let p = self.policy;
        let eff = repo.effective();
        let targets: Vec<PathBuf> = if pos.is_empty() {
            eff.toplevel.iter().map(|t| resolve(t)).collect()
        } else {
            pos.iter()
                .map(|t| resolve(&eff.cwd.join(Path::new(t))))
                .collect()
        };
        let main = resolve(&p.repo);
        for t in targets {
            if t != main && !p.worktree_allowed(&t) {
                return Err(refuse(
                    "worktree-location",
                    format!("git worktree repair would register {} as a worktree of the repository; this session's worktrees stay under {}/ (git worktree move them there)", t.display(), p.worktree_dir.display()),
                ));
            }
        }
        Ok(Plan::Exec)
    }
}

/// Why a config key (with the value it would get) is refused, if it is.
pub fn key_danger(key: &str, value: Option<&str>) -> Option<String> {
    let parsed = ConfigKey::parse(key)?;
    if let Some(sub) = parsed.subsection.filter(|s| s.starts_with('-')) {
        if catalogue::REMOTE_NAME_SECTIONS
            .iter()
            .any(|s| s.eq_ignore_ascii_case(parsed.section))
        {
            return Some(format!("{key} names a remote `{sub}`, which git passes to a child git fetch, where it is read as an option"));
        }
    }
    if catalogue::REMOTE_NAME_KEYS
        .iter()
        .any(|p| p.matches(&parsed))
    {
        if let Some(v) = value.filter(|v| v.starts_with('-')) {
            return Some(format!(
                "{key} names a remote `{v}`, which git passes to a child git fetch or push, where it is read as an option"
            ));
        }
    }
    if catalogue::REMOTE_GROUP_KEYS
        .iter()
        .any(|p| p.matches(&parsed))
    {
        if let Some(w) = value.and_then(|v| v.split([' ', '\t', '\n']).find(|w| w.starts_with('-')))
        {
            return Some(format!(
                "{key} lists `{w}`, which git passes to a child git fetch as an option"
            ));
        }
    }
    for (pattern, at) in catalogue::URL_KEYS {
        if pattern.matches(&parsed) {
            let url = match at {
                UrlIn::Value => value,
                UrlIn::Subsection => parsed.subsection,
                UrlIn::NameOrUrl => value.filter(|v| !is_remote_name(v)),
            };
            // Unsetting a URL (no value) narrows.
            return url
                .and_then(url_danger)
                .map(|d| format!("{key} would point at {d}"));
        }
    }
    let e = super::packed::lookup(key).next()?;
    Some(format!(
        "{key} is a program-running key ({}: {})",
        e.display(),
        e.runs()
    ))
}

/// Is `v`, where git takes a remote's name or else a URL (`branch.<name>.remote`, the
/// repository argument of `push -u`), a remote's nickname (no `/`, no `:`) or `.` (the
/// repository itself)? Anything else is judged as a URL ([`catalogue::UrlIn::NameOrUrl`]).
fn is_remote_name(v: &str) -> bool {
    v == "."
        || (!v.is_empty()
            && !v.contains(['/', ':'])
            && !v.starts_with('-')
            && !v.chars().any(char::is_control))
}

/// A URL the shim will not store, described.
pub fn url_danger(url: &str) -> Option<&'static str> {
    match catalogue::classify_url(url)? {
        UrlDanger::Ext => Some("an ext:: URL, which runs a command line"),
        UrlDanger::Helper => Some("a <helper>:: URL, which runs git-remote-<helper>"),
        UrlDanger::DashLeading => Some("a URL starting with '-', read as an option"),
        UrlDanger::Local => Some("a local path, whose upload-pack runs on this machine"),
        UrlDanger::ControlChar => Some("a URL with a control character"),
    }
}

/// Does a config section name (`sec` or `sec.sub`) hold program-running keys?
fn section_guarded(name: &str) -> bool {
    let section = name.split('.').next().unwrap_or(name);
    let sec_of = |p: &KeyPattern| match *p {
        KeyPattern::Key { section, .. }
        | KeyPattern::PerName { section, .. }
        | KeyPattern::AnyScope { section, .. }
        | KeyPattern::Section { section } => section,
    };
    super::packed::keys().any(|e| e.section().eq_ignore_ascii_case(section))
        || catalogue::URL_KEYS
            .iter()
            .any(|(p, _)| sec_of(p).eq_ignore_ascii_case(section))
}

/// Options of one subcommand: which take a separate value.
struct Spec {
    short_value: &'static str,
    long_value: &'static [&'static str],
}

/// An option as seen on the command line: its text and its value (inline or the next word).
struct Opt<'a> {
    arg: &'a OsStr,
    short: Option<char>,
    value: Option<&'a OsStr>,
}

/// Split a subcommand's arguments into options and positionals the way parse-options does
/// (stuck and separate values, short bundles, `--` and `--end-of-options`).
fn walk<'a>(args: &'a [OsString], spec: &Spec) -> (Vec<Opt<'a>>, Vec<&'a OsStr>) {
    walk_mode(args, spec, false)
}

/// [`walk`] for a command parsed with `PARSE_OPT_STOP_AT_NON_OPTION` (`git config`, old and
/// new syntax): from the first positional on, every word is one (`git config core.hooksPath
/// --x` stores `--x`; `git config a.b -- x` stores `--`).
fn walk_stop<'a>(args: &'a [OsString], spec: &Spec) -> (Vec<Opt<'a>>, Vec<&'a OsStr>) {
    walk_mode(args, spec, true)
}

fn walk_mode<'a>(
    args: &'a [OsString],
    spec: &Spec,
    stop_at_non_option: bool,
) -> (Vec<Opt<'a>>, Vec<&'a OsStr>) {
    let mut opts = Vec::new();
    let mut pos = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_os_str();
        let b = a.as_bytes();
        i += 1;
        if b == b"--" || b == b"--end-of-options" {
            pos.extend(args[i..].iter().map(OsString::as_os_str));
            break;
        }
        if b.starts_with(b"--") {
            let has_inline = b.contains(&b'=');
            let takes = !has_inline
                && spec
                    .long_value
                    .iter()
                    .any(|full| long_opt(a, full, ABBREV).is_some());
            let value = if has_inline {
                b.iter()
                    .position(|&c| c == b'=')
                    .map(|p| OsStr::from_bytes(&b[p + 1..]))
            } else if takes {
                i += 1;
                args.get(i - 1).map(OsString::as_os_str)
            } else {
                None
            };
            opts.push(Opt {
                arg: a,
                short: None,
                value,
            });
            continue;
        }
        if b.len() > 1 && b[0] == b'-' {
            for (j, &c) in b.iter().enumerate().skip(1) {
                let c = c as char;
                if spec.short_value.contains(c) {
                    let value = if j + 1 < b.len() {
                        Some(OsStr::from_bytes(&b[j + 1..]))
                    } else {
                        i += 1;
                        args.get(i - 1).map(OsString::as_os_str)
                    };
                    opts.push(Opt {
                        arg: a,
                        short: Some(c),
                        value,
                    });
                    break;
                }
                opts.push(Opt {
                    arg: a,
                    short: Some(c),
                    value: None,
                });
            }
            continue;
        }
        pos.push(a);
        if stop_at_non_option {
            pos.extend(args[i..].iter().map(OsString::as_os_str));
            break;
        }
    }
    (opts, pos)
}

/// The value of `--opt=value` as given (for a long option with an inline value).
fn lossy(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}

fn is_long(o: &Opt<'_>, full: &str, min: usize) -> bool {
    o.short.is_none() && long_opt(o.arg, full, min).is_some()
}

/// Operands starting with `-` (typed after `--` or `--end-of-options`) of the commands that
/// hand their operands on to a child `git fetch`/`git push` with no `--` before them
/// ([`catalogue::OPERANDS_TO_CHILD`]): the child reads them as options.
fn dash_operands(cmd: &str, args: &[OsString]) -> Result<(), Refusal> {
    let (verb, rest) = if cmd == "remote" {
        match args.split_first() {
            Some((v, rest)) => (lossy(v), rest),
            None => return Ok(()),
        }
    } else {
        (String::new(), args)
    };
    if !catalogue::OPERANDS_TO_CHILD
        .iter()
        .any(|(c, v)| *c == cmd && *v == verb)
    {
        return Ok(());
    }
    let spec = Spec {
        short_value: "",
        long_value: &[],
    };
    let (_, pos) = walk(rest, &spec);
    if let Some(p) = pos.iter().find(|p| p.as_bytes().starts_with(b"-")) {
        let shown = if verb.is_empty() {
            cmd.to_owned()
        } else {
            format!("{cmd} {verb}")
        };
        return Err(refuse(
            "dash-operand",
            format!(
                "git {shown}: the operand `{}` starts with '-'; git passes it to a child git fetch or push, which reads it as an option; name remotes and refspecs without a leading '-'",
                lossy(p)
            ),
        ));
    }
    Ok(())
}

/// `--upload-pack`, `--receive-pack`, `--exec` (and clone's `-u`) name the program run at the
/// other end of a transport.
fn transport_programs(cmd: &str, args: &[OsString]) -> Result<(), Refusal> {
    let spec = Spec {
        short_value: if cmd == "clone" { "obucj" } else { "" },
        long_value: &[],
    };
    // Every word, not only those the walk takes for options: an option whose separate value
    // is `--` or `--end-of-options` (`ls-remote -o --`, `archive -o --`, `send-pack
    // --push-option --`) made the walk read the end of options early, and git then read the
    // next word as an option (twenty-fifth red-team pass, rt25 W1/W2/W4); a script's operand
    // reaches a child git as an option (`request-pull`, W7). A word spelled as one of these
    // options is refused wherever it stands.
    for a in args {
        if let Some(full) = ["--upload-pack", "--receive-pack", "--exec"]
            .into_iter()
            .find(|full| long_opt(a, full, ABBREV).is_some())
        {
            return Err(refuse(
                "transport-program",
                format!("git {cmd}: the word `{}` is git's {full} option, which names a program to run for the transport, wherever it stands; drop it", lossy(a)),
            ));
        }
    }
    // clone's remote name (`-o`/`--origin`) is passed to later child fetches as an argument:
    // one starting with `-` is an option there (rt25 W3).
    if cmd == "clone" {
        let mut it = args.iter().map(|a| a.as_bytes()).peekable();
        while let Some(b) = it.next() {
            let value: Option<&[u8]> = if b == b"--" || b == b"--end-of-options" {
                break;
            } else if b == b"-o" {
                it.next()
            } else if let Some(rest) = b.strip_prefix(b"-o").filter(|_| !b.starts_with(b"--")) {
                Some(rest)
            } else if let Some(v) = long_opt(OsStr::from_bytes(b), "--origin", 3) {
                match v {
                    Some(v) => Some(v.as_bytes()),
                    None => it.next(),
                }
            } else {
                None
            };
            if value.is_some_and(|v| v.starts_with(b"-")) {
                return Err(refuse(
                    "dash-operand",
                    "git clone: a remote name starting with '-' is passed to later child fetches, which read it as an option".to_owned(),
                ));
            }
        }
    }
    let (opts, _) = walk(args, &spec);
    for o in &opts {
        let named = ["--upload-pack", "--receive-pack", "--exec"]
            .into_iter()
            .find(|full| is_long(o, full, ABBREV))
            .map(str::to_owned)
            .or_else(|| (cmd == "clone" && o.short == Some('u')).then(|| "-u".to_owned()));
        if let Some(name) = named {
            return Err(refuse(
                "transport-program",
                format!("git {cmd} {name} names a program to run for the transport; drop it (git's own upload-pack/receive-pack are used)"),
            ));
        }
    }
    Ok(())
}

/// Options of sequencer commands (`rebase`, `cherry-pick`, `revert`, `pull`) that store a
/// program, strategy, its options or a signing key in the in-progress operation's state,
/// where the owner's `--continue` reads them outside the sandbox
/// ([`catalogue::SEQUENCER_OPTIONS`]). `-S`/`--gpg-sign` without a key (the owner's default
/// key) is allowed; so is `cherry-pick -x` (a message trailer, not `--exec`).
fn sequencer_options(cmd: &str, args: &[OsString]) -> Result<(), Refusal> {
    let rows: Vec<_> = catalogue::SEQUENCER_OPTIONS
        .iter()
        .filter(|(c, ..)| *c == cmd)
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    // Options of these commands that take a separate value (so the value is not read as an
    // option of its own): strategy, strategy option, exec, onto, and the like.
    let (short_value, long_value): (&str, &[&str]) = match cmd {
        "rebase" => (
            "sxX",
            &[
                "--strategy",
                "--strategy-option",
                "--exec",
                "--onto",
                "--trailer",
                "--whitespace",
                "--empty",
                "--rebase-merges",
            ],
        ),
        "pull" => (
            "sX",
            &[
                "--strategy",
                "--strategy-option",
                "--depth",
                "--deepen",
                "--shallow-since",
                "--shallow-exclude",
                "--upload-pack",
                "--recurse-submodules",
                "--negotiation-tip",
                "--server-option",
                "--refmap",
                "--cleanup",
            ],
        ),
        _ => (
            "mX",
            &[
                "--strategy",
                "--strategy-option",
                "--mainline",
                "--cleanup",
                "--empty",
            ],
        ),
    };
    let spec = Spec {
        short_value,
        long_value,
    };
    let (opts, _) = walk(args, &spec);
    for o in &opts {
        for (_, long, short, why) in &rows {
            let (name, needs_value) = match long.strip_suffix("=KEY") {
                Some(n) => (n, true),
                None => (*long, false),
            };
            let hit = match o.short {
                // `-S<key>`: an optional value, stuck only (`-S` alone is the owner's key).
                Some(c) if needs_value => {
                    Some(c) == *short && {
                        let b = o.arg.as_bytes();
                        b.iter()
                            .skip(1)
                            .position(|&x| x == c as u8)
                            .is_some_and(|p| p + 2 < b.len())
                    }
                }
                Some(c) => Some(c) == *short,
                None => {
                    is_long(o, name, ABBREV)
                        && (!needs_value || o.value.is_some_and(|v| !v.is_empty()))
                }
            };
            if hit {
                let shown = o.arg.to_string_lossy();
                return Err(refuse(
                    "sequencer-option",
                    format!(
                        "git {cmd} {shown}: {why}, outside the sandbox; drop it (policy: shim.allow_sequencer_options = true allows it)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `git config`, old and new syntax.
fn config(args: &[OsString]) -> Result<(), Refusal> {
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Act {
        Read,
        Write,
        Unset,
        Rename,
        RemoveSection,
        Edit,
    }
    const SUBCOMMANDS: &[(&str, Act)] = &[
        ("list", Act::Read),
        ("get", Act::Read),
        ("set", Act::Write),
        ("unset", Act::Unset),
        ("rename-section", Act::Rename),
        ("remove-section", Act::RemoveSection),
        ("edit", Act::Edit),
    ];
    const ACTIONS: &[(&str, Act)] = &[
        ("--get", Act::Read),
        ("--get-all", Act::Read),
        ("--get-regexp", Act::Read),
        ("--get-urlmatch", Act::Read),
        ("--get-color", Act::Read),
        ("--get-colorbool", Act::Read),
        ("--list", Act::Read),
        ("--replace-all", Act::Write),
        ("--add", Act::Write),
        ("--unset", Act::Unset),
        ("--unset-all", Act::Unset),
        ("--rename-section", Act::Rename),
        ("--remove-section", Act::RemoveSection),
        ("--edit", Act::Edit),
    ];
    let spec = Spec {
        short_value: "ft",
        long_value: &[
            "--file",
            "--blob",
            "--type",
            "--default",
            "--comment",
            "--value",
            "--url",
        ],
    };
    let (opts, pos) = walk_stop(args, &spec);
    let mut act: Option<Act> = None;
    for o in &opts {
        match o.short {
            Some('l') => act = act.or(Some(Act::Read)),
            Some('e') => act = Some(Act::Edit),
            Some(_) => {}
            None => {
                // Exact names first, then git's unambiguous abbreviations.
                let exact = ACTIONS.iter().find(|(n, _)| {
                    let s = o.arg.as_bytes();
                    s == n.as_bytes()
                });
                let found = exact.or_else(|| {
                    let mut m = ACTIONS
                        .iter()
                        .filter(|(n, _)| long_opt(o.arg, n, ABBREV).is_some());
                    let first = m.next();
                    // Ambiguous: git refuses the call; judge by the most dangerous reading.
                    match (first, m.next()) {
                        (Some(f), None) => Some(f),
                        (Some(_), Some(_)) => Some(&("--edit", Act::Write)),
                        _ => None,
                    }
                });
                if let Some((_, a)) = found {
                    if *a != Act::Read || act.is_none() {
                        act = Some(*a);
                    }
                }
            }
        }
    }
    // A write to a config file other than the repository's own (`--global`, `--system`,
    // `--file`): read by every repository of the owner.
    let is_shared = |o: &Opt<'_>| {
        o.short == Some('f')
            || ["--global", "--system", "--file"]
                .iter()
                .any(|full| is_long(o, full, ABBREV))
    };
    let mut shared_file = opts.iter().any(is_shared);
    let mut pos: Vec<String> = pos.iter().map(|p| lossy(p)).collect();
    if act.is_none() {
        if let Some((_, a)) = pos
            .first()
            .and_then(|w| SUBCOMMANDS.iter().find(|(n, _)| n == w))
        {
            act = Some(*a);
            pos.remove(0);
            // New syntax: `set --append`, `unset --all`… may follow the word.
            let rest: Vec<OsString> = pos.iter().map(OsString::from).collect();
            let (o, p) = walk_stop(&rest, &spec);
            shared_file |= o.iter().any(is_shared);
            pos = p.iter().map(|p| lossy(p)).collect();
        }
    }
    let act = act.unwrap_or(if pos.len() >= 2 {
        Act::Write
    } else {
        Act::Read
    });
    let alt = "the agent's git does not store program-running keys; ask the owner to set it outside the sandbox";
    match act {
        Act::Read => Ok(()),
        Act::Edit => Err(refuse(
            "config-key",
            "git config --edit can write any key; set keys one by one with git config <key> <value>",
        )),
        Act::Write | Act::Unset => {
            let Some(key) = pos.first() else { return Ok(()) };
            let value = if act == Act::Write { pos.get(1).map(String::as_str) } else { None };
            if act == Act::Write && shared_file {
                if let Some(k) = ConfigKey::parse(key) {
                    if catalogue::SCOPE_WIDE_URL_KEYS.iter().any(|p| p.matches(&k)) {
                        return Err(refuse(
                            "config-key",
                            format!("git config: {key} in a global or shared config file rewrites the URLs of every repository of the owner; set it in this repository's config (git config --local), or ask the owner"),
                        ));
                    }
                }
            }
            let danger = if act == Act::Unset {
                // Unsetting a URL narrows; unsetting a program-running key may bring back a
                // lower-scope value (core.hooksPath → .git/hooks), so it is refused too.
                match ConfigKey::parse(key) {
                    Some(k) if catalogue::URL_KEYS.iter().any(|(p, _)| p.matches(&k)) => None,
                    _ => key_danger(key, None),
                }
            } else {
                key_danger(key, value)
            };
            match danger {
                Some(why) => Err(refuse("config-key", format!("git config: {why}; {alt}"))),
                None => Ok(()),
            }
        }
        Act::Rename | Act::RemoveSection => {
            let take = if act == Act::Rename { 2 } else { 1 };
            for s in pos.iter().take(take) {
                if section_guarded(s) {
                    return Err(refuse(
                        "config-key",
                        format!("git config: section {s} holds program-running keys and cannot be renamed or removed; {alt} (use git remote rename/remove for remotes)"),
                    ));
                }
            }
            Ok(())
        }
    }
}

fn remote(args: &[OsString]) -> Result<(), Refusal> {
    // `--mirror[=fetch|push]` takes its value only stuck (`--mirror=fetch`): with a separate
    // word, the word is the remote's name. `-t`/`--track` and `-m`/`--master` take one.
    let spec = Spec {
        short_value: "tm",
        long_value: &["--track", "--master"],
    };
    let Some(verb) = args.first().map(|a| lossy(a)) else {
        return Ok(());
    };
    let (opts, pos) = walk(&args[1..], &spec);
    let url = match verb.as_str() {
        "add" => pos.get(1),
        "set-url" => {
            if opts.iter().any(|o| is_long(o, "--delete", ABBREV)) {
                return Ok(());
            }
            pos.get(1)
        }
        _ => None,
    };
    if let Some(url) = url {
        if let Some(d) = url_danger(&lossy(url)) {
            return Err(refuse(
                "remote-url",
                format!(
                    "git remote {verb}: {} is {d}; use an https:// or ssh URL",
                    lossy(url)
                ),
            ));
        }
    }
    Ok(())
}

/// The first word of `args` that is not an option (a subcommand's verb), and its index.
fn verb_of(args: &[OsString]) -> Option<(usize, String)> {
    args.iter()
        .position(|a| !a.as_bytes().starts_with(b"-"))
        .map(|i| (i, lossy(&args[i])))
}

/// Verbs the catalogue names: those that write outside the repository
/// ([`catalogue::OUTSIDE_WRITES`]) and those that switch on `extensions.worktreeConfig`
/// ([`catalogue::WORKTREE_CONFIG_VERBS`]) while it is off.
fn verbs(cmd: &str, args: &[OsString], repo: &dyn Repository) -> Result<(), Refusal> {
    let Some((_, verb)) = verb_of(args) else {
        return Ok(());
    };
    if let Some((_, _, what)) = catalogue::OUTSIDE_WRITES
        .iter()
        .find(|(c, v, _)| *c == cmd && *v == verb)
    {
        return Err(refuse(
            "outside-write",
            format!("git {cmd} {verb} {what}; git {cmd} run works inside the session, scheduling is the owner's"),
        ));
    }
    if catalogue::WORKTREE_CONFIG_VERBS
        .iter()
        .any(|(c, v)| *c == cmd && *v == verb)
        && repo.local_bool("extensions.worktreeConfig") != Some(true)
    {
        return Err(refuse(
            "config-key",
            format!("git {cmd} {verb} would switch on extensions.worktreeConfig in the repository's config (then every worktree's config.worktree is read); ask the owner to run git {cmd} init outside the sandbox once, after which git {cmd} works here"),
        ));
    }
    Ok(())
}

fn submodule(cmd: &str, args: &[OsString], repo: &dyn Repository) -> Result<(), Refusal> {
    // `git submodule [--quiet] [--cached] <verb> …`; `git submodule--helper <verb> …` is the
    // builtin the script calls, reachable directly.
    let mut i = 0;
    while i < args.len() && args[i].as_bytes().starts_with(b"-") {
        i += 1;
    }
    let Some(verb) = args.get(i).map(|a| lossy(a)) else {
        return Ok(());
    };
    let spec = Spec {
        short_value: "b",
        long_value: &[
            "--name",
            "--reference",
            "--depth",
            "--branch",
            "--ref-format",
            "--url",
            "--path",
            "--prefix",
            "--filter",
        ],
    };
    let (opts, pos) = walk(&args[i + 1..], &spec);
    let url = match verb.as_str() {
        "add" => pos.first().copied(),
        "set-url" => pos.get(1).copied(),
        // `submodule--helper clone --url <url>` stores it as the submodule's origin.
        "clone" => opts
            .iter()
            .find(|o| is_long(o, "--url", ABBREV))
            .and_then(|o| o.value),
        // These copy `.gitmodules` URLs (a work-tree file the agent writes) into the
        // repository's config and the submodules' origins.
        "init" | "sync" | "update" => {
            let urls = repo.gitmodules_urls().map_err(|why| {
                refuse(
                    "submodule-url",
                    format!("git {cmd} {verb} copies .gitmodules URLs into the repository's config, and they cannot be read ({why}); fix .gitmodules"),
                )
            })?;
            for (key, u) in urls {
                let relative = u.starts_with("./") || u.starts_with("../");
                if let Some(d) = url_danger(&u).filter(|_| !relative) {
                    return Err(refuse(
                        "submodule-url",
                        format!("git {cmd} {verb} would copy {key} = {u} from .gitmodules into the repository's config, and it is {d}; use an https:// or ssh URL, or one relative to the superproject's remote (../name)"),
                    ));
                }
            }
            None
        }
        _ => None,
    };
    if let Some(url) = url {
        let u = lossy(url);
        // `./x` and `../x` resolve against the superproject's own remote URL.
        let relative = u.starts_with("./") || u.starts_with("../");
        if let Some(d) = url_danger(&u).filter(|_| !relative) {
            return Err(refuse(
                "submodule-url",
                format!("git {cmd} {verb}: {u} is {d}; use an https:// or ssh URL, or a URL relative to the superproject's remote (../name)"),
            ));
        }
    }
    Ok(())
}

fn clone(args: &[OsString]) -> Result<(), Refusal> {
    let spec = Spec {
        short_value: "obucj",
        long_value: &[
            "--origin",
            "--branch",
            "--upload-pack",
            "--reference",
            "--reference-if-able",
            "--separate-git-dir",
            "--depth",
            "--shallow-since",
            "--shallow-exclude",
            "--template",
            "--config",
            "--server-option",
            "--jobs",
            "--filter",
            "--bundle-uri",
            "--ref-format",
        ],
    };
    let (opts, pos) = walk(args, &spec);
    for o in &opts {
        for (full, what) in catalogue::NEW_REPOSITORY_OPTIONS {
            if is_long(o, full, ABBREV) {
                return Err(refuse(
                    "clone-option",
                    format!("git clone {full} {what}; clone without it"),
                ));
            }
        }
        let is_config = o.short == Some('c') || is_long(o, "--config", ABBREV);
        if is_config {
            let spec = o.value.map(lossy).unwrap_or_default();
            let (k, v) = match spec.split_once('=') {
                Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
                None => (spec.clone(), None),
            };
            if let Some(why) = key_danger(&k, v.as_deref()) {
                return Err(refuse(
                    "clone-option",
                    format!("git clone -c {spec}: {why}, and clone writes it into the new repository's config; drop it"),
                ));
            }
        }
    }
    if let Some(url) = pos.first() {
        let u = lossy(url);
        if let Some(d) = catalogue::classify_url(&u)
            .filter(|d| *d != UrlDanger::Local)
            .and_then(|_| url_danger(&u))
        {
            return Err(refuse(
                "remote-url",
                format!("git clone {u}: {d}, stored as the new repository's origin; use an https:// or ssh URL"),
            ));
        }
    }
    Ok(())
}

/// `git push -u <repository>` (`--set-upstream`) stores `<repository>` as
/// `branch.<name>.remote`; when that is a URL rather than a remote's name, it is judged as one
/// (third red-team pass: a local path was stored this way).
fn push(args: &[OsString]) -> Result<(), Refusal> {
    let spec = Spec {
        short_value: "o",
        long_value: &["--repo", "--receive-pack", "--exec", "--push-option"],
    };
    let (opts, pos) = walk(args, &spec);
    let sets_upstream = opts
        .iter()
        .any(|o| o.short == Some('u') || is_long(o, "--set-upstream", ABBREV));
    if !sets_upstream {
        return Ok(());
    }
    let repo_opt = opts
        .iter()
        .rev()
        .find(|o| is_long(o, "--repo", ABBREV))
        .and_then(|o| o.value);
    let Some(target) = pos.first().copied().or(repo_opt) else {
        return Ok(());
    };
    let t = lossy(target);
    if is_remote_name(&t) {
        return Ok(());
    }
    match url_danger(&t) {
        Some(d) => Err(refuse(
            "remote-url",
            format!("git push -u {t}: {d}, stored as the branch's remote (branch.<name>.remote); push without -u, or add a remote with an https:// or ssh URL and push -u to its name"),
        )),
        None => Ok(()),
    }
}

fn init(args: &[OsString]) -> Result<(), Refusal> {
    let spec = Spec {
        short_value: "",
        long_value: &[
            "--template",
            "--separate-git-dir",
            "--object-format",
            "--ref-format",
            "--initial-branch",
            "--shared",
        ],
    };
    let (opts, _) = walk(args, &spec);
    for o in &opts {
        for (full, what) in catalogue::NEW_REPOSITORY_OPTIONS {
            if is_long(o, full, ABBREV) {
                return Err(refuse(
                    "init-option",
                    format!("git init {full} {what}; run git init without it"),
                ));
            }
        }
    }
    Ok(())
}

/// git's `split_cmdline` for alias values: whitespace separates words, single and double
/// quotes group, backslash escapes. `None` on an unclosed quote.
pub fn split_cmdline(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut have = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if have {
                    words.push(std::mem::take(&mut cur));
                    have = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                have = true;
            }
            (Some(q), c) if c == q => quote = None,
            (_, '\\') if quote != Some('\'') => {
                cur.push(chars.next()?);
                have = true;
            }
            (_, c) => {
                cur.push(c);
                have = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if have {
        words.push(cur);
    }
    Some(words)
}
