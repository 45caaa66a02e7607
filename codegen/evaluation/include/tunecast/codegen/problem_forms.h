// A problem in every form a MIOpen user has one, read into tunecast's one convention. Host-only.
//
// The convention (the perf DB's, which the shipped models learned and the rules are written in):
// a problem names the tensors the kernel reads and writes as MIOpen's ProblemDescription does,
// so for dir=B (backward data) and dir=W (backward weights) `c`, `h`, `w` (and `d`) describe dy,
// the forward convolution's OUTPUT, and `k` its input: c = forward K, k = forward C,
// h x w = the forward output's size. For dir=F they are the forward input (c = C, k = K, h x w =
// the input image). MIOpen serializes backward problems with in and out swapped; its perf DB's
// in_channels, in_h and in_w columns and its keys are written that way.
//
// Forms:
//   fields          "dir=B,dtype=FP32,n=16,c=256,k=64,h=28,w=28,y=1,x=1,arch=gfx906" (parse_problem):
//                   taken as they are, in the convention above;
//   MIOpenDriver    "./bin/MIOpenDriver conv -n 16 -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 -p 0 -q 0
//                   -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 2 -t 1" as MIOPEN_ENABLE_LOGGING_CMD prints
//                   it (conv FP32, convfp16, convbfp16, convint8; short flags or their long names,
//                   --batchsize 16): -c and -k are always the forward convolution's input and output
//                   channels and -H -W its input size, so for -F 2 and -F 4 they are converted
//                   (c = -k, k = -c, h x w = the forward output size). -F must name one direction
//                   (1, 2 or 4);
//   perf-DB key     "64-28-28-1x1-128-28-28-16-0x0-1x1-1x1-0-NCHW-FP32-F" (MIOpen's
//                   ProblemDescription::Serialize, the text perf DBs' key; 3-D keys add the depth,
//                   `_gN` a group count): already in the convention;
//   network config  "64x28x28x1x1x128x28x28x16xNCHWxFP32x0x0x1x1x1x1x1xF" (MakeNetworkConfig, the
//                   find DB's key; an alpha/beta case at the end is accepted): likewise.
// A driver line, key or network config may be followed by `name=value` items for what it does not
// carry (`arch=gfx906`); a field it sets cannot be given again.
#pragma once

#include <string>
#include <string_view>

#include "tunecast/problem.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

enum class ProblemForm { kFields, kDriver, kPerfDbKey, kNetworkConfig };

// "fields", "MIOpenDriver command line", "perf-DB key", "network config".
const char* problem_form_name(ProblemForm form);

// Reads `text` in whichever form it is (detected: a command naming MIOpenDriver or starting with
// conv/convfp16/convbfp16/convint8, a key of numbers joined by '-', a network config joined by
// 'x', else fields) into `problem`, in the convention above. `form` (optional) says which it was.
Status parse_problem_any(std::string_view text, Problem* problem, ProblemForm* form = nullptr);

// One line for --help texts and notes: which tensors c, k, h and w name for F, B and W.
const char* problem_convention_text();

}  // namespace tunecast::codegen
