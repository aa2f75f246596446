//! Nested repositories in a work tree: every `.git` folder, gitfile or `.git` link, and every
//! folder shaped like a bare repository. git discovers them when run inside (research
//! `git-exec-surfaces.md` §3.3, `is_implicit_bare_repo`): an agent can plant one so that the
//! owner's git, run in a subfolder, picks up the planted config and hooks.

use super::{check_git_dir_with, parse_gitfile, LayoutError, Sys};
use crate::fsx::{FileType, FsError, Root};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Bounds of [`nested_repositories`]. Past any of them the report is incomplete.
#[derive(Debug, Clone, Copy)]
pub struct NestedLimits {
    /// Directory entries examined.
    pub max_entries: usize,
    /// Folder depth below the work tree.
    pub max_depth: usize,
    pub max_time: Duration,
}

impl Default for NestedLimits {
    fn default() -> Self {
        NestedLimits {
            max_entries: 500_000,
            max_depth: 64,
            max_time: Duration::from_secs(20),
        }
    }
}

/// What was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "shape")]
pub enum NestedKind {
    /// A `.git` folder; `valid` = passes git's git-dir test (an invalid one makes git climb
    /// to the enclosing repository instead).
    GitDir { valid: bool },
    /// A `.git` file; `target` as written after `gitdir: ` when parseable.
    Gitfile { target: Option<PathBuf> },
    /// A `.git` symbolic link (git follows it).
    GitLink { target: PathBuf },
    /// A `.git` that is a fifo, socket or device.
    DotGitOther { kind: String },
    /// A folder holding `HEAD`, `objects/` and `refs/`: git uses it as a bare repository when
    /// run inside it (unless `safe.bareRepository=explicit`).
    BareShaped,
    /// A folder holding a `config` file with a `[core]` section: the shape of a git dir.
    CoreConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NestedFinding {
    /// For `.git` kinds, the `.git` entry itself; for bare shapes, the folder.
    pub path: PathBuf,
    pub kind: NestedKind,
}

/// The result of [`nested_repositories`]. `complete == false` means the walk was cut short
/// (a bound, an unreadable folder, a folder swapped for a link): absence of findings then
/// proves nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NestedReport {
    pub findings: Vec<NestedFinding>,
    pub complete: bool,
    /// Why the walk is incomplete (one line each).
    pub incomplete: Vec<String>,
    pub entries_seen: usize,
}

const CONFIG_READ_MAX: u64 = 64 * 1024;

/// Walks `work_tree` without following links (the repository's own `<work_tree>/.git` is
/// skipped) and reports every nested `.git` and bare-repository shape. Folders found to be
/// git dirs are not descended into.
pub fn nested_repositories(
    work_tree: &Path,
    limits: &NestedLimits,
) -> Result<NestedReport, LayoutError> {
    let root = Root::open(work_tree)?;
    let sys = Sys::new()?;
    let started = Instant::now();
    let mut report = NestedReport {
        findings: Vec::new(),
        complete: true,
        incomplete: Vec::new(),
        entries_seen: 0,
    };
    let mut stack: Vec<(PathBuf, usize)> = vec![(PathBuf::new(), 0)];
    while let Some((rel, depth)) = stack.pop() {
        if started.elapsed() > limits.max_time {
            report.incomplete.push(format!(
                "time limit of {:?} reached; {} folders not examined",
                limits.max_time,
                stack.len() + 1
            ));
            break;
        }
        let entries = match root.list(&rel) {
            Ok(e) => e,
            Err(e @ (FsError::Link { .. } | FsError::NotDir { .. } | FsError::NotFound { .. })) => {
                report.incomplete.push(format!(
                    "{}: changed during the walk: {e}",
                    e.path().display()
                ));
                continue;
            }
            Err(e) => {
                report.incomplete.push(format!("{e}"));
                continue;
            }
        };
        report.entries_seen += entries.len();
        if report.entries_seen > limits.max_entries {
            report.incomplete.push(format!(
                "entry limit of {} reached at {}",
                limits.max_entries,
                root.path().join(&rel).display()
            ));
            break;
        }
        let abs = root.path().join(&rel);
        let has = |n: &str, dir: bool| {
            entries
                .iter()
                .any(|e| e.name == n && (!dir || e.stat.is_dir()))
        };
        let mut is_git_dir_shape = false;
        if !rel.as_os_str().is_empty() {
            if has("HEAD", false) && has("objects", true) && has("refs", true) {
                report.findings.push(NestedFinding {
                    path: abs.clone(),
                    kind: NestedKind::BareShaped,
                });
                is_git_dir_shape = true;
            } else if entries
                .iter()
                .any(|e| e.name == "config" && e.stat.is_file())
            {
                if let Ok(bytes) = root.read_prefix(rel.join("config"), CONFIG_READ_MAX) {
                    if has_core_section(&bytes) {
                        report.findings.push(NestedFinding {
                            path: abs.clone(),
                            kind: NestedKind::CoreConfig,
                        });
                    }
                }
            }
        }
        for e in &entries {
            let child_rel = rel.join(&e.name);
            if e.name == ".git" {
                if rel.as_os_str().is_empty() {
                    continue; // the repository's own git dir (or gitfile)
                }
                let path = abs.join(".git");
                let kind = match &e.stat.file_type {
                    FileType::Dir { .. } => NestedKind::GitDir {
                        valid: check_git_dir_with(&sys, &path).is_ok(),
                    },
                    FileType::File { .. } => NestedKind::Gitfile {
                        target: root
                            .read(&child_rel, super::GITFILE_MAX)
                            .ok()
                            .and_then(|b| parse_gitfile(&path, &b).ok()),
                    },
                    FileType::Symlink { target } => NestedKind::GitLink {
                        target: target.clone(),
                    },
                    other => NestedKind::DotGitOther {
                        kind: other.name().into(),
                    },
                };
                report.findings.push(NestedFinding { path, kind });
                continue;
            }
            if e.stat.is_dir() && !is_git_dir_shape {
                if depth + 1 > limits.max_depth {
                    report.incomplete.push(format!(
                        "{}: deeper than {} folders, not examined",
                        abs.join(&e.name).display(),
                        limits.max_depth
                    ));
                    continue;
                }
                stack.push((child_rel, depth + 1));
            }
        }
    }
    report.complete = report.incomplete.is_empty();
    report.findings.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(report)
}

/// A `core` section header (`[core]`, `[CORE]`, `[core "…"]`, `[core.x]`) as git reads it.
fn has_core_section(bytes: &[u8]) -> bool {
    // git's own reading (`crate::config::parse_bytes`): `[CORE]`, a BOM, a header after a lone
    // CR on the same line all count; sections before a bad line too (a superset).
    crate::config::parse_bytes(bytes, crate::config::Dialect::Any)
        .sections
        .iter()
        .any(|(section, _, _)| section == "core")
}

#[cfg(test)]
mod tests {
    use super::has_core_section;

    #[test]
    fn core_section_detection() {
        assert!(has_core_section(b"[core]\n\tbare = true\n"));
        assert!(has_core_section(b"# x\n  [CORE]\n"));
        assert!(!has_core_section(b"[corex]\n"));
        assert!(!has_core_section(b"core = 1\n"));
        assert!(has_core_section(b"\xef\xbb\xbf[core]\n"));
        assert!(has_core_section(b"[a]\r[core]\n\tbare = false\n"));
    }
}
