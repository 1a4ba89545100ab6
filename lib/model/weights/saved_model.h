// A model directory: everything `generate` (and later `eval`) needs to rebuild a trained model.
// The trainer writes one into <run.output_dir>/final/ and into each checkpoint folder:
//   model.safetensors  the parameters by Transformer::parameters_by_name(), fp32; or, sharded in
//                      the Hugging Face layout, model.safetensors.index.json ({"metadata":
//                      {"total_size": N}, "weight_map": {tensor: shard file}}) plus the shards
//                      model-00001-of-00003.safetensors, ...
//   model.json         ModelSpec::to_json()
//   tokenizer.json     the Hugging Face file for BPE; for the byte tokenizer a small hftrain file,
//                      {"hftrain_tokenizer": "byte", "special_tokens": [...]}
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "model/weights/model_files.h"
#include "model/weights/safetensors.h"
#include "model/decoder/transformer.h"
#include "model/weights/weight_loader.h"

namespace hftrain::model {


// Writes the model directory `dir` crash-safely: the files go into `dir.tmp-<pid>`, which then
// replaces `dir` in one atomic exchange, so `dir` is always either the old or the new directory.
// Other files of an existing `dir` are not kept. `tokenizer` may be null for kByte (the default
// byte tokenizer); kBpe needs the tokenizer::BpeTokenizer. Throws IoError naming the path, UsageError
// for a tokenizer that does not match `kind`.
void save_model_dir(const std::filesystem::path& dir, const Transformer& model,
                    tokenizer::TokenizerKind kind, const tokenizer::Tokenizer* tokenizer);

// Writes the three files into the existing folder `dir`, each crash-safely but not as a set: for
// a caller that stages a larger directory of its own (a checkpoint with optimizer state) and
// publishes it whole. Same errors as save_model_dir.
void write_model_files(const std::filesystem::path& dir, const Transformer& model,
                       tokenizer::TokenizerKind kind, const tokenizer::Tokenizer* tokenizer);

// The {file name, content} of the model directory's text files (model.json, tokenizer.json):
// what write_model_files writes besides the weights, for a caller that stages them itself.
// Same errors as save_model_dir.
std::vector<std::pair<std::string, std::string>> model_text_files(const Transformer& model,
                                                                  tokenizer::TokenizerKind kind,
                                                                  const tokenizer::Tokenizer* tokenizer);

struct LoadedModel {
  Transformer model{nullptr};                  // on the CPU, fp32, in eval mode
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // vocab_size() <= the model's
  tokenizer::TokenizerKind tokenizer_kind = tokenizer::TokenizerKind::kByte;
  std::filesystem::path dir;  // the model directory actually read
};

// The model directory `path` names: itself when it holds model.json; for a run directory its
// final/ if present, else its highest-numbered checkpoint-N/ (by number: checkpoint-10 after
// checkpoint-9). Throws CheckpointError naming `path` when it is none of these.
std::filesystem::path resolve_model_dir(const std::filesystem::path& path);

// Loads a model directory (or a run directory, via resolve_model_dir), with model.safetensors or,
// when that is absent, the sharded model.safetensors.index.json (through load_model_weights). Throws CheckpointError
// naming the file for anything missing, malformed or inconsistent (every missing, unexpected or mis-shaped tensor at
// once; for sharded weights also a listed shard that is missing, a tensor in no shard or more than one, or in another
// shard than the index says), and for a tokenizer larger than the model's vocabulary; DataError from the tokenizer.json
// parser.
LoadedModel load_model_dir(const std::filesystem::path& path);

// The ModelSpec of a model directory's model.json. Throws CheckpointError naming the file.
ModelSpec read_model_spec(const std::filesystem::path& dir);

// Copies the weights of model directory `dir` (model.safetensors or the sharded layout, memory-
// mapped; see stored_weights.h) into `model`'s parameters through load_weights (weight_loader.h),
// one tensor at a time, converting each to the parameter's dtype: no second copy of the weights is
// held. Every parameter is stored under its own name and nothing else is: anything missing,
// unexpected or mis-shaped is a CheckpointError in load_weights' form naming the file (the
// parameters are then untouched).
void load_model_weights(Transformer& model, const std::filesystem::path& dir, const WeightHandover& handover = {});

// Reads a tokenizer.json: the hftrain byte-tokenizer file or a Hugging Face byte-level BPE file.
// `kind`, when given, receives which. Throws DataError naming the file.
std::unique_ptr<tokenizer::Tokenizer> load_tokenizer_file(const std::filesystem::path& path,
                                                     tokenizer::TokenizerKind* kind = nullptr);

}  // namespace hftrain::model
