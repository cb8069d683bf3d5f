// SharedHeap across fork (base/shared_heap.h): parent and child each keep
// their own copy of every block, as fork promises of ordinary memory, the
// heap is retired in both, and each then makes a fresh heap for new
// blocks. Its own binary: a fork retires the heap of the test process.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "base/shared_heap.h"

namespace chorus {
namespace {

TEST(SharedHeapForkTest, ParentAndChildKeepTheirOwnCopiesAndTheHeapRetires) {
  SharedHeap* heap = SharedHeap::Process();
  ASSERT_NE(heap, nullptr);
  const size_t bytes = 1 << 20;
  auto* block = static_cast<char*>(heap->Allocate(bytes));
  ASSERT_NE(block, nullptr);
  std::memset(block, 'A', bytes);
  void* spare = heap->Allocate(bytes);
  ASSERT_NE(spare, nullptr);
  ASSERT_TRUE(heap->Free(spare));  // retained: given back at the fork
  ASSERT_TRUE(heap->Shares(block, bytes));

  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Reports: 1 what it saw at first, 2 after the parent wrote, 3 whether the heap retired.
    char report[4] = {block[0], 0, 0, 0};
    block[1] = 'B';
    char go = 0;
    if (::read(to_child[0], &go, 1) != 1) ::_exit(2);
    report[1] = block[2];
    SharedHeap* fresh = SharedHeap::Process();
    void* next = fresh != nullptr ? fresh->Allocate(4096) : nullptr;
    report[2] = (heap->retired() && !heap->Shares(block, bytes) && heap->Allocate(4096) == nullptr &&
                 fresh != heap && next != nullptr && fresh->Shares(next, 4096) && SharedHeap::Owning(block) == heap)
                    ? 'R'
                    : 'N';
    report[3] = heap->Free(block) ? 'F' : 'N';
    ::_exit(::write(to_parent[1], report, sizeof(report)) == sizeof(report) ? 0 : 3);
  }
  block[2] = 'C';  // after the fork: the child must not see it
  ASSERT_EQ(::write(to_child[1], "g", 1), 1);
  char report[4] = {};
  ASSERT_EQ(::read(to_parent[0], report, sizeof(report)), static_cast<ssize_t>(sizeof(report)));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(report[0], 'A');
  EXPECT_EQ(report[1], 'A') << "the child saw the parent's write after the fork";
  EXPECT_EQ(report[2], 'R') << "the child's heap still shares or allocates";
  EXPECT_EQ(report[3], 'F');
  EXPECT_EQ(block[1], 'A') << "the parent saw the child's write";
  EXPECT_EQ(block[2], 'C');
  EXPECT_EQ(block[bytes - 1], 'A');
  EXPECT_TRUE(heap->retired());
  EXPECT_FALSE(heap->Shares(block, bytes));
  EXPECT_EQ(heap->Allocate(4096), nullptr);
  EXPECT_EQ(heap->BlockBytes(block), bytes);
  EXPECT_EQ(SharedHeap::Owning(block), heap);
  EXPECT_TRUE(heap->Free(block));
  EXPECT_EQ(heap->live_bytes(), 0u);
  // A fresh heap for new blocks, shared again.
  SharedHeap* fresh = SharedHeap::Process();
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(fresh, heap);
  EXPECT_FALSE(fresh->retired());
  void* next = fresh->Allocate(bytes);
  ASSERT_NE(next, nullptr);
  EXPECT_TRUE(fresh->Shares(next, bytes));
  EXPECT_EQ(SharedHeap::Owning(next), fresh);
  EXPECT_TRUE(fresh->Free(next));
}

}  // namespace
}  // namespace chorus
