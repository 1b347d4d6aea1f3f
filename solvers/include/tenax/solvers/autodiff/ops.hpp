// Differentiable ops on Variables (see variable.hpp for the tape and backward()).
//
// Each op computes its value with tenax::ops on the device of its operands and, when recording
// is on and an input requires grad, records a backward closure built from tenax::ops too, so the
// same code runs on the CPU and on CUDA. Operands must be defined Variables with one floating
// dtype and one device; shape rules are given per op. Violations throw UsageError naming the op,
// the operands' shapes and the fix, before anything is computed or recorded.
//
// Scalar results (sum, mean, mse_loss) are tensors of shape [] on the operands' device; their
// backward reads the incoming gradient back to the host (one small synchronising read).
#pragma once

#include "tenax/solvers/autodiff/variable.hpp"

namespace tenax::solvers::autodiff {

// A[m, k] * B[k, n] -> [m, n] (2-D operands).
[[nodiscard]] Variable matmul(const Variable& a, const Variable& b);

// x W^T + b for x [batch, in], weight [out, in], bias [out] -> [batch, out]: the layout of
// PyTorch's nn.Linear, so weights map one to one. d bias is the column sum of d out.
[[nodiscard]] Variable linear(const Variable& x, const Variable& weight, const Variable& bias);
// x W^T without a bias.
[[nodiscard]] Variable linear(const Variable& x, const Variable& weight);

// Element-wise, on operands of one shape (no broadcasting).
[[nodiscard]] Variable add(const Variable& a, const Variable& b);
[[nodiscard]] Variable sub(const Variable& a, const Variable& b);
[[nodiscard]] Variable mul(const Variable& a, const Variable& b);

// Element-wise activations. relu's derivative is taken as 0 at 0 (as PyTorch does).
[[nodiscard]] Variable relu(const Variable& x);
[[nodiscard]] Variable tanh(const Variable& x);
[[nodiscard]] Variable sigmoid(const Variable& x);

// c * x for a constant c.
[[nodiscard]] Variable scale(const Variable& x, double c);

// Sum and mean of all elements -> shape []. mean of an empty tensor is a UsageError.
[[nodiscard]] Variable sum(const Variable& x);
[[nodiscard]] Variable mean(const Variable& x);

// mean((pred - target)^2) over all elements -> shape [] (PyTorch's MSELoss, reduction "mean").
// pred and target have one shape; target usually does not require grad, but may.
[[nodiscard]] Variable mse_loss(const Variable& pred, const Variable& target);

}  // namespace tenax::solvers::autodiff
