//! Gives this crate's tests, doc tests and benchmarks an rpath to the
//! directory where ferry-arrow-sys found libferry.so (`DEP_FERRY_LIBDIR`),
//! so they load that shared core without LD_LIBRARY_PATH, and hands the
//! directory on to the build scripts of crates that depend on this one as
//! `DEP_FERRY_ARROW_LIBDIR` (the `links = "ferry-arrow"` key), for a
//! one-line rpath in theirs (README: "Running").
//!
//! Where that directory also holds `libferry_hostile.so` (a ferry build
//! tree: `tests/hostile`, the hostile producers every binding's hostile
//! suite loads), tests/hostile.rs links it (`cfg(ferry_hostile)`); a core
//! installed without its tests has none, and that test is then empty.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FERRY_LIBDIR");
    println!("cargo:rustc-check-cfg=cfg(ferry_hostile)");
    if let Ok(dir) = std::env::var("DEP_FERRY_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        println!("cargo:libdir={dir}");
        let hostile = std::path::Path::new(&dir).join("libferry_hostile.so");
        println!("cargo:rerun-if-changed={}", hostile.display());
        if hostile.exists() {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-cfg=ferry_hostile");
        }
    }
}
