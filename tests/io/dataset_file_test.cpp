// read_dataset / has_dataset / write_datasets: round trips of every accepted type, files written
// with the raw HDF5 C API the way other tools write them (big-endian, h5py's float16, chunked and
// compressed, compact, old file format), and the errors: missing dataset (with the listing),
// refused types, links, layouts and sizes, truncated and corrupt files, bad names.
#include "tenax/io/dataset_file.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/io_test_helpers.hpp"
#include "tenax/core/half.hpp"

namespace tenax::io {
namespace {

namespace fs = std::filesystem;
using testing::expect_io_error;
using testing::patterned;
using testing::ScratchDir;

::testing::AssertionResult same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) {
    return ::testing::AssertionFailure() << a.describe() << " vs " << b.describe();
  }
  if (a.nbytes() > 0 && std::memcmp(a.data(), b.data(), a.nbytes()) != 0) {
    return ::testing::AssertionFailure() << "values differ";
  }
  return ::testing::AssertionSuccess();
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  const T* data = t.data_as<T>();
  return {data, data + t.numel()};
}

// A file written with the HDF5 C API, as another tool would write it. Every call is checked.
class RawFile {
 public:
  // `latest_format`: the 1.8 object formats; otherwise HDF5's default (what h5py writes).
  explicit RawFile(const fs::path& path, bool latest_format = false) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (latest_format) H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
    file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    EXPECT_GE(file_, 0);
    lcpl_ = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl_, 1);
  }
  ~RawFile() {
    H5Pclose(lcpl_);
    EXPECT_GE(H5Fclose(file_), 0);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  [[nodiscard]] hid_t id() const { return file_; }

  // Creates dataset `name` (groups made as needed) of `file_type` and `dims` (empty: scalar),
  // and writes `data` of `memory_type` into it unless data is null. Returns whether HDF5 agreed.
  bool dataset(const char* name, hid_t file_type, const std::vector<hsize_t>& dims,
               hid_t memory_type = H5I_INVALID_HID, const void* data = nullptr,
               hid_t dcpl = H5P_DEFAULT) {
    const hid_t space = dims.empty()
                            ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t dset = H5Dcreate2(file_, name, file_type, space, lcpl_, dcpl, H5P_DEFAULT);
    bool ok = dset >= 0;
    if (ok && data != nullptr) {
      ok = H5Dwrite(dset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
    }
    if (dset >= 0) H5Dclose(dset);
    H5Sclose(space);
    return ok;
  }

 private:
  hid_t file_ = H5I_INVALID_HID;
  hid_t lcpl_ = H5I_INVALID_HID;
};

// IEEE binary16 as h5py builds its float16 type.
hid_t h5py_float16(H5T_order_t order) {
  const hid_t type = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(type, 15, 10, 5, 0, 10);
  H5Tset_size(type, 2);
  H5Tset_ebias(type, 15);
  H5Tset_order(type, order);
  return type;
}

herr_t count_attribute(hid_t, const char*, const H5A_info_t*, void* data) {
  ++*static_cast<int*>(data);
  return 0;
}

int attribute_count(hid_t file, const char* object) {
  const hid_t id = H5Oopen(file, object, H5P_DEFAULT);
  int count = 0;
  H5Aiterate2(id, H5_INDEX_NAME, H5_ITER_INC, nullptr, count_attribute, &count);
  H5Oclose(id);
  return count;
}

TEST(DatasetFile, WriteDatasetsRoundTripsEveryAcceptedType) {
  ScratchDir dir;
  const std::vector<std::pair<std::string, Tensor>> datasets = {
      {"f64", patterned({4, 5}, DType::f64, 1)},
      {"weights/f32", patterned({3, 2, 2}, DType::f32, 2)},
      {"weights/f16", patterned({7}, DType::f16, 3)},
      {"/ids/i64", patterned({5}, DType::i64, 4)},
      {"ids/i32", patterned({2, 3}, DType::i32, 5)},
      {"scalar", patterned({}, DType::f64, 6)},
      {"a/b/c/empty", patterned({0, 3}, DType::f32, 7)},
  };
  const fs::path path = dir.path() / "d.h5";
  write_datasets(path, datasets);
  for (const auto& [name, tensor] : datasets) {
    EXPECT_TRUE(has_dataset(path, name)) << name;
    EXPECT_TRUE(same_tensor(read_dataset(path, name), tensor)) << name;
  }
  EXPECT_TRUE(same_tensor(read_dataset(path, "/weights/f16"), datasets[2].second));
  EXPECT_EQ(read_dataset(path, "scalar").shape().rank(), 0);
  EXPECT_FALSE(has_dataset(path, "weights"));  // a group
  EXPECT_FALSE(has_dataset(path, "nothing"));
  EXPECT_FALSE(has_dataset(path, "f64/below"));
}

TEST(DatasetFile, WrittenFilesArePlainDatasetsWithoutAttributes) {
  ScratchDir dir;
  const fs::path path = dir.path() / "plain.h5";
  write_datasets(path, {{"u", patterned({3}, DType::f64, 1)},
                        {"grid/v", patterned({2, 2}, DType::f32, 2)},
                        {"raw/bf16", patterned({4}, DType::bf16, 3)}});
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(attribute_count(file, "/"), 0);
  EXPECT_EQ(attribute_count(file, "u"), 0);
  EXPECT_EQ(attribute_count(file, "grid/v"), 0);
  const hid_t dset = H5Dopen2(file, "grid/v", H5P_DEFAULT);
  const hid_t type = H5Dget_type(dset);
  EXPECT_GT(H5Tequal(type, H5T_IEEE_F32LE), 0);
  H5Tclose(type);
  H5Dclose(dset);
  H5Fclose(file);
  // bf16 is stored as its bit pattern, which read_dataset does not take for a number.
  expect_io_error([&] { (void)read_dataset(path, "raw/bf16"); },
                  {"unsigned 16-bit integer", "float16", "int32"});
}

TEST(DatasetFile, WriteDatasetsReplacesAnExistingFile) {
  ScratchDir dir;
  const fs::path path = dir.path() / "r.h5";
  write_datasets(path, {{"a", patterned({2}, DType::f64, 1)}});
  write_datasets(path, {{"b", patterned({2}, DType::f64, 2)}});
  EXPECT_FALSE(has_dataset(path, "a"));
  EXPECT_TRUE(has_dataset(path, "b"));
}

TEST(DatasetFile, ListingNamesEveryDatasetAndSaysWhetherItIsComplete) {
  ScratchDir dir;
  const fs::path path = dir.path() / "listed.h5";
  write_datasets(path, {{"params/fc0/bias", patterned({2}, DType::f64, 1)},
                        {"params/fc0/weight", patterned({2, 2}, DType::f32, 2)},
                        {"x", patterned({3}, DType::i64, 3)}});
  const DatasetListing all = list_datasets(path);
  EXPECT_EQ(all.names, (std::vector<std::string>{"params/fc0/bias", "params/fc0/weight", "x"}));
  EXPECT_EQ(all.datasets, 3u);
  EXPECT_TRUE(all.complete);
  const DatasetListing first_two = list_datasets(path, 2);
  EXPECT_EQ(first_two.names.size(), 2u);
  EXPECT_EQ(first_two.datasets, 3u);
  EXPECT_FALSE(first_two.complete);
}

TEST(DatasetFile, ReadsFilesWrittenWithTheHdf5CApi) {
  ScratchDir dir;
  const fs::path path = dir.path() / "raw.h5";
  const std::vector<double> f64 = {1.5, -2.25, 3e300, 0.0, -0.0, 6.125};
  const std::vector<float> f32 = {1.0f, -2.5f, 3.75f, 1e-30f};
  const std::vector<std::int32_t> i32 = {-7, 0, 2147483647};
  const std::vector<std::int64_t> i64 = {-9000000000000000000, 1, 42};
  const std::vector<std::uint16_t> f16 = {to_half(1.5f).bits, to_half(-65504.0f).bits,
                                          to_half(5.96046448e-08f).bits};
  std::vector<double> big(100 * 10);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 0.5 * static_cast<double>(i) - 3;
  const std::int32_t scalar = 17;
  {
    RawFile raw(path);  // HDF5's default (oldest) format, as h5py writes
    ASSERT_TRUE(raw.dataset("f64", H5T_IEEE_F64LE, {2, 3}, H5T_NATIVE_DOUBLE, f64.data()));
    ASSERT_TRUE(raw.dataset("be/f32", H5T_IEEE_F32BE, {4}, H5T_NATIVE_FLOAT, f32.data()));
    ASSERT_TRUE(raw.dataset("be/i32", H5T_STD_I32BE, {3}, H5T_NATIVE_INT32, i32.data()));
    ASSERT_TRUE(raw.dataset("deep/er/i64", H5T_STD_I64LE, {3}, H5T_NATIVE_INT64, i64.data()));
    const hid_t half_le = h5py_float16(H5T_ORDER_LE);
    const hid_t half_be = h5py_float16(H5T_ORDER_BE);
    ASSERT_TRUE(raw.dataset("f16", half_le, {3}, half_le, f16.data()));
    ASSERT_TRUE(raw.dataset("be/f16", half_be, {3}, half_le, f16.data()));
    H5Tclose(half_le);
    H5Tclose(half_be);
    const hid_t chunked = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {16, 10};
    H5Pset_chunk(chunked, 2, chunk);
    H5Pset_shuffle(chunked);
    H5Pset_deflate(chunked, 6);
    H5Pset_fletcher32(chunked);
    ASSERT_TRUE(
        raw.dataset("gzip", H5T_IEEE_F64LE, {100, 10}, H5T_NATIVE_DOUBLE, big.data(), chunked));
    H5Pclose(chunked);
    const hid_t compact = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(compact, H5D_COMPACT);
    ASSERT_TRUE(raw.dataset("compact", H5T_STD_I64LE, {3}, H5T_NATIVE_INT64, i64.data(), compact));
    H5Pclose(compact);
    ASSERT_TRUE(raw.dataset("scalar", H5T_STD_I32LE, {}, H5T_NATIVE_INT32, &scalar));
    ASSERT_TRUE(raw.dataset("unwritten", H5T_IEEE_F64LE, {4}));
  }
  const Tensor a = read_dataset(path, "f64");
  EXPECT_EQ(a.dtype(), DType::f64);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<double>(a), f64);
  const Tensor b = read_dataset(path, "be/f32");
  EXPECT_EQ(b.dtype(), DType::f32);
  EXPECT_EQ(values_of<float>(b), f32);
  EXPECT_EQ(values_of<std::int32_t>(read_dataset(path, "be/i32")), i32);
  EXPECT_EQ(values_of<std::int64_t>(read_dataset(path, "deep/er/i64")), i64);
  for (const char* name : {"f16", "be/f16"}) {
    const Tensor h = read_dataset(path, name);
    EXPECT_EQ(h.dtype(), DType::f16) << name;
    ASSERT_EQ(h.numel(), 3) << name;
    EXPECT_EQ(to_float(h.data_as<Half>()[0]), 1.5f) << name;
    EXPECT_EQ(to_float(h.data_as<Half>()[1]), -65504.0f) << name;
    EXPECT_EQ(to_float(h.data_as<Half>()[2]), 5.96046448e-08f) << name;
  }
  const Tensor g = read_dataset(path, "gzip");
  EXPECT_EQ(g.shape(), (Shape{100, 10}));
  EXPECT_EQ(values_of<double>(g), big);
  EXPECT_EQ(values_of<std::int64_t>(read_dataset(path, "compact")), i64);
  const Tensor s = read_dataset(path, "scalar");
  EXPECT_EQ(s.shape().rank(), 0);
  EXPECT_EQ(s.data_as<std::int32_t>()[0], 17);
  EXPECT_EQ(values_of<double>(read_dataset(path, "unwritten")), std::vector<double>(4, 0.0));
}

TEST(DatasetFile, ReadsTheTensorsOfAStateFile) {
  ScratchDir dir;
  const fs::path path = dir.path() / "state.h5";
  StateDict state = testing::sample_state();
  write_state_file(path, state, {});
  EXPECT_TRUE(same_tensor(read_dataset(path, "solver/x"), state.tensor("solver/x")));
  EXPECT_TRUE(same_tensor(read_dataset(path, "weights/f16"), state.tensor("weights/f16")));
  expect_io_error([&] { (void)read_dataset(path, "name"); }, {"fixed-length string", "'name'"});
}

TEST(DatasetFile, MissingDatasetIsNamedAndTheFilesDatasetsListed) {
  ScratchDir dir;
  const fs::path path = dir.path() / "m.h5";
  write_datasets(path, {{"alpha", patterned({1}, DType::f64, 1)},
                        {"group/beta", patterned({1}, DType::f32, 2)},
                        {"group/inner/gamma", patterned({1}, DType::i32, 3)}});
  expect_io_error([&] { (void)read_dataset(path, "delta"); },
                  {path.string(), "'delta'", "does not exist", "alpha", "group/beta",
                   "group/inner/gamma", "h5ls"});
  expect_io_error([&] { (void)read_dataset(path, "group/nothing/here"); },
                  {"'group/nothing/here'", "does not exist", "group/inner/gamma"});
  expect_io_error([&] { (void)read_dataset(path, "alpha/below"); }, {"does not exist"});
  expect_io_error([&] { (void)read_dataset(path, "group"); }, {"is a group", "group/beta"});

  // Long listings stop at 20 names and say how many more there are.
  std::vector<std::pair<std::string, Tensor>> many;
  for (int i = 0; i < 30; ++i) {
    many.emplace_back("d" + std::to_string(100 + i), patterned({1}, DType::f64, i));
  }
  const fs::path crowded = dir.path() / "many.h5";
  write_datasets(crowded, many);
  expect_io_error([&] { (void)read_dataset(crowded, "x"); }, {"d100", "d119", "and 10 more"});
  try {
    (void)read_dataset(crowded, "x");
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).find("d120"), std::string::npos) << e.what();
  }

  const fs::path empty = dir.path() / "empty.h5";
  write_datasets(empty, {});
  expect_io_error([&] { (void)read_dataset(empty, "x"); }, {"no datasets"});
}

TEST(DatasetFile, OtherElementTypesAreRefusedNamingTheTypeFound) {
  ScratchDir dir;
  const fs::path path = dir.path() / "types.h5";
  const std::uint8_t bytes[2] = {1, 2};
  const std::int16_t shorts[2] = {1, 2};
  const std::uint32_t words[2] = {1, 2};
  {
    RawFile raw(path);
    ASSERT_TRUE(raw.dataset("u8", H5T_STD_U8LE, {2}, H5T_NATIVE_UINT8, bytes));
    ASSERT_TRUE(raw.dataset("i16", H5T_STD_I16LE, {2}, H5T_NATIVE_INT16, shorts));
    ASSERT_TRUE(raw.dataset("u32", H5T_STD_U32BE, {2}, H5T_NATIVE_UINT32, words));
    const hid_t bf16 = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(bf16, 15, 7, 8, 0, 7);
    H5Tset_size(bf16, 2);
    H5Tset_ebias(bf16, 127);
    ASSERT_TRUE(raw.dataset("bf16", bf16, {2}));
    H5Tclose(bf16);
    const hid_t text = H5Tcopy(H5T_C_S1);
    H5Tset_size(text, 5);
    ASSERT_TRUE(raw.dataset("text", text, {}, text, "hello"));
    H5Tclose(text);
    const hid_t complex = H5Tcreate(H5T_COMPOUND, 16);
    H5Tinsert(complex, "r", 0, H5T_IEEE_F64LE);
    H5Tinsert(complex, "i", 8, H5T_IEEE_F64LE);
    ASSERT_TRUE(raw.dataset("complex", complex, {3}));
    H5Tclose(complex);
  }
  const std::string accepted = "float64, float32, float16 (IEEE binary16), int64 and int32";
  expect_io_error([&] { (void)read_dataset(path, "u8"); },
                  {path.string(), "'u8'", "unsigned 8-bit integer", accepted});
  expect_io_error([&] { (void)read_dataset(path, "i16"); }, {"signed 16-bit integer", accepted});
  expect_io_error([&] { (void)read_dataset(path, "u32"); }, {"unsigned 32-bit integer"});
  expect_io_error([&] { (void)read_dataset(path, "bf16"); },
                  {"16-bit float with 8 exponent and 7 mantissa bits", "bfloat16"});
  expect_io_error([&] { (void)read_dataset(path, "text"); }, {"fixed-length string of 5 bytes"});
  expect_io_error([&] { (void)read_dataset(path, "complex"); }, {"compound type", "16 bytes"});
}

TEST(DatasetFile, LinksExternalStorageAndUnboundedLayoutsAreRefused) {
  ScratchDir dir;
  const fs::path path = dir.path() / "links.h5";
  const double values[2] = {1, 2};
  bool unknown_filter = false;
  {
    RawFile raw(path, /*latest_format=*/true);
    ASSERT_TRUE(raw.dataset("real", H5T_IEEE_F64LE, {2}, H5T_NATIVE_DOUBLE, values));
    ASSERT_GE(H5Lcreate_soft("/real", raw.id(), "soft", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external("other.h5", "/x", raw.id(), "external", H5P_DEFAULT, H5P_DEFAULT),
              0);
    const hid_t external = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(external, (dir.path() / "raw.bin").c_str(), 0, 16);
    ASSERT_TRUE(raw.dataset("outside", H5T_IEEE_F64LE, {2}, H5I_INVALID_HID, nullptr, external));
    H5Pclose(external);
    // 8192 x 8193 floats per chunk: 268 MB, over the 256 MiB a chunk may hold. Never written,
    // so the file stays small.
    const hid_t huge_chunks = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {8192, 8193};
    H5Pset_chunk(huge_chunks, 2, chunk);
    ASSERT_TRUE(raw.dataset("huge_chunks", H5T_IEEE_F32LE, {8192, 8193}, H5I_INVALID_HID, nullptr,
                            huge_chunks));
    H5Pclose(huge_chunks);
    // A filter this HDF5 does not have (32001 is Blosc), allowed because it is optional.
    const hid_t blosc = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t small_chunk[1] = {2};
    H5Pset_chunk(blosc, 1, small_chunk);
    H5Pset_filter(blosc, 32001, H5Z_FLAG_OPTIONAL, 0, nullptr);
    unknown_filter = raw.dataset("blosc", H5T_IEEE_F64LE, {2}, H5I_INVALID_HID, nullptr, blosc);
    H5Pclose(blosc);
    H5Eclear2(H5E_DEFAULT);
  }
  EXPECT_TRUE(has_dataset(path, "real"));
  EXPECT_FALSE(has_dataset(path, "soft"));
  EXPECT_FALSE(has_dataset(path, "external"));
  expect_io_error([&] { (void)read_dataset(path, "soft"); }, {"soft or external link", "real"});
  expect_io_error([&] { (void)read_dataset(path, "external/x"); }, {"soft or external link"});
  expect_io_error([&] { (void)read_dataset(path, "outside"); }, {"external files"});
  expect_io_error([&] { (void)read_dataset(path, "huge_chunks"); }, {"256 MiB"});
  if (unknown_filter) {
    expect_io_error([&] { (void)read_dataset(path, "blosc"); }, {"filter 32001", "gzip"});
  }
}

TEST(DatasetFile, SizesAndRanksAreCheckedBeforeAllocating) {
  ScratchDir dir;
  const fs::path path = dir.path() / "sizes.h5";
  write_datasets(path, {{"v", patterned({1000}, DType::f64, 1)}});
  ReadOptions small;
  small.max_bytes = 7999;
  expect_io_error([&] { (void)read_dataset(path, "v", small); },
                  {"'v'", "(1000) of f64", "7999", "max_bytes"});
  small.max_bytes = 8000;
  EXPECT_EQ(read_dataset(path, "v", small).numel(), 1000);

  const fs::path raw_path = dir.path() / "raw.h5";
  {
    RawFile raw(raw_path);
    // 2^40 x 2^30 doubles (8 ZiB) in never-written chunks: the header alone claims it.
    const hid_t chunked = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {16, 16};
    H5Pset_chunk(chunked, 2, chunk);
    ASSERT_TRUE(raw.dataset("enormous", H5T_IEEE_F64LE, {hsize_t{1} << 40, hsize_t{1} << 30},
                            H5I_INVALID_HID, nullptr, chunked));
    H5Pclose(chunked);
    ASSERT_TRUE(raw.dataset("rank9", H5T_IEEE_F64LE, {1, 1, 1, 1, 1, 1, 1, 1, 1}));
    const hid_t null_space = H5Screate(H5S_NULL);
    const hid_t dset = H5Dcreate2(raw.id(), "null", H5T_IEEE_F64LE, null_space, H5P_DEFAULT,
                                  H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(dset, 0);
    H5Dclose(dset);
    H5Sclose(null_space);
  }
  expect_io_error([&] { (void)read_dataset(raw_path, "enormous"); },
                  {"1099511627776, 1073741824", "max_bytes"});
  expect_io_error([&] { (void)read_dataset(raw_path, "rank9"); }, {"rank 9", "8"});
  expect_io_error([&] { (void)read_dataset(raw_path, "null"); }, {"null dataspace"});
}

TEST(DatasetFile, TruncatedCorruptAndMissingFilesAreIoErrors) {
  ScratchDir dir;
  for (const bool latest : {false, true}) {
    const fs::path path = dir.path() / (latest ? "new.h5" : "old.h5");
    {
      std::vector<double> values(20000, 0.25);
      RawFile raw(path, latest);
      ASSERT_TRUE(raw.dataset("v", H5T_IEEE_F64LE, {20000}, H5T_NATIVE_DOUBLE, values.data()));
    }
    ASSERT_EQ(read_dataset(path, "v").numel(), 20000);
    const std::string bytes = [&] {
      std::ifstream in(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    for (const double keep : {0.0, 0.01, 0.5, 0.99}) {
      const fs::path cut = dir.path() / "cut.h5";
      std::ofstream(cut, std::ios::binary | std::ios::trunc)
          << bytes.substr(0, static_cast<std::size_t>(keep * static_cast<double>(bytes.size())));
      expect_io_error([&] { (void)read_dataset(cut, "v"); }, {cut.string(), "'v'"});
    }
    std::string damaged = bytes;
    for (std::size_t i = 0; i < 8; ++i) damaged[i] = 'X';  // the HDF5 signature
    const fs::path bad = dir.path() / "bad.h5";
    std::ofstream(bad, std::ios::binary | std::ios::trunc) << damaged;
    expect_io_error([&] { (void)read_dataset(bad, "v"); }, {"cannot open the file as HDF5"});
    expect_io_error([&] { (void)has_dataset(bad, "v"); }, {"cannot open the file as HDF5"});
  }
  const fs::path text = dir.path() / "text.h5";
  std::ofstream(text) << "not hdf5 at all\n";
  expect_io_error([&] { (void)read_dataset(text, "v"); }, {"cannot open the file as HDF5"});
  expect_io_error([&] { (void)read_dataset(dir.path() / "missing.h5", "v"); },
                  {"missing.h5", "does not exist"});
  expect_io_error([&] { (void)has_dataset(dir.path() / "missing.h5", "v"); }, {"does not exist"});
  expect_io_error([&] { (void)read_dataset(dir.path(), "v"); }, {"not a regular file"});
}

// Files from other tools carry no checksums: damage is either caught by HDF5 and the reader's
// checks (an IoError) or read as values (of the right shape); it never crashes or throws
// anything else (the asan preset checks the memory side).
TEST(DatasetFile, RandomDamageGivesAnIoErrorOrTheDatasetsShape) {
  ScratchDir dir;
  for (const bool latest : {false, true}) {
    const fs::path path = dir.path() / "source.h5";
    {
      const std::vector<double> values(64, 1.5);
      RawFile raw(path, latest);
      for (const char* name : {"a", "g/b", "g/h/c"}) {
        ASSERT_TRUE(raw.dataset(name, H5T_IEEE_F64LE, {8, 8}, H5T_NATIVE_DOUBLE, values.data()));
      }
    }
    const std::string bytes = [&] {
      std::ifstream in(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    std::uint32_t x = latest ? 7 : 11;
    auto next = [&x] { return x = x * 1664525u + 1013904223u; };
    int read = 0;
    int refused = 0;
    for (int trial = 0; trial < 300; ++trial) {
      std::string damaged = bytes;
      for (std::uint32_t flips = 1 + next() % 4; flips > 0; --flips) {
        damaged[next() % damaged.size()] ^= static_cast<char>(1u << (next() >> 29));
      }
      const fs::path bad = dir.path() / "damaged.h5";
      std::ofstream(bad, std::ios::binary | std::ios::trunc) << damaged;
      try {
        EXPECT_EQ(read_dataset(bad, "g/h/c").shape(), (Shape{8, 8}));
        ++read;
      } catch (const IoError&) {
        ++refused;
      }
    }
    EXPECT_GT(read, 0);
    EXPECT_GT(refused, 0);
  }
}

TEST(DatasetFile, BadNamesAndDuplicatesAreUsageErrors) {
  ScratchDir dir;
  const fs::path path = dir.path() / "n.h5";
  const Tensor t = patterned({2}, DType::f64, 1);
  for (const char* bad : {"", "/", "a//b", "a/", "a/./b", ".."}) {
    EXPECT_THROW(write_datasets(path, {{bad, t}}), UsageError) << bad;
    EXPECT_THROW((void)read_dataset(path, bad), UsageError) << bad;
    EXPECT_THROW((void)has_dataset(path, bad), UsageError) << bad;
  }
  EXPECT_THROW(write_datasets(path, {{"a", t}, {"/a", t}}), UsageError);
  EXPECT_THROW(write_datasets(path, {{"a", t}, {"a/b", t}}), UsageError);
  EXPECT_THROW(write_datasets(path, {{"t", Tensor()}}), UsageError);
  EXPECT_FALSE(fs::exists(path));
  try {
    write_datasets(path, {{"x", t}, {"x", t}});
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tenax::io
