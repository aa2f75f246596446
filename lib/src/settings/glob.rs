//! Path globs for guarded settings files, matched case-insensitively on repository-relative
//! paths.
//!
//! Why our own: the match must be case-insensitive (CVE-2025-59944: `.Cursor/MCP.json` slipped
//! past a case-sensitive check on a case-insensitive filesystem, and sandbox-runtime lower-cases
//! for the same reason), and the watcher must know which *folders* could hold a match
//! ([`Glob::may_contain`]) so it watches those and nothing else. Syntax: `/`-separated segments;
//! in a segment `*` matches any run of characters other than `/` and `?` one character; a whole
//! segment `**` matches zero or more segments. No character classes, no leading `/`, no `.` or
//! `..` segments.

/// One compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    src: String,
    segs: Vec<Seg>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**`: zero or more segments.
    Deep,
    /// A segment pattern, lower-cased.
    Pat(Vec<char>),
}

fn fold(s: &str) -> Vec<char> {
    s.chars().flat_map(char::to_lowercase).collect()
}

impl Glob {
    /// Compile `src`. Errors name what is wrong with the pattern.
    pub fn new(src: &str) -> Result<Glob, String> {
        if src.is_empty() {
            return Err("empty glob".into());
        }
        if src.starts_with('/') {
            return Err(format!(
                "glob {src:?} must be relative to the workspace root (no leading /)"
            ));
        }
        let mut segs = Vec::new();
        for part in src.split('/') {
            match part {
                "" => return Err(format!("glob {src:?} has an empty segment")),
                "." | ".." => return Err(format!("glob {src:?} has a {part:?} segment")),
                "**" => segs.push(Seg::Deep),
                p if p.contains("**") => {
                    return Err(format!("glob {src:?}: ** must be a whole segment"))
                }
                p => segs.push(Seg::Pat(fold(p))),
            }
        }
        if matches!(segs.last(), Some(Seg::Deep)) {
            return Err(format!("glob {src:?} must end with a file name pattern"));
        }
        Ok(Glob {
            src: src.to_owned(),
            segs,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.src
    }

    /// Does the relative path `rel` (segments separated by `/`) match, ignoring case?
    pub fn matches(&self, rel: &str) -> bool {
        self.matches_folded(&FoldedPath::new(rel))
    }

    /// [`Glob::matches`] on a path folded once for many globs.
    pub fn matches_folded(&self, path: &FoldedPath) -> bool {
        !path.0.is_empty() && match_from(&self.segs, &path.0)
    }

    /// Could a file below the folder `dir` (relative, `""` for the root) match? The watcher
    /// watches exactly the folders for which this holds.
    pub fn may_contain(&self, dir: &str) -> bool {
        let parts: Vec<Vec<char>> = split_rel(dir).map(fold).collect();
        prefix_ok(&self.segs, &parts)
    }

    /// The deepest folder depth a match can have (`None` when the glob has `**`).
    pub fn max_depth(&self) -> Option<usize> {
        if self.segs.contains(&Seg::Deep) {
            None
        } else {
            Some(self.segs.len() - 1)
        }
    }
}

/// A relative path split into segments and lower-cased the way globs are: fold it once when
/// it is matched against many globs (the commit scan checks every changed path against every
/// preset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedPath(Vec<Vec<char>>);

impl FoldedPath {
    pub fn new(rel: &str) -> FoldedPath {
        FoldedPath(split_rel(rel).map(fold).collect())
    }
}

fn split_rel(rel: &str) -> impl Iterator<Item = &str> {
    rel.split('/').filter(|p| !p.is_empty() && *p != ".")
}

fn match_from(segs: &[Seg], parts: &[Vec<char>]) -> bool {
    match segs.first() {
        None => parts.is_empty(),
        Some(Seg::Deep) => (0..=parts.len()).any(|k| match_from(&segs[1..], &parts[k..])),
        Some(Seg::Pat(p)) => {
            !parts.is_empty() && seg_match(p, &parts[0]) && match_from(&segs[1..], &parts[1..])
        }
    }
}

/// Can `parts` (a folder) be the first segments of a path that matches `segs`, with at least
/// one more segment (the file) to come?
fn prefix_ok(segs: &[Seg], parts: &[Vec<char>]) -> bool {
    if parts.is_empty() {
        return !segs.is_empty();
    }
    match segs.first() {
        None => false,
        Some(Seg::Deep) => true,
        Some(Seg::Pat(p)) => seg_match(p, &parts[0]) && prefix_ok(&segs[1..], &parts[1..]),
    }
}

/// Match one segment: `*` any run, `?` one character.
pub(crate) fn seg_match(pat: &[char], s: &[char]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while i < s.len() {
        if p < pat.len() && (pat[p] == '?' || pat[p] == s[i]) {
            p += 1;
            i += 1;
        } else if p < pat.len() && pat[p] == '*' {
            star = Some(p);
            mark = i;
            p += 1;
        } else if let Some(sp) = star {
            p = sp + 1;
            mark += 1;
            i = mark;
        } else {
            return false;
        }
    }
    while p < pat.len() && pat[p] == '*' {
        p += 1;
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_insensitive_literal() {
        let g = Glob::new(".claude/settings.json").unwrap();
        assert!(g.matches(".claude/settings.json"));
        assert!(g.matches(".Claude/Settings.json"));
        assert!(g.matches(".CLAUDE/SETTINGS.JSON"));
        assert!(!g.matches(".claude/settings.json.bak"));
        assert!(!g.matches("x/.claude/settings.json"));
        assert!(!g.matches(".claude"));
    }

    #[test]
    fn stars_and_deep() {
        let g = Glob::new(".devcontainer/*/devcontainer.json").unwrap();
        assert!(g.matches(".devcontainer/py/devcontainer.json"));
        assert!(!g.matches(".devcontainer/devcontainer.json"));
        assert!(g.may_contain(""));
        assert!(g.may_contain(".devcontainer"));
        assert!(g.may_contain(".DevContainer/py"));
        assert!(!g.may_contain(".devcontainer/py/deeper"));
        assert!(!g.may_contain("src"));
        let g = Glob::new("*.code-workspace").unwrap();
        assert!(g.matches("w1.CODE-WORKSPACE"));
        assert!(!g.matches("a/w1.code-workspace"));
        let g = Glob::new("**/.envrc").unwrap();
        assert!(g.matches(".envrc"));
        assert!(g.matches("a/b/.ENVRC"));
        assert!(g.may_contain("a/b/c"));
        assert_eq!(g.max_depth(), None);
        assert_eq!(Glob::new("a/b/c").unwrap().max_depth(), Some(2));
    }

    #[test]
    fn bad_globs() {
        for g in ["", "/abs", "a//b", "../x", "a/**b", "a/**"] {
            assert!(Glob::new(g).is_err(), "{g}");
        }
    }

    #[test]
    fn segment_matcher() {
        let m = |p: &str, s: &str| seg_match(&fold(p), &fold(s));
        assert!(m("*", ""));
        assert!(m("a*b*c", "aXXbYc"));
        assert!(!m("a*b*c", "aXXbY"));
        assert!(m("?.json", "a.json"));
        assert!(!m("?.json", "ab.json"));
    }
}
