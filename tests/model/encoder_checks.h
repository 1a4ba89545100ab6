// What the encoder unit tests (test_bert, test_modernbert, test_deberta) share.
#pragma once

#include <cstdint>
#include <string>

#include "../torch_catch.h"

#include <nlohmann/json.hpp>

#include "model/encoder/bert.h"
#include "model/encoder/bert_spec.h"
#include "util/error.h"

namespace hftrain::test {

// The message of the CheckpointError that reading config.json `j` (as "m/config.json") throws.
inline std::string config_refusal(const nlohmann::json& j) {
  try {
    model::bert_spec_from_hf_config(j.dump(), "m/config.json");
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  FAIL("expected a CheckpointError");
  return {};
}

// `t` (1, T) with `extra` zeros appended: the ids, token types or attention mask of a right-padded row.
inline torch::Tensor padded(const torch::Tensor& t, int64_t extra) {
  return torch::cat({t, torch::zeros({1, extra}, torch::kInt64)}, 1);
}
// The attention mask of `t` (1, T) right-padded by `extra` positions.
inline torch::Tensor padding_mask(const torch::Tensor& t, int64_t extra) { return padded(torch::ones_like(t), extra); }

// The largest difference between the encoder's logits for `ids` (1, T) alone and for the same row
// right-padded by `extra` positions (masked).
inline double padding_difference(model::BertEncoder& m, const torch::Tensor& ids, int64_t extra,
                                 const torch::Tensor& types = {}) {
  torch::NoGradGuard no_grad;
  const auto alone = m->forward(ids, torch::ones_like(ids), types);
  const auto with_padding = m->forward(padded(ids, extra), padding_mask(ids, extra),
                                       types.defined() ? padded(types, extra) : torch::Tensor());
  return (alone - with_padding).abs().max().item<double>();
}

// Activation checkpointing recomputes the same gradients: two encoders of `spec` with the same
// weights, one checkpointed, each trained one backward pass on `ids` (and `mask`) from the same
// seed, dropout included.
inline void check_checkpointing_gradients(const model::BertSpec& spec, const torch::Tensor& ids,
                                          const torch::Tensor& mask = {}) {
  torch::manual_seed(2);
  model::BertEncoder a(spec);
  model::BertEncoder b(spec);
  {
    torch::NoGradGuard no_grad;
    auto pa = a->parameters_by_name();
    auto pb = b->parameters_by_name();
    for (size_t i = 0; i < pa.size(); ++i) pb[i].second.copy_(pa[i].second);
  }
  b->set_activation_checkpointing(true);
  const auto labels = torch::tensor({2}, torch::kInt64);
  torch::manual_seed(3);
  model::classification_loss(a->forward(ids, mask), labels).backward();
  torch::manual_seed(3);
  model::classification_loss(b->forward(ids, mask), labels).backward();
  auto pa = a->parameters_by_name();
  auto pb = b->parameters_by_name();
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    CHECK((pa[i].second.grad() - pb[i].second.grad()).abs().max().item<double>() < 1e-6);
  }
}

}  // namespace hftrain::test
