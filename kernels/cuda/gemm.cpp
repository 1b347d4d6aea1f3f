// CUDA GEMM through cuBLAS, and the cuBLAS glue: one handle per device and stream, status codes
// translated into tenax fault classes.
//
// cuBLAS is column-major; a row-major [r, c] buffer is the column-major [c, r] matrix of its
// transpose. So row-major C = op(A) op(B) is computed as column-major C^T = op(B)^T op(A)^T:
// the operands swap places and keep their transpose flags, with m and n exchanged.
#include <cuda_runtime.h>
#include <library_types.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "cublas_library.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels {
namespace {

std::string status_text(cublasStatus_t status) {
  const cuda::CublasApi& api = cuda::cublas_api();
  return std::string(api.status_name(status)) + " (" + api.status_string(status) + ")";
}

// Throws the tenax error of a failed cuBLAS call, classified by status code.
void check_cublas(cublasStatus_t status, const char* call, tenax::cuda::Context& context) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const std::string cause = std::string(call) + " failed with " + status_text(status) + " on " +
                            to_string(context.device());
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      throw OutOfMemoryError(cause,
                             "free device memory (empty the pool cache, lower the batch size) "
                             "or set TENAX_MEMORY_LIMIT below the memory other processes use");
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_LICENSE_ERROR:
      throw EnvironmentError(cause,
                             "run `tenax doctor`: the driver, the cuBLAS library or the device "
                             "does not support this operation (check versions and compute "
                             "capability)");
    case CUBLAS_STATUS_INVALID_VALUE:
      throw UsageError(cause,
                       "check the GEMM arguments (sizes, leading dimensions, dtypes); this is a "
                       "bug in the caller or in tenax if the op's own checks passed");
    default:
      // EXECUTION_FAILED, INTERNAL_ERROR, MAPPING_ERROR: the kernel failed on the device. A
      // sticky CUDA error behind it poisons the context (context.check throws for it first).
      context.check(static_cast<int>(cudaGetLastError()), call);
      throw DeviceFaultError(cause,
                             "the device failed while running cuBLAS: exit with the restart "
                             "code and resume from the last checkpoint (on another device if "
                             "this one keeps failing)");
  }
}

// Workspace cuBLAS may use for one call; 32 MiB is what NVIDIA recommends on Hopper and newer,
// 4 MiB before.
std::size_t workspace_bytes(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    major = 0;
  }
  return (major >= 9 ? std::size_t{32} : std::size_t{4}) << 20;
}

// The cuBLAS handle of the context's device, bound to the context's stream, with a workspace
// from the device's memory resource. Created on first use and kept until the process ends
// (destroying handles during static destruction can run after the CUDA runtime shut down).
cublasHandle_t handle_for(tenax::cuda::Context& context) {
  static std::mutex mutex;
  static auto* handles = new std::map<std::pair<int, CUstream_st*>, cublasHandle_t>();
  const Device device = context.device();
  CUstream_st* stream = context.stream().handle;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device.index, stream);
  if (const auto found = handles->find(key); found != handles->end()) return found->second;

  context.activate();
  const cuda::CublasApi& api = cuda::cublas_api();
  cublasHandle_t handle = nullptr;
  check_cublas(api.create(&handle), "cublasCreate", context);
  try {
    check_cublas(api.set_stream(handle, stream), "cublasSetStream", context);
    // f16/bf16 results must come from f32 sums rounded once, never from split-K partial sums
    // reduced in the output type.
    check_cublas(api.set_math_mode(handle, static_cast<cublasMath_t>(
                                               CUBLAS_DEFAULT_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                 "cublasSetMathMode", context);
    const std::size_t bytes = workspace_bytes(device.index);
    void* workspace = current_resource(device)->allocate(bytes, context.stream());
    check_cublas(api.set_workspace(handle, workspace, bytes), "cublasSetWorkspace", context);
  } catch (...) {
    api.destroy(handle);
    throw;
  }
  handles->emplace(key, handle);
  return handle;
}

int to_int(std::int64_t value, const char* what) {
  TENAX_EXPECTS(value <= INT_MAX, UsageError,
                std::string("gemm: ") + what + " = " + std::to_string(value) +
                    " exceeds the 32-bit sizes of the cuBLAS API",
                "split the product into blocks smaller than 2^31 along that dimension");
  return static_cast<int>(value);
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return CUDA_R_64F;
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    default:
      return CUDA_R_16BF;
  }
}

}  // namespace

namespace cuda {

void gemm(const GemmArgs& g) {
  tenax::cuda::Context& context = tenax::cuda::context(g.c.device());
  context.activate();
  cublasHandle_t handle = handle_for(context);
  const int m = to_int(g.m, "m");
  const int n = to_int(g.n, "n");
  const int k = to_int(g.k, "k");
  // Leading dimensions are the stored row lengths; cuBLAS wants them >= 1 even when empty.
  const int lda = std::max(1, to_int(g.a.shape()[1], "a's row length"));
  const int ldb = std::max(1, to_int(g.b.shape()[1], "b's row length"));
  const int ldc = std::max(1, n);
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  switch (g.a.dtype()) {
    case DType::f64: {
      const double alpha = g.alpha;
      const double beta = g.beta;
      check_cublas(cuda::cublas_api().dgemm(
                       handle, op_b, op_a, n, m, k, &alpha, g.b.data_as<const double>(), ldb,
                       g.a.data_as<const double>(), lda, &beta, g.c.data_as<double>(), ldc),
                   "cublasDgemm", context);
      return;
    }
    case DType::f32: {
      const auto alpha = static_cast<float>(g.alpha);
      const auto beta = static_cast<float>(g.beta);
      check_cublas(cuda::cublas_api().sgemm(
                       handle, op_b, op_a, n, m, k, &alpha, g.b.data_as<const float>(), ldb,
                       g.a.data_as<const float>(), lda, &beta, g.c.data_as<float>(), ldc),
                   "cublasSgemm", context);
      return;
    }
    default: {
      // f16/bf16 inputs, f32 compute and scalars, output in the input dtype or f32.
      const auto alpha = static_cast<float>(g.alpha);
      const auto beta = static_cast<float>(g.beta);
      const cudaDataType_t in = cuda_type(g.a.dtype());
      check_cublas(
          cuda::cublas_api().gemm_ex(handle, op_b, op_a, n, m, k, &alpha, g.b.data(), in, ldb,
                                     g.a.data(), in, lda, &beta, g.c.data(), cuda_type(g.c.dtype()),
                                     ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx", context);
      return;
    }
  }
}

}  // namespace cuda

}  // namespace tenax::kernels
