// Checked front end of the fused optimizer ops: validate everything, then run the kernel of the
// device (so nothing is written when an argument is wrong).
#include "tenax/kernels/ops_optim.hpp"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "tenax/core/text.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/optim_kernels.hpp"

namespace tenax::ops {
namespace {

using detail::check_no_overlap;
using detail::NamedTensor;

// Every operand is defined and has the device, dtype (f64 or f32) and shape of the first.
void check_operands(std::string_view op, std::initializer_list<NamedTensor> operands) {
  detail::check_all_compatible(op, operands);
  const NamedTensor& first = *operands.begin();
  const Tensor& t = *first.second;
  TENAX_EXPECTS(t.dtype() == DType::f64 || t.dtype() == DType::f32, UsageError,
                std::string(op) + ": " + std::string(first.first) + " is " + t.describe() +
                    " but the op supports f32 and f64",
                "keep master parameters and optimizer state in f32 or f64 (ops::cast), and "
                "cast the gradient to the same dtype");
}

// A scalar option: finite, and >= 0 when `non_negative`.
void check_scalar(std::string_view op, std::string_view name, double value, bool non_negative) {
  const bool ok = std::isfinite(value) && (!non_negative || value >= 0.0);
  TENAX_EXPECTS(ok, UsageError,
                std::string(op) + ": " + std::string(name) + " = " + format_number(value) +
                    " but it must be finite" + (non_negative ? " and >= 0" : ""),
                "pass a finite " + std::string(non_negative ? "non-negative " : "") + "value for " +
                    std::string(name));
}

void check_beta(std::string_view op, std::string_view name, double beta) {
  TENAX_EXPECTS(beta >= 0.0 && beta < 1.0, UsageError,
                std::string(op) + ": " + std::string(name) + " = " + format_number(beta) +
                    " but it must lie in [0, 1)",
                "pass a decay rate in [0, 1) for " + std::string(name) +
                    " (PyTorch's defaults are 0.9 and 0.999)");
}

void check_sgd_step(const SgdStep& s) {
  constexpr std::string_view op = "sgd_update";
  check_scalar(op, "lr", s.lr, true);
  check_scalar(op, "momentum", s.momentum, true);
  check_scalar(op, "dampening", s.dampening, false);
  check_scalar(op, "weight_decay", s.weight_decay, true);
  check_scalar(op, "grad_scale", s.grad_scale, true);
  TENAX_EXPECTS(!s.nesterov || (s.momentum > 0.0 && s.dampening == 0.0), UsageError,
                "sgd_update: nesterov is set with momentum = " + format_number(s.momentum) +
                    " and dampening = " + format_number(s.dampening) +
                    ", but Nesterov momentum needs momentum > 0 and dampening == 0",
                "set momentum > 0 and dampening = 0, or turn nesterov off");
}

void check_adam_step(const AdamStep& s) {
  constexpr std::string_view op = "adam_update";
  check_scalar(op, "lr", s.lr, true);
  check_beta(op, "beta1", s.beta1);
  check_beta(op, "beta2", s.beta2);
  check_scalar(op, "eps", s.eps, true);
  check_scalar(op, "weight_decay", s.weight_decay, true);
  check_scalar(op, "grad_scale", s.grad_scale, true);
  TENAX_EXPECTS(s.step >= 1, UsageError,
                "adam_update: step = " + std::to_string(s.step) +
                    " but it must be the 1-based number of this step (>= 1)",
                "pass the optimizer's step count after incrementing it (1 on the first step)");
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdStep& s) {
  constexpr std::string_view op = "sgd_update";
  check_sgd_step(s);
  if (s.momentum != 0.0) {
    TENAX_EXPECTS(momentum_buffer.defined(), UsageError,
                  "sgd_update: momentum = " + format_number(s.momentum) +
                      " but momentum_buffer is an undefined tensor",
                  "allocate the buffer once with Tensor::empty_like(param) and pass it on every "
                  "step (its contents do not matter on the first step)");
    check_operands(op, {{"param", &param}, {"grad", &grad}, {"momentum_buffer", &momentum_buffer}});
    check_no_overlap(op, {"param", &param},
                     {{"grad", &grad}, {"momentum_buffer", &momentum_buffer}});
    check_no_overlap(op, {"momentum_buffer", &momentum_buffer}, {{"grad", &grad}});
  } else {
    check_operands(op, {{"param", &param}, {"grad", &grad}});
    check_no_overlap(op, {"param", &param}, {{"grad", &grad}});
  }
  if (param.numel() == 0) return;
  const kernels::SgdArgs args{param, grad, s.momentum != 0.0 ? momentum_buffer : Tensor(), s};
  if (param.device().is_cpu()) {
    kernels::cpu::sgd_update(args);
  } else {
    kernels::cuda::sgd_update(args);
  }
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const AdamStep& s) {
  constexpr std::string_view op = "adam_update";
  check_adam_step(s);
  check_operands(
      op, {{"param", &param}, {"grad", &grad}, {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}});
  check_no_overlap(op, {"param", &param},
                   {{"grad", &grad}, {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}});
  check_no_overlap(op, {"exp_avg", &exp_avg}, {{"grad", &grad}, {"exp_avg_sq", &exp_avg_sq}});
  check_no_overlap(op, {"exp_avg_sq", &exp_avg_sq}, {{"grad", &grad}});
  if (param.numel() == 0) return;
  const kernels::AdamArgs args{param, grad, exp_avg, exp_avg_sq, s};
  if (param.device().is_cpu()) {
    kernels::cpu::adam_update(args);
  } else {
    kernels::cuda::adam_update(args);
  }
}

}  // namespace tenax::ops
