// The .npy reader: files it writes and NumPy writes read back exactly; one clear InputError
// naming the file for every kind of bad file, including random header mutations.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "common/files.h"
#include "dataload/npy.h"
#include "tests/dataload/test_util.h"

namespace tl::data {
namespace {

using testing::expectContains;
using testing::freshDir;
using testing::inputErrorOf;

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// A hand-made file: magic, version 1.0, the dict (padded to 64 bytes with '\n'), then `data`.
std::string npyWithHeader(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t lengthBytes = major == 1 ? 2 : 4;
  const size_t unpadded = 8 + lengthBytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  for (size_t b = 0; b < lengthBytes; ++b) out += char((header.size() >> (8 * b)) & 0xff);
  return out + header + data;
}

TEST(NpyReader, ReadsWhatItWritesForEveryDtype) {
  const std::string dir = freshDir("roundtrip");
  const std::vector<float> f = {1.5f, -2.25f, 3.0f, 0.0f, 7.0f, -0.5f};
  const std::vector<int64_t> i64 = {-5, 1LL << 40, 3, 4, 5, 6};
  const std::vector<int32_t> i32 = {-7, 8, 9, 10, 11, 12};
  const std::vector<uint8_t> u8 = {0, 255, 3, 4, 5, 6};
  struct Case { ArrayDtype dtype; const void* data; };
  for (const Case& c : {Case{ArrayDtype::Float32, f.data()}, Case{ArrayDtype::Int64, i64.data()},
                        Case{ArrayDtype::Int32, i32.data()}, Case{ArrayDtype::UInt8, u8.data()}}) {
    const std::string path = joinPath(dir, dtypeName(c.dtype) + ".npy");
    const std::string bytes = encodeNpy(c.dtype, {3, 2}, c.data);
    EXPECT_EQ(bytes.size() % 64, (6 * size_t(dtypeBytes(c.dtype))) % 64) << "header padded to 64";
    writeBytes(path, bytes);
    const ArrayFile a = openNpy(path);
    EXPECT_EQ(a.dtype, c.dtype);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(a.rows(), 3);
    EXPECT_EQ(a.rowBytes(), 2 * dtypeBytes(c.dtype));
    EXPECT_EQ(std::memcmp(a.data(), c.data, size_t(6 * dtypeBytes(c.dtype))), 0);
    EXPECT_EQ(std::memcmp(a.row(2), static_cast<const uint8_t*>(c.data) + 4 * dtypeBytes(c.dtype),
                          size_t(a.rowBytes())), 0);
  }
}

TEST(NpyReader, AcceptsTheHeaderVariantsNumPyWrites) {
  const std::string dir = freshDir("variants");
  const std::string data(12, '\x01');
  const std::vector<std::pair<std::string, std::string>> files = {
      {"v1.npy", npyWithHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", data)},
      {"v2.npy", npyWithHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", data, 2)},
      {"v3.npy", npyWithHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", data, 3)},
      {"order.npy", npyWithHeader("{'shape': (3, 1), 'fortran_order': False, 'descr': '<i4'}", data)},
      {"quotes.npy", npyWithHeader("{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (3L,)}", data)},
  };
  for (const auto& [name, bytes] : files) {
    writeBytes(joinPath(dir, name), bytes);
    const ArrayFile a = openNpy(joinPath(dir, name));
    EXPECT_EQ(a.dtype, ArrayDtype::Int32) << name;
    EXPECT_EQ(a.rows(), 3) << name;
  }
}

TEST(NpyReader, OneClearErrorNamingTheFileForEachBadFile) {
  const std::string dir = freshDir("bad");
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string data(16, '\0');
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"fortran.npy", npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data),
       "is in Fortran order"},
      {"object.npy", npyWithHeader("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", data),
       "holds an object dtype"},
      {"bigendian.npy", npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", data),
       "is big-endian"},
      {"float64.npy", npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", data),
       "has dtype '<f8', which tl does not read"},
      {"structured.npy", npyWithHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", data),
       "a structured dtype"},
      {"short.npy", npyWithHeader(ok, data.substr(0, 15)), "is truncated: "},
      {"long.npy", npyWithHeader(ok, data + "x"), "is corrupt: 1 bytes follow"},
      {"magic.npy", "PK\x03\x04 not numpy at all", "is not a .npy file"},
      {"version.npy", std::string("\x93NUMPY\x04\x00", 8) + "xx", "has format version 4.0"},
      {"headerlen.npy", npyWithHeader(ok, data).substr(0, 40), "-byte header"},
      {"nokey.npy", npyWithHeader("{'descr': '<f4', 'shape': (4,), }", data), "no 'fortran_order' key"},
      {"extrakey.npy", npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", data),
       "is not a string, True/False or a tuple"},
      {"twice.npy", npyWithHeader("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", data),
       "key 'descr' appears twice"},
      {"scalar.npy", npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", data.substr(0, 4)),
       "holds a single value (shape ())"},
      {"empty.npy", "", "is empty (0 bytes)"},
  };
  for (const auto& [name, bytes, message] : cases) {
    const std::string path = joinPath(dir, name);
    writeBytes(path, bytes);
    const std::string error = inputErrorOf([&] { openNpy(path); });
    expectContains(error, {"'" + path + "'", message});
  }
}

TEST(NpyReader, RefusesWhatIsNotARegularFile) {
  const std::string dir = freshDir("irregular");
  expectContains(inputErrorOf([&] { openNpy(dir); }), {"'" + dir + "' is not a regular file", "folder"});
  const std::string fifo = joinPath(dir, "pipe.npy");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expectContains(inputErrorOf([&] { openNpy(fifo); }), {"'" + fifo + "' is not a regular file"});
  const std::string missing = joinPath(dir, "missing.npy");
  expectContains(inputErrorOf([&] { openNpy(missing); }), {"'" + missing + "' is missing"});
}

TEST(NpyReader, RawArraysHoldWholeElements) {
  const std::string dir = freshDir("raw");
  const std::string path = joinPath(dir, "t.bin");
  writeBytes(path, std::string("\x01\x00\x02\x01\xff\xff", 6));
  const ArrayFile a = openRawArray(path, ArrayDtype::UInt16);
  ASSERT_EQ(a.shape, std::vector<int64_t>{3});
  uint16_t second = 0;
  std::memcpy(&second, a.row(1), 2);
  EXPECT_EQ(second, 0x0102);
  expectContains(inputErrorOf([&] { openRawArray(path, ArrayDtype::UInt32); }),
                 {"'" + path + "'", "6 bytes, not a whole number of uint32 values"});
}

// Random mutations of a valid file (bytes changed, inserted, removed, the file cut): each one
// reads as some array that fits the file exactly, or fails with an InputError naming the file.
TEST(NpyReader, FuzzedHeadersReadOrFailCleanly) {
  const std::string dir = freshDir("fuzz");
  const std::vector<float> values(24, 1.0f);
  const std::string good = encodeNpy(ArrayDtype::Float32, {2, 3, 4}, values.data());
  std::mt19937_64 rng(1234);
  int parsed = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = good;
    const int edits = 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = size_t(rng() % 128);  // the header
      switch (rng() % 4) {
        case 0: bytes[at] = char(rng() % 256); break;
        case 1: bytes[at] = "0123456789(),:'{} TrueFalse<>|uifO\n"[rng() % 35]; break;
        case 2: bytes.insert(at, 1, char(rng() % 256)); break;
        case 3: bytes.erase(at, 1); break;
      }
    }
    if (rng() % 8 == 0) bytes.resize(size_t(rng() % bytes.size()));
    try {
      const NpyHeader h = parseNpyHeader("fuzz.npy", reinterpret_cast<const uint8_t*>(bytes.data()),
                                         int64_t(bytes.size()));
      int64_t elements = 1;
      for (int64_t d : h.shape) elements *= d;
      ASSERT_EQ(h.dataOffset + elements * dtypeBytes(h.dtype), int64_t(bytes.size()));
      ++parsed;
    } catch (const InputError& e) {
      ASSERT_NE(std::string(e.what()).find("'fuzz.npy'"), std::string::npos) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 2500);
  EXPECT_GT(parsed, 0) << "some mutations (padding, shape order) leave a valid file";
}

// A file NumPy itself wrote, when Debian's python3 has numpy.
TEST(NpyReader, ReadsAFileNumPyWrote) {
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "numpy is not installed for /usr/bin/python3";
  }
  const std::string dir = freshDir("numpy");
  const std::string script =
      "import numpy as np\n"
      "np.save('" + dir + "/f.npy', np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4)\n"
      "np.save('" + dir + "/i.npy', np.arange(5, dtype=np.int64) - 2)\n"
      "np.save('" + dir + "/fortran.npy', np.asfortranarray(np.ones((3, 2), dtype=np.float32)))\n"
      "np.save('" + dir + "/object.npy', np.array([{'a': 1}], dtype=object), allow_pickle=True)\n";
  writeBytes(joinPath(dir, "make.py"), script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + dir + "/make.py").c_str()), 0);
  const ArrayFile f = openNpy(joinPath(dir, "f.npy"));
  ASSERT_EQ(f.dtype, ArrayDtype::Float32);
  ASSERT_EQ(f.shape, (std::vector<int64_t>{2, 3, 4}));
  for (int i = 0; i < 24; ++i) {
    float v = 0;
    std::memcpy(&v, f.data() + 4 * i, 4);
    EXPECT_EQ(v, float(i) / 4);
  }
  const ArrayFile i = openNpy(joinPath(dir, "i.npy"));
  ASSERT_EQ(i.dtype, ArrayDtype::Int64);
  int64_t first = 0;
  std::memcpy(&first, i.data(), 8);
  EXPECT_EQ(first, -2);
  expectContains(inputErrorOf([&] { openNpy(joinPath(dir, "fortran.npy")); }), {"Fortran order"});
  expectContains(inputErrorOf([&] { openNpy(joinPath(dir, "object.npy")); }), {"object dtype"});
}

}  // namespace
}  // namespace tl::data
