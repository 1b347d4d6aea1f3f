// A vector split across ranks (distributed_vector.hpp): the checks at construction, and each
// reduction the kernels' own, made global for its duration by the vector's partition.
#include "tenax/runtime/distributed_vector.hpp"

#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/halo_exchange.hpp"

namespace tenax::runtime {
namespace {

std::string range_text(const kernels::ShardRange& range) {
  return "elements [" + std::to_string(range.first) + ", +" + std::to_string(range.count) +
         ") of " + std::to_string(range.total);
}

}  // namespace

DistributedVector::DistributedVector(Communicator& comm, const kernels::ShardRange& range,
                                     Tensor local)
    : gather_(comm), range_(range), local_(std::move(local)) {
  TENAX_EXPECTS(range.total >= 0 && range.first >= 0 && range.count >= 0 &&
                    range.first + range.count <= range.total,
                UsageError,
                "DistributedVector: " + range_text(range) + " is not a range of the vector",
                "pass this rank's range of the vector (kernels::block_aligned_range)");
  TENAX_EXPECTS(range.count == 0 || range.aligned(), UsageError,
                "DistributedVector: " + range_text(range) + " does not start and end at " +
                    "reduction blocks of " + std::to_string(kernels::kReduceBlock) +
                    " elements, so its reductions could not have the bits of one process",
                "split the vector with kernels::block_aligned_range (or cut ranges at multiples "
                "of kernels::kReduceBlock)");
  TENAX_EXPECTS(local_.defined() && local_.shape().rank() == 1 && is_floating(local_.dtype()),
                UsageError,
                "DistributedVector: the local part is " +
                    (local_.defined() ? local_.describe() : std::string("undefined")) +
                    ", not a 1-D floating-point vector",
                "pass this rank's elements as a 1-D f64 or f32 tensor");
  TENAX_EXPECTS(local_.numel() == range.count, UsageError,
                "DistributedVector: the local part has " + std::to_string(local_.numel()) +
                    " elements but this rank holds " + range_text(range) + " (" +
                    std::to_string(range.count) + " elements)",
                "pass a local part of range.count elements, or the range of the elements it "
                "holds");
}

DistributedVector DistributedVector::empty(Communicator& comm, std::int64_t total, DType dtype,
                                           Device device) {
  const kernels::ShardRange range = kernels::block_aligned_range(total, comm.size(), comm.rank());
  return {comm, range, Tensor::empty({range.count}, dtype, device)};
}

DistributedVector DistributedVector::of_operator(Communicator& comm,
                                                 const solvers::LinearOperator& a) {
  const kernels::ShardPartition partition = a.partition();
  TENAX_EXPECTS(partition.distributed() && partition.ranks->group() == &comm, UsageError,
                "DistributedVector::of_operator: " + a.describe() +
                    " is not split over this communicator's ranks (its vectors are " +
                    partition.describe() + ")",
                "pass the communicator the distributed operator was built on, or make a local "
                "vector with a.make_vector()");
  return {comm, partition.range, a.make_vector()};
}

double DistributedVector::dot(const DistributedVector& y) const {
  TENAX_EXPECTS(partition().same_as(y.partition()), UsageError,
                "DistributedVector::dot: x is " + describe() + " but y is " + y.describe(),
                "take dot products of vectors split alike (the same communicator and range on "
                "every rank)");
  const kernels::GlobalReductions global(partition());
  return ops::dot(local_, y.local_);
}

double DistributedVector::nrm2() const {
  const kernels::GlobalReductions global(partition());
  return ops::nrm2(local_);
}

double DistributedVector::sum() const {
  const kernels::GlobalReductions global(partition());
  return ops::sum(local_);
}

double DistributedVector::max() const {
  const kernels::GlobalReductions global(partition());
  return ops::max(local_);
}

std::int64_t DistributedVector::count_nonfinite() const {
  const kernels::GlobalReductions global(partition());
  return ops::count_nonfinite(local_);
}

Tensor DistributedVector::gather(int root) const {
  Communicator& comm = communicator();
  TENAX_EXPECTS(root >= 0 && root < comm.size(), UsageError,
                "gather to rank " + std::to_string(root) + " of " + std::to_string(comm.size()),
                "give a root in [0, ranks)");
  if (comm.size() == 1) return local_.to(Device::cpu());
  constexpr int kGatherTag = (1 << 24) - 3;
  // Every rank's range, to place its part (collective, and checked to tile the vector).
  const std::vector<kernels::ShardRange> ranges =
      gather_ranges(comm, range_, "DistributedVector::gather");
  const Tensor mine = local_.to(Device::cpu());
  if (comm.rank() != root) {
    if (range_.count > 0) comm.send(mine, root, kGatherTag);
    return Tensor{};
  }
  Tensor whole = Tensor::empty({range_.total}, local_.dtype());
  for (int r = 0; r < comm.size(); ++r) {
    const kernels::ShardRange& theirs = ranges[static_cast<std::size_t>(r)];
    if (theirs.count == 0) continue;
    const Tensor part = whole.slice(theirs.first, theirs.first + theirs.count);
    if (r == root) {
      ops::copy(part, mine);
    } else {
      comm.receive(part, r, kGatherTag);
    }
  }
  return whole;
}

std::string DistributedVector::describe() const {
  return std::string(to_string(local_.dtype())) + " " + partition().describe();
}

}  // namespace tenax::runtime
