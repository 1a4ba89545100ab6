#include "train/build/tp_setup.h"

#include <string>

#include "model/spec.h"
#include "parallel/tensor/tp_group.h"
#include "train/build/wiring.h"
#include "util/error.h"

namespace hftrain::train {
namespace {

std::string divisors_of(int64_t n) {
  std::string out;
  for (int64_t d = 2; d <= n; ++d) {
    if (n % d == 0) out += (out.empty() ? "" : ", ") + std::to_string(d);
  }
  return out.empty() ? "none above 1" : out;
}

void refuse(const std::string& what, const std::string& fix) {
  throw util::ConfigError("distributed.tensor_parallel: " + what, fix);
}

void check_divides(const std::string& key, int64_t value, int64_t tp, const std::string& why) {
  if (value % tp == 0) return;
  refuse(key + "=" + std::to_string(value) + " does not divide by distributed.tensor_parallel=" + std::to_string(tp) +
             " (" + why + ")",
         "set distributed.tensor_parallel to a divisor of " + std::to_string(value) + " (" + divisors_of(value) + ")");
}

// Why an optimizer's state needs whole weight matrices.
std::string whole_matrix_state(config::OptimizerName name) {
  switch (name) {
    case config::OptimizerName::kAdafactor: return "adafactor factors whole weight matrices";
    case config::OptimizerName::kMuon: return "muon orthogonalises whole weight matrices";
    case config::OptimizerName::kApolloAdamW: return "apollo_adamw projects each whole weight matrix's gradient";
    default: return "galore_adamw projects each whole weight matrix's gradient";
  }
}

// What every model needs: an optimizer with element-wise state, no adapters.
void check_common(const config::Config& config) {
  switch (config.optimizer.name) {
    case config::OptimizerName::kAdafactor:
    case config::OptimizerName::kGaloreAdamW:
    case config::OptimizerName::kMuon:
    case config::OptimizerName::kApolloAdamW:
      refuse("optimizer.name=" + whole_matrix_state(config.optimizer.name) + ", and each rank holds pieces of them",
             "use an optimizer with element-wise state (adamw, sgd, lion, adagrad, rmsprop, schedule_free_adamw)");
      break;
    case config::OptimizerName::kAdamW8bit:
      refuse("optimizer.name=adamw_8bit quantizes blocks of each whole flattened parameter, and each rank holds "
             "pieces of them",
             "use optimizer.name=adamw");
      break;
    default: break;
  }
  if (config.peft.method != config::PeftMethod::kNone) {
    refuse("LoRA adapters (peft.method=lora) are not split yet", "set distributed.tensor_parallel=1");
  }
}

}  // namespace

void TaskModel::tensor_parallelize(std::shared_ptr<model::TpGroup> /*group*/) {
  throw util::ConfigError("distributed.tensor_parallel splits decoders and BERT-style encoders only",
                          "set distributed.tensor_parallel=1");
}

void check_tensor_parallel(const config::Config& config, const model::ModelSpec* decoder) {
  const auto& d = config.distributed;
  const int64_t tp = d.tensor_parallel;
  if (d.sequence_parallel && tp == 1) {
    throw util::ConfigError("distributed.sequence_parallel needs distributed.tensor_parallel > 1 (it splits the "
                            "sequence over the tensor-parallel group)",
                            "set distributed.tensor_parallel=2 or more, or distributed.sequence_parallel=false");
  }
  if (tp == 1) return;
  const auto& m = config.model;
  if (m.arch == config::ModelArch::kBert) {
    if (d.sequence_parallel) {
      refuse("distributed.sequence_parallel splits the decoders' sequence; BERT encoders split their layers only",
             "set distributed.sequence_parallel=false");
    }
    check_common(config);  // the encoder's shape is checked once it is read (check_encoder_tensor_parallel)
    return;
  }
  const model::ModelSpec& spec = *decoder;
  check_divides("model.n_head", spec.n_head, tp, "each rank computes whole heads");
  check_divides("model.n_kv_head", spec.n_kv_head, tp, "each rank holds the key/value heads of its query heads");
  check_divides("model.d_ff", spec.d_ff, tp, "each rank computes d_ff / tensor_parallel hidden units");
  if (spec.vocab_size < tp) {
    refuse("the vocabulary (" + std::to_string(spec.vocab_size) + ") has fewer rows than ranks",
           "set distributed.tensor_parallel to at most model.vocab_size");
  }
  if (spec.n_experts > 0) {
    check_divides("the experts' d_ff (model.expert_d_ff)", spec.expert_d_ff, tp,
                  "each rank computes expert_d_ff / tensor_parallel hidden units of every expert");
    if (spec.shared_expert_d_ff > 0) {
      check_divides("model.shared_expert_d_ff", spec.shared_expert_d_ff, tp,
                    "each rank computes its part of the shared expert's hidden units");
    }
  }
  check_common(config);
  if (d.sequence_parallel && config.data.packing == config::Packing::kPad && config.data.pad_to_multiple_of % tp != 0) {
    refuse("with distributed.sequence_parallel each rank holds 1 / tensor_parallel of every batch's positions, and "
           "data.packing=pad pads a batch to its longest row rounded to data.pad_to_multiple_of=" +
               std::to_string(config.data.pad_to_multiple_of),
           "set data.pad_to_multiple_of to a multiple of " + std::to_string(tp));
  }
  if (d.sequence_parallel && config.data.seq_len % tp != 0) {
    refuse("with distributed.sequence_parallel each rank holds data.seq_len / tensor_parallel positions, and "
           "data.seq_len=" + std::to_string(config.data.seq_len) + " does not divide",
           "set data.seq_len to a multiple of " + std::to_string(tp));
  }
}

void check_encoder_tensor_parallel(const model::BertSpec& spec, const config::Config& config) {
  const int64_t tp = config.distributed.tensor_parallel;
  if (tp == 1) return;
  if (spec.modernbert() || spec.deberta()) {
    refuse(std::string(spec.modernbert() ? "ModernBERT" : "DeBERTa-v2") +
               " encoders are not split yet (it splits BERT, RoBERTa and XLM-R layers)",
           "train it with data parallelism: distributed.tensor_parallel=1");
  }
  check_divides("the encoder's num_attention_heads", spec.num_attention_heads, tp, "each rank computes whole heads");
  check_divides("the encoder's intermediate_size", spec.intermediate_size, tp,
                "each rank computes intermediate_size / tensor_parallel units");
  if (spec.vocab_size < tp) {
    refuse("the vocabulary (" + std::to_string(spec.vocab_size) + ") has fewer rows than ranks",
           "set distributed.tensor_parallel to at most the vocabulary size");
  }
}

void split_model(TaskModel& model, parallel::World& world, const config::Config& config) {
  if (world.tp_size() <= 1) return;
  // Each rank's own stream for the regions it computes alone (the default generators are seeded
  // by data-parallel rank, alike across the group).
  model::tp_rng::seed(own_stream_seed(config, world.tp_group_index(), world.tp_rank()));
  model.tensor_parallelize(
      parallel::make_tp_group(world.tensor_parallel_group(), config.distributed.sequence_parallel));
}

}  // namespace hftrain::train
