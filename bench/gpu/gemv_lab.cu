// GEMV laboratory (issue 7): which decode-GEMM structure streams W near the H200's bandwidth?
// Y[M, N] = X[M, K] · W[K, N], f16 in, f32 accumulate, M ≤ 16 (padded to 16 for mma.sync).
// Each variant = (NT columns per block, KC rows per stage, S stages, T threads, SPLIT blocks
// along K). SPLIT > 1 writes f32 partials [SPLIT, M, N] (reduced by a second kernel, timed
// separately) — the structure of prism's split-K families. Timing: a CUDA graph of R launches
// rotating over enough W copies to exceed L2, median of 7 replays, µs per launch.
//   nvcc -O3 -arch=sm_90a -std=c++17 bench/gpu/gemv_lab.cu -o gemv_lab && ./gemv_lab
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); std::exit(1);} } while (0)

typedef unsigned int u32;

__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void Commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void Wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void Mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void LdsmX4T(u32 (&b)[4], const void* p) {
  const u32 a = static_cast<u32>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(a));
}

// Block (bx, by): columns [bx·NT, +NT), K range [by·Kb, +Kb), Kb = K / SPLIT, Kb / KC stages.
// Warps: WN along N (NT/WN ≥ 16 columns each), WK = warps/WN along the stage's k16 chunks.
// The m16k16 A fragment of rows [0, 16) (rows ≥ M zero) × cols [kk, kk + 16) of a row-major f16
// tile with pitch xp.
template <int M>
__device__ __forceinline__ void LoadA(u32 (&a)[4], const __half* xs, int xp, int kk, int g, int t) {
  a[0] = a[1] = a[2] = a[3] = 0;
  if (g < M) {
    a[0] = *reinterpret_cast<const u32*>(xs + g * xp + kk + 2 * t);
    a[2] = *reinterpret_cast<const u32*>(xs + g * xp + kk + 8 + 2 * t);
  }
  if (g + 8 < M) {
    a[1] = *reinterpret_cast<const u32*>(xs + (g + 8) * xp + kk + 2 * t);
    a[3] = *reinterpret_cast<const u32*>(xs + (g + 8) * xp + kk + 8 + 2 * t);
  }
}

// One pipeline stage's mma work of a warp: its k16 chunks (wk, wk + WK, ...) of the [KC, NT]
// W tile at `st` (pitch WP) times the [M, KC] X tile at `xs` (pitch XP), into acc (kN8 n8 tiles
// of the warp's kCols columns at wn·kCols).
template <int M, int KC, int kWK, int kWP, int kXP, int kCols, int kN8>
__device__ __forceinline__ void StageMma(float (&acc)[kN8][4], const __half* st, const __half* xs, int wn, int wk,
                                         int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int kk = wk * 16; kk < KC; kk += kWK * 16) {
    u32 a[4];
    LoadA<M>(a, xs, kXP, kk, g, t);
#pragma unroll
    for (int j = 0; j < kN8; j += 2) {
      const int mi = lane >> 3, r = lane & 7;
      u32 b[4];
      LdsmX4T(b, st + (kk + (mi & 1) * 8 + r) * kWP + wn * kCols + j * 8 + (mi >> 1) * 8);
      Mma(acc[j], a, b[0], b[1]);
      Mma(acc[j + 1], a, b[2], b[3]);
    }
  }
}

// Sums the accumulators of the kWK warps along K into warp row wk = 0, through `red` (shared);
// barrier() synchronizes the warps taking part.
template <int kWK, int kWN, int kN8, typename Barrier>
__device__ __forceinline__ void SumOverK(float (&acc)[kN8][4], float* red, int wn, int wk, int lane, Barrier barrier) {
  if constexpr (kWK > 1) {
#pragma unroll
    for (int j = 0; j < kN8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[((wk * kWN + wn) * kN8 + j) * 128 + e * 32 + lane] = acc[j][e];
    barrier();
    if (wk == 0) {
      for (int w2 = 1; w2 < kWK; ++w2)
#pragma unroll
        for (int j = 0; j < kN8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[j][e] += red[((w2 * kWN + wn) * kN8 + j) * 128 + e * 32 + lane];
    }
  }
}

// Stores one m16n8 accumulator fragment (rows g and g + 8 below M, columns c0 and c1) into a
// row-major f32 array with row pitch ld.
template <int M>
__device__ __forceinline__ void StoreFragment(float* dst, long long ld, int g, int c0, int c1, const float (&d)[4]) {
  if (g < M) { dst[(long long)g * ld + c0] = d[0]; dst[(long long)g * ld + c1] = d[1]; }
  if (g + 8 < M) { dst[(long long)(g + 8) * ld + c0] = d[2]; dst[(long long)(g + 8) * ld + c1] = d[3]; }
}

__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ u32 ClusterRank() { u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ float LdDsm(const float* local, u32 rank) {
  u32 a = static_cast<u32>(__cvta_generic_to_shared(local)), d; float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(d) : "memory");
  return v;
}
// PF: L2 prefetch hint of the W copies (0: none, 128 or 256: cp.async ... .L2::<PF>B).
template <int PF>
__device__ __forceinline__ void CpAsync16Pf(void* smem, const void* gmem) {
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(smem));
  if constexpr (PF == 256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
  } else if constexpr (PF == 128) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
  }
}
template <int M, int NT, int KC, int S, int T, int CL = 1, int PF = 0>
__global__ void __launch_bounds__(T) Gemv(const __half* __restrict__ X, const __half* __restrict__ W,
                                          float* __restrict__ Y, int K, int N, int Kb) {
  constexpr int kWarps = T / 32;
  constexpr int kWN = (NT / 16 < kWarps) ? NT / 16 : kWarps;
  constexpr int kWK = kWarps / kWN;
  constexpr int kCols = NT / kWN;          // per warp
  constexpr int kN8 = kCols / 8;
  constexpr int kWP = NT + 8;              // W stage pitch (16-byte pad)
  constexpr int kXP = KC + 8;
  constexpr int kStage = KC * kWP + M * kXP;
  extern __shared__ __align__(16) __half sm[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wn = warp % kWN, wk = warp / kWN;
  const int n0 = blockIdx.x * NT, k0 = blockIdx.y * Kb;
  const int iters = Kb / KC;
  auto load = [&](int it) {
    __half* st = sm + (it % S) * kStage;
    const __half* wg = W + (long long)(k0 + it * KC) * N + n0;
    constexpr int kWChunks = KC * NT / 8;
#pragma unroll 4
    for (int c = tid; c < kWChunks; c += T) {
      const int r = c / (NT / 8), q = (c % (NT / 8)) * 8;
      CpAsync16Pf<PF>(st + r * kWP + q, wg + (long long)r * N + q);
    }
    __half* xs = st + KC * kWP;
    const __half* xg = X + k0 + it * KC;
    for (int c = tid; c < M * KC / 8; c += T) {
      const int r = c / (KC / 8), q = (c % (KC / 8)) * 8;
      CpAsync16(xs + r * kXP + q, xg + (long long)r * K + q);
    }
  };
  float acc[kN8][4];
#pragma unroll
  for (int j = 0; j < kN8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
#pragma unroll
  for (int s = 0; s < S - 1; ++s) { if (s < iters) load(s); Commit(); }
  const int g = lane >> 2, t = lane & 3;
  for (int it = 0; it < iters; ++it) {
    Wait<S - 2>();
    __syncthreads();
    if (it + S - 1 < iters) load(it + S - 1);
    Commit();
    const __half* st = sm + (it % S) * kStage;
    const __half* xs = st + KC * kWP;
    StageMma<M, KC, kWK, kWP, kXP, kCols, kN8>(acc, st, xs, wn, wk, lane);
  }
  Wait<0>();
  __syncthreads();
  // reduce over WK through shared memory, then store f32 (partials of split `by`)
  float* red = reinterpret_cast<float*>(sm);
  SumOverK<kWK, kWN, kN8>(acc, red, wn, wk, lane, [] { __syncthreads(); });
  if (CL > 1) {  // partial tile [M][NT] in this block's shared memory, summed across the cluster
    float* tile = reinterpret_cast<float*>(sm) + kWarps * kN8 * 128;
    if (wk == 0) {
#pragma unroll
      for (int j = 0; j < kN8; ++j) {
        const int col = wn * kCols + j * 8 + 2 * t;
        StoreFragment<M>(tile, NT, g, col, col + 1, acc[j]);
      }
    }
    ClusterSync();
    const u32 rank = ClusterRank();
    constexpr int kPer = M * NT / CL;
    for (int i = rank * kPer + tid; i < (int)(rank + 1) * kPer; i += T) {
      float v = 0.f;
#pragma unroll
      for (int q = 0; q < CL; ++q) v += LdDsm(tile + i, q);
      Y[(long long)(i / NT) * N + n0 + i % NT] = v;   // (lab: f32 out; the real kernel rounds)
    }
    ClusterSync();
    return;
  }
  if (wk == 0) {
    float* y = Y + (long long)blockIdx.y * M * N;
#pragma unroll
    for (int j = 0; j < kN8; ++j) {
      const int col = n0 + wn * kCols + j * 8 + 2 * t;
      StoreFragment<M>(y, N, g, col, col + 1, acc[j]);
    }
  }
}

__global__ void Reduce(const float* __restrict__ P, __half* __restrict__ Y, int splits, int mn) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < mn; i += gridDim.x * blockDim.x) {
    float s = 0.f;
    for (int k = 0; k < splits; ++k) s += P[(long long)k * mn + i];
    Y[i] = __float2half_rn(s);
  }
}

__global__ void Copy(const uint4* __restrict__ a, uint4* __restrict__ b, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) b[i] = a[i];
}


// Pure read of the same [Kb × NT] block regions (no compute): the access pattern's ceiling.
template <int NT, int T, int U>
__global__ void __launch_bounds__(T) ReadOnly(const __half* __restrict__ W, float* __restrict__ out, int N, int Kb) {
  const int n0 = blockIdx.x * NT, k0 = blockIdx.y * Kb;
  constexpr int kPerRow = NT / 8;            // 16-byte chunks per row
  constexpr int kRowsPerPass = T / kPerRow;  // rows covered by one pass of the block
  const int r = threadIdx.x / kPerRow, q = (threadIdx.x % kPerRow) * 8;
  const uint4* base = reinterpret_cast<const uint4*>(W + (long long)(k0 + r) * N + n0 + q);
  const long long step = (long long)kRowsPerPass * N / 8;
  u32 acc = 0;
  for (int k = 0; k < Kb / kRowsPerPass; k += U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(base + (k + u) * step);
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) out[0] = 1.f;
}

// Direct-to-register GEMV on CUDA cores (small M): lane l of a warp reads 16 bytes of a W row
// (a warp covers NT = 256 columns = 512 bytes); the block's warps walk the block's K range
// interleaved, U rows in flight per thread; X[M, Kb] staged in shared memory once (f32).
template <int M, int T, int U>
__global__ void __launch_bounds__(T) GemvReg(const __half* __restrict__ X, const __half* __restrict__ W,
                                             float* __restrict__ Y, int K, int N, int Kb) {
  constexpr int kWarps = T / 32;
  extern __shared__ __align__(16) float xs[];  // [M][Kb], then [kWarps][M][256] for the reduction
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n0 = blockIdx.x * 256 + lane * 8, k0 = blockIdx.y * Kb;
  for (int i = threadIdx.x; i < M * Kb; i += T) xs[i] = __half2float(X[(long long)(i / Kb) * K + k0 + i % Kb]);
  __syncthreads();
  float acc[M][8];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[m][e] = 0.f;
  const uint4* wp = reinterpret_cast<const uint4*>(W + (long long)k0 * N + n0);
  const long long rs = N / 8;
  for (int k = warp; k < Kb; k += kWarps * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = (k + u * kWarps < Kb) ? __ldcs(wp + (long long)(k + u * kWarps) * rs) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kk = k + u * kWarps;
      const __half2* h = reinterpret_cast<const __half2*>(&v[u]);
      float w[8];
#pragma unroll
      for (int e = 0; e < 4; ++e) { const float2 f = __half22float2(h[e]); w[2 * e] = f.x; w[2 * e + 1] = f.y; }
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float xv = (kk < Kb) ? xs[m * Kb + kk] : 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[m][e] = fmaf(xv, w[e], acc[m][e]);
      }
    }
  }
  __syncthreads();
  float* red = xs;  // reuse
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int e = 0; e < 8; ++e) red[(warp * M + m) * 256 + lane * 8 + e] = acc[m][e];
  __syncthreads();
  for (int i = threadIdx.x; i < M * 256; i += T) {
    float s = 0.f;
    for (int w2 = 0; w2 < kWarps; ++w2) s += red[w2 * M * 256 + i];
    Y[(long long)blockIdx.y * M * N + (long long)(i / 256) * N + blockIdx.x * 256 + i % 256] = s;
  }
}

// Direct-to-register tensor-core GEMV: no shared memory for W, no barrier in the K loop.
// Lane (g = lane/4, t = lane%4) loads 16 bytes (columns 8g..8g+7 of the warp's 64) of rows
// k+2t, k+2t+1, k+2t+8, k+2t+9 of each 16-row step; PRMT pairs the rows into the m16n8k16 B
// fragments of 8 n8 tiles whose columns are {8g + j} (a column permutation, undone at the
// store). X chunk [M, Kb] staged in shared memory once. Warps: WN along N (64 columns each),
// WK along K (16-row steps interleaved), U steps in flight.
__device__ __forceinline__ u32 Prmt(u32 a, u32 b, u32 sel) { u32 r; asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel)); return r; }
// AX: X staged with cp.async, every chunk in flight at once (else one synchronous 16-byte load
// per thread and trip: M = 16 makes that 8+ dependent L2 round trips before the first W load).
template <int M, int WN, int WK, int U, bool AX = false>
__global__ void __launch_bounds__(32 * WN * WK) GemvDirect(const __half* __restrict__ X, const __half* __restrict__ W,
                                                         float* __restrict__ Y, int K, int N, int Kb) {
  constexpr int T = 32 * WN * WK;
  extern __shared__ __align__(16) __half xsm[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wn = warp % WN, wk = warp / WN;
  const int g = lane >> 2, t = lane & 3;
  const int k0 = blockIdx.y * Kb;
  const int xp = Kb + 8;
  if constexpr (AX) {
    for (int c = threadIdx.x; c < M * Kb / 8; c += T) {
      const int r = c / (Kb / 8), q = (c % (Kb / 8)) * 8;
      CpAsync16(xsm + r * xp + q, X + (long long)r * K + k0 + q);
    }
    Commit();
    Wait<0>();
  } else {
    for (int c = threadIdx.x; c < M * Kb / 8; c += T) {
      const int r = c / (Kb / 8), q = (c % (Kb / 8)) * 8;
      *reinterpret_cast<uint4*>(xsm + r * xp + q) = *reinterpret_cast<const uint4*>(X + (long long)r * K + k0 + q);
    }
  }
  __syncthreads();
  const int nb = blockIdx.x * 64 * WN + wn * 64;
  const uint4* wp = reinterpret_cast<const uint4*>(W + (long long)(k0 + 2 * t) * N + nb + 8 * g);
  const long long rs = N / 8;  // one row in uint4
  float acc[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  const int steps = Kb / 16;
  for (int s0 = wk; s0 < steps; s0 += WK * U) {
    uint4 r[U][4];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int st = s0 + u * WK;
      if (st < steps) {
        const uint4* p = wp + (long long)st * 16 * rs;
        r[u][0] = __ldcs(p); r[u][1] = __ldcs(p + rs); r[u][2] = __ldcs(p + 8 * rs); r[u][3] = __ldcs(p + 9 * rs);
      } else {
        r[u][0] = r[u][1] = r[u][2] = r[u][3] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int st = s0 + u * WK;
      const int kk = (st < steps ? st : 0) * 16;
      u32 a[4];
      LoadA<M>(a, xsm, xp, kk, g, t);
      const u32* w0 = reinterpret_cast<const u32*>(&r[u][0]);
      const u32* w1 = reinterpret_cast<const u32*>(&r[u][1]);
      const u32* w8 = reinterpret_cast<const u32*>(&r[u][2]);
      const u32* w9 = reinterpret_cast<const u32*>(&r[u][3]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        Mma(acc[2 * q], a, Prmt(w0[q], w1[q], 0x5410), Prmt(w8[q], w9[q], 0x5410));
        Mma(acc[2 * q + 1], a, Prmt(w0[q], w1[q], 0x7632), Prmt(w8[q], w9[q], 0x7632));
      }
    }
  }
  // reduce over WK warps: red[wk][wn][j][e][lane]
  __syncthreads();
  float* red = reinterpret_cast<float*>(xsm);
  if (WK > 1) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[(((wk * WN + wn) * 8 + j) * 4 + e) * 32 + lane] = acc[j][e];
    __syncthreads();
    if (wk == 0)
      for (int w2 = 1; w2 < WK; ++w2)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[j][e] += red[(((w2 * WN + wn) * 8 + j) * 4 + e) * 32 + lane];
  }
  if (wk == 0) {
    float* y = Y + (long long)blockIdx.y * M * N;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c0 = nb + 8 * (2 * t) + j, c1 = nb + 8 * (2 * t + 1) + j;
      StoreFragment<M>(y, N, g, c0, c1, acc[j]);
    }
  }
}

// Bulk-copy pipeline (Hopper): one producer warp issues cp.async.bulk row copies of each
// [KC, NT] W tile (and the [M, KC] X tile) into an S-stage ring, completion counted by an
// mbarrier (expect_tx); consumer warps wait on it, mma as in Gemv, release the stage on an
// "empty" mbarrier. No __syncthreads in the loop.
__device__ __forceinline__ u32 Smem(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void MbarInit(unsigned long long* b, u32 n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(Smem(b)), "r"(n)); }
__device__ __forceinline__ void MbarExpect(unsigned long long* b, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(Smem(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void MbarArrive(unsigned long long* b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(Smem(b)) : "memory"); }
__device__ __forceinline__ void MbarWait(unsigned long long* b, u32 parity) {
  asm volatile("{\n.reg .pred p;\nW%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W%=;\n}\n" :: "r"(Smem(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void Bulk(void* dst, const void* src, u32 bytes, unsigned long long* b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(Smem(dst)), "l"(src), "r"(bytes), "r"(Smem(b)) : "memory");
}
template <int M, int NT, int KC, int S, int CW>  // CW consumer warps (+1 producer warp)
__global__ void __launch_bounds__(32 * (CW + 1)) GemvBulk(const __half* __restrict__ X, const __half* __restrict__ W,
                                                         float* __restrict__ Y, int K, int N, int Kb) {
  constexpr int kWN = (NT / 16 < CW) ? NT / 16 : CW;
  constexpr int kWK = CW / kWN;
  constexpr int kCols = NT / kWN, kN8 = kCols / 8;
  constexpr int kWP = NT + 8, kXP = KC + 8;
  constexpr int kStage = KC * kWP + M * kXP;
  extern __shared__ __align__(128) unsigned char raw[];
  unsigned long long* full = reinterpret_cast<unsigned long long*>(raw);
  unsigned long long* empty = full + S;
  __half* sm = reinterpret_cast<__half*>(raw + 128);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int n0 = blockIdx.x * NT, k0 = blockIdx.y * Kb, iters = Kb / KC;
  if (tid == 0) {
    for (int i = 0; i < S; ++i) { MbarInit(&full[i], 1); MbarInit(&empty[i], CW); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == CW) {  // producer
    for (int it = 0; it < iters; ++it) {
      const int st = it % S;
      if (it >= S) MbarWait(&empty[st], ((it / S) - 1) & 1);
      if (lane == 0) MbarExpect(&full[st], (KC * NT + M * KC) * 2);
      __syncwarp();
      __half* dst = sm + st * kStage;
      const __half* wg = W + (long long)(k0 + it * KC) * N + n0;
      for (int r = lane; r < KC; r += 32) Bulk(dst + r * kWP, wg + (long long)r * N, NT * 2, &full[st]);
      for (int r = lane; r < M; r += 32) Bulk(dst + KC * kWP + r * kXP, X + (long long)r * K + k0 + it * KC, KC * 2, &full[st]);
    }
    return;
  }
  const int wn = warp % kWN, wk = warp / kWN;
  const int g = lane >> 2, t = lane & 3;
  float acc[kN8][4];
#pragma unroll
  for (int j = 0; j < kN8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  for (int it = 0; it < iters; ++it) {
    const int stg = it % S;
    MbarWait(&full[stg], (it / S) & 1);
    const __half* st = sm + stg * kStage;
    const __half* xs = st + KC * kWP;
    StageMma<M, KC, kWK, kWP, kXP, kCols, kN8>(acc, st, xs, wn, wk, lane);
    __syncwarp();
    if (lane == 0) MbarArrive(&empty[stg]);
  }
  // reduce over kWK (named barrier for the consumer warps only)
  float* red = reinterpret_cast<float*>(sm);
  asm volatile("bar.sync 1, %0;" :: "n"(CW * 32));
  SumOverK<kWK, kWN, kN8>(acc, red, wn, wk, lane, [] { asm volatile("bar.sync 1, %0;" :: "n"(CW * 32)); });
  if (wk == 0) {
    float* y = Y + (long long)blockIdx.y * M * N;
#pragma unroll
    for (int j = 0; j < kN8; ++j) {
      const int col = n0 + wn * kCols + j * 8 + 2 * t;
      StoreFragment<M>(y, N, g, col, col + 1, acc[j]);
    }
  }
}

struct Case { const char* name; int M, K, N; };
static const Case kCases[] = {{"rmsnorm_linear_b1", 2, 4096, 6144}, {"rmsnorm_linear_b8", 16, 4096, 6144},
                              {"gated_mlp_b8(1 of 2)", 8, 4096, 8192}, {"lora_b1", 1, 4096, 4096}};

static float TimeGraph(cudaGraphExec_t ge, int launches) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  CK(cudaGraphLaunch(ge, 0)); CK(cudaDeviceSynchronize());
  std::vector<float> v;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(a)); CK(cudaGraphLaunch(ge, 0)); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); v.push_back(ms * 1000.f / launches);
  }
  std::sort(v.begin(), v.end());
  return v[3];
}

// Checks a kernel's f32 output (parts partial slices [parts, M, N], summed on the host; no check
// when ref is empty) after one launch on copy 0, then times a CUDA graph of R launches over the
// copies, with the reduce kernel after each launch as a second timing when reduce_parts > 1.
// launch(stream, copy) launches the kernel once.
struct Timed {
  float us = 0, us_reduce = 0;
  double relerr = 0;
};
template <typename Launch>
Timed Measure(const Case& c, int m_rows, int parts, Launch launch, float* part, __half* y,
              const std::vector<float>& ref) {
  Timed t;
  launch(cudaStream_t{0}, 0);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  if (!ref.empty()) {
    std::vector<float> hp((size_t)parts * m_rows * c.N);
    CK(cudaMemcpy(hp.data(), part, hp.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0, mx = 0;
    for (int m = 0; m < c.M; ++m)
      for (int n = 0; n < c.N; ++n) {
        double sum = 0;
        for (int q = 0; q < parts; ++q) sum += hp[((size_t)q * m_rows + m) * c.N + n];
        err = std::max(err, std::fabs(sum - ref[(size_t)m * c.N + n]));
        mx = std::max(mx, (double)std::fabs(ref[(size_t)m * c.N + n]));
      }
    t.relerr = err / mx;
  }
  cudaStream_t st; CK(cudaStreamCreate(&st));
  const int R = 24;
  for (int with_reduce = 0; with_reduce < (parts > 1 ? 2 : 1); ++with_reduce) {
    cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int r = 0; r < R; ++r) {
      launch(st, r);
      if (with_reduce) Reduce<<<132 * 2, 256, 0, st>>>(part, y, parts, c.M * c.N);
    }
    CK(cudaStreamEndCapture(st, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
    (with_reduce ? t.us_reduce : t.us) = TimeGraph(ge, R);
    CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
  }
  CK(cudaStreamDestroy(st));
  return t;
}

double TBs(const Case& c, float us) { return (double)c.K * c.N * 2 / (us * 1e-6) / 1e12; }

template <int M, int NT, int KC, int S, int T, int PF = 0>
void Run(const Case& c, int split, std::vector<__half*>& xs, std::vector<__half*>& ws, float* part, __half* y,
         const std::vector<float>& ref) {
  if (c.M != M || c.N % NT || c.K % (split * KC)) return;
  const int Kb = c.K / split;
  constexpr int kWarps = T / 32, kWN = (NT / 16 < kWarps) ? NT / 16 : kWarps;
  constexpr int kStage = KC * (NT + 8) + M * (KC + 8);
  const int bytes = std::max<int>(S * kStage * 2, kWarps * (NT / kWN / 8) * 128 * 4);
  if (bytes > 227 * 1024) return;
  auto k = Gemv<M, NT, KC, S, T, 1, PF>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid(c.N / NT, split);
  const Timed t = Measure(c, M, split, [&](cudaStream_t st, int r) {
    k<<<grid, T, bytes, st>>>(xs[r % xs.size()], ws[r % ws.size()], part, c.K, c.N, Kb);
  }, part, y, ref);
  std::printf("%-20s M%-2d NT=%-4d KC=%-3d S=%d T=%-4d PF=%-3d split=%-2d blocks=%-4d smem=%6d  %7.2f us %5.2f TB/s(W)  +reduce %7.2f us  relerr %.1e\n",
              c.name, c.M, NT, KC, S, T, PF, split, c.N / NT * split, bytes, t.us, TBs(c, t.us), t.us_reduce, t.relerr);
}

template <int NT, int T, int U>
void RunRead(const Case& c, int split, std::vector<__half*>& ws, float* part, __half* y) {
  const int Kb = c.K / split;
  if (c.N % NT || Kb % (T / (NT / 8) * U)) return;
  const Timed t = Measure(c, c.M, 1, [&](cudaStream_t st, int r) {
    ReadOnly<NT, T, U><<<dim3(c.N / NT, split), T, 0, st>>>(ws[r % ws.size()], part, c.N, Kb);
  }, part, y, {});
  std::printf("%-20s READ NT=%-4d T=%-4d U=%-2d split=%-2d blocks=%-4d  %7.2f us %5.2f TB/s(W)\n", c.name, NT, T, U,
              split, c.N / NT * split, t.us, TBs(c, t.us));
}

template <int M, int T, int U>
void RunReg(const Case& c, int split, std::vector<__half*>& xs, std::vector<__half*>& ws, float* part, __half* y,
            const std::vector<float>& ref) {
  if (c.M != M || c.N % 256) return;
  const int Kb = c.K / split;
  const int bytes = std::max<int>(M * Kb * 4, (T / 32) * M * 256 * 4);
  if (bytes > 227 * 1024) return;
  auto k = GemvReg<M, T, U>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid(c.N / 256, split);
  const Timed t = Measure(c, M, split, [&](cudaStream_t st, int r) {
    k<<<grid, T, bytes, st>>>(xs[r % xs.size()], ws[r % ws.size()], part, c.K, c.N, Kb);
  }, part, y, ref);
  std::printf("%-20s REG M%-2d T=%-4d U=%-2d split=%-2d blocks=%-4d smem=%6d  %7.2f us %5.2f TB/s(W)  +reduce %7.2f us  relerr %.1e\n",
              c.name, M, T, U, split, c.N / 256 * split, bytes, t.us, TBs(c, t.us), t.us_reduce, t.relerr);
}

template <int M, int NT, int KC, int S, int T, int CL>
void RunCl(const Case& c, std::vector<__half*>& xs, std::vector<__half*>& ws, float* part, __half* y,
           const std::vector<float>& ref) {
  const int split = CL;
  if (c.M != M || c.N % NT || c.K % (split * KC)) return;
  const int Kb = c.K / split;
  constexpr int kWarps = T / 32, kWN = (NT / 16 < kWarps) ? NT / 16 : kWarps;
  constexpr int kStage = KC * (NT + 8) + M * (KC + 8);
  const int bytes = std::max<int>(S * kStage * 2, kWarps * (NT / kWN / 8) * 128 * 4 + M * NT * 4);
  if (bytes > 227 * 1024) return;
  auto k = Gemv<M, NT, KC, S, T, CL>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1; at[0].val.clusterDim.y = CL; at[0].val.clusterDim.z = 1;
  const Timed t = Measure(c, M, 1, [&](cudaStream_t st, int r) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(c.N / NT, split); cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = bytes;
    cfg.attrs = at; cfg.numAttrs = 1; cfg.stream = st;
    CK(cudaLaunchKernelEx(&cfg, k, (const __half*)xs[r % xs.size()], (const __half*)ws[r % ws.size()], part, c.K,
                          c.N, Kb));
  }, part, y, ref);
  std::printf("%-20s CLUSTER M%-2d NT=%-4d KC=%-3d S=%d T=%-4d cl=%-2d blocks=%-4d smem=%6d  %7.2f us %5.2f TB/s(W)  relerr %.1e\n",
              c.name, M, NT, KC, S, T, CL, c.N / NT * split, bytes, t.us, TBs(c, t.us), t.relerr);
}

template <int M, int WN, int WK, int U, bool AX = false>
void RunDirect(const Case& c, int split, std::vector<__half*>& xs, std::vector<__half*>& ws, float* part, __half* y,
               const std::vector<float>& ref) {
  constexpr int T = 32 * WN * WK;
  if (c.M != M || c.N % (64 * WN) || c.K % (split * 16)) return;
  const int Kb = c.K / split;
  const int bytes = std::max<int>(M * (Kb + 8) * 2, WK * WN * 8 * 4 * 32 * 4);
  if (bytes > 227 * 1024) return;
  auto k = GemvDirect<M, WN, WK, U, AX>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid(c.N / (64 * WN), split);
  const Timed t = Measure(c, M, split, [&](cudaStream_t st, int r) {
    k<<<grid, T, bytes, st>>>(xs[r % xs.size()], ws[r % ws.size()], part, c.K, c.N, Kb);
  }, part, y, ref);
  std::printf("%-20s DIRECT%s M%-2d WN=%d WK=%d U=%d T=%-4d split=%-2d blocks=%-4d smem=%6d  %7.2f us %5.2f TB/s(W)  +reduce %7.2f us  relerr %.1e\n",
              c.name, AX ? "-AX" : "", M, WN, WK, U, T, split, c.N / (64 * WN) * split, bytes, t.us, TBs(c, t.us), t.us_reduce, t.relerr);
}

template <int M, int NT, int KC, int S, int CW>
void RunBulk(const Case& c, int split, std::vector<__half*>& xs, std::vector<__half*>& ws, float* part, __half* y,
             const std::vector<float>& ref) {
  constexpr int T = 32 * (CW + 1);
  if (c.M != M || c.N % NT || c.K % (split * KC)) return;
  const int Kb = c.K / split;
  constexpr int kWN = (NT / 16 < CW) ? NT / 16 : CW;
  constexpr int kStage = KC * (NT + 8) + M * (KC + 8);
  const int bytes = 128 + std::max<int>(S * kStage * 2, CW * (NT / kWN / 8) * 128 * 4);
  if (bytes > 227 * 1024) return;
  auto k = GemvBulk<M, NT, KC, S, CW>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid(c.N / NT, split);
  const Timed t = Measure(c, M, split, [&](cudaStream_t st, int r) {
    k<<<grid, T, bytes, st>>>(xs[r % xs.size()], ws[r % ws.size()], part, c.K, c.N, Kb);
  }, part, y, ref);
  std::printf("%-20s BULK M%-2d NT=%-4d KC=%-3d S=%d CW=%-2d split=%-2d blocks=%-4d smem=%6d  %7.2f us %5.2f TB/s(W)  +reduce %7.2f us  relerr %.1e\n",
              c.name, M, NT, KC, S, CW, split, c.N / NT * split, bytes, t.us, TBs(c, t.us), t.us_reduce, t.relerr);
}

int main() {
  const int kCopies = 6;
  for (const Case& c : kCases) {
    std::vector<float> hx((size_t)c.M * c.K);
    std::vector<__half> hxh(hx.size()), hw((size_t)c.K * c.N);
    srand(1);
    for (size_t i = 0; i < hx.size(); ++i) { hxh[i] = __float2half((rand() % 2001 - 1000) / 1000.f); hx[i] = __half2float(hxh[i]); }
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = __float2half((rand() % 2001 - 1000) / 1000.f * 0.03f);
    std::vector<float> ref((size_t)c.M * c.N, 0.f);
    for (int m = 0; m < c.M; ++m)
      for (int kk = 0; kk < c.K; ++kk) {
        const float xv = hx[(size_t)m * c.K + kk];
        const __half* wr = &hw[(size_t)kk * c.N];
        float* rr = &ref[(size_t)m * c.N];
        for (int n = 0; n < c.N; ++n) rr[n] += xv * __half2float(wr[n]);
      }
    std::vector<__half*> xs(kCopies), ws(kCopies);
    for (int i = 0; i < kCopies; ++i) {
      CK(cudaMalloc(&xs[i], 16 * (size_t)c.K * 2)); CK(cudaMemset(xs[i], 0, 16 * (size_t)c.K * 2));
      CK(cudaMalloc(&ws[i], hw.size() * 2));
      CK(cudaMemcpy(xs[i], hxh.data(), hxh.size() * 2, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(ws[i], hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    }
    float* part; __half* y;
    CK(cudaMalloc(&part, 64 * 16 * (size_t)c.N * 4)); CK(cudaMalloc(&y, 16 * (size_t)c.N * 2));
    // One line per structure of docs/performance.md ("GEMV structures on the H200"); M ∈ {1, 2,
    // 8, 16} instantiated, the case's M runs.
#define V(NT, KC, S, T, SPLIT) do { Run<1, NT, KC, S, T>(c, SPLIT, xs, ws, part, y, ref); \
    Run<2, NT, KC, S, T>(c, SPLIT, xs, ws, part, y, ref); Run<8, NT, KC, S, T>(c, SPLIT, xs, ws, part, y, ref); \
    Run<16, NT, KC, S, T>(c, SPLIT, xs, ws, part, y, ref); } while (0)
#define C4(NT, KC, S, T, CLS) do { RunCl<1, NT, KC, S, T, CLS>(c, xs, ws, part, y, ref); \
    RunCl<2, NT, KC, S, T, CLS>(c, xs, ws, part, y, ref); RunCl<8, NT, KC, S, T, CLS>(c, xs, ws, part, y, ref); \
    RunCl<16, NT, KC, S, T, CLS>(c, xs, ws, part, y, ref); } while (0)
#define R2(T, U, SPLIT) do { RunReg<1, T, U>(c, SPLIT, xs, ws, part, y, ref); RunReg<2, T, U>(c, SPLIT, xs, ws, part, y, ref); \
    RunReg<8, T, U>(c, SPLIT, xs, ws, part, y, ref); } while (0)
#define D4(WN, WK, U, SPLIT) do { RunDirect<1, WN, WK, U>(c, SPLIT, xs, ws, part, y, ref); \
    RunDirect<2, WN, WK, U>(c, SPLIT, xs, ws, part, y, ref); RunDirect<8, WN, WK, U>(c, SPLIT, xs, ws, part, y, ref); \
    RunDirect<16, WN, WK, U>(c, SPLIT, xs, ws, part, y, ref); } while (0)
#define B4(NT, KC, S, CW, SPLIT) do { RunBulk<1, NT, KC, S, CW>(c, SPLIT, xs, ws, part, y, ref); \
    RunBulk<2, NT, KC, S, CW>(c, SPLIT, xs, ws, part, y, ref); RunBulk<8, NT, KC, S, CW>(c, SPLIT, xs, ws, part, y, ref); \
    RunBulk<16, NT, KC, S, CW>(c, SPLIT, xs, ws, part, y, ref); } while (0)
#define DA(M, WN, WK, U, SPLIT) RunDirect<M, WN, WK, U, true>(c, SPLIT, xs, ws, part, y, ref)
#define VM(M, NT, KC, S, T, SPLIT) Run<M, NT, KC, S, T>(c, SPLIT, xs, ws, part, y, ref)
#define VP(M, NT, KC, S, T, SPLIT, PF) Run<M, NT, KC, S, T, PF>(c, SPLIT, xs, ws, part, y, ref)
    if (std::getenv("STAGE_SWEEP") != nullptr) {
      // 2026-12-02: more stages in flight (the search's S domain stops at 4): S in {4, 6, 8} at
      // the split shapes of 96-192 blocks, each line twice.
      for (int rep = 0; rep < 2; ++rep) {
        if (c.M == 16) {
          VM(16, 192, 64, 4, 128, 4); VM(16, 192, 64, 6, 128, 4); VM(16, 192, 64, 8, 128, 4);
          VM(16, 384, 32, 4, 256, 8); VM(16, 384, 32, 6, 256, 8); VM(16, 384, 32, 8, 256, 8);
          VM(16, 192, 32, 8, 128, 4); VM(16, 256, 64, 6, 256, 4); VM(16, 256, 32, 8, 256, 8);
        }
        if (c.M == 2) {
          VM(2, 192, 64, 4, 128, 4); VM(2, 192, 64, 6, 128, 4); VM(2, 192, 64, 8, 128, 4);
          VM(2, 384, 32, 4, 256, 8); VM(2, 384, 32, 6, 256, 8); VM(2, 384, 32, 8, 256, 8);
          VM(2, 256, 32, 8, 256, 8); VM(2, 384, 64, 6, 256, 8);
        }
        if (c.M == 8) {
          VM(8, 256, 64, 4, 256, 4); VM(8, 256, 64, 6, 256, 4);
          VM(8, 512, 32, 4, 256, 8); VM(8, 512, 32, 6, 256, 8); VM(8, 256, 32, 8, 256, 4);
        }
        if (c.M == 1) {
          VM(1, 256, 64, 4, 256, 8); VM(1, 256, 64, 6, 256, 8); VM(1, 256, 32, 8, 256, 8);
          VM(1, 128, 64, 8, 128, 4); VM(1, 256, 64, 8, 256, 4);
        }
      }
      for (int i = 0; i < kCopies; ++i) { CK(cudaFree(xs[i])); CK(cudaFree(ws[i])); }
      CK(cudaFree(part)); CK(cudaFree(y));
      continue;
    }
    if (std::getenv("PREFETCH_SWEEP") != nullptr) {
      // 2026-12-01 late: the L2 prefetch hint on the W copies, prism's split shapes (128 blocks)
      // and 2 blocks per SM (256 blocks, smaller stages).
      if (c.M == 16 || c.M == 2) {
        for (int rep = 0; rep < 2; ++rep) {
          VP(16, 192, 64, 4, 384, 4, 0); VP(16, 192, 64, 4, 384, 4, 128); VP(16, 192, 64, 4, 384, 4, 256);
          VP(16, 192, 64, 4, 128, 4, 0); VP(16, 192, 64, 4, 128, 4, 256);
          VP(16, 192, 32, 6, 128, 8, 0); VP(16, 192, 32, 6, 128, 8, 256);
          VP(16, 384, 32, 4, 256, 8, 0); VP(16, 384, 32, 4, 256, 8, 256);
          VP(2, 192, 64, 4, 128, 4, 0); VP(2, 192, 64, 4, 128, 4, 256);
          VP(2, 384, 32, 4, 256, 8, 0); VP(2, 384, 32, 4, 256, 8, 256);
        }
      }
      if (c.M == 1) { VP(1, 256, 64, 4, 256, 8, 0); VP(1, 256, 64, 4, 256, 8, 256); }
      for (int i = 0; i < kCopies; ++i) { CK(cudaFree(xs[i])); CK(cudaFree(ws[i])); }
      CK(cudaFree(part)); CK(cudaFree(y));
      continue;
    }
    if (std::getenv("BALANCE_SWEEP") != nullptr) {
      // 2026-12-01 night 2: (a) the register-direct kernel with X staged asynchronously (was M16
      // slow because of the synchronous X prologue?); (b) the shared-memory kernel on grids of
      // 128 blocks (one per SM, 132 SMs) instead of 96 (6144 = 96 · 64).
      if (c.M == 16 || c.M == 2) {
        RunDirect<16, 2, 2, 4>(c, 8, xs, ws, part, y, ref); RunDirect<2, 2, 2, 4>(c, 8, xs, ws, part, y, ref);
        DA(16, 2, 2, 4, 8); DA(16, 1, 8, 2, 2); DA(16, 1, 4, 4, 4); DA(16, 2, 4, 2, 4); DA(16, 2, 2, 4, 4);
        DA(2, 2, 2, 4, 8); DA(2, 1, 4, 4, 4); DA(2, 2, 4, 2, 4); DA(2, 2, 2, 4, 4);
        VM(16, 256, 64, 4, 256, 4); VM(2, 256, 64, 4, 256, 4);  // 96 blocks (the earlier best)
        VM(16, 192, 64, 4, 128, 4); VM(16, 192, 128, 3, 128, 4); VM(16, 192, 64, 4, 384, 4);
        VM(16, 384, 64, 4, 256, 8); VM(16, 384, 32, 4, 256, 8); VM(16, 384, 128, 3, 256, 8);
        VM(16, 96, 128, 4, 192, 2); VM(16, 192, 32, 4, 384, 4);
        VM(2, 192, 64, 4, 128, 4); VM(2, 192, 128, 3, 128, 4); VM(2, 384, 64, 4, 256, 8); VM(2, 384, 32, 4, 256, 8);
      }
      if (c.M == 1) { DA(1, 2, 2, 4, 8); DA(1, 4, 2, 4, 16); DA(1, 2, 4, 2, 8); }
      for (int i = 0; i < kCopies; ++i) { CK(cudaFree(xs[i])); CK(cudaFree(ws[i])); }
      CK(cudaFree(part)); CK(cudaFree(y));
      continue;
    }
    if (std::getenv("DIRECT_SWEEP") != nullptr) {
      // Register-direct tensor-core GEMV with 256-column blocks (WN = 4: 512 contiguous bytes of
      // each W row per block, the pure read's fastest shape) and more blocks / loads in flight.
      if (c.M <= 2) { RunRead<256, 256, 8>(c, 16, ws, part, y); RunRead<256, 256, 8>(c, 8, ws, part, y); }
      D4(2, 2, 4, 8);
      D4(4, 1, 4, 16); D4(4, 1, 8, 16); D4(4, 2, 4, 16); D4(4, 2, 4, 8); D4(4, 1, 8, 8); D4(4, 1, 4, 32);
      D4(2, 1, 8, 16); D4(2, 2, 8, 16);
      for (int i = 0; i < kCopies; ++i) { CK(cudaFree(xs[i])); CK(cudaFree(ws[i])); }
      CK(cudaFree(part)); CK(cudaFree(y));
      continue;
    }
    if (c.M <= 2) {  // pure-read ceilings, once per shape
      RunRead<64, 256, 4>(c, 1, ws, part, y); RunRead<128, 256, 4>(c, 4, ws, part, y);
      RunRead<256, 256, 8>(c, 8, ws, part, y); RunRead<256, 256, 8>(c, 16, ws, part, y);
      RunRead<512, 512, 8>(c, 8, ws, part, y);
    }
    V(64, 256, 3, 256, 1); V(64, 256, 4, 512, 1); V(128, 64, 4, 128, 16); V(256, 64, 4, 256, 4); V(128, 128, 4, 256, 8);
    C4(128, 64, 3, 128, 8); C4(256, 64, 4, 256, 4); C4(512, 32, 4, 256, 8);
    R2(512, 4, 8); R2(256, 8, 8); R2(128, 8, 16);
    D4(2, 2, 4, 8); D4(1, 8, 2, 2); D4(1, 16, 2, 1); D4(1, 4, 4, 4);
    B4(64, 256, 4, 8, 1); B4(1024, 16, 4, 8, 16); B4(1024, 32, 3, 8, 16);
    for (int i = 0; i < kCopies; ++i) { CK(cudaFree(xs[i])); CK(cudaFree(ws[i])); }
    CK(cudaFree(part)); CK(cudaFree(y));
  }
  // copy ceiling: 256 MB read + write
  {
    const long long n = (256ll << 20) / 16;
    uint4 *a, *b; CK(cudaMalloc(&a, n * 16)); CK(cudaMalloc(&b, n * 16));
    cudaStream_t st; CK(cudaStreamCreate(&st)); cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int r = 0; r < 4; ++r) Copy<<<132 * 8, 512, 0, st>>>(a, b, n);
    CK(cudaStreamEndCapture(st, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
    const float us = TimeGraph(ge, 4);
    std::printf("copy 256 MB: %.1f us, %.2f TB/s (read+write)\n", us, 2.0 * n * 16 / (us * 1e-6) / 1e12);
  }
  return 0;
}
