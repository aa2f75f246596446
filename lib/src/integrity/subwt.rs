//! Where a submodule git dir's `core.worktree` leads, as git resolves it.
//!
//! git takes `core.worktree` of a git dir relative to that git dir and resolves it
//! physically (`setup.c`: `chdir` to the git dir, then to the value, then `getcwd`): every
//! symbolic link on the way is followed. A check of the text alone is beaten by a link in the
//! work tree (`<session wt>/.wt -> proj/.git/hooks`), by `..` after a link (`d/x/../../..`
//! with `d/x -> ..`), and by a link retargeted after the check: the owner's `reset --hard`
//! in the submodule then writes the agent's files where the value leads (red-team pass 30).
//!
//! What git itself writes there (`submodule add`, `update --init`, `absorbgitdirs`, in the
//! main work tree and in a linked worktree, gits 2.39 and 2.47): a relative path, leading
//! `..`s then the submodule's path in its work tree, computed from real paths — no `..`
//! after a normal component, no link on the way. So, at every check, for every submodule git
//! dir the check judges:
//! - a `..` after a normal component, or a component that is a link (followed or not), is an
//!   error whatever it leads to today (a link can be retargeted after the check);
//! - the place it leads to must be inside the allowed root (the session folder for the
//!   session's own entries' submodules; one of the repository's work trees otherwise), not
//!   the root itself, and in no case inside a git dir (the common dir, or below a `.git`).
//!
//! A missing component (a submodule path removed by a branch switch) ends the walk: what
//! follows is taken as written (it holds no `..`: refused above). Missing is not a link.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Where a submodule's work tree may be.
pub enum Place<'a> {
    /// Inside the session folder (the session's own entries' submodules).
    Session(&'a Path),
    /// Inside one of the repository's work trees (main or linked).
    WorkTrees(&'a [PathBuf]),
}

/// Why a `core.worktree` value is refused: a sentence, and where it leads (when known).
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub why: String,
    pub leads_to: Option<PathBuf>,
    /// A link on the way (in the work tree), when that is the reason.
    pub link: Option<PathBuf>,
}

/// Resolve `value` (a git dir `g`'s `core.worktree`) as git would and judge it. `common`:
/// the common dir's real path ([`real_common`], resolved once per check). `Err(Ok(refused))` is a finding, `Err(Err(why))` a part that could not
/// be read.
pub fn judge(
    g: &Path,
    value: &str,
    common: &Path,
    place: &Place<'_>,
) -> Result<PathBuf, Result<Refused, String>> {
    let v = Path::new(value);
    let mut comps = v.components().peekable();
    let mut cur = if v.is_absolute() {
        comps.next();
        PathBuf::from("/")
    } else {
        std::fs::canonicalize(g).map_err(|e| Err(format!("{}: {e}", g.display())))?
    };
    // Leading `..`s (and `.`s): from the real git dir, as git computes them.
    while let Some(c) = comps.peek() {
        match c {
            Component::ParentDir => {
                cur.pop();
            }
            Component::CurDir => {}
            _ => break,
        }
        comps.next();
    }
    let rest: Vec<Component<'_>> = comps.collect();
    if rest.iter().any(|c| matches!(c, Component::ParentDir)) {
        return Err(Ok(Refused {
            why: "a `..` after a normal component (git writes only leading `..`s; after a link it leads wherever the link does)".into(),
            leads_to: std::fs::canonicalize(g.join(v)).ok(),
            link: None,
        }));
    }
    let mut missing = false;
    for c in rest {
        let Component::Normal(n) = c else { continue };
        cur.push(n);
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Ok(Refused {
                    why: format!(
                        "{} on the way is a symbolic link (git writes a real path; a link can be retargeted after the check)",
                        cur.display()
                    ),
                    leads_to: std::fs::canonicalize(g.join(v)).ok(),
                    link: Some(cur.clone()),
                }));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing = true,
            Err(e) if e.raw_os_error() == Some(20) => missing = true, // ENOTDIR: a file on the way
            Err(e) => return Err(Err(format!("{}: {e}", cur.display()))),
        }
    }
    let refuse = |why: String| {
        Err(Ok(Refused {
            why,
            leads_to: Some(cur.clone()),
            link: None,
        }))
    };
    if cur.starts_with(common) {
        return refuse(format!("inside the common dir {}", common.display()));
    }
    let root = match place {
        Place::Session(sd) => inside(&cur, std::slice::from_ref(&sd.to_path_buf())),
        Place::WorkTrees(roots) => inside(&cur, roots),
    };
    let Some(root) = root else {
        return refuse(match place {
            Place::Session(sd) => format!("not inside the session folder {}", sd.display()),
            Place::WorkTrees(_) => "not inside any of the repository's work trees".into(),
        });
    };
    if let Ok(below) = cur.strip_prefix(&root) {
        if below
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(OsStr::new(".git")))
        {
            return refuse("inside a git dir (`.git`)".into());
        }
    }
    Ok(cur)
}

/// The common dir's real path (as given when it cannot be resolved).
pub fn real_common(common: &Path) -> PathBuf {
    std::fs::canonicalize(common).unwrap_or_else(|_| common.to_path_buf())
}

/// The root of `roots` that `p` lies strictly inside: as written first, then each root's
/// real path (a root reached through a link: the resolved `p` is real).
fn inside(p: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let hit = |r: &Path| p.starts_with(r) && p != r;
    if let Some(r) = roots.iter().find(|r| hit(r)) {
        return Some(r.clone());
    }
    roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .find(|r| hit(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct T {
        _d: tempfile::TempDir,
        base: PathBuf,
    }
    fn lay() -> T {
        let d = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(d.path()).unwrap();
        for p in [
            "proj/.git/hooks",
            "proj/.git/modules/sub",
            "proj/.git/worktrees/feat/modules/sub",
            "proj/sub",
            "wts/s1/feat/sub",
        ] {
            std::fs::create_dir_all(base.join(p)).unwrap();
        }
        T { _d: d, base }
    }
    fn own(t: &T, v: &str) -> Result<PathBuf, Result<Refused, String>> {
        let g = t.base.join("proj/.git/worktrees/feat/modules/sub");
        let sd = t.base.join("wts/s1");
        judge(&g, v, &t.base.join("proj/.git"), &Place::Session(&sd))
    }
    fn owners(t: &T, v: &str) -> Result<PathBuf, Result<Refused, String>> {
        let g = t.base.join("proj/.git/modules/sub");
        let roots = vec![t.base.join("proj"), t.base.join("wts/s1/feat")];
        judge(&g, v, &t.base.join("proj/.git"), &Place::WorkTrees(&roots))
    }

    #[test]
    fn gits_own_values_pass() {
        let t = lay();
        assert_eq!(
            own(&t, "../../../../../../wts/s1/feat/sub").unwrap(),
            t.base.join("wts/s1/feat/sub")
        );
        assert_eq!(owners(&t, "../../../sub").unwrap(), t.base.join("proj/sub"));
        // Missing (a branch switch removed the submodule's folder): not a link, not an error.
        std::fs::remove_dir(t.base.join("proj/sub")).unwrap();
        assert_eq!(owners(&t, "../../../sub").unwrap(), t.base.join("proj/sub"));
        assert_eq!(
            own(&t, "../../../../../../wts/s1/feat/gone/deeper").unwrap(),
            t.base.join("wts/s1/feat/gone/deeper")
        );
    }

    #[test]
    fn a_link_on_the_way_is_refused_wherever_it_leads() {
        let t = lay();
        symlink(
            t.base.join("proj/.git/hooks"),
            t.base.join("wts/s1/feat/.wt"),
        )
        .unwrap();
        let r = own(&t, &t.base.join("wts/s1/feat/.wt").to_string_lossy()).unwrap_err();
        let r = r.unwrap();
        assert_eq!(r.link, Some(t.base.join("wts/s1/feat/.wt")));
        assert_eq!(r.leads_to, Some(t.base.join("proj/.git/hooks")));
        // A link that stays inside (W3 turn 1): refused too.
        symlink("sub", t.base.join("wts/s1/feat/.in")).unwrap();
        assert!(own(&t, "../../../../../../wts/s1/feat/.in")
            .unwrap_err()
            .is_ok());
        // The owner's submodule: its folder replaced by a link.
        std::fs::remove_dir(t.base.join("proj/sub")).unwrap();
        symlink(t.base.join("wts/s1/feat/sub"), t.base.join("proj/sub")).unwrap();
        assert!(owners(&t, "../../../sub").unwrap_err().is_ok());
    }

    #[test]
    fn dotdot_after_a_component_is_refused_even_when_nothing_is_there() {
        let t = lay();
        let v = format!(
            "{}/wts/s1/feat/d/x/../../../proj/.git/hooks",
            t.base.display()
        );
        assert!(own(&t, &v).unwrap_err().is_ok());
        assert!(own(&t, "../../../../../../wts/s1/feat/sub/../sub")
            .unwrap_err()
            .is_ok());
    }

    #[test]
    fn placement() {
        let t = lay();
        // Outside the session folder, the session folder itself, a git dir, the common dir.
        assert!(own(&t, "../../../../../../proj/sub").unwrap_err().is_ok());
        assert!(own(&t, "../../../../../../wts/s1").unwrap_err().is_ok());
        std::fs::create_dir_all(t.base.join("wts/s1/feat/.git/x")).unwrap();
        assert!(own(&t, "../../../../../../wts/s1/feat/.git/x")
            .unwrap_err()
            .is_ok());
        assert!(owners(&t, "../../hooks").unwrap_err().is_ok());
        assert!(owners(&t, "..").unwrap_err().is_ok());
        assert!(owners(&t, "../../..").unwrap_err().is_ok());
        // A linked worktree's folder is one of the owner's work trees.
        assert!(owners(&t, "../../../../wts/s1/feat/sub").is_ok());
        assert!(owners(&t, "../../../../elsewhere").unwrap_err().is_ok());
    }
}
