#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "util/error.h"
#include "util/fs.h"

namespace hftrain::model {
namespace {

using Json = nlohmann::json;
using util::CheckpointError;

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  size_t bytes;
};
constexpr DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64, 8}, {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8}, {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},     {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1}};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo& dtype_by_type(torch::ScalarType t) {
  for (const auto& d : kDtypes) {
    if (d.type == t) return d;
  }
  throw util::IoError(std::string("safetensors cannot store dtype ") + c10::toString(t));
}

// The whole file mapped read-only; unmapped when it goes out of scope.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw CheckpointError("cannot open " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw CheckpointError(path.string() + " is not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (data_ == MAP_FAILED) {
        ::close(fd_);
        throw CheckpointError("cannot map " + path.string() + ": " + std::strerror(errno));
      }
    }
  }
  ~MappedFile() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

struct Entry {
  std::string name;
  const DtypeInfo* dtype;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
};

}  // namespace

TensorList read_safetensors(const std::filesystem::path& path, std::map<std::string, std::string>* metadata) {
  const std::string where = path.string();
  MappedFile file(path);
  auto bad = [&](const std::string& what) -> CheckpointError {
    return CheckpointError(where + ": not a valid safetensors file: " + what,
                           "the file is damaged or not safetensors; re-create or re-download it");
  };
  if (file.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file.data()[i];
  constexpr uint64_t kMaxHeader = uint64_t{100} << 20;  // the reference library's limit
  if (header_len > kMaxHeader || header_len > file.size() - 8) {
    throw bad("header length " + std::to_string(header_len) + " exceeds the file or the 100 MB limit");
  }
  Json header;
  std::vector<std::string> keys;  // top-level names as written: nlohmann keeps only the last duplicate
  try {
    header = Json::parse(file.data() + 8, file.data() + 8 + header_len,
                         [&keys](int depth, Json::parse_event_t event, Json& parsed) {
                           if (depth == 1 && event == Json::parse_event_t::key) keys.push_back(parsed.get<std::string>());
                           return true;
                         });
  } catch (const Json::exception& e) {
    throw bad(std::string("header is not JSON (") + e.what() + ")");
  }
  std::sort(keys.begin(), keys.end());
  if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    throw bad("duplicate tensor name '" + *dup + "'");
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  const uint64_t data_size = file.size() - 8 - header_len;

  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw bad("__metadata__ is not an object");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) throw bad("__metadata__." + k + " is not a string");
        if (metadata) (*metadata)[k] = v.get<std::string>();
      }
      continue;
    }
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets") ||
        !info["dtype"].is_string() || !info["shape"].is_array() || !info["data_offsets"].is_array() ||
        info["data_offsets"].size() != 2) {
      throw bad("tensor '" + name + "' lacks dtype, shape or a pair of data_offsets");
    }
    Entry e{name, dtype_by_name(info["dtype"].get<std::string>()), {}, 0, 0};
    if (!e.dtype) throw bad("tensor '" + name + "' has unsupported dtype " + info["dtype"].dump());
    uint64_t elements = 1;
    for (const auto& d : info["shape"]) {
      if (!d.is_number_unsigned()) throw bad("tensor '" + name + "' has a bad shape " + info["shape"].dump());
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / 8 / dim) {
        throw bad("tensor '" + name + "' shape overflows");
      }
      elements *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    for (const auto& o : info["data_offsets"]) {
      if (!o.is_number_unsigned()) throw bad("tensor '" + name + "' has bad data_offsets");
    }
    e.begin = info["data_offsets"][0].get<uint64_t>();
    e.end = info["data_offsets"][1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size) {
      throw bad("tensor '" + name + "' offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                ") lie outside the " + std::to_string(data_size) + " data bytes");
    }
    if (e.end - e.begin != elements * e.dtype->bytes) {
      throw bad("tensor '" + name + "' holds " + std::to_string(e.end - e.begin) + " bytes but its shape and dtype need " +
                std::to_string(elements * e.dtype->bytes));
    }
    entries.push_back(std::move(e));
  }
  std::vector<const Entry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t expected = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != expected) throw bad("tensor data is not contiguous at '" + e->name + "' (gap or overlap)");
    expected = e->end;
  }
  if (expected != data_size) throw bad("trailing bytes after the last tensor");

  TensorList out;
  for (const Entry* e : by_offset) {
    auto t = torch::empty(e->shape, torch::TensorOptions().dtype(e->dtype->type));
    if (e->end > e->begin) std::memcpy(t.data_ptr(), file.data() + 8 + header_len + e->begin, e->end - e->begin);
    out.emplace_back(e->name, std::move(t));
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const TensorList& tensors,
                       const std::map<std::string, std::string>& metadata) {
  TensorList sorted = tensors;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<torch::Tensor> cpu;
  for (const auto& [name, tensor] : sorted) {
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const auto& d = dtype_by_type(t.scalar_type());
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * d.bytes;
    header[name] = {{"dtype", d.name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data to 8 bytes, as the reference writer does
  std::string out(8, '\0');
  const uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += text;
  out.reserve(out.size() + offset);
  for (const auto& t : cpu) out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  util::atomic_write_file(path, out);
}

}  // namespace hftrain::model
