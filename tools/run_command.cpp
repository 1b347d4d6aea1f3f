// `tenax run`: command-line front end of the Supervisor (supervisor.hpp).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "supervisor.hpp"

namespace tenax::tools {

void add_run_command(CLI::App& app, int& exit_code) {
  struct Arguments {
    SupervisorOptions options;
    std::vector<std::string> command;
  };
  auto arguments = std::make_shared<Arguments>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Run CMD and restart it when it exits with 75 (restart requested) or dies from a signal, "
      "with a growing delay, up to --max-restarts times. SIGTERM, SIGINT and SIGHUP are "
      "forwarded to CMD's process group. Usage: tenax run [OPTIONS] -- CMD ARGS...");
  run->add_option("--max-restarts", arguments->options.max_restarts,
                  "Restarts allowed after the first attempt (0: never restart)")
      ->capture_default_str();
  run->add_option("--restart-delay", arguments->options.restart_delay,
                  "Seconds before the first restart; doubles for each next one")
      ->capture_default_str();
  run->add_option("--max-delay", arguments->options.max_delay,
                  "Seconds: the most the delay between restarts grows to")
      ->capture_default_str();
  run->add_option("--run-dir", arguments->options.run_dir,
                  "Run directory: restarts are appended to RUN_DIR/events.jsonl")
      ->envname("TENAX_RUN_DIR");
  // Everything from the first positional on is CMD's, flags included (`-- ./job --steps 10`).
  run->add_option("command", arguments->command, "The job to run and its arguments")->take_all();
  run->positionals_at_end();
  run->callback([arguments, &exit_code] {
    Supervisor supervisor(arguments->options, std::cerr);
    exit_code = supervisor.run(arguments->command);
  });
}

}  // namespace tenax::tools
