"""Benchmarks: above engines, render, movie and simulation, which they measure. Each is a
subcommand of `galaxyview bench` (cli/bench.py: its options and output):

engine (`bench engine`, plain `bench`): per-phase step timings on a Plummer sphere or a scene,
next to Bonsai; cpu (`bench cpu`): the CPU engines and pytreegrav at equal force error; hermite,
hierarchical, rings: the GPU Hermite, individual time steps, ring scenes and REBOUND;
gpu_engine (`bench gpu-engine`): the GPU engine's developers' bench; let_beside (`bench let`): a
parallel rank's LET export beside its walk on one GPU; domain_walks (`bench domains`): the walks
of K domains on one GPU; mpi_wait (`mpirun -n 2 galaxyview bench mpi-wait`): how late a rank
learns that a collective is complete; render (`bench render`): the renderer; movie (`bench
movie`): recording; reference: Bonsai's figures and the shared step medians.
"""
