// PeerInfo (core/peer_info.h): the rendezvous blob with a host identity, a
// NUMA node and any number of (transport, address) pairs; malformed blobs are
// rejected.
#include <gtest/gtest.h>

#include <string>

#include "core/peer_info.h"

namespace chorus {
namespace {

TEST(PeerInfoTest, RoundTripsEveryPublishedAddress) {
  PeerInfo info;
  info.host = "node7|boot|netns";
  info.numa_node = 3;
  info.addresses = {{"shm", "shm1 42 1048576 /chorus-shm-x node7"}, {"tcp", "10.0.0.7:40000"}, {"ucx", ""}};
  PeerInfo decoded;
  ASSERT_TRUE(PeerInfo::Decode(info.Encode(), &decoded).ok());
  EXPECT_EQ(decoded.host, info.host);
  EXPECT_EQ(decoded.numa_node, 3);
  ASSERT_EQ(decoded.addresses.size(), 3u);
  EXPECT_EQ(*decoded.AddressFor("tcp"), "10.0.0.7:40000");
  EXPECT_EQ(*decoded.AddressFor("shm"), info.addresses[0].address);
  EXPECT_EQ(*decoded.AddressFor("ucx"), "");
  EXPECT_EQ(decoded.AddressFor("verbs"), nullptr);
  PeerInfo none;
  none.host = "h";
  ASSERT_TRUE(PeerInfo::Decode(none.Encode(), &decoded).ok());
  EXPECT_EQ(decoded.numa_node, -1);  // unknown or spanning nodes
  EXPECT_TRUE(decoded.addresses.empty());
}

TEST(PeerInfoTest, RejectsMalformedBlobsAndWritesNothing) {
  PeerInfo info;
  info.host = "h";
  info.addresses = {{"tcp", "127.0.0.1:1"}};
  const std::string blob = info.Encode();
  PeerInfo unnamed = info;
  unnamed.addresses[0].transport.clear();
  PeerInfo bad_numa = info;
  bad_numa.numa_node = -2;
  // "+3" parses as 3 but is not what Encode writes: a decoded blob must
  // re-encode to itself.
  PeerInfo three = info;
  three.numa_node = 3;
  std::string plus_three = three.Encode();
  plus_three.replace(5 + 4 + 1, 4 + 1, std::string("\x02\0\0\0+3", 6));
  std::string too_many = blob;
  too_many[5 + 4 + 1 + 4 + 2] = 65;  // after magic, "h" and "-1": the count's low byte, 65 > kMaxPublishedAddresses
  for (const std::string& bad : {std::string(), std::string("CHPI2"), blob.substr(0, blob.size() - 1), blob + "x",
                                 std::string("XXXXX") + blob.substr(5), unnamed.Encode(), bad_numa.Encode(),
                                 plus_three, too_many}) {
    PeerInfo out;
    out.host = "untouched";
    Status status = PeerInfo::Decode(bad, &out);
    EXPECT_EQ(status.code(), chorusInternalError) << bad.size();
    EXPECT_EQ(out.host, "untouched");
  }
}

}  // namespace
}  // namespace chorus
