// Doctor checks of a multi-rank, multi-GPU launch: what the launcher says (world size, rank,
// local rank), which GPU this rank would use and whether it exists, peer access between the
// visible GPUs, and how tenax keeps the operands of one op on one device. The device rule is the
// runtime's: the NCCL communicator (runtime/cuda/nccl_communicator.cpp) gives each rank
// cuda:<local rank> of the GPUs it sees and refuses a rank whose local rank has no GPU.
#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor.hpp"
#include "doctor_probes.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/runtime/launch_environment.hpp"

namespace tenax::tools {

namespace {

using runtime::LaunchEnvironment;
using runtime::LaunchVariable;

constexpr const char* kHowToLaunch =
    "to run N ranks: mpirun -np N PROGRAM ..., srun -n N PROGRAM ..., or under the supervisor "
    "tenax run -- mpirun -np N PROGRAM ... (--comm auto then uses MPI)";

std::string quoted(const LaunchVariable& v) {
  return fmt::format("{}='{}'", v.name, printable(v.text));
}

void join(std::string& text, const std::string& part, std::string_view separator = "; ") {
  if (!text.empty()) text += separator;
  text += part;
}

// "rank 1 of 4, local rank 1 of 2 (OMPI_COMM_WORLD_RANK=1, ...)": the launcher's valid numbers.
std::string layout(const LaunchEnvironment& e) {
  std::string text;
  if (e.rank.value && e.world_size.value) {
    text = fmt::format("rank {} of {}", *e.rank.value, *e.world_size.value);
  } else if (e.rank.value) {
    text = fmt::format("rank {}", *e.rank.value);
  } else if (e.world_size.value) {
    text = fmt::format("{} rank(s)", *e.world_size.value);
  }
  if (e.local_rank.value && e.local_size.value) {
    join(text,
         fmt::format("local rank {} of {} on this host", *e.local_rank.value, *e.local_size.value),
         ", ");
  } else if (e.local_rank.value) {
    join(text, fmt::format("local rank {}", *e.local_rank.value), ", ");
  } else if (e.local_size.value) {
    join(text, fmt::format("{} rank(s) on this host", *e.local_size.value), ", ");
  }
  std::string sources;
  for (const LaunchVariable* v : {&e.world_size, &e.rank, &e.local_rank, &e.local_size}) {
    if (v->set()) join(sources, fmt::format("{}={}", v->name, printable(v->text)), ", ");
  }
  if (text.empty()) text = "no rank numbers given";
  return sources.empty() ? text : text + " (" + sources + ")";
}

// Launcher numbers that cannot be right: unreadable values always, contradictions in a launch.
std::vector<std::string> launch_problems(const LaunchEnvironment& e,
                                         const LaunchVariable& gpus_on_node) {
  std::vector<std::string> problems;
  for (const LaunchVariable* v :
       {&e.world_size, &e.rank, &e.local_rank, &e.local_size, &gpus_on_node}) {
    if (v->set() && !v->value) problems.push_back(fmt::format("{} {}", quoted(*v), v->error));
  }
  if (!e.parallel) return problems;
  const auto& size = e.world_size.value;
  const auto& rank = e.rank.value;
  const auto& local_rank = e.local_rank.value;
  const auto& local_size = e.local_size.value;
  if (size && *size == 0) problems.push_back(quoted(e.world_size) + " is a world of no process");
  if (rank && size && *size > 0 && *rank >= *size) {
    problems.push_back(fmt::format("{} is not below {}: ranks are 0 to size - 1", quoted(e.rank),
                                   quoted(e.world_size)));
  }
  if (local_size && *local_size == 0) {
    problems.push_back(quoted(e.local_size) + " says no process runs on this host");
  }
  if (local_rank && local_size && *local_size > 0 && *local_rank >= *local_size) {
    problems.push_back(fmt::format("{} is not below {}: local ranks are 0 to local size - 1",
                                   quoted(e.local_rank), quoted(e.local_size)));
  }
  if (local_size && size && *local_size > *size) {
    problems.push_back(
        fmt::format("{} is more than the world ({})", quoted(e.local_size), quoted(e.world_size)));
  }
  return problems;
}

Finding launch_finding(const LaunchEnvironment& e, const LaunchVariable& gpus_on_node) {
  const std::vector<std::string> problems = launch_problems(e, gpus_on_node);
  if (!problems.empty()) {
    std::string cause;
    for (const std::string& p : problems) join(cause, p);
    const std::string consequence =
        e.parallel ? "this launch's rank layout cannot be trusted, so the GPU each rank gets "
                     "cannot be predicted"
                   : "tenax cannot tell whether a launcher started several ranks, and runs this "
                     "process as a single rank (--comm auto)";
    return problem(
        "launch",
        fmt::format("launcher variables with impossible values: {}; {}", cause, consequence),
        "let mpirun, mpiexec or srun set these variables: remove any script line that sets or "
        "exports OMPI_*, PMI_*, PMIX_*, MPI_LOCAL*, MV2_* or SLURM_* variables (env | grep -E "
        "'^(OMPI|PMIX?|MPI_LOCAL|MV2|SLURM)_' shows them)",
        layout(e));
  }
  if (!e.parallel) {
    const char* job = std::getenv("SLURM_JOB_ID");
    if (job != nullptr) {
      return info("launch",
                  fmt::format("single process inside Slurm job {}, not a step of several tasks: "
                              "--comm auto runs one rank; {}",
                              job, kHowToLaunch));
    }
    return info("launch", fmt::format("single process: no launcher variables (mpirun, mpiexec, "
                                      "srun) are set, so --comm auto runs one rank; {}",
                                      kHowToLaunch));
  }
  return ok("launch",
            fmt::format("{}: {}; --comm auto uses MPI", runtime::to_string(e.launcher), layout(e)));
}

// How many GPUs this rank sees, as far as it can be known here.
struct VisibleCount {
  std::optional<int> count;  // nullopt: unknown
  bool exact = false;        // counted by CUDA (else an upper bound from CUDA_VISIBLE_DEVICES)
  std::string description;   // "2 GPU(s) (CUDA_VISIBLE_DEVICES='0,1')"
};

VisibleCount visible_count(const CudaFacts& cuda, const VisibleDevices& visible) {
  VisibleCount v;
  const std::string variable =
      visible.set ? fmt::format("CUDA_VISIBLE_DEVICES='{}'", printable(visible.text))
                  : std::string("CUDA_VISIBLE_DEVICES not set");
  if (cuda.usable) {
    v.count = cuda::availability().device_count;
    v.exact = true;
    v.description = fmt::format("{} GPU(s) ({})", *v.count, variable);
  } else if (visible.set && visible.blank) {
    v.count = 0;
    v.exact = true;  // an empty list hides every GPU, driver or not
    v.description = fmt::format("no GPU ({})", variable);
  } else if (visible.set && visible.duplicate_entry.empty()) {
    v.count = visible.entries;
    v.description = visible.entries == 0
                        ? fmt::format("no GPU ({})", variable)
                        : fmt::format("at most {} GPU(s) ({})", visible.entries, variable);
  }
  return v;
}

Finding device_finding(const LaunchEnvironment& e, const CudaFacts& cuda,
                       const LaunchVariable& gpus_on_node) {
  constexpr const char* kName = "launch:device";
  if (!e.parallel) {
    return info(kName,
                "one process: it uses the device --device names (auto: cuda:0 when CUDA is "
                "usable, else the CPU); with several ranks, --comm nccl (and heat2d with --device "
                "cuda or auto) give each rank the GPU of its local rank");
  }
  if (!cuda::compiled()) {
    return skip(kName,
                "CUDA not compiled into this build: every rank runs on the CPU and --comm nccl "
                "is unavailable (rebuild with -DTENAX_WITH_CUDA=ON for GPUs)");
  }
  const std::string rank =
      e.rank.value ? fmt::format("rank {}", *e.rank.value) : std::string("this rank");
  std::string slurm;
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (const char* value = std::getenv(name)) {
      join(slurm, fmt::format("{}={}", name, printable(value)), ", ");
      break;
    }
  }
  if (gpus_on_node.value) {
    join(slurm, fmt::format("SLURM_GPUS_ON_NODE={}", gpus_on_node.text), ", ");
  }
  const std::string slurm_note = slurm.empty() ? "" : "; Slurm: " + slurm;
  if (!e.local_rank.set()) {
    return info(kName, fmt::format("the launcher gives no local rank: MPI computes it when the job "
                                   "starts (the rank's place among the ranks on its host), and "
                                   "--comm nccl uses cuda:<that local rank>{}",
                                   slurm_note));
  }
  if (!e.local_rank.value) {
    return skip(kName, fmt::format("the GPU of {} cannot be predicted: {} {} (see launch)", rank,
                                   quoted(e.local_rank), e.local_rank.error));
  }
  const int local = *e.local_rank.value;
  const VisibleDevices visible = read_visible_devices();
  const VisibleCount seen = visible_count(cuda, visible);
  const std::string refused = fmt::format(
      "tenax's NCCL communicator gives each rank cuda:<local rank> of the GPUs it sees, so "
      "--comm nccl refuses this rank ('rank {} is local rank {} of its host, which has {} visible "
      "GPU(s)')",
      e.rank.value ? std::to_string(*e.rank.value) : std::string("r"), local,
      seen.count ? *seen.count : 0);
  // The fix depends on why the local rank has no GPU: a list of one GPU per rank (a per-task
  // binding), a list cut short by an invalid entry, or too few GPUs for the ranks on the host.
  const bool one_gpu_each =
      seen.count && *seen.count == 1 && visible.set && visible.invalid_entry.empty() && local >= 1;
  const std::string same_gpus =
      "let every rank of a host see all of its GPUs in the same order (one CUDA_VISIBLE_DEVICES "
      "for the whole job, or unset; with srun --gpus-per-task add --gpu-bind=none)";
  std::string fix;
  if (!visible.invalid_entry.empty()) {
    fix = "correct CUDA_VISIBLE_DEVICES (see env:CUDA_VISIBLE_DEVICES) and " + same_gpus;
  } else if (one_gpu_each || !seen.count || *seen.count == 0) {
    fix = same_gpus + ", and start at most one rank per GPU on each host";
  } else {
    fix = fmt::format(
        "start at most {0} rank(s) per host, one per GPU (mpirun --npernode {0}, "
        "srun --ntasks-per-node={0}), or make more GPUs visible; {1}",
        *seen.count, same_gpus);
  }
  if (seen.count && *seen.count == 0) {
    return problem(kName,
                   fmt::format("{} sees {}: --comm nccl refuses it ('--comm nccl on rank {}, which "
                               "sees no CUDA device') and --device auto runs it on the CPU",
                               rank, seen.description,
                               e.rank.value ? std::to_string(*e.rank.value) : std::string("r")),
                   fix, layout(e) + slurm_note);
  }
  if (seen.count && local >= *seen.count) {
    std::string cause = fmt::format(
        "{} is local rank {} but sees {}: {}, and heat2d with --device cuda or auto would ask "
        "for cuda:{}, which does not exist",
        rank, local, seen.description, refused, local);
    if (!visible.invalid_entry.empty()) {
      cause += fmt::format("; CUDA stops reading CUDA_VISIBLE_DEVICES at its invalid entry '{}'",
                           printable(visible.invalid_entry));
    } else if (one_gpu_each) {
      cause +=
          "; CUDA_VISIBLE_DEVICES gives this rank one GPU of its own, as a launcher that binds "
          "one GPU per task does (srun --gpus-per-task, a per-rank wrapper script), but tenax "
          "expects every rank of a host to see all of the host's GPUs and picks its own";
    }
    return problem(kName, cause, fix, layout(e) + slurm_note);
  }
  const auto& local_size = e.local_size.value;
  if (seen.count && local_size && *local_size > *seen.count) {
    return problem(
        kName,
        fmt::format("{} rank(s) run on this host but each sees {}: {} no GPU of "
                    "its own, which --comm nccl refuses",
                    *local_size, seen.description,
                    *local_size - *seen.count == 1
                        ? fmt::format("local rank {} has", *seen.count)
                        : fmt::format("local ranks {} to {} have", *seen.count, *local_size - 1)),
        fix, layout(e) + slurm_note);
  }
  const std::string rule =
      "every rank of a host must see the same GPUs in the same order, or two ranks may land on "
      "one GPU (which --comm nccl refuses); pass --device cuda or auto, not cuda:N, to a job of "
      "several ranks, so that its tensors are on the rank's own GPU";
  if (!seen.count) {
    return info(kName,
                fmt::format("with --comm nccl {} (local rank {}) would use cuda:{}, but how many "
                            "GPUs it sees cannot be counted here ({}); {}{}",
                            rank, local, local,
                            cuda.unusable_reason.empty() ? std::string("CUDA is not usable")
                                                         : cuda.unusable_reason,
                            rule, slurm_note));
  }
  if (!seen.exact) {
    return info(kName, fmt::format("with --comm nccl {} (local rank {}) would use cuda:{} of the "
                                   "{} it sees, but CUDA is not usable here ({}), so they cannot "
                                   "be checked; {}{}",
                                   rank, local, local, seen.description, cuda.unusable_reason, rule,
                                   slurm_note));
  }
  std::string bus;
  for (const cuda::DeviceProperties& p : cuda.devices) {
    if (p.ordinal == local) bus = ", PCI " + p.pci_bus_id;
  }
  return ok(kName, fmt::format("{} (local rank {}) uses cuda:{}{} of the {} it sees with --comm "
                               "nccl, and heat2d puts its tensors there with --device cuda or "
                               "auto; {}{}",
                               rank, local, local, bus, seen.description, rule, slurm_note));
}

Finding peer_access(const CudaFacts& cuda) {
  constexpr const char* kName = "peer-access";
  if (!cuda::compiled()) return skip(kName, "CUDA not compiled into this build");
  if (!cuda.usable) {
    if (cuda::availability().driver_version == 0) {
      return skip(kName,
                  "peer access between GPUs cannot be checked: no NVIDIA driver was found "
                  "(libcuda.so.1 cannot be loaded); see cuda-driver");
    }
    return skip(kName, "no usable CUDA device (" + cuda.unusable_reason + ")");
  }
  const int count = cuda::availability().device_count;
  if (count < 2) {
    return skip(kName,
                fmt::format("{} CUDA device visible: there is no pair of GPUs to check", count));
  }
  const std::vector<std::vector<bool>> can = peer_access_matrix(count);
  std::string matrix;
  std::string missing;
  int pairs_without = 0;
  for (int from = 0; from < count; ++from) {
    std::string row;
    for (int to = 0; to < count; ++to) {
      const bool yes = can[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
      join(row, from == to ? "-" : (yes ? "Y" : "N"), " ");
      if (from != to && !yes) {
        ++pairs_without;
        if (pairs_without <= 4) join(missing, fmt::format("cuda:{} -> cuda:{}", from, to), ", ");
      }
    }
    join(matrix, fmt::format("cuda:{} [{}]", from, row), " ");
  }
  const std::string detail =
      fmt::format("row can access column (cudaDeviceCanAccessPeer): {}", matrix);
  const char* p2p = std::getenv("NCCL_P2P_DISABLE");
  const std::string p2p_note = p2p != nullptr && std::string_view(p2p) == "1"
                                   ? "; NCCL_P2P_DISABLE=1 is set, so NCCL does not use it"
                                   : "";
  if (pairs_without == 0) {
    return ok(kName, fmt::format("every pair of the {} GPUs has peer access, so NCCL can copy "
                                 "between them directly (P2P over NVLink or PCIe){}; {}",
                                 count, p2p_note, detail));
  }
  return info(
      kName,
      fmt::format("{} ordered pair(s) without peer access ({}{}): NCCL cannot use its P2P "
                  "transport between them and goes through host memory (shared-memory "
                  "transport), which is slower; nvidia-smi topo -m shows how the GPUs are "
                  "connected{}; {}",
                  pairs_without, missing, pairs_without > 4 ? ", ..." : "", p2p_note, detail));
}

Finding placement() {
  return info(
      "placement",
      "the operands of an op must be on one device: two GPUs, or a model on a GPU and data on "
      "the CPU, are refused before any work with a UsageError naming both (e.g. 'gemm: a is on "
      "cpu but b is on cuda:0 -- fix: move one with to(device) so that both are on the same "
      "device'; autodiff ops: 'autodiff::linear: x is f32[...] on cpu but weight is f32[...] on "
      "cuda:0'); an op runs on its operands' device, so there is no current device to set, and "
      "Tensor::to(device) moves data between devices");
}

}  // namespace

void check_multi_gpu(Findings& out, const CudaFacts& cuda) {
  const LaunchEnvironment launch = runtime::read_launch_environment();
  const LaunchVariable gpus_on_node = runtime::read_launch_variable({"SLURM_GPUS_ON_NODE"});
  out.push_back(launch_finding(launch, gpus_on_node));
  out.push_back(device_finding(launch, cuda, gpus_on_node));
  try {
    out.push_back(peer_access(cuda));
  } catch (const Error& e) {
    out.push_back(problem("peer-access", e.cause(), e.fix()));
  }
  out.push_back(placement());
}

}  // namespace tenax::tools
