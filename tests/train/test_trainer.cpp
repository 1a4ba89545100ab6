#include "../torch_catch.h"  // first: see the file

#include <fstream>

#include "../config/helpers.h"
#include "model/weights/saved_model.h"
#include "train/trainer.h"
#include "util/fs.h"

using namespace hftrain;

namespace {

// Eight documents of very different lengths: with padding and masks, a naive mean of
// per-micro-batch losses would weight their tokens differently.
std::filesystem::path write_docs(const test::TempDir& d) {
  std::string jsonl;
  const char* texts[] = {"a", "hello there, general", "xy", "the quick brown fox jumps over the lazy dog",
                         "tiny", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "mid length text", "q"};
  for (const char* t : texts) jsonl += std::string("{\"text\": \"") + t + "\"}\n";
  return d.write("docs.jsonl", jsonl);
}

std::vector<std::string> base_overrides(const test::TempDir& d, const std::filesystem::path& docs) {
  return {"data.train=" + docs.string(), "data.packing=pad", "data.shuffle=false", "data.cache=false",
          "data.seq_len=48", "model.max_seq_len=64", "model.vocab_size=260", "model.n_layer=2", "model.n_head=2",
          "model.d_model=32", "tokenizer.type=byte", "optimizer.lr=0.01", "scheduler.name=constant",
          "run.output_dir=" + (d.path() / "run").string(), "trainer.log_every=1"};
}

std::vector<torch::Tensor> train_and_get_params(std::vector<std::string> overrides) {
  auto cfg = test::resolve("{}", overrides).values;
  train::Trainer trainer(cfg, cfg.run.output_dir);
  trainer.train();
  std::vector<torch::Tensor> out;
  for (auto& [name, p] : trainer.model().parameters_by_name()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("micro_batch 8 x accum 1 equals micro_batch 2 x accum 4 with uneven lengths", "[train][slow]") {
  test::TempDir d;
  auto docs = write_docs(d);
  auto o = base_overrides(d, docs);
  // SGD: its update is linear in the gradient, so differences show fp32 rounding and nothing else.
  auto one = o, four = o;
  for (auto* v : {&one, &four}) v->insert(v->end(), {"trainer.max_steps=2", "optimizer.name=sgd", "optimizer.lr=0.5"});
  one.insert(one.end(), {"trainer.micro_batch_size=8", "trainer.grad_accum_steps=1"});
  four.insert(four.end(), {"trainer.micro_batch_size=2", "trainer.grad_accum_steps=4"});
  auto a = train_and_get_params(one);
  auto b = train_and_get_params(four);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter " << i << " max abs diff " << (a[i] - b[i]).abs().max().item<float>());
    CHECK(torch::allclose(a[i], b[i], 1e-5, 1e-6));
  }
}

TEST_CASE("training lowers the loss and writes metrics", "[train][slow]") {
  test::TempDir d;
  auto docs = write_docs(d);
  auto o = base_overrides(d, docs);
  o.insert(o.end(), {"trainer.max_steps=40", "trainer.micro_batch_size=4", "trainer.log_every=10",
                     "data.validation=" + docs.string(), "trainer.eval_every=20"});
  auto cfg = test::resolve("{}", o).values;
  train::Trainer trainer(cfg, cfg.run.output_dir);
  const double before = trainer.evaluate();
  auto result = trainer.train();
  CHECK(result.state.step == 40);
  REQUIRE(result.state.best_eval_loss);
  CHECK(*result.state.best_eval_loss < before * 0.7);
  const std::string jsonl = util::read_file<util::IoError>(d.path() / "run" / "metrics.jsonl", "metrics");
  for (const char* field :
       {"\"step\"", "\"epoch\"", "\"loss\"", "\"lr\"", "\"grad_norm\"", "\"tokens_seen\"", "\"tokens_per_s\"",
        "\"step_time_ms\"", "\"data_wait_ms\"", "\"peak_mem_mb\"", "\"eval_loss\"", "\"eval_ppl\""}) {
    CHECK_THAT(jsonl, Catch::Matchers::Contains(field));
  }
}

TEST_CASE("model.from starts from a saved model's weights", "[train][slow]") {
  test::TempDir d;
  auto docs = write_docs(d);
  auto o = base_overrides(d, docs);
  o.insert(o.end(), {"trainer.max_steps=10", "data.validation=" + docs.string()});
  auto cfg = test::resolve("{}", o).values;
  train::Trainer first(cfg, cfg.run.output_dir);
  first.train();
  const double trained = first.evaluate();
  first.model().save_dir(d.path() / "model", tokenizer::TokenizerKind::kByte, first.tokenizer());
  o.push_back("model.from=" + (d.path() / "model").string());
  auto cfg2 = test::resolve("{}", o).values;
  train::Trainer second(cfg2, cfg2.run.output_dir);
  CHECK(second.evaluate() == Approx(trained).epsilon(1e-6));
  o.push_back("model.n_layer=3");
  auto cfg3 = test::resolve("{}", o).values;
  CHECK_THROWS_WITH(train::Trainer(cfg3, cfg3.run.output_dir), Catch::Matchers::Contains("different shape"));
}

TEST_CASE("training stops by max_steps, max_epochs or a token budget, whichever comes first", "[train]") {
  test::TempDir d;
  auto o = base_overrides(d, write_docs(d));  // pad mode: 8 documents -> 8 samples
  o.push_back("trainer.micro_batch_size=2");
  auto plan = [&](std::vector<std::string> extra) {
    auto all = o;
    all.insert(all.end(), extra.begin(), extra.end());
    auto cfg = test::resolve("{}", all).values;
    return train::Trainer(cfg, cfg.run.output_dir).total_steps();
  };
  CHECK(plan({"trainer.max_steps=7"}) == 7);
  CHECK(plan({"trainer.max_epochs=3"}) == 12);                          // 4 batches per epoch
  CHECK(plan({"trainer.max_epochs=3", "trainer.grad_accum_steps=2"}) == 6);
  CHECK(plan({"trainer.max_tokens=960"}) == 10);                        // 2 x 48 tokens per step
  CHECK(plan({"trainer.max_tokens=1K", "trainer.max_steps=3"}) == 3);
}

TEST_CASE("bf16 autocast trains on the CPU", "[train][slow]") {
  test::TempDir d;
  auto docs = write_docs(d);
  auto o = base_overrides(d, docs);
  o.insert(o.end(), {"trainer.precision=bf16", "trainer.max_steps=30", "trainer.micro_batch_size=4",
                     "data.validation=" + docs.string()});
  auto cfg = test::resolve("{}", o).values;
  train::Trainer trainer(cfg, cfg.run.output_dir);
  const double before = trainer.evaluate();
  trainer.train();
  CHECK(trainer.evaluate() < before * 0.8);
  auto fp16 = o;
  fp16.push_back("trainer.precision=fp16");
  auto cfg16 = test::resolve("{}", fp16).values;
  if (!torch::cuda::is_available()) {
    CHECK_THROWS_WITH(train::Trainer(cfg16, cfg16.run.output_dir),
                      Catch::Matchers::Contains("fp16 needs a CUDA device"));
  }
}

TEST_CASE("a vocabulary larger than the model's is a config error", "[train]") {
  test::TempDir d;
  auto o = base_overrides(d, write_docs(d));
  o.push_back("model.vocab_size=100");
  o.push_back("trainer.max_steps=1");
  auto cfg = test::resolve("{}", o).values;
  CHECK_THROWS_WITH(train::Trainer(cfg, cfg.run.output_dir),
                    Catch::Matchers::Contains("model.vocab_size (100) is smaller than the tokenizer's vocabulary"));
}

TEST_CASE("zero3 with cpu_offload in one process trains like a plain run, micro-batches and checkpointing too",
          "[train][slow]") {
  // A world of one still goes through the parameter sharding when cpu_offload asks for it: the
  // units are gathered before each block, freed after it, gathered again for its backward (and its
  // recomputation), and the update runs on the CPU masters.
  test::TempDir d;
  auto docs = write_docs(d);
  auto o = base_overrides(d, docs);
  // SGD with momentum: linear in the gradients, so differences show rounding alone (Adam would
  // turn the rounding noise of the key bias, whose exact gradient is 0, into visible updates).
  o.insert(o.end(), {"trainer.max_steps=3", "trainer.micro_batch_size=4", "trainer.grad_accum_steps=2",
                     "optimizer.name=sgd", "optimizer.momentum=0.9", "optimizer.lr=0.5"});
  auto weights_after = [&](std::vector<std::string> overrides, const std::string& name) {
    overrides.push_back("run.output_dir=" + (d.path() / name).string());
    auto cfg = test::resolve("{}", overrides).values;
    train::Trainer trainer(cfg, cfg.run.output_dir);
    trainer.train();
    CHECK(trainer.strategy().name() == (name == "plain" ? "single" : "zero3"));
    trainer.save_model(d.path() / name / "final");  // gathers the shards first
    return model::load_model_dir(d.path() / name / "final");
  };
  auto plain = weights_after(o, "plain");
  auto sharded = o;
  sharded.insert(sharded.end(), {"distributed.strategy=zero3", "distributed.cpu_offload=true",
                                 "model.activation_checkpointing=true"});
  auto zero3 = weights_after(sharded, "zero3");
  auto a = plain.model->parameters_by_name(), b = zero3.model->parameters_by_name();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first << " max abs diff " << (a[i].second - b[i].second).abs().max().item<float>());
    CHECK(torch::allclose(a[i].second, b[i].second, 1e-5, 1e-6));
  }
}

// Evaluation reads the validation split through the same packing as training: with
// data.document_mask each packed row keeps its documents apart, so the mean validation loss equals
// the one over the same documents each alone (pad mode: one document per row).
TEST_CASE("evaluation over packed validation data with document masks equals its documents alone",
          "[train][packing]") {
  test::TempDir d;
  // Rows of seq_len 32 tokens hold two documents each (byte tokenizer: one token per character,
  // plus the end-of-text token), so every row starts at a document start and no document is cut.
  // Packing needs seq_len + 1 tokens per row, so the last row's pair is never evaluated there.
  constexpr int kSeqLen = 32;
  const int firsts[] = {5, 12, 20, 27, 9, 16};
  std::vector<std::string> texts;
  for (size_t r = 0; r < std::size(firsts); ++r) {
    for (const int tokens : {firsts[r], kSeqLen - firsts[r]}) {
      std::string t;
      for (int i = 0; i + 1 < tokens; ++i) t += static_cast<char>('a' + (i * 7 + static_cast<int>(r) * 3) % 26);
      texts.push_back(t);
    }
  }
  auto write = [&](const std::string& name, size_t count) {
    std::string jsonl;
    for (size_t i = 0; i < count; ++i) jsonl += "{\"text\": \"" + texts[i] + "\"}\n";
    return d.write(name, jsonl);
  };
  const auto all = write("all.jsonl", texts.size());
  const auto evaluated = write("evaluated.jsonl", texts.size() - 2);
  auto eval_loss = [&](std::vector<std::string> extra) {
    auto o = base_overrides(d, all);
    o.insert(o.end(), {"data.seq_len=" + std::to_string(kSeqLen), "trainer.micro_batch_size=2", "run.seed=5",
                       "trainer.max_steps=1"});
    o.insert(o.end(), extra.begin(), extra.end());
    auto cfg = test::resolve("{}", o).values;
    train::Trainer trainer(cfg, cfg.run.output_dir);
    return trainer.evaluate();
  };
  const double packed = eval_loss({"data.packing=pack", "data.document_mask=true", "data.validation=" + all.string()});
  const double alone = eval_loss({"data.packing=pad", "data.validation=" + evaluated.string()});
  CHECK(packed == Approx(alone).epsilon(1e-5));
  // Without the masks the rows attend (and predict) across the documents: the check has teeth.
  const double leaky = eval_loss({"data.packing=pack", "data.document_mask=false", "data.validation=" + all.string()});
  CHECK(std::abs(leaky - alone) > 1e-3);
}

// schedule_free_adamw trains at one point (y) and is evaluated and kept at another (x): the
// trainer switches before evaluating and saving, and back before the next step.
TEST_CASE("schedule_free_adamw: evaluation and the saved model use the same averaged weights", "[train][slow]") {
  test::TempDir d;
  auto docs = write_docs(d);
  auto o = base_overrides(d, docs);
  o.insert(o.end(), {"optimizer.name=schedule_free_adamw", "scheduler.name=constant", "optimizer.lr=0.01",
                     "optimizer.schedule_free.warmup_steps=3", "trainer.max_steps=12", "trainer.micro_batch_size=4",
                     "data.validation=" + docs.string(), "trainer.eval_every=4"});
  auto cfg = test::resolve("{}", o).values;
  train::Trainer trainer(cfg, cfg.run.output_dir);
  const double before = trainer.evaluate();
  trainer.train();
  const double after = trainer.evaluate();
  CHECK(after < before * 0.8);
  CHECK(trainer.evaluate() == after);  // already at the averaged point: no second switch
  trainer.save_model(d.path() / "kept");
  auto from = base_overrides(d, docs);
  from.insert(from.end(), {"model.from=" + (d.path() / "kept").string(), "trainer.max_steps=1",
                           "trainer.micro_batch_size=4", "data.validation=" + docs.string()});
  auto cfg2 = test::resolve("{}", from).values;
  CHECK(train::Trainer(cfg2, cfg2.run.output_dir).evaluate() == Approx(after).epsilon(1e-12));

  // A schedule on top of it is refused, naming the key.
  o.push_back("scheduler.name=cosine");
  CHECK_THROWS_WITH(test::resolve("{}", o), Catch::Matchers::Contains("scheduler.name"));
}
