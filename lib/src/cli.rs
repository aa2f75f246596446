//! Conventions every gitward binary shares: `--generate man|bash|zsh|fish|elvish|powershell`
//! writes a man page or a completion script built from the binary's clap definition, and
//! output formats are chosen with `--format`.

use clap::ValueEnum;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What `--generate` writes to standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// A roff man page (`man -l -`).
    Man,
    /// Every man page, the tool's and one per subcommand (`wt-check-pin.1`, …), written as
    /// files into the current folder; their names go to standard output.
    ManPages,
    /// A bash completion script.
    Bash,
    /// A zsh completion script.
    Zsh,
    /// A fish completion script.
    Fish,
    /// An elvish completion script.
    Elvish,
    /// A PowerShell completion script.
    Powershell,
}

/// Write the man page or completion script for `cmd` to `out`.
pub fn generate(
    mut cmd: clap::Command,
    what: Generate,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    use clap_complete::Shell;
    let name = cmd.get_name().to_owned();
    let shell = match what {
        Generate::Man => {
            return clap_mangen::Man::new(cmd).render(out);
        }
        Generate::ManPages => {
            for page in man_pages(cmd, Path::new("."))? {
                writeln!(out, "{}", page.display())?;
            }
            return Ok(());
        }
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
        Generate::Elvish => Shell::Elvish,
        Generate::Powershell => Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
}

/// Write the man page of `cmd` and of each of its subcommands (not hidden ones, not `help`)
/// into `dir` as `<name>.1`, `<name>-<sub>.1`, …: the pages the main page's SUBCOMMANDS
/// section refers to. Returns the files written.
pub fn man_pages(cmd: clap::Command, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    fn walk(cmd: clap::Command, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            walk(sub, dir, out)?;
        }
        out.push(clap_mangen::Man::new(cmd).generate_to(dir)?);
        Ok(())
    }
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(cmd, dir, &mut out)?;
    out.reverse();
    Ok(out)
}

/// Parse the command line, or exit the way every gitward binary does: `--help` and
/// `--version` print to stdout and exit 0; bad arguments print clap's message and exit 120
/// ([`crate::exit::USAGE`]), never clap's default 2 (which is "incomplete" for the checkers).
/// When the help cannot be written (a full disk), one line on stderr and `on_stdout_error`,
/// the tool's code for "cannot write to standard output" (see [`print`]).
pub fn parse_or_exit<T: clap::Parser>(on_stdout_error: crate::exit::Code) -> T {
    match T::try_parse() {
        Ok(t) => t,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version: the text goes to stdout and must arrive.
                let text = e.render().to_string();
                let name = T::command().get_name().to_owned();
                let code = match print(&name, &text, on_stdout_error) {
                    Ok(()) => 0,
                    Err(c) => c.code,
                };
                std::process::exit(i32::from(code));
            }
            let _ = e.print();
            std::process::exit(i32::from(crate::exit::USAGE.code));
        }
    }
}

/// The one way a gitward binary writes to standard output: all of `text`, then a flush. A
/// write error (a full disk, a closed pipe) is never a panic and never silent: it prints one
/// line on stderr, `<tool>: cannot write to standard output: <error>`, and returns
/// `on_error`, the tool's documented code for it (docs/exit-codes.md: 2 for the checkers —
/// the result did not reach the caller, so it never reads as clean — and 124 for safe-git,
/// git-shim and agent-shell).
pub fn print(tool: &str, text: &str, on_error: crate::exit::Code) -> Result<(), crate::exit::Code> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) => {
            eprintln!("{tool}: cannot write to standard output: {e}");
            Err(on_error)
        }
    }
}

/// Print the help of `cmd` on stderr (a missing subcommand is a usage error, not output).
pub fn usage_help(mut cmd: clap::Command) -> crate::exit::Code {
    eprint!("{}", cmd.render_help());
    crate::exit::USAGE
}

/// `--generate`: write the man page or completion script of `cmd` to standard output.
/// A write error is reported on stderr (naming the tool) and gives `on_error`, the tool's
/// own code for "cannot do it".
pub fn print_generated(
    cmd: clap::Command,
    what: Generate,
    on_error: crate::exit::Code,
) -> std::process::ExitCode {
    let name = cmd.get_name().to_owned();
    let mut out = std::io::stdout().lock();
    match generate(cmd, what, &mut out).and_then(|()| out.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: cannot write to standard output: {e}");
            on_error.into()
        }
    }
}

/// Every option, positional and subcommand of `cmd` (and of its subcommands) that has no
/// help text, as `tool sub --option`: what each binary's test requires to be empty, so that
/// `--help` and the man pages never show a bare option.
pub fn undocumented(cmd: &clap::Command) -> Vec<String> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if a.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            let empty = a.get_help().is_none_or(|h| h.to_string().trim().is_empty());
            if empty {
                let name = a
                    .get_long()
                    .map(|l| format!("--{l}"))
                    .or_else(|| a.get_short().map(|c| format!("-{c}")))
                    .unwrap_or_else(|| format!("<{id}>"));
                out.push(format!("{path} {name}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            let p = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none() {
                out.push(p.clone());
            }
            walk(sub, &p, out);
        }
    }
    let mut cmd = cmd.clone();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, cmd.get_name(), &mut out);
    out
}

/// Output formats for data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Format {
    /// Lines for people.
    #[default]
    Human,
    /// JSON (one document, or one object per line for event streams).
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_and_completions_render() {
        let cmd = clap::Command::new("demo")
            .about("demo tool")
            .arg(clap::Arg::new("x").long("x"));
        let mut buf = Vec::new();
        generate(cmd.clone(), Generate::Man, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains(".TH demo"));
        let mut buf = Vec::new();
        generate(cmd, Generate::Bash, &mut buf).unwrap();
        assert!(String::from_utf8(buf).unwrap().contains("demo"));
    }

    #[test]
    fn a_man_page_per_subcommand() {
        let cmd = clap::Command::new("demo")
            .about("demo tool")
            .subcommand(clap::Command::new("pin").about("pin it"))
            .subcommand(
                clap::Command::new("hook")
                    .subcommand(clap::Command::new("claude-stop").about("the hook")),
            )
            .subcommand(clap::Command::new("secret").hide(true));
        let d = tempfile::tempdir().unwrap();
        let pages = man_pages(cmd, d.path()).unwrap();
        let mut names: Vec<String> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "demo-hook-claude-stop.1",
                "demo-hook.1",
                "demo-pin.1",
                "demo.1"
            ]
        );
        let pin = std::fs::read_to_string(d.path().join("demo-pin.1")).unwrap();
        assert!(pin.contains("pin it"), "{pin}");
        let main = std::fs::read_to_string(d.path().join("demo.1")).unwrap();
        assert!(main.contains("demo\\-pin(1)"), "{main}");
    }
}
