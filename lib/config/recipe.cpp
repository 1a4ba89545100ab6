#include "config/recipe.h"

#include <unistd.h>

#include <algorithm>

#include "config/yaml_load.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::config {
namespace fs = std::filesystem;
using util::ConfigError;

namespace {

constexpr int kMaxDefaultsDepth = 32;

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

std::string chain_text(const std::vector<fs::path>& chain, const fs::path& last) {
  std::vector<std::string> names;
  for (const auto& p : chain) names.push_back(p.string());
  names.push_back(last.string());
  return util::join(names, " -> ");
}

// A `defaults:` entry: a file relative to the naming recipe (".yaml" optional), else a shipped name.
fs::path resolve_default(const Node& entry, const fs::path& from, const std::vector<fs::path>& dirs) {
  const std::string where = entry.origin().describe();
  if (!entry.is_scalar() || entry.text().empty()) {
    throw ConfigError(where + ": each `defaults:` entry is a recipe file or a shipped recipe name",
                      "write defaults: [base.yaml, quickstart]");
  }
  const std::string& name = entry.text();
  const fs::path base = from.parent_path();
  for (const fs::path& candidate : {base / name, base / (name + ".yaml")}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  if (auto shipped = find_shipped_recipe(name, dirs)) return *shipped;
  throw ConfigError(where + ": defaults entry `" + name + "` not found: no file " +
                        (base / name).string() + " and no shipped recipe of that name",
                    "check the name; `hftrain recipes ls` lists shipped recipes");
}

void load_into(const fs::path& path, const std::vector<fs::path>& dirs, std::vector<fs::path>& chain,
               std::vector<RecipeLayer>& out) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  if (ec) canonical = path;
  for (const auto& seen : chain) {
    if (seen == canonical) {
      throw ConfigError("recipe defaults form a cycle: " + chain_text(chain, canonical),
                        "remove one of the `defaults:` entries in that chain");
    }
  }
  if (static_cast<int>(chain.size()) >= kMaxDefaultsDepth) {
    throw ConfigError("recipe defaults nest deeper than " + std::to_string(kMaxDefaultsDepth) +
                      " files: " + chain_text(chain, canonical));
  }
  Node tree = load_yaml_file(path);
  if (tree.is_null()) {
    throw ConfigError("recipe " + path.string() + " is empty",
                      "a recipe is a YAML mapping of sections such as run:, model:, trainer:");
  }
  if (!tree.is_map()) {
    throw ConfigError(tree.origin().describe() + ": a recipe is a mapping of sections (run:, model:, ...), not a " +
                          tree.kind_name(),
                      "see recipes/quickstart.yaml for the shape of a recipe");
  }
  chain.push_back(canonical);
  if (const Node* defaults = tree.find("defaults")) {
    std::vector<Node> entries;
    if (defaults->is_sequence()) {
      entries = defaults->items();
    } else if (!defaults->is_null()) {
      entries.push_back(*defaults);
    }
    for (const auto& entry : entries) load_into(resolve_default(entry, path, dirs), dirs, chain, out);
    tree.erase("defaults");
  }
  chain.pop_back();
  out.push_back({path, std::move(tree)});
}

}  // namespace

std::vector<fs::path> shipped_recipe_dirs(const util::Environment& env) {
  std::vector<fs::path> dirs;
  if (auto dir = env.get("HFTRAIN_RECIPES_DIR"); dir && !dir->empty()) dirs.emplace_back(*dir);
  if (fs::path exe = executable_dir(); !exe.empty()) dirs.push_back(exe / ".." / "share" / "hftrain" / "recipes");
#ifdef HFTRAIN_SOURCE_RECIPES_DIR
  dirs.emplace_back(HFTRAIN_SOURCE_RECIPES_DIR);
#endif
  return dirs;
}

std::optional<fs::path> find_shipped_recipe(const std::string& name, const std::vector<fs::path>& dirs) {
  if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  const std::string file = name.size() > 5 && name.ends_with(".yaml") ? name : name + ".yaml";
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(dir / file, ec)) return dir / file;
  }
  return std::nullopt;
}

std::vector<std::string> list_shipped_recipes(const std::vector<fs::path>& dirs) {
  std::vector<std::string> names;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() != ".yaml") continue;
      std::string stem = it->path().stem().string();
      if (std::find(names.begin(), names.end(), stem) == names.end()) names.push_back(stem);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

fs::path locate_recipe(const std::string& arg, const std::vector<fs::path>& dirs) {
  std::error_code ec;
  if (fs::exists(arg, ec)) return arg;  // directories and unreadable files get read_file's message
  if (auto shipped = find_shipped_recipe(arg, dirs)) return *shipped;
  auto names = list_shipped_recipes(dirs);
  auto near = util::closest_matches(arg, names, 1);
  throw ConfigError("recipe " + arg + " not found: no such file and no shipped recipe of that name",
                    near.empty() ? "shipped recipes: " + util::join(names, ", ")
                                 : "did you mean `" + near[0] + "`?");
}

std::vector<RecipeLayer> load_recipe_layers(const fs::path& recipe, const std::vector<fs::path>& dirs) {
  std::vector<RecipeLayer> layers;
  std::vector<fs::path> chain;
  load_into(recipe, dirs, chain, layers);
  return layers;
}

}  // namespace hftrain::config
