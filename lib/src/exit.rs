//! Exit codes shared by gitward's binaries, as data (documented in `docs/exit-codes.md`).
//!
//! `safe-git` and `git-shim` pass git's own exit status through, so their refusal codes sit
//! above anything git uses (git: 0, 1, 2 for some plumbing, 3–6 for `git config`, 128 fatal,
//! 129 usage, 128+n for signals) and below the shell's 126/127.

/// An exit code with its meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Code {
    pub code: u8,
    pub name: &'static str,
    pub meaning: &'static str,
}

impl Code {
    pub fn exit(self) -> ! {
        std::process::exit(i32::from(self.code))
    }
}

impl From<Code> for std::process::ExitCode {
    fn from(c: Code) -> Self {
        std::process::ExitCode::from(c.code)
    }
}

/// The gitward tool itself was called wrongly (bad flag, missing argument).
pub const USAGE: Code = Code {
    code: 120,
    name: "usage",
    meaning: "the gitward tool was called with bad arguments",
};
/// Refused: the subcommand, option or config key is outside what the tool allows.
pub const NOT_ALLOWED: Code = Code {
    code: 121,
    name: "not-allowed",
    meaning: "refused: subcommand, option or key outside the allow-list or the session's rules",
};
/// Refused: the repository's layout (git dir, .git file, commondir, worktree entry) cannot be vouched for.
pub const LAYOUT: Code = Code {
    code: 122,
    name: "layout",
    meaning: "refused: the repository's layout is redirected, tampered or unreadable",
};
/// Refused: config cannot be parsed, an include is past the depth bound, or a name cannot be neutralised.
pub const CONFIG: Code = Code {
    code: 123,
    name: "config",
    meaning: "refused: config cannot be parsed or fully neutralised",
};
/// Cannot start: no real git, a bad policy file, or another setup error.
pub const SETUP: Code = Code {
    code: 124,
    name: "setup",
    meaning: "cannot start: real git not found, bad policy file, or environment error",
};

/// The refusal codes of safe-git and git-shim.
pub const GIT_WRAPPER_CODES: &[Code] = &[USAGE, NOT_ALLOWED, LAYOUT, CONFIG, SETUP];

/// wt-check and settings-watch `check`: 0 clean, 1 findings, 2 cannot check.
pub const CLEAN: Code = Code {
    code: 0,
    name: "clean",
    meaning: "nothing found",
};
pub const FOUND: Code = Code {
    code: 1,
    name: "found",
    meaning: "findings reported (restored or held, or not)",
};
pub const INCOMPLETE: Code = Code {
    code: 2,
    name: "incomplete",
    meaning: "cannot check: an error or an incomplete walk; never reads as clean",
};

/// The codes of the checking tools.
pub const CHECK_CODES: &[Code] = &[CLEAN, FOUND, INCOMPLETE];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapper_codes_avoid_git_and_shell_codes() {
        for c in GIT_WRAPPER_CODES {
            assert!(!(0..=6).contains(&c.code) && c.code < 126, "{c:?}");
        }
        let mut v: Vec<u8> = GIT_WRAPPER_CODES.iter().map(|c| c.code).collect();
        v.dedup();
        assert_eq!(v.len(), GIT_WRAPPER_CODES.len());
    }
}

#[cfg(test)]
mod doc_tests {
    use super::*;

    /// docs/exit-codes.md lists every code with its name: the page cannot drift from the data.
    #[test]
    fn exit_code_page_matches_the_data() {
        let page = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/exit-codes.md"
        ))
        .unwrap();
        for c in GIT_WRAPPER_CODES.iter().chain(CHECK_CODES) {
            let row = format!("| {} | {} | {} |", c.code, c.name, c.meaning);
            assert!(
                page.contains(&row),
                "docs/exit-codes.md lacks the row {row}"
            );
        }
    }
}
