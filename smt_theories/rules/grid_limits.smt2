; rule: grid_limits
; kind: hard
; soundness: CUDA rejects a launch whose grid extent is below 1 or above hw_max_grid_x /
;   hw_max_grid_y / hw_max_grid_z along an axis (cudaErrorInvalidConfiguration). The
;   defaults of absent grid metrics (1) satisfy it.
(define-fun rule_grid_limits () Bool
  (and (>= grid_x 1) (<= grid_x hw_max_grid_x)
       (>= grid_y 1) (<= grid_y hw_max_grid_y)
       (>= grid_z 1) (<= grid_z hw_max_grid_z)
       (>= grid_blocks 1)))
