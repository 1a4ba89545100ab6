// `hftrain recipes ls | cat NAME | cp NAME DEST`: the recipes shipped with hftrain.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "config/recipe.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"

namespace hftrain::app {
namespace {
namespace fs = std::filesystem;

struct RecipesArgs {
  std::string name;
  std::string dest;
  bool force = false;
};

std::vector<fs::path> dirs() { return config::shipped_recipe_dirs(util::Environment::process()); }

fs::path shipped(const std::string& name) {
  if (auto path = config::find_shipped_recipe(name, dirs())) return *path;
  throw util::UsageError("no shipped recipe named `" + name + "`",
                         "`hftrain recipes ls` lists them");
}

// The first comment line of a recipe is its one-line description.
std::string describe(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) return line.substr(2);
    if (!line.empty()) break;
  }
  return {};
}

int list() {
  const auto names = config::list_shipped_recipes(dirs());
  size_t width = 0;
  for (const auto& n : names) width = std::max(width, n.size());
  for (const auto& n : names) {
    std::cout << n << std::string(width - n.size() + 2, ' ') << describe(shipped(n)) << "\n";
  }
  return util::kExitOk;
}

int cat(const RecipesArgs& a) {
  std::cout << util::read_file<util::UsageError>(shipped(a.name), "recipe");
  return util::kExitOk;
}

int copy(const RecipesArgs& a) {
  const fs::path src = shipped(a.name);
  fs::path dest = a.dest;
  std::error_code ec;
  if (fs::is_directory(dest, ec)) dest /= src.filename();
  if (fs::exists(dest, ec) && !a.force) {
    throw util::UsageError(dest.string() + " already exists", "pass --force to overwrite it");
  }
  if (!dest.parent_path().empty() && !fs::is_directory(dest.parent_path(), ec)) {
    throw util::UsageError("folder " + dest.parent_path().string() + " does not exist",
                           "create it first, or name an existing folder");
  }
  util::atomic_write_file(dest, util::read_file<util::UsageError>(src, "recipe"));
  std::cout << "copied " << a.name << " to " << dest.string() << "\n";
  return util::kExitOk;
}

}  // namespace

void add_recipes_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<RecipesArgs>();
  CLI::App* sub = app.add_subcommand("recipes", "List, show and copy the recipes shipped with hftrain");
  sub->require_subcommand(1);
  sub->add_subcommand("ls", "List the shipped recipes")->callback([&runner] { runner = list; });
  CLI::App* c = sub->add_subcommand("cat", "Print a shipped recipe");
  c->add_option("NAME", a->name, "Recipe name")->required();
  c->callback([a, &runner] { runner = [a] { return cat(*a); }; });
  CLI::App* cp = sub->add_subcommand("cp", "Copy a shipped recipe to edit it");
  cp->add_option("NAME", a->name, "Recipe name")->required();
  cp->add_option("DEST", a->dest, "Destination file or folder")->required();
  cp->add_flag("--force", a->force, "Overwrite DEST if it exists");
  cp->callback([a, &runner] { runner = [a] { return copy(*a); }; });
}

}  // namespace hftrain::app
