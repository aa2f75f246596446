//! Conventions every gitward binary shares: `--generate man|bash|zsh|fish|elvish|powershell`
//! writes a man page or a completion script built from the binary's clap definition, and
//! output formats are chosen with `--format`.

use clap::ValueEnum;
use std::io::Write;

/// What `--generate` writes to standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// A roff man page (`man -l -`).
    Man,
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
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
        Generate::Elvish => Shell::Elvish,
        Generate::Powershell => Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
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
}
