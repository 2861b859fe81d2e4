"""Benchmarks: above engines, render, movie and simulation, which they measure.

engine: `galaxyview bench` (per-phase step timings on a Plummer sphere, next to Bonsai);
gpu_engine: the GPU engine's developers' bench (`python -m galaxyview.bench.gpu_engine`);
let_beside: a parallel rank's LET export beside its walk on one GPU
(`python -m galaxyview.bench.let_beside`); mpi_wait: how late a rank learns that a collective
is complete (`mpirun -n 2 python -m galaxyview.bench.mpi_wait`);
render: the renderer (`python -m galaxyview.bench.render`); movie: recording
(`python -m galaxyview.bench.movie`); reference: Bonsai's figures and the shared step medians.
"""
