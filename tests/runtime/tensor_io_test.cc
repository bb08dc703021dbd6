// runtime/tensor_io.cc: tensor files, read and written.
#include "runtime/tensor_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "runtime/element.h"

namespace onnx_mini {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TensorFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onnx_mini_io_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(TensorFiles, NpyAndTensorProtoRoundTrip) {
  for (const Shape& shape : {Shape{}, Shape{3}, Shape{2, 3}, Shape{2, 0, 4}}) {
    for (DType dtype : {DType::kFloat, DType::kInt8, DType::kBool, DType::kFloat16, DType::kInt64}) {
      Tensor t = Tensor::Zeros(dtype, shape);
      for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, double(i % 2));
      for (const char* name : {"t.npy", "t.pb"}) {
        ASSERT_TRUE(WriteTensorFile(Path(name), t, "t").ok());
        absl::StatusOr<NamedTensorFile> back = ReadTensorFile(Path(name));
        ASSERT_TRUE(back.ok()) << back.status();
        EXPECT_EQ(back->tensor.dtype(), dtype) << name;
        EXPECT_EQ(back->tensor.shape(), shape) << name;
        for (int64_t i = 0; i < t.size(); ++i) EXPECT_EQ(GetDouble(back->tensor, i), double(i % 2));
      }
    }
  }
  // .npy data starts 64-byte aligned.
  ASSERT_TRUE(WriteTensorFile(Path("a.npy"), Tensor::Zeros(DType::kFloat, {5}), "").ok());
  EXPECT_EQ(fs::file_size(Path("a.npy")) % 64, 20u);
  EXPECT_THAT(std::string(WriteTensorFile(Path("b.npy"), Tensor::Zeros(DType::kBFloat16, {1}), "").message()),
              HasSubstr(".npy has no type for bfloat16"));
}

TEST_F(TensorFiles, TensorsOver2GiBDoNotFitATensorProto) {
  // A protobuf message is limited to 2 GiB: such outputs go to .npy.
  char byte = 0;
  const Tensor small = Tensor::Borrow(DType::kFloat, {1 << 28}, &byte);  // 1 GiB, only looked at
  const Tensor large = Tensor::Borrow(DType::kFloat, {int64_t(1) << 29}, &byte);  // 2 GiB
  EXPECT_TRUE(FitsTensorProto(small));
  EXPECT_FALSE(FitsTensorProto(large));
  absl::Status s = WriteTensorFile(Path("large.pb"), large, "y");
  EXPECT_THAT(std::string(s.message()), HasSubstr("does not fit a TensorProto (2 GiB)"));
  EXPECT_FALSE(fs::exists(Path("large.pb")));
}

// A .npy file from its header dict and data bytes (version 1.0).
std::string Npy(std::string dict, const std::string& data) {
  dict.resize(117, ' ');
  return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + "\n" + data;
}

TEST(Npy, HeaderIsStrictAndBoolsAreNormalised) {
  // Found by fuzz-tensor_file: a bool byte of 10 was kept (undefined to read as
  // bool), and a header without 'shape' was read as a scalar.
  absl::StatusOr<Tensor> t = ParseNpy(Npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x0a\x00", 2)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<uint8_t>()[0], 1);
  EXPECT_EQ(t->data<uint8_t>()[1], 0);
  EXPECT_THAT(std::string(ParseNpy(Npy("{'descr': '|b1', 'fortran_order': False, }", "\x01")).status().message()),
              HasSubstr("no shape"));
  for (const char* dims : {"(-1,)", "(2x,)", "(99999999999999999999,)", "(1e3,)"})
    EXPECT_THAT(std::string(ParseNpy(Npy(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + dims + ", }", ""))
                                .status().message()),
                HasSubstr("bad dim")) << dims;
}

}  // namespace
}  // namespace onnx_mini
