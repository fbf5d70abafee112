#!/usr/bin/env bash
# Build Google's protobuf conformance_test_runner of protobuf v27.2 (the suite with
# 2611 proto2/proto3 binary+JSON tests, and editions tests behind --maximum_edition)
# from the protobuf source tree that the Rust crate protobuf-src 2.1.1+27.1 bundles.
# Despite its "+27.1" tag the crate ships v27.2 (CMake reports 5.27.2); abseil and
# utf8_range come with it, jsoncpp from Debian's libjsoncpp-dev.
#
#   scripts/build-conformance-runner-27.sh [DEST]
#
# DEST defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/optimus/conformance27. After a
# build it holds:
#   bin/conformance_test_runner   the runner
#   protos/                       the suite's own .proto files, which the testee loads
#                                 (conformance.proto, test_messages_proto{2,3}.proto, and
#                                 the editions ones, for reference)
#   failure_lists/                upstream expected-failure lists, per language
#   VERSION                       the tree's protobuf version (5.27.2)
#   src/, build/                  the unpacked crate and the cmake build (kept for reuse)
# If DEST already has the runner, nothing is built. The last line on stdout is the
# runner's path; progress goes to stderr. The first build takes about 8 minutes on two
# cores (cmake + ninja: protoc's library, abseil and the runner).
#
# Environment:
#   FORCE=1                 rebuild even when a runner is cached
#   JOBS=N                  ninja parallelism (default: nproc)
#   PROTOBUF27_SRC=DIR      use this unpacked protobuf v27 tree instead of the crate's
#   NO_APT=1                never call apt-get (cmake, ninja, g++, libjsoncpp-dev must be there)
#
# The runner's flags: --enforce_recommended, --maximum_edition 2023, --failure_list F,
# --text_format_failure_list F, --output_dir D, --verbose; then the testee's path.
set -euo pipefail

dest=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/optimus/conformance27}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
readonly CRATE=protobuf-src-2.1.1+27.1
readonly CRATE_VERSION=2.1.1

say() { printf '[conformance-runner-27] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
runner=$dest/bin/conformance_test_runner

# One build at a time per DEST.
exec 9>"$dest/.lock"
flock 9

if [[ -x $runner && -z ${FORCE:-} ]]; then
  echo "$runner"
  exit 0
fi

root_cmd() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root or sudo to run: $*"
  fi
}

# ---------------------------------------------------------------- tools
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
# The runner includes "json/json.h" and links jsoncpp, which the crate does not bundle.
readonly JSONCPP_INC=/usr/include/jsoncpp
[[ -f $JSONCPP_INC/json/json.h ]] || missing+=(libjsoncpp-dev)
if ((${#missing[@]} > 0)); then
  [[ -z ${NO_APT:-} ]] || die "missing ${missing[*]} and NO_APT is set"
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  root_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
    || { root_cmd apt-get update -qq >&2 \
      && root_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; } \
    || die "apt-get install ${missing[*]} failed"
fi

# ---------------------------------------------------------------- sources
is_tree() {
  [[ -f $1/CMakeLists.txt && -f $1/cmake/conformance.cmake \
    && -f $1/third_party/abseil-cpp/CMakeLists.txt && -f $1/third_party/utf8_range/CMakeLists.txt ]]
}

src=
for cand in "${PROTOBUF27_SRC:-}" "$dest/src/$CRATE/protobuf"; do
  if [[ -n $cand ]] && is_tree "$cand"; then src=$cand; break; fi
done
if [[ -z $src ]]; then
  cargo_home=${CARGO_HOME:-$HOME/.cargo}
  find_crate() { compgen -G "$cargo_home/registry/cache/*/$CRATE.crate" | head -n 1; }
  crate_file=$(find_crate || true)
  if [[ -z $crate_file ]]; then
    command -v cargo >/dev/null 2>&1 || die "cargo not found and $CRATE.crate not in the registry cache"
    say "fetching $CRATE with cargo"
    # A throwaway package that depends on the crate: `cargo fetch` puts the .crate file in
    # the registry cache without building anything.
    tmp=$(mktemp -d)
    mkdir -p "$tmp/src" && : >"$tmp/src/lib.rs"
    printf '[package]\nname = "fetch-protobuf-src"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nprotobuf-src = "=%s"\n' \
      "$CRATE_VERSION" >"$tmp/Cargo.toml"
    (cd "$tmp" && cargo fetch -q) >&2 || { rm -rf "$tmp"; die "cargo fetch of protobuf-src $CRATE_VERSION failed"; }
    rm -rf "$tmp"
    crate_file=$(find_crate || true)
    [[ -n $crate_file ]] || die "could not obtain $CRATE.crate"
  fi
  say "unpacking $crate_file into $dest/src"
  rm -rf "$dest/src"
  mkdir -p "$dest/src"
  tar -xzf "$crate_file" -C "$dest/src"
  src=$dest/src/$CRATE/protobuf
  is_tree "$src" || die "the unpacked crate lacks the conformance, abseil or utf8_range sources"
fi
version=$(sed -n 's/^set(protobuf_VERSION_STRING "\(.*\)")/\1/p' "$src/CMakeLists.txt")
say "protobuf source: $src (version $version)"

# ---------------------------------------------------------------- build
build=$dest/build
if [[ -f $build/CMakeCache.txt ]] && ! grep -qxF "protobuf_SOURCE_DIR:STATIC=$src" "$build/CMakeCache.txt"; then
  say "the build dir was configured for another source tree; wiping it"
  rm -rf "$build"
fi
if [[ ! -f $build/build.ninja ]]; then
  say "configuring in $build"
  # protobuf_JSONCPP_PROVIDER=package links the plain name `jsoncpp` without its include
  # directory, so that is passed by hand.
  cmake -S "$src" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_STANDARD=17 \
    -DCMAKE_CXX_FLAGS="-isystem $JSONCPP_INC" \
    -Dprotobuf_BUILD_TESTS=OFF \
    -Dprotobuf_BUILD_CONFORMANCE=ON \
    -Dprotobuf_BUILD_EXAMPLES=OFF \
    -Dprotobuf_INSTALL=OFF \
    -Dprotobuf_ABSL_PROVIDER=module \
    -Dprotobuf_JSONCPP_PROVIDER=package \
    -DABSL_PROPAGATE_CXX_STD=ON \
    >"$dest/configure.log" 2>&1 \
    || { tail -n 30 "$dest/configure.log" >&2; die "cmake configure failed (see $dest/configure.log)"; }
fi

say "building conformance_test_runner with ninja -j$jobs (log: $dest/build.log)"
start=$SECONDS
ninja -C "$build" -j"$jobs" conformance_test_runner >"$dest/build.log" 2>&1 \
  || { grep -m5 -E 'error|FAILED' "$dest/build.log" >&2 || true; tail -n 20 "$dest/build.log" >&2
       die "ninja build failed (see $dest/build.log)"; }
say "built in $((SECONDS - start)) s"

mkdir -p "$dest/bin" "$dest/protos" "$dest/failure_lists"
cp "$src"/conformance/conformance.proto "$dest/protos/"
cp "$src"/src/google/protobuf/test_messages_proto2.proto \
  "$src"/src/google/protobuf/test_messages_proto3.proto "$dest/protos/"
for f in "$src"/conformance/test_protos/*.proto "$src"/editions/golden/test_messages_proto*_editions.proto \
  "$src"/editions/golden/test_messages_edition2023.proto; do
  [[ -f $f ]] && cp "$f" "$dest/protos/"
done
cp "$src"/conformance/failure_list_*.txt "$src"/conformance/text_format_failure_list_*.txt \
  "$dest/failure_lists/"
echo "$version" >"$dest/VERSION"
cp "$build/conformance_test_runner" "$runner.tmp"
strip "$runner.tmp" 2>/dev/null || true
mv "$runner.tmp" "$runner"
echo "$runner"
