// Run-time loading of cuBLAS (cublas_library.hpp).
//
// Search order: TENAX_CUBLAS_LIBRARY (a file), then the library's versioned name through the
// dynamic loader (LD_LIBRARY_PATH, the loader cache), then the lib folder of the CUDA toolkit
// tenax was built with. The major version must be the one of the headers: the entry points'
// types are those headers'.
#include "cublas_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/cublas_library.hpp"

#ifndef TENAX_CUDA_LIBRARY_DIR
#define TENAX_CUDA_LIBRARY_DIR ""
#endif

namespace tenax::kernels::cuda {
namespace {

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* file = std::getenv("TENAX_CUBLAS_LIBRARY"); file != nullptr && *file != '\0') {
    out.emplace_back(file);
    return out;  // an explicit choice is not second-guessed
  }
  out.push_back(kSoname);
  if (const std::string dir = TENAX_CUDA_LIBRARY_DIR; !dir.empty()) {
    out.push_back(dir + "/" + kSoname);
  }
  return out;
}

template <class Function>
void bind(void* library, const char* symbol, Function& function, std::string& missing) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  if (function == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
}

// The library loaded and bound, or the EnvironmentError that says why not.
struct Loaded {
  CublasApi api;
  std::exception_ptr failure;
};

Loaded load() {
  Loaded loaded;
  std::string tried;
  for (const std::string& name : candidates()) {
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + name + ": " + (why != nullptr ? why : "not found");
      continue;
    }
    CublasApi& api = loaded.api;
    std::string missing;
    bind(library, "cublasCreate_v2", api.create, missing);
    bind(library, "cublasDestroy_v2", api.destroy, missing);
    bind(library, "cublasSetStream_v2", api.set_stream, missing);
    bind(library, "cublasSetMathMode", api.set_math_mode, missing);
    bind(library, "cublasSetWorkspace_v2", api.set_workspace, missing);
    bind(library, "cublasSgemm_v2", api.sgemm, missing);
    bind(library, "cublasDgemm_v2", api.dgemm, missing);
    bind(library, "cublasGemmEx", api.gemm_ex, missing);
    bind(library, "cublasGetStatusName", api.status_name, missing);
    bind(library, "cublasGetStatusString", api.status_string, missing);
    bind(library, "cublasGetProperty", api.get_property, missing);
    int major = 0;
    if (missing.empty() && api.get_property(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        major == CUBLAS_VER_MAJOR) {
      Dl_info info{};
      api.path =
          dladdr(reinterpret_cast<const void*>(api.create), &info) != 0 && info.dli_fname != nullptr
              ? info.dli_fname
              : name;
      return loaded;
    }
    tried += "\n  " + name + ": " +
             (missing.empty() ? "cuBLAS major version " + std::to_string(major) + ", expected " +
                                    std::to_string(CUBLAS_VER_MAJOR)
                              : "lacks " + missing);
    dlclose(library);
    api = CublasApi{};
  }
  loaded.failure = std::make_exception_ptr(
      EnvironmentError("cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
                           " (the GPU matrix products) could not be loaded; tried:" + tried,
                       "install cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
                           " (the CUDA toolkit, or the nvidia-cublas Python wheel) and put "
                           "its lib folder on LD_LIBRARY_PATH, or set TENAX_CUBLAS_LIBRARY "
                           "to the " +
                           kSoname + " file; `tenax doctor` checks the result"));
  return loaded;
}

const Loaded& loaded_once() {
  static const Loaded loaded = load();
  return loaded;
}

}  // namespace

const CublasApi& cublas_api() {
  const Loaded& loaded = loaded_once();
  if (loaded.failure) std::rethrow_exception(loaded.failure);
  return loaded.api;
}

CublasLoadReport cublas_load_report() noexcept {
  CublasLoadReport report;
  try {
    const CublasApi& api = cublas_api();
    report.path = api.path;
    api.get_property(MAJOR_VERSION, &report.major);
    api.get_property(MINOR_VERSION, &report.minor);
    api.get_property(PATCH_LEVEL, &report.patch);
  } catch (...) {
    CauseAndFix failure = current_cause_and_fix();
    report.cause = std::move(failure.cause);
    report.fix = std::move(failure.fix);
  }
  return report;
}

}  // namespace tenax::kernels::cuda
