#include <gtest/gtest.h>

#include "common/check.h"
#include "est/placement.h"

namespace {

using tl::est::Placement;

std::string errorOf(const std::vector<int64_t>& counts, int n, int p) {
  try {
    Placement::explicitCounts(counts, n, p);
  } catch (const tl::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Placement, EvenSpreadsInRankOrder) {
  auto p = Placement::even(7, 3);
  EXPECT_EQ(p.toString(), "3,2,2");
  EXPECT_EQ(p.first(0), 0);
  EXPECT_EQ(p.first(1), 3);
  EXPECT_EQ(p.first(2), 5);
  EXPECT_EQ(p.owner(0), 0);
  EXPECT_EQ(p.owner(3), 1);
  EXPECT_EQ(p.owner(6), 2);
  EXPECT_EQ(p.localEsts(1), (std::vector<int>{3, 4}));
  EXPECT_EQ(Placement::even(4, 4).toString(), "1,1,1,1");
  EXPECT_EQ(Placement::even(4, 1).toString(), "4");
}

TEST(Placement, ExplicitCounts) {
  auto p = Placement::explicitCounts({2, 1, 1}, 4, 3);
  EXPECT_EQ(p.localEsts(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(p.localEsts(2), (std::vector<int>{3}));
  EXPECT_EQ(p.owner(2), 1);
}

TEST(Placement, ImpossiblePlacementsNameTheProblem) {
  EXPECT_NE(errorOf({2, 1}, 4, 2).find("places 3 logical workers but the job has 4"), std::string::npos);
  EXPECT_NE(errorOf({2, 0, 2}, 4, 3).find("entry 2 is 0"), std::string::npos);
  EXPECT_NE(errorOf({1, 1, 1, 1}, 4, 3).find("has 4 entries but the job runs on 3 processes"), std::string::npos);
  EXPECT_NE(errorOf({4}, 4, 2).find("has 1 entries but the job runs on 2 processes"), std::string::npos);
  EXPECT_THROW(Placement::even(2, 3), tl::InputError);
  EXPECT_THROW(Placement::even(0, 1), tl::InputError);
}

TEST(Placement, IdleMembersHoldNoEst) {
  auto p = Placement::withIdleMembers({0, 2, 0, 2});
  EXPECT_EQ(p.processes(), 4);
  EXPECT_EQ(p.logicalWorkers(), 4);
  EXPECT_TRUE(p.localEsts(0).empty());
  EXPECT_EQ(p.localEsts(1), (std::vector<int>{0, 1}));
  EXPECT_EQ(p.localEsts(3), (std::vector<int>{2, 3}));
  EXPECT_EQ(p.owner(0), 1);  // the buffer root follows EST 0
  EXPECT_EQ(p.owner(2), 3);
  EXPECT_EQ(p.toString(), "0,2,0,2");
  EXPECT_THROW(Placement::withIdleMembers({0, 0}), tl::Error);
  EXPECT_THROW(Placement::withIdleMembers({2, -1, 3}), tl::Error);
}

}  // namespace
