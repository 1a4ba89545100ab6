// A plugin (include/hftrain/plugin.h) as a train::Callback: the shared library loaded and checked,
// the run's events translated into hftrain_event, its control bits into TrainState.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "train/callbacks.h"

namespace hftrain::train {

class PluginCallback final : public Callback {
 public:
  // Loads `path` and creates the plugin's state with `args` (a JSON object of strings). Throws
  // util::ConfigError naming the path: not loadable, a symbol missing, another ABI version, or the
  // plugin's own refusal with its message.
  PluginCallback(const std::filesystem::path& path, const std::map<std::string, std::string>& args,
                 std::filesystem::path run_dir, int rank, int world_size);
  ~PluginCallback() override;
  PluginCallback(const PluginCallback&) = delete;
  PluginCallback& operator=(const PluginCallback&) = delete;

  void on_train_begin(TrainState& state) override;
  void on_step_end(TrainState& state) override;
  void on_log(TrainState& state, const StepStats& stats) override;
  void on_evaluate(TrainState& state, double eval_loss) override;
  void on_save(TrainState& state, const std::filesystem::path& dir) override;
  void on_train_end(TrainState& state) override;

 private:
  struct Library;
  // Sends one event (kind as plugin.h numbers them); applies the answer to `state`.
  void send(TrainState& state, int kind, const std::vector<std::pair<std::string, double>>& figures,
            const std::string& path = {});

  std::unique_ptr<Library> lib_;
  std::filesystem::path path_;
  std::string run_dir_;
  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace hftrain::train
