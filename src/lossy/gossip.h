// GossipGraD partners: who sends to and receives from whom at a step, with
// optional per-cycle rotation of the rank order.
#pragma once

#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "chorus/chorus.h"

struct chorusComm;
struct chorusStream;

namespace chorus {

// This rank's partners at one step. A rank with no partner (cube, nranks not
// a power of two, partner position >= nranks) keeps its own value.
struct GossipPartners {
  bool has_partner = false;
  int send_to = -1;
  int recv_from = -1;
};

// Steps per cycle: ceil(log2(nranks)), 0 for one rank.
int GossipCycleLength(int nranks);

// The rank order of cycle `cycle`: position -> rank. Identity without
// rotation; else a Fisher-Yates shuffle driven by splitmix64(seed, cycle).
std::vector<int> GossipRankOrder(int nranks, bool rotate, uint64_t seed, uint64_t cycle);

GossipPartners GossipPartnersAt(const chorusGossipState_t& state, int nranks, int rank);

// Validates and runs one gossip step (the body of chorusGossip).
Status Gossip(const void* sendbuff, void* recvbuff, size_t count, DataType dtype, chorusGossipState_t* state,
              chorusComm* comm, chorusStream* stream);

}  // namespace chorus
