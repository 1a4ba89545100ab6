// Rotary position embeddings with transformers' RoPE scaling types (rope_parameters.rope_type):
// default, linear, dynamic (NTK), llama3 and yarn. The inverse frequencies follow the formulas of
// transformers' modeling_rope_utils in the same float32 operations, so the tables equal the ones
// LlamaRotaryEmbedding builds bit for bit on the CPU.
#pragma once

#include <torch/types.h>

#include "model/spec.h"

namespace hftrain::model {

// cos and sin (max_seq_len, rotary_dim) float32 in the Hugging Face layout (the frequencies
// repeated over both halves of a head), already scaled by yarn's attention factor.
struct RopeTables {
  torch::Tensor cos;
  torch::Tensor sin;
};

// The inverse frequencies (rotary_dim / 2) float32 for `spec`'s theta and scaling. Dynamic NTK
// scaling only changes them past the model's length, which hftrain never runs, so within
// max_seq_len it equals the default (as in transformers).
torch::Tensor rope_inv_freq(const ModelSpec& spec);

RopeTables rope_tables(const ModelSpec& spec);

}  // namespace hftrain::model
