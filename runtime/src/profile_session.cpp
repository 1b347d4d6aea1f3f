#include "profile_session.hpp"

#include <cstdio>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"

namespace tenax::runtime::detail {
namespace {

std::filesystem::path profile_file(const std::filesystem::path& path, int rank) {
  if (rank == 0) return path;
  return path.parent_path() /
         (path.stem().string() + ".rank-" + std::to_string(rank) + path.extension().string());
}

}  // namespace

ProfileSession::ProfileSession(const std::filesystem::path& path, int rank)
    : path_(path.empty() ? path : profile_file(path, rank)), rank_(rank) {
  owner_ = !path_.empty() && profiling::start();
}

ProfileSession::~ProfileSession() {
  if (!owner_) return;
  try {
    const std::size_t spans = profiling::stop_and_write(path_, rank_);
    std::fprintf(stderr, "tenax: profile of %zu spans written to %s (open it in Perfetto)\n", spans,
                 path_.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "tenax: warning: %s -- fix: %s\n", e.cause().c_str(), e.fix().c_str());
  }
}

}  // namespace tenax::runtime::detail
