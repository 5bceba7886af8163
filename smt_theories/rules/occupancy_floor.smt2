; rule: occupancy_floor
; kind: dominance
; soundness: the l2_bytes that blocks load must enter SMs, and at most active_sms =
;   min(grid_blocks, hw_sms) SMs have a block (grid_blocks is the maximum over kernels, so
;   every kernel of the family uses at most that many SMs); each SM takes in at most
;   hw_sm_bytes_per_ns (a ceiling: its 128 B/clk L1/shared-memory array at the max clock).
;   Hence time >= t_launch_ns + l2_bytes / (active_sms * hw_sm_bytes_per_ns) = t_launch_ns +
;   t_ingress_ns (cost.smt2). An instance can beat the incumbent only if that bound is below
;   it; written multiplied out (no symbolic division). Without grid or l2_bytes metrics the
;   rule claims nothing.
(define-fun rule_occupancy_floor () Bool
  (=> (and known_grid known_l2_bytes)
      (< (to_real l2_bytes) (* budget_ns (to_real (* active_sms hw_sm_bytes_per_ns))))))
