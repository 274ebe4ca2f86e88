//! Gives this crate's tests, benchmarks and shared library an rpath to the
//! directory where ferry-arrow-sys found libferry.so (`DEP_FERRY_LIBDIR`), so they
//! load the same shared core without LD_LIBRARY_PATH.
//!
//! It also links the test harness's generic async layer, the static archive
//! `libferry_it_async.a` (core/harness/async/ferry_it_async.h; CMake target
//! `ferry_it_async`, next to libferry.so in the build tree), which turns this
//! plugin's synchronous stream entry points into its three async ones
//! (src/async_entry.rs, compiled under `cfg(ferry_it_async)`). Without the
//! archive the plugin is built without them, with a warning, and the
//! cross-language host reports the async cases of this runtime as skipped.
use std::path::PathBuf;

const ARCHIVE: &str = "libferry_it_async.a";

fn main() {
    println!("cargo:rustc-check-cfg=cfg(ferry_it_async)");
    println!("cargo:rerun-if-env-changed=DEP_FERRY_LIBDIR");
    println!("cargo:rerun-if-env-changed=FERRY_BUILD_DIR");
    let libdir = std::env::var("DEP_FERRY_LIBDIR").ok().map(PathBuf::from);
    if let Some(dir) = &libdir {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    let mut candidates: Vec<PathBuf> = libdir.into_iter().collect();
    if let Some(build) = std::env::var_os("FERRY_BUILD_DIR") {
        candidates.push(PathBuf::from(build).join("lib"));
    }
    for dir in &candidates {
        println!("cargo:rerun-if-changed={}", dir.join(ARCHIVE).display());
    }
    match candidates.iter().find(|dir| dir.join(ARCHIVE).exists()) {
        Some(dir) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=ferry_it_async");
            println!("cargo:rustc-link-lib=dylib=pthread");
            println!("cargo:rustc-cfg=ferry_it_async");
        }
        None => println!(
            "cargo:warning=ferry-it: {ARCHIVE} not found (build it: cmake --build build --target ferry_it_async); \
             the plugin is built without its async entry points"
        ),
    }
}
