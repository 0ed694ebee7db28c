#!/usr/bin/env bash
# A longer fuzzing campaign than CI's: each target of `make fuzz` (built
# first) for RUNS executions (10^6 by default, or at most MAX_SECONDS each),
# from the seed corpus, with a random seed. Prints one line per target:
# executions, seconds, executions/s, corpus size, peak memory, findings.
#   tests/fuzz/campaign.sh [RUNS=1000000] [MAX_SECONDS=1200]
set -uo pipefail
runs="${1:-1000000}"; max="${2:-1200}"
cd "$(dirname "$0")/../.."
status=0
# TARGETS="bpe idx" runs only those.
for bin in $(if [ -n "${TARGETS:-}" ]; then for t in $TARGETS; do echo build/fuzz/fuzz/fuzz_$t; done; else echo build/fuzz/fuzz/fuzz_*; fi); do
  t=$(basename "$bin"); name=${t#fuzz_}
  mkdir -p "build/fuzz/campaign/$name" build/fuzz/findings
  start=$(date +%s)
  "$bin" -runs="$runs" -max_total_time="$max" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/findings/$name-" "build/fuzz/campaign/$name" "tests/fuzz/corpus/$name" \
    > "build/fuzz/campaign-$name.log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "build/fuzz/campaign-$name.log")
  rss=$(sed -nE 's/^stat::peak_rss_mb: *([0-9]+)/\1/p' "build/fuzz/campaign-$name.log")
  corpus=$(ls "build/fuzz/campaign/$name" | wc -l)
  finding=$([ $rc -eq 0 ] && echo none || echo "FOUND (exit $rc, see build/fuzz/campaign-$name.log)")
  [ $rc -eq 0 ] || status=1
  printf "%-12s %9s execs %6s s %8s execs/s corpus %5s peak %5s MB findings: %s\n" "$name" "$execs" "$secs" \
    "$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "$corpus" "$rss" "$finding"
done
exit $status
