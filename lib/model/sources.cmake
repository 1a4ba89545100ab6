# The model stage (relative to lib/model), one sub-folder per idea:
#   (top)     the spec every model is built from and model.json, the layers all families share (dense
#             layers, RoPE, activation checkpointing, the numeric trace), parameter units
#   decoder/  the decoder-only transformer: its blocks, MLPs and experts, the packed-document mask, the
#             output layer and its fused loss, tensor-parallel layers and plan, pipeline stages, sampling
#   encoder/  BERT-style encoders (BERT, RoBERTa, ModernBERT, DeBERTa-v2): specs, modules, weights
#   hf/       Hugging Face interop for decoders: config.json both ways, families, RoPE settings, where
#             its tensors lie, export
#   weights/  safetensors, stored weights read on demand, the weight loader, model directories
set(HFTRAIN_MODEL_CORE_SOURCES
  model_json.cpp
  spec.cpp
  encoder/bert_spec.cpp
  encoder/deberta_spec.cpp
  encoder/modernbert_spec.cpp
  hf/hf_config.cpp
  hf/hf_families.cpp
  hf/hf_modules.cpp
  hf/hf_rope.cpp
  hf/shape_overrides.cpp
  weights/safetensors_header.cpp)
set(HFTRAIN_MODEL_TORCH_SOURCES
  checkpointing.cpp
  neftune.cpp
  numeric_trace.cpp
  rope.cpp
  decoder/blocks.cpp
  decoder/document_mask.cpp
  decoder/fused_classifier.cpp
  decoder/lm_head_loss.cpp
  decoder/mixed_mm.cpp
  decoder/mlp.cpp
  decoder/moe.cpp
  decoder/sampling.cpp
  decoder/tensor_parallel.cpp
  decoder/tp_plan.cpp
  decoder/transformer.cpp
  decoder/transformer_pipeline.cpp
  encoder/bert.cpp
  encoder/bert_weights.cpp
  encoder/deberta.cpp
  encoder/encoder_modules.cpp
  encoder/modernbert.cpp
  hf/hf_export.cpp
  hf/hf_weights.cpp
  weights/safetensors.cpp
  weights/saved_model.cpp
  weights/stored_weights.cpp
  weights/weight_loader.cpp)
