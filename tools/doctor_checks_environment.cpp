// Doctor checks of environment variables and of the CPU backend's thread pool.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "doctor.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/detail/cpu_simd.hpp"

extern char** environ;  // NOLINT: POSIX

namespace tenax::tools {

namespace {

const char* env(const char* name) { return std::getenv(name); }

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t cut = text.find(separator);
    parts.push_back(text.substr(0, cut));
    if (cut == std::string_view::npos) return parts;
    text.remove_prefix(cut + 1);
  }
}

Finding cuda_visible_devices() {
  constexpr const char* kName = "env:CUDA_VISIBLE_DEVICES";
  constexpr const char* kFix =
      "unset CUDA_VISIBLE_DEVICES to see every GPU, or list the GPUs to use as ordinals or UUIDs "
      "from nvidia-smi -L, e.g. CUDA_VISIBLE_DEVICES=0,1";
  const VisibleDevices visible = read_visible_devices();
  if (!visible.set) return info(kName, "not set: every GPU is visible");
  if (visible.blank) {
    return problem(kName,
                   "CUDA_VISIBLE_DEVICES is set but empty, which hides every GPU: CUDA reports no "
                   "device and jobs fall back to the CPU",
                   kFix, "''");
  }
  if (!visible.invalid_entry.empty()) {
    return problem(
        kName,
        fmt::format(
            "CUDA_VISIBLE_DEVICES='{}' has the invalid entry '{}': CUDA "
            "ignores it and every entry after it{}",
            printable(visible.text), printable(visible.invalid_entry),
            visible.entries == 0 ? ", so no GPU is visible and jobs fall back to the CPU" : ""),
        kFix, printable(visible.text));
  }
  if (!visible.duplicate_entry.empty()) {
    return problem(kName,
                   fmt::format("CUDA_VISIBLE_DEVICES='{}' lists '{}' twice: a GPU can be made "
                               "visible only once, so CUDA does not use the list as written",
                               printable(visible.text), printable(visible.duplicate_entry)),
                   kFix, printable(visible.text));
  }
  return ok(kName, fmt::format("'{}': {} GPU(s) visible, renumbered from cuda:0",
                               printable(visible.text), visible.entries));
}

Finding cuda_home(const char* name) {
  const std::string finding = fmt::format("env:{}", name);
  const char* value = env(name);
  if (value == nullptr) {
    return info(finding,
                "not set (only needed to build tenax; running needs the driver and the "
                "CUDA runtime libraries)");
  }
  std::error_code error;
  if (!std::filesystem::is_directory(value, error)) {
    return problem(
        finding, fmt::format("{}={} is not a directory", name, value),
        fmt::format("point {} at the CUDA toolkit (e.g. /usr/local/cuda) or unset it", name),
        value);
  }
  return ok(finding, value);
}

// The CUDA version named by a path such as /usr/local/cuda-12.4/lib64, or 0.
int cuda_version_in_path(std::string_view path) {
  const std::size_t at = path.find("cuda-");
  if (at == std::string_view::npos) return 0;
  const std::string_view rest = path.substr(at + 5);
  int major = 0;
  int minor = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), major);
  if (ec != std::errc{}) return 0;
  if (end != rest.data() + rest.size() && *end == '.') {
    std::from_chars(end + 1, rest.data() + rest.size(), minor);
  }
  return major * 1000 + minor * 10;
}

Finding ld_library_path() {
  constexpr const char* kName = "env:LD_LIBRARY_PATH";
  const char* value = env("LD_LIBRARY_PATH");
  if (value == nullptr || *value == '\0') {
    return info(kName, "not set: libraries come from the system paths and the binaries' RPATH");
  }
  const std::vector<std::string_view> entries = split(value, ':');
  std::vector<std::string> missing;
  const int runtime = cuda::availability().runtime_version;
  for (const std::string_view entry : entries) {
    if (entry.empty()) continue;
    std::error_code error;
    if (!std::filesystem::is_directory(std::string(entry), error)) missing.emplace_back(entry);
    const int version = cuda_version_in_path(entry);
    if (cuda::compiled() && runtime > 0 && version > 0 && version / 1000 != runtime / 1000) {
      return problem(kName,
                     fmt::format("LD_LIBRARY_PATH contains {} (CUDA {}) but tenax uses CUDA {}: "
                                 "CUDA libraries of the wrong major version may be loaded from it",
                                 entry, format_cuda_version(version), format_cuda_version(runtime)),
                     "remove that entry from LD_LIBRARY_PATH, or load the environment module of "
                     "the CUDA version tenax was built with",
                     value);
    }
  }
  std::string detail = fmt::format("set, {} entries", entries.size());
  if (!missing.empty()) {
    detail += "; these do not exist:";
    for (const std::string& m : missing) detail += " " + m;
  }
  return info(kName, detail);
}

Finding num_threads(const std::string& value) {
  try {
    const int threads = CpuContext::instance().num_threads();
    return ok("env:TENAX_NUM_THREADS",
              fmt::format("{}: the CPU backend uses {} thread(s)", value, threads));
  } catch (const Error& e) {
    return problem("env:TENAX_NUM_THREADS", e.cause(), e.fix(), value);
  }
}

Finding memory_limit(const std::string& value) {
  constexpr const char* kName = "env:TENAX_MEMORY_LIMIT";
  try {
    const std::size_t bytes = memory_limit_from_environment();
    return ok(kName, fmt::format("{}: each device's memory pool is capped at {} ({} bytes)", value,
                                 format_bytes(static_cast<double>(bytes)), bytes));
  } catch (const Error& e) {
    return problem(kName, e.cause(), e.fix(), value);
  }
}

// The settings a job reads at its first kernel or first matrix, checked with the same parsers.
Finding cpu_simd_setting(const std::string& value) {
  constexpr const char* kName = "env:TENAX_CPU_SIMD";
  try {
    const kernels::cpu::CpuSimd& simd = kernels::cpu::cpu_simd();
    const auto yes = [](bool on) { return on ? "yes" : "no"; };
    return ok(kName, fmt::format("{}: the CPU kernels use AVX2 {}, FMA {}, F16C {}, AVX-512 {}, "
                                 "AMX-BF16 {}",
                                 value, yes(simd.avx2), yes(simd.fma), yes(simd.f16c),
                                 yes(simd.avx512), yes(simd.amx_bf16)));
  } catch (const Error& e) {
    return problem(kName, e.cause(), e.fix(), value);
  }
}

Finding csr_compact(const std::string& value) {
  constexpr const char* kName = "env:TENAX_CSR_COMPACT";
  try {
    return ok(kName, fmt::format("{}: the compact CSR index is {}", value,
                                 compact_csr_index_enabled() ? "on" : "off"));
  } catch (const Error& e) {
    return problem(kName, e.cause(), e.fix(), value);
  }
}

Finding faults(const std::string& value) {
  constexpr const char* kName = "env:TENAX_FAULTS";
  try {
    const FaultPlan plan = FaultPlan::parse(value);
    if (plan.empty()) return ok(kName, "'' (empty plan: no faults are injected)");
    return info(kName, fmt::format("{}: jobs fail ON PURPOSE at these points (fault injection); "
                                   "unset TENAX_FAULTS for real runs",
                                   plan.to_string()));
  } catch (const Error& e) {
    return problem(kName, e.cause(), e.fix(), value);
  }
}

// The host memory pool a job starts with (TENAX_MEMORY_LIMIT, the address-space limit), made as a
// job makes it, with one small allocation: a job that could not start says why here first.
Finding host_pool() {
  constexpr const char* kName = "host-pool";
  try {
    const Tensor probe = Tensor::empty({std::int64_t{1} << 17}, DType::f64, Device::cpu());
    const MemoryStats stats = memory_stats(Device::cpu());
    rlimit limit{};
    const bool limited = ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
    return ok(kName,
              fmt::format("the host memory pool starts: capacity {}, {} of address space{}",
                          format_bytes(static_cast<double>(stats.capacity)),
                          format_bytes(static_cast<double>(stats.address_space)),
                          limited ? fmt::format(" (under the address-space limit ulimit -v of {})",
                                                format_bytes(static_cast<double>(limit.rlim_cur)))
                                  : std::string()));
  } catch (const Error& e) {
    return problem(kName, "a job's host memory pool cannot start: " + e.cause(), e.fix());
  }
}

Finding cpu_threads() {
  const unsigned hardware = std::thread::hardware_concurrency();
  try {
    std::string extensions;
    try {
      const kernels::cpu::CpuSimd& simd = kernels::cpu::cpu_simd();
      for (const auto& [on, name] :
           {std::pair{simd.avx2, "AVX2"}, std::pair{simd.fma, "FMA"}, std::pair{simd.f16c, "F16C"},
            std::pair{simd.avx512, "AVX-512"}, std::pair{simd.amx_bf16, "AMX-BF16"}}) {
        if (on) extensions += std::string(extensions.empty() ? "" : ", ") + name;
      }
    } catch (const Error&) {
      extensions = "see env:TENAX_CPU_SIMD";  // that finding names the bad value
    }
    return info("cpu", fmt::format("{} hardware thread(s); the CPU backend uses {}; its kernels' "
                                   "vector extensions: {}",
                                   hardware, CpuContext::instance().num_threads(),
                                   extensions.empty() ? "none (baseline x86-64)" : extensions));
  } catch (const Error&) {
    return info("cpu", fmt::format("{} hardware thread(s); the CPU backend cannot start until "
                                   "TENAX_NUM_THREADS is fixed",
                                   hardware));
  }
}

}  // namespace

Finding transparent_huge_pages(bool readable, std::string_view sysfs_text) {
  constexpr const char* kName = "huge-pages";
  if (!readable) {
    return info(kName,
                "this kernel has no transparent huge pages to report: the host pool "
                "uses base pages");
  }
  const std::size_t open = sysfs_text.find('[');
  const std::size_t close = sysfs_text.find(']', open);
  const std::string_view mode = open != std::string_view::npos && close != std::string_view::npos
                                    ? sysfs_text.substr(open + 1, close - open - 1)
                                    : std::string_view{};
  if (mode == "always" || mode == "madvise") {
    return ok(kName, fmt::format("transparent huge pages: {}; the host pool asks for them for "
                                 "its blocks of 2 MiB and more",
                                 mode));
  }
  if (mode == "never") {
    return info(kName,
                "transparent huge pages: never, so the CPU solvers stream their vectors through "
                "4 KiB pages (a CSR CG on a 2048^2 grid ran about 15 % slower so); to allow them: "
                "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (as root)");
  }
  return info(kName, fmt::format("transparent huge pages: mode not recognised in '{}'",
                                 std::string(trim(sysfs_text))));
}

VisibleDevices read_visible_devices() {
  VisibleDevices v;
  const char* value = env("CUDA_VISIBLE_DEVICES");
  if (value == nullptr) return v;
  v.set = true;
  v.text = value;
  if (trim(v.text).empty()) {
    v.blank = true;
    return v;
  }
  std::set<std::string_view> seen;
  for (const std::string_view raw : split(v.text, ',')) {
    const std::string_view entry = trim(raw);
    const std::optional<int> ordinal = parse_whole<int>(entry);
    const bool is_ordinal = ordinal.has_value() && *ordinal >= 0;
    const bool is_uuid = entry.starts_with("GPU-") || entry.starts_with("MIG-");
    if (!is_ordinal && !is_uuid) {
      v.invalid_entry = entry;
      return v;
    }
    if (!seen.insert(entry).second) {
      v.duplicate_entry = entry;
      return v;
    }
    ++v.entries;
  }
  return v;
}

void check_environment(Findings& out) {
  out.push_back(cuda_visible_devices());
  out.push_back(cuda_home("CUDA_HOME"));
  out.push_back(cuda_home("CUDA_PATH"));
  out.push_back(ld_library_path());

  // Every TENAX_* variable, sorted, validated where tenax has a parser for it.
  std::map<std::string, std::string> tenax;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    if (!text.starts_with("TENAX_")) continue;
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    tenax.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  if (tenax.empty()) out.push_back(info("env:TENAX_*", "none set: tenax uses its defaults"));
  for (const auto& [name, value] : tenax) {
    if (name == "TENAX_NUM_THREADS") {
      out.push_back(num_threads(value));
    } else if (name == "TENAX_MEMORY_LIMIT") {
      out.push_back(memory_limit(value));
    } else if (name == "TENAX_FAULTS") {
      out.push_back(faults(value));
    } else if (name == "TENAX_CPU_SIMD") {
      out.push_back(cpu_simd_setting(value));
    } else if (name == "TENAX_CSR_COMPACT") {
      out.push_back(csr_compact(value));
    } else {
      out.push_back(info("env:" + name, value));
    }
  }
  out.push_back(cpu_threads());
  out.push_back(host_pool());
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp_text;
  std::getline(thp, thp_text);
  out.push_back(transparent_huge_pages(static_cast<bool>(thp), thp_text));
}

}  // namespace tenax::tools
