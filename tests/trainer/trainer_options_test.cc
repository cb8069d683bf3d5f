// chorus_trainer's command line (examples/trainer/options.cc): what each flag
// sets, and that bad input is refused with a message naming the flag while
// the caller's Options stay untouched.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/trainer/options.h"

namespace trainer {
namespace {

chorus::Status Parse(std::vector<std::string> args, Options* out) {
  args.insert(args.begin(), "chorus_trainer");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), out);
}

TEST(TrainerOptions, DefaultsAreSyncLenetAutoAlgorithm) {
  Options options;
  ASSERT_TRUE(Parse({}, &options).ok());
  EXPECT_EQ(options.model, "lenet");
  EXPECT_EQ(options.algo, "auto");
  EXPECT_EQ(options.train.exchange.mode, "sync");
  EXPECT_EQ(options.ranks, 1);
  EXPECT_EQ(options.train.data_seed, 2u);  // the data order uses seed + 1
}

TEST(TrainerOptions, EveryExactAllReduceAlgorithmIsAccepted) {
  for (const char* algo : {"auto", "ring", "tree", "ps", "hd", "direct"}) {
    Options options;
    ASSERT_TRUE(Parse({"--algo", algo}, &options).ok()) << algo;
    EXPECT_EQ(options.algo, algo);
  }
}

TEST(TrainerOptions, UnknownAlgorithmIsRefusedAndNothingIsWritten) {
  Options options;
  options.model = "sentinel";
  const chorus::Status status = Parse({"--model", "nin", "--algo", "gossip"}, &options);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("--algo must be auto, ring, tree, ps, hd or direct, not 'gossip'"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(options.model, "sentinel");
}

TEST(TrainerOptions, ModesSetTheExchangeAndExcludeEachOther) {
  Options options;
  ASSERT_TRUE(Parse({"--pipe-sgd", "--fp16-wire", "--warmup-steps", "7"}, &options).ok());
  EXPECT_EQ(options.train.exchange.mode, "pipe-sgd");
  EXPECT_TRUE(options.train.exchange.fp16_wire);
  EXPECT_EQ(options.train.exchange.warmup_steps, 7);

  Options lion;
  ASSERT_TRUE(Parse({"--lion-cub"}, &lion).ok());
  EXPECT_EQ(lion.train.exchange.mode, "lion-cub");
  EXPECT_EQ(lion.train.optimizer.name, "lion");  // Lion Cub is Lion with a voted sign

  const chorus::Status both = Parse({"--pipe-sgd", "--gossip"}, &options);
  EXPECT_EQ(both.code(), chorusInvalidArgument);
  EXPECT_NE(both.message().find("--pipe-sgd and --gossip are exclusive"), std::string::npos) << both.message();
  EXPECT_EQ(Parse({"--fp16-wire"}, &options).code(), chorusInvalidArgument);  // needs --pipe-sgd
}

TEST(TrainerOptions, MalformedValuesNameTheFlag) {
  Options options;
  const chorus::Status batch = Parse({"--batch", "12x"}, &options);
  EXPECT_EQ(batch.code(), chorusInvalidArgument);
  EXPECT_NE(batch.message().find("--batch expects a non-negative integer, not '12x'"), std::string::npos)
      << batch.message();
  EXPECT_EQ(Parse({"--epochs", "0"}, &options).code(), chorusInvalidArgument);
  EXPECT_EQ(Parse({"--bucket-mib", "-1"}, &options).code(), chorusInvalidArgument);
  EXPECT_EQ(Parse({"--batch"}, &options).code(), chorusInvalidArgument);  // no value
  const chorus::Status unknown = Parse({"--no-such-flag"}, &options);
  EXPECT_EQ(unknown.code(), chorusInvalidArgument);
  EXPECT_NE(unknown.message().find("unknown option '--no-such-flag'"), std::string::npos) << unknown.message();
}

TEST(TrainerOptions, StepTraceTakesAPathButNotWithElastic) {
  Options options;
  ASSERT_TRUE(Parse({"--pipe-sgd", "--step-trace", "/tmp/trace"}, &options).ok());
  EXPECT_EQ(options.step_trace_path, "/tmp/trace");
  const chorus::Status elastic = Parse({"--elastic", "--step-trace", "/tmp/trace"}, &options);
  EXPECT_EQ(elastic.code(), chorusInvalidArgument);
  EXPECT_NE(elastic.message().find("--step-trace does not support --elastic"), std::string::npos)
      << elastic.message();
  EXPECT_EQ(options.step_trace_path, "/tmp/trace");  // from the successful parse, untouched
}

TEST(TrainerOptions, BucketSizeIsConvertedToBytes) {
  Options options;
  ASSERT_TRUE(Parse({"--overlap", "--bucket-mib", "0.5", "--seed", "9"}, &options).ok());
  EXPECT_EQ(options.train.bucket_bytes, 512u * 1024u);
  EXPECT_EQ(options.seed, 9u);
  EXPECT_EQ(options.train.data_seed, 10u);
}

}  // namespace
}  // namespace trainer
