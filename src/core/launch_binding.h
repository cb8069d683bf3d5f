// LaunchBinding: how the operations of one launch are bound to memory for
// the executor. Each collective's schedule gets the user's buffers, its tag
// and its share of one scratch reservation (scratch, and private memory for
// the buffers NCCL ignores on non-roots, see collective.h); sends and
// receives become one-step schedules (to oneself: local copies). Where the
// transport needs registered memory, the bound buffers are registered for
// the execution and released after it; buffers the user registered carry
// their registration.
//
// Everything is kept between launches (one launch of a communicator binds
// at a time), so that a warm small launch allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "core/executor.h"
#include "core/operation.h"
#include "core/registration_cache.h"
#include "core/user_registrations.h"
#include "core/workspace.h"

namespace chorus {

class LaunchBinding {
 public:
  // `engines`: the communicator's, for PreMulSum inputs on memory the CPU
  // cannot touch.
  LaunchBinding(int rank, int nranks, const LocalEngines& engines);

  // Registrations of bound buffers, for a transport that needs them
  // (TransportCapabilities::needs_memory_registration). Without: none.
  void RegisterWith(Transport* transport);
  // Buffers the user registered (chorusCommRegister): a bound buffer inside
  // one carries its handle, for a transport that takes registered memory.
  void UseUserRegistrations(const UserRegistrations* user) { user_ = user; }

  // Starts binding a launch: the last launch's bindings are dropped, their
  // capacity kept.
  void Begin();
  // Binds a collective to `schedule` under the next collective tag
  // ((sequence << 8) | collective); PreMulSum inputs are scaled into a
  // private host copy (through the engine of their kind). Every collective
  // comes before PlaceScratch.
  Status AddCollective(const Operation& op, std::shared_ptr<const Schedule> schedule);
  // Places the collectives' scratch and private buffers in one reservation.
  void PlaceScratch();
  // Binds the launch's sends and receives: those to oneself pair in order
  // into local copies (InvalidUsage when they do not pair), the others
  // carry the per-peer tag 1<<63 | sequence.
  Status AddPointToPoint(const Operation* ops, size_t nops);
  // Binds `schedule` on fixed buffers and `tag` (an exchange of the
  // communicator's own, outside the collective sequence).
  void AddTagged(std::shared_ptr<const Schedule> schedule, const void* send, void* recv, uint64_t tag);

  const std::vector<BoundSchedule>& bound() const { return bound_; }
  bool empty() const { return bound_.empty(); }

  // Points `options->memory` at the bound buffers' handles: the user's
  // registration covering a buffer, else one from the cache when the
  // transport needs registration; ReleaseBuffers after the execution.
  Status RegisterBuffers(ExecutorOptions* options);
  void ReleaseBuffers();

 private:
  struct ScratchLayout {
    size_t scratch = 0, send = 0, recv = 0;
  };

  const int rank_;
  const LocalEngines& engines_;
  Workspace scratch_;
  std::vector<std::shared_ptr<const Schedule>> keep_;
  std::vector<Schedule> p2p_schedules_;
  std::vector<std::unique_ptr<uint8_t[]>> scaled_inputs_;
  std::vector<BoundSchedule> bound_;
  std::vector<ScratchLayout> layouts_;
  size_t scratch_total_ = 0;
  std::vector<const Operation*> self_sends_, self_recvs_;
  uint64_t collective_sequence_ = 0;             // tags of collective messages
  std::vector<uint64_t> sends_to_, recvs_from_;  // tags of point-to-point messages
  // Null for TCP and shared memory, which then cost nothing per launch.
  std::unique_ptr<RegistrationCache> registrations_;
  MemoryKindMask registered_kinds_ = 0;  // the transport's; other kinds are staged, never registered
  std::vector<RegistrationCache::Lease> leases_;  // held for one execution
  const UserRegistrations* user_ = nullptr;
  std::vector<std::shared_ptr<const UserRegistrations::Registration>> user_leases_;  // likewise
  std::vector<BoundMemory> bound_memory_;          // the execution's handles
};

}  // namespace chorus
