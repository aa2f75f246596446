//! Settings rules as data: which files are guarded, their format, and which changes widen.
//!
//! The shipped presets live in `presets.toml` (same schema as a policy's `[settings]` table,
//! documented in `docs/settings-watch.md`), so the presets, the policy's overrides and the
//! docs all read one format. A rule with the name of an existing rule overrides it field by
//! field (its `keys` are merged pattern by pattern); `enabled = false` turns a rule off.

use super::glob::{seg_match, FoldedPath, Glob};
use crate::policy::{Policy, PolicyError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How a guarded file is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Strict JSON; duplicate keys are refused.
    Json,
    /// JSON with `//` and `/* */` comments and trailing commas (VS Code, Gemini CLI).
    Jsonc,
    /// TOML (Codex, gitward).
    Toml,
    /// `KEY=VALUE` lines (dotenv); anything else is unparseable.
    Shell,
    /// Not parsed: any change to the bytes widens, removal narrows.
    Opaque,
}

/// What a change to a key that no pattern names does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unlisted {
    /// Fail closed: the key may run a program or widen a permission we do not know about.
    Widens,
    /// The file's unknown keys are presentation (VS Code's thousands of editor settings).
    Neutral,
}

/// Which change of a key widens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyKind {
    /// A list; an element that was not there before widens, a removed one narrows.
    ListGrows,
    /// A list of denials; a removed element widens, a new one narrows.
    ListShrinks,
    /// A map of approvals bound to content: an entry added or changed in any way widens, a
    /// removed one narrows.
    MapEntries,
    /// Any change widens (hooks sections, commands).
    AnyChange,
    /// Never matters.
    Neutral,
    /// A list of folders: grows widen, and each new one is validated like the policy's
    /// worktree roots (a root that fails is held with the reason and cannot be approved).
    RootsGrow,
    /// Tiers from narrowest to widest; `Null` stands for the key being absent; a value in no
    /// tier is wider than all.
    Ladder(Vec<Vec<Value>>),
}

/// One key pattern and its kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyRule {
    /// `/`-separated, `*` globbing within a segment; case-sensitive (keys are).
    pub pattern: String,
    pub kind: KeyKind,
    #[serde(skip)]
    segs: Vec<Vec<char>>,
}

impl KeyRule {
    pub fn new(pattern: &str, kind: KeyKind) -> Result<KeyRule, String> {
        if pattern.is_empty() || pattern.split('/').any(str::is_empty) {
            return Err(format!("key pattern {pattern:?} has an empty segment"));
        }
        Ok(KeyRule {
            pattern: pattern.to_owned(),
            kind,
            segs: pattern.split('/').map(|s| s.chars().collect()).collect(),
        })
    }

    /// Does the pattern match the first segments of `path` (i.e. `path` is at or below a key it
    /// names)? Returns how many segments it consumed.
    pub fn matches_prefix(&self, path: &[String]) -> Option<usize> {
        if path.len() < self.segs.len() {
            return None;
        }
        self.segs
            .iter()
            .zip(path)
            .all(|(p, s)| seg_match(p, &s.chars().collect::<Vec<_>>()))
            .then_some(self.segs.len())
    }

    pub(crate) fn segs(&self) -> &[Vec<char>] {
        &self.segs
    }
}

/// The rule for one kind of guarded file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileRule {
    /// Stable rule name (`claude-settings`), used in events and held entries.
    pub name: String,
    /// The preset it belongs to (`claude-code`), or `policy` for a rule the policy added.
    pub preset: String,
    #[serde(serialize_with = "ser_globs")]
    pub paths: Vec<Glob>,
    pub format: Format,
    pub unlisted: Unlisted,
    pub keys: Vec<KeyRule>,
    /// Why the file is guarded, with the incidents it answers.
    pub why: String,
    /// The consuming tool reads a nested object as dotted keys (VS Code:
    /// `{"chat": {"tools": {"autoApprove": true}}}` is `chat.tools.autoApprove`), so both
    /// states are brought to the dotted form before the keys are compared (see
    /// [`super::compare::dotted`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dotted_keys: bool,
    /// Keys whose string values are commands the consuming tool runs (a hook's `command`, an
    /// MCP server's `command`/`args`, an extension's program path). A work-tree file such a
    /// command names is guarded like the settings file itself ([`super::second_hop`]: the
    /// sixth red-team pass, R6-6).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<KeyRule>,
}

fn ser_globs<S: serde::Serializer>(g: &[Glob], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(g.iter().map(Glob::as_str))
}

impl FileRule {
    /// Does the relative path match one of the rule's globs (case-insensitively)?
    pub fn matches(&self, rel: &str) -> bool {
        self.paths.iter().any(|g| g.matches(rel))
    }

    /// Could a guarded file of this rule lie below the relative folder `dir`?
    pub fn may_contain(&self, dir: &str) -> bool {
        self.paths.iter().any(|g| g.may_contain(dir))
    }
}

/// Context to validate worktree roots a settings file adds (`roots-grow`).
#[derive(Debug, Clone, PartialEq)]
pub struct RootCheck {
    pub home: PathBuf,
    pub state_dir: PathBuf,
    pub policy_file: PathBuf,
    pub audit_log: Option<PathBuf>,
}

impl RootCheck {
    /// Validate one root (relative roots are taken from `base`, the watched root).
    pub fn validate(&self, root: &str, base: &Path) -> Result<(), String> {
        let p = match root.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None if root == "~" => self.home.clone(),
            None => PathBuf::from(root),
        };
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        };
        let own = crate::policy::OwnFolders {
            state_dir: &self.state_dir,
            policy_file: &self.policy_file,
            audit_log: self.audit_log.as_deref(),
        };
        crate::policy::validate_root(&p, &self.home, &own)
    }
}

/// The active rule set: presets (selected by the policy) plus the policy's own rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    pub files: Vec<FileRule>,
    /// Root validation for `roots-grow`; without it a new root is still widening but its
    /// validation is reported as not done.
    pub root_check: Option<RootCheck>,
}

/// Names of the shipped presets.
pub const PRESETS: &[&str] = &[
    "claude-code",
    "mcp",
    "vscode",
    "cursor",
    "codex",
    "gemini",
    "direnv",
    "devcontainer",
    "gitward",
    "opencode",
    "qwen",
    "continue",
    "zed",
    "crush",
    "aider",
    "kiro",
    "mise",
    "windsurf",
    "roo",
    "cline",
];

const PRESETS_TOML: &str = include_str!("presets.toml");

fn preset_rules() -> &'static [FileRule] {
    static P: OnceLock<Vec<FileRule>> = OnceLock::new();
    P.get_or_init(|| {
        let table: toml::Table =
            toml::from_str(PRESETS_TOML).expect("the shipped presets.toml parses (tested)");
        let raw: RawSection = table
            .try_into()
            .expect("the shipped presets.toml follows the schema (tested)");
        let mut out = Vec::new();
        for (i, r) in raw.rule.into_iter().enumerate() {
            out = merge_rule(out, r, i, Path::new("presets.toml"), "rule")
                .expect("the shipped presets are valid (tested)");
        }
        out
    })
}

/// The shipped rule guarding the repository-relative path `rel_path` (all presets enabled), if
/// any. Case-insensitive. Used by the commit scan to flag commits that touch settings files.
pub fn guarded_path(rel_path: &str) -> Option<&'static FileRule> {
    let path = FoldedPath::new(rel_path.trim_start_matches("./"));
    preset_rules()
        .iter()
        .find(|r| r.paths.iter().any(|g| g.matches_folded(&path)))
}

impl Rules {
    /// Every shipped preset, no root validation.
    pub fn presets() -> Rules {
        Rules {
            files: preset_rules().to_vec(),
            root_check: None,
        }
    }

    /// The rules a policy selects: its `[settings]` table (see docs/settings-watch.md).
    pub fn from_policy(policy: &Policy, home: &Path) -> Result<Rules, PolicyError> {
        let mut rules = Rules::from_table(&policy.settings, &policy.file)?;
        rules.root_check = Some(RootCheck {
            home: home.to_path_buf(),
            state_dir: policy.state_dir.clone(),
            policy_file: policy.file.clone(),
            audit_log: policy.audit_log.clone(),
        });
        Ok(rules)
    }

    /// Build from a `[settings]` table that came from `file` (errors name it).
    pub fn from_table(table: &toml::Table, file: &Path) -> Result<Rules, PolicyError> {
        let err = |key: String, rule: String| PolicyError {
            file: file.to_path_buf(),
            key,
            rule,
        };
        let raw: RawSection = table.clone().try_into().map_err(|e: toml::de::Error| {
            err(
                "settings".into(),
                format!(
                    "not a valid [settings] table: {}",
                    e.message().replace('\n', " ")
                ),
            )
        })?;
        let selected: Vec<String> = match &raw.presets {
            Some(p) => p.clone(),
            None => PRESETS.iter().map(|s| s.to_string()).collect(),
        };
        for (i, p) in selected.iter().enumerate() {
            if !PRESETS.contains(&p.as_str()) {
                return Err(err(
                    format!("settings.presets[{i}]"),
                    format!("unknown preset {p:?}; known: {}", PRESETS.join(", ")),
                ));
            }
        }
        let mut files: Vec<FileRule> = preset_rules()
            .iter()
            .filter(|r| selected.contains(&r.preset))
            .cloned()
            .collect();
        for (i, r) in raw.rule.into_iter().enumerate() {
            files = merge_rule(files, r, i, file, "settings.rule")?;
        }
        Ok(Rules {
            files,
            root_check: None,
        })
    }

    /// The rule guarding `rel` (relative to a watched root), if any.
    pub fn lookup(&self, rel: &str) -> Option<&FileRule> {
        self.files.iter().find(|r| r.matches(rel))
    }

    /// Could a guarded file lie below the relative folder `dir`?
    pub fn may_contain(&self, dir: &str) -> bool {
        self.files.iter().any(|r| r.may_contain(dir))
    }

    /// The deepest folder a guarded file can sit in (`None`: unbounded, some glob has `**`).
    pub fn max_depth(&self) -> Option<usize> {
        let mut m = 0;
        for r in &self.files {
            for g in &r.paths {
                m = m.max(g.max_depth()?);
            }
        }
        Some(m)
    }
}

/// The `[settings]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSection {
    /// Presets to enable (default: all).
    presets: Option<Vec<String>>,
    /// Extra or overriding rules.
    #[serde(default)]
    rule: Vec<RawRule>,
    /// Extra folders whose settings files are guarded (besides the repository); read by
    /// [`super::watch::WatchConfig`].
    #[serde(default)]
    #[allow(dead_code)]
    roots: Vec<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: String,
    preset: Option<String>,
    paths: Option<Vec<String>>,
    format: Option<Format>,
    unlisted: Option<Unlisted>,
    #[serde(default)]
    keys: toml::Table,
    why: Option<String>,
    enabled: Option<bool>,
    dotted_keys: Option<bool>,
    runs: Option<Vec<String>>,
}

fn merge_rule(
    mut files: Vec<FileRule>,
    r: RawRule,
    i: usize,
    file: &Path,
    prefix: &str,
) -> Result<Vec<FileRule>, PolicyError> {
    let err = |key: String, rule: String| PolicyError {
        file: file.to_path_buf(),
        key,
        rule,
    };
    let at = format!("{prefix}[{i}]");
    if r.name.is_empty()
        || !r
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(err(
            format!("{at}.name"),
            "rule names are non-empty and use a-z 0-9 -".into(),
        ));
    }
    let existing = files.iter().position(|f| f.name == r.name);
    if r.enabled == Some(false) {
        if let Some(pos) = existing {
            files.remove(pos);
        }
        return Ok(files);
    }
    let mut rule = match existing {
        Some(pos) => files.remove(pos),
        None => {
            let (Some(_), Some(format)) = (&r.paths, r.format) else {
                return Err(err(
                    at,
                    format!(
                        "new rule {:?} needs `paths` and `format` (json, jsonc, toml, shell, opaque)",
                        r.name
                    ),
                ));
            };
            FileRule {
                name: r.name.clone(),
                preset: r.preset.clone().unwrap_or_else(|| "policy".into()),
                paths: Vec::new(),
                format,
                unlisted: Unlisted::Widens,
                keys: Vec::new(),
                why: String::new(),
                dotted_keys: false,
                runs: Vec::new(),
            }
        }
    };
    if let Some(d) = r.dotted_keys {
        rule.dotted_keys = d;
    }
    if let Some(runs) = &r.runs {
        rule.runs = runs
            .iter()
            .enumerate()
            .map(|(j, k)| {
                KeyRule::new(k, KeyKind::AnyChange).map_err(|e| err(format!("{at}.runs[{j}]"), e))
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(paths) = &r.paths {
        if paths.is_empty() {
            return Err(err(format!("{at}.paths"), "needs at least one glob".into()));
        }
        rule.paths = paths
            .iter()
            .enumerate()
            .map(|(j, p)| Glob::new(p).map_err(|e| err(format!("{at}.paths[{j}]"), e)))
            .collect::<Result<_, _>>()?;
    }
    if let Some(f) = r.format {
        rule.format = f;
    }
    if let Some(u) = r.unlisted {
        rule.unlisted = u;
    }
    if let Some(w) = r.why {
        rule.why = w;
    }
    if let Some(p) = r.preset {
        rule.preset = p;
    }
    for (pattern, v) in &r.keys {
        let key = format!("{at}.keys.{pattern:?}");
        let kind = parse_kind(v).map_err(|e| err(key.clone(), e))?;
        let kr = KeyRule::new(pattern, kind).map_err(|e| err(key.clone(), e))?;
        match rule.keys.iter_mut().find(|k| k.pattern == *pattern) {
            Some(k) => *k = kr,
            None => rule.keys.push(kr),
        }
    }
    if rule.format == Format::Opaque && !rule.keys.is_empty() {
        return Err(err(
            format!("{at}.keys"),
            "an opaque file has no keys; any change to it widens".into(),
        ));
    }
    files.push(rule);
    Ok(files)
}

const KINDS: &str =
    "list-grows, list-shrinks, map-entries, any-change, neutral, roots-grow, or { ladder = [[...], ...] }";

fn parse_kind(v: &toml::Value) -> Result<KeyKind, String> {
    match v {
        toml::Value::String(s) => match s.as_str() {
            "list-grows" => Ok(KeyKind::ListGrows),
            "list-shrinks" => Ok(KeyKind::ListShrinks),
            "map-entries" => Ok(KeyKind::MapEntries),
            "any-change" => Ok(KeyKind::AnyChange),
            "neutral" => Ok(KeyKind::Neutral),
            "roots-grow" => Ok(KeyKind::RootsGrow),
            other => Err(format!("unknown kind {other:?}; expected {KINDS}")),
        },
        toml::Value::Table(t) => {
            let Some(toml::Value::Array(tiers)) = t.get("ladder") else {
                return Err(format!("expected {KINDS}"));
            };
            if t.len() != 1 || tiers.is_empty() {
                return Err("a ladder table has exactly one non-empty key `ladder`".into());
            }
            let mut out = Vec::new();
            for tier in tiers {
                let toml::Value::Array(vals) = tier else {
                    return Err("each ladder tier is an array of values".into());
                };
                let mut t = Vec::new();
                for v in vals {
                    t.push(match v {
                        toml::Value::String(s) if s == "<absent>" => Value::Null,
                        toml::Value::String(s) => Value::String(s.clone()),
                        toml::Value::Boolean(b) => Value::Bool(*b),
                        toml::Value::Integer(n) => Value::from(*n),
                        other => {
                            return Err(format!(
                                "ladder values are strings, booleans, integers or \"<absent>\", not {other}"
                            ))
                        }
                    });
                }
                out.push(t);
            }
            Ok(KeyKind::Ladder(out))
        }
        other => Err(format!("{other} is not a kind; expected {KINDS}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_and_cover_every_preset() {
        let all = preset_rules();
        for p in PRESETS {
            assert!(all.iter().any(|r| r.preset == *p), "preset {p} has no rule");
        }
        for r in all {
            assert!(!r.why.is_empty(), "{}", r.name);
        }
    }

    #[test]
    fn guarded_path_is_case_insensitive_and_repo_relative() {
        assert_eq!(
            guarded_path(".claude/settings.json").unwrap().name,
            "claude-settings"
        );
        assert_eq!(
            guarded_path(".Claude/Settings.Local.JSON").unwrap().name,
            "claude-settings"
        );
        assert_eq!(
            guarded_path("./.vscode/settings.json").unwrap().name,
            "vscode-settings"
        );
        assert_eq!(guarded_path(".Cursor/MCP.json").unwrap().name, "cursor-mcp");
        assert_eq!(guarded_path(".codex/config.toml").unwrap().preset, "codex");
        assert_eq!(guarded_path(".envrc").unwrap().format, Format::Opaque);
        assert_eq!(
            guarded_path(".devcontainer/rust/devcontainer.json")
                .unwrap()
                .name,
            "devcontainer"
        );
        assert!(guarded_path("src/main.rs").is_none());
        assert!(guarded_path("sub/.claude/settings.json").is_none());
    }

    fn table(s: &str) -> toml::Table {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn policy_selects_overrides_and_adds() {
        let t = table(
            r#"
presets = ["vscode", "claude-code"]
[[rule]]
name = "vscode-settings"
keys = { "editor.fontSize" = "any-change" }
[[rule]]
name = "claude-settings"
enabled = false
[[rule]]
name = "my-tool"
paths = [".mytool/config.json"]
format = "json"
keys = { "allow" = "list-grows" }
"#,
        );
        let r = Rules::from_table(&t, Path::new("/p.toml")).unwrap();
        assert!(r.lookup(".claude/settings.json").is_none());
        assert!(r.lookup(".codex/config.toml").is_none());
        let v = r.lookup(".vscode/settings.json").unwrap();
        assert!(v.keys.iter().any(|k| k.pattern == "editor.fontSize"));
        assert!(v.keys.iter().any(|k| k.pattern == "chat.tools.autoApprove"));
        let m = r.lookup(".MyTool/config.json").unwrap();
        assert_eq!(m.preset, "policy");
        assert_eq!(m.unlisted, Unlisted::Widens);
    }

    #[test]
    fn bad_entries_name_file_key_and_rule() {
        let cases = [
            ("presets = [\"emacs\"]", "settings.presets[0]", "unknown preset"),
            (
                "[[rule]]\nname = \"x\"\npaths = [\"/abs\"]\nformat = \"json\"",
                "settings.rule[0].paths[0]",
                "leading /",
            ),
            (
                "[[rule]]\nname = \"x\"\npaths = [\"a\"]\nformat = \"json\"\nkeys = { a = \"grows\" }",
                "settings.rule[0].keys.\"a\"",
                "unknown kind",
            ),
            ("[[rule]]\nname = \"x\"", "settings.rule[0]", "needs `paths`"),
            (
                "[[rule]]\nname = \"x\"\npaths = [\"a\"]\nformat = \"opaque\"\nkeys = { a = \"neutral\" }",
                "settings.rule[0].keys",
                "opaque",
            ),
            ("colour = 1", "settings", "unknown field"),
        ];
        for (src, key, rule) in cases {
            let e = Rules::from_table(&table(src), Path::new("/etc/p.toml")).unwrap_err();
            assert_eq!(e.key, key, "{src}: {e}");
            assert!(e.rule.contains(rule), "{src}: {e}");
            let line = e.to_string();
            assert!(line.starts_with("/etc/p.toml: "), "{line}");
            assert_eq!(line.lines().count(), 1);
        }
    }
}
