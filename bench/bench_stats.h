// Statistics for benchmarks on a noisy machine: configurations are measured in alternating
// rounds, and a figure is reported as the median of its rounds with a distribution-free
// confidence interval, so a difference of a fraction of a percent can be judged against the
// noise instead of read off a single run. Header-only, no dependencies beyond the standard
// library, so torch-free and tl-launch-driving benchmarks alike can use it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tl::bench {

struct MedianCi {
  double median = 0;
  double low = 0;   // the interval [low, high] holds the true median with probability
  double high = 0;  // `confidence` (at least; exactly for continuous data)
  double confidence = 0;
  size_t samples = 0;
};

// The median of `values` and its order-statistics confidence interval: with n samples the
// number below the true median is Binomial(n, 1/2), so [x(k), x(n+1-k)] (1-based, sorted) covers
// it with probability 1 - 2 P(B < k). k is the largest with that probability >= `wanted`; with
// fewer than 6 samples no k reaches 95 %, and the interval is [min, max] with the coverage it
// has (reported in `confidence`).
inline MedianCi medianWithCi(std::vector<double> values, double wanted = 0.95) {
  MedianCi out;
  out.samples = values.size();
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  out.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  // below[k] = P(B < k) for B ~ Binomial(n, 1/2), from the log of the binomial coefficients.
  auto probabilityBelow = [n](size_t k) {
    double sum = 0;
    for (size_t i = 0; i < k; ++i)
      sum += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) -
                      std::lgamma(double(n - i) + 1) - double(n) * std::log(2.0));
    return sum;
  };
  size_t k = 1;
  while (k + 1 <= (n + 1) / 2 && 1 - 2 * probabilityBelow(k + 1) >= wanted) ++k;
  out.low = values[k - 1];
  out.high = values[n - k];
  out.confidence = 1 - 2 * probabilityBelow(k);
  return out;
}

// "12.34 [12.01, 12.80]"; `scale` converts units (1e3 for seconds shown as ms).
inline std::string formatCi(const MedianCi& m, const char* format = "%.2f", double scale = 1) {
  char a[32], b[32], c[32];
  std::snprintf(a, sizeof a, format, m.median * scale);
  std::snprintf(b, sizeof b, format, m.low * scale);
  std::snprintf(c, sizeof c, format, m.high * scale);
  return std::string(a) + " [" + b + ", " + c + "]";
}

// Percent form of a ratio's interval: ratio 1.0123 [1.001, 1.02] -> "+1.23 % [+0.10, +2.00]".
inline std::string formatPercentCi(const MedianCi& ratio) {
  char s[96];
  std::snprintf(s, sizeof s, "%+.2f %% [%+.2f, %+.2f]", 100 * (ratio.median - 1),
                100 * (ratio.low - 1), 100 * (ratio.high - 1));
  return s;
}

// Round r runs the configurations in this order: forward on even rounds, backward on odd ones
// (ABBA), so a drift in machine load over a round weighs on every configuration alike.
inline std::vector<size_t> roundOrder(size_t configurations, size_t round) {
  std::vector<size_t> order(configurations);
  for (size_t i = 0; i < configurations; ++i) order[i] = round % 2 ? configurations - 1 - i : i;
  return order;
}

}  // namespace tl::bench
