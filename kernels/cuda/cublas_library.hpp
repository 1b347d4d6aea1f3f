// cuBLAS loaded at run time (dlopen on the first GPU product), not linked: libcublasLt's static
// initialisers cost about a second and 220 MB of resident memory at every process start, which a
// CPU run, `--help`, each restart under the supervisor and every test program would pay; and a
// machine that has cuBLAS somewhere else (a Python wheel, a module) is served by
// TENAX_CUBLAS_LIBRARY or LD_LIBRARY_PATH without relinking.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace tenax::kernels::cuda {

// The entry points tenax calls, under their exported names (cublas_v2.h maps cublasCreate to
// cublasCreate_v2 and so on).
struct CublasApi {
  std::string path;  // the file loaded
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
};

// Loads cuBLAS once (thread-safe) and returns its entry points. Throws EnvironmentError, naming
// every place tried and the fix, when no usable library is found; later calls throw it again.
const CublasApi& cublas_api();

}  // namespace tenax::kernels::cuda
