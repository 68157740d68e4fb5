#include "common/cli/host_list.h"

#include "common/check.h"
#include "common/cli/cli.h"

namespace tl::cli {

std::vector<HostSlots> parseHostList(const std::string& text, const std::string& flag, HostListRules rules) {
  const std::string form = rules.countRequired ? "HOST:N" : "HOST[:N]";
  TL_REQUIRE(!text.empty() && text.back() != ',', flag, ": expected ", form, "[,", form, "...], got '", text, "'");
  std::vector<HostSlots> out;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t colon = item.rfind(':');
    TL_REQUIRE(!item.empty() && (colon != std::string::npos || !rules.countRequired), flag, ": expected ", form,
               ", got '", item, "'");
    HostSlots h;
    h.host = item.substr(0, colon);
    TL_REQUIRE(validHostName(h.host), flag, ": '", h.host, "' is not a host name (1-", kMaxHostNameBytes,
               " characters of A-Z a-z 0-9 . - _)");
    if (colon != std::string::npos) {
      const int64_t count = parseInt(item.substr(colon + 1), flag + " " + h.host);
      TL_REQUIRE(count >= 1 && count <= rules.maxCount, flag, ": ", h.host, ":", count,
                 ", the count must be between 1 and ", rules.maxCount);
      h.count = int(count);
    }
    out.push_back(h);
    start = end + 1;
  }
  return out;
}

}  // namespace tl::cli
