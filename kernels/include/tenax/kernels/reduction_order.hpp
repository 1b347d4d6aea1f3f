/// The order of every floating-point reduction in tenax, defined over global element indices.
/// @file
/// A reduction of n elements (a sum, a dot product, a norm's sum of squares, a maximum) is
/// computed in this order on every backend, for every thread count and for every way of splitting
/// the elements across ranks, so the result has the same bits in all of them:
///  1. The elements are cut into blocks of kReduceBlock consecutive global indices (the last block
///     may be short). Block b holds elements [b * kReduceBlock, min(n, (b + 1) * kReduceBlock)).
///  2. Within a block, lane j (0 <= j < kReduceLanes) folds the block's elements j, j + L, j + 2L,
///     ... in increasing order, starting from the identity (L = kReduceLanes).
///  3. The lanes are folded by a halving tree: for s = L/2, L/4, ..., 1: lane[j] = f(lane[j],
///     lane[j + s]) for j < s. lane[0] is the block's partial p[b].
///  4. The m block partials are combined by the pairwise tree over the global block index: node
///     (0, b) is p[b]; node (k, i) covers blocks [i 2^k, min(m, (i + 1) 2^k)) and is
///     f(node(k-1, 2i), node(k-1, 2i+1)), or node(k-1, 2i) alone when the right child would start
///     at or after m. The result is the root (the identity when m == 0). Level by level this is
///     p'[i] = f(p[2i], p[2i + 1]), with an odd last partial carried up unchanged.
///
/// Why this order: steps 2-3 let the CPU keep the lanes in registers while it reads a block front
/// to back (a vectorised loop) and let a GPU fold a block in a group of 16 threads reading 64
/// contiguous bytes per step with a shuffle tree. Step 4 is a tree over *global* block indices, so
/// a rank that holds a contiguous run of whole blocks can combine the nodes that lie inside its run
/// by itself (ShardNodes below), and the ranks' nodes assemble into the root that one process
/// would compute: 8 bytes per node and term, at most 2 ceil(log2 m) + 2 nodes per rank, in one
/// gather. The pairwise tree also bounds the rounding error by O(log m) block partials instead of
/// O(m).
///
/// This header holds the rule itself (steps 1 and 4, and the node algebra); the per-element maps
/// and the CPU and CUDA loops of steps 2-3 live in reduce_bodies.hpp and the backends. A split of
/// the elements across ranks keeps the bits only where every rank's elements start at a block
/// boundary (ShardRange::aligned); block_aligned_range gives such splits.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/host_device.hpp"

namespace tenax::kernels {

/// L of steps 2 and 3: the lanes a block is folded in.
inline constexpr int kReduceLanes = 16;
/// The block size of step 1, in elements (a whole number of lane rows).
inline constexpr std::int64_t kReduceBlock = 4096;
static_assert(kReduceBlock % kReduceLanes == 0, "a block is a whole number of lane rows");

/// Step 1: the number of blocks of n elements.
[[nodiscard]] TENAX_HD constexpr std::int64_t reduce_block_count(std::int64_t n) noexcept {
  return (n + kReduceBlock - 1) / kReduceBlock;
}

/// Step 4 on the host, in place over p[0, m) (each level reads p[2i], p[2i + 1] before p[i] is
/// written). Combine has a static identity() and f(a, b).
template <class Combine>
double combine_partials(double* p, std::int64_t m, Combine f) {
  if (m == 0) return Combine::identity();
  while (m > 1) {
    const std::int64_t pairs = m / 2;
    for (std::int64_t i = 0; i < pairs; ++i) p[i] = f(p[2 * i], p[2 * i + 1]);
    if (m % 2 != 0) p[pairs] = p[m - 1];
    m = pairs + m % 2;
  }
  return p[0];
}

// ---- the tree of step 4 split across ranks ----

/// Node (level, index) of the tree over m blocks: blocks [index 2^level, min(m, (index+1)
/// 2^level)).
struct TreeNode {
  std::int32_t level = 0;  ///< 0 for a leaf (one block partial), the root's is tree_root_level(m)
  std::int64_t index = 0;  ///< position among the nodes of its level, from 0
  /// Same level and index.
  friend bool operator==(const TreeNode&, const TreeNode&) = default;
};

/// The level of the root of the tree over m >= 1 blocks: ceil(log2 m).
[[nodiscard]] constexpr std::int32_t tree_root_level(std::int64_t m) noexcept {
  return m <= 1 ? 0 : static_cast<std::int32_t>(std::bit_width(static_cast<std::uint64_t>(m - 1)));
}

/// The fewest whole nodes of the tree over m blocks that cover blocks [first, last), left to
/// right (0 <= first <= last <= m): each is the largest node that starts at the current block and
/// ends at or before `last`. A node ending at m counts as whole even when clipped. UsageError
/// when the range is not within the tree.
[[nodiscard]] std::vector<TreeNode> cover_nodes(std::int64_t first, std::int64_t last,
                                                std::int64_t m);

/// A rank's share of a reduction: whole nodes of the tree of step 4 and their values.
struct ShardNodes {
  std::vector<TreeNode> nodes;  ///< left to right, as cover_nodes lists them
  /// `terms` values per node (a fused kernel reduces several sums at once: terms == 2 for PCG's
  /// r.z and r.r), node-major: nodes.size() * terms values.
  std::vector<double> values;
};
/// The values of cover_nodes(first, last, m), computed from a rank's own block partials
/// p[first, last) by the rule of step 4, so each equals the node of the single-process tree.
/// `partials` holds `terms` sequences of last - first partials, term-major (term t's are
/// partials[t * count, (t + 1) * count)); last is first + count. UsageError unless
/// 0 <= first <= last <= m.
template <class Combine>
ShardNodes shard_nodes(std::span<const double> partials, int terms, std::int64_t first,
                       std::int64_t m, Combine f) {
  const std::int64_t count = static_cast<std::int64_t>(partials.size()) / terms;
  ShardNodes out;
  out.nodes = cover_nodes(first, first + count, m);
  std::vector<double> scratch;
  for (const TreeNode& node : out.nodes) {
    const std::int64_t begin = node.index << node.level;
    const std::int64_t end = std::min(m, (node.index + 1) << node.level);
    for (int t = 0; t < terms; ++t) {
      // Partials are term-major: term t's partials are partials[t * count, (t + 1) * count).
      const double* p = partials.data() + t * count + (begin - first);
      scratch.assign(p, p + (end - begin));
      out.values.push_back(combine_partials(scratch.data(), end - begin, f));
    }
  }
  return out;
}

/// The root of the tree over m >= 1 leaves, from whole nodes of it: lookup(node) returns a
/// pointer to a node's value, or nullptr when no one gave it; combine(left, right) returns the
/// parent of two values. Every node not given is combined from its children by the rule of step 4
/// (a node without a right child is its left child), so the result is the value one process
/// computes from all leaves, whatever set of whole nodes covers them. Throws UsageError when a
/// leaf is not covered. The rule for scalars (assemble_root) and for gradient tensors.
template <class Value, class Lookup, class Combine>
Value tree_root(std::int64_t m, const Lookup& lookup, const Combine& combine);

/// The root of the tree over m blocks from every rank's ShardNodes (in any order; together they
/// must cover every block): the value one process computes from all m partials, term by term,
/// into result[0, terms). Throws UsageError when the nodes do not cover the tree.
template <class Combine>
void assemble_root(std::span<const ShardNodes> shards, int terms, std::int64_t m, Combine f,
                   std::span<double> result);

/// The nodes a stream of consecutive leaves forms when two siblings merge as soon as both are
/// complete (a binary counter over global leaf indices): what a rank holding leaves
/// [first, last) of a tree has after pushing them in order. Every node is whole. Used where the
/// leaves arrive one at a time (a gradient per grain) and by the ranks that must know which nodes
/// a peer holds.
class LeafStream {
 public:
  /// Pushes leaf `index` (one more than the previous push, or any index first); returns how many
  /// merges of the two top nodes it caused, in order.
  int push(std::int64_t index);
  /// The nodes formed so far, left to right (the leaves not yet merged included).
  [[nodiscard]] const std::vector<TreeNode>& nodes() const noexcept { return nodes_; }
  /// The nodes after pushing first, first + 1, ..., last - 1 (empty when first >= last): what a
  /// rank holding leaves [first, last) has once they have all arrived.
  [[nodiscard]] static std::vector<TreeNode> of_range(std::int64_t first, std::int64_t last);

 private:
  std::vector<TreeNode> nodes_;
};

// ---- splitting elements across ranks without changing the bits ----

/// Elements [first, first + count) of a reduction over `total` elements.
struct ShardRange {
  std::int64_t first = 0;  ///< global index of this rank's first element
  std::int64_t count = 0;  ///< elements this rank holds
  std::int64_t total = 0;  ///< elements of the whole reduction, over all ranks
  /// Whether the range is made of whole blocks of step 1 (it starts at a block boundary and ends
  /// at one or at `total`): then its block partials are the single-process ones.
  [[nodiscard]] constexpr bool aligned() const noexcept {
    return first % kReduceBlock == 0 &&
           ((first + count) % kReduceBlock == 0 || first + count == total);
  }
  /// The global index of the block that holds `first` (step 1).
  [[nodiscard]] constexpr std::int64_t first_block() const noexcept { return first / kReduceBlock; }
};

/// Splits `total` elements over `ranks` ranks into contiguous ranges of whole blocks, as even as
/// blocks allow (the first total_blocks % ranks ranks get one block more); ranks beyond the number
/// of blocks get empty ranges. Every range is aligned(). ranks >= 1, total >= 0 and
/// 0 <= rank < ranks (UsageError otherwise).
[[nodiscard]] ShardRange block_aligned_range(std::int64_t total, int ranks, int rank);

// ---- implementation ----

template <class Value, class Lookup, class Combine>
Value tree_root(std::int64_t m, const Lookup& lookup, const Combine& combine) {
  // Depth-first from the root; a node given ends its branch. At most 64 levels.
  auto value = [&](auto&& self, TreeNode node) -> Value {
    if (const Value* given = lookup(node)) return *given;
    TENAX_EXPECTS(node.level > 0, UsageError,
                  "reduction: leaf " + std::to_string(node.index) + " of " + std::to_string(m) +
                      " was given by no rank",
                  "the ranks' shards must cover every leaf of the reduction");
    const TreeNode left{node.level - 1, 2 * node.index};
    const TreeNode right{node.level - 1, 2 * node.index + 1};
    Value l = self(self, left);
    if ((right.index << right.level) >= m) return l;
    return combine(l, self(self, right));
  };
  return value(value, TreeNode{tree_root_level(m), 0});
}

template <class Combine>
void assemble_root(std::span<const ShardNodes> shards, int terms, std::int64_t m, Combine f,
                   std::span<double> result) {
  if (m == 0) {
    for (int t = 0; t < terms; ++t) result[t] = Combine::identity();
    return;
  }
  for (int t = 0; t < terms; ++t) {
    const auto lookup = [&](const TreeNode& node) -> const double* {
      for (const ShardNodes& s : shards) {
        for (std::size_t k = 0; k < s.nodes.size(); ++k) {
          if (s.nodes[k] == node) return s.values.data() + k * static_cast<std::size_t>(terms) + t;
        }
      }
      return nullptr;
    };
    result[t] = tree_root<double>(m, lookup, [&](double a, double b) { return f(a, b); });
  }
}

}  // namespace tenax::kernels
