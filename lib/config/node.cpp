#include "config/node.h"

#include "util/strings.h"

namespace hftrain::config {

std::string Origin::describe() const {
  std::string out;
  switch (kind) {
    case Kind::kDefault: out = "default"; break;
    case Kind::kModel: out = "model.from " + source; break;
    case Kind::kFile:
    case Kind::kCheckpoint:
      out = kind == Kind::kCheckpoint ? "checkpoint " + source : source;
      if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
      break;
    case Kind::kEnvironment: out = "environment " + util::clip(source); break;
    case Kind::kCommandLine: out = "command line `" + util::clip(source) + "`"; break;
  }
  if (!via.empty()) out += " via " + via;
  return out;
}

std::string to_string(const KeyPath& path) { return util::join(path, "."); }

Node Node::scalar(std::string text, bool quoted, Origin origin) {
  Node n(Kind::kScalar, std::move(origin));
  n.text_ = std::move(text);
  n.quoted_ = quoted;
  return n;
}

const char* Node::kind_name() const {
  switch (kind_) {
    case Kind::kNull: return "null";
    case Kind::kScalar: return "scalar";
    case Kind::kSequence: return "list";
    case Kind::kMap: return "mapping";
  }
  return "?";
}

const Node* Node::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

Node* Node::find(std::string_view key) {
  return const_cast<Node*>(static_cast<const Node*>(this)->find(key));
}

Node& Node::set(const std::string& key, Node value) {
  if (Node* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  entries_.emplace_back(key, std::move(value));
  return entries_.back().second;
}

bool Node::erase(std::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

const Node* Node::find_path(const KeyPath& path) const {
  const Node* cur = this;
  for (const auto& seg : path) {
    if (!cur->is_map()) return nullptr;
    cur = cur->find(seg);
    if (!cur) return nullptr;
  }
  return cur;
}

Node* Node::find_path(const KeyPath& path) {
  return const_cast<Node*>(static_cast<const Node*>(this)->find_path(path));
}

void Node::merge_from(const Node& src) {
  // `optimizer:` with nothing under it is an empty section, not an instruction to drop its keys.
  if (is_map() && src.is_null()) return;
  if (is_map() && src.is_map()) {
    for (const auto& [key, value] : src.entries_) {
      if (Node* mine = find(key)) {
        mine->merge_from(value);
      } else {
        entries_.emplace_back(key, value);
      }
    }
    return;
  }
  *this = src;
}

}  // namespace hftrain::config
