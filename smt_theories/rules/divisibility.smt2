; rule: divisibility
; kind: hard
; soundness: every block-level template prism emits (mma.sync tile matmuls, warp reductions,
;   warp-strided cp.async loads; kernels/) assumes whole warps, so the code generator cannot
;   emit a block whose size is not a multiple of hw_warp_size: such instances are outside the
;   space of programs prism can produce, and removing them loses nothing. Guarded by
;   known_threads_per_block (the default of 1 thread would otherwise violate it). Tile
;   divisibility of a family's own dimensions is stated by the family's constraints, which
;   the pruner tracks under "constraint.<name>".
(define-fun rule_divisibility () Bool
  (=> known_threads_per_block (= (mod threads_per_block hw_warp_size) 0)))
