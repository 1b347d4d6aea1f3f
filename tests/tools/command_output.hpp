// Runs a shell command line as a user would type it and keeps what it printed and its exit
// status: the tools tests drive the built `tenax` binary and the example programs this way.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tenax::testing {

struct CommandOutput {
  int exit_code = -1;  // -1 when the command did not exit normally (or could not start)
  std::string output;  // what it wrote on stdout (and stderr, if the command line sends it)
};

inline CommandOutput run_command(const std::string& command_line) {
  CommandOutput run;
  if (FILE* pipe = popen(command_line.c_str(), "r")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
    const int status = pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return run;
}

}  // namespace tenax::testing
