#!/bin/bash
# The DyT recipe for a language model, at the size of `make run`'s default
# model (GPT-2, 4 blocks, C = 128, T = 128, B = 16, 1,500 AdamW steps on the
# fortunes, byte tokens). Two phases, every run with 1 thread, two at a time:
#
#  1. Screening (seed 1, the default learning rate 2e-3): one change at a
#     time from train's earlier DyT (alpha0 3, the last gain `auto`):
#     alpha0; every gain matched to a LayerNorm (--dyt-gamma auto); a
#     learnable scalar on the embeddings (--embed-scale: sqrt(C) = 11.3, or
#     35.36 = 1/sigma, which starts the stream at RMS 1); the DyT paper's
#     LLaMA split of alpha0 (0.8 before attention, 0.2 elsewhere); and the
#     same scalars on LayerNorm and on the model without a norm.
#  2. The comparison: LayerNorm and no norm as `train` makes them, no norm
#     with its best scalar, and the DyT recipe (alpha0 0.5, 1 before
#     attention, the scalar sqrt(C), the last gain `auto`), each with its
#     learning rate tuned over 1e-3, 2e-3 and 4e-3 on seed 1 (and on past
#     the grid's edge, doubling or halving, while the best is at the edge),
#     then seeds 2, 3 and 4 at that rate: the mean final validation loss with a 95%
#     interval (Student t, 2 degrees of freedom) and differences paired by
#     seed. Seed 1 chose the rate, so it is not among the reported seeds.
#
# Each variant's flags are spelled out, so the results do not depend on
# train's defaults. A run whose log already has its summary line (or the
# error of a run that diverged) is not run again. The third argument picks
# a phase, `screen` or `compare`; without it, both run:
#
#   results/dyt-recipe/recipe.sh build/normcore runs/dyt35 screen > results/dyt-recipe/screen.txt
#   results/dyt-recipe/recipe.sh build/normcore runs/dyt35 compare > results/dyt-recipe/compare.txt
#
# A third phase, `small-alpha` (after `compare`, in the same folder), asks
# whether a DyT with a smaller alpha0 beats the tuned model without a norm:
# the screening showed the loss falling as alpha0 falls once the scalar
# is on. It screens alpha0 0.05 to 0.5 with either scalar (seed 1, lr
# 2e-3), tunes the rate of the best as `compare` does, runs seeds 2-4 at
# it, and compares it, paired by seed, with `compare`'s variants:
#
#   results/dyt-recipe/recipe.sh build/normcore runs/dyt35 small-alpha > results/dyt-recipe/small_alpha.txt
set -eu
bin=${1:-build/normcore}
out=${2:-runs/dyt-recipe}
phase=${3:-all}
case "$phase" in screen | compare | small-alpha | all) ;;
  *) echo "recipe.sh: unknown phase '$phase' (screen, compare, small-alpha or all)" >&2; exit 2 ;; esac
mkdir -p "$out"

# Every DyT option is spelled out, so the runs do not depend on train's defaults.
dyt() {  # alpha0 alpha0-before-attention embedding-scale [more flags]
  echo "--norm dyt --dyt-alpha $1 --dyt-alpha-attn $2 --embed-scale $3 --dyt-final-gamma auto ${4:-}"
}
old=$(dyt 3 0 0)                  # train's DyT before this recipe: alpha0 3, the last gain auto
recipe=$(dyt 0.5 1 sqrt)          # train --norm dyt's recipe until the small-alpha phase (now: dyt-p-a0.5)
screen="dyt-a3|$old
dyt-a6|$(dyt 6 0 0)
dyt-a10|$(dyt 10 0 0)
dyt-gall|$(dyt 3 0 0 "--dyt-gamma auto")
dyt-gall-a1|$(dyt 1 0 0 "--dyt-gamma auto")
dyt-emb|$(dyt 3 0 sqrt)
dyt-paper|$(dyt 0.2 0.8 sqrt)
dyt-paper-g1|$(dyt 0.2 0.8 sqrt "--dyt-final-gamma 1")
dyt-p-a0.5|$(dyt 0.5 0 sqrt)
dyt-p-split-a1|$recipe
dyt-emb35-a0.2|$(dyt 0.2 0 35.36)
dyt-emb35-a0.5|$(dyt 0.5 0 35.36)
dyt-emb35-a1|$(dyt 1 0 35.36)
dyt-emb35-a2|$(dyt 2 0 35.36)
dyt-emb35-paper|$(dyt 0.2 0.8 35.36)
none|--norm none --embed-scale 0
none-embsqrt|--norm none --embed-scale sqrt
none-emb35|--norm none --embed-scale 35.36
layernorm|--norm layernorm --embed-scale 0
layernorm-embsqrt|--norm layernorm --embed-scale sqrt
layernorm-emb35|--norm layernorm --embed-scale 35.36"
compare="layernorm|--norm layernorm --embed-scale 0
none|--norm none --embed-scale 0
none-emb35|--norm none --embed-scale 35.36
dyt-p-split-a1|$recipe"

# One run: name seed lr flags... -> "name seed lr val_loss"
run() {
  local name=$1 seed=$2 lr=$3 log
  shift 3
  log="$out/$name-lr$lr-seed$seed.log"
  [ "$lr" = 2e-3 ] && log="$out/$name-seed$seed.log"  # the screening's runs
  # Done: a summary line, or the error of a run that diverged.
  grep -q -e '^summary: ' -e '^normcore: error: ' "$log" 2> /dev/null ||
    OMP_NUM_THREADS=1 "$bin" train --seed "$seed" --lr "$lr" --sample-tokens 0 --eval-every 0 \
      --run-dir "${log%.log}" "$@" > "$log" 2>&1 || true
  local loss
  loss=$(sed -n 's/^summary: .* val_loss=\([0-9.]*\) .*/\1/p' "$log")
  echo "$name $seed $lr ${loss:-diverged}"
}
export -f run
export bin out
# Two at a time: each line of stdin is "name|seed|lr|flags".
in_pairs() { tr '\n' '\0' | xargs -0 -P2 -I{} bash -c 'IFS="|" read -r n s l f <<< "{}"; run "$n" "$s" "$l" $f'; }

# awk: the mean difference of v[a, seed] - v[b, seed] over seeds 2-4, with
# its 95% interval (Student t, 2 degrees of freedom: 4.303).
paired_by_seed='
  function paired(a, b,    s, ss, d, seed, m, sd) {
    s = 0; ss = 0
    for (seed = 2; seed <= 4; seed++) { d = v[a, seed] - v[b, seed]; s += d; ss += d * d }
    m = s / 3; sd = sqrt((ss - 3 * m * m) / 2)
    return sprintf("%+.4f [%+.4f, %+.4f]", m, m - 4.303 * sd / sqrt(3), m + 4.303 * sd / sqrt(3))
  }'
# The learning rate with the lowest validation loss of variant $1 in the
# file $2 ("name seed lr loss" lines); a diverged run is worse than any loss.
best_lr_in() { awk -v n="$1" '$1 == n && $4 != "diverged" && (best == "" || $4 + 0 < best + 0) { best = $4; lr = $3 } END { print lr }' "$2"; }
# Tunes the rate of each "name|flags" line of $1 into the file $2: 1e-3,
# 2e-3 and 4e-3 on seed 1, and a best rate at an edge of the grid followed
# one step further (x2 or /2) until the loss rises, as the studies' protocol does.
tune_rates() {
  echo "$1" | while IFS='|' read -r n f; do for lr in 1e-3 2e-3 4e-3; do echo "$n|1|$lr|$f"; done; done |
    in_pairs | sort > "$2"
  while true; do
    more=$(echo "$1" | while IFS='|' read -r n f; do
      lr=$(best_lr_in "$n" "$2")
      next=""
      [ "$lr" = "$(awk -v n="$n" '$1 == n { print $3 }' "$2" | sort -g | tail -1)" ] &&
        next=$(awk -v x="$lr" 'BEGIN { printf "%ge-3", x * 2 * 1000 }')
      [ "$lr" = "$(awk -v n="$n" '$1 == n { print $3 }' "$2" | sort -g | head -1)" ] &&
        next=$(awk -v x="$lr" 'BEGIN { printf "%ge-3", x / 2 * 1000 }')
      [ -z "$next" ] || echo "$n|1|$next|$f"
    done)
    [ -n "$more" ] || break
    echo "$more" | in_pairs >> "$2"
    sort -o "$2" "$2"
  done
}

if [ "$phase" = small-alpha ]; then
  [ -f "$out/seeds.txt" ] || { echo "recipe.sh: run the compare phase into $out first (its seeds.txt is missing)" >&2; exit 2; }
  small="dyt-emb35-a0.05|$(dyt 0.05 0 35.36)
dyt-emb35-a0.1|$(dyt 0.1 0 35.36)
dyt-emb35-a0.2|$(dyt 0.2 0 35.36)
dyt-embsqrt-a0.1|$(dyt 0.1 0 sqrt)
dyt-embsqrt-a0.2|$(dyt 0.2 0 sqrt)
dyt-p-a0.5|$(dyt 0.5 0 sqrt)"
  echo "== screening smaller alpha0: seed 1, lr 2e-3"
  echo "$small" | sed 's/^\([^|]*\)|/\1|1|2e-3|/' | in_pairs | sort > "$out/small_screen.txt"
  cat "$out/small_screen.txt"
  best=$(awk '$4 != "diverged" && (b == "" || $4 + 0 < b + 0) { b = $4; n = $1 } END { print n }' "$out/small_screen.txt")
  chosen=$(echo "$small" | grep "^$best|")
  echo
  echo "== the learning rate of the best, $best, seed 1"
  tune_rates "$chosen" "$out/small_tuning.txt"
  cat "$out/small_tuning.txt"
  lr=$(best_lr_in "$best" "$out/small_tuning.txt")
  echo
  echo "== seeds 2, 3, 4 at $lr"
  for s in 2 3 4; do echo "$chosen" | sed "s/^\([^|]*\)|/\1|$s|$lr|/"; done | in_pairs | sort > "$out/small_seeds.txt"
  cat "$out/small_seeds.txt"
  echo
  cat "$out/seeds.txt" "$out/small_seeds.txt" | awk -v best="$best" "$paired_by_seed"'
    { v[$1, $2] = $4; lr[$1] = $3 }
    END {
      s = 0; ss = 0
      for (seed = 2; seed <= 4; seed++) { s += v[best, seed]; ss += v[best, seed] * v[best, seed] }
      m = s / 3; sd = sqrt((ss - 3 * m * m) / 2)
      printf "%s at lr %s, seeds 2-4: %.4f %.4f %.4f; %.4f [%.4f, %.4f]\n", best, lr[best], v[best, 2], v[best, 3],
        v[best, 4], m, m - 4.303 * sd / sqrt(3), m + 4.303 * sd / sqrt(3)
      print "paired by seed (seeds 2-4) with the compare phase, mean difference [95% interval]:"
      print "  " best " - no norm:                 " paired(best, "none")
      print "  " best " - no norm with its scalar: " paired(best, "none-emb35")
      print "  " best " - LayerNorm:               " paired(best, "layernorm")
      print "  " best " - the DyT recipe:          " paired(best, "dyt-p-split-a1")
    }'
  exit 0
fi

if [ "$phase" != compare ]; then
  echo "== screening: seed 1, lr 2e-3"
  echo "$screen" | sed 's/^\([^|]*\)|/\1|1|2e-3|/' | in_pairs | sort > "$out/screen.txt"
  cat "$out/screen.txt"
  [ "$phase" = screen ] && exit 0
  echo
fi

echo "== the learning rate of each compared variant, seed 1"
tune_rates "$compare" "$out/tuning.txt"
cat "$out/tuning.txt"

echo
echo "== seeds 2, 3, 4 at each variant's rate"
echo "$compare" | while IFS='|' read -r n f; do lr=$(best_lr_in "$n" "$out/tuning.txt"); for s in 2 3 4; do echo "$n|$s|$lr|$f"; done; done |
  in_pairs | sort > "$out/seeds.txt"
cat "$out/seeds.txt"

echo
awk "$paired_by_seed"'
  { v[$1, $2] = $4; lr[$1] = $3 }
  function interval(m, sd, k) { return sprintf("%.4f [%.4f, %.4f]", m, m - 4.303 * sd / sqrt(k), m + 4.303 * sd / sqrt(k)) }
  END {
    printf "%-15s %-6s %s\n", "variant", "lr", "final validation loss, seeds 2-4: mean [95% interval]"
    split("layernorm none none-emb35 dyt-p-split-a1", order, " ")
    for (i = 1; i <= 4; i++) {
      n = order[i]; s = 0; ss = 0
      for (seed = 2; seed <= 4; seed++) { s += v[n, seed]; ss += v[n, seed] * v[n, seed] }
      m = s / 3; sd = sqrt((ss - 3 * m * m) / 2)
      printf "%-15s %-6s %.4f %.4f %.4f; %s\n", n, lr[n], v[n, 2], v[n, 3], v[n, 4], interval(m, sd, 3)
    }
    print ""
    print "paired by seed (seeds 2-4), mean difference [95% interval]:"
    print "  DyT recipe - no norm:                      " paired("dyt-p-split-a1", "none")
    print "  DyT recipe - no norm with its scalar:      " paired("dyt-p-split-a1", "none-emb35")
    print "  DyT recipe - LayerNorm:                    " paired("dyt-p-split-a1", "layernorm")
    print "  no norm with the scalar - no norm:         " paired("none-emb35", "none")
    print "  no norm with the scalar - LayerNorm:       " paired("none-emb35", "layernorm")
  }' "$out/seeds.txt"
