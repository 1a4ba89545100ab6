// model.from names a model directory: a Hugging Face one (config.json, safetensors, tokenizer.json
// as save_pretrained writes them) or an hftrain one (model.json). Its shape becomes the model.*
// values, and a Hugging Face directory's tokenizer.json the tokenizer, as a config layer above
// the schema defaults (config/resolve.h): a recipe that fine-tunes such a directory names only the
// directory, and `hftrain config --provenance` shows "model.from DIR/config.json" as their origin.
#pragma once

#include <filesystem>
#include <string>

#include "config/resolve.h"
#include <optional>
#include <vector>

#include "model/encoder/bert_spec.h"
#include "model/spec.h"

namespace hftrain::train {

// What model.from (or a checkpoint) names: the directory actually read (a run directory's final/,
// else its newest checkpoint-N/), whether it is in the Hugging Face layout, its spec and the file
// that gave it. Throws CheckpointError naming the file.
struct ModelSource {
  std::filesystem::path dir;
  bool hugging_face = false;
  model::ModelSpec spec;                // a decoder's
  std::optional<model::BertSpec> bert;  // or a BERT encoder's (Hugging Face directories only)
  std::vector<std::string> id2label;    // the BERT classifier's labels, when it has them
  std::filesystem::path spec_file;
};
ModelSource read_model_source(const std::filesystem::path& path);

// resolve_config, and when the result names model.from, resolved again with that directory's
// values. Throws what resolve_config throws, and CheckpointError naming the directory's file for
// one it cannot read.
config::ResolvedConfig resolve_with_model_from(config::ResolveOptions options,
                                               const config::Schema& schema = config::product_schema());

}  // namespace hftrain::train
