#include "helpers.h"

#include "data/tokenizer_training.h"
#include "tokenizer/bpe_trainer.h"

namespace hftrain::test {

model::ModelSpec tiny_gpt2_spec(int64_t vocab_size, int64_t max_seq_len) {
  model::ModelSpec s;
  s.arch = config::ModelArch::kGpt2;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = 4, s.d_model = 24, s.d_ff = 96;
  s.max_seq_len = max_seq_len, s.vocab_size = vocab_size;
  s.norm_eps = 1e-5, s.tie_embeddings = true;
  return s;
}

model::ModelSpec tiny_llama_spec(int64_t vocab_size, int64_t max_seq_len) {
  model::ModelSpec s;
  s.arch = config::ModelArch::kLlama;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = 2, s.d_model = 32, s.d_ff = 56;
  s.max_seq_len = max_seq_len, s.vocab_size = vocab_size;
  s.rope_theta = 10000.0, s.norm_eps = 1e-5, s.tie_embeddings = false;
  return s;
}

std::unique_ptr<tokenizer::BpeTokenizer> fortune_bpe(int32_t vocab_size) {
  tokenizer::BpeTrainer trainer({.vocab_size = vocab_size, .min_frequency = 1});
  data::add_sources(trainer,
      {data::SourceSpec{.path = std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/data/fortunes/*",
                        .exclude = {"*.dat"},
                        .separator = "%"}});
  // More text than the fixtures alone, so that there are merges to learn.
  for (int i = 0; i < 20; ++i)
    trainer.add_text("the quick brown fox jumps over the lazy dog. Café au lait, déjà vu. ");
  // BpeTokenizer holds a mutex and cannot move; a copy of its model builds the heap one.
  return std::make_unique<tokenizer::BpeTokenizer>(tokenizer::BpeModel(trainer.train().model()));
}

}  // namespace hftrain::test
