// The shape of a model with every family default filled in: what the transformer is built from,
// and what is saved next to the weights (model.json) for `generate` and `eval` to rebuild it.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace hftrain::model {

struct ModelSpec {
  config::ModelArch arch = config::ModelArch::kGpt2;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_kv_head = 0;
  int64_t d_model = 0;
  int64_t d_ff = 0;
  int64_t max_seq_len = 0;
  int64_t vocab_size = 0;
  double rope_theta = 10000;
  double norm_eps = 1e-5;
  double dropout = 0;
  bool tie_embeddings = true;
  double init_std = 0.02;

  // The family's choices (what makes GPT-2 GPT-2 and Llama Llama).
  bool learned_positions() const { return arch == config::ModelArch::kGpt2; }  // else RoPE
  bool layer_norm() const { return arch == config::ModelArch::kGpt2; }         // else RMSNorm
  bool gated_mlp() const { return arch == config::ModelArch::kLlama; }         // SwiGLU, else GELU
  bool biases() const { return arch == config::ModelArch::kGpt2; }
  int64_t head_dim() const { return d_model / n_head; }

  static ModelSpec from_config(const config::ModelConfig& config);
  std::string to_json() const;
  // Throws CheckpointError naming `source` for a missing or malformed field.
  static ModelSpec from_json(const std::string& text, const std::string& source);
};

}  // namespace hftrain::model
