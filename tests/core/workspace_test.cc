// Workspace: memory from its allocator, kept until it must grow, returned to
// the allocator that gave it; the pageable fallback when the preferred
// allocator has none (page-locked memory is limited).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/workspace.h"

namespace chorus {
namespace {

// Counts calls and serves from the pageable allocator, or refuses.
class CountingAllocator final : public HostAllocator {
 public:
  explicit CountingAllocator(bool refuses = false) : refuses_(refuses) {}
  void* Allocate(size_t bytes) override {
    ++allocations;
    if (refuses_) return nullptr;
    void* pointer = PageableAllocator().Allocate(bytes);
    live.push_back(pointer);
    return pointer;
  }
  void Free(void* pointer) override {
    ++frees;
    for (size_t i = 0; i < live.size(); ++i) {
      if (live[i] == pointer) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    PageableAllocator().Free(pointer);
  }
  const char* name() const override { return "counting"; }

  int allocations = 0;
  int frees = 0;
  std::vector<void*> live;

 private:
  bool refuses_;
};

TEST(WorkspaceTest, ReservesFromItsAllocatorAndKeepsTheMemoryUntilItGrows) {
  CountingAllocator allocator;
  {
    Workspace workspace(allocator);
    EXPECT_EQ(workspace.holder(), nullptr);
    uint8_t* first = workspace.Reserve(4096);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_EQ(workspace.holder(), &allocator);
    EXPECT_EQ(workspace.Reserve(100), first);   // smaller: the same memory
    EXPECT_EQ(workspace.Reserve(4096), first);  // equal: the same memory
    EXPECT_EQ(allocator.allocations, 1);
    workspace.Reserve(8192);  // grows: the old memory goes back first
    EXPECT_EQ(allocator.allocations, 2);
    EXPECT_EQ(allocator.frees, 1);
    EXPECT_EQ(allocator.live.size(), 1u);
  }
  EXPECT_EQ(allocator.frees, 2);
  EXPECT_TRUE(allocator.live.empty());
}

TEST(WorkspaceTest, FallsBackToPageableMemoryWhenTheAllocatorHasNone) {
  CountingAllocator refusing(/*refuses=*/true);
  Workspace workspace(refusing);
  uint8_t* memory = workspace.Reserve(1 << 20);
  ASSERT_NE(memory, nullptr);
  memory[0] = 1;
  memory[(1 << 20) - 1] = 2;  // all of it is usable
  EXPECT_EQ(workspace.holder(), &PageableAllocator());
  EXPECT_EQ(refusing.allocations, 1);
  workspace.Reserve(2 << 20);  // tries the preferred allocator again
  EXPECT_EQ(refusing.allocations, 2);
  EXPECT_EQ(refusing.frees, 0);  // what it never gave is not returned to it
}

TEST(WorkspaceTest, MovingHandsTheMemoryOver) {
  CountingAllocator allocator;
  {
    Workspace from(allocator);
    uint8_t* memory = from.Reserve(256);
    Workspace to(std::move(from));
    EXPECT_EQ(from.holder(), nullptr);
    EXPECT_EQ(to.Reserve(256), memory);
  }
  EXPECT_EQ(allocator.allocations, 1);
  EXPECT_EQ(allocator.frees, 1);
}

// Without a GPU (or without CUDA in the build) staging is pageable memory:
// host-only runs keep their allocation exactly as before.
TEST(WorkspaceTest, StagingIsPageableWithoutAGpu) {
  Workspace staging(StagingAllocator());
  staging.Reserve(64);
  ASSERT_NE(staging.holder(), nullptr);
  const std::string name = staging.holder()->name();
  EXPECT_TRUE(name == "pageable" || name == "CUDA pinned") << name;
  if (name == "CUDA pinned") GTEST_SKIP() << "a CUDA device is present: staging is page-locked";
  EXPECT_EQ(&StagingAllocator(), &PageableAllocator());
}

}  // namespace
}  // namespace chorus
