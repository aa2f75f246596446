//! safe-git: git over an untrusted repository for host-side scripts, on an allow-list of inspection and clean-up subcommands.

pub mod admin;
pub mod args;
pub mod cpu;
pub mod gitlink_cache;
pub mod gitlinks;
pub mod locate;
pub mod loss;
pub mod options;
pub mod plan;
pub mod request;
pub mod unlisted;

pub use plan::{gitmodules_ignore_keys, plan, Plan};
pub use request::{Refusal, Request};
