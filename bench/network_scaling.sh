#!/usr/bin/env bash
# What a network costs tl, on the namespace cluster (tests/cluster/nscluster.sh; needs root):
# data-parallel training with one process per host, every host's link shaped with
# `nscluster.sh shape RATE` (tc tbf both ways; `off`: unshaped veth), and per setup
#   - PyTorch DDP over gloo (bench/reference/ddp_speed.py on the same namespace hosts),
#   - tl --reduction fp32,
#   - tl --reduction exact (this build; its sums travel in the compact encoding between hosts),
#   - tl --reduction exact with TL_RING_ENCODING=plain (the same build, sums as plain int64),
#   - with --before DIR, fp32 and exact of another build (e.g. main before a change to the
#     reduction),
# run in alternating rounds in one invocation. Throughput is the median step time after two
# warm-up steps (tl: from metrics.jsonl's step times; DDP: ddp_speed.py's median), as images/s
# of the whole job. Bytes each host sends per step are the difference of eth0's transmit
# counters between a run of 2S and one of S steps, over S (start-up traffic cancels out), taken
# in the first round, against the ring figure 2(N-1)/N x fp32 gradient bytes. The share of
# communication for fp32 is 1 - t(shared memory) / t(link), with t(shared memory) the same tl
# fp32 job on one host (all N processes on the head, Open MPI's shared memory), measured in the
# same rounds: the namespace hosts share this machine's cores, so compute is alike in both.
#
# With --overlap-off, tl fp32 and exact also run with --overlap off, and each table says how
# much of the communication overlap hid: (t_off - t_on) / (t_off - t_shared_memory).
#
# usage: bench/network_scaling.sh [--build DIR] [--before DIR] [--hosts "2 4"]
#          [--rates "1gbit 10gbit off"] [--models "resnet18 resnet20"] [--steps S] [--rounds R]
#          [--no-ddp] [--overlap-off] [--out DIR]
# Models: resnet18 (CIFAR ResNet-18, batch 8 per process), resnet20 (batch 32 per process),
# gpt (examples/gpt's model exported at 4 layers, width 256, context 64, from a character corpus
# of this repository's docs; batch 2 sequences per process, AdamW; "images/s" are sequences/s).
# Writes OUT/network_scaling.csv and OUT/images_per_s_<model>_<N>hosts.png (tl-report), and
# prints one table per setup. Exit 77 where namespaces cannot be made.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build BEFORE="" HOSTS="2 4" RATES="1gbit 10gbit off" MODELS="resnet18 resnet20"
STEPS=6 ROUNDS=3 DDP=1 OUT="" OVERLAP_OFF=0
while (($#)); do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --before) BEFORE=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --no-ddp) DDP=0; shift ;;
    --overlap-off) OVERLAP_OFF=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "network_scaling: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
BUILD=$(cd "$BUILD" && pwd)
[[ -x $BUILD/launcher/tl-launch ]] || { echo "network_scaling: no tl-launch in $BUILD/launcher" >&2; exit 2; }
if [[ -n $BEFORE ]]; then
  BEFORE=$(cd "$BEFORE" && pwd)
  [[ -x $BEFORE/launcher/tl-launch ]] || { echo "network_scaling: no tl-launch in $BEFORE/launcher" >&2; exit 2; }
fi
[[ $STEPS =~ ^[1-9][0-9]*$ && $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "network_scaling: --steps and --rounds must be positive integers" >&2; exit 2; }
for m in $MODELS; do [[ $m == resnet18 || $m == resnet20 || $m == gpt ]] || { echo "network_scaling: unknown model '$m' (resnet18, resnet20, gpt)" >&2; exit 2; }; done
maxhosts=0
for n in $HOSTS; do
  [[ $n =~ ^[1-9][0-9]*$ && $n -ge 2 ]] || { echo "network_scaling: --hosts takes counts >= 2, got '$n'" >&2; exit 2; }
  ((n > maxhosts)) && maxhosts=$n
done
if ((DDP)) && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "network_scaling: /usr/bin/python3 cannot import torch (PyTorch DDP runs need python3-torch; --no-ddp leaves them out)" >&2
  exit 2
fi
NSC=$ROOT/tests/cluster/nscluster.sh
WORK=$BUILD/bench-tmp/network_scaling   # every host sees it (each has its own /tmp)
OUT=${OUT:-$WORK}
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
OUT=$(cd "$OUT" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if ! why=$("$NSC" check); then echo "network_scaling: cannot run: $why" >&2; exit 77; fi
export NSC_OWNER=$$
NSC_PREFIX=$("$NSC" up "$maxhosts")
export NSC_PREFIX
trap '"$NSC" down' EXIT

"$BUILD/launcher/tl-data" synth --out "$WORK/data" --train 4096 --test 16 --seed 1 >/dev/null
GPT_SEQ=64
if [[ " $MODELS " == *" gpt "* ]]; then
  /usr/bin/python3 "$ROOT/examples/gpt/prepare_data.py" --out "$WORK/corpus" \
    --source "$ROOT/README.md" "$ROOT/docs/design" >/dev/null
  /usr/bin/python3 "$ROOT/examples/gpt/export.py" --data "$WORK/corpus" --out "$WORK/gpt.pt" \
    --seq-len "$GPT_SEQ" --layers 4 --width 256 --heads 4
  GPT_VOCAB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$WORK/corpus/meta.json")
fi

batch_of() { case $1 in resnet18) echo 8 ;; resnet20) echo 32 ;; gpt) echo 2 ;; esac; }
tl_model() {  # the model and data flags of tl-launch
  case $1 in
    resnet18) echo "--model resnet18 --dataset cifar10 --data-dir $WORK/data" ;;
    resnet20) echo "--model resnet --depth 20 --dataset cifar10 --data-dir $WORK/data" ;;
    gpt) echo "--model-file $WORK/gpt.pt --model-returns loss --optimizer adamw --lr 0.002 --dataset tokens" \
           "--data-dir $WORK/corpus --seq-len $GPT_SEQ" ;;
  esac
}
ddp_model() {  # the model flags of ddp_speed.py
  if [[ $1 == gpt ]]; then echo "--model-file $WORK/gpt.pt --seq-len $GPT_SEQ --vocab $GPT_VOCAB"; else echo "--model $1"; fi
}
hostlist() { local n=$1 i s=""; for ((i = 1; i <= n; i++)); do s+="${s:+,}h$i:1"; done; echo "$s"; }
tx() { "$NSC" exec "$1" cat /sys/class/net/eth0/statistics/tx_bytes; }
tx_all() { local n=$1 i s=""; for ((i = 1; i <= n; i++)); do s+="${s:+ }$(tx "h$i")"; done; echo "$s"; }

# tl STEPS OUT N MODEL REDUCTION BIN [where [encoding [overlap]]]: where = hosts (one process
# per host) or shm (all on the head); encoding: TL_RING_ENCODING (auto unless given); overlap:
# --overlap (on unless given). Prints the median step time in seconds (from metrics.jsonl,
# steps >= 3).
tl_run() {
  local steps=$1 out=$2 n=$3 model=$4 reduction=$5 bin=$6 where=${7:-hosts} encoding=${8:-auto}
  local overlap=${9:-on}
  # shellcheck disable=SC2046
  local flags=($(tl_model "$model") --logical-workers "$n"
               --batch "$(batch_of "$model")" --seed 1 --reduction "$reduction" --compute-threads 1
               --workers 1 --log-every 0 --control-bind none --steps "$steps" --output-dir "$out"
               --overlap "$overlap")
  if [[ $where == shm ]]; then
    "$NSC" mpirun --host "head:$n" -np "$n" -x TL_RING_ENCODING="$encoding" "$bin/launcher/tl-launch" \
      "${flags[@]}" >"$out.log" 2>&1
  else
    "$NSC" mpirun --host "$(hostlist "$n")" -np "$n" -x TL_RING_ENCODING="$encoding" "$bin/launcher/tl-launch" \
      "${flags[@]}" >"$out.log" 2>&1
  fi || { echo "network_scaling: tl-launch failed, see $out.log:" >&2; tail -5 "$out.log" >&2; exit 1; }
  python3 - "$out/metrics.jsonl" <<'EOF'
import json, statistics, sys
t = [r["time"] for r in map(json.loads, open(sys.argv[1])) if r.get("type") == "step" and r["step"] >= 2]
print(statistics.median(b - a for a, b in zip(t, t[1:])))
EOF
}

# ddp STEPS OUT N MODEL: PyTorch DDP (gloo over eth0) on h1..hN; prints the median step time.
ddp_run() {
  local steps=$1 out=$2 n=$3 model=$4
  # shellcheck disable=SC2046
  "$NSC" mpirun --host "$(hostlist "$n")" -np "$n" -x GLOO_SOCKET_IFNAME=eth0 \
    /usr/bin/python3 "$ROOT/bench/reference/ddp_speed.py" $(ddp_model "$model") --batch "$(batch_of "$model")" \
    --steps "$steps" --warmup 2 --threads 1 --master-addr "$("$NSC" addr h1)" >"$out.log" 2>&1 ||
    { echo "network_scaling: ddp_speed.py failed, see $out.log:" >&2; tail -5 "$out.log" >&2; exit 1; }
  python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]["step_ms"] / 1000)' "$out.log"
}

systems=()
((DDP)) && systems+=(ddp)
systems+=(fp32 exact exact_plain)
[[ -n $BEFORE ]] && systems+=(fp32_before exact_before)
((OVERLAP_OFF)) && systems+=(fp32_nooverlap exact_nooverlap)
run_system() {  # SYSTEM STEPS OUT N MODEL
  case $1 in
    ddp) ddp_run "$2" "$3" "$4" "$5" ;;
    fp32) tl_run "$2" "$3" "$4" "$5" fp32 "$BUILD" ;;
    exact) tl_run "$2" "$3" "$4" "$5" exact "$BUILD" ;;
    exact_plain) tl_run "$2" "$3" "$4" "$5" exact "$BUILD" hosts plain ;;
    fp32_nooverlap) tl_run "$2" "$3" "$4" "$5" fp32 "$BUILD" hosts auto off ;;
    exact_nooverlap) tl_run "$2" "$3" "$4" "$5" exact "$BUILD" hosts auto off ;;
    fp32_before) tl_run "$2" "$3" "$4" "$5" fp32 "$BEFORE" ;;
    exact_before) tl_run "$2" "$3" "$4" "$5" exact "$BEFORE" ;;
  esac
}

CSV=$OUT/network_scaling.csv
echo "hosts,rate,rate_gbit,model,system,step_s,images_per_s,bytes_per_step,params" >"$CSV"
echo "network_scaling: systems ${systems[*]}; hosts $HOSTS; links $RATES; models $MODELS; $STEPS/$((2 * STEPS)) steps, $ROUNDS rounds"
for n in $HOSTS; do
  for model in $MODELS; do
    # The shared-memory reference of the communication share (links do not matter to it).
    shm=()
    for rate in $RATES; do
      "$NSC" shape "$rate"
      declare -A times=() bytes=()
      for ((r = 1; r <= ROUNDS; r++)); do
        for sys in "${systems[@]}"; do
          d=$WORK/${n}h_${model}_${rate}_${sys}_$r
          if ((r == 1)); then
            before=($(tx_all "$n")); run_system "$sys" "$STEPS" "${d}_short" "$n" "$model" >/dev/null
            mid=($(tx_all "$n")); t=$(run_system "$sys" "$((2 * STEPS))" "$d" "$n" "$model")
            after=($(tx_all "$n"))
            per=()
            for ((i = 0; i < n; i++)); do per+=($(((after[i] - mid[i] - (mid[i] - before[i])) / STEPS))); done
            bytes[$sys]=${per[*]}
          else
            t=$(run_system "$sys" "$((2 * STEPS))" "$d" "$n" "$model")
          fi
          times[$sys]+="$t "
        done
        if [[ $rate == "${RATES%% *}" ]]; then
          shm+=("$(tl_run "$((2 * STEPS))" "$WORK/${n}h_${model}_shm_$r" "$n" "$model" fp32 "$BUILD" shm)")
        fi
      done
      params=$(grep -hoE '\(([0-9]+) parameters\)' "$WORK/${n}h_${model}_${rate}_fp32_1.log" | grep -oE '[0-9]+' | head -1)
      for sys in "${systems[@]}"; do
        python3 - "$CSV" "$n" "$rate" "$model" "$sys" "$(batch_of "$model")" "$params" "${bytes[$sys]}" ${times[$sys]} <<'EOF'
import statistics, sys
csv, n, rate, model, system, batch, params, per_host = sys.argv[1:9]
times = [float(t) for t in sys.argv[9:]]
step = statistics.median(times)
gbit = {"off": ""}.get(rate, rate.replace("gbit", "").replace("mbit", "e-3").replace("kbit", "e-6"))
gbit = "" if gbit == "" else f"{float(gbit):g}"
b = round(statistics.median(int(x) for x in per_host.split()))
with open(csv, "a") as f:
    f.write(f"{n},{rate},{gbit},{model},{system},{step:.4f},{int(n) * int(batch) / step:.2f},{b},{params}\n")
EOF
      done
      unset times bytes
    done
    echo "${shm[*]}" >"$WORK/${n}h_${model}_shm_times"
  done
done
"$NSC" shape off

status=0
python3 - "$CSV" "$WORK" <<'EOF' || status=$?
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
work = sys.argv[2]
names = {"ddp": "PyTorch DDP (gloo)", "fp32": "tl fp32", "exact": "tl exact (compact sums)",
         "exact_plain": "tl exact (int64 sums: TL_RING_ENCODING=plain)",
         "fp32_before": "tl fp32 (--before build)", "exact_before": "tl exact (--before build)",
         "fp32_nooverlap": "tl fp32, --overlap off", "exact_nooverlap": "tl exact, --overlap off"}
setups = list(dict.fromkeys((int(r["hosts"]), r["model"], r["rate"]) for r in rows))  # run order
for n, model, rate in setups:
    sel = {r["system"]: r for r in rows if (int(r["hosts"]), r["model"], r["rate"]) == (n, model, rate)}
    params = int(sel["fp32"]["params"])
    ring = 2 * (n - 1) / n * 4 * params
    shm = statistics.median(float(t) for t in open(f"{work}/{n}h_{model}_shm_times").read().split())
    fp32 = float(sel["fp32"]["step_s"])
    print(f"\n{n} hosts x 1 process, {model}, link {'unshaped' if rate == 'off' else rate}: "
          f"fp32 communication share {max(0.0, 1 - shm / fp32):.0%} "
          f"(shared-memory step {shm:.3f} s, linked {fp32:.3f} s); ring figure "
          f"2(N-1)/N x fp32 gradient = {ring:.0f} bytes")
    print("| system | images/s | vs DDP | vs tl fp32 | bytes/host/step | vs ring fp32 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in ("ddp", "fp32", "exact", "exact_plain", "fp32_before", "exact_before", "fp32_nooverlap",
                "exact_nooverlap"):
        if key not in sel:
            continue
        r = sel[key]
        ips = float(r["images_per_s"])
        vs_ddp = f"{ips / float(sel['ddp']['images_per_s']):.2f}" if "ddp" in sel else "-"
        print(f"| {names[key]} | {ips:.1f} | {vs_ddp} | {ips / float(sel['fp32']['images_per_s']):.2f} | "
              f"{round(float(r['bytes_per_step']))} | {float(r['bytes_per_step']) / ring:.2f} |")
    for mode in ("fp32", "exact"):
        if f"{mode}_nooverlap" in sel:
            on, off = float(sel[mode]["step_s"]), float(sel[f"{mode}_nooverlap"]["step_s"])
            print(f"overlap hid {max(0.0, off - on) / max(1e-9, off - shm):.0%} of tl {mode}'s communication "
                  f"(step {off:.3f} s with --overlap off, {on:.3f} s with it on, {shm:.3f} s in shared memory)")

# The bytes check: every tl run of one job (hosts, model, fp32 or exact, any link, any round,
# this build or --before's) trained the same params_sha256.
import glob, json, re
hashes = {}
for path in glob.glob(f"{work}/*h_*_*_*_[0-9]*/summary.json"):
    m = re.match(r"(\d+)h_(\w+?)_([^_]+)_(fp32|exact|exact_plain|exact_before|fp32_nooverlap|exact_nooverlap)_(\d+)$",
                 path.split("/")[-2])
    if m:
        family = "fp32" if m.group(4).startswith("fp32") else "exact"
        hashes.setdefault((m.group(1), m.group(2), family), set()).add(json.load(open(path))["params_sha256"])
bad = {k: v for k, v in hashes.items() if len(v) != 1}
print()
for (n, model, family), v in sorted(hashes.items()):
    print(f"{n} hosts, {model}, tl {family}: {'one params_sha256 ' + next(iter(v))[:16] + '...' if len(v) == 1 else 'DIFFERENT params_sha256: ' + ', '.join(sorted(v))}")
sys.exit(1 if bad else 0)
EOF

# One plot per model and host count: images/s against link speed, one line per system.
for n in $HOSTS; do
  for model in $MODELS; do
    series=""
    for sys in "${systems[@]}"; do
      f=$WORK/plot_${n}_${model}_${sys}.csv
      { echo "gbit,images_per_s"; awk -F, -v n="$n" -v m="$model" -v s="$sys" \
          'NR > 1 && $1 == n && $4 == m && $5 == s && $3 != "" {print $3 "," $7}' "$CSV" | sort -t, -k1 -g; } >"$f"
      case $sys in
        ddp) label="PyTorch DDP" ;;
        fp32_before) label="tl fp32 (before)" ;;
        exact_before) label="tl exact (before)" ;;
        exact) label="tl exact (compact)" ;;
        exact_plain) label="tl exact (int64)" ;;
        fp32_nooverlap) label="tl fp32, overlap off" ;;
        exact_nooverlap) label="tl exact, overlap off" ;;
        *) label="tl $sys" ;;
      esac
      [[ $(wc -l <"$f") -gt 1 ]] && series+="${series:+;}$label=$f:gbit:images_per_s"
    done
    [[ -z $series ]] || "$BUILD/launcher/tl-report" plot --out "$OUT/images_per_s_${model}_${n}hosts.png" \
      --title "$model, $n hosts x 1 process: images/s against link speed" --x-label "link Gbit/s" \
      --y-label "images/s" --markers --series "$series" >/dev/null
  done
done
echo
echo "CSV: $CSV; plots: $OUT/images_per_s_*.png"
exit "$status"
