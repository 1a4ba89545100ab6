// QLoRA's frozen base (peft.quantize_base): every linear layer of the transformer blocks that does
// not train keeps its weight quantized, as bitsandbytes' Linear4bit (NF4, blocks of 64, double-
// quantized absmax) or Linear8bitLt (LLM.int8 row-wise absmax, no outlier columns) store it, and
// dequantizes it for each product: in the forward, and again in the backward for the input's
// gradient (the dequantized weight is never kept for the backward, so activations hold no weight).
// The product runs in the autocast dtype where autocast is on (bf16 on a GPU), else in the input's.
// The output layer and the embeddings stay as they are (bitsandbytes' default skips lm_head).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "config/config.h"
#include "model/dense.h"
#include "model/hf/hf_modules.h"
#include "model/weights/weight_loader.h"
#include "peft/quantize.h"

namespace hftrain::peft {

class QuantizedWeight final : public model::FrozenWeight {
 public:
  // `projections`: the Hugging Face projections a layer's weight holds, in row order (q, k, v;
  // gate, up; or the one weight), each 2-D (rows x in), float32/float16/bfloat16, on the device
  // the layer computes on. Each is quantized apart, as bitsandbytes quantizes each module (the
  // double quantization's offset is per tensor).
  QuantizedWeight(const std::vector<torch::Tensor>& projections, config::QuantizeBase kind);
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& bias) const override;
  int64_t bytes() const override;
  // The weight as it computes: code values times their scales, in `dtype`.
  torch::Tensor dequantize(torch::ScalarType dtype) const;
  torch::Tensor dense(torch::ScalarType dtype) const override { return dequantize(dtype); }
  config::QuantizeBase kind() const { return kind_; }

 private:
  config::QuantizeBase kind_;
  std::vector<Nf4Weight> nf4_;    // one per projection
  std::vector<Int8Weight> int8_;  // one per projection
};

struct QuantizedBase {
  int64_t layers = 0;             // linear layers now quantized
  int64_t parameters = 0;         // their weights' elements
  int64_t bytes_before = 0;       // those weights as they were
  int64_t bytes_after = 0;        // as they are now
};

// Quantizes, one layer at a time (the full-precision weight freed after each), the weight of every
// Dense layer under `model` whose weight does not train, except the output layer (`lm_head`).
// `layout` (model::hf_linear_modules) says which projections a fused layer holds. Returns what it
// did; nothing when `kind` is kNone.
QuantizedBase quantize_frozen_base(torch::nn::Module& model, config::QuantizeBase kind,
                                   const std::vector<model::HfLinear>& layout);

// The bytes QuantizedWeight holds for one projection of rows x cols weights (`hftrain plan`).
int64_t quantized_bytes(int64_t rows, int64_t cols, config::QuantizeBase kind);

// Quantization as the base is read (model.from), so that it never lives in memory at full
// precision: the layers quantize_frozen_base would quantize (those `keep` does not name: the
// parameters that train in full) get a placeholder weight on `device` now, and `handover`, given
// to the loader, quantizes each on `device` from its stored projections as they are read (one
// layer's weights at a time). `report` fills as it goes.
struct QuantizeOnLoad {
  model::WeightHandover handover;
  std::shared_ptr<QuantizedBase> report;
};
// `layout` splits a fused weight stored whole (hftrain's own model directories) into its
// projections, as quantize_frozen_base does.
QuantizeOnLoad quantize_on_load(torch::nn::Module& model, config::QuantizeBase kind, const std::set<std::string>& keep,
                                const torch::Device& device, const std::vector<model::HfLinear>& layout);

// What the frozen parameters under `model` hold, quantized layers at their quantized size.
int64_t frozen_bytes(torch::nn::Module& model);

const char* quantize_base_name(config::QuantizeBase kind);

}  // namespace hftrain::peft
