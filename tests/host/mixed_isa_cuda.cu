// tests/host/mixed_isa_cuda.cu: the third translation unit of test_mixed_isa, compiled by nvcc (host code with
// nvcc's host compiler and flags, plus device code for the listed architectures). It includes the device
// headers and opens `using namespace qnum;` at file scope: qnum's names must then sit beside CUDA's vector
// types (int4, uint4) and CCCL's ::cuda namespace without ambiguity.
#include <cuda/std/limits>

#include "mixed_isa_body.hpp"
#include "qnum/gpu/quantize.cuh"
#include "qnum/train/dynamic_scale.cuh"

using namespace qnum;

namespace {
// Each line would be ambiguous if qnum named a type int4/uint4 or a namespace cuda.
static_assert(sizeof(int4) == 16 && sizeof(uint4) == 16, "CUDA's vector types");
static_assert(cuda::std::numeric_limits<int>::max() == 2147483647, "CCCL's cuda namespace");
static_assert(qint4::qmax == 7 && quint8::qmax == 255, "qnum's integer formats");

__global__ void touch(int4* p) { p->x = static_cast<int>(qint8::qmax); }
}  // namespace

void* mixed_isa_cuda_kernel() { return reinterpret_cast<void*>(&touch); }
std::vector<std::uint8_t> mixed_isa_cuda_work() { return mixed_isa::work(); }
