//! Submodule git dirs made during the turn under the session's own worktree entry.
//!
//! On current gits a submodule of a linked worktree keeps its git dir under that worktree's
//! admin dir: an honest `git submodule update --init` (or `submodule add`, `absorbgitdirs`)
//! in the session's worktree makes `<common dir>/worktrees/<id>/modules/<name>/`. The entry
//! is the agent's (its `gitdir` names a worktree in the session folder), so such a git dir is
//! the agent's own repository, as one it makes in its work tree is: neither an error for
//! existing nor trusted. It is judged as a repository nested in a work tree is
//! ([`crate::audit`]: program-running keys, hooks that are not `.sample`, includes, …), and
//! besides: git never writes a `commondir` in a submodule git dir, and its `core.worktree`
//! must lead, as git resolves it, to a folder in the session folder ([`super::subwt`]). Its object store and rerere state are judged
//! with every other store's (`stores`, `rerere`: they walk `worktrees/<id>/modules/`).
//! Which git dirs count is decided by the comparison (`compare::session_module_git_dirs`).

use crate::audit::Finding;
use crate::layout::walk::WalkCache;
use std::path::{Path, PathBuf};

/// What was found in the agent's submodule git dirs.
#[derive(Debug, Default)]
pub struct Judged {
    /// Findings (above a note), each naming its git dir.
    pub findings: Vec<(PathBuf, Finding)>,
    /// What could not be read (the check is incomplete).
    pub problems: Vec<(PathBuf, String)>,
}

/// Judge each git dir of `git_dirs` (absolute; the agent's, below the session's own worktree
/// entry). `session_dir`: the session folder, where `core.worktree` must lead (resolved as git
/// does: [`super::subwt`]); `common`: the common dir.
pub fn judge(
    git_dirs: &[PathBuf],
    session_dir: &Path,
    common: &Path,
    cache: &mut WalkCache,
) -> Judged {
    let mut out = Judged::default();
    let real_common = super::subwt::real_common(common);
    for g in git_dirs {
        let mut targets = vec![g.clone()];
        // The submodule's own linked worktree entries: their `commondir` must be git's
        // `../..`, and their `config.worktree` is read with the audit of the entry.
        if let Ok(rd) = std::fs::read_dir(g.join("worktrees")) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let p = e.path();
                    let cd = crate::audit::special::read_regular(&p.join("commondir"), 1 << 16);
                    let gits = cd
                        .as_ref()
                        .is_ok_and(|b| b.strip_suffix(b"\n").unwrap_or(b) == b"../..");
                    if !gits {
                        out.findings.push((
                            g.clone(),
                            finding(
                                &crate::audit::rules::WORKTREE_ENTRY,
                                &p.join("commondir"),
                                g,
                                format!(
                                    "{}: a linked worktree entry of a submodule git dir made in the session's worktree entry whose commondir is not git's `../..`",
                                    p.display()
                                ),
                            ),
                        ));
                    }
                    targets.push(p);
                }
            }
        }
        for t in &targets {
            let report = crate::audit::audit_cached(std::slice::from_ref(t), cache);
            for f in report.findings {
                // `core.worktree` in the git dir's own config is git's layout for a
                // submodule: judged below (it must name a folder in the session folder).
                let own_worktree_key = f.rule == crate::audit::rules::ARMED_KEY.id
                    && f.details.get("key").and_then(|k| k.as_str()) == Some("core.worktree")
                    && f.path == g.join("config");
                if own_worktree_key {
                    continue;
                }
                if f.rule == crate::audit::rules::INCOMPLETE.id {
                    out.problems.push((f.path.clone(), f.message.clone()));
                } else if f.level > crate::catalogue::Severity::Note
                    && f.rule != crate::audit::rules::NESTED_REPOSITORY.id
                    && !out.findings.iter().any(|(_, e)| {
                        e.rule == f.rule && e.path == f.path && e.message == f.message
                    })
                {
                    out.findings.push((g.clone(), f));
                }
            }
        }
        // git never writes a `commondir` in a submodule git dir: with one, git takes the
        // config and hooks of the folder it names (`setup.c:get_common_dir_noenv`).
        let cd = g.join("commondir");
        if std::fs::symlink_metadata(&cd).is_ok() {
            out.findings.push((
                g.clone(),
                finding(
                    &crate::audit::rules::COMMONDIR_IN_MAIN,
                    &cd,
                    g,
                    format!(
                        "{}: a commondir in a submodule git dir made in the session's worktree entry (git never writes one there; git would take the config and hooks of the folder it names)",
                        cd.display()
                    ),
                ),
            ));
        }
        // `core.worktree`: git writes the submodule's checkout, inside the session's worktree.
        let o = crate::config::Options::for_repository(None, g, g);
        match crate::config::enumerate(&o) {
            Ok(en) => {
                let wt = en.values().iter().rev().find(|v| {
                    v.origin.depth == 0
                        && crate::catalogue::loader::CORE_WORKTREE.matches(&v.config_key())
                });
                if let Some(v) = wt {
                    let text = v.text();
                    // Resolved as git does (relative to the git dir, every link followed):
                    // a link or a `..` after a normal component is refused whatever it leads
                    // to today (`subwt`).
                    match super::subwt::judge(
                        g,
                        text.as_ref(),
                        &real_common,
                        &super::subwt::Place::Session(session_dir),
                    ) {
                        Ok(_) => {}
                        Err(Ok(r)) => out.findings.push((
                            g.clone(),
                            finding(
                                &crate::audit::rules::ARMED_KEY,
                                &g.join("config"),
                                g,
                                format!(
                                    "{}: core.worktree `{}` of a submodule git dir made in the session's worktree entry{}: {} (the session's submodules' work trees belong inside the session folder {})",
                                    g.join("config").display(),
                                    text,
                                    r.leads_to
                                        .as_ref()
                                        .map(|p| format!(" leads to {}", p.display()))
                                        .unwrap_or_default(),
                                    r.why,
                                    session_dir.display()
                                ),
                            ),
                        )),
                        Err(Err(why)) => out.problems.push((g.join("config"), why)),
                    }
                }
            }
            Err(e) => out
                .problems
                .push((g.join("config"), format!("cannot read the config: {e}"))),
        }
    }
    out
}

fn finding(rule: &crate::audit::rules::Rule, path: &Path, repo: &Path, message: String) -> Finding {
    Finding {
        rule: rule.id,
        name: rule.name,
        level: crate::catalogue::Severity::Error,
        path: path.to_path_buf(),
        repo: Some(repo.to_path_buf()),
        message,
        details: Default::default(),
    }
}
