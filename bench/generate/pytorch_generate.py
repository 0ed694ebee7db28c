#!/usr/bin/python3
"""PyTorch's cached greedy generation on a normcore GPT-2 directory: the
baseline for `normcore generate` (bench/generate/compare_generate.sh).

Reads a model directory as `normcore train --save DIR/` writes it (config.json
and model.safetensors in Hugging Face's GPT-2 layout: pre-LayerNorm, learned
positions, tanh GELU, tied head), builds the same float32 model in PyTorch,
and continues a prompt greedily: the prompt in one forward pass that fills a
key/value cache, then one token at a time, each step attending to the cache
(a preallocated [layers, 2, heads, max positions, head size] buffer: the
past_key_values idea without the per-step torch.cat), under torch.no_grad.
The tokens are bytes (vocabulary 256) or GPT-2's BPE ids given as a list.

    /usr/bin/python3 bench/generate/pytorch_generate.py DIR --tokens 256 --prompt-ids 10 --out text.bin
    /usr/bin/python3 bench/generate/pytorch_generate.py --write-random-124m DIR   # GPT-2 124M, N(0, 0.02) weights

Prints "generated N tokens in S s: R tokens/s" (the prompt's forward pass
included, as normcore generate counts it) and writes the continuation's
bytes to --out, as `normcore generate --out` does when no --prompt is given
(its default context is a newline, as here), so that the two files can be
compared byte for byte. PyTorch runs with pytorch_setup.py's
setting.
"""
import argparse
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pytorch_setup  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", nargs="?", help="model directory (config.json + model.safetensors)")
    p.add_argument("--tokens", type=int, default=256, help="tokens to generate")
    p.add_argument("--prompt-ids", default="10", help="prompt token ids, comma-separated (10: a newline byte)")
    p.add_argument("--out", default="", help="write the generated text's bytes here (as normcore generate --out without --prompt)")
    p.add_argument("--vocab", default="", help="GPT-2's vocab.json, to turn BPE ids into bytes (without it, ids are bytes)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--coretype", default="auto")
    p.add_argument("--bandwidth", action="store_true",
                   help="print the memory bandwidth of reading 1 GiB (and of copying it) and exit")
    p.add_argument("--write-random-124m", default="", metavar="DIR",
                   help="write GPT-2 124M (vocabulary 50257, 1024 positions) with N(0, 0.02) weights to DIR and exit")
    return p.parse_args()


args = parse_args()
pytorch_setup.tune_environment(args.threads, args.coretype)
import time  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(args.threads)
DTYPES = {"F32": torch.float32, "F64": torch.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[a:b]), dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = t.to(torch.float32)
    return out


def write_random_124m(d):
    """GPT-2 124M in Hugging Face's layout, N(0, 0.02) weights, unit gains, zero biases."""
    L, C, V, P = 12, 768, 50257, 1024
    g = torch.Generator().manual_seed(124)
    w = lambda *shape: torch.randn(*shape, generator=g) * 0.02  # noqa: E731
    t = {"transformer.wte.weight": w(V, C), "transformer.wpe.weight": w(P, C),
         "transformer.ln_f.weight": torch.ones(C), "transformer.ln_f.bias": torch.zeros(C)}
    for i in range(L):
        b = f"transformer.h.{i}."
        t.update({b + "ln_1.weight": torch.ones(C), b + "ln_1.bias": torch.zeros(C),
                  b + "ln_2.weight": torch.ones(C), b + "ln_2.bias": torch.zeros(C),
                  b + "attn.c_attn.weight": w(C, 3 * C), b + "attn.c_attn.bias": torch.zeros(3 * C),
                  b + "attn.c_proj.weight": w(C, C), b + "attn.c_proj.bias": torch.zeros(C),
                  b + "mlp.c_fc.weight": w(C, 4 * C), b + "mlp.c_fc.bias": torch.zeros(4 * C),
                  b + "mlp.c_proj.weight": w(4 * C, C), b + "mlp.c_proj.bias": torch.zeros(C)})
    os.makedirs(d, exist_ok=True)
    from safetensors_file import write_safetensors  # here: it loads NumPy, whose OpenBLAS must start tuned
    write_safetensors(os.path.join(d, "model.safetensors"), t)
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": L, "n_embd": C, "n_head": 12,
           "vocab_size": V, "n_positions": P, "n_ctx": P, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new", "tie_word_embeddings": True}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


class GPT2:
    """The forward pass of a pre-LayerNorm GPT-2 over new tokens at positions
    past..past+T-1, reading and extending the cache."""

    def __init__(self, p, cfg):
        self.p, self.C, self.H, self.L = p, cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        hd = self.C // self.H
        self.cache = torch.zeros(self.L, 2, self.H, cfg["n_positions"], hd)
        self.length = 0

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, (self.C,), self.p[name + ".weight"], self.p[name + ".bias"], self.eps)

    def forward(self, ids):
        p, C, H = self.p, self.C, self.H
        T, past, hd = len(ids), self.length, C // H
        x = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][past:past + T]
        mask = torch.ones(T, past + T, dtype=torch.bool).tril(past)  # token t sees positions 0..past+t
        for i in range(self.L):
            b = f"transformer.h.{i}."
            qkv = torch.addmm(p[b + "attn.c_attn.bias"], self.ln(x, b + "ln_1"), p[b + "attn.c_attn.weight"])
            q, k, v = (t.reshape(T, H, hd).transpose(0, 1) for t in qkv.split(C, -1))
            self.cache[i, 0, :, past:past + T] = k
            self.cache[i, 1, :, past:past + T] = v
            keys, values = self.cache[i, 0, :, :past + T], self.cache[i, 1, :, :past + T]
            scores = (q @ keys.transpose(-1, -2)) / math.sqrt(hd)
            y = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ values
            y = y.transpose(0, 1).reshape(T, C)
            x = x + torch.addmm(p[b + "attn.c_proj.bias"], y, p[b + "attn.c_proj.weight"])
            h = torch.nn.functional.gelu(torch.addmm(p[b + "mlp.c_fc.bias"], self.ln(x, b + "ln_2"), p[b + "mlp.c_fc.weight"]),
                                         approximate="tanh")
            x = x + torch.addmm(p[b + "mlp.c_proj.bias"], h, p[b + "mlp.c_proj.weight"])
        self.length += T
        last = self.ln(x[-1:], "transformer.ln_f")
        return (last @ p["transformer.wte.weight"].T)[0]  # the tied head, the last position only


def byte_decoder(vocab_path):
    """GPT-2's byte-level BPE: each byte is a printable character in vocab.json;
    this undoes that map, id -> bytes."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + n)] = b
            n += 1
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    return {i: bytes(chars[c] for c in token) for token, i in vocab.items()}


def bandwidth():
    """GB/s of reading a 1 GiB float32 tensor (the best of 5 sums): what
    streaming weights does. A copy (read + write) is printed beside it."""
    src = torch.ones(256 * 1024 * 1024)
    dst = torch.empty_like(src)

    def best_of_5(f):
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t)
        return best

    read = src.numel() * 4 / best_of_5(lambda: src.sum()) / 1e9
    copy = 2 * src.numel() * 4 / best_of_5(lambda: dst.copy_(src)) / 1e9
    print(f"memory bandwidth: {read:.1f} GB/s (read: sum of 1 GiB; a copy moves {copy:.1f} GB/s read + write; "
          f"{args.threads} threads)")


def main():
    if args.bandwidth:
        bandwidth()
        return
    if args.write_random_124m:
        write_random_124m(args.write_random_124m)
        return
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    extra = cfg.get("normcore", {})
    for key, want in (("norm", "layernorm"), ("placement", "pre"), ("positions", "learned")):
        if extra.get(key, want) != want:
            sys.exit(f"pytorch_generate: only GPT-2 with {key} {want}, got {extra[key]}")
    p = read_safetensors(os.path.join(args.model, "model.safetensors"))
    # normcore writes GPT2Model's names (h.0..., wte), transformers'
    # GPT2LMHeadModel the same under "transformer.": read both.
    p = {k if k.startswith("transformer.") or k == "lm_head.weight" else "transformer." + k: v for k, v in p.items()}
    prompt = [int(i) for i in args.prompt_ids.split(",")]
    with torch.no_grad():
        model = GPT2(p, cfg)
        start = time.perf_counter()
        # normcore's window (nn/generate.cpp): once the text outgrows the
        # block, the context drops its oldest half block at a time and the
        # cache is refilled from what is left.
        P = cfg["n_positions"]
        shift = max(1, P // 2)
        tokens, out, cache_start = list(prompt), [], 0
        for _ in range(args.tokens):
            n = len(tokens)
            first = 0 if n <= P else (n - P + shift - 1) // shift * shift
            if first == cache_start and model.length == n - first - 1 and model.length > 0:
                logits = model.forward(torch.tensor([tokens[-1]]))  # one new token
            else:
                model.length, cache_start = 0, first
                logits = model.forward(torch.tensor(tokens[first:]))
            nxt = int(torch.argmax(logits))
            tokens.append(nxt)
            out.append(nxt)
        seconds = time.perf_counter() - start
    print(f"generated {len(out)} tokens in {seconds:.3f} s: {len(out) / seconds:.1f} tokens/s ({pytorch_setup.setting()})")
    if args.out:
        decode = byte_decoder(args.vocab) if args.vocab else {i: bytes([i]) for i in range(256)}
        with open(args.out, "wb") as f:
            f.write(b"".join(decode[i] for i in out))


main()
