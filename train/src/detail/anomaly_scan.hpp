// The scans anomaly mode runs (anomaly.hpp), shared by the tape and the ops.
#pragma once

#include <string>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff::detail {

// Forward pass: throws AnomalyDetected when `value`, the output of `op`, holds a NaN or ±Inf.
// The inputs are only scanned then, to tell "created" from "passed on".
void scan_forward(const char* op, const std::vector<const Variable*>& inputs, const Tensor& value);

// Backward pass: throws AnomalyDetected when `grad`, the gradient node `op` (tag `tag`) produced
// for its input number `input_index`, holds a NaN or ±Inf. `grad_output` is the gradient the node
// received.
void scan_gradient(const char* op, const std::string& tag, int input_index, const Tensor& grad,
                   const Tensor& grad_output);

}  // namespace tenax::train::autodiff::detail
