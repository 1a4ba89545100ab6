// A training step on CUDA with the default settings never waits for the device: CUDA's
// synchronisation debugging (torch.cuda.set_sync_debug_mode("error") in Python) is switched on
// from the end of step 2 to the end of step 6 and any synchronising call in between throws, naming
// itself. Logging steps (which read the metrics) lie outside that range. Skips without a GPU.
#include "../torch_catch.h"  // first: see the file

#include "../config/helpers.h"
#include "train/trainer.h"

#ifdef HFTRAIN_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

using namespace hftrain;

namespace {

#ifdef HFTRAIN_HAVE_CUDA
class SyncWatch : public train::Callback {
 public:
  void on_step_end(train::TrainState& s) override {
    if (s.step == 2) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    if (s.step == 6) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
  ~SyncWatch() override { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED); }
};

// `jsonl`: documents as JSONL records, which pack with document masks by default (the attention
// then runs variable-length over the documents' starts, which the loader finds on the host).
void train_without_syncs(const std::vector<std::string>& shape, bool jsonl = false) {
  test::TempDir d;
  std::string text;
  for (int i = 0; i < 200; ++i) {
    const std::string line = "the quick brown fox jumps over the lazy dog, number " + std::to_string(i) + ".";
    text += jsonl ? "{\"text\": \"" + line + "\"}\n" : line + "\n";
  }
  const auto corpus = d.write(jsonl ? "corpus.jsonl" : "corpus.txt", text);
  std::vector<std::string> o = {"data.train=" + corpus.string(), "data.cache=false", "data.seq_len=64",
                                "model.max_seq_len=64", "model.vocab_size=260", "tokenizer.type=byte",
                                "trainer.device=cuda", "trainer.precision=bf16", "trainer.micro_batch_size=4",
                                "trainer.grad_accum_steps=2", "trainer.max_steps=8", "trainer.log_every=8",
                                "trainer.eval_every=0", "checkpoint.every_steps=0", "checkpoint.at_end=false",
                                "run.output_dir=" + (d.path() / "run").string()};
  o.insert(o.end(), shape.begin(), shape.end());
  const auto cfg = test::resolve("{}", o).values;
  train::Trainer trainer(cfg, cfg.run.output_dir);
  trainer.add_callback(std::make_shared<SyncWatch>());
  try {
    trainer.train();
  } catch (const c10::Error& e) {
    FAIL("a synchronisation inside a training step: " << e.what_without_backtrace());
  }
  CHECK(trainer.state().step == 8);
}
#endif

}  // namespace

TEST_CASE("a training step on CUDA does not synchronise with the host", "[train][gpu][sync]") {
#ifdef HFTRAIN_HAVE_CUDA
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  SECTION("gpt2") {
    train_without_syncs({"model.arch=gpt2", "model.n_layer=2", "model.n_head=2", "model.d_model=64"});
  }
  SECTION("gpt2, bf16 weights with fp32 masters") {
    train_without_syncs({"model.arch=gpt2", "model.n_layer=2", "model.n_head=2", "model.d_model=64",
                         "trainer.param_dtype=bf16"});
  }
  SECTION("llama, packed JSONL documents with document masks") {
    train_without_syncs({"model.arch=llama", "model.n_layer=2", "model.n_head=4", "model.n_kv_head=2",
                         "model.d_model=64"}, /*jsonl=*/true);
  }
  SECTION("llama") {
    train_without_syncs({"model.arch=llama", "model.n_layer=2", "model.n_head=4", "model.n_kv_head=2",
                         "model.d_model=64"});
  }
#else
  WARN("LibTorch without CUDA; skipped");
#endif
}
