"""The wheel's package layout (the metadata is in pyproject.toml): the avjudge package, and the repository's
top-level folders avjudge reads at run time mapped into it as ``avjudge/shipped/<folder>`` (`avjudge.resources`)."""

from setuptools import find_packages, setup

# package under avjudge.shipped -> (the repository folder it is built from, the files it carries: a user's own
# weights or pins in checkpoints/ never travel)
SHIPPED = {
    "data_recipes": ("data_recipes", ["*.yaml"]),
    "train_configs": ("train_configs", ["*.yaml"]),
    "train_configs.deepspeed": ("train_configs/deepspeed", ["*.json"]),
    "checkpoints": ("checkpoints", ["manifest.yaml", "README.md"]),
    "checkpoints.tiny": ("checkpoints/tiny", ["qwen2_5_omni_encoders.*", "qwen2_5_omni_sync_encoders.*"]),
}

setup(
    packages=find_packages(include=["avjudge*"]) + [f"avjudge.shipped.{name}" for name in SHIPPED],
    package_dir={f"avjudge.shipped.{name}": folder for name, (folder, _) in SHIPPED.items()},
    package_data={
        "avjudge.omni.benchmarks.avibench": ["vocabulary.json"],
        **{f"avjudge.shipped.{name}": data for name, (_, data) in SHIPPED.items()},
    },
)
