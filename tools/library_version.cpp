// The rule for a library loaded at run time against the headers tenax was built with (doctor.hpp).
#include <fmt/format.h>

#include <string>

#include "doctor.hpp"

namespace tenax::tools {
namespace {

// M*10000 + m*100 + p as "M.m.p".
std::string version_text(int code) {
  return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
}

}  // namespace

Finding library_version_finding(const std::string& name, const std::string& library, int loaded,
                                int built, const std::string& where) {
  const std::string loaded_text = version_text(loaded);
  const std::string built_text = version_text(built);
  const std::string detail =
      fmt::format("{} {} (built with {}){}", library, loaded_text, built_text, where);
  if (loaded / 10000 != built / 10000) {
    return {
        name,
        Status::problem,
        detail,
        fmt::format("tenax was built with {} {} headers but loaded {} {}{}, a "
                    "different major version, whose interface tenax was not built for",
                    library, built_text, library, loaded_text, where),
        fmt::format("put a {} {}.x first on LD_LIBRARY_PATH, or rebuild tenax against "
                    "the installed one",
                    library, built / 10000),
    };
  }
  if (loaded / 100 < built / 100) {
    return {
        name,
        Status::problem,
        detail,
        fmt::format("tenax was built with {} {} headers but loaded the older {}{}: "
                    "what the newer headers declare may be missing",
                    library, built_text, loaded_text, where),
        fmt::format("put {} {} or newer first on LD_LIBRARY_PATH, or rebuild tenax "
                    "against the installed one",
                    library, version_text(built / 100 * 100)),
    };
  }
  if (loaded < built) {
    return {name,
            Status::ok,
            detail +
                ": an older patch release of the same minor version, whose interface is the "
                "same",
            {},
            {}};
  }
  return {name, Status::ok, detail, {}, {}};
}

}  // namespace tenax::tools
