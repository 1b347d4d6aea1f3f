#include "tenax/runtime/launch_environment.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <system_error>

namespace tenax::runtime {

std::string_view to_string(Launcher launcher) noexcept {
  switch (launcher) {
    case Launcher::none:
      return "none";
    case Launcher::open_mpi:
      return "Open MPI (mpirun)";
    case Launcher::mvapich:
      return "MVAPICH (mpirun)";
    case Launcher::pmi:
      return "PMI (mpiexec)";
    case Launcher::pmix:
      return "PMIx";
    case Launcher::slurm:
      return "Slurm (srun)";
  }
  return "unknown";
}

namespace {

bool is_set(const char* name) { return std::getenv(name) != nullptr; }

// The number in `text`, or why it is not one. Parsed as 64 bits first so that a value just
// beyond int is told apart from text that is no number at all.
void parse(LaunchVariable& v) {
  const std::string_view text = v.text;
  if (text.empty()) {
    v.error = "is empty, not a whole number";
    return;
  }
  std::int64_t number = 0;
  const char* const end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, number);
  if (ec == std::errc::result_out_of_range) {
    v.error = text.front() == '-' ? "is negative (ranks and counts are 0 or more)"
                                  : "is too large to be a rank or a count (at most 2147483647)";
    return;
  }
  if (ec != std::errc{} || stop != end) {
    v.error = "is not a whole number";
    return;
  }
  if (number < 0) {
    v.error = "is negative (ranks and counts are 0 or more)";
    return;
  }
  if (number > std::numeric_limits<int>::max()) {
    v.error = "is too large to be a rank or a count (at most 2147483647)";
    return;
  }
  v.value = static_cast<int>(number);
}

}  // namespace

LaunchVariable read_launch_variable(std::initializer_list<const char*> names) {
  LaunchVariable v;
  for (const char* name : names) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    v.name = name;
    v.text = text;
    parse(v);
    return v;
  }
  return v;
}

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment e;
  e.world_size = read_launch_variable({"OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  e.rank = read_launch_variable(
      {"OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"});
  e.local_rank = read_launch_variable({"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALRANKID", "SLURM_LOCALID"});
  e.local_size = read_launch_variable(
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"});
  if (is_set("OMPI_COMM_WORLD_SIZE")) {
    e.launcher = Launcher::open_mpi;
  } else if (is_set("MV2_COMM_WORLD_SIZE")) {
    e.launcher = Launcher::mvapich;
  } else if (is_set("PMI_SIZE") || is_set("MPI_LOCALNRANKS")) {
    e.launcher = Launcher::pmi;
  } else if (is_set("PMIX_RANK")) {
    e.launcher = Launcher::pmix;
  } else if (is_set("SLURM_PROCID")) {
    const LaunchVariable tasks = read_launch_variable({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
    if (tasks.value && *tasks.value > 1) e.launcher = Launcher::slurm;
  }
  e.parallel = e.launcher != Launcher::none;
  return e;
}

}  // namespace tenax::runtime
