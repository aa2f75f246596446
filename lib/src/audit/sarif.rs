//! SARIF 2.1.0 output (OASIS, `sarif-schema-2.1.0.json`): one run, the rules table as the
//! driver's `rules`, one result per finding with a `file://` location. Validated against the
//! published schema in `bins/wt-check/tests/sarif.rs`.

use super::{rules, Report};
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

/// `file://` URI of an absolute path, percent-encoding what RFC 3986 does not allow in a path.
pub fn file_uri(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file://");
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// The SARIF log for a report.
pub fn to_sarif(report: &Report) -> Value {
    let rules_json: Vec<Value> = rules::RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": r.name,
                "shortDescription": { "text": r.short },
                "fullDescription": { "text": format!("{} {}", r.short, r.help) },
                "help": { "text": r.help },
                "defaultConfiguration": { "level": level(r.level) },
                "properties": { "tags": ["security", "git"], "research": r.research },
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let idx = rules::RULES
                .iter()
                .position(|r| r.id == f.rule)
                .unwrap_or(0);
            let mut props = f.details.clone();
            if let Some(repo) = &f.repo {
                props.insert("repository".into(), json!(repo));
            }
            json!({
                "ruleId": f.rule,
                "ruleIndex": idx,
                "level": level(f.level),
                "message": { "text": f.message },
                "locations": [{
                    "physicalLocation": { "artifactLocation": { "uri": file_uri(&f.path) } }
                }],
                "properties": props,
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "wt-check",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://example.invalid/gitward",
                "rules": rules_json,
            }},
            "invocations": [{ "executionSuccessful": !report.incomplete() }],
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_encoded() {
        assert_eq!(
            file_uri(Path::new("/a b/c%d/é")),
            "file:///a%20b/c%25d/%C3%A9"
        );
    }
}
