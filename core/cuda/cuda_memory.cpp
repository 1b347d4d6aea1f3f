// CUDA memory: the virtual memory arena of a device, a plain device resource and a pinned host
// resource.
//
// The arena uses the driver's virtual memory management API. libcuda is not linked (a build must
// start on machines without a driver and report why CUDA is unusable), so the driver entry
// points are looked up through the runtime with cudaGetDriverEntryPointByVersion; <cuda.h> and
// <cudaTypedefs.h> are included only for types.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <map>
#include <string>

#include "cuda_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/cuda_memory.hpp"
#include "tenax/core/memory/host_virtual_memory.hpp"
#include "tenax/core/memory/memory_stats.hpp"

namespace tenax::cuda {
namespace {

// The ABI version of the entry points below (their _v10020 signatures).
constexpr unsigned int kDriverAbiVersion = 12000;

// Driver status -> the runtime status with the same meaning, for check(). The runtime mirrors
// the driver's numbering for the errors these calls return; the few that differ are mapped.
cudaError_t to_runtime_status(CUresult status) noexcept {
  switch (status) {
    case CUDA_SUCCESS:
      return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED:
      return cudaErrorInitializationError;
    case CUDA_ERROR_INVALID_CONTEXT:
      return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_NOT_SUPPORTED:
      return cudaErrorNotSupported;
    default:
      return static_cast<cudaError_t>(status);
  }
}

// Through the device's context, as the runtime's statuses are: a sticky error of a driver call
// (an ECC error while mapping, say) poisons the context like a kernel's would.
void check_driver(CUresult status, const char* call, Device device) {
  if (status == CUDA_SUCCESS) return;
  context(device).check(static_cast<int>(to_runtime_status(status)), call);
}

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  check(cudaGetDriverEntryPointByVersion(symbol, &fn, kDriverAbiVersion, cudaEnableDefault, &found),
        "cudaGetDriverEntryPointByVersion");
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    throw EnvironmentError(std::string("the NVIDIA driver does not provide ") + symbol +
                               " (CUDA virtual memory management)",
                           "upgrade the NVIDIA driver to one that supports CUDA 12 or newer");
  }
  return reinterpret_cast<Fn>(fn);
}

struct DriverApi {
  PFN_cuMemAddressReserve_v10020 address_reserve;
  PFN_cuMemAddressFree_v10020 address_free;
  PFN_cuMemCreate_v10020 create;
  PFN_cuMemRelease_v10020 release;
  PFN_cuMemMap_v10020 map;
  PFN_cuMemUnmap_v10020 unmap;
  PFN_cuMemSetAccess_v10020 set_access;
  PFN_cuMemGetAllocationGranularity_v10020 granularity;
};

const DriverApi& driver() {
  static const DriverApi api = [] {
    DriverApi a{};
    a.address_reserve = driver_entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
    a.address_free = driver_entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
    a.create = driver_entry<PFN_cuMemCreate_v10020>("cuMemCreate");
    a.release = driver_entry<PFN_cuMemRelease_v10020>("cuMemRelease");
    a.map = driver_entry<PFN_cuMemMap_v10020>("cuMemMap");
    a.unmap = driver_entry<PFN_cuMemUnmap_v10020>("cuMemUnmap");
    a.set_access = driver_entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
    a.granularity =
        driver_entry<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
    return a;
  }();
  return api;
}

// Makes `device` current and its primary context live (the driver calls below need one).
void activate(Device device) {
  require_device(device);
  check(cudaSetDevice(device.index), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(nullptr) (context initialisation)");
}

class CudaVirtualMemory final : public VirtualMemory {
 public:
  explicit CudaVirtualMemory(Device device) : device_(device), api_(driver()) {
    activate(device);
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device.index;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    std::size_t granularity = 0;
    check_driver(api_.granularity(&granularity, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                 "cuMemGetAllocationGranularity", device_);
    granularity_ = granularity;
    // The pool's default capacity is the memory free now, not the device's total: what other
    // processes, the CUDA context, cuBLAS and NCCL took is not ours to map (counted from the
    // total, their memory showed up only as failures to map).
    std::size_t total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes_, &total_bytes), "cudaMemGetInfo");
  }

 private:
  [[nodiscard]] Device do_device() const noexcept override { return device_; }
  [[nodiscard]] std::size_t do_granularity() const noexcept override { return granularity_; }
  [[nodiscard]] std::size_t do_physical_bytes() const override { return free_bytes_; }

  void* do_reserve(std::size_t bytes) override {
    CUdeviceptr base = 0;
    check_driver(api_.address_reserve(&base, bytes, granularity_, 0, 0), "cuMemAddressReserve",
                 device_);
    return reinterpret_cast<void*>(base);
  }

  void do_release(void* base, std::size_t bytes) noexcept override {
    api_.address_free(reinterpret_cast<CUdeviceptr>(base), bytes);
  }

  // One physical allocation per granule: cuMemUnmap can only unmap whole mappings, and the pool
  // unmaps single granules. The handle is released right after mapping; the mapping keeps the
  // memory alive until it is unmapped. Access is granted once for the whole run (one driver
  // call instead of one per 2 MiB granule).
  void do_map(void* addr, std::size_t bytes) override {
    const auto start = reinterpret_cast<CUdeviceptr>(addr);
    std::size_t done = 0;
    try {
      for (; done < bytes; done += granularity_) {
        CUmemGenericAllocationHandle handle{};
        check_driver(api_.create(&handle, granularity_, &prop_, 0), "cuMemCreate", device_);
        const CUresult mapped = api_.map(start + done, granularity_, 0, handle, 0);
        api_.release(handle);
        check_driver(mapped, "cuMemMap", device_);
      }
      check_driver(api_.set_access(start, bytes, &access_, 1), "cuMemSetAccess", device_);
    } catch (...) {
      // A failed call maps nothing: give back the granules mapped so far.
      for (std::size_t off = 0; off < done; off += granularity_) {
        api_.unmap(start + off, granularity_);
      }
      throw;
    }
  }

  void do_unmap(void* addr, std::size_t bytes) noexcept override {
    const auto start = reinterpret_cast<CUdeviceptr>(addr);
    for (std::size_t off = 0; off < bytes; off += granularity_) {
      api_.unmap(start + off, granularity_);
    }
  }

  void do_synchronize() noexcept override {
    int current = 0;
    ignore(cudaGetDevice(&current));
    if (current != device_.index) ignore(cudaSetDevice(device_.index));
    ignore(cudaDeviceSynchronize());
    if (current != device_.index) ignore(cudaSetDevice(current));
  }

  Device device_;
  const DriverApi& api_;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  std::size_t granularity_ = 0;
  std::size_t free_bytes_ = 0;
};

class CudaDeviceResource final : public MemoryResource {
 public:
  explicit CudaDeviceResource(Device device) : device_(device) { activate(device); }

 private:
  // A null stream means "the device's own": the context's stream, on which tenax's kernels run.
  // (The legacy default stream does not order with a non-blocking context stream, so a block
  // freed on it could be handed out again while a kernel still uses it.)
  [[nodiscard]] cudaStream_t stream_of(StreamRef stream) const {
    return stream.handle != nullptr ? static_cast<cudaStream_t>(stream.handle)
                                    : static_cast<cudaStream_t>(context(device_).stream().handle);
  }
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    check(cudaSetDevice(device_.index), "cudaSetDevice");
    void* ptr = nullptr;
    check(cudaMallocAsync(&ptr, bytes, stream_of(stream)), "cudaMallocAsync");
    return ptr;
  }
  void do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream) noexcept override {
    ignore(cudaSetDevice(device_.index));
    try {
      ignore(cudaFreeAsync(ptr, stream_of(stream)));
    } catch (...) {
      ignore(cudaFree(ptr));  // no context to order with: free synchronously
    }
  }
  [[nodiscard]] Device do_device() const noexcept override { return device_; }

  Device device_;
};

class PinnedHostResource final : public MemoryResource {
 private:
  void* do_allocate(std::size_t bytes, StreamRef /*stream*/) override {
    void* ptr = nullptr;
    check(cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    return ptr;
  }
  void do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef /*stream*/) noexcept override {
    ignore(cudaFreeHost(ptr));
  }
  [[nodiscard]] Device do_device() const noexcept override { return Device::cpu(); }
};

// Host pages that the pool maps are page-locked and registered with CUDA as they are mapped,
// so a pool of pinned buffers keeps the merge-on-free arena of the host pool. CUDA registers
// and unregisters whole ranges only, and a copy from registered memory must lie inside one
// registration (cudaMemcpyAsync fails with cudaErrorInvalidValue on a block that spans two,
// as the first run on a GPU showed). So each registration covers one whole run of mapped pages:
// a range mapped next to a registered one is registered together with it, and a partly
// unmapped registration is unregistered and its remaining pieces registered again.
class PinnedHostVirtualMemory final : public VirtualMemory {
 private:
  [[nodiscard]] Device do_device() const noexcept override { return Device::cpu(); }
  [[nodiscard]] std::size_t do_granularity() const noexcept override { return host_.granularity(); }
  [[nodiscard]] std::size_t do_physical_bytes() const override { return host_.physical_bytes(); }
  void* do_reserve(std::size_t bytes) override { return host_.reserve(bytes); }
  void do_release(void* base, std::size_t bytes) noexcept override { host_.release(base, bytes); }

  void do_map(void* addr, std::size_t bytes) override {
    host_.map(addr, bytes);
    char* begin = static_cast<char*>(addr);
    char* end = begin + bytes;
    // Registrations that end where this range begins, or begin where it ends, join it.
    auto after = registered_.find(end);
    auto before = registered_.lower_bound(begin);
    if (before != registered_.begin()) {
      --before;
      if (before->first + before->second != begin) before = registered_.end();
    } else {
      before = registered_.end();
    }
    char* const joined_begin = before != registered_.end() ? before->first : begin;
    char* const joined_end = after != registered_.end() ? after->first + after->second : end;
    if (before != registered_.end()) ignore(cudaHostUnregister(before->first));
    if (after != registered_.end()) ignore(cudaHostUnregister(after->first));
    const cudaError_t status = cudaHostRegister(
        joined_begin, static_cast<std::size_t>(joined_end - joined_begin), cudaHostRegisterDefault);
    if (status == cudaSuccess) {
      if (before != registered_.end()) registered_.erase(before);
      if (after != registered_.end()) registered_.erase(after);
      registered_.emplace(joined_begin, static_cast<std::size_t>(joined_end - joined_begin));
      return;
    }
    // Put the neighbours back as they were, and give the new pages back.
    if (before != registered_.end()) reregister_or_forget(before);
    if (after != registered_.end()) reregister_or_forget(after);
    host_.unmap(addr, bytes);
    check(status, "cudaHostRegister");
  }

  void do_unmap(void* addr, std::size_t bytes) noexcept override {
    char* const begin = static_cast<char*>(addr);
    char* const end = begin + bytes;
    // The first registration that can overlap [begin, end) starts at or before begin.
    auto it = registered_.upper_bound(begin);
    if (it != registered_.begin()) --it;
    while (it != registered_.end() && it->first < end) {
      char* const start = it->first;
      char* const stop = start + it->second;
      if (stop <= begin) {
        ++it;
        continue;
      }
      ignore(cudaHostUnregister(start));
      it = registered_.erase(it);
      // Pieces of the registration outside the unmapped range stay mapped: register them again.
      // Page-locking memory that was locked a moment ago does not fail short of a driver fault,
      // which the next CUDA call reports.
      if (start < begin) reregister(start, static_cast<std::size_t>(begin - start));
      if (stop > end) reregister(end, static_cast<std::size_t>(stop - end));
    }
    host_.unmap(addr, bytes);
  }

  void reregister_or_forget(std::map<char*, std::size_t>::iterator it) noexcept {
    const cudaError_t status = cudaHostRegister(it->first, it->second, cudaHostRegisterDefault);
    if (status != cudaSuccess) {
      ignore(status);
      registered_.erase(it);
    }
  }

  void reregister(char* start, std::size_t bytes) noexcept {
    const cudaError_t status = cudaHostRegister(start, bytes, cudaHostRegisterDefault);
    if (status == cudaSuccess) {
      registered_.emplace(start, bytes);
    } else {
      ignore(status);
    }
  }

  HostVirtualMemory host_;
  std::map<char*, std::size_t> registered_;  // start -> bytes of each cudaHostRegister
};

}  // namespace

std::shared_ptr<VirtualMemory> make_virtual_memory(Device device) {
  return std::make_shared<CudaVirtualMemory>(device);
}

bool supports_virtual_memory(Device device) {
  activate(device);
  try {
    (void)driver();
  } catch (const EnvironmentError&) {
    return false;  // a driver without the entry points has no virtual memory management
  }
  // The attribute has no runtime-API name: ask the driver.
  static const auto get_device = driver_entry<PFN_cuDeviceGet_v2000>("cuDeviceGet");
  static const auto get_attribute =
      driver_entry<PFN_cuDeviceGetAttribute_v2000>("cuDeviceGetAttribute");
  CUdevice handle = 0;
  check_driver(get_device(&handle, device.index), "cuDeviceGet", device);
  int supported = 0;
  check_driver(
      get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, handle),
      "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)", device);
  return supported != 0;
}

std::shared_ptr<MemoryResource> make_device_resource(Device device) {
  return std::make_shared<CudaDeviceResource>(device);
}

std::shared_ptr<VirtualMemory> make_pinned_virtual_memory() {
  const Availability& a = availability();
  if (!a.usable) throw EnvironmentError("CUDA is not usable: " + a.reason, a.fix);
  return std::make_shared<PinnedHostVirtualMemory>();
}

std::shared_ptr<MemoryResource> make_pinned_host_resource() {
  const Availability& a = availability();
  if (!a.usable) throw EnvironmentError("CUDA is not usable: " + a.reason, a.fix);
  return std::make_shared<PinnedHostResource>();
}

}  // namespace tenax::cuda
