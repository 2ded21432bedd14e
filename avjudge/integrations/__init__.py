"""avjudge inside the curation engines users filter audio-video data with: an operator for data-juicer
(`avjudge.integrations.datajuicer`, found through its ``data_juicer.ops`` entry point) and stages for NeMo Curator
(`avjudge.integrations.nemo_curator`). Each engine's module imports that engine; this package imports neither.
Both score through `EngineScorer` (the scoring core, one decode per clip for every dimension) and keep or drop by
`avjudge.filter.verdict`, so their verdicts are `avjudge filter`'s."""
