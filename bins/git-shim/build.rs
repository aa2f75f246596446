//! git-shim's and safe-git's build script (safe-git's manifest names this file: `build =
//! "../git-shim/build.rs"`): both link as static PIEs where glibc's static libraries are
//! installed (`build/static_pie.rs` says why and how).

#[path = "../../build/static_pie.rs"]
mod static_pie;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../../build/static_pie.rs");
    static_pie::link();
}
