/// The umbrella header: everything a job needs, for a program that includes one header. Tensors
/// and devices (core), the checked operations (kernels), checkpoints' files (io), the Runner,
/// workloads, communicators, vectors split across ranks (DistributedVector), linear systems whole
/// or split by rows (LinearSystem, from Matrix Market files too), structured grids and
/// kernels of your own over them, the training step (runtime: Trainer, loss scaler), operators,
/// Krylov solvers, time integrators, autodiff and the nn models, optimizers and learning-rate
/// schedules (solvers), and the App that turns a Workload into a program with the standard flags,
/// with a Krylov solve's settings declared by name (app).
/// Compile time: a program that includes only what it uses builds faster. @file
#pragma once

#include "tenax/app/app.hpp"                       // IWYU pragma: export
#include "tenax/app/problem_size.hpp"              // IWYU pragma: export
#include "tenax/app/setting.hpp"                   // IWYU pragma: export
#include "tenax/app/solver_settings.hpp"           // IWYU pragma: export
#include "tenax/app/training_settings.hpp"         // IWYU pragma: export
#include "tenax/core/context.hpp"                  // IWYU pragma: export
#include "tenax/core/error.hpp"                    // IWYU pragma: export
#include "tenax/core/philox.hpp"                   // IWYU pragma: export
#include "tenax/core/random.hpp"                   // IWYU pragma: export
#include "tenax/core/state_dict.hpp"               // IWYU pragma: export
#include "tenax/core/tensor.hpp"                   // IWYU pragma: export
#include "tenax/io/state_file.hpp"                 // IWYU pragma: export
#include "tenax/kernels/ops.hpp"                   // IWYU pragma: export
#include "tenax/runtime/communicator.hpp"          // IWYU pragma: export
#include "tenax/runtime/diffusion_simulation.hpp"  // IWYU pragma: export
#include "tenax/runtime/distributed_vector.hpp"    // IWYU pragma: export
#include "tenax/runtime/grid.hpp"                  // IWYU pragma: export
#include "tenax/runtime/krylov_solve.hpp"          // IWYU pragma: export
#include "tenax/runtime/linear_system.hpp"         // IWYU pragma: export
#include "tenax/runtime/matrix_market_system.hpp"  // IWYU pragma: export
#include "tenax/runtime/runner.hpp"                // IWYU pragma: export
#include "tenax/runtime/stencil.hpp"               // IWYU pragma: export
#include "tenax/runtime/step_notices.hpp"          // IWYU pragma: export
#include "tenax/runtime/workload.hpp"              // IWYU pragma: export
#include "tenax/solvers/solvers.hpp"               // IWYU pragma: export
#include "tenax/train/array_data.hpp"              // IWYU pragma: export
#include "tenax/train/autodiff/layer_ops.hpp"      // IWYU pragma: export
#include "tenax/train/autodiff/ops.hpp"            // IWYU pragma: export
#include "tenax/train/autodiff/variable.hpp"       // IWYU pragma: export
#include "tenax/train/byte_text.hpp"               // IWYU pragma: export
#include "tenax/train/loss_scaler.hpp"             // IWYU pragma: export
#include "tenax/train/nn/attention.hpp"            // IWYU pragma: export
#include "tenax/train/nn/embedding.hpp"            // IWYU pragma: export
#include "tenax/train/nn/gpt.hpp"                  // IWYU pragma: export
#include "tenax/train/nn/layer_norm.hpp"           // IWYU pragma: export
#include "tenax/train/nn/linear.hpp"               // IWYU pragma: export
#include "tenax/train/nn/lr_schedule.hpp"          // IWYU pragma: export
#include "tenax/train/nn/module.hpp"               // IWYU pragma: export
#include "tenax/train/nn/optimizer.hpp"            // IWYU pragma: export
#include "tenax/train/nn/parameter_file.hpp"       // IWYU pragma: export
#include "tenax/train/sample_order.hpp"            // IWYU pragma: export
#include "tenax/train/trainer.hpp"                 // IWYU pragma: export
#include "tenax/train/training.hpp"                // IWYU pragma: export
#include "tenax/train/training_workload.hpp"       // IWYU pragma: export
