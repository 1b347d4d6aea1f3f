// A build without CUDA: --comm nccl explains how to get it.
#include "comm_backends.hpp"
#include "tenax/core/error.hpp"

namespace tenax::runtime::detail {

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator>, CommOptions) {
  throw NotCompiledError(
      "this build of tenax has no NCCL communicator (it was configured without CUDA)",
      "configure with the CUDA toolkit and NCCL present (TENAX_WITH_CUDA=AUTO or ON, NCCL from "
      "the toolkit or NCCL_ROOT); or use --comm mpi, which stages device tensors through host "
      "memory");
}

}  // namespace tenax::runtime::detail
