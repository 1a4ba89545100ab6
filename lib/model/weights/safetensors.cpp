#include "model/weights/safetensors.h"

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

// The whole file mapped read-only; unmapped when the last tensor viewing it is gone.
struct MappedSafetensors::Mapping {
  void* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) ::munmap(data, size);
  }
};

MappedSafetensors::MappedSafetensors(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError("cannot open " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw CheckpointError(path.string() + " is not a regular file");
  }
  mapping_ = std::make_shared<Mapping>();
  mapping_->size = static_cast<size_t>(st.st_size);
  if (mapping_->size > 0) {
    void* data = ::mmap(nullptr, mapping_->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw CheckpointError("cannot map " + path.string() + ": " + std::strerror(err));
    }
    mapping_->data = data;
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  const std::string_view bytes(static_cast<const char*>(mapping_->data), mapping_->size);
  header_ = parse_safetensors_header(bytes, bytes.size(), path.string());
}

MappedSafetensors::~MappedSafetensors() = default;

torch::Tensor MappedSafetensors::view(const SafetensorsEntry& e) const {
  char* data = static_cast<char*>(mapping_->data) + header_.data_start + e.begin;
  const size_t size = e.end - e.begin;
  // A bool byte other than 0 or 1 is undefined behaviour in C++ (and in LibTorch's kernels).
  if (e.dtype == "BOOL" && std::any_of(data, data + size, [](char c) { return c != 0 && c != 1; })) {
    throw CheckpointError(path_.string() + ": not a valid safetensors file: BOOL tensor '" + e.name +
                              "' holds a byte other than 0 or 1",
                          "the file is damaged; re-create or re-download it");
  }
  const auto options = torch::TensorOptions().dtype(safetensors_torch_type(e.dtype));
  const size_t align = safetensors_dtype_size(e.dtype);
  if (size == 0 || reinterpret_cast<uintptr_t>(data) % align != 0) {
    auto t = torch::empty(e.shape, options);
    if (size > 0) std::memcpy(t.data_ptr(), data, size);
    return t;
  }
  auto keep = mapping_;
  return torch::from_blob(data, e.shape, [keep](void*) {}, options);
}

TensorList read_safetensors(const std::filesystem::path& path,
                            std::map<std::string, std::string>* metadata) {
  const MappedSafetensors file(path);
  if (metadata) {
    for (const auto& [key, value] : file.header().metadata) (*metadata)[key] = value;
  }
  TensorList out;
  for (const auto& e : file.header().tensors) out.emplace_back(e.name, file.view(e).clone());
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
