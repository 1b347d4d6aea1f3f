// The doctor's rule for a library loaded at run time (cuBLAS, NCCL) against the headers tenax was
// built with: another major version or an older minor release is a problem with the fix; an
// older patch release of the same minor is fine (doctor --strict does not fail on it), and so is
// anything newer.
#include <gtest/gtest.h>

#include <string>

#include "doctor.hpp"

namespace tenax::tools {
namespace {

TEST(LibraryVersion, AnOlderPatchReleaseIsFineAndSaysSo) {
  const Finding f = library_version_finding("nccl", "NCCL", 22803, 22809, " from /x/libnccl.so.2");
  EXPECT_EQ(f.status, Status::ok);
  EXPECT_NE(f.detail.find("NCCL 2.28.3 (built with 2.28.9) from /x/libnccl.so.2"),
            std::string::npos)
      << f.detail;
  EXPECT_NE(f.detail.find("older patch release"), std::string::npos) << f.detail;
}

TEST(LibraryVersion, TheSameOrANewerReleaseIsFine) {
  EXPECT_EQ(library_version_finding("cublas", "cuBLAS", 130100, 130100, "").status, Status::ok);
  EXPECT_EQ(library_version_finding("cublas", "cuBLAS", 130203, 130100, "").status, Status::ok);
  EXPECT_EQ(library_version_finding("cublas", "cuBLAS", 130100, 130100, "").detail,
            "cuBLAS 13.1.0 (built with 13.1.0)");
}

TEST(LibraryVersion, AnOlderMinorOrAnotherMajorIsAProblemWithTheFix) {
  const Finding older = library_version_finding("cublas", "cuBLAS", 130002, 130100, " from /a");
  EXPECT_EQ(older.status, Status::problem);
  EXPECT_NE(
      older.cause.find("built with cuBLAS 13.1.0 headers but loaded the older 13.0.2 from /a"),
      std::string::npos)
      << older.cause;
  EXPECT_NE(older.fix.find("cuBLAS 13.1.0 or newer"), std::string::npos) << older.fix;

  const Finding other = library_version_finding("nccl", "NCCL", 30001, 22809, "");
  EXPECT_EQ(other.status, Status::problem);
  EXPECT_NE(other.cause.find("different major version"), std::string::npos) << other.cause;
  EXPECT_NE(other.fix.find("NCCL 2.x"), std::string::npos) << other.fix;
}

}  // namespace
}  // namespace tenax::tools
