#!/usr/bin/env python3
"""Why does a small GPT-2 with DyT stay on the byte-frequency plateau?

Traces, step by step, what chapter 12's collapse does inside the model:
per DyT layer its alpha, mean |gamma|, saturation (|alpha x| > 2), the
gradient norm arriving at its output and leaving through its input; per
position in the residual stream (embeddings, after each block) its RMS and
the share of it that is the same for every token (the RMS of the mean over
the batch's positions divided by the RMS); the embedding table's RMS.

The model and recipe are dyt_collapse_check.py's (nanoGPT init, tied head,
AdamW 0.9/0.99, decay 0.1 on matrices, clip 1, warm-up then cosine), 4
blocks of 64 channels, batches of 8 x 64 bytes. Each variant changes one
thing, to test one candidate cause:

  none          no normalization at all (the control that trains)
  dyt           DyT everywhere, alpha0 2 (collapses)
  dyt-sgd       the same with SGD (momentum 0.9, lr 0.1)
  dyt-fixalpha  alpha not trained (is AdamW moving alpha the cause?)
  dyt-lnf       DyT in the blocks, LayerNorm before the head
  dyt-nobias    DyT without its beta (the DyT paper's LLaMA recipe)
  dyt-nolinearbias  DyT, and no biases in the Linear layers (the regime
                study's nanoGPT setting)
  dyt-embscale  the embedding output times a learnable scalar set to sqrt(C)
                (the DyT paper's LLaMA recipe)
  dyt-paper     the DyT paper's LLaMA recipe together: no beta, the embedding
                scalar, alpha0 0.8 in the attention norms and 0.2 elsewhere

Options follow a variant after '+': a=X (alpha0 of the blocks' DyTs), aa=X
(alpha0 of the attention norms), af=X (alpha0 of the final DyT), gf=X (the
final DyT's initial gain gamma0), final=ln|rms (the norm before the head),
s=X (a learnable scalar on the embeddings starting at X, for any variant:
none+s=35.36 is the model without a norm whose stream starts at RMS 1).
dyt+gf=17.7 is normcore's --dyt-final-gamma auto: 1 / (alpha0 0.02 sqrt 2).

    /usr/bin/python3 results/dyt-mechanism/dyt_trace.py runs/corpus OUT_DIR VARIANT...

writes OUT_DIR/trace-VARIANT.csv (every column) and OUT_DIR/trace-compact.csv
(a few columns of every variant) and prints a table, one line per variant.
"""
import math
import sys

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
L, C, H, T, B, TOKENS = 4, 64, 4, 64, 8, 1_000_000
STEPS, WARMUP, LR = 300, 80, 1e-3


class DyT(torch.nn.Module):
    def __init__(self, c, alpha0=2.0, bias=True, gamma0=1.0):
        super().__init__()
        self.alpha = torch.nn.Parameter(torch.tensor([alpha0]))
        self.weight = torch.nn.Parameter(torch.full((c,), gamma0))
        self.bias = torch.nn.Parameter(torch.zeros(c)) if bias else None

    def forward(self, x):
        if x.requires_grad:
            x.retain_grad()
        self.x = x
        z = self.alpha * x
        self.saturation = (z.detach().abs() > 2.0).float().mean().item()
        y = torch.tanh(z) * self.weight
        if self.bias is not None:
            y = y + self.bias
        if y.requires_grad:
            y.retain_grad()
        self.y = y
        return y


class RMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(C))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


class Block(torch.nn.Module):
    def __init__(self, attn_norm, ffn_norm, linear_bias):
        super().__init__()
        self.ln_1, self.ln_2 = attn_norm(), ffn_norm()
        self.c_attn = torch.nn.Linear(C, 3 * C, bias=linear_bias)
        self.attn_proj = torch.nn.Linear(C, C, bias=linear_bias)
        self.c_fc = torch.nn.Linear(C, 4 * C, bias=linear_bias)
        self.mlp_proj = torch.nn.Linear(4 * C, C, bias=linear_bias)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, -1)
        q, k, v = (u.view(b, t, H, C // H).transpose(1, 2) for u in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        y = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, C)
        x = x + self.attn_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def parse_variant(variant):
    """'dyt+af=0.5+final=rms' -> the base name and its options."""
    base, *opts = variant.split("+")
    return base, dict(o.split("=") for o in opts)


class GPT(torch.nn.Module):
    def __init__(self, variant):
        super().__init__()
        base, opts = parse_variant(variant)
        alpha0, alpha0_final = float(opts.get("a", 2.0)), float(opts.get("af", opts.get("a", 2.0)))
        if base == "dyt-paper":  # the DyT paper's LLaMA recipe (its 7B alpha0s unless given)
            alpha0, alpha0_final = float(opts.get("a", 0.2)), float(opts.get("af", opts.get("a", 0.2)))
        alpha0_attn = float(opts.get("aa", 0.8 if base == "dyt-paper" else alpha0))
        beta = base not in ("dyt-nobias", "dyt-paper")
        if base == "none":
            attn_norm = block_norm = final_norm = torch.nn.Identity
        else:
            attn_norm = lambda: DyT(C, alpha0_attn, bias=beta)
            block_norm = lambda: DyT(C, alpha0, bias=beta)
            final_norm = lambda: DyT(C, alpha0_final, bias=beta, gamma0=float(opts.get("gf", 1.0)))
            if base == "dyt-lnf" or opts.get("final") == "ln":
                final_norm = lambda: torch.nn.LayerNorm(C)
            if opts.get("final") == "rms":
                final_norm = RMSNorm
        self.wte = torch.nn.Embedding(256, C)
        self.wpe = torch.nn.Embedding(T, C)
        self.blocks = torch.nn.ModuleList(Block(attn_norm, block_norm, linear_bias=parse_variant(variant)[0] != "dyt-nolinearbias") for _ in range(L))
        self.ln_f = final_norm()
        scale = float(opts["s"]) if "s" in opts else math.sqrt(C) if base in ("dyt-embscale", "dyt-paper") else None
        self.embed_scale = torch.nn.Parameter(torch.tensor([scale])) if scale else None
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                torch.nn.init.normal_(p, 0.0, std)
        if parse_variant(variant)[0] == "dyt-fixalpha":
            for m in self.modules():
                if isinstance(m, DyT):
                    m.alpha.requires_grad_(False)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        if self.embed_scale is not None:
            x = x * self.embed_scale
        self.stream = [x.detach()]
        for block in self.blocks:
            x = block(x)
            self.stream.append(x.detach())
        return self.ln_f(x) @ self.wte.weight.T


def learning_rate(lr, step):
    if step < WARMUP:
        return lr * (step + 1) / WARMUP
    progress = min(1.0, (step - WARMUP) / max(1, STEPS - 1 - WARMUP))
    return 0.1 * lr + 0.5 * (lr - 0.1 * lr) * (1 + math.cos(math.pi * progress))


def rms(t):
    return t.pow(2).mean().sqrt().item()


def common_share(x):
    """RMS of the part of the stream every position shares, over the RMS."""
    return rms(x.mean(dim=(0, 1))) / max(rms(x), 1e-30)


def trace(variant, train_data):
    torch.manual_seed(1)
    model = GPT(variant)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    is_matrix = lambda n, p: p.dim() == 2 and "wte" not in n and "wpe" not in n
    groups = [{"params": [p for n, p in params if is_matrix(n, p)], "weight_decay": 0.1},
              {"params": [p for n, p in params if not is_matrix(n, p)], "weight_decay": 0.0}]
    if parse_variant(variant)[0] == "dyt-sgd":
        opt, lr = torch.optim.SGD(groups, lr=0.1, momentum=0.9), 0.1
    else:
        opt, lr = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.99), eps=1e-8), LR
    g = torch.Generator().manual_seed(2)
    dyts = [(n, m) for n, m in model.named_modules() if isinstance(m, DyT)]
    for step in range(STEPS):
        starts = torch.randint(0, len(train_data) - T - 1, (B,), generator=g)
        batch = torch.stack([train_data[s:s + T + 1] for s in starts])
        for group in opt.param_groups:
            group["lr"] = learning_rate(lr, step)
        loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        row = {"variant": variant, "step": step, "loss": loss.item(), "embedding_rms": rms(model.wte.weight.detach())}
        for i, x in enumerate(model.stream):
            name = "embeddings" if i == 0 else f"block{i - 1}"
            row[f"stream_rms_{name}"] = rms(x)
            row[f"stream_common_{name}"] = common_share(x)
        for n, m in dyts:
            row[f"alpha_{n}"] = m.alpha.item()
            row[f"gamma_{n}"] = m.weight.detach().abs().mean().item()
            row[f"saturation_{n}"] = m.saturation
            row[f"grad_out_{n}"] = m.y.grad.norm().item()
            row[f"grad_in_{n}"] = m.x.grad.norm().item() if m.x.grad is not None else 0.0
        yield row
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


COMPACT = ["loss", "stream_rms_block3", "stream_common_block3", "saturation_ln_f", "grad_in_ln_f", "embedding_rms"]


def summarize(variant, rows):
    """One line: where the run ended and when its final DyT saturated."""
    last = rows[-50:]
    loss = sum(r["loss"] for r in last) / len(last)
    sat = [k for k in rows[0] if k.startswith("saturation_")]
    first = next((r["step"] for r in rows if sat and r[sat[-1]] > 0.5), None)
    grad = [k for k in rows[0] if k.startswith("grad_in_")]
    end = rows[-1]
    return (f"| {variant} | {loss:.3f} | {'-' if first is None else first} | {end['stream_rms_block3']:.3g} | "
            f"{end['stream_common_block3']:.3f} | {' '.join('%.2f' % end[k] for k in sat) or '-'} | "
            f"{('%.2g' % end[grad[0]]) if grad else '-'} |")


def main():
    corpus, out_dir = sys.argv[1], sys.argv[2]
    with open(corpus + "/train.txt", "rb") as f:
        train_data = torch.tensor(list(f.read(TOKENS)), dtype=torch.long)
    lines = []
    with open(f"{out_dir}/trace-compact.csv", "w") as compact:
        compact.write("variant,step," + ",".join(COMPACT) + "\n")
        for variant in sys.argv[3:]:
            rows = []
            with open(f"{out_dir}/trace-{variant}.csv", "w") as out:
                for row in trace(variant, train_data):
                    if row["step"] == 0:
                        out.write(",".join(k for k in row if k != "variant") + "\n")
                    out.write(",".join(f"{v:.6g}" for k, v in row.items() if k != "variant") + "\n")
                    compact.write(f"{variant},{row['step']}," + ",".join(f"{row.get(k, float('nan')):.5g}" for k in COMPACT) + "\n")
                    rows.append(row)
            lines.append(summarize(variant, rows))
            print(lines[-1], flush=True)
    print(f"\nGPT-2 L={L} C={C} H={H}, {STEPS} steps of {B} x {T} bytes; torch {torch.__version__}")
    print("| variant | mean loss, last 50 steps | step the final DyT passed 50% saturation | stream RMS into the final norm "
          "| its common share | saturation per DyT (ln_1, ln_2 of blocks 0-3, ln_f) | gradient norm into block 0's first DyT |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
