#!/usr/bin/python3
"""Times PyTorch on the same training steps as `normcore bench`.

GPT-2 and Llama at the sizes `tiny` (L=4, C=256, H=4, T=128, B=8) and `small`
(L=6, C=384, H=6, T=256, B=8), and with --sizes train also `train`'s default
model (L=4, C=128, H=4, T=128, B=16), vocabulary 256: forward, cross-entropy,
backward and an AdamW step, median of the timed steps after 2 warm-up steps.
The models mirror normcore's (nn/models.h): GPT-2 = learned positions,
pre-LayerNorm, GELU (tanh), biases, tied embeddings; Llama = RoPE, RMSNorm,
SwiGLU (hidden = 2/3 * 4C rounded up to 256), no biases, untied head.

Run with Debian's PyTorch (apt-get install python3-torch):

    /usr/bin/python3 bench/compare_pytorch.py [--threads 2] [--steps 5] [--json out.json]

PyTorch "tuned", as this script runs it unless --as-is is given: the
setting of pytorch_setup.py (OPENBLAS_CORETYPE probed, GOMP_SPINCOUNT=0,
the threads given). Debian's python3-torch needs libopenblas0-pthread, or
it runs on the reference BLAS.
"""
import argparse
import json
import math
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--models", default="gpt2,llama")
    p.add_argument("--sizes", default="tiny,small")
    p.add_argument("--json", default="")
    p.add_argument("--as-is", action="store_true", help="keep the environment's thread settings")
    p.add_argument("--coretype", default="auto", help="OPENBLAS_CORETYPE (auto: probe SkylakeX, Cooperlake, Zen, Haswell and OpenBLAS's own choice; "
                        "detected: OpenBLAS's own choice)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (PyTorch eager on the GPU; no BLAS tuning then)")
    p.add_argument("--precisions", default="fp32",
                   help="fp32 and/or bf16, comma-separated: bf16 runs forward and loss under "
                        "torch.autocast(device, dtype=torch.bfloat16), as normcore's bench --precisions does")
    return p.parse_args()


args = parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_setup  # noqa: E402

if not args.as_is and args.device == "cpu":
    pytorch_setup.tune_environment(args.threads, args.coretype)

import time  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)


class RMSNorm(nn.Module):
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, cos, sin):
    # x: [B, H, T, D]; rotate pairs (first half, second half) as normcore's rope.h does.
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Block(nn.Module):
    def __init__(self, c, h, llama):
        super().__init__()
        self.h, self.llama = h, llama
        self.register_buffer("mask", torch.triu(torch.ones(1024, 1024, dtype=torch.bool), diagonal=1),
                             persistent=False)
        norm = (lambda: RMSNorm(c)) if llama else (lambda: nn.LayerNorm(c))
        self.ln1, self.ln2 = norm(), norm()
        self.qkv = nn.Linear(c, 3 * c, bias=not llama)
        self.proj = nn.Linear(c, c, bias=not llama)
        if llama:
            hidden = ((2 * 4 * c // 3) + 255) // 256 * 256
            self.gate = nn.Linear(c, hidden, bias=False)
            self.up = nn.Linear(c, hidden, bias=False)
            self.down = nn.Linear(hidden, c, bias=False)
        else:
            self.fc = nn.Linear(c, 4 * c)
            self.fc2 = nn.Linear(4 * c, c)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        if self.llama:
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        # PyTorch 1.13 (Debian's) has no fused scaled_dot_product_attention:
        # the explicit form, as nanoGPT writes it for older versions.
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        z = self.ln2(x)
        if self.llama:
            return x + self.down(F.silu(self.gate(z)) * self.up(z))
        return x + self.fc2(F.gelu(self.fc(z), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, layers, c, h, t, vocab, llama):
        super().__init__()
        self.llama = llama
        self.wte = nn.Embedding(vocab, c)
        self.wpe = None if llama else nn.Embedding(t, c)
        self.blocks = nn.ModuleList(Block(c, h, llama) for _ in range(layers))
        self.ln_f = RMSNorm(c) if llama else nn.LayerNorm(c)
        self.head = nn.Linear(c, vocab, bias=False)
        if not llama:
            self.head.weight = self.wte.weight
        d = c // h
        inv = 1.0 / (10000 ** (torch.arange(0, d // 2).float() / (d // 2)))
        ang = torch.arange(t).float()[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, ids):
        x = self.wte(ids)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(ids.shape[1]))
        for b in self.blocks:
            x = b(x, self.cos, self.sin)
        return self.head(self.ln_f(x))


# layers, width, heads, sequence, batch, vocabulary (as `normcore bench --sizes`)
SIZES = {"train": (4, 128, 4, 128, 16, 256), "tiny": (4, 256, 4, 128, 8, 256), "small": (6, 384, 6, 256, 8, 256), "124m": (12, 768, 12, 1024, 8, 50257)}


def time_step(model_name, size, steps, precision="fp32"):
    layers, c, h, t, b, vocab = SIZES[size]
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = Model(layers, c, h, t, vocab, model_name == "llama").to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=3e-4)
    data = torch.randint(0, vocab, (b, t + 1), device=device)
    ids, targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(model(ids).view(-1, vocab).float(), targets.view(-1))
        loss.backward()
        opt.step()
        loss.item()  # waits for the GPU, as normcore bench does

    step()
    step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    ms = 1e3 * times[len(times) // 2]
    return {"model": model_name, "size": size, "precision": precision, "ms_per_step": ms, "tokens_per_s": b * t / (ms / 1e3),
            "params": sum(p.numel() for p in model.parameters())}


def main():
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '(unset)')}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(detected)')}")
    results = []
    for size in args.sizes.split(","):
        for m in args.models.split(","):
            for precision in args.precisions.split(","):
                r = time_step(m, size, args.steps, precision)
                results.append(r)
                print(f"  {m:6s} {size:6s} {precision:4s} {r['params'] / 1e6:6.2f}M params  {r['ms_per_step']:8.1f} ms/step  "
                      f"{r['tokens_per_s']:8.0f} tok/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "threads": args.threads,
                       "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""), "training": results}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
