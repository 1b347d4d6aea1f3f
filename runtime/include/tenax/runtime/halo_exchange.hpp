/// HaloExchange: the entries of a vector split across ranks that a rank reads outside its own
/// range (its ghosts), fetched from the ranks that hold them. The one mechanism behind every
/// distributed operator (DistributedCsrOperator, DistributedLaplacian2dOperator).
/// @file
/// The ranks hold consecutive ranges of a vector of `total` entries, in rank order (checked at
/// construction on every rank). Each rank names once, at construction, the global indices it
/// reads outside its range; the ranks tell each owner which of its entries they need (one
/// all-gather of counts and one message per neighbour pair). Then every exchange() sends each
/// neighbour the entries it asked for and receives this rank's ghosts, in the order they were
/// named. Messages are buffered (Communicator::send), so no order of the ranks can deadlock.
///
/// Contract: construction and exchange() are collective (every rank, the same order). Vectors
/// are f64 or f32 CPU tensors (the gather is a host loop). Not thread-safe: exchange() uses the
/// object's own send buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {

/// The ghost exchange of one rank for one vector layout, set up once (collective) and then run
/// by every exchange(); see the file's contract. Keeps a pointer to the communicator, which must
/// outlive it.
class HaloExchange {
 public:
  /// Collective. `ghosts`: global indices outside `range`, ascending, without repeats, each
  /// below range.total. `dtype`: f64 or f32, the dtype of every exchanged vector. `who` names
  /// the caller in error messages ("distributed csr"); it is not kept. Throws UsageError for a
  /// dtype other than f64 or f32, and on every rank for ranges that do not tile [0, total) in
  /// rank order. Ghosts that are not as described throw UsageError on the rank that named them
  /// only; its peers then fail in the next collective, with CommFaultError at the deadline.
  HaloExchange(Communicator& comm, const kernels::ShardRange& range,
               std::vector<std::int64_t> ghosts, DType dtype, const char* who);

  /// This rank's entries of the vector, as given at construction.
  [[nodiscard]] const kernels::ShardRange& range() const noexcept { return range_; }
  /// The global indices of the ghosts, ascending: the order exchange() fills them in.
  [[nodiscard]] const std::vector<std::int64_t>& ghosts() const noexcept { return ghosts_; }
  /// ghosts().size().
  [[nodiscard]] std::int64_t ghost_count() const noexcept {
    return static_cast<std::int64_t>(ghosts_.size());
  }
  /// The number of ghosts below the rank's range (held by lower ranks); the rest lie above it.
  [[nodiscard]] std::int64_t ghosts_below() const noexcept { return below_; }
  /// How many ranks this rank receives ghosts from (its neighbours on the receiving side).
  [[nodiscard]] std::size_t source_count() const noexcept { return receives_.size(); }

  /// Collective. `x`: this rank's range.count entries; `ghosts`: ghost_count() entries, filled in
  /// the order of ghosts(). Both contiguous CPU tensors of the exchange's dtype (UsageError
  /// otherwise). Each neighbour's entries are sent (buffered) before any are received.
  void exchange(const Tensor& x, const Tensor& ghosts) const;
  /// The same with the ghosts below the range into `below` (ghosts_below() entries) and those
  /// above into `above` (the rest): the two sides of x in a vector laid out around it.
  void exchange(const Tensor& x, const Tensor& below, const Tensor& above) const;

 private:
  struct Neighbour {
    int rank = 0;
    std::vector<std::int64_t> indices;  ///< send: the local entries it needs
    std::int64_t offset = 0;            ///< receive: where its entries start among the ghosts
    std::int64_t count = 0;
    Tensor buffer;  ///< send: the gathered entries
  };

  Communicator* comm_;
  kernels::ShardRange range_;
  DType dtype_;
  std::vector<std::int64_t> ghosts_;
  std::int64_t below_ = 0;
  std::vector<Neighbour> sends_;
  std::vector<Neighbour> receives_;
};

/// Every rank's range, gathered (collective) and checked to tile [0, mine.total) in rank order;
/// UsageError on every rank otherwise, naming `who`.
[[nodiscard]] std::vector<kernels::ShardRange> gather_ranges(Communicator& comm,
                                                             const kernels::ShardRange& mine,
                                                             const char* who);

}  // namespace tenax::runtime
