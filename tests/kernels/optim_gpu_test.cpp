// The CUDA fused optimizer kernels against the CPU backend, the reference: both run the bodies of
// optim_bodies.hpp with the same host-rounded coefficients and no FMA contraction, so parameters
// and state agree bit for bit; and every PyTorch reference case holds on the GPU too.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/optim_cases.hpp"
#include "kernels/optim_test_helpers.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax {
namespace {

// Every optimizer semantics test body the CPU backend runs (optim_cases.hpp), on CUDA.
using optim_cases::OptimKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, OptimKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

using testing::philox_uniform;
using testing::same_bytes;
namespace ref = testing::optim_reference;

constexpr DType kDtypes[] = {DType::f64, DType::f32};
const std::int64_t kLengths[] = {1, 7, 4097, 1'000'003};

using OptimGpu = testing::GpuTest;

TEST_F(OptimGpu, EveryPyTorchCaseHoldsOnTheGpu) {
  for (const ref::Case& c : ref::kCases) {
    for (const DType dtype : kDtypes) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(to_string(dtype)));
      testing::expect_run_matches_reference(testing::run_with_ops(c, dtype, gpu()), c, dtype);
    }
  }
}

TEST_F(OptimGpu, EveryPyTorchCaseGivesTheCpuBits) {
  for (const ref::Case& c : ref::kCases) {
    for (const DType dtype : kDtypes) {
      const testing::OpsRun cpu = testing::run_with_ops(c, dtype, Device::cpu());
      const testing::OpsRun gpu_run = testing::run_with_ops(c, dtype, gpu());
      for (std::size_t k = 0; k < cpu.params.size(); ++k) {
        EXPECT_TRUE(same_bytes(cpu.params[k], gpu_run.params[k]))
            << c.name << " " << to_string(dtype) << " step " << k + 1;
      }
      if (cpu.buffer0.defined()) {
        EXPECT_TRUE(same_bytes(cpu.buffer0, gpu_run.buffer0)) << c.name;
      }
      if (cpu.buffer1.defined()) {
        EXPECT_TRUE(same_bytes(cpu.buffer1, gpu_run.buffer1)) << c.name;
      }
    }
  }
}

TEST_F(OptimGpu, SgdMatchesTheCpuBackendBitForBit) {
  std::uint64_t seed = 1;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const bool nesterov : {false, true}) {
        const Tensor p = philox_uniform({n}, dtype, seed++);
        const Tensor g = philox_uniform({n}, dtype, seed++);
        const Tensor b = philox_uniform({n}, dtype, seed++);
        const Tensor pg = p.to(gpu()), bg = b.to(gpu()), gg = g.to(gpu());
        ops::SgdStep s;
        s.lr = 0.05;
        s.momentum = 0.9;
        s.dampening = nesterov ? 0.0 : 0.1;
        s.weight_decay = 1e-4;
        s.nesterov = nesterov;
        s.grad_scale = 0.7;
        for (const bool first : {true, false}) {
          s.first_step = first;
          ops::sgd_update(p, g, b, s);
          ops::sgd_update(pg, gg, bg, s);
        }
        EXPECT_TRUE(same_bytes(testing::snapshot(pg), p)) << to_string(dtype) << " n=" << n;
        EXPECT_TRUE(same_bytes(testing::snapshot(bg), b)) << to_string(dtype) << " n=" << n;
      }
    }
  }
}

TEST_F(OptimGpu, AdamMatchesTheCpuBackendBitForBit) {
  std::uint64_t seed = 100;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const bool decoupled : {false, true}) {
        const Tensor p = philox_uniform({n}, dtype, seed++);
        const Tensor m = philox_uniform({n}, dtype, seed++);
        const Tensor v = philox_uniform({n}, dtype, seed++, 0.0, 1e-3);
        const Tensor pg = p.to(gpu()), mg = m.to(gpu()), vg = v.to(gpu());
        ops::AdamStep s;
        s.lr = 1e-3;
        s.weight_decay = 0.01;
        s.decoupled_weight_decay = decoupled;
        s.grad_scale = 0.5;
        for (std::int64_t step = 1; step <= 3; ++step) {
          const Tensor g = philox_uniform({n}, dtype, seed++);
          s.step = step;
          ops::adam_update(p, g, m, v, s);
          ops::adam_update(pg, g.to(gpu()), mg, vg, s);
        }
        EXPECT_TRUE(same_bytes(testing::snapshot(pg), p)) << to_string(dtype) << " n=" << n;
        EXPECT_TRUE(same_bytes(testing::snapshot(mg), m)) << to_string(dtype) << " n=" << n;
        EXPECT_TRUE(same_bytes(testing::snapshot(vg), v)) << to_string(dtype) << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace tenax
