/// ByteText: a file of bytes as language-modelling data (vocabulary 256): sample = a window of
/// T + 1 consecutive bytes, the first T the inputs and the last T the next-byte targets.
/// @file
/// The file is read whole into memory. Its last floor(len F) bytes (F the validation fraction)
/// are the validation part, the rest the training part, so that held-out text is never trained
/// on. A window is named by its offset in its part: offsets [0, size - T) (windows()). Which
/// window a step takes is the caller's choice: train::SampleOrder over windows() (shuffled
/// epochs), or sequential_offset() — sample r of step k (stream position p = k B + r) is the
/// window at offset (p T) mod (size - T - 1) of the training part, a formula an outside reference
/// (a PyTorch script) can feed the same batches by. Either way a step's samples depend on its
/// index alone: the same for any rank count, micro-batch or resume.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::train {

/// The two parts of a ByteText.
enum class TextPart : std::uint8_t {
  training,    ///< the file but its tail
  validation,  ///< the held-out tail
};

/// A byte file split into a training and a validation part (see the file). Immutable after
/// construction; its const members may be called from any thread.
class ByteText {
 public:
  /// Reads `path` whole, for windows of `context` + 1 bytes (context T >= 1), holding out the
  /// last floor(len validation_fraction) bytes (fraction in [0, 1)). IoError when the file cannot
  /// be read; UsageError naming the value and the fix when T or the fraction is out of range, the
  /// training part is shorter than T + 2 bytes, or a non-empty validation part is shorter than
  /// T + 1.
  ByteText(const std::filesystem::path& path, std::int64_t context,
           double validation_fraction = 0.1);

  /// T: the inputs of a window (a window holds T + 1 bytes).
  [[nodiscard]] std::int64_t context() const noexcept { return context_; }
  /// Bytes of a part.
  [[nodiscard]] std::int64_t size(TextPart part) const noexcept;
  /// Windows of a part: size - T (0 for an empty validation part).
  [[nodiscard]] std::int64_t windows(TextPart part) const noexcept;
  /// The training window of sequential stream position `position` (>= 0): offset
  /// (position T) mod (training size - T - 1), computed without overflow.
  [[nodiscard]] std::int64_t sequential_offset(std::int64_t position) const;
  /// The windows at `offsets` of `part` as tokens: i64 [offsets.size(), T + 1] on the host, each
  /// row T + 1 bytes (0..255). UsageError for an offset outside [0, windows(part)).
  [[nodiscard]] Tensor batch(TextPart part, const std::vector<std::int64_t>& offsets) const;
  /// The bytes of a part (for sampling from a prompt, or counting unigrams).
  [[nodiscard]] const std::vector<std::uint8_t>& bytes() const noexcept { return bytes_; }
  /// Where the validation part starts in bytes().
  [[nodiscard]] std::int64_t validation_begin() const noexcept { return training_size_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::int64_t context_;
  std::int64_t training_size_;
};

}  // namespace tenax::train
