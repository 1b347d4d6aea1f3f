// Reads an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's headless screenshots are) into
// pixels, so that a test can check what a rendered page shows (its chart lines and markers), not
// only that a file was written. zlib inflates; the row filters are undone here.
#pragma once

#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace tenax::testing {

struct Pixels {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<std::array<std::uint8_t, 3>> rgb;  // row-major

  // Pixels within `tolerance` of the colour on every channel (anti-aliasing keeps a line's core).
  [[nodiscard]] std::size_t count(std::uint32_t colour, int tolerance = 24) const {
    const int r = static_cast<int>((colour >> 16) & 255), g = static_cast<int>((colour >> 8) & 255),
              b = static_cast<int>(colour & 255);
    std::size_t n = 0;
    for (const auto& p : rgb) {
      if (std::abs(p[0] - r) <= tolerance && std::abs(p[1] - g) <= tolerance &&
          std::abs(p[2] - b) <= tolerance) {
        ++n;
      }
    }
    return n;
  }
};

inline Pixels read_png(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto u32 = [&](std::size_t at) {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data() + at);
    return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
           static_cast<std::uint32_t>(p[2]) << 8 | p[3];
  };
  if (data.size() < 8 || data.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    throw std::runtime_error(path.string() + " is not a PNG file");
  }
  Pixels out;
  int channels = 0;
  std::string idat;
  for (std::size_t pos = 8; pos + 12 <= data.size();) {
    const std::uint32_t length = u32(pos);
    const std::string kind = data.substr(pos + 4, 4);
    if (pos + 12 + length > data.size()) throw std::runtime_error(path.string() + " is truncated");
    const std::size_t body = pos + 8;
    if (kind == "IHDR") {
      out.width = u32(body);
      out.height = u32(body + 4);
      const int depth = static_cast<unsigned char>(data[body + 8]);
      const int colour_type = static_cast<unsigned char>(data[body + 9]);
      const int interlace = static_cast<unsigned char>(data[body + 12]);
      if (depth != 8 || (colour_type != 2 && colour_type != 6) || interlace != 0) {
        throw std::runtime_error(path.string() + ": only 8-bit RGB/RGBA non-interlaced PNGs");
      }
      channels = colour_type == 2 ? 3 : 4;
    } else if (kind == "IDAT") {
      idat.append(data, body, length);
    } else if (kind == "IEND") {
      break;
    }
    pos += 12 + length;
  }
  if (channels == 0 || out.width == 0 || out.height == 0 || out.width > 20000 ||
      out.height > 40000) {
    throw std::runtime_error(path.string() + ": no usable image header");
  }
  const std::size_t stride = static_cast<std::size_t>(out.width) * channels;
  std::vector<unsigned char> raw((stride + 1) * out.height);
  uLongf raw_size = static_cast<uLongf>(raw.size());
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                 static_cast<uLong>(idat.size())) != Z_OK ||
      raw_size != raw.size()) {
    throw std::runtime_error(path.string() + ": the image data does not inflate");
  }
  std::vector<unsigned char> previous(stride, 0);
  std::vector<unsigned char> line(stride);
  out.rgb.reserve(static_cast<std::size_t>(out.width) * out.height);
  for (std::uint32_t y = 0; y < out.height; ++y) {
    const unsigned char* in_row = raw.data() + y * (stride + 1);
    const int filter = in_row[0];
    for (std::size_t i = 0; i < stride; ++i) {
      const int left = i >= static_cast<std::size_t>(channels) ? line[i - channels] : 0;
      const int up = previous[i];
      const int up_left = i >= static_cast<std::size_t>(channels) ? previous[i - channels] : 0;
      int predictor = 0;
      if (filter == 1) predictor = left;
      if (filter == 2) predictor = up;
      if (filter == 3) predictor = (left + up) / 2;
      if (filter == 4) {
        const int p = left + up - up_left;
        const int pa = std::abs(p - left), pb = std::abs(p - up), pc = std::abs(p - up_left);
        predictor = pa <= pb && pa <= pc ? left : pb <= pc ? up : up_left;
      }
      line[i] = static_cast<unsigned char>((in_row[1 + i] + predictor) & 255);
    }
    for (std::size_t x = 0; x < stride; x += channels)
      out.rgb.push_back({line[x], line[x + 1], line[x + 2]});
    previous = line;
  }
  return out;
}

}  // namespace tenax::testing
