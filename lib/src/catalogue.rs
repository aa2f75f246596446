//! The catalogue: every git config key, environment variable and git-folder file that runs a
//! program, loads code or redirects git — as data.
//!
//! This is the one place where such names are written down. The config enumeration, the
//! defused environment, `safe-git`, `git-shim`, `wt-check audit` and the generated docs all read
//! these tables; none of them spells a key of their own. Each row cites the section of
//! `shared/research/git-exec-surfaces.md` it comes from, so a reviewer can check it against
//! the experiment that established it.
//!
//! This module imports nothing else of gitward's (it is the bottom of the dependency graph).

use serde::Serialize;

/// A git version, compared as `(major, minor, patch)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct GitVersion {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl GitVersion {
    pub const fn new(major: u16, minor: u16, patch: u16) -> Self {
        GitVersion {
            major,
            minor,
            patch,
        }
    }

    /// Parse the output of `git version` / `git --version` (`git version 2.47.3`,
    /// `git version 2.39.5.windows.1`, `git version 2.55.GIT`).
    pub fn parse(s: &str) -> Option<Self> {
        let rest = s.trim().strip_prefix("git version ").unwrap_or(s.trim());
        let mut it = rest.split(|c: char| c == '.' || c.is_whitespace() || c == '-');
        let num = |p: Option<&str>| -> Option<u16> {
            let p = p?;
            let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        };
        let major = num(it.next())?;
        let minor = num(it.next())?;
        let patch = num(it.next()).unwrap_or(0);
        Some(GitVersion {
            major,
            minor,
            patch,
        })
    }
}

impl std::fmt::Display for GitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Config-based hooks (`hook.<name>.command` + `.event`) exist from this version on.
pub const CONFIG_HOOKS_SINCE: GitVersion = GitVersion::new(2, 54, 0);
/// `GIT_NO_LAZY_FETCH` is honoured from this version on (backported fix of CVE-2024-32465).
pub const NO_LAZY_FETCH_SINCE: GitVersion = GitVersion::new(2, 39, 4);
/// Relative worktree link files are understood from this version on; older git prunes them.
pub const RELATIVE_WORKTREES_SINCE: GitVersion = GitVersion::new(2, 48, 0);

/// How a catalogue key is matched against a config key `section[.subsection].name`.
///
/// Section and variable names compare ASCII-case-insensitively, as git does; subsections
/// (driver names, remote names) are taken as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum KeyPattern {
    /// `section.name` with no subsection, e.g. `core.fsmonitor`.
    Key {
        section: &'static str,
        name: &'static str,
    },
    /// `section.<any subsection>.name`, e.g. `filter.<driver>.clean`.
    PerName {
        section: &'static str,
        name: &'static str,
    },
    /// `section.name` with or without a subsection, e.g. `credential.helper` and
    /// `credential.<url>.helper`.
    AnyScope {
        section: &'static str,
        name: &'static str,
    },
    /// Every variable of a section, with or without a subsection, e.g. `alias.*`.
    Section { section: &'static str },
}

impl KeyPattern {
    /// Does `key` (already split by [`ConfigKey::parse`]) match this pattern?
    pub fn matches(&self, key: &ConfigKey<'_>) -> bool {
        let eq = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        match *self {
            KeyPattern::Key { section, name } => {
                key.subsection.is_none() && eq(key.section, section) && eq(key.name, name)
            }
            KeyPattern::PerName { section, name } => {
                key.subsection.is_some() && eq(key.section, section) && eq(key.name, name)
            }
            KeyPattern::AnyScope { section, name } => {
                eq(key.section, section) && eq(key.name, name)
            }
            KeyPattern::Section { section } => eq(key.section, section),
        }
    }

    /// The pattern as git's docs write it: `filter.<name>.clean`.
    pub fn display(&self) -> String {
        match *self {
            KeyPattern::Key { section, name } => format!("{section}.{name}"),
            KeyPattern::PerName { section, name } => format!("{section}.<name>.{name}"),
            KeyPattern::AnyScope { section, name } => format!("{section}[.<scope>].{name}"),
            KeyPattern::Section { section } => format!("{section}.*"),
        }
    }
}

/// A config key split the way git splits it: section up to the first dot, variable name
/// after the last dot, subsection (which may itself contain dots) in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigKey<'a> {
    pub section: &'a str,
    pub subsection: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> ConfigKey<'a> {
    /// Split `section.sub.sec.tion.name`; `None` for a key without a dot.
    pub fn parse(key: &'a str) -> Option<Self> {
        let first = key.find('.')?;
        let last = key.rfind('.')?;
        let section = &key[..first];
        let name = &key[last + 1..];
        if section.is_empty() || name.is_empty() {
            return None;
        }
        let subsection = (first != last).then(|| &key[first + 1..last]);
        Some(ConfigKey {
            section,
            subsection,
            name,
        })
    }
}

/// What a matching value does when git acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// The value is passed to `sh -c`.
    RunsShell,
    /// The value is executed directly as a program (no shell).
    RunsProgram,
    /// The value makes git run a program found elsewhere (a helper on `PATH`, a hook folder,
    /// a transport), or makes a driver selectable.
    EnablesProgram,
    /// The value makes git read more configuration (includes, worktree config).
    LoadsConfig,
    /// The value points git at another git dir, work tree, attributes or object store.
    Redirects,
    /// The value makes git run work that reaches other surfaces (auto-gc, submodule
    /// recursion, signature verification).
    Triggers,
}

/// How the defused environment stops a key whose value comes from an untrusted file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Neutraliser {
    /// A command-scope value (`-c key=value`) wins over every file and stops it.
    Set { value: &'static str },
    /// Like `Set`, but if the owner's trusted config (system/global) sets the key, that value
    /// is re-asserted instead, so honest repositories behave exactly as under plain git.
    TrustedOr { value: &'static str },
    /// Per driver/tool/hook name: `-c <section>.<name>.<key>=<value>` for every name that
    /// enumeration finds (config sections and attribute selections). `key` is the variable
    /// to set when it is not the matched one (config hooks are disarmed through `enabled`).
    PerName {
        key: Option<&'static str>,
        value: &'static str,
    },
    /// `-c` cannot stop it (first value wins, or multi-valued, or read before `-c`);
    /// `instead` says what gitward does.
    Cannot { instead: &'static str },
    /// Harmless to run with; listed for the audit only.
    AuditOnly,
}

/// How serious an armed value is when found by an audit.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

/// One row of the catalogue.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KeyEntry {
    pub key: KeyPattern,
    pub effect: Effect,
    /// What runs, in one line.
    pub runs: &'static str,
    /// Which git commands trigger it.
    pub trigger: &'static str,
    pub neutraliser: Neutraliser,
    /// First git version that knows the key (`None`: every supported version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<GitVersion>,
    pub severity: Severity,
    /// The research row this comes from, e.g. `§1a`.
    pub research: &'static str,
}

macro_rules! k {
    ($s:literal . $n:literal) => {
        KeyPattern::Key {
            section: $s,
            name: $n,
        }
    };
}
macro_rules! per {
    ($s:literal . $n:literal) => {
        KeyPattern::PerName {
            section: $s,
            name: $n,
        }
    };
}
macro_rules! any {
    ($s:literal . $n:literal) => {
        KeyPattern::AnyScope {
            section: $s,
            name: $n,
        }
    };
}

use Effect::*;
use Neutraliser as N;
use Severity::*;

const fn set(value: &'static str) -> Neutraliser {
    N::Set { value }
}
const fn pername(value: &'static str) -> Neutraliser {
    N::PerName { key: None, value }
}
const fn cannot(instead: &'static str) -> Neutraliser {
    N::Cannot { instead }
}

/// Every config key and key pattern that runs a program, loads code or redirects git.
pub static KEYS: &[KeyEntry] = &[
    // §1a hooks and monitors
    KeyEntry { key: k!("core"."fsmonitor"), effect: RunsShell, runs: "any non-boolean value, via sh, with <version> <token>", trigger: "every index refresh: status, diff, add, commit, ls-files, checkout, reset, stash", neutraliser: set("false"), since: None, severity: Error, research: "§1a" },
    KeyEntry { key: k!("core"."hooksPath"), effect: EnablesProgram, runs: "every hook from the named folder (relative: from the work-tree top)", trigger: "every hook event", neutraliser: set("/dev/null"), since: None, severity: Error, research: "§1a" },
    KeyEntry { key: per!("hook"."command"), effect: RunsShell, runs: "config-based hook command, via sh", trigger: "the events listed in hook.<name>.event", neutraliser: N::PerName { key: Some("enabled"), value: "false" }, since: Some(CONFIG_HOOKS_SINCE), severity: Error, research: "§1a" },
    KeyEntry { key: per!("hook"."event"), effect: EnablesProgram, runs: "binds a config-based hook to an event", trigger: "that event", neutraliser: N::PerName { key: Some("enabled"), value: "false" }, since: Some(CONFIG_HOOKS_SINCE), severity: Error, research: "§1a" },
    // §1b transport, credentials, network
    KeyEntry { key: per!("remote"."uploadpack"), effect: RunsShell, runs: "for local and file:// remotes, the value via sh with the repository path", trigger: "fetch, pull, ls-remote, clone, lazy fetch", neutraliser: cannot("first value wins: transports are cut with GIT_ALLOW_PROTOCOL and lazy fetch with GIT_NO_LAZY_FETCH"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: per!("remote"."receivepack"), effect: RunsShell, runs: "for local remotes, the value via sh", trigger: "push", neutraliser: cannot("first value wins: transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: per!("remote"."url"), effect: EnablesProgram, runs: "ext::<cmd> runs a command line; <helper>::<addr> runs git-remote-<helper>; a local path makes uploadpack run", trigger: "fetch, push, ls-remote", neutraliser: cannot("URLs cannot be removed: transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: per!("remote"."pushurl"), effect: EnablesProgram, runs: "as remote.<name>.url, for push", trigger: "push", neutraliser: cannot("transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: per!("remote"."vcs"), effect: EnablesProgram, runs: "git-remote-<vcs> from the exec path or PATH", trigger: "fetch, push, ls-remote", neutraliser: cannot("transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: per!("remote"."proxy"), effect: Redirects, runs: "no program; sends traffic through a proxy", trigger: "http(s) transports", neutraliser: cannot("transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Note, research: "§1b" },
    KeyEntry { key: per!("url"."insteadOf"), effect: Redirects, runs: "rewrites any URL, e.g. to ext:: or to a local path whose uploadpack runs", trigger: "every URL use", neutraliser: cannot("rewrite rules cannot be removed: transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: per!("url"."pushInsteadOf"), effect: Redirects, runs: "rewrites push URLs", trigger: "push", neutraliser: cannot("transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: k!("protocol"."allow"), effect: EnablesProgram, runs: "transport policy", trigger: "fetch, push", neutraliser: cannot("GIT_ALLOW_PROTOCOL overrides every protocol.* key"), since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: per!("protocol"."allow"), effect: EnablesProgram, runs: "per-transport policy; protocol.ext.allow=always enables ext:: commands", trigger: "fetch, push", neutraliser: cannot("GIT_ALLOW_PROTOCOL overrides every protocol.* key"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: k!("core"."sshCommand"), effect: RunsShell, runs: "ssh replacement, via sh", trigger: "ssh transports, including lazy fetch and submodules", neutraliser: cannot("GIT_SSH_COMMAND beats it and is set to plain ssh"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: k!("ssh"."variant"), effect: EnablesProgram, runs: "selects ssh argument style", trigger: "ssh transports", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1b" },
    KeyEntry { key: any!("core"."gitProxy"), effect: RunsProgram, runs: "program run as <cmd> <host> <port>", trigger: "git:// transports", neutraliser: cannot("first match wins: GIT_PROXY_COMMAND is set to empty, which overrides it"), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: any!("credential"."helper"), effect: RunsShell, runs: "git credential-<name>, an absolute path, or !<shell>", trigger: "authentication, git credential", neutraliser: set(""), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: k!("core"."askPass"), effect: RunsProgram, runs: "password prompt program", trigger: "credential prompts", neutraliser: set(""), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: k!("core"."alternateRefsCommand"), effect: RunsShell, runs: "via sh, with an alternate's path", trigger: "fetch, rev-list --alternate-refs, receive-pack (needs objects/info/alternates)", neutraliser: set(""), since: None, severity: Error, research: "§1b" },
    KeyEntry { key: k!("uploadpack"."packObjectsHook"), effect: RunsShell, runs: "wraps pack-objects when serving", trigger: "serving a fetch (honoured from protected config only)", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: any!("http"."proxy"), effect: Redirects, runs: "no program; traffic redirect (http.<url>.proxy for one URL prefix)", trigger: "http(s) transports", neutraliser: cannot("transports are cut with GIT_ALLOW_PROTOCOL"), since: None, severity: Note, research: "§1b" },
    KeyEntry { key: any!("http"."sslVerify"), effect: Redirects, runs: "no program; false turns off TLS verification, so a proxy or resolver redirect can read and change the traffic", trigger: "https transports", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: any!("http"."sslCAInfo"), effect: Redirects, runs: "no program; trusts the named certificate authority for https", trigger: "https transports", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: any!("http"."sslCAPath"), effect: Redirects, runs: "no program; trusts the certificate authorities of the named folder for https", trigger: "https transports", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: any!("http"."curloptResolve"), effect: Redirects, runs: "no program; pins host names to chosen addresses (host:port:address)", trigger: "http(s) transports", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1b" },
    KeyEntry { key: k!("transfer"."bundleURI"), effect: Redirects, runs: "downloads bundles (CVE-2025-48385)", trigger: "clone, fetch", neutraliser: set("false"), since: None, severity: Warning, research: "§1b" },
    // §1c editors, pagers, viewers, tools
    KeyEntry { key: k!("core"."editor"), effect: RunsShell, runs: "editor, via sh", trigger: "commit without -m, tag -a, merge --edit, notes, rebase -i", neutraliser: cannot("GIT_EDITOR beats it and is set to ':'"), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("sequence"."editor"), effect: RunsShell, runs: "todo-list editor, via sh", trigger: "rebase -i", neutraliser: cannot("GIT_SEQUENCE_EDITOR beats it and is set to ':'"), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("core"."pager"), effect: RunsShell, runs: "pager, via sh", trigger: "paging commands with a terminal on stdout", neutraliser: set("cat"), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: KeyPattern::Section { section: "pager" }, effect: RunsShell, runs: "pager.<cmd> = a command: both enables paging and names the pager", trigger: "git <cmd> with a terminal", neutraliser: cannot("GIT_PAGER beats it and is set to cat"), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("diff"."external"), effect: RunsShell, runs: "external diff, via sh, 7 arguments per path", trigger: "diff; log/show with --ext-diff", neutraliser: cannot("an empty -c value makes every diff fail; GIT_EXTERNAL_DIFF is removed, diff commands get --no-ext-diff unless the owner configures an external diff, and the owner's value is re-asserted when the repository sets one"), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("diff"."command"), effect: RunsShell, runs: "external diff driver, via sh (selected by attribute diff=<name>)", trigger: "diff; log/show with --ext-diff", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("diff"."textconv"), effect: RunsShell, runs: "text conversion, via sh (selected by attribute diff=<name>)", trigger: "diff, log -p, show, blame, cat-file --textconv, grep --textconv", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("interactive"."diffFilter"), effect: RunsShell, runs: "filter for add -p output, via sh", trigger: "add -p/-i with colour", neutraliser: set(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("difftool"."cmd"), effect: RunsShell, runs: "diff tool, via sh", trigger: "difftool", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("difftool"."path"), effect: RunsProgram, runs: "replaces a built-in tool's binary", trigger: "difftool", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("mergetool"."cmd"), effect: RunsShell, runs: "merge tool, via sh", trigger: "mergetool", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("mergetool"."path"), effect: RunsProgram, runs: "replaces a built-in tool's binary", trigger: "mergetool", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("diff"."tool"), effect: EnablesProgram, runs: "selects difftool.<tool>", trigger: "difftool", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1c" },
    KeyEntry { key: k!("merge"."tool"), effect: EnablesProgram, runs: "selects mergetool.<tool>", trigger: "mergetool, difftool fallback", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1c" },
    KeyEntry { key: k!("man"."viewer"), effect: EnablesProgram, runs: "selects man.<tool>", trigger: "git help, git <cmd> --help", neutraliser: set("man"), since: None, severity: Warning, research: "§1c" },
    KeyEntry { key: per!("man"."cmd"), effect: RunsShell, runs: "man viewer, via sh", trigger: "git help, git <cmd> --help", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("man"."path"), effect: RunsProgram, runs: "man viewer binary", trigger: "git help, git <cmd> --help", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("help"."browser"), effect: RunsProgram, runs: "browser for git help -w", trigger: "git help -w", neutraliser: set(""), since: None, severity: Warning, research: "§1c" },
    KeyEntry { key: k!("web"."browser"), effect: RunsProgram, runs: "browser for web--browse", trigger: "git web--browse, instaweb", neutraliser: set(""), since: None, severity: Warning, research: "§1c" },
    KeyEntry { key: per!("browser"."cmd"), effect: RunsShell, runs: "browser, via sh", trigger: "git help -w, web--browse", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: per!("browser"."path"), effect: RunsProgram, runs: "browser binary", trigger: "git help -w, web--browse", neutraliser: pername(""), since: None, severity: Error, research: "§1c" },
    KeyEntry { key: k!("instaweb"."httpd"), effect: RunsShell, runs: "http daemon", trigger: "git instaweb", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1c" },
    KeyEntry { key: k!("instaweb"."browser"), effect: RunsProgram, runs: "browser", trigger: "git instaweb", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1c" },
    KeyEntry { key: per!("guitool"."cmd"), effect: RunsShell, runs: "git gui tool, via sh", trigger: "git gui menu", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1c" },
    KeyEntry { key: k!("help"."autoCorrect"), effect: Triggers, runs: "runs a guessed command for a mistyped one", trigger: "mistyped commands", neutraliser: set("0"), since: None, severity: Note, research: "§1c" },
    KeyEntry { key: KeyPattern::Section { section: "alias" }, effect: RunsShell, runs: "!<cmd> aliases run via sh from the work-tree top; others prepend options such as -c", trigger: "when the alias is typed", neutraliser: cannot("aliases are refused: safe-git runs only allow-listed built-in subcommands and the shim refuses aliases that are not plain git"), since: None, severity: Warning, research: "§1c" },
    // §1d content conversion, merge, signing, archive, trailers
    KeyEntry { key: per!("filter"."clean"), effect: RunsShell, runs: "clean filter, via sh (selected by attribute filter=<name>)", trigger: "status on stat-dirty files, diff, add, commit -a, stash", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("filter"."smudge"), effect: RunsShell, runs: "smudge filter, via sh", trigger: "checkout, switch, reset --hard, stash, archive, cat-file --filters", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("filter"."process"), effect: RunsShell, runs: "long-running filter process, via sh", trigger: "as clean and smudge", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("filter"."required"), effect: Triggers, runs: "makes a failing or emptied filter fatal", trigger: "as clean and smudge", neutraliser: pername("false"), since: None, severity: Note, research: "§1d" },
    KeyEntry { key: per!("merge"."driver"), effect: RunsShell, runs: "merge driver, via sh with %O %A %B (selected by attribute merge=<name>)", trigger: "merge, cherry-pick, rebase, revert, stash apply", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: any!("gpg"."program"), effect: RunsProgram, runs: "signing/verification program (gpg.program, gpg.<format>.program)", trigger: "log/show with log.showSignature or --show-signature on a signed commit; commit/tag with gpgSign", neutraliser: N::TrustedOr { value: "" }, since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("gpg"."defaultKeyCommand"), effect: RunsProgram, runs: "ssh signing key command", trigger: "ssh-format signing", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("gpg"."allowedSignersFile"), effect: Redirects, runs: "no program; file path, may point into the work tree", trigger: "ssh signature verification", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1d" },
    KeyEntry { key: k!("log"."showSignature"), effect: Triggers, runs: "makes log/show run the verification program", trigger: "log, show", neutraliser: N::TrustedOr { value: "false" }, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("commit"."gpgSign"), effect: Triggers, runs: "makes commit run the signing program", trigger: "commit", neutraliser: N::TrustedOr { value: "false" }, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("tag"."gpgSign"), effect: Triggers, runs: "makes tag run the signing program", trigger: "tag", neutraliser: N::TrustedOr { value: "false" }, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("push"."gpgSign"), effect: Triggers, runs: "makes push run the signing program", trigger: "push", neutraliser: N::TrustedOr { value: "false" }, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("merge"."verifySignatures"), effect: Triggers, runs: "makes merge run the verification program", trigger: "merge, pull", neutraliser: N::TrustedOr { value: "false" }, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: per!("tar"."command"), effect: RunsShell, runs: "archive compression filter, via sh", trigger: "archive --format=<fmt>", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("trailer"."command"), effect: RunsShell, runs: "trailer command, via sh (deprecated form, runs on every interpret-trailers)", trigger: "interpret-trailers, commit --trailer", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: per!("trailer"."cmd"), effect: RunsShell, runs: "trailer command, via sh", trigger: "--trailer <key>=…", neutraliser: pername(""), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: KeyPattern::Section { section: "sendemail" }, effect: RunsShell, runs: "sendmailCmd, toCmd, ccCmd, headerCmd, smtpServer (absolute path), validate", trigger: "git send-email", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("imap"."tunnel"), effect: RunsShell, runs: "tunnel command, via sh", trigger: "git imap-send", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("gc"."recentObjectsHook"), effect: RunsShell, runs: "via sh, output = object ids to keep (multi-valued)", trigger: "gc, prune, auto-gc after commit/fetch", neutraliser: cannot("multi-valued, cannot be cleared: auto-gc is switched off (gc.auto=0, maintenance.auto=false)"), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: k!("gc"."auto"), effect: Triggers, runs: "makes commit/fetch run auto-gc (pre-auto-gc hook, recentObjectsHook, worktree prune)", trigger: "commit, fetch, merge", neutraliser: set("0"), since: None, severity: Note, research: "§1d" },
    KeyEntry { key: k!("maintenance"."auto"), effect: Triggers, runs: "as gc.auto", trigger: "commit, fetch, merge", neutraliser: set("false"), since: None, severity: Note, research: "§1d" },
    KeyEntry { key: k!("gc"."worktreePruneExpire"), effect: Triggers, runs: "no program; auto-gc prunes worktree entries (now = at once)", trigger: "auto-gc", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: per!("submodule"."update"), effect: RunsShell, runs: "update = !<cmd>, via sh (only from .git/config)", trigger: "submodule update", neutraliser: cannot("submodule update is not run by safe-git; the audit flags it"), since: None, severity: Error, research: "§1d" },
    KeyEntry { key: k!("diff"."submodule"), effect: Triggers, runs: "diff = runs git diff inside every folder the shown commits record as a submodule, with that repository's drivers", trigger: "log -p, show, diff (also --submodule=diff)", neutraliser: N::TrustedOr { value: "short" }, since: None, severity: Warning, research: "§1d" },
    KeyEntry { key: k!("submodule"."recurse"), effect: Triggers, runs: "makes commands enter submodules, whose config and hooks then run", trigger: "checkout, fetch, …", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1d" },
    // §1e config loading and location redirects
    KeyEntry { key: k!("include"."path"), effect: LoadsConfig, runs: "inserts another config file (relative to the including file)", trigger: "every command", neutraliser: cannot("cannot be cleared by -c: every target is enumerated (all conditions) and what it defines is neutralised"), since: None, severity: Warning, research: "§1e" },
    KeyEntry { key: per!("includeIf"."path"), effect: LoadsConfig, runs: "inserts another config file when the condition holds", trigger: "every command", neutraliser: cannot("cannot be cleared by -c: every target is enumerated whatever its condition"), since: None, severity: Warning, research: "§1e" },
    KeyEntry { key: k!("extensions"."worktreeConfig"), effect: LoadsConfig, runs: "reads config.worktree of the current git dir", trigger: "every command", neutraliser: cannot("read at setup: config.worktree files are enumerated and neutralised"), since: None, severity: Warning, research: "§1e" },
    KeyEntry { key: k!("core"."worktree"), effect: Redirects, runs: "no program; work tree anywhere", trigger: "every command", neutraliser: cannot("safe-git refuses a repository whose config sets it"), since: None, severity: Error, research: "§1e" },
    KeyEntry { key: k!("core"."bare"), effect: Redirects, runs: "flips bare/non-bare interpretation", trigger: "every command", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1e" },
    KeyEntry { key: k!("core"."attributesFile"), effect: Redirects, runs: "extra attributes file: selects filter/diff/merge drivers", trigger: "status, diff, commit", neutraliser: cannot("drivers are neutralised per name, whatever selects them"), since: None, severity: Note, research: "§1e" },
    KeyEntry { key: k!("attr"."tree"), effect: Redirects, runs: "reads .gitattributes from a tree-ish", trigger: "attribute lookups", neutraliser: cannot("drivers are neutralised per name, whatever selects them"), since: None, severity: Warning, research: "§1e" },
    KeyEntry { key: k!("extensions"."partialClone"), effect: Triggers, runs: "missing objects are fetched from the promisor remote (its uploadpack/ssh/helper)", trigger: "show, cat-file, checkout, log -p, diff", neutraliser: cannot("GIT_NO_LAZY_FETCH=1 and GIT_ALLOW_PROTOCOL cut the fetch"), since: None, severity: Warning, research: "§1e" },
    KeyEntry { key: per!("remote"."promisor"), effect: Triggers, runs: "makes the remote a lazy-fetch source", trigger: "missing objects", neutraliser: cannot("GIT_NO_LAZY_FETCH=1"), since: None, severity: Warning, research: "§1e" },
    KeyEntry { key: k!("extensions"."refStorage"), effect: Redirects, runs: "ref storage URI (2.54+: may name an arbitrary path)", trigger: "every command", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1e" },
    KeyEntry { key: per!("submodule"."gitdir"), effect: Redirects, runs: "submodule git dir taken from config (2.54+, extensions.submodulePathConfig)", trigger: "submodule commands, recursion", neutraliser: N::AuditOnly, since: Some(CONFIG_HOOKS_SINCE), severity: Warning, research: "§1e" },
    KeyEntry { key: k!("index"."threads"), effect: Redirects, runs: "no program; git reads index entries from the IEOT offset table in parallel, which can differ from the sequential layout another reader sees (a hidden gitlink)", trigger: "every index read", neutraliser: set("1"), since: None, severity: Note, research: "§3.3" },
    KeyEntry { key: k!("extensions"."objectFormat"), effect: Redirects, runs: "no program; the object id length every reader must use (sha1, sha256)", trigger: "every command", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1e" },
    KeyEntry { key: k!("extensions"."relativeWorktrees"), effect: Redirects, runs: "relative worktree link files (2.48+; older git refuses the repository)", trigger: "worktree commands", neutraliser: N::AuditOnly, since: None, severity: Note, research: "§1e" },
    // §1f protected-only keys: a repository's own config cannot set them, but the command
    // line, an agent-chosen GIT_CONFIG_GLOBAL or a write to the owner's global config can.
    KeyEntry { key: k!("init"."templateDir"), effect: EnablesProgram, runs: "copies the named template folder, hooks/ included, into every repository git init or clone creates — and into an existing one that git init re-initialises (its .git/hooks)", trigger: "init (re-init too), clone, submodule add/update", neutraliser: N::TrustedOr { value: "" }, since: None, severity: Error, research: "§1f" },
    KeyEntry { key: KeyPattern::Section { section: "trace2" }, effect: Redirects, runs: "no program by itself; every git command appends trace records (its arguments, the repository's paths) to the named file or socket — a shell start-up file then runs a `$(…)` a path holds", trigger: "every git command (read from system and global config only)", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1f" },
    KeyEntry { key: k!("safe"."directory"), effect: Triggers, runs: "no program by itself; `*` or another user's folder lets git read (and run what it names) the config of repositories owned by other users", trigger: "every command in such a repository (read from system, global and command-line config only)", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1f" },
    KeyEntry { key: k!("safe"."bareRepository"), effect: Triggers, runs: "no program by itself; `all` (over the owner's `explicit`) lets git discover bare repositories embedded in work trees and use their config", trigger: "every command whose folder is inside such a repository", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1f" },
    KeyEntry { key: k!("maintenance"."repo"), effect: Triggers, runs: "no program by itself; the owner's scheduled `git for-each-repo --config=maintenance.repo maintenance run` (systemd timer, cron, launchd) runs prefetch (a fetch from every remote), gc and repack in each listed repository with that repository's config", trigger: "the owner's maintenance schedule (global config)", neutraliser: N::AuditOnly, since: None, severity: Warning, research: "§1f" },
];

/// The catalogue rows a config key matches (most specific first as written).
pub fn lookup(key: &str) -> impl Iterator<Item = &'static KeyEntry> + '_ {
    let parsed = ConfigKey::parse(key);
    KEYS.iter()
        .filter(move |e| parsed.as_ref().is_some_and(|k| e.key.matches(k)))
}

/// Is `key` a program-running, code-loading or redirecting key (any row but audit-only
/// notes counts)?
pub fn is_dangerous(key: &str) -> bool {
    lookup(key).next().is_some()
}

/// Driver kinds that `.gitattributes` selects by name; each maps to config sections whose
/// per-name keys run programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriverKind {
    Filter,
    Diff,
    Merge,
}

impl DriverKind {
    pub const ALL: [DriverKind; 3] = [DriverKind::Filter, DriverKind::Diff, DriverKind::Merge];

    /// The attribute and config section name: `filter`, `diff`, `merge`.
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::Filter => "filter",
            DriverKind::Diff => "diff",
            DriverKind::Merge => "merge",
        }
    }

    pub fn from_attribute(attr: &str) -> Option<Self> {
        DriverKind::ALL.into_iter().find(|k| k.name() == attr)
    }

    /// Per-name keys that run a program for this kind, with the value that disarms them.
    pub fn disarm(self) -> &'static [(&'static str, &'static str)] {
        match self {
            DriverKind::Filter => &[
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ],
            DriverKind::Diff => &[("command", ""), ("textconv", "")],
            DriverKind::Merge => &[("driver", "")],
        }
    }
}

impl DriverKind {
    /// Per-name keys whose value is a program git runs for a driver of this kind (the
    /// [`DriverKind::disarm`] rows disarmed by emptying them; `filter.<name>.required` is not a
    /// program).
    pub fn program_keys(self) -> impl Iterator<Item = &'static str> {
        self.disarm()
            .iter()
            .filter(|(_, off)| off.is_empty())
            .map(|(k, _)| *k)
    }

    /// The driver names git itself defines for this kind without any configuration: a
    /// `diff=<name>` or `merge=<name>` naming one of these runs no program unless a config
    /// file also sets one of [`DriverKind::program_keys`] for it.
    pub fn builtin_names(self) -> &'static [&'static str] {
        match self {
            DriverKind::Filter => &[],
            DriverKind::Diff => BUILTIN_DIFF_DRIVERS,
            DriverKind::Merge => BUILTIN_MERGE_DRIVERS,
        }
    }
}

/// git's built-in diff drivers (`userdiff.c`: the `PATTERNS`/`IPATTERN` rows of
/// `builtin_drivers`, and `default`). Identical in git 2.39.5 and 2.47.3; later git adds
/// `ini`, `r` and `swift` (listed too: a name git does not know is no more dangerous).
/// A built-in driver only sets hunk headers and word regexes; it runs a program only if
/// configuration adds `diff.<name>.textconv` or `diff.<name>.command`.
pub static BUILTIN_DIFF_DRIVERS: &[&str] = &[
    "ada", "bash", "bibtex", "cpp", "csharp", "css", "dts", "elixir", "fortran", "fountain",
    "golang", "html", "ini", "java", "kotlin", "markdown", "matlab", "objc", "pascal", "perl",
    "php", "python", "r", "ruby", "rust", "scheme", "swift", "tex", "default",
];

/// git's built-in merge drivers (`merge-ll.c`, `ll-merge.c` before 2.41: `ll_merge_drv`).
pub static BUILTIN_MERGE_DRIVERS: &[&str] = &["binary", "text", "union"];

/// Suffix of the example hooks `git init` copies from its templates: git runs a hook only by
/// its exact event name, so a `*.sample` file is never run (`hook.c`: `find_hook`).
/// wt-check's object-substitution rule (`object_substituted`): a loose object file new or
/// changed since the pin whose content does not hash to its name (git's "hash mismatch",
/// which git checks for commits and trees it parses but not for blobs it checks out).
pub static OBJECT_RULE: (&str, &str) = ("GW-OBJ-001", "object-substituted");
/// wt-check's pack rule (`object_substituted` with `pack`): a pack, pack index, reverse
/// index or multi-pack-index new or changed since the pin that makes git read an object id
/// as other content (git's "packfile ... does not match index", "multi-pack-index ...
/// incorrect offset": what `git fsck`/`git multi-pack-index verify` say, and what git
/// itself never checks when it reads an object to check it out).
pub static PACK_RULE: (&str, &str) = ("GW-OBJ-003", "pack-substituted");

/// wt-check's forged-commit-graph rule (`commit_graph_forged`): a commit-graph file
/// (`objects/info/commit-graph`, a split chain below `objects/info/commit-graphs/`) new or
/// changed since the pin whose entries differ from the commit objects (what `git
/// commit-graph verify` reports: "root tree OID for commit … in commit-graph is … != …",
/// "commit-graph parent for … is … != …", "commit date for commit … in commit-graph is …",
/// "commit-graph generation for commit … is …"), or that is not a graph as git writes it.
pub static OBJECT_GRAPH_RULE: (&str, &str) = ("GW-OBJ-002", "commit-graph-forged");

pub static HOOK_SAMPLE_SUFFIX: &str = ".sample";

/// Built-in attribute macros (git's `builtin_attr`): `binary` = `-diff -merge -text`.
pub static BUILTIN_MACROS: &[(&str, &str)] = &[("binary", "-diff -merge -text")];

/// Command-scope pairs the defused set always passes, outside the per-row neutralisers:
/// `protocol.ext.allow=never` beats a repository's `protocol.ext.allow=always`, which
/// `-c protocol.allow=never` does not (research §1b).
pub static ALWAYS_SET: &[(&str, &str)] = &[("protocol.ext.allow", "never")];

/// Keys whose value git never reads while an environment variable is set, with that
/// variable: git takes `GIT_PAGER` before `core.pager` (pager.c, `git_pager`), `GIT_ASKPASS`
/// before `core.askPass` (prompt.c, `git_prompt`: set and empty, no program runs), and
/// `GIT_ALLOW_PROTOCOL` before every `protocol.*` key (transport.c,
/// `is_transport_allowed`: the list alone decides). A command-scope pair for such a key is
/// dropped from `GIT_CONFIG_PARAMETERS` when the same defused set sets the variable (each
/// pair costs git ≈ 3 k instructions to parse, on every call): the variable already does
/// what the pair would. It stays in the defused set's pairs, so the rules still take an
/// agent's `-c` of the same neutral value as neutral. Tested against each git
/// (`env::tests::variables_beat_the_pairs_they_replace`).
pub static BEATEN_BY_ENV: &[(&str, &str)] = &[
    ("core.pager", "GIT_PAGER"),
    ("core.askPass", "GIT_ASKPASS"),
    ("protocol.ext.allow", "GIT_ALLOW_PROTOCOL"),
];

/// Config that makes `status` and `diff` show less than the work tree holds (wt-status.c,
/// read-cache.c, diff-lib.c, submodule.c), with the value safe-git passes instead when an
/// untrusted file sets it and the owner's config does not: git's default where `-c` can
/// express it, else the value that shows everything (`diff.ignoreSubmodules=none`).
/// `submodule.<name>.ignore` (config and `.gitmodules`) is handled per name the same way.
/// Not here, because git's own `init` writes them for the file system it found:
/// `core.fileMode`, `core.ignoreCase`, `core.symlinks` (see docs/safe-git.md).
pub static WORK_HIDING_KEYS: &[(&str, &str)] = &[
    ("status.showUntrackedFiles", "normal"),
    ("diff.ignoreSubmodules", "none"),
    ("core.ignoreStat", "false"),
    ("core.checkStat", "default"),
    ("core.trustctime", "true"),
];

/// Config values with which git compares only a tracked file's `mtime` and size (and mode)
/// with its index entry's (`read-cache.c`, `match_stat_data`: `ctime` is compared only when
/// `trust_ctime && check_stat`): an in-place rewrite at the same size with its `mtime` put back
/// is then invisible to `status`, `diff` and `commit -a`, with no index written (twentieth
/// red-team pass, R20-3). `wt-check` hashes the tracked files changed since the pin when the
/// owner's config holds one of these. A `false` value is compared as git's boolean.
pub static STAT_CHECK_RELAXING: &[(&str, &str)] =
    &[("core.trustctime", "false"), ("core.checkStat", "minimal")];

/// Set on every safe-git call: the untracked cache is an index extension the agent can
/// write, and a crafted one marks folders as holding no untracked files. Off, git walks the
/// folders itself; the output is the same (it is only a cache).
pub static SAFE_GIT_ALWAYS_SET: &[(&str, &str)] = &[("core.untrackedCache", "false")];

/// Options of `git clone` and `git init` that plant code or redirect the new repository
/// (research §1g), with what they do: the shim refuses them.
pub static NEW_REPOSITORY_OPTIONS: &[(&str, &str)] = &[
    (
        "--template",
        "copies a template folder (hooks included) into the new repository",
    ),
    (
        "--separate-git-dir",
        "puts the git dir elsewhere behind a gitfile",
    ),
];

/// Subcommand verbs that write outside the repository a call works on — the owner's global
/// config and scheduler — so a call inside the sandbox would outlive it: git-shim refuses
/// them (rule `outside-write`), with what each does.
pub static OUTSIDE_WRITES: &[(&str, &str, &str)] = &[
    ("maintenance", "register", "adds the repository to maintenance.repo in the owner's global config, where the owner's scheduled git maintenance then runs it with its own config"),
    ("maintenance", "start", "registers the repository (global config) and installs a systemd timer, cron or launchd job that runs git maintenance in it"),
    ("maintenance", "unregister", "rewrites maintenance.repo in the owner's global config"),
    ("maintenance", "stop", "removes the owner's maintenance schedule (systemd timer, cron, launchd)"),
];

/// Subcommand verbs that switch on `extensions.worktreeConfig` in the repository's config
/// when it is off (git's `init_worktree_config`), after which git reads every worktree's
/// `config.worktree` — a file inside worktree entries the session may write. git-shim
/// refuses them until the owner has switched the extension on (rule `config-key`).
pub static WORKTREE_CONFIG_VERBS: &[(&str, &str)] = &[
    ("sparse-checkout", "init"),
    ("sparse-checkout", "set"),
    ("sparse-checkout", "add"),
    ("sparse-checkout", "reapply"),
    ("sparse-checkout", "disable"),
];

/// Commands git-shim refuses whatever their arguments (rule `command`), with what each runs:
/// a child git or a program named on the command line itself, which the shim never sees.
pub static REFUSED_COMMANDS: &[(&str, &str)] = &[
    ("for-each-repo", "runs `git -C <each repository> <its arguments>` as a child git from git's exec path, never through git-shim, so none of its rules apply to those arguments (rt24 W4)"),
    ("remote-ext", "runs the command line it is given (the ext:: transport's helper, typed as a command; rt24 W5)"),
];

/// Commands (and `remote` verbs; `""`: every call) whose operands git hands on, with no `--`
/// before them, to a child `git fetch` or `git push` (pull's repository and refspecs, each
/// member of `fetch --multiple` and `remote update`, the remote named by `remote add`/`rename`,
/// which maintenance's prefetch task, `fetch --all` and `remote update` pass later): an
/// operand starting with `-` (typed after `--`) is an option there (`--upload-pack=<prog>`).
/// git-shim refuses such operands (rule `dash-operand`; rt24 W7, W8).
pub static OPERANDS_TO_CHILD: &[(&str, &str)] = &[
    ("pull", ""),
    ("fetch", ""),
    ("push", ""),
    ("remote", "add"),
    ("remote", "rename"),
    ("remote", "update"),
    ("remote", "set-url"),
    ("remote", "set-head"),
    ("remote", "set-branches"),
    ("remote", "prune"),
    ("remote", "show"),
];

/// Config sections whose subsection is a remote's name (`remote.<name>.url`): git passes the
/// name to a child `git fetch` as an argument (maintenance's prefetch, `fetch --all`,
/// `remote update`), so a name starting with `-` is refused in every write (rt24 W8).
pub static REMOTE_NAME_SECTIONS: &[&str] = &["remote"];

/// Keys whose value is one remote's name, which git passes to a child `git fetch` or `git
/// push` as an argument (`clone.defaultRemoteName` names the remote of every clone, a
/// submodule's child clone too; `branch.<name>.remote`/`.pushRemote`, `remote.pushDefault`
/// and `checkout.defaultRemote` name the remote `pull`, `push` and `checkout` use): a value
/// starting with `-` is refused in every write (rt25 W3b, W6).
pub static REMOTE_NAME_KEYS: &[KeyPattern] = &[
    KeyPattern::Key {
        section: "clone",
        name: "defaultRemoteName",
    },
    KeyPattern::Key {
        section: "remote",
        name: "pushDefault",
    },
    KeyPattern::Key {
        section: "checkout",
        name: "defaultRemote",
    },
    KeyPattern::PerName {
        section: "branch",
        name: "remote",
    },
    KeyPattern::PerName {
        section: "branch",
        name: "pushRemote",
    },
];

/// Keys whose value is a list of remote names (`remotes.<group>`, split at whitespace): each
/// word reaches a child `git fetch` as an argument (`fetch --multiple <group>`, `remote update
/// <group>`), so a word starting with `-` is refused (rt24 W6).
pub static REMOTE_GROUP_KEYS: &[KeyPattern] = &[KeyPattern::Section { section: "remotes" }];

/// Keys git reads as one setting under two names (lower-cased). `gpg.program` is the legacy
/// name of `gpg.openpgp.program`: gpg-interface.c's `git_gpg_config` stores either into the
/// same field, so the one read last wins. An owner's value under either name is the owner's
/// value for both, or re-asserting one name and neutralising the other would undo it.
pub static KEY_ALIASES: &[(&str, &str)] = &[("gpg.program", "gpg.openpgp.program")];

/// Per-scope keys the generic `-c` set always covers, because git reads each scope on its
/// own: `gpg.program` is only an alias of `gpg.openpgp.program`, and git picks the
/// verification program by the signature's format (`gpg.x509.program`, `gpg.ssh.program`),
/// whatever `log.showSignature` says (`%G?` formats verify too). Each is matched by the
/// `gpg[.<scope>].program` row of [`KEYS`] and neutralised as that row says.
pub static SCOPED_KEYS: &[&str] = &["gpg.openpgp.program", "gpg.x509.program", "gpg.ssh.program"];

/// Every hook event git knows (git master `hook-list.h`, 28 names).
pub static HOOK_EVENTS: &[&str] = &[
    "applypatch-msg",
    "commit-msg",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "p4-prepare-changelist",
    "post-applypatch",
    "post-checkout",
    "post-commit",
    "post-index-change",
    "post-merge",
    "post-receive",
    "post-rewrite",
    "post-update",
    "pre-applypatch",
    "pre-auto-gc",
    "pre-commit",
    "pre-merge-commit",
    "pre-push",
    "pre-rebase",
    "pre-receive",
    "prepare-commit-msg",
    "proc-receive",
    "push-to-checkout",
    "reference-transaction",
    "sendemail-validate",
    "update",
];

/// What the defused environment does with an inherited environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum EnvAction {
    /// Drop it from the child's environment.
    Remove,
    /// Set it to this value (overrides config, or disables a feature).
    Set { value: &'static str },
}

/// One environment variable (or prefix, when `name` ends in `*`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EnvEntry {
    pub name: &'static str,
    pub action: EnvAction,
    pub why: &'static str,
    pub research: &'static str,
}

const fn rm(name: &'static str, why: &'static str, research: &'static str) -> EnvEntry {
    EnvEntry {
        name,
        action: EnvAction::Remove,
        why,
        research,
    }
}
const fn setenv(
    name: &'static str,
    value: &'static str,
    why: &'static str,
    research: &'static str,
) -> EnvEntry {
    EnvEntry {
        name,
        action: EnvAction::Set { value },
        why,
        research,
    }
}

/// Environment variables git (or the loader and shells it starts) reads that run a program,
/// load code or redirect git. Applied in order: removals first, then sets.
pub static ENV: &[EnvEntry] = &[
    // §2a location and config selection
    rm("GIT_DIR", "git dir override; skips safe.directory; the runner sets it deliberately if at all", "§2a"),
    rm("GIT_WORK_TREE", "work-tree override", "§2a"),
    rm("GIT_COMMON_DIR", "common dir override (config, hooks)", "§2a"),
    rm("GIT_INDEX_FILE", "alternate index", "§2a"),
    rm("GIT_OBJECT_DIRECTORY", "alternate object store", "§2a"),
    rm("GIT_ALTERNATE_OBJECT_DIRECTORIES", "alternate object stores", "§2a"),
    rm("GIT_NAMESPACE", "ref namespace", "§2a"),
    rm("GIT_SHALLOW_FILE", "history shape override", "§2a"),
    rm("GIT_GRAFT_FILE", "history shape override", "§2a"),
    rm("GIT_REPLACE_REF_BASE", "history shape override", "§2a"),
    rm("GIT_QUARANTINE_PATH", "internal path override", "§2a"),
    rm("GIT_IMPLICIT_WORK_TREE", "internal path override", "§2a"),
    rm("GIT_PREFIX", "internal path override", "§2a"),
    rm("GIT_REFERENCE_BACKEND", "ref backend and storage path (2.54+)", "§2a"),
    rm("GIT_DISCOVERY_ACROSS_FILESYSTEM", "discovery across mounts", "§2a"),
    rm("GIT_CONFIG_PARAMETERS", "injects command-scope config (the carrier of -c)", "§2a"),
    rm("GIT_CONFIG_COUNT", "injects command-scope config", "§2a"),
    rm("GIT_CONFIG_KEY_*", "injects command-scope config", "§2a"),
    rm("GIT_CONFIG_VALUE_*", "injects command-scope config", "§2a"),
    rm("GIT_CONFIG", "git config --file override", "§2a"),
    rm("GIT_CONFIG_GLOBAL", "replaces the owner's global config", "§2a"),
    rm("GIT_CONFIG_SYSTEM", "replaces the system config", "§2a"),
    rm("GIT_ATTR_SOURCE", "tree-ish for .gitattributes", "§2a"),
    rm("GIT_TEMPLATE_DIR", "template (with hooks) for init/clone", "§2a"),
    // §2b variables that run programs or load code
    rm("GIT_EXEC_PATH", "where git finds git-* programs and remote helpers", "§2b"),
    rm("GIT_SSH", "ssh replacement program", "§2b"),
    rm("GIT_SSH_VARIANT", "ssh argument style", "§2b"),
    rm("SSH_ASKPASS", "askpass fallback", "§2b"),
    rm("LESSOPEN", "less input preprocessor", "§2b"),
    rm("LESSCLOSE", "less input postprocessor", "§2b"),
    rm("LESSKEY", "less key bindings file", "§2b"),
    rm("LESSKEYIN", "less key bindings source", "§2b"),
    rm("GIT_TEST_*", "test hooks that run programs in production builds (GIT_TEST_FSMONITOR, GIT_TEST_MAINT_SCHEDULER)", "§2b"),
    rm("GIT_MAN_VIEWER", "man viewer", "§2b"),
    rm("GIT_ASK_YESNO", "question program (Windows)", "§2b"),
    rm("GIT_STRACE_COMMANDS", "wraps commands (Windows)", "§2b"),
    rm("GIT_TRACE*", "writes traces to files, fds or sockets", "§2b"),
    rm("GIT_REDIRECT_STDIN", "redirects standard handles (Windows)", "§2b"),
    rm("GIT_REDIRECT_STDOUT", "redirects standard handles (Windows)", "§2b"),
    rm("GIT_REDIRECT_STDERR", "redirects standard handles (Windows)", "§2b"),
    rm("GIT_SSL_NO_VERIFY", "TLS verification off", "§2b"),
    rm("GIT_CURL_VERBOSE", "prints secrets", "§2b"),
    rm("PERL5LIB", "code loading for Perl commands", "§2b"),
    rm("PERLLIB", "code loading for Perl commands", "§2b"),
    rm("PERL5OPT", "code loading for Perl commands", "§2b"),
    rm("PYTHONPATH", "code loading for Python commands", "§2b"),
    rm("PYTHONSTARTUP", "code loading for Python", "§2b"),
    rm("PYTHONHOME", "the standard library Python commands (git-p4) load", "§2b"),
    rm("PYTHONUSERBASE", "user site-packages: their .pth files run at Python's start", "§2b"),
    rm("PYTHONWARNINGS", "a warning category names a module, which Python imports", "§2b"),
    rm("TCLLIBPATH", "package loading for Tcl commands (gitk, git gui)", "§2b"),
    rm("TCL_LIBRARY", "the Tcl library gitk and git gui load", "§2b"),
    rm("TK_LIBRARY", "the Tk library gitk and git gui load", "§2b"),
    rm("LD_*", "loader code injection (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, …)", "§2b"),
    rm("GCONV_PATH", "glibc's iconv loads modules from it (git re-encodes commit messages)", "§2b"),
    rm("LOCPATH", "glibc locale data location", "§2b"),
    rm("NLSPATH", "message catalogue location", "§2b"),
    rm("GLIBC_TUNABLES", "glibc tunables (parsed by the loader)", "§2b"),
    rm("DYLD_*", "loader code injection (macOS)", "§2b"),
    rm("BASH_FUNC_*", "exported bash functions (run where /bin/sh is bash)", "§2b"),
    rm("SHELLOPTS", "bash options (xtrace with PS4 runs command substitutions)", "§2b"),
    rm("BASHOPTS", "bash options", "§2b"),
    rm("PS4", "expanded by bash under xtrace", "§2b"),
    rm("BASH_ENV", "sourced by every non-interactive bash (hooks and aliases run through sh)", "§2b"),
    rm("ENV", "sourced by POSIX sh", "§2b"),
    rm("OPENSSL_CONF", "OpenSSL engine loading", "§2b"),
    rm("BROWSER", "browser for web--browse", "§2b"),
    rm("MANPAGER", "man's pager (git help runs man: man.viewer=man): a program run as given (rt24 W1)", "§2b"),
    rm("MANOPT", "man's default options (-P<pager>, -H<browser>, --html=<browser> name programs; rt24 W1)", "§2b"),
    rm("MANROFFOPT", "options man passes to groff (-U: unsafe mode, .sy runs a command)", "§2b"),
    rm("MANPATH", "where man finds pages (agent-written pages for git help)", "§2b"),
    rm("GROFF_*", "GROFF_BIN_PATH, GROFF_COMMAND_PREFIX: where groff finds troff and its postprocessors", "§2b"),
    rm("INFO_PRINT_COMMAND", "info's print program (git help -i)", "§2b"),
    setenv("GIT_EDITOR", ":", "beats core.editor; ':' means do not launch", "§2b"),
    setenv("GIT_SEQUENCE_EDITOR", ":", "beats sequence.editor (GIT_EDITOR alone does not)", "§2b"),
    setenv("GIT_PAGER", "cat", "beats core.pager and pager.<cmd>", "§2b"),
    setenv("PAGER", "cat", "fallback pager", "§2b"),
    setenv("GIT_ASKPASS", "", "empty: no askpass, and no SSH_ASKPASS fallback", "§2b"),
    setenv("GIT_TERMINAL_PROMPT", "0", "no terminal prompts", "§2b"),
    rm("GIT_EXTERNAL_DIFF", "external diff program; beats diff.external (an empty value makes every diff fail, so it is removed)", "§2b"),
    setenv("GIT_PROXY_COMMAND", "", "empty: overrides core.gitProxy (first value wins there)", "§2b"),
    setenv("GIT_SSH_COMMAND", "ssh", "beats core.sshCommand", "§2b"),
    setenv("GIT_NO_LAZY_FETCH", "1", "no promisor fetches", "§2b"),
    setenv("GIT_PROTOCOL_FROM_USER", "0", "no user-policy protocols", "§2b"),
    setenv("GIT_MERGE_AUTOEDIT", "no", "no editor on merge", "§2b"),
];

/// For each byte, whether some row of [`ENV`] can match a name that starts with it (every byte
/// when a row starts with `*`). Computed from [`ENV`] at compile time: git-shim and safe-git
/// test every inherited variable, and most names (`PATH`, `HOME`, `TERM`, …) are ruled out by
/// this one lookup instead of a scan of every row.
pub static ENV_FIRST_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < ENV.len() {
        let name = ENV[i].name.as_bytes();
        if name.is_empty() || name[0] == b'*' {
            t = [true; 256];
        } else {
            t[name[0] as usize] = true;
        }
        i += 1;
    }
    t
};

/// Variables of [`ENV`] that `git var` reports (`GIT_EDITOR`, `GIT_SEQUENCE_EDITOR`,
/// `GIT_PAGER`) and their fallbacks. `git var` formats them and runs none, so safe-git passes
/// the caller's values through for it instead of its overrides (it would print `:` / `cat`).
pub static ENV_REPORTED_BY_VAR: &[&str] =
    &["GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "PAGER"];

/// `GIT_*` variables that run nothing and point nowhere: identity, dates, pathspec and output
/// switches. A defused environment keeps these and drops every other inherited `GIT_*`
/// variable, so a variable added by a future git is refused until it is reviewed here.
pub static ENV_GIT_HARMLESS: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_REFLOG_ACTION",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_FLUSH",
    "GIT_PROGRESS_DELAY",
    "GIT_DEFAULT_HASH",
    "GIT_DEFAULT_REF_FORMAT",
    "GIT_DIFF_OPTS",
    "GIT_DIFF_PATH_COUNTER",
    "GIT_DIFF_PATH_TOTAL",
    "GIT_MERGE_VERBOSITY",
    "GIT_COLOR",
    "GIT_QUIET",
];

/// Does an environment variable name match a catalogue entry name (`GIT_TRACE*` matches
/// `GIT_TRACE2_EVENT`)?
///
/// Every inherited variable is compared with every row on each shim and safe-git call, so the
/// first byte is compared first: it rejects most rows in one comparison.
#[inline]
pub fn env_name_matches(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    if let (Some(&a), Some(&b)) = (p.first(), n.first()) {
        if a != b && a != b'*' {
            return false;
        }
    }
    match p.split_last() {
        Some((b'*', prefix)) => n.starts_with(prefix),
        _ => p == n,
    }
}

/// A protected entry of a git folder: a file or folder whose planting or change makes git run
/// a program, read more config, or go elsewhere (research §3).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GitDirEntry {
    /// Path relative to the git dir it lives in.
    pub path: &'static str,
    /// Where it matters: in the common dir, in a linked worktree's private dir, or both.
    pub scope: GitDirScope,
    pub effect: Effect,
    pub why: &'static str,
    pub severity: Severity,
    pub research: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GitDirScope {
    /// The main git dir / common dir.
    Common,
    /// `worktrees/<id>/`.
    Linked,
    /// Either.
    Any,
}

pub static GIT_DIR_ENTRIES: &[GitDirEntry] = &[
    GitDirEntry { path: "hooks", scope: GitDirScope::Common, effect: RunsProgram, why: "executable files named after hook events run on commit, checkout, status (post-index-change), …", severity: Error, research: "§3.1" },
    GitDirEntry { path: "config", scope: GitDirScope::Common, effect: LoadsConfig, why: "every key of the catalogue", severity: Error, research: "§3.2" },
    GitDirEntry { path: "config.worktree", scope: GitDirScope::Any, effect: LoadsConfig, why: "read when extensions.worktreeConfig is on; overrides the common config", severity: Error, research: "§3.2" },
    GitDirEntry { path: "commondir", scope: GitDirScope::Any, effect: Redirects, why: "takes config, hooks, objects and refs from another folder; in a main git dir it is never written by git", severity: Error, research: "§3.3" },
    GitDirEntry { path: "gitdir", scope: GitDirScope::Linked, effect: Redirects, why: "backlink used by worktree list/prune/move/remove; a wrong target makes prune delete the entry", severity: Warning, research: "§3.3" },
    GitDirEntry { path: "HEAD", scope: GitDirScope::Any, effect: Redirects, why: "an invalid HEAD makes git skip this git dir and climb into a parent repository", severity: Error, research: "§3.3" },
    GitDirEntry { path: "locked", scope: GitDirScope::Linked, effect: Triggers, why: "blocks prune/remove/move of the entry", severity: Note, research: "§3.3" },
    GitDirEntry { path: "info/attributes", scope: GitDirScope::Common, effect: EnablesProgram, why: "highest-precedence attributes: selects filter/diff/merge drivers", severity: Error, research: "§3.3" },
    GitDirEntry { path: "info/exclude", scope: GitDirScope::Common, effect: Redirects, why: "hides planted untracked files from status", severity: Note, research: "§3.3" },
    GitDirEntry { path: "objects/info/alternates", scope: GitDirScope::Common, effect: Redirects, why: "extra object stores; enables core.alternateRefsCommand on fetch", severity: Warning, research: "§3.3" },
    GitDirEntry { path: "info/grafts", scope: GitDirScope::Common, effect: Redirects, why: "fake parents rewrite visible history", severity: Note, research: "§3.3" },
    GitDirEntry { path: "modules", scope: GitDirScope::Common, effect: LoadsConfig, why: "submodule git dirs with their own config and hooks, run by superproject recursion", severity: Error, research: "§3.3" },
    GitDirEntry { path: "rebase-merge/git-rebase-todo", scope: GitDirScope::Any, effect: RunsShell, why: "an exec line runs on rebase --continue", severity: Error, research: "§3.3" },
    GitDirEntry { path: "worktrees", scope: GitDirScope::Common, effect: Redirects, why: "linked worktree entries (gitdir, commondir, HEAD, config.worktree)", severity: Error, research: "§4" },
    GitDirEntry { path: "branches", scope: GitDirScope::Common, effect: EnablesProgram, why: "legacy remote definitions (URLs)", severity: Warning, research: "§3.3" },
    GitDirEntry { path: "remotes", scope: GitDirScope::Common, effect: EnablesProgram, why: "legacy remote definitions (URLs)", severity: Warning, research: "§3.3" },
];

/// URL forms that make a transport run a local program: `ext::…`, `<helper>::…`, a leading
/// dash (option injection), or a local path / `file://` (whose `uploadpack` runs locally).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlDanger {
    /// `ext::<command>`: runs a command line.
    Ext,
    /// `<helper>::<address>`: runs `git-remote-<helper>`.
    Helper,
    /// Starts with `-`: taken as an option by ssh or clone.
    DashLeading,
    /// A local path or `file://`: `uploadpack`/`receivepack` run locally through the shell.
    Local,
    /// Carries a control character (CR, LF, ESC…): credential and prompt spoofing.
    ControlChar,
}

/// Classify a remote or submodule URL. `None` for ordinary network URLs
/// (`https://`, `ssh://`, `git://`, `user@host:path`).
pub fn classify_url(url: &str) -> Option<UrlDanger> {
    if url.chars().any(|c| c.is_control()) {
        return Some(UrlDanger::ControlChar);
    }
    let u = url.trim();
    if u.starts_with('-') {
        return Some(UrlDanger::DashLeading);
    }
    if let Some(rest) = u.strip_prefix("ext::") {
        let _ = rest;
        return Some(UrlDanger::Ext);
    }
    if let Some(pos) = u.find("::") {
        let helper = &u[..pos];
        if !helper.is_empty()
            && helper
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '+' || c == '.')
        {
            return Some(UrlDanger::Helper);
        }
    }
    let lower = u.to_ascii_lowercase();
    if lower.starts_with("file://") {
        return Some(UrlDanger::Local);
    }
    if let Some(pos) = lower.find("://") {
        let scheme = &lower[..pos];
        // `ssh://-oProxyCommand=…/x`: a host (or user) starting with `-` is taken as an
        // ssh option (CVE-2017-1000117).
        let authority = &u[pos + 3..];
        let host = authority
            .split('/')
            .next()
            .unwrap_or("")
            .rsplit('@')
            .next()
            .unwrap_or("");
        if authority.starts_with('-') || host.starts_with('-') {
            return Some(UrlDanger::DashLeading);
        }
        return match scheme {
            "http" | "https" | "ssh" | "git" | "ftp" | "ftps" | "git+ssh" | "ssh+git" => None,
            _ => Some(UrlDanger::Helper),
        };
    }
    // scp-like `host:path` (no slash before the first colon) is ssh.
    if let Some(colon) = u.find(':') {
        if !u[..colon].contains('/') && colon > 0 {
            return None;
        }
    }
    Some(UrlDanger::Local)
}

/// URL-carrying keys whose ordinary values are harmless in one repository's config but, in a
/// config file every repository reads (global, system, or one named with `--file`), redirect
/// the owner's every repository: `url.https://attacker/.insteadOf = https://github.com/`.
/// git-shim refuses writes of them outside the repository's own config.
pub static SCOPE_WIDE_URL_KEYS: &[KeyPattern] =
    &[per!("url"."insteadOf"), per!("url"."pushInsteadOf")];

/// Where a URL sits in a URL-carrying config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlIn {
    /// The value is a URL (`remote.<name>.url`).
    Value,
    /// The subsection is the URL a prefix is rewritten to (`url.<base>.insteadOf`).
    Subsection,
    /// The value names a remote — or, when no remote has that name, is itself the URL git
    /// fetches from (`branch.<name>.remote`; `.` is the repository itself). A remote's
    /// nickname (no `/`, no `:`) or `.` is not a URL; anything else is judged as one.
    NameOrUrl,
}

/// Config keys that carry a remote or submodule URL: a persistent write is judged by the URL
/// it stores ([`classify_url`]), so an ordinary `https://` remote can be set while `ext::`,
/// `<helper>::` and local paths are refused (git-shim).
pub static URL_KEYS: &[(KeyPattern, UrlIn)] = &[
    (per!("remote"."url"), UrlIn::Value),
    (per!("remote"."pushurl"), UrlIn::Value),
    (per!("submodule"."url"), UrlIn::Value),
    (per!("url"."insteadOf"), UrlIn::Subsection),
    (per!("url"."pushInsteadOf"), UrlIn::Subsection),
    (per!("branch"."remote"), UrlIn::NameOrUrl),
    (per!("branch"."pushRemote"), UrlIn::NameOrUrl),
    (k!("remote"."pushDefault"), UrlIn::NameOrUrl),
];

/// Variables a launcher of the agent's commands (agent-shell) removes besides the defused
/// git set ([`ENV`]): shell start-up code and container-daemon access. Docker variables are
/// set again by agent-shell only when the policy opts in.
pub static SHELL_ENV: &[EnvEntry] = &[
    rm("PROMPT_COMMAND", "run by an interactive bash before every prompt", "§2b"),
    rm("BASH_FUNC_*", "exported bash functions, defined in every bash the agent starts (Shellshock-style carriers)", "§2b"),
    rm("DOCKER_HOST", "daemon socket: host root through the container engine", "anchors §2.1"),
    rm("DOCKER_CONTEXT", "selects a daemon endpoint from the client config", "anchors §2.1"),
    rm("DOCKER_CONFIG", "client config with registry logins and contexts", "anchors §2.1"),
    rm("DOCKER_CERT_PATH", "TLS client keys for a remote daemon", "anchors §2.1"),
    rm("DOCKER_TLS_VERIFY", "TLS settings for a remote daemon", "anchors §2.1"),
    rm("CONTAINER_HOST", "podman remote socket", "anchors §2.1"),
];

/// Keys that the config and attributes readers interpret themselves (they change which files
/// are read), named once here so no reader spells them. Each is also a row of [`KEYS`] (§1e).
pub mod loader {
    use super::KeyPattern;

    /// `include.path`: inserts another config file in place (no subsection).
    pub const INCLUDE_PATH: KeyPattern = KeyPattern::Key {
        section: "include",
        name: "path",
    };
    /// `includeIf.<condition>.path`: inserts another config file when the condition holds.
    pub const INCLUDE_IF_PATH: KeyPattern = KeyPattern::PerName {
        section: "includeIf",
        name: "path",
    };
    /// `extensions.worktreeConfig`: makes git read `config.worktree` of the current git dir.
    pub const WORKTREE_CONFIG: KeyPattern = KeyPattern::Key {
        section: "extensions",
        name: "worktreeConfig",
    };
    /// `core.attributesFile`: an extra attributes file (default `$XDG_CONFIG_HOME/git/attributes`).
    pub const ATTRIBUTES_FILE: KeyPattern = KeyPattern::Key {
        section: "core",
        name: "attributesFile",
    };
    /// `core.hooksPath`: replaces `<common dir>/hooks`.
    pub const HOOKS_PATH: KeyPattern = KeyPattern::Key {
        section: "core",
        name: "hooksPath",
    };
    /// `core.worktree`: the work tree, anywhere.
    pub const CORE_WORKTREE: KeyPattern = KeyPattern::Key {
        section: "core",
        name: "worktree",
    };
    /// `attr.tree`: read `.gitattributes` from a tree-ish instead of the work tree and index.
    pub const ATTR_TREE: KeyPattern = KeyPattern::Key {
        section: "attr",
        name: "tree",
    };
    /// `diff.external`: safe-git handles it itself (an empty `-c` value breaks every diff).
    pub const DIFF_EXTERNAL: KeyPattern = KeyPattern::Key {
        section: "diff",
        name: "external",
    };
    /// `diff.<driver>.textconv`: no `-c` value makes it inert (an empty one makes git die
    /// "unable to read files to diff"), so safe-git also passes `--no-textconv`.
    pub const DIFF_TEXTCONV: KeyPattern = KeyPattern::PerName {
        section: "diff",
        name: "textconv",
    };
    /// `diff.<driver>.command`: like `diff.external`, an empty value makes the diff die, so
    /// safe-git also passes `--no-ext-diff`.
    pub const DIFF_COMMAND: KeyPattern = KeyPattern::PerName {
        section: "diff",
        name: "command",
    };
    /// `log.showSignature`: log and show run the verification program.
    pub const SHOW_SIGNATURE: KeyPattern = KeyPattern::Key {
        section: "log",
        name: "showSignature",
    };
    /// `extensions.objectFormat`: the object id length (git reads it from the common dir's
    /// `config` alone, without includes).
    pub const OBJECT_FORMAT: KeyPattern = KeyPattern::Key {
        section: "extensions",
        name: "objectFormat",
    };
    /// `extensions.partialClone`: the promisor remote lazy fetches go to.
    pub const PARTIAL_CLONE: KeyPattern = KeyPattern::Key {
        section: "extensions",
        name: "partialClone",
    };
}

/// The files `git worktree add` writes into a linked worktree's admin dir
/// (`worktree.c:add_worktree`; `locked` with `--lock`, `config.worktree` once
/// `extensions.worktreeConfig` is used): the ones layout reads whole for its checks and
/// wt-check compares against the baseline.
pub static WORKTREE_ADMIN_FILES: &[&str] =
    &["gitdir", "commondir", "HEAD", "locked", "config.worktree"];

/// What a linked worktree's admin dir (`<common>/worktrees/<id>/`) may hold: the files git
/// keeps per worktree. Every other name there is planted: git either never reads it or takes
/// it from the common dir instead ([`WORKTREE_COMMON_ONLY`]). Sources: git's
/// `worktree.c:add_worktree` (gitdir, commondir, HEAD, locked, config.worktree), the ref and
/// state files of `path.c`/`refs` that are not in `common_list`, and the sequencer/rebase/bisect
/// state folders. Names ending in `.lock` whose stem is listed are git's lock files.
pub static WORKTREE_PRIVATE_ENTRIES: &[&str] = &[
    "gitdir",
    "commondir",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "MERGE_AUTOSTASH",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "BISECT_LOG",
    "BISECT_START",
    "BISECT_EXPECTED_REV",
    "BISECT_ANCESTORS_OK",
    "BISECT_NAMES",
    "BISECT_TERMS",
    "BISECT_FIRST_PARENT",
    "BISECT_RUN",
    "BISECT_HEAD",
    "SQUASH_MSG",
    "COMMIT_EDITMSG",
    "TAG_EDITMSG",
    "NOTES_MERGE_PARTIAL",
    "NOTES_MERGE_REF",
    "NOTES_MERGE_WORKTREE",
    "index",
    "locked",
    "config.worktree",
    "logs",
    "refs",
    "info",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
    "modules",
    "fsmonitor--daemon.ipc",
    "gc.log",
];

/// Inside a worktree admin dir, the only per-worktree paths below `refs/`, `logs/` and
/// `info/` (git's `path.c` `common_list` entries with `is_common = 0`). Anything else there
/// is read from the common dir by git, so a copy in the admin dir is planted.
pub static WORKTREE_PRIVATE_SUBPATHS: &[&str] = &[
    "refs/bisect",
    "refs/rewritten",
    "refs/worktree",
    "logs/HEAD",
    "logs/refs",
    "logs/refs/bisect",
    "logs/refs/rewritten",
    "logs/refs/worktree",
    "info/sparse-checkout",
];

/// The per-worktree state of the *main* worktree that can name an object: files and folders
/// at the top of its git dir (the common dir) that git keeps for that worktree alone and
/// that `would-lose-work` reads for object ids (refs/files-backend `is_per_worktree_ref`,
/// the pseudorefs, the rebase/sequencer/bisect state). A linked worktree's whole admin dir
/// is read instead.
pub static MAIN_WORKTREE_STATE: &[&str] = &[
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_AUTOSTASH",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "BISECT_HEAD",
    "BISECT_EXPECTED_REV",
    "BISECT_START",
    "BISECT_LOG",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
    "refs/bisect",
    "refs/rewritten",
    "refs/worktree",
    "logs/HEAD",
    "logs/refs/bisect",
    "logs/refs/rewritten",
    "logs/refs/worktree",
];

/// git's `path.c` `common_list` entries with `is_common = 1`: paths git always resolves in the
/// common dir, even when asked for them through a linked worktree's git dir. A planted
/// `worktrees/<id>/hooks/` or `worktrees/<id>/config` is therefore ignored by git (verified
/// for hooks, research §4.1) — still reported, since it shows an agent writing there.
pub static WORKTREE_COMMON_ONLY: &[&str] = &[
    "branches",
    "common",
    "hooks",
    "info",
    "logs",
    "lost-found",
    "objects",
    "refs",
    "remotes",
    "worktrees",
    "rr-cache",
    "svn",
    "config",
    "gc.pid",
    "packed-refs",
    "shallow",
];

/// Folder names that hold hook scripts by convention, outside the git dir: husky's `.husky/`,
/// the `.githooks/` that `core.hooksPath` is commonly pointed at, and generic `hooks/`
/// folders. A file in such a folder that is executable, or named after a hook event, is a
/// hook waiting for someone to point `core.hooksPath` (or husky's installer) at it (research
/// §1a, §3.1). Compared ASCII-case-insensitively (case-insensitive filesystems).
pub static HOOK_LIKE_DIRS: &[&str] = &[
    ".husky",
    ".githooks",
    "githooks",
    ".git-hooks",
    "git-hooks",
    ".hooks",
    "hooks",
];

/// A file that git itself reads from the work tree or the index, with the NTFS 8.3 short-name
/// prefix git's `path.c` checks for it (`is_ntfs_dotgitmodules` & co.): on NTFS,
/// `GITMOD~1` or `GI7EBA~1` name the same file as `.gitmodules`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TreeDotfile {
    /// The name without its leading dot, e.g. `gitmodules`.
    pub name: &'static str,
    /// git's fallback NTFS short-name prefix for it.
    pub ntfs_prefix: &'static str,
    pub why: &'static str,
}

/// The dotfiles git reads from a tree (git `path.c`, `fsck.c`: they must never be symlinks).
pub static TREE_DOTFILES: &[TreeDotfile] = &[
    TreeDotfile {
        name: "gitmodules",
        ntfs_prefix: "gi7eba",
        why: "submodule URLs, paths and names (CVE-2018-11235, CVE-2018-17456, CVE-2025-48384)",
    },
    TreeDotfile {
        name: "gitattributes",
        ntfs_prefix: "gi7d29",
        why: "selects filter, diff and merge drivers (§1d, CVE-2022-23521)",
    },
    TreeDotfile {
        name: "gitignore",
        ntfs_prefix: "gi250a",
        why: "hides files from status",
    },
    TreeDotfile {
        name: "mailmap",
        ntfs_prefix: "maba30",
        why: "rewrites identities in log output",
    },
];

/// How a CI definition path is matched against a path in a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathMatch {
    /// The path equals this, at the top of the tree.
    Exact,
    /// The path lies under this folder, at the top of the tree.
    Under,
}

/// A CI definition: a file a CI service runs with the repository's credentials when the
/// branch is pushed.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CiPath {
    pub path: &'static str,
    pub how: PathMatch,
    pub service: &'static str,
}

/// CI definition files and folders (top of the tree).
pub static CI_PATHS: &[CiPath] = &[
    CiPath {
        path: ".github/workflows",
        how: PathMatch::Under,
        service: "GitHub Actions",
    },
    CiPath {
        path: ".github/actions",
        how: PathMatch::Under,
        service: "GitHub Actions (local actions)",
    },
    CiPath {
        path: ".gitlab-ci.yml",
        how: PathMatch::Exact,
        service: "GitLab CI",
    },
    CiPath {
        path: ".gitlab-ci.yaml",
        how: PathMatch::Exact,
        service: "GitLab CI",
    },
    CiPath {
        path: ".gitlab",
        how: PathMatch::Under,
        service: "GitLab CI (included files)",
    },
    CiPath {
        path: ".circleci",
        how: PathMatch::Under,
        service: "CircleCI",
    },
    CiPath {
        path: ".travis.yml",
        how: PathMatch::Exact,
        service: "Travis CI",
    },
    CiPath {
        path: "azure-pipelines.yml",
        how: PathMatch::Exact,
        service: "Azure Pipelines",
    },
    CiPath {
        path: ".azure-pipelines",
        how: PathMatch::Under,
        service: "Azure Pipelines",
    },
    CiPath {
        path: "bitbucket-pipelines.yml",
        how: PathMatch::Exact,
        service: "Bitbucket Pipelines",
    },
    CiPath {
        path: "Jenkinsfile",
        how: PathMatch::Exact,
        service: "Jenkins",
    },
    CiPath {
        path: ".buildkite",
        how: PathMatch::Under,
        service: "Buildkite",
    },
    CiPath {
        path: ".drone.yml",
        how: PathMatch::Exact,
        service: "Drone",
    },
    CiPath {
        path: ".woodpecker",
        how: PathMatch::Under,
        service: "Woodpecker",
    },
    CiPath {
        path: ".woodpecker.yml",
        how: PathMatch::Exact,
        service: "Woodpecker",
    },
    CiPath {
        path: ".gitea/workflows",
        how: PathMatch::Under,
        service: "Gitea Actions",
    },
    CiPath {
        path: ".forgejo/workflows",
        how: PathMatch::Under,
        service: "Forgejo Actions",
    },
    CiPath {
        path: ".cirrus.yml",
        how: PathMatch::Exact,
        service: "Cirrus CI",
    },
    CiPath {
        path: "appveyor.yml",
        how: PathMatch::Exact,
        service: "AppVeyor",
    },
    CiPath {
        path: ".appveyor.yml",
        how: PathMatch::Exact,
        service: "AppVeyor",
    },
    CiPath {
        path: "cloudbuild.yaml",
        how: PathMatch::Exact,
        service: "Google Cloud Build",
    },
    CiPath {
        path: "buildspec.yml",
        how: PathMatch::Exact,
        service: "AWS CodeBuild",
    },
];

/// Commit and tag header names that carry a signature; `git log` runs `gpg.program` on them
/// when `log.showSignature` is on (research headline 7; `mergetag` embeds a signed tag).
pub static SIGNATURE_HEADERS: &[&str] = &["gpgsig", "gpgsig-sha256", "mergetag"];

/// Armour lines that start an in-message tag signature (`git tag -s`: OpenPGP, SSH, X.509).
pub static TAG_SIGNATURE_MARKERS: &[&str] = &[
    "-----BEGIN PGP SIGNATURE-----",
    "-----BEGIN SSH SIGNATURE-----",
    "-----BEGIN SIGNED MESSAGE-----",
];

/// Something git itself writes into a git dir during ordinary work (gc, repack, fetch,
/// maintenance, rebase, rerere, …), judged by whether it can arm the owner's git. wt-check
/// `check` compares the protected trees (`info/`, `hooks/`, …) of every git dir; a row with
/// `reported: false` that lies inside one is left out of that comparison, because git writes
/// it on its own and nothing reads it to run or redirect anything. A row with
/// `reported: true` stays compared: what it names can redirect the owner's git. Rows outside
/// the protected trees are listed so a reviewer can see each was judged (wt-check never
/// reads them). Sources: git's `builtin/gc.c`, `builtin/repack.c`, `server-info.c`,
/// `commit-graph.c`, `midx.c`, `builtin/fetch.c`, `rerere.c`, `shallow.c`, `path.c`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GitWrittenEntry {
    /// Path relative to the git dir it lives in.
    pub path: &'static str,
    /// Which git commands write it.
    pub by: &'static str,
    /// Compared by `check` (true), or left out (false).
    pub reported: bool,
    pub why: &'static str,
}

const fn gw(
    path: &'static str,
    by: &'static str,
    reported: bool,
    why: &'static str,
) -> GitWrittenEntry {
    GitWrittenEntry {
        path,
        by,
        reported,
        why,
    }
}

/// Folders of a git dir (the common dir's, a worktree entry's, a submodule git dir's) that
/// git lists and whose every file it may open: a link to a folder at or below one of them is
/// followed by the special-file sweep (`audit::special`), since git descends it as the
/// folder it names (fifteenth red-team pass, R15-3/R15-4: `objects/pack` or a folder of refs
/// linked to a folder holding a FIFO hung the owner's git; sixteenth, R16-6/R16-10: a link
/// at `modules/<m>/logs` or at `rr-cache` itself — rerere opens `rr-cache/<id>/preimage`).
/// Links elsewhere (`hooks`) are the comparison's to judge. A link in the ref namespace is
/// reported whatever it points at (`audit::special::REF_LINK`).
pub const GIT_DIR_LISTED_FOLDERS: &[&str] = &["refs", "logs", "objects", "rr-cache"];

pub static GIT_WRITTEN_ENTRIES: &[GitWrittenEntry] = &[
    gw("info/refs", "update-server-info (run by repack and gc unless repack.updateServerInfo=false, by maintenance, by receive-pack with receive.updateServerInfo)", false, "read only by a dumb-HTTP server answering someone's fetch; git never reads it to run, load or redirect anything"),
    gw("info/sparse-checkout", "git sparse-checkout set|add|init|reapply, clone --sparse", false, "path patterns that choose which tracked files are checked out; names no program and no other folder"),
    gw("objects/info/packs", "update-server-info", false, "dumb-HTTP pack list; read by dumb-HTTP clients only"),
    gw("objects/info/commit-graph", "commit-graph write, gc (gc.writeCommitGraph), fetch (fetch.writeCommitGraph), maintenance", false, "an index of commits git reads to walk history faster; names no program or folder, but git takes a commit's tree and parents from it without checking them against the commit object (a forged entry changes what `git cherry-pick` writes): not compared; a graph new or changed since the pin is verified against the commit objects (GW-OBJ-002, docs/wt-check.md, Forged commit-graph)"),
    gw("objects/info/commit-graphs", "commit-graph write --split, maintenance", false, "split commit-graph chain (commit-graph-chain and the graph-<hash>.graph files it names); read by git as the single file is: verified as one graph (GW-OBJ-002)"),
    gw("objects/pack/multi-pack-index", "multi-pack-index write, repack --write-midx, maintenance", false, "an index over packs; names no program or folder, but git reads an object at the (pack, offset) it gives without checking it against the id: verified against each pack's .idx when it or a pack changed (GW-OBJ-003, docs/wt-check.md, Object substitution through packs)"),
    gw("packed-refs", "pack-refs, gc, clone, fetch", false, "refs; the commit scan compares them with the pin"),
    gw("logs", "every ref update (core.logAllRefUpdates)", false, "reflogs; names nothing"),
    gw("FETCH_HEAD", "fetch, pull", false, "what was fetched; read by pull and merge as revisions"),
    gw("ORIG_HEAD", "reset, rebase, merge, am", false, "a revision"),
    gw("AUTO_MERGE", "merge-ort when it stops with conflicts", false, "a tree id"),
    gw("gc.log", "gc --auto in the background", false, "the last auto-gc's error output; only stops the next auto-gc"),
    gw("gc.pid", "gc", false, "host name and pid of a running gc; a lock"),
    gw("rr-cache", "rerere (rerere.enabled, merge, rebase, am)", false, "recorded conflict resolutions; names no program, but replayed as file content into the owner's next merge of the same conflict (a planted postimage: R16-9): not compared as a protected tree, `check` reports each entry written since the pin as a warning and `--restore` sets it aside (`integrity::rerere`)"),
    gw("MERGE_RR", "rerere", false, "conflicts being recorded"),
    gw("shallow", "fetch/clone --depth, --shallow-since, --unshallow", false, "the shallow boundary (commit ids)"),
    gw("index", "add, commit, status, checkout, …", false, "staged content; its gitlinks are checked separately (embedded repositories)"),
    gw("objects/info/alternates", "clone --reference / --shared / --local of an alternate, repack -a removes", true, "extra object stores: objects (and `core.alternateRefsCommand` on fetch) come from folders the agent may choose"),
    gw("info/attributes", "nothing (git never writes it)", true, "highest-precedence attributes: select filter, diff and merge drivers"),
    gw("info/grafts", "nothing (deprecated; git never writes it)", true, "fake parents rewrite the history the owner (and the commit scan) sees"),
    gw("info/exclude", "init (from the template), never afterwards", true, "hides planted untracked files from status"),
];

/// Config keys git writes into the repository's own `config` during ordinary work: the
/// tracking configuration of `git branch -u` / `--set-upstream-to`, `branch --track`,
/// `checkout -b <b> <remote>/<b>` (branch.autoSetupMerge), `push -u`, `fetch
/// --set-upstream`, `switch -c … --track`. wt-check `check` does not report a change of
/// `config` that only adds, changes or removes these, when every value they hold names a
/// remote the file defines, `.`, or a URL class that runs nothing (`branch.<name>.remote` can be a
/// URL, [`URL_KEYS`]); any other change of the file is reported as before. Sources: git's
/// `branch.c:install_branch_config`, `builtin/push.c`, `builtin/fetch.c`. Every key
/// `install_branch_config_multiple_remotes` writes: `remote`, `merge` (one or more) and,
/// under the owner's `branch.autoSetupRebase` (`always`, `remote`, `local`), `rebase = true`
/// (the only value git writes there; any other is the agent's).
pub static TRACKING_CONFIG_KEYS: &[KeyPattern] = &[
    per!("branch"."remote"),
    per!("branch"."merge"),
    per!("branch"."rebase"),
];

/// What a state file of an in-progress operation names, and so what the owner's
/// `--continue` (or `--skip`) runs or passes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateNames {
    /// A rebase todo list: every `exec` line runs through `sh -c` (`sequencer.c:parse_insn_line`).
    TodoExec,
    /// A merge strategy: git runs `git merge-<strategy>` for it (`merge.c:try_merge_command`,
    /// no check against the known strategies); a strategy with a `/` is run as a path.
    Strategy,
    /// Options given to the strategy program (`--<option>`); git's in-process `ort` and
    /// `recursive` parse them themselves. Judged with the strategy.
    StrategyOptions,
    /// `-S<key>`: the owner's `gpg.program` / ssh-keygen signs the continued commits with
    /// this key. `-S` alone (the owner's default key, written for `commit.gpgSign`) names none.
    SigningKey,
    /// One argument `rebase --continue` passes whole to `git am` (the apply backend's
    /// `gpg_sign_opt`): git writes `-S` or `-S<key>` only.
    AmArgument,
    /// `git apply` options, shell-quoted (`rebase-apply/apply-opt`); git am writes only
    /// [`AM_APPLY_OPTIONS`].
    ApplyOptions,
    /// The cherry-pick/revert options sheet (`sequencer/opts`, config syntax):
    /// `options.strategy`, `options.strategy-option`, `options.gpg-sign`.
    OptionsSheet,
    /// `--trailer` arguments (git ≥ 2.51): each selects a `trailer.<token>.*` the owner
    /// configured, with its value as the argument of `trailer.<token>.cmd`.
    Trailers,
    /// Names no program, option or folder (listed so the judgement is visible).
    Nothing,
}

/// One state file of an in-progress operation, relative to the git dir that holds it (the
/// common dir for the main worktree, `worktrees/<id>/` for a linked one, `modules/<name>/`
/// for a submodule). Sources: `sequencer.c` (`read_populate_opts`, `read_strategy_opts`,
/// `read_populate_todo`, `populate_opts_cb`), `builtin/rebase.c` (`read_basic_state`,
/// `run_am`), `builtin/am.c` (`am_load`), `builtin/merge.c`, `builtin/bisect.c`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SequencerStateFile {
    pub path: &'static str,
    /// The operation that keeps it, and the command of the owner's that reads it.
    pub read_by: &'static str,
    pub names: StateNames,
    pub why: &'static str,
}

const fn sq(
    path: &'static str,
    read_by: &'static str,
    names: StateNames,
    why: &'static str,
) -> SequencerStateFile {
    SequencerStateFile {
        path,
        read_by,
        names,
        why,
    }
}

pub static SEQUENCER_STATE: &[SequencerStateFile] = &[
    sq("rebase-merge/git-rebase-todo", "rebase --continue / --skip", StateNames::TodoExec, "`exec`/`x` lines (any leading blanks, a space or tab after the word, CRLF endings) run through the shell outside the sandbox"),
    sq("rebase-merge/strategy", "rebase --continue (every pick: `git merge-<strategy>`)", StateNames::Strategy, "a strategy other than git's own names a program; one with `/` is run as a path (`git-merge-/../x`)"),
    sq("rebase-merge/strategy_opts", "rebase --continue", StateNames::StrategyOptions, "options passed to the strategy program"),
    sq("rebase-merge/gpg_sign_opt", "rebase --continue (`git commit -S<key>`)", StateNames::SigningKey, "the owner's signing program signs the agent's commits with the key the agent chose"),
    sq("rebase-merge/trailer", "rebase --continue (git ≥ 2.51)", StateNames::Trailers, "selects the owner's trailer commands and their arguments"),
    sq("rebase-apply/gpg_sign_opt", "rebase --continue, apply backend (`git am --resolved <it>`)", StateNames::AmArgument, "passed whole as one argument of git am"),
    sq("rebase-apply/apply-opt", "am --continue, rebase --continue (apply backend)", StateNames::ApplyOptions, "options of the in-process `git apply` (`--build-fake-ancestor=<file>` writes an index anywhere)"),
    sq("sequencer/opts", "cherry-pick / revert --continue", StateNames::OptionsSheet, "`options.strategy` runs `git merge-<strategy>` (a `/` runs a path), `options.gpg-sign` picks the signing key"),
    sq("sequencer/todo", "cherry-pick / revert --continue", StateNames::Nothing, "git parses it like a rebase todo but refuses every line that is not the operation's own pick/revert, so an `exec` line never runs"),
    sq("rebase-merge/done", "rebase --continue", StateNames::Nothing, "parsed to count progress only; never run"),
    sq("rebase-merge/git-rebase-todo.backup", "rebase --edit-todo", StateNames::Nothing, "compared with the edited todo; never run"),
    sq("rebase-merge/allow_rerere_autoupdate", "rebase --continue", StateNames::Nothing, "`--rerere-autoupdate` or `--no-rerere-autoupdate`; anything else is ignored"),
    sq("rebase-merge/autostash", "rebase --continue / --abort (`stash apply <id>`)", StateNames::Nothing, "an object id"),
    sq("rebase-merge/author-script", "rebase --continue", StateNames::Nothing, "author identity, parsed (not sourced) since git 2.19"),
    sq("rebase-merge/reschedule-failed-exec", "rebase --continue", StateNames::Nothing, "re-queues failed `exec` lines; runs only what the todo names"),
    sq("MERGE_MODE", "commit / merge --continue", StateNames::Nothing, "`no-ff`"),
    sq("MERGE_HEAD", "commit / merge --continue", StateNames::Nothing, "commit ids"),
    sq("MERGE_MSG", "commit", StateNames::Nothing, "a commit message"),
    sq("BISECT_NAMES", "bisect visualize (`git log --bisect -- <names>`)", StateNames::Nothing, "pathspecs, after `--`"),
    sq("BISECT_START", "bisect reset (`git checkout <rev> --`)", StateNames::Nothing, "a revision"),
];

/// The folders of the in-progress operations whose state files can name a program:
/// `check --restore` moves the whole folder aside when one of them does.
pub static SEQUENCER_DIRS: &[&str] = &["rebase-merge", "rebase-apply", "sequencer"];

/// git's own merge strategies (`builtin/merge.c:all_strategy`): a strategy state file naming
/// one of these selects a program of the owner's git installation.
pub static BUILTIN_MERGE_STRATEGIES: &[&str] =
    &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

/// The strategies the sequencer runs in-process (their options too): never `git merge-<it>`.
pub static IN_PROCESS_STRATEGIES: &[&str] = &["ort", "recursive"];

/// The `git apply` options git am itself writes into `rebase-apply/apply-opt` (its
/// pass-through options): an argument with one of these prefixes is git's own.
pub static AM_APPLY_OPTIONS: &[&str] = &[
    "--whitespace=",
    "--ignore-space-change",
    "--ignore-whitespace",
    "--directory=",
    "--exclude=",
    "--include=",
    "--reject",
    "-C",
    "-p",
];

/// The options of sequencer commands that write a program, a strategy, its options or a
/// signing key into an in-progress operation's state, where the owner's `--continue` reads
/// them outside the sandbox. git-shim refuses them (rule `sequencer-option`) unless the
/// policy sets `shim.allow_sequencer_options`. `(command, long option, short option, why)`;
/// a long option with `=KEY` matters only with a value (`-S` alone is the owner's key).
pub static SEQUENCER_OPTIONS: &[(&str, &str, Option<char>, &str)] = &[
    (
        "rebase",
        "--exec",
        Some('x'),
        "writes `exec` lines into the todo list: the owner's `rebase --continue` runs them",
    ),
    (
        "rebase",
        "--strategy",
        Some('s'),
        "stored in rebase-merge/strategy: the owner's `--continue` runs `git merge-<strategy>`",
    ),
    (
        "rebase",
        "--strategy-option",
        Some('X'),
        "stored in rebase-merge/strategy_opts: passed to the strategy program",
    ),
    (
        "rebase",
        "--gpg-sign=KEY",
        Some('S'),
        "stored in gpg_sign_opt: the owner's `--continue` signs with that key",
    ),
    (
        "rebase",
        "--trailer",
        None,
        "stored in rebase-merge/trailer: selects the owner's trailer commands",
    ),
    (
        "cherry-pick",
        "--strategy",
        None,
        "stored in sequencer/opts: the owner's `--continue` runs `git merge-<strategy>`",
    ),
    (
        "cherry-pick",
        "--strategy-option",
        Some('X'),
        "stored in sequencer/opts",
    ),
    (
        "cherry-pick",
        "--gpg-sign=KEY",
        Some('S'),
        "stored in sequencer/opts: the owner's `--continue` signs with that key",
    ),
    (
        "revert",
        "--strategy",
        None,
        "stored in sequencer/opts: the owner's `--continue` runs `git merge-<strategy>`",
    ),
    (
        "revert",
        "--strategy-option",
        Some('X'),
        "stored in sequencer/opts",
    ),
    (
        "revert",
        "--gpg-sign=KEY",
        Some('S'),
        "stored in sequencer/opts: the owner's `--continue` signs with that key",
    ),
    (
        "pull",
        "--strategy",
        Some('s'),
        "with --rebase, stored in rebase-merge/strategy",
    ),
    (
        "pull",
        "--strategy-option",
        Some('X'),
        "with --rebase, stored in rebase-merge/strategy_opts",
    ),
    (
        "pull",
        "--gpg-sign=KEY",
        Some('S'),
        "with --rebase, stored in gpg_sign_opt",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_ref_names_are_gits() {
        for n in [
            "ORIG_HEAD",
            "FETCH_HEAD",
            "MERGE_HEAD",
            "CHERRY_PICK_HEAD",
            "AUTO_MERGE",
            "MERGE_AUTOSTASH",
            "BISECT_EXPECTED_REV",
            "X-Y_HEAD",
        ] {
            assert!(is_root_ref_name(n.as_bytes()), "{n}");
        }
        for n in [
            "",
            "head",
            "refs",
            "Orig_HEAD",
            "HEAD.lock",
            "A/B",
            "MERGE_HEAD~",
            "MERGE_RR",
            "MERGE_MSG",
            "BISECT_LOG",
            "BISECT-X",
        ] {
            assert!(!is_root_ref_name(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn version_parses_git_output() {
        assert_eq!(
            GitVersion::parse("git version 2.47.3"),
            Some(GitVersion::new(2, 47, 3))
        );
        assert_eq!(
            GitVersion::parse("git version 2.39.5\n"),
            Some(GitVersion::new(2, 39, 5))
        );
        assert_eq!(
            GitVersion::parse("git version 2.55.GIT"),
            Some(GitVersion::new(2, 55, 0))
        );
        assert_eq!(
            GitVersion::parse("git version 2.45.1.windows.1"),
            Some(GitVersion::new(2, 45, 1))
        );
        assert_eq!(GitVersion::parse("nonsense"), None);
        assert!(GitVersion::new(2, 39, 5) < CONFIG_HOOKS_SINCE);
    }

    #[test]
    fn config_key_split_follows_git() {
        let k = ConfigKey::parse("filter.my.driver.clean").unwrap();
        assert_eq!(
            (k.section, k.subsection, k.name),
            ("filter", Some("my.driver"), "clean")
        );
        let k = ConfigKey::parse("core.fsmonitor").unwrap();
        assert_eq!(
            (k.section, k.subsection, k.name),
            ("core", None, "fsmonitor")
        );
        assert!(ConfigKey::parse("nodot").is_none());
        assert!(ConfigKey::parse(".x").is_none());
    }

    #[test]
    fn lookup_matches_case_insensitively_and_per_name() {
        assert!(is_dangerous("CORE.FSMonitor"));
        assert!(is_dangerous("filter.Evil.clean"));
        assert!(is_dangerous("credential.https://example.com.helper"));
        assert!(is_dangerous("credential.helper"));
        assert!(is_dangerous("alias.st"));
        assert!(is_dangerous("include.path"));
        assert!(is_dangerous("includeIf.gitdir:/x/.path"));
        assert!(!is_dangerous("user.name"));
        assert!(!is_dangerous("core.autocrlf"));
        // `filter.clean` without a driver name is not a driver key.
        assert!(!is_dangerous("filter.clean"));
    }

    #[test]
    fn every_hook_event_is_unique_and_sorted() {
        let mut v = HOOK_EVENTS.to_vec();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), 28);
        assert_eq!(v, HOOK_EVENTS);
    }

    #[test]
    fn env_patterns() {
        assert!(env_name_matches("GIT_TRACE*", "GIT_TRACE2_EVENT"));
        assert!(env_name_matches("GIT_CONFIG_KEY_*", "GIT_CONFIG_KEY_0"));
        assert!(!env_name_matches("GIT_DIR", "GIT_DIRX"));
        assert!(!env_name_matches("GIT_DIR", "HIT_DIR"));
        assert!(!env_name_matches("GIT_DIR", ""));
        assert!(env_name_matches("LD_*", "LD_"));
        assert!(env_name_matches("*", "PATH"));
        assert!(env_name_matches("", ""));
    }

    #[test]
    fn env_first_bytes_cover_every_row() {
        for e in ENV {
            let first = e.name.as_bytes()[0];
            assert!(ENV_FIRST_BYTES[usize::from(first)], "{}", e.name);
        }
        assert!(
            !ENV_FIRST_BYTES[usize::from(b'H')],
            "no row starts with H (HOME)"
        );
    }

    #[test]
    fn url_classification() {
        assert_eq!(
            classify_url("ext::sh -c touch% /tmp/x"),
            Some(UrlDanger::Ext)
        );
        assert_eq!(classify_url("fd::17"), Some(UrlDanger::Helper));
        assert_eq!(
            classify_url("-oProxyCommand=x"),
            Some(UrlDanger::DashLeading)
        );
        assert_eq!(
            classify_url("ssh://-oProxyCommand=touch%20x/y"),
            Some(UrlDanger::DashLeading)
        );
        assert_eq!(
            classify_url("ssh://git@-oProxyCommand=x/y"),
            Some(UrlDanger::DashLeading)
        );
        assert_eq!(classify_url("/srv/repo.git"), Some(UrlDanger::Local));
        assert_eq!(classify_url("../sibling"), Some(UrlDanger::Local));
        assert_eq!(classify_url("file:///srv/repo.git"), Some(UrlDanger::Local));
        assert_eq!(classify_url("https://github.com/a/b"), None);
        assert_eq!(classify_url("git@github.com:a/b.git"), None);
        assert_eq!(classify_url("ssh://git@host/x"), None);
        assert_eq!(classify_url("https://x\r/y"), Some(UrlDanger::ControlChar));
    }

    #[test]
    fn driver_disarm_covers_every_program_key_of_the_kind() {
        for kind in DriverKind::ALL {
            for e in KEYS {
                if let KeyPattern::PerName { section, name } = e.key {
                    if section == kind.name() && matches!(e.effect, RunsShell | RunsProgram) {
                        assert!(
                            kind.disarm().iter().any(|(k, _)| *k == name),
                            "{section}.<name>.{name} not disarmed"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn always_set_keys_are_catalogue_keys() {
        for (k, _) in ALWAYS_SET {
            assert!(is_dangerous(k), "{k} is not matched by a KEYS row");
        }
    }

    #[test]
    fn loader_keys_are_catalogue_rows() {
        use super::loader::*;
        for p in [
            INCLUDE_PATH,
            INCLUDE_IF_PATH,
            WORKTREE_CONFIG,
            ATTRIBUTES_FILE,
            HOOKS_PATH,
            CORE_WORKTREE,
            ATTR_TREE,
            DIFF_EXTERNAL,
            SHOW_SIGNATURE,
            PARTIAL_CLONE,
            OBJECT_FORMAT,
        ] {
            assert!(
                KEYS.iter().any(|e| e.key == p),
                "{} is not a KEYS row",
                p.display()
            );
        }
    }
}

// ---- sandbox plan: sockets hidden from the agent ----------------------------------------------

/// A daemon socket the sandbox plan hides (`crate::plan`): talking to it is root on the host
/// (or, for the databases, reaching data the network switch was meant to cut off). A Unix
/// socket is reached by path, across network namespaces, so `--unshare-net` alone does not
/// cut it off; the plan binds `/dev/null` over each one that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HiddenSocket {
    pub path: &'static str,
    pub what: &'static str,
    pub when: SocketRule,
}

/// When a [`HiddenSocket`] is hidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketRule {
    /// Always: root-equivalent.
    Always,
    /// Unless the policy opts in to Docker (`[docker] enabled = true`).
    UnlessDocker,
    /// When the sandbox has no network: a database reached by its socket.
    NetworkOff,
}

/// The sockets of [`HiddenSocket`]; `$XDG_RUNTIME_DIR/docker.sock` is added by the plan.
pub static HIDDEN_SOCKETS: &[HiddenSocket] = &[
    HiddenSocket {
        path: "/run/docker.sock",
        what: "Docker",
        when: SocketRule::UnlessDocker,
    },
    HiddenSocket {
        path: "/var/run/docker.sock",
        what: "Docker",
        when: SocketRule::UnlessDocker,
    },
    HiddenSocket {
        path: "/run/podman/podman.sock",
        what: "Podman (rootful)",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/run/containerd/containerd.sock",
        what: "containerd",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/run/k3s/containerd/containerd.sock",
        what: "k3s containerd",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/run/libvirt/libvirt-sock",
        what: "libvirt",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/run/libvirt/virtqemud-sock",
        what: "libvirt (virtqemud)",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/var/lib/lxd/unix.socket",
        what: "LXD",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/var/snap/lxd/common/lxd/unix.socket",
        what: "LXD (snap)",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/var/lib/incus/unix.socket",
        what: "Incus",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/run/dbus/system_bus_socket",
        what: "D-Bus system bus",
        when: SocketRule::Always,
    },
    HiddenSocket {
        path: "/run/postgresql/.s.PGSQL.5432",
        what: "PostgreSQL",
        when: SocketRule::NetworkOff,
    },
    HiddenSocket {
        path: "/tmp/.s.PGSQL.5432",
        what: "PostgreSQL",
        when: SocketRule::NetworkOff,
    },
    HiddenSocket {
        path: "/run/mysqld/mysqld.sock",
        what: "MySQL",
        when: SocketRule::NetworkOff,
    },
    HiddenSocket {
        path: "/tmp/mysql.sock",
        what: "MySQL",
        when: SocketRule::NetworkOff,
    },
    HiddenSocket {
        path: "/run/redis/redis-server.sock",
        what: "Redis",
        when: SocketRule::NetworkOff,
    },
    HiddenSocket {
        path: "/run/redis/redis.sock",
        what: "Redis",
        when: SocketRule::NetworkOff,
    },
];

/// Folders of the owner's session daemons, hidden as a whole (an empty read-only tmpfs over
/// each one that exists and is a folder, not a link) because every socket in them runs
/// programs as the owner or hands out the owner's keys: a read-only mount does not stop
/// `connect()` on a Unix socket (`EROFS` applies to files, folders and links only), so the
/// read-only base leaves them reachable (red-team pass on the plan, P-7: `tmux -S … run-shell`
/// ran on the host). `{uid}` is the owner's uid, `{runtime}` `$XDG_RUNTIME_DIR` (else
/// `/run/user/{uid}`), `{home}` `$HOME`.
///
/// `{runtime}` as a whole: the user bus (`bus`: `systemd-run --user`), the user manager
/// (`systemd/private`), gpg-agent (`gnupg/`), ssh-agent sockets kept there, VS Code's IPC
/// sockets (`vscode-ipc-*.sock`: a command in the owner's editor), Wayland and PulseAudio.
/// ssh-agent is hidden with the rest: it signs with the owner's keys for any host; an agent
/// that must push uses a deploy key of its own (no switch keeps the owner's agent).
pub static HIDDEN_FOLDERS: &[HiddenFolder] = &[
    HiddenFolder {
        path: "{runtime}",
        what: "the owner's runtime dir: user D-Bus, systemd user manager, gpg-agent, ssh-agent, editor IPC",
    },
    HiddenFolder {
        path: "/tmp/tmux-{uid}",
        what: "tmux server (run-shell runs a command as the owner)",
    },
    HiddenFolder {
        path: "/run/screen",
        what: "GNU screen sessions",
    },
    HiddenFolder {
        path: "/var/run/screen",
        what: "GNU screen sessions",
    },
    HiddenFolder {
        path: "/tmp/emacs{uid}",
        what: "Emacs server (emacsclient --eval)",
    },
    HiddenFolder {
        path: "/tmp/.X11-unix",
        what: "X11 display (keystrokes into the owner's windows)",
    },
    HiddenFolder {
        path: "{home}/.gnupg",
        what: "gpg-agent sockets without a runtime dir (S.gpg-agent, S.gpg-agent.ssh)",
    },
    HiddenFolder {
        path: "/tmp/ssh-*",
        what: "ssh-agent sockets started without a runtime dir (ssh-agent's default)",
    },
];

/// A tree of [`HIDDEN_TREES`]: covered by a fresh tmpfs inside the sandbox, so no socket,
/// FIFO or folder of the host below it is reachable by path, whether it existed when the plan
/// was made or appears during the command (fifth red-team pass, R5-1, R5-6, R5-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HiddenTree {
    /// An absolute path, or `{runtime}` (the owner's runtime dir).
    pub path: &'static str,
    /// A writable tmpfs (scratch space: `mktemp` works) or a read-only empty one.
    pub writable: bool,
    pub what: &'static str,
}

/// Trees hidden by default: the plan binds back only what it needs below them (writable roots,
/// anchors, read-only binds, sockets the policy keeps, the resolver file). Sockets and folders
/// elsewhere ([`HIDDEN_SOCKETS`], [`HIDDEN_FOLDERS`]) stay on their lists.
pub static HIDDEN_TREES: &[HiddenTree] = &[
    HiddenTree {
        path: "/tmp",
        writable: true,
        what: "shared temporary folder (tmux, screen, zellij, nvim, VS Code, X11, emacs sockets)",
    },
    HiddenTree {
        path: "/var/tmp",
        writable: true,
        what: "shared temporary folder",
    },
    HiddenTree {
        path: "/dev/shm",
        writable: true,
        what: "shared memory folder",
    },
    HiddenTree {
        path: "/run",
        writable: false,
        what: "system runtime folder (systemd, containerd, buildkit, snapd, Docker, D-Bus sockets)",
    },
    HiddenTree {
        path: "/var/run",
        writable: false,
        what: "system runtime folder",
    },
    HiddenTree {
        path: "{runtime}",
        writable: false,
        what: "the owner's runtime dir (user bus, systemd, gpg-agent, ssh-agent)",
    },
];

/// Files below a [`HIDDEN_TREES`] entry that programs read and that cannot run anything: bound
/// back read-only (each resolved through links first: `/etc/resolv.conf` usually names
/// `/run/systemd/resolve/stub-resolv.conf`).
pub static KEPT_SYSTEM_FILES: &[&str] = &["/etc/resolv.conf"];

/// A folder of [`HIDDEN_FOLDERS`]: `path` is a template (`{uid}`, `{runtime}`, `{home}`; a
/// last component `prefix*` stands for every folder of the parent whose name starts so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HiddenFolder {
    pub path: &'static str,
    pub what: &'static str,
}

/// Folders shared by every process of the host where a planted `.git` would be discovered
/// by host tools started below them; the plan puts a read-only placeholder there.
pub static SHARED_DISCOVERY_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// What the plan's shell lexer (`plan::words`) knows of the commands a program value runs:
/// wrappers that run the command after their options (`env X=1 sh x.sh`), shells whose `-c`
/// string is a command line of its own, `make` and the makefiles it reads in a `-C` folder
/// (GNU make's order). Python is recognised by its name's prefix (`python3.12 -m mod`).
pub static COMMAND_WRAPPERS: &[&str] = &[
    "env", "exec", "command", "nice", "nohup", "time", "builtin", "timeout", "setsid", "stdbuf",
    "ionice", "chrt",
];
/// Words the shell reads as syntax in front of a command (`{ cd x; sh y; }`, `if …; then sh
/// y; fi`, `! sh y`): the command is the word after them (eleventh red-team pass, R11-1).
pub static SHELL_RESERVED_WORDS: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time",
];
/// Substitutions that print the top of the work tree, as a `cd` operand: git runs hooks and
/// aliases at the top, so `cd "$(git rev-parse --show-toplevel)"` is no run-time folder.
pub static TOP_SPELLINGS: &[&str] = &[
    "\"$(git rev-parse --show-toplevel)\"",
    "$(git rev-parse --show-toplevel)",
    "\"`git rev-parse --show-toplevel`\"",
    "`git rev-parse --show-toplevel`",
];
/// How the reflog message of a ref update made from a remote begins (git's `fetch`, `pull`,
/// `clone`, and `push`'s update of the remote-tracking ref): `would-lose-work` counts such a
/// remote-tracking ref as kept (R9-10).
pub static REMOTE_REFLOG_MESSAGES: &[&str] = &["fetch", "pull", "clone: ", "update by push"];
pub static SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];
pub static MAKES: &[&str] = &["make", "gmake", "bmake"];
pub static MAKEFILES: &[&str] = &["GNUmakefile", "makefile", "Makefile"];
/// Runners of a package's installed program: `npx X` runs `node_modules/.bin/X` of the folder
/// it starts in (seventh red-team pass, R7-1).
pub static NODE_BIN_RUNNERS: &[&str] = &["npx", "pnpx", "bunx"];
/// Interpreters whose operand may be a folder they run (`python3 dir` runs `dir/__main__.py`)
/// or that search a folder (`find dir -exec`): a bare folder name after them is a folder the
/// program reads (R7-1). A folder named with a `/` is protected whoever names it.
pub static FOLDER_READERS: &[&str] = &[
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "ruby",
    "perl", "php", "find", "xargs",
];

/// Files git opens by name in a work tree with a blocking `open(2)` during ordinary commands:
/// `.gitignore` and `.gitattributes` of every folder (status, add, commit, checkout), and the
/// top's `.mailmap` (log, shortlog, blame) and `.gitmodules` (status, submodule commands),
/// plus `HEAD`, which discovery opens in every candidate git dir on its way up. A FIFO there
/// hangs the owner's git; a device is read as whatever it yields (sixth red-team pass, R6-4;
/// R5-14 for `HEAD`). Matched at any depth (a superset for the top-only two).
pub static OPENED_BY_NAME: &[&str] = &[
    "HEAD",
    ".gitignore",
    ".gitattributes",
    ".mailmap",
    ".gitmodules",
];

/// What git does with the path a config key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathUse {
    /// git (or the program it hands the path to: curl, ssh-keygen) opens the file and reads
    /// it with a blocking `open(2)`/`fopen(3)`, following links.
    Read,
    /// A folder git (or curl) reads files from.
    Folder,
    /// git creates or appends to it (`O_CREAT`, following links).
    Written,
}

/// How a relative value is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathResolve {
    /// `git_config_pathname()` → `interpolate_path()` (config.c, path.c): `~/` and `~user/`
    /// from the home folder, `%(prefix)/` from git's install prefix, a leading `:(optional)`
    /// dropped from git 2.52 on (a literal folder name before); anything else as written,
    /// opened from the process's folder — the top of the work tree, since `setup_git_directory`
    /// changes there before any of these is opened (tested on 2.39.5 and 2.47.3: a relative
    /// `core.excludesFile`/`diff.orderFile` named from a subfolder opens the top's file).
    Pathname,
    /// Only an absolute path is honoured (anything else is ignored or a warning).
    Absolute,
    /// `~` expanded by the script; a relative path from the folder the command was started in
    /// (no change to the top: a script is not set up by git). Taken from the top here, which
    /// is where an owner runs it in practice.
    Started,
}

/// How many values of the key git uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathValues {
    /// The last value wins.
    Last,
    /// Every value is opened in turn (each adds to a list or set).
    Every,
}

/// One path-valued config key git opens (or hands to a program that opens it).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PathKey {
    pub key: KeyPattern,
    pub uses: PathUse,
    pub resolve: PathResolve,
    pub values: PathValues,
    /// The git commands that open it.
    pub opened_by: &'static str,
    /// Does the sandbox plan keep it read-only (or a placeholder) when it lies in a writable
    /// root? `false` for the project's own files an agent may legitimately edit: then only
    /// `wt-check` (GW021) and safe-git look at what stands there.
    pub protect: bool,
    /// Why, in one line (the plan prints it as what the bind protects).
    pub why: &'static str,
}

/// Every path-valued config key git opens with a blocking open that follows links, from
/// git's sources (2.39.5, 2.47.3, master): the users of `git_config_pathname()` /
/// `repo_config_get_pathname()` and the keys read as strings then opened (grep of
/// `config_pathname`, `interpolate_path`, `expand_user_path` over `*.c`, `*.perl`). A FIFO
/// there hangs the owner's git, a link to one too, and a link to a device (`/dev/zero`,
/// `/dev/tty`) feeds it whatever the device yields (seventh red-team pass, R7-4): GW021 reports
/// one in the agent's reach, `wt-check check --restore` sets it aside, safe-git refuses.
///
/// Not here: `core.hooksPath` and `include.path` (the plan and GW013/GW014 treat them by what
/// they run or bring in), `safe.directory` and `maintenance.repo` (compared, never opened),
/// `fsmonitor.socketDir` (git makes its own socket there; a FIFO planted under the socket's
/// hashed name makes `bind` fail, not hang).
///
/// `protect`, argued per key: the project's own files (an ignore list, attributes, a commit
/// template, `.git-blame-ignore-revs`, `.mailmap`, an order file, a patch signature) are
/// edited by an agent in ordinary work and can do no more than the `.gitignore`,
/// `.gitattributes` and `.mailmap` it may already write — freezing them would break the work
/// and protect nothing. Files that decide trust (allowed signers, revocations, the signing
/// key, CA certificates and client keys, fsck skip lists, cookies), where git writes (trace2
/// targets) and the template folder `git init` copies hooks from are never the project's to
/// edit: kept read-only, a placeholder when missing.
pub static PATH_KEYS: &[PathKey] = &[
    // config.c `git_default_core_config` (environment.c from 2.51 on); dir.c
    // `setup_standard_excludes` → `add_patterns_from_file_to_list` → open(2).
    PathKey { key: k!("core"."excludesFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "status, add, clean, ls-files -o, check-ignore", protect: false, why: "an ignore list: hides untracked files, as a .gitignore the agent writes does already" },
    // config.c (environment.c from 2.51 on); attr.c `git_attr_global_file` → `read_attr_from_file` → fopen(3).
    PathKey { key: k!("core"."attributesFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "status, diff, add, checkout, commit", protect: false, why: "attributes: select only drivers the config defines, as a .gitattributes the agent writes does already" },
    // builtin/commit.c `git_commit_config` → `prepare_to_commit` → strbuf_read_file.
    PathKey { key: k!("commit"."template"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "commit (without -m/-F)", protect: false, why: "the project's commit template: text in the owner's editor" },
    // builtin/blame.c `git_blame_config`: every value is added to `ignore_revs_file_list`;
    // `build_ignorelist` → `oidset_parse_file_carefully` → fopen(3).
    PathKey { key: k!("blame"."ignoreRevsFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Every, opened_by: "blame, annotate", protect: false, why: "the project's .git-blame-ignore-revs: a tracked file, every change to it shows in the diff" },
    // config.c `git_default_config` → `git_mailmap_file` (mailmap.c reads it with
    // `repo_config_get_pathname` in later git), `read_mailmap_file`; log, shortlog,
    // blame read it (`log.mailmap` is on by default since 2.29).
    PathKey { key: k!("mailmap"."file"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "log, show, shortlog, blame, check-mailmap", protect: false, why: "a mailmap: names shown, as the .mailmap the agent writes does already" },
    // diff.c `git_diff_ui_config` → `diffcore_order` → `prepare_order` → open(2).
    PathKey { key: k!("diff"."orderFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "diff, log -p, show (with changes)", protect: false, why: "the order of files in a diff" },
    // builtin/log.c `git_format_config` → `read_signature_file`.
    PathKey { key: k!("format"."signatureFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "format-patch", protect: false, why: "the project's patch signature text" },
    // fsck.c `git_fsck_config` → `fsck_set_msg_types("skiplist=…")` → `oidset_parse_file`:
    // every value adds to the set.
    PathKey { key: k!("fsck"."skipList"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Every, opened_by: "fsck", protect: true, why: "an fsck skip list: objects named there pass the owner's checks unexamined" },
    // fetch-pack.c `fetch_pack_config_cb`: appended to the `--strict=` message types.
    PathKey { key: per!("fetch"."skipList"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Every, opened_by: "fetch, pull, clone (with fsck checks)", protect: true, why: "a fetch fsck skip list: a crafted object named there passes the owner's transfer checks" },
    // builtin/receive-pack.c `receive_pack_config`.
    PathKey { key: per!("receive"."skipList"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Every, opened_by: "receive-pack (a push into this repository)", protect: true, why: "a receive fsck skip list: a crafted object named there passes the checks on push" },
    // gpg-interface.c `git_gpg_config`; handed to `ssh-keygen -Y find-principals/verify -f`.
    PathKey { key: per!("gpg"."allowedSignersFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "log --show-signature, verify-commit, verify-tag, %G? formats", protect: true, why: "allowed signers: a key the agent adds makes its commits verify as good" },
    // gpg-interface.c; `ssh-keygen -Y verify -r`.
    PathKey { key: per!("gpg"."revocationFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "log --show-signature, verify-commit, verify-tag", protect: true, why: "revoked signing keys: emptied, a revoked key verifies again" },
    // gpg-interface.c `get_ssh_key_fingerprint`/`sign_buffer_ssh`: with gpg.format=ssh, a
    // value that is not a literal key (`key::`, `ssh-…`) is a file: `expand_user_path(…, 1)`
    // in 2.39, `interpolate_path(…, 1)` in 2.47 (the same expansion; relative from the top).
    PathKey { key: k!("user"."signingKey"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "commit -S, tag -s, push --signed (gpg.format=ssh)", protect: true, why: "the ssh signing key: replaced, the owner signs with the agent's key" },
    // http.c `http_options`: handed to curl (CURLOPT_CAINFO, SSLCERT, SSLKEY, PINNEDPUBLICKEY).
    PathKey { key: any!("http"."sslCAInfo"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone, ls-remote over https", protect: true, why: "the certificate authorities https trusts" },
    PathKey { key: any!("http"."sslCert"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone over https", protect: true, why: "the owner's client certificate" },
    PathKey { key: any!("http"."sslKey"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone over https", protect: true, why: "the owner's client key" },
    PathKey { key: any!("http"."pinnedPubkey"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone over https", protect: true, why: "the public key https pins (a file unless `sha256//…`)" },
    PathKey { key: any!("http"."sslCAPath"), uses: PathUse::Folder, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone over https", protect: true, why: "a folder of certificate authorities https trusts" },
    // http.c `http_options` (2.39 and 2.47): the proxy's TLS files, handed to curl
    // (CURLOPT_PROXY_CAINFO, PROXY_SSLCERT, PROXY_SSLKEY) with `git_config_pathname` — missed
    // by the first list (ninth red-team pass, R9-3).
    PathKey { key: any!("http"."proxySSLCAInfo"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone through an https proxy", protect: true, why: "the certificate authorities the https proxy is trusted by" },
    PathKey { key: any!("http"."proxySSLCert"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone through an https proxy", protect: true, why: "the owner's client certificate for the proxy" },
    PathKey { key: any!("http"."proxySSLKey"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone through an https proxy", protect: true, why: "the owner's client key for the proxy" },
    // http.c: read, and written back with `http.saveCookies`.
    PathKey { key: any!("http"."cookieFile"), uses: PathUse::Read, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "fetch, pull, push, clone over https (written with http.saveCookies)", protect: true, why: "the owner's cookies: sent to the server, written back" },
    // setup.c `get_template_dir` (`init.templateDir`, git_config_pathname): copied into each
    // new git dir, hooks/ included (also a KEYS row: what it arms).
    PathKey { key: k!("init"."templateDir"), uses: PathUse::Folder, resolve: PathResolve::Pathname, values: PathValues::Last, opened_by: "init, clone, submodule add/update", protect: true, why: "the template folder: its hooks/ are copied into every repository git init creates" },
    // trace2/tr2_dst.c `tr2_dst_get_trace_fd`: an absolute path is opened with
    // O_WRONLY|O_APPEND|O_CREAT (a folder: a new file per process in it); read from system and
    // global config only (also a KEYS row).
    PathKey { key: k!("trace2"."normalTarget"), uses: PathUse::Written, resolve: PathResolve::Absolute, values: PathValues::Last, opened_by: "every git command", protect: true, why: "a trace2 target git appends to: a link there makes the owner's git write wherever it points" },
    PathKey { key: k!("trace2"."perfTarget"), uses: PathUse::Written, resolve: PathResolve::Absolute, values: PathValues::Last, opened_by: "every git command", protect: true, why: "a trace2 target git appends to: a link there makes the owner's git write wherever it points" },
    PathKey { key: k!("trace2"."eventTarget"), uses: PathUse::Written, resolve: PathResolve::Absolute, values: PathValues::Last, opened_by: "every git command", protect: true, why: "a trace2 target git appends to: a link there makes the owner's git write wherever it points" },
    // git-send-email.perl: `sendemail.aliasesFile` (with `sendemail.aliasFileType`), opened by
    // the script with `open`.
    PathKey { key: any!("sendemail"."aliasesFile"), uses: PathUse::Read, resolve: PathResolve::Started, values: PathValues::Every, opened_by: "send-email", protect: true, why: "mail aliases: decide where the owner's patches are sent" },
];

/// The [`PATH_KEYS`] row a config key matches.
pub fn path_key(key: &str) -> Option<&'static PathKey> {
    let k = ConfigKey::parse(key)?;
    PATH_KEYS.iter().find(|r| r.key.matches(&k))
}

/// Folders `wt-check audit` does not walk by default (`--walk-all` walks them): package and
/// build output that can hold hundreds of thousands of entries and, as installed, no
/// repository. A folder is also one when it carries a Cache Directory Tagging `CACHEDIR.TAG`
/// (Cargo's `target/`, and other caches) or a Python virtualenv's `pyvenv.cfg`. Such a folder
/// is still walked when a repository sits at its top level (`node_modules/<pkg>/.git`), and
/// every one skipped is listed in the report. The turn-end check (`wt-check check`) never
/// skips them: an agent can name a folder `node_modules`.
pub static DEPENDENCY_FOLDERS: &[&str] = &[
    "node_modules",
    "bower_components",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".terraform",
];
/// Files whose presence marks a folder as a cache or an environment (see
/// [`DEPENDENCY_FOLDERS`]), with the first bytes they must start with (`None`: any).
pub static DEPENDENCY_MARKERS: &[(&str, Option<&[u8]>)] = &[
    // https://bford.info/cachedir/
    (
        "CACHEDIR.TAG",
        Some(b"Signature: 8a477f597d28d172789f06886806bc55"),
    ),
    ("pyvenv.cfg", None),
];

/// A hook manager: a tool whose installed git hook runs commands that a file in the work
/// tree defines. When a hook in the hooks path git uses names the manager (one of `markers`
/// in its text), its existing `configs` and `folders` (relative to the work-tree top) are
/// what the owner's next commit runs (fifth red-team pass, R5-7). `shared` files are read by
/// the manager but also edited in ordinary work (`package.json`): never made read-only, only
/// listed in the known limits (docs/sandbox-plan.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookManager {
    pub name: &'static str,
    pub markers: &'static [&'static str],
    pub configs: &'static [&'static str],
    pub folders: &'static [&'static str],
    pub shared: &'static [&'static str],
    /// Keys of a config line whose value is a command (`entry:` of a pre-commit `repo:
    /// local` hook, lefthook's `run:`): a file its words name runs too.
    pub command_keys: &'static [&'static str],
}

/// The hook managers gitward knows (pre-commit: the generated hook says `File generated by
/// pre-commit: https://pre-commit.com` and runs `hook-impl --config=…`; husky v4–v9; lefthook;
/// lint-staged, started by husky's scripts, reads its own rc files).
pub static HOOK_MANAGERS: &[HookManager] = &[
    HookManager {
        name: "pre-commit",
        markers: &["pre-commit.com", "hook-impl"],
        configs: &[".pre-commit-config.yaml", ".pre-commit-config.yml"],
        folders: &[],
        shared: &[],
        command_keys: &["entry:", "- entry:"],
    },
    HookManager {
        name: "husky",
        markers: &["husky"],
        configs: &[
            ".huskyrc",
            ".huskyrc.json",
            ".huskyrc.js",
            ".lintstagedrc",
            ".lintstagedrc.json",
            ".lintstagedrc.yaml",
            ".lintstagedrc.yml",
            ".lintstagedrc.js",
            ".lintstagedrc.cjs",
            ".lintstagedrc.mjs",
            "lint-staged.config.js",
            "lint-staged.config.cjs",
            "lint-staged.config.mjs",
        ],
        folders: &[".husky"],
        shared: &["package.json"],
        command_keys: &[],
    },
    HookManager {
        name: "lefthook",
        markers: &["lefthook"],
        configs: &[
            "lefthook.yml",
            "lefthook.yaml",
            ".lefthook.yml",
            ".lefthook.yaml",
            "lefthook-local.yml",
            "lefthook-local.yaml",
            ".lefthook-local.yml",
            ".lefthook-local.yaml",
        ],
        folders: &[".lefthook", ".lefthook-local"],
        shared: &[],
        command_keys: &["run:", "- run:"],
    },
];

/// Variables a settings file's command uses for the project folder: the settings guard reads
/// them as the watched root when it looks for the work-tree files a guarded command runs
/// (sixth red-team pass, R6-6). Claude Code hooks: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`
/// (code.claude.com/docs/en/hooks); Gemini CLI hooks: `$GEMINI_PROJECT_DIR` (and the Claude
/// alias); VS Code and Cursor: `${workspaceFolder}` (`${workspaceRoot}` is its old name);
/// Zed tasks: `$ZED_WORKTREE_ROOT`.
pub static PROJECT_DIR_VARIABLES: &[&str] = &[
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
    "workspaceFolder",
    "workspaceRoot",
    "ZED_WORKTREE_ROOT",
    "PWD",
];

/// A socket family the sandbox may open (`socket(2)`): everything else fails with `EPERM`
/// in the sandbox's seccomp filter (`plan::seccomp`). An allow-list, because what a network
/// namespace does not contain must not be reachable, and a family the kernel adds later is
/// such a family until shown otherwise. `AF_UNIX` is not here: the policy's `unix_sockets`
/// rule decides it.
#[derive(Debug, Clone, Copy)]
pub struct SocketFamily {
    /// `AF_*` number (linux/socket.h).
    pub family: u32,
    pub name: &'static str,
    /// Why the sandbox keeps it.
    pub why: &'static str,
}

/// The families the sandbox keeps. Left out on purpose: `AF_VSOCK` (40: the hypervisor and
/// the host's vsock services, not in any network namespace; eighth red-team pass),
/// `AF_PACKET` (17), `AF_BLUETOOTH` (31: the host's radios), `AF_CAN` (29), `AF_ALG` (38:
/// kernel crypto, attack surface), `AF_XDP`, `AF_TIPC`, `AF_RDS`, `AF_KCM`, and the rest.
pub static SANDBOX_SOCKET_FAMILIES: &[SocketFamily] = &[
    SocketFamily {
        family: 2,
        name: "AF_INET",
        why: "IPv4; the network namespace decides what it reaches",
    },
    SocketFamily {
        family: 10,
        name: "AF_INET6",
        why: "IPv6; the network namespace decides what it reaches",
    },
    SocketFamily {
        family: 16,
        name: "AF_NETLINK",
        why: "interface and route queries of the sandbox's own namespace (getaddrinfo, ip)",
    },
];

/// What an interpreter reads besides the script it is given: its module search path, as far
/// as it lies in the project (ninth red-team pass, R9-1, R9-2, R9-7, R9-8, R9-11, R9-12).
/// Folder granularity protects the folder of a named script; these rows name the other
/// folders the interpreter searches, relative to the folder it starts in (the top, or a `cd`
/// target), to the script's folder, or around a program word.
#[derive(Debug, Clone, Copy)]
pub struct Interpreter {
    /// Program words (base names) that are this interpreter.
    pub names: &'static [&'static str],
    /// Base-name prefixes that are too (`python3.12`, `pypy3.10`).
    pub prefixes: &'static [&'static str],
    /// When the folder it starts in heads its module path.
    pub start_folder: StartFolder,
    /// Options that take the start folder off the module path (`python3 -I`, `-P`).
    pub safe_flags: &'static [&'static str],
    /// Options whose value is the next word (or the rest of the cluster): `python3 -W x`.
    pub value_options: &'static [&'static str],
    /// Folders searched in the script's folder and in every folder above it up to the top,
    /// and in the start folder (`node_modules`): each existing one is protected whole, a
    /// missing one at the top is reported (the agent could create it).
    pub upward: &'static [&'static str],
    /// Files at the top of the start folder the interpreter (or its package manager) reads
    /// as code or as settings that load code (`.npmrc` `node-options`, `Gemfile`).
    pub top_reads: &'static [&'static str],
    /// The names a module planted in a searched folder takes (`*.py`, `<pkg>/__init__.py`):
    /// where the searched folder is the top, which no bind can make read-only, the settings
    /// guard holds these names there.
    pub module_globs: &'static [&'static str],
}

/// When an interpreter's start folder (the cwd) heads its module path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFolder {
    /// Never (`node`, `ruby`, `perl` ≥ 5.26: the cwd is not searched for modules).
    Never,
    /// With one of these options, or with no script operand (`python3 -m x`, `-c`, `-`,
    /// stdin): `sys.path[0]` is the cwd. A script operand puts the script's folder there
    /// instead, which folder granularity protects (or, at the top, reports).
    WithoutScript(&'static [&'static str]),
    /// Always (PHP: `include_path` is `.`, the cwd, for every relative `include`).
    Always,
}

/// The module-search rows (see [`Interpreter`]).
pub static INTERPRETERS: &[Interpreter] = &[
    Interpreter {
        names: &["python", "python2", "python3", "pypy", "pypy3"],
        prefixes: &["python2.", "python3.", "pypy3."],
        start_folder: StartFolder::WithoutScript(&["-m", "-c", "-"]),
        safe_flags: &["-I", "-P"],
        value_options: &["-W", "-X", "--check-hash-based-pycs"],
        upward: &[],
        module_globs: &[
            "*.py",
            "*.pyc",
            "*.so",
            "*/__init__.py",
            "*/__init__.pyc",
            "*/__init__.*.so",
        ],
        top_reads: &[],
    },
    Interpreter {
        names: &["node", "nodejs"],
        prefixes: &[],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &["node_modules"],
        module_globs: &[],
        top_reads: &[],
    },
    Interpreter {
        names: &["npx", "pnpx", "npm", "pnpm", "yarn", "yarnpkg", "corepack"],
        prefixes: &[],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &["node_modules"],
        // `node-options = --require ./x.js` in a project `.npmrc` runs code in every npm/npx.
        module_globs: &[],
        top_reads: &[".npmrc"],
    },
    Interpreter {
        names: &["bun", "bunx"],
        prefixes: &[],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &["node_modules"],
        // `preload = [...]` runs scripts before every `bun` command.
        module_globs: &[],
        top_reads: &["bunfig.toml"],
    },
    Interpreter {
        // rustup's proxies read the toolchain file from the folder they start in upward
        // (`[toolchain] path = "…"` runs any folder's `cargo`), and cargo reads
        // `.cargo/config.toml` the same way (`rustc-wrapper`, `[target] runner`, aliases):
        // eleventh red-team pass, R11-8.
        names: &[
            "cargo",
            "rustc",
            "rustup",
            "rustfmt",
            "cargo-clippy",
            "clippy-driver",
            "rustdoc",
        ],
        prefixes: &[],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &[".cargo"],
        module_globs: &[],
        top_reads: &["rust-toolchain.toml", "rust-toolchain"],
    },
    Interpreter {
        names: &["deno"],
        prefixes: &[],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &["node_modules"],
        // An import map in the config found from the cwd redirects any import.
        module_globs: &[],
        top_reads: &["deno.json", "deno.jsonc"],
    },
    Interpreter {
        names: &["bundle", "bundler", "rake"],
        prefixes: &[],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &[],
        // The Gemfile is Ruby, evaluated by every `bundle exec`; `.bundle/config` names
        // the gems' path.
        module_globs: &[],
        top_reads: &["Gemfile", ".bundle/config"],
    },
    Interpreter {
        names: &["ruby", "perl"],
        prefixes: &["perl5."],
        start_folder: StartFolder::Never,
        safe_flags: &[],
        value_options: &[],
        upward: &[],
        module_globs: &[],
        top_reads: &[],
    },
    Interpreter {
        names: &["php", "composer"],
        prefixes: &["php7.", "php8."],
        start_folder: StartFolder::Always,
        safe_flags: &[],
        value_options: &[],
        upward: &[],
        module_globs: &["*.php", "*.inc"],
        top_reads: &[],
    },
];

/// Folders that hold installed packages: a program word that passes through one
/// (`node_modules/.bin/tool -> ../tool/bin/cli.js`, `vendor/bin/phpunit`) runs a package that
/// requires its siblings (`../lib/`) and its dependencies (other packages of the same folder),
/// so the whole folder is the program's (R9-8).
pub static PACKAGE_TREES: &[&str] = &["node_modules", "vendor"];

/// A Python virtual environment holds this file at its root: a program inside it (a console
/// script `.venv/bin/tool`, whose `#!` is the venv's python) starts an interpreter that
/// executes every `site-packages/*.pth` and imports from `site-packages/`, so the whole venv
/// is the program's (R9-11).
pub static VENV_MARKER: &str = "pyvenv.cfg";

/// Why a search root that cannot be protected is reported (`unguarded[]`).
pub static WHY_START_TOP: &str = "the interpreter starts at the top of the work tree and searches it first for modules (`python -m`/`-c`: the cwd is sys.path[0], ahead of the standard library and site-packages; PHP's include_path `.`): the top cannot be read-only, so a module planted there (`json.py`, `pytest.py`, `<package>/__init__.py`) shadows the one meant; run it with `python -P`/`-I`, or from a script in a folder";
pub static WHY_UPWARD_MISSING: &str = "searched in the script's folder and every folder above it up to the top (Node resolves a bare require()/import through node_modules/, cargo reads .cargo/config.toml); this one is missing and its folder is the writable top: what the agent creates there is loaded (`check` reports it)";
pub static WHY_TOP_READ: &str = "read at start by the interpreter or its package manager as code or as settings that load code (`.npmrc` node-options or script-shell, `bunfig.toml` preload, `deno.json` import map, the `Gemfile`, rustup's `rust-toolchain.toml`); at the top of the work tree it is missing, so the agent can create it (`check` reports it)";

/// Attribute words under which git runs a program or converts content on `add` that the
/// index check cannot redo (`filter=`, `ident`, `working-tree-encoding`): a file there that
/// does not hash to its entry is a warning, not an error (`integrity::indexstat`).
pub const ATTRIBUTES_THAT_FILTER: &[&[u8]] = &[b"filter", b"ident", b"working-tree-encoding"];

/// Attribute words under which git may turn CRLF into LF on `add` (`text`, `eol`, the old
/// `crlf`), and the config keys that do it everywhere (`core.autocrlf`, `core.eol`, matched
/// by their last part, lower case): only there does the index check take a file's CRLF → LF
/// form for git's (`integrity::indexstat`, R19-2).
pub const ATTRIBUTES_THAT_CONVERT_EOL: &[&[u8]] = &[b"text", b"eol", b"crlf"];
pub const CONFIG_KEYS_THAT_CONVERT_EOL: &[&[u8]] = &[b"autocrlf", b"eol"];

/// Largest `packed-refs` the commit scan and the pin read (git reads the file whole; 2 GiB
/// is about 30 million refs).
pub const PACKED_REFS_LIMIT: u64 = 2 << 30;

/// The root refs whose name does not end in `_HEAD` (refs.c, `is_root_ref`).
pub const IRREGULAR_ROOT_REFS: &[&[u8]] = &[
    b"HEAD",
    b"AUTO_MERGE",
    b"BISECT_EXPECTED_REV",
    b"NOTES_MERGE_PARTIAL",
    b"NOTES_MERGE_REF",
    b"MERGE_AUTOSTASH",
];

/// A root ref's name as git reads one from the top of a git dir: git's `is_root_ref` and
/// `is_pseudo_ref` (refs.c, 2.47) — root-ref syntax (upper-case letters, `_`, `-`) and a
/// name ending in `_HEAD` (`ORIG_HEAD`, `FETCH_HEAD`, `MERGE_HEAD`, `CHERRY_PICK_HEAD`,
/// `REBASE_HEAD`, …) or one of [`IRREGULAR_ROOT_REFS`]. Other upper-case files git keeps
/// there are not refs (`MERGE_RR` lists rerere conflict ids, `MERGE_MSG`, `BISECT_LOG`, …):
/// read as ids they made the scan of an honest rerere merge incomplete (R17-2). The commit
/// scan takes the ids these files name as tips (`scan::reflogs`) and the scan record keys
/// them (`integrity::scanlink_key`).
pub fn is_root_ref_name(n: &[u8]) -> bool {
    !n.is_empty()
        && n.iter()
            .all(|c| c.is_ascii_uppercase() || *c == b'_' || *c == b'-')
        && (n.ends_with(b"_HEAD") || IRREGULAR_ROOT_REFS.contains(&n))
}

/// The root refs whose every line git reads (refs.c, `is_pseudo_ref`; `git commit` takes
/// every `MERGE_HEAD` line as a parent, `git merge FETCH_HEAD` every line to merge).
pub const PSEUDO_REFS: &[&[u8]] = &[b"FETCH_HEAD", b"MERGE_HEAD"];
