#!/usr/bin/env bash
# tl-sched against tl-sim: a trace of real tl jobs on 4 process slots of two emulated speeds
# (2 "fast", 2 "slow" at half speed: tl-launch --emulate-slowdown 2) under a policy, and
# tl-sim's prediction for the same trace from profiles measured by this script in the same
# invocation (the machine is shared: speeds measured an hour earlier would not hold).
#
#  1. profiles: each (kind, processes) of the jobs' model runs alone for a short while;
#     samples/s = its summary.json images/s; the start-up cost = wall time of mpirun minus
#     the training time;
#  2. tl-sched runs the trace with those profiles (the policy's decisions use them);
#  3. tl-sim runs the same trace, cluster and profiles, with the start-up cost and the mean
#     in-place pause that step 2's jobs measured as the rescale cost, its policies held to what
#     real jobs can do as tl-sched holds them (--in-place-only);
#  4. per job: real JCT, simulated JCT, error; the mean absolute percentage error;
#  5. with --against P: steps 1, 3 and 4 again under policy P on the same trace (profiles
#     measured again just before its run: the shared machine's speed drifts over minutes),
#     and the two policies' real mean JCTs side by side.
#
# Jobs use a stand-in device (--device sim:RATE: each micro-batch takes batch/RATE s, no core
# used), so the loaded 2-core machine disturbs them less than real training would.
#
# usage: bench/sched_real.sh [BUILD_DIR] [--short|--contention] [--policy P] [--against P2]
#   P, P2: hetero-goodput (tl-sched's default), elastic or yarn-cs.
#   default: 8 jobs arriving over 3.5 min (about 6 min in all); --short: 4 jobs (about 2 min);
#   --contention: 8 jobs arriving within 35 s on the 4 slots, so that jobs queue (issue 30);
#   --against doubles the time.
set -euo pipefail
BUILD="build"
SHORT=0
CONTENTION=0
POLICY=hetero-goodput
AGAINST=""
while [ $# -gt 0 ]; do
  case "$1" in
    --short) SHORT=1 ;;
    --contention) CONTENTION=1 ;;
    --policy) POLICY="$2"; shift ;;
    --against) AGAINST="$2"; shift ;;
    *) BUILD="$1" ;;
  esac
  shift
done
BIN="$BUILD/launcher"
SCHED="$BIN/sched/tl-sched"
SIM="$BIN/sched/tl-sim"
WORK="${TMPDIR:-/tmp}/tl-bench-sched-real"
rm -rf "$WORK" && mkdir -p "$WORK"
"$BIN/tl-data" synth --out "$WORK/cifar" --train 512 --test 16 --seed 5 >/dev/null

MODEL=cnn
BATCH=8
ESTS=2
RATE=400
FLAGS="--dataset cifar10 --data-dir $WORK/cifar --device sim:$RATE --seed 7 --log-every 0"
MPI=(mpirun --oversubscribe --bind-to none)
if [ "$(id -u)" -eq 0 ]; then MPI+=(--allow-run-as-root); fi

# 1. Profiles: measure_profiles TAG writes $WORK/profiles$TAG.csv and sets START_COST.
PROFILE_STEPS=150
measure_profiles() {
local tag="$1" kind name slowdown p emulate out t0 t1 rate wall
echo "model,kind,gpus,samples_per_s" > "$WORK/profiles$tag.csv"
: > "$WORK/start_costs$tag"
for kind in fast:1 slow:2; do
  name=${kind%%:*}
  slowdown=${kind##*:}
  for p in 1 2; do
    emulate=""
    if [ "$slowdown" != 1 ]; then emulate="--emulate-slowdown $(printf "$slowdown%.0s," $(seq $p) | sed 's/,$//')"; fi
    out="$WORK/profile$tag-$name-$p"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    "${MPI[@]}" -np "$p" "$BIN/tl-launch" --model $MODEL --batch $BATCH --logical-workers $ESTS \
      --steps $PROFILE_STEPS $FLAGS $emulate --control-bind none --output-dir "$out" >"$out.log" 2>&1
    t1=$(date +%s.%N)
    read -r rate wall < <(/usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(s['images_per_s'], s['wall_time_s'])" "$out/summary.json")
    echo "$MODEL,$name,$p,$rate" >> "$WORK/profiles$tag.csv"
    awk -v a="$t0" -v b="$t1" -v w="$wall" 'BEGIN { printf "%.3f\n", (b - a) - w }' >> "$WORK/start_costs$tag"
  done
done
START_COST=$(awk '{ s += $1 } END { printf "%.2f", s / NR }' "$WORK/start_costs$tag")
echo "measured profiles$tag (samples/s; start-up cost ${START_COST} s):"
sed 's/^/  /' "$WORK/profiles$tag.csv"
}
measure_profiles ""

# 2. The trace: jobs of min 1, max 2 slots, N = 2 ESTs, work as seconds on one fast slot.
fast1=$(awk -F, '$2=="fast" && $3==1 { print $4 }' "$WORK/profiles.csv")
if [ "$SHORT" = 1 ]; then
  ARRIVALS=(0 8 16 30); SECONDS_ON_ONE=(40 25 30 20)
elif [ "$CONTENTION" = 1 ]; then
  # More arrivals than slots: the last four wait for a slot under either policy.
  ARRIVALS=(0 5 10 15 20 25 30 35); SECONDS_ON_ONE=(60 40 50 30 45 35 55 25)
else
  ARRIVALS=(0 15 30 60 90 120 160 210); SECONDS_ON_ONE=(80 50 60 40 70 45 55 35)
fi
echo "id,arrival_s,model,work_samples,min_gpus,max_gpus,ests" > "$WORK/trace.csv"
for i in "${!ARRIVALS[@]}"; do
  steps=$(awk -v s="${SECONDS_ON_ONE[$i]}" -v r="$fast1" -v g=$((BATCH * ESTS)) 'BEGIN { printf "%d", s * r / g + 0.5 }')
  echo "job$i,${ARRIVALS[$i]},$MODEL,$((steps * BATCH * ESTS)),1,2,$ESTS" >> "$WORK/trace.csv"
done
echo "trace:"; sed 's/^/  /' "$WORK/trace.csv"

# 3.-4. Real, simulated, and the comparison (one policy).
SLOTS="fast:2,slow:2:2"
run_policy() {
  local policy="$1" profiles="$2" real="$WORK/real-$1" sim="$WORK/sim-$1"
  "$SCHED" --trace "$WORK/trace.csv" --slots "$SLOTS" --policy "$policy" --profiles "$profiles" \
    --batch $BATCH --launch-flags "$FLAGS" --tick 0.5 --time-limit 1200 --out "$real" \
    > "$real.log" 2>&1 || { echo "tl-sched ($policy) failed:"; cat "$real.log"; exit 1; }
  local pause
  pause=$(awk -F, 'NR > 1 && $10 > 0 { s += $12 * $10; n += $10 } END { printf "%.2f", n ? s / n : 0 }' "$real/real_jobs.csv")
  "$SIM" --trace "$WORK/trace.csv" --cluster fast:2,slow:2 --profiles "$profiles" \
    --policies "$policy" --in-place-only --rescale-cost "$pause" --start-cost "$START_COST" --out "$sim" >/dev/null
  echo
  if [ "$CONTENTION" = 1 ]; then
    awk -F, 'NR > 1 { q += $6; j += $5; n++ } END { printf "contention: mean queueing %.1f s of a mean JCT %.1f s (real)\n", q / n, j / n }' "$real/jobs.csv"
  fi
  echo "policy $policy on $SLOTS; tl-sim with start-up ${START_COST} s and rescale cost ${pause} s (mean measured in-place pause)"
  if grep -q ',unrealisable,' "$real/events.csv"; then
    echo "asks tl-sched could not carry out as they stood (events.csv):"
    grep ',unrealisable,' "$real/events.csv" | sed 's/^/  /'
  fi
  awk -F, '
    FNR == 1 { file++; next }
    file == 1 { kind[$1] = $2; real[$1] = $8; rescales[$1] = $10; ids[++n] = $1 }
    file == 2 { sim[$1] = $5; simResc[$1] = $8 }
    END {
      printf "| job | kind | real JCT s | sim JCT s | error | rescales real / sim |\n| --- | --- | --- | --- | --- | --- |\n"
      for (i = 1; i <= n; i++) {
        id = ids[i]; e = (sim[id] - real[id]) / real[id]; a = e < 0 ? -e : e; sum += a
        sr += real[id]; ss += sim[id]
        printf "| %s | %s | %.1f | %.1f | %+.1f %% | %d / %d |\n", id, kind[id], real[id], sim[id], 100 * e, rescales[id], simResc[id]
      }
      printf "| mean | | %.1f | %.1f | %+.1f %% | |\n", sr / n, ss / n, 100 * (ss - sr) / sr
      printf "\nmean absolute percentage error of per-job JCT: %.1f %% (target <= 15 %%)\n", 100 * sum / n
    }' "$real/real_jobs.csv" "$sim/jobs_$policy.csv"
}
run_policy "$POLICY" "$WORK/profiles.csv"
if [ -n "$AGAINST" ]; then
  # The machine's speed drifts over minutes (other users): the second policy gets profiles
  # measured just before its run, as the first did (the trace stays the same).
  echo
  measure_profiles "-$AGAINST"
  run_policy "$AGAINST" "$WORK/profiles-$AGAINST.csv"
  echo
  awk -F, -v a="$POLICY" -v b="$AGAINST" '
    FNR == 1 { file++; next }
    { s[file] += $5; n[file]++ }
    END { ma = s[1] / n[1]; mb = s[2] / n[2]
          printf "real mean JCT: %s %.1f s, %s %.1f s (ratio %.3f)\n", a, ma, b, mb, ma / mb }' \
    "$WORK/real-$POLICY/jobs.csv" "$WORK/real-$AGAINST/jobs.csv"
fi
echo "outputs: $WORK (real-<policy>/: tl-sched's CSVs, events and allocation.png; sim-<policy>/: tl-sim's)"
