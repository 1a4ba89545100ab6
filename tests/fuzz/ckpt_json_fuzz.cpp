// Fuzz target for the checkpoint's JSON indexes as a resume reads them: the input is a whole
// manifest.json or optimizer/index.json. The depth limit, then Manifest::from_json and
// OptimizerIndex::from_json (which checks the pieces tile their tensors); any util::CheckpointError
// is a correct answer to bad input, every other exception, crash, hang or sanitizer report is a
// bug. An accepted manifest or index must keep its promises: safe relative paths, none twice;
// pieces that tile their tensor; and written out again it must read back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ckpt/manifest.h"
#include "ckpt/optimizer_index.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace {

using Json = nlohmann::json;

[[noreturn]] void broken(const std::string& what) {
  std::cerr << "checkpoint index reader broke a promise: " << what << "\n";
  std::abort();
}

void manifest(const Json& j) {
  using hftrain::ckpt::Manifest;
  Manifest m;
  try {
    m = Manifest::from_json(j, "fuzz/manifest.json");
  } catch (const hftrain::util::CheckpointError&) {
    return;
  }
  std::set<std::string> paths;
  for (const auto& f : m.files) {
    if (!hftrain::ckpt::is_safe_relative_path(f.path)) broken("unsafe path accepted: " + f.path);
    if (!paths.insert(f.path).second) broken("a path twice: " + f.path);
  }
  Manifest back;
  try {
    back = Manifest::from_json(m.to_json(), "fuzz/manifest-again.json");
  } catch (const hftrain::util::CheckpointError& e) {
    broken(std::string("a written manifest is refused: ") + e.what());
  }
  if (back.to_json() != m.to_json()) broken("a written manifest reads back differently");
}

void optimizer_index(const Json& j) {
  using hftrain::ckpt::OptimizerIndex;
  OptimizerIndex index;
  try {
    index = OptimizerIndex::from_json(j, "fuzz/index.json");
  } catch (const hftrain::util::CheckpointError&) {
    return;
  }
  for (const auto& [name, t] : index.tensors) {
    int64_t covered = 0;
    for (const auto& p : t.pieces) {
      if (p.offset != covered || p.count < 0) broken("pieces do not tile " + name);
      covered += p.count;
    }
    if (covered != t.numel()) broken("pieces do not cover " + name);
  }
  try {
    const OptimizerIndex back = OptimizerIndex::from_json(index.to_json(), "fuzz/index-again.json");
    if (back.to_json() != index.to_json()) broken("a written index reads back differently");
  } catch (const hftrain::util::CheckpointError& e) {
    broken(std::string("a written index is refused: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    hftrain::util::check_json_depth<hftrain::util::CheckpointError>(text, "fuzz.json");
  } catch (const hftrain::util::CheckpointError&) {
    return 0;
  }
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  manifest(j);
  optimizer_index(j);
  return 0;
}
