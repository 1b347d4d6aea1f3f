// Reductions on CUDA: every test body the CPU backend runs (reduce_cases.hpp), with the CPU's
// bits where the contract says so (the documented order), skipped with the reason without a GPU.
#include <gtest/gtest.h>

#include "kernels/reduce_cases.hpp"

namespace tenax {
namespace {

using reduce_cases::ReduceKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, ReduceKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

}  // namespace
}  // namespace tenax
