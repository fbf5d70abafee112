#!/usr/bin/env bash
# Build Google's protobuf conformance_test_runner, and the C++ reference
# testee conformance_cpp, from Debian's `protobuf` source package, linked
# against the installed libprotobuf of the very same version.
#
#   scripts/build-conformance-runner.sh [DEST]
#
# DEST defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/optimus/conformance. After a
# build it holds:
#   conformance_test_runner   the runner
#   conformance_cpp           Google's C++ testee (reference and self-check)
#   failure_list_*.txt        upstream expected-failure lists, per language
#   text_format_failure_list_*.txt
#   protos/                   conformance.proto, test_messages_proto{2,3}.proto
#   src/                      upstream conformance/ directory, for reference
#   VERSION                   Debian version of libprotobuf-dev built against
#
# The build only needs the Debian archive: the sources come from
# `apt-get source --download-only`, so no dpkg-dev and no upstream download.
# If DEST already has a runner built for the installed libprotobuf-dev
# version, nothing happens. The last line on stdout is the runner's path;
# everything else goes to stderr.
#
# Environment:
#   FORCE=1          rebuild even when a runner is cached
#   NO_APT=1         never call apt-get (the tools must already be there)
#   JOBS=N           parallel compiler processes (default: nproc)
set -euo pipefail

dest=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/optimus/conformance}
runner=$dest/conformance_test_runner

say() { printf '[conformance-runner] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- privileges
# We normally run as root (CI, fresh machines). Elsewhere use sudo when it is
# installed; without either, apt steps fail with a clear message.
root_cmd() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root or sudo to run: $*"
  fi
}

export DEBIAN_FRONTEND=noninteractive
apt_fresh=0
apt_refresh() {
  if [[ $apt_fresh -eq 0 ]]; then
    say "apt-get update"
    root_cmd apt-get update -qq >&2
    apt_fresh=1
  fi
}

is_installed() {
  [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# ---------------------------------------------------------------- tools
if [[ -z ${NO_APT:-} ]]; then
  missing=()
  for pkg in g++ protobuf-compiler libprotobuf-dev zlib1g-dev; do
    is_installed "$pkg" || missing+=("$pkg")
  done
  if ((${#missing[@]} > 0)); then
    apt_refresh
    say "apt-get install ${missing[*]}"
    root_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
fi
for tool in g++ protoc tar dpkg-query; do
  command -v "$tool" >/dev/null 2>&1 || die "missing tool: $tool"
done

# The conformance sources must match the library exactly: generated code from
# one protobuf release does not compile against another's headers.
deb_version=$(dpkg-query -W -f='${Version}' libprotobuf-dev 2>/dev/null) \
  || die "libprotobuf-dev is not installed"
upstream=${deb_version#*:}      # drop an epoch
upstream=${upstream%%-*}        # drop the Debian revision
upstream=${upstream%%+*}        # drop a +dfsg style suffix
protoc_version=$(protoc --version | awk '{print $2}')
[[ $protoc_version == "$upstream" ]] \
  || die "protoc is $protoc_version but libprotobuf-dev is $upstream; install matching versions"

if [[ -x $runner && -z ${FORCE:-} && -f $dest/VERSION \
      && $(cat "$dest/VERSION") == "$deb_version" ]]; then
  say "cached: $runner (libprotobuf-dev $deb_version)"
  echo "$runner"
  exit 0
fi
say "building against libprotobuf-dev $deb_version"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/optimus-conformance-build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# ---------------------------------------------------------------- sources
# `apt-get source` needs a deb-src entry. Debian images usually ship only
# binary entries, so when apt knows no `protobuf` source package we add one
# that points at the same mirror as the machine's own `deb` entries.
knows_source() {
  apt-cache showsrc protobuf 2>/dev/null | grep -qx 'Package: protobuf'
}

debian_mirror() {
  # deb822 files: stanzas with a Types line naming `deb` and not disabled.
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk 'BEGIN { RS = ""; FS = "\n" }
      {
        types = 0; off = 0; uris = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/ && $i ~ /[[:space:]]deb([[:space:]]|$)/) types = 1
          if ($i ~ /^Enabled:[[:space:]]*no/) off = 1
          if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[[:space:]]*/, "", uris) }
        }
        if (types && !off) print uris
      }' "$f" | tr ' ' '\n' | grep -E '/debian/?$' | head -n 1 || true)
    if [[ -n $uri ]]; then echo "${uri%/}"; return 0; fi
  done
  # One-line format: `deb [options] URI suite components`.
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | sed -nE 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
        | grep -E '/debian/?$' | head -n 1 || true)
  [[ -n $uri ]] || return 1
  echo "${uri%/}"
}

if [[ -z ${NO_APT:-} ]] && ! knows_source; then
  apt_refresh || true
fi
if ! knows_source; then
  [[ -z ${NO_APT:-} ]] || die "apt knows no source package 'protobuf' and NO_APT is set"
  mirror=$(debian_mirror || true)
  [[ -n $mirror ]] || die "found no Debian 'deb' entry to copy; add a deb-src line for protobuf by hand"
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ -n $codename ]] || die "cannot read VERSION_CODENAME from /etc/os-release"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  signed=
  [[ -f $keyring ]] && signed="Signed-By: $keyring"
  entry=/etc/apt/sources.list.d/optimus-deb-src.sources
  say "adding $entry ($mirror, $codename)"
  {
    printf 'Types: deb-src\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n' \
      "$mirror" "$codename" "$codename"
    if [[ -n $signed ]]; then printf '%s\n' "$signed"; fi
    printf '\nTypes: deb-src\nURIs: %s-security\nSuites: %s-security\nComponents: main\n' \
      "$mirror" "$codename"
    if [[ -n $signed ]]; then printf '%s\n' "$signed"; fi
  } >"$scratch/deb-src.sources"
  root_cmd install -m 0644 "$scratch/deb-src.sources" "$entry"
  apt_fresh=0
  apt_refresh
  knows_source || die "apt still knows no source package 'protobuf' after adding $entry"
fi

say "apt-get source protobuf=$deb_version"
fetch_opts=(--download-only -qq)
# As root, apt drops to the _apt user, which cannot write to our scratch dir.
[[ $(id -u) -eq 0 ]] && fetch_opts+=(-o APT::Sandbox::User=root)
(cd "$scratch" && { apt-get source "${fetch_opts[@]}" "protobuf=$deb_version" \
                    || apt-get source "${fetch_opts[@]}" protobuf; }) >&2
orig=$(find "$scratch" -maxdepth 1 -name "protobuf_${upstream}.orig.tar.*" | head -n 1)
[[ -n $orig ]] || die "no protobuf_${upstream}.orig tarball was downloaded"

top=protobuf-$upstream
tar -xf "$orig" -C "$scratch" \
  "$top/conformance" \
  "$top/src/google/protobuf/test_messages_proto2.proto" \
  "$top/src/google/protobuf/test_messages_proto3.proto" \
  "$top/src/google/protobuf/stubs/stringprintf.h"
src=$scratch/$top
[[ -f $src/conformance/conformance_test_runner.cc ]] || die "the tarball has no conformance/ sources"

# ---------------------------------------------------------------- compile
build=$scratch/build
mkdir -p "$build/gen" "$build/include/google/protobuf/stubs" "$build/obj"
# The runner includes stubs/stringprintf.h, which libprotobuf-dev does not
# install; the functions it declares are exported by libprotobuf itself.
cp "$src/src/google/protobuf/stubs/stringprintf.h" "$build/include/google/protobuf/stubs/"

say "protoc --cpp_out"
protoc -I"$src/conformance" --cpp_out="$build/gen" "$src/conformance/conformance.proto"
protoc -I"$src/src" --cpp_out="$build/gen" \
  "$src/src/google/protobuf/test_messages_proto2.proto" \
  "$src/src/google/protobuf/test_messages_proto3.proto"

generated=(
  "$build/gen/conformance.pb.cc"
  "$build/gen/google/protobuf/test_messages_proto2.pb.cc"
  "$build/gen/google/protobuf/test_messages_proto3.pb.cc"
)
runner_sources=(
  "$src/conformance/conformance_test.cc"
  "$src/conformance/conformance_test_main.cc"
  "$src/conformance/conformance_test_runner.cc"
  "$src/conformance/binary_json_conformance_suite.cc"
  "$src/conformance/text_format_conformance_suite.cc"
  "$src/conformance/third_party/jsoncpp/jsoncpp.cpp"
)
testee_sources=("$src/conformance/conformance_cpp.cc")

object_of() { local f=$1; f=${f##*/}; echo "$build/obj/${f%.*}.o"; }

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
cxxflags=(-std=c++14 -O2 -DNDEBUG -w -I"$build/gen" -I"$build/include" -I"$src/conformance")
all_sources=("${generated[@]}" "${runner_sources[@]}" "${testee_sources[@]}")
say "compiling ${#all_sources[@]} files, $jobs at a time"
pids=()
failed=0
for f in "${all_sources[@]}"; do
  g++ "${cxxflags[@]}" -c "$f" -o "$(object_of "$f")" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
((failed == 0)) || die "compilation failed"

# Prefer the static libprotobuf so a later library upgrade cannot break the
# cached runner; fall back to the shared library when there is no archive.
multiarch=$(gcc -print-multiarch 2>/dev/null || true)
link() {
  local out=$1; shift
  if [[ -n $multiarch && -f /usr/lib/$multiarch/libprotobuf.a ]]; then
    if g++ -o "$out" "$@" -Wl,-Bstatic -lprotobuf -Wl,-Bdynamic -lz -pthread 2>"$scratch/link.log"; then
      return 0
    fi
    say "static link failed, linking the shared libprotobuf:"
    cat "$scratch/link.log" >&2
  fi
  g++ -o "$out" "$@" -lprotobuf -lz -pthread
}

objects() { local f; for f in "$@"; do object_of "$f"; done; }
say "linking"
mapfile -t runner_objects < <(objects "${runner_sources[@]}" "${generated[@]}")
mapfile -t testee_objects < <(objects "${testee_sources[@]}" "${generated[@]}")
link "$build/conformance_test_runner" "${runner_objects[@]}"
link "$build/conformance_cpp" "${testee_objects[@]}"

# ---------------------------------------------------------------- install
mkdir -p "$dest/protos" "$dest/src"
rm -f "$dest/VERSION"
cp "$src"/conformance/failure_list_*.txt "$src"/conformance/text_format_failure_list_*.txt "$dest/"
cp "$src/conformance/conformance.proto" \
   "$src/src/google/protobuf/test_messages_proto2.proto" \
   "$src/src/google/protobuf/test_messages_proto3.proto" "$dest/protos/"
cp -R "$src/conformance/." "$dest/src/"
install -m 0755 "$build/conformance_cpp" "$dest/conformance_cpp"
install -m 0755 "$build/conformance_test_runner" "$dest/.runner.tmp"
mv -f "$dest/.runner.tmp" "$runner"
# VERSION last: together with the runner it marks a complete build.
echo "$deb_version" >"$dest/VERSION"

# The project keeps its own copy of the protos; say so if they drifted.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for p in conformance.proto test_messages_proto2.proto test_messages_proto3.proto; do
  if [[ -f $here/testdata/conformance/$p ]] && ! cmp -s "$here/testdata/conformance/$p" "$dest/protos/$p"; then
    say "warning: testdata/conformance/$p differs from the $upstream source"
  fi
done

say "built $runner"
echo "$runner"
