#include "config/overrides.h"

#include <algorithm>
#include <cctype>

#include "config/yaml_load.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

bool valid_segment(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::string hint_syntax() { return "overrides look like a.b=VALUE, ~a.b or +a.b=VALUE"; }

}  // namespace

bool looks_like_override(const std::string& arg) {
  return arg.find('=') != std::string::npos || (!arg.empty() && (arg[0] == '~' || arg[0] == '+'));
}

RecipeArgs split_recipe_args(const std::vector<std::string>& args) {
  RecipeArgs out;
  for (const auto& arg : args) {
    // `runs/lr=1e-3/config.yaml` is a file, not an override: keys have no '/' and no ".yaml".
    const bool path_like = arg.find('/') != std::string::npos || arg.ends_with(".yaml") || arg.ends_with(".yml");
    if (!out.recipe && out.overrides.empty() && (path_like || !looks_like_override(arg))) {
      out.recipe = arg;
    } else {
      out.overrides.push_back(arg);
    }
  }
  return out;
}

std::optional<Override> parse_override(const std::string& arg, Diagnostics& diags) {
  Override o;
  o.origin.kind = Origin::Kind::kCommandLine;
  if (!util::check_utf8_text(arg).empty()) {
    o.origin.source = "argument with invalid bytes";
    diags.add(o.origin.describe(), "an override is not valid UTF-8 text", "check the shell quoting");
    return std::nullopt;
  }
  o.origin.source = arg;
  const std::string where = o.origin.describe();
  std::string key;
  if (!arg.empty() && arg[0] == '~') {
    o.op = Override::Op::kRemove;
    key = arg.substr(1);
    if (key.find('=') != std::string::npos) {
      diags.add(where, "`~` removes a key and takes no value", "write ~" + key.substr(0, key.find('=')));
      return std::nullopt;
    }
  } else {
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      diags.add(where, "not an override: no `=`", hint_syntax());
      return std::nullopt;
    }
    key = arg.substr(0, eq);
    o.value = arg.substr(eq + 1);
    if (!key.empty() && key[0] == '+') {
      o.op = Override::Op::kAdd;
      key = key.substr(1);
    }
    if (util::trim(o.value).empty()) {
      diags.add(where, "no value after `=`",
                "write " + key + "=VALUE, " + key + "=\"\" for an empty string, or ~" + key +
                    " to fall back to the default");
      return std::nullopt;
    }
  }
  if (key.empty()) {
    diags.add(where, "no key", hint_syntax());
    return std::nullopt;
  }
  o.path = util::split(key, '.');
  for (const auto& seg : o.path) {
    if (!valid_segment(seg)) {
      diags.add(where, "malformed key `" + key + "`",
                "keys are dotted names of letters, digits, _ and -, such as optimizer.lr");
      return std::nullopt;
    }
  }
  if (o.path[0] == "defaults") {
    diags.add(where, "`defaults` can only be set inside a recipe file");
    return std::nullopt;
  }
  return o;
}

std::vector<Override> environment_overrides(const util::Environment& env, Diagnostics& diags) {
  std::vector<Override> out;
  const std::string prefix = kEnvOverridePrefix;
  for (const auto& [name, value] : env.all()) {
    if (!util::starts_with(name, prefix)) continue;
    Override o;
    o.origin.kind = Origin::Kind::kEnvironment;
    o.origin.source = name;
    o.value = value;
    std::string rest = name.substr(prefix.size());
    bool ok = !rest.empty();
    size_t start = 0;
    while (ok) {
      size_t sep = rest.find("__", start);
      std::string seg = rest.substr(start, sep == std::string::npos ? std::string::npos : sep - start);
      for (char& c : seg) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      ok = valid_segment(seg);
      o.path.push_back(seg);
      if (sep == std::string::npos) break;
      start = sep + 2;
    }
    if (!ok) {
      diags.add(o.origin.describe(), "malformed override variable name",
                "write HFTRAIN__SECTION__KEY, e.g. HFTRAIN__OPTIMIZER__LR=3e-4");
      continue;
    }
    if (util::trim(value).empty()) {
      diags.add(o.origin.describe(), "is set but empty", "unset it, or give it a value");
      continue;
    }
    if (!util::check_utf8_text(value).empty()) {
      diags.add(o.origin.describe(), "is not valid UTF-8 text", "check how the variable is set");
      continue;
    }
    out.push_back(std::move(o));
  }
  return out;
}

void report_unknown_key(const KeyPath& path, const Origin& origin, const Schema& schema,
                        Diagnostics& diags) {
  const std::string key = to_string(path);
  std::vector<std::string> candidates = schema.all_paths();
  std::vector<std::string> near = util::closest_matches(key, candidates, 2);
  // A key written in the wrong section (`lr:` at the top) has the right last name.
  for (const auto& k : schema.keys()) {
    if (k.segments.back() == path.back() && k.path != key &&
        std::find(near.begin(), near.end(), k.path) == near.end()) {
      near.push_back(k.path);
    }
  }
  std::string hint;
  if (!near.empty()) {
    hint = "did you mean `" + near[0] + "`";
    for (size_t i = 1; i < near.size() && i < 3; ++i) hint += " or `" + near[i] + "`";
    hint += "?";
  } else {
    hint = "`hftrain config --schema` lists every key";
  }
  diags.add(origin.describe(), "unknown key `" + key + "`", hint);
}

void apply_override(Node& tree, const Override& o, const Schema& schema, const Node& defaults,
                    Diagnostics& diags) {
  const std::string key = to_string(o.path);
  const std::string where = o.origin.describe();
  const KeySpec* free_form = schema.free_form_parent(o.path);
  const bool known = schema.find(key) != nullptr || schema.is_section(o.path);

  if (o.op == Override::Op::kRemove) {
    if (free_form) {
      Node* parent = tree.find_path(KeyPath(o.path.begin(), o.path.end() - 1));
      if (!parent || !parent->is_map() || !parent->erase(o.path.back())) {
        diags.add(where, "`" + key + "` is not set, so there is nothing to remove");
      }
      return;
    }
    if (!known) return report_unknown_key(o.path, o.origin, schema, diags);
    // Fall back to the schema default (a whole section falls back key by key).
    const Node* def = defaults.find_path(o.path);
    Node* parent = tree.find_path(KeyPath(o.path.begin(), o.path.end() - 1));
    if (def && parent && parent->is_map()) parent->set(o.path.back(), *def);
    return;
  }

  std::optional<Node> value;
  try {
    value = parse_yaml_value(o.value, o.origin);
  } catch (const util::Error& e) {
    // The message already names the override.
    diags.add("", e.what(), e.hint().empty() ? "values are YAML: 3, 1e-4, true, [1, 2], 'a string'" : e.hint());
    return;
  }

  Node* cur = &tree;
  for (size_t i = 0; i + 1 < o.path.size(); ++i) {
    Node* next = cur->find(o.path[i]);
    if (!next) {
      next = &cur->set(o.path[i], Node::map(o.origin));
    } else if (!next->is_map()) {
      const KeyPath prefix(o.path.begin(), o.path.begin() + static_cast<long>(i) + 1);
      diags.add(where, "cannot set `" + key + "`: `" + to_string(prefix) + "` is a " +
                           next->kind_name() + ", not a section");
      return;
    }
    cur = next;
  }
  const bool exists = cur->find(o.path.back()) != nullptr;
  if (o.op == Override::Op::kAdd) {
    if (!free_form) {
      diags.add(where, "`+` adds keys only inside free-form maps, and `" + key + "` is not in one",
                known ? "write " + key + "=" + o.value + " to change it" : "check the key name");
      return;
    }
    if (exists) {
      diags.add(where, "`" + key + "` is already set",
                "write " + key + "=" + o.value + " to change it");
      return;
    }
  } else if (free_form && !exists && o.origin.kind != Origin::Kind::kEnvironment) {
    diags.add(where, "`" + key + "` is not set; `" + free_form->path + "` is a free-form map",
              "write +" + key + "=" + o.value + " to add it");
    return;
  }
  Node* target = cur->find(o.path.back());
  if (target && target->is_map() && schema.is_section(o.path)) {
    if (value->is_null()) {
      diags.add(where, "`" + key + "` is a section and cannot be set to null", "write ~" + key + " to reset it");
      return;
    }
    target->merge_from(*value);  // `optimizer={name: sgd}` changes the name and keeps the rest
    return;
  }
  cur->set(o.path.back(), std::move(*value));
}

}  // namespace hftrain::config
