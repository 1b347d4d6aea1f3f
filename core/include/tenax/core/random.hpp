/// Generator: the host-side holder of a Philox random stream's state, (seed, offset).
/// @file
/// Each fill draws n values as defined in philox.hpp: value i is a pure function of
/// (seed, offset, i), the same function CUDA kernels call, so a tensor filled on the CPU and one
/// filled on a GPU from the same state hold the same bits. Every fill, whatever its type,
/// distribution or n, then advances offset by ceil(n / 4) blocks: draws never share a block, and
/// a partly used last block is skipped, not reused.
///
/// Checkpointing is saving (seed(), offset()); Generator(seed, offset) resumes the exact stream.
/// A Generator is a value type; it is not safe to use one object from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tenax {

/// A Philox stream position, (seed, offset), that fills host arrays and advances. See random.hpp
/// for the contract shared with the device kernels.
class Generator {
 public:
  /// The stream of `seed`, positioned at block `offset` (0: its start; a saved offset() resumes).
  explicit Generator(std::uint64_t seed, std::uint64_t offset = 0) noexcept
      : seed_(seed), offset_(offset) {}

  /// The 64-bit Philox key of the stream, as given to the constructor.
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  /// Position in 128-bit blocks: the first block the next draw uses.
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

  /// Number of blocks a draw of n values consumes: ceil(n / 4).
  [[nodiscard]] static constexpr std::uint64_t blocks_for(std::uint64_t n) noexcept {
    return n / 4 + (n % 4 != 0 ? 1 : 0);
  }

  /// @name Uniform fills
  ///@{

  /// Uniform values in [0, 1) into `out[0, n)` (uniform_f32 / uniform_f64 of philox.hpp), then
  /// offset() advances by blocks_for(n). Throw UsageError, changing nothing, when `out` is null
  /// and n > 0, or when the draw would run the offset past 2^64 (the stream would wrap around
  /// and repeat).
  void fill_uniform(float* out, std::size_t n);
  void fill_uniform(double* out, std::size_t n);
  ///@}

  /// @name Normal fills
  ///@{

  /// Normal values mean + stddev * z into `out[0, n)`, z from normal_f32 / normal_f64
  /// (Box-Muller on value pairs; see philox.hpp), rounded as scale_normal does; then offset()
  /// advances by blocks_for(n). Throw UsageError, changing nothing, for the same reasons as
  /// fill_uniform and when stddev is negative or not finite or mean is not finite.
  void fill_normal(float* out, std::size_t n, float mean = 0.0f, float stddev = 1.0f);
  void fill_normal(double* out, std::size_t n, double mean = 0.0, double stddev = 1.0);
  ///@}

  /// Skips `blocks` blocks, as if draws of 4 * blocks values had been made. Throws UsageError
  /// when the offset would pass 2^64.
  void advance(std::uint64_t blocks);

  /// Same seed and same offset: the two produce the same values from here on.
  friend bool operator==(const Generator&, const Generator&) = default;

 private:
  /// Returns the current offset and moves past the blocks a draw of n values uses.
  std::uint64_t take_blocks(std::uint64_t n);

  std::uint64_t seed_;
  std::uint64_t offset_;
};

}  // namespace tenax
