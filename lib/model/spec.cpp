#include "model/spec.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace hftrain::model {

ModelSpec ModelSpec::from_config(const config::ModelConfig& c) {
  ModelSpec s;
  const bool gpt2 = c.arch == config::ModelArch::kGpt2;
  s.arch = c.arch;
  s.n_layer = c.n_layer;
  s.n_head = c.n_head;
  s.n_kv_head = c.n_kv_head.value_or(c.n_head);
  s.d_model = c.d_model;
  s.d_ff = c.d_ff.value_or(gpt2 ? 4 * c.d_model : (8 * c.d_model / 3 + 63) / 64 * 64);
  s.max_seq_len = c.max_seq_len;
  s.vocab_size = c.vocab_size;
  s.rope_theta = c.rope_theta;
  s.norm_eps = c.norm_eps.value_or(gpt2 ? 1e-5 : 1e-6);
  s.dropout = c.dropout;
  s.tie_embeddings = c.tie_embeddings.value_or(gpt2);
  s.init_std = c.init_std;
  return s;
}

std::string ModelSpec::to_json() const {
  nlohmann::ordered_json j{{"format", "hftrain-model"},   {"version", 1},
                           {"arch", arch == config::ModelArch::kGpt2 ? "gpt2" : "llama"},
                           {"n_layer", n_layer},          {"n_head", n_head},
                           {"n_kv_head", n_kv_head},      {"d_model", d_model},
                           {"d_ff", d_ff},                {"max_seq_len", max_seq_len},
                           {"vocab_size", vocab_size},    {"rope_theta", rope_theta},
                           {"norm_eps", norm_eps},        {"dropout", dropout},
                           {"tie_embeddings", tie_embeddings}, {"init_std", init_std}};
  return j.dump(2) + "\n";
}

ModelSpec ModelSpec::from_json(const std::string& text, const std::string& source) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != "hftrain-model") {
      throw util::CheckpointError(source + " is not an hftrain model description (format is not hftrain-model)");
    }
    ModelSpec s;
    const std::string arch = j.at("arch").get<std::string>();
    if (arch != "gpt2" && arch != "llama") throw util::CheckpointError(source + ": unknown arch '" + arch + "'");
    s.arch = arch == "gpt2" ? config::ModelArch::kGpt2 : config::ModelArch::kLlama;
    j.at("n_layer").get_to(s.n_layer);
    j.at("n_head").get_to(s.n_head);
    j.at("n_kv_head").get_to(s.n_kv_head);
    j.at("d_model").get_to(s.d_model);
    j.at("d_ff").get_to(s.d_ff);
    j.at("max_seq_len").get_to(s.max_seq_len);
    j.at("vocab_size").get_to(s.vocab_size);
    j.at("rope_theta").get_to(s.rope_theta);
    j.at("norm_eps").get_to(s.norm_eps);
    j.at("dropout").get_to(s.dropout);
    j.at("tie_embeddings").get_to(s.tie_embeddings);
    j.at("init_std").get_to(s.init_std);
    if (s.n_layer < 1 || s.n_head < 1 || s.n_kv_head < 1 || s.d_model < s.n_head || s.d_ff < 1 ||
        s.max_seq_len < 1 || s.vocab_size < 1 || s.n_head % s.n_kv_head != 0 || s.d_model % s.n_head != 0) {
      throw util::CheckpointError(source + ": inconsistent model sizes");
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw util::CheckpointError(source + ": malformed model description: " + e.what(),
                                "the checkpoint is damaged; use another one");
  }
}

}  // namespace hftrain::model
