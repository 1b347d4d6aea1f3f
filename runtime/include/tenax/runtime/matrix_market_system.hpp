/// A linear system A x = b read from Matrix Market files (io/matrix_market.hpp): the matrix, and
/// the right-hand side from a second file or b = A 1 (then the exact solution, all ones, is
/// known). On several ranks each rank reads only its own rows. @file
/// ```
/// runtime::MatrixMarketSystemOptions options;
/// options.matrix = "A.mtx";                 // options.rhs = "b.mtx" for a given b
/// const runtime::LinearSystem system = runtime::read_matrix_market_system(job.comm(), options);
/// // in a program of one process: runtime::read_matrix_market_system(options)
/// ```
/// Both files are read as io::read_matrix_market reads them (coordinate or array; symmetric files
/// expanded to both triangles), the matrix's duplicates summed by io::to_csr's rule, its values
/// rounded once to the value dtype. The file's contents are refused, with UsageError naming the
/// file, what is wrong and the fix, when the matrix is not square or has no rows; when it stores
/// fewer entries than rows, so that some row is empty and the matrix singular (refused after
/// reading the entries and before the rows' arrays are built, so that memory follows the entries
/// present, not a size line that promises 50 000 000 rows); when i32 indices cannot hold its
/// entries; and when the right-hand side is not a rows x 1 vector (its duplicates are summed).
/// Malformed or unreadable files throw what io::read_matrix_market throws (IoError naming the file
/// and line, UsageError for a path that is not a regular file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/linear_system.hpp"

namespace tenax::runtime {

/// How the refusals of read_matrix_market_system name its inputs: a program passes its flags
/// ("--matrix", "--rhs", "--index") so that an error names what its user typed.
struct MatrixMarketNames {
  std::string matrix = "matrix file";        ///< the matrix: "<matrix> A.mtx is 3 x 4"
  std::string rhs = "right-hand side file";  ///< b: "<rhs> b.mtx is 5 x 2, the matrix has ..."
  std::string index = "index dtype";         ///< "<index> i32 cannot hold ...", "use <index> i64"
};

/// Which files read_matrix_market_system reads and what it builds from them.
struct MatrixMarketSystemOptions {
  std::filesystem::path matrix;  ///< the square matrix A
  /// b, a rows x 1 vector (array or coordinate); empty: b = A 1, and the solution (all ones) is
  /// known.
  std::filesystem::path rhs;
  DType dtype = DType::f64;        ///< A's and b's dtype: f64 or f32
  DType index_dtype = DType::i64;  ///< A's index dtype: i64 or i32
  Device device = Device::cpu();   ///< where A and b live (the CPU on several ranks)
  MatrixMarketNames names;         ///< how errors name the inputs
  /// Several ranks only, optional: called on each rank as soon as its rows of the matrix are
  /// read and checked, before its operator is built and the right-hand side read, with its rows,
  /// the entries it kept and the whole matrix's (a progress line for a large file).
  std::function<void(const kernels::ShardRange& rows, std::int64_t local_entries,
                     std::int64_t entries)>
      on_rows_read;
};

/// The whole system of `options` on this process: A as a solvers::CsrOperator, b, and the
/// solution when b = A 1 (whole_system's). Throws as this file says, and UsageError for a dtype
/// or index dtype not listed in MatrixMarketSystemOptions; OutOfMemoryError when the arrays do
/// not fit.
[[nodiscard]] LinearSystem read_matrix_market_system(const MatrixMarketSystemOptions& options);

/// This rank's rows of the system of `options`, split as split_rows splits a system (the
/// block-aligned rows of kernels::block_aligned_range, A as a DistributedCsrOperator): each rank
/// reads the matrix file and keeps only its rows' entries, so that no rank holds the whole
/// matrix; the right-hand side file (one value per row) is read whole and this rank's rows kept.
/// The products, and the solves on the system, have the single-process bits. nnz is the whole
/// matrix's, local_nnz this rank's share. On one rank, read_matrix_market_system(options).
/// Collective (every rank, the same options; the communicator must outlive the system). Throws
/// as the single-process form: on every rank for the checks of the whole matrix (square, empty
/// rows, the right-hand side), on its own rank where i32 indices cannot hold that rank's entries;
/// and UsageError for a device other than the CPU on several ranks.
[[nodiscard]] LinearSystem read_matrix_market_system(Communicator& comm,
                                                     const MatrixMarketSystemOptions& options);

}  // namespace tenax::runtime
