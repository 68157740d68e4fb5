#include "runtime/optim/decay_groups.h"

#include <regex>

#include "common/check.h"

namespace tl::optim {
namespace {

std::regex compile(const std::string& noDecay) {
  try {
    return std::regex(noDecay, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    inputError("--no-decay '", noDecay, "': not a regular expression (", e.what(), ")");
  }
}

}  // namespace

void checkNoDecayPattern(const std::string& noDecay) { compile(noDecay); }

std::vector<bool> decayMask(const std::vector<NamedShape>& params, const std::string& on,
                            const std::string& noDecay) {
  TL_REQUIRE(on == "all" || on == "matrices", "--weight-decay-on: unknown value '", on,
             "' (expected all or matrices)");
  std::vector<bool> decays;
  decays.reserve(params.size());
  const bool byName = !noDecay.empty();
  const std::regex pattern = byName ? compile(noDecay) : std::regex();
  for (const auto& p : params) {
    bool d = on == "all" || p.dims >= 2;
    if (d && byName && std::regex_search(p.name, pattern)) d = false;
    decays.push_back(d);
  }
  return decays;
}

}  // namespace tl::optim
