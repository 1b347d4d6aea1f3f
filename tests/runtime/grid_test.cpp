// Grid and kernels of your own: every boundary kind on every axis, ghost widths 1 and 2, 1-4
// ranks with uneven splits (a rank with one row among them), against a scalar reference that
// applies the boundary rules to the whole grid itself; gather/scatter, field files, the
// StencilSimulation's micro-batches, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/grid.hpp"
#include "tenax/runtime/runner.hpp"
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

// Sets every owned point of `field` to value(its global row-major index), whatever the split.
template <class Value>
void fill_owned(const Grid& grid, const Tensor& field, Value value) {
  const Tensor mine = grid.owned(field);
  std::vector<std::int64_t> n = grid.extents();
  n.resize(3, 1);
  const Shape owned = grid.owned_shape();
  const std::int64_t c1 = grid.dims() > 1 ? owned[1] : 1;
  const std::int64_t c2 = grid.dims() > 2 ? owned[2] : 1;
  const std::int64_t f1 = grid.dims() > 1 ? grid.first_index(1) : 0;
  const std::int64_t f2 = grid.dims() > 2 ? grid.first_index(2) : 0;
  for (std::int64_t i = 0; i < mine.numel(); ++i) {
    const std::int64_t i0 = i / (c1 * c2);
    const std::int64_t i1 = i / c2 % c1;
    const std::int64_t i2 = i % c2;
    mine.data_as<double>()[i] = value(((grid.first_row() + i0) * n[1] + f1 + i1) * n[2] + f2 + i2);
  }
}

// The reference: the boundary rule applied to global indices, one point at a time, the highest
// axis first (so a corner between two Dirichlet boundaries reads the higher axis' value).
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
    for (int axis = dims - 1; axis >= 0; --axis) {
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
    fill_owned(grid, u, value_at);
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
        // 1-4 ranks split as the grid chooses, then blocks over axes 0 and 1 (6 columns on 4
        // ranks is 1, 2, 1, 2: a rank with one column, whose ghost width 2 reaches two ranks
        // away; on 2 x 2 and 3 x 2 every rank's corners come from a diagonal neighbour).
        std::vector<std::vector<int>> splits = {{}, {}, {}, {}};
        if (dims > 1) {
          for (std::vector<int> split : {std::vector<int>{1, 2}, {2, 2}, {1, 4}, {3, 2}}) {
            split.resize(static_cast<std::size_t>(dims), 1);
            splits.push_back(split);
          }
        }
        if (dims > 2) {  // axis 2 split too (4 points on 3 ranks: 1, 1, 2), and cubes
          for (const std::vector<int>& split :
               {std::vector<int>{1, 1, 3}, {1, 2, 2}, {2, 1, 2}, {2, 2, 2}}) {
            splits.push_back(split);
          }
        }
        for (std::size_t k = 0; k < splits.size(); ++k) {
          const std::vector<int>& split = splits[k];
          int ranks = split.empty() ? static_cast<int>(k) + 1 : 1;
          std::string named;
          for (const int p : split) {
            ranks *= p;
            named += (named.empty() ? ", split " : " x ") + std::to_string(p);
          }
          SCOPED_TRACE("dims " + std::to_string(dims) + ", axis 0 " + to_string(boundaries[0]) +
                       ", ghost " + std::to_string(g) + ", " + std::to_string(ranks) + " ranks" +
                       named);
          const std::vector<double> got = on_grid(
              ranks,
              {.extents = extents, .boundaries = boundaries, .ghost_width = g, .ranks = split});
          ASSERT_EQ(got.size(), expected.size());
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], expected[i]) << "point " << i;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 3 * 2 * 4 + 2 * 3 * 2 * 4 + 3 * 2 * 4);
}

TEST(Grid, CornersBetweenDirichletBoundariesReadTheHigherAxisOnEverySplit) {
  // A Dirichlet boundary of its own value on every axis: a diagonal neighbour outside two of them
  // reads the higher axis' value, however the grid is split (the ghost rows, the ghost columns
  // and the neighbourhood agree).
  for (const std::vector<std::int64_t>& extents :
       {std::vector<std::int64_t>{6, 5}, std::vector<std::int64_t>{5, 6, 4}}) {
    const std::vector<Boundary> boundaries = {Boundary::dirichlet(0.5), Boundary::dirichlet(-2),
                                              Boundary::dirichlet(7)};
    const std::vector<Boundary> mine(
        boundaries.begin(), boundaries.begin() + static_cast<std::ptrdiff_t>(extents.size()));
    for (const int g : {1, 2}) {
      const std::vector<double> expected = reference(extents, mine, g);
      for (std::vector<int> split : {std::vector<int>{1, 1, 1},
                                     {2, 1, 1},
                                     {1, 2, 1},
                                     {2, 2, 1},
                                     {1, 3, 1},
                                     {1, 1, 2},
                                     {2, 2, 2},
                                     {1, 2, 3}}) {
        if (extents.size() == 2 && split[2] > 1) continue;
        split.resize(extents.size());
        SCOPED_TRACE("dims " + std::to_string(extents.size()) + ", ghost " + std::to_string(g) +
                     ", split " + std::to_string(split[0]) + " x " + std::to_string(split[1]) +
                     (extents.size() > 2 ? " x " + std::to_string(split[2]) : std::string()));
        int ranks = 1;
        for (const int p : split) ranks *= p;
        EXPECT_EQ(
            on_grid(ranks,
                    {.extents = extents, .boundaries = mine, .ghost_width = g, .ranks = split}),
            expected);
      }
    }
  }
}

TEST(Grid, TheSplitIsChosenToExchangeTheFewestGhostsAndGivenOnesAreKept) {
  const auto split_of = [](int ranks, const GridOptions& options) {
    std::vector<int> got;
    std::string text;
    const auto errors = on_thread_ranks(ranks, 10, [&](int rank, Communicator& comm) {
      const Grid grid(comm, options);
      if (rank == 0) {
        for (int axis = 0; axis < grid.dims(); ++axis) got.push_back(grid.ranks_along(axis));
        text = grid.describe();
      }
    });
    for (const std::string& error : errors) EXPECT_EQ(error, "");
    return std::make_pair(got, text);
  };
  // A square on 4 ranks: slabs and 2 x 2 exchange alike; slabs win the tie (no packing).
  EXPECT_EQ(split_of(4, {.extents = {64, 64}}).first, (std::vector<int>{4, 1}));
  // Wide and flat: split the long axis.
  EXPECT_EQ(split_of(4, {.extents = {8, 1024}}).first, (std::vector<int>{1, 4}));
  // Many ranks on a square: blocks.
  const auto [blocks, text] = split_of(9, {.extents = {90, 90}});
  EXPECT_EQ(blocks, (std::vector<int>{3, 3}));
  EXPECT_NE(text.find("split 3 x 3 over 9 ranks"), std::string::npos) << text;
  // 3-D: a cube on 27 ranks is cut into 27 cubes; on 8, 4 x 2 x 1 has the faces of 2 x 2 x 2 and
  // fewer corners; a long thin bar is cut across its length; a thin slab across its breadth.
  EXPECT_EQ(split_of(27, {.extents = {27, 27, 27}}).first, (std::vector<int>{3, 3, 3}));
  EXPECT_EQ(split_of(8, {.extents = {32, 32, 32}}).first, (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(split_of(4, {.extents = {4, 4, 64}}).first, (std::vector<int>{1, 1, 4}));
  EXPECT_EQ(split_of(4, {.extents = {2, 64, 64}}).first, (std::vector<int>{1, 4, 1}));
  // Given: kept.
  EXPECT_EQ(split_of(4, {.extents = {64, 64}, .ranks = {1, 4}}).first, (std::vector<int>{1, 4}));
  EXPECT_EQ(split_of(2, {.extents = {7}}).first, (std::vector<int>{2}));
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

TEST(Grid, FieldsPastThePrefetchSizeGiveTheSameBits) {
  // Two inputs and two outputs of 6 x 600000 stored points: 115 MB, past the size above which the
  // CPU sweep's interior runs ask for the lines ahead of them.
  const std::vector<std::int64_t> extents = {4, 600000};
  ASSERT_GT(6.0 * 600000 * 4 * sizeof(double), kernels::detail::kPrefetchAboveBytes);
  const Boundary b = Boundary::periodic();
  const std::vector<double> expected = reference(extents, {b, b}, 1);
  for (const int ranks : {1, 2}) {
    EXPECT_EQ(on_grid(ranks, {.extents = extents, .boundaries = {b}}), expected) << ranks;
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
  // 1-3 ranks as the grid splits them, then blocks along axes 1 and 2 (the index of each).
  const std::vector<std::vector<int>> splits = {{}, {}, {}, {1, 3, 1}, {1, 1, 2}, {2, 1, 2}};
  for (std::size_t k = 0; k < splits.size(); ++k) {
    const std::vector<int>& split = splits[k];
    const int ranks = split.empty() ? static_cast<int>(k) + 1 : split[0] * split[1] * split[2];
    std::vector<double> got;
    const auto errors = on_thread_ranks(ranks, 30, [&](int rank, Communicator& comm) {
      const Grid grid(comm, {.extents = extents, .boundaries = {b}, .ranks = split});
      const Tensor u = grid.make_field(DType::f64);
      const Tensor out = grid.make_field(DType::f64);
      fill_owned(grid, u, value_at);
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

TEST(Grid, BlocksGatherScatterAndRoundTripFieldFilesOnAnotherSplit) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tenax-grid-blocks-" + std::to_string(::getpid()) + ".h5");
  std::vector<double> whole(11 * 7 * 2);
  for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = value_at(static_cast<std::int64_t>(i));
  const auto round_trip = [&](const std::vector<int>& split, bool write) {
    const auto errors =
        on_thread_ranks(split[0] * split[1] * split[2], 30, [&](int rank, Communicator& comm) {
          const Grid grid(comm, {.extents = {11, 7, 2}, .ranks = split});
          const Tensor field = grid.make_field(DType::f64);
          if (write) {
            Tensor all;
            if (rank == 0) {
              all = Tensor::empty({11, 7, 2}, DType::f64);
              std::copy(whole.begin(), whole.end(), all.data_as<double>());
            }
            grid.scatter(all, field);
            // Every rank holds its block's global points.
            const Tensor mine = grid.owned(field);
            const Tensor expected = grid.make_field(DType::f64);
            fill_owned(grid, expected, value_at);
            EXPECT_EQ(std::memcmp(mine.data(), grid.owned(expected).data(), mine.nbytes()), 0);
            write_fields(grid, path, {{"u", field}});
          } else {
            read_fields(grid, path, {{"u", field}});
          }
          const Tensor back = grid.gather(field);
          if (rank == 0) {
            EXPECT_EQ(
                std::vector<double>(back.data_as<double>(), back.data_as<double>() + back.numel()),
                whole);
          }
        });
    for (const std::string& error : errors) EXPECT_EQ(error, "");
  };
  round_trip({2, 2, 1}, true);   // written from 2 x 2 blocks...
  round_trip({1, 3, 1}, false);  // ... read as 3 column blocks
  round_trip({3, 1, 1}, false);  // ... as 3 slabs
  round_trip({1, 1, 2}, false);  // ... split along axis 2
  round_trip({2, 1, 2}, false);  // ... and along axes 0 and 2
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
  refused({.extents = {4, 4}, .ranks = {1}}, "1 rank counts for a grid of 2 axes");
  refused({.extents = {4, 4}, .ranks = {2, 1}},
          "GridOptions::ranks 2 x 1 splits the grid over 2 ranks, the communicator has 1");
  refused({.extents = {4, 4}, .ranks = {0, 1}}, "0 ranks along axis 0 of 4 points");
  refused({.extents = {4, 4}, .ranks = {-3, 1}}, "-3 ranks along axis 0 of 4 points");
  // Counts whose product overflows 64 bits are refused, not wrapped around to the world size.
  const std::int64_t big = std::int64_t{1} << 29;
  refused({.extents = {big, big, 1}, .ranks = {1 << 29, 1 << 29, 1}},
          "splits the grid over 1099511627776 ranks, the communicator has 1");
  // More ranks than points (along axis 0, or along axes 0 and 1 for any split); a split given
  // that gives a rank nothing, or splits axis 2.
  const auto expect_everywhere = [](int ranks, const GridOptions& options,
                                    const std::string& words) {
    const auto errors =
        on_thread_ranks(ranks, 10, [&](int, Communicator& c) { const Grid grid(c, options); });
    for (const std::string& error : errors) {
      EXPECT_NE(error.find(words), std::string::npos) << error;
    }
  };
  expect_everywhere(3, {.extents = {2}}, "a grid of 2 points on 3 ranks");
  expect_everywhere(5, {.extents = {2, 2}}, "a grid of 2 x 2 points on 5 ranks");
  expect_everywhere(3, {.extents = {2, 8}, .ranks = {3, 1}}, "3 ranks along axis 0 of 2 points");
  expect_everywhere(2, {.extents = {4, 4, 1}, .ranks = {1, 1, 2}},
                    "2 ranks along axis 2 of 1 points");
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
                             const std::vector<Boundary>& boundaries,
                             const std::vector<int>& split = {}) {
  std::vector<double> result;
  const auto errors = on_thread_ranks(ranks, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, {.extents = {13, 9}, .boundaries = boundaries, .ranks = split});
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
    // Blocks: the columns' ghosts exchanged after the rows' (no overlap), in place or not.
    for (const std::vector<int>& split : {std::vector<int>{2, 2}, {1, 3}, {3, 2}}) {
      for (const std::int64_t micro_batch : {1000, 2}) {
        EXPECT_EQ(simulate(split[0] * split[1], micro_batch, 7, b, split), expected)
            << split[0] << " x " << split[1] << " ranks, micro-batch " << micro_batch;
      }
    }
  }
}

// A 3-D update that reads the six faces and two diagonal corners (so the ghost layers' corners
// matter).
struct Diffusion3 {
  template <class Field>
  TENAX_HD void operator()(const Field& u, double& un) const {
    const double faces =
        (u(-1, 0, 0) + u(1, 0, 0)) + (u(0, -1, 0) + u(0, 1, 0)) + (u(0, 0, -1) + u(0, 0, 1));
    un = u(0, 0, 0) + 0.1 * (faces - 6.0 * u(0, 0, 0)) + 0.01 * (u(1, 1, 1) - u(-1, -1, -1));
  }
};

TEST(StencilSimulation, ThreeDimensionalBlocksAndMicroBatchesGiveTheSameBits) {
  const auto simulate3 = [](const std::vector<int>& split, std::int64_t micro_batch) {
    std::vector<double> result;
    const auto errors =
        on_thread_ranks(split[0] * split[1] * split[2], 30, [&](int rank, Communicator& comm) {
          const Grid grid(comm, {.extents = {6, 5, 7},
                                 .boundaries = {Boundary::neumann(), Boundary::dirichlet(0.25),
                                                Boundary::periodic()},
                                 .ranks = split});
          StencilSimulation<Diffusion3, 1> sim(grid, Device::cpu(), {"u"}, Diffusion3{});
          sim.set_initial([](const std::int64_t* p, double* values) {
            values[0] = value_at((p[0] * 5 + p[1]) * 7 + p[2]);
          });
          sim.init();
          for (int s = 0; s < 5; ++s) {
            sim.step(s, micro_batch);
            sim.commit_step();
          }
          const Tensor u = grid.gather(sim.field(0));
          if (rank == 0) result.assign(u.data_as<double>(), u.data_as<double>() + u.numel());
        });
    for (const std::string& error : errors) EXPECT_EQ(error, "");
    return result;
  };
  const std::vector<double> expected = simulate3({1, 1, 1}, 1000);
  ASSERT_EQ(expected.size(), 6u * 5 * 7);
  for (const std::vector<int>& split :
       {std::vector<int>{2, 1, 1}, {1, 2, 1}, {1, 1, 3}, {2, 2, 2}, {1, 3, 2}}) {
    for (const std::int64_t micro_batch : {1000, 1}) {
      EXPECT_EQ(simulate3(split, micro_batch), expected)
          << split[0] << " x " << split[1] << " x " << split[2] << ", micro-batch " << micro_batch;
    }
  }
}

TEST(StencilSimulation, StateOfBlocksIsTheOwnedBlockWithItsColumns) {
  const auto errors = on_thread_ranks(4, 30, [&](int rank, Communicator& comm) {
    const Grid grid(comm, {.extents = {5, 7}, .ranks = {2, 2}});
    StencilSimulation<Reaction, 2> sim(grid, Device::cpu(), {"u", "v"}, Reaction{});
    sim.set_initial([](const std::int64_t* p, double* values) {
      values[0] = static_cast<double>(p[0] * 7 + p[1]);
      values[1] = 0.0;
    });
    sim.init();
    const std::int64_t r0 = rank / 2 == 0 ? 0 : 2;
    const std::int64_t r1 = rank / 2 == 0 ? 2 : 5;
    const std::int64_t c0 = rank % 2 == 0 ? 0 : 3;
    const std::int64_t c1 = rank % 2 == 0 ? 3 : 7;
    io::TensorShard expected{"u", 0, r0, r1, 5};
    expected.more.push_back({1, c0, c1, 7});
    EXPECT_EQ(sim.state_layout().shards[0], expected);
    const Tensor u = sim.save_state().tensor("u");
    ASSERT_EQ(u.shape(), (Shape{r1 - r0, c1 - c0}));
    // The state is the field's own storage (a fault injected into it reaches the simulation) and
    // holds the block's global points.
    EXPECT_EQ(u.buffer(), sim.field("u").buffer());
    for (std::int64_t i = 0; i < u.numel(); ++i) {
      EXPECT_EQ(u.data_as<double>()[i],
                static_cast<double>((r0 + i / (c1 - c0)) * 7 + c0 + i % (c1 - c0)));
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
}

// `steps` steps under the Runner on a split of the grid (checkpoints every 3 steps in `dir`,
// resuming from them); u and v gathered.
std::vector<double> run_split(const std::vector<int>& split, std::int64_t steps,
                              const std::filesystem::path& dir) {
  const int ranks = split[0] * split[1];
  CommOptions comm_options;
  comm_options.timeout_seconds = 30;
  auto comms = make_thread_communicators(ranks, comm_options);
  std::vector<double> result;
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        const std::shared_ptr<Communicator>& comm = comms[static_cast<std::size_t>(r)];
        const Grid grid(*comm, {.extents = {13, 9},
                                .boundaries = {Boundary::dirichlet(0.5), Boundary::neumann()},
                                .ranks = split});
        StencilSimulation<Reaction, 2> sim(grid, Device::cpu(), {"u", "v"}, Reaction{});
        sim.set_initial([](const std::int64_t* p, double* values) {
          values[0] = value_at(p[0] * 9 + p[1]);
          values[1] = 1.0 / (1.0 + static_cast<double>(p[0] + p[1]));
        });
        RunnerOptions options;
        options.run_dir = dir;
        options.total_steps = steps;
        options.checkpoint_every = 3;
        options.progress = ProgressMode::quiet;
        Runner runner(sim, options, comm);
        const RunResult done = runner.run();
        if (done.status != RunStatus::completed) throw std::runtime_error(done.message);
        const Tensor u = grid.gather(sim.field("u"));
        const Tensor v = grid.gather(sim.field("v"));
        if (r == 0) {
          result.assign(u.data_as<double>(), u.data_as<double>() + u.numel());
          result.insert(result.end(), v.data_as<double>(), v.data_as<double>() + v.numel());
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return result;
}

TEST(StencilSimulation, ARunOnBlocksResumesOnSlabsAndOtherBlocksWithTheSameBits) {
  const auto base = std::filesystem::temp_directory_path() /
                    ("tenax-stencil-blocks-" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  const std::vector<double> expected = run_split({1, 1}, 10, base / "single");
  ASSERT_EQ(expected.size(), 2u * 13 * 9);
  // 7 steps (checkpoint at 6) on one split, then to 10 on another: boxes -> slabs, boxes ->
  // other boxes, slabs -> boxes, and as many ranks split otherwise.
  for (const auto& [first, second] :
       std::vector<std::pair<std::vector<int>, std::vector<int>>>{{{2, 2}, {3, 1}},
                                                                  {{2, 2}, {1, 3}},
                                                                  {{3, 1}, {2, 2}},
                                                                  {{1, 2}, {1, 1}},
                                                                  {{4, 1}, {2, 2}},
                                                                  {{1, 2}, {2, 1}}}) {
    const std::string name = std::to_string(first[0]) + "x" + std::to_string(first[1]) + "-" +
                             std::to_string(second[0]) + "x" + std::to_string(second[1]);
    SCOPED_TRACE(name);
    ASSERT_FALSE(run_split(first, 7, base / name).empty());
    EXPECT_EQ(run_split(second, 10, base / name), expected);
  }
  std::filesystem::remove_all(base);
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
