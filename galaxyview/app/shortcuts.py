"""Menus and keyboard shortcuts of the window (listed under Help > Shortcuts); the control
table's shortcuts (app/control_table.py) join the View menu and the list."""
from __future__ import annotations

from PyQt6.QtGui import QAction, QActionGroup, QKeySequence
from PyQt6.QtWidgets import QMessageBox

from galaxyview.app import control_wiring
from galaxyview.app.control_table import shortcuts
from galaxyview.render.projections import PROJECTIONS

SHOW_KEYS = [
    ("Space", "pause / go on with the show"), ("Right  Page Down", "next scene"),
    ("Left  Page Up", "back a scene"), ("F11", "full screen on / off"),
    ("any other key, click", "take the controls (the show goes on after its idle time)"),
]


def build_menus(w) -> None:
    """File, Simulation, View and Help menus of MainWindow `w`, with their shortcuts."""
    def action(menu, text, key, slot):
        a = QAction(text, w)
        a.setShortcut(QKeySequence(key))
        a.triggered.connect(slot)
        menu.addAction(a)
        return a

    p, bar = w.panel, w.menuBar()
    m = bar.addMenu("&File")
    action(m, "Open scene or snapshot…", "Ctrl+O", w.open_dialog)
    w.record_action = action(m, "Record movie…", "Ctrl+M", w.record_clicked)
    w.record_action.setEnabled(p.record.isEnabled())
    action(m, "Save screenshot…", "Ctrl+Shift+S", w.screenshot_dialog)
    action(m, "Save look…", "", w.save_look_dialog)
    action(m, "Quit", "Ctrl+Q", w.close)
    m = bar.addMenu("&Simulation")
    action(m, "Play / pause", "Space", p.play.toggle)
    action(m, "Step", "N", w.single_step)
    action(m, "Reset", "Ctrl+R", w.reset)
    m = bar.addMenu("&View")
    action(m, "Fit camera", "F", w.fit_camera)
    action(m, "Add camera keyframe", "K", w.add_keyframe)
    action(m, "Follow the camera path", "P", p.keyframes.follow.toggle)
    for row in p.table:
        for k in row.keys:
            action(m, k.text[:1].upper() + k.text[1:], k.key,
                   lambda _=False, row=row, k=k: control_wiring.press(w, row, k))
    action(m, "Full screen", "F11", w.toggle_full_screen)
    projections, group = m.addMenu("Projection"), QActionGroup(w)
    w.projection_actions = {}
    for name in PROJECTIONS:
        a = QAction(name, w, checkable=True, checked=name == "perspective")
        a.triggered.connect(lambda _=False, n=name: w.set_projection(n))
        group.addAction(a)
        projections.addAction(a)
        w.projection_actions[name] = a
    action(m, "Larger text", "Ctrl+=", lambda: w.set_text_scale(w.text_scale * 1.25))
    action(m, "Smaller text", "Ctrl+-", lambda: w.set_text_scale(w.text_scale / 1.25))
    m = bar.addMenu("&Help")
    action(m, "Shortcuts", "F1", lambda: show_shortcuts(w))


def show_shortcuts(w) -> None:
    rows = "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{v}</td></tr>"
                   for k, v in shortcuts(w.panel.table))
    box = QMessageBox(QMessageBox.Icon.Information, "Shortcuts", f"<table>{rows}</table>",
                      QMessageBox.StandardButton.Ok, w)
    box.open()
    w.help_dialog = box
