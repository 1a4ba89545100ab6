#include "config/interpolate.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "config/yaml_load.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

struct Piece {
  bool is_ref = false;
  std::string text;  // literal text, or the reference inside ${...}
};

// Splits "a${x}b" into pieces; returns false (with `error`) on an unterminated reference.
bool split_pieces(const std::string& s, std::vector<Piece>& out, std::string& error) {
  std::string literal;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, "\\${") == 0) {
      literal += "${";
      i += 3;
    } else if (s.compare(i, 2, "${") == 0) {
      size_t close = s.find('}', i + 2);
      if (close == std::string::npos) {
        error = "unterminated `${` in `" + s + "`";
        return false;
      }
      std::string inner = s.substr(i + 2, close - i - 2);
      if (inner.find("${") != std::string::npos) {
        error = "nested `${` in `" + s + "` is not supported";
        return false;
      }
      if (!literal.empty()) out.push_back({false, std::move(literal)});
      literal.clear();
      out.push_back({true, util::trim(inner)});
      i = close + 1;
    } else {
      literal += s[i++];
    }
  }
  if (!literal.empty()) out.push_back({false, std::move(literal)});
  return true;
}

bool has_interpolation(const Node& n) {
  return n.is_scalar() && n.text().find("${") != std::string::npos;
}

class Interpolator {
 public:
  Interpolator(Node& root, const Schema& schema, const util::Environment& env, Diagnostics& diags)
      : root_(root), schema_(schema), env_(env), diags_(diags) {}

  std::set<std::string> run() {
    visit(root_, {});
    return failed_;
  }

 private:
  // Resolves every interpolation under `node`, whose key path is `path`. Returns false when a
  // problem was reported (the node is then left as written).
  bool visit(Node& node, const KeyPath& path) {
    const std::string key = to_string(path);
    if (done_.count(key)) return true;
    if (failed_.count(key)) return false;
    if (std::find(stack_.begin(), stack_.end(), key) != stack_.end()) {
      std::vector<std::string> loop(std::find(stack_.begin(), stack_.end(), key), stack_.end());
      loop.push_back(key);
      diags_.add(node.origin().describe(), "interpolation cycle: " + util::join(loop, " -> "),
                 "break the loop by giving one of these keys a plain value");
      return false;
    }
    stack_.push_back(key);
    bool ok = true;
    if (node.is_map()) {
      for (auto& [k, child] : node.entries()) {
        KeyPath sub = path;
        sub.push_back(k);
        ok = visit(child, sub) && ok;
      }
    } else if (node.is_sequence()) {
      for (size_t i = 0; i < node.items().size(); ++i) {
        KeyPath sub = path;
        if (sub.empty()) sub.push_back("");
        sub.back() += "[" + std::to_string(i) + "]";
        ok = visit(node.items()[i], sub) && ok;
      }
    } else if (has_interpolation(node)) {
      ok = substitute(node, key);
    }
    stack_.pop_back();
    (ok ? done_ : failed_).insert(key);
    return ok;
  }

  bool substitute(Node& node, const std::string& key) {
    const std::string where = node.origin().describe();
    std::vector<Piece> pieces;
    std::string error;
    if (!split_pieces(node.text(), pieces, error)) {
      diags_.add(where, "`" + key + "`: " + error, "write \\${ for a literal ${");
      return false;
    }
    const bool whole = pieces.size() == 1 && pieces[0].is_ref;
    std::string text;
    for (const auto& piece : pieces) {
      if (!piece.is_ref) {
        text += piece.text;
        continue;
      }
      std::optional<Node> value = lookup(piece.text, node, key);
      if (!value) return false;
      if (whole) {
        Origin origin = node.origin();
        origin.via = "${" + piece.text + "}";
        const bool env_ref = util::starts_with(piece.text, "env:");
        if (!env_ref && (value->origin().kind != Origin::Kind::kDefault || !value->origin().via.empty())) {
          origin.via += " = " + value->origin().describe();
        }
        *value = retag(*value, origin);
        node = std::move(*value);
        return true;
      }
      if (!value->is_scalar()) {
        diags_.add(where, "`" + key + "`: `${" + piece.text + "}` is a " + value->kind_name() +
                              " and cannot be part of a string");
        return false;
      }
      text += value->text();
    }
    // `${trainer.log_every}0` is 250, an integer; only a quoted original stays a string.
    node = Node::scalar(text, node.quoted(), node.origin());
    return true;
  }

  // Gives `n` and everything under it the origin of the referring key.
  static Node retag(const Node& n, const Origin& origin) {
    Node out = n;
    out.origin() = origin;
    for (auto& item : out.items()) item = retag(item, origin);
    for (auto& [k, v] : out.entries()) v = retag(v, origin);
    return out;
  }

  std::optional<Node> lookup(const std::string& ref, const Node& node, const std::string& key) {
    const std::string where = node.origin().describe();
    if (util::starts_with(ref, "env:")) {
      std::string spec = ref.substr(4);
      std::optional<std::string> fallback;
      if (size_t comma = spec.find(','); comma != std::string::npos) {
        fallback = spec.substr(comma + 1);
        spec = util::trim(spec.substr(0, comma));
      }
      std::optional<std::string> value = env_.get(spec);
      if (!value) value = fallback;
      if (!value) {
        diags_.add(where, "`" + key + "` uses environment variable " + spec + ", which is not set",
                   "set it, or give a default: ${env:" + spec + ",VALUE}");
        return std::nullopt;
      }
      Origin origin = node.origin();
      if (!util::check_utf8_text(*value).empty()) {
        diags_.add(where, "environment variable " + spec + " is not valid UTF-8 text");
        return std::nullopt;
      }
      // 3e-4 becomes a number and true a bool, but `my run #1`, `- a` or `a: b` stay the text
      // they are: an environment variable is a value, not YAML to be interpreted.
      try {
        Node parsed = parse_yaml_value(*value, origin);
        if (parsed.is_scalar() && !parsed.quoted() && parsed.text() == util::trim(*value)) return parsed;
      } catch (const util::Error&) {
      }
      return Node::scalar(*value, true, origin);
    }
    KeyPath target = util::split(ref, '.');
    for (const auto& seg : target) {
      if (seg.empty()) {
        diags_.add(where, "`" + key + "`: malformed reference `${" + ref + "}`",
                   "write ${section.key} or ${env:VAR}");
        return std::nullopt;
      }
    }
    Node* found = root_.find_path(target);
    if (!found) {
      auto near = util::closest_matches(ref, schema_.all_paths(), 1);
      diags_.add(where, "`" + key + "` refers to `${" + ref + "}`, which is not a key",
                 near.empty() ? "`hftrain config --schema` lists every key"
                              : "did you mean `${" + near[0] + "}`?");
      return std::nullopt;
    }
    if (!visit(*found, target)) return std::nullopt;
    return *found;
  }

  Node& root_;
  const Schema& schema_;
  const util::Environment& env_;
  Diagnostics& diags_;
  std::vector<std::string> stack_;
  std::set<std::string> done_;
  std::set<std::string> failed_;
};

}  // namespace

std::set<std::string> interpolate(Node& root, const Schema& schema, const util::Environment& env,
                                  Diagnostics& diags) {
  return Interpolator(root, schema, env, diags).run();
}

}  // namespace hftrain::config
