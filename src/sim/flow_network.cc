#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>

namespace chorus::sim {

namespace {

// Shares that differ by less than this are the same share (they come out of
// different sums of the same fractions).
constexpr double kSameShare = 1e-12;

}  // namespace

FlowNetwork::FlowNetwork(size_t ports) : ports_(ports) {}

uint32_t FlowNetwork::Start(double work, const uint32_t* ports, int nports) {
  uint32_t id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[id];
  flow.remaining = std::max(0.0, work);
  flow.share = 0;  // until the next Rebalance: nothing moves before it
  flow.updated = 0;
  flow.nports = std::min(nports, kMaxPorts);
  ++flow.version;
  for (int i = 0; i < flow.nports; ++i) {
    Port& port = ports_[ports[i]];
    flow.ports[i] = ports[i];
    flow.slots[i] = static_cast<uint32_t>(port.flows.size());
    port.flows.push_back(id);
    Touch(ports[i]);
  }
  ++active_;
  return id;
}

void FlowNetwork::Finish(uint32_t id) {
  Flow& flow = flows_[id];
  for (int i = 0; i < flow.nports; ++i) {
    Port& port = ports_[flow.ports[i]];
    // Swap-remove, then tell the moved flow its new slot in this port.
    const uint32_t slot = flow.slots[i];
    const uint32_t moved = port.flows.back();
    port.flows[slot] = moved;
    port.flows.pop_back();
    if (moved != id) {
      Flow& other = flows_[moved];
      for (int j = 0; j < other.nports; ++j) {
        if (other.ports[j] == flow.ports[i]) other.slots[j] = slot;
      }
    }
    Touch(flow.ports[i]);
  }
  flow.nports = 0;
  ++flow.version;
  free_flows_.push_back(id);
  --active_;
}

void FlowNetwork::Touch(uint32_t port) {
  if (!ports_[port].dirty) {
    ports_[port].dirty = true;
    dirty_ports_.push_back(port);
  }
}

void FlowNetwork::BeginComponent() {
  ++epoch_;
  component_ports_.clear();
  component_flows_.clear();
}

// Adds `port` to this epoch's component unless it is in already; a new port
// also goes on `to_search` when one is given. AddPort and AddFlow are inline:
// out of line, per port, they cost a 1024-rank tree replay 11% more instructions.
inline void FlowNetwork::AddPort(uint32_t port, std::vector<uint32_t>* to_search) {
  if (ports_[port].mark == epoch_) return;
  ports_[port].mark = epoch_;
  component_ports_.push_back(port);
  if (to_search != nullptr) to_search->push_back(port);
}

// Adds flow `id` (not in the component yet) and every port it crosses.
inline void FlowNetwork::AddFlow(uint32_t id, std::vector<uint32_t>* to_search) {
  Flow& flow = flows_[id];
  flow.mark = epoch_;
  component_flows_.push_back(id);
  for (int i = 0; i < flow.nports; ++i) AddPort(flow.ports[i], to_search);
}

// Every port and flow reachable from a touched port through shared flows:
// the only rates that can change. Returns false, having collected only
// part, when that is more than kExactFlows flows.
bool FlowNetwork::CollectComponents() {
  BeginComponent();
  stack_.clear();
  for (uint32_t port : dirty_ports_) AddPort(port, &stack_);
  while (!stack_.empty()) {
    const uint32_t port = stack_.back();
    stack_.pop_back();
    for (uint32_t id : ports_[port].flows) {
      if (flows_[id].mark == epoch_) continue;
      if (component_flows_.size() == kExactFlows) return false;
      AddFlow(id, &stack_);
    }
  }
  return true;
}

// The flows through the touched ports and every port they cross; the
// capacity that other flows hold on those ports stays theirs.
void FlowNetwork::CollectNeighbourhood() {
  BeginComponent();
  for (uint32_t port : dirty_ports_) {
    for (uint32_t id : ports_[port].flows) {
      if (flows_[id].mark != epoch_) AddFlow(id, /*to_search=*/nullptr);
    }
  }
}

// Progressive filling: raise every unfrozen flow's share together until a
// port is full (or the flows reach full speed); freeze the flows through the
// full ports; repeat with what capacity is left.
void FlowNetwork::FillShares() {
  for (uint32_t id : component_ports_) {
    Port& port = ports_[id];
    port.capacity = 1;
    port.unfrozen = 0;
    for (uint32_t flow : port.flows) {
      if (flows_[flow].mark == epoch_) {
        ++port.unfrozen;
      } else {
        port.capacity -= flows_[flow].share;  // a flow outside keeps its share
      }
    }
    port.capacity = std::max(0.0, port.capacity);
  }
  unfrozen_.assign(component_flows_.begin(), component_flows_.end());
  while (!unfrozen_.empty()) {
    double level = 1;
    for (uint32_t id : component_ports_) {
      const Port& port = ports_[id];
      if (port.unfrozen > 0) level = std::min(level, port.capacity / port.unfrozen);
    }
    level = std::max(level, 0.0);
    const double limit = level * (1 + 1e-9);
    const bool everyone = level >= 1;
    for (uint32_t id : component_ports_) {
      Port& port = ports_[id];
      port.bottleneck = port.unfrozen > 0 && port.capacity / port.unfrozen <= limit;
    }
    size_t kept = 0;
    for (uint32_t id : unfrozen_) {
      Flow& flow = flows_[id];
      bool frozen = everyone;
      for (int i = 0; i < flow.nports && !frozen; ++i) frozen = ports_[flow.ports[i]].bottleneck;
      if (!frozen) {
        unfrozen_[kept++] = id;
        continue;
      }
      flow.next_share = level;
      for (int i = 0; i < flow.nports; ++i) {
        Port& port = ports_[flow.ports[i]];
        port.capacity = std::max(0.0, port.capacity - level);
        --port.unfrozen;
      }
    }
    unfrozen_.resize(kept);
  }
}

void FlowNetwork::Rebalance(double now, std::vector<FinishTime>* changed) {
  for (int round = 0; round < kLocalRounds && !dirty_ports_.empty(); ++round) {
    if (!CollectComponents()) CollectNeighbourhood();
    for (uint32_t port : dirty_ports_) ports_[port].dirty = false;
    dirty_ports_.clear();
    for (uint32_t id : component_flows_) {
      Flow& flow = flows_[id];
      flow.remaining = std::max(0.0, flow.remaining - flow.share * (now - flow.updated));
      flow.updated = now;
    }
    FillShares();
    for (uint32_t id : component_flows_) {
      Flow& flow = flows_[id];
      if (flow.share > 0 && std::fabs(flow.next_share - flow.share) <= kSameShare * flow.share) continue;
      // A flow that slowed down leaves room on its ports for flows that
      // were not rebalanced (only in a neighbourhood): look there next round.
      if (flow.next_share < flow.share) {
        for (int i = 0; i < flow.nports; ++i) Touch(flow.ports[i]);
      }
      flow.share = flow.next_share;
      ++flow.version;
      // A share of 0 cannot happen (every port has room for its flows); keep
      // the flow parked rather than divide by it.
      if (flow.share > 0) changed->push_back({id, flow.version, now + flow.remaining / flow.share});
    }
  }
}

}  // namespace chorus::sim
