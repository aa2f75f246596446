//! git-shim's and safe-git's build script (safe-git's manifest names this file: `build =
//! "../git-shim/build.rs"`): both link statically where glibc's static libraries are
//! installed, safe-git as a static PIE, git-shim at a fixed address (`build/static_pie.rs`
//! says why and how); git-shim's hot functions are placed together (`hot-symbols.txt`,
//! written by `hot-symbols.sh`).

#[path = "../../build/static_pie.rs"]
mod static_pie;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../../build/static_pie.rs");
    // git-shim at a fixed address (it crosses no privilege boundary: build/static_pie.rs says
    // why), safe-git, which shares this script, as a static PIE.
    static_pie::link(
        if std::env::var("CARGO_PKG_NAME").as_deref() == Ok("git-shim") {
            static_pie::Image::StaticFixed
        } else {
            static_pie::Image::StaticPie
        },
    );
    // git-shim's hot functions together (safe-git shares this script, not the list).
    if std::env::var("CARGO_PKG_NAME").as_deref() == Ok("git-shim") {
        let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
        static_pie::order_symbols(&std::path::Path::new(&dir).join("hot-symbols.txt"));
    }
}
