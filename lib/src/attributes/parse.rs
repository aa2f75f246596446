//! gitattributes line syntax, after git's `attr.c` (`parse_attr_line`, `parse_attr`).
//!
//! A line is blank-separated (`" \t\r\n"`): a pattern (optionally C-quoted) or a macro
//! definition `[attr]<name>`, then attribute states: `name` (set), `-name` (false), `!name`
//! (unspecified), `name=value`. Empty lines and lines starting with `#` are skipped. A leading
//! UTF-8 BOM on the first line is skipped.
//!
//! The parser is deliberately *more* accepting than git where git would drop a line (an
//! invalid attribute name elsewhere on the line, an over-long line, a negative pattern): every
//! driver assignment git could honour is reported, plus a few it would ignore — a superset.

use gix::bstr::ByteSlice;

const BLANK: &[u8] = b" \t\r\n";
/// git's `ATTRIBUTE_MACRO_PREFIX`.
const MACRO_PREFIX: &[u8] = b"[attr]";

/// What a state sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// `name`
    Set,
    /// `-name`
    Unset,
    /// `!name`
    Unspecified,
    /// `name=value`
    Value(Vec<u8>),
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number.
    pub number: usize,
    /// The pattern (unquoted) or, for a macro definition, `None`.
    pub pattern: Option<Vec<u8>>,
    /// The macro name for `[attr]<name>` lines.
    pub macro_name: Option<Vec<u8>>,
    pub states: Vec<(Vec<u8>, State)>,
}

fn is_blank(b: u8) -> bool {
    BLANK.contains(&b)
}

fn skip_blank(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_blank(b)).count();
    &s[n..]
}

fn token_len(s: &[u8]) -> usize {
    s.iter().take_while(|&&b| !is_blank(b)).count()
}

/// git's `unquote_c_style` (quote.c): `"…"` with `\a \b \f \n \r \t \v \\ \" \ooo` (the
/// first octal digit 0–3). Returns the unquoted bytes and the rest after the closing quote, or
/// `None` if it is not well-formed (git then takes the token literally). gitoxide's
/// `gix_quote::ansi_c::undo` implements the same rules; `s` starts with `"`.
fn unquote_c_style(s: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let (unquoted, consumed) = gix::quote::ansi_c::undo(s.as_bstr()).ok()?;
    Some((unquoted.into_owned().into(), &s[consumed..]))
}

/// Parse one line; `None` for blank lines, comments, and lines without a pattern.
pub fn parse_line(raw: &[u8], number: usize) -> Option<Line> {
    // git hands each line to the parser as a C string: a NUL ends it there.
    let mut line = &raw[..raw.find_byte(0).unwrap_or(raw.len())];
    if number == 1 {
        line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    }
    let cp = skip_blank(line);
    if cp.is_empty() || cp[0] == b'#' {
        return None;
    }
    let (name, states): (Vec<u8>, &[u8]) =
        match (cp[0] == b'"').then(|| unquote_c_style(cp)).flatten() {
            Some((unquoted, rest)) => (unquoted, rest),
            None => {
                let n = token_len(cp);
                (cp[..n].to_vec(), &cp[n..])
            }
        };
    let (pattern, macro_name) = if name.len() > MACRO_PREFIX.len() && name.starts_with(MACRO_PREFIX)
    {
        let m = skip_blank(&name[MACRO_PREFIX.len()..]);
        let m = &m[..token_len(m)];
        (None, Some(m.to_vec()))
    } else {
        (Some(name), None)
    };
    let mut out = Vec::new();
    let mut cp = skip_blank(states);
    while !cp.is_empty() {
        let ep = token_len(cp);
        let tok = &cp[..ep];
        let (attr, state) = match tok.find_byte(b'=') {
            Some(eq) if tok[0] != b'-' && tok[0] != b'!' => {
                (tok[..eq].to_vec(), State::Value(tok[eq + 1..].to_vec()))
            }
            eq => {
                let end = eq.unwrap_or(tok.len());
                match tok[0] {
                    b'-' => (tok[1..end].to_vec(), State::Unset),
                    b'!' => (tok[1..end].to_vec(), State::Unspecified),
                    _ => (tok[..end].to_vec(), State::Set),
                }
            }
        };
        out.push((attr, state));
        cp = skip_blank(&cp[ep..]);
    }
    Some(Line {
        number,
        pattern,
        macro_name,
        states: out,
    })
}

/// Every parsed line of a file's contents (split at `\n`, as git's readers do).
pub fn parse_file(bytes: &[u8]) -> Vec<Line> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, l)| parse_line(l, i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(l: &Line) -> Vec<(String, State)> {
        l.states
            .iter()
            .map(|(a, s)| (String::from_utf8_lossy(a).into_owned(), s.clone()))
            .collect()
    }

    #[test]
    fn states_and_patterns() {
        let l = parse_line(b"*.bin filter=lfs -diff !merge text eol=lf\r", 2).unwrap();
        assert_eq!(l.pattern.as_deref(), Some(&b"*.bin"[..]));
        assert_eq!(
            st(&l),
            [
                ("filter".into(), State::Value(b"lfs".to_vec())),
                ("diff".into(), State::Unset),
                ("merge".into(), State::Unspecified),
                ("text".into(), State::Set),
                ("eol".into(), State::Value(b"lf".to_vec())),
            ]
        );
        assert!(parse_line(b"   # comment filter=x", 1).is_none());
        assert!(parse_line(b"  \t ", 1).is_none());
        // `-filter=x` is "false", as in git (the value is ignored).
        let l = parse_line(b"x -filter=x", 1).unwrap();
        assert_eq!(st(&l), [("filter".into(), State::Unset)]);
    }

    #[test]
    fn quoted_patterns_macros_and_bom() {
        let l = parse_line(br#""a b\tc\"d" diff=x"#, 1).unwrap();
        assert_eq!(l.pattern.as_deref(), Some(&b"a b\tc\"d"[..]));
        assert_eq!(st(&l), [("diff".into(), State::Value(b"x".to_vec()))]);
        let l = parse_line(
            b"\xef\xbb\xbf[attr]lfsish filter=lfs diff=lfs merge=lfs -text",
            1,
        )
        .unwrap();
        assert_eq!(l.macro_name.as_deref(), Some(&b"lfsish"[..]));
        assert_eq!(l.pattern, None);
        assert_eq!(l.states.len(), 4);
        // `[attr]` alone is a pattern, not a macro (git needs a name after the prefix).
        let l = parse_line(b"[attr] filter=x", 1).unwrap();
        assert_eq!(l.macro_name, None);
        // Badly quoted: taken literally up to the blank.
        let l = parse_line(br#""unterminated filter=y"#, 1).unwrap();
        assert_eq!(l.pattern.as_deref(), Some(&b"\"unterminated"[..]));
        assert_eq!(st(&l), [("filter".into(), State::Value(b"y".to_vec()))]);
        let l = parse_line(b"x filter=ev\0il diff=gone", 1).unwrap();
        assert_eq!(st(&l), [("filter".into(), State::Value(b"ev".to_vec()))]);
        let lines = parse_file(b"a filter=1\n\n# c\nb diff=2\n");
        assert_eq!(lines.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 4]);
    }

    /// git's C-style quoting (quote.c `unquote_c_style`, as `git check-attr` and
    /// `git ls-files` write it): every named escape, octal escapes with a first digit 0–3, and
    /// the malformed forms git rejects — the line's token is then taken literally.
    #[test]
    fn unquotes_as_git_does() {
        let ok: &[(&[u8], &[u8], &[u8])] = &[
            (br#""plain""#, b"plain", b""),
            (br#""a b" diff"#, b"a b", b" diff"),
            (br#""\a\b\f\n\r\t\v""#, b"\x07\x08\x0c\n\r\t\x0b", b""),
            (br#""\\ \"""#, b"\\ \"", b""),
            (br#""\303\251t\303\251""#, "été".as_bytes(), b""),
            (br#""\000\177\377""#, b"\0\x7f\xff", b""),
            (br#""""#, b"", b""),
            (br#""x"y"#, b"x", b"y"),
        ];
        for (quoted, unquoted, rest) in ok {
            assert_eq!(
                unquote_c_style(quoted),
                Some((unquoted.to_vec(), *rest)),
                "{}",
                quoted.as_bstr()
            );
        }
        let malformed: &[&[u8]] = &[
            br#"""#,
            br#""unterminated"#,
            br#""\""#,
            br#""\x41""#,
            br#""\e""#,
            br#""\400""#,
            br#""\38a""#,
            br#""\3"#,
            br#""\12""#,
            br#""\"#,
        ];
        for quoted in malformed {
            assert_eq!(unquote_c_style(quoted), None, "{}", quoted.as_bstr());
        }
    }
}
