// Uses the installed headers and libraries: allocates tensors, runs a checked op, checks the
// usage error of a mismatched call, and writes and reads a field through strided views. Exits 0
// only when all of it behaves.
#include <tenax/core/tensor.hpp>
#include <tenax/kernels/ops.hpp>

#include <cstdio>

int main() {
  tenax::Tensor x = tenax::Tensor::empty({1000}, tenax::DType::f32);
  tenax::Tensor y = tenax::Tensor::empty({1000}, tenax::DType::f32);
  tenax::ops::fill(x, 2.0);
  tenax::ops::fill(y, 1.0);
  tenax::ops::axpby(3.0, x, 1.0, y);  // y = 3*2 + 1 = 7
  const double total = tenax::ops::sum(y);
  if (total != 7000.0) {
    std::fprintf(stderr, "consumer: expected sum 7000, got %g\n", total);
    return 1;
  }
  try {
    tenax::Tensor z = tenax::Tensor::empty({3}, tenax::DType::f64);
    tenax::ops::axpby(1.0, x, 1.0, z);
    std::fprintf(stderr, "consumer: mismatched axpby did not throw\n");
    return 1;
  } catch (const tenax::UsageError& e) {
    std::printf("consumer: usage error as expected: %s\n", e.what());
  }
  // A field's first column set through a view, its transpose copied out: installed headers only.
  tenax::Tensor field = tenax::Tensor::empty({3, 4}, tenax::DType::f64);
  tenax::ops::fill(field, 0.0);
  tenax::ops::fill(tenax::StridedView(field).select(1, 0), 1.0);
  const tenax::Tensor columns = tenax::ops::contiguous(tenax::StridedView(field).transpose(0, 1));
  if (tenax::ops::sum(columns.slice(0, 1)) != 3.0 || tenax::ops::sum(field) != 3.0) {
    std::fprintf(stderr, "consumer: the first column through a view is not 1, 1, 1\n");
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
