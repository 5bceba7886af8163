; rule: register_capacity
; kind: hard
; soundness: regs_per_thread is a lower bound on the registers the compiled kernel needs
;   (metric contract, resources.smt2). A thread cannot address more than hw_regs_per_thread
;   registers, and a block whose warps, at the warp allocation granularity, need more than
;   hw_regs_per_block registers cannot launch. Beyond 255 registers the compiler spills the
;   accumulators to local memory; prism's codegen audits the compiled kernel and rejects
;   spilling kernels (DESIGN.md section 6), so such instances are never selectable either.
(define-fun rule_register_capacity () Bool
  (and (<= regs_per_thread hw_regs_per_thread)
       (<= regs_per_block_alloc hw_regs_per_block)))
