// Each verb adds its subcommand to the CLI and, when chosen, sets the runner that main calls.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace hftrain::app {

// Returns the process exit code; may throw util::Error (mapped to its exit code by run_app).
using Runner = std::function<int()>;

void add_config_command(CLI::App& app, Runner& runner);
void add_run_command(CLI::App& app, Runner& runner, const std::vector<std::string>& command_line);
void add_resume_command(CLI::App& app, Runner& runner, const std::vector<std::string>& command_line);
void add_verify_command(CLI::App& app, Runner& runner);
void add_export_command(CLI::App& app, Runner& runner);
void add_evaluate_command(CLI::App& app, Runner& runner);
void add_generate_command(CLI::App& app, Runner& runner);
void add_tokenizer_command(CLI::App& app, Runner& runner);
void add_tokenizer_render_command(CLI::App& tokenizer_app, Runner& runner);
void add_recipes_command(CLI::App& app, Runner& runner);
void add_plan_command(CLI::App& app, Runner& runner);
void add_prepare_command(CLI::App& app, Runner& runner);
void add_runs_command(CLI::App& app, Runner& runner);
void add_sweep_command(CLI::App& app, Runner& runner);

// Parses argv, runs the chosen verb, maps errors to exit codes (0 ok, 2 bad input, 1 failure).
int run_app(int argc, char** argv);

}  // namespace hftrain::app
