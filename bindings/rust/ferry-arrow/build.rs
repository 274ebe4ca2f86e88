//! Gives this crate's tests, doc tests and benchmarks an rpath to the
//! directory where ferry-arrow-sys found libferry.so (`DEP_FERRY_LIBDIR`),
//! so they load that shared core without LD_LIBRARY_PATH, and hands the
//! directory on to the build scripts of crates that depend on this one as
//! `DEP_FERRY_ARROW_LIBDIR` (the `links = "ferry-arrow"` key), for a
//! one-line rpath in theirs (README: "Running").
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FERRY_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_FERRY_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        println!("cargo:libdir={dir}");
    }
}
