//! agent-shell: runs the agent's commands with git-shim first on PATH and a defused
//! environment. Usable as the agent's `SHELL` (`agent-shell -c CMD`, `agent-shell -lc CMD`).

use clap::{CommandFactory, Parser};
use gitward::cli::Generate;
use gitward::{exit, shell};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run the agent's commands under the session's policy: git-shim as `git`, defused
/// environment, GIT_CEILING_DIRECTORIES, Docker only when the policy opts in.
#[derive(Parser, Debug)]
#[command(name = "agent-shell", version, about, long_about = None, after_long_help = EXAMPLES)]
struct Cli {
    /// The session's policy file (default: $GITWARD_POLICY).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Run CMD with bash (`bash -c CMD [ARGS…]`).
    #[arg(short = 'c', value_name = "CMD", allow_hyphen_values = true)]
    command: Option<OsString>,
    /// Accepted for `$SHELL -lc CMD` callers; login profiles are never read (they reset PATH).
    #[arg(short = 'l', long = "login")]
    login: bool,
    /// Force an interactive shell.
    #[arg(short = 'i')]
    interactive: bool,
    /// Positional parameters ($0, $1, …) for CMD.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<OsString>,
    /// Run the command inside a sandbox built from the repository's plan (made afresh for
    /// each command; docs/sandbox-plan.md).
    #[arg(long, value_enum, value_name = "KIND")]
    sandbox: Option<shell::SandboxKind>,
    /// Write a man page or a shell completion script to standard output.
    #[arg(long, value_enum, value_name = "WHAT")]
    generate: Option<Generate>,
}

const EXAMPLES: &str = "\
EXAMPLES:
    agent-shell --policy ~/.config/gitward/s1.toml -c 'git status && cargo test'
    GITWARD_POLICY=~/.config/gitward/s1.toml SHELL=$(command -v agent-shell) my-agent
    agent-shell -lc 'git worktree add ../proj-worktrees/s1/feature'
    agent-shell --policy p.toml            # interactive shell
    agent-shell --sandbox bwrap --policy p.toml -c 'git commit -am wip'

EXIT STATUS:
    the command's own status (128+n when killed by signal n), or
    120 usage, 124 setup: no policy, bad policy, no git-shim, no sandbox plan
    (a layout the plan cannot vouch for), a planned path that cannot be bound";

fn main() -> ExitCode {
    // One entry per name before anything reads the environment (gitward::environ).
    gitward::environ::one_copy_per_name();
    // The Landlock inner step (`agent-shell --landlock-exec …`): bubblewrap runs it inside the
    // sandbox; it applies the plan's ruleset and execs the command (docs/agent-shell.md).
    let argv: Vec<OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == gitward::sandbox::landlock::EXEC_FLAG)
    {
        let e = gitward::sandbox::landlock::exec_inner(&argv[2..]);
        eprintln!("agent-shell: sandbox: {e}; the command did not run");
        return exit::SETUP.into();
    }
    let cli: Cli = gitward::cli::parse_or_exit(exit::SETUP);
    if let Some(what) = cli.generate {
        return gitward::cli::print_generated(Cli::command(), what, gitward::exit::SETUP);
    }
    let _ = cli.login;
    // ARGS take anything after CMD, as bash's do (`-c CMD -x` sets $0 to `-x`); so a
    // mistyped option before `-c` lands in ARGS too. Say what it is, not that `-c` is missing.
    if cli.command.is_none() {
        if let Some(first) = cli.args.first() {
            let mut cmd = Cli::command();
            let e = if first.to_string_lossy().starts_with('-') {
                cmd.error(
                    clap::error::ErrorKind::UnknownArgument,
                    format!("unexpected argument '{}' found", first.to_string_lossy()),
                )
            } else {
                cmd.error(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    format!(
                        "ARGS ('{}' …) are positional parameters for -c CMD, and -c is not given",
                        first.to_string_lossy()
                    ),
                )
            };
            let _ = e.print();
            return exit::USAGE.into();
        }
    }
    let req = shell::Request {
        policy: cli.policy,
        command: cli.command,
        interactive: cli.interactive,
        args: cli.args,
        sandbox: cli.sandbox,
    };
    match shell::run(req) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agent-shell: {e}");
            exit::SETUP.into()
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
