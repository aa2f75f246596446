//! URLs in what gitward prints or logs: the userinfo of `scheme://user:password@host/…` (or
//! `scheme://token@host/…`) is a secret and is never written out.
//!
//! Invariant: every finding, refusal message and event field that may carry a URL or a config
//! value passes through [`redact_userinfo`] before it is printed or logged. The function
//! works on any text (a bare URL, a config value, a whole message): every `://` authority
//! that carries an `@` loses the part before its last `@`. The scp form `user@host:path`
//! has no `://`, keeps its user (a login name, not a secret) and is left as is, as are
//! `ssh://user@host/…` (a login name alone, as in the scp form) and `<helper>::<address>`
//! forms whose address has no userinfo.

use std::borrow::Cow;

/// What replaces a removed userinfo (`https://***@host/r`): the reader sees that there was
/// one, never what it was.
pub const REDACTED: &str = "***";

/// `text` with the userinfo of every `scheme://userinfo@host` removed (replaced with
/// [`REDACTED`]). Borrowed when there is nothing to remove.
///
/// The authority ends at the first `/`, `?`, `#` or whitespace after `://` (RFC 3986 §3.2;
/// whitespace because `text` may be a whole message). Within it, git and curl take the last
/// `@` as the end of the userinfo, so everything before the last `@` goes. An ssh URL's bare
/// login name (`ssh://git@host/…`) is kept, like the scp form's `git@host:…`; with a `:` in
/// it (a password) it goes too.
pub fn redact_userinfo(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut done = 0; // bytes of `text` already copied to `out`
    let mut from = 0;
    while let Some(i) = text[from..].find("://") {
        let start = from + i + 3;
        let end = text[start..]
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .map_or(text.len(), |j| start + j);
        let scheme = text[..start - 3]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .next()
            .unwrap_or("");
        let ssh = ["ssh", "git+ssh", "ssh+git"]
            .iter()
            .any(|s| s.eq_ignore_ascii_case(scheme));
        if let Some(at) = text[start..end]
            .rfind('@')
            .filter(|&at| !ssh || text[start..start + at].contains(':'))
        {
            let o = out.get_or_insert_with(String::new);
            o.push_str(&text[done..start]);
            o.push_str(REDACTED);
            done = start + at;
        }
        from = end.max(start);
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[done..]);
            Cow::Owned(o)
        }
    }
}

/// [`redact_userinfo`] over every string of a JSON value (keys are left alone: they are
/// field names).
pub fn redact_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Cow::Owned(r) = redact_userinfo(s) {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_json),
        serde_json::Value::Object(m) => m.values_mut().for_each(redact_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::redact_userinfo as r;

    #[test]
    fn userinfo_is_removed() {
        assert_eq!(r("https://user:pass@host/r.git"), "https://***@host/r.git");
        assert_eq!(
            r("https://ghp_token@github.com/o/r"),
            "https://***@github.com/o/r"
        );
        assert_eq!(r("http://a@b:c@host:8080/x"), "http://***@host:8080/x");
        assert_eq!(r("ssh://git@host/r"), "ssh://git@host/r");
        assert_eq!(r("ssh://git:pw@host/r"), "ssh://***@host/r");
        assert_eq!(r("SSH://git@host/r"), "SSH://git@host/r");
        assert_eq!(r("https://u:p@host"), "https://***@host");
        assert_eq!(r("https://u:p@host?q=a@b"), "https://***@host?q=a@b");
    }

    #[test]
    fn inside_text_and_helper_forms() {
        assert_eq!(
            r("remote.o.url = \"https://u:p@h/x\" and https://t@k/y (fetch)"),
            "remote.o.url = \"https://***@h/x\" and https://***@k/y (fetch)"
        );
        assert_eq!(r("foo::https://u:p@h/x"), "foo::https://***@h/x");
        assert_eq!(
            r("url.https://tok@h/.insteadof"),
            "url.https://***@h/.insteadof"
        );
    }

    #[test]
    fn nothing_to_remove_is_borrowed() {
        for s in [
            "git@github.com:o/r.git",
            "https://github.com/git/git",
            "/srv/repos/r.git",
            "ext::sh -c x",
            "file:///tmp/r",
            "an @ sign in a sentence",
            "://@",
            "",
        ] {
            let out = r(s);
            if s == "://@" {
                assert_eq!(out, "://***@");
                continue;
            }
            assert!(matches!(out, std::borrow::Cow::Borrowed(_)), "{s}");
            assert_eq!(out, s);
        }
    }
}
