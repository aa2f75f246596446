//! `safe-git would-lose-work <worktree>`: would removing this worktree lose work?
//!
//! `git status --porcelain` is not that answer over a repository an agent wrote: index flags
//! (assume-unchanged, skip-worktree, fsmonitor-valid), stat data planted in the index, and
//! config (`status.showUntrackedFiles=no`, `diff.ignoreSubmodules`,
//! `submodule.<name>.ignore`, `core.ignoreStat`, `core.checkStat`, `core.trustctime`,
//! `core.untrackedCache`, `core.fileMode`, excludes from `info/exclude` or `core.excludesFile`)
//! all make changes look clean. This check trusts none of them:
//!
//! - every tracked file is compared byte for byte with what git would check out from its
//!   index entry (the blob itself, else `cat-file --filters`: eol conversion, the owner's
//!   smudge filters), whatever the entry's flags or stat data say, so neither
//!   assume-unchanged / skip-worktree / fsmonitor-valid nor planted stat data nor
//!   `core.autocrlf` / `eol` / `text` attributes hide a change; a tracked symbolic link is
//!   compared by its target; a populated submodule is asked the same question, recursively;
//! - the index is compared with `HEAD` by object ids (`diff-index --cached`);
//! - untracked **and ignored** files are listed (`status --untracked-files=all
//!   --ignored=matching --ignore-submodules=none`, the command line beating every config);
//!   submodules with changes are listed by the same status;
//! - a stash, and commits reachable from this worktree's `HEAD` and from no branch (other
//!   than its own), tag or remote-tracking ref, count as work;
//! - git's listing is not taken as complete: the work tree is walked without git
//!   ([`super::unlisted`]: what git's walk skips, a `.git` component below the top, is
//!   `unlisted` work; a folder that cannot be read, or any warning from git status, leaves
//!   the answer open);
//! - what `worktree remove` deletes besides the work tree counts: an object that only the
//!   worktree's own state names ([`super::admin`]: per-worktree refs, HEAD reflog,
//!   pseudorefs, autostash, rebase/sequencer/bisect state) is `held` work.
//!
//! Exit: 0 nothing would be lost, 1 work would be lost (listed), 2 cannot tell (a git step
//! failed or warned, a folder or admin-dir entry unreadable or not git's); the layout and
//! config refusals of safe-git (120–124) come first.

use super::plan::{plan, Plan};
use super::request::{Refusal, Request};
use super::unlisted::Accounted;
use serde_json::json;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// One piece of work that removing the worktree would lose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// `modified`, `staged`, `untracked`, `ignored`, `unlisted`, `submodule`, `stash`,
    /// `commits`, `held`.
    pub kind: &'static str,
    pub what: String,
}

/// Why the question could not be answered.
#[derive(Debug)]
pub enum Unknown {
    Refused(Refusal),
    Git(String),
}

/// Config forced for every step: the owner's view, not the repository's.
const FORCE: &[(&str, &str)] = &[
    ("core.ignoreStat", "false"),
    ("core.checkStat", "default"),
    ("core.trustctime", "true"),
    ("core.untrackedCache", "false"),
    ("core.fileMode", "true"),
    ("core.splitIndex", "false"),
    ("status.showUntrackedFiles", "all"),
    ("diff.ignoreSubmodules", "none"),
    ("status.relativePaths", "false"),
    ("core.ignoreCase", "false"),
];

struct Runner {
    plan: Plan,
    worktree: PathBuf,
}

impl Runner {
    fn git3(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
    ) -> Result<(i32, Vec<u8>, Vec<u8>), Unknown> {
        let mut argv: Vec<OsString> = Vec::new();
        for (k, v) in FORCE {
            argv.push("-c".into());
            argv.push(format!("{k}={v}").into());
        }
        argv.extend(args.iter().map(OsString::from));
        let mut cmd =
            self.plan
                .defused
                .command(&self.plan.git, self.plan.inherited.iter().cloned(), argv);
        cmd.current_dir(&self.worktree)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Unknown::Git(format!("cannot run git: {e}")))?;
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&data);
            });
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Unknown::Git(format!("git: {e}")))?;
        let code = match out.status.code() {
            Some(c) => c,
            None => {
                use std::os::unix::process::ExitStatusExt;
                let sig = out.status.signal().unwrap_or(0);
                // SIGXCPU: the bound of `super::cpu`, inherited from this process.
                let why = if sig == nix::sys::signal::Signal::SIGXCPU as i32 {
                    " (the CPU limit: --cpu-limit / SAFE_GIT_CPU_LIMIT)"
                } else {
                    ""
                };
                return Err(Unknown::Git(format!(
                    "git {} was killed by signal {sig}{why}",
                    args.join(" ")
                )));
            }
        };
        Ok((code, out.stdout, out.stderr))
    }

    fn git(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<(i32, Vec<u8>), Unknown> {
        self.git3(args, stdin).map(|(c, o, _)| (c, o))
    }

    fn ok(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, Unknown> {
        match self.git(args, stdin)? {
            (0, out) => Ok(out),
            (code, _) => Err(Unknown::Git(format!(
                "git {} exited with {code}",
                args.join(" ")
            ))),
        }
    }
}

/// How deep submodules are followed: safe-git's one bound ([`super::locate`]'s).
const MAX_DEPTH: usize = super::locate::MAX_SUBMODULE_DEPTH;

/// The SHA-1 blob id of `data`, as `git hash-object --no-filters` computes it.
fn blob_id(data: &[u8]) -> Option<String> {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, data)
        .ok()
        .map(|h| h.to_hex().to_string())
}

/// A regular file, opened without following a link and without blocking on a fifo, and its
/// size.
fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    use nix::fcntl::OFlag;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let md = f.metadata()?;
    if !md.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((f, md.len()))
}

/// A regular file's bytes, opened as [`open_regular`] does.
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let (mut f, _) = open_regular(path)?;
    let mut v = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut v)?;
    Ok(v)
}

/// The SHA-1 blob id of the `size` bytes `f` holds, read in pieces (nothing of the file is
/// kept); `None` when the file does not hold exactly `size` bytes.
fn blob_id_of_file(f: &mut std::fs::File, size: u64) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    h.update(&gix::objs::encode::loose_header(
        gix::objs::Kind::Blob,
        size,
    ));
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = 0u64;
    let mut limited = f.take(size.saturating_add(1));
    loop {
        let n = limited.read(&mut buf)?;
        if n == 0 {
            break;
        }
        seen += n as u64;
        h.update(&buf[..n]);
    }
    if seen != size {
        return Ok(None);
    }
    Ok(h.try_finalize().ok().map(|id| id.to_hex().to_string()))
}

/// At most `size` + 1 bytes of `f` from its start.
fn read_at_most(f: &mut std::fs::File, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    f.rewind()?;
    let mut v = Vec::new();
    f.take(size.saturating_add(1)).read_to_end(&mut v)?;
    Ok(v)
}

/// The size of each blob of `oids`, from one `cat-file --batch-check` (missing ones absent).
fn blob_sizes(
    r: &Runner,
    oids: impl Iterator<Item = String>,
) -> Result<std::collections::HashMap<String, u64>, Unknown> {
    let input: String = oids.map(|o| o + "\n").collect();
    if input.is_empty() {
        return Ok(Default::default());
    }
    let out = r.ok(&["cat-file", "--batch-check"], Some(input.as_bytes()))?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let (oid, kind, size) = (w.next()?, w.next()?, w.next()?);
            (kind == "blob").then(|| Some((oid.to_owned(), size.parse().ok()?)))?
        })
        .collect())
}

/// Answer the question for `worktree` (a work tree folder, main or linked).
pub fn would_lose_work(req: &Request, worktree: &Path) -> Result<Vec<Loss>, Unknown> {
    would_lose_work_at(req, worktree, 0)
}

fn would_lose_work_at(req: &Request, worktree: &Path, depth: usize) -> Result<Vec<Loss>, Unknown> {
    if depth > MAX_DEPTH {
        return Err(Unknown::Git(format!(
            "{}: submodules nested deeper than {MAX_DEPTH}",
            worktree.display()
        )));
    }
    let worktree = req.cwd.join(worktree);
    let mut sub = req.clone();
    sub.args = vec![
        "-C".into(),
        worktree.clone().into_os_string(),
        "status".into(),
    ];
    let plan = plan(&sub).map_err(Unknown::Refused)?;
    // The whole work tree, whichever folder of it was named.
    let Some(top) = plan.location.as_ref().and_then(|l| l.work_tree.clone()) else {
        return Err(Unknown::Git(format!(
            "{}: not in a work tree of a git repository",
            worktree.display()
        )));
    };
    let r = Runner {
        plan,
        worktree: top,
    };
    let mut out = Vec::new();

    // Tracked files, hashed as `git add` would hash them, against the index.
    let entries = r.ok(&["ls-files", "-s", "-z"], None)?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut accounted = Accounted::default();
    for raw in entries.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        if let Some(tab) = raw.iter().position(|&b| b == b'\t') {
            accounted.files.insert(raw[tab + 1..].to_vec());
        }
        let rec = String::from_utf8_lossy(raw);
        let Some((meta, path)) = rec.split_once('\t') else {
            return Err(Unknown::Git(format!("ls-files printed {rec:?}")));
        };
        let mut m = meta.split(' ');
        let (mode, oid, stage) = (m.next(), m.next(), m.next());
        let (Some(mode), Some(oid), Some(stage)) = (mode, oid, stage) else {
            return Err(Unknown::Git(format!("ls-files printed {rec:?}")));
        };
        if stage != "0" {
            out.push(Loss {
                kind: "modified",
                what: format!("{path} (unmerged)"),
            });
            continue;
        }
        let full = r.worktree.join(path);
        match mode {
            "160000" => {
                // A populated submodule: asked the same question, recursively (its git dir
                // may go with this worktree's admin dir).
                if std::fs::symlink_metadata(full.join(".git")).is_ok() {
                    accounted.folders.insert(path.as_bytes().to_vec());
                    for l in would_lose_work_at(req, &full, depth + 1)? {
                        out.push(Loss {
                            kind: l.kind,
                            what: format!("{path}/{}", l.what),
                        });
                    }
                }
            }
            "120000" if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_symlink()) => {
                let same = std::fs::read_link(&full).ok().is_some_and(|t| {
                    use std::os::unix::ffi::OsStrExt;
                    blob_id(t.as_os_str().as_bytes()).as_deref() == Some(oid)
                });
                if !same {
                    out.push(Loss {
                        kind: "modified",
                        what: path.to_owned(),
                    });
                }
            }
            _ => match std::fs::symlink_metadata(&full) {
                Ok(md) if md.is_file() => files.push((path.to_owned(), oid.to_owned())),
                Ok(_) => out.push(Loss {
                    kind: "modified",
                    what: format!("{path} (type changed)"),
                }),
                // A tracked file that is gone: its content is in the index or HEAD.
                Err(_) => {}
            },
        }
    }
    // Each tracked file against what git would check out from its index entry: the same
    // bytes as the blob (no conversion), else the same bytes as `cat-file --filters` gives
    // (eol conversion, the owner's smudge filters). Flags and stat data play no part.
    // A file is read only as far as something git produced is long: hashed when its size is
    // its blob's, compared when its size is the checkout's. A tracked file grown to a huge
    // sparse file (red team R17-3) is then "modified" without reading its holes, and no file
    // is held in memory beyond the size of a blob or checkout git produced.
    let sizes = blob_sizes(&r, files.iter().map(|(_, oid)| oid.clone()))?;
    for (path, oid) in &files {
        let full = r.worktree.join(path);
        let unreadable = || Loss {
            kind: "modified",
            what: format!("{path} (unreadable)"),
        };
        let Ok((mut f, size)) = open_regular(&full) else {
            out.push(unreadable());
            continue;
        };
        if sizes.get(oid) == Some(&size) {
            match blob_id_of_file(&mut f, size) {
                Ok(Some(id)) if id == *oid => continue,
                Ok(_) => {}
                Err(_) => {
                    out.push(unreadable());
                    continue;
                }
            }
        }
        let path_arg = format!("--path={path}");
        let same = match r.git(&["cat-file", "--filters", &path_arg, oid], None)? {
            (0, checkout) if checkout.len() as u64 == size => match read_at_most(&mut f, size) {
                Ok(bytes) => checkout == bytes,
                Err(_) => {
                    out.push(unreadable());
                    continue;
                }
            },
            // Another length, or the index names a blob git cannot produce (the file is
            // then the only copy).
            _ => false,
        };
        if !same {
            out.push(Loss {
                kind: "modified",
                what: path.clone(),
            });
        }
    }
    // Staged changes: index against HEAD by object ids (no stat data involved).
    let head = r.git(&["rev-parse", "--verify", "-q", "HEAD"], None)?.0 == 0;
    if head {
        let staged = r.ok(
            &[
                "diff-index",
                "--cached",
                "--name-only",
                "-z",
                "--no-renames",
                "--ignore-submodules=none",
                "HEAD",
            ],
            None,
        )?;
        for p in staged.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            out.push(Loss {
                kind: "staged",
                what: String::from_utf8_lossy(p).into_owned(),
            });
        }
    }
    // Untracked and ignored files, submodules with changes.
    // git's walk only warns about a folder it cannot open and goes on: any warning from it
    // means the listing may be short, so the answer is "cannot tell".
    let status_args = [
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
        "--ignore-submodules=none",
        "--no-renames",
    ];
    let (code, status, err) = r.git3(&status_args, None)?;
    if code != 0 || !err.is_empty() {
        let first = String::from_utf8_lossy(&err);
        return Err(Unknown::Git(format!(
            "git status exited with {code}: {}",
            first.lines().next().unwrap_or("").trim()
        )));
    }
    for raw in status.split(|&b| b == 0).filter(|r| r.len() > 3) {
        let rec = String::from_utf8_lossy(raw);
        let (xy, path) = rec.split_at(3);
        if matches!(xy.trim(), "??" | "!!") {
            let p = &raw[3..];
            match p.strip_suffix(b"/") {
                Some(folder) => accounted.folders.insert(folder.to_vec()),
                None => accounted.files.insert(p.to_vec()),
            };
        }
        let kind = match xy.trim() {
            "??" => "untracked",
            "!!" => "ignored",
            _ => {
                let is_sub = r.worktree.join(path).join(".git").exists();
                if !is_sub {
                    continue; // tracked files: compared by content above
                }
                "submodule"
            }
        };
        out.push(Loss {
            kind,
            what: path.to_owned(),
        });
    }
    // Every file below the top that git neither tracks nor listed (a `.git` component below
    // the top, a folder git could not open): walked here without git, and lost with the rest.
    let unlisted = super::unlisted::walk(&r.worktree, &accounted)
        .map_err(|e| Unknown::Git(format!("walking the work tree: {e}")))?;
    for p in unlisted {
        out.push(Loss {
            kind: "unlisted",
            what: String::from_utf8_lossy(&p).into_owned(),
        });
    }
    // Stashes (shared by every worktree, listed because a destroy script asks about them).
    if r.git(&["rev-parse", "--verify", "-q", "refs/stash"], None)?
        .0
        == 0
    {
        let n = r.ok(
            &["rev-list", "--walk-reflogs", "--count", "refs/stash"],
            None,
        )?;
        out.push(Loss {
            kind: "stash",
            what: format!("{} stash entries", String::from_utf8_lossy(&n).trim()),
        });
    }
    // Commits only this worktree's HEAD reaches.
    let kept = kept_tips(&r)?;
    if head {
        let n = r.ok(
            &["rev-list", "--count", "--stdin"],
            Some(format!("HEAD\n{kept}").as_bytes()),
        )?;
        let n = String::from_utf8_lossy(&n).trim().to_owned();
        if n != "0" {
            out.push(Loss {
                kind: "commits",
                what: format!("{n} commits reachable from HEAD only"),
            });
        }
    }
    held_by_worktree_state(&r, &kept, &mut out)?;
    Ok(out)
}

/// The tips that keep an object after the worktree is gone, as `^<id>` lines for
/// `rev-list --stdin`: every branch other than this worktree's own, tag and
/// remote-tracking ref that is **not a symbolic ref**, and of the remote-tracking refs only
/// those a fetch, clone or push set.
///
/// A symbolic ref is resolved from the worktree git runs in, so `refs/heads/keep` →
/// `refs/worktree/foo` (or `HEAD`, or a `refs/bisect/…`) names this worktree's private ref,
/// which `worktree remove` deletes (eighth red-team pass, R8-4: `--branches` counted it as a
/// kept branch). A symbolic ref to a shared ref loses nothing by this: that ref is listed
/// itself.
///
/// A remote-tracking ref keeps an object only while the remote has it: the owner's
/// `fetch --prune` deletes one the remote lacks. One set by `git update-ref` (or any command
/// but fetch, clone and push) says nothing about the remote (ninth red-team pass, R9-10), so
/// it keeps nothing; see [`set_by_the_remote`]. The rule is against mistakes, not forgery: an
/// agent that forges a reflog can only lose its own work, which it could delete anyway.
fn kept_tips(r: &Runner) -> Result<String, Unknown> {
    let own = match r.git(&["symbolic-ref", "-q", "HEAD"], None)? {
        (0, b) => Some(String::from_utf8_lossy(&b).trim().to_owned()),
        _ => None,
    };
    let common = r.ok(
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        None,
    )?;
    let common = PathBuf::from(String::from_utf8_lossy(&common).trim());
    let refs = r.ok(
        &[
            "for-each-ref",
            "--format=%(objectname) %(refname) %(symref)",
            "refs/heads/",
            "refs/tags/",
            "refs/remotes/",
        ],
        None,
    )?;
    let mut kept = String::new();
    for l in String::from_utf8_lossy(&refs).lines() {
        let mut f = l.splitn(3, ' ');
        let (Some(id), Some(name), symref) = (f.next(), f.next(), f.next()) else {
            return Err(Unknown::Git(format!("for-each-ref printed {l:?}")));
        };
        if !symref.unwrap_or("").is_empty() || own.as_deref() == Some(name) {
            continue;
        }
        if name.starts_with("refs/remotes/") && !set_by_the_remote(&common, name, id)? {
            continue;
        }
        kept.push('^');
        kept.push_str(id);
        kept.push('\n');
    }
    Ok(kept)
}

/// Whether the remote-tracking ref `name` (now at `id`) was last set from the remote: its
/// reflog's newest entry is a fetch's (`fetch …`, `pull …`), a clone's (`clone: …`) or a
/// push's (`update by push`) and records `id`. A ref without a reflog is taken as set from
/// the remote: `git clone` writes its remote-tracking refs with none, and `update-ref`
/// writes one for `refs/remotes/` whenever `core.logAllRefUpdates` is on (git's default in a
/// work tree). The reflog is read without following a link or blocking on a FIFO; one that
/// cannot be read as a regular file is an answer git cannot give (exit 2).
fn set_by_the_remote(common: &Path, name: &str, id: &str) -> Result<bool, Unknown> {
    let path = common.join("logs").join(name);
    let log = match read_regular(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(Unknown::Git(format!("{}: {e}", path.display()))),
    };
    let Some(last) = log.split(|&b| b == b'\n').rev().find(|l| !l.is_empty()) else {
        return Ok(true);
    };
    let last = String::from_utf8_lossy(last);
    let (head, msg) = last.split_once('\t').unwrap_or((&last, ""));
    let new = head.split(' ').nth(1).unwrap_or("");
    let from_remote = crate::catalogue::REMOTE_REFLOG_MESSAGES
        .iter()
        .any(|p| msg.starts_with(p));
    Ok(from_remote && new == id && !from_itself(common, msg))
}

/// A fetch or pull whose command line (the reflog message up to `: `) names this repository
/// as the remote: `git fetch . +HEAD:refs/remotes/origin/wip` writes a genuine fetch entry
/// for a ref the remote never had (eleventh red-team pass, R11-5). `.`, and a path that is
/// the repository's common dir, its main work tree, or any worktree's work tree, `.git` or
/// admin dir (as written, from the main work tree or absolute; R12-3), count.
fn from_itself(common: &Path, msg: &str) -> bool {
    if !(msg.starts_with("fetch") || msg.starts_with("pull")) {
        return false;
    }
    let line = msg.split_once(": ").map_or(msg, |(l, _)| l);
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    // The repository's own places: its common dir and main work tree, and every worktree's
    // admin dir and work tree (a fetch from the worktree about to be removed, R12-3).
    let mut places: Vec<PathBuf> = vec![common.to_path_buf()];
    places.extend(common.parent().map(Path::to_path_buf));
    if let Ok(rd) = std::fs::read_dir(common.join("worktrees")) {
        for e in rd.flatten() {
            let admin = e.path();
            if let Ok(b) = read_regular(&admin.join("gitdir")) {
                let g = PathBuf::from(String::from_utf8_lossy(&b).trim());
                places.extend(g.parent().map(Path::to_path_buf));
                places.push(g);
            }
            places.push(admin);
        }
    }
    let mine: Vec<PathBuf> = places.iter().filter_map(|p| canon(p)).collect();
    let base = common.parent().unwrap_or(common);
    line.split_whitespace().skip(1).any(|w| {
        if w.starts_with('-') {
            return false;
        }
        let w = w.trim_end_matches('/');
        w == "." || w == ".git" || canon(&base.join(w)).is_some_and(|c| mine.contains(&c))
    })
}

/// Objects that only this worktree's own state names (its admin dir, or the main worktree's
/// per-worktree refs, reflog, pseudorefs and operation state: see [`super::admin`]): lost
/// when `worktree remove` deletes that state. The refs that keep an object are the same as
/// for `HEAD` above ([`kept_tips`]).
fn held_by_worktree_state(r: &Runner, kept: &str, out: &mut Vec<Loss>) -> Result<(), Unknown> {
    let dirs = r.ok(
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
        ],
        None,
    )?;
    let dirs = String::from_utf8_lossy(&dirs).into_owned();
    let mut lines = dirs.lines();
    let (Some(git_dir), Some(common)) = (lines.next(), lines.next()) else {
        return Err(Unknown::Git(format!("rev-parse printed {dirs:?}")));
    };
    let linked = std::fs::canonicalize(git_dir).ok() != std::fs::canonicalize(common).ok();
    let state = super::admin::read(Path::new(git_dir), linked)
        .map_err(|e| Unknown::Git(format!("reading the worktree's state: {e}")))?;
    if state.am_in_progress {
        out.push(Loss {
            kind: "held",
            what: "rebase-apply/ (git am stopped: its patches are in no commit)".into(),
        });
    }
    for (file, ids) in &state.ids {
        // Ids of objects that exist (a message may quote an id of nothing), abbreviated ones
        // of a todo list resolved; one git cannot tell apart leaves the answer open.
        let batch = r.ok(
            &["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            Some(format!("{}\n", ids.join("\n")).as_bytes()),
        )?;
        let batch = String::from_utf8_lossy(&batch).into_owned();
        let mut present: Vec<&str> = Vec::new();
        for l in batch.lines() {
            match l.split_once(' ') {
                Some((id, "commit" | "tree" | "blob" | "tag")) => present.push(id),
                Some((_, "missing")) => {}
                _ => {
                    return Err(Unknown::Git(format!(
                        "{file}: git cat-file --batch-check printed {l:?}"
                    )))
                }
            }
        }
        if present.is_empty() {
            continue;
        }
        let listed = r.ok(
            &["rev-list", "--objects", "--stdin"],
            Some(format!("{}\n{kept}", present.join("\n")).as_bytes()),
        )?;
        let n = listed
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        if n != 0 {
            out.push(Loss {
                kind: "held",
                what: format!("{file}: {n} objects named only here"),
            });
        }
    }
    Ok(())
}

/// Human or JSON report.
pub fn render(worktree: &Path, losses: &[Loss], json_format: bool) -> String {
    if json_format {
        let v = json!({
            "worktree": worktree,
            "would_lose_work": !losses.is_empty(),
            "work": losses.iter().map(|l| json!({"kind": l.kind, "path": l.what})).collect::<Vec<_>>(),
        });
        return format!("{v}\n");
    }
    let mut s = String::new();
    for l in losses {
        s.push_str(&format!("{}: {}\n", l.kind, l.what));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file is hashed in pieces to what `git hash-object` gives for its bytes (one piece
    /// and several), and a file that does not hold exactly the size asked for has no id.
    #[test]
    fn a_file_is_hashed_in_pieces_as_a_blob() {
        let t = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 64 * 1024, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let p = t.path().join(format!("f{len}"));
            std::fs::write(&p, &data).unwrap();
            let (mut f, size) = open_regular(&p).unwrap();
            assert_eq!(size, len as u64);
            assert_eq!(blob_id_of_file(&mut f, size).unwrap(), blob_id(&data));
            let (mut f, _) = open_regular(&p).unwrap();
            assert_eq!(blob_id_of_file(&mut f, size + 1).unwrap(), None);
            if len > 0 {
                let (mut f, _) = open_regular(&p).unwrap();
                assert_eq!(blob_id_of_file(&mut f, size - 1).unwrap(), None);
            }
            assert_eq!(read_at_most(&mut f, size).unwrap(), data);
        }
        // Known value: `printf x | git hash-object --stdin`.
        std::fs::write(t.path().join("x"), "x").unwrap();
        let (mut f, size) = open_regular(&t.path().join("x")).unwrap();
        assert_eq!(
            blob_id_of_file(&mut f, size).unwrap().as_deref(),
            Some("c1b0730e0133447badcfd47fd144e254807b06e1")
        );
        // At most size + 1 bytes are read, whatever the file holds.
        assert_eq!(read_at_most(&mut f, 0).unwrap(), b"x");
    }
}
