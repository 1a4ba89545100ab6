// The one place stored tensors meet a module's parameters: hftrain's model directories
// (saved_model.h), Hugging Face decoders (hf_weights.h) and BERT encoders (bert_weights.h) all load
// through load_weights. It matches names, checks every shape and dtype, lists what is missing or
// unexpected, and only then copies, straight from the source (a memory-mapped file: one tensor at a
// time, converted to the parameter's dtype in the copy, so no second copy of the weights is held).
// Each loader says in WeightRules how names map and what it tolerates; the checks and the message
// are the same for all of them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/weights/stored_weights.h"

namespace hftrain::model {

// One stored tensor feeding a parameter: all of it, or the rows [offset, offset + rows) of its
// first dimension (Hugging Face stores the q/k/v and gate/up projections apart; hftrain fuses
// them).
struct WeightPiece {
  std::string key;          // the stored tensor's name as WeightRules::key_of spells it
  int64_t offset = 0;       // the first row it fills
  int64_t rows = -1;        // the rows it fills; -1: the whole parameter
  bool transposed = false;  // stored as the transpose (GPT-2's Conv1D weights)
};

// How a loader's stored names meet the module's, and what it tolerates. An empty function takes
// the default named beside it.
struct WeightRules {
  // What the stored tensors must match, for the message: "<where> does not match <expected>: ...".
  std::string expected;
  // The CheckpointError's hint: what usually causes a mismatch and what to do about it.
  std::string hint;
  // A stored name as the pieces spell it: a prefix stripped, an old spelling renamed. Default: the
  // name itself. A second stored name with the same key is unexpected (which one to load would be
  // arbitrary).
  std::function<std::string(const std::string& stored)> key_of;
  // The pieces of parameter `name`, whose tensor is `param`. Default, and for an empty list: one
  // piece keyed by `name`, the whole parameter.
  std::function<std::vector<WeightPiece>(const std::string& name, const torch::Tensor& param)>
      pieces_of;
  // Stored tensors (by key) the module has no place for that are dropped and reported rather than
  // refused: buffers, heads of another task. Default: none.
  std::function<bool(const std::string& key)> droppable;
  // The group of parameter `name` that a checkpoint may lack as a whole ("" when it must be
  // stored): a group with none of its tensors stored keeps its initialisation and is reported, a
  // group stored in part is missing the rest. Default: none.
  std::function<std::string(const std::string& name)> optional_group;
  // Parameters that are handed over instead of copied into (QLoRA quantizes them as they are
  // read, so that the base never lives in memory at full precision): checked like the others,
  // then `take(name, pieces)` gets the parameter's stored tensors in row order, each straight from
  // the source (a memory-mapped view) and transposed back where stored transposed. Default: none.
  std::function<bool(const std::string& name)> handed_over;
  std::function<void(const std::string& name, std::vector<torch::Tensor> pieces)> take;
};

// The hand-over part of WeightRules, for the loaders that build their own rules.
struct WeightHandover {
  std::function<bool(const std::string& name)> handed_over;
  std::function<void(const std::string& name, std::vector<torch::Tensor> pieces)> take;
};

// What a load did besides copying a tensor into every parameter.
struct WeightLoadReport {
  std::vector<std::string> initialised;  // parameters left as initialised, by the module's names
  std::vector<std::string> dropped;      // stored tensors not used, as stored
  // One line for the log ("" when there is nothing to say), naming both lists (layer numbers
  // folded).
  std::string describe() const;
};

// Copies the tensors of `source` into `params` (a module's parameters_by_name()) as `rules` map
// them. Checks every name, shape and dtype first (any floating-point dtype converts in the copy)
// and throws CheckpointError naming source.where(), every missing, unexpected and mis-shaped
// tensor at once, in one form:
//   <where> does not match <expected>: missing <keys>; unexpected <stored names>;
//   wrong shape or type <stored name> (<dtype> <shape>, expected <shape> floating point), ...
// (lists folded by describe_names); the parameters are then untouched.
WeightLoadReport load_weights(const TensorList& params, const TensorSource& source,
                              const WeightRules& rules);

}  // namespace hftrain::model
