#include "model/folded_halving_doubling.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/processor_sharing.h"

namespace chorus::model {

namespace {

// Beyond p' = 128 the model runs on a p' = 128 stand-in (below).
constexpr int kLargestModelled = 128;
constexpr int kLargestModelledLevels = 7;  // log2 of it

// Message times of one evaluation round, indexed [step][virtual rank] for
// the halving (rs) and doubling (ag) messages that rank v sends; fold[v]
// is the fold into v, unfold[v] the unfold from v (v < folded only).
struct MessageTimes {
  std::vector<std::vector<double>> rs, ag;
  std::vector<double> fold, unfold;
  bool operator==(const MessageTimes& o) const {
    return rs == o.rs && ag == o.ag && fold == o.fold && unfold == o.unfold;
  }
};

MessageTimes Sized(int levels, int pof2, int folded) {
  MessageTimes t;
  t.rs.assign(static_cast<size_t>(levels + 1), std::vector<double>(static_cast<size_t>(pof2), 0.0));
  t.ag = t.rs;
  t.fold.assign(static_cast<size_t>(folded), 0.0);
  t.unfold.assign(static_cast<size_t>(folded), 0.0);
  return t;
}

// The model itself (header comment), for any p.
double FoldedModelTime(int p, double n, const CostParams& c) {
  const double a = c.alpha_s, b = c.beta_s_per_byte, g = c.gamma_s_per_byte;
  int pof2 = 1;
  while (pof2 * 2 <= p) pof2 *= 2;
  const int folded = p - pof2;
  int levels = 0;
  while ((1 << levels) < pof2) ++levels;
  auto halving_bytes = [&](int j) { return n / std::ldexp(1.0, j); };              // step j = 1..L
  auto doubling_bytes = [&](int j) { return n / pof2 * std::ldexp(1.0, j - 1); };  // step j = 1..L
  auto halving_partner = [&](int j, int v) { return v ^ (pof2 >> j); };
  auto doubling_partner = [&](int j, int v) { return v ^ (1 << (j - 1)); };

  // end: when each message is delivered (alpha after its last byte): the
  // later of its two ports, each kept per message so that a round only
  // recomputes the ports whose messages start at new times.
  MessageTimes end = Sized(levels, pof2, folded);
  for (int v = 0; v < folded; ++v) end.fold[v] = a + n * b;
  MessageTimes start = Sized(levels, pof2, folded), sent = start, received = start;
  std::vector<uint8_t> send_port_dirty(static_cast<size_t>(pof2), 1), receive_port_dirty(static_cast<size_t>(pof2), 1);
  std::vector<std::vector<double>> reduced(static_cast<size_t>(levels + 1), std::vector<double>(pof2));
  std::vector<std::vector<double>> gathered = reduced;
  std::vector<SharedJob> jobs;
  auto set_start = [&](double* slot, double value, int sender, int receiver) {
    if (*slot == value) return;
    *slot = value;
    send_port_dirty[sender] = 1;
    if (receiver >= 0) receive_port_dirty[receiver] = 1;
  };
  double total = 0;
  for (int round = 0; round < 16 * levels + 32; ++round) {
    // Dependencies of the schedule, given the message ends.
    for (int v = 0; v < pof2; ++v) reduced[0][v] = v < folded ? end.fold[v] + n * g : 0.0;
    for (int j = 1; j <= levels; ++j) {
      for (int v = 0; v < pof2; ++v) {
        reduced[j][v] = std::max(reduced[j - 1][v], end.rs[j][halving_partner(j, v)]) + halving_bytes(j) * g;
      }
    }
    for (int v = 0; v < pof2; ++v) gathered[0][v] = reduced[levels][v];
    for (int j = 1; j <= levels; ++j) {
      for (int v = 0; v < pof2; ++v) {
        // The window received now was sent away at halving step L-j+1: it
        // is overwritten only after that send is done.
        gathered[j][v] = std::max({gathered[j - 1][v], end.ag[j][doubling_partner(j, v)], end.rs[levels - j + 1][v]});
      }
    }
    for (int j = 1; j <= levels; ++j) {
      for (int v = 0; v < pof2; ++v) {
        set_start(&start.rs[j][v], reduced[j - 1][v], v, halving_partner(j, v));
        // Same stream as the halving message of step L-j+1 to this partner.
        set_start(&start.ag[j][v], std::max(gathered[j - 1][v], end.rs[levels - j + 1][v] - a), v,
                  doubling_partner(j, v));
      }
    }
    for (int v = 0; v < folded; ++v) set_start(&start.unfold[v], gathered[levels][v], v, -1);

    // Ports whose messages start at new times: processor sharing again.
    for (int v = 0; v < pof2; ++v) {
      if (!send_port_dirty[v]) continue;
      send_port_dirty[v] = 0;
      jobs.clear();
      for (int j = 1; j <= levels; ++j) jobs.push_back({start.rs[j][v], halving_bytes(j) * b});
      for (int j = 1; j <= levels; ++j) jobs.push_back({start.ag[j][v], doubling_bytes(j) * b});
      if (v < folded) jobs.push_back({start.unfold[v], n * b});
      const std::vector<double> done = ProcessorSharingFinish(jobs);
      for (int j = 1; j <= levels; ++j) {
        sent.rs[j][v] = done[j - 1] + a;
        sent.ag[j][v] = done[levels + j - 1] + a;
      }
      if (v < folded) sent.unfold[v] = done.back() + a;
    }
    for (int v = 0; v < pof2; ++v) {
      if (!receive_port_dirty[v]) continue;
      receive_port_dirty[v] = 0;
      jobs.clear();
      for (int j = 1; j <= levels; ++j) jobs.push_back({start.rs[j][halving_partner(j, v)], halving_bytes(j) * b});
      for (int j = 1; j <= levels; ++j) jobs.push_back({start.ag[j][doubling_partner(j, v)], doubling_bytes(j) * b});
      if (v < folded) jobs.push_back({0.0, n * b});  // the fold starts at once
      const std::vector<double> done = ProcessorSharingFinish(jobs);
      for (int j = 1; j <= levels; ++j) {
        received.rs[j][halving_partner(j, v)] = done[j - 1] + a;
        received.ag[j][doubling_partner(j, v)] = done[levels + j - 1] + a;
      }
      if (v < folded) received.fold[v] = done.back() + a;
    }
    MessageTimes next = Sized(levels, pof2, folded);
    for (int j = 1; j <= levels; ++j) {
      for (int v = 0; v < pof2; ++v) {
        next.rs[j][v] = std::max(sent.rs[j][v], received.rs[j][v]);
        next.ag[j][v] = std::max(sent.ag[j][v], received.ag[j][v]);
      }
    }
    next.fold = received.fold;
    next.unfold = sent.unfold;
    total = 0;
    for (int v = 0; v < pof2; ++v) total = std::max(total, gathered[levels][v]);
    for (int v = 0; v < folded; ++v) total = std::max(total, next.unfold[v]);
    if (next == end) break;
    end = std::move(next);
  }
  return total;
}

}  // namespace

double FoldedHalvingDoublingTime(int p, double n, const CostParams& c) {
  int pof2 = 1, levels = 0;
  while (pof2 * 2 <= p) {
    pof2 *= 2;
    ++levels;
  }
  if (p == pof2) {  // no fold: Rabenseifner's textbook time
    return 2 * levels * c.alpha_s + 2.0 * (p - 1) / p * n * c.beta_s_per_byte + (p - 1.0) / p * n * c.gamma_s_per_byte;
  }
  if (pof2 <= kLargestModelled) return FoldedModelTime(p, n, c);
  // Its cost grows with p (rounds x p log p: 0.1 s at p = 1000), but past a
  // hundred ranks the time per byte depends on the folded share r / p' alone
  // (the replay at p = 1000, 1280, 1792 and 250, 160, 224: within 0.5 %; 700,
  // 2047, 3000 and 175, 255, 188: within 2.3 %): run it on p' = 128 with the
  // same share and add the latencies of the extra levels.
  const int folded = p - pof2;
  const int scaled = std::clamp(static_cast<int>(std::lround(static_cast<double>(folded) * kLargestModelled / pof2)), 1,
                                kLargestModelled - 1);
  return FoldedModelTime(kLargestModelled + scaled, n, c) + 2.0 * (levels - kLargestModelledLevels) * c.alpha_s;
}

}  // namespace chorus::model
