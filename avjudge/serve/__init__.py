"""Judges as a service: the reward server (`app`, `avjudge serve`), its request batcher, what it scores
(`service`) and a client; `adapters` is the deprecated alias of `avjudge.rewards.adapters`."""
