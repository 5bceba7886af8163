; rule: wave_quantization
; kind: dominance
; soundness: in a single-kernel family every block does the same work (prism's block graphs
;   have uniform tiles; metric contract), i.e. 1/grid_blocks of l2_bytes, flops and sfu_ops.
;   Whatever the block scheduler does, some SM runs at least busiest_sm_blocks =
;   ceil(grid_blocks / hw_sms) blocks (pigeonhole), and one SM moves at most
;   hw_sm_bytes_per_ns and computes at most 1/hw_sms of each peak rate. So time >= t_launch_ns
;   + busiest_sm_blocks * (work / grid_blocks) / per-SM rate (t_wave_ns in cost.smt2) for each
;   kind of work; e.g. 133 equal blocks on 132 SMs take two block-times. Multiplied out by
;   grid_blocks > 0. Not applied to multi-kernel families (their grid metrics are maxima).
(define-fun rule_wave_quantization () Bool
  (=> (and known_grid (= kernels 1))
      (and (=> known_l2_bytes
               (< (to_real (* busiest_sm_blocks l2_bytes))
                  (* budget_ns (to_real (* grid_blocks hw_sm_bytes_per_ns)))))
           (< (to_real (* busiest_sm_blocks flops hw_sms))
              (* budget_ns (to_real (* grid_blocks hw_tensor_flops_per_ns))))
           (< (to_real (* busiest_sm_blocks sfu_ops hw_sms))
              (* budget_ns (to_real (* grid_blocks hw_sfu_ops_per_ns)))))))
