#include "tenax/io/async_checkpointer.hpp"

#include "tenax/core/copy.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/profiler.hpp"

namespace tenax::io {

AsyncCheckpointer::AsyncCheckpointer(CheckpointStore& store) : store_(store) {}

AsyncCheckpointer::~AsyncCheckpointer() {
  if (worker_.joinable()) worker_.join();
}

StateDict AsyncCheckpointer::snapshot(const StateDict& state) {
  StateDict copy;
  for (const auto& [name, value] : state.entries()) {
    const auto* tensor = std::get_if<Tensor>(&value);
    if (tensor == nullptr || !tensor->defined()) {
      copy.set(name, value);  // scalars and strings are values; undefined tensors fail later
      continue;
    }
    // Pinned memory lets the device copy run at full link speed; the pool keeps the buffers of
    // one snapshot for the next, and is only created when a CUDA tensor needs it.
    std::shared_ptr<MemoryResource> resource =
        tensor->device().is_cuda() ? pinned_host_pool() : current_resource(Device::cpu());
    Tensor host = Tensor::empty(tensor->shape(), tensor->dtype(), std::move(resource));
    copy_bytes(host.data(), Device::cpu(), tensor->data(), tensor->device(), tensor->nbytes());
    copy.set(name, std::move(host));
  }
  return copy;
}

void AsyncCheckpointer::join_and_rethrow() {
  if (worker_.joinable()) worker_.join();
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void AsyncCheckpointer::start(std::int64_t step, const StateDict& state,
                              const FileMetadata& metadata) {
  StateDict copy;
  {
    const profiling::Span span("checkpoint.snapshot", step);
    copy = snapshot(state);
  }
  {
    std::lock_guard lock(mutex_);
    running_ = true;
  }
  worker_ = std::thread([this, step, copy = std::move(copy), metadata]() mutable {
    std::exception_ptr error;
    try {
      // The store's phases (and kill@checkpoint faults) fire here, on the writer thread, while
      // the step loop goes on: the async write's phases are the commit protocol's.
      const profiling::Span span("checkpoint.write_async", step);
      store_.write(step, copy, metadata);
    } catch (...) {
      error = std::current_exception();
    }
    copy = StateDict();  // give the host buffers back before reporting completion
    std::lock_guard lock(mutex_);
    error_ = error;
    running_ = false;
  });
}

void AsyncCheckpointer::save(std::int64_t step, const StateDict& state,
                             const FileMetadata& metadata) {
  join_and_rethrow();
  start(step, state, metadata);
}

bool AsyncCheckpointer::try_save(std::int64_t step, const StateDict& state,
                                 const FileMetadata& metadata) {
  if (busy()) return false;
  join_and_rethrow();
  start(step, state, metadata);
  return true;
}

void AsyncCheckpointer::wait() { join_and_rethrow(); }

bool AsyncCheckpointer::busy() const {
  std::lock_guard lock(mutex_);
  return running_;
}

}  // namespace tenax::io
