// Loads a model directory, hftrain's (model.json) or Hugging Face's (config.json), runs one
// forward and backward pass on the given ids and writes what the conformance scripts compare with
// transformers: logits, the mean next-token loss, and every parameter's gradient under its Hugging
// Face name (the same mapping as the weights: fused projections split, Conv1D transposed).
//   hftrain_model_forward MODEL_DIR IDS.safetensors OUT.safetensors
// IDS.safetensors holds "input_ids" (B, T) int64, and optionally "attention_mask" (B, T): the
// tokens the load-balancing loss counts. OUT.safetensors gets "logits" (B, T, V), "loss" () and
// "grad.<hf name>" for each parameter; for a mixture of experts, "experts.<module>" (B T, k): the
// experts each MoE layer's router picked for each token, and with the load-balancing loss
// "aux_loss" () (unweighted).
#include <filesystem>
#include <iostream>

#include <torch/torch.h>

#include "model/hf/hf_config.h"
#include "model/hf/hf_weights.h"
#include "model/decoder/moe.h"
#include "model/weights/saved_model.h"
#include "model/weights/stored_weights.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;
namespace fs = std::filesystem;

namespace {

model::Transformer load(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "config.json", ec) && !fs::exists(dir / model::kModelSpecFile, ec)) {
    const auto spec = model::spec_from_hf_config(
        util::read_file<util::CheckpointError>(dir / "config.json", "config"), (dir / "config.json").string());
    model::Transformer m(spec);
    model::load_hf_weights(m, model::StoredWeights(dir));
    return m;
  }
  return model::load_model_dir(dir).model;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: hftrain_model_forward MODEL_DIR IDS.safetensors OUT.safetensors\n";
    return 2;
  }
  try {
    model::Transformer m = load(argv[1]);
    m->eval();  // no dropout
    torch::Tensor ids, mask;
    for (const auto& [name, t] : model::read_safetensors(argv[2])) {
      if (name == "input_ids") ids = t.to(torch::kInt64);
      if (name == "attention_mask") mask = t.to(torch::kInt64);  // padding: left out of the load-balancing loss
    }
    m->set_router_token_mask(mask);
    if (!ids.defined()) throw util::UsageError(std::string(argv[2]) + " holds no input_ids");
    // Mixture-of-experts layers: record which experts the router picks for each token.
    std::vector<std::pair<std::string, model::MoeImpl*>> routers;
    for (const auto& item : m->named_modules()) {
      if (auto* moe = item.value()->as<model::MoeImpl>()) {
        moe->record_routing(true);
        routers.emplace_back(item.key(), moe);
      }
    }
    const auto logits = m->forward(ids);  // (B, T, V)
    const int64_t T = ids.size(1);
    const int64_t V = logits.size(-1);
    auto loss = torch::nn::functional::cross_entropy(logits.narrow(1, 0, T - 1).reshape({-1, V}),
                                                     ids.narrow(1, 1, T - 1).reshape({-1}));
    // With output_router_logits, transformers' loss adds the weighted load-balancing loss.
    torch::Tensor aux_loss;
    if (const auto aux = m->take_router_aux_loss(); aux.defined()) {
      aux_loss = aux.detach();
      loss = loss + m->spec().router_aux_loss_coef * aux;
    }
    loss.backward();
    // The gradients under Hugging Face names: a model of the same spec holding them as weights.
    model::Transformer grads(m->spec());
    {
      torch::NoGradGuard no_grad;
      auto src = m->parameters_by_name();
      auto dst = grads->parameters_by_name();
      for (size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second.grad());
    }
    model::TensorList out{{"logits", logits.detach()}, {"loss", loss.detach()}};
    if (aux_loss.defined()) out.emplace_back("aux_loss", aux_loss);
    for (const auto& [name, moe] : routers) out.emplace_back("experts." + name, moe->last_experts());  // (B T, k)
    for (auto& [name, g] : model::to_hf_weights(grads)) out.emplace_back("grad." + name, g);
    model::write_safetensors(argv[3], out);
  } catch (const util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  }
  return 0;
}
