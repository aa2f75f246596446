//! git's config file parser, ported byte for byte from `config.c` (`git_parse_source`,
//! `get_next_char`, `get_base_var`, `get_extended_base_var`, `get_value`, `parse_value`).
//!
//! Why not gix's parser: it reads some files differently from git (a lone CR, a NUL byte, a
//! key before any section header, a header that mixes the two subsection forms such as
//! `[diff.a "b"]`), and a reader that must name every program git could run has to see
//! exactly git's keys and values — neither more refusals nor other names. So this module
//! follows git's state machine literally, including its C-string semantics: a NUL inside a
//! subsection or a value ends the key or the value there (git stores both with `strdup`), a
//! lone CR is whitespace, `\r\n` is a newline, and errors carry git's own line number
//! ("bad config line N").
//!
//! One known difference between git versions is modelled: before git 2.45 (commit
//! f0b8944430, "config: really keep value-internal whitespace verbatim") every unquoted
//! whitespace byte inside a value became a space; since then it is kept as is. Both forms are
//! produced ([`Entry::squashed`]) and the caller picks the one of the git that will run.

/// One thing git's parser reports, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A section header: `stem` is git's key prefix (`diff`, `diff.a.B`, `remote.origin`),
    /// already cut at a NUL byte as every key under it will be.
    Section { stem: Vec<u8>, line: usize },
    /// A variable: `key` as git passes it to its callbacks (section and name lower-cased, the
    /// subsection as git assembled it, cut at a NUL byte); `value` `None` for a variable
    /// without `=`.
    Entry(Entry),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub key: Vec<u8>,
    /// The value as git ≥ 2.45 reads it.
    pub value: Option<Vec<u8>>,
    /// The value as git < 2.45 reads it, when that differs (inner whitespace squashed).
    pub squashed: Option<Vec<u8>>,
    /// The line the variable's name starts on.
    pub line: usize,
}

/// git's "bad config line N": everything parsed before it, and the line git names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadLine {
    pub line: usize,
}

const EOF: i32 = -1;

/// git's `sane_ctype` classes (ASCII only; bytes ≥ 0x80 are in no class).
fn is_space(c: i32) -> bool {
    matches!(c, 0x09 | 0x0a | 0x0d | 0x20)
}
fn is_alpha(c: i32) -> bool {
    (0x41..=0x5a).contains(&c) || (0x61..=0x7a).contains(&c)
}
fn is_keychar(c: i32) -> bool {
    is_alpha(c) || (0x30..=0x39).contains(&c) || c == b'-' as i32
}
fn lower(c: i32) -> u8 {
    if (0x41..=0x5a).contains(&c) {
        (c + 0x20) as u8
    } else {
        c as u8
    }
}

/// The bytes up to the first NUL (git keeps keys and values as C strings).
fn c_string(mut v: Vec<u8>) -> Vec<u8> {
    if let Some(p) = v.iter().position(|&b| b == 0) {
        v.truncate(p);
    }
    v
}

struct Source<'a> {
    bytes: &'a [u8],
    pos: usize,
    eof: bool,
    linenr: usize,
}

impl Source<'_> {
    fn fgetc(&mut self) -> i32 {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                i32::from(b)
            }
            None => EOF,
        }
    }

    /// `get_next_char`: `\r\n` is one newline, a lone `\r` is itself, EOF reads as a final
    /// newline (and counts a line, as git does).
    fn next(&mut self) -> i32 {
        let mut c = self.fgetc();
        if c == b'\r' as i32 {
            let d = self.fgetc();
            if d == b'\n' as i32 {
                c = d;
            } else {
                if d != EOF {
                    self.pos -= 1;
                }
                c = b'\r' as i32;
            }
        }
        if c == b'\n' as i32 {
            self.linenr += 1;
        }
        if c == EOF {
            self.eof = true;
            self.linenr += 1;
            c = b'\n' as i32;
        }
        c
    }

    /// `parse_value`, both dialects at once: `(verbatim, squashed)`; `None` for git's error.
    fn parse_value(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut quote = false;
        let mut comment = false;
        let mut value: Vec<u8> = Vec::new();
        let mut trim_len = 0usize;
        // Old dialect: pending spaces.
        let mut old: Vec<u8> = Vec::new();
        let mut space = 0usize;
        loop {
            let c = self.next();
            if c == b'\n' as i32 {
                if quote {
                    self.linenr -= 1;
                    return None;
                }
                if trim_len != 0 {
                    value.truncate(trim_len);
                }
                return Some((value, old));
            }
            if comment {
                continue;
            }
            if is_space(c) && !quote {
                if trim_len == 0 {
                    trim_len = value.len();
                }
                if !value.is_empty() {
                    value.push(c as u8);
                }
                if !old.is_empty() {
                    space += 1;
                }
                continue;
            }
            if !quote && (c == b';' as i32 || c == b'#' as i32) {
                comment = true;
                continue;
            }
            trim_len = 0;
            old.extend(std::iter::repeat_n(b' ', space));
            space = 0;
            let mut c = c;
            if c == b'\\' as i32 {
                c = self.next();
                let ch = match c {
                    0x0a => continue,
                    0x74 => b'\t', // t
                    0x62 => 0x08,  // b
                    0x6e => b'\n', // n
                    0x5c | 0x22 => c as u8,
                    _ => return None,
                };
                value.push(ch);
                old.push(ch);
                continue;
            }
            if c == b'"' as i32 {
                quote = !quote;
                continue;
            }
            value.push(c as u8);
            old.push(c as u8);
        }
    }

    /// `get_value`: the rest of the name, then `= value` or the end of the line.
    fn get_value(&mut self, name: &mut Vec<u8>, line: usize, out: &mut Vec<Event>) -> bool {
        let mut c;
        loop {
            c = self.next();
            if self.eof || !is_keychar(c) {
                break;
            }
            name.push(lower(c));
        }
        while c == b' ' as i32 || c == b'\t' as i32 {
            c = self.next();
        }
        let mut value = None;
        let mut squashed = None;
        if c != b'\n' as i32 {
            if c != b'=' as i32 {
                return false;
            }
            let Some((v, old)) = self.parse_value() else {
                return false;
            };
            let (v, old) = (c_string(v), c_string(old));
            if v != old {
                squashed = Some(old);
            }
            value = Some(v);
        }
        out.push(Event::Entry(Entry {
            key: c_string(name.clone()),
            value,
            squashed,
            line,
        }));
        true
    }

    /// `get_extended_base_var`: `[base "sub"]` after the whitespace.
    fn get_extended_base_var(&mut self, name: &mut Vec<u8>, mut c: i32) -> bool {
        loop {
            if c == b'\n' as i32 {
                self.linenr -= 1;
                return false;
            }
            c = self.next();
            if !is_space(c) {
                break;
            }
        }
        if c != b'"' as i32 {
            return false;
        }
        name.push(b'.');
        loop {
            let mut c = self.next();
            if c == b'\n' as i32 {
                self.linenr -= 1;
                return false;
            }
            if c == b'"' as i32 {
                break;
            }
            if c == b'\\' as i32 {
                c = self.next();
                if c == b'\n' as i32 {
                    self.linenr -= 1;
                    return false;
                }
            }
            name.push(c as u8);
        }
        self.next() == b']' as i32
    }

    /// `get_base_var`: the section name (with `.` allowed, lower-cased), then `]` or a
    /// subsection in quotes.
    fn get_base_var(&mut self, name: &mut Vec<u8>) -> bool {
        loop {
            let c = self.next();
            if self.eof {
                return false;
            }
            if c == b']' as i32 {
                return true;
            }
            if is_space(c) {
                return self.get_extended_base_var(name, c);
            }
            if !is_keychar(c) && c != b'.' as i32 {
                return false;
            }
            name.push(lower(c));
        }
    }
}

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Parse `bytes` as git does. `Err` carries the events before git's error and its line.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Event>, (Vec<Event>, BadLine)> {
    let mut s = Source {
        bytes,
        pos: 0,
        eof: false,
        linenr: 1,
    };
    let mut out = Vec::new();
    let mut comment = false;
    let mut var: Vec<u8> = Vec::new();
    let mut baselen = 0usize;
    let mut bom = Some(0usize);
    loop {
        let c = s.next();
        if let Some(i) = bom {
            if i < UTF8_BOM.len() {
                if c == i32::from(UTF8_BOM[i]) {
                    bom = Some(i + 1);
                    continue;
                }
                if i != 0 {
                    break; // a partial BOM
                }
                bom = None;
            }
        }
        if c == b'\n' as i32 {
            if s.eof {
                return Ok(out);
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' as i32 || c == b';' as i32 {
            comment = true;
            continue;
        }
        if c == b'[' as i32 {
            var.clear();
            let line = s.linenr;
            if !s.get_base_var(&mut var) || var.is_empty() {
                break;
            }
            out.push(Event::Section {
                stem: c_string(var.clone()),
                line,
            });
            var.push(b'.');
            baselen = var.len();
            continue;
        }
        if !is_alpha(c) {
            break;
        }
        let line = s.linenr;
        var.truncate(baselen);
        var.push(lower(c));
        if !s.get_value(&mut var, line, &mut out) {
            break;
        }
    }
    let line = s.linenr;
    Err((out, BadLine { line }))
}

/// Split git's key the way `parse_config_key` does: section up to the first dot, name after
/// the last one, the subsection between them (`None` when there is one dot). A key without a
/// dot (a variable before any section header) has an empty section: no git consumer looks it
/// up, but `git config --list` shows it.
pub(crate) fn split_key(key: &[u8]) -> (&[u8], Option<&[u8]>, &[u8]) {
    let Some(first) = key.iter().position(|&b| b == b'.') else {
        return (&key[..0], None, key);
    };
    let last = key.iter().rposition(|&b| b == b'.').unwrap_or(first);
    if first == last {
        (&key[..first], None, &key[first + 1..])
    } else {
        (&key[..first], Some(&key[first + 1..last]), &key[last + 1..])
    }
}

/// Split a section stem (`diff.a.B`) into section and subsection at the first dot.
pub(crate) fn split_stem(stem: &[u8]) -> (&[u8], Option<&[u8]>) {
    match stem.iter().position(|&b| b == b'.') {
        Some(p) => (&stem[..p], Some(&stem[p + 1..])),
        None => (stem, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(b: &[u8]) -> Vec<(String, Option<String>)> {
        parse(b)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e {
                Event::Entry(e) => Some((
                    String::from_utf8_lossy(&e.key).into_owned(),
                    e.value.map(|v| String::from_utf8_lossy(&v).into_owned()),
                )),
                _ => None,
            })
            .collect()
    }

    fn bad(b: &[u8]) -> usize {
        parse(b).unwrap_err().1.line
    }

    #[test]
    fn git_corners() {
        let kv = |k: &str, v: &str| (k.to_owned(), Some(v.to_owned()));
        assert_eq!(
            entries(b"k = v\n[a]\nb = c\n"),
            [kv("k", "v"), kv("a.b", "c")]
        );
        assert_eq!(
            entries(b"[diff.A \"B\"]\ntextconv = x\n"),
            [kv("diff.a.B.textconv", "x")]
        );
        assert_eq!(
            entries(b"[diff. \"\"]\n\ttextconv = x\n"),
            [kv("diff...textconv", "x")]
        );
        assert_eq!(entries(b"[a]\nb = x\ry z\n"), [kv("a.b", "x\ry z")]);
        assert_eq!(entries(b"[a \"s\0t\"]\nb = 1\n"), [kv("a.s", "1")]);
        assert_eq!(entries(b"[a]\n# c\0c\nb=1\n"), [kv("a.b", "1")]);
        assert_eq!(entries(b"[a]\nb = x\0y\n"), [kv("a.b", "x")]);
        assert_eq!(entries(b"[a]\r\nb = 1\r\n"), [kv("a.b", "1")]);
        assert_eq!(entries(b"\xef\xbb\xbf[a]\nb\n"), [("a.b".into(), None)]);
        assert_eq!(bad(b"[a]\nb\r= 1\n"), 2);
        assert_eq!(bad(b"[a]\nb = x\0y\"\n"), 2);
        assert_eq!(bad(b"[a]\n\tb=1\n[b]\n\0"), 4);
        assert_eq!(bad(b"\xef\xbb[a]\n"), 1);
        assert_eq!(bad(b"[a \"x\n"), 1);
    }

    #[test]
    fn old_gits_squash_inner_whitespace() {
        let p = parse(b"[a]\nb = x\t\ry  \"q\tq\" ;c\n").unwrap();
        let Event::Entry(e) = &p[1] else { panic!() };
        assert_eq!(e.value.as_deref(), Some(&b"x\t\ry  q\tq"[..]));
        assert_eq!(e.squashed.as_deref(), Some(&b"x  y  q\tq"[..]));
    }

    #[test]
    fn keys_split_like_parse_config_key() {
        assert_eq!(
            split_key(b"a.b.c.d"),
            (&b"a"[..], Some(&b"b.c"[..]), &b"d"[..])
        );
        assert_eq!(split_key(b"a.b"), (&b"a"[..], None, &b"b"[..]));
        assert_eq!(split_key(b"k"), (&b""[..], None, &b"k"[..]));
        assert_eq!(
            split_key(b"diff...x"),
            (&b"diff"[..], Some(&b"."[..]), &b"x"[..])
        );
    }
}
