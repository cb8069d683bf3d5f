// The ibverbs transport's registry entry and its own variables.
#include "transports/ibverbs/ib_descriptor.h"

#include "base/config.h"
#include "transports/ibverbs/ib_hca_list.h"
#include "transports/ibverbs/ib_slot_ring.h"
#include "transports/ibverbs/ib_transport.h"

namespace chorus {
namespace {

const char* const kIbVariables[] = {"CHORUS_IB_HCA",          "CHORUS_IB_GID_INDEX", "CHORUS_IB_SLOT_BYTES",
                                    "CHORUS_IB_SLOTS",        "CHORUS_IB_TIMEOUT",   "CHORUS_IB_RETRY_CNT",
                                    "CHORUS_IB_DIRECT_BYTES", nullptr};

Status CheckIbVars(const TransportVars& vars) {
  IbOptions options;
  return ReadIbOptions(vars, &options);
}

Status CreateIb(const TransportDescriptor&, const TransportOptions& common, const TransportVars& vars,
                std::unique_ptr<Transport>* out) {
  IbOptions options;
  CHORUS_RETURN_IF_ERROR(ReadIbOptions(vars, &options));
  static_cast<TransportOptions&>(options) = common;
  return CreateIbTransport(options, out);
}

Status ReadIntIn(const TransportVars& vars, const char* name, long long low, long long high, long long* out) {
  CHORUS_RETURN_IF_ERROR(ParseInt(vars.Get(name), name, out));
  if (*out < low || *out > high) return InvalidArgument(name, " must be in ", low, "..", high, ", not ", *out);
  return Status::Ok();
}

}  // namespace

Status ReadIbOptions(const TransportVars& vars, IbOptions* options) {
  options->hca = vars.Get("CHORUS_IB_HCA");
  ib::HcaFilter filter;
  CHORUS_RETURN_IF_ERROR(ib::HcaFilter::Parse(options->hca, &filter));
  long long value = 0;
  CHORUS_RETURN_IF_ERROR(ReadIntIn(vars, "CHORUS_IB_GID_INDEX", -1, 255, &value));
  options->gid_index = static_cast<int>(value);
  size_t slot_bytes = 0;
  CHORUS_RETURN_IF_ERROR(ParseBytes(vars.Get("CHORUS_IB_SLOT_BYTES"), "CHORUS_IB_SLOT_BYTES", &slot_bytes));
  if (slot_bytes < 4096 || slot_bytes > (size_t{64} << 20) || slot_bytes % 4096 != 0) {
    return InvalidArgument("CHORUS_IB_SLOT_BYTES must be a multiple of 4K in 4K..64M, not ", slot_bytes);
  }
  options->slot_bytes = static_cast<uint32_t>(slot_bytes);
  CHORUS_RETURN_IF_ERROR(ReadIntIn(vars, "CHORUS_IB_SLOTS", 2, 1024, &value));
  options->slots = static_cast<uint32_t>(value);
  size_t direct_bytes = 0;
  CHORUS_RETURN_IF_ERROR(ParseBytes(vars.Get("CHORUS_IB_DIRECT_BYTES"), "CHORUS_IB_DIRECT_BYTES", &direct_bytes));
  options->direct_bytes = direct_bytes;
  CHORUS_RETURN_IF_ERROR(ReadIntIn(vars, "CHORUS_IB_TIMEOUT", 1, 31, &value));
  options->ack_timeout = static_cast<int>(value);
  CHORUS_RETURN_IF_ERROR(ReadIntIn(vars, "CHORUS_IB_RETRY_CNT", 0, 7, &value));
  options->retry_count = static_cast<int>(value);
  return Status::Ok();
}

TransportDescriptor IbTransportDescriptor() {
  TransportDescriptor descriptor = {};
  descriptor.name = "ibverbs";
  descriptor.alias = "ib";
  descriptor.preference = 50;  // before TCP where both are listed
  // Not in auto yet: hosts without an RDMA device (most) would warn at every
  // communicator's creation, and auto's TCP already reaches every peer. Name
  // it to use it (CHORUS_TRANSPORT=ibverbs, shm,ibverbs, shm,ibverbs,tcp).
  descriptor.explicit_only = true;
  descriptor.capabilities = TransportCapabilities();
  descriptor.variables = kIbVariables;
  descriptor.check = CheckIbVars;
  descriptor.create = CreateIb;
  return descriptor;
}

}  // namespace chorus
