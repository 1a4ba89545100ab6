#include "model/checkpointing.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "model/decoder/tensor_parallel.h"
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace hftrain::model {
namespace {

// What the recomputation needs besides the input: the block, and the RNG and autocast state of
// the original forward so that dropout and casts repeat exactly.
struct Replay : torch::CustomClassHolder {
  BlockFnMany fn;
  c10::DeviceType device_type = c10::DeviceType::CPU;
  torch::Tensor cpu_rng;
  torch::Tensor cuda_rng;
  torch::Tensor tp_rng;  // tensor parallelism: this rank's own stream (tensor_parallel.h)
  bool autocast = false;
  at::ScalarType autocast_dtype = at::kBFloat16;
};

at::Generator cpu_generator() { return at::detail::getDefaultCPUGenerator(); }

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                c10::intrusive_ptr<Replay> replay) {
    replay->device_type = x.device().type();
    replay->cpu_rng = cpu_generator().get_state();
#ifdef HFTRAIN_HAVE_CUDA
    if (x.is_cuda()) replay->cuda_rng = at::cuda::detail::getDefaultCUDAGenerator(x.device().index()).get_state();
#endif
    if (tp_rng::active()) replay->tp_rng = tp_rng::state(x.device());
    replay->autocast = at::autocast::is_autocast_enabled(replay->device_type);
    replay->autocast_dtype = at::autocast::get_autocast_dtype(replay->device_type);
    ctx->save_for_backward({x});
    ctx->saved_data["replay"] = c10::IValue::make_capsule(replay);
    torch::NoGradGuard no_grad;
    return replay->fn(x);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    auto replay = c10::static_intrusive_pointer_cast<Replay>(ctx->saved_data["replay"].toCapsule());
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    // Recompute with the forward's RNG and autocast state, then put the current state back.
    auto cpu_now = cpu_generator().get_state();
    cpu_generator().set_state(replay->cpu_rng);
#ifdef HFTRAIN_HAVE_CUDA
    torch::Tensor cuda_now;
    if (replay->cuda_rng.defined()) {
      auto gen = at::cuda::detail::getDefaultCUDAGenerator(x.device().index());
      cuda_now = gen.get_state();
      gen.set_state(replay->cuda_rng);
    }
#endif
    torch::Tensor tp_now;
    if (tp_rng::active()) {
      tp_now = tp_rng::state(x.device());
      tp_rng::set_state(x.device(), replay->tp_rng);
    }
    const bool autocast_now = at::autocast::is_autocast_enabled(replay->device_type);
    const auto dtype_now = at::autocast::get_autocast_dtype(replay->device_type);
    at::autocast::set_autocast_enabled(replay->device_type, replay->autocast);
    at::autocast::set_autocast_dtype(replay->device_type, replay->autocast_dtype);
    std::vector<torch::Tensor> ys;
    {
      torch::AutoGradMode grad_mode(true);
      ys = replay->fn(x);
    }
    at::autocast::set_autocast_enabled(replay->device_type, autocast_now);
    at::autocast::set_autocast_dtype(replay->device_type, dtype_now);
    cpu_generator().set_state(cpu_now);
    if (tp_rng::active()) tp_rng::set_state(x.device(), tp_now);
#ifdef HFTRAIN_HAVE_CUDA
    if (cuda_now.defined()) {
      at::Generator gen = at::cuda::detail::getDefaultCUDAGenerator(x.device().index());  // a handle copy
      gen.set_state(cuda_now);
    }
#endif
    // Parameters receive their gradients here (accumulated into .grad, as in the reentrant
    // torch.utils.checkpoint); x's gradient flows on through the outer graph.
    // Outputs without a gradient (not used downstream) or without a graph (counts) are left out.
    std::vector<torch::Tensor> outputs, grads;
    for (size_t i = 0; i < ys.size(); ++i) {
      if (grad_outputs[i].defined() && ys[i].requires_grad()) {
        outputs.push_back(ys[i]);
        grads.push_back(grad_outputs[i]);
      }
    }
    if (!outputs.empty()) torch::autograd::backward(outputs, grads);
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

std::vector<torch::Tensor> checkpointed(BlockFnMany fn, const torch::Tensor& x) {
  auto replay = c10::make_intrusive<Replay>();
  replay->fn = std::move(fn);
  return CheckpointFunction::apply(x, replay);
}

torch::Tensor checkpointed(BlockFn fn, const torch::Tensor& x) {
  return checkpointed(
      BlockFnMany([fn = std::move(fn)](const torch::Tensor& h) { return std::vector<torch::Tensor>{fn(h)}; }), x)[0];
}

}  // namespace hftrain::model
