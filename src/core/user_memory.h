// UserMemory: how a communicator tells which kind of memory a user's buffer
// is (base/memory_kind.h) and which local engine serves each kind. The
// library's own answer is ClassifyPointer and DefaultLocalEngines(); a test
// gives a communicator its own (CommOptions::user_memory) to present host
// ranges as a fake device without a GPU. Held per communicator, so the
// library keeps no global switch.
#pragma once

#include "base/memory_kind.h"
#include "core/local_engine.h"

namespace chorus {

class UserMemory {
 public:
  virtual ~UserMemory() = default;
  virtual MemoryKind Classify(const void* pointer) const = 0;
  // Has an engine for every kind Classify may answer.
  virtual const LocalEngines& engines() const = 0;
};

}  // namespace chorus
