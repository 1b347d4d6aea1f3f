// The CUDA fused optimizer kernels against the CPU backend, the reference: both run the bodies of
// optim_bodies.hpp with the same host-rounded coefficients and no FMA contraction, so parameters
// and state agree bit for bit; and every PyTorch reference case holds on the GPU too.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/optim_test_helpers.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax {
namespace {

namespace ref = testing::optim_reference;

constexpr DType kDtypes[] = {DType::f64, DType::f32};
const std::int64_t kLengths[] = {1, 7, 4097, 1'000'003};

class OptimGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& cuda = tenax::cuda::availability();
    if (!cuda.usable) {
      GTEST_SKIP() << "no usable CUDA device, so the CUDA optimizer kernels cannot be compared "
                      "with the CPU backend: "
                   << cuda.reason;
    }
  }
  static Device gpu() { return Device::cuda(0); }
};

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// A CPU tensor of n values in [low, high) (Philox, so reproducible).
Tensor random(std::int64_t n, DType dtype, std::uint64_t seed, double low = -1.0,
              double high = 1.0) {
  Tensor t = Tensor::empty({n}, dtype);
  ops::random_uniform(t, seed, 0, low, high);
  return t;
}

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
        const Tensor p = random(n, dtype, seed++);
        const Tensor g = random(n, dtype, seed++);
        const Tensor b = random(n, dtype, seed++);
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
        const Tensor p = random(n, dtype, seed++);
        const Tensor m = random(n, dtype, seed++);
        const Tensor v = random(n, dtype, seed++, 0.0, 1e-3);
        const Tensor pg = p.to(gpu()), mg = m.to(gpu()), vg = v.to(gpu());
        ops::AdamStep s;
        s.lr = 1e-3;
        s.weight_decay = 0.01;
        s.decoupled_weight_decay = decoupled;
        s.grad_scale = 0.5;
        for (std::int64_t step = 1; step <= 3; ++step) {
          const Tensor g = random(n, dtype, seed++);
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
