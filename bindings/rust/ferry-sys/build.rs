//! Links the shared `libferry.so` (never a static copy: a second copy of the
//! core would have its own device registry and counters).
//!
//! Search order: `pkg-config ferry` (honouring PKG_CONFIG_PATH; the build tree
//! ships build/lib/pkgconfig/ferry.pc), then `$FERRY_BUILD_DIR/lib`, then
//! `../../../build/lib` relative to this crate. The directory found is passed
//! to dependents as `DEP_FERRY_LIBDIR` so their tests and cdylibs get an rpath
//! too (a `rustc-link-arg` only reaches this package's own targets).
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn from_pkg_config() -> Option<PathBuf> {
    let output = Command::new("pkg-config")
        .args(["--variable=libdir", "ferry"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let dir = String::from_utf8(output.stdout).ok()?;
    let dir = PathBuf::from(dir.trim());
    dir.join("libferry.so").exists().then_some(dir)
}

fn from_build_dir() -> Option<PathBuf> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").ok()?);
    let mut candidates = Vec::new();
    if let Ok(build) = env::var("FERRY_BUILD_DIR") {
        candidates.push(PathBuf::from(build).join("lib"));
    }
    candidates.push(manifest.join("../../../build/lib"));
    candidates
        .into_iter()
        .find(|dir| dir.join("libferry.so").exists())
        .map(|dir| dir.canonicalize().unwrap_or(dir))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=FERRY_BUILD_DIR");

    let libdir = from_pkg_config().or_else(from_build_dir);
    match libdir {
        Some(dir) => {
            let lib = dir.join("libferry.so");
            println!("cargo:rerun-if-changed={}", lib.display());
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
            println!("cargo:libdir={}", dir.display());
        }
        None => println!(
            "cargo:warning=libferry.so not found: build the core (scripts/build.sh), \
             or set PKG_CONFIG_PATH to build/lib/pkgconfig or FERRY_BUILD_DIR"
        ),
    }
    println!("cargo:rustc-link-lib=dylib=ferry");
}
