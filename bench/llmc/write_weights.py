#!/usr/bin/python3
"""Random GPT-2 weights written twice, for bench/llmc/compare_llmc.sh: as a
normcore model directory (config.json + model.safetensors in Hugging Face's
GPT-2 layout, which `normcore train --init DIR` reads) and as an llm.c
checkpoint (DIR/llmc.bin, the version-3 file llm.c's train_gpt2.c reads).

    /usr/bin/python3 bench/llmc/write_weights.py --layers 4 --width 256 --heads 4 --positions 128 DIR

Weights N(0, 0.02); the LayerNorm gains 1 + N(0, 0.1) and every bias
N(0, 0.02), not 1 and 0, so that a gain or bias read from the wrong place
changes the loss. Needs only NumPy.

The two layouts differ in two ways. Hugging Face's GPT-2 stores a linear
layer's matrix as [in, out] (its Conv1D); llm.c as [out, in], so each is
transposed. llm.c keeps each kind of parameter of all the layers in one
array (all the ln_1 gains, then all the ln_1 biases, ...) and pads the
token table to `padded_vocab_size` rows (here: the vocabulary rounded up
to 128, as llm.c's own train_gpt2.py does, the extra rows zero).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from safetensors_file import write_safetensors  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--positions", type=int, default=128, help="the position table's rows (the longest T)")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if min(a.layers, a.width, a.heads, a.positions, a.vocab) < 1 or a.width % a.heads:
        p.error("layers, width, heads, positions and vocab must be at least 1, and heads must divide width")
    return a


def main():
    a = parse_args()
    L, C, V, P = a.layers, a.width, a.vocab, a.positions
    rng = np.random.default_rng(a.seed)
    w = lambda *shape: (rng.standard_normal(shape) * 0.02).astype(np.float32)  # noqa: E731
    gain = lambda: (1 + rng.standard_normal(C) * 0.1).astype(np.float32)  # noqa: E731
    t = {"transformer.wte.weight": w(V, C), "transformer.wpe.weight": w(P, C)}
    for i in range(L):
        b = f"transformer.h.{i}."
        t.update({b + "ln_1.weight": gain(), b + "ln_1.bias": w(C),
                  b + "attn.c_attn.weight": w(C, 3 * C), b + "attn.c_attn.bias": w(3 * C),
                  b + "attn.c_proj.weight": w(C, C), b + "attn.c_proj.bias": w(C),
                  b + "ln_2.weight": gain(), b + "ln_2.bias": w(C),
                  b + "mlp.c_fc.weight": w(C, 4 * C), b + "mlp.c_fc.bias": w(4 * C),
                  b + "mlp.c_proj.weight": w(4 * C, C), b + "mlp.c_proj.bias": w(C)})
    t.update({"transformer.ln_f.weight": gain(), "transformer.ln_f.bias": w(C)})

    os.makedirs(a.dir, exist_ok=True)
    write_safetensors(os.path.join(a.dir, "model.safetensors"), t)
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": L, "n_embd": C, "n_head": a.heads,
           "vocab_size": V, "n_positions": P, "n_ctx": P, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new", "tie_word_embeddings": True}
    with open(os.path.join(a.dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    # llm.c: a header of 256 int32 (magic, version 3, max T, V, L, heads, C,
    # padded V), then the 16 parameter arrays of its ParameterTensors in order.
    Vp = (V + 127) // 128 * 128
    wte = np.zeros((Vp, C), np.float32)
    wte[:V] = t["transformer.wte.weight"]
    layer = lambda name, transpose=False: [t[f"transformer.h.{i}.{name}"].T if transpose  # noqa: E731
                                            else t[f"transformer.h.{i}.{name}"] for i in range(L)]
    arrays = [wte, t["transformer.wpe.weight"],
              layer("ln_1.weight"), layer("ln_1.bias"),
              layer("attn.c_attn.weight", True), layer("attn.c_attn.bias"),
              layer("attn.c_proj.weight", True), layer("attn.c_proj.bias"),
              layer("ln_2.weight"), layer("ln_2.bias"),
              layer("mlp.c_fc.weight", True), layer("mlp.c_fc.bias"),
              layer("mlp.c_proj.weight", True), layer("mlp.c_proj.bias"),
              t["transformer.ln_f.weight"], t["transformer.ln_f.bias"]]
    header = np.zeros(256, np.int32)
    header[:8] = [20240326, 3, P, V, L, a.heads, C, Vp]
    with open(os.path.join(a.dir, "llmc.bin"), "wb") as f:
        f.write(header.astype("<i4").tobytes())
        for x in arrays:
            f.write(np.ascontiguousarray(np.stack(x) if isinstance(x, list) else x, dtype="<f4").tobytes())
    print(f"wrote {a.dir}/config.json, model.safetensors and llmc.bin: GPT-2 L{L} C{C} H{a.heads}, "
          f"{P} positions, vocabulary {V} (llm.c's padded to {Vp})")


if __name__ == "__main__":
    main()
