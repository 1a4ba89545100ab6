#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include <torch/torch.h>

#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"

namespace hftrain::model {
namespace {

using util::CheckpointError;

struct DtypeName {
  const char* name;
  torch::ScalarType type;
};
// The names safetensors_header.cpp knows, with their torch types.
constexpr DtypeName kDtypes[] = {{"F64", torch::kFloat64},
                                 {"F32", torch::kFloat32},
                                 {"F16", torch::kFloat16},
                                 {"BF16", torch::kBFloat16},
                                 {"I64", torch::kInt64},
                                 {"I32", torch::kInt32},
                                 {"I16", torch::kInt16},
                                 {"I8", torch::kInt8},
                                 {"U64", torch::kUInt64},
                                 {"U32", torch::kUInt32},
                                 {"U16", torch::kUInt16},
                                 {"U8", torch::kUInt8},
                                 {"BOOL", torch::kBool},
                                 {"F8_E4M3", torch::kFloat8_e4m3fn},
                                 {"F8_E5M2", torch::kFloat8_e5m2},
                                 {"F8_E4M3FNUZ", torch::kFloat8_e4m3fnuz},
                                 {"F8_E5M2FNUZ", torch::kFloat8_e5m2fnuz},
                                 {"C64", torch::kComplexFloat}};

// The whole file mapped read-only; unmapped when it goes out of scope.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      throw CheckpointError("cannot open " + path.string() + ": " + std::strerror(errno));
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
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

torch::ScalarType safetensors_torch_type(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.type;
  }
  // parse_safetensors_header accepted it, so the two tables disagree.
  throw std::logic_error("safetensors dtype " + name + " has no torch type");
}

std::string safetensors_dtype_name(torch::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  throw util::IoError(std::string("safetensors cannot store dtype ") + c10::toString(type));
}

TensorList read_safetensors(const std::filesystem::path& path,
                            std::map<std::string, std::string>* metadata) {
  MappedFile file(path);
  const std::string_view bytes = file.bytes();
  SafetensorsHeader header = parse_safetensors_header(bytes, bytes.size(), path.string());
  if (metadata) {
    for (const auto& [key, value] : header.metadata) (*metadata)[key] = value;
  }
  TensorList out;
  for (const auto& e : header.tensors) {
    const char* data = bytes.data() + header.data_start + e.begin;
    // A bool byte other than 0 or 1 is undefined behaviour in C++ (and in LibTorch's kernels).
    if (e.dtype == "BOOL" &&
        std::any_of(data, data + (e.end - e.begin), [](char c) { return c != 0 && c != 1; })) {
      throw CheckpointError(path.string() + ": not a valid safetensors file: BOOL tensor '" +
                                e.name + "' holds a byte other than 0 or 1",
                            "the file is damaged; re-create or re-download it");
    }
    auto t = torch::empty(e.shape, torch::TensorOptions().dtype(safetensors_torch_type(e.dtype)));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data, e.end - e.begin);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

SafetensorsHeader write_safetensors_to(util::FileWriter& out, const TensorList& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorList::value_type*> sorted;
  for (const auto& entry : tensors) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  SafetensorsHeader header;
  header.metadata = metadata;
  uint64_t offset = 0;
  for (const auto* entry : sorted) {
    const torch::Tensor& t = entry->second;
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header.tensors.push_back({entry->first, safetensors_dtype_name(t.scalar_type()),
                              t.sizes().vec(), offset, offset + bytes});
    offset += bytes;
  }
  const std::string head = format_safetensors_header(header.tensors, metadata);
  header.data_start = head.size();
  out.write(head);
  for (const auto* entry : sorted) {
    // resolve_conj/resolve_neg: a lazily conjugated or negated view holds the other values.
    const auto cpu =
        entry->second.detach().to(torch::kCPU).resolve_conj().resolve_neg().contiguous();
    out.write(cpu.data_ptr(), static_cast<size_t>(cpu.numel()) * cpu.element_size());
  }
  return header;
}

void write_safetensors(const std::filesystem::path& path, const TensorList& tensors,
                       const std::map<std::string, std::string>& metadata) {
  util::atomic_write_with(
      path, [&](util::FileWriter& out) { write_safetensors_to(out, tensors, metadata); });
}

}  // namespace hftrain::model
