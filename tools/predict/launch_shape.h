// tl-predict's job described by a tl-launch command line (`tl-predict ... -- <tl-launch flags>`),
// parsed by tl-launch's own flag table (tl_job_flags), so a user asks about exactly the job
// they would launch. The data set is opened, as the job would open it, for the model's input
// geometry and, with --epochs, the number of steps.
#pragma once

#include <string>
#include <vector>

#include "tools/predict/analytic.h"

namespace tl::predict {

struct LaunchShape {
  JobShape shape;
  // Given flags that change what the job uses but that the prediction leaves out, as given
  // ("--workers 4", "--eval"), in the order of tl-launch's --help.
  std::vector<std::string> unmodelled;
};

// `processes`: the job's processes (mpirun -np); 0 takes them from --placement, else 1.
// InputError naming the flag: tl-launch's own errors for its flags, and "--processes 3 differs
// from the 2 processes of --placement 2,1".
LaunchShape shapeFromLaunchFlags(const std::vector<std::string>& launchArgs, int processes);

// "not modelled (predicted as if not given): --workers 4, --eval"; "" when nothing is left out.
std::string unmodelledLine(const std::vector<std::string>& unmodelled);

}  // namespace tl::predict
