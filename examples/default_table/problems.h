// The problems whose default parameters the library computes at load time (the arch is read by
// the shipped models; MIOpen's gfx908 KTN ignores it).
#pragma once

namespace example {

constexpr const char* kProblems[] = {
    "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906",
    "dir=F,dtype=FP16,n=32,c=256,k=256,h=14,w=14,y=1,x=1,arch=gfx906",
    "dir=B,dtype=FP32,n=8,c=512,k=128,h=7,w=7,y=1,x=1,arch=gfx906",
    "dir=B,dtype=FP16,n=64,c=128,k=64,h=56,w=56,y=1,x=1,u=2,v=2,arch=gfx906",
    "dir=F,dtype=FP32,n=1,c=3,k=32,h=112,w=112,y=1,x=1,arch=gfx906",
    "dir=F,dtype=FP32,n=16,c=64,k=64,h=28,w=28,y=1,x=1,u=0,v=0,arch=gfx906",  // stride 0: refused, no entry
    "dir=F,dtype=FP32,n=16,c=64,k=64,h=28,w=28,y=3,x=3,pad_h=1,pad_w=1,arch=gfx906",  // predicted, but the kernel
                                                                           // does not apply (3x3)
};
constexpr int kProblemCount = sizeof kProblems / sizeof kProblems[0];
constexpr int kBeam = 4;

// One row of the table the library exports.
struct DefaultEntry {
  int status;          // tunecast::StatusCode of the prediction
  int not_applicable;  // PredictInfo::not_applicable: the first of the rules' `applies` it fails, or -1
  int length;
  long long values[16];
};

}  // namespace example
