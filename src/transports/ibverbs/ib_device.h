// Opening the RDMA device and port a transport uses: the first active port
// that CHORUS_IB_HCA allows (ranks of one host spread over several such ports
// by local rank), its protection domain, and the GID its queue pairs use
// (ib_gid_choice.h).
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "base/status.h"
#include "transports/ibverbs/ib_hca_list.h"

namespace chorus {
namespace ib {

class Device {
 public:
  Device() = default;
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Fails with "no RDMA device" when libibverbs finds none, and with the
  // devices and ports seen when none is active and allowed.
  Status Open(const HcaFilter& filter, int gid_index, int local_rank);

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  int port() const { return port_; }
  const ibv_port_attr& port_attr() const { return port_attr_; }
  const ibv_device_attr& device_attr() const { return device_attr_; }
  int gid_index() const { return gid_index_; }
  const ibv_gid& gid() const { return gid_; }
  // "mlx5_0:1": for messages.
  std::string label() const { return StrCat(name_, ":", port_); }

 private:
  Status ChooseGid(int configured);

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  int port_ = 0;
  ibv_port_attr port_attr_ = {};
  ibv_device_attr device_attr_ = {};
  int gid_index_ = 0;
  ibv_gid gid_ = {};
};

}  // namespace ib
}  // namespace chorus
