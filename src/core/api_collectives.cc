// Public collective, point-to-point and reduction-op entry points: validate
// everything before anything is written, then submit.
#include <cstring>

#include "core/buffer_kinds.h"
#include "core/handles.h"
#include "core/launcher.h"

using chorus::Collective;
using chorus::InvalidArgument;
using chorus::Operation;
using chorus::PendingCall;
using chorus::Status;

namespace {

Status CheckDataType(chorusDataType_t dtype) {
  if (!chorus::IsValidDataType(dtype)) return InvalidArgument("unknown datatype ", static_cast<int>(dtype));
  return Status::Ok();
}

Status CheckRoot(const chorusComm* comm, int root) {
  int nranks = comm->impl->nranks();
  if (root < 0 || root >= nranks) return InvalidArgument("root ", root, " is out of range [0, ", nranks, ")");
  return Status::Ok();
}

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

// The public name of a collective's call, for messages about its buffers.
const char* PublicCallName(Collective coll) {
  switch (coll) {
    case Collective::kAllReduce: return "chorusAllReduce";
    case Collective::kBroadcast: return "chorusBroadcast";
    case Collective::kReduce: return "chorusReduce";
    case Collective::kAllGather: return "chorusAllGather";
    case Collective::kReduceScatter: return "chorusReduceScatter";
    case Collective::kAllToAll: return "chorusAlltoAll";
    case Collective::kGather: return "chorusGather";
    case Collective::kScatter: return "chorusScatter";
    case Collective::kCount: break;
  }
  return "collective";
}

// Validates a collective call, fills `op`, and submits it.
chorusResult_t SubmitCollective(Collective coll, const void* sendbuff, void* recvbuff, size_t count,
                                chorusDataType_t datatype, chorusRedOp_t redop, bool reduces, int root,
                                chorusComm_t comm, chorusStream_t stream) {
  const char* name = chorus::CollectiveName(coll);
  Status status = chorus::CheckComm(comm);
  if (!status.ok()) return chorus::Report(comm, status.WithContext(name));
  status = CheckDataType(datatype);
  PendingCall call;
  call.comm = comm;
  call.stream = stream;
  Operation& op = call.op;
  op.kind = Operation::Kind::kCollective;
  chorus::CollectiveArgs& args = op.args;
  args.coll = coll;
  args.count = count;
  args.dtype = datatype;
  args.nranks = comm->impl->nranks();
  args.rank = comm->impl->rank();
  args.root = root;
  if (status.ok() && reduces) status = comm->impl->ResolveOp(redop, datatype, &op);
  bool rooted = coll == Collective::kBroadcast || coll == Collective::kReduce || coll == Collective::kGather ||
                coll == Collective::kScatter;
  if (status.ok() && rooted) status = CheckRoot(comm, root);
  if (!rooted) args.root = 0;
  size_t elem = chorus::DataTypeSize(datatype);
  if (status.ok() && elem > 0 && count > SIZE_MAX / elem / static_cast<size_t>(args.nranks)) {
    status = InvalidArgument("count ", count, " overflows the address space");
  }
  if (!status.ok()) return chorus::Report(comm, status.WithContext(name));

  // Which buffers this rank uses (NCCL: root-only buffers may be NULL elsewhere).
  bool is_root = args.rank == args.root;
  bool uses_send = !((coll == Collective::kBroadcast || coll == Collective::kScatter) && !is_root);
  bool uses_recv = !((coll == Collective::kReduce || coll == Collective::kGather) && !is_root);
  size_t send_bytes = chorus::SendBufferBytes(args), recv_bytes = chorus::RecvBufferBytes(args);
  if (count > 0 && uses_send && sendbuff == nullptr) status = InvalidArgument("sendbuff is NULL with count ", count);
  if (count > 0 && uses_recv && recvbuff == nullptr) status = InvalidArgument("recvbuff is NULL with count ", count);
  if (!status.ok()) return chorus::Report(comm, status.WithContext(name));

  // In place as NCCL defines it; any other overlap is rejected.
  if (uses_send && uses_recv && count > 0) {
    const uint8_t* s = static_cast<const uint8_t*>(sendbuff);
    const uint8_t* r = static_cast<const uint8_t*>(recvbuff);
    size_t block = count * elem * static_cast<size_t>(args.rank);
    switch (coll) {
      case Collective::kAllGather: case Collective::kGather: args.in_place = s == r + block; break;
      case Collective::kReduceScatter: case Collective::kScatter: args.in_place = r == s + block; break;
      default: args.in_place = s == r; break;
    }
    if (!args.in_place && Overlap(sendbuff, send_bytes, recvbuff, recv_bytes)) {
      return chorus::Report(comm, InvalidArgument(name, ": sendbuff and recvbuff overlap but the call is not in place"));
    }
  }
  op.send = uses_send ? sendbuff : nullptr;
  op.recv = uses_recv ? recvbuff : nullptr;
  // Nothing to move or write; with CHORUS_CHECK it is still checked, so
  // that a rank calling with count 0 meets the others' call.
  if (count == 0 && !comm->impl->checks_calls()) return chorusSuccess;
  if (count > 0) {
    status = chorus::ClassifyCallBuffers(*comm->impl, &op);
    if (!status.ok()) return chorus::Report(comm, status.WithContext(PublicCallName(coll)));
  }
  return chorus::Report(comm, chorus::Submit(call));
}

chorusResult_t SubmitPointToPoint(Operation::Kind kind, const void* sendbuff, void* recvbuff, size_t count,
                                  chorusDataType_t datatype, int peer, chorusComm_t comm, chorusStream_t stream) {
  const char* name = kind == Operation::Kind::kSend ? "send" : "recv";
  Status status = chorus::CheckComm(comm);
  if (status.ok()) status = CheckDataType(datatype);
  if (status.ok()) {
    int nranks = comm->impl->nranks();
    if (peer < 0 || peer >= nranks) status = InvalidArgument("peer ", peer, " is out of range [0, ", nranks, ")");
  }
  size_t elem = chorus::DataTypeSize(datatype);
  if (status.ok() && elem > 0 && count > SIZE_MAX / elem) status = InvalidArgument("count ", count, " overflows");
  const void* buffer = kind == Operation::Kind::kSend ? sendbuff : recvbuff;
  if (status.ok() && count > 0 && buffer == nullptr) status = InvalidArgument("buffer is NULL with count ", count);
  if (!status.ok()) return chorus::Report(comm, status.WithContext(name));
  if (count == 0) return chorusSuccess;
  PendingCall call;
  call.comm = comm;
  call.stream = stream;
  call.op.kind = kind;
  call.op.peer = peer;
  call.op.bytes = count * elem;
  call.op.dtype = datatype;
  call.op.send = sendbuff;
  call.op.recv = recvbuff;
  status = chorus::ClassifyCallBuffers(*comm->impl, &call.op);
  if (!status.ok()) {
    return chorus::Report(comm, status.WithContext(kind == Operation::Kind::kSend ? "chorusSend" : "chorusRecv"));
  }
  return chorus::Report(comm, chorus::Submit(call));
}

}  // namespace

extern "C" {

chorusResult_t chorusAllReduce(const void* sendbuff, void* recvbuff, size_t count, chorusDataType_t datatype,
                               chorusRedOp_t op, chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kAllReduce, sendbuff, recvbuff, count, datatype, op, true, 0, comm, stream);
}

chorusResult_t chorusBroadcast(const void* sendbuff, void* recvbuff, size_t count, chorusDataType_t datatype,
                               int root, chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kBroadcast, sendbuff, recvbuff, count, datatype, chorusSum, false, root, comm,
                          stream);
}

chorusResult_t chorusReduce(const void* sendbuff, void* recvbuff, size_t count, chorusDataType_t datatype,
                            chorusRedOp_t op, int root, chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kReduce, sendbuff, recvbuff, count, datatype, op, true, root, comm, stream);
}

chorusResult_t chorusAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, chorusDataType_t datatype,
                               chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kAllGather, sendbuff, recvbuff, sendcount, datatype, chorusSum, false, 0, comm,
                          stream);
}

chorusResult_t chorusReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm,
                                   chorusStream_t stream) {
  return SubmitCollective(Collective::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, true, 0, comm,
                          stream);
}

chorusResult_t chorusAlltoAll(const void* sendbuff, void* recvbuff, size_t count, chorusDataType_t datatype,
                              chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kAllToAll, sendbuff, recvbuff, count, datatype, chorusSum, false, 0, comm,
                          stream);
}

chorusResult_t chorusGather(const void* sendbuff, void* recvbuff, size_t sendcount, chorusDataType_t datatype,
                            int root, chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kGather, sendbuff, recvbuff, sendcount, datatype, chorusSum, false, root, comm,
                          stream);
}

chorusResult_t chorusScatter(const void* sendbuff, void* recvbuff, size_t recvcount, chorusDataType_t datatype,
                             int root, chorusComm_t comm, chorusStream_t stream) {
  return SubmitCollective(Collective::kScatter, sendbuff, recvbuff, recvcount, datatype, chorusSum, false, root, comm,
                          stream);
}

chorusResult_t chorusSend(const void* sendbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream) {
  return SubmitPointToPoint(Operation::Kind::kSend, sendbuff, nullptr, count, datatype, peer, comm, stream);
}

chorusResult_t chorusRecv(void* recvbuff, size_t count, chorusDataType_t datatype, int peer, chorusComm_t comm,
                          chorusStream_t stream) {
  return SubmitPointToPoint(Operation::Kind::kRecv, nullptr, recvbuff, count, datatype, peer, comm, stream);
}

chorusResult_t chorusGroupStart(void) { return chorus::Report(nullptr, chorus::GroupStart()); }

chorusResult_t chorusGroupEnd(void) { return chorus::Report(nullptr, chorus::GroupEnd()); }

chorusResult_t chorusRedOpCreatePreMulSum(chorusRedOp_t* op, void* scalar, chorusDataType_t datatype,
                                          chorusScalarResidence_t residence, chorusComm_t comm) {
  Status status = chorus::CheckComm(comm);
  if (status.ok()) status = CheckDataType(datatype);
  if (status.ok() && (op == nullptr || scalar == nullptr)) status = InvalidArgument("op and scalar must not be NULL");
  if (status.ok() && residence != chorusScalarDevice && residence != chorusScalarHostImmediate) {
    status = InvalidArgument("unknown scalar residence ", static_cast<int>(residence));
  }
  // The scalar is read on the CPU (now, and at every call for
  // chorusScalarDevice), so it must be memory the CPU can touch.
  if (status.ok()) status = chorus::RequireCpuMemory(*comm->impl, "scalar", scalar, "PreMulSum");
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusRedOpCreatePreMulSum"));
  chorus::PreMulSumOp premul;
  premul.dtype = datatype;
  premul.read_each_call = residence == chorusScalarDevice;
  premul.pointer = scalar;
  std::memcpy(premul.value, scalar, chorus::DataTypeSize(datatype));
  return chorus::Report(comm, comm->impl->CreatePreMulSum(premul, op));
}

chorusResult_t chorusRedOpDestroy(chorusRedOp_t op, chorusComm_t comm) {
  Status status = chorus::CheckComm(comm);
  if (status.ok()) status = comm->impl->DestroyPreMulSum(op);
  return chorus::Report(comm, status.WithContext("chorusRedOpDestroy"));
}

}  // extern "C"
