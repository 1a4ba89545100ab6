// Linear and embedding layers whose weights start as uninitialised memory (torch::empty). LibTorch's
// own Linear and Embedding draw kaiming-uniform and normal numbers in their constructors, which the
// transformer's initialisation (or model.from) then overwrites: at GPT-2 124M that was most of a
// second of start-up. Parameter names are LibTorch's ("weight", "bias"), so checkpoints, the Hugging
// Face name maps and zero3's units see the same model.
#pragma once

#include <cstdint>
#include <memory>

#include <torch/nn/functional/embedding.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace hftrain::model {

class DenseImpl;

// What a Dense layer may carry besides its weight: an adapter that turns the layer's input x and
// output y into a new output (LoRA: y + scale B A x, peft/lora.h); `layer` is the layer itself
// (DoRA reads its weight). Its parameters are registered under the layer as "lora", so they
// appear as <layer>.lora.* in parameters_by_name().
class DenseAdapter : public torch::nn::Module {
 public:
  virtual torch::Tensor adapt(const torch::Tensor& x, const torch::Tensor& y, const DenseImpl& layer) = 0;
};

// A frozen weight a Dense layer computes with in place of its own (QLoRA: the base weight stored
// quantized, peft/quantized_linear.h). `linear` is the layer's x W^T + b through it; `bytes` what
// it holds.
class FrozenWeight {
 public:
  virtual ~FrozenWeight() = default;
  virtual torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& bias) const = 0;
  // The weight as a dense (out x in) tensor of `dtype` (dequantized).
  virtual torch::Tensor dense(torch::ScalarType dtype) const = 0;
  virtual int64_t bytes() const = 0;
};

// While one lives on this thread, Dense layers compute without their adapters: the base model
// (preference training's reference with LoRA, as peft's disable_adapter()).
class AdaptersOff {
 public:
  AdaptersOff() { ++depth(); }
  ~AdaptersOff() { --depth(); }
  AdaptersOff(const AdaptersOff&) = delete;
  AdaptersOff& operator=(const AdaptersOff&) = delete;
  static bool active() { return depth() > 0; }

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

class DenseImpl : public torch::nn::Module {
 public:
  DenseImpl(int64_t in_features, int64_t out_features, bool with_bias) {
    weight = register_parameter("weight", torch::empty({out_features, in_features}));
    if (with_bias) bias = register_parameter("bias", torch::empty({out_features}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = frozen_ ? frozen_->linear(x, bias) : torch::nn::functional::linear(x, weight, bias);
    return adapter_ && !AdaptersOff::active() ? adapter_->adapt(x, y, *this) : y;
  }
  // The weight the layer computes with, as a dense tensor of `dtype` (a frozen one dequantized).
  torch::Tensor effective_weight(torch::ScalarType dtype) const {
    return frozen_ ? frozen_->dense(dtype) : weight.to(dtype);
  }
  // From here on the layer computes through `frozen`; its `weight` parameter keeps its name, shape
  // and requires_grad=false but no storage of its own (a zero-stride view of one element), so
  // parameter counts and names stay those of the model.
  void set_frozen_weight(std::shared_ptr<const FrozenWeight> frozen) {
    frozen_ = std::move(frozen);
    weight.set_data(torch::zeros({1}, weight.options()).expand(weight.sizes()));
  }
  const std::shared_ptr<const FrozenWeight>& frozen_weight() const { return frozen_; }
  void set_adapter(std::shared_ptr<DenseAdapter> adapter) { adapter_ = register_module("lora", std::move(adapter)); }
  void remove_adapter() {
    if (adapter_) unregister_module("lora");
    adapter_ = nullptr;
  }
  const std::shared_ptr<DenseAdapter>& adapter() const { return adapter_; }

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without a bias

 private:
  std::shared_ptr<DenseAdapter> adapter_;
  std::shared_ptr<const FrozenWeight> frozen_;
};
TORCH_MODULE(Dense);

class TableImpl : public torch::nn::Module {
 public:
  TableImpl(int64_t num_embeddings, int64_t dim) {
    weight = register_parameter("weight", torch::empty({num_embeddings, dim}));
  }
  torch::Tensor forward(const torch::Tensor& ids) { return torch::embedding(weight, ids); }

  torch::Tensor weight;
};
TORCH_MODULE(Table);

}  // namespace hftrain::model
