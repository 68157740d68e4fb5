// A step's loss and accuracy read later (runtime/train/step.h, resolvePending): on a GPU the
// values stay on the device until every EST's are read at once; the numbers must be those a
// read of each would give.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

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
