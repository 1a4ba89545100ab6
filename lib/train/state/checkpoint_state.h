// The trainer's own state files in a checkpoint (trainer_state.json, data.json, scheduler.json,
// scaler.json, rng.safetensors): each file's writer (a record of a typed value) beside its reader
// (the typed value again, every field checked for type and range, checkpoint_fields.h, before
// anything uses it), so that a field added to one is added to the other (tests/train/
// test_checkpoint_state.cpp round-trips each). A resume restores from these; `hftrain verify`
// runs the same reads, so it reports what a resume would refuse, without a config or the data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/weights/safetensors.h"
#include "train/callbacks.h"
#include "train/step/divergence.h"

namespace hftrain::train {

inline constexpr const char* kSchedulerFile = "scheduler.json";
inline constexpr const char* kScalerFile = "scaler.json";
inline constexpr const char* kRngFile = "rng.safetensors";
inline constexpr const char* kDataFile = "data.json";
inline constexpr const char* kTrainerStateFile = "trainer_state.json";
// Beside a tensor-parallel run's optimizer state: where each rank's pieces lie in the whole tensors.
inline constexpr const char* kTensorParallelFile = "tensor_parallel.json";
inline constexpr const char* kConfigFile = "config.yaml";
inline constexpr const char* kEnvironmentFile = "environment.json";
// LoRA runs: the base model the trained tensors belong to.
inline constexpr const char* kPeftFile = "peft.json";

// trainer_state.json.
struct SavedTrainerState {
  // step, epoch, tokens_seen and the evaluation and early-stopping record; the rest as a fresh
  // state has it (source_tokens empty: by name below, for the resuming run to match to its sources).
  TrainState state;
  // Tokens drawn per training source, by name; nullopt in checkpoints from before mixtures.
  std::optional<std::map<std::string, int64_t>> source_tokens;
  double window_loss_sum = 0;  // the logging window, summed over ranks
  int64_t window_targets = 0;
  // The divergence judge's window and bad steps in a row (trainer.spike.*); nullopt in checkpoints
  // from before it was kept.
  std::optional<DivergenceJudge::State> divergence;
};

// data.json: where the sampler stands.
struct SavedDataState {
  int64_t num_samples = 0;
  int64_t cursor = 0;
  bool document_mask = false;  // false in checkpoints from before it was recorded
  // For people reading the file (a resume takes these from its config): 0 when absent.
  int64_t epoch = 0;
  int64_t seed = 0;
  int64_t batch_size = 0;
};

// scheduler.json: the schedule's name and step, and reduce_lr_on_plateau's state.
struct SavedPlateau {
  double factor = 1;
  std::optional<double> best;  // nullopt: no evaluation yet (the initial infinity, saved as null)
  int64_t num_bad = 0;
  int64_t cooldown_left = 0;
};

// scaler.json: fp16's loss scale (scale and growth_tracker read only when enabled).
struct SavedScaler {
  bool enabled = false;
  double scale = 0;
  int64_t growth_tracker = 0;
};

// The records the files hold (nlohmann::ordered_json keeps the fields in this order).
nlohmann::json trainer_state_record(const SavedTrainerState& s);
nlohmann::json data_state_record(const SavedDataState& s);
// `plateau`: reduce_lr_on_plateau's state (the name "reduce_lr_on_plateau"), or none ("stateless").
nlohmann::json scheduler_record(int64_t step, const std::optional<SavedPlateau>& plateau);
nlohmann::json scaler_record(const SavedScaler& s);

// Each throws util::CheckpointError naming the file and the field: missing, of another type, or
// out of its range.
SavedTrainerState read_trainer_state(const std::filesystem::path& checkpoint);
SavedDataState read_data_state(const std::filesystem::path& checkpoint);
std::optional<SavedPlateau> read_plateau_state(const std::filesystem::path& checkpoint);  // nullopt: none saved
SavedScaler read_scaler_state(const std::filesystem::path& checkpoint);
// rng.safetensors: every generator state uint8 and 1-D, a `cpu` one, and every CPU one ("cpu",
// "cpu.rank<r>") of this LibTorch's CPU generator's size.
model::TensorList read_rng_states(const std::filesystem::path& checkpoint);

// Every read above, each failure one line (the message), in file order; empty when all pass.
std::vector<std::string> check_state_files(const std::filesystem::path& checkpoint);

}  // namespace hftrain::train
