#!/usr/bin/env bash
# scaling.sh [BUILD] [STEPS] — a data-parallel training step on 1 and on 2
# ranks (1 thread each) on this machine, the same global batch either way:
# 1 process with batch 2B against 2 ranks with batch B. Prints ms per step,
# the speed-up, and the time in the gradient all-reduce (waiting for the
# other rank included). Chapter 14 quotes it.
set -euo pipefail
build="${1:-build}"
steps="${2:-200}"
bin="$build/normcore"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="${DATA:-/usr/share/games/fortunes}"  # train's default corpus
echo "machine: $(nproc --all) cores, $(lscpu | sed -n 's/^Model name: *//p'); $(mpirun --version | head -1)"
for model in "--layers 2 --width 64 --heads 4" "--layers 4 --width 128 --heads 4" "--layers 6 --width 256 --heads 8"; do
  common=(--data "$data" --steps "$steps" --seq 64 $model --eval-every 0 --eval-batches 1 --sample-tokens 0 --warmup 10)
  one=$("$bin" train "${common[@]}" --batch 16 --run-dir "$work/one" 2>&1 | grep '^summary:')
  two=$(mpirun --oversubscribe -x OMP_NUM_THREADS -np 2 "$bin" train "${common[@]}" --batch 8 --run-dir "$work/two" 2>&1)
  params=$("$bin" train "${common[@]}" --batch 16 --steps 1 --run-dir "$work/p" 2>&1 | sed -n 's/.*, \([0-9]*\) parameters/\1/p')
  ms1=$(sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p' <<<"$one")
  ms2=$(grep '^summary:' <<<"$two" | sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')
  comm=$(sed -n 's/.*ranks, \([0-9.]*\) ms per step in the gradient all-reduce (\([0-9.]*\)%.*/\1 ms (\2%)/p' <<<"$two")
  printf '%-34s %9s params: 1 x 16: %7.1f ms/step | 2 x 8: %7.1f ms/step, all-reduce %s | speed-up %.2fx\n' \
    "$model" "$params" "$ms1" "$ms2" "$comm" "$(echo "$ms1 / $ms2" | bc -l)"
done
