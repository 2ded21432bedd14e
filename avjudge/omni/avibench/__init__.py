"""AVI-Bench: its four-level taxonomy (`levels`), its task metrics (`metrics`) and its suite (`suite`: a user's
download of the task files converted, answered and scored). Its data is never shipped or trained on."""
