// Uses the installed headers and libraries: allocates tensors, runs a checked op, checks the
// usage error of a mismatched call, writes and reads a field through strided views, and runs a
// kernel of its own on a grid split into 2 x 2 blocks over four thread ranks, multiplies a batch
// of matrices, and builds a model of its own from modules. Exits 0 only when all of it behaves.
#include <tenax/core/tensor.hpp>
#include <tenax/io/dataset_file.hpp>
#include <tenax/kernels/ops.hpp>
#include <tenax/runtime/communicator.hpp>
#include <tenax/runtime/grid.hpp>
#include <tenax/runtime/stencil.hpp>
#include <tenax/train/array_data.hpp>
#include <tenax/train/byte_text.hpp>
#include <tenax/train/nn/linear.hpp>
#include <tenax/train/nn/module.hpp>
#include <tenax/train/nn/optimizer.hpp>
#include <tenax/train/sample_order.hpp>

#include <algorithm>
#include <filesystem>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

// Reads the neighbour up and to the left: a corner, which a block gets from a diagonal rank.
struct UpLeft {
  template <class Field>
  TENAX_HD void operator()(const Field& u, double& out) const {
    out = u(-1, -1);
  }
};

// A model of one's own: a gain and a list of layers, named by their paths.
class Tower : public tenax::train::nn::Module {
 public:
  explicit Tower(int depth) : Module("Tower") {
    namespace nn = tenax::train::nn;
    gain_ = register_parameter("gain", tenax::Tensor::empty({4}, tenax::DType::f32));
    tenax::ops::fill(gain_.value(), 1.0);
    for (int i = 0; i < depth; ++i) {
      layers_.push_back(nn::Linear(4, 4, tenax::DType::f32, tenax::Device::cpu(), 7, 100 * i));
    }
    register_module("layers", layers_);
  }

 private:
  tenax::train::autodiff::Variable gain_;
  tenax::train::nn::ModuleList<tenax::train::nn::Linear> layers_;
};

bool model_of_modules() {
  Tower tower(2);
  const tenax::StateDict state = tower.state_dict();
  if (state.size() != 5 || state.entries()[3].first != "layers.1.weight") return false;
  const auto groups = tenax::train::nn::weight_decay_groups(tower);
  if (groups.size() != 2 || groups[0].params.size() != 2 || groups[1].params.size() != 3) {
    return false;
  }
  tenax::train::nn::AdamW adamw(groups, {.lr = 0.1, .weight_decay = 0.5});
  // A backup that keeps its own copy of the weights (state_dict() alone shares them).
  const tenax::StateDict backup = tower.state_dict().clone();
  const auto weight_sum = [&] {
    return tenax::ops::sum(tower.named_parameters()[1].variable.value());
  };
  const double before = weight_sum();
  adamw.step();  // zero gradients: only the weights decay
  const bool decayed = weight_sum() != before;
  tower.load_state_dict(backup);
  return decayed && weight_sum() == before &&
         tenax::ops::sum(tower.named_parameters()[0].variable.value()) == 4.0 &&
         tower.parameter_count() == 4 + 2 * 20;
}

// A periodic 6 x 8 grid split 2 x 2: every point's up-left neighbour, wrapped, reaches it.
bool corners_on_blocks() {
  auto comms = tenax::runtime::make_thread_communicators(4);
  std::atomic<int> wrong{0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      const tenax::runtime::Grid grid(*comms[static_cast<std::size_t>(r)],
                                      {.extents = {6, 8}, .ranks = {2, 2}});
      const tenax::Tensor u = grid.make_field(tenax::DType::f64);
      const tenax::Tensor out = grid.make_field(tenax::DType::f64);
      const tenax::Tensor mine = grid.owned(u);
      const std::int64_t columns = mine.shape()[1];
      for (std::int64_t i = 0; i < mine.numel(); ++i) {
        mine.data_as<double>()[i] = static_cast<double>((grid.first_row() + i / columns) * 8 +
                                                        grid.first_index(1) + i % columns);
      }
      grid.exchange({u});
      tenax::runtime::apply_stencil<double>(grid, UpLeft{}, {u}, {out});
      const tenax::Tensor whole = grid.gather(out);
      for (std::int64_t y = 0; r == 0 && y < 6; ++y) {
        for (std::int64_t x = 0; x < 8; ++x) {
          const double expected = static_cast<double>((y + 5) % 6 * 8 + (x + 7) % 8);
          if (whole.data_as<double>()[y * 8 + x] != expected) ++wrong;
        }
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  return wrong == 0;
}

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
  // A batch of products (attention's heads): c[i] = a[i] * b[i] with b[i] = (i + 1) I, so that
  // c[i] = (i + 1) a[i] and the sum of c is 1 + 2 + 3 times that of one a[i].
  tenax::Tensor a = tenax::Tensor::empty({3, 4, 2}, tenax::DType::f32);
  tenax::Tensor b = tenax::Tensor::empty({3, 2, 2}, tenax::DType::f32);
  tenax::Tensor c = tenax::Tensor::empty({3, 4, 2}, tenax::DType::f32);
  tenax::ops::fill(a, 0.5);
  tenax::ops::fill(b, 0.0);
  for (int i = 0; i < 3; ++i) {
    b.data_as<float>()[4 * i] = b.data_as<float>()[4 * i + 3] = static_cast<float>(i + 1);
  }
  tenax::ops::gemm_batched(a, b, c);
  if (tenax::ops::sum(c) != 24.0 || tenax::ops::sum(c.slice(2, 3)) != 12.0) {
    std::fprintf(stderr, "consumer: a batch of products is wrong\n");
    return 1;
  }
  // A layer by hand in bf16: out = rows W^T + bias in one product (each 3 * 0.5 + 0.25 = 1.75), an
  // activation's backward in one pass (step(out) * out = out) and the bias gradient as column sums.
  tenax::Tensor rows = tenax::Tensor::empty({4, 3}, tenax::DType::bf16);
  tenax::Tensor w = tenax::Tensor::empty({2, 3}, tenax::DType::bf16);
  tenax::Tensor bias = tenax::Tensor::empty({2}, tenax::DType::bf16);
  tenax::Tensor out = tenax::Tensor::empty({4, 2}, tenax::DType::bf16);
  tenax::Tensor dbias = tenax::Tensor::empty({2}, tenax::DType::f32);
  tenax::ops::fill(rows, 1.0);
  tenax::ops::fill(w, 0.5);
  tenax::ops::fill(bias, 0.25);
  tenax::ops::addmm(bias, rows, w, out, 1.0, tenax::ops::Transpose::no, tenax::ops::Transpose::yes);
  const tenax::Tensor dy = tenax::ops::unary_mul(tenax::ops::UnaryOp::step, out, out);
  tenax::ops::bias_grad(dy, dbias);
  if (tenax::ops::sum(out) != 14.0 || tenax::ops::sum(dbias) != 14.0) {
    std::fprintf(stderr, "consumer: the bf16 layer by hand is wrong\n");
    return 1;
  }
  // A data set of one's own, read and checked, and the samples of a step's batch.
  const std::filesystem::path data = std::filesystem::temp_directory_path() / "consumer-data.h5";
  tenax::Tensor inputs = tenax::Tensor::empty({8, 2}, tenax::DType::f32);
  tenax::Tensor labels = tenax::Tensor::empty({8}, tenax::DType::i64);
  tenax::ops::fill(inputs, 0.5);
  for (std::int64_t i = 0; i < 8; ++i) labels.data_as<std::int64_t>()[i] = i % 2;
  tenax::io::write_datasets(data, {{"x", inputs}, {"y", labels}});
  const tenax::train::ArrayData set = tenax::train::read_array_data(data);
  std::filesystem::remove(data);
  tenax::train::SampleOrder order(set.size(), 3, true);
  std::vector<std::int64_t> epoch = order.samples(8, 8);  // epoch 1
  std::sort(epoch.begin(), epoch.end());
  if (set.classes != 2 || epoch != std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}) {
    std::fprintf(stderr, "consumer: the data set or its sample order is wrong\n");
    return 1;
  }
  // Text as windows of bytes: "abcdefghij", context 3, nothing held out; sequential position 2
  // is offset (2 * 3) mod (10 - 3 - 1) = 0.
  const std::filesystem::path text = std::filesystem::temp_directory_path() / "consumer-text";
  std::FILE* file = std::fopen(text.c_str(), "wb");
  std::fputs("abcdefghij", file);
  std::fclose(file);
  const tenax::train::ByteText bytes(text, 3, 0.0);
  std::filesystem::remove(text);
  const tenax::Tensor window =
      bytes.batch(tenax::train::TextPart::training, {bytes.sequential_offset(2), 6});
  if (window.data_as<std::int64_t>()[0] != 'a' || window.data_as<std::int64_t>()[7] != 'j') {
    std::fprintf(stderr, "consumer: the text windows are wrong\n");
    return 1;
  }
  if (!corners_on_blocks()) {
    std::fprintf(stderr, "consumer: a 2 x 2 block split read a wrong corner\n");
    return 1;
  }
  if (!model_of_modules()) {
    std::fprintf(stderr, "consumer: a model of its own modules is named or grouped wrongly\n");
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
