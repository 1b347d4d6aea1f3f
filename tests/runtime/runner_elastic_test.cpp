// Elastic resume of a sharded state with the threads communicator: a run written by R ranks
// resumes on R' != R ranks, each rank rebuilding its slabs (split along axis 0 and along axis 1)
// from the files that hold them, and ends with the bits of the uninterrupted single-process run;
// entries that are neither split nor rank-local must agree across the files read, and a
// checkpoint that cannot be divided anew is refused on every rank, naming why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/io/shard_layout.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kExtent = 23;  // elements of the split vector

// x[i] <- 0.5 x[i] + 0.1 i + 0.001 step, and a [2, n] "pair" split along axis 1 that follows x;
// each rank holds the global elements [begin, end) of both.
class ShardedToy final : public Workload {
 public:
  ShardedToy(Communicator& comm, bool differing_bias = false, bool layout = true)
      : comm_(comm),
        begin_(kExtent * comm.rank() / comm.size()),
        end_(kExtent * (comm.rank() + 1) / comm.size()),
        differing_bias_(differing_bias),
        layout_(layout) {}

  void init() override {
    x_ = Tensor::empty({end_ - begin_}, DType::f64);
    for (std::int64_t i = begin_; i < end_; ++i) x_.data_as<double>()[i - begin_] = 1.0 + 0.3 * i;
    pair_ = Tensor::empty({2, end_ - begin_}, DType::f32);
    follow();
  }
  [[nodiscard]] std::int64_t work_units() const override { return 1; }
  void step(std::int64_t step, std::int64_t) override {
    next_ = x_.clone();
    for (std::int64_t i = begin_; i < end_; ++i) {
      double& v = next_.data_as<double>()[i - begin_];
      v = 0.5 * v + 0.1 * static_cast<double>(i) + 0.001 * static_cast<double>(step + 1);
    }
  }
  void commit_step() override {
    x_ = next_;
    follow();
    time_ += 0.25;
  }
  [[nodiscard]] StateDict save_state() const override {
    StateDict s;
    s.set("x", x_);
    s.set("pair", pair_);
    s.set("t", time_);
    s.set("bias", differing_bias_ ? static_cast<std::int64_t>(comm_.rank()) : std::int64_t{7});
    s.set("seconds", 0.5 + comm_.rank());  // rank-local: differs, changes nothing
    return s;
  }
  void load_state(const StateDict& s) override {
    ASSERT_EQ(s.tensor("x").shape(), (Shape{end_ - begin_}));
    ASSERT_EQ(s.tensor("pair").shape(), (Shape{2, end_ - begin_}));
    x_ = s.tensor("x").clone();
    pair_ = s.tensor("pair").clone();
    time_ = s.real("t");
  }
  [[nodiscard]] StateLayout state_layout() const override {
    if (!layout_) return {};
    return {.shards = {{"x", 0, begin_, end_, kExtent}, {"pair", 1, begin_, end_, kExtent}},
            .rank_local = {"seconds"}};
  }

  std::vector<double> x() const {
    return {x_.data_as<double>(), x_.data_as<double>() + x_.numel()};
  }
  std::vector<float> pair() const {
    return {pair_.data_as<float>(), pair_.data_as<float>() + pair_.numel()};
  }
  double time() const { return time_; }

 private:
  void follow() {
    for (std::int64_t i = 0; i < end_ - begin_; ++i) {
      pair_.data_as<float>()[i] = static_cast<float>(x_.data_as<double>()[i]);
      pair_.data_as<float>()[end_ - begin_ + i] = static_cast<float>(-x_.data_as<double>()[i]);
    }
  }

  Communicator& comm_;
  std::int64_t begin_, end_;
  bool differing_bias_, layout_;
  Tensor x_, next_, pair_;
  double time_ = 0.0;
};

struct Result {
  std::vector<double> x;    // the whole vector, rank 0's gather
  std::vector<float> pair;  // the whole [2, n], rows concatenated
  double time = 0.0;
  std::vector<std::string> errors;
};

class RunnerElastic : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-elastic-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run(int ranks, std::int64_t steps, const fs::path& dir, bool differing_bias = false,
             bool layout = true) {
    CommOptions options;
    options.timeout_seconds = 20;
    auto comms = make_thread_communicators(ranks, options);
    Result result;
    result.x.assign(kExtent, 0.0);
    result.pair.assign(2 * kExtent, 0.0f);
    result.errors.assign(static_cast<std::size_t>(ranks), "");
    std::vector<std::thread> threads;
    std::mutex mutex;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        ShardedToy toy(*comms[static_cast<std::size_t>(r)], differing_bias, layout);
        RunnerOptions o;
        o.run_dir = dir;
        o.total_steps = steps;
        o.checkpoint_every = 3;
        o.progress = ProgressMode::quiet;
        try {
          Runner runner(toy, o, comms[static_cast<std::size_t>(r)]);
          const RunResult done = runner.run();
          if (done.status != RunStatus::completed) throw std::runtime_error(done.message);
        } catch (const std::exception& e) {
          result.errors[static_cast<std::size_t>(r)] = e.what();
          return;
        }
        const std::int64_t begin = kExtent * r / ranks;
        const std::vector<double> x = toy.x();
        const std::vector<float> pair = toy.pair();
        const std::lock_guard lock(mutex);
        const auto count = static_cast<std::int64_t>(x.size());
        for (std::int64_t i = 0; i < count; ++i) {
          result.x[static_cast<std::size_t>(begin + i)] = x[static_cast<std::size_t>(i)];
          result.pair[static_cast<std::size_t>(begin + i)] = pair[static_cast<std::size_t>(i)];
          result.pair[static_cast<std::size_t>(kExtent + begin + i)] =
              pair[static_cast<std::size_t>(count + i)];
        }
        if (r == 0) result.time = toy.time();
      });
    }
    for (auto& t : threads) t.join();
    return result;
  }

  fs::path dir_;
};

TEST_F(RunnerElastic, ARunResumedOnEveryOtherNumberOfRanksEndsWithTheSingleProcessBits) {
  const Result single = run(1, 12, dir_ / "single");
  for (const std::string& e : single.errors) ASSERT_EQ(e, "");
  for (const int first : {1, 2, 3, 4}) {
    for (const int second : {1, 2, 3, 4}) {
      if (second == first) continue;
      SCOPED_TRACE(std::to_string(first) + " -> " + std::to_string(second) + " ranks");
      const fs::path dir = dir_ / (std::to_string(first) + "-" + std::to_string(second));
      for (const std::string& e : run(first, 7, dir).errors) ASSERT_EQ(e, "");
      const Result resumed = run(second, 12, dir);
      for (const std::string& e : resumed.errors) ASSERT_EQ(e, "");
      EXPECT_EQ(resumed.x, single.x);
      EXPECT_EQ(resumed.pair, single.pair);
      EXPECT_EQ(resumed.time, single.time);
      std::ifstream events(dir / "events.jsonl");
      const std::string log{std::istreambuf_iterator<char>(events), {}};
      EXPECT_NE(log.find("\"resharded\""), std::string::npos) << log;
    }
  }
}

TEST_F(RunnerElastic, AnEntryThatDiffersBetweenRanksIsRefusedOnEveryRankBeforeAnythingIsWritten) {
  // An entry that is neither sharded nor rank-local must be alike on every rank: the ranks'
  // state digests tell at the start, before a checkpoint could hold the difference.
  for (const std::string& e : run(3, 4, dir_, /*differing_bias=*/true).errors) {
    EXPECT_NE(e.find("initial states of the ranks differ"), std::string::npos) << e;
    EXPECT_NE(e.find("rank_local"), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(dir_ / "checkpoints" / "step-0"));
}

TEST_F(RunnerElastic, ACheckpointWithoutAShardTableIsRefusedOnAnotherNumberOfRanks) {
  for (const std::string& e : run(2, 4, dir_, false, /*layout=*/false).errors) ASSERT_EQ(e, "");
  for (const std::string& e : run(3, 8, dir_).errors) {
    EXPECT_NE(e.find("holds no shard table"), std::string::npos) << e;
  }
  // Without a layout a sharded state keeps refusing another world size, as before.
  for (const std::string& e : run(3, 8, dir_, false, false).errors) {
    EXPECT_NE(e.find("written by 2 rank(s)"), std::string::npos) << e;
  }
}

// A [kRows, kColumns] field split over the ranks as 2 x 2 boxes (4 ranks), as slabs of rows, or
// as one box on 1 rank; f <- 0.5 f + 0.01 (global index) + 0.001 step on each rank's part.
constexpr std::int64_t kRows = 7;
constexpr std::int64_t kColumns = 9;

enum class Split { boxes, slabs };

io::TensorShard field_shard(Split split, int rank, int ranks) {
  if (split == Split::slabs) {
    return {"f", 0, kRows * rank / ranks, kRows * (rank + 1) / ranks, kRows};
  }
  // 2 x 2 boxes on 4 ranks (rows 0..3 | 3..7, columns 0..5 | 5..9); one box on 1 rank.
  const int rows = ranks == 4 ? 2 : 1;
  const int columns = ranks / rows;
  const int i = rank / columns;
  const int j = rank % columns;
  const std::int64_t r0 = i == 0 ? 0 : 3;
  const std::int64_t r1 = rows == 1 || i == 1 ? kRows : 3;
  const std::int64_t c0 = j == 0 ? 0 : 5;
  const std::int64_t c1 = columns == 1 || j == 1 ? kColumns : 5;
  return {"f", 0, r0, r1, kRows, {{1, c0, c1, kColumns}}};
}

class BoxToy final : public Workload {
 public:
  BoxToy(Communicator& comm, Split split)
      : shard_(field_shard(split, comm.rank(), comm.size())),
        c0_(shard_.more.empty() ? 0 : shard_.more[0].begin),
        c1_(shard_.more.empty() ? kColumns : shard_.more[0].end) {}

  void init() override {
    f_ = Tensor::empty({shard_.end - shard_.begin, c1_ - c0_}, DType::f64);
    each([&](std::int64_t i, std::int64_t j, double& v) { v = 1.0 + 0.3 * i - 0.2 * j; });
  }
  [[nodiscard]] std::int64_t work_units() const override { return 1; }
  void step(std::int64_t step, std::int64_t) override {
    next_ = f_.clone();
    const double* in = f_.data_as<double>();
    double* out = next_.data_as<double>();
    for (std::int64_t k = 0; k < f_.numel(); ++k) {
      const std::int64_t i = shard_.begin + k / (c1_ - c0_);
      const std::int64_t j = c0_ + k % (c1_ - c0_);
      out[k] = 0.5 * in[k] + 0.01 * static_cast<double>(i * kColumns + j) +
               0.001 * static_cast<double>(step + 1);
    }
  }
  void commit_step() override { f_ = next_; }
  [[nodiscard]] StateDict save_state() const override {
    StateDict s;
    s.set("f", f_);
    return s;
  }
  void load_state(const StateDict& s) override {
    ASSERT_EQ(s.tensor("f").shape(), (Shape{shard_.end - shard_.begin, c1_ - c0_}));
    f_ = s.tensor("f").clone();
  }
  [[nodiscard]] StateLayout state_layout() const override { return {.shards = {shard_}}; }

  // Calls visit(global row, global column, value) for every element this rank holds.
  template <class Visit>
  void each(Visit&& visit) {
    double* v = f_.data_as<double>();
    for (std::int64_t i = shard_.begin; i < shard_.end; ++i) {
      for (std::int64_t j = c0_; j < c1_; ++j) visit(i, j, *v++);
    }
  }

 private:
  io::TensorShard shard_;
  std::int64_t c0_, c1_;
  Tensor f_, next_;
};

struct FieldResult {
  std::vector<double> f = std::vector<double>(kRows * kColumns, 0.0);  // the whole field
  std::vector<std::string> errors;
};

class RunnerElasticBoxes : public RunnerElastic {
 protected:
  FieldResult run_field(int ranks, Split split, std::int64_t steps, const fs::path& dir) {
    CommOptions options;
    options.timeout_seconds = 20;
    auto comms = make_thread_communicators(ranks, options);
    FieldResult result;
    result.errors.assign(static_cast<std::size_t>(ranks), "");
    std::vector<std::thread> threads;
    std::mutex mutex;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        BoxToy toy(*comms[static_cast<std::size_t>(r)], split);
        RunnerOptions o;
        o.run_dir = dir;
        o.total_steps = steps;
        o.checkpoint_every = 3;
        o.progress = ProgressMode::quiet;
        try {
          Runner runner(toy, o, comms[static_cast<std::size_t>(r)]);
          const RunResult done = runner.run();
          if (done.status != RunStatus::completed) throw std::runtime_error(done.message);
        } catch (const std::exception& e) {
          result.errors[static_cast<std::size_t>(r)] = e.what();
          return;
        }
        const std::lock_guard lock(mutex);
        toy.each([&](std::int64_t i, std::int64_t j, double& v) {
          result.f[static_cast<std::size_t>(i * kColumns + j)] = v;
        });
      });
    }
    for (auto& t : threads) t.join();
    return result;
  }
};

TEST_F(RunnerElasticBoxes, BoxesResumeAsSlabsAndSlabsAsBoxesWithTheSingleProcessBits) {
  const FieldResult single = run_field(1, Split::slabs, 12, dir_ / "single");
  for (const std::string& e : single.errors) ASSERT_EQ(e, "");
  struct Case {
    int first;
    Split first_split;
    int second;
    Split second_split;
  };
  for (const Case c :
       {Case{4, Split::boxes, 2, Split::slabs}, Case{4, Split::boxes, 1, Split::slabs},
        Case{4, Split::boxes, 3, Split::slabs}, Case{2, Split::slabs, 4, Split::boxes},
        Case{1, Split::slabs, 4, Split::boxes}, Case{4, Split::slabs, 4, Split::boxes},
        Case{4, Split::boxes, 4, Split::slabs}, Case{4, Split::boxes, 1, Split::boxes},
        Case{1, Split::boxes, 4, Split::boxes}}) {
    const auto name = [](int ranks, Split split) {
      return std::to_string(ranks) + (split == Split::boxes ? "-boxes" : "-slabs");
    };
    SCOPED_TRACE(name(c.first, c.first_split) + " -> " + name(c.second, c.second_split));
    const fs::path dir =
        dir_ / (name(c.first, c.first_split) + "-" + name(c.second, c.second_split));
    for (const std::string& e : run_field(c.first, c.first_split, 7, dir).errors) {
      ASSERT_EQ(e, "");
    }
    const FieldResult resumed = run_field(c.second, c.second_split, 12, dir);
    for (const std::string& e : resumed.errors) ASSERT_EQ(e, "");
    EXPECT_EQ(resumed.f, single.f);
    std::ifstream events(dir / "events.jsonl");
    const std::string log{std::istreambuf_iterator<char>(events), {}};
    EXPECT_NE(log.find("\"resumed\""), std::string::npos) << log;
    if (c.first != c.second) EXPECT_NE(log.find("\"resharded\""), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace tenax::runtime
