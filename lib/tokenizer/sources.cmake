# The tokenizer stage's sources (relative to lib/tokenizer), included by lib/CMakeLists.txt and by
# the libFuzzer build (tests/fuzz/libfuzzer). All torch-free.
#   top level    the Tokenizer interface, the byte tokenizer, the byte-level BPE and its trainer,
#                the GPT-2 pre-tokenizer, regex splitting (PCRE2), Unicode classes and
#                normalization, tokenizer.json reading/writing, special-token choice
#   hf/          the general tokenizer.json pipeline: normalizers, pre-tokenizers, models (BPE,
#                WordPiece, WordLevel, Unigram), added tokens, post-processors, decoders
#   jinja/       the chat-template language (a Jinja2 subset, as transformers renders it)
#   generated/   Unicode and grapheme tables written by generators (see generated/README.md)
set(HFTRAIN_TOKENIZER_CORE_SOURCES
  tokenizer.cpp
  byte_tokenizer.cpp
  unicode.cpp
  unicode_normalize.cpp
  pretokenizer.cpp
  regex_split.cpp
  bpe_merges.cpp
  bpe_tokenizer.cpp
  bpe_trainer.cpp
  tokenizer_json.cpp
  tokenizer_specials.cpp
  chat_template.cpp
  hf/hf_json.cpp
  hf/hf_split.cpp
  hf/hf_normalizer.cpp
  hf/hf_pre_tokenizer.cpp
  hf/hf_model.cpp
  hf/hf_bpe_tables.cpp
  hf/hf_bpe.cpp
  hf/hf_wordpiece.cpp
  hf/hf_piece_trie.cpp
  hf/hf_json_float.cpp
  hf/hf_unigram.cpp
  hf/hf_base64.cpp
  hf/hf_grapheme.cpp
  hf/hf_precompiled.cpp
  hf/hf_added_tokens.cpp
  hf/hf_post_processor.cpp
  hf/hf_decoder.cpp
  hf/hf_tokenizer.cpp
  generated/unicode_tables.cpp
  generated/unicode_norm_tables.cpp
  generated/hf_grapheme_tables.cpp)
# jinja/: the subset of Jinja2 that Hugging Face chat templates use (template.h says what and the limits).
list(APPEND HFTRAIN_TOKENIZER_CORE_SOURCES
  jinja/access.cpp
  jinja/args.cpp
  jinja/chat_context.cpp
  jinja/error.cpp
  jinja/evaluate.cpp
  jinja/filters.cpp
  jinja/filters_seq.cpp
  jinja/filters_text.cpp
  jinja/globals.cpp
  jinja/interpreter.cpp
  jinja/json_bridge.cpp
  jinja/lexer.cpp
  jinja/literals.cpp
  jinja/methods.cpp
  jinja/operators.cpp
  jinja/parser.cpp
  jinja/parser_expr.cpp
  jinja/parser_primary.cpp
  jinja/predicates.cpp
  jinja/py_format.cpp
  jinja/template.cpp
  jinja/text.cpp
  jinja/value.cpp)
set(HFTRAIN_TOKENIZER_TORCH_SOURCES)
