// The layout command's one encoding (elastic/rescale/layout_command.h) and the host lookup that
// keeps name resolution off the training thread (elastic/rescale/host_lookup.h).
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "common/check.h"
#include "elastic/rescale/host_lookup.h"
#include "elastic/rescale/layout_command.h"

namespace tl::elastic {
namespace {

TEST(LayoutCommand, EveryKindSurvivesItsJsonRoundTrip) {
  LayoutCommand grow;
  grow.kind = LayoutCommand::Rescale;
  grow.joiners = 2;
  grow.target = {2, 1, 1, 1, 1};
  grow.leave = {0, 1, 0, 0, 0};
  grow.current = {3, 3};
  LayoutCommand stop;
  stop.kind = LayoutCommand::Stop;
  stop.checkpoint = true;
  LayoutCommand move;
  move.kind = LayoutCommand::Placement;
  move.target = {3, 1};
  move.leave = {0, 0};
  for (const LayoutCommand& c : {grow, stop, move, LayoutCommand()}) {
    const LayoutCommand back = layoutCommandFromJson(nlohmann::json::parse(toJson(c).dump()));
    EXPECT_TRUE(back == c) << toJson(c).dump() << " came back as " << toJson(back).dump();
  }
}

TEST(LayoutCommand, ABrokenCommandIsAnErrorNamingWhatIsWrong) {
  LayoutCommand c;
  c.kind = LayoutCommand::Placement;
  nlohmann::json noLeave = toJson(c);
  noLeave.erase("leave");
  nlohmann::json badKind = toJson(c);
  badKind["kind"] = 9;
  nlohmann::json badTarget = toJson(c);
  badTarget["target"] = "2,2";
  for (const auto& [json, says] : {std::pair{noLeave, "leave"}, std::pair{badKind, "unknown kind 9"},
                                   std::pair{badTarget, "layout command"}}) {
    try {
      layoutCommandFromJson(json);
      ADD_FAILURE() << json.dump() << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

UnreachableHosts lookUp(std::vector<std::string> hosts) {
  HostLookup lookup(std::move(hosts));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!lookup.done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(lookup.done());
  return lookup.unreachable();
}

TEST(HostLookup, NamesTheHostsThatDoNotResolve) {
  const UnreachableHosts found = lookUp({"localhost", "no-such-host.invalid", "localhost"});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.count("no-such-host.invalid"), 1u);
  EXPECT_FALSE(found.at("no-such-host.invalid").empty());
  EXPECT_TRUE(lookUp({"localhost"}).empty());
}

}  // namespace
}  // namespace tl::elastic
