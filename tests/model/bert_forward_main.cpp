// Loads a Hugging Face BERT, RoBERTa or ModernBERT directory (config.json + weights) into hftrain's BertEncoder, runs
// one forward and backward pass in eval mode (no dropout) and writes what tests/conformance/hf_bert.py compares with
// transformers. A directory with config.json and no weights gets hftrain's own random initialisation (seeded), to
// export a model that hftrain, not transformers, made.
//   hftrain_bert_forward MODEL_DIR INPUTS.safetensors OUT.safetensors [--num-labels N] [--export
//   DIR]
// INPUTS holds input_ids, attention_mask, token_type_ids (B, T) int64 and, for a classifier,
// labels (B), a token classifier's (B, T). OUT gets last_hidden_state (B, T, C), pooled (B, C) where there is a pooler,
// and for a classifier logits (B, K) and loss (); for a BertModel "loss" is the mean of last_hidden_state^2 over the
// tokens (attention_mask) + mean(pooled) (no pooled term for ModernBERT and DeBERTa). Then grad.<hf name> for each
// parameter, under the names save_pretrained writes. --num-labels N builds a classifier of N labels whatever the config
// says (a BertModel directory fine-tuned);
// --export DIR writes the model for transformers (write_hf_bert, small shards). What loading
// initialised or dropped is printed on stdout.
#include <filesystem>
#include <iostream>
#include <map>

#include <torch/torch.h>

#include "model/encoder/bert.h"
#include "model/encoder/bert_spec.h"
#include "model/encoder/bert_weights.h"
#include "model/weights/safetensors.h"
#include "model/weights/stored_weights.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: hftrain_bert_forward MODEL_DIR INPUTS.safetensors OUT.safetensors "
                 "[--num-labels N] "
                 "[--export DIR]\n";
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    int64_t num_labels = 0;
    fs::path export_dir;
    for (int i = 4; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      if (flag == "--num-labels") num_labels = std::stoll(argv[i + 1]);
      if (flag == "--export") export_dir = argv[i + 1];
    }
    std::vector<std::string> labels;
    auto spec = model::bert_spec_from_hf_config(
        util::read_file<util::CheckpointError>(dir / "config.json", "config"),
        (dir / "config.json").string(), &labels);
    if (num_labels > 0) {
      spec.with_classifier = true;
      spec.num_labels = num_labels;
      labels.clear();
    }
    torch::manual_seed(0);
    model::BertEncoder m(spec);
    if (model::has_model_weights(dir)) {
      const auto report = model::load_bert_weights(m, model::StoredWeights(dir));
      std::cout << "load: " << report.describe() << "\n";
    }
    m->eval();  // no dropout

    std::map<std::string, torch::Tensor> in;
    for (const auto& [name, t] : model::read_safetensors(argv[2])) in[name] = t.to(torch::kInt64);
    const auto ids = in.at("input_ids");
    const auto mask = in.at("attention_mask");
    const auto types = in.at("token_type_ids");
    const auto encoded = m->encode(ids, mask, types);
    model::TensorList out{{"last_hidden_state", encoded.last_hidden_state.detach()}};
    if (encoded.pooled.defined()) out.emplace_back("pooled", encoded.pooled.detach());  // not RoBERTa's classifier
    torch::Tensor loss;
    if (spec.with_classifier) {
      const auto logits = m->forward(ids, mask, types);
      // A token classifier's logits (B, T, K) against labels (B, T), -100 where unlabelled.
      loss = model::classification_loss(logits.reshape({-1, logits.size(-1)}), in.at("labels").reshape({-1}));
      out.emplace_back("logits", logits.detach());
    } else {
      // Over the tokens: what the padding's positions hold is no output (ModernBERT leaves zeros).
      const auto real = mask.ne(0).unsqueeze(-1).to(torch::kFloat32);
      loss = (encoded.last_hidden_state.square() * real).sum() / (real.sum() * encoded.last_hidden_state.size(-1));
      if (encoded.pooled.defined()) loss = loss + encoded.pooled.mean();  // ModernBERT has no pooler
    }
    out.emplace_back("loss", loss.detach());
    loss.backward();
    // The gradients under Hugging Face names: a model of the same spec holding them as weights.
    model::BertEncoder grads(spec);
    {
      torch::NoGradGuard no_grad;
      auto src = m->parameters_by_name();
      auto dst = grads->parameters_by_name();
      for (size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second.grad());
    }
    for (auto& [name, g] : model::to_hf_bert_weights(grads)) out.emplace_back("grad." + name, g);
    model::write_safetensors(argv[3], out);
    if (!export_dir.empty()) {
      fs::create_directories(export_dir);
      model::write_hf_bert(m, export_dir, labels, 20'000);
    }
  } catch (const util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  }
  return 0;
}
