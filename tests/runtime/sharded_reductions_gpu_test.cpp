// Sharded reductions on CUDA tensors (the CUDA backend hands its block partials to the scope):
// with the threads communicator at 1 and 2 ranks, each rank's shard on the GPU, every reduction
// returns the CPU backend's single-process bits. Skips without a usable GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/sharded_reductions.hpp"

namespace tenax::runtime {
namespace {

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

TEST(ShardedReductionsGpu, CudaShardsGiveTheCpuSingleProcessBits) {
  if (!cuda::availability().usable) {
    GTEST_SKIP() << "no usable CUDA device: " << cuda::availability().reason;
  }
  const std::int64_t n = 9 * kernels::kReduceBlock + 123;
  Tensor x = Tensor::empty({n}, DType::f64);
  Tensor y = Tensor::empty({n}, DType::f64);
  ops::random_uniform(x, 7, 0, -1.0, 1.0);
  ops::random_uniform(y, 8, 0, -1.0, 1.0);
  const double dot = ops::dot(x, y), nrm2 = ops::nrm2(x), sum = ops::sum(x), max = ops::max(x);
  Tensor cx = x.clone(), cr = y.clone();
  const double rr = ops::cg_update(0.25, y, x, cx, cr);
  for (const int ranks : {1, 2}) {
    auto comms = make_thread_communicators(ranks, CommOptions{});
    std::vector<std::string> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          const kernels::ShardRange range = kernels::block_aligned_range(n, ranks, r);
          const Device gpu = Device::cuda(0);
          const Tensor xs = x.slice(range.first, range.first + range.count).to(gpu);
          const Tensor ys = y.slice(range.first, range.first + range.count).to(gpu);
          Tensor gx = xs.clone(), gr = ys.clone();
          ShardedReductions reductions(*comms[static_cast<std::size_t>(r)], range);
          EXPECT_EQ(bits(ops::dot(xs, ys)), bits(dot)) << "rank " << r;
          EXPECT_EQ(bits(ops::nrm2(xs)), bits(nrm2)) << "rank " << r;
          EXPECT_EQ(bits(ops::sum(xs)), bits(sum)) << "rank " << r;
          EXPECT_EQ(bits(ops::max(xs)), bits(max)) << "rank " << r;
          EXPECT_EQ(bits(ops::cg_update(0.25, ys, xs, gx, gr)), bits(rr)) << "rank " << r;
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << r;
  }
}

}  // namespace
}  // namespace tenax::runtime
