// Doctor checks of the libraries tenax uses: versions loaded at run time against the headers it
// was built with (a mismatch means another copy is first on the library path).
#include <fmt/format.h>
#include <hdf5.h>

#include <Eigen/Core>
#include <string>

#include "doctor.hpp"
#include "doctor_probes.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::tools {

namespace {

Finding cuda_library(const char* name, const char* library, const LibraryProbe& probe,
                     const char* what) {
  if (!probe.compiled) return skip(name, "CUDA not compiled into this build");
  if (!probe.load_cause.empty()) return problem(name, probe.load_cause, probe.load_fix);
  if (probe.version.empty()) {
    return problem(name, fmt::format("the {} library did not report its version", library),
                   fmt::format("reinstall {} (it provides {})", library, what));
  }
  const std::string where = probe.path.empty() ? "" : " from " + probe.path;
  return library_version_finding(name, library, probe.version_code, probe.header_version_code,
                                 where);
}

Finding hdf5() {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) {
    return problem("hdf5", "the HDF5 library did not report its version",
                   "reinstall HDF5; checkpoints cannot be written without it");
  }
  const std::string loaded = fmt::format("{}.{}.{}", major, minor, release);
  const std::string built = fmt::format("{}.{}.{}", H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE);
  hbool_t threadsafe = 0;
  H5is_library_threadsafe(&threadsafe);
  const std::string threads =
      threadsafe ? "thread-safe" : "not thread-safe (checkpoint writes are serialised)";
  // HDF5 checks the exact version when a file is first opened and aborts on a mismatch.
  if (major != H5_VERS_MAJOR || minor != H5_VERS_MINOR || release != H5_VERS_RELEASE) {
    return problem("hdf5",
                   fmt::format("tenax was built with HDF5 {} headers but loaded HDF5 {}: HDF5 "
                               "aborts the process when the first checkpoint is opened",
                               built, loaded),
                   "put the HDF5 tenax was built with first on LD_LIBRARY_PATH, or rebuild tenax "
                   "against the installed HDF5");
  }
  return ok("hdf5", fmt::format("HDF5 {} (built with {}), {}", loaded, built, threads));
}

Finding mpi() {
  const runtime::CommLibraryReport report = runtime::mpi_library_report();
  if (!report.compiled) {
    return skip("mpi",
                "MPI was not found when tenax was built: multi-process runs over MPI are "
                "unavailable (install an MPI such as Open MPI and reconfigure to enable them)");
  }
  if (!report.cause.empty()) return problem("mpi", report.cause, report.fix);
  return ok("mpi", report.version + (report.path.empty() ? "" : ", communicator " + report.path));
}

Finding eigen() {
  return info("eigen", fmt::format("Eigen {}.{}.{} ({})", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                                   EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse()));
}

}  // namespace

void check_libraries(Findings& out) {
  out.push_back(cuda_library("cublas", "cuBLAS", probe_cublas(), "the GPU matrix products"));
  out.push_back(hdf5());
  out.push_back(mpi());
  out.push_back(eigen());
}

}  // namespace tenax::tools
