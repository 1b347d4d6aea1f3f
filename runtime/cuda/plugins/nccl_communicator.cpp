// The NCCL communicator: device tensors through NCCL on the device's stream; the agreement, host
// bytes and host tensors through the MPI communicator it was bootstrapped with. The NCCL
// communicator is created non-blocking, and every operation is polled (ncclCommGetAsyncError,
// then the stream) under the deadline; on an error or a timeout it is aborted with
// ncclCommAbort and the call is reported as a CommFaultError, so a hung peer never hangs this
// rank (NCCL's own guidance: assume nothing about operations in flight after an error).
#include <cuda_runtime.h>
#include <nccl.h>

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "comm_backends.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/copy.hpp"
#include "tenax/core/error.hpp"

namespace tenax::runtime::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Every dtype has its NCCL twin (no default: a new dtype fails to compile here until mapped).
ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return ncclFloat64;
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i64:
      return ncclInt64;
    case DType::i32:
      return ncclInt32;
    case DType::u8:
      return ncclUint8;
  }
  throw UsageError("NCCL has no type for dtype code " + std::to_string(static_cast<int>(dtype)),
                   "pass a tensor of a dtype tenax defines");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
  }
  return ncclSum;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<Communicator> host, CommOptions options)
      : Communicator(options), host_(std::move(host)) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      throw EnvironmentError(
          "--comm nccl on rank " + std::to_string(host_->rank()) + ", which sees no CUDA device",
          "run where every rank has a GPU (`tenax doctor` tells why none is "
          "usable), or use --comm mpi for CPU tensors");
    }
    const int local = host_->local_rank();
    if (local >= devices) {
      throw EnvironmentError(
          "rank " + std::to_string(host_->rank()) + " is local rank " + std::to_string(local) +
              " of its host, which has " + std::to_string(devices) + " visible GPU(s)",
          "start at most one rank per GPU on each host (mpirun -np / --npernode, srun "
          "--ntasks-per-node), or make more GPUs visible (CUDA_VISIBLE_DEVICES)");
    }
    device_ = Device::cuda(local);
    tenax::cuda::context(device_).activate();
    // Two ranks on one GPU would share its memory and serialise its work: refuse.
    char bus_id[64] = {};
    // An unknown bus id (empty) only weakens the check below; clear the status it left.
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), local) != cudaSuccess) {
      (void)cudaGetLastError();
    }
    std::vector<char> ids(sizeof(bus_id) * static_cast<std::size_t>(host_->size()));
    host_->all_gather_bytes(std::as_bytes(std::span(bus_id)),
                            std::as_writable_bytes(std::span(ids.data(), ids.size())));
    char host_name[256] = {};
    gethostname(host_name, sizeof(host_name) - 1);
    std::vector<char> hosts(sizeof(host_name) * static_cast<std::size_t>(host_->size()));
    host_->all_gather_bytes(std::as_bytes(std::span(host_name)),
                            std::as_writable_bytes(std::span(hosts.data(), hosts.size())));
    for (int r = 0; r < host_->size(); ++r) {
      if (r == host_->rank()) continue;
      const char* other_id = ids.data() + sizeof(bus_id) * static_cast<std::size_t>(r);
      const char* other_host = hosts.data() + sizeof(host_name) * static_cast<std::size_t>(r);
      if (std::strncmp(other_id, bus_id, sizeof(bus_id)) == 0 &&
          std::strncmp(other_host, host_name, sizeof(host_name)) == 0) {
        throw UsageError("ranks " + std::to_string(host_->rank()) + " and " + std::to_string(r) +
                             " both use the GPU at PCI " + bus_id + " on " + host_name,
                         "give each rank its own GPU: the ranks' CUDA_VISIBLE_DEVICES must not "
                         "overlap (or leave it unset and start one rank per GPU)");
      }
    }
    ncclUniqueId id{};
    if (host_->rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::vector<ncclUniqueId> all(static_cast<std::size_t>(host_->size()));
    host_->all_gather_bytes(std::as_bytes(std::span(&id, 1)),
                            std::as_writable_bytes(std::span(all.data(), all.size())));
    id = all[0];
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    nccl_check(ncclCommInitRankConfig(&comm_, host_->size(), id, host_->rank(), &config),
               "ncclCommInitRankConfig");
    wait_until_ready("ncclCommInitRankConfig", nullptr);
  }

  // A non-blocking communicator is finalized first (its queued operations finish, polled under
  // the deadline), then destroyed; an aborted one, or one whose finalize fails or does not end
  // in time, is aborted.
  ~NcclCommunicator() override {
    if (comm_ == nullptr) return;
    if (aborted()) {
      ncclCommAbort(comm_);
      return;
    }
    ncclResult_t state = ncclCommFinalize(comm_);
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options().timeout_seconds));
    while (state == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclSystemError;
    }
    if (state == ncclSuccess) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }

  [[nodiscard]] int rank() const noexcept override { return host_->rank(); }
  [[nodiscard]] int size() const noexcept override { return host_->size(); }
  [[nodiscard]] int local_rank() const noexcept override { return host_->local_rank(); }
  [[nodiscard]] std::string_view name() const noexcept override { return "nccl"; }

 private:
  // Every tensor comes here unstaged: device memory goes to NCCL, host memory to the MPI
  // communicator (told apart by cudaPointerGetAttributes).
  [[nodiscard]] bool accepts(Device) const noexcept override { return true; }

  [[nodiscard]] static bool on_device(const void* pointer) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  }

  void nccl_check(ncclResult_t result, const std::string& what) {
    if (result == ncclSuccess || result == ncclInProgress) return;
    const std::string reason = ncclGetErrorString(result);
    const char* last = comm_ != nullptr ? ncclGetLastError(comm_) : nullptr;
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    throw CommFaultError(
        what + " failed on rank " + std::to_string(host_->rank()) + ": " + reason +
            (last != nullptr && *last ? std::string(" (") + last + ")" : std::string()),
        "the job exits with the restart code (75) and restarts from its "
        "checkpoint; NCCL_DEBUG=WARN tells more");
  }

  // Polls the communicator's asynchronous state, then the stream, until both are done or the
  // deadline passes.
  void wait_until_ready(const std::string& what, cudaStream_t stream) {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options().timeout_seconds));
    const auto start = Clock::now();
    while (true) {
      ncclResult_t state = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm_, &state), what);
      nccl_check(state, what);
      if (state == ncclSuccess) {
        const cudaError_t query = stream != nullptr ? cudaStreamQuery(stream) : cudaSuccess;
        if (query == cudaSuccess) return;
        if (query != cudaErrorNotReady) {
          tenax::cuda::context(device_).check(static_cast<int>(query), what.c_str());
        }
      }
      if (Clock::now() >= deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        throw CommFaultError(what + " timed out on rank " + std::to_string(host_->rank()) +
                                 " after " + std::to_string(options().timeout_seconds) + " s",
                             "a rank is hung or dead: the job exits with the restart code (75) "
                             "and restarts from its checkpoint; raise --comm-timeout if steps "
                             "are legitimately this slow");
      }
      if (Clock::now() - start > std::chrono::microseconds(50)) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  [[nodiscard]] cudaStream_t stream() const {
    return reinterpret_cast<cudaStream_t>(tenax::cuda::context(device_).stream().handle);
  }

  void do_all_reduce(const Call& call, void* data, std::int64_t count, DType dtype,
                     ReduceOp op) override {
    if (!on_device(data)) {
      route_all_reduce(*host_, call, data, count, dtype, op);
      return;
    }
    nccl_check(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(dtype),
                             nccl_op(op), comm_, stream()),
               describe(call));
    wait_until_ready(describe(call), stream());
  }

  void do_all_gather(const Call& call, const void* send, std::size_t bytes, void* out) override {
    if (!on_device(out)) {
      route_all_gather(*host_, call, send, bytes, out);
      return;
    }
    nccl_check(ncclAllGather(send, out, bytes, ncclUint8, comm_, stream()), describe(call));
    wait_until_ready(describe(call), stream());
  }

  void do_broadcast(const Call& call, void* data, std::size_t bytes, int root) override {
    if (!on_device(data)) {
      route_broadcast(*host_, call, data, bytes, root);
      return;
    }
    nccl_check(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream()), describe(call));
    wait_until_ready(describe(call), stream());
  }

  // Point-to-point messages go through the host communicator, staged through host memory. The
  // Communicator contract promises a buffered send matched by tag; ncclSend is a rendezvous
  // matched by order, so two ranks that both send first would wait on each other until the
  // deadline. Halo rows are small next to the collectives NCCL carries.
  void do_send(const Call& call, const void* data, std::size_t bytes, int peer, int tag) override {
    if (!on_device(data)) {
      route_send(*host_, call, data, bytes, peer, tag);
      return;
    }
    std::vector<std::byte> staged(bytes);
    copy_bytes(staged.data(), Device::cpu(), data, device_, bytes);
    route_send(*host_, call, staged.data(), bytes, peer, tag);
  }

  void do_receive(const Call& call, void* data, std::size_t bytes, int peer, int tag) override {
    if (!on_device(data)) {
      route_receive(*host_, call, data, bytes, peer, tag);
      return;
    }
    std::vector<std::byte> staged(bytes);
    route_receive(*host_, call, staged.data(), bytes, peer, tag);
    copy_bytes(data, device_, staged.data(), Device::cpu(), bytes);
  }

  void do_barrier(const Call& call) override { route_barrier(*host_, call); }

  void do_abort(std::string_view reason) noexcept override {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    host_->abort(reason);
  }

  std::shared_ptr<Communicator> host_;
  Device device_ = Device::cpu();
  ncclComm_t comm_ = nullptr;
};

}  // namespace

}  // namespace tenax::runtime::detail

// The plugin's entry point (runtime/src/comm_plugins.cpp loads it).
extern "C" __attribute__((visibility("default"))) void tenax_comm_nccl_make(
    std::shared_ptr<tenax::runtime::Communicator> host, const tenax::runtime::CommOptions* options,
    std::shared_ptr<tenax::runtime::Communicator>* made) {
  *made = std::make_shared<tenax::runtime::detail::NcclCommunicator>(std::move(host), *options);
}
