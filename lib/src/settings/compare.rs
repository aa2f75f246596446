//! Comparing two states of a guarded file under its rule: which changes widen, which narrow.

use super::parse::parse;
use super::rules::{FileRule, KeyKind, KeyRule, RootCheck, Unlisted};
use super::Format;
use crate::held::Content;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// The verdict on one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Something the agent may do grows: held for the owner.
    Widens,
    /// Only narrowing: accepted.
    Narrows,
    /// Nothing that matters changed: accepted.
    Neutral,
    /// The new content cannot be parsed (or is a link / not a file): held, fail closed.
    Unparseable,
}

impl Verdict {
    /// Must the write wait for the owner?
    pub fn is_held(self) -> bool {
        matches!(self, Verdict::Widens | Verdict::Unparseable)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Widens => "widens",
            Verdict::Narrows => "narrows",
            Verdict::Neutral => "neutral",
            Verdict::Unparseable => "unparseable",
        }
    }
}

/// The effect of one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Widens,
    Narrows,
    Neutral,
}

/// One thing that changed, and what it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The concrete key (`permissions/allow`), or `-` for the file as a whole.
    pub key: String,
    /// The rule's key pattern that judged it, or `unlisted`.
    pub pattern: String,
    pub effect: Effect,
    /// Readable: `added "Bash(*)"`.
    pub detail: String,
}

impl Finding {
    /// `key: detail` — one line.
    pub fn line(&self) -> String {
        format!("{}: {}", self.key, self.detail)
    }
}

/// The outcome of judging before → after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// Reasons the write can never be approved as is.
    pub blocked: Vec<String>,
}

/// Judge a change of a guarded file from `before` to `after` (the caller has checked they
/// differ). `base` is the watched root (for relative worktree roots).
pub fn judge(
    rule: &FileRule,
    before: &Content,
    after: &Content,
    roots: Option<&RootCheck>,
    base: &Path,
) -> Judgement {
    let whole = |effect, detail: String| Finding {
        key: "-".into(),
        pattern: "-".into(),
        effect,
        detail,
    };
    match after {
        Content::Link { at, target } => {
            return Judgement {
                verdict: Verdict::Unparseable,
                findings: vec![whole(
                    Effect::Widens,
                    format!(
                        "{at} is now a link to {}: what it points at is not vouched for",
                        String::from_utf8_lossy(target)
                    ),
                )],
                blocked: vec![],
            }
        }
        Content::Other { at, what } => {
            return Judgement {
                verdict: Verdict::Unparseable,
                findings: vec![whole(Effect::Widens, format!("{at} is now {what}"))],
                blocked: vec![],
            }
        }
        _ => {}
    }
    if rule.format == Format::Opaque {
        let (verdict, effect, detail) = match (before, after) {
            (_, Content::Absent) => (Verdict::Narrows, Effect::Narrows, "removed".to_string()),
            (Content::Absent, _) => (Verdict::Widens, Effect::Widens, "created".to_string()),
            _ => (Verdict::Widens, Effect::Widens, "changed".to_string()),
        };
        return Judgement {
            verdict,
            findings: vec![whole(
                effect,
                format!("{detail} (any change to this file widens)"),
            )],
            blocked: vec![],
        };
    }
    let new = match after {
        Content::File { bytes, .. } => match parse(rule.format, bytes) {
            Ok(v) => v.unwrap_or(Value::Null),
            Err(e) => {
                return Judgement {
                    verdict: Verdict::Unparseable,
                    findings: vec![whole(Effect::Widens, format!("cannot be parsed: {e}"))],
                    blocked: vec![],
                }
            }
        },
        _ => Value::Null,
    };
    let new = if rule.dotted_keys {
        match dotted(new, &rule.keys) {
            Ok(v) => v,
            Err(e) => {
                return Judgement {
                    verdict: Verdict::Unparseable,
                    findings: vec![whole(
                        Effect::Widens,
                        format!("cannot be read as its tool reads it: {e}"),
                    )],
                    blocked: vec![],
                }
            }
        }
    } else {
        new
    };
    let mut findings = Vec::new();
    let old = match before {
        Content::File { bytes, .. } => {
            match parse(rule.format, bytes) {
                Ok(v) => v.unwrap_or(Value::Null),
                Err(e) => {
                    findings.push(whole(
                    Effect::Neutral,
                    format!("the approved state could not be parsed ({e}); compared with an empty file"),
                ));
                    Value::Null
                }
            }
        }
        _ => Value::Null,
    };
    let old = if rule.dotted_keys {
        dotted(old, &rule.keys).unwrap_or(Value::Null)
    } else {
        old
    };
    if !new.is_object() && !new.is_null() {
        findings.push(whole(Effect::Widens, "top level is not an object".into()));
    }
    let mut blocked = Vec::new();
    // Rules: every concrete key each pattern names in either state.
    for kr in &rule.keys {
        let mut paths = BTreeSet::new();
        expand(Some(&old), kr.segs(), &mut Vec::new(), &mut paths);
        expand(Some(&new), kr.segs(), &mut Vec::new(), &mut paths);
        for p in paths {
            let a = get(&old, &p);
            let b = get(&new, &p);
            if a == b {
                continue;
            }
            let key = p.join("/");
            judge_key(
                &kr.kind,
                &key,
                &kr.pattern,
                a,
                b,
                roots,
                base,
                &mut findings,
                &mut blocked,
            );
        }
    }
    // Unlisted: leaf differences no pattern covers.
    let mut diffs = Vec::new();
    leaf_diffs(&mut Vec::new(), Some(&old), Some(&new), &mut diffs);
    for (p, a, b) in diffs {
        let covered = rule.keys.iter().any(|k| k.matches_prefix(&p).is_some());
        if covered {
            continue;
        }
        let key = if p.is_empty() {
            "-".to_string()
        } else {
            p.join("/")
        };
        let effect = match rule.unlisted {
            Unlisted::Widens => Effect::Widens,
            Unlisted::Neutral => Effect::Neutral,
        };
        let detail = match (a, b) {
            (None, Some(b)) => format!("set to {}", show(b)),
            (Some(a), None) => format!("removed (was {})", show(a)),
            (Some(a), Some(b)) => format!("{} -> {}", show(a), show(b)),
            (None, None) => continue,
        };
        let detail = match rule.unlisted {
            Unlisted::Widens => format!("{detail} (a key no rule names: fail closed)"),
            Unlisted::Neutral => detail,
        };
        findings.push(Finding {
            key,
            pattern: "unlisted".into(),
            effect,
            detail,
        });
    }
    let verdict = if findings.iter().any(|f| f.effect == Effect::Widens) {
        Verdict::Widens
    } else if findings.iter().any(|f| f.effect == Effect::Narrows) {
        Verdict::Narrows
    } else {
        Verdict::Neutral
    };
    Judgement {
        verdict,
        findings,
        blocked,
    }
}

#[allow(clippy::too_many_arguments)]
fn judge_key(
    kind: &KeyKind,
    key: &str,
    pattern: &str,
    a: Option<&Value>,
    b: Option<&Value>,
    roots: Option<&RootCheck>,
    base: &Path,
    out: &mut Vec<Finding>,
    blocked: &mut Vec<String>,
) {
    let mut push = |effect, detail: String| {
        out.push(Finding {
            key: key.to_owned(),
            pattern: pattern.to_owned(),
            effect,
            detail,
        })
    };
    let empty = Vec::new();
    let list = |v: Option<&Value>| -> Option<Vec<Value>> {
        match v {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => None,
        }
    };
    match kind {
        KeyKind::Neutral => push(Effect::Neutral, change_text(a, b)),
        KeyKind::AnyChange => push(Effect::Widens, change_text(a, b)),
        KeyKind::ListGrows | KeyKind::ListShrinks | KeyKind::RootsGrow => {
            let Some(new) = list(b) else {
                push(
                    Effect::Widens,
                    format!("not a list: {}", show(b.unwrap_or(&Value::Null))),
                );
                return;
            };
            let old = list(a).unwrap_or_else(|| empty.clone());
            let added: Vec<&Value> = new.iter().filter(|x| !old.contains(x)).collect();
            let removed: Vec<&Value> = old.iter().filter(|x| !new.contains(x)).collect();
            let grows_widens = !matches!(kind, KeyKind::ListShrinks);
            for x in &added {
                let effect = if grows_widens {
                    Effect::Widens
                } else {
                    Effect::Narrows
                };
                push(effect, format!("added {}", show(x)));
                if matches!(kind, KeyKind::RootsGrow) {
                    match (x.as_str(), roots) {
                        (Some(r), Some(rc)) => {
                            if let Err(e) = rc.validate(r, base) {
                                blocked.push(format!("{key}: {e}"));
                            }
                        }
                        (None, _) => blocked.push(format!("{key}: {} is not a path", show(x))),
                        (Some(_), None) => {}
                    }
                }
            }
            for x in &removed {
                let effect = if grows_widens {
                    Effect::Narrows
                } else {
                    Effect::Widens
                };
                push(effect, format!("removed {}", show(x)));
            }
            if added.is_empty() && removed.is_empty() {
                push(Effect::Neutral, "reordered".into());
            }
        }
        KeyKind::MapEntries => {
            let obj = |v: Option<&Value>| -> Option<serde_json::Map<String, Value>> {
                match v {
                    None | Some(Value::Null) => Some(serde_json::Map::new()),
                    Some(Value::Object(m)) => Some(m.clone()),
                    Some(_) => None,
                }
            };
            let Some(new) = obj(b) else {
                push(
                    Effect::Widens,
                    format!("not a map: {}", show(b.unwrap_or(&Value::Null))),
                );
                return;
            };
            let old = obj(a).unwrap_or_default();
            for (k, v) in &new {
                match old.get(k) {
                    None => push(Effect::Widens, format!("entry {k:?} added: {}", show(v))),
                    Some(o) if o != v => push(
                        Effect::Widens,
                        format!(
                            "entry {k:?} changed (a new approval): {} -> {}",
                            show(o),
                            show(v)
                        ),
                    ),
                    _ => {}
                }
            }
            for k in old.keys().filter(|k| !new.contains_key(*k)) {
                push(Effect::Narrows, format!("entry {k:?} removed"));
            }
        }
        KeyKind::Ladder(tiers) => {
            let rank = |v: Option<&Value>| -> usize {
                let v = v.unwrap_or(&Value::Null);
                tiers
                    .iter()
                    .position(|t| t.contains(v))
                    .unwrap_or(tiers.len())
            };
            let (ra, rb) = (rank(a), rank(b));
            let effect = if rb > ra || (rb == ra && rb == tiers.len()) {
                Effect::Widens
            } else if rb < ra {
                Effect::Narrows
            } else {
                Effect::Neutral
            };
            push(effect, change_text(a, b));
        }
    }
}

fn change_text(a: Option<&Value>, b: Option<&Value>) -> String {
    match (a, b) {
        (None, Some(b)) => format!("set to {}", show(b)),
        (Some(a), None) => format!("removed (was {})", show(a)),
        (Some(a), Some(b)) => format!("{} -> {}", show(a), show(b)),
        (None, None) => "unchanged".into(),
    }
}

/// Compact JSON, cut at 200 characters.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 {
        let cut: String = s.chars().take(200).collect();
        format!("{cut}…")
    } else {
        s
    }
}

/// The dotted form of a settings document whose tool reads nested objects as dotted keys
/// (VS Code's `ConfigurationModelParser`: an object value with no registered setting of its
/// own is walked as `<key>.<child>`, and `toValuesTree` nests dotted keys again, so
/// `{"chat": {"tools": {"autoApprove": true}}}` and `{"chat.tools.autoApprove": true}` are one
/// setting). An object is walked unless a key pattern names it (then it is the setting's value,
/// e.g. `terminal.integrated.env.linux`), or it is empty, or it is a language override
/// (`[python]`). Two spellings of one key are an error: which one the tool keeps depends on
/// their order, so the write is not vouched for.
pub fn dotted(v: Value, keys: &[KeyRule]) -> Result<Value, String> {
    fn walk(
        map: Map<String, Value>,
        prefix: &str,
        keys: &[KeyRule],
        out: &mut Map<String, Value>,
    ) -> Result<(), String> {
        for (k, v) in map {
            let full = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            let chars: Vec<char> = full.chars().collect();
            let named = keys.iter().any(|kr| {
                kr.segs()
                    .first()
                    .is_some_and(|s| super::glob::seg_match(s, &chars))
            });
            let language = prefix.is_empty() && k.starts_with('[') && k.ends_with(']');
            match v {
                Value::Object(m) if !m.is_empty() && !named && !language => {
                    walk(m, &full, keys, out)?;
                }
                v => {
                    if out.insert(full.clone(), v).is_some() {
                        return Err(format!(
                            "{full} is set twice (as a dotted key and as nested objects)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            walk(m, "", keys, &mut out)?;
            Ok(Value::Object(out))
        }
        v => Ok(v),
    }
}

fn get<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

/// Every concrete key path the pattern names in `v`. Literal segments are kept even where the
/// key is absent, so absent → present is seen.
fn expand(
    v: Option<&Value>,
    segs: &[Vec<char>],
    prefix: &mut Vec<String>,
    out: &mut BTreeSet<Vec<String>>,
) {
    let Some((seg, rest)) = segs.split_first() else {
        out.insert(prefix.clone());
        return;
    };
    if !seg.iter().any(|c| *c == '*' || *c == '?') {
        let k: String = seg.iter().collect();
        let next = v.and_then(|v| v.as_object()).and_then(|m| m.get(&k));
        prefix.push(k);
        expand(next, rest, prefix, out);
        prefix.pop();
        return;
    }
    if let Some(Value::Object(m)) = v {
        for (k, child) in m {
            if super::glob::seg_match(seg, &k.chars().collect::<Vec<_>>()) {
                prefix.push(k.clone());
                expand(Some(child), rest, prefix, out);
                prefix.pop();
            }
        }
    }
}

type Diff<'a> = (Vec<String>, Option<&'a Value>, Option<&'a Value>);

/// Minimal differing paths: objects are recursed into (a missing side counts as absent keys),
/// everything else is compared whole.
fn leaf_diffs<'a>(
    path: &mut Vec<String>,
    a: Option<&'a Value>,
    b: Option<&'a Value>,
    out: &mut Vec<Diff<'a>>,
) {
    let a = a.filter(|v| !v.is_null() || !path.is_empty());
    let b = b.filter(|v| !v.is_null() || !path.is_empty());
    if a == b {
        return;
    }
    let ao = a.and_then(Value::as_object);
    let bo = b.and_then(Value::as_object);
    let a_ok = a.is_none() || ao.is_some();
    let b_ok = b.is_none() || bo.is_some();
    if a_ok && b_ok {
        let mut keys: BTreeSet<&String> = BTreeSet::new();
        keys.extend(ao.into_iter().flat_map(|m| m.keys()));
        keys.extend(bo.into_iter().flat_map(|m| m.keys()));
        for k in keys {
            path.push(k.clone());
            leaf_diffs(
                path,
                ao.and_then(|m| m.get(k)),
                bo.and_then(|m| m.get(k)),
                out,
            );
            path.pop();
        }
        return;
    }
    out.push((path.clone(), a, b));
}

/// A readable line diff (`-`/`+` lines with two lines of context), for events and `held show`.
pub fn text_diff(before: &Content, after: &Content) -> String {
    let text = |c: &Content| -> String {
        match c {
            Content::File { bytes, .. } => match std::str::from_utf8(bytes) {
                Ok(t) => t.to_owned(),
                Err(_) => format!("<{} bytes, not UTF-8>\n", bytes.len()),
            },
            other => format!("<{}>\n", other.describe()),
        }
    };
    let (a, b) = (text(before), text(after));
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    const MAX: usize = 4000;
    if a.len() * b.len() > MAX * MAX / 4 {
        return format!("<{} lines replaced by {} lines>", a.len(), b.len());
    }
    // LCS table.
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || t[i + 1][j] >= t[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near = |k: usize| -> bool {
        let lo = k.saturating_sub(2);
        let hi = (k + 2).min(ops.len() - 1);
        ops[lo..=hi].iter().any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, l)) in ops.iter().enumerate() {
        if near(k) {
            if skipped {
                out.push_str("  …\n");
                skipped = false;
            }
            out.push(*c);
            out.push(' ');
            out.push_str(l);
            out.push('\n');
        } else {
            skipped = true;
        }
    }
    out
}
