//! safe-git: git for host-side scripts over repositories an agent wrote.
//! Parses its own few options, asks the library for a plan, and execs git (same pid, git's
//! own exit status) — or prints one line and exits with a documented refusal code.
//!
//! `no_main`, as git-shim: every call starts this process before git, and std's runtime
//! set-up in `lang_start` reads `/proc/self/maps` (through `pthread_getattr_np`, ~96 k
//! instructions and 4 system calls) only to name a stack overflow, which is then a plain
//! `SIGSEGV`. What else it does is kept: `SIGPIPE` is ignored, so a closed pipe is an error
//! safe-git reports (`cli::print`), and std's `Command` still gives git the default.

// The test harness brings its own `main`.
#![cfg_attr(not(test), no_main)]

use clap::{CommandFactory, Parser};
use gitward::cli::{Format, Generate};
use std::ffi::OsString;
use std::path::PathBuf;

const EXAMPLES: &str = "\
EXAMPLES:
  safe-git status --porcelain                 status of the repository in this folder
  safe-git -C /work/agent-1 log -p -3         the last three commits with patches
  safe-git would-lose-work ../wt              exit 0 if removing ../wt would lose nothing
  safe-git worktree remove --force ../wt      remove a session's worktree
  safe-git --explain -C repo diff             show the environment and -c set, run nothing
  safe-git --git /usr/bin/git status          pick the real git explicitly
  safe-git --cpu-limit 0 log -p               no CPU bound of safe-git's own (default 600 s)

EXIT STATUS:
  git's own status when git ran; 120 usage, 121 not allowed, 122 layout cannot be vouched
  for, 123 config cannot be parsed or neutralised, 124 setup error (see docs/exit-codes.md).
  152 (128 + SIGXCPU): git, or safe-git itself, used up the CPU limit (--cpu-limit).
  would-lose-work: 0 nothing would be lost, 1 work would be lost (listed), 2 cannot tell
  (also when a git it runs passes the CPU limit).";

/// Run git over an untrusted repository without running anything the repository, its
/// includes, its submodules, its worktree config, a redirect or the caller's git
/// environment names. Same arguments as git, over an allow-list of inspection and clean-up
/// subcommands; safe-git's own options come first.
#[derive(Debug, Parser)]
#[command(name = "safe-git", version, after_long_help = EXAMPLES, trailing_var_arg = true)]
struct Cli {
    /// The real git (default: the first `git` on PATH that is not gitward).
    #[arg(long, env = "SAFE_GIT_GIT", value_name = "PATH")]
    git: Option<PathBuf>,
    /// Print the plan (git, repository, environment, -c set) and run nothing.
    #[arg(long)]
    explain: bool,
    /// Format of --explain output.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// CPU seconds git may use (and safe-git before it: the same process), then the kernel
    /// ends it with SIGXCPU (status 152); 0 = no bound of safe-git's own. A lower limit the
    /// caller set (`ulimit -t`) is kept. [default: 600]
    #[arg(long, env = "SAFE_GIT_CPU_LIMIT", value_name = "SECONDS")]
    cpu_limit: Option<u64>,
    /// Append one JSON event per decision (git_allowed / git_refused) to this file.
    #[arg(long, env = "SAFE_GIT_EVENTS", value_name = "FILE")]
    events: Option<PathBuf>,
    /// Write a man page or shell completions to stdout.
    #[arg(long, value_enum, value_name = "WHAT")]
    generate: Option<Generate>,
    /// git's arguments: [global options] <subcommand> [arguments].
    #[arg(allow_hyphen_values = true, value_name = "GIT ARGS")]
    args: Vec<OsString>,
}

/// The C entry point (see the module comment). Returns only through `main`'s `return`s;
/// every other end is an explicit `exit`, which flushes standard output.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // One entry per name before anything reads the environment (gitward::environ).
    gitward::environ::one_copy_per_name();
    // SAFETY: ignoring a signal installs no handler code.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigIgn);
    }
    safe_git_main();
    std::process::exit(0)
}

#[cfg_attr(test, allow(dead_code))]
fn safe_git_main() {
    let cli: Cli = gitward::cli::parse_or_exit(gitward::exit::SETUP);
    if let Some(what) = cli.generate {
        let code = gitward::cli::print_generated(Cli::command(), what, gitward::exit::SETUP);
        if code != std::process::ExitCode::SUCCESS {
            gitward::exit::SETUP.exit();
        }
        return;
    }
    // Before anything of the repository is read: the bound covers safe-git's own reads,
    // the gits it runs as children, and the git it becomes (gitward::safegit::cpu).
    let bound = match gitward::safegit::cpu::apply(cli.cpu_limit) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("safe-git: {e}");
            gitward::exit::SETUP.exit();
        }
    };
    if cli.args.first().is_some_and(|a| a == "would-lose-work") {
        would_lose_work(cli, bound);
        return;
    }
    let mut req = gitward::safegit::Request::from_process(cli.git, cli.args, cli.events);
    req.cpu = Some(bound);
    match gitward::safegit::plan(&req) {
        Err(refusal) => {
            eprintln!("safe-git: {refusal}");
            refusal.log(&req);
            refusal.code.exit();
        }
        Ok(plan) if cli.explain => {
            let text = match cli.format {
                Format::Human => plan.to_human(),
                Format::Json => format!(
                    "{}\n",
                    serde_json::to_string_pretty(&plan.to_json()).unwrap_or_default()
                ),
            };
            if let Err(code) = gitward::cli::print("safe-git", &text, gitward::exit::SETUP) {
                code.exit();
            }
        }
        Ok(plan) => {
            plan.log(&req);
            let git = plan.git.clone();
            let err = plan.exec();
            eprintln!("safe-git: {}: cannot run git: {err}", git.display());
            gitward::exit::SETUP.exit();
        }
    }
}

/// `safe-git would-lose-work [--format human|json] <worktree>`: exit 0 when removing the
/// worktree would lose nothing, 1 with the list of what it would lose, 2 when a git step
/// failed, or safe-git's refusal code.
fn would_lose_work(cli: Cli, bound: gitward::safegit::cpu::Bound) {
    let mut json = matches!(cli.format, Format::Json);
    let mut worktree = None;
    let mut it = cli.args.iter().skip(1);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--format") => match it.next().and_then(|v| v.to_str()) {
                Some("json") => json = true,
                Some("human") => json = false,
                _ => usage("--format takes human or json"),
            },
            Some("--format=json") => json = true,
            Some("--format=human") => json = false,
            Some(o) if o.starts_with('-') => usage("unknown option"),
            _ if worktree.is_none() => worktree = Some(PathBuf::from(a)),
            _ => usage("one worktree only"),
        }
    }
    let Some(worktree) = worktree else {
        usage("name the worktree")
    };
    let mut req = gitward::safegit::Request::from_process(cli.git, Vec::new(), cli.events);
    req.cpu = Some(bound);
    use gitward::safegit::loss::{render, would_lose_work, Unknown};
    match would_lose_work(&req, &worktree) {
        Ok(losses) => {
            // The answer did not arrive: "cannot tell" (2), so the worktree is kept.
            if let Err(code) = gitward::cli::print(
                "safe-git",
                &render(&worktree, &losses, json),
                gitward::exit::INCOMPLETE,
            ) {
                code.exit();
            }
            if !losses.is_empty() {
                std::process::exit(1);
            }
        }
        Err(Unknown::Refused(r)) => {
            eprintln!("safe-git: {r}");
            r.log(&req);
            r.code.exit();
        }
        Err(Unknown::Git(why)) => {
            eprintln!(
                "safe-git: would-lose-work: {}: cannot tell: {why}",
                worktree.display()
            );
            std::process::exit(2);
        }
    }
}

fn usage(why: &str) -> ! {
    eprintln!("safe-git: would-lose-work [--format human|json] <worktree>: {why}");
    gitward::exit::USAGE.exit();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option and subcommand has help text (`--help` and the man pages show no bare option).
    #[test]
    fn every_option_has_help() {
        assert_eq!(
            gitward::cli::undocumented(&Cli::command()),
            Vec::<String>::new()
        );
    }
}
