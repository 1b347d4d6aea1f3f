// A build without MPI: --comm mpi (and auto under a launcher) explains how to get it.
#include "comm_backends.hpp"
#include "tenax/core/error.hpp"

namespace tenax::runtime::detail {

std::shared_ptr<Communicator> make_mpi_communicator(CommOptions) {
  throw NotCompiledError(
      "this build of tenax has no MPI communicator (MPI was not found when it was configured), "
      "so it cannot run as several ranks",
      "install MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) and configure again; or "
      "run one process with --comm single");
}

}  // namespace tenax::runtime::detail
