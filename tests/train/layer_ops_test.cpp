// The transformer layers' ops and modules: forward and backward against PyTorch 1.13
// (layers_reference.hpp, float32, 1e-5 relative), gradients against central differences in f64,
// gradients that do not depend on the micro-batch (grain by grain), and the errors of bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/usage_error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/attention.hpp"
#include "tenax/train/nn/dropout.hpp"
#include "tenax/train/nn/embedding.hpp"
#include "tenax/train/nn/layer_norm.hpp"
#include "train/gradient_check.hpp"
#include "train/layers_reference.hpp"

namespace tenax::train::autodiff {
namespace {

namespace ref = tenax::testing::layers_reference;
using tenax::testing::expect_contains;
using tenax::testing::usage_error;
using testing::check_gradients;
using testing::random_tensor;
using testing::weighted_sum;

// The script's inputs: value(i) = ((a i + b) mod c - (c - 1) / 2) / c, rounded to `dtype`.
Tensor formula(const Shape& shape, int a, int b, int c, DType dtype = DType::f32) {
  Tensor wide = Tensor::empty(shape, DType::f64);
  double* p = wide.data_as<double>();
  for (std::int64_t i = 0; i < wide.numel(); ++i) {
    p[i] = ((a * i + b) % c - (c - 1) / 2.0) / c;
  }
  return dtype == DType::f64 ? wide : ops::cast(wide, dtype);
}

// loss = sum(out * upstream), upstream = value(i, 7, 3, 11): the script's backward seed.
Variable upstream_loss(const Variable& out) {
  return sum(
      mul(out, Variable::constant(formula(out.value().shape(), 7, 3, 11, out.value().dtype()))));
}

Tensor scaled(const Tensor& t, double c) {
  Tensor out = t.clone();
  ops::scale(c, out);
  return out;
}

// |got - want| <= 1e-5 (|want| + 1e-2 max |want|) for every element: 1e-5 relative, with a floor
// of a hundredth of the array's scale for the elements near 0.
template <std::size_t N>
void expect_matches(const Tensor& got, const double (&want)[N], const char* what) {
  ASSERT_EQ(got.numel(), static_cast<std::int64_t>(N)) << what;
  const Tensor wide = ops::cast(got, DType::f64);
  const double* g = wide.data_as<double>();
  double scale = 0;
  for (const double w : want) scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < N; ++i) {
    EXPECT_LE(std::fabs(g[i] - want[i]), 1e-5 * (std::fabs(want[i]) + 1e-2 * scale))
        << what << "[" << i << "]: " << g[i] << " vs PyTorch's " << want[i];
  }
}

TEST(LayerOpsTorch, LayerNormMatches) {
  nn::LayerNorm norm(5, DType::f32, Device::cpu());
  ops::copy(norm.weight().value(), formula({5}, 3, 2, 7));
  ops::copy(norm.bias().value(), formula({5}, 2, 1, 5));
  const Variable x = Variable::parameter(formula({2, 3, 5}, 5, 1, 13));
  const Variable out = norm.forward(x);
  backward(upstream_loss(out));
  expect_matches(out.value(), ref::kLayerNormOut, "out");
  expect_matches(x.grad(), ref::kLayerNormDx, "dx");
  expect_matches(norm.weight().grad(), ref::kLayerNormDw, "dweight");
  expect_matches(norm.bias().grad(), ref::kLayerNormDb, "dbias");
}

// The script scales the inputs inside the graph (x * 4): its gradients are 4 times ours.
TEST(LayerOpsTorch, SoftmaxesMatch) {
  {
    const Variable x = Variable::parameter(scaled(formula({2, 3, 4}, 5, 2, 9), 4));
    const Variable out = softmax(x, 1);
    backward(upstream_loss(out));
    expect_matches(out.value(), ref::kSoftmaxAxis1Out, "softmax");
    expect_matches(scaled(x.grad(), 4), ref::kSoftmaxAxis1Dx, "softmax dx");
  }
  {
    const Variable x = Variable::parameter(scaled(formula({2, 3, 4}, 5, 2, 9), 4));
    const Variable out = log_softmax(x, -1);
    backward(upstream_loss(out));
    expect_matches(out.value(), ref::kLogSoftmaxOut, "log_softmax");
    expect_matches(scaled(x.grad(), 4), ref::kLogSoftmaxDx, "log_softmax dx");
  }
  {
    const Variable x = Variable::parameter(scaled(formula({2, 4, 4}, 3, 1, 7), 4));
    const Variable out = causal_softmax(x);
    backward(upstream_loss(out));
    expect_matches(out.value(), ref::kCausalSoftmaxOut, "causal_softmax");
    expect_matches(scaled(x.grad(), 4), ref::kCausalSoftmaxDx, "causal_softmax dx");
  }
}

TEST(LayerOpsTorch, EmbeddingMatchesWithRepeatedIndices) {
  nn::Embedding table(6, 4, DType::f32, Device::cpu(), 1);
  ops::copy(table.weight().value(), formula({6, 4}, 5, 3, 11));
  Tensor indices = Tensor::empty({2, 3}, DType::i64);
  const std::int64_t ids[] = {1, 4, 1, 0, 5, 1};
  std::copy(std::begin(ids), std::end(ids), indices.data_as<std::int64_t>());
  const Variable out = table.forward(indices);
  backward(upstream_loss(out));
  expect_matches(out.value(), ref::kEmbeddingOut, "embedding");
  expect_matches(table.weight().grad(), ref::kEmbeddingDw, "embedding dweight");
}

TEST(LayerOpsTorch, GeluTanhMatches) {
  const double xs[] = {-6.0, -3.0, -1.5, -0.5, -0.01, 0.0, 0.3, 1.0, 2.5, 5.0, 9.0};
  Tensor x = Tensor::empty({11}, DType::f32);
  for (int i = 0; i < 11; ++i) x.data_as<float>()[i] = static_cast<float>(xs[i]);
  const Variable v = Variable::parameter(x);
  const Variable out = gelu(v, GeluApproximation::tanh);
  backward(upstream_loss(out));
  expect_matches(out.value(), ref::kGeluTanhOut, "gelu_tanh");
  expect_matches(v.grad(), ref::kGeluTanhDx, "gelu_tanh dx");
}

TEST(LayerOpsTorch, CausalSelfAttentionMatches) {
  nn::CausalSelfAttention attention(8, 2, DType::f32, Device::cpu(), 1);
  ops::copy(attention.qkv().weight().value(), formula({24, 8}, 3, 2, 17));
  ops::copy(attention.qkv().bias().value(), formula({24}, 2, 1, 5));
  ops::copy(attention.proj().weight().value(), formula({8, 8}, 7, 4, 19));
  ops::copy(attention.proj().bias().value(), formula({8}, 3, 0, 7));
  const Variable x = Variable::parameter(formula({2, 4, 8}, 5, 1, 13));
  const Variable out = attention.forward(x);
  backward(upstream_loss(out));
  expect_matches(out.value(), ref::kAttentionOut, "attention");
  expect_matches(x.grad(), ref::kAttentionDx, "attention dx");
  expect_matches(attention.qkv().weight().grad(), ref::kAttentionDwqkv, "qkv.weight grad");
  expect_matches(attention.qkv().bias().grad(), ref::kAttentionDbqkv, "qkv.bias grad");
  expect_matches(attention.proj().weight().grad(), ref::kAttentionDwproj, "proj.weight grad");
  expect_matches(attention.proj().bias().grad(), ref::kAttentionDbproj, "proj.bias grad");
}

TEST(LayerOpsTorch, SequenceCrossEntropyMatches) {
  const Variable logits = Variable::parameter(scaled(formula({2, 3, 5}, 5, 2, 9), 3));
  Tensor labels = Tensor::empty({2, 3}, DType::i64);
  const std::int64_t ids[] = {0, 4, 2, 3, 3, 1};
  std::copy(std::begin(ids), std::end(ids), labels.data_as<std::int64_t>());
  const Variable loss = cross_entropy(logits, labels);
  backward(loss);
  expect_matches(loss.value(), ref::kSequenceXentLoss, "loss");
  // The script differentiates with respect to the unscaled logits: d/dx = 3 d/d(3x).
  expect_matches(scaled(logits.grad(), 3), ref::kSequenceXentDlogits, "dlogits");
}

// ---- central differences (f64) ----

TEST(LayerOpsGradients, SoftmaxesAlongEveryAxis) {
  for (int axis : {0, 1, 2, -1}) {
    check_gradients({random_tensor({3, 4, 5}, 1)}, [axis](const std::vector<Variable>& p) {
      return weighted_sum(softmax(p[0], axis), 2);
    });
    check_gradients({random_tensor({3, 4, 5}, 3)}, [axis](const std::vector<Variable>& p) {
      return weighted_sum(log_softmax(p[0], axis), 4);
    });
  }
  check_gradients({random_tensor({2, 3, 5, 5}, 5, -3, 3)}, [](const std::vector<Variable>& p) {
    return weighted_sum(causal_softmax(p[0]), 6);
  });
}

TEST(LayerOpsGradients, LayerNormWithAndWithoutAffine) {
  check_gradients({random_tensor({3, 2, 6}, 7), random_tensor({6}, 8), random_tensor({6}, 9)},
                  [](const std::vector<Variable>& p) {
                    return weighted_sum(layer_norm(p[0], p[1], p[2], 1e-5), 10);
                  });
  check_gradients({random_tensor({4, 7}, 11)}, [](const std::vector<Variable>& p) {
    return weighted_sum(layer_norm(p[0], Variable(), Variable(), 1e-3), 12);
  });
}

TEST(LayerOpsGradients, EmbeddingGeluBatchedMatmulAndShapes) {
  Tensor indices = Tensor::empty({2, 3}, DType::i64);
  const std::int64_t ids[] = {2, 0, 2, 4, 1, 2};
  std::copy(std::begin(ids), std::end(ids), indices.data_as<std::int64_t>());
  check_gradients({random_tensor({5, 3}, 13)}, [&](const std::vector<Variable>& p) {
    return weighted_sum(embedding(p[0], indices), 14);
  });
  check_gradients({random_tensor({4, 5}, 15, -4, 4)}, [](const std::vector<Variable>& p) {
    return weighted_sum(gelu(p[0], GeluApproximation::tanh), 16);
  });
  check_gradients({random_tensor({2, 3, 4, 5}, 17), random_tensor({2, 3, 5, 6}, 18)},
                  [](const std::vector<Variable>& p) {
                    return weighted_sum(batched_matmul(p[0], p[1], ops::Transpose::no, 0.7), 19);
                  });
  check_gradients({random_tensor({3, 4, 5}, 20), random_tensor({3, 6, 5}, 21)},
                  [](const std::vector<Variable>& p) {
                    return weighted_sum(batched_matmul(p[0], p[1], ops::Transpose::yes, 1.3), 22);
                  });
  check_gradients({random_tensor({4, 6}, 30)}, [](const std::vector<Variable>& p) {
    return weighted_sum(dropout(p[0], 0.4, 9, 1), 31);  // outside a Runner: step 0, one mask
  });
  check_gradients({random_tensor({2, 3, 4}, 23)}, [](const std::vector<Variable>& p) {
    const Variable moved = permute(p[0], {2, 0, 1});
    return weighted_sum(reshape(narrow(moved, 0, 1, 3), Shape{2, 6}), 24);
  });
}

// narrow's backward adds each part's gradient into its slab of the input's gradient
// (Tape::accumulate_grad_range): disjoint parts of a non-leaf are copied into the zeros the first
// one left, an overlapping part, a part along another axis and a repeated part are added, and a
// leaf takes the padded add. Integer weights keep every sum exact, so the gradient must equal
// the padded sum exactly whatever the path.
TEST(LayerOpsGradients, NarrowPartsAddUpToThePaddedSum) {
  struct Part {
    int axis;
    std::int64_t begin, end;
  };
  const std::vector<Part> parts = {{1, 3, 6}, {1, 0, 3}, {1, 6, 9}, {1, 2, 5},
                                   {0, 1, 3}, {1, 0, 3}, {1, 8, 9}};
  for (const bool through_a_non_leaf : {true, false}) {
    for (std::size_t count = 1; count <= parts.size(); ++count) {
      const Variable x = Variable::parameter(random_tensor({4, 9}, 40));
      Tensor ones = Tensor::empty({4, 9}, DType::f64);
      ops::fill(ones, 1.0);
      const Variable y = through_a_non_leaf ? mul(x, Variable::constant(ones)) : x;
      std::vector<double> want(36, 0.0);
      Variable loss;
      for (std::size_t k = 0; k < count; ++k) {
        const Part& part = parts[k];
        const Variable slab = narrow(y, part.axis, part.begin, part.end);
        const Shape shape = slab.value().shape();
        std::vector<double> weights(static_cast<std::size_t>(shape.numel()));
        for (std::size_t i = 0; i < weights.size(); ++i) {
          weights[i] = static_cast<double>((i * 7 + k * 3) % 11) - 5.0;
        }
        Tensor w = Tensor::empty(shape, DType::f64);
        std::copy(weights.begin(), weights.end(), w.data_as<double>());
        const Variable term = sum(mul(slab, Variable::constant(w)));
        loss = k == 0 ? term : add(loss, term);
        for (std::int64_t r = 0; r < shape[0]; ++r) {
          for (std::int64_t c = 0; c < shape[1]; ++c) {
            const std::int64_t row = part.axis == 0 ? part.begin + r : r;
            const std::int64_t col = part.axis == 1 ? part.begin + c : c;
            want[static_cast<std::size_t>(row * 9 + col)] +=
                weights[static_cast<std::size_t>(r * shape[1] + c)];
          }
        }
      }
      backward(loss);
      const double* got = x.grad().data_as<const double>();
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << "element " << i << " after " << count << " parts"
                                   << (through_a_non_leaf ? " of a non-leaf" : " of a leaf");
      }
    }
  }
}

TEST(LayerOpsGradients, LinearAndCrossEntropyOverSequences) {
  check_gradients(
      {random_tensor({2, 3, 4}, 25), random_tensor({5, 4}, 26), random_tensor({5}, 27)},
      [](const std::vector<Variable>& p) { return weighted_sum(linear(p[0], p[1], p[2]), 28); });
  Tensor labels = Tensor::empty({2, 3}, DType::i64);
  const std::int64_t ids[] = {0, 4, 2, 3, 3, 1};
  std::copy(std::begin(ids), std::end(ids), labels.data_as<std::int64_t>());
  check_gradients({random_tensor({2, 3, 5}, 29, -3, 3)},
                  [&](const std::vector<Variable>& p) { return cross_entropy(p[0], labels); });
}

// ---- micro-batches ----

// A small sequence model: token embedding, layer norm, attention, dropout, a linear head and the
// mean cross-entropy over every position; its parameter gradients summed over micro-batches of the
// sizes given, grain by grain (one sample a grain), as the Trainer runs them.
std::vector<std::vector<double>> gradients_in_micro_batches(
    const std::vector<std::int64_t>& sizes) {
  const std::int64_t batch = 4;
  const std::int64_t t = 5;
  nn::Embedding tokens(7, 8, DType::f32, Device::cpu(), 3);
  nn::LayerNorm norm(8, DType::f32, Device::cpu());
  ops::copy(norm.weight().value(), formula({8}, 3, 1, 7));
  nn::CausalSelfAttention attention(8, 2, DType::f32, Device::cpu(), 3, tokens.end_offset());
  const nn::Linear head(8, 7, DType::f32, Device::cpu(), 3, attention.end_offset());
  const nn::Dropout drop(0.3, 5, 0);  // its mask keyed by the global sample
  Tensor ids = Tensor::empty({batch, t}, DType::i64);
  Tensor next = Tensor::empty({batch, t}, DType::i64);
  for (std::int64_t i = 0; i < batch * t; ++i) {
    ids.data_as<std::int64_t>()[i] = (3 * i + 1) % 7;
    next.data_as<std::int64_t>()[i] = (5 * i + 2) % 7;
  }
  GrainScope scope(1);
  std::int64_t begin = 0;
  for (const std::int64_t size : sizes) {
    GrainScope::set_row_offset(begin);
    const Variable x = norm.forward(tokens.forward(ids.slice(begin, begin + size)));
    const Variable logits = head.forward(drop.forward(attention.forward(x)));
    backward(cross_entropy(logits, next.slice(begin, begin + size),
                           LossOptions{.divisor = static_cast<double>(batch * t)}));
    begin += size;
  }
  GrainScope::finish_gradients();
  std::vector<std::vector<double>> grads;
  for (const nn::Module* m :
       std::initializer_list<const nn::Module*>{&tokens, &norm, &attention, &head}) {
    for (const Variable& p : m->parameters()) {
      const Tensor wide = ops::cast(p.grad(), DType::f64);
      grads.emplace_back(wide.data_as<double>(), wide.data_as<double>() + wide.numel());
    }
  }
  return grads;
}

TEST(LayerOpsGrains, GradientsAreTheSameBitsForEveryMicroBatch) {
  const auto whole = gradients_in_micro_batches({4});
  for (const auto& split :
       std::vector<std::vector<std::int64_t>>{{2, 2}, {1, 1, 1, 1}, {1, 3}, {3, 1}}) {
    const auto parts = gradients_in_micro_batches(split);
    ASSERT_EQ(parts.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      EXPECT_TRUE(parts[i] == whole[i]) << "parameter " << i << " differs for a split";
    }
  }
}

// ---- errors ----

TEST(LayerOpsErrors, BadOperandsAreRefusedNamingThem) {
  const Variable x = Variable::parameter(random_tensor({2, 3, 4}, 1));
  const Variable w4 = Variable::parameter(random_tensor({4}, 2));
  const Variable w5 = Variable::parameter(random_tensor({5}, 3));
  expect_contains(usage_error([&] { (void)layer_norm(x, w5, w5); }), {"weight", "[4]"});
  expect_contains(usage_error([&] { (void)layer_norm(x, w4, Variable()); }),
                  {"only one of weight and bias"});
  expect_contains(usage_error([&] { (void)layer_norm(x, w4, w4, 0.0); }), {"eps"});
  expect_contains(usage_error([&] { (void)softmax(x, 3); }), {"axis"});
  expect_contains(usage_error([&] { (void)causal_softmax(x); }), {"[T, T]"});
  expect_contains(usage_error([&] { (void)batched_matmul(x, x); }), {"[2, 3, 4]"});
  expect_contains(usage_error([&] { (void)narrow(x, 2, 3, 5); }), {"narrow"});
  expect_contains(usage_error([&] { (void)reshape(x, Shape{5, 5}); }), {"25"});
  const Variable table = Variable::parameter(random_tensor({5, 3}, 4));
  Tensor indices = Tensor::empty({2, 2}, DType::i64);
  const std::int64_t ids[] = {0, 4, 5, -1};
  std::copy(std::begin(ids), std::end(ids), indices.data_as<std::int64_t>());
  expect_contains(usage_error([&] { (void)embedding(table, indices); }),
                  {"indices[2]", "is 5", "[0, 5)"});
  expect_contains(
      usage_error([] { nn::CausalSelfAttention bad(10, 4, DType::f32, Device::cpu(), 1); }),
      {"heads = 4", "split d evenly"});
  expect_contains(usage_error([] { nn::LayerNorm bad(0, DType::f32, Device::cpu()); }), {"d = 0"});
  expect_contains(usage_error([] { nn::Dropout bad(1.0, 1, 0); }), {"p = 1"});
  expect_contains(usage_error([] { nn::Embedding bad(5, 3, DType::bf16, Device::cpu(), 1); }),
                  {"bf16"});
}

}  // namespace
}  // namespace tenax::train::autodiff
