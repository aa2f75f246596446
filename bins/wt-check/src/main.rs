//! wt-check: pin a repository's git folder at sandbox build, check and restore it at every
//! turn's end, scan the turn's commits, audit any repository with no baseline.
//! Thin: clap → one library call → exit code.

use clap::{CommandFactory, Parser, Subcommand};
use gitward::audit::{self, AuditFormat};
use gitward::cli::Generate;
use gitward::integrity::tool::{self, CheckArgs, PinArgs};
use std::path::PathBuf;

const EXAMPLES: &str = "\
EXAMPLES:
  # At sandbox build (host side): record the baseline outside the repository.
  wt-check pin --state ~/.local/state/gitward/s1.json --session s1 ~/src/proj

  # At every turn's end: report and put everything back; events go to stdout.
  wt-check check --state ~/.local/state/gitward/s1.json --restore ~/src/proj

  # The commit scan alone (refs now against the pinned snapshot).
  wt-check scan --state ~/.local/state/gitward/s1.json ~/src/proj

  # Any repository or workspace, no baseline; SARIF for code scanning.
  wt-check audit --format sarif ~/src > gitward.sarif

EXIT STATUS:
  0 nothing found · 1 findings (restored or not; pin: already armed) · 2 cannot check (never reads as clean)
  120 bad arguments";

const PIN_EXAMPLES: &str = "\
EXAMPLES:
  # At sandbox build (host side): record the baseline outside the repository.
  wt-check pin --state ~/.local/state/gitward/s1.json --session s1 ~/src/proj

  # A bare repository, the session's worktrees elsewhere; a JSON summary.
  wt-check pin --state /var/lib/gitward/s1.json --session s1 --worktree-dir /work/s1 --format json /srv/proj.git

EXIT STATUS:
  0 state file written · 1 already armed (nothing written; what is armed is listed)
  2 cannot pin (state file placement, an unreadable entry) · 120 bad arguments";

const CHECK_EXAMPLES: &str = "\
EXAMPLES:
  # At every turn's end: report and put everything back; events go to stdout.
  wt-check check --state ~/.local/state/gitward/s1.json --restore ~/src/proj

  # Report only, one line per event, also appended to the orchestrator's log.
  wt-check check --state s1.json --format human --audit-log audit.jsonl ~/src/proj

EXIT STATUS:
  0 nothing found · 1 findings (restored or not) · 2 cannot check (never reads as clean)
  120 bad arguments";

const SCAN_EXAMPLES: &str = "\
EXAMPLES:
  # The commit scan alone: commits reachable now and not at pin time, refs rewritten.
  wt-check scan --state ~/.local/state/gitward/s1.json ~/src/proj

EXIT STATUS:
  0 nothing flagged · 1 flagged commits or rewritten refs · 2 cannot scan · 120 bad arguments";

const AUDIT_EXAMPLES: &str = "\
EXAMPLES:
  # Any repository or workspace, no pinned state needed.
  wt-check audit ~/src

  # SARIF for GitHub code scanning (locations relative to the first path).
  wt-check audit --format sarif . > gitward.sarif

  # Accept what is there today; later runs report only what is new.
  wt-check audit --format json . > .gitward-baseline.json
  wt-check audit --baseline .gitward-baseline.json --fail-on error .

  # A large workspace: leave out folders that hold no repositories.
  wt-check audit --exclude build --exclude 'web/dist' ~/src

EXIT STATUS:
  0 nothing at --fail-on or above (default: warning) · 1 findings · 2 some part could not be read
  120 bad arguments";

#[derive(Parser)]
#[command(
    name = "wt-check",
    version,
    about = "Pin, check and restore a git folder around agent turns; audit any repository",
    after_long_help = EXAMPLES
)]
struct Cli {
    /// Write a man page or shell completions to stdout and exit.
    #[arg(long, value_name = "WHAT", global = false)]
    generate: Option<Generate>,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

/// `--state` made absolute against the current folder when given (no link resolved): the
/// records kept beside the state file (`.walk`, `.index`, `.refs`) are written through its
/// parent folder, which a bare relative name does not have.
fn absolute_path(s: &str) -> Result<PathBuf, String> {
    std::path::absolute(s).map_err(|e| format!("{s}: {e}"))
}

/// The arguments every end-of-turn hook takes.
#[derive(clap::Args)]
struct TurnHookArgs {
    /// The state file `pin` wrote.
    #[arg(long, value_name = "FILE", value_parser = absolute_path)]
    state: PathBuf,
    /// The session whose worktrees may change (default: the one pinned).
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// Append every event to this file.
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
    /// Skip the commit scan.
    #[arg(long)]
    no_scan: bool,
    /// The repository (default: the one named in the state file).
    repo: Option<PathBuf>,
}

#[derive(Subcommand)]
enum HookKind {
    /// Claude Code `Stop` hook: check --restore and the commit scan; answers with the JSON
    /// Claude Code reads (`decision`/`reason` for the agent, `systemMessage` for the owner).
    #[command(after_long_help = HOOK_EXAMPLES)]
    ClaudeStop(TurnHookArgs),
    /// Codex CLI `Stop` hook (hooks.json): the same check, answered in Codex's Stop hook
    /// JSON (`decision: "block"` + `reason` becomes the agent's continuation prompt).
    #[command(after_long_help = CODEX_EXAMPLES)]
    CodexStop(TurnHookArgs),
    /// Gemini CLI `AfterAgent` hook: the same check, answered in Gemini's JSON
    /// (`decision: "deny"` + `reason` is sent to the agent as a new prompt).
    #[command(after_long_help = GEMINI_EXAMPLES)]
    GeminiAfterAgent(TurnHookArgs),
    /// `SessionStart` hook of any of the three CLIs: pin on `source: "startup"` only; on
    /// resume, clear or compact it keeps the existing baseline (re-pinning mid-session would
    /// take the agent's changes as the baseline), and stops the session when there is none.
    #[command(after_long_help = SESSION_START_EXAMPLES)]
    SessionStart {
        /// The state file to write (outside the repository, its git dir and work trees).
        #[arg(long, value_name = "FILE", value_parser = absolute_path)]
        state: PathBuf,
        /// The session whose worktrees (`<repo>-worktrees/<session>/`) may change.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// The session's worktree folder, if not `<repo>-worktrees/<session>/`.
        #[arg(long, value_name = "DIR")]
        worktree_dir: Option<PathBuf>,
        /// A work tree, linked worktree or bare git dir.
        repo: PathBuf,
    },
}

const HOOK_EXAMPLES: &str = "\
EXAMPLES:
  # .claude/settings.json (owner's user settings, not the project's):
  # {\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\",
  #   \"command\": \"wt-check hook claude-stop --state ~/.local/state/gitward/proj.json --audit-log ~/.local/state/gitward/audit.jsonl\"}]}]}}
  echo '{\"hook_event_name\":\"Stop\",\"stop_hook_active\":false}' | wt-check hook claude-stop --state s.json

EXIT STATUS:
  0 the answer is on stdout (the decision is in the JSON) · 120 bad arguments";

const HOOKS_EXAMPLES: &str = "\
EXAMPLES:
  # End of turn: Claude Code Stop, Codex CLI Stop, Gemini CLI AfterAgent (docs/integration.md).
  wt-check hook claude-stop --state ~/.local/state/gitward/proj.json < stop.json
  wt-check hook codex-stop --state ~/.local/state/gitward/proj.json < stop.json
  wt-check hook gemini-after-agent --state ~/.local/state/gitward/proj.json < after-agent.json

  # Session start (any of the three): pins on source \"startup\" only.
  wt-check hook session-start --state ~/.local/state/gitward/proj.json ~/src/proj < start.json

EXIT STATUS:
  0 the answer is on stdout (the decision is in the JSON) · 2 it could not be written
  120 bad arguments";

const CODEX_EXAMPLES: &str = "\
EXAMPLES:
  # ~/.codex/hooks.json (the owner's, not the repository's .codex/):
  # {\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\",
  #   \"command\": \"wt-check hook codex-stop --state ~/.local/state/gitward/proj.json\", \"timeout\": 60}]}]}}
  echo '{\"hook_event_name\":\"Stop\",\"turn_id\":\"1\",\"stop_hook_active\":false}' | wt-check hook codex-stop --state s.json

EXIT STATUS:
  0 the answer is on stdout (the decision is in the JSON) · 120 bad arguments";

const GEMINI_EXAMPLES: &str = "\
EXAMPLES:
  # ~/.gemini/settings.json (the owner's, not the project's .gemini/):
  # {\"hooks\": {\"AfterAgent\": [{\"hooks\": [{\"type\": \"command\",
  #   \"command\": \"wt-check hook gemini-after-agent --state ~/.local/state/gitward/proj.json\", \"timeout\": 60000}]}]}}
  echo '{\"hook_event_name\":\"AfterAgent\",\"stop_hook_active\":false}' | wt-check hook gemini-after-agent --state s.json

EXIT STATUS:
  0 the answer is on stdout (the decision is in the JSON) · 120 bad arguments";

const SESSION_START_EXAMPLES: &str = "\
EXAMPLES:
  # Claude Code / Codex CLI: give the hook group \"matcher\": \"startup\" as well.
  # {\"hooks\": {\"SessionStart\": [{\"matcher\": \"startup\", \"hooks\": [{\"type\": \"command\",
  #   \"command\": \"wt-check hook session-start --state ~/.local/state/gitward/proj.json ~/src/proj\"}]}]}}
  echo '{\"hook_event_name\":\"SessionStart\",\"source\":\"startup\"}' | wt-check hook session-start --state s.json ~/src/proj

EXIT STATUS:
  0 the answer is on stdout (pinned, kept, or continue:false with the reason) · 120 bad arguments";

const PLAN_EXAMPLES: &str = "\
EXAMPLES:
  # The contract an orchestrator builds its sandbox from.
  wt-check plan --session s1 ~/src/proj > plan.json

  # bubblewrap arguments (one per line), a sandbox-runtime fragment, an SBPL fragment.
  wt-check plan --policy ~/.config/gitward/s1.toml --format bwrap ~/src/proj
  wt-check plan --session s1 --format srt ~/src/proj
  wt-check plan --session s1 --format seatbelt ~/src/proj

EXIT STATUS:
  0 plan written · 2 no plan (one line names the path and the reason) · 120 bad arguments";

#[derive(Subcommand)]
enum Cmd {
    /// Record the baseline of every protected git-folder entry and the refs.
    #[command(after_long_help = PIN_EXAMPLES)]
    Pin {
        /// The state file to write (outside the repository, its git dir and work trees).
        #[arg(long, value_name = "FILE", value_parser = absolute_path)]
        state: PathBuf,
        /// The session whose worktrees (`<repo>-worktrees/<session>/`) may change.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// The session's worktree folder, if not `<repo>-worktrees/<session>/`.
        #[arg(long, value_name = "DIR")]
        worktree_dir: Option<PathBuf>,
        /// Pin even if the repository is already armed (a planted hook, an armed config key,
        /// an in-progress operation that names a program): what is armed is recorded in the
        /// state file as accepted and not reported by `check` while it stays the same.
        /// Without it, pin refuses (exit 1) and lists what is armed.
        #[arg(long)]
        accept_armed: bool,
        /// `human` or `json` summary.
        #[arg(long, value_enum, default_value_t = gitward::cli::Format::Human)]
        format: gitward::cli::Format,
        /// A work tree, linked worktree or bare git dir.
        repo: PathBuf,
    },
    /// Compare with the baseline (events, one JSON object per line); optionally restore.
    #[command(after_long_help = CHECK_EXAMPLES)]
    Check {
        /// The state file `pin` wrote.
        #[arg(long, value_name = "FILE", value_parser = absolute_path)]
        state: PathBuf,
        /// Put every protected entry back; the agent's versions go to `<FILE>.quarantine/`.
        #[arg(long)]
        restore: bool,
        /// The session whose worktrees may change (default: the one pinned).
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// Also append every event to this file (the orchestrator's audit log).
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
        /// Skip the commit scan.
        #[arg(long)]
        no_scan: bool,
        /// The session's policy: its writable roots (and worktree folders) are walked for
        /// planted repositories and bare-style git dirs, like the work trees.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// `json` (events, default) or `human` (one line per event).
        #[arg(long, value_enum, default_value_t = gitward::cli::Format::Json)]
        format: gitward::cli::Format,
        /// The repository pinned in the state file (its work tree or git dir).
        repo: PathBuf,
    },
    /// The commit scan alone: commits reachable now and not at pin time, refs rewritten.
    #[command(after_long_help = SCAN_EXAMPLES)]
    Scan {
        /// The state file `pin` wrote.
        #[arg(long, value_name = "FILE", value_parser = absolute_path)]
        state: PathBuf,
        /// Also append every event to this file.
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
        /// `json` (events, default) or `human` (one line per event).
        #[arg(long, value_enum, default_value_t = gitward::cli::Format::Json)]
        format: gitward::cli::Format,
        /// The repository pinned in the state file (its work tree or git dir).
        repo: PathBuf,
    },
    /// The sandbox plan: writable roots, read-only paths, placeholders, hidden sockets —
    /// from the same protected set `pin` records (docs/sandbox-plan.md).
    #[command(after_long_help = PLAN_EXAMPLES)]
    Plan {
        /// The session whose worktree folder and entries are writable.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// The session's worktree folder, if not `<repo>-worktrees/<session>/`.
        #[arg(long, value_name = "DIR")]
        worktree_dir: Option<PathBuf>,
        /// The session's policy: session, worktree folder, writable roots, Docker switch.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// The sandbox keeps the network (database sockets stay reachable).
        #[arg(long)]
        network: bool,
        /// `json` (the plan), `bwrap` (bubblewrap arguments, one per line), `srt` (a
        /// sandbox-runtime settings fragment), `seatbelt` (an SBPL fragment) or `seccomp`
        /// (the Unix-socket filter for bubblewrap's `--seccomp`, binary).
        #[arg(long, value_enum, default_value_t = gitward::plan::PlanFormat::Json)]
        format: gitward::plan::PlanFormat,
        /// A work tree, linked worktree or bare git dir.
        repo: PathBuf,
    },
    /// Run as an agent CLI's hook: end of turn (check and restore) or session start (pin);
    /// reads the hook's JSON on stdin.
    #[command(after_long_help = HOOKS_EXAMPLES)]
    Hook {
        #[command(subcommand)]
        kind: HookKind,
    },
    /// Find planted hooks, armed config, redirects and nested repositories; no pinned state.
    #[command(after_long_help = AUDIT_EXAMPLES)]
    Audit {
        /// `human` (one line per finding), `json`, or `sarif` (SARIF 2.1.0 for code scanning).
        #[arg(long, value_enum, default_value_t = AuditFormat::Human)]
        format: AuditFormat,
        /// Leave out the findings recorded in FILE: an earlier `--format json` or
        /// `--format sarif` output (matched by fingerprint; read errors are never left out).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// The lowest level that makes the exit status 1 (`note` counts every finding).
        #[arg(long, value_enum, value_name = "LEVEL", default_value_t = audit::baseline::FailOn::Warning)]
        fail_on: audit::baseline::FailOn,
        /// Do not walk folders matching GLOB: a path relative to the audited path
        /// (`web/dist`), or, without a `/`, a folder name at any depth (`build`, `*.cache`).
        /// Repeatable. Excluded folders are listed in the report.
        #[arg(long, value_name = "GLOB", value_parser = parse_glob)]
        exclude: Vec<gitward::settings::glob::Glob>,
        /// Also walk dependency folders (node_modules, folders tagged CACHEDIR.TAG such as
        /// Cargo's target/, Python virtualenvs, …), which are skipped by default when no
        /// repository sits at their top level.
        #[arg(long)]
        walk_all: bool,
        /// Repositories, workspace folders or bare git dirs.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

fn main() -> std::process::ExitCode {
    // One entry per name before anything reads the environment (gitward::environ).
    gitward::environ::one_copy_per_name();
    let cli: Cli = gitward::cli::parse_or_exit(gitward::exit::INCOMPLETE);
    if let Some(g) = cli.generate {
        return gitward::cli::print_generated(Cli::command(), g, gitward::exit::INCOMPLETE);
    }
    let Some(cmd) = cli.cmd else {
        return gitward::cli::usage_help(Cli::command()).into();
    };
    let code = match cmd {
        Cmd::Pin {
            state,
            session,
            worktree_dir,
            accept_armed,
            format,
            repo,
        } => tool::pin(&PinArgs {
            repo,
            state,
            session,
            worktree_dir,
            accept_armed,
            format,
        }),
        Cmd::Check {
            state,
            restore,
            session,
            audit_log,
            no_scan,
            policy,
            format,
            repo,
        } => tool::check(&CheckArgs {
            repo,
            state,
            session,
            restore,
            audit_log,
            scan: !no_scan,
            policy,
            format,
        }),
        Cmd::Scan {
            state,
            audit_log,
            format,
            repo,
        } => tool::scan_only(&CheckArgs {
            repo,
            state,
            session: None,
            restore: false,
            audit_log,
            scan: true,
            policy: None,
            format,
        }),
        Cmd::Plan {
            session,
            worktree_dir,
            policy,
            network,
            format,
            repo,
        } => gitward::plan::run_tool(&gitward::plan::ToolArgs {
            repo,
            session,
            worktree_dir,
            policy,
            network,
            format,
        }),
        Cmd::Hook { kind } => {
            use gitward::integrity::hook::{self, Agent};
            use std::io::Read;
            let mut input = String::new();
            if std::io::stdin().read_to_string(&mut input).is_err() {
                input.clear();
            }
            let (agent, h) = match kind {
                HookKind::ClaudeStop(h) => (Agent::Claude, h),
                HookKind::CodexStop(h) => (Agent::Codex, h),
                HookKind::GeminiAfterAgent(h) => (Agent::Gemini, h),
                HookKind::SessionStart {
                    state,
                    session,
                    worktree_dir,
                    repo,
                } => {
                    let ans = hook::session_start(
                        &input,
                        &PinArgs {
                            repo,
                            state,
                            session,
                            worktree_dir,
                            accept_armed: false,
                            format: gitward::cli::Format::Json,
                        },
                    );
                    return hook_answer(ans);
                }
            };
            let given = h.repo.is_some();
            let ans = hook::end_of_turn(
                agent,
                &input,
                &CheckArgs {
                    repo: h.repo.unwrap_or_default(),
                    state: h.state,
                    session: h.session,
                    restore: true,
                    audit_log: h.audit_log,
                    scan: !h.no_scan,
                    policy: None,
                    format: gitward::cli::Format::Json,
                },
                given,
            );
            return hook_answer(ans);
        }
        Cmd::Audit {
            format,
            baseline,
            fail_on,
            exclude,
            walk_all,
            paths,
        } => audit::run_with(
            &paths,
            &audit::RunOptions {
                format,
                baseline,
                fail_on,
                walk: audit::Walk {
                    exclude,
                    skip_dependencies: !walk_all,
                },
            },
        ),
    };
    code.into()
}

/// `--exclude GLOB`: compiled here so a bad pattern is a usage error naming it.
fn parse_glob(s: &str) -> Result<gitward::settings::glob::Glob, String> {
    gitward::settings::glob::Glob::new(s)
}

/// Print a hook's answer. When stdout cannot take it, the CLI would read silence as a clean
/// turn: say so on stderr and exit 2 (every CLI treats a non-zero exit as a hook failure, and
/// Codex and Gemini CLI read 2 as a block with stderr as the reason).
fn hook_answer(ans: gitward::integrity::hook::Answer) -> std::process::ExitCode {
    match gitward::cli::print("wt-check", &ans.stdout, gitward::exit::INCOMPLETE) {
        Ok(()) => std::process::ExitCode::from(ans.code),
        Err(code) => code.into(),
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

    /// Each subcommand's `--help` shows its own examples: every `wt-check <sub>` command in
    /// them (comments aside) is that subcommand.
    #[test]
    fn each_subcommand_shows_its_own_examples() {
        let cmd = Cli::command();
        let mut subs: Vec<(String, clap::Command)> = Vec::new();
        for s in cmd.get_subcommands() {
            subs.push((s.get_name().to_owned(), s.clone()));
            for h in s.get_subcommands() {
                subs.push((format!("{} {}", s.get_name(), h.get_name()), h.clone()));
            }
        }
        for (name, s) in subs {
            let Some(text) = s.get_after_long_help() else {
                panic!("wt-check {name} has no examples");
            };
            let text = text.to_string();
            for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
                for (i, _) in line.match_indices("wt-check ") {
                    let rest = &line[i + "wt-check ".len()..];
                    assert!(
                        rest.starts_with(&name),
                        "wt-check {name} --help shows another command: {line}"
                    );
                }
            }
        }
    }
}
