// A checkpoint changed after it was written but made consistent again, as silent corruption
// between the step and the disk would leave it: rank `rank`'s file rewritten with `change`
// applied to its state (every dataset checksum valid) and the commit record updated to the new
// file (its size and digest valid). Only the state digest recorded with it can tell.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "tenax/core/state_dict.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::io::testing {

inline void forge_checkpoint(const std::filesystem::path& step_dir, int rank,
                             const std::function<void(StateDict&)>& change) {
  const std::filesystem::path file = step_dir / rank_file_name(rank);
  FileMetadata metadata;
  StateDict state = read_state_file(file, &metadata);
  change(state);
  std::filesystem::remove(file);
  write_state_file(file, state, metadata);
  std::ifstream in(step_dir / std::string(kCommitFileName));
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  CommitRecord record = parse_commit_record(text).record;
  auto& entry = record.files[static_cast<std::size_t>(rank)];
  entry.size = std::filesystem::file_size(file);
  entry.digest = xxh64_file(file);
  std::ofstream(step_dir / std::string(kCommitFileName), std::ios::trunc)
      << format_commit_record(record);
}

}  // namespace tenax::io::testing
