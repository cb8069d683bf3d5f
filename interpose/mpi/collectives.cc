// The blocking collectives: MPI_Allreduce, MPI_Bcast, MPI_Reduce,
// MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Gather,
// MPI_Scatter and MPI_Barrier. Each runs on the communicator's Chorus
// communicator when Route says so, blocking on the caller's thread (NULL
// stream), and passes to its PMPI_ twin unchanged otherwise.
//
// Reductions need a (datatype, op) pair from type_map; data movement moves
// bytes (byte_view stages non-contiguous datatypes), so only a negative
// count or MPI_DATATYPE_NULL makes it fall back. MPI_IN_PLACE forms map to
// Chorus's in-place layouts.
#include <mpi.h>

#include <cstring>

#include "chorus/chorus.h"
#include "interpose/mpi/byte_view.h"
#include "interpose/mpi/collectives.h"
#include "interpose/mpi/dispatch.h"
#include "interpose/mpi/errors.h"
#include "interpose/mpi/progress.h"
#include "interpose/mpi/type_map.h"

namespace chorus_mpi {
namespace {

int Finish(chorusResult_t result, CommEntry* entry, Call call) {
  if (result == chorusSuccess) return MPI_SUCCESS;
  return RaiseError(entry->mpi_comm, entry->comm, result, CallName(call));
}

// A local failure (packing) after every rank chose Chorus: raise it.
int Local(int rc, CommEntry* entry) {
  if (rc == MPI_SUCCESS) return rc;
  PMPI_Comm_call_errhandler(entry->mpi_comm, rc);
  return rc;
}

const char* DataReason(long long count, MPI_Datatype type) {
  if (count < 0) return "negative count";
  if (type == MPI_DATATYPE_NULL) return "MPI_DATATYPE_NULL";
  return nullptr;
}

// Routes a rooted call that moves data, by the side of it that is significant
// on every rank (count, type): Bcast's buffer, Gather's send side, Scatter's
// receive side.
CommEntry* RouteRooted(Call call, MPI_Comm comm, int count, MPI_Datatype type, int root, bool in_place) {
  Shape shape{type, MPI_OP_NULL, count, true, root, in_place};
  return Route(call, comm, shape, DataReason(count, type), PayloadBytes(count, type));
}

const char* ReduceReason(long long count, MPI_Datatype type, MPI_Op op, Reduction* reduction) {
  if (count < 0) return "negative count";
  return MapReduction(type, op, reduction);
}

}  // namespace

int Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!Enabled()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  Reduction reduction;
  const char* reason = ReduceReason(count, datatype, op, &reduction);
  Shape shape{datatype, op, count, false, 0, sendbuf == MPI_IN_PLACE};
  CommEntry* entry = Route(Call::kAllreduce, comm, shape, reason, PayloadBytes(count, datatype));
  if (entry == nullptr) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  ProgressWatch watch;
  const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return Finish(chorusAllReduce(send, recvbuf, static_cast<size_t>(count) * reduction.lanes, reduction.type,
                                reduction.op, entry->comm, nullptr),
                entry, Call::kAllreduce);
}

int Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
           MPI_Comm comm) {
  if (!Enabled()) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  Reduction reduction;
  const char* reason = ReduceReason(count, datatype, op, &reduction);
  Shape shape{datatype, op, count, true, root, sendbuf == MPI_IN_PLACE};
  CommEntry* entry = Route(Call::kReduce, comm, shape, reason, PayloadBytes(count, datatype));
  if (entry == nullptr) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  ProgressWatch watch;
  const bool is_root = entry->rank == root;
  if (!is_root && sendbuf == MPI_IN_PLACE) return Local(MPI_ERR_BUFFER, entry);  // MPI_IN_PLACE is for the root
  const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return Finish(chorusReduce(send, is_root ? recvbuf : nullptr, static_cast<size_t>(count) * reduction.lanes,
                             reduction.type, reduction.op, root, entry->comm, nullptr),
                entry, Call::kReduce);
}

int ReduceScatterBlock(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  if (!Enabled()) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  Reduction reduction;
  const char* reason = ReduceReason(recvcount, datatype, op, &reduction);
  Shape shape{datatype, op, recvcount, false, 0, sendbuf == MPI_IN_PLACE};
  int size = 0;
  if (reason == nullptr && comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  CommEntry* entry = Route(Call::kReduceScatterBlock, comm, shape, reason,
                           PayloadBytes(static_cast<long long>(recvcount) * size, datatype));
  if (entry == nullptr) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  ProgressWatch watch;
  const size_t count = static_cast<size_t>(recvcount) * reduction.lanes;
  if (sendbuf != MPI_IN_PLACE) {
    return Finish(chorusReduceScatter(sendbuf, recvbuf, count, reduction.type, reduction.op, entry->comm, nullptr),
                  entry, Call::kReduceScatterBlock);
  }
  // In place: MPI reads all blocks from recvbuf and leaves the result in its
  // first block; Chorus's in-place form leaves it in this rank's block.
  const size_t block = PayloadBytes(recvcount, datatype);
  char* mine = static_cast<char*>(recvbuf) + static_cast<size_t>(entry->rank) * block;
  chorusResult_t result = chorusReduceScatter(recvbuf, mine, count, reduction.type, reduction.op, entry->comm, nullptr);
  if (result == chorusSuccess && entry->rank != 0) std::memmove(recvbuf, mine, block);
  return Finish(result, entry, Call::kReduceScatterBlock);
}

int Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!Enabled()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  CommEntry* entry = RouteRooted(Call::kBcast, comm, count, datatype, root, false);
  if (entry == nullptr) return PMPI_Bcast(buffer, count, datatype, root, comm);
  ProgressWatch watch;
  ByteView view;
  int rc = view.Describe(buffer, count, datatype, comm);
  if (rc == MPI_SUCCESS && entry->rank == root) rc = view.PackAll();
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  chorusResult_t result = chorusBroadcast(view.data(), view.data(), view.bytes(), chorusUint8, root, entry->comm, nullptr);
  if (result == chorusSuccess && entry->rank != root) return Local(view.UnpackAll(), entry);
  return Finish(result, entry, Call::kBcast);
}

int Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm) {
  if (!Enabled()) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const char* reason = DataReason(recvcount, recvtype);
  if (reason == nullptr && !in_place) reason = DataReason(sendcount, sendtype);
  Shape shape{recvtype, MPI_OP_NULL, recvcount, false, 0, in_place};
  CommEntry* entry = Route(Call::kAllgather, comm, shape, reason,
                           in_place ? PayloadBytes(recvcount, recvtype) : PayloadBytes(sendcount, sendtype));
  if (entry == nullptr) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  ProgressWatch watch;
  ByteView recv;
  int rc = recv.Describe(recvbuf, static_cast<long long>(recvcount) * entry->size, recvtype, comm);
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  const size_t block = recv.bytes() / entry->size;
  ByteView send;
  const char* send_data = nullptr;
  if (in_place) {
    rc = recv.Pack(static_cast<long long>(entry->rank) * recvcount, recvcount);
    send_data = recv.data() + entry->rank * block;
  } else {
    rc = send.Describe(sendbuf, sendcount, sendtype, comm);
    if (rc == MPI_SUCCESS && send.bytes() != block) rc = MPI_ERR_TRUNCATE;
    if (rc == MPI_SUCCESS) rc = send.PackAll();
    send_data = send.data();
  }
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  chorusResult_t result = chorusAllGather(send_data, recv.data(), block, chorusUint8, entry->comm, nullptr);
  if (result == chorusSuccess) return Local(recv.UnpackAll(), entry);
  return Finish(result, entry, Call::kAllgather);
}

int Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm) {
  if (!Enabled()) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const char* reason = DataReason(recvcount, recvtype);
  if (reason == nullptr && !in_place) reason = DataReason(sendcount, sendtype);
  Shape shape{recvtype, MPI_OP_NULL, recvcount, false, 0, in_place};
  int size = 0;
  if (reason == nullptr && comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  CommEntry* entry = Route(Call::kAlltoall, comm, shape, reason,
                           in_place ? PayloadBytes(static_cast<long long>(recvcount) * size, recvtype)
                                    : PayloadBytes(static_cast<long long>(sendcount) * size, sendtype));
  if (entry == nullptr) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  ProgressWatch watch;
  const long long recv_elements = static_cast<long long>(recvcount) * entry->size;
  ByteView recv, send;
  int rc = recv.Describe(recvbuf, recv_elements, recvtype, comm);
  if (rc == MPI_SUCCESS) {
    // In place: the blocks to send are in recvbuf, which Chorus overwrites: send a copy.
    rc = in_place ? send.Describe(recvbuf, recv_elements, recvtype, comm, /*staged=*/true)
                  : send.Describe(sendbuf, static_cast<long long>(sendcount) * entry->size, sendtype, comm);
  }
  if (rc == MPI_SUCCESS && send.bytes() != recv.bytes()) rc = MPI_ERR_TRUNCATE;
  if (rc == MPI_SUCCESS) rc = send.PackAll();
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  chorusResult_t result = chorusAlltoAll(send.data(), recv.data(), recv.bytes() / entry->size, chorusUint8,
                                         entry->comm, nullptr);
  if (result == chorusSuccess) return Local(recv.UnpackAll(), entry);
  return Finish(result, entry, Call::kAlltoall);
}

int Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (!Enabled()) return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  // Only the send side is significant everywhere (the root's, in place, is
  // its block of recvbuf); the root's receive side never changes the
  // decision (it is staged when it needs to be).
  const bool in_place = sendbuf == MPI_IN_PLACE;
  CommEntry* entry = RouteRooted(Call::kGather, comm, in_place ? recvcount : sendcount,
                                 in_place ? recvtype : sendtype, root, in_place);
  if (entry == nullptr) return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  ProgressWatch watch;
  ByteView send, recv;
  int rc = MPI_SUCCESS;
  if (entry->rank != root) {
    if (in_place) return Local(MPI_ERR_BUFFER, entry);  // MPI_IN_PLACE is for the root
    rc = send.Describe(sendbuf, sendcount, sendtype, comm);
    if (rc == MPI_SUCCESS) rc = send.PackAll();
    if (rc != MPI_SUCCESS) return Local(rc, entry);
    return Finish(chorusGather(send.data(), nullptr, send.bytes(), chorusUint8, root, entry->comm, nullptr), entry,
                  Call::kGather);
  }
  rc = recv.Describe(recvbuf, static_cast<long long>(recvcount) * entry->size, recvtype, comm);
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  const size_t block = recv.bytes() / entry->size;
  const char* send_data = nullptr;
  if (in_place) {
    rc = recv.Pack(static_cast<long long>(root) * recvcount, recvcount);
    send_data = recv.data() + root * block;
  } else {
    rc = send.Describe(sendbuf, sendcount, sendtype, comm);
    if (rc == MPI_SUCCESS && send.bytes() != block) rc = MPI_ERR_TRUNCATE;
    if (rc == MPI_SUCCESS) rc = send.PackAll();
    send_data = send.data();
  }
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  chorusResult_t result = chorusGather(send_data, recv.data(), block, chorusUint8, root, entry->comm, nullptr);
  if (result == chorusSuccess) return Local(recv.UnpackAll(), entry);
  return Finish(result, entry, Call::kGather);
}

int Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (!Enabled()) return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  // Only the receive side is significant everywhere (see Gather).
  const bool in_place = recvbuf == MPI_IN_PLACE;
  CommEntry* entry = RouteRooted(Call::kScatter, comm, in_place ? sendcount : recvcount,
                                 in_place ? sendtype : recvtype, root, in_place);
  if (entry == nullptr) return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  ProgressWatch watch;
  ByteView send, recv;
  int rc = MPI_SUCCESS;
  if (entry->rank != root) {
    if (in_place) return Local(MPI_ERR_BUFFER, entry);  // MPI_IN_PLACE is for the root
    rc = recv.Describe(recvbuf, recvcount, recvtype, comm);
    if (rc != MPI_SUCCESS) return Local(rc, entry);
    chorusResult_t result = chorusScatter(nullptr, recv.data(), recv.bytes(), chorusUint8, root, entry->comm, nullptr);
    if (result == chorusSuccess) return Local(recv.UnpackAll(), entry);
    return Finish(result, entry, Call::kScatter);
  }
  rc = send.Describe(sendbuf, static_cast<long long>(sendcount) * entry->size, sendtype, comm);
  if (rc == MPI_SUCCESS) rc = send.PackAll();
  if (rc != MPI_SUCCESS) return Local(rc, entry);
  const size_t block = send.bytes() / entry->size;
  char* recv_data = send.data() + root * block;  // in place: the root's block stays in sendbuf
  if (!in_place) {
    rc = recv.Describe(recvbuf, recvcount, recvtype, comm);
    if (rc == MPI_SUCCESS && recv.bytes() != block) rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) return Local(rc, entry);
    recv_data = recv.data();
  }
  chorusResult_t result = chorusScatter(send.data(), recv_data, block, chorusUint8, root, entry->comm, nullptr);
  if (result == chorusSuccess && !in_place) return Local(recv.UnpackAll(), entry);
  return Finish(result, entry, Call::kScatter);
}

int Barrier(MPI_Comm comm) {
  if (!Enabled()) return PMPI_Barrier(comm);
  CommEntry* entry = Route(Call::kBarrier, comm, Shape{}, nullptr, 0);
  if (entry == nullptr) return PMPI_Barrier(comm);
  ProgressWatch watch;
  // An allreduce completes on a rank only once every rank has joined it.
  unsigned char token = 0;
  return Finish(chorusAllReduce(&token, &token, 1, chorusUint8, chorusMax, entry->comm, nullptr), entry,
                Call::kBarrier);
}

}  // namespace chorus_mpi

// The C entry points the program calls instead of Open MPI's.
extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return chorus_mpi::Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  return chorus_mpi::Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  return chorus_mpi::ReduceScatterBlock(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return chorus_mpi::Bcast(buffer, count, datatype, root, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return chorus_mpi::Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return chorus_mpi::Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return chorus_mpi::Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return chorus_mpi::Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Barrier(MPI_Comm comm) { return chorus_mpi::Barrier(comm); }

}  // extern "C"
