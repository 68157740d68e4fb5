// The throughput model of a job as a function of its loader workers:
//
//   rate(w) = min(C, w / (a*w + b))
//
// C: images/s the device consumes when never starved; b: seconds one loader worker spends per
// image when it has the machine to itself; a: how much each extra worker slows every worker
// down (contention), so w / (a*w + b) is what w workers produce together. Fitted from what a
// running job measures, and refitted as measurements come in.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace tl::coordinator {

struct ThroughputModel {
  double a = 0;  // seconds per image added per extra worker
  double b = 0;  // seconds per image of a lone worker
  double computeRate = std::numeric_limits<double>::infinity();  // C, images/s

  // Images/s the loader pool alone produces with `workers` threads (0 workers: 0).
  double loaderRate(double workers) const;
  // Predicted job throughput with `workers` loader threads: min(C, loaderRate(workers)). With 0
  // workers the training thread loads and computes in turn: 1 / (b + 1/C).
  double predict(double workers) const;
};

// One measurement window of a running job.
struct LoaderObservation {
  int workers = 0;            // pool size during the window
  double busySeconds = 0;     // summed over workers: time spent producing samples
  int64_t images = 0;         // images the workers produced
};
struct ComputeObservation {
  double computeSeconds = 0;  // time the device was busy (not waiting for data)
  int64_t images = 0;         // images it consumed
};

// Least-squares fit of a, b from per-worker seconds per image t(w) = a*w + b over the distinct
// pool sizes seen (a = 0 while only one size has been seen), and C from the compute windows.
// Newer windows can outweigh older ones (exponential forgetting) so the model follows a job
// whose behaviour changes.
//
// Each loader window weighs as many images as it produced (its t is an average over them),
// times forgetting^(windows added after it). The fit clamps a >= 0 and b > 0, refitting the
// other coefficient when one is clamped. C = images / seconds over the compute windows, with
// the same forgetting; infinite while no compute time was seen. Windows with no images carry
// no information and are ignored. Not thread-safe: one owner calls everything.
class ThroughputFitter {
 public:
  explicit ThroughputFitter(double forgetting = 1.0);  // 1: keep everything equally
  void addLoader(const LoaderObservation& observation);
  void addCompute(const ComputeObservation& observation);
  bool ready() const;  // at least one loader and one compute window
  ThroughputModel fit() const;
  // How many different pool sizes the remembered loader windows cover; a and b are both
  // identifiable from 2 on.
  int distinctWorkerCounts() const;
  // Adds `delta` to the per-image time of every remembered window (kept above 5% of what it
  // was): the job's cost moved as a whole, the contention slope did not.
  void shiftSecondsPerImage(double delta);

 private:
  struct Point {
    double workers, secondsPerImage, images, decay;
  };
  double forgetting_;
  std::vector<Point> loader_;
  double computeSeconds_ = 0, computeImages_ = 0;
  bool sawCompute_ = false;
};

}  // namespace tl::coordinator
