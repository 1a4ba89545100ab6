#include "peft/quantized_linear.h"

#include <algorithm>
#include <functional>
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
  auto size = [](const torch::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  };
  int64_t n = 0;
  for (const auto& w : nf4_) {
    n += size(w.packed) + size(w.absmax) + size(w.absmax_codes) + size(w.absmax_scales) + size(w.absmax_code_map);
  }
  for (const auto& w : int8_) n += size(w.codes) + size(w.row_absmax);
  return n;
}

namespace {

// The Dense layers QLoRA quantizes, by weight name: every one under `model` not yet quantized but
// the output layers `layout` marks (bitsandbytes' default skips the output head: a language model's
// lm_head, a reward model's score), except those `skip` names.
std::map<std::string, std::shared_ptr<model::DenseImpl>> quantizable_layers(
    torch::nn::Module& model, const std::vector<model::HfLinear>& layout,
    const std::function<bool(const std::string& weight, const model::DenseImpl&)>& skip) {
  std::set<std::string> outputs;
  for (const auto& linear : layout) {
    if (linear.output_layer) outputs.insert(linear.dense);
  }
  std::map<std::string, std::shared_ptr<model::DenseImpl>> out;
  for (const auto& item : model.named_modules()) {
    auto dense = std::dynamic_pointer_cast<model::DenseImpl>(item.value());
    const std::string& name = item.key();
    if (!dense || dense->frozen_weight() || outputs.count(name) > 0) continue;
    const std::string weight = name + ".weight";
    if (!skip(weight, *dense)) out.emplace(weight, std::move(dense));
  }
  return out;
}

// Quantizes one layer's weight, given as its projections in row order or whole (then split as
// `rows` says), into `dense`, and counts it in `report`.
void quantize_into(model::DenseImpl& dense, std::vector<torch::Tensor> pieces,
                   const std::map<std::string, std::vector<int64_t>>& rows, const std::string& weight,
                   config::QuantizeBase kind, const torch::Device& device, QuantizedBase& report) {
  const auto split = rows.find(weight.substr(0, weight.size() - std::string(".weight").size()));
  if (pieces.size() == 1 && split != rows.end() && split->second.size() > 1) {
    pieces = pieces.front().split_with_sizes(split->second, 0);
  }
  for (auto& p : pieces) {
    report.parameters += p.numel();
    report.bytes_before += p.numel() * static_cast<int64_t>(p.element_size());
    p = p.detach().to(device);  // one projection at a time on the device, then quantized there
  }
  auto q = std::make_shared<QuantizedWeight>(pieces, kind);
  report.layers += 1;
  report.bytes_after += q->bytes();
  dense.set_frozen_weight(std::move(q));  // frees the full-precision weight, if it had one
}

}  // namespace

QuantizedBase quantize_frozen_base(torch::nn::Module& model, config::QuantizeBase kind,
                                   const std::vector<model::HfLinear>& layout) {
  QuantizedBase out;
  if (kind == config::QuantizeBase::kNone) return out;
  const auto rows = projection_rows(layout);
  const auto layers = quantizable_layers(
      model, layout, [](const std::string&, const model::DenseImpl& dense) { return dense.weight.requires_grad(); });
  for (const auto& [weight, dense] : layers) {
    quantize_into(*dense, {dense->weight}, rows, weight, kind, dense->weight.device(), out);
  }
  return out;
}

QuantizeOnLoad quantize_on_load(torch::nn::Module& model, config::QuantizeBase kind, const std::set<std::string>& keep,
                                const torch::Device& device, const std::vector<model::HfLinear>& layout) {
  QuantizeOnLoad out;
  out.report = std::make_shared<QuantizedBase>();
  if (kind == config::QuantizeBase::kNone) return out;
  auto layers = std::make_shared<std::map<std::string, std::shared_ptr<model::DenseImpl>>>(quantizable_layers(
      model, layout, [&](const std::string& weight, const model::DenseImpl&) { return keep.count(weight) > 0; }));
  torch::NoGradGuard no_grad;
  for (const auto& [weight, dense] : *layers) {
    // A placeholder already on the training device: moving the module there leaves it be.
    dense->weight.set_data(torch::zeros({1}, dense->weight.options().device(device)).expand(dense->weight.sizes()));
  }
  out.handover.handed_over = [layers](const std::string& name) { return layers->count(name) > 0; };
  out.handover.take = [layers, kind, device, report = out.report, rows = projection_rows(layout)](
                          const std::string& name, std::vector<torch::Tensor> pieces) {
    quantize_into(*layers->at(name), std::move(pieces), rows, name, kind, device, *report);
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
