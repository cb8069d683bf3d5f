#include "interpose/mpi/dispatch.h"

#include "interpose/mpi/type_map.h"

namespace chorus_mpi {

size_t PayloadBytes(long long count, MPI_Datatype type) {
  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  if (const TypeInfo* info = LookupType(type)) return static_cast<size_t>(count) * info->size;
  MPI_Count size = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return static_cast<size_t>(count) * static_cast<size_t>(size);
}

CommEntry* Route(Call call, MPI_Comm comm, const Shape& shape, const char* reason, size_t bytes) {
  CommEntry* entry = nullptr;
  if (reason == nullptr && comm == MPI_COMM_NULL) reason = "MPI_COMM_NULL";
  if (reason == nullptr) entry = ChorusCommFor(comm, &reason);
  if (entry != nullptr && shape.has_root && (shape.root < 0 || shape.root >= entry->size)) {
    entry = nullptr;
    reason = "root out of range";
  }
  NoteCall(call, comm, shape, bytes, entry == nullptr ? reason : nullptr);
  return entry;
}

}  // namespace chorus_mpi
