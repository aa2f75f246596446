//! Work-tree files the owner's git runs: relative programs of the config (R5-3) and what an
//! installed hook runs from the work tree (R5-7, the "second hop").
//!
//! # Why
//!
//! The plan keeps the owner's hooks and config read-only, but both can run files of the work
//! tree, which is the agent's to write: git resolves a relative `core.fsmonitor` or
//! `core.hooksPath` from the top of the work tree it runs in (every worktree, the session's
//! included), the pre-commit framework's hook runs the commands of
//! `.pre-commit-config.yaml`, husky's run `.husky/*`, lefthook's run `lefthook.yml`, and a
//! hand-written hook may `exec ./scripts/lint.sh`. An agent that edits one of them runs code
//! on the owner's next `git commit`.
//!
//! # Rule
//!
//! For the hooks folders git may use (`core.hooksPath`, every value, and `<common dir>/hooks`),
//! every executable hook that is not a `.sample`:
//! - a known hook manager it names ([`catalogue::HOOK_MANAGERS`]): its existing config files
//!   and folders, and every file a command line of those configs names (`entry:`, `run:`);
//! - every word of the hook that names an existing regular file of the work tree (the same
//!   rule as an interpreter's script in a program value, R5-2): `./scripts/lint.sh`,
//!   `tools/check`. Folders only through a manager (`cd frontend` must not freeze `frontend/`).
//!
//! Only files and folders that exist are listed (no placeholder: an empty file made in the
//! work tree would show in the agent's `git status` and be staged by `git add -A`); one the
//! agent creates is reported by `wt-check check`. What a hook finds by convention (`make` →
//! `Makefile`, `npm run` → `package.json`) is not listed: ordinary work edits those files
//! (docs/sandbox-plan.md, known limits).

use super::{EntryKind, PlanError};
use crate::catalogue;
use crate::integrity::Located;
use std::path::{Path, PathBuf};

/// The most of a hook or config file read.
const READ_LIMIT: u64 = 256 * 1024;

/// One work-tree path the owner's git runs, relative to the top of a work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub rel: PathBuf,
    pub kind: EntryKind,
    /// What runs it: `core.fsmonitor …`, `hook pre-commit (pre-commit)`, `hook post-commit`.
    pub via: String,
    /// A script a hook names at the top of the work tree: protected by itself, what an
    /// interpreter finds beside it stays writable (`Plan::unguarded`).
    pub at_top: bool,
    /// Not empty: `rel` is a folder an interpreter searches for modules that no bind can
    /// protect (the top itself, `python3 -m x` run there; `Plan::unguarded`), and these are
    /// the names a module planted there takes (`*.py`, `*/__init__.py`, one level each):
    /// `check` compares them, the plan binds nothing for it.
    pub globs: &'static [&'static str],
}

/// Every work-tree path of the repository at `loc` that the owner's git runs (see the module
/// documentation). Empty for a bare repository.
pub fn hops(loc: &Located) -> Result<Vec<Hop>, PlanError> {
    Ok(hops_and_searched(loc)?.0)
}

/// A search root of an interpreter a hook starts that no bind can protect (the top itself,
/// a missing `node_modules` or `.npmrc`: [`super::words::Reaches::searched`]), with the hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopSearched {
    pub searched: super::words::Searched,
    /// `hook pre-commit`, `hook pre-commit (husky)`.
    pub via: String,
}

/// [`hops`], and what the interpreters the hooks start search that cannot be protected.
pub fn hops_and_searched(loc: &Located) -> Result<(Vec<Hop>, Vec<HopSearched>), PlanError> {
    let mut searched: Vec<HopSearched> = Vec::new();
    let Some(top) = loc.work_tree.as_deref() else {
        return Ok((Vec::new(), searched));
    };
    let owner = super::owner_programs(loc)?;
    let top_globs = owner.top_globs;
    // What a config value's interpreter would read but is missing (`.npmrc`,
    // `rust-toolchain.toml`, a top `node_modules/`): no bind can stand at the top for it, so
    // `check` compares it (created or changed: a finding; eleventh red-team pass, R11-3,
    // R11-6, R11-8). The hooks' own are added below.
    let missing_reads: Vec<(PathBuf, EntryKind, String)> = owner
        .unguarded
        .iter()
        .filter_map(|u| {
            let kind = missing_read_kind(u.why)?;
            Some((
                u.path.strip_prefix(top).ok()?.to_path_buf(),
                kind,
                u.key.clone(),
            ))
        })
        .collect();
    let programs = owner.programs;
    let mut out: Vec<Hop> = Vec::new();
    let push = |out: &mut Vec<Hop>, rel: PathBuf, kind: EntryKind, via: String| {
        if !out.iter().any(|h| h.rel == rel) {
            out.push(Hop {
                rel,
                kind,
                via,
                at_top: false,
                globs: &[],
            });
        }
    };
    let mut hook_dirs = vec![loc.common_dir.join("hooks")];
    for (path, kind) in &programs {
        let script = owner.keys.iter().any(|(p, _)| p == path);
        if *kind == EntryKind::Dir && !script && !hook_dirs.contains(path) {
            hook_dirs.push(path.clone());
        }
        if let Ok(rel) = path.strip_prefix(top) {
            let via = match owner.keys.iter().find(|(p, _)| p == path) {
                Some((_, key)) if *kind == EntryKind::Dir => {
                    format!("{key} (the folder of a script it runs)")
                }
                Some((_, key)) => format!("{key} (a script it runs)"),
                None if *kind == EntryKind::Dir => {
                    "core.hooksPath (relative to the work tree)".into()
                }
                None => "a program the config names (relative to the work tree)".into(),
            };
            push(&mut out, rel.to_path_buf(), *kind, via);
        }
    }
    for dir in hook_dirs {
        for (name, text) in hooks_in(&dir) {
            let (runs, found) = hook_reads(&text, top);
            for (s, manager) in found {
                if !searched.iter().any(|h| h.searched.rel == s.rel) {
                    let via = match manager {
                        Some(m) => format!("hook {name} ({m})"),
                        None => format!("hook {name}"),
                    };
                    searched.push(HopSearched { searched: s, via });
                }
            }
            // A Node hook inside the work tree's git dir (`#!/usr/bin/env node`): `require`
            // searches `node_modules` from the hooks folder up through the top.
            if dir.starts_with(top) {
                if let Some(interp) = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("#!"))
                    .and_then(|l| {
                        let mut w = l.split_whitespace();
                        let i = w.next()?;
                        if i.rsplit('/').next() == Some("env") {
                            w.find(|a| !a.starts_with('-'))
                        } else {
                            Some(i)
                        }
                    })
                {
                    let base = interp.rsplit('/').next().unwrap_or(interp);
                    let upward = catalogue::INTERPRETERS.iter().any(|i| {
                        !i.upward.is_empty()
                            && (i.names.contains(&base)
                                || i.prefixes.iter().any(|p| base.starts_with(p)))
                    });
                    if upward {
                        let r = super::words::reach(base, top);
                        for p in r.paths {
                            let kind = match p.reach {
                                super::words::Reach::Folder => EntryKind::Dir,
                                super::words::Reach::File => EntryKind::File,
                            };
                            push(&mut out, p.rel, kind, format!("hook {name}"));
                        }
                        for s in r.searched {
                            if !searched.iter().any(|h| h.searched.rel == s.rel) {
                                searched.push(HopSearched {
                                    searched: s,
                                    via: format!("hook {name}"),
                                });
                            }
                        }
                    }
                }
            }
            for (rel, kind, manager) in runs {
                let via = match manager {
                    Some(m) => format!("hook {name} ({m})"),
                    None => format!("hook {name}"),
                };
                let at_top = manager.is_none()
                    && kind == EntryKind::File
                    && rel.parent().is_none_or(|p| p.as_os_str().is_empty());
                push(&mut out, rel.clone(), kind, via);
                if at_top {
                    if let Some(h) = out.iter_mut().find(|h| h.rel == rel) {
                        h.at_top = true;
                    }
                }
            }
        }
    }
    for (rel, kind, via) in missing_reads {
        push(&mut out, rel, kind, via);
    }
    for h in &searched {
        if let Some(kind) = missing_read_kind(h.searched.why) {
            push(&mut out, h.searched.rel.clone(), kind, h.via.clone());
        }
    }
    // A file below a folder already listed is covered by it (one finding per change).
    let folders: Vec<PathBuf> = out
        .iter()
        .filter(|h| h.kind == EntryKind::Dir)
        .map(|h| h.rel.clone())
        .collect();
    out.retain(|h| !folders.iter().any(|f| *f != h.rel && h.rel.starts_with(f)));
    searched.retain(|h| {
        h.searched.rel.as_os_str().is_empty()
            || !folders.iter().any(|f| h.searched.rel.starts_with(f))
    });
    // The top heading a module path: `check` compares the module names there (R9-7).
    if !top_globs.is_empty() {
        out.push(Hop {
            rel: PathBuf::new(),
            kind: EntryKind::Dir,
            via: "a config value (its interpreter searches the top for modules)".into(),
            at_top: false,
            globs: top_globs,
        });
    }
    for h in searched.iter().filter(|_| top_globs.is_empty()) {
        let s = &h.searched;
        if s.rel.as_os_str().is_empty() && !s.module_globs.is_empty() {
            out.push(Hop {
                rel: PathBuf::new(),
                kind: EntryKind::Dir,
                via: format!("{} (its interpreter searches the top for modules)", h.via),
                at_top: false,
                globs: s.module_globs,
            });
            break;
        }
    }
    Ok((out, searched))
}

/// The executable hooks of `dir` (not `*.sample`), with their text; nothing when `dir` is
/// not a folder. Links are not followed.
fn hooks_in(dir: &Path) -> Vec<(String, String)> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(m) = e.metadata() else { continue };
        if name.ends_with(".sample") || !m.is_file() || m.permissions().mode() & 0o111 == 0 {
            continue;
        }
        if let Some(text) = read_text(&e.path()) {
            out.push((name, text));
        }
    }
    out.sort();
    out
}

fn read_text(p: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(p).ok()?;
    let mut b = Vec::new();
    f.take(READ_LIMIT).read_to_end(&mut b).ok()?;
    Some(String::from_utf8_lossy(&b).into_owned())
}

/// What a hook's `text` runs from the work tree at `top`: (relative path, kind, manager).
/// A search root that is missing and that `check` compares instead (a file an interpreter
/// reads at start, a `node_modules/` at the top), by the reason it is unguarded.
fn missing_read_kind(why: &str) -> Option<EntryKind> {
    if why == catalogue::WHY_TOP_READ {
        Some(EntryKind::File)
    } else if why == catalogue::WHY_UPWARD_MISSING {
        Some(EntryKind::Dir)
    } else {
        None
    }
}

#[cfg(test)]
pub(crate) fn hook_runs(text: &str, top: &Path) -> Vec<(PathBuf, EntryKind, Option<&'static str>)> {
    hook_reads(text, top).0
}

/// A search root the hook's interpreters read that cannot be protected, with the manager
/// whose config names the command.
type HookSearched = (super::words::Searched, Option<&'static str>);

/// [`hook_runs`], and the search roots of the interpreters the hook (and the commands of its
/// manager's config) start that cannot be protected ([`super::words::Reaches::searched`]).
#[allow(clippy::type_complexity)]
pub(crate) fn hook_reads(
    text: &str,
    top: &Path,
) -> (
    Vec<(PathBuf, EntryKind, Option<&'static str>)>,
    Vec<HookSearched>,
) {
    let mut out = Vec::new();
    let mut searched: Vec<HookSearched> = Vec::new();
    for m in catalogue::HOOK_MANAGERS {
        if !m.markers.iter().any(|k| text.contains(k)) {
            continue;
        }
        let mut configs: Vec<String> = m.configs.iter().map(|c| (*c).to_owned()).collect();
        // pre-commit: `hook-impl --config=FILE` names the config the hook reads.
        if let Some(c) = config_arg(text) {
            configs.insert(0, c);
        }
        for c in configs {
            let Some(rel) = super::words::in_tree(&c, top) else {
                continue;
            };
            if !is_kind(&top.join(&rel), EntryKind::File) {
                continue;
            }
            if let Some(cfg) = read_text(&top.join(&rel)) {
                for line in cfg.lines() {
                    let t = line.trim_start();
                    if let Some(k) = m.command_keys.iter().find(|k| t.starts_with(**k)) {
                        let (files, found) = script_files(&t[k.len()..], top);
                        searched.extend(found.into_iter().map(|s| (s, Some(m.name))));
                        for (r, kind) in files {
                            out.push((r, kind, Some(m.name)));
                        }
                    }
                }
            }
            out.push((rel, EntryKind::File, Some(m.name)));
        }
        for f in m.folders {
            if is_kind(&top.join(f), EntryKind::Dir) {
                out.push((PathBuf::from(f), EntryKind::Dir, Some(m.name)));
                // The scripts in it (`.husky/pre-commit`: `npx lint-staged`) run commands
                // whose interpreters search the project (R9-8): what they reach too.
                let Ok(rd) = std::fs::read_dir(top.join(f)) else {
                    continue;
                };
                let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                names.sort();
                for p in names {
                    if !is_kind(&p, EntryKind::File) {
                        continue;
                    }
                    if let Some(t) = read_text(&p) {
                        let (files, found) = script_files(&t, top);
                        searched.extend(found.into_iter().map(|s| (s, Some(m.name))));
                        for (r, kind) in files {
                            out.push((r, kind, Some(m.name)));
                        }
                    }
                }
            }
        }
    }
    // The whole script at once: the lexer skips comments and reads continuation lines,
    // quotes spanning lines and substitutions as `sh` would.
    let (files, found) = script_files(text, top);
    searched.extend(found.into_iter().map(|s| (s, None)));
    for (r, kind) in files {
        // A manager's file stays listed under the manager.
        if !out.iter().any(|(q, _, _)| *q == r) {
            out.push((r, kind, None));
        }
    }
    // A file below a folder already listed is covered by it.
    let folders: Vec<PathBuf> = out
        .iter()
        .filter(|(_, k, _)| *k == EntryKind::Dir)
        .map(|(p, _, _)| p.clone())
        .collect();
    out.retain(|(p, _, _)| !folders.iter().any(|f| f != p && p.starts_with(f)));
    (out, searched)
}

/// `--config=FILE` / `--config FILE` in a hook's text.
fn config_arg(text: &str) -> Option<String> {
    let mut it = words(text);
    while let Some(w) = it.next() {
        if let Some(v) = w.strip_prefix("--config=") {
            return Some(v.to_owned());
        }
        if w == "--config" {
            return it.next().map(str::to_owned);
        }
    }
    None
}

/// Shell-ish words: split on blanks, quotes, `;|&()<>` and backquotes; `VAR=value` gives
/// `value`.
fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| c.is_whitespace() || "\"'`;|&()<>[],".contains(c))
        .map(|w| {
            w.rsplit_once('=')
                .map_or(w, |(k, v)| if k.starts_with('-') { w } else { v })
        })
        .filter(|w| !w.is_empty())
}

/// What the command text reaches in the work tree at `top` (the plan's one reader,
/// [`super::words::reach`]): the folder of each script it names, a script at the top by
/// itself. A link at the top is left out (the plan refuses a link only where a program value
/// names it; below, its folder covers it).
fn script_files(
    text: &str,
    top: &Path,
) -> (Vec<(PathBuf, EntryKind)>, Vec<super::words::Searched>) {
    let r = super::words::reach(text, top);
    let files = r
        .paths
        .into_iter()
        .filter(|r| {
            r.reach == super::words::Reach::Folder
                || std::fs::symlink_metadata(top.join(&r.rel)).is_ok_and(|m| m.is_file())
        })
        .map(|r| {
            let kind = match r.reach {
                super::words::Reach::Folder => EntryKind::Dir,
                super::words::Reach::File => EntryKind::File,
            };
            (r.rel, kind)
        })
        .collect();
    (files, r.searched)
}

/// `p` is a folder or regular file (as asked), reached without following a link at its end.
fn is_kind(p: &Path, kind: EntryKind) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| match kind {
        EntryKind::File => m.is_file(),
        EntryKind::Dir => m.is_dir(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str], dirs: &[&str]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        for f in files {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        t
    }

    fn rels(v: &[(PathBuf, EntryKind, Option<&str>)]) -> Vec<String> {
        let mut r: Vec<String> = v.iter().map(|(p, _, _)| p.display().to_string()).collect();
        r.sort();
        r.dedup();
        r
    }

    #[test]
    fn a_hand_written_hook_names_its_scripts() {
        let t = tree(
            &[
                "frontend/scripts/lint.sh",
                "frontend/src/a.js",
                "check.py",
                "f",
            ],
            &["docs"],
        );
        let top = t.path().canonicalize().unwrap();
        // The folder of each script (its siblings are the owner's too), a script at the top
        // by itself; a `cd` target is no folder to protect, nor a word in a comment that
        // names no file or folder.
        let hook = "#!/bin/sh\n# runs docs\ncd frontend && exec ./scripts/lint.sh \"$@\"\npython3 check.py; X=f\n/usr/bin/true\n";
        let got = hook_runs(hook, &top);
        assert_eq!(rels(&got), ["check.py", "f", "frontend/scripts"]);
        assert!(got
            .iter()
            .all(|(p, k, _)| (*k == EntryKind::Dir) == p.ends_with("scripts")));
        // By convention only: not listed (a known limit); named, it is.
        let t = tree(&["Makefile", "package.json"], &[]);
        let top = t.path().canonicalize().unwrap();
        assert!(hook_runs("#!/bin/sh\nmake lint && npm test\n", &top).is_empty());
        assert_eq!(
            rels(&hook_runs("#!/bin/sh\nmake -f Makefile lint\n", &top)),
            ["Makefile"]
        );
    }

    #[test]
    fn pre_commit_names_its_config_and_the_local_entries() {
        let t = tree(&[".pre-commit-config.yaml", "tools/fmt.sh"], &["src"]);
        let top = t.path().canonicalize().unwrap();
        std::fs::write(
            top.join(".pre-commit-config.yaml"),
            "repos:\n- repo: local\n  hooks:\n  - id: fmt\n    entry: tools/fmt.sh --check\n    files: src/\n",
        )
        .unwrap();
        let hook = "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\nARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)\n";
        let got = hook_runs(hook, &top);
        assert_eq!(rels(&got), [".pre-commit-config.yaml", "tools"]);
        assert!(got.iter().all(|(_, _, m)| *m == Some("pre-commit")));
    }

    #[test]
    fn husky_and_lefthook_name_their_folders_and_configs() {
        let t = tree(
            &[
                ".husky/pre-commit",
                ".lintstagedrc.json",
                "lefthook.yml",
                "package.json",
            ],
            &[],
        );
        let top = t.path().canonicalize().unwrap();
        let got = hook_runs("#!/bin/sh\n. \"$(dirname \"$0\")/_/husky.sh\"\n", &top);
        assert_eq!(rels(&got), [".husky", ".lintstagedrc.json"]);
        let got = hook_runs("#!/bin/sh\nlefthook run pre-commit \"$@\"\n", &top);
        assert_eq!(rels(&got), ["lefthook.yml"]);
    }

    #[test]
    fn words_outside_the_work_tree_or_in_git_are_not_listed() {
        let t = tree(&["a.sh"], &[".git/hooks"]);
        let top = t.path().canonicalize().unwrap();
        std::fs::write(top.join(".git/hooks/x"), "x").unwrap();
        let hook = format!(
            "sh ../a.sh; sh .git/hooks/x; sh {}/a.sh; sh -a.sh",
            top.display()
        );
        assert_eq!(rels(&hook_runs(&hook, &top)), ["a.sh"]);
    }
}
