"""The window's controls come from one table (app/control_table.py): a row added there is a
panel widget that reaches its look field or engine parameter, is kept in the settings and has
its shortcut; the table in docs/viewer.md is the table's own."""
from dataclasses import dataclass
from pathlib import Path

import pytest

from galaxyview.app import control_table
from galaxyview.app.control_table import Control, Key
from galaxyview.errors import ParameterError
from galaxyview.render.look import Look

DOCS = Path(__file__).resolve().parents[1] / "docs" / "viewer.md"
WAIT_MS = 20_000


def test_the_docs_tables_are_the_tables():
    text = DOCS.read_text(encoding="utf-8")
    assert control_table.with_table(text) == text, (
        "docs/viewer.md's controls or shortcuts table is out of date: run "
        "python -m galaxyview.app.control_table docs/viewer.md")


def test_a_row_the_panel_cannot_build_is_refused():
    good = Control("glow", "Glow", "slider", "look", "look", "glow", (0.0, 4.0))
    control_table.check([*control_table.CONTROLS, good])
    for bad in (Control("x", "X", "combo", "look", "look", "x"),  # no choices
                Control("x", "X", "slider", "look", "look", "x", (1.0, 1.0)),  # empty range
                Control("x", "X", "check", "look", "param", "x"),  # sets: no such kind
                Control("x", "X", "spin", "physics", "param", "x", (0, 3)),  # no default
                Control("theta", "θ", "check", "look", "look", "boxes"),  # the name repeats
                Control("x", "X", "check", "look", "look", "x", keys=(Key("F", "f"),)),  # fit's
                Control("x", "X", "check", "look", "look", "x", keys=(Key("G", "g"),))):  # fly's
        with pytest.raises(ValueError):
            control_table.check([*control_table.CONTROLS, bad])


@dataclass
class GlowLook(Look):
    """A look with two fields the shipped table does not know: a float and a choice."""

    glow: float = 0.0
    glow_shape: str = "disc"

    def validate(self):
        super().validate()
        if not 0 <= float(self.glow) <= 4 or self.glow_shape not in ("disc", "star"):
            raise ParameterError("glow must be in [0, 4], glow_shape disc or star")
        return self


NEW_ROWS = [
    Control("glow", "Glow", "slider", "look", "look", "glow", (0.0, 4.0), decimals=2,
            setting="look/glow", keys=(Key("L", "more glow", 0.5),), tooltip="Glow strength"),
    Control("glow_shape", "Glow shape", "combo", "look", "look", "glow_shape",
            choices=("disc", "star"), setting="look/glow_shape",
            keys=(Key("H", "the next glow shape"),)),
    Control("alpha", "α", "slider", "physics", "param", "alpha", (1e-4, 1.0), 0.0025,
            decimals=4, log=True, applies=("simulating",)),
]


@pytest.mark.gui
def test_a_row_added_to_the_table_is_a_working_control(qtbot, tmp_path, monkeypatch):
    pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")
    from PyQt6.QtCore import QSettings, Qt
    from PyQt6.QtWidgets import QGroupBox

    from galaxyview.app import window as window_module
    from galaxyview.app.controls import NumberControl
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    monkeypatch.setattr(control_table, "CONTROLS", [*control_table.CONTROLS, *NEW_ROWS])
    monkeypatch.setattr(window_module, "Look", GlowLook)
    path = tmp_path / "viewer.conf"

    def open_window():
        w = MainWindow(ViewOptions(backend="cpu"), QSettings(str(path),
                                                            QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.open_source("plummer", 600)
        w.show()
        qtbot.waitExposed(w)
        return w

    def close(w):
        w.close()
        assert wait_for_workers(WAIT_MS)

    w = open_window()
    try:
        p = w.panel
        glow, shape, alpha = p.glow, p.glow_shape, p.alpha
        assert isinstance(glow, NumberControl) and glow.isVisibleTo(p)
        assert glow.parent().title() == "Look" and isinstance(glow.parent(), QGroupBox)
        assert alpha.parent().title().startswith("Physics") and alpha.isEnabled()
        assert alpha.value() == pytest.approx(w.sim.engine.params.alpha)  # the scene's value
        assert [shape.itemText(i) for i in range(shape.count())] == ["disc", "star"]

        glow.spin.setValue(1.5)  # the widget reaches the look
        shape.setCurrentText("star")
        assert (w.look.glow, w.look.glow_shape) == (1.5, "star")
        alpha.spin.setValue(0.004)  # ... and the engine, through the worker
        qtbot.waitUntil(lambda: w.sim.engine.params.alpha == pytest.approx(0.004),
                        timeout=WAIT_MS)

        w.activateWindow()
        qtbot.waitUntil(w.isActiveWindow, timeout=WAIT_MS)
        qtbot.keyClick(w, Qt.Key.Key_L)  # its shortcuts: a step of the slider ...
        assert w.look.glow == pytest.approx(2.0) and glow.value() == pytest.approx(2.0)
        qtbot.keyClick(w, Qt.Key.Key_H)  # ... and the combo's next choice
        assert w.look.glow_shape == "disc" and shape.currentText() == "disc"
        qtbot.keyClick(w, Qt.Key.Key_H)
        assert w.look.glow_shape == "star"
        qtbot.keyClick(w, Qt.Key.Key_F1)
        assert "more glow" in w.help_dialog.text() and "glow shape" in w.help_dialog.text()
        w.help_dialog.close()
    finally:
        close(w)

    stored = QSettings(str(path), QSettings.Format.IniFormat)
    assert stored.value("look/glow", type=float) == pytest.approx(2.0)
    assert stored.value("look/glow_shape") == "star"
    w = open_window()  # the next run starts with them
    try:
        assert (w.look.glow, w.look.glow_shape) == (pytest.approx(2.0), "star")
        assert w.panel.glow.value() == pytest.approx(2.0)
        assert w.panel.glow_shape.currentText() == "star"
    finally:
        close(w)
