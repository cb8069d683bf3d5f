// SharedHeap (base/shared_heap.h): blocks, reuse, giving pages back, what
// Shares() admits, and that a peer process reads a block through the file.
// Nothing here forks after the heap exists (a fork retires it for the rest
// of the process): shared_heap_fork_test covers that.
#include "base/shared_heap.h"

#include "chorus/chorus.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace chorus {
namespace {

constexpr size_t kPage = SharedHeap::kPageBytes;

SharedHeap* Heap() {
  SharedHeap* heap = SharedHeap::Process();
  EXPECT_NE(heap, nullptr) << "no memfd here?";
  return heap;
}

TEST(SharedHeapTest, BlocksAreWholePagesInsideTheHeap) {
  SharedHeap* heap = Heap();
  ASSERT_NE(heap, nullptr);
  EXPECT_EQ(heap, SharedHeap::Process());
  void* block = heap->Allocate(10000);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % kPage, 0u);
  EXPECT_EQ(heap->BlockBytes(block), 3 * kPage);
  EXPECT_TRUE(heap->Contains(block));
  EXPECT_GE(reinterpret_cast<uintptr_t>(block), heap->data_begin());
  std::memset(block, 0x5c, 3 * kPage);
  EXPECT_EQ(heap->BlockBytes(static_cast<char*>(block) + 8), 0u) << "not the start of a block";
  EXPECT_FALSE(heap->Free(static_cast<char*>(block) + 8));
  EXPECT_TRUE(heap->Free(block));
  EXPECT_FALSE(heap->Free(block)) << "freed twice";
  EXPECT_EQ(heap->BlockBytes(block), 0u);
  EXPECT_EQ(heap->Allocate(0), nullptr);
  EXPECT_EQ(heap->Allocate(heap->bytes() + 1), nullptr);
}

TEST(SharedHeapTest, ForeignPointersAreNotItsOwn) {
  SharedHeap* heap = Heap();
  ASSERT_NE(heap, nullptr);
  std::vector<char> ordinary(1 << 20);
  EXPECT_FALSE(heap->Contains(ordinary.data()));
  EXPECT_FALSE(heap->Free(ordinary.data()));
  EXPECT_EQ(heap->BlockBytes(ordinary.data()), 0u);
  EXPECT_FALSE(heap->Shares(ordinary.data(), ordinary.size()));
}

// An allocator serving malloc asks chorusMemFree and chorusMemGetSize about
// every pointer near the heap: a foreign one is answered without a message
// (making one would allocate, and free, inside free).
TEST(SharedHeapTest, TheApiAnswersForeignPointersQuietly) {
  size_t size = 0;
  ASSERT_EQ(chorusMemGetSize(nullptr, nullptr), chorusInvalidArgument);
  const std::string before = chorusGetLastError(nullptr);
  ASSERT_NE(before, "");
  std::vector<char> ordinary(1 << 16);
  EXPECT_EQ(chorusMemFree(ordinary.data()), chorusInvalidArgument);
  EXPECT_EQ(chorusMemGetSize(ordinary.data(), &size), chorusInvalidArgument);
  EXPECT_EQ(chorusMemFree(nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusGetLastError(nullptr), before);
  void* block = nullptr;
  ASSERT_EQ(chorusMemAlloc(&block, 100000), chorusSuccess);
  EXPECT_EQ(chorusMemGetSize(block, &size), chorusSuccess);
  EXPECT_EQ(size, 25 * kPage);
  EXPECT_EQ(chorusMemFree(static_cast<char*>(block) + kPage), chorusInvalidArgument);
  EXPECT_EQ(chorusMemFree(block), chorusSuccess);
  EXPECT_EQ(chorusMemFree(block), chorusInvalidArgument);
  EXPECT_EQ(chorusMemAlloc(&block, 0), chorusInvalidArgument);
  EXPECT_EQ(block, nullptr);
}

TEST(SharedHeapTest, SharesOnlyRangesInsideTheHeap) {
  SharedHeap* heap = Heap();
  ASSERT_NE(heap, nullptr);
  void* block = heap->Allocate(1 << 20);
  ASSERT_NE(block, nullptr);
  EXPECT_TRUE(heap->Shares(block, 1 << 20));
  EXPECT_TRUE(heap->Shares(static_cast<char*>(block) + 100, 1000));
  // The id page, a range running past the end, and addresses above it.
  EXPECT_FALSE(heap->Shares(reinterpret_cast<void*>(heap->base()), 64));
  EXPECT_FALSE(heap->Shares(reinterpret_cast<void*>(heap->end() - kPage), 2 * kPage));
  EXPECT_FALSE(heap->Shares(reinterpret_cast<void*>(heap->end()), 1));
  EXPECT_FALSE(heap->Shares(reinterpret_cast<void*>(heap->end() + (size_t{1} << 30)), 4096));
  EXPECT_FALSE(heap->Shares(reinterpret_cast<void*>(UINTPTR_MAX - 4096), 4096));
  EXPECT_TRUE(heap->Free(block));
}

TEST(SharedHeapTest, AFreedBlockIsReusedForTheSameSize) {
  SharedHeap* heap = Heap();
  ASSERT_NE(heap, nullptr);
  void* first = heap->Allocate(1 << 20);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, 1 << 20);
  const size_t retained = heap->retained_bytes();
  ASSERT_TRUE(heap->Free(first));
  EXPECT_EQ(heap->retained_bytes(), retained + (1 << 20));
  void* again = heap->Allocate((1 << 20) - 100);
  EXPECT_EQ(again, first) << "a retained block of about the size comes back first";
  EXPECT_EQ(heap->BlockBytes(again), size_t{1} << 20);
  EXPECT_EQ(heap->retained_bytes(), retained);
  // Much smaller requests do not take a large retained block.
  ASSERT_TRUE(heap->Free(again));
  void* small = heap->Allocate(kPage);
  EXPECT_NE(small, first);
  EXPECT_TRUE(heap->Free(small));
}

TEST(SharedHeapTest, PagesGoBackPastTheRetainedBytes) {
  SharedHeap* heap = Heap();
  ASSERT_NE(heap, nullptr);
  const size_t block_bytes = 32 << 20;
  std::vector<void*> blocks;
  for (size_t i = 0; i < 2 * SharedHeap::kRetainedBytes / block_bytes; ++i) {
    void* block = heap->Allocate(block_bytes);
    ASSERT_NE(block, nullptr);
    std::memset(block, 0x77, block_bytes);
    blocks.push_back(block);
  }
  for (void* block : blocks) ASSERT_TRUE(heap->Free(block));
  EXPECT_LE(heap->retained_bytes(), SharedHeap::kRetainedBytes);
  // Too large for any retained block: it comes from punched or untouched pages, which read zero.
  void* fresh = heap->Allocate(2 * block_bytes);
  ASSERT_NE(fresh, nullptr);
  const auto* bytes = static_cast<const uint8_t*>(fresh);
  size_t nonzero = 0;
  for (size_t i = 0; i < heap->BlockBytes(fresh); i += 512) nonzero += bytes[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  EXPECT_TRUE(heap->Free(fresh));
}

TEST(SharedHeapTest, AnotherMappingOfTheFileSeesTheBlock) {
  SharedHeap* heap = Heap();
  ASSERT_NE(heap, nullptr);
  auto* block = static_cast<uint8_t*>(heap->Allocate(3 * kPage));
  ASSERT_NE(block, nullptr);
  for (size_t i = 0; i < 3 * kPage; ++i) block[i] = static_cast<uint8_t>(i * 7);
  // What a peer does: open the fd through /proc and map the whole file.
  const std::string path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(heap->fd());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* view = ::mmap(nullptr, heap->bytes(), PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0);
  ::close(fd);
  ASSERT_NE(view, MAP_FAILED);
  const auto* seen = static_cast<const uint8_t*>(view) + (reinterpret_cast<uintptr_t>(block) - heap->base());
  EXPECT_EQ(std::memcmp(view, heap->id(), SharedHeap::kIdBytes), 0);
  EXPECT_EQ(std::memcmp(seen, block, 3 * kPage), 0);
  block[5] = 99;
  EXPECT_EQ(seen[5], 99);
  ::munmap(view, heap->bytes());
  EXPECT_TRUE(heap->Free(block));
}

}  // namespace
}  // namespace chorus
