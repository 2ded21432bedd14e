import threading

import pytest

from avjudge.ahead import map_ahead


def test_results_come_in_order_from_many_threads():
    assert list(map_ahead(lambda x: x * x, range(50), threads=4, ahead=6)) == [x * x for x in range(50)]


def test_it_works_at_most_ahead_items_beyond_the_one_held():
    started = []
    lock = threading.Lock()

    def work(x):
        with lock:
            started.append(x)
        return x

    results = map_ahead(work, iter(range(100)), threads=2, ahead=3)
    assert next(results) == 0
    # the consumer holds item 0: items 1..3 may be under way, nothing further was even taken from the iterable
    assert max(started) <= 3
    assert list(results) == list(range(1, 100))


def test_an_error_comes_out_where_its_item_would():
    def work(x):
        if x == 2:
            raise ValueError("item 2")
        return x

    results = map_ahead(work, range(5))
    assert [next(results), next(results)] == [0, 1]
    with pytest.raises(ValueError, match="item 2"):
        next(results)
