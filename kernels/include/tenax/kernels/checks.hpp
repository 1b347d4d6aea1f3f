/// Argument checks shared by every op in tenax::ops. Each throws UsageError naming the op, both
/// operands and the fix, e.g. "axpby: x is on cuda:0 but y is on cpu -- fix: move one with
/// to(device) so that both are on the same device". @file
#pragma once

#include <initializer_list>
#include <string_view>
#include <utility>

#include "tenax/core/tensor.hpp"

namespace tenax::ops::detail {

/// An operand and the name that messages call it by.
using NamedTensor = std::pair<std::string_view, const Tensor*>;

void check_defined(std::string_view op, std::string_view name, const Tensor& t);
void check_same_device(std::string_view op, std::string_view a_name, const Tensor& a,
                       std::string_view b_name, const Tensor& b);
void check_same_dtype(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b);
void check_same_shape(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b);
void check_floating(std::string_view op, std::string_view name, const Tensor& t);
/// defined, same device, same dtype, same shape.
void check_compatible(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b);

/// Every operand is defined and has the device, dtype and shape of the first.
void check_all_compatible(std::string_view op, std::initializer_list<NamedTensor> operands);

/// Whether the storage of two tensors on the same device intersects.
[[nodiscard]] bool overlaps(const Tensor& a, const Tensor& b);
/// The written tensor `out` shares no memory with any of `others` (for kernels that stream every
/// operand once, so a write must not change a value still to be read).
void check_no_overlap(std::string_view op, const NamedTensor& out,
                      std::initializer_list<NamedTensor> others);

/// The written `out` is `in` itself -- the same first element, shape and dtype, so that each
/// element is read before it is written, by the same thread (an op in place) -- or shares no
/// memory with it. A partial overlap (out a shifted view of in) is a UsageError naming both.
void check_alias(std::string_view op, std::string_view out_name, const Tensor& out,
                 std::string_view in_name, const Tensor& in);

/// t has at least one element (for reductions without an identity, such as max).
void check_not_empty(std::string_view op, std::string_view name, const Tensor& t);
/// a and b have the same shape and the same device (any dtypes).
void check_same_shape_and_device(std::string_view op, std::string_view a_name, const Tensor& a,
                                 std::string_view b_name, const Tensor& b);
/// value is finite (not NaN or infinite).
void check_finite(std::string_view op, std::string_view name, double value);
/// value is finite and > 0.
void check_positive(std::string_view op, std::string_view name, double value);

/// t has rank `rank`; `what` describes the expected layout, e.g. "a 2-D grid [ny, nx]".
void check_rank(std::string_view op, std::string_view name, const Tensor& t, int rank,
                std::string_view what);
/// t is f64 or f32 (for kernels that have only those two instantiations).
void check_f64_or_f32(std::string_view op, std::string_view name, const Tensor& t);
/// `axis` of t (in [-rank, rank); a negative axis counts from the last, Python-style) as an axis in
/// [0, rank). UsageError naming the op, the tensor and the valid range otherwise (every axis of a
/// rank-0 tensor).
[[nodiscard]] int check_axis(std::string_view op, std::string_view name, const Tensor& t, int axis);
/// The grid spacing h is finite and > 0.
void check_spacing(std::string_view op, std::string_view name, double h);

}  // namespace tenax::ops::detail
