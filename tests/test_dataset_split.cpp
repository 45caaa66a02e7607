// The split `tunecast eval` uses must be the trainer's (tools/tunecast_train/data.py split_of):
// the expected values below were computed by that Python function.
#include <doctest.h>

#include <cstdio>
#include <string>

#include "tunecast/codegen/dataset_split.h"
#include "tunecast/codegen/perfdb.h"

namespace {

tunecast::Problem problem_with_batch(int n) {
  tunecast::Problem p;
  const std::string text = "dir=F,dtype=FP32,n=" + std::to_string(n) +
                           ",c=64,k=128,h=28,w=28,y=1,x=1,stride_d=1,dil_d=1";  // the trainer's test descriptor
  REQUIRE(tunecast::parse_problem(text, &p).is_ok());
  return p;
}

}  // namespace

TEST_CASE("dataset split: sha256, the perf-DB descriptor and the 80/10/10 split match the trainer") {
  const auto digest = tunecast::codegen::sha256("abc");
  std::string hex;
  for (uint8_t byte : digest) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", byte);
    hex += two;
  }
  CHECK(hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  CHECK(tunecast::perf_db_descriptor(problem_with_batch(16)) ==
        "layout=NCHW;data_type=FP32;direction=F;spatial_dim=2;in_channels=64;in_h=28;in_w=28;"
        "in_d=1;fil_h=1;fil_w=1;fil_d=1;out_channels=128;batchsize=16;pad_h=0;pad_w=0;pad_d=0;"
        "conv_stride_h=1;conv_stride_w=1;conv_stride_d=1;dilation_h=1;dilation_w=1;dilation_d=1;"
        "bias=0;group_count=1");

  using tunecast::codegen::Split;
  using tunecast::codegen::split_of;
  CHECK(split_of(problem_with_batch(16), 0) == Split::kTrain);
  CHECK(split_of(problem_with_batch(16), 1) == Split::kTest);
  CHECK(split_of(problem_with_batch(64), 0) == Split::kTest);
  CHECK(split_of(problem_with_batch(64), 1) == Split::kTrain);
  CHECK(split_of(problem_with_batch(8), 0) == Split::kTrain);
}
