// The microbenchmarks' wgmma adaptor (validation/cuda/micro_wgmma*.cu):
//   Mma<N, TY, RS>::run(T* d, uint64_t desc_a, const uint32_t* a, uint64_t desc_b)
// issues one wgmma.mma_async m64nNk16 through the shared wrappers of kernels/cuda/wgmma_ops.cuh
// (the GEMM's), trans-b = 0 (B K-major). TY: 0 = f16 inputs, f32 accumulator; 1 = bf16, f32;
// 2 = f16, f16 (T = uint32_t, two f16 per register). RS = 0: A from the descriptor desc_a (`a`
// unused); RS = 1: A from the thread's four b32 fragment registers `a` (desc_a unused).
// M::R is the accumulator registers per thread (N/2, or N/4 for the f16 accumulator).
#pragma once
#include <stdint.h>

#include "../../kernels/cuda/wgmma_ops.cuh"

template <int N, int TY, int RS>
struct Mma;

#define MICRO_MMA(N, TY, ACC, AB, CT, DIV)                                                        \
  template <>                                                                                     \
  struct Mma<N, TY, 0> {                                                                          \
    using T = CT;                                                                                 \
    static constexpr int R = N / DIV;                                                             \
    __device__ __forceinline__ static void run(T* d, uint64_t da, const uint32_t* a, uint64_t db) { \
      (void)a;                                                                                    \
      wgmma_n##N##_##ACC##_##AB<0>(d, da, db);                                                    \
    }                                                                                             \
  };                                                                                              \
  template <>                                                                                     \
  struct Mma<N, TY, 1> {                                                                          \
    using T = CT;                                                                                 \
    static constexpr int R = N / DIV;                                                             \
    __device__ __forceinline__ static void run(T* d, uint64_t da, const uint32_t* a, uint64_t db) { \
      (void)da;                                                                                   \
      wgmma_rs_n##N##_##ACC##_##AB<0>(d, a, db);                                                  \
    }                                                                                             \
  };

#define MICRO_MMA_TYPES(N)                 \
  MICRO_MMA(N, 0, f32, f16, float, 2)      \
  MICRO_MMA(N, 1, f32, bf16, float, 2)     \
  MICRO_MMA(N, 2, f16, f16, uint32_t, 4)

MICRO_MMA_TYPES(8)
MICRO_MMA_TYPES(16)
MICRO_MMA_TYPES(32)
MICRO_MMA_TYPES(64)
MICRO_MMA_TYPES(128)
MICRO_MMA_TYPES(256)

#undef MICRO_MMA_TYPES
#undef MICRO_MMA
