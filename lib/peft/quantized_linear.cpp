#include "peft/quantized_linear.h"

#include <algorithm>
#include <map>
#include <utility>

#include <ATen/autocast_mode.h>
#include <torch/custom_class.h>
#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::peft {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The quantized weight travels through autograd's context as a registered custom class.
struct WeightHolder : torch::CustomClassHolder {
  explicit WeightHolder(const QuantizedWeight* w) : weight(w) {}
  const QuantizedWeight* weight;  // owned by the Dense layer, which outlives every step's graph
};
const auto kWeightHolderClass = torch::class_<WeightHolder>("hftrain", "QuantizedWeightHolder");

torch::ScalarType compute_dtype(const torch::Tensor& x) {
  const auto device = x.device().type();
  return at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device) : x.scalar_type();
}

// y = x W^T with W dequantized here and again in the backward; no gradient for W.
class QuantizedLinear : public torch::autograd::Function<QuantizedLinear> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const QuantizedWeight* w) {
    // Read before the guard: autocast's "enabled" is the absence of its keys from the excluded set.
    const auto dtype = compute_dtype(x);
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    ctx->saved_data["weight"] = c10::make_intrusive<WeightHolder>(w);
    ctx->saved_data["dtype"] = static_cast<int64_t>(dtype);
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    return torch::matmul(x.to(dtype), w->dequantize(dtype).t());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const auto* w = ctx->saved_data["weight"].toCustomClass<WeightHolder>()->weight;
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    const auto x_dtype = static_cast<torch::ScalarType>(ctx->saved_data["x_dtype"].toInt());
    const torch::Tensor grad_x = grad_outputs[0].to(dtype).matmul(w->dequantize(dtype)).to(x_dtype);
    return {grad_x, torch::Tensor()};
  }
};

// The rows of each projection a fused Dense layer holds, by the layer's module path.
std::map<std::string, std::vector<int64_t>> projection_rows(const std::vector<model::HfLinear>& layout) {
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> by_dense;  // dense -> (row_offset, rows)
  for (const auto& m : layout) by_dense[m.dense].emplace_back(m.row_offset, m.rows);
  std::map<std::string, std::vector<int64_t>> out;
  for (auto& [dense, pieces] : by_dense) {
    std::sort(pieces.begin(), pieces.end());
    for (const auto& [offset, rows] : pieces) out[dense].push_back(rows);
  }
  return out;
}

}  // namespace

const char* quantize_base_name(config::QuantizeBase kind) {
  switch (kind) {
    case config::QuantizeBase::kNone: return "none";
    case config::QuantizeBase::kNf4: return "nf4";
    case config::QuantizeBase::kInt8: return "int8";
  }
  return "none";
}

namespace {

std::vector<torch::Tensor> split_rows(const torch::Tensor& weight, std::vector<int64_t> row_splits) {
  if (weight.dim() != 2) throw util::ConfigError("peft.quantize_base: only 2-D weights are quantized", "");
  if (row_splits.empty()) row_splits = {weight.size(0)};
  std::vector<torch::Tensor> pieces;
  int64_t row = 0;
  for (const int64_t rows : row_splits) {
    pieces.push_back(weight.detach().narrow(0, row, rows));
    row += rows;
  }
  if (row != weight.size(0)) throw util::ConfigError("peft.quantize_base: the projections do not cover the weight", "");
  return pieces;
}

}  // namespace

QuantizedWeight::QuantizedWeight(const torch::Tensor& weight, config::QuantizeBase kind, std::vector<int64_t> row_splits)
    : QuantizedWeight(split_rows(weight, std::move(row_splits)), kind) {}

QuantizedWeight::QuantizedWeight(const std::vector<torch::Tensor>& projections, config::QuantizeBase kind)
    : kind_(kind) {
  torch::NoGradGuard no_grad;
  if (kind == config::QuantizeBase::kNone) throw util::ConfigError("peft.quantize_base=none quantizes nothing", "");
  for (const torch::Tensor& piece : projections) {
    if (piece.dim() != 2) throw util::ConfigError("peft.quantize_base: only 2-D weights are quantized", "");
    if (kind == config::QuantizeBase::kNf4) {
      // QLoRA's settings (bitsandbytes' BitsAndBytesConfig for it): blocks of 64, double
      // quantization; the nested 8-bit code rounds as bitsandbytes' kernel on that device does
      // (its CPU kernel's binned rounding, else the nearest code).
      nf4_.push_back(quantize_nf4(piece, 64, /*double_quant=*/true,
                                  piece.is_cpu() ? CodeRounding::kBitsandbytesCpu : CodeRounding::kNearest));
    } else {
      // Int8Params quantizes the weight as float16 (its CB and SCB come from the half values).
      int8_.push_back(quantize_int8_rowwise(piece.to(torch::kFloat16)));
    }
  }
}

torch::Tensor QuantizedWeight::dequantize(torch::ScalarType dtype) const {
  std::vector<torch::Tensor> pieces;
  for (const auto& w : nf4_) pieces.push_back(dequantize_nf4(w, dtype));
  for (const auto& w : int8_) pieces.push_back(dequantize_int8_rowwise(w, dtype));
  return pieces.size() == 1 ? pieces.front() : torch::cat(pieces, 0);
}

torch::Tensor QuantizedWeight::linear(const torch::Tensor& x, const torch::Tensor& bias) const {
  // The (frozen) bias outside the function: an undefined tensor cannot be one of its inputs.
  const torch::Tensor y = QuantizedLinear::apply(x, this);
  return bias.defined() ? y + bias.to(y.scalar_type()) : y;
}

int64_t QuantizedWeight::bytes() const {
  auto size = [](const torch::Tensor& t) { return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0; };
  int64_t n = 0;
  for (const auto& w : nf4_) {
    n += size(w.packed) + size(w.absmax) + size(w.absmax_codes) + size(w.absmax_scales) + size(w.absmax_code_map);
  }
  for (const auto& w : int8_) n += size(w.codes) + size(w.row_absmax);
  return n;
}

QuantizedBase quantize_frozen_base(torch::nn::Module& model, config::QuantizeBase kind,
                                   const std::vector<model::HfLinear>& layout) {
  QuantizedBase out;
  if (kind == config::QuantizeBase::kNone) return out;
  const auto projections = projection_rows(layout);
  for (const auto& item : model.named_modules()) {
    auto dense = std::dynamic_pointer_cast<model::DenseImpl>(item.value());
    if (!dense || dense->frozen_weight() || dense->weight.requires_grad()) continue;
    const std::string& name = item.key();
    if (name == "lm_head" || name.ends_with(".lm_head")) continue;
    const torch::Tensor& w = dense->weight;
    out.layers += 1;
    out.parameters += w.numel();
    out.bytes_before += w.numel() * static_cast<int64_t>(w.element_size());
    const auto it = projections.find(name);
    auto q = std::make_shared<QuantizedWeight>(w, kind, it == projections.end() ? std::vector<int64_t>{} : it->second);
    out.bytes_after += q->bytes();
    dense->set_frozen_weight(std::move(q));  // frees the full-precision weight
  }
  return out;
}

QuantizeOnLoad quantize_on_load(torch::nn::Module& model, config::QuantizeBase kind, const std::set<std::string>& keep,
                                const torch::Device& device, const std::vector<model::HfLinear>& layout) {
  QuantizeOnLoad out;
  out.report = std::make_shared<QuantizedBase>();
  if (kind == config::QuantizeBase::kNone) return out;
  auto layers = std::make_shared<std::map<std::string, std::shared_ptr<model::DenseImpl>>>();  // by weight name
  for (const auto& item : model.named_modules()) {
    auto dense = std::dynamic_pointer_cast<model::DenseImpl>(item.value());
    const std::string& name = item.key();
    const std::string weight = name + ".weight";
    if (!dense || dense->frozen_weight() || name == "lm_head" || name.ends_with(".lm_head") || keep.count(weight)) {
      continue;
    }
    torch::NoGradGuard no_grad;
    // A placeholder already on the training device: moving the module there leaves it be.
    dense->weight.set_data(torch::zeros({1}, dense->weight.options().device(device)).expand(dense->weight.sizes()));
    (*layers)[weight] = dense;
  }
  out.handover.handed_over = [layers](const std::string& name) { return layers->count(name) > 0; };
  out.handover.take = [layers, kind, device, report = out.report, rows = projection_rows(layout)](
                          const std::string& name, std::vector<torch::Tensor> pieces) {
    // A fused weight stored whole: its projections apart, as the Hugging Face layout stores them.
    const auto split = rows.find(name.substr(0, name.size() - std::string(".weight").size()));
    if (pieces.size() == 1 && split != rows.end() && split->second.size() > 1) {
      pieces = pieces.front().split_with_sizes(split->second, 0);
    }
    int64_t weights = 0, bytes = 0;
    for (auto& p : pieces) {
      weights += p.numel();
      bytes += p.numel() * static_cast<int64_t>(p.element_size());
      p = p.to(device);  // one projection at a time on the device, then quantized there
    }
    auto q = std::make_shared<QuantizedWeight>(pieces, kind);
    report->layers += 1;
    report->parameters += weights;
    report->bytes_before += bytes;
    report->bytes_after += q->bytes();
    layers->at(name)->set_frozen_weight(std::move(q));
  };
  return out;
}

int64_t quantized_bytes(int64_t rows, int64_t cols, config::QuantizeBase kind) {
  const int64_t n = rows * cols;
  switch (kind) {
    case config::QuantizeBase::kNf4: {
      // Two codes a byte; a byte per block of 64 (the double-quantized absmax); a float per 256
      // blocks; the 256-entry code map of the double quantization.
      const int64_t blocks = (n + 63) / 64;
      return (n + 1) / 2 + blocks + 4 * ((blocks + 255) / 256) + 4 * 256;
    }
    case config::QuantizeBase::kInt8: return n + 4 * rows;  // a byte a weight, a float a row
    case config::QuantizeBase::kNone: break;
  }
  return 4 * n;
}

int64_t frozen_bytes(torch::nn::Module& model) {
  int64_t bytes = 0;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    auto dense = std::dynamic_pointer_cast<model::DenseImpl>(item.value());
    const bool quantized = dense && dense->frozen_weight();
    if (quantized) bytes += dense->frozen_weight()->bytes();
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      if (p.value().requires_grad() || (quantized && p.value().is_same(dense->weight))) continue;
      bytes += p.value().numel() * static_cast<int64_t>(p.value().element_size());
    }
  }
  return bytes;
}

}  // namespace hftrain::peft
