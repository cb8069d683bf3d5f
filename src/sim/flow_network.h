// FlowNetwork: full-duplex ports shared fairly by the flows through them.
//
// A flow carries `work` seconds of transmission at full speed (bytes over
// the bandwidth of its link class) through up to four ports (a rank's send
// port, the receiver's receive port, and between hosts the two host NICs).
// Every port can carry one full-speed flow's worth at a time; the flows
// through it share that capacity max-min fairly (progressive filling), so a
// port is never idle while a flow through it could go faster, and a flow
// runs at most at full speed. Measuring work in full-speed seconds lets a
// rank's port carry both link classes, each at its own speed, exactly as the
// closed forms charge a port (docs/simulator.md).
//
// Rates change only when a flow starts or finishes. Rebalance() recomputes
// the rates of the flows connected (through shared ports) to the ports
// touched since the previous call, and reports each flow whose finish time
// changed; a flow's version changes with it, so older reports are stale.
// Components of up to kExactFlows flows get the exact max-min allocation.
// Larger ones (a pipelined tree over thousands of ranks couples every
// port) are rebalanced locally: the flows through the touched ports share
// what the other flows leave on their ports, and a flow that slows down
// hands its room to its ports' other flows in the next round. That keeps
// every port full while a flow through it could go faster, at a cost per
// event independent of p; it can be less fair than max-min.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chorus::sim {

class FlowNetwork {
 public:
  static constexpr int kMaxPorts = 4;
  static constexpr size_t kExactFlows = 256;
  static constexpr int kLocalRounds = 8;

  struct FinishTime {
    uint32_t flow;
    uint32_t version;
    double time;
  };

  explicit FlowNetwork(size_t ports);

  // Starts a flow at `now` (the time of the next Rebalance). Returns its id;
  // ids of finished flows are reused.
  uint32_t Start(double work, const uint32_t* ports, int nports);
  // Removes a flow that has finished (or is abandoned).
  void Finish(uint32_t flow);
  // Recomputes the shares around every port touched since the last call,
  // at time `now`, and appends the flows whose finish time changed.
  void Rebalance(double now, std::vector<FinishTime>* changed);

  uint32_t version(uint32_t flow) const { return flows_[flow].version; }
  size_t active_flows() const { return active_; }

 private:
  struct Flow {
    double remaining = 0;  // full-speed seconds left at `updated`
    double updated = 0;
    double share = 0;      // fraction of full speed
    double next_share = 0;
    uint64_t mark = 0;
    uint32_t version = 0;
    uint32_t ports[kMaxPorts] = {};
    uint32_t slots[kMaxPorts] = {};  // position in each port's flow list
    int nports = 0;
    bool frozen = false;
  };
  struct Port {
    std::vector<uint32_t> flows;
    uint64_t mark = 0;
    double capacity = 1;  // left during progressive filling
    uint32_t unfrozen = 0;
    bool dirty = false;
    bool bottleneck = false;
  };

  void Touch(uint32_t port);
  // A new, empty component (a new mark epoch).
  void BeginComponent();
  void AddPort(uint32_t port, std::vector<uint32_t>* to_search);
  void AddFlow(uint32_t id, std::vector<uint32_t>* to_search);
  bool CollectComponents();
  void CollectNeighbourhood();
  void FillShares();

  std::vector<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  std::vector<Port> ports_;
  std::vector<uint32_t> dirty_ports_;
  size_t active_ = 0;
  uint64_t epoch_ = 0;
  // Scratch of one Rebalance.
  std::vector<uint32_t> component_ports_, component_flows_, unfrozen_, stack_;
};

}  // namespace chorus::sim
