#!/usr/bin/env bash
# Runs the `normcore` program the way users and outside checks do: a few
# training steps of each language model on a small file, and the errors bad
# input must give (a clear message, a non-zero exit). Run by `make test`
# with the build directory as $1.
set -uo pipefail
bin="${1:-build}/normcore"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "cli: FAILED: $*"; failures=$((failures + 1)); }

# A small text file: a few repeated sentences.
for i in $(seq 1 40); do echo "the quick brown fox jumps over the lazy dog $i"; done > "$work/tiny.txt"

# 1. train runs for each language model and ends with the summary line.
for model in gpt2 llama; do
  out=$("$bin" train --model "$model" --data "$work/tiny.txt" --steps 6 --batch 4 --seq 32 --layers 2 --width 32 \
        --heads 2 --eval-every 3 --eval-batches 2 --sample-tokens 20 --run-dir "$work/run-$model" 2>&1)
  status=$?
  [ $status -eq 0 ] || fail "train --model $model exited $status: $out"
  grep -qE '^summary: steps=6 train_loss=[0-9.]+ val_loss=[0-9.]+ ms_per_step=[0-9.]+ tok_per_s=[0-9]+$' <<<"$out" \
    || fail "train --model $model: no summary line in: $out"
  [ "$(wc -l < "$work/run-$model/train_log.csv")" -eq 7 ] || fail "train --model $model: the CSV log should have a header and 6 rows"
  head -1 "$work/run-$model/train_log.csv" | grep -q '^step,loss,val_loss,lr,grad_norm,time_s$' || fail "CSV header"
done

# 2. the variants from the command line build and train one step.
for variant in "--placement geonorm --decay harmonic" "--norm dyt --placement sandwich" "--placement deepnorm --norm rmsnorm" \
               "--attention differential --width 32 --heads 2" "--mlp swiglu --positions rope --kv-heads 1"; do
  "$bin" train $variant --data "$work/tiny.txt" --steps 1 --batch 2 --seq 16 --layers 2 --width 32 --heads 2 \
    --eval-batches 1 --sample-tokens 0 --run-dir "$work/run-variant" > "$work/out.txt" 2>&1 \
    || fail "train $variant: $(cat "$work/out.txt")"
done

# 3. --no-shuffle is deterministic: two runs give the same losses.
for i in 1 2; do
  "$bin" train --no-shuffle --data "$work/tiny.txt" --steps 3 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 \
    --eval-batches 1 --sample-tokens 0 --run-dir "$work/det-$i" > /dev/null 2>&1 || fail "--no-shuffle run $i"
done
cmp -s <(cut -d, -f2 "$work/det-1/train_log.csv") <(cut -d, -f2 "$work/det-2/train_log.csv") || fail "--no-shuffle runs differ"

# 4. bad input: one clear line, non-zero exit.
expect_error() {  # expect_error "<fragment of the message>" args...
  local fragment="$1"; shift
  out=$("$bin" "$@" 2>&1); status=$?
  [ $status -ne 0 ] || fail "'normcore $*' should fail but exited 0"
  grep -qF -- "$fragment" <<<"$out" || fail "'normcore $*': expected '$fragment' in: $out"
}
expect_error "unknown flag --bogus" train --bogus 1
expect_error "does not exist" train --data "$work/missing.txt"
expect_error "'abc' is not an integer" train --steps abc
expect_error "unknown placement 'middle'" train --placement middle
expect_error "--heads 3 does not divide --width 32" train --width 32 --heads 3
expect_error "needs a value" train --steps
expect_error "unknown command 'fly'" fly
"$bin" train --help | grep -q -- "--placement" || fail "train --help should list --placement"

if [ $failures -eq 0 ]; then echo "cli: all checks passed"; else echo "cli: $failures check(s) failed"; exit 1; fi
