#include "interpose/mpi/byte_view.h"

#include <climits>
#include <cstring>

#include "interpose/mpi/report.h"
#include "interpose/mpi/type_map.h"

namespace chorus_mpi {
namespace {

// Elements per PMPI_Pack/Unpack call, so that positions fit in an int.
long long ChunkElements(size_t element_bytes) {
  if (element_bytes == 0) return LLONG_MAX;
  const long long chunk = static_cast<long long>(INT_MAX / element_bytes);
  return chunk > 0 ? chunk : 1;
}

}  // namespace

int ByteView::Describe(const void* buf, long long count, MPI_Datatype type, MPI_Comm comm, bool staged) {
  user_ = static_cast<char*>(const_cast<void*>(buf));
  count_ = count;
  type_ = type;
  comm_ = comm;
  if (const TypeInfo* info = LookupType(type)) {
    element_bytes_ = info->size;
    extent_ = static_cast<MPI_Aint>(info->size);
  } else {
    MPI_Count size = 0;
    MPI_Aint lb = 0;
    int rc = PMPI_Type_size_x(type, &size);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_get_extent(type, &lb, &extent_);
    if (rc != MPI_SUCCESS) return rc;
    if (size < 0 || size > INT_MAX) return MPI_ERR_TYPE;  // one element must pack in one call
    element_bytes_ = static_cast<size_t>(size);
    staged = true;
  }
  bytes_ = static_cast<size_t>(count) * element_bytes_;
  if (!staged) {
    data_ = user_;
    return MPI_SUCCESS;
  }
  staging_.reset(new char[bytes_ > 0 ? bytes_ : 1]);
  data_ = staging_.get();
  return MPI_SUCCESS;
}

int ByteView::Pack(long long first, long long n) {
  if (!staged() || n <= 0) return MPI_SUCCESS;
  const long long chunk = ChunkElements(element_bytes_);
  for (long long done = 0; done < n;) {
    const long long part = n - done < chunk ? n - done : chunk;
    const long long index = first + done;
    const int room = static_cast<int>(static_cast<size_t>(part) * element_bytes_);
    int position = 0;
    int rc = PMPI_Pack(user_ + index * extent_, static_cast<int>(part), type_,
                       data_ + static_cast<size_t>(index) * element_bytes_, room, &position, comm_);
    if (rc != MPI_SUCCESS) return rc;
    if (position != room) {
      LogWarn("MPI_Pack wrote %d bytes for %d bytes of data: not the native layout", position, room);
      return MPI_ERR_INTERN;
    }
    done += part;
  }
  return MPI_SUCCESS;
}

int ByteView::UnpackAll() {
  if (!staged()) return MPI_SUCCESS;
  const long long chunk = ChunkElements(element_bytes_);
  for (long long done = 0; done < count_;) {
    const long long part = count_ - done < chunk ? count_ - done : chunk;
    const int size = static_cast<int>(static_cast<size_t>(part) * element_bytes_);
    int position = 0;
    int rc = PMPI_Unpack(data_ + static_cast<size_t>(done) * element_bytes_, size, &position,
                         user_ + done * extent_, static_cast<int>(part), type_, comm_);
    if (rc != MPI_SUCCESS) return rc;
    done += part;
  }
  return MPI_SUCCESS;
}

}  // namespace chorus_mpi
