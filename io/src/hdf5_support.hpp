// Private to io/src: the pieces every HDF5-using source shares. Never include from a public
// header (HDF5 stays an implementation detail of tenax_io).
#pragma once

#include <hdf5.h>

#include <mutex>
#include <string>
#include <utility>

#include "tenax/core/dtype.hpp"

namespace tenax::io::detail {

// Holds the process-wide HDF5 mutex for its lifetime. HDF5 builds without the thread-safe option
// corrupt their global state when called from two threads, and the checkpoint writer runs on a
// background thread, so every HDF5 call of the process goes through this lock. It also turns off
// HDF5's printing of its error stack to stderr for the calling thread (the setting is per thread
// in thread-safe builds): failures become IoErrors carrying the stack's innermost messages.
class Hdf5Lock {
 public:
  Hdf5Lock();
  Hdf5Lock(const Hdf5Lock&) = delete;
  Hdf5Lock& operator=(const Hdf5Lock&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
};

// An HDF5 identifier closed by the matching H5?close when it goes out of scope.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  ~Handle() { reset(); }

  [[nodiscard]] hid_t get() const noexcept { return id_; }
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }
  // Closes now and reports whether HDF5 accepted the close (a file close flushes, so it can
  // fail on a full disk).
  bool close() noexcept {
    const bool ok = id_ < 0 || closer_(id_) >= 0;
    id_ = H5I_INVALID_HID;
    return ok;
  }

 private:
  void reset() noexcept {
    if (id_ >= 0) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// The file (and memory) type of a dtype: little-endian IEEE floats and two's complement
// integers; f16 is IEEE binary16 built the way h5py builds its float16 (so h5py maps it to
// numpy.float16); bf16 is uint16. Memory and file types are the same, so HDF5 copies bytes
// without conversion and a checksum covers exactly what is stored. Invalid handle on failure.
[[nodiscard]] Handle file_type_of(DType dtype);
// A fixed-length, null-padded C string type of `size` bytes (>= 1). Invalid handle on failure.
[[nodiscard]] Handle string_type(std::size_t size);

// The innermost messages of the calling thread's HDF5 error stack ("" when empty); clears it.
[[nodiscard]] std::string take_hdf5_error();

}  // namespace tenax::io::detail
