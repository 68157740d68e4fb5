#!/bin/bash
# bench_recovery: a rank SIGKILLed under tl-run (the job goes on from the last step boundary on
# the processes that remain), in place (tl-run's default: the survivors keep their processes) and
# by a restart (--recovery restart: the survivors write the job, a new mpirun resumes it), next
# to a cold restart from the last periodic checkpoint, measured in the same invocation.
# ResNet-18, N = 4, 4 -> 3 processes; in place also with the lead killed.
#
#   bench/bench_recovery.sh [BUILD_DIR]   (env: STEPS=64 EVERY=50 KILL_AT=60 BATCH=4 MODEL=resnet18
#                                          ROUNDS=3 OSTEPS=40 OBATCH=8 ONP=2 DEVICE= LEAD=1)
# DEVICE: tl-launch's --device for every run (unset: its default, the CPU); with cuda the
# processes share the GPU through --gpu-comm mpi (tl-launch's default, nccl, needs a GPU per
# process). ROUNDS=0 skips the healthy runs.
#
# First, what being recoverable costs while healthy: the same job under mpirun alone and under
# tl-run, in ROUNDS alternating rounds: the median step time of each, their ratio with a 95 %
# bootstrap interval (and each round's ratio), and peak memory summed over the processes
# (targets: <= 1.01x and <= 1.05x). Then, for a kill: seconds from the kill to the first step
# completed after it, completed steps recomputed, the mean step time before the kill, and the
# final params_sha256 (the two must agree).
set -euo pipefail
BUILD=${1:-build}
BIN=$(cd "$BUILD/launcher" && pwd)
STEPS=${STEPS:-64}
EVERY=${EVERY:-50}
KILL_AT=${KILL_AT:-60}
BATCH=${BATCH:-4}
MODEL=${MODEL:-resnet18}
MPIRUN=${MPIRUN:-mpirun}
ROUNDS=${ROUNDS:-3}       # alternating rounds of the healthy-run comparison
OSTEPS=${OSTEPS:-40}      # their steps
OBATCH=${OBATCH:-8}       # their batch per worker
ONP=${ONP:-2}             # their processes
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The cold restart resumes from the last periodic checkpoint before the kill: say so before
# minutes of healthy rounds, not after them.
if ! [ "$EVERY" -lt "$KILL_AT" ] || ! [ "$KILL_AT" -lt "$STEPS" ]; then
  echo "bench_recovery: EVERY ($EVERY) < KILL_AT ($KILL_AT) < STEPS ($STEPS) is needed: the cold restart resumes from the last periodic checkpoint before the kill" >&2
  exit 2
fi
WORK=$(mktemp -d /tmp/bench_recovery.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
# A command that fails ends the script (set -e): say which, with the runs' logs, before the
# work folder goes (the H200 check's stage g once ended here with no output at all).
on_error() {
  echo "bench_recovery: failed at line $1; the end of each run's log:" >&2
  for log in "$WORK"/*.log; do [ -f "$log" ] && { echo "== $log" >&2; tail -n 25 "$log" >&2; }; done
}
trap 'on_error $LINENO' ERR
"$BIN/tl-data" synth --out "$WORK/data" --train 512 --test 32 --seed 1 >/dev/null
DEVFLAG=""
[ -z "${DEVICE:-}" ] || DEVFLAG="--device $DEVICE"
[ "${DEVICE:-}" != cuda ] || DEVFLAG="$DEVFLAG --gpu-comm mpi"
JOB="$DEVFLAG --dataset cifar10 --data-dir $WORK/data --model $MODEL --logical-workers 4 --batch $BATCH --seed 3 --log-every 0 --steps $STEPS --checkpoint-every $EVERY"

last_step() { python3 - "$1" <<'PY'
import json, sys
last = -1
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if r.get("type") == "step": last = max(last, r["step"])
except FileNotFoundError: pass
print(last)
PY
}

# Kills the second rank process (mpirun's child) of the job writing to $1 once it passed step $2,
# or with $3 = lead the lead (the rank holding metrics.jsonl open); fails if the job ($RUN) ends
# before that.
kill_after() {
  until [ "$(last_step "$1/metrics.jsonl")" -ge "$2" ]; do
    if ! kill -0 "$RUN" 2>/dev/null; then
      echo "bench_recovery: the job writing to $1 ended before step $2; the end of its log:" >&2
      tail -n 20 "$1.log" >&2
      return 1
    fi
    sleep 0.05
  done
  local m victim
  m=$(pgrep -f "^[^ ]*mpirun .*--output-dir $1( |\$)" | head -1)
  victim=$(pgrep -P "$m" | sed -n 2p)
  if [ "${3:-}" = lead ]; then
    for p in $(pgrep -P "$m"); do
      if [ "$(readlink "/proc/$p/fd/"* 2>/dev/null | grep -c "^$1/metrics.jsonl\$")" -gt 0 ]; then victim=$p; fi
    done
  fi
  date +%s.%N > "$1.killed_at"
  kill -9 "$victim"
}

# Seconds from the kill to the first step the next launch completed and to the first step past
# the last one completed before (progress regained), completed steps recomputed, the mean step
# time of steps 5..KILL_AT-1, and the hash.
report() { python3 - "$1" "$(cat "$1.killed_at")" "$KILL_AT" <<'PY'
import json, sys
out, killed, kill_at = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
steps = [json.loads(l) for l in open(out + "/metrics.jsonl") if '"type":"step"' in l]
before = {}
for r in steps:
    if r["time"] < killed: before[r["step"]] = r["time"]
ts = [before[s] for s in sorted(before) if 5 <= s < kill_at]
mean = (ts[-1] - ts[0]) / (len(ts) - 1)
after = sorted((r for r in steps if r["time"] > killed), key=lambda r: r["time"])
# The killed launch may still record the step it had in flight (every other step waits for the
# dead rank): a record within two step times of the kill is that one, not the next launch's.
done = max(before)
if len(after) > 1 and after[0]["time"] - killed < 2 * mean and after[1]["time"] - after[0]["time"] > 2 * mean:
    done = max(done, after.pop(0)["step"])
first = after[0]
regained = min((r for r in after if r["step"] > done), key=lambda r: r["time"])
h = json.load(open(out + "/summary.json"))["params_sha256"]
print(f"{first['time'] - killed:.2f} {regained['time'] - killed:.2f} {done - first['step'] + 1} {mean:.3f} {h}")
PY
}

# 0) What being recoverable costs while healthy: the same job (no checkpoints, no kill) under
#    mpirun alone and under tl-run, in alternating rounds. Step times from the lead's step
#    records (steps 4 on), peak RSS summed over the processes from summary.json.
OJOB="$DEVFLAG --dataset cifar10 --data-dir $WORK/data --model $MODEL --logical-workers 4 --batch $OBATCH --seed 3 --log-every 0 --steps $OSTEPS"
if [ "$ROUNDS" -gt 0 ]; then
for r in $(seq 1 "$ROUNDS"); do
  $MPIRUN --oversubscribe -np "$ONP" "$BIN/tl-launch" $OJOB --output-dir "$WORK/plain$r" > "$WORK/plain$r.log" 2>&1
  "$BIN/tl-run" --np "$ONP" --max-restarts 1 --hang-timeout 60 --mpirun "$MPIRUN" --mpirun-args "--oversubscribe" \
    -- $OJOB --output-dir "$WORK/guarded$r" > "$WORK/guarded$r.log" 2>&1
done
OVERHEAD=$(python3 - "$WORK" "$ROUNDS" <<'PY'
import json, random, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def steps(out):
    t = sorted((r["step"], r["time"]) for r in map(json.loads, open(out + "/metrics.jsonl")) if r.get("type") == "step")
    return [b[1] - a[1] for a, b in zip(t, t[1:]) if a[0] >= 4]
def summary(out): return json.load(open(out + "/summary.json"))
plain, guarded, per_round, mem_p, mem_g, shas = [], [], [], [], [], set()
for r in range(1, rounds + 1):
    p, g = steps(f"{work}/plain{r}"), steps(f"{work}/guarded{r}")
    plain += p; guarded += g
    per_round.append(statistics.median(g) / statistics.median(p))
    sp, sg = summary(f"{work}/plain{r}"), summary(f"{work}/guarded{r}")
    mem_p.append(sp["peak_rss_mb_sum"]); mem_g.append(sg["peak_rss_mb_sum"])
    shas |= {sp["params_sha256"], sg["params_sha256"]}
ratio = statistics.median(guarded) / statistics.median(plain)
rng = random.Random(1)
boot = sorted(statistics.median(rng.choices(guarded, k=len(guarded))) / statistics.median(rng.choices(plain, k=len(plain)))
              for _ in range(2000))
mp, mg = statistics.median(mem_p), statistics.median(mem_g)
print(f"{statistics.median(plain):.4f} {statistics.median(guarded):.4f} {ratio:.3f} {boot[50]:.3f} {boot[1949]:.3f} "
      f"{' '.join(f'{x:.3f}' for x in per_round)}|{mp:.0f} {mg:.0f} {mg / mp:.3f}|{'same' if len(shas) == 1 else 'DIFFERENT'}")
PY
)
IFS='|' read -r O_STEP O_MEM O_SHA <<< "$OVERHEAD"
read -r P_MED G_MED O_RATIO O_LO O_HI O_ROUNDS <<< "$O_STEP"
read -r P_MEM G_MEM M_RATIO <<< "$O_MEM"
else
  O_SHA=skipped P_MED=- G_MED=- O_RATIO=- O_LO=- O_HI=- O_ROUNDS=- P_MEM=- G_MEM=- M_RATIO=-
fi

# 1) tl-run in place: the survivors go on in their processes at the last step boundary.
I="$WORK/inplace"
"$BIN/tl-run" --np 4 --max-restarts 1 --hang-timeout 60 --mpirun "$MPIRUN" --mpirun-args "--oversubscribe" \
  -- $JOB --output-dir "$I" > "$WORK/inplace.log" 2>&1 &
RUN=$!
kill_after "$I" "$KILL_AT"
wait $RUN
read -r I_S I_R I_LOST I_STEP I_HASH < <(report "$I")

# 1a) The same with the lead killed: the lowest surviving rank takes over its duties (LEAD=0
#     skips it: the GPU check's budget).
if [ "${LEAD:-1}" = 1 ]; then
  L="$WORK/inplace-lead"
  "$BIN/tl-run" --np 4 --max-restarts 1 --hang-timeout 60 --grow-back off --mpirun "$MPIRUN" --mpirun-args "--oversubscribe" \
    -- $JOB --output-dir "$L" > "$WORK/inplace-lead.log" 2>&1 &
  RUN=$!
  kill_after "$L" "$KILL_AT" lead
  wait $RUN
  read -r L_S L_R L_LOST L_STEP L_HASH < <(report "$L")
else
  L_S=- L_R=- L_LOST=- L_STEP=- L_HASH=
fi

# 1b) tl-run --recovery restart: the survivors' copy of the last step boundary, a new mpirun.
A="$WORK/recover"
"$BIN/tl-run" --np 4 --max-restarts 1 --hang-timeout 60 --recovery restart --mpirun "$MPIRUN" --mpirun-args "--oversubscribe" \
  -- $JOB --output-dir "$A" > "$WORK/recover.log" 2>&1 &
RUN=$!
kill_after "$A" "$KILL_AT"
wait $RUN
read -r A_S A_R A_LOST A_STEP A_HASH < <(report "$A")

# 2) Cold restart: mpirun ends the job; a new mpirun on 3 processes resumes the last periodic
#    checkpoint at once (no human in the loop).
B="$WORK/cold"
( $MPIRUN --oversubscribe -np 4 "$BIN/tl-launch" $JOB --output-dir "$B" > "$WORK/cold.log" 2>&1 || true ) &
RUN=$!
kill_after "$B" "$KILL_AT"
wait $RUN || true
# The device flags are not part of the job's definition: a resume names them again.
$MPIRUN --oversubscribe -np 3 "$BIN/tl-launch" --resume "$B/checkpoint" $DEVFLAG --output-dir "$B" >> "$WORK/cold.log" 2>&1
read -r B_S B_R B_LOST B_STEP B_HASH < <(report "$B")

echo "bench_recovery, healthy runs: $MODEL, N = 4, batch $OBATCH per worker, $ONP processes, $OSTEPS steps, $ROUNDS alternating rounds, $(nproc) cores"
printf "| %-22s | %18s | %22s |\n" "run" "median step s" "peak RSS MB (summed)"
printf "|%s|%s|%s|\n" "------------------------" "--------------------" "------------------------"
printf "| %-22s | %18s | %22s |\n" "mpirun tl-launch" "$P_MED" "$P_MEM"
printf "| %-22s | %18s | %22s |\n" "tl-run (recoverable)" "$G_MED" "$G_MEM"
echo "ratio tl-run / alone: step time $O_RATIO (95 % interval $O_LO-$O_HI; per round $O_ROUNDS; target <= 1.01), peak memory $M_RATIO (target <= 1.05); params_sha256 $O_SHA"
echo
echo "bench_recovery: $MODEL, N = 4, batch $BATCH per worker, 4 -> 3 processes after SIGKILL at step $KILL_AT, periodic checkpoint every $EVERY steps, $(nproc) cores"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "run" "kill -> next step s" "kill -> progress regained s" "completed steps recomputed" "step s before kill"
printf "|%s|%s|%s|%s|%s|\n" "------------------------------------" "---------------------" "-----------------------------" "----------------------------" "--------------------"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "tl-run in place (default)" "$I_S" "$I_R" "$I_LOST" "$I_STEP"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "tl-run in place, the lead killed" "$L_S" "$L_R" "$L_LOST" "$L_STEP"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "tl-run --recovery restart" "$A_S" "$A_R" "$A_LOST" "$A_STEP"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "cold restart from checkpoint" "$B_S" "$B_R" "$B_LOST" "$B_STEP"
python3 -c "print(f'ratio in place / restart: to the next step {float(\"$I_S\")/float(\"$A_S\"):.2f}' + ('' if '$L_S' == '-' else f' (the lead killed: {float(\"$L_S\")/float(\"$A_S\"):.2f})'))"
python3 -c "print(f'ratio tl-run restart / cold restart: to the next step {float(\"$A_S\")/float(\"$B_S\"):.2f}, to progress regained {float(\"$A_R\")/float(\"$B_R\"):.2f}, step time {float(\"$A_STEP\")/float(\"$B_STEP\"):.3f}')"
echo "params_sha256: in place $I_HASH, the lead killed ${L_HASH:-skipped}, tl-run restart $A_HASH, cold restart $B_HASH ($([ "$I_HASH" = "$A_HASH" ] && { [ -z "$L_HASH" ] || [ "$L_HASH" = "$A_HASH" ]; } && [ "$A_HASH" = "$B_HASH" ] && echo same || echo DIFFERENT))"
