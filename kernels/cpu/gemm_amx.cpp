// bf16 GEMM on AMX tiles (see gemm_amx.hpp for the contract). Compiled with -mamx-tile
// -mamx-bf16 -mavx512f -mavx512bw (kernels/CMakeLists.txt); called only where cpu_simd() found
// AMX-BF16 and the kernel granted this process the tile state.
//
// C is computed in blocks of 32 x 32: two row tiles of op(A) (16 rows x 32 k each) times two
// column tiles of op(B) (32 k x 16 columns, stored as 16 rows of k pairs: the instruction's
// "VNNI" order) into four f32 accumulator tiles, k in ascending blocks of 32. op(B) is packed once
// per call into those tiles (zero beyond k and n); op(A) is read in place where it is stored
// row-major with k a multiple of 32 and the block's rows all exist, packed whole where it is stored
// transposed, and packed a row block at a time otherwise (zero beyond k and m). Rows of C go to the
// workers in blocks of 32; each worker adds alpha and beta and writes its own rows.
#include "gemm_amx.hpp"

#if TENAX_HAVE_AMX
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tenax/core/dtype.hpp"
#include "tenax/core/half.hpp"

namespace tenax::kernels::cpu {
namespace {

constexpr std::int64_t kTileRows = 16;              // rows of every tile
constexpr std::int64_t kTileDepth = 32;             // bf16 values of k in a tile row (64 bytes)
constexpr std::int64_t kTileElems = 512;            // bf16 values in a tile (1 KiB)
constexpr std::int64_t kBlockRows = 2 * kTileRows;  // rows of C in a block
constexpr int kTileStride = 64;                     // bytes between the rows of a packed tile
// Multiply-adds below which a block of rows is not worth a worker thread.
constexpr double kMinMacsPerChunk = 8.0e6;
// Elements packed below which a range of tiles is not worth a worker thread.
constexpr double kMinPackedPerChunk = 32768.0;

// The fewest of a packing loop's units per chunk of a parallel_for, for units of `elements`.
std::int64_t min_chunk_for(double elements) {
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(kMinPackedPerChunk / std::max(elements, 1.0)));
}

// The tile configuration: palette 1, all eight tiles 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

TileConfig full_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = kTileStride;
    config.rows[t] = kTileRows;
  }
  return config;
}

// The tile registers hold per-thread state: each task sets them up and releases them (a
// released state costs nothing to save at a context switch).
class TileScope {
 public:
  TileScope() {
    static const TileConfig config = full_tiles();
    _tile_loadconfig(&config);
  }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// Scratch of a worker's own (a row block's packed A, its f32 sums: bounded by 64 k and 32 n
// values), grown and kept per thread: no allocation per call once the sizes are seen.
template <class T>
T* scratch(std::vector<std::byte>& store, std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T) + 64;
  if (store.size() < bytes) store.resize(bytes);
  const auto address = reinterpret_cast<std::uintptr_t>(store.data());
  return reinterpret_cast<T*>((address + 63) & ~std::uintptr_t{63});
}

std::int64_t blocks_of(std::int64_t extent, std::int64_t size) {
  return (extent + size - 1) / size;
}

// The 16 x 16 matrix of 32-bit words in rows[0..15], transposed in place.
void transpose_16x16(__m512i rows[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(rows[i], rows[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(rows[i], rows[i + 1]);
  }
  __m512i u[16];
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // u[4q + j] holds, in each 128-bit lane L, column j of rows 4q..4q+3 for columns 4L + j.
  __m512i v[16];
  for (int j = 0; j < 4; ++j) {
    const __m512i a = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);       // lanes 0,2 | 0,2
    const __m512i b = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);       // lanes 1,3 | 1,3
    const __m512i c = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);  // rows 8..15
    const __m512i d = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    v[j] = _mm512_shuffle_i32x4(a, c, 0x88);       // lane 0: columns j
    v[8 + j] = _mm512_shuffle_i32x4(a, c, 0xDD);   // lane 2: columns 8 + j
    v[4 + j] = _mm512_shuffle_i32x4(b, d, 0x88);   // lane 1: columns 4 + j
    v[12 + j] = _mm512_shuffle_i32x4(b, d, 0xDD);  // lane 3: columns 12 + j
  }
  for (int i = 0; i < 16; ++i) rows[i] = v[i];
}

// 16 words: bf16 `even[n]` in the low half, `odd[n]` in the high half (a k pair per column).
__m512i interleave_pairs(const std::uint16_t* even, const std::uint16_t* odd) {
  const __m512i low =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(even)));
  const __m512i high =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd)));
  return _mm512_or_si512(low, _mm512_slli_epi32(high, 16));
}

void store_rows(std::uint16_t* tile, const __m512i rows[16]) {
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(tile + i * kTileDepth, rows[i]);
}

// Column strips [s0, s1) of op(B), 16 columns each, as tiles in VNNI order: the tile of strip s
// and k block kb starts at (s * k_blocks + kb) * kTileElems; its row p holds, for n = 0..15,
// op(B)[32 kb + 2p][16 s + n] then op(B)[32 kb + 2p + 1][16 s + n]. Zero beyond k and n. Whole
// tiles with AVX-512 (a stored [n, k] B is a transpose of 32-bit k pairs), edges element-wise.
void pack_b(const std::uint16_t* b, const GemmArgs& g, std::int64_t k_blocks, std::int64_t s0,
            std::int64_t s1, std::uint16_t* packed) {
  const auto pack_tile = [&](std::int64_t s, std::int64_t kb) {
    const std::int64_t n0 = s * kTileRows;
    const std::int64_t columns = std::min(kTileRows, g.n - n0);
    std::uint16_t* tile = packed + (s * k_blocks + kb) * kTileElems;
    const std::int64_t k0 = kb * kTileDepth;
    const std::int64_t depth = std::min(kTileDepth, g.k - k0);
    if (columns == kTileRows && depth == kTileDepth) {
      __m512i rows[16];
      if (g.transpose_b) {
        for (int n = 0; n < 16; ++n) rows[n] = _mm512_loadu_si512(b + (n0 + n) * g.k + k0);
        transpose_16x16(rows);
      } else {
        for (int p = 0; p < 16; ++p) {
          rows[p] = interleave_pairs(b + (k0 + 2 * p) * g.n + n0, b + (k0 + 2 * p + 1) * g.n + n0);
        }
      }
      store_rows(tile, rows);
      return;
    }
    std::fill_n(tile, kTileElems, 0);
    for (std::int64_t kk = 0; kk < depth; ++kk) {
      std::uint16_t* out = tile + (kk / 2) * kTileDepth + (kk % 2);
      for (std::int64_t n = 0; n < columns; ++n) {
        out[2 * n] = g.transpose_b ? b[(n0 + n) * g.k + k0 + kk] : b[(k0 + kk) * g.n + n0 + n];
      }
    }
  };
  // In the order B is stored: a stored [n, k] B strip by strip (each of its rows read along k),
  // a stored [k, n] one k block by k block (its 32 rows read along n, not in 32-byte pieces a
  // row apart).
  if (g.transpose_b) {
    for (std::int64_t s = s0; s < s1; ++s) {
      for (std::int64_t kb = 0; kb < k_blocks; ++kb) pack_tile(s, kb);
    }
  } else {
    for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
      for (std::int64_t s = s0; s < s1; ++s) pack_tile(s, kb);
    }
  }
}

// Rows [r, r + 32) of op(A) as two row tiles per k block: block kb's tiles start at
// 2 kb * kTileElems (rows r..r+15) and (2 kb + 1) * kTileElems (rows r+16..r+31). Zero beyond
// k and m. A stored [k, m] is transposed in k pairs with AVX-512 where a tile is whole.
void pack_a(const std::uint16_t* a, const GemmArgs& g, std::int64_t r, std::int64_t kb0,
            std::int64_t kb1, std::uint16_t* packed) {
  const std::int64_t rows = std::min(kBlockRows, g.m - r);
  for (std::int64_t kb = kb0; kb < kb1; ++kb) {
    const std::int64_t k0 = kb * kTileDepth;
    const std::int64_t depth = std::min(kTileDepth, g.k - k0);
    for (std::int64_t half = 0; half < 2; ++half) {
      std::uint16_t* tile = packed + (2 * kb + half) * kTileElems;
      const std::int64_t first = r + half * kTileRows;
      const std::int64_t count = std::clamp<std::int64_t>(rows - half * kTileRows, 0, kTileRows);
      if (g.transpose_a && count == kTileRows && depth == kTileDepth) {
        __m512i pairs[16];
        for (int p = 0; p < 16; ++p) {
          pairs[p] =
              interleave_pairs(a + (k0 + 2 * p) * g.m + first, a + (k0 + 2 * p + 1) * g.m + first);
        }
        transpose_16x16(pairs);
        store_rows(tile, pairs);
        continue;
      }
      if (count < kTileRows || depth < kTileDepth) std::fill_n(tile, kTileElems, 0);
      for (std::int64_t i = 0; i < count; ++i) {
        std::uint16_t* out = tile + i * kTileDepth;
        if (g.transpose_a) {
          for (std::int64_t kk = 0; kk < depth; ++kk) out[kk] = a[(k0 + kk) * g.m + first + i];
        } else {
          std::memcpy(out, a + (first + i) * g.k + k0,
                      static_cast<std::size_t>(depth) * sizeof(std::uint16_t));
        }
      }
    }
  }
}

// k blocks [kb0, kb1) of all of op(A), for A stored [k, m] (a weight gradient's dy^T), row block
// u at packed + u * k_blocks * 2 * kTileElems as pack_a lays it out. k blocks outer: the 32 rows
// of A a k block spans are read from start to end, where a row block at a time would read a
// 64-byte piece of each, each a row apart (the prefetchers lose such strides).
void pack_a_whole(const std::uint16_t* a, const GemmArgs& g, std::int64_t k_blocks,
                  std::int64_t kb0, std::int64_t kb1, std::uint16_t* packed) {
  const std::int64_t units = blocks_of(g.m, kBlockRows);
  for (std::int64_t kb = kb0; kb < kb1; ++kb) {
    for (std::int64_t u = 0; u < units; ++u) {
      pack_a(a, g, u * kBlockRows, kb, kb + 1, packed + u * k_blocks * 2 * kTileElems);
    }
  }
}

// acc[32 x (16 or 32)] = rows of A times one or two column strips of packed B. a0/a1 are the
// row tiles of k block 0 and a_step the elements from one k block to the next (in place: 32;
// packed: 2 * kTileElems); acc_stride counts floats.
template <bool kTwoStrips>
void block_product(const std::uint16_t* a0, const std::uint16_t* a1, int a_stride_bytes,
                   std::int64_t a_step, const std::uint16_t* b0, std::int64_t k_blocks, float* acc,
                   std::int64_t acc_stride) {
  const std::uint16_t* b1 = b0 + k_blocks * kTileElems;
  _tile_zero(0);
  _tile_zero(2);
  if constexpr (kTwoStrips) {
    _tile_zero(1);
    _tile_zero(3);
  }
  for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
    _tile_loadd(4, a0 + kb * a_step, a_stride_bytes);
    _tile_loadd(5, a1 + kb * a_step, a_stride_bytes);
    _tile_loadd(6, b0 + kb * kTileElems, kTileStride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (kTwoStrips) {
      _tile_loadd(7, b1 + kb * kTileElems, kTileStride);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  const auto stride = static_cast<int>(acc_stride * sizeof(float));
  _tile_stored(0, acc, stride);
  _tile_stored(2, acc + kTileRows * acc_stride, stride);
  if constexpr (kTwoStrips) {
    _tile_stored(1, acc + kTileRows, stride);
    _tile_stored(3, acc + kTileRows * acc_stride + kTileRows, stride);
  }
}

// Row `row` of C from its f32 sums: alpha * sum + beta * c, rounded once to C's dtype with
// half.hpp's conversion (loops the compiler vectorises for this file's AVX-512 target).
void finish_row(const float* sum, const GemmArgs& g, std::int64_t row) {
  const auto alpha = static_cast<float>(g.alpha);
  const auto beta = static_cast<float>(g.beta);
  const std::int64_t n = g.n;
  if (g.bias.defined()) {  // beta is 0: alpha * sum + bias
    if (g.c.dtype() == DType::f32) {
      float* c = g.c.data_as<float>() + row * n;
      const float* bias = g.bias.data_as<const float>();
      for (std::int64_t j = 0; j < n; ++j) c[j] = alpha * sum[j] + bias[j];
      return;
    }
    auto* c = reinterpret_cast<std::uint16_t*>(g.c.data_as<BFloat16>() + row * n);
    const auto* bias = reinterpret_cast<const std::uint16_t*>(g.bias.data_as<const BFloat16>());
    for (std::int64_t j = 0; j < n; ++j) {
      c[j] = float_to_bf16_bits(alpha * sum[j] + bf16_bits_to_float(bias[j]));
    }
    return;
  }
  if (g.c.dtype() == DType::f32) {
    float* c = g.c.data_as<float>() + row * n;
    if (beta == 0.0f) {
      for (std::int64_t j = 0; j < n; ++j) c[j] = alpha * sum[j];
    } else {
      for (std::int64_t j = 0; j < n; ++j) c[j] = alpha * sum[j] + beta * c[j];
    }
    return;
  }
  auto* c = reinterpret_cast<std::uint16_t*>(g.c.data_as<BFloat16>() + row * n);
  if (beta == 0.0f) {
    for (std::int64_t j = 0; j < n; ++j) c[j] = float_to_bf16_bits(alpha * sum[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) {
      c[j] = float_to_bf16_bits(alpha * sum[j] + beta * bf16_bits_to_float(c[j]));
    }
  }
}

// Rows [r0, r1) of C (r0 a multiple of 32) on the calling thread.
// packed_a_whole: op(A) packed by pack_a_whole, or nullptr to read A in place or pack it a row
// block at a time.
void row_blocks(const std::uint16_t* a, const std::uint16_t* packed_a_whole,
                const std::uint16_t* packed_b, const GemmArgs& g, std::int64_t k_blocks,
                std::int64_t strips, std::int64_t r0, std::int64_t r1) {
  thread_local std::vector<std::byte> a_store, acc_store;
  std::uint16_t* packed_a = scratch<std::uint16_t>(a_store, 2 * k_blocks * kTileElems);
  const std::int64_t acc_stride = strips * kTileRows;
  float* acc = scratch<float>(acc_store, kBlockRows * acc_stride);
  const bool in_place = !g.transpose_a && g.k % kTileDepth == 0;
  const TileScope tiles;
  for (std::int64_t r = r0; r < r1; r += kBlockRows) {
    const std::uint16_t* a0 = packed_a;
    const std::uint16_t* a1 = packed_a + kTileElems;
    int a_stride_bytes = kTileStride;
    std::int64_t a_step = 2 * kTileElems;
    if (packed_a_whole != nullptr) {
      a0 = packed_a_whole + (r / kBlockRows) * k_blocks * 2 * kTileElems;
      a1 = a0 + kTileElems;
    } else if (in_place && r + kBlockRows <= g.m) {
      a0 = a + r * g.k;
      a1 = a0 + kTileRows * g.k;
      a_stride_bytes = static_cast<int>(g.k * sizeof(std::uint16_t));
      a_step = kTileDepth;
    } else {
      pack_a(a, g, r, 0, k_blocks, packed_a);
    }
    std::int64_t s = 0;
    for (; s + 2 <= strips; s += 2) {
      block_product<true>(a0, a1, a_stride_bytes, a_step, packed_b + s * k_blocks * kTileElems,
                          k_blocks, acc + s * kTileRows, acc_stride);
    }
    if (s < strips) {
      block_product<false>(a0, a1, a_stride_bytes, a_step, packed_b + s * k_blocks * kTileElems,
                           k_blocks, acc + s * kTileRows, acc_stride);
    }
    const std::int64_t rows = std::min(kBlockRows, r1 - r);
    for (std::int64_t i = 0; i < rows; ++i) finish_row(acc + i * acc_stride, g, r + i);
  }
}

}  // namespace

void amx_gemm_bf16(CpuContext& context, const GemmArgs& g) {
  const auto* a = reinterpret_cast<const std::uint16_t*>(g.a.data_as<const BFloat16>());
  const auto* b = reinterpret_cast<const std::uint16_t*>(g.b.data_as<const BFloat16>());
  const std::int64_t k_blocks = blocks_of(g.k, kTileDepth);
  const std::int64_t strips = blocks_of(g.n, kTileRows);
  // The packed operands, as large as the operands, come from the device's memory pool: counted
  // against its limit, reused from step to step, and an OutOfMemoryError (which a training step
  // backs off from) where they do not fit.
  const Tensor b_store = Tensor::empty(Shape{strips * k_blocks * kTileElems}, DType::bf16);
  auto* packed_b = reinterpret_cast<std::uint16_t*>(b_store.data_as<BFloat16>());
  const double elements_per_strip = static_cast<double>(kTileRows * kTileDepth * k_blocks);
  context.parallel_for(
      0, strips, min_chunk_for(elements_per_strip),
      [&](std::int64_t s0, std::int64_t s1) { pack_b(b, g, k_blocks, s0, s1, packed_b); });

  const std::int64_t units = blocks_of(g.m, kBlockRows);
  std::uint16_t* packed_a_whole = nullptr;
  Tensor a_store;
  if (g.transpose_a) {
    a_store = Tensor::empty(Shape{units * k_blocks * 2 * kTileElems}, DType::bf16);
    packed_a_whole = reinterpret_cast<std::uint16_t*>(a_store.data_as<BFloat16>());
    const double elements_per_k_block = static_cast<double>(kTileDepth * kBlockRows * units);
    context.parallel_for(0, k_blocks, min_chunk_for(elements_per_k_block),
                         [&](std::int64_t kb0, std::int64_t kb1) {
                           pack_a_whole(a, g, k_blocks, kb0, kb1, packed_a_whole);
                         });
  }
  // The tiles' work, k and n padded to whole tiles: a bias broadcast (k = 1) costs the tiles of
  // k = 32, and counted as k = 1 it stayed on one thread.
  const double macs_per_unit =
      static_cast<double>(kBlockRows) * static_cast<double>(strips * kTileRows) *
      static_cast<double>(std::max<std::int64_t>(k_blocks, 1) * kTileDepth);
  const auto min_chunk =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(kMinMacsPerChunk / macs_per_unit));
  const auto row = [&](std::int64_t unit) { return std::min(g.m, unit * kBlockRows); };
  if (units <= min_chunk || context.num_threads() == 1) {
    row_blocks(a, packed_a_whole, packed_b, g, k_blocks, strips, 0, g.m);
    return;
  }
  context.parallel_for(0, units, min_chunk, [&](std::int64_t u0, std::int64_t u1) {
    row_blocks(a, packed_a_whole, packed_b, g, k_blocks, strips, row(u0), row(u1));
  });
}

}  // namespace tenax::kernels::cpu
#endif  // TENAX_HAVE_AMX
