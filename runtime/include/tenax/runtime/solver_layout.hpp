/// The checkpoint layout of a Krylov solve whose system is split across the ranks by rows: the
/// solver names its own vectors (KrylovSolver::split_entries), so a Workload's state_layout()
/// asks the solver instead of naming them. @file
#pragma once

#include <string_view>

#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/workload.hpp"
#include "tenax/solvers/krylov_solver.hpp"

namespace tenax::runtime {

/// The StateLayout of `solver`'s save_state(state, prefix) on a rank holding rows `range` of the
/// system: each split entry this rank's slab [range.first, range.first + range.count) of
/// range.total along its axis, the rank's length rank-local. Append the workload's own entries.
[[nodiscard]] inline StateLayout solver_state_layout(const solvers::KrylovSolver& solver,
                                                     std::string_view prefix,
                                                     const kernels::ShardRange& range) {
  StateLayout layout;
  for (const solvers::KrylovSolver::SplitEntry& entry : solver.split_entries(prefix)) {
    layout.shards.push_back(
        {entry.name, entry.axis, range.first, range.first + range.count, range.total});
  }
  layout.rank_local.push_back(solvers::KrylovSolver::rank_local_entry(prefix));
  return layout;
}

}  // namespace tenax::runtime
