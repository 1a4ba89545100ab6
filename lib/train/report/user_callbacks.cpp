#include "train/report/user_callbacks.h"

#include "train/report/command_callback.h"
#include "train/report/plugin_callback.h"

namespace hftrain::train {

std::vector<std::shared_ptr<Callback>> make_user_callbacks(const std::vector<config::CallbackSpec>& specs,
                                                           const UserCallbackContext& context) {
  std::vector<std::shared_ptr<Callback>> out;
  for (const auto& spec : specs) {
    if (!spec.plugin.empty()) {
      if (context.rank == 0 || spec.all_ranks) {
        out.push_back(std::make_shared<PluginCallback>(spec.plugin, spec.args, context.run_dir, context.rank,
                                                       context.world_size));
      }
    } else if (context.rank == 0) {
      out.push_back(std::make_shared<CommandCallback>(spec, context.run_dir));
    }
  }
  return out;
}

}  // namespace hftrain::train
