// The untyped config tree that recipes, overrides and the environment are merged into before
// validation turns it into the typed Config. Every node remembers where its value came from.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hftrain::config {

struct Origin {
  // kModel: read from the model directory model.from names (its shape, its tokenizer).
  enum class Kind { kDefault, kModel, kFile, kCheckpoint, kEnvironment, kCommandLine };
  Kind kind = Kind::kDefault;
  std::string source;  // file path, environment variable, or the command-line argument
  int line = 0;        // 1-based; files only
  int column = 0;
  std::string via;     // set when the value was copied by ${...} interpolation

  static Origin file(std::string path, int line, int column, Kind kind = Kind::kFile) {
    return Origin{kind, std::move(path), line, column, {}};
  }
  // "recipes/x.yaml:3:5", "default", "environment HFTRAIN__OPTIMIZER__LR",
  // "command line `optimizer.lr=3e-4`", "checkpoint runs/a/checkpoint-10/config.yaml:4:3",
  // "model.from models/tiny/config.json".
  std::string describe() const;
};

// A dotted key path split into its segments: "optimizer.lr" -> {"optimizer", "lr"}.
using KeyPath = std::vector<std::string>;
std::string to_string(const KeyPath& path);

class Node {
 public:
  enum class Kind { kNull, kScalar, kSequence, kMap };

  static Node null(Origin origin) { return Node(Kind::kNull, std::move(origin)); }
  static Node scalar(std::string text, bool quoted, Origin origin);
  static Node sequence(Origin origin) { return Node(Kind::kSequence, std::move(origin)); }
  static Node map(Origin origin) { return Node(Kind::kMap, std::move(origin)); }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_scalar() const { return kind_ == Kind::kScalar; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_map() const { return kind_ == Kind::kMap; }
  const char* kind_name() const;

  const Origin& origin() const { return origin_; }
  Origin& origin() { return origin_; }
  // Where the key naming this node was written (files only); its own origin otherwise.
  const Origin& key_origin() const { return key_origin_.line > 0 ? key_origin_ : origin_; }
  void set_key_origin(Origin origin) { key_origin_ = std::move(origin); }

  // Scalars: the text as written, and whether it was quoted (then it is always a string).
  const std::string& text() const { return text_; }
  bool quoted() const { return quoted_; }

  std::vector<Node>& items() { return items_; }
  const std::vector<Node>& items() const { return items_; }
  std::vector<std::pair<std::string, Node>>& entries() { return entries_; }
  const std::vector<std::pair<std::string, Node>>& entries() const { return entries_; }

  // Map access. find() returns nullptr when absent; set() replaces or appends, keeping order.
  const Node* find(std::string_view key) const;
  Node* find(std::string_view key);
  Node& set(const std::string& key, Node value);
  bool erase(std::string_view key);

  // Follows a path through nested maps; nullptr when any step is missing or not a map.
  const Node* find_path(const KeyPath& path) const;
  Node* find_path(const KeyPath& path);

  // Deep merge: maps merge key by key (src wins), a null leaves a map as it is, anything else is
  // replaced by src.
  void merge_from(const Node& src);

 private:
  Node(Kind kind, Origin origin) : kind_(kind), origin_(std::move(origin)) {}

  Kind kind_;
  Origin origin_;
  Origin key_origin_;
  std::string text_;
  bool quoted_ = false;
  std::vector<Node> items_;
  std::vector<std::pair<std::string, Node>> entries_;
};

}  // namespace hftrain::config
