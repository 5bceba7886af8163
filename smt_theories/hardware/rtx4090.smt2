; Hardware theory: NVIDIA GeForce RTX 4090 24 GB (Ada Lovelace AD102, compute capability 8.9).
; target: NVIDIA GeForce RTX 4090
;
; Every constant is a define-fun with the source of its value in the comment block above it.
; Units: bytes, threads, registers, nanoseconds; rates per ns (1 byte/ns = 1 GB/s). Rates used
; by the dominance bounds are CEILINGS. GeForce boards boost above the rated clock and are
; often factory-overclocked, so ceilings here use 3.0 GHz (rated boost 2.52 GHz) and memory
; at +15%.

; source: CUDA C++ Programming Guide, "Compute Capabilities" (AD102 = 8.9)
(define-fun hw_compute_capability () Int 89)

; source: NVIDIA Ada Lovelace architecture whitepaper: RTX 4090 has 128 SMs (16,384 CUDA
; cores / 128)
(define-fun hw_sms () Int 128)

; source: NVIDIA RTX 4090 specifications: rated boost 2520 MHz; stored here is the 3.0 GHz
; ceiling used for every rate below (boards boost above the rated clock)
(define-fun hw_sm_clock_mhz () Int 3000)

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

; source: NVIDIA Ada Lovelace whitepaper: RTX 4090 L2 72 MB (75497472 bytes)
(define-fun hw_l2_bytes () Int 75497472)

; source: NVIDIA RTX 4090 specifications: 1008 GB/s GDDR6X (21 Gbps x 384 bit / 8); +15% for
; memory-overclocked boards: 1159.2, rounded up
(define-fun hw_dram_bytes_per_ns () Int 1160)

; source: no vendor figure for Ada's L2 bandwidth; ceiling = aggregate SM ingress 128 SMs x
; 128 B/clk x 3.0 GHz / 2 = 24,576 GB/s (far above published measurements, ~5 TB/s)
(define-fun hw_l2_bytes_per_ns () Int 24576)

; source: per-SM ingress ceiling 128 B/clk (L1/shared-memory array: 32 banks x 4 B) x 3.0 GHz
(define-fun hw_sm_bytes_per_ns () Int 384)

; source: NVIDIA Ada whitepaper: RTX 4090 330.3 TFLOPS dense f16 with f16 accumulate (165.2
; with f32 accumulate) = 128 x 1024 flop/clk/SM x 2.52 GHz; ceiling at 3.0 GHz: 393,216
(define-fun hw_tensor_flops_per_ns () Int 393216)

; source: CUDA C++ Programming Guide, arithmetic instruction throughput (cc 8.9): 16 SFU
; results/clk/SM, doubled for packed f16x2: 32 x 128 x 3.0 GHz
(define-fun hw_sfu_ops_per_ns () Int 12288)

; source: estimate, not measured: typical 2 us per kernel launch (ranking only)
(define-fun hw_launch_overhead_ns () Int 2000)

; source: dominance floor per kernel, the same conservative 0.5 us as on Hopper
(define-fun hw_launch_floor_ns () Int 500)
