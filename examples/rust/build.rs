//! Lets `target/*/ferry-example` run on its own, without LD_LIBRARY_PATH:
//! ferry-arrow hands its dependents the directory where it found libferry.so
//! (DEP_FERRY_ARROW_LIBDIR), and this embeds it as the binary's run path.
//! Not needed when libferry is installed where the loader looks (/usr/lib,
//! /usr/local/lib after ldconfig), or to run through `cargo run`.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FERRY_ARROW_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_FERRY_ARROW_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
