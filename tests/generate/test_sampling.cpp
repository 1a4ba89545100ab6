// The logits warpers against hand-computed cases (transformers' TopK/TopPLogitsWarper semantics),
// sampling determinism, and the KV-cache decoding loop against repeated full forwards.
#include "../torch_catch.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "helpers.h"
#include "model/decoder/sampling.h"
#include "util/error.h"

using namespace hftrain;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

torch::Tensor vec(std::vector<float> v) {
  return torch::tensor(v, torch::kFloat32);
}

// Which entries a filter kept (finite), as 0/1.
std::vector<int> kept(const torch::Tensor& t) {
  auto k = torch::isfinite(t).to(torch::kInt32).contiguous();
  return std::vector<int>(k.data_ptr<int>(), k.data_ptr<int>() + k.numel());
}

// Greedy decoding the slow, obvious way: a full forward over the whole sequence per token.
std::vector<int64_t> naive_greedy(model::Transformer& m, std::vector<int64_t> seq, int64_t n) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    auto logits = m->forward(torch::tensor(seq, torch::kInt64).unsqueeze(0));
    const int64_t tok = logits[0][logits.size(1) - 1].argmax().item<int64_t>();
    out.push_back(tok);
    seq.push_back(tok);
  }
  return out;
}

model::SamplingOptions greedy(int64_t n) {
  model::SamplingOptions o;
  o.greedy = true;
  o.max_new_tokens = n;
  return o;
}

std::string usage_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const util::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError");
  return {};
}

}  // namespace

TEST_CASE("top-k keeps the k largest logits, and ties with the k-th", "[generate]") {
  auto x = vec({1, 3, 2, 5, 4});
  CHECK(kept(model::top_k_filter(x, 2)) == std::vector<int>{0, 0, 0, 1, 1});
  CHECK(kept(model::top_k_filter(x, 1)) == std::vector<int>{0, 0, 0, 1, 0});
  CHECK(kept(model::top_k_filter(x, 0)) == std::vector<int>{1, 1, 1, 1, 1});  // off
  CHECK(kept(model::top_k_filter(x, 9)) == std::vector<int>{1, 1, 1, 1, 1});  // k >= V
  CHECK(kept(model::top_k_filter(vec({1, 3, 3, 0}), 2)) == std::vector<int>{0, 1, 1, 0});
  CHECK(kept(model::top_k_filter(vec({3, 3, 1}), 1)) ==
        std::vector<int>{1, 1, 0});  // as transformers: ties survive
  // Kept values are unchanged; removed ones are -inf.
  auto f = model::top_k_filter(x, 2);
  CHECK(f[3].item<float>() == 5.0f);
  CHECK(f[0].item<float>() == -kInf);
  // Rows of a batch are filtered independently.
  auto rows = model::top_k_filter(torch::stack({vec({1, 2, 3}), vec({3, 2, 1})}), 1);
  CHECK(kept(rows[0]) == std::vector<int>{0, 0, 1});
  CHECK(kept(rows[1]) == std::vector<int>{1, 0, 0});
}

TEST_CASE("top-p keeps the smallest set whose probability reaches p", "[generate]") {
  // Probabilities 0.15, 0.5, 0.05, 0.3 (deliberately unsorted). Sorted ascending: 0.05, 0.15,
  // 0.3, 0.5 with cumulative 0.05, 0.2, 0.5, 1.0; tokens with cumulative <= 1 - p go.
  auto x = torch::log(vec({0.15f, 0.5f, 0.05f, 0.3f}));
  CHECK(kept(model::top_p_filter(x, 0.9)) ==
        std::vector<int>{1, 1, 0, 1});  // removes cum <= 0.1: 0.05
  CHECK(kept(model::top_p_filter(x, 0.75)) == std::vector<int>{0, 1, 0, 1});  // removes cum <= 0.25
  CHECK(kept(model::top_p_filter(x, 0.6)) == std::vector<int>{0, 1, 0, 1});   // 0.5 alone is < 0.6
  CHECK(kept(model::top_p_filter(x, 0.4)) == std::vector<int>{0, 1, 0, 0});   // 0.5 >= 0.4
  CHECK(kept(model::top_p_filter(x, 1e-6)) == std::vector<int>{0, 1, 0, 0});  // always at least one
  CHECK(kept(model::top_p_filter(x, 1.0)) == std::vector<int>{1, 1, 1, 1});   // off
  // Logits need not be normalised: a constant shift changes nothing.
  CHECK(kept(model::top_p_filter(x + 7.5, 0.75)) == std::vector<int>{0, 1, 0, 1});
  auto f = model::top_p_filter(x, 0.75);
  CHECK(f[1].item<float>() == x[1].item<float>());
}

TEST_CASE("greedy, temperature 0 and top-k 1 pick the argmax", "[generate]") {
  auto x = vec({0.1f, 2.0f, 1.9f, -1.0f});
  auto gen = model::make_sampling_generator(7);
  model::SamplingOptions o;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    gen.set_current_seed(seed);
    o.greedy = true;
    CHECK(model::sample_token(x, o, gen) == 1);
    o.greedy = false, o.temperature = 0;
    CHECK(model::sample_token(x, o, gen) == 1);
    o.temperature = 5.0, o.top_k = 1;
    CHECK(model::sample_token(x, o, gen) == 1);
    o.top_k = 0, o.top_p = 0.01;
    CHECK(model::sample_token(x, o, gen) == 1);
    o.top_p = 1.0;
  }
}

TEST_CASE("sampling follows the softmax of logits / temperature, within the filters",
          "[generate]") {
  auto x = torch::log(vec({0.7f, 0.2f, 0.1f}));
  auto gen = model::make_sampling_generator(1234);
  model::SamplingOptions o;
  o.temperature = 1.0;
  std::vector<int> counts(3, 0);
  const int n = 4000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(model::sample_token(x, o, gen))];
  CHECK(counts[0] / double(n) == Approx(0.7).margin(0.03));
  CHECK(counts[1] / double(n) == Approx(0.2).margin(0.03));
  CHECK(counts[2] / double(n) == Approx(0.1).margin(0.03));
  // A high temperature flattens the distribution; top-k 2 and top-p 0.85 never pick the last.
  o.temperature = 100.0;
  std::fill(counts.begin(), counts.end(), 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(model::sample_token(x, o, gen))];
  CHECK(counts[2] / double(n) == Approx(1.0 / 3).margin(0.04));
  o.temperature = 1.0;
  for (auto [k, p] : {std::pair<int64_t, double>{2, 1.0}, {0, 0.85}}) {
    o.top_k = k, o.top_p = p;
    std::set<int64_t> seen;
    for (int i = 0; i < 500; ++i) seen.insert(model::sample_token(x, o, gen));
    CHECK(seen == std::set<int64_t>{0, 1});
  }
}

TEST_CASE("sampling options out of range are usage errors naming the flag", "[generate]") {
  auto bad = [](auto edit) {
    model::SamplingOptions o;
    edit(o);
    return usage_error([&] { model::validate_sampling_options(o); });
  };
  CHECK_NOTHROW(model::validate_sampling_options(model::SamplingOptions{}));
  CHECK_THAT(bad([](auto& o) { o.temperature = -0.1; }), Catch::Contains("--temperature"));
  CHECK_THAT(bad([](auto& o) { o.temperature = std::nan(""); }), Catch::Contains("--temperature"));
  CHECK_THAT(bad([](auto& o) { o.top_k = -1; }), Catch::Contains("--top-k"));
  CHECK_THAT(bad([](auto& o) { o.top_p = 0; }), Catch::Contains("--top-p"));
  CHECK_THAT(bad([](auto& o) { o.top_p = 1.5; }), Catch::Contains("(0, 1]"));
  CHECK_THAT(bad([](auto& o) { o.max_new_tokens = 0; }), Catch::Contains("--max-new-tokens"));
}

TEST_CASE("KV-cache generation equals greedy decoding by full forwards, token for token",
          "[generate]") {
  for (const auto& spec : {test::tiny_gpt2_spec(), test::tiny_llama_spec()}) {
    torch::manual_seed(11);
    model::Transformer m(spec);
    m->eval();
    // A larger init spreads the logits, so that greedy has clear winners and varied tokens.
    {
      torch::NoGradGuard no_grad;
      for (auto& p : m->parameters()) p.mul_(8.0);
    }
    const std::vector<int64_t> prompt = {5, 17, 42, 3, 99};
    const int64_t n = 20;
    const auto want = naive_greedy(m, prompt, n);
    auto gen = model::make_sampling_generator(0);
    model::GenerateRequest request{.prompt = prompt};
    const auto cached = model::generate(m, request, greedy(n), gen);
    CHECK(cached.tokens == want);
    CHECK(cached.reason == model::StopReason::kMaxNewTokens);
    request.use_cache = false;
    CHECK(model::generate(m, request, greedy(n), gen).tokens == want);
    CHECK(std::set<int64_t>(want.begin(), want.end()).size() > 1);

    // The end-of-text token stops generation and is not part of the output.
    size_t first_new = 1;
    while (first_new < want.size() &&
           std::find(want.begin(), want.begin() + static_cast<long>(first_new), want[first_new]) !=
               want.begin() + static_cast<long>(first_new)) {
      ++first_new;
    }
    REQUIRE(first_new < want.size());
    request.use_cache = true;
    request.stop_id = want[first_new];
    const auto stopped = model::generate(m, request, greedy(n), gen);
    CHECK(stopped.reason == model::StopReason::kEndOfText);
    CHECK(stopped.tokens ==
          std::vector<int64_t>(want.begin(), want.begin() + static_cast<long>(first_new)));
  }
}

TEST_CASE("generation stops at the model's max_seq_len, and refuses prompts that do not fit",
          "[generate]") {
  const auto spec = test::tiny_gpt2_spec(258, 16);
  torch::manual_seed(2);
  model::Transformer m(spec);
  auto gen = model::make_sampling_generator(0);
  model::GenerateRequest request{.prompt = std::vector<int64_t>(14, 65)};
  auto g = model::generate(m, request, greedy(10), gen);
  CHECK(g.tokens.size() == 2);
  CHECK(g.reason == model::StopReason::kMaxSeqLen);
  request.prompt.assign(16, 65);
  g = model::generate(m, request, greedy(10), gen);
  CHECK(g.tokens.empty());
  CHECK(g.reason == model::StopReason::kMaxSeqLen);
  request.prompt.assign(17, 65);
  CHECK_THAT(usage_error([&] { model::generate(m, request, greedy(10), gen); }),
             Catch::Contains("17 tokens, longer than the model's max_seq_len of 16"));
  request.prompt.clear();
  CHECK_THAT(usage_error([&] { model::generate(m, request, greedy(10), gen); }),
             Catch::Contains("prompt is empty"));
}

TEST_CASE("the same seed gives the same tokens, another seed other tokens", "[generate]") {
  torch::manual_seed(5);
  model::Transformer m(test::tiny_llama_spec());
  model::SamplingOptions o;
  o.temperature = 1.0, o.max_new_tokens = 24;
  model::GenerateRequest request{.prompt = {1, 2, 3}};
  auto run = [&](uint64_t seed) {
    auto gen = model::make_sampling_generator(seed);
    return model::generate(m, request, o, gen).tokens;
  };
  const auto a = run(1234);
  CHECK(a.size() == 24);
  CHECK(run(1234) == a);
  CHECK(run(1235) != a);
  // Filters and temperature do not break determinism either.
  o.top_k = 40, o.top_p = 0.9, o.temperature = 0.7;
  CHECK(run(99) == run(99));
}

TEST_CASE("ids past the tokenizer's vocabulary are never produced", "[generate]") {
  torch::manual_seed(6);
  model::Transformer m(test::tiny_gpt2_spec(300));
  model::SamplingOptions o;
  o.temperature = 1.0, o.max_new_tokens = 30;
  model::GenerateRequest request{.prompt = {1, 2}, .vocab_limit = 7};
  for (uint64_t seed = 0; seed < 5; ++seed) {
    auto gen = model::make_sampling_generator(seed);
    for (int64_t t : model::generate(m, request, o, gen).tokens) CHECK(t < 7);
  }
}
