#include "data/token_cache.h"

#include <sys/stat.h>

#include <cstring>

#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/log.h"

namespace hftrain::data {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'H', 'F', 'T', 'T', 'O', 'K', 'S', '1'};

// The fixed part of a cache file; key text, document starts, tokens and mask follow, each
// starting on an 8-byte boundary.
struct Header {
  char magic[8];
  uint32_t width;
  uint32_t has_mask;
  uint64_t num_tokens;
  uint64_t num_docs;
  uint64_t key_bytes;
};

size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

std::string hex(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = digits[v & 15];
  return s;
}

std::string serialize(const TokenCorpus& corpus, const std::string& key) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  uint32_t max_id = corpus.max_token();
  h.width = max_id <= 0xFFFF ? 2 : 4;
  h.has_mask = corpus.has_mask() ? 1 : 0;
  h.num_tokens = corpus.num_tokens();
  h.num_docs = corpus.num_docs();
  h.key_bytes = key.size();
  std::string out;
  const size_t total = pad8(sizeof(Header)) + pad8(key.size()) + 8 * (h.num_docs + 1) +
                       pad8(h.width * h.num_tokens) + (h.has_mask ? h.num_tokens : 0);
  out.reserve(total);
  out.append(reinterpret_cast<const char*>(&h), sizeof(h));
  out.resize(pad8(out.size()), '\0');
  out += key;
  out.resize(pad8(out.size()), '\0');
  auto starts = corpus.doc_starts();
  out.append(reinterpret_cast<const char*>(starts.data()), starts.size() * sizeof(uint64_t));
  for (uint64_t i = 0; i < h.num_tokens; ++i) {
    uint32_t t = corpus.token(i);
    if (h.width == 2) {
      auto t16 = static_cast<uint16_t>(t);
      out.append(reinterpret_cast<const char*>(&t16), 2);
    } else {
      out.append(reinterpret_cast<const char*>(&t), 4);
    }
  }
  out.resize(pad8(out.size()), '\0');
  for (uint64_t i = 0; h.has_mask && i < h.num_tokens; ++i) out.push_back(corpus.trains(i) ? 1 : 0);
  return out;
}

// Maps a cache file; nullptr when it is not a complete cache file of exactly this key.
std::shared_ptr<TokenCorpus> map_cache(const fs::path& file, const std::string& key) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return nullptr;
  auto map = std::make_shared<const MappedFile>(file, "token cache");
  Header h{};
  if (map->size() < sizeof(Header)) return nullptr;
  std::memcpy(&h, map->data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || (h.width != 2 && h.width != 4)) return nullptr;
  size_t off = pad8(sizeof(Header));
  if (h.key_bytes != key.size() || map->size() < off + key.size()) return nullptr;
  if (std::memcmp(map->data() + off, key.data(), key.size()) != 0) return nullptr;
  off += pad8(key.size());
  const size_t starts_off = off;
  off += 8 * (h.num_docs + 1);
  const size_t tokens_off = off;
  off += pad8(h.width * h.num_tokens);
  const size_t mask_off = off;
  off += h.has_mask ? h.num_tokens : 0;
  if (map->size() != off) return nullptr;
  const auto* starts = reinterpret_cast<const uint64_t*>(map->data() + starts_off);
  const uint8_t* mask = h.has_mask ? map->data() + mask_off : nullptr;
  return std::make_shared<TokenCorpus>(map, map->data() + tokens_off, static_cast<int>(h.width), h.num_tokens,
                                       mask, std::span<const uint64_t>(starts, h.num_docs + 1), file.string());
}

}  // namespace

fs::path default_cache_dir(const util::Environment& env) {
  if (auto dir = env.get("HFTRAIN_CACHE_DIR"); dir && !dir->empty()) return *dir;
  if (auto xdg = env.get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return fs::path(*xdg) / "hftrain" / "tokens";
  if (auto home = env.get("HOME"); home && !home->empty()) return fs::path(*home) / ".cache" / "hftrain" / "tokens";
  return fs::temp_directory_path() / "hftrain-tokens";
}

// How a chat template's rendering becomes ids (data/segment_encoding.h); a new rule makes the
// caches built under the old one miss.
constexpr const char* kTemplateEncoding = "\x1f" "encoded whole (v2)";

std::string cache_key(const std::vector<std::pair<SourceSpec, fs::path>>& files, const ChatTemplate& chat,
                      const tokenizer::Tokenizer& tokenizer) {
  std::string key =
      "hftrain-token-cache v1\ntokenizer " + tokenizer.fingerprint() + "\nchat " + chat.role_prefix + "\x1f" +
      chat.role_suffix + "\x1f" + chat.message_end + "\x1f" + chat.train_role +
      (chat.model_template ? "\x1f" + chat.model_template->fingerprint() + kTemplateEncoding : std::string()) + "\n";
  for (const auto& [spec, file] : files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      throw util::DataError("data file " + file.string() + " does not exist", "check the path");
    }
    key += "file " + fs::absolute(file).string() + " size " + std::to_string(st.st_size) + " mtime " +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " ino " +
           std::to_string(st.st_ino) + " format " + std::to_string(static_cast<int>(resolve_format(spec, file))) +
           " sep " + spec.separator + " fields " + spec.text_field + "," + spec.prompt_field + "," +
           spec.response_field + "," + spec.messages_field + "\n";
  }
  return key;
}

CacheResult load_or_tokenize(const std::vector<std::pair<SourceSpec, fs::path>>& files, const ChatTemplate& chat,
                             const tokenizer::Tokenizer& tokenizer, const CacheOptions& options) {
  CacheResult result;
  if (!options.enabled) {
    result.corpus = tokenize_files(files, chat, tokenizer, options.threads, &result.stats);
    result.num_documents = result.corpus->num_docs();
    return result;
  }
  const std::string key = cache_key(files, chat, tokenizer);
  const fs::path dir = options.dir.empty() ? default_cache_dir(util::Environment::process()) : fs::path(options.dir);
  const fs::path file = dir / ("tokens-" + hex(util::hash64(key)) + ".bin");
  if (auto corpus = map_cache(file, key)) {
    result.corpus = std::move(corpus);
    result.hit = true;
    result.file = file;
    result.num_documents = result.corpus->num_docs();
    return result;
  }
  result.corpus = tokenize_files(files, chat, tokenizer, options.threads, &result.stats);
  result.num_documents = result.corpus->num_docs();
  try {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw util::IoError("cannot create the token cache folder " + dir.string() + ": " + ec.message());
    util::atomic_write_file(file, serialize(*result.corpus, key));
    // Read back through the map: the in-memory copy is freed and later runs see the same bytes.
    if (auto mapped = map_cache(file, key)) result.corpus = std::move(mapped);
    result.file = file;
  } catch (const util::IoError& e) {
    util::log::warn(std::string("token cache not written (the run goes on without it): ") + e.what());
  }
  return result;
}

}  // namespace hftrain::data
