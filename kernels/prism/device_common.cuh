// prism device templates shared by every generated kernel (docs/codegen.md). Inlined verbatim
// into each generated source, which must compile with NVRTC alone (no CUDA headers: the f16
// and bf16 types are handled as raw 16-bit values through PTX). Requires sm_80 or newer (cp.async,
// mma.sync m16n8k16).
#ifndef PRISM_KERNELS_DEVICE_COMMON_CUH_
#define PRISM_KERNELS_DEVICE_COMMON_CUH_

namespace prism_dev {

typedef unsigned short f16_t;   // an IEEE binary16 value, stored as bits
typedef unsigned short bf16_t;  // a bfloat16 value (the top half of an f32), stored as bits
typedef unsigned int u32_t;
struct __align__(16) U32x4 {  // 16 bytes: vectorized global loads and stores
  u32_t x, y, z, w;
};

__device__ __forceinline__ float F16ToF32(f16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ f16_t F32ToF16(float f) {  // round to nearest even
  f16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// bf16 → f32 is exact: the bits are the top half of the f32's (no PTX cvt: cvt.f32.bf16 needs
// PTX 7.1 and its ftz form sm_90).
__device__ __forceinline__ float BF16ToF32(bf16_t h) {
  return __uint_as_float(static_cast<unsigned int>(h) << 16);
}
__device__ __forceinline__ bf16_t F32ToBF16(float f) {  // round to nearest even (sm_80+)
  bf16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// A 16-bit element (f16 or bf16 by kBF16) to f32: the template form of F16ToF32 / BF16ToF32.
template <bool kBF16>
__device__ __forceinline__ float HalfToF32(unsigned short h) {
  return kBF16 ? BF16ToF32(h) : F16ToF32(h);
}
// Two 16-bit values packed into one register, lo in bits 0..15 (either format).
__device__ __forceinline__ u32_t Pack2(f16_t lo, f16_t hi) {
  return static_cast<u32_t>(lo) | (static_cast<u32_t>(hi) << 16);
}

// ---- tile loads: 16-byte cp.async from global to shared (bypassing L1) ---------------------
// CpAsync16 and LoadTileAsync ask L2 to fetch whole 128-byte lines (.L2::128B): the GEMV rows
// stream W 1-3 % faster with it on the H200, 256 bytes is slower (docs/performance.md,
// 2026-12-02).
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  const u32_t s = static_cast<u32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
// The src-size form: of the 16 bytes at gmem only the first `bytes` (0 to 16) are read, the
// rest of the shared chunk is zero. gmem is 16-byte aligned and readable for `bytes` bytes (with
// 0, any valid pointer: nothing is read).
__device__ __forceinline__ void CpAsync16Fill(void* smem, const void* gmem, u32_t bytes) {
  const u32_t s = static_cast<u32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(bytes));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Copies a rows × cols tile of f16 (cols % 8 == 0; global row pitch `ld` elements, 16-byte
// aligned rows) into shared memory with row pitch `spitch` elements, all threads cooperating.
// When there are at least as many threads as 16-byte chunks in a row, the first
// kActive = ⌊kThreads / (cols/8)⌋ · (cols/8) threads each keep one 16-byte column and step down
// the rows by a constant stride (kActive / (cols/8) rows), fully unrolled: one shared and one
// global base address per thread, the copies at immediate offsets; the other threads (none
// when kThreads is a multiple of cols/8) copy nothing. Row r0 + i·stride of column k is copied
// by exactly one thread in exactly one pass. Otherwise chunk c = tid + i·kThreads goes to
// (c / (cols/8), c % (cols/8)).
template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void LoadTileAsync(f16_t* smem, int spitch, const f16_t* gmem,
                                              long long ld, int tid) {
  constexpr int kChunksPerRow = kCols / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
  if constexpr (kThreads >= kChunksPerRow) {
    constexpr int kRowStep = kThreads / kChunksPerRow;  // rows per pass of the active threads
    constexpr int kActive = kRowStep * kChunksPerRow;
    constexpr int kPasses = (kRows + kRowStep - 1) / kRowStep;
    // (e.g. rmsnorm_linear's 192-column W tiles with 128 threads: 24 chunks a row, 120 active
    // threads; the division loop below took about 15 instructions per 16-byte copy.)
    if (kActive != kThreads && tid >= kActive) return;
    const int r0 = tid / kChunksPerRow, k = (tid % kChunksPerRow) * 8;
    const u32_t s = static_cast<u32_t>(__cvta_generic_to_shared(smem + r0 * spitch + k));
    const f16_t* g = gmem + r0 * ld + k;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      if (kRows % kRowStep == 0 || r0 + i * kRowStep < kRows) {
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(
                         s + static_cast<u32_t>(i * kRowStep * spitch * 2)),
                     "l"(g + i * kRowStep * ld));
      }
    }
  } else {
#pragma unroll 4
    for (int c = tid; c < kChunks; c += kThreads) {
      const int r = c / kChunksPerRow;
      const int k = (c % kChunksPerRow) * 8;
      CpAsync16(smem + r * spitch + k, gmem + r * ld + k);
    }
  }
}

// Copies a rows × cols tile of f16 (cols % 64 == 0; global row pitch `ld` elements) into the
// 128-byte-swizzled layout that wgmma reads by descriptor (CodegenOptions::attention_wgmma):
// the columns are cut into panels of 64 (128 bytes a row), panel p at byte p·rows·128, row r
// of a panel at r·128, and its 16-byte chunk q at chunk q ^ (r mod 8). `smem` must be
// 1024-byte aligned (the swizzle is a function of the address bits).
template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void LoadTileSw128Async(unsigned char* smem, const f16_t* gmem,
                                                   long long ld, int tid) {
  constexpr int kChunksPerRow = kCols / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
  constexpr int kPasses = (kChunks + kThreads - 1) / kThreads;
  const u32_t s = static_cast<u32_t>(__cvta_generic_to_shared(smem));
  if constexpr (kThreads % kChunksPerRow == 0 && (kThreads / kChunksPerRow) % 8 == 0) {
    // Each thread keeps its column cc and steps down by kRowStep rows, a multiple of 8: the
    // swizzled chunk (cc mod 8) ^ (r mod 8) is the same in every pass, so one shared and one
    // global base address per thread serve all passes at constant offsets.
    constexpr int kRowStep = kThreads / kChunksPerRow;
    const int r0 = tid / kChunksPerRow, cc = tid % kChunksPerRow;
    const u32_t s0 = s + static_cast<u32_t>((cc >> 3) * (kRows * 128) + r0 * 128 +
                                            (((cc & 7) ^ (r0 & 7)) << 4));
    const f16_t* g0 = gmem + r0 * ld + cc * 8;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      if (kChunks % kThreads == 0 || r0 + i * kRowStep < kRows) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s0 + i * kRowStep * 128),
                     "l"(g0 + i * kRowStep * ld));
      }
    }
  } else {
    // Chunk c = tid + i·kThreads of pass i, fully unrolled (a compile-time trip count: no loop
    // code).
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int c = tid + i * kThreads;
      if (kChunks % kThreads == 0 || c < kChunks) {
        const int r = c / kChunksPerRow, cc = c % kChunksPerRow;
        const u32_t off = static_cast<u32_t>((cc >> 3) * (kRows * 128) + r * 128 +
                                             (((cc & 7) ^ (r & 7)) << 4));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s + off),
                     "l"(gmem + r * ld + cc * 8));
      }
    }
  }
}
// The byte offset of element (r, c) of such a tile (c % 8 == 0: the start of a 16-byte chunk).
__device__ __forceinline__ int Sw128Offset(int rows, int r, int c) {
  return (c >> 6) * (rows * 128) + r * 128 + ((((c >> 3) & 7) ^ (r & 7)) << 4);
}

// Σ x² (f32) of the `cols` f16 (bf16 when kBF16) elements from column c0 on (both multiples of
// 8) of row r of such a tile of `rows` rows: the rms(Q) factors of the attention_wgmma kernels.
template <bool kBF16 = false>
__device__ __forceinline__ float SumSqRowSw128(const unsigned char* tile, int rows, int r, int c0,
                                               int cols) {
  float ss = 0.f;
#pragma unroll
  for (int c = c0; c < c0 + cols; c += 8) {
    const uint4 w = *reinterpret_cast<const uint4*>(tile + Sw128Offset(rows, r, c));
    const u32_t w4[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float a = HalfToF32<kBF16>(w4[j] & 0xffff), b = HalfToF32<kBF16>(w4[j] >> 16);
      ss = fmaf(a, a, ss);
      ss = fmaf(b, b, ss);
    }
  }
  return ss;
}

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
// ---- warpgroup matrix multiply-accumulate (sm_90a) ------------------------------------------
// Shared-memory writes of this thread (cp.async included) become visible to the async proxy
// that wgmma reads shared memory through; then a barrier makes every thread's visible.
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of an accumulator register across the asynchronous
// wgmma region (issue … wait).
__device__ __forceinline__ void WgmmaFenceReg(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// Keeps an A-operand register live (unchanged, not reused) until after the wgmma that reads it
// has been waited for.
__device__ __forceinline__ void WgmmaFenceReg(u32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
// Matrix descriptor of an MN-major operand in the 128-byte-swizzled layout (LoadTileSw128Async):
// `lbo` = bytes from one 64-column panel to the next, `sbo` = bytes from one group of 8 rows
// (the K dim) to the next (1024 for dense 128-byte rows).
__device__ __forceinline__ unsigned long long WgmmaDescSw128(const void* p, u32_t lbo, u32_t sbo) {
  const u32_t a = static_cast<u32_t>(__cvta_generic_to_shared(p));
  return static_cast<unsigned long long>((a & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
#endif

// ---- tensor-core tile matmul: D(16x8, f32) += A(16x16, f16, row) · B(16x8, f16, col) -------
__device__ __forceinline__ void MmaM16N8K16(float (&d)[4], const u32_t (&a)[4],
                                            const u32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// The same with bf16 operands (same fragment layouts).
__device__ __forceinline__ void MmaM16N8K16BF16(float (&d)[4], const u32_t (&a)[4],
                                                const u32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- f32 tiles (matmuls of f32 tensors: FMAs on the CUDA cores, no tensor cores) ----------
// A rows × cols tile of f32 (cols % 4 == 0) by LoadTileAsync's copies: the same bytes as a
// rows × 2·cols tile of 16-bit elements.
template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void LoadTileAsyncF32(float* smem, int spitch, const float* gmem,
                                                 long long ld, int tid) {
  LoadTileAsync<kRows, 2 * kCols, kThreads>(reinterpret_cast<f16_t*>(smem), 2 * spitch,
                                            reinterpret_cast<const f16_t*>(gmem), 2 * ld, tid);
}
// acc[mt][nt] += A(rows [16·mt, 16·mt+16) × cols [k0, k0+16)) · B(rows [k0, k0+16) × cols
// [n0 + 8·nt, n0 + 8·nt + 8)) of row-major f32 tiles in shared memory (pitches in elements, even;
// n0 even), in MmaM16N8K16's accumulator layout: lane (g, t) holds rows 16·mt+g, 16·mt+g+8 ×
// columns 2t, 2t+1 of each n8 tile, every sum by fmaf in k order. Rows of A at or past `rows`
// are zero; n8 tiles from `nvalid` on are skipped (warp-uniform). Per k: 2·kMT loads of A, one
// float2 of B per n8 tile, 4·kMT·kNT FMAs (few registers beyond the accumulators).
// FmaTilesF32Fn reads A through a_at(r, k), its element (r, k) of the tile (the A prologue of an
// f32 matmul computes it from staged f32 tiles); FmaTilesF32 reads a row-major tile `a`.
template <int kMT, int kNT, typename AAt>
__device__ __forceinline__ void FmaTilesF32Fn(float (&d)[kMT][kNT][4], const AAt& a_at, int rows,
                                              int k0, const float* b, int bpitch, int n0,
                                              int nvalid, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll 2
  for (int k = k0; k < k0 + 16; ++k) {
    float x[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const int r0 = mt * 16 + g;
      x[mt][0] = r0 < rows ? a_at(r0, k) : 0.f;
      x[mt][1] = r0 + 8 < rows ? a_at(r0 + 8, k) : 0.f;
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      if (nt < nvalid) {
        const float2 bv =
            *reinterpret_cast<const float2*>(b + k * bpitch + n0 + nt * 8 + 2 * t);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          d[mt][nt][0] = fmaf(x[mt][0], bv.x, d[mt][nt][0]);
          d[mt][nt][1] = fmaf(x[mt][0], bv.y, d[mt][nt][1]);
          d[mt][nt][2] = fmaf(x[mt][1], bv.x, d[mt][nt][2]);
          d[mt][nt][3] = fmaf(x[mt][1], bv.y, d[mt][nt][3]);
        }
      }
    }
  }
}

template <int kMT, int kNT>
__device__ __forceinline__ void FmaTilesF32(float (&d)[kMT][kNT][4], const float* a, int apitch,
                                            int rows, int k0, const float* b, int bpitch, int n0,
                                            int nvalid, int lane) {
  FmaTilesF32Fn(d, [&](int r, int k) { return a[r * apitch + k]; }, rows, k0, b, bpitch, n0,
                nvalid, lane);
}

// Σ x² (f32) of an f32 A tile's rows in LoadAFragment<true>'s share: lane (g, t) adds columns
// k0+2t, k0+2t+1, k0+2t+8, k0+2t+9 of row 16·mt+g to lo[mt] and of row 16·mt+g+8 to hi[mt]
// (rows at or past `rows` add nothing), so the quad's QuadSum is the row's sum over the chunk.
template <int kMT>
__device__ __forceinline__ void SumSqRowsF32(float (&lo)[kMT], float (&hi)[kMT], const float* a,
                                             int apitch, int rows, int k0, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const int r0 = mt * 16 + g;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = k0 + 2 * t + (j & 1) + (j >> 1) * 8;
      const float x0 = r0 < rows ? a[r0 * apitch + c] : 0.f;
      const float x1 = r0 + 8 < rows ? a[(r0 + 8) * apitch + c] : 0.f;
      lo[mt] = fmaf(x0, x0, lo[mt]);
      hi[mt] = fmaf(x1, x1, hi[mt]);
    }
  }
}

// A fragment of rows [m0, m0+16) × cols [k0, k0+16) of a row-major shared tile with `rows`
// valid rows (rows beyond are zero). Also adds the squares of the fragment's elements (in f32)
// to ss_lo (row m0 + lane/4) and ss_hi (row m0 + 8 + lane/4) when kSumSq; kBF16: the elements
// are bf16 (the fragment itself is the same bits either way).
template <bool kSumSq, bool kBF16 = false>
__device__ __forceinline__ void LoadAFragment(u32_t (&a)[4], const f16_t* s, int pitch, int rows,
                                              int m0, int k0, int lane, float& ss_lo,
                                              float& ss_hi) {
  const int g = lane >> 2, t = lane & 3;
  const int r0 = m0 + g, r1 = m0 + g + 8, c = k0 + 2 * t;
  f16_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (r0 < rows) {
    const u32_t lo = *reinterpret_cast<const u32_t*>(s + r0 * pitch + c);
    const u32_t hi = *reinterpret_cast<const u32_t*>(s + r0 * pitch + c + 8);
    v[0] = lo & 0xffff; v[1] = lo >> 16; v[4] = hi & 0xffff; v[5] = hi >> 16;
  }
  if (r1 < rows) {
    const u32_t lo = *reinterpret_cast<const u32_t*>(s + r1 * pitch + c);
    const u32_t hi = *reinterpret_cast<const u32_t*>(s + r1 * pitch + c + 8);
    v[2] = lo & 0xffff; v[3] = lo >> 16; v[6] = hi & 0xffff; v[7] = hi >> 16;
  }
  a[0] = Pack2(v[0], v[1]);  // (g,   c..c+1)
  a[1] = Pack2(v[2], v[3]);  // (g+8, c..c+1)
  a[2] = Pack2(v[4], v[5]);  // (g,   c+8..c+9)
  a[3] = Pack2(v[6], v[7]);  // (g+8, c+8..c+9)
  if (kSumSq) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float x = HalfToF32<kBF16>(v[i]);
      if ((i & 2) == 0) ss_lo = fmaf(x, x, ss_lo); else ss_hi = fmaf(x, x, ss_hi);
    }
  }
}

// The A fragment of a one-row tile broadcast over the rows (an operand [1, K] of an elementwise
// op on a matmul's A tile, e.g. RMSNorm's gain): every row of the fragment is the tile's row 0,
// cols [k0, k0+16).
__device__ __forceinline__ void LoadARowFragment(u32_t (&a)[4], const f16_t* s, int k0,
                                                 int lane) {
  const int c = k0 + 2 * (lane & 3);
  a[0] = a[1] = *reinterpret_cast<const u32_t*>(s + c);      // (every row, c..c+1)
  a[2] = a[3] = *reinterpret_cast<const u32_t*>(s + c + 8);  // (every row, c+8..c+9)
}

// B fragment of rows [k0, k0+16) × cols [n0, n0+8) of a row-major (k-major) shared tile.
__device__ __forceinline__ void LoadBFragment(u32_t (&b)[2], const f16_t* s, int pitch, int k0,
                                              int n0, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const f16_t* p = s + (k0 + 2 * t) * pitch + n0 + g;
  b[0] = Pack2(p[0], p[pitch]);
  b[1] = Pack2(p[8 * pitch], p[9 * pitch]);
}

// B fragments of two adjacent n8 tiles (rows [k0, k0+16) × cols [n0, n0+16)) with one
// ldmatrix.x4.trans: b[0..1] for cols n0..n0+7, b[2..3] for n0+8..n0+15. Rows must be 16-byte
// aligned (pitch and n0 multiples of 8).
__device__ __forceinline__ void LoadBFragmentX4(u32_t (&b)[4], const f16_t* s, int pitch, int k0,
                                                int n0, int lane) {
  const int mi = lane >> 3, r = lane & 7;
  const f16_t* p = s + (k0 + (mi & 1) * 8 + r) * pitch + n0 + (mi >> 1) * 8;
  const u32_t a = static_cast<u32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(a));
}

// ---- reductions ------------------------------------------------------------------------------
__device__ __forceinline__ float QuadSum(float v) {  // over the 4 lanes sharing lane/4
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v;
}
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float QuadMax(float v) {  // over the 4 lanes sharing lane/4
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
  return v;
}

// ---- elementwise (f32) -----------------------------------------------------------------------
// 2^x by the SFU (ex2.approx.ftz: relative error about 2^-22; 2^-inf = +0). Used for the
// scores of the attention template: exp(s - m) = Exp2(s·log2(e) - m·log2(e)).
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// Two f32 values rounded to f16 (nearest even) and packed, lo in bits 0..15.
__device__ __forceinline__ u32_t PackF16x2(float lo, float hi) {
  u32_t r;  // cvt.rn.f16x2.f32 d, a, b puts a in the upper half
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// Two f32 values rounded to bf16 (nearest even) and packed, lo in bits 0..15 (sm_80+).
__device__ __forceinline__ u32_t PackBF16x2(float lo, float hi) {
  u32_t r;  // as cvt.rn.f16x2.f32: a in the upper half
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// 2^x of both f16 halves (MUFU, one instruction for two values; sm_75+).
__device__ __forceinline__ u32_t Exp2F16x2(u32_t x) {
  u32_t y;
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
// Elementwise product of two f16x2 values (round to nearest even).
__device__ __forceinline__ u32_t MulF16x2(u32_t a, u32_t b) {
  u32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
// Programmatic dependent launch (CodegenOptions::programmatic_dependent_launch): let the next
// kernel in the stream be scheduled, then wait until the previous grid has completed and its
// memory is visible. Both are no-ops for a launch without the attribute, and below sm_90.
__device__ __forceinline__ void PdlPrologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// PdlPrologue's two halves, for a kernel that issues loads of constant inputs between them
// (CodegenOptions::constant_inputs): nothing written by the previous grid may be read before
// PdlWait.
__device__ __forceinline__ void PdlLaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void PdlWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// ---- thread block clusters (sm_90): a combine kernel folded into its producer -------------
// Every thread of every block of the cluster arrives, then waits for all of them: shared-memory
// writes before the barrier (release) are visible to every block's reads after it (acquire).
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
__device__ __forceinline__ u32_t ClusterRank() {
  u32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Loads are volatile asm: never moved above the (volatile) ClusterSync before them.
// The shared::cluster address of the byte at shared::cta address `addr` in block `rank`.
__device__ __forceinline__ u32_t MapShared(u32_t addr, u32_t rank) {
  u32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ float LdClusterF32(u32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ float LdClusterF16(u32_t addr) {
  f16_t h;
  asm volatile("ld.shared::cluster.b16 %0, [%1];" : "=h"(h) : "r"(addr));
  return F16ToF32(h);
}
__device__ __forceinline__ float LdClusterBF16(u32_t addr) {
  bf16_t h;
  asm volatile("ld.shared::cluster.b16 %0, [%1];" : "=h"(h) : "r"(addr));
  return BF16ToF32(h);
}
#endif
// relu (docs/ir_semantics.md §2): x if x > 0, NaN kept, else +0 (relu(−0) = +0); fmaxf(x, 0)
// would turn a NaN into 0.
__device__ __forceinline__ float Relu(float x) { return (x > 0.0f || x != x) ? x : 0.0f; }
__device__ __forceinline__ float Silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float Gelu(float x) {  // exact (erf) form
  return (0.5f * x) * (1.0f + erff(x * 0.70710678118654752f));
}

}  // namespace prism_dev

#endif  // PRISM_KERNELS_DEVICE_COMMON_CUH_
