// hftrain's config keys: the one place each is declared. A key enters this file together with
// the code that reads it, so that no key is ever accepted and then ignored.
#include "config/schema.h"

namespace hftrain::config {
namespace {

#define HFTRAIN_FIELD(member) [](auto& c) -> auto& { return c.member; }

Schema build() {
  Schema s;

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
      .def("false").doc("At the end, also write final-hf/: the final model in the Hugging Face layout (as `hftrain export`).");

  s.section("model", "The model: architecture family and shape, or a model directory to load.", ResumeChange::kImpossible);
  s.add("model.arch", Type::kChoice, HFTRAIN_FIELD(model.arch))
      .choices({"gpt2", "llama", "bert"}).def("gpt2")
      .doc("Architecture family: gpt2 and llama are causal language models; bert is an encoder with a classifier, "
           "trained for sequence classification on labelled data (data.label_field).");
  s.add("model.from", Type::kString, HFTRAIN_FIELD(model.from))
      .nullable().doc("Start from the weights of a model directory of the same shape: hftrain's (a run's final/ or checkpoint-N/) or Hugging Face's (config.json + safetensors, sharded or not: GPT-2, Llama, Mistral, Qwen2, Qwen3, OLMo 2, Phi-3, Gemma 2, Gemma 3, Mixtral, Qwen3-MoE).");
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
      .nullable().min(2).max(1 << 16)
      .doc("llama: size of one attention head, when not d_model / n_head (Mistral-NeMo, Qwen3: q/k/v are n_head x head_dim wide); unset: d_model / n_head.");
  s.add("model.qk_norm", Type::kChoice, HFTRAIN_FIELD(model.qk_norm))
      .choices({"none", "head", "projection"}).def("none")
      .doc("llama: normalise queries and keys before RoPE: none, head (an RMSNorm over each head, weights shared by the heads, as Qwen3), or projection (an RMSNorm over all of q and all of k, as OLMo 2).");
  s.add("model.norm_placement", Type::kChoice, HFTRAIN_FIELD(model.norm_placement))
      .choices({"pre", "post", "sandwich"}).def("pre")
      .doc("llama: where each block normalises: pre (each sublayer's input, as Llama), post (each sublayer's output, before the residual add, as OLMo 2), or sandwich (both, as Gemma 2).");
  s.add("model.partial_rotary_factor", Type::kFloat, HFTRAIN_FIELD(model.partial_rotary_factor))
      .def("1.0").min(0.01).max(1)
      .doc("llama: RoPE rotates the first head_dim x this dimensions of each head and passes the rest through (Phi-4-mini: 0.75).");
  s.add("model.fused_projections", Type::kBool, HFTRAIN_FIELD(model.fused_projections))
      .def("false")
      .doc("llama: the Hugging Face model holds q/k/v as one qkv_proj tensor and gate/up as one gate_up_proj (Phi-3, exported as Phi3ForCausalLM); the names, not the computation.");
  s.add("model.activation", Type::kChoice, HFTRAIN_FIELD(model.activation))
      .choices({"silu", "gelu_tanh"}).def("silu")
      .doc("llama: the gated MLP's activation: silu (SwiGLU, as Llama) or gelu_tanh (GeGLU with the tanh GELU, as Gemma).");
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
      .nullable().min(1e-6)
      .doc("llama: attention scores become cap x tanh(score / cap) before the softmax (Gemma 2: 50); unset: none. Attention then runs unfused.");
  s.add("model.final_logit_softcapping", Type::kFloat, HFTRAIN_FIELD(model.final_logit_softcapping))
      .nullable().min(1e-6)
      .doc("llama: output logits become cap x tanh(logit / cap), in the loss and in generation (Gemma 2: 30); unset: none.");
  s.add("model.sliding_window", Type::kInt, HFTRAIN_FIELD(model.sliding_window))
      .nullable().min(1).max(1 << 24).unit("tokens")
      .doc("llama: sliding layers attend to the last this-many positions, their own included (Mistral, Gemma); unset: every layer attends to all.");
  s.add("model.sliding_window_pattern", Type::kInt, HFTRAIN_FIELD(model.sliding_window_pattern))
      .def("0").min(0).max(1024)
      .doc("llama, with model.sliding_window: layers N, 2N, ... (counting from 1) attend globally and the others slide (Gemma 2: 2, Gemma 3: 6); 0: every layer slides (Mistral).");
  s.add("model.rope_local_theta", Type::kFloat, HFTRAIN_FIELD(model.rope_local_theta))
      .nullable().min(1)
      .doc("llama: RoPE base of the sliding layers, without RoPE scaling (Gemma 3's rope_local_base_freq); unset: they rotate as the global layers.");
  s.add("model.n_experts", Type::kInt, HFTRAIN_FIELD(model.n_experts))
      .def("0").min(0).max(1024)
      .doc("llama: experts of a mixture-of-experts MLP (Mixtral, Qwen3-MoE): a router picks model.experts_per_token of them per token; 0: a dense MLP.");
  s.add("model.experts_per_token", Type::kInt, HFTRAIN_FIELD(model.experts_per_token))
      .def("2").min(1).max(1024).doc("llama, MoE: experts each token is computed by (top-k of the router's softmax).");
  s.add("model.expert_d_ff", Type::kInt, HFTRAIN_FIELD(model.expert_d_ff))
      .nullable().min(1).max(1 << 22).doc("llama, MoE: one expert's hidden size (Qwen3-MoE's moe_intermediate_size); unset: model.d_ff.");
  s.add("model.moe_renormalize", Type::kBool, HFTRAIN_FIELD(model.moe_renormalize))
      .def("true").doc("llama, MoE: rescale each token's top-k router weights to sum to 1 (Mixtral always; Qwen3-MoE's norm_topk_prob).");
  s.add("model.moe_every", Type::kInt, HFTRAIN_FIELD(model.moe_every))
      .def("1").min(1).max(1024)
      .doc("llama, MoE: layers N, 2N, ... (counting from 1) are mixtures of experts and the others dense MLPs of model.d_ff (Qwen3-MoE's decoder_sparse_step).");
  s.add("model.router_aux_loss_coef", Type::kFloat, HFTRAIN_FIELD(model.router_aux_loss_coef))
      .on_resume(ResumeChange::kTraining)
      .def("0.0").min(0).max(100)
      .doc("llama, MoE: the training loss adds this times the routers' load-balancing loss, as transformers does with output_router_logits (Mixtral, Qwen3-MoE: 0.001); logged as aux_loss; 0: none.");
  s.add("model.rope_theta", Type::kFloat, HFTRAIN_FIELD(model.rope_theta))
      .def("10000.0").min(1).doc("llama: RoPE base frequency.");
  s.add("model.rope_scaling.type", Type::kChoice, HFTRAIN_FIELD(model.rope_scaling.type))
      .choices({"default", "linear", "dynamic", "llama3", "yarn", "longrope"}).def("default")
      .doc("llama: RoPE scaling as transformers' rope_type: default (none), linear, dynamic (NTK; no change up to max_seq_len), llama3, yarn, longrope (Phi-3, Phi-4-mini).");
  s.add("model.rope_scaling.factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.factor))
      .def("1.0").min(1).max(1 << 20).doc("llama: RoPE scaling factor (linear, dynamic, llama3, yarn; longrope: only for its default attention_factor, and 1 means max_seq_len / original_max_seq_len).");
  s.add("model.rope_scaling.original_max_seq_len", Type::kInt, HFTRAIN_FIELD(model.rope_scaling.original_max_seq_len))
      .nullable().min(1).max(1 << 24).unit("tokens")
      .doc("llama3, yarn, longrope: the context length before scaling (original_max_position_embeddings; longrope switches from short_factor to long_factor past it); unset: model.max_seq_len.");
  s.add("model.rope_scaling.low_freq_factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.low_freq_factor))
      .def("1.0").min(0).doc("llama3: wavelengths above original_max_seq_len / this are divided by the factor.");
  s.add("model.rope_scaling.high_freq_factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.high_freq_factor))
      .def("4.0").min(0).doc("llama3: wavelengths below original_max_seq_len / this are kept; between, interpolated.");
  s.add("model.rope_scaling.beta_fast", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.beta_fast))
      .def("32.0").min(0).doc("yarn: rotations that bound the extrapolated (unscaled) dimensions.");
  s.add("model.rope_scaling.beta_slow", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.beta_slow))
      .def("1.0").min(0).doc("yarn: rotations that bound the interpolated (scaled) dimensions.");
  s.add("model.rope_scaling.attention_factor", Type::kFloat, HFTRAIN_FIELD(model.rope_scaling.attention_factor))
      .nullable().min(0).doc("yarn, longrope: scale of cos/sin (attention temperature); unset: 0.1 ln(factor) + 1 (yarn), sqrt(1 + ln(factor) / ln(original_max_seq_len)) (longrope).");
  s.add("model.rope_scaling.truncate", Type::kBool, HFTRAIN_FIELD(model.rope_scaling.truncate))
      .def("true").doc("yarn: round the correction range to whole dimensions.");
  s.add("model.rope_scaling.short_factor", Type::kFloatList, HFTRAIN_FIELD(model.rope_scaling.short_factor))
      .def("[]").min(1e-6)
      .doc("longrope: divisor of each rotated pair's frequency (rotary_dim / 2 of them) while the sequence is at most original_max_seq_len.");
  s.add("model.rope_scaling.long_factor", Type::kFloatList, HFTRAIN_FIELD(model.rope_scaling.long_factor))
      .def("[]").min(1e-6)
      .doc("longrope: the same divisors once the sequence (its last position + 1) is longer than original_max_seq_len.");
  s.add("model.norm_eps", Type::kFloat, HFTRAIN_FIELD(model.norm_eps))
      .nullable().min(0).max(1).doc("Normalisation epsilon; unset: 1e-5 (gpt2), 1e-6 (llama).");
  s.add("model.dropout", Type::kFloat, HFTRAIN_FIELD(model.dropout))
      .on_resume(ResumeChange::kTraining)
      .def("0.0").min(0).max(0.99).doc("Dropout on embeddings, attention weights and residual branches.");
  s.add("model.tie_embeddings", Type::kBool, HFTRAIN_FIELD(model.tie_embeddings))
      .nullable().doc("Share the input embedding with the output head; unset: true (gpt2), false (llama).");
  s.add("model.attention_bias", Type::kChoice, HFTRAIN_FIELD(model.attention_bias))
      .nullable().choices({"none", "qkv", "all"})
      .doc("Attention biases: none, qkv (query/key/value, as Qwen2), all (also the output projection); unset: all (gpt2), none (llama).");
  s.add("model.mlp_bias", Type::kBool, HFTRAIN_FIELD(model.mlp_bias))
      .nullable().doc("Biases in the MLP projections; unset: true (gpt2), false (llama).");
  s.add("model.init_std", Type::kFloat, HFTRAIN_FIELD(model.init_std))
      .def("0.02").min(0).max(1)
      .doc("Standard deviation of the random initialisation (gpt2 scales residual projections by 1/sqrt(2 n_layer)).");
  s.add("model.activation_checkpointing", Type::kBool, HFTRAIN_FIELD(model.activation_checkpointing))
      .on_resume(ResumeChange::kSafe)
      .def("false").doc("Recompute each block's activations in the backward pass: less memory, about a third more compute.");

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

  s.section("data", "Training and validation data.", ResumeChange::kDataOrder);
  s.add("data.train", Type::kSourceList, HFTRAIN_FIELD(data.train))
      .def("[]")
      .doc("Training sources: files, folders or globs, or mappings {path, weight, name, format, text_field, ...}; "
           "with weights, samples are drawn from each source in proportion to its weight.");
  s.add("data.validation", Type::kSourceList, HFTRAIN_FIELD(data.validation))
      .def("[]").doc("Validation sources, as data.train (no weights); several are evaluated one by one.");
  s.add("data.seq_len", Type::kInt, HFTRAIN_FIELD(data.seq_len))
      .def("${model.max_seq_len}").min(1).unit("tokens")
      .doc("Tokens per training sequence; at most model.max_seq_len.");
  s.add("data.validation_fraction", Type::kFloat, HFTRAIN_FIELD(data.validation_fraction))
      .def("0.0").min(0).max(0.5).doc("Without data.validation: the share of training documents held out for validation.");
  s.add("data.format", Type::kChoice, HFTRAIN_FIELD(data.format))
      .choices({"auto", "text", "jsonl", "chat", "tokens"}).def("auto")
      .doc("Source format; auto goes by extension: .jsonl/.json JSONL, .bin token shards, else text.");
  s.add("data.exclude", Type::kStringList, HFTRAIN_FIELD(data.exclude))
      .def("[]").doc("File-name globs to skip, e.g. ['*.dat', '*.u8'] for fortune folders.");
  s.add("data.separator", Type::kString, HFTRAIN_FIELD(data.separator))
      .def("''").doc("Text files: a line equal to this ends a document ('%' for fortunes); '' = one document per file.");
  s.add("data.text_field", Type::kString, HFTRAIN_FIELD(data.text_field))
      .def("text").doc("JSONL: the text field; classification (model.arch=bert): the text column or field.");
  s.add("data.text_pair_field", Type::kString, HFTRAIN_FIELD(data.text_pair_field))
      .def("''").doc("Classification: the column or field of a pair's second text (e.g. sentence2); empty for single texts.");
  s.add("data.label_field", Type::kString, HFTRAIN_FIELD(data.label_field))
      .def("label").doc("Classification: the label column or field (names or integer class ids).");
  s.add("data.prompt_field", Type::kString, HFTRAIN_FIELD(data.prompt_field)).def("prompt").doc("Chat JSONL: the prompt field (no loss).");
  s.add("data.response_field", Type::kString, HFTRAIN_FIELD(data.response_field))
      .def("response").doc("Chat JSONL: the response field (carries the loss).");
  s.add("data.messages_field", Type::kString, HFTRAIN_FIELD(data.messages_field))
      .def("messages").doc("Chat JSONL: a list of {role, content}; only assistant turns carry loss.");
  s.add("data.chat_template", Type::kString, HFTRAIN_FIELD(data.chat_template))
      .def("auto")
      .doc("How chat records are rendered: auto (the tokenizer's own chat template, from chat_template.jinja or "
           "tokenizer_config.json beside tokenizer.path, else hftrain), hftrain (its own <|role|> lines), chatml, or "
           "a Jinja file / tokenizer_config.json / model directory.");
  s.add("data.token_dtype", Type::kChoice, HFTRAIN_FIELD(data.token_dtype))
      .choices({"uint16", "uint32"}).def("uint16").doc("Token shards without an llm.c header: the token width.");
  s.add("data.packing", Type::kChoice, HFTRAIN_FIELD(data.packing))
      .choices({"pack", "pad"}).def("pack")
      .doc("pack: documents joined by end-of-text into full blocks; pad: one document per row, padded.");
  s.add("data.document_mask", Type::kBool, HFTRAIN_FIELD(data.document_mask))
      .nullable()
      .doc("pack: keep packed documents apart (positions restart at each document, attention and targets "
           "never cross a boundary); unset: true when every training source is JSONL or chat, else false.");
  s.add("data.pad_to_multiple_of", Type::kInt, HFTRAIN_FIELD(data.pad_to_multiple_of))
      .def("1").min(1).max(4096).doc("pad: round the batch length up to a multiple of this.");
  s.add("data.shuffle", Type::kBool, HFTRAIN_FIELD(data.shuffle)).def("true").doc("Shuffle the sample order every epoch.");
  s.add("data.prefetch_batches", Type::kInt, HFTRAIN_FIELD(data.prefetch_batches))
      .on_resume(ResumeChange::kSafe)
      .def("4").min(0).max(1024).doc("Batches prepared ahead by background threads; 0 loads synchronously.");
  s.add("data.num_workers", Type::kInt, HFTRAIN_FIELD(data.num_workers))
      .on_resume(ResumeChange::kSafe)
      .def("2").min(1).max(256).doc("Threads preparing batches, and encoding text into the token cache.");
  s.add("data.cache", Type::kBool, HFTRAIN_FIELD(data.cache))
      .on_resume(ResumeChange::kSafe)
      .def("true").doc("Cache tokenized text on disk so that the next run starts at once.");
  s.add("data.cache_dir", Type::kString, HFTRAIN_FIELD(data.cache_dir))
      .on_resume(ResumeChange::kSafe)
      .def("''").doc("Token cache folder; '' = $HFTRAIN_CACHE_DIR, else ~/.cache/hftrain/tokens.");

  s.section("optimizer", "The optimizer.", ResumeChange::kTraining);
  s.add("optimizer.name", Type::kChoice, HFTRAIN_FIELD(optimizer.name))
      .on_resume(ResumeChange::kImpossible)
      .choices({"adamw", "sgd", "adafactor", "lion", "adamw_8bit", "adagrad", "rmsprop", "schedule_free_adamw",
                "galore_adamw"})
      .def("adamw")
      .doc("Optimizer. adamw_8bit: AdamW with block-wise 8-bit moments as bitsandbytes' AdamW8bit (blocks of 256, "
           "parameters under 4096 elements keep fp32 moments), about a quarter of adamw's state. adagrad, rmsprop: "
           "torch.optim's rules, weight decay added to the gradient (L2) as theirs. schedule_free_adamw: the "
           "schedulefree package's AdamWScheduleFree, no schedule (scheduler.name=constant; its warmup is "
           "optimizer.schedule_free.warmup_steps); evaluation and saved weights use its averaged point. galore_adamw: AdamW on gradients projected to a low "
           "rank per weight matrix (optimizer.galore.*), as galore_torch's GaLoreAdamW.");
  s.add("optimizer.lr", Type::kFloat, HFTRAIN_FIELD(optimizer.lr))
      .def("3.0e-4").min(0).max(10).doc("Peak learning rate.");
  s.add("optimizer.weight_decay", Type::kFloat, HFTRAIN_FIELD(optimizer.weight_decay))
      .def("0.0").min(0).max(10).doc("Weight decay: decoupled (adamw, lion, adafactor), added to the gradient (sgd, adagrad, rmsprop).");
  s.add("optimizer.beta1", Type::kFloat, HFTRAIN_FIELD(optimizer.beta1))
      .nullable().min(0).max(0.999999).doc("adamw and its variants, lion: first-moment decay; unset: 0.9.");
  s.add("optimizer.beta2", Type::kFloat, HFTRAIN_FIELD(optimizer.beta2))
      .nullable().min(0).max(0.999999).doc("adamw and its variants, lion: second-moment decay; unset: 0.999 (adamw), 0.99 (lion).");
  s.add("optimizer.eps", Type::kFloat, HFTRAIN_FIELD(optimizer.eps))
      .def("1.0e-8").min(0).max(1).doc("adamw and its variants, adagrad, rmsprop: added to the denominator (torch.optim.Adagrad's own default is 1e-10).");
  s.add("optimizer.momentum", Type::kFloat, HFTRAIN_FIELD(optimizer.momentum))
      .def("0.0").min(0).max(0.999999).doc("sgd, rmsprop: momentum.");
  s.add("optimizer.nesterov", Type::kBool, HFTRAIN_FIELD(optimizer.nesterov))
      .def("false").doc("sgd: Nesterov momentum (needs optimizer.momentum > 0).");
  s.add("optimizer.no_decay", Type::kStringList, HFTRAIN_FIELD(optimizer.no_decay))
      .def("['*.bias', '*norm.weight', 'embed_*.weight']")
      .doc("Parameter-name globs that get no weight decay: biases, norms and embeddings by default.");
  s.add("optimizer.group_lr", Type::kFloatMap, HFTRAIN_FIELD(optimizer.group_lr))
      .def("{}").min(0).max(10)
      .doc("Own learning rates by parameter-name glob, e.g. {'lm_head.*': 1e-4}; a name may match one glob.");
  s.add("optimizer.group_weight_decay", Type::kFloatMap, HFTRAIN_FIELD(optimizer.group_weight_decay))
      .def("{}").min(0).max(10)
      .doc("Own weight decay by parameter-name glob (overrides optimizer.no_decay for those names).");
  s.add("optimizer.adafactor.beta1", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.beta1))
      .nullable().min(0).max(0.999999).doc("adafactor: first-moment decay; unset keeps no first moment.");
  s.add("optimizer.adafactor.decay_rate", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.decay_rate))
      .def("-0.8").min(-1).max(0).doc("adafactor: beta2 at step t is 1 - t^decay_rate.");
  s.add("optimizer.adafactor.clip_threshold", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.clip_threshold))
      .def("1.0").min(0).doc("adafactor: clip the update's RMS to this.");
  s.add("optimizer.adafactor.eps1", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.eps1))
      .def("1.0e-30").min(0).max(1).doc("adafactor: added to the squared gradient.");
  s.add("optimizer.adafactor.eps2", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.eps2))
      .def("1.0e-3").min(0).max(1).doc("adafactor: floor of the parameter scale (with scale_parameter).");
  s.add("optimizer.adafactor.scale_parameter", Type::kBool, HFTRAIN_FIELD(optimizer.adafactor.scale_parameter))
      .def("false").doc("adafactor: scale the step by the parameter's RMS (the Trainer's default is false).");
  s.add("optimizer.adagrad.lr_decay", Type::kFloat, HFTRAIN_FIELD(optimizer.adagrad.lr_decay))
      .def("0.0").min(0).max(1).doc("adagrad: the step's lr is lr / (1 + (t - 1) lr_decay) at the parameter's step t.");
  s.add("optimizer.adagrad.initial_accumulator_value", Type::kFloat,
        HFTRAIN_FIELD(optimizer.adagrad.initial_accumulator_value))
      .on_resume(ResumeChange::kImpossible)
      .def("0.0").min(0).max(1e6).doc("adagrad: the sum of squared gradients starts here.");
  s.add("optimizer.rmsprop.alpha", Type::kFloat, HFTRAIN_FIELD(optimizer.rmsprop.alpha))
      .def("0.99").min(0).max(0.999999).doc("rmsprop: smoothing constant of the squared-gradient average.");
  s.add("optimizer.rmsprop.centered", Type::kBool, HFTRAIN_FIELD(optimizer.rmsprop.centered))
      .on_resume(ResumeChange::kImpossible)
      .def("false").doc("rmsprop: divide by the gradient's estimated variance (keeps a grad_avg per parameter).");
  s.add("optimizer.schedule_free.warmup_steps", Type::kInt, HFTRAIN_FIELD(optimizer.schedule_free.warmup_steps))
      .def("0").min(0).unit("steps").doc("schedule_free_adamw: linear warmup of its lr (its own; the schedule stays constant).");
  s.add("optimizer.schedule_free.r", Type::kFloat, HFTRAIN_FIELD(optimizer.schedule_free.r))
      .def("0.0").min(0).max(100).doc("schedule_free_adamw: the average weights step k by (k + 1)^r.");
  s.add("optimizer.schedule_free.weight_lr_power", Type::kFloat, HFTRAIN_FIELD(optimizer.schedule_free.weight_lr_power))
      .def("2.0").min(0).max(100).doc("schedule_free_adamw: the average weights step k by its largest lr so far to this power.");
  s.add("optimizer.galore.rank", Type::kInt, HFTRAIN_FIELD(optimizer.galore.rank))
      .on_resume(ResumeChange::kImpossible)
      .def("128").min(1).max(65536).doc("galore_adamw: rank of each projected gradient (capped at the matrix's smaller side).");
  s.add("optimizer.galore.update_proj_gap", Type::kInt, HFTRAIN_FIELD(optimizer.galore.update_proj_gap))
      .def("200").min(1).unit("steps").doc("galore_adamw: a new projection (SVD of the gradient) every this many steps of a matrix.");
  s.add("optimizer.galore.scale", Type::kFloat, HFTRAIN_FIELD(optimizer.galore.scale))
      .def("0.25").min(0).max(1e6).doc("galore_adamw: factor on the projected-back update (galore_torch's scale).");
  s.add("optimizer.galore.proj_type", Type::kChoice, HFTRAIN_FIELD(optimizer.galore.proj_type))
      .on_resume(ResumeChange::kImpossible)
      .choices({"std", "reverse_std", "right", "left", "full"}).def("std")
      .doc("galore_adamw: which side to project: std the smaller side (right for tall, left for wide matrices), "
           "reverse_std the larger, right, left, or full (both).");
  s.add("optimizer.galore.target_modules", Type::kStringList, HFTRAIN_FIELD(optimizer.galore.target_modules))
      .on_resume(ResumeChange::kImpossible)
      .def("['*.attn.*', '*.mlp.*']")
      .doc("galore_adamw: parameter-name globs of the weight matrices to project (the Trainer's optim_target_modules); "
           "each must match a matrix; the rest take plain AdamW steps.");
  s.add("optimizer.amsgrad", Type::kBool, HFTRAIN_FIELD(optimizer.amsgrad))
      .on_resume(ResumeChange::kImpossible)
      .def("false").doc("adamw: AMSGrad, the denominator from the largest second moment seen (as torch.optim.AdamW(amsgrad=True)).");

  s.section("scheduler", "The learning-rate schedule (Hugging Face Trainer formulas).", ResumeChange::kTraining);
  s.add("scheduler.name", Type::kChoice, HFTRAIN_FIELD(scheduler.name))
      .choices({"constant", "constant_with_warmup", "linear", "cosine", "cosine_with_restarts",
                "cosine_with_min_lr", "polynomial", "inverse_sqrt", "warmup_stable_decay",
                "reduce_lr_on_plateau"})
      .def("linear").doc("Schedule shape.");
  s.add("scheduler.warmup_steps", Type::kInt, HFTRAIN_FIELD(scheduler.warmup_steps))
      .def("0").min(0).unit("steps").doc("Linear warmup from 0 to optimizer.lr.");
  s.add("scheduler.num_cycles", Type::kFloat, HFTRAIN_FIELD(scheduler.num_cycles))
      .nullable().min(0).max(1000)
      .doc("Cosine waves over the decay: unset means 0.5 (half a wave), or 1 for cosine_with_restarts.");
  s.add("scheduler.min_lr", Type::kFloat, HFTRAIN_FIELD(scheduler.min_lr))
      .nullable().min(0).max(10).doc("cosine_with_min_lr: the learning rate the decay ends at.");
  s.add("scheduler.min_lr_rate", Type::kFloat, HFTRAIN_FIELD(scheduler.min_lr_rate))
      .nullable().min(0).max(1)
      .doc("cosine_with_min_lr, warmup_stable_decay: the floor as a fraction of optimizer.lr.");
  s.add("scheduler.lr_end", Type::kFloat, HFTRAIN_FIELD(scheduler.lr_end))
      .def("1.0e-7").min(0).max(10).doc("polynomial: the learning rate at the end of training.");
  s.add("scheduler.power", Type::kFloat, HFTRAIN_FIELD(scheduler.power))
      .def("1.0").min(0).max(100).doc("polynomial: the power of the decay (1 is linear).");
  s.add("scheduler.timescale", Type::kInt, HFTRAIN_FIELD(scheduler.timescale))
      .nullable().min(1).unit("steps")
      .doc("inverse_sqrt: lr = lr0 / sqrt((step + timescale - warmup) / timescale); unset: warmup_steps or 10000.");
  s.add("scheduler.wsd.decay_steps", Type::kInt, HFTRAIN_FIELD(scheduler.wsd.decay_steps))
      .nullable().min(0).unit("steps").doc("warmup_stable_decay: length of the final decay (required).");
  s.add("scheduler.wsd.stable_steps", Type::kInt, HFTRAIN_FIELD(scheduler.wsd.stable_steps))
      .nullable().min(0).unit("steps").doc("warmup_stable_decay: length of the constant phase; unset: the rest.");
  s.add("scheduler.wsd.warmup_type", Type::kChoice, HFTRAIN_FIELD(scheduler.wsd.warmup_type))
      .choices({"linear", "cosine", "1-sqrt"}).def("linear").doc("warmup_stable_decay: warmup shape.");
  s.add("scheduler.wsd.decay_type", Type::kChoice, HFTRAIN_FIELD(scheduler.wsd.decay_type))
      .choices({"linear", "cosine", "1-sqrt"}).def("cosine").doc("warmup_stable_decay: decay shape.");
  s.add("scheduler.plateau.mode", Type::kChoice, HFTRAIN_FIELD(scheduler.plateau.mode))
      .choices({"min", "max"}).def("min").doc("reduce_lr_on_plateau: whether the eval metric should fall or rise.");
  s.add("scheduler.plateau.factor", Type::kFloat, HFTRAIN_FIELD(scheduler.plateau.factor))
      .def("0.1").min(0).max(0.999999).doc("reduce_lr_on_plateau: multiply the lr by this on a plateau.");
  s.add("scheduler.plateau.patience", Type::kInt, HFTRAIN_FIELD(scheduler.plateau.patience))
      .def("10").min(0).unit("evaluations").doc("reduce_lr_on_plateau: evaluations without improvement before reducing.");
  s.add("scheduler.plateau.threshold", Type::kFloat, HFTRAIN_FIELD(scheduler.plateau.threshold))
      .def("1.0e-4").min(0).doc("reduce_lr_on_plateau: the smallest change that counts as improvement.");
  s.add("scheduler.plateau.threshold_mode", Type::kChoice, HFTRAIN_FIELD(scheduler.plateau.threshold_mode))
      .choices({"rel", "abs"}).def("rel").doc("reduce_lr_on_plateau: threshold relative to the best value, or absolute.");
  s.add("scheduler.plateau.cooldown", Type::kInt, HFTRAIN_FIELD(scheduler.plateau.cooldown))
      .def("0").min(0).unit("evaluations").doc("reduce_lr_on_plateau: evaluations to wait after a reduction.");
  s.add("scheduler.plateau.min_lr", Type::kFloat, HFTRAIN_FIELD(scheduler.plateau.min_lr))
      .def("0.0").min(0).max(10).doc("reduce_lr_on_plateau: never reduce below this learning rate.");

  s.section("trainer", "The training loop.", ResumeChange::kSafe);
  s.add("trainer.max_steps", Type::kInt, HFTRAIN_FIELD(trainer.max_steps))
      .nullable().min(1).unit("steps").doc("Stop after this many optimizer steps.");
  s.add("trainer.max_epochs", Type::kInt, HFTRAIN_FIELD(trainer.max_epochs))
      .nullable().min(1).unit("epochs").doc("Stop after this many passes over the training data.");
  s.add("trainer.micro_batch_size", Type::kInt, HFTRAIN_FIELD(trainer.micro_batch_size))
      .on_resume(ResumeChange::kDataOrder)
      .def("8").min(1).unit("sequences").doc("Sequences per forward/backward pass, per process.");
  s.add("trainer.grad_accum_steps", Type::kInt, HFTRAIN_FIELD(trainer.grad_accum_steps))
      .on_resume(ResumeChange::kDataOrder)
      .def("1").min(1).max(65536).unit("micro-batches").doc("Micro-batches accumulated per optimizer step.");
  s.add("trainer.max_grad_norm", Type::kFloat, HFTRAIN_FIELD(trainer.max_grad_norm))
      .on_resume(ResumeChange::kTraining)
      .def("1.0").min(0).allow_inf()
      .doc("Clip the global gradient norm to this; .inf only measures and logs it.");
  s.add("trainer.precision", Type::kChoice, HFTRAIN_FIELD(trainer.precision))
      .on_resume(ResumeChange::kTraining)
      .choices({"fp32", "bf16", "fp16"}).def("fp32").doc("Compute precision.");
  s.add("trainer.log_every", Type::kInt, HFTRAIN_FIELD(trainer.log_every))
      .def("10").min(1).unit("steps").doc("Log metrics every N steps.");
  s.add("trainer.eval_every", Type::kInt, HFTRAIN_FIELD(trainer.eval_every))
      .def("0").min(0).unit("steps").doc("Evaluate every N steps; 0 never.");
  s.add("trainer.max_tokens", Type::kCount, HFTRAIN_FIELD(trainer.max_tokens))
      .nullable().min(1).unit("tokens").doc("Stop after this many training tokens (e.g. 10M, 2B).");
  s.add("trainer.eval_batches", Type::kInt, HFTRAIN_FIELD(trainer.eval_batches))
      .nullable().min(1).doc("Batches per evaluation; unset: the whole validation split.");
  s.add("trainer.label_smoothing", Type::kFloat, HFTRAIN_FIELD(trainer.label_smoothing))
      .on_resume(ResumeChange::kTraining)
      .def("0.0").min(0).max(0.99).doc("Label smoothing of the cross-entropy loss.");
  s.add("trainer.tf32", Type::kBool, HFTRAIN_FIELD(trainer.tf32))
      .on_resume(ResumeChange::kTraining)
      .def("false").doc("CUDA: allow TF32 tensor cores for fp32 matrix multiplies.");
  s.add("trainer.device", Type::kChoice, HFTRAIN_FIELD(trainer.device))
      .choices({"auto", "cpu", "cuda"}).def("auto").doc("Where to train; auto picks CUDA when a GPU is visible.");
  s.add("trainer.early_stopping_patience", Type::kInt, HFTRAIN_FIELD(trainer.early_stopping_patience))
      .nullable().min(1).unit("evaluations").doc("Stop after this many evaluations without improvement; unset: never.");
  s.add("trainer.early_stopping_threshold", Type::kFloat, HFTRAIN_FIELD(trainer.early_stopping_threshold))
      .def("0.0").min(0).doc("The eval loss must fall by more than this to count as an improvement.");
  s.add("trainer.fp16_init_scale", Type::kFloat, HFTRAIN_FIELD(trainer.fp16_init_scale))
      .on_resume(ResumeChange::kTraining)
      .def("65536.0").min(1).doc("fp16: the initial loss scale.");
  s.add("trainer.fp16_growth_interval", Type::kInt, HFTRAIN_FIELD(trainer.fp16_growth_interval))
      .on_resume(ResumeChange::kTraining)
      .def("2000").min(1).unit("steps").doc("fp16: double the loss scale after this many steps without overflow.");

  s.section("checkpoint", "When checkpoints are written, which are kept, and what a signal does.", ResumeChange::kSafe);
  s.add("checkpoint.every_steps", Type::kInt, HFTRAIN_FIELD(checkpoint.every_steps))
      .def("0").min(0).unit("steps").doc("Save a checkpoint every N steps; 0: no periodic saves.");
  s.add("checkpoint.every_epoch", Type::kBool, HFTRAIN_FIELD(checkpoint.every_epoch))
      .def("false").doc("Save a checkpoint when an epoch of training data is complete.");
  s.add("checkpoint.at_end", Type::kBool, HFTRAIN_FIELD(checkpoint.at_end))
      .def("true").doc("Save a checkpoint when training ends (the model alone always goes to final/).");
  s.add("checkpoint.keep_last", Type::kInt, HFTRAIN_FIELD(checkpoint.keep_last))
      .def("3").min(0).unit("checkpoints")
      .doc("Keep the newest N checkpoints (by step); 0 keeps all. The newest and the best are never deleted.");
  s.add("checkpoint.keep_best", Type::kBool, HFTRAIN_FIELD(checkpoint.keep_best))
      .def("false").doc("Save on every new best eval loss and never delete that checkpoint (needs trainer.eval_every).");
  s.add("checkpoint.shard_size", Type::kSize, HFTRAIN_FIELD(checkpoint.shard_size))
      .def("5GB").min(1).unit("bytes")
      .doc("Model weights above this size are split into safetensors shards with an index (Hugging Face layout).");
  s.add("checkpoint.on_signal", Type::kChoice, HFTRAIN_FIELD(checkpoint.on_signal))
      .choices({"save", "exit"}).def("save")
      .doc("On SIGINT/SIGTERM: finish the step, then save a checkpoint (save) or not (exit).");
  s.add("checkpoint.signal_exit_code", Type::kInt, HFTRAIN_FIELD(checkpoint.signal_exit_code))
      .nullable().min(0).max(255).doc("Exit code after a signal; unset: 128 + the signal number.");
  s.add("checkpoint.on_save_error", Type::kChoice, HFTRAIN_FIELD(checkpoint.on_save_error))
      .choices({"stop", "continue"}).def("stop")
      .doc("A save that fails (disk full, read-only): stop the run with exit 1, or log it and train on.");

  s.section("distributed", "Multi-process training.", ResumeChange::kSafe);
  s.add("distributed.strategy", Type::kChoice, HFTRAIN_FIELD(distributed.strategy))
      .on_resume(ResumeChange::kTraining)
      .choices({"ddp", "zero1", "zero2", "zero3", "hybrid"}).alias("fsdp", "zero3").def("ddp")
      .doc("Sharding strategy: ddp (replicated), zero1 (optimizer state sharded), zero2 (and gradients), zero3 (and "
           "parameters, gathered per block; fsdp is an alias), hybrid (zero3 inside a node, replicated across nodes).");
  s.add("distributed.backend", Type::kChoice, HFTRAIN_FIELD(distributed.backend))
      .on_resume(ResumeChange::kSafe)
      .choices({"auto", "nccl", "mpi"}).def("auto")
      .doc("Communication backend; auto picks NCCL for CUDA, MPI for CPU.");
  s.add("distributed.bucket_size", Type::kSize, HFTRAIN_FIELD(distributed.bucket_size))
      .on_resume(ResumeChange::kSafe)
      .def("25MiB").min(1).unit("bytes")
      .doc("Gradients per all-reduce (ddp) or reduce-scatter (zero1/2/3) bucket, launched as soon as the bucket fills "
           "during backward.");
  s.add("distributed.cpu_offload", Type::kBool, HFTRAIN_FIELD(distributed.cpu_offload))
      .on_resume(ResumeChange::kSafe)
      .def("false")
      .doc("Keep the optimizer state (and with zero3 the parameter shards) in pinned host memory; the update runs "
           "on the CPU. Needs a zero strategy.");
  s.add("distributed.reduce_dtype", Type::kChoice, HFTRAIN_FIELD(distributed.reduce_dtype))
      .on_resume(ResumeChange::kTraining)
      .choices({"fp32", "param"}).def("fp32")
      .doc("Precision of gradient reduction: fp32, or the compute precision (trainer.precision) to halve traffic.");
  s.add("distributed.timeout", Type::kDuration, HFTRAIN_FIELD(distributed.timeout))
      .on_resume(ResumeChange::kSafe)
      .def("10m").min(1).unit("seconds")
      .doc("Longest wait for a collective during training steps; then the ranks that did not arrive are named and "
           "every process exits.");
  s.add("distributed.startup_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.startup_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("10m").min(1).unit("seconds").doc("The same budget for the rendezvous of all ranks at start-up.");
  s.add("distributed.data_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.data_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("1h").min(1).unit("seconds")
      .doc("The same budget while rank 0 prepares the data (tokenizing a corpus into the token cache).");
  s.add("distributed.eval_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.eval_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("30m").min(1).unit("seconds").doc("The same budget during evaluation.");
  s.add("distributed.checkpoint_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.checkpoint_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("30m").min(1).unit("seconds").doc("The same budget while a checkpoint is written.");

  s.section("peft", "Parameter-efficient fine-tuning: LoRA adapters trained on a frozen base model, saved as the peft library saves them.",
            ResumeChange::kImpossible);
  s.add("peft.method", Type::kChoice, HFTRAIN_FIELD(peft.method))
      .choices({"none", "lora"}).def("none")
      .doc("none: train every weight; lora: freeze the base model and train low-rank adapters (peft.lora.*).");
  s.add("peft.lora.r", Type::kInt, HFTRAIN_FIELD(peft.lora.r))
      .def("8").min(1).max(65536).doc("LoRA rank: each adapted layer W gains B (out x r) A (r x in).");
  s.add("peft.lora.alpha", Type::kFloat, HFTRAIN_FIELD(peft.lora.alpha))
      .def("8").min(0).max(1e6).doc("LoRA scale numerator: the update is (alpha / r) B A x (peft's lora_alpha).");
  s.add("peft.lora.dropout", Type::kFloat, HFTRAIN_FIELD(peft.lora.dropout))
      .def("0.0").min(0).max(0.999).doc("Dropout on the adapters' input (peft's lora_dropout).");
  s.add("peft.lora.target_modules", Type::kStringList, HFTRAIN_FIELD(peft.lora.target_modules))
      .def("[]")
      .doc("Hugging Face module names or globs to adapt (q_proj, v_proj, 'model.layers.*.mlp.*', c_attn); a name matches "
           "the whole module name or its last parts, as in peft; ['all-linear']: every linear layer but the output "
           "layer; []: peft's default for the architecture (q_proj and v_proj; c_attn for gpt2; query and value for bert).");
  s.add("peft.lora.use_rslora", Type::kBool, HFTRAIN_FIELD(peft.lora.use_rslora))
      .def("false").doc("Rank-stabilised LoRA: scale alpha / sqrt(r) instead of alpha / r.");
  s.add("peft.lora.use_dora", Type::kBool, HFTRAIN_FIELD(peft.lora.use_dora))
      .def("false")
      .doc("DoRA (weight-decomposed LoRA, peft's use_dora): each adapted layer's output rows rescaled by a trained "
           "magnitude over the norm of W + scale B A (the norm held constant in the backward, as peft does).");
  s.add("peft.lora.init", Type::kChoice, HFTRAIN_FIELD(peft.lora.init))
      .choices({"default", "gaussian"}).def("default")
      .doc("Adapter A's initial values: default as peft (kaiming-uniform, bound 1/sqrt(in)), gaussian N(0, 1/r); B starts at 0.");
  s.add("peft.modules_to_save", Type::kStringList, HFTRAIN_FIELD(peft.modules_to_save))
      .def("[]").doc("Hugging Face modules trained in full next to the adapters and saved with them, e.g. ['lm_head'] or a classifier.");
  s.add("peft.from", Type::kString, HFTRAIN_FIELD(peft.from))
      .nullable().doc("Continue training a peft adapter directory (adapter_config.json + adapter_model.safetensors) on model.from.");
  s.add("peft.quantize_base", Type::kChoice, HFTRAIN_FIELD(peft.quantize_base))
      .choices({"none", "nf4", "int8"}).def("none")
      .doc("QLoRA: keep the frozen base's linear layers quantized and dequantize them per product: nf4 as "
           "bitsandbytes' 4-bit NormalFloat (blocks of 64, double-quantized scales), int8 as LLM.int8's row-wise "
           "absmax; the output layer and embeddings stay as loaded. Needs peft.method=lora.");

  s.section("logging", "What hftrain prints and records.", ResumeChange::kSafe);
  s.add("logging.level", Type::kChoice, HFTRAIN_FIELD(logging.level))
      .choices({"debug", "info", "warn", "error"}).def("info").doc("Console and log-file verbosity.");
  return s;
}

#undef HFTRAIN_FIELD

}  // namespace

const Schema& product_schema() {
  static const Schema schema = build();
  return schema;
}

}  // namespace hftrain::config
