#!/usr/bin/env bash
# scaling.sh [BUILD] [STEPS] (REPS=3) — a data-parallel training step on 2
# ranks of 1 thread each against 1 process on this machine, the same global
# batch either way: 1 process with batch 2B, given both cores (2 threads:
# the baseline a user has without MPI) and with 1 thread, against 2 ranks
# with batch B, the ranks' buckets reduced after backward (--no-overlap) and
# during it. Prints ms per step, the speed-ups over the 2-thread process
# (and over 1 thread), and the time each step still waits for the
# all-reduce once backward is done (waiting for the other rank included).
# Chapter 14 quotes it.
set -euo pipefail
build="${1:-build}"
steps="${2:-100}"
bin="$build/normcore"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="${DATA:-/usr/share/games/fortunes}"  # train's default corpus
echo "machine: $(nproc --all) cores, $(lscpu | sed -n 's/^Model name: *//p'); $(mpirun --version | head -1)"
reps="${REPS:-3}"
# median VALUES...: the middle of the sorted values.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# run NAME ARGS...: train REPS times; sets ms_NAME and wait_NAME (medians; wait is "ms (percent%)").
run() {
  local name=$1; shift
  local ms=() waits=() pcts=() out
  for _ in $(seq "$reps"); do
    out=$("$@" 2>&1)
    ms+=("$(grep '^summary:' <<<"$out" | sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')")
    waits+=("$(sed -n 's/.*per step \([0-9.]*\) ms waiting.*/\1/p' <<<"$out")")
    pcts+=("$(sed -n 's/.*ms waiting for the all-reduce after backward (\([0-9.]*\)%.*/\1/p' <<<"$out")")
    last_out=$out
  done
  printf -v "ms_$name" '%s' "$(median "${ms[@]}")"
  [ -n "${waits[0]}" ] && printf -v "wait_$name" '%s ms (%s%%)' "$(median "${waits[@]}")" "$(median "${pcts[@]}")"
  return 0
}
two_ranks=(mpirun --oversubscribe -x OMP_NUM_THREADS -np 2 "$bin" train)
echo "each figure: the median of $reps runs of $steps steps"
for model in "--layers 2 --width 64 --heads 4" "--layers 4 --width 128 --heads 4" "--layers 6 --width 256 --heads 8"; do
  common=(--data "$data" --steps "$steps" --seq 64 $model --eval-every 0 --eval-batches 1 --sample-tokens 0 --warmup 10)
  run one "$bin" train "${common[@]}" --batch 16 --run-dir "$work/one"
  params=$(sed -n 's/.*, \([0-9]*\) parameters.*/\1/p' <<<"$last_out" | head -1)
  run both env OMP_NUM_THREADS=2 "$bin" train "${common[@]}" --batch 16 --run-dir "$work/both"
  run after "${two_ranks[@]}" "${common[@]}" --batch 8 --no-overlap --run-dir "$work/after"
  run during "${two_ranks[@]}" "${common[@]}" --batch 8 --run-dir "$work/during"
  buckets=$(sed -n 's/.*ranks, \([0-9]*\) gradient buckets.*/\1/p' <<<"$last_out")
  printf '%-34s %8s params, %s bucket(s): 1 x 16, 2 threads: %6.1f ms/step (1 thread: %6.1f) | 2 x 8, reduced after backward: %6.1f ms/step, waiting %s | during backward: %6.1f ms/step, waiting %s | speed-up over 2 threads %.2fx (after: %.2fx), over 1 thread %.2fx\n' \
    "$model" "$params" "$buckets" "$ms_both" "$ms_one" "$ms_after" "$wait_after" "$ms_during" "$wait_during" \
    "$(echo "$ms_both / $ms_during" | bc -l)" "$(echo "$ms_both / $ms_after" | bc -l)" "$(echo "$ms_one / $ms_during" | bc -l)"
done
