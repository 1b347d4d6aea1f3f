// nn::Module: a tree of named parameters, buffers and submodules -- PyTorch's path names and
// order, shared parameters listed once, strict state-dict loading that changes nothing on error,
// train/eval through the tree, the move to a device, and the errors of bad registrations; and the
// parameter file (`/params/<name>`) that the training programs write and start from.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/io/dataset_file.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/gpt.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/module.hpp"
#include "tenax/train/nn/parameter_file.hpp"

namespace tenax::train::nn {
namespace {

namespace fs = std::filesystem;
using autodiff::Variable;
using testing::expect_contains;
using testing::philox_uniform;
using testing::usage_error;
using testing::values_of;

Tensor zeros(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  ops::fill(t, 0.0);
  return t;
}

// A user's own module: a scale parameter, a buffer and two layers, like a transformer block.
class Block : public Module {
 public:
  Block(std::int64_t d, std::uint64_t seed)
      : Module("Block"),
        fc_(d, 2 * d, DType::f32, Device::cpu(), seed),
        proj_(Linear::without_bias(2 * d, d, DType::f32, Device::cpu(), seed, fc_.end_offset())) {
    gain_ = register_parameter("gain", philox_uniform({d}, DType::f32, seed));
    steps_ = register_buffer("steps", zeros({1}, DType::i64));
    register_module("fc", fc_);
    register_module("proj", proj_);
  }
  [[nodiscard]] Variable forward(const Variable& x) const {
    return autodiff::add(x, proj_.forward(autodiff::gelu(fc_.forward(autodiff::mul(x, gain_)))));
  }
  [[nodiscard]] const Linear& fc() const { return fc_; }

 private:
  Linear fc_;
  Linear proj_;
  Variable gain_;
  Variable steps_;
};

class Model : public Module {
 public:
  Model(std::int64_t d, int layers, std::uint64_t seed)
      : Module("Model"), head_(d, 3, DType::f32, Device::cpu(), seed, 1000) {
    for (int i = 0; i < layers; ++i) blocks_.push_back(Block(d, seed + i));
    register_module("blocks", blocks_);
    register_module("head", head_);
  }
  [[nodiscard]] const ModuleList<Block>& blocks() const { return blocks_; }

 private:
  ModuleList<Block> blocks_;
  Linear head_;
};

std::vector<std::string> names_of(const std::vector<NamedVariable>& named) {
  std::vector<std::string> names;
  for (const NamedVariable& v : named) names.push_back(v.name);
  return names;
}

TEST(NnModule, PathsAndOrderAreTorchs) {
  const Model model(4, 2, 1);
  const std::vector<std::string> params = {
      "blocks.0.gain", "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.proj.weight",
      "blocks.1.gain", "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.proj.weight",
      "head.weight",   "head.bias"};
  EXPECT_EQ(names_of(model.named_parameters()), params);
  EXPECT_EQ(names_of(model.named_buffers()),
            (std::vector<std::string>{"blocks.0.steps", "blocks.1.steps"}));
  // The state dict: each module's parameters, then its buffers, then its submodules'.
  const StateDict state = model.state_dict();
  std::vector<std::string> keys;
  for (const auto& entry : state.entries()) keys.push_back(entry.first);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"blocks.0.gain", "blocks.0.steps", "blocks.0.fc.weight",
                                      "blocks.0.fc.bias", "blocks.0.proj.weight", "blocks.1.gain",
                                      "blocks.1.steps", "blocks.1.fc.weight", "blocks.1.fc.bias",
                                      "blocks.1.proj.weight", "head.weight", "head.bias"}));
  // Live tensors, not copies; parameters() is named_parameters() without the names.
  const std::vector<Variable> list = model.parameters();
  ASSERT_EQ(list.size(), params.size());
  EXPECT_EQ(state.tensor("head.weight").data(), list[8].value().data());
  EXPECT_TRUE(list[0] == model.blocks()[0].named_parameters()[0].variable);
  // 2 blocks of 4 + (8x4 + 8) + 4x8, then the head 3x4 + 3.
  EXPECT_EQ(model.parameter_count(), 2 * (4 + 40 + 32) + 15);
}

TEST(NnModule, ASharedParameterIsListedOnceButSavedUnderEveryName) {
  class Tied : public Module {
   public:
    Tied() : Module("Tied"), a_(3, 3, DType::f32, Device::cpu(), 1) {
      register_module("a", a_);
      register_module("b", a_);  // the same layer twice (weight tying)
    }

   private:
    Linear a_;
  };
  const Tied tied;
  EXPECT_EQ(names_of(tied.named_parameters()), (std::vector<std::string>{"a.weight", "a.bias"}));
  EXPECT_EQ(tied.state_dict().size(), 4u);
  EXPECT_EQ(tied.parameter_count(), 12);
}

TEST(NnModule, CopiesAreHandlesToTheSameTree) {
  const Model model(4, 1, 1);
  const Model copy = model;
  EXPECT_TRUE(copy.parameters()[0] == model.parameters()[0]);
  Model moved = Model(4, 1, 2);
  const Variable first = moved.parameters()[0];
  const Model taken = std::move(moved);
  EXPECT_TRUE(taken.parameters()[0] == first);
}

TEST(NnModule, LoadStateDictCopiesConvertsAndRefusesWithoutChangingAnything) {
  const Model source(4, 2, 7);
  Model model(4, 2, 9);
  // Converted from f64, as a file written in another precision would be.
  StateDict wide;
  for (const auto& [name, value] : source.state_dict().entries()) {
    const Tensor& t = std::get<Tensor>(value);
    wide.set(name, is_floating(t.dtype()) ? ops::cast(t, DType::f64) : t.clone());
  }
  model.load_state_dict(wide);
  for (std::size_t i = 0; i < model.parameters().size(); ++i) {
    EXPECT_EQ(values_of(model.parameters()[i].value()), values_of(source.parameters()[i].value()));
  }

  Model other(4, 2, 11);
  const std::vector<double> before = values_of(other.parameters()[0].value());
  const auto refused = [&](StateDict state, std::initializer_list<const char*> parts) {
    expect_contains(usage_error([&] { other.load_state_dict(state); }), parts);
    EXPECT_EQ(values_of(other.parameters()[0].value()), before) << "nothing is copied";
  };
  StateDict missing;
  StateDict extra = source.state_dict();
  StateDict shape = source.state_dict();
  StateDict scalar = source.state_dict();
  StateDict integer = source.state_dict();
  for (const auto& entry : source.state_dict().entries()) {
    if (entry.first != "blocks.1.proj.weight") missing.set(entry.first, entry.second);
  }
  extra.set("blocks.2.gain", zeros({4}, DType::f32));
  shape.set("head.weight", zeros({4, 3}, DType::f32));
  scalar.set("blocks.0.fc.bias", 1.5);
  integer.set("head.bias", zeros({3}, DType::i64));
  refused(missing, {"nn::Model::load_state_dict", "no entry 'blocks.1.proj.weight'"});
  refused(extra, {"unexpected entry 'blocks.2.gain'"});
  refused(shape, {"'head.weight'", "shape [4, 3]", "expects [3, 4]"});
  refused(scalar, {"'blocks.0.fc.bias'", "defined tensor"});
  refused(integer, {"'head.bias'", "i64"});
}

TEST(NnModule, TrainAndEvalReachEverySubmodule) {
  Model model(4, 2, 1);
  EXPECT_TRUE(model.is_training());
  model.eval();
  EXPECT_FALSE(model.is_training());
  EXPECT_FALSE(model.blocks()[1].is_training());
  EXPECT_FALSE(model.blocks()[1].fc().is_training());
  model.train();
  EXPECT_TRUE(model.blocks()[0].fc().is_training());
}

TEST(NnModule, ToTheCpuKeepsTheTensorsAndAnUnusableDeviceIsRefused) {
  Model model(4, 1, 1);
  const void* data = model.parameters()[0].value().data();
  model.to(Device::cpu());
  EXPECT_EQ(model.parameters()[0].value().data(), data) << "already there: not copied";
  if (!cuda::availability().usable) {
    EXPECT_THROW(model.to(Device::cuda(0)), Error);
    EXPECT_EQ(model.parameters()[0].value().device(), Device::cpu());
  }
}

TEST(NnModule, BadRegistrationsAreRefusedNamingTheModule) {
  class Bad : public Module {
   public:
    explicit Bad(int kind) : Module("Bad") {
      const Tensor t = zeros({2}, DType::f32);
      switch (kind) {
        case 0:
          register_parameter("", t);
          break;
        case 1:
          register_parameter("a.b", t);
          break;
        case 2:
          register_buffer("a/b", t);
          break;
        case 3:
          register_parameter("w", t);
          register_buffer("w", t);
          break;
        case 4:
          register_module("self", *this);
          break;
        case 5:
          register_parameter("ints", zeros({2}, DType::i64));
          break;
        case 6:
          register_buffer("undefined", Tensor());
          break;
      }
    }
  };
  expect_contains(usage_error([] { Bad bad(0); }), {"nn::Bad", "''", "empty"});
  expect_contains(usage_error([] { Bad bad(1); }), {"'a.b'", "'.' joins the path"});
  expect_contains(usage_error([] { Bad bad(2); }), {"'a/b'"});
  expect_contains(usage_error([] { Bad bad(3); }), {"'w' is registered twice"});
  expect_contains(usage_error([] { Bad bad(4); }), {"its own descendant"});
  expect_contains(usage_error([] { Bad bad(5); }), {"floating"});
  expect_contains(usage_error([] { Bad bad(6); }), {"'undefined'", "undefined tensor"});
}

TEST(NnModule, LinearWithoutBiasHasOnlyItsWeight) {
  const Linear with(5, 3, DType::f64, Device::cpu(), 4, 10);
  const Linear without = Linear::without_bias(5, 3, DType::f64, Device::cpu(), 4, 10);
  EXPECT_FALSE(without.bias().defined());
  EXPECT_EQ(names_of(without.named_parameters()), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(values_of(without.weight().value()), values_of(with.weight().value()))
      << "the weight is drawn alike";
  EXPECT_EQ(without.end_offset(), 10u + 15 / 4 + 1) << "after the weight's blocks only";
  const Tensor x = philox_uniform({2, 5}, DType::f64, 3);
  const Tensor y = without.forward(Variable::constant(x)).value();
  const Tensor expected = autodiff::linear(Variable::constant(x), with.weight()).value();
  EXPECT_EQ(values_of(y), values_of(expected));
}

class ParameterFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tenax-parameter-file-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ParameterFile, WrittenAndReadBackBitForBit) {
  const Model source(4, 2, 3);
  StateDict out = parameter_file_entries(source);
  EXPECT_TRUE(out.contains("params/blocks.1.fc.weight"));
  out.set("loss", zeros({5}, DType::f32));
  const fs::path file = dir_ / "model.h5";
  io::write_state_file(file, out, {});
  Model model(4, 2, 5);
  load_parameter_file(model, file);
  for (std::size_t i = 0; i < model.parameters().size(); ++i) {
    EXPECT_EQ(values_of(model.parameters()[i].value()), values_of(source.parameters()[i].value()));
  }
}

TEST_F(ParameterFile, AnotherModelsFileIsRefusedAndChangesNothing) {
  const fs::path file = dir_ / "two-blocks.h5";
  io::write_state_file(file, parameter_file_entries(Model(4, 2, 3)), {});
  Model smaller(4, 1, 5);
  const std::vector<double> before = values_of(smaller.parameters()[0].value());
  expect_contains(usage_error([&] { load_parameter_file(smaller, file); }),
                  {"holds /params/blocks.1.", "does not have"});
  Model larger(4, 3, 5);
  expect_contains(usage_error([&] { load_parameter_file(larger, file); }),
                  {"no dataset /params/blocks.2.gain"});
  Model wider(8, 2, 5);
  expect_contains(usage_error([&] { load_parameter_file(wider, file); }),
                  {"/params/blocks.0.gain has shape [4]", "is [8]"});
  EXPECT_EQ(values_of(smaller.parameters()[0].value()), before);

  const fs::path garbage = dir_ / "garbage.h5";
  std::ofstream(garbage) << "not an HDF5 file";
  EXPECT_THROW(load_parameter_file(smaller, garbage), Error);
  EXPECT_THROW(load_parameter_file(smaller, dir_ / "missing.h5"), Error);
  EXPECT_EQ(values_of(smaller.parameters()[0].value()), before);
}

// A GptConfig's GELU form outside the enumeration is refused by the constructor, naming it, not
// at the first forward pass.
TEST(GptModel, AGeluFormOutsideTheEnumerationIsRefusedAtConstruction) {
  GptConfig config;
  config.vocab = 16;
  config.context = 4;
  config.layers = 1;
  config.d_model = 8;
  config.heads = 2;
  config.gelu = static_cast<autodiff::GeluApproximation>(9);
  expect_contains(usage_error([&] { const GptModel model(config, DType::f32, Device::cpu(), 1); }),
                  {"nn::GptModel: gelu = 9", "GeluApproximation::tanh"});
}

}  // namespace
}  // namespace tenax::train::nn
