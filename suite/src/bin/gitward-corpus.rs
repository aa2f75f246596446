//! `gitward-corpus`: run the attack corpus against every git on this machine.

use clap::Parser;
use gitward::cli::{Format, Generate};
use gitward_suite as corpus;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const EXAMPLES: &str = "\
EXAMPLES:
    # every case, every git on this machine, safe-git and wt-check from this build
    cargo build --release --workspace && ./target/release/gitward-corpus

    # one git, the fsmonitor cases, as JSON
    gitward-corpus --git /usr/local/bin/git --case fsmonitor --format json

    # a safe-git built elsewhere
    gitward-corpus --safe-git ~/src/gitward/target/debug/safe-git

EXIT STATUS:
    0  every case that is not skipped fired under plain git, stayed quiet under safe-git,
       and was flagged by wt-check audit (where built and applicable)
    1  at least one case failed (BROKEN control, FIRED or ERROR under safe-git, safe-git
       not built, audit did not flag)
    2  the runner could not run (no git, unreadable or invalid case file)";

/// Run the attack corpus (fixtures/attacks) under plain git, under safe-git and through
/// wt-check audit, for every git found on this machine, and print the result table.
#[derive(Parser, Debug)]
#[command(name = "gitward-corpus", version, after_long_help = EXAMPLES)]
struct Args {
    /// A git to test (repeatable). Default: /usr/bin/git, /usr/local/bin/git and every `git`
    /// on PATH that is not gitward's shim, deduplicated by real path.
    #[arg(long = "git", value_name = "PATH")]
    git: Vec<PathBuf>,
    /// Only cases whose id contains this text (repeatable: any of them).
    #[arg(long = "case", value_name = "SUBSTRING")]
    case: Vec<String>,
    /// The safe-git to test. Default: `safe-git` next to this executable.
    #[arg(long, value_name = "PATH")]
    safe_git: Option<PathBuf>,
    /// The wt-check to audit with. Default: `wt-check` next to this executable.
    #[arg(long, value_name = "PATH")]
    wt_check: Option<PathBuf>,
    /// Folder holding the case files. Default: fixtures/attacks of this source tree.
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Cases run at the same time.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Time limit for every child process (setup, trigger, audit), in seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// Keep every temporary workspace and print its path on stderr (to debug a case).
    #[arg(long)]
    keep: bool,
    /// List the cases (id, trigger, research row, title) and exit without running them.
    #[arg(long)]
    list: bool,
    /// Write a man page or completion script and exit.
    #[arg(long, value_enum, value_name = "WHAT")]
    generate: Option<Generate>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(what) = args.generate {
        use clap::CommandFactory;
        return match gitward::cli::generate(Args::command(), what, &mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gitward-corpus: {e}");
                ExitCode::from(2)
            }
        };
    }
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("gitward-corpus: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool, corpus::CorpusError> {
    let dir = args.cases.unwrap_or_else(corpus::default_cases_dir);
    let mut cases = corpus::load_cases(&dir)?;
    if !args.case.is_empty() {
        cases.retain(|c| args.case.iter().any(|s| c.id.contains(s.as_str())));
    }
    if args.list {
        print!(
            "{}",
            corpus::render_list(&cases, args.format == Format::Json)
        );
        return Ok(true);
    }
    let gits = corpus::find_gits(&args.git)?;
    let exe = std::env::current_exe().unwrap_or_default();
    let beside = corpus::ToolPaths::beside(&exe);
    let tools = corpus::ToolPaths {
        safe_git: args.safe_git.or(beside.safe_git),
        wt_check: args.wt_check.or(beside.wt_check),
    };
    let opts = corpus::Options {
        jobs: args.jobs,
        timeout: Duration::from_secs(args.timeout.max(1)),
        keep: args.keep,
    };
    let report = corpus::run(&cases, &gits, &tools, &opts);
    match args.format {
        Format::Human => print!("{}", corpus::render_human(&report)),
        Format::Json => println!("{}", corpus::render_json(&report)),
    }
    Ok(report.ok())
}
