// The version of this tl build: the project's release (CMakeLists.txt project(VERSION)) and the
// git commit it was built from ("unknown" outside a checkout). Torch-free (tl_version).
#pragma once

#include <string>

namespace tl {

// "0.9.0"
const char* tlVersion();
// "abc1234", "abc1234-dirty", or "unknown"
const char* tlGitCommit();
// "<program> 0.9.0 (git abc1234)": what every tool's --version prints.
std::string versionLine(const std::string& program);

}  // namespace tl
