"""Judges as a service: the reward server (`app`, `avjudge serve`), its request batcher, what it scores
(`service`), a client, and reward adapters in each RL trainer's own shape (`adapters`)."""
