// A CSR matrix read back to the host with i64 indices and values in their own type T (double or
// float, the matrix's dtype), for the setup work that is done once on the CPU: diagonal
// extraction, incomplete factorisations, splitting rows across ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::solvers {

template <class T>
struct HostCsr {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int64_t> row_ptr;
  std::vector<std::int64_t> col_idx;
  std::vector<T> values;
};

template <class T>
[[nodiscard]] HostCsr<T> read_host_csr(const CsrMatrix& matrix) {
  const CsrMatrix host = matrix.to(Device::cpu());
  HostCsr<T> out;
  out.rows = host.rows();
  out.cols = host.cols();
  const auto widen = [](const Tensor& t) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(t.numel()));
    if (t.dtype() == DType::i64) {
      const auto* p = t.data_as<const std::int64_t>();
      v.assign(p, p + t.numel());
    } else {
      const auto* p = t.data_as<const std::int32_t>();
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = p[i];
    }
    return v;
  };
  out.row_ptr = widen(host.row_ptr());
  out.col_idx = widen(host.col_idx());
  const T* values = host.values().data_as<const T>();
  out.values.assign(values, values + host.nnz());
  return out;
}

}  // namespace tenax::solvers
