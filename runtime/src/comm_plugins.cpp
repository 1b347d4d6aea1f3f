// The MPI and NCCL communicators live in plugins (libtenax_comm_mpi, libtenax_comm_nccl) that
// are loaded when a job asks for several ranks, never linked into the libraries a single-rank run
// needs: one process starts without libmpi or libnccl installed (a GPU machine that has only the
// CUDA wheels, a laptop), and does not pay for loading them.
//
// A plugin is loaded from the folder of libtenax_runtime, where the build and the install put it
// (and nowhere else, so that a plugin of another build is never picked up). A static build links
// the MPI communicator in (TENAX_MPI_LINKED).
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "comm_backends.hpp"
#include "tenax/core/error.hpp"
#include "tenax/runtime/communicator.hpp"

// Plugin entry points: C names, C++ types (every piece is built by the same compiler and
// standard library as this file; exceptions cross the boundary like any shared library's).
extern "C" {
using TenaxMakeMpi = void(const tenax::runtime::CommOptions*,
                          std::shared_ptr<tenax::runtime::Communicator>*);
using TenaxMpiVersion = void(std::string*);
using TenaxMakeNccl = void(std::shared_ptr<tenax::runtime::Communicator>,
                           const tenax::runtime::CommOptions*,
                           std::shared_ptr<tenax::runtime::Communicator>*);
#if TENAX_MPI_LINKED
TenaxMakeMpi tenax_comm_mpi_make;
TenaxMpiVersion tenax_comm_mpi_version;
#endif
}

namespace tenax::runtime {
namespace {

// The folder this library was loaded from, with a trailing '/', or "" when unknown.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  const std::string file = info.dli_fname;
  const std::size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

// A plugin's handle, loaded once; the EnvironmentError of a failed load is thrown again on
// every later call.
struct Plugin {
  Plugin(const char* file_name, const char* description, const char* fix)
      : file(file_name), what(description), library_fix(fix) {}

  const char* file;         // the soname, e.g. libtenax_comm_mpi.so.0
  const char* what;         // for messages: "the MPI communicator"
  const char* library_fix;  // how to get the library it needs
  std::once_flag once;
  std::string path;  // where it is loaded from: beside libtenax_runtime
  void* handle = nullptr;
  std::string tried;

  void* load() {
    std::call_once(once, [this] {
      path = own_folder() + file;
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* why = dlerror();
        tried = why != nullptr ? why : path + ": not found";  // dlerror names the file
      }
    });
    if (handle == nullptr) {
      throw EnvironmentError(std::string(what) + " could not be loaded: " + tried,
                             std::string(library_fix) +
                                 " (if the plugin file itself is missing, reinstall tenax: it "
                                 "belongs beside libtenax_runtime); `tenax doctor` checks it; or "
                                 "run one process with --comm single");
    }
    return handle;
  }

  template <class Function>
  Function* symbol(const char* name) {
    void* found = dlsym(load(), name);
    if (found == nullptr) {
      throw EnvironmentError(std::string(what) + " (" + file + ") lacks " + name +
                                 ": it belongs to another version of tenax",
                             "reinstall tenax so that its libraries come from one build");
    }
    return reinterpret_cast<Function*>(found);
  }
};

#if defined(TENAX_MPI_PLUGIN)
Plugin& mpi_plugin() {
  static Plugin plugin{TENAX_MPI_PLUGIN, "the MPI communicator",
                       "install the MPI library tenax was built with (Open MPI: `apt-get install "
                       "openmpi-bin`) or put its folder on LD_LIBRARY_PATH"};
  return plugin;
}
#endif

#if defined(TENAX_NCCL_PLUGIN)
Plugin& nccl_plugin() {
  static Plugin plugin{TENAX_NCCL_PLUGIN, "the NCCL communicator",
                       "install NCCL 2 (the CUDA toolkit's, or the nvidia-nccl Python wheel) and "
                       "put its lib folder on LD_LIBRARY_PATH, and "
                       "the MPI library tenax was built with (it bootstraps NCCL)"};
  return plugin;
}
#endif

}  // namespace

namespace detail {

std::shared_ptr<Communicator> make_mpi_communicator(CommOptions options) {
  std::shared_ptr<Communicator> made;
#if TENAX_MPI_LINKED
  tenax_comm_mpi_make(&options, &made);
#elif defined(TENAX_MPI_PLUGIN)
  mpi_plugin().symbol<TenaxMakeMpi>("tenax_comm_mpi_make")(&options, &made);
#else
  (void)options;
  throw NotCompiledError(
      "this build of tenax has no MPI communicator (MPI was not found when it was configured), "
      "so it cannot run as several ranks",
      "install MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) and configure again; or "
      "run one process with --comm single");
#endif
  return made;
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> host,
                                                     CommOptions options) {
#if defined(TENAX_NCCL_PLUGIN)
  std::shared_ptr<Communicator> made;
  nccl_plugin().symbol<TenaxMakeNccl>("tenax_comm_nccl_make")(std::move(host), &options, &made);
  return made;
#else
  (void)host;
  (void)options;
  throw NotCompiledError(
      "this build of tenax has no NCCL communicator (it was configured without CUDA)",
      "configure with the CUDA toolkit and NCCL present (TENAX_WITH_CUDA=AUTO or ON, NCCL from "
      "the toolkit or NCCL_ROOT); or use --comm mpi, which stages device tensors through host "
      "memory");
#endif
}

}  // namespace detail

CommLibraryReport mpi_library_report() noexcept {
  CommLibraryReport report;
  try {
#if TENAX_MPI_LINKED
    report.compiled = true;
    tenax_comm_mpi_version(&report.version);
#elif defined(TENAX_MPI_PLUGIN)
    report.compiled = true;
    mpi_plugin().symbol<TenaxMpiVersion>("tenax_comm_mpi_version")(&report.version);
    report.path = mpi_plugin().path;
#endif
  } catch (...) {
    CauseAndFix failure = current_cause_and_fix();
    report.cause = std::move(failure.cause);
    report.fix = std::move(failure.fix);
  }
  return report;
}

}  // namespace tenax::runtime
