"""Hard-sphere collisions (numpy): finding touching pairs across a periodic box's images, and
resolving them once each with momentum conserved (the CPU collision module and the tests).

A pair collides when the spheres overlap and approach. The pairs of a step are resolved in a
pseudo-random priority order (`priority`: a hash of the two particles' indices and the time,
the same on the GPU, so that restarts and both engines order alike), as if one after the
other (REBOUND's way): a pair sees the velocities that the earlier pairs of its particles left. Done in rounds, each resolving at once every
pair that comes first for both its particles, which gives the same result as the sequence.
At most ROUNDS_MAX rounds a step: pairs still pending then are left for the next step (they
are found again if they still touch), which bounds a step's cost when a long time step lets
spheres sink deep into each other (dozens of contacts a particle); nothing is applied to
them, so momentum stays exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from galaxyview.errors import GalaxyviewError

ROUNDS_MAX = 256  # rounds of resolution a step (both engines); measured <= 68 in wakes at dt 50 s


@dataclass
class Pairs:
    """Candidate pairs: i < j (by index), the offset added to j's position and velocity (the
    ghost box j is seen in; zero inside the box)."""

    i: np.ndarray
    j: np.ndarray
    dpos: np.ndarray  # (P, 3)
    dvel: np.ndarray  # (P, 3)

    def __len__(self) -> int:
        return len(self.i)

    def keys(self) -> set:
        return set(zip(self.i.tolist(), self.j.tolist()))


def _with_images(pos, reach: float, ghost_pos):
    """The particles followed by their images in the ghost boxes that come within `reach` of
    the box: (positions, the particle each stands for, the ghost box of each or -1)."""
    n = len(pos)
    pts, src, k_of = [pos], [np.arange(n)], [np.full(n, -1)]
    if ghost_pos is not None and len(ghost_pos) and n:
        lo, hi = pos.min(axis=0) - reach, pos.max(axis=0) + reach
        for k, o in enumerate(ghost_pos):
            img = pos + o
            near = np.flatnonzero(((img[:, :2] >= lo[:2]) & (img[:, :2] <= hi[:2])).all(axis=1))
            pts.append(img[near]), src.append(near), k_of.append(np.full(len(near), k))
    return np.concatenate(pts), np.concatenate(src), np.concatenate(k_of)


class Fixed:
    """Spheres that stay where they are (with their images in the ghost boxes), asked which
    of some other spheres overlap them: re-drawing a few overlapping spheres among millions
    checks those few alone."""

    def __init__(self, pos, radius, ghost_pos=None):
        pos = np.asarray(pos, np.float64)
        self.r_max = float(np.max(radius)) if len(pos) else 0.0
        allpos, src, _ = _with_images(pos, 2.0 * self.r_max, ghost_pos)
        self.tree, self.radius = cKDTree(allpos), np.asarray(radius, np.float64)[src]

    def hit(self, pos, radius) -> np.ndarray:
        """Bool per sphere (pos, radius): does it overlap one of the fixed spheres?"""
        pos, radius = np.asarray(pos, np.float64), np.asarray(radius, np.float64)
        out = np.zeros(len(pos), bool)
        if len(pos) and self.tree.n:
            near = cKDTree(pos).sparse_distance_matrix(
                self.tree, float(radius.max()) + self.r_max, output_type="ndarray")
            i = near["i"][near["v"] < radius[near["i"]] + self.radius[near["j"]]]
            out[i] = True
        return out


def touching(pos, radius, ghost_pos=None, ghost_vel=None) -> Pairs:
    """Pairs of spheres that overlap, directly or between a particle and another's image in a
    ghost box (offsets ghost_pos, ghost_vel (K, 3)); each pair once."""
    pos = np.asarray(pos, np.float64)
    n, reach = len(pos), 2.0 * float(np.max(radius)) if len(pos) else 0.0
    allpos, src, k_of = _with_images(pos, reach, ghost_pos)
    ab = cKDTree(allpos).query_pairs(reach, output_type="ndarray") if n else np.zeros((0, 2), int)
    a, b = ab[:, 0], ab[:, 1]
    a, b = np.minimum(a, b), np.maximum(a, b)
    keep = a < n  # a real particle ...
    a, b = a[keep], b[keep]
    j, k = src[b], k_of[b]
    keep = a < j  # ... and each physical pair once (its mirror across the edge left out)
    a, b, j, k = a[keep], b[keep], j[keep], k[keep]
    d = allpos[b] - pos[a]
    keep = np.einsum("ij,ij->i", d, d) < (radius[a] + radius[j]) ** 2
    a, j, k = a[keep], j[keep], k[keep]
    zero = np.zeros((len(a), 3))
    dpos = zero if ghost_pos is None or not len(ghost_pos) else \
        np.where(k[:, None] >= 0, np.asarray(ghost_pos)[k], 0.0)
    dvel = zero if ghost_vel is None or not len(ghost_vel) else \
        np.where(k[:, None] >= 0, np.asarray(ghost_vel)[k], 0.0)
    order = np.lexsort((j, a))
    return Pairs(a[order], j[order], dpos[order], dvel[order])


def separate(pos, radius, mass, ghost_pos=None, tolerance: float = 1e-6,
             sweeps: int = 200) -> tuple[np.ndarray, int]:
    """Overlapping spheres moved apart along their line of centres, each pair's overlap shared
    in inverse proportion to the masses (the centre of mass stays), sweep after sweep until
    no overlap exceeds `tolerance` times the pair's contact distance. Velocities are not
    touched: overlaps in an initial state are removed without the energy an impulse would
    bring. Returns (positions, sweeps used); GalaxyviewError when they do not come apart."""
    pos = np.array(pos, np.float64)
    radius, mass = np.asarray(radius, np.float64), np.asarray(mass, np.float64)
    for sweep in range(sweeps):
        p = touching(pos, radius, ghost_pos)
        d = pos[p.j] + p.dpos - pos[p.i]
        dist = np.linalg.norm(d, axis=1)
        contact = radius[p.i] + radius[p.j]
        depth = contact - dist
        deep = depth > tolerance * contact
        if not deep.any():
            return pos, sweep
        i, j, d, dist, depth = p.i[deep], p.j[deep], d[deep], dist[deep], depth[deep]
        # coincident centres: any direction will do
        n = np.where(dist[:, None] > 0, d / np.maximum(dist, 1e-300)[:, None], [1.0, 0, 0])
        # a little beyond contact, so that the sweeps end; a pair whose particle overlaps
        # several others moves by a share of it (no overshoot), the same for both (the centre
        # of mass stays)
        hits = np.bincount(np.r_[i, j], minlength=len(pos))
        push = ((1.0 + 1e-3) * depth / np.maximum(hits[i], hits[j]))[:, None] * n
        wi = (mass[j] / (mass[i] + mass[j]))[:, None]
        move = np.zeros_like(pos)
        np.add.at(move, i, -wi * push)
        np.add.at(move, j, (1 - wi) * push)
        pos += move
    raise GalaxyviewError(f"overlapping spheres did not come apart in {sweeps} sweeps (the "
                          "spheres fill the space too densely); lower the optical depth")


def step_seed(time: float) -> int:
    """32 bits of the float64 time: the priorities' seed of the step ending at `time`."""
    bits = int(np.float64(time).view(np.uint64))
    return (bits ^ (bits >> 32)) & 0xFFFFFFFF


def priority(i, j, seed: int) -> np.ndarray:
    """uint64 priority of pairs (i, j) (original indices; low first): a 32-bit hash above the
    pair's place in the list (kernels/collision_hard_spheres.cu col_priority)."""
    a, b = np.asarray(i).astype(np.uint32), np.asarray(j).astype(np.uint32)
    with np.errstate(over="ignore"):
        h = (a * np.uint32(0x9E3779B1)) ^ ((b + np.uint32(0x7F4A7C15)) * np.uint32(0x85EBCA77)) \
            ^ (np.uint32(seed) * np.uint32(0xC2B2AE3D))
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return (h.astype(np.uint64) << np.uint64(32)) | np.arange(len(a), dtype=np.uint64)


def resolve(pairs: Pairs, pos, vel, mass, restitution, priority,
            rounds_max: int = ROUNDS_MAX) -> tuple[int, int]:
    """Resolve the approaching pairs in `priority` order (low first; distinct values), changing
    vel (N, 3) in place; restitution(v_n) gives eps_n of normal speeds. Returns (pairs
    resolved (approaching at their turn), pairs deferred: still pending after rounds_max
    rounds)."""
    left = np.argsort(priority, kind="stable")
    done, n, rounds = 0, len(mass), 0
    while len(left) and rounds < rounds_max:
        rounds += 1
        i, j = pairs.i[left], pairs.j[left]
        first = np.full(n, len(pairs), np.int64)  # each particle's first pending pair
        rank = np.arange(len(left))
        np.minimum.at(first, i, rank)
        np.minimum.at(first, j, rank)
        now = (first[i] == rank) & (first[j] == rank)
        p = left[now]
        i, j = pairs.i[p], pairs.j[p]
        d = pos[j] + pairs.dpos[p] - pos[i]
        nrm = d / np.linalg.norm(d, axis=1)[:, None]
        vn = np.einsum("ij,ij->i", vel[j] + pairs.dvel[p] - vel[i], nrm)
        hit = vn < 0
        i, j, nrm, vn = i[hit], j[hit], nrm[hit], vn[hit]
        dv = (-(1.0 + restitution(vn)) * vn)[:, None] * nrm  # change of v_j - v_i
        mi, mj = mass[i][:, None], mass[j][:, None]
        vel[i] -= mj / (mi + mj) * dv
        vel[j] += mi / (mi + mj) * dv
        done += len(i)
        left = left[~now]
    return done, len(left)
