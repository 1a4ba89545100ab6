// From the resolved config to each stage's own options: the one place that knows both sides.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "data/loader.h"
#include "tokenizer/tokenizer.h"
#include "model/encoder/bert_spec.h"
#include "model/hf/hf_modules.h"
#include "model/spec.h"
#include "parallel/data_parallel/strategy.h"
#include "train/build/model_from.h"

namespace hftrain::train {

tokenizer::TokenizerOptions tokenizer_options(const config::Config& config);
// `rank` of `world_size`: which slice of each global batch this process loads.
data::DataOptions data_options(const config::Config& config, int rank = 0, int world_size = 1);
// Whether packed rows keep their documents apart: data.document_mask, or when unset, whether every
// training source is JSONL or chat (reads the source folders; DataError when they are missing).
bool document_masking(const config::Config& config);
// model.arch=bert: the encoder of `source` (model.from's directory, or the checkpoint resumed),
// else one of the model.* shape (d_ff unset: 4 x d_model; model.encoder's family; a RoBERTa's
// padding id `pad_id`, 1 when unset, its position table model.max_seq_len + pad_id + 1 rows).
// num_labels is set from the data later. Throws ConfigError when `source` holds a decoder.
// The decoder's spec from model.*, made once for the layout checks, `plan` and the builder; nullopt for
// an encoder (model.arch=bert, whose spec bert_spec reads).
std::optional<model::ModelSpec> decoder_spec(const config::Config& config);

model::BertSpec bert_spec(const config::Config& config, const std::optional<ModelSource>& source,
                          std::optional<int64_t> pad_id = std::nullopt);
// The labelled data of a classification run; the labels are fixed when `source`'s classifier
// names them (not transformers' default LABEL_0, LABEL_1, ...).
data::ClassificationOptions classification_options(const config::Config& config,
                                                   const std::optional<ModelSource>& source);

// The files a saved model directory (final/, checkpoints) gets besides model and tokenizer so that
// `generate --chat` and later runs find the chat template the run trained with: chat_template.jinja,
// and the tokenizer_config.json beside tokenizer.path (its special tokens) when there is one. Empty
// for hftrain's own format.
std::vector<std::pair<std::string, std::string>> chat_template_files(const config::Config& config);

// trainer.device: auto picks CUDA when visible, device `local_rank` (one process per GPU).
// Throws ConfigError for cuda without a GPU, or fewer GPUs than local processes.
// The sharding strategy's options: distributed.*, the reductions' dtype (distributed.reduce_dtype:
// fp32, or the compute dtype of trainer.precision), trainer.param_dtype, and the optimizer of
// `optimizer` (the config's, or a pipeline stage's) as its factory.
// `matrices`: the model's hidden weight matrices (hidden_matrices), muon's default targets.
parallel::StrategyOptions strategy_options(const config::Config& config, const config::OptimizerConfig& optimizer,
                                           optim::ModelMatrices matrices = {});

// The weights of the model's hidden linear layers (all but the output layer), each as the rows of
// the Hugging Face layers it holds: what optimizer.name=muon orthogonalises by default.
optim::ModelMatrices hidden_matrices(const std::vector<model::HfLinear>& linears);

// Preference pairs (preference.objective): the data.* keys as the preference loader reads them, the
// chat template (data.chat_template) held by `chat`, which must outlive the loaders.
// DPO's (and KTO's) reference is a frozen copy of the starting weights (preference.reference=copy, or
// auto without LoRA), not the base with its adapters off: the builder makes it, `plan` counts it.
bool dpo_reference_copy(const config::Config& config);
// DPO against reference log-probs computed before training (preference.reference=precomputed).
bool precomputed_reference(const config::Config& config);
// What the precomputed reference's values depend on besides the pairs (reference_pass.h's cache key):
// model.from's weight files (path, size, time) or a fresh model's seed and shape, and how the pass
// computes (device type, precision, weight dtype, batching).
std::string reference_weights_key(const config::Config& config, const torch::Device& device);

data::PreferenceOptions preference_options(const config::Config& config,
                                           std::shared_ptr<const tokenizer::ChatTemplate>& chat);
// KTO's: the preference options, and the unpaired records' fields (data.prompt_field,
// data.completion_field, data.label_field).
data::KtoOptions kto_options(const config::Config& config, std::shared_ptr<const tokenizer::ChatTemplate>& chat);

torch::Device pick_device(const config::Config& config, int local_rank = 0);

// The seeds of a rank's random streams once the weights are initialised (dropout): the default
// generators by tensor-parallel group (World::tp_group_index: the data-parallel rank, and the
// pipeline stage), so that a tensor-parallel group draws alike and two stages differently,
// restarted at `step` when a resume holds no state for the rank; tensor parallelism's own stream
// of a rank by its group and tensor-parallel rank (model/decoder/tensor_parallel.h).
uint64_t default_stream_seed(const config::Config& config, int tp_group, int64_t step = 0);
uint64_t own_stream_seed(const config::Config& config, int tp_group, int tp_rank);

}  // namespace hftrain::train
