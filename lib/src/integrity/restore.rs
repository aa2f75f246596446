//! `check --restore`: what the agent changed moved into the quarantine, the baseline put back.

use super::*;

/// Rewrite the `.git` of the linked worktree `wt` to name its entry `entry` (what `git
/// worktree add` wrote) when it names anything else or is not a file; what was there goes to
/// the quarantine. A worktree folder that is gone is left alone (git's "prunable").
pub(super) fn restore_gitfile(
    wt: &Path,
    entry: &Path,
    q: &mut Quarantine,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Result<(), NfError> {
    let dir = match Dir::open_abs(wt) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    let name = OsStr::new(".git");
    let path = wt.join(".git");
    let st = dir.stat(name)?;
    if let Some(st) = &st {
        if st.kind == Kind::File {
            let (bytes, _) = dir.read(name, 1 << 20)?;
            let text = String::from_utf8_lossy(&bytes);
            if let Some(t) = text.strip_prefix("gitdir: ") {
                let t = Path::new(t.trim_end_matches(['\n', '\r']));
                if normalize(&wt.join(t)) == normalize(entry) {
                    return Ok(());
                }
            }
        }
        let (qdir, qname, dest) = q.slot(&Key::Abs(path.clone()))?;
        dir.move_out(name, &qdir, &qname)?;
        emit(
            mk(
                EventKind::Quarantined,
                format!("{} moved to {}", path.display(), dest.display()),
            )
            .path(&path)
            .with("quarantine", dest.display().to_string())
            .with("was", st.kind.name()),
        );
    }
    dir.write_atomic(
        name,
        format!("gitdir: {}\n", entry.display()).as_bytes(),
        0o644,
    )?;
    emit(
        mk(
            EventKind::WorktreeEntryRestored,
            format!("{} rewritten to name its worktree entry", path.display()),
        )
        .path(&path),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// restore

/// The quarantine folder of one run: `<state>.quarantine/<time>-<pid>/`.
pub(super) struct Quarantine {
    pub(super) base: PathBuf,
    pub(super) root: Option<Dir>,
    pub(super) n: usize,
}

impl Quarantine {
    pub(super) fn new(state: &Path) -> Quarantine {
        let mut name = state.file_name().unwrap_or_default().to_os_string();
        name.push(".quarantine");
        let stamp = crate::events::rfc3339_now().replace(':', "");
        Quarantine {
            base: state
                .with_file_name(name)
                .join(format!("{stamp}-{}", std::process::id())),
            root: None,
            n: 0,
        }
    }

    /// Where `key`'s current version goes: `<base>/git-dir/<rel>` (or `include/<abs>`),
    /// folders made and opened **without following links** — what was moved in earlier in
    /// this run is the agent's, and may be a link (a `worktrees/<id>` swapped for a link to
    /// anywhere). When that path is taken or blocked, a flat unique name is used instead:
    /// `<base>/<n>-<rel with / as %>`. The base itself is the owner's (next to the state file).
    pub(super) fn slot(&mut self, key: &Key) -> Result<(Dir, OsString, PathBuf), NfError> {
        if self.root.is_none() {
            std::fs::create_dir_all(&self.base).map_err(|e| NfError::Io {
                path: self.base.clone(),
                op: "mkdir",
                source: e,
            })?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.base, std::fs::Permissions::from_mode(0o700));
            self.root = Some(Dir::open_trusted(&self.base)?);
        }
        let root = self.root.as_ref().expect("opened above");
        let rel = match key {
            Key::Rel(r) => Path::new("git-dir").join(r),
            Key::Abs(p) => Path::new("include").join(p.strip_prefix("/").unwrap_or(p)),
        };
        let (Some(parent_rel), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(NfError::Escape { path: rel.clone() });
        };
        let nested = root
            .mkdir(parent_rel.as_os_str(), 0o700)
            .and_then(|()| root.walk(parent_rel))
            .and_then(|d| d.stat(name).map(|st| (d, st)));
        if let Ok((d, None)) = nested {
            return Ok((d, name.to_os_string(), self.base.join(&rel)));
        }
        // Taken, or blocked by something moved in earlier (possibly a link): a flat name.
        self.n += 1;
        let flat: OsString =
            format!("{}-{}", self.n, rel.to_string_lossy().replace('/', "%")).into();
        let dest = self.base.join(&flat);
        Ok((root.walk(Path::new(""))?, flat, dest))
    }
}

pub(super) fn restore_one(
    state: &State,
    root: &Dir,
    d: &Diff,
    q: &mut Quarantine,
    mk: &dyn Fn(EventKind, String) -> Event,
    emit: &mut dyn FnMut(Event),
) -> Result<(), NfError> {
    let common = &state.common_dir;
    // The folder holding the entry, opened without following links, and the entry's name.
    let (parent, name): (Dir, &OsStr) = match &d.key {
        Key::Rel(r) => {
            let (p, n) = split(r);
            match root.walk(Path::new(p)) {
                Ok(dir) => (dir, OsStr::new(n)),
                // A parent that is gone was moved aside with its parent, or will be recreated
                // by the parent's own restore, which sorts first.
                Err(e)
                    if e.is_not_found()
                        && (d.plan == Plan::Quarantine || matches!(d.before, Node::Absent)) =>
                {
                    return Ok(())
                }
                Err(e) => return Err(e),
            }
        }
        Key::Abs(p) => {
            let (Some(pp), Some(n)) = (p.parent(), p.file_name()) else {
                return Err(NfError::Escape { path: p.clone() });
            };
            (Dir::open_abs(pp)?, n)
        }
    };
    let path = d.key.path(common);
    let now = read_node(&parent, name).or_else(|e| match e {
        // A fifo or oversized file is still "something there" to move aside.
        NfError::NotRegular { .. } | NfError::TooLarge { .. } => {
            Ok(Node::Special { kind: Kind::Fifo })
        }
        e => Err(e),
    })?;
    let restored_kind = match &d.key {
        Key::Rel(r) if r.starts_with("worktrees/") => EventKind::WorktreeEntryRestored,
        _ => EventKind::GitDirEntryRestored,
    };
    let rel_str = match &d.key {
        Key::Rel(r) => r.clone(),
        Key::Abs(_) => String::new(),
    };
    if d.plan == Plan::Restore && same(&rel_str, &d.before, &now) {
        return Ok(());
    }
    // 1. The agent's version goes aside (a folder that should be a folder stays).
    let keep_dir = matches!((&d.before, &now), (Node::Dir { .. }, Node::Dir { .. }))
        && d.plan == Plan::Restore;
    if !matches!(now, Node::Absent) && !keep_dir {
        let (qdir, qname, dest) = q.slot(&d.key)?;
        parent.move_out(name, &qdir, &qname)?;
        emit(
            mk(
                EventKind::Quarantined,
                format!("{} moved to {}", path.display(), dest.display()),
            )
            .path(&path)
            .with("quarantine", dest.display().to_string())
            .with("was", now.kind_name()),
        );
    }
    if d.plan == Plan::Quarantine {
        return Ok(());
    }
    // 2. The baseline back.
    match &d.before {
        Node::Absent => return Ok(()),
        Node::File { mode, content, oid } => {
            let bytes = content.bytes().ok_or_else(|| NfError::Io {
                path: path.clone(),
                op: "restore",
                source: std::io::Error::other("state file content is damaged"),
            })?;
            parent.write_atomic(name, &bytes, *mode)?;
            emit(
                mk(
                    restored_kind,
                    format!("{} rewritten from the baseline", path.display()),
                )
                .path(&path)
                .with("oid", oid.clone()),
            );
        }
        Node::Dir { mode } => {
            if !keep_dir {
                parent.mkdir(name, *mode)?;
                emit(
                    mk(
                        restored_kind,
                        format!("{} recreated as a folder", path.display()),
                    )
                    .path(&path),
                );
            }
        }
        Node::Link { target } => {
            parent.symlink(target, name)?;
            emit(
                mk(
                    restored_kind,
                    format!("{} recreated as a link to {target}", path.display()),
                )
                .path(&path),
            );
        }
        Node::Special { kind } => {
            return Err(NfError::Io {
                path: path.clone(),
                op: "restore",
                source: std::io::Error::other(format!(
                    "baseline was a {}; not recreated",
                    kind.name()
                )),
            });
        }
    }
    Ok(())
}
