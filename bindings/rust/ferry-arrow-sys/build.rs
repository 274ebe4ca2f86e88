//! Links the shared `libferry.so` (never a static copy: a second copy of the
//! core would have its own device registry and counters).
//!
//! Where it looks, in order (README, "How libferry is found"):
//! 1. `FERRY_LIB_DIR`: a directory holding `libferry.so`;
//! 2. `pkg-config ferry` (honouring `PKG_CONFIG_PATH`; an installed core
//!    and the build tree, `build/lib/pkgconfig`, both ship `ferry.pc`);
//! 3. the ferry checkout this crate sits in, once built
//!    (`$FERRY_BUILD_DIR/lib`, else `<checkout>/build/lib`), for path
//!    dependencies on a checkout.
//!
//! Nothing found fails the build with an error naming the fix (cargo hides
//! the warnings of git dependencies, so a warning would go unseen), unless
//! the `bundled` feature is on: then the core is compiled from the C sources
//! carried in the crate (`csrc/`, copied in by scripts/release.sh) or, in a
//! checkout, from `../../../core`, and linked statically, as libz-sys does.
//! A static copy has its own device registry and counters, so `bundled` is
//! for processes where Rust is ferry's only user (README).
//!
//! The directory found is
//! - passed to the build scripts of direct dependents as `DEP_FERRY_LIBDIR`;
//! - linked through symbolic links in `$OUT_DIR/lib`: cargo puts link
//!   search paths inside its target directory (and only those) on the
//!   loader path of `cargo run` and `cargo test`, so those run without
//!   `LD_LIBRARY_PATH` wherever the library lives;
//! - given to this crate's own tests as an rpath.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIB: &str = "libferry.so";

fn has_lib(dir: &Path) -> bool {
    dir.join(LIB).exists()
}

fn from_env() -> Result<Option<PathBuf>, String> {
    let Some(dir) = env::var_os("FERRY_LIB_DIR") else {
        return Ok(None);
    };
    let dir = PathBuf::from(dir);
    if has_lib(&dir) {
        Ok(Some(dir))
    } else {
        // A variable set on purpose and wrong is an error, not a fallback.
        Err(format!(
            "FERRY_LIB_DIR is set to {} but that directory has no {LIB}",
            dir.display()
        ))
    }
}

fn from_pkg_config() -> Option<PathBuf> {
    let output = Command::new("pkg-config")
        .args(["--variable=libdir", "ferry"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    has_lib(&dir).then_some(dir)
}

fn from_checkout() -> Option<PathBuf> {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
    let mut candidates = Vec::new();
    if let Some(build) = env::var_os("FERRY_BUILD_DIR") {
        candidates.push(PathBuf::from(build).join("lib"));
    }
    // bindings/rust/ferry-arrow-sys -> the checkout's build/lib.
    candidates.push(manifest.join("../../../build/lib"));
    candidates.into_iter().find(|dir| has_lib(dir))
}

/// Links every `libferry.so*` of `dir` into `links` (recreated), so that
/// `links` can stand in for `dir` on both the link and the loader path.
fn link_into(dir: &Path, links: &Path) -> std::io::Result<()> {
    if links.exists() {
        fs::remove_dir_all(links)?;
    }
    fs::create_dir_all(links)?;
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        if name.to_string_lossy().starts_with(LIB) {
            std::os::unix::fs::symlink(dir.join(&name), links.join(&name))?;
        }
    }
    Ok(())
}

fn not_found(reason: &str) -> ! {
    eprintln!(
        "error: ferry-arrow-sys cannot find libferry.so, the C core of ferry ({reason}).\n\
         Build (and optionally install) the core first: in a ferry checkout run\n\
         \x20   cmake -S . -B build && cmake --build build          # or ./dev.sh build\n\
         then tell cargo where it is, one of:\n\
         \x20   export PKG_CONFIG_PATH=<checkout>/build/lib/pkgconfig   (or <prefix>/lib/pkgconfig after cmake --install)\n\
         \x20   export FERRY_LIB_DIR=<directory holding libferry.so>\n\
         An install to a prefix pkg-config already searches (/usr/local) needs neither.\n\
         Or enable the `bundled` feature to compile the core into this crate (Rust-only processes)."
    );
    std::process::exit(1);
}

/// The C core's sources for `bundled`: the crate's own copy (a packaged
/// crate), else the checkout this crate sits in.
#[cfg(feature = "bundled")]
fn core_sources() -> Option<PathBuf> {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
    [manifest.join("csrc"), manifest.join("../../../core")]
        .into_iter()
        .find(|dir| dir.join("include/ferry/ferry.h").is_file() && dir.join("src").is_dir())
}

/// Compiles the core into a static library in OUT_DIR and links it.
#[cfg(feature = "bundled")]
fn build_bundled() {
    let Some(core) = core_sources() else {
        not_found("`bundled` is on but the crate carries no C sources (csrc/)");
    };
    println!("cargo:rerun-if-changed={}", core.display());
    let mut sources: Vec<PathBuf> = fs::read_dir(core.join("src"))
        .expect("the core's src directory is readable")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
        .collect();
    sources.sort();
    cc::Build::new()
        .files(&sources)
        .include(core.join("include"))
        .include(core.join("src"))
        .define("_GNU_SOURCE", None)
        .flag_if_supported("-std=gnu11")
        .flag_if_supported("-fvisibility=hidden")
        .warnings(false)
        .compile("ferry_bundled");
    for lib in ["pthread", "dl", "m"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    println!("cargo:bundled=1");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["FERRY_LIB_DIR", "PKG_CONFIG_PATH", "FERRY_BUILD_DIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let dir = match from_env() {
        Ok(Some(dir)) => dir,
        Ok(None) => match from_pkg_config().or_else(from_checkout) {
            Some(dir) => dir,
            #[cfg(feature = "bundled")]
            None => return build_bundled(),
            #[cfg(not(feature = "bundled"))]
            None => not_found("FERRY_LIB_DIR is not set and `pkg-config ferry` finds no library"),
        },
        Err(reason) => not_found(&reason),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("cargo:rerun-if-changed={}", dir.join(LIB).display());

    let links = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("lib");
    let search = match link_into(&dir, &links) {
        Ok(()) => links,
        // Without links `cargo run` needs the loader path set by hand;
        // linking itself still works from the directory.
        Err(_) => dir.clone(),
    };
    println!("cargo:rustc-link-search=native={}", search.display());
    println!("cargo:rustc-link-lib=dylib=ferry");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:libdir={}", dir.display());
}
