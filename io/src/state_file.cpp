#include "tenax/io/state_file.hpp"

#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "hdf5_support.hpp"
#include "state_file_writer.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

using detail::file_type_of;
using detail::Handle;
using detail::Hdf5Lock;
using detail::string_type;
using detail::take_hdf5_error;

constexpr int kMaxDepth = 64;  // nesting of '/' in entry names
constexpr std::size_t kMaxNameBytes = 4096;

// ---- writing -----------------------------------------------------------------------------------

class Writer {
 public:
  // `noun` names the file in messages ("state file", "HDF5 file").
  explicit Writer(const std::filesystem::path& path, const char* noun = "state file")
      : path_(path), noun_(noun) {}

  [[noreturn]] void fail(const std::string& what) const {
    std::string detail = take_hdf5_error();
    throw IoError(std::string("cannot write ") + noun_ + " '" + path_.string() + "': " + what +
                      (detail.empty() ? "" : " (HDF5: " + detail + ")"),
                  "check that the directory exists and is writable and that the disk has room "
                  "(df -h); the previous checkpoint is unaffected");
  }

  void check(herr_t status, const std::string& what) const {
    if (status < 0) fail(what);
  }
  Handle check(Handle handle, const std::string& what) const {
    if (!handle.valid()) fail(what);
    return handle;
  }

  void attr_i64(hid_t object, const char* name, std::int64_t value) const {
    Handle space = check(Handle(H5Screate(H5S_SCALAR), H5Sclose), "dataspace");
    write_attr(object, name, H5T_STD_I64LE, space.get(), &value);
  }
  void attr_u64(hid_t object, const char* name, std::uint64_t value) const {
    Handle space = check(Handle(H5Screate(H5S_SCALAR), H5Sclose), "dataspace");
    write_attr(object, name, H5T_STD_U64LE, space.get(), &value);
  }
  void attr_string(hid_t object, const char* name, std::string_view value) const {
    // Fixed-length strings need at least one byte; an empty value is one NUL.
    std::string padded(value);
    if (padded.empty()) padded.push_back('\0');
    Handle type = check(string_type(padded.size()), "string type");
    Handle space = check(Handle(H5Screate(H5S_SCALAR), H5Sclose), "dataspace");
    write_attr(object, name, type.get(), space.get(), padded.data());
  }
  void attr_shape(hid_t object, const Shape& shape) const {
    // A scalar's shape is empty: an attribute with a null dataspace (h5py reads h5py.Empty).
    Handle space;
    if (shape.rank() == 0) {
      space = check(Handle(H5Screate(H5S_NULL), H5Sclose), "dataspace");
    } else {
      const hsize_t rank = static_cast<hsize_t>(shape.rank());
      space = check(Handle(H5Screate_simple(1, &rank, nullptr), H5Sclose), "dataspace");
    }
    write_attr(object, "shape", H5T_STD_I64LE, space.get(), shape.extents().data());
  }

  void write_attr(hid_t object, const char* name, hid_t type, hid_t space, const void* data) const {
    Handle attr =
        check(Handle(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose),
              std::string("attribute '") + name + "'");
    H5S_class_t space_class = H5Sget_simple_extent_type(space);
    if (space_class != H5S_NULL) {
      check(H5Awrite(attr.get(), type, data), std::string("attribute '") + name + "'");
    }
  }

  // Creates the dataset `leaf` in `group` holding `bytes` raw bytes at `data` of `type` and
  // `space`, contiguous and unfiltered so that any reader can read it.
  Handle dataset(hid_t group, const std::string& leaf, const std::string& name, hid_t type,
                 hid_t space, const void* data, std::size_t bytes) const {
    Handle dcpl = check(Handle(H5Pcreate(H5P_DATASET_CREATE), H5Pclose), "property list");
    check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), "layout");
    // Every byte is written right away; fill values would only double the I/O.
    check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "fill time");
    check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "allocation time");
    // No access or modification times in the object header: a file is a function of its
    // contents (two runs with the same data write the same bytes).
    check(H5Pset_obj_track_times(dcpl.get(), false), "time tracking");
    Handle dset = check(
        Handle(H5Dcreate2(group, leaf.c_str(), type, space, H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
               H5Dclose),
        "dataset '" + name + "'");
    if (bytes > 0) {
      check(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
            "data of '" + name + "'");
    }
    return dset;
  }

 private:
  const std::filesystem::path& path_;
  const char* noun_;
};

// `noun` names an entry in messages ("state entry", "dataset").
void validate_names(const StateDict& state, const std::string& noun) {
  std::set<std::string_view> names;
  std::set<std::string_view> scopes;
  for (const auto& [name, value] : state.entries()) {
    const auto fix =
        "use names with non-empty components separated by single '/', none of "
        "them '.' or '..'";
    TENAX_EXPECTS(name.size() <= kMaxNameBytes, UsageError,
                  noun + " name of " + std::to_string(name.size()) + " bytes is too long",
                  "keep names under " + std::to_string(kMaxNameBytes) + " bytes");
    int depth = 0;
    std::size_t begin = 0;
    while (true) {
      const std::size_t slash = name.find('/', begin);
      const std::string_view part =
          std::string_view(name).substr(begin, slash == std::string::npos ? slash : slash - begin);
      TENAX_EXPECTS(
          !part.empty() && part != "." && part != ".." && part.find('\0') == std::string_view::npos,
          UsageError,
          noun + " '" + name +
              "' cannot be stored in an HDF5 file: its name has an "
              "empty, '.' or '..' component or a NUL byte",
          fix);
      if (slash == std::string::npos) break;
      scopes.insert(std::string_view(name).substr(0, slash));
      begin = slash + 1;
      ++depth;
    }
    TENAX_EXPECTS(
        depth < kMaxDepth, UsageError,
        noun + " '" + name + "' is nested more than " + std::to_string(kMaxDepth) + " levels deep",
        "flatten the names");
    names.insert(name);
    if (const auto* tensor = std::get_if<Tensor>(&value)) {
      TENAX_EXPECTS(tensor->defined(), UsageError, noun + " '" + name + "' is an undefined tensor",
                    "create the tensor before saving the state, or leave the entry out");
    }
  }
  for (const std::string_view scope : scopes) {
    TENAX_EXPECTS(!names.contains(scope), UsageError,
                  noun + " '" + std::string(scope) + "' is also the scope of other entries ('" +
                      std::string(scope) +
                      "/...'); an HDF5 path cannot be both a dataset and a group",
                  "rename the entry, e.g. to '" + std::string(scope) + "/value'");
  }
}

// Keeps a group's links in its object header (covered by the header's checksum) however many
// there are, instead of moving them to a fractal heap past 8 links; the reader refuses dense
// groups because HDF5 1.10 does not iterate a corrupt one safely.
herr_t compact_links(hid_t create_plist) {
  return H5Pset_link_phase_change(create_plist, 65535, 65535);
}

// Checksums of the state's host tensors, computed on a second thread in entry order while HDF5
// writes the data: the writer asks for a tensor's checksum only after writing its bytes, by when
// the hash (several times faster than the write) is done, so the pass over the data is hidden.
// Small states are hashed inline; a thread would cost more than it saves.
class BackgroundChecksums {
 public:
  explicit BackgroundChecksums(const StateDict& state) {
    std::size_t total = 0;
    for (const auto& [name, value] : state.entries()) {
      const auto* tensor = std::get_if<Tensor>(&value);
      if (tensor != nullptr && tensor->device().is_cpu()) {
        spans_.push_back({tensor->data(), tensor->nbytes()});
        total += tensor->nbytes();
      } else {
        spans_.push_back({nullptr, 0});  // not a host tensor: hashed by the writer itself
      }
    }
    sums_.resize(spans_.size());
    if (total >= kThreadThreshold) {
      hasher_ = std::jthread([this](const std::stop_token& stop) {
        for (std::size_t i = 0; i < spans_.size() && !stop.stop_requested(); ++i) {
          if (spans_[i].data != nullptr) sums_[i] = xxh64(spans_[i].data, spans_[i].bytes);
          ready_.store(i + 1, std::memory_order_release);
          ready_.notify_all();
        }
      });
    }
  }

  // The checksum of entry `index`, a host tensor.
  [[nodiscard]] std::uint64_t get(std::size_t index) {
    const Span& span = spans_[index];
    if (!hasher_.joinable()) return xxh64(span.data, span.bytes);
    std::size_t done = ready_.load(std::memory_order_acquire);
    while (done <= index) {
      ready_.wait(done, std::memory_order_acquire);
      done = ready_.load(std::memory_order_acquire);
    }
    return sums_[index];
  }

  [[nodiscard]] bool on_host(std::size_t index) const { return spans_[index].data != nullptr; }

 private:
  static constexpr std::size_t kThreadThreshold = std::size_t{8} << 20;
  struct Span {
    const void* data;
    std::size_t bytes;
  };
  std::vector<Span> spans_;
  std::vector<std::uint64_t> sums_;
  std::atomic<std::size_t> ready_{0};
  std::jthread hasher_;  // declared last: joined (on a stop request) before the rest goes
};

// Writes the entries as datasets; with `tenax_attributes` each carries the attributes of the state
// file format (kind, index, checksum, dtype, shape, length), otherwise none (a plain file).
void write_entries(const Writer& w, hid_t file, const StateDict& state, bool tenax_attributes) {
  // Every group's links and the bytes of their names, counted first: a group's object header is
  // then made large enough for all of them at once (H5Pset_est_link_info). Grown link by link,
  // HDF5 searched and split its header at every link: 1600 links in one group (an optimizer's
  // moments of an 800-layer model) took 8.7 s to write.
  std::map<std::string, std::pair<unsigned, std::size_t>, std::less<>> links;
  for (const auto& [name, value] : state.entries()) {
    std::size_t begin = 0;
    while (true) {
      const std::size_t next = name.find('/', begin);
      const std::string parent = begin == 0 ? std::string() : name.substr(0, begin - 1);
      auto& [count, bytes] = links[parent];
      const std::size_t end = next == std::string::npos ? name.size() : next;
      // A group's link is counted once: when its first entry is seen.
      const bool new_link = next == std::string::npos || !links.contains(name.substr(0, next));
      if (new_link) {
        ++count;
        bytes += end - begin;
      }
      if (next == std::string::npos) break;
      links.try_emplace(name.substr(0, next));
      begin = next + 1;
    }
  }
  std::map<std::string, Handle, std::less<>> groups;
  auto group_of = [&](const std::string& name, std::string& leaf) -> hid_t {
    const std::size_t slash = name.rfind('/');
    if (slash == std::string::npos) {
      leaf = name;
      return file;
    }
    leaf = name.substr(slash + 1);
    hid_t parent = file;
    std::size_t begin = 0;
    while (true) {
      const std::size_t next = name.find('/', begin);
      if (next == std::string::npos || next > slash) break;
      const std::string scope = name.substr(0, next);
      auto it = groups.find(scope);
      if (it == groups.end()) {
        const std::string part = name.substr(begin, next - begin);
        Handle gcpl = w.check(Handle(H5Pcreate(H5P_GROUP_CREATE), H5Pclose), "property list");
        w.check(compact_links(gcpl.get()), "link storage");
        w.check(H5Pset_obj_track_times(gcpl.get(), false), "time tracking");
        if (const auto found = links.find(scope); found != links.end() && found->second.first > 0) {
          const auto [count, bytes] = found->second;
          w.check(H5Pset_est_link_info(
                      gcpl.get(), count,
                      static_cast<unsigned>(std::min<std::size_t>(bytes / count + 1, 65535))),
                  "link estimate");
        }
        Handle group(H5Gcreate2(parent, part.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                     H5Gclose);
        it = groups.emplace(scope, w.check(std::move(group), "group '" + scope + "'")).first;
      }
      parent = it->second.get();
      begin = next + 1;
    }
    return parent;
  };

  std::optional<BackgroundChecksums> checksums;
  if (tenax_attributes) checksums.emplace(state);
  std::int64_t index = 0;
  for (const auto& [name, value] : state.entries()) {
    std::string leaf;
    const hid_t group = group_of(name, leaf);
    Handle scalar = w.check(Handle(H5Screate(H5S_SCALAR), H5Sclose), "dataspace");
    Handle dset;
    std::uint64_t checksum = 0;
    const char* kind = "";
    if (const auto* stored = std::get_if<Tensor>(&value)) {
      // Tensors on a device are copied to the host; host tensors are written in place.
      const Tensor host = stored->to(Device::cpu());
      const Shape& shape = host.shape();
      Handle space;
      if (shape.rank() == 0) {
        space = std::move(scalar);
      } else {
        std::vector<hsize_t> dims(shape.extents().begin(), shape.extents().end());
        space = w.check(Handle(H5Screate_simple(shape.rank(), dims.data(), nullptr), H5Sclose),
                        "dataspace of '" + name + "'");
      }
      Handle type = w.check(file_type_of(host.dtype()), "type of '" + name + "'");
      dset = w.dataset(group, leaf, name, type.get(), space.get(), host.data(), host.nbytes());
      kind = "tensor";
      if (tenax_attributes) {
        const auto entry = static_cast<std::size_t>(index);
        checksum =
            checksums->on_host(entry) ? checksums->get(entry) : xxh64(host.data(), host.nbytes());
        w.attr_string(dset.get(), "dtype", to_string(host.dtype()));
        w.attr_shape(dset.get(), shape);
      }
    } else if (const auto* integer = std::get_if<std::int64_t>(&value)) {
      dset = w.dataset(group, leaf, name, H5T_STD_I64LE, scalar.get(), integer, 8);
      checksum = xxh64(integer, 8);
      kind = "integer";
    } else if (const auto* real = std::get_if<double>(&value)) {
      dset = w.dataset(group, leaf, name, H5T_IEEE_F64LE, scalar.get(), real, 8);
      checksum = xxh64(real, 8);
      kind = "real";
    } else {
      const std::string& text = std::get<std::string>(value);
      std::string padded = text;
      if (padded.empty()) padded.push_back('\0');
      Handle type = w.check(string_type(padded.size()), "string type");
      dset = w.dataset(group, leaf, name, type.get(), scalar.get(), padded.data(), padded.size());
      checksum = xxh64(text.data(), text.size());
      kind = "string";
      if (tenax_attributes) {
        w.attr_i64(dset.get(), "length", static_cast<std::int64_t>(text.size()));
      }
    }
    if (!tenax_attributes) continue;
    w.attr_string(dset.get(), "kind", kind);
    w.attr_i64(dset.get(), "index", index++);
    w.attr_u64(dset.get(), "checksum", checksum);
  }
}

}  // namespace

std::string_view tenax_version() noexcept { return TENAX_VERSION_STRING; }

void write_state_file(const std::filesystem::path& path, const StateDict& state,
                      const FileMetadata& metadata) {
  replace_file(path, "the state file", [&](const std::filesystem::path& temporary) {
    detail::write_hdf5_file(temporary, state, &metadata);
  });
}

void detail::write_hdf5_file(const std::filesystem::path& path, const StateDict& state,
                             const FileMetadata* metadata) {
  validate_names(state, metadata != nullptr ? "state entry" : "dataset");
  if (metadata != nullptr) {
    TENAX_EXPECTS(
        metadata->world_size >= 1 && metadata->rank >= 0 && metadata->rank < metadata->world_size,
        UsageError,
        "state file metadata has rank " + std::to_string(metadata->rank) + " of world size " +
            std::to_string(metadata->world_size),
        "use 0 <= rank < world_size");
  }
  // The callers write a temporary of their own; whatever else stands here is refused, never
  // truncated (a device) or written through (a symbolic link).
  require_output_path(path, metadata != nullptr ? "the state file" : "the HDF5 file");
  Writer w(path, metadata != nullptr ? "state file" : "HDF5 file");
  {
    Hdf5Lock lock;
    Handle fapl = w.check(Handle(H5Pcreate(H5P_FILE_ACCESS), H5Pclose), "property list");
    // The 1.8 object formats checksum all metadata (superblock v2, object headers v2), so that
    // HDF5 itself rejects corrupted metadata, and every HDF5 release since 1.8 reads them.
    w.check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), "format bounds");
    Handle fcpl = w.check(Handle(H5Pcreate(H5P_FILE_CREATE), H5Pclose), "property list");
    w.check(compact_links(fcpl.get()), "link storage");
    w.check(H5Pset_obj_track_times(fcpl.get(), false), "time tracking");
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose);
    file = w.check(std::move(file), "cannot create the file");
    const hid_t root = file.get();
    if (metadata != nullptr) {
      w.attr_i64(root, "format_version", kStateFileFormatVersion);
      w.attr_string(root, "tenax_version", tenax_version());
      w.attr_i64(root, "step", metadata->step);
      w.attr_i64(root, "rank", metadata->rank);
      w.attr_i64(root, "world_size", metadata->world_size);
      w.attr_i64(root, "entry_count", static_cast<std::int64_t>(state.size()));
      w.attr_string(root, "config", metadata->config);
    }
    write_entries(w, root, state, /*tenax_attributes=*/metadata != nullptr);
    // Closing flushes the metadata; on a full disk this is where the write fails.
    if (!file.close()) w.fail("flushing the file");
  }
}

namespace {

// The tensors of `attributed` (each with every attribute) and of `plain` (none) as the datasets
// of a state file replaced whole at `path`.
void write_datasets(const std::filesystem::path& path,
                    const std::vector<std::pair<std::string, Tensor>>& attributed,
                    const std::vector<std::pair<std::string, Tensor>>& plain,
                    const std::vector<std::pair<std::string, double>>& attributes,
                    const FileMetadata& metadata,
                    const std::vector<std::pair<std::string, std::string>>& text_attributes) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : attributes) keys.push_back(key);
  for (const auto& [key, value] : text_attributes) keys.push_back(key);
  for (const auto& [name, tensor] : attributed) {
    for (const std::string& key : keys) {
      for (const char* reserved : {"kind", "index", "checksum", "dtype", "shape", "length"}) {
        TENAX_EXPECTS(key != reserved, UsageError,
                      "attribute '" + key + "' of '" + name +
                          "' clashes with an attribute every state file entry carries",
                      "pick another attribute name");
      }
    }
  }
  StateDict state;
  for (const auto& [name, tensor] : attributed) state.set(name, tensor);
  for (const auto& [other, t] : plain) {
    TENAX_EXPECTS(!state.contains(other), UsageError,
                  "two datasets of the file are named '" + other + "'",
                  "give every dataset its own name");
    state.set(other, t);
  }
  // Written whole beside `path` and renamed over it: a failure removes only the temporary.
  replace_file(path, "the state file", [&](const std::filesystem::path& temporary) {
    detail::write_hdf5_file(temporary, state, &metadata);
    Writer w(path);
    Hdf5Lock lock;
    Handle file =
        w.check(Handle(H5Fopen(temporary.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose), "reopen");
    for (const auto& [name, tensor] : attributed) {
      Handle dataset = w.check(Handle(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose),
                               "dataset '" + name + "'");
      for (const auto& [key, value] : attributes) {
        Handle space = w.check(Handle(H5Screate(H5S_SCALAR), H5Sclose), "dataspace");
        w.write_attr(dataset.get(), key.c_str(), H5T_IEEE_F64LE, space.get(), &value);
      }
      for (const auto& [key, value] : text_attributes)
        w.attr_string(dataset.get(), key.c_str(), value);
    }
    if (!file.close()) w.fail("flushing the file");
  });
}

}  // namespace

void write_tensor_file(const std::filesystem::path& path, std::string_view name,
                       const Tensor& tensor,
                       const std::vector<std::pair<std::string, double>>& attributes,
                       const FileMetadata& metadata,
                       const std::vector<std::pair<std::string, std::string>>& text_attributes,
                       const std::vector<std::pair<std::string, Tensor>>& more) {
  write_datasets(path, {{std::string(name), tensor}}, more, attributes, metadata, text_attributes);
}

void write_tensors_file(const std::filesystem::path& path,
                        const std::vector<std::pair<std::string, Tensor>>& tensors,
                        const std::vector<std::pair<std::string, double>>& attributes,
                        const FileMetadata& metadata,
                        const std::vector<std::pair<std::string, std::string>>& text_attributes) {
  write_datasets(path, tensors, {}, attributes, metadata, text_attributes);
}

}  // namespace tenax::io
