// PeerInfo (core/peer_info.h): the rendezvous blob with a host identity and
// any number of (transport, address) pairs; malformed blobs are rejected.
#include <gtest/gtest.h>

#include <string>

#include "core/peer_info.h"

namespace chorus {
namespace {

TEST(PeerInfoTest, RoundTripsEveryPublishedAddress) {
  PeerInfo info;
  info.host = "node7|boot|netns";
  info.addresses = {{"shm", "shm1 42 1048576 /chorus-shm-x node7"}, {"tcp", "10.0.0.7:40000"}, {"ucx", ""}};
  PeerInfo decoded;
  ASSERT_TRUE(PeerInfo::Decode(info.Encode(), &decoded).ok());
  EXPECT_EQ(decoded.host, info.host);
  ASSERT_EQ(decoded.addresses.size(), 3u);
  EXPECT_EQ(*decoded.AddressFor("tcp"), "10.0.0.7:40000");
  EXPECT_EQ(*decoded.AddressFor("shm"), info.addresses[0].address);
  EXPECT_EQ(*decoded.AddressFor("ucx"), "");
  EXPECT_EQ(decoded.AddressFor("verbs"), nullptr);
  PeerInfo none;
  none.host = "h";
  ASSERT_TRUE(PeerInfo::Decode(none.Encode(), &decoded).ok());
  EXPECT_TRUE(decoded.addresses.empty());
}

TEST(PeerInfoTest, RejectsMalformedBlobsAndWritesNothing) {
  PeerInfo info;
  info.host = "h";
  info.addresses = {{"tcp", "127.0.0.1:1"}};
  const std::string blob = info.Encode();
  PeerInfo unnamed = info;
  unnamed.addresses[0].transport.clear();
  std::string too_many = blob;
  too_many[5 + 4 + 1] = 65;  // the count's low byte: 65 > kMaxPublishedAddresses
  for (const std::string& bad : {std::string(), std::string("CHPI1"), blob.substr(0, blob.size() - 1), blob + "x",
                                 std::string("XXXXX") + blob.substr(5), unnamed.Encode(), too_many}) {
    PeerInfo out;
    out.host = "untouched";
    Status status = PeerInfo::Decode(bad, &out);
    EXPECT_EQ(status.code(), chorusInternalError) << bad.size();
    EXPECT_EQ(out.host, "untouched");
  }
}

}  // namespace
}  // namespace chorus
