//! git's command line as safe-git sees it: global options, the subcommand, its arguments —
//! and the allow-list every call must pass before git starts.
//!
//! The allow-list is deliberately narrow: inspection and clean-up subcommands a host-side
//! script needs over an untrusted repository. Anything else — an alias, a subcommand that
//! writes, fetches or edits, an option that names a program — is refused with the rule that
//! refused it. Options that only *enable* a surface the defused environment already disarms
//! (`--ext-diff`, `--textconv`, `--show-signature`) stay allowed, so scripts keep working.

use super::options::{self, Word};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Why a command line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("no subcommand given")]
    NoSubcommand,
    #[error("`{0}` is not on safe-git's allow-list (aliases and write, network and editor commands are refused)")]
    Subcommand(String),
    #[error("global option `{0}` is refused: {1}")]
    GlobalOption(String, &'static str),
    #[error("global option `{0}` needs a value")]
    MissingValue(String),
    #[error("`git {0}` option `{1}` is refused: {2}")]
    Option(String, String, &'static str),
    #[error("`git {0}`: {1}")]
    Form(String, &'static str),
    #[error("`-c {0}` sets a program-running key; safe-git accepts -c only for keys outside the catalogue")]
    ConfigKey(String),
    #[error("argument is not valid UTF-8; safe-git checks every argument as text")]
    NotUtf8,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitArgs {
    /// Every argument before the subcommand, as given (passed to git unchanged).
    pub globals: Vec<OsString>,
    /// `-C` paths in order (each relative to the previous one).
    pub chdirs: Vec<PathBuf>,
    pub git_dir: Option<PathBuf>,
    pub work_tree: Option<PathBuf>,
    /// `-c key=value` / `--config-env=key=var` keys given by the caller.
    pub config_keys: Vec<String>,
    pub subcommand: String,
    /// The subcommand's own arguments (passed to git unchanged).
    pub rest: Vec<OsString>,
}

impl GitArgs {
    /// All arguments for git, in order: globals, subcommand, rest.
    pub fn to_argv(&self) -> Vec<OsString> {
        let mut v = self.globals.clone();
        v.push(OsString::from(&self.subcommand));
        v.extend(self.rest.iter().cloned());
        v
    }

    /// The subcommand's first argument when it names a mode (`worktree list`, `stash show`).
    pub fn mode(&self) -> Option<&str> {
        self.rest.first().and_then(|a| a.to_str())
    }
}

/// Global options that take a separate value (`-C dir`, `--git-dir dir` …).
const GLOBAL_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--attr-source",
];

/// Global options allowed as they are.
const GLOBAL_FLAGS: &[&str] = &[
    "--no-pager",
    "-P",
    "-p",
    "--paginate",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
];

/// Parse git's global options and find the subcommand. `config_allowed` decides whether a
/// caller's `-c` key may pass (keys of the catalogue never do).
pub fn parse(args: &[OsString]) -> Result<GitArgs, ArgsError> {
    let mut out = GitArgs::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_str().ok_or(ArgsError::NotUtf8)?;
        if !a.starts_with('-') {
            out.subcommand = a.to_owned();
            for r in &args[i + 1..] {
                r.to_str().ok_or(ArgsError::NotUtf8)?;
            }
            out.rest = args[i + 1..].to_vec();
            check_subcommand(&out)?;
            return Ok(out);
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (a, None),
        };
        match name {
            "--exec-path" => {
                return Err(ArgsError::GlobalOption(
                    a.into(),
                    "it changes where git finds its programs",
                ))
            }
            "--html-path" | "--man-path" | "--info-path" | "--list-cmds" | "--version" | "-v"
            | "--help" | "-h" => {
                return Err(ArgsError::GlobalOption(
                    a.into(),
                    "use `safe-git version` or git itself for this",
                ))
            }
            "--super-prefix" => return Err(ArgsError::GlobalOption(a.into(), "internal option")),
            "--attr-source" => {
                return Err(ArgsError::GlobalOption(
                    a.into(),
                    "attributes come from the repository as git reads them",
                ))
            }
            _ => {}
        }
        if GLOBAL_WITH_VALUE.contains(&name) {
            let (value, consumed) = match inline {
                Some(v) => (v.to_owned(), 1),
                None => {
                    let v = args
                        .get(i + 1)
                        .ok_or_else(|| ArgsError::MissingValue(a.into()))?;
                    (v.to_str().ok_or(ArgsError::NotUtf8)?.to_owned(), 2)
                }
            };
            match name {
                "-C" => out.chdirs.push(PathBuf::from(&value)),
                "--git-dir" => out.git_dir = Some(PathBuf::from(&value)),
                "--work-tree" => out.work_tree = Some(PathBuf::from(&value)),
                "-c" => {
                    let key = value.split_once('=').map_or(value.as_str(), |(k, _)| k);
                    check_config_key(key)?;
                    out.config_keys.push(key.to_owned());
                }
                "--config-env" => {
                    let key = value.rsplit_once('=').map_or(value.as_str(), |(k, _)| k);
                    check_config_key(key)?;
                    out.config_keys.push(key.to_owned());
                }
                _ => {}
            }
            out.globals.extend(args[i..i + consumed].iter().cloned());
            i += consumed;
            continue;
        }
        if GLOBAL_FLAGS.contains(&a) {
            out.globals.push(args[i].clone());
            i += 1;
            continue;
        }
        return Err(ArgsError::GlobalOption(a.into(), "unknown global option"));
    }
    Err(ArgsError::NoSubcommand)
}

fn check_config_key(key: &str) -> Result<(), ArgsError> {
    if crate::catalogue::is_dangerous(key) {
        return Err(ArgsError::ConfigKey(key.to_owned()));
    }
    Ok(())
}

/// The allow-list: subcommands and, per subcommand, the forms that are inspection or clean-up.
pub const ALLOWED: &[&str] = &[
    "status",
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "log",
    "show",
    "shortlog",
    "blame",
    "annotate",
    "grep",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "cat-file",
    "for-each-ref",
    "show-ref",
    "branch",
    "tag",
    "describe",
    "merge-base",
    "name-rev",
    "count-objects",
    "check-ignore",
    "check-attr",
    "symbolic-ref",
    "worktree",
    "config",
    "stash",
    "remote",
    "version",
    "reflog",
    "submodule",
    "cherry",
    "clean",
    "show-branch",
    "notes",
    "range-diff",
    "var",
];

/// What a subcommand's git can reach beyond the git dir it runs in: the input of how much of
/// the layout safe-git reads and vouches for before it ([`reach`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// git may run a git process in a submodule (`status`'s dirty check), or load a
    /// submodule's repository in process (`--submodule=log`, `submodule.recurse`): the
    /// submodule's config and layout then matter, so every submodule git dir is found (the
    /// gitlinks of the index, `modules/`), vouched for and its config enumerated.
    pub submodules: bool,
    /// git may run in another linked worktree (`worktree remove` runs `git status` there, which
    /// reads that worktree's `config.worktree`), or acts on the worktree entries themselves
    /// (`worktree list/prune/remove`): every worktree entry is read and checked, and every
    /// `config.worktree` enumerated.
    pub other_worktrees: bool,
}

impl Reach {
    /// Everything: the conservative answer, and the one for a subcommand the table lacks.
    pub const ALL: Reach = Reach {
        submodules: true,
        other_worktrees: true,
    };
    const SUBMODULES: Reach = Reach {
        submodules: true,
        other_worktrees: false,
    };
    /// The git dir it runs in, its config (common and own `config.worktree`) and objects only.
    const OWN: Reach = Reach {
        submodules: false,
        other_worktrees: false,
    };
}

/// Per subcommand of [`ALLOWED`] (one row each, a test holds it to that): what its git can
/// reach ([`Reach`]), and why. Read against git 2.39–2.47's sources (`builtin/*.c`,
/// `submodule.c`, `diff-lib.c`). A subcommand marked `OWN` has no code path into a submodule
/// or another worktree under any option safe-git lets through and any config the repository
/// sets; where that cannot be argued for every option, the row stays conservative.
pub const REACH: &[(&str, Reach, &str)] = &[
    ("status", Reach::SUBMODULES, "runs `git status` in every populated submodule to tell whether it is modified (`is_submodule_modified`), and `status.submoduleSummary` runs `git log` there"),
    ("diff", Reach::SUBMODULES, "the work-tree diff runs `git status` in submodules (dirty check); `--submodule=log` / `diff.submodule` loads the submodule's repository"),
    ("diff-tree", Reach::SUBMODULES, "`--submodule=log` / `diff.submodule` loads the submodule's repository in process"),
    ("diff-index", Reach::SUBMODULES, "compares with the work tree: `git status` in submodules (dirty check); `--submodule=log`"),
    ("diff-files", Reach::SUBMODULES, "compares with the work tree: `git status` in submodules (dirty check); `--submodule=log`"),
    ("log", Reach::SUBMODULES, "`-p --submodule=log` / `diff.submodule` loads the submodule's repository in process"),
    ("show", Reach::SUBMODULES, "as log: `-p --submodule=log` / `diff.submodule`"),
    ("shortlog", Reach::SUBMODULES, "conservative: parses the whole diff option set of the revision machinery"),
    ("blame", Reach::OWN, "blames one blob path of this repository's history (a path inside a submodule is not in its trees); no child git, no submodule repository"),
    ("annotate", Reach::OWN, "as blame (the same builtin, another output format)"),
    ("grep", Reach::SUBMODULES, "the repository's `submodule.recurse` turns on `--recurse-submodules`, which greps each submodule's repository in process"),
    ("rev-parse", Reach::OWN, "revisions, paths and the layout of this repository only; `--show-superproject-working-tree` runs `ls-files --stage` in the enclosing superproject, outwards, which no submodule scan covers either way"),
    ("rev-list", Reach::OWN, "a revision walk that shows no diff (rev-list refuses `-p`); `--objects` does not follow gitlinks (not objects of this repository)"),
    ("ls-files", Reach::SUBMODULES, "conservative: `-m` compares each gitlink with the submodule's HEAD, read from the submodule's git dir (`--recurse-submodules` itself is refused)"),
    ("ls-tree", Reach::OWN, "lists tree objects of this repository; a gitlink is printed as its commit id"),
    ("cat-file", Reach::OWN, "objects of this repository; `--textconv`/`--filters` use this repository's attributes and config"),
    ("for-each-ref", Reach::OWN, "refs of this repository; `%(worktreepath)` reads the worktrees' HEADs in process (no config, no program)"),
    ("show-ref", Reach::OWN, "refs of this repository"),
    ("branch", Reach::OWN, "listing forms only: refs and commits of this repository; the worktrees' HEADs read in process for `+`/`*`"),
    ("tag", Reach::OWN, "listing forms only: refs, tag objects (`-v`: gpg, neutralised by name like any program)"),
    ("describe", Reach::SUBMODULES, "`--dirty` refreshes the index and diffs it with the work tree (`git status` in submodules); `--broken` runs `git diff-index`"),
    ("merge-base", Reach::OWN, "commit graph of this repository"),
    ("name-rev", Reach::OWN, "refs and commits of this repository"),
    ("count-objects", Reach::OWN, "object folders of this repository"),
    ("check-ignore", Reach::OWN, "exclude files and the index of this repository (a path inside a submodule is refused by git, in process)"),
    ("check-attr", Reach::OWN, "attribute files of this repository"),
    ("symbolic-ref", Reach::OWN, "the reading form only: one ref of this repository"),
    ("worktree", Reach::ALL, "acts on the worktree entries (list, prune, remove); remove runs `git status` in the other worktree and checks its submodules"),
    ("config", Reach::OWN, "reads the config files of this repository (the enumeration below covers them), runs nothing"),
    ("stash", Reach::SUBMODULES, "`stash show` runs a diff (`--submodule=log` / `diff.submodule`)"),
    ("remote", Reach::OWN, "reads the remotes of this repository's config; no network form is allowed"),
    ("version", Reach::OWN, "prints git's version"),
    ("reflog", Reach::SUBMODULES, "`reflog show` is `log -g` (`-p --submodule=log`)"),
    ("submodule", Reach::SUBMODULES, "`submodule status` runs git in every populated submodule"),
    ("cherry", Reach::SUBMODULES, "conservative: diffs every commit for its patch id"),
    ("clean", Reach::SUBMODULES, "conservative: the dry run walks the work tree and looks into nested repositories"),
    ("show-branch", Reach::OWN, "commit graph and refs of this repository, no diff"),
    ("notes", Reach::OWN, "`notes list` only: the notes ref of this repository"),
    ("range-diff", Reach::SUBMODULES, "runs `git log -p` over both ranges"),
    ("var", Reach::OWN, "prints variables of this repository's config and environment"),
];

/// What `subcommand`'s git can reach ([`REACH`]); [`Reach::ALL`] for one the table lacks.
pub fn reach(subcommand: &str) -> Reach {
    REACH
        .iter()
        .find(|(s, _, _)| *s == subcommand)
        .map_or(Reach::ALL, |(_, r, _)| *r)
}

/// Long options refused everywhere in a subcommand's arguments (before `--`), with why.
/// Matched the way git's parse-options matches them: any prefix of the name counts (git
/// accepts unique abbreviations), so `--open-files-in-p` is refused like the full name.
const REFUSED_LONG: &[(&str, &str)] = &[
    ("--help", "it starts a man or web viewer; use -h"),
    ("--upload-pack", "it names a program to run"),
    ("--receive-pack", "it names a program to run"),
    ("--exec", "it names a program to run"),
    (
        "--recurse-submodules",
        "submodule recursion runs git in submodules with write side effects",
    ),
    ("--open-files-in-pager", "it opens files in a program"),
];

/// Is `name` (`--xyz`, without `=value`) `full` or an abbreviation git would expand to it?
fn abbreviates(name: &str, full: &str) -> bool {
    name.len() > 2 && full.starts_with(name)
}

fn globally_refused(opt: &str) -> Option<&'static str> {
    if !opt.starts_with("--") {
        return None;
    }
    // `--submodule=diff` runs `git diff` inside every folder the shown commits record as a
    // submodule, with that repository's own drivers, which nothing here enumerates.
    if opt == "--submodule=diff" {
        return Some("it runs git diff inside submodule folders the commits name, with their drivers; use --submodule=short or log");
    }
    REFUSED_LONG
        .iter()
        .find(|(full, _)| abbreviates(opt, full))
        .map(|(_, why)| *why)
}

fn opt_name(a: &str) -> &str {
    if a.starts_with("--") {
        a.split_once('=').map_or(a, |(n, _)| n)
    } else {
        a
    }
}

fn is_terminator(a: &str) -> bool {
    a == "--" || a == "--end-of-options"
}

/// Could git still be waiting for this option word's value? A long option without `=`, or
/// any bundle of short options (its last letter may take the next word): parse-options and
/// revision.c then take the next word as the value, whatever it is.
fn may_want_value(a: &str) -> bool {
    a.starts_with('-') && a != "-" && !(a.starts_with("--") && a.contains('='))
}

/// Where the subcommand's options end: the first `--` / `--end-of-options` that git cannot
/// have taken as the value of the option before it.
///
/// git hands an option that takes a value the next word even when that word is `--` or
/// `--end-of-options` (`grep -e -- -Ocmd` searches for `--` and opens `cmd`; `clean -ne --
/// --no-dry-run -f` deletes; `notes --ref -- add` adds a note), and only the *next*
/// terminator ends its options. Which options take a value differs per subcommand and per
/// version, so a terminator right after an option word that may still want its value is read
/// as that value here, and the scan goes on: conservative, a pathspec after `-p --` is then
/// checked like an option.
fn options_end(rest: &[OsString]) -> usize {
    let mut prev: Option<&str> = None;
    for (i, a) in rest.iter().enumerate() {
        let a = a.to_str().unwrap_or("");
        if is_terminator(a) && !prev.is_some_and(may_want_value) {
            return i;
        }
        prev = Some(a);
    }
    rest.len()
}

/// The subcommand's arguments up to where its options end ([`options_end`]).
fn options(rest: &[OsString]) -> impl Iterator<Item = &str> {
    rest[..options_end(rest)].iter().filter_map(|a| a.to_str())
}

/// The subcommand's arguments up to the first `--` / `--end-of-options`, for the checks whose
/// allow-list holds only options that take no separate value: an option before the first
/// terminator is then either allowed (and cannot have swallowed it) or refused.
fn options_before_first_terminator(rest: &[OsString]) -> impl Iterator<Item = &str> {
    rest.iter()
        .filter_map(|a| a.to_str())
        .take_while(|a| !is_terminator(a))
}

/// The words after the first `--` / `--end-of-options` (see
/// [`options_before_first_terminator`]).
fn after_first_terminator(rest: &[OsString]) -> &[OsString] {
    match rest
        .iter()
        .position(|a| a.to_str().is_some_and(is_terminator))
    {
        Some(at) => &rest[at + 1..],
        None => &[],
    }
}

fn check_subcommand(a: &GitArgs) -> Result<(), ArgsError> {
    let sub = a.subcommand.as_str();
    if !ALLOWED.contains(&sub) {
        return Err(ArgsError::Subcommand(sub.to_owned()));
    }
    let refuse =
        |opt: &str, why: &'static str| Err(ArgsError::Option(sub.to_owned(), opt.to_owned(), why));
    for opt in options(&a.rest) {
        let name = if opt == "--submodule=diff" {
            opt
        } else {
            opt_name(opt)
        };
        if let Some(why) = globally_refused(name) {
            return refuse(opt, why);
        }
    }
    match sub {
        "grep" => {
            // git's reading first (its table: `-e` and `-f` take the next word whatever it
            // is, `--open` abbreviates `--open-files-in-pager`), then the conservative one
            // below for words the table does not resolve.
            let words = words_of(&a.rest);
            with_tables(sub, &words, false, |read| {
                for w in read {
                    if let Word::Opt {
                        spec,
                        negated: false,
                        at,
                        ..
                    } = w
                    {
                        if spec.name() == "--open-files-in-pager" {
                            return refuse(words[*at], "it opens files in a program");
                        }
                    }
                }
                Ok(())
            })?;
            for opt in options(&a.rest) {
                // `-O`, `-Ovim`, or a bundle of short options holding `O` (`-iO`).
                let short_o = !opt.starts_with("--") && opt.starts_with('-') && opt.contains('O');
                if short_o {
                    return refuse(opt, "it opens files in a program");
                }
            }
            Ok(())
        }
        "branch" => check_listing(a, BRANCH_LIST_OPTIONS),
        "tag" => check_listing(a, TAG_LIST_OPTIONS),
        "worktree" => match a.mode() {
            Some("list") | Some("prune") => Ok(()),
            Some("remove") => {
                for opt in options_before_first_terminator(&a.rest[1..]) {
                    if opt.starts_with('-') && !matches!(opt, "-f" | "--force") {
                        return refuse(opt, "only --force is allowed with worktree remove");
                    }
                }
                Ok(())
            }
            _ => Err(ArgsError::Form(sub.into(), "only `worktree list`, `worktree remove` and `worktree prune` are allowed")),
        },
        "stash" => match a.mode() {
            Some("list") => Ok(()),
            Some("show") => {
                // `--include-untracked` and `--only-untracked` together: plain git stops with
                // a usage error, but 2.47.3 with the `--no-ext-diff` safe-git may add aborts
                // on a double free instead (found by the argv differential). Refused, so the
                // answer is an error under every git, as git's own is.
                let words = words_of(&a.rest[1..]);
                with_tables("stash show", &words, false, |read| {
                    let (mut include, mut only) = (false, false);
                    for w in read {
                        if let Word::Opt { spec, negated, .. } = w {
                            match spec.name().as_str() {
                                "--include-untracked" => include = !negated,
                                "--only-untracked" => only = !negated,
                                _ => {}
                            }
                        }
                    }
                    if include && only {
                        return refuse(
                            "--only-untracked",
                            "git refuses --include-untracked with --only-untracked (and 2.47.3 aborts on it)",
                        );
                    }
                    Ok(())
                })
            }
            _ => Err(ArgsError::Form(sub.into(), "only `stash list` and `stash show` are allowed")),
        },
        "remote" => match (a.mode(), a.rest.len()) {
            (None, _) | (Some("-v" | "--verbose"), 1) | (Some("get-url"), _) => Ok(()),
            _ => Err(ArgsError::Form(sub.into(), "only `remote`, `remote -v` and `remote get-url` are allowed (no network, no writes)")),
        },
        "symbolic-ref" => {
            // An allow-list, not a deny-list: git takes `--del`/`--d` for `--delete` and
            // `-qd` for `-q -d`.
            let positional = options_before_first_terminator(&a.rest)
                .filter(|o| !o.starts_with('-'))
                .count()
                + after_first_terminator(&a.rest).len();
            for opt in options_before_first_terminator(&a.rest).filter(|o| o.starts_with('-')) {
                if !matches!(
                    opt,
                    "-q" | "--quiet" | "--short" | "--recurse" | "--no-recurse"
                ) {
                    return refuse(
                        opt,
                        "symbolic-ref may only read (-q, --short, --[no-]recurse)",
                    );
                }
            }
            if positional > 1 {
                return Err(ArgsError::Form(sub.into(), "symbolic-ref with a target writes a ref; only the reading form is allowed"));
            }
            Ok(())
        }
        "config" => check_config(a),
        "reflog" => {
            // `git reflog <log options> expire` still runs expire on git ≥ 2.40 (subcommands
            // are found after unknown options), so the writing modes are refused anywhere,
            // after `--` too.
            for opt in a.rest.iter().filter_map(|x| x.to_str()) {
                if matches!(opt, "expire" | "delete" | "drop") {
                    return Err(ArgsError::Form(sub.into(), "only the reading forms (`reflog`, `reflog show`, `reflog list`, `reflog exists`) are allowed"));
                }
            }
            Ok(())
        }
        "submodule" => check_submodule(a),
        "cherry" => {
            for opt in options_before_first_terminator(&a.rest).filter(|o| o.starts_with('-')) {
                if !matches!(opt_name(opt), "-v" | "--abbrev") {
                    return refuse(opt, "only -v and --abbrev are allowed with cherry");
                }
            }
            Ok(())
        }
        "clean" => check_clean(a),
        "notes" => {
            // `notes [--ref <ref>] [list [<object>]]`, read with git's table (`--ref` takes
            // the next word whatever it is; abbreviations such as `--re`); the subcommand is
            // the first word that is not an option (`PARSE_OPT_SUBCOMMAND_OPTIONAL`), and
            // after a terminator git drops it and reads the next word as the subcommand.
            let words = words_of(&a.rest);
            with_tables(sub, &words, true, |read| {
                let mut it = read.iter();
                while let Some(w) = it.next() {
                    match w {
                        Word::Opt {
                            spec,
                            negated: false,
                            ..
                        } if spec.name() == "--ref" => {}
                        Word::Opt { at, .. } => {
                            return refuse(words[*at], "only --ref is allowed with `notes list`")
                        }
                        Word::Unknown(o) | Word::Ambiguous(o) => return Err(unknown(sub, o)),
                        Word::Arg("list") => return Ok(()),
                        Word::Arg(_) => {
                            return Err(ArgsError::Form(sub.into(), "only `notes list` is allowed"))
                        }
                        Word::Terminator(_) => {
                            return match it.next() {
                                None | Some(Word::Arg("list")) => Ok(()),
                                _ => Err(ArgsError::Form(
                                    sub.into(),
                                    "only `notes list` is allowed",
                                )),
                            };
                        }
                    }
                }
                Ok(())
            })
        }
        "var" => {
            for opt in options_before_first_terminator(&a.rest).filter(|o| o.starts_with('-')) {
                if !matches!(opt, "-l") {
                    return refuse(opt, "only -l is allowed with var");
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `git submodule` in its reading form: `submodule [-q] [status [--cached] [--recursive]
/// [--] [<path>…]]` (no subcommand means `status`). It runs `git submodule--helper status`,
/// which runs `git describe` / `git rev-parse` (and itself, `--recursive`) in each populated
/// submodule under the same defused config (git passes the `-c` set on to the children).
fn check_submodule(a: &GitArgs) -> Result<(), ArgsError> {
    let sub = "submodule";
    let mut seen_status = false;
    for opt in options_before_first_terminator(&a.rest) {
        if !opt.starts_with('-') {
            if !seen_status && opt != "status" {
                return Err(ArgsError::Form(
                    sub.into(),
                    "only `submodule status` (or `submodule` alone) is allowed",
                ));
            }
            seen_status = true;
            continue;
        }
        let ok = matches!(opt, "-q" | "--quiet")
            || (seen_status && matches!(opt, "--cached" | "--recursive"));
        if !ok {
            return Err(ArgsError::Option(
                sub.into(),
                opt.into(),
                "only -q, and --cached / --recursive after status, are allowed",
            ));
        }
    }
    if !seen_status && !after_first_terminator(&a.rest).is_empty() {
        return Err(ArgsError::Form(
            sub.into(),
            "only `submodule status` (or `submodule` alone) is allowed",
        ));
    }
    Ok(())
}

/// Every reading of the subcommand's arguments by git's own option table for `cmd`, one per
/// git version safe-git has a table of ([`options`]); `check` must pass on each. No table at
/// all (never the case for the commands that call this: `safe_git_option_tables.rs` fails
/// first) is a refusal, not a pass.
fn with_tables(
    cmd: &str,
    words: &[&str],
    stop_at_non_option: bool,
    mut check: impl FnMut(&[Word<'_>]) -> Result<(), ArgsError>,
) -> Result<(), ArgsError> {
    let tables = options::specs_of(cmd);
    if tables.is_empty() {
        return Err(ArgsError::Form(
            cmd.into(),
            "safe-git has no option table for this command",
        ));
    }
    for specs in tables {
        check(&options::scan(specs, words, stop_at_non_option))?;
    }
    Ok(())
}

fn words_of(rest: &[OsString]) -> Vec<&str> {
    rest.iter().filter_map(|x| x.to_str()).collect()
}

/// An option word git does not know here, or reads more than one way: refused by the checks
/// that allow-list options (git errors out on it anyway, or passes it on to another parser).
fn unknown(sub: &str, w: &str) -> ArgsError {
    ArgsError::Option(
        sub.into(),
        w.into(),
        "not an option of this command in git's table, or an ambiguous abbreviation",
    )
}

/// `git clean` only as a dry run: after git's own reading of the options (its table: `-n` /
/// `--dry-run` and `--no-dry-run` in order, abbreviations, bundles, `-e <pattern>` taking the
/// next word whatever it is), the dry run must be on, and only the options that choose what
/// would be listed are allowed.
fn check_clean(a: &GitArgs) -> Result<(), ArgsError> {
    let sub = "clean";
    let why = "clean is allowed only as a dry run (-n) with -d, -x, -X, -q, -f, -e";
    let words = words_of(&a.rest);
    with_tables(sub, &words, false, |read| {
        let mut dry = false;
        for w in read {
            match w {
                Word::Opt {
                    spec, negated, at, ..
                } => match (spec.name().as_str(), *negated) {
                    ("--dry-run", n) => dry = !n,
                    ("--quiet" | "--force", _) | ("-d" | "-x" | "-X" | "--exclude", false) => {}
                    _ => return Err(ArgsError::Option(sub.into(), words[*at].into(), why)),
                },
                Word::Unknown(o) | Word::Ambiguous(o) => return Err(unknown(sub, o)),
                Word::Arg(_) | Word::Terminator(_) => {}
            }
        }
        if !dry {
            return Err(ArgsError::Form(
                sub.into(),
                "clean is allowed only as a dry run: add -n / --dry-run",
            ));
        }
        Ok(())
    })
}

/// The options (git's names: `--long`, or `-s` when there is no long one) allowed in the
/// listing forms of `branch` and `tag`, and whether each may also be given negated.
const BRANCH_LIST_OPTIONS: &[(&str, bool)] = &[
    ("--list", false),
    ("--all", false),
    ("--remotes", false),
    ("--verbose", true),
    ("--show-current", false),
    ("--ignore-case", true),
    ("--color", true),
    ("--column", true),
    ("--omit-empty", true),
    ("--abbrev", true),
    ("--quiet", true),
    ("--contains", false),
    ("--no-contains", false),
    ("--merged", false),
    ("--no-merged", false),
    ("--points-at", true),
    ("--sort", true),
    ("--format", true),
];
const TAG_LIST_OPTIONS: &[(&str, bool)] = &[
    ("--list", false),
    ("-n", false),
    ("--ignore-case", true),
    ("--color", true),
    ("--column", true),
    ("--omit-empty", true),
    ("--contains", false),
    ("--no-contains", false),
    ("--merged", false),
    ("--no-merged", false),
    ("--points-at", true),
    ("--sort", true),
    ("--format", true),
];

/// The options that put `branch` / `tag` in listing mode when set at the end of parsing
/// (`builtin/branch.c`: `filter.with_commit || filter.no_commit || filter.reachable_from ||
/// filter.unreachable_from || filter.points_at.nr`; `builtin/tag.c`: the same and
/// `filter.lines != -1`; v2.39.5 and v2.47.3). `--sort` and `--format` do not: `branch --sort
/// x new` creates `new`.
const LISTING_FILTERS: &[&str] = &[
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "-n",
];

/// `branch` and `tag` in their listing forms only, read with git's table: every option on the
/// list, and names only as patterns when listing (`--list`, or a filter still set at the end);
/// without it, a name creates a branch or tag.
fn check_listing(a: &GitArgs, allowed: &[(&str, bool)]) -> Result<(), ArgsError> {
    let sub = a.subcommand.as_str();
    let words = words_of(&a.rest);
    with_tables(sub, &words, false, |read| {
        let mut list = false;
        let mut filters: Vec<String> = Vec::new();
        let mut positional = 0;
        for w in read {
            match w {
                Word::Opt {
                    spec, negated, at, ..
                } => {
                    let name = spec.name();
                    let ok = allowed
                        .iter()
                        .any(|(n, neg_ok)| *n == name && (!negated || *neg_ok));
                    if !ok {
                        return Err(ArgsError::Option(
                            sub.into(),
                            words[*at].into(),
                            "only listing options are allowed",
                        ));
                    }
                    if name == "--list" {
                        list = true;
                    }
                    if LISTING_FILTERS.contains(&name.as_str()) {
                        filters.retain(|f| *f != name);
                        if !negated {
                            filters.push(name);
                        }
                    }
                }
                Word::Unknown(o) | Word::Ambiguous(o) => return Err(unknown(sub, o)),
                Word::Arg(_) => positional += 1,
                Word::Terminator(_) => {}
            }
        }
        if positional > 0 && !list && filters.is_empty() {
            return Err(ArgsError::Form(
                sub.into(),
                "a name without --list creates or changes a ref; only listing is allowed",
            ));
        }
        Ok(())
    })
}

/// `git config` in its reading forms, read with git's tables: the legacy form (`config
/// [<options>] <name> [<value-pattern>]`, parsed with `PARSE_OPT_STOP_AT_NON_OPTION`: after the
/// key every word is a value, options included) and `config get` / `config list` (git ≥
/// 2.46; on an older git `get` is a key without a section and git errors out).
fn check_config(a: &GitArgs) -> Result<(), ArgsError> {
    /// The read modes of the legacy form (`OPT_CMDMODE`s / action bits in builtin/config.c).
    const READ_MODES: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "--get-color",
        "--get-colorbool",
    ];
    /// Options that change where config is read from or how it is shown; allowed negated too
    /// (they are not modes: `--no-includes`, `--no-type`).
    const DISPLAY: &[&str] = &[
        "--show-origin",
        "--show-scope",
        "--null",
        "--name-only",
        "--bool",
        "--int",
        "--bool-or-int",
        "--bool-or-str",
        "--path",
        "--expiry-date",
        "--local",
        "--global",
        "--system",
        "--worktree",
        "--includes",
        "--fixed-value",
        "--all",
        "--show-names",
        "--regexp",
        "--file",
        "--blob",
        "--type",
        "--default",
        "--url",
        "--value",
    ];
    let sub = "config";
    let words = words_of(&a.rest);
    let (cmd, rest, new_mode) = match words.first().copied() {
        Some(m @ ("get" | "list")) => (format!("config {m}"), &words[1..], true),
        Some(m @ ("set" | "unset" | "rename-section" | "remove-section" | "edit")) => {
            return Err(ArgsError::Option(
                sub.into(),
                m.into(),
                "config may only read",
            ));
        }
        _ => ("config".to_owned(), &words[..], false),
    };
    let check = |read: &[Word<'_>]| -> Result<(), ArgsError> {
        let mut mode: Option<String> = None;
        let mut positional = 0;
        for w in read {
            match w {
                Word::Opt {
                    spec, negated, at, ..
                } => {
                    let name = spec.name();
                    if READ_MODES.contains(&name.as_str()) && !negated && !new_mode {
                        mode = Some(name);
                    } else if !DISPLAY.contains(&name.as_str()) {
                        return Err(ArgsError::Option(
                            sub.into(),
                            rest[*at].into(),
                            "config may only read (--get, --get-all, --get-regexp, --list, get, list)",
                        ));
                    }
                }
                Word::Unknown(o) | Word::Ambiguous(o) => return Err(unknown(sub, o)),
                Word::Arg(_) => positional += 1,
                Word::Terminator(_) => {}
            }
        }
        let max = match (new_mode, mode.is_some()) {
            (true, _) | (false, true) => 2,
            (false, false) => 1,
        };
        if positional > max {
            return Err(ArgsError::Form(
                sub.into(),
                "a key with a value sets it; config may only read",
            ));
        }
        Ok(())
    };
    if new_mode {
        // `config get` / `config list` exist on the gits whose table has them; an older git
        // reads `get` as the key of the legacy form, which has no section: git errors out
        // before it reads or writes anything.
        let mut any = false;
        for t in options::tables() {
            if let Some(specs) = t.commands.get(&cmd) {
                any = true;
                check(&options::scan(specs, rest, true))?;
            }
        }
        if !any {
            return Err(ArgsError::Form(
                sub.into(),
                "safe-git has no option table for this command",
            ));
        }
        Ok(())
    } else {
        with_tables(&cmd, rest, true, check)
    }
}
/// Does the subcommand read config only (and so must not get the `-c` set, which
/// `config --list` would print)?
///
/// `git var` is in the same class: it prints the editor, pager and config git would use and
/// runs none of them (builtin/var.c only formats strings), so it gets neither the `-c` set
/// nor the pager and editor overrides, or it would print safe-git's values instead of git's.
pub fn reads_config_only(sub: &str) -> bool {
    sub == "config" || sub == "var"
}

/// Convenience for tests and callers holding `&str`s.
pub fn parse_strs(args: &[&str]) -> Result<GitArgs, ArgsError> {
    let v: Vec<OsString> = args.iter().map(OsString::from).collect();
    parse(&v)
}

/// Is `arg` one of git's global options that take a value (for callers that scan argv)?
pub fn global_takes_value(arg: &OsStr) -> bool {
    arg.to_str().is_some_and(|a| GLOBAL_WITH_VALUE.contains(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(a: &[&str]) -> GitArgs {
        parse_strs(a).unwrap_or_else(|e| panic!("{a:?}: {e}"))
    }
    fn refused(a: &[&str]) -> ArgsError {
        parse_strs(a).expect_err(&format!("{a:?} must be refused"))
    }

    /// Every allowed subcommand has exactly one row in [`REACH`], with its argument; no row
    /// names a subcommand that is not allowed; one the table lacks gets everything.
    #[test]
    fn every_allowed_subcommand_has_one_reach_row() {
        for sub in ALLOWED {
            let rows: Vec<_> = REACH.iter().filter(|(s, _, _)| s == sub).collect();
            assert_eq!(rows.len(), 1, "{sub}: {} rows in REACH", rows.len());
            assert!(rows[0].2.len() > 10, "{sub}: the row states no reason");
        }
        for (s, _, _) in REACH {
            assert!(ALLOWED.contains(s), "{s} is in REACH but not allowed");
        }
        assert_eq!(reach("no-such-subcommand"), Reach::ALL);
        // The commands that recurse into submodules by themselves keep the scan.
        for sub in [
            "status",
            "diff",
            "diff-files",
            "diff-index",
            "submodule",
            "grep",
            "describe",
        ] {
            assert!(reach(sub).submodules, "{sub}");
        }
        assert!(reach("worktree").other_worktrees);
        assert_eq!(reach("rev-parse"), Reach::OWN);
    }

    #[test]
    fn globals_and_subcommand() {
        let g = ok(&[
            "-C",
            "repo",
            "--no-pager",
            "-c",
            "color.ui=never",
            "--git-dir=x/.git",
            "log",
            "-p",
            "--",
            "a",
        ]);
        assert_eq!(g.subcommand, "log");
        assert_eq!(g.chdirs, vec![PathBuf::from("repo")]);
        assert_eq!(g.git_dir, Some(PathBuf::from("x/.git")));
        assert_eq!(g.config_keys, vec!["color.ui"]);
        assert_eq!(g.to_argv().len(), 10);
    }

    #[test]
    fn refused_globals() {
        assert!(matches!(
            refused(&["--exec-path=/tmp", "status"]),
            ArgsError::GlobalOption(..)
        ));
        assert!(matches!(
            refused(&["-c", "core.fsmonitor=/x", "status"]),
            ArgsError::ConfigKey(_)
        ));
        assert!(matches!(
            refused(&["-c", "alias.st=!x", "status"]),
            ArgsError::ConfigKey(_)
        ));
        assert!(matches!(
            refused(&["--config-env=core.pager=X", "log"]),
            ArgsError::ConfigKey(_)
        ));
        assert!(matches!(
            refused(&["-c", "include.path=/x", "status"]),
            ArgsError::ConfigKey(_)
        ));
        assert!(matches!(
            refused(&["--attr-source=HEAD", "diff"]),
            ArgsError::GlobalOption(..)
        ));
        assert!(matches!(
            refused(&["--frobnicate", "status"]),
            ArgsError::GlobalOption(..)
        ));
        assert!(matches!(refused(&["-C"]), ArgsError::MissingValue(_)));
        assert!(matches!(refused(&["--no-pager"]), ArgsError::NoSubcommand));
    }

    #[test]
    fn subcommand_allow_list() {
        for s in [
            "status",
            "diff",
            "log",
            "show",
            "blame",
            "grep",
            "rev-parse",
            "rev-list",
            "ls-files",
            "ls-tree",
            "cat-file",
            "for-each-ref",
            "show-ref",
            "describe",
            "merge-base",
            "diff-tree",
        ] {
            ok(&[s]);
        }
        for s in [
            "commit",
            "fetch",
            "pull",
            "push",
            "checkout",
            "merge",
            "rebase",
            "am",
            "gc",
            "st",
            "help",
            "difftool",
            "archive",
            "interpret-trailers",
            "hook",
        ] {
            assert!(matches!(refused(&[s]), ArgsError::Subcommand(_)), "{s}");
        }
    }

    #[test]
    fn listing_forms_only() {
        ok(&["branch"]);
        ok(&["branch", "-a", "-v"]);
        ok(&["branch", "--list", "feat*"]);
        ok(&["branch", "--contains", "HEAD~1"]);
        ok(&["branch", "--format=%(refname)", "--sort=-committerdate"]);
        // `--sort`/`--format` do not imply listing: a name after them creates a branch or tag.
        for a in [
            &["branch", "--sort", "--end-of-options", "new"][..],
            &["branch", "--sort=x", "new"],
            &["branch", "--format=%(refname)", "new"],
            &["tag", "--sort", "x", "v9"],
            &["tag", "--format=%(refname)", "v9"],
        ] {
            assert!(matches!(refused(a), ArgsError::Form(..)), "{a:?}");
        }
        ok(&["branch", "--sort=x", "--list", "new*"]);
        // `config`'s legacy form stops at the key: what follows is a value, options included.
        for a in [
            &["config", "user.name", "--file"][..],
            &["config", "user.name", "--get"],
            &["config", "user.name", "-l"],
        ] {
            assert!(matches!(refused(a), ArgsError::Form(..)), "{a:?}");
        }
        ok(&["config", "--get", "user.name"]);
        ok(&["config", "user.name"]);
        ok(&["config", "--get-regexp", "user", "n.*"]);
        ok(&["branch", "--contains", "HEAD", "--sort=x"]);
        assert!(matches!(refused(&["branch", "new"]), ArgsError::Form(..)));
        assert!(matches!(
            refused(&["branch", "-D", "x"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["branch", "-m", "a", "b"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["branch", "--set-upstream-to=o/m"]),
            ArgsError::Option(..)
        ));
        ok(&["tag"]);
        ok(&["tag", "-l", "v1.*"]);
        ok(&["tag", "-n5"]);
        assert!(matches!(refused(&["tag", "v2"]), ArgsError::Form(..)));
        assert!(matches!(
            refused(&["tag", "-v", "v1"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["tag", "-d", "v1"]),
            ArgsError::Option(..)
        ));
    }

    #[test]
    fn config_reads_only() {
        ok(&["config", "--get", "user.name"]);
        ok(&["config", "user.name"]);
        ok(&["config", "--list", "--show-origin"]);
        ok(&["config", "-l", "-z"]);
        ok(&["config", "--get-regexp", "^remote\\."]);
        ok(&["config", "--get", "core.bare", "true"]);
        ok(&["config", "-f", "x.cfg", "--list"]);
        ok(&["config", "--file=x.cfg", "--get", "a.b"]);
        ok(&["config", "get", "user.name"]);
        ok(&["config", "list"]);
        assert!(matches!(
            refused(&["config", "user.name", "x"]),
            ArgsError::Form(..)
        ));
        assert!(matches!(
            refused(&["config", "core.hooksPath", "/x"]),
            ArgsError::Form(..)
        ));
        assert!(matches!(
            refused(&["config", "--add", "include.path", "x"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["config", "--unset", "a.b"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["config", "--edit"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["config", "set", "a.b", "c"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["config", "--replace-all", "a.b", "c"]),
            ArgsError::Option(..)
        ));
    }

    #[test]
    fn modes() {
        ok(&["worktree", "list", "--porcelain"]);
        ok(&["worktree", "remove", "--force", "../wt"]);
        ok(&["worktree", "prune", "-n", "-v"]);
        assert!(matches!(
            refused(&["worktree", "add", "../x"]),
            ArgsError::Form(..)
        ));
        assert!(matches!(
            refused(&["worktree", "move", "a", "b"]),
            ArgsError::Form(..)
        ));
        assert!(matches!(
            refused(&["worktree", "repair"]),
            ArgsError::Form(..)
        ));
        ok(&["stash", "list"]);
        ok(&["stash", "show", "-u", "-p"]);
        ok(&["stash", "show", "--only-untracked"]);
        ok(&[
            "stash",
            "show",
            "-u",
            "--no-include-untracked",
            "--only-untracked",
        ]);
        for both in [
            &["stash", "show", "-u", "--only-untracked"][..],
            &["stash", "show", "--include-untrac", "--onl", "-p"],
        ] {
            assert!(matches!(refused(both), ArgsError::Option(..)), "{both:?}");
        }
        assert!(matches!(refused(&["stash"]), ArgsError::Form(..)));
        assert!(matches!(refused(&["stash", "pop"]), ArgsError::Form(..)));
        ok(&["remote", "-v"]);
        ok(&["remote", "get-url", "origin"]);
        assert!(matches!(
            refused(&["remote", "add", "x", "ext::sh"]),
            ArgsError::Form(..)
        ));
        ok(&["symbolic-ref", "HEAD"]);
        assert!(matches!(
            refused(&["symbolic-ref", "HEAD", "refs/heads/x"]),
            ArgsError::Form(..)
        ));
    }

    #[test]
    fn read_only_forms_of_the_added_commands() {
        for a in [
            &["reflog"][..],
            &["reflog", "show", "-5"],
            &["reflog", "main"],
            &["reflog", "list"],
            &["reflog", "exists", "refs/heads/main"],
            &["submodule"],
            &["submodule", "status", "--recursive"],
            &[
                "submodule",
                "--quiet",
                "status",
                "--cached",
                "--",
                "vendor/x",
            ],
            &["cherry", "-v", "main"],
            &["clean", "-n"],
            &["clean", "-ndx"],
            &["clean", "--dry-run", "-d", "-e", "keep"],
            &["clean", "-fnd"],
            &["show-branch", "--all"],
            &["notes"],
            &["notes", "list"],
            &["notes", "--ref", "review", "list", "HEAD"],
            &["range-diff", "a...b"],
            &["var", "GIT_EDITOR"],
            &["var", "-l"],
        ] {
            ok(a);
        }
        for a in [
            &["reflog", "expire", "--all"][..],
            &["reflog", "-n1", "expire"],
            &["reflog", "delete", "HEAD@{1}"],
            &["reflog", "drop", "main"],
            &["submodule", "update"],
            &["submodule", "foreach", "sh"],
            &["submodule", "status", "--foo"],
            &["cherry", "--exec=x"],
            &["clean"],
            &["clean", "-f"],
            &["clean", "-fd"],
            &["clean", "-i"],
            &["clean", "-ni"],
            &["notes", "add", "-m", "x"],
            &["notes", "edit"],
            &["notes", "--ref=x", "remove"],
            &["var", "--frob"],
        ] {
            assert!(parse_strs(a).is_err(), "{a:?} must be refused");
        }
    }

    /// Found by `suite/tests/safe_git_argv_differential.rs` (each deletes, writes or runs
    /// under plain git, both gits): a `--` / `--end-of-options` that git takes as an
    /// option's value does not end the options; words after a real terminator still count as
    /// modes and names; option allow-lists, not deny-lists (abbreviations, bundles).
    #[test]
    fn a_terminator_taken_as_a_value_does_not_end_the_options() {
        for a in [
            &["grep", "-e", "--", "-O/tmp/x"][..],
            &[
                "grep",
                "-e",
                "--end-of-options",
                "--open-files-in-pager=/tmp/x",
            ],
            &["grep", "--max-depth", "--", "-O"],
            &["clean", "-n", "-e", "--", "--no-dry-run", "-f"],
            &["clean", "-ne", "--end-of-options", "--no-dry-run", "-f"],
            &["clean", "-n", "--exclude", "--", "--no-dry-run", "-f"],
            &["notes", "--ref", "--end-of-options", "append", "-m", "m"],
            &["notes", "--ref", "--", "add"],
            &["notes", "--", "add", "-m", "x"],
            &["notes", "--ref=x", "--", "remove"],
            &["symbolic-ref", "--", "--delete", "refs/heads/sym"],
            &["symbolic-ref", "--", "HEAD", "refs/heads/x"],
            &["symbolic-ref", "--del", "refs/heads/sym"],
            &["symbolic-ref", "--d", "refs/heads/sym"],
            &["symbolic-ref", "-qd", "refs/heads/sym"],
            &["submodule", "--", "update"],
            &["reflog", "--", "expire", "--all"],
            &["branch", "--format", "--", "-D", "x"],
            &["branch", "--sort", "--", "-m", "x", "y"],
            &["tag", "--format", "--", "-d", "v1"],
        ] {
            assert!(parse_strs(a).is_err(), "{a:?} must be refused");
        }
        for a in [
            &["grep", "-e", "x", "--", "-O"][..],
            &["grep", "--max-depth=1", "x", "--", "-O"],
            &["log", "--", "--help"],
            &["clean", "-n", "--", "-f"],
            &["clean", "-n", "-e", "x", "--", "f"],
            &["notes", "--", "list"],
            &["notes", "--ref=x", "--", "list"],
            &["symbolic-ref", "--", "HEAD"],
            &["symbolic-ref", "-q", "--short", "HEAD"],
            &["submodule", "status", "--", "sub"],
            &["branch", "--format", "%(refname)", "--list", "--", "x"],
            &["tag", "--contains"],
            &["tag", "--contains", "--", "new"],
            &[
                "submodule",
                "--quiet",
                "status",
                "--cached",
                "--",
                "vendor/x",
            ],
            &["cherry", "-v", "--", "main"],
            &["worktree", "remove", "--force", "--", "../wt"],
        ] {
            ok(a);
        }
    }

    /// The checks read the command line with git's own tables (`safegit::options`): what an
    /// option means is decided by the table, in order, abbreviations and `--no-` included.
    #[test]
    fn options_are_read_with_gits_tables() {
        for a in [
            // The last word wins: the filter is cleared, the name creates a branch.
            &["branch", "--points-at", "HEAD", "--no-points-at", "new"][..],
            // `--get` negated (2.39: an action bit) leaves no action: `a.b c` sets a value.
            &["config", "--get", "--no-get", "a.b", "c"],
            // `--no-d` abbreviates `--no-dry-run`.
            &["clean", "-n", "--no-d", "-f"],
            &["clean", "-n", "--no-dry", "-f"],
            // `-ef` is `-e f`… and `-nfe` ends with `-e`, whose value is the next word.
            &["clean", "-fe", "-n"],
            // A value option's value, then a terminator git reads as a word.
            &["branch", "--format", "--", "--", "new"],
            &["tag", "--sort", "x", "--", "v9"],
            // Abbreviations of what writes or runs.
            &["branch", "--del", "x"],
            &["grep", "--open=vi", "x"],
            &["notes", "--ref", "--", "add"],
            &["config", "--unse", "a.b"],
        ] {
            assert!(parse_strs(a).is_err(), "{a:?} must be refused");
        }
        for a in [
            // Unique abbreviations of allowed options are read as git reads them.
            &["branch", "--li", "feat*"][..],
            &["branch", "--cont", "HEAD", "x*"],
            &["branch", "--contains"],
            &["tag", "-n3", "v*"],
            &["clean", "--dry", "-d"],
            &["clean", "-e", "-f", "-n"],
            &["notes", "--ref", "--", "list"],
            &["config", "--get-r", "user"],
            &["config", "--no-includes", "--get", "a.b"],
            &["grep", "-e", "--", "x"],
        ] {
            ok(a);
        }
    }

    #[test]
    fn program_options() {
        assert!(matches!(
            refused(&["grep", "-Ovim", "x"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["grep", "-iO", "x"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(
            refused(&["grep", "--open-files-in-pager=vim", "x"]),
            ArgsError::Option(..)
        ));
        assert!(matches!(refused(&["log", "--help"]), ArgsError::Option(..)));
        assert!(matches!(
            refused(&["status", "--recurse-submodules"]),
            ArgsError::Option(..)
        ));
        // Pathspecs after `--` are not options.
        ok(&["log", "--", "--help"]);
        ok(&["grep", "-e", "x", "--", "-O"]);
        // Surfaces the defused environment disarms stay usable.
        ok(&["log", "-p", "--ext-diff", "--textconv", "--show-signature"]);
    }
}
