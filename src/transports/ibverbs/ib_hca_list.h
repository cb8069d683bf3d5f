// CHORUS_IB_HCA: which RDMA devices and ports to use, in NCCL's syntax
// (NCCL_IB_HCA): a comma-separated list of "device[:port]" entries matched
// as name prefixes ("mlx5" takes mlx5_0, mlx5_1, ...); "=" before the list
// asks for exact names, "^" for every device but those listed ("^=" both).
// An empty list takes every device.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace chorus {
namespace ib {

class HcaFilter {
 public:
  struct Entry {
    std::string device;
    int port = -1;  // -1: any port
  };

  // Fails on an empty entry, an empty device name or a port that is not a
  // number in 1..255, naming CHORUS_IB_HCA and the text.
  static Status Parse(const std::string& text, HcaFilter* filter);

  // Whether port `port` of device `device` may be used.
  bool Allows(const std::string& device, int port) const;

  bool exclude() const { return exclude_; }
  bool exact() const { return exact_; }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  bool Matches(const Entry& entry, const std::string& device, int port) const;

  bool exclude_ = false;
  bool exact_ = false;
  std::vector<Entry> entries_;
};

}  // namespace ib
}  // namespace chorus
