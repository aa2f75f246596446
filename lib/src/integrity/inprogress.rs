//! The state of in-progress operations (a stopped `rebase`, `cherry-pick`, `revert`, `am`),
//! judged by what it makes the owner's next `--continue` run.
//!
//! A stopped operation keeps its plan in the git dir (`rebase-merge/`, `rebase-apply/`,
//! `sequencer/`), where the agent can write. The owner's `git rebase --continue` then runs
//! every `exec` line of the todo list through the shell, runs `git merge-<strategy>` for the
//! stored strategy (a strategy with a `/` as a path), signs with the stored key: outside the
//! sandbox. The files and what each can name are data ([`catalogue::SEQUENCER_STATE`]); this
//! module reads them the way git's parsers do (`sequencer.c:parse_insn_line`,
//! `read_populate_opts`, `builtin/rebase.c:read_basic_state`, `builtin/am.c:am_load`) and
//! reports each that names something git itself would not have written for an ordinary
//! operation. `wt-check check` and `wt-check audit` both call [`judge`].
//!
//! Invariants: every file is opened without following links; an operation folder that is a
//! link (git would follow it) is reported as such, never read through. A file that cannot be
//! read is returned as an error (the caller reports it: unknown is not clean).

use super::nf::{Dir, NfError};
use crate::catalogue::{self, Severity, StateNames};
use std::ffi::OsStr;
use std::path::Path;

/// Largest state file read (todo lists of long rebases are a few hundred KiB).
pub const STATE_LIMIT: u64 = 16 << 20;

/// One state file (or operation folder) that names a program, an option or a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Armed {
    /// The file, relative to the git dir (`rebase-merge/git-rebase-todo`).
    pub file: String,
    /// The operation folder holding it (`rebase-merge`): what `check --restore` sets aside.
    pub op_dir: &'static str,
    pub names: StateNames,
    /// The 1-based line it was found on, for todo lists.
    pub line: Option<usize>,
    /// What it names: the command, the strategy, the key, the options.
    pub value: String,
    /// What the owner's command does with it, in one sentence.
    pub why: String,
    pub severity: Severity,
}

impl Armed {
    /// A key that stays the same for the same finding (the accepted list of a pin).
    pub fn key(&self) -> String {
        format!("{}:{}:{}", self.file, self.line.unwrap_or(0), self.value)
    }
}

/// Judge every state file of the catalogue below `git_dir` (a git dir opened without
/// following links). Files that cannot be read come back as errors, beside the findings.
pub fn judge(git_dir: &Dir) -> (Vec<Armed>, Vec<NfError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for op in catalogue::SEQUENCER_DIRS {
        let dir = match git_dir.walk(Path::new(op)) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => continue,
            Err(e) if e.is_link() => {
                let target = git_dir
                    .read_link(OsStr::new(op))
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(Armed {
                    file: (*op).to_owned(),
                    op_dir: op,
                    names: StateNames::Nothing,
                    line: None,
                    value: target,
                    why: format!("`{op}` is a symbolic link: git follows it and continues the operation stored wherever it points (not followed here)"),
                    severity: Severity::Error,
                });
                continue;
            }
            Err(e) => {
                // A file where git expects the folder: git does not read through it.
                if matches!(git_dir.stat(OsStr::new(op)), Ok(Some(st)) if st.kind != super::nf::Kind::Dir)
                {
                    continue;
                }
                errors.push(e);
                continue;
            }
        };
        let read = |name: &str| -> Result<Option<Vec<u8>>, NfError> {
            match dir.stat(OsStr::new(name))? {
                None => Ok(None),
                Some(st) if st.kind == super::nf::Kind::Dir => Ok(None),
                Some(_) => dir.read_bytes(OsStr::new(name), STATE_LIMIT).map(Some),
            }
        };
        let mut found = Vec::new();
        let mut strategy_opts: Option<String> = None;
        for row in catalogue::SEQUENCER_STATE {
            let Some(name) = row.path.strip_prefix(op).and_then(|r| r.strip_prefix('/')) else {
                continue;
            };
            if row.names == StateNames::Nothing {
                continue;
            }
            let bytes = match read(name) {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let file = row.path.to_owned();
            let mk = |line: Option<usize>, value: String, why: String, severity: Severity| Armed {
                file: file.clone(),
                op_dir: op,
                names: row.names,
                line,
                value,
                why,
                severity,
            };
            match row.names {
                StateNames::TodoExec => {
                    for (line, cmd) in todo_execs(&bytes) {
                        found.push(mk(
                            Some(line),
                            cmd.clone(),
                            format!(
                                "`exec {cmd}` runs through the shell on the owner's `git {}`",
                                row.read_by
                            ),
                            Severity::Error,
                        ));
                    }
                }
                StateNames::Strategy => {
                    let s = oneliner(&bytes);
                    if let Some((sev, why)) = judge_strategy(&s) {
                        found.push(mk(None, s, why, sev));
                    }
                }
                StateNames::StrategyOptions => {
                    let s = oneliner(&bytes);
                    if !s.trim().is_empty() {
                        strategy_opts = Some(s);
                    }
                }
                StateNames::SigningKey | StateNames::AmArgument => {
                    let s = oneliner(&bytes);
                    if let Some(why) = judge_sign_opt(&s) {
                        found.push(mk(None, s, why, Severity::Warning));
                    }
                }
                StateNames::ApplyOptions => {
                    let s = oneliner(&bytes);
                    if let Some(why) = judge_apply_opts(&s) {
                        found.push(mk(None, s, why, Severity::Error));
                    }
                }
                StateNames::OptionsSheet => {
                    for (value, why, sev) in judge_opts_sheet(&bytes) {
                        found.push(mk(None, value, why, sev));
                    }
                }
                StateNames::Trailers => {
                    let s = String::from_utf8_lossy(&bytes).into_owned();
                    if !s.trim().is_empty() {
                        found.push(mk(
                            None,
                            s.trim_end().to_owned(),
                            "`--trailer` arguments the owner's `rebase --continue` gives to the owner's trailer commands".into(),
                            Severity::Warning,
                        ));
                    }
                }
                StateNames::Nothing => {}
            }
        }
        // Strategy options reach a program only with a strategy that is run as one.
        if let Some(opts) = strategy_opts {
            if let Some(s) = found.iter_mut().find(|a| a.names == StateNames::Strategy) {
                s.why = format!("{} (with the options `{opts}`)", s.why);
            }
        }
        out.extend(found);
    }
    (out, errors)
}

/// A file read the way git's `read_oneliner` reads it: the first line's content, trailing
/// newline (and CR) removed.
fn oneliner(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    s.strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&s)
        .to_owned()
}

/// The `exec` lines of a todo list as git's `parse_insn_line` reads them, with their 1-based
/// line numbers and commands: the list ends at the first NUL (git parses a C string); each
/// line loses a trailing CR; leading spaces and tabs are skipped; the word is `exec` or `x`
/// followed by a space, tab or the end of the line; at least one space or tab must follow
/// (otherwise git refuses the whole list and runs nothing); the command is the rest of the
/// line. `exec` wins over the comment character (git tries commands first).
pub fn todo_execs(bytes: &[u8]) -> Vec<(usize, String)> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut out = Vec::new();
    for (i, line) in bytes[..end].split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let l = trim_blanks(line);
        let rest = if let Some(r) = l.strip_prefix(b"exec") {
            r
        } else if let Some(r) = l.strip_prefix(b"x") {
            r
        } else {
            continue;
        };
        if !matches!(rest.first(), Some(b' ' | b'\t')) {
            continue; // `exec` alone (git: missing arguments) or another word (`execute`)
        }
        let cmd = trim_blanks(rest);
        if cmd.is_empty() {
            continue;
        }
        out.push((i + 1, String::from_utf8_lossy(cmd).into_owned()));
    }
    out
}

fn trim_blanks(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    &b[n..]
}

/// A stored strategy: `None` for git's own (or none); else the level and why.
pub fn judge_strategy(s: &str) -> Option<(Severity, String)> {
    if s.is_empty() || catalogue::BUILTIN_MERGE_STRATEGIES.contains(&s) {
        return None;
    }
    if s.contains('/') {
        return Some((
            Severity::Error,
            format!("strategy `{s}` holds a `/`: the owner's `--continue` runs `git-merge-{s}` as a path"),
        ));
    }
    Some((
        Severity::Warning,
        format!("strategy `{s}` is not one of git's: the owner's `--continue` runs the program `git-merge-{s}` found on the owner's PATH"),
    ))
}

/// A stored `gpg_sign_opt`: git writes `-S` (the owner's default key) or `-S<key>`.
pub fn judge_sign_opt(s: &str) -> Option<String> {
    match s.strip_prefix("-S") {
        _ if s.is_empty() => None,
        Some("") => None,
        Some(key) => Some(format!(
            "the owner's signing program signs the continued commits with the key `{key}` the agent chose"
        )),
        None => Some(format!(
            "`{s}` is not a signing option git writes; it is passed to git on the owner's `--continue`"
        )),
    }
}

/// `rebase-apply/apply-opt`: shell-quoted `git apply` options; git am writes only its own
/// pass-through options ([`catalogue::AM_APPLY_OPTIONS`]).
pub fn judge_apply_opts(s: &str) -> Option<String> {
    let Some(args) = sq_dequote(s) else {
        return Some(format!(
            "`{s}` is not quoted the way git am writes it; git would refuse it"
        ));
    };
    let foreign: Vec<&String> = args.iter().filter(|a| !am_option(a)).collect();
    if foreign.is_empty() {
        return None;
    }
    Some(format!(
        "options git am never writes ({}) reach the owner's `git apply`",
        foreign
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn am_option(a: &str) -> bool {
    catalogue::AM_APPLY_OPTIONS.iter().any(|p| {
        if p.ends_with('=') {
            a.starts_with(p)
        } else if *p == "-C" || *p == "-p" {
            a.strip_prefix(p)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        } else {
            a == *p
        }
    })
}

/// git's `sq_dequote_to_strvec`: words in single quotes separated by spaces, `'\''` and
/// `'\!'` for a quote and a bang. `None` when the text is not in that form.
pub fn sq_dequote(s: &str) -> Option<Vec<String>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    if i == b.len() {
        return Some(out);
    }
    let mut cur = Vec::new();
    if b[i] != b'\'' {
        return None;
    }
    i += 1;
    loop {
        match b.get(i) {
            None => return None,
            Some(b'\'') => {
                i += 1;
                match b.get(i) {
                    None => {
                        out.push(String::from_utf8_lossy(&cur).into_owned());
                        return Some(out);
                    }
                    Some(b'\\')
                        if matches!(b.get(i + 1), Some(b'\'' | b'!'))
                            && b.get(i + 2) == Some(&b'\'') =>
                    {
                        cur.push(b[i + 1]);
                        i += 3;
                    }
                    Some(b' ') => {
                        out.push(String::from_utf8_lossy(&std::mem::take(&mut cur)).into_owned());
                        while b.get(i) == Some(&b' ') {
                            i += 1;
                        }
                        if i == b.len() {
                            return Some(out);
                        }
                        if b[i] != b'\'' {
                            return None;
                        }
                        i += 1;
                    }
                    Some(_) => return None,
                }
            }
            Some(&c) => {
                cur.push(c);
                i += 1;
            }
        }
    }
}

/// `sequencer/opts` (config syntax, `options.*`): the strategy, its options and the signing
/// key git would use. An unparseable sheet is reported (git refuses it, but nothing git
/// writes looks like it).
fn judge_opts_sheet(bytes: &[u8]) -> Vec<(String, String, Severity)> {
    let mut out = Vec::new();
    let Some(values) = config_values(bytes) else {
        return vec![(
            String::from_utf8_lossy(bytes).into_owned(),
            "the options sheet cannot be parsed as config".into(),
            Severity::Warning,
        )];
    };
    let get = |name: &str| {
        values
            .iter()
            .rev()
            .find(|(s, sub, n, _)| {
                s.eq_ignore_ascii_case("options") && sub.is_none() && n.eq_ignore_ascii_case(name)
            })
            .map(|v| v.3.clone())
    };
    if let Some(s) = get("strategy") {
        if let Some((sev, why)) = judge_strategy(&s) {
            out.push((format!("options.strategy={s}"), why, sev));
        }
    }
    if let Some(k) = get("gpg-sign") {
        if !k.is_empty() {
            out.push((
                format!("options.gpg-sign={k}"),
                format!("the owner's signing program signs the continued commits with the key `{k}` the agent chose"),
                Severity::Warning,
            ));
        }
    }
    out
}

/// One config value: `(section, subsection, name, value)`.
type ConfigValue = (String, Option<String>, String, String);

/// `(section, subsection, name, value)` of a config file's bytes, in order; `None` when it
/// does not parse.
fn config_values(bytes: &[u8]) -> Option<Vec<ConfigValue>> {
    use gix::bstr::{ByteSlice, ByteVec};
    use gix::config::parse::{EventRef, Events};
    let events = Events::from_bytes(bytes, None).ok()?;
    let mut out = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    let mut pending: Option<String> = None;
    let mut partial = gix::bstr::BString::default();
    for ev in events.iter() {
        let value = match ev {
            EventRef::SectionHeader {
                name,
                subsection_name,
                ..
            } => {
                section = Some((
                    name.to_str_lossy().into_owned(),
                    subsection_name.map(|s| s.to_str_lossy().into_owned()),
                ));
                None
            }
            EventRef::SectionValueName(n) => {
                if let Some(p) = pending.take() {
                    let (s, sub) = section.clone()?;
                    out.push((s, sub, p, "true".into()));
                }
                pending = Some(n.to_str_lossy().into_owned());
                None
            }
            EventRef::Value(v) => Some(gix::config::value::normalize(v).into_owned()),
            EventRef::ValueNotDone(v) => {
                partial.push_str(v);
                None
            }
            EventRef::ValueDone(v) => {
                partial.push_str(v);
                let whole = std::mem::take(&mut partial);
                Some(gix::config::value::normalize(whole.as_bstr()).into_owned())
            }
            _ => None,
        };
        if let Some(v) = value {
            let name = pending.take()?;
            let (s, sub) = section.clone()?;
            out.push((s, sub, name, v.to_str_lossy().into_owned()));
        }
    }
    if let Some(p) = pending.take() {
        let (s, sub) = section.clone()?;
        out.push((s, sub, p, "true".into()));
    }
    Some(out)
}

/// Does a change of a `config` file from `before` to `after` only add, change or remove
/// the tracking keys git writes itself ([`catalogue::TRACKING_CONFIG_KEYS`]), each holding a
/// remote's nickname or a URL that runs nothing? Both must parse; every other value must be
/// the same, in the same order.
pub fn tracking_only(before: &[u8], after: &[u8]) -> bool {
    let (Some(b), Some(a)) = (config_values(before), config_values(after)) else {
        return false;
    };
    let is_tracking = |v: &ConfigValue| {
        let key = match &v.1 {
            Some(sub) => format!("{}.{sub}.{}", v.0, v.2),
            None => format!("{}.{}", v.0, v.2),
        };
        catalogue::ConfigKey::parse(&key).is_some_and(|k| {
            catalogue::TRACKING_CONFIG_KEYS
                .iter()
                .any(|p| p.matches(&k))
        })
    };
    let rest = |v: &[ConfigValue]| -> Vec<ConfigValue> {
        v.iter()
            .filter(|x| !is_tracking(x))
            .map(|(s, sub, n, val)| {
                (
                    s.to_ascii_lowercase(),
                    sub.clone(),
                    n.to_ascii_lowercase(),
                    val.clone(),
                )
            })
            .collect()
    };
    if rest(&b) != rest(&a) {
        return false;
    }
    // Remotes this file defines: a nickname that names none is taken by git as a URL.
    let remotes: Vec<&str> = a
        .iter()
        .filter(|(sec, sub, n, _)| {
            sec.eq_ignore_ascii_case("remote")
                && sub.is_some()
                && (n.eq_ignore_ascii_case("url") || n.eq_ignore_ascii_case("fetch"))
        })
        .filter_map(|(_, sub, _, _)| sub.as_deref())
        .collect();
    a.iter().filter(|x| is_tracking(x)).all(|(_, _, n, val)| {
        if n.eq_ignore_ascii_case("merge") {
            return !val.chars().any(char::is_control);
        }
        if n.eq_ignore_ascii_case("rebase") {
            // git's tracking setup writes `true` and nothing else.
            return val == "true";
        }
        // `branch.<name>.remote`: `.` (this repository), a remote this file defines, or a
        // URL of a class that runs nothing.
        val == "." || remotes.contains(&val.as_str()) || catalogue::classify_url(val).is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_lines_in_every_form_git_parses() {
        let todo = b"pick 1234 a\nexec touch /tmp/a\nx touch /tmp/b\n\t  exec\ttouch /tmp/c\r\n x \t touch /tmp/d\nexec\nexecute foo\nx\n# exec commented\nexec touch /tmp/e";
        let got: Vec<(usize, String)> = todo_execs(todo);
        assert_eq!(
            got,
            [
                (2, "touch /tmp/a".to_owned()),
                (3, "touch /tmp/b".to_owned()),
                (4, "touch /tmp/c".to_owned()),
                (5, "touch /tmp/d".to_owned()),
                (10, "touch /tmp/e".to_owned()),
            ]
        );
        // git parses the todo as a C string: nothing after a NUL runs.
        assert!(todo_execs(b"pick 1 a\n\0exec touch /tmp/x\n").is_empty());
        assert!(todo_execs(b"pick 1 a\nreword 2 b\nbreak\n").is_empty());
    }

    #[test]
    fn strategies_and_keys() {
        for s in [
            "ort",
            "recursive",
            "resolve",
            "octopus",
            "ours",
            "subtree",
            "",
        ] {
            assert_eq!(judge_strategy(s), None, "{s}");
        }
        assert_eq!(judge_strategy("/../evil").unwrap().0, Severity::Error);
        assert_eq!(judge_strategy("a/b").unwrap().0, Severity::Error);
        assert_eq!(judge_strategy("custom").unwrap().0, Severity::Warning);
        assert_eq!(judge_strategy("ort ").unwrap().0, Severity::Warning);
        assert_eq!(judge_sign_opt("-S"), None);
        assert_eq!(judge_sign_opt(""), None);
        assert!(judge_sign_opt("-SDEADBEEF").is_some());
        assert!(judge_sign_opt("--exec=x").is_some());
    }

    #[test]
    fn apply_options_git_am_writes_are_its_own() {
        assert_eq!(judge_apply_opts(""), None);
        assert_eq!(
            judge_apply_opts(
                " '--whitespace=fix' '-p2' '-C3' '--directory=a b' '--reject' '--exclude=x'"
            ),
            None
        );
        assert!(judge_apply_opts(" '--build-fake-ancestor=/home/u/.bashrc'").is_some());
        assert!(judge_apply_opts(" '--unsafe-paths'").is_some());
        assert!(judge_apply_opts(" '-pX'").is_some());
        assert!(judge_apply_opts("--reject").is_some(), "unquoted");
        assert_eq!(
            sq_dequote(" 'a'\\''b' 'c'\\!'d'"),
            Some(vec!["a'b".to_owned(), "c!d".to_owned()])
        );
    }

    #[test]
    fn options_sheet() {
        let v = judge_opts_sheet(b"[options]\n\tstrategy = /../evil\n\tgpg-sign = KEY\n");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].2, Severity::Error);
        assert!(judge_opts_sheet(
            b"[options]\n\tstrategy = ort\n\tgpg-sign = \n\tstrategy-option = theirs\n"
        )
        .is_empty());
        assert_eq!(judge_opts_sheet(b"[options\n").len(), 1);
    }

    #[test]
    fn tracking_config_from_branch_u_is_git_s_own() {
        let before =
            b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n";
        let tracked = b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        assert!(tracking_only(before, tracked));
        assert!(tracking_only(tracked, before));
        let url = b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = https://example.com/other\n";
        assert!(tracking_only(before, url));
        // `branch.autoSetupRebase=always`: git adds `rebase = true` to the tracking set.
        let rebase = b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\trebase = true\n";
        assert!(tracking_only(before, rebase));
        for bad in [
            // A value git's tracking setup never writes.
            &b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = origin\n\trebase = interactive\n"[..],
            b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = ext::sh -c x\n",
            b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = /srv/x\n",
            b"[core]\n\tbare = false\n\tfsmonitor = x\n[remote \"origin\"]\n\turl = https://example.com/r\n",
            b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\tpushremote = x\n",
            b"[core\n",
            // A nickname no remote has: git fetches from it as a (local) path.
            b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n[branch \"main\"]\n\tremote = evil\n",
        ] {
            assert!(!tracking_only(before, bad), "{}", String::from_utf8_lossy(bad));
        }
    }
}
