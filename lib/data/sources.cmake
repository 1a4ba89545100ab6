# The data stage's sources (relative to lib/data), included by lib/CMakeLists.txt.
# Torch-free: sources, tokenizers, corpus and cache, packing, sampler.
set(HFTRAIN_DATA_CORE_SOURCES
  source.cpp
  text_checks.cpp
  jsonl_reader.cpp
  tokenizer.cpp
  byte_tokenizer.cpp
  unicode.cpp
  unicode_tables.cpp
  pretokenizer.cpp
  regex_split.cpp
  bpe_tokenizer.cpp
  bpe_trainer.cpp
  tokenizer_json.cpp
  mapped_file.cpp
  token_corpus.cpp
  token_shard.cpp
  token_cache.cpp
  dataset.cpp
  packing.cpp
  sampler.cpp)
# LibTorch: the loader turns host batches into (pinned) tensors on the device.
set(HFTRAIN_DATA_TORCH_SOURCES
  loader.cpp)
