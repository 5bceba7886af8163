; rule: smem_capacity
; kind: hard
; soundness: a block's static + dynamic shared memory above hw_smem_per_block_optin (the
;   opt-in maximum, which prism's launcher always requests through
;   cudaFuncAttributeMaxDynamicSharedMemorySize) makes the launch fail; no instance that
;   violates it can run, so removing it cannot lose the optimum.
(define-fun rule_smem_capacity () Bool
  (<= smem_bytes hw_smem_per_block_optin))
