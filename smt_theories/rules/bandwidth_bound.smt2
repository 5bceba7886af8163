; rule: bandwidth_bound
; kind: dominance
; soundness: the DRAM traffic an L2-warm run cannot avoid crosses the DRAM interface at no
;   more than hw_dram_bytes_per_ns, and every loaded byte passes L2 at no more than
;   hw_l2_bytes_per_ns (both ceilings, hardware/<gpu>.smt2). So time >= t_launch_ns +
;   max(t_dram_ns, t_l2_ns) (cost.smt2); an instance can beat the incumbent only if both
;   terms fit in budget_ns = incumbent_ns - t_launch_ns.
(define-fun rule_bandwidth_bound () Bool
  (and (< t_dram_ns budget_ns)
       (< t_l2_ns budget_ns)))
