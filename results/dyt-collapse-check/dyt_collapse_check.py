#!/usr/bin/env python3
"""Does a small byte-level GPT-2 with DyT collapse in PyTorch too?

An independent check of what `normcore experiment dyt` finds at its quick
scale: with every LayerNorm replaced by DyT (alpha0 = 2, the regime study's
setting), the 4-layer, 64-wide GPT-2 never leaves the byte-frequency plateau
and its upper DyT layers saturate. If that came from a bug in normcore, a
model written from scratch in PyTorch, the way the regime study's model.py
writes it (nanoGPT: N(0, 0.02) weights, residual projections
N(0, 0.02 / sqrt(2 L)), zero biases, tied head), and trained with the same
recipe (AdamW betas 0.9/0.99, weight decay 0.1 on matrices, gradient clip 1,
linear warm-up then cosine to a tenth) would train.

It trains vanilla and DyT at the study's tuning size (1M tokens) for 800
steps of 8 x 64 bytes at three learning rates and prints, every 100 steps,
the training loss and each DyT layer's saturation (|alpha x| > 2) on 32
held-out windows. Needs Debian's python3-torch and the studies' corpus
(`make corpus`); 30 CPU-minutes (45 minutes of wall time on 2 busy cores):

    /usr/bin/python3 results/dyt-collapse-check/dyt_collapse_check.py runs/corpus > results/dyt-collapse-check/output.txt
"""
import math
import sys

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
L, C, H, T, B, STEPS, WARMUP, TOKENS = 4, 64, 4, 64, 8, 800, 80, 1_000_000


class DyT(torch.nn.Module):
    def __init__(self, c, alpha0=2.0):
        super().__init__()
        self.alpha = torch.nn.Parameter(torch.tensor([alpha0]))
        self.weight = torch.nn.Parameter(torch.ones(c))
        self.bias = torch.nn.Parameter(torch.zeros(c))
        self.saturation = None

    def forward(self, x):
        z = self.alpha * x
        self.saturation = (z.detach().abs() > 2.0).float().mean().item()
        return torch.tanh(z) * self.weight + self.bias


def norm(kind):
    return DyT(C) if kind == "dyt" else torch.nn.LayerNorm(C, eps=1e-5)


class Block(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.ln_1, self.ln_2 = norm(kind), norm(kind)
        self.c_attn = torch.nn.Linear(C, 3 * C)
        self.attn_proj = torch.nn.Linear(C, C)
        self.c_fc = torch.nn.Linear(C, 4 * C)
        self.mlp_proj = torch.nn.Linear(4 * C, C)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, -1)
        q, k, v = (u.view(b, t, H, C // H).transpose(1, 2) for u in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        y = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, C)
        x = x + self.attn_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.wte = torch.nn.Embedding(256, C)
        self.wpe = torch.nn.Embedding(T, C)
        self.blocks = torch.nn.ModuleList(Block(kind) for _ in range(L))
        self.ln_f = norm(kind)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                torch.nn.init.normal_(p, 0.0, std)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T


def learning_rate(lr, step):
    if step < WARMUP:
        return lr * (step + 1) / WARMUP
    progress = min(1.0, (step - WARMUP) / max(1, STEPS - 1 - WARMUP))
    return 0.1 * lr + 0.5 * (lr - 0.1 * lr) * (1 + math.cos(math.pi * progress))


def train(kind, lr, train_data, held_out):
    torch.manual_seed(1)
    model = GPT(kind)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "wte" not in n and "wpe" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "wte" not in n and "wpe" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.99), eps=1e-8)
    g = torch.Generator().manual_seed(2)
    dyt_layers = [m for m in model.modules() if isinstance(m, DyT)]
    for step in range(STEPS):
        starts = torch.randint(0, len(train_data) - T - 1, (B,), generator=g)
        batch = torch.stack([train_data[s:s + T + 1] for s in starts])
        for group in opt.param_groups:
            group["lr"] = learning_rate(lr, step)
        loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % 100 == 0:
            with torch.no_grad():
                held = F.cross_entropy(model(held_out[:, :-1]).reshape(-1, 256), held_out[:, 1:].reshape(-1)).item()
            sat = " ".join(f"{m.saturation:.2f}" for m in dyt_layers)
            print(f"{kind:7s} lr {lr:g} step {step + 1:4d}: train {loss.item():.4f} held-out {held:.4f}"
                  + (f"  saturation per DyT layer (held out): {sat}" if dyt_layers else ""), flush=True)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else "runs/corpus"
    with open(corpus + "/train.txt", "rb") as f:
        train_data = torch.tensor(list(f.read(TOKENS)), dtype=torch.long)
    with open(corpus + "/tuning.txt", "rb") as f:
        tuning = torch.tensor(list(f.read()), dtype=torch.long)
    stride = (len(tuning) - T - 1) // 32
    held_out = torch.stack([tuning[i * stride:i * stride + T + 1] for i in range(32)])
    print(f"GPT-2 L={L} C={C} H={H}, {STEPS} steps of {B} x {T} bytes from the first {TOKENS} training bytes; "
          f"torch {torch.__version__}")
    for lr in (3e-4, 1e-3, 3e-3):
        for kind in ("vanilla", "dyt"):
            train(kind, lr, train_data, held_out)


if __name__ == "__main__":
    main()
