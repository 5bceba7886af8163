; Hardware theory: NVIDIA L40S 48 GB (Ada Lovelace AD102, compute capability 8.9).
; target: NVIDIA L40S 48GB
;
; Every constant is a define-fun with the source of its value in the comment block above it.
; Units: bytes, threads, registers, nanoseconds; rates per ns (1 byte/ns = 1 GB/s). Rates used
; by the dominance bounds are CEILINGS (rounded up, at the maximum clock).

; source: CUDA C++ Programming Guide, "Compute Capabilities" (AD102 = 8.9)
(define-fun hw_compute_capability () Int 89)

; source: NVIDIA L40S datasheet / Ada Lovelace architecture whitepaper: 142 SMs (18,176
; CUDA cores / 128)
(define-fun hw_sms () Int 142)

; source: NVIDIA L40S datasheet: max boost clock 2520 MHz
(define-fun hw_sm_clock_mhz () Int 2520)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability": warp size 32
(define-fun hw_warp_size () Int 32)

; source: CUDA C++ Programming Guide: 48 KB per block without the dynamic opt-in
(define-fun hw_smem_per_block () Int 49152)

; source: CUDA C++ Programming Guide, compute capability 8.9: maximum shared memory per
; thread block 99 KB (opt-in)
(define-fun hw_smem_per_block_optin () Int 101376)

; source: CUDA C++ Programming Guide, compute capability 8.9: shared memory per SM up to 100 KB
(define-fun hw_smem_per_sm () Int 102400)

; source: CUDA C++ Programming Guide, compute capability 8.x: 1 KB of shared memory per block
; is reserved for system use
(define-fun hw_smem_reserved_per_block () Int 1024)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability" (8.9): 64K 32-bit registers per SM
(define-fun hw_regs_per_sm () Int 65536)

; source: same table: maximum 64K 32-bit registers per thread block
(define-fun hw_regs_per_block () Int 65536)

; source: same table: maximum 255 32-bit registers per thread
(define-fun hw_regs_per_thread () Int 255)

; source: CUDA Occupancy Calculator (cc 8.9): register allocation unit size 256 per warp
(define-fun hw_reg_alloc_unit () Int 256)

; source: CUDA C++ Programming Guide, same table: maximum 1024 threads per block
(define-fun hw_threads_per_block () Int 1024)

; source: same table (8.9): maximum 1536 resident threads per SM
(define-fun hw_threads_per_sm () Int 1536)

; source: same table (8.9): maximum 24 resident blocks per SM
(define-fun hw_blocks_per_sm () Int 24)

; source: CUDA C++ Programming Guide, same table: maximum x-dimension of a grid 2^31-1
(define-fun hw_max_grid_x () Int 2147483647)
; source: same table: maximum y-dimension of a grid 65535
(define-fun hw_max_grid_y () Int 65535)
; source: same table: maximum z-dimension of a grid 65535
(define-fun hw_max_grid_z () Int 65535)

; source: NVIDIA Ada Lovelace whitepaper / L40S datasheet: 96 MB L2 (100663296 bytes)
(define-fun hw_l2_bytes () Int 100663296)

; source: NVIDIA L40S datasheet: 864 GB/s GDDR6 (18 Gbps x 384 bit / 8)
(define-fun hw_dram_bytes_per_ns () Int 864)

; source: no vendor figure for Ada's L2 bandwidth; ceiling = aggregate SM ingress 142 SMs x
; 128 B/clk x 2.52 GHz / 2 = 22,902 GB/s (half the SM ingress ceiling, still far above any
; published Ada L2 measurement, ~5 TB/s)
(define-fun hw_l2_bytes_per_ns () Int 22902)

; source: per-SM ingress ceiling 128 B/clk (L1/shared-memory array: 32 banks x 4 B) x 2.52
; GHz = 322.6 GB/s, rounded up
(define-fun hw_sm_bytes_per_ns () Int 323)

; source: NVIDIA L40S datasheet: 362.05 TFLOPS dense f16 tensor; ceiling 142 SMs x 1024
; flop/clk/SM x 2.52 GHz = 366,428 GFLOP/s, rounded up
(define-fun hw_tensor_flops_per_ns () Int 366429)

; source: CUDA C++ Programming Guide, arithmetic instruction throughput (cc 8.9): 16 SFU
; results/clk/SM, doubled for packed f16x2: 32 x 142 x 2.52 GHz = 11450.9, rounded up
(define-fun hw_sfu_ops_per_ns () Int 11451)

; source: estimate, not measured: typical 2 us per kernel launch (ranking only)
(define-fun hw_launch_overhead_ns () Int 2000)

; source: dominance floor per kernel, the same conservative 0.5 us as on Hopper
(define-fun hw_launch_floor_ns () Int 500)
