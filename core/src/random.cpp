#include "tenax/core/random.hpp"

#include <cmath>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/philox.hpp"

namespace tenax {
namespace {

void check_output(const void* out, std::size_t n) {
  TENAX_EXPECTS(out != nullptr || n == 0, UsageError,
                "Generator asked to write " + std::to_string(n) + " values to a null pointer",
                "pass a buffer that holds at least n values, or n = 0");
}

template <class T>
void check_normal_parameters(T mean, T stddev) {
  TENAX_EXPECTS(std::isfinite(mean) && std::isfinite(stddev) && stddev >= T(0), UsageError,
                "normal distribution with mean " + std::to_string(mean) + " and stddev " +
                    std::to_string(stddev),
                "use a finite mean and a finite stddev >= 0");
}

// Fills out[0, n) from whole blocks starting at `first_block`; the last block's unused values
// are dropped. BlockFn writes the 4 values of one block.
template <class T, class BlockFn>
void fill_blocks(T* out, std::size_t n, std::uint64_t first_block, BlockFn block_fn) {
  const std::size_t whole = n / 4;
  for (std::size_t j = 0; j < whole; ++j) {
    block_fn(first_block + j, out + 4 * j);
  }
  if (n % 4 != 0) {
    T tail[4];
    block_fn(first_block + whole, tail);
    for (std::size_t lane = 0; lane < n % 4; ++lane) out[4 * whole + lane] = tail[lane];
  }
}

}  // namespace

std::uint64_t Generator::take_blocks(std::uint64_t n) {
  const std::uint64_t first = offset_;
  advance(blocks_for(n));
  return first;
}

void Generator::advance(std::uint64_t blocks) {
  TENAX_EXPECTS(blocks <= UINT64_MAX - offset_, UsageError,
                "random stream offset " + std::to_string(offset_) + " plus " +
                    std::to_string(blocks) + " blocks passes 2^64; the stream would repeat",
                "start a new stream with a different seed and offset 0");
  offset_ += blocks;
}

void Generator::fill_uniform(float* out, std::size_t n) {
  check_output(out, n);
  const std::uint64_t seed = seed_;
  fill_blocks(out, n, take_blocks(n), [seed](std::uint64_t block, float* values) {
    uniform_f32_block(seed, block, values);
  });
}

void Generator::fill_uniform(double* out, std::size_t n) {
  check_output(out, n);
  const std::uint64_t seed = seed_;
  fill_blocks(out, n, take_blocks(n), [seed](std::uint64_t block, double* values) {
    uniform_f64_block(seed, block, values);
  });
}

void Generator::fill_normal(float* out, std::size_t n, float mean, float stddev) {
  check_output(out, n);
  check_normal_parameters(mean, stddev);
  const std::uint64_t seed = seed_;
  fill_blocks(out, n, take_blocks(n), [=](std::uint64_t block, float* values) {
    normal_f32_block(seed, block, values);
    for (int lane = 0; lane < 4; ++lane) values[lane] = scale_normal(values[lane], mean, stddev);
  });
}

void Generator::fill_normal(double* out, std::size_t n, double mean, double stddev) {
  check_output(out, n);
  check_normal_parameters(mean, stddev);
  const std::uint64_t seed = seed_;
  fill_blocks(out, n, take_blocks(n), [=](std::uint64_t block, double* values) {
    normal_f64_block(seed, block, values);
    for (int lane = 0; lane < 4; ++lane) values[lane] = scale_normal(values[lane], mean, stddev);
  });
}

}  // namespace tenax
