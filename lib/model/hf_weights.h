// Hugging Face weights onto hftrain's transformer: GPT2LMHeadModel (Conv1D weights are stored
// transposed) and LlamaForCausalLM (separate q/k/v and gate/up projections are fused here).
#pragma once

#include "model/safetensors.h"
#include "model/transformer.h"

namespace hftrain::model {

// Copies `hf` into the model's parameters. Throws CheckpointError listing every missing, unexpected
// or mis-shaped tensor at once.
void load_hf_weights(Transformer& model, const TensorList& hf);

// The model's parameters under Hugging Face names, as GPT2LMHeadModel / LlamaForCausalLM
// save_pretrained writes them ("transformer."/"model." prefixes, Conv1D weights transposed, fused
// projections split); a tied head is left out. Contiguous CPU fp32 copies.
TensorList to_hf_weights(const Transformer& model);

}  // namespace hftrain::model
