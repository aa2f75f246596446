//! Reading git's command line the way `git.c` does: global options first (each with its own
//! value syntax), then the subcommand word, then the subcommand's arguments.
//!
//! Nothing here touches the file system or runs git: it is the shim's hot path, so it is a
//! single pass over the arguments with no allocation beyond the result.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Where a piece of command-scope config came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigRoute {
    /// `git -c key=value`
    DashC,
    /// `git --config-env=key=VAR`
    ConfigEnv,
    /// `GIT_CONFIG_PARAMETERS` or `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>` in the environment.
    Environment,
}

impl ConfigRoute {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigRoute::DashC => "-c",
            ConfigRoute::ConfigEnv => "--config-env",
            ConfigRoute::Environment => "GIT_CONFIG_* environment",
        }
    }
}

/// One command-scope config pair as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransientConfig {
    pub key: String,
    /// `None` for `-c key` (a boolean true) or a `--config-env` variable that is not set.
    pub value: Option<String>,
    pub route: ConfigRoute,
}

/// A git command line, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// The global options exactly as given, in order (passed again to the `rev-parse` that finds
    /// the effective repository, so it sees what the call would see).
    pub globals: Vec<OsString>,
    /// `-C <path>` arguments, in order (git applies each as a `chdir`).
    pub chdirs: Vec<PathBuf>,
    /// `-c` and `--config-env` pairs.
    pub config: Vec<TransientConfig>,
    /// `--exec-path=<dir>` (the form that sets it; bare `--exec-path` only prints).
    pub exec_path: Option<OsString>,
    /// `--git-dir` / `--work-tree` given on the command line.
    pub git_dir: Option<OsString>,
    pub work_tree: Option<OsString>,
    /// The subcommand word (`None` for `git`, `git --version`, …).
    pub subcommand: Option<OsString>,
    /// The subcommand's arguments.
    pub args: Vec<OsString>,
    /// A global option git.c does not know (git prints its usage and exits 129) or that this
    /// parser does not know: everything after it is unread, so the rules refuse the call
    /// rather than guess (rule `global-option`).
    pub unknown_option: Option<OsString>,
}

/// Words git.c stops its global-option loop at and turns into commands (`git --help x`,
/// `git --version`): what follows is that command's arguments.
const COMMAND_FLAGS: &[&str] = &["--help", "-h", "--version", "-v"];

/// Global options that take no value (git.c `handle_options`).
const FLAGS: &[&str] = &[
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--bare",
    "--no-optional-locks",
    "--literal-pathspecs",
    "--no-literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-lazy-fetch",
    "--no-advice",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
];

/// Global options that take a value, as `--opt value` or `--opt=value`.
const WITH_VALUE: &[&str] = &[
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
    "--config-env",
    "--shallow-file",
];

impl Invocation {
    /// Split `args` (without `argv[0]`). `env` looks up a variable (for `--config-env`).
    pub fn parse(args: &[OsString], env: impl Fn(&str) -> Option<OsString>) -> Invocation {
        let mut inv = Invocation::default();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            let s = a.as_bytes();
            if s.first() != Some(&b'-') {
                break;
            }
            let text = a.to_string_lossy();
            if text == "-C" || text == "-c" {
                let Some(v) = args.get(i + 1) else {
                    // git: "no directory given for -C" / "-c expects a configuration string".
                    inv.globals.push(a.clone());
                    i += 1;
                    break;
                };
                inv.globals.push(a.clone());
                inv.globals.push(v.clone());
                if text == "-C" {
                    if !v.is_empty() {
                        inv.chdirs.push(PathBuf::from(v));
                    }
                } else {
                    inv.config
                        .push(split_pair(&v.to_string_lossy(), ConfigRoute::DashC));
                }
                i += 2;
                continue;
            }
            if FLAGS.contains(&text.as_ref()) || text.starts_with("--list-cmds=") {
                inv.globals.push(a.clone());
                i += 1;
                continue;
            }
            if let Some(v) = text.strip_prefix("--exec-path=") {
                inv.exec_path = Some(OsString::from(v));
                inv.globals.push(a.clone());
                i += 1;
                continue;
            }
            let (name, inline) = match text.split_once('=') {
                Some((n, v)) => (n, Some(OsString::from(v))),
                None => (text.as_ref(), None),
            };
            if WITH_VALUE.contains(&name) {
                inv.globals.push(a.clone());
                let value = match inline {
                    Some(v) => v,
                    None => match args.get(i + 1) {
                        Some(v) => {
                            inv.globals.push(v.clone());
                            i += 1;
                            v.clone()
                        }
                        None => {
                            i += 1;
                            break;
                        }
                    },
                };
                i += 1;
                match name {
                    "--git-dir" => inv.git_dir = Some(value),
                    "--work-tree" => inv.work_tree = Some(value),
                    "--config-env" => {
                        let spec = value.to_string_lossy();
                        // git splits at the last '=': key=ENVVAR.
                        let (key, var) = spec.rsplit_once('=').unwrap_or((spec.as_ref(), ""));
                        inv.config.push(TransientConfig {
                            key: key.to_owned(),
                            value: env(var).map(|v| v.to_string_lossy().into_owned()),
                            route: ConfigRoute::ConfigEnv,
                        });
                    }
                    _ => {}
                }
                continue;
            }
            // `--version`, `--help`, `-v`, `-h`: git runs that command with the rest.
            if COMMAND_FLAGS.contains(&text.as_ref()) {
                break;
            }
            // An option git does not know (git prints its usage and exits 129) — or one a
            // newer git knows and this parser does not: whatever follows it (`-c`, `-C`,
            // the subcommand) would be unread, so the call is refused, never guessed.
            inv.unknown_option = Some(a.clone());
            inv.globals.push(a.clone());
            return inv;
        }
        if i < args.len() {
            inv.subcommand = Some(args[i].clone());
            inv.args = args[i + 1..].to_vec();
        }
        inv
    }

    /// The subcommand as text (lossy), if any.
    pub fn command(&self) -> Option<String> {
        self.subcommand
            .as_deref()
            .map(|s| s.to_string_lossy().into_owned())
    }
}

/// `key=value` → pair; `key` alone means boolean true (value `None`).
pub fn split_pair(spec: &str, route: ConfigRoute) -> TransientConfig {
    match spec.split_once('=') {
        Some((k, v)) => TransientConfig {
            key: k.to_owned(),
            value: Some(v.to_owned()),
            route,
        },
        None => TransientConfig {
            key: spec.to_owned(),
            value: None,
            route,
        },
    }
}

/// The most `GIT_CONFIG_COUNT` pairs the shim reads; a larger count is refused as
/// unreadable (git itself reads every pair, so stopping early would let the rest through).
pub const CONFIG_COUNT_MAX: usize = 10_000;

/// Marks a config carrier that cannot be read.
pub const UNREADABLE: &str = "<unreadable ";

/// Command-scope config carried by the environment: `GIT_CONFIG_PARAMETERS` (git's own
/// carrier of `-c`, single-quoted `'key'='value'` or `'key=value'` words) and
/// `GIT_CONFIG_COUNT` with `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`. A carrier that cannot
/// be read is returned as one pair whose key starts with [`UNREADABLE`], which the rules
/// refuse (fail closed).
pub fn env_config(env: impl Fn(&str) -> Option<OsString>) -> Vec<TransientConfig> {
    let mut out = Vec::new();
    let pair = |k: String, v: Option<String>| TransientConfig {
        key: k,
        value: v,
        route: ConfigRoute::Environment,
    };
    if let Some(p) = env("GIT_CONFIG_PARAMETERS") {
        match parse_config_parameters(&p.to_string_lossy()) {
            Some(pairs) => out.extend(pairs.into_iter().map(|(k, v)| pair(k, v))),
            None => out.push(pair("<unreadable GIT_CONFIG_PARAMETERS>".into(), None)),
        }
    }
    if let Some(n) = env("GIT_CONFIG_COUNT") {
        let n = n.to_string_lossy();
        match n.trim().parse::<usize>() {
            Ok(n) if n > CONFIG_COUNT_MAX => out.push(pair(
                format!("<unreadable GIT_CONFIG_COUNT above {CONFIG_COUNT_MAX}>"),
                None,
            )),
            Ok(n) => {
                for i in 0..n {
                    let k = env(&format!("GIT_CONFIG_KEY_{i}"))
                        .map(|v| v.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let v = env(&format!("GIT_CONFIG_VALUE_{i}"))
                        .map(|v| v.to_string_lossy().into_owned());
                    out.push(pair(k, v));
                }
            }
            Err(_) if n.is_empty() => {}
            Err(_) => out.push(pair("<unreadable GIT_CONFIG_COUNT>".into(), None)),
        }
    }
    out
}

/// Parse git's `GIT_CONFIG_PARAMETERS`: whitespace-separated entries, each `'key'='value'`,
/// `'key'` (boolean) or the older `'key=value'`, in sq-quoting (`'\''` for a quote).
pub fn parse_config_parameters(s: &str) -> Option<Vec<(String, Option<String>)>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let sq = |i: &mut usize| -> Option<String> {
        // At a quote: read a quoted word, joining `'\''` continuations.
        let mut word = Vec::new();
        loop {
            if b.get(*i) != Some(&b'\'') {
                return None;
            }
            *i += 1;
            while *i < b.len() && b[*i] != b'\'' {
                word.push(b[*i]);
                *i += 1;
            }
            if *i >= b.len() {
                return None;
            }
            *i += 1;
            if b.get(*i) == Some(&b'\\') && b.get(*i + 1) == Some(&b'\'') {
                word.push(b'\'');
                *i += 2;
                continue;
            }
            return Some(String::from_utf8_lossy(&word).into_owned());
        }
    };
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return Some(out);
        }
        let first = sq(&mut i)?;
        if b.get(i) == Some(&b'=') {
            i += 1;
            let v = sq(&mut i)?;
            out.push((first, Some(v)));
        } else {
            match first.split_once('=') {
                Some((k, v)) => out.push((k.to_owned(), Some(v.to_owned()))),
                None => out.push((first, None)),
            }
        }
    }
}

/// Does `arg` name the long option `full` (exactly, as an unambiguous abbreviation of at least
/// `min` characters after `--` the way git's parse-options accepts it, with or without
/// `=value`)? Returns the inline value if there is one.
pub fn long_opt<'a>(arg: &'a OsStr, full: &str, min: usize) -> Option<Option<&'a OsStr>> {
    let s = arg.as_bytes();
    let body = s.strip_prefix(b"--")?;
    let (name, value) = match body.iter().position(|&c| c == b'=') {
        Some(p) => (&body[..p], Some(OsStr::from_bytes(&body[p + 1..]))),
        None => (body, None),
    };
    let full = full.strip_prefix("--").unwrap_or(full).as_bytes();
    if name.len() >= min.min(full.len()) && full.starts_with(name) && !name.is_empty() {
        Some(value)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn global_options_and_subcommand() {
        let env = |k: &str| (k == "V").then(|| OsString::from("/evil"));
        let inv = Invocation::parse(
            &os(&[
                "-C",
                "a",
                "-C",
                "",
                "--git-dir",
                "g",
                "--work-tree=w",
                "-c",
                "core.pager=less",
                "-c",
                "x.y",
                "--config-env=core.fsmonitor=V",
                "--no-pager",
                "--exec-path=/tmp/e",
                "worktree",
                "add",
                "-c",
                "x",
            ]),
            env,
        );
        assert_eq!(inv.chdirs, vec![PathBuf::from("a")]);
        assert_eq!(inv.git_dir.as_deref(), Some(OsStr::new("g")));
        assert_eq!(inv.work_tree.as_deref(), Some(OsStr::new("w")));
        assert_eq!(inv.exec_path.as_deref(), Some(OsStr::new("/tmp/e")));
        assert_eq!(inv.config.len(), 3);
        assert_eq!(inv.config[0].value.as_deref(), Some("less"));
        assert_eq!(inv.config[1].value, None);
        assert_eq!(inv.config[2].key, "core.fsmonitor");
        assert_eq!(inv.config[2].value.as_deref(), Some("/evil"));
        assert_eq!(inv.command().as_deref(), Some("worktree"));
        assert_eq!(inv.args, os(&["add", "-c", "x"]));
        // Globals are kept verbatim for the rev-parse that finds the repository.
        assert_eq!(inv.globals.len(), 14);
    }

    #[test]
    fn config_parameters_both_syntaxes() {
        let p =
            parse_config_parameters("'core.pager'='cat' 'a.b=c' 'x.y' 'q.r'='it'\\''s'").unwrap();
        assert_eq!(
            p,
            vec![
                ("core.pager".into(), Some("cat".into())),
                ("a.b".into(), Some("c".into())),
                ("x.y".into(), None),
                ("q.r".into(), Some("it's".into())),
            ]
        );
        assert!(parse_config_parameters("'unterminated").is_none());
        assert!(parse_config_parameters("bare").is_none());
    }

    #[test]
    fn abbreviated_long_options() {
        assert_eq!(
            long_opt(OsStr::new("--upload=x"), "--upload-pack", 2),
            Some(Some(OsStr::new("x")))
        );
        assert_eq!(
            long_opt(OsStr::new("--template"), "--template", 2),
            Some(None)
        );
        assert_eq!(long_opt(OsStr::new("--t"), "--template", 2), None);
        assert_eq!(long_opt(OsStr::new("--templates"), "--template", 2), None);
        assert_eq!(long_opt(OsStr::new("-t"), "--template", 2), None);
    }
}
