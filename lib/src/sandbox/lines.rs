//! The audit log relay's line filter: what arrives on the FIFO from inside the sandbox reaches
//! the log only as whole lines, each one JSON object.
//!
//! # Why
//!
//! Inside the sandbox the audit log is a FIFO (see [`super::Relay`]) shared by everything
//! that runs there: gitward's own tools (git-shim's `git_refused`) and the agent. A relay that
//! copies bytes as they come lets the agent write an unterminated prefix (`{"note":"`) that is
//! glued to the next real event, so that event stops being a JSON line and a line-by-line
//! reader loses it (red-team pass 5, R5-5).
//!
//! # Invariants
//!
//! - Only complete lines are written to the log, each with one write; every written line is
//!   either one JSON object exactly as it arrived, or an `audit_line_rejected` event made by
//!   the relay (the rejected bytes escaped, with their length). Nothing else reaches the log.
//! - A line that is not one JSON object is not dropped (only an empty one, which carries
//!   nothing): it is logged as rejected. If a suffix
//!   of it that starts at a `{` is one complete JSON object, the earliest such suffix is
//!   logged as it is, after the rejected prefix.
//! - Bounded: bytes waiting for their newline never exceed [`MAX_LINE`] + one read; beyond
//!   that, all but the last [`PIPE_BUF`] bytes are logged as rejected and the rest waits.
//! - A partial line left when the relay stops is logged as rejected, never glued to anything.
//!
//! # Why an agent-chosen prefix cannot make a real event disappear
//!
//! A gitward tool writes each event as one `write(2)` of `E\n`, where `E` is one JSON object
//! that starts with `{"` and a letter (`{"time":…`) and holds no newline (serde escapes it).
//! A FIFO write of at most `PIPE_BUF` bytes is atomic, so the agent's bytes can come before or
//! after `E\n`, never inside it. The line that holds the event is therefore `P E` for some
//! agent-chosen `P` without a newline. Take any suffix `S` of `P` that starts at a `{`, and
//! the state of a JSON parser after reading `S`:
//! - at top level after a complete value: `E` is a second value, so `S E` is not one object;
//! - inside a string: `E`'s `{` is string content, its first `"` closes the string, and the
//!   letter after it can follow no string in JSON (after `\` or inside `\uXXXX`, `{` itself is
//!   already invalid);
//! - inside a number or a literal (`tru`): `{` cannot continue it;
//! - inside an object or array (depth ≥ 1): where a value may come, `E` is read as one
//!   complete value (JSON values are self-delimiting) and the line ends with the container
//!   still open; where a key, `:` or `,` is expected, `{` is invalid.
//!
//! (At top level before any value, `S` would be empty or blank, but it starts with `{`.) So no
//! suffix of `P` that starts at a `{` runs with `E` to one complete object, while `E` alone
//! is one: the earliest `{` whose suffix parses is `E`'s own, and `E` is logged as written.
//! `P` (if not empty) is logged as rejected. An event longer than `PIPE_BUF` is not atomic on
//! a FIFO: the agent may interleave bytes inside it (documented in docs/sandbox-plan.md).

/// A line waiting for its newline is cut beyond this many bytes (1 MiB).
pub const MAX_LINE: usize = 1 << 20;
/// The size up to which a FIFO write is atomic (POSIX minimum 512; Linux 4096).
pub const PIPE_BUF: usize = 4096;
/// At most this many bytes of a rejected line are quoted in its event.
pub const QUOTED: usize = 1024;

/// Splits the relayed bytes into lines and decides what reaches the log.
#[derive(Debug)]
pub struct LineFilter {
    pending: Vec<u8>,
    session: Option<String>,
}

impl LineFilter {
    /// A filter whose `audit_line_rejected` events name `session`.
    pub fn new(session: Option<String>) -> Self {
        LineFilter {
            pending: Vec::new(),
            session,
        }
    }

    /// Take `bytes` as they came from the FIFO; returns the lines to append to the log (each
    /// with its newline), in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(nl) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let line = self.pending[start..start + nl].to_vec();
            self.line(&line, &mut out);
            start += nl + 1;
        }
        self.pending.drain(..start);
        if self.pending.len() > MAX_LINE {
            let cut = self.pending.len() - PIPE_BUF;
            let head: Vec<u8> = self.pending.drain(..cut).collect();
            out.push(self.rejected(&head, "longer than the line bound, no newline"));
        }
        out
    }

    /// The writers are gone: a partial line left is logged as rejected.
    pub fn finish(&mut self) -> Vec<Vec<u8>> {
        let rest = std::mem::take(&mut self.pending);
        if rest.is_empty() {
            Vec::new()
        } else {
            vec![self.rejected(&rest, "no newline when the sandbox ended")]
        }
    }

    fn line(&self, line: &[u8], out: &mut Vec<Vec<u8>>) {
        if line.is_empty() {
            return;
        }
        if one_object(line) {
            out.push([line, b"\n"].concat());
            return;
        }
        let start = line
            .iter()
            .enumerate()
            .skip(1)
            .filter(|&(_, &b)| b == b'{')
            .map(|(i, _)| i)
            .find(|&i| one_object(&line[i..]));
        match start {
            Some(i) => {
                out.push(self.rejected(&line[..i], "not a JSON object; glued to the next line"));
                out.push([&line[i..], b"\n"].concat());
            }
            None => out.push(self.rejected(line, "not a JSON object")),
        }
    }

    fn rejected(&self, bytes: &[u8], why: &str) -> Vec<u8> {
        let quoted = &bytes[..bytes.len().min(QUOTED)];
        let e = crate::events::Event::new(
            crate::events::Tool::AgentShell,
            crate::events::EventKind::AuditLineRejected,
            format!("audit log: bytes written from inside the sandbox rejected ({why})"),
        )
        .session(self.session.as_deref())
        .with("len", bytes.len())
        .with("text", escape(quoted))
        .with("truncated", quoted.len() < bytes.len());
        e.to_line().into_bytes()
    }
}

/// Whether `line` is exactly one JSON object (blanks around it allowed, as serde reads it).
fn one_object(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line).is_ok()
}

/// `bytes` as text: valid UTF-8 as it is, every other byte as `\xNN`.
fn escape(mut bytes: &[u8]) -> String {
    let mut s = String::new();
    loop {
        match std::str::from_utf8(bytes) {
            Ok(t) => {
                s.push_str(t);
                return s;
            }
            Err(e) => {
                let (ok, bad) = bytes.split_at(e.valid_up_to());
                s.push_str(std::str::from_utf8(ok).unwrap_or_default());
                let n = e.error_len().unwrap_or(bad.len()).max(1);
                for b in &bad[..n] {
                    s.push_str(&format!("\\x{b:02x}"));
                }
                bytes = &bad[n..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn event() -> Vec<u8> {
        crate::events::Event::new(
            crate::events::Tool::GitShim,
            crate::events::EventKind::GitRefused,
            "refused",
        )
        .with("args", vec!["config", "core.fsmonitor", "touch /tmp/x"])
        .to_line()
        .into_bytes()
    }

    fn parse(lines: &[Vec<u8>]) -> Vec<Value> {
        lines
            .iter()
            .map(|l| {
                assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
                assert_eq!(l.last(), Some(&b'\n'));
                serde_json::from_slice(l).expect("every written line is JSON")
            })
            .collect()
    }

    fn names(v: &[Value]) -> Vec<&str> {
        v.iter()
            .map(|e| e["event"].as_str().unwrap_or("-"))
            .collect()
    }

    #[test]
    fn an_unterminated_prefix_does_not_swallow_the_next_event() {
        let mut f = LineFilter::new(Some("s1".into()));
        let e = event();
        let mut out = f.push(br#"{"note":""#);
        assert!(out.is_empty());
        out.extend(f.push(&e));
        let v = parse(&out);
        assert_eq!(names(&v), ["audit_line_rejected", "git_refused"]);
        assert_eq!(v[0]["len"], 9);
        assert_eq!(v[0]["text"], r#"{"note":""#);
        assert_eq!(v[0]["session"], "s1");
        // The event is logged byte for byte.
        assert_eq!(out[1], e);
    }

    #[test]
    fn prefixes_meant_to_absorb_the_event_do_not() {
        // Each leaves a parser in a different state: in a string, after an escape, in a
        // number, in a literal, expecting a value at depth 1 and 2, expecting a key or `:`,
        // after a complete value, and prefixes full of `{`.
        let prefixes: &[&[u8]] = &[
            br#"{"note":""#,
            br#"{"note":"\"#,
            br#"{"note":"\u00"#,
            br#"{"n":12"#,
            br#"{"n":tru"#,
            br#"{"n":"#,
            br#"{"n":[{"m":"#,
            br#"{"n":["#,
            br#"{"#,
            br#"{"n""#,
            br#"{"n":1,"#,
            br#"{"a":1}"#,
            br#"{{{{{{{{{"#,
            br#"x{"a":{"b":"#,
            b"{\"a\":\"\xff\xfe",
        ];
        let e = event();
        for p in prefixes {
            let mut f = LineFilter::new(None);
            let mut out = f.push(p);
            out.extend(f.push(&e));
            let v = parse(&out);
            assert_eq!(names(&v), ["audit_line_rejected", "git_refused"], "{p:?}");
            assert_eq!(v[0]["len"], p.len());
            assert_eq!(out[1], e, "{p:?}");
        }
    }

    #[test]
    fn complete_lines_pass_as_they_are_and_others_are_rejected_escaped() {
        let mut f = LineFilter::new(None);
        let mut input = event();
        input.extend_from_slice(b"plain words\n");
        input.extend_from_slice(b"[1,2]\n\n");
        input.extend_from_slice(b"\xff{\"q\"\n");
        input.extend_from_slice(br#"{"agent":"may add lines"}"#);
        input.push(b'\n');
        // Split at every byte boundary: the result must not depend on how reads cut it.
        let whole = f.push(&input);
        for cut in 0..input.len() {
            let mut g = LineFilter::new(None);
            let mut out = g.push(&input[..cut]);
            out.extend(g.push(&input[cut..]));
            assert_eq!(out.len(), whole.len());
            assert_eq!(names(&parse(&out)), names(&parse(&whole)), "cut at {cut}");
        }
        let v = parse(&whole);
        assert_eq!(
            names(&v),
            [
                "git_refused",
                "audit_line_rejected",
                "audit_line_rejected",
                "audit_line_rejected",
                "-"
            ]
        );
        assert_eq!(v[1]["text"], "plain words");
        assert_eq!(v[2]["text"], "[1,2]");
        assert_eq!(v[3]["text"], "\\xff{\"q\"");
        assert_eq!(v[4]["agent"], "may add lines");
        assert_eq!(v.len(), 5);
    }

    #[test]
    fn a_partial_line_at_the_end_is_rejected_not_kept_for_later() {
        let mut f = LineFilter::new(None);
        assert!(f.push(br#"{"event":"git_refused""#).is_empty());
        let v = parse(&f.finish());
        assert_eq!(names(&v), ["audit_line_rejected"]);
        assert!(f.finish().is_empty());
    }

    #[test]
    fn a_long_line_is_cut_and_the_event_after_it_survives() {
        let mut f = LineFilter::new(None);
        let junk = vec![b'{'; MAX_LINE + 10];
        let mut out = f.push(&junk);
        assert_eq!(out.len(), 1, "cut once the bound is passed");
        assert!(f.pending.len() <= PIPE_BUF);
        out.extend(f.push(&event()));
        let v = parse(&out);
        assert_eq!(
            names(&v),
            ["audit_line_rejected", "audit_line_rejected", "git_refused"]
        );
        assert_eq!(v[0]["len"], MAX_LINE + 10 - PIPE_BUF);
        assert_eq!(v[0]["truncated"], true);
        assert_eq!(v[0]["text"].as_str().unwrap().len(), QUOTED);
    }
}
