; Hardware theory: NVIDIA H100 SXM5 80 GB (Hopper GH100, compute capability 9.0).
; target: NVIDIA H100 SXM5 80GB
;
; Every constant is a define-fun with the source of its value in the comment block above it.
; Units: bytes, threads, registers, nanoseconds; rates per ns (1 byte/ns = 1 GB/s). Rates used
; by the dominance bounds are CEILINGS (rounded up, at the maximum clock).

; source: CUDA C++ Programming Guide, "Compute Capabilities" (GH100 = 9.0)
(define-fun hw_compute_capability () Int 90)

; source: NVIDIA H100 Tensor Core GPU datasheet / Hopper whitepaper: H100 SXM5 has 132 SMs
(define-fun hw_sms () Int 132)

; source: NVIDIA Hopper whitepaper: H100 SXM5 max boost clock 1.98 GHz (for non-tensor work)
(define-fun hw_sm_clock_mhz () Int 1980)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability": warp size 32
(define-fun hw_warp_size () Int 32)

; source: CUDA C++ Programming Guide: 48 KB per block without the dynamic opt-in
(define-fun hw_smem_per_block () Int 49152)

; source: CUDA C++ Programming Guide, compute capability 9.0: maximum shared memory per
; thread block 227 KB (opt-in)
(define-fun hw_smem_per_block_optin () Int 232448)

; source: CUDA C++ Programming Guide, compute capability 9.0: maximum shared memory per SM
; 228 KB
(define-fun hw_smem_per_sm () Int 233472)

; source: CUDA C++ Programming Guide, compute capability 8.x/9.0: 1 KB of shared memory per
; block is reserved for system use
(define-fun hw_smem_reserved_per_block () Int 1024)

; source: CUDA C++ Programming Guide, Table "Technical Specifications per Compute
; Capability" (9.0): 64K 32-bit registers per SM
(define-fun hw_regs_per_sm () Int 65536)

; source: same table: maximum 64K 32-bit registers per thread block
(define-fun hw_regs_per_block () Int 65536)

; source: same table: maximum 255 32-bit registers per thread
(define-fun hw_regs_per_thread () Int 255)

; source: CUDA Occupancy Calculator (cc 9.0): register allocation unit size 256 per warp
(define-fun hw_reg_alloc_unit () Int 256)

; source: CUDA C++ Programming Guide, same table: maximum 1024 threads per block
(define-fun hw_threads_per_block () Int 1024)

; source: same table (9.0): maximum 2048 resident threads per SM
(define-fun hw_threads_per_sm () Int 2048)

; source: same table (9.0): maximum 32 resident blocks per SM
(define-fun hw_blocks_per_sm () Int 32)

; source: CUDA C++ Programming Guide, same table: maximum x-dimension of a grid 2^31-1
(define-fun hw_max_grid_x () Int 2147483647)
; source: same table: maximum y-dimension of a grid 65535
(define-fun hw_max_grid_y () Int 65535)
; source: same table: maximum z-dimension of a grid 65535
(define-fun hw_max_grid_z () Int 65535)

; source: NVIDIA Hopper whitepaper: H100 SXM5 L2 cache 50 MB (cudaDeviceProp.l2CacheSize =
; 52428800)
(define-fun hw_l2_bytes () Int 52428800)

; source: NVIDIA H100 datasheet: H100 SXM 3.35 TB/s HBM3, rounded up to 3360 GB/s
(define-fun hw_dram_bytes_per_ns () Int 3360)

; source: no vendor figure for Hopper's L2 bandwidth; same ceiling as the H200 (same GH100
; die and L2): 2x the measured H200 L2 re-read of 6.80 TB/s
(define-fun hw_l2_bytes_per_ns () Int 13600)

; source: per-SM ingress ceiling 128 B/clk (L1/shared-memory array: 32 banks x 4 B) x 1.98
; GHz = 253.4 GB/s, rounded up
(define-fun hw_sm_bytes_per_ns () Int 254)

; source: NVIDIA H100 datasheet 989.4 TFLOPS dense f16 = 132 x 4096 flop/clk/SM x 1.83 GHz;
; at the max clock 1.98 GHz: 1,070,530 GFLOP/s, rounded up
(define-fun hw_tensor_flops_per_ns () Int 1070531)

; source: CUDA C++ Programming Guide, arithmetic instruction throughput (cc 9.0): 16 SFU
; results/clk/SM, doubled for packed f16x2: 32 x 132 x 1.98 GHz = 8363.5, rounded up
(define-fun hw_sfu_ops_per_ns () Int 8364)

; source: estimate, not measured on this GPU: taken equal to the H200 measurement (1.5 us per
; trivial kernel as a CUDA-graph node); ranking model only
(define-fun hw_launch_overhead_ns () Int 1500)

; source: dominance floor per kernel, one third of the H200 measurement (same driver stack)
(define-fun hw_launch_floor_ns () Int 500)
