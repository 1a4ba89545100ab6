// Prints the logits of a model directory for one sequence of ids, as JSON, for
// tests/conformance/export_roundtrip.py to compare with transformers on the exported directory.
//   hftrain_model_logits MODEL_DIR ID [ID ...]
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/saved_model.h"
#include "train/adapter_model.h"
#include "util/error.h"

using namespace hftrain;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: hftrain_model_logits MODEL_DIR ID [ID ...]\n";
    return 2;
  }
  try {
    // A LoRA run's final/ (peft's adapter files): its base with the adapters attached.
    model::LoadedModel loaded = train::is_adapter_dir(argv[1]) ? train::load_adapter_model(argv[1], /*merge=*/false)
                                                               : model::load_model_dir(argv[1]);
    std::vector<int64_t> ids;
    for (int i = 2; i < argc; ++i) ids.push_back(std::stoll(argv[i]));
    torch::NoGradGuard no_grad;
    const auto logits = loaded.model->forward(torch::tensor(ids).unsqueeze(0))[0].contiguous();
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t t = 0; t < logits.size(0); ++t) {
      const auto row = logits[t];
      rows.push_back(std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + row.numel()));
    }
    std::cout << rows.dump() << "\n";
  } catch (const util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  }
  return 0;
}
