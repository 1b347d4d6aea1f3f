// Grid and kernels of your own: every boundary kind on every axis, ghost widths 1 and 2, 1-4
// ranks with uneven splits (a rank with one row among them), against a scalar reference that
// applies the boundary rules to the whole grid itself; gather/scatter, field files, the
// StencilSimulation's micro-batches, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/grid.hpp"
#include "tenax/runtime/stencil.hpp"
#include "thread_ranks.hpp"

namespace tenax::runtime {
namespace {

using testing::on_thread_ranks;

// A stencil that reads every offset within the ghost width, each with its own weight, so a wrong
// neighbour anywhere (a wrong wrap, mirror or value) changes the result.
struct WeightedSum {
  int dims;
  int g;
  template <class Field>
  TENAX_HD void operator()(const Field& u, const Field& w, double& out, double& out2) const {
    double sum = 0.0;
    double weight = 1.0;
    for (int a = -g; a <= g; ++a) {
      if (dims == 1) {
        sum += weight * u(a);
        weight += 0.125;
        continue;
      }
      for (int b = -g; b <= g; ++b) {
        if (dims == 2) {
          sum += weight * u(a, b);
          weight += 0.125;
          continue;
        }
        for (int c = -g; c <= g; ++c) {
          sum += weight * u(a, b, c);
          weight += 0.125;
        }
      }
    }
    out = sum;
    out2 = w(dims == 1 ? 0 : 0) * 2.0;  // a point kernel on the second input
  }
};

// The value of point `index` (global, row-major) of the test field.
double value_at(std::int64_t index) { return std::sin(0.37 * static_cast<double>(index)) + 2.0; }

// The reference: the boundary rule applied to global indices, one point at a time.
std::vector<double> reference(const std::vector<std::int64_t>& n, const std::vector<Boundary>& b,
                              int g) {
  const int dims = static_cast<int>(n.size());
  std::int64_t total = 1;
  for (const std::int64_t e : n) total *= e;
  std::vector<double> out(static_cast<std::size_t>(total));
  std::vector<std::int64_t> e = n;
  e.resize(3, 1);
  // The value read at (possibly outside) global point p, or nothing read yet: rules axis by axis.
  const auto read = [&](std::int64_t p0, std::int64_t p1, std::int64_t p2) {
    std::int64_t p[3] = {p0, p1, p2};
    for (int axis = 0; axis < dims; ++axis) {
      std::int64_t& j = p[axis];
      const std::int64_t m = e[static_cast<std::size_t>(axis)];
      if (j >= 0 && j < m) continue;
      switch (b[static_cast<std::size_t>(axis)].kind) {
        case BoundaryKind::periodic:
          j = ((j % m) + m) % m;
          break;
        case BoundaryKind::neumann:
          j = j < 0 ? -j - 1 : 2 * m - 1 - j;
          break;
        case BoundaryKind::dirichlet:
          return b[static_cast<std::size_t>(axis)].value;
      }
    }
    return value_at((p[0] * e[1] + p[1]) * e[2] + p[2]);
  };
  for (std::int64_t i0 = 0; i0 < e[0]; ++i0) {
    for (std::int64_t i1 = 0; i1 < e[1]; ++i1) {
      for (std::int64_t i2 = 0; i2 < e[2]; ++i2) {
        double sum = 0.0;
        double weight = 1.0;
        for (int a = -g; a <= g; ++a) {
          if (dims == 1) {
            sum += weight * read(i0 + a, 0, 0);
            weight += 0.125;
            continue;
          }
          for (int c1 = -g; c1 <= g; ++c1) {
            if (dims == 2) {
              sum += weight * read(i0 + a, i1 + c1, 0);
              weight += 0.125;
              continue;
            }
            for (int c2 = -g; c2 <= g; ++c2) {
              sum += weight * read(i0 + a, i1 + c1, i2 + c2);
              weight += 0.125;
            }
          }
        }
        out[static_cast<std::size_t>((i0 * e[1] + i1) * e[2] + i2)] = sum;
      }
    }
  }
  return out;
}

// The kernel over the grid on `ranks` thread ranks, gathered on rank 0.
std::vector<double> on_grid(int ranks, const GridOptions& options) {
  std::vector<double> result;
  const auto errors = on_thread_ranks(ranks, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, options);
    const Tensor u = grid.make_field(DType::f64);
    const Tensor w = grid.make_field(DType::f64);
    const Tensor out = grid.make_field(DType::f64);
    const Tensor out2 = grid.make_field(DType::f64);
    const Tensor mine = grid.owned(u);
    const std::int64_t per_row = mine.numel() / grid.rows();
    for (std::int64_t i = 0; i < mine.numel(); ++i) {
      mine.data_as<double>()[i] = value_at(grid.first_row() * per_row + i);
    }
    ops::copy(grid.owned(w), mine);
    grid.exchange({u, w});
    apply_stencil<double>(grid, WeightedSum{grid.dims(), grid.ghost_width()}, {u, w}, {out, out2});
    // The point kernel's second output: twice the input, on every owned point.
    const Tensor twice = grid.owned(out2);
    for (std::int64_t i = 0; i < mine.numel(); ++i) {
      ASSERT_EQ(twice.data_as<double>()[i], 2.0 * mine.data_as<double>()[i]);
    }
    const Tensor whole = grid.gather(out);
    if (rank == 0) {
      result.assign(whole.data_as<double>(), whole.data_as<double>() + whole.numel());
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return result;
}

TEST(Grid, EveryBoundaryOnEveryAxisGhostWidthsAndRanksMatchTheReference) {
  const std::vector<Boundary> kinds = {Boundary::periodic(), Boundary::dirichlet(0.75),
                                       Boundary::neumann()};
  // Uneven splits: 7 rows on 4 ranks is 1, 2, 2, 2 (a rank with one row, whose ghost width 2
  // reaches two ranks away).
  const std::vector<std::vector<std::int64_t>> shapes = {{7}, {7, 6}, {7, 5, 4}};
  int cases = 0;
  for (const auto& extents : shapes) {
    const int dims = static_cast<int>(extents.size());
    for (std::size_t first = 0; first < kinds.size(); ++first) {
      // Axis a gets kind (first + a) mod 3: over the three values of `first`, every kind meets
      // every axis.
      std::vector<Boundary> boundaries;
      for (int axis = 0; axis < dims; ++axis) {
        boundaries.push_back(kinds[(first + static_cast<std::size_t>(axis)) % kinds.size()]);
      }
      for (const int g : {1, 2}) {
        const std::vector<double> expected = reference(extents, boundaries, g);
        for (const int ranks : {1, 2, 3, 4}) {
          SCOPED_TRACE("dims " + std::to_string(dims) + ", axis 0 " + to_string(boundaries[0]) +
                       ", ghost " + std::to_string(g) + ", " + std::to_string(ranks) + " ranks");
          const std::vector<double> got =
              on_grid(ranks, {.extents = extents, .boundaries = boundaries, .ghost_width = g});
          ASSERT_EQ(got.size(), expected.size());
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], expected[i]) << "point " << i;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 3 * 2 * 4);
}

TEST(Grid, LongRowsRunTheirInteriorBranchFreeWithTheSameBits) {
  // Rows long enough for the interior run of the CPU sweep (and its AVX2 copy).
  for (const Boundary b : {Boundary::periodic(), Boundary::neumann(), Boundary::dirichlet(-1)}) {
    const std::vector<std::int64_t> extents = {9, 70};
    const std::vector<double> expected = reference(extents, {b, b}, 2);
    EXPECT_EQ(on_grid(3, {.extents = extents, .boundaries = {b}, .ghost_width = 2}), expected)
        << to_string(b);
  }
}

// A kernel that takes its point: a source that varies in space, by the global index.
struct WithPoint {
  template <class Field>
  TENAX_HD void operator()(const kernels::GridPoint& p, const Field& u, double& out) const {
    out = u(0, 0, 0) + 1000.0 * static_cast<double>(p[0]) + 10.0 * static_cast<double>(p[1]) +
          0.5 * static_cast<double>(p[2]) + 0.25 * (u(0, 0, -1) + u(0, 0, 1));
  }
};

TEST(Grid, AKernelThatTakesItsPointGetsTheGlobalIndexOnAnyNumberOfRanks) {
  // 3-D, long enough lines for the interior run (its vectorised loop passes the index too).
  const std::vector<std::int64_t> extents = {7, 3, 40};
  const Boundary b = Boundary::neumann();
  for (const int ranks : {1, 2, 3}) {
    std::vector<double> got;
    const auto errors = on_thread_ranks(ranks, 30, [&](int rank, Communicator& comm) {
      const Grid grid(comm, {.extents = extents, .boundaries = {b}});
      const Tensor u = grid.make_field(DType::f64);
      const Tensor out = grid.make_field(DType::f64);
      const Tensor mine = grid.owned(u);
      const std::int64_t per_row = 3 * 40;
      for (std::int64_t i = 0; i < mine.numel(); ++i) {
        mine.data_as<double>()[i] = value_at(grid.first_row() * per_row + i);
      }
      grid.exchange({u});
      apply_stencil<double>(grid, WithPoint{}, {u}, {out});
      const Tensor whole = grid.gather(out);
      if (rank == 0) got.assign(whole.data_as<double>(), whole.data_as<double>() + whole.numel());
    });
    for (const std::string& error : errors) EXPECT_EQ(error, "");
    ASSERT_EQ(got.size(), 7u * 3 * 40);
    for (std::int64_t i0 = 0; i0 < 7; ++i0) {
      for (std::int64_t i1 = 0; i1 < 3; ++i1) {
        for (std::int64_t i2 = 0; i2 < 40; ++i2) {
          const auto at = [&](std::int64_t x) {  // Neumann along the last axis
            x = x < 0 ? -1 - x : x >= 40 ? 79 - x : x;
            return value_at((i0 * 3 + i1) * 40 + x);
          };
          const double expected = at(i2) + 1000.0 * static_cast<double>(i0) +
                                  10.0 * static_cast<double>(i1) + 0.5 * static_cast<double>(i2) +
                                  0.25 * (at(i2 - 1) + at(i2 + 1));
          ASSERT_EQ(got[static_cast<std::size_t>((i0 * 3 + i1) * 40 + i2)], expected)
              << ranks << " ranks, point (" << i0 << ", " << i1 << ", " << i2 << ")";
        }
      }
    }
  }
}

TEST(Grid, TheLargestValueIsEveryRanksAndANanOnOneRankIsEverybodysNan) {
  for (const bool poison : {false, true}) {
    const auto errors = on_thread_ranks(3, 30, [&](int rank, Communicator& comm) {
      const Grid grid(comm, {.extents = {7, 4}});
      const Tensor field = grid.make_field(DType::f64);
      const Tensor mine = grid.owned(field);
      for (std::int64_t i = 0; i < mine.numel(); ++i) {
        mine.data_as<double>()[i] = static_cast<double>(grid.first_row() * 4 + i);
      }
      if (poison && rank == 1) mine.data_as<double>()[0] = std::nan("");
      const double largest = grid.max(field);
      if (poison) {
        EXPECT_TRUE(std::isnan(largest)) << largest;
      } else {
        EXPECT_EQ(largest, 27.0);
      }
    });
    for (const std::string& error : errors) EXPECT_EQ(error, "");
  }
}

TEST(Grid, GatherScatterAndFieldFilesRoundTripOverAnyNumberOfRanks) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tenax-grid-fields-" + std::to_string(::getpid()) + ".h5");
  std::vector<double> whole(11 * 3);
  for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = value_at(static_cast<std::int64_t>(i));
  // Written from 3 ranks...
  auto errors = on_thread_ranks(3, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, {.extents = {11, 3}});
    const Tensor field = grid.make_field(DType::f64);
    Tensor all;
    if (rank == 0) {
      all = Tensor::empty({11, 3}, DType::f64);
      std::copy(whole.begin(), whole.end(), all.data_as<double>());
    }
    grid.scatter(all, field);
    const Tensor back = grid.gather(field);
    if (rank == 0) {
      EXPECT_EQ(std::vector<double>(back.data_as<double>(), back.data_as<double>() + 33), whole);
    }
    write_fields(grid, path, {{"u", field}}, {{"t", 2.5}});
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  // ... read on 2.
  errors = on_thread_ranks(2, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, {.extents = {11, 3}});
    const Tensor field = grid.make_field(DType::f64);
    read_fields(grid, path, {{"u", field}});
    const Tensor back = grid.gather(field);
    if (rank == 0) {
      EXPECT_EQ(std::vector<double>(back.data_as<double>(), back.data_as<double>() + 33), whole);
    }
    // A dataset the file does not have: every rank fails, rank 0 with the reason.
    try {
      read_fields(grid, path, {{"v", field}});
      ADD_FAILURE() << "a missing dataset was read";
    } catch (const IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(rank == 0 ? "has no dataset 'v'" : "rank 0 could not read"),
                std::string::npos)
          << what;
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  std::filesystem::remove(path);
}

TEST(Grid, BadOptionsAreRefusedNamingTheValueAndTheFix) {
  SingleRankCommunicator comm;
  const auto refused = [&](const GridOptions& options, const std::string& words) {
    try {
      const Grid grid(comm, options);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({.extents = {}}, "a grid of 0 axes");
  refused({.extents = {2, 2, 2, 2}}, "a grid of 4 axes");
  refused({.extents = {4, 0}}, "axis 1 has 0 points");
  refused({.extents = {4, -3}}, "axis 1 has -3 points");
  refused({.extents = {4, 4}, .ghost_width = 9}, "ghost width 9");
  refused({.extents = {4, 4}, .ghost_width = -1}, "ghost width -1");
  refused({.extents = {4, 2}, .ghost_width = 3}, "ghost width 3 on axis 1 of 2 points");
  refused({.extents = {4, 4}, .boundaries = {Boundary::dirichlet(std::nan(""))}},
          "a Dirichlet boundary of value nan");
  refused({.extents = {4, 4},
           .boundaries = {Boundary::periodic(), Boundary::periodic(), Boundary::periodic()}},
          "3 boundaries for a grid of 2 axes");
  refused({.extents = {std::int64_t{1} << 31, std::int64_t{1} << 31}}, "more than 2^59 points");
  // More ranks than rows.
  const auto errors = on_thread_ranks(3, 10, [&](int, Communicator& c) {
    const Grid grid(c, {.extents = {2, 8}});
  });
  for (const std::string& error : errors) {
    EXPECT_NE(error.find("2 rows along axis 0 on 3 ranks"), std::string::npos) << error;
  }
}

TEST(Grid, RanksGivenDifferentGridsAreRefusedOnEveryRank) {
  const auto errors = on_thread_ranks(2, 10, [&](int rank, Communicator& c) {
    const Grid grid(c, {.extents = {8, rank == 0 ? 8 : 9}});
  });
  for (const std::string& error : errors) {
    EXPECT_NE(error.find("rank 1 was given another grid than rank 0"), std::string::npos) << error;
  }
}

TEST(Grid, KernelsRefuseFieldsOfAnotherShapeAndOutputsThatAreInputs) {
  SingleRankCommunicator comm;
  const Grid grid(comm, {.extents = {6, 5}});
  const Tensor u = grid.make_field(DType::f64);
  const Tensor out = grid.make_field(DType::f64);
  const Tensor wrong = Tensor::empty({6, 5}, DType::f64);
  const auto copy = [](const auto& in, auto& o) { o = in(0, 0); };
  EXPECT_THROW(apply_stencil<double>(grid, copy, {wrong}, {out}), UsageError);
  EXPECT_THROW(apply_stencil<double>(grid, copy, {u}, {u}), UsageError);
  EXPECT_THROW(apply_stencil<double>(grid, copy, {u}, {out}, 2, 7), UsageError);
  EXPECT_THROW(apply_stencil<float>(grid, copy, {u}, {out}), UsageError);  // dtype
  EXPECT_THROW((void)grid.boundary(2), UsageError);
}

// One explicit diffusion step with a reaction, on two fields: the Gray-Scott shape.
struct Reaction {
  template <class Field>
  TENAX_HD void operator()(const Field& u, const Field& v, double& un, double& vn) const {
    const double lu = (u(-1, 0) + u(1, 0)) + (u(0, -1) + u(0, 1)) - 4.0 * u(0, 0);
    un = u(0, 0) + 0.1 * lu - 0.5 * u(0, 0) * v(0, 0);
    vn = v(0, 0) + 0.05 * (v(-1, 0) + v(1, 0) - 2.0 * v(0, 0)) + 0.25 * u(0, 0);
  }
};

// `steps` steps of the simulation at `micro_batch` rows on `ranks` thread ranks; u and v gathered.
std::vector<double> simulate(int ranks, std::int64_t micro_batch, int steps,
                             const std::vector<Boundary>& boundaries) {
  std::vector<double> result;
  const auto errors = on_thread_ranks(ranks, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, {.extents = {13, 9}, .boundaries = boundaries});
    StencilSimulation<Reaction, 2> sim(grid, Device::cpu(), {"u", "v"}, Reaction{});
    sim.set_initial([](const std::int64_t* p, double* values) {
      values[0] = value_at(p[0] * 9 + p[1]);
      values[1] = 1.0 / (1.0 + static_cast<double>(p[0] + p[1]));
    });
    sim.init();
    for (int s = 0; s < steps; ++s) {
      sim.step(s, micro_batch);
      sim.commit_step();
    }
    EXPECT_EQ(sim.steps(), steps);
    const Tensor u = grid.gather(sim.field("u"));
    const Tensor v = grid.gather(sim.field(1));
    if (rank == 0) {
      result.assign(u.data_as<double>(), u.data_as<double>() + u.numel());
      result.insert(result.end(), v.data_as<double>(), v.data_as<double>() + v.numel());
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return result;
}

TEST(StencilSimulation, MicroBatchesAndRanksGiveTheSameBits) {
  for (const std::vector<Boundary>& b :
       {std::vector<Boundary>{Boundary::periodic()},
        std::vector<Boundary>{Boundary::dirichlet(0.5), Boundary::neumann()}}) {
    SCOPED_TRACE(to_string(b[0]));
    const std::vector<double> expected = simulate(1, 1000, 7, b);
    ASSERT_EQ(expected.size(), 2u * 13 * 9);
    for (const int ranks : {1, 2, 4}) {
      for (const std::int64_t micro_batch : {1000, 3, 2, 1}) {
        EXPECT_EQ(simulate(ranks, micro_batch, 7, b), expected)
            << ranks << " ranks, micro-batch " << micro_batch;
      }
    }
  }
}

TEST(StencilSimulation, StateIsTheOwnedRowsSplitAlongAxisZero) {
  const auto errors = on_thread_ranks(2, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, {.extents = {5, 4}});
    StencilSimulation<Reaction, 2> sim(grid, Device::cpu(), {"u", "v"}, Reaction{});
    sim.init();
    const StateLayout layout = sim.state_layout();
    ASSERT_EQ(layout.shards.size(), 2u);
    EXPECT_EQ(layout.shards[0], (io::TensorShard{"u", 0, rank == 0 ? 0 : 2, rank == 0 ? 2 : 5, 5}));
    const StateDict state = sim.save_state();
    EXPECT_EQ(state.tensor("v").shape(), (Shape{rank == 0 ? 2 : 3, 4}));
    EXPECT_EQ(state.integer("steps"), 0);
    // A state of another grid is refused, naming it.
    StateDict wrong = state;
    wrong.set("u", Tensor::empty({7, 4}, DType::f64));
    try {
      sim.load_state(wrong);
      ADD_FAILURE() << "a wrong state was loaded";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("the checkpoint holds 'u' as f64[7, 4]"),
                std::string::npos)
          << e.what();
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace tenax::runtime
