set(HFTRAIN_MODEL_CORE_SOURCES
  hf_config.cpp
  hf_families.cpp
  hf_rope.cpp
  shape_overrides.cpp
  hf_modules.cpp
  safetensors_header.cpp
  spec.cpp)
set(HFTRAIN_MODEL_TORCH_SOURCES
  blocks.cpp
  mlp.cpp
  moe.cpp
  document_mask.cpp
  hf_export.cpp
  hf_weights.cpp
  lm_head_loss.cpp
  mixed_mm.cpp
  fused_classifier.cpp
  rope.cpp
  safetensors.cpp
  stored_weights.cpp
  transformer.cpp
  weight_loader.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/generate_sources.cmake OPTIONAL)
list(APPEND HFTRAIN_MODEL_TORCH_SOURCES checkpointing.cpp)
# BERT-style encoders (Hugging Face BertModel / BertForSequenceClassification).
list(APPEND HFTRAIN_MODEL_CORE_SOURCES bert_spec.cpp modernbert_spec.cpp deberta_spec.cpp)
list(APPEND HFTRAIN_MODEL_TORCH_SOURCES bert.cpp bert_weights.cpp encoder_modules.cpp modernbert.cpp deberta.cpp)
# Tensor parallelism's layers (the collectives behind TpGroup are parallel/tensor's).
list(APPEND HFTRAIN_MODEL_TORCH_SOURCES tensor_parallel.cpp tp_plan.cpp)
# Pipeline parallelism's stage of a decoder (the schedules are parallel/pipeline's).
list(APPEND HFTRAIN_MODEL_TORCH_SOURCES transformer_pipeline.cpp)
# debug.underflow_overflow: the modules' abs-min/abs-max frames.
list(APPEND HFTRAIN_MODEL_TORCH_SOURCES numeric_trace.cpp)
