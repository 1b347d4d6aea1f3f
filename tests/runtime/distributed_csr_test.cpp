// The distributed CSR operator with the threads communicator at 1 to 4 ranks: each rank's rows of
// y = A x carry the single-process bits, and CG, BiCGSTAB and GMRES (with and without Jacobi) run
// unchanged on the shards, with no scope in the caller (the operator's partition makes their
// reductions global), with the single-process iteration count, residual history and solution
// bits on every rank.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/shard_vectors.hpp"
#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/poisson.hpp"

namespace tenax::runtime {
namespace {

using kernels::ShardRange;

std::vector<std::string> run_ranks(int size, const std::function<void(int, Communicator&)>& body) {
  return testing::on_thread_ranks(size, 60, body);
}

using testing::bits;
using testing::random_vector;

// A non-symmetric, diagonally dominant matrix whose rows reach far and near columns (ghosts from
// several ranks), with a duplicated entry in some rows (duplicates add up in stored order).
CsrMatrix scattered_matrix(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::int64_t> column(0, n - 1);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<std::int64_t> row_ptr{0}, columns;
  std::vector<double> values;
  for (std::int64_t r = 0; r < n; ++r) {
    for (int k = 0; k < 6; ++k) {
      columns.push_back(column(random));
      values.push_back(value(random));
    }
    columns.push_back(r);
    values.push_back(8.0);
    if (r % 7 == 0) columns.push_back(r), values.push_back(0.5);  // a duplicate
    row_ptr.push_back(static_cast<std::int64_t>(columns.size()));
  }
  auto tensor = [](const auto& v, DType dtype) {
    Tensor t = Tensor::empty({static_cast<std::int64_t>(v.size())}, dtype);
    std::memcpy(t.data(), v.data(), v.size() * 8);
    return t;
  };
  return CsrMatrix(n, n, tensor(row_ptr, DType::i64), tensor(columns, DType::i64),
                   tensor(values, DType::f64));
}

class DistributedCsr : public ::testing::TestWithParam<int> {};

TEST_P(DistributedCsr, EachRanksRowsOfTheProductHaveTheSingleProcessBits) {
  const int ranks = GetParam();
  for (const CsrMatrix& a :
       {solvers::poisson_2d_csr(128, 128, 1.0 / 129, 1.0 / 129, DType::f64, DType::i32),
        scattered_matrix(5 * kernels::kReduceBlock + 321, 3)}) {
    const std::int64_t n = a.rows();
    const Tensor x = random_vector(n, 4);
    Tensor y = Tensor::empty({n}, DType::f64);
    ops::spmv(a, x, y);
    const Tensor w = random_vector(n, 5);
    const double want_wy = ops::dot(w, y);
    const double want_yy = ops::dot(y, y);
    const auto errors = run_ranks(ranks, [&](int r, Communicator& comm) {
      const ShardRange range = kernels::block_aligned_range(n, ranks, r);
      DistributedCsrOperator op(comm, range, csr_rows(a, range));
      const Tensor xs = x.slice(range.first, range.first + range.count).clone();
      Tensor ys = Tensor::empty({range.count}, DType::f64);
      for (int repeat = 0; repeat < 3; ++repeat) {  // the exchange buffers are reused
        op.apply(xs, ys);
        for (std::int64_t i = 0; i < range.count; ++i) {
          ASSERT_EQ(bits(ys.data_as<double>()[i]), bits(y.data_as<double>()[range.first + i]))
              << "row " << range.first + i << " on rank " << r;
        }
      }
      {
        // The fused dots of BiCGSTAB's products: the single-process w.(A x) and (A x).(A x), global
        // by construction (the operator's partition), with no scope here.
        const Tensor ws = w.slice(range.first, range.first + range.count).clone();
        const solvers::LinearOperator::Dots dots = op.apply_dots(xs, ys, ws);
        EXPECT_EQ(bits(dots.wy), bits(want_wy)) << "rank " << r;
        EXPECT_EQ(bits(dots.yy), bits(want_yy)) << "rank " << r;
        EXPECT_EQ(bits(op.apply_dot_with(xs, ys, ws)), bits(want_wy)) << "rank " << r;
      }
      const Tensor d = op.diagonal();
      const Tensor whole = solvers::csr_diagonal(a);
      for (std::int64_t i = 0; i < range.count; ++i) {
        ASSERT_EQ(bits(d.data_as<double>()[i]), bits(whole.data_as<double>()[range.first + i]));
      }
      if (ranks > 1 && range.count > 0) EXPECT_GT(op.ghost_count(), 0) << op.describe();
    });
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << r;
  }
}

struct Trace {
  std::vector<double> residuals;  // after every iteration
  solvers::SolveResult result;
};

// Runs the solver one iteration at a time, recording the residual after each.
Trace solve_traced(solvers::KrylovSolver& solver, const solvers::OperatorPtr& a, const Tensor& b,
                   const Tensor& x) {
  Trace trace;
  solver.start(a, b, x);
  while (!solver.iterate(1)) trace.residuals.push_back(solver.result().residual);
  trace.residuals.push_back(solver.result().residual);
  trace.result = solver.result();
  return trace;
}

TEST_P(DistributedCsr, KrylovSolversGiveTheSingleProcessIteratesOnEveryRank) {
  const int ranks = GetParam();
  struct Method {
    const char* solver;
    const char* pc;
    bool symmetric;
    const char* orthog = "mgs";
  };
  const CsrMatrix poisson = solvers::poisson_2d_csr(100, 100, 0.01, 0.01);
  const CsrMatrix scattered = scattered_matrix(4 * kernels::kReduceBlock + 9, 5);
  for (const Method m :
       {Method{"cg", "none", true}, Method{"cg", "jacobi", true}, Method{"bicgstab", "none", false},
        Method{"bicgstab", "jacobi", false}, Method{"gmres", "none", false},
        Method{"gmres", "none", false, "cgs"}, Method{"gmres", "jacobi", false, "cgs2"},
        Method{"gmres", "jacobi", false}}) {
    SCOPED_TRACE(std::string(m.solver) + " pc=" + m.pc + " orthog=" + m.orthog);
    const CsrMatrix& a = m.symmetric ? poisson : scattered;
    const std::int64_t n = a.rows();
    const Tensor b = random_vector(n, 6);
    solvers::SolverOptions options;
    options.tolerance = 1e-9;
    options.max_iterations = 400;
    options.restart = 20;
    options.preconditioner = m.pc;
    options.orthogonalization = m.orthog;
    Tensor x = Tensor::empty({n}, DType::f64);
    ops::fill(x, 0.0);
    const auto single_solver = solvers::make_solver(m.solver, options);
    const Trace single = solve_traced(*single_solver, solvers::make_csr_operator(a), b, x);
    ASSERT_TRUE(single.result.converged()) << single.result.detail;

    const auto errors = run_ranks(ranks, [&](int r, Communicator& comm) {
      const ShardRange range = kernels::block_aligned_range(n, ranks, r);
      const auto op =
          std::make_shared<const DistributedCsrOperator>(comm, range, csr_rows(a, range));
      const Tensor bs = b.slice(range.first, range.first + range.count).clone();
      Tensor xs = Tensor::empty({range.count}, DType::f64);
      ops::fill(xs, 0.0);
      const auto solver = solvers::make_solver(m.solver, options);
      const Trace mine = solve_traced(*solver, op, bs, xs);
      EXPECT_EQ(mine.result.iterations, single.result.iterations) << "rank " << r;
      ASSERT_EQ(mine.residuals.size(), single.residuals.size()) << "rank " << r;
      for (std::size_t k = 0; k < mine.residuals.size(); ++k) {
        ASSERT_EQ(bits(mine.residuals[k]), bits(single.residuals[k]))
            << "residual after iteration " << k + 1 << " on rank " << r;
      }
      for (std::int64_t i = 0; i < range.count; ++i) {
        ASSERT_EQ(bits(xs.data_as<double>()[i]), bits(x.data_as<double>()[range.first + i]))
            << "x[" << range.first + i << "] on rank " << r;
      }
    });
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DistributedCsr, ::testing::Values(1, 2, 3, 4));

TEST(DistributedCsrMisuse, ShapesAndRangesThatDoNotAgreeAreUsageErrors) {
  const CsrMatrix a = solvers::poisson_2d_csr(64, 64, 1.0, 1.0);
  const auto errors = run_ranks(2, [&](int r, Communicator& comm) {
    // Both ranks claim the first half: the rows are not tiled.
    const ShardRange range = kernels::block_aligned_range(a.rows(), 2, 0);
    (void)r;
    DistributedCsrOperator op(comm, range, csr_rows(a, range));
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("expected"), std::string::npos) << e;
  auto comm = make_thread_communicators(1, CommOptions{})[0];
  const ShardRange whole = kernels::block_aligned_range(a.rows(), 1, 0);
  const ShardRange half{0, a.rows() / 2, a.rows()};
  try {
    DistributedCsrOperator op(*comm, whole, csr_rows(a, half));
    FAIL() << "rows of another size were accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("pass the rank's rows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tenax::runtime
