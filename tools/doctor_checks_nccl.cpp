// Doctor checks of NCCL: the version tenax was built with against the library loaded at run
// time, and the NCCL_* variables that change how NCCL connects the GPUs. NCCL is asked through
// dlopen/dlsym, so this check runs (and says what is missing) whatever library is installed.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "doctor.hpp"
#include "doctor_probes.hpp"
#include "tenax/core/cuda_runtime.hpp"

extern char** environ;  // NOLINT: POSIX

namespace tenax::tools {

namespace {

constexpr const char* kLibrary = "libnccl.so.2";

// NCCL version codes are X*1000+Y*100+Z up to 2.8 and X*10000+Y*100+Z from 2.9 on.
int major_of(int code) { return code >= 10000 ? code / 10000 : code / 1000; }

std::string decode(int code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

// The NCCL this process loads (the one the runtime linked, when it is already loaded).
struct LoadedNccl {
  bool found = false;
  std::string error;  // dlopen's or the version query's failure
  int code = 0;
  std::string path;
};

LoadedNccl load_nccl() {
  LoadedNccl nccl;
  void* library = dlopen(kLibrary, RTLD_LAZY | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    nccl.error = error != nullptr ? error : "not found";
    return nccl;
  }
  nccl.found = true;
  using GetVersion = int (*)(int*);  // ncclResult_t ncclGetVersion(int*), ncclSuccess == 0
  void* symbol = dlsym(library, "ncclGetVersion");
  Dl_info where{};
  if (symbol != nullptr && dladdr(symbol, &where) != 0 && where.dli_fname != nullptr) {
    nccl.path = where.dli_fname;
  }
  if (symbol == nullptr) {
    nccl.error = "it has no ncclGetVersion";
  } else if (const int status = reinterpret_cast<GetVersion>(symbol)(&nccl.code); status != 0) {
    nccl.error = fmt::format("ncclGetVersion returned {}", status);
    nccl.code = 0;
  }
  dlclose(library);
  return nccl;
}

Finding nccl_library() {
  const LoadedNccl loaded = load_nccl();
  const int built = nccl_build_version_code();
  const std::string where = loaded.path.empty() ? "" : " from " + loaded.path;
  if (built == 0) {
    std::string installed;
    if (loaded.code > 0) {
      installed = fmt::format(" (NCCL {} is installed here{})", decode(loaded.code),
                              loaded.path.empty() ? "" : ": " + loaded.path);
    }
    return skip("nccl", fmt::format("NCCL not compiled into this build (CPU backend only): "
                                    "--comm nccl is unavailable; rebuild with "
                                    "-DTENAX_WITH_CUDA=ON (cmake --preset release) where the CUDA "
                                    "toolkit and NCCL are installed{}",
                                    installed));
  }
  const std::string built_text = decode(built);
  if (!loaded.found) {
    return problem(
        "nccl",
        fmt::format("tenax was built with NCCL {} but {} cannot be loaded ({}): --comm nccl "
                    "cannot start",
                    built_text, kLibrary, loaded.error),
        fmt::format("install NCCL {}.x (the libnccl2 package or NVIDIA's NCCL archive), or add the "
                    "directory that holds {} to LD_LIBRARY_PATH",
                    major_of(built), kLibrary));
  }
  if (loaded.code == 0) {
    return problem(
        "nccl",
        fmt::format("the {}{} did not report its version: {}", kLibrary, where, loaded.error),
        fmt::format("reinstall NCCL {}.x, and check which {} is loaded (ldconfig -p | grep "
                    "nccl, LD_LIBRARY_PATH)",
                    major_of(built), kLibrary));
  }
  // NCCL before 2.9 counted X*1000+Y*100+Z; the rule reads X*10000+Y*100+Z.
  auto normalised = [](int code) {
    return code >= 10000 ? code : (code / 1000) * 10000 + code % 1000;
  };
  return library_version_finding("nccl", "NCCL", normalised(loaded.code), normalised(built), where);
}

// Variables NCCL's documentation describes as turning a transport off.
Finding disabling_variable(const std::string& name, const std::string& value) {
  const std::string finding = "env:" + name;
  if (value == "0") return info(finding, "0: the transport stays enabled (NCCL's default)");
  if (value != "1") {
    return info(finding, fmt::format("'{}': NCCL documents only 1 (disable) for {}",
                                     printable(value), name));
  }
  if (name == "NCCL_P2P_DISABLE") {
    return problem(
        finding,
        "NCCL_P2P_DISABLE=1 turns off NCCL's P2P transport (direct GPU-to-GPU copies "
        "over NVLink or PCIe): GPUs of one host then exchange data through host memory "
        "or the network, which is slower; NCCL's documentation lists it for debugging, not "
        "to keep set",
        "unset NCCL_P2P_DISABLE unless it works around a P2P fault confirmed on this "
        "machine (peer-access below shows which GPU pairs support it)",
        value);
  }
  if (name == "NCCL_SHM_DISABLE") {
    return problem(
        finding,
        "NCCL_SHM_DISABLE=1 turns off NCCL's shared-memory transport, which GPUs of "
        "one host use when they cannot reach each other directly: their data then goes "
        "over the network (InfiniBand or IP sockets); NCCL's documentation lists it "
        "for debugging, not to keep set",
        "unset NCCL_SHM_DISABLE unless it works around a fault confirmed on this machine", value);
  }
  return info(finding,
              "1: NCCL does not use InfiniBand/RoCE and falls back to IP sockets for traffic "
              "between hosts; keep it only where the hosts have no working InfiniBand");
}

Finding nccl_debug(const char* value) {
  constexpr const char* kName = "env:NCCL_DEBUG";
  if (value == nullptr) {
    return info(kName,
                "not set: NCCL prints nothing of its own; when an NCCL call fails, rerun with "
                "NCCL_DEBUG=WARN to have NCCL print why (INFO also prints how it connects the "
                "GPUs)");
  }
  std::string level(value);
  for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view effect;
  if (level == "VERSION") {
    effect = "NCCL prints its version when it starts";
  } else if (level == "WARN") {
    effect = "NCCL prints an explicit error message when a call fails";
  } else if (level == "INFO") {
    effect = "NCCL prints debug information, including how it connects the GPUs";
  } else if (level == "TRACE") {
    effect = "NCCL prints trace information on every call (very verbose)";
  } else {
    return info(kName, fmt::format("'{}' is not one of NCCL's levels (VERSION, WARN, INFO, TRACE)",
                                   printable(value)));
  }
  return info(kName, fmt::format("{}: {}", printable(value), effect));
}

void nccl_environment(Findings& out) {
  std::map<std::string, std::string> nccl;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    if (!text.starts_with("NCCL_")) continue;
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    nccl.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  if (nccl.find("NCCL_DEBUG") == nccl.end()) out.push_back(nccl_debug(nullptr));
  for (const auto& [name, value] : nccl) {
    if (name == "NCCL_P2P_DISABLE" || name == "NCCL_SHM_DISABLE" || name == "NCCL_IB_DISABLE") {
      out.push_back(disabling_variable(name, value));
    } else if (name == "NCCL_DEBUG") {
      out.push_back(nccl_debug(value.c_str()));
    } else {
      out.push_back(info("env:" + name, value.empty() ? std::string("''") : printable(value)));
    }
  }
  std::error_code error;
  if (std::filesystem::exists("/etc/nccl.conf", error)) {
    out.push_back(info("nccl.conf",
                       "/etc/nccl.conf exists: NCCL also takes settings from it, as if they were "
                       "environment variables"));
  }
}

}  // namespace

void check_nccl(Findings& out) {
  out.push_back(nccl_library());
  if (cuda::compiled()) nccl_environment(out);
}

}  // namespace tenax::tools
