//! The scan rules, as data, and the checks on names and contents that they use.
//!
//! Name checks follow git's own (`path.c`: `is_ntfs_dotgit`, `is_ntfs_dot_generic`;
//! `utf8.c`: `is_hfs_dotgit`, `next_hfs_char`; `fsck.c`: `verify_path`), so that a path git
//! would treat as `.git` on some filesystem is caught here on every filesystem.

use crate::catalogue::{self, DriverKind, Severity, TreeDotfile};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// One scan rule: a stable id, how serious a hit is, and why it matters.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    /// Stable id, `GW-SCAN-nnn`. Never reused for another meaning.
    pub id: &'static str,
    /// Short kebab-case name.
    pub name: &'static str,
    pub severity: Severity,
    /// What the rule looks for, in one line.
    pub what: &'static str,
    /// Why it matters, in one line.
    pub why: &'static str,
    /// Research row or CVE it comes from.
    pub source: &'static str,
}

macro_rules! rule {
    ($id:literal, $name:literal, $sev:ident, $what:literal, $why:literal, $src:literal) => {
        Rule {
            id: $id,
            name: $name,
            severity: Severity::$sev,
            what: $what,
            why: $why,
            source: $src,
        }
    };
}

/// Every rule the commit scan applies. `docs/scan-rules.md` is this table.
pub static RULES: &[Rule] = &[
    rule!("GW-SCAN-001", "attributes-filter", Error, "a .gitattributes line sets filter=<driver>, directly or in an [attr] macro", "the owner's filter.<driver>.clean/smudge/process runs on checkout, status and add", "research §1d"),
    rule!("GW-SCAN-002", "attributes-diff", Warning, "a .gitattributes line sets diff=<driver>, directly or in an [attr] macro", "the owner's diff.<driver>.textconv/command runs on diff, log -p, show, blame", "research §1c"),
    rule!("GW-SCAN-003", "attributes-merge", Warning, "a .gitattributes line sets merge=<driver>, directly or in an [attr] macro", "the owner's merge.<driver>.driver runs on merge, rebase, cherry-pick", "research §1d"),
    rule!("GW-SCAN-004", "attributes-export-subst", Warning, "a .gitattributes line sets export-subst", "git archive expands $Format:…$ in the file (CVE-2022-41903 heap overflow)", "CVE-2022-41903"),
    rule!("GW-SCAN-005", "attributes-oversized", Error, ".gitattributes larger than 100 MiB or with a line longer than 2 KiB", "git's attribute parser overflowed on such files (CVE-2022-23521); fsck rejects them", "CVE-2022-23521"),
    rule!("GW-SCAN-010", "gitmodules-url-command", Error, ".gitmodules URL is ext::, <helper>::, starts with '-' or holds a control character", "submodule clone/update runs a command, git-remote-<helper>, or takes the URL as an option", "CVE-2015-7545, CVE-2017-1000117, CVE-2018-17456, CVE-2024-52006"),
    rule!("GW-SCAN-011", "gitmodules-url-local", Warning, ".gitmodules URL is a local path, file:// or relative (./, ../)", "the submodule is cloned from a folder on this machine, which may be one the agent planted (CVE-2024-32004)", "CVE-2024-32004, research §1b"),
    rule!("GW-SCAN-012", "gitmodules-name-path", Error, ".gitmodules submodule name or path has a '..' component, a CR or LF, or starts with '-' or '/'", "puts a submodule git dir (with hooks) outside .git/modules or injects options (CVE-2018-11235, CVE-2025-48384)", "CVE-2018-11235, CVE-2025-48384"),
    rule!("GW-SCAN-013", "gitmodules-update-command", Error, ".gitmodules sets submodule.<name>.update = !<command>", "submodule update runs the command (CVE-2019-19604; git before 2.24.1)", "CVE-2019-19604"),
    rule!("GW-SCAN-014", "gitmodules-unparseable", Warning, ".gitmodules is not valid git config or holds a bare CR", "git and gitward may read it differently; unread is not clean", "CVE-2025-48384"),
    rule!("GW-SCAN-015", "dotfile-symlink", Error, ".gitmodules, .gitattributes, .gitignore or .mailmap (any spelling git folds to it) is a symbolic link", "git reads it through the link; fsck forbids it (gitmodulesSymlink and friends)", "git fsck.c"),
    rule!("GW-SCAN-020", "symlink-absolute", Error, "a symbolic link whose target is absolute", "writes and reads through it reach files outside the work tree", "CVE-2021-21300, CVE-2024-32002"),
    rule!("GW-SCAN-021", "symlink-escapes", Error, "a symbolic link whose target climbs above the top of the tree with '..'", "writes and reads through it reach files outside the work tree", "CVE-2023-23946"),
    rule!("GW-SCAN-022", "symlink-into-git-dir", Error, "a symbolic link whose target has a component git treats as .git", "checkout writes through it into the git dir, e.g. into hooks (CVE-2021-21300, CVE-2024-32002)", "CVE-2021-21300, CVE-2024-32002"),
    rule!("GW-SCAN-030", "path-dotgit", Error, "a path component that git or a case-insensitive, NTFS or HFS+ filesystem treats as .git (.GIT, .git., git~1, .g\u{200c}it)", "checkout writes into the git dir: config and hooks (CVE-2014-9390, CVE-2019-1352)", "CVE-2014-9390, CVE-2019-1352"),
    rule!("GW-SCAN-031", "path-component-invalid", Error, "a path component that is empty, '.', '..', or holds a backslash", "git's verify_path refuses it; on Windows a backslash is a folder separator (CVE-2019-1354)", "CVE-2019-1354, git fsck.c"),
    rule!("GW-SCAN-040", "tree-git-dir-shape", Error, "a folder git's discovery takes for a git dir: a HEAD git accepts (ref: refs/…, an object id, a link to refs/…) with entries named objects and refs of any type, or with a commondir", "git discovers it as a bare repository (or a worktree's git dir) and honours its config and hooks", "research §3, headline 8; git setup.c is_git_directory"),
    rule!("GW-SCAN-041", "tree-git-config", Warning, "a file named config or config.worktree that git's config reader reads as setting a catalogue key or an include", "a git dir's config: where git discovers the folder it runs what the file (or a file it includes) names", "research §3.2"),
    rule!("GW-SCAN-050", "hooks-path-file", Error, "a file under the folder the repository's core.hooksPath names", "git runs it as a hook on commit, checkout, merge, push", "research §1a"),
    rule!("GW-SCAN-051", "hook-like-file", Warning, "an executable, or a file named after a hook event, in a hook-like folder (.husky/, .githooks/, hooks/)", "a hook installer or a later core.hooksPath makes git run it", "research §1a, §3.1"),
    rule!("GW-SCAN-060", "settings-file", Error, "an agent or IDE settings file that settings-watch guards (.claude/, .vscode/, .mcp.json, …)", "it can widen what the agent may do or make the IDE run commands when the owner opens the folder", "research anchors"),
    rule!("GW-SCAN-070", "ci-definition", Warning, "a CI definition (.github/workflows/, .gitlab-ci.yml, …)", "CI runs it with the repository's credentials when the branch is pushed", "issue 4"),
    rule!("GW-SCAN-080", "replace-ref", Error, "a new or moved refs/replace/* ref", "git shows and checks out the replacement instead of the object (history that differs from what was scanned)", "research §2a"),
    rule!("GW-SCAN-081", "signature-on-display", Warning, "a new commit or tag with a signature header while the repository's config turns on log.showSignature", "git log and show run gpg.program on it", "research headline 7"),
];

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

pub(crate) fn r(id: &str) -> &'static Rule {
    rule(id).expect("rule ids used in code exist in RULES")
}

// ---------------------------------------------------------------------------------------
// Names

/// git `utf8.c` `next_hfs_char`: the next code point, skipping those HFS+ ignores.
/// `None` at the end; `Some(None)` for malformed UTF-8 (cannot be `.git`).
fn hfs_chars(name: &[u8]) -> impl Iterator<Item = Option<char>> + '_ {
    const IGNORED: &[u32] = &[
        0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x206a, 0x206b,
        0x206c, 0x206d, 0x206e, 0x206f, 0xfeff,
    ];
    let s = std::str::from_utf8(name).ok();
    let bad = s.is_none();
    s.unwrap_or("")
        .chars()
        .filter(|c| !IGNORED.contains(&(*c as u32)))
        .map(Some)
        .chain(bad.then_some(None))
}

/// git `is_hfs_dot_generic`: does `name` read as `.<needle>` on HFS+ (case-folded, with
/// ignorable code points dropped)?
fn is_hfs_dot(name: &[u8], needle: &str) -> bool {
    let mut it = hfs_chars(name);
    if it.next() != Some(Some('.')) {
        return false;
    }
    for want in needle.chars() {
        match it.next() {
            Some(Some(c)) if c.is_ascii() && c.to_ascii_lowercase() == want => {}
            _ => return false,
        }
    }
    it.next().is_none()
}

/// git `is_ntfs_dotgit`: `.git` or `git~1` (any case), followed only by dots and spaces, or
/// by a colon (an alternate data stream) or a backslash.
fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let rest = if name.len() >= 4 && name[0] == b'.' && name[1..4].eq_ignore_ascii_case(b"git") {
        &name[4..]
    } else if name.len() >= 5 && name[..3].eq_ignore_ascii_case(b"git") && &name[3..5] == b"~1" {
        &name[5..]
    } else {
        return false;
    };
    for &c in rest {
        if c == b'\\' || c == b'/' || c == b':' {
            return true;
        }
        if c != b'.' && c != b' ' {
            return false;
        }
    }
    true
}

/// Would git, or a case-insensitive, NTFS or HFS+ filesystem, treat this path component as
/// `.git`?
pub fn is_dotgit_like(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b".git") || is_ntfs_dotgit(name) || is_hfs_dot(name, "git")
}

/// git `is_ntfs_dot_generic`: `.<name>` followed by dots/spaces, the 6-character short name
/// `~1`..`~4`, or the fallback short name `<prefix>~<digits>`.
fn is_ntfs_dot_generic(name: &[u8], dotname: &str, prefix: &str) -> bool {
    let only_spaces_and_periods = |rest: &[u8]| {
        for &c in rest {
            if c == b':' {
                return true;
            }
            if c != b' ' && c != b'.' {
                return false;
            }
        }
        true
    };
    let d = dotname.as_bytes();
    if name.first() == Some(&b'.')
        && name.len() > d.len()
        && name[1..=d.len()].eq_ignore_ascii_case(d)
    {
        return only_spaces_and_periods(&name[d.len() + 1..]);
    }
    if name.len() >= 8
        && name[..6].eq_ignore_ascii_case(&d[..6])
        && name[6] == b'~'
        && (b'1'..=b'4').contains(&name[7])
    {
        return only_spaces_and_periods(&name[8..]);
    }
    let p = prefix.as_bytes();
    let mut i = 0;
    let mut saw_tilde = false;
    while i < 8 {
        let Some(&c) = name.get(i) else {
            return false;
        };
        if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            i += 1;
            match name.get(i) {
                Some(b'1'..=b'9') => {}
                _ => return false,
            }
            saw_tilde = true;
        } else if i >= 6 || c & 0x80 != 0 || c.to_ascii_lowercase() != p[i] {
            return false;
        }
        i += 1;
    }
    only_spaces_and_periods(&name[8..])
}

/// The tree dotfile (`.gitmodules`, `.gitattributes`, …) this component names on some
/// filesystem, if any.
pub fn dotfile_of(name: &[u8]) -> Option<&'static TreeDotfile> {
    catalogue::TREE_DOTFILES.iter().find(|d| {
        (name.first() == Some(&b'.') && name[1..].eq_ignore_ascii_case(d.name.as_bytes()))
            || is_hfs_dot(name, d.name)
            || is_ntfs_dot_generic(name, d.name, d.ntfs_prefix)
    })
}

/// git `verify_path` component checks beyond `.git`: empty, `.`, `..`, or a backslash.
pub fn invalid_component(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty path component")
    } else if name == b"." || name == b".." {
        Some("'.' or '..' as a path component")
    } else if name.contains(&b'\\') {
        Some("backslash in a path component (a folder separator on Windows)")
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------
// Symlink targets

/// What is wrong with a symbolic link at `link_path` (tree-relative) pointing at `target`.
pub fn symlink_problem(link_path: &[u8], target: &[u8]) -> Option<(&'static str, String)> {
    let is_sep = |c: &u8| *c == b'/' || *c == b'\\';
    let first = target.first();
    let drive = target.len() >= 2 && target[0].is_ascii_alphabetic() && target[1] == b':';
    if first.is_some_and(is_sep) || drive {
        return Some(("GW-SCAN-020", "target is an absolute path".into()));
    }
    if target.split(is_sep).any(is_dotgit_like) {
        return Some(("GW-SCAN-022", "target enters a .git folder".into()));
    }
    // Resolve lexically from the link's folder; '..' above the top leaves the tree.
    let mut depth: i64 = link_path.split(|c| *c == b'/').count() as i64 - 1;
    for c in target.split(is_sep) {
        match c {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return Some((
                        "GW-SCAN-021",
                        "target climbs above the top of the tree".into(),
                    ));
                }
            }
            _ => depth += 1,
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// .gitattributes

/// git `attr.c`: lines longer than this are refused (CVE-2022-23521 fix).
pub const ATTR_MAX_LINE_LENGTH: usize = 2048;
/// git `attr.c`: attribute files larger than this are refused.
pub const ATTR_MAX_FILE_SIZE: u64 = 100 * 1024 * 1024;

/// A hit inside a `.gitattributes` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrHit {
    pub rule: &'static str,
    /// Where and what, e.g. `line 3: *.c filter=x`.
    pub why: String,
    /// The driver a `filter=`, `diff=` or `merge=` selects: the scan asks the configuration
    /// whether it runs a program.
    pub driver: Option<(DriverKind, Vec<u8>)>,
}

/// How deep `[attr]` macros that name macros are expanded. git resolves a macro only to
/// macros defined before it, so chains are short and have no cycles; the bound only keeps a
/// hostile file from making the expansion expensive.
const MACRO_DEPTH: usize = 8;

const fn attr_blank(c: &u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c)
}

/// A token still to judge: the token, the macro of its line it came through, the depth.
type Pending<'a> = (&'a [u8], Option<&'a [u8]>, usize);

/// One parsed `.gitattributes` line: the pattern (or `[attr]name`) and its attribute tokens.
struct AttrLine<'a> {
    macro_name: Option<&'a [u8]>,
    tokens: Vec<&'a [u8]>,
}

fn parse_attr_line(line: &[u8]) -> Option<AttrLine<'_>> {
    let start = line
        .iter()
        .position(|c| !attr_blank(c))
        .unwrap_or(line.len());
    let line = &line[start..];
    if line.is_empty() || line[0] == b'#' {
        return None;
    }
    // The pattern (or `[attr]name`): quoted C-style or up to the first blank.
    let (head, rest) = if line[0] == b'"' {
        let mut i = 1;
        while i < line.len() && line[i] != b'"' {
            i += if line[i] == b'\\' { 2 } else { 1 };
        }
        let end = (i + 1).min(line.len());
        (&line[..end], &line[end..])
    } else {
        let end = line.iter().position(attr_blank).unwrap_or(line.len());
        (&line[..end], &line[end..])
    };
    Some(AttrLine {
        macro_name: head.strip_prefix(b"[attr]"),
        tokens: rest.split(attr_blank).filter(|t| !t.is_empty()).collect(),
    })
}

/// The attribute a token sets, unsets or resets, without its `-`/`!` prefix or `=value`.
fn token_attr(tok: &[u8]) -> &[u8] {
    let t = tok
        .strip_prefix(b"-")
        .or_else(|| tok.strip_prefix(b"!"))
        .unwrap_or(tok);
    t.split(|c| *c == b'=').next().unwrap_or(t)
}

/// Does this line bear on drivers: a macro definition, or a token naming `filter`, `diff`,
/// `merge`, `export-subst` or a macro (set, unset or reset)? Reordering or removing such lines
/// can change which driver wins, so [`check_attributes`] then judges the whole file.
fn bears_on_drivers(l: &AttrLine<'_>, macros: &HashSet<&[u8]>) -> bool {
    l.macro_name.is_some()
        || l.tokens.iter().any(|t| {
            let a = token_attr(t);
            matches!(a, b"filter" | b"diff" | b"merge" | b"export-subst") || macros.contains(a)
        })
}

/// The lines of a file (without a last empty one after a final newline).
fn attr_lines(b: &[u8]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = b.split(|c| *c == b'\n').collect();
    if v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

/// Findings inside a `.gitattributes` file whose content is `new`, judged on the lines that
/// changed: the lines not present in any of `olds` (the file in the commit's parents; empty
/// for a new file). Unchanged lines were judged when they were written. If a line bearing on
/// drivers was removed or moved relative to every parent (a removed `-filter` can arm an
/// unchanged `filter=x` above it), every line is judged.
///
/// A line that sets a driver, directly or through an `[attr]` macro (expanded to a depth of
/// 8, built-in `binary` included), yields one hit per (rule, driver name).
pub fn check_attributes(new: &[u8], olds: &[&[u8]]) -> Vec<AttrHit> {
    let new_lines = attr_lines(new);
    let old_lines: Vec<Vec<&[u8]>> = olds.iter().map(|o| attr_lines(o)).collect();
    // Macros of every version: a usage line names one even where its definition is unchanged.
    let mut macro_defs: HashMap<&[u8], Vec<&[u8]>> = HashMap::new();
    for l in new_lines.iter().filter_map(|l| parse_attr_line(l)) {
        if let Some(m) = l.macro_name {
            macro_defs.insert(m, l.tokens);
        }
    }
    let mut macro_names: HashSet<&[u8]> = macro_defs.keys().copied().collect();
    for (m, _) in catalogue::BUILTIN_MACROS {
        macro_names.insert(m.as_bytes());
    }
    for l in old_lines
        .iter()
        .flatten()
        .filter_map(|l| parse_attr_line(l))
    {
        if let Some(m) = l.macro_name {
            macro_names.insert(m);
        }
    }
    let relevant = |lines: &[&'_ [u8]]| -> Vec<Vec<u8>> {
        lines
            .iter()
            .filter(|l| parse_attr_line(l).is_some_and(|p| bears_on_drivers(&p, &macro_names)))
            .map(|l| l.to_vec())
            .collect()
    };
    let in_old: HashSet<&[u8]> = old_lines.iter().flatten().copied().collect();
    let judge_all = olds.is_empty() || {
        let new_rel = relevant(&new_lines);
        !old_lines.iter().any(|old| {
            let set: HashSet<&[u8]> = old.iter().copied().collect();
            let kept: Vec<Vec<u8>> = new_rel
                .iter()
                .filter(|l| set.contains(l.as_slice()))
                .cloned()
                .collect();
            kept == relevant(old)
        })
    };

    let mut out: Vec<AttrHit> = Vec::new();
    let mut push = |rule: &'static str, why: String, driver: Option<(DriverKind, Vec<u8>)>| {
        if !out.iter().any(|h| h.rule == rule && h.driver == driver) {
            out.push(AttrHit { rule, why, driver });
        }
    };
    for (n, line) in new_lines.iter().enumerate() {
        if !judge_all && in_old.contains(line) {
            continue;
        }
        let lineno = n + 1;
        if line.len() > ATTR_MAX_LINE_LENGTH {
            push(
                "GW-SCAN-005",
                format!(
                    "line {lineno} is {} bytes (git's limit is {ATTR_MAX_LINE_LENGTH})",
                    line.len()
                ),
                None,
            );
            continue;
        }
        let Some(parsed) = parse_attr_line(line) else {
            continue;
        };
        let place = match parsed.macro_name {
            Some(m) => format!(
                "line {lineno}, in macro [attr]{}",
                String::from_utf8_lossy(m)
            ),
            None => format!("line {lineno}"),
        };
        // (token, the macro of this line it came through, expansion depth)
        let mut stack: Vec<Pending<'_>> =
            parsed.tokens.iter().rev().map(|t| (*t, None, 0)).collect();
        while let Some((tok, via, depth)) = stack.pop() {
            if tok.starts_with(b"-") || tok.starts_with(b"!") {
                continue;
            }
            let (name, value) = match tok.iter().position(|c| *c == b'=') {
                Some(eq) => (&tok[..eq], Some(&tok[eq + 1..])),
                None => (tok, None),
            };
            let shown = match via {
                Some(m) => format!(
                    "{place}: {} (through macro {})",
                    String::from_utf8_lossy(tok),
                    String::from_utf8_lossy(m)
                ),
                None => format!("{place}: {}", String::from_utf8_lossy(tok)),
            };
            match (name, value) {
                (b"filter" | b"diff" | b"merge", Some(v)) => {
                    let kind = DriverKind::from_attribute(std::str::from_utf8(name).unwrap_or(""))
                        .expect("filter, diff and merge are driver kinds");
                    let rule = match kind {
                        DriverKind::Filter => "GW-SCAN-001",
                        DriverKind::Diff => "GW-SCAN-002",
                        DriverKind::Merge => "GW-SCAN-003",
                    };
                    push(rule, shown, Some((kind, v.to_vec())));
                }
                (b"export-subst", None) => push("GW-SCAN-004", shown, None),
                (m, None) => {
                    // A macro: its tokens apply as if written here.
                    let Some(def) = macro_defs.get(m) else {
                        continue;
                    };
                    if depth < MACRO_DEPTH {
                        for t in def.iter().rev() {
                            stack.push((t, Some(via.unwrap_or(m)), depth + 1));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// .gitmodules

fn traversal_or_odd(v: &[u8]) -> Option<&'static str> {
    if v.contains(&b'\r') || v.contains(&b'\n') {
        Some("holds a CR or LF")
    } else if v.first() == Some(&b'-') {
        Some("starts with '-'")
    } else if v.first() == Some(&b'/') {
        Some("is absolute")
    } else if v.split(|c| *c == b'/' || *c == b'\\').any(|c| c == b"..") {
        Some("has a '..' component")
    } else {
        None
    }
}

/// Findings inside a `.gitmodules` file: rule id and why.
pub fn check_gitmodules(bytes: &[u8]) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    // A CR not ending a CRLF line survives into values on some git versions
    // (CVE-2025-48384): flag it before and whatever the parser makes of it.
    if bytes
        .iter()
        .enumerate()
        .any(|(i, c)| *c == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
    {
        out.push(("GW-SCAN-014", "holds a CR that does not end a line".into()));
    }
    // Read as git reads it (`crate::config::parse_bytes`, git's own parser): a
    // `[submodule.a "b"]` header names the submodule `a.b`, as in git.
    let raw = crate::config::parse_bytes(bytes, crate::config::Dialect::Any);
    if let Some(line) = raw.bad_line {
        out.push((
            "GW-SCAN-014",
            format!("not valid git config: bad config line {line}"),
        ));
        return out;
    }
    let mut names: Vec<Vec<u8>> = Vec::new();
    for (section, sub, _) in &raw.sections {
        if section == "submodule" {
            let name = sub.as_ref().map(|s| s.to_vec()).unwrap_or_default();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let entries: Vec<ModuleEntry<'_>> = raw
        .entries
        .iter()
        .filter(|e| e.section == "submodule")
        .map(|e| ModuleEntry {
            name: e.subsection.as_ref().map_or(&b""[..], |s| &s[..]),
            key: e.name.as_str(),
            value: e.value.as_ref().map(|v| &v[..]),
        })
        .collect();
    out.extend(gitmodules_findings(&names, &entries));
    out
}

/// One `submodule.<name>.<key>` entry of a `.gitmodules` file, as git reads it (`key`
/// lower-cased; `value` `None` for an implicit boolean).
#[derive(Debug, Clone, Copy)]
pub struct ModuleEntry<'a> {
    pub name: &'a [u8],
    pub key: &'a str,
    pub value: Option<&'a [u8]>,
}

/// The findings of submodule names (every `[submodule "<name>"]` header, with or without
/// entries) and entries, however they were read: [`check_gitmodules`] reads them with git's
/// parser; the differential test (`scan::differential`) hands in git's own reading, so both
/// readings meet the same rules.
pub fn gitmodules_findings(
    names: &[Vec<u8>],
    entries: &[ModuleEntry<'_>],
) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for name in names {
        let shown_name = super::escape_path(name);
        if let Some(p) = traversal_or_odd(name) {
            out.push(("GW-SCAN-012", format!("submodule name {shown_name:?} {p}")));
        }
    }
    for e in entries {
        let name = e.name;
        let shown_name = super::escape_path(name);
        let k = e.key;
        let v: Vec<u8> = e.value.map(|v| v.to_vec()).unwrap_or_default();
        match k {
            "path" => {
                if let Some(p) = traversal_or_odd(&v) {
                    out.push((
                        "GW-SCAN-012",
                        format!(
                            "submodule {shown_name:?} path {:?} {p}",
                            super::escape_path(&v)
                        ),
                    ));
                }
            }
            "url" => {
                let url = String::from_utf8_lossy(&v);
                use catalogue::UrlDanger::*;
                match catalogue::classify_url(&url) {
                    Some(d @ (Ext | Helper | DashLeading | ControlChar)) => out.push((
                        "GW-SCAN-010",
                        format!(
                            "submodule {shown_name:?} url {:?} ({d:?})",
                            super::escape_path(&v)
                        ),
                    )),
                    Some(Local) => out.push((
                        "GW-SCAN-011",
                        format!("submodule {shown_name:?} url {url:?} is local or relative"),
                    )),
                    None => {}
                }
            }
            "update" if v.trim_ascii_start().first() == Some(&b'!') => {
                out.push((
                    "GW-SCAN-013",
                    format!(
                        "submodule {shown_name:?} update = {:?}",
                        super::escape_path(&v)
                    ),
                ));
            }
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// config files in trees

/// The entries git's discovery (`setup.c` `is_git_directory`) looks at in a folder, and the
/// config files it reads there: a change to any of them makes the folder a candidate.
pub const GIT_DIR_ENTRY_NAMES: &[&[u8]] = &[
    b"HEAD",
    b"objects",
    b"refs",
    b"commondir",
    b"config",
    b"config.worktree",
];

/// git `setup.c` `validate_headref`: would git accept this `HEAD`? A symbolic link must point
/// at `refs/…`; a file must start (within its first 255 bytes) with `ref:`, blanks and
/// `refs/`, or with a full object id (40 or 64 hex digits, nothing required after it).
pub fn head_is_valid(is_link: bool, bytes: &[u8]) -> bool {
    if is_link {
        return bytes.starts_with(b"refs/");
    }
    let b = &bytes[..bytes.len().min(255)];
    // git reads the file into a C string: it ends at the first NUL.
    let b = &b[..b.iter().position(|c| *c == 0).unwrap_or(b.len())];
    if let Some(rest) = b.strip_prefix(b"ref:") {
        // git's isspace: space, \t, \n, \v, \f, \r.
        let start = rest
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
            .unwrap_or(rest.len());
        if rest[start..].starts_with(b"refs/") {
            return true;
        }
    }
    let hex = b.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    hex >= 40
}

/// What a file named `config` in a tree sets, read by git's config parser
/// ([`crate::config::parse_bytes`], no includes followed): every include (itself a finding —
/// the file it names is not judged here and can hold anything) and every catalogue key, as
/// `line N: key` (rows the catalogue itself rates a note, such as `core.bare`, are not
/// findings). Empty for a file git would not read as config before its first bad line.
pub fn config_file_keys(bytes: &[u8]) -> Vec<String> {
    let raw = crate::config::parse_bytes(bytes, crate::config::Dialect::Any);
    let mut out = Vec::new();
    for e in &raw.entries {
        let Some(key) = e.config_key() else {
            // A subsection that is not UTF-8: only include and per-name rows have one.
            if matches!(e.section.as_str(), "includeif" | "include") {
                out.push(format!("line {}: {} (include)", e.line, e.section));
            }
            continue;
        };
        let shown = match key.subsection {
            Some(sub) => format!("{}.{}.{}", key.section, sub, key.name),
            None => format!("{}.{}", key.section, key.name),
        };
        if crate::config::include_condition(&key).is_some() {
            out.push(format!("line {}: {shown} (include)", e.line));
        } else if catalogue::KEYS
            .iter()
            .any(|k| k.severity != Severity::Note && k.key.matches(&key))
        {
            out.push(format!("line {}: {shown}", e.line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_and_well_formed() {
        let mut ids: Vec<_> = RULES.iter().map(|r| r.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
        for r in RULES {
            assert!(r.id.starts_with("GW-SCAN-") && r.id.len() == 11, "{}", r.id);
        }
    }

    #[test]
    fn dotgit_like_follows_git() {
        for yes in [
            &b".git"[..],
            b".GIT",
            b".Git",
            b".git.",
            b".git ",
            b".git. . ",
            b"git~1",
            b"GIT~1",
            b".git::$INDEX_ALLOCATION",
            b".git\\hooks",
            ".g\u{200c}it".as_bytes(),
            "\u{feff}.GIT".as_bytes(),
            ".gi\u{206f}t".as_bytes(),
        ] {
            assert!(is_dotgit_like(yes), "{:?}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b".gitx"[..],
            b"git",
            b".gitignore",
            b"git~2",
            b"x.git",
            b".g1t",
            ".gıt".as_bytes(),
        ] {
            assert!(!is_dotgit_like(no), "{:?}", String::from_utf8_lossy(no));
        }
    }

    #[test]
    fn dotfiles_fold_like_git() {
        let m = |n: &str| dotfile_of(n.as_bytes()).map(|d| d.name);
        assert_eq!(m(".gitmodules"), Some("gitmodules"));
        assert_eq!(m(".GITMODULES"), Some("gitmodules"));
        assert_eq!(m(".gitmodules ."), Some("gitmodules"));
        assert_eq!(m("GITMOD~1"), Some("gitmodules"));
        assert_eq!(m("gi7eba~9"), Some("gitmodules"));
        assert_eq!(m(".gitattributes"), Some("gitattributes"));
        assert_eq!(m(".git\u{200d}attributes"), Some("gitattributes"));
        assert_eq!(m("gitmodules"), None);
        assert_eq!(m(".gitmodulesx"), None);
        assert_eq!(m("README"), None);
    }

    #[test]
    fn symlink_targets() {
        assert_eq!(
            symlink_problem(b"a", b"/etc/passwd").unwrap().0,
            "GW-SCAN-020"
        );
        assert_eq!(symlink_problem(b"a", b"C:\\x").unwrap().0, "GW-SCAN-020");
        assert_eq!(symlink_problem(b"a", b"../x").unwrap().0, "GW-SCAN-021");
        assert_eq!(
            symlink_problem(b"d/a", b"../../x").unwrap().0,
            "GW-SCAN-021"
        );
        assert_eq!(
            symlink_problem(b"d/a", b"x/../../../y").unwrap().0,
            "GW-SCAN-021"
        );
        assert_eq!(
            symlink_problem(b"a", b".git/hooks").unwrap().0,
            "GW-SCAN-022"
        );
        assert_eq!(symlink_problem(b"a", b"x/.GIT").unwrap().0, "GW-SCAN-022");
        assert!(symlink_problem(b"d/a", b"../x").is_none());
        assert!(symlink_problem(b"a", b"docs/readme.md").is_none());
        assert!(symlink_problem(b"d/e/a", b"../../f").is_none());
    }

    #[test]
    fn attributes_lines() {
        let ids = |s: &str| {
            check_attributes(s.as_bytes(), &[])
                .into_iter()
                .map(|h| h.rule)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("*.c filter=x\n"), ["GW-SCAN-001"]);
        assert_eq!(ids("  \"a b\" diff=x\n"), ["GW-SCAN-002"]);
        assert_eq!(ids("[attr]evil merge=x\n*.c evil\n"), ["GW-SCAN-003"]);
        assert_eq!(ids("*.c export-subst\n"), ["GW-SCAN-004"]);
        assert!(ids("*.c text eol=lf -diff !merge -filter binary diff\n# filter=x\n").is_empty());
        let long = format!("*.c {}\n", "a".repeat(3000));
        assert_eq!(ids(&long), ["GW-SCAN-005"]);
    }

    #[test]
    fn attributes_changed_lines_only() {
        let hits = |new: &str, olds: &[&str]| {
            let olds: Vec<&[u8]> = olds.iter().map(|o| o.as_bytes()).collect();
            check_attributes(new.as_bytes(), &olds)
                .into_iter()
                .map(|h| {
                    (
                        h.rule,
                        h.why,
                        h.driver.map(|(k, n)| (k, String::from_utf8(n).unwrap())),
                    )
                })
                .collect::<Vec<_>>()
        };
        // Unchanged driver line, a line added below: nothing.
        assert!(hits("*.c filter=x\n*.txt text\n", &["*.c filter=x\n"]).is_empty());
        // The added line is judged, with its line number and driver.
        let h = hits("*.c filter=x\n*.h diff=cpp\n", &["*.c filter=x\n"]);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].0, "GW-SCAN-002");
        assert_eq!(h[0].1, "line 2: diff=cpp");
        assert_eq!(h[0].2, Some((DriverKind::Diff, "cpp".into())));
        // A line present in any parent (a merge) is not the merge's own.
        assert!(hits(
            "*.a filter=x\n*.b filter=y\n",
            &["*.a filter=x\n", "*.b filter=y\n"]
        )
        .is_empty());
        // Removing a neutraliser, or reordering driver lines, re-judges the whole file.
        assert_eq!(
            hits("*.c filter=x\n", &["*.c filter=x\n*.c -filter\n"]).len(),
            1
        );
        assert_eq!(
            hits(
                "*.c -filter\n*.c filter=x\n",
                &["*.c filter=x\n*.c -filter\n"]
            )
            .len(),
            1
        );
        // Removing a line that bears on no driver does not.
        assert!(hits("*.c filter=x\n", &["*.c filter=x\n*.txt text\n"]).is_empty());
        // A changed line that uses an unchanged macro is judged through it.
        let h = hits(
            "[attr]m filter=x\n*.c m\n*.h m\n",
            &["[attr]m filter=x\n*.c m\n"],
        );
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].1, "line 3: filter=x (through macro m)");
        // Two drivers of one kind are two hits; the same driver twice is one.
        let h = hits("*.a filter=x\n*.b filter=y\n*.c filter=x\n", &[]);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn gitmodules_checks() {
        let ids = |s: &str| {
            check_gitmodules(s.as_bytes())
                .into_iter()
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        assert!(
            ids("[submodule \"a\"]\n\tpath = a\n\turl = https://example.com/a.git\n").is_empty()
        );
        assert_eq!(
            ids("[submodule \"a\"]\n\tpath = a\n\turl = ext::sh -c x\n"),
            ["GW-SCAN-010"]
        );
        assert_eq!(
            ids("[submodule \"a\"]\n\tpath = a\n\turl = ../a.git\n"),
            ["GW-SCAN-011"]
        );
        assert_eq!(
            ids("[submodule \"../../x\"]\n\tpath = a\n\turl = https://e/a\n"),
            ["GW-SCAN-012"]
        );
        assert_eq!(
            ids("[submodule \"a\"]\n\tpath = -a\n\turl = https://e/a\n"),
            ["GW-SCAN-012"]
        );
        assert_eq!(
            ids("[submodule \"a\"]\n\tpath = a\n\tupdate = !sh x\n\turl = https://e/a\n"),
            ["GW-SCAN-013"]
        );
        assert!(ids("[submodule \"a\"]\r\n\tpath = a\r\n\turl = https://e/a\r\n").is_empty());
        assert!(
            ids("[submodule \"a\"]\n\tpath = \"a\r\"\n\turl = https://e/a\n")
                .contains(&"GW-SCAN-014")
        );
    }

    #[test]
    fn head_like_git() {
        assert!(head_is_valid(false, b"ref: refs/heads/main\n"));
        assert!(head_is_valid(false, b"ref:\t \nrefs/x"));
        assert!(head_is_valid(false, &[b'a'; 40]));
        assert!(head_is_valid(
            false,
            format!("{}junk", "0".repeat(64)).as_bytes()
        ));
        assert!(head_is_valid(true, b"refs/heads/main"));
        assert!(!head_is_valid(true, b"./refs/heads/main"));
        assert!(!head_is_valid(false, b"ref: heads/main\n"));
        assert!(!head_is_valid(
            false,
            b"# the HEAD section of a changelog\n"
        ));
        assert!(!head_is_valid(false, &[b'a'; 39]));
        assert!(!head_is_valid(false, b"ref:\0refs/heads/main"));
        let mut long = vec![b' '; 260];
        long[..4].copy_from_slice(b"ref:");
        long.extend_from_slice(b"refs/x");
        assert!(!head_is_valid(false, &long));
    }

    #[test]
    fn config_files_read_like_git() {
        let k = |s: &str| config_file_keys(s.as_bytes());
        assert!(k("[core]\n\tbare = true\n\trepositoryformatversion = 0\n").is_empty());
        assert_eq!(k("[core]\n\tpager = x\n"), ["line 2: core.pager"]);
        assert_eq!(
            k("[include]\n\tpath = settings.ini\n"),
            ["line 2: include.path (include)"]
        );
        assert_eq!(
            k("[includeIf \"gitdir:/\"]\n\tpath = x\n"),
            ["line 2: includeif.gitdir:/.path (include)"]
        );
        // git's spellings: case, a dotted section header, a key on the header line.
        assert_eq!(k("[CORE] fsmonitor = x\n").len(), 1);
        assert_eq!(k("[alias]\n\tl = !sh\n"), ["line 2: alias.l"]);
        // Not git config: nothing (and nothing git would read).
        assert!(k("name: value\n{ \"json\": 1 }\n").is_empty());
        assert!(k("[editor]\n\ttabs = 4\n").is_empty());
    }
}

#[cfg(test)]
mod doc_tests {
    use super::*;

    /// docs/scan-rules.md carries one table row per rule, with its name and severity.
    #[test]
    fn rules_doc_lists_every_rule() {
        let doc = include_str!("../../../docs/scan-rules.md");
        for r in RULES {
            let sev = serde_json::to_value(r.severity).unwrap();
            let row = format!("| `{}` | {} | {} |", r.id, r.name, sev.as_str().unwrap());
            assert!(doc.contains(&row), "docs/scan-rules.md lacks the row {row}");
        }
    }
}
