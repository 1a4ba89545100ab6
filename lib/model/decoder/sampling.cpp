#include "model/decoder/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::model {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

}  // namespace

void validate_sampling_options(const SamplingOptions& o) {
  if (o.max_new_tokens < 1) {
    throw util::UsageError(
        "--max-new-tokens is " + std::to_string(o.max_new_tokens) + ", it must be at least 1",
        "e.g. --max-new-tokens 64");
  }
  // Written as !(x >= 0) so that NaN is refused too.
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature)) {
    throw util::UsageError(
        "--temperature is " + number(o.temperature) + ", it must be a finite number >= 0",
        "use 0 (or --greedy) for greedy decoding, 0.7-1.0 for sampling");
  }
  if (o.top_k < 0) {
    throw util::UsageError("--top-k is " + std::to_string(o.top_k) + ", it must be >= 0",
                           "0 turns top-k off");
  }
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    throw util::UsageError("--top-p is " + number(o.top_p) + ", it must be in (0, 1]",
                           "1 turns nucleus sampling off");
  }
}

at::Generator make_sampling_generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

torch::Tensor top_k_filter(const torch::Tensor& logits, int64_t k) {
  const int64_t vocab = logits.size(-1);
  if (k <= 0 || k >= vocab) return logits.clone();
  auto kth = std::get<0>(logits.topk(k, /*dim=*/-1)).narrow(-1, k - 1, 1);  // (..., 1)
  return logits.masked_fill(logits < kth, kNegInf);
}

torch::Tensor top_p_filter(const torch::Tensor& logits, double p) {
  if (p >= 1.0) return logits.clone();
  const int64_t vocab = logits.size(-1);
  auto [sorted, order] = logits.sort(/*dim=*/-1, /*descending=*/false);
  auto cumulative = sorted.to(torch::kFloat32).softmax(-1).cumsum(-1);
  auto remove_sorted = cumulative <= (1.0 - p);
  remove_sorted.narrow(-1, vocab - 1, 1).fill_(false);  // the most likely token always stays
  auto remove = remove_sorted.scatter(-1, order, remove_sorted);
  return logits.masked_fill(remove, kNegInf);
}

int64_t sample_token(const torch::Tensor& logits, const SamplingOptions& options,
                     at::Generator& generator) {
  if (options.greedy || options.temperature == 0) return logits.argmax().item<int64_t>();
  auto x = logits.to(torch::kFloat32) / options.temperature;
  if (options.top_k > 0) x = top_k_filter(x, options.top_k);
  if (options.top_p < 1.0) x = top_p_filter(x, options.top_p);
  auto probs = x.softmax(-1);
  return torch::multinomial(probs, /*num_samples=*/1, /*replacement=*/false, generator)
      .item<int64_t>();
}

Generation generate(Transformer& model, const GenerateRequest& request,
                    const SamplingOptions& options, at::Generator& generator,
                    const std::function<void(int64_t)>& on_token) {
  validate_sampling_options(options);
  const ModelSpec& spec = model->spec();
  const auto prompt_len = static_cast<int64_t>(request.prompt.size());
  if (prompt_len == 0) {
    throw util::UsageError("the prompt is empty (no tokens)", "give --prompt some text");
  }
  if (prompt_len > spec.max_seq_len) {
    throw util::UsageError("the prompt is " + std::to_string(prompt_len) +
                               " tokens, longer than the model's max_seq_len of " +
                               std::to_string(spec.max_seq_len),
                           "shorten the prompt");
  }
  for (int64_t id : request.prompt) {
    if (id < 0 || id >= spec.vocab_size) {
      throw util::UsageError("prompt token id " + std::to_string(id) +
                             " is outside the model's vocabulary (size " +
                             std::to_string(spec.vocab_size) + ")");
    }
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Device device = model->parameters().front().device();
  const auto ids_options = torch::TensorOptions().dtype(torch::kInt64);
  // The last position's logits, on the host: sampling and the stop test happen there.
  auto last_logits = [&](const torch::Tensor& input, KvCache* cache) {
    auto logits = model->forward(input.to(device), cache);  // (1, T, V)
    return logits.select(1, logits.size(1) - 1).squeeze(0).to(torch::kCPU, torch::kFloat32);  // (V)
  };

  std::vector<int64_t> sequence = request.prompt;
  KvCache cache;
  if (request.use_cache) cache = model->make_cache(1, spec.max_seq_len);
  KvCache* cache_ptr = request.use_cache ? &cache : nullptr;
  auto logits = last_logits(torch::tensor(sequence, ids_options).unsqueeze(0), cache_ptr);

  const int64_t limit =
      request.vocab_limit > 0 ? std::min(request.vocab_limit, spec.vocab_size) : spec.vocab_size;
  Generation out;
  while (true) {
    if (static_cast<int64_t>(out.tokens.size()) >= options.max_new_tokens) {
      out.reason = StopReason::kMaxNewTokens;
      break;
    }
    if (static_cast<int64_t>(sequence.size()) >= spec.max_seq_len) {
      out.reason = StopReason::kMaxSeqLen;
      break;
    }
    if (limit < spec.vocab_size) logits.narrow(0, limit, spec.vocab_size - limit).fill_(kNegInf);
    if (!torch::isfinite(logits.narrow(0, 0, limit)).all().item<bool>()) {
      throw util::CheckpointError("the model produced NaN or infinite logits",
                                  "its weights are damaged or diverged; use an earlier checkpoint");
    }
    const int64_t token = sample_token(logits, options, generator);
    if (request.stop_id && token == *request.stop_id) {
      out.reason = StopReason::kEndOfText;
      break;
    }
    out.tokens.push_back(token);
    sequence.push_back(token);
    if (on_token) on_token(token);
    // No forward for a token that will not be followed by another.
    if (static_cast<int64_t>(out.tokens.size()) >= options.max_new_tokens ||
        static_cast<int64_t>(sequence.size()) >= spec.max_seq_len) {
      continue;
    }
    if (request.use_cache) {
      logits = last_logits(torch::tensor({token}, ids_options).view({1, 1}), cache_ptr);
    } else {
      logits = last_logits(torch::tensor(sequence, ids_options).unsqueeze(0), nullptr);
    }
  }
  return out;
}

}  // namespace hftrain::model
