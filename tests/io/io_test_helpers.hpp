// Shared by the io tests: a scratch directory per test, a StateDict holding every kind of entry,
// with a bitwise comparison, and an assertion on the IoErrors thrown.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/state_dict.hpp"

namespace tenax::io::testing {

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("tenax-io-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A tensor of `shape` and `dtype` whose bytes are a pattern seeded by `seed`.
inline Tensor patterned(const Shape& shape, DType dtype, unsigned seed) {
  Tensor t = Tensor::empty(shape, dtype);
  auto* bytes = static_cast<unsigned char*>(t.data());
  std::uint32_t x = seed * 2654435761u + 1;
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    x = x * 1664525u + 1013904223u;
    bytes[i] = static_cast<unsigned char>(x >> 24);
  }
  return t;
}

inline StateDict sample_state(unsigned seed = 1) {
  StateDict s;
  s.set("solver/x", patterned({4, 5}, DType::f64, seed));
  s.set("step", std::int64_t{1234567890123});
  s.set("weights/f32", patterned({3, 2, 2}, DType::f32, seed + 1));
  s.set("weights/f16", patterned({7}, DType::f16, seed + 2));
  s.set("weights/bf16", patterned({2, 3}, DType::bf16, seed + 3));
  s.set("rng/counters", patterned({5}, DType::i64, seed + 4));
  s.set("ints", patterned({6}, DType::i32, seed + 5));
  s.set("bytes", patterned({9}, DType::u8, seed + 6));
  s.set("scalar", patterned({}, DType::f64, seed + 7));
  s.set("empty", patterned({0, 3}, DType::f32, seed + 8));
  s.set("loss_scale", 65536.5);
  s.set("name", std::string("heat2d"));
  s.set("blank", std::string());
  s.set("binary", std::string("a\0b\0", 4));
  s.set("a/b/c/deep", std::int64_t{-7});
  return s;
}

// True when both hold the same names in the same order with bitwise-equal values.
inline ::testing::AssertionResult bitwise_equal(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " entries";
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& [name_a, va] = a.entries()[i];
    const auto& [name_b, vb] = b.entries()[i];
    if (name_a != name_b) return ::testing::AssertionFailure() << name_a << " vs " << name_b;
    if (va.index() != vb.index()) return ::testing::AssertionFailure() << name_a << " kind";
    if (const auto* ta = std::get_if<Tensor>(&va)) {
      const auto& tb = std::get<Tensor>(vb);
      if (ta->dtype() != tb.dtype() || !(ta->shape() == tb.shape()) ||
          (ta->nbytes() > 0 && std::memcmp(ta->data(), tb.data(), ta->nbytes()) != 0)) {
        return ::testing::AssertionFailure()
               << name_a << ": " << ta->describe() << " vs " << tb.describe();
      }
    } else if (const auto* da = std::get_if<double>(&va)) {
      if (std::memcmp(da, &std::get<double>(vb), 8) != 0) {
        return ::testing::AssertionFailure() << name_a;
      }
    } else if (const auto* ia = std::get_if<std::int64_t>(&va)) {
      if (*ia != std::get<std::int64_t>(vb)) return ::testing::AssertionFailure() << name_a;
    } else if (std::get<std::string>(va) != std::get<std::string>(vb)) {
      return ::testing::AssertionFailure() << name_a;
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs `f`, which must throw an IoError whose message holds every one of `words` and which
// names a fix.
template <class F>
void expect_io_error(F&& f, std::initializer_list<std::string> words) {
  try {
    f();
    ADD_FAILURE() << "no IoError";
  } catch (const IoError& e) {
    const std::string message = e.what();
    for (const auto& word : words) {
      EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
    }
    EXPECT_FALSE(e.fix().empty());
  }
}

}  // namespace tenax::io::testing
