#!/usr/bin/env bash
# Times `normcore generate` with and without the key/value cache on the same
# model, prompt and seed, alternating the two ROUNDS times, and prints each
# run, the medians and their ratio. The two texts must be identical.
#
#   bench/generate/generate_speed.sh MODEL_DIR [TOKENS=512] [ROUNDS=5] [BIN=build/normcore]
set -euo pipefail
model="$1"; tokens="${2:-512}"; rounds="${3:-5}"; bin="${4:-build/normcore}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rate() { sed -nE 's/^generated [0-9]+ tokens in ([0-9.]+) s: ([0-9.]+) tokens\/s.*/\2/p' "$1"; }
for r in $(seq 1 "$rounds"); do
  for mode in cache no-cache; do
    flag=$([ "$mode" = no-cache ] && echo --no-cache || true)
    "$bin" generate --init "$model" --max-tokens "$tokens" --seed 1 $flag --out "$work/$mode.txt" > /dev/null 2> "$work/err"
    echo "$(rate "$work/err")" >> "$work/$mode.rates"
    echo "round $r $mode: $(tail -1 "$work/err")"
  done
  cmp -s "$work/cache.txt" "$work/no-cache.txt" || { echo "the texts differ"; exit 1; }
done
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
c=$(median "$work/cache.rates"); n=$(median "$work/no-cache.rates")
echo "median over $rounds rounds, $tokens tokens: $c tokens/s with the cache, $n without: $(awk -v c="$c" -v n="$n" 'BEGIN {printf "%.1f", c / n}')x"
