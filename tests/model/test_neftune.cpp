// NEFTune (model/neftune.h): transformers' noise on the input embeddings, drawn as its hook draws
// it, only while training; the decoder and BERT encoder add it to their token embeddings.
#include "../torch_catch.h"  // first: see the file

#include <cmath>

#include "model/decoder/transformer.h"
#include "model/encoder/bert.h"
#include "model/encoder/bert_spec.h"
#include "model/neftune.h"
#include "util/error.h"

using namespace hftrain;

TEST_CASE("NEFTune's noise is transformers' draw: uniform in +-alpha / sqrt(T C) from the global generator",
          "[model][neftune]") {
  const torch::Tensor x = torch::randn({3, 10, 16});
  const double alpha = 5, magnitude = alpha / std::sqrt(10.0 * 16.0);
  // neftune_post_forward_hook: output + torch.zeros_like(output).uniform_(-mag_norm, mag_norm)
  torch::manual_seed(7);
  const torch::Tensor expected = x + torch::zeros_like(x).uniform_(-magnitude, magnitude);
  torch::manual_seed(7);
  const torch::Tensor noisy = model::add_neftune_noise(x, alpha, 10);
  CHECK(torch::equal(noisy, expected));
  const torch::Tensor noise = noisy - x;
  CHECK(noise.abs().max().item<double>() <= magnitude * (1 + 1e-6));
  CHECK(noise.abs().max().item<double>() > 0.9 * magnitude);
  // Under sequence parallelism each rank keeps its positions of the whole draw.
  torch::manual_seed(7);
  const torch::Tensor second_half = model::add_neftune_noise(x.narrow(1, 5, 5), alpha, 10, 5);
  CHECK(torch::allclose(second_half, expected.narrow(1, 5, 5), 0, 1e-6));
}

TEST_CASE("A decoder adds NEFTune's noise while training and never while evaluating", "[model][neftune]") {
  model::ModelSpec s;
  s.arch = config::ModelArch::kLlama;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = 2, s.d_model = 32, s.d_ff = 56, s.max_seq_len = 64, s.vocab_size = 71;
  s.rope_theta = 10000.0, s.norm_eps = 1e-5;
  torch::manual_seed(1);
  model::Transformer m(s);
  const torch::Tensor ids = torch::randint(0, 71, {2, 12}, torch::kInt64);
  const torch::Tensor clean = m->forward(ids);  // training mode, no noise yet
  m->set_neftune_alpha(5);
  torch::manual_seed(2);
  const torch::Tensor noisy = m->forward(ids);
  torch::manual_seed(2);
  CHECK(torch::equal(m->forward(ids), noisy));  // the noise comes from the seeded generator
  CHECK_FALSE(torch::allclose(noisy, clean));
  m->eval();
  CHECK(torch::equal(m->forward(ids), clean));
}

TEST_CASE("A BERT encoder adds NEFTune's noise to its word embeddings, and ModernBERT refuses it", "[model][neftune]") {
  model::BertSpec s;
  s.vocab_size = 50, s.hidden_size = 16, s.num_hidden_layers = 1, s.num_attention_heads = 2;
  s.intermediate_size = 32, s.max_position_embeddings = 20, s.num_labels = 3;
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0;
  torch::manual_seed(1);
  model::BertEncoder m(s);
  const torch::Tensor ids = torch::randint(1, 50, {2, 9}, torch::kInt64);
  const torch::Tensor clean = m->forward(ids);
  m->set_neftune_alpha(5);
  CHECK_FALSE(torch::allclose(m->forward(ids), clean));
  m->eval();
  CHECK(torch::equal(m->forward(ids), clean));
  model::BertSpec modern = model::modernbert_defaults(1);
  modern.vocab_size = 40, modern.hidden_size = 24, modern.num_attention_heads = 3, modern.intermediate_size = 20;
  modern.max_position_embeddings = 16, modern.local_attention = 4, modern.num_labels = 3;
  modern.pad_token_id = 0, modern.bos_token_id = modern.cls_token_id = 1, modern.eos_token_id = modern.sep_token_id = 2;
  model::BertEncoder modernbert(modern);
  CHECK_THROWS_AS(modernbert->set_neftune_alpha(5), util::ConfigError);
  modernbert->set_neftune_alpha(0);  // off is always fine
}
