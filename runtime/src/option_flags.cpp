#include "tenax/runtime/option_flags.hpp"

namespace tenax::runtime {
namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string with_flags(std::string_view message, const OptionFlags& flags) {
  std::string text(message);
  for (const OptionFlag& entry : flags) {
    if (entry.option.empty() || entry.flag.empty()) continue;
    const std::string insert = " (" + entry.flag + ")";
    std::size_t at = 0;
    while ((at = text.find(entry.option, at)) != std::string::npos) {
      const std::size_t end = at + entry.option.size();
      const bool whole = (at == 0 || !identifier_char(text[at - 1])) &&
                         (end == text.size() || !identifier_char(text[end]));
      const bool named = text.compare(end, 4, " (--") == 0;
      if (whole && !named) {
        text.insert(end, insert);
        at = end + insert.size();
      } else {
        at = end;
      }
    }
  }
  return text;
}

}  // namespace tenax::runtime
