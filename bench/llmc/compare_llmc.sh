#!/usr/bin/env bash
# compare_llmc.sh LLMC_DIR [ROUNDS] [SIZES] [NORMCORE] — normcore's GPT-2
# training step against llm.c's CPU trainer (train_gpt2.c), on the same
# machine, the same shapes and the same threads.
#
#   git clone https://github.com/karpathy/llm.c /tmp/llm.c
#   bench/llmc/compare_llmc.sh /tmp/llm.c 3 train,tiny,small > out.txt
#
# Needs gcc with OpenMP, /usr/bin/python3 with NumPy (apt-get install
# python3-numpy) and /usr/share/games/fortunes (make setup).
#
# For each size (the bench's GPT-2 configurations: train = L4 C128 H4 T128
# B16, tiny = L4 C256 H4 T128 B8, small = L6 C384 H6 T256 B8, vocabulary
# 256):
#  1. write_weights.py writes one set of random weights in both formats;
#  2. the same computation: 5 AdamW steps of each, from those weights, on the
#     same batches (the fortunes as bytes, `--no-shuffle` windows), constant
#     learning rate 1e-3, betas 0.9 and 0.999, no weight decay (llm.c decays
#     every parameter, normcore only the matrices), no clipping (llm.c has
#     none). The losses must agree to 1e-4 at every step, or the script
#     stops: a comparison of two different computations would mean nothing;
#  3. the speed, in ROUNDS rounds, each timing normcore (`normcore bench`,
#     median of 10 steps, with its own random weights and tokens: the speed
#     does not depend on them; its batch, length and parameter count are
#     checked against the model of step 2) and llm.c (median of its steps 3
#     to 6; its small step takes seconds), which goes first in every other
#     round, so that both see the same stretches of a machine whose speed
#     drifts. Then a summary: the medians and the median and range of the
#     rounds' own ratios (normcore / llm.c).
#
# llm.c is built as its Makefile builds train_gpt2 on Linux: gcc -Ofast
# -march=native with OpenMP. Its CPU trainer is its reference
# implementation ("clean, minimal", its header says), written to be read,
# as normcore is; its fast paths are CUDA.
set -euo pipefail
cd "$(dirname "$0")/../.."
llmc=${1:?usage: bench/llmc/compare_llmc.sh LLMC_DIR [ROUNDS] [SIZES] [NORMCORE]}
rounds=${2:-3}
sizes=${3:-train,tiny,small}
normcore=${4:-build/normcore}
[ -f "$llmc/train_gpt2.c" ] || { echo "compare_llmc: no train_gpt2.c in '$llmc' (a checkout of llm.c)" >&2; exit 2; }
[ -x "$normcore" ] || { echo "compare_llmc: $normcore is not built (make, or pass the binary)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shape() {  # size -> "layers width heads T B", as bench_config in cli/bench.cpp
    case $1 in
        train) echo 4 128 4 128 16 ;;
        tiny) echo 4 256 4 128 8 ;;
        small) echo 6 384 6 256 8 ;;
        *) echo "compare_llmc: unknown size '$1' (train, tiny, small)" >&2; return 2 ;;
    esac
}
for size in ${sizes//,/ }; do shape "$size" > /dev/null; done  # a bad size stops here, before any work

gcc -Ofast -march=native -fopenmp -DOMP -Wno-unused-result -I "$llmc" bench/llmc/llmc_steps.c -lm -o "$work/llmc_steps"
"$normcore" tokenize --data /usr/share/games/fortunes --out "$work/fortunes.tok" > /dev/null
echo "llm.c: $(git -C "$llmc" log -1 --format='%h %cs' 2>/dev/null || echo 'not a git checkout'); normcore: $(git log -1 --format='%h %cs')"
echo "$(nproc) cores, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} (both use all cores unless it is set)"

# 1 and 2: the weights, and the same five steps in both.
for size in ${sizes//,/ }; do
    read -r L C H T B <<< "$(shape "$size")"
    /usr/bin/python3 bench/llmc/write_weights.py --layers "$L" --width "$C" --heads "$H" --positions "$T" \
        "$work/$size" > /dev/null
    "$normcore" train --init "$work/$size" --data "$work/fortunes.tok" --no-shuffle --steps 5 --batch "$B" \
        --seq "$T" --lr 1e-3 --schedule constant --warmup 0 --beta1 0.9 --beta2 0.999 --eps 1e-8 \
        --weight-decay 0 --grad-clip 0 --eval-every 0 --sample-tokens 0 --run-dir "$work/$size-run" > /dev/null
    "$work/llmc_steps" "$work/$size/llmc.bin" "$work/fortunes.tok" "$B" "$T" 5 1e-3 0.9 0.999 1e-8 0 \
        > "$work/$size-llmc.txt"
    /usr/bin/python3 - "$size" "$work/$size-run/train_log.csv" "$work/$size-llmc.txt" <<'PY'
import csv, re, sys
size, ours, theirs = sys.argv[1:]
a = [float(r["loss"]) for r in csv.DictReader(open(ours))]
b = [float(m.group(1)) for m in re.finditer(r"^step \d+ loss ([\d.]+)", open(theirs).read(), re.M)]
if len(a) != 5 or len(b) != 5:
    sys.exit(f"compare_llmc: {size}: expected 5 losses from each, got {len(a)} from normcore and {len(b)} from llm.c")
diff = max(abs(x - y) for x, y in zip(a, b))
print(f"{size:5s} same steps: losses normcore {' '.join(f'{x:.5f}' for x in a)}")
print(f"{'':5s}             llm.c    {' '.join(f'{y:.5f}' for y in b)}   largest difference {diff:.1e}")
if diff > 1e-4:
    sys.exit(f"compare_llmc: {size}: the two do not compute the same steps (losses differ by {diff:.1e}); not timing them")
PY
    sed -n 's/^num_parameters: \([0-9]*\)$/\1/p' "$work/$size-llmc.txt" > "$work/$size-params"
done

# One timed run of each: prints "ms/step" (the median of its timed steps).
time_normcore() {  # size B T
    "$normcore" bench --models gpt2 --sizes "$1" --skip-gemm --steps 10 --json "$work/bench.json" > /dev/null
    /usr/bin/python3 - "$work/bench.json" "$2" "$3" "$(cat "$work/$1-params")" <<'PY'
import json, sys
step = json.load(open(sys.argv[1]))["training"][0]
B, T, params = (int(x) for x in sys.argv[2:])
if (step["batch"], step["seq"], step["params"]) != (B, T, params):
    sys.exit(f"compare_llmc: normcore bench timed B={step['batch']} T={step['seq']} with {step['params']} parameters, "
             f"not the checked B={B} T={T} with {params}")
print(f"{step['ms_per_step']:.1f}")
PY
}
time_llmc() {  # size B T
    "$work/llmc_steps" "$work/$1/llmc.bin" "$work/fortunes.tok" "$2" "$3" 6 3e-4 0.9 0.95 1e-8 0.1 |
        sed -n 's/^llm.c: median \([0-9.]*\) ms.*/\1/p'
}

# 3: the speed, interleaved.
log="$work/times.txt"
for r in $(seq 1 "$rounds"); do
    echo "== round $r $(date -u +%H:%M:%S) UTC"
    for size in ${sizes//,/ }; do
        read -r L C H T B <<< "$(shape "$size")"
        if (( r % 2 == 1 )); then
            ours=$(time_normcore "$size" "$B" "$T")
            theirs=$(time_llmc "$size" "$B" "$T")
        else
            theirs=$(time_llmc "$size" "$B" "$T")
            ours=$(time_normcore "$size" "$B" "$T")
        fi
        [ -n "$ours" ] && [ -n "$theirs" ] || { echo "compare_llmc: $size: could not read a time" >&2; exit 1; }
        echo "  gpt2 $size: normcore $ours ms/step, llm.c $theirs ms/step"
        echo "$size $ours $theirs" >> "$log"
    done
done
/usr/bin/python3 - "$log" <<'PY'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    size, ours, theirs = line.split()
    rows.setdefault(size, []).append((float(ours), float(theirs)))
print("summary, ms/step (medians of the rounds; ratio: normcore / llm.c within each round, median and range)")
print("model  size   normcore     llm.c  ratio (range)")
for size, pairs in rows.items():
    ratios = [a / b for a, b in pairs]
    print(f"gpt2   {size:5s} {st.median(a for a, _ in pairs):9.1f} {st.median(b for _, b in pairs):9.1f}  "
          f"{st.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
PY
