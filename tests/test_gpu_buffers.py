"""The GPU engine's buffer sizes, with a stand-in for the CUDA driver (no GPU needed): the
look-back descriptors hold a tile a block where build_level gives each cell of a small level
its own block (a level of 20 000 particles' tree overran them and hung the build)."""
import pytest

from galaxyview.engines.gpu.buffers import TREE_BLOCKS_PER_SM, Buffers, cell_capacity


class FakeDriver:
    class MemoryError(Exception):
        pass

    def __init__(self):
        self.zeroed = {}

    def mem_alloc(self, nbytes):
        return _Alloc(nbytes)

    def memset_d8(self, ptr, value, nbytes):
        self.zeroed[int(ptr)] = nbytes


class _Alloc:
    _next = 1 << 20

    def __init__(self, nbytes):
        self.addr = _Alloc._next
        _Alloc._next += nbytes + 256

    def __int__(self):
        return self.addr

    def free(self):
        pass


@pytest.mark.parametrize("n", [1, 1000, 20_000, 65_537, 4_000_000])
@pytest.mark.parametrize("n_sm", [8, 132, 144])
def test_descriptors_and_boxes_cover_a_block_a_cell(n, n_sm):
    driver = FakeDriver()
    b = Buffers(driver, "stand-in", gmax=64)
    b.ensure(n, n_sm, 3, 256)
    blocks = TREE_BLOCKS_PER_SM * n_sm
    assert b.tree_blocks == blocks
    assert b.cell_cap >= cell_capacity(n)
    tiles = b._sizes["desc"] // 8
    assert tiles >= blocks + 1 and tiles >= b.cell_cap // 32 + 1  # a cell a tile, or 32 cells
    assert driver.zeroed[b.ptr("desc")] == b._sizes["desc"]  # the look-back starts clean
    assert b._sizes["bbox"] >= blocks * 6 * 4  # a box a block of bbox_partial
    b.grow_cells()  # the tree outgrew its cells: the descriptors grow with them
    assert b._sizes["desc"] // 8 >= max(blocks, b.cell_cap // 32) + 1
