#include "transports/ibverbs/ib_device.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "transports/ibverbs/ib_gid_choice.h"

namespace chorus {
namespace ib {
namespace {

const char* PortStateName(ibv_port_state state) { return ibv_port_state_str(state); }

struct Candidate {
  std::string device;
  int port;
};

}  // namespace

Device::~Device() {
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
}

Status Device::Open(const HcaFilter& filter, int gid_index, int local_rank) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr || count == 0) {
    const int err = errno;
    if (list != nullptr) ibv_free_device_list(list);
    return SystemError("ibverbs transport: no RDMA device (libibverbs found none",
                       list == nullptr && err != 0 ? StrCat(": ", std::strerror(err)) : std::string(), ")");
  }
  // Every allowed active port, then one of them by local rank.
  std::vector<Candidate> candidates;
  std::string seen;
  for (int d = 0; d < count; ++d) {
    const std::string device = ibv_get_device_name(list[d]);
    ibv_context* context = ibv_open_device(list[d]);
    if (context == nullptr) {
      seen += StrCat(seen.empty() ? "" : ", ", device, " (cannot open: ", std::strerror(errno), ")");
      continue;
    }
    ibv_device_attr attr = {};
    if (ibv_query_device(context, &attr) == 0) {
      for (int port = 1; port <= attr.phys_port_cnt; ++port) {
        ibv_port_attr port_attr = {};
        if (ibv_query_port(context, port, &port_attr) != 0) continue;
        const bool allowed = filter.Allows(device, port);
        seen += StrCat(seen.empty() ? "" : ", ", device, ":", port, " ", PortStateName(port_attr.state),
                       allowed ? "" : " (excluded by CHORUS_IB_HCA)");
        if (allowed && port_attr.state == IBV_PORT_ACTIVE) candidates.push_back({device, port});
      }
    }
    ibv_close_device(context);
  }
  if (candidates.empty()) {
    ibv_free_device_list(list);
    return SystemError("ibverbs transport: no active RDMA port allowed by CHORUS_IB_HCA (seen: ", seen, ")");
  }
  const Candidate& chosen = candidates[static_cast<size_t>(local_rank) % candidates.size()];
  for (int d = 0; d < count && context_ == nullptr; ++d) {
    if (chosen.device == ibv_get_device_name(list[d])) context_ = ibv_open_device(list[d]);
  }
  ibv_free_device_list(list);
  name_ = chosen.device;
  port_ = chosen.port;
  if (context_ == nullptr) return ErrnoError(errno, StrCat("ibverbs transport: opening ", label()));
  if (ibv_query_device(context_, &device_attr_) != 0) return ErrnoError(errno, StrCat("ibv_query_device(", name_, ")"));
  if (ibv_query_port(context_, port_, &port_attr_) != 0) return ErrnoError(errno, StrCat("ibv_query_port(", label(), ")"));
  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) return ErrnoError(errno, StrCat("ibv_alloc_pd(", name_, ")"));
  return ChooseGid(gid_index);
}

Status Device::ChooseGid(int configured) {
  std::vector<GidEntry> table;
  for (int index = 0; index < port_attr_.gid_tbl_len; ++index) {
    ibv_gid_entry entry = {};
    if (ibv_query_gid_ex(context_, port_, index, &entry, 0) != 0) continue;  // unused entries fail
    GidEntry gid;
    gid.index = index;
    std::memcpy(gid.gid, entry.gid.raw, 16);
    gid.type = entry.gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::kRoceV2
               : entry.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::kRoceV1
                                                        : GidType::kInfiniBand;
    if (!GidIsEmpty(gid.gid)) table.push_back(gid);
  }
  CHORUS_RETURN_IF_ERROR(ChooseGidIndex(table, configured, &gid_index_).WithContext(label()));
  if (ibv_query_gid(context_, port_, gid_index_, &gid_) != 0) {
    return ErrnoError(errno, StrCat("ibv_query_gid(", label(), ", index ", gid_index_, ")"));
  }
  return Status::Ok();
}

}  // namespace ib
}  // namespace chorus
