"""Show mode: the window full screen and unattended, looping a playlist (model/playlist.py):
each scene with its camera programme (render/show.py) and captions in large type (the
window's text scale), a cross-fade from the last picture of one scene into the next; no
cursor, panel, timeline or HUD. The presenter's keys (app/shortcuts.py SHOW_KEYS) pause the
show, skip a scene or go back one, and toggle full screen; any other key, click, wheel or mouse
move hands control back (the panel comes back); after the playlist's idle seconds without
input the show goes on with the next scene."""
from __future__ import annotations

import sys
import time

import numpy as np
from PyQt6.QtCore import QEvent, QObject, QPropertyAnimation, Qt, QTimer
from PyQt6.QtGui import QCursor, QImage, QPixmap
from PyQt6.QtWidgets import QApplication, QGraphicsOpacityEffect, QLabel

from galaxyview.errors import GalaxyviewError
from galaxyview.model.units import in_seconds
from galaxyview.movie.recorder import follow_target
from galaxyview.render.show import CameraProgramme, StoryPacer, caption_lines

TICK_MS = 100
INPUT_EVENTS = (QEvent.Type.KeyPress, QEvent.Type.MouseButtonPress, QEvent.Type.Wheel,
                QEvent.Type.MouseMove)
MOVE_PX = 8  # the pointer must move this far to count as a user
PAUSE_KEYS = (Qt.Key.Key_Space,)
NEXT_KEYS = (Qt.Key.Key_Right, Qt.Key.Key_PageDown)  # presenter clickers send the page keys
BACK_KEYS = (Qt.Key.Key_Left, Qt.Key.Key_PageUp)
FULL_SCREEN_KEYS = (Qt.Key.Key_F11,)
PRESENTER_KEYS = PAUSE_KEYS + NEXT_KEYS + BACK_KEYS + FULL_SCREEN_KEYS


class ShowController(QObject):
    """Drives a MainWindow through `playlist`; `items` > 0 closes the window after that many
    scenes (demos and tests). `active` is False while the user has control."""

    def __init__(self, window, playlist, fullscreen: bool = True, items: int = 0,
                 text_scale: float | None = None):
        super().__init__(window)
        self.window, self.playlist = window, playlist
        self.fullscreen, self.max_items = fullscreen, items
        self.index, self.shown_items, self.active = -1, 0, True
        self.paused = False  # the presenter held the show (Space): the scene's clock stops
        self._paused_at = 0.0
        self._hidden = []  # the timeline and scrub bars that were shown before the show
        if text_scale is not None:
            window.set_text_scale(text_scale)
        self.programme = None
        self.pacer = None  # keeps the scene's story to the item's time (render/show.py)
        self.item_started = 0.0
        self._pointer = None
        self.caption = QLabel(window.canvas.native)
        self.caption.setWordWrap(True)
        self.caption.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.fade = QLabel(window.canvas.native)
        self.fade.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._fade_effect = QGraphicsOpacityEffect(self.fade)
        self.fade.setGraphicsEffect(self._fade_effect)
        self._fade_anim = QPropertyAnimation(self._fade_effect, b"opacity", self)
        self._fade_anim.finished.connect(self.fade.hide)
        self.fade.hide()
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)
        self._idle = QTimer(self)
        self._idle.setSingleShot(True)
        self._idle.timeout.connect(self.resume)
        self.annotations = None  # the scale bar and galaxy names (app/annotations.py)
        if playlist.labels or playlist.scale_bar:
            from galaxyview.app.annotations import Annotations

            self.annotations = Annotations(window.canvas.native, playlist.labels,
                                           playlist.scale_bar)
        window.show_controller = self

    # -- running -------------------------------------------------------------------------------
    def start(self) -> None:
        self._chrome(False)
        if self.fullscreen:
            self.window.showFullScreen()
        else:
            self.window.show()
        QApplication.instance().installEventFilter(self)
        self.next_item()
        self._timer.start()

    def _chrome(self, on: bool) -> None:
        """The panel, energy plot, menus, HUD, timeline and scrub bars and the cursor: shown
        only while the user has control."""
        w = self.window
        for widget in (w.splitter.widget(1), w.plot, w.menuBar(), w.hud, w.colour_bar):
            widget.setVisible(on)
        w.hud_enabled = on
        if on:
            for bar in self._hidden:
                bar.setVisible(True)
            self._hidden = []
            w.unsetCursor()
            w.canvas.native.unsetCursor()
        else:
            self._hidden += [bar for bar in (w.timeline_bar, w.scrub) if not bar.isHidden()]
            for bar in (w.timeline_bar, w.scrub):
                bar.setVisible(False)
            w.setCursor(Qt.CursorShape.BlankCursor)
            w.canvas.native.setCursor(Qt.CursorShape.BlankCursor)

    # -- the presenter ---------------------------------------------------------------------------
    def toggle_pause(self) -> None:
        """Hold the show on this scene (simulation and camera programme stop), or go on."""
        if self.paused:
            self.paused = False
            self.item_started += time.perf_counter() - self._paused_at
            self.window.set_playing(True)
            if self.pacer is not None:
                self.pacer.hold(self.seconds(), self.window.step_frames)
        else:
            self.paused, self._paused_at = True, time.perf_counter()
            self.window.set_playing(False)
        print(f"show: {'held' if self.paused else 'going on'}", flush=True)

    def skip(self) -> None:
        self.paused = False
        self.next_item()

    def back(self) -> None:
        """The scene before this one, from its start."""
        self.paused = False
        self.index = (self.index - 2) % len(self.playlist.items)
        self.next_item()

    def _presenter_key(self, key) -> None:
        if key in PAUSE_KEYS:
            self.toggle_pause()
        elif key in NEXT_KEYS:
            self.skip()
        elif key in BACK_KEYS:
            self.back()
        elif key in FULL_SCREEN_KEYS:
            self.window.toggle_full_screen()

    def next_item(self) -> None:
        items = self.playlist.items
        self._start_fade()
        for _ in range(len(items)):
            self.index = (self.index + 1) % len(items)
            item = items[self.index]
            if self._open(item):
                break
        else:
            print("galaxyview show: no scene of the playlist could be opened", file=sys.stderr)
            self.window.close()
            return
        self.shown_items += 1
        print(f"show: {self.index + 1}/{len(items)} {item.scene} ({item.camera}, "
              f"{item.duration:g} s)", flush=True)

    def _open(self, item) -> bool:
        w = self.window
        w.canvas.camera.fixed()  # the last item's follow point belongs to its (closed) engine
        try:
            w.open_source(item.scene, item.n)
            if item.steps_per_frame:
                w.panel.steps_per_frame.setValue(item.steps_per_frame)
            sim = w.sim
            follow = None
            if item.camera == "follow":
                target, session = follow_target(sim), w.session
                follow = _LastKnown(session, target)
            self.programme = CameraProgramme(item, w.canvas.camera, follow)
        except GalaxyviewError as exc:
            print(f"galaxyview show: skipping {item.scene}: {exc}", file=sys.stderr, flush=True)
            return False
        w.set_playing(True)
        self.item_started = time.perf_counter()
        story = sim.scene.story_time if sim.scene is not None else None
        self.pacer = None
        if story and not item.steps_per_frame and sim.engine.frame_count is None:
            self.pacer = StoryPacer(story, sim.engine.params.dt, item.duration,
                                    w.panel.steps_per_frame.value(), 0.0, w.step_frames)
        return True

    def _start_fade(self) -> None:
        fade = self.playlist.fade
        if self.window.session is None or fade <= 0:
            return
        rgb = np.ascontiguousarray(self.window.canvas.render_image())
        h, wd = rgb.shape[:2]
        self._last_rgb = rgb  # QImage keeps a pointer to it
        image = QImage(rgb.data, wd, h, 3 * wd, QImage.Format.Format_RGB888)
        self.fade.setPixmap(QPixmap.fromImage(image))
        self.fade.setGeometry(0, 0, self.window.canvas.native.width(),
                              self.window.canvas.native.height())
        self.fade.setScaledContents(True)
        self._fade_anim.stop()
        self._fade_anim.setDuration(int(fade * 1000))
        self._fade_anim.setStartValue(1.0)
        self._fade_anim.setEndValue(0.0)
        self.fade.show()
        self.fade.raise_()
        self._fade_anim.start()

    def seconds(self) -> float:
        """Seconds of this scene shown (the time held by the presenter not counted)."""
        now = self._paused_at if self.paused else time.perf_counter()
        return now - self.item_started

    def before_draw(self) -> None:
        """The camera programme, before each paint (MainWindow._before_draw)."""
        if self.active and self.programme is not None and self.window.session is not None:
            self.programme.apply(self.window.canvas.camera, self.seconds(),
                                 self.window.session.shown_time)
        if self.annotations is not None:
            self.annotations.update_for(self.window)

    def _tick(self) -> None:
        if self.window.session is None:
            return
        self.window.canvas.update()
        self._show_caption()
        item = self.playlist.items[self.index]
        if self.pacer is not None and self.active and not self.paused:
            m = self.pacer.update(self.seconds(), self.window.session.shown_time,
                                  self.window.step_frames)
            if m != self.window.panel.steps_per_frame.value():
                self.window.panel.steps_per_frame.setValue(m)
        if self.active and not self.paused and self.seconds() >= item.duration:
            if self.max_items and self.shown_items >= self.max_items:
                self.stop()
                self.window.close()
            else:
                self.next_item()

    def _show_caption(self) -> None:
        w, item = self.window, self.playlist.items[self.index]
        sim = w.sim
        units = sim.units.time_myr if sim.units else None
        t = w.session.shown_time
        lines = caption_lines(sim.name, item.caption_at(t), t, units,
                              in_seconds(sim.engine.params.G))
        if not self.active:
            lines.append(f"you have the controls; the show goes on after "
                         f"{self.playlist.idle:g} s without input")
        elif self.paused:
            lines.append("held: Space goes on")
        canvas = w.canvas.native
        px = round(max(18, canvas.height() // 28) * w.text_scale)
        self.caption.setStyleSheet(f"QLabel {{ color: white; background: rgba(0, 0, 0, 160); "
                                   f"font-size: {px}px; padding: {px // 2}px; }}")
        self.caption.setText("\n".join(lines))
        self.caption.setFixedWidth(int(canvas.width() * 0.8))
        self.caption.adjustSize()
        self.caption.move(px, canvas.height() - self.caption.height() - px)
        self.caption.show()
        self.caption.raise_()

    def decorate(self, rgb: np.ndarray) -> None:
        """The caption, the names and the scale bar over a picture of the view drawn elsewhere
        (the audience output, app/audience.py), burnt in as `record` does (in place)."""
        from galaxyview.movie.annotations import draw_labels, draw_scale_bar
        from galaxyview.movie.caption import draw_caption
        from galaxyview.render.annotations import galaxy_labels, scale_bar

        w = self.window
        size, a = (rgb.shape[1], rgb.shape[0]), self.annotations
        if a is not None and w.sim is not None:
            camera = w.canvas.camera
            draw_labels(rgb, galaxy_labels(camera, size, a.centres, a.names))
            if a.want_bar:
                draw_scale_bar(rgb, scale_bar(camera, size, w.sim.units,
                                              in_seconds(w.sim.engine.params.G)))
        text = self.caption.text() if self.caption.isVisible() else ""
        if text:
            draw_caption(rgb, "   ".join(text.splitlines()))

    # -- the user --------------------------------------------------------------------------------
    def interrupt(self) -> None:
        """Hand control back: the panel and menus return, the camera stays where it is."""
        if self.active:
            if self.paused:
                self.toggle_pause()
            self.active = False
            self.window.canvas.camera.fixed()
            self._chrome(True)
            print("show: paused (input)", flush=True)
        self._idle.start(int(self.playlist.idle * 1000))

    def resume(self) -> None:
        if not self.active:
            self.active = True
            self._chrome(False)
            print("show: resumed", flush=True)
            self.next_item()

    def eventFilter(self, obj, event) -> bool:
        kind = event.type()
        if (self.active and kind in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride)
                and event.key() in PRESENTER_KEYS):
            event.accept()  # (an override accepted: the key comes as a KeyPress, no shortcut)
            if kind == QEvent.Type.KeyPress and not event.isAutoRepeat():
                self._presenter_key(event.key())
            return True
        if kind in INPUT_EVENTS and self._is_user(kind):
            was_active = self.active
            self.interrupt()
            return was_active and kind != QEvent.Type.MouseMove  # the first key only wakes
        return False

    def _is_user(self, kind) -> bool:
        if kind != QEvent.Type.MouseMove:
            return True
        pos = QCursor.pos()
        if self._pointer is None:
            self._pointer = pos
            return False
        moved = (pos - self._pointer).manhattanLength() >= MOVE_PX
        if moved:
            self._pointer = pos
        return moved

    def stop(self) -> None:
        self._timer.stop()
        self._idle.stop()
        QApplication.instance().removeEventFilter(self)
        self.window.unsetCursor()
        self.window.canvas.native.unsetCursor()


class _LastKnown:
    """A follow point read through Session.try_engine: the last value while the worker steps,
    so the GUI thread never waits for the engine; read again only when a new state arrived."""

    def __init__(self, session, target):
        self.session, self.target = session, target
        self.point = None
        self._read_for = None  # the Frame the point was read for

    def _read(self):
        with self.session.engine.activate():
            return self.target()

    def __call__(self):
        last = self.session.last
        if self.point is not None and last is self._read_for:
            return self.point
        done, point = self.session.try_engine(self._read)
        if done and point is not None:
            self.point, self._read_for = np.asarray(point, np.float64), last
        return self.point if self.point is not None else self.session.canvas.camera.centre
