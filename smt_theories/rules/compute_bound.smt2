; rule: compute_bound
; kind: dominance
; soundness: no flop is executed faster than the dense f16 tensor-core peak and no
;   special-function operation faster than the SFU peak (ceilings at the max clock,
;   hardware/<gpu>.smt2), so time >= t_launch_ns + max(t_flops_ns, t_sfu_ns) (cost.smt2).
(define-fun rule_compute_bound () Bool
  (and (< t_flops_ns budget_ns)
       (< t_sfu_ns budget_ns)))
