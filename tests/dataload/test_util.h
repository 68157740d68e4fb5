// Helpers shared by the dataload tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/check.h"

namespace tl::data::testing {

// A fresh, empty folder under $TL_TEST_TMP (set by CTest), unique per test.
inline std::string freshDir(const std::string& name) {
  const char* base = std::getenv("TL_TEST_TMP");
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string testName = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  auto dir = std::filesystem::path(base ? base : "/tmp") / "dataload" / (testName + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Runs `body` and returns the InputError message it throws; fails the test if it throws
// nothing or something else.
template <typename Body>
std::string inputErrorOf(Body&& body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected tl::InputError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected tl::InputError, got none";
  return "";
}

// EXPECT that `text` contains every one of `parts`.
inline void expectContains(const std::string& text, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' missing from: " << text;
  }
}

}  // namespace tl::data::testing
