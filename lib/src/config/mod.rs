//! Enumeration of every config value git may read for a repository, with its origin (file,
//! scope, include chain, condition) and its trust, following `include.path` and
//! `includeIf.<condition>.path` as a **superset**: every target is read, whatever its
//! condition, because a condition that is false now (`onbranch:`, `gitdir:`,
//! `hasconfig:remote.*.url:`) can become true after the agent's next checkout or `git remote
//! add`, and because the reader must never run git to evaluate it.
//!
//! Invariants:
//! - Nothing here starts a process or opens a repository through gix's defaults: files are
//!   read with `std::fs` (non-blocking open, regular files only, bounded size, never through
//!   procfs: [`process_dependent`]) and parsed with a port of git's own parser (`parse.rs`:
//!   the same keys, values and bad lines as git, byte for byte); includes are resolved here,
//!   the way git's `config.c` resolves them (relative to the including file's folder, `~/`
//!   from the given home, `%(prefix)/` from the given git prefix; depth past
//!   `MAX_INCLUDE_DEPTH` = 10 is an error, as is a cycle).
//! - Values come out in git's load order (system, global, local, worktree; an included file's
//!   values are inserted right after the `include.path` value that names it), so "last value
//!   wins" questions ([`Enumeration::get_last`]) are answered as git answers them.
//! - Unknown is not clean, and what git reads fine is not refused: an error git makes too
//!   (a bad line, a cycle, an unreadable file) is a [`ConfigError`] where git reads the file
//!   now, and is recorded in [`Enumeration::tolerated`] where it does not (behind an
//!   `includeIf`, a disabled `config.worktree`, another worktree's or a submodule's config),
//!   because git dies before running anything whenever it reads such a file. What gitward
//!   cannot know (a FIFO, a file past the size bound, a path through procfs) is an error
//!   wherever it is. Callers refuse (safe-git) or report (wt-check). A *missing* include
//!   target is not an error (git ignores it too) but is recorded in [`Enumeration::files`],
//!   because the agent may create it later.
//! - Trust is a type ([`Trust`]): a value is trusted only when its top-level file is the
//!   owner's system or global config **and** no file of its include chain lies inside the
//!   repository (work tree, git dir, common dir) or another root the agent can write.

#[cfg(test)]
mod differential;
mod parse;
mod read;
#[cfg(test)]
mod tests;

use crate::catalogue::{self, loader, ConfigKey, KeyEntry};
use gix::bstr::{BString, ByteSlice};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use read::read_bounded;
pub use read::{git_prefix_for, interpolate_path, process_dependent};

/// git's `MAX_INCLUDE_DEPTH` (`config.c`): a file may be included at nesting depth 1 to 10;
/// the eleventh nested include makes git die ("exceeded maximum include depth").
pub const MAX_INCLUDE_DEPTH: usize = 10;

/// Errors while enumerating. Each names the file and what is wrong, in one line.
///
/// Two kinds ([`ConfigError::git_fails_too`]): errors git makes too when it reads the file
/// (a bad config line, an include cycle or one nested too deep, an unreadable file or a
/// folder, an include path git cannot expand), and errors that leave gitward unable to know
/// what git would read (a FIFO or device, a file past the size bound, a path whose meaning
/// depends on the process that opens it, a name that cannot be neutralised, too many files).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// git's own words: git stops reading (and dies) at this line.
    #[error("{}: bad config line {line} (git refuses the file there too)", file.display())]
    Parse { file: PathBuf, line: usize },
    #[error("{}: include nested deeper than git's limit of {MAX_INCLUDE_DEPTH} (chain: {})", chain.last().map(|p| p.display().to_string()).unwrap_or_default(), display_chain(chain))]
    IncludeDepth { chain: Vec<PathBuf> },
    #[error("{}: include cycle: {}", chain.last().map(|p| p.display().to_string()).unwrap_or_default(), display_chain(chain))]
    IncludeCycle { chain: Vec<PathBuf> },
    /// git cannot expand or use the include path either (no value, unknown `~user`).
    #[error("{}:{line}: include target {target:?} cannot be resolved: {reason}", file.display())]
    IncludePath {
        file: PathBuf,
        line: usize,
        target: String,
        reason: String,
    },
    /// gitward lacks what git would use to expand the path (the home folder, git's prefix).
    #[error("{}:{line}: include target {target:?} cannot be resolved here: {reason}", file.display())]
    IncludeUnresolved {
        file: PathBuf,
        line: usize,
        target: String,
        reason: String,
    },
    #[error("{}: cannot read: {source}", file.display())]
    Unreadable {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a regular file ({kind}); git cannot read it as config either", file.display())]
    NotAFile { file: PathBuf, kind: &'static str },
    #[error("{}: {size} bytes, more than the limit of {limit} bytes", file.display())]
    TooLarge {
        file: PathBuf,
        size: u64,
        limit: u64,
    },
    /// The path names one file for git and another for gitward (`/proc/self/…`, `/dev/fd/…`,
    /// a link into them, anything on a procfs mount).
    #[error("{}: {reason}; git would read another file than gitward there (rule: no config or attributes path through procfs)", file.display())]
    ProcessDependent { file: PathBuf, reason: String },
    #[error("{}: more than {limit} config files to read (includes and submodules); refusing to go on", file.display())]
    TooManyFiles { file: PathBuf, limit: usize },
    /// A section or variable name that is not UTF-8 (git's parser takes only ASCII letters,
    /// digits, `-` and `.` there, so git refuses such a file too; kept as a refusal in case a
    /// git version ever differs). Subsections may hold any bytes and are kept exactly.
    #[error("{}: line {line}: section or variable name is not UTF-8", file.display())]
    NonUtf8Name { file: PathBuf, line: usize },
    #[error("{}: walk of submodule git dirs cut short: {reason}", dir.display())]
    Incomplete { dir: PathBuf, reason: String },
}

impl ConfigError {
    /// Does git fail too (die, at config load) whenever it reads the file this error is
    /// about? Then a file git does not read for this repository right now (behind an
    /// `includeIf`, a `config.worktree` while `extensions.worktreeConfig` is off, another
    /// worktree's or a submodule's) can be left out safely: should git ever read it, git
    /// stops before it runs anything that file names. Everything else means gitward cannot
    /// know what git would read, which is a refusal wherever the file is.
    pub fn git_fails_too(&self) -> bool {
        match self {
            ConfigError::Parse { .. }
            | ConfigError::IncludeDepth { .. }
            | ConfigError::IncludeCycle { .. }
            | ConfigError::IncludePath { .. }
            | ConfigError::Unreadable { .. } => true,
            ConfigError::NotAFile { kind, .. } => *kind == "a folder",
            ConfigError::IncludeUnresolved { .. }
            | ConfigError::TooLarge { .. }
            | ConfigError::ProcessDependent { .. }
            | ConfigError::TooManyFiles { .. }
            | ConfigError::NonUtf8Name { .. }
            | ConfigError::Incomplete { .. } => false,
        }
    }
}

/// A file git does not read for this repository now and that git could not read either (see
/// [`ConfigError::git_fails_too`]): left out of the enumeration, with the reason.
#[derive(Debug)]
pub struct Tolerated {
    /// Top-level file → … → the file in question (for an error of the include line itself,
    /// such as `path` without a value, the file holding that line).
    pub chain: Vec<PathBuf>,
    pub scope: Scope,
    /// Why git does not read it now: `includeIf`, disabled worktree config, other git dir.
    pub why: &'static str,
    pub error: ConfigError,
}

fn display_chain(chain: &[PathBuf]) -> String {
    chain
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// Which top-level file a value comes from, in git's words (`git config --show-scope`). An
/// included file has the scope of the top-level file that (transitively) includes it, as git
/// reports it; [`Origin::is_include`] tells the two apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum Scope {
    /// `$(prefix)/etc/gitconfig` (or `/etc/gitconfig`).
    System,
    /// `$XDG_CONFIG_HOME/git/config` or `~/.config/git/config`, then `~/.gitconfig`.
    Global,
    /// `<common dir>/config`.
    Local,
    /// `config.worktree` of the current git dir (read by git only with
    /// `extensions.worktreeConfig`; enumerated always).
    Worktree,
    /// `worktrees/<id>/config.worktree` of another linked worktree of the same repository:
    /// read by git when it runs in that worktree.
    OtherWorktree { git_dir: PathBuf },
    /// `config` or `config.worktree` of a submodule git dir (under `modules/` or given by the
    /// caller): read by git inside the submodule, including superproject recursion.
    Submodule { git_dir: PathBuf },
}

impl Scope {
    /// Is this one of the files git reads for the repository itself (as opposed to another
    /// worktree's or a submodule's)?
    pub fn is_this_repository(&self) -> bool {
        matches!(
            self,
            Scope::System | Scope::Global | Scope::Local | Scope::Worktree
        )
    }

    /// git's `--show-scope` word.
    pub fn git_word(&self) -> &'static str {
        match self {
            Scope::System => "system",
            Scope::Global => "global",
            Scope::Local => "local",
            Scope::Worktree | Scope::OtherWorktree { .. } => "worktree",
            Scope::Submodule { .. } => "submodule",
        }
    }
}

/// Trust of a file, in the spirit of `gix-sec`: whether a program it names may run outside the
/// sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// The owner's system or global config, and no file of the include chain lies in an
    /// untrusted root.
    Trusted,
    /// Anything else: repository files, submodule files, or an owner's file that includes (or
    /// is) a path inside the repository or another root the agent can write.
    Untrusted,
}

/// Where a value (or a file) comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The file, as git would name it (lexical path, not resolved through links).
    pub file: PathBuf,
    /// The scope of the top-level file (git's `--show-scope`).
    pub scope: Scope,
    /// Top-level file → … → this file (length `depth + 1`).
    pub include_chain: Vec<PathBuf>,
    /// 0 for a top-level file, n for a file included n levels deep.
    pub depth: usize,
    /// The `includeIf` condition of the last include step (`gitdir:~/work/`,
    /// `onbranch:main`, …); `None` for top-level files and plain `include.path`. Conditions are
    /// never evaluated: the target is read whatever the condition says.
    pub condition: Option<String>,
    /// Some step of the include chain is an `includeIf` (git reads this file only when every
    /// such condition holds).
    pub conditional: bool,
    pub trust: Trust,
}

impl Origin {
    /// Was this file reached through `include.path` / `includeIf`?
    pub fn is_include(&self) -> bool {
        self.depth > 0
    }
}

/// One `section[.subsection].name [= value]` line, with its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// Section name, lower-cased as git reads it (compare ASCII-case-insensitively anyway);
    /// empty for a variable before any section header.
    pub section: String,
    /// Subsection as git assembles it: as written in the `[section "sub"]` form
    /// (case-sensitive), lower-cased in the deprecated `[section.sub]` form, `a.b` for the
    /// mixed `[section.A "b"]` (everything between the key's first and last dot, as git's
    /// `parse_config_key` splits it). Text for display and for matching the catalogue (which
    /// looks at section and name only): lossy (U+FFFD) where the bytes are not UTF-8.
    pub subsection: Option<String>,
    /// The subsection's exact bytes (git takes any byte but newline and NUL there). A key
    /// handed back to git (a `-c` neutraliser) is built from these, never from the lossy text,
    /// or `[filter "\xff"]` would be neutralised under another name.
    pub raw_subsection: Option<BString>,
    /// Variable name, lower-cased as git reads it.
    pub name: String,
    /// The value after git's unquoting; `None` for a variable written without `=` (an
    /// implicit boolean `true`).
    pub value: Option<BString>,
    /// 1-based line of the variable in its file.
    pub line: usize,
    pub origin: Arc<Origin>,
}

impl Value {
    /// `section.subsection.name` with section and name lower-cased and the subsection as is —
    /// git's canonical form (what `git config -l` prints).
    pub fn key(&self) -> String {
        if self.section.is_empty() && self.subsection.is_none() {
            // A variable before any section header: git's key is the bare name.
            return self.name.to_ascii_lowercase();
        }
        let mut k = self.section.to_ascii_lowercase();
        if let Some(s) = &self.subsection {
            k.push('.');
            k.push_str(s);
        }
        k.push('.');
        k.push_str(&self.name.to_ascii_lowercase());
        k
    }

    /// [`Value::key`] with the subsection's exact bytes: the key as git reads it, byte for byte.
    pub fn key_bytes(&self) -> BString {
        if self.section.is_empty() && self.raw_subsection.is_none() {
            return self.name.to_ascii_lowercase().into();
        }
        let mut k: Vec<u8> = self.section.to_ascii_lowercase().into_bytes();
        if let Some(s) = &self.raw_subsection {
            k.push(b'.');
            k.extend_from_slice(s);
        }
        k.push(b'.');
        k.extend_from_slice(self.name.to_ascii_lowercase().as_bytes());
        k.into()
    }

    /// The key split as the catalogue splits it.
    pub fn config_key(&self) -> ConfigKey<'_> {
        ConfigKey {
            section: &self.section,
            subsection: self.subsection.as_deref(),
            name: &self.name,
        }
    }

    /// Does this value's key match `key` (`section[.sub].name`; section and name compared
    /// case-insensitively, subsection exactly)?
    pub fn is(&self, key: &str) -> bool {
        ConfigKey::parse(key).is_some_and(|k| {
            k.section.eq_ignore_ascii_case(&self.section)
                && k.name.eq_ignore_ascii_case(&self.name)
                && k.subsection == self.subsection.as_deref()
        })
    }

    /// The value as text (lossy for non-UTF-8 bytes); `"true"` for an implicit boolean, as git
    /// reads it.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.value {
            Some(v) => v.to_str_lossy(),
            None => Cow::Borrowed("true"),
        }
    }

    /// The value as git's boolean (`true`/`yes`/`on`/`1`…, `false`/`no`/`off`/`0`/empty;
    /// implicit = true); `None` when it is not a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match &self.value {
            None => Some(true),
            Some(v) => gix::config::Boolean::try_from(v.as_bstr())
                .ok()
                .map(|b| b.0),
        }
    }
}

/// A section header, recorded even when the section holds no variable (safe-git neutralises
/// every driver name defined anywhere, including empty ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionHeader {
    pub section: String,
    /// Lossy (U+FFFD) where not UTF-8; see [`Value::subsection`].
    pub subsection: Option<String>,
    /// The subsection's exact bytes.
    pub raw_subsection: Option<BString>,
    pub line: usize,
    pub origin: Arc<Origin>,
}

/// What happened to a file that was (to be) read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileState {
    /// Read and parsed.
    Read { size: u64 },
    /// Does not exist (or a path component is not a folder). Git skips it; the agent may create
    /// it later.
    Missing,
}

/// A file read (or looked for) during enumeration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    #[serde(serialize_with = "serialize_arc")]
    pub origin: Arc<Origin>,
    pub state: FileState,
    /// The file itself is a symbolic link.
    pub is_link: bool,
    /// Where the path resolves when that differs from the path as named (a link in the file
    /// or any of its folders). Include targets may legitimately be links in the owner's home.
    pub resolved: Option<PathBuf>,
}

/// Submodule git dirs to enumerate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Submodules {
    /// None.
    #[default]
    Skip,
    /// Walk `<common dir>/modules/` and every `<common dir>/worktrees/<id>/modules/` at any
    /// depth without following links (bounded; past the bound → [`ConfigError::Incomplete`]). Every folder holding a `config` file or `HEAD` is
    /// taken as a submodule git dir.
    Walk,
    /// These git dirs (e.g. from `layout::submodule_git_dirs`).
    Dirs(Vec<PathBuf>),
}

/// Bounds on the work done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest config file read (past it → [`ConfigError::TooLarge`]).
    pub max_file_size: u64,
    /// Most files read in one enumeration, includes and submodules counted.
    pub max_files: usize,
    /// Most folder entries looked at while walking `modules/`.
    pub max_walk_entries: usize,
    /// Deepest folder nesting under `modules/`.
    pub max_walk_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_size: 4 << 20,
            max_files: 4096,
            max_walk_entries: 100_000,
            max_walk_depth: 64,
        }
    }
}

/// What to enumerate. Every path is given: this module reads no environment variable and
/// does not discover anything.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The system config file (`env::GitProbe::system_config`); `None` = not read (as
    /// `GIT_CONFIG_NOSYSTEM`).
    pub system: Option<PathBuf>,
    /// The global files in git's order ([`global_files`]).
    pub global: Vec<PathBuf>,
    /// The repository's common dir: `<common dir>/config` is the local config.
    pub common_dir: Option<PathBuf>,
    /// The current git dir: its `config.worktree` is the worktree config.
    pub git_dir: Option<PathBuf>,
    /// Also read `worktrees/<id>/config.worktree` of every linked worktree entry.
    pub linked_worktrees: bool,
    pub submodules: Submodules,
    /// The owner's home, for `~/` in include paths.
    pub home: Option<PathBuf>,
    /// git's install prefix, for `%(prefix)/` in include paths ([`git_prefix_for`]).
    pub git_prefix: Option<PathBuf>,
    /// Roots the agent can write: the work tree, git dir, common dir and every other writable
    /// root. A file inside one is never trusted.
    pub untrusted_roots: Vec<PathBuf>,
    pub limits: Limits,
    /// Which git's value reader to follow ([`Dialect`]); set from the probe by
    /// [`Options::with_owner`].
    pub dialect: Dialect,
}

/// git's value reader changed in 2.45 (commit f0b8944430): before, every unquoted whitespace
/// byte inside a value (tab, lone CR) became a space; since, it is kept. Names and keys read
/// the same in both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dialect {
    /// git ≥ 2.45.
    Verbatim,
    /// git < 2.45.
    SquashInnerWhitespace,
    /// Not known which git will read the files (the audit, pin/check): values as git ≥ 2.45
    /// reads them, and an include path that reads differently for older gits is followed in
    /// both spellings (a superset of files).
    #[default]
    Any,
}

impl Dialect {
    /// The dialect of a git version.
    pub fn of(v: catalogue::GitVersion) -> Self {
        if v >= catalogue::GitVersion::new(2, 45, 0) {
            Dialect::Verbatim
        } else {
            Dialect::SquashInnerWhitespace
        }
    }
}

impl Options {
    /// The repository's own files: local config, worktree config, untrusted roots (work tree,
    /// git dir, common dir). Add the owner's files with [`Options::with_owner`].
    pub fn for_repository(work_tree: Option<&Path>, git_dir: &Path, common_dir: &Path) -> Self {
        let mut untrusted_roots = vec![git_dir.to_path_buf(), common_dir.to_path_buf()];
        untrusted_roots.extend(work_tree.map(Path::to_path_buf));
        Options {
            common_dir: Some(common_dir.to_path_buf()),
            git_dir: Some(git_dir.to_path_buf()),
            untrusted_roots,
            ..Options::default()
        }
    }

    /// The owner's files: the system config of this git (if any), the global files under
    /// `home` / `xdg_config_home`, and `%(prefix)` from the git's exec path.
    pub fn with_owner(
        mut self,
        probe: Option<&crate::env::GitProbe>,
        home: Option<&Path>,
        xdg_config_home: Option<&Path>,
    ) -> Self {
        if let Some(p) = probe {
            self.system = Some(p.system_config.clone());
            self.git_prefix = Some(git_prefix_for(&p.exec_path));
            self.dialect = Dialect::of(p.version());
        }
        self.global = global_files(home, xdg_config_home);
        self.home = home.map(Path::to_path_buf);
        self
    }
}

/// git's global config files, in the order git reads them: `$XDG_CONFIG_HOME/git/config`
/// (or `~/.config/git/config` when `XDG_CONFIG_HOME` is unset or empty), then `~/.gitconfig`.
pub fn global_files(home: Option<&Path>, xdg_config_home: Option<&Path>) -> Vec<PathBuf> {
    let mut v = Vec::new();
    match (xdg_config_home.filter(|p| !p.as_os_str().is_empty()), home) {
        (Some(x), _) => v.push(x.join("git/config")),
        (None, Some(h)) => v.push(h.join(".config/git/config")),
        (None, None) => {}
    }
    if let Some(h) = home {
        v.push(h.join(".gitconfig"));
    }
    v
}

fn serialize_arc<S: serde::Serializer, T: Serialize>(a: &Arc<T>, s: S) -> Result<S::Ok, S::Error> {
    a.as_ref().serialize(s)
}

impl Serialize for Value {
    /// `{key, section, subsection, name, value (null when implicit), line, origin}`; the value
    /// as text, lossy for non-UTF-8 bytes.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Value", 7)?;
        st.serialize_field("key", &self.key())?;
        st.serialize_field("section", &self.section)?;
        st.serialize_field("subsection", &self.subsection)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field(
            "value",
            &self.value.as_ref().map(|v| v.to_str_lossy().into_owned()),
        )?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("origin", self.origin.as_ref())?;
        st.end()
    }
}

/// A value that matches the catalogue, with the rows it matches.
#[derive(Debug, Clone)]
pub struct Armed<'a> {
    pub value: &'a Value,
    pub entries: Vec<&'static KeyEntry>,
}

/// Everything git may read, in load order.
#[derive(Debug, Clone, Default)]
pub struct Enumeration {
    values: Vec<Value>,
    sections: Vec<SectionHeader>,
    files: Vec<FileEntry>,
    worktree_config: bool,
    /// The untrusted roots, as given and resolved through links.
    roots: Vec<PathBuf>,
    tolerated: Vec<Arc<Tolerated>>,
}

/// The last value of `key` (`section.name`, lower case, no subsection) in one config file's
/// text, parsed as git parses it (sections, quoting, escapes, continuation lines, comments;
/// `None` for a key without `=`), without following includes: for the layout questions the
/// integrity checks ask of a git dir's own `config` (`core.worktree`), where the file is the
/// agent's to write and a line scan would take `[foo] worktree = x` or a quoted `#` wrongly.
/// A file git would reject (a bad line) answers from the lines before it, as git stops there.
pub fn last_value_in_file(bytes: &[u8], key: &str) -> Option<String> {
    let events = match parse::parse(bytes) {
        Ok(e) => e,
        Err((e, _)) => e,
    };
    events.iter().rev().find_map(|ev| match ev {
        parse::Event::Entry(e) if e.key == key.as_bytes() => e
            .value
            .as_ref()
            .map(|v| String::from_utf8_lossy(v).into_owned()),
        _ => None,
    })
}

/// Enumerate every config value git may read under `opts`. Runs no program.
pub fn enumerate(opts: &Options) -> Result<Enumeration, ConfigError> {
    read::Loader::new(opts).run()
}

impl Enumeration {
    /// Every value, in git's load order (this repository's files first — system, global,
    /// local, worktree, includes in place — then other worktrees' and submodules' files).
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Every section header, in the same order.
    pub fn sections(&self) -> &[SectionHeader] {
        &self.sections
    }

    /// Every file read or looked for, with its origin, in load order.
    pub fn files(&self) -> &[FileEntry] {
        &self.files
    }

    /// Files left out because git does not read them now and would fail on them if it did
    /// ([`ConfigError::git_fails_too`]): a broken file behind an `includeIf`, an unreadable
    /// `config.worktree` while the extension is off, … Reported by the audit as warnings.
    pub fn tolerated(&self) -> &[Arc<Tolerated>] {
        &self.tolerated
    }

    /// Is `extensions.worktreeConfig` on? Like git, only the common dir's `config` file itself
    /// counts (git reads the repository format from that one file, without includes). The
    /// `config.worktree` file is enumerated either way.
    pub fn worktree_config_enabled(&self) -> bool {
        self.worktree_config
    }

    /// Would git (running in this repository) read this value? System, global, local and
    /// their includes; the worktree config only with `extensions.worktreeConfig`.
    pub fn is_effective(&self, v: &Value) -> bool {
        match v.origin.scope {
            Scope::System | Scope::Global | Scope::Local => true,
            Scope::Worktree => self.worktree_config,
            Scope::OtherWorktree { .. } | Scope::Submodule { .. } => false,
        }
    }

    /// The values git would see for `key`, in order (the last one wins for single-valued keys).
    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.values
            .iter()
            .filter(move |v| v.is(key) && self.is_effective(v))
    }

    /// The effective value of a single-valued key (`core.hooksPath`, `core.attributesFile`,
    /// `core.worktree`, …): the last one git reads.
    pub fn get_last(&self, key: &str) -> Option<&Value> {
        self.values
            .iter()
            .rev()
            .find(|v| v.is(key) && self.is_effective(v))
    }

    /// The effective value for a catalogue pattern with no subsection (e.g.
    /// `catalogue::loader::HOOKS_PATH`): the last one git reads. For per-name patterns, the
    /// last of any name.
    pub fn last_of(&self, pattern: catalogue::KeyPattern) -> Option<&Value> {
        self.values
            .iter()
            .rev()
            .find(|v| pattern.matches(&v.config_key()) && self.is_effective(v))
    }

    /// Every value (from any file, effective or not) that matches the catalogue, with its rows.
    pub fn armed(&self) -> Vec<Armed<'_>> {
        self.values
            .iter()
            .filter_map(|v| {
                let key = v.config_key();
                let entries: Vec<&'static KeyEntry> = catalogue::KEYS
                    .iter()
                    .filter(|e| e.key.matches(&key))
                    .collect();
                (!entries.is_empty()).then_some(Armed { value: v, entries })
            })
            .collect()
    }

    /// Every `(section lower-cased, subsection as its exact bytes)` defined in any file read —
    /// a strict superset of the driver, tool and hook names git could use.
    pub fn per_name_sections(&self) -> BTreeSet<(String, BString)> {
        self.sections
            .iter()
            .filter_map(|s| {
                s.raw_subsection
                    .as_ref()
                    .map(|sub| (s.section.to_ascii_lowercase(), sub.clone()))
            })
            .collect()
    }

    /// Subsection names defined for `section` (e.g. every `filter.<name>`), from any file.
    pub fn names_in(&self, section: &str) -> BTreeSet<String> {
        self.sections
            .iter()
            .filter(|s| s.section.eq_ignore_ascii_case(section))
            .filter_map(|s| s.subsection.clone())
            .collect()
    }

    /// The last trusted value of every key set in trusted files, keyed by the whole key
    /// lower-cased (the form `env::Defused::reassert_trusted` takes).
    pub fn trusted_values(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        for v in &self.values {
            if v.origin.trust == Trust::Trusted && self.is_effective(v) {
                m.insert(v.key().to_ascii_lowercase(), v.text().into_owned());
            }
        }
        m
    }

    /// Trusted values (the owner's own files) of program-running or redirecting keys whose
    /// value still reaches into an untrusted root: a relative path (git resolves it from the
    /// work-tree top, e.g. an owner's global `core.hooksPath = .githooks`, or a command whose
    /// first word is `./tool`) or an absolute path inside a root. The file is the owner's; the
    /// program is the agent's.
    pub fn trusted_reaching_untrusted(&self) -> Vec<&Value> {
        self.values
            .iter()
            .filter(|v| v.origin.trust == Trust::Trusted)
            .filter(|v| {
                let key = v.config_key();
                let rows: Vec<&KeyEntry> = catalogue::KEYS
                    .iter()
                    .filter(|e| e.key.matches(&key))
                    .collect();
                let runs = rows.iter().any(|e| {
                    matches!(
                        e.effect,
                        catalogue::Effect::RunsShell | catalogue::Effect::RunsProgram
                    )
                });
                let names_path = rows.iter().any(|e| {
                    matches!(
                        e.effect,
                        catalogue::Effect::EnablesProgram | catalogue::Effect::Redirects
                    )
                });
                let Some(raw) = v.value.as_ref() else {
                    return false;
                };
                let text = raw.to_str_lossy();
                let text = text.trim();
                let word = if runs {
                    // A shell command: its first word; `!cmd` aliases too.
                    text.trim_start_matches('!')
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                } else if names_path {
                    text
                } else {
                    return false;
                };
                if word.is_empty() || word.contains("://") || word.contains("::") {
                    return false;
                }
                let p = Path::new(word);
                if p.is_absolute() {
                    let resolved = read::resolve_lenient(p);
                    self.roots
                        .iter()
                        .any(|r| p.starts_with(r) || resolved.starts_with(r))
                } else if runs {
                    // A program without a slash is looked up on PATH.
                    word.contains('/')
                } else {
                    // A folder or file git resolves from where it runs (`~` is the owner's).
                    !word.starts_with('~') && !word.starts_with("%(prefix)")
                }
            })
            .collect()
    }

    /// Values that come from untrusted files and that git would read.
    pub fn untrusted_effective(&self) -> impl Iterator<Item = &Value> {
        self.values
            .iter()
            .filter(|v| v.origin.trust == Trust::Untrusted && self.is_effective(v))
    }
}

/// A variable of one file read on its own (no includes) by [`parse_bytes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// Lower-cased, as git reads it (empty for a variable before any section header).
    pub section: String,
    /// As git assembles it (any bytes; `diff.a` for `[diff.a "b"]`'s … see [`parse_bytes`]).
    pub subsection: Option<BString>,
    /// Lower-cased.
    pub name: String,
    pub value: Option<BString>,
    pub line: usize,
}

impl RawEntry {
    /// The key split as the catalogue splits it, when the subsection is UTF-8.
    pub fn config_key(&self) -> Option<ConfigKey<'_>> {
        let subsection = match &self.subsection {
            None => None,
            Some(s) => Some(std::str::from_utf8(s).ok()?),
        };
        Some(ConfigKey {
            section: &self.section,
            subsection,
            name: &self.name,
        })
    }
}

/// One config file's bytes as git reads them (`config.c`'s parser; no includes followed):
/// every section header `(section, subsection, line)` and every variable, in order, up to
/// `bad_line` when git stops there ("bad config line N") — everything before it is what git
/// has read when it dies. For the few readers that need a single file the way git reads it
/// without the whole enumeration: the repository format (`extensions.*` from the common
/// dir's `config` alone), a nested repository's `config`, a `.gitmodules` blob.
/// `[diff.a "b"]` is the section `diff` with the subsection `a.b`, as git reads it.
pub fn parse_bytes(bytes: &[u8], dialect: Dialect) -> RawFile {
    let (events, bad) = match parse::parse(bytes) {
        Ok(ev) => (ev, None),
        Err((ev, b)) => (ev, Some(b.line)),
    };
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut out = RawFile {
        sections: Vec::new(),
        entries: Vec::new(),
        bad_line: bad,
    };
    for ev in events {
        match ev {
            parse::Event::Section { stem, line } => {
                let (sec, sub) = parse::split_stem(&stem);
                out.sections
                    .push((lossy(sec), sub.map(|s| BString::from(s.to_vec())), line));
            }
            parse::Event::Entry(e) => {
                let (sec, sub, name) = parse::split_key(&e.key);
                let value = match (dialect, e.squashed) {
                    (Dialect::SquashInnerWhitespace, Some(old)) => Some(old),
                    _ => e.value,
                };
                out.entries.push(RawEntry {
                    section: lossy(sec),
                    subsection: sub.map(|s| BString::from(s.to_vec())),
                    name: lossy(name),
                    value: value.map(BString::from),
                    line: e.line,
                });
            }
        }
    }
    out
}

/// What [`parse_bytes`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawFile {
    pub sections: Vec<(String, Option<BString>, usize)>,
    pub entries: Vec<RawEntry>,
    /// git's "bad config line N": git refuses the file there.
    pub bad_line: Option<usize>,
}

/// Is `key` (a value's key) one of the loader's include keys? Returns the `includeIf`
/// condition for conditional includes.
pub(crate) fn include_condition(key: &ConfigKey<'_>) -> Option<Option<String>> {
    if loader::INCLUDE_PATH.matches(key) {
        Some(None)
    } else if loader::INCLUDE_IF_PATH.matches(key) {
        Some(key.subsection.map(str::to_owned))
    } else {
        None
    }
}
