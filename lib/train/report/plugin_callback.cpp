#include "train/report/plugin_callback.h"

#include <dlfcn.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "hftrain/plugin.h"
#include "metrics/records.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::train {

// The library and the plugin's state, released however the constructor ends: a refusal after dlopen
// closes the handle too.
struct PluginCallback::Library {
  ~Library() {
    if (state && destroy) destroy(state);
    if (handle) ::dlclose(handle);
  }
  void* handle = nullptr;
  decltype(&hftrain_plugin_abi_version) abi_version = nullptr;
  decltype(&hftrain_plugin_create) create = nullptr;
  decltype(&hftrain_plugin_on_event) on_event = nullptr;
  decltype(&hftrain_plugin_destroy) destroy = nullptr;
  void* state = nullptr;
};

namespace {

constexpr size_t kErrorSize = 1024;

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what, const std::string& hint) {
  throw util::ConfigError("callbacks: plugin " + path.string() + ": " + what, hint);
}

template <class F>
F symbol(void* handle, const char* name, const std::filesystem::path& path) {
  void* s = ::dlsym(handle, name);
  if (!s) {
    refuse(path, "it has no symbol `" + std::string(name) + "`",
           "define the four functions of include/hftrain/plugin.h with C linkage (extern \"C\" in C++)");
  }
  return reinterpret_cast<F>(s);
}

}  // namespace

PluginCallback::PluginCallback(const std::filesystem::path& path, const std::map<std::string, std::string>& args,
                               std::filesystem::path run_dir, int rank, int world_size)
    : lib_(std::make_unique<Library>()),
      path_(path),
      run_dir_(run_dir.string()),
      rank_(rank),
      world_size_(world_size) {
  // A path with no slash would be searched for in the library path; the user means this file.
  const std::string file = path.has_parent_path() ? path.string() : "./" + path.string();
  lib_->handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_->handle) {
    const char* why = ::dlerror();
    refuse(path, std::string("cannot be loaded: ") + (why ? why : "unknown reason"),
           "check the path, and that it is a shared library built for this machine (cc -shared -fPIC)");
  }
  lib_->abi_version = symbol<decltype(lib_->abi_version)>(lib_->handle, "hftrain_plugin_abi_version", path);
  lib_->create = symbol<decltype(lib_->create)>(lib_->handle, "hftrain_plugin_create", path);
  lib_->on_event = symbol<decltype(lib_->on_event)>(lib_->handle, "hftrain_plugin_on_event", path);
  lib_->destroy = symbol<decltype(lib_->destroy)>(lib_->handle, "hftrain_plugin_destroy", path);
  const int version = lib_->abi_version();
  if (version != HFTRAIN_PLUGIN_ABI_VERSION) {
    refuse(path,
           "it was built against plugin ABI version " + std::to_string(version) + ", this hftrain speaks version " +
               std::to_string(HFTRAIN_PLUGIN_ABI_VERSION),
           "rebuild the plugin against this hftrain's include/hftrain/plugin.h");
  }
  char error[kErrorSize] = {};
  const std::string json = nlohmann::json(args).dump();
  lib_->state = lib_->create(json.c_str(), error, sizeof error);
  if (!lib_->state) {
    refuse(path, std::string("it refused to start: ") + (error[0] ? error : "(no message)"),
           "fix the callback's args in the recipe");
  }
  util::log::info("callbacks: plugin " + path.string() + " loaded (ABI version " + std::to_string(version) + ")");
}

PluginCallback::~PluginCallback() = default;

void PluginCallback::send(TrainState& state, int kind, const std::vector<std::pair<std::string, double>>& figures,
                          const std::string& path) {
  if (!state.callback_failure.empty()) return;  // the run is stopping for a failure already
  std::vector<hftrain_figure> list;
  for (const auto& [name, value] : figures) list.push_back({name.c_str(), value});
  hftrain_event e{};
  e.kind = static_cast<hftrain_event_kind>(kind);
  e.step = state.step;
  e.total_steps = state.total_steps;
  e.epoch = state.epoch;
  e.figures = list.data();
  e.num_figures = list.size();
  e.path = path.empty() ? nullptr : path.c_str();
  e.run_dir = run_dir_.c_str();
  e.rank = rank_;
  e.world_size = world_size_;
  char error[kErrorSize] = {};
  const int control = lib_->on_event(lib_->state, &e, error, sizeof error);
  if (control < 0) {
    state.callback_failure = "callbacks: plugin " + path_.string() + " failed at step " + std::to_string(state.step) +
                             ": " + (error[0] ? error : "(no message)");
    state.should_stop = true;
    util::log::error(state.callback_failure);
    return;
  }
  if (control & HFTRAIN_STOP) {
    if (!state.should_stop) util::log::info("callbacks: plugin " + path_.string() + " asked to stop after step " +
                                            std::to_string(state.step));
    state.should_stop = true;
  }
  if (control & HFTRAIN_SAVE) state.should_save = true;
  if (control & HFTRAIN_EVALUATE) state.should_evaluate = true;
}

void PluginCallback::on_train_begin(TrainState& state) { send(state, HFTRAIN_EVENT_TRAIN_BEGIN, {}); }

void PluginCallback::on_step_end(TrainState& state) {
  // A logging step's STEP_END goes out from on_log, with the figures; the others from here.
  if (!state.logging_step) send(state, HFTRAIN_EVENT_STEP_END, {});
}

void PluginCallback::on_log(TrainState& state, const StepStats& stats) {
  std::vector<std::pair<std::string, double>> figures = {{"loss", stats.loss}, {"lr", stats.lr}};
  if (std::isfinite(stats.grad_norm)) figures.emplace_back("grad_norm", stats.grad_norm);
  for (const auto& extra : stats.extra) figures.push_back(extra);
  send(state, HFTRAIN_EVENT_STEP_END, figures);
}

void PluginCallback::on_evaluate(TrainState& state, double eval_loss) {
  std::vector<std::pair<std::string, double>> figures = {{"eval_loss", eval_loss},
                                                         {"eval_ppl", metrics::perplexity(eval_loss)}};
  for (const auto& m : state.last_eval_metrics) figures.push_back(m);
  send(state, HFTRAIN_EVENT_EVALUATE, figures);
}

void PluginCallback::on_save(TrainState& state, const std::filesystem::path& dir) {
  send(state, HFTRAIN_EVENT_SAVE, {}, dir.string());
}

void PluginCallback::on_train_end(TrainState& state) { send(state, HFTRAIN_EVENT_TRAIN_END, {}); }

}  // namespace hftrain::train
