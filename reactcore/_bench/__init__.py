"""``reactcore bench``: reactcore's tool scheduling measured against the seed's design.

One concept per module:

- ``workloads``: the tools of a batch (io, blocking, overhead, mixed, cancel) and their
  nominal times;
- ``seed_baseline``: the seed's thread-pool + semaphore + future-timeout design, ported;
- ``executors``: what runs a batch (reactcore sequential / parallel, the seed), alone or
  in an agent turn;
- ``measure``: the plan, the one loop over cases × executors × repeats, the timings;
- ``results``: speedups and ratios to the ideal;
- ``table``, ``jsonl``, ``plot``: the outputs (rich, JSON lines, matplotlib);
- ``machine``: what it ran on;
- ``command``: the command itself (progress bar, then outputs).
"""
