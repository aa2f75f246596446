//! git-shim: the agent's `git`. Invoked as `git` (its installed name) every argument goes to
//! the session's rules and then to the real git; invoked as `git-shim` it takes its own flags.
//!
//! `no_main`: every agent `git` call starts this process, and std's runtime set-up in
//! `lang_start` (reading `/proc/self/maps` for the main thread's stack bounds, to name a stack
//! overflow; ignoring `SIGPIPE`) costs more than the shim's own work. Without it a stack
//! overflow is a plain `SIGSEGV`, and a write to a closed pipe ends the process like git's own.
//! The arguments still come from std (glibc hands them to its init hook).

// The test harness brings its own `main`; the unit tests below never start the shim.
#![cfg_attr(not(test), no_main)]

mod arena;

use clap::{CommandFactory, Parser};
use gitward::cli::{Format, Generate};
use gitward::{exit, shim};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// Every allocation of a call from a bump arena (see `arena`); 256 KiB of `.bss`, of which a
/// call touches the ≈ 19 KB it allocates, with glibc's `malloc` past it.
#[cfg(not(test))]
#[global_allocator]
static ARENA: arena::Bump<{ 256 * 1024 }> = arena::Bump::new();

/// The agent's git: enforces the session's worktree and config rules, then execs the real git
/// with the defused environment.
#[derive(Parser, Debug)]
#[command(name = "git-shim", version, about, long_about = None, after_long_help = EXAMPLES)]
struct Cli {
    /// Install the shim as DIR/git (a hard link, else a copy). Put DIR first on the agent's PATH.
    #[arg(long, value_name = "DIR")]
    install: Option<PathBuf>,
    /// With --install: pin this policy file beside the shim (it then wins over GITWARD_POLICY)
    /// and warm the git version cache.
    #[arg(long, value_name = "FILE", requires = "install")]
    policy: Option<PathBuf>,
    /// Output format of --install's report.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Write a man page or a shell completion script to standard output.
    #[arg(long, value_enum, value_name = "WHAT")]
    generate: Option<Generate>,
}

const EXAMPLES: &str = "\
EXAMPLES:
    # Install for a session (orchestrator, outside the sandbox):
    git-shim --install ~/.local/state/gitward/s1/bin --policy ~/.config/gitward/s1.toml
    # The agent then runs, with that folder first on PATH:
    git worktree add ../proj-worktrees/s1/feature   # allowed
    git config core.hooksPath /tmp/h                # refused, exit 121

Invoked as `git`, every argument is git's. Policy: the file pinned by --install --policy,
else $GITWARD_POLICY (agent-shell sets it). Without one the shim refuses to run (exit 124).

EXIT STATUS:
    git's own status (exec), or
    120 usage (git-shim's own flags), 121 refused by a rule,
    124 setup: no policy, bad policy, no real git";

/// The C entry point (see the module comment). `std::process::exit` flushes standard output.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    // The arena's pages a call writes (≈ 19 KB of allocations, then the offset's page), in
    // one system call rather than six page faults.
    ARENA.prefault(24 * 1024);
    // One entry per name before anything reads the environment (gitward::environ).
    gitward::environ::one_copy_per_name();
    std::process::exit(i32::from(shim_main()))
}

/// The exit status.
#[cfg_attr(test, allow(dead_code))]
fn shim_main() -> u8 {
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    let name = std::path::Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rest: Vec<OsString> = args.collect();
    if !name.starts_with("git-shim") {
        return shim::run(rest);
    }
    let cli: Cli = gitward::cli::parse_or_exit(exit::SETUP);
    if let Some(what) = cli.generate {
        let done = gitward::cli::print_generated(Cli::command(), what, exit::SETUP);
        return if done == ExitCode::SUCCESS {
            0
        } else {
            exit::SETUP.code
        };
    }
    let Some(dir) = cli.install else {
        return gitward::cli::usage_help(Cli::command()).code;
    };
    match shim::install(&dir, cli.policy.as_deref()) {
        Ok(done) => {
            let text = match cli.format {
                Format::Json => format!("{}\n", serde_json::to_string(&done).unwrap_or_default()),
                Format::Human => {
                    let mut t = format!("installed {}\n", done.shim.display());
                    if let Some(p) = &done.pinned_policy {
                        t.push_str(&format!("pinned policy {}\n", p.display()));
                    }
                    if let Some(g) = &done.real_git {
                        t.push_str(&format!("real git {}\n", g.display()));
                    }
                    t
                }
            };
            match gitward::cli::print("git-shim", &text, exit::SETUP) {
                Ok(()) => 0,
                Err(c) => c.code,
            }
        }
        Err(e) => {
            eprintln!("git-shim: {e}");
            exit::SETUP.code
        }
    }
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
