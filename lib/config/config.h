// The resolved, validated configuration: plain structs, read once. Every field is declared in
// the schema (keys.cpp) with its type, default, range and documentation; `hftrain config --schema`
// prints them and README.md's config reference is generated from the same declarations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hftrain::config {

// Enumerations mirror the allowed strings of their keys, in the same order (see keys.cpp).
enum class ModelArch { kGpt2, kLlama };
enum class TokenizerType { kByte, kBpe, kHf };
enum class OptimizerName { kAdamW, kSgd, kAdafactor, kLion };
enum class SchedulerName {
  kConstant, kConstantWithWarmup, kLinear, kCosine, kCosineWithRestarts, kCosineWithMinLr,
  kPolynomial, kInverseSqrt, kWarmupStableDecay, kReduceLrOnPlateau
};
enum class Precision { kFp32, kBf16, kFp16 };
enum class Strategy { kDdp, kZero1, kZero2, kZero3, kHybrid };
enum class Backend { kAuto, kNccl, kMpi };
enum class LogLevel { kDebug, kInfo, kWarn, kError };

struct RunConfig {
  std::string name;
  std::string output_dir;
  int64_t seed = 0;
  std::map<std::string, std::string> tags;
};

struct ModelConfig {
  ModelArch arch = ModelArch::kGpt2;
  std::optional<std::string> from;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t d_model = 0;
  int64_t max_seq_len = 0;
  int64_t vocab_size = 0;
};

struct TokenizerConfig {
  TokenizerType type = TokenizerType::kByte;
  std::optional<std::string> path;
};

struct DataConfig {
  std::vector<std::string> train;
  std::vector<std::string> validation;
  int64_t seq_len = 0;
};

struct OptimizerConfig {
  OptimizerName name = OptimizerName::kAdamW;
  double lr = 0;
  double weight_decay = 0;
};

struct SchedulerConfig {
  SchedulerName name = SchedulerName::kConstant;
  int64_t warmup_steps = 0;
};

struct TrainerConfig {
  std::optional<int64_t> max_steps;
  std::optional<int64_t> max_epochs;
  int64_t micro_batch_size = 0;
  int64_t grad_accum_steps = 0;
  double max_grad_norm = 0;  // +inf: measure and log only
  Precision precision = Precision::kFp32;
  int64_t log_every = 0;
  int64_t eval_every = 0;  // 0: never
};

struct CheckpointConfig {
  int64_t every_steps = 0;  // 0: only at the end
  int64_t keep_last = 0;    // 0: keep all
  bool keep_best = false;
};

struct DistributedConfig {
  Strategy strategy = Strategy::kDdp;
  Backend backend = Backend::kAuto;
};

struct LoggingConfig {
  LogLevel level = LogLevel::kInfo;
};

struct Config {
  RunConfig run;
  ModelConfig model;
  TokenizerConfig tokenizer;
  DataConfig data;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  TrainerConfig trainer;
  CheckpointConfig checkpoint;
  DistributedConfig distributed;
  LoggingConfig logging;
};

}  // namespace hftrain::config
