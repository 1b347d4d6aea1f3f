// Sharded reductions (sharded_reduction.hpp): this rank's tree nodes, one all-gather, the root.
#include "tenax/kernels/sharded_reduction.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels {
namespace {

thread_local ShardedReductionScope* active_scope = nullptr;

// A rank's record: its range in blocks, then its node values (cover_nodes of that range, each
// node's terms in a row), padded to the capacity every rank computes from the global length.
struct RecordHeader {
  std::int64_t total_elements;
  std::int64_t first_block;
  std::int64_t block_count;
  std::int64_t node_count;
};

// The most nodes cover_nodes returns for a range of a tree of root level h: two per level, plus
// the clipped last node.
std::int64_t node_capacity(std::int64_t blocks) { return 2 * tree_root_level(blocks) + 2; }

template <class Combine>
void combine_with(std::span<const double> partials, int terms, const ShardRange& range,
                  ShardGather& ranks, Combine f, std::span<double> out) {
  const std::int64_t m = reduce_block_count(range.total);
  const std::int64_t first_block = range.first_block();
  const std::int64_t block_count = reduce_block_count(range.count);
  const ShardNodes mine = shard_nodes(partials, terms, first_block, m, f);

  const std::int64_t capacity = node_capacity(m);
  const std::size_t value_bytes = static_cast<std::size_t>(capacity * terms) * sizeof(double);
  const std::size_t record_bytes = sizeof(RecordHeader) + value_bytes;
  std::vector<std::byte> record(record_bytes);
  const RecordHeader header{range.total, first_block, block_count,
                            static_cast<std::int64_t>(mine.nodes.size())};
  std::memcpy(record.data(), &header, sizeof(header));
  std::memcpy(record.data() + sizeof(header), mine.values.data(),
              mine.values.size() * sizeof(double));

  const int size = ranks.ranks();
  std::vector<std::byte> all(record_bytes * static_cast<std::size_t>(size));
  ranks.all_gather(record, all);

  std::vector<ShardNodes> shards(static_cast<std::size_t>(size));
  struct Span {
    std::int64_t first, count;
    int rank;
  };
  std::vector<Span> spans;
  for (int r = 0; r < size; ++r) {
    const std::byte* at = all.data() + record_bytes * static_cast<std::size_t>(r);
    RecordHeader h{};
    std::memcpy(&h, at, sizeof(h));
    TENAX_EXPECTS(h.total_elements == range.total, UsageError,
                  "sharded reduction: rank " + std::to_string(ranks.rank()) +
                      " reduces a vector of " + std::to_string(range.total) +
                      " elements but rank " + std::to_string(r) + " one of " +
                      std::to_string(h.total_elements),
                  "every rank must reduce the same distributed vector (the same global length)");
    TENAX_EXPECTS(h.first_block >= 0 && h.block_count >= 0 && h.first_block + h.block_count <= m,
                  UsageError,
                  "sharded reduction: rank " + std::to_string(r) + " holds blocks [" +
                      std::to_string(h.first_block) + ", +" + std::to_string(h.block_count) +
                      ") of a vector of " + std::to_string(m) + " blocks",
                  "give every rank a range of the vector (block_aligned_range)");
    ShardNodes& s = shards[static_cast<std::size_t>(r)];
    s.nodes = cover_nodes(h.first_block, h.first_block + h.block_count, m);
    TENAX_EXPECTS(static_cast<std::int64_t>(s.nodes.size()) == h.node_count, UsageError,
                  "sharded reduction: rank " + std::to_string(r) + " sent " +
                      std::to_string(h.node_count) + " tree nodes for its range, not " +
                      std::to_string(s.nodes.size()),
                  "every rank must run the same version of tenax");
    s.values.resize(s.nodes.size() * static_cast<std::size_t>(terms));
    std::memcpy(s.values.data(), at + sizeof(RecordHeader), s.values.size() * sizeof(double));
    if (h.block_count > 0) spans.push_back({h.first_block, h.block_count, r});
  }
  // The ranges must tile [0, m): no block counted twice, none missing.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.first < b.first; });
  std::int64_t next = 0;
  for (const Span& s : spans) {
    TENAX_EXPECTS(s.first == next, UsageError,
                  "sharded reduction: rank " + std::to_string(s.rank) + "'s blocks start at " +
                      std::to_string(s.first) + " where block " + std::to_string(next) +
                      " was expected (the ranks' ranges overlap or leave a gap)",
                  "split the vector with block_aligned_range so the ranges tile it");
    next = s.first + s.count;
  }
  TENAX_EXPECTS(next == m, UsageError,
                "sharded reduction: the ranks' ranges cover " + std::to_string(next) + " of " +
                    std::to_string(m) + " blocks",
                "split the vector with block_aligned_range so the ranges tile it");
  assemble_root(std::span<const ShardNodes>(shards), terms, m, f, out);
}

}  // namespace

ShardedReductionScope::ShardedReductionScope(ShardGather& ranks, ShardRange range)
    : ranks_(&ranks), range_(range) {
  TENAX_EXPECTS(active_scope == nullptr, UsageError,
                "ShardedReductionScope: a scope is already active on this thread",
                "end the outer scope first (scopes do not nest)");
  TENAX_EXPECTS(range.total >= 0 && range.first >= 0 && range.count >= 0 &&
                    range.first + range.count <= range.total,
                UsageError,
                "ShardedReductionScope: elements [" + std::to_string(range.first) + ", +" +
                    std::to_string(range.count) + ") are not a range of a vector of " +
                    std::to_string(range.total),
                "pass a range inside the vector (block_aligned_range)");
  TENAX_EXPECTS(range.aligned() || range.count == 0, UsageError,
                "ShardedReductionScope: elements [" + std::to_string(range.first) + ", +" +
                    std::to_string(range.count) + ") do not start and end at reduction blocks of " +
                    std::to_string(kReduceBlock) +
                    " elements, so the sums could not have the "
                    "bits of one process",
                "split the vector with block_aligned_range");
  active_scope = this;
}

ShardedReductionScope::~ShardedReductionScope() { active_scope = nullptr; }

ShardedReductionScope* ShardedReductionScope::active() noexcept { return active_scope; }

void ShardedReductionScope::combine(std::span<const double> partials, int terms, ReduceCombine how,
                                    std::int64_t elements, std::span<double> out) {
  TENAX_EXPECTS(elements == range_.count, UsageError,
                "sharded reduction over " + std::to_string(elements) +
                    " elements, but this rank's shard of the distributed vector holds " +
                    std::to_string(range_.count),
                "inside a ShardedReductionScope reduce only this rank's shard of the vector; "
                "reduce other tensors outside the scope");
  TENAX_EXPECTS(
      terms >= 1 &&
          static_cast<std::int64_t>(partials.size()) == terms * reduce_block_count(range_.count) &&
          static_cast<std::int64_t>(out.size()) >= terms,
      UsageError,
      "sharded reduction: " + std::to_string(partials.size()) + " partials for " +
          std::to_string(terms) + " term(s) of " +
          std::to_string(reduce_block_count(range_.count)) + " blocks",
      "pass terms * blocks partials, term-major");
  if (how == ReduceCombine::max) {
    combine_with(partials, terms, range_, *ranks_, MaxCombine{}, out);
  } else {
    combine_with(partials, terms, range_, *ranks_, PlusCombine{}, out);
  }
}

std::string ShardPartition::describe() const {
  if (!distributed()) return std::to_string(range.total) + " local elements";
  return "elements [" + std::to_string(range.first) + ", +" + std::to_string(range.count) +
         ") of " + std::to_string(range.total) + " over " + std::to_string(ranks->ranks()) +
         " ranks (this is rank " + std::to_string(ranks->rank()) + ")";
}

GlobalReductions::GlobalReductions(const ShardPartition& partition) {
  if (!partition.distributed()) return;
  if (const ShardedReductionScope* active = active_scope) {
    const ShardPartition current = active->partition();
    TENAX_EXPECTS(current.same_as(partition), UsageError,
                  "global reductions over " + partition.describe() +
                      " while this thread reduces over another distributed vector, " +
                      current.describe(),
                  "finish the work on the other vector first (its reductions end with the solve or "
                  "the DistributedVector call that started them), or give both the same partition");
    return;  // joined: the active scope already reduces over this partition
  }
  own_.emplace(*partition.ranks, partition.range);
}

}  // namespace tenax::kernels
