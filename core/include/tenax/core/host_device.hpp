// TENAX_HD marks a function that is compiled for both the host and the device.
//
// Element-wise and stencil bodies are written once as TENAX_HD functions in headers that need no
// CUDA include; the CPU backend calls them from a loop and the CUDA backend from a grid, so the
// arithmetic the GPU runs is the arithmetic the CPU tests check.
#pragma once

#if defined(__CUDACC__)
#define TENAX_HD __host__ __device__
#define TENAX_DEVICE_CODE 1
#else
#define TENAX_HD
#define TENAX_DEVICE_CODE 0
#endif
