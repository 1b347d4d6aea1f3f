// The `tenax` command-line tool. Each subcommand lives in its own file and registers itself
// here through an add_<name>_command(app, exit_code) function.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "ckpt_command.hpp"
#include "doctor.hpp"
#include "replay_command.hpp"
#include "report_command.hpp"
#include "supervisor.hpp"
#include "tenax/core/error.hpp"
#include "watch_command.hpp"

#ifndef TENAX_VERSION_STRING
#define TENAX_VERSION_STRING "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"tenax: long numerical jobs on CPUs and NVIDIA GPUs that never lose work", "tenax"};
  app.set_version_flag("--version", std::string("tenax ") + TENAX_VERSION_STRING);
  app.require_subcommand(1);

  int exit_code = 0;
  tenax::tools::add_doctor_command(app, exit_code);
  tenax::tools::add_run_command(app, exit_code);
  tenax::tools::add_ckpt_command(app, exit_code);
  tenax::tools::add_report_command(app, exit_code);
  tenax::tools::add_replay_command(app, exit_code);
  tenax::tools::add_watch_command(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here with 0; a value or flag the command cannot take is a usage
    // error like any other (exit 2), said with the fix.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "tenax: " << e.what()
              << "\n  fix: `tenax --help` lists the commands, `tenax COMMAND --help` each one's "
                 "flags and the values they take\n";
    return 2;
  } catch (const tenax::Error& e) {
    std::cerr << "tenax: " << e.cause() << "\n  fix: " << e.fix() << '\n';
    return tenax::exit_code_for(e.fault_class());
  } catch (const std::exception& e) {
    std::cerr << "tenax: " << e.what() << '\n';
    return 1;
  }
  return exit_code;
}
