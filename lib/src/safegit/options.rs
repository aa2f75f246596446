//! git's own option tables, per version, and a scan of a subcommand's arguments the way
//! parse-options reads them.
//!
//! The tables are data generated from git itself, not written by hand: for every subcommand
//! and subcommand form safe-git allows, `git <cmd> --help-all` (every option with its short
//! alias and whether it takes a value: ` <x>` a separate one, `[=<x>]` / `[<x>]` only a stuck
//! one) and `git <cmd> --git-completion-helper-all` (every long name, `=` for a required value,
//! and the `--no-` forms git accepts). `suite/tests/safe_git_option_tables.rs` re-derives them
//! from every installed git and fails on any difference from the files checked in here
//! (`GITWARD_BLESS=1` rewrites them). Commands that do not parse their options with
//! parse-options (`log`'s revision and diff options, `rev-parse`, `rev-list`) are not here:
//! see [`REVISION_SEPARATE_VALUE`].
//!
//! The scan ([`scan`]) follows `parse-options.c` of both versions (`parse_long_opt`,
//! `parse_short_opt`): exact names before abbreviations, a unique prefix abbreviates (also
//! after `no-`, and `--n`/`--no`/`--no-` for any negatable option), an option that takes a
//! separate value takes the next word whatever it is (`--` and `--end-of-options` included),
//! a short option that takes a value takes the rest of its bundle or the next word. Where the
//! two versions' rules differ, a word gets every reading either would give it, and a word with
//! more than one reading is [`Word::Ambiguous`] (git errors out or picks one; safe-git refuses).

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Whether an option takes a value, as parse-options reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// No value (`--x=v` is an error).
    None,
    /// Only a stuck one: `--x=v`, `-xv` (`PARSE_OPT_OPTARG`).
    Optional,
    /// A separate one: `--x v`, `--x=v`, `-x v`, `-xv`; the next word whatever it is (required
    /// values and `PARSE_OPT_LASTARG_DEFAULT` alike: both take the next word when there is one).
    Separate,
    /// `-NUM` (`OPTION_NUMBER`): the digits of a short bundle.
    Number,
}

/// One option of one subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub short: Option<char>,
    pub long: Option<String>,
    pub arg: Arg,
    /// git accepts `--no-<long>` (not `PARSE_OPT_NONEG`).
    pub negatable: bool,
}

impl Spec {
    /// The name safe-git's checks use: `--long`, else `-s`.
    pub fn name(&self) -> String {
        match (&self.long, self.short) {
            (Some(l), _) => format!("--{l}"),
            (None, Some(s)) => format!("-{s}"),
            (None, None) => "-NUM".to_owned(),
        }
    }
}

/// One git version's tables: subcommand (or `cmd mode`) → its options in git's order.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub version: String,
    pub commands: BTreeMap<String, Vec<Spec>>,
}

/// The tables checked in, one per git version (generated, see the module documentation).
pub const DATA: &[(&str, &str)] = &[
    ("2.39.5", include_str!("options/git-2.39.5.txt")),
    ("2.47.3", include_str!("options/git-2.47.3.txt")),
];

/// Every table, parsed once.
pub fn tables() -> &'static [Table] {
    static T: OnceLock<Vec<Table>> = OnceLock::new();
    T.get_or_init(|| {
        DATA.iter()
            .map(|(v, text)| parse_table(v, text).expect("checked-in option table parses"))
            .collect()
    })
}

/// Parse the text form (`[cmd]` headers, then `<short|-> <long|-> <arg> <neg|->` per option).
pub fn parse_table(version: &str, text: &str) -> Result<Table, String> {
    let mut t = Table {
        version: version.to_owned(),
        ..Table::default()
    };
    let mut cur: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            t.commands.entry(h.to_owned()).or_default();
            cur = Some(h.to_owned());
            continue;
        }
        let bad = || format!("line {}: `{line}`", n + 1);
        let f: Vec<&str> = line.split(' ').collect();
        let [short, long, arg, neg] = f[..] else {
            return Err(bad());
        };
        let spec = Spec {
            short: match short {
                "-" => None,
                s if s.chars().count() == 2 && s.starts_with('-') => s.chars().nth(1),
                _ => return Err(bad()),
            },
            long: match long {
                "-" => None,
                l => Some(l.strip_prefix("--").ok_or_else(bad)?.to_owned()),
            },
            arg: match arg {
                "none" => Arg::None,
                "optional" => Arg::Optional,
                "separate" => Arg::Separate,
                "number" => Arg::Number,
                _ => return Err(bad()),
            },
            negatable: match neg {
                "neg" => true,
                "-" => false,
                _ => return Err(bad()),
            },
        };
        let c = cur.as_ref().ok_or_else(bad)?;
        t.commands.get_mut(c).expect("header seen").push(spec);
    }
    Ok(t)
}

/// The text form of a table (what [`parse_table`] reads).
pub fn format_table(t: &Table) -> String {
    let mut s = format!(
        "# git {} option tables, generated by suite/tests/safe_git_option_tables.rs\n\
         # (GITWARD_BLESS=1) from `git <cmd> --help-all` and `--git-completion-helper-all`.\n\
         # Do not edit: the test fails when these differ from what git prints.\n\
         # <short> <long> <none|optional|separate|number> <neg: accepts --no-<long>>\n",
        t.version
    );
    for (c, specs) in &t.commands {
        s.push_str(&format!("\n[{c}]\n"));
        for o in specs {
            s.push_str(&format!(
                "{} {} {} {}\n",
                o.short.map_or("-".to_owned(), |c| format!("-{c}")),
                o.long
                    .as_deref()
                    .map_or("-".to_owned(), |l| format!("--{l}")),
                match o.arg {
                    Arg::None => "none",
                    Arg::Optional => "optional",
                    Arg::Separate => "separate",
                    Arg::Number => "number",
                },
                if o.negatable { "neg" } else { "-" }
            ));
        }
    }
    s
}

/// One word (or word pair) of a subcommand's arguments as parse-options reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word<'a> {
    /// An option: its spec, whether negated (`--no-x`), its value if it took one (stuck or the
    /// next word), and the index of its word.
    Opt {
        spec: &'a Spec,
        negated: bool,
        value: Option<&'a str>,
        at: usize,
    },
    /// A word that is not an option: a mode, a name, a pattern, a pathspec.
    Arg(&'a str),
    /// `--` or `--end-of-options` where it ends the options (at index).
    Terminator(usize),
    /// An option git does not know here (parse-options errors out, or passes it on).
    Unknown(&'a str),
    /// A long option with more than one reading (an ambiguous abbreviation, or one the two
    /// versions read differently), or an option given a value it does not take.
    Ambiguous(&'a str),
}

/// How a long option's name (without `--`, up to `=`) resolves: every (option, negated)
/// reading either version of parse-options could give it.
pub fn resolve<'a>(specs: &'a [Spec], arg: &str) -> Vec<(&'a Spec, bool)> {
    let mut exact: Vec<(&Spec, bool)> = Vec::new();
    let mut abbrev: Vec<(&Spec, bool)> = Vec::new();
    let push = |v: &mut Vec<(&'a Spec, bool)>, s: &'a Spec, neg: bool| {
        if !v.iter().any(|(o, n)| std::ptr::eq(*o, s) && *n == neg) {
            v.push((s, neg));
        }
    };
    for s in specs {
        let Some(l) = s.long.as_deref() else { continue };
        let n = s.negatable;
        let stripped = l.strip_prefix("no-");
        if arg == l {
            push(&mut exact, s, false);
        }
        if n && arg.strip_prefix("no-") == Some(l) {
            push(&mut exact, s, true);
        }
        if n && stripped == Some(arg) {
            push(&mut exact, s, true);
        }
        if l.starts_with(arg) {
            push(&mut abbrev, s, false);
        }
        if n {
            if let Some(rest) = arg.strip_prefix("no-") {
                if l.starts_with(rest) {
                    push(&mut abbrev, s, true);
                }
                if let (Some(x), Some(p)) = (stripped, rest.strip_prefix("no-")) {
                    if x.starts_with(p) {
                        push(&mut abbrev, s, true);
                    }
                }
            }
            if "no-".starts_with(arg) {
                push(&mut abbrev, s, true);
            }
            if let Some(x) = stripped {
                if !arg.starts_with("no-") && x.starts_with(arg) {
                    push(&mut abbrev, s, true);
                }
            }
        }
    }
    // An exact name wins over every abbreviation, and the first option in git's order that
    // matches exactly is the one git takes (both versions return on it).
    if exact.is_empty() {
        abbrev
    } else {
        exact.truncate(1);
        exact
    }
}

fn is_terminator(a: &str) -> bool {
    a == "--" || a == "--end-of-options"
}

/// Read `words` as parse-options would with the options `specs`. With `stop_at_non_option`
/// (`PARSE_OPT_STOP_AT_NON_OPTION`) the first word that is not an option ends the options and
/// every later word is an [`Word::Arg`]; otherwise options and other words may mix, as git's
/// default allows.
pub fn scan<'a>(
    specs: &'a [Spec],
    words: &'a [&'a str],
    stop_at_non_option: bool,
) -> Vec<Word<'a>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if is_terminator(w) {
            out.push(Word::Terminator(i));
            out.extend(words[i + 1..].iter().map(|a| Word::Arg(a)));
            return out;
        }
        if !w.starts_with('-') || w == "-" {
            if stop_at_non_option {
                out.extend(words[i..].iter().map(|a| Word::Arg(a)));
                return out;
            }
            out.push(Word::Arg(w));
            i += 1;
            continue;
        }
        if let Some(body) = w.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let r = resolve(specs, name);
            match r[..] {
                [] => out.push(Word::Unknown(w)),
                [(spec, negated)] => {
                    let takes = !negated && matches!(spec.arg, Arg::Separate);
                    let value_ok = !negated && matches!(spec.arg, Arg::Separate | Arg::Optional);
                    if inline.is_some() && !value_ok {
                        out.push(Word::Ambiguous(w));
                    } else if takes && inline.is_none() && i + 1 < words.len() {
                        out.push(Word::Opt {
                            spec,
                            negated,
                            value: Some(words[i + 1]),
                            at: i,
                        });
                        i += 1;
                    } else {
                        out.push(Word::Opt {
                            spec,
                            negated,
                            value: inline,
                            at: i,
                        });
                    }
                }
                _ => out.push(Word::Ambiguous(w)),
            }
            i += 1;
            continue;
        }
        // A bundle of short options.
        let letters = &w[1..];
        let mut pos = 0;
        while pos < letters.len() {
            let c = letters[pos..].chars().next().expect("in bounds");
            let rest = &letters[pos + c.len_utf8()..];
            if let Some(spec) = specs.iter().find(|s| s.short == Some(c)) {
                match spec.arg {
                    Arg::Separate if rest.is_empty() && i + 1 < words.len() => {
                        out.push(Word::Opt {
                            spec,
                            negated: false,
                            value: Some(words[i + 1]),
                            at: i,
                        });
                        i += 1;
                        break;
                    }
                    Arg::Separate | Arg::Optional => {
                        out.push(Word::Opt {
                            spec,
                            negated: false,
                            value: (!rest.is_empty()).then_some(rest),
                            at: i,
                        });
                        break;
                    }
                    _ => {
                        out.push(Word::Opt {
                            spec,
                            negated: false,
                            value: None,
                            at: i,
                        });
                        pos += c.len_utf8();
                    }
                }
            } else if let Some(spec) = specs
                .iter()
                .find(|s| s.arg == Arg::Number)
                .filter(|_| c.is_ascii_digit())
            {
                let digits = letters[pos..]
                    .find(|ch: char| !ch.is_ascii_digit())
                    .unwrap_or(letters.len() - pos);
                out.push(Word::Opt {
                    spec,
                    negated: false,
                    value: Some(&letters[pos..pos + digits]),
                    at: i,
                });
                pos += digits;
            } else {
                out.push(Word::Unknown(w));
                break;
            }
        }
        i += 1;
    }
    out
}

/// The options of `cmd` (a subcommand or `cmd mode`) in every table that has them; empty when
/// no table knows the command (it does not use parse-options, or not on these versions).
pub fn specs_of(cmd: &str) -> Vec<&'static [Spec]> {
    tables()
        .iter()
        .filter_map(|t| t.commands.get(cmd).map(Vec::as_slice))
        .collect()
}

/// Options of the revision walk and the diff machinery (`setup_revisions` →
/// `handle_revision_opt`, then `diff_opt_parse`) that take a **separate** value, i.e. read
/// the next word whatever it is (`--grep -- x` greps for `--`). From git's source at v2.39.5
/// and v2.47.3 (`revision.c`, `handle_revision_opt`: every `parse_long_opt(name, argv, …)`
/// and the `argcount = 2` short forms; `diff.c`, `diff_opt_parse`'s table: the options with
/// a required value, `OPT_STRING`/`OPT_CALLBACK` without `PARSE_OPT_OPTARG`), long names and
/// short letters. `git log -h` prints none of these, so they are listed by reading the source;
/// `safe_git_option_tables.rs` checks the diff half against `git diff
/// --git-completion-helper-all` (`=` names).
pub const REVISION_SEPARATE_VALUE: &[&str] = &[
    // revision.c, handle_revision_opt: parse_long_opt(...) (v2.39.5 lines 2260-2603, v2.47.3
    // lines 2347-2690) and `-n` (2273/2358)
    "--max-count",
    "--skip",
    "-n",
    "--max-age",
    "--since",
    "--since-as-filter",
    "--after",
    "--min-age",
    "--before",
    "--until",
    "--date",
    "--author",
    "--committer",
    "--grep-reflog",
    "--grep",
    "--encoding",
    // revision.c, handle_revision_pseudo_opt: parse_long_opt (v2.39.5 2738-2747, v2.47.3
    // 2829-2839)
    "--glob",
    "--exclude",
    "--exclude-hidden",
    // diff.c, diff_opt_parse's table: short options with a required value (v2.39.5 5566-5667,
    // v2.47.3 5772-5875: OPT_INTEGER('l'), OPT_CALLBACK_F('I'/'S'/'G'), OPT_FILENAME('O'))
    "-l",
    "-I",
    "-S",
    "-G",
    "-O",
    // diff.c: long options with a required value (`git diff --git-completion-helper-all`
    // prints them with `=`; checked by safe_git_option_tables.rs)
    "--stat-width",
    "--stat-name-width",
    "--stat-graph-width",
    "--stat-count",
    "--ws-error-highlight",
    "--src-prefix",
    "--dst-prefix",
    "--line-prefix",
    "--inter-hunk-context",
    "--output-indicator-new",
    "--output-indicator-old",
    "--output-indicator-context",
    "--ignore-matching-lines",
    "--diff-algorithm",
    "--anchored",
    "--word-diff-regex",
    "--color-moved-ws",
    "--rotate-to",
    "--skip-to",
    "--find-object",
    "--diff-filter",
    "--output",
];

/// The subcommands and subcommand forms whose options the tables hold: every allow-listed one
/// that parses its options with parse-options (on a version where a form does not exist, git
/// prints no usage for it and the table has no entry).
pub const TABLE_COMMANDS: &[&str] = &[
    "blame",
    "branch",
    "cat-file",
    "check-attr",
    "check-ignore",
    "cherry",
    "clean",
    "config",
    "config get",
    "config list",
    "count-objects",
    "describe",
    "for-each-ref",
    "grep",
    "log",
    "ls-files",
    "ls-tree",
    "merge-base",
    "name-rev",
    "notes",
    "notes list",
    "range-diff",
    "reflog exists",
    "reflog list",
    "remote",
    "remote get-url",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "stash list",
    "stash show",
    "status",
    "symbolic-ref",
    "tag",
    "version",
    "worktree list",
    "worktree prune",
    "worktree remove",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn grep() -> &'static [Spec] {
        &tables()[0].commands["grep"]
    }

    #[test]
    fn every_checked_in_table_parses_and_round_trips() {
        for (v, text) in DATA {
            let t = parse_table(v, text).unwrap();
            assert!(t.commands.len() > 20, "{v}");
            assert_eq!(
                parse_table(v, &format_table(&t)).unwrap().commands,
                t.commands
            );
        }
    }

    #[test]
    fn long_options_resolve_as_parse_options_does() {
        let g = grep();
        let one = |a: &str| {
            let r = resolve(g, a);
            assert_eq!(r.len(), 1, "{a}: {r:?}");
            (r[0].0.name(), r[0].1)
        };
        assert_eq!(one("open"), ("--open-files-in-pager".into(), false));
        assert_eq!(one("no-open"), ("--open-files-in-pager".into(), true));
        assert_eq!(one("max-depth"), ("--max-depth".into(), false));
        assert_eq!(one("and"), ("--and".into(), false));
        // `--no-index` is an option of its own; exact names win over abbreviations.
        assert_eq!(one("no-index"), ("--no-index".into(), false));
        assert!(
            resolve(g, "no").len() > 1,
            "`--no` abbreviates every negation"
        );
        assert!(resolve(g, "frobnicate").is_empty());
    }

    #[test]
    fn a_value_option_takes_the_next_word_whatever_it_is() {
        let g = grep();
        let w = ["-e", "--", "-O/x", "--", "p"];
        let r = scan(g, &w, false);
        assert!(
            matches!(
                r[0],
                Word::Opt {
                    value: Some("--"),
                    ..
                }
            ),
            "{r:?}"
        );
        assert!(
            matches!(&r[1], Word::Opt { spec, value: Some("/x"), .. } if spec.name() == "--open-files-in-pager")
        );
        assert_eq!(r[2], Word::Terminator(3));
        let w = ["-ie--", "-C", "--end-of-options", "-3"];
        let r = scan(g, &w, false);
        assert!(
            matches!(
                r[1],
                Word::Opt {
                    value: Some("--"),
                    ..
                }
            ),
            "{r:?}"
        );
        assert!(
            matches!(
                r[2],
                Word::Opt {
                    value: Some("--end-of-options"),
                    ..
                }
            ),
            "{r:?}"
        );
        assert!(
            matches!(
                r[3],
                Word::Opt {
                    value: Some("3"),
                    ..
                }
            ),
            "{r:?}"
        );
    }
}
