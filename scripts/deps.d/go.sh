#!/usr/bin/env bash
# Makes sure a Go toolchain new enough for the Go binding is on the machine
# (bindings/go needs Go 1.24; its ferryarrow module, through arrow-go, 1.25).
# Quiet and idempotent: prints nothing when a suitable `go` is present.
# Otherwise Debian's golang-go is installed (Go 1.19 on Debian 12) and used
# only to fetch the current toolchain as a Go module (golang.org/toolchain)
# from the Go module proxy, linked as /usr/local/bin/go.
set -euo pipefail
NEED_MINOR=25
TOOLCHAIN="go1.26.8"

go_minor() {
  "$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'
}

for candidate in "$(command -v go || true)" /usr/local/go/bin/go; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    minor="$(go_minor "$candidate")"
    if [ -n "$minor" ] && [ "$minor" -ge "$NEED_MINOR" ]; then
      if ! command -v go >/dev/null; then ln -sf "$candidate" /usr/local/bin/go; fi
      exit 0
    fi
  fi
done

echo "deps: installing Go $TOOLCHAIN (from Debian's golang-go and the Go module proxy)"
export DEBIAN_FRONTEND=noninteractive
if ! command -v go >/dev/null; then
  apt-get install -y -qq golang-go >/tmp/ferry-apt.log 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq golang-go >/tmp/ferry-apt.log 2>&1; } ||
    { cat /tmp/ferry-apt.log; echo "deps: cannot install golang-go" >&2; exit 1; }
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
arch="$(dpkg --print-architecture)"
module="golang.org/toolchain@v0.0.1-$TOOLCHAIN.linux-$arch"
dir="$(cd "$work" && GOFLAGS=-mod=mod GO111MODULE=on GOPATH=/opt/ferry-go \
  go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -x "$dir/bin/go" ]; then
  echo "deps: could not fetch $module from the Go module proxy" >&2
  exit 1
fi
chmod -R u+w "$dir" 2>/dev/null || true
ln -sf "$dir/bin/go" /usr/local/bin/go
ln -sf "$dir/bin/gofmt" /usr/local/bin/gofmt
echo "deps: $(/usr/local/bin/go version)"
