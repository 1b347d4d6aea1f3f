/// TENAX_HD marks a function that is compiled for both the host and the device.
/// @file
/// Element-wise and stencil bodies are written once as TENAX_HD functions in headers that need no
/// CUDA include; the CPU backend calls them from a loop and the CUDA backend from a grid, so the
/// arithmetic the GPU runs is the arithmetic the CPU tests check.
#pragma once

/// @def TENAX_HD
/// `__host__ __device__` when the file is compiled by nvcc (`__CUDACC__` defined), empty
/// otherwise. Put it before the return type of a function that host code and CUDA kernels both
/// call; such a function must use only what device code can (no exceptions, no std::string, no
/// std::array without extra nvcc flags).

/// @def TENAX_DEVICE_CODE
/// 1 when the file is compiled by nvcc (`__CUDACC__` defined), in its host pass as well as its
/// device pass; 0 for every other compiler. To tell the device pass apart, test `__CUDA_ARCH__`.

#if defined(__CUDACC__)
#define TENAX_HD __host__ __device__
#define TENAX_DEVICE_CODE 1
#else
#define TENAX_HD
#define TENAX_DEVICE_CODE 0
#endif
