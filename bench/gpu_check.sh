#!/usr/bin/env bash
# gpu_check.sh: everything tl has to prove on a GPU, in one command of at most 9 minutes, on a
# machine that has only pip's PyTorch (CUDA, NCCL), a compiler, CMake, ninja and Python, plus this
# tree and the bundle from scripts/gpu_bundle.sh (issue 38; docs/guide/gpu.md says how to run it
# and what each figure means).
#
#   bench/gpu_check.sh [OUT_DIR]      (default: $OUT, else out/gpu-check)
#
# Steps: check glibc/libstdc++ against the bundle; unpack the bundle into a prefix and set up the
# relocated Open MPI; configure against the machine's PyTorch (with NCCL); build only what the
# stages run, on every core; then the stages, each time-boxed so that a failure still returns
# what ran (in the order b h c g d a f e: what never ran on a GPU first):
#   a matrix     the consistency matrix (bench/gpu_consistency.sh, part "matrix") on the device
#   b nccl       NCCL with one process: ResNet-18, 4 ESTs, --gpu-comm nccl vs mpi, same bits
#   h ddp        tl against real PyTorch DDP on the device: the CNN, 4 ESTs (3,1 on 2 processes,
#                --gpu-comm mpi, exact reduction) vs bench/reference/ddp_reference.py --device,
#                4 ranks (gloo, all on one GPU), every step's loss and the final params_sha256:
#                with tl's fixed-point rounding in DDP's hook the same bits (the pass condition);
#                with exact averaging the first step that differs, recorded
#   c overlap    --overlap on/off, exact and fp32, 2 processes sharing the GPU: the same bits (gpu_consistency.sh "overlap")
#   d own_model  ResNet-18 (batch 32) and the GPT example: tl vs PyTorch eager on the same .pt;
#                PyTorch's foreach/fused optimizers against its single-tensor form (optimizer_bits.py)
#   e overhead   EST context-switch overhead (bench_context_switch --device) and the exact
#                reduction's share of a ResNet-18 step (tl-launch's epoch records)
#   f inplace    in-place shrink and grow with processes sharing the GPU (gpu_consistency.sh
#                "inplace", --gpu-comm mpi)
#   g recovery   a SIGKILLed rank under tl-run (bench/bench_recovery.sh, DEVICE=...)
# Output in OUT_DIR, three files (the GPU machine returns at most 8): gpu_check.json (every stage's
# status, seconds and figures; rewritten after each stage), logs.tar.gz (logs/NAME.log of every
# stage, build.log whole; repacked after each stage) and MANIFEST.txt of the bundle.
#
# Environment:
#   TL_GPU_CHECK_DEVICE  cuda (default) or cpu (the rehearsal on a machine without a GPU)
#   TL_GPU_BUNDLE        the bundle archive (default gpu-bundle/tl-gpu-bundle.tar.xz)
#   TL_GPU_PREFIX        where it is unpacked (default /tmp/tl-gpu-prefix)
#   TL_GPU_BUILD         the build folder (default build-gpu)
#   TL_TORCH_PREFIX      PyTorch's CMake prefix when python's torch.utils.cmake_prefix_path has
#                        no Torch/TorchConfig.cmake (Debian's python3-torch: /usr/lib/x86_64-linux-gnu
#                        with libtorch-dev)
#   TL_CXX_STANDARD      passed as CMAKE_CXX_STANDARD when set
#   TL_GPU_CHECK_BUDGET_S  the whole run's budget in seconds (default 540); a stage gets at most
#                        what is left of it
#   TL_GPU_CHECK_STAGES  the stages to run (default "a b h c d e f g")
#   TL_GPU_CHECK_CAP_SCALE  multiplies every stage's cap (default 1; the 2-core rehearsal: 10)
# Exit status: 0 when every stage that ran passed (skipped ones aside), 1 otherwise, 2 on bad
# input; 3 when the machine's glibc/libstdc++ is older than the bundle needs.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
T_START=$(date +%s)
DEVICE=${TL_GPU_CHECK_DEVICE:-cuda}
case "$DEVICE" in cuda | cpu) ;; *) echo "gpu_check.sh: TL_GPU_CHECK_DEVICE must be cuda or cpu (got '$DEVICE')" >&2; exit 2 ;; esac
OUTDIR=${1:-${OUT:-out/gpu-check}}
mkdir -p "$OUTDIR" || { echo "gpu_check.sh: cannot create the output folder '$OUTDIR'" >&2; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
BUNDLE=${TL_GPU_BUNDLE:-gpu-bundle/tl-gpu-bundle.tar.xz}
PREFIX=${TL_GPU_PREFIX:-/tmp/tl-gpu-prefix}
BUILD=${TL_GPU_BUILD:-build-gpu}
case "$BUILD" in /*) ;; *) BUILD="$SRC/$BUILD" ;; esac
BUDGET=${TL_GPU_CHECK_BUDGET_S:-540}
STAGES=" ${TL_GPU_CHECK_STAGES:-a b h c d e f g} "
JOBS=$(nproc)
CAP_SCALE=${TL_GPU_CHECK_CAP_SCALE:-1}
[[ "$CAP_SCALE" =~ ^[1-9][0-9]*$ ]] || { echo "gpu_check.sh: TL_GPU_CHECK_CAP_SCALE must be a whole number >= 1 (got '$CAP_SCALE')" >&2; exit 2; }
export TMPDIR="${TMPDIR:-/tmp}"
# The stages' records and logs live outside OUT_DIR (which returns few files); the report packs them.
WORKDIR=$(mktemp -d "$TMPDIR/tl-gpu-check.XXXXXX") || { echo "gpu_check.sh: cannot create a work folder in '$TMPDIR'" >&2; exit 2; }
LOGS="$WORKDIR/logs"
META="$WORKDIR/stages"
rm -rf "$OUTDIR/logs" "$OUTDIR/stages" "$OUTDIR/gpu_check.json" "$OUTDIR/logs.tar.gz"
mkdir -p "$LOGS" "$META"
export TL_GPU_CHECK_DEVICE=$DEVICE TL_GPU_CHECK_OUT=$OUTDIR TL_GPU_CHECK_BUDGET_S=$BUDGET TL_GPU_CHECK_T0=$T_START

report() {
  python3 "$SRC/bench/gpu_check_report.py" "$OUTDIR" "$WORKDIR" || echo "gpu_check.sh: the report failed (see above)" >&2
  tar -czf "$OUTDIR/logs.tar.gz.tmp" -C "$WORKDIR" logs && mv -f "$OUTDIR/logs.tar.gz.tmp" "$OUTDIR/logs.tar.gz" ||
    echo "gpu_check.sh: could not pack the logs into $OUTDIR/logs.tar.gz" >&2
}

# stage_meta NAME STATUS SECONDS LIMIT RC REASON: one stage's record for the report.
stage_meta() {
  python3 - "$META/$1.json" "$@" <<'PY'
import json, sys
path, name, status, seconds, limit, rc, reason = sys.argv[1:8]
json.dump({"name": name, "status": status, "seconds": round(float(seconds), 1), "limit_s": int(limit),
           "rc": int(rc), "reason": reason}, open(path, "w"))
PY
  echo "$1" >> "$META/order"
}

# run_stage NAME CAP_S FUNCTION: FUNCTION under `timeout`, at most CAP_S seconds and at most what
# is left of the budget (less 20 s for the report); its output in logs/NAME.log.
run_stage() {
  local name=$1 cap=$2 fn=$3 left limit t0 t1 rc status
  cap=$((cap * CAP_SCALE))
  left=$((BUDGET - ($(date +%s) - T_START) - 20))
  limit=$((cap < left ? cap : left))
  if [ "$limit" -lt 15 ]; then
    stage_meta "$name" skipped 0 0 0 "no time left in the ${BUDGET} s budget"
    report; return 0
  fi
  echo "== $(date -u +%H:%M:%S) stage $name (at most $limit s)"
  t0=$(date +%s.%N)
  timeout -k 10 "$limit" bash -c "$fn" > "$LOGS/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  case $rc in 0) status=passed ;; 124 | 137) status=timed-out ;; *) status=failed ;; esac
  stage_meta "$name" "$status" "$(python3 -c "print($t1 - $t0)")" "$limit" "$rc" ""
  echo "   $status in $(python3 -c "print(round($t1 - $t0, 1))") s"
  report
  [ "$status" = passed ]
}
skip_stage() { stage_meta "$1" skipped 0 0 0 "$2"; echo "== stage $1 skipped: $2"; report; }
wanted() { [[ "$STAGES" == *" $1 "* ]]; }

# ---- 0: the machine and the bundle ----------------------------------------------------------
[ -f "$BUNDLE" ] || { echo "gpu_check.sh: the bundle '$BUNDLE' is missing: run scripts/gpu_bundle.sh here and carry gpu-bundle/" >&2; exit 2; }
MANIFEST="$(dirname "$BUNDLE")/MANIFEST.txt"
[ -f "$MANIFEST" ] || { echo "gpu_check.sh: the bundle's manifest '$MANIFEST' is missing (scripts/gpu_bundle.sh writes it)" >&2; exit 2; }
cp "$MANIFEST" "$OUTDIR/MANIFEST.txt"
command -v python3 >/dev/null || { echo "gpu_check.sh: python3 is not on PATH" >&2; exit 2; }
NEED_GLIBC=$(awk '/^glibc_max:/{sub("GLIBC_","",$2); print $2}' "$MANIFEST")
NEED_GLIBCXX=$(awk '/^glibcxx_max:/{sub("GLIBCXX_","",$2); print $2}' "$MANIFEST")
stage_env() {
  python3 - "$NEED_GLIBC" "$NEED_GLIBCXX" <<'PY'
import ctypes, ctypes.util, glob, json, os, platform, re, subprocess, sys
need_glibc, need_glibcxx = sys.argv[1], sys.argv[2]
v = lambda s: tuple(int(x) for x in s.split("."))
glibc = platform.libc_ver()[1] or os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
# libstdc++: the one the compiler links (g++ -print-file-name), its highest GLIBCXX_ version.
path, glibcxx = None, None
for cxx in [os.environ.get("CXX"), "g++", "c++"]:
    try:
        p = subprocess.run([cxx, "-print-file-name=libstdc++.so.6"], capture_output=True, text=True).stdout.strip()
        p = os.path.realpath(p)
        data = open(p, "rb").read()
        glibcxx = max((m.decode() for m in set(re.findall(rb"GLIBCXX_([0-9]+\.[0-9]+(?:\.[0-9]+)?)", data))), key=v)
        path = p
        break
    except Exception:
        continue
info = {"glibc": glibc, "libstdcxx": path, "glibcxx_max": glibcxx, "bundle_needs_glibc": need_glibc,
        "bundle_needs_glibcxx": need_glibcxx, "cores": os.cpu_count(), "machine": platform.platform()}
try:
    info["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
except Exception as e:
    info["gpu"] = "nvidia-smi: %s" % e
try:
    import torch
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    info["cuda_available"] = torch.cuda.is_available()
except Exception as e:
    info["torch"] = "python3 cannot import torch: %s" % e
print("ENV " + json.dumps(info))
bad = []
if v(glibc) < v(need_glibc): bad.append("glibc %s < GLIBC_%s" % (glibc, need_glibc))
if glibcxx is None: print("gpu_check.sh: no libstdc++.so.6 found through $CXX, g++ or c++; GLIBCXX not checked")
elif v(glibcxx) < v(need_glibcxx): bad.append("libstdc++ GLIBCXX_%s < GLIBCXX_%s (%s)" % (glibcxx, need_glibcxx, path))
if bad:
    print("gpu_check.sh: this machine is too old for the Debian 12 bundle: " + "; ".join(bad))
    sys.exit(3)
PY
}
export -f stage_env
export NEED_GLIBC NEED_GLIBCXX
if ! run_stage env 60 stage_env; then
  tail -n 1 "$LOGS/env.log" >&2
  exit 3
fi

# ---- 1: unpack the bundle; a relocated Open MPI -----------------------------------------------
P="$PREFIX/usr"
L="$P/lib/x86_64-linux-gnu"
stage_unpack() {
  set -e
  stamp="$PREFIX/.bundle-$(stat -c %s-%Y "$BUNDLE")"
  if [ ! -f "$stamp" ]; then
    rm -rf "$PREFIX" && mkdir -p "$PREFIX"
    if command -v xz >/dev/null; then
      tar -C "$PREFIX" -xJf "$BUNDLE"
    else  # no xz program: Python's lzma
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$BUNDLE" "$PREFIX"
    fi
    touch "$stamp"
  fi
  # Every bundled ELF file's libraries, as this machine's loader resolves them.
  if command -v ldd >/dev/null; then
    missing=$(find "$PREFIX" -type f \( -name '*.so*' -o -path '*/bin/*' \) | while read -r f; do
      head -c4 "$f" | grep -q ELF || continue
      LD_LIBRARY_PATH="$L/tl-openssl:$LD_LIBRARY_PATH" ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|${f#"$PREFIX"/}: |"
    done)
    [ -z "$missing" ] || { echo "gpu_check.sh: libraries the bundle's binaries load are missing here:"; echo "$missing"; exit 1; }
    echo "ldd: every bundled ELF file's libraries found"
  fi
  command -v mpirun
  mpirun --version
  ompi_info --path all | head -20
  # One process that loads libmpi (MPI_Init through the relocated PMIx and components).
  mpirun -np 2 --oversubscribe --bind-to none hostname
}
# Debian's Open MPI 4.1: prefix /usr, libdir and pkglibdir (MCA components) under
# lib/x86_64-linux-gnu/openmpi/lib, sysconfdir /etc/openmpi (absolute), external PMIx 4 with
# its own prefix (lib/x86_64-linux-gnu/pmix2) and component folder. OPAL_PREFIX moves what was
# configured relative to the prefix; the rest is named one by one.
export OPAL_PREFIX="$P" OPAL_EXEC_PREFIX="$P" OPAL_BINDIR="$P/bin" OPAL_LIBDIR="$L/openmpi/lib"
export OPAL_DATADIR="$P/share" OPAL_PKGDATADIR="$P/share/openmpi" OPAL_SYSCONFDIR="$PREFIX/etc/openmpi"
export OPAL_INCLUDEDIR="$L/openmpi/include"
export OMPI_MCA_mca_base_component_path="$L/openmpi/lib/openmpi3"
export PMIX_INSTALL_PREFIX="$L/pmix2" PMIX_PREFIX="$L/pmix2" PMIX_MCA_mca_base_component_path="$L/pmix2/lib/pmix"
export PATH="$P/bin:$PATH"
export LD_LIBRARY_PATH="$L:$L/openmpi/lib:$L/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Root in containers; no ssh (one machine: the isolated launcher); no CMA single copy (ptrace is
# often barred in containers); no warnings about components left out of the bundle.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_plm_rsh_agent=false OMPI_MCA_btl="self,vader,tcp" OMPI_MCA_pml=ob1
export BUNDLE PREFIX P L
export -f stage_unpack
run_stage unpack 120 stage_unpack || { echo "gpu_check.sh: the bundle does not run here (logs/unpack.log)" >&2; report; exit 1; }

# ---- 2: configure -------------------------------------------------------------------------------
stage_configure() {
  set -e
  if [ -n "${TL_TORCH_PREFIX:-}" ]; then
    torch_prefix=$TL_TORCH_PREFIX
  else
    torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  fi
  if [ ! -f "$torch_prefix/Torch/TorchConfig.cmake" ] && [ ! -f "$torch_prefix/cmake/Torch/TorchConfig.cmake" ]; then
    echo "gpu_check.sh: no Torch/TorchConfig.cmake under '$torch_prefix' (python's torch.utils.cmake_prefix_path or TL_TORCH_PREFIX)"
    exit 1
  fi
  # OpenSSL: the machine's own libcrypto.so.3/libssl.so.3 where it has them (3.x keeps 3.0's ABI,
  # which the bundle's 3.0 headers compile against). Linking the bundle's 3.0 instead put it first
  # in tl's RPATH, and a library that loads the machine's newer libssl.so.3 (libtorch 2.6 on
  # Debian 13 does) then found no OPENSSL_3.2.0..3.4.0 symbols in it. The bundle's pair is the
  # fallback for a machine without OpenSSL 3.
  crypto="$L/tl-openssl/libcrypto.so" ssl="$L/tl-openssl/libssl.so"
  for d in $( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk '/libcrypto\.so\.3 .*x86-64/{print $NF}' | xargs -r -n1 dirname) \
           /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /lib64; do
    if [ -e "$d/libcrypto.so.3" ] && [ -e "$d/libssl.so.3" ]; then crypto="$d/libcrypto.so.3" ssl="$d/libssl.so.3"; break; fi
  done
  echo "OpenSSL: $crypto, $ssl"
  args=(-DCMAKE_BUILD_TYPE=Release -DTL_BUILD_TESTS=OFF -DTL_BUILD_BENCH=ON -DTL_WITH_CAIRO=OFF
        -DCMAKE_PREFIX_PATH="$P;$L/cmake;$torch_prefix"
        -Dfmt_DIR="$L/cmake/fmt" -Dspdlog_DIR="$L/cmake/spdlog" -DBoost_DIR="$L/cmake/Boost-1.74.0"
        -DCLI11_DIR="$P/share/cmake/CLI11" -Dnlohmann_json_DIR="$P/share/cmake/nlohmann_json"
        -DZLIB_INCLUDE_DIR="$P/include" -DZLIB_LIBRARY="$L/libz.so"
        -DJPEG_INCLUDE_DIR="$P/include" -DJPEG_LIBRARY="$L/libjpeg.so"
        -DOPENSSL_ROOT_DIR="$P" -DOPENSSL_INCLUDE_DIR="$P/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto"
        -DOPENSSL_SSL_LIBRARY="$ssl"
        -DMPI_CXX_COMPILER="$P/bin/mpicxx.openmpi" -DMPI_C_COMPILER="$P/bin/mpicc.openmpi"
        -DMPIEXEC_EXECUTABLE="$P/bin/mpirun")
  [ -z "${TL_CXX_STANDARD:-}" ] || args+=(-DCMAKE_CXX_STANDARD="$TL_CXX_STANDARD")
  if [ "$TL_GPU_CHECK_DEVICE" = cuda ]; then
    # CUDA: the toolkit of nvcc (or CUDA_HOME); NCCL: pip's nvidia-nccl package (its library is
    # libnccl.so.2 only, which find_library(nccl) would not take: named directly).
    nvcc=$(command -v nvcc || true)
    cuda_root=${CUDA_HOME:-${nvcc:+$(dirname "$(dirname "$(readlink -f "$nvcc")")")}}
    [ -n "$cuda_root" ] && args+=(-DCUDAToolkit_ROOT="$cuda_root")
    read -r nccl_root nccl_inc nccl_lib < <(python3 - <<'PY'
import glob, os
roots = []
try:
    import nvidia
    roots = [os.path.join(p, "nccl") for p in nvidia.__path__]
except Exception:
    pass
for r in roots:
    inc = glob.glob(os.path.join(r, "include", "nccl.h"))
    lib = sorted(glob.glob(os.path.join(r, "lib", "libnccl.so*")))
    if inc and lib:
        print(r, os.path.dirname(inc[0]), lib[0]); break
else:
    print("- - -")
PY
)
    echo "CUDA toolkit: ${cuda_root:-not found}; NCCL: $nccl_root ($nccl_lib)"
    args+=(-DTL_WITH_NCCL=ON)
    if [ "$nccl_root" != - ]; then
      args+=(-DNCCL_ROOT="$nccl_root" -DTL_NCCL_INCLUDE_DIR="$nccl_inc" -DTL_NCCL_LIBRARY="$nccl_lib")
    fi
  else
    args+=(-DTL_WITH_NCCL=OFF)
  fi
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  echo "cmake ${gen[*]} -S $SRC -B $BUILD ${args[*]}"
  cmake "${gen[@]}" -S "$SRC" -B "$BUILD" "${args[@]}"
}
export SRC BUILD
export -f stage_configure
run_stage configure 180 stage_configure || { echo "gpu_check.sh: configure failed (logs/configure.log)" >&2; report; exit 1; }

# ---- 3: build what the stages run ------------------------------------------------------------
TARGETS="tl-launch tl-data tl-ctl tl-run bench_context_switch bench_own_model"
stage_build() { cmake --build "$BUILD" -j "$JOBS" --target $TARGETS; }
export JOBS TARGETS
export -f stage_build
run_stage build 300 stage_build || { echo "gpu_check.sh: the build failed (logs/build.log, whole)" >&2; report; exit 1; }
BIN="$BUILD/launcher"
export BIN

# ---- 4: the stages ----------------------------------------------------------------------------
FAILED=0
if [ "$DEVICE" = cuda ]; then STEPS=${TL_GPU_CHECK_STEPS:-20}; else STEPS=${TL_GPU_CHECK_STEPS:-6}; fi
if [ "$DEVICE" = cuda ]; then F_STEPS=${TL_GPU_CHECK_INPLACE_STEPS:-10}; else F_STEPS=${TL_GPU_CHECK_INPLACE_STEPS:-6}; fi
H_STEPS=${TL_GPU_CHECK_DDP_STEPS:-20}  # stage h, on both devices (its CNN steps are cheap)
export STEPS F_STEPS H_STEPS
MPIRUN="mpirun --oversubscribe --bind-to none"
export MPIRUN LOGS

stage_a() { TL_GPU_CONSISTENCY_PARTS=matrix TMPDIR="$TMPDIR/tl-a" bench/gpu_consistency.sh "$BUILD" "$STEPS"; }
stage_c() { TL_GPU_CONSISTENCY_PARTS=overlap TL_GPU_OVERLAP_ROUNDS=${TL_GPU_OVERLAP_ROUNDS:-$([ "$TL_GPU_CHECK_DEVICE" = cuda ] && echo 2 || echo 1)} \
              TMPDIR="$TMPDIR/tl-c" bench/gpu_consistency.sh "$BUILD" "$STEPS"; }
# f: the job is 40 x the steps long; 10 on cuda (400 steps: time for four rescales, each at a
# step boundary, on a fast device), the rehearsal's 6 on cpu.
stage_f() { TL_GPU_CONSISTENCY_PARTS=inplace TMPDIR="$TMPDIR/tl-f" bench/gpu_consistency.sh "$BUILD" "$F_STEPS"; }
# b: ResNet-18, 4 ESTs on one process, exact reduction, with --gpu-comm nccl (NCCL set up on the
# device; a size-1 communicator starts no collective since 2026-12-06, and NCCL puts no two ranks
# on one GPU) and mpi: the same params_sha256.
stage_b() {
  set -e
  w="$TMPDIR/tl-b"; rm -rf "$w"; mkdir -p "$w"
  "$BIN/tl-data" synth --out "$w/data" --train 256 --test 32 --seed 5 >/dev/null
  for comm in nccl mpi; do
    $MPIRUN -np 1 "$BIN/tl-launch" --device cuda --gpu-comm $comm --dataset cifar10 --data-dir "$w/data" \
      --model resnet18 --logical-workers 4 --placement 4 --batch 16 --seed 7 --steps 12 --log-every 0 \
      --output-dir "$w/$comm" > "$w/$comm.log" 2>&1 || { cat "$w/$comm.log"; exit 1; }
    echo "RESULT $comm $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["params_sha256"], d["images_per_s"])' "$w/$comm/summary.json")"
  done
  a=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["params_sha256"])' "$w/nccl/summary.json")
  b=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["params_sha256"])' "$w/mpi/summary.json")
  [ "$a" = "$b" ] && echo "VERDICT same" || { echo "VERDICT DIFFERS"; exit 1; }
}
# h: tl against real PyTorch DDP on the device (tests/consistency/ddp_reference_test.sh's job on
# the GPU): the CNN (BatchNorm, dropout) on synthetic CIFAR-10, batch 8 per worker, SGD with
# momentum, H_STEPS steps. tl: 4 ESTs as 3,1 on 2 processes sharing the GPU (--gpu-comm mpi),
# exact reduction. DDP: bench/reference/ddp_reference.py --device, 4 ranks (gloo, one process per
# rank, all on cuda:0), the kernels tl asks for, trained twice in the same processes: with the
# exact averaging hook (float64 sum, one rounding) and with the fixed hook (tl's exact reduction's
# own arithmetic, fixed point with one scale per tensor: the two differ only where a gradient
# element lies ~2^19 below its tensor's largest; on this CNN from about step 18 on the CPU, see
# docs/reports/ddp_reference_torchscript.md). Both start from tl's initial weights (--steps 0
# --save-model) and draw the same data and dropout. Passed: against the fixed hook every step's
# loss the same float and the same final params_sha256 (bench/reference/compare_runs.py, which
# names the first step that differs); against exact averaging the same comparison is recorded,
# with the hook's count of mean-gradient elements where the two roundings part, step by step.
# PyTorch is the python3 on PATH (pip's on the GPU machine), as in stage d.
stage_h() {
  set -e
  local w py t0 t1 t2 t3 job n=4
  w="$TMPDIR/tl-h"; rm -rf "$w"; mkdir -p "$w"
  py=$(command -v python3)
  "$py" -c 'import torch; print("DDP python:", __import__("sys").executable, "torch", torch.__version__)'
  "$BIN/tl-data" synth --out "$w/data" --train 256 --test 64 --seed 5 >/dev/null
  job="--model cnn --dataset cifar10 --data-dir $w/data --batch 8 --seed 11 --optimizer sgd --lr 0.05
       --momentum 0.9 --dampening 0 --weight-decay 0 --lr-schedule constant --warmup-epochs 0
       --compute-threads 1 --augment off --workers 0 --log-every 0 --device $TL_GPU_CHECK_DEVICE
       --gpu-comm mpi --reduction exact --logical-workers $n"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  $MPIRUN -np 1 "$BIN/tl-launch" $job --steps 0 --save-model "$w/init.pt" --output-dir "$w/init" \
    > "$w/init.log" 2>&1 || { cat "$w/init.log"; exit 1; }
  t1=$(date +%s.%N)
  # shellcheck disable=SC2086
  $MPIRUN -np 2 "$BIN/tl-launch" $job --placement 3,1 --steps "$H_STEPS" --output-dir "$w/tl" \
    > "$w/tl.log" 2>&1 || { cat "$w/tl.log"; exit 1; }
  t2=$(date +%s.%N)
  "$py" bench/reference/ddp_reference.py --model cnn --dataset cifar10 --data-dir "$w/data" --batch 8 \
    --seed 11 --lr 0.05 --momentum 0.9 --threads 1 --steps "$H_STEPS" --device "$TL_GPU_CHECK_DEVICE" \
    --ranks $n --init "$w/init.pt" --averaging exact,fixed --out "$w/ddp" > "$w/ddp.log" 2>&1 || { cat "$w/ddp.log"; exit 1; }
  t3=$(date +%s.%N)
  echo "SECONDS init $(python3 -c "print(round($t1 - $t0, 1))") tl $(python3 -c "print(round($t2 - $t1, 1))") ddp $(python3 -c "print(round($t3 - $t2, 1))")"
  echo "DDP_SUMMARY $(cat "$w/ddp/fixed/summary.json")"
  echo "tl: 4 ESTs, 3,1 on 2 processes, --device $TL_GPU_CHECK_DEVICE; PyTorch DDP: 4 ranks"
  "$py" bench/reference/compare_runs.py "$w/tl" "$w/ddp/exact" "$H_STEPS" --label "DDP exact (recorded)" || true
  "$py" bench/reference/compare_runs.py "$w/tl" "$w/ddp/fixed" "$H_STEPS" --label "DDP fixed (asserted)"
}
# d: bench_own_model (tl-launch --model-file vs PyTorch on the same .pt), ResNet-18 and GPT.
# PyTorch is the python3 on PATH (pip's on the GPU machine), on the same device.
# On a GPU 8 timed steps after 4 warm-up ones (a step there takes milliseconds); the CPU rehearsal
# keeps --quick.
stage_d() {
  local steps="--quick"
  [ "$TL_GPU_CHECK_DEVICE" != cuda ] || steps="--rounds 1 --steps 8 --warmup 4"
  # shellcheck disable=SC2086
  TL_BENCH_PYTHON=$(command -v python3) "$BUILD/bench/bench_own_model" $steps --models resnet18,gpt --device "$TL_GPU_CHECK_DEVICE" || return 1
  # Whether PyTorch's foreach/fused optimizers (its CUDA default) give its single-tensor form's
  # bits, which tl's optimizers follow.
  python3 bench/reference/optimizer_bits.py --device "$TL_GPU_CHECK_DEVICE"
  # Where tl's ResNet-18 step spends what PyTorch's does not: its last 2 steps traced both ways
  # (tl-launch --trace-steps; own_model_step.py --trace, torch.profiler; PyTorch eager with the
  # deterministic kernels tl asks for), compared step by step: ATen ops, kernels, host waits for
  # the device, device busy time (bench/reference/trace_summary.py). The traces travel in
  # logs.tar.gz (logs/d-trace/, Chrome traces: ui.perfetto.dev).
  local own="$BUILD/bench-tmp/own_model" w="$LOGS/d-trace" n=8
  [ "$TL_GPU_CHECK_DEVICE" = cuda ] || n=3
  rm -rf "$w" && mkdir -p "$w"
  $MPIRUN -np 1 "$BIN/tl-launch" --model-file "$own/resnet18.pt" --dataset cifar10 --data-dir "$own/data" \
    --augment off --optimizer sgd --lr 0.05 --momentum 0.9 --batch 32 --workers 0 --compute-threads 1 \
    --logical-workers 1 --log-every 0 --control-bind none --device "$TL_GPU_CHECK_DEVICE" --steps $n \
    --trace-steps $((n - 1))-$n --output-dir "$w/tl" > "$w/tl.log" 2>&1 || { cat "$w/tl.log"; return 1; }
  grep "trace of steps" "$w/tl.log"
  python3 bench/reference/own_model_step.py time --model resnet18 --file "$own/resnet18.pt" --variants eagerdet \
    --device "$TL_GPU_CHECK_DEVICE" --warmup $((n - 2)) --steps 2 --trace "$w/eager.json" || return 1
  python3 bench/reference/trace_summary.py "$w/tl/trace/rank-0.json" "$w/eager.json" --labels tl,eager \
    --json "$w/summary.json" || return 1
  echo "TRACE_SUMMARY $(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(json.dumps({l: r["steps"] for l, r in zip(d["labels"], d["runs"])}))' "$w/summary.json")"
}
# e: the context-switch overhead on the device, and the exact reduction's share of a ResNet-18
# step (batch 32, 4 ESTs on one process) from tl-launch's epoch records: comm_s / total_s,
# against the fp32 reduction's.
stage_e() {
  set -e
  if [ "$TL_GPU_CHECK_DEVICE" = cuda ]; then cs="8 2"; rsteps=40; else cs="6 2"; rsteps=8; fi
  # shellcheck disable=SC2086
  "$BUILD/bench/bench_context_switch" $cs --device "$TL_GPU_CHECK_DEVICE"
  w="$TMPDIR/tl-e"; rm -rf "$w"; mkdir -p "$w"
  "$BIN/tl-data" synth --out "$w/data" --train 512 --test 32 --seed 5 >/dev/null
  for red in exact fp32; do
    $MPIRUN -np 1 "$BIN/tl-launch" --device "$TL_GPU_CHECK_DEVICE" --dataset cifar10 --data-dir "$w/data" \
      --model resnet18 --logical-workers 4 --placement 4 --batch 32 --seed 7 --steps $rsteps --log-every 0 \
      --reduction $red --output-dir "$w/$red" > "$w/$red.log" 2>&1 || { cat "$w/$red.log"; exit 1; }
    python3 - "$w/$red/metrics.jsonl" $red <<'PY'
import json, statistics, sys
recs = list(map(json.loads, open(sys.argv[1])))
ep = [r for r in recs if r.get("type") == "epoch"]
st = sorted((r["step"], r["time"]) for r in recs if r.get("type") == "step")
gaps = [b[1] - a[1] for a, b in zip(st, st[1:]) if a[0] >= 2]  # after two warm-up steps (and the exact mode's first-step replay)
comm = sum(r["comm_s"] for r in ep); total = sum(r["total_s"] for r in ep); steps = sum(r["steps"] for r in ep)
print("SHARE %s comm_s %.3f total_s %.3f steps %d share %.4f ms_per_step %.2f median_step_ms %.2f" % (
      sys.argv[2], comm, total, steps, comm / total if total else float("nan"),
      1000 * total / steps if steps else float("nan"), 1000 * statistics.median(gaps) if gaps else float("nan")))
PY
  done
}
# g: bench_recovery.sh on the device (no healthy-run comparison: ROUNDS=0).
stage_g() {
  local flags
  if [ "$TL_GPU_CHECK_DEVICE" = cuda ]; then flags="STEPS=64 EVERY=50 KILL_AT=60"; else flags="STEPS=24 EVERY=16 KILL_AT=20"; fi
  # shellcheck disable=SC2086
  # MPIRUN: one word here (tl-run --mpirun takes a program), not this script's mpirun line.
  # LEAD=0: the lead's kill (a fourth run) does not fit the stage's budget.
  env DEVICE="$TL_GPU_CHECK_DEVICE" ROUNDS=0 LEAD=0 MPIRUN=mpirun $flags bench/bench_recovery.sh "$BUILD" 2>&1 | tee "$TMPDIR/tl-g.out"
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  # passed: tl-run's recovered job and the cold restart end with the same bits
  grep -q '^params_sha256: .*(same)$' "$TMPDIR/tl-g.out"
}
export -f stage_a stage_b stage_c stage_d stage_e stage_f stage_g stage_h

# Budgets on 16 cores and one H100/H200 (docs/guide/gpu.md, from the 2-core rehearsal). What has
# never run on a GPU goes first (b: the exact reduction on NCCL, h: tl against PyTorch DDP on the
# GPU, c: overlap on CUDA streams, g: the recovery side stream, d: TorchScript models), then what
# ran on 2026-11-26 (a, f), then the overheads (e): a budget that runs short cuts the least new.
if wanted b; then
  if [ "$DEVICE" = cuda ]; then run_stage b 45 stage_b || FAILED=1
  else skip_stage b "GPU-only: NCCL needs CUDA devices (TL_GPU_CHECK_DEVICE=cpu)"; fi
fi
wanted h && { run_stage h 60 stage_h || FAILED=1; }
wanted c && { run_stage c 75 stage_c || FAILED=1; }
wanted g && { run_stage g 90 stage_g || FAILED=1; }
wanted d && { run_stage d 120 stage_d || FAILED=1; }
wanted a && { run_stage a 150 stage_a || FAILED=1; }
wanted f && { run_stage f 100 stage_f || FAILED=1; }
wanted e && { run_stage e 100 stage_e || FAILED=1; }
report
echo "== $(date -u +%H:%M:%S) done in $(($(date +%s) - T_START)) s: $OUTDIR/gpu_check.json"
exit $FAILED
