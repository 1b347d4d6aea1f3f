#include "tenax/kernels/checks_extra.hpp"

#include <cmath>
#include <sstream>
#include <string>

#include "tenax/kernels/checks.hpp"

namespace tenax::ops::detail {

namespace {

std::string format(double value) {
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

}  // namespace

void check_not_empty(std::string_view op, std::string_view name, const Tensor& t) {
  TENAX_EXPECTS(t.numel() > 0, UsageError,
                std::string(op) + ": " + std::string(name) + " is " + t.describe() +
                    ", which has no elements, so the result is undefined",
                "pass a tensor with at least one element");
}

void check_same_shape_and_device(std::string_view op, std::string_view a_name, const Tensor& a,
                                 std::string_view b_name, const Tensor& b) {
  check_defined(op, a_name, a);
  check_defined(op, b_name, b);
  check_same_device(op, a_name, a, b_name, b);
  check_same_shape(op, a_name, a, b_name, b);
}

void check_finite(std::string_view op, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value), UsageError,
                std::string(op) + ": " + std::string(name) + " is " + format(value),
                "pass a finite " + std::string(name));
}

void check_positive(std::string_view op, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value) && value > 0.0, UsageError,
                std::string(op) + ": " + std::string(name) + " is " + format(value) +
                    " but must be finite and greater than 0",
                "pass a finite, positive " + std::string(name));
}

}  // namespace tenax::ops::detail
