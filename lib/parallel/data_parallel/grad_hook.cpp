#include "parallel/data_parallel/grad_hook.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace hftrain::parallel {

std::shared_ptr<void> after_grad_accumulated(const torch::Tensor& param, std::function<void()> callback) {
  auto node = torch::autograd::impl::grad_accumulator(param);
  node->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
      [callback = std::move(callback)](const torch::autograd::variable_list& outputs,
                                       const torch::autograd::variable_list&) {
        callback();
        return outputs;
      }));
  return node;
}

bool is_grad_accumulator(const torch::Tensor& param, const std::shared_ptr<void>& node) {
  return static_cast<const void*>(torch::autograd::impl::try_get_grad_accumulator(param).get()) == node.get();
}

}  // namespace hftrain::parallel
