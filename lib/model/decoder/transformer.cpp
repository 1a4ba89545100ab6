#include "model/decoder/transformer.h"

#include <algorithm>
#include <cmath>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "model/decoder/blocks.h"
#include "model/checkpointing.h"
#include "model/decoder/document_mask.h"
#include "model/decoder/lm_head_loss.h"
#include "model/numeric_trace.h"
#include "model/rope.h"
#include "model/neftune.h"

namespace hftrain::model {
namespace F = torch::nn::functional;
namespace {

// The RoPE table's rows for the positions: those of `position_ids` (B, T) as (B, 1, T, D), or
// offset..offset+T as (T, D); in `dtype`.
torch::Tensor rope_rows(const torch::Tensor& table, const torch::Tensor& position_ids, int64_t offset, int64_t length,
                        torch::ScalarType dtype) {
  if (!position_ids.defined()) return table.narrow(0, offset, length).to(dtype);
  return table.index_select(0, position_ids.reshape({-1}))
      .view({position_ids.size(0), 1, length, table.size(1)})
      .to(dtype);
}

}  // namespace

TransformerImpl::TransformerImpl(const ModelSpec& spec, WeightInit init) : spec_(spec) {
  embed_tokens_ = register_module("embed_tokens", Table(spec.vocab_size, spec.d_model));
  if (spec.learned_positions()) {
    embed_positions_ = register_module("embed_positions", Table(spec.max_seq_len, spec.d_model));
  } else {
    const RopeTables rope = rope_tables(spec);
    rope_cos_ = register_buffer("rope_cos", rope.cos);
    rope_sin_ = register_buffer("rope_sin", rope.sin);
    if (rope.long_cos.defined()) {  // longrope's tables past original_max_seq_len
      rope_long_cos_ = register_buffer("rope_long_cos", rope.long_cos);
      rope_long_sin_ = register_buffer("rope_long_sin", rope.long_sin);
    }
    if (spec.local_rope()) {  // Gemma 3's sliding layers: their own base, no scaling
      ModelSpec local = spec;
      local.rope_theta = spec.rope_local_theta;
      local.rope_scaling = RopeScaling{};
      const RopeTables tables = rope_tables(local);
      rope_local_cos_ = register_buffer("rope_local_cos", tables.cos);
      rope_local_sin_ = register_buffer("rope_local_sin", tables.sin);
    }
  }
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < spec.n_layer; ++i) {
    layers_->push_back(Block(spec, i));
    auto block = layers_->ptr<BlockImpl>(i);
    if (block->moe && spec.router_aux_loss_coef > 0) block->moe->collect_stats(&router_stats_);
  }
  final_norm_ =
      register_module("final_norm", Norm(spec.d_model, spec.layer_norm(), spec.norm_eps, spec.norm_unit_offset));
  if (spec.score_outputs > 0) {
    score_ = register_module("score", Dense(spec.d_model, spec.score_outputs, false));
  } else if (!spec.tie_embeddings) {
    lm_head_ = register_module("lm_head", Dense(spec.d_model, spec.vocab_size, false));
  }

  if (init == WeightInit::kSkip) {
    // A score head is new where a language model's weights are loaded: N(0, init_std), as transformers.
    torch::NoGradGuard no_grad;
    if (score_) score_->weight.normal_(0.0, spec.init_std);
    return;
  }
  // Initialisation as GPT-2 and Llama do it: N(0, init_std) for weights and embeddings, zero
  // biases, unit norms; GPT-2 also shrinks the residual projections by 1/sqrt(2 n_layer).
  torch::NoGradGuard no_grad;
  const double residual_std = spec.learned_positions() ? spec.init_std / std::sqrt(2.0 * spec.n_layer) : spec.init_std;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (name.find("norm") != std::string::npos) continue;  // already ones / zeros
    if (is_bias) {
      p.zero_();
    } else if (name.find("o_proj") != std::string::npos || name.find("down_proj") != std::string::npos) {
      p.normal_(0.0, residual_std);
    } else {
      p.normal_(0.0, spec.init_std);
    }
  }
}

void TransformerImpl::tensor_parallelize(std::shared_ptr<TpGroup> group) {
  if (!group || group->size() <= 1) return;
  TORCH_CHECK(!tp_, "tensor_parallelize: the model is split already");
  auto held = parameters_by_name();
  if (const torch::Tensor copy = tied_head_copy(); copy.defined()) held.emplace_back("embed_tokens.weight", copy);
  keep_pieces(held,
              [this](const std::string& name, int rank, int size) { return decoder_tp_split(spec_, name, rank, size); },
              group->rank(), group->size());
  tp_ = std::move(group);
  vocab_ = VocabParallel{tp_.get(), vocab_slice(spec_.vocab_size, tp_->rank(), tp_->size())};
  for (int64_t i : held_layers()) layers_->ptr<BlockImpl>(i)->set_tensor_parallel(tp_.get());
  if (tp_->sequence_parallel()) final_norm_->as<NormImpl>()->sum_grad_over(tp_.get());
}

TpSplit TransformerImpl::tp_split(const std::string& name, int rank) const {
  return tp_ ? decoder_tp_split(spec_, name, rank, tp_->size()) : TpSplit{};
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& input_ids, KvCache* cache,
                                       const torch::Tensor& position_ids) {
  torch::Tensor hidden = hidden_states(input_ids, cache, position_ids);
  if (tp_) hidden = tp_enter(hidden, *tp_);
  auto logits = F::linear(hidden, head_weight());  // (B, T, V), or this rank's slice of V
  if (tp_) {
    TORCH_CHECK(!torch::GradMode::is_enabled(), "the whole logits of a tensor-parallel model are for evaluation "
                "(no gradient flows through their gathering): train through loss_sum");
    std::vector<TpSplit> slices;
    for (int r = 0; r < tp_->size(); ++r) {
      const VocabSlice v = vocab_slice(spec_.vocab_size, r, tp_->size());
      slices.push_back(TpSplit{logits.dim() - 1, v.vocab, {{v.begin, v.rows()}}});
    }
    logits = tp_gather(logits.detach(), slices, *tp_);
  }
  if (spec_.final_logit_softcapping > 0 && spec_.score_outputs == 0) {  // not a score head's (transformers')
    const double cap = spec_.final_logit_softcapping;
    logits = torch::tanh(logits / cap) * cap;
  }
  return hooks_ ? hooks_->after_forward(0, logits) : logits;
}

torch::Tensor TransformerImpl::loss_sum(const torch::Tensor& input_ids, const torch::Tensor& labels,
                                        double label_smoothing, const torch::Tensor& position_ids,
                                        const torch::Tensor& document_offsets) {
  TORCH_CHECK(spec_.score_outputs == 0, "a score head (a reward model) has no next-token loss; score through forward");
  torch::Tensor x = hidden_states(input_ids, nullptr, position_ids, document_offsets);  // (B, T, C)
  if (tp_) x = tp_enter(x, *tp_);
  auto loss = lm_head_loss_sum(x.reshape({-1, x.size(-1)}), head_weight(), labels.reshape({-1}), label_smoothing,
                               spec_.final_logit_softcapping, 0, tp_ ? &vocab_ : nullptr);
  traced_head(x, loss);
  // The root's hook sees the loss: under zero3 the root (which holds the head) stays whole until
  // the loss exists, and in evaluation it is released only then.
  return hooks_ ? hooks_->after_forward(0, loss) : loss;
}

void TransformerImpl::traced_head(const torch::Tensor& input, const torch::Tensor& loss) const {
  if (spec_.score_outputs > 0) {
    traced("score", score_.get(), input, loss);
  } else if (spec_.tie_embeddings) {
    traced("lm_head (tied to embed_tokens)", embed_tokens_.get(), input, loss);
  } else {
    traced("lm_head", lm_head_.get(), input, loss);
  }
}

torch::Tensor TransformerImpl::hidden_states(const torch::Tensor& input_ids, KvCache* cache,
                                             const torch::Tensor& position_ids, const torch::Tensor& document_offsets) {
  const int64_t T = input_ids.size(1);
  const int64_t offset = cache ? cache->length : 0;
  TORCH_CHECK(offset + T <= spec_.max_seq_len, "sequence of ", offset + T, " positions exceeds model.max_seq_len ",
              spec_.max_seq_len);
  TORCH_CHECK(!position_ids.defined() || !cache, "position ids are for packed training rows, not a KV cache");
  TORCH_CHECK(!tp_ || !cache, "a KV cache (generation) needs a whole model, not a tensor-parallel one");
  TORCH_CHECK(stage_.stages == 1, "the whole forward needs a whole model, not a pipeline stage");
  if (hooks_) hooks_->before_forward(0);
  router_stats_.clear();
  torch::Tensor x = embed(input_ids, offset, position_ids);
  const auto [attention, sliding] =
      attention_inputs(position_ids, T, offset, x.scalar_type(), x.device(), document_offsets);
  x = run_blocks(x, *attention, *sliding, cache, offset, input_ids.numel(), 0, spec_.n_layer);
  x = traced("final_norm", final_norm_.get(), x, final_norm_->as<NormImpl>()->forward(x));
  if (cache) cache->length = offset + T;
  return x;
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& input_ids, int64_t offset,
                                     const torch::Tensor& position_ids) {
  const int64_t T = input_ids.size(1);
  // Under tensor parallelism each rank looks up its rows of the vocabulary and tp_leave sums them
  // (with sequence parallelism: this rank's slice of the sequence, (B, T / size, C)).
  auto x = tp_ ? tp_leave(vocab_parallel_embedding(input_ids, embed_tokens_->weight, vocab_.slice), *tp_)
               : embed_tokens_(input_ids);  // (B, T, C)
  if (spec_.scale_embeddings) {  // Gemma: sqrt(d_model) as an fp32 number, rounded to the weights' dtype
    x = x * torch::scalar_tensor(std::sqrt(static_cast<double>(spec_.d_model)), x.options().dtype(torch::kFloat32))
                .to(embed_tokens_->weight.scalar_type());
  }
  if (neftune_alpha_ > 0 && is_training()) {
    const bool slice = tp_ && tp_->sequence_parallel();
    x = add_neftune_noise(x, neftune_alpha_, T, slice ? tp_->rank() * x.size(1) : 0);
  }
  if (spec_.learned_positions()) {
    torch::Tensor ids = position_ids.defined() ? position_ids : torch::arange(offset, offset + T, input_ids.options());
    torch::Tensor table = embed_positions_->weight;
    if (tp_ && tp_->sequence_parallel()) {  // this rank's slice of the sequence
      ids = ids.narrow(-1, tp_->rank() * x.size(1), x.size(1));
      table = tp_sum_grad(table, *tp_);
    }
    x = x + torch::embedding(table, ids);
  }
  // Under sequence parallelism each rank holds its own slice of the sequence: its own numbers.
  const TpRngFork own_numbers(x.device(), tp_ && tp_->sequence_parallel() && is_training() && spec_.dropout > 0);
  return traced("embed_tokens", embed_tokens_.get(), input_ids,
                F::dropout(x, F::DropoutFuncOptions().p(spec_.dropout).training(is_training())));
}

std::pair<AttentionInputsPtr, AttentionInputsPtr> TransformerImpl::attention_inputs(
    const torch::Tensor& position_ids, int64_t T, int64_t offset, torch::ScalarType dtype, const torch::Device& device,
    const torch::Tensor& document_offsets) {
  auto attention = std::make_shared<AttentionInputs>();
  if (position_ids.defined()) {
    // Under autocast the attention runs in autocast's dtype, otherwise in the activations'.
    const auto device_type = device.type();
    const auto compute = at::autocast::is_autocast_enabled(device_type) ? at::autocast::get_autocast_dtype(device_type)
                                                                         : dtype;
    // Soft-capped scores have no flash kernel: they take the mask.
    if (spec_.attn_logit_softcapping == 0 && variable_length_attention(device, compute, spec_.head_dim())) {
      // The documents' starts found on the host where the loader gave them (no device read).
      const DocumentLayout layout = document_offsets.defined()
                                        ? DocumentLayout{document_offsets, position_ids.size(1)}
                                        : document_layout(position_ids);
      attention->cu_seqlens = layout.cu_seqlens;
      attention->max_seqlen = layout.max_seqlen;
      attention->varlen_dtype = compute;
    } else {
      attention->mask = document_causal_mask(position_ids);
    }
  }
  if (!spec_.learned_positions()) {
    // longrope: the long factors for every position once the last one is past the original
    // context (transformers' longrope_frequency_update), the short ones otherwise.
    bool long_rope = false;
    if (rope_long_cos_.defined()) {
      const int64_t last = position_ids.defined() ? position_ids.max().item<int64_t>() : offset + T - 1;
      long_rope = last + 1 > spec_.rope_scaling.original_max_seq_len;
    }
    attention->cos = rope_rows(long_rope ? rope_long_cos_ : rope_cos_, position_ids, offset, T, dtype);
    attention->sin = rope_rows(long_rope ? rope_long_sin_ : rope_sin_, position_ids, offset, T, dtype);
  }
  // Sliding layers: their window (and rotation, Gemma 3) on top of what every layer shares. The
  // window's mask is only needed where a query could see past it.
  auto sliding = std::make_shared<AttentionInputs>(*attention);
  if (spec_.sliding_window > 0) {
    sliding->window = spec_.sliding_window;
    if (rope_local_cos_.defined()) {
      sliding->cos = rope_rows(rope_local_cos_, position_ids, offset, T, dtype);
      sliding->sin = rope_rows(rope_local_sin_, position_ids, offset, T, dtype);
    }
    if (!sliding->cu_seqlens.defined() && T > spec_.sliding_window) {
      const auto window = sliding_window_causal_mask(T, spec_.sliding_window, device);  // (T, T)
      sliding->mask = attention->mask.defined() ? attention->mask.logical_and(window) : window;
    }
  }
  return {attention, sliding};
}

torch::Tensor TransformerImpl::run_blocks(torch::Tensor x, const AttentionInputs& attention,
                                          const AttentionInputs& sliding, KvCache* cache, int64_t offset,
                                          int64_t tokens, int64_t begin, int64_t end) {
  // The load-balancing loss counts the tokens of the mask set for this batch (B x T of them).
  torch::Tensor token_mask;
  if (router_token_mask_.defined() && router_token_mask_.numel() == tokens && !cache) {
    token_mask = router_token_mask_.reshape({-1}).ne(0).to(torch::kFloat32);
  }
  const size_t first_unit = unit_of_layer(begin);
  for (int64_t i = begin; i < end; ++i) {
    const size_t unit = first_unit + static_cast<size_t>(i - begin);
    LayerCache layer_cache;
    if (cache) layer_cache = LayerCache{&cache->keys[i], &cache->values[i], offset};
    auto block = layers_->ptr<BlockImpl>(i);
    const AttentionInputs& in = spec_.layer_slides(i) ? sliding : attention;
    if (hooks_) hooks_->before_forward(unit);
    // With frozen layers below (LoRA) a block's input needs no gradient, but the reentrant
    // checkpoint needs one to run the block's backward: ask for it (as transformers'
    // enable_input_require_grads does); nothing upstream receives it.
    if (activation_checkpointing_ && is_training() && !cache && torch::GradMode::is_enabled() && !x.requires_grad()) {
      x = x.detach().requires_grad_(true);
    }
    const bool checkpoint =
        activation_checkpointing_ && is_training() && !cache && x.requires_grad() && torch::GradMode::is_enabled();
    if (block->moe) block->moe->set_token_mask(token_mask);
    if (checkpoint && block->moe && spec_.router_aux_loss_coef > 0) {
      x = checkpointed_moe_block(block, in, x, token_mask);
    } else if (checkpoint) {
      x = checkpointed([block, in](const torch::Tensor& h) { return block->forward(h, in, nullptr); }, x);
    } else {
      x = block->forward(x, in, cache ? &layer_cache : nullptr);
    }
    if (hooks_) x = hooks_->after_forward(unit, x);
  }
  return x;
}

torch::Tensor TransformerImpl::checkpointed_moe_block(const std::shared_ptr<BlockImpl>& block,
                                                      const AttentionInputs& in, const torch::Tensor& x,
                                                      const torch::Tensor& token_mask) {
  // The router's statistics leave the checkpoint as outputs: the probability sums with a gradient
  // (the recomputation back-propagates the loss's gradient through them to the router), the expert
  // counts as the first pass found them. Inside, the layer collects into a local list only.
  MoeImpl* moe = block->moe.get();  // the block (and so the layer) outlives the backward
  std::vector<RouterStats>* outer = &router_stats_;
  const auto out = checkpointed(
      BlockFnMany([block, in, moe, outer, token_mask](const torch::Tensor& h) {
        std::vector<RouterStats> local;
        moe->collect_stats(&local, /*without_grad=*/true);
        moe->set_token_mask(token_mask);  // the recomputation's too
        torch::Tensor y = block->forward(h, in, nullptr);
        moe->collect_stats(outer);
        return std::vector<torch::Tensor>{y, local.at(0).prob_sum, local.at(0).counts};
      }),
      x);
  // The tokens routed: the mask's, or every slot counted once per token (under sequence
  // parallelism the layer routes the whole sequence while x is this rank's slice of it).
  const torch::Tensor rows =
      token_mask.defined() ? token_mask.sum() : out[2].sum() / static_cast<double>(spec_.experts_per_token);
  router_stats_.push_back(RouterStats{out[2].detach(), out[1], rows});
  return out[0];
}

torch::Tensor TransformerImpl::take_router_aux_loss() {
  torch::Tensor loss = load_balancing_loss(router_stats_, spec_.n_experts);
  router_stats_.clear();
  return loss;
}

KvCache TransformerImpl::make_cache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  auto options = embed_tokens_->weight.options().requires_grad(false);
  for (int64_t i = 0; i < spec_.n_layer; ++i) {
    cache.keys.push_back(torch::zeros({batch, spec_.n_kv_head, capacity, spec_.head_dim()}, options));
    cache.values.push_back(torch::zeros({batch, spec_.n_kv_head, capacity, spec_.head_dim()}, options));
  }
  return cache;
}

std::vector<std::pair<std::string, torch::Tensor>> TransformerImpl::parameters_by_name() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    if (owns(item.key())) out.emplace_back(item.key(), item.value());
  }
  return out;
}

ParameterUnits TransformerImpl::parameter_units() const {
  // The root (unit 0) and this model's blocks (all of them, or a pipeline stage's) in order.
  ParameterUnits units(held_layers().size() + 1);
  const auto params = parameters_by_name();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].first;
    size_t unit = 0;
    if (name.rfind("layers.", 0) == 0) unit = unit_of_layer(std::stoll(name.substr(7, name.find('.', 7) - 7)));
    units[unit].push_back(i);
  }
  return units;
}

std::vector<int64_t> TransformerImpl::held_layers() const {
  if (stage_.stages > 1) return stage_.layers();
  std::vector<int64_t> all(static_cast<size_t>(spec_.n_layer));
  for (int64_t i = 0; i < spec_.n_layer; ++i) all[static_cast<size_t>(i)] = i;
  return all;
}

size_t TransformerImpl::unit_of_layer(int64_t layer) const {
  if (stage_.stages == 1) return static_cast<size_t>(layer) + 1;
  const std::vector<int64_t> held = stage_.layers();
  const auto at = std::find(held.begin(), held.end(), layer);
  TORCH_CHECK(at != held.end(), "unit_of_layer: block ", layer, " is another stage's");
  return static_cast<size_t>(at - held.begin()) + 1;
}

int64_t TransformerImpl::non_embedding_parameters() const {
  int64_t n = 0;
  for (const auto& [name, p] : parameters_by_name()) {
    if (name.rfind("embed_", 0) != 0) n += p.numel();
  }
  return n;
}

}  // namespace hftrain::model
