// A profile for the length of a run (RunnerOptions::profile_path), written when the run ends,
// however it ends: a crash's profile is the one most wanted. One idea: the Runner's profiling.
#pragma once

#include <filesystem>

namespace tenax::runtime::detail {

class ProfileSession {
 public:
  // Starts recording when `path` is not empty and no profile already records in this process
  // (another rank's thread): that one is left to its owner. Rank r > 0 writes
  // "<stem>.rank-<r><extension>" beside `path`.
  ProfileSession(const std::filesystem::path& path, int rank);
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;
  // Writes the profile and says where; a failure to write is a warning, never an exception.
  ~ProfileSession();

 private:
  std::filesystem::path path_;
  int rank_;
  bool owner_ = false;
};

}  // namespace tenax::runtime::detail
