// Hugging Face weights onto hftrain's transformer: GPT2LMHeadModel (Conv1D weights are stored
// transposed) and the Llama family, LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM
// (separate q/k/v and gate/up projections, and their biases, are fused here).
#pragma once

#include "model/stored_weights.h"
#include "model/transformer.h"

namespace hftrain::model {

// Copies the Hugging Face tensors of `hf` into the model's parameters, straight from the source
// (a memory-mapped file: one tensor at a time, converted to the parameter's dtype in the copy).
// Checks every name and shape first and throws CheckpointError naming hf.where() and listing every
// missing, unexpected or mis-shaped tensor at once; the parameters are then untouched.
void load_hf_weights(Transformer& model, const TensorSource& hf);
// The same for tensors in memory.
void load_hf_weights(Transformer& model, const TensorList& hf);

// The model's parameters under Hugging Face names, as GPT2LMHeadModel / LlamaForCausalLM /
// Qwen2ForCausalLM save_pretrained writes them ("transformer."/"model." prefixes, Conv1D weights
// transposed, fused projections split); a tied head is left out. Views of the parameters where
// they are CPU fp32 (no copy; a writer makes one tensor at a time contiguous), else fp32 copies.
TensorList to_hf_weights(const Transformer& model);

}  // namespace hftrain::model
