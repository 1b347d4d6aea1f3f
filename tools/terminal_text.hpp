// Text read from a run directory or a checkpoint (a fault's reason, a configuration, a path, a
// message) is shown on a terminal only as text: its control characters (ESC and the rest of C0
// but newline and tab, DEL, and C1 as UTF-8 encodes it) become '?', so that a log line or an
// attribute cannot retitle, clear or overwrite the terminal of whoever inspects the run.
#pragma once

#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

namespace tenax::tools {

inline std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xC2 && i + 1 < text.size()) {
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9F) {  // a C1 control (U+0080..U+009F)
        out += '?';
        ++i;
        continue;
      }
    }
    const bool control = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F;
    out += control ? '?' : static_cast<char>(c);
  }
  return out;
}

// Runs `print` on a buffer and writes what it printed to `out` made terminal_safe; returns what
// `print` returned.
template <class Print>
int print_terminal_safe(std::ostream& out, Print&& print) {
  std::ostringstream buffer;
  const int code = print(static_cast<std::ostream&>(buffer));
  out << terminal_safe(buffer.str()) << std::flush;
  return code;
}

}  // namespace tenax::tools
