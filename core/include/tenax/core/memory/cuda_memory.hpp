/// CUDA memory as the rest of tenax sees it, without CUDA headers. Implemented in @file
/// core/cuda/cuda_memory.cpp; in a build without CUDA every function throws NotCompiledError.
/// Each function first checks that the device is usable (EnvironmentError with the reason if not).
#pragma once

#include <memory>

#include "tenax/core/device.hpp"
#include "tenax/core/memory/virtual_memory.hpp"
#include "tenax/core/memory_resource.hpp"

namespace tenax::cuda {

/// The virtual memory arena of a CUDA device (cuMemAddressReserve, cuMemCreate, cuMemMap,
/// cuMemSetAccess; driver entry points found through the runtime, so libcuda is not linked).
/// physical_bytes() is the device memory free when it is made (what other processes, the
/// context, cuBLAS and NCCL hold is not the pool's to take).
[[nodiscard]] std::shared_ptr<VirtualMemory> make_virtual_memory(Device device);

/// Whether `device` supports virtual memory management (cuMemCreate/cuMemMap), which
/// make_virtual_memory needs; devices under some virtualisation layers and old drivers do not.
[[nodiscard]] bool supports_virtual_memory(Device device);

/// Device memory straight from the driver's stream-ordered allocator (cudaMallocAsync /
/// cudaFreeAsync on the given stream, or on the device context's stream for a null StreamRef); no
/// caching of its own.
[[nodiscard]] std::shared_ptr<MemoryResource> make_device_resource(Device device);

/// Page-locked host memory (cudaHostAlloc / cudaFreeHost) for fast, asynchronous copies; its
/// device() is the CPU. Every allocation is a driver call: for buffers taken again and again use
/// pinned_host_pool() (device_memory.hpp).
[[nodiscard]] std::shared_ptr<MemoryResource> make_pinned_host_resource();

/// A host virtual memory arena whose mapped pages are page-locked and registered with CUDA
/// (cudaHostRegister), for a PoolResource of pinned buffers; device() is the CPU.
[[nodiscard]] std::shared_ptr<VirtualMemory> make_pinned_virtual_memory();

}  // namespace tenax::cuda
