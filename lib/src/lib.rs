//! gitward's core library.
//!
//! gitward keeps an AI coding agent in an OS sandbox from turning what it may write (its work
//! tree, parts of its git folder, its project's settings files) into code that runs outside
//! the sandbox. The binaries in `bins/` are thin; everything a second binary could need lives
//! here, one concern per module. Dependencies point down only: binaries → these modules, and
//! [`catalogue`] imports nothing of ours.
//!
//! | module | concern |
//! |---|---|
//! | [`catalogue`] | program-running config keys, environment variables, git-folder entries, as data |
//! | [`env`] | the defused git environment and `-c` set, per git version; finding the real git |
//! | [`events`] | JSON-lines events with stable names |
//! | [`policy`] | the session policy file |
//! | [`path`] | where a path leads: links and `..` resolved, for paths that may not exist yet |
//! | [`exit`] | exit codes shared by the binaries |
//! | [`cli`] | man pages, completions and formats for every binary |
//! | [`fsx`] | no-follow file access below a trusted root |
//! | [`layout`] | git dir / common dir / work tree discovery, worktree entries, submodule git dirs |
//! | [`config`] | every config value with its origin, includes followed as a superset |
//! | [`attributes`] | driver names selected by every attributes source |
//! | [`held`] | the held-writes store |
//! | [`settings`] | guarded settings files and what widens them |
//! | [`scan`] | end-of-turn commit scans |
//! | [`integrity`] | wt-check pin / check / restore |
//! | [`audit`] | wt-check audit, JSON and SARIF |
//! | [`shim`] | git-shim rules |
//! | [`url`] | URLs in output: userinfo redaction |
//! | [`shell`] | agent-shell |
//! | [`safegit`] | safe-git |

pub mod attributes;
pub mod audit;
pub mod catalogue;
pub mod cli;
pub mod config;
#[cfg(test)]
mod difftest;
pub mod env;
pub mod environ;
pub mod events;
pub mod exit;
pub mod fsx;
pub mod held;
pub mod index_paths;
pub mod integrity;
pub mod layout;
pub mod named_paths;
pub mod path;
pub mod plan;
pub mod policy;
pub mod safegit;
pub mod sandbox;
pub mod scan;
pub mod settings;
pub mod shell;
pub mod shim;
pub mod url;
