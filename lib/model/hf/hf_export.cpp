#include "model/hf/hf_export.h"

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tokenizer/unicode.h"
#include "model/weights/model_files.h"
#include "model/hf/hf_config.h"
#include "model/hf/hf_weights.h"
#include "model/weights/stored_weights.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"

namespace hftrain::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The special tokens of a tokenizer: every id past the 256 bytes (byte tokenizer) that names one.
std::vector<std::pair<int32_t, std::string>> byte_specials(const tokenizer::Tokenizer& t) {
  std::vector<std::pair<int32_t, std::string>> out;
  for (int32_t id = 256; id < t.vocab_size(); ++id) {
    const int32_t one[] = {id};
    out.emplace_back(id, t.decode(one));
  }
  return out;
}

Json added_token(int32_t id, const std::string& content) {
  return {{"id", id},         {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},  {"normalized", false}, {"special", true}};
}

// The byte tokenizer as Hugging Face byte-level BPE: vocabulary of the 256 byte characters (id =
// byte), no merges, no regex split, the specials as added tokens.
std::string byte_tokenizer_json(const tokenizer::Tokenizer& t) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    tokenizer::unicode::append_utf8(ch, tokenizer::unicode::byte_to_char(static_cast<uint8_t>(b)));
    vocab[ch] = b;
  }
  Json added = Json::array();
  for (const auto& [id, content] : byte_specials(t)) added.push_back(added_token(id, content));
  const Json byte_level{
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  Json j{{"version", "1.0"},
         {"truncation", nullptr},
         {"padding", nullptr},
         {"added_tokens", added},
         {"normalizer", nullptr},
         {"pre_tokenizer", byte_level},
         {"post_processor", nullptr},
         {"decoder", byte_level},
         {"model",
          {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
           {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
           {"vocab", vocab}, {"merges", Json::array()}}}};
  return j.dump(2) + "\n";
}

void write_text(const fs::path& path, const std::string& text) { util::atomic_write_file(path, text); }

}  // namespace

void export_hf(const LoadedModel& loaded, const fs::path& out, int64_t max_shard_bytes) {
  const ModelSpec& spec = loaded.model->spec();
  const tokenizer::Tokenizer& tok = *loaded.tokenizer;
  const int32_t eot = tok.eot_id();
  // A reward model scores by its own padding id (the run's); a language model's is the tokenizer's.
  const auto pad = static_cast<int32_t>(spec.score_outputs > 0 && spec.pad_token_id >= 0 ? spec.pad_token_id
                                                                                          : tok.pad_id());
  const std::string config = hf_config_json(spec, {eot, eot, pad});  // refuses what no HF model holds

  fs::path staged = out;
  staged += ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec)
    throw util::IoError("cannot create " + staged.string() + ": " + ec.message(), "check the folder's permissions");
  try {
    write_sharded_weights(staged, to_hf_weights(loaded.model), static_cast<uint64_t>(max_shard_bytes));
    write_text(staged / kHfConfigFile, config);
    const std::string tokenizer =
        loaded.tokenizer_kind == tokenizer::TokenizerKind::kByte
            ? byte_tokenizer_json(tok)
            : util::read_file<util::CheckpointError>(loaded.dir / kTokenizerFile, "tokenizer");
    write_text(staged / kTokenizerFile, tokenizer);
    const int32_t eot_ids[] = {eot};
    const int32_t pad_ids[] = {pad};
    const Json tokenizer_config{{"tokenizer_class", "PreTrainedTokenizerFast"},
                                {"model_max_length", spec.max_seq_len},
                                {"bos_token", tok.decode(eot_ids)},
                                {"eos_token", tok.decode(eot_ids)},
                                {"pad_token", tok.decode(pad_ids)},
                                {"clean_up_tokenization_spaces", false}};
    write_text(staged / "tokenizer_config.json", tokenizer_config.dump(2) + "\n");
    const Json generation{{"bos_token_id", eot}, {"eos_token_id", eot}, {"pad_token_id", pad}};
    write_text(staged / "generation_config.json", generation.dump(2) + "\n");
    util::publish_dir(staged, out);
    util::fsync_dir(out.parent_path().empty() ? fs::path(".") : out.parent_path());
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
}

}  // namespace hftrain::model
