#include "helpers.h"

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_json.h"
#include "util/fs.h"

namespace hftrain::test {

std::vector<data::Document> read_all(const data::SourceSpec& spec, const data::ChatTemplate& chat) {
  std::vector<data::Document> docs;
  for (const auto& file : data::expand_source(spec)) {
    data::read_documents(spec, file, chat, [&](data::Document&& d) { docs.push_back(std::move(d)); });
  }
  return docs;
}

std::shared_ptr<data::TokenCorpus> make_corpus(const std::vector<std::vector<uint32_t>>& docs, uint32_t eot,
                                               const std::vector<std::vector<uint8_t>>& train) {
  std::vector<uint32_t> tokens;
  std::vector<uint8_t> mask;
  std::vector<uint64_t> starts{0};
  for (size_t d = 0; d < docs.size(); ++d) {
    tokens.insert(tokens.end(), docs[d].begin(), docs[d].end());
    if (!train.empty()) mask.insert(mask.end(), train[d].begin(), train[d].end());
    tokens.push_back(eot);
    if (!train.empty()) mask.push_back(1);
    starts.push_back(tokens.size());
  }
  return std::make_shared<data::TokenCorpus>(std::move(tokens), std::move(mask), std::move(starts), "test");
}

std::unique_ptr<tokenizer::Tokenizer> bert_tokenizer() {
  auto json = nlohmann::json::parse(util::read_file<util::DataError>(
      std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/data/hf_bert_tokenizer.json", "fixture"));
  json["post_processor"] = nlohmann::json::parse(R"({"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
    "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                       "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}})");
  return tokenizer::parse_tokenizer_json(json.dump(), "bert-tokenizer.json");
}


}  // namespace hftrain::test
