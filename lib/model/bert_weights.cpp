#include "model/bert_weights.h"

#include <map>
#include <set>

#include <torch/torch.h>

#include "model/model_files.h"
#include "util/error.h"
#include "util/fs.h"

namespace hftrain::model {
namespace {

constexpr std::string_view kPrefix = "bert.";

// A stored name as our parameter names spell it, but without "bert.": the prefix stripped (either
// layout loads) and TensorFlow's LayerNorm.gamma / beta renamed as transformers does.
std::string normalised(std::string name) {
  if (name.starts_with(kPrefix)) name.erase(0, kPrefix.size());
  for (const auto& [from, to] : {std::pair{".LayerNorm.gamma", ".LayerNorm.weight"},
                                 std::pair{".LayerNorm.beta", ".LayerNorm.bias"}}) {
    if (name.ends_with(from))
      name = name.substr(0, name.size() - std::string_view(from).size()) + to;
  }
  return name;
}

std::string unprefixed(const std::string& param) {
  return param.starts_with(kPrefix) ? param.substr(kPrefix.size()) : param;
}

// Stored tensors transformers itself drops when it loads a BERT encoder or classifier: buffers and
// pretraining heads, and a classifier the model has no place for.
bool droppable(const std::string& name, bool with_classifier) {
  return name == "embeddings.position_ids" || name == "embeddings.token_type_ids" ||
         name.starts_with("cls.") || (!with_classifier && name.starts_with("classifier."));
}

// Parameter groups a checkpoint may lack as a whole: they then keep their initialisation.
std::string optional_group(const std::string& param) {
  for (const char* group : {"classifier.", "bert.pooler."}) {
    if (param.starts_with(group)) return group;
  }
  return "";
}

struct Copy {
  std::string stored;  // the source's name
  torch::Tensor param;
};

}  // namespace

std::string BertLoadReport::describe() const {
  std::string out;
  if (!initialised.empty()) {
    out += "newly initialised (not in the checkpoint, train them): " + describe_names(initialised);
  }
  if (!dropped.empty()) {
    out += std::string(out.empty() ? "" : "; ") +
           "not used from the checkpoint: " + describe_names(dropped);
  }
  return out;
}

BertLoadReport load_bert_weights(BertEncoder& model, const TensorSource& hf) {
  const bool with_classifier = model->spec().with_classifier;
  std::map<std::string, std::string> stored;  // normalised -> as stored
  std::vector<std::string> unexpected;
  for (const auto& name : hf.names()) {
    // Two stored names for one tensor ("bert.x" and "x") would make the choice arbitrary.
    if (!stored.emplace(normalised(name), name).second) unexpected.push_back(name);
  }

  // Plan every copy and check names, shapes and dtypes before changing anything.
  BertLoadReport report;
  std::vector<std::string> missing, misshaped;
  std::map<std::string, std::vector<std::string>>
      absent_in_group;  // group -> its parameters not stored
  std::map<std::string, size_t> group_size;
  std::set<std::string> used;
  std::vector<Copy> copies;
  for (auto& [name, param] : model->parameters_by_name()) {
    const std::string group = optional_group(name);
    if (!group.empty()) ++group_size[group];
    auto found = stored.find(unprefixed(name));
    if (found == stored.end()) {
      (group.empty() ? missing : absent_in_group[group]).push_back(name);
      continue;
    }
    used.insert(found->first);
    const torch::Tensor t = hf.get(found->second);
    if (t.sizes() != param.sizes() || !t.is_floating_point()) {
      misshaped.push_back(found->second + " (" + std::string(c10::toString(t.scalar_type())) + " " +
                          c10::str(t.sizes()) + ", expected " + c10::str(param.sizes()) + ")");
      continue;
    }
    copies.push_back({found->second, param});
  }
  // A group entirely absent keeps its initialisation; a group partly there is a damaged file.
  for (auto& [group, names] : absent_in_group) {
    auto& into = names.size() == group_size[group] ? report.initialised : missing;
    into.insert(into.end(), names.begin(), names.end());
  }
  for (const auto& [name, as_stored] : stored) {
    if (used.count(name)) continue;
    (droppable(name, with_classifier) ? report.dropped : unexpected).push_back(as_stored);
  }
  if (!missing.empty() || !misshaped.empty() || !unexpected.empty()) {
    std::string message =
        hf.where() + " does not hold the weights of the BERT model its config describes:";
    if (!missing.empty()) message += " missing " + describe_names(missing) + ";";
    if (!unexpected.empty()) message += " unexpected " + describe_names(unexpected) + ";";
    if (!misshaped.empty())
      message += " wrong shape or type " + describe_names(misshaped, 8, false) + ";";
    message.pop_back();
    throw util::CheckpointError(
        message,
        "the weights and config.json come from different models, or the number of "
        "labels differs from the classifier's (check config.json and the data's labels)");
  }
  torch::NoGradGuard no_grad;
  for (const Copy& c : copies) c.param.copy_(hf.get(c.stored));
  return report;
}

BertLoadReport load_bert_weights(BertEncoder& model, const TensorList& hf) {
  return load_bert_weights(model, TensorListSource(hf, "the Hugging Face weights"));
}

TensorList to_hf_bert_weights(const BertEncoder& model) {
  const bool keep_prefix = model->spec().with_classifier;  // BertModel files have no "bert."
  TensorList out;
  torch::NoGradGuard no_grad;
  for (const auto& [name, param] : model->parameters_by_name()) {
    out.emplace_back(keep_prefix ? name : unprefixed(name),
                     param.detach().to(torch::kCPU, torch::kFloat32));
  }
  return out;
}

void write_hf_bert(const BertEncoder& model, const std::filesystem::path& dir,
                   const std::vector<std::string>& id2label, uint64_t max_shard_bytes) {
  const std::string config =
      bert_config_json(model->spec(), id2label);  // refuses bad labels before writing
  write_sharded_weights(dir, to_hf_bert_weights(model), max_shard_bytes);
  util::atomic_write_file(dir / kHfConfigFile, config);
}

}  // namespace hftrain::model
