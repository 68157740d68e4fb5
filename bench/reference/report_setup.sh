# Set-up shared by the report scripts (bench/consistency/run.sh, bench/study/run.sh). Source it
# after setting REPORT (the name in messages), BUILD and OUT. It sets PY, BIN and FM_SRC and
# defines:
#   die MESSAGE...          one error line, exit status 2
#   log MESSAGE...          a progress line with the time
#   report_prepare TRAIN TEST
#                           checks the tools and the data, makes a fresh $OUT/runs (RUNS), sets
#                           the mpirun environment (MPIRUN) and FM: the real Fashion-MNIST, or
#                           its first TRAIN/TEST images when TRAIN < 60000
#   tl NAME NP FLAGS...     one tl-launch run into $RUNS/NAME, log in $RUNS/NAME/log
PY="${TL_PYTHON:-/usr/bin/python3}"
BIN="$BUILD/launcher"
FM_SRC="${TL_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
REPORT_REFERENCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "$REPORT/run.sh: error: $*" >&2; exit 2; }
log() { echo "[$REPORT $(date -u +%T)] $*"; }

report_prepare() {
  local train=$1 test=$2
  [ -x "$BIN/tl-launch" ] || die "no $BIN/tl-launch: build first (cmake --build $BUILD)"
  [ -x "$BIN/tl-report" ] || die "no $BIN/tl-report: build first (cmake --build $BUILD)"
  [ -d "$FM_SRC" ] || die "no Fashion-MNIST at $FM_SRC (apt-get install dataset-fashion-mnist, or TL_FASHION_MNIST=DIR)"
  RUNS="$OUT/runs"
  rm -rf "$RUNS" && mkdir -p "$RUNS"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  MPIRUN="mpirun --oversubscribe --bind-to none"
  if [ "$train" -lt 60000 ]; then
    "$PY" "$REPORT_REFERENCE/ddp_data.py" subset "$FM_SRC" "$RUNS/fashion-mnist" "$train" "$test"
    FM="$RUNS/fashion-mnist"
  else
    FM="$FM_SRC"
  fi
}

tl() {
  local name=$1 np=$2
  shift 2
  mkdir -p "$RUNS/$name"
  # shellcheck disable=SC2086
  $MPIRUN -np "$np" "$BIN/tl-launch" "$@" --output-dir "$RUNS/$name" </dev/null >"$RUNS/$name/log" 2>&1 ||
    die "tl-launch run $name failed: see $RUNS/$name/log"
}
