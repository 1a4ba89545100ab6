#include "tokenizer/tokenizer_specials.h"

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/json_depth.h"

namespace hftrain::tokenizer {
namespace {

constexpr const char* kEosNames[] = {"<|endoftext|>", "<|end_of_text|>", "</s>",
                                     "<eos>",         "<|eos|>",         "[SEP]"};
constexpr const char* kPadNames[] = {"<|pad|>", "[PAD]", "<pad>", "<|padding|>"};

std::optional<std::string> token_text(const nlohmann::json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return std::nullopt;  // null, or a form we do not know: as if absent
}

int32_t required(const SpecialCandidates& c, const std::string& token, const std::string& what,
                 const std::string& name, const std::string& hint) {
  auto id = c.id_of(token);
  if (!id)
    throw util::DataError(
        "tokenizer " + name + ": " + what + " '" + token + "' is not in its vocabulary", hint);
  return *id;
}

std::optional<std::string> well_known(const SpecialCandidates& c, const char* const* names,
                                      size_t n) {
  for (size_t i = 0; i < n; ++i) {
    for (const auto& s : c.specials) {
      if (s == names[i]) return s;
    }
  }
  return std::nullopt;
}

}  // namespace

void read_tokenizer_config(const std::filesystem::path& file, SpecialTokenChoice& choice) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return;
  const std::string text = util::read_file<util::DataError>(file, "tokenizer config");
  util::check_json_depth<util::DataError>(text, file.string());
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw util::DataError(file.string() + " is not valid JSON",
                          "fix or remove it; hftrain reads its eos_token and pad_token");
  }
  if (!config.is_object()) return;
  choice.config_eos = token_text(config, "eos_token");
  choice.config_pad = token_text(config, "pad_token");
  choice.config_file = file.string();
}

SpecialIds choose_special_ids(const SpecialTokenChoice& choice, const SpecialCandidates& c,
                              const std::string& name) {
  SpecialIds ids{-1, -1, ""};
  if (!choice.eos_token.empty()) {
    ids.eot = required(c, choice.eos_token, "the chosen end-of-text token", name,
                       "choose a token the tokenizer has");
    ids.eot_token = choice.eos_token;
  } else if (choice.config_eos && !choice.config_eos->empty()) {
    ids.eot = required(c, *choice.config_eos, choice.config_file + " names the end-of-text token",
                       name, "the tokenizer_config.json does not belong to this tokenizer.json");
    ids.eot_token = *choice.config_eos;
  } else if (c.post_processor_eos) {
    ids.eot = *c.post_processor_eos;
  } else if (auto known = well_known(c, kEosNames, std::size(kEosNames))) {
    ids.eot = *c.id_of(*known);
    ids.eot_token = *known;
  } else {
    throw util::DataError(
        "tokenizer " + name +
            " has no end-of-text token hftrain recognises (a special added token <|endoftext|>, "
            "<|end_of_text|>, "
            "</s>, <eos> or [SEP], or one its post-processor puts after a sequence)",
        "put a tokenizer_config.json with \"eos_token\" next to it; training ends every document "
        "with that token");
  }
  if (!choice.pad_token.empty()) {
    ids.pad = required(c, choice.pad_token, "the chosen padding token", name,
                       "choose a token the tokenizer has");
  } else if (choice.config_pad && !choice.config_pad->empty()) {
    ids.pad = required(c, *choice.config_pad, choice.config_file + " names the padding token", name,
                       "the tokenizer_config.json does not belong to this tokenizer.json");
  } else if (c.padding_token && c.id_of(*c.padding_token)) {
    ids.pad = *c.id_of(*c.padding_token);
  } else if (auto known = well_known(c, kPadNames, std::size(kPadNames))) {
    ids.pad = *c.id_of(*known);
  } else {
    ids.pad = ids.eot;
  }
  return ids;
}

}  // namespace hftrain::tokenizer
