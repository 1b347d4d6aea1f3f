/// The launch environment: what the parallel launcher that started this process (Open MPI's
/// mpirun, MPICH or Intel MPI's mpiexec (Hydra), MVAPICH, a PMI or PMIx launcher, Slurm's srun)
/// says about it in environment variables, read without starting MPI. The rule for "was this
/// process started as one of several ranks" is written here once: launched_by_mpi_launcher()
/// (communicator.hpp) and `tenax doctor` both answer from it.
/// @file
/// Contract:
///  - Each field is read from the first variable of its list that is set. The lists put the MPI
///    launchers' own variables before Slurm's, because mpirun or mpiexec inside a Slurm
///    allocation leaves the batch shell's SLURM_* variables (SLURM_PROCID=0 on every rank) in the
///    environment.
///    - `world_size`: OMPI_COMM_WORLD_SIZE, MV2_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS,
///      SLURM_NTASKS
///    - `rank`: OMPI_COMM_WORLD_RANK, MV2_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID
///    - `local_rank`: OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
///      SLURM_LOCALID
///    - `local_size`: OMPI_COMM_WORLD_LOCAL_SIZE, MV2_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS
///  - A value is valid when it is a base-10 whole number in [0, 2147483647] and nothing else
///    (no sign, no space): "abc", "", "-1", " 1" and "99999999999999999999" are kept as text with
///    `error` saying why they are not one. Nothing is guessed from an invalid value.
///  - `parallel` (what launched_by_mpi_launcher() returns): an MPI launcher's variable is set
///    (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, MPI_LOCALNRANKS or MV2_COMM_WORLD_SIZE, whatever
///    its value), or Slurm runs a step of several tasks (SLURM_PROCID set and a valid
///    SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, above 1). srun sets SLURM_PROCID for a batch
///    script's own shell too, so a single-task step is not a parallel launch.
///  - These are the launcher's numbers. The MPI communicator computes its own rank and local rank
///    with MPI once it starts (local rank: its rank among the ranks sharing this host's memory,
///    in world-rank order); for the usual launches the two agree.
///
/// Thread-safety: reads the environment with getenv; call it while no thread changes it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace tenax::runtime {

/// The parallel launcher that started this process, told by the first of these variables that
/// is set, in this order.
enum class Launcher : std::uint8_t {
  none,      ///< no parallel launch (one process, or a Slurm batch shell outside a step)
  open_mpi,  ///< OMPI_COMM_WORLD_SIZE
  mvapich,   ///< MV2_COMM_WORLD_SIZE
  pmi,       ///< PMI_SIZE or MPI_LOCALNRANKS: MPICH/Intel MPI mpiexec (Hydra), `srun --mpi=pmi2`
  pmix,      ///< PMIX_RANK: a PMIx launcher (`srun --mpi=pmix`, prterun)
  slurm,     ///< a Slurm step of several tasks
};
/// "none", "Open MPI (mpirun)", "MVAPICH (mpirun)", "PMI (mpiexec)", "PMIx", "Slurm (srun)".
[[nodiscard]] std::string_view to_string(Launcher launcher) noexcept;

/// One launcher number as found in the environment.
struct LaunchVariable {
  std::string name;          ///< the variable it was read from; empty when none of its list is set
  std::string text;          ///< the value as set
  std::optional<int> value;  ///< the number, when `text` is a valid one
  std::string error;         ///< why `text` is not a valid number ("" when valid or not set)

  /// Whether a variable of the list was set (even to an invalid value).
  [[nodiscard]] bool set() const noexcept { return !name.empty(); }
};

/// The first variable of `names` that is set, checked by the rule above (not set: name empty).
[[nodiscard]] LaunchVariable read_launch_variable(std::initializer_list<const char*> names);

/// What read_launch_environment() found, by the rules of the file's contract.
struct LaunchEnvironment {
  Launcher launcher = Launcher::none;  ///< who started this process (Launcher::none: no one)
  bool parallel = false;               ///< launcher != none
  LaunchVariable world_size;           ///< the number of ranks in the job
  LaunchVariable rank;                 ///< this process's rank in the job
  LaunchVariable local_rank;           ///< rank among the processes on this host
  LaunchVariable local_size;           ///< processes on this host
};

/// Reads the launch environment now (nothing is cached: tests change the environment).
[[nodiscard]] LaunchEnvironment read_launch_environment();

}  // namespace tenax::runtime
