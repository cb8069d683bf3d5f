// Collective, point-to-point, group and reduction-op entry points of
// nccl.h. A call on host buffers runs on Chorus's NULL stream, so it has
// completed when it returns (inside a group: when ncclGroupEnd returns); a
// call on device buffers is ordered on its cudaStream_t
// (interpose/nccl/stream_links.h).
#include <string>

#include "interpose/nccl/group.h"
#include "interpose/nccl/last_error.h"
#include "interpose/nccl/mapping.h"
#include "interpose/nccl/nccl_api.h"
#include "interpose/nccl/stream_links.h"

using chorus_nccl::Fail;
using chorus_nccl::FromChorus;
using chorus_nccl::ToChorus;

namespace {

// Checks what Chorus cannot check under NCCL's names (the handle, the
// datatype and op enums) and maps them.
ncclResult_t Prepare(const char* api, ncclComm_t comm, ncclDataType_t datatype, chorusDataType_t* type) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  const char* why = nullptr;
  if (!chorus_nccl::MapDataType(datatype, type, &why)) {
    return Fail(ncclInvalidArgument, api,
                "datatype " + std::to_string(static_cast<int>(datatype)) + " (" + chorus_nccl::DataTypeName(datatype) +
                    ") " + why);
  }
  return ncclSuccess;
}

ncclResult_t PrepareOp(const char* api, ncclRedOp_t op, chorusRedOp_t* out) {
  if (!chorus_nccl::MapRedOp(op, out)) {
    return Fail(ncclInvalidArgument, api, "op " + std::to_string(static_cast<int>(op)) + " is not an ncclRedOp_t");
  }
  return ncclSuccess;
}

// A call's cudaStream_t and the buffers that decide which Chorus stream it
// runs on (null where the call has no such buffer).
struct Buffers {
  cudaStream_t stream;
  const void* send;
  const void* recv;
};

// One call: its arguments checked and mapped (the op only when it has one),
// its Chorus stream chosen, then `call(type, op, comm, stream)` on Chorus,
// its result mapped back.
template <typename Call>
ncclResult_t Forward(const char* api, ncclComm_t comm, ncclDataType_t datatype, const ncclRedOp_t* op,
                     const Buffers& buffers, Call call) {
  chorusDataType_t type;
  chorusRedOp_t chorus_op = chorusSum;
  ncclResult_t result = Prepare(api, comm, datatype, &type);
  if (result == ncclSuccess && op != nullptr) result = PrepareOp(api, *op, &chorus_op);
  chorusStream_t chorus_stream = nullptr;
  if (result == ncclSuccess) {
    result = chorus_nccl::StreamForCall(api, buffers.stream, buffers.send, buffers.recv, &chorus_stream);
  }
  if (result != ncclSuccess) return result;
  return FromChorus(call(type, chorus_op, ToChorus(comm), chorus_stream), api);
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Forward(
      "ncclAllReduce", comm, datatype, &op, Buffers{stream, sendbuff, recvbuff},
      [&](chorusDataType_t type, chorusRedOp_t chorus_op, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
        return chorusAllReduce(sendbuff, recvbuff, count, type, chorus_op, chorus_comm, chorus_stream);
      });
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return Forward("ncclBroadcast", comm, datatype, nullptr, Buffers{stream, sendbuff, recvbuff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusBroadcast(sendbuff, recvbuff, count, type, root, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return Forward("ncclBcast", comm, datatype, nullptr, Buffers{stream, buff, buff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusBroadcast(buff, buff, count, type, root, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return Forward(
      "ncclReduce", comm, datatype, &op, Buffers{stream, sendbuff, recvbuff},
      [&](chorusDataType_t type, chorusRedOp_t chorus_op, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
        return chorusReduce(sendbuff, recvbuff, count, type, chorus_op, root, chorus_comm, chorus_stream);
      });
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return Forward("ncclAllGather", comm, datatype, nullptr, Buffers{stream, sendbuff, recvbuff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusAllGather(sendbuff, recvbuff, sendcount, type, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Forward(
      "ncclReduceScatter", comm, datatype, &op, Buffers{stream, sendbuff, recvbuff},
      [&](chorusDataType_t type, chorusRedOp_t chorus_op, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
        return chorusReduceScatter(sendbuff, recvbuff, recvcount, type, chorus_op, chorus_comm, chorus_stream);
      });
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return Forward("ncclAlltoAll", comm, datatype, nullptr, Buffers{stream, sendbuff, recvbuff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusAlltoAll(sendbuff, recvbuff, count, type, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return Forward("ncclGather", comm, datatype, nullptr, Buffers{stream, sendbuff, recvbuff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusGather(sendbuff, recvbuff, count, type, root, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return Forward("ncclScatter", comm, datatype, nullptr, Buffers{stream, sendbuff, recvbuff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusScatter(sendbuff, recvbuff, count, type, root, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return Forward("ncclSend", comm, datatype, nullptr, Buffers{stream, sendbuff, nullptr},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusSend(sendbuff, count, type, peer, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return Forward("ncclRecv", comm, datatype, nullptr, Buffers{stream, nullptr, recvbuff},
                 [&](chorusDataType_t type, chorusRedOp_t, chorusComm_t chorus_comm, chorusStream_t chorus_stream) {
                   return chorusRecv(recvbuff, count, type, peer, chorus_comm, chorus_stream);
                 });
}

NCCL_API(ncclResult_t, ncclGroupStart, void) { return chorus_nccl::GroupStart(); }

NCCL_API(ncclResult_t, ncclGroupEnd, void) { return chorus_nccl::GroupEnd(); }

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  (void)simInfo;
  return Fail(ncclInvalidUsage, "ncclGroupSimulateEnd",
              "not supported by Chorus (no simulation of NCCL's GPU kernels); the group stays open, end it "
              "with ncclGroupEnd");
}

// With ncclScalarDevice Chorus reads *scalar at each call: host memory in
// this build, as every buffer.
NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* api = "ncclRedOpCreatePreMulSum";
  chorusDataType_t type;
  ncclResult_t result = Prepare(api, comm, datatype, &type);
  if (result != ncclSuccess) return result;
  if (op == nullptr) return Fail(ncclInvalidArgument, api, "op is NULL");
  chorusScalarResidence_t chorus_residence;
  switch (residence) {
    case ncclScalarDevice:
      chorus_residence = chorusScalarDevice;
      break;
    case ncclScalarHostImmediate:
      chorus_residence = chorusScalarHostImmediate;
      break;
    default:
      return Fail(ncclInvalidArgument, api,
                  "residence " + std::to_string(static_cast<int>(residence)) + " is not an ncclScalarResidence_t");
  }
  chorusRedOp_t made;
  result = FromChorus(chorusRedOpCreatePreMulSum(&made, scalar, type, chorus_residence, ToChorus(comm)), api);
  if (result != ncclSuccess) return result;
  *op = static_cast<ncclRedOp_t>(made);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  const char* api = "ncclRedOpDestroy";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  chorusRedOp_t chorus_op;
  ncclResult_t result = PrepareOp(api, op, &chorus_op);
  if (result != ncclSuccess) return result;
  return FromChorus(chorusRedOpDestroy(chorus_op, ToChorus(comm)), api);
}
