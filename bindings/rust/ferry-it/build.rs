//! Gives this crate's tests, benchmarks and shared library an rpath to the
//! directory where ferry-arrow-sys found libferry.so (`DEP_FERRY_LIBDIR`), so they
//! load the same shared core without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FERRY_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_FERRY_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
