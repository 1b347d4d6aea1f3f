// Synchronous copies involving CUDA memory, ordered with the per-device context streams.
//
// Pageable host memory cannot be read by the copy engines directly; the driver stages it through
// its own small pinned buffers with a synchronisation per piece. Large pageable copies instead go
// through two pinned staging buffers per device: while the copy engine moves one chunk, the CPU
// fills (or drains) the other, so the transfer runs close to pinned bandwidth.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>

#include "cuda_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax::cuda {
namespace {

// Below this size the driver's own staging costs less than the chunk pipeline.
constexpr std::size_t kStagingThreshold = std::size_t{256} << 10;
constexpr std::size_t kStagingChunk = std::size_t{4} << 20;

// Two pinned buffers and the events that say when the copy engine is done with each. One per
// device, used under its mutex; kept until the process ends, like the context streams.
struct Staging {
  std::mutex mutex;
  std::array<void*, 2> buffers{};
  std::array<cudaEvent_t, 2> done{};
};

Staging& staging_for(Context& context) {
  static std::mutex registry_mutex;
  static std::map<int, Staging> registry;
  std::lock_guard lock(registry_mutex);
  Staging& staging = registry[context.device().index];
  if (staging.buffers[0] == nullptr) {
    // Built in locals and published whole: a failure part-way (the second buffer, an event)
    // frees what was made and leaves the registry's entry empty, to be built again next time,
    // never a half-initialised pair whose null buffer a later copy would use.
    std::array<void*, 2> buffers{};
    std::array<cudaEvent_t, 2> done{};
    const auto release = [&] {
      for (int i = 0; i < 2; ++i) {
        if (buffers[i] != nullptr) ignore(cudaFreeHost(buffers[i]));
        if (done[i] != nullptr) ignore(cudaEventDestroy(done[i]));
      }
    };
    try {
      for (int i = 0; i < 2; ++i) {
        context.check(
            static_cast<int>(cudaHostAlloc(&buffers[i], kStagingChunk, cudaHostAllocDefault)),
            "cudaHostAlloc (copy staging buffer)");
        context.check(static_cast<int>(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming)),
                      "cudaEventCreateWithFlags");
      }
    } catch (...) {
      release();
      throw;
    }
    staging.buffers = buffers;
    staging.done = done;
  }
  return staging;
}

bool is_pinned(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is pageable; clear the non-sticky status
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

cudaStream_t stream_of(Context& context) { return context.stream().handle; }

void staged_host_to_device(Context& context, void* dst, const void* src, std::size_t bytes) {
  Staging& staging = staging_for(context);
  std::lock_guard lock(staging.mutex);
  const auto* from = static_cast<const char*>(src);
  auto* to = static_cast<char*>(dst);
  for (std::size_t done = 0, chunk = 0; done < bytes; done += kStagingChunk, ++chunk) {
    const std::size_t n = std::min(kStagingChunk, bytes - done);
    const int slot = static_cast<int>(chunk % 2);
    // The copy that last read this buffer must finish before the CPU overwrites it.
    context.check(static_cast<int>(cudaEventSynchronize(staging.done[slot])),
                  "cudaEventSynchronize");
    std::memcpy(staging.buffers[slot], from + done, n);
    context.check(static_cast<int>(cudaMemcpyAsync(to + done, staging.buffers[slot], n,
                                                   cudaMemcpyHostToDevice, stream_of(context))),
                  "cudaMemcpyAsync (host to device)");
    context.check(static_cast<int>(cudaEventRecord(staging.done[slot], stream_of(context))),
                  "cudaEventRecord");
  }
  context.synchronize();
}

void staged_device_to_host(Context& context, void* dst, const void* src, std::size_t bytes) {
  Staging& staging = staging_for(context);
  std::lock_guard lock(staging.mutex);
  const auto* from = static_cast<const char*>(src);
  auto* to = static_cast<char*>(dst);
  const std::size_t chunks = (bytes + kStagingChunk - 1) / kStagingChunk;
  auto issue = [&](std::size_t chunk) {
    const std::size_t offset = chunk * kStagingChunk;
    const int slot = static_cast<int>(chunk % 2);
    context.check(static_cast<int>(cudaMemcpyAsync(staging.buffers[slot], from + offset,
                                                   std::min(kStagingChunk, bytes - offset),
                                                   cudaMemcpyDeviceToHost, stream_of(context))),
                  "cudaMemcpyAsync (device to host)");
    context.check(static_cast<int>(cudaEventRecord(staging.done[slot], stream_of(context))),
                  "cudaEventRecord");
  };
  // Keep one chunk in flight ahead of the one being drained.
  issue(0);
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const int slot = static_cast<int>(chunk % 2);
    context.check(static_cast<int>(cudaEventSynchronize(staging.done[slot])),
                  "cudaEventSynchronize");
    if (chunk + 1 < chunks) issue(chunk + 1);
    const std::size_t offset = chunk * kStagingChunk;
    std::memcpy(to + offset, staging.buffers[slot], std::min(kStagingChunk, bytes - offset));
  }
}

}  // namespace

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cuda() && src_device.is_cuda()) {
    Context& target = context(dst_device);
    if (dst_device == src_device) {
      // One device, one stream: the copy is ordered after the work that wrote src and before
      // the work that reads dst, and the pool reuses freed blocks in stream order; enqueue it
      // and return.
      target.activate();
      target.check(static_cast<int>(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                                    stream_of(target))),
                   "cudaMemcpyAsync");
      return;
    }
    Context& source = context(src_device);
    source.synchronize();  // the bytes must be final before another stream reads them
    target.activate();
    target.check(static_cast<int>(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index,
                                                      bytes, stream_of(target))),
                 "cudaMemcpyPeerAsync");
    target.synchronize();
    return;
  }

  const bool to_device = dst_device.is_cuda();
  Context& device_context = context(to_device ? dst_device : src_device);
  device_context.activate();
  const void* host = to_device ? src : dst;
  if (bytes < kStagingThreshold || is_pinned(host)) {
    device_context.check(
        static_cast<int>(cudaMemcpyAsync(
            dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
            stream_of(device_context))),
        "cudaMemcpyAsync");
    device_context.synchronize();
  } else if (to_device) {
    staged_host_to_device(device_context, dst, src, bytes);
  } else {
    staged_device_to_host(device_context, dst, src, bytes);
  }
}

}  // namespace tenax::cuda
