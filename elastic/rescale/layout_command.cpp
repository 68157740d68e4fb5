#include "elastic/rescale/layout_command.h"

#include "common/check.h"

namespace tl::elastic {

bool LayoutCommand::operator==(const LayoutCommand& o) const {
  return kind == o.kind && joiners == o.joiners && target == o.target && leave == o.leave &&
         checkpoint == o.checkpoint && current == o.current && timeSteps == o.timeSteps;
}

nlohmann::json toJson(const LayoutCommand& c) {
  nlohmann::json j = {{"kind", int64_t(c.kind)}, {"joiners", c.joiners}, {"target", c.target},
                      {"leave", c.leave},        {"current", c.current}, {"checkpoint", c.checkpoint}};
  if (c.timeSteps) j["time_steps"] = true;  // absent otherwise: the boundary broadcast stays as small
  return j;
}

LayoutCommand layoutCommandFromJson(const nlohmann::json& j) {
  LayoutCommand c;
  try {
    const int64_t kind = j.at("kind").get<int64_t>();
    TL_CHECK(kind >= LayoutCommand::None && kind <= LayoutCommand::Stop, "layout command: unknown kind ", kind);
    c.kind = LayoutCommand::Kind(kind);
    c.joiners = j.at("joiners").get<int64_t>();
    c.target = j.at("target").get<std::vector<int>>();
    c.leave = j.at("leave").get<std::vector<int>>();
    c.current = j.at("current").get<std::vector<int>>();
    c.checkpoint = j.at("checkpoint").get<bool>();
    c.timeSteps = j.value("time_steps", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(str("layout command: ", e.what()));
  }
  return c;
}

}  // namespace tl::elastic
