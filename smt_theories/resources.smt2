; Resource theory: what one block of a kernel asks of an SM, as functions of a family's
; standard metrics (prism/prune/family.h) and the hardware constants (hardware/<gpu>.smt2).
;
; Re-run by hand (any target):
;   cat hardware/h200.smt2 resources.smt2 cost.smt2 rules/*.smt2 > /tmp/t.smt2
;   echo '(assert (= smem_bytes 65536)) (check-sat) (get-value (blocks_per_sm))' >> /tmp/t.smt2
;   z3 /tmp/t.smt2
; (the declare-consts below leave the metrics free; prism defines them from a family).
;
; Metric contracts (a family must honour them for the rules to be sound):
;   smem_bytes         shared memory per block, static + dynamic, bytes (max over kernels); how
;                      a family counts it: tiles x element size x pipeline stages, with
;                      accumulators that live in shared memory counted in f32.
;   regs_per_thread    a LOWER bound on the 32-bit registers per thread the compiled kernel
;                      needs (f32 accumulators / threads + fixed overhead); max over kernels.
;   threads_per_block  threads per block (max over kernels).
;   grid_x/y/z         grid extents (max over kernels); grid_blocks their product.
;   dram_bytes         a lower bound on bytes read + written that are not produced and consumed
;                      on chip (sum over kernels).
;   l2_bytes           bytes loaded from global memory by all blocks (sum over blocks and
;                      kernels; a replicated tile counts once per block that loads it).
;   flops, sfu_ops     arithmetic work and special-function operations (sums).
;   kernels            kernel launches.
; An absent metric has the neutral default of family.h; `known_<metric>` is true iff the family
; sets it (known_grid: any of grid_x, grid_y, grid_z, grid_blocks). Rules that read a metric in
; the direction where the default is not neutral guard on these flags.

(declare-const smem_bytes Int)
(declare-const regs_per_thread Int)
(declare-const threads_per_block Int)
(declare-const grid_x Int)
(declare-const grid_y Int)
(declare-const grid_z Int)
(declare-const grid_blocks Int)
(declare-const dram_bytes Int)
(declare-const l2_bytes Int)
(declare-const flops Int)
(declare-const sfu_ops Int)
(declare-const kernels Int)
(declare-const known_grid Bool)
(declare-const known_threads_per_block Bool)
(declare-const known_l2_bytes Bool)

; ceil(a / b) for b > 0 (SMT-LIB div is floor division for positive divisors).
(define-fun ceil_div ((a Int) (b Int)) Int (div (+ a (- b 1)) b))
(define-fun min_int ((a Int) (b Int)) Int (ite (<= a b) a b))
(define-fun max_int ((a Int) (b Int)) Int (ite (>= a b) a b))
(define-fun max_real ((a Real) (b Real)) Real (ite (>= a b) a b))

; Warps per block: threads are scheduled in whole warps.
(define-fun warps_per_block () Int (ceil_div threads_per_block hw_warp_size))

; Registers are allocated per warp in units of hw_reg_alloc_unit (CUDA Occupancy Calculator):
; a warp of threads needing r registers each holds ceil(32 r / 256) * 256.
(define-fun regs_per_warp_alloc () Int
  (* hw_reg_alloc_unit (ceil_div (* regs_per_thread hw_warp_size) hw_reg_alloc_unit)))
(define-fun regs_per_block_alloc () Int (* warps_per_block regs_per_warp_alloc))

; Shared memory a resident block occupies on its SM, including the system reservation.
(define-fun smem_per_block_alloc () Int (+ smem_bytes hw_smem_reserved_per_block))

; Occupancy: resident blocks per SM, the minimum over every per-SM limit. Used by the ranking
; model and reports; the rules avoid it (its divisions by symbolic amounts are slow in Z3, see
; /work/shared/DEPS.md) and state the same facts multiplicatively.
(define-fun blocks_per_sm_by_smem () Int (div hw_smem_per_sm smem_per_block_alloc))
(define-fun blocks_per_sm_by_regs () Int
  (ite (= regs_per_block_alloc 0) hw_blocks_per_sm (div hw_regs_per_sm regs_per_block_alloc)))
(define-fun blocks_per_sm_by_threads () Int
  (div hw_threads_per_sm (* warps_per_block hw_warp_size)))
(define-fun blocks_per_sm () Int
  (min_int (min_int hw_blocks_per_sm blocks_per_sm_by_smem)
           (min_int blocks_per_sm_by_regs blocks_per_sm_by_threads)))

; Waves: how many rounds of fully occupied SMs the grid needs (DESIGN.md section 5).
(define-fun waves () Int (ceil_div grid_blocks (* hw_sms (max_int blocks_per_sm 1))))

; SMs that can have work: a grid of fewer blocks than SMs leaves SMs idle. Without grid
; metrics nothing is known, so every SM counts.
(define-fun active_sms () Int (ite known_grid (min_int grid_blocks hw_sms) hw_sms))

; The largest number of blocks any one SM must run (pigeonhole: the block scheduler cannot
; spread grid_blocks blocks thinner than ceil(grid_blocks / hw_sms) on the busiest SM).
(define-fun busiest_sm_blocks () Int (ceil_div grid_blocks hw_sms))
