// Includes the public headers and parses a problem: enough to need C++17.
#include <cstdio>

#include "tunecast/predict.h"

int main() {
  tunecast::Problem problem;
  const tunecast::Status status = tunecast::parse_problem("dir=F,dtype=FP32,n=1,c=8,k=8,h=7,w=7,y=1,x=1,arch=gfx1100", &problem);
  std::printf("cxx14_consumer: %s (C++ %ld)\n", status ? "parsed" : status.message(), static_cast<long>(__cplusplus));
  return status ? 0 : 1;
}
