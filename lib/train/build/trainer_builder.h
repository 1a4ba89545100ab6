// What a Trainer trains with, built from the config in one fixed order: device settings and
// seed, tokenizer, data (rank 0 tokenizes first, the other ranks then map its token cache), the
// model (its weights from model.from), the sharding strategy that owns the optimizer, then what
// the loop steps through: the master weights, the seam with the parallel layout, the runner of
// forward and backward.
// Bad input throws ConfigError/DataError here, before any training.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "config/config.h"
#include "data/loader.h"
#include "parallel/comm/world.h"
#include "parallel/data_parallel/strategy.h"
#include "parallel/seam/parallelism.h"
#include "tokenizer/tokenizer.h"
#include "train/step/master_weights.h"
#include "train/build/peft_setup.h"
#include "train/step/pipeline_runner.h"
#include "train/step/step_runner.h"
#include "train/task/task_model.h"

namespace hftrain::train {

struct TrainerParts {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  data::Loaders loaders;
  std::unique_ptr<TaskModel> model;
  std::unique_ptr<parallel::ShardingStrategy> strategy;  // owns the optimizer (sharded under zero)
  std::optional<PeftRun> peft;                           // LoRA adapters on a frozen base (peft.*)
  std::unique_ptr<MasterWeights> masters;  // trainer.param_dtype=bf16: fp32 masters of bf16 weights
  std::unique_ptr<parallel::Parallelism> parallel;  // the loop's one seam with the layout
  std::unique_ptr<StepRunner> runner;               // forward and backward: the plain or the pipelined
  PipelineRunner* pipeline = nullptr;               // `runner` under pipeline parallelism (evaluation's)
};

// `resume_from`: the checkpoint that will be restored, so model.from is not read (its weights
// would be replaced, and the directory may be gone by now); a BERT classifier takes its shape
// and labels from the checkpoint instead. A LoRA run (peft.method=lora) reads model.from on a
// resume too: its checkpoints hold only what trains, the frozen base comes from model.from. The
// strategy and its optimizer see only the parameters that train.
TrainerParts build_trainer_parts(const config::Config& config, parallel::World& world, const torch::Device& device,
                                 const std::optional<std::filesystem::path>& resume_from);

// The run's optimizer steps: the least of trainer.max_steps, max_epochs over the training data
// and max_tokens over the global batch (at least 1).
int64_t plan_total_steps(const config::Config& config, const data::DataLoader& train, int world_size);

}  // namespace hftrain::train
