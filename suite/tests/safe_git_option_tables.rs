//! safe-git's option tables (`lib/src/safegit/options/git-<version>.txt`) are git's own, for
//! every installed git: this test is their generator and their check. For each command of
//! `safegit::options::TABLE_COMMANDS` it asks git for its table — `git <cmd> --help-all`
//! (every option, hidden ones too, with its short alias and ` <value>` / `[=<value>]`) and
//! `git <cmd> --git-completion-helper-all` (the long names, `=` for a required value, and
//! the `--no-` forms parse-options accepts) — cross-checks the two, and compares the result
//! with the file checked in for that version. Any difference fails; `GITWARD_BLESS=1`
//! rewrites the file instead (then review the diff). An installed git with no file fails
//! too: safe-git would check its command lines with another version's tables.

mod common;

use common::{gits, Sandbox};
use gitward::safegit::options::{
    format_table, parse_table, Arg, Spec, Table, DATA, REVISION_SEPARATE_VALUE, TABLE_COMMANDS,
};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn run(git: &Path, sb: &Sandbox, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(git)
        .args(args)
        .current_dir(sb.root().join("repo"))
        .env_clear()
        .envs(sb.env())
        .env("COLUMNS", "80")
        .output()
        .expect("run git");
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code(), s)
}

/// One option line of parse-options' usage (`    -v, --[no-]verbose    …`), or `None`.
fn parse_help_line(line: &str) -> Option<(Spec, bool, Option<String>)> {
    let s = line.strip_prefix("    ")?;
    if !s.starts_with('-') {
        return None;
    }
    if let Some(rest) = s.strip_prefix("-NUM") {
        if rest.is_empty() || rest.starts_with("  ") {
            return Some((
                Spec {
                    short: None,
                    long: None,
                    arg: Arg::Number,
                    negatable: false,
                },
                false,
                None,
            ));
        }
    }
    let mut rest = s;
    let mut short = None;
    if !rest.starts_with("--") {
        let c = rest[1..].chars().next()?;
        short = Some(c);
        rest = &rest[1 + c.len_utf8()..];
        if let Some(r) = rest.strip_prefix(", ") {
            rest = r;
        }
    }
    let mut long = None;
    let mut neg_shown = false;
    if let Some(r) = rest.strip_prefix("--") {
        let r = match r.strip_prefix("[no-]") {
            Some(r) => {
                neg_shown = true;
                r
            }
            None => r,
        };
        let end = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(r.len());
        long = Some(r[..end].to_owned());
        rest = &r[end..];
    }
    let arg = if rest.starts_with('[') {
        Arg::Optional
    } else if rest.starts_with(" <") {
        Arg::Separate
    } else if rest.starts_with(' ') && rest[1..].starts_with(|c: char| c != ' ') {
        // A literal value (`--path blob|tree`) or the description after a single space
        // (2.47 does not count `[no-]` in the width): the completion's `=` decides (below).
        Arg::None
    } else {
        Arg::None
    };
    // `alias of --x`: the arguments are those of --x.
    let alias = rest
        .trim_start()
        .strip_prefix("alias of --")
        .map(|a| a.trim().to_owned());
    Some((
        Spec {
            short,
            long,
            arg,
            negatable: false,
        },
        neg_shown,
        alias,
    ))
}

/// git's table for one command, or `None` where the command does not parse its options with
/// parse-options on this git (no usage printed for `--help-all`).
fn derive(git: &Path, sb: &Sandbox, cmd: &str) -> Result<Option<Vec<Spec>>, String> {
    let words: Vec<&str> = cmd.split(' ').collect();
    let mut args = words.clone();
    // git ≥ 2.46 parses `config`'s subcommands first and prints their usage for a bare
    // `--help-all`; after an option of the legacy form it prints the legacy table.
    if cmd == "config" {
        args.push("--null");
    }
    args.push("--help-all");
    let (code, help) = run(git, sb, &args);
    let usage = format!("usage: git {}", words[0]);
    if code != Some(129) || !help.lines().any(|l| l.starts_with(&usage)) {
        return Ok(None);
    }
    // A form git does not know prints the parent's usage: not a table of that form.
    if words.len() > 1
        && !help.contains(&format!("git {cmd}"))
        && !help.contains(&format!("git {} [{}", words[0], words[1]))
    {
        return Ok(None);
    }
    let mut specs: Vec<Spec> = Vec::new();
    let mut literal: BTreeSet<String> = BTreeSet::new();
    let mut shown_neg: Vec<bool> = Vec::new();
    let mut aliases: Vec<(usize, String)> = Vec::new();
    for line in help.lines() {
        if let Some((spec, neg, alias)) = parse_help_line(line) {
            if let Some(l) = &spec.long {
                let after = line.split_once(l.as_str()).map_or("", |(_, r)| r);
                if after.starts_with(' ') && after[1..].starts_with(|c: char| c != ' ') {
                    literal.insert(l.clone());
                }
            }
            if let Some(a) = alias {
                aliases.push((specs.len(), a));
            }
            specs.push(spec);
            shown_neg.push(neg);
        }
    }
    for (i, target) in aliases {
        let arg = specs
            .iter()
            .find(|s| s.long.as_deref() == Some(target.as_str()))
            .map(|s| s.arg)
            .ok_or_else(|| format!("{cmd}: alias of unknown --{target}"))?;
        specs[i].arg = arg;
    }
    let mut cargs = words.clone();
    cargs.push("--git-completion-helper-all");
    let (_, comp) = run(git, sb, &cargs);
    let tokens: Vec<&str> = comp.split_whitespace().collect();
    // Where git prints no option for the completion (2.47's legacy `config`: the helper is
    // read only as the first word, where the subcommand table answers), `--[no-]` in the
    // usage is the only source of the negations.
    if !tokens.iter().any(|t| t.starts_with("--")) {
        for (i, s) in specs.iter_mut().enumerate() {
            s.negatable = shown_neg[i];
        }
        return Ok(Some(specs));
    }
    let sep = tokens.iter().position(|t| *t == "--");
    let longs: BTreeSet<String> = specs.iter().filter_map(|s| s.long.clone()).collect();
    let mut negations: BTreeSet<String> = BTreeSet::new();
    for (i, t) in tokens.iter().enumerate() {
        // A word without dashes is a subcommand (`OPTION_SUBCOMMAND`), not an option.
        let Some(name) = t.strip_prefix("--") else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let after_sep = sep.is_some_and(|s| i > s);
        let (name, required) = match name.strip_suffix('=') {
            Some(n) => (n, true),
            None => (name, false),
        };
        let is_negation = if after_sep {
            true
        } else {
            // Before the separator (or with none): a name of the table, or the positive form
            // of a `no-` option, or (no separator) a `--no-` form.
            !longs.contains(name)
        };
        if is_negation {
            let base = match name.strip_prefix("no-") {
                Some(b) if longs.contains(b) => b.to_owned(),
                _ if longs.contains(&format!("no-{name}")) => format!("no-{name}"),
                _ => {
                    return Err(format!(
                        "{cmd}: completion lists --{name}, not in --help-all"
                    ))
                }
            };
            negations.insert(base);
        } else if required {
            let s = specs
                .iter_mut()
                .find(|s| s.long.as_deref() == Some(name))
                .expect("in longs");
            if s.arg == Arg::None && literal.contains(name) {
                s.arg = Arg::Separate;
            }
            if s.arg != Arg::Separate {
                return Err(format!(
                    "{cmd}: completion says --{name}= takes a value, --help-all says {:?}",
                    s.arg
                ));
            }
        }
    }
    for (i, s) in specs.iter_mut().enumerate() {
        if let Some(l) = &s.long {
            s.negatable = negations.contains(l);
            // 2.47 prints `--[no-]x`: it must agree with the completion's negations.
            if shown_neg[i] && !s.negatable {
                return Err(format!(
                    "{cmd}: --help-all shows --[no-]{l}, the completion has no --no-{l}"
                ));
            }
        }
    }
    Ok(Some(specs))
}

fn derive_table(git: &Path) -> Result<Table, String> {
    let sb = Sandbox::new(git);
    let st = sb.sh("git init -q repo && cd repo && git commit -q --allow-empty -m one");
    assert!(st.status.success(), "setup failed");
    let mut t = Table {
        version: common::version(git),
        ..Table::default()
    };
    for cmd in TABLE_COMMANDS {
        if let Some(specs) = derive(git, &sb, cmd)? {
            t.commands.insert((*cmd).to_owned(), specs);
        }
    }
    Ok(t)
}

#[test]
fn option_tables_are_gits_own() {
    let bless = std::env::var("GITWARD_BLESS").as_deref() == Ok("1");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lib/src/safegit/options");
    let mut failures = Vec::new();
    for g in gits() {
        let derived = derive_table(&g).unwrap_or_else(|e| panic!("{}: {e}", g.display()));
        let text = format_table(&derived);
        let file = dir.join(format!("git-{}.txt", derived.version));
        if bless {
            std::fs::write(&file, &text).unwrap();
            eprintln!("wrote {}", file.display());
            continue;
        }
        let Some((_, checked_in)) = DATA.iter().find(|(v, _)| *v == derived.version) else {
            failures.push(format!(
                "{} ({}): no option table checked in for this version (GITWARD_BLESS=1 writes {}, and add it to safegit::options::DATA)",
                g.display(),
                derived.version,
                file.display()
            ));
            continue;
        };
        let parsed = parse_table(&derived.version, checked_in).expect("parses");
        if format_table(&parsed) != text {
            let a: Vec<&str> = checked_in.lines().collect();
            let b: Vec<&str> = text.lines().collect();
            let only_in_file: Vec<_> = a.iter().filter(|l| !b.contains(l)).collect();
            let only_in_git: Vec<_> = b.iter().filter(|l| !a.contains(l)).collect();
            failures.push(format!(
                "{} ({}): the checked-in table differs from git's: only in the file {only_in_file:?}, only in git {only_in_git:?}",
                g.display(),
                derived.version
            ));
        }
        // Every command safe-git's checks read a table for is in it.
        for cmd in [
            "branch",
            "tag",
            "clean",
            "grep",
            "config",
            "notes",
            "symbolic-ref",
        ] {
            if !derived.commands.contains_key(cmd) {
                failures.push(format!("{}: no table for {cmd}", g.display()));
            }
        }
        // The diff half of REVISION_SEPARATE_VALUE: git's required-value diff options.
        let sb = Sandbox::new(&g);
        sb.sh("git init -q repo");
        let (_, comp) = run(&g, &sb, &["diff", "--git-completion-helper-all"]);
        for t in comp.split_whitespace() {
            if let Some(name) = t.strip_suffix('=') {
                if !REVISION_SEPARATE_VALUE.contains(&name) {
                    failures.push(format!(
                        "{}: diff option {name} takes a value; not in REVISION_SEPARATE_VALUE",
                        g.display()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
