//! settings-watch: writes to project settings files that widen what the agent may do wait
//! for the owner. Thin: clap → one library call → exit code.

use clap::{CommandFactory, Parser, Subcommand};
use gitward::cli::{Format, Generate};
use gitward::settings::command::{self, HeldCmd};
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
EXAMPLES:
    # Watch the session's settings files (events on stdout and in the audit log)
    settings-watch run --policy ~/.config/gitward/alpha.toml

    # One pass at the end of a turn: exit 1 if a widening write was held
    settings-watch check --policy ~/.config/gitward/alpha.toml

    # Review what waits for you
    settings-watch held list --policy ~/.config/gitward/alpha.toml
    settings-watch held show 19ad4c1e2f0-3b1-0 --policy ~/.config/gitward/alpha.toml
    settings-watch held approve 19ad4c1e2f0-3b1-0 --policy ~/.config/gitward/alpha.toml

EXIT CODES:
    run      0 stopped on SIGTERM/SIGINT, 2 error
    check    0 clean, 1 widening write found and held, 2 cannot check (never reads as clean)
    held     list/show: 0, 2 error; approve/reject: 0 done, 1 refused (file changed since it
             was held, write blocked, already resolved), 2 error
    any      120 usage error";

/// Hold writes to project settings files that widen what an agent may do; let narrowing
/// writes through; never lose what the agent wrote.
#[derive(Parser, Debug)]
#[command(name = "settings-watch", version, after_long_help = EXAMPLES)]
struct Cli {
    /// Write a man page or shell completions to stdout and exit.
    #[arg(long, value_enum, value_name = "WHAT")]
    generate: Option<Generate>,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Watch the guarded files with inotify until SIGTERM.
    Run {
        /// The session's policy file.
        #[arg(long, value_name = "FILE")]
        policy: PathBuf,
    },
    /// One pass with the same rules (end of a turn, or no inotify).
    Check {
        /// The session's policy file.
        #[arg(long, value_name = "FILE")]
        policy: PathBuf,
    },
    /// Review held writes: list, show, approve, reject.
    Held {
        /// The session's policy file (required: it names the held-writes folder).
        #[arg(long, value_name = "FILE", global = true)]
        policy: Option<PathBuf>,
        /// Output format for list and show.
        #[arg(long, value_enum, default_value_t = Format::Human, global = true)]
        format: Format,
        #[command(subcommand)]
        cmd: HeldSub,
    },
}

#[derive(Subcommand, Debug)]
enum HeldSub {
    /// Pending held writes (with --all, resolved ones too).
    List {
        /// Also list resolved (approved or rejected) writes.
        #[arg(long)]
        all: bool,
    },
    /// One held write: why, and the diff.
    Show {
        /// The held write's id (from `held list`).
        id: String,
    },
    /// Write the held bytes (refused if the file changed since it was held).
    Approve {
        /// The held write's id (from `held list`).
        id: String,
    },
    /// Discard the held bytes.
    Reject {
        /// The held write's id (from `held list`).
        id: String,
    },
}

fn main() -> ExitCode {
    // One entry per name before anything reads the environment (gitward::environ).
    gitward::environ::one_copy_per_name();
    let cli: Cli = gitward::cli::parse_or_exit(gitward::exit::INCOMPLETE);
    if let Some(g) = cli.generate {
        return gitward::cli::print_generated(Cli::command(), g, gitward::exit::INCOMPLETE);
    }
    let code = match cli.cmd {
        None => gitward::cli::usage_help(Cli::command()),
        Some(Cmd::Run { policy }) => command::run(&policy),
        Some(Cmd::Check { policy }) => command::check(&policy),
        Some(Cmd::Held {
            policy,
            format,
            cmd,
        }) => {
            let Some(policy) = policy else {
                eprintln!("settings-watch: held needs --policy FILE");
                return gitward::exit::USAGE.into();
            };
            let cmd = match cmd {
                HeldSub::List { all } => HeldCmd::List { all },
                HeldSub::Show { id } => HeldCmd::Show(id),
                HeldSub::Approve { id } => HeldCmd::Approve(id),
                HeldSub::Reject { id } => HeldCmd::Reject(id),
            };
            command::held(&policy, cmd, format)
        }
    };
    code.into()
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
