// Test support: with TL_CONSISTENCY_CSV=FILE set, the tests that compare a job's params_sha256
// against its DDP-mode run also append each run's hash to FILE, one row per cell:
//   job,reduction,"cell",params_sha256
// where the job's reference cell is named "ddp ...". bench/consistency/run.sh builds the
// report's bit-equality table from it, so the table is what the tests check. Header-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace tl::testing {

inline void recordConsistencyCells(const std::string& job, const std::string& reduction,
                                   const std::map<std::string, std::string>& hashes) {
  const char* path = std::getenv("TL_CONSISTENCY_CSV");
  if (path == nullptr || *path == '\0') return;
  std::ofstream csv(path, std::ios::app);
  ASSERT_TRUE(csv) << "cannot append to TL_CONSISTENCY_CSV file " << path;
  for (const auto& [cell, hash] : hashes) {
    csv << job << ',' << reduction << ",\"" << cell << "\"," << hash << '\n';
  }
}

}  // namespace tl::testing
