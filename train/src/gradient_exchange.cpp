// Data-parallel gradients and losses (gradient_reduction.hpp).
#include "tenax/train/gradient_exchange.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/reduction_order.hpp"

namespace tenax::train::detail {
namespace {

using kernels::TreeNode;

constexpr int kGradientChunkTag = 7301;

}  // namespace

GrainRange grains_of_rank(std::int64_t grains, int ranks, int rank) {
  const std::int64_t base = grains / ranks;
  const std::int64_t extra = grains % ranks;
  const std::int64_t first = rank * base + std::min<std::int64_t>(rank, extra);
  return {first, first + base + (rank < extra ? 1 : 0)};
}

ExactExchange::ExactExchange(runtime::Communicator& comm,
                             std::vector<autodiff::GrainScope::GradientTree> trees,
                             std::int64_t grains, std::vector<autodiff::Variable> params)
    : grains_(grains) {
  const int size = comm.size();
  const int me = comm.rank();
  const GrainRange mine = grains_of_rank(grains, size, me);
  my_nodes_ = kernels::LeafStream::of_range(mine.first, mine.end);

  // The trees in parameter order (backward meets the parameters in reverse).
  std::vector<const autodiff::GrainScope::GradientTree*> ordered;
  std::int64_t total = 0;
  DType dtype = DType::f32;
  // Every buffer lives where the gradients do: on a GPU the collectives and messages carry
  // device tensors (through NCCL with --comm nccl; MPI stages them through host memory).
  Device device = Device::cpu();
  for (const autodiff::Variable& p : params) {
    const auto it = std::find_if(trees.begin(), trees.end(),
                                 [&](const auto& t) { return t.parameter.impl() == p.impl(); });
    if (it == trees.end()) continue;  // no gradient from the grains (on every rank alike)
    TENAX_EXPECTS(it->nodes == my_nodes_, UsageError,
                  "data-parallel gradients: rank " + std::to_string(me) + " computed grains [" +
                      std::to_string(it->first_grain) + ", " + std::to_string(it->end_grain) +
                      ") of " + std::to_string(grains) + " for a parameter, not its share [" +
                      std::to_string(mine.first) + ", " + std::to_string(mine.end) + ")",
                  "let the Trainer run the micro-batches (it gives each rank its grains)");
    if (ordered.empty()) {
      dtype = it->values.front().dtype();
      device = it->values.front().device();
    }
    TENAX_EXPECTS(it->values.front().dtype() == dtype, UsageError,
                  "data-parallel gradients: parameters of " + std::string(to_string(dtype)) +
                      " and " + std::string(to_string(it->values.front().dtype())) + " gradients",
                  "give every parameter the same master dtype");
    const std::int64_t count = it->values.front().numel();
    entries_.push_back({p, total, count});
    ordered.push_back(&*it);
    total += count;
  }
  TENAX_EXPECTS(trees.size() == entries_.size(), UsageError,
                "data-parallel gradients: " + std::to_string(trees.size() - entries_.size()) +
                    " gradient tree(s) of tensors that are not the Trainer's parameters",
                "pass every trained Variable to the Trainer");

  for (std::size_t k = 0; k < my_nodes_.size(); ++k) {
    if (entries_.size() == 1) {  // one parameter: its node is already one vector
      packed_.push_back(ordered[0]->values[k].reshape({total}));
      continue;
    }
    Tensor flat = Tensor::empty({total}, dtype, device);
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      ops::copy(flat.slice(entries_[e].offset, entries_[e].offset + entries_[e].count),
                ordered[e]->values[k].reshape({entries_[e].count}));
    }
    packed_.push_back(std::move(flat));
  }

  // Rank q assembles elements [q C, (q + 1) C) of the root from every rank's nodes.
  chunk_ = (total + size - 1) / size;
  auto chunk_of = [&](int q) {
    const std::int64_t begin = std::min(total, q * chunk_);
    return std::pair<std::int64_t, std::int64_t>{begin, std::min(total, begin + chunk_)};
  };
  std::tie(my_begin_, my_length_) = chunk_of(me);
  my_length_ -= my_begin_;
  std::size_t given = 0;
  for (int q = 0; q < size; ++q) {
    const auto [begin, end] = chunk_of(q);
    const GrainRange theirs = grains_of_rank(grains, size, q);
    std::vector<TreeNode> nodes = kernels::LeafStream::of_range(theirs.first, theirs.end);
    given += nodes.size();
    if (q == me) continue;
    if (end > begin && !my_nodes_.empty()) {
      // One node: its chunk is sent from where it lies; several are gathered into one message.
      sends_.push_back(
          {q,
           my_nodes_.size() == 1
               ? packed_[0].slice(begin, end)
               : Tensor::empty({static_cast<std::int64_t>(my_nodes_.size()) * (end - begin)}, dtype,
                               device),
           my_nodes_});
    }
    if (my_length_ > 0 && !nodes.empty()) {
      const auto n = static_cast<std::int64_t>(nodes.size());
      receives_.push_back({q, Tensor::empty({n * my_length_}, dtype, device), std::move(nodes)});
    }
  }
  // The assembly combines fewer nodes than are given.
  if (my_length_ > 0) {
    for (std::size_t k = 0; k + 1 < given; ++k) {
      scratch_.push_back(Tensor::empty({my_length_}, dtype, device));
    }
  }
  gather_send_ = Tensor::empty({chunk_}, dtype, device);
  ops::fill(gather_send_, 0.0);
  gather_all_ = Tensor::empty({chunk_ * size}, dtype, device);
}

void ExactExchange::run(runtime::Communicator& comm) {
  for (Peer& peer : sends_) {
    const std::int64_t begin = peer.rank * chunk_;
    const std::int64_t length = peer.buffer.numel() / static_cast<std::int64_t>(my_nodes_.size());
    for (std::size_t k = 0; k < my_nodes_.size() && my_nodes_.size() > 1; ++k) {
      ops::copy(peer.buffer.slice(static_cast<std::int64_t>(k) * length,
                                  static_cast<std::int64_t>(k + 1) * length),
                packed_[k].slice(begin, begin + length));
    }
    comm.send(peer.buffer, peer.rank, kGradientChunkTag);
  }
  if (my_length_ > 0) {
    std::vector<std::pair<TreeNode, Tensor>> given;
    for (std::size_t k = 0; k < my_nodes_.size(); ++k) {
      given.push_back({my_nodes_[k], packed_[k].slice(my_begin_, my_begin_ + my_length_)});
    }
    for (Peer& peer : receives_) {
      comm.receive(peer.buffer, peer.rank, kGradientChunkTag);
      for (std::size_t k = 0; k < peer.nodes.size(); ++k) {
        given.push_back(
            {peer.nodes[k], peer.buffer.slice(static_cast<std::int64_t>(k) * my_length_,
                                              static_cast<std::int64_t>(k + 1) * my_length_)});
      }
    }
    const auto lookup = [&](const TreeNode& node) -> const Tensor* {
      for (const auto& [n, value] : given) {
        if (n == node) return &value;
      }
      return nullptr;
    };
    std::size_t next = 0;
    // The tree's combine, as GrainScope's (right + left; IEEE addition commutes), into scratch.
    const auto combine = [&](const Tensor& left, const Tensor& right) {
      TENAX_EXPECTS(next < scratch_.size(), UsageError,
                    "data-parallel gradients: the assembly needs more than its " +
                        std::to_string(scratch_.size()) + " scratch vectors",
                    "report this: the exchange's buffers are sized at construction");
      // left + right in one pass: the bits of GrainScope's right + left (addition commutes).
      const Tensor& out = scratch_[next++];
      ops::binary_into(ops::BinaryOp::add, left, right, out);
      return out;
    };
    const Tensor root = kernels::tree_root<Tensor>(grains_, lookup, combine);
    ops::copy(gather_send_.slice(0, my_length_), root);
  }
  comm.all_gather(gather_send_, gather_all_);
  for (const Entry& e : entries_) {
    autodiff::Tape::accumulate_grad(
        e.parameter,
        gather_all_.slice(e.offset, e.offset + e.count).reshape(e.parameter.value().shape()));
  }
}

FastExchange::FastExchange(std::vector<autodiff::Variable> params) : params_(std::move(params)) {
  std::int64_t total = 0;
  const DType dtype = params_.front().grad().dtype();
  for (const autodiff::Variable& p : params_) {
    TENAX_EXPECTS(p.grad().dtype() == dtype, UsageError,
                  "data-parallel gradients: parameters of " + std::string(to_string(dtype)) +
                      " and " + std::string(to_string(p.grad().dtype())) + " gradients",
                  "give every parameter the same master dtype");
    total += p.grad().numel();
  }
  flat_ = Tensor::empty({total}, dtype, params_.front().grad().device());
}

void FastExchange::run(runtime::Communicator& comm) {
  std::int64_t offset = 0;
  for (const autodiff::Variable& p : params_) {
    const std::int64_t n = p.grad().numel();
    ops::copy(flat_.slice(offset, offset + n), p.grad().reshape({n}));
    offset += n;
  }
  comm.all_reduce(flat_, runtime::ReduceOp::sum);
  offset = 0;
  for (const autodiff::Variable& p : params_) {
    const std::int64_t n = p.grad().numel();
    ops::copy(p.grad().reshape({n}), flat_.slice(offset, offset + n));
    offset += n;
  }
}

double global_loss_sum(runtime::Communicator& comm, const std::vector<double>& mine,
                       std::int64_t most_per_rank) {
  // A fixed record per rank: the count, then up to most_per_rank sums (several loss ops per
  // micro-batch add several per grain, so the count is checked).
  const std::int64_t capacity = std::max<std::int64_t>(most_per_rank, 1);
  TENAX_EXPECTS(static_cast<std::int64_t>(mine.size()) <= capacity, UsageError,
                "data-parallel loss: " + std::to_string(mine.size()) +
                    " per-grain loss sums on rank " + std::to_string(comm.rank()) + " for " +
                    std::to_string(most_per_rank) + " grains",
                "use one loss op per micro-batch on several ranks");
  std::vector<double> record(static_cast<std::size_t>(capacity + 1), 0.0);
  record[0] = static_cast<double>(mine.size());
  std::copy(mine.begin(), mine.end(), record.begin() + 1);
  std::vector<double> all(record.size() * static_cast<std::size_t>(comm.size()));
  comm.all_gather_bytes(std::as_bytes(std::span(record)), std::as_writable_bytes(std::span(all)));
  double sum = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const double* at = all.data() + static_cast<std::size_t>(r) * record.size();
    const auto count = static_cast<std::int64_t>(at[0]);
    for (std::int64_t k = 0; k < count; ++k) sum += at[1 + k];
  }
  return sum;
}

}  // namespace tenax::train::detail
