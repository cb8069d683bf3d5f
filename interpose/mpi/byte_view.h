// A rank's buffer (buf, count, datatype) seen as the contiguous bytes that
// Chorus moves in the data-movement collectives.
//
// A predefined contiguous datatype is used in place. Any other datatype
// (vector, indexed, struct, resized, ...) is staged: packed with PMPI_Pack
// into a private buffer before the call and unpacked with PMPI_Unpack after
// it. Moving the packed bytes is correct because MPI_Pack on one host
// architecture writes the elements' native bytes in type-map order (what a
// contiguous predefined buffer of the same type signature holds), which the
// view checks on every pack. Because of the staging, whether Chorus serves a
// data-movement call never depends on the datatypes, so every rank decides
// alike even when ranks describe their data with different datatypes (a
// derived type on the root, a predefined one elsewhere), as MPI allows.
#pragma once

#include <mpi.h>
#include <stddef.h>

#include <memory>

namespace chorus_mpi {

class ByteView {
 public:
  // Describes `count` elements of `type` at `buf`. With `staged`, always uses
  // a private buffer (for copies of a buffer that Chorus would overwrite).
  // Returns MPI_SUCCESS or an MPI error code.
  int Describe(const void* buf, long long count, MPI_Datatype type, MPI_Comm comm, bool staged = false);

  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  size_t element_bytes() const { return element_bytes_; }
  bool staged() const { return staging_ != nullptr; }

  // Copies elements [first, first + n) from the user buffer into the view
  // (no-op when the view is the user buffer).
  int Pack(long long first, long long n);
  int PackAll() { return Pack(0, count_); }
  // Copies the whole view back into the user buffer (no-op when in place).
  int UnpackAll();

 private:
  char* user_ = nullptr;
  long long count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Aint extent_ = 0;
  size_t element_bytes_ = 0;
  size_t bytes_ = 0;
  char* data_ = nullptr;
  std::unique_ptr<char[]> staging_;
};

}  // namespace chorus_mpi
