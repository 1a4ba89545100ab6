// The safetensors header, torch-free: parsing it strictly (for the reader and for checkpoint
// verification, which looks at tensor names, dtypes and shapes without loading data) and
// formatting it (for the writer). The file is an 8-byte little-endian header length, a JSON
// object mapping each tensor name to {dtype, shape, data_offsets} plus optional "__metadata__"
// strings, then the tensor bytes. A hostile header gets a CheckpointError naming the file, never
// a crash or an allocation the size of a lie.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::model {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "BF16", ... (one of safetensors_dtype_names())
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section (after the header)
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;        // by data offsets (begin, end), then name
  std::map<std::string, std::string> metadata;  // "__metadata__"
  uint64_t data_start = 0;                      // 8 + the header length
};

// Bytes per element of a dtype name this project reads and writes, 0 for any other name.
size_t safetensors_dtype_size(std::string_view dtype);

// The dtype names this project reads and writes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8
// BOOL F8_E4M3 F8_E5M2 F8_E4M3FNUZ F8_E5M2FNUZ C64 (every one of the format's dtypes that LibTorch
// and the Python library both have, so not F4, F6_E2M3, F6_E3M2 or F8_E8M0).
std::vector<std::string> safetensors_dtype_names();

// The header length from the first 8 bytes of a file of `file_size` bytes, checked against the
// file and the reference library's 100 MB limit. `where` names the file in errors.
uint64_t safetensors_header_length(std::string_view first_bytes, uint64_t file_size,
                                   const std::string& where);

// Parses and checks the header. `head` holds at least the file's first 8 + header-length bytes;
// `file_size` is the whole file's size. Checks: JSON object, no duplicate names, known dtypes,
// shapes of non-negative integers whose every dimension and non-zero product fit LibTorch, byte
// counts that match dtype and shape, data_offsets in range, contiguous and non-overlapping and
// covering the data exactly,
// "__metadata__" an object of strings.
SafetensorsHeader parse_safetensors_header(std::string_view head, uint64_t file_size,
                                           const std::string& where);

// Reads only the header of the file at `path` (not the tensor data) and parses it.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

// The bytes a file starts with for these entries (offsets already laid out, in order, from 0):
// the length, then the JSON header padded with spaces to a multiple of 8 bytes, as the reference
// writer does, so that the data is aligned. Throws IoError for a name or metadata string that is
// not UTF-8 (JSON cannot hold it), "__metadata__" or a duplicate as a tensor name.
std::string format_safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                                      const std::map<std::string, std::string>& metadata);

}  // namespace hftrain::model
