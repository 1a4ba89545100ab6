// Weights read from memory-mapped safetensors files straight into the model: the extra memory
// a load takes stays below the largest tensor (counted by an allocator that wraps LibTorch's CPU
// allocator), dtypes are converted in the copy, sharded directories written by
// write_sharded_weights read back, and views outlive the object that mapped them.
#include "../torch_catch.h"  // first: see the file

#include <algorithm>
#include <cstring>

#include <c10/core/CPUAllocator.h>
#include <nlohmann/json.hpp>

#include "../config/helpers.h"
#include "model/hf/hf_weights.h"
#include "model/weights/saved_model.h"
#include "model/weights/stored_weights.h"
#include "util/fs.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// Counts the bytes LibTorch's CPU tensors hold while installed: the live total and its peak.
class CountingAllocator final : public c10::Allocator {
 public:
  CountingAllocator() : inner_(c10::GetCPUAllocator()) { c10::SetCPUAllocator(this, /*priority=*/100); }
  ~CountingAllocator() override { c10::SetCPUAllocator(inner_, /*priority=*/100); }

  c10::DataPtr allocate(size_t n) override {
    auto* block = new Block{inner_->allocate(n), n, this};
    live_ += n;
    peak_ = std::max(peak_, live_);
    void* data = block->data.get();
    return {data, block, &Block::release, c10::Device(c10::DeviceType::CPU)};
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  void reset_peak() { peak_ = live_; }
  int64_t peak_above(int64_t base) const { return peak_ - base; }
  int64_t live() const { return live_; }

 private:
  struct Block {
    c10::DataPtr data;
    size_t size;
    CountingAllocator* owner;
    static void release(void* ctx) {
      auto* b = static_cast<Block*>(ctx);
      b->owner->live_ -= static_cast<int64_t>(b->size);
      delete b;
    }
  };
  c10::Allocator* inner_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
};

model::ModelSpec medium_gpt2() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kGpt2;
  s.n_layer = 3, s.n_head = 4, s.n_kv_head = 4, s.d_model = 256, s.d_ff = 1024, s.max_seq_len = 256;
  s.vocab_size = 6000;
  return s;
}

model::ModelSpec medium_llama() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kLlama;
  s.n_layer = 3, s.n_head = 8, s.n_kv_head = 2, s.d_model = 256, s.d_ff = 704, s.max_seq_len = 256;
  s.vocab_size = 6000, s.tie_embeddings = false, s.attention_bias = config::AttentionBias::kQkv, s.mlp_bias = false;
  return s;
}

int64_t largest_parameter_bytes(const model::Transformer& m) {
  int64_t n = 0;
  for (const auto& [name, p] : m->parameters_by_name()) n = std::max<int64_t>(n, p.numel() * p.element_size());
  return n;
}

}  // namespace

TEST_CASE("loading copies from the mapping: peak extra memory below the largest tensor", "[model][memory]") {
  for (const auto& spec : {medium_gpt2(), medium_llama()}) {
    test::TempDir d;
    torch::manual_seed(1);
    model::Transformer source(spec);
    // Hugging Face names in bf16 (a dtype conversion on load), sharded; and hftrain's own layout in fp32.
    model::TensorList hf;
    for (auto& [name, t] : model::to_hf_weights(source)) hf.emplace_back(name, t.to(torch::kBFloat16));
    fs::create_directories(d.path() / "hf");
    model::write_sharded_weights(d.path() / "hf", hf, 4'000'000);
    fs::create_directories(d.path() / "own");
    model::write_model_files(d.path() / "own", source, tokenizer::TokenizerKind::kByte, nullptr);

    torch::manual_seed(2);
    model::Transformer a(spec), b(spec);
    const int64_t largest = largest_parameter_bytes(a);
    int64_t hf_peak = 0, own_peak = 0;
    {
      CountingAllocator counting;
      const int64_t base = counting.live();
      model::load_hf_weights(a, model::StoredWeights(d.path() / "hf"));
      hf_peak = counting.peak_above(base);
      counting.reset_peak();
      model::load_model_weights(b, d.path() / "own");
      own_peak = counting.peak_above(base);
    }
    INFO("largest tensor " << largest << " bytes; extra at peak: " << hf_peak << " (Hugging Face, bf16), " << own_peak
                           << " (hftrain)");
    CHECK(hf_peak < largest);
    CHECK(own_peak < largest);
    const auto want = source->parameters_by_name();
    const auto got_hf = a->parameters_by_name();
    const auto got_own = b->parameters_by_name();
    for (size_t i = 0; i < want.size(); ++i) {
      INFO(want[i].first);
      CHECK(torch::equal(got_own[i].second, want[i].second));
      CHECK(torch::equal(got_hf[i].second, want[i].second.to(torch::kBFloat16).to(torch::kFloat32)));
    }
  }
}

TEST_CASE("sharded weights: model-0000i-of-0000N files and an index that read back", "[model]") {
  test::TempDir d;
  model::TensorList tensors;
  for (int i = 0; i < 5; ++i) tensors.emplace_back("t" + std::to_string(i), torch::full({10, 10}, i, torch::kFloat32));
  tensors.emplace_back("big", torch::ones({40, 40}));  // over the limit: a shard of its own
  model::write_sharded_weights(d.path(), tensors, 900);
  CHECK_FALSE(fs::exists(d.path() / "model.safetensors"));
  const auto index =
      nlohmann::json::parse(util::read_file<util::IoError>(d.path() / "model.safetensors.index.json", "index"));
  CHECK(index["metadata"]["total_size"] == 5 * 400 + 6400);
  CHECK(index["weight_map"]["t0"] == "model-00001-of-00004.safetensors");
  CHECK(index["weight_map"]["t1"] == "model-00001-of-00004.safetensors");
  CHECK(index["weight_map"]["t2"] == "model-00002-of-00004.safetensors");
  CHECK(index["weight_map"]["big"] == "model-00004-of-00004.safetensors");
  const model::StoredWeights stored(d.path());
  CHECK(stored.names() == std::vector<std::string>{"big", "t0", "t1", "t2", "t3", "t4"});
  CHECK(stored.where() == (d.path() / "model.safetensors.index.json").string());
  for (const auto& [name, t] : tensors) CHECK(torch::equal(stored.get(name), t));
  CHECK(stored.entry("t3").dtype == "F32");

  test::TempDir single;
  model::write_sharded_weights(single.path(), tensors, 1'000'000);
  CHECK(fs::exists(single.path() / "model.safetensors"));
  CHECK_FALSE(fs::exists(single.path() / "model.safetensors.index.json"));
  CHECK(model::StoredWeights(single.path()).names().size() == 6);

  test::TempDir empty;
  CHECK_THROWS_WITH(model::StoredWeights(empty.path()), Contains("model.safetensors is missing"));
}

TEST_CASE("mapped views: unaligned data is copied, views outlive the mapping object", "[model]") {
  test::TempDir d;
  // 3 bf16 values (6 bytes) put the f32 tensor after them on a 2-byte boundary.
  const auto a = torch::tensor({1.5, -2.0, 3.25}).to(torch::kBFloat16);
  const auto b = torch::tensor({0.1f, 7.0f});
  model::write_safetensors(d.path() / "model.safetensors", {{"a", a}, {"b", b}});
  torch::Tensor va, vb;
  {
    const model::StoredWeights stored(d.path());
    va = stored.get("a");
    vb = stored.get("b");
  }
  CHECK(torch::equal(va, a));
  CHECK(torch::equal(vb, b));
  CHECK(reinterpret_cast<uintptr_t>(vb.data_ptr()) % alignof(float) == 0);
}

TEST_CASE("describe_names folds layers and cuts long lists", "[model]") {
  CHECK(model::describe_names({"model.layers.0.x.bias", "model.layers.1.x.bias", "lm_head.weight"}) ==
        "model.layers.*.x.bias (in 2 layers), lm_head.weight");
  std::vector<std::string> many;
  for (int i = 0; i < 12; ++i) many.push_back("w" + std::to_string(i));
  CHECK(model::describe_names(many) == "w0, w1, w2, w3, w4, w5, w6, w7 and 4 more");
  CHECK(model::describe_names({"a.0.b (in x)", "a.1.b (in y)"}, 8, false) == "a.0.b (in x), a.1.b (in y)");
}
