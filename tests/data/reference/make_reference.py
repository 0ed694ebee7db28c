#!/usr/bin/env python3
"""Makes the model reference dumps of tests/test_reference_models.cpp.

For eight small models with random weights (GPT-2 with the pre and the post
placement, Llama with grouped-query attention and RoPE, a ViT, GPT-2 and
Llama with differential attention: the official kind, GPT-2 only, and the
DyT regime study's kind; and GPT-2 with every LayerNorm replaced by Dynamic
Tanh) it writes
a Hugging Face model directory (config.json + model.safetensors, the names
and layouts GPT2LMHeadModel, LlamaForCausalLM and ViTForImageClassification
use) and expected.safetensors: what an independent float64 implementation of
each model, written here with PyTorch, computes from those weights:

  language models: logits_T{1,2,7,48} [T, 256] for a fixed byte sequence
                   (ids_T48 holds it), and greedy_1 / greedy_10 [32], the
                   greedy continuation (temperature 0) of the one-byte prompt
                   prompt_1 and the ten-byte prompt prompt_10 (and
                   generate_{1,10}.bin: prompt and continuation as bytes);
  ViT:             images [3, 3, 8, 8] and logits [3, 5], and the logits of
                   the first image alone, logits_B1 [1, 5].

The weights are stored as float32 (what HF writes); the reference computes in
float64 on those exact values. Needs Debian's python3-torch only:

    /usr/bin/python3 tests/data/reference/make_reference.py
"""
import json
import math
import os
import struct

import torch

torch.set_default_dtype(torch.float64)
HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 256
BLOCK = 48
STEPS = 32


# ---- safetensors, written by hand (the format is an 8-byte header length, a JSON header, raw data) ----

def write_safetensors(path, tensors):
    names = sorted(tensors)
    header, blobs, offset = {}, [], 0
    codes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    for name in names:
        t = tensors[name].contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---- the building blocks, float64 ------------------------------------------------------------

def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def attention(q, k, v, causal):
    """q [H, T, d], k, v [H, T, d]: softmax(q k^T / sqrt(d) + mask) v."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        T = q.shape[1]
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return torch.softmax(s, -1) @ v


def rope(x, theta):
    """Hugging Face's rotate_half form on x [H, T, d]."""
    d, T = x.shape[-1], x.shape[-2]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    ang = torch.cat([ang, ang], -1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * torch.cos(ang) + torch.cat([-x2, x1], -1) * torch.sin(ang)


def differential(q, k, v, H, p, pre, layer, kind, eps, theta=None):
    """Differential attention on one sequence. q, k [T, 2C'] hold, per head,
    its two sub-heads side by side; v [T, C]. Returns [T, C] before the output
    projection. kind "differential": the official Diff-Transformer (sub-heads
    of C/H/2, per-head RMSNorm with a gain, lambda_init at depth l);
    "differential-regime": the DyT regime study's model.py (sub-heads of C/H,
    torch's group_norm without affine applied to each position, lambda_init
    at depth l + 1)."""
    T, C = v.shape
    hd = C // H
    d = q.shape[-1] // (2 * H)
    q = q.reshape(T, H, 2, d)
    k = k.reshape(T, H, 2, d)
    vh = v.reshape(T, H, hd).transpose(0, 1)
    q1, q2 = q[:, :, 0].transpose(0, 1), q[:, :, 1].transpose(0, 1)
    k1, k2 = k[:, :, 0].transpose(0, 1), k[:, :, 1].transpose(0, 1)
    if theta is not None:
        q1, q2, k1, k2 = (rope(t, theta) for t in (q1, q2, k1, k2))
    depth = layer + 1 if kind == "differential-regime" else layer
    lambda_init = 0.8 - 0.6 * math.exp(-0.3 * depth)
    lam = (torch.exp((p[pre + "lambda_q1"] * p[pre + "lambda_k1"]).sum())
           - torch.exp((p[pre + "lambda_q2"] * p[pre + "lambda_k2"]).sum()) + lambda_init)
    o = attention(q1, k1, vh, True) - lam * attention(q2, k2, vh, True)  # [H, T, hd]
    o = o.transpose(0, 1)  # [T, H, hd]
    if kind == "differential-regime":
        o = torch.nn.functional.group_norm(o.reshape(T, C), H, eps=1e-5)  # one position: groups over channels only
    else:
        o = rms_norm(o, p[pre + "subln.weight"], 1e-5).reshape(T, C)
    return o * (1 - lambda_init)


# ---- the models ----------------------------------------------------------------------------

def gpt2_forward(p, cfg, ids):
    C, H, L, eps = cfg["n_embd"], cfg["n_head"], cfg["n_layer"], cfg["layer_norm_epsilon"]
    placement = cfg["normcore"]["placement"]
    kind = cfg["normcore"].get("attention", "standard")
    T, hd = len(ids), C // H
    x = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][:T]
    if "transformer.embed_scale" in p:  # a learnable scalar on the embeddings (the DyT paper's LLaMA recipe)
        x = x * p["transformer.embed_scale"]

    def attn(a, i):
        pre = f"transformer.h.{i}.attn."
        qkv = a @ p[pre + "c_attn.weight"] + p[pre + "c_attn.bias"]  # Conv1D: [in, out]
        if kind != "standard":
            qk = (qkv.shape[-1] - C) // 2  # [q; k; v] with q, k of 2C (regime) or C (official)
            y = differential(qkv[:, :qk], qkv[:, qk:2 * qk], qkv[:, 2 * qk:], H, p, pre, i, kind, eps)
            return y @ p[pre + "c_proj.weight"] + p[pre + "c_proj.bias"]
        q, k, v = (t.reshape(T, H, hd).transpose(0, 1) for t in qkv.split(C, -1))
        y = attention(q, k, v, True).transpose(0, 1).reshape(T, C)
        return y @ p[pre + "c_proj.weight"] + p[pre + "c_proj.bias"]

    def mlp(a, i):
        pre = f"transformer.h.{i}.mlp."
        h = gelu_tanh(a @ p[pre + "c_fc.weight"] + p[pre + "c_fc.bias"])
        return h @ p[pre + "c_proj.weight"] + p[pre + "c_proj.bias"]

    def ln(a, name):
        if cfg["normcore"].get("norm") == "dyt":  # Dynamic Tanh: weight * tanh(alpha x) + bias
            return torch.tanh(p[name + ".alpha"] * a) * p[name + ".weight"] + p[name + ".bias"]
        return layer_norm(a, p[name + ".weight"], p[name + ".bias"], eps)

    for i in range(L):
        b = f"transformer.h.{i}."
        if placement == "pre":
            x = x + attn(ln(x, b + "ln_1"), i)
            x = x + mlp(ln(x, b + "ln_2"), i)
        elif placement == "post":
            x = ln(x + attn(x, i), b + "ln_1")
            x = ln(x + mlp(x, i), b + "ln_2")
    if placement == "pre":
        x = ln(x, "transformer.ln_f")
    return x @ p["transformer.wte.weight"].T  # the tied head


def llama_forward(p, cfg, ids):
    C, H, Hkv, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    T, hd = len(ids), C // H
    x = p["model.embed_tokens.weight"][ids]
    for i in range(L):
        b = f"model.layers.{i}."
        a = rms_norm(x, p[b + "input_layernorm.weight"], eps)
        kind = cfg.get("normcore", {}).get("attention", "standard")
        if kind != "standard":
            y = differential(a @ p[b + "self_attn.q_proj.weight"].T, a @ p[b + "self_attn.k_proj.weight"].T,
                             a @ p[b + "self_attn.v_proj.weight"].T, H, p, b + "self_attn.", i, kind, eps, theta)
            x = x + y @ p[b + "self_attn.o_proj.weight"].T
            a = rms_norm(x, p[b + "post_attention_layernorm.weight"], eps)
            g, u = a @ p[b + "mlp.gate_proj.weight"].T, a @ p[b + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(g) * u) @ p[b + "mlp.down_proj.weight"].T
            continue
        q = (a @ p[b + "self_attn.q_proj.weight"].T).reshape(T, H, hd).transpose(0, 1)
        k = (a @ p[b + "self_attn.k_proj.weight"].T).reshape(T, Hkv, hd).transpose(0, 1)
        v = (a @ p[b + "self_attn.v_proj.weight"].T).reshape(T, Hkv, hd).transpose(0, 1)
        q, k = rope(q, theta), rope(k, theta)
        k = k.repeat_interleave(H // Hkv, 0)  # query head h reads kv head h // (H / Hkv)
        v = v.repeat_interleave(H // Hkv, 0)
        y = attention(q, k, v, True).transpose(0, 1).reshape(T, C)
        x = x + y @ p[b + "self_attn.o_proj.weight"].T
        a = rms_norm(x, p[b + "post_attention_layernorm.weight"], eps)
        g = a @ p[b + "mlp.gate_proj.weight"].T
        u = a @ p[b + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ p[b + "mlp.down_proj.weight"].T
    x = rms_norm(x, p["model.norm.weight"], eps)
    return x @ p["lm_head.weight"].T


def vit_forward(p, cfg, images):
    C, H, L, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
    P = cfg["patch_size"]
    e = "vit.embeddings."
    x = torch.nn.functional.conv2d(images, p[e + "patch_embeddings.projection.weight"],
                                   p[e + "patch_embeddings.projection.bias"], stride=P)
    x = x.flatten(2).transpose(1, 2)  # [B, N, C]
    B = x.shape[0]
    x = torch.cat([p[e + "cls_token"].expand(B, 1, C), x], 1) + p[e + "position_embeddings"]
    out = []
    for n in range(B):
        h = x[n]
        T, hd = h.shape[0], C // H
        for i in range(L):
            b = f"vit.encoder.layer.{i}."
            a = layer_norm(h, p[b + "layernorm_before.weight"], p[b + "layernorm_before.bias"], eps)
            q, k, v = ((a @ p[b + f"attention.attention.{w}.weight"].T + p[b + f"attention.attention.{w}.bias"])
                       .reshape(T, H, hd).transpose(0, 1) for w in ("query", "key", "value"))
            y = attention(q, k, v, False).transpose(0, 1).reshape(T, C)
            h = h + y @ p[b + "attention.output.dense.weight"].T + p[b + "attention.output.dense.bias"]
            a = layer_norm(h, p[b + "layernorm_after.weight"], p[b + "layernorm_after.bias"], eps)
            m = gelu_erf(a @ p[b + "intermediate.dense.weight"].T + p[b + "intermediate.dense.bias"])
            h = h + m @ p[b + "output.dense.weight"].T + p[b + "output.dense.bias"]
        h = layer_norm(h, p["vit.layernorm.weight"], p["vit.layernorm.bias"], eps)
        out.append(h[0] @ p["classifier.weight"].T + p["classifier.bias"])
    return torch.stack(out)


# ---- random weights --------------------------------------------------------------------------

def random_weights(shapes, seed):
    """Weights ~ N(0, 1/fan_in) for matrices (logits of order 1, so greedy
    choices are far from ties), norms' gains near 1, biases small; stored
    as float32, used by the reference as those exact values in float64."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in shapes.items():
        if name.endswith(".attn.bias"):
            out[name] = torch.tril(torch.ones(shape[-2], shape[-1])).reshape(shape).to(torch.float32)
            continue
        t = torch.randn(*shape, generator=g)
        if name.endswith("embed_scale"):
            t = 4 + t  # around sqrt(C) = 5.7, the DyT paper's start
        elif name.endswith(".alpha"):
            t = 2 + 0.5 * t  # DyT's alpha, around the regime study's alpha0 = 2
        elif "lambda_" in name:
            t = 0.1 * t  # differential attention's lambda vectors, as initialized (lambda stays near lambda_init)
        elif "norm" in name or "ln" in name.split(".")[-2]:
            t = 1 + 0.1 * t if name.endswith("weight") else 0.1 * t
        elif name.endswith("bias"):
            t = 0.1 * t
        elif len(shape) >= 2:
            fan_in = shape[0] if name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")) else math.prod(shape[1:])
            if "wte" in name or "wpe" in name or "embed" in name or "position" in name or "cls" in name:
                fan_in = 1
            t = t / math.sqrt(fan_in)
        out[name] = t.to(torch.float32)
    return out


def differential_shapes(b, C, H, kind):
    """The lambda vectors (and the official kind's per-head gain) of one attention layer."""
    d = C // H if kind == "differential-regime" else C // H // 2
    s = {b + n: (d,) for n in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")}
    if kind == "differential":
        s[b + "subln.weight"] = (2 * d,)
    return s


def gpt2_model(placement, attention="standard", norm="layernorm", embed_scale=False):
    C, H, L = 32, 4, 2
    qk = 2 * C if attention == "differential-regime" else C
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": L, "n_embd": C, "n_head": H,
           "vocab_size": VOCAB, "n_positions": BLOCK, "n_ctx": BLOCK, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new", "tie_word_embeddings": True, "normcore": {"placement": placement}}
    if attention != "standard":
        cfg["normcore"]["attention"] = attention
    if norm == "dyt":
        cfg["normcore"]["norm"] = "dyt"
    s = {"transformer.wte.weight": (VOCAB, C), "transformer.wpe.weight": (BLOCK, C)}
    if embed_scale:
        cfg["normcore"]["embed_scale0"] = math.sqrt(C)
        s["transformer.embed_scale"] = (1,)
    for i in range(L):
        b = f"transformer.h.{i}."
        if norm == "dyt":
            s.update({b + "ln_1.alpha": (1,), b + "ln_2.alpha": (1,)})
        s.update({b + "ln_1.weight": (C,), b + "ln_1.bias": (C,), b + "ln_2.weight": (C,), b + "ln_2.bias": (C,),
                  b + "attn.c_attn.weight": (C, 2 * qk + C), b + "attn.c_attn.bias": (2 * qk + C,),
                  b + "attn.c_proj.weight": (C, C), b + "attn.c_proj.bias": (C,),
                  b + "mlp.c_fc.weight": (C, 4 * C), b + "mlp.c_fc.bias": (4 * C,),
                  b + "mlp.c_proj.weight": (4 * C, C), b + "mlp.c_proj.bias": (C,)})
        if attention != "standard":
            s.update(differential_shapes(b + "attn.", C, H, attention))
        if placement == "pre" and attention == "standard":
            s[b + "attn.bias"] = (1, 1, BLOCK, BLOCK)  # the mask buffer older files carry; skipped on load
    if placement == "pre":
        s.update({"transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,)})
        if norm == "dyt":
            s["transformer.ln_f.alpha"] = (1,)
    return cfg, s, gpt2_forward


def llama_model(attention="standard"):
    C, H, Hkv, L, F = 32, 4, 2, 2, 48
    if attention != "standard":
        Hkv = H  # differential attention has no grouped-query form
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": L, "hidden_size": C,
           "num_attention_heads": H, "num_key_value_heads": Hkv, "vocab_size": VOCAB, "max_position_embeddings": BLOCK,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
           "intermediate_size": F, "attention_bias": False, "mlp_bias": False}
    if attention != "standard":
        cfg["normcore"] = {"attention": attention}
    kv = Hkv * (C // H)
    qk = 2 * C if attention == "differential-regime" else C
    s = {"model.embed_tokens.weight": (VOCAB, C), "model.norm.weight": (C,), "lm_head.weight": (VOCAB, C)}
    for i in range(L):
        b = f"model.layers.{i}."
        s.update({b + "input_layernorm.weight": (C,), b + "post_attention_layernorm.weight": (C,),
                  b + "self_attn.q_proj.weight": (qk, C), b + "self_attn.k_proj.weight": (qk if attention != "standard" else kv, C),
                  b + "self_attn.v_proj.weight": (kv, C), b + "self_attn.o_proj.weight": (C, C),
                  b + "mlp.gate_proj.weight": (F, C), b + "mlp.up_proj.weight": (F, C), b + "mlp.down_proj.weight": (C, F)})
        if attention != "standard":
            s.update(differential_shapes(b + "self_attn.", C, H, attention))
    return cfg, s, llama_forward


def vit_model():
    C, H, L, S, P, ch, classes = 32, 4, 2, 8, 4, 3, 5
    n = (S // P) ** 2
    cfg = {"architectures": ["ViTForImageClassification"], "model_type": "vit", "num_hidden_layers": L,
           "hidden_size": C, "num_attention_heads": H, "intermediate_size": 4 * C, "image_size": S, "patch_size": P,
           "num_channels": ch, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "qkv_bias": True,
           "id2label": {str(i): f"LABEL_{i}" for i in range(classes)}}
    e = "vit.embeddings."
    s = {e + "cls_token": (1, 1, C), e + "position_embeddings": (1, n + 1, C),
         e + "patch_embeddings.projection.weight": (C, ch, P, P), e + "patch_embeddings.projection.bias": (C,),
         "vit.layernorm.weight": (C,), "vit.layernorm.bias": (C,), "classifier.weight": (classes, C),
         "classifier.bias": (classes,)}
    for i in range(L):
        b = f"vit.encoder.layer.{i}."
        for w in ("query", "key", "value"):
            s[b + f"attention.attention.{w}.weight"] = (C, C)
            s[b + f"attention.attention.{w}.bias"] = (C,)
        s.update({b + "attention.output.dense.weight": (C, C), b + "attention.output.dense.bias": (C,),
                  b + "layernorm_before.weight": (C,), b + "layernorm_before.bias": (C,),
                  b + "layernorm_after.weight": (C,), b + "layernorm_after.bias": (C,),
                  b + "intermediate.dense.weight": (4 * C, C), b + "intermediate.dense.bias": (4 * C,),
                  b + "output.dense.weight": (C, 4 * C), b + "output.dense.bias": (C,)})
    return cfg, s, vit_forward


def greedy(forward, p, cfg, prompt):
    ids, margins = list(prompt), []
    for _ in range(STEPS):
        logits = forward(p, cfg, torch.tensor(ids))[-1]
        top = torch.topk(logits, 2).values
        margins.append(float(top[0] - top[1]))
        ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):], min(margins)


def main():
    seq = torch.tensor(list(b"A fortune for a test: Normalization, placed well"[:BLOCK]))
    assert len(seq) == BLOCK
    prompts = {"prompt_1": list(b"\n"), "prompt_10": list(b"It is a tr")}
    models = {"gpt2_pre": gpt2_model("pre"), "gpt2_post": gpt2_model("post"), "llama_gqa": llama_model(),
              "vit": vit_model(), "gpt2_diff": gpt2_model("pre", "differential"),
              "gpt2_diff_regime": gpt2_model("pre", "differential-regime"),
              "llama_diff_regime": llama_model("differential-regime"),
              "gpt2_dyt": gpt2_model("pre", norm="dyt"),
              "gpt2_dyt_embed_scale": gpt2_model("pre", norm="dyt", embed_scale=True)}
    for k, (name, (cfg, shapes, forward)) in enumerate(models.items()):
        d = os.path.join(HERE, name)
        os.makedirs(d, exist_ok=True)
        w32 = random_weights(shapes, 1000 + k)
        p = {n: t.to(torch.float64) for n, t in w32.items()}
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        write_safetensors(os.path.join(d, "model.safetensors"), w32)
        expected = {}
        with torch.no_grad():
            if cfg["model_type"] == "vit":
                g = torch.Generator().manual_seed(7)
                images = torch.randn(3, cfg["num_channels"], cfg["image_size"], cfg["image_size"], generator=g)
                expected["images"] = images
                expected["logits"] = forward(p, cfg, images)
                expected["logits_B1"] = forward(p, cfg, images[:1])
                print(f"{name}: logits {tuple(expected['logits'].shape)}")
            else:
                expected["ids_T48"] = seq.to(torch.int64)
                for T in (1, 2, 7, BLOCK):
                    expected[f"logits_T{T}"] = forward(p, cfg, seq[:T])
                for pname, prompt in prompts.items():
                    out, margin = greedy(forward, p, cfg, prompt)
                    expected[pname] = torch.tensor(prompt, dtype=torch.int64)
                    expected["greedy_" + pname.split("_")[1]] = torch.tensor(out, dtype=torch.int64)
                    print(f"{name}: greedy after {pname}: {bytes(out)!r} (smallest top-2 logit gap {margin:.4f})")
                    # What `normcore generate --temperature 0 --out FILE` must write (tests/cli_test.sh).
                    with open(os.path.join(d, "generate_" + pname.split("_")[1] + ".bin"), "wb") as f:
                        f.write(bytes(prompt + out))
        write_safetensors(os.path.join(d, "expected.safetensors"), expected)


if __name__ == "__main__":
    main()
