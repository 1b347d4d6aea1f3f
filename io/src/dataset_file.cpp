// read_dataset / has_dataset / write_datasets: plain HDF5 datasets from other tools. The file is
// hostile: every number read from it is checked before it sizes an allocation, and anything that
// would make HDF5 read outside the file (external links, external storage, virtual datasets) or
// allocate without bound (huge chunks, unknown filters) is refused before the data is read.
#include "tenax/io/dataset_file.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <system_error>

#include "hdf5_support.hpp"
#include "state_file_writer.hpp"
#include "tenax/core/regular_file.hpp"

namespace tenax::io {
namespace {

using detail::file_type_of;
using detail::Handle;
using detail::Hdf5Lock;
using detail::take_hdf5_error;

constexpr std::size_t kListedNames = 20;    // dataset names a "missing dataset" error lists
constexpr std::size_t kListBudget = 10000;  // links visited at most while listing
constexpr int kMaxListDepth = 32;           // group nesting followed while listing
constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{256} << 20;  // one chunk, uncompressed

constexpr const char* kAcceptedTypes =
    "float64, float32, float16 (IEEE binary16), int64 and int32, in either byte order";
constexpr const char* kCorruptFix =
    "the file is truncated, corrupt or not HDF5: write it again, or copy it again from its source "
    "(h5dump -H FILE shows what HDF5 makes of it)";

// "a/b" for "a/b" or "/a/b"; UsageError for a name that is not an HDF5 path to an object.
std::string dataset_path(std::string_view name) {
  std::string path(name.starts_with('/') ? name.substr(1) : name);
  bool ok = !path.empty() && path.find('\0') == std::string::npos;
  for (std::size_t begin = 0; ok;) {
    const std::size_t slash = path.find('/', begin);
    const std::string_view part = std::string_view(path).substr(
        begin, slash == std::string::npos ? std::string::npos : slash - begin);
    ok = !part.empty() && part != "." && part != "..";
    if (slash == std::string::npos) break;
    begin = slash + 1;
  }
  TENAX_EXPECTS(ok, UsageError,
                "dataset name '" + std::string(name) +
                    "' is not an HDF5 path (it is empty or has an empty, '.' or '..' component "
                    "or a NUL byte)",
                "name the dataset by its path in the file, e.g. 'u' or 'fields/u' (h5ls -r FILE "
                "lists them)");
  return path;
}

// The IEEE layouts read_dataset accepts for floats, as HDF5 describes a floating type.
struct FloatLayout {
  DType dtype;
  std::size_t bits, sign_pos, exp_pos, exp_bits, mant_pos, mant_bits, exp_bias;
};
constexpr FloatLayout kFloatLayouts[] = {
    {DType::f64, 64, 63, 52, 11, 0, 52, 1023},
    {DType::f32, 32, 31, 23, 8, 0, 23, 127},
    {DType::f16, 16, 15, 10, 5, 0, 10, 15},
};

// The DType a dataset of file type `type` is read as, or nothing when it is not accepted.
std::optional<DType> accepted_dtype(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  const H5T_order_t order = H5Tget_order(type);
  const std::size_t size = H5Tget_size(type);
  if ((type_class != H5T_INTEGER && type_class != H5T_FLOAT) ||
      (order != H5T_ORDER_LE && order != H5T_ORDER_BE) || H5Tget_precision(type) != size * 8 ||
      H5Tget_offset(type) != 0) {
    return std::nullopt;
  }
  if (type_class == H5T_INTEGER) {
    if (H5Tget_sign(type) != H5T_SGN_2) return std::nullopt;
    if (size == 8) return DType::i64;
    if (size == 4) return DType::i32;
    return std::nullopt;
  }
  std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0 ||
      H5Tget_norm(type) != H5T_NORM_IMPLIED) {
    return std::nullopt;
  }
  for (const FloatLayout& layout : kFloatLayouts) {
    if (size * 8 == layout.bits && spos == layout.sign_pos && epos == layout.exp_pos &&
        esize == layout.exp_bits && mpos == layout.mant_pos && msize == layout.mant_bits &&
        H5Tget_ebias(type) == layout.exp_bias) {
      return layout.dtype;
    }
  }
  return std::nullopt;
}

// What a file type is, in words, for the message that refuses it.
std::string describe_type(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  const std::string bytes = std::to_string(size) + " byte" + (size == 1 ? "" : "s");
  const std::string bits = std::to_string(size * 8) + "-bit";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned " : "signed ") + bits +
             " integer" +
             (H5Tget_precision(type) != size * 8
                  ? " of " + std::to_string(H5Tget_precision(type)) + " significant bits"
                  : "");
    case H5T_FLOAT: {
      std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
      H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize);
      return bits + " float with " + std::to_string(esize) + " exponent and " +
             std::to_string(msize) + " mantissa bits" +
             (size == 2 && esize == 8 ? " (bfloat16, which tenax stores as uint16)" : "");
    }
    case H5T_STRING:
      return H5Tis_variable_str(type) > 0 ? "variable-length string"
                                          : "fixed-length string of " + bytes;
    case H5T_COMPOUND:
      return "compound type (a struct, or a complex number) of " + bytes;
    case H5T_ENUM:
      return "enum type of " + bytes + " (h5py stores bool as one)";
    case H5T_BITFIELD:
      return "bitfield of " + bytes;
    case H5T_OPAQUE:
      return "opaque type of " + bytes;
    case H5T_REFERENCE:
      return "object or region reference";
    case H5T_VLEN:
      return "variable-length sequence";
    case H5T_ARRAY:
      return "array type of " + bytes + " per element";
    case H5T_TIME:
      return "time type";
    default:
      return "type HDF5 cannot classify";
  }
}

// Where a dataset name leads in a file.
enum class Found { dataset, missing, group, link };

struct Listing {
  std::size_t max_names = kListedNames;
  std::vector<std::string> names;  // the first max_names datasets, depth first by name
  std::size_t datasets = 0;        // datasets seen
  std::size_t budget = kListBudget;
  bool stopped = false;  // the budget, the depth limit or an unreadable group ended the walk
};

struct HardLinks {
  std::vector<std::string> names;
  std::size_t limit = 0;
};

herr_t collect_hard_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* links = static_cast<HardLinks*>(data);
  if (links->names.size() >= links->limit) return 1;  // stop: over the budget
  if (info->type == H5L_TYPE_HARD) links->names.emplace_back(name);
  return 0;
}

class DatasetReader {
 public:
  DatasetReader(const std::filesystem::path& file, std::string_view name)
      : file_(file), name_(dataset_path(name)) {}

  [[noreturn]] void fail(const std::string& reason, const std::string& fix = kCorruptFix) const {
    // The HDF5 error stack may only be touched under the HDF5 lock.
    const std::string detail = locked_ ? take_hdf5_error() : std::string();
    throw IoError("HDF5 file '" + file_.string() + "', dataset '" + name_ + "': " + reason +
                      (detail.empty() ? "" : " (HDF5: " + detail + ")"),
                  fix);
  }

  // Opens the file read-only; the caller holds the HDF5 lock for as long as the handle lives.
  Handle open_file() {
    locked_ = true;
    std::error_code ec;
    const auto status = std::filesystem::status(file_, ec);
    if (status.type() == std::filesystem::file_type::not_found) {
      fail("the file does not exist", "check the path (a relative one starts at " +
                                          std::filesystem::current_path(ec).string() + ")");
    }
    if (ec) fail("the file cannot be accessed: " + ec.message(), "check its permissions");
    if (status.type() != std::filesystem::file_type::regular) {
      fail("the path is not a regular file", "pass the path of an HDF5 file");
    }
    file_size_ = std::filesystem::file_size(file_, ec);
    if (ec) fail("cannot read the file's size: " + ec.message(), "check its permissions");
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // Strong close: closing the file closes anything a failed read left open.
    if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0) {
      fail("cannot create a file access property list");
    }
    Handle file(H5Fopen(file_.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    if (!file.valid()) fail("cannot open the file as HDF5");
    return file;
  }

  // Follows the name one component at a time, so that a soft or external link anywhere on the
  // way is seen before HDF5 would follow it.
  Found find(hid_t file) const {
    for (std::size_t slash = 0; slash != std::string::npos;) {
      slash = name_.find('/', slash + 1);
      const std::string prefix = name_.substr(0, slash);
      const htri_t exists = H5Lexists(file, prefix.c_str(), H5P_DEFAULT);
      if (exists < 0) fail("cannot look up '" + prefix + "'");
      if (exists == 0) return Found::missing;
      H5L_info_t info{};
      if (H5Lget_info(file, prefix.c_str(), &info, H5P_DEFAULT) < 0) {
        fail("cannot read the link '" + prefix + "'");
      }
      if (info.type != H5L_TYPE_HARD) return Found::link;
      Handle object(H5Oopen(file, prefix.c_str(), H5P_DEFAULT), H5Oclose);
      if (!object.valid()) fail("cannot open the object '" + prefix + "'");
      const H5I_type_t type = H5Iget_type(object.get());
      if (slash == std::string::npos) {
        return type == H5I_DATASET ? Found::dataset
               : type == H5I_GROUP ? Found::group
                                   : Found::missing;
      }
      if (type != H5I_GROUP) return Found::missing;
    }
    return Found::missing;
  }

  // Fails with the datasets the file holds, for a name that does not lead to one.
  [[noreturn]] void fail_not_found(hid_t file, Found found) const {
    Listing listing;
    list(file, "", 0, listing);
    (void)take_hdf5_error();  // what the walk met is not the reason for this error
    std::string held;
    for (const std::string& name : listing.names) held += (held.empty() ? "" : ", ") + name;
    if (listing.datasets > listing.names.size()) {
      held += " and " + std::to_string(listing.datasets - listing.names.size()) + " more";
    }
    if (listing.stopped) held += (held.empty() ? "" : " ") + std::string("(listing stopped early)");
    const std::string what = found == Found::group  ? "is a group, not a dataset"
                             : found == Found::link ? "is reached through a soft or external link, "
                                                      "which tenax does not follow"
                                                    : "does not exist";
    fail(what + "; the file holds " +
             (held.empty() ? std::string("no datasets") : "the datasets: " + held),
         "pass the path of one of its datasets (h5ls -r FILE lists them all)" +
             std::string(found == Found::link ? ", or the path the link points to" : ""));
  }

  Tensor read(hid_t file, const ReadOptions& options) const {
    const Found found = find(file);
    if (found != Found::dataset) fail_not_found(file, found);
    Handle dset(H5Dopen2(file, name_.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) fail("cannot open the dataset");

    Handle type(H5Dget_type(dset.get()), H5Tclose);
    if (!type.valid()) fail("cannot read its element type");
    const std::optional<DType> dtype = accepted_dtype(type.get());
    if (!dtype) {
      fail("its element type (" + describe_type(type.get()) +
               ") is not one tenax reads; it reads " + kAcceptedTypes,
           "store the data as one of those types (numpy: f[name] = data.astype('float32')); a "
           "tenax checkpoint or state file is read with read_state_file");
    }

    Handle space(H5Dget_space(dset.get()), H5Sclose);
    if (!space.valid()) fail("cannot read its dataspace");
    const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
    const int rank = space_class == H5S_SCALAR ? 0 : H5Sget_simple_extent_ndims(space.get());
    if (space_class == H5S_NULL) {
      fail("it has a null dataspace (no data at all)", "write the dataset with data");
    }
    if (space_class != H5S_SCALAR && space_class != H5S_SIMPLE) fail("its dataspace is unknown");
    if (rank < 0 || rank > Shape::kMaxRank) {
      fail("its rank " + std::to_string(rank) + " is above the largest tenax supports (" +
               std::to_string(Shape::kMaxRank) + ")",
           "reshape the data to at most " + std::to_string(Shape::kMaxRank) + " dimensions");
    }
    hsize_t dims[Shape::kMaxRank] = {};
    if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims, nullptr) != rank) {
      fail("cannot read its extents");
    }
    // Element count and size with overflow checks, before anything is allocated.
    std::int64_t extents[Shape::kMaxRank] = {};
    std::string shape_text;
    bool empty = false;
    for (int axis = 0; axis < rank; ++axis) {
      shape_text += (axis == 0 ? "" : ", ") + std::to_string(dims[axis]);
      if (dims[axis] > static_cast<hsize_t>(std::numeric_limits<std::int64_t>::max())) {
        fail("its extent " + std::to_string(dims[axis]) + " does not fit a tensor");
      }
      extents[axis] = static_cast<std::int64_t>(dims[axis]);
      empty = empty || dims[axis] == 0;
    }
    const std::uint64_t element = size_of(*dtype);
    const std::uint64_t max_elements = options.max_bytes / element;
    std::uint64_t numel = empty ? 0 : 1;
    bool too_large = numel > max_elements;
    for (int axis = 0; axis < rank && !empty && !too_large; ++axis) {
      too_large = numel > max_elements / dims[axis];
      numel *= dims[axis];
    }
    if (too_large) {
      fail("its shape (" + shape_text + ") of " + std::string(to_string(*dtype)) +
               " holds more than the limit of " + std::to_string(options.max_bytes) +
               " bytes (ReadOptions::max_bytes)",
           "raise ReadOptions::max_bytes if the size is real; otherwise " +
               std::string(kCorruptFix));
    }
    const std::uint64_t bytes = numel * element;
    check_layout(dset.get(), rank, element, bytes);

    Tensor tensor =
        Tensor::empty(Shape(std::span<const std::int64_t>(extents, rank)), *dtype, Device::cpu());
    if (bytes > 0) {
      Handle memory_type = file_type_of(*dtype);
      if (!memory_type.valid()) fail("cannot build the memory type");
      if (H5Dread(dset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, tensor.data()) <
          0) {
        fail("cannot read its data");
      }
    }
    return tensor;
  }

  // Every dataset below the root (see list below).
  void list_all(hid_t file, Listing& listing) const { list(file, "", 0, listing); }

 private:
  // Refuses layouts that would read outside the file or allocate without bound.
  void check_layout(hid_t dset, int rank, std::uint64_t element, std::uint64_t bytes) const {
    Handle dcpl(H5Dget_create_plist(dset), H5Pclose);
    if (!dcpl.valid()) fail("cannot read its storage properties");
    const H5D_layout_t layout = H5Pget_layout(dcpl.get());
    if (layout == H5D_COMPACT) return;  // the data is in the object header, already read
    if (layout == H5D_CONTIGUOUS) {
      if (H5Pget_external_count(dcpl.get()) != 0) {
        fail("its data is stored in external files, which tenax does not read",
             "copy the data into the file (h5repack copies external storage in)");
      }
      // Never written: no storage, and HDF5 reads the fill value. Written: all of it in the file.
      const haddr_t offset = H5Dget_offset(dset);
      const hsize_t stored = H5Dget_storage_size(dset);
      const bool unwritten = offset == HADDR_UNDEF && stored == 0;
      const bool in_file =
          offset != HADDR_UNDEF && offset <= file_size_ && bytes <= file_size_ - offset;
      if (!unwritten && !(in_file && stored == bytes)) {
        fail("the file is truncated or corrupt: it ends at byte " + std::to_string(file_size_) +
             ", but the dataset's " + std::to_string(bytes) + " bytes of data (" +
             std::to_string(stored) + " allocated) are said to start at byte " +
             (offset == HADDR_UNDEF ? std::string("(none)") : std::to_string(offset)));
      }
      return;
    }
    if (layout != H5D_CHUNKED) {
      fail("its layout (virtual or unknown) may read other files, which tenax does not do",
           "write the data as a plain dataset (h5repack -l CONTI copies it into one)");
    }
    hsize_t chunk[Shape::kMaxRank] = {};
    if (H5Pget_chunk(dcpl.get(), Shape::kMaxRank, chunk) != rank) fail("its chunk shape is bad");
    std::uint64_t chunk_bytes = element;
    for (int axis = 0; axis < rank; ++axis) {
      if (chunk[axis] == 0 || chunk[axis] > kMaxChunkBytes / chunk_bytes) {
        fail("its chunks hold more than " + std::to_string(kMaxChunkBytes >> 20) +
                 " MiB each, more than tenax reads in one piece",
             "rewrite it with smaller chunks (h5repack -l CHUNK=...) or contiguous");
      }
      chunk_bytes *= chunk[axis];
    }
    const int filters = H5Pget_nfilters(dcpl.get());
    if (filters < 0) fail("cannot read its filters");
    for (int i = 0; i < filters; ++i) {
      unsigned flags = 0;
      std::size_t values = 0;
      char filter_name[64] = {};  // stays empty for an unregistered filter
      const H5Z_filter_t filter =
          H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &values, nullptr,
                         sizeof filter_name, filter_name, nullptr);
      filter_name[sizeof filter_name - 1] = '\0';
      if (filter != H5Z_FILTER_DEFLATE && filter != H5Z_FILTER_SHUFFLE &&
          filter != H5Z_FILTER_FLETCHER32) {
        const std::string named =
            filter_name[0] != '\0' ? " ('" + std::string(filter_name) + "')" : "";
        fail("it is compressed with filter " + std::to_string(filter) + named +
                 ", which tenax does not read; it reads gzip (deflate), shuffle and fletcher32",
             "rewrite it with gzip or without compression (h5repack -f GZIP=4 or -f NONE)");
      }
    }
    if (H5Dget_storage_size(dset) > file_size_) {
      fail("its chunks need more bytes than the file of " + std::to_string(file_size_) +
           " bytes holds: the file is truncated or corrupt");
    }
  }

  // Collects dataset names below `group` in name order, following hard links only, within the
  // link budget and the depth limit (a hostile file can link a group into itself).
  void list(hid_t group, const std::string& prefix, int depth, Listing& listing) const {
    if (depth > kMaxListDepth || listing.budget == 0) {
      listing.stopped = true;
      return;
    }
    HardLinks links;
    links.limit = listing.budget;
    hsize_t position = 0;
    if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &position, collect_hard_link, &links) < 0) {
      listing.stopped = true;
      (void)take_hdf5_error();
      return;
    }
    listing.budget -= std::min(listing.budget, links.names.size() + 1);
    for (const std::string& name : links.names) {
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      Handle object(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose);
      const H5I_type_t type = object.valid() ? H5Iget_type(object.get()) : H5I_BADID;
      if (type == H5I_DATASET) {
        if (listing.names.size() < listing.max_names) listing.names.push_back(path);
        ++listing.datasets;
      } else if (type == H5I_GROUP) {
        list(object.get(), path, depth + 1, listing);
      }
    }
  }

  const std::filesystem::path& file_;
  std::string name_;
  std::uint64_t file_size_ = 0;
  bool locked_ = false;
};

}  // namespace

Tensor read_dataset(const std::filesystem::path& file, std::string_view name,
                    const ReadOptions& options) {
  DatasetReader reader(file, name);
  Hdf5Lock lock;
  Handle handle = reader.open_file();
  Tensor tensor = reader.read(handle.get(), options);
  if (!handle.close()) reader.fail("cannot close the file");
  return tensor;
}

DatasetListing list_datasets(const std::filesystem::path& file, std::size_t max_names) {
  DatasetReader reader(file, "/list");  // the name only appears in errors about the file
  Hdf5Lock lock;
  Handle handle = reader.open_file();
  Listing listing;
  listing.max_names = max_names;
  reader.list_all(handle.get(), listing);
  (void)take_hdf5_error();  // an unreadable group is reported as an incomplete listing
  // Decided before the names are moved out (the members are initialised in order).
  const bool complete = !listing.stopped && listing.datasets == listing.names.size();
  return {.names = std::move(listing.names), .datasets = listing.datasets, .complete = complete};
}

bool has_dataset(const std::filesystem::path& file, std::string_view name) {
  DatasetReader reader(file, name);
  Hdf5Lock lock;
  Handle handle = reader.open_file();
  return reader.find(handle.get()) == Found::dataset;
}

void write_datasets(const std::filesystem::path& file,
                    const std::vector<std::pair<std::string, Tensor>>& datasets) {
  StateDict entries;
  std::set<std::string, std::less<>> names;
  for (const auto& [name, tensor] : datasets) {
    // A leading '/' (h5py's spelling of a path from the root) names the same dataset.
    const std::string path =
        std::string_view(name).starts_with('/') ? name.substr(1) : std::string(name);
    TENAX_EXPECTS(!path.empty(), UsageError, "a dataset to write has an empty name",
                  "name every dataset, e.g. 'u' or 'fields/u'");
    TENAX_EXPECTS(names.insert(path).second, UsageError,
                  "dataset '" + name + "' is given twice to write_datasets",
                  "give each dataset once");
    entries.set(path, tensor);
  }
  replace_file(file, "the HDF5 file", [&](const std::filesystem::path& temporary) {
    detail::write_hdf5_file(temporary, entries, /*metadata=*/nullptr);
  });
}

}  // namespace tenax::io
