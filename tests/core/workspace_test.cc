// Workspace: pageable memory on demand, kept until it must grow; a preferred
// allocator (page-locked memory) asked only when the workspace is made, its
// memory returned to it, growth past it pageable; nothing reserved when the
// preferred allocator has none.
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

TEST(WorkspaceTest, PageableMemoryOnDemandKeptUntilItMustGrow) {
  Workspace workspace;
  EXPECT_EQ(workspace.holder(), nullptr);
  uint8_t* first = workspace.Reserve(4096);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  EXPECT_EQ(workspace.holder(), &PageableAllocator());
  EXPECT_EQ(workspace.Reserve(100), first);   // smaller: the same memory
  EXPECT_EQ(workspace.Reserve(4096), first);  // equal: the same memory
  uint8_t* grown = workspace.Reserve(1 << 20);
  grown[(1 << 20) - 1] = 1;  // all of it is usable
}

// The preferred allocator is asked once, when the workspace is made; growth
// past it is pageable memory, and the reservation goes back to the
// allocator that gave it.
TEST(WorkspaceTest, ReservesUpFrontAndGrowsInPageableMemory) {
  CountingAllocator allocator;
  {
    Workspace workspace(allocator, 8192);
    EXPECT_EQ(allocator.allocations, 1);
    EXPECT_EQ(workspace.holder(), &allocator);
    uint8_t* reserved = workspace.Reserve(8192);
    EXPECT_EQ(workspace.Reserve(64), reserved);
    EXPECT_EQ(allocator.allocations, 1);  // nothing asked of it while operations run
    uint8_t* grown = workspace.Reserve(16384);
    ASSERT_NE(grown, nullptr);
    EXPECT_EQ(workspace.holder(), &PageableAllocator());
    EXPECT_EQ(allocator.allocations, 1);
    EXPECT_EQ(allocator.frees, 1);  // the reservation went back to it
    EXPECT_TRUE(allocator.live.empty());
  }
  EXPECT_EQ(allocator.frees, 1);  // the pageable growth was not returned to it
}

TEST(WorkspaceTest, NoReservationWhenTheAllocatorHasNone) {
  CountingAllocator refusing(/*refuses=*/true);
  Workspace workspace(refusing, 1 << 20);
  EXPECT_EQ(refusing.allocations, 1);
  EXPECT_EQ(workspace.holder(), nullptr);
  uint8_t* memory = workspace.Reserve(1 << 20);
  ASSERT_NE(memory, nullptr);
  memory[0] = 1;
  memory[(1 << 20) - 1] = 2;
  EXPECT_EQ(workspace.holder(), &PageableAllocator());
  EXPECT_EQ(refusing.allocations, 1);  // asked only at creation
  EXPECT_EQ(refusing.frees, 0);        // what it never gave is not returned to it
}

TEST(WorkspaceTest, MovingHandsTheMemoryOver) {
  CountingAllocator allocator;
  {
    Workspace from(allocator, 256);
    uint8_t* memory = from.Reserve(256);
    Workspace to(std::move(from));
    EXPECT_EQ(from.holder(), nullptr);
    EXPECT_EQ(to.Reserve(256), memory);
  }
  EXPECT_EQ(allocator.allocations, 1);
  EXPECT_EQ(allocator.frees, 1);
}

// Without a GPU (or without CUDA in the build) staging is pageable memory,
// allocated on demand: host-only runs allocate exactly as before.
TEST(WorkspaceTest, StagingIsPageableOnDemandWithoutAGpu) {
  Workspace staging(StagingAllocator(), 16 << 20);
  if (&StagingAllocator() != &PageableAllocator()) {
    EXPECT_STREQ(StagingAllocator().name(), "CUDA pinned");
    GTEST_SKIP() << "a CUDA device is present: staging is page-locked";
  }
  EXPECT_EQ(staging.holder(), nullptr);  // nothing reserved up front
  staging.Reserve(64);
  ASSERT_NE(staging.holder(), nullptr);
  EXPECT_STREQ(staging.holder()->name(), "pageable");
}

}  // namespace
}  // namespace chorus
