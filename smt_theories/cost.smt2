; Lower-bound cost model for dominance (DESIGN.md section 5, WALKTHROUGH.md section 6).
;
; cost_lb_ns is a TRUE LOWER BOUND on the time of any instance: every term divides work that
; the instance must do by a hardware CEILING (hardware/<gpu>.smt2: peak rates rounded up at the
; maximum clock, no efficiency factor), and launches add only a floor. If cost_lb_ns >= the
; incumbent's measured time for every assignment of a family, no instance of the family can
; beat the incumbent, and the family may be dropped (rules/bandwidth_bound.smt2 and friends
; state the same comparisons without symbolic divisions, which Z3 decides much faster).
;
; Uses the definitions of resources.smt2. Times are in nanoseconds.

; Bytes of DRAM traffic that an L2-warm run can avoid: the inputs still resident in L2 from
; before the launch (at most hw_l2_bytes) plus the outputs that are still dirty in L2 when the
; kernel ends (at most hw_l2_bytes). Set to 0 if every timed run starts with a flushed L2 and
; ends with a device synchronisation that writes back (prism's tuner replays CUDA graphs, so
; L2 stays warm: keep 2 x hw_l2_bytes).
(define-fun l2_warm_bytes () Int (* 2 hw_l2_bytes))

; Launches: each kernel costs at least the launch floor.
(define-fun t_launch_ns () Real (to_real (* kernels hw_launch_floor_ns)))

; DRAM: the traffic that cannot be served from a warm L2 crosses the DRAM interface.
(define-fun t_dram_ns () Real
  (/ (to_real (max_int 0 (- dram_bytes l2_warm_bytes))) (to_real hw_dram_bytes_per_ns)))

; L2: every byte that blocks load passes through L2.
(define-fun t_l2_ns () Real (/ (to_real l2_bytes) (to_real hw_l2_bytes_per_ns)))

; Tensor cores: no flop is faster than the dense f16 tensor-core peak.
(define-fun t_flops_ns () Real (/ (to_real flops) (to_real hw_tensor_flops_per_ns)))

; Special-function units.
(define-fun t_sfu_ns () Real (/ (to_real sfu_ops) (to_real hw_sfu_ops_per_ns)))

; SM ingress: the loaded bytes enter at most active_sms SMs, each at most hw_sm_bytes_per_ns.
; Only when grid and l2_bytes are known (otherwise 0: no claim).
(define-fun t_ingress_ns () Real
  (ite (and known_grid known_l2_bytes)
       (/ (to_real l2_bytes) (to_real (* active_sms hw_sm_bytes_per_ns)))
       0.0))

; Wave quantization (single kernel, uniform blocks): the busiest SM runs busiest_sm_blocks
; blocks, each doing 1/grid_blocks of the work, at no more than one SM's share of each peak.
(define-fun t_wave_ns () Real
  (ite (and known_grid (= kernels 1))
       (max_real
         (ite known_l2_bytes
              (/ (to_real (* busiest_sm_blocks l2_bytes))
                 (to_real (* grid_blocks hw_sm_bytes_per_ns)))
              0.0)
         (max_real
           (/ (to_real (* busiest_sm_blocks flops hw_sms))
              (to_real (* grid_blocks hw_tensor_flops_per_ns)))
           (/ (to_real (* busiest_sm_blocks sfu_ops hw_sms))
              (to_real (* grid_blocks hw_sfu_ops_per_ns)))))
       0.0))

(define-fun cost_lb_ns () Real
  (+ t_launch_ns
     (max_real (max_real (max_real t_dram_ns t_l2_ns) (max_real t_flops_ns t_sfu_ns))
               (max_real t_ingress_ns t_wave_ns))))

; The time an instance has left for its work before it ties the incumbent.
(declare-const incumbent_ns Real)
(define-fun budget_ns () Real (- incumbent_ns t_launch_ns))
