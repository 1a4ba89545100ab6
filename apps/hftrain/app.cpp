#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "util/build_info.h"
#include "util/error.h"

namespace hftrain::app {

int run_app(int argc, char** argv) {
  CLI::App app{"hftrain: train transformer models from a YAML recipe.\n"
               "Run `hftrain VERB --help` for the options of each verb.",
               "hftrain"};
  app.set_version_flag("--version", [] { return util::version_report(); });
  app.require_subcommand(1);

  Runner runner;
  const std::vector<std::string> command_line(argv, argv + argc);
  add_run_command(app, runner, command_line);
  add_resume_command(app, runner, command_line);
  add_verify_command(app, runner);
  add_export_command(app, runner);
  add_evaluate_command(app, runner);
  add_generate_command(app, runner);
  add_tokenizer_command(app, runner);
  add_plan_command(app, runner);
  add_prepare_command(app, runner);
  add_runs_command(app, runner);
  add_sweep_command(app, runner);
  add_config_command(app, runner);
  add_recipes_command(app, runner);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and a pointer to --help
    return util::kExitBadInput;
  }
  try {
    return runner ? runner() : util::kExitOk;
  } catch (const util::Error& e) {
    std::cerr << e.describe() << std::endl;
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return util::kExitFailure;
  }
}

}  // namespace hftrain::app
