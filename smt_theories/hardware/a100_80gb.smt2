; Hardware theory: NVIDIA A100 SXM4 80 GB (Ampere GA100, compute capability 8.0).
; target: NVIDIA A100 SXM4 80GB
;
; Every constant is a define-fun with the source of its value in the comment block above it.
; Units: bytes, threads, registers, nanoseconds; rates per ns (1 byte/ns = 1 GB/s). Rates used
; by the dominance bounds are CEILINGS (rounded up, at the maximum clock).

; source: CUDA C++ Programming Guide, "Compute Capabilities" (GA100 = 8.0)
(define-fun hw_compute_capability () Int 80)

; source: NVIDIA A100 Tensor Core GPU architecture whitepaper: A100 has 108 SMs
(define-fun hw_sms () Int 108)

; source: NVIDIA A100 whitepaper: boost clock 1410 MHz
(define-fun hw_sm_clock_mhz () Int 1410)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability": warp size 32
(define-fun hw_warp_size () Int 32)

; source: CUDA C++ Programming Guide: 48 KB per block without the dynamic opt-in
(define-fun hw_smem_per_block () Int 49152)

; source: CUDA C++ Programming Guide, compute capability 8.0: maximum shared memory per
; thread block 163 KB (opt-in)
(define-fun hw_smem_per_block_optin () Int 166912)

; source: CUDA C++ Programming Guide, compute capability 8.0: shared memory per SM up to 164 KB
(define-fun hw_smem_per_sm () Int 167936)

; source: CUDA C++ Programming Guide, compute capability 8.x: 1 KB of shared memory per block
; is reserved for system use
(define-fun hw_smem_reserved_per_block () Int 1024)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability" (8.0): 64K 32-bit registers per SM
(define-fun hw_regs_per_sm () Int 65536)

; source: same table: maximum 64K 32-bit registers per thread block
(define-fun hw_regs_per_block () Int 65536)

; source: same table: maximum 255 32-bit registers per thread
(define-fun hw_regs_per_thread () Int 255)

; source: CUDA Occupancy Calculator (cc 8.0): register allocation unit size 256 per warp
(define-fun hw_reg_alloc_unit () Int 256)

; source: CUDA C++ Programming Guide, same table: maximum 1024 threads per block
(define-fun hw_threads_per_block () Int 1024)

; source: same table (8.0): maximum 2048 resident threads per SM
(define-fun hw_threads_per_sm () Int 2048)

; source: same table (8.0): maximum 32 resident blocks per SM
(define-fun hw_blocks_per_sm () Int 32)

; source: CUDA C++ Programming Guide, same table: maximum x-dimension of a grid 2^31-1
(define-fun hw_max_grid_x () Int 2147483647)
; source: same table: maximum y-dimension of a grid 65535
(define-fun hw_max_grid_y () Int 65535)
; source: same table: maximum z-dimension of a grid 65535
(define-fun hw_max_grid_z () Int 65535)

; source: NVIDIA A100 whitepaper: 40 MB L2 cache (cudaDeviceProp.l2CacheSize = 41943040)
(define-fun hw_l2_bytes () Int 41943040)

; source: NVIDIA A100 80GB SXM datasheet: 2,039 GB/s HBM2e (1593 MHz x 5120 bit x 2 / 8)
(define-fun hw_dram_bytes_per_ns () Int 2039)

; source: NVIDIA A100 whitepaper: L2 read bandwidth 5120 B/clk x 1.41 GHz = 7219.2 GB/s,
; rounded up
(define-fun hw_l2_bytes_per_ns () Int 7220)

; source: per-SM ingress ceiling 128 B/clk (L1/shared-memory array: 32 banks x 4 B) x 1.41
; GHz = 180.5 GB/s, rounded up
(define-fun hw_sm_bytes_per_ns () Int 181)

; source: NVIDIA A100 datasheet: 312 TFLOPS dense f16 tensor = 108 x 2048 flop/clk/SM x
; 1.41 GHz = 311,869 GFLOP/s, rounded up
(define-fun hw_tensor_flops_per_ns () Int 311870)

; source: CUDA C++ Programming Guide, arithmetic instruction throughput (cc 8.0): 16 SFU
; results/clk/SM, doubled for packed f16x2: 32 x 108 x 1.41 GHz = 4872.96, rounded up
(define-fun hw_sfu_ops_per_ns () Int 4873)

; source: estimate, not measured: typical 2 us per kernel launch on Ampere (ranking only)
(define-fun hw_launch_overhead_ns () Int 2000)

; source: dominance floor per kernel, the same conservative 0.5 us as on Hopper
(define-fun hw_launch_floor_ns () Int 500)
