// The CHORUS_* table, its parsers, Settings::FromEnvironment and the
// transports' own variables (captured through the registry).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/config.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport_registry.h"

namespace chorus {
namespace {

size_t BytesOf(const std::string& text) {
  size_t value = 12345;
  Status status = ParseBytes(text, "TEST", &value);
  EXPECT_TRUE(status.ok()) << text << ": " << status.message();
  return value;
}

long long IntOf(const std::string& text) {
  long long value = 12345;
  Status status = ParseInt(text, "TEST", &value);
  EXPECT_TRUE(status.ok()) << text << ": " << status.message();
  return value;
}

TEST(ParseBytesTest, AcceptsPlainNumbersAndSuffixes) {
  EXPECT_EQ(BytesOf("64"), 64u);
  EXPECT_EQ(BytesOf("0"), 0u);
  EXPECT_EQ(BytesOf("512K"), 524288u);
  EXPECT_EQ(BytesOf("1M"), 1048576u);
  EXPECT_EQ(BytesOf("2G"), 2147483648u);
  EXPECT_EQ(BytesOf("4k"), 4096u);
  EXPECT_EQ(BytesOf("3m"), 3u << 20);
  EXPECT_EQ(BytesOf("8KB"), 8192u);
}

TEST(ParseBytesTest, RejectsMalformedSizesWithoutWriting) {
  for (const char* text : {"12X", "-1", "", "K", "1.5M", "10KX", "1 M", "abc", "99999999999999999999"}) {
    size_t value = 777;
    Status status = ParseBytes(text, "CHORUS_CHUNK_BYTES", &value);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << "'" << text << "' gave " << value;
    EXPECT_NE(status.message().find("CHORUS_CHUNK_BYTES"), std::string::npos) << status.message();
    EXPECT_EQ(value, 777u) << "'" << text << "'";
  }
}

// A size whose scaled value does not fit in 64 bits, and a negative number
// behind a space, must be rejected, not wrapped to a huge or zero size.
TEST(ParseBytesTest, RejectsOverflowAndHiddenSigns) {
  for (const char* text : {"17179869184G", "18446744073709551615K", " -1", " -2M"}) {
    size_t value = 777;
    Status status = ParseBytes(text, "TEST", &value);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << "'" << text << "' gave " << value;
  }
}

TEST(ParseIntTest, AcceptsDecimalIntegers) {
  EXPECT_EQ(IntOf("42"), 42);
  EXPECT_EQ(IntOf("-7"), -7);
  EXPECT_EQ(IntOf("0"), 0);
  EXPECT_EQ(IntOf("9223372036854775807"), 9223372036854775807ll);
}

TEST(ParseIntTest, RejectsNonIntegersWithoutWriting) {
  for (const char* text : {"", "12a", "1.0", "0x10", "abc", "5 ", "9223372036854775808", "1K"}) {
    long long value = 777;
    Status status = ParseInt(text, "CHORUS_NSOCKS", &value);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << "'" << text << "' gave " << value;
    EXPECT_NE(status.message().find("CHORUS_NSOCKS"), std::string::npos) << status.message();
    EXPECT_EQ(value, 777) << "'" << text << "'";
  }
}

TEST(ParseHex128Test, ParsesBothCases) {
  unsigned char out[16] = {};
  ASSERT_TRUE(ParseHex128("000102030405060708090a0b0c0d0e0f", "TEST", out).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], i);
  ASSERT_TRUE(ParseHex128("FFEEDDCCBBAA99887766554433221100", "TEST", out).ok());
  const unsigned char expected[16] = {0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
                                      0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00};
  EXPECT_EQ(std::memcmp(out, expected, 16), 0);
}

TEST(ParseHex128Test, RejectsWrongLengthAndNonHex) {
  for (const char* text : {"",                                     // empty
                           "00102030405060708090a0b0c0d0e0f",      // 31 digits
                           "000102030405060708090a0b0c0d0e0f0",    // 33 digits
                           "g00102030405060708090a0b0c0d0e0f",     // not hex
                           "000102030405060708090a0b0c0d0e0 ",     // space
                           "0x0102030405060708090a0b0c0d0e0f"}) {  // prefix
    unsigned char out[16] = {};
    Status status = ParseHex128(text, "CHORUS_SECRET", out);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << "'" << text << "'";
    EXPECT_NE(status.message().find("CHORUS_SECRET"), std::string::npos) << status.message();
  }
}

TEST(EnvTableTest, EveryEntryIsDeclaredCompletely) {
  const std::set<std::string> types = {"int", "bytes", "string", "level", "hex128"};
  std::set<std::string> names;
  ASSERT_FALSE(AllEnvVars().empty());
  for (const EnvVarSpec& spec : AllEnvVars()) {
    ASSERT_NE(spec.name, nullptr);
    const std::string name = spec.name;
    EXPECT_EQ(name.rfind("CHORUS_", 0), 0u) << name;
    EXPECT_GT(name.size(), std::strlen("CHORUS_")) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " declared twice";
    ASSERT_NE(spec.type, nullptr) << name;
    EXPECT_TRUE(types.count(spec.type)) << name << " has type '" << spec.type << "'";
    ASSERT_NE(spec.help, nullptr) << name;
    EXPECT_GT(std::strlen(spec.help), 0u) << name;
    ASSERT_NE(spec.default_value, nullptr) << name;
    // Typed defaults must parse with their own parser.
    const std::string type = spec.type;
    if (type == "int") {
      long long value;
      EXPECT_TRUE(ParseInt(spec.default_value, spec.name, &value).ok()) << name;
    } else if (type == "bytes") {
      size_t value;
      EXPECT_TRUE(ParseBytes(spec.default_value, spec.name, &value).ok()) << name;
    }
  }
  for (const char* required : {"CHORUS_TIMEOUT_MS", "CHORUS_NSOCKS", "CHORUS_CHUNK_BYTES", "CHORUS_DEBUG",
                               "CHORUS_ALGO", "CHORUS_SOCKET_IFNAME", "CHORUS_SECRET"}) {
    EXPECT_TRUE(names.count(required)) << required << " is not declared";
  }
}

// Clears every declared CHORUS_* variable for the test and puts the
// environment back as it was afterwards.
class EnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const EnvVarSpec& spec : AllEnvVars()) {
      const char* value = std::getenv(spec.name);
      saved_.push_back({spec.name, value ? std::optional<std::string>(value) : std::nullopt});
      unsetenv(spec.name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }
  static void Set(const char* name, const char* value) { ASSERT_EQ(setenv(name, value, 1), 0); }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(EnvironmentTest, EnvValueFallsBackToTheDefault) {
  EXPECT_EQ(EnvValue("CHORUS_NSOCKS"), "2");
  Set("CHORUS_NSOCKS", "5");
  EXPECT_EQ(EnvValue("CHORUS_NSOCKS"), "5");
}

TEST_F(EnvironmentTest, DefaultsWhenNothingIsSet) {
  Settings settings;
  ASSERT_TRUE(Settings::FromEnvironment(&settings).ok());
  EXPECT_EQ(settings.timeout_ms, 300000);
  EXPECT_EQ(settings.transport, "auto");
  EXPECT_EQ(settings.chunk_bytes, 512u * 1024);
  EXPECT_EQ(settings.algo, "");
  EXPECT_EQ(settings.socket_ifname, "");
}

TEST_F(EnvironmentTest, HonoursTheVariables) {
  Set("CHORUS_TIMEOUT_MS", "1500");
  Set("CHORUS_NSOCKS", "4");
  Set("CHORUS_CHUNK_BYTES", "1M");
  Set("CHORUS_ALGO", "allreduce:tree");
  Set("CHORUS_SOCKET_IFNAME", "^lo");
  Settings settings;
  ASSERT_TRUE(Settings::FromEnvironment(&settings).ok());
  EXPECT_EQ(settings.timeout_ms, 1500);
  TcpOptions tcp;
  TransportVars vars;
  ASSERT_TRUE(BuiltinTransports().CaptureVars(&vars).ok());
  ASSERT_TRUE(ReadTcpOptions(vars, &tcp).ok());
  EXPECT_EQ(tcp.nsocks, 4);
  EXPECT_EQ(settings.chunk_bytes, 1048576u);
  EXPECT_EQ(settings.algo, "allreduce:tree");
  EXPECT_EQ(settings.socket_ifname, "^lo");
}

TEST_F(EnvironmentTest, AcceptsTheLimits) {
  Set("CHORUS_TIMEOUT_MS", "2147483647");
  Set("CHORUS_NSOCKS", "64");
  Set("CHORUS_CHUNK_BYTES", "64");
  Settings settings;
  ASSERT_TRUE(Settings::FromEnvironment(&settings).ok());
  EXPECT_EQ(settings.timeout_ms, 2147483647);
  TcpOptions tcp;
  TransportVars vars;
  ASSERT_TRUE(BuiltinTransports().CaptureVars(&vars).ok());
  ASSERT_TRUE(ReadTcpOptions(vars, &tcp).ok());
  EXPECT_EQ(tcp.nsocks, 64);
  EXPECT_EQ(settings.chunk_bytes, 64u);
}

struct BadValue {
  const char* name;
  const char* value;
};

class BadEnvironmentTest : public EnvironmentTest, public ::testing::WithParamInterface<BadValue> {};

TEST_P(BadEnvironmentTest, IsInvalidArgumentNamingTheVariable) {
  Set(GetParam().name, GetParam().value);
  Settings settings;
  settings.timeout_ms = -3;  // untouched on failure
  Status status = Settings::FromEnvironment(&settings);
  // A transport's own variables are checked when the registry captures them.
  TransportVars vars;
  if (status.ok()) status = BuiltinTransports().CaptureVars(&vars);
  EXPECT_EQ(status.code(), chorusInvalidArgument) << GetParam().name << "=" << GetParam().value;
  EXPECT_NE(status.message().find(GetParam().name), std::string::npos) << status.message();
  if (std::strncmp(GetParam().name, "CHORUS_TIMEOUT_MS", 17) == 0) EXPECT_EQ(settings.timeout_ms, -3);
}

INSTANTIATE_TEST_SUITE_P(Values, BadEnvironmentTest,
                         ::testing::Values(BadValue{"CHORUS_TIMEOUT_MS", "abc"}, BadValue{"CHORUS_TIMEOUT_MS", "0"},
                                           BadValue{"CHORUS_TIMEOUT_MS", "-5"},
                                           BadValue{"CHORUS_TIMEOUT_MS", "2147483648"},
                                           BadValue{"CHORUS_TIMEOUT_MS", ""}, BadValue{"CHORUS_NSOCKS", "0"},
                                           BadValue{"CHORUS_NSOCKS", "65"}, BadValue{"CHORUS_NSOCKS", "two"},
                                           BadValue{"CHORUS_CHUNK_BYTES", "12X"}, BadValue{"CHORUS_CHUNK_BYTES", "-1"},
                                           BadValue{"CHORUS_CHUNK_BYTES", "32"}, BadValue{"CHORUS_CHUNK_BYTES", "0"},
                                           BadValue{"CHORUS_CHECK", "2"}, BadValue{"CHORUS_CHECK", "yes"},
                                           BadValue{"CHORUS_CHECK", ""}),
                         [](const ::testing::TestParamInfo<BadValue>& info) { return std::to_string(info.index); });

TEST_F(EnvironmentTest, CallChecksAreOffUnlessSetToOne) {
  Settings settings;
  ASSERT_TRUE(Settings::FromEnvironment(&settings).ok());
  EXPECT_FALSE(settings.check_calls);
  Set("CHORUS_CHECK", "1");
  ASSERT_TRUE(Settings::FromEnvironment(&settings).ok());
  EXPECT_TRUE(settings.check_calls);
  Set("CHORUS_CHECK", "0");
  ASSERT_TRUE(Settings::FromEnvironment(&settings).ok());
  EXPECT_FALSE(settings.check_calls);
}

TEST_F(EnvironmentTest, ShmRingBytesIsAutomaticUnlessSet) {
  TransportVars vars;
  ASSERT_TRUE(BuiltinTransports().CaptureVars(&vars).ok());
  size_t ring_bytes = 7;
  ASSERT_TRUE(ParseShmRingBytes(vars.Get("CHORUS_SHM_RING_BYTES"), &ring_bytes).ok());
  EXPECT_EQ(ring_bytes, 0u);
  for (const auto& [text, bytes] : std::vector<std::pair<const char*, size_t>>{
           {"auto", 0}, {"0", 0}, {"256K", 256u << 10}, {"262208", 262208}, {"4M", 4u << 20}, {"1G", 1u << 30}}) {
    Set("CHORUS_SHM_RING_BYTES", text);
    TransportVars captured;
    ASSERT_TRUE(BuiltinTransports().CaptureVars(&captured).ok()) << text;
    ring_bytes = 7;
    ASSERT_TRUE(ParseShmRingBytes(captured.Get("CHORUS_SHM_RING_BYTES"), &ring_bytes).ok()) << text;
    EXPECT_EQ(ring_bytes, bytes) << text;
  }
}

INSTANTIATE_TEST_SUITE_P(ShmRingBytes, BadEnvironmentTest,
                         ::testing::Values(BadValue{"CHORUS_SHM_RING_BYTES", "128K"},
                                           BadValue{"CHORUS_SHM_RING_BYTES", "262145"},
                                           BadValue{"CHORUS_SHM_RING_BYTES", "2G"},
                                           BadValue{"CHORUS_SHM_RING_BYTES", "big"},
                                           BadValue{"CHORUS_SHM_RING_BYTES", "-1M"},
                                           BadValue{"CHORUS_SHM_RING_BYTES", ""}),
                         [](const ::testing::TestParamInfo<BadValue>& info) { return std::to_string(info.index); });

}  // namespace
}  // namespace chorus
