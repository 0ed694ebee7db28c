#!/usr/bin/python3
"""normcore's bfloat16 products against PyTorch's own CPU autocast.

The same GPT-2 (make run's: L4 C128 H4 T128, vocabulary 256), the same
initial weights, the same batches and the same optimizer, trained four ways:
normcore in float32 and with `--precision bf16`, PyTorch in float32 and under
`torch.autocast("cpu", dtype=torch.bfloat16)`. The question is whether
normcore's bf16-minus-fp32 loss gap is no larger than PyTorch's.

- initial weights: normcore writes them (`train --lr 1e-30 --steps 1 --save`:
  a step that small changes no float32 weight) and both sides load them;
- batches: `--no-shuffle`, so window j of batch i starts at token
  (i B + j) T of the training split (the first 90% of the bytes of Debian's
  fortunes, files sorted, .dat and .u8 skipped), wrapping around its end;
- AdamW(0.9, 0.99, eps 1e-8), weight decay 0.1 on the linear layers' weights
  only, global gradient norm clipped to 1, learning rate 2e-3 with 100
  warm-up steps and a cosine decay to a tenth: normcore's defaults.

usage (from the repository root; Debian's python3-torch):
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 results/mixed-precision/autocast.py [--steps 1000] [--build build]
Writes results/mixed-precision/autocast/losses.csv and prints the summary.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F

HERE = "results/mixed-precision/autocast"
B, T, V, C, L, H = 16, 128, 256, 128, 4, 4
CORPUS = "/usr/share/games/fortunes"


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32).reshape(info["shape"]).clone()
    return out


def corpus_tokens():
    files = []
    for root, _, names in os.walk(CORPUS, followlinks=True):
        for name in names:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not name.endswith((".dat", ".u8")):
                files.append(path)
    text = b"".join(open(p, "rb").read() for p in sorted(files))
    return torch.tensor(list(text[: int(len(text) * 0.9)]), dtype=torch.long)


def batch(tokens, i):
    n = len(tokens)
    starts = [((i * B + j) * T) % n for j in range(B)]
    idx = torch.tensor([[(s + t) % n for t in range(T + 1)] for s in starts])
    w = tokens[idx]
    return w[:, :-1], w[:, 1:]


def forward(p, ids):
    """GPT-2 as normcore's nn/models.cpp, on Hugging Face's names and layouts (Conv1D: x W)."""
    x = p["wte.weight"][ids] + p["wpe.weight"][: ids.shape[1]]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for i in range(L):
        h = f"h.{i}."
        a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], 1e-5)
        qkv = a @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        y = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1) @ v
        x = x + y.transpose(1, 2).reshape(B, T, C) @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
        a = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], 1e-5)
        m = F.gelu(a @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"], approximate="tanh")
        x = x + m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
    return x @ p["wte.weight"].t()


def learning_rate(step, total, lr=2e-3, warmup=100, floor_ratio=0.1):
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - 1 - warmup))
    floor = floor_ratio * lr
    return floor + 0.5 * (lr - floor) * (1 + math.cos(math.pi * progress))


def train_pytorch(init, tokens, steps, autocast):
    p = {k: v.clone().requires_grad_(True) for k, v in init.items()}
    # normcore decays the linear layers' weights only (not embeddings, norms, biases).
    decayed = [v for k, v in p.items() if k.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))]
    rest = [v for k, v in p.items() if not k.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))]
    opt = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=2e-3, betas=(0.9, 0.99), eps=1e-8)
    losses = []
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = learning_rate(step, steps)
        ids, targets = batch(tokens, step)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = forward(p, ids)
            loss = F.cross_entropy(logits.float().reshape(-1, V), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses


def normcore_losses(build, run_dir, steps, precision, init_dir):
    subprocess.run([f"{build}/normcore", "train", "--no-shuffle", "--steps", str(steps), "--eval-every", "0",
                    "--sample-tokens", "0", "--precision", precision, "--init", init_dir, "--run-dir", run_dir],
                   check=True, stdout=subprocess.DEVNULL)
    with open(f"{run_dir}/train_log.csv") as f:
        next(f)
        return [float(line.split(",")[1]) for line in f]


def mean(xs):
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(HERE, exist_ok=True)
    init_dir = f"{HERE}/init/"
    subprocess.run([f"{args.build}/normcore", "train", "--steps", "1", "--lr", "1e-30", "--eval-every", "0",
                    "--sample-tokens", "0", "--run-dir", f"{HERE}/init-run", "--save", init_dir],
                   check=True, stdout=subprocess.DEVNULL)
    init = read_safetensors(f"{init_dir}/model.safetensors")
    tokens = corpus_tokens()
    runs = {
        "normcore_fp32": normcore_losses(args.build, f"{HERE}/nc-fp32", args.steps, "fp32", init_dir),
        "normcore_bf16": normcore_losses(args.build, f"{HERE}/nc-bf16", args.steps, "bf16", init_dir),
        "pytorch_fp32": train_pytorch(init, tokens, args.steps, False),
        "pytorch_autocast_bf16": train_pytorch(init, tokens, args.steps, True),
    }
    names = list(runs)
    with open(f"{HERE}/losses.csv", "w") as f:
        f.write("step," + ",".join(names) + "\n")
        for s in range(args.steps):
            f.write(f"{s + 1}," + ",".join(f"{runs[n][s]:.6f}" for n in names) + "\n")
    nc32, nc16, pt32, pt16 = (runs[n] for n in names)
    last = max(1, args.steps // 2)

    def gap(a, b):  # mean and largest 100-step mean of b - a over the last half
        d = [y - x for x, y in zip(a, b)][-last:]
        windows = [abs(mean(d[i:i + 100])) for i in range(0, max(1, len(d) - 99))]
        return mean(d), max(windows), mean([abs(x) for x in d])

    print(f"steps {args.steps}; the same initial weights, batches and optimizer on both sides")
    print(f"first 5 steps, normcore fp32 - pytorch fp32: " + " ".join(f"{a - b:+.2e}" for a, b in zip(nc32[:5], pt32[:5])))
    for label, (a, b) in [("normcore fp32 vs pytorch fp32 (the same computation)", (pt32, nc32)),
                          ("normcore bf16 - normcore fp32", (nc32, nc16)),
                          ("pytorch autocast bf16 - pytorch fp32", (pt32, pt16))]:
        m, w, absm = gap(a, b)
        print(f"{label:55s} over the last {last} steps: mean {m:+.4f}, mean |diff| {absm:.4f}, "
              f"largest 100-step mean {w:.4f}")
    print(f"final 100-step mean loss: " + ", ".join(f"{n} {mean(runs[n][-100:]):.4f}" for n in names))


if __name__ == "__main__":
    sys.exit(main())
