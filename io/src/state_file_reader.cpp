// read_state_file: every value read from the file is validated before it sizes an allocation or
// is returned. HDF5 itself rejects metadata whose checksum is wrong (the writer uses the 1.8
// formats, which checksum all metadata); this reader checks everything else.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <system_error>
#include <vector>

#include "hdf5_support.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::io {
namespace {

using detail::file_type_of;
using detail::Handle;
using detail::Hdf5Lock;
using detail::take_hdf5_error;

constexpr std::size_t kMaxShortString = 64;  // kind and dtype attributes
// Tensors larger than this are read and hashed in slabs of about this size (see read_tensor).
constexpr std::uint64_t kReadSlabBytes = std::uint64_t{8} << 20;

class Reader {
 public:
  Reader(const std::filesystem::path& path, const ReadOptions& options)
      : path_(path), options_(options) {}

  // Throws the IoError for a problem with the file as a whole ("" entry) or with one entry.
  [[noreturn]] void fail(const std::string& entry, const std::string& reason) const {
    // The HDF5 error stack may only be touched under the HDF5 lock.
    const std::string detail = locked_ ? take_hdf5_error() : std::string();
    throw IoError("state file '" + path_.string() + "'" +
                      (entry.empty() ? "" : ", entry '" + entry + "'") + ": " + reason +
                      (detail.empty() ? "" : " (HDF5: " + detail + ")"),
                  "the file is corrupt, truncated or not a tenax state file: use an older "
                  "checkpoint (the checkpoint store falls back to the newest valid one by "
                  "itself), or write the state again");
  }
  Handle need(Handle handle, const std::string& entry, const std::string& what) const {
    if (!handle.valid()) fail(entry, "cannot " + what);
    return handle;
  }

  StateDict read(FileMetadata* metadata);

 private:
  Handle open_attr(hid_t object, const char* name, const std::string& entry) const {
    if (H5Aexists(object, name) <= 0) fail(entry, std::string("attribute '") + name + "' missing");
    return need(Handle(H5Aopen(object, name, H5P_DEFAULT), H5Aclose), entry,
                std::string("open attribute '") + name + "'");
  }

  // Number of elements of a scalar or simple dataspace; nullopt for a null or bad one.
  std::optional<hsize_t> element_count(hid_t space) const {
    const H5S_class_t space_class = H5Sget_simple_extent_type(space);
    if (space_class == H5S_SCALAR) return 1;
    if (space_class != H5S_SIMPLE) return std::nullopt;
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    if (n < 0) return std::nullopt;
    return static_cast<hsize_t>(n);
  }

  template <class T>
  T integer_attr(hid_t object, const char* name, const std::string& entry, hid_t mem_type) const {
    Handle attr = open_attr(object, name, entry);
    Handle type = need(Handle(H5Aget_type(attr.get()), H5Tclose), entry, "read attribute type");
    Handle space = need(Handle(H5Aget_space(attr.get()), H5Sclose), entry, "read dataspace");
    if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != sizeof(T) ||
        element_count(space.get()) != hsize_t{1}) {
      fail(entry, std::string("attribute '") + name + "' is not one 64-bit integer");
    }
    T value{};
    if (H5Aread(attr.get(), mem_type, &value) < 0) {
      fail(entry, std::string("cannot read attribute '") + name + "'");
    }
    return value;
  }
  std::int64_t i64_attr(hid_t object, const char* name, const std::string& entry) const {
    return integer_attr<std::int64_t>(object, name, entry, H5T_NATIVE_INT64);
  }

  std::string string_attr(hid_t object, const char* name, const std::string& entry,
                          std::size_t limit) const {
    Handle attr = open_attr(object, name, entry);
    Handle type = need(Handle(H5Aget_type(attr.get()), H5Tclose), entry, "read attribute type");
    Handle space = need(Handle(H5Aget_space(attr.get()), H5Sclose), entry, "read dataspace");
    const std::size_t size = H5Tget_size(type.get());
    if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0 ||
        size == 0 || size > limit || element_count(space.get()) != hsize_t{1}) {
      fail(entry, std::string("attribute '") + name + "' is not a fixed-length string of at most " +
                      std::to_string(limit) + " bytes");
    }
    std::string value(size, '\0');
    if (H5Aread(attr.get(), type.get(), value.data()) < 0) {
      fail(entry, std::string("cannot read attribute '") + name + "'");
    }
    value.resize(std::strlen(value.c_str()));
    return value;
  }

  // Checks that a dataset is stored as the writer stores it: contiguous, unfiltered, exactly
  // `bytes` bytes, inside the file. Reading a chunked or compressed dataset could make HDF5
  // allocate far more than the dataset's size.
  void check_storage(hid_t dset, const std::string& entry, std::uint64_t bytes) const {
    Handle dcpl = need(Handle(H5Dget_create_plist(dset), H5Pclose), entry, "read its layout");
    if (H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS || H5Pget_nfilters(dcpl.get()) != 0) {
      fail(entry, "dataset is not stored contiguously without filters");
    }
    if (bytes == 0) return;
    const hsize_t stored = H5Dget_storage_size(dset);
    const haddr_t offset = H5Dget_offset(dset);
    if (stored != bytes || offset == HADDR_UNDEF || offset > file_size_ ||
        file_size_ - offset < bytes) {
      fail(entry, "its data (" + std::to_string(bytes) + " bytes) is not stored in the file (" +
                      std::to_string(stored) + " bytes stored, file of " +
                      std::to_string(file_size_) + " bytes): the file is truncated or corrupt");
    }
  }

  void charge(const std::string& entry, std::uint64_t bytes) {
    if (bytes > options_.max_bytes - total_bytes_) {
      fail(entry, "the entries need more than the limit of " + std::to_string(options_.max_bytes) +
                      " bytes (ReadOptions::max_bytes); a corrupt size, or raise the limit");
    }
    total_bytes_ += bytes;
  }

  void verify(const std::string& entry, std::uint64_t expected, const void* data,
              std::size_t bytes) const {
    const std::uint64_t actual = xxh64(data, bytes);
    if (actual != expected) {
      fail(entry, "checksum mismatch (stored " + to_hex64(expected) + ", data hashes to " +
                      to_hex64(actual) + "): the data is corrupt");
    }
  }

  void walk(hid_t group, const std::string& prefix, int depth, std::vector<std::string>& datasets);
  StateDict::Value read_entry(hid_t file, const std::string& name);
  Tensor read_tensor(hid_t dset, const std::string& name, std::uint64_t checksum);

  const std::filesystem::path& path_;
  const ReadOptions& options_;
  std::uint64_t file_size_ = 0;
  std::uint64_t total_bytes_ = 0;
  bool locked_ = false;
  std::size_t link_budget_ = 0;
};

struct LinkList {
  std::vector<std::string> names;
  bool non_hard_link = false;
};

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* links = static_cast<LinkList*>(data);
  links->names.emplace_back(name);
  if (info->type != H5L_TYPE_HARD) {
    links->non_hard_link = true;
    return 1;  // stop: the writer makes hard links only
  }
  return 0;
}

Tensor Reader::read_tensor(hid_t dset, const std::string& name, std::uint64_t checksum) {
  const std::string dtype_name = string_attr(dset, "dtype", name, kMaxShortString);
  DType dtype{};
  bool known = false;
  for (const DType candidate : kAllDTypes) {
    if (to_string(candidate) == dtype_name) {
      dtype = candidate;
      known = true;
    }
  }
  if (!known) fail(name, "unknown dtype '" + dtype_name + "'");

  Handle type = need(Handle(H5Dget_type(dset), H5Tclose), name, "read its type");
  Handle expected = need(file_type_of(dtype), name, "build the type of " + dtype_name);
  if (H5Tequal(type.get(), expected.get()) <= 0) {
    fail(name, "stored type does not match its dtype attribute '" + dtype_name + "'");
  }

  // The dataset's own dataspace is the shape; the shape attribute must agree with it.
  Handle space = need(Handle(H5Dget_space(dset), H5Sclose), name, "read its dataspace");
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  const int rank = space_class == H5S_SCALAR ? 0 : H5Sget_simple_extent_ndims(space.get());
  if ((space_class != H5S_SCALAR && space_class != H5S_SIMPLE) || rank < 0 ||
      rank > Shape::kMaxRank) {
    fail(name, "dataspace is not a tensor of rank 0 to " + std::to_string(Shape::kMaxRank));
  }
  hsize_t dims[Shape::kMaxRank] = {};
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims, nullptr) != rank) {
    fail(name, "cannot read its extents");
  }
  Handle shape_attr = open_attr(dset, "shape", name);
  Handle shape_type = need(Handle(H5Aget_type(shape_attr.get()), H5Tclose), name, "read type");
  Handle shape_space =
      need(Handle(H5Aget_space(shape_attr.get()), H5Sclose), name, "read dataspace");
  const H5S_class_t shape_class = H5Sget_simple_extent_type(shape_space.get());
  const bool shape_ok = H5Tget_class(shape_type.get()) == H5T_INTEGER &&
                        H5Tget_size(shape_type.get()) == 8 &&
                        (rank == 0 ? shape_class == H5S_NULL
                                   : shape_class == H5S_SIMPLE &&
                                         H5Sget_simple_extent_ndims(shape_space.get()) == 1 &&
                                         H5Sget_simple_extent_npoints(shape_space.get()) == rank);
  if (!shape_ok) fail(name, "shape attribute does not match the dataset's rank");
  std::int64_t extents[Shape::kMaxRank] = {};
  if (rank > 0 && H5Aread(shape_attr.get(), H5T_NATIVE_INT64, extents) < 0) {
    fail(name, "cannot read the shape attribute");
  }

  // Element count and size with overflow checks, before anything is allocated.
  std::uint64_t numel = 1;
  for (int axis = 0; axis < rank; ++axis) {
    if (extents[axis] < 0 || static_cast<hsize_t>(extents[axis]) != dims[axis]) {
      fail(name, "shape attribute disagrees with the dataset's extents");
    }
    const auto extent = static_cast<std::uint64_t>(extents[axis]);
    if (extent != 0 && numel > options_.max_bytes / extent) {
      fail(name, "its shape " + to_string(Shape(std::span<const std::int64_t>(extents, rank))) +
                     " holds more than the limit of " + std::to_string(options_.max_bytes) +
                     " bytes (ReadOptions::max_bytes)");
    }
    numel *= extent;
  }
  const std::uint64_t element = size_of(dtype);
  if (numel > options_.max_bytes / element) {
    fail(name, "it holds more than the limit of " + std::to_string(options_.max_bytes) +
                   " bytes (ReadOptions::max_bytes)");
  }
  const std::uint64_t bytes = numel * element;
  charge(name, bytes);
  check_storage(dset, name, bytes);

  Tensor tensor =
      Tensor::empty(Shape(std::span<const std::int64_t>(extents, rank)), dtype, Device::cpu());
  if (bytes <= kReadSlabBytes || rank == 0 || dims[0] < 2) {
    if (bytes > 0 &&
        H5Dread(dset, expected.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, tensor.data()) < 0) {
      fail(name, "cannot read its data");
    }
    verify(name, checksum, tensor.data(), bytes);
    return tensor;
  }
  // Large tensors are read in slabs along the first axis and hashed slab by slab while each is
  // still in the cache: one pass over memory instead of two, and on a cold file the next slab's
  // disk read (ahead of us: the loader's digest thread reads the same file) overlaps the hash.
  const std::uint64_t row_bytes = bytes / dims[0];
  const hsize_t rows_per_slab =
      std::max<hsize_t>(1, kReadSlabBytes / std::max<std::uint64_t>(row_bytes, 1));
  std::vector<hsize_t> start(static_cast<std::size_t>(rank), 0);
  std::vector<hsize_t> count(dims, dims + rank);
  Xxh64 hash;
  auto* out = static_cast<unsigned char*>(tensor.data());
  for (hsize_t row = 0; row < dims[0]; row += rows_per_slab) {
    start[0] = row;
    count[0] = std::min<hsize_t>(rows_per_slab, dims[0] - row);
    Handle memory_space = Handle(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
    if (!memory_space.valid() ||
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr) < 0 ||
        H5Dread(dset, expected.get(), memory_space.get(), space.get(), H5P_DEFAULT,
                out + row * row_bytes) < 0) {
      fail(name, "cannot read its data");
    }
    hash.update(out + row * row_bytes, count[0] * row_bytes);
  }
  if (hash.digest() != checksum) {
    fail(name, "checksum mismatch (stored " + to_hex64(checksum) + ", data hashes to " +
                   to_hex64(hash.digest()) + "): the data is corrupt");
  }
  return tensor;
}

// Lists the datasets below `group`. The writer keeps every group's links compact (in the
// checksummed object header); dense link storage lives in a fractal heap that HDF5 1.10 does not
// parse safely when corrupt, so such groups are refused before they are iterated. The link
// budget bounds the work of a hostile file whose hard links form cycles.
void Reader::walk(hid_t group, const std::string& prefix, int depth,
                  std::vector<std::string>& datasets) {
  H5G_info_t info{};
  if (H5Gget_info(group, &info) < 0) fail(prefix, "cannot read the group");
  if (info.storage_type != H5G_STORAGE_TYPE_COMPACT) {
    fail(prefix, "group does not use the compact link storage tenax writes");
  }
  if (info.nlinks > link_budget_) fail(prefix, "holds more objects than its entry_count allows");
  if (depth > 64) fail(prefix, "groups are nested more than 64 levels deep");
  LinkList links;
  if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &links) < 0) {
    fail(prefix, "cannot list the group");
  }
  if (links.names.size() > link_budget_) fail(prefix, "holds more objects than entry_count allows");
  link_budget_ -= links.names.size();
  for (const std::string& name : links.names) {
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    if (links.non_hard_link && &name == &links.names.back()) {
      fail(path, "is a soft or external link");
    }
    Handle object =
        need(Handle(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose), path, "open the object");
    const H5I_type_t type = H5Iget_type(object.get());
    if (type == H5I_DATASET) {
      datasets.push_back(path);
    } else if (type == H5I_GROUP) {
      walk(object.get(), path, depth + 1, datasets);
    } else {
      fail(path, "is neither a group nor a dataset");
    }
  }
}

StateDict::Value Reader::read_entry(hid_t file, const std::string& name) {
  Handle dset =
      need(Handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose), name, "open the dataset");
  const std::string kind = string_attr(dset.get(), "kind", name, kMaxShortString);
  const auto checksum =
      integer_attr<std::uint64_t>(dset.get(), "checksum", name, H5T_NATIVE_UINT64);
  if (kind == "tensor") return read_tensor(dset.get(), name, checksum);

  Handle type = need(Handle(H5Dget_type(dset.get()), H5Tclose), name, "read its type");
  Handle space = need(Handle(H5Dget_space(dset.get()), H5Sclose), name, "read its dataspace");
  if (H5Sget_simple_extent_type(space.get()) != H5S_SCALAR) {
    fail(name, "a " + kind + " entry must have a scalar dataspace");
  }
  if (kind == "integer" || kind == "real") {
    const hid_t expected = kind == "integer" ? H5T_STD_I64LE : H5T_IEEE_F64LE;
    if (H5Tequal(type.get(), expected) <= 0) fail(name, "stored type does not match " + kind);
    charge(name, 8);
    check_storage(dset.get(), name, 8);
    unsigned char raw[8];
    if (H5Dread(dset.get(), expected, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) < 0) {
      fail(name, "cannot read its value");
    }
    verify(name, checksum, raw, 8);
    if (kind == "integer") {
      std::int64_t value;
      std::memcpy(&value, raw, 8);
      return value;
    }
    double value;
    std::memcpy(&value, raw, 8);
    return value;
  }
  if (kind == "string") {
    const std::size_t size = H5Tget_size(type.get());
    if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0 ||
        size == 0 || size > options_.max_string_bytes) {
      fail(name, "not a fixed-length string of at most " +
                     std::to_string(options_.max_string_bytes) +
                     " bytes (ReadOptions::max_string_bytes)");
    }
    const std::int64_t length = i64_attr(dset.get(), "length", name);
    if (length < 0 || static_cast<std::uint64_t>(length) > size ||
        (length > 0 && static_cast<std::uint64_t>(length) != size)) {
      fail(name, "length attribute " + std::to_string(length) +
                     " does not match the stored string of " + std::to_string(size) + " bytes");
    }
    charge(name, size);
    check_storage(dset.get(), name, size);
    std::string value(size, '\0');
    if (H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()) < 0) {
      fail(name, "cannot read its value");
    }
    value.resize(static_cast<std::size_t>(length));
    verify(name, checksum, value.data(), value.size());
    return value;
  }
  fail(name, "unknown kind '" + kind + "'");
}

StateDict Reader::read(FileMetadata* metadata) {
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  if (status.type() == std::filesystem::file_type::not_found) fail("", "does not exist");
  if (ec) fail("", "cannot be accessed: " + ec.message());
  if (status.type() != std::filesystem::file_type::regular) fail("", "is not a regular file");
  file_size_ = std::filesystem::file_size(path_, ec);
  if (ec) fail("", "cannot read its size: " + ec.message());

  Hdf5Lock lock;
  locked_ = true;
  Handle fapl = need(Handle(H5Pcreate(H5P_FILE_ACCESS), H5Pclose), "", "create property list");
  // Strong close: closing the file closes anything a failed read left open.
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  Handle file = need(Handle(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose), "",
                     "open it as HDF5");
  const hid_t root = file.get();

  FileMetadata meta;
  meta.format_version = i64_attr(root, "format_version", "");
  if (meta.format_version != kStateFileFormatVersion) {
    fail("", "format_version " + std::to_string(meta.format_version) + " is not " +
                 std::to_string(kStateFileFormatVersion) + " (written by another tenax version?)");
  }
  meta.tenax_version = string_attr(root, "tenax_version", "", kMaxShortString);
  meta.step = i64_attr(root, "step", "");
  const std::int64_t rank = i64_attr(root, "rank", "");
  const std::int64_t world_size = i64_attr(root, "world_size", "");
  if (world_size < 1 || world_size > std::numeric_limits<int>::max() || rank < 0 ||
      rank >= world_size) {
    fail("", "rank " + std::to_string(rank) + " of world size " + std::to_string(world_size) +
                 " is impossible");
  }
  meta.rank = static_cast<int>(rank);
  meta.world_size = static_cast<int>(world_size);
  // Files written before tenax stopped writing a time (a file is a function of its contents).
  if (H5Aexists(root, "created") > 0) {
    meta.created = string_attr(root, "created", "", kMaxShortString);
  }
  meta.config = string_attr(root, "config", "", options_.max_string_bytes);
  const std::int64_t entry_count = i64_attr(root, "entry_count", "");
  if (entry_count < 0 || static_cast<std::uint64_t>(entry_count) > options_.max_entries) {
    fail("", "entry_count " + std::to_string(entry_count) + " is outside 0.." +
                 std::to_string(options_.max_entries) + " (ReadOptions::max_entries)");
  }

  link_budget_ = static_cast<std::size_t>(entry_count) * 8 + 1024;
  std::vector<std::string> datasets;
  walk(root, "", 0, datasets);

  std::vector<std::optional<std::pair<std::string, StateDict::Value>>> entries(
      static_cast<std::size_t>(entry_count));
  std::size_t found = 0;
  for (const std::string& name : datasets) {
    Handle dset =
        need(Handle(H5Dopen2(root, name.c_str(), H5P_DEFAULT), H5Dclose), name, "open the dataset");
    const std::int64_t index = i64_attr(dset.get(), "index", name);
    dset.close();
    if (index < 0 || index >= entry_count || entries[static_cast<std::size_t>(index)]) {
      fail(name, "index " + std::to_string(index) + " is out of range or used twice (" +
                     std::to_string(entry_count) + " entries)");
    }
    entries[static_cast<std::size_t>(index)].emplace(name, read_entry(root, name));
    ++found;
  }
  if (found != static_cast<std::size_t>(entry_count)) {
    fail("", "holds " + std::to_string(found) + " entries, entry_count says " +
                 std::to_string(entry_count));
  }
  if (!file.close()) fail("", "cannot close it");

  StateDict state;
  for (auto& entry : entries) state.set(entry->first, std::move(entry->second));
  if (metadata != nullptr) *metadata = std::move(meta);
  return state;
}

}  // namespace

StateDict read_state_file(const std::filesystem::path& path, FileMetadata* metadata,
                          const ReadOptions& options) {
  return Reader(path, options).read(metadata);
}

}  // namespace tenax::io
