#include "model/weights/safetensors_header.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <tuple>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_depth.h"

namespace hftrain::model {
namespace {

using Json = nlohmann::json;
using util::CheckpointError;

struct DtypeSize {
  const char* name;
  size_t bytes;
};
// Every dtype of the format that LibTorch and the Python library both have. Not here: the sub-byte
// F4, F6_E2M3 and F6_E3M2 (their shapes count 4- or 6-bit elements; LibTorch's float4_e2m1fn_x2
// packs two per byte and counts bytes) and F8_E8M0 (LibTorch has float8_e8m0fnu, but the Python
// library's torch and numpy loaders do not map it).
constexpr DtypeSize kDtypes[] = {
    {"F64", 8},         {"F32", 4},         {"F16", 2},  {"BF16", 2},    {"I64", 8},
    {"I32", 4},         {"I16", 2},         {"I8", 1},   {"U64", 8},     {"U32", 4},
    {"U16", 2},         {"U8", 1},          {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"F8_E4M3FNUZ", 1}, {"F8_E5M2FNUZ", 1}, {"C64", 8}};

constexpr uint64_t kMaxHeader = uint64_t{100} << 20;  // the reference library's limit

// A name or dtype from the file, quoted and cut to a readable length (at a UTF-8 boundary).
std::string shown(std::string_view text) {
  constexpr size_t kMax = 80;
  if (text.size() <= kMax) return "'" + std::string(text) + "'";
  size_t cut = kMax;
  while (cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80) --cut;
  return "'" + std::string(text.substr(0, cut)) + "...'";
}

CheckpointError bad(const std::string& where, const std::string& what) {
  return CheckpointError(where + ": not a valid safetensors file: " + what,
                         "the file is damaged or not safetensors; re-create or re-download it");
}

SafetensorsEntry parse_entry(const std::string& name, const Json& info, uint64_t data_size,
                             const std::string& where) {
  const std::string tensor = "tensor " + shown(name);
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
      !info.contains("data_offsets") || !info["dtype"].is_string() || !info["shape"].is_array() ||
      !info["data_offsets"].is_array() || info["data_offsets"].size() != 2) {
    throw bad(where, tensor + " lacks dtype, shape or a pair of data_offsets");
  }
  SafetensorsEntry e{name, info["dtype"].get<std::string>(), {}, 0, 0};
  const size_t element_size = safetensors_dtype_size(e.dtype);
  if (element_size == 0) throw bad(where, tensor + " has unsupported dtype " + shown(e.dtype));
  // Every dimension, zero or not, fits an int64 and so does the product of the non-zero ones
  // (times 8 bytes), so LibTorch can build the shape: [0, 2^64-1] holds no bytes but is no shape.
  constexpr uint64_t kMaxElements = std::numeric_limits<uint64_t>::max() / 8 / 2;  // < 2^63 / 8
  uint64_t elements = 1;
  uint64_t nonzero = 1;
  for (const auto& d : info["shape"]) {
    // Not dumped into the message: a shape can nest arrays as deep as the header is long.
    if (!d.is_number_unsigned())
      throw bad(where, tensor + " has a bad shape (dimensions must be non-negative integers)");
    const uint64_t dim = d.get<uint64_t>();
    if (dim > kMaxElements || (dim != 0 && nonzero > kMaxElements / dim))
      throw bad(where, tensor + " shape overflows");
    if (dim != 0) nonzero *= dim;
    elements *= dim;
    e.shape.push_back(static_cast<int64_t>(dim));
  }
  for (const auto& o : info["data_offsets"]) {
    if (!o.is_number_unsigned()) throw bad(where, tensor + " has bad data_offsets");
  }
  e.begin = info["data_offsets"][0].get<uint64_t>();
  e.end = info["data_offsets"][1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size) {
    throw bad(where, tensor + " offsets [" + std::to_string(e.begin) + ", " +
                         std::to_string(e.end) + ") lie outside the " + std::to_string(data_size) +
                         " data bytes");
  }
  if (e.end - e.begin != elements * element_size) {
    throw bad(where, tensor + " holds " + std::to_string(e.end - e.begin) +
                         " bytes but its shape and dtype need " +
                         std::to_string(elements * element_size));
  }
  return e;
}

}  // namespace

std::vector<std::string> safetensors_dtype_names() {
  std::vector<std::string> out;
  for (const auto& d : kDtypes) out.emplace_back(d.name);
  return out;
}

size_t safetensors_dtype_size(std::string_view dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.name) return d.bytes;
  }
  return 0;
}

uint64_t safetensors_header_length(std::string_view first_bytes, uint64_t file_size,
                                   const std::string& where) {
  if (file_size < 8 || first_bytes.size() < 8)
    throw bad(where, "shorter than its 8-byte header length");
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i)
    len = (len << 8) | static_cast<uint8_t>(first_bytes[static_cast<size_t>(i)]);
  if (len > kMaxHeader || len > file_size - 8) {
    throw bad(where,
              "header length " + std::to_string(len) + " exceeds the file or the 100 MB limit");
  }
  return len;
}

SafetensorsHeader parse_safetensors_header(std::string_view head, uint64_t file_size,
                                           const std::string& where) {
  const uint64_t header_len = safetensors_header_length(head, file_size, where);
  if (head.size() < 8 + header_len) throw bad(where, "the header is cut short");
  const char* text = head.data() + 8;
  Json header;
  std::vector<std::string>
      keys;  // top-level names as written: nlohmann keeps only the last duplicate
  util::check_json_depth<util::CheckpointError>(std::string_view(text, header_len), where + " (its header)");
  try {
    header = Json::parse(text, text + header_len,
                         [&keys](int depth, Json::parse_event_t event, Json& parsed) {
                           if (depth == 1 && event == Json::parse_event_t::key)
                             keys.push_back(parsed.get<std::string>());
                           return true;
                         });
  } catch (const Json::exception& e) {
    throw bad(where, "header is not JSON (" + util::plain_json_error(e.what()) + ")");
  }
  std::sort(keys.begin(), keys.end());
  if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    throw bad(where, "duplicate tensor name " + shown(*dup));
  }
  if (!header.is_object()) throw bad(where, "header is not a JSON object");

  SafetensorsHeader out;
  out.data_start = 8 + header_len;
  const uint64_t data_size = file_size - out.data_start;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw bad(where, "__metadata__ is not an object");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) throw bad(where, "__metadata__ entry " + shown(k) + " is not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    out.tensors.push_back(parse_entry(name, info, data_size, where));
  }
  // By (begin, end): empty tensors share their offset with the next one and must sort first.
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
            });
  uint64_t expected = 0;
  for (const auto& e : out.tensors) {
    if (e.begin != expected)
      throw bad(where, "tensor data is not contiguous at " + shown(e.name) + " (gap or overlap)");
    expected = e.end;
  }
  if (expected != data_size) throw bad(where, "trailing bytes after the last tensor");
  return out;
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!std::filesystem::exists(path, ec))
      throw CheckpointError("cannot open " + where + ": no such file");
    throw CheckpointError(where + " is not a regular file");
  }
  const uint64_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) throw CheckpointError("cannot open " + where + ": " + std::strerror(errno));
  std::string head(static_cast<size_t>(std::min<uint64_t>(size, 8)), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  const uint64_t len = safetensors_header_length(head, size, where);
  head.resize(static_cast<size_t>(8 + len));
  in.read(head.data() + 8, static_cast<std::streamsize>(len));
  if (!in)
    throw CheckpointError("cannot read " + where +
                          ": the file is shorter than it was a moment ago");
  return parse_safetensors_header(head, size, where);
}

std::string format_safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                                      const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (const auto& e : tensors) {
    if (e.name == "__metadata__" || header.contains(e.name)) {
      throw util::IoError("cannot write safetensors: tensor name " + shown(e.name) +
                          (e.name == "__metadata__" ? " is reserved" : " appears twice"));
    }
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::type_error&) {  // 316: a string that is not UTF-8
    throw util::IoError("cannot write safetensors: a tensor name or metadata string is not UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + text;
}

}  // namespace hftrain::model
