// Device tensors through the communicators: the NCCL communicator at world size 1 (and at every
// size when launched under mpirun, as scripts/gpu-check.sh does), and CUDA tensors through the
// MPI communicator, which stages them through pinned host buffers unless MPI is CUDA-aware.
// Results are compared with the same collective on CPU tensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {
namespace {

class CommunicatorGpu : public ::testing::TestWithParam<CommKind> {
 protected:
  void SetUp() override {
    if (!cuda::availability().usable) {
      GTEST_SKIP() << "no usable CUDA device: " << cuda::availability().reason;
    }
    // Outside a launcher MPI starts as a singleton only where Open MPI is installed (MPI_Init
    // aborts the process elsewhere): scripts/gpu-check.sh, whose build carries it, asks for it.
    const char* singleton = std::getenv("TENAX_TEST_MPI_SINGLETON");
    if (GetParam() == CommKind::mpi && !launched_by_mpi_launcher() &&
        (singleton == nullptr || std::string(singleton) != "1")) {
      GTEST_SKIP() << "the MPI communicator runs under mpirun, or as a singleton with "
                      "TENAX_TEST_MPI_SINGLETON=1 where Open MPI is installed";
    }
    try {
      comm_ = make_communicator(GetParam());
    } catch (const NotCompiledError& e) {
      GTEST_SKIP() << "communicator not in this build: " << e.what();
    }
  }
  std::shared_ptr<Communicator> comm_;
};

std::vector<double> values(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  return {host.data_as<double>(), host.data_as<double>() + host.numel()};
}

Tensor filled(std::int64_t n, int rank, Device device) {
  Tensor host = Tensor::empty({n}, DType::f64);
  for (std::int64_t i = 0; i < n; ++i) {
    host.data_as<double>()[i] = static_cast<double>(i % 97) + 1000.0 * rank;
  }
  return host.to(device);
}

TEST_P(CommunicatorGpu, AllReduceOfADeviceTensorEqualsTheHostOne) {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{4099}, std::int64_t{1} << 20}) {
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      const Tensor on_device = filled(n, comm_->rank(), Device::cuda(comm_->local_rank()));
      const Tensor on_host = filled(n, comm_->rank(), Device::cpu());
      comm_->all_reduce(on_device, op);
      comm_->all_reduce(on_host, op);
      EXPECT_EQ(values(on_device), values(on_host)) << n << " elements, " << to_string(op);
    }
  }
}

TEST_P(CommunicatorGpu, BroadcastAndAllGatherOfDeviceTensors) {
  const Device device = Device::cuda(comm_->local_rank());
  const Tensor t = filled(1000, comm_->rank(), device);
  comm_->broadcast(t, 0);
  EXPECT_EQ(values(t), values(filled(1000, 0, Device::cpu())));
  const Tensor mine = filled(333, comm_->rank(), device);
  const Tensor all = Tensor::empty({333 * comm_->size()}, DType::f64, device);
  comm_->all_gather(mine, all);
  for (int r = 0; r < comm_->size(); ++r) {
    const std::vector<double> got = values(all.slice(333 * r, 333 * (r + 1)));
    EXPECT_EQ(got, values(filled(333, r, Device::cpu()))) << "rank " << r;
  }
}

TEST_P(CommunicatorGpu, TheAgreementWorksBesideDeviceCollectives) {
  StepProposal proposal;
  proposal.step = 7;
  proposal.checkpoint_due = comm_->rank() == 0;
  const StepAgreement agreed = comm_->agree(proposal);
  EXPECT_EQ(agreed.step, 7);
  EXPECT_TRUE(agreed.checkpoint_due);
}

// Sends are buffered and matched by tag (the Communicator contract): every rank sends to both
// neighbours before it receives, the later tag received first. With NCCL's rendezvous send this
// waited until the deadline. Needs two ranks (gpu-check runs it under mpirun with two GPUs); a
// single rank has no peer (a send to itself is a UsageError, checked here).
TEST_P(CommunicatorGpu, SendsAreBufferedAndMatchedByTag) {
  const Device device = Device::cuda(comm_->local_rank());
  const int size = comm_->size();
  const int rank = comm_->rank();
  if (size == 1) {
    EXPECT_THROW(comm_->send(filled(8, rank, device), 0, 1), UsageError);
    return;
  }
  const int next = (rank + 1) % size;
  const int previous = (rank + size - 1) % size;
  comm_->send(filled(4099, rank, device), next, 1);
  comm_->send(filled(77, rank, device), previous, 2);
  const Tensor from_next = Tensor::empty({77}, DType::f64, device);
  const Tensor from_previous = Tensor::empty({4099}, DType::f64, device);
  comm_->receive(from_next, next, 2);
  comm_->receive(from_previous, previous, 1);
  EXPECT_EQ(values(from_next), values(filled(77, next, Device::cpu())));
  EXPECT_EQ(values(from_previous), values(filled(4099, previous, Device::cpu())));
}

INSTANTIATE_TEST_SUITE_P(Kinds, CommunicatorGpu, ::testing::Values(CommKind::mpi, CommKind::nccl),
                         [](const ::testing::TestParamInfo<CommKind>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
}  // namespace tenax::runtime
