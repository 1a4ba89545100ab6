# The data stage's sources (relative to lib/data), included by lib/CMakeLists.txt.
# Torch-free: sources, tokenizers (byte, BPE, tokenizer.json: hf_* is the general pipeline),
# corpus and cache, packing, sampler.
set(HFTRAIN_DATA_CORE_SOURCES
  source.cpp
  text_checks.cpp
  jsonl_reader.cpp
  tokenizer.cpp
  byte_tokenizer.cpp
  unicode.cpp
  unicode_tables.cpp
  unicode_norm_tables.cpp
  unicode_normalize.cpp
  pretokenizer.cpp
  regex_split.cpp
  bpe_merges.cpp
  bpe_tokenizer.cpp
  bpe_trainer.cpp
  tokenizer_json.cpp
  tokenizer_specials.cpp
  hf_json.cpp
  hf_split.cpp
  hf_normalizer.cpp
  hf_pre_tokenizer.cpp
  hf_model.cpp
  hf_bpe_tables.cpp
  hf_bpe.cpp
  hf_wordpiece.cpp
  hf_piece_trie.cpp
  hf_json_float.cpp
  hf_unigram.cpp
  hf_base64.cpp
  hf_grapheme.cpp
  hf_grapheme_tables.cpp
  hf_precompiled.cpp
  hf_added_tokens.cpp
  hf_post_processor.cpp
  hf_decoder.cpp
  hf_tokenizer.cpp
  mapped_file.cpp
  token_corpus.cpp
  token_shard.cpp
  token_cache.cpp
  dataset.cpp
  packing.cpp
  batch_source.cpp
  sampler.cpp)
# LibTorch: the loader turns host batches into (pinned) tensors on the device.
set(HFTRAIN_DATA_TORCH_SOURCES
  classification_loader.cpp
  loader.cpp)
# Labelled text for sequence classification: CSV/TSV/JSONL, label sets, encoding, padding.
list(APPEND HFTRAIN_DATA_CORE_SOURCES csv_reader.cpp labelled.cpp classification_batch.cpp)
