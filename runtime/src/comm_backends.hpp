// The communicators that need libraries a build may lack (MPI, NCCL), made through functions
// that a build without them implements with stubs throwing NotCompiledError with the fix.
#pragma once

#include <memory>

#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime::detail {

// MPI_COMM_WORLD's ranks (MPI initialised here when the program has not done it, with
// MPI_THREAD_MULTIPLE... or the level it gets, and finalised at exit unless the communicator was
// aborted). Throws EnvironmentError when MPI cannot start, NotCompiledError without MPI.
[[nodiscard]] std::shared_ptr<Communicator> make_mpi_communicator(CommOptions options);

// NCCL for the collectives of device tensors, `host` (an MPI communicator of the same ranks, or
// a single rank outside a launcher) for the agreement, host data, the bootstrap (ncclUniqueId
// broadcast) and point-to-point messages, device ones staged through host memory (the contract's
// buffered, tag-matched send; NCCL's is a rendezvous matched by order). Each rank uses the GPU of
// its local rank; two ranks on one GPU are refused. NotCompiledError in a build without CUDA and
// NCCL.
[[nodiscard]] std::shared_ptr<Communicator> make_nccl_communicator(
    std::shared_ptr<Communicator> host, CommOptions options);

}  // namespace tenax::runtime::detail
