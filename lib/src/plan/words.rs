//! Which work-tree files a shell command line names: the reader behind the plan's
//! "a program value's script is protected like the program" rule (R5-2) and the hooks' second
//! hop (R5-7).
//!
//! # Why a lexer
//!
//! git hands a program value (`core.fsmonitor`, `!`-aliases, filters, textconv, …) and a hook
//! to `sh`. Splitting on blanks misses what the shell reads (sixth red-team pass, R6-2):
//! `sh <tools/x.sh` (a redirection), `sh tools/x.sh;` (an operator glued to the word),
//! `sh tools\/x.sh` (an escape), `sh tools/x[1].sh` (a glob), `sh $(echo tools/x.sh)` (a
//! command substitution), `cd tools && sh x.sh` (a folder change), `python3 -m tools.x` (a
//! module), `make -C tools` (a makefile by folder). This module reads the text the way `sh`
//! would as far as words, quotes, escapes, operators, substitutions and `cd` go, and names
//! every word that could be a path.
//!
//! # Invariant
//!
//! A superset: every word the shell would see as an argument, a redirection source, the
//! command itself or the inside of a substitution or `sh -c`/`eval` string is a candidate,
//! resolved from the top of the work tree and from every folder a `cd` before it names. What
//! the shell computes at run time (`$VAR/x`, `$(cmd)/x`) is taken by the literal part after
//! the last expansion, from the top. No I/O here: [`resolve`] and [`reach`] are the only
//! functions that look at the file system, and they follow no link.
//!
//! # Why not only a lexer (seventh red-team pass, R7-1, R7-3)
//!
//! Two passes in a row found shapes a model of the shell misses (brace expansion, `$'…'`,
//! `$((…))`, `${X:-…}`, `env -S`, `-fpath`, `npx`, `python3 dir`), and an interpreter reads
//! more than the file named (a Python script's `json.py` beside it). [`reach`] therefore adds
//! an over-approximation — every [`fragments`] piece of the text — and answers with folders:
//! what is protected is the folder that holds a script, with everything below it. Shapes
//! beyond both (a program word built at run time from work-tree content) are reported as
//! unresolved, for the caller to fail closed. The plan, the hooks' second hop and the settings
//! guard's second hop all use this one module.

use std::path::{Component, Path, PathBuf};

/// How a candidate names a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A path as written (`tools/x.sh`, `./x`, `x.py`).
    Path(String),
    /// A glob (`tools/x[1].sh`, `tools/*.sh`): every entry of its folder that matches.
    Glob(String),
    /// `python -m a.b`: `a/b.py`, `a/b/__main__.py` and the packages' `__init__.py`.
    Module(String),
    /// `make -C dir`: the makefile `make` reads there.
    MakeDir(String),
    /// A bare word that may name a folder a program reads: a part of an assignment's value
    /// (`PATH=tools:$PATH`), an operand of a folder reader (`python3 pkg`, `find tools`,
    /// [`crate::catalogue::FOLDER_READERS`]).
    Dir(String),
}

/// One word that may name a file, with the folders a `cd` before it changed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub shape: Shape,
    /// Folders (as written) that `cd` moved to earlier in the same command line; the word is
    /// resolved from each of them as well as from the top.
    pub cd: Vec<String>,
}

/// The most nesting of substitutions and `sh -c` strings read; deeper text is not read and
/// [`Lexed::cut`] says so.
const MAX_DEPTH: usize = 8;

/// What [`lex`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lexed {
    pub candidates: Vec<Candidate>,
    /// The text nests substitutions or `sh -c` strings deeper than [`MAX_DEPTH`]: what lies
    /// below was not read. (A quote or substitution left open is not a cut: `sh` refuses such
    /// a line with a syntax error and runs nothing of it.)
    pub cut: bool,
    /// Words that the shell builds at run time with no literal path in them, standing where a
    /// program or a script is named (`sh $(cat list)`, `$X args`, `x=$(cat l); sh $x`), as
    /// written with `$…` for each expansion.
    pub dynamic: Vec<String>,
    /// The text of every command substitution (`$(…)`, `` `…` ``), at any depth.
    pub substitutions: Vec<String>,
    /// The words that stand where a program or a script is named: the command itself when it
    /// has a `/`, and the script operand of a shell or an interpreter (`sh scripts/lint.sh`,
    /// `python3 tools/x.py`; not a `-c` string). [`reach`] guards a missing one's folder
    /// (R9-9) and refuses one resolved from a folder known only at run time (R9-6).
    pub scripts: Vec<Candidate>,
    /// Every simple command, from its program word on (assignments and wrappers such as
    /// `env`/`exec` skipped), with the folders a `cd` before it named: what
    /// [`interpreter_search`] reads.
    pub commands: Vec<Command>,
}

/// One simple command as [`lex`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program word and its arguments ([`UNKNOWN`] where the shell expands).
    pub words: Vec<String>,
    /// [`Candidate::cd`].
    pub cd: Vec<String>,
}

/// The [`Candidate::cd`] entry of a `cd` whose folder the shell computes at run time
/// (`cd -- "${GIT_PREFIX:-.}"`, `cd "$(dirname "$0")"`): a relative word after it is resolved
/// from a folder no one knows before the command runs.
pub const RUN_TIME_FOLDER: &str = "\u{0}";

/// A character of a word: literal, or the place of an expansion whose value is only known
/// when the shell runs (`$VAR`, `$(…)`, `` `…` ``).
const UNKNOWN: char = '\u{0}';

#[derive(Debug)]
enum Tok {
    Word(String),
    /// `;`, `&`, `|`, `&&`, `||`, `(`, `)`, newline: the end of a simple command.
    End,
    /// `<` (and `<<<`, `<&`): the next word is read by the shell or the command.
    In,
    /// `>`, `>>`, `>&`, `>|`: the next word is written, not read.
    Out,
}

/// Reads `text` as `sh` would (see the module documentation).
pub fn lex(text: &str) -> Lexed {
    let mut out = Lexed::default();
    // The top of the work tree, spelled as a substitution: git runs hooks and aliases there,
    // so `cd "$(git rev-parse --show-toplevel)"` stays where it is, not a run-time folder.
    let mut text = text.to_owned();
    for cd in ["cd ", "cd -- ", "pushd "] {
        for top in crate::catalogue::TOP_SPELLINGS {
            text = text.replace(&format!("{cd}{top}"), &format!("{cd}."));
        }
    }
    lex_into(&text, 0, &mut out);
    out
}

fn lex_into(text: &str, depth: usize, out: &mut Lexed) {
    if depth > MAX_DEPTH {
        out.cut = true;
        return;
    }
    let mut inner: Vec<String> = Vec::new();
    let toks = tokens(text, &mut inner);
    for t in inner {
        lex_into(&t, depth + 1, out);
        out.substitutions.push(t);
    }
    let mut cd: Vec<String> = Vec::new();
    let mut cmd: Vec<String> = Vec::new();
    let mut redirect_in = false;
    let mut skip_next = false;
    let flush = |cmd: &mut Vec<String>, cd: &mut Vec<String>, out: &mut Lexed| {
        command(cmd, cd, depth, out);
        cmd.clear();
    };
    for t in toks {
        match t {
            Tok::Word(w) => {
                if redirect_in {
                    redirect_in = false;
                    push_word(&w, cd.clone(), out);
                } else if skip_next {
                    skip_next = false;
                } else {
                    cmd.push(w);
                }
            }
            Tok::In => redirect_in = true,
            Tok::Out => skip_next = true,
            Tok::End => {
                redirect_in = false;
                skip_next = false;
                flush(&mut cmd, &mut cd, out);
            }
        }
    }
    flush(&mut cmd, &mut cd, out);
}

/// One simple command's words: every word a candidate, with what the command makes of them.
fn command(words: &[String], cd: &mut Vec<String>, depth: usize, out: &mut Lexed) {
    // Assignments in front (`X=1 sh x.sh`): their values are candidates too.
    let mut i = 0;
    while i < words.len() && is_assignment(&words[i]) {
        let v = words[i].split_once('=').map_or("", |(_, v)| v);
        push_word(v, cd.clone(), out);
        push_dirs(v, cd, out);
        i += 1;
    }
    // `env [-i] [-u NAME] [X=1] cmd …`, `exec`, `command`, `nice`, `nohup`, `time`: the
    // command that follows; the shell's reserved words (`{`, `then`, `do`, `!`, …: a function
    // body or a compound command, R11-1) likewise.
    while i < words.len() {
        let name = base_name(&words[i]);
        if crate::catalogue::SHELL_RESERVED_WORDS.contains(&words[i].as_str()) {
            i += 1;
        } else if crate::catalogue::COMMAND_WRAPPERS.contains(&name) {
            push_word(&words[i], cd.clone(), out);
            let env = name == "env";
            i += 1;
            // Options, assignments, and the values wrappers take (`nice -n 5`, `timeout 60`,
            // `timeout -k 5s 60`: a number or a duration; twelfth red-team pass, R12-2).
            while i < words.len()
                && (words[i].starts_with('-')
                    || is_assignment(&words[i])
                    || is_number_or_duration(&words[i]))
            {
                // `env -C DIR` / `--chdir=DIR` starts the command in DIR (R11-1).
                let chdir = if !env {
                    None
                } else if words[i] == "-C" || words[i] == "--chdir" {
                    i += 1;
                    words.get(i).cloned()
                } else {
                    words[i]
                        .strip_prefix("--chdir=")
                        .or_else(|| words[i].strip_prefix("-C").filter(|r| !r.is_empty()))
                        .map(str::to_owned)
                };
                if let Some(d) = chdir {
                    change_folder(&d, cd);
                    i += 1;
                    continue;
                }
                if is_assignment(&words[i]) {
                    let v = words[i].split_once('=').map_or("", |(_, v)| v);
                    push_word(v, cd.clone(), out);
                    push_dirs(v, cd, out);
                }
                i += 1;
            }
        } else {
            break;
        }
    }
    let Some(first) = words.get(i) else { return };
    out.commands.push(Command {
        words: words[i..].to_vec(),
        cd: cd.clone(),
    });
    let name = base_name(first).to_owned();
    push_word(first, cd.clone(), out);
    note_dynamic(first, out);
    let args = &words[i + 1..];
    let shell = crate::catalogue::SHELLS.contains(&name.as_str());
    let reader = crate::catalogue::FOLDER_READERS.contains(&name.as_str());
    // The script or folder operand: the first word that is no option.
    if let Some(op) = args.iter().find(|a| !a.starts_with('-')) {
        if shell || reader {
            note_dynamic(op, out);
        }
        if crate::catalogue::NODE_BIN_RUNNERS.contains(&name.as_str()) && !op.contains(UNKNOWN) {
            // `npx x` runs `node_modules/.bin/x` of the folder it starts in.
            push_word(&format!("node_modules/.bin/{op}"), cd.clone(), out);
        }
    }
    if reader {
        for a in args.iter().filter(|a| !a.starts_with('-')) {
            push_dirs(a, cd, out);
        }
    }
    // The script position: the command itself with a `/`, the operand of a shell or an
    // interpreter (the first word that is no option, unless `-c`/`-m`/`-e` came first).
    let interpreter =
        shell || reader || name.starts_with("python") || name == "." || name == "source";
    let mut script: Option<&String> = first.contains('/').then_some(first);
    // `make -f FILE` reads FILE as its program (R11-2).
    if crate::catalogue::MAKES.contains(&name.as_str()) {
        let mut k = 0;
        while k < args.len() {
            let a = &args[k];
            if a == "-f" || a == "--file" || a == "--makefile" {
                script = script.or(args.get(k + 1));
                break;
            }
            k += 1;
        }
    }
    if interpreter && !matches!(name.as_str(), "find" | "xargs") {
        for a in args {
            // A command string or a module instead of a script: `sh -c`, `bash -ec`,
            // `python3 -c`/`-m`, `node -e`/`-p`, `perl -e`/`-E`, `ruby -e`, `php -r`.
            let string_option = if shell {
                a.starts_with('-') && !a.starts_with("--") && a.contains('c')
            } else {
                matches!(a.as_str(), "-c" | "-m" | "-e" | "-E" | "-p" | "-r")
            };
            if string_option {
                break;
            }
            if !a.starts_with('-') {
                script = script.or(Some(a));
                break;
            }
        }
    }
    if let Some(w) = script {
        let c = Candidate {
            shape: Shape::Path(w.clone()),
            cd: cd.clone(),
        };
        if !out.scripts.contains(&c) {
            out.scripts.push(c);
        }
    }
    if name == "cd" || name == "pushd" {
        match args.iter().find(|a| !a.starts_with('-') || *a == "-") {
            // `cd -`: the owner's previous folder ($OLDPWD).
            Some(d) if d == "-" => cd.push(RUN_TIME_FOLDER.to_owned()),
            Some(d) => change_folder(d, cd),
            None => {}
        }
    }
    let python = name.starts_with("python") || name == "pypy" || name == "pypy3";
    let make = crate::catalogue::MAKES.contains(&name.as_str());
    let mut k = 0;
    while k < args.len() {
        let a = &args[k];
        if (shell && (a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))))
            || name == "eval"
        {
            // The string is a command line of its own.
            let text = if name == "eval" {
                args[k..].join(" ")
            } else {
                match args.get(k + 1) {
                    Some(t) => t.clone(),
                    None => break,
                }
            };
            let mut sub = Lexed::default();
            lex_into(&text.replace(UNKNOWN, "$X"), depth + 1, &mut sub);
            for mut c in sub.candidates {
                let mut base = cd.clone();
                base.append(&mut c.cd);
                c.cd = base;
                out.candidates.push(c);
            }
            // What the string runs where (R11-1, R11-2): its script words and commands, with
            // the folders of the outer `cd`s in front (a `cd` inside it stays inside).
            for mut c in sub.scripts {
                let mut base = cd.clone();
                base.append(&mut c.cd);
                c.cd = base;
                if !out.scripts.contains(&c) {
                    out.scripts.push(c);
                }
            }
            for mut c in sub.commands {
                let mut base = cd.clone();
                base.append(&mut c.cd);
                c.cd = base;
                out.commands.push(c);
            }
            out.cut |= sub.cut;
            out.dynamic.extend(sub.dynamic);
            out.substitutions.extend(sub.substitutions);
            if name == "eval" {
                // `eval` runs in this shell: a `cd` in its string moves what follows (R11-1).
                let mut inner = Lexed::default();
                lex_into(&text.replace(UNKNOWN, "$X"), depth + 1, &mut inner);
                for c in &inner.commands {
                    if matches!(c.words.first().map(|w| base_name(w)), Some("cd" | "pushd")) {
                        if let Some(d) = c.words[1..].iter().find(|a| !a.starts_with('-')) {
                            change_folder(d, cd);
                        }
                    }
                }
                return;
            }
            k += 2;
            continue;
        }
        if python && a == "-m" {
            if let Some(m) = args.get(k + 1) {
                out.candidates.push(Candidate {
                    shape: Shape::Module(m.clone()),
                    cd: cd.clone(),
                });
            }
            k += 2;
            continue;
        }
        if make {
            let dir = if a == "-C" || a == "--directory" {
                args.get(k + 1).cloned()
            } else {
                a.strip_prefix("--directory=")
                    .or_else(|| a.strip_prefix("-C").filter(|r| !r.is_empty()))
                    .map(str::to_owned)
            };
            if let Some(d) = dir {
                if d.contains(UNKNOWN) && !(d.starts_with('/') || d.starts_with('~')) {
                    // `make -C "$GIT_PREFIX"`: the makefile of a folder known only at run
                    // time (R12-2).
                    let mut at = cd.clone();
                    at.push(RUN_TIME_FOLDER.to_owned());
                    let c = Candidate {
                        shape: Shape::Path("Makefile".into()),
                        cd: at,
                    };
                    if !out.scripts.contains(&c) {
                        out.scripts.push(c);
                    }
                }
                out.candidates.push(Candidate {
                    shape: Shape::MakeDir(d),
                    cd: cd.clone(),
                });
            }
        }
        push_word(a, cd.clone(), out);
        k += 1;
    }
}

/// The `:`-separated parts of `v` that are bare literal words, as [`Shape::Dir`] candidates.
fn push_dirs(v: &str, cd: &[String], out: &mut Lexed) {
    for part in v.split(':') {
        if part.is_empty() || part.contains(UNKNOWN) || part.contains(['*', '?', '[']) {
            continue;
        }
        let c = Candidate {
            shape: Shape::Dir(part.to_owned()),
            cd: cd.to_vec(),
        };
        if !out.candidates.contains(&c) {
            out.candidates.push(c);
        }
    }
}

/// Records `w` in [`Lexed::dynamic`] when the shell builds it at run time and no literal path
/// is left in it (nothing after the last expansion, or a tail without a `/`).
fn note_dynamic(w: &str, out: &mut Lexed) {
    let Some(i) = w.rfind(UNKNOWN) else { return };
    if w[i + UNKNOWN.len_utf8()..].starts_with('/') {
        return;
    }
    let shown = w.replace(UNKNOWN, "$…");
    if !out.dynamic.contains(&shown) {
        out.dynamic.push(shown);
    }
}

/// A `cd` (or `pushd`, `env -C`) to `d`: a literal folder is recorded as written; one the
/// shell computes is [`RUN_TIME_FOLDER`] unless it starts at `/` or `~` (`cd "$HOME"`-like
/// words are read by their literal tail, as every other word).
fn change_folder(d: &str, cd: &mut Vec<String>) {
    if !d.contains(UNKNOWN) {
        cd.push(d.to_owned());
    } else if !(d.starts_with('/') || d.starts_with('~')) {
        cd.push(RUN_TIME_FOLDER.to_owned());
    }
}

/// `5`, `60`, `1.5`, `5s`, `2m`: a wrapper's option value or duration, never its command.
fn is_number_or_duration(w: &str) -> bool {
    let body = w.trim_end_matches(['s', 'm', 'h', 'd']);
    !body.is_empty() && body.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// `NAME=value` with a shell variable name in front.
fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((k, _)) => {
            !k.is_empty()
                && !k.starts_with(|c: char| c.is_ascii_digit())
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn base_name(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// The candidate(s) of one word: options' values (`--file=x`), the literal tail after the last
/// expansion (`$(git rev-parse --show-toplevel)/tools/x.sh` → `tools/x.sh`), globs.
fn push_word(w: &str, cd: Vec<String>, out: &mut Lexed) {
    // `~+/x` is `$PWD/x`, `~-/x` `$OLDPWD/x`: the tail, from the top.
    let w = w
        .strip_prefix("~+/")
        .or_else(|| w.strip_prefix("~-/"))
        .unwrap_or(w);
    let w = match w.strip_prefix('-') {
        Some(rest) => match rest.split_once('=') {
            Some((_, v)) => v,
            // `-f` or `-fFILE`: a stuck value cannot be told from flags; leave it.
            None => return,
        },
        None => w,
    };
    let w = match w.rfind(UNKNOWN) {
        Some(i) => match w[i + UNKNOWN.len_utf8()..].strip_prefix('/') {
            Some(tail) => tail,
            None => return,
        },
        None => w,
    };
    if w.is_empty() {
        return;
    }
    let shape = if w.contains(['*', '?', '[']) {
        Shape::Glob(w.to_owned())
    } else {
        Shape::Path(w.to_owned())
    };
    if !out
        .candidates
        .iter()
        .any(|c| c.shape == shape && c.cd == cd)
    {
        out.candidates.push(Candidate { shape, cd });
    }
}

/// Splits `text` into tokens; the text of every substitution is pushed to `inner` (it runs as
/// a command line of its own) and stands as [`UNKNOWN`] in its word.
fn tokens(text: &str, inner: &mut Vec<String>) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut w = String::new();
    let mut in_word = false;
    let mut i = 0;
    let end_word = |w: &mut String, in_word: &mut bool, out: &mut Vec<Tok>| {
        if *in_word {
            out.push(Tok::Word(std::mem::take(w)));
            *in_word = false;
        }
    };
    while i < c.len() {
        let ch = c[i];
        match ch {
            ' ' | '\t' => {
                end_word(&mut w, &mut in_word, &mut out);
                i += 1;
            }
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                end_word(&mut w, &mut in_word, &mut out);
                out.push(Tok::End);
                i += 1;
            }
            '<' | '>' => {
                // `2>x`: the digits before are a descriptor, not a word.
                if in_word && w.chars().all(|d| d.is_ascii_digit()) {
                    w.clear();
                    in_word = false;
                }
                end_word(&mut w, &mut in_word, &mut out);
                let mut j = i + 1;
                while j < c.len() && matches!(c[j], '<' | '>' | '&' | '|' | '-') {
                    j += 1;
                }
                let op: String = c[i..j].iter().collect();
                // `<<EOF` is a here-document: its word is a delimiter, not a file.
                if op.starts_with("<<") && !op.starts_with("<<<") {
                    out.push(Tok::Out);
                } else if ch == '<' {
                    out.push(Tok::In);
                } else {
                    out.push(Tok::Out);
                }
                i = j;
            }
            '#' if !in_word => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => {
                in_word = true;
                if let Some(&n) = c.get(i + 1) {
                    if n != '\n' {
                        w.push(n);
                    }
                }
                i += 2;
            }
            '\'' => {
                in_word = true;
                match c[i + 1..].iter().position(|&x| x == '\'') {
                    Some(p) => {
                        w.extend(&c[i + 1..i + 1 + p]);
                        i += p + 2;
                    }
                    None => {
                        w.extend(&c[i + 1..]);
                        i = c.len();
                    }
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                loop {
                    match c.get(i) {
                        None => {
                            break;
                        }
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => {
                            match c.get(i + 1) {
                                Some(&n) if "$`\"\\\n".contains(n) => {
                                    if n != '\n' {
                                        w.push(n);
                                    }
                                }
                                Some(&n) => {
                                    w.push('\\');
                                    w.push(n);
                                }
                                None => w.push('\\'),
                            }
                            i += 2;
                        }
                        Some('$') | Some('`') => {
                            i = expansion(&c, i, &mut w, inner);
                        }
                        Some(&x) => {
                            w.push(x);
                            i += 1;
                        }
                    }
                }
            }
            '$' | '`' => {
                in_word = true;
                i = expansion(&c, i, &mut w, inner);
            }
            _ => {
                in_word = true;
                w.push(ch);
                i += 1;
            }
        }
    }
    end_word(&mut w, &mut in_word, &mut out);
    out
}

/// An expansion at `c[i]` (`$…` or `` `…` ``): pushes [`UNKNOWN`] to `w` (or the literal `$`
/// when nothing follows it), a command substitution's text to `inner`; returns the index
/// after it.
fn expansion(c: &[char], i: usize, w: &mut String, inner: &mut Vec<String>) -> usize {
    if c[i] == '`' {
        let mut j = i + 1;
        let mut s = String::new();
        while j < c.len() && c[j] != '`' {
            if c[j] == '\\' && j + 1 < c.len() {
                s.push(c[j + 1]);
                j += 2;
                continue;
            }
            s.push(c[j]);
            j += 1;
        }
        inner.push(s);
        w.push(UNKNOWN);
        return j + 1;
    }
    match c.get(i + 1) {
        Some('(') => {
            // `$(…)` or `$((…))`: to the matching parenthesis, quotes respected.
            let mut depth = 0usize;
            let mut j = i + 1;
            let mut q: Option<char> = None;
            while j < c.len() {
                let x = c[j];
                match q {
                    Some(qc) if x == qc => q = None,
                    Some('"') if x == '\\' => j += 1,
                    Some(_) => {}
                    None => match x {
                        '\'' | '"' => q = Some(x),
                        '\\' => j += 1,
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    },
                }
                j += 1;
            }
            let body: String = c[(i + 2).min(c.len())..j.min(c.len())].iter().collect();
            inner.push(body);
            w.push(UNKNOWN);
            j + 1
        }
        Some('{') => {
            let close = c[i + 2..].iter().position(|&x| x == '}');
            w.push(UNKNOWN);
            match close {
                Some(p) => i + 2 + p + 1,
                None => c.len(),
            }
        }
        Some(&x) if x.is_ascii_alphanumeric() || x == '_' => {
            let mut j = i + 1;
            if x.is_ascii_digit() {
                j += 1;
            } else {
                while j < c.len() && (c[j].is_ascii_alphanumeric() || c[j] == '_') {
                    j += 1;
                }
            }
            w.push(UNKNOWN);
            j
        }
        Some(&x) if "@*#?$!-".contains(x) => {
            w.push(UNKNOWN);
            i + 2
        }
        _ => {
            w.push('$');
            i + 1
        }
    }
}

/// Every path-shaped word of `lexed` as written, and each again below every folder a `cd`
/// before it named; a module or makefile shape as the files it reads. No I/O and no test of
/// existence: for rules over files that may be created later (the settings guard's second
/// hop). Globs are left out.
pub fn spelled(lexed: &Lexed) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |w: String| {
        if !out.contains(&w) {
            out.push(w);
        }
    };
    for c in &lexed.candidates {
        let files: Vec<String> = match &c.shape {
            Shape::Path(p) => vec![p.clone()],
            Shape::Glob(_) => continue,
            Shape::Module(m) => {
                let path = m.replace('.', "/");
                vec![
                    format!("{path}.py"),
                    format!("{path}/__main__.py"),
                    format!("{path}/__init__.py"),
                ]
            }
            Shape::MakeDir(d) => crate::catalogue::MAKEFILES
                .iter()
                .map(|f| format!("{d}/{f}"))
                .collect(),
            Shape::Dir(d) => vec![d.clone()],
        };
        for f in files {
            for d in &c.cd {
                if !Path::new(&f).is_absolute() {
                    add(format!("{d}/{f}"));
                }
            }
            add(f);
        }
    }
    out
}

/// A file [`resolve`] found: the path, relative to the top, and whether it is a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub rel: PathBuf,
    /// A symbolic link stands there: it cannot be bound read-only by itself (a bind follows
    /// it, and its folder is the agent's), so the caller must refuse or widen.
    pub link: bool,
}

/// The existing regular files (and links) of the work tree at `top` that `lexed` names, each
/// once. Folders are not returned (a `cd frontend` must not freeze `frontend/`), and nothing
/// in a `.git` folder. No link is followed.
pub fn resolve(lexed: &Lexed, top: &Path) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let add = |rel: PathBuf, out: &mut Vec<Found>| {
        let Ok(m) = std::fs::symlink_metadata(top.join(&rel)) else {
            return;
        };
        let link = m.file_type().is_symlink();
        if !(link || m.is_file()) {
            return;
        }
        if !out.iter().any(|f| f.rel == rel) {
            out.push(Found { rel, link });
        }
    };
    for c in &lexed.candidates {
        // From the top, and from each folder a `cd` named (each relative to the top, and the
        // later ones relative to the earlier).
        let mut bases: Vec<String> = vec![String::new()];
        let mut acc = String::new();
        for d in &c.cd {
            bases.push(d.clone());
            acc = if acc.is_empty() {
                d.clone()
            } else {
                format!("{acc}/{d}")
            };
            bases.push(acc.clone());
        }
        for b in &bases {
            let join = |p: &str| -> Option<PathBuf> {
                if b.is_empty() {
                    in_tree(p, top)
                } else {
                    in_tree(&format!("{b}/{p}"), top)
                }
            };
            match &c.shape {
                Shape::Path(p) => {
                    if let Some(rel) = join(p) {
                        add(rel, &mut out);
                    }
                }
                Shape::Glob(g) => {
                    let (dir, pat) = match g.rsplit_once('/') {
                        Some((d, p)) => (d, p),
                        None => ("", g.as_str()),
                    };
                    if dir.contains(['*', '?', '[']) {
                        continue;
                    }
                    let folder = if dir.is_empty() {
                        join(".").or_else(|| b.is_empty().then(PathBuf::new))
                    } else {
                        join(dir)
                    };
                    let Some(folder) = folder else { continue };
                    let Ok(rd) = std::fs::read_dir(top.join(&folder)) else {
                        continue;
                    };
                    for e in rd.flatten() {
                        let name = e.file_name();
                        if let Some(n) = name.to_str() {
                            if glob_match(pat, n) {
                                add(folder.join(n), &mut out);
                            }
                        }
                    }
                }
                Shape::Module(m) => {
                    let parts: Vec<&str> = m.split('.').collect();
                    let path = parts.join("/");
                    for f in [
                        format!("{path}.py"),
                        format!("{path}/__main__.py"),
                        format!("{path}/__init__.py"),
                    ] {
                        if let Some(rel) = join(&f) {
                            add(rel, &mut out);
                        }
                    }
                    for n in 1..parts.len() {
                        if let Some(rel) = join(&format!("{}/__init__.py", parts[..n].join("/"))) {
                            add(rel, &mut out);
                        }
                    }
                }
                Shape::MakeDir(d) => {
                    for f in crate::catalogue::MAKEFILES {
                        if let Some(rel) = join(&format!("{d}/{f}")) {
                            add(rel, &mut out);
                        }
                    }
                }
                // Folders are [`reach`]'s.
                Shape::Dir(_) => {}
            }
        }
    }
    out
}

/// How a reached path is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// The folder, with everything below it: the script it holds, the modules, packages,
    /// `require('./lib')`s and `. ./common.sh`s beside it.
    Folder,
    /// The file alone: it lies at the top, whose folder cannot be made read-only. What an
    /// interpreter finds beside it there stays writable ([`Reached::at_top`]).
    File,
}

/// One work-tree path a command line reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// Relative to the top.
    pub rel: PathBuf,
    pub reach: Reach,
    /// The word or fragment of the text that named it.
    pub word: String,
}

/// What [`reach`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaches {
    pub paths: Vec<Reached>,
    /// Words built at run time from work-tree content ([`Lexed::dynamic`] in a line whose
    /// command substitutions read a work-tree path): what they run cannot be known before
    /// the shell runs, so the caller fails closed.
    pub unresolved: Vec<String>,
    /// [`Lexed::cut`].
    pub cut: bool,
    /// Search roots of an interpreter the line starts that no bind can make read-only: the
    /// top itself (`python3 -m x` run there), or a missing folder or file at a writable place
    /// that the interpreter would read once created (`<top>/node_modules`, `.npmrc`). The
    /// caller reports them (`unguarded[]`) with [`Searched::why`].
    pub searched: Vec<Searched>,
}

/// A search root [`reach`] cannot protect ([`Reaches::searched`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searched {
    /// Relative to the top; empty for the top itself.
    pub rel: PathBuf,
    /// The program word of the command that searches it.
    pub word: String,
    pub why: &'static str,
    /// For the top heading a module path: the names a module planted there takes
    /// ([`crate::catalogue::Interpreter::module_globs`]), which `check` compares.
    pub module_globs: &'static [&'static str],
}

/// Every fragment of `text` that could be a path: the text split on every shell
/// metacharacter and expansion syntax (blanks, quotes, `$`, backquotes, parentheses, braces,
/// brackets, operators, `=`, `:`, `,`, backslashes, glob characters, `~`), each fragment without
/// its leading dashes, and a single-dash option's value stuck to it (`-ftools/x.mk`). An
/// over-approximation on purpose: it does not model the shell, so a shape the lexer does not
/// know (brace expansion `tools/a{4,}.sh`, ANSI-C quoting `$'tools/a\x2esh'`, arithmetic
/// `tools/a$((1)).sh`, `${X:-tools/a.sh}`, `awk 'BEGIN{system("sh tools/a.sh")}'`,
/// `env -S 'sh tools/a.sh'`) still leaves a fragment whose folder is the script's.
pub fn fragments(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |f: &str| {
        if !f.is_empty() && f != "." && f != ".." && !out.iter().any(|o| o == f) {
            out.push(f.to_owned());
        }
    };
    let text = text.replace("~+/", " ").replace("~-/", " ");
    let delim = |c: char| c.is_whitespace() || "'\"`$(){}[];&|<>=:,\\*?!#~@^%".contains(c);
    let mut after_dollar = false;
    let mut start = 0;
    let mut pieces: Vec<(&str, bool)> = Vec::new();
    for (i, c) in text.char_indices() {
        if delim(c) {
            pieces.push((&text[start..i], after_dollar));
            after_dollar = c == '$';
            start = i + c.len_utf8();
        }
    }
    pieces.push((&text[start..], after_dollar));
    for (raw, var) in pieces {
        // `$NAME/x`: the name is a variable's, the rest a literal tail.
        let raw = if var {
            raw.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        } else {
            raw
        };
        let f = raw.trim_start_matches('-');
        add(f);
        if raw.starts_with('-') && !raw.starts_with("--") {
            if let Some((i, _)) = f.char_indices().nth(1) {
                add(&f[i..]);
            }
        }
    }
    out
}

/// The work-tree paths of the work tree at `top` that the command line `text` reaches, each
/// with how it is to be protected (seventh red-team pass, R7-1/R7-3: folder granularity and
/// an over-approximation of the words rather than a model of the shell):
///
/// - every candidate of the lexer ([`lex`], from the top and every folder a `cd` named) and
///   every [`fragments`] piece (from the top) that names an existing file or link: its
///   folder, or the file itself at the top;
/// - a link's target inside the work tree likewise;
/// - a piece with a `/` (or a [`Shape::Dir`] candidate) that names an existing folder: that
///   folder, unless it is only a `cd` target (`cd frontend && npm test` must not freeze
///   `frontend/`; what runs there is reached by its own words);
/// - a piece with a `/` that names nothing yet: its nearest existing folder below the top (a
///   script created where the command will look for it is the attack).
///
/// The top itself is never a folder to protect. Nothing in a `.git` folder, nothing outside
/// the top. No link is followed to decide a kind.
pub fn reach(text: &str, top: &Path) -> Reaches {
    let lexed = lex(text);
    let mut out = Reaches {
        cut: lexed.cut,
        ..Reaches::default()
    };
    let mut cd_targets: Vec<String> = Vec::new();
    for c in &lexed.candidates {
        for d in &c.cd {
            let d = d.trim_end_matches('/').to_owned();
            if !cd_targets.contains(&d) {
                cd_targets.push(d);
            }
        }
    }
    let add = |out: &mut Reaches, rel: PathBuf, word: &str| {
        let (rel, reach) = match rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => (p.to_path_buf(), Reach::Folder),
            _ => (rel, Reach::File),
        };
        add_reached(out, rel, reach, word);
    };
    // Existing files the lexer names (globs, modules, makefiles, `cd` bases).
    for f in resolve(&lexed, top) {
        let word = f.rel.to_string_lossy().into_owned();
        if f.link {
            if let Some(t) = link_target(top, &f.rel) {
                add(&mut out, t, &word);
            }
        }
        add(&mut out, f.rel, &word);
    }
    // Folders and paths the lexer names (from the top and below each `cd`), and every
    // fragment, from the top: (name, a folder word, written with a `/`). Whether a word is a
    // path is decided on the word as written: `cd frontend && npm run build` names no
    // `frontend/build`.
    let mut names: Vec<(String, bool, bool)> = Vec::new();
    for c in &lexed.candidates {
        let (w, dir_word) = match &c.shape {
            Shape::Dir(d) => (d, true),
            Shape::Path(p) => (p, false),
            _ => continue,
        };
        let slash = w.trim_end_matches('/').contains('/');
        names.push((w.clone(), dir_word, slash));
        if !Path::new(w).is_absolute() {
            for b in &c.cd {
                names.push((format!("{b}/{w}"), dir_word, slash));
            }
        }
    }
    for f in fragments(text) {
        let slash = f.trim_end_matches('/').contains('/');
        names.push((f, false, slash));
    }
    for (name, dir_word, slash) in names {
        let Some(rel) = in_tree(&name, top) else {
            continue;
        };
        let m = std::fs::symlink_metadata(top.join(&rel));
        let only_cd = |rel: &Path| {
            cd_targets
                .iter()
                .any(|d| in_tree(d, top).as_deref() == Some(rel))
        };
        match m {
            Ok(m) if m.is_dir() => {
                if (slash || dir_word) && !only_cd(&rel) {
                    add_reached(&mut out, rel, Reach::Folder, &name);
                }
            }
            Ok(m) => {
                if m.file_type().is_symlink() {
                    if let Some(t) = link_target(top, &rel) {
                        add(&mut out, t, &name);
                    }
                }
                add(&mut out, rel, &name);
            }
            Err(_) if slash => {
                let mut a = rel.parent();
                while let Some(d) = a.filter(|d| !d.as_os_str().is_empty()) {
                    if std::fs::symlink_metadata(top.join(d)).is_ok_and(|m| m.is_dir()) {
                        if !only_cd(d) {
                            add_reached(&mut out, d.to_path_buf(), Reach::Folder, &name);
                        }
                        break;
                    }
                    a = d.parent();
                }
            }
            Err(_) => {}
        }
    }
    // The script position (R9-6, R9-9): resolved from a folder known only at run time (the
    // owner's subfolder in `cd -- "${GIT_PREFIX:-.}"`), it could be any folder's file of that
    // name, which no bind can cover: unresolved. Missing, with no folder of its path present
    // below the top, its topmost missing folder is guarded (a placeholder): the agent must
    // not create `scripts/` for `sh scripts/lint.sh`.
    // An interpreter started in such a folder searches it for modules (R9-6 with R9-7).
    for c in lexed
        .commands
        .iter()
        .filter(|c| c.cd.iter().any(|d| d == RUN_TIME_FOLDER))
    {
        if let Some(first) = c.words.first().filter(|f| interpreter_of(f).is_some()) {
            let shown = format!("{first} runs in a folder known only at run time");
            if !out.unresolved.contains(&shown) {
                out.unresolved.push(shown);
            }
        }
    }
    for c in &lexed.scripts {
        let Shape::Path(w) = &c.shape else { continue };
        // `sh ${GIT_PREFIX}tools/x.sh`: a relative path behind a run-time prefix (a tail
        // after `/`, `$HOME/x`, is read from the top like every other word).
        // (`tools/a$((1)).sh` has its folder in the literal head: the fragments cover it.)
        if let Some(i) = w.rfind(UNKNOWN) {
            let tail = &w[i + UNKNOWN.len_utf8()..];
            let head = &w[..w.find(UNKNOWN).unwrap_or(0)];
            if !head.contains('/') && !tail.is_empty() && !tail.starts_with('/') {
                let shown = format!(
                    "{} names a path after a prefix known only at run time",
                    w.replace(UNKNOWN, "$…")
                );
                if !out.unresolved.contains(&shown) {
                    out.unresolved.push(shown);
                }
            }
            continue;
        }
        if w.starts_with('~') || Path::new(w).is_absolute() {
            continue;
        }
        if c.cd.iter().any(|d| d == RUN_TIME_FOLDER) {
            let shown = format!("{w} is resolved after a cd to a folder known only at run time");
            if !out.unresolved.contains(&shown) {
                out.unresolved.push(shown);
            }
            continue;
        }
        // Only a word that reads as a plain path (what the lexer left of an ANSI-C string or
        // a glob is the fragments' and the globs' to cover).
        if !w.trim_end_matches('/').contains('/')
            || w.contains(char::is_whitespace)
            || w.contains(['$', '`', '\\', '\'', '"', '*', '?', '[', '{', '}'])
        {
            continue;
        }
        // From where the shell will look: the top, or the folder of each `cd` before it.
        let bases: Vec<String> = if c.cd.is_empty() {
            vec![String::new()]
        } else {
            c.cd.iter().map(|b| format!("{b}/")).collect()
        };
        for b in bases {
            let Some(rel) = in_tree(&format!("{b}{w}"), top) else {
                continue;
            };
            let mut topmost: Option<PathBuf> = None;
            let mut a = rel.parent();
            while let Some(d) = a.filter(|d| !d.as_os_str().is_empty()) {
                if std::fs::symlink_metadata(top.join(d)).is_ok() {
                    topmost = None;
                    break;
                }
                topmost = Some(d.to_path_buf());
                a = d.parent();
            }
            if let Some(d) = topmost {
                add_reached(&mut out, d, Reach::Folder, w);
            }
        }
    }
    // A program built at run time from what a substitution reads in the work tree.
    if !lexed.dynamic.is_empty() {
        let reads_tree = lexed.substitutions.iter().any(|t| {
            let l = lex(t);
            !resolve(&l, top).is_empty()
                || spelled(&l).iter().chain(fragments(t).iter()).any(|f| {
                    f.contains('/')
                        && in_tree(f, top).is_some_and(|r| top.join(r).symlink_metadata().is_ok())
                })
        });
        if reads_tree {
            out.unresolved.extend(
                lexed
                    .dynamic
                    .iter()
                    .map(|w| format!("{w} is built at run time from work-tree content")),
            );
        }
    }
    search_reach(&lexed, top, &mut out);
    // A folder below another protected folder is covered by it.
    let folders: Vec<PathBuf> = out
        .paths
        .iter()
        .filter(|r| r.reach == Reach::Folder)
        .map(|r| r.rel.clone())
        .collect();
    out.paths
        .retain(|r| !folders.iter().any(|f| *f != r.rel && r.rel.starts_with(f)));
    out
}

fn add_reached(out: &mut Reaches, rel: PathBuf, reach: Reach, word: &str) {
    if rel.as_os_str().is_empty() {
        return;
    }
    if let Some(r) = out.paths.iter_mut().find(|r| r.rel == rel) {
        r.reach = r.reach.min(reach);
        return;
    }
    out.paths.push(Reached {
        rel,
        reach,
        word: word.to_owned(),
    });
}

/// Where the link at `rel` points, as a path below `top` (one step, not followed further).
fn link_target(top: &Path, rel: &Path) -> Option<PathBuf> {
    let t = std::fs::read_link(top.join(rel)).ok()?;
    let abs = if t.is_absolute() {
        t
    } else {
        top.join(rel.parent().unwrap_or(Path::new(""))).join(t)
    };
    in_tree(abs.to_str()?, top)
}

/// `w` (relative to `top`, or absolute below it) as a normal relative path below `top`, not
/// in a `.git` folder.
pub(crate) fn in_tree(w: &str, top: &Path) -> Option<PathBuf> {
    let p = Path::new(w);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        top.join(p)
    };
    let abs = crate::integrity::normalize(&abs);
    let rel = abs.strip_prefix(top).ok()?.to_path_buf();
    let ok = rel.components().count() > 0
        && rel.components().all(|c| match c {
            Component::Normal(n) => !n.eq_ignore_ascii_case(".git"),
            _ => false,
        });
    ok.then_some(rel)
}

/// `sh`'s pattern matching of one path component: `*`, `?`, `[…]` (with `!`/`^` and ranges).
/// A leading `.` is matched only by a literal `.`, as the shell does.
pub(crate) fn glob_match(pat: &str, name: &str) -> bool {
    if name.starts_with('.') && !pat.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(close) = p.iter().skip(2).position(|&c| c == ']').map(|x| x + 2) else {
                    return n.first() == Some(&'[') && go(&p[1..], &n[1..]);
                };
                let Some(&ch) = n.first() else { return false };
                let set = &p[1..close];
                let (neg, set) = match set.first() {
                    Some('!') | Some('^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut k = 0;
                while k < set.len() {
                    if k + 2 < set.len() && set[k + 1] == '-' {
                        hit |= set[k] <= ch && ch <= set[k + 2];
                        k += 3;
                    } else {
                        hit |= set[k] == ch;
                        k += 1;
                    }
                }
                hit != neg && go(&p[close + 1..], &n[1..])
            }
            Some(&c) => n.first() == Some(&c) && go(&p[1..], &n[1..]),
        }
    }
    go(&p, &n)
}

// ------------------------------------------------------------------------------------------
// An interpreter's module search path (ninth red-team pass: R9-1, R9-2, R9-7, R9-8, R9-11,
// R9-12). Folder granularity protects the folder of a named script; an interpreter reads
// more: the folder it starts in (`python3 -m x`: the cwd is `sys.path[0]`), `node_modules/`
// of every folder up to the top, the package around a `node_modules/.bin/` link, the venv
// around a console script. [`crate::catalogue::INTERPRETERS`] says which word reads what.

/// What the interpreters a command line starts search besides the scripts it names, relative
/// to the top ([`interpreter_search`]). Nothing here is tested for existence beyond
/// [`SearchedPath::exists`]: the settings guard guards names that do not exist yet.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Search {
    /// Folders read whole: a package tree around a program word (`node_modules/`), a venv
    /// holding one (`.venv/`), `node_modules/` of every folder from a Node script's up to
    /// the top, the folder a module-searching interpreter starts in when it is below the top.
    pub folders: Vec<SearchedPath>,
    /// Files in the start folder read as code or as settings that load code (`.npmrc`,
    /// `Gemfile`, [`crate::catalogue::Interpreter::top_reads`]).
    pub files: Vec<SearchedPath>,
    /// The top itself heads an interpreter's module path.
    pub top: Vec<TopSearch>,
}

/// An interpreter whose module path starts with the top ([`Search::top`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopSearch {
    /// Its program word.
    pub word: String,
    /// The names a module planted there takes
    /// ([`crate::catalogue::Interpreter::module_globs`]).
    pub module_globs: &'static [&'static str],
    /// Because its script lies at the top (`python3 check.py`), which [`reach`] reports as
    /// [`Reach::File`] already; else it starts there (`python3 -m x`).
    pub script_at_top: bool,
}

/// One path of a [`Search`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchedPath {
    /// Relative to the top, never empty.
    pub rel: PathBuf,
    /// The program word of the command that reads it.
    pub word: String,
    /// Something (of any kind; a link is not followed) stands there now.
    pub exists: bool,
    /// Why it is reported when it is missing.
    pub why: &'static str,
}

/// The catalogue row of a program word (its base name), if it is an interpreter.
fn interpreter_of(word: &str) -> Option<&'static crate::catalogue::Interpreter> {
    let name = base_name(word);
    crate::catalogue::INTERPRETERS
        .iter()
        .find(|i| i.names.contains(&name) || i.prefixes.iter().any(|p| name.starts_with(p)))
}

/// The interpreter word of a `#!` line (`#!/usr/bin/env node` → `node`), of a file of the
/// work tree; the path of the interpreter as written (for a venv's python).
fn shebang(top: &Path, rel: &Path) -> Option<String> {
    use std::io::Read;
    let m = std::fs::symlink_metadata(top.join(rel)).ok()?;
    if !m.is_file() {
        return None;
    }
    let mut b = [0u8; 256];
    let n = std::fs::File::open(top.join(rel)).ok()?.read(&mut b).ok()?;
    let line = std::str::from_utf8(&b[..n]).ok()?.lines().next()?;
    let mut w = line.strip_prefix("#!")?.split_whitespace();
    let interp = w.next()?;
    if base_name(interp) == "env" {
        return w
            .find(|a| !a.starts_with('-') && !a.contains('='))
            .map(str::to_owned);
    }
    Some(interp.to_owned())
}

/// Whether the folder an interpreter starts in heads its module path for these arguments
/// ([`crate::catalogue::StartFolder`]), and the script operand when there is one.
fn starts_in_cwd<'a>(
    row: &crate::catalogue::Interpreter,
    args: &'a [String],
) -> (bool, Option<&'a String>) {
    use crate::catalogue::StartFolder;
    let opts = match row.start_folder {
        StartFolder::Never => return (false, None),
        StartFolder::Always => return (true, None),
        StartFolder::WithoutScript(o) => o,
    };
    let mut safe = false;
    let mut k = 0;
    while k < args.len() {
        let a = &args[k];
        k += 1;
        if a == "-" {
            return (!safe, None);
        }
        if a.starts_with("--") {
            if row.value_options.contains(&a.as_str()) {
                k += 1;
            }
            continue;
        }
        if let Some(flags) = a.strip_prefix('-') {
            // A cluster of one-letter options (`-Bm`, `-mpre_commit`, `-IW error`).
            for (i, ch) in flags.char_indices() {
                let f = format!("-{ch}");
                if row.safe_flags.contains(&f.as_str()) {
                    safe = true;
                }
                if opts.contains(&f.as_str()) {
                    return (!safe, None);
                }
                if row.value_options.contains(&f.as_str()) {
                    if flags[i + ch.len_utf8()..].is_empty() {
                        k += 1;
                    }
                    break;
                }
            }
            continue;
        }
        return (false, Some(a));
    }
    // No script: it reads the program from stdin, with the cwd first on its path.
    (!safe, None)
}

/// `rel` below `top` when `w` (relative to `base`, a folder below the top, or absolute)
/// names a path there; `base` empty is the top.
fn in_tree_from(w: &str, base: &Path, top: &Path) -> Option<PathBuf> {
    if w.contains(UNKNOWN) || w.starts_with('-') || w.is_empty() {
        return None;
    }
    if base.as_os_str().is_empty() || Path::new(w).is_absolute() {
        in_tree(w, top)
    } else {
        in_tree(&format!("{}/{w}", base.display()), top)
    }
}

/// The folder a command starts in after its `cd`s, relative to the top (empty: the top);
/// `None` when it leaves the work tree.
fn start_of(cd: &[String], top: &Path) -> Option<PathBuf> {
    if cd.iter().any(|d| d == RUN_TIME_FOLDER) {
        return None;
    }
    let mut cur = top.to_path_buf();
    for d in cd {
        let d = d.trim_end_matches('/');
        let p = Path::new(d);
        cur = crate::integrity::normalize(&if p.is_absolute() {
            p.to_path_buf()
        } else {
            cur.join(p)
        });
    }
    if cur == top {
        return Some(PathBuf::new());
    }
    in_tree(cur.to_str()?, top)
}

/// What the interpreters that `lexed` starts read besides the scripts it names (see
/// [`Search`] and [`crate::catalogue::INTERPRETERS`]). A superset: any command whose program
/// word is an interpreter, a work-tree script whose `#!` names one, or a word built at run
/// time followed by `-m` (pre-commit's installed hook: `"$INSTALL_PYTHON" -mpre_commit`).
pub fn interpreter_search(lexed: &Lexed, top: &Path) -> Search {
    use crate::catalogue::{INTERPRETERS, WHY_UPWARD_MISSING};
    use crate::catalogue::{PACKAGE_TREES, VENV_MARKER, WHY_START_TOP, WHY_TOP_READ};
    let mut out = Search::default();
    let exists = |rel: &Path| std::fs::symlink_metadata(top.join(rel)).is_ok();
    let push = |v: &mut Vec<SearchedPath>, rel: PathBuf, word: &str, why: &'static str| {
        if rel.as_os_str().is_empty() || v.iter().any(|p| p.rel == rel) {
            return;
        }
        v.push(SearchedPath {
            exists: exists(&rel),
            rel,
            word: word.to_owned(),
            why,
        });
    };
    for c in &lexed.commands {
        let Some(first) = c.words.first() else {
            continue;
        };
        let args = &c.words[1..];
        let start = start_of(&c.cd, top);
        let base = start.clone().unwrap_or_default();
        // The work-tree paths the command's words name (from its start folder and from the
        // top), with the targets of links among them.
        let mut paths: Vec<PathBuf> = Vec::new();
        for w in &c.words {
            for b in [base.as_path(), Path::new("")] {
                if let Some(rel) = in_tree_from(w, b, top) {
                    if exists(&rel) && !paths.contains(&rel) {
                        if let Some(t) = link_target(top, &rel) {
                            paths.push(t);
                        }
                        paths.push(rel);
                    }
                }
            }
        }
        // The interpreter: the program word, a work-tree program's `#!`, or a word built at
        // run time followed by `-m`.
        let program = in_tree_from(first, &base, top)
            .filter(|r| exists(r))
            .or_else(|| in_tree_from(first, Path::new(""), top).filter(|r| exists(r)));
        let mut script_dirs: Vec<PathBuf> = Vec::new();
        let mut row = interpreter_of(first);
        let mut interp_args: &[String] = args;
        if let Some(p) = &program {
            let real = link_target(top, p).unwrap_or_else(|| p.clone());
            if let Some(i) = shebang(top, &real) {
                if let Some(r) = in_tree(&i, top) {
                    paths.push(r);
                }
                if row.is_none() {
                    row = interpreter_of(&i);
                    script_dirs.push(real.parent().map(Path::to_path_buf).unwrap_or_default());
                    // The program is the script: no script operand to look for.
                    interp_args = &[];
                }
            }
        }
        if row.is_none()
            && first.contains(UNKNOWN)
            && args
                .iter()
                .any(|a| a.starts_with("-m") && !a.starts_with("--"))
        {
            row = INTERPRETERS.first();
        }
        // Package trees and venvs around every path the command names.
        for rel in &paths {
            let comps: Vec<_> = rel.components().collect();
            if let Some(i) = comps.iter().position(|c| {
                PACKAGE_TREES
                    .iter()
                    .any(|t| c.as_os_str() == std::ffi::OsStr::new(t))
            }) {
                if i + 1 < comps.len() {
                    let tree: PathBuf = comps[..=i].iter().collect();
                    push(&mut out.folders, tree, first, WHY_UPWARD_MISSING);
                }
            }
            let mut a = rel.parent();
            while let Some(d) = a.filter(|d| !d.as_os_str().is_empty()) {
                if std::fs::symlink_metadata(top.join(d).join(VENV_MARKER))
                    .is_ok_and(|m| m.is_file())
                {
                    push(&mut out.folders, d.to_path_buf(), first, WHY_UPWARD_MISSING);
                    break;
                }
                a = d.parent();
            }
        }
        let Some(row) = row else { continue };
        let word = base_name(first).to_owned();
        let (cwd_first, script) = if interp_args.is_empty() && !script_dirs.is_empty() {
            (false, None)
        } else {
            starts_in_cwd(row, interp_args)
        };
        if let Some(s) = script.and_then(|s| in_tree_from(s, &base, top)) {
            let dir = s.parent().map(Path::to_path_buf).unwrap_or_default();
            if dir.as_os_str().is_empty()
                && row.start_folder != crate::catalogue::StartFolder::Never
            {
                // `python3 check.py` at the top: the top is `sys.path[0]`.
                out.top.push(TopSearch {
                    word: word.clone(),
                    module_globs: row.module_globs,
                    script_at_top: true,
                });
            }
            script_dirs.push(dir);
        }
        for a in interp_args.iter().filter(|a| !a.starts_with('-')) {
            if let Some(rel) = in_tree_from(a, &base, top).filter(|r| exists(r)) {
                let dir = rel.parent().map(Path::to_path_buf).unwrap_or_default();
                if !script_dirs.contains(&dir) {
                    script_dirs.push(dir);
                }
            }
        }
        let Some(start) = start else { continue };
        // `python3 -m pkg.mod` / `-mpkg`: the package named, from the start folder, whole
        // (pre-commit's own repository runs its work tree's `pre_commit/` this way).
        if row.start_folder != crate::catalogue::StartFolder::Never {
            let mut it = interp_args.iter();
            while let Some(a) = it.next() {
                let m = match a.strip_prefix("-m") {
                    Some("") => it.next().map(String::as_str),
                    Some(m) if !a.starts_with("--") => Some(m),
                    _ => None,
                };
                if let Some(pkg) = m.and_then(|m| m.split('.').next()) {
                    if !pkg.is_empty() && !pkg.contains(UNKNOWN) && !pkg.contains('/') {
                        let rel = start.join(pkg);
                        if std::fs::symlink_metadata(top.join(&rel)).is_ok_and(|m| m.is_dir()) {
                            push(&mut out.folders, rel, &word, WHY_START_TOP);
                        }
                    }
                    break;
                }
            }
        }
        if cwd_first {
            if start.as_os_str().is_empty() {
                out.top.push(TopSearch {
                    word: word.clone(),
                    module_globs: row.module_globs,
                    script_at_top: false,
                });
            } else {
                push(&mut out.folders, start.clone(), &word, WHY_START_TOP);
            }
        }
        for name in row.top_reads {
            push(&mut out.files, start.join(name), &word, WHY_TOP_READ);
        }
        script_dirs.push(start);
        for d in &script_dirs {
            let mut a = Some(d.as_path());
            while let Some(dir) = a {
                for u in row.upward {
                    push(&mut out.folders, dir.join(u), &word, WHY_UPWARD_MISSING);
                }
                if dir.as_os_str().is_empty() {
                    break;
                }
                a = dir.parent();
            }
        }
    }
    out.top.dedup();
    out
}

/// [`reach`]'s part of [`interpreter_search`]: an existing folder is protected whole, an
/// existing file like a named script, and what cannot be protected — the top heading a
/// module path, a missing folder or file the interpreter would read — is
/// [`Reaches::searched`].
fn search_reach(lexed: &Lexed, top: &Path, out: &mut Reaches) {
    let s = interpreter_search(lexed, top);
    let mut searched = |rel: PathBuf, word: &str, why: &'static str| {
        if !out.searched.iter().any(|x| x.rel == rel) {
            out.searched.push(Searched {
                rel,
                word: word.to_owned(),
                why,
                module_globs: &[],
            });
        }
    };
    // A script at the top is reported as such (`Reach::File`, its own reason).
    for t in s.top.iter().filter(|t| !t.script_at_top) {
        searched(PathBuf::new(), &t.word, crate::catalogue::WHY_START_TOP);
    }
    let mut reached: Vec<(PathBuf, Reach, String)> = Vec::new();
    for f in &s.folders {
        if f.exists {
            reached.push((f.rel.clone(), Reach::Folder, f.word.clone()));
        } else {
            searched(f.rel.clone(), &f.word, f.why);
        }
    }
    for f in &s.files {
        if !f.exists {
            searched(f.rel.clone(), &f.word, f.why);
            continue;
        }
        match f.rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => {
                reached.push((p.to_path_buf(), Reach::Folder, f.word.clone()))
            }
            _ => {
                searched(f.rel.clone(), &f.word, f.why);
                reached.push((f.rel.clone(), Reach::File, f.word.clone()));
            }
        }
    }
    for (rel, reach, word) in reached {
        add_reached(out, rel, reach, &word);
    }
    // A missing path below a protected folder cannot be created.
    let folders: Vec<PathBuf> = out
        .paths
        .iter()
        .filter(|r| r.reach == Reach::Folder)
        .map(|r| r.rel.clone())
        .collect();
    out.searched
        .retain(|x| x.rel.as_os_str().is_empty() || !folders.iter().any(|f| x.rel.starts_with(f)));
    // The top heading a module path: the names a module planted there takes.
    if let Some(x) = out
        .searched
        .iter_mut()
        .find(|x| x.rel.as_os_str().is_empty())
    {
        let mut globs: &'static [&'static str] = &[];
        for t in s.top.iter().filter(|t| !t.script_at_top) {
            if globs.len() < t.module_globs.len() {
                globs = t.module_globs;
            }
        }
        x.module_globs = globs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        lex(text)
            .candidates
            .into_iter()
            .filter_map(|c| match c.shape {
                Shape::Path(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for f in files {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        t
    }

    fn found(text: &str, t: &tempfile::TempDir) -> Vec<String> {
        let mut v: Vec<String> = resolve(&lex(text), t.path())
            .into_iter()
            .map(|f| f.rel.to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn words_quotes_escapes_and_operators() {
        assert_eq!(paths("sh tools/a.sh"), ["sh", "tools/a.sh"]);
        assert_eq!(paths(r#"sh "tools/a b.sh""#), ["sh", "tools/a b.sh"]);
        assert_eq!(paths(r"sh tools\/a.sh"), ["sh", "tools/a.sh"]);
        assert_eq!(paths("sh tools/a.sh;"), ["sh", "tools/a.sh"]);
        assert_eq!(
            paths("sh tools/a.sh&&echo ok"),
            ["sh", "tools/a.sh", "echo", "ok"]
        );
        assert_eq!(paths("git log | less -R"), ["git", "log", "less"]);
        assert_eq!(paths("sh 'tools/a.sh' # tools/b.sh"), ["sh", "tools/a.sh"]);
    }

    #[test]
    fn redirections_read_and_write() {
        assert_eq!(paths("sh <tools/a.sh"), ["tools/a.sh", "sh"]);
        assert_eq!(paths("sh < tools/a.sh"), ["tools/a.sh", "sh"]);
        // Written, not read; a descriptor number is no word.
        assert_eq!(paths("sh x.sh 2>log.txt >out"), ["sh", "x.sh"]);
        // A here-document's delimiter is no file.
        assert_eq!(paths("sh <<EOF"), ["sh"]);
        assert_eq!(paths("sh <<<tools/a.sh"), ["tools/a.sh", "sh"]);
    }

    #[test]
    fn substitutions_are_read_as_commands_and_tails_kept() {
        assert_eq!(paths("sh $(echo tools/a.sh)"), ["echo", "tools/a.sh", "sh"]);
        assert_eq!(paths("sh `echo tools/a.sh`"), ["echo", "tools/a.sh", "sh"]);
        assert_eq!(
            paths(r#"sh "$(git rev-parse --show-toplevel)/tools/a.sh""#),
            ["git", "rev-parse", "sh", "tools/a.sh"]
        );
        assert_eq!(paths("sh $HOME_X/tools/a.sh"), ["sh", "tools/a.sh"]);
        // `{` and `}` are syntax (R11-1), not words.
        assert_eq!(paths("f() { sh $1; }; f"), ["f", "sh"]);
    }

    #[test]
    fn shell_dash_c_eval_env_and_assignments() {
        assert_eq!(paths("sh -c 'tools/a.sh --x'"), ["sh", "tools/a.sh"]);
        assert_eq!(
            paths("bash -ec \"sh tools/a.sh\""),
            ["bash", "sh", "tools/a.sh"]
        );
        assert_eq!(paths("eval sh tools/a.sh"), ["eval", "sh", "tools/a.sh"]);
        assert_eq!(
            paths("env -i X=tools/b.sh sh tools/a.sh"),
            ["env", "tools/b.sh", "sh", "tools/a.sh"]
        );
        assert_eq!(paths("X=1 exec ./run"), ["1", "exec", "./run"]);
        assert_eq!(
            paths("lint --config=tools/l.toml"),
            ["lint", "tools/l.toml"]
        );
    }

    #[test]
    fn cd_module_and_make_shapes() {
        let l = lex("cd tools && sh a.sh");
        let a = l
            .candidates
            .iter()
            .find(|c| c.shape == Shape::Path("a.sh".into()))
            .unwrap();
        assert_eq!(a.cd, ["tools"]);
        assert!(lex("python3 -m tools.a")
            .candidates
            .iter()
            .any(|c| c.shape == Shape::Module("tools.a".into())));
        assert!(lex("make -s -C tools t")
            .candidates
            .iter()
            .any(|c| c.shape == Shape::MakeDir("tools".into())));
        assert!(lex("make --directory=tools")
            .candidates
            .iter()
            .any(|c| c.shape == Shape::MakeDir("tools".into())));
    }

    #[test]
    fn unterminated_and_deep_text_is_cut() {
        assert!(!lex("sh 'tools/a.sh").cut);
        assert!(!lex("sh $(echo x").cut);
        let mut deep = "tools/a.sh".to_owned();
        for _ in 0..12 {
            deep = format!("echo $({deep})");
        }
        assert!(lex(&deep).cut);
        assert!(!lex("echo $(echo $(sh tools/a.sh))").cut);
        assert!(!lex("sh tools/a.sh").cut);
    }

    #[test]
    fn resolves_every_shape_of_the_sixth_pass() {
        let t = tree(&[
            "tools/a1.sh",
            "tools/a13.sh",
            "tools/a8.sh",
            "tools/a5.py",
            "tools/__init__.py",
            "tools/Makefile",
            "tools/a16.sh",
            "lib/x.sh",
        ]);
        assert_eq!(found("!sh <tools/a1.sh", &t), ["tools/a1.sh"]);
        assert_eq!(found("sh tools/a1[3].sh", &t), ["tools/a13.sh"]);
        assert_eq!(
            found("sh tools/a1*.sh", &t),
            ["tools/a1.sh", "tools/a13.sh", "tools/a16.sh"]
        );
        assert_eq!(found("cd tools && sh a8.sh", &t), ["tools/a8.sh"]);
        assert_eq!(
            found("python3 -m tools.a5", &t),
            ["tools/__init__.py", "tools/a5.py"]
        );
        assert_eq!(found("make -s -C tools a11", &t), ["tools/Makefile"]);
        assert_eq!(found("sh $(echo tools/a16.sh)", &t), ["tools/a16.sh"]);
        assert_eq!(found(r"sh tools\/a1.sh;", &t), ["tools/a1.sh"]);
        // Folders are not files to protect; `.git` and paths outside the top are never named.
        assert!(found("cd tools && make", &t).is_empty());
        assert!(found("cat .git/config ../x /etc/passwd", &t).is_empty());
        assert_eq!(
            found(&format!("sh {}/lib/x.sh", t.path().display()), &t),
            ["lib/x.sh"]
        );
    }

    #[test]
    fn links_are_named_as_links() {
        let t = tree(&["lib/real.sh"]);
        std::os::unix::fs::symlink("../lib/real.sh", t.path().join("lib/l.sh")).unwrap();
        let f = resolve(&lex("sh lib/l.sh"), t.path());
        assert_eq!(
            f,
            [Found {
                rel: "lib/l.sh".into(),
                link: true
            }]
        );
    }

    #[test]
    fn glob_matching_is_the_shells() {
        assert!(glob_match("a[0-9].sh", "a5.sh"));
        assert!(!glob_match("a[!0-9].sh", "a5.sh"));
        assert!(glob_match("*.sh", "x.sh"));
        assert!(!glob_match("*.sh", ".x.sh"));
        assert!(glob_match("?", "a"));
        assert!(glob_match("a[", "a["));
    }

    /// What `reach` protects, as `dir/` for a folder and `file` for a file at the top.
    fn reached(text: &str, t: &tempfile::TempDir) -> Vec<String> {
        let mut v: Vec<String> = reach(text, t.path())
            .paths
            .into_iter()
            .map(|r| match r.reach {
                Reach::Folder => format!("{}/", r.rel.display()),
                Reach::File => r.rel.display().to_string(),
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn every_shape_of_the_seventh_pass_reaches_the_scripts_folder() {
        let t = tree(&[
            "tools/a4.sh",
            "tools/a5.sh",
            "tools/a6.sh",
            "tools/a9.sh",
            "tools/a10.sh",
            "tools/a11dir/__main__.py",
            "tools/a13.sh",
            "tools/a19.sh",
            "tools/a24.sh",
            "tools/a28.sh",
            "tools/a34.mk",
            "tools/a50.py",
            "tools/a58.args",
            "node_modules/.bin/a12",
            "src/main.rs",
            "top.py",
        ]);
        for shape in [
            r#"bash -c "bash tools/a{4,}.sh""#,
            r#"bash -c "bash $'tools/a5\x2esh'""#,
            "bash -c 'bash ~+/tools/a6.sh'",
            r"find tools -name a9.sh -exec sh {} \;",
            "PATH=tools:$PATH a10.sh",
            "sh tools/a$((13)).sh",
            "sh ${X:-tools/a19.sh}",
            r#"awk 'BEGIN{system("sh tools/a24.sh")}'"#,
            "env -S 'sh tools/a28.sh'",
            "make -s -ftools/a34.mk",
            "python3 tools/a50.py",
            "xargs -a tools/a58.args sh",
            "sh tools/not-yet.sh",
        ] {
            assert_eq!(reached(shape, &t), ["tools/"], "{shape}");
        }
        // `npx` reads the whole package tree (R9-8).
        assert_eq!(reached("npx a12", &t), ["node_modules/"]);
        // `python3 dir` runs `dir/__main__.py`: the folder named.
        assert_eq!(reached("python3 tools/a11dir", &t), ["tools/a11dir/"]);
        // A script at the top is protected by itself.
        assert_eq!(reached("python3 top.py", &t), ["top.py"]);
        // A `cd` target alone is no folder to protect; bare words name no folder.
        assert!(reached("cd src && cargo test", &t).is_empty());
        assert!(reached("cargo test; git log -- src", &t).is_empty());
        // `npm` runs the project's packages: their tree, not `src/` (R9-8).
        assert_eq!(reached("npm test; git log -- src", &t), ["node_modules/"]);
        assert_eq!(reached("cd tools && npm run a11dir", &t), ["node_modules/"]);
        // A folder named with a `/`, or a pathspec below one, is.
        assert_eq!(reached("git log -- src/main.rs", &t), ["src/"]);
    }

    #[test]
    fn a_program_built_from_work_tree_content_is_unresolved() {
        let t = tree(&["list", "tools/x.sh"]);
        let dynamic = ["$… is built at run time from work-tree content"];
        assert_eq!(reach("sh $(cat list)", t.path()).unresolved, dynamic);
        assert_eq!(
            reach("x=$(cat tools/x.sh); sh $x", t.path()).unresolved,
            dynamic
        );
        // Built from what is not the work tree, or with a literal path left in it: resolved.
        assert!(reach("$EDITOR x; sh $1", t.path()).unresolved.is_empty());
        assert!(reach(
            r#"sh "$(git rev-parse --show-toplevel)/tools/x.sh""#,
            t.path()
        )
        .unresolved
        .is_empty());
        assert!(reach(r#"exec "$(command -v python3)" -m x"#, t.path())
            .unresolved
            .is_empty());
    }

    /// R9-9: a script named in the script position whose folder does not exist yet has its
    /// topmost missing folder guarded; words elsewhere (`git rebase origin/main`), a `-c`
    /// string and a missing path below an existing folder add nothing new.
    #[test]
    fn a_missing_scripts_folder_is_guarded() {
        let t = tree(&["tools/x.sh"]);
        assert_eq!(reached("sh scripts/lint.sh", &t), ["scripts/"]);
        assert_eq!(reached("bash -e scripts/a/b.sh", &t), ["scripts/"]);
        assert_eq!(reached("python3 -u ci/run.py arg", &t), ["ci/"]);
        assert_eq!(reached("./bin/tool --fix", &t), ["bin/"]);
        assert_eq!(reached("cd sub && sh scripts/x.sh", &t), ["sub/"]);
        // R11-2: `. file`, `make -f file`, a function body, a `sh -c` string.
        assert_eq!(reached(". scripts/lint.sh", &t), ["scripts/"]);
        assert_eq!(reached("source scripts/lint.sh", &t), ["scripts/"]);
        assert_eq!(reached("make -s -f scripts/Makefile", &t), ["scripts/"]);
        assert_eq!(reached("f() { sh scripts/lint.sh; }; f", &t), ["scripts/"]);
        assert_eq!(reached(r#"sh -c "sh scripts/lint.sh""#, &t), ["scripts/"]);
        assert!(reached("git rebase origin/main", &t).is_empty());
        assert!(reached("sh -c 'echo a/b'", &t).is_empty());
        assert!(reached("python3 -c 'print(1/2)'", &t).is_empty());
        assert!(reached("python3 -m a.b", &t).is_empty());
        assert_eq!(reached("sh tools/new/y.sh", &t), ["tools/"]);
    }

    /// R9-6: a script resolved after a `cd` to a folder only the running shell knows (the
    /// owner's subfolder for an alias) is unresolved; the top spelled as a substitution and
    /// commands that name no script are not.
    #[test]
    fn a_script_after_a_cd_to_a_run_time_folder_is_unresolved() {
        let t = tree(&["tools/lint.sh"]);
        for text in [
            r#"cd -- "${GIT_PREFIX:-.}" && sh tools/lint.sh"#,
            r#"cd "$GIT_PREFIX" && ./tools/lint.sh"#,
            r#"cd "$(dirname "$0")"; python3 x.py"#,
            r#"sh ${GIT_PREFIX}tools/lint.sh"#,
            r#"sh "$GIT_PREFIX"lint.sh"#,
            r#"cd "$GIT_PREFIX" && python3 -m black ."#,
        ] {
            assert!(!reach(text, t.path()).unresolved.is_empty(), "{text}");
        }
        // The eleventh pass's shapes (R11-1): the same cd inside `sh -c`, a function body,
        // `env -C`, `pushd` in `bash -c`, `eval`, and `cd -`.
        for text in [
            r#"sh -c 'cd "$GIT_PREFIX" && sh tools/lint.sh'"#,
            r#"f() { cd "$GIT_PREFIX" && sh tools/lint.sh; }; f"#,
            r#"env -C "$GIT_PREFIX" sh tools/lint.sh"#,
            r#"bash -c 'pushd "$GIT_PREFIX" >/dev/null; sh tools/lint.sh'"#,
            r#"eval "cd $GIT_PREFIX" && sh tools/lint.sh"#,
            r#"cd - && sh tools/lint.sh"#,
            // R12-2: make's own -C, env -C behind wrappers with option values.
            r#"make -s -C "$GIT_PREFIX" -f Makefile lint"#,
            r#"make --directory="$GIT_PREFIX" lint"#,
            r#"timeout 60 env -C "$GIT_PREFIX" sh tools/lint.sh"#,
            r#"nice -n 5 env --chdir="$GIT_PREFIX" sh tools/lint.sh"#,
        ] {
            assert!(!reach(text, t.path()).unresolved.is_empty(), "{text}");
        }
        for text in [
            r#"cd -- "${GIT_PREFIX:-.}" && git add -p"#,
            r#"cd "$(git rev-parse --show-toplevel)" && sh tools/lint.sh"#,
            r#"cd "$HOME/src" && ls"#,
            r#"sh "$(git rev-parse --show-toplevel)/tools/lint.sh""#,
        ] {
            assert!(reach(text, t.path()).unresolved.is_empty(), "{text}");
        }
        assert_eq!(
            reached(
                r#"cd "$(git rev-parse --show-toplevel)" && sh tools/lint.sh"#,
                &t
            ),
            ["tools/"]
        );
    }

    #[test]
    fn links_reach_their_targets_folder() {
        let t = tree(&["node_modules/pkg/cli.js", "node_modules/.bin/x"]);
        std::fs::remove_file(t.path().join("node_modules/.bin/x")).unwrap();
        std::os::unix::fs::symlink("../pkg/cli.js", t.path().join("node_modules/.bin/x")).unwrap();
        // The link's folder and its target's, inside one package tree: the tree (R9-8).
        assert_eq!(reached("npx x", &t), ["node_modules/"]);
    }

    /// [`reach`]'s searched roots, as `rel` (`.` for the top).
    fn searched(text: &str, t: &tempfile::TempDir) -> Vec<String> {
        let mut v: Vec<String> = reach(text, t.path())
            .searched
            .into_iter()
            .map(|s| match s.rel.as_os_str().is_empty() {
                true => ".".to_owned(),
                false => s.rel.display().to_string(),
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn python_m_and_c_search_the_folder_they_start_in() {
        let t = tree(&["tools/fsm.py", "tools/__init__.py", "src/a.py"]);
        // R9-7: `-m` of an installed module, `-c`, stdin, pre-commit's `-mpre_commit` after a
        // program word built at run time: the top heads sys.path, reported.
        let r = reach("exec python3 -m pytest -q", t.path());
        assert!(r.searched[0].module_globs.contains(&"*.py"), "{r:?}");
        for shape in [
            "exec python3 -m pytest -q",
            "python3 -c 'import black'",
            "python3 -Bm black --check .",
            "python3.12 -W error -m mypy",
            "python3 - <x",
            "exec \"$INSTALL_PYTHON\" -mpre_commit \"${ARGS[@]}\"",
        ] {
            assert_eq!(searched(shape, &t), ["."], "{shape}");
            assert!(reached(shape, &t).is_empty(), "{shape}");
        }
        // R9-1: `-m tools.fsm`: the package's folder, and the top.
        assert_eq!(reached("python3 -m tools.fsm", &t), ["tools/"]);
        assert_eq!(searched("python3 -m tools.fsm", &t), ["."]);
        // The package `-m` names, stuck to the option too: its folder whole.
        let u = tree(&["pre_commit/__main__.py", "pre_commit/__init__.py"]);
        assert_eq!(
            reached("exec \"$INSTALL_PYTHON\" -mpre_commit \"${ARGS[@]}\"", &u),
            ["pre_commit/"]
        );
        // Started below the top: that folder, protected whole; nothing left open.
        assert_eq!(reached("cd src && python3 -m pytest", &t), ["src/"]);
        assert!(searched("cd src && python3 -m pytest", &t).is_empty());
        // `-P`/`-I` take the cwd off the path; a script in a folder puts its folder there.
        assert!(searched("python3 -P -m pytest", &t).is_empty());
        assert!(searched("python3 -Im pytest", &t).is_empty());
        assert!(searched("python3 tools/fsm.py", &t).is_empty());
        // A script at the top: the top is sys.path[0], reported with the script (its own
        // reason, `Reach::File`).
        assert!(searched("python3 check.py", &t).is_empty());
        assert!(interpreter_search(&lex("python3 check.py"), t.path()).top[0].script_at_top);
        // Not an interpreter, or one that does not search the cwd.
        assert!(searched("go test -m x; ruby tools/x.rb; perl -e 1", &t).is_empty());
    }

    #[test]
    fn node_searches_node_modules_up_to_the_top() {
        let t = tree(&["tools/fsm.js", "node_modules/helper/index.js", "web/a/b.js"]);
        // R9-1: the script's folder and the top's node_modules, whole.
        assert_eq!(
            reached("node tools/fsm.js", &t),
            ["node_modules/", "tools/"]
        );
        assert!(searched("node tools/fsm.js", &t).is_empty());
        // Every folder between the script's and the top: a missing one is reported.
        assert_eq!(searched("node web/a/b.js", &t), ["web/node_modules"]);
        // No node_modules at the top: reported, not frozen.
        let u = tree(&["tools/fsm.js"]);
        assert_eq!(searched("node tools/fsm.js", &u), ["node_modules"]);
        // A script whose `#!` names node.
        let v = tree(&["node_modules/x/i.js"]);
        std::fs::create_dir_all(v.path().join("tools")).unwrap();
        std::fs::write(
            v.path().join("tools/fsm"),
            "#!/usr/bin/env node\nrequire('x')\n",
        )
        .unwrap();
        assert_eq!(reached("tools/fsm", &v), ["node_modules/", "tools/"]);
    }

    #[test]
    fn npx_and_bin_links_reach_the_whole_package_tree() {
        // R9-8: `.bin/tool -> ../tool/bin/cli.js`, `cli.js` requires `../lib/index.js` and
        // its dependencies beside it (a scoped one too).
        let t = tree(&[
            "node_modules/tool/bin/cli.js",
            "node_modules/tool/lib/index.js",
            "node_modules/@scope/dep/index.js",
            "node_modules/.bin/x",
            "vendor/bin/phpunit",
        ]);
        std::fs::remove_file(t.path().join("node_modules/.bin/x")).unwrap();
        std::os::unix::fs::symlink("../tool/bin/cli.js", t.path().join("node_modules/.bin/x"))
            .unwrap();
        std::fs::write(
            t.path().join("node_modules/tool/bin/cli.js"),
            "#!/usr/bin/env node\nrequire('../lib/index.js')\n",
        )
        .unwrap();
        for shape in ["exec npx --no-install x", "npx x", "pnpm exec x"] {
            assert_eq!(reached(shape, &t), ["node_modules/"], "{shape}");
            // `.npmrc` (node-options) is missing at the top: reported.
            assert_eq!(searched(shape, &t), [".npmrc"], "{shape}");
        }
        // The link run directly: its target's `#!` is node's.
        assert_eq!(reached("./node_modules/.bin/x", &t), ["node_modules/"]);
        assert!(searched("./node_modules/.bin/x", &t).is_empty());
        assert_eq!(reached("vendor/bin/phpunit", &t), ["vendor/"]);
        std::fs::write(t.path().join(".npmrc"), "x").unwrap();
        assert_eq!(reached("npx x", &t), [".npmrc", "node_modules/"]);
        assert_eq!(searched("npx x", &t), [".npmrc"]);
    }

    #[test]
    fn a_program_in_a_venv_reaches_the_whole_venv() {
        // R9-11: a console script `#!<top>/.venv/bin/python` reads site-packages/*.pth.
        let t = tree(&[
            ".venv/pyvenv.cfg",
            ".venv/lib/python3.11/site-packages/zz.pth",
            "tools/run.py",
        ]);
        let top = t.path().display().to_string();
        std::fs::create_dir_all(t.path().join(".venv/bin")).unwrap();
        std::fs::write(
            t.path().join(".venv/bin/fsmtool"),
            format!("#!{top}/.venv/bin/python\nimport x\n"),
        )
        .unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3", t.path().join(".venv/bin/python")).unwrap();
        assert_eq!(reached(".venv/bin/fsmtool", &t), [".venv/"]);
        assert_eq!(
            reached("exec .venv/bin/python tools/run.py", &t),
            [".venv/", "tools/"]
        );
        // A script whose `#!` names the venv's python, outside the venv.
        std::fs::write(
            t.path().join("tools/run.py"),
            format!("#!{top}/.venv/bin/python\n"),
        )
        .unwrap();
        assert_eq!(reached("tools/run.py", &t), [".venv/", "tools/"]);
    }

    #[test]
    fn honest_hook_shapes_stay_quiet() {
        let t = tree(&["src/main.rs", ".pre-commit-config.yaml"]);
        for shape in [
            "command -v git-lfs >/dev/null 2>&1 || exit 2\ngit lfs pre-push \"$@\"",
            "delta --paging=never",
            "exec pre-commit hook-impl --config=.pre-commit-config.yaml",
            "lefthook run pre-commit",
        ] {
            assert!(searched(shape, &t).is_empty(), "{shape}");
        }
    }

    /// R11-8: cargo and rustup's proxies read `rust-toolchain.toml` (`path = …` runs any
    /// folder's `cargo`) and `.cargo/config.toml` (`rustc-wrapper`) from where they start:
    /// missing at the top, they are searched roots (`check` compares them); an existing
    /// `.cargo/` is protected whole.
    #[test]
    fn cargo_reads_its_toolchain_file_and_config_folder() {
        let t = tree(&["src/main.rs"]);
        let mut got: Vec<String> = searched("cargo fmt --check && cargo clippy", &t);
        got.sort();
        assert_eq!(got, [".cargo", "rust-toolchain", "rust-toolchain.toml"]);
        let t = tree(&["src/main.rs", ".cargo/config.toml"]);
        assert_eq!(reached("cargo fmt --check", &t), [".cargo/"]);
    }

    #[test]
    fn total_on_arbitrary_text() {
        for s in [
            "", "$", "$(", "`", "\\", "'", "\"", "${", "((", ")))", "<", ">>", "a=b", "-", "--=",
            "$((1+2))",
        ] {
            let _ = lex(s);
        }
    }
}
