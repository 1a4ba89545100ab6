// trainer.param_dtype=bf16 (train/step/master_weights.h): bf16 weights and gradients, fp32 masters that
// the optimizer steps, fp32 accumulation over micro-batches, the masters in saves and loads.
#include "../torch_catch.h"  // first: see the file

#include "../config/helpers.h"
#include "model/weights/safetensors.h"
#include "train/step/master_weights.h"
#include "train/trainer.h"

using namespace hftrain;

namespace {

torch::Tensor param(std::vector<double> values) {
  return torch::tensor(values, torch::kFloat64).to(torch::kFloat32).set_requires_grad(true);
}

}  // namespace

TEST_CASE("master weights: bf16 in the parameters, fp32 for the update", "[train][master_weights]") {
  // 1 + 2^-10 is not a bf16 value: its copy rounds to 1, its master keeps it.
  torch::Tensor w = param({1.0 + 1.0 / 1024, -3.0});
  torch::Tensor frozen = torch::ones({2}, torch::kFloat32);
  train::MasterWeights masters({w}, {frozen});
  CHECK(w.scalar_type() == torch::kBFloat16);
  CHECK(frozen.scalar_type() == torch::kBFloat16);
  CHECK(w[0].item<double>() == 1.0);
  CHECK(masters.numel() == 2);

  // Two micro-batches: the first's bf16 gradient goes into the fp32 accumulator.
  (w.to(torch::kFloat32) * torch::tensor({1.0f, 2.0f})).sum().backward();
  CHECK(w.grad().scalar_type() == torch::kBFloat16);
  masters.accumulate();
  CHECK_FALSE(w.grad().defined());
  (w.to(torch::kFloat32) * torch::tensor({0.5f, 0.25f})).sum().backward();
  masters.to_masters();
  REQUIRE(masters.holds_masters());
  CHECK(w.scalar_type() == torch::kFloat32);
  CHECK(w[0].item<double>() == 1.0 + 1.0 / 1024);  // the master, exact
  CHECK(w.grad().scalar_type() == torch::kFloat32);
  CHECK(torch::equal(w.grad(), torch::tensor({1.5f, 2.25f})));

  // The update lands in the master; the copy is rounded from it.
  {
    torch::NoGradGuard no_grad;
    w.add_(torch::tensor({7.0f / 1024, 0.0f}));
  }
  w.mutable_grad() = torch::Tensor();
  masters.to_bf16();
  CHECK(w.scalar_type() == torch::kBFloat16);
  CHECK(w[0].item<double>() == 1.0 + 1.0 / 128);  // 1 + 8/1024, a bf16 value (8 significant bits)
  // A save or a load sees the master; a load into it refreshes the copy on leaving.
  {
    train::MasterWeights::Scope scope(&masters);
    CHECK(w.scalar_type() == torch::kFloat32);
    CHECK(w[0].item<double>() == 1.0 + 8.0 / 1024);
    {
      train::MasterWeights::Scope nested(&masters);  // nests: leaves the outer scope's masters in place
    }
    CHECK(w.scalar_type() == torch::kFloat32);
    torch::NoGradGuard no_grad;
    w.copy_(torch::tensor({2.0f, 4.0f}));
  }
  CHECK(w.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(w.to(torch::kFloat32), torch::tensor({2.0f, 4.0f})));
  train::MasterWeights::Scope none(nullptr);  // without masters: nothing to do
}

TEST_CASE("master weights: a tied weight listed twice is kept once", "[train][master_weights]") {
  torch::Tensor w = param({0.5, 0.25});
  train::MasterWeights masters({w, w}, {});
  CHECK(masters.numel() == 2);
  CHECK(w.scalar_type() == torch::kBFloat16);
}

namespace {

std::vector<std::string> tiny_run(const test::TempDir& d, const std::string& run, const std::string& arch) {
  std::string text;
  for (int i = 0; i < 120; ++i) text += "the cat sat on the mat, said cookie " + std::to_string(i) + ".\n";
  const auto corpus = d.write("corpus.txt", text);
  std::vector<std::string> o = {"data.train=" + corpus.string(), "data.cache=false", "data.seq_len=32",
                                "model.max_seq_len=32", "model.vocab_size=260", "model.n_layer=2", "model.n_head=2",
                                "model.d_model=32", "tokenizer.type=byte", "optimizer.lr=0.003",
                                "scheduler.name=constant", "trainer.micro_batch_size=4", "trainer.grad_accum_steps=2",
                                "trainer.max_steps=40", "trainer.log_every=10", "checkpoint.every_steps=0",
                                "checkpoint.at_end=true", "trainer.device=cpu", "trainer.precision=bf16",
                                "model.arch=" + arch, "run.output_dir=" + (d.path() / run).string()};
  if (arch == "llama") o.push_back("model.n_kv_head=1");
  return o;
}

}  // namespace

TEST_CASE("param_dtype=bf16 trains GPT-2 and Llama shapes to the fp32 loss on the CPU",
          "[train][master_weights][slow]") {
  for (const char* arch : {"gpt2", "llama"}) {
    INFO(arch);
    test::TempDir d;
    const auto fp32_cfg = test::resolve("{}", tiny_run(d, "fp32", arch)).values;
    train::Trainer reference(fp32_cfg, fp32_cfg.run.output_dir);
    const double fp32_loss = reference.train().last_loss;

    auto o = tiny_run(d, "bf16", arch);
    o.push_back("trainer.param_dtype=bf16");
    const auto cfg = test::resolve("{}", o).values;
    train::Trainer bf16(cfg, cfg.run.output_dir);
    for (const auto& [name, p] : bf16.model().parameters_by_name()) {
      INFO(name);
      CHECK(p.scalar_type() == torch::kBFloat16);
    }
    const train::TrainResult r = bf16.train();
    CHECK(r.state.step == 40);
    INFO("fp32 loss " << fp32_loss << ", bf16 weights " << r.last_loss);
    CHECK(std::abs(r.last_loss - fp32_loss) < 0.05 * fp32_loss);
    // The checkpoint holds the fp32 masters (not all of which are bf16 values), and the trainer's
    // evaluation-time weights are their bf16 copies.
    const auto saved = model::read_safetensors(cfg.run.output_dir + "/checkpoint-40/model.safetensors");
    bool beyond_bf16 = false;
    for (const auto& [name, t] : saved) {
      CHECK(t.scalar_type() == torch::kFloat32);
      beyond_bf16 = beyond_bf16 || !torch::equal(t, t.to(torch::kBFloat16).to(torch::kFloat32));
    }
    CHECK(beyond_bf16);
    // ... and resumes under param_dtype=fp32: its weights are the masters.
    auto again_run = tiny_run(d, "again", arch);
    again_run.push_back("trainer.max_steps=80");
    const auto fp32_resume = test::resolve("{}", again_run).values;
    train::Trainer again(fp32_resume, fp32_resume.run.output_dir);
    again.restore(cfg.run.output_dir + "/checkpoint-40");
    const auto params = again.model().parameters_by_name();
    for (const auto& [name, t] : saved) {
      for (const auto& [pname, p] : params) {
        if (pname == name) CHECK(torch::equal(p.detach(), t));
      }
    }
  }
}

TEST_CASE("param_dtype=bf16 with LoRA: a bf16 frozen base, adapters with masters, resumed bit for bit",
          "[train][master_weights][slow]") {
  test::TempDir d;
  // The base: a tiny Llama trained for a few steps and saved as a model directory.
  auto base_run = tiny_run(d, "base", "llama");
  base_run.push_back("trainer.max_steps=5");
  const auto base_cfg = test::resolve("{}", base_run).values;
  train::Trainer base(base_cfg, base_cfg.run.output_dir);
  base.train();
  const std::string base_dir = (d.path() / "base-model").string();
  base.save_model(base_dir);

  const auto lora = [&](const std::string& run, const std::string& dtype, int64_t steps) {
    auto o = tiny_run(d, run, "llama");
    o.insert(o.end(), {"model.from=" + base_dir, "peft.method=lora", "peft.lora.r=4", "peft.lora.alpha=8",
                       "trainer.param_dtype=" + dtype, "trainer.max_steps=" + std::to_string(steps),
                       "checkpoint.every_steps=10"});
    return test::resolve("{}", o).values;
  };
  const auto fp32_cfg = lora("lora-fp32", "fp32", 20);
  train::Trainer fp32(fp32_cfg, fp32_cfg.run.output_dir);
  const double fp32_loss = fp32.train().last_loss;

  const auto cfg = lora("lora-bf16", "bf16", 20);
  train::Trainer bf16(cfg, cfg.run.output_dir);
  int64_t frozen = 0, trained = 0;
  for (const auto& [name, p] : bf16.model().parameters_by_name()) {
    INFO(name);
    if (torch::isFloatingType(p.scalar_type())) CHECK(p.scalar_type() == torch::kBFloat16);
    (p.requires_grad() ? trained : frozen) += p.numel();
  }
  CHECK(trained > 0);
  CHECK(frozen > trained);
  const train::TrainResult r = bf16.train();
  INFO("fp32 loss " << fp32_loss << ", bf16 " << r.last_loss);
  CHECK(std::abs(r.last_loss - fp32_loss) < 0.05 * fp32_loss);
  // From checkpoint-10 to step 20 again: the adapters of the two runs are equal bit for bit.
  const auto again_cfg = lora("lora-again", "bf16", 20);
  train::Trainer again(again_cfg, again_cfg.run.output_dir);
  again.restore(cfg.run.output_dir + "/checkpoint-10");
  again.train();
  const auto a = model::read_safetensors(cfg.run.output_dir + "/checkpoint-20/adapter_model.safetensors");
  const auto b = model::read_safetensors(again_cfg.run.output_dir + "/checkpoint-20/adapter_model.safetensors");
  REQUIRE(a.size() == b.size());
  REQUIRE_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].second.scalar_type() == torch::kFloat32);  // the masters
    CHECK(torch::equal(a[i].second, b[i].second));
  }
}

TEST_CASE("param_dtype=bf16 refuses what it does not support, naming the key", "[train][master_weights]") {
  const std::string fp32 = test::resolve_error("{}", {"trainer.param_dtype=bf16"});
  CHECK_THAT(
      fp32, Catch::Matchers::Contains("trainer.param_dtype") && Catch::Matchers::Contains("trainer.precision is fp32"));
  const std::string zero = test::resolve_error("{}", {"trainer.param_dtype=bf16", "trainer.precision=bf16",
                                                      "distributed.strategy=zero3"});
  CHECK_THAT(zero, Catch::Matchers::Contains("distributed.strategy zero3"));
  const std::string tp = test::resolve_error("{}", {"trainer.param_dtype=bf16", "trainer.precision=bf16",
                                                    "distributed.tensor_parallel=2"});
  CHECK_THAT(tp, Catch::Matchers::Contains("tensor or pipeline parallelism"));
}
