#include "hdf5_support.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace tenax::io::detail {
namespace {

std::mutex& hdf5_mutex() {
  static std::mutex mutex;
  return mutex;
}

// HDF5's description of a failed system call is a multi-line dump, cut off by HDF5 at a fixed
// length ("file write failed: time = ..., filename = '...', file descriptor = 5, errno = 28,
// error message = 'No space left on device', ..., bytes actually written =
// 18446744073709551615, ..."): keep what failed and the system's reason, on one line.
std::string tidy(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  const std::size_t dump = message.find(": time = ");
  if (dump == std::string::npos) return message;
  std::string tidied = message.substr(0, dump);
  const std::string reason_key = "error message = '";
  const std::size_t reason = message.find(reason_key, dump);
  if (reason != std::string::npos) {
    const std::size_t begin = reason + reason_key.size();
    const std::size_t end = message.find('\'', begin);
    if (end != std::string::npos) tidied += ": " + message.substr(begin, end - begin);
  }
  return tidied;
}

herr_t collect_error(unsigned, const H5E_error2_t* error, void* data) {
  auto* messages = static_cast<std::vector<std::string>*>(data);
  if (error != nullptr && error->desc != nullptr && error->desc[0] != '\0') {
    messages->push_back(tidy(error->desc));
  }
  return 0;
}

Handle make_f16_type() {
  Handle type(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  if (!type.valid() || H5Tset_fields(type.get(), 15, 10, 5, 0, 10) < 0 ||
      H5Tset_size(type.get(), 2) < 0 || H5Tset_ebias(type.get(), 15) < 0) {
    return {};
  }
  return type;
}

}  // namespace

Hdf5Lock::Hdf5Lock() : lock_(hdf5_mutex()) {
  // No clean-up of HDF5 at exit. A file whose close fails part-way (its last flush cannot
  // truncate or write: a full disk, RLIMIT_FSIZE, a device) is left half-destroyed by HDF5 1.10,
  // and H5_term_library, run by atexit, then dereferences it: a SIGSEGV at exit after the error
  // was reported. tenax closes every identifier it opens (Handle), so the clean-up has nothing to
  // flush. Effective only before HDF5's first call, which is this one: every HDF5 call of tenax
  // is made under this lock.
  static const bool no_atexit = [] {
    (void)H5dont_atexit();
    return true;
  }();
  (void)no_atexit;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Handle file_type_of(DType dtype) {
  hid_t predefined = H5I_INVALID_HID;
  switch (dtype) {
    case DType::f64:
      predefined = H5T_IEEE_F64LE;
      break;
    case DType::f32:
      predefined = H5T_IEEE_F32LE;
      break;
    case DType::f16:
      return make_f16_type();
    case DType::bf16:
      predefined = H5T_STD_U16LE;
      break;
    case DType::i64:
      predefined = H5T_STD_I64LE;
      break;
    case DType::i32:
      predefined = H5T_STD_I32LE;
      break;
    case DType::u8:
      predefined = H5T_STD_U8LE;
      break;
  }
  return Handle(H5Tcopy(predefined), H5Tclose);
}

Handle string_type(std::size_t size) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (type.valid() &&
      (H5Tset_size(type.get(), size) < 0 || H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0)) {
    return {};
  }
  return type;
}

std::string take_hdf5_error() {
  std::vector<std::string> messages;
  // Upward walks from the deepest frame, where the real reason (a bad checksum, a short read)
  // is; the outer frames only say which API call failed.
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  std::string text;
  for (std::size_t i = 0; i < messages.size() && i < 2; ++i) {
    if (!text.empty()) text += "; ";
    text += messages[i];
  }
  return text;
}

}  // namespace tenax::io::detail
