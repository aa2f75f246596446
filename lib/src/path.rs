//! Paths as the owner's tools see them: where a path leads once links and `..` are resolved,
//! for paths that may not exist yet.
//!
//! safe-git, wt-check, settings-watch and the session policy compare paths the agent can
//! influence (a work tree named by a gitfile, a state folder, a guarded settings root) with
//! paths they trust; comparing the written forms would let `a/../b` or a link pass for
//! another place, so every such comparison goes through [`resolve`].

use std::path::{Component, Path, PathBuf};

/// Resolve links and `..` for a path that may not exist yet: canonicalise the longest existing
/// ancestor and append the rest (lexically normalised).
pub fn resolve(p: &Path) -> PathBuf {
    let mut existing = p.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&existing) {
            let mut out = c;
            for comp in rest.iter().rev() {
                match comp.to_str() {
                    Some("..") => {
                        out.pop();
                    }
                    Some(".") => {}
                    _ => out.push(comp),
                }
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(_), Some(parent)) => {
                rest.push(
                    existing
                        .components()
                        .next_back()
                        .unwrap()
                        .as_os_str()
                        .to_os_string(),
                );
                existing = parent.to_path_buf();
            }
            _ => {
                // Nothing exists (or `..` at the end): lexical normalisation only.
                let mut out = PathBuf::new();
                for c in p.components() {
                    match c {
                        Component::ParentDir => {
                            out.pop();
                        }
                        Component::CurDir => {}
                        other => out.push(other.as_os_str()),
                    }
                }
                return out;
            }
        }
    }
}
