// IDX reading (gzip through zlib) and the distributed sampler, on small files
// the test writes itself.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "examples/trainer/dataset.h"
#include "examples/trainer/distributed_sampler.h"
#include "examples/trainer/idx_reader.h"

namespace trainer_test {
namespace {

using namespace trainer;

std::vector<uint8_t> IdxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values,
                              uint8_t type = 0x08) {
  std::vector<uint8_t> bytes{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), values.begin(), values.end());
  return bytes;
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/trainer_data_test_XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  void WriteGzip(const std::string& name, const std::vector<uint8_t>& bytes) const {
    gzFile file = gzopen(File(name).c_str(), "wb");
    ASSERT_NE(file, nullptr);
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(file), Z_OK);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(TrainerIdxReader, ReadsGzippedImagesAndLabels) {
  TempDir dir;
  std::vector<uint8_t> pixels(3 * 2 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 20);
  dir.WriteGzip("images.gz", IdxBytes({3, 2, 2}, pixels));
  dir.WriteGzip("labels.gz", IdxBytes({3}, {4, 0, 9}));
  IdxArray images;
  ASSERT_TRUE(ReadIdxFile(dir.File("images.gz"), &images).ok());
  EXPECT_EQ(images.dims, (std::vector<uint32_t>{3, 2, 2}));
  EXPECT_EQ(images.values, pixels);

  Dataset data;
  const chorus::Status status = DatasetFromIdx(dir.File("images.gz"), dir.File("labels.gz"), &data);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(data.count, 3);
  EXPECT_EQ(data.sample, (Shape{1, 1, 2, 2}));
  EXPECT_EQ(data.labels, (std::vector<uint8_t>{4, 0, 9}));
  EXPECT_FLOAT_EQ(data.images[0], (0.0f - 0.2860f) / 0.3530f);
  EXPECT_FLOAT_EQ(data.images[11], (220.0f / 255.0f - 0.2860f) / 0.3530f);

  Tensor batch;
  std::vector<uint8_t> labels;
  data.Gather({2, 0}, 0, 2, &batch, &labels);
  EXPECT_EQ(batch.shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(labels, (std::vector<uint8_t>{9, 4}));
  EXPECT_EQ(batch[0], data.images[8]);
}

TEST(TrainerIdxReader, MalformedFilesGetClearErrors) {
  TempDir dir;
  auto error_of = [&](const std::vector<uint8_t>& bytes) {
    dir.WriteGzip("bad.gz", bytes);
    IdxArray out;
    const chorus::Status status = ReadIdxFile(dir.File("bad.gz"), &out);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find(dir.File("bad.gz")), std::string::npos) << status.message();
    return status.message();
  };
  EXPECT_NE(error_of({1, 2, 8, 1, 0, 0, 0, 1, 5}).find("not an IDX file"), std::string::npos);
  EXPECT_NE(error_of(IdxBytes({2}, {1, 2}, 0x0D)).find("not supported"), std::string::npos);
  EXPECT_NE(error_of(IdxBytes({5}, {1, 2})).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(IdxBytes({1}, {1, 2})).find("bytes after"), std::string::npos);
  EXPECT_NE(error_of({0, 0}).find("truncated"), std::string::npos);
}

TEST(TrainerIdxReader, MissingFashionMnistNamesThePackage) {
  TempDir dir;
  Dataset data;
  const chorus::Status status = LoadFashionMnist(dir.path(), Split::kTrain, &data);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("train-images-idx3-ubyte.gz"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("dataset-fashion-mnist"), std::string::npos) << status.message();
}

TEST(TrainerIdxReader, MismatchedLabelCountIsAnError) {
  TempDir dir;
  dir.WriteGzip("images.gz", IdxBytes({2, 1, 1}, {1, 2}));
  dir.WriteGzip("labels.gz", IdxBytes({3}, {1, 2, 3}));
  Dataset data;
  const chorus::Status status = DatasetFromIdx(dir.File("images.gz"), dir.File("labels.gz"), &data);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("one label per image"), std::string::npos) << status.message();
}

TEST(TrainerDistributedSampler, RanksPartitionTheSameShuffledOrder) {
  const int size = 103, nranks = 3;
  DistributedSampler whole(size, 1, 0, 7);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<uint32_t> order = whole.EpochIndices(epoch);
    std::set<uint32_t> seen;
    for (int r = 0; r < nranks; ++r) {
      const std::vector<uint32_t> mine = DistributedSampler(size, nranks, r, 7).EpochIndices(epoch);
      ASSERT_EQ(mine.size(), 34u);  // 103 / 3, the tail of 1 dropped
      for (size_t k = 0; k < mine.size(); ++k) {
        EXPECT_EQ(mine[k], order[k * nranks + r]);
        seen.insert(mine[k]);
      }
    }
    EXPECT_EQ(seen.size(), 102u);
  }
  EXPECT_NE(whole.EpochIndices(0), whole.EpochIndices(1));  // reshuffled every epoch
  EXPECT_EQ(whole.EpochIndices(1), DistributedSampler(size, 1, 0, 7).EpochIndices(1));
  std::vector<uint32_t> sorted = whole.EpochIndices(0);
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
}

}  // namespace
}  // namespace trainer_test
