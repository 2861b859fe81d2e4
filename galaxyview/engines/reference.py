"""Reference figures the engines are measured against.

Bonsai built from its public source for sm_90 and run on an H200 (Plummer sphere, eps 0.05,
dt 1/16, tree rebuilt every step, shared time step): (N, theta) -> (walk ms, build ms, step ms),
where build is sort + tree construction + multipoles. Flops follow Bonsai's convention.
"""

FLOPS_PP = 23  # per particle-particle interaction
FLOPS_PC = 65  # per particle-cell interaction (monopole + quadrupole)
FP32_PEAK_TFLOPS_H200 = 65.3  # measured FMA peak, 132 SMs (H100 has the same)

BONSAI_H200 = {
    (1 << 20, 0.4): (14.35, 1.89, 16.5),
    (1 << 20, 0.75): (4.31, 1.93, 6.5),
    (1 << 22, 0.4): (61.7, 5.18, 67.5),
    (1 << 22, 0.75): (18.0, 5.17, 23.8),
    (1 << 24, 0.4): (262.7, 21.1, 286.0),
    (1 << 24, 0.75): (78.4, 21.1, 101.6),
}


def walk_tflops(pp_per_particle: float, pc_per_particle: float, n: int, walk_ms: float) -> float:
    """Walk speed by Bonsai's flop count."""
    if walk_ms <= 0:
        return 0.0
    return (FLOPS_PP * pp_per_particle + FLOPS_PC * pc_per_particle) * n / (walk_ms / 1e3) / 1e12
