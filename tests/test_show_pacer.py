"""The show's story pacer (render/show.py StoryPacer): steps per frame from the measured batch
rate, so that a scene's story_time is reached as its item ends."""
from galaxyview.render.show import StoryPacer


def test_pacer_sets_the_steps_that_reach_the_story_at_the_end():
    # cold-collapse: 1.3 at dt 1/512 = 666 steps, in a 10 s item, 30 batches a second
    p = StoryPacer(1.3, 1 / 512, 10.0, steps_per_frame=1)
    assert p.update(0.3, 0.0, 9) == 1  # not measured long enough yet
    assert p.update(1.0, 1 / 512 * 30, 30) == 2  # needs 636 steps in 270 batches: 3, at most x2
    m = p.update(2.0, 0.2, 60)
    assert m == 3  # 1.1 left = 563 steps over 8 s x 30 batches: ceil(2.35)
    # the batches slow down (bigger batches, a busy machine): more steps a batch
    assert p.update(3.0, 0.3, 70) > m
    # the story reached: the pace stays
    kept = p.steps_per_frame
    assert p.update(5.0, 1.4, 200) == kept


def test_pacer_slows_down_when_ahead_and_holds_while_paused():
    p = StoryPacer(1.0, 0.01, 10.0, steps_per_frame=16)  # 100 steps
    assert p.update(1.0, 0.1, 60) == 8  # 90 steps in 540 batches: 1, at most halved
    assert p.update(2.0, 0.15, 120) == 4
    p.hold(8.0, 500)  # the show was held: measure from here
    assert p.update(8.2, 0.2, 500) == 4  # too short a measurement: unchanged
    assert p.update(9.0, 0.2, 530) == 3  # 80 steps left in 1 s x 30 batches: ceil(2.7)
