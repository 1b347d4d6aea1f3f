#include "tenax/train/nn/embedding.hpp"

#include <string>

#include "tenax/core/error.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"
#include "tenax/train/nn/init.hpp"

namespace tenax::train::nn {

Embedding::Embedding(std::int64_t vocab, std::int64_t d, DType dtype, Device device,
                     std::uint64_t seed, std::uint64_t offset, double std)
    : Module("Embedding") {
  TENAX_EXPECTS(vocab >= 1 && d >= 1, UsageError,
                "nn::Embedding: vocab = " + std::to_string(vocab) + " and d = " +
                    std::to_string(d) + " but a table needs at least one row and one column",
                "pass the vocabulary size and the vector size, both >= 1");
  TENAX_EXPECTS(dtype == DType::f32 || dtype == DType::f64, UsageError,
                "nn::Embedding: dtype " + std::string(to_string(dtype)) +
                    " was asked for the table, but master weights are f32 or f64",
                "build the table in f32 (or f64) and cast its output for mixed precision");
  const Tensor table = Tensor::empty(Shape{vocab, d}, dtype, device);
  end_offset_ = normal(table, seed, offset, 0.0, std);
  weight_ = register_parameter("weight", table);
}

autodiff::Variable Embedding::forward(const Tensor& indices) const {
  return autodiff::embedding(weight_, indices);
}

}  // namespace tenax::train::nn
