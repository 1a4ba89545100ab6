// Tensor parallelism's layers in one process: the ranks of a group are threads, and their
// collectives meet in memory (ThreadGroup below), so that a split model's loss and gradients can
// be held against the whole model's without MPI. The e2e test (tests/e2e/tp_test.sh) trains
// through the real launcher and communicators.
#include "../torch_catch.h"  // first: see the file

#include <barrier>
#include <exception>
#include <functional>
#include <memory>
#include <thread>

#include "model/encoder/bert.h"
#include "model/decoder/lm_head_loss.h"
#include "model/decoder/tensor_parallel.h"
#include "model/decoder/tp_plan.h"
#include "model/decoder/transformer.h"

using namespace hftrain;

namespace {

// What the threads of one group share: a slot each and a barrier.
struct Shared {
  explicit Shared(int n) : size(n), barrier(n), slots(static_cast<size_t>(n)) {}
  int size;
  std::barrier<> barrier;
  std::vector<torch::Tensor> slots;
};

class ThreadGroup final : public model::TpGroup {
 public:
  ThreadGroup(std::shared_ptr<Shared> shared, int rank, bool sequence_parallel)
      : shared_(std::move(shared)), rank_(rank), sequence_parallel_(sequence_parallel) {}
  int rank() const override { return rank_; }
  int size() const override { return shared_->size; }
  bool sequence_parallel() const override { return sequence_parallel_; }
  void all_reduce(torch::Tensor& tensor, bool max) override {
    const auto all = exchange(tensor);
    torch::Tensor acc = all[0].clone();
    for (size_t r = 1; r < all.size(); ++r) acc = max ? torch::maximum(acc, all[r]) : acc + all[r];
    tensor.copy_(acc);
  }
  void all_gather(torch::Tensor& output, const torch::Tensor& input) override {
    std::vector<torch::Tensor> flat;
    for (const auto& t : exchange(input)) flat.push_back(t.reshape({-1}));
    output.copy_(torch::cat(flat).view_as(output));
  }
  void reduce_scatter(torch::Tensor& output, const torch::Tensor& input) override {
    const auto all = exchange(input);
    torch::Tensor acc = all[0].clone();
    for (size_t r = 1; r < all.size(); ++r) acc = acc + all[r];
    output.copy_(acc.reshape({size(), -1})[rank_].view_as(output));
  }

 private:
  // Every rank's tensor, in rank order (the same summation order on every rank).
  std::vector<torch::Tensor> exchange(const torch::Tensor& mine) {
    shared_->slots[static_cast<size_t>(rank_)] = mine.detach().clone();
    shared_->barrier.arrive_and_wait();
    std::vector<torch::Tensor> all = shared_->slots;
    shared_->barrier.arrive_and_wait();  // all have read before a next exchange writes
    return all;
  }
  std::shared_ptr<Shared> shared_;
  int rank_;
  bool sequence_parallel_;
};

// Runs fn(group) on `n` threads, one per rank; rethrows the first failure.
void on_ranks(int n, bool sequence_parallel, const std::function<void(model::TpGroup&)>& fn) {
  auto shared = std::make_shared<Shared>(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ThreadGroup group(shared, r, sequence_parallel);
      try {
        fn(group);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm().clamp_min(1e-30)).item<double>();
}

model::ModelSpec gpt2_spec() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kGpt2;
  s.vocab_size = 61;  // 31 + 30 rows over 2 ranks
  s.n_layer = 2;
  s.n_head = 4;
  s.n_kv_head = 4;
  s.d_model = 32;
  s.d_ff = 128;
  s.max_seq_len = 16;
  s.norm_eps = 1e-5;
  s.init_std = 0.05;
  s.tie_embeddings = true;
  s.attention_bias = config::AttentionBias::kAll;
  s.mlp_bias = true;
  return s;
}

model::ModelSpec llama_spec() {
  model::ModelSpec s = gpt2_spec();
  s.arch = config::ModelArch::kLlama;
  s.vocab_size = 64;
  s.n_kv_head = 2;  // grouped-query: 2 query heads per key/value head
  s.d_ff = 48;
  s.rope_theta = 10000;
  s.norm_eps = 1e-6;
  s.tie_embeddings = false;
  s.attention_bias = config::AttentionBias::kNone;
  s.mlp_bias = false;
  return s;
}

// OLMo 2: norms on the sublayers' outputs, q and k normalised over all heads' features.
model::ModelSpec olmo2_spec() {
  model::ModelSpec s = llama_spec();
  s.qk_norm = config::QkNorm::kProjection;
  s.norm_placement = config::NormPlacement::kPost;
  return s;
}

// A mixture of experts (Qwen2-MoE's shape: routed experts, a shared expert and its gate, the
// load-balancing loss) in every other layer.
model::ModelSpec moe_spec() {
  model::ModelSpec s = llama_spec();
  s.n_layer = 2;
  s.n_experts = 4;
  s.experts_per_token = 2;
  s.expert_d_ff = 24;
  s.shared_expert_d_ff = 16;
  s.moe_every = 2;
  s.router_aux_loss_coef = 0.05;
  return s;
}

// The loss a test backpropagates: the summed loss and, with a mixture of experts, 0.5 x its
// load-balancing loss (every rank of a group computes the same).
torch::Tensor with_aux(model::Transformer& m, const torch::Tensor& loss) {
  const torch::Tensor aux = m->take_router_aux_loss();
  return aux.defined() ? loss + 0.5 * aux : loss;
}

struct Result {
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> grads;  // whole (gathered) gradients by parameter name
};

Result whole_model(const model::ModelSpec& spec, const torch::Tensor& ids, const torch::Tensor& labels,
                   double smoothing) {
  torch::manual_seed(11);
  model::Transformer m(spec);
  Result r;
  r.loss = with_aux(m, m->loss_sum(ids, labels, smoothing));
  (r.loss * 0.3).backward();
  for (const auto& [name, p] : m->parameters_by_name()) r.grads[name] = p.grad().clone();
  r.loss = r.loss.detach();
  return r;
}

// The same model (the same seed) split over `n` threads; every rank's loss, and the gradients put
// back together on each rank (rank 0's kept).
std::vector<Result> split_model(const model::ModelSpec& spec, int n, bool sequence_parallel, const torch::Tensor& ids,
                                const torch::Tensor& labels, double smoothing) {
  std::vector<model::Transformer> models;
  for (int r = 0; r < n; ++r) {
    torch::manual_seed(11);
    models.emplace_back(spec);
  }
  std::vector<Result> results(static_cast<size_t>(n));
  on_ranks(n, sequence_parallel, [&](model::TpGroup& group) {
    auto& m = models[static_cast<size_t>(group.rank())];
    // The group must outlive the model's use of it: a non-owning pointer.
    m->tensor_parallelize(std::shared_ptr<model::TpGroup>(&group, [](model::TpGroup*) {}));
    Result& r = results[static_cast<size_t>(group.rank())];
    r.loss = with_aux(m, m->loss_sum(ids, labels, smoothing));
    (r.loss * 0.3).backward();
    r.loss = r.loss.detach();
    for (const auto& [name, p] : m->parameters_by_name()) {
      std::vector<model::TpSplit> splits;
      for (int k = 0; k < n; ++k) splits.push_back(model::decoder_tp_split(spec, name, k, n));
      r.grads[name] = model::tp_gather(p.grad(), splits, group);
    }
  });
  return results;
}

void check_split_equals_whole(const model::ModelSpec& spec, int n, bool sequence_parallel, double smoothing) {
  torch::manual_seed(5);
  const auto ids = torch::randint(0, spec.vocab_size, {3, 8}, torch::kInt64);
  auto labels = torch::randint(0, spec.vocab_size, {3, 8}, torch::kInt64);
  labels.index_put_({0, 2}, -100);
  const Result whole = whole_model(spec, ids, labels, smoothing);
  const auto split = split_model(spec, n, sequence_parallel, ids, labels, smoothing);
  for (const auto& r : split) {
    CHECK(rel(r.loss, whole.loss) < 1e-6);
    REQUIRE(r.grads.size() == whole.grads.size());
    for (const auto& [name, g] : whole.grads) {
      INFO(name);
      CHECK(rel(r.grads.at(name), g) < 1e-5);
    }
  }
}

model::BertSpec bert_spec(config::Encoder family) {
  model::BertSpec s;
  s.family = family;
  s.vocab_size = 41;  // 21 + 20 rows over 2 ranks
  s.hidden_size = 24;
  s.num_hidden_layers = 2;
  s.num_attention_heads = 4;
  s.intermediate_size = 40;
  s.max_position_embeddings = 20;
  s.num_labels = 3;
  s.with_classifier = true;
  s.pad_token_id = 1;  // a padding row in the first rank's slice: no gradient there
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0;
  return s;
}

// A padded classifier batch: ids, attention mask and labels. Drawn once, before any rank's thread
// starts: the global generator is shared by the threads, so seeding it inside each one races.
struct BertBatch {
  torch::Tensor ids, mask, labels;
};

BertBatch bert_batch(const model::BertSpec& spec) {
  torch::manual_seed(5);
  BertBatch b{torch::randint(2, spec.vocab_size, {3, 9}, torch::kInt64), torch::ones({3, 9}, torch::kInt64),
              torch::tensor({0, 2, 1}, torch::kInt64)};
  b.ids.index_put_({1, torch::indexing::Slice(6, torch::indexing::None)}, 1);  // padding
  b.mask.index_put_({1, torch::indexing::Slice(6, torch::indexing::None)}, 0);
  return b;
}

// A classifier's summed loss over the batch, and every gradient (gathered whole when split).
Result bert_loss(model::BertEncoder& m, model::TpGroup* group, const model::BertSpec& spec, const BertBatch& b) {
  Result r;
  r.loss = model::classification_loss(m->forward(b.ids, b.mask), b.labels, 0.0, /*summed=*/true);
  (r.loss * 0.3).backward();
  r.loss = r.loss.detach();
  for (const auto& [name, p] : m->parameters_by_name()) {
    if (!group) {
      r.grads[name] = p.grad().clone();
      continue;
    }
    std::vector<model::TpSplit> splits;
    for (int k = 0; k < group->size(); ++k) splits.push_back(model::encoder_tp_split(spec, name, k, group->size()));
    r.grads[name] = model::tp_gather(p.grad(), splits, *group);
  }
  return r;
}

void check_split_encoder(config::Encoder family) {
  const model::BertSpec spec = bert_spec(family);
  torch::manual_seed(11);
  model::BertEncoder whole_model(spec);
  const BertBatch batch = bert_batch(spec);
  const Result whole = bert_loss(whole_model, nullptr, spec, batch);
  std::vector<model::BertEncoder> models;
  for (int r = 0; r < 2; ++r) {
    torch::manual_seed(11);
    models.emplace_back(spec);
  }
  std::vector<Result> split(2);
  on_ranks(2, false, [&](model::TpGroup& group) {
    auto& m = models[static_cast<size_t>(group.rank())];
    m->tensor_parallelize(std::shared_ptr<model::TpGroup>(&group, [](model::TpGroup*) {}));
    split[static_cast<size_t>(group.rank())] = bert_loss(m, &group, spec, batch);
  });
  for (const auto& r : split) {
    CHECK(rel(r.loss, whole.loss) < 1e-6);
    for (const auto& [name, g] : whole.grads) {
      INFO(name);
      // The key bias's gradient is zero in exact arithmetic (softmax ignores a constant per query):
      // both are rounding noise, compared against the query bias's size instead.
      if (name.find("attention.self.key.bias") != std::string::npos) {
        const std::string query = name.substr(0, name.find("key.bias")) + "query.bias";
        CHECK(((r.grads.at(name) - g).norm() / whole.grads.at(query).norm()).item<double>() < 1e-5);
        continue;
      }
      CHECK(rel(r.grads.at(name), g) < 1e-5);
    }
  }
  // The padding row's gradient is zero on the rank that holds it, as in the whole model.
  CHECK(whole.grads.at(spec.prefix() + "embeddings.word_embeddings.weight")[1].abs().sum().item<double>() == 0);
}

}  // namespace

TEST_CASE("tensor parallel: a split BERT and RoBERTa classifier give the whole model's loss and gradients", "[tp]") {
  check_split_encoder(config::Encoder::kBert);
  check_split_encoder(config::Encoder::kRoberta);
}

TEST_CASE("tensor parallel: the plan's share of a rank equals the split parameters of a built model", "[tp]") {
  for (const model::ModelSpec& spec : {gpt2_spec(), llama_spec(), olmo2_spec(), moe_spec()}) {
    model::Transformer m(spec, model::WeightInit::kSkip);
    int64_t split = 0, whole = 0;
    for (const auto& [name, p] : m->parameters_by_name()) {
      (model::decoder_tp_split(spec, name, 0, 2).split() ? split : whole) += p.numel();
    }
    CHECK(model::tp_share(spec).split == split);
    CHECK(model::tp_share(spec).whole == whole);
  }
  for (const auto family : {config::Encoder::kBert, config::Encoder::kRoberta}) {
    const model::BertSpec spec = bert_spec(family);
    model::BertEncoder m(spec);
    int64_t split = 0, whole = 0;
    for (const auto& [name, p] : m->parameters_by_name()) {
      (model::encoder_tp_split(spec, name, 0, 2).split() ? split : whole) += p.numel();
    }
    CHECK(model::tp_share(spec).split == split);
    CHECK(model::tp_share(spec).whole == whole);
  }
}

TEST_CASE("tensor parallel: vocabulary slices cover the vocabulary in rank order", "[tp]") {
  CHECK(model::vocab_slice(261, 0, 2).begin == 0);
  CHECK(model::vocab_slice(261, 0, 2).end == 131);
  CHECK(model::vocab_slice(261, 1, 2).begin == 131);
  CHECK(model::vocab_slice(261, 1, 2).end == 261);
  // 5 rows over 4 ranks: 2, 1, 1, 1 (every rank holds a row)
  int64_t next = 0;
  for (int r = 0; r < 4; ++r) {
    const auto s = model::vocab_slice(5, r, 4);
    CHECK(s.begin == next);
    CHECK(s.rows() >= 1);
    next = s.end;
  }
  CHECK(next == 5);
}

TEST_CASE("tensor parallel: the pieces of q/k/v and gate/up and the row-parallel layers put back whole", "[tp]") {
  const model::ModelSpec spec = llama_spec();
  const int64_t d = spec.head_dim();
  // qkv rows: q (4 heads), k (2), v (2); rank 1 holds q heads 2-3, k head 1, v head 1.
  const auto qkv = model::decoder_tp_split(spec, "layers.0.attn.qkv_proj.weight", 1, 2);
  REQUIRE(qkv.dim == 0);
  REQUIRE(qkv.segments.size() == 3);
  CHECK(qkv.segments[0] == std::make_pair(2 * d, 2 * d));
  CHECK(qkv.segments[1] == std::make_pair(4 * d + d, d));
  CHECK(qkv.segments[2] == std::make_pair(6 * d + d, d));
  const auto gate_up = model::decoder_tp_split(spec, "layers.1.mlp.gate_up_proj.weight", 0, 2);
  CHECK(gate_up.segments == std::vector<std::pair<int64_t, int64_t>>{{0, 24}, {48, 24}});
  CHECK(model::decoder_tp_split(spec, "layers.0.attn.o_proj.weight", 1, 2).dim == 1);
  CHECK(model::decoder_tp_split(spec, "layers.0.mlp.down_proj.weight", 1, 2).dim == 1);
  CHECK_FALSE(model::decoder_tp_split(spec, "layers.0.attn_norm.weight", 1, 2).split());
  CHECK_FALSE(model::decoder_tp_split(spec, "final_norm.weight", 0, 2).split());
  CHECK_FALSE(model::decoder_tp_split(spec, "layers.0.attn.qkv_proj.weight", 0, 1).split());

  // take then gather gives the whole tensor back, for every kind of split
  const auto whole = torch::randn({8 * d, 32});
  std::vector<torch::Tensor> back(2);
  on_ranks(2, false, [&](model::TpGroup& g) {
    std::vector<model::TpSplit> splits;
    for (int r = 0; r < 2; ++r) splits.push_back(model::decoder_tp_split(spec, "layers.0.attn.qkv_proj.weight", r, 2));
    const auto piece = model::tp_take(whole, splits[static_cast<size_t>(g.rank())]);
    back[static_cast<size_t>(g.rank())] = model::tp_gather(piece, splits, g);
  });
  CHECK(torch::equal(back[0], whole));
  CHECK(torch::equal(back[1], whole));
}

TEST_CASE("tensor parallel: the vocabulary-parallel output layer equals the whole one", "[tp]") {
  torch::manual_seed(3);
  const int64_t n = 10, c = 8, v = 13;
  const auto hidden = torch::randn({n, c});
  const auto weight = torch::randn({v, c}) * 0.5;
  auto labels = torch::randint(0, v, {n}, torch::kInt64);
  labels[4] = -100;
  for (const double smoothing : {0.0, 0.1}) {
    for (const double softcap : {0.0, 3.0}) {
      INFO("smoothing " << smoothing << ", softcap " << softcap);
      auto h = hidden.clone().requires_grad_(true);
      auto w = weight.clone().requires_grad_(true);
      const auto loss = model::lm_head_loss_sum(h, w, labels, smoothing, softcap, 3);
      (loss * 0.7).backward();
      std::vector<torch::Tensor> losses(2), grad_h(2), grad_w(2);
      on_ranks(2, false, [&](model::TpGroup& g) {
        const auto slice = model::vocab_slice(v, g.rank(), 2);
        const model::VocabParallel vp{&g, slice};
        auto hr = hidden.clone().requires_grad_(true);
        auto wr = weight.narrow(0, slice.begin, slice.rows()).clone().requires_grad_(true);
        const auto l = model::lm_head_loss_sum(model::tp_enter(hr, g), wr, labels, smoothing, softcap, 3, &vp);
        (l * 0.7).backward();
        const auto r = static_cast<size_t>(g.rank());
        losses[r] = l.detach();
        grad_h[r] = hr.grad();
        grad_w[r] = wr.grad();
      });
      for (int r = 0; r < 2; ++r) {
        CHECK(rel(losses[r], loss) < 1e-6);
        CHECK(rel(grad_h[r], h.grad()) < 1e-6);
      }
      CHECK(rel(torch::cat({grad_w[0], grad_w[1]}), w.grad()) < 1e-6);
    }
  }
}

TEST_CASE("tensor parallel: a split GPT-2 (uneven vocabulary and tied head) gives the whole model's loss and gradients",
          "[tp]") {
  check_split_equals_whole(gpt2_spec(), 2, false, 0.0);
  check_split_equals_whole(gpt2_spec(), 2, false, 0.1);
  check_split_equals_whole(gpt2_spec(), 4, false, 0.0);
}

TEST_CASE("tensor parallel: a split Llama with grouped-query attention gives the whole model's loss and gradients",
          "[tp]") {
  check_split_equals_whole(llama_spec(), 2, false, 0.0);
}

TEST_CASE("tensor parallel: OLMo 2's q and k norms over all heads, split with the heads, give the whole model's loss "
          "and gradients", "[tp]") {
  check_split_equals_whole(olmo2_spec(), 2, false, 0.0);
  check_split_equals_whole(olmo2_spec(), 2, true, 0.0);
}

TEST_CASE("tensor parallel: a mixture of experts (each rank its part of every expert, the shared expert split, the "
          "router whole) gives the whole model's loss, load-balancing loss and gradients", "[tp]") {
  check_split_equals_whole(moe_spec(), 2, false, 0.0);
  check_split_equals_whole(moe_spec(), 2, true, 0.0);
}

TEST_CASE("tensor parallel: sequence parallelism gives the whole model's loss and gradients", "[tp]") {
  check_split_equals_whole(gpt2_spec(), 2, true, 0.0);
  check_split_equals_whole(llama_spec(), 2, true, 0.0);
}

TEST_CASE("tensor parallel: a rank's own random stream leaves the default generator's sequence untouched", "[tp]") {
  model::tp_rng::seed(99);
  torch::manual_seed(1);
  const auto a1 = torch::rand({4});
  torch::Tensor own1, own2;
  {
    const model::TpRngFork fork(torch::kCPU);
    own1 = torch::rand({4});
  }
  const auto a2 = torch::rand({4});
  {
    const model::TpRngFork fork(torch::kCPU);
    own2 = torch::rand({4});
  }
  torch::Tensor a3;
  {
    const model::TpRngFork off(torch::kCPU, /*on=*/false);  // off: the default stream goes on
    a3 = torch::rand({4});
  }
  torch::manual_seed(1);
  CHECK(torch::equal(torch::rand({12}), torch::cat({a1, a2, a3})));
  // The stream goes on from fork to fork: the numbers of a generator seeded 99, in order.
  auto gen = at::detail::createCPUGenerator(99);
  const auto stream = torch::rand({8}, gen);
  CHECK(torch::equal(torch::cat({own1, own2}), stream));
  // Its state moves with it (a checkpoint's replay, a resume).
  const torch::Tensor saved = model::tp_rng::state(torch::kCPU);
  torch::Tensor next;
  {
    const model::TpRngFork fork(torch::kCPU);
    next = torch::rand({4});
  }
  model::tp_rng::set_state(torch::kCPU, saved);
  {
    const model::TpRngFork fork(torch::kCPU);
    CHECK(torch::equal(torch::rand({4}), next));
  }
  model::tp_rng::reset();
  CHECK_FALSE(model::tp_rng::active());
}
