// The C++ side of tests/conformance/safetensors_roundtrip.py, which holds our safetensors reader
// and writer against the Python `safetensors` library:
//   safetensors_tool dtypes          prints the supported dtype names as a JSON array
//   safetensors_tool write PATH [DTYPE...]   writes one tensor of every supported dtype, or of
//                                    the dtypes given, plus a few scalars and empty tensors
//                                    (values below)
//   safetensors_tool read PATH       prints {"metadata": {...}, "tensors": [{"name", "dtype",
//                                    "shape", "nbytes", "fnv1a64"}]} (file order) as JSON
//   safetensors_tool copy IN OUT     reads IN and writes its tensors and metadata to OUT
// Values of the tensor of a dtype, element i (row-major), mirrored by the Python script:
//   floating: i * 0.37 - 1.5 in double, converted by LibTorch; C64: that (as float) plus
//             (0.5 - i * 0.25) i; signed: ((i*37+11) % 251 - 125) * m; unsigned:
//             ((i*37+11) % 251) * m, with m = 0x01...01 as wide as the type; BOOL: (i*37+11) % 3 ==
//             0.
// Errors go to stderr with exit status 1.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "model/weights/safetensors.h"

namespace {

using hftrain::model::TensorList;

const std::vector<std::vector<int64_t>> kShapes = {{3, 5}, {7}, {2, 3, 5}, {1, 9}, {5, 1, 3}, {11}};

// (i*37+11) % 251 for element i, as the integer dtypes use it.
uint64_t base(int64_t i) {
  return static_cast<uint64_t>(i * 37 + 11) % 251;
}

template <typename T>
void fill_integers(torch::Tensor& t, bool is_signed) {
  uint64_t m = 0;
  for (size_t b = 0; b < sizeof(T); ++b) m = (m << 8) | 1;
  std::vector<T> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t b = static_cast<int64_t>(base(static_cast<int64_t>(i)));
    v[i] = is_signed ? static_cast<T>((b - 125) * static_cast<int64_t>(m))
                     : static_cast<T>(static_cast<uint64_t>(b) * m);
  }
  if (!v.empty()) std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(T));
}

torch::Tensor values(const std::string& dtype, const std::vector<int64_t>& shape) {
  const auto type = hftrain::model::safetensors_torch_type(dtype);
  auto t = torch::empty(shape, torch::TensorOptions().dtype(type));
  const int64_t n = t.numel();
  if (dtype == "BOOL") {
    auto* p = static_cast<bool*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i) p[i] = base(i) % 3 == 0;
  } else if (dtype == "I8") {
    fill_integers<int8_t>(t, true);
  } else if (dtype == "I16") {
    fill_integers<int16_t>(t, true);
  } else if (dtype == "I32") {
    fill_integers<int32_t>(t, true);
  } else if (dtype == "I64") {
    fill_integers<int64_t>(t, true);
  } else if (dtype == "U8") {
    fill_integers<uint8_t>(t, false);
  } else if (dtype == "U16") {
    fill_integers<uint16_t>(t, false);
  } else if (dtype == "U32") {
    fill_integers<uint32_t>(t, false);
  } else if (dtype == "U64") {
    fill_integers<uint64_t>(t, false);
  } else {  // floating point
    std::vector<double> re(static_cast<size_t>(n)), im(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      re[static_cast<size_t>(i)] = static_cast<double>(i) * 0.37 - 1.5;
      im[static_cast<size_t>(i)] = 0.5 - static_cast<double>(i) * 0.25;
    }
    auto r = torch::from_blob(re.data(), shape, torch::kFloat64).clone();
    if (dtype == "C64") {
      auto j = torch::from_blob(im.data(), shape, torch::kFloat64).clone();
      t = torch::complex(r.to(torch::kFloat32), j.to(torch::kFloat32));
    } else {
      t = r.to(type);
    }
  }
  return t;
}

// Tensor "t_<DTYPE>" of each dtype in `only` (all when empty), shapes by its index among all
// dtypes, and scalar_F64, scalar_BOOL, empty_BF16, empty_I32 where their dtype is included.
TensorList fixture(const std::vector<std::string>& only) {
  TensorList out;
  auto wanted = [&](const std::string& d) {
    return only.empty() || std::find(only.begin(), only.end(), d) != only.end();
  };
  const auto names = hftrain::model::safetensors_dtype_names();
  for (size_t k = 0; k < names.size(); ++k) {
    if (wanted(names[k]))
      out.emplace_back("t_" + names[k], values(names[k], kShapes[k % kShapes.size()]));
  }
  if (wanted("F64")) out.emplace_back("scalar_F64", values("F64", {}));
  if (wanted("BOOL")) out.emplace_back("scalar_BOOL", values("BOOL", {}));
  if (wanted("BF16")) out.emplace_back("empty_BF16", values("BF16", {0, 3}));
  if (wanted("I32")) out.emplace_back("empty_I32", values("I32", {2, 0}));
  return out;
}

std::string fnv1a64(const torch::Tensor& t) {
  const auto c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < static_cast<size_t>(c.numel()) * c.element_size(); ++i) {
    h = (h ^ p[i]) * 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

nlohmann::json describe(const std::string& path) {
  std::map<std::string, std::string> metadata;
  const auto tensors = hftrain::model::read_safetensors(path, &metadata);
  nlohmann::json out = {{"metadata", metadata}, {"tensors", nlohmann::json::array()}};
  for (const auto& [name, t] : tensors) {
    out["tensors"].push_back({{"name", name},
                              {"dtype", hftrain::model::safetensors_dtype_name(t.scalar_type())},
                              {"shape", t.sizes().vec()},
                              {"nbytes", t.numel() * static_cast<int64_t>(t.element_size())},
                              {"fnv1a64", fnv1a64(t)}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] == "dtypes") {
      std::cout << nlohmann::json(hftrain::model::safetensors_dtype_names()).dump() << "\n";
    } else if (args.size() >= 2 && args[0] == "write") {
      hftrain::model::write_safetensors(args[1], fixture({args.begin() + 2, args.end()}),
                                        {{"format", "pt"}, {"writer", "hftrain ✓"}});
    } else if (args.size() == 2 && args[0] == "read") {
      std::cout << describe(args[1]).dump(1) << "\n";
    } else if (args.size() == 3 && args[0] == "copy") {
      std::map<std::string, std::string> metadata;
      const auto tensors = hftrain::model::read_safetensors(args[1], &metadata);
      hftrain::model::write_safetensors(args[2], tensors, metadata);
    } else {
      std::cerr
          << "usage: safetensors_tool dtypes | write PATH [DTYPE...] | read PATH | copy IN OUT\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "safetensors_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
