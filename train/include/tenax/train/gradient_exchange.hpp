/// Data-parallel gradients (Trainer with a Communicator of several ranks): which grains of the
/// global batch a rank computes, and how the ranks' gradients and losses are combined.
///  - exact: every rank holds the whole nodes of the pairwise tree over the global grain index
///    that its grains form (GrainScope's gradient trees); all parameters are packed into one
///    vector per node, each rank assembles the tree's root for its 1/R of the elements from every
///    rank's nodes (one message per pair of ranks), and an all-gather gives every rank the whole
///    root: the single-process gradient, bit for bit, for any number of ranks. With whole
///    subtrees per rank (R a power of two dividing the grains) it moves what a ring all-reduce
///    moves; otherwise up to log2(grains / R) + 2 nodes per rank.
///  - fast: each rank's trees folded locally, then one native all-reduce sum (the library's
///    order: the bits depend on the number of ranks).
/// The loss: every rank's per-grain loss sums are gathered and added in the global grain order,
/// as one process adds them. @file
/// Used by the Trainer; public for training loops of one's own and for the benchmarks.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/trainer.hpp"

namespace tenax::train::detail {

/// The grains [first, end) of `grains` that `rank` of `ranks` computes: contiguous, as even as
/// possible (the first grains % ranks ranks one more). grains >= ranks.
[[nodiscard]] GrainRange grains_of_rank(std::int64_t grains, int ranks, int rank);

/// The exact exchange, in two halves so that only the first can run out of memory: the
/// constructor packs this rank's nodes and acquires every buffer the exchange needs (a failure
/// there is this rank's alone, before any message); run() sends, receives, assembles and
/// gathers, then adds the single-process gradient to each parameter's gradient, on every rank.
/// `trees` are this rank's (GrainScope::take_gradients).
class ExactExchange {
 public:
  ExactExchange(runtime::Communicator& comm, std::vector<autodiff::GrainScope::GradientTree> trees,
                std::int64_t grains, std::vector<autodiff::Variable> params);
  void run(runtime::Communicator& comm);

 private:
  struct Entry {
    autodiff::Variable parameter;
    std::int64_t offset;
    std::int64_t count;
  };
  struct Peer {
    int rank;
    Tensor buffer;  ///< nodes x chunk elements
    std::vector<kernels::TreeNode> nodes;
  };
  std::int64_t grains_ = 0;
  std::int64_t chunk_ = 0;
  std::int64_t my_begin_ = 0;
  std::int64_t my_length_ = 0;
  std::vector<Entry> entries_;
  std::vector<kernels::TreeNode> my_nodes_;
  std::vector<Tensor> packed_;  ///< this rank's nodes, every parameter in one vector
  std::vector<Peer> sends_;
  std::vector<Peer> receives_;
  std::vector<Tensor> scratch_;  ///< one per combine of the tree's assembly
  Tensor gather_send_;
  Tensor gather_all_;
};

/// The fast exchange: the parameters' gradients packed (constructor), summed with the
/// communicator's native all-reduce and unpacked (run).
class FastExchange {
 public:
  explicit FastExchange(std::vector<autodiff::Variable> params);
  void run(runtime::Communicator& comm);

 private:
  std::vector<autodiff::Variable> params_;
  Tensor flat_;
};

/// The sum of every rank's per-grain loss sums in global grain order (each rank's in its order).
[[nodiscard]] double global_loss_sum(runtime::Communicator& comm, const std::vector<double>& mine,
                                     std::int64_t most_per_rank);

}  // namespace tenax::train::detail
