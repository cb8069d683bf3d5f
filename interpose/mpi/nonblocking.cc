// MPI_Iallreduce and MPI_Ibcast: the same decisions as the blocking calls;
// a served call is enqueued on the communicator's Chorus host stream and an
// event recorded after it becomes the request (requests.h). Chorus runs the
// operations of one communicator in issue order whatever stream carries
// them, so blocking and non-blocking calls mix as MPI requires.
#include <mpi.h>

#include <memory>

#include "chorus/chorus.h"
#include "interpose/mpi/dispatch.h"
#include "interpose/mpi/errors.h"
#include "interpose/mpi/requests.h"
#include "interpose/mpi/type_map.h"

namespace chorus_mpi {
namespace {

// Issues `launch` on the entry's stream with an event after it. Without a
// stream or an event (out of resources) the call runs blocking and the
// request is born complete: every rank has issued it either way.
template <typename Launch>
int Issue(CommEntry* entry, Call call, std::unique_ptr<Request> request, MPI_Request* handle, Launch launch) {
  request->comm = entry->mpi_comm;
  request->chorus_comm = entry->comm;
  request->call = call;
  chorusStream_t stream = StreamOf(entry);
  chorusEvent_t event = nullptr;
  if (stream == nullptr || chorusEventCreate(&event) != chorusSuccess) {
    stream = nullptr;
    event = nullptr;
  }
  chorusResult_t result = launch(stream);
  if (result == chorusSuccess && event != nullptr) result = chorusEventRecord(event, stream);
  if (result != chorusSuccess) {
    if (event != nullptr) chorusEventDestroy(event);
    *handle = MPI_REQUEST_NULL;
    return RaiseError(entry->mpi_comm, entry->comm, result, CallName(call));
  }
  request->event = event;
  *handle = Publish(std::move(request));
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace chorus_mpi

using chorus_mpi::Call;

extern "C" {

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  using namespace chorus_mpi;
  if (!Enabled()) return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  Reduction reduction;
  const char* reason = count < 0 ? "negative count" : MapReduction(datatype, op, &reduction);
  Shape shape{datatype, op, count, false, 0, sendbuf == MPI_IN_PLACE};
  CommEntry* entry = Route(Call::kIallreduce, comm, shape, reason, PayloadBytes(count, datatype));
  if (entry == nullptr) return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return Issue(entry, Call::kIallreduce, std::make_unique<Request>(), request, [&](chorusStream_t stream) {
    return chorusAllReduce(send, recvbuf, static_cast<size_t>(count) * reduction.lanes, reduction.type, reduction.op,
                           entry->comm, stream);
  });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  using namespace chorus_mpi;
  if (!Enabled()) return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
  const char* reason = count < 0 ? "negative count" : datatype == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL" : nullptr;
  Shape shape{datatype, MPI_OP_NULL, count, true, root, false};
  CommEntry* entry = Route(Call::kIbcast, comm, shape, reason, PayloadBytes(count, datatype));
  if (entry == nullptr) return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
  auto pending = std::make_unique<Request>();
  ByteView& view = pending->unpack;
  int rc = view.Describe(buffer, count, datatype, comm);
  if (rc == MPI_SUCCESS && entry->rank == root) rc = view.PackAll();
  if (rc != MPI_SUCCESS) {
    *request = MPI_REQUEST_NULL;
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
  }
  pending->needs_unpack = view.staged() && entry->rank != root;
  char* data = view.data();
  const size_t bytes = view.bytes();
  return Issue(entry, Call::kIbcast, std::move(pending), request, [&](chorusStream_t stream) {
    return chorusBroadcast(data, data, bytes, chorusUint8, root, entry->comm, stream);
  });
}

}  // extern "C"
