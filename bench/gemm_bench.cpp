// 1024 x 1024 f32 GEMM: tenax::ops::gemm against Eigen called directly on the same buffers.
//
// Eigen is built without OpenMP, so it multiplies on one thread. For a like-for-like comparison
// this program sets TENAX_NUM_THREADS=1 unless it is already set, so ops::gemm runs on one thread
// too; the difference is then the cost of the checked front end and of computing in fixed
// 128-row panels. Tenax_Gemm_Pool shows ops::gemm's CPU kernel on a pool of all hardware threads
// for reference. After the runs, the overhead of tenax over Eigen is printed from the medians
// (or the means, or the single runs), in real time and in CPU time; on a busy machine the CPU
// time of these single-threaded runs is the steadier measure.
//
//   TENAX_NUM_THREADS=1 bench_gemm --benchmark_repetitions=7 \
//       --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace {

constexpr std::int64_t kN = 1024;

struct Operands {
  tenax::Tensor a = tenax::Tensor::empty({kN, kN}, tenax::DType::f32);
  tenax::Tensor b = tenax::Tensor::empty({kN, kN}, tenax::DType::f32);
  tenax::Tensor c = tenax::Tensor::empty({kN, kN}, tenax::DType::f32);
  Operands() {
    float* pa = a.data_as<float>();
    float* pb = b.data_as<float>();
    for (std::int64_t i = 0; i < kN * kN; ++i) {
      pa[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
      pb[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
  }
};

Operands& operands() {
  static Operands o;
  return o;
}

void set_flops(benchmark::State& state) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kN * kN * kN * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void Tenax_Gemm(benchmark::State& state) {
  Operands& o = operands();
  for (auto _ : state) {
    tenax::ops::gemm(o.a, o.b, o.c);
    benchmark::ClobberMemory();
  }
  set_flops(state);
}

void Eigen_Gemm(benchmark::State& state) {
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Operands& o = operands();
  const Eigen::Map<const RowMatrix> a(o.a.data_as<const float>(), kN, kN);
  const Eigen::Map<const RowMatrix> b(o.b.data_as<const float>(), kN, kN);
  Eigen::Map<RowMatrix> c(o.c.data_as<float>(), kN, kN);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::ClobberMemory();
  }
  set_flops(state);
}

void Tenax_Gemm_Pool(benchmark::State& state) {
  static tenax::CpuContext pool(
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  Operands& o = operands();
  const tenax::kernels::GemmArgs args{o.a, o.b, o.c, kN, kN, kN, false, false, 1.0, 0.0};
  for (auto _ : state) {
    tenax::kernels::cpu::gemm(pool, args);
    benchmark::ClobberMemory();
  }
  state.counters["threads"] = pool.num_threads();
  set_flops(state);
}

BENCHMARK(Tenax_Gemm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(Eigen_Gemm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(Tenax_Gemm_Pool)->Unit(benchmark::kMillisecond)->UseRealTime();

// Console output plus the aggregate (or single-run) times of each benchmark, kept for the
// overhead line printed at the end.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const std::string name = run.run_name.function_name;
      const Times times{run.GetAdjustedRealTime(), run.GetAdjustedCPUTime()};
      if (run.run_type == Run::RT_Aggregate) {
        aggregates_[name][run.aggregate_name] = times;
      } else {
        singles_[name] = times;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  struct Times {
    double real = 0.0;
    double cpu = 0.0;
  };

  // Median when there are aggregates, else the mean, else the single run; zero when absent.
  Times time_of(const std::string& name) const {
    if (const auto found = aggregates_.find(name); found != aggregates_.end()) {
      for (const char* statistic : {"median", "mean"}) {
        if (const auto s = found->second.find(statistic); s != found->second.end()) {
          return s->second;
        }
      }
    }
    const auto single = singles_.find(name);
    return single == singles_.end() ? Times{} : single->second;
  }

 private:
  std::map<std::string, std::map<std::string, Times>> aggregates_;
  std::map<std::string, Times> singles_;
};

}  // namespace

int main(int argc, char** argv) {
  setenv("TENAX_NUM_THREADS", "1", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tenax_cpu_threads",
                              std::to_string(tenax::CpuContext::instance().num_threads()));
  benchmark::AddCustomContext("eigen_threads", std::to_string(Eigen::nbThreads()));
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto tenax = reporter.time_of("Tenax_Gemm");
  const auto eigen = reporter.time_of("Eigen_Gemm");
  if (tenax.real > 0.0 && eigen.real > 0.0) {
    std::printf("real time: tenax::ops::gemm %.3f ms, Eigen %.3f ms: overhead %+.2f%%\n",
                tenax.real, eigen.real, 100.0 * (tenax.real / eigen.real - 1.0));
    std::printf("cpu time:  tenax::ops::gemm %.3f ms, Eigen %.3f ms: overhead %+.2f%%\n", tenax.cpu,
                eigen.cpu, 100.0 * (tenax.cpu / eigen.cpu - 1.0));
  }
  benchmark::Shutdown();
  return 0;
}
