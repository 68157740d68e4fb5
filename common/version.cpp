#include "common/version.h"

#include "tl_version_config.h"  // generated at build time by cmake/TlVersion.cmake

namespace tl {

const char* tlVersion() { return TL_VERSION; }

const char* tlGitCommit() { return TL_GIT_COMMIT; }

std::string versionLine(const std::string& program) {
  return program + " " + TL_VERSION + " (git " + TL_GIT_COMMIT + ")";
}

}  // namespace tl
