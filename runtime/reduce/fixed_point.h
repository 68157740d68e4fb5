// Fixed-point arithmetic of the exact reduction.
//
// A gradient g of parameter tensor t becomes the integer q = round_half_even(g · 2^e_t), with
// the exponent e_t shared by every process. Integer sums of such q are exact, so they do not
// depend on the order of the additions (how many processes, which collective algorithm). The
// mean is then sum / (N · 2^e_t), rounded once to float32 — correctly rounded, so the result is a
// function of the integer sum alone, whatever the code path (raw CPU loops or ATen ops on any
// device) that computes it.
//
// Each operation has two implementations giving identical bits: a fused loop over raw pointers
// for contiguous CPU float32 tensors (built for the x86-64 baseline and for AVX2, picked at run
// time), and a generic one made of ATen ops (CUDA tensors, strided views).
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace tl::reduce::fixed {

// Largest number of contributions to one step: the scale keeps at least 42 bits per value.
constexpr int64_t kMaxContributions = int64_t(1) << 20;
// The scale puts the largest |g| seen in the previous step just below 2^(valueBits - 8), so a
// step's gradients may grow up to 256x before a quantised value leaves its range.
constexpr int kHeadroomBits = 8;
// When the largest |g| of a tensor would be quantised to fewer than this many bits (gradients
// shrank more than 2^16 in one step), precision would approach float32's: the step is replayed.
constexpr int kMinPrecisionBits = 27;
// Every scale a float32 maximum can ask for is within [-85, 192]; a larger |e| (from a
// checkpoint) is corrupt.
constexpr int kExponentLimit = 300;

// Bound on |q| for N contributions: |q| <= 2^valueBits, so N of them (and every partial sum
// a collective forms) stay below 2^62, and the rounding trick of quantise() stays exact
// (it needs |g · 2^e| <= 2^51).
int valueBits(int64_t contributions);

// The exponent e that puts maxAbs · 2^e in [2^(target-1), 2^target), target = valueBits -
// kHeadroomBits. maxAbs must be positive and finite.
int scaleExponent(double maxAbs, int64_t contributions);

enum class Fit { Ok, Overflow, TooCoarse };
// Whether values up to maxAbs (the step's global maximum) fit the scale 2^e.
Fit checkFit(double maxAbs, int e, int64_t contributions);

// Maxima are returned as float32 bit patterns with the sign cleared: ordered like the
// magnitudes, and >= kInfBits exactly for non-finite values (== Inf, > NaN).
constexpr uint32_t kInfBits = 0x7f800000u;
float magnitudeFromBits(uint32_t bits);

enum class Accumulate {
  MaxOnly,  // only the maximum (no scale known yet)
  Store,    // acc = q (first contribution of a step: no zeroing pass needed)
  Add,      // acc += q
};

// One pass over g: accumulates q into acc (int64, same element count) and returns max |g| as
// bits. Where |g · 2^e| exceeds 2^51 or g is not finite the accumulator gets unspecified values;
// the returned maximum tells the caller, which must then discard the step.
uint32_t quantise(const float* g, int64_t* acc, int64_t count, int e, Accumulate mode);
// Same for any float32 tensor g and int64 tensor acc of the same numel (acc contiguous).
uint32_t quantise(const at::Tensor& g, const at::Tensor& acc, int e, Accumulate mode);

// out[i] = sum[i] / (N · 2^e), correctly rounded to float32 (round half to even).
void dequantiseMean(const int64_t* sum, float* out, int64_t count, int64_t contributions, int e);
// Same for an int64 tensor `sum` (contiguous) and a float32 tensor `out` of the same numel.
void dequantiseMean(const at::Tensor& sum, const at::Tensor& out, int64_t contributions, int e);

// The batched path for device tensors (fixed_point_batch.cpp): several tensors at once, in a
// handful of kernels, and never waiting for the device (no value is read back to the host), so
// that a GPU's queue stays full. Same bits as the functions above.
//
// Quantises grads[i] (float32, any shape, same device) into the consecutive pieces of accFlat
// (contiguous int64, as many elements as the grads together, in order) at scale 2^exponents[i]
// (within +-kExponentLimit), and raises maxBits[i] (int32, contiguous, one per grad, on the
// device) to the grad's max |g| as bits when that is larger. With Accumulate::MaxOnly only the
// maxima change. Empty grads are not allowed.
void quantiseMany(const std::vector<at::Tensor>& grads, const at::Tensor& accFlat,
                  const std::vector<int>& exponents, Accumulate mode, const at::Tensor& maxBits);
// meansFlat = the pieces of sumsFlat (contiguous int64; pieces of `lengths` elements back to
// back) divided by (contributions · 2^exponents[i]), correctly rounded to float32 (meansFlat
// contiguous, as long). Exact only for |sum| <= 2^53: pieces where sumsFitDouble() says
// otherwise must be redone with dequantiseMean().
void dequantiseMeanMany(const at::Tensor& sumsFlat, const at::Tensor& meansFlat,
                        const std::vector<int64_t>& lengths, const std::vector<int>& exponents,
                        int64_t contributions);
// Whether every sum of `contributions` values of at most maxAbs, quantised at 2^e, has
// |sum| <= 2^53 (so converts to double exactly).
bool sumsFitDouble(double maxAbs, int e, int64_t contributions);

// One value, by exact integer arithmetic: the slow path behind dequantiseMean.
float exactMean(int64_t sum, int64_t contributions, int e);

namespace detail {
// The raw loops as compiled for the x86-64 baseline, whatever this CPU has: quantise() and
// dequantiseMean() run an AVX2 build of the same loops where the CPU has AVX2, and the tests
// check that both give the same bits.
uint32_t quantiseBaseline(const float* g, int64_t* acc, int64_t count, int e, Accumulate mode);
void dequantiseMeanBaseline(const int64_t* sum, float* out, int64_t count, int64_t contributions,
                            int e);
}  // namespace detail

}  // namespace tl::reduce::fixed
