"""The play / step loop of the window: the frame timer posts step batches while playing, worker
frames feed the energy plot and ask for a paint at once, and each paint syncs the newest state
into the vertex buffer. The next batch is posted as a paint takes the state it draws, so the
worker steps while the GUI thread draws: every frame drawn shows a new state, one batch on from
the one before. On the host path it is posted as the paint begins (the CPU steps while GL
draws); where the GPU steps, once the paint's GL work is done (the step's kernels would
otherwise delay the frame's splat), so the GUI's present overlaps the step. Where drawing
needs the engine (light summed by the engine's processes) the next batch waits for the frame
timer."""
from __future__ import annotations

FRAME_MS = 15  # the UI frame timer


class PlaybackActions:
    """MainWindow's play, step and reset slots and its frame loop (mixed into MainWindow)."""

    @property
    def frame_shown(self) -> bool:
        """True when the latest state from the worker is in the vertex buffer."""
        return self.session is None or self.session.frame is None

    def set_playing(self, on: bool) -> None:
        self.playing = bool(on)
        if self.panel.play.isChecked() != self.playing:
            self.panel.play.setChecked(self.playing)
        self.panel.play.setText("Pause" if self.playing else "Play")

    def single_step(self) -> None:
        self.set_playing(False)
        if self.session is not None:
            self.session.post_steps(1)

    def rewind(self, index: int) -> None:
        """Back to kept state `index` of the timeline, paused."""
        self.set_playing(False)
        if self.session is not None:
            self.worker.rewind(index)

    def reset(self) -> None:
        if self.session is not None:
            self.worker.reset()

    def _tick(self) -> None:
        s = self.session
        if s is not None and self.playing:
            s.post_steps(self.steps_per_frame)
        pending = s is not None and s.frame is not None
        if (self._dirty or pending or self._fit_pending or self.canvas.auto_orbit_deg
                or self.canvas.camera.following or self.following_path):
            self._dirty = False
            self.canvas.update()

    def _on_frame(self, session, frame) -> None:
        if session is not self.session:
            return
        if frame.kind == "steps":
            self.canvas.clock.state_arrived()
            if session.frame is not None and session.overlap and not session.host:
                self.canvas.native.repaint()  # the new state at once; the plot and bars after
        if frame.kind == "reset":
            self.plot.clear()
        elif frame.kind == "rewind":
            self.plot.truncate(frame.time)
        self.timeline_bar.show_timeline(*frame.timeline)
        if frame.energy is not None:
            self.plot.add_point(frame.time, session.energy_error)
        self.scrub.follow(session)
        self._dirty = True
        if session.frame is not None:  # a new state to draw: paint now, not at the next tick
            self.canvas.update()

    def _on_failed(self, session, message: str) -> None:
        if session is self.session:
            self.set_playing(False)
            self.show_error("The engine stopped", message)

    def _before_draw(self) -> None:
        """In the GL context before each paint."""
        self._ring_before_draw()
        s = self.session
        if s is not None and s.sync(self.look):
            self.step_frames += 1
            if self.step_frames == self.stop_at_frame:
                self.set_playing(False)
            elif self.playing and s.host:  # the next batch steps while this one is drawn
                s.post_steps(self.steps_per_frame)
            elif self.playing and s.overlap:  # the GPU draws first: see _after_draw
                self._post_after_draw = True
        if self.show_controller is not None:
            self.show_controller.before_draw()
        self.follow_path()
        if self._fit_pending:
            self.fit_camera()

    def _after_draw(self) -> None:
        """After a paint's GL work is done. On the GPU the next batch is posted here, not as the
        paint begins: its kernels would fill the GPU and the frame's splat would wait for them.
        The GUI's present and event handling still overlap the step."""
        if self._post_after_draw:
            self._post_after_draw = False
            if self.playing and self.session is not None:
                self.session.post_steps(self.steps_per_frame)
