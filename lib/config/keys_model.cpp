// Config keys of run, model and tokenizer: what is trained, and where it goes. Each key enters together with the code
// that reads it (see keys.cpp).
#include "config/keys.h"

namespace hftrain::config {

void add_model_keys(Schema& s) {
  s.section("run", "Identity and output location of a run.", ResumeChange::kSafe);
  s.add("run.name", Type::kString, HFTRAIN_FIELD(run.name))
      .def("run").doc("Name of the run; used in the default output directory and in logs.");
  s.add("run.output_dir", Type::kString, HFTRAIN_FIELD(run.output_dir))
      .def("runs/${run.name}").doc("Directory for checkpoints, logs, metrics and config.yaml.");
  s.add("run.seed", Type::kInt, HFTRAIN_FIELD(run.seed))
      .on_resume(ResumeChange::kDataOrder)
      .def("1234").min(0).doc("Seed for initialisation, data order, dropout and sampling.");
  s.add("run.tags", Type::kStringMap, HFTRAIN_FIELD(run.tags))
      .def("{}").doc("Free-form labels stored with the run; add with +run.tags.NAME=VALUE.");
  s.add("run.export_hf", Type::kBool, HFTRAIN_FIELD(run.export_hf))
      .def("false")
      .doc("At the end, also write final-hf/: the final model in the Hugging Face layout (as `hftrain export`).");

  s.section("model", "The model: architecture family and shape, or a model directory to load.",
            ResumeChange::kImpossible);
  s.add("model.arch", Type::kChoice, HFTRAIN_FIELD(model.arch))
      .choices({"gpt2", "llama", "bert"})
      .def("gpt2")
      .doc(
          "Architecture family: gpt2 and llama are causal language models; bert is an encoder with a classifier "
          "(BERT's, RoBERTa's, ModernBERT's or DeBERTa-v2's, model.encoder), trained for sequence or token "
          "classification on "
          "labelled data (data.label_field).");
  s.add("model.task", Type::kChoice, HFTRAIN_FIELD(model.task))
      .choices({"sequence_classification", "token_classification"}).def("sequence_classification")
      .doc("bert: what the classifier labels: each sequence (data.label_field per record), or each word "
           "(token_classification: data.text_field lists the words, data.label_field their tags; entity-level "
           "precision, recall and F1 at each evaluation, as seqeval).");
  s.add("model.hf_family", Type::kChoice, HFTRAIN_FIELD(model.hf_family))
      .choices({"auto", "mistral"}).def("auto")
      .doc("llama: the Hugging Face family an export writes where the shape fits more than one: auto (by shape: a "
           "Llama block without biases and sliding windows is LlamaForCausalLM) or mistral (MistralForCausalLM "
           "while the block is Mistral's). Set from model.from's config.json, so a Mistral model exports as one.");
  s.add("model.encoder", Type::kChoice, HFTRAIN_FIELD(model.encoder))
      .choices({"bert", "roberta", "modernbert", "deberta-v2"}).def("bert")
      .doc("bert: the encoder's family: bert (BertForSequenceClassification: positions from 0, a pooler, a linear "
           "classifier), roberta (RobertaForSequenceClassification: positions counted from the padding id + 1 over "
           "the non-padding tokens, a dense + tanh + linear head on the first token) or modernbert "
           "(ModernBertForSequenceClassification: pre-norm layers without biases, RoPE, GeGLU, every third layer "
           "global and the others attending 64 tokens either side, a dense + GELU + LayerNorm head on the first "
           "token; a new one takes ModernBertConfig's defaults for what model.* does not set) or deberta-v2 "
           "(DebertaV2ForSequenceClassification: disentangled attention over log-bucketed relative positions, a "
           "dense + GELU pooler on the first token; a new one has DeBERTa-v3's structure: buckets half of "
           "model.max_seq_len (at most 256), shared position keys, no absolute positions).");
  s.add("model.from", Type::kString, HFTRAIN_FIELD(model.from))
      .nullable()
      .doc(
          "Start from the weights of a model directory of the same shape: hftrain's (a run's final/ or checkpoint-N/) "
          "or Hugging Face's (config.json + safetensors, sharded or not: GPT-2, Llama, Mistral, Qwen2, Qwen3, OLMo 2, "
          "Phi-3, Gemma 2, Gemma 3, Mixtral, Qwen2-MoE, Qwen3-MoE; BERT, RoBERTa, XLM-RoBERTa, ModernBERT and "
          "DeBERTa-v2/v3 encoders).");
  s.add("model.n_layer", Type::kInt, HFTRAIN_FIELD(model.n_layer))
      .def("12").min(1).max(1024).doc("Number of transformer blocks.");
  s.add("model.n_head", Type::kInt, HFTRAIN_FIELD(model.n_head))
      .def("12").min(1).max(1024).doc("Attention heads per block.");
  s.add("model.d_model", Type::kInt, HFTRAIN_FIELD(model.d_model))
      .def("768").min(1).max(1 << 20).doc("Hidden size; divisible by model.n_head unless model.head_dim is set.");
  s.add("model.max_seq_len", Type::kInt, HFTRAIN_FIELD(model.max_seq_len))
      .def("1024").min(1).max(1 << 24).unit("tokens").doc("Longest sequence the model accepts.");
  s.add("model.vocab_size", Type::kInt, HFTRAIN_FIELD(model.vocab_size))
      .def("50257").min(1).max(1 << 24).unit("tokens").doc("Vocabulary size (embedding rows).");
  s.add("model.n_kv_head", Type::kInt, HFTRAIN_FIELD(model.n_kv_head))
      .nullable().min(1).max(1024).doc("Key/value heads (grouped-query attention); unset: model.n_head.");
  s.add("model.d_ff", Type::kInt, HFTRAIN_FIELD(model.d_ff))
      .nullable().min(1).max(1 << 22)
      .doc("MLP hidden size; unset: 4 x d_model (gpt2), 8/3 x d_model rounded up to 64 (llama).");
  s.add("model.head_dim", Type::kInt, HFTRAIN_FIELD(model.head_dim))
      .nullable()
      .min(2)
      .max(1 << 16)
      .doc(
          "llama: size of one attention head, when not d_model / n_head (Mistral-NeMo, Qwen3: q/k/v are n_head x "
          "head_dim wide); unset: d_model / n_head.");
  s.add("model.qk_norm", Type::kChoice, HFTRAIN_FIELD(model.qk_norm))
      .choices({"none", "head", "projection"})
      .def("none")
      .doc(
          "llama: normalise queries and keys before RoPE: none, head (an RMSNorm over each head, weights shared by the "
          "heads, as Qwen3), or projection (an RMSNorm over all of q and all of k, as OLMo 2).");
  s.add("model.norm_placement", Type::kChoice, HFTRAIN_FIELD(model.norm_placement))
      .choices({"pre", "post", "sandwich"})
      .def("pre")
      .doc(
          "llama: where each block normalises: pre (each sublayer's input, as Llama), post (each sublayer's output, "
          "before the residual add, as OLMo 2), or sandwich (both, as Gemma 2).");
  s.add("model.partial_rotary_factor", Type::kFloat, HFTRAIN_FIELD(model.partial_rotary_factor))
      .def("1.0")
      .min(0.01)
      .max(1)
      .doc(
          "llama: RoPE rotates the first head_dim x this dimensions of each head and passes the rest through "
          "(Phi-4-mini: 0.75).");
  s.add("model.fused_projections", Type::kBool, HFTRAIN_FIELD(model.fused_projections))
      .def("false")
      .doc(
          "llama: the Hugging Face model holds q/k/v as one qkv_proj tensor and gate/up as one gate_up_proj (Phi-3, "
          "exported as Phi3ForCausalLM); the names, not the computation.");
  s.add("model.activation", Type::kChoice, HFTRAIN_FIELD(model.activation))
      .choices({"silu", "gelu_tanh"})
      .def("silu")
      .doc(
          "llama: the gated MLP's activation: silu (SwiGLU, as Llama) or gelu_tanh (GeGLU with the tanh GELU, as "
          "Gemma).");
  s.add("model.norm_unit_offset", Type::kBool, HFTRAIN_FIELD(model.norm_unit_offset))
      .def("false")
      .doc("llama: every RMSNorm scales by 1 + weight, and its weights start at 0 (Gemma).");
  s.add("model.scale_embeddings", Type::kBool, HFTRAIN_FIELD(model.scale_embeddings))
      .def("false")
      .doc("llama: multiply the token embeddings by sqrt(d_model), rounded to the weights' dtype (Gemma).");
  s.add("model.query_pre_attn_scalar", Type::kFloat, HFTRAIN_FIELD(model.query_pre_attn_scalar))
      .nullable().min(1e-6)
      .doc("llama: attention scores are scaled by this^-1/2 (Gemma's query_pre_attn_scalar); unset: head_dim.");
  s.add("model.attn_logit_softcapping", Type::kFloat, HFTRAIN_FIELD(model.attn_logit_softcapping))
      .nullable()
      .min(1e-6)
      .doc(
          "llama: attention scores become cap x tanh(score / cap) before the softmax (Gemma 2: 50); unset: none. "
          "Attention then runs unfused.");
  s.add("model.final_logit_softcapping", Type::kFloat, HFTRAIN_FIELD(model.final_logit_softcapping))
      .nullable()
      .min(1e-6)
      .doc(
          "llama: output logits become cap x tanh(logit / cap), in the loss and in generation (Gemma 2: 30); unset: "
          "none.");
  s.add("model.sliding_window", Type::kInt, HFTRAIN_FIELD(model.sliding_window))
      .nullable()
      .min(1)
      .max(1 << 24)
      .unit("tokens")
      .doc(
          "llama: sliding layers attend to the last this-many positions, their own included (Mistral, Gemma); unset: "
          "every layer attends to all.");
  s.add("model.sliding_window_pattern", Type::kInt, HFTRAIN_FIELD(model.sliding_window_pattern))
      .def("0")
      .min(0)
      .max(1024)
      .doc(
          "llama, with model.sliding_window: layers N, 2N, ... (counting from 1) attend globally and the others slide "
          "(Gemma 2: 2, Gemma 3: 6); 0: every layer slides (Mistral).");
  s.add("model.rope_local_theta", Type::kFloat, HFTRAIN_FIELD(model.rope_local_theta))
      .nullable()
      .min(1)
      .doc(
          "llama: RoPE base of the sliding layers, without RoPE scaling (Gemma 3's rope_local_base_freq); unset: they "
          "rotate as the global layers.");
  s.add("model.n_experts", Type::kInt, HFTRAIN_FIELD(model.n_experts))
      .def("0")
      .min(0)
      .max(1024)
      .doc(
          "llama: experts of a mixture-of-experts MLP (Mixtral, Qwen2-MoE, Qwen3-MoE): a router picks "
          "model.experts_per_token of them per token; 0: a dense MLP.");
  s.add("model.experts_per_token", Type::kInt, HFTRAIN_FIELD(model.experts_per_token))
      .def("2").min(1).max(1024).doc("llama, MoE: experts each token is computed by (top-k of the router's softmax).");
  s.add("model.expert_d_ff", Type::kInt, HFTRAIN_FIELD(model.expert_d_ff))
      .nullable()
      .min(1)
      .max(1 << 22)
      .doc("llama, MoE: one expert's hidden size (Qwen3-MoE's moe_intermediate_size); unset: model.d_ff.");
  s.add("model.moe_renormalize", Type::kBool, HFTRAIN_FIELD(model.moe_renormalize))
      .def("true")
      .doc(
          "llama, MoE: rescale each token's top-k router weights to sum to 1 (Mixtral always; Qwen3-MoE's "
          "norm_topk_prob).");
  s.add("model.moe_every", Type::kInt, HFTRAIN_FIELD(model.moe_every))
      .def("1")
      .min(1)
      .max(1024)
      .doc(
          "llama, MoE: layers N, 2N, ... (counting from 1) are mixtures of experts and the others dense MLPs of "
          "model.d_ff (Qwen3-MoE's decoder_sparse_step).");
  s.add("model.shared_expert_d_ff", Type::kInt, HFTRAIN_FIELD(model.shared_expert_d_ff))
      .def("0")
      .min(0)
      .max(1 << 22)
      .doc(
          "llama, MoE: hidden size of a shared expert that computes every token beside the routed ones, scaled by a "
          "sigmoid gate (Qwen2-MoE's shared_expert_intermediate_size); 0: none.");
  s.add("model.router_aux_loss_coef", Type::kFloat, HFTRAIN_FIELD(model.router_aux_loss_coef))
      .on_resume(ResumeChange::kTraining)
      .def("0.0")
      .min(0)
      .max(100)
      .doc(
          "llama, MoE: the training loss adds this times the routers' load-balancing loss, as transformers does with "
          "output_router_logits (Mixtral, Qwen3-MoE: 0.001); logged as aux_loss; 0: none.");
  s.add("model.rope_theta", Type::kFloat, HFTRAIN_FIELD(model.rope_theta))
      .def("10000.0").min(1).doc("llama: RoPE base frequency.");
  s.add("model.rope_scaling.type", Type::kChoice, HFTRAIN_FIELD(model.rope_scaling.type))
      .choices({"default", "linear", "dynamic", "llama3", "yarn", "longrope"})
      .def("default")
      .doc(
          "llama: RoPE scaling as transformers' rope_type: default (none), linear, dynamic (NTK; no change up to "
          "max_seq_len), llama3, yarn, longrope (Phi-3, Phi-4-mini).");
  s.add("model.rope_scaling.factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.factor))
      .def("1.0")
      .min(1)
      .max(1 << 20)
      .doc(
          "llama: RoPE scaling factor (linear, dynamic, llama3, yarn; longrope: only for its default attention_factor, "
          "and 1 means max_seq_len / original_max_seq_len).");
  s.add("model.rope_scaling.original_max_seq_len", Type::kInt, HFTRAIN_FIELD(model.rope_scaling.original_max_seq_len))
      .nullable()
      .min(1)
      .max(1 << 24)
      .unit("tokens")
      .doc(
          "llama3, yarn, longrope: the context length before scaling (original_max_position_embeddings; longrope "
          "switches from short_factor to long_factor past it); unset: model.max_seq_len.");
  s.add("model.rope_scaling.low_freq_factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.low_freq_factor))
      .def("1.0").min(0).doc("llama3: wavelengths above original_max_seq_len / this are divided by the factor.");
  s.add("model.rope_scaling.high_freq_factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.high_freq_factor))
      .def("4.0").min(0).doc("llama3: wavelengths below original_max_seq_len / this are kept; between, interpolated.");
  s.add("model.rope_scaling.beta_fast", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.beta_fast))
      .def("32.0").min(0).doc("yarn: rotations that bound the extrapolated (unscaled) dimensions.");
  s.add("model.rope_scaling.beta_slow", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.beta_slow))
      .def("1.0").min(0).doc("yarn: rotations that bound the interpolated (scaled) dimensions.");
  s.add("model.rope_scaling.attention_factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.attention_factor))
      .nullable()
      .min(0)
      .doc(
          "yarn, longrope: scale of cos/sin (attention temperature); unset: 0.1 ln(factor) + 1 (yarn), sqrt(1 + "
          "ln(factor) / ln(original_max_seq_len)) (longrope).");
  s.add("model.rope_scaling.truncate", Type::kBool, HFTRAIN_FIELD(model.rope_scaling.truncate))
      .def("true").doc("yarn: round the correction range to whole dimensions.");
  s.add("model.rope_scaling.short_factor", Type::kFloatList, HFTRAIN_FIELD(model.rope_scaling.short_factor))
      .def("[]")
      .min(1e-6)
      .doc(
          "longrope: divisor of each rotated pair's frequency (rotary_dim / 2 of them) while the sequence is at most "
          "original_max_seq_len.");
  s.add("model.rope_scaling.long_factor", Type::kFloatList, HFTRAIN_FIELD(model.rope_scaling.long_factor))
      .def("[]")
      .min(1e-6)
      .doc(
          "longrope: the same divisors once the sequence (its last position + 1) is longer than original_max_seq_len.");
  s.add("model.norm_eps", Type::kFloat, HFTRAIN_FIELD(model.norm_eps))
      .nullable().min(0).max(1).doc("Normalisation epsilon; unset: 1e-5 (gpt2), 1e-6 (llama).");
  s.add("model.dropout", Type::kFloat, HFTRAIN_FIELD(model.dropout))
      .on_resume(ResumeChange::kTraining)
      .def("0.0").min(0).max(0.99).doc("Dropout on embeddings, attention weights and residual branches.");
  s.add("model.tie_embeddings", Type::kBool, HFTRAIN_FIELD(model.tie_embeddings))
      .nullable().doc("Share the input embedding with the output head; unset: true (gpt2), false (llama).");
  s.add("model.attention_bias", Type::kChoice, HFTRAIN_FIELD(model.attention_bias))
      .nullable()
      .choices({"none", "qkv", "all"})
      .doc(
          "Attention biases: none, qkv (query/key/value, as Qwen2), all (also the output projection); unset: all "
          "(gpt2), none (llama).");
  s.add("model.mlp_bias", Type::kBool, HFTRAIN_FIELD(model.mlp_bias))
      .nullable().doc("Biases in the MLP projections; unset: true (gpt2), false (llama).");
  s.add("model.init_std", Type::kFloat, HFTRAIN_FIELD(model.init_std))
      .def("0.02").min(0).max(1)
      .doc("Standard deviation of the random initialisation (gpt2 scales residual projections by 1/sqrt(2 n_layer)).");
  s.add("model.activation_checkpointing", Type::kBool, HFTRAIN_FIELD(model.activation_checkpointing))
      .on_resume(ResumeChange::kSafe)
      .def("false")
      .doc("Recompute each block's activations in the backward pass: less memory, about a third more compute.");

  s.section("tokenizer", "How text becomes token ids.", ResumeChange::kImpossible);
  s.add("tokenizer.type", Type::kChoice, HFTRAIN_FIELD(tokenizer.type))
      .choices({"byte", "bpe", "hf"}).def("byte")
      .doc("byte: 256 byte tokens plus specials; bpe: hftrain's own byte-level BPE; hf: a tokenizer.json.");
  s.add("tokenizer.path", Type::kString, HFTRAIN_FIELD(tokenizer.path))
      .nullable().doc("tokenizer.json to load (bpe, hf).");
  s.add("tokenizer.eos_token", Type::kString, HFTRAIN_FIELD(tokenizer.eos_token))
      .nullable()
      .doc("The token that ends every document (e.g. <|im_end|>); unset: the tokenizer's own, from "
           "tokenizer_config.json next to the file, its post-processor, or a well-known name.");
  s.add("tokenizer.pad_token", Type::kString, HFTRAIN_FIELD(tokenizer.pad_token))
      .nullable().doc("The padding token; unset: the tokenizer's own, else the end-of-text token.");
}

}  // namespace hftrain::config
