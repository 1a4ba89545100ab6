#include "train/build/pipeline_setup.h"

#include <cmath>
#include <iterator>
#include <map>
#include <string>

#include <fnmatch.h>

#include "model/spec.h"
#include "optim/param_groups.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

void refuse(const std::string& what, const std::string& fix) {
  throw util::ConfigError("distributed.pipeline_parallel: " + what, fix);
}

std::string list(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

}  // namespace

void TaskModel::pipeline_split(const std::vector<int64_t>& /*boundaries*/, int /*stage*/, int /*stages*/) {
  throw util::ConfigError("distributed.pipeline_parallel splits decoders only", "set distributed.pipeline_parallel=1");
}

torch::Tensor TaskModel::stage_forward(const data::Batch& /*batch*/, const torch::Tensor& /*hidden*/,
                                       double /*label_smoothing*/, int /*chunk*/) {
  throw util::ConfigError("distributed.pipeline_parallel splits decoders only", "set distributed.pipeline_parallel=1");
}

void check_pipeline_parallel(const config::Config& config, const model::ModelSpec* decoder) {
  const auto& d = config.distributed;
  const int64_t pp = d.pipeline_parallel;
  const int64_t chunks = d.pipeline_virtual_stages;
  if (pp == 1) {
    if (chunks > 1) {
      throw util::ConfigError("distributed.pipeline_virtual_stages=" + std::to_string(chunks) +
                                  " interleaves pipeline stages, but distributed.pipeline_parallel is 1",
                              "set distributed.pipeline_parallel to 2 or more, or remove "
                              "distributed.pipeline_virtual_stages");
    }
    if (!d.pipeline_stages.empty()) {
      throw util::ConfigError("distributed.pipeline_stages is set but distributed.pipeline_parallel is 1",
                              "set distributed.pipeline_parallel to the number of stages (" +
                                  std::to_string(static_cast<int64_t>(d.pipeline_stages.size()) - 1) +
                                  "), or remove distributed.pipeline_stages");
    }
    return;
  }
  const auto& m = config.model;
  if (m.arch == config::ModelArch::kBert) {
    refuse("encoders are not split into stages (it splits decoders: gpt2, llama and the Hugging Face decoders)",
           "train the encoder with data or tensor parallelism: distributed.pipeline_parallel=1");
  }
  const model::ModelSpec& spec = *decoder;
  const int64_t virtual_stages = pp * chunks;
  if (virtual_stages > spec.n_layer) {
    refuse(std::to_string(pp) + " stages" +
               (chunks > 1 ? " x " + std::to_string(chunks) + " virtual stages (distributed.pipeline_virtual_stages)"
                           : std::string()) +
               " for " + std::to_string(spec.n_layer) +
               " blocks (model.n_layer): every (virtual) stage holds at least one block",
           chunks > 1 ? "set distributed.pipeline_parallel x distributed.pipeline_virtual_stages to at most " +
                            std::to_string(spec.n_layer)
                      : "set distributed.pipeline_parallel to at most " + std::to_string(spec.n_layer));
  }
  if (chunks > 1 && config.trainer.grad_accum_steps % pp != 0) {
    throw util::ConfigError(
        "distributed.pipeline_virtual_stages=" + std::to_string(chunks) + ": the interleaved schedule runs a step's " +
            "micro-batches (trainer.grad_accum_steps=" + std::to_string(config.trainer.grad_accum_steps) +
            ") in groups of distributed.pipeline_parallel=" + std::to_string(pp),
        "set trainer.grad_accum_steps to a multiple of " + std::to_string(pp) +
            ", or distributed.pipeline_virtual_stages=1");
  }
  if (spec.n_experts > 0) {
    refuse("mixture-of-experts layers (model.n_experts) are not split into stages yet (their load-balancing loss "
           "sums over every layer)",
           "set distributed.pipeline_parallel=1");
  }
  if (config.peft.method != config::PeftMethod::kNone) {
    refuse("LoRA adapters (peft.method=lora) are not split into stages yet", "set distributed.pipeline_parallel=1");
  }
  if (!d.pipeline_stages.empty()) {
    const auto& b = d.pipeline_stages;
    const std::string have = "distributed.pipeline_stages has " + std::to_string(b.size()) + " numbers";
    const std::string count = chunks > 1 ? "pipeline_parallel x pipeline_virtual_stages + 1" : "pipeline_parallel + 1";
    const std::string fix = "give " + count + " = " + std::to_string(virtual_stages + 1) +
                            " ascending block indices from 0 to model.n_layer=" + std::to_string(spec.n_layer) +
                            ", e.g. " + list(pipeline_boundaries(
                                [&] {
                                  config::DistributedConfig balanced = d;
                                  balanced.pipeline_stages.clear();
                                  return balanced;
                                }(),
                                spec)) + " (or leave it empty to balance the stages)";
    if (static_cast<int64_t>(b.size()) != virtual_stages + 1) {
      throw util::ConfigError(
          have + ", " + std::to_string(virtual_stages) +
              " stages (distributed.pipeline_parallel=" + std::to_string(pp) +
              (chunks > 1 ? " x pipeline_virtual_stages=" + std::to_string(chunks) : std::string()) + ") need " +
              std::to_string(virtual_stages + 1) + " boundaries",
          fix);
    }
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i] != std::floor(b[i])) {
        throw util::ConfigError("distributed.pipeline_stages[" + std::to_string(i) + "] = " + std::to_string(b[i]) +
                                    " is not a block index",
                                fix);
      }
      if (i > 0 && b[i] <= b[i - 1]) {
        throw util::ConfigError("distributed.pipeline_stages is not ascending at [" + std::to_string(i) +
                                    "]: every stage holds at least one block",
                                fix);
      }
    }
    if (b.front() != 0 || static_cast<int64_t>(b.back()) != spec.n_layer) {
      throw util::ConfigError("distributed.pipeline_stages must run from 0 to model.n_layer=" +
                                  std::to_string(spec.n_layer),
                              fix);
    }
  }
}

std::vector<int64_t> pipeline_boundaries(const config::DistributedConfig& d, const model::ModelSpec& spec) {
  if (!d.pipeline_stages.empty()) {
    std::vector<int64_t> out;
    for (double b : d.pipeline_stages) out.push_back(static_cast<int64_t>(b));
    return out;
  }
  const StageExtras extras = stage_extras(spec);
  std::vector<int64_t> blocks;
  for (int64_t i = 0; i < spec.n_layer; ++i) blocks.push_back(spec.layer_parameter_count(i));
  return parallel::balanced_boundaries(blocks, extras.first, extras.last + extras.copy,
                                       static_cast<int>(d.pipeline_parallel * d.pipeline_virtual_stages));
}

std::string stage_blocks(const std::vector<int64_t>& boundaries, int stage, int stages) {
  std::string out;
  for (size_t v = static_cast<size_t>(stage); v + 1 < boundaries.size(); v += static_cast<size_t>(stages)) {
    out += (out.empty() ? "" : ", ") + std::to_string(boundaries[v]) + "-" + std::to_string(boundaries[v + 1] - 1);
  }
  return out;
}

StageExtras stage_extras(const model::ModelSpec& spec) {
  const int64_t embedding = spec.vocab_size * spec.d_model;
  StageExtras extras;
  extras.first = embedding + (spec.learned_positions() ? spec.max_seq_len * spec.d_model : 0);
  extras.last = std::max<int64_t>(0, spec.root_parameter_count() - extras.first);
  extras.copy = spec.tie_embeddings ? embedding : 0;
  return extras;
}

parallel::PipelineSchedule pipeline_schedule(const config::Config& config) {
  return config.distributed.pipeline_schedule == config::PipelineSchedule::kGpipe ? parallel::PipelineSchedule::kGpipe
                                                                                    : parallel::PipelineSchedule::k1f1b;
}

config::OptimizerConfig stage_optimizer_config(const config::OptimizerConfig& optimizer,
                                               const std::vector<std::string>& whole,
                                               const std::vector<std::string>& stage) {
  (void)optim::group_parameters(whole, optimizer);  // its errors, as one process gives them
  config::OptimizerConfig out = optimizer;
  const auto keep_used = [&](std::map<std::string, double>& globs) {
    for (auto it = globs.begin(); it != globs.end();) {
      bool used = false;
      for (const std::string& name : stage) used = used || ::fnmatch(it->first.c_str(), name.c_str(), 0) == 0;
      it = used ? std::next(it) : globs.erase(it);
    }
  };
  keep_used(out.group_lr);
  keep_used(out.group_weight_decay);
  // muon's matrices by glob: each must name a parameter of the whole model, and this stage must hold
  // one of them (an empty list would mean the stage's hidden matrices).
  std::vector<std::string> muon;
  for (const std::string& glob : optimizer.muon.params) {
    bool anywhere = false, here = false;
    for (const std::string& name : whole) anywhere = anywhere || ::fnmatch(glob.c_str(), name.c_str(), 0) == 0;
    for (const std::string& name : stage) here = here || ::fnmatch(glob.c_str(), name.c_str(), 0) == 0;
    if (!anywhere) {
      throw util::ConfigError("optimizer.muon.params: glob '" + glob + "' matches no trained parameter",
                              "see `hftrain plan` for the parameter names, or remove the glob");
    }
    if (here) muon.push_back(glob);
  }
  if (!optimizer.muon.params.empty() && muon.empty()) {
    throw util::ConfigError("optimizer.muon.params names no parameter of one of the pipeline's stages",
                            "name matrices of every stage's blocks, or leave optimizer.muon.params empty (the hidden "
                            "weight matrices)");
  }
  out.muon.params = std::move(muon);
  return out;
}

void split_pipeline(TaskModel& model, parallel::World& world, const config::Config& config) {
  if (world.pp_size() <= 1) return;
  const std::vector<int64_t> bounds = pipeline_boundaries(config.distributed, *model.decoder_spec());
  model.pipeline_split(bounds, world.pp_rank(), world.pp_size());
  if (world.is_main()) {
    const int pp = world.pp_size();
    const int64_t chunks = config.distributed.pipeline_virtual_stages;
    std::string stages;
    for (int s = 0; s < pp; ++s) {
      stages += (s ? "; " : "") + std::string("stage ") + std::to_string(s) + ": blocks " + stage_blocks(bounds, s, pp);
    }
    util::log::info("pipeline: " + stages + " (" +
                    (config.distributed.pipeline_schedule == config::PipelineSchedule::kGpipe ? "gpipe" : "1f1b") +
                    (chunks > 1 ? " interleaved over " + std::to_string(chunks) + " virtual stages" : std::string()) +
                    " schedule, " + std::to_string(config.trainer.grad_accum_steps) + " micro-batches a step)");
  }
}

}  // namespace hftrain::train
