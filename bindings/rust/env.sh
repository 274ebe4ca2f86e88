# Sourced by this directory's scripts (test.sh, bench.sh, build_plugin.sh):
# finds cargo and points cargo and pkg-config at the core built in
# $FERRY_BUILD_DIR (default: the repository's build/).
# rustup installs cargo in ~/.cargo/bin, which a CI shell may not have on PATH.
[ -d "${HOME:-/root}/.cargo/bin" ] && PATH="${HOME:-/root}/.cargo/bin:$PATH"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$BUILD/rust-target}"
# The build tree's pkg-config file comes first, so what is built links (and
# gets an rpath to) this build's libferry.so.
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
