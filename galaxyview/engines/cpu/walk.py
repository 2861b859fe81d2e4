"""The breadth-first tree walk of all groups at once (Bonsai's MAC).

The walk keeps a list of (group, cell) pairs, starting from (every group, root), one tree level
per pass. A cell is accepted (particle-cell interaction) when d > l/theta + delta, d being the
distance from the group's bounding box to the cell's centre of mass (0 inside the box), l the
longest side of the box of the cell's particles and delta the distance from that box's centre
to the centre of mass (engines/cpu/multipoles.py); an
opened leaf gives particle-particle interactions with its particles; an opened internal cell
is replaced by its children.

The acceleration MAC (GADGET's relative criterion, params.mac = "acceleration") accepts a cell
when d > l + delta and G M l^2 / d^4 <= alpha |a|, |a| the smallest acceleration of the
group's particles at their last force evaluation (AccelerationMAC).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galaxyview.engines.cpu.cells import Tree, ranges
from galaxyview.engines.cpu.groups import group_boxes


@dataclass
class Lists:
    """Interaction lists, each sorted by group: pp_* (group, opened leaf), pc_* (group, cell)."""

    pp_group: np.ndarray
    pp_cell: np.ndarray
    pc_group: np.ndarray
    pc_cell: np.ndarray


@dataclass
class AccelerationMAC:
    """Per cell M l^2 and per group G / (alpha |a|_min), float32, for the relative MAC."""

    ml2: np.ndarray
    ginv: np.ndarray

    @classmethod
    def of(cls, tree: Tree, acc_sorted: np.ndarray, G: float, alpha: float):
        """From the last accelerations of the tree's particles (sorted order, (N, 3))."""
        a = np.sqrt(np.einsum("ij,ij->i", acc_sorted, acc_sorted))
        amin = np.minimum.reduceat(a, tree.group_begin)
        with np.errstate(divide="ignore"):
            ginv = (G / (alpha * amin)).astype(np.float32)
        ml2 = (tree.cell_mass.astype(np.float64) * tree.extent * tree.extent).astype(np.float32)
        return cls(ml2, ginv)


def interaction_lists(tree: Tree, theta: float, groups=None, amac=None) -> Lists:
    """Walk the tree with the MAC d > l/theta + delta (or `amac`, an AccelerationMAC) for
    `groups` (indices; default all)."""
    return Walker(tree, theta, amac).lists(groups)


class Walker:
    """The per-cell and per-group tables of the walk, shared by walks of several group sets."""

    def __init__(self, tree: Tree, theta: float, amac: AccelerationMAC | None = None):
        self.box = np.concatenate(group_boxes(tree), axis=1)  # (G, 6): lo, hi
        self.amac = amac
        if amac is not None:
            theta = 1.0  # the relative MAC's geometric part: d > l + delta
        ropen = (tree.extent / theta + tree.delta).astype(np.float32)
        self.cell = np.concatenate([tree.com, (ropen * ropen)[:, None]], axis=1)  # com, ropen^2
        self.kids = tree.child_count.astype(np.int32)
        self.first_kid = tree.child_begin.astype(np.int32)

    def lists(self, groups=None) -> Lists:
        g = np.arange(len(self.box), dtype=np.int32) if groups is None else \
            np.asarray(groups, dtype=np.int32)
        c = np.zeros(len(g), np.int32)
        pp, pc = [], []
        while len(g):
            cd, bx = self.cell.take(c, axis=0), self.box.take(g, axis=0)
            dv = np.maximum(bx[:, :3] - cd[:, :3], cd[:, :3] - bx[:, 3:])
            np.maximum(dv, 0, out=dv)
            d2 = np.einsum("ij,ij->i", dv, dv)
            accept = d2 > cd[:, 3]
            if self.amac is not None:
                accept &= d2 * d2 > self.amac.ml2.take(c) * self.amac.ginv.take(g)
            kids = np.where(accept, -1, self.kids.take(c))  # -1: accepted, 0: opened leaf
            pc.append(_select(g, c, kids == -1))
            pp.append(_select(g, c, kids == 0))
            g, c = _select(g, c, kids > 0)
            kids = kids[kids > 0]
            c = ranges(self.first_kid.take(c), kids).astype(np.int32)
            g = np.repeat(g, kids)
        return Lists(*_by_group(pp), *_by_group(pc))


def _select(g, c, mask):
    at = np.flatnonzero(mask)
    return g.take(at), c.take(at)


def _by_group(pairs):
    g = np.concatenate([p[0] for p in pairs]).astype(np.int64)
    c = np.concatenate([p[1] for p in pairs]).astype(np.int64)
    order = np.argsort(g, kind="stable")
    return g[order], c[order]
