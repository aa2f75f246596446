//! The catalogue's rows that git-shim and safe-git read on every call, copied at compile time
//! into tables that hold no pointers.
//!
//! Why: both binaries are static PIEs, which relocate themselves at every start: each pointer
//! in their data is written then, and every page holding one is copied (a copy-on-write fault)
//! before `main` runs. A row of `&'static str`s is pointers: [`catalogue::KEYS`] (14 KB) and
//! [`catalogue::ENV`] (4.7 KB) alone were ≈ 760 of the ≈ 4,300 relocations and about five of
//! the sixteen pages written at every start, for a few hundred bytes of text read per call.
//! Here the same text is one byte array per table, and a row holds offsets into it: the
//! tables live in read-only pages that are mapped from the file and never written. Everything
//! is computed by `const` evaluation *from the catalogue itself*, so a row added there is
//! here on the next build; the hot path no longer names [`catalogue::KEYS`],
//! [`catalogue::ENV`], [`catalogue::ENV_GIT_HARMLESS`] or [`catalogue::HOOK_EVENTS`], and the
//! linker leaves them out of the binaries that read only these copies (git-shim).
//!
//! The tests compare every row and every lookup with the catalogue's.

use crate::catalogue::{self, ConfigKey, EnvAction, GitVersion, KeyPattern, Neutraliser};

/// A part of a table's text: its byte offset and length.
#[derive(Debug, Clone, Copy)]
struct Span {
    at: u32,
    len: u32,
}

impl Span {
    const EMPTY: Span = Span { at: 0, len: 0 };

    fn of(self, text: &'static str) -> &'static str {
        let at = self.at as usize;
        &text[at..at + self.len as usize]
    }

    /// The bytes (no character-boundary checks: for comparisons on the hot path).
    fn bytes<const N: usize>(self, text: &'static [u8; N]) -> &'static [u8] {
        let at = self.at as usize;
        &text[at..at + self.len as usize]
    }
}

/// Copy `s` into `buf` at `*at`, advance `*at`, and return where it went.
const fn put<const N: usize>(buf: &mut [u8; N], at: &mut usize, s: &str) -> Span {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        buf[*at + i] = b[i];
        i += 1;
    }
    let span = Span {
        at: *at as u32,
        len: b.len() as u32,
    };
    *at += b.len();
    span
}

/// The table's text as a `str` (every part was a `str`, so it is UTF-8, checked here at
/// compile time).
const fn text(bytes: &'static [u8]) -> &'static str {
    match core::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("the catalogue's text is UTF-8"),
    }
}

/// The variant of a [`KeyPattern`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Key,
    PerName,
    AnyScope,
    Section,
}

/// A [`catalogue::KEYS`] row, as far as the hot path reads it.
#[derive(Debug, Clone, Copy)]
struct KeyRow {
    form: Form,
    section: Span,
    name: Span,
    runs: Span,
    /// The value of a `Set` or `TrustedOr` neutraliser.
    set_value: Option<Span>,
    since: Option<GitVersion>,
}

const fn pattern_parts(p: KeyPattern) -> (Form, &'static str, &'static str) {
    match p {
        KeyPattern::Key { section, name } => (Form::Key, section, name),
        KeyPattern::PerName { section, name } => (Form::PerName, section, name),
        KeyPattern::AnyScope { section, name } => (Form::AnyScope, section, name),
        KeyPattern::Section { section } => (Form::Section, section, ""),
    }
}

const fn set_value(n: Neutraliser) -> Option<&'static str> {
    match n {
        Neutraliser::Set { value } | Neutraliser::TrustedOr { value } => Some(value),
        _ => None,
    }
}

const KEY_ROWS: usize = catalogue::KEYS.len();

const KEY_TEXT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < KEY_ROWS {
        let e = &catalogue::KEYS[i];
        let (_, section, name) = pattern_parts(e.key);
        n += section.len() + name.len() + e.runs.len();
        if let Some(v) = set_value(e.neutraliser) {
            n += v.len();
        }
        i += 1;
    }
    n
};

struct Keys {
    text: [u8; KEY_TEXT],
    rows: [KeyRow; KEY_ROWS],
}

static KEYS: Keys = {
    let mut text = [0u8; KEY_TEXT];
    let mut rows = [KeyRow {
        form: Form::Key,
        section: Span::EMPTY,
        name: Span::EMPTY,
        runs: Span::EMPTY,
        set_value: None,
        since: None,
    }; KEY_ROWS];
    let mut at = 0;
    let mut i = 0;
    while i < KEY_ROWS {
        let e = &catalogue::KEYS[i];
        let (form, section, name) = pattern_parts(e.key);
        rows[i].form = form;
        rows[i].section = put(&mut text, &mut at, section);
        rows[i].name = put(&mut text, &mut at, name);
        rows[i].runs = put(&mut text, &mut at, e.runs);
        if let Some(v) = set_value(e.neutraliser) {
            rows[i].set_value = Some(put(&mut text, &mut at, v));
        }
        rows[i].since = e.since;
        i += 1;
    }
    Keys { text, rows }
};

static KEYS_TEXT: &str = text(&KEYS.text);

/// One row of [`catalogue::KEYS`], read from the copy without pointers.
#[derive(Debug, Clone, Copy)]
pub struct Key(&'static KeyRow);

impl Key {
    pub fn form(self) -> Form {
        self.0.form
    }

    pub fn section(self) -> &'static str {
        self.0.section.of(KEYS_TEXT)
    }

    /// The variable's name (empty for a [`Form::Section`] row).
    pub fn name(self) -> &'static str {
        self.0.name.of(KEYS_TEXT)
    }

    /// The row's `runs`.
    pub fn runs(self) -> &'static str {
        self.0.runs.of(KEYS_TEXT)
    }

    /// The value a `Set` or `TrustedOr` neutraliser gives the key; `None` for the others.
    pub fn set_value(self) -> Option<&'static str> {
        self.0.set_value.map(|s| s.of(KEYS_TEXT))
    }

    pub fn since(self) -> Option<GitVersion> {
        self.0.since
    }

    /// [`KeyPattern::matches`]. Lengths first: most rows differ in the section's length.
    pub fn matches(self, key: &ConfigKey<'_>) -> bool {
        let r = self.0;
        let eq = |a: &str, b: Span| {
            a.len() == b.len as usize && a.as_bytes().eq_ignore_ascii_case(b.bytes(&KEYS.text))
        };
        match r.form {
            Form::Key => {
                key.subsection.is_none() && eq(key.section, r.section) && eq(key.name, r.name)
            }
            Form::PerName => {
                key.subsection.is_some() && eq(key.section, r.section) && eq(key.name, r.name)
            }
            Form::AnyScope => eq(key.section, r.section) && eq(key.name, r.name),
            Form::Section => eq(key.section, r.section),
        }
    }

    /// [`KeyPattern::display`].
    pub fn display(self) -> String {
        let (section, name) = (self.section(), self.name());
        match self.0.form {
            Form::Key => format!("{section}.{name}"),
            Form::PerName => format!("{section}.<name>.{name}"),
            Form::AnyScope => format!("{section}[.<scope>].{name}"),
            Form::Section => format!("{section}.*"),
        }
    }
}

/// Every row of [`catalogue::KEYS`], in order.
pub fn keys() -> impl Iterator<Item = Key> {
    KEYS.rows.iter().map(Key)
}

/// [`catalogue::lookup`]: the rows matching `key`, in order.
pub fn lookup(key: &str) -> impl Iterator<Item = Key> + '_ {
    let parsed = ConfigKey::parse(key);
    keys().filter(move |e| parsed.as_ref().is_some_and(|k| e.matches(k)))
}

/// A command-scope pair of the defused set's fixed part ([`crate::env::Defused::new`]): the
/// dotted key and value of every [`Form::Key`] or [`Form::AnyScope`] row with a `Set` or
/// `TrustedOr` neutraliser (with the row's `since`), in the catalogue's order, then each of
/// [`catalogue::SCOPED_KEYS`] with the value of the first row that matches it and has one
/// (no `since`: what `lookup(key).find_map(Key::set_value)` finds), worked out at compile time.
#[derive(Debug, Clone, Copy)]
struct FixedPair {
    key: Span,
    value: Span,
    since: Option<GitVersion>,
}

/// `a[from..to]` and `b` equal, ASCII case ignored (in `const`).
const fn eq_ci_at(a: &[u8], from: usize, to: usize, b: &[u8]) -> bool {
    if to - from != b.len() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if !a[from + i].eq_ignore_ascii_case(&b[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// The value of the first [`catalogue::KEYS`] row matching `key` that has a `Set` or
/// `TrustedOr` value: [`ConfigKey::parse`] and [`Key::matches`], in `const`.
const fn scoped_value(key: &str) -> Option<&'static str> {
    let k = key.as_bytes();
    let (mut first, mut last) = (usize::MAX, usize::MAX);
    let mut i = 0;
    while i < k.len() {
        if k[i] == b'.' {
            if first == usize::MAX {
                first = i;
            }
            last = i;
        }
        i += 1;
    }
    if first == usize::MAX || first == 0 || last + 1 == k.len() {
        return None;
    }
    let has_sub = first != last;
    let mut r = 0;
    while r < KEY_ROWS {
        let e = &catalogue::KEYS[r];
        let (form, section, name) = pattern_parts(e.key);
        let sec_eq = eq_ci_at(k, 0, first, section.as_bytes());
        let name_eq = eq_ci_at(k, last + 1, k.len(), name.as_bytes());
        let hit = match form {
            Form::Key => !has_sub && sec_eq && name_eq,
            Form::PerName => has_sub && sec_eq && name_eq,
            Form::AnyScope => sec_eq && name_eq,
            Form::Section => sec_eq,
        };
        if hit {
            if let Some(v) = set_value(e.neutraliser) {
                return Some(v);
            }
        }
        r += 1;
    }
    None
}

const fn is_fixed(e: &catalogue::KeyEntry) -> Option<&'static str> {
    match pattern_parts(e.key).0 {
        Form::Key | Form::AnyScope => set_value(e.neutraliser),
        _ => None,
    }
}

/// Rows and text of [`FIXED`]: `(pairs, bytes)`.
const FIXED_SIZE: (usize, usize) = {
    let (mut n, mut bytes) = (0, 0);
    let mut i = 0;
    while i < KEY_ROWS {
        let e = &catalogue::KEYS[i];
        if let Some(v) = is_fixed(e) {
            let (_, section, name) = pattern_parts(e.key);
            n += 1;
            bytes += section.len() + 1 + name.len() + v.len();
        }
        i += 1;
    }
    let mut j = 0;
    while j < catalogue::SCOPED_KEYS.len() {
        if let Some(v) = scoped_value(catalogue::SCOPED_KEYS[j]) {
            n += 1;
            bytes += catalogue::SCOPED_KEYS[j].len() + v.len();
        }
        j += 1;
    }
    (n, bytes)
};

struct Fixed {
    text: [u8; FIXED_SIZE.1],
    pairs: [FixedPair; FIXED_SIZE.0],
}

static FIXED: Fixed = {
    let mut text = [0u8; FIXED_SIZE.1];
    let mut pairs = [FixedPair {
        key: Span::EMPTY,
        value: Span::EMPTY,
        since: None,
    }; FIXED_SIZE.0];
    let (mut at, mut n) = (0, 0);
    let mut i = 0;
    while i < KEY_ROWS {
        let e = &catalogue::KEYS[i];
        if let Some(v) = is_fixed(e) {
            let (_, section, name) = pattern_parts(e.key);
            let start = at;
            put(&mut text, &mut at, section);
            put(&mut text, &mut at, ".");
            put(&mut text, &mut at, name);
            pairs[n].key = Span {
                at: start as u32,
                len: (at - start) as u32,
            };
            pairs[n].value = put(&mut text, &mut at, v);
            pairs[n].since = e.since;
            n += 1;
        }
        i += 1;
    }
    let mut j = 0;
    while j < catalogue::SCOPED_KEYS.len() {
        if let Some(v) = scoped_value(catalogue::SCOPED_KEYS[j]) {
            pairs[n].key = put(&mut text, &mut at, catalogue::SCOPED_KEYS[j]);
            pairs[n].value = put(&mut text, &mut at, v);
            n += 1;
        }
        j += 1;
    }
    Fixed { text, pairs }
};

static FIXED_TEXT: &str = text(&FIXED.text);

/// The defused set's fixed command-scope pairs for a git of `version` (see [`FixedPair`]):
/// `(key, value)` in the order [`crate::env::Defused::new`] pushes them.
pub fn fixed_pairs(version: GitVersion) -> impl Iterator<Item = (&'static str, &'static str)> {
    FIXED
        .pairs
        .iter()
        .filter(move |p| p.since.is_none_or(|v| version >= v))
        .map(|p| (p.key.of(FIXED_TEXT), p.value.of(FIXED_TEXT)))
}

/// A [`catalogue::ENV`] row: its name (a prefix when it ends in `*`), and the value of a `Set`.
#[derive(Debug, Clone, Copy)]
struct EnvRow {
    name: Span,
    set: Option<Span>,
}

const ENV_ROWS: usize = catalogue::ENV.len();

const fn env_set(a: EnvAction) -> Option<&'static str> {
    match a {
        EnvAction::Set { value } => Some(value),
        EnvAction::Remove => None,
    }
}

const ENV_TEXT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < ENV_ROWS {
        let e = &catalogue::ENV[i];
        n += e.name.len();
        if let Some(v) = env_set(e.action) {
            n += v.len();
        }
        i += 1;
    }
    n
};

struct Env {
    text: [u8; ENV_TEXT],
    rows: [EnvRow; ENV_ROWS],
}

static ENV: Env = {
    let mut text = [0u8; ENV_TEXT];
    let mut rows = [EnvRow {
        name: Span::EMPTY,
        set: None,
    }; ENV_ROWS];
    let mut at = 0;
    let mut i = 0;
    while i < ENV_ROWS {
        let e = &catalogue::ENV[i];
        rows[i].name = put(&mut text, &mut at, e.name);
        if let Some(v) = env_set(e.action) {
            rows[i].set = Some(put(&mut text, &mut at, v));
        }
        i += 1;
    }
    Env { text, rows }
};

static ENV_TEXT_STR: &str = text(&ENV.text);

/// The number of rows of [`catalogue::ENV`].
pub fn env_rows() -> usize {
    ENV_ROWS
}

/// The name of row `i` of [`catalogue::ENV`] (a prefix when it ends in `*`).
pub fn env_name(i: usize) -> &'static str {
    ENV.rows[i].name.of(ENV_TEXT_STR)
}

/// [`env_name`] as bytes.
pub fn env_name_bytes(i: usize) -> &'static [u8] {
    ENV.rows[i].name.bytes(&ENV.text)
}

/// The `Set` rows of [`catalogue::ENV`], in order: name and value.
pub fn env_sets() -> impl Iterator<Item = (&'static str, &'static str)> {
    ENV.rows
        .iter()
        .filter_map(|r| Some((r.name.of(ENV_TEXT_STR), r.set?.of(ENV_TEXT_STR))))
}

/// The length of `words` as [`join`] writes them.
pub(crate) const fn joined_len(words: &[&str]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < words.len() {
        n += 1 + words[i].len();
        i += 1;
    }
    n
}

/// `words` as one text, each word after one byte holding its length (checked at compile time
/// to be under 128: an ASCII byte, so the text is UTF-8 and each word starts and ends on a
/// character boundary), for a list that is only searched or walked word by word ([`Words`]).
pub(crate) const fn join<const N: usize>(words: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut i = 0;
    while i < words.len() {
        assert!(words[i].len() < 128, "a listed word is 128 bytes or longer");
        out[at] = words[i].len() as u8;
        at += 1;
        put(&mut out, &mut at, words[i]);
        i += 1;
    }
    assert!(at == N, "joined_len and join disagree");
    out
}

/// A list of words as one text, each after its length ([`join`]).
#[derive(Debug, Clone, Copy)]
pub struct Words(&'static str);

impl Words {
    /// A list made from `bytes` (the output of [`join`]).
    pub const fn new(bytes: &'static [u8]) -> Words {
        Words(text(bytes))
    }

    pub fn iter(self) -> impl Iterator<Item = &'static str> {
        let text = self.0;
        let mut at = 0;
        std::iter::from_fn(move || {
            let len = usize::from(*text.as_bytes().get(at)?);
            let word = &text[at + 1..at + 1 + len];
            at += 1 + len;
            Some(word)
        })
    }

    /// Is `word` one of the words? Walks the lengths; compares the bytes of equal lengths only.
    pub fn contains(self, word: &[u8]) -> bool {
        let b = self.0.as_bytes();
        let mut at = 0;
        while let Some(&len) = b.get(at) {
            let len = usize::from(len);
            if len == word.len() && b.get(at + 1..at + 1 + len) == Some(word) {
                return true;
            }
            at += 1 + len;
        }
        false
    }
}

static GIT_HARMLESS_BYTES: [u8; joined_len(catalogue::ENV_GIT_HARMLESS)] =
    join(catalogue::ENV_GIT_HARMLESS);
/// [`catalogue::ENV_GIT_HARMLESS`].
pub static GIT_HARMLESS: Words = Words::new(&GIT_HARMLESS_BYTES);

static HOOK_EVENTS_BYTES: [u8; joined_len(catalogue::HOOK_EVENTS)] = join(catalogue::HOOK_EVENTS);
/// [`catalogue::HOOK_EVENTS`].
pub static HOOK_EVENTS: Words = Words::new(&HOOK_EVENTS_BYTES);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row, field by field, is the catalogue's.
    #[test]
    fn key_rows_are_the_catalogues() {
        assert_eq!(keys().count(), catalogue::KEYS.len());
        for (p, e) in keys().zip(catalogue::KEYS) {
            let (form, section, name) = pattern_parts(e.key);
            assert_eq!((p.form(), p.section(), p.name()), (form, section, name));
            assert_eq!(p.runs(), e.runs);
            assert_eq!(p.set_value(), set_value(e.neutraliser));
            assert_eq!(p.since(), e.since);
            assert_eq!(p.display(), e.key.display());
        }
        // Control: the comparison sees a row out of place.
        let mut shifted = keys().skip(1);
        assert!(catalogue::KEYS.iter().any(|e| shifted
            .next()
            .is_some_and(|p| p.display() != e.key.display())));
    }

    /// `lookup` finds the same rows as the catalogue's, for every row's own key and its
    /// spellings (case, with and without a subsection, a prefix, a longer name).
    #[test]
    fn lookup_finds_the_catalogues_rows() {
        let mut keys_tried = vec![
            "x".to_owned(),
            ".".to_owned(),
            "core.".to_owned(),
            ".fsmonitor".to_owned(),
        ];
        for e in catalogue::KEYS {
            let (_, s, n) = pattern_parts(e.key);
            let n = if n.is_empty() { "anything" } else { n };
            for k in [
                format!("{s}.{n}"),
                format!("{s}.sub.{n}"),
                format!("{s}.a.b.{n}"),
                format!("{}.{}", s.to_uppercase(), n.to_uppercase()),
                format!("{s}.SUB.{}", n.to_lowercase()),
                format!("{s}x.{n}"),
                format!("{s}.{n}x"),
            ] {
                keys_tried.push(k);
            }
        }
        let mut found = 0;
        for k in &keys_tried {
            let ours: Vec<String> = lookup(k).map(|e| e.display() + e.runs()).collect();
            let theirs: Vec<String> = catalogue::lookup(k)
                .map(|e| e.key.display() + e.runs)
                .collect();
            assert_eq!(ours, theirs, "{k}");
            found += ours.len();
        }
        assert!(found > catalogue::KEYS.len(), "the keys tried match rows");
    }

    /// The fixed pairs are what the catalogue's rows and `lookup` give, for every version gate.
    #[test]
    fn fixed_pairs_are_the_catalogues() {
        let mut versions = vec![GitVersion::new(2, 0, 0), GitVersion::new(99, 0, 0)];
        versions.extend(catalogue::KEYS.iter().filter_map(|e| e.since));
        let mut gated = false;
        for v in versions {
            let mut want: Vec<(String, String)> = keys()
                .filter(|e| e.since().is_none_or(|s| v >= s))
                .filter(|e| matches!(e.form(), Form::Key | Form::AnyScope))
                .filter_map(|e| {
                    Some((
                        format!("{}.{}", e.section(), e.name()),
                        e.set_value()?.to_owned(),
                    ))
                })
                .collect();
            for key in catalogue::SCOPED_KEYS {
                let found = catalogue::lookup(key).find_map(|e| set_value(e.neutraliser));
                if let Some(value) = found {
                    want.push(((*key).to_owned(), value.to_owned()));
                }
            }
            let got: Vec<(String, String)> = fixed_pairs(v)
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(got, want, "{v:?}");
            gated |= got.len() != fixed_pairs(GitVersion::new(2, 0, 0)).count();
        }
        assert!(
            catalogue::SCOPED_KEYS
                .iter()
                .all(|k| fixed_pairs(GitVersion::new(2, 0, 0)).any(|(p, _)| p == *k)),
            "every scoped key has a value"
        );
        // Control: a version gate changes the list, or no row of the fixed kind is gated.
        let any_gated_row = catalogue::KEYS
            .iter()
            .any(|e| e.since.is_some() && is_fixed(e).is_some());
        assert_eq!(gated, any_gated_row);
        // The const parse agrees with ConfigKey::parse on the forms it must refuse or split.
        for k in [
            "gpg.program",
            "gpg.x.program",
            "GPG.X.Y.PROGRAM",
            ".program",
            "gpg.",
            "gpg",
            "core.fsmonitor",
        ] {
            let runtime = lookup(k).find_map(|e| e.set_value());
            assert_eq!(scoped_value(k), runtime, "{k}");
        }
    }

    #[test]
    fn env_rows_are_the_catalogues() {
        assert_eq!(env_rows(), catalogue::ENV.len());
        for (i, e) in catalogue::ENV.iter().enumerate() {
            assert_eq!(env_name(i), e.name);
            assert_eq!(env_name_bytes(i), e.name.as_bytes());
        }
        let sets: Vec<(&str, &str)> = catalogue::ENV
            .iter()
            .filter_map(|e| Some((e.name, env_set(e.action)?)))
            .collect();
        assert!(!sets.is_empty());
        assert_eq!(env_sets().collect::<Vec<_>>(), sets);
    }

    #[test]
    fn word_lists_are_the_catalogues() {
        for (words, list) in [
            (GIT_HARMLESS, catalogue::ENV_GIT_HARMLESS),
            (HOOK_EVENTS, catalogue::HOOK_EVENTS),
        ] {
            assert_eq!(words.iter().collect::<Vec<_>>(), list.to_vec());
            for w in list {
                assert!(words.contains(w.as_bytes()));
                assert!(!words.contains(format!("{w}X").as_bytes()));
                assert!(!words.contains(&w.as_bytes()[1..]));
            }
            assert!(!words.contains(b""));
        }
        const ODD: [u8; joined_len(&["", "a", "ab"])] = join(&["", "a", "ab"]);
        let odd = Words::new(&ODD);
        assert_eq!(odd.iter().collect::<Vec<_>>(), ["", "a", "ab"]);
        assert!(odd.contains(b"") && odd.contains(b"a") && odd.contains(b"ab"));
        assert!(!odd.contains(b"b") && !odd.contains(b"abc") && !odd.contains(b"\x01a"));
        const EMPTY: [u8; 0] = join::<0>(&[]);
        assert_eq!(Words::new(&EMPTY).iter().count(), 0);
        assert!(!Words::new(&EMPTY).contains(b""));
    }
}
