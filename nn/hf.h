// hf.h — Hugging Face compatibility: weights in their layout, config.json.
//
// Our parameter names already are Hugging Face's; two layouts differ:
//   - HF GPT-2 stores every linear weight as Conv1D, [in, out]; ours are
//     [out, in] (nn.Linear). We transpose on save and on load.
//   - HF ViT's patch projection is a Conv2d weight [C, ch, p, p]; ours is the
//     same numbers as a matrix [C, ch*p*p]. We reshape.
// Files written with to_hf_layout therefore load in transformers, and their
// model.safetensors loads here.
#pragma once

#include <map>
#include <string>

#include "nn/models.h"

namespace nc {
namespace nn {

std::map<std::string, Tensor> to_hf_layout(const TransformerModel& model);
// Converts HF-layout tensors to ours and loads them (strict: every mismatch
// is listed). Tolerates what HF files carry that is not a parameter: GPT-2's
// causal-mask buffers (attn.bias, attn.masked_bias), a "transformer." prefix,
// and lm_head.weight when the head is tied.
void load_hf_layout(TransformerModel& model, std::map<std::string, Tensor> tensors);

// config.json as GPT2LMHeadModel, LlamaForCausalLM or ViTForImageClassification
// write it (plus normcore's own keys for the variants), and back.
std::string hf_config_json(const TransformerConfig& cfg);
TransformerConfig config_from_hf_json(const std::string& text, const std::string& source);

}  // namespace nn
}  // namespace nc
