// The array datasets (tensors, tokens): samples are the files' rows and windows, byte for byte;
// every bad folder is one InputError naming the file or the flag; the synthetic writers and the
// data identity cover the new files.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "common/files.h"
#include "dataload/array_dataset.h"
#include "dataload/data_identity.h"
#include "dataload/synthetic_arrays.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::freshDir;
using testing::inputErrorOf;

template <typename T>
void writeNpy(const std::string& path, ArrayDtype dtype, std::vector<int64_t> shape,
              const std::vector<T>& values) {
  const std::string bytes = encodeNpy(dtype, shape, values.data());
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

struct Sample {
  std::vector<uint8_t> input, target;
};

Sample load(const SampleSource& s, int64_t index) {
  Sample out;
  out.input.resize(size_t(s.inputSpec().bytes()));
  out.target.resize(size_t(s.targetSpec().bytes()));
  std::vector<uint8_t> scratch;
  s.loadSample(0, index, out.input.data(), out.target.data(), scratch);
  return out;
}

template <typename T>
std::vector<T> as(const std::vector<uint8_t>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(TensorsDataset, SamplesAreTheRowsAndIntegerLabelsBecomeInt64) {
  const std::string dir = freshDir("tensors");
  std::vector<uint8_t> x(4 * 2 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = uint8_t(i * 7);
  writeNpy(joinPath(dir, "train_x.npy"), ArrayDtype::UInt8, {4, 2, 3}, x);
  writeNpy(joinPath(dir, "train_y.npy"), ArrayDtype::Int32, {4}, std::vector<int32_t>{2, 0, 5, 1});
  auto s = openArrayDataset("tensors", dir, Split::Train, {});
  EXPECT_EQ(s->size(), 4);
  EXPECT_EQ(s->inputSpec(), (SampleSpec{ArrayDtype::UInt8, {2, 3}}));
  EXPECT_EQ(s->targetSpec(), (SampleSpec{ArrayDtype::Int64, {}}));
  EXPECT_EQ(s->numClasses(), 6);
  for (int64_t i = 0; i < 4; ++i) {
    const Sample got = load(*s, i);
    EXPECT_EQ(got.input, std::vector<uint8_t>(x.begin() + i * 6, x.begin() + i * 6 + 6));
    EXPECT_EQ(as<int64_t>(got.target)[0], (std::vector<int64_t>{2, 0, 5, 1})[size_t(i)]);
  }
}

TEST(TensorsDataset, FloatTargetsStayFloat) {
  const std::string dir = freshDir("regression");
  writeNpy(joinPath(dir, "train_x.npy"), ArrayDtype::Float32, {3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6});
  writeNpy(joinPath(dir, "train_y.npy"), ArrayDtype::Float32, {3, 1}, std::vector<float>{0.5f, -1, 2});
  auto s = openArrayDataset("tensors", dir, Split::Train, {});
  EXPECT_EQ(s->numClasses(), 0);
  EXPECT_EQ(s->targetSpec(), (SampleSpec{ArrayDtype::Float32, {1}}));
  EXPECT_EQ(as<float>(load(*s, 2).target), std::vector<float>{2});
  EXPECT_EQ(as<float>(load(*s, 1).input), (std::vector<float>{3, 4}));
}

TEST(TensorsDataset, BadFoldersNameTheFile) {
  const std::string dir = freshDir("bad_tensors");
  const std::string x = joinPath(dir, "train_x.npy"), y = joinPath(dir, "train_y.npy");
  expectContains(inputErrorOf([&] { openArrayDataset("tensors", dir, Split::Train, {}); }),
                 {"'" + x + "' is missing"});
  writeNpy(x, ArrayDtype::Float32, {3, 2}, std::vector<float>(6, 1.0f));
  writeNpy(y, ArrayDtype::Int64, {4}, std::vector<int64_t>{0, 1, 0, 1});
  expectContains(inputErrorOf([&] { openArrayDataset("tensors", dir, Split::Train, {}); }),
                 {"'" + x + "' and '" + y + "' do not match: 3 samples in x but 4 in y"});
  writeNpy(y, ArrayDtype::Int64, {3}, std::vector<int64_t>{0, -1, 0});
  expectContains(inputErrorOf([&] { openArrayDataset("tensors", dir, Split::Train, {}); }),
                 {"'" + y + "' holds label -1 at element 1"});
  writeNpy(y, ArrayDtype::UInt16, {3}, std::vector<uint16_t>{0, 1, 0});
  expectContains(inputErrorOf([&] { openArrayDataset("tensors", dir, Split::Train, {}); }),
                 {"'" + y + "' holds uint16, which --dataset tensors does not read"});
  ArrayDatasetOptions tokensOnly;
  tokensOnly.seqLen = 4;
  expectContains(inputErrorOf([&] { openArrayDataset("tensors", dir, Split::Train, tokensOnly); }),
                 {"--seq-len and --token-dtype apply to --dataset tokens only"});
}

TEST(TensorsDataset, TestSplitMustLookLikeTheTrainingSplit) {
  const std::string dir = freshDir("splits");
  writeNpy(joinPath(dir, "train_x.npy"), ArrayDtype::Float32, {2, 4}, std::vector<float>(8, 0));
  writeNpy(joinPath(dir, "train_y.npy"), ArrayDtype::Int64, {2}, std::vector<int64_t>{0, 1});
  writeNpy(joinPath(dir, "test_x.npy"), ArrayDtype::Float32, {1, 5}, std::vector<float>(5, 0));
  writeNpy(joinPath(dir, "test_y.npy"), ArrayDtype::Int64, {1}, std::vector<int64_t>{1});
  auto train = openArrayDataset("tensors", dir, Split::Train, {});
  auto test = openArrayDataset("tensors", dir, Split::Test, {});
  expectContains(inputErrorOf([&] { checkSplitsMatch("tensors", *train, *test); }),
                 {"the test samples are float32 (5,) but the training samples float32 (4,)"});
  writeNpy(joinPath(dir, "test_x.npy"), ArrayDtype::Float32, {1, 4}, std::vector<float>(4, 0));
  writeNpy(joinPath(dir, "test_y.npy"), ArrayDtype::Int64, {1}, std::vector<int64_t>{7});
  test = openArrayDataset("tensors", dir, Split::Test, {});
  expectContains(inputErrorOf([&] { checkSplitsMatch("tensors", *train, *test); }),
                 {"the test labels go up to 7 but the training labels only to 1"});
}

TEST(TokensDataset, SampleIIsTheWindowFromISeqLenWithNextTokenTargets) {
  const std::string dir = freshDir("tokens");
  std::vector<int32_t> tokens(23);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(100 + i);
  writeNpy(joinPath(dir, "train.npy"), ArrayDtype::Int32, {23}, tokens);
  ArrayDatasetOptions o;
  o.seqLen = 5;
  auto s = openArrayDataset("tokens", dir, Split::Train, o);
  EXPECT_EQ(s->size(), 4) << "floor((23 - 1) / 5)";
  EXPECT_EQ(s->inputSpec(), (SampleSpec{ArrayDtype::Int64, {5}}));
  EXPECT_EQ(s->targetSpec(), (SampleSpec{ArrayDtype::Int64, {5}}));
  for (int64_t i = 0; i < 4; ++i) {
    const Sample got = load(*s, i);
    std::vector<int64_t> in, next;
    for (int64_t t = 0; t < 5; ++t) {
      in.push_back(100 + i * 5 + t);
      next.push_back(100 + i * 5 + t + 1);
    }
    EXPECT_EQ(as<int64_t>(got.input), in) << "sample " << i;
    EXPECT_EQ(as<int64_t>(got.target), next) << "sample " << i;
  }
  o.seqLen = 22;
  EXPECT_EQ(openArrayDataset("tokens", dir, Split::Train, o)->size(), 1) << "22 + 1 tokens fit";
  o.seqLen = 23;
  expectContains(inputErrorOf([&] { openArrayDataset("tokens", dir, Split::Train, o); }),
                 {"--seq-len 23 is longer than the data", "holds 23 tokens"});
}

TEST(TokensDataset, RawBinFilesNeedTheirWidth) {
  const std::string dir = freshDir("tokens_bin");
  SyntheticTokensOptions w;
  w.trainTokens = 41;
  w.valTokens = 9;
  w.vocab = 300;
  w.format = "uint16";
  writeSyntheticTokens(w, dir);
  ArrayDatasetOptions o;
  o.seqLen = 8;
  expectContains(inputErrorOf([&] { openArrayDataset("tokens", dir, Split::Train, o); }),
                 {"'" + joinPath(dir, "train.bin") + "' is raw", "--token-dtype uint16|uint32"});
  o.tokenDtype = "uint16";
  auto bin = openArrayDataset("tokens", dir, Split::Train, o);
  EXPECT_EQ(bin->size(), 5);
  // The same sequence written as .npy reads as the same samples.
  const std::string npyDir = freshDir("tokens_npy");
  w.format = "npy";
  writeSyntheticTokens(w, npyDir);
  o.tokenDtype.clear();
  auto npy = openArrayDataset("tokens", npyDir, Split::Train, o);
  ASSERT_EQ(npy->size(), 5);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(load(*bin, i).input, load(*npy, i).input);
    EXPECT_EQ(load(*bin, i).target, load(*npy, i).target);
    for (int64_t t : as<int64_t>(load(*npy, i).input)) EXPECT_LT(t, 300);
  }
  o.tokenDtype = "uint32";
  expectContains(inputErrorOf([&] { openArrayDataset("tokens", npyDir, Split::Train, o); }),
                 {"'" + joinPath(npyDir, "train.bin") + "' is missing"});
}

TEST(TokensDataset, NeedsOneFlatIntegerArray) {
  const std::string dir = freshDir("tokens_shape");
  writeNpy(joinPath(dir, "train.npy"), ArrayDtype::Int32, {4, 3}, std::vector<int32_t>(12, 1));
  ArrayDatasetOptions o;
  o.seqLen = 2;
  expectContains(inputErrorOf([&] { openArrayDataset("tokens", dir, Split::Train, o); }),
                 {"must hold one flat array of token ids, but its shape is (4, 3)"});
  writeNpy(joinPath(dir, "train.npy"), ArrayDtype::Float32, {12}, std::vector<float>(12, 1));
  expectContains(inputErrorOf([&] { openArrayDataset("tokens", dir, Split::Train, o); }),
                 {"holds float32: token ids are integers"});
  o.seqLen = 0;
  expectContains(inputErrorOf([&] { openArrayDataset("tokens", dir, Split::Train, o); }),
                 {"--seq-len: --dataset tokens needs the tokens per sample"});
}

TEST(SyntheticArrays, SameSeedSameBytesAndLearnableClasses) {
  const std::string a = freshDir("synth_a"), b = freshDir("synth_b");
  SyntheticTensorsOptions o;
  o.trainSamples = 40;
  o.testSamples = 8;
  o.shape = {2, 4, 4};
  o.classes = 3;
  writeSyntheticTensors(o, a);
  writeSyntheticTensors(o, b);
  for (const char* name : {"train_x.npy", "train_y.npy", "test_x.npy", "test_y.npy"})
    EXPECT_EQ(readFile(joinPath(a, name)), readFile(joinPath(b, name))) << name;
  auto s = openArrayDataset("tensors", a, Split::Train, {});
  EXPECT_EQ(s->inputSpec(), (SampleSpec{ArrayDtype::Float32, {2, 4, 4}}));
  EXPECT_EQ(s->numClasses(), 3);
  // Samples of one class share the sign of every element (the pattern is +-3/4, noise +-1/2).
  std::vector<std::vector<float>> firstOfClass(3);
  for (int64_t i = 0; i < s->size(); ++i) {
    const Sample got = load(*s, i);
    const int64_t label = as<int64_t>(got.target)[0];
    const std::vector<float> x = as<float>(got.input);
    if (firstOfClass[size_t(label)].empty()) firstOfClass[size_t(label)] = x;
    for (size_t e = 0; e < x.size(); ++e)
      ASSERT_EQ(x[e] > 0, firstOfClass[size_t(label)][e] > 0) << "sample " << i << " element " << e;
  }
}

TEST(ArrayDataIdentity, CoversTheArrayFiles) {
  const std::string dir = freshDir("identity");
  SyntheticTensorsOptions o;
  o.trainSamples = 10;
  o.testSamples = 2;
  writeSyntheticTensors(o, dir);
  const DataIdentity before = identifyData("tensors", dir);
  EXPECT_EQ(before.fileCount, 2) << "train_x.npy and train_y.npy";
  o.seed = 1;
  writeSyntheticTensors(o, dir);
  const DataIdentity after = identifyData("tensors", dir);
  EXPECT_NE(before.fingerprint, after.fingerprint);
  EXPECT_EQ(describeDataDifference(before, after), "the same files and sizes, but other contents");

  const std::string tokens = freshDir("identity_tokens");
  SyntheticTokensOptions t;
  t.trainTokens = 100;
  t.valTokens = 10;
  writeSyntheticTokens(t, tokens);
  const DataIdentity tokenId = identifyData("tokens", tokens);
  ASSERT_EQ(tokenId.files.size(), 1u);
  EXPECT_EQ(tokenId.files[0].name, "train.npy");
}

}  // namespace
}  // namespace tl::data
