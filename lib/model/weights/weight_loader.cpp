#include "model/weights/weight_loader.h"

#include <algorithm>
#include <map>
#include <set>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::model {
namespace {

// One copy the load makes once everything has been checked.
struct Copy {
  std::string stored;    // the source's name
  torch::Tensor target;  // the parameter, or the rows of it the piece fills (a view)
  bool transposed = false;
  std::string param;     // the parameter's name
  int64_t offset = 0;    // the first row the piece fills
  bool handed_over = false;
};

// The parameters of one optional group that are not stored at all, and how many it has.
struct AbsentGroup {
  std::vector<std::string> params;  // the module's names
  std::vector<std::string> keys;    // what the checkpoint lacks
  size_t size = 0;
};

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

std::string WeightLoadReport::describe() const {
  std::string out;
  if (!initialised.empty())
    out += "newly initialised (not in the checkpoint, train them): " + describe_names(initialised);
  if (!dropped.empty())
    out += std::string(out.empty() ? "" : "; ") +
           "not used from the checkpoint: " + describe_names(dropped);
  return out;
}

WeightLoadReport load_weights(const TensorList& params, const TensorSource& source,
                              const WeightRules& rules) {
  std::map<std::string, std::string> stored;  // key -> as stored
  std::vector<std::string> unexpected;
  for (const auto& name : source.names()) {
    if (!stored.emplace(rules.key_of ? rules.key_of(name) : name, name).second)
      unexpected.push_back(name);
  }

  // Plan every copy and check names, shapes and dtypes before changing anything.
  WeightLoadReport report;
  std::vector<std::string> missing, mismatched;
  std::map<std::string, AbsentGroup> absent_groups;
  std::set<std::string> used;  // keys
  std::vector<Copy> copies;
  for (const auto& [name, param] : params) {
    std::vector<WeightPiece> pieces;
    if (rules.pieces_of) pieces = rules.pieces_of(name, param);
    if (pieces.empty()) pieces.push_back({name});
    std::vector<std::string> absent;
    for (const WeightPiece& piece : pieces) {
      const auto found = stored.find(piece.key);
      if (found == stored.end()) {
        absent.push_back(piece.key);
        continue;
      }
      used.insert(piece.key);
      const torch::Tensor target =
          piece.rows < 0 ? param : param.narrow(0, piece.offset, piece.rows);
      std::vector<int64_t> want = target.sizes().vec();
      if (piece.transposed) std::reverse(want.begin(), want.end());
      // A view of the mapping for a stored file: checking copies no tensor data.
      const torch::Tensor t = source.get(found->second);
      if (t.sizes() != c10::IntArrayRef(want) || !t.is_floating_point()) {
        mismatched.push_back(found->second + " (" + std::string(c10::toString(t.scalar_type())) +
                             " " + c10::str(t.sizes()) + ", expected " +
                             c10::str(c10::IntArrayRef(want)) + " floating point)");
        continue;
      }
      copies.push_back({found->second, target, piece.transposed, name, piece.rows < 0 ? 0 : piece.offset,
                        rules.handed_over && rules.take && rules.handed_over(name)});
    }
    const std::string group = rules.optional_group ? rules.optional_group(name) : "";
    if (group.empty()) {
      append(missing, absent);
      continue;
    }
    AbsentGroup& g = absent_groups[group];
    ++g.size;
    if (absent.size() == pieces.size()) {
      g.params.push_back(name);
      append(g.keys, absent);
    } else {
      append(missing, absent);
    }
  }
  // A group entirely absent keeps its initialisation; a group partly there is a damaged file.
  for (const auto& [group, g] : absent_groups) {
    if (g.params.size() == g.size) {
      append(report.initialised, g.params);
    } else {
      append(missing, g.keys);
    }
  }
  for (const auto& [key, as_stored] : stored) {
    if (used.count(key)) continue;
    (rules.droppable && rules.droppable(key) ? report.dropped : unexpected).push_back(as_stored);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string message = source.where() + " does not match " + rules.expected + ":";
    if (!missing.empty()) message += " missing " + describe_names(missing) + ";";
    if (!unexpected.empty()) message += " unexpected " + describe_names(unexpected) + ";";
    if (!mismatched.empty())
      message += " wrong shape or type " + describe_names(mismatched, 8, false) + ";";
    message.pop_back();
    throw util::CheckpointError(message, rules.hint);
  }
  torch::NoGradGuard no_grad;
  std::map<std::string, std::vector<const Copy*>> handed;  // parameter -> its pieces
  for (const Copy& c : copies) {
    if (c.handed_over) {
      handed[c.param].push_back(&c);
      continue;
    }
    const torch::Tensor t = source.get(c.stored);
    c.target.copy_(c.transposed ? t.t() : t);
  }
  for (auto& [name, pieces] : handed) {
    std::sort(pieces.begin(), pieces.end(), [](const Copy* a, const Copy* b) { return a->offset < b->offset; });
    std::vector<torch::Tensor> tensors;
    for (const Copy* c : pieces) {
      const torch::Tensor t = source.get(c->stored);
      tensors.push_back(c->transposed ? t.t() : t);
    }
    rules.take(name, std::move(tensors));
  }
  return report;
}

}  // namespace hftrain::model
