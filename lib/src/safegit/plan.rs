//! From a command line to a plan: which git, which repository (vouched for), which
//! environment and `-c` set — or a refusal with its exit code.
//!
//! Order matters and each step fails closed: the arguments are checked first (nothing is
//! read for a refused command), then the real git is found and probed, then the repository's
//! layout is discovered the way git discovers it and every redirect is checked, then every
//! config file git could read is enumerated (includes as a superset), and only then is the
//! defused environment built from what was found.

use super::args::{self, ArgsError, GitArgs};
use super::request::argv_strings;
use super::request::{Refusal, Request};
use crate::catalogue::{loader, GitVersion, RELATIVE_WORKTREES_SINCE};
use crate::env::{find_real_git, DefuseOptions, Defused, GitProbe};
use crate::events::{Event, EventKind, Sink, Tool};
use crate::exit;
use gix::bstr::BString;
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Everything needed to start git.
#[derive(Debug, Clone)]
pub struct Plan {
    pub git: PathBuf,
    pub version: GitVersion,
    /// The repository as vouched for (`None` outside any repository).
    pub location: Option<super::locate::Located>,
    /// The config files read (includes, worktree and submodule configs), for `--explain`.
    pub config_files: Vec<PathBuf>,
    pub defused: Defused,
    /// The folder safe-git was started in (git applies the caller's `-C` itself).
    pub cwd: PathBuf,
    pub inherited: Vec<(OsString, OsString)>,
    pub args: GitArgs,
    /// The CPU bound this process (and so git) runs under ([`super::cpu`]), for `--explain`.
    pub cpu: Option<super::cpu::Bound>,
}

impl Plan {
    /// `git <caller's arguments>` in the defused environment, which carries the command-scope
    /// config in `GIT_CONFIG_PARAMETERS` as git's own `-c` would.
    pub fn command(&self) -> Command {
        let mut cmd = self.defused.command(
            &self.git,
            self.inherited.iter().cloned(),
            self.args.to_argv(),
        );
        cmd.current_dir(&self.cwd);
        cmd
    }

    /// The program, `argv` and `envp` of [`Plan::command`] as `execve` takes them: the same
    /// arguments, and the same environment std's `Command` would build (`env_clear`, then
    /// each pair in order, a later value of a name replacing an earlier one).
    #[cfg(test)]
    fn exec_parts(
        &self,
    ) -> Result<
        (
            std::ffi::CString,
            Vec<std::ffi::CString>,
            Vec<std::ffi::CString>,
        ),
        std::io::Error,
    > {
        self.exec_parts_from(self.inherited.iter().cloned())
    }

    /// [`Plan::exec_parts`] with the inherited environment handed over (`exec` gives its
    /// own away rather than copying every variable once more).
    fn exec_parts_from(
        &self,
        inherited: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<
        (
            std::ffi::CString,
            Vec<std::ffi::CString>,
            Vec<std::ffi::CString>,
        ),
        std::io::Error,
    > {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |b: &[u8]| {
            CString::new(b).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        };
        let path = c(self.git.as_os_str().as_bytes())?;
        let (cargs, _) = self.defused.config_args();
        let mut argv = Vec::with_capacity(1 + cargs.len() + self.args.rest.len() + 4);
        argv.push(path.clone());
        for a in cargs.iter().chain(self.args.to_argv().iter()) {
            argv.push(c(a.as_bytes())?);
        }
        let env = self.defused.child_env(inherited);
        let mut envp = Vec::with_capacity(env.len());
        for (i, (k, v)) in env.iter().enumerate() {
            if env[i + 1..].iter().any(|(later, _)| later == k) {
                continue; // std's map keeps the last value of a name
            }
            // Room for the NUL `CString::new` appends: the buffer becomes the string, uncopied.
            let mut kv = Vec::with_capacity(k.len() + v.len() + 2);
            kv.extend_from_slice(k.as_bytes());
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(
                CString::new(kv)
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?,
            );
        }
        Ok((path, argv, envp))
    }

    /// Replace this process by git: what [`Plan::command`]`.exec()` does (`chdir` to the
    /// folder safe-git started in, an empty signal mask and `SIGPIPE` at its default, then
    /// `execve`), without std's environment map (a `BTreeMap` of `OsString`s built and
    /// flattened again: ≈ 0.15 M instructions a call). A `git` that is not an absolute path
    /// goes through `Command` (its `PATH` search). Returns only on failure.
    pub fn exec(mut self) -> std::io::Error {
        use nix::sys::signal::{signal, sigprocmask, SigHandler, SigSet, SigmaskHow, Signal};
        use std::os::unix::process::CommandExt;
        if !self.git.is_absolute() {
            return self.command().exec();
        }
        let inherited = std::mem::take(&mut self.inherited);
        let (path, argv, envp) = match self.exec_parts_from(inherited) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if let Err(e) = std::env::set_current_dir(&self.cwd) {
            return e;
        }
        let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
        // SAFETY: restoring the default disposition runs no handler code.
        unsafe {
            let _ = signal(Signal::SIGPIPE, SigHandler::SigDfl);
        }
        match nix::unistd::execve(&path, &argv, &envp) {
            Err(e) => std::io::Error::from(e),
            Ok(never) => match never {},
        }
    }

    /// Append a `git_allowed` event if the request names an event log.
    pub fn log(&self, req: &Request) {
        if let Some(path) = &req.events {
            let mut e = Event::new(
                Tool::SafeGit,
                EventKind::GitAllowed,
                format!("git {}", self.args.subcommand),
            )
            .with("argv", argv_strings(&req.args))
            .with("git", self.git.display().to_string())
            .with("git_version", self.version.to_string());
            if let Some(l) = &self.location {
                e = e.repo(&l.git_dir);
            }
            if let Err(err) = Sink::File(path.clone()).emit(&e) {
                eprintln!("safe-git: {}: cannot write event: {err}", path.display());
            }
        }
    }

    pub fn to_json(&self) -> Value {
        let cmd = self.command();
        let env: Vec<Value> = self
            .defused
            .child_env(self.inherited.iter().cloned())
            .into_iter()
            .filter(|(k, _)| {
                !self
                    .inherited
                    .iter()
                    .any(|(a, b)| a == k && self.inherited_value(a) == Some(b))
            })
            .map(|(k, v)| json!({ "name": k.to_string_lossy(), "value": v.to_string_lossy() }))
            .collect();
        let removed: Vec<String> = self
            .inherited
            .iter()
            .filter(|(k, _)| !self.defused.keeps(k))
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        // `--explain` output: URLs (in -c pairs, argv) lose their userinfo.
        let mut v = json!({
            "git": self.git,
            "git_version": self.version.to_string(),
            "cwd": self.cwd,
            "repository": self.location.as_ref().map(|l| l.to_json()),
            "config_files": self.config_files,
            "config": self.defused.config_pairs().iter().map(|(k, v)| json!({"key": shown_key(k), "value": v})).collect::<Vec<_>>(),
            "env_set": env,
            "env_removed": removed,
            "argv": cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "cpu_limit": self.cpu.map(|b| b.to_json()),
        });
        crate::url::redact_json(&mut v);
        v
    }

    fn inherited_value(&self, k: &OsStr) -> Option<&OsString> {
        self.inherited
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v)
    }

    pub fn to_human(&self) -> String {
        use std::fmt::Write;
        let v = self.to_json();
        let mut s = String::new();
        let _ = writeln!(s, "git:        {} ({})", self.git.display(), self.version);
        let _ = writeln!(s, "cwd:        {}", self.cwd.display());
        if let Some(b) = &self.cpu {
            let _ = writeln!(s, "cpu limit:  {}", b.describe());
        }
        match &self.location {
            Some(l) => {
                let _ = writeln!(s, "git dir:    {}", l.git_dir.display());
                let _ = writeln!(s, "common dir: {}", l.common_dir.display());
                if let Some(w) = &l.work_tree {
                    let _ = writeln!(s, "work tree:  {}", w.display());
                }
            }
            None => {
                let _ = writeln!(s, "repository: none found");
            }
        }
        let _ = writeln!(s, "config files read ({}):", self.config_files.len());
        for f in &self.config_files {
            let _ = writeln!(s, "  {}", f.display());
        }
        let _ = writeln!(
            s,
            "command-scope config ({}):",
            self.defused.config_pairs().len()
        );
        for (k, val) in self.defused.config_pairs() {
            let _ = writeln!(s, "  {}={val}", shown_key(k));
        }
        let _ = writeln!(s, "environment set:");
        for e in v["env_set"].as_array().into_iter().flatten() {
            let name = e["name"].as_str().unwrap_or("");
            // git's form of the command-scope config listed above (`Defused::child_env`).
            let value = match name {
                "GIT_CONFIG_PARAMETERS" => "<the command-scope config above>",
                _ => e["value"].as_str().unwrap_or(""),
            };
            let _ = writeln!(s, "  {name}={value}");
        }
        let _ = writeln!(s, "environment removed:");
        for e in v["env_removed"].as_array().into_iter().flatten() {
            let _ = writeln!(s, "  {}", e.as_str().unwrap_or(""));
        }
        crate::url::redact_userinfo(&s).into_owned()
    }
}

/// Most command-scope values safe-git passes. git's handling of `-c` pairs grows roughly
/// quadratically (4.7 s for 12,000 pairs on 2.47), so a repository defining thousands of
/// driver names is refused rather than turned into a hang; honest repositories need a few
/// dozen.
const MAX_CONFIG_PAIRS: usize = 2048;

/// Subcommands that take git's diff options (`--no-ext-diff`, `--no-textconv`) right after
/// the subcommand.
const DIFF_OPTION_COMMANDS: &[&str] = &[
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "log",
    "show",
];

/// Subcommands that take `--no-textconv` but not `--no-ext-diff`.
const TEXTCONV_ONLY_COMMANDS: &[&str] = &["blame", "annotate", "grep"];

/// Where in the subcommand's arguments git's diff options go (`stash show`, `reflog show`
/// take them after the mode word), or `None` when the form takes none.
fn diff_options_at(args: &GitArgs) -> Option<usize> {
    match (args.subcommand.as_str(), args.mode()) {
        (s, _) if DIFF_OPTION_COMMANDS.contains(&s) => Some(0),
        ("stash", Some("show" | "list")) => Some(1),
        ("reflog", Some("show")) => Some(1),
        ("reflog", Some("list" | "exists")) => None,
        ("reflog", _) => Some(0),
        _ => None,
    }
}

/// git's reading of a boolean config value (`git_parse_maybe_bool`, then an integer): a key
/// without `=` is true; `None` for what git would reject.
fn git_bool(v: Option<&str>) -> Option<bool> {
    let Some(v) = v else { return Some(true) };
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        n => n.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// Is `arg` (before `--`) git's `--<full>` or an abbreviation parse-options would expand to it
/// (at least `--<min>`, so `--text`, an option of its own, is not taken for `--textconv`)?
fn names_option(arg: &str, full: &str, min: usize) -> bool {
    arg.len() >= min && full.starts_with(arg)
}

/// Remove the caller's `--<full>` (and its abbreviations) before `--`.
fn strip_option(rest: &mut Vec<OsString>, full: &str, min: usize) {
    let end = rest
        .iter()
        .position(|a| a == "--" || a == "--end-of-options")
        .unwrap_or(rest.len());
    let mut i = 0;
    let mut stop = end;
    while i < stop {
        if rest[i].to_str().is_some_and(|a| names_option(a, full, min)) {
            rest.remove(i);
            stop -= 1;
        } else {
            i += 1;
        }
    }
}

/// Diff drivers the repository defines and safe-git empties (`diff.<driver>.textconv`,
/// `diff.<driver>.command`, `diff.external`) have no inert `-c` value: git takes an empty one
/// as a program to run and dies ("unable to read files to diff", "external diff died"). So
/// where a driver is emptied, safe-git also passes `--no-textconv` / `--no-ext-diff` and drops
/// the caller's `--textconv` / `--ext-diff`: git then shows exactly what it shows without
/// those drivers (`cat-file --textconv` becomes `cat-file -p`, which is what git prints for a
/// blob without a driver). A driver the owner's config defines keeps its value and needs no
/// flag. The two forms that run a diff with textconv internally and take no such flag
/// (`range-diff`'s own `git log -p`, `status -v`) are refused instead of left to die.
///
/// `diff.external` is handled here too: the repository sets it → the owner's value is
/// re-asserted if the owner has one; with no owner's value, or nothing configured by the
/// owner at all (then the flag changes no output, and it holds even if an agent plants a
/// `diff.external` after safe-git read the config), `--no-ext-diff` is passed.
fn diff_drivers(
    defused: &mut Defused,
    args: &mut GitArgs,
    view: &super::locate::ConfigView,
) -> Result<(), Refusal> {
    use crate::catalogue::ConfigKey;
    let external = loader::DIFF_EXTERNAL.display();
    let is_ext = |k: &str| {
        ConfigKey::parse(k)
            .is_some_and(|c| loader::DIFF_EXTERNAL.matches(&c) || loader::DIFF_COMMAND.matches(&c))
    };
    // A per-driver key the repository sets and the owner's config does not: emptied.
    let emptied = |pattern: &crate::catalogue::KeyPattern| {
        view.values.iter().any(|v| {
            !v.trusted
                && ConfigKey::parse(&v.key).is_some_and(|c| pattern.matches(&c))
                && !view.trusted.contains_key(&v.key.to_ascii_lowercase())
        })
    };
    let textconv_off = emptied(&loader::DIFF_TEXTCONV);
    let untrusted_external = view
        .values
        .iter()
        .any(|v| !v.trusted && v.key.eq_ignore_ascii_case(&external));
    let owner_external = view.trusted.get(&external.to_ascii_lowercase());
    if let (true, Some(owner)) = (untrusted_external, owner_external) {
        defused.set_config(external.clone(), owner.clone());
    }
    let ext_off =
        (untrusted_external && owner_external.is_none()) || emptied(&loader::DIFF_COMMAND);
    let owner_configures = view.values.iter().any(|v| v.trusted && is_ext(&v.key));
    let sub = args.subcommand.clone();
    let refuse = |what: &str| {
        Err(Refusal::new(
            exit::CONFIG,
            "config",
            format!("the repository defines a diff.<driver>.textconv that safe-git empties, and {what}; run `log -p` or `diff` instead (safe-git passes --no-textconv there)"),
        ))
    };
    if textconv_off {
        match sub.as_str() {
            "range-diff" => {
                return refuse("range-diff runs its own `git log -p`, which would die on it")
            }
            "status" => {
                let verbose = args
                    .rest
                    .iter()
                    .filter_map(|a| a.to_str())
                    .take_while(|a| *a != "--")
                    .any(|a| {
                        names_option(a, "--verbose", 5)
                            || (a.starts_with('-') && !a.starts_with("--") && a.contains('v'))
                    });
                if verbose {
                    return refuse(
                        "status -v shows the staged diff through it and takes no --no-textconv",
                    );
                }
            }
            "cat-file" => {
                let asks =
                    |a: &OsString| a.to_str().is_some_and(|a| names_option(a, "--textconv", 7));
                if args.rest.iter().any(asks) {
                    if args
                        .rest
                        .iter()
                        .any(|a| a.to_str().is_some_and(|a| a.starts_with("--batch")))
                    {
                        return refuse("cat-file --batch --textconv has no form without it");
                    }
                    for a in args.rest.iter_mut() {
                        if asks(a) {
                            *a = OsString::from("-p");
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // `<subcommand> -h` alone prints the usage and runs nothing; an inserted word would make
    // `-h` an option of the subcommand (`grep --no-textconv -h`: "no pattern given").
    if args.rest.len() == 1 && args.rest[0] == "-h" {
        return Ok(());
    }
    // `stash show` with no option shows what `stash.showStat`/`stash.showPatch` say (default:
    // the stat only); git applies them only when no option is given (`builtin/stash.c`), so
    // an inserted `--no-ext-diff` alone would switch it to a patch. Say the default out loud
    // first (found by the argv differential's long run); with both off git prints nothing.
    if sub == "stash"
        && args.mode() == Some("show")
        && !args
            .rest
            .iter()
            .skip(1)
            .any(|a| a.to_str().is_none_or(|a| a.starts_with('-')))
    {
        // The caller's `-c` wins over every file (git reads the command line last).
        let given = |key: &str| -> Option<Option<String>> {
            let mut found = None;
            let mut it = args.globals.iter().filter_map(|a| a.to_str());
            while let Some(a) = it.next() {
                let pair = match a.strip_prefix("-c") {
                    Some("") => it.next(),
                    Some(p) => Some(p),
                    None => None,
                };
                if let Some(pair) = pair {
                    let (k, v) = match pair.split_once('=') {
                        Some((k, v)) => (k, Some(v.to_owned())),
                        None => (pair, None),
                    };
                    if k.eq_ignore_ascii_case(key) {
                        found = Some(v);
                    }
                }
            }
            found
        };
        let last = |key: &str| match given(key) {
            Some(v) => git_bool(v.as_deref()),
            None => view
                .values
                .iter()
                .rev()
                .find(|v| v.key.eq_ignore_ascii_case(key))
                .and_then(|v| git_bool(v.value.as_deref())),
        };
        let stat = last("stash.showstat").unwrap_or(true);
        let patch = last("stash.showpatch").unwrap_or(false);
        if !stat && !patch {
            return Ok(());
        }
        if stat {
            args.rest.insert(1, OsString::from("--stat"));
        }
        if patch {
            args.rest.insert(1, OsString::from("-p"));
        }
    }
    // A terminator can be an option's value (`diff --grep --end-of-options --ext-diff`: git
    // reads `--ext-diff` as an option), so a driver flag after one cannot be stripped as a
    // pathspec or revision would be: refused while that driver is emptied (found by the argv
    // differential's long run).
    let after_terminator = |full: &str, min: usize| {
        args.rest
            .iter()
            .filter_map(|a| a.to_str())
            .skip_while(|a| *a != "--" && *a != "--end-of-options")
            .skip(1)
            .any(|a| names_option(a, full, min))
    };
    if (ext_off && after_terminator("--ext-diff", 5))
        || (textconv_off && after_terminator("--textconv", 7))
    {
        return Err(Refusal::new(
            exit::CONFIG,
            "config",
            "the repository defines a diff driver that safe-git empties, and --ext-diff or --textconv comes after -- or --end-of-options (git may take the terminator as an option's value and the flag as an option): put the flag before the terminator or leave it out".to_owned(),
        ));
    }
    let at = diff_options_at(args);
    let textconv_at = at.or_else(|| TEXTCONV_ONLY_COMMANDS.contains(&sub.as_str()).then_some(0));
    if let (true, Some(at)) = (textconv_off, textconv_at) {
        strip_option(&mut args.rest, "--textconv", 7);
        args.rest.insert(at, OsString::from("--no-textconv"));
    }
    let Some(at) = at else { return Ok(()) };
    if ext_off {
        strip_option(&mut args.rest, "--ext-diff", 5);
        args.rest.insert(at, OsString::from("--no-ext-diff"));
    } else if !owner_configures && !args.rest.iter().any(|a| a == "--ext-diff") {
        args.rest.insert(at, OsString::from("--no-ext-diff"));
    }
    Ok(())
}

/// The repository cannot make `status` or `diff` hide work: every key of
/// [`crate::catalogue::WORK_HIDING_KEYS`] an untrusted file sets gets the owner's value, else
/// the catalogue's; every `submodule.<name>.ignore` the repository sets (its config, or the
/// work tree's `.gitmodules`) gets the owner's value, else `none`; the untracked cache is
/// never trusted. On a repository that sets none of these, git's output is unchanged.
fn owner_view(
    defused: &mut Defused,
    view: &super::locate::ConfigView,
    work_tree: Option<&Path>,
) -> Result<(), Refusal> {
    use crate::catalogue::{ConfigKey, SAFE_GIT_ALWAYS_SET, WORK_HIDING_KEYS};
    for (k, v) in SAFE_GIT_ALWAYS_SET {
        defused.set_config(*k, *v);
    }
    let owner_or = |key: &str, fallback: &str| {
        view.trusted
            .get(&key.to_ascii_lowercase())
            .cloned()
            .unwrap_or_else(|| fallback.to_owned())
    };
    for (key, fallback) in WORK_HIDING_KEYS {
        if view
            .values
            .iter()
            .any(|v| !v.trusted && v.key.eq_ignore_ascii_case(key))
        {
            defused.set_config(*key, owner_or(key, fallback));
        }
    }
    let is_ignore = |k: &str| {
        ConfigKey::parse(k).is_some_and(|c| {
            c.section.eq_ignore_ascii_case("submodule")
                && c.subsection.is_some()
                && c.name.eq_ignore_ascii_case("ignore")
        })
    };
    // Keys as bytes: a submodule's name is any bytes to git, and the override must name the
    // same submodule.
    let mut keys: Vec<BString> = view
        .values
        .iter()
        .filter(|v| !v.trusted && is_ignore(&v.key))
        .map(|v| v.raw_key.clone())
        .collect();
    // `.gitmodules` in the work tree (git reads it before the index or HEAD copy).
    if let Some(w) = work_tree {
        if let Some(bytes) = read_gitmodules(&w.join(".gitmodules")) {
            keys.extend(gitmodules_ignore_keys(&bytes));
        }
    }
    for key in keys {
        if key.contains(&b'\n') || key.contains(&0) {
            continue;
        }
        // The owner's value for exactly this key (subsection compared byte for byte).
        let owner = view
            .values
            .iter()
            .rev()
            .find(|v| v.trusted && v.raw_key == key)
            .map(|v| v.value.clone().unwrap_or_else(|| "true".to_owned()));
        let value = owner.unwrap_or_else(|| "none".to_owned());
        defused.set_config(key, value);
    }
    Ok(())
}

/// Every `submodule.<name>.ignore` key a `.gitmodules` file sets, as git reads it (git's own
/// parser, [`crate::config::parse_bytes`]: `[submodule.A]` is the submodule `a`,
/// `[submodule.a "b"]` is `a.b`, and what git reads before a bad line counts), spelled so that
/// `git -c <key>=<value>` overrides it: `-c` folds the section and the variable name to lower
/// case and keeps the name as written, byte for byte (a name that is not UTF-8 too: `-c` and
/// `GIT_CONFIG_PARAMETERS` carry any byte but NUL; a name holding a newline is never one git
/// reads from a file).
pub fn gitmodules_ignore_keys(bytes: &[u8]) -> Vec<BString> {
    let raw = crate::config::parse_bytes(bytes, crate::config::Dialect::Any);
    let mut keys: Vec<BString> = Vec::new();
    for e in &raw.entries {
        if e.section != "submodule" || e.name != "ignore" {
            continue;
        }
        let Some(name) = &e.subsection else {
            continue;
        };
        let key: BString = [b"submodule.".as_slice(), name, b".ignore"].concat().into();
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// A `-c` key for `--explain`: as is when it is UTF-8, else with its bytes escaped (`\xff`),
/// so that the name shown is the one passed (a lossy U+FFFD would hide which it is).
fn shown_key(k: &[u8]) -> String {
    match std::str::from_utf8(k) {
        Ok(s) => s.to_owned(),
        Err(_) => k.escape_ascii().to_string(),
    }
}

/// `.gitmodules` read without following a link (git refuses a `.gitmodules` link too).
fn read_gitmodules(path: &Path) -> Option<Vec<u8>> {
    let md = std::fs::symlink_metadata(path).ok()?;
    if !md.is_file() {
        return None;
    }
    std::fs::read(path).ok()
}

/// Build the plan for a request, or refuse.
pub fn plan(req: &Request) -> Result<Plan, Refusal> {
    let parsed = args::parse(&req.args).map_err(|e| {
        let code = match e {
            ArgsError::NoSubcommand => exit::USAGE,
            _ => exit::NOT_ALLOWED,
        };
        Refusal::new(code, argv_strings(&req.args).join(" "), e)
    })?;
    for var in ["HOME", "XDG_CONFIG_HOME"] {
        if let Some(v) = req.var(var).filter(|v| !v.is_empty()) {
            if Path::new(v).is_relative() {
                return Err(Refusal::new(
                    exit::NOT_ALLOWED,
                    var,
                    format!(
                        "{} is relative: git would read global config from wherever it runs (the repository); set an absolute path",
                        v.to_string_lossy()
                    ),
                ));
            }
        }
    }
    let git = find_real_git(req.git.as_deref(), req.var("PATH"))
        .map_err(|e| Refusal::new(exit::SETUP, "git", e))?;
    let probe = GitProbe::probe_cached(&git, req.cache_dir.as_deref())
        .map_err(|e| Refusal::new(exit::SETUP, git.display().to_string(), e))?;
    let version = probe.version();

    // The folder git will look from: the process's, then every -C in turn.
    let mut start = req.cwd.clone();
    for c in &parsed.chdirs {
        start = start.join(c);
    }
    let located = super::locate::locate(req, &parsed, &start)?;

    let view = super::locate::enumerate(req, &probe, located.as_ref())?;

    if let Some(l) = &located {
        super::locate::check_worktree_forms(&parsed, l, &start)?;
    }
    if let Some(l) = &located {
        if !args::reads_config_only(&parsed.subcommand) {
            special_files(req, l, &view)?;
        }
    }
    if parsed.subcommand == "worktree"
        && parsed.mode() == Some("prune")
        && version < RELATIVE_WORKTREES_SINCE
    {
        if let Some(l) = &located {
            if let Some(rel) = l.relative_worktree_entries.first() {
                return Err(Refusal::new(
                    exit::LAYOUT,
                    rel.display().to_string(),
                    format!("holds a relative gitdir; git {version} would prune the entry (git ≥ 2.48 understands it)"),
                ));
            }
        }
    }

    let mut ceilings: Vec<PathBuf> = req
        .var("GIT_CEILING_DIRECTORIES")
        .map(|v| {
            std::env::split_paths(v)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    if let Some(parent) = located
        .as_ref()
        .and_then(|l| l.top().parent().map(Path::to_path_buf))
    {
        ceilings.push(parent);
    }
    let mut keep = Vec::new();
    for k in ["GIT_DIR", "GIT_WORK_TREE"] {
        if req.var(k).is_some() {
            keep.push(k.to_owned());
        }
    }
    let opts = DefuseOptions {
        allow_protocols: String::new(),
        read_only: true,
        ceilings,
        system_config: Some(probe.system_config.clone()),
        keep,
        ..DefuseOptions::new(version)
    };
    let mut defused = Defused::new(opts);
    defused
        .neutralise_untrusted(
            view.values
                .iter()
                .map(|v| (v.raw_key.as_slice(), v.value.as_deref(), v.trusted)),
        )
        .map_err(|e| Refusal::new(exit::CONFIG, "config", e))?;
    defused.reassert_trusted(&view.trusted);
    let mut parsed = parsed;
    diff_drivers(&mut defused, &mut parsed, &view)?;
    owner_view(
        &mut defused,
        &view,
        located.as_ref().and_then(|l| l.work_tree.as_deref()),
    )?;
    if defused.config_pairs().len() > MAX_CONFIG_PAIRS {
        return Err(Refusal::new(
            exit::CONFIG,
            "config",
            format!(
                "{} command-scope values would be needed to neutralise every program-running name the configuration defines; more than {MAX_CONFIG_PAIRS} (git slows down quadratically with them)",
                defused.config_pairs().len()
            ),
        ));
    }
    if args::reads_config_only(&parsed.subcommand) {
        // `git config` reads files and runs nothing; the -c set would show up in its output.
        defused = defused.without_config();
        if parsed.subcommand == "var" {
            defused.pass_through(crate::catalogue::ENV_REPORTED_BY_VAR);
            // The pager variables are the caller's now, so a repository's `pager.var` with its
            // `core.pager` would start that pager on a terminal. `--no-pager` cannot stop it
            // without changing the output (git then sets GIT_PAGER=cat, which `git var
            // GIT_PAGER` prints); `pager.var=false` is passed only where the repository
            // sets either key, so honest repositories see git's own output.
            let untrusted_pager = view.values.iter().any(|v| {
                !v.trusted
                    && (v.key.eq_ignore_ascii_case("pager.var")
                        || v.key.eq_ignore_ascii_case("core.pager"))
            });
            if untrusted_pager {
                defused.set_config("pager.var", "false");
            }
        }
    }
    Ok(Plan {
        git,
        version,
        location: located,
        config_files: view.files,
        defused,
        cwd: req.cwd.clone(),
        inherited: req.env.clone(),
        args: parsed,
        cpu: req.cpu,
    })
}

/// Refuse, in one line, where git would block on a FIFO (or read a device) it opens by
/// name: a file the config names by path (`core.excludesFile`, `blame.ignoreRevsFile`,
/// `commit.template`, `mailmap.file`, … [`crate::catalogue::PATH_KEYS`], a link to one
/// included), and `.gitignore`, `.gitattributes`, `.mailmap`, `.gitmodules` at the top of the
/// work tree ([`crate::catalogue::OPENED_BY_NAME`]; git opens those without following a link).
/// A host script's `safe-git status` then ends instead of hanging (seventh red-team pass,
/// R7-4), and any FIFO, socket or device where git opens files of the git dir by name
/// (R8-3). Only `lstat`/`stat` and listings: nothing is opened. A `.gitignore` in a subfolder
/// and a loose object are not looked for here (that needs the walk `wt-check check` does).
fn special_files(
    req: &Request,
    l: &super::locate::Located,
    view: &super::locate::ConfigView,
) -> Result<(), Refusal> {
    let refuse = |p: &Path, what: String| {
        Refusal::new(
            exit::LAYOUT,
            p.display().to_string(),
            format!("{what}: git's blocking open of it would hang; move it aside (wt-check check --restore) or make it a file"),
        )
    };
    if let Some(top) = &l.work_tree {
        for n in crate::catalogue::OPENED_BY_NAME
            .iter()
            .filter(|n| **n != "HEAD")
        {
            // git follows a link at `.gitmodules` (R11-9): a link into `/dev` or `/proc`
            // or to a FIFO blocks as a FIFO there does.
            let p = top.join(n);
            if let Some(kind) = crate::audit::special::blocking(&p) {
                return Err(refuse(&p, format!("a {kind} where git opens {n} by name")));
            }
        }
    }
    // The git dir and the common dir: every file git opens there by name is a blocking
    // open (`packed-refs`, `info/exclude`, `info/attributes`, `shallow`,
    // `objects/info/alternates`, a loose ref, a reflog — eighth red-team pass, R8-3).
    // Listed by type (`d_type`), nothing opened: the top level, `info/`, `objects/info/` and
    // `objects/pack/`, and `refs/` and `logs/` whole. Loose objects are not listed (one
    // folder per id prefix: 256 listings on every call).
    let mut dirs = vec![l.git_dir.clone()];
    if l.common_dir != l.git_dir {
        dirs.push(l.common_dir.clone());
    }
    // Submodule git dirs git enters (`status` reads a submodule's `HEAD` and index: R9-5).
    dirs.extend(l.submodule_git_dirs.iter().cloned());
    for d in &dirs {
        for flat in ["", "info", "objects/info", "objects/pack"] {
            let dir = if flat.is_empty() {
                d.clone()
            } else {
                d.join(flat)
            };
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue; // missing: git finds nothing there either
            };
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                if let Some(kind) = crate::audit::special::special_kind(&ft) {
                    if kind == "socket" && e.file_name() == crate::audit::special::FSMONITOR_SOCKET
                    {
                        continue;
                    }
                    return Err(refuse(&e.path(), format!("a {kind} in the git dir")));
                }
            }
        }
        for deep in ["refs", "logs"] {
            let sp = crate::audit::special::sweep(&d.join(deep));
            if let Some((p, kind)) = sp.found.first() {
                if *kind == crate::audit::special::REF_LINK {
                    return Err(Refusal::new(
                        exit::LAYOUT,
                        p.display().to_string(),
                        format!(
                            "a {kind} in the git dir: {}; move it aside (wt-check check --restore)",
                            crate::audit::special::harm(kind)
                        ),
                    ));
                }
                return Err(refuse(p, format!("a {kind} in the git dir")));
            }
            if let Some((p, why)) = sp.incomplete {
                return Err(Refusal::new(
                    exit::LAYOUT,
                    p.display().to_string(),
                    format!("{why}: not looked through for a FIFO git would open"),
                ));
            }
        }
    }
    let home = req.var("HOME").map(PathBuf::from);
    let named = crate::named_paths::named(
        view.values
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_deref())),
        l.top(),
        home.as_deref(),
    );
    for n in named {
        let system = ["/dev", "/proc", "/sys"]
            .iter()
            .any(|d| n.path.starts_with(d));
        if system || !crate::named_paths::opened_as_file(n.row) {
            continue;
        }
        if let Some(sp) = crate::named_paths::special_at(&n.path) {
            let what = match &sp.link_to {
                Some(t) => format!("a link to a {} ({})", sp.kind, t.display()),
                None => format!("a {}", sp.kind),
            };
            return Err(refuse(
                &n.path,
                format!("{what} where `{}` names a file", n.key),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod redaction_tests {
    use super::Refusal;

    #[test]
    fn a_refusal_prints_no_credential() {
        let r = Refusal::new(
            crate::exit::SETUP,
            "remote.o.url",
            "https://alice:s3cr3t@host/r is refused",
        );
        let s = r.to_string();
        assert!(
            !s.contains("s3cr3t") && s.contains("https://***@host/r"),
            "{s}"
        );
    }
}

#[cfg(test)]
mod gitmodules_tests {
    use super::gitmodules_ignore_keys;

    /// The names git reads (`git config -f .gitmodules --list` prints `submodule.sub.ignore`
    /// and `submodule.a.b.ignore` for these headers); `scan::differential` checks it against
    /// git on generated files.
    #[test]
    fn ignore_keys_name_the_submodules_git_reads() {
        let keys = gitmodules_ignore_keys(
            b"[submodule.Sub]\n\tignore = all\n[submodule.a \"b\"]\n\tIgnore = dirty\n\
              [submodule \"Q\\\"t\"]\n\tignore\n[submodule \"x\"]\n\tpath = x\n",
        );
        assert_eq!(
            keys,
            [
                "submodule.sub.ignore",
                "submodule.a.b.ignore",
                "submodule.Q\"t.ignore"
            ]
        );
        // What git reads before a bad line counts (git may act on it before dying).
        let keys = gitmodules_ignore_keys(b"[submodule \"s\"]\n\tignore = all\n[bad\n");
        assert_eq!(keys, ["submodule.s.ignore"]);
        // A name that is not UTF-8 is kept byte for byte (`-c` carries it).
        assert_eq!(
            gitmodules_ignore_keys(b"[submodule \"x\xff\"]\n\tignore = all\n"),
            [b"submodule.x\xff.ignore".as_slice()]
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Plan::exec` hands `execve` what `Plan::command().exec()` would: the same program and
    /// arguments, and the same environment as std builds it (a name given twice keeps its
    /// last value), in a repository and with an environment that has duplicates, a defused
    /// variable and a `=` in a value.
    #[test]
    fn exec_parts_are_what_command_would_exec() {
        let Some(g) = ["/usr/local/bin/git", "/usr/bin/git"]
            .map(Path::new)
            .into_iter()
            .find(|g| g.exists())
        else {
            assert!(std::env::var_os("CI").is_none(), "no git to plan for");
            eprintln!("SKIPPED: no git to plan for");
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        let st = Command::new(g)
            .args(["init", "-q"])
            .arg(&repo)
            .env("HOME", t.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(st.success());
        let env: Vec<(OsString, OsString)> = [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", t.path().to_str().unwrap()),
            ("LANG", "C"),
            ("LANG", "C.UTF-8"),
            ("GIT_EXTERNAL_DIFF", "/tmp/x"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("ODD", "a=b=c"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        let req = Request {
            git: Some(g.to_path_buf()),
            args: ["status", "--short"].map(OsString::from).to_vec(),
            cwd: repo.clone(),
            env,
            cache_dir: Some(t.path().join("cache")),
            events: None,
            cpu: None,
        };
        let plan = plan(&req).unwrap();
        let (path, argv, envp) = plan.exec_parts().unwrap();
        let cmd = plan.command();
        assert_eq!(path.as_bytes(), g.as_os_str().as_encoded_bytes());
        let want: Vec<&[u8]> = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(OsStr::as_encoded_bytes)
            .collect();
        assert_eq!(argv.iter().map(|a| a.as_bytes()).collect::<Vec<_>>(), want);
        let mut got: Vec<Vec<u8>> = envp.iter().map(|e| e.as_bytes().to_vec()).collect();
        got.sort();
        let mut want: Vec<Vec<u8>> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some([k.as_encoded_bytes(), b"=", v?.as_encoded_bytes()].concat()))
            .collect();
        want.sort();
        assert_eq!(got, want);
        assert!(got.iter().any(|e| e == b"LANG=C.UTF-8"));
        assert!(!got.iter().any(|e| e == b"LANG=C"));
        assert!(!got.iter().any(|e| e.starts_with(b"GIT_EXTERNAL_DIFF=")));
        assert!(got.iter().any(|e| e.starts_with(b"GIT_CONFIG_PARAMETERS=")));
        assert_eq!(cmd.get_current_dir(), Some(repo.as_path()));
    }
}
