// Prints the logits of a model directory for one sequence of ids, as JSON, for
// tests/conformance/export_roundtrip.py to compare with transformers on the exported directory.
//   hftrain_model_logits [--quantize-base nf4|int8] MODEL_DIR ID [ID ...]
// --quantize-base: a LoRA adapter directory's base quantized as a QLoRA run keeps it
// (peft/quantized_linear.h), for tests/conformance/qlora.py.
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/weights/saved_model.h"
#include "peft/quantized_linear.h"
#include "train/task/adapter_model.h"
#include "util/error.h"

using namespace hftrain;

int main(int argc, char** argv) {
  int first = 1;
  config::QuantizeBase quantize = config::QuantizeBase::kNone;
  if (argc > 2 && std::string(argv[1]) == "--quantize-base") {
    const std::string kind = argv[2];
    quantize = kind == "nf4" ? config::QuantizeBase::kNf4 : kind == "int8" ? config::QuantizeBase::kInt8 : quantize;
    if (quantize == config::QuantizeBase::kNone) {
      std::cerr << "--quantize-base takes nf4 or int8\n";
      return 2;
    }
    first = 3;
  }
  if (argc < first + 2) {
    std::cerr << "usage: hftrain_model_logits [--quantize-base nf4|int8] MODEL_DIR ID [ID ...]\n";
    return 2;
  }
  try {
    // A LoRA run's final/ (peft's adapter files): its base with the adapters attached.
    const std::string dir = argv[first];
    model::LoadedModel loaded = train::is_adapter_dir(dir) ? train::load_adapter_model(dir, /*merge=*/false)
                                                           : model::load_model_dir(dir);
    if (quantize != config::QuantizeBase::kNone)
      peft::quantize_frozen_base(*loaded.model, quantize, model::hf_linear_modules(loaded.model->spec()));
    std::vector<int64_t> ids;
    for (int i = first + 1; i < argc; ++i) ids.push_back(std::stoll(argv[i]));
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
