# The data stage's sources (relative to lib/data), included by lib/CMakeLists.txt. Tokenizers are
# the stage below (lib/tokenizer); this one reads sources and turns their tokens into batches.
# Torch-free: sources (text, JSONL, chat), the token corpus, shards and cache, datasets, packing,
# the sampler, feeding a BPE trainer.
set(HFTRAIN_DATA_CORE_SOURCES
  source.cpp
  text_checks.cpp
  jsonl_reader.cpp
  chat_render.cpp
  tokenizer_training.cpp
  mapped_file.cpp
  token_corpus.cpp
  token_shard.cpp
  segment_encoding.cpp
  tokenize_documents.cpp
  token_cache.cpp
  dataset.cpp
  packing.cpp
  batch_source.cpp
  sampler.cpp
  mixture.cpp)
# LibTorch: the loader turns host batches into (pinned) tensors on the device.
set(HFTRAIN_DATA_TORCH_SOURCES
  classification_loader.cpp
  preference_loader.cpp
  loader.cpp)
# Labelled text for sequence classification: CSV/TSV/JSONL, label sets, encoding, padding.
list(APPEND HFTRAIN_DATA_CORE_SOURCES csv_reader.cpp labelled.cpp classification_batch.cpp)
# Tagged sentences for token classification: JSONL lists or CoNLL columns.
list(APPEND HFTRAIN_DATA_CORE_SOURCES tagged.cpp)
# Preference pairs (DPO and its family): records, TRL's encoding, chosen-then-rejected rows.
list(APPEND HFTRAIN_DATA_CORE_SOURCES preference.cpp kto.cpp)
