// RegistrationCache (core/registration_cache.h) over a fake transport that
// counts registrations: reuse of covering registrations, reference counts,
// LRU eviction under the entry and byte caps, invalidation, and that the
// executor's requests carry the handles through a communicator-like path,
// and which bound buffers a launch registers by their memory kind; and the
// buffers a user registers (core/user_registrations.h) over a transport that
// takes registered memory without needing it.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/launch_binding.h"
#include "core/registration_cache.h"
#include "core/transport_mux.h"
#include "core/user_registrations.h"

namespace chorus {
namespace {

// Registers anything; remembers what is registered.
class CountingTransport : public Transport {
 public:
  const char* name() const override { return "counting"; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities capabilities;
    capabilities.needs_memory_registration = true;
    return capabilities;
  }
  std::string LocalAddress() const override { return "counting"; }
  Status Connect(const std::vector<std::string>&, Deadline) override { return Status::Ok(); }
  Endpoint* endpoint(int) override { return nullptr; }
  Status Progress(int) override { return Status::Ok(); }
  void Wakeup() override {}
  void Shutdown() override {}

  Status RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) override {
    if (fail_next) {
      fail_next = false;
      return SystemError("cannot pin");
    }
    ++registrations;
    handle->id = ++last_id;
    live[handle->id] = {ptr, bytes, kind};
    return Status::Ok();
  }
  void DeregisterMemory(MemoryHandle handle) override {
    ++deregistrations;
    EXPECT_EQ(live.erase(handle.id), 1u) << "deregistered twice or never registered: " << handle.id;
  }

  struct Region {
    void* ptr;
    size_t bytes;
    MemoryKind kind;
  };
  int registrations = 0;
  int deregistrations = 0;
  uint64_t last_id = 0;
  bool fail_next = false;
  std::map<uint64_t, Region> live;
};

uint8_t* At(std::vector<uint8_t>& memory, size_t offset) { return memory.data() + offset; }

TEST(RegistrationCacheTest, ACoveringRegistrationIsReused) {
  CountingTransport transport;
  std::vector<uint8_t> memory(1 << 20);
  {
    RegistrationCache cache(&transport);
    RegistrationCache::Lease whole, slice, same;
    ASSERT_TRUE(cache.Acquire(At(memory, 0), memory.size(), MemoryKind::kHost, &whole).ok());
    ASSERT_TRUE(cache.Acquire(At(memory, 4096), 8192, MemoryKind::kHost, &slice).ok());
    ASSERT_TRUE(cache.Acquire(At(memory, 0), memory.size(), MemoryKind::kHost, &same).ok());
    EXPECT_EQ(transport.registrations, 1);
    EXPECT_EQ(slice.handle().id, whole.handle().id);
    EXPECT_EQ(same.handle().id, whole.handle().id);
    // The last byte is covered; one past it is not.
    RegistrationCache::Lease tail, beyond;
    ASSERT_TRUE(cache.Acquire(At(memory, memory.size() - 1), 1, MemoryKind::kHost, &tail).ok());
    EXPECT_EQ(transport.registrations, 1);
    std::vector<uint8_t> other(64);
    ASSERT_TRUE(cache.Acquire(other.data(), other.size(), MemoryKind::kHost, &beyond).ok());
    EXPECT_EQ(transport.registrations, 2);
    for (auto* lease : {&whole, &slice, &same, &tail, &beyond}) cache.Release(lease);
    EXPECT_FALSE(whole.valid());
    EXPECT_EQ(cache.entries(), 2u);  // released entries stay cached
    EXPECT_EQ(transport.deregistrations, 0);
  }
  EXPECT_EQ(transport.deregistrations, 2);  // the destructor deregisters all
  EXPECT_TRUE(transport.live.empty());
}

TEST(RegistrationCacheTest, PartialOverlapAndOtherKindsRegisterAgain) {
  CountingTransport transport;
  std::vector<uint8_t> memory(8192);
  RegistrationCache cache(&transport);
  RegistrationCache::Lease first, straddling, device;
  ASSERT_TRUE(cache.Acquire(At(memory, 0), 4096, MemoryKind::kHost, &first).ok());
  ASSERT_TRUE(cache.Acquire(At(memory, 2048), 4096, MemoryKind::kHost, &straddling).ok());
  ASSERT_TRUE(cache.Acquire(At(memory, 0), 1024, MemoryKind::kCudaDevice, &device).ok());
  EXPECT_EQ(transport.registrations, 3);
  EXPECT_NE(first.handle().id, straddling.handle().id);
  EXPECT_EQ(transport.live[device.handle().id].kind, MemoryKind::kCudaDevice);
  // A request inside the straddling one but not the first is served by it.
  RegistrationCache::Lease inner;
  ASSERT_TRUE(cache.Acquire(At(memory, 5000), 1000, MemoryKind::kHost, &inner).ok());
  EXPECT_EQ(inner.handle().id, straddling.handle().id);
  EXPECT_EQ(transport.registrations, 3);
  for (auto* lease : {&first, &straddling, &device, &inner}) cache.Release(lease);
}

TEST(RegistrationCacheTest, EvictsTheLeastRecentlyUsedOverTheEntryCap) {
  CountingTransport transport;
  std::vector<std::vector<uint8_t>> buffers(4, std::vector<uint8_t>(256));
  RegistrationCacheLimits limits;
  limits.max_entries = 2;
  RegistrationCache cache(&transport, limits);
  auto use = [&](int i) {
    RegistrationCache::Lease lease;
    EXPECT_TRUE(cache.Acquire(buffers[i].data(), 256, MemoryKind::kHost, &lease).ok());
    const uint64_t id = lease.handle().id;
    cache.Release(&lease);
    return id;
  };
  const uint64_t id0 = use(0);
  use(1);
  EXPECT_EQ(use(0), id0);  // 0 is now the most recent
  use(2);                  // evicts 1, the least recently used
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(transport.deregistrations, 1);
  EXPECT_EQ(use(0), id0);  // still cached
  EXPECT_EQ(transport.registrations, 3);
  use(1);  // registered again, evicting 2
  EXPECT_EQ(transport.registrations, 4);
  EXPECT_EQ(cache.entries(), 2u);
}

TEST(RegistrationCacheTest, EntriesInUseAreNeverEvicted) {
  CountingTransport transport;
  std::vector<std::vector<uint8_t>> buffers(3, std::vector<uint8_t>(1024));
  RegistrationCacheLimits limits;
  limits.max_entries = 8;
  limits.max_bytes = 1500;  // one buffer fits
  RegistrationCache cache(&transport, limits);
  RegistrationCache::Lease held[3];
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache.Acquire(buffers[i].data(), 1024, MemoryKind::kHost, &held[i]).ok());
  // Over the byte cap, but all in use.
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.registered_bytes(), 3072u);
  EXPECT_EQ(transport.deregistrations, 0);
  cache.Release(&held[0]);  // now evictable, and over the cap: gone at once
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(transport.deregistrations, 1);
  cache.Release(&held[1]);
  cache.Release(&held[2]);
  EXPECT_EQ(cache.entries(), 1u);  // the most recent fits the cap
  EXPECT_EQ(cache.registered_bytes(), 1024u);
}

TEST(RegistrationCacheTest, InvalidateDropsUnusedOverlappingEntries) {
  CountingTransport transport;
  std::vector<uint8_t> memory(8192);
  RegistrationCache cache(&transport);
  RegistrationCache::Lease a, b;
  ASSERT_TRUE(cache.Acquire(At(memory, 0), 4096, MemoryKind::kHost, &a).ok());
  ASSERT_TRUE(cache.Acquire(At(memory, 4096), 4096, MemoryKind::kHost, &b).ok());
  cache.Release(&a);
  cache.Invalidate(At(memory, 100), 100);  // overlaps a only
  EXPECT_EQ(cache.entries(), 1u);
  cache.Invalidate(At(memory, 4096), 10);  // b is in use: kept
  EXPECT_EQ(cache.entries(), 1u);
  cache.Release(&b);
  cache.Invalidate(At(memory, 0), memory.size());
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(transport.deregistrations, 2);
  RegistrationCache::Lease again;
  ASSERT_TRUE(cache.Acquire(At(memory, 0), 16, MemoryKind::kHost, &again).ok());
  EXPECT_EQ(transport.registrations, 3);
  cache.Release(&again);
}

TEST(RegistrationCacheTest, FailuresAndBadRangesCacheNothing) {
  CountingTransport transport;
  std::vector<uint8_t> memory(64);
  RegistrationCache cache(&transport);
  RegistrationCache::Lease lease;
  transport.fail_next = true;
  EXPECT_EQ(cache.Acquire(memory.data(), 64, MemoryKind::kHost, &lease).code(), chorusSystemError);
  EXPECT_EQ(cache.Acquire(nullptr, 64, MemoryKind::kHost, &lease).code(), chorusInvalidArgument);
  EXPECT_EQ(cache.Acquire(memory.data(), 0, MemoryKind::kHost, &lease).code(), chorusInvalidArgument);
  EXPECT_FALSE(lease.valid());
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(transport.registrations, 0);
}

TEST(RegistrationCacheTest, TransportsWithoutRegistrationHandOutNullHandles) {
  // The Transport default (TCP, shared memory): a no-op.
  class Plain : public CountingTransport {
   public:
    Status RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) override {
      return Transport::RegisterMemory(ptr, bytes, kind, handle);
    }
  } plain;
  MemoryHandle handle;
  handle.id = 99;
  uint8_t byte = 0;
  ASSERT_TRUE(plain.RegisterMemory(&byte, 1, MemoryKind::kHost, &handle).ok());
  EXPECT_TRUE(handle.null());
}

// `Base` with an endpoint to rank 1, so that a mux routes that peer to it.
template <class Base>
class ReachingRank1 : public Base {
 public:
  class NullEndpoint : public Endpoint {
   public:
    int peer() const override { return 1; }
    Status PostSend(TransferRequest*) override { return Status::Ok(); }
    Status PostRecv(TransferRequest*) override { return Status::Ok(); }
  } endpoint_;
  Endpoint* endpoint(int peer) override { return peer == 1 ? &endpoint_ : nullptr; }
};

// A mux of rank 0 of 2 whose one transport, a ReachingRank1<Base>, is left
// in `inner`.
template <class Base>
Status MuxReachingRank1(ReachingRank1<Base>** inner, std::unique_ptr<TransportMux>* mux) {
  auto owned = std::make_unique<ReachingRank1<Base>>();
  *inner = owned.get();
  std::vector<std::unique_ptr<Transport>> transports;
  transports.push_back(std::move(owned));
  return TransportMux::Create(std::move(transports), 0, 2, mux);
}

TEST(RegistrationCacheTest, AMuxRegistersWithTheTransportsThatNeedIt) {
  // Peer 1 over a transport that needs registration: the mux's handle holds
  // its handle, found with For().
  ReachingRank1<CountingTransport>* inner = nullptr;
  std::unique_ptr<TransportMux> mux;
  ASSERT_TRUE(MuxReachingRank1(&inner, &mux).ok());
  EXPECT_TRUE(mux->capabilities().needs_memory_registration);
  std::vector<uint8_t> memory(128);
  {
    RegistrationCache cache(mux.get());
    RegistrationCache::Lease lease;
    ASSERT_TRUE(cache.Acquire(memory.data(), memory.size(), MemoryKind::kHost, &lease).ok());
    const MemoryHandle own = lease.handle().For(inner);
    EXPECT_EQ(inner->registrations, 1);
    ASSERT_EQ(inner->live.count(own.id), 1u);
    EXPECT_EQ(inner->live[own.id].ptr, memory.data());
    cache.Release(&lease);
  }
  EXPECT_EQ(inner->deregistrations, 1);
}

// A kind the transport does not take is staged through host slots, so it is
// never registered; pinned memory is registered as host memory (ibverbs
// registers nothing else).
TEST(RegistrationCacheTest, ALaunchRegistersOnlyTheKindsTheTransportTakes) {
  CountingTransport transport;
  std::vector<uint8_t> device_stand_in(4096), pinned(4096);
  Operation send, recv;
  send.kind = Operation::Kind::kSend;
  send.peer = 1;
  send.bytes = device_stand_in.size();
  send.send = device_stand_in.data();
  send.send_kind = MemoryKind::kFakeDevice;
  recv.kind = Operation::Kind::kRecv;
  recv.peer = 1;
  recv.bytes = pinned.size();
  recv.recv = pinned.data();
  recv.recv_kind = MemoryKind::kCudaHostPinned;
  const Operation ops[] = {send, recv};

  LaunchBinding binding(0, 2, DefaultLocalEngines());
  binding.RegisterWith(&transport);
  binding.Begin();
  ASSERT_TRUE(binding.AddPointToPoint(ops, 2).ok());
  ExecutorOptions options;
  ASSERT_TRUE(binding.RegisterBuffers(&options).ok());
  ASSERT_NE(options.memory, nullptr);
  ASSERT_EQ(options.memory->size(), 2u);
  EXPECT_TRUE((*options.memory)[0].send.null());  // the device send: staged, no handle
  EXPECT_FALSE((*options.memory)[1].recv.null());
  EXPECT_EQ(transport.registrations, 1);
  ASSERT_EQ(transport.live.size(), 1u);
  EXPECT_EQ(transport.live.begin()->second.ptr, pinned.data());
  EXPECT_EQ(transport.live.begin()->second.kind, MemoryKind::kHost);
  binding.ReleaseBuffers();
}

// Takes registered memory (as ibverbs) but needs none: launches register
// nothing of their own.
class TakingTransport : public CountingTransport {
 public:
  TransportCapabilities capabilities() const override {
    TransportCapabilities capabilities;
    capabilities.takes_registered_memory = true;
    return capabilities;
  }
};

TEST(UserRegistrationsTest, RegistersOnceAndFindsOnlyWholeRangesInside) {
  TakingTransport transport;
  std::vector<uint8_t> memory(4096);
  UserRegistrations user(&transport);
  EXPECT_TRUE(user.empty());
  const void* id = nullptr;
  ASSERT_TRUE(user.Add(memory.data() + 1024, 2048, MemoryKind::kCudaHostPinned, &id).ok());
  EXPECT_NE(id, nullptr);
  EXPECT_FALSE(user.empty());
  EXPECT_EQ(transport.registrations, 1);
  ASSERT_EQ(transport.live.size(), 1u);
  EXPECT_EQ(transport.live.begin()->second.ptr, memory.data() + 1024);
  EXPECT_EQ(transport.live.begin()->second.bytes, 2048u);
  EXPECT_EQ(transport.live.begin()->second.kind, MemoryKind::kHost);  // pinned is host memory to a NIC
  auto found = user.Find(memory.data() + 1024, 2048);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->handle().id, transport.live.begin()->first);
  EXPECT_NE(user.Find(memory.data() + 2000, 1072), nullptr);  // ends at the range's end
  EXPECT_EQ(user.Find(memory.data() + 2000, 1073), nullptr);  // one byte past it
  EXPECT_EQ(user.Find(memory.data() + 1023, 16), nullptr);    // starts before it
  EXPECT_EQ(user.Find(memory.data(), 8192), nullptr);
  found.reset();
  ASSERT_TRUE(user.Remove(id).ok());
  EXPECT_TRUE(user.empty());
  EXPECT_EQ(transport.deregistrations, 1);
  EXPECT_EQ(user.Find(memory.data() + 1024, 2048), nullptr);
  // Gone: a second removal names the handle.
  const Status again = user.Remove(id);
  EXPECT_EQ(again.code(), chorusInvalidArgument);
  EXPECT_NE(again.message().find("no registration of this communicator"), std::string::npos) << again.message();
  // Another registry's handle is none of this one's.
  UserRegistrations other(&transport);
  const void* theirs = nullptr;
  ASSERT_TRUE(other.Add(memory.data(), 64, MemoryKind::kHost, &theirs).ok());
  EXPECT_EQ(user.Remove(theirs).code(), chorusInvalidArgument);
  ASSERT_TRUE(other.Remove(theirs).ok());
}

TEST(UserRegistrationsTest, BadRangesAndRefusalsRegisterNothing) {
  TakingTransport transport;
  UserRegistrations user(&transport);
  uint8_t byte = 0;
  const void* id = &byte;
  EXPECT_EQ(user.Add(nullptr, 64, MemoryKind::kHost, &id).code(), chorusInvalidArgument);
  EXPECT_EQ(user.Add(&byte, 0, MemoryKind::kHost, &id).code(), chorusInvalidArgument);
  EXPECT_EQ(user.Add(&byte, SIZE_MAX, MemoryKind::kHost, &id).code(), chorusInvalidArgument);
  transport.fail_next = true;
  const Status refused = user.Add(&byte, 1, MemoryKind::kHost, &id);
  EXPECT_EQ(refused.code(), chorusSystemError);
  EXPECT_NE(refused.message().find("cannot pin"), std::string::npos);
  EXPECT_EQ(id, &byte);
  EXPECT_TRUE(user.empty());
  EXPECT_EQ(transport.registrations, 0);
  EXPECT_EQ(user.Remove(&byte).code(), chorusInvalidArgument);
}

TEST(UserRegistrationsTest, ALaunchCarriesTheUsersHandleAndHoldsItPastADeregistration) {
  TakingTransport transport;
  UserRegistrations user(&transport);
  std::vector<uint8_t> registered(8192), plain(4096);
  const void* id = nullptr;
  ASSERT_TRUE(user.Add(registered.data(), registered.size(), MemoryKind::kHost, &id).ok());
  const uint64_t handle_id = transport.live.begin()->first;
  Operation send, recv;
  send.kind = Operation::Kind::kSend;
  send.peer = 1;
  send.bytes = 4096;
  send.send = registered.data() + 4096;  // a slice of the registration
  recv.kind = Operation::Kind::kRecv;
  recv.peer = 1;
  recv.bytes = plain.size();
  recv.recv = plain.data();
  const Operation ops[] = {send, recv};

  LaunchBinding binding(0, 2, DefaultLocalEngines());
  binding.UseUserRegistrations(&user);
  binding.Begin();
  ASSERT_TRUE(binding.AddPointToPoint(ops, 2).ok());
  ExecutorOptions options;
  ASSERT_TRUE(binding.RegisterBuffers(&options).ok());
  ASSERT_NE(options.memory, nullptr);
  ASSERT_EQ(options.memory->size(), 2u);
  EXPECT_EQ((*options.memory)[0].send.id, handle_id);
  EXPECT_TRUE((*options.memory)[1].recv.null());  // not registered, and the transport needs nothing
  EXPECT_EQ(transport.registrations, 1);
  // Deregistered while the launch runs: released when it ends.
  ASSERT_TRUE(user.Remove(id).ok());
  EXPECT_EQ(transport.deregistrations, 0);
  binding.ReleaseBuffers();
  EXPECT_EQ(transport.deregistrations, 1);
  EXPECT_TRUE(transport.live.empty());
  // Without registrations a launch hands out no handles at all.
  binding.Begin();
  ASSERT_TRUE(binding.AddPointToPoint(ops, 2).ok());
  ExecutorOptions later;
  ASSERT_TRUE(binding.RegisterBuffers(&later).ok());
  EXPECT_EQ(later.memory, nullptr);
}

TEST(UserRegistrationsTest, AMuxRegistersOnlyWithTransportsThatTakeTheKind) {
  ReachingRank1<TakingTransport>* inner = nullptr;
  std::unique_ptr<TransportMux> mux;
  ASSERT_TRUE(MuxReachingRank1(&inner, &mux).ok());
  EXPECT_FALSE(mux->capabilities().needs_memory_registration);
  EXPECT_TRUE(mux->capabilities().takes_registered_memory);
  std::vector<uint8_t> memory(256);
  {
    UserRegistrations user(mux.get());
    const void* host = nullptr;
    const void* device = nullptr;
    ASSERT_TRUE(user.Add(memory.data(), 128, MemoryKind::kHost, &host).ok());
    // A device kind the transport does not take is staged on its way.
    ASSERT_TRUE(user.Add(memory.data() + 128, 128, MemoryKind::kFakeDevice, &device).ok());
    EXPECT_EQ(inner->registrations, 1);
    EXPECT_FALSE(user.Find(memory.data(), 128)->handle().For(inner).null());
    EXPECT_TRUE(user.Find(memory.data() + 128, 128)->handle().For(inner).null());
  }
  EXPECT_EQ(inner->deregistrations, 1);
}

}  // namespace
}  // namespace chorus
