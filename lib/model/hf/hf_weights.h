// Hugging Face weights onto hftrain's transformer: GPT2LMHeadModel (Conv1D weights are stored
// transposed) and the Llama family, LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM
// (separate q/k/v and gate/up projections, and their biases, are fused here).
#pragma once

#include "model/weights/stored_weights.h"
#include "model/weights/weight_loader.h"
#include "model/decoder/transformer.h"

namespace hftrain::model {

// Copies the Hugging Face tensors of `hf` into the model's parameters through load_weights
// (weight_loader.h): straight from the source, every name, shape and dtype checked first. Either
// prefix ("transformer.", "model.") or none loads; a tied head stored anyway, GPT-2's mask buffers
// and rotary frequencies are ignored; anything else missing, unexpected or mis-shaped is a
// CheckpointError in load_weights' form, the parameters then untouched.
void load_hf_weights(Transformer& model, const TensorSource& hf, const WeightHandover& handover = {});
// The same for tensors in memory.
void load_hf_weights(Transformer& model, const TensorList& hf);

// The model's parameters under Hugging Face names, as GPT2LMHeadModel / LlamaForCausalLM /
// Qwen2ForCausalLM save_pretrained writes them ("transformer."/"model." prefixes, Conv1D weights
// transposed, fused projections split); a tied head is left out. Views of the parameters where
// they are CPU fp32 (no copy; a writer makes one tensor at a time contiguous), else fp32 copies.
TensorList to_hf_weights(const Transformer& model);

}  // namespace hftrain::model
