// Every weight loader (Hugging Face GPT-2 and Llama, hftrain's own model directory, BERT) fed the
// same four faults at once: a tensor of the wrong shape, one of the wrong dtype, one missing and
// one extra. Each answers with the one message form of load_weights (weight_loader.h), naming the
// file, and leaves the parameters untouched.
#include "../torch_catch.h"  // first: see the file

#include "../config/helpers.h"
#include "model/encoder/bert_weights.h"
#include "model/hf/hf_weights.h"
#include "model/weights/saved_model.h"
#include "model/weights/stored_weights.h"
#include "util/error.h"

using namespace hftrain;

namespace {

// The faults, by stored name.
struct Faults {
  std::string wrong_dtype;  // stored as int32
  std::string wrong_shape;  // replaced by zeros of `shape`
  std::vector<int64_t> shape;
  std::string removed;
  std::string extra;  // added, 3 zeros
};

model::TensorList with_faults(const model::TensorList& good, const Faults& f) {
  model::TensorList out;
  int found = 0;
  for (const auto& [name, t] : good) {
    if (name == f.removed) {
      ++found;
    } else if (name == f.wrong_dtype) {
      ++found, out.emplace_back(name, t.to(torch::kInt32));
    } else if (name == f.wrong_shape) {
      ++found, out.emplace_back(name, torch::zeros(f.shape));
    } else {
      out.emplace_back(name, t);
    }
  }
  REQUIRE(found == 3);  // a misspelt fault would test nothing
  out.emplace_back(f.extra, torch::zeros({3}));
  return out;
}

// The message of the CheckpointError `load` throws, after checking that no parameter changed.
std::string load_error(const model::TensorList& params, const std::function<void()>& load) {
  std::vector<torch::Tensor> before;
  for (const auto& [name, p] : params) before.push_back(p.clone());
  try {
    load();
  } catch (const util::CheckpointError& e) {
    for (size_t i = 0; i < params.size(); ++i) CHECK(torch::equal(params[i].second, before[i]));
    CHECK_FALSE(e.hint().empty());
    return e.what();
  }
  FAIL("expected a CheckpointError");
  return {};
}

// The same for weights read from a directory: `stored` written there in the Hugging Face layout
// (shards of at most `shard_bytes`), then `load(dir)`. The directory reads "<dir>" in the message.
std::string dir_load_error(const model::TensorList& params, const model::TensorList& stored,
                           uint64_t shard_bytes,
                           const std::function<void(const std::filesystem::path&)>& load) {
  test::TempDir d;
  model::write_sharded_weights(d.path(), stored, shard_bytes);
  std::string message = load_error(params, [&] { load(d.path()); });
  const std::string dir = d.path().string();
  if (message.starts_with(dir)) message.replace(0, dir.size(), "<dir>");
  return message;
}

model::ModelSpec tiny(config::ModelArch arch) {
  model::ModelSpec s;
  s.arch = arch;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = arch == config::ModelArch::kGpt2 ? 4 : 2;
  s.d_model = 24, s.d_ff = 56, s.max_seq_len = 32, s.vocab_size = 67;
  s.tie_embeddings = arch == config::ModelArch::kGpt2;
  return s;
}

constexpr uint64_t kOneFile = 1 << 30;

}  // namespace

TEST_CASE("weight errors: Hugging Face GPT-2, Conv1D shapes as stored", "[model][weights]") {
  torch::manual_seed(1);
  model::Transformer m(tiny(config::ModelArch::kGpt2));
  const auto bad = with_faults(model::to_hf_weights(m), {"transformer.wte.weight",
                                                         "transformer.h.0.attn.c_attn.weight",
                                                         {72, 24},
                                                         "transformer.h.1.mlp.c_fc.bias",
                                                         "transformer.h.0.attn.extra.weight"});
  CHECK(load_error(m->parameters_by_name(), [&] { model::load_hf_weights(m, bad); }) ==
        "the Hugging Face weights does not match the gpt2 model its config describes: "
        "missing h.1.mlp.c_fc.bias; "
        "unexpected transformer.h.0.attn.extra.weight; "
        "wrong shape or type "
        "transformer.wte.weight (Int [67, 24], expected [67, 24] floating point), "
        "transformer.h.0.attn.c_attn.weight (Float [72, 24], expected [24, 72] floating point)");
}

TEST_CASE("weight errors: Hugging Face Llama, a fused projection's part", "[model][weights]") {
  torch::manual_seed(2);
  model::Transformer m(tiny(config::ModelArch::kLlama));
  const auto bad = with_faults(model::to_hf_weights(m), {"model.embed_tokens.weight",
                                                         "model.layers.0.self_attn.k_proj.weight",
                                                         {9, 24},
                                                         "model.layers.1.mlp.up_proj.weight",
                                                         "model.layers.0.self_attn.q_norm.weight"});
  CHECK(dir_load_error(
            m->parameters_by_name(), bad, kOneFile,
            [&](const auto& dir) { model::load_hf_weights(m, model::StoredWeights(dir)); }) ==
        "<dir>/model.safetensors does not match the llama model its config describes: "
        "missing layers.1.mlp.up_proj.weight; "
        "unexpected model.layers.0.self_attn.q_norm.weight; "
        "wrong shape or type "
        "model.embed_tokens.weight (Int [67, 24], expected [67, 24] floating point), "
        "model.layers.0.self_attn.k_proj.weight (Float [9, 24], expected [12, 24] floating point)");
}

TEST_CASE("weight errors: hftrain's own model directory", "[model][weights]") {
  torch::manual_seed(3);
  model::Transformer m(tiny(config::ModelArch::kGpt2));
  const auto bad = with_faults(m->parameters_by_name(), {"embed_tokens.weight",
                                                         "final_norm.weight",
                                                         {25},
                                                         "layers.1.mlp.up_proj.bias",
                                                         "layers.2.attn_norm.weight"});
  CHECK(dir_load_error(m->parameters_by_name(), bad, kOneFile,
                       [&](const auto& dir) { model::load_model_weights(m, dir); }) ==
        "<dir>/model.safetensors does not match model.json: "
        "missing layers.1.mlp.up_proj.bias; "
        "unexpected layers.2.attn_norm.weight; "
        "wrong shape or type "
        "embed_tokens.weight (Int [67, 24], expected [67, 24] floating point), "
        "final_norm.weight (Float [25], expected [24] floating point)");
}

TEST_CASE("weight errors: BERT, sharded, beyond what it tolerates", "[model][weights][bert]") {
  model::BertSpec spec;
  spec.vocab_size = 40, spec.hidden_size = 24, spec.intermediate_size = 37;
  spec.num_hidden_layers = 2, spec.num_attention_heads = 3;
  spec.max_position_embeddings = 16, spec.num_labels = 3;
  torch::manual_seed(4);
  model::BertEncoder m(spec);
  const auto bad = with_faults(model::to_hf_bert_weights(m),
                               {"bert.embeddings.word_embeddings.weight",
                                "bert.encoder.layer.1.attention.output.dense.weight",
                                {24, 23},
                                "bert.encoder.layer.0.output.dense.bias",
                                "bert.encoder.layer.0.attention.self.extra.weight"});
  CHECK(dir_load_error(
            m->parameters_by_name(), bad, 4096,
            [&](const auto& dir) { model::load_bert_weights(m, model::StoredWeights(dir)); }) ==
        "<dir>/model.safetensors.index.json does not match the BERT model its config describes: "
        "missing encoder.layer.0.output.dense.bias; "
        "unexpected bert.encoder.layer.0.attention.self.extra.weight; "
        "wrong shape or type "
        "bert.embeddings.word_embeddings.weight (Int [40, 24], expected [40, 24] floating point), "
        "bert.encoder.layer.1.attention.output.dense.weight "
        "(Float [24, 23], expected [24, 24] floating point)");
}
