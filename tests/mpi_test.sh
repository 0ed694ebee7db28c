#!/usr/bin/env bash
# mpi_test.sh BUILD — data-parallel training (train/distributed.h, chapter 14)
# under `mpirun -np 2` on this machine, 1 thread per rank, seconds:
#   1. 2 ranks with --batch 4 train exactly the run of 1 process with
#      --batch 8: the same loss at every step (to 1e-5 relative: the
#      gradients are summed in a different order) and the same validation,
#      with --no-shuffle and with shuffled batches;
#      reducing the buckets during backward or after it (--no-overlap)
#      gives the same run bit for bit, and so does gradient accumulation
#      (2 ranks x 2 x 2 micro-batches = 1 x 8, to 1e-5);
#   2. rank 0 alone writes (one log row per step, one summary line), every
#      rank ends with the same weights and optimizer state (train checks
#      and says so);
#   3. --resume goes on with the same number of ranks and is refused with
#      another;
#   4. a bad flag fails every rank, an error on one rank ends all of them,
#      and a rank killed with SIGKILL ends the run within 30 s;
#   5. the averaged gradients have the right scale: N ranks x 4 rows match
#      1 x 4N rows in the grad_norm column, under SGD without clipping, and
#      in the weights after 12 steps, for N = 2 and 3.
# Skips, saying so, when mpirun is missing or the build has no MPI.
set -u
build="${1:-build}"
bin="$build/normcore"
if ! command -v mpirun > /dev/null; then
  echo "mpi: SKIPPED: mpirun not found (make setup installs Open MPI)"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "mpi: FAILED: $*"; failures=$((failures + 1)); }
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { timeout 120 mpirun --oversubscribe -x OMP_NUM_THREADS -np "$@"; }

printf 'It was the best of times, it was the worst of times, it was the age of wisdom.\n%.0s' {1..400} > "$work/tiny.txt"
common=(--data "$work/tiny.txt" --steps 12 --seq 32 --layers 2 --width 32 --heads 2 --eval-every 6 --eval-batches 2
        --sample-tokens 0 --lr 3e-3 --warmup 2)
probe=$(mpi 2 "$bin" train "${common[@]}" --steps 1 --batch 4 --run-dir "$work/probe" 2>&1)
if grep -q "built without MPI" <<<"$probe"; then
  echo "mpi: SKIPPED: $bin was built without MPI (the sanitizer and fuzz builds leave it out; make links it when it finds mpicxx)"; exit 0
fi

# Losses of two train_log.csv files agree at every step to 1e-5 relative.
same_losses() {
  paste -d, <(cut -d, -f2,3 "$1") <(cut -d, -f2,3 "$2") | awk -F, 'NR > 1 {
      n++; d = $1 - $3; if (d < 0) d = -d; if (d > 1e-5 * ($1 < 0 ? -$1 : $1)) bad++
      if ($2 != "" && sprintf("%.5f", $2) != sprintf("%.5f", $4)) bad++ }
    END { exit (n == 0 || bad > 0) }'
}

# Column COL of two train_log.csv files agrees at every step to TOL relative.
same_column() {
  paste -d, <(cut -d, -f"$3" "$1") <(cut -d, -f"$3" "$2") | awk -F, -v tol="$4" 'NR > 1 {
      n++; d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (d > tol * m) bad++ }
    END { exit (n == 0 || bad > 0) }'
}

# sqrt(sum (b - a)^2 / sum (a - w0)^2) over every weight of three float32
# safetensors files W0 A B: how far B is from A, relative to how far A moved
# from the start W0. (Perl's core JSON::PP reads the header.)
weights_distance() {
  perl -MJSON::PP -e '
    sub load { my ($f) = @_; open(my $h, "<:raw", $f) or die "cannot open $f\n"; read($h, my $n, 8);
      read($h, my $header, unpack("Q<", $n)); my $meta = decode_json($header); local $/; my $data = <$h>; my %t;
      for my $k (keys %$meta) { next if $k eq "__metadata__"; my $e = $meta->{$k};
        die "$f: $k is $e->{dtype}, not F32\n" unless $e->{dtype} eq "F32"; my ($a, $b) = @{$e->{data_offsets}};
        $t{$k} = [unpack("f<*", substr($data, $a, $b - $a))]; }
      return \%t; }
    my ($w0, $a, $b) = map { load($_) } @ARGV; my ($diff, $moved) = (0, 0);
    for my $k (keys %$a) { die "$k is missing\n" unless $b->{$k} && $w0->{$k};
      for my $i (0 .. $#{$a->{$k}}) { $diff += ($b->{$k}[$i] - $a->{$k}[$i]) ** 2; $moved += ($a->{$k}[$i] - $w0->{$k}[$i]) ** 2 } }
    die "the weights did not move\n" unless $moved > 0;
    printf "%.3g\n", sqrt($diff / $moved);' "$@"
}

# 1. two ranks of batch 4 == one process of batch 8, ordered and shuffled.
for order in --no-shuffle ""; do
  "$bin" train "${common[@]}" $order --batch 8 --run-dir "$work/one$order" > "$work/one.txt" 2>&1 \
    || fail "1 process $order: $(cat "$work/one.txt")"
  out=$(mpi 2 "$bin" train "${common[@]}" $order --batch 4 --run-dir "$work/two$order" 2>&1) \
    || fail "2 ranks $order: $out"
  same_losses "$work/one$order/train_log.csv" "$work/two$order/train_log.csv" \
    || fail "2 ranks x 4 differ from 1 x 8 ($order): $(paste -d' ' "$work/one$order/train_log.csv" "$work/two$order/train_log.csv" | head -14)"
  [ "$(grep -o 'val_loss=[0-9.]*' "$work/one.txt")" == "$(grep -o 'val_loss=[0-9.]*' <<<"$out")" ] \
    || fail "the validation loss differs ($order): $(grep summary "$work/one.txt") / $(grep summary <<<"$out")"
  # 2. one writer, identical ranks.
  [ "$(grep -c '^summary:' <<<"$out")" -eq 1 ] || fail "2 ranks should print one summary line: $out"
  [ "$(wc -l < "$work/two$order/train_log.csv")" -eq 13 ] || fail "train_log.csv should have 12 rows, one writer"
  grep -q "identical on every rank: yes" <<<"$out" || fail "the ranks' weights or optimizer state differ: $out"
  grep -q "^data parallel: 2 ranks, 4 x 2 = 8 examples per step, gradients averaged by MPI$" <<<"$out" || fail "no data-parallel line: $out"
done

# 1b. the overlap changes when the buckets are reduced, not what: the run
# with every bucket reduced after backward is the same to the last bit; and
# gradient accumulation (2 ranks x 2 x 2 micro-batches) is the 1 x 8 run too.
mpi 2 "$bin" train "${common[@]}" --batch 4 --no-overlap --run-dir "$work/after" > "$work/out.txt" 2>&1 \
  || fail "2 ranks --no-overlap: $(cat "$work/out.txt")"
cmp -s <(cut -d, -f2,3 "$work/two/train_log.csv") <(cut -d, -f2,3 "$work/after/train_log.csv") \
  || fail "reducing during backward and after it should give identical losses"
grep -q "reduced after backward (--no-overlap)" "$work/out.txt" || fail "no --no-overlap line: $(cat "$work/out.txt")"
# Recomputing the blocks during backward: the parameters' gradients leave
# through each block's Checkpoint node and are reduced as they become ready,
# so the run is the same to the last bit.
mpi 2 "$bin" train "${common[@]}" --batch 4 --recompute --run-dir "$work/recompute" > "$work/out.txt" 2>&1 \
  || fail "2 ranks --recompute: $(cat "$work/out.txt")"
cmp -s <(cut -d, -f2,3 "$work/two/train_log.csv") <(cut -d, -f2,3 "$work/recompute/train_log.csv") \
  || fail "2 ranks with --recompute should give identical losses: $(paste -d' ' "$work/two/train_log.csv" "$work/recompute/train_log.csv" | head -14)"
mpi 2 "$bin" train "${common[@]}" --no-shuffle --batch 2 --accum 2 --run-dir "$work/accum" > "$work/out.txt" 2>&1 \
  || fail "2 ranks --accum 2: $(cat "$work/out.txt")"
# (the training losses only: evaluation reads --eval-batches global batches of 4, not of 8)
same_losses <(cut -d, -f1,2 "$work/one--no-shuffle/train_log.csv" | sed "s/$/,/") <(cut -d, -f1,2 "$work/accum/train_log.csv" | sed "s/$/,/") \
  || fail "2 ranks x 2 x 2 micro-batches differ from 1 x 8: $(paste -d' ' "$work/one--no-shuffle/train_log.csv" "$work/accum/train_log.csv" | head -14)"

# 3. resume: 12 steps straight == 6, stop, resume, 6 more; another rank count is refused.
mpi 2 "$bin" train "${common[@]}" --batch 4 --stop-after 6 --run-dir "$work/resumed" > "$work/out.txt" 2>&1 \
  || fail "2 ranks, 6 steps: $(cat "$work/out.txt")"
mpi 2 "$bin" train "${common[@]}" --batch 4 --resume "$work/resumed/checkpoint.safetensors" --run-dir "$work/resumed" \
  > "$work/out.txt" 2>&1 || fail "2 ranks, --resume: $(cat "$work/out.txt")"
same_losses "$work/two/train_log.csv" "$work/resumed/train_log.csv" || fail "a resumed 2-rank run differs from a straight one"
out=$("$bin" train "${common[@]}" --batch 8 --resume "$work/resumed/checkpoint.safetensors" --steps 20 --run-dir "$work/r1" 2>&1) \
  && fail "resuming a 2-rank checkpoint on 1 process should fail"
grep -q "was written by a run of 2 rank(s) and this run has 1" <<<"$out" || fail "resume on another rank count: $out"

# 4. faults end every rank.
out=$(mpi 2 "$bin" train "${common[@]}" --batch 4 --dropout 0.1 --run-dir "$work/drop" 2>&1) && fail "dropout with 2 ranks should be refused"
grep -q "not with data-parallel ranks yet" <<<"$out" || fail "dropout with 2 ranks: $out"
out=$(mpi 2 "$bin" train --bogus 1 2>&1) && fail "a bad flag should fail: $out"
grep -q "unknown flag --bogus" <<<"$out" || fail "a bad flag: $out"
start=$(date +%s)
out=$(mpi 2 "$bin" train "${common[@]}" --batch 4 --run-dir /proc/normcore-cannot-write 2>&1) \
  && fail "a run directory rank 0 cannot create should fail"
grep -q "rank 0: error: --run-dir: cannot create" <<<"$out" || fail "an error on rank 0 should name the rank: $out"
[ $(($(date +%s) - start)) -lt 60 ] || fail "an error on rank 0 left the other rank waiting"
mpi 2 "$bin" train "${common[@]}" --batch 4 --steps 1000000 --eval-every 0 --run-dir "$work/killed" > "$work/killed.txt" 2>&1 &
launcher=$!
for _ in $(seq 50); do [ -s "$work/killed/train_log.csv" ] && break; sleep 0.2; done
victim=$(pgrep -f -- "--run-dir $work/killed" | while read -r p; do
  [ "$(cat /proc/$p/comm 2>/dev/null)" == "normcore" ] && echo "$p"; done | tail -1)
start=$(date +%s)
if [ -n "$victim" ]; then
  kill -9 "$victim"
  ( sleep 30; kill -9 "$launcher" 2>/dev/null ) & watchdog=$!
  wait "$launcher"; status=$?
  kill "$watchdog" 2>/dev/null
  [ $status -ne 0 ] || fail "killing one rank should end the run with an error"
  [ $(($(date +%s) - start)) -lt 30 ] || fail "the other rank kept running after one was killed"
else
  fail "could not find a rank to kill: $(cat "$work/killed.txt")"; kill -9 "$launcher" 2>/dev/null
fi

# 5. The scale of the averaged gradients. Checks 1-3 run AdamW with
# clipping, which hide a wrong constant factor on every gradient (a sum over
# the ranks instead of the mean, a mean taken twice): AdamW divides it out and
# clipping removes it. Here it shows three ways, with 2 ranks and with 3 (a
# factor of 3 is no power of two, so it cannot pass as a rounding accident):
#   - the grad_norm column (the norm of the averaged gradient, before
#     clipping) matches the one-process run to 2e-5 (the log prints 6
#     significant digits; a wrong scale is off by a factor of N or 1/N);
#   - under plain SGD without clipping every update is lr x the gradient,
#     so the losses after the first step differ by far more than 1e-5;
#   - the weights after 12 steps from one shared start W0: the distance
#     between the N-rank and the one-process weights, relative to how far the
#     one-process weights moved from W0, is below 1e-4. The runs differ only
#     in the order float32 sums are added (rounding of ~1e-7 per step; 2e-7
#     was measured); a factor N on the gradients makes it ~0.5 or more.
"$bin" train "${common[@]}" --steps 1 --batch 2 --save "$work/w0.safetensors" --run-dir "$work/w0" > "$work/out.txt" 2>&1 \
  || fail "the starting weights: $(cat "$work/out.txt")"
sgd=(--init "$work/w0.safetensors" --optimizer sgd --momentum 0.9 --lr 0.1 --grad-clip 0 --warmup 0 --no-shuffle)
for n in 2 3; do
  "$bin" train "${common[@]}" "${sgd[@]}" --batch $((4 * n)) --save "$work/sgd1x$n.safetensors" --run-dir "$work/sgd1x$n" \
    > "$work/out.txt" 2>&1 || fail "SGD, 1 process x $((4 * n)): $(cat "$work/out.txt")"
  mpi $n "$bin" train "${common[@]}" "${sgd[@]}" --batch 4 --save "$work/sgd${n}x4.safetensors" --run-dir "$work/sgd${n}x4" \
    > "$work/out.txt" 2>&1 || fail "SGD, $n ranks x 4: $(cat "$work/out.txt")"
  same_losses "$work/sgd1x$n/train_log.csv" "$work/sgd${n}x4/train_log.csv" \
    || fail "SGD without clipping: $n ranks x 4 differ from 1 x $((4 * n)): $(paste -d' ' "$work/sgd1x$n/train_log.csv" "$work/sgd${n}x4/train_log.csv" | head -14)"
  same_column "$work/sgd1x$n/train_log.csv" "$work/sgd${n}x4/train_log.csv" 5 2e-5 \
    || fail "the gradient norms of $n ranks x 4 differ from 1 x $((4 * n)): $(paste -d' ' <(cut -d, -f5 "$work/sgd1x$n/train_log.csv") <(cut -d, -f5 "$work/sgd${n}x4/train_log.csv") | head -6)"
  distance=$(weights_distance "$work/w0.safetensors" "$work/sgd1x$n.safetensors" "$work/sgd${n}x4.safetensors" 2>&1)
  awk -v d="$distance" 'BEGIN { exit !(d ~ /^[0-9.e+-]+$/ && d + 0 < 1e-4) }' \
    || fail "the weights of $n ranks x 4 after 12 SGD steps are $distance (relative) from those of 1 x $((4 * n))"
  echo "mpi: $n ranks x 4 = 1 x $((4 * n)) under SGD without clipping: losses and gradient norms agree, weights within $distance (relative)"
done
# The same for the default AdamW with clipping: its grad_norm column.
same_column "$work/one--no-shuffle/train_log.csv" "$work/two--no-shuffle/train_log.csv" 5 2e-5 \
  || fail "under AdamW the gradient norms of 2 ranks x 4 differ from 1 x 8"

if [ "$failures" -gt 0 ]; then echo "mpi: $failures check(s) failed"; exit 1; fi
echo "mpi: all checks passed (2 ranks x 4 = 1 process x 8, resume, faults, the gradients' scale with 2 and 3 ranks)"
