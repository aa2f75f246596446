//! bubblewrap from a [`Plan`] (`agent-shell --sandbox bwrap`): every bound path is opened
//! again, component by component without following links, and bound from that descriptor
//! (`--bind-fd`, `--ro-bind-fd`).
//!
//! # Why
//!
//! A plan names paths; between planning and binding, anything that can write the git dir
//! (another session, a job left behind) can swap a folder for a link. bubblewrap's `--bind
//! SRC` would follow it and bind whatever the link names. Opening each source with
//! `O_PATH | O_NOFOLLOW` from `/` down, and checking the file type on the descriptor, turns a
//! swapped-in link into a refusal ([`SandboxError::Link`]) rather than a bind of its target.
//!
//! # Invariants
//!
//! - The base is read-only (`--ro-bind / /`), with `--unshare-all` (no network unless asked),
//!   `--die-with-parent`, `--new-session`, `--cap-drop ALL`; only the plan's writable roots are writable.
//! - With [`Base::inner_step`], the command runs under the plan's Landlock ruleset
//!   ([`landlock`]): no FIFO or device is made outside the sandbox's private tmpfs trees.
//! - Unless the plan allows Unix sockets, the command runs under the Unix-socket filter
//!   (`--seccomp`, [`crate::plan::seccomp`]): `socket(AF_UNIX)` fails with `EPERM`, so no
//!   pathname socket anywhere (`$HOME`, `/var/lib`, `/srv`) is reachable.
//! - Every folder between a writable root and a mount below it is an anchor, bound onto
//!   itself ([`Plan::anchors`]): renaming a folder that holds a mount point moves the mount
//!   with it, renaming a mount point fails (`EBUSY`).
//! - The binds go in the plan's order ([`Plan::mounts`]), parents first, each descriptor's type matching the
//!   plan's (a file where a folder was planned is refused too).
//! - Placeholders: an empty read-only regular file (`--ro-bind-data` from an empty pipe) for a
//!   file, an empty read-only tmpfs for a folder; git reads both as empty.
//! - A placeholder needs a mount point, which bubblewrap creates on the host (an empty file or
//!   folder). [`Prepared::stubs`] lists the names it will create; [`Prepared::remove_stubs`]
//!   removes each one after the sandbox ends, only while it is still an empty file or an
//!   empty folder, so nothing anyone wrote is ever removed, and only when no other sandbox
//!   of the repository runs ([`lock_shared`], [`last_out`]): removing a mount point detaches
//!   it in every mount namespace.

pub mod landlock;
pub mod lines;

use crate::plan::{EntryKind, Mount, Plan, UnixRule};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode, SFlag};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// Where bubblewrap is looked for (never `PATH`: the agent can write folders on it).
pub const BWRAP_PATHS: &[&str] = &["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];

/// Why the sandbox cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A symbolic link on a bound path: refused, never followed.
    #[error("{}: link refused (a symbolic link where the plan has a {expected}; not bound)", .path.display())]
    Link {
        path: PathBuf,
        expected: &'static str,
    },
    /// The path is now of another type than planned.
    #[error("{}: is a {found}, the plan has a {expected}; not bound", .path.display())]
    Kind {
        path: PathBuf,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{}: cannot open for binding: {source}", .path.display())]
    Open { path: PathBuf, source: nix::Error },
    #[error("bubblewrap not found (looked for {})", BWRAP_PATHS.join(", "))]
    NoBwrap,
    /// The plan denies Unix sockets and there is no filter for this architecture: the
    /// sandbox would not keep its promise, so it is not started.
    #[error("{arch}: no Unix-socket filter for this architecture (x86_64, aarch64); set unix_sockets = \"allow\" in the policy to run without it")]
    NoSeccomp { arch: &'static str },
    /// The plan's special-file rule needs Landlock and the kernel has too little of it, and
    /// the policy requires the rule ([`crate::plan::landlock::Decision::Refuse`]).
    #[error("this kernel offers Landlock ABI {abi} (the special-file rule needs {min}): without it a FIFO the agent makes in the work tree or git dir hangs the owner's git (R9-5); set landlock = \"optional\" in the policy to run without the rule")]
    NoLandlock { abi: u32, min: u32 },
}

/// A sandbox ready to start: bubblewrap's arguments up to `--`, the descriptors they name
/// (inherited by bubblewrap), the mount points it will create.
#[derive(Debug)]
pub struct Prepared {
    pub bwrap: PathBuf,
    pub args: Vec<OsString>,
    fds: Vec<OwnedFd>,
    /// Names bubblewrap creates on the host as mount points for placeholders (parents first).
    pub stubs: Vec<(PathBuf, EntryKind)>,
    /// The read end of bubblewrap's `--json-status-fd` (non-blocking).
    status: OwnedFd,
    /// What bubblewrap runs before the command (the Landlock inner step), if anything.
    pub inner: Vec<OsString>,
}

/// The sandbox's shape besides the plan.
#[derive(Debug, Clone, Default)]
pub struct Base {
    /// Keep the network (`--share-net`).
    pub network: bool,
    /// Files the agent's tools append to (the audit log): bound writable, opened no-follow.
    pub writable_files: Vec<PathBuf>,
    /// `(destination, FIFO)`: a FIFO bound read-only over the destination, so the tools inside
    /// append to it (a FIFO opens for writing on a read-only mount) and cannot truncate or
    /// rewrite what is already logged ([`Relay`]).
    pub relays: Vec<(PathBuf, PathBuf)>,
    /// The folder the command starts in.
    pub chdir: Option<PathBuf>,
    /// The agent-shell binary that applies the plan's Landlock ruleset inside the sandbox
    /// ([`landlock`]): bubblewrap runs it first, it execs the command. `None`: no ruleset.
    pub inner_step: Option<PathBuf>,
}

/// The bubblewrap binary, from [`BWRAP_PATHS`].
pub fn find_bwrap() -> Result<PathBuf, SandboxError> {
    BWRAP_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(SandboxError::NoBwrap)
}

/// Open `path` (absolute) from `/` down without following a link anywhere, as an `O_PATH`
/// descriptor whose type must be `kind`.
pub fn open_nofollow(path: &Path, kind: EntryKind) -> Result<OwnedFd, SandboxError> {
    let expected = match kind {
        EntryKind::File => "file",
        EntryKind::Dir => "folder",
    };
    let open_err = |source| SandboxError::Open {
        path: path.to_path_buf(),
        source,
    };
    let base = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut cur =
        nix::fcntl::open("/", base | OFlag::O_DIRECTORY, Mode::empty()).map_err(open_err)?;
    let comps: Vec<_> = path.components().collect();
    let mut here = PathBuf::from("/");
    for (i, c) in comps.iter().enumerate() {
        let name = match c {
            Component::RootDir => continue,
            Component::Normal(n) => *n,
            _ => return Err(open_err(nix::Error::EINVAL)),
        };
        here.push(name);
        let last = i + 1 == comps.len();
        let flags = if last {
            base
        } else {
            base | OFlag::O_DIRECTORY
        };
        let next = match openat(&cur, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(nix::Error::ELOOP | nix::Error::ENOTDIR) => {
                // Tell a link from a file in the way.
                let st =
                    nix::sys::stat::fstatat(&cur, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW);
                return Err(match st {
                    Ok(st)
                        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT
                            == SFlag::S_IFLNK =>
                    {
                        SandboxError::Link {
                            path: here,
                            expected: "folder",
                        }
                    }
                    _ => SandboxError::Kind {
                        path: here,
                        expected: "folder",
                        found: "file",
                    },
                });
            }
            Err(e) => {
                return Err(SandboxError::Open {
                    path: here,
                    source: e,
                })
            }
        };
        cur = next;
    }
    let st = fstat(&cur).map_err(open_err)?;
    let found = match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFLNK => {
            return Err(SandboxError::Link {
                path: path.to_path_buf(),
                expected,
            })
        }
        SFlag::S_IFDIR => EntryKind::Dir,
        SFlag::S_IFREG => EntryKind::File,
        _ => {
            return Err(SandboxError::Kind {
                path: path.to_path_buf(),
                expected,
                found: "special file",
            })
        }
    };
    if found != kind {
        return Err(SandboxError::Kind {
            path: path.to_path_buf(),
            expected,
            found: if found == EntryKind::Dir {
                "folder"
            } else {
                "file"
            },
        });
    }
    Ok(cur)
}

/// Build bubblewrap's arguments from `plan`, opening every source now.
pub fn prepare(plan: &Plan, base: &Base) -> Result<Prepared, SandboxError> {
    let bwrap = find_bwrap()?;
    let mut args: Vec<OsString> = Vec::new();
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut stubs: Vec<(PathBuf, EntryKind)> = Vec::new();
    let push = |a: &mut Vec<OsString>, items: &[&std::ffi::OsStr]| {
        a.extend(items.iter().map(|s| s.to_os_string()));
    };
    for a in [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        // Every capability dropped, whoever runs agent-shell: bubblewrap keeps them for a
        // root caller, and with CAP_SYS_ADMIN the command could unmount or remount the
        // read-only binds and write the git dir (fourth red-team pass on the plan, P-13).
        "--cap-drop",
        "ALL",
    ] {
        args.push(a.into());
    }
    if base.network {
        args.push("--share-net".into());
    }
    // Hidden trees first: a fresh tmpfs over each, so no host socket below them is
    // reachable (whenever it was made); what the plan needs there is bound back below.
    for t in &plan.hide_trees {
        let perms = if t.writable { "1777" } else { "0755" };
        push(
            &mut args,
            &[
                "--perms".as_ref(),
                perms.as_ref(),
                "--tmpfs".as_ref(),
                t.path.as_os_str(),
            ],
        );
    }
    let bind_fd =
        |args: &mut Vec<OsString>, fds: &mut Vec<OwnedFd>, flag: &str, path: &Path, kind| {
            let fd = open_nofollow(path, kind)?;
            args.push(flag.into());
            args.push(fd.as_raw_fd().to_string().into());
            args.push(path.as_os_str().to_os_string());
            fds.push(fd);
            Ok::<(), SandboxError>(())
        };
    // Kept paths below the trees: folders and files from a descriptor like every bind; a
    // socket (no descriptor bubblewrap can bind) by its path, which only root can change.
    for k in &plan.keep {
        let meta = std::fs::symlink_metadata(&k.path);
        match meta.as_ref().map(|m| m.file_type()) {
            Ok(t) if t.is_dir() => {
                bind_fd(&mut args, &mut fds, "--ro-bind-fd", &k.path, EntryKind::Dir)?
            }
            Ok(t) if t.is_file() => bind_fd(
                &mut args,
                &mut fds,
                "--ro-bind-fd",
                &k.path,
                EntryKind::File,
            )?,
            Ok(_) => push(
                &mut args,
                &["--ro-bind".as_ref(), k.path.as_os_str(), k.path.as_os_str()],
            ),
            // Gone since the plan: nothing to show.
            Err(_) => {}
        }
    }
    for m in plan.mounts() {
        let b = match m {
            Mount::Writable(p) | Mount::Anchor(p) => {
                bind_fd(&mut args, &mut fds, "--bind-fd", p, EntryKind::Dir)?;
                continue;
            }
            Mount::ReadOnly(b) => {
                bind_fd(&mut args, &mut fds, "--ro-bind-fd", &b.path, b.kind)?;
                continue;
            }
            Mount::Placeholder(b) => b,
        };
        // The names bubblewrap will create: the missing ancestors, then the leaf (listed
        // even when it stands already: another sandbox's mount point, removed by the last
        // sandbox out).
        let mut missing: Vec<(PathBuf, EntryKind)> = vec![(b.path.clone(), b.kind)];
        let mut anc = b.path.parent();
        while let Some(a) = anc {
            if std::fs::symlink_metadata(a).is_ok() {
                break;
            }
            missing.push((a.to_path_buf(), EntryKind::Dir));
            anc = a.parent();
        }
        stubs.extend(missing.into_iter().rev());
        match b.kind {
            EntryKind::File => {
                // An empty regular file (bubblewrap copies the pipe's nothing into it): git
                // reads it as an empty config, a write fails with EROFS.
                let (read, write) =
                    nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|source| SandboxError::Open {
                        path: b.path.clone(),
                        source,
                    })?;
                drop(write);
                args.push("--ro-bind-data".into());
                args.push(read.as_raw_fd().to_string().into());
                args.push(b.path.as_os_str().to_os_string());
                fds.push(read);
            }
            EntryKind::Dir => push(
                &mut args,
                &[
                    "--tmpfs".as_ref(),
                    b.path.as_os_str(),
                    "--remount-ro".as_ref(),
                    b.path.as_os_str(),
                ],
            ),
        }
    }
    for f in &base.writable_files {
        bind_fd(&mut args, &mut fds, "--bind-fd", f, EntryKind::File)?;
    }
    for (dest, fifo) in &base.relays {
        let fd = nix::fcntl::open(
            fifo.as_path(),
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|source| SandboxError::Open {
            path: fifo.clone(),
            source,
        })?;
        args.push("--ro-bind-fd".into());
        args.push(fd.as_raw_fd().to_string().into());
        args.push(dest.as_os_str().to_os_string());
        fds.push(fd);
    }
    for t in plan.hide_trees.iter().filter(|t| !t.writable) {
        push(&mut args, &["--remount-ro".as_ref(), t.path.as_os_str()]);
    }
    for h in &plan.hide_folders {
        push(
            &mut args,
            &[
                "--perms".as_ref(),
                "0555".as_ref(),
                "--tmpfs".as_ref(),
                h.path.as_os_str(),
                "--remount-ro".as_ref(),
                h.path.as_os_str(),
            ],
        );
    }
    for h in &plan.hide {
        push(
            &mut args,
            &[
                "--ro-bind".as_ref(),
                "/dev/null".as_ref(),
                h.path.as_os_str(),
            ],
        );
    }
    if let Some(d) = &base.chdir {
        push(&mut args, &["--chdir".as_ref(), d.as_os_str()]);
    }
    // The socket filter (`crate::plan::seccomp`): bubblewrap reads the program from a pipe
    // and installs it, after `no_new_privs`, just before running the command. It is
    // installed whatever the Unix rule (vsock, io_uring, foreign ABIs stay denied); only on
    // an architecture it is not written for does `unix_sockets = "allow"` run without it.
    let allow_unix = plan.unix_sockets.rule == UnixRule::Allow;
    let filter = crate::plan::seccomp::native_filter_bytes(allow_unix);
    if filter.is_none() && !allow_unix {
        return Err(SandboxError::NoSeccomp {
            arch: std::env::consts::ARCH,
        });
    }
    if let Some(prog) = filter {
        let open_err = |source| SandboxError::Open {
            path: PathBuf::from("(seccomp filter pipe)"),
            source,
        };
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(open_err)?;
        // A few hundred bytes: far below the pipe's buffer, so the write cannot block.
        let n = nix::unistd::write(&write, &prog).map_err(open_err)?;
        if n != prog.len() {
            return Err(open_err(nix::Error::EIO));
        }
        drop(write);
        args.push("--seccomp".into());
        args.push(read.as_raw_fd().to_string().into());
        fds.push(read);
    }
    // bubblewrap reports the command's exit code on this pipe when the command ran: none
    // means bubblewrap itself failed (a mount it could not make), which is a setup failure,
    // not the command's status ([`Prepared::started`]).
    let (status_read, status_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
        .map_err(|source| SandboxError::Open {
            path: PathBuf::from("(bubblewrap status pipe)"),
            source,
        })?;
    args.push("--json-status-fd".into());
    args.push(status_write.as_raw_fd().to_string().into());
    fds.push(status_write);
    // The Landlock inner step (after the mounts, which a Landlock domain forbids): bubblewrap
    // execs it under the socket filter, it restricts itself and execs the command.
    let inner = match &base.inner_step {
        Some(me) => {
            let mut v = vec![me.as_os_str().to_os_string()];
            v.extend(landlock::inner_args(&plan.landlock));
            v
        }
        None => Vec::new(),
    };
    Ok(Prepared {
        bwrap,
        args,
        fds,
        stubs,
        status: status_read,
        inner,
    })
}

impl Prepared {
    /// The bubblewrap command running `program args…`: the descriptors are inherited (their
    /// close-on-exec flag is cleared in the child only).
    pub fn command(&self, program: &Path, args: &[OsString]) -> std::process::Command {
        use std::os::unix::process::CommandExt;
        let mut c = std::process::Command::new(&self.bwrap);
        c.args(&self.args)
            .arg("--")
            .args(&self.inner)
            .arg(program)
            .args(args);
        let raw: Vec<i32> = self.fds.iter().map(AsRawFd::as_raw_fd).collect();
        // SAFETY: only fcntl, which is async-signal-safe, runs between fork and exec.
        unsafe {
            c.pre_exec(move || {
                for fd in &raw {
                    let flags = libc_fcntl_clear_cloexec(*fd);
                    if flags < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        c
    }

    /// Did bubblewrap build the sandbox and run the command? Ask after it has exited: its
    /// status report gives the command's `exit-code` only when the command ran (the
    /// `child-pid` line comes before the mounts are made, so it proves nothing).
    pub fn started(&self) -> bool {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = nix::unistd::read(&self.status, &mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&buf).contains("\"exit-code\"")
    }

    /// Remove the mount points bubblewrap created for placeholders, deepest first, each only
    /// while it is still an empty file or an empty folder (never a link, never anything
    /// written). Returns the paths left in place. Call it holding [`last_out`]'s lock.
    pub fn remove_stubs(&self) -> Vec<PathBuf> {
        let mut left = Vec::new();
        for (p, kind) in self.stubs.iter().rev() {
            let Ok(m) = std::fs::symlink_metadata(p) else {
                continue;
            };
            let gone = match kind {
                EntryKind::File if m.file_type().is_file() && m.len() == 0 => {
                    std::fs::remove_file(p).is_ok()
                }
                EntryKind::Dir if m.file_type().is_dir() => std::fs::remove_dir(p).is_ok(),
                _ => false,
            };
            if !gone {
                left.push(p.clone());
            }
        }
        left
    }
}

/// The outside end of an append-only log for the sandbox (the audit log): a FIFO in a private
/// folder, bound over the log inside the sandbox ([`Base::relays`]); a thread appends what
/// arrives to the real file. The agent can add lines (as the tools it runs can) but never
/// truncate or rewrite the log (red-team pass on the plan: `: > LOG` erased the events), and
/// what it writes never spoils a tool's event: only whole lines that are one JSON object
/// reach the log, anything else is logged as `audit_line_rejected` ([`lines::LineFilter`]).
pub struct Relay {
    pub fifo: PathBuf,
    dir: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    /// A FIFO in a new private folder under `tmp`, relayed to `log` (appended) line by line
    /// through a [`lines::LineFilter`] whose rejections name `session`.
    pub fn start(log: &Path, tmp: &Path, session: Option<String>) -> std::io::Result<Relay> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = nix::unistd::mkdtemp(&tmp.join("gitward-relay.XXXXXX"))?;
        let fifo = dir.join("log");
        nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600))?;
        // Read-write, so the FIFO never reports end of file while the sandbox runs.
        let mut rx = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags((OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).bits())
            .open(&fifo)?;
        // Write-only for everyone from now on: inside the sandbox (no capability, read-only
        // mount, so no chmod) the tools can append but not read, so no reader inside can
        // swallow the events before the relay gets them, and none blocks on the FIFO.
        std::fs::set_permissions(&fifo, std::os::unix::fs::PermissionsExt::from_mode(0o200))?;
        let mut out = std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(OFlag::O_CLOEXEC.bits())
            .open(log)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut filter = lines::LineFilter::new(session);
            let mut buf = vec![0u8; 65536];
            loop {
                let lines = match rx.read(&mut buf) {
                    Ok(n) if n > 0 => filter.push(&buf[..n]),
                    _ => {
                        if flag.load(std::sync::atomic::Ordering::SeqCst) {
                            // Every writer is gone (the sandbox ended) and the FIFO is empty.
                            for line in filter.finish() {
                                let _ = out.write_all(&line);
                            }
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        continue;
                    }
                };
                // One write per line on an O_APPEND file: whole lines, never glued to what
                // the tools outside the sandbox append to the same log.
                for line in lines {
                    let _ = out.write_all(&line);
                }
            }
        });
        Ok(Relay {
            fifo,
            dir,
            stop,
            thread: Some(thread),
        })
    }

    /// After the sandbox: relay what is left, stop, remove the FIFO and its folder.
    pub fn finish(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.fifo);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A shared lock on the common dir, held by every `agent-shell --sandbox` of the repository
/// while its sandbox runs. Removing a mount point unmounts it in every other mount namespace
/// too (anchors §2.1: "deleting a placeholder while another bwrap still runs detaches that
/// bind"), so the placeholders' mount points are removed only by the last sandbox out: the one
/// that, its own lock released, gets the lock exclusively ([`last_out`]).
pub fn lock_shared(common_dir: &Path) -> std::io::Result<nix::fcntl::Flock<std::fs::File>> {
    lock(common_dir, nix::fcntl::FlockArg::LockShared)
}

/// The exclusive lock on the common dir when no other sandbox holds it now (see
/// [`lock_shared`]); `None` when one does.
pub fn last_out(common_dir: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    lock(common_dir, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()
}

fn lock(
    common_dir: &Path,
    arg: nix::fcntl::FlockArg,
) -> std::io::Result<nix::fcntl::Flock<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW).bits())
        .open(common_dir)?;
    nix::fcntl::Flock::lock(f, arg).map_err(|(_, e)| std::io::Error::from(e))
}

/// `fcntl(fd, F_SETFD, 0)` through nix (async-signal-safe).
fn libc_fcntl_clear_cloexec(fd: i32) -> i32 {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    // SAFETY: `fd` is one of the plan's descriptors, open for the whole spawn.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty())).unwrap_or(-1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_is_refused_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/f"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        assert!(open_nofollow(&root.join("real/f"), EntryKind::File).is_ok());
        assert!(open_nofollow(&root.join("real"), EntryKind::Dir).is_ok());
        let e = open_nofollow(&root.join("link/f"), EntryKind::File).unwrap_err();
        assert!(
            matches!(e, SandboxError::Link { ref path, .. } if path.ends_with("link")),
            "{e}"
        );
        let e = open_nofollow(&root.join("link"), EntryKind::Dir).unwrap_err();
        assert!(matches!(e, SandboxError::Link { .. }), "{e}");
        let e = open_nofollow(&root.join("real/f"), EntryKind::Dir).unwrap_err();
        assert!(matches!(e, SandboxError::Kind { .. }), "{e}");
        let e = open_nofollow(&root.join("real/f/g"), EntryKind::File).unwrap_err();
        assert!(matches!(e, SandboxError::Kind { .. }), "{e}");
    }
}
