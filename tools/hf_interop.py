#!/usr/bin/env python3
"""normcore against transformers' own models (run by tools/gpu_check.sh where
transformers is installed; nothing is downloaded).

For GPT2LMHeadModel, LlamaForCausalLM (grouped-query attention) and
ViTForImageClassification built from small configs with random weights and
written with save_pretrained (safetensors), `normcore --init DIR` must give:
  - the same loss on the same windows (`normcore eval`, float32),
  - the same greedy continuation (`normcore generate --temperature 0`),
  - the same weights after one AdamW step (`normcore train --steps 1 --save`),
    compared tensor by tensor, the largest difference printed.
Exit status 1 if any comparison is outside its tolerance.

    python3 tools/hf_interop.py --normcore build/gpu/normcore --device cuda --dir OUT
"""
import argparse
import os
import re
import subprocess
import sys

import torch
from safetensors.torch import load_file
import transformers as tf

failures = 0


def check(what, ok, detail):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}", flush=True)
    failures += 0 if ok else 1


def normcore(args, *cmd):
    r = subprocess.run([args.normcore, *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"normcore {' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


def windows(tokens, B, T, batches):
    """The --no-shuffle windows of normcore: window j of batch i starts at (i B + j) T."""
    n = len(tokens)
    out = []
    for i in range(batches):
        rows = [[tokens[((i * B + j) * T + t) % n] for t in range(T + 1)] for j in range(B)]
        out.append(torch.tensor(rows))
    return out


def language_model(args, name, model):
    d = os.path.join(args.dir, name)
    model.save_pretrained(d, safe_serialization=True)
    text = ("The quick brown fox jumps over the lazy dog. " * 40).encode()
    data = os.path.join(args.dir, "text.txt")
    with open(data, "wb") as f:
        f.write(text)
    tokens = list(text)
    B, T, batches = 4, 32, 3
    # eval: the last --val-fraction of the tokens (1: all), windows as above.
    out = normcore(args, "eval", "--init", d, "--data", data, "--seq", str(T), "--batch", str(B), "--batches",
                   str(batches), "--val-fraction", "1")
    ours = float(re.search(r"loss=([0-9.]+)", out).group(1))
    model.eval()
    with torch.no_grad():
        losses = [torch.nn.functional.cross_entropy(model(w[:, :-1]).logits.reshape(-1, 256), w[:, 1:].reshape(-1)).item()
                  for w in windows(tokens, B, T, batches)]
    theirs = sum(losses) / len(losses)
    check(f"{name} eval loss", abs(ours - theirs) < 1e-4 * max(1, abs(theirs)), f"normcore {ours:.6f}, transformers {theirs:.6f}")
    # generate: greedy bytes after a prompt.
    prompt = b"The quick"
    path = os.path.join(args.dir, f"{name}.gen")
    normcore(args, "generate", "--init", d, "--prompt", prompt.decode(), "--temperature", "0", "--max-tokens", "16",
             "--out", path)
    with open(path, "rb") as f:
        ours_text = f.read()
    with torch.no_grad():
        ids = model.generate(torch.tensor([list(prompt)]), max_new_tokens=16, do_sample=False, pad_token_id=0)
    theirs_text = bytes(ids[0].tolist())
    check(f"{name} greedy continuation", ours_text == theirs_text, f"normcore {ours_text!r}, transformers {theirs_text!r}")
    # One AdamW step on the first --no-shuffle batch: constant lr, no warm-up, no clipping, no decay.
    after = os.path.join(args.dir, f"{name}-step")
    normcore(args, "train", "--init", d, "--data", data, "--device", args.device, "--steps", "1", "--batch", str(B),
             "--seq", str(T), "--no-shuffle", "--lr", "1e-3", "--schedule", "constant", "--warmup", "0", "--grad-clip", "0",
             "--weight-decay", "0", "--beta1", "0.9", "--beta2", "0.99", "--eps", "1e-8", "--val-fraction", "0.1",
             "--eval-batches", "1", "--sample-tokens", "0", "--run-dir", after + "-run", "--save", after + "/")
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0)
    train_tokens = tokens[: int(len(tokens) * 0.9)]
    w = windows(train_tokens, B, T, 1)[0]
    loss = torch.nn.functional.cross_entropy(model(w[:, :-1]).logits.reshape(-1, 256), w[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    ours_w = load_file(os.path.join(after, "model.safetensors"))
    theirs_w = {k.removeprefix("transformer."): v for k, v in model.state_dict().items()}
    worst, where = 0.0, ""
    for k, v in ours_w.items():
        t = theirs_w.get(k, theirs_w.get("transformer." + k))
        if t is None or t.shape != v.shape:
            continue
        diff = (t.float() - v.float()).abs().max().item()
        if diff > worst:
            worst, where = diff, k
    check(f"{name} weights after one AdamW step", worst < 1e-5, f"largest difference {worst:.2e} ({where}), {len(ours_w)} tensors")


def vit(args):
    cfg = tf.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256, image_size=8,
                       patch_size=4, num_channels=3, num_labels=2, hidden_act="gelu", layer_norm_eps=1e-12)
    torch.manual_seed(3)
    model = tf.ViTForImageClassification(cfg).eval()
    d = os.path.join(args.dir, "vit")
    model.save_pretrained(d, safe_serialization=True)
    # Images as normcore reads them: 8-bit PNGs mapped to [-1, 1], channels first.
    import struct, zlib
    root = os.path.join(args.dir, "images")
    g = torch.Generator().manual_seed(4)
    pixels, labels = [], []
    for c, name in enumerate(["a", "b"]):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(4):
            img = torch.randint(0, 256, (8, 8, 3), generator=g, dtype=torch.uint8)
            rows = b"".join(b"\x00" + bytes(img[y].flatten().tolist()) for y in range(8))
            chunk = lambda t, dd: struct.pack(">I", len(dd)) + t + dd + struct.pack(">I", zlib.crc32(t + dd) & 0xFFFFFFFF)
            with open(os.path.join(root, name, f"{i}.png"), "wb") as f:
                f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
                        + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
            pixels.append(img.permute(2, 0, 1).float() / 127.5 - 1)
            labels.append(c)
    out = normcore(args, "eval", "--model", "vit", "--init", d, "--data", root)
    ours = float(re.search(r"loss=([0-9.]+)", out).group(1))
    with torch.no_grad():
        theirs = torch.nn.functional.cross_entropy(model(torch.stack(pixels)).logits, torch.tensor(labels)).item()
    check("vit eval loss", abs(ours - theirs) < 1e-4 * max(1, abs(theirs)), f"normcore {ours:.6f}, transformers {theirs:.6f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--normcore", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--dir", required=True)
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    torch.manual_seed(1)
    gpt2 = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64,
                                            activation_function="gelu_new"))
    torch.manual_seed(2)
    llama = tf.LlamaForCausalLM(tf.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                               num_key_value_heads=2, intermediate_size=128, vocab_size=256,
                                               max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False))
    for name, model in (("gpt2", gpt2), ("llama", llama)):
        try:
            language_model(args, name, model)
        except Exception as e:  # report, and go on with the next model
            check(name, False, str(e)[-1500:])
    try:
        vit(args)
    except Exception as e:
        check("vit", False, str(e)[-1500:])
    print(f"hf_interop: {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
