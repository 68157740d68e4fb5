#!/usr/bin/env bash
# Checks the two README commands on Debian 13 "trixie" (libtorch 2.6, Open MPI 5): makes a trixie
# root from Debian's registry (kept and reused), copies this tree into it, and runs inside it
#   1. scripts/run_default.sh   the default job; prints its test accuracy and params_sha256
#   2. scripts/test.sh          the whole suite (TL_CHECK_QUICK=1: only `ctest -L consistency`)
# plus a placement check: one small job on 1 process with placement 4, and in DDP mode on 4
# processes, must end with one params_sha256. Not part of .ci/run. Needs root, mmdebstrap (or
# debootstrap) and network access to deb.debian.org. Times of each phase at the end.
#   TL_DEBIAN13_ROOT   the root (default /var/tmp/tl-debian13/root; made when missing)
#   TL_DEBIAN13_MIRROR Debian mirror (default http://deb.debian.org/debian)
#   TL_CHECK_QUICK=1   command 1, the placement check and the consistency tests only
#   TL_BUILD_JOBS      build jobs inside the root (default 2)
# The tree is copied to <root>/srv/tl-checkout (its build/, out/ and .git are not copied; the
# root's own build there is kept between runs, and ccache's cache in <root>/root/.ccache). A
# distinctive path: test_install looks for the tree's path inside the installed files.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
TREE=/srv/tl-checkout  # the copy, inside the root
ROOT="${TL_DEBIAN13_ROOT:-/var/tmp/tl-debian13/root}"
MIRROR="${TL_DEBIAN13_MIRROR:-http://deb.debian.org/debian}"
QUICK="${TL_CHECK_QUICK:-0}"
JOBS="${TL_BUILD_JOBS:-2}"
LOG_DIR="${TL_DEBIAN13_LOG_DIR:-$(dirname "$ROOT")/logs}"

die() { echo "check_debian13: error: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (it makes a Debian root and mounts /proc, /dev, /sys into it); run it with sudo"
for tool in chroot mount umount rsync; do
  command -v "$tool" >/dev/null || die "'$tool' is missing (apt-get install ${tool/chroot/coreutils})"
done
MAKER=""
if command -v mmdebstrap >/dev/null; then MAKER=mmdebstrap
elif command -v debootstrap >/dev/null; then MAKER=debootstrap
else die "neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)"; fi
case "$QUICK" in 0 | 1) ;; *) die "TL_CHECK_QUICK='$QUICK' must be 0 or 1" ;; esac
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "TL_BUILD_JOBS='$JOBS' must be a positive integer"

declare -a PHASES=()
phase_start=0
begin() { phase_name=$1; phase_start=$(date +%s); echo "== [$(date -u +%H:%M:%S)] $1"; }
end() { local t=$(($(date +%s) - phase_start)); PHASES+=("$(printf '%-34s %5d s' "$phase_name" "$t")"); }

MOUNTED=()
cleanup() {
  local i
  for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
    umount -l "${MOUNTED[$i]}" 2>/dev/null || echo "check_debian13: could not unmount ${MOUNTED[$i]}" >&2
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bind() {  # bind SRC DST: mounts SRC at DST (inside the root) unless mounted already
  mkdir -p "$2"
  mountpoint -q "$2" && return 0
  mount "${@:3}" "$1" "$2"
  MOUNTED+=("$2")
}

begin "debian 13 root"
if [ ! -x "$ROOT/usr/bin/apt-get" ] || ! grep -q 'VERSION_CODENAME=trixie' "$ROOT/etc/os-release" 2>/dev/null; then
  [ -e "$ROOT" ] && [ -n "$(ls -A "$ROOT" 2>/dev/null)" ] &&
    die "$ROOT exists but is not a Debian 13 root; remove it or set TL_DEBIAN13_ROOT"
  mkdir -p "$(dirname "$ROOT")"
  echo "making $ROOT with $MAKER from $MIRROR"
  if [ "$MAKER" = mmdebstrap ]; then
    mmdebstrap --variant=apt --components=main --include=ca-certificates trixie "$ROOT" \
      "deb $MIRROR trixie main" "deb $MIRROR trixie-updates main" \
      "deb ${MIRROR%/debian}/debian-security trixie-security main"
  else
    debootstrap --variant=minbase --include=ca-certificates trixie "$ROOT" "$MIRROR"
  fi
else
  echo "reusing $ROOT"
fi
grep -q 'VERSION_CODENAME=trixie' "$ROOT/etc/os-release" || die "$ROOT is not Debian 13 after making it"
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
end

# mpirun (Open MPI 5's PRRTE) and the tests need /proc, /dev (ptys), /dev/shm (shared-memory
# transport), /sys (hwloc's topology); /tmp is the root's own.
bind /proc "$ROOT/proc" -t proc -o nosuid,nodev,noexec
bind /sys "$ROOT/sys" --rbind -o ro
mount --make-rslave "$ROOT/sys" 2>/dev/null || true
bind /dev "$ROOT/dev" --bind
bind /dev/pts "$ROOT/dev/pts" --bind
bind shm "$ROOT/dev/shm" -t tmpfs -o nosuid,nodev,mode=1777
chmod 1777 "$ROOT/tmp"

begin "copy tree"
mkdir -p "$ROOT$TREE"
rsync -a --delete --exclude=/build --exclude=/out --exclude=/.git "$SRC/" "$ROOT$TREE/"
end

mkdir -p "$LOG_DIR"
in_root() {  # in_root LOG COMMAND: runs COMMAND in the root's $TREE as root; output to LOG too
  local log="$LOG_DIR/$1"
  shift
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb TL_BUILD_JOBS="$JOBS" CCACHE_BASEDIR="$TREE" \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    /bin/bash -c "cd $TREE && $*" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}

status=0
begin "command 1: scripts/run_default.sh"
in_root run_default.log "TL_OUTPUT_DIR=out/default scripts/run_default.sh" || status=1
end
S="$ROOT$TREE/out/default/summary.json"
if [ -f "$S" ]; then
  ACC=$(chroot "$ROOT" python3 -c 'import json; a = json.load(open("'"$TREE"'/out/default/summary.json")).get("test_acc"); print("none" if a is None else "%.2f %%" % (100 * a))')
  HASH=$(chroot "$ROOT" python3 -c 'import json; print(json.load(open("'"$TREE"'/out/default/summary.json"))["params_sha256"])')
  echo "default job on libtorch 2.6: test accuracy $ACC, params_sha256 $HASH"
fi

# Placement independence on libtorch 2.6: one small job (CNN with BatchNorm and dropout,
# 4 logical workers) as DDP mode on 4 processes, 4 ESTs on 1 process, and 3,1 on 2 processes.
begin "placement check (3 small jobs)"
PLACEMENT_OK=0
if in_root placement_build.log "cmake --build build -j $JOBS --target tl-data tl-launch >/dev/null"; then
  in_root placement.log '
    set -e
    T=out/placement; rm -rf "$T"; mkdir -p "$T"
    build/launcher/tl-data synth --out "$T/data" --train 600 --test 60 --seed 4 >/dev/null
    J=(--model cnn --dataset cifar10 --data-dir "$T/data" --batch 16 --steps 12 --seed 5 --logical-workers 4)
    M=(mpirun --oversubscribe --allow-run-as-root)
    "${M[@]}" -np 4 build/launcher/tl-launch "${J[@]}" --output-dir "$T/ddp4" > "$T/ddp4.log" 2>&1
    "${M[@]}" -np 1 build/launcher/tl-launch "${J[@]}" --output-dir "$T/p4" > "$T/p4.log" 2>&1
    "${M[@]}" -np 2 build/launcher/tl-launch "${J[@]}" --placement 3,1 --output-dir "$T/p31" > "$T/p31.log" 2>&1
    for r in ddp4 p4 p31; do
      printf "%-5s %s\n" "$r" "$(grep -o "\"params_sha256\": *\"[0-9a-f]*\"" "$T/$r/summary.json" | grep -o "[0-9a-f]\{64\}")"
    done > "$T/hashes"
    cat "$T/hashes"
    [ "$(cut -c7- "$T/hashes" | sort -u | wc -l)" = 1 ]
  ' && PLACEMENT_OK=1
fi
if ((PLACEMENT_OK)); then
  echo "placement independence on libtorch 2.6: holds (DDP mode on 4 processes = placement 4 = 3,1)"
else
  echo "placement independence on libtorch 2.6: FAILED (logs under $ROOT$TREE/out/placement)"
  status=1
fi
end

if [ "$QUICK" = 1 ]; then
  begin "consistency tests (ctest -L consistency)"
  in_root consistency.log "scripts/install_test_packages.sh && cmake --build build -j $JOBS && \
    ctest --test-dir build --output-on-failure -j 2 -L consistency" || status=1
  end
else
  begin "command 2: scripts/test.sh"
  in_root test.log "scripts/test.sh" || status=1
  end
fi

echo
echo "== Debian 13 check ($( . "$ROOT/etc/os-release" && echo "$PRETTY_NAME"); libtorch" \
     "$(chroot "$ROOT" dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null)," \
     "Open MPI $(chroot "$ROOT" dpkg-query -W -f='${Version}' openmpi-bin 2>/dev/null))" \
     "$( [ "$QUICK" = 1 ] && echo quick)"
if [ -n "${HASH:-}" ]; then
  echo "default job: test accuracy $ACC, params_sha256 $HASH (other bits than libtorch 1.13's: expected)"
else
  echo "default job: no summary.json (see $LOG_DIR/run_default.log)"
fi
echo "placement check: $( ((PLACEMENT_OK)) && echo holds || echo FAILED)"
for p in "${PHASES[@]}"; do echo "  $p"; done
echo "logs: $LOG_DIR"
if ((status)); then echo "check_debian13: FAILED"; else echo "check_debian13: passed"; fi
exit "$status"
