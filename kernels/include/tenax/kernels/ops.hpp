/// tenax::ops: the checked front end of the compute kernels. Every op validates devices, dtypes
/// and shapes (throwing UsageError that names the op, both operands and the fix) and then runs
/// the kernel of the tensors' device: the CPU backend (the reference) or the CUDA backend. @file
#pragma once

#include "tenax/kernels/ops_broadcast.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_index.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"
#include "tenax/kernels/ops_nn.hpp"
#include "tenax/kernels/ops_reduce_axis.hpp"
#include "tenax/kernels/ops_select.hpp"
#include "tenax/kernels/ops_shape.hpp"
#include "tenax/kernels/ops_view.hpp"
