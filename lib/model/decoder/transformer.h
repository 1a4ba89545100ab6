// One decoder-only transformer; GPT-2 (learned positions, LayerNorm, GELU, biases, tied
// embeddings) and Llama (RoPE with optional scaling, RMSNorm, SwiGLU, grouped-query attention,
// untied head; Mistral and Qwen2 are Llamas, Qwen2 with query/key/value biases) are
// configurations of it (ModelSpec). Attention goes through LibTorch's scaled_dot_product_attention.
//
// Parameter names (what optimizer globs, checkpoints and the Hugging Face mapping use):
//   embed_tokens.weight, embed_positions.weight (gpt2), final_norm.{weight,bias}, lm_head.weight (untied),
//   or score.weight in its place (a reward model: spec.score_outputs)
//   layers.N.attn_norm.*, layers.N.attn.qkv_proj.{weight,bias}, layers.N.attn.o_proj.{weight,bias},
//   layers.N.mlp_norm.*, layers.N.mlp.up_proj.* (gpt2) or layers.N.mlp.gate_up_proj.* (llama),
//   layers.N.mlp.down_proj.*; each bias only where the spec has it (attention_bias, mlp_bias)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "model/parameter_units.h"
#include "model/decoder/pipeline_stage.h"
#include "model/dense.h"
#include "model/decoder/moe.h"
#include "model/spec.h"
#include "model/decoder/tensor_parallel.h"
#include "model/decoder/tp_plan.h"

namespace hftrain::model {

class BlockImpl;         // blocks.h
struct AttentionInputs;  // blocks.h
using AttentionInputsPtr = std::shared_ptr<AttentionInputs>;

// Keys and values of past positions, for generation. Per layer: (B, n_kv_head, capacity, head_dim).
struct KvCache {
  std::vector<torch::Tensor> keys;
  std::vector<torch::Tensor> values;
  int64_t length = 0;  // positions filled
};

class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelSpec& spec, WeightInit init = WeightInit::kRandom);

  // input_ids (B, T) int64 -> logits (B, T, vocab), or a score head's (B, T, score_outputs). With a cache, the T new
  // positions follow the cache's and their keys and values are appended to it. `position_ids` (B, T), when given (not
  // with a cache), are packed documents' positions: each document is attended and positioned on
  // its own (document_mask.h).
  torch::Tensor forward(const torch::Tensor& input_ids, KvCache* cache = nullptr,
                        const torch::Tensor& position_ids = {});
  // The next-token loss summed over the targets of `labels` (B, T) (-100: none), in fp32, without
  // materialising the logits (lm_head_loss.h): what training and evaluation use.
  // `document_offsets` (optional, with position_ids): the documents' starts found on the host
  // (data::Batch); without them they are found on the device, which reads it once.
  torch::Tensor loss_sum(const torch::Tensor& input_ids, const torch::Tensor& labels, double label_smoothing,
                         const torch::Tensor& position_ids = {}, const torch::Tensor& document_offsets = {});

  // The routers' load-balancing loss of the last forward that ran with gradients (mixtures of
  // experts with spec().router_aux_loss_coef > 0; undefined otherwise), unweighted; reading it
  // clears it.
  torch::Tensor take_router_aux_loss();
  // The tokens the next forwards' load-balancing loss counts: a padded batch's attention mask (B, T),
  // nonzero for a token, as transformers' load_balancing_loss_func takes it; undefined: every
  // position.
  void set_router_token_mask(const torch::Tensor& attention_mask) { router_token_mask_ = attention_mask; }

  // An empty cache for `batch` sequences of up to `capacity` positions.
  KvCache make_cache(int64_t batch, int64_t capacity) const;

  const ModelSpec& spec() const { return spec_; }
  // Recompute each block's activations during backward instead of keeping them (training only).
  void set_activation_checkpointing(bool on) { activation_checkpointing_ = on; }
  // NEFTune (model/neftune.h): noise of this alpha on the token embeddings while training; 0: none.
  void set_neftune_alpha(double alpha) { neftune_alpha_ = alpha; }
  // Parameters by name, each once (a tied head is embed_tokens.weight).
  std::vector<std::pair<std::string, torch::Tensor>> parameters_by_name() const;
  // Parameters without the embeddings, for the PaLM FLOPs formula.
  int64_t non_embedding_parameters() const;
  // The units a parameter-sharding strategy gathers one at a time (parameter_units.h), and the
  // hooks it calls them through (null: the parameters are always whole).
  ParameterUnits parameter_units() const;
  void set_unit_hooks(UnitHooks* hooks) { hooks_ = hooks; }

  // Tensor parallelism: keeps this rank's pieces of every parameter (tp_plan.h) and routes the
  // blocks' activations through `group` (tensor_parallel.h); the output layer's loss is reduced
  // over the vocabulary's pieces. Once, after the weights are initialised or loaded whole (every
  // rank alike) and before the model moves to its device. forward() then gives the logits whole,
  // for evaluation (no gradient flows through the gathering); generation needs a whole model.
  void tensor_parallelize(std::shared_ptr<TpGroup> group);
  TpGroup* tensor_parallel() const { return tp_.get(); }
  // Where rank `rank`'s piece of parameter `name` lies in the whole one (whole without a group).
  TpSplit tp_split(const std::string& name, int rank) const;

  // Pipeline parallelism: keeps only stage `stage`'s parameters of `stages` (its blocks; the
  // embeddings on the first stage, the final norm and head on the last). The others stay
  // registered under their names but hold no memory, and parameters_by_name() and
  // parameter_units() leave them out. A tied head's last stage keeps a copy of the embedding
  // (tied_head_copy) that is not its parameter: the first stage owns and updates it. Once, after
  // the weights are in place (every rank alike) and before tensor_parallelize.
  // `boundaries`: the virtual stages' block boundaries (stages * chunks + 1 indices from 0 to
  // n_layer; chunks = 1 without virtual stages), PipelineStage's.
  void pipeline_split(const std::vector<int64_t>& boundaries, int stage, int stages);
  const PipelineStage* pipeline_stage() const { return stage_.stages > 1 ? &stage_ : nullptr; }
  // Chunk `chunk`'s part of loss_sum: from the input ids (the first virtual stage) or the previous
  // virtual stage's output `hidden` to the hidden states after its blocks (B, T, C) (under sequence
  // parallelism this rank's slice of T), or on the last virtual stage to the loss summed over
  // `labels`' targets.
  torch::Tensor stage_forward(const torch::Tensor& input_ids, const torch::Tensor& hidden, const torch::Tensor& labels,
                              double label_smoothing, const torch::Tensor& position_ids, int chunk = 0);
  // Every parameter present (the other stages' allocated in host memory, values unset) for a scope
  // that reads or writes the whole model (saving on the main rank, loading on every rank), or back
  // to this stage's own (the others freed again; the tied copy restored as it was).
  void set_pipeline_whole(bool whole);
  // The last stage's copy of a tied embedding (undefined elsewhere, and without tied embeddings).
  torch::Tensor tied_head_copy() const;

 private:
  // The blocks and the final norm: (B, T) ids -> (B, T, C), the output layer's input.
  torch::Tensor hidden_states(const torch::Tensor& input_ids, KvCache* cache, const torch::Tensor& position_ids,
                              const torch::Tensor& document_offsets = {});
  // The embeddings, positions and dropout of (B, T) ids at positions offset.. (or position_ids).
  // NEFTune's noise (model/neftune.h) joins the token embeddings while training.
  torch::Tensor embed(const torch::Tensor& input_ids, int64_t offset, const torch::Tensor& position_ids);
  // What the blocks' attention takes for T positions at offset.. (or position_ids): the full
  // layers' and the sliding layers'.
  std::pair<AttentionInputsPtr, AttentionInputsPtr> attention_inputs(const torch::Tensor& position_ids, int64_t T,
                                                                     int64_t offset, torch::ScalarType dtype,
                                                                     const torch::Device& device,
                                                                     const torch::Tensor& document_offsets = {});
  // The blocks [begin, end) over x (this model holds them).
  torch::Tensor run_blocks(torch::Tensor x, const AttentionInputs& attention, const AttentionInputs& sliding,
                           KvCache* cache, int64_t offset, int64_t tokens, int64_t begin, int64_t end);
  // The blocks this model holds, by layer index in order (all of them unless pipelined), and the
  // parameter unit of held block `layer` (the root is unit 0, the held blocks follow).
  std::vector<int64_t> held_layers() const;
  size_t unit_of_layer(int64_t layer) const;
  // Whether parameter `name` is this stage's (always without pipeline parallelism, and while the
  // whole model is present).
  bool owns(const std::string& name) const;
  // The last stage's copy of a tied embedding.
  bool is_tied_copy(const std::string& name) const;
  // The whole embedding's shape (vocab, d_model).
  std::vector<int64_t> embedding_shape() const { return {spec_.vocab_size, spec_.d_model}; }
  // debug.underflow_overflow: the output layer's frame (its input, weight and the loss).
  void traced_head(const torch::Tensor& input, const torch::Tensor& loss) const;
  // The output layer's weight (V, C): the embedding when tied.
  torch::Tensor head_weight() const {
    if (spec_.score_outputs > 0) return score_->weight;
    return spec_.tie_embeddings ? embed_tokens_->weight : lm_head_->weight;
  }
  // A mixture-of-experts block under activation checkpointing with the load-balancing loss: the
  // block's output, its router statistics appended to router_stats_ with their gradient path.
  torch::Tensor checkpointed_moe_block(const std::shared_ptr<BlockImpl>& block, const AttentionInputs& in,
                                       const torch::Tensor& x, const torch::Tensor& token_mask);

  ModelSpec spec_;
  std::shared_ptr<TpGroup> tp_;
  PipelineStage stage_;  // stages == 1: not pipelined
  std::vector<std::pair<torch::Tensor, std::vector<int64_t>>> absent_;  // other stages' parameters, whole shapes
  torch::Tensor held_copy_;  // the tied copy set aside while the whole model is present
  bool whole_ = false;
  VocabParallel vocab_;  // the output layer's and embedding's vocabulary slice under tp_
  double neftune_alpha_ = 0;  // set_neftune_alpha
  std::vector<RouterStats> router_stats_;  // filled by the MoE layers during a forward with gradients
  bool activation_checkpointing_ = false;
  UnitHooks* hooks_ = nullptr;
  Table embed_tokens_{nullptr};
  Table embed_positions_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  std::shared_ptr<torch::nn::Module> final_norm_;
  Dense lm_head_{nullptr};
  Dense score_{nullptr};  // a reward model's head (spec.score_outputs) in place of lm_head_
  torch::Tensor router_token_mask_;
  torch::Tensor rope_cos_;  // (max_seq_len, rotary_dim), llama only
  torch::Tensor rope_sin_;
  torch::Tensor rope_long_cos_;  // longrope past original_max_seq_len, or undefined
  torch::Tensor rope_long_sin_;
  torch::Tensor rope_local_cos_;  // the sliding layers' own (rope_local_theta), or undefined
  torch::Tensor rope_local_sin_;
};
TORCH_MODULE(Transformer);

}  // namespace hftrain::model
