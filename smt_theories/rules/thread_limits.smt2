; rule: thread_limits
; kind: hard
; soundness: CUDA rejects a launch with fewer than 1 or more than hw_threads_per_block
;   threads per block (cudaErrorInvalidConfiguration), and a block larger than
;   hw_threads_per_sm could never become resident.
(define-fun rule_thread_limits () Bool
  (and (>= threads_per_block 1)
       (<= threads_per_block hw_threads_per_block)
       (<= threads_per_block hw_threads_per_sm)))
