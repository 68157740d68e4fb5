// --weight-decay-on and --no-decay: which parameters are in the decayed group.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/check.h"
#include "runtime/optim/decay_groups.h"

namespace tl::optim {
namespace {

// A small GPT's parameters as named_parameters() lists them.
const std::vector<NamedShape> kGpt = {
    {"wte.weight", 2},          {"wpe.weight", 2},           {"blocks.0.ln_1.weight", 1},
    {"blocks.0.ln_1.bias", 1},  {"blocks.0.attn.c_attn.weight", 2}, {"blocks.0.attn.c_attn.bias", 1},
    {"blocks.0.mlp.c_fc.weight", 2}, {"conv.weight", 4},    {"scale", 0}};

TEST(DecayGroups, AllDecaysEverything) {
  EXPECT_EQ(decayMask(kGpt, "all", ""), std::vector<bool>(kGpt.size(), true));
}

TEST(DecayGroups, MatricesAreTheTensorsWithTwoOrMoreDimensions) {
  const std::vector<bool> want = {true, true, false, false, true, false, true, true, false};
  EXPECT_EQ(decayMask(kGpt, "matrices", ""), want);
}

TEST(DecayGroups, NoDecayRemovesMatchingNamesFromEitherRule) {
  // re.search semantics: a match anywhere in the name.
  const std::vector<bool> all = {false, false, true, true, true, true, true, true, true};
  EXPECT_EQ(decayMask(kGpt, "all", "^w[tp]e\\."), all);
  const std::vector<bool> matrices = {true, true, false, false, false, false, true, true, false};
  EXPECT_EQ(decayMask(kGpt, "matrices", "attn"), matrices);
}

TEST(DecayGroups, BadInputNamesTheFlag) {
  try {
    checkNoDecayPattern("blocks.(");
    ADD_FAILURE() << "accepted an unbalanced parenthesis";
  } catch (const tl::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--no-decay 'blocks.('"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decayMask(kGpt, "vectors", ""), tl::InputError);
}

}  // namespace
}  // namespace tl::optim
