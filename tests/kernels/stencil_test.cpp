// The Laplacian stencils on the CPU backend: the bodies shared with every backend
// (stencil_cases.hpp), the point forms of the bodies, and the errors naming operands and fixes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/linalg_test_helpers.hpp"
#include "kernels/stencil_cases.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using testing::random_reals;

using stencil_cases::StencilKernels;
// The bodies shared with the CUDA backend (stencil_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, StencilKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(StencilBodies, InteriorPointFormAndBoundaryFormAgree) {
  // The CPU backend gathers interior points directly; the *_at form must give the same bits.
  const auto u = random_reals(5 * 6, DType::f64, 9);
  const auto c = kernels::laplacian_coefficients<double>(0.3, 0.7);
  const double direct = kernels::laplacian_5pt_point(u[2 * 6 + 3], u[2 * 6 + 2], u[2 * 6 + 4],
                                                     u[1 * 6 + 3], u[3 * 6 + 3], c);
  EXPECT_EQ(kernels::laplacian_5pt_at(u.data(), 5, 6, 2, 3, c), direct);
}

std::string stencil_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    EXPECT_FALSE(e.fix().empty());
    return e.cause() + " -- fix: " + e.fix();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

TEST(Laplacian5ptUpdate, ErrorsNameTheOperandsAndTheFix) {
  const Tensor u = Tensor::empty({5, 4}, DType::f64);
  std::string m = stencil_error([&] {
    ops::laplacian_5pt_update(u, Tensor::empty({2, 3}, DType::f64), 0, 0.1, 1, 1);
  });
  EXPECT_NE(m.find("laplacian_5pt_update: out has shape [2, 3] but u has shape [5, 4]"),
            std::string::npos)
      << m;
  m = stencil_error([&] {
    ops::laplacian_5pt_update(u, Tensor::empty({3, 4}, DType::f64), 3, 0.1, 1, 1);
  });
  EXPECT_NE(m.find("rows 3 to 6 are not rows of u [5, 4]"), std::string::npos) << m;
  m = stencil_error([&] {
    ops::laplacian_5pt_update(u, Tensor::empty({3, 4}, DType::f32), 0, 0.1, 1, 1);
  });
  EXPECT_NE(m.find("u is f64 but out is f32"), std::string::npos) << m;
  m = stencil_error([&] { ops::laplacian_5pt_update(u, u.slice(0, 2), 0, 0.1, 1, 1); });
  EXPECT_NE(m.find("out overlaps u"), std::string::npos) << m;
  m = stencil_error([&] {
    ops::laplacian_5pt_update(u, Tensor::empty({2, 4}, DType::f64), 0, std::nan(""), 1, 1);
  });
  EXPECT_NE(m.find("is not finite"), std::string::npos) << m;
}

TEST(Laplacian, ErrorsNameTheOperandsAndTheFix) {
  const Tensor u = Tensor::empty({3, 4}, DType::f64);
  std::string m = stencil_error([&] { ops::laplacian_5pt(u, Tensor::empty({4, 3}, DType::f64)); });
  EXPECT_NE(m.find("laplacian_5pt: u has shape [3, 4] but out has shape [4, 3]"), std::string::npos)
      << m;
  m = stencil_error([&] { ops::laplacian_5pt(u, Tensor::empty({3, 4}, DType::f32)); });
  EXPECT_NE(m.find("laplacian_5pt: u is f64 but out is f32"), std::string::npos) << m;
  m = stencil_error([&] { ops::laplacian_7pt(u, Tensor::empty({3, 4}, DType::f64)); });
  EXPECT_NE(m.find("laplacian_7pt: u has shape [3, 4] but must be a 3-D grid [nz, ny, nx]"),
            std::string::npos)
      << m;
  const Tensor h = Tensor::empty({3, 4}, DType::f16);
  m = stencil_error([&] { ops::laplacian_5pt(h, Tensor::empty({3, 4}, DType::f16)); });
  EXPECT_NE(m.find("u is f16[3, 4] on cpu but the op supports f64 and f32"), std::string::npos)
      << m;
  m = stencil_error([&] { ops::laplacian_5pt(u, Tensor::empty({3, 4}, DType::f64), 1.0, -2.0); });
  EXPECT_NE(m.find("laplacian_5pt: grid spacing hx = -2.000000 but must be positive"),
            std::string::npos)
      << m;
  m = stencil_error([&] { ops::laplacian_5pt(u, u); });
  EXPECT_NE(m.find("laplacian_5pt: out overlaps u"), std::string::npos) << m;
}

}  // namespace
}  // namespace tenax
