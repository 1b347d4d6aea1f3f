// The fused Krylov kernels on the CPU backend: the bodies shared with every backend
// (krylov_cases.hpp: bit-for-bit agreement with the separate ops they replace, hand values,
// empty operands), and what is the CPU's own: plain references, the documented reduction order,
// independence of the thread count, rows read from an offset, and the validation of every
// operand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/documented_order.hpp"
#include "kernels/krylov_cases.hpp"
#include "kernels/krylov_test_helpers.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using testing::bits;
using testing::documented_dot;
using testing::expect_contains;
using testing::five_point_csr;
using testing::make_tensor;
using testing::random_tensor;
using testing::same_bytes;
using testing::usage_error;
using testing::values_of;

using krylov_cases::kDtypes;
using krylov_cases::kLengths;
using krylov_cases::kNaN;

// The bodies shared with the CUDA backend (krylov_cases.hpp), on the CPU.
using krylov_cases::KrylovKernels;
INSTANTIATE_TEST_SUITE_P(Cpu, KrylovKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

Tensor nan_tensor(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  ops::fill(t, kNaN);
  return t;
}

// sum |a_i b_i| in long double, and the sum itself: the scale of a dot's rounding error.
struct LongDot {
  long double sum = 0;
  long double abs = 0;
};
LongDot long_dot(const std::vector<double>& a, const std::vector<double>& b) {
  LongDot d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const long double t = static_cast<long double>(a[i]) * b[i];
    d.sum += t;
    d.abs += std::fabs(t);
  }
  return d;
}

// ---- cg_update ----

template <class T>
void expect_cg_update_matches_plain_loops(DType dtype, std::int64_t n, std::uint32_t seed) {
  const auto p = testing::random_reals(n, dtype, seed);
  const auto q = testing::random_reals(n, dtype, seed + 1);
  auto x = testing::random_reals(n, dtype, seed + 2);
  auto r = testing::random_reals(n, dtype, seed + 3);
  const Tensor tp = make_tensor(p, dtype), tq = make_tensor(q, dtype);
  const Tensor tx = make_tensor(x, dtype), tr = make_tensor(r, dtype);
  const double alpha = -1.3;
  const double rr = ops::cg_update(alpha, tp, tq, tx, tr);
  const auto a = static_cast<T>(alpha);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<T>(static_cast<T>(x[i]) + static_cast<T>(a * static_cast<T>(p[i])));
    r[i] = static_cast<T>(static_cast<T>(r[i]) - static_cast<T>(a * static_cast<T>(q[i])));
  }
  EXPECT_EQ(values_of(tx), x) << to_string(dtype) << " n=" << n;
  EXPECT_EQ(values_of(tr), r) << to_string(dtype) << " n=" << n;
  EXPECT_EQ(bits(rr), bits(documented_dot(r, r))) << to_string(dtype) << " n=" << n;
  const LongDot exact = long_dot(r, r);
  EXPECT_NEAR(rr, static_cast<double>(exact.sum), 1e-14 * static_cast<double>(exact.abs));
}

TEST(CgUpdate, MatchesPlainLoopsAndTheDocumentedOrder) {
  std::uint32_t seed = 100;
  for (const std::int64_t n : kLengths) {
    expect_cg_update_matches_plain_loops<double>(DType::f64, n, seed += 4);
    expect_cg_update_matches_plain_loops<float>(DType::f32, n, seed += 4);
  }
}

// ---- spmv_dot ----

// A rank's rows of a distributed matrix read [ghosts below | local | ghosts above]: the dot pairs
// each row with the entry `pair` columns on, and equals ops::dot over that slice of p.
TEST(SpmvDot, PairsTheRowsWithTheEntriesFromItsOffset) {
  std::uint32_t seed = 450;
  for (const DType dtype : kDtypes) {
    // 70 x 90 rows of a 5-point matrix, read as a rank's rows with 20 columns below its own.
    const CsrMatrix whole = five_point_csr(90, 90, dtype, DType::i64, seed++);
    const std::int64_t rows = 70 * 90, below = 20 * 90, cols = whole.cols();
    const Tensor p = random_tensor({cols}, dtype, seed++);
    const Tensor q = Tensor::empty({cols}, dtype);
    ops::spmv(whole, p, q);
    // Rows [below, below + rows) of the whole matrix, with every column.
    const auto row_ptr = whole.row_ptr().data_as<const std::int64_t>();
    const std::int64_t first = row_ptr[below];
    const std::int64_t last = row_ptr[below + rows];
    Tensor rp = Tensor::empty({rows + 1}, DType::i64);
    for (std::int64_t r = 0; r <= rows; ++r) {
      rp.data_as<std::int64_t>()[r] = row_ptr[below + r] - first;
    }
    const CsrMatrix mine(rows, cols, rp, whole.col_idx().slice(first, last).clone(),
                         whole.values().slice(first, last).clone());
    const Tensor mine_q = nan_tensor({rows}, dtype);
    const double pq = ops::spmv_dot(mine, p, mine_q, below);
    EXPECT_TRUE(same_bytes(mine_q, q.slice(below, below + rows))) << to_string(dtype);
    EXPECT_EQ(bits(pq), bits(ops::dot(p.slice(below, below + rows), mine_q))) << to_string(dtype);
    expect_contains(usage_error([&] { (void)ops::spmv_dot(mine, p, mine_q, cols - rows + 1); }),
                    {"spmv_dot", "rows <= cols - pair"});
    expect_contains(usage_error([&] { (void)ops::spmv_dot(mine, p, mine_q, -1); }),
                    {"spmv_dot", "pair -1"});
  }
}

// ---- BiCGSTAB ----

TEST(BicgstabUpdate, MatchesPlainLoopsAndTheDocumentedOrder) {
  const std::int64_t n = 3 * 4096 + 77;
  const auto p_hat = testing::random_reals(n, DType::f64, 801);
  const auto s_hat = testing::random_reals(n, DType::f64, 802);
  const auto t = testing::random_reals(n, DType::f64, 803);
  const auto r_hat = testing::random_reals(n, DType::f64, 804);
  auto x = testing::random_reals(n, DType::f64, 805);
  auto r = testing::random_reals(n, DType::f64, 806);
  const Tensor tx = make_tensor(x, DType::f64), tr = make_tensor(r, DType::f64);
  const ops::BicgstabDots got =
      ops::bicgstab_update(0.3, make_tensor(p_hat, DType::f64), 0.7, make_tensor(s_hat, DType::f64),
                           make_tensor(t, DType::f64), make_tensor(r_hat, DType::f64), tx, tr);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = (x[i] + 0.3 * p_hat[i]) + 0.7 * s_hat[i];
    r[i] = r[i] - 0.7 * t[i];
  }
  EXPECT_EQ(values_of(tx), x);
  EXPECT_EQ(values_of(tr), r);
  EXPECT_EQ(bits(got.rr), bits(documented_dot(r, r)));
  EXPECT_EQ(bits(got.r_hat_r), bits(documented_dot(r_hat, r)));
  const LongDot exact = long_dot(r_hat, r);
  EXPECT_NEAR(got.r_hat_r, static_cast<double>(exact.sum), 1e-14 * static_cast<double>(exact.abs));
}

TEST(BicgstabChecks, OperandsAreValidatedBeforeAnythingIsWritten) {
  const Tensor a = make_tensor({1, 2, 3, 4}, DType::f64);
  const Tensor b = make_tensor({1, 1, 1, 1}, DType::f64);
  const Tensor c = make_tensor({2, 2, 2, 2}, DType::f64);
  const Tensor f = Tensor::empty({4}, DType::f32);
  const Tensor a5 = Tensor::empty({5}, DType::f64);
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, f, c); }),
                  {"bicgstab_direction", "r is f64", "v is f32"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, a); }),
                  {"bicgstab_direction", "p overlaps r"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, c, a5, a5.clone()); }),
                  {"bicgstab_direction", "inv_diag has shape [5]"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, c, a.clone()); }),
                  {"bicgstab_direction", "inv_diag and p_hat", "together"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, c, b.clone(), c); }),
                  {"bicgstab_direction", "p_hat overlaps p"});
  expect_contains(usage_error([&] { (void)ops::bicgstab_residual(1, a, a); }),
                  {"bicgstab_residual", "r overlaps v"});
  expect_contains(usage_error([&] { (void)ops::bicgstab_residual(1, a, c, b, b); }),
                  {"bicgstab_residual", "s_hat overlaps inv_diag"});
  expect_contains(usage_error([&] { (void)ops::bicgstab_residual(1, a, c, Tensor{}, b); }),
                  {"bicgstab_residual", "together"});
  expect_contains(
      usage_error([&] { (void)ops::bicgstab_update(1, a, 1, Tensor{}, b, a5, c.clone(), c); }),
      {"bicgstab_update", "r_hat has shape [5]"});
  expect_contains(
      usage_error([&] { (void)ops::bicgstab_update(1, a, 1, Tensor{}, b, a.clone(), c, c); }),
      {"bicgstab_update", "x overlaps r"});
  expect_contains(
      usage_error([&] { (void)ops::bicgstab_update(1, a, 1, c, b, a.clone(), b.clone(), c); }),
      {"bicgstab_update", "r overlaps s_hat"});
  const CsrMatrix m = five_point_csr(2, 2, DType::f64, DType::i32, 1);  // 4 x 4
  expect_contains(usage_error([&] { (void)ops::spmv_dots(m, a, b, a5); }),
                  {"spmv_dots", "w has shape [5]"});
  expect_contains(usage_error([&] { (void)ops::spmv_dots(m, a, b, b); }),
                  {"spmv_dots", "q overlaps w"});
  expect_contains(usage_error([&] { (void)ops::spmv_dots(m, a, b, f); }),
                  {"spmv_dots", "w is f32"});
  EXPECT_EQ(values_of(a), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values_of(b), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values_of(c), (std::vector<double>{2, 2, 2, 2}));
}

TEST(Bicgstab, SameBitsForAnyThreadCountAndEmptyOperands) {
  CpuContext one(1);
  CpuContext three(3);
  const std::int64_t n = 1'000'003;
  for (const DType dtype : kDtypes) {
    const Tensor v = random_tensor({n}, dtype, 1), d = random_tensor({n}, dtype, 2);
    const Tensor t = random_tensor({n}, dtype, 3), h = random_tensor({n}, dtype, 4);
    const Tensor r0 = random_tensor({n}, dtype, 5), x0 = random_tensor({n}, dtype, 6);
    const CsrMatrix a = five_point_csr(601, 733, dtype, DType::i32, 7);
    const Tensor pa = random_tensor({a.cols()}, dtype, 8);
    auto run = [&](CpuContext& context) {
      std::vector<double> values;
      std::vector<Tensor> outs;
      const Tensor p = r0.clone(), p_hat = Tensor::empty({n}, dtype);
      kernels::cpu::bicgstab_direction(context, {0.9, 0.4, r0, v, p, d, p_hat});
      const Tensor r = r0.clone(), s_hat = Tensor::empty({n}, dtype), x = x0.clone();
      values.push_back(kernels::cpu::residual_update(context, {0.3, v, r, d, s_hat}).rr);
      const Tensor r_plain = r0.clone();
      const ops::PcgDots plain = kernels::cpu::residual_update(context, {0.3, v, r_plain});
      values.push_back(plain.rr);
      values.push_back(plain.rz);
      const Tensor p_next = r0.clone(), x_next = x0.clone();
      kernels::cpu::cg_advance(context, {0.3, p_next, 0.7, h, x_next});
      const ops::BicgstabDots u =
          kernels::cpu::bicgstab_update(context, {0.3, 0.6, p_hat, s_hat, t, h, x, r});
      values.push_back(u.rr);
      values.push_back(u.r_hat_r);
      const Tensor qa = Tensor::empty({a.rows()}, dtype);
      const ops::SpmvDots sd = kernels::cpu::spmv_dots(context, {a, pa, qa, pa.slice(0, a.rows())});
      values.push_back(sd.wq);
      values.push_back(sd.qq);
      outs = {p, p_hat, r, s_hat, x, qa, r_plain, p_next, x_next};
      return std::pair{values, outs};
    };
    const auto want = run(one);
    const auto got = run(three);
    for (std::size_t k = 0; k < want.first.size(); ++k) {
      EXPECT_EQ(bits(got.first[k]), bits(want.first[k])) << to_string(dtype) << " result " << k;
    }
    for (std::size_t k = 0; k < want.second.size(); ++k) {
      EXPECT_TRUE(same_bytes(got.second[k], want.second[k])) << to_string(dtype) << " output " << k;
    }
    const Tensor e = Tensor::empty({0}, dtype);
    ops::bicgstab_direction(1, 1, e, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    EXPECT_EQ(ops::bicgstab_residual(1, e, Tensor::empty({0}, dtype)), 0.0);
    const ops::PcgDots cg_none = ops::cg_residual(
        1, e, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    EXPECT_EQ(cg_none.rr, 0.0);
    EXPECT_EQ(cg_none.rz, 0.0);
    ops::cg_advance(1, e, 1, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    const ops::BicgstabDots none = ops::bicgstab_update(
        1, e, 1, Tensor{}, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype),
        Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    EXPECT_EQ(none.rr, 0.0);
    EXPECT_EQ(none.r_hat_r, 0.0);
  }
}

// ---- classical Gram-Schmidt against a basis ----

TEST(BasisDotsAndSubtract, SameBitsForAnyThreadCountAndHandValues) {
  const std::int64_t n = 700'001;
  const Tensor basis = random_tensor({9, n}, DType::f64, 1);
  const Tensor w0 = random_tensor({n}, DType::f64, 2);
  auto run = [&](int threads) {
    CpuContext context(threads);
    std::vector<double> h(9);
    kernels::cpu::basis_dots(context, {basis, w0}, h);
    const Tensor w = w0.clone();
    h.push_back(
        kernels::cpu::basis_subtract(context, {basis, w}, std::span<const double>(h).first(9)));
    return std::pair{h, w};
  };
  const auto want = run(1);
  for (const int threads : {2, 5}) {
    const auto got = run(threads);
    for (std::size_t k = 0; k < want.first.size(); ++k) {
      EXPECT_EQ(bits(got.first[k]), bits(want.first[k])) << k << " with " << threads;
    }
    EXPECT_TRUE(same_bytes(got.second, want.second)) << threads;
  }
  // [1 2; 0 1] rows against w = [3, 4]: dots 11 and 4; w - 11 v0 - 4 v1 = [-8, -22 + 4 - 4].
  const Tensor v = make_tensor({2, 2}, DType::f64, {1, 2, 0, 1});
  const Tensor w = make_tensor({3, 4}, DType::f64);
  double h[2];
  ops::basis_dots(v, w, h);
  EXPECT_EQ(h[0], 11.0);
  EXPECT_EQ(h[1], 4.0);
  EXPECT_EQ(ops::basis_subtract(v, h, w), 64.0 + 484.0);
  EXPECT_EQ(values_of(w), (std::vector<double>{-8, -22}));
}

TEST(BasisDotsAndSubtract, OperandsAreValidated) {
  const Tensor basis = Tensor::empty({3, 8}, DType::f64);
  const Tensor w = Tensor::empty({8}, DType::f64);
  std::vector<double> three(3), two(2);
  expect_contains(usage_error([&] { ops::basis_dots(basis, w, two); }),
                  {"basis_dots", "out has 2 entries", "3 rows"});
  expect_contains(usage_error([&] { (void)ops::basis_subtract(basis, two, w); }),
                  {"basis_subtract", "h has 2 entries"});
  expect_contains(
      usage_error([&] { ops::basis_dots(basis, Tensor::empty({7}, DType::f64), three); }),
      {"basis_dots", "w has shape [7]", "[8]"});
  expect_contains(usage_error([&] { ops::basis_dots(w, w.clone(), three); }),
                  {"basis_dots", "[K, n]"});
  expect_contains(
      usage_error([&] { ops::basis_dots(basis, Tensor::empty({8}, DType::f32), three); }),
      {"basis_dots", "w is f32"});
  expect_contains(
      usage_error([&] { (void)ops::basis_subtract(basis, three, basis.slice(1, 2).reshape({8})); }),
      {"basis_subtract", "w overlaps basis"});
  expect_contains(
      usage_error([&] {
        ops::basis_dots(Tensor::empty({3, 8}, DType::i32), Tensor::empty({8}, DType::i32), three);
      }),
      {"basis_dots", "f64 and f32"});
  // No rows: no dots, and the subtraction is w.w alone.
  const Tensor none = Tensor::empty({0, 2}, DType::f64);
  const Tensor w2 = make_tensor({3, 4}, DType::f64);
  ops::basis_dots(none, w2, std::span<double>());
  EXPECT_EQ(ops::basis_subtract(none, std::span<const double>(), w2), 25.0);
}

// ---- every kernel: thread count, empty operands ----

TEST(Krylov, SameBitsForAnyThreadCount) {
  CpuContext one(1);
  CpuContext two(2);
  CpuContext five(5);
  const std::int64_t n = 2'000'017;
  for (const DType dtype : kDtypes) {
    const Tensor p = random_tensor({n}, dtype, 1);
    const Tensor q = random_tensor({n}, dtype, 2);
    const Tensor x = random_tensor({n}, dtype, 3);
    const Tensor r = random_tensor({n}, dtype, 4);
    const Tensor d = random_tensor({n}, dtype, 5);
    const Tensor grid2 = random_tensor({701, 733}, dtype, 6);
    const Tensor grid3 = random_tensor({61, 70, 83}, dtype, 7);
    const CsrMatrix a = five_point_csr(701, 733, dtype, DType::i32, 8);
    const Tensor pa = random_tensor({a.cols()}, dtype, 9);

    struct Outcome {
      double value[6];
      Tensor out[8];
    };
    auto run = [&](CpuContext& context) {
      Outcome o;
      const Tensor xc = x.clone(), rc = r.clone(), x2 = x.clone(), r2 = r.clone();
      const Tensor z = Tensor::empty({n}, dtype), pc = p.clone();
      const Tensor q2 = Tensor::empty_like(grid2), q3 = Tensor::empty_like(grid3);
      const Tensor qa = Tensor::empty({a.rows()}, dtype);
      o.value[0] = kernels::cpu::cg_update(context, {0.3, p, q, xc, rc});
      const ops::PcgDots dots = kernels::cpu::pcg_jacobi_update(context, {0.3, p, q, x2, r2, d, z});
      o.value[1] = dots.rz;
      o.value[2] = dots.rr;
      o.value[3] = kernels::cpu::laplacian_5pt_dot(
          context, {{grid2, q2, 1, 701, 733, 1.0, 0.5, 0.25}, -1.0});
      o.value[4] =
          kernels::cpu::laplacian_7pt_dot(context, {{grid3, q3, 61, 70, 83, 0.3, 0.5, 0.25}, -1.0});
      o.value[5] = kernels::cpu::spmv_dot(context, {a, pa, qa});
      kernels::cpu::xpay(context, {r, 0.7, pc});
      o.out[0] = xc;
      o.out[1] = rc;
      o.out[2] = x2;
      o.out[3] = z;
      o.out[4] = q2;
      o.out[5] = q3;
      o.out[6] = qa;
      o.out[7] = pc;
      return o;
    };
    const Outcome want = run(one);
    for (CpuContext* context : {&two, &five}) {
      const Outcome got = run(*context);
      for (int k = 0; k < 6; ++k) {
        EXPECT_EQ(bits(got.value[k]), bits(want.value[k]))
            << to_string(dtype) << " result " << k << " with " << context->num_threads();
      }
      for (int k = 0; k < 8; ++k) {
        EXPECT_TRUE(same_bytes(got.out[k], want.out[k]))
            << to_string(dtype) << " output " << k << " with " << context->num_threads();
      }
    }
    EXPECT_EQ(bits(want.value[5]), bits(ops::dot(pa, want.out[6])));
  }
}

// ---- validation ----

TEST(KrylovChecks, WrongDtypes) {
  const Tensor h = Tensor::empty({4}, DType::f16);
  const Tensor i = Tensor::empty({4}, DType::i32);
  const Tensor d = Tensor::empty({4}, DType::f64);
  const Tensor d2 = Tensor::empty({4}, DType::f64);
  const Tensor d3 = Tensor::empty({4}, DType::f64);
  const Tensor f = Tensor::empty({4}, DType::f32);
  expect_contains(
      usage_error([&] { (void)ops::cg_update(1.0, h, h.clone(), h.clone(), h.clone()); }),
      {"cg_update", "p is f16[4] on cpu", "f64 and f32", "ops::cast"});
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, d, d2, d3, f); }),
                  {"cg_update", "p is f64", "r is f32", "ops::cast"});
  expect_contains(
      usage_error([&] { (void)ops::pcg_jacobi_update(1.0, d, d2, d3, d.clone(), f, d.clone()); }),
      {"pcg_jacobi_update", "inv_diag is f32"});
  expect_contains(usage_error([&] { ops::xpay(i, 1.0, i.clone()); }), {"xpay", "z is i32[4]"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, d, f); }),
                  {"cg_residual", "v is f64", "r is f32", "ops::cast"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, d, d2, f, d3); }),
                  {"cg_residual", "inv_diag is f32"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, h, 1.0, h.clone(), h.clone()); }),
                  {"cg_advance", "p is f16[4] on cpu", "f64 and f32"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, d, 1.0, d2, f); }),
                  {"cg_advance", "p is f64", "x is f32"});
  expect_contains(usage_error([&] { ops::xpay(d, 1.0, f); }), {"xpay", "z is f64", "p is f32"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({2, 2}, DType::bf16),
                                                 Tensor::empty({2, 2}, DType::bf16), 1, 1, 1);
                  }),
                  {"laplacian_5pt_dot", "p is bf16[2, 2]", "f64 and f32"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_7pt_dot(Tensor::empty({2, 2, 2}, DType::f64),
                                                 Tensor::empty({2, 2, 2}, DType::f32), 1, 1, 1, 1);
                  }),
                  {"laplacian_7pt_dot", "p is f64", "q is f32"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i32, 1);
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, f, f.clone()); }),
                  {"spmv_dot", "a is f64", "p is f32", "q is f32", "ops::cast"});
}

TEST(KrylovChecks, MismatchedLengthsAndShapes) {
  const Tensor a4 = Tensor::empty({4}, DType::f64);
  const Tensor b4 = Tensor::empty({4}, DType::f64);
  const Tensor c4 = Tensor::empty({4}, DType::f64);
  const Tensor a5 = Tensor::empty({5}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, a4, b4, a5, c4); }),
                  {"cg_update", "p has shape [4]", "x has shape [5]"});
  expect_contains(usage_error([&] {
                    (void)ops::pcg_jacobi_update(1.0, a4, b4, c4, a4.clone(), a4.clone(), a5);
                  }),
                  {"pcg_jacobi_update", "z has shape [5]"});
  expect_contains(usage_error([&] { ops::xpay(a4, 1.0, a5); }),
                  {"xpay", "z has shape [4]", "p has shape [5]"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({2, 3}, DType::f32),
                                                 Tensor::empty({3, 2}, DType::f32), 1, 1, -1);
                  }),
                  {"laplacian_5pt_dot", "p has shape [2, 3]", "q has shape [3, 2]"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({6}, DType::f32),
                                                 Tensor::empty({6}, DType::f32), 1, 1, -1);
                  }),
                  {"laplacian_5pt_dot", "p has shape [6]", "2-D grid"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_7pt_dot(Tensor::empty({2, 3}, DType::f32),
                                                 Tensor::empty({2, 3}, DType::f32), 1, 1, 1, -1);
                  }),
                  {"laplacian_7pt_dot", "3-D grid"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i64, 1);  // 4 x 4
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, a5, a4); }),
                  {"spmv_dot", "p has shape [5]", "[4]"});
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, a4, a5); }),
                  {"spmv_dot", "q has shape [5]", "[4]"});
  // More rows than columns: p has no entry to pair with the last rows.
  const CsrMatrix tall = CsrMatrix::from_dense(make_tensor({3, 2}, DType::f64, {1, 0, 2, 0, 3, 0}));
  expect_contains(usage_error([&] {
                    (void)ops::spmv_dot(tall, Tensor::empty({2}, DType::f64),
                                        Tensor::empty({3}, DType::f64));
                  }),
                  {"spmv_dot", "[3, 2]", "rows <= cols"});
  // More columns than rows (a rank's [local | ghost] columns): the dot pairs q with p's first
  // entries. q = [1*1 + 2*5, 3*4] = [11, 12]; p.q = 1*11 + 4*12 = 59.
  const CsrMatrix wide = CsrMatrix::from_dense(make_tensor({2, 3}, DType::f64, {1, 0, 2, 0, 3, 0}));
  const Tensor p3 = make_tensor({3}, DType::f64, {1, 4, 5});
  Tensor q2 = Tensor::empty({2}, DType::f64);
  EXPECT_EQ(ops::spmv_dot(wide, p3, q2), 59.0);
  EXPECT_EQ(q2.data_as<double>()[0], 11.0);
  EXPECT_EQ(q2.data_as<double>()[1], 12.0);
}

TEST(KrylovChecks, DifferentDevices) {
  const Tensor c = Tensor::empty({4}, DType::f64);
  const Tensor c2 = Tensor::empty({4}, DType::f64);
  const Tensor c3 = Tensor::empty({4}, DType::f64);
  const Tensor g = testing::fake_cuda_tensor({4}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, c, g, c2, c3); }),
                  {"cg_update", "p is on cpu", "q is on cuda:0", "to(device)"});
  expect_contains(
      usage_error([&] { (void)ops::pcg_jacobi_update(1.0, c, c2, c3, c.clone(), c.clone(), g); }),
      {"pcg_jacobi_update", "z is on cuda:0"});
  expect_contains(usage_error([&] { ops::xpay(g, 1.0, c); }),
                  {"xpay", "z is on cuda:0", "p is on cpu"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({2, 2}, DType::f64),
                                                 testing::fake_cuda_tensor({2, 2}, DType::f64), 1,
                                                 1, -1);
                  }),
                  {"laplacian_5pt_dot", "q is on cuda:0"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i32, 1);
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, c, g); }),
                  {"spmv_dot", "a is on cpu", "q is on cuda:0"});
}

TEST(KrylovChecks, OverlappingOutputs) {
  const Tensor p = Tensor::empty({8}, DType::f64);
  const Tensor q = Tensor::empty({8}, DType::f64);
  const Tensor x = Tensor::empty({8}, DType::f64);
  const Tensor r = Tensor::empty({8}, DType::f64);
  const Tensor d = Tensor::empty({8}, DType::f64);
  const Tensor z = Tensor::empty({8}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, p, q, x, x); }),
                  {"cg_update", "x overlaps r", "separate tensors"});
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, p, q, p, r); }),
                  {"cg_update", "x overlaps p"});
  // Views that share part of their storage overlap too.
  const Tensor big = Tensor::empty({12}, DType::f64);
  expect_contains(
      usage_error([&] { (void)ops::cg_update(1.0, p, big.slice(4, 12), x, big.slice(0, 8)); }),
      {"cg_update", "r overlaps q"});
  expect_contains(usage_error([&] { (void)ops::pcg_jacobi_update(1.0, p, q, x, r, d, r); }),
                  {"pcg_jacobi_update", "r overlaps z"});
  expect_contains(usage_error([&] { (void)ops::pcg_jacobi_update(1.0, p, q, x, r, d, d); }),
                  {"pcg_jacobi_update", "z overlaps inv_diag"});
  expect_contains(usage_error([&] { ops::xpay(p, 0.5, p); }), {"xpay", "p overlaps z"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, r, r); }),
                  {"cg_residual", "r overlaps v"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, q, r, d, d); }),
                  {"cg_residual", "z overlaps inv_diag"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, q, r, d, r); }),
                  {"cg_residual", "z overlaps"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, q, r, d, Tensor{}); }),
                  {"cg_residual", "inv_diag and z must be given together"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, p, 0.5, z, p); }),
                  {"cg_advance", "x overlaps p"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, p, 0.5, p, x); }),
                  {"cg_advance", "overlaps"});
  const Tensor grid = Tensor::empty({3, 3}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::laplacian_5pt_dot(grid, grid, 1, 1, -1); }),
                  {"laplacian_5pt_dot", "q overlaps p"});
  const Tensor cube = Tensor::empty({2, 2, 2}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::laplacian_7pt_dot(cube, cube, 1, 1, 1, -1); }),
                  {"laplacian_7pt_dot", "q overlaps p"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i64, 1);  // 4 x 4, nnz 12
  expect_contains(usage_error([&] {
                    (void)ops::spmv_dot(a, Tensor::empty({4}, DType::f64), a.values().slice(0, 4));
                  }),
                  {"spmv_dot", "q overlaps a.values"});
  const Tensor v = Tensor::empty({4}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, v, v); }), {"spmv_dot", "q overlaps p"});
}

TEST(KrylovChecks, BadScalarsAndUndefinedOperands) {
  const Tensor grid = Tensor::empty({3, 3}, DType::f64);
  const Tensor out = Tensor::empty({3, 3}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::laplacian_5pt_dot(grid, out, 0.0, 1, -1); }),
                  {"laplacian_5pt_dot", "hy", "positive"});
  expect_contains(usage_error([&] { (void)ops::laplacian_5pt_dot(grid, out, 1, 1, kNaN); }),
                  {"laplacian_5pt_dot", "scale is nan"});
  const Tensor cube = Tensor::empty({2, 2, 2}, DType::f64);
  const Tensor cube_out = Tensor::empty({2, 2, 2}, DType::f64);
  expect_contains(
      usage_error([&] { (void)ops::laplacian_7pt_dot(cube, cube_out, 1, 1, -2.0, -1); }),
      {"laplacian_7pt_dot", "hx", "positive"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_7pt_dot(cube, cube_out, 1, 1, 1,
                                                 std::numeric_limits<double>::infinity());
                  }),
                  {"laplacian_7pt_dot", "scale is inf"});
  const Tensor v = Tensor::empty({4}, DType::f64);
  expect_contains(
      usage_error([&] { (void)ops::cg_update(1.0, v, v.clone(), Tensor(), v.clone()); }),
      {"cg_update", "x is an undefined tensor"});
  expect_contains(usage_error([&] { ops::xpay(Tensor(), 1.0, v); }),
                  {"xpay", "z is an undefined tensor"});
  expect_contains(usage_error([&] { (void)ops::spmv_dot(CsrMatrix(), v, v.clone()); }),
                  {"spmv_dot", "empty CsrMatrix"});
}

TEST(KrylovChecks, CheckedBeforeAnythingIsWritten) {
  // A failed check leaves every operand as it was.
  const Tensor p = make_tensor({1, 2, 3, 4}, DType::f64);
  const Tensor x = make_tensor({1, 1, 1, 1}, DType::f64);
  const Tensor r = make_tensor({2, 2, 2, 2}, DType::f64);
  EXPECT_THROW((void)ops::cg_update(1.0, p, Tensor::empty({4}, DType::f32), x, r), UsageError);
  EXPECT_THROW((void)ops::cg_residual(1.0, p, r, p.clone(), Tensor::empty({4}, DType::f32)),
               UsageError);
  EXPECT_THROW(ops::cg_advance(1.0, p, 1.0, Tensor::empty({5}, DType::f64), x), UsageError);
  EXPECT_EQ(values_of(p), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values_of(x), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values_of(r), (std::vector<double>{2, 2, 2, 2}));
}

TEST(KrylovDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  auto g = [] { return testing::fake_cuda_tensor({4}, DType::f64); };
  const Tensor p = g(), q = g(), x = g(), r = g(), d = g(), z = g();
  try {
    (void)ops::cg_update(1.0, p, q, x, r);
    FAIL() << "cg_update of CUDA tensors must throw in a build without CUDA";
  } catch (const NotCompiledError& e) {
    expect_contains(e.what(), {"cg_update", "TENAX_WITH_CUDA"});
  }
  EXPECT_THROW((void)ops::pcg_jacobi_update(1.0, p, q, x, r, d, z), NotCompiledError);
  EXPECT_THROW(ops::xpay(p, 1.0, q), NotCompiledError);
  EXPECT_THROW((void)ops::cg_residual(1.0, q, r, d, z), NotCompiledError);
  EXPECT_THROW(ops::cg_advance(1.0, p, 1.0, z, x), NotCompiledError);
  const Tensor g2 = testing::fake_cuda_tensor({2, 2}, DType::f64);
  const Tensor g2b = testing::fake_cuda_tensor({2, 2}, DType::f64);
  EXPECT_THROW((void)ops::laplacian_5pt_dot(g2, g2b, 1, 1, -1), NotCompiledError);
  const Tensor g3 = testing::fake_cuda_tensor({2, 2, 2}, DType::f64);
  const Tensor g3b = testing::fake_cuda_tensor({2, 2, 2}, DType::f64);
  EXPECT_THROW((void)ops::laplacian_7pt_dot(g3, g3b, 1, 1, 1, -1), NotCompiledError);
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i32, 1);
  EXPECT_THROW((void)kernels::cuda::spmv_dot(
                   {a, Tensor::empty({4}, DType::f64), Tensor::empty({4}, DType::f64)}),
               NotCompiledError);
}

}  // namespace
}  // namespace tenax
