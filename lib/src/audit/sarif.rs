//! SARIF 2.1.0 output (OASIS, `sarif-schema-2.1.0.json`) shaped for GitHub code scanning:
//! one run, the rules table as the driver's `rules` (each with `security-severity` and
//! markdown help), one result per finding with a location relative to the audited path
//! (`uriBaseId`), `region.startLine` when the line is known and a `partialFingerprints` entry
//! that is stable across runs and checkouts ([`baseline::fingerprint`]). Read errors are
//! `toolExecutionNotifications` of the invocation, not alerts. Validated against the
//! published schema in `bins/wt-check/tests/sarif.rs`.

use super::{baseline, rules, Finding, Report};
use crate::catalogue::Severity;
use serde_json::{json, Value};
use std::path::Path;

/// The schema URI written into `$schema`.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// Percent-encode what RFC 3986 does not allow in a path.
fn encode_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::new();
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// `file://` URI of an absolute path, percent-encoding what RFC 3986 does not allow in a path.
pub fn file_uri(p: &Path) -> String {
    format!("file://{}", encode_path(p))
}

/// The project's home, from the workspace's `repository` (one place: `Cargo.toml`), which is
/// set at publication. While it is unset (`CARGO_PKG_REPOSITORY` is empty) no URI is written,
/// and so is a placeholder (an `.invalid` host, RFC 2606): a link that cannot resolve is worse
/// than none. Every `informationUri` and `helpUri` follows it.
pub fn home() -> Option<&'static str> {
    home_of(env!("CARGO_PKG_REPOSITORY"))
}

fn home_of(repository: &str) -> Option<&str> {
    let repo = repository.trim_end_matches('/');
    let host = repo.split("://").nth(1)?.split('/').next()?;
    (!host.is_empty() && !host.ends_with(".invalid")).then_some(repo)
}

/// Where a rule is documented (the rules table of `docs/wt-check.md`), if the home is known.
pub fn help_uri(_id: &str) -> Option<String> {
    home()
        .map(|h| format!("{h}/blob/main/docs/wt-check.md#rules-gitwardauditrulesrules-stable-ids"))
}

/// GitHub code scanning's `security-severity` (CVSS-like: 7.0-8.9 high, 4.0-6.9 medium,
/// 0.1-3.9 low): error, something in the agent's reach names a program git runs, is high;
/// warning, one more step is needed, is medium; note, nothing runs, is low.
pub fn security_severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "8.0",
        Severity::Warning => "5.0",
        Severity::Note => "2.0",
    }
}

/// The `uriBaseId` of the `i`-th audited path: `%SRCROOT%` for the first, which code
/// scanning resolves against the checkout when the audit ran on the repository's root.
fn base_id(i: usize) -> String {
    if i == 0 {
        "%SRCROOT%".into()
    } else {
        format!("AUDITED{i}")
    }
}

/// The location of a path: relative to the audited path it lies under, with that path's
/// `uriBaseId`; an absolute `file://` URI when it lies under none (the repository above an
/// audited folder) or is the audited path itself.
fn location(p: &Path, line: Option<u64>, roots: &[std::path::PathBuf]) -> Value {
    let artifact = match baseline::relative(p, roots) {
        Some((i, rel)) if !rel.as_os_str().is_empty() => {
            json!({ "uri": encode_path(rel), "uriBaseId": base_id(i) })
        }
        _ => json!({ "uri": file_uri(p) }),
    };
    let mut phys = json!({ "artifactLocation": artifact });
    if let Some(l) = line.filter(|&l| l > 0) {
        phys["region"] = json!({ "startLine": l });
    }
    json!({ "physicalLocation": phys })
}

/// The alert's text: the rule's one-sentence summary first (code scanning takes the first
/// sentence as the title), then the finding's own message with the audited paths made
/// relative.
fn message(rule: &rules::Rule, f: &Finding, roots: &[std::path::PathBuf]) -> String {
    format!(
        "{} {}",
        rule.short,
        baseline::portable_message(&f.message, roots)
    )
}

/// The SARIF log for a report.
pub fn to_sarif(report: &Report) -> Value {
    let roots = &report.paths;
    let rules_json: Vec<Value> = rules::RULES
        .iter()
        .map(|r| {
            let uri = help_uri(r.id);
            let more = uri
                .as_deref()
                .map(|u| format!("\n\nSee [{} {}]({u}).", r.id, r.name))
                .unwrap_or_default();
            let mut v = json!({
                "id": r.id,
                "name": r.name,
                "shortDescription": { "text": r.short },
                "fullDescription": { "text": format!("{} {}", r.short, r.help) },
                "help": {
                    "text": r.help,
                    "markdown": format!("**{}**\n\n{}{more}", r.short, r.help),
                },
                "defaultConfiguration": { "level": level(r.level) },
                "properties": {
                    "tags": ["security", "git"],
                    "research": r.research,
                    "security-severity": security_severity(r.level),
                    "precision": "high",
                },
            });
            if let Some(u) = uri {
                v["helpUri"] = json!(u);
            }
            v
        })
        .collect();
    let rule_of = |id: &str| {
        let idx = rules::RULES.iter().position(|r| r.id == id).unwrap_or(0);
        (idx, &rules::RULES[idx])
    };
    let line_of = |f: &Finding| f.details.get("line").and_then(Value::as_u64);
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for f in &report.findings {
        let (idx, rule) = rule_of(f.rule);
        if f.rule == rules::INCOMPLETE.id {
            // A read error is about the tool's run, not an alert in the code.
            notifications.push(json!({
                "level": "error",
                "message": { "text": format!("Could not read: {}", f.message) },
                "locations": [location(&f.path, None, roots)],
                "descriptor": { "id": f.rule, "index": idx },
            }));
            continue;
        }
        let mut props = f.details.clone();
        if let Some(repo) = &f.repo {
            props.insert("repository".into(), json!(repo));
        }
        props.insert(
            "security-severity".into(),
            json!(security_severity(f.level)),
        );
        results.push(json!({
            "ruleId": f.rule,
            "ruleIndex": idx,
            "level": level(f.level),
            "message": { "text": message(rule, f, roots) },
            "locations": [location(&f.path, line_of(f), roots)],
            "partialFingerprints": { (baseline::FINGERPRINT_KEY): baseline::fingerprint(f, roots) },
            "properties": props,
        }));
    }
    for f in &report.skipped {
        // Not audited, by choice: said, never silent.
        notifications.push(json!({
            "level": "note",
            "message": { "text": format!("Not walked: {}", f.why) },
            "locations": [location(&f.path, None, roots)],
        }));
    }
    let bases: serde_json::Map<String, Value> = roots
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                base_id(i),
                json!({ "uri": format!("{}/", file_uri(r).trim_end_matches('/')) }),
            )
        })
        .collect();
    let mut driver = json!({
        "name": "wt-check",
        "organization": "gitward",
        "semanticVersion": env!("CARGO_PKG_VERSION"),
        "rules": rules_json,
    });
    if let Some(h) = home() {
        driver["informationUri"] = json!(h);
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": driver },
            "originalUriBaseIds": bases,
            "invocations": [{
                "executionSuccessful": !report.incomplete(),
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_only_from_a_real_repository_url() {
        assert_eq!(home_of(""), None);
        assert_eq!(home_of("https://example.invalid/gitward"), None);
        assert_eq!(home_of("not a url"), None);
        assert_eq!(home_of("https:///x"), None);
        assert_eq!(
            home_of("https://github.com/o/gitward/"),
            Some("https://github.com/o/gitward")
        );
        // This build: the workspace sets no `repository` until publication, so the SARIF
        // carries no informationUri and no helpUri.
        assert_eq!(home(), home_of(env!("CARGO_PKG_REPOSITORY")));
        if env!("CARGO_PKG_REPOSITORY").is_empty() {
            assert_eq!(home(), None);
            assert_eq!(help_uri("GW001"), None);
        }
    }

    #[test]
    fn uris_are_encoded() {
        assert_eq!(
            file_uri(Path::new("/a b/c%d/é")),
            "file:///a%20b/c%25d/%C3%A9"
        );
    }
}
