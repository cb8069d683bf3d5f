// Public entry points of the explicit non-exact collectives: gossip
// averaging and compressed allreduce (docs/lossy.md).
#include "core/handles.h"
#include "lossy/compression.h"
#include "lossy/gossip.h"

extern "C" {

chorusResult_t chorusGossip(const void* sendbuff, void* recvbuff, size_t count, chorusDataType_t datatype,
                            chorusGossipState_t* state, chorusComm_t comm, chorusStream_t stream) {
  chorus::Status status = chorus::CheckComm(comm);
  if (status.ok()) status = chorus::Gossip(sendbuff, recvbuff, count, datatype, state, comm, stream);
  return chorus::Report(comm, status.WithContext("chorusGossip"));
}

chorusResult_t chorusCompressStateCreate(chorusCompressState_t* state, chorusCompression_t mode, size_t count,
                                         chorusDataType_t datatype, chorusComm_t comm) {
  chorus::Status status = chorus::CheckComm(comm);
  if (status.ok()) status = chorus::CreateCompressState(mode, count, datatype, comm, state);
  return chorus::Report(comm, status.WithContext("chorusCompressStateCreate"));
}

chorusResult_t chorusCompressStateDestroy(chorusCompressState_t state) {
  if (state == nullptr) return chorusSuccess;
  if (state->magic != chorusCompressState::kLive) {
    return chorus::Report(nullptr, chorus::InvalidArgument("chorusCompressStateDestroy: invalid state"));
  }
  state->magic = 0;
  delete state;
  return chorusSuccess;
}

chorusResult_t chorusCompressStateGetBytes(chorusCompressState_t state, unsigned long long* bytesOnWire,
                                           unsigned long long* bytesUncompressed) {
  if (state == nullptr || state->magic != chorusCompressState::kLive) {
    return chorus::Report(nullptr, chorus::InvalidArgument("chorusCompressStateGetBytes: invalid state"));
  }
  if (bytesOnWire != nullptr) *bytesOnWire = state->bytes_on_wire.load();
  if (bytesUncompressed != nullptr) *bytesUncompressed = state->bytes_uncompressed.load();
  return chorusSuccess;
}

chorusResult_t chorusAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count,
                                         chorusDataType_t datatype, chorusCompressState_t state, chorusComm_t comm,
                                         chorusStream_t stream) {
  chorus::Status status = chorus::CheckComm(comm);
  if (status.ok()) status = chorus::AllReduceCompressed(sendbuff, recvbuff, count, datatype, state, comm, stream);
  return chorus::Report(comm, status.WithContext("chorusAllReduceCompressed"));
}

}  // extern "C"
