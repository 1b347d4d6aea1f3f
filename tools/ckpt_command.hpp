// `tenax ckpt list|verify|show`: read-only inspection of the checkpoints of a run (layout,
// names and commit record in tenax/io/checkpoint_layout.hpp, commit protocol in
// tenax/io/checkpoint_store.hpp, file format in tenax/io/state_file.hpp).
//
// Exit statuses: 0 when everything checked is valid, 1 when something is not (or cannot be
// read), 2 for usage errors (a path that does not exist or is not a run directory, checkpoint
// directory or state file, an unknown entry, a missing argument).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace tenax::tools {

inline constexpr int kCkptValid = 0;
inline constexpr int kCkptInvalid = 1;
inline constexpr int kCkptUsage = 2;

// What a PATH argument names, found from the directory layout (nothing is verified here).
struct CheckpointPath {
  enum class Kind { run_dir, step_dir, file };
  Kind kind = Kind::run_dir;
  std::filesystem::path path;        // the argument, absolute and normalised
  std::filesystem::path run_dir;     // empty for a file outside a checkpoint directory
  std::optional<std::int64_t> step;  // step_dir, or a file inside a step-<N> directory
  std::optional<int> rank;           // a file named rank-<r>.h5 inside a step-<N> directory
};

// Throws UsageError naming the path and the accepted kinds when it does not exist or is none of
// them. A run directory holds checkpoints/ or events.jsonl; RUN_DIR/checkpoints counts as its
// run directory.
[[nodiscard]] CheckpointPath resolve_checkpoint_path(const std::filesystem::path& path);

// Whether the file starts with the HDF5 signature (tenax writes no user block before it).
[[nodiscard]] bool has_hdf5_signature(const std::filesystem::path& path);

// The modification time of `path` as "2025-01-31T12:00:00Z", or "" when it cannot be read.
[[nodiscard]] std::string modification_time(const std::filesystem::path& path);

struct CkptListOptions {
  bool deep = false;  // also read every dataset (as verify does) instead of digests only
  bool json = false;
};
struct CkptVerifyOptions {
  bool json = false;
  bool deep = true;  // --deep: accepted; verify is always deep
};
struct CkptShowOptions {
  bool json = false;
  int rank = 0;             // rank file shown for a run or step directory
  std::string entry;        // non-empty: print every value of this entry
  std::size_t limit = 100;  // values printed for --entry (0: all)
};

// Each prints its report to `out` and returns the exit status; bad paths throw UsageError.
[[nodiscard]] int run_ckpt_list(const std::filesystem::path& path, const CkptListOptions& options,
                                std::ostream& out);
[[nodiscard]] int run_ckpt_verify(const std::filesystem::path& path,
                                  const CkptVerifyOptions& options, std::ostream& out);
[[nodiscard]] int run_ckpt_show(const std::filesystem::path& path, const CkptShowOptions& options,
                                std::ostream& out);

// Adds the `ckpt` subcommand to the CLI; running it stores its exit status in `exit_code`.
void add_ckpt_command(CLI::App& app, int& exit_code);

}  // namespace tenax::tools
