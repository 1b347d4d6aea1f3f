// The node algebra of the reduction order's step 4 and the block-aligned split
// (reduction_order.hpp).
#include "tenax/kernels/reduction_order.hpp"

#include <algorithm>
#include <bit>
#include <string>

namespace tenax::kernels {

std::vector<TreeNode> cover_nodes(std::int64_t first, std::int64_t last, std::int64_t m) {
  TENAX_EXPECTS(0 <= first && first <= last && last <= m, UsageError,
                "reduction: blocks [" + std::to_string(first) + ", " + std::to_string(last) +
                    ") are not a range of the " + std::to_string(m) + " blocks of the reduction",
                "pass 0 <= first <= last <= the number of blocks");
  std::vector<TreeNode> nodes;
  const std::int32_t root = tree_root_level(m);
  for (std::int64_t pos = first; pos < last;) {
    // The largest aligned node starting at pos (pos is a multiple of 2^level) that ends by last.
    std::int32_t level =
        pos == 0 ? root
                 : std::min<std::int32_t>(root, static_cast<std::int32_t>(std::countr_zero(
                                                    static_cast<std::uint64_t>(pos))));
    while (level > 0 && std::min(m, pos + (std::int64_t{1} << level)) > last) --level;
    nodes.push_back({level, pos >> level});
    pos = std::min(m, pos + (std::int64_t{1} << level));
  }
  return nodes;
}

int LeafStream::push(std::int64_t index) {
  nodes_.push_back({0, index});
  int merges = 0;
  while (nodes_.size() >= 2) {
    const TreeNode right = nodes_.back();
    const TreeNode left = nodes_[nodes_.size() - 2];
    if (left.level != right.level || right.index % 2 == 0 || left.index + 1 != right.index) break;
    nodes_.pop_back();
    nodes_.back() = {left.level + 1, left.index / 2};
    ++merges;
  }
  return merges;
}

std::vector<TreeNode> LeafStream::of_range(std::int64_t first, std::int64_t last) {
  LeafStream stream;
  for (std::int64_t i = first; i < last; ++i) (void)stream.push(i);
  return stream.nodes();
}

ShardRange block_aligned_range(std::int64_t total, int ranks, int rank) {
  TENAX_EXPECTS(total >= 0 && ranks >= 1 && rank >= 0 && rank < ranks, UsageError,
                "block_aligned_range: " + std::to_string(total) + " elements over " +
                    std::to_string(ranks) + " ranks, rank " + std::to_string(rank),
                "pass total >= 0, ranks >= 1 and 0 <= rank < ranks");
  const std::int64_t blocks = reduce_block_count(total);
  const std::int64_t base = blocks / ranks;
  const std::int64_t extra = blocks % ranks;
  const std::int64_t first_block = rank * base + std::min<std::int64_t>(rank, extra);
  const std::int64_t own = base + (rank < extra ? 1 : 0);
  const std::int64_t first = std::min(total, first_block * kReduceBlock);
  const std::int64_t end = std::min(total, (first_block + own) * kReduceBlock);
  return {first, end - first, total};
}

}  // namespace tenax::kernels
