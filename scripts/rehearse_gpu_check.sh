#!/usr/bin/env bash
# rehearse_gpu_check.sh: bench/gpu_check.sh with TL_GPU_CHECK_DEVICE=cpu inside a minimal Debian 12
# root that has what the GPU machine promises (a compiler, CMake, ninja, Python with torch) and
# none of tl's other build dependencies, so that the check passes here only if the bundle
# (scripts/gpu_bundle.sh) is complete (issue 38, part 6; docs/guide/gpu.md). Run as root.
#
#   scripts/rehearse_gpu_check.sh [OUT_DIR]    (default out/gpu-rehearsal)
#
# TL_REHEARSAL_SUITE=trixie rehearses in a Debian 13 root instead: libtorch 2.6, GCC 14 and
# Python 3.13, nearer the GPU machine's PyTorch 2.11 than bookworm's 1.13, with the same Debian 12
# bundle (its glibc and libstdc++ floor are bookworm's, so a newer system must take it too).
# The root (/var/tmp/tl-roots/gpu-rehearsal[-trixie], TL_REHEARSAL_ROOT) is made once with
# mmdebstrap and reused. Debian's python3-torch stands in for pip's PyTorch, libtorch-dev for the headers and
# CMake files the wheel carries (TL_TORCH_PREFIX). libtorch-dev pulls some -dev packages; any of
# them that the bundle provides (zlib1g-dev) is removed from the root, and the run stops if
# any other bundled component is found there. The tree arrives as the GPU machine gets it: the
# files git tracks or does not ignore, plus gpu-bundle/. TL_REHEARSAL_KEEP_BUILD=1 keeps the
# previous build folder in the root (a rerun after a small change).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
OUTDIR=${1:-out/gpu-rehearsal}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
SUITE=${TL_REHEARSAL_SUITE:-bookworm}
case "$SUITE" in
  bookworm) R=${TL_REHEARSAL_ROOT:-/var/tmp/tl-roots/gpu-rehearsal} ;;
  trixie) R=${TL_REHEARSAL_ROOT:-/var/tmp/tl-roots/gpu-rehearsal-trixie} ;;
  *) echo "rehearse_gpu_check.sh: TL_REHEARSAL_SUITE must be bookworm or trixie (got '$SUITE')" >&2; exit 2 ;;
esac
die() { echo "rehearse_gpu_check.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, chroot, mounts)"
[ -f gpu-bundle/tl-gpu-bundle.tar.xz ] || die "gpu-bundle/tl-gpu-bundle.tar.xz is missing: run scripts/gpu_bundle.sh first"

if [ ! -x "$R/usr/bin/python3" ]; then
  echo "== making the root $R (mmdebstrap $SUITE)"
  mkdir -p "$(dirname "$R")"
  rm -rf "$R.new"
  mmdebstrap --mode=root --variant=apt --aptopt='APT::Install-Recommends "false"' \
    --include=g++,make,cmake,ninja-build,python3,python3-torch,libtorch-dev,procps,xz-utils,file \
    "$SUITE" "$R.new" http://deb.debian.org/debian
  mv "$R.new" "$R"
fi

# What libtorch-dev pulled; the bundle's components must come from the bundle alone.
installed() { [ "$(chroot "$R" dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }
PULLED=$(chroot "$R" dpkg-query -W -f '${db:Status-Status} ${Package} ${Version}\n' | awk '$1 == "installed" && $2 ~ /-dev$/ {print $2, $3}')
[ -f "$R/.tl-pulled-dev" ] || echo "$PULLED" > "$R/.tl-pulled-dev"  # as mmdebstrap left it
PULLED=$(cat "$R/.tl-pulled-dev")
for p in zlib1g-dev; do
  if installed "$p"; then
    echo "== removing $p from the root (pulled by libtorch-dev; the bundle has it)"
    chroot "$R" dpkg --purge --force-depends "$p" >/dev/null
  fi
done
BAD=""
for p in libopenmpi-dev openmpi-bin libboost-dev libboost1.74-dev libboost1.83-dev libboost-fiber-dev libboost-fiber1.74-dev libspdlog-dev libfmt-dev libcli11-dev \
         nlohmann-json3-dev libjpeg62-turbo-dev libjpeg-dev libssl-dev zlib1g-dev libgtest-dev libcairo2-dev pkg-config; do
  installed "$p" && BAD="$BAD $p"
done
for f in usr/include/mpi.h usr/include/boost usr/include/spdlog usr/include/fmt usr/include/CLI usr/include/nlohmann \
         usr/include/jpeglib.h usr/include/openssl usr/include/zlib.h usr/bin/mpirun usr/bin/orterun; do
  [ -e "$R/$f" ] && BAD="$BAD /$f"
done
[ -z "$BAD" ] || die "the root has what the bundle must provide:$BAD"

# The tree as the GPU machine gets it.
W="$R/work/tl"
KEEP=${TL_REHEARSAL_KEEP_BUILD:-0}
if [ "$KEEP" = 1 ] && [ -d "$W/build-gpu" ]; then mv "$W/build-gpu" "$R/work/build-gpu.keep"; fi
rm -rf "$W" "$R/work/out" "$R/tmp/tl-gpu-prefix"
mkdir -p "$W" "$R/work/out"
git ls-files -z --cached --others --exclude-standard | tar -C "$SRC" --null -T - -cf - | tar -C "$W" -xf -
cp -a gpu-bundle "$W/"
[ -d "$R/work/build-gpu.keep" ] && mv "$R/work/build-gpu.keep" "$W/build-gpu"

MOUNTS=()
cleanup() {
  local m
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mnt() { mount "$@" && MOUNTS+=("${@: -1}"); }
mnt -t proc proc "$R/proc"
mnt -t sysfs sys "$R/sys"
mnt --bind /dev "$R/dev"
mnt -t devpts devpts "$R/dev/pts" -o newinstance,ptmxmode=0666
mnt -t tmpfs shm "$R/dev/shm"

echo "== bench/gpu_check.sh in the root ($(nproc) cores), TL_GPU_CHECK_DEVICE=cpu"
T0=$(date +%s)
rc=0
chroot "$R" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 TMPDIR=/tmp \
  TL_GPU_CHECK_DEVICE=cpu TL_TORCH_PREFIX=/usr/lib/x86_64-linux-gnu/cmake \
  TL_GPU_CHECK_BUDGET_S="${TL_GPU_CHECK_BUDGET_S:-5400}" TL_GPU_CHECK_CAP_SCALE="${TL_GPU_CHECK_CAP_SCALE:-10}" ${TL_GPU_CHECK_STAGES:+TL_GPU_CHECK_STAGES="$TL_GPU_CHECK_STAGES"} \
  bash -c 'cd /work/tl && bench/gpu_check.sh /work/out' || rc=$?
T1=$(date +%s)
rm -rf "$OUTDIR"/* && cp -a "$R/work/out/." "$OUTDIR/"
{
  echo "rehearsal: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $((T1 - T0)) s, gpu_check.sh exit status $rc"
  echo "root: $R (mmdebstrap $SUITE: g++ make cmake ninja-build python3 python3-torch libtorch-dev procps xz-utils file)"
  echo "-dev packages libtorch-dev pulled in (zlib1g-dev removed before the run):"
  echo "$PULLED" | sed 's/^/  /'
} > "$OUTDIR/rehearsal.txt"
cat "$OUTDIR/rehearsal.txt"
exit $rc
