// The cost of halving-doubling allreduce (algorithms/hd/) when p is not a
// power of two, where the textbook sum (fold + power-of-two part + unfold)
// is 1.4-2x too optimistic against the replay (docs/simulator.md).
#pragma once

#include "model/cost_model.h"

namespace chorus::model {

// Seconds for an allreduce of n bytes over p ranks (any p >= 2; a power of
// two gives the textbook 2 L alpha + 2 (p-1)/p n beta + (p-1)/p n gamma).
//
// p' = 2^floor(log2 p) virtual ranks run Rabenseifner; for v < r = p - p',
// virtual rank v is real rank 2v+1, which first receive-reduces the whole
// vector of rank 2v (the fold) and hands it the result at the end (the
// unfold). Three rules of the schedule and the executor decide the time,
// and the sum of the phases has none of them:
//  - sends are eager: a rank that did not fold sends its first halving
//    message at once, and the later ones as soon as its own data allow, so
//    the fold shares the folded rank's receive port with them;
//  - a rank's sends of different steps share its send port when their data
//    are ready together (a folded rank that ends its fold late has all of
//    its partners' messages already and sends its halving messages at once);
//  - each pair is one ordered stream: the doubling message to a partner
//    leaves after the halving message to it.
// The model: every message starts when its step's dependencies in the
// schedule are met, each rank's send and receive ports are processor-sharing
// servers (ProcessorSharingFinish), a message ends when both of its ports
// have carried it, plus alpha; a receive-reduce of m bytes adds m gamma.
// Start and end times depend on each other, so it iterates to the fixed
// point. Whole steps, no chunk pipelining (hd's steps are halves and
// quarters of the vector: pipelining changes them by under 1 %).
// It costs rounds x p log p (2 ms at p = 100); past p' = 128 it runs on a
// 128 + r * 128 / p' stand-in, whose time per byte matches to 2.3 % in the
// replay, plus 2 alpha per extra level. Against the replay (docs/simulator.md):
// within 5 % for p < 256, 7 % beyond (p = 257 .. 3000).
// The stand-in keeps the tuner's first call of a shape under ~20 ms.
double FoldedHalvingDoublingTime(int p, double n, const CostParams& c);

}  // namespace chorus::model
