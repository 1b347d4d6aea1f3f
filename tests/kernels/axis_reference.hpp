// Plain scalar references for the ops along an axis (ops_shape.hpp, ops_index.hpp,
// ops_reduce_axis.hpp): coordinates of row-major elements, written independently of the kernels.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::testing {

// The coordinates of row-major element e of `shape`.
inline std::vector<std::int64_t> coordinates(const Shape& shape, std::int64_t e) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    c[static_cast<std::size_t>(d)] = e % shape[d];
    e /= shape[d];
  }
  return c;
}

// The row-major element of `shape` at coordinates c.
inline std::int64_t flat_index(const Shape& shape, const std::vector<std::int64_t>& c) {
  std::int64_t e = 0;
  for (int d = 0; d < shape.rank(); ++d) e = e * shape[d] + c[static_cast<std::size_t>(d)];
  return e;
}

// A CPU tensor of `shape` and `dtype` holding 0, 1, 2, ... modulo 101 (exact in every dtype),
// offset by `start`.
inline Tensor counting_tensor(const Shape& shape, DType dtype, std::int64_t start = 0) {
  Tensor t = Tensor::empty(shape, dtype);
  for (std::int64_t e = 0; e < t.numel(); ++e)
    set_value(t, e, static_cast<double>((start + e) % 101));
  return t;
}

// `out` holds, at each element e, x's element source(e) (values compared as doubles, exact).
template <class Source>
void expect_moved(const Tensor& out, const Tensor& x, Source source, const std::string& what) {
  const std::vector<double> got = values_of(out);
  const std::vector<double> in = values_of(x);
  std::int64_t wrong = 0;
  for (std::int64_t e = 0; e < out.numel(); ++e) {
    const double expected = in[static_cast<std::size_t>(source(e))];
    if (got[static_cast<std::size_t>(e)] != expected && wrong++ < 3) {
      ADD_FAILURE() << what << ": element " << e << " is " << got[static_cast<std::size_t>(e)]
                    << ", expected " << expected;
    }
  }
  EXPECT_EQ(wrong, 0) << what;
}

}  // namespace tenax::testing
