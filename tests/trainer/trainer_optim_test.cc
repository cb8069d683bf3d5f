// Optimizers and learning-rate schedules, against hand-computed steps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "examples/trainer/lion_cub_math.h"
#include "examples/trainer/lr_schedule.h"
#include "examples/trainer/random.h"
#include "examples/trainer/optimizer.h"

namespace trainer_test {
namespace {

using namespace trainer;

TEST(TrainerOptimizer, SgdMomentumWithWeightDecay) {
  SgdMomentum sgd(0.5f, 0.25f);
  std::vector<float> w{2.0f, -4.0f};
  const std::vector<float> g{1.0f, 0.0f};
  sgd.Step(w, g, 0.5f);
  // v = g + wd*w = {1.5, -1}; w -= 0.5 v
  EXPECT_EQ(w, (std::vector<float>{1.25f, -3.5f}));
  sgd.Step(w, g, 0.5f);
  // v = 0.5*{1.5,-1} + {1 + 0.3125, -0.875} = {2.0625, -1.375}
  EXPECT_EQ(w, (std::vector<float>{1.25f - 1.03125f, -3.5f + 0.6875f}));
}

// The scale is applied on the fly exactly as a separate pass would have.
TEST(TrainerOptimizer, GradientScaleEqualsScalingFirstBitForBit) {
  const size_t n = 257;
  Rng rng(3);
  std::vector<float> g(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = static_cast<float>(rng.Normal());
    w[i] = static_cast<float>(rng.Normal());
  }
  const float scale = 1.0f / 3.0f;
  std::vector<float> scaled = g;
  for (float& v : scaled) v *= scale;
  std::unique_ptr<Optimizer> fused, separate;
  for (const char* name : {"sgd", "lion"}) {
    OptimizerOptions options;
    options.name = name;
    ASSERT_TRUE(MakeOptimizer(options, &fused).ok());
    ASSERT_TRUE(MakeOptimizer(options, &separate).ok());
    std::vector<float> a = w, b = w;
    for (int step = 0; step < 3; ++step) {
      fused->Step(a, g, scale, 0.01f);
      separate->Step(b, scaled, 0.01f);
    }
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << name;
  }
}

// Lion Cub's fused passes (lion_cub_math.h) against the two textbook loops
// they replace, bit for bit, over a length that is no multiple of a vector.
TEST(TrainerOptimizer, LionCubPassesEqualTheTextbookLoopsBitForBit) {
  const size_t n = 1003;
  const float b1 = 0.9f, b2 = 0.99f, lr = 3e-4f, wd = 0.01f;
  Rng rng(7);
  std::vector<float> g(n), m(n), w(n), vote(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = static_cast<float>(rng.Normal());
    m[i] = i % 5 == 0 ? 0.0f : static_cast<float>(0.1 * rng.Normal());
    w[i] = static_cast<float>(rng.Normal());
    vote[i] = static_cast<float>(static_cast<int>(rng.Below(3)) - 1);  // -1, 0, 1
  }
  // Reference: c, the vote, then the weights and the momentum.
  std::vector<float> c_ref(n), m_ref = m, w_ref = w;
  for (size_t i = 0; i < n; ++i) c_ref[i] = b1 * m_ref[i] + (1.0f - b1) * g[i];
  for (size_t i = 0; i < n; ++i) {
    w_ref[i] -= lr * (vote[i] + wd * w_ref[i]);
    m_ref[i] = b2 * m_ref[i] + (1.0f - b2) * g[i];
  }
  std::vector<float> c(n, -1.0f), next(n, -1.0f);
  const std::vector<float> m_before = m;
  LionCubDirectionAndMomentum(b1, b2, g.data(), m.data(), next.data(), c.data(), n);
  LionCubApply(lr, wd, vote.data(), w.data(), n);
  EXPECT_EQ(c, c_ref);
  EXPECT_EQ(next, m_ref);
  EXPECT_EQ(m, m_before);  // read only
  EXPECT_EQ(w, w_ref);
}

TEST(TrainerOptimizer, LionUsesTheSignOfTheInterpolation) {
  Lion lion(0.5f, 0.75f, 0.5f);
  std::vector<float> w{1.0f, 1.0f, 1.0f};
  lion.Step(w, {2.0f, -2.0f, 0.0f}, 0.25f);
  // c = 0.5 g -> sign {1, -1, 0}; w -= 0.25 (sign + 0.5 w); m = 0.25 g
  EXPECT_EQ(w, (std::vector<float>{0.625f, 1.125f, 0.875f}));
  lion.Step(w, {-1.0f, 0.0f, 0.0f}, 0.25f);
  // m = {0.5, -0.5, 0}; c = 0.5 m + 0.5 g = {-0.25, -0.25, 0}
  EXPECT_EQ(w, (std::vector<float>{0.625f + 0.25f - 0.078125f, 1.125f + 0.25f - 0.140625f, 0.875f - 0.109375f}));
  std::unique_ptr<Optimizer> made;
  EXPECT_FALSE(MakeOptimizer(OptimizerOptions{.name = "adam"}, &made).ok());
}

TEST(TrainerLrSchedule, StepWithLinearScalingAndWarmup) {
  LrScheduleOptions o;
  o.kind = "step";
  o.base_lr = 0.1f;
  o.reference_batch = 64;
  o.global_batch = 256;  // peak 0.4
  o.warmup_steps = 4;
  o.step_every = 10;
  o.gamma = 0.5f;
  LrSchedule s;
  ASSERT_TRUE(LrSchedule::Create(o, &s).ok());
  EXPECT_FLOAT_EQ(s.peak(), 0.4f);
  EXPECT_FLOAT_EQ(s.Rate(0), 0.175f);  // 0.1 + 0.3 * 1/4
  EXPECT_FLOAT_EQ(s.Rate(3), 0.4f);
  EXPECT_FLOAT_EQ(s.Rate(9), 0.4f);
  EXPECT_FLOAT_EQ(s.Rate(10), 0.2f);
  EXPECT_FLOAT_EQ(s.Rate(25), 0.1f);
}

TEST(TrainerLrSchedule, PolynomialPowerHalf) {
  LrScheduleOptions o;
  o.kind = "poly";
  o.base_lr = 1.0f;
  o.total_steps = 100;
  LrSchedule s;
  ASSERT_TRUE(LrSchedule::Create(o, &s).ok());
  EXPECT_FLOAT_EQ(s.Rate(0), 1.0f);
  EXPECT_FLOAT_EQ(s.Rate(75), 0.5f);
  EXPECT_FLOAT_EQ(s.Rate(100), 0.0f);
  o.kind = "cosine";
  EXPECT_FALSE(LrSchedule::Create(o, &s).ok());
}

}  // namespace
}  // namespace trainer_test
