#include "dist/grad_hook.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace hftrain::dist {

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

}  // namespace hftrain::dist
