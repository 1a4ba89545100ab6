// Fuzz target for the torch-free safetensors header parser: the input is a whole file. Any
// util::CheckpointError is a correct answer to bad input; every other exception, crash, hang or
// sanitizer report is a bug. An accepted header must keep the parser's promises (offsets sorted,
// contiguous and covering the data; byte counts matching dtype and shape; dimensions that fit
// LibTorch) and survive format_safetensors_header and a second parse unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <string_view>

#include "model/weights/safetensors_header.h"
#include "util/error.h"

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::cerr << "safetensors parser broke a promise: " << what << "\n";
  std::abort();
}

void check_promises(const hftrain::model::SafetensorsHeader& h, uint64_t file_size) {
  if (h.data_start < 8 || h.data_start > file_size) broken("data_start outside the file");
  uint64_t expected = 0;
  for (const auto& e : h.tensors) {
    if (e.name == "__metadata__") broken("a tensor named __metadata__");
    if (e.begin != expected || e.end < e.begin) broken("offsets not contiguous at " + e.name);
    expected = e.end;
    const size_t size = hftrain::model::safetensors_dtype_size(e.dtype);
    if (size == 0) broken("unknown dtype " + e.dtype);
    unsigned __int128 elements = 1;
    for (int64_t d : e.shape) {
      if (d < 0) broken("negative dimension in " + e.name);
      elements *= static_cast<uint64_t>(d);
      if (elements > std::numeric_limits<uint64_t>::max()) broken("shape overflows in " + e.name);
    }
    if (elements * size != e.end - e.begin) broken("byte count of " + e.name);
  }
  if (expected != file_size - h.data_start) broken("data not covered exactly");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hftrain;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  model::SafetensorsHeader header;
  try {
    header = model::parse_safetensors_header(file, size, "fuzz.safetensors");
  } catch (const util::CheckpointError&) {
    return 0;  // a clean rejection
  }
  check_promises(header, size);
  // Written again (as the writer lays it out) and parsed, it must be the same header.
  std::string again = model::format_safetensors_header(header.tensors, header.metadata);
  const uint64_t data_bytes = size - header.data_start;
  again.append(file.substr(header.data_start, data_bytes));
  model::SafetensorsHeader back;
  try {
    back = model::parse_safetensors_header(again, again.size(), "fuzz-again.safetensors");
  } catch (const util::CheckpointError& e) {
    broken(std::string("re-formatted header rejected: ") + e.what());
  }
  if (back.metadata != header.metadata || back.tensors.size() != header.tensors.size())
    broken("re-formatted header differs");
  for (size_t i = 0; i < back.tensors.size(); ++i) {
    const auto& a = header.tensors[i];
    const auto& b = back.tensors[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.begin != b.begin ||
        a.end != b.end)
      broken("re-formatted header differs at " + a.name);
  }
  return 0;
}
