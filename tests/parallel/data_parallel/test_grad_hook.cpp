// The gradient hook the reducers hang on each parameter's AccumulateGrad node: once per backward
// after every use has been summed, and how set_data to another dtype (or device) drops the node.
#include "../../torch_catch.h"  // first: see the file

#include "parallel/data_parallel/grad_hook.h"

using namespace hftrain;

TEST_CASE("grad hook: once per backward, after every use is summed into the gradient", "[dist]") {
  auto p = torch::ones({3}, torch::requires_grad());
  std::vector<torch::Tensor> seen;
  auto node = parallel::after_grad_accumulated(p, [&] { seen.push_back(p.grad().clone()); });
  ((p * 2).sum() + (p * 3).sum()).backward();  // two uses
  REQUIRE(seen.size() == 1);
  CHECK(torch::equal(seen[0], torch::full({3}, 5.0f)));
  (p * 4).sum().backward();
  REQUIRE(seen.size() == 2);
  CHECK(torch::equal(seen[1], torch::full({3}, 9.0f)));  // accumulated
  CHECK(parallel::is_grad_accumulator(p, node));
}

TEST_CASE("grad hook: set_data to another dtype drops the hooked node, hooking again restores it", "[dist]") {
  auto p = torch::ones({2}, torch::requires_grad());
  int calls = 0;
  auto node = parallel::after_grad_accumulated(p, [&] { ++calls; });
  const torch::Tensor original = p.data();
  {
    torch::NoGradGuard no_grad;
    p.set_data(torch::ones({2}, torch::kFloat64));
  }
  CHECK_FALSE(parallel::is_grad_accumulator(p, node));
  {
    torch::NoGradGuard no_grad;
    p.set_data(original);
  }
  (p * 2).sum().backward();
  CHECK(calls == 0);  // a new node, without the hook
  node = parallel::after_grad_accumulated(p, [&] { ++calls; });
  CHECK(parallel::is_grad_accumulator(p, node));
  (p * 2).sum().backward();
  CHECK(calls == 1);
  // The same dtype and device keep the node (and hooking twice would call twice).
  {
    torch::NoGradGuard no_grad;
    p.set_data(original.clone());
  }
  CHECK(parallel::is_grad_accumulator(p, node));
}
