// A step's loss and accuracy read later (runtime/train/step.h, resolvePending): on a GPU the
// values stay on the device until every EST's are read at once; the numbers must be those a
// read of each would give.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "runtime/models/model.h"
#include "runtime/train/step.h"

namespace tl::train {
namespace {

TEST(StepStats, PendingValuesResolveToWhatAReadOfEachGives) {
  std::vector<BatchStats> stats(3);
  stats[0].samples = 3;
  stats[0].pendingLoss = at::tensor(0.1f).to(at::kDouble);  // float64 of a float32 loss
  stats[0].pendingCorrect = at::tensor(int64_t(2));
  stats[1].samples = 4;  // already read: untouched
  stats[1].lossSum = 5.0;
  stats[1].correct = 1;
  stats[2].samples = 5;
  stats[2].pendingLoss = at::tensor(2.5);  // a model without logits: no count
  resolvePending(stats);
  EXPECT_EQ(stats[0].lossSum, double(0.1f) * 3.0);
  EXPECT_EQ(stats[0].correct, 2);
  EXPECT_EQ(stats[1].lossSum, 5.0);
  EXPECT_EQ(stats[1].correct, 1);
  EXPECT_EQ(stats[2].lossSum, 12.5);
  EXPECT_EQ(stats[2].correct, 0);
  for (const BatchStats& s : stats) {
    EXPECT_FALSE(s.pendingLoss.defined());
    EXPECT_FALSE(s.pendingCorrect.defined());
  }
  BatchStats sum;
  for (const BatchStats& s : stats) sum.add(s);
  EXPECT_EQ(sum.samples, 12);
  EXPECT_EQ(sum.correct, 3);
  std::vector<BatchStats> none(2);
  resolvePending(none);  // nothing pending: nothing read
  EXPECT_EQ(none[0].lossSum, 0.0);
}

}  // namespace
}  // namespace tl::train

namespace tl::train {
namespace {

std::vector<at::Tensor> gradsOf(models::Model& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.grad().clone());
  return out;
}

std::shared_ptr<models::Model> seededCnn() {
  models::ModelConfig cnn;
  cnn.arch = "cnn";  // BatchNorm and dropout
  at::manual_seed(7);
  auto model = models::createModel(cnn);
  model->train();
  return model;
}

// --micro-batches 1 is the plain step, bit for bit.
TEST(MicroBatches, OnePieceIsTheWholeBatchStep) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({6, 3, 32, 32}), y = at::randint(0, 10, {6});
  auto a = seededCnn(), b = seededCnn();
  at::manual_seed(42);  // the dropout masks
  const BatchStats pieces = forwardBackwardInPieces(*a, x, y, 1);
  at::manual_seed(42);
  const BatchStats whole = forwardBackward(*b, x, y);
  EXPECT_EQ(pieces.lossSum, whole.lossSum);
  EXPECT_EQ(pieces.correct, whole.correct);
  EXPECT_EQ(pieces.samples, 6);
  const auto ga = gradsOf(*a), gb = gradsOf(*b);
  for (size_t i = 0; i < ga.size(); ++i) EXPECT_TRUE(at::equal(ga[i], gb[i])) << "parameter " << i;
}

// K = 2: each half runs on its own (BatchNorm normalises it by its own statistics and updates
// the running ones: two updates), the gradient is the mean of the halves' gradients (up to the
// rounding of accumulating loss / 2), and the stats add the halves' in order.
TEST(MicroBatches, TwoPiecesAreTwoHalfBatchesAccumulated) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({6, 3, 32, 32}), y = at::randint(0, 10, {6});
  auto a = seededCnn(), b = seededCnn(), whole = seededCnn();
  at::manual_seed(42);
  const BatchStats pieces = forwardBackwardInPieces(*a, x, y, 2);
  at::manual_seed(42);  // the same dropout draws, in the same order
  const BatchStats first = forwardBackward(*b, x.slice(0, 0, 3), y.slice(0, 0, 3));
  const auto g1 = gradsOf(*b);
  const BatchStats second = forwardBackward(*b, x.slice(0, 3, 6), y.slice(0, 3, 6));
  const auto g2 = gradsOf(*b);
  EXPECT_EQ(pieces.lossSum, first.lossSum + second.lossSum);
  EXPECT_EQ(pieces.correct, first.correct + second.correct);
  EXPECT_EQ(pieces.samples, 6);
  const auto ga = gradsOf(*a);
  for (size_t i = 0; i < ga.size(); ++i)
    EXPECT_TRUE(at::allclose(ga[i], (g1[i] + g2[i]) / 2, 1e-5, 1e-7)) << "parameter " << i;
  const auto ba = a->buffers(), bb = b->buffers();
  ASSERT_EQ(ba.size(), bb.size());
  bool sawCounter = false;
  for (size_t i = 0; i < ba.size(); ++i) {
    EXPECT_TRUE(at::equal(ba[i], bb[i])) << "buffer " << i;
    if (ba[i].scalar_type() == at::kLong) {
      EXPECT_EQ(ba[i].item<int64_t>(), 2) << "num_batches_tracked: one update per piece";
      sawCounter = true;
    }
  }
  EXPECT_TRUE(sawCounter);
  // Not the whole batch's step: BatchNorm's statistics are the pieces'.
  at::manual_seed(42);
  forwardBackward(*whole, x, y);
  const auto gw = gradsOf(*whole);
  bool differs = false;
  for (size_t i = 0; i < ga.size(); ++i) differs = differs || !at::equal(ga[i], gw[i]);
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace tl::train
