#!/usr/bin/env bash
# What the shared precompiled header (TL_PCH) saves against what it costs ccache, in CPU
# seconds (user + sys of the whole build, so other load on the machine barely changes them).
# For each configuration, with its own empty ccache, three builds of TARGETS:
#   cold   a fresh clone, fresh build folder, empty cache (a fresh machine)
#   pull   the same folder after every source and header is touched (a `git pull` that
#          rewrites many files; ccache sees the same contents)
#   clone  a second clone in another folder, its own build folder, the cache warm from both
# Configurations: pch (today), pch+sloppy (ccache told sloppiness=pch_defines,time_macros and
# base_dir), nopch+basedir (TL_PCH=OFF, base_dir set so another folder's paths match).
#   bench/pch_vs_ccache.sh [WORK] ; TARGETS="tl_models tl_optim" JOBS=1 by default (targets or
#   object files); CONFIGS picks configurations; COLD_ONLY=pch times only that one's cold build
set -euo pipefail
SRC="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-/tmp/tl-pch-vs-ccache}"
TARGETS="${TARGETS:-tl_models tl_optim}"
JOBS="${JOBS:-1}"
rm -rf "$WORK"
mkdir -p "$WORK"
git clone -q "$SRC" "$WORK/a"
git clone -q "$SRC" "$WORK/b"

cpu() {  # user+sys seconds of the command and its children; FAILED if it fails
  if /usr/bin/time -o "$WORK/time" -f '%U %S' "$@" >"$WORK/last.log" 2>&1; then
    awk '{printf "%.1f", $1 + $2}' "$WORK/time"
  else
    echo FAILED
  fi
}

build() {  # clone config cmake-args...
  local clone=$1 config=$2
  shift 2
  cmake -S "$WORK/$clone" -B "$WORK/$clone/build-$config" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTL_BUILD_TESTS=OFF -DTL_BUILD_BENCH=OFF "$@" >/dev/null
  cpu ninja -C "$WORK/$clone/build-$config" -j "$JOBS" $TARGETS
}

stat() { ccache --print-stats | awk -v k="$1" '$1 == k {print $2}'; }
hits() { echo "$(( $(stat direct_cache_hit) + $(stat preprocessed_cache_hit) ))"; }

printf "%-14s %8s %8s %8s   %s\n" config cold pull clone "ccache hits/could-not-use-PCH (cumulative) after cold, pull, clone"
for config in ${CONFIGS:-pch pch+sloppy nopch+basedir}; do
  export CCACHE_DIR="$WORK/ccache-$config"
  unset CCACHE_SLOPPINESS CCACHE_BASEDIR
  args=()
  case $config in
    pch+sloppy) export CCACHE_SLOPPINESS=pch_defines,time_macros CCACHE_BASEDIR="$WORK" ;;
    nopch+basedir) export CCACHE_BASEDIR="$WORK"; args=(-DTL_PCH=OFF) ;;
  esac
  ccache -z >/dev/null
  counts() { echo "$(hits)/$(stat could_not_use_precompiled_header)"; }
  cold=$(build a "$config" "${args[@]}"); c1=$(counts)
  pull=- clone=- c2=- c3=-
  if [ -z "${COLD_ONLY:-}" ] || [ "$config" != "$COLD_ONLY" ]; then
    find "$WORK/a" -path "$WORK/a/build-*" -prune -o \( -name '*.cpp' -o -name '*.h' \) -print0 |
      xargs -0 touch
    pull=$(build a "$config" "${args[@]}"); c2=$(counts)
    clone=$(build b "$config" "${args[@]}"); c3=$(counts)
  fi
  printf "%-14s %8s %8s %8s   %s, %s, %s\n" "$config" "$cold" "$pull" "$clone" "$c1" "$c2" "$c3"
done
