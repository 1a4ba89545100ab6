// Where the Hugging Face model's tensors and linear layers lie in hftrain's transformer. hftrain
// fuses q/k/v into qkv_proj and gate/up into gate_up_proj, and stores GPT-2's Conv1D weights as
// linear ones (transposed); Hugging Face names each piece. The weight loader and exporter
// (hf_weights.h) and LoRA's targets and peft's file names (peft/lora.h) read the same table.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/encoder/bert_spec.h"
#include "model/spec.h"

namespace hftrain::model {

// Where one of hftrain's parameters comes from: one or more Hugging Face tensors (names without
// the model's prefix), concatenated along dim 0 after an optional transpose.
struct HfSource {
  std::vector<std::string> names;
  bool transpose = false;
  std::vector<int64_t> split{};  // dim-0 sizes of the parts, for fused sources
};

// hftrain parameter name -> its source, for every parameter of a gpt2 or llama-family spec.
std::map<std::string, HfSource> hf_sources(const ModelSpec& spec);

// The prefix Hugging Face's *ForCausalLM (and *ForSequenceClassification) puts before the body's
// names: "transformer." (GPT-2), "model." (Llama family); the output layer's tensor has none.
std::string hf_prefix(const ModelSpec& spec);
// The output layer's tensor, stored without the prefix: lm_head.weight, or a reward model's score.weight.
bool hf_head_tensor(const std::string& name);

// One of Hugging Face's linear layers as rows of one of hftrain's Dense layers.
struct HfLinear {
  std::string name;         // full module name, e.g. "model.layers.0.self_attn.q_proj", "lm_head"
  std::string dense;        // hftrain's module path, e.g. "layers.0.attn.qkv_proj"
  int64_t row_offset = 0;   // first output row in the Dense weight
  int64_t rows = 0;         // output features
  int64_t in_features = 0;
  bool conv1d = false;        // GPT-2's Conv1D (peft's fan_in_fan_out)
  bool output_layer = false;  // the output head: the language-model head, a classifier (RoBERTa's dense + out_proj)
};

// Every linear layer of the Hugging Face model, in parameter order. A tied head has none (it is
// the embedding).
std::vector<HfLinear> hf_linear_modules(const ModelSpec& spec);

// One of hftrain's parameters with the Hugging Face modules it holds (full names, e.g.
// "lm_head", "model.embed_tokens", "model.layers.0.self_attn.q_proj"), for peft.modules_to_save.
struct HfParameter {
  std::string param;                 // hftrain name, e.g. "lm_head.weight"
  std::vector<std::string> modules;  // Hugging Face modules whose tensors it holds
  std::vector<std::string> tensors;  // their full tensor names, in split order
  bool transpose = false;
  std::vector<int64_t> split{};
};
std::vector<HfParameter> hf_parameters(const ModelSpec& spec);

// The same two tables for a BERT encoder (model/encoder/bert.h), whose names are Hugging Face's own
// (BertForSequenceClassification's, "bert." prefix included): each linear layer is the Dense layer
// of its name, each parameter one tensor of the same name. The classifier counts as the output
// layer (LoRA leaves it to peft.modules_to_save, as peft's SEQ_CLS models do), and so do the heads
// below it, RoBERTa's classifier.dense and ModernBERT's head.dense: new weights, trained in full.
std::vector<HfLinear> hf_linear_modules(const BertSpec& spec);
std::vector<HfParameter> hf_parameters(const BertSpec& spec);

}  // namespace hftrain::model
