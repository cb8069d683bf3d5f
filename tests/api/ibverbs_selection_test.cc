// CHORUS_TRANSPORT=ibverbs (or its alias ib) through the public API: without
// an RDMA device, naming it alone fails creation saying so, and a list falls
// back to its other transports; with a device, collectives run over it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "chorus_build_config.h"
#include "tests/api/harness.h"

namespace chorus_test {
namespace {

bool HasRdmaDevice() {
  std::error_code error;
  std::filesystem::directory_iterator devices("/sys/class/infiniband", error);
  return !error && devices != std::filesystem::directory_iterator();
}

class TransportScope {
 public:
  explicit TransportScope(const char* name) { setenv("CHORUS_TRANSPORT", name, 1); }
  ~TransportScope() { unsetenv("CHORUS_TRANSPORT"); }
};

// Every rank sums its rank + 1 over `count` floats.
void ExpectAllReduceWorks(const ThreadComms& comms, size_t count) {
  const int nranks = comms.size();
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<float> data(count, static_cast<float>(rank + 1));
    ASSERT_EQ(chorusAllReduce(data.data(), data.data(), count, chorusFloat32, chorusSum, comm, nullptr), chorusSuccess)
        << chorusGetLastError(comm);
    const float expected = static_cast<float>(nranks * (nranks + 1) / 2);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(data[i], expected) << "element " << i;
  });
}

TEST(IbverbsSelectionTest, AloneWithoutADeviceFailsSayingSo) {
  if (!CHORUS_HAVE_IBVERBS) GTEST_SKIP() << "Chorus was built without libibverbs";
  if (HasRdmaDevice()) GTEST_SKIP() << "an RDMA device exists here";
  for (const char* name : {"ibverbs", "ib"}) {
    TransportScope scope(name);
    ThreadComms comms = ThreadComms::InitRank(2);
    ASSERT_FALSE(comms.ok()) << name;
    EXPECT_NE(comms.error().find("creating the ibverbs transport"), std::string::npos) << comms.error();
    EXPECT_NE(comms.error().find("no RDMA device"), std::string::npos) << comms.error();
  }
}

TEST(IbverbsSelectionTest, AListWithoutADeviceFallsBackToTheOthers) {
  if (!CHORUS_HAVE_IBVERBS) GTEST_SKIP() << "Chorus was built without libibverbs";
  if (HasRdmaDevice()) GTEST_SKIP() << "an RDMA device exists here";
  TransportScope scope("ib,tcp");
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectAllReduceWorks(comms, 1000);
}

TEST(IbverbsSelectionTest, CollectivesRunOverADevice) {
  if (!CHORUS_HAVE_IBVERBS) GTEST_SKIP() << "Chorus was built without libibverbs";
  if (!HasRdmaDevice()) GTEST_SKIP() << "no RDMA device";
  TransportScope scope("ibverbs");
  ThreadComms comms = ThreadComms::InitRank(3);
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectAllReduceWorks(comms, 1);
  ExpectAllReduceWorks(comms, (4 << 20) + 3);  // chunked, ring-wrapping, odd length
}

}  // namespace
}  // namespace chorus_test
