#include "optim/state_io.h"

#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::optim::detail {
namespace {

using Json = nlohmann::json;

const char* const kHint =
    "the checkpoint's optimizer state does not fit this run's model and optimizer settings; resume "
    "with the settings it was saved with, or start a new run";

[[noreturn]] void fail(const std::string& message) {
  throw util::CheckpointError("optimizer state: " + message, kHint);
}

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

// "'a', 'b', 'c' and 2 more"
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

const Json& field(const Json& meta, const char* key) {
  auto it = meta.find(key);
  if (it == meta.end()) fail(std::string("meta has no \"") + key + "\"");
  return *it;
}

}  // namespace

Json base_meta(std::string_view optimizer, const std::vector<ParamGroup>& groups) {
  Json meta = {
      {"optimizer", std::string(optimizer)}, {"format", kStateFormat}, {"groups", Json::array()}};
  for (const auto& g : groups) {
    meta["groups"].push_back({{"params", g.names},
                              {"base_lr", g.base_lr},
                              {"lr", g.lr},
                              {"weight_decay", g.weight_decay}});
  }
  return meta;
}

void add_tensor(OptimizerState& state, const std::string& name, const char* key,
                const torch::Tensor& t) {
  if (t.defined()) state.tensors.emplace_back(name + "/" + key, t);
}

std::vector<LoadedParam> check_and_copy(const OptimizerState& state,
                                        const std::vector<ParamGroup>& groups,
                                        const StateLayout& layout) {
  const Json& meta = state.meta;
  if (!meta.is_object()) fail("meta is not a JSON object");

  // Identity first: a state of another optimizer fails here, whatever else is in it.
  const Json& optimizer = field(meta, "optimizer");
  if (!optimizer.is_string()) fail("meta \"optimizer\" is not a string");
  if (optimizer.get<std::string>() != layout.optimizer) {
    fail("saved by optimizer '" + optimizer.get<std::string>() +
         "', but this run's optimizer is '" + std::string(layout.optimizer) + "'");
  }
  const Json& format = field(meta, "format");
  if (!format.is_number_integer() || format.get<int64_t>() != kStateFormat) {
    fail("meta \"format\" is " + format.dump() + "; this hftrain reads format " +
         std::to_string(kStateFormat));
  }

  // This optimizer's parameters, flattened in group order.
  std::vector<std::string> names;
  std::vector<const torch::Tensor*> params;
  std::vector<size_t> group_of;
  std::unordered_map<std::string, size_t> index_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].names.size(); ++i) {
      index_of.emplace(groups[g].names[i], params.size());
      names.push_back(groups[g].names[i]);
      params.push_back(&groups[g].params[i]);
      group_of.push_back(g);
    }
  }

  // The saved optimizer's parameters: a parameter without state is told apart from one the
  // saved optimizer never had. Group membership may differ (per-glob settings come from the
  // config).
  const Json& saved_groups = field(meta, "groups");
  if (!saved_groups.is_array()) fail("meta \"groups\" is not an array");
  std::set<std::string> saved_names;
  for (const auto& g : saved_groups) {
    if (!g.is_object() || !g.contains("params") || !g["params"].is_array()) {
      fail("meta \"groups\" entries must be objects with a \"params\" array");
    }
    for (const auto& n : g["params"]) {
      if (!n.is_string())
        fail("meta \"groups\" lists a parameter name that is not a string: " + n.dump());
      if (!saved_names.insert(n.get<std::string>()).second) {
        fail("meta \"groups\" lists parameter '" + n.get<std::string>() + "' twice");
      }
    }
  }
  std::vector<std::string> missing, unexpected;
  for (const auto& n : names) {
    if (!saved_names.count(n)) missing.push_back(n);
  }
  for (const auto& n : saved_names) {
    if (!index_of.count(n)) unexpected.push_back(n);
  }
  if (!missing.empty()) {
    fail("parameter " + name_list(missing) +
         " of this run is missing from the saved optimizer's parameters");
  }
  if (!unexpected.empty())
    fail("unexpected parameter " + name_list(unexpected) + ", which this run does not have");

  std::vector<LoadedParam> loaded(params.size());
  if (layout.counts_steps) {
    const Json& steps = field(meta, "steps");
    if (!steps.is_object()) fail("meta \"steps\" is not an object");
    for (const auto& [name, n] : steps.items()) {
      auto it = index_of.find(name);
      if (it == index_of.end()) fail("meta \"steps\" names unexpected parameter '" + name + "'");
      if (!n.is_number_integer() || n.get<int64_t>() < 1) {
        fail("meta \"steps\" of parameter '" + name + "' is " + n.dump() +
             ", not a step count >= 1");
      }
      loaded[it->second].has_state = true;
      loaded[it->second].step = n.get<int64_t>();
    }
  }

  std::vector<std::map<std::string, torch::Tensor>> given(params.size());
  for (const auto& [full_key, t] : state.tensors) {
    const size_t slash = full_key.rfind('/');
    if (slash == std::string::npos)
      fail("tensor '" + full_key + "' is not named <parameter>/<state key>");
    const std::string name = full_key.substr(0, slash);
    auto it = index_of.find(name);
    if (it == index_of.end())
      fail("tensor '" + full_key + "' belongs to unexpected parameter '" + name + "'");
    if (!t.defined()) fail("tensor '" + full_key + "' is undefined");
    if (!given[it->second].emplace(full_key.substr(slash + 1), t).second) {
      fail("tensor '" + full_key + "' appears twice");
    }
    if (!layout.counts_steps) loaded[it->second].has_state = true;
  }

  torch::NoGradGuard no_grad;
  for (size_t index = 0; index < params.size(); ++index) {
    const std::string& name = names[index];
    LoadedParam& out = loaded[index];
    if (!out.has_state) {
      if (!given[index].empty()) {
        fail("parameter '" + name + "' has state tensors but no step count in meta \"steps\"");
      }
      continue;
    }
    const torch::Tensor& param = *params[index];
    const std::vector<TensorSpec> specs = layout.specs(group_of[index], index, param);
    for (const auto& [key, t] : given[index]) {
      bool known = false;
      for (const auto& s : specs) known = known || s.key == key;
      if (!known) {
        fail("unexpected state tensor '" + name + "/" + key + "': this run's " +
             std::string(layout.optimizer) + " settings keep no such state");
      }
    }
    for (const auto& s : specs) {
      auto it = given[index].find(s.key);
      if (it == given[index].end()) {
        fail("parameter '" + name + "' has state but no tensor '" + name + "/" + s.key +
             "', which this run's " + std::string(layout.optimizer) + " settings need");
      }
      const torch::Tensor& src = it->second;
      if (src.sizes() != c10::IntArrayRef(s.shape)) {
        fail("tensor '" + name + "/" + s.key + "' has shape " + shape_text(src.sizes()) +
             ", expected " + shape_text(s.shape) + " for parameter '" + name + "' of shape " +
             shape_text(param.sizes()));
      }
      if (src.layout() != torch::kStrided) fail("tensor '" + name + "/" + s.key + "' is not a dense tensor");
      // The dtype this optimizer writes it in: another one is a damaged or foreign state, never
      // converted (an empty piece, which a rank without a share of the parameter reads, holds no
      // values to convert).
      if (src.scalar_type() != s.dtype && src.numel() > 0) {
        fail("tensor '" + name + "/" + s.key + "' holds " + std::string(c10::toString(src.scalar_type())) +
             ", expected " + std::string(c10::toString(s.dtype)) + ", the dtype " + std::string(layout.optimizer) +
             " keeps it in");
      }
      // The parameter's own layout where the shapes agree, as the optimizer would allocate it.
      const auto options = torch::TensorOptions().dtype(s.dtype).device(param.device());
      torch::Tensor dst = src.sizes() == param.sizes()
                              ? torch::empty_like(param, options, torch::MemoryFormat::Preserve)
                              : torch::empty(s.shape, options);
      dst.copy_(src);
      out.tensors.push_back(std::move(dst));
    }
  }
  return loaded;
}

}  // namespace hftrain::optim::detail
