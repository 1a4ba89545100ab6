// Text generation from a Transformer: the logits warpers Hugging Face's generate() applies
// (temperature, then top-k, then top-p), greedy decoding, and a decoding loop that prefills the
// prompt once into a KV cache and then feeds one token at a time.
//
// Sampling draws from a CPU torch::Generator whatever device the model runs on (the last
// position's logits are copied to the host each step anyway, to test for the end-of-text token),
// so the same seed gives the same tokens on every device, up to the model's own arithmetic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "model/decoder/transformer.h"

namespace hftrain::model {

struct SamplingOptions {
  int64_t max_new_tokens = 64;  // >= 1
  double temperature = 0.8;     // >= 0; 0 means greedy
  int64_t top_k = 0;            // keep the k most likely tokens; 0 = off
  double top_p = 1.0;           // nucleus sampling, in (0, 1]; 1 = off
  bool greedy = false;          // always the most likely token (ignores temperature, top-k, top-p)
  uint64_t seed = 1234;         // of the sampling generator (see make_sampling_generator)
};

// Throws UsageError naming the option (as the CLI spells it) for a value out of range.
void validate_sampling_options(const SamplingOptions& options);

// A CPU generator seeded with `seed`.
at::Generator make_sampling_generator(uint64_t seed);

// Filters return a copy of `logits` (..., V) with the removed entries set to -inf, along the
// last dimension, exactly as transformers' TopKLogitsWarper and TopPLogitsWarper do:
//  - top-k keeps every token whose logit is >= the k-th largest (ties with it survive); k >= V
//    keeps everything.
//  - top-p sorts ascending, and removes the tokens whose cumulative probability is <= 1 - p,
//    always keeping the most likely one: the smallest set whose probability reaches p survives.
torch::Tensor top_k_filter(const torch::Tensor& logits, int64_t k);
torch::Tensor top_p_filter(const torch::Tensor& logits, double p);

// One next token from the logits (V) of the last position.
int64_t sample_token(const torch::Tensor& logits, const SamplingOptions& options,
                     at::Generator& generator);

enum class StopReason {
  kMaxNewTokens,  // produced max_new_tokens
  kEndOfText,     // the model chose the end-of-text token (not part of the output)
  kMaxSeqLen,     // prompt + output filled the model's max_seq_len
};

struct GenerateRequest {
  std::vector<int64_t> prompt{};     // token ids, 1 <= size <= max_seq_len
  std::optional<int64_t> stop_id{};  // the end-of-text token
  // Ids at or above this are never produced (a model vocabulary padded past the tokenizer's);
  // 0 = the model's whole vocabulary.
  int64_t vocab_limit = 0;
  // false: a full forward over the whole sequence for each token (the reference the cache is
  // tested against; quadratic, for tests only).
  bool use_cache = true;
};

struct Generation {
  std::vector<int64_t> tokens;  // the new tokens only
  StopReason reason = StopReason::kMaxNewTokens;
};

// Generates one continuation of `request.prompt` with `model` (in eval mode, on its device).
// `on_token`, when set, sees each new token as it is produced (for streaming output).
// Throws UsageError for invalid options, an empty prompt or one longer than the model's
// max_seq_len; CheckpointError when the model produces NaN or infinite logits.
Generation generate(Transformer& model, const GenerateRequest& request,
                    const SamplingOptions& options, at::Generator& generator,
                    const std::function<void(int64_t)>& on_token = {});

}  // namespace hftrain::model
