// Rotary position embeddings with transformers' RoPE scaling types (rope_parameters.rope_type):
// default, linear, dynamic (NTK), llama3, yarn and longrope (Phi-3: per-pair factors, a short set
// up to original_max_seq_len and a long one past it). The inverse frequencies follow the formulas of
// transformers' modeling_rope_utils in the same float32 operations, so the tables equal the ones
// LlamaRotaryEmbedding builds bit for bit on the CPU.
#pragma once

#include <torch/types.h>

#include "model/spec.h"

namespace hftrain::model {

// cos and sin (max_seq_len, rotary_dim) float32 in the Hugging Face layout (the frequencies
// repeated over both halves of a head), already scaled by yarn's or longrope's attention factor.
// longrope: cos and sin from the short factors, long_cos and long_sin from the long ones (a
// forward whose last position is past original_max_seq_len uses those for every position, as
// transformers does); otherwise the long ones are undefined.
struct RopeTables {
  torch::Tensor cos;
  torch::Tensor sin;
  torch::Tensor long_cos;
  torch::Tensor long_sin;
};

// The inverse frequencies (rotary_dim / 2) float32 for `spec`'s theta and scaling. Dynamic NTK
// scaling only changes them past the model's length, which hftrain never runs, so within
// max_seq_len it equals the default (as in transformers).
// `long_factors`: longrope's long set (else its short one; ignored by the other types).
torch::Tensor rope_inv_freq(const ModelSpec& spec, bool long_factors = false);

RopeTables rope_tables(const ModelSpec& spec);

}  // namespace hftrain::model
