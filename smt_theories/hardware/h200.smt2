; Hardware theory: NVIDIA H200 SXM 141 GB (Hopper GH100, compute capability 9.0).
; target: NVIDIA H200 SXM 141GB
;
; Every constant is a define-fun with the source of its value in the comment block above it.
; prism's C++ reads this file (prism/smt/target.h), and the SMT queries that prism dumps
; include these definitions verbatim, so an edit here changes both.
;
; Units: bytes, threads, registers (32-bit), nanoseconds, and rates per nanosecond
; (1 byte/ns = 1 GB/s; 1 flop/ns = 1 GFLOP/s). Rates used by the dominance bounds are
; CEILINGS: each is rounded up and taken at the maximum clock, so that time >= work / rate
; stays a true lower bound.

; source: CUDA C++ Programming Guide, "Compute Capabilities" (GH100 = 9.0); measured:
; /work/shared/hardware/h200-2026-11-29.json
(define-fun hw_compute_capability () Int 90)

; source: measured, cudaDeviceProp.multiProcessorCount = 132 (h200-2026-11-29.json "sms")
(define-fun hw_sms () Int 132)

; source: measured, cudaDeviceProp.clockRate = 1,980,000 kHz (h200-2026-11-29.json
; "clock_khz"); NVIDIA H200 datasheet max boost 1.98 GHz
(define-fun hw_sm_clock_mhz () Int 1980)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability": warp size 32
(define-fun hw_warp_size () Int 32)

; source: measured, cudaDeviceProp.sharedMemPerBlock = 49152 (48 KiB without opt-in)
(define-fun hw_smem_per_block () Int 49152)

; source: measured, cudaDeviceProp.sharedMemPerBlockOptin = 232448 (227 KiB); CUDA C++
; Programming Guide, compute capability 9.0: "maximum shared memory per thread block 227 KB"
(define-fun hw_smem_per_block_optin () Int 232448)

; source: measured, cudaDeviceProp.sharedMemPerMultiprocessor = 233472 (228 KiB)
(define-fun hw_smem_per_sm () Int 233472)

; source: CUDA C++ Programming Guide, compute capability 8.x/9.0 shared memory section:
; "1 KB of shared memory is reserved for system use" per resident block (reservedSharedMemPerBlock)
(define-fun hw_smem_reserved_per_block () Int 1024)

; source: measured, cudaDeviceProp.regsPerMultiprocessor = 65536
(define-fun hw_regs_per_sm () Int 65536)

; source: measured, cudaDeviceProp.regsPerBlock = 65536
(define-fun hw_regs_per_block () Int 65536)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability": maximum number of 32-bit registers per thread 255
(define-fun hw_regs_per_thread () Int 255)

; source: CUDA Occupancy Calculator (cc 9.0): register allocation unit size 256 per warp
; (a warp's registers are rounded up to a multiple of 256)
(define-fun hw_reg_alloc_unit () Int 256)

; source: measured, cudaDeviceProp.maxThreadsPerBlock = 1024
(define-fun hw_threads_per_block () Int 1024)

; source: measured, cudaDeviceProp.maxThreadsPerMultiProcessor = 2048
(define-fun hw_threads_per_sm () Int 2048)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability" (9.0): maximum number of resident blocks per SM 32
(define-fun hw_blocks_per_sm () Int 32)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability": maximum x-dimension of a grid 2^31-1, y and z 65535
(define-fun hw_max_grid_x () Int 2147483647)
; source: CUDA C++ Programming Guide, same table: maximum y-dimension of a grid 65535
(define-fun hw_max_grid_y () Int 65535)
; source: CUDA C++ Programming Guide, same table: maximum z-dimension of a grid 65535
(define-fun hw_max_grid_z () Int 65535)

; source: measured, cudaDeviceProp.l2CacheSize = 62914560 (60 MiB)
(define-fun hw_l2_bytes () Int 62914560)

; source: ceiling from the memory interface: measured memoryClockRate 3,201,000 kHz x
; memoryBusWidth 6016 bit x 2 (DDR) / 8 = 4814 GB/s, rounded up (datasheet: 4.8 TB/s;
; measured read 4.28 TB/s, /work/shared/hardware/README.md)
(define-fun hw_dram_bytes_per_ns () Int 4815)

; source: no vendor figure for Hopper's L2 bandwidth. Measured L2 re-read 6.80 TB/s
; (h200-2026-11-29.json "l2_read_Bps"); the ceiling is 2x that, a generous margin so that
; bytes / ceiling stays a lower bound on time
(define-fun hw_l2_bytes_per_ns () Int 13600)

; source: per-SM ingress ceiling: every byte an SM loads passes its L1/shared-memory array,
; which moves at most 128 B/clk (32 banks x 4 B; CUDA C++ Programming Guide, shared memory
; for cc 9.0) -> 128 B x 1.98 GHz = 253.4 GB/s, rounded up. Measured single-SM read with 8
; loads in flight: 133 GB/s (README.md)
(define-fun hw_sm_bytes_per_ns () Int 254)

; source: dense f16 tensor-core rate: 4096 flop/clk/SM (NVIDIA H100 whitepaper: 989.4
; TFLOPS dense f16 = 132 SMs x 4096 x 1.83 GHz) taken at the max clock 1.98 GHz:
; 132 x 4096 x 1.98 = 1,070,530 GFLOP/s, rounded up. Measured cuBLAS 742-754 TFLOP/s
(define-fun hw_tensor_flops_per_ns () Int 1070531)

; source: CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table (cc 9.0):
; 16 results/clk/SM for ex2/rsqrt/rcp/sin/cos; doubled to 32 to cover packed f16x2 forms:
; 32 x 132 SMs x 1.98 GHz = 8363.5, rounded up
(define-fun hw_sfu_ops_per_ns () Int 8364)

; source: measured, one trivial kernel as a CUDA-graph node ~1.5 us (README.md); used by the
; ranking model only
(define-fun hw_launch_overhead_ns () Int 1500)

; source: floor for dominance: one third of the measured 1.5 us per trivial kernel node, so
; kernels x floor stays below any measured time of that many dependent kernels
(define-fun hw_launch_floor_ns () Int 500)
