#include "tenax/kernels/csr_matrix.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenax/core/text.hpp"
#include "tenax/kernels/detail/csr_compact_index.hpp"

namespace tenax {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void check_index_tensor(const char* name, const Tensor& t) {
  TENAX_EXPECTS(t.defined(), UsageError,
                std::string("CsrMatrix: ") + name + " is an undefined tensor",
                "pass a 1-D i32 or i64 tensor");
  TENAX_EXPECTS(
      t.dtype() == DType::i32 || t.dtype() == DType::i64, UsageError,
      std::string("CsrMatrix: ") + name + " is " + t.describe() + " but indices must be i32 or i64",
      "store the indices as i32 or i64");
  TENAX_EXPECTS(t.shape().rank() == 1, UsageError,
                std::string("CsrMatrix: ") + name + " is " + t.describe() + " but must be 1-D",
                "reshape it to [" + str(t.numel()) + "]");
}

// Reads index tensors as i64 on the host.
std::vector<std::int64_t> host_indices(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  std::vector<std::int64_t> out(static_cast<std::size_t>(host.numel()));
  if (host.dtype() == DType::i64) {
    if (!out.empty()) std::memcpy(out.data(), host.data(), host.nbytes());
  } else {
    const std::int32_t* p = host.data_as<const std::int32_t>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  }
  return out;
}

template <class T, class I>
Tensor csr_to_dense(std::int64_t rows, std::int64_t cols, const Tensor& row_ptr,
                    const Tensor& col_idx, const Tensor& values) {
  Tensor dense = Tensor::empty({rows, cols}, dtype_of<T>);
  T* d = dense.data_as<T>();
  for (std::int64_t i = 0; i < rows * cols; ++i) d[i] = T(0);
  const I* rp = row_ptr.data_as<const I>();
  const I* ci = col_idx.data_as<const I>();
  const T* v = values.data_as<const T>();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (I j = rp[r]; j < rp[r + 1]; ++j) d[r * cols + ci[j]] += v[j];
  }
  return dense;
}

template <class T, class I>
CsrMatrix dense_to_csr(const Tensor& dense, DType index_dtype) {
  const std::int64_t rows = dense.shape()[0];
  const std::int64_t cols = dense.shape()[1];
  const T* d = dense.data_as<const T>();
  std::int64_t nnz = 0;
  for (std::int64_t i = 0; i < rows * cols; ++i) nnz += d[i] != T(0) ? 1 : 0;
  // The entry count and the last column must be representable in I before any is written.
  TENAX_EXPECTS(std::max(nnz, cols - 1) <= std::numeric_limits<I>::max(), UsageError,
                "CsrMatrix::from_dense: " + dense.describe() + " has " + std::to_string(nnz) +
                    " nonzeros in " + std::to_string(cols) + " columns, more than " +
                    std::string(to_string(index_dtype)) + " indices can count",
                "pass DType::i64 as the index dtype");
  Tensor row_ptr = Tensor::empty({rows + 1}, index_dtype);
  Tensor col_idx = Tensor::empty({nnz}, index_dtype);
  Tensor values = Tensor::empty({nnz}, dtype_of<T>);
  I* rp = row_ptr.data_as<I>();
  I* ci = col_idx.data_as<I>();
  T* v = values.data_as<T>();
  I next = 0;
  rp[0] = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const T x = d[r * cols + c];
      if (x == T(0)) continue;
      ci[next] = static_cast<I>(c);
      v[next] = x;
      ++next;
    }
    rp[r + 1] = next;
  }
  return CsrMatrix(rows, cols, std::move(row_ptr), std::move(col_idx), std::move(values));
}

}  // namespace

CsrMatrix::CsrMatrix(std::int64_t rows, std::int64_t cols, Tensor row_ptr, Tensor col_idx,
                     Tensor values)
    : rows_(rows),
      cols_(cols),
      row_ptr_(std::move(row_ptr)),
      col_idx_(std::move(col_idx)),
      values_(std::move(values)) {
  TENAX_EXPECTS(
      rows_ >= 0 && cols_ >= 0, UsageError,
      "CsrMatrix: rows = " + str(rows_) + " and cols = " + str(cols_) + " but both must be >= 0",
      "pass the matrix dimensions");
  check_index_tensor("row_ptr", row_ptr_);
  check_index_tensor("col_idx", col_idx_);
  TENAX_EXPECTS(values_.defined(), UsageError, "CsrMatrix: values is an undefined tensor",
                "pass a 1-D f64 or f32 tensor");
  TENAX_EXPECTS(values_.dtype() == DType::f64 || values_.dtype() == DType::f32, UsageError,
                "CsrMatrix: values is " + values_.describe() + " but must be f64 or f32",
                "cast the values to f64 or f32");
  TENAX_EXPECTS(values_.shape().rank() == 1, UsageError,
                "CsrMatrix: values is " + values_.describe() + " but must be 1-D",
                "reshape it to [" + str(values_.numel()) + "]");
  TENAX_EXPECTS(row_ptr_.device() == values_.device() && col_idx_.device() == values_.device(),
                UsageError,
                "CsrMatrix: row_ptr is on " + to_string(row_ptr_.device()) + ", col_idx on " +
                    to_string(col_idx_.device()) + " and values on " + to_string(values_.device()),
                "move all three to one device with to(device)");
  TENAX_EXPECTS(row_ptr_.dtype() == col_idx_.dtype(), UsageError,
                "CsrMatrix: row_ptr is " + std::string(to_string(row_ptr_.dtype())) +
                    " but col_idx is " + std::string(to_string(col_idx_.dtype())),
                "store both index tensors with the same dtype (i32 or i64)");
  TENAX_EXPECTS(row_ptr_.numel() == rows_ + 1, UsageError,
                "CsrMatrix: row_ptr has " + str(row_ptr_.numel()) + " entries but a matrix with " +
                    str(rows_) + " rows needs rows + 1 = " + str(rows_ + 1),
                "row_ptr[r] is where row r starts in col_idx/values, with one extra entry at the "
                "end holding nnz");
  TENAX_EXPECTS(col_idx_.numel() == values_.numel(), UsageError,
                "CsrMatrix: col_idx has " + str(col_idx_.numel()) + " entries but values has " +
                    str(values_.numel()),
                "give col_idx and values one entry per stored nonzero");
  nnz_ = values_.numel();

  const std::vector<std::int64_t> rp = host_indices(row_ptr_);
  TENAX_EXPECTS(rp[0] == 0, UsageError, "CsrMatrix: row_ptr[0] is " + str(rp[0]) + " but must be 0",
                "start row_ptr at 0 (row 0 begins at the first entry)");
  for (std::int64_t r = 0; r < rows_; ++r) {
    TENAX_EXPECTS(rp[r] <= rp[r + 1], UsageError,
                  "CsrMatrix: row_ptr is not monotone: row_ptr[" + str(r) + "] = " + str(rp[r]) +
                      " > row_ptr[" + str(r + 1) + "] = " + str(rp[r + 1]),
                  "row_ptr must be non-decreasing; row_ptr[r + 1] - row_ptr[r] is the number of "
                  "entries of row r");
  }
  TENAX_EXPECTS(rp[rows_] == nnz_, UsageError,
                "CsrMatrix: row_ptr[" + str(rows_) + "] = " + str(rp[rows_]) +
                    " but col_idx and values have " + str(nnz_) + " entries",
                "the last row_ptr entry must equal the number of stored nonzeros");
  const std::vector<std::int64_t> ci = host_indices(col_idx_);
  for (std::int64_t j = 0; j < nnz_; ++j) {
    if (ci[j] >= 0 && ci[j] < cols_) [[likely]] {
      continue;
    }
    std::int64_t row = 0;
    while (row + 1 < rows_ && rp[row + 1] <= j) ++row;
    throw UsageError("CsrMatrix: column index out of range: col_idx[" + str(j) +
                         "] = " + str(ci[j]) + " (row " + str(row) + ") but the matrix has " +
                         str(cols_) + " columns",
                     "column indices must lie in [0, cols); check cols and col_idx");
  }
}

CsrMatrix::CsrMatrix(Validated, std::int64_t rows, std::int64_t cols, Tensor row_ptr,
                     Tensor col_idx, Tensor values)
    : rows_(rows),
      cols_(cols),
      nnz_(values.numel()),
      row_ptr_(std::move(row_ptr)),
      col_idx_(std::move(col_idx)),
      values_(std::move(values)) {}

CsrMatrix CsrMatrix::from_dense(const Tensor& dense, DType index_dtype) {
  TENAX_EXPECTS(dense.defined() && dense.shape().rank() == 2, UsageError,
                "CsrMatrix::from_dense: dense is " + dense.describe() + " but must be 2-D",
                "pass a [rows, cols] tensor");
  TENAX_EXPECTS(dense.device().is_cpu(), UsageError,
                "CsrMatrix::from_dense: dense is " + dense.describe() + " but must be on the CPU",
                "call from_dense(dense.to(Device::cpu())) and move the result with to(device)");
  TENAX_EXPECTS(index_dtype == DType::i32 || index_dtype == DType::i64, UsageError,
                "CsrMatrix::from_dense: index dtype " + std::string(to_string(index_dtype)) +
                    " is not an index type",
                "use DType::i32 or DType::i64");
  const bool i64 = index_dtype == DType::i64;
  if (dense.dtype() == DType::f64) {
    return i64 ? dense_to_csr<double, std::int64_t>(dense, index_dtype)
               : dense_to_csr<double, std::int32_t>(dense, index_dtype);
  }
  TENAX_EXPECTS(dense.dtype() == DType::f32, UsageError,
                "CsrMatrix::from_dense: dense is " + dense.describe() + " but must be f64 or f32",
                "cast it to f64 or f32 first");
  return i64 ? dense_to_csr<float, std::int64_t>(dense, index_dtype)
             : dense_to_csr<float, std::int32_t>(dense, index_dtype);
}

CsrMatrix CsrMatrix::to(Device device) const {
  if (device == this->device() || !defined()) return *this;
  return CsrMatrix(Validated{}, rows_, cols_, row_ptr_.to(device), col_idx_.to(device),
                   values_.to(device));
}

Tensor CsrMatrix::to_dense() const {
  if (!defined()) return Tensor::empty({0, 0}, DType::f64);
  const CsrMatrix host = to(Device::cpu());
  const bool i64 = index_dtype() == DType::i64;
  if (dtype() == DType::f64) {
    return i64 ? csr_to_dense<double, std::int64_t>(rows_, cols_, host.row_ptr_, host.col_idx_,
                                                    host.values_)
               : csr_to_dense<double, std::int32_t>(rows_, cols_, host.row_ptr_, host.col_idx_,
                                                    host.values_);
  }
  return i64 ? csr_to_dense<float, std::int64_t>(rows_, cols_, host.row_ptr_, host.col_idx_,
                                                 host.values_)
             : csr_to_dense<float, std::int32_t>(rows_, cols_, host.row_ptr_, host.col_idx_,
                                                 host.values_);
}

std::string CsrMatrix::describe() const {
  if (!defined()) return "empty csr matrix";
  return "csr " + std::string(to_string(dtype())) + "[" + str(rows_) + ", " + str(cols_) +
         "] (nnz " + str(nnz_) + ", " + std::string(to_string(index_dtype())) + " indices) on " +
         to_string(device());
}

namespace {

// Column offsets col_idx[j] - row as int16, or an undefined tensor when one does not fit.
template <class I>
Tensor column_offsets(std::int64_t rows, const I* row_ptr, const I* col_idx) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (I j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      const std::int64_t offset = static_cast<std::int64_t>(col_idx[j]) - r;
      if (offset < std::numeric_limits<std::int16_t>::min() ||
          offset > std::numeric_limits<std::int16_t>::max()) {
        return {};
      }
    }
  }
  const std::int64_t nnz = row_ptr[rows];
  Tensor offsets = Tensor::empty({2 * nnz}, DType::u8);
  auto* out = reinterpret_cast<std::int16_t*>(offsets.data_as<std::uint8_t>());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (I j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      out[j] = static_cast<std::int16_t>(static_cast<std::int64_t>(col_idx[j]) - r);
    }
  }
  return offsets;
}

// Codes into a table of at most 256 distinct value bit patterns (so -0.0 and 0.0, and NaNs of
// different payloads, stay apart and keep their bits), or undefined tensors when there are more.
template <class T>
std::pair<Tensor, Tensor> value_codes(std::int64_t nnz, const T* values, DType dtype) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  constexpr std::size_t kMaxDistinct = 256;
  constexpr std::size_t kSlots = 1024;  // open addressing, at most a quarter full
  std::array<Bits, kSlots> slot_bits{};
  std::array<int, kSlots> slot_code;
  slot_code.fill(-1);
  std::vector<T> table;
  Tensor codes = Tensor::empty({nnz}, DType::u8);
  std::uint8_t* out = codes.data_as<std::uint8_t>();
  for (std::int64_t j = 0; j < nnz; ++j) {
    Bits bits;
    std::memcpy(&bits, &values[j], sizeof(T));
    std::size_t slot =
        static_cast<std::size_t>((static_cast<std::uint64_t>(bits) * 0x9E3779B97F4A7C15ull) >> 40) %
        kSlots;
    while (slot_code[slot] >= 0 && slot_bits[slot] != bits) slot = (slot + 1) % kSlots;
    if (slot_code[slot] < 0) {
      if (table.size() == kMaxDistinct) return {};
      slot_bits[slot] = bits;
      slot_code[slot] = static_cast<int>(table.size());
      table.push_back(values[j]);
    }
    out[j] = static_cast<std::uint8_t>(slot_code[slot]);
  }
  Tensor table_tensor = Tensor::empty({static_cast<std::int64_t>(table.size())}, dtype);
  std::memcpy(table_tensor.data(), table.data(), table.size() * sizeof(T));
  return {std::move(codes), std::move(table_tensor)};
}

// The shape of each group of four rows (CsrCompactIndex::row_quads), or an undefined tensor when
// no group has the same columns.
template <class T, class I>
Tensor row_quads(std::int64_t rows, const I* row_ptr, const I* col_idx, const T* values) {
  using Index = kernels::detail::CsrCompactIndex;
  const std::int64_t groups = rows / 4;
  if (groups == 0) return {};
  Tensor quads = Tensor::empty({groups}, DType::u8);
  std::uint8_t* out = quads.data_as<std::uint8_t>();
  bool any = false;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t first = 4 * g;
    const std::int64_t s0 = row_ptr[first];
    const std::int64_t length = row_ptr[first + 1] - s0;
    bool same_columns = row_ptr[first + 2] - row_ptr[first + 1] == length &&
                        row_ptr[first + 3] - row_ptr[first + 2] == length &&
                        row_ptr[first + 4] - row_ptr[first + 3] == length;
    bool same_values = same_columns;
    for (std::int64_t i = 1; i < 4 && same_columns; ++i) {
      for (std::int64_t k = 0; k < length; ++k) {
        const std::int64_t j = s0 + i * length + k;
        if (static_cast<std::int64_t>(col_idx[j]) - i !=
            static_cast<std::int64_t>(col_idx[s0 + k])) {
          same_columns = false;
          break;
        }
        same_values = same_values && std::memcmp(&values[j], &values[s0 + k], sizeof(T)) == 0;
      }
    }
    out[g] = same_columns ? static_cast<std::uint8_t>(Index::kQuadSameColumns |
                                                      (same_values ? Index::kQuadSameValues : 0))
                          : std::uint8_t{0};
    any = any || same_columns;
  }
  if (!any) return {};
  return quads;
}

template <class T, class I>
kernels::detail::CsrCompactIndex compact_index_of(const CsrMatrix& a) {
  kernels::detail::CsrCompactIndex index;
  index.column_offsets =
      column_offsets(a.rows(), a.row_ptr().data_as<const I>(), a.col_idx().data_as<const I>());
  auto [codes, table] = value_codes(a.nnz(), a.values().data_as<const T>(), a.dtype());
  index.value_codes = std::move(codes);
  index.value_table = std::move(table);
  index.row_quads = row_quads(a.rows(), a.row_ptr().data_as<const I>(),
                              a.col_idx().data_as<const I>(), a.values().data_as<const T>());
  return index;
}

}  // namespace

// TENAX_CSR_COMPACT=0 (or off) turns the compact index off, to measure what it gains or to rule
// it out; unset, empty, 1 or on leave it on.
bool compact_csr_index_enabled() {
  const char* value = std::getenv("TENAX_CSR_COMPACT");
  if (value == nullptr) return true;
  const std::string setting = lower(trim(value));
  if (setting.empty() || setting == "1" || setting == "on") return true;
  if (setting == "0" || setting == "off") return false;
  throw UsageError("TENAX_CSR_COMPACT='" + std::string(value) + "' is not a setting",
                   "set TENAX_CSR_COMPACT to 1 (the default: compact CSR index on the CPU) or 0");
}

CsrMatrix CsrMatrix::compacted() const {
  if (!defined() || !device().is_cpu() || compact_ != nullptr || nnz_ == 0 ||
      !compact_csr_index_enabled()) {
    return *this;
  }
  const bool i64 = index_dtype() == DType::i64;
  kernels::detail::CsrCompactIndex index =
      dtype() == DType::f64 ? (i64 ? compact_index_of<double, std::int64_t>(*this)
                                   : compact_index_of<double, std::int32_t>(*this))
                            : (i64 ? compact_index_of<float, std::int64_t>(*this)
                                   : compact_index_of<float, std::int32_t>(*this));
  if (!index.has_offsets() && !index.has_codes() && !index.has_quads()) return *this;
  CsrMatrix compact = *this;
  compact.compact_ = std::make_shared<const kernels::detail::CsrCompactIndex>(std::move(index));
  return compact;
}

std::int64_t CsrMatrix::product_bytes() const noexcept {
  if (!defined()) return 0;
  const std::int64_t index = static_cast<std::int64_t>(size_of(index_dtype()));
  const std::int64_t value = static_cast<std::int64_t>(size_of(dtype()));
  const bool offsets = compact_ != nullptr && compact_->has_offsets();
  const bool codes = compact_ != nullptr && compact_->has_codes();
  const std::int64_t quads = compact_ != nullptr && compact_->has_quads() ? rows_ / 4 : 0;
  return (rows_ + 1) * index + nnz_ * ((offsets ? 2 : index) + (codes ? 1 : value)) + quads;
}

}  // namespace tenax
