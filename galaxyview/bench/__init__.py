"""Benchmarks: above engines, render, movie and simulation, which they measure.

engine: `galaxyview bench` (per-phase step timings on a Plummer sphere, next to Bonsai);
gpu_engine: the GPU engine's developers' bench (`python -m galaxyview.bench.gpu_engine`);
render: the renderer (`python -m galaxyview.bench.render`); movie: recording
(`python -m galaxyview.bench.movie`); reference: Bonsai's figures and the shared step medians.
"""
