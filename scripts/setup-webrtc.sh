#!/usr/bin/env bash
# Builds mediasoup's C++ worker offline from Debian 12's own libraries (issue 14).
#
# npm install never builds it: mediasoup's postinstall is denied in package.json
# `allowScripts` because it downloads a prebuilt worker, then pip's meson and
# meson wraps (sources) from the internet. This script instead:
#   1. installs the Debian build packages that are missing (as root; otherwise
#      it prints the apt-get line to run and exits 1),
#   2. copies node_modules/mediasoup/worker to .cache/mediasoup-build/<version>-<patches>/src
#      and applies scripts/mediasoup-patches/*.patch (see the README there),
#   3. builds with meson + ninja (-j2, or $JOBS) and installs the binary where
#      mediasoup looks: node_modules/mediasoup/worker/out/Release/mediasoup-worker.
# A second run is a no-op when that binary exists and was built from the same
# mediasoup version and patch set (a stamp file beside it records both).
set -euo pipefail
cd "$(dirname "$0")/.."

PKG=node_modules/mediasoup
PATCHES=scripts/mediasoup-patches
DEBS="meson ninja-build libssl-dev libuv1-dev libabsl-dev libflatbuffers-dev flatbuffers-compiler libsrtp2-dev pkg-config g++ python3"

if [ ! -f "$PKG/package.json" ]; then
  echo "setup:webrtc: $PKG is missing; run npm install first" >&2
  exit 1
fi
VERSION=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$PKG/package.json" | head -n 1)
PATCH_SUM=$(cat "$PATCHES"/*.patch | sha256sum | cut -c 1-12)
OUT="$PKG/worker/out/Release/mediasoup-worker"
STAMP="$OUT.stamp"
WANT="mediasoup $VERSION patches $PATCH_SUM"

if [ -x "$OUT" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ]; then
  echo "setup:webrtc: mediasoup-worker $VERSION already built ($OUT)"
  exit 0
fi

missing=""
for deb in $DEBS; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "ok installed" || missing="$missing $deb"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup:webrtc: missing Debian packages. Run as root, then run npm run setup:webrtc again:" >&2
    echo "  apt-get install -y$missing" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq $missing >/dev/null
fi

BUILD=".cache/mediasoup-build/$VERSION-$PATCH_SUM"
if [ ! -f "$BUILD/src/.patched" ]; then
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  cp -a "$PKG/worker" "$BUILD/src"
  rm -rf "$BUILD/src/out"
  for patch in "$PATCHES"/*.patch; do
    patch -d "$BUILD/src" -p1 --forward --quiet <"$patch"
  done
  touch "$BUILD/src/.patched"
fi

start=$(date +%s)
if [ ! -f "$BUILD/build/build.ninja" ]; then
  # The same options as mediasoup's own tasks.py; nodownload: a wrap must never fetch.
  meson setup "$BUILD/build" "$BUILD/src" --buildtype release -Db_ndebug=true --wrap-mode=nodownload >"$BUILD/meson-setup.log" 2>&1 ||
    { cat "$BUILD/meson-setup.log" >&2; exit 1; }
fi
ninja -C "$BUILD/build" -j "${JOBS:-2}" mediasoup-worker
install -D -m 0755 "$BUILD/build/mediasoup-worker" "$OUT"
echo "$WANT" >"$STAMP"
# Build dirs of other versions or patch sets are stale once this one is installed.
find .cache/mediasoup-build -mindepth 1 -maxdepth 1 ! -name "$VERSION-$PATCH_SUM" -exec rm -rf {} +
seconds=$(( $(date +%s) - start ))
echo "setup:webrtc: built mediasoup-worker $VERSION in ${seconds}s ($(du -h "$OUT" | cut -f 1)): $OUT"
