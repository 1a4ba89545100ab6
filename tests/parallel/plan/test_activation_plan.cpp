// hftrain plan's activation figure: the per-token count of saved tensors, checkpointing, the
// document mask and the math kernel's T x T term, each against its closed form.
#include <catch2/catch.hpp>

#include "parallel/plan/activation_plan.h"

using namespace hftrain;

namespace {

// GPT-2 small's shape at seq 1024, micro-batch 8, fp32.
parallel::ActivationShape gpt2_small() {
  return {.batch = 8, .seq_len = 1024, .n_layer = 12, .d_model = 768, .n_head = 12, .n_kv_head = 12,
          .head_dim = 64, .d_ff = 3072, .vocab = 50257};
}

}  // namespace

TEST_CASE("activation plan: per block, 4C + q + 2kv + q + 2 d_ff elements per token (gpt2)", "[plan]") {
  const auto s = gpt2_small();
  const auto a = parallel::estimate_activations(s);
  const double tokens = 8.0 * 1024;
  const double per_token = 4 * 768 + (768 + 2 * 768) + 768 + 2 * 3072;
  CHECK(a.per_block == Approx(per_token * tokens * 4));
  CHECK(a.blocks == Approx(12 * a.per_block));
  CHECK(a.mask == 0);
  // The loss holds one 32 MB chunk of logits, never the whole (tokens x vocabulary) matrix.
  CHECK(a.head == Approx(2 * 768 * tokens * 4 + 32.0 * 1024 * 1024));
}

TEST_CASE("activation plan: SwiGLU, RoPE and grouped-query attention change the count", "[plan]") {
  auto s = gpt2_small();
  s.gated_mlp = true, s.rope = true, s.n_kv_head = 4;
  const double per_token = 4 * 768 + (768 + 2 * 256) + 768 + (768 + 256) + 4 * 3072;
  CHECK(parallel::estimate_activations(s).per_block == Approx(per_token * 8 * 1024 * 4));
}

TEST_CASE("activation plan: checkpointing keeps block inputs and one block", "[plan]") {
  auto s = gpt2_small();
  s.checkpointing = true;
  const auto a = parallel::estimate_activations(s);
  CHECK(a.blocks == Approx(12 * 768 * 8.0 * 1024 * 4 + a.per_block));
  CHECK(a.blocks < parallel::estimate_activations(gpt2_small()).blocks / 4);
}

TEST_CASE("activation plan: a document mask is B x T x T once, dropout's math kernel is per block", "[plan]") {
  auto s = gpt2_small();
  s.document_mask = true;
  s.element_bytes = 2;
  const auto a = parallel::estimate_activations(s);
  CHECK(a.mask == Approx(8.0 * 1024 * 1024 * (1 + 2)));
  CHECK_THAT(parallel::activation_summary(s), Catch::Contains("document mask 24.00 MiB"));
  auto d = gpt2_small();
  d.dropout = 0.1;
  const double extra = 2 * 768 * 8.0 * 1024 + 8.0 * 12 * 1024 * 1024 * 5;
  CHECK(parallel::estimate_activations(d).per_block ==
        Approx(parallel::estimate_activations(gpt2_small()).per_block + extra));
  CHECK_THAT(parallel::activation_summary(d), Catch::Contains("math kernel"));
}

TEST_CASE("activation plan: variable-length flash attention keeps no document mask", "[plan]") {
  auto s = gpt2_small();
  s.document_mask = true;
  s.variable_length = true;
  s.element_bytes = 2;
  CHECK(parallel::estimate_activations(s).mask == 0);
  CHECK(parallel::estimate_activations(s).total() ==
        Approx(parallel::estimate_activations([&] { auto p = s; p.document_mask = false; return p; }()).total()));
  CHECK_THAT(parallel::activation_summary(s), Catch::Contains("variable-length flash attention, no mask"));
}

TEST_CASE("activation plan: tensor parallelism splits the heads' and MLP's tensors and the logits", "[plan]") {
  auto s = gpt2_small();
  s.tensor_parallel = 2;
  const double tokens = 8.0 * 1024;
  const double split = (768 + 2 * 768) + 768 + 2 * 3072;
  CHECK(parallel::estimate_activations(s).per_block == Approx((4 * 768 + split / 2) * tokens * 4));
  // with sequence parallelism the residual stream's tensors too
  s.sequence_parallel = true;
  CHECK(parallel::estimate_activations(s).per_block == Approx((4 * 768 + split) / 2 * tokens * 4));
  // a rank's slice of the logits: 8192 x 25128.5 x 4 B is still over one 32 MB chunk
  CHECK(parallel::estimate_activations(s).head == Approx(2 * 768 * tokens * 4 + 32.0 * 1024 * 1024));
}
