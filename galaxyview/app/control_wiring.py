"""The control table's rows wired to a MainWindow: a widget's value reaches the engine's
parameters, the ring's sheet, the look or a window method; shortcuts; a scene's values shown."""
from __future__ import annotations

from galaxyview.app import controls
from galaxyview.app.control_table import CONDITIONS


def connect(window) -> None:
    """Each row's widget applies its value when the user settles on it."""
    p = window.panel
    for row in p.table:
        controls.changed(p.controls[row.name]).connect(
            lambda v, row=row: apply(window, row, v))


def apply(window, row, value) -> None:
    if row.sets == "param":
        window.set_param(row.field, value)
    elif row.sets == "sheet":
        window.set_sheet(**{row.field: value})
    elif row.sets == "look":
        window.set_look(**{row.field: value})
    else:
        getattr(window, row.field)(value)


def current(window, row):
    """The value the row sets as it is now (a look field's from the look itself)."""
    if row.sets == "look":
        return getattr(window.look, row.field)
    return controls.value(window.panel.controls[row.name])


def press(window, row, key) -> None:
    """Shortcut `key` of `row` (control_table.Key): toggle, next choice, or a step."""
    w = window.panel.controls[row.name]
    if row.kind == "check":
        w.toggle()
    elif row.kind == "combo":
        w.setCurrentIndex((w.currentIndex() + 1) % w.count())
    else:
        v = current(window, row)
        v = v * key.by if row.kind == "slider" and row.log else v + key.by
        lo, hi = row.range
        v = min(max(v, lo), hi)
        if row.kind == "spin":
            w.setValue(int(v))  # its signal applies it
            return
        controls.show(w, v)
        apply(window, row, v)


def show_sim(window, sim) -> None:
    """A scene's engine parameters in their controls; controls that cannot act are off."""
    p = window.panel
    for row in p.table:
        w = p.controls[row.name]
        if row.sets == "param":
            controls.show(w, getattr(sim.engine.params, row.field))
        if row.applies:
            w.setEnabled(all(CONDITIONS[c](sim) for c in row.applies))

