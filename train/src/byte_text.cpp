// ByteText: the file read once, split at floor(len F) from its end, windows cut on demand.
#include "tenax/train/byte_text.hpp"

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax::train {
namespace {

// 128-bit unsigned products (a GNU extension, so -Wpedantic is told so).
__extension__ using Wide = unsigned __int128;

}  // namespace

ByteText::ByteText(const std::filesystem::path& path, std::int64_t context,
                   double validation_fraction)
    : context_(context) {
  TENAX_EXPECTS(context >= 1, UsageError, "a context of " + std::to_string(context) + " bytes",
                "give a context T >= 1 (a window holds T + 1 bytes)");
  TENAX_EXPECTS(validation_fraction >= 0.0 && validation_fraction < 1.0, UsageError,
                "a validation fraction of " + std::to_string(validation_fraction),
                "give a fraction in [0, 1): the share of the file held out at its end (0: none)");
  std::ifstream in(path, std::ios::binary);
  TENAX_EXPECTS(in.good(), IoError, "cannot open " + path.string() + " for reading",
                "check the path and its permissions");
  bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  TENAX_EXPECTS(!in.bad(), IoError, "cannot read " + path.string(),
                "check the file (a directory, or a read error)");
  const auto len = static_cast<std::int64_t>(bytes_.size());
  const auto held = static_cast<std::int64_t>(
      std::floor(static_cast<long double>(len) * static_cast<long double>(validation_fraction)));
  training_size_ = len - held;
  TENAX_EXPECTS(training_size_ >= context + 2, UsageError,
                path.string() + " holds " + std::to_string(len) + " bytes, " +
                    std::to_string(training_size_) + " for training, with a context of " +
                    std::to_string(context),
                "give a longer text (the training part needs at least T + 2 = " +
                    std::to_string(context + 2) +
                    " bytes), a shorter context or a smaller validation fraction");
  TENAX_EXPECTS(held == 0 || held >= context + 1, UsageError,
                path.string() + "'s validation part (its last " + std::to_string(held) +
                    " bytes) is shorter than one window of " + std::to_string(context + 1),
                "raise the validation fraction, shorten the context, or hold out nothing (0)");
}

std::int64_t ByteText::size(TextPart part) const noexcept {
  return part == TextPart::training ? training_size_
                                    : static_cast<std::int64_t>(bytes_.size()) - training_size_;
}

std::int64_t ByteText::windows(TextPart part) const noexcept {
  const std::int64_t n = size(part);
  return n > context_ ? n - context_ : 0;
}

std::int64_t ByteText::sequential_offset(std::int64_t position) const {
  TENAX_EXPECTS(position >= 0, UsageError, "sequential stream position " + std::to_string(position),
                "ask for positions >= 0 (step k, row r of a batch of B: k B + r)");
  const auto modulus = static_cast<Wide>(training_size_ - context_ - 1);
  return static_cast<std::int64_t>(static_cast<Wide>(position) * static_cast<Wide>(context_) %
                                   modulus);
}

Tensor ByteText::batch(TextPart part, const std::vector<std::int64_t>& offsets) const {
  const std::int64_t count = static_cast<std::int64_t>(offsets.size());
  const std::int64_t width = context_ + 1;
  const std::int64_t begin = part == TextPart::training ? 0 : training_size_;
  Tensor tokens = Tensor::empty({count, width}, DType::i64);
  std::int64_t* out = tokens.data_as<std::int64_t>();
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t offset = offsets[static_cast<std::size_t>(r)];
    TENAX_EXPECTS(offset >= 0 && offset < windows(part), UsageError,
                  "window offset " + std::to_string(offset) + " of the " +
                      (part == TextPart::training ? "training" : "validation") +
                      " part, which has " + std::to_string(windows(part)) + " windows",
                  "give offsets in [0, windows(part))");
    for (std::int64_t t = 0; t < width; ++t) {
      out[r * width + t] = bytes_[static_cast<std::size_t>(begin + offset + t)];
    }
  }
  return tokens;
}

}  // namespace tenax::train
