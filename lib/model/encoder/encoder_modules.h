// Internal to lib/model: the building blocks the encoders (bert.cpp, modernbert.cpp, deberta.cpp)
// share. Module levels named as Hugging Face's tree, so parameter names come out as its own; Dense
// layers (so LoRA adapts them as the decoders'); BERT's LayerNorm; dropout; the activations.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>

#include "model/encoder/bert_spec.h"
#include "model/dense.h"

namespace hftrain::model::encoder {

// A named level of the module tree that holds nothing of its own ("attention", "self", "encoder").
std::shared_ptr<torch::nn::Module> level(torch::nn::Module& parent, const std::string& name);
// A Dense layer (uninitialised until the encoder's initialisation draws it) registered as `name`.
Dense dense(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias = true);
// torch.nn.LayerNorm(hidden_size, layer_norm_eps) registered as "LayerNorm".
torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const BertSpec& s);
// Dropout with probability p while training; x itself otherwise (or for p = 0).
torch::Tensor dropped_out(const torch::Tensor& x, double p, bool training);

}  // namespace hftrain::model::encoder

namespace hftrain::model {

// BERT's activations (hidden_act, ModernBERT's hidden_activation and classifier_activation,
// DeBERTa's pooler_hidden_act).
torch::Tensor bert_activation(const torch::Tensor& x, BertActivation act);

}  // namespace hftrain::model
