#include "config/yaml_load.h"

#include <functional>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

using util::ConfigError;

std::string at(const std::string& source, int line, int column) {
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

// yaml-cpp accepts tabs in some indentation positions; YAML forbids them, and they are the most
// common cause of recipes that look right and parse wrong, so they get their own message.
void reject_tab_indentation(std::string_view text, const std::string& source) {
  int line = 0;
  for (const std::string& raw : util::split(text, '\n')) {
    ++line;
    const size_t content = raw.find_first_not_of(" \t\r");
    // YAML allows tabs on blank lines and before comments, but yaml-cpp 0.7 rejects them there
    // too ("illegal tab when looking for indentation"), so every leading tab gets this message.
    if (raw.find('\t') < std::min(content, raw.size())) {
      throw ConfigError(source + ":" + std::to_string(line) + ": tab character in indentation",
                        "YAML indents with spaces only; replace the tabs with spaces");
    }
  }
}

// A `---` marker after content starts a second document, and content after a `...` end marker
// is one too: YAML::Load would silently drop either.
void reject_second_document(std::string_view text, const std::string& source) {
  bool content = false;
  bool ended = false;
  int line = 0;
  for (const std::string& raw : util::split(text, '\n')) {
    ++line;
    const bool start = raw.rfind("---", 0) == 0 && (raw.size() == 3 || raw[3] == ' ' || raw[3] == '\r');
    const bool end = raw.rfind("...", 0) == 0 && (raw.size() == 3 || raw[3] == ' ' || raw[3] == '\r');
    if (end) {
      ended = true;
      continue;
    }
    const bool marker = start;
    std::string t0 = util::trim(raw);
    if ((marker && content) || (ended && !t0.empty() && t0[0] != '#')) {
      throw ConfigError(source + ":" + std::to_string(line) + ": a second YAML document starts here",
                        "a recipe is one document; remove the extra `---` separator");
    }
    std::string t = util::trim(raw);
    if (!t.empty() && t[0] != '#' && t[0] != '%' && !marker) content = true;
  }
}

class Converter {
 public:
  // With `fixed`, every node gets that origin instead of its position in the text.
  Converter(std::string source, Origin::Kind kind, const Origin* fixed = nullptr)
      : source_(std::move(source)), kind_(kind), fixed_(fixed) {}

  Node convert(const YAML::Node& yaml, const Origin& parent, int depth) {
    Origin origin = origin_of(yaml, parent);
    // Aliases are expanded into copies, so a few hundred bytes of `&a [*b, *b, ...]` can ask for
    // billions of nodes. No recipe comes near this budget.
    if (++nodes_ > kMaxNodes) {
      throw ConfigError(origin.describe() + ": expands to more than " + std::to_string(kMaxNodes) +
                            " values (nested YAML aliases?)",
                        "write the values out instead of nesting aliases");
    }
    if (depth > kMaxNestingDepth) {
      throw ConfigError(origin.describe() + ": nesting deeper than " +
                            std::to_string(kMaxNestingDepth) + " levels",
                        "recipes are a few levels deep; check for runaway brackets or indentation");
    }
    switch (yaml.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Node::null(origin);
      case YAML::NodeType::Scalar: {
        const std::string& tag = yaml.Tag();
        bool quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
        return Node::scalar(yaml.Scalar(), quoted, origin);
      }
      case YAML::NodeType::Sequence: {
        Node seq = Node::sequence(origin);
        for (const auto& item : yaml) seq.items().push_back(convert(item, origin, depth + 1));
        return seq;
      }
      case YAML::NodeType::Map: {
        Node map = Node::map(origin);
        for (const auto& kv : yaml) {
          Origin key_origin = origin_of(kv.first, origin);
          if (!kv.first.IsScalar()) {
            throw ConfigError(key_origin.describe() +
                                  ": a key must be a plain name, not a " +
                                  (kv.first.IsMap() ? "mapping" : "list or null"),
                              "write `name: value`");
          }
          const std::string& key = kv.first.Scalar();
          if (const Node* first = map.find(key)) {
            const int first_line = first->key_origin().line;
            throw ConfigError(key_origin.describe() + ": duplicate key '" + key + "'" +
                                  (first_line > 0 ? " (first set at line " + std::to_string(first_line) + ")" : ""),
                              "keep one of the two");
          }
          Node value = convert(kv.second, key_origin, depth + 1);
          // Point the value's origin at its key when the value has no position of its own.
          if (value.is_null() || value.is_map()) value.origin() = key_origin;
          value.set_key_origin(key_origin);
          map.entries().emplace_back(key, std::move(value));
        }
        return map;
      }
    }
    return Node::null(origin);
  }

 private:
  Origin origin_of(const YAML::Node& yaml, const Origin& parent) const {
    if (fixed_) return *fixed_;
    const YAML::Mark mark = yaml.Mark();
    if (mark.is_null() || mark.line < 0) return parent;
    return Origin::file(source_, mark.line + 1, mark.column + 1, kind_);
  }

  static constexpr size_t kMaxNodes = 100000;
  std::string source_;
  Origin::Kind kind_;
  const Origin* fixed_;
  size_t nodes_ = 0;
};

[[noreturn]] void rethrow_yaml(const YAML::Exception& e, const std::string& source) {
  std::string msg = e.msg.empty() ? std::string("invalid YAML") : e.msg;
  if (!e.mark.is_null()) {
    throw ConfigError(at(source, e.mark.line + 1, e.mark.column + 1) + ": YAML syntax error: " + msg,
                      "fix the YAML at that position");
  }
  throw ConfigError(source + ": YAML syntax error: " + msg, "fix the YAML");
}

// yaml-cpp 0.7 lets a quoted scalar that is never closed run to the end of the file, silently
// swallowing every line after it. A sentinel key appended to the text must come back as a key of
// the top-level map; if it was swallowed, the scalar that holds it is the unterminated one.
void reject_unterminated(std::string_view text, const std::string& source) {
  static constexpr const char* kSentinel = "__hftrain_end_of_recipe__";
  std::string probe(text);
  probe += std::string("\n") + kSentinel + ": 0\n";
  YAML::Node doc;
  try {
    doc = YAML::Load(probe);
  } catch (const YAML::Exception&) {
    throw ConfigError(source + ": the file ends inside an unclosed quote or bracket", "close it");
  }
  if (doc.IsMap() && doc[kSentinel]) return;
  // Find the scalar that swallowed the sentinel, to name where it starts.
  std::function<std::optional<YAML::Mark>(const YAML::Node&, int)> holder =
      [&](const YAML::Node& n, int depth) -> std::optional<YAML::Mark> {
    if (n.IsScalar() && n.Scalar().find(kSentinel) != std::string::npos) return n.Mark();
    if ((n.IsSequence() || n.IsMap()) && depth < kMaxNestingDepth) {
      for (const auto& item : n) {
        if (auto found = holder(n.IsMap() ? item.second : item, depth + 1)) return found;
      }
    }
    return std::nullopt;
  };
  std::string where = source;
  if (auto mark = holder(doc, 0); mark && !mark->is_null()) {
    where += ":" + std::to_string(mark->line + 1) + ":" + std::to_string(mark->column + 1);
  }
  throw ConfigError(where + ": a quoted string starts here and is never closed, so it swallows the rest of the file",
                    "add the closing quote");
}

}  // namespace

Node parse_yaml(std::string_view text, const std::string& source, Origin::Kind kind) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  if (std::string problem = util::check_utf8_text(text); !problem.empty()) {
    throw ConfigError(source + ": not a text file: " + problem, "a recipe is UTF-8 YAML text");
  }
  reject_tab_indentation(text, source);
  reject_second_document(text, source);
  // YAML::Load, not LoadAll: yaml-cpp 0.7's LoadAll loops forever, allocating, on some malformed
  // input (a document that starts with ','; fixed upstream after 0.8). Load reads one document.
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    rethrow_yaml(e, source);
  }
  Origin top = Origin::file(source, 1, 1, kind);
  if (doc.IsNull()) {
    // yaml-cpp 0.7 reads some malformed text (a leading ',') as an empty document; text with
    // content that yields nothing is a syntax error, not an empty recipe.
    int line = 0;
    for (const std::string& raw : util::split(text, '\n')) {
      ++line;
      std::string t = util::trim(raw);
      if (t.empty() || t[0] == '#' || t[0] == '%' || t == "---" || t == "..." || t == "~" || t == "null") continue;
      throw ConfigError(
          source + ":" + std::to_string(line) + ": YAML syntax error: no document could be read from this line on",
          "fix the YAML at that position");
    }
  }
  Node root = Node::null(top);
  try {
    root = Converter(source, kind).convert(doc, top, 0);
  } catch (const YAML::Exception& e) {
    rethrow_yaml(e, source);
  }
  // A flow map ({...}) closes explicitly, and an unclosed quote inside it is a syntax error.
  if (root.is_map() && doc.Style() != YAML::EmitterStyle::Flow) reject_unterminated(text, source);
  return root;
}

Node load_yaml_file(const std::filesystem::path& path, Origin::Kind kind) {
  const std::string what = kind == Origin::Kind::kCheckpoint ? "checkpoint config" : "recipe";
  std::string text = util::read_file<ConfigError>(path, what, size_t{16} << 20);
  return parse_yaml(text, path.string(), kind);
}

Node parse_yaml_value(std::string_view text, const Origin& origin) {
  YAML::Node yaml;
  try {
    yaml = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin.describe() + ": cannot parse the value `" + std::string(text) +
                          "`: " + e.msg,
                      "values are YAML: 3, 1e-4, true, [1, 2], 'a string'");
  }
  if (yaml.IsNull()) {
    // yaml-cpp 0.7 reads malformed text such as ",5" as null; only a real null spelling is one.
    const std::string t = util::trim(text);
    if (!t.empty() && t != "~" && t != "null" && t != "Null" && t != "NULL") {
      throw ConfigError(origin.describe() + ": cannot parse the value `" + std::string(text) + "`",
                        "quote it if it is a string: '...'");
    }
  }
  // Every node of an override carries the override's own origin, not a position in its text.
  try {
    return Converter(origin.describe(), origin.kind, &origin).convert(yaml, origin, 0);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin.describe() + ": cannot parse the value: " + e.msg);
  }
}

}  // namespace hftrain::config
