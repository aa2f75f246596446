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
    Bash,
    Zsh,
    Fish,
    Elvish,
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
pub fn parse_or_exit<T: clap::Parser>() -> T {
    match T::try_parse() {
        Ok(t) => t,
        Err(e) => {
            let code = if e.use_stderr() {
                crate::exit::USAGE.code
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(i32::from(code));
        }
    }
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
    match generate(cmd, what, &mut std::io::stdout().lock()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: cannot write to standard output: {e}");
            on_error.into()
        }
    }
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
