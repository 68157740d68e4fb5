// tl-submit's report: one row per job with start, end, completion time, images/s, final loss
// and exit status, as CSV (for scripts) and as an aligned table (for people).
#pragma once

#include <string>
#include <vector>

#include "tools/submit/dispatcher.h"
#include "tools/submit/job_table.h"

namespace tl::submit {

// Columns: job,line,output_folder,start,end,start_s,end_s,completion_s,images_per_s,
// final_loss,exit_status. start/end are local times with milliseconds; start_s/end_s are
// seconds since tl-submit began. A job that did not end with status 0 has empty numbers.
std::string reportCsv(const std::vector<SubmitJob>& jobs, const std::vector<JobOutcome>& outcomes);
std::string reportTable(const std::vector<SubmitJob>& jobs,
                        const std::vector<JobOutcome>& outcomes);

// "2024-05-01 12:00:01.234" in local time.
std::string localTimeText(std::chrono::system_clock::time_point t);

}  // namespace tl::submit
