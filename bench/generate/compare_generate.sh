#!/usr/bin/env bash
# normcore generate against PyTorch's cached greedy loop
# (bench/generate/pytorch_generate.py) on the same model directory, prompt
# and token count, alternating the two ROUNDS times: each run's tokens/s, the
# medians and their ratio, and the per-token time beside the
# weight-streaming bound (every float32 weight read once per token, at the
# highest bandwidth with which PyTorch summed a 1 GiB tensor in the rounds:
# reading, as streaming weights is; a copy's read + write figure is printed
# beside). The two texts must
# be identical, byte for byte, or the script fails.
#
#   bench/generate/compare_generate.sh MODEL_DIR [TOKENS=256] [ROUNDS=5] [BIN=build/normcore] [TOKENIZER=byte]
# TOKENIZER: byte, or a directory with GPT-2's vocab.json and merges.txt (tests/data/gpt2).
set -euo pipefail
model=$1; tokens=${2:-256}; rounds=${3:-5}; bin=${4:-build/normcore}; tokenizer=${5:-byte}
here=$(dirname "$0")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if [ "$tokenizer" = byte ]; then prompt_ids=10; vocab=(); else prompt_ids=198; vocab=(--vocab "$tokenizer/vocab.json"); fi
rate() { sed -nE 's/^generated [0-9]+ tokens in ([0-9.]+) s: ([0-9.]+) tokens\/s.*/\2/p' "$1"; }
params=$(/usr/bin/python3 -c "
import json, struct, sys
with open('$model/model.safetensors', 'rb') as f:
    h = json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))
n = 0
for k, v in h.items():
    if k != '__metadata__' and not k.endswith('.attn.bias'):
        c = 1
        for d in v['shape']: c *= d
        n += c
print(n)")
# PyTorch's fastest OpenBLAS kernel for this CPU, probed once (pytorch_setup.py):
# every PyTorch run below uses it. Empty: OpenBLAS's own detection won.
core=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$here/..'); import pytorch_setup; print(pytorch_setup.probe_coretype(2))")
echo "PyTorch: OPENBLAS_CORETYPE=${core:-(detected)}, the fastest of the probe"
for r in $(seq 1 "$rounds"); do
  "$bin" generate --init "$model" --tokenizer "$tokenizer" --temperature 0 --max-tokens "$tokens" --out "$work/normcore.bin" \
    > /dev/null 2> "$work/err"
  rate "$work/err" >> "$work/normcore.rates"
  echo "round $r normcore: $(tail -1 "$work/err")"
  /usr/bin/python3 "$here/pytorch_generate.py" "$model" --tokens "$tokens" --prompt-ids "$prompt_ids" "${vocab[@]}" \
    --coretype "$core" --out "$work/pytorch.bin" > "$work/out" 2> /dev/null
  rate "$work/out" >> "$work/pytorch.rates"
  echo "round $r pytorch:  $(tail -1 "$work/out")"
  cmp -s "$work/normcore.bin" "$work/pytorch.bin" || { echo "the texts differ:"; cmp "$work/normcore.bin" "$work/pytorch.bin" || true; exit 1; }
  # The bandwidth drifts on a shared machine (by half within minutes), so it
  # is measured every round, and the bound below takes the highest: the
  # strictest bound the run saw.
  # (printed with echo: `tee /dev/stderr` reopens a redirected stderr file and truncates it)
  bw_line=$(/usr/bin/python3 "$here/pytorch_generate.py" --bandwidth --coretype "$core" 2> /dev/null)
  echo "round $r $bw_line"
  sed -nE 's/^memory bandwidth: ([0-9.]+) GB.*/\1/p' <<< "$bw_line" >> "$work/bandwidths"
done
bw=$(sort -g "$work/bandwidths" | tail -1)
[ -n "$bw" ] || { echo "compare_generate: no bandwidth measurement succeeded (pytorch_generate.py --bandwidth)"; exit 1; }
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
n=$(median "$work/normcore.rates"); p=$(median "$work/pytorch.rates")
awk -v n="$n" -v p="$p" -v w="$params" -v bw="$bw" -v t="$tokens" -v r="$rounds" 'BEGIN {
  bound = w * 4 / (bw * 1e9) * 1e3  # ms per token to read every weight once
  printf "median over %d rounds, %d tokens, texts identical: normcore %.1f tokens/s, PyTorch %.1f tokens/s: %.2fx\n", r, t, n, p, n / p
  printf "per token: normcore %.3f ms, PyTorch %.3f ms; weight-streaming bound %.3f ms (%d float32 weights, %.1f GB/s, the highest read bandwidth of the rounds): normcore %.1fx the bound\n",
         1e3 / n, 1e3 / p, bound, w, bw, (1e3 / n) / bound
}'
