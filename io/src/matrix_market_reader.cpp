// Matrix Market reader: a hostile-input parser of coordinate and array files.
#include "tenax/io/matrix_market.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "durable_file.hpp"
#include "matrix_market_text.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/core/text.hpp"

namespace tenax::io {
namespace {

using detail::str;

// The format caps lines at 1024 characters; real files exceed that in comments, so allow more,
// but never let one line grow without bound.
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
constexpr std::size_t kReadChunkBytes = std::size_t{1} << 20;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

std::string quoted(std::string_view token) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  for (char c : token.substr(0, kShown)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  if (token.size() > kShown) {
    out += "...";
  }
  return out + "'";
}

std::string errno_text(int err) { return std::generic_category().message(err); }

bool is_space(char c) { return is_ascii_space(c) && c != '\n'; }

// Splits a line into whitespace-separated tokens.
class Tokens {
 public:
  explicit Tokens(std::string_view line) : rest_(line) {}

  bool next(std::string_view& token) {
    while (!rest_.empty() && is_space(rest_.front())) {
      rest_.remove_prefix(1);
    }
    if (rest_.empty()) {
      return false;
    }
    std::size_t n = 0;
    while (n < rest_.size() && !is_space(rest_[n])) {
      ++n;
    }
    token = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }

 private:
  std::string_view rest_;
};

enum class Parsed { ok, not_a_number, out_of_range };

// Parses a whole token as an integer or a double; a leading '+' is accepted, as in strtod.
template <class T>
Parsed parse_number(std::string_view token, T& out) {
  const char* first = token.data();
  const char* last = first + token.size();
  if (first != last && *first == '+') {
    ++first;
  }
  if (first == last || (*first == '-' && token.front() == '+')) {
    return Parsed::not_a_number;
  }
  std::from_chars_result result;
  if constexpr (std::is_floating_point_v<T>) {
    result = std::from_chars(first, last, out, std::chars_format::general);
  } else {
    result = std::from_chars(first, last, out);
  }
  if (result.ec == std::errc::result_out_of_range) {
    return Parsed::out_of_range;
  }
  if (result.ec != std::errc() || result.ptr != last) {
    return Parsed::not_a_number;
  }
  return Parsed::ok;
}

// Yields a file's lines (without '\n') one at a time, with their 1-based numbers. A line is a
// view into an internal buffer, valid until the next call.
class LineReader {
 public:
  LineReader(const std::filesystem::path& path, const std::string& name) : name_(name) {
    // Only a regular file (a link is followed to one): a FIFO would hang the open, a device be
    // read without end. Refused before anything is read, without blocking.
    OpenedFile opened = try_open_regular_file(path, O_RDONLY, Symlinks::follow);
    if (!opened.ok() && opened.error == 0) {
      throw UsageError("cannot read " + name_ + ": " + opened.problem,
                       "give the path of a regular Matrix Market file (a pipe, a FIFO or a process "
                       "substitution such as <(cat A.mtx) is not one: save it to a file first)");
    }
    if (!opened.ok()) {
      throw IoError("cannot open " + name_ + ": " + errno_text(opened.error),
                    "check that the file exists and is readable");
    }
    fd_ = std::move(opened.fd);
    buffer_.resize(kReadChunkBytes);
  }

  [[nodiscard]] std::int64_t line_number() const noexcept { return line_number_; }

  bool next(std::string_view& line) {
    carry_.clear();
    bool partial = false;
    for (;;) {
      if (begin_ == end_ && !refill()) {
        if (!partial) {
          return false;
        }
        ++line_number_;
        line = carry_;
        return true;
      }
      const char* start = buffer_.data() + begin_;
      const void* newline = std::memchr(start, '\n', end_ - begin_);
      const std::size_t n =
          newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - start)
                  : end_ - begin_;
      if (carry_.size() + n > kMaxLineBytes) {
        throw IoError(name_ + ":" + str(line_number_ + 1) + ": the line is longer than " +
                          str(kMaxLineBytes) + " bytes",
                      "this is not a Matrix Market file, or it is corrupt");
      }
      if (newline == nullptr) {
        carry_.append(start, n);
        partial = true;
        begin_ = end_;
        continue;
      }
      begin_ += n + 1;
      ++line_number_;
      if (!partial) {
        line = std::string_view(start, n);
      } else {
        carry_.append(start, n);
        line = carry_;
      }
      return true;
    }
  }

 private:
  bool refill() {
    if (eof_) {
      return false;
    }
    ssize_t n;
    do {
      n = ::read(fd_.get(), buffer_.data(), buffer_.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      throw IoError(
          "reading " + name_ + " failed after line " + str(line_number_) + ": " + errno_text(errno),
          "check the disk and the file system");
    }
    const auto got = static_cast<std::size_t>(n);
    begin_ = 0;
    end_ = got;
    if (got == 0) {
      eof_ = true;
    }
    return got != 0;
  }

  std::string name_;
  FileDescriptor fd_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  std::string carry_;
  std::int64_t line_number_ = 0;
};

enum class Format { coordinate, array };
enum class Field { real, integer, pattern };

struct Header {
  Format format = Format::coordinate;
  Field field = Field::real;
  Symmetry symmetry = Symmetry::general;
};

class Parser {
 public:
  Parser(const std::filesystem::path& path,
         std::function<RowRange(std::int64_t, std::int64_t)> rows_of)
      : name_(path.string()), lines_(path, name_), rows_of_(std::move(rows_of)) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    file_bytes_ = ec ? 0 : static_cast<std::int64_t>(std::min<std::uintmax_t>(size, kInt64Max));
  }

  [[nodiscard]] std::int64_t line_number() const noexcept { return lines_.line_number(); }

  CooMatrix parse() {
    read_banner();
    read_size_line();
    if (header_.format == Format::coordinate) {
      read_coordinate_entries();
    } else {
      read_array_entries();
    }
    read_trailer();
    return std::move(coo_);
  }

 private:
  [[noreturn]] void fail(const std::string& problem, const std::string& fix) const {
    throw IoError(name_ + ":" + str(lines_.line_number()) + ": " + problem, fix);
  }

  // The `expected` (at most 3) whitespace-separated fields of `line`, which must hold exactly
  // that many; `what` names the line ("the size line", "the entry") and `layout` its fields.
  std::array<std::string_view, 3> split_fields(std::string_view line, int expected,
                                               const std::string& what, const char* layout,
                                               const std::string& fix) const {
    Tokens tokens(line);
    std::array<std::string_view, 3> fields{};
    int count = 0;
    std::string_view token;
    while (count < expected && tokens.next(token)) {
      fields[static_cast<std::size_t>(count++)] = token;
    }
    if (count < expected) {
      fail(what + " has " + std::to_string(count) + " of its " + std::to_string(expected) +
               " fields " + layout,
           fix);
    }
    if (tokens.next(token)) {
      fail("unexpected " + quoted(token) + " after " + what + "'s " + layout, fix);
    }
    return fields;
  }

  // The next line that is neither blank nor a comment, trimmed; false at the end of the file.
  bool next_content_line(std::string_view& line) {
    while (lines_.next(line)) {
      line = trim(line);
      if (!line.empty() && line.front() != '%') {
        return true;
      }
    }
    return false;
  }

  void read_banner() {
    static constexpr std::string_view kFix =
        "start the file with a banner such as '%%MatrixMarket matrix coordinate real general'";
    std::string_view line;
    if (!lines_.next(line)) {
      throw IoError(name_ + ":1: the file is empty, expected a %%MatrixMarket banner",
                    std::string(kFix));
    }
    if (line.starts_with("\xEF\xBB\xBF")) {
      line.remove_prefix(3);  // UTF-8 byte order mark
    }
    Tokens tokens(line);
    std::string_view fields[5];
    int count = 0;
    std::string_view token;
    while (count < 5 && tokens.next(token)) {
      fields[count++] = token;
    }
    if (count == 0 || lower(fields[0]) != "%%matrixmarket") {
      fail("the first line is not a %%MatrixMarket banner", std::string(kFix));
    }
    if (count < 5) {
      fail("the banner has " + std::to_string(count - 1) +
               " of its 4 fields 'matrix <format> <field> <symmetry>'",
           std::string(kFix));
    }
    if (tokens.next(token)) {
      fail("unexpected " + quoted(token) + " after the banner's symmetry", std::string(kFix));
    }
    const std::string object = lower(fields[1]);
    if (object != "matrix") {
      fail("object " + quoted(fields[1]) + " is not supported, only 'matrix'",
           "store a matrix; convert vectors to an n x 1 matrix");
    }
    const std::string format = lower(fields[2]);
    if (format == "coordinate") {
      header_.format = Format::coordinate;
    } else if (format == "array") {
      header_.format = Format::array;
    } else {
      fail("format " + quoted(fields[2]) + " is not 'coordinate' or 'array'", std::string(kFix));
    }
    const std::string field = lower(fields[3]);
    if (field == "real") {
      header_.field = Field::real;
    } else if (field == "integer") {
      header_.field = Field::integer;
    } else if (field == "pattern") {
      header_.field = Field::pattern;
    } else if (field == "complex") {
      fail("complex matrices are not supported", "convert the matrix to real");
    } else {
      fail("field " + quoted(fields[3]) + " is not 'real', 'integer' or 'pattern'",
           std::string(kFix));
    }
    if (header_.field == Field::pattern && header_.format == Format::array) {
      fail("field 'pattern' is only valid with the 'coordinate' format",
           "declare the field real or the format coordinate");
    }
    const std::string symmetry = lower(fields[4]);
    if (symmetry == "general") {
      header_.symmetry = Symmetry::general;
    } else if (symmetry == "symmetric") {
      header_.symmetry = Symmetry::symmetric;
    } else if (symmetry == "skew-symmetric") {
      header_.symmetry = Symmetry::skew_symmetric;
    } else if (symmetry == "hermitian") {
      fail("symmetry 'hermitian' applies to complex matrices, which are not supported",
           "declare a real matrix 'symmetric'");
    } else {
      fail("symmetry " + quoted(fields[4]) + " is not 'general', 'symmetric' or 'skew-symmetric'",
           std::string(kFix));
    }
    if (header_.field == Field::pattern && header_.symmetry == Symmetry::skew_symmetric) {
      fail("a pattern matrix cannot be skew-symmetric (its values are all 1)",
           "declare it 'general' or 'symmetric'");
    }
  }

  std::int64_t parse_size(std::string_view token, const char* what) {
    std::int64_t v = 0;
    const Parsed p = parse_number(token, v);
    if (p == Parsed::not_a_number) {
      fail(std::string(what) + " " + quoted(token) + " is not an integer", "fix the size line");
    }
    if (p == Parsed::out_of_range || v > kMaxMatrixMarketDimension) {
      fail(std::string(what) + " " + quoted(token) + " exceeds the limit " +
               str(kMaxMatrixMarketDimension),
           "fix the size line; the file is probably corrupt");
    }
    if (v < 0) {
      fail(std::string(what) + " " + str(v) + " is negative", "fix the size line");
    }
    return v;
  }

  void read_size_line() {
    std::string_view line;
    if (!next_content_line(line)) {
      fail("the file ends before the size line",
           header_.format == Format::coordinate
               ? "add a line 'rows columns entries' after the banner and comments"
               : "add a line 'rows columns' after the banner and comments");
    }
    size_line_ = lines_.line_number();
    const bool coordinate = header_.format == Format::coordinate;
    const int expected = coordinate ? 3 : 2;
    const char* layout = coordinate ? "'rows columns entries'" : "'rows columns'";
    const auto fields = split_fields(line, expected, "the size line", layout,
                                     std::string("write the size line as ") + layout);
    coo_.rows = parse_size(fields[0], "row count");
    coo_.cols = parse_size(fields[1], "column count");
    const std::int64_t n = coo_.rows;
    if (header_.symmetry != Symmetry::general && coo_.rows != coo_.cols) {
      fail("a " + symmetry_name() + " matrix must be square, but the size line says " + str(n) +
               " x " + str(coo_.cols),
           "fix the size line or declare the matrix general");
    }
    // How many entries the declared shape can hold at most.
    std::int64_t capacity = saturating_multiply(n, coo_.cols);
    if (header_.symmetry == Symmetry::symmetric) {
      capacity =
          n % 2 == 0 ? saturating_multiply(n / 2, n + 1) : saturating_multiply(n, (n + 1) / 2);
    } else if (header_.symmetry == Symmetry::skew_symmetric) {
      capacity = n == 0 ? 0
                        : (n % 2 == 0 ? saturating_multiply(n / 2, n - 1)
                                      : saturating_multiply(n, (n - 1) / 2));
    }
    if (coordinate) {
      entries_ = parse_size(fields[2], "entry count");
      if (entries_ > capacity) {
        fail(str(entries_) + " entries declared, but a " + str(n) + " x " + str(coo_.cols) + " " +
                 symmetry_name() + " matrix stores at most " + str(capacity),
             "fix the size line");
      }
    } else {
      if (capacity > kMaxMatrixMarketDimension) {
        fail("a dense " + str(n) + " x " + str(coo_.cols) + " array has more than " +
                 str(kMaxMatrixMarketDimension) + " values",
             "fix the size line; store large matrices in coordinate format");
      }
      entries_ = capacity;
    }
    if (rows_of_) {
      const RowRange keep = rows_of_(coo_.rows, coo_.cols);
      TENAX_EXPECTS(keep.first >= 0 && keep.count >= 0 && keep.first <= coo_.rows - keep.count,
                    UsageError,
                    name_ + ": rows [" + str(keep.first) + ", +" + str(keep.count) +
                        ") were asked of a matrix of " + str(coo_.rows) + " rows",
                    "select rows inside the matrix");
      keep_first_ = keep.first;
      keep_end_ = keep.first + keep.count;
      return;  // the share kept is not known ahead: let the arrays grow with it
    }
    keep_end_ = coo_.rows;
    // Reserve no more than the file can hold: an entry line takes at least 4 bytes ("1 1\n").
    const std::int64_t mirrored = header_.symmetry == Symmetry::general ? 1 : 2;
    const auto reserve = static_cast<std::size_t>(
        std::min(saturating_multiply(entries_, mirrored), file_bytes_ / 4));
    coo_.row.reserve(reserve);
    coo_.col.reserve(reserve);
    coo_.value.reserve(reserve);
  }

  std::string symmetry_name() const {
    switch (header_.symmetry) {
      case Symmetry::general:
        return "general";
      case Symmetry::symmetric:
        return "symmetric";
      case Symmetry::skew_symmetric:
        return "skew-symmetric";
    }
    return "general";
  }

  std::int64_t parse_index(std::string_view token, const char* what, std::int64_t extent) {
    std::int64_t v = 0;
    const Parsed p = parse_number(token, v);
    if (p == Parsed::not_a_number) {
      fail(std::string(what) + " " + quoted(token) + " is not an integer",
           "fix the entry; indices are 1-based integers");
    }
    if (p == Parsed::out_of_range || v < 1 || v > extent) {
      fail(std::string(what) + " " + (p == Parsed::ok ? str(v) : quoted(token)) +
               " is out of range [1, " + str(extent) + "]",
           "fix the entry or the size line");
    }
    return v;
  }

  double parse_value(std::string_view token) {
    if (header_.field == Field::integer) {
      std::int64_t v = 0;
      const Parsed p = parse_number(token, v);
      if (p == Parsed::not_a_number) {
        fail("value " + quoted(token) + " is not an integer, but the banner declares 'integer'",
             "fix the value or declare the field 'real'");
      }
      if (p == Parsed::out_of_range) {
        fail("integer value " + quoted(token) + " does not fit in 64 bits",
             "fix the value or declare the field 'real'");
      }
      return static_cast<double>(v);
    }
    double v = 0;
    const Parsed p = parse_number(token, v);
    if (p == Parsed::not_a_number) {
      fail("value " + quoted(token) + " is not a number", "fix the entry");
    }
    if (p == Parsed::out_of_range) {
      fail("value " + quoted(token) + " is outside the range of a double",
           "fix the entry; doubles hold magnitudes from about 4.9e-324 to 1.8e308");
    }
    if (!std::isfinite(v)) {
      fail("value " + quoted(token) + " is not finite", "replace it with a finite number");
    }
    return v;
  }

  void push(std::int64_t i, std::int64_t j, double v) {
    if (i >= keep_first_ && i < keep_end_) {
      coo_.row.push_back(i);
      coo_.col.push_back(j);
      coo_.value.push_back(v);
    }
    if (i == j || header_.symmetry == Symmetry::general || j < keep_first_ || j >= keep_end_) {
      return;
    }
    coo_.row.push_back(j);
    coo_.col.push_back(i);
    coo_.value.push_back(header_.symmetry == Symmetry::symmetric ? v : -v);
  }

  void fail_entry_count(std::int64_t read) const {
    throw IoError(name_ + ":" + str(lines_.line_number()) + ": the file ends after " + str(read) +
                      " of the " + str(entries_) + " entries declared on line " + str(size_line_),
                  "add the missing entries or fix the entry count on the size line");
  }

  void read_coordinate_entries() {
    const bool pattern = header_.field == Field::pattern;
    const int expected = pattern ? 2 : 3;
    const char* layout = pattern ? "'row column'" : "'row column value'";
    std::string_view line;
    for (std::int64_t k = 0; k < entries_; ++k) {
      if (!next_content_line(line)) {
        fail_entry_count(k);
      }
      const auto fields = split_fields(line, expected, "the entry", layout,
                                       std::string("write each entry as ") + layout);
      const std::int64_t i = parse_index(fields[0], "row index", coo_.rows);
      const std::int64_t j = parse_index(fields[1], "column index", coo_.cols);
      if (header_.symmetry == Symmetry::symmetric && i < j) {
        fail("entry (" + str(i) + ", " + str(j) +
                 ") lies above the diagonal, but a symmetric file stores only the lower triangle",
             "store it as (" + str(j) + ", " + str(i) + ") or declare the matrix general");
      }
      if (header_.symmetry == Symmetry::skew_symmetric && i <= j) {
        fail("entry (" + str(i) + ", " + str(j) +
                 ") is not below the diagonal, but a skew-symmetric file stores only the "
                 "strictly lower triangle",
             i == j ? std::string("remove it; the diagonal of a skew-symmetric matrix is zero")
                    : "store it as (" + str(j) + ", " + str(i) + ") with the value negated");
      }
      const double v = pattern ? 1.0 : parse_value(fields[2]);
      push(i - 1, j - 1, v);
    }
  }

  // Column-major values, one per line; only the lower triangle for symmetric matrices and the
  // strictly lower one for skew-symmetric matrices.
  void read_array_entries() {
    const std::int64_t skip = header_.symmetry == Symmetry::skew_symmetric ? 1 : 0;
    const bool triangle = header_.symmetry != Symmetry::general;
    std::int64_t i = triangle ? skip : 0;
    std::int64_t j = 0;
    std::string_view line;
    for (std::int64_t k = 0; k < entries_; ++k) {
      if (!next_content_line(line)) {
        fail_entry_count(k);
      }
      Tokens tokens(line);
      std::string_view token;
      tokens.next(token);  // the line is not blank
      std::string_view extra;
      if (tokens.next(extra)) {
        fail("unexpected " + quoted(extra) + " after the value",
             "write one value per line in array format");
      }
      push(i, j, parse_value(token));
      if (++i == coo_.rows) {
        ++j;
        i = triangle ? j + skip : 0;
      }
    }
  }

  void read_trailer() {
    std::string_view line;
    if (next_content_line(line)) {
      fail("more entries than the " + str(entries_) + " declared on line " + str(size_line_),
           "remove the extra lines or fix the entry count on the size line");
    }
  }

  std::string name_;
  LineReader lines_;
  std::int64_t file_bytes_ = 0;
  Header header_;
  std::int64_t size_line_ = 0;
  std::int64_t entries_ = 0;
  CooMatrix coo_;
  // The rows kept (all unless a selection was given).
  std::function<RowRange(std::int64_t, std::int64_t)> rows_of_;
  std::int64_t keep_first_ = 0;
  std::int64_t keep_end_ = 0;
};

// Rows in CSR order with sorted columns and no repeated position.
}  // namespace

CooMatrix read_matrix_market(const std::filesystem::path& path) {
  return read_matrix_market_rows(path, nullptr);
}

CooMatrix read_matrix_market_rows(
    const std::filesystem::path& path,
    const std::function<RowRange(std::int64_t rows, std::int64_t cols)>& rows_of) {
  Parser parser(path, rows_of);
  try {
    return parser.parse();
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(
        "reading " + path.string() + ": out of memory at line " + str(parser.line_number()),
        "free memory or read the matrix on a machine with more");
  }
}

}  // namespace tenax::io
