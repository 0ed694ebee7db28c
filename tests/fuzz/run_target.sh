#!/usr/bin/env bash
# run_target.sh TARGET — one libFuzzer target of tests/fuzz, for `make fuzz`,
# which runs $(JOBS) of them at a time (each is one process on one core).
# From the Makefile, in the environment: FUZZ_BUDGET (-runs=N or
# -max_total_time=S), FUZZ_IMAGE_BUDGET (the image decoder's, ten times
# slower per input), FUZZ_SEED, and FUZZ_PREFIX (setarch -R, no address
# randomization, for fixed-count runs, or nothing). New inputs go to
# build/fuzz/corpus/NAME, a finding to build/fuzz/findings/NAME-*, the log to
# build/fuzz/NAME.log. Prints one line; on a finding the log's end, exit 1.
set -u
target=$1
name=${target#fuzz_}
budget=$FUZZ_BUDGET
[ "$name" = image ] && budget=$FUZZ_IMAGE_BUDGET
mkdir -p "build/fuzz/corpus/$name" build/fuzz/findings
# shellcheck disable=SC2086  # FUZZ_PREFIX and the budget are words to split
if ! ${FUZZ_PREFIX:-} "build/fuzz/fuzz/$target" $budget -seed="$FUZZ_SEED" -rss_limit_mb=2048 -timeout=10 \
     -print_final_stats=1 -artifact_prefix="build/fuzz/findings/$name-" "build/fuzz/corpus/$name" \
     "tests/fuzz/corpus/$name" > "build/fuzz/$name.log" 2>&1; then
  tail -40 "build/fuzz/$name.log"
  echo "fuzz: $target ($budget) found a bug (build/fuzz/$name.log)"
  exit 1
fi
echo "== $target ($budget): $(grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "build/fuzz/$name.log" | tr -s ' ' | tr '\n' ' ')"
