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
//! | [`exit`] | exit codes shared by the binaries |
//! | [`cli`] | man pages, completions and formats for every binary |

pub mod catalogue;
pub mod cli;
pub mod env;
pub mod events;
pub mod exit;
pub mod policy;
