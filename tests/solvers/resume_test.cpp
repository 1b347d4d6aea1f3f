// Resumable iteration: a solve interrupted after 37 iterations, saved, loaded into a fresh solver
// object and continued ends bitwise identical to the uninterrupted solve, for every method
// (GMRES with the save point inside a restart cycle, exactly at a cycle boundary, and with
// boundaries on both sides of it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/factory.hpp"

namespace tenax::solvers {
namespace {

using testing::random_vector;
using testing::values_of;
using testing::zeros;

constexpr std::int64_t kSavePoint = 37;

struct Case {
  std::string method;
  std::string options;
};

std::string label(const Case& c) { return c.method + " " + c.options; }

struct Outcome {
  std::vector<double> x;
  SolveResult result;
};

// Runs to the end, chunked into iterate() calls of `chunk` steps.
Outcome uninterrupted(const Case& c, const OperatorPtr& a, const Tensor& b, std::int64_t chunk) {
  const auto solver = make_solver(c.method, parse_solver_options(c.options));
  const Tensor x = zeros(a->rows());
  solver->start(a, b, x);
  while (!solver->iterate(chunk)) {
  }
  return {values_of(x), solver->result()};
}

Outcome resumed(const Case& c, const OperatorPtr& a, const Tensor& b) {
  StateDict state;
  {
    const auto first = make_solver(c.method, parse_solver_options(c.options));
    const Tensor x = zeros(a->rows());
    first->start(a, b, x);
    EXPECT_FALSE(first->iterate(kSavePoint)) << label(c) << " finished before the save point";
    first->save_state(state, "job/solver");
  }
  // A fresh object and a fresh x with other contents: everything comes from the state.
  const auto second = make_solver(c.method, parse_solver_options(c.options));
  const Tensor x = random_vector(a->rows(), 99);
  second->start(a, b, x);
  second->load_state(state, "job/solver");
  EXPECT_EQ(second->result().iterations, kSavePoint);
  while (!second->iterate(1000)) {
  }
  return {values_of(x), second->result()};
}

void expect_bitwise_resume(const Case& c, const OperatorPtr& a, const Tensor& b) {
  SCOPED_TRACE(label(c));
  const Outcome whole = uninterrupted(c, a, b, 1000);
  ASSERT_EQ(whole.result.status, SolveStatus::converged) << whole.result.detail;
  ASSERT_GT(whole.result.iterations, kSavePoint + 5) << "the problem is too easy";
  const Outcome split = resumed(c, a, b);
  EXPECT_EQ(split.result.status, whole.result.status);
  EXPECT_EQ(split.result.iterations, whole.result.iterations);
  EXPECT_EQ(split.result.residual, whole.result.residual);
  EXPECT_EQ(split.result.initial_residual, whole.result.initial_residual);
  EXPECT_EQ(split.x, whole.x);
  // Chunking alone changes nothing either.
  const Outcome chunked = uninterrupted(c, a, b, 7);
  EXPECT_EQ(chunked.x, whole.x);
  EXPECT_EQ(chunked.result.residual, whole.result.residual);
}

TEST(Resume, ConjugateGradientIsBitwiseIdentical) {
  const OperatorPtr a = make_csr_operator(testing::poisson(24));
  const Tensor b = random_vector(576, 1);
  expect_bitwise_resume({"cg", "tol=1e-12"}, a, b);
  expect_bitwise_resume({"cg", "tol=1e-12,pc=jacobi"}, a, b);
  expect_bitwise_resume({"cg", "tol=1e-12,pc=ilu0"}, make_csr_operator(testing::poisson(40)),
                        random_vector(1600, 2));
}

// Earlier builds saved the direction of the last iteration as "cg/p" and updated it at the start
// of the next step; states of that layout (made here from the current one: the "p_next" of one
// iteration earlier is that direction) load and end with the bits of the uninterrupted solve,
// also at iteration 0 (where the direction is z itself) and 1.
TEST(Resume, ConjugateGradientResumesAStateOfTheEarlierLayout) {
  const OperatorPtr a = make_csr_operator(testing::poisson(24));
  const Tensor b = random_vector(576, 1);
  for (const std::string options : {"tol=1e-12", "tol=1e-12,pc=jacobi", "tol=1e-12,pc=ilu0"}) {
    const Outcome whole = uninterrupted({"cg", options}, a, b, 1000);
    ASSERT_EQ(whole.result.status, SolveStatus::converged) << whole.result.detail;
    for (const std::int64_t save_point : {std::int64_t{0}, std::int64_t{1}, std::int64_t{12}}) {
      SCOPED_TRACE(options + " saved after " + std::to_string(save_point) + " iterations");
      StateDict before;
      StateDict after;
      {
        const auto first = make_solver("cg", parse_solver_options(options));
        const Tensor x = zeros(a->rows());
        first->start(a, b, x);
        if (save_point > 0) {
          EXPECT_FALSE(first->iterate(save_point - 1));
          first->save_state(before, "s");
          EXPECT_FALSE(first->iterate(1));
        }
        first->save_state(after, "s");
      }
      StateDict legacy;
      for (const auto& [name, value] : after.entries()) {
        if (name != "s/cg/p_next") legacy.set(name, value);
      }
      legacy.set("s/cg/p", (save_point > 0 ? before : after).tensor("s/cg/p_next"));
      ASSERT_FALSE(legacy.contains("s/cg/p_next"));

      const auto second = make_solver("cg", parse_solver_options(options));
      const Tensor x = random_vector(a->rows(), 99);
      second->start(a, b, x);
      second->load_state(legacy, "s");
      while (!second->iterate(1000)) {
      }
      EXPECT_EQ(second->result().iterations, whole.result.iterations);
      EXPECT_EQ(second->result().residual, whole.result.residual);
      EXPECT_EQ(values_of(x), whole.x);
    }
  }
}

TEST(Resume, BiCgStabIsBitwiseIdentical) {
  const OperatorPtr a = make_csr_operator(testing::convection_diffusion(24, 10.0, 5.0));
  const Tensor b = random_vector(576, 3);
  expect_bitwise_resume({"bicgstab", "tol=1e-12"}, a, b);
  expect_bitwise_resume({"bicgstab", "tol=1e-12,pc=jacobi"}, a, b);
}

TEST(Resume, GmresIsBitwiseIdenticalWhereverTheRestartCycleIs) {
  const OperatorPtr a = make_csr_operator(testing::convection_diffusion(24, 10.0, 5.0));
  const Tensor b = random_vector(576, 4);
  // 37 = 30 + 7: saved inside the second cycle, the next boundary after the load.
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=30"}, a, b);
  // Saved exactly at the end of the first cycle (the restart already done).
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=37"}, a, b);
  // Boundaries before and after the save point, saved mid-cycle.
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=10"}, a, b);
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=20,pc=jacobi"}, a, b);
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=30,orthog=cgs"}, a, b);
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=20,orthog=cgs2,pc=jacobi"}, a, b);
  expect_bitwise_resume({"gmres", "tol=1e-12,restart=20,pc=jacobi,pc_side=left"}, a, b);
  expect_bitwise_resume({"gmres", "tol=1e-14,restart=10,pc=ilu0,pc_side=left"}, a, b);
}

TEST(Resume, SavingCopiesTheStateAndLeavesTheSolveUnchanged) {
  const OperatorPtr a = make_csr_operator(testing::poisson(24));
  const Tensor b = random_vector(576, 1);
  const Case c{"gmres", "tol=1e-12,restart=25"};
  const Outcome whole = uninterrupted(c, a, b, 1000);
  const auto solver = make_solver(c.method, parse_solver_options(c.options));
  const Tensor x = zeros(576);
  solver->start(a, b, x);
  StateDict state;
  while (!solver->iterate(5)) solver->save_state(state, "s");
  EXPECT_EQ(values_of(x), whole.x);
  EXPECT_EQ(state.integer("s/iteration") % 5, 0) << "the last save holds an earlier iteration";
  EXPECT_LT(state.integer("s/iteration"), solver->result().iterations);
}

TEST(Resume, LoadingRejectsStateFromAnotherConfiguration) {
  const OperatorPtr a = make_csr_operator(testing::poisson(8));
  const Tensor b = random_vector(64, 1);
  StateDict state;
  const auto gmres = make_solver("gmres", parse_solver_options("restart=10"));
  gmres->start(a, b, zeros(64));
  (void)gmres->iterate(3);
  gmres->save_state(state, "s");

  const auto expect_rejected = [&](const std::string& method, const std::string& options,
                                   const Tensor& rhs, const std::string& message) {
    const auto solver = make_solver(method, parse_solver_options(options));
    solver->start(a, rhs, zeros(64));
    try {
      solver->load_state(state, "s");
      ADD_FAILURE() << method << " " << options << " accepted the state";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect_rejected("cg", "", b, "saved by gmres");
  expect_rejected("gmres", "restart=12", b, "restart 10");
  expect_rejected("gmres", "restart=10,pc=jacobi", b, "preconditioner 'none'");
  expect_rejected("gmres", "restart=10", random_vector(64, 2), "right-hand side");
  expect_rejected("gmres", "restart=10,pc_side=left", b, "pc_side=right");
  const auto cg = make_solver("cg");
  cg->start(a, b, zeros(64));
  EXPECT_THROW(cg->load_state(state, "elsewhere"), UsageError);
}

TEST(Resume, AFinishedSessionLoadsAsFinished) {
  const OperatorPtr a = make_csr_operator(testing::poisson(8));
  const Tensor b = random_vector(64, 1);
  const auto solver = make_solver("cg");
  const Tensor x = zeros(64);
  const SolveResult result = solver->solve(a, b, x);
  StateDict state;
  solver->save_state(state, "s");
  const auto fresh = make_solver("cg");
  const Tensor y = zeros(64);
  fresh->start(a, b, y);
  fresh->load_state(state, "s");
  EXPECT_TRUE(fresh->finished());
  EXPECT_TRUE(fresh->iterate(10));
  EXPECT_EQ(fresh->result().iterations, result.iterations);
  EXPECT_EQ(fresh->result().status, SolveStatus::converged);
  EXPECT_EQ(values_of(y), values_of(x));
}

// A solve stopped by its iteration limit and resumed under a larger one (a resume may raise the
// limit) goes on: CG and BiCGSTAB with the iterates of a solve that never stopped, GMRES from a
// new cycle at the saved x, to convergence. Under the same limit it stays finished.
TEST(Resume, AStopAtTheIterationLimitGoesOnUnderALargerOne) {
  for (const Case& c : {Case{"cg", "tol=1e-12"}, Case{"bicgstab", "tol=1e-12"},
                        Case{"gmres", "tol=1e-12,restart=30"}}) {
    SCOPED_TRACE(label(c));
    const bool exact = c.method != "gmres";
    const OperatorPtr a =
        make_csr_operator(exact && c.method == "cg" ? testing::poisson(24)
                                                    : testing::convection_diffusion(24, 10.0, 5.0));
    const Tensor b = random_vector(576, 5);
    const Outcome whole = uninterrupted(c, a, b, 1000);
    ASSERT_EQ(whole.result.status, SolveStatus::converged) << whole.result.detail;
    StateDict state;
    {
      const auto limited = make_solver(c.method, parse_solver_options(c.options + ",max_iters=40"));
      const Tensor x = zeros(a->rows());
      limited->start(a, b, x);
      while (!limited->iterate(1000)) {
      }
      ASSERT_EQ(limited->result().status, SolveStatus::max_iterations);
      limited->save_state(state, "s");
    }
    // The same limit: the solve stays where it stopped.
    {
      const auto same = make_solver(c.method, parse_solver_options(c.options + ",max_iters=40"));
      const Tensor x = zeros(a->rows());
      same->start(a, b, x);
      same->load_state(state, "s");
      EXPECT_TRUE(same->finished());
      EXPECT_EQ(same->result().status, SolveStatus::max_iterations);
    }
    // A larger one: it goes on to convergence.
    const auto raised = make_solver(c.method, parse_solver_options(c.options));
    const Tensor x = zeros(a->rows());
    raised->start(a, b, x);
    raised->load_state(state, "s");
    EXPECT_FALSE(raised->finished());
    while (!raised->iterate(1000)) {
    }
    EXPECT_EQ(raised->result().status, SolveStatus::converged) << raised->result().detail;
    if (exact) {
      EXPECT_EQ(raised->result().iterations, whole.result.iterations);
      EXPECT_EQ(values_of(x), whole.x) << "the iterates of the solve that never stopped";
    } else {
      EXPECT_LE(raised->result().relative_residual, 1e-12);
    }
  }
}

}  // namespace
}  // namespace tenax::solvers
