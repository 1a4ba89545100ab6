// The ZeRO accounting of `hftrain plan` and the memory report (parallel/plan/memory_plan.h): fp32
// weights with autocast, and trainer.param_dtype=bf16 (bf16 weights and gradients, fp32 masters
// counted with the optimizer state: 2 + 2 + 4 + K bytes a parameter under ddp).
#include "../../torch_catch.h"  // first: see the file

#include "../../config/helpers.h"
#include "parallel/plan/memory_plan.h"

using namespace hftrain;

TEST_CASE("memory plan: bytes per rank for fp32 weights and for bf16 weights with masters", "[parallel][plan]") {
  const auto cfg = test::resolve(test::kMinimal, {"optimizer.name=adamw"}).values;
  const int64_t psi = 1000;
  const int n = 4;
  using config::Strategy;
  struct Row {
    Strategy s;
    bool bf16;
    double params, grads, state;
    const char* formula;
  };
  const std::vector<Row> rows = {
      {Strategy::kDdp, false, 4000, 4000, 8000, "4Ψ + 4Ψ + 8Ψ"},
      {Strategy::kZero1, false, 4000, 4000, 2000, "4Ψ + 4Ψ + 8Ψ/N"},
      {Strategy::kZero2, false, 4000, 1000, 2000, "4Ψ + (4 + 8)Ψ/N"},
      {Strategy::kZero3, false, 1000, 1000, 2000, "(8 + 8)Ψ/N"},
      {Strategy::kDdp, true, 2000, 2000, 12000, "2Ψ + 2Ψ + (4 + 8)Ψ"},
      {Strategy::kZero1, true, 2000, 2000, 3000, "2Ψ + 2Ψ + (4 + 8)Ψ/N"},
      {Strategy::kZero2, true, 2000, 500, 3000, "2Ψ + (2 + 4 + 8)Ψ/N"},
      {Strategy::kZero3, true, 500, 500, 3000, "(2 + 2 + 4 + 8)Ψ/N"},
  };
  for (const Row& r : rows) {
    INFO(parallel::strategy_name(r.s) << (r.bf16 ? " bf16" : " fp32"));
    const parallel::MemoryEstimate e =
        parallel::estimate_memory(r.s, psi, n, cfg.optimizer, int64_t{1} << 20, {}, r.bf16);
    CHECK(e.parameters == r.params);
    CHECK(e.gradients == r.grads);
    CHECK(e.optimizer_state == r.state);
    CHECK(e.formula == r.formula);
  }
  // ddp with bf16 weights holds 16 bytes a parameter in all (2 + 2 + 4 + 8).
  CHECK(parallel::estimate_memory(Strategy::kDdp, psi, 1, cfg.optimizer, 1 << 20, {}, true).total() == 16 * psi);
  const std::string table = parallel::memory_table(psi, n, cfg.optimizer, 1 << 20, {}, 0, true);
  CHECK_THAT(table, Catch::Matchers::Contains("per rank (bf16+master)"));
}
