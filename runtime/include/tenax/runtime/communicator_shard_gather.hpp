/// The ranks of a Communicator as the kernels' reductions see them (kernels::ShardGather): the
/// piece that lets a distributed vector or operator make its reductions global.
/// @file
/// Used by runtime::DistributedVector and the distributed operators (DistributedCsrOperator,
/// DistributedLaplacian2dOperator) for their partition(). Two gathers over one communicator are
/// the same group (group() is the communicator), so their reductions join.
#pragma once

#include <cstddef>
#include <span>

#include "tenax/kernels/sharded_reduction.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {

/// The ShardGather of a Communicator: its ranks and all_gather_bytes (collective; a dead peer
/// throws CommFaultError to the reduction's caller). Thread-safety: that of the communicator.
class CommunicatorShardGather final : public kernels::ShardGather {
 public:
  /// Keeps a pointer to `comm`, which must outlive this object.
  explicit CommunicatorShardGather(Communicator& comm) : comm_(&comm) {}
  /// Communicator::size().
  [[nodiscard]] int ranks() const noexcept override { return comm_->size(); }
  /// Communicator::rank().
  [[nodiscard]] int rank() const noexcept override { return comm_->rank(); }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    comm_->all_gather_bytes(mine, all);
  }
  /// The communicator: every gather over it reduces over the same ranks.
  [[nodiscard]] const void* group() const noexcept override { return comm_; }
  /// The communicator it gathers over.
  [[nodiscard]] Communicator& communicator() const noexcept { return *comm_; }

 private:
  Communicator* comm_;
};

}  // namespace tenax::runtime
