"""Which posts are live after rewinds: the pure arithmetic the thread, the panel and prompts share."""

from autodev.rules.live import Live


def test_no_rewind_everything_is_live():
    live = Live.of([], 5)
    assert all(live.is_live(s) for s in range(1, 6)) and live.superseded() == []


def test_a_rewind_supersedes_the_posts_between_its_target_and_itself():
    # post 7 rewinds to 3: posts 4..6 are superseded, the rewind note (7) and what follows are live
    live = Live.of([(7, 3)], 9)
    assert [s for s in range(1, 10) if not live.is_live(s)] == [4, 5, 6]
    assert live.superseded() == [(4, 6)]
    assert live.newest_live_at_or_before(6) == 3


def test_a_post_newer_than_the_reading_is_live():
    # The panel reads the thread once and keeps the answer: posts that arrive later are live
    # until a newer rewind record (which it reads again) says otherwise.
    live = Live.of([(7, 3)], 9)
    assert live.is_live(10) and live.is_live(200)
    assert not Live.of([], 0).is_live(0) and Live.of([], 0).is_live(1)
