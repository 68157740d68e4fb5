// End-to-end: tl-submit running real tl-launch jobs under mpirun on small synthetic CIFAR data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "tools/submit/csv.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::CommandResult;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gDataDir;

struct ReportRow {
  std::map<std::string, std::string> field;
  double num(const std::string& name) const { return std::stod(field.at(name)); }
};

std::vector<ReportRow> readReport(const std::string& path) {
  auto records = tl::submit::parseCsv(slurp(path), path);
  std::vector<ReportRow> rows;
  for (size_t i = 1; i < records.size(); ++i) {
    ReportRow row;
    for (size_t c = 0; c < records[0].fields.size(); ++c)
      row.field[records[0].fields[c]] = records[i].fields.at(c);
    rows.push_back(row);
  }
  return rows;
}

class SubmitE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gDataDir = freshDir("submit_data");
    auto r = runCommand(
        std::string(TL_DATA_BIN) + " synth --out " + gDataDir + " --train 256 --test 64 --seed 1",
        120, freshDir("submit_data_gen"));
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // A table of tiny cnn jobs; `dataDirs[i]` is job i's data folder.
  static std::string table(const std::string& work, const std::vector<std::string>& dataDirs,
                           double interval) {
    std::string csv =
        "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device,processes,"
        "dataset,data_dir,steps,extra\n";
    for (size_t i = 0; i < dataDirs.size(); ++i) {
      csv += "cnn,,16," + std::to_string(i % 2) + "," + work + "/job" + std::to_string(i) + "," +
             std::to_string(21000 + 32 * i) + "," + std::to_string(interval) + ",," +
             std::to_string(1 + i % 2) + ",cifar10," + dataDirs[i] + ",3,\"--log-every 0 --seed " +
             std::to_string(i) + "\"\n";
    }
    std::string path = work + "/jobs.csv";
    std::ofstream(path) << csv;
    return path;
  }

  static CommandResult submit(const std::string& work, const std::string& jobs,
                              const std::string& flags) {
    return runCommand(std::string(TL_SUBMIT_BIN) + " " + jobs + " --oversubscribe --report " +
                          work + "/report.csv " + flags,
                      300, work);
  }
};

TEST_F(SubmitE2E, SequentialJobsRunOneAfterAnother) {
  auto work = freshDir("submit_seq");
  auto r = submit(work, table(work, {gDataDir, gDataDir, gDataDir}, 0.5), "");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  auto rows = readReport(work + "/report.csv");
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].field["exit_status"], "0");
    EXPECT_EQ(rows[i].field["job"], "job" + std::to_string(i));
    EXPECT_GT(rows[i].num("images_per_s"), 0);
    EXPECT_GT(rows[i].num("final_loss"), 0);
    EXPECT_GT(rows[i].num("completion_s"), 0);
    EXPECT_TRUE(std::filesystem::exists(work + "/job" + std::to_string(i) + "/job.log"));
    if (i == 0) continue;
    EXPECT_GE(rows[i].num("start_s"), rows[i - 1].num("end_s")) << "sequential jobs overlap";
    EXPECT_GE(rows[i].num("start_s") - rows[i - 1].num("start_s"), 0.5 - 0.01);
  }
  EXPECT_GE(rows[0].num("start_s"), 0.5 - 0.01) << "the first job waits its interval too";
  EXPECT_NE(r.out.find("completion s"), std::string::npos) << "no table on stdout:\n" << r.out;
  EXPECT_NE(r.out.find("job2"), std::string::npos) << r.out;
}

TEST_F(SubmitE2E, BackgroundJobsOverlapAndKeepTheirInterval) {
  auto work = freshDir("submit_bg");
  auto r = submit(work, table(work, {gDataDir, gDataDir, gDataDir}, 0.4), "--background");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  auto rows = readReport(work + "/report.csv");
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].field["exit_status"], "0");
    EXPECT_GT(rows[i].num("images_per_s"), 0);
    if (i == 0) continue;
    double gap = rows[i].num("start_s") - rows[i - 1].num("start_s");
    EXPECT_GE(gap, 0.4 - 0.01);
    EXPECT_LT(gap, 0.4 + 1.0) << "background submissions should not wait for earlier jobs";
  }
  EXPECT_LT(rows[1].num("start_s"), rows[0].num("end_s")) << "background jobs should overlap";
  EXPECT_LT(rows[2].num("start_s"), rows[0].num("end_s")) << "background jobs should overlap";
}

// A job that fails while it runs: its status and its error line are reported, and the other
// jobs still run. (The failure comes from an mpirun wrapper: everything a table can say wrong
// is found before anything starts.)
TEST_F(SubmitE2E, AFailingJobShowsItsStatusAndErrorAndTheOthersStillRun) {
  auto work = freshDir("submit_fail");
  const std::string wrapper = work + "/mpirun-wrapper.sh";
  std::ofstream(wrapper)
      << "#!/bin/sh\n"
         "case \"$*\" in *" +
             work +
             "/job1\\ *)\n"
             "  echo 'training...'; echo 'tl-launch: error: rank 0: disk full' >&2; exit 1;;\n"
             "esac\n"
             "exec " TL_MPIEXEC " \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  auto r = submit(work, table(work, {gDataDir, gDataDir, gDataDir}, 0),
                  "--background --mpirun " + wrapper);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  auto rows = readReport(work + "/report.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].field["exit_status"], "0");
  EXPECT_EQ(rows[1].field["exit_status"], "1");
  EXPECT_EQ(rows[1].field["images_per_s"], "") << "a failed job has no numbers";
  EXPECT_EQ(rows[1].field["final_loss"], "");
  EXPECT_EQ(rows[2].field["exit_status"], "0");
  EXPECT_NE(r.out.find("tl-launch: error: rank 0: disk full"), std::string::npos)
      << "tl-submit should say why job1 failed, not only where its log is:\n"
      << r.out;
}

// A row tl-launch would refuse (a depth that is not 6n+2, a missing data folder) is found by
// tl-launch's own check of every row before any job starts, with its line and the reason.
TEST_F(SubmitE2E, JobsTlLaunchWouldRefuseStopTheTableBeforeAnythingStarts) {
  auto work = freshDir("submit_refused");
  std::string jobs = table(work, {gDataDir, gDataDir, work + "/no-such-data"}, 0);
  std::string text = slurp(jobs);
  text.replace(text.find("\ncnn,,16,1,"), 11, "\nresnet7,,16,1,");  // line 3: job1
  std::ofstream(jobs) << text;
  auto r = submit(work, jobs, "--background");
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(jobs + ":3: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("depth 7 is not of the form 6n+2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(jobs + ":4: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(work + "/no-such-data"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(work + "/job0")) << "nothing may start";
  EXPECT_FALSE(std::filesystem::exists(work + "/report.csv"));
}

// Flags may come before or after the table: --background takes effect either way (it makes
// overlapping port ranges an error), and errors name the program once.
TEST_F(SubmitE2E, FlagsBeforeOrAfterTheTable) {
  auto work = freshDir("submit_flag_order");
  const std::string jobs = work + "/jobs.csv";
  std::ofstream(jobs) << "arch,depth,batch,workers,output_folder,port,submit_interval,cuda_device\n"
                         "cnn,,16,0,a,21000,0,\ncnn,,16,0,b,21010,0,\n";
  const std::string bin = TL_SUBMIT_BIN;
  auto run = [&](const std::string& args) { return runCommand(bin + " " + args, 60, work); };

  auto oneAfterAnother = run(jobs + " --dry-run");
  EXPECT_EQ(oneAfterAnother.exitCode, 0) << oneAfterAnother.err;
  EXPECT_NE(oneAfterAnother.out.find("job a (line 2): "), std::string::npos) << oneAfterAnother.out;
  const std::string overlap = "jobs run at the same time with --background";
  for (const std::string& args :
       {"--background --dry-run " + jobs, jobs + " --background --dry-run",
        "--dry-run " + jobs + " --background", "--background --jobs " + jobs + " --dry-run"}) {
    auto r = run(args);
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(jobs + ":3: port: range 21010-21041 overlaps"), std::string::npos)
        << args << "\n"
        << r.err;
    EXPECT_NE(r.err.find(overlap), std::string::npos) << args;
  }

  auto unknown = run("--colour red " + jobs);
  EXPECT_EQ(unknown.exitCode, 2);
  EXPECT_EQ(unknown.err, "tl-submit: error: unknown flag '--colour' (see tl-submit --help)\n");
  auto twice = run(jobs + " --jobs " + jobs);
  EXPECT_EQ(twice.exitCode, 2);
  EXPECT_EQ(twice.err, "tl-submit: error: --jobs is given twice\n");
  auto badValue = run(jobs + " --port-range 0 --dry-run");
  EXPECT_EQ(badValue.exitCode, 2);
  EXPECT_EQ(badValue.err, "tl-submit: error: --port-range: must be between 1 and 10000, got 0\n");
  auto noTable = run("--background");
  EXPECT_EQ(noTable.exitCode, 2);
  EXPECT_NE(noTable.err.find("tl-submit: error: no job table"), std::string::npos) << noTable.err;
  auto help = run("--help");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("--background"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("Required columns"), std::string::npos) << help.out;
}

TEST_F(SubmitE2E, AMalformedTableStartsNothing) {
  auto work = freshDir("submit_bad");
  std::string jobs = table(work, {gDataDir, gDataDir}, 0);
  std::string text = slurp(jobs);
  text.replace(text.find("cnn,,16,1,"), 10, "cnn,,16,x,");  // line 3: job1's workers
  std::ofstream(jobs) << text;
  auto r = submit(work, jobs, "");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find(jobs + ":3: workers: expected a number or 'auto', got 'x'"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(work + "/job0")) << "nothing may start";
  EXPECT_FALSE(std::filesystem::exists(work + "/report.csv"));
}

TEST_F(SubmitE2E, CtrlCStopsNewJobsAndEndsTheRunningOne) {
  auto work = freshDir("submit_int");
  std::string jobs = table(work, {gDataDir, gDataDir}, 0);
  std::string text = slurp(jobs);
  text.replace(text.find(",3,\"--log-every"), 15, ",100000,\"--log-every");  // job0 runs long
  std::ofstream(jobs) << text;
  // bash gives a background job SIG_IGN for SIGINT; tl-submit installs its own handler anyway.
  std::string cmd = "bash -c '" + std::string(TL_SUBMIT_BIN) + " " + jobs +
                    " --oversubscribe --report " + work +
                    "/report.csv & pid=$!; sleep 4; kill -INT $pid; wait $pid'";
  auto r = runCommand(cmd, 120, work);
  EXPECT_EQ(r.exitCode, 130) << r.out << r.err;
  EXPECT_LT(r.seconds, 60);
  auto rows = readReport(work + "/report.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].field["exit_status"], "0");
  EXPECT_EQ(rows[1].field["exit_status"], "interrupted before start");
  EXPECT_FALSE(std::filesystem::exists(work + "/job1"));
}

}  // namespace
